/* tools_profile: the profile_kernel MCP tool over sandbox/profile/profile.h
 * and the kforge://profiles/{id} resource (ncu's raw CSV of a profile).
 * The answer is written here from struct profile_result: per kernel the
 * speed of light, occupancy, registers and local memory, stalls, hit
 * rates, bank conflicts, sectors per request, tensor pipes and DRAM bytes
 * against the cost model, each finding with its guide, and the things most
 * worth trying last. Every call is recorded in the run history. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/profile/profile.h"
#include "server/app.h"
#include "server/mcp/mcp.h"
#include "server/mcp/tools.h"
#include "server/tools/tools_exec.h"
#include "server/tools/tools_progress.h"
#include "server/tools/tools_runs.h"

#define PROFILE_URI "kforge://profiles/"

/* A metric as JSON: null when ncu did not report it, else rounded to what
 * the counters can tell apart. */
static json_t *num(double v)
{
	if (isnan(v))
		return json_null();
	double r = fabs(v) >= 100 ? round(v) : round(v * 100) / 100;
	return r == floor(r) && fabs(r) < 1e15 ? json_integer((json_int_t)r) : json_real(r);
}

static json_t *ratio(double a, double b)
{
	return !isnan(a) && !isnan(b) && b > 0 ? num(a / b) : json_null();
}

static const char *limiter(const struct profile_metrics *m)
{
	static const char *const N[] = {"registers", "shared_memory", "warps", "blocks"};
	double lim[] = {m->limit_registers, m->limit_shared, m->limit_warps, m->limit_blocks};
	if (m->occ_theoretical_pct >= 99.5)
		return "none"; /* every warp slot can be filled */
	int w = -1;
	for (int i = 0; i < 4; i++)
		if (!isnan(lim[i]) && (w < 0 || lim[i] < lim[w]))
			w = i;
	return w < 0 ? NULL : N[w];
}

static json_t *stalls_json(const struct profile_metrics *m)
{
	double total = 0;
	for (size_t i = 0; i < m->stalls_len; i++)
		if (strcmp(m->stalls[i].name, "selected") &&
		    strcmp(m->stalls[i].name, "not_selected"))
			total += m->stalls[i].per_inst;
	int used[PROFILE_STALLS_MAX] = {0};
	json_t *a = json_array();
	for (int k = 0; k < 4; k++) {
		int best = -1;
		for (size_t i = 0; i < m->stalls_len; i++)
			if (!used[i] && strcmp(m->stalls[i].name, "selected") &&
			    strcmp(m->stalls[i].name, "not_selected") &&
			    (best < 0 || m->stalls[i].per_inst > m->stalls[best].per_inst))
				best = (int)i;
		if (best < 0 || !(m->stalls[best].per_inst > 0) || total <= 0)
			break;
		used[best] = 1;
		json_array_append_new(
			a, json_pack("{s:s, s:o, s:o}", "reason", m->stalls[best].name, "share_pct",
				     num(100 * m->stalls[best].per_inst / total), "cycles_per_inst",
				     num(m->stalls[best].per_inst)));
	}
	return a;
}

static json_t *findings_json(const struct profile_findings *fs)
{
	json_t *a = json_array();
	for (size_t i = 0; i < fs->len; i++) {
		char g[80];
		snprintf(g, sizeof g, "kforge://guides/%s", fs->f[i].guide);
		json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "id", fs->f[i].id, "text",
						   fs->f[i].text, "guide", g));
	}
	return a;
}

static json_t *try_json(const struct profile_findings *fs)
{
	json_t *a = json_array();
	for (size_t i = 0; i < fs->try_len; i++)
		json_array_append_new(a, json_string(fs->f[fs->try_idx[i]].try_));
	return a;
}

