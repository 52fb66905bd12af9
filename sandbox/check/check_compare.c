/* check_compare: judging one run: the tolerance comparison against the
 * reference, index formatting for messages, and the safeguards (guard
 * bands, inputs modified, coverage, state across launches, determinism,
 * non-finite values, weak references). */
#include "sandbox/check/check.h"
#include "sandbox/check/check_int.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/par.h"

/* --- comparison -------------------------------------------------------- */

/* One chunk of a comparison: its own counts, extremes, first mismatches
 * and sums, combined in chunk order by check_compare. */
struct cmp_part {
	struct check_cmp c;
	double num, den, sum, worst_excess;
	uint64_t finite_n;
	int zeros, constant;
};

struct cmp_job {
	const double *got; /* or raw elements of dtype dt */
	const void *raw;
	enum kf_dtype dt;
	const double *want;
	double atol, rtol, mean;
	struct cmp_part *parts;
};

/* Elements [lo, hi) of a chunk, got[0 .. hi-lo) their candidate values. */
static void cmp_block(const struct cmp_job *j, struct cmp_part *p, uint64_t lo, uint64_t hi,
		      const double *got)
{
	struct check_cmp *o = &p->c;
	double atol = j->atol, rtol = j->rtol;
	for (uint64_t i = lo; i < hi; i++) {
		double g = got[i - lo], w = j->want[i];
		int bad;
		if (!isfinite(w)) {
			/* The reference itself is NaN/Inf: only the same matches. */
			bad = isnan(w) ? !isnan(g) : g != w;
			p->zeros = 0;
		} else if (!isfinite(g)) {
			bad = 1;
			o->nonfinite++;
		} else {
			double d = fabs(g - w), bound = atol + rtol * fabs(w);
			bad = d > bound;
			if (d > o->max_abs)
				o->max_abs = d;
			if (w != 0 && d / fabs(w) > o->max_rel)
				o->max_rel = d / fabs(w);
			p->num += d * d;
			p->den += w * w;
			if (fabs(w) > o->want_absmax)
				o->want_absmax = fabs(w);
			if (fabs(w) > bound)
				p->zeros = 0;
			p->sum += w;
			p->finite_n++;
			if (d - bound > p->worst_excess) {
				p->worst_excess = d - bound;
				o->worst = i;
			}
		}
		if (bad) {
			if (o->first_len < CHECK_FIRST_MAX) {
				o->first[o->first_len] = i;
				o->first_got[o->first_len] = g;
				o->first_want[o->first_len] = w;
				o->first_len++;
			}
			o->mismatches++;
		}
	}
}

/* Raw candidate elements are converted a block at a time on the stack:
 * the comparison never holds the whole output as float64. */
#define CMP_BLOCK 1024

static void cmp_chunk(void *arg, uint64_t ci, uint64_t lo, uint64_t hi)
{
	const struct cmp_job *j = arg;
	struct cmp_part *p = &j->parts[ci];
	p->worst_excess = -1;
	p->zeros = 1;
	if (j->got) {
		cmp_block(j, p, lo, hi, j->got + lo);
		return;
	}
	double tmp[CMP_BLOCK];
	for (uint64_t b = lo; b < hi; b += CMP_BLOCK) {
		uint64_t e = hi - b > CMP_BLOCK ? b + CMP_BLOCK : hi;
		dtype_load_range(j->dt, j->raw, (size_t)b, (size_t)e, tmp);
		cmp_block(j, p, b, e, tmp);
	}
}

/* Would writing the mean everywhere pass this chunk? */
static void cmp_constant_chunk(void *arg, uint64_t ci, uint64_t lo, uint64_t hi)
{
	const struct cmp_job *j = arg;
	int constant = 1;
	for (uint64_t i = lo; i < hi && constant; i++)
		if (isfinite(j->want[i]) &&
		    fabs(j->mean - j->want[i]) > j->atol + j->rtol * fabs(j->want[i]))
			constant = 0;
	j->parts[ci].constant = constant;
}

/* Adds chunk p to o in index order: maxima, counts, the first mismatches
 * and the earliest largest excess (a later chunk wins only when larger). */
