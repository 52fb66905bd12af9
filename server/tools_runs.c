/* tools_runs: list_runs, get_run, compare_runs and the kforge://runs/...
 * resources over sandbox/history; runs_record for the handlers that make
 * runs. See tools_runs.h. Benchmark comparisons use each run's median and
 * the uncertainty of that median as the harness stores it (see
 * bench_stat_read); nothing here measures or invents a number. */
#include "tools_runs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "log.h"
#include "sandbox/cache.h"
#include "sandbox/gpu.h"
#include "tools.h"

#define INLINE_SPEC_MAX 16384   /* spec JSON bytes shown inline by get_run */
#define INLINE_RESULT_MAX 32768 /* result JSON bytes shown inline */
#define RESOURCE_LIST_MAX 20    /* runs listed by resources/list */
#define Z95 1.959963984540054   /* two-sided 95% normal quantile */

int64_t runs_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void iso_time(int64_t ms, char *buf, size_t cap)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static size_t json_size(const json_t *j)
{
	return j ? json_dumpb(j, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY) : 0;
}

/* ---- recording --------------------------------------------------------- */

/* Appends name to a comma list (buf, cap) unless already there. */
static void add_name(char *buf, size_t cap, const char *name)
{
	size_t n = strlen(name), len = strlen(buf);
	const char *p = buf;

	if (!n || strchr(name, ','))
		return;
	while ((p = strstr(p, name))) {
		if ((p == buf || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return;
		p += n;
	}
	if (len + n + 2 > cap)
		return;
	if (len)
		buf[len++] = ',';
	memcpy(buf + len, name, n + 1);
}

static void kernel_names(const json_t *args, const json_t *result, char *buf,
			 size_t cap)
{
	const json_t *ks = result ? json_object_get(result, "kernels") : NULL;
	const json_t *launch = args ? json_object_get(args, "launch") : NULL;
	size_t i;
	json_t *v;

	buf[0] = '\0';
	json_array_foreach(ks, i, v) {
		if (json_is_string(v))
			add_name(buf, cap, json_string_value(v));
		else if (json_is_string(json_object_get(v, "name")))
			add_name(buf, cap,
				 json_string_value(json_object_get(v, "name")));
	}
	json_array_foreach(launch, i, v)
		if (json_is_string(json_object_get(v, "kernel")))
			add_name(buf, cap,
				 json_string_value(json_object_get(v, "kernel")));
	if (!buf[0] && args && json_is_string(json_object_get(args, "op")))
		add_name(buf, cap, json_string_value(json_object_get(args, "op")));
}

static enum history_status status_of(int rc, const json_t *result)
{
	if (rc == 0)
		return json_is_false(json_object_get(result, "passed"))
			       ? HISTORY_FAILED
			       : HISTORY_OK;
	/* The kernel's fault; anything else (no_gpu, a bad spec, busy,
	 * cancelled) is an error even when the result says "passed": false. */
	if (rc == KF_ECOMPILE || rc == KF_EFAULT || rc == KF_ETIMEOUT)
		return HISTORY_FAILED;
	return HISTORY_ERROR;
}

int runs_record(struct app *app, enum history_kind kind, const json_t *args,
		json_t *result, int rc, const char *err_msg, int gpu,
		int64_t duration_ms, char id_out[HISTORY_ID_BYTES])
{
	struct history_run run = { 0 };
	struct kf_err err = { 0 };
	char kernels[1024], hash[CACHE_ID_LEN + 1];
	const json_t *src = args ? json_object_get(args, "source") : NULL;
	const json_t *sum = result ? json_object_get(result, "summary") : NULL;
	const struct gpu_info *g = gpu >= 0 ? gpu_get(gpu) : NULL;
	json_t *stored = NULL, *stored_spec = NULL;
	char summary[1024];
	int ret;

	if (id_out)
		id_out[0] = '\0';
	if (!app || !app->history)
		return KF_EINTERNAL;
	kernel_names(args, result, kernels, sizeof(kernels));
	run.kind = kind;
	run.status = status_of(rc, result);
	run.duration_ms = duration_ms;
	run.kernels = kernels;
	if (json_is_string(src)) {
		struct cache_sha256 s;

		cache_sha256_init(&s);
		cache_sha256_update(&s, json_string_value(src),
				    json_string_length(src));
		cache_sha256_final_hex(&s, hash);
		run.source_hash = hash;
	}
	if (g) {
		run.device_name = (char *)g->name;
		run.device_uuid = (char *)g->uuid;
	}
	/* A long summary is cut (at a character boundary) rather than the
	 * run lost; so is a result over the history's cap. */
	snprintf(summary, sizeof(summary), "%s",
		 json_is_string(sum) ? json_string_value(sum)
		 : err_msg           ? err_msg
				     : kf_err_name(rc));
	if (strlen(summary) == sizeof(summary) - 1) {
		size_t n = sizeof(summary) - 1;

		/* drop a character the cut may have split (perhaps a whole
		 * one: never half of one) */
		while (n > 0 && ((unsigned char)summary[n - 1] & 0xC0) == 0x80)
			summary[--n] = '\0';
		if (n > 0 && (unsigned char)summary[n - 1] >= 0xC0)
			summary[--n] = '\0';
	}
	run.summary = summary;
	run.spec = (json_t *)args;
	if (json_size(args) > HISTORY_JSON_MAX) {
		stored_spec = json_pack("{s:b, s:I}", "truncated", 1, "bytes",
					(json_int_t)json_size(args));
		run.spec = stored_spec;
	}
	if (result && json_size(result) > HISTORY_JSON_MAX) {
		stored = json_pack("{s:s, s:b, s:I}", "summary", summary,
				   "truncated", 1, "bytes",
				   (json_int_t)json_size(result));
		run.result = stored;
	} else if (result) {
		run.result = result;
	} else {
		stored = json_pack("{s:s, s:{s:s, s:s}}", "summary", summary,
				   "error", "code", kf_err_name(rc), "message",
				   err_msg ? err_msg : "");
		run.result = stored;
	}
	ret = history_add(app->history, &run, &err);
	json_decref(stored);
	json_decref(stored_spec);
	if (ret) {
		log_warn("runs", "run not recorded: %s", err.msg);
		return ret;
	}
	if (result && json_is_object(result))
		json_object_set_new(result, "run_id", json_string(run.id));
	if (id_out)
		memcpy(id_out, run.id, HISTORY_ID_BYTES);
	return 0;
}

/* ---- shared helpers ---------------------------------------------------- */

static struct history *hist(struct tool_ctx *ctx, struct kf_err *err)
{
	struct app *app = tool_ctx_app(ctx);

	if (!app || !app->history) {
		kf_err_set(err, KF_EINTERNAL, "run history is not open");
		return NULL;
	}
	return app->history;
}

static json_t *kernels_array(const char *list)
{
	json_t *arr = json_array();
	const char *p = list ? list : "";

	while (*p) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);

		if (n)
			json_array_append_new(arr, json_stringn(p, n));
		p += n + (c ? 1 : 0);
	}
	return arr;
}

