/* tools_torch: the build_torch_op MCP tool over sandbox/torchop/torchop.h.
 * Takes a passing check run from the history (its stored spec and source)
 * or a spec, builds the PyTorch op and answers every verification. A run
 * that is not a passing check is refused with the reason, here, also
 * under a cluster executor, where a compute node builds and verifies. */
#include <stdio.h>
#include <string.h>

#include "sandbox/history/history.h"
#include "sandbox/torchop/torchop.h"
#include "server/app.h"
#include "server/mcp/mcp.h"
#include "server/mcp/tools.h"
#include "server/tools/tools_exec.h"
#include "server/tools/tools_progress.h"

/* The spec of run id (new reference in *spec) when it is a passing check. */
static int torch_run_spec(struct app *app, const char *id, json_t **spec, struct kf_err *err)
{
	struct history_run r = {0};
	*spec = NULL;
	if (!app->history)
		return kf_err_set(err, KF_EINTERNAL, "run history is not open");
	int rc = history_get(app->history, id, &r, err);
	if (!rc)
		rc = torchop_run_usable(id, history_kind_name(r.kind),
					history_status_name(r.status), r.result, err);
	if (!rc && (!json_is_object(r.spec) || json_object_get(r.spec, "truncated")))
		rc = kf_err_set(err, KF_EINVAL, "run %s: its spec was not stored whole", id);
	if (!rc)
		*spec = json_incref(r.spec);
	history_run_fini(&r);
	return rc;
}

/* Under a cluster executor: the node builds and verifies; a run id is
 * this daemon's, so the node gets the run's spec in its place. */
static int torch_forward(struct tool_ctx *ctx, const json_t *args, json_t *spec, json_t **out,
			 struct kf_err *err)
{
	json_t *node_args = json_copy((json_t *)args);
	int rc;

	if (node_args)
		json_object_del(node_args, "run");
	if (!node_args || json_object_set(node_args, "spec", spec)) {
		json_decref(node_args);
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	}
	rc = tools_exec_forward(ctx, "build_torch_op", node_args, out, err);
	json_decref(node_args);
	return rc;
}

static int build_handler(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	struct app *app = mcp_call_app(ctx);
	const json_t *run = json_object_get(args, "run");
	json_t *spec = json_incref(json_object_get(args, "spec"));
	struct tools_progress pr = TOOLS_PROGRESS_INIT(ctx);
	struct torchop_opts o = {
		.name = json_string_value(json_object_get(args, "name")),
		.no_verify = json_is_false(json_object_get(args, "verify")),
		.timeout_ms =
			(unsigned)json_integer_value(json_object_get(args, "timeout_s")) * 1000u,
		.cancel = mcp_call_cancel_flag(ctx),
		.progress = tools_progress_forward,
		.progress_arg = &pr,
	};
	int gpu = -1, rc = 0;
	if (!!run == !!spec) {
		json_decref(spec);
		return kf_err_set(err, KF_EINVAL,
				  "give either run (a passing check's id) or spec, not %s",
				  run ? "both" : "neither");
	}
	if (run && (rc = torch_run_spec(app, json_string_value(run), &spec, err)))
		return rc;
	if (exec_is_remote(app->exec))
		rc = torch_forward(ctx, args, spec, out, err);
	else
		rc = torchop_build_verify(&app->check, spec, &o, out, &gpu, err);
	json_decref(spec);
	if (rc && *out && !json_object_get(*out, "error") && rc != KF_EFAULT && rc != KF_ECOMPILE)
		json_object_set_new(*out, "error", mcp_error_member(kf_err_name(rc), err->msg));
	if (rc && *out && run)
		json_object_set_new(*out, "run", json_string(json_string_value(run)));
	return rc;
}

/* timeout_s's default is the verification job's limit when none is given
 * (torchop_verify.c), published for clients and the CLI's --help. */
static const char BUILD_INPUT[] =
	"{\"type\": \"object\", \"additionalProperties\": false, \"properties\": {"
	"\"run\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 32}, "
	"\"spec\": {\"type\": \"object\"}, "
	"\"name\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 48}, "
	"\"verify\": {\"type\": \"boolean\"}, "
	"\"timeout_s\": {\"type\": \"integer\", \"minimum\": 10, \"maximum\": 600, \"default\": "
	"180}}}";

static const char BUILD_OUTPUT[] =
	"{\"type\": \"object\", \"required\": [\"summary\"], \"properties\": {"
	"\"summary\": {\"type\": \"string\"}}}";

static const struct tool_def TORCH_TOOLS[] = {
	{
		.name = "build_torch_op",
		.title = "Build a PyTorch op",
		.description =
			"A passing check (run_id) or spec as a PyTorch op, verified with opcheck, "
			"the reference, torch.compile and a CUDA graph; answers the import line.",
		.input_schema = BUILD_INPUT,
		.output_schema = BUILD_OUTPUT,
		.annotations = TOOL_IDEMPOTENT | TOOL_GPU_JOB,
		.handler = build_handler,
	},
};

const struct tool_group TOOLS_TORCH = {
	.tools = TORCH_TOOLS,
	.tools_len = sizeof(TORCH_TOOLS) / sizeof(TORCH_TOOLS[0]),
};
