/* spec_bind: binding a parsed spec at one row of sizes (shapes, overflow,
 * caps, constraints, launch dimensions) and choosing the odd size a check
 * adds (a size not on the spec's list, not a multiple of the block). */
#include "sandbox/spec/spec.h"
#include "sandbox/spec/spec_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* --- binding ----------------------------------------------------------- */

void spec_limits_default(struct spec_limits *lim)
{
	lim->max_device_bytes = 16ull << 30;
	lim->max_tensor_elems = (1ull << 31) - 1;
	lim->max_host_bytes = 16ull << 30;
}

static void fmt_vals(const struct spec *s, const struct expr *e, const int64_t *vals, char *buf,
		     size_t cap)
{
	size_t n = 0;
	buf[0] = 0;
	for (size_t i = 0; i < expr_var_count(e) && n < cap; i++) {
		int k = spec_var_index(s, expr_var_at(e, i));
		n += (size_t)snprintf(buf + n, cap - n, "%s%s=%" PRId64, i ? ", " : "",
				      expr_var_at(e, i), k >= 0 ? vals[k] : 0);
	}
}

static int eval_at(const struct spec *s, const struct expr *e, const int64_t *vals,
		   const char *where, const char *field, int64_t *out, struct kf_err *err)
{
	struct expr_env env = spec_env(s, vals);
	struct kf_err local = {0};
	int rc = expr_eval(e, &env, out, &local);
	if (rc)
		return kf_err_set(err, rc, "%s: %s: %s", where, field, local.msg);
	return 0;
}

/* "3.35 GiB" or "512.0 MiB" into buf. */
static const char *fmt_size(uint64_t b, char *buf, size_t cap)
{
	if (b >= (1ull << 30))
		snprintf(buf, cap, "%.2f GiB", (double)b / (double)(1ull << 30));
	else
		snprintf(buf, cap, "%.1f MiB", (double)b / (double)(1ull << 20));
	return buf;
}

