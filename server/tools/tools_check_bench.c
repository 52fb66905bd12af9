/* tools_check_bench: the check_kernel and benchmark_kernel MCP tools over
 * sandbox/check/check.h and sandbox/check/bench.h; their answers are
 * written from the result structs in tools_check_json.c. Progress goes to the client as MCP
 * progress notifications, cancellation kills the GPU job, every call is
 * recorded in the run history. Without a GPU both answer a structured
 * isError result with error.code "no_gpu" (never a number). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/app.h"
#include "server/mcp/mcp.h"
#include "sandbox/check/bench.h"
#include "sandbox/check/check.h"
#include "server/mcp/tools.h"
#include "server/tools/tools_progress.h"
#include "server/tools/tools_check_int.h"
#include "server/tools/tools_exec.h"
#include "server/tools/tools_runs.h"

/* A bad spec or a missing GPU is answered with the error object the server
 * would build, plus the field-level message as summary. */
static json_t *error_result(int rc, const char *msg)
{
	return json_pack("{s:s, s:b, s:o}", "summary", msg, "passed", 0, "error",
			 mcp_error_member(kf_err_name(rc), msg));
}

/* Completes the answer (*out, may be NULL) of a check or benchmark that
 * returned rc: a failed kernel's error message is the verdict's summary;
 * an error result when there is no answer; otherwise an "error" member
 * naming the code, unless the answer has one or rc is a verdict the answer
 * already explains (KF_EFAULT: the kernel failed; KF_ECOMPILE: it did not
 * compile). Nothing when rc is 0. */
static void answer_error(int rc, struct kf_err *err, json_t **out)
{
	if (!rc)
		return;
	if (rc == KF_EFAULT && *out) {
		kf_err_clear(err);
		kf_err_set(err, rc, "%s", json_string_value(json_object_get(*out, "summary")));
	}
	const char *msg = err->msg;
	if (!*out)
		*out = error_result(rc, msg);
	else if (!json_object_get(*out, "error") && rc != KF_EFAULT && rc != KF_ECOMPILE)
		json_object_set_new(*out, "error", mcp_error_member(kf_err_name(rc), msg));
}

/* Runs the domain call of check_kernel or benchmark_kernel: its options
 * from the validated arguments, progress through pr (borrowed), the device
 * used in *gpu. Sets *out (new) to the answer written from the result
 * struct, also when the call fails with a verdict; returns the domain's
 * code. */
typedef int (*check_bench_run_fn)(struct tool_ctx *ctx, const json_t *args,
				  struct tools_progress *pr, int *gpu, json_t **out,
				  struct kf_err *err);

/* What differs between check_kernel and benchmark_kernel; everything else
 * (the Slurm forward, the run's metadata, the error answer, the history
 * row, the phase timings) is one path, check_bench_handle. */
struct check_bench_tool {
	const char *name;	/* the tool's name, for the Slurm forward */
	enum history_kind kind; /* the history row's kind */
	check_bench_run_fn run;
};

static unsigned timeout_ms_arg(const json_t *args)
{
	return (unsigned)json_integer_value(json_object_get(args, "timeout_s")) * 1000u;
}

static int check_run(struct tool_ctx *ctx, const json_t *args, struct tools_progress *pr, int *gpu,
		     json_t **out, struct kf_err *err)
{
	struct check_opts o = {
		.trials = (int)json_integer_value(json_object_get(args, "trials")),
		.no_odd_size = json_is_false(json_object_get(args, "odd_size")),
		.replay = json_object_get(args, "replay"),
		.timeout_ms = timeout_ms_arg(args),
		.cancel = mcp_call_cancel_flag(ctx),
		.progress = tools_progress_forward,
		.progress_arg = pr,
	};
	struct check_result res;
	int rc = check_kernel(&mcp_call_app(ctx)->check, json_object_get(args, "spec"), &o, &res,
			      gpu, err);

	*out = tools_check_json(&res);
	check_result_fini(&res);
	return rc;
}

static int bench_run(struct tool_ctx *ctx, const json_t *args, struct tools_progress *pr, int *gpu,
		     json_t **out, struct kf_err *err)
{
	const json_t *sz = json_object_get(args, "size");
	struct bench_opts o = {
		.target_rel_se = json_number_value(json_object_get(args, "target_rel_se")),
		.budget_ms = json_number_value(json_object_get(args, "budget_ms")),
		.warmup_ms = json_number_value(json_object_get(args, "warmup_ms")),
		.size_index = json_is_integer(sz) ? (int)json_integer_value(sz) : -1,
		.no_baseline = json_is_false(json_object_get(args, "baseline")),
		.no_flush = json_is_false(json_object_get(args, "flush_l2")),
		.timeout_ms = timeout_ms_arg(args),
		.cancel = mcp_call_cancel_flag(ctx),
		.progress = tools_progress_forward,
		.progress_arg = pr,
	};
	struct bench_result res;
	int rc = bench_kernel(&mcp_call_app(ctx)->check, json_object_get(args, "spec"), &o, &res,
			      gpu, err);

	*out = tools_bench_json(&res);
	bench_result_fini(&res);
	return rc;
}

static const struct check_bench_tool CHECK_TOOL = {"check_kernel", HISTORY_CHECK, check_run};
static const struct check_bench_tool BENCH_TOOL = {"benchmark_kernel", HISTORY_BENCH, bench_run};

/* The one handler path of both tools: forwarded whole when a cluster node
 * runs the call; otherwise the run's metadata is checked before the GPU
 * job, the answer completed with its error, the run recorded, and the
 * answer's phases given the recording's time and the whole call's. */
