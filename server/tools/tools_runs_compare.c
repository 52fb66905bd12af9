/* tools_runs_compare: the kind-specific halves of compare_runs (see
 * tools_runs.h). Benchmarks: the speedup of b over a from each run's
 * median and the stored uncertainty of that median; compiles: per-kernel
 * resource changes; checks: outcomes and safeguards; calibrations: each
 * figure. Reads stored results only: nothing here measures anything. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "server/tools/tools_runs_int.h"

#define Z95 1.959963984540054 /* two-sided 95% normal quantile */

/* One side of a benchmark: the median and a 95% interval for it. */
struct bench_stat {
	int ok;	       /* median found */
	double median; /* us */
	double lo, hi; /* 95% interval of the median, us; valid if has_ci */
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
 * carries the median's unit suffix (sandbox/check/stats.h's stats_summary
 * fields: se_median, ci_lo, ci_hi). */
static void bench_stat_read(const json_t *result, const char *which, struct bench_stat *s)
{
	static const char *const units[] = {"_us", "_ms"};
	static const double scale[] = {1.0, 1000.0};
	static const char *const pairs[] = {"median_ci", "ci95", "ci"};
	static const char *const lohi[][2] = {{"ci_lo", "ci_hi"}, {"ci_low", "ci_high"}};
	static const char *const ses[] = {"se_median", "median_se", "stderr", "se", "sem"};
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
		    json_is_number(json_array_get(a, 0)) && json_is_number(json_array_get(a, 1))) {
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
		snprintf(s->ci_from, sizeof(s->ci_from), "cv and count (approximate)");
	}
}

static json_t *stat_json(const struct bench_stat *s)
{
	if (!s->ok)
		return json_null();
	if (!s->has_ci)
		return json_pack("{s:f, s:I}", "median_us", s->median, "count", s->count);
	return json_pack("{s:f, s:[f,f], s:s, s:I}", "median_us", s->median, "ci95_us", s->lo,
			 s->hi, "ci_from", s->ci_from, "count", s->count);
}

/* Compares the candidate timings under two result objects (a whole result,
 * or one entry of its sizes[]). Returns a new comparison object and writes
 * a one-line summary, or NULL when either has no median. */
static json_t *bench_pair(const json_t *ra, const json_t *rb, char *summary, size_t cap)
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
	cmp = json_pack("{s:o, s:o, s:f}", "a", stat_json(&sa), "b", stat_json(&sb), "speedup",
			speedup);
	if (sa.has_ci && sb.has_ci && sa.lo > 0 && sb.lo > 0) {
		/* The ratio's interval from the two medians' intervals
		 * (log scale, independent errors). */
		double ra_ = log(sa.hi / sa.lo) / (2 * Z95), rb_ = log(sb.hi / sb.lo) / (2 * Z95);
		double r = sqrt(ra_ * ra_ + rb_ * rb_);
		int overlap = sa.lo <= sb.hi && sb.lo <= sa.hi;
		const char *verdict = overlap	    ? "no measurable difference"
				      : speedup > 1 ? "b is faster"
						    : "b is slower";

		json_object_set_new(
			cmp, "speedup_ci95",
			json_pack("[f,f]", speedup * exp(-Z95 * r), speedup * exp(Z95 * r)));
		json_object_set_new(cmp, "verdict", json_string(verdict));
		if (overlap)
			snprintf(
				summary, cap,
				"no measurable difference: %.4g us vs %.4g us (95%% intervals overlap)",
				sa.median, sb.median);
		else
			snprintf(
				summary, cap,
				"b is %.3gx %s than a: %.4g us vs %.4g us (95%% CI of the speedup %.3g-%.3gx)",
				speedup >= 1 ? speedup : 1 / speedup,
				speedup >= 1 ? "faster" : "slower", sb.median, sa.median,
				speedup * exp(-Z95 * r), speedup * exp(Z95 * r));
	} else {
		json_object_set_new(cmp, "verdict", json_string("uncertainty unknown"));
		snprintf(
			summary, cap,
			"speedup %.3gx (a %.4g us, b %.4g us); no uncertainty stored, so no verdict",
			speedup, sa.median, sb.median);
	}
	return cmp;
}