int spec_bind(const struct spec *s, const int64_t *vals, const struct spec_limits *lim,
	      const char *where, struct spec_bound *b, struct kf_err *err)
{
	struct spec_limits dl;
	if (!lim) {
		spec_limits_default(&dl);
		lim = &dl;
	}
	memset(b, 0, sizeof *b);
	char field[SPEC_PATH_MAX_LEN], vb[256];
	int rc;
	for (size_t c = 0; c < s->constraints_len; c++) {
		int64_t v;
		snprintf(field, sizeof field, "constraints[%zu]", c);
		if ((rc = eval_at(s, s->constraints[c], vals, where, field, &v, err)))
			return rc;
		if (!v) {
			fmt_vals(s, s->constraints[c], vals, vb, sizeof vb);
			return kf_err_set(err, KF_EINVAL, "%s: constraint '%s' fails for %s", where,
					  expr_text(s->constraints[c]), vb);
		}
	}
	uint64_t dev = 0, host = 0;
	double def_bytes = 0;
	for (size_t t = 0; t < s->tensors_len; t++) {
		const struct spec_tensor *T = &s->tensors[t];
		int64_t elems = 1;
		for (size_t d = 0; d < T->rank; d++) {
			int64_t v;
			snprintf(field, sizeof field, "tensors.%s.shape[%zu]", T->name, d);
			if ((rc = eval_at(s, T->shape[d], vals, where, field, &v, err)))
				return rc;
			if (v < 1)
				return kf_err_set(err, KF_EINVAL,
						  "%s: %s: '%s' is %" PRId64 ", must be at least 1",
						  where, field, expr_text(T->shape[d]), v);
			b->dims[t][d] = v;
			if (__builtin_mul_overflow(elems, v, &elems))
				return kf_err_set(err, KF_ETOOBIG,
						  "%s: tensors.%s: shape overflows int64", where,
						  T->name);
		}
		if ((uint64_t)elems > lim->max_tensor_elems)
			return kf_err_set(err, KF_ETOOBIG,
					  "%s: tensors.%s: %" PRId64
					  " elements, over the cap of %" PRIu64,
					  where, T->name, elems, lim->max_tensor_elems);
		uint64_t bytes;
		if (__builtin_mul_overflow((uint64_t)elems, dtype_bytes(T->dtype), &bytes))
			return kf_err_set(err, KF_ETOOBIG, "%s: tensors.%s: byte size overflows",
					  where, T->name);
		b->elems[t] = (uint64_t)elems;
		b->bytes[t] = bytes;
		/* Each buffer: guard, data rounded up to 256 bytes, guard. */
		uint64_t padded = (bytes + 255) & ~255ull;
		if (__builtin_add_overflow(dev, padded + 2ull * SPEC_GUARD_BYTES, &dev))
			dev = UINT64_MAX;
		/* The daemon holds the reference in f64, plus the candidate's
		 * output and, for inputs, their regenerated copy. */
		uint64_t h = (uint64_t)elems * 8u * (T->role == SPEC_ROLE_INPUT ? 1u : 3u);
		if (__builtin_add_overflow(host, h, &host))
			host = UINT64_MAX;
		def_bytes += (double)bytes * (T->role == SPEC_ROLE_INOUT ? 2.0 : 1.0);
		if (T->init_max_expr) {
			int64_t im;
			snprintf(field, sizeof field, "tensors.%s.init_max", T->name);
			if ((rc = eval_at(s, T->init_max_expr, vals, where, field, &im, err)))
				return rc;
			if (im < 1)
				return kf_err_set(err, KF_EINVAL,
						  "%s: %s: '%s' is %" PRId64 ", must be at least 1",
						  where, field, expr_text(T->init_max_expr), im);
		}
	}
	b->device_bytes = dev;
	char s1[32], s2[32];
	if (dev > lim->max_device_bytes)
		return kf_err_set(err, KF_ETOOBIG,
				  "%s: tensors need %s of device memory with guard bands, "
				  "over the %s cap",
				  where, fmt_size(dev, s1, sizeof s1),
				  fmt_size(lim->max_device_bytes, s2, sizeof s2));
	if (host > lim->max_host_bytes)
		return kf_err_set(err, KF_ETOOBIG,
				  "%s: checking needs %s of host memory (float64 copies), "
				  "over the %s cap",
				  where, fmt_size(host, s1, sizeof s1),
				  fmt_size(lim->max_host_bytes, s2, sizeof s2));
	b->cost_bytes = def_bytes;
	b->cost_flops = -1;
	int64_t v;
	if (s->cost_bytes) {
		if ((rc = eval_at(s, s->cost_bytes, vals, where, "cost.bytes", &v, err)))
			return rc;
		if (v < 0)
			return kf_err_set(err, KF_EINVAL, "%s: cost.bytes is negative", where);
		b->cost_bytes = (double)v;
	}
	if (s->cost_flops) {
		if ((rc = eval_at(s, s->cost_flops, vals, where, "cost.flops", &v, err)))
			return rc;
		if (v < 0)
			return kf_err_set(err, KF_EINVAL, "%s: cost.flops is negative", where);
		b->cost_flops = (double)v;
	}
	return 0;
}