static json_t *kernel_json(const struct profile_metrics *m, const struct profile_findings *fs,
			   double cost_bytes)
{
	const char *lim = limiter(m);
	double moved = m->dram_read_bytes + m->dram_write_bytes;
	json_t *k = json_pack(
		"{s:s, s:s, s:s, s:s, s:o, s:{s:o, s:o, s:o, s:o, s:o, s:o}, s:{s:o, s:o, s:s?}, s:o, "
		"s:{s:o, s:o}, s:o, s:{s:o, s:o}, s:{s:o, s:o}, s:{s:o, s:o, s:o}, "
		"s:{s:o, s:o}, s:{s:o, s:o, s:o, s:o}}",
		"program", m->program, "name", m->kernel, "bound", fs->bound, "verdict",
		fs->verdict, "duration_us", num(m->duration_ns / 1e3), "speed_of_light_pct", "dram",
		num(m->sol_dram_pct), "dram_cost_model", num(fs->dram_cost_pct), "l2",
		num(m->sol_l2_pct), "l1_shared", num(m->sol_l1_pct), "compute",
		num(m->sol_compute_pct), "memory", num(m->sol_memory_pct), "occupancy_pct",
		"achieved", num(m->occ_achieved_pct), "theoretical", num(m->occ_theoretical_pct),
		"limiter", lim, "registers_per_thread", num(m->regs_per_thread),
		"local_memory_sectors", "load", num(m->local_ld_sectors), "store",
		num(m->local_st_sectors), "stalls", stalls_json(m), "hit_rate_pct", "l1",
		num(m->l1_hit_pct), "l2", num(m->l2_hit_pct), "shared_bank_conflicts", "count",
		num(m->shared_ld_conflicts + m->shared_st_conflicts), "per_wavefront",
		ratio(m->shared_ld_conflicts + m->shared_st_conflicts,
		      m->shared_ld_wavefronts + m->shared_st_wavefronts),
		"global_sectors_per_request", "load", ratio(m->gld_sectors, m->gld_requests),
		"store", ratio(m->gst_sectors, m->gst_requests), "load_bytes_used_pct",
		num(m->gld_bytes_used_pct), "tensor_pipe_pct", "wgmma", num(m->gmma_pct), "hmma",
		num(m->hmma_pct), "dram_bytes", "read", num(m->dram_read_bytes), "write",
		num(m->dram_write_bytes), "cost_model",
		cost_bytes > 0 ? num(cost_bytes) : json_null(), "moved_vs_cost",
		cost_bytes > 0 ? ratio(moved, cost_bytes) : json_null());
	if (!k)
		return NULL;
	json_object_set_new(k, "launch",
			    json_pack("{s:o, s:o, s:o, s:o}", "grid", num(m->grid_size), "block",
				      num(m->block_size), "shared_bytes",
				      num(m->shared_static_bytes + m->shared_dynamic_bytes),
				      "waves_per_sm", num(m->waves_per_sm)));
	json_object_set_new(k, "findings", findings_json(fs));
	json_object_set_new(k, "try", try_json(fs));
	return k;
}

/* The one-paragraph summary: the candidate's verdict and what to try. */
static void summary_text(const struct profile_result *res, char *buf, size_t cap)
{
	char st[160] = "";
	size_t n = 0;
	for (size_t k = 0; k < res->vars_len && n < sizeof st; k++)
		n += (size_t)snprintf(st + n, sizeof st - n, "%s%s=%lld", k ? ", " : "",
				      res->vars[k], (long long)res->vals[k]);
	n = (size_t)snprintf(buf, cap, "at %s:", st);
	for (size_t i = 0; i < res->report.kernels_len && n < cap; i++) {
		const struct profile_metrics *m = &res->report.kernels[i];
		const struct profile_findings *fs = &res->findings[i];
		n += (size_t)snprintf(buf + n, cap - n, " %s %s %s.", m->program, m->kernel,
				      fs->verdict);
		if (strcmp(m->program, "candidate") || n >= cap)
			continue;
		for (size_t j = 0; j < fs->len && n < cap; j++)
			if (!strcmp(fs->f[j].id, "stalls"))
				n += (size_t)snprintf(buf + n, cap - n, " %s.", fs->f[j].text);
		for (size_t j = 0; j < fs->try_len && n < cap; j++)
			n += (size_t)snprintf(buf + n, cap - n, " Try %zu: %s.", j + 1,
					      fs->f[fs->try_idx[j]].try_);
	}
}

