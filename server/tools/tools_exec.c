/* tools_exec: a GPU tool call forwarded to the cluster executor and its
 * answer turned back into the tool's result; see tools_exec.h. */
#include "server/tools/tools_exec.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "server/app.h"
#include "server/mcp/mcp.h"
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
	int meta;     /* records description, notes, parent (tools_runs_meta) */
	int ceilings; /* the node gets this daemon's calibrations (% of ceilings) */
} GPU_TOOLS[] = {
	{"check_kernel", HISTORY_CHECK, 0, 1, 0},     /* sandbox/check */
	{"benchmark_kernel", HISTORY_BENCH, 1, 1, 1}, /* sandbox/check (bench.c) */
	{"get_gpu_specs", NO_RUN, 0, 0, 0},	      /* "local": the node's GPUs */
	{"benchmark_model", HISTORY_BENCH, 1, 0, 0},  /* sandbox/model */
	{"build_torch_op", NO_RUN, 0, 0, 0},	      /* sandbox/torchop */
	{"calibrate", HISTORY_CALIBRATE, 1, 0, 0},    /* kforge calibrate, per GPU type */
	{"profile_kernel", HISTORY_PROFILE, 1, 0, 0}, /* sandbox/profile; raw report on the node */
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
		json_t *e = mcp_error_member(kf_err_name(*code), code_msg);
		if (e)
			json_object_set_new(e, "slurm",
					    json_pack("{s:s, s:s, s:s, s:i}", "said", res->said,
						      "job_id", res->slurm_id, "node", res->node,
						      "attempts", res->attempts));
		out = json_pack("{s:s, s:b, s:o}", "summary", code_msg, "passed", 0, "error", e);
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

	mcp_call_progress(p->ctx, progress, 0, message);
}

/* {"ceilings": [...]}: this daemon's calibrations (kforge calibrate
 * --executor slurm stores one per GPU type), for the node to use where it
 * has none of its own; NULL when there are none. New reference. */
static json_t *seed_ceilings(struct app *app)
{
	struct history_ceilings *c = NULL;
	size_t n = 0;
	json_t *arr;

	if (!app->history || history_list_ceilings(app->history, &c, &n, NULL) || n == 0) {
		free(c);
		return NULL;
	}
	arr = json_array();
	for (size_t k = 0; k < n; k++)
		json_array_append_new(arr, json_pack("{s:s, s:s, s:f, s:f, s:f, s:I, s:s, s:s}",
						     "gpu_uuid", c[k].gpu_uuid, "device_name",
						     c[k].device_name, "copy_gbps", c[k].copy_gbps,
						     "bf16_tflops", c[k].bf16_tflops, "fp32_tflops",
						     c[k].fp32_tflops, "measured_ms",
						     (json_int_t)c[k].measured_ms, "method",
						     c[k].method, "run_id", c[k].run_id));
	free(c);
	return json_pack("{s:o}", "ceilings", arr);
}

/* Who asks for a job: a tool call (its client, cancellation and progress)
 * or the CLI (all NULL). */
struct asker {
	const char *client;
	const volatile int *cancel;
	exec_progress_fn progress;
	void *progress_arg;
};

/* Runs GPU tool i with args (borrowed) as one Slurm job with gres (NULL:
 * the executor's), records it, and sets *out (new) to the tool's result.
 * Returns the tool's code or exec_job_run's. */
static int run_job(struct app *app, int i, const json_t *args, const char *gres,
		   const struct asker *a, json_t **out, struct kf_err *err)
{
	int64_t t0 = tools_runs_now_ms();
	int code, rc;
	struct exec_job_result res;
	char msg[sizeof(err->msg)];

	*out = NULL;
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
	json_t *seed = GPU_TOOLS[i].ceilings ? seed_ceilings(app) : NULL;
	struct exec_job_req req = {
		.tool = GPU_TOOLS[i].tool,
		.args = node_args,
		.seed = seed,
		.keep = keep,
		.client = a->client,
		.exclusive = GPU_TOOLS[i].exclusive,
		.gres = gres,
		.cancel = a->cancel,
		.progress = a->progress,
		.progress_arg = a->progress_arg,
	};
	struct kf_err e = {0};
	rc = exec_job_run(app->exec, &req, &res, &e);
	*out = answer_of(rc, &res, e.msg, &code, msg, sizeof(msg));
	if (res.key[0] && rc != KF_EBUSY)
		record(app, i, res.key, args, keep, *out, code, msg, tools_runs_now_ms() - t0, &res,
		       rc);
	exec_job_result_fini(&res);
	json_decref(seed);
	json_decref(keep);
	json_decref(node_args);
	if (code)
		kf_err_set(err, code, "%s", msg);
	return code;
}