int spec_launch_dims(const struct spec *s, const struct spec_launch *l, const int64_t *vals,
		     const char *where, uint32_t grid[3], uint32_t block[3], uint32_t *shared_bytes,
		     struct kf_err *err)
{
	char field[SPEC_PATH_MAX_LEN];
	int rc;
	int64_t threads = 1;
	for (int k = 0; k < 3; k++) {
		grid[k] = block[k] = 1;
		int64_t v;
		if ((size_t)k < l->grid_len) {
			snprintf(field, sizeof field, "%s.grid[%d]", l->kernel, k);
			if ((rc = eval_at(s, l->grid[k], vals, where, field, &v, err)))
				return rc;
			int64_t max = k == 0 ? INT32_MAX : 65535;
			if (v < 1 || v > max)
				return kf_err_set(err, KF_EINVAL,
						  "%s: launch %s: '%s' is %" PRId64
						  ", must be in [1, %" PRId64 "]",
						  where, field, expr_text(l->grid[k]), v, max);
			grid[k] = (uint32_t)v;
		}
		if ((size_t)k < l->block_len) {
			snprintf(field, sizeof field, "%s.block[%d]", l->kernel, k);
			if ((rc = eval_at(s, l->block[k], vals, where, field, &v, err)))
				return rc;
			int64_t max = k == 2 ? 64 : 1024;
			if (v < 1 || v > max)
				return kf_err_set(err, KF_EINVAL,
						  "%s: launch %s: '%s' is %" PRId64
						  ", must be in [1, %" PRId64 "]",
						  where, field, expr_text(l->block[k]), v, max);
			block[k] = (uint32_t)v;
			threads *= v;
		}
	}
	if (threads > 1024)
		return kf_err_set(err, KF_EINVAL,
				  "%s: launch %s: block has %" PRId64 " threads, at most 1024",
				  where, l->kernel, threads);
	int64_t sb;
	snprintf(field, sizeof field, "%s.shared_bytes", l->kernel);
	if ((rc = eval_at(s, l->shared_bytes, vals, where, field, &sb, err)))
		return rc;
	if (sb < 0 || sb > (1 << 20))
		return kf_err_set(err, KF_EINVAL,
				  "%s: launch %s: %" PRId64 " bytes, must be in [0, 1 MiB]", where,
				  field, sb);
	*shared_bytes = (uint32_t)sb;
	return 0;
}

int spec_launch_runs(const struct spec *s, const struct spec_launch *l, const int64_t *vals,
		     int *runs, struct kf_err *err)
{
	*runs = 1;
	if (!l->when)
		return 0;
	char field[SPEC_PATH_MAX_LEN];
	int64_t v;
	snprintf(field, sizeof field, "%s.when", l->kernel);
	int rc = eval_at(s, l->when, vals, "launch", field, &v, err);
	if (rc == 0)
		*runs = v != 0;
	return rc;
}

int spec_check_launches_at(const struct spec *s, const int64_t *vals, const char *where,
			   struct kf_err *err)
{
	const struct spec_launch *lists[3] = {s->launch, s->ref.launch, s->baseline.launch};
	size_t lens[3] = {s->launch_len, s->ref.launch_len, s->baseline.launch_len};
	static const char *const NAMES[3] = {"launch", "reference.launch", "baseline.launch"};
	for (int q = 0; q < 3; q++) {
		size_t running = 0;
		for (size_t i = 0; i < lens[q]; i++) {
			uint32_t g[3], b[3], sb;
			const struct spec_launch *l = &lists[q][i];
			int runs, rc;
			if ((rc = spec_launch_runs(s, l, vals, &runs, err)))
				return rc;
			if (!runs) /* skipped at this size: its dims need not be valid */
				continue;
			running++;
			rc = spec_launch_dims(s, l, vals, where, g, b, &sb, err);
			if (rc)
				return rc;
			for (size_t a = 0; a < l->args_len; a++) {
				if (l->args[a].kind != SPEC_ARG_SIZE)
					continue;
				char field[SPEC_PATH_MAX_LEN];
				int64_t v;
				snprintf(field, sizeof field, "launch %s: args[%zu]", l->kernel, a);
				if ((rc = eval_at(s, l->args[a].expr, vals, where, field, &v, err)))
					return rc;
				if (l->args[a].dtype == KF_DT_I32 &&
				    (v < INT32_MIN || v > INT32_MAX))
					return kf_err_set(err, KF_EINVAL,
							  "%s: %s: '%s' is %" PRId64
							  ", which does not fit in i32; "
							  "type it '%s:i64'",
							  where, field, expr_text(l->args[a].expr),
							  v, expr_text(l->args[a].expr));
			}
		}
		if (lens[q] && !running)
			return kf_err_set(err, KF_EINVAL,
					  "%s: no kernel of %s runs at this size: every launch's "
					  "'when' is false",
					  where, NAMES[q]);
	}
	return 0;
}