static int check_bench_handle(const struct check_bench_tool *tool, struct tool_ctx *ctx,
			      const json_t *args, json_t **out, struct kf_err *err)
{
	struct app *app = mcp_call_app(ctx);
	if (exec_is_remote(app->exec)) /* a cluster node runs this very handler */
		return tools_exec_forward(ctx, tool->name, args, out, err);
	int64_t t0 = tools_runs_now_ms();
	double start = check_now_ms();
	struct tools_progress pr = TOOLS_PROGRESS_INIT(ctx);
	struct tools_runs_meta meta;
	int gpu = -1;
	int rc = tools_runs_meta_from_args(app, args, &meta, err);

	if (rc)
		return rc;
	rc = tool->run(ctx, args, &pr, &gpu, out, err);
	answer_error(rc, err, out);
	double th = check_now_ms();
	tools_runs_record_meta(app, tool->kind, json_object_get(args, "spec"), *out, rc, err->msg,
			       gpu, tools_runs_now_ms() - t0, &meta, NULL);
	tools_check_phases_finish(*out, check_now_ms() - th, check_now_ms() - start);
	return rc;
}

static int check_handler(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	return check_bench_handle(&CHECK_TOOL, ctx, args, out, err);
}

static int bench_handler(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	return check_bench_handle(&BENCH_TOOL, ctx, args, out, err);
}

/* What the run means, stored with it (get_run, dataset export): what it
 * computes in words and math, the author's reasoning, the run it improves
 * on. Bare strings: tools/list stays under 10 KB; tools_runs_meta_from_args
 * checks caps and the parent before the run, docs/check-and-bench.md
 * describes them. */
#define META_SCHEMA                                                                    \
	"\"description\": {\"type\": \"string\"}, \"notes\": {\"type\": \"string\"}, " \
	"\"parent\": {\"type\": \"string\"}"

static const char CHECK_INPUT[] =
	"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"spec\"], "
	"\"properties\": {\"spec\": {\"type\": \"object\", \"description\": \"{op, dtype, "
	"source, launch} or in full: kforge://guides/kforge-spec\"}, " META_SCHEMA ", "
	"\"trials\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 20, \"default\": 3}, "
	"\"odd_size\": {\"type\": \"boolean\", \"default\": true}, "
	"\"replay\": {\"type\": \"object\", \"additionalProperties\": false, "
	"\"required\": [\"size\", \"seed\"], \"properties\": {\"size\": {\"type\": "
	"\"object\"}, \"seed\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 16}}, "
	"\"description\": \"pass back a failure's replay to re-run it\"}, "
	"\"timeout_s\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 600}}}";

/* The output schemas name the members every answer has; the rest are
 * described in docs/check-and-bench.md (tools/list stays small). */
static const char CHECK_OUTPUT[] =
	"{\"type\": \"object\", \"required\": [\"summary\", \"passed\"], \"properties\": {"
	"\"summary\": {\"type\": \"string\"}, \"passed\": {\"type\": \"boolean\"}}}";

static const char BENCH_INPUT[] =
	"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"spec\"], "
	"\"properties\": {\"spec\": {\"type\": \"object\"}, " META_SCHEMA ", "
	"\"size\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 31, \"description\": "
	"\"index into sizes; default all\"}, "
	"\"baseline\": {\"type\": \"boolean\", \"default\": true}, "
	"\"target_rel_se\": {\"type\": \"number\", \"minimum\": 0.0001, \"maximum\": 0.5, "
	"\"default\": 0.005}, "
	"\"budget_ms\": {\"type\": \"number\", \"minimum\": 10, \"maximum\": 60000, "
	"\"default\": 1000, \"description\": \"per size\"}, "
	"\"warmup_ms\": {\"type\": \"number\", \"minimum\": 0, \"maximum\": 10000, "
	"\"default\": 50}, "
	"\"flush_l2\": {\"type\": \"boolean\", \"default\": true}, "
	"\"timeout_s\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 600}}}";

static const char BENCH_OUTPUT[] =
	"{\"type\": \"object\", \"required\": [\"summary\"], \"properties\": {"
	"\"summary\": {\"type\": \"string\"}}}";

static const struct tool_def GPU_TOOLS[] = {
	{
		.name = "check_kernel",
		.title = "Check a kernel",
		.description =
			"A kernel spec against its reference on the GPU: every size plus an odd one, "
			"fresh secret inputs per trial, anti-cheat safeguards "
			"(kforge://guides/eval-cheats).",
		.input_schema = CHECK_INPUT,
		.output_schema = CHECK_OUTPUT,
		.annotations = TOOL_IDEMPOTENT | TOOL_TASK | TOOL_GPU_JOB,
		.handler = check_handler,
	},
	{
		.name = "benchmark_kernel",
		.title = "Benchmark a kernel",
		.description =
			"Times a check_kernel spec interleaved with a baseline (kforge's op kernel, "
			"else the reference): median, speedup with 95% interval, % of peak, roofline "
			"floor (kforge://guides/measuring).",
		.input_schema = BENCH_INPUT,
		.output_schema = BENCH_OUTPUT,
		.annotations = TOOL_TASK | TOOL_GPU_JOB,
		.handler = bench_handler,
	},
};

const struct tool_group TOOLS_CHECK_BENCH = {
	.tools = GPU_TOOLS,
	.tools_len = sizeof(GPU_TOOLS) / sizeof(GPU_TOOLS[0]),
};