/* The row of a listing: light, no spec or result. */
static json_t *row_json(const struct history_run *r)
{
	char when[32];

	iso_time(r->created_ms, when, sizeof(when));
	return json_pack("{s:s, s:s, s:s, s:s, s:o, s:s?, s:I, s:s}", "id", r->id,
			 "kind", history_kind_name(r->kind), "status",
			 history_status_name(r->status), "created", when,
			 "kernels", kernels_array(r->kernels), "device",
			 r->device_name, "duration_ms", (json_int_t)r->duration_ms,
			 "summary", r->summary ? r->summary : "");
}

static json_t *res_link(const char *id, const char *part, const char *what,
		    size_t bytes)
{
	char uri[96];

	snprintf(uri, sizeof(uri), "kforge://runs/%s/%s", id, part);
	return json_pack("{s:s, s:s, s:I}", "resource", uri, "what", what,
			 "bytes", (json_int_t)bytes);
}

/* The whole record. With inline_all zero, a big spec loses its source and a
 * big result is replaced by a resource link. */
static json_t *run_json(const struct history_run *r, int inline_all)
{
	json_t *o = row_json(r);
	size_t spec_bytes = json_size(r->spec), result_bytes = json_size(r->result);

	json_object_set_new(o, "created_ms", json_integer(r->created_ms));
	json_object_set_new(o, "source_hash", r->source_hash
						      ? json_string(r->source_hash)
						      : json_null());
	json_object_set_new(o, "device_uuid", r->device_uuid
						      ? json_string(r->device_uuid)
						      : json_null());
	if (!r->spec) {
		json_object_set_new(o, "spec", json_null());
	} else if (inline_all || spec_bytes <= INLINE_SPEC_MAX) {
		json_object_set(o, "spec", r->spec);
	} else {
		json_t *spec = json_deep_copy(r->spec);
		const json_t *src = json_object_get(spec, "source");

		if (json_is_string(src)) {
			json_object_set_new(spec, "source",
					    res_link(r->id, "source", "the kernel source",
						 json_string_length(src)));
		}
		if (json_size(spec) > INLINE_SPEC_MAX) {
			json_decref(spec);
			spec = res_link(r->id, "spec", "the run's spec", spec_bytes);
		}
		json_object_set_new(o, "spec", spec);
	}
	if (!r->result)
		json_object_set_new(o, "result", json_null());
	else if (inline_all || result_bytes <= INLINE_RESULT_MAX)
		json_object_set(o, "result", r->result);
	else
		json_object_set_new(o, "result",
				    res_link(r->id, "result", "the tool's full result",
					 result_bytes));
	return o;
}

/* Parses "since": ISO date/time (UTC) or a relative age "30m", "6h", "7d".
 * Returns 0 with *ms (unix ms) or KF_EINVAL naming the field. */
static int parse_since(const char *s, int64_t *ms, struct kf_err *err)
{
	struct tm tm;
	char *end;
	double v;

	memset(&tm, 0, sizeof(tm));
	v = strtod(s, &end);
	if (end != s && end[0] && !end[1] && v >= 0 && isfinite(v) &&
	    strchr("smhdw", end[0]) && !strchr(s, '-')) {
		static const char units[] = "smhdw";
		static const double secs[] = { 1, 60, 3600, 86400, 604800 };
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		*ms = (int64_t)ts.tv_sec * 1000 -
		      (int64_t)(v * secs[strchr(units, end[0]) - units] * 1000);
		return 0;
	}
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		end = strptime(s, "%Y-%m-%d %H:%M:%S", &tm);
	if (!end) {
		memset(&tm, 0, sizeof(tm));
		end = strptime(s, "%Y-%m-%d", &tm);
	}
	if (!end || (*end && strcmp(end, "Z") != 0))
		return kf_err_set(err, KF_EINVAL,
				  "since: '%.40s' is not a time: use 2026-11-30, 2026-11-30T09:00:00Z, or an age like 30m, 6h, 7d",
				  s);
	*ms = (int64_t)timegm(&tm) * 1000;
	return 0;
}