/* --- odd size ---------------------------------------------------------- */

static int row_listed(const struct spec *s, const int64_t *v)
{
	for (size_t r = 0; r < s->sizes_len; r++)
		if (memcmp(&s->sizes[r * s->vars_len], v, s->vars_len * sizeof *v) == 0)
			return 1;
	return 0;
}

int spec_odd_size(const struct spec *s, const struct spec_limits *lim, uint64_t seed, int64_t *out,
		  struct kf_err *err)
{
	if (s->vars_len == 0)
		return kf_err_set(err, KF_ENOTFOUND, "the spec has no size variables");
	/* Base: the listed row with the least device memory, so the extra size
	 * costs little time. */
	size_t base = 0;
	uint64_t best = UINT64_MAX;
	for (size_t r = 0; r < s->sizes_len; r++) {
		struct spec_bound b;
		if (spec_bind(s, &s->sizes[r * s->vars_len], lim, "sizes", &b, NULL) == 0 &&
		    b.device_bytes < best) {
			best = b.device_bytes;
			base = r;
		}
	}
	const int64_t *v0 = &s->sizes[base * s->vars_len];
	/* Twice the base's memory plus 64 MiB, saturating. */
	const uint64_t mem_cap =
		best > (UINT64_MAX - (64u << 20)) / 2 ? UINT64_MAX : 2 * best + (64u << 20);
	/* Steps grow from small odd numbers (breaking multiples of 2) to powers
	 * of two (to satisfy divisibility constraints). */
	static const int64_t STEPS[] = {1,  3,	5,  7,	2,   6,	  4,   12,  8,	 16,   24,
					32, 48, 64, 96, 128, 192, 256, 384, 512, 1024, 2048};
	const size_t nsteps = sizeof STEPS / sizeof STEPS[0];
	int64_t cand[SPEC_MAX_VARS];
	uint64_t rng = spec_mix64(seed ^ 0x6f64645f73697a65ull);
	/* Pass 0 wants every changed variable odd (no power-of-two tiling
	 * divides it); pass 1 takes any value the constraints allow. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t round = 0; round < nsteps; round++) {
			for (int attempt = 0; attempt < 24; attempt++) {
				int changed = 0;
				for (size_t k = 0; k < s->vars_len; k++) {
					rng = spec_mix64(rng);
					int64_t step = STEPS[round];
					int which = (int)(rng % 4); /* +, -, keep, + */
					int64_t v = v0[k];
					if (which == 2 && attempt % 3 != 0) {
						cand[k] = v;
						continue;
					}
					/* Down when asked and it stays >= 1, or when
					 * up would pass INT64_MAX (v is >= 1 and a
					 * step at most 2048: neither overflows). */
					int down =
						which == 1 ? v - step >= 1 : v > INT64_MAX - step;
					cand[k] = down ? v - step : v + step;
					changed = 1;
				}
				if (!changed || row_listed(s, cand))
					continue;
				int odd = 1;
				for (size_t k = 0; k < s->vars_len; k++)
					if (cand[k] != v0[k] && cand[k] % 2 == 0)
						odd = 0;
				if (pass == 0 && !odd)
					continue;
				struct spec_bound b;
				if (spec_bind(s, cand, lim, "odd size", &b, NULL) == 0 &&
				    spec_check_launches_at(s, cand, "odd size", NULL) == 0 &&
				    b.device_bytes <= mem_cap) {
					memcpy(out, cand, s->vars_len * sizeof *out);
					return 0;
				}
			}
		}
	return kf_err_set(err, KF_ENOTFOUND,
			  "no size near sizes[%zu] satisfies the constraints and "
			  "is not already listed",
			  base);
}