int tools_exec_forward(struct tool_ctx *ctx, const char *tool, const json_t *args, json_t **out,
		       struct kf_err *err)
{
	struct fwd_progress pr = {.ctx = ctx};
	struct asker a = {mcp_call_client(ctx), mcp_call_cancel_flag(ctx), to_client, &pr};
	int i = gpu_tool(tool);

	*out = NULL;
	if (i < 0)
		return kf_err_set(err, KF_EINVAL, "%s is not a GPU tool the cluster runs", tool);
	return run_job(mcp_call_app(ctx), i, args, NULL, &a, out, err);
}

/* --- one job per GPU type of the partition ------------------------------ */

#define TYPES_MAX 16 /* GPU types of one partition asked at once */

struct typed_job {
	struct app *app;
	int i;
	const json_t *args;
	const struct asker *a;
	char type[EXEC_GPU_TYPE_BYTES];
	char gres[EXEC_GPU_TYPE_BYTES + 16];
	json_t *out;
	int rc;
	struct kf_err err;
	pthread_t th;
	int started;
};

static void *typed_run(void *arg)
{
	struct typed_job *t = arg;

	t->rc = run_job(t->app, t->i, t->args, t->gres[0] ? t->gres : NULL, t->a, &t->out, &t->err);
	if (t->out && t->type[0])
		json_object_set_new(t->out, "gres_type", json_string(t->type));
	return NULL;
}

/* Runs tool i once per GPU type of the partition (--gres gpu:TYPE:1, all
 * at once), or once when its GPUs are untyped. *answers (new): each
 * type's result, with "gres_type"; *types (new): the type names. Returns
 * 0 when at least one answered without error, else the first error. */
static int per_type(struct app *app, int i, const json_t *args, const struct asker *a,
		    json_t **answers, json_t **types, struct kf_err *err)
{
	char names[TYPES_MAX][EXEC_GPU_TYPE_BYTES];
	struct typed_job jobs[TYPES_MAX];
	int n = exec_gpu_types(app->exec, names, TYPES_MAX, err), rc = 0, ok = 0;

	*answers = *types = NULL;
	if (n < 0)
		return n;
	*answers = json_array();
	*types = json_array();
	for (int k = 0; k < (n ? n : 1); k++) {
		jobs[k] = (struct typed_job){.app = app, .i = i, .args = args, .a = a};
		if (n) {
			snprintf(jobs[k].type, sizeof(jobs[k].type), "%.31s", names[k]);
			snprintf(jobs[k].gres, sizeof(jobs[k].gres), "gpu:%.31s:1", names[k]);
			json_array_append_new(*types, json_string(names[k]));
		}
		jobs[k].started = pthread_create(&jobs[k].th, NULL, typed_run, &jobs[k]) == 0;
		if (!jobs[k].started)
			typed_run(&jobs[k]);
	}
	for (int k = 0; k < (n ? n : 1); k++) {
		if (jobs[k].started)
			pthread_join(jobs[k].th, NULL);
		if (jobs[k].out)
			json_array_append_new(*answers, jobs[k].out);
		if (!jobs[k].rc)
			ok = 1;
		else if (!rc) {
			rc = jobs[k].rc;
			kf_err_set(err, rc, "%s", jobs[k].err.msg);
		}
	}
	return ok ? 0 : rc;
}

static json_t *partition_info(struct app *app, json_t *types)
{
	return json_pack("{s:s, s:o}", "name", exec_partition(app->exec), "gpu_types", types);
}

