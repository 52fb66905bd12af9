/* dataset: which runs make a record and what the record holds; see
 * dataset.h. Trust comes only from the harness's own verdicts stored in the
 * history: a benchmark that passed (outputs verified after timing, no time
 * under the roofline floor) and a check of the same source and spec that
 * passed with no safeguard fired. A cheat fails one of them, so it never
 * becomes a record; nothing here re-judges a kernel. */
#include "sandbox/dataset/dataset.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/version.h"
#include "kernels/op.h"
#include "sandbox/compile/cache.h"
#include "sandbox/dataset/dataset_int.h"

/* The safeguards every exported kernel passed: the check's (docs/check-and-
 * bench.md) and the benchmark's two. */
static const char *const SAFEGUARDS[] = {"coverage",
					 "state_across_launches",
					 "nondeterministic",
					 "out_of_bounds",
					 "input_modified",
					 "mismatch",
					 "nonfinite",
					 "fault",
					 "timeout",
					 "odd_size",
					 "verified_after_timing",
					 "above_roofline_floor"};

void dataset_filter_init(struct dataset_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->license = DATASET_LICENSE;
}

/* Appends the source without comments, whitespace runs as one space. */
void dataset_source_hash(const char *src, char hex[65])
{
	struct cache_sha256 s;
	int space = 0, any = 0;

	cache_sha256_init(&s);
	for (const char *p = src ? src : ""; *p;) {
		if (p[0] == '/' && p[1] == '/') {
			while (*p && *p != '\n')
				p++;
			space = 1;
			continue;
		}
		if (p[0] == '/' && p[1] == '*') {
			const char *e = strstr(p + 2, "*/");
			p = e ? e + 2 : p + strlen(p);
			space = 1;
			continue;
		}
		if (isspace((unsigned char)*p)) {
			space = 1;
			p++;
			continue;
		}
		if (space && any)
			cache_sha256_update(&s, " ", 1);
		space = 0;
		any = 1;
		cache_sha256_update(&s, p, 1);
		p++;
	}
	cache_sha256_final_hex(&s, hex);
}

static int is_true(const json_t *o, const char *key)
{
	return json_is_true(json_object_get(o, key));
}

static int empty_or_absent(const json_t *arr)
{
	return !arr || (json_is_array(arr) && json_array_size(arr) == 0);
}

/* Whether benchmark run b is one whose every size was verified after
 * timing, with no safeguard and no time under the roofline floor. */
static int bench_verified(const struct history_run *b)
{
	const json_t *r = b->result, *sizes = json_object_get(r, "sizes"), *row;
	size_t i;

	if (b->status != HISTORY_OK || !is_true(r, "passed") ||
	    !empty_or_absent(json_object_get(r, "safeguards_fired")) ||
	    json_object_get(json_object_get(r, "flags"), "below_floor") ||
	    !json_is_string(json_object_get(b->spec, "source")) || json_array_size(sizes) == 0)
		return 0;
	json_array_foreach(sizes, i, row) {
		if (!is_true(row, "verified") || is_true(row, "below_floor") ||
		    !empty_or_absent(json_object_get(row, "safeguards")))
			return 0;
	}
	return 1;
}

/* The spec with the members that may differ between a check and a
 * benchmark of the same kernel removed (sizes). Returns new. */
static json_t *spec_core(const json_t *spec)
{
	json_t *c = json_deep_copy(spec);

	json_object_del(c, "sizes");
	return c;
}

/* Whether check run c passed every safeguard on the spec of bench: every
 * size passed, one of them the odd size kforge chose, and no flag says the
 * reference was too weak to tell (a kernel writing zeros would pass). */
static int check_matches(const struct history_run *c, const json_t *bench_core)
{
	const json_t *r = c->result, *sizes = json_object_get(r, "sizes"), *row;
	json_t *core;
	size_t i;
	int same, odd = 0;

	if (c->status != HISTORY_OK || !is_true(r, "passed") ||
	    !empty_or_absent(json_object_get(r, "safeguards_fired")) ||
	    json_object_get(json_object_get(r, "flags"), "weak_reference") ||
	    json_array_size(sizes) == 0)
		return 0;
	json_array_foreach(sizes, i, row) {
		if (!is_true(row, "passed"))
			return 0;
		odd |= is_true(row, "odd_size");
	}
	if (!odd)
		return 0;
	core = spec_core(c->spec);
	same = json_equal(core, bench_core);
	json_decref(core);
	return same;
}

/* Finds, among the runs of kind with status ok and the source hash of
 * bench, the newest that accept() takes, into *out. Returns 1 found, 0 not,
 * or a negative KF_E* code. */