/* ---- list_runs --------------------------------------------------------- */

static int list_runs(struct tool_ctx *ctx, const json_t *args, json_t **out,
		     struct kf_err *err)
{
	struct history *h = hist(ctx, err);
	struct history_filter f;
	struct history_page page;
	const char *s;
	json_t *rows;
	char summary[256];
	int rc;

	if (!h)
		return KF_EINTERNAL;
	history_filter_init(&f);
	if ((s = json_string_value(json_object_get(args, "kind"))))
		f.kind = history_kind_parse(s);
	if ((s = json_string_value(json_object_get(args, "status"))))
		f.status = history_status_parse(s);
	f.kernel = json_string_value(json_object_get(args, "kernel"));
	f.cursor = json_string_value(json_object_get(args, "cursor"));
	if (json_is_integer(json_object_get(args, "limit")))
		f.limit = (size_t)json_integer_value(json_object_get(args, "limit"));
	if ((s = json_string_value(json_object_get(args, "since")))) {
		rc = parse_since(s, &f.since_ms, err);
		if (rc)
			return rc;
	}
	rc = history_list(h, &f, &page, err);
	if (rc)
		return rc;
	rows = json_array();
	for (size_t i = 0; i < page.len; i++)
		json_array_append_new(rows, row_json(&page.runs[i]));
	if (page.len == 0)
		snprintf(summary, sizeof(summary), "no runs match%s",
			 f.cursor ? " (end of the listing)" : "");
	else
		snprintf(summary, sizeof(summary), "%zu run%s, newest first%s",
			 page.len, page.len == 1 ? "" : "s",
			 page.next_cursor[0] ? "; more with cursor next_cursor" : "");
	*out = json_pack("{s:s, s:o}", "summary", summary, "runs", rows);
	if (page.next_cursor[0])
		json_object_set_new(*out, "next_cursor",
				    json_string(page.next_cursor));
	history_page_fini(&page);
	return 0;
}

/* ---- get_run ----------------------------------------------------------- */

static int get_run(struct tool_ctx *ctx, const json_t *args, json_t **out,
		   struct kf_err *err)
{
	struct history *h = hist(ctx, err);
	struct history_run r;
	char summary[512];
	int rc;

	if (!h)
		return KF_EINTERNAL;
	rc = history_get(h, json_string_value(json_object_get(args, "id")), &r,
			 err);
	if (rc)
		return rc;
	snprintf(summary, sizeof(summary), "%s %s (%s): %s",
		 history_kind_name(r.kind), r.id, history_status_name(r.status),
		 r.summary ? r.summary : "");
	*out = json_pack("{s:s, s:o}", "summary", summary, "run", run_json(&r, 0));
	history_run_fini(&r);
	return 0;
}

/* ---- compare_runs ------------------------------------------------------ */

/* One side of a benchmark: the median and a 95% interval for it. */
struct bench_stat {
	int ok;         /* median found */
	double median;  /* us */
	double lo, hi;  /* 95% interval of the median, us; valid if has_ci */
	int has_ci;
	char ci_from[72]; /* which stored field gave the interval */
	json_int_t count;
};

static double num(const json_t *o, const char *k, int *found)
{
	const json_t *v = json_object_get(o, k);

	*found = json_is_number(v);
	return *found ? json_number_value(v) : 0.0;
}

/* Reads the candidate's timing statistics from a benchmark result:
 * result[which].median_us (or median_ms: times are reported in us). The
 * interval of the median, in order of preference: an explicit interval
 * ([lo, hi] in median_ci, ci95 or ci; or ci_lo/ci_hi, ci_low/ci_high), a
 * standard error of the median (se_median, median_se, stderr, se, sem:
 * +-1.96 se), else from cv and count the large-sample standard error of a
 * median, 1.2533 * cv * median / sqrt(count), marked approximate. Every key
 * carries the median's unit suffix (sandbox/stats.h's stats_summary
 * fields: se_median, ci_lo, ci_hi). */
static void bench_stat_read(const json_t *result, const char *which,
			    struct bench_stat *s)
{
	static const char *const units[] = { "_us", "_ms" };
	static const double scale[] = { 1.0, 1000.0 };
	static const char *const pairs[] = { "median_ci", "ci95", "ci" };
	static const char *const lohi[][2] = { { "ci_lo", "ci_hi" },
					       { "ci_low", "ci_high" } };
	static const char *const ses[] = { "se_median", "median_se", "stderr",
					   "se", "sem" };
	const json_t *o = json_object_get(result, which);
	char k1[32], k2[32];
	double sc = 0, cv, se;
	const char *u = NULL;
	int f, f2;