static const char *const REASONS[] = {
	"", "no_gpu", "no_ncu", "counters_denied", "profiler_library_missing", "profiler_failed"};

/* The answer, or NULL when there is none (an error result is built). */
static json_t *profile_json(const struct profile_result *res, int rc, const char *msg)
{
	if (res->unavailable)
		return json_pack("{s:s, s:b, s:s, s:o}", "summary", res->why, "profiled", 0,
				 "reason", REASONS[res->unavailable], "error",
				 mcp_error_member(kf_err_name(rc), res->why));
	if (res->answer == CHECK_ANSWER_COMPILE)
		return json_pack("{s:s, s:b, s:s, s:o}", "summary", msg, "profiled", 0, "stage",
				 "compile", "error", mcp_error_member(kf_err_name(rc), msg));
	if (res->fault[0])
		return json_pack("{s:s, s:b, s:b, s:s}", "summary", res->fault, "profiled", 0,
				 "passed", 0, "safeguard", res->hung ? "timeout" : "fault");
	if (res->answer != CHECK_ANSWER_VERDICT)
		return NULL;
	char *sum = malloc(4096);
	if (!sum)
		return NULL;
	summary_text(res, sum, 4096);
	json_t *size = json_object(), *kernels = json_array();
	for (size_t k = 0; k < res->vars_len; k++)
		json_object_set_new(size, res->vars[k], json_integer(res->vals[k]));
	json_t *tryv = json_array();
	for (size_t i = 0; i < res->report.kernels_len; i++) {
		json_array_append_new(kernels, kernel_json(&res->report.kernels[i],
							   &res->findings[i], res->cost_bytes));
		if (!strcmp(res->report.kernels[i].program, "candidate") &&
		    !json_array_size(tryv)) {
			json_t *t = try_json(&res->findings[i]);
			json_array_extend(tryv, t);
			json_decref(t);
		}
	}
	json_t *o = json_pack("{s:s, s:b, s:o, s:i, s:o}", "summary", sum, "profiled", 1, "size",
			      size, "size_index", res->size_index, "kernels", kernels);
	free(sum);
	if (!o) {
		json_decref(tryv);
		return NULL;
	}
	if (res->device.present)
		json_object_set_new(o, "device",
				    json_pack("{s:s, s:i, s:i}", "name", res->device.name,
					      "cc_major", res->device.cc_major, "cc_minor",
					      res->device.cc_minor));
	if (res->baseline_error[0])
		json_object_set_new(o, "baseline_unavailable", json_string(res->baseline_error));
	if (res->report_id[0]) {
		char uri[64];
		snprintf(uri, sizeof uri, PROFILE_URI "%s", res->report_id);
		json_object_set_new(o, "raw_report", json_string(uri));
	}
	json_object_set_new(
		o, "method",
		json_pack("{s:s, s:s, s:s, s:s}", "ncu", res->ncu_path, "clock_control", "none",
			  "cache_control", "all (flushed before every replay pass)", "durations",
			  "under replay: explain with them, time with benchmark_kernel"));
	if (res->dropped[0]) {
		json_t *d = json_array();
		char buf[sizeof res->dropped], *save = NULL;
		snprintf(buf, sizeof buf, "%s", res->dropped);
		for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
			json_array_append_new(d, json_string(t));
		json_object_set_new(o, "metrics_unavailable", d);
	}
	json_object_set_new(o, "try", tryv);
	return o;
}