static int find_run(struct history *h, enum history_kind kind, const char *hash, const json_t *core,
		    struct history_run *out, struct kf_err *err)
{
	struct history_filter f;
	struct history_page page;
	int rc, found = 0;

	history_filter_init(&f);
	f.kind = (int)kind;
	f.status = HISTORY_OK;
	f.source_hash = hash;
	f.limit = 50;
	rc = history_list(h, &f, &page, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < page.len && !found; i++) {
		rc = history_get(h, page.runs[i].id, out, err);
		if (rc)
			break;
		if (kind == HISTORY_CHECK ? check_matches(out, core)
					  : json_is_array(json_object_get(out->result, "kernels")))
			found = 1;
		else
			history_run_fini(out);
	}
	history_page_fini(&page);
	return rc ? rc : found;
}

static void iso_time(int64_t ms, char *buf, size_t cap)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The check part of a record. Returns new. */
static json_t *check_part(const struct history_run *c)
{
	const json_t *r = c->result, *row, *tr, *out;
	json_t *sizes = json_array(), *odd = json_null();
	double max_abs = 0, max_rel = 0;
	size_t i, j, trials = 0;
	const char *name;

	json_array_foreach(json_object_get(r, "sizes"), i, row) {
		json_array_append(sizes, json_object_get(row, "sizes"));
		if (is_true(row, "odd_size")) {
			json_decref(odd);
			odd = json_incref(json_object_get(row, "sizes"));
		}
		if (json_array_size(json_object_get(row, "trials")) > trials)
			trials = json_array_size(json_object_get(row, "trials"));
		json_array_foreach(json_object_get(row, "trials"), j, tr) {
			json_object_foreach((json_t *)json_object_get(tr, "outputs"), name, out) {
				double a = json_number_value(json_object_get(out, "max_abs_err"));
				double e = json_number_value(json_object_get(out, "max_rel_err"));
				max_abs = a > max_abs ? a : max_abs;
				max_rel = e > max_rel ? e : max_rel;
			}
		}
	}
	return json_pack("{s:s, s:b, s:o, s:I, s:o, s:O*, s:O*, s:f, s:f}", "run_id", c->id,
			 "passed", 1, "sizes", sizes, "trials_per_size", (json_int_t)trials,
			 "odd_size", odd, "tolerance", json_object_get(r, "tolerance"), "reference",
			 json_object_get(r, "reference"), "max_abs_err", max_abs, "max_rel_err",
			 max_rel);
}

/* One size of a benchmark, with the % of the roofline floor reached. */
static json_t *bench_size(const json_t *row)
{
	const json_t *cand = json_object_get(row, "candidate");
	const json_t *sp = json_object_get(row, "speedup");
	double med = json_number_value(json_object_get(cand, "median_us"));
	double floor_us = json_number_value(json_object_get(row, "roofline_floor_us"));
	json_t *o = json_pack("{s:O*, s:f, s:O*}", "sizes", json_object_get(row, "sizes"),
			      "median_us", med, "ci95_us", json_object_get(cand, "ci95_us"));

	if (json_object_get(row, "baseline"))
		json_object_set(o, "baseline_median_us",
				json_object_get(json_object_get(row, "baseline"), "median_us"));
	if (sp) {
		json_object_set(o, "speedup", json_object_get(sp, "value"));
		json_object_set_new(o, "speedup_ci95",
				    json_pack("[O*, O*]", json_object_get(sp, "ci95_lo"),
					      json_object_get(sp, "ci95_hi")));
	}
	json_object_set(o, "gbs", json_object_get(row, "gbs"));
	json_object_set(o, "tflops", json_object_get(row, "tflops"));
	json_object_set(o, "pct_of_peak_bw", json_object_get(row, "pct_of_peak_bw"));
	json_object_set(o, "roofline_floor_us", json_object_get(row, "roofline_floor_us"));
	if (floor_us > 0 && med > 0)
		json_object_set_new(o, "pct_of_roofline", json_real(100.0 * floor_us / med));
	json_object_set(o, "bound", json_object_get(row, "bound"));
	return o;
}