	memset(s, 0, sizeof(s[0]));
	if (!json_is_object(o))
		return;
	for (int i = 0; i < 2 && !u; i++) {
		snprintf(k1, sizeof(k1), "median%s", units[i]);
		s->median = num(o, k1, &f);
		if (f) {
			u = units[i];
			sc = scale[i];
		}
	}
	if (!u || s->median <= 0)
		return;
	s->median *= sc;
	s->ok = 1;
	s->count = json_integer_value(json_object_get(o, "count"));
	if (!s->count)
		s->count = json_integer_value(json_object_get(o, "n"));
	for (size_t i = 0; i < 3; i++) {
		const json_t *a;

		snprintf(k1, sizeof(k1), "%s%s", pairs[i], u);
		a = json_object_get(o, k1);
		if (json_is_array(a) && json_array_size(a) == 2 &&
		    json_is_number(json_array_get(a, 0)) &&
		    json_is_number(json_array_get(a, 1))) {
			s->lo = sc * json_number_value(json_array_get(a, 0));
			s->hi = sc * json_number_value(json_array_get(a, 1));
			s->has_ci = 1;
			snprintf(s->ci_from, sizeof(s->ci_from), "%s", k1);
			return;
		}
	}
	for (size_t i = 0; i < 2; i++) {
		snprintf(k1, sizeof(k1), "%s%s", lohi[i][0], u);
		snprintf(k2, sizeof(k2), "%s%s", lohi[i][1], u);
		s->lo = sc * num(o, k1, &f);
		s->hi = sc * num(o, k2, &f2);
		if (f && f2) {
			s->has_ci = 1;
			snprintf(s->ci_from, sizeof(s->ci_from), "%s/%s", k1, k2);
			return;
		}
	}
	for (size_t i = 0; i < 5; i++) {
		snprintf(k1, sizeof(k1), "%s%s", ses[i], u);
		se = sc * num(o, k1, &f);
		if (f && se >= 0) {
			s->lo = s->median - Z95 * se;
			s->hi = s->median + Z95 * se;
			s->has_ci = 1;
			snprintf(s->ci_from, sizeof(s->ci_from), "%s", k1);
			return;
		}
	}
	cv = num(o, "cv", &f);
	if (f && cv >= 0 && s->count > 1) {
		se = 1.2533 * cv * s->median / sqrt((double)s->count);
		s->lo = s->median - Z95 * se;
		s->hi = s->median + Z95 * se;
		s->has_ci = 1;
		snprintf(s->ci_from, sizeof(s->ci_from),
			 "cv and count (approximate)");
	}
}

static json_t *stat_json(const struct bench_stat *s)
{
	if (!s->ok)
		return json_null();
	if (!s->has_ci)
		return json_pack("{s:f, s:I}", "median_us", s->median, "count",
				 s->count);
	return json_pack("{s:f, s:[f,f], s:s, s:I}", "median_us", s->median,
			 "ci95_us", s->lo, s->hi, "ci_from", s->ci_from,
			 "count", s->count);
}

/* Compares the candidate timings under two result objects (a whole result,
 * or one entry of its sizes[]). Returns a new comparison object and writes
 * a one-line summary, or NULL when either has no median. */
static json_t *bench_pair(const json_t *ra, const json_t *rb, char *summary,
			  size_t cap)
{
	struct bench_stat sa, sb;
	json_t *cmp;
	double speedup;

	bench_stat_read(ra, "candidate", &sa);
	bench_stat_read(rb, "candidate", &sb);
	if (!sa.ok || !sb.ok)
		return NULL;
	/* speedup of b over a: > 1 means b is faster */
	speedup = sa.median / sb.median;
	cmp = json_pack("{s:o, s:o, s:f}", "a", stat_json(&sa), "b",
			stat_json(&sb), "speedup", speedup);
	if (sa.has_ci && sb.has_ci && sa.lo > 0 && sb.lo > 0) {
		/* The ratio's interval from the two medians' intervals
		 * (log scale, independent errors). */
		double ra_ = log(sa.hi / sa.lo) / (2 * Z95),
		       rb_ = log(sb.hi / sb.lo) / (2 * Z95);
		double r = sqrt(ra_ * ra_ + rb_ * rb_);
		int overlap = sa.lo <= sb.hi && sb.lo <= sa.hi;
		const char *verdict = overlap ? "no measurable difference"
				      : speedup > 1 ? "b is faster"
						    : "b is slower";

		json_object_set_new(cmp, "speedup_ci95",
				    json_pack("[f,f]", speedup * exp(-Z95 * r),
					      speedup * exp(Z95 * r)));
		json_object_set_new(cmp, "verdict", json_string(verdict));
		if (overlap)
			snprintf(summary, cap,
				 "no measurable difference: %.4g us vs %.4g us (95%% intervals overlap)",
				 sa.median, sb.median);
		else
			snprintf(summary, cap,
				 "b is %.3gx %s than a: %.4g us vs %.4g us (95%% CI of the speedup %.3g-%.3gx)",
				 speedup >= 1 ? speedup : 1 / speedup,
				 speedup >= 1 ? "faster" : "slower", sb.median,
				 sa.median, speedup * exp(-Z95 * r),
				 speedup * exp(Z95 * r));
	} else {
		json_object_set_new(cmp, "verdict",
				    json_string("uncertainty unknown"));
		snprintf(summary, cap,
			 "speedup %.3gx (a %.4g us, b %.4g us); no uncertainty stored, so no verdict",
			 speedup, sa.median, sb.median);
	}
	return cmp;
}

/* The benchmark comparison: the first size at the top (what the result
 * reports at its top level), and every size both runs measured, matched by
 * their size values, under per_size. */