static int profile_handler(struct tool_ctx *ctx, const json_t *args, json_t **out,
			   struct kf_err *err)
{
	struct app *app = mcp_call_app(ctx);
	if (exec_is_remote(app->exec)) /* a node's ncu; its raw report stays there */
		return tools_exec_forward(ctx, "profile_kernel", args, out, err);
	int64_t t0 = tools_runs_now_ms();
	const json_t *spec = json_object_get(args, "spec");
	struct tools_progress pr = TOOLS_PROGRESS_INIT(ctx);
	struct profile_opts o = {
		.size_index = (int)json_integer_value(json_object_get(args, "size")),
		.baseline = json_is_true(json_object_get(args, "baseline")),
		.timeout_ms =
			(unsigned)json_integer_value(json_object_get(args, "timeout_s")) * 1000u,
		.cancel = mcp_call_cancel_flag(ctx),
		.progress = tools_progress_forward,
		.progress_arg = &pr,
	};
	struct profile_result *res = calloc(1, sizeof *res);
	if (!res)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	int gpu = -1;
	int rc = profile_kernel(&app->check, spec, &o, res, &gpu, err);
	*out = profile_json(res, rc, err->msg);
	if (!*out && rc)
		*out = json_pack("{s:s, s:b, s:o}", "summary", err->msg, "profiled", 0, "error",
				 mcp_error_member(kf_err_name(rc), err->msg));
	else if (*out && rc == KF_EFAULT && res->fault[0]) {
		kf_err_clear(err);
		kf_err_set(err, rc, "%s", res->fault);
	}
	profile_result_fini(res);
	free(res);
	tools_runs_record(app, HISTORY_PROFILE, args, *out, rc, err->msg, gpu,
			  tools_runs_now_ms() - t0, NULL);
	return rc;
}

/* --- kforge://profiles/{id} -------------------------------------------------- */

static int profiles_read(struct app *app, const char *uri, json_t **contents, struct kf_err *err)
{
	if (strncmp(uri, PROFILE_URI, sizeof PROFILE_URI - 1) != 0)
		return kf_err_set(err, KF_ENOTFOUND, "not a profile report: %.80s", uri);
	char path[4096];
	int rc = profile_report_path(app->check.data_dir, uri + sizeof PROFILE_URI - 1, path,
				     sizeof path, err);
	if (rc)
		return KF_ENOTFOUND;
	FILE *f = fopen(path, "rb");
	if (!f)
		return kf_err_set(err, KF_ENOTFOUND, "no profile report at %.120s", uri);
	char *text = malloc(PROFILE_CSV_MAX_BYTES + 1);
	size_t n = text ? fread(text, 1, PROFILE_CSV_MAX_BYTES, f) : 0;
	fclose(f);
	if (!text)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	text[n] = 0;
	*contents =
		json_pack("[{s:s, s:s, s:s}]", "uri", uri, "mimeType", "text/csv", "text", text);
	free(text);
	return *contents ? 0 : kf_err_set(err, KF_ENOMEM, "out of memory");
}

/* Terse: tools/list stays small; docs/profile.md describes the answer. */
static const char PROFILE_INPUT[] =
	"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"spec\"], "
	"\"properties\": {\"spec\": {\"type\": \"object\"}, "
	"\"size\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 31}, "
	"\"baseline\": {\"type\": \"boolean\"}, "
	"\"timeout_s\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 600}}}";

static const char PROFILE_OUTPUT[] =
	"{\"type\": \"object\", \"required\": [\"summary\", \"profiled\"]}";

static const struct tool_def PROFILE_TOOLS[] = {
	{
		.name = "profile_kernel",
		.title = "Profile a kernel",
		.description = "Why it is slow: Nsight Compute at one size; findings with guides, "
			       "what to try.",
		.input_schema = PROFILE_INPUT,
		.output_schema = PROFILE_OUTPUT,
		.annotations = TOOL_TASK | TOOL_GPU_JOB,
		.handler = profile_handler,
	},
};

static const struct resource_def PROFILE_RESOURCES[] = {
	{
		.uri_template = "kforge://profiles/{id}",
		.name = "profile-report",
		.title = "Raw ncu report",
		.description = "ncu's raw CSV (--csv --page raw) of a profile_kernel run.",
		.mime_type = "text/csv",
		.read = profiles_read,
	},
};

const struct tool_group TOOLS_PROFILE = {
	.tools = PROFILE_TOOLS,
	.tools_len = sizeof(PROFILE_TOOLS) / sizeof(PROFILE_TOOLS[0]),
	.resources = PROFILE_RESOURCES,
	.resources_len = sizeof(PROFILE_RESOURCES) / sizeof(PROFILE_RESOURCES[0]),
};