/* The benchmark part of a record. Returns new. */
static json_t *bench_part(const struct history_run *b)
{
	const json_t *r = b->result, *row, *sp = json_object_get(r, "speedup");
	json_t *sizes = json_array(), *o;
	size_t i;

	json_array_foreach(json_object_get(r, "sizes"), i, row)
		json_array_append_new(sizes, bench_size(row));
	o = json_pack("{s:s, s:b, s:O*, s:O*, s:o}", "run_id", b->id, "verified_after_timing", 1,
		      "method", json_object_get(r, "method"), "baseline_kind",
		      json_object_get(r, "baseline_kind"), "sizes", sizes);
	json_object_set(o, "median_us",
			json_object_get(json_object_get(r, "candidate"), "median_us"));
	json_object_set(o, "ci95_us", json_object_get(json_object_get(r, "candidate"), "ci95_us"));
	json_object_set(o, "baseline_median_us",
			json_object_get(json_object_get(r, "baseline"), "median_us"));
	json_object_set(o, "speedup", json_object_get(sp, "value"));
	json_object_set_new(o, "speedup_ci95",
			    sp ? json_pack("[O*, O*]", json_object_get(sp, "ci95_lo"),
					   json_object_get(sp, "ci95_hi"))
			       : json_null());
	json_object_set(o, "gbs", json_object_get(r, "gbs"));
	json_object_set(o, "tflops", json_object_get(r, "tflops"));
	json_object_set(o, "pct_of_peak_bw", json_object_get(r, "pct_of_peak_bw"));
	return o;
}

/* Compile resources per kernel from compile run c (or null). Returns new. */
static json_t *compile_part(const struct history_run *c)
{
	static const char *const keep[] = {
		"name",	       "registers",	    "shared_static_bytes",
		"local_bytes", "spill_store_bytes", "spill_load_bytes",
		"occupancy"};
	json_t *arr, *k;
	size_t i;

	if (!c)
		return json_null();
	arr = json_array();
	json_array_foreach(json_object_get(c->result, "kernels"), i, k) {
		json_t *o = json_object();
		for (size_t j = 0; j < sizeof(keep) / sizeof(keep[0]); j++)
			if (json_object_get(k, keep[j]))
				json_object_set(o, keep[j], json_object_get(k, keep[j]));
		json_array_append_new(arr, o);
	}
	return json_pack("{s:s, s:o}", "run_id", c->id, "kernels", arr);
}

int dataset_kernel_pair(struct history *h, const struct history_run *bench,
			struct dataset_pair *pair, struct kf_err *err)
{
	json_t *core;
	int rc;

	memset(pair, 0, sizeof(*pair));
	if (!bench_verified(bench) || !bench->source_hash)
		return 0;
	core = spec_core(bench->spec);
	rc = find_run(h, HISTORY_CHECK, bench->source_hash, core, &pair->check, err);
	json_decref(core);
	if (rc <= 0)
		return rc;
	rc = find_run(h, HISTORY_COMPILE, bench->source_hash, NULL, &pair->compile, err);
	if (rc < 0) {
		history_run_fini(&pair->check);
		return rc;
	}
	pair->has_compile = rc;
	return 1;
}

void dataset_pair_fini(struct dataset_pair *pair)
{
	history_run_fini(&pair->check);
	if (pair->has_compile)
		history_run_fini(&pair->compile);
	memset(pair, 0, sizeof(*pair));
}

/* What the task is: the op's name, words and math when the spec names an
 * op (shorthand or reference), the kernels otherwise. Returns new. */
static json_t *task_part(const struct history_run *b, const struct history_run *c)
{
	const char *opname = json_string_value(json_object_get(b->spec, "op"));
	const struct op_template *op;
	const char *desc = b->description ? b->description : c->description;

	if (!opname)
		opname = json_string_value(
			json_object_get(json_object_get(b->spec, "reference"), "op"));
	op = op_find(opname);
	return json_pack("{s:s, s:s?, s:s?, s:s?}", "name",
			 op ? op->name : (b->kernels ? b->kernels : ""), "op", op ? op->name : NULL,
			 "description", desc ? desc : (op ? op->description : NULL), "math",
			 op ? op->summary : NULL);
}

/* The versions and device of a record. */
static void env_parts(const struct history_run *b, const struct history_run *c, json_t *rec)
{
	const json_t *dev = json_object_get(b->result, "device");
	const json_t *env = b->env ? b->env : c->env;
	const char *arch =
		json_string_value(json_object_get(json_object_get(c->result, "compile"), "arch"));
	char cc[16] = "";

	if (!arch)
		arch = json_string_value(json_object_get(b->spec, "arch"));
	if (json_is_integer(json_object_get(dev, "cc_major")))
		snprintf(cc, sizeof(cc), "%d.%d",
			 (int)json_integer_value(json_object_get(dev, "cc_major")),
			 (int)json_integer_value(json_object_get(dev, "cc_minor")));
	json_object_set_new(rec, "arch", arch ? json_string(arch) : json_null());
	json_object_set_new(rec, "gpu",
			    json_pack("{s:s?, s:s?}", "name", b->device_name, "compute_capability",
				      cc[0] ? cc : NULL));
	json_object_set_new(rec, "versions",
			    json_pack("{s:O*, s:O*, s:O*, s:s}", "kforge",
				      json_object_get(env, "kforge"), "cuda",
				      json_object_get(env, "cuda"), "driver",
				      json_object_get(env, "driver"), "exporter", KFORGE_VERSION));
}