static int compare_bench(const struct history_run *a,
			 const struct history_run *b, json_t *out,
			 char *summary, size_t cap, struct kf_err *err)
{
	const json_t *sa = json_object_get(a->result, "sizes");
	const json_t *sb = json_object_get(b->result, "sizes");
	json_t *cmp, *per = json_array(), *ea, *eb;
	char line[320];
	size_t i, j;

	cmp = bench_pair(a->result, b->result, summary, cap);
	if (!cmp) {
		struct bench_stat t;

		bench_stat_read(a->result, "candidate", &t);
		json_decref(per);
		return kf_err_set(err, KF_EINVAL,
				  "run %s has no candidate median (candidate.median_us): it did not produce a timing (status %s)",
				  !t.ok ? a->id : b->id,
				  history_status_name(!t.ok ? a->status : b->status));
	}
	json_array_foreach(sa, i, ea) {
		const json_t *va = json_object_get(ea, "sizes");

		json_array_foreach(sb, j, eb) {
			json_t *pc;

			if (!va || !json_equal(va, json_object_get(eb, "sizes")))
				continue;
			pc = bench_pair(ea, eb, line, sizeof(line));
			if (pc) {
				json_object_set(pc, "sizes", (json_t *)va);
				json_object_set_new(pc, "summary", json_string(line));
				json_array_append_new(per, pc);
			}
			break;
		}
	}
	if (json_array_size(per) > 1)
		json_object_set_new(cmp, "per_size", per);
	else
		json_decref(per);
	json_object_set_new(out, "benchmark", cmp);
	return 0;
}

static const json_t *find_kernel(const json_t *ks, const char *name)
{
	size_t i;
	json_t *k;

	json_array_foreach(ks, i, k) {
		const char *n = json_string_value(json_object_get(k, "name"));

		if (n && strcmp(n, name) == 0)
			return k;
	}
	return NULL;
}

/* Per kernel, every numeric resource field that differs (registers,
 * shared and local bytes, spills: whatever the compile result reports). */
static void compare_compile(const struct history_run *a,
			    const struct history_run *b, json_t *out,
			    char *summary, size_t cap)
{
	const json_t *ka = json_object_get(a->result, "kernels");
	const json_t *kb = json_object_get(b->result, "kernels");
	json_t *rows = json_array(), *k;
	size_t i, changed = 0, used = 0;

	summary[0] = '\0';
	json_array_foreach(ka, i, k) {
		const char *name = json_string_value(json_object_get(k, "name"));
		const json_t *other = name ? find_kernel(kb, name) : NULL;
		json_t *diffs = json_object();
		const char *key;
		json_t *v;

		if (!name)
			continue;
		if (!other) {
			json_array_append_new(rows, json_pack("{s:s, s:s}", "kernel",
							      name, "only_in", "a"));
			changed++;
			json_decref(diffs);
			continue;
		}
		json_object_foreach((json_t *)k, key, v) {
			const json_t *w = json_object_get(other, key);
			double x, y;

			if (!json_is_number(v) || !json_is_number(w))
				continue;
			x = json_number_value(v);
			y = json_number_value(w);
			if (x == y)
				continue;
			json_object_set_new(diffs, key,
					    json_pack("{s:o, s:o, s:f}", "a",
						      json_deep_copy(v), "b",
						      json_deep_copy(w), "delta",
						      y - x));
			if (used + 64 < cap)
				used += (size_t)snprintf(summary + used, cap - used,
							 "%s%s %s %g -> %g",
							 used ? "; " : "", name,
							 key, x, y);
		}
		if (json_object_size(diffs))
			changed++;
		json_array_append_new(rows, json_pack("{s:s, s:o}", "kernel", name,
						      "changes", diffs));
	}
	json_array_foreach(kb, i, k) {
		const char *name = json_string_value(json_object_get(k, "name"));

		if (name && !find_kernel(ka, name)) {
			json_array_append_new(rows, json_pack("{s:s, s:s}", "kernel",
							      name, "only_in", "b"));
			changed++;
		}
	}
	json_object_set_new(out, "kernels", rows);
	if (!json_array_size(rows))
		snprintf(summary, cap,
			 "no kernel resources to compare (a compile that failed reports none)");
	else if (!changed)
		snprintf(summary, cap,
			 "same resources: registers, shared memory and spills unchanged");
	else if (!used)
		snprintf(summary, cap, "%zu kernel%s differ (see kernels)", changed,
			 changed == 1 ? "" : "s");
}

static void add_unique(json_t *arr, const char *name)
{
	size_t i;
	json_t *v;

	if (!name)
		return;
	json_array_foreach(arr, i, v)
		if (!strcmp(json_string_value(v), name))
			return;
	json_array_append_new(arr, json_string(name));
}

/* One case of a check (a trial at one size): failing or not, the
 * safeguards it fired, its worst relative L2 error. Accepts the harness's
 * layout (sizes[].trials[] with safeguards [{name}] and outputs.{t}.
 * rel_l2_err) and a flat cases[] with safeguard / rel_l2. */
