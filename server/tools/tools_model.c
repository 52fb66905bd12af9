/* tools_model: the benchmark_model MCP tool over sandbox/model: a model
 * built offline from a recipe with random weights, its modules swapped for
 * kforge's torch ops by a patch map, timed against the unpatched model
 * eager, under torch.compile and with CUDA graphs. Every call, answered or
 * failed, is a run in the history (kind bench, kernels "model:<recipe>"
 * and the patch ops). Under a cluster executor the request is checked
 * here and run on a compute node (tools_exec.h). */
#include <string.h>

#include "sandbox/model/model.h"
#include "server/app.h"
#include "server/mcp/mcp.h"
#include "server/tools/groups.h"
#include "server/tools/tools_exec.h"
#include "server/tools/tools_runs.h"

/* The result's "kernels": the model and the ops the patch maps use, so
 * list_runs can find the runs that used an op. */
static void add_kernels(json_t *out, const json_t *job)
{
	json_t *k = json_array(), *seen = json_object();
	char name[64];
	snprintf(name, sizeof name, "model:%s",
		 json_string_value(json_object_get(job, "recipe"))
			 ? json_string_value(json_object_get(job, "recipe"))
			 : "?");
	json_array_append_new(k, json_string(name));
	for (int c = 0; c < 2; c++) {
		const char *t;
		json_t *op;
		json_object_foreach(json_object_get(job, c ? "compile_patch" : "patch"), t, op) {
			const char *s = json_string_value(op);
			if (s && !json_object_get(seen, s)) {
				json_object_set_new(seen, s, json_true());
				snprintf(name, sizeof name, "patch:%s", s);
				json_array_append_new(k, json_string(name));
			}
		}
	}
	json_decref(seen);
	json_object_set_new(out, "kernels", k);
}

static int model_handler(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	struct app *app = mcp_call_app(ctx);
	int64_t t0 = tools_runs_now_ms();
	json_t *job = NULL;
	int gpu = -1;
	int rc = model_job_new(args, &job, err);
	if (!rc && exec_is_remote(app->exec)) { /* checked here, run on a node */
		json_decref(job);
		return tools_exec_forward(ctx, "benchmark_model", args, out, err);
	}
	if (!rc) {
		struct model_env env = {.data_dir = app->check.data_dir,
					.sandbox_none = app->check.sandbox_none,
					.runner = app->runner};
		struct model_opts o = {.timeout_s = (unsigned)json_integer_value(
					       json_object_get(args, "timeout_s")),
				       .cancel = mcp_call_cancel_flag(ctx)};
		mcp_call_progress(ctx, 0, 0, "building the model and the ops on the GPU host");
		rc = model_run(&env, job, &o, out, &gpu, err);
	}
	if (rc) { /* summary first, then what the run left (the model's classes) */
		json_t *e = mcp_error_answer(kf_err_name(rc), err->msg);
		if (*out)
			json_object_update_missing(e, *out);
		json_decref(*out);
		*out = e;
	}
	if (job)
		add_kernels(*out, job);
	tools_runs_record(app, HISTORY_BENCH, args, *out, rc, err->msg, gpu,
			  tools_runs_now_ms() - t0, NULL);
	json_decref(job);
	return rc;
}

/* Short on purpose (tools/list is sized for an agent's context): the dims,
 * patch ops and shapes are listed in docs/model-bench.md and in the error
 * a wrong one gets. */
/* iters and timeout_s carry the bounds and defaults model_job_new and
 * model_run apply, so clients and the CLI's --help (server/cli/cli_opts.h)
 * see them; no descriptions: tools/list stays under its size budget. */
#define STR_(x) #x
#define STR(x)	STR_(x)

static const char MODEL_INPUT[] =
	"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"recipe\"], "
	"\"properties\": {"
	"\"recipe\": {\"type\": \"string\", \"enum\": [\"qwen3\", \"llama\", \"dit\"]}, "
	"\"dims\": {\"type\": \"object\"}, "
	"\"dtype\": {\"type\": \"string\", \"enum\": [\"bf16\", \"f16\", \"f32\"]}, "
	"\"patch\": {\"type\": \"object\", \"description\": \"{class or name glob: op}\"}, "
	"\"compile_patch\": {\"type\": \"object\"}, "
	"\"shapes\": {\"type\": \"array\", \"items\": {\"type\": \"object\"}}, "
	"\"modes\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}, "
	"\"iters\": {\"type\": \"integer\", \"minimum\": 3, \"maximum\": " STR(
		MODEL_ITERS_MAX) ", \"default\": 20}, \"warmup\": {\"type\": \"integer\"}, "
				 "\"seed\": {\"type\": \"integer\"}, \"profile\": {\"type\": \"boolean\"}, "
				 "\"fp32_check\": {\"type\": \"boolean\"}, "
				 "\"timeout_s\": {\"type\": \"integer\", \"minimum\": 60, \"maximum\": " STR(
					 MODEL_TIMEOUT_MAX_S) ", \"default\": " STR(MODEL_TIMEOUT_S) "}}}";

static const char MODEL_OUTPUT[] =
	"{\"type\": \"object\", \"required\": [\"summary\"], \"properties\": {"
	"\"summary\": {\"type\": \"string\"}}}";

static const struct tool_def MODEL_TOOLS[] = {
	{
		.name = "benchmark_model",
		.title = "Benchmark a model",
		.description = "kforge's ops patched into a random-weight model vs unpatched: "
			       "agreement, latency eager/compile/CUDA graphs, per-op profile. "
			       "Minutes.",
		.input_schema = MODEL_INPUT,
		.output_schema = MODEL_OUTPUT,
		.annotations = TOOL_GPU_JOB,
		.handler = model_handler,
	},
};

const struct tool_group TOOLS_MODEL = {
	.tools = MODEL_TOOLS,
	.tools_len = sizeof(MODEL_TOOLS) / sizeof(MODEL_TOOLS[0]),
};