json_t *dataset_record(const struct history_run *b, const struct dataset_pair *p, json_t *lineage,
		       const char *license)
{
	const char *src = json_string_value(json_object_get(b->spec, "source"));
	json_t *spec = json_deep_copy(b->spec), *rec, *guards = json_array();
	char hex[65], when[32];

	dataset_source_hash(src, hex);
	json_object_del(spec, "source");
	iso_time(b->created_ms, when, sizeof(when));
	for (size_t i = 0; i < sizeof(SAFEGUARDS) / sizeof(SAFEGUARDS[0]); i++)
		json_array_append_new(guards, json_string(SAFEGUARDS[i]));
	rec = json_pack("{s:s%, s:s, s:o}", "id", hex, (size_t)16, "source_sha256_normalized", hex,
			"task", task_part(b, &p->check));
	json_object_set_new(rec, "notes",
			    b->notes	     ? json_string(b->notes)
			    : p->check.notes ? json_string(p->check.notes)
					     : json_null());
	json_object_set_new(rec, "language", json_string("cuda"));
	json_object_set_new(rec, "source", json_string(src));
	json_object_set_new(rec, "spec", spec);
	env_parts(b, &p->check, rec);
	json_object_set_new(rec, "compile", compile_part(p->has_compile ? &p->compile : NULL));
	json_object_set_new(rec, "check", check_part(&p->check));
	json_object_set_new(json_object_get(rec, "check"), "safeguards_passed", guards);
	json_object_set_new(rec, "benchmark", bench_part(b));
	json_object_set_new(rec, "lineage", lineage);
	json_object_set_new(rec, "created", json_string(when));
	json_object_set_new(rec, "kforge_version", json_string(KFORGE_VERSION));
	json_object_set_new(rec, "license", json_string(license ? license : DATASET_LICENSE));
	return rec;
}

/* One ancestor as a trajectory step. Returns new. */
static json_t *step_json(const struct history_run *r)
{
	const json_t *src = json_object_get(r->spec, "source");
	const json_t *sp = json_object_get(r->result, "speedup");

	return json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:s?, s:O*, s:O*}", "run_id", r->id, "kind",
			 history_kind_name(r->kind), "status", history_status_name(r->status),
			 "summary", r->summary, "description", r->description, "notes", r->notes,
			 "source", json_is_string(src) ? src : NULL, "speedup",
			 json_object_get(sp, "value"));
}

json_t *dataset_lineage(struct history *h, const struct history_run *b, int whole)
{
	json_t *ids = json_array(), *steps = json_array();
	char next[HISTORY_ID_BYTES] = "";
	const char *parent = b->parent;

	if (parent)
		snprintf(next, sizeof(next), "%s", parent);
	for (int n = 0; next[0] && n < DATASET_LINEAGE_MAX; n++) {
		struct history_run r;

		if (history_get(h, next, &r, NULL))
			break;
		json_array_append_new(ids, json_string(r.id));
		if (whole)
			json_array_insert_new(steps, 0, step_json(&r));
		snprintf(next, sizeof(next), "%s", r.parent ? r.parent : "");
		history_run_fini(&r);
	}
	if (!whole) {
		json_decref(steps);
		steps = NULL;
	}
	return json_pack("{s:s?, s:o, s:o*}", "parent", parent, "ancestors", ids, "trajectory",
			 steps);
}

/* Whether rec passes the filter's record-level parts. */
int dataset_filter_match(const struct dataset_filter *f, const json_t *rec,
			 const struct history_run *b)
{
	const char *arch = json_string_value(json_object_get(rec, "arch"));
	const char *gpu = json_string_value(json_object_get(json_object_get(rec, "gpu"), "name"));
	const json_t *task = json_object_get(rec, "task");
	const json_t *sp = json_object_get(json_object_get(rec, "benchmark"), "speedup");

	if (f->arch && (!arch || strcmp(arch, f->arch) != 0))
		return 0;
	if (f->gpu && (!gpu || !strcasestr(gpu, f->gpu)))
		return 0;
	if (f->op) {
		const char *op = json_string_value(json_object_get(task, "op"));
		if (!(op && strcmp(op, f->op) == 0) && !(b->kernels && strstr(b->kernels, f->op)))
			return 0;
	}
	if (f->min_speedup > 0 && (!json_is_number(sp) || json_number_value(sp) < f->min_speedup))
		return 0;
	return 1;
}