static void check_case(const json_t *c, size_t *failing, json_t *safeguards,
		       double *worst_l2)
{
	const json_t *sgs = json_object_get(c, "safeguards"), *outs, *v;
	const char *key;
	size_t i;

	if (json_is_false(json_object_get(c, "passed")))
		(*failing)++;
	add_unique(safeguards, json_string_value(json_object_get(c, "safeguard")));
	json_array_foreach(sgs, i, v)
		add_unique(safeguards, json_is_string(v)
					       ? json_string_value(v)
					       : json_string_value(json_object_get(v, "name")));
	v = json_object_get(c, "rel_l2");
	if (json_is_number(v) && json_number_value(v) > *worst_l2)
		*worst_l2 = json_number_value(v);
	outs = json_object_get(c, "outputs");
	json_object_foreach((json_t *)outs, key, v) {
		const json_t *l2 = json_object_get(v, "rel_l2_err");

		if (json_is_number(l2) && json_number_value(l2) > *worst_l2)
			*worst_l2 = json_number_value(l2);
	}
}

static json_t *check_side(const struct history_run *r, int *passed)
{
	const json_t *res = r->result, *c, *size;
	json_t *o, *safeguards = json_array();
	size_t i, j, failing = 0, cases = 0;
	double worst_l2 = -1;

	json_array_foreach(json_object_get(res, "cases"), i, c) {
		check_case(c, &failing, safeguards, &worst_l2);
		cases++;
	}
	json_array_foreach(json_object_get(res, "sizes"), i, size)
		json_array_foreach(json_object_get(size, "trials"), j, c) {
			check_case(c, &failing, safeguards, &worst_l2);
			cases++;
		}
	json_array_foreach(json_object_get(res, "safeguards_fired"), i, c)
		add_unique(safeguards, json_string_value(c));
	*passed = r->status == HISTORY_OK &&
		  !json_is_false(json_object_get(res, "passed"));
	o = json_pack("{s:b, s:s, s:I, s:I, s:o, s:s}", "passed", *passed,
		      "status", history_status_name(r->status), "cases",
		      (json_int_t)cases, "failing_cases", (json_int_t)failing,
		      "safeguards", safeguards, "summary",
		      r->summary ? r->summary : "");
	if (worst_l2 >= 0)
		json_object_set_new(o, "worst_rel_l2", json_real(worst_l2));
	if (json_is_object(json_object_get(res, "error")))
		json_object_set(o, "error", json_object_get(res, "error"));
	return o;
}

/* Calibrations: every number both results report (copy_gbs, bf16_tflops,
 * fp32_tflops...) with the ratio b / a. */
static void compare_calibrate(const struct history_run *a,
			      const struct history_run *b, json_t *out,
			      char *summary, size_t cap)
{
	json_t *diffs = json_object(), *v;
	const char *key;
	size_t used = 0;

	summary[0] = '\0';
	json_object_foreach(a->result, key, v) {
		const json_t *w = json_object_get(b->result, key);
		double x, y;

		if (!json_is_number(v) || !json_is_number(w))
			continue;
		x = json_number_value(v);
		y = json_number_value(w);
		json_object_set_new(diffs, key,
				    json_pack("{s:f, s:f, s:o}", "a", x, "b", y,
					      "ratio", x != 0 ? json_real(y / x)
							      : json_null()));
		if (used + 64 < cap)
			used += (size_t)snprintf(summary + used, cap - used,
						 "%s%s %.4g -> %.4g", used ? "; " : "",
						 key, x, y);
	}
	if (!used)
		snprintf(summary, cap, "no measured figures in common");
	json_object_set_new(out, "figures", diffs);
}

static const char *check_state(const struct history_run *r, int passed)
{
	if (passed)
		return "passed";
	return r->status == HISTORY_ERROR ? "did not run" : "failed";
}

static void compare_check(const struct history_run *a,
			  const struct history_run *b, json_t *out,
			  char *summary, size_t cap)
{
	int pa, pb;
	json_t *ca = check_side(a, &pa), *cb = check_side(b, &pb);

	if (pa && pb)
		snprintf(summary, cap, "both passed");
	else if (pb)
		snprintf(summary, cap, "a %s, b passed; a: %s", check_state(a, pa),
			 a->summary ? a->summary : "");
	else
		snprintf(summary, cap, "a %s, b %s; b: %s", check_state(a, pa),
			 check_state(b, pb), b->summary ? b->summary : "");
	json_object_set_new(out, "check", json_pack("{s:o, s:o}", "a", ca, "b", cb));
}

static json_t *side_json(const struct history_run *r)
{
	json_t *o = row_json(r);

	json_object_set_new(o, "source_hash", r->source_hash
						      ? json_string(r->source_hash)
						      : json_null());
	return o;
}

static int compare_runs(struct tool_ctx *ctx, const json_t *args, json_t **out,
			struct kf_err *err)
{
	struct history *h = hist(ctx, err);
	struct history_run a, b;
	char detail[400], summary[600], note[320];
	json_t *res;
	int rc;