/* The benchmark comparison: the first size at the top (what the result
 * reports at its top level), and every size both runs measured, matched by
 * their size values, under per_size. */
static int compare_bench(const struct history_run *a, const struct history_run *b, json_t *out,
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
		return kf_err_set(
			err, KF_EINVAL,
			"run %s has no candidate median (candidate.median_us): it did not produce a timing (status %s)",
			!t.ok ? a->id : b->id, history_status_name(!t.ok ? a->status : b->status));
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
static void compare_compile(const struct history_run *a, const struct history_run *b, json_t *out,
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
			json_array_append_new(
				rows, json_pack("{s:s, s:s}", "kernel", name, "only_in", "a"));
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
					    json_pack("{s:o, s:o, s:f}", "a", json_deep_copy(v),
						      "b", json_deep_copy(w), "delta", y - x));
			if (used + 64 < cap)
				used += (size_t)snprintf(summary + used, cap - used,
							 "%s%s %s %g -> %g", used ? "; " : "", name,
							 key, x, y);
		}
		if (json_object_size(diffs))
			changed++;
		json_array_append_new(rows,
				      json_pack("{s:s, s:o}", "kernel", name, "changes", diffs));
	}
	json_array_foreach(kb, i, k) {
		const char *name = json_string_value(json_object_get(k, "name"));

		if (name && !find_kernel(ka, name)) {
			json_array_append_new(
				rows, json_pack("{s:s, s:s}", "kernel", name, "only_in", "b"));
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
static void check_case(const json_t *c, size_t *failing, json_t *safeguards, double *worst_l2)
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
	*passed = r->status == HISTORY_OK && !json_is_false(json_object_get(res, "passed"));
	o = json_pack("{s:b, s:s, s:I, s:I, s:o, s:s}", "passed", *passed, "status",
		      history_status_name(r->status), "cases", (json_int_t)cases, "failing_cases",
		      (json_int_t)failing, "safeguards", safeguards, "summary",
		      r->summary ? r->summary : "");
	if (worst_l2 >= 0)
		json_object_set_new(o, "worst_rel_l2", json_real(worst_l2));
	if (json_is_object(json_object_get(res, "error")))
		json_object_set(o, "error", json_object_get(res, "error"));
	return o;
}

/* Calibrations: every number both results report (copy_gbs, bf16_tflops,
 * fp32_tflops...) with the ratio b / a. */
static void compare_calibrate(const struct history_run *a, const struct history_run *b, json_t *out,
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
				    json_pack("{s:f, s:f, s:o}", "a", x, "b", y, "ratio",
					      x != 0 ? json_real(y / x) : json_null()));
		if (used + 64 < cap)
			used += (size_t)snprintf(summary + used, cap - used, "%s%s %.4g -> %.4g",
						 used ? "; " : "", key, x, y);
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

static void compare_check(const struct history_run *a, const struct history_run *b, json_t *out,
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
		snprintf(summary, cap, "a %s, b %s; b: %s", check_state(a, pa), check_state(b, pb),
			 b->summary ? b->summary : "");
	json_object_set_new(out, "check", json_pack("{s:o, s:o}", "a", ca, "b", cb));
}

int tools_runs_compare_detail(const struct history_run *a, const struct history_run *b, json_t *out,
			      char *detail, size_t cap, struct kf_err *err)
{
	detail[0] = '\0';
	switch (a->kind) {
	case HISTORY_BENCH: return compare_bench(a, b, out, detail, cap, err);
	case HISTORY_COMPILE: compare_compile(a, b, out, detail, cap); return 0;
	case HISTORY_CHECK: compare_check(a, b, out, detail, cap); return 0;
	case HISTORY_CALIBRATE: compare_calibrate(a, b, out, detail, cap); return 0;
	case HISTORY_PROFILE:
		/* Profiles explain rather than time: their verdicts side by side. */
		snprintf(detail, cap, "a: %.300s; b: %.300s", a->summary ? a->summary : "",
			 b->summary ? b->summary : "");
		return 0;
	}
	return kf_err_set(err, KF_EINTERNAL, "run %s has an unknown kind", a->id);
}