int tools_exec_gpu_local(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	struct app *app = mcp_call_app(ctx);
	struct fwd_progress pr = {.ctx = ctx};
	struct asker a = {mcp_call_client(ctx), mcp_call_cancel_flag(ctx), to_client, &pr};
	json_t *answers, *types, *local, *ans;
	char sum[512];
	size_t k, n = 0;
	int rc = per_type(app, gpu_tool("get_gpu_specs"), args, &a, &answers, &types, err);

	*out = NULL;
	if (!answers)
		return rc;
	if (json_array_size(types) == 0) { /* untyped: the one node's answer */
		*out = json_incref(json_array_get(answers, 0));
		if (*out)
			json_object_set_new(*out, "partition", partition_info(app, types));
		json_decref(answers);
		return rc;
	}
	/* typed: every type's GPUs, each saying its type and node */
	local = json_array();
	n = (size_t)snprintf(sum, sizeof(sum), "partition %s:", exec_partition(app->exec));
	json_array_foreach(answers, k, ans) {
		const char *type = json_string_value(json_object_get(ans, "gres_type"));
		const char *node = json_string_value(
			json_object_get(json_object_get(ans, "executor"), "node"));
		size_t d;
		json_t *g;
		if (json_object_get(ans, "error")) {
			json_array_append_new(local,
					      json_pack("{s:s?, s:O}", "gres_type", type, "error",
							json_object_get(ans, "error")));
			continue;
		}
		json_array_foreach(json_object_get(ans, "local"), d, g) {
			json_t *e = json_deep_copy(g);
			json_object_set_new(e, "gres_type", json_string(type ? type : ""));
			json_object_set_new(e, "node", json_string(node ? node : ""));
			json_array_append_new(local, e);
			if (d == 0 && n < sizeof(sum))
				n += (size_t)snprintf(
					sum + n, sizeof(sum) - n, " %s = %s;", type ? type : "?",
					json_string_value(json_object_get(
						json_object_get(g, "device"), "name")));
		}
	}
	*out = json_pack("{s:s, s:o, s:o}", "summary", sum, "local", local, "partition",
			 partition_info(app, types));
	json_decref(answers);
	return rc;
}

static const char *str_of(const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v ? v : "";
}

/* A node's calibration (calibrate's answer, borrowed) into app's history;
 * an error answer is skipped. */
static void store_ceilings(struct app *app, const json_t *ans)
{
	struct history_ceilings c = {0};
	struct kf_err e = {0};

	if (json_object_get(ans, "error") || !json_is_string(json_object_get(ans, "uuid")))
		return;
	snprintf(c.gpu_uuid, sizeof(c.gpu_uuid), "%s",
		 json_string_value(json_object_get(ans, "uuid")));
	snprintf(c.device_name, sizeof(c.device_name), "%s", str_of(ans, "gpu"));
	snprintf(c.method, sizeof(c.method), "%s", str_of(ans, "method"));
	c.copy_gbps = json_number_value(json_object_get(ans, "copy_gbs"));
	c.bf16_tflops = json_number_value(json_object_get(ans, "bf16_tflops"));
	c.fp32_tflops = json_number_value(json_object_get(ans, "fp32_tflops"));
	if (history_set_ceilings(app->history, &c, &e))
		log_warn("exec", "ceilings of %s: %s", c.gpu_uuid, e.msg);
}

int tools_exec_calibrate(struct app *app, json_t **out, struct kf_err *err)
{
	struct asker a = {0};
	json_t *answers, *types, *ans, *args = json_object();
	size_t k;
	int rc = per_type(app, gpu_tool("calibrate"), args, &a, &answers, &types, err);

	json_decref(args);
	*out = NULL;
	if (!answers)
		return rc;
	/* each type's ceilings in this daemon's history, beside its run */
	json_array_foreach(answers, k, ans)
		store_ceilings(app, ans);
	*out = json_pack("{s:s, s:o, s:o}", "summary", "", "results", answers, "partition",
			 partition_info(app, types));
	char sum[512];
	size_t n = (size_t)snprintf(sum, sizeof(sum),
				    "calibrated partition %s:", exec_partition(app->exec));
	json_array_foreach(answers, k, ans)
		if (n < sizeof(sum))
			n += (size_t)snprintf(
				sum + n, sizeof(sum) - n, " %s%s%s;",
				json_string_value(json_object_get(ans, "gres_type"))
					? json_string_value(json_object_get(ans, "gres_type"))
					: "",
				json_object_get(ans, "gres_type") ? " = " : "",
				json_string_value(json_object_get(ans, "summary")));
	json_object_set_new(*out, "summary", json_string(sum));
	return rc;
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
	if (code == 0 && GPU_TOOLS[i].kind == HISTORY_CALIBRATE)
		store_ceilings(app, out);
	log_info("exec", "slurm job %s (%s) of a previous daemon ended: %s", job->slurm_id,
		 job->tool, code ? code_msg : "ok");
	json_decref(out);
	json_decref(call);
}