	if (!h)
		return KF_EINTERNAL;
	memset(&b, 0, sizeof(b));
	rc = history_get(h, json_string_value(json_object_get(args, "a")), &a, err);
	if (rc)
		return rc;
	rc = history_get(h, json_string_value(json_object_get(args, "b")), &b, err);
	if (rc)
		goto out;
	if (a.kind != b.kind) {
		rc = kf_err_set(err, KF_EINVAL,
				"b: run %s is a %s and run %s a %s: compare two runs of one kind",
				a.id, history_kind_name(a.kind), b.id,
				history_kind_name(b.kind));
		goto out;
	}
	res = json_pack("{s:s, s:s, s:o, s:o}", "summary", "", "kind",
			history_kind_name(a.kind), "a", side_json(&a), "b",
			side_json(&b));
	detail[0] = '\0';
	switch (a.kind) {
	case HISTORY_BENCH:
		rc = compare_bench(&a, &b, res, detail, sizeof(detail), err);
		break;
	case HISTORY_COMPILE:
		compare_compile(&a, &b, res, detail, sizeof(detail));
		break;
	case HISTORY_CHECK:
		compare_check(&a, &b, res, detail, sizeof(detail));
		break;
	case HISTORY_CALIBRATE:
		compare_calibrate(&a, &b, res, detail, sizeof(detail));
		break;
	}
	if (rc) {
		json_decref(res);
		goto out;
	}
	if (a.device_uuid && b.device_uuid &&
	    strcmp(a.device_uuid, b.device_uuid) != 0) {
		snprintf(note, sizeof(note),
			 "different GPUs (%s %s vs %s %s): timings are not comparable",
			 a.device_name ? a.device_name : "?", a.device_uuid,
			 b.device_name ? b.device_name : "?", b.device_uuid);
		json_object_set_new(res, "note", json_string(note));
	}
	if (a.source_hash && b.source_hash)
		json_object_set_new(res, "same_source",
				    json_boolean(strcmp(a.source_hash, b.source_hash) == 0));
	snprintf(summary, sizeof(summary), "%s %s vs %s: %s",
		 history_kind_name(a.kind), a.id, b.id, detail);
	json_object_set_new(res, "summary", json_string(summary));
	*out = res;
out:
	history_run_fini(&a);
	history_run_fini(&b);
	return rc;
}

/* ---- resources --------------------------------------------------------- */

static int runs_list_resources(struct app *app, json_t *arr, struct kf_err *err)
{
	struct history_filter f;
	struct history_page page;
	int rc;

	if (!app->history)
		return 0;
	history_filter_init(&f);
	f.limit = RESOURCE_LIST_MAX;
	rc = history_list(app->history, &f, &page, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < page.len; i++) {
		const struct history_run *r = &page.runs[i];
		char uri[64], title[256];

		snprintf(uri, sizeof(uri), "kforge://runs/%s", r->id);
		snprintf(title, sizeof(title), "%s %s: %.200s",
			 history_kind_name(r->kind), history_status_name(r->status),
			 r->summary ? r->summary : "");
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:s}", "uri",
						     uri, "name", r->id, "title",
						     title, "mimeType",
						     "application/json"));
	}
	history_page_fini(&page);
	return 0;
}

static int runs_read(struct app *app, const char *uri, json_t **contents,
		     struct kf_err *err)
{
	static const char prefix[] = "kforge://runs/";
	char id[HISTORY_ID_BYTES + 1];
	const char *rest, *slash, *part = NULL;
	struct history_run r;
	json_t *body = NULL;
	char *text = NULL;
	const char *mime = "application/json";
	int rc;

	if (strncmp(uri, prefix, sizeof(prefix) - 1) != 0)
		return kf_err_set(err, KF_ENOTFOUND, "not a run resource: %s", uri);
	rest = uri + sizeof(prefix) - 1;
	slash = strchr(rest, '/');
	if ((slash ? (size_t)(slash - rest) : strlen(rest)) >= sizeof(id))
		return kf_err_set(err, KF_ENOTFOUND, "no run at %s", uri);
	snprintf(id, sizeof(id), "%.*s",
		 (int)(slash ? (size_t)(slash - rest) : strlen(rest)), rest);
	if (slash)
		part = slash + 1;
	if (part && strcmp(part, "source") && strcmp(part, "spec") &&
	    strcmp(part, "result"))
		return kf_err_set(err, KF_ENOTFOUND,
				  "%s: a run has the parts source, spec and result", uri);
	rc = history_get(app->history, id, &r, err);
	if (rc)
		return rc == KF_EINVAL ? KF_ENOTFOUND : rc;
	if (!part) {
		body = run_json(&r, 1);
	} else if (!strcmp(part, "spec")) {
		body = r.spec ? json_incref(r.spec) : json_null();
	} else if (!strcmp(part, "result")) {
		body = r.result ? json_incref(r.result) : json_null();
	} else {
		const json_t *src = json_object_get(r.spec, "source");

		if (!json_is_string(src)) {
			history_run_fini(&r);
			return kf_err_set(err, KF_ENOTFOUND,
					  "run %s stored no source", id);
		}
		text = strdup(json_string_value(src));
		mime = "text/x-cuda";
	}
	if (!text)
		text = json_dumps(body, JSON_INDENT(1) | JSON_ENCODE_ANY);
	json_decref(body);
	history_run_fini(&r);
	if (!text)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	*contents = json_pack("[{s:s, s:s, s:s}]", "uri", uri, "mimeType", mime,
			      "text", text);
	free(text);
	return *contents ? 0 : kf_err_set(err, KF_ENOMEM, "out of memory");
}

