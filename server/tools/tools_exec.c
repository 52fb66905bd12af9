/* tools_exec: a GPU tool call forwarded to the cluster executor and its
 * answer turned back into the tool's result; see tools_exec.h. */
#include "server/tools/tools_exec.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "server/app.h"
#include "server/tools/tools_runs.h"

/* What the run history stores as the run's spec: the local handlers
 * record the "spec" argument, so a cluster's runs read the same. */
static const json_t *spec_of(const json_t *args)
{
	const json_t *spec = json_object_get(args, "spec");

	return spec ? spec : args;
}

/* The GPU tools a cluster runs. Benchmarks take the node to themselves so
 * their timings are their own (a GPU of their own is not enough: another
 * job's host traffic and clocks share the node); benchmark_model times a
 * whole model, so it does too. get_gpu_specs local reads a node's GPUs
 * (the ones this partition gives) and build_torch_op builds on the node
 * where its op is verified; like their local handlers, they record no run.
 *
 * Another GPU tool joins with a row here and, first in its handler, the
 * two lines of tools_exec.h (after the checks that need no GPU, so a bad
 * request is refused without a Slurm job). Arguments that name the
 * daemon's own state (a run id of its history) are resolved by the
 * handler before it forwards: the node has its own state.db. */
#define NO_RUN (-1)
static const struct {
	const char *tool;
	int kind; /* enum history_kind, or NO_RUN */
	int exclusive;
	int meta; /* records description, notes, parent (tools_runs_meta) */
} GPU_TOOLS[] = {
	{"check_kernel", HISTORY_CHECK, 0, 1},	   /* sandbox/check */
	{"benchmark_kernel", HISTORY_BENCH, 1, 1}, /* sandbox/check (bench.c) */
	{"get_gpu_specs", NO_RUN, 0, 0},	   /* "local": the node's GPUs */
	{"benchmark_model", HISTORY_BENCH, 1, 0},  /* sandbox/model */
	{"build_torch_op", NO_RUN, 0, 0},	   /* sandbox/torchop */
};

/* What a run means, from the call's arguments and the "daemon" part of
 * its call.json (keep): description and notes travel to the node too;
 * parent names a run of this daemon's history, which the node lacks, so
 * it stays here. Pointers borrowed from args and keep. */
static void meta_of(const json_t *args, const json_t *keep, struct tools_runs_meta *m)
{
	m->description = json_string_value(json_object_get(args, "description"));
	m->notes = json_string_value(json_object_get(args, "notes"));
	m->parent = json_string_value(json_object_get(keep, "parent"));
}

/* Records the job's run (or closes a no-run tool's row); then its
 * directory goes. */
static void record(struct app *app, int i, const char *key, const json_t *args, const json_t *keep,
		   json_t *out, int code, const char *msg, int64_t duration_ms,
		   const struct exec_job_result *res, int rc)
{
	struct kf_err e = {0};
	struct tools_runs_meta m;
	meta_of(args, keep, &m);
	int r = GPU_TOOLS[i].kind == NO_RUN
			? exec_job_close(app->exec, key, &e)
			: tools_runs_record_job(app, key, (enum history_kind)GPU_TOOLS[i].kind,
						spec_of(args), out, code, msg, -1, duration_ms,
						GPU_TOOLS[i].meta ? &m : NULL, NULL);

	if (r == 0)
		exec_job_done(res, rc);
	else if (e.msg[0])
		log_warn("exec", "job %s: %s", key, e.msg);
}

static int gpu_tool(const char *tool)
{
	for (size_t i = 0; i < sizeof(GPU_TOOLS) / sizeof(GPU_TOOLS[0]); i++)
		if (strcmp(GPU_TOOLS[i].tool, tool) == 0)
			return (int)i;
	return -1;
}

/* The KF_E* code whose kf_err_name is name; KF_EINTERNAL for none. */
static int code_of(const char *name)
{
	if (!name || strcmp(name, "ok") == 0)
		return 0;
	for (int c = -1; c >= KF_EINTERNAL; c--)
		if (strcmp(kf_err_name(c), name) == 0)
			return c;
	return KF_EINTERNAL;
}

static json_t *executor_info(const struct exec_job_result *res)
{
	return json_pack("{s:s, s:s, s:s, s:i}", "kind", "slurm", "job_id", res->slurm_id, "node",
			 res->node, "attempts", res->attempts);
}

/* The tool's result from exec's outcome: the node's answer (its code in
 * *code), or an error result with Slurm's words. New reference. */