static void cmp_merge(struct check_cmp *o, const struct cmp_part *p, double *worst_excess)
{
	const struct check_cmp *c = &p->c;
	if (c->max_abs > o->max_abs)
		o->max_abs = c->max_abs;
	if (c->max_rel > o->max_rel)
		o->max_rel = c->max_rel;
	if (c->want_absmax > o->want_absmax)
		o->want_absmax = c->want_absmax;
	if (p->worst_excess > *worst_excess) {
		*worst_excess = p->worst_excess;
		o->worst = c->worst;
	}
	for (size_t q = 0; q < c->first_len && o->first_len < CHECK_FIRST_MAX; q++) {
		o->first[o->first_len] = c->first[q];
		o->first_got[o->first_len] = c->first_got[q];
		o->first_want[o->first_len] = c->first_want[q];
		o->first_len++;
	}
	o->mismatches += c->mismatches;
	o->nonfinite += c->nonfinite;
}

/* Chunks of a comparison: fixed, so the sums (relative L2, the mean) are
 * added in the same order on every machine; the counts, maxima and first
 * mismatches are those of one pass in index order. */
#define CMP_CHUNK CHECK_PAR_CHUNK

static void compare(struct cmp_job *jb, uint64_t n, struct check_cmp *o);

void check_compare(const double *got, const double *want, uint64_t n, double atol, double rtol,
		   struct check_cmp *o)
{
	struct cmp_job j = {.got = got, .want = want, .atol = atol, .rtol = rtol};
	compare(&j, n, o);
}

void check_compare_raw(enum kf_dtype dt, const void *got, const double *want, uint64_t n,
		       double atol, double rtol, struct check_cmp *o)
{
	struct cmp_job j = {.raw = got, .dt = dt, .want = want, .atol = atol, .rtol = rtol};
	compare(&j, n, o);
}

static void compare(struct cmp_job *jb, uint64_t n, struct check_cmp *o)
{
	memset(o, 0, sizeof *o);
	o->n = n;
	struct cmp_part one;
	uint64_t chunk = CMP_CHUNK, nparts = par_chunks(n, chunk);
	struct cmp_part *parts = nparts > 1 ? calloc(nparts, sizeof *parts) : NULL;
	if (!parts) { /* one chunk: small, or no memory for the chunks */
		memset(&one, 0, sizeof one);
		parts = &one;
		chunk = n ? n : 1;
		nparts = n ? 1 : 0;
	}
	struct cmp_job j = *jb;
	j.parts = parts;
	par_for(n, chunk, cmp_chunk, &j);
	double num = 0, den = 0, sum = 0, worst_excess = -1;
	uint64_t finite_n = 0;
	int zeros = 1;
	for (uint64_t k = 0; k < nparts; k++) {
		cmp_merge(o, &parts[k], &worst_excess);
		num += parts[k].num;
		den += parts[k].den;
		sum += parts[k].sum;
		finite_n += parts[k].finite_n;
		zeros = zeros && parts[k].zeros;
	}
	o->rel_l2 = den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
	o->zeros_would_pass = n > 0 && zeros;
	/* Would writing the mean everywhere pass? */
	int constant = finite_n > 0;
	j.mean = finite_n ? sum / (double)finite_n : 0;
	if (constant)
		par_for(n, chunk, cmp_constant_chunk, &j);
	for (uint64_t k = 0; k < nparts && constant; k++)
		constant = parts[k].constant;
	o->constant_would_pass = n > 1 && constant;
	if (parts != &one)
		free(parts);
}

void check_format_index(const int64_t *dims, size_t rank, uint64_t i, char *buf, size_t cap)
{
	if (rank == 0) {
		snprintf(buf, cap, "[]");
		return;
	}
	uint64_t idx[SPEC_MAX_RANK];
	for (size_t d = rank; d-- > 0;) {
		uint64_t dim = dims[d] > 0 ? (uint64_t)dims[d] : 1;
		idx[d] = i % dim;
		i /= dim;
	}
	size_t n = (size_t)snprintf(buf, cap, "[");
	for (size_t d = 0; d < rank && n < cap; d++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%" PRIu64, d ? ", " : "", idx[d]);
	if (n < cap)
		snprintf(buf + n, cap - n, "]");
}

void check_run_fini(struct check_run *run)
{
	if (!run)
		return;
	free(run->safeguards);
	free(run->outputs);
	memset(run, 0, sizeof *run);
}

static void fired_add(struct check_fired *fired, const char *name)
{
	for (size_t i = 0; i < fired->len; i++)
		if (strcmp(fired->name[i], name) == 0)
			return;
	if (fired->len < CHECK_FIRED_MAX)
		snprintf(fired->name[fired->len++], CHECK_KIND_BYTES, "%s", name);
}

/* Adds a fired safeguard {name, message} to a run and to the global set. */
void check_fire(struct check_run *run, struct check_fired *fired, const char *name, const char *fmt,
		...)
{
	if (run->safeguards_len == run->safeguards_cap) {
		size_t cap = run->safeguards_cap ? run->safeguards_cap * 2 : 4;
		struct check_safeguard *g = realloc(run->safeguards, cap * sizeof *g);
		if (!g) {
			run->nomem = 1;
			return;
		}
		run->safeguards = g;
		run->safeguards_cap = cap;
	}
	struct check_safeguard *g = &run->safeguards[run->safeguards_len++];
	snprintf(g->name, sizeof g->name, "%s", name);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g->message, sizeof g->message, fmt, ap);
	va_end(ap);
	if (fired)
		fired_add(fired, name);
}