static int runs_complete(struct app *app, const char *var, const char *prefix,
			 json_t *arr, struct kf_err *err)
{
	struct history_filter f;
	struct history_page page;
	int rc;

	if (strcmp(var, "id") != 0) {
		if (!strcmp(var, "part"))
			for (int i = 0; i < 3; i++) {
				static const char *const parts[] = { "source", "spec",
								     "result" };
				if (!strncmp(parts[i], prefix, strlen(prefix)))
					json_array_append_new(arr, json_string(parts[i]));
			}
		return 0;
	}
	history_filter_init(&f);
	f.limit = 100;
	rc = history_list(app->history, &f, &page, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < page.len; i++)
		if (!strncmp(page.runs[i].id, prefix, strlen(prefix)))
			json_array_append_new(arr, json_string(page.runs[i].id));
	history_page_fini(&page);
	return 0;
}

/* ---- the table --------------------------------------------------------- */

#define KIND_ENUM "[\"compile\", \"check\", \"bench\", \"calibrate\"]"
#define STATUS_ENUM "[\"ok\", \"failed\", \"error\"]"
#define RUN_ID_SCHEMA(what)                                                   \
	"{\"type\": \"string\", \"minLength\": 16, \"maxLength\": 16, "       \
	"\"description\": \"" what "\"}"

static const struct tool_def RUNS_TOOLS[] = {
	{
		.name = "list_runs",
		.title = "List runs",
		.description =
			"Lists past compiles, checks, benchmarks and calibrations from the run history, newest first. Filter by kind, kernel name (substring), status (ok = compiled/passed/measured, failed = the kernel's fault, error = could not run) and since (2026-11-30, 2026-11-30T09:00:00Z, or an age like 30m, 6h, 7d). Pages with limit and cursor (pass next_cursor back).",
		.input_schema =
			"{\"type\": \"object\", \"additionalProperties\": false, \"properties\": {"
			"\"kind\": {\"type\": \"string\", \"enum\": " KIND_ENUM "},"
			"\"kernel\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 256, \"description\": \"substring of a kernel name\"},"
			"\"status\": {\"type\": \"string\", \"enum\": " STATUS_ENUM "},"
			"\"since\": {\"type\": \"string\", \"minLength\": 2, \"maxLength\": 40},"
			"\"limit\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 500, \"default\": 20},"
			"\"cursor\": {\"type\": \"string\", \"minLength\": 16, \"maxLength\": 16}}}",
		.output_schema =
			"{\"type\": \"object\", \"required\": [\"summary\", \"runs\"], \"properties\": {"
			"\"summary\": {\"type\": \"string\"}, \"runs\": {\"type\": \"array\"},"
			"\"next_cursor\": {\"type\": \"string\"}}}",
		.annotations = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.handler = list_runs,
	},
	{
		.name = "get_run",
		.title = "Get a run",
		.description =
			"One run from the history, whole: kind, status, time, kernels, source hash, device, spec and the tool's result. Large parts (the source, a big result) come as kforge://runs/{id}/... resource links.",
		.input_schema =
			"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"id\"], \"properties\": {"
			"\"id\": " RUN_ID_SCHEMA("run id from list_runs or a result's run_id") "}}",
		.output_schema =
			"{\"type\": \"object\", \"required\": [\"summary\", \"run\"], \"properties\": {"
			"\"summary\": {\"type\": \"string\"}, \"run\": {\"type\": \"object\"}}}",
		.annotations = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.handler = get_run,
	},
	{
		.name = "compare_runs",
		.title = "Compare two runs",
		.description =
			"Two runs of one kind side by side. Benchmarks: the speedup of b over a (a's median / b's median) with its 95% interval from each run's median uncertainty, and \"no measurable difference\" when the intervals overlap. Compiles: per kernel, the registers, shared memory, local memory and spills that changed. Checks: pass/fail, failing cases, safeguards that fired and errors. Calibrations: each measured ceiling and its ratio.",
		.input_schema =
			"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"a\", \"b\"], \"properties\": {"
			"\"a\": " RUN_ID_SCHEMA("the earlier / reference run") ","
			"\"b\": " RUN_ID_SCHEMA("the run compared against a") "}}",
		.output_schema =
			"{\"type\": \"object\", \"required\": [\"summary\", \"kind\", \"a\", \"b\"], \"properties\": {"
			"\"summary\": {\"type\": \"string\"}, \"kind\": {\"type\": \"string\"},"
			"\"a\": {\"type\": \"object\"}, \"b\": {\"type\": \"object\"}}}",
		.annotations = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.handler = compare_runs,
	},
};

static const struct resource_def RUNS_RESOURCES[] = {
	{
		/* first: the generic template below would also match */
		.uri_template = "kforge://runs/{id}/{part}",
		.name = "run-part",
		.title = "Part of a run",
		.description = "One part of a run: source (the kernel source), spec or result (JSON).",
		.mime_type = "application/json",
		.read = runs_read,
		.complete = runs_complete,
	},
	{
		.uri_template = "kforge://runs/{id}",
		.name = "run",
		.title = "Run",
		.description = "A compile, check, benchmark or calibration from the run history, whole, as JSON.",
		.mime_type = "application/json",
		.list = runs_list_resources,
		.read = runs_read,
		.complete = runs_complete,
	},
};

const struct tool_group TOOLS_RUNS = {
	.tools = RUNS_TOOLS,
	.tools_len = sizeof(RUNS_TOOLS) / sizeof(RUNS_TOOLS[0]),
	.resources = RUNS_RESOURCES,
	.resources_len = sizeof(RUNS_RESOURCES) / sizeof(RUNS_RESOURCES[0]),
};