static json_t *answer_of(int rc, const struct exec_job_result *res, const char *msg, int *code,
			 char *code_msg, size_t cap)
{
	json_t *out;

	*code = rc;
	snprintf(code_msg, cap, "%s", msg ? msg : "");
	if (rc == 0 && json_is_object(json_object_get(res->answer, "result"))) {
		const char *m = json_string_value(json_object_get(res->answer, "message"));
		out = json_deep_copy(json_object_get(res->answer, "result"));
		*code = code_of(json_string_value(json_object_get(res->answer, "code")));
		snprintf(code_msg, cap, "%s", m ? m : "");
	} else {
		if (rc == 0) {
			*code = KF_EIO;
			snprintf(code_msg, cap, "the node's answer has no result");
		}
		out = json_pack("{s:s, s:b, s:{s:s, s:s, s:{s:s, s:s, s:s, s:i}}}", "summary",
				code_msg, "passed", 0, "error", "code", kf_err_name(*code),
				"message", code_msg, "slurm", "said", res->said, "job_id",
				res->slurm_id, "node", res->node, "attempts", res->attempts);
	}
	if (out)
		json_object_set_new(out, "executor", executor_info(res));
	return out;
}

struct fwd_progress {
	struct tool_ctx *ctx;
};

static void to_client(void *arg, double progress, const char *message)
{
	struct fwd_progress *p = arg;

	tool_ctx_progress(p->ctx, progress, 0, message);
}

int tools_exec_forward(struct tool_ctx *ctx, const char *tool, const json_t *args, json_t **out,
		       struct kf_err *err)
{
	struct app *app = tool_ctx_app(ctx);
	int64_t t0 = tools_runs_now_ms();
	int i = gpu_tool(tool), code, rc;
	struct exec_job_result res;
	struct fwd_progress pr = {.ctx = ctx};
	char msg[sizeof(err->msg)];

	*out = NULL;
	if (i < 0)
		return kf_err_set(err, KF_EINVAL, "%s is not a GPU tool the cluster runs", tool);
	json_t *node_args = json_copy((json_t *)args), *keep = NULL;
	if (!node_args)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	if (GPU_TOOLS[i].meta) { /* a parent is checked against this history */
		struct tools_runs_meta m;
		if ((rc = tools_runs_meta_from_args(app, args, &m, err))) {
			json_decref(node_args);
			return rc;
		}
		if (m.parent) {
			keep = json_pack("{s:s}", "parent", m.parent);
			json_object_del(node_args, "parent");
		}
	}
	struct exec_job_req req = {
		.tool = tool,
		.args = node_args,
		.keep = keep,
		.client = mcp_call_client(ctx),
		.exclusive = GPU_TOOLS[i].exclusive,
		.cancel = tool_ctx_cancel_flag(ctx),
		.progress = to_client,
		.progress_arg = &pr,
	};
	struct kf_err e = {0};
	rc = exec_job_run(app->exec, &req, &res, &e);
	*out = answer_of(rc, &res, e.msg, &code, msg, sizeof(msg));
	if (res.key[0] && rc != KF_EBUSY)
		record(app, i, res.key, args, keep, *out, code, msg, tools_runs_now_ms() - t0, &res,
		       rc);
	exec_job_result_fini(&res);
	json_decref(keep);
	json_decref(node_args);
	if (code)
		kf_err_set(err, code, "%s", msg);
	return code;
}

void tools_exec_recovered(void *arg, const struct history_job *job, int rc,
			  const struct exec_job_result *res, const char *msg)
{
	struct app *app = arg;
	char p[PATH_MAX + 16], code_msg[256];
	json_t *call, *out;
	int code, i = gpu_tool(job->tool);

	if (i < 0) {
		log_warn("exec", "job %s ran '%s', which this kforge does not send to Slurm",
			 job->key, job->tool);
		return;
	}
	snprintf(p, sizeof(p), "%s/call.json", job->dir);
	call = json_load_file(p, 0, NULL);
	out = answer_of(rc, res, msg, &code, code_msg, sizeof(code_msg));
	record(app, i, job->key, json_object_get(call, "arguments"),
	       json_object_get(call, "daemon"), out, code, code_msg,
	       (int64_t)time(NULL) * 1000 - job->created_ms, res, rc);
	log_info("exec", "slurm job %s (%s) of a previous daemon ended: %s", job->slurm_id,
		 job->tool, code ? code_msg : "ok");
	json_decref(out);
	json_decref(call);
}