void check_flag_set(struct check_flags *fl, const char *name, int replace, const char *fmt, ...)
{
	size_t i = 0;
	while (i < fl->len && strcmp(fl->f[i].name, name) != 0)
		i++;
	if (i < fl->len && !replace)
		return;
	if (i == fl->len) {
		if (fl->len == CHECK_FLAGS_MAX)
			return;
		fl->len++;
		snprintf(fl->f[i].name, sizeof fl->f[i].name, "%s", name);
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(fl->f[i].message, sizeof fl->f[i].message, fmt, ap);
	va_end(ap);
}

const char *check_flag_get(const struct check_flags *fl, const char *name)
{
	for (size_t i = 0; i < fl->len; i++)
		if (strcmp(fl->f[i].name, name) == 0)
			return fl->f[i].message;
	return NULL;
}

static void idx_text(const struct spec *s, const struct spec_bound *b, size_t t,
		     const json_t *first, char *buf, size_t cap)
{
	buf[0] = 0;
	if (json_array_size(first))
		check_format_index(b->dims[t], s->tensors[t].rank,
				   (uint64_t)json_integer_value(json_array_get(first, 0)), buf,
				   cap);
}

void check_tolerance_of(const struct spec *s, size_t t, double *atol, double *rtol)
{
	if (s->tol_given) {
		*atol = s->atol;
		*rtol = s->rtol;
	} else
		spec_default_tolerance(s->tensors[t].dtype, atol, rtol);
}

/* Fires out_of_bounds for each guard band the harness found changed. */
static void judge_guards(const json_t *tr, struct check_run *sg, struct check_fired *fired)
{
	const json_t *v;
	size_t i;
	json_array_foreach(json_object_get(tr, "guard_violations"), i, v) {
		const char *side = json_string_value(json_object_get(v, "side"));
		json_int_t fo = json_integer_value(json_object_get(v, "first_offset"));
		json_int_t lo = json_integer_value(json_object_get(v, "last_offset"));
		if (side && strcmp(side, "before") == 0)
			check_fire(sg, fired, "out_of_bounds",
				   "%s: wrote before the start of the tensor (%" JSON_INTEGER_FORMAT
				   " guard bytes changed, offsets %" JSON_INTEGER_FORMAT
				   " to %" JSON_INTEGER_FORMAT
				   "): check index arithmetic and bounds",
				   json_string_value(json_object_get(v, "tensor")),
				   json_integer_value(json_object_get(v, "bytes")), fo, lo);
		else
			check_fire(sg, fired, "out_of_bounds",
				   "%s: wrote past the end of the tensor (%" JSON_INTEGER_FORMAT
				   " guard bytes changed, from byte %" JSON_INTEGER_FORMAT
				   " to byte %" JSON_INTEGER_FORMAT
				   " after its end): guard the tail "
				   "with if (i < n)",
				   json_string_value(json_object_get(v, "tensor")),
				   json_integer_value(json_object_get(v, "bytes")), fo, lo);
	}
}

/* Fires input_modified for each input the harness found changed. */
static void judge_inputs(const struct spec *s, const struct spec_bound *b, const json_t *tr,
			 struct check_run *sg, struct check_fired *fired)
{
	const json_t *v;
	size_t i;
	json_array_foreach(json_object_get(tr, "inputs_modified"), i, v) {
		const char *name = json_string_value(json_object_get(v, "tensor"));
		int t = spec_tensor_index(s, name);
		char at[96] = "";
		if (t >= 0)
			check_format_index(
				b->dims[t], s->tensors[t].rank,
				(uint64_t)json_integer_value(json_object_get(v, "first_index")), at,
				sizeof at);
		check_fire(
			sg, fired, "input_modified",
			"%s: %" JSON_INTEGER_FORMAT " elements of an input changed (first at %s): "
			"inputs are read-only (declare it inout if the kernel updates it in place)",
			name, json_integer_value(json_object_get(v, "elements")), at);
	}
}

/* Fires coverage, state_across_launches and nondeterministic for output t
 * from the harness's per-output counts ho. */
static void judge_output_runs(const struct spec *s, const struct spec_bound *b, size_t t,
			      const json_t *ho, struct check_run *sg, struct check_fired *fired)
{
	const struct spec_tensor *T = &s->tensors[t];
	char at[96];
	json_int_t unw = json_integer_value(json_object_get(ho, "unwritten"));
	json_int_t unw2 = json_integer_value(json_object_get(ho, "unwritten_second_run"));
	json_int_t late = json_integer_value(json_object_get(ho, "unwritten_first_run_only"));
	json_int_t chg = json_integer_value(json_object_get(ho, "changed_between_runs"));
	if (unw) {
		idx_text(s, b, t, json_object_get(ho, "first_unwritten"), at, sizeof at);
		check_fire(sg, fired, "coverage",
			   "%s: %" JSON_INTEGER_FORMAT " of %" PRIu64 " elements never written "
			   "(first at %s): the kernel must write every output element (outputs "
			   "are poisoned before each run, so stale memory cannot pass)",
			   T->name, unw, b->elems[t], at);
	}
	if (unw2) {
		idx_text(s, b, t, json_object_get(ho, "first_unwritten_second_run"), at, sizeof at);
		check_fire(sg, fired, "state_across_launches",
			   "%s: %" JSON_INTEGER_FORMAT " elements written on the first launch but "
			   "not on launch %d with the same input (first at %s): the kernel keeps "
			   "state between launches (a __device__ variable or cached result?)",
			   T->name, unw2, CHECK_EXTRA_LAUNCHES + 2, at);
	}
	if (late) {
		idx_text(s, b, t, json_object_get(ho, "first_unwritten_first_run_only"), at,
			 sizeof at);
		check_fire(sg, fired, "state_across_launches",
			   "%s: %" JSON_INTEGER_FORMAT " elements not written on the first launch "
			   "but written later (first at %s): the kernel depends on earlier "
			   "launches",
			   T->name, late, at);
	}
	if (chg) {
		idx_text(s, b, t, json_object_get(ho, "first_changed"), at, sizeof at);
		check_fire(sg, fired, "nondeterministic",
			   "%s: %" JSON_INTEGER_FORMAT " elements differ between the first launch "
			   "and launch %d on the same input (first at %s): a race, an "
			   "uninitialised read, or state kept between launches",
			   T->name, chg, CHECK_EXTRA_LAUNCHES + 2, at);
	}
}

static struct check_output *output_new(struct check_run *run)
{
	if (run->outputs_len == run->outputs_cap) {
		size_t cap = run->outputs_cap ? run->outputs_cap * 2 : 2;
		struct check_output *o = realloc(run->outputs, cap * sizeof *o);
		if (!o) {
			run->nomem = 1;
			return NULL;
		}
		run->outputs = o;
		run->outputs_cap = cap;
	}
	struct check_output *o = &run->outputs[run->outputs_len++];
	memset(o, 0, sizeof *o);
	return o;
}

/* Fires the comparison's safeguards (non-finite values, mismatches and the
 * half-precision hint) and the weak-reference flag for output t. */
static void judge_verdict(const struct spec *s, const struct spec_bound *b, size_t t,
			  const struct check_cmp *c, double atol, double rtol, struct check_run *sg,
			  struct check_fired *fired, struct check_flags *flags)
{
	const struct spec_tensor *T = &s->tensors[t];
	char at[96];
	if (c->nonfinite) {
		check_format_index(b->dims[t], T->rank, c->first[0], at, sizeof at);
		check_fire(sg, fired, "nonfinite",
			   "%s: %" PRIu64 " NaN/Inf values where the reference is finite "
			   "(first mismatch at %s)",
			   T->name, c->nonfinite, at);
	}
	if (c->mismatches > c->nonfinite || (c->mismatches && !c->nonfinite)) {
		char wat[96];
		check_format_index(b->dims[t], T->rank, c->first[0], at, sizeof at);
		check_format_index(b->dims[t], T->rank, c->worst, wat, sizeof wat);
		check_fire(sg, fired, "mismatch",
			   "%s: %" PRIu64 " of %" PRIu64 " elements outside |got - want| <= "
			   "%g + %g*|want| (first at %s: got %.6g, want %.6g; max abs err %.3g "
			   "at "
			   "%s, max rel err %.3g, rel L2 %.3g)",
			   T->name, c->mismatches, c->n, atol, rtol, at, c->first_got[0],
			   c->first_want[0], c->max_abs, wat, c->max_rel, c->rel_l2);
		/* Rounding every element to fp16 gives a relative L2 error of
		 * ~1e-4..1e-3 (bf16 ~1e-3..1e-2): a precision problem, not a
		 * logic error. */
		if (T->dtype == KF_DT_F32 && c->rel_l2 > 5e-5 && c->rel_l2 < 2e-2 &&
		    c->mismatches * 50 > c->n)
			check_fire(sg, NULL, "precision_hint",
				   "%s: relative L2 error %.1e spread over many elements looks "
				   "like half-precision (fp16/bf16) arithmetic; this output is "
				   "checked in fp32",
				   T->name, c->rel_l2);
	}
	if (c->zeros_would_pass)
		check_flag_set(flags, "weak_reference", 0,
			       "reference output %s is tiny against the tolerance (max "
			       "|want| %.3g vs atol %g): a kernel writing zeros would "
			       "pass; "
			       "scale the inputs or lower atol",
			       T->name, c->want_absmax, atol);
	else if (c->constant_would_pass)
		check_flag_set(flags, "weak_reference", 0,
			       "reference output %s is nearly constant against the "
			       "tolerance: a kernel writing one value would pass; use "
			       "inputs that vary the output or tighten the tolerance",
			       T->name);
}

/* Judges one trial from the harness report and the reference. Returns 1
 * when it passed. */
int check_judge_run(const struct spec *s, const char *dir, const struct spec_bound *b,
		    const json_t *tr, double **want, struct check_run *run,
		    struct check_fired *fired, struct check_flags *flags, double *max_rel_seen)
{
	run->judged = 1;
	judge_guards(tr, run, fired);
	judge_inputs(s, b, tr, run, fired);
	const json_t *houts = json_object_get(tr, "outputs");
	for (size_t t = 0; t < s->tensors_len; t++) {
		const struct spec_tensor *T = &s->tensors[t];
		if (T->role == SPEC_ROLE_INPUT)
			continue;
		const json_t *ho = json_object_get(houts, T->name);
		if (!ho)
			continue;
		judge_output_runs(s, b, t, ho, run, fired);
		if (!want || !want[t])
			continue;
		/* Compare the first run against the reference. */
		char path[PATH_MAX + 300];
		snprintf(path, sizeof path, "%s/%s", dir,
			 json_string_value(json_object_get(ho, "file")));
		const void *got = NULL;
		struct kf_err e = {0};
		if (check_map_output(b, t, T->name, path, &got, &e)) {
			check_fire(run, fired, "harness_error", "%s", e.msg);
			continue;
		}
		double atol, rtol;
		check_tolerance_of(s, t, &atol, &rtol);
		struct check_cmp c;
		check_compare_raw(T->dtype, got, want[t], b->elems[t], atol, rtol, &c);
		check_unmap_output(b, t, got);
		if (c.max_rel > *max_rel_seen)
			*max_rel_seen = c.max_rel;
		struct check_output *o = output_new(run);
		if (o) {
			snprintf(o->name, sizeof o->name, "%s", T->name);
			o->max_abs = c.max_abs;
			o->max_rel = c.max_rel;
			o->rel_l2 = c.rel_l2;
			o->mismatches = c.mismatches;
			o->nonfinite = c.nonfinite;
			o->elements = c.n;
			o->first_len = c.first_len;
			for (size_t q = 0; q < c.first_len; q++) {
				check_format_index(b->dims[t], T->rank, c.first[q], o->first[q].at,
						   sizeof o->first[q].at);
				o->first[q].got = c.first_got[q];
				o->first[q].want = c.first_want[q];
			}
		}
		judge_verdict(s, b, t, &c, atol, rtol, run, fired, flags);
	}
	size_t nsg = 0;
	for (size_t i = 0; i < run->safeguards_len; i++)
		if (strcmp(run->safeguards[i].name, "precision_hint") != 0)
			nsg++;
	run->passed = nsg == 0 && !run->nomem;
	return run->passed;
}
