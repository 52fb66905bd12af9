/* bench: benchmark_kernel and calibrate, daemon side; see bench.h. */
#include "sandbox/check/bench.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/kb.h"
#include "sandbox/pool/gpu.h"
#include "sandbox/history/history.h"
#include "sandbox/jail/jail.h"
#include "sandbox/pool/runner.h"
#include "sandbox/check/stats.h"

struct brow {
	int64_t vals[SPEC_MAX_VARS];
	struct spec_bound b;
	uint64_t seed, vseed;
	char dir[PATH_MAX];
	json_t *rep;
	int rc;
	char err[256];
	json_t *ref;
	int ref_rc;
	char ref_err[256];
	int not_run; /* 1: skipped after a hang; err says why */
};

struct bctx {
	struct check_env *env;
	struct check_prep *p;
	struct brow *rows;
	size_t nrows;
	const struct bench_opts *o;
	int gpu;
	int have_base;
	struct check_phases *phases; /* the result's (borrowed) */
	double queued_ms;	     /* check_now_ms when the job was queued */
};

static void hexseed(uint64_t v, char *buf, size_t cap)
{
	snprintf(buf, cap, "%016" PRIx64, v);
}

/* Runs the CUDA reference for row r (check mode, one run of the
 * verification seed vh). Returns 1 when it hung (its watchdog's line or the
 * jail's limit). */
static int bench_ref_run(struct bctx *c, struct brow *r, int gpu, const char *vh, unsigned to,
			 const volatile int *stop)
{
	const struct spec *s = c->p->s;
	json_t *sizes = json_array();
	for (size_t k = 0; k < s->vars_len; k++)
		json_array_append_new(sizes, json_integer(r->vals[k]));
	json_t *job = json_pack("{s:s, s:i, s:s, s:s, s:i, s:i, s:i, s:[{s:o, s:[s], s:s}]}",
				"mode", "check", "device", gpu, "program", "reference", "module",
				"ref.cubin", "runs", 1, "extra_launches", 0, "row_timeout_ms",
				(int)to, "rows", "sizes", sizes, "seeds", vh, "out_prefix", "ref");
	struct kf_err e = {0};
	double t0 = check_now_ms();
	r->ref_rc = check_harness_exec(c->env, r->dir, job, to, stop, &r->ref, NULL, &e);
	c->phases->reference_ms += check_now_ms() - t0;
	check_phases_count_run(c->phases, r->ref);
	json_decref(job);
	const json_t *line = json_array_get(json_object_get(r->ref, "rows"), 0);
	int hung = r->ref_rc == KF_ETIMEOUT || json_is_true(json_object_get(line, "timeout"));
	if (hung)
		snprintf(r->ref_err, sizeof r->ref_err,
			 "the CUDA reference did not finish within %u ms", to);
	else
		snprintf(r->ref_err, sizeof r->ref_err, "%s", e.msg);
	return hung;
}

/* The rows after row i are not run (the candidate hung) or run without
 * the reference (the reference hung): check_not_run_reason. */
static void bench_not_run_after(struct bctx *c, size_t i, int ref)
{
	for (size_t j = i + 1; j < c->nrows; j++) {
		struct brow *r = &c->rows[j];
		if (ref) {
			r->ref_rc = KF_EFAULT;
			check_not_run_reason(c->p->s, c->rows[i].vals, 0, 1, r->ref_err,
					     sizeof r->ref_err);
		} else {
			r->not_run = 1;
			check_not_run_reason(c->p->s, c->rows[i].vals, 0, 0, r->err, sizeof r->err);
		}
	}
}

/* The watchdog of one benchmark size from its work: the warm-up and the
 * timing budget, plus twice check_work_timeout_ms over the launches a size
 * takes beyond them (warm-up minimum, the minimum samples in batches, the
 * verification; for each program) and the host's part (inputs twice,
 * outputs back). */
static unsigned bench_timeout(const struct bench_opts *o, const struct spec_bound *b, int have_base)
{
	double ms = (o->warmup_ms > 0 ? o->warmup_ms : BENCH_DEFAULT_WARMUP_MS) +
		    (o->budget_ms > 0 ? o->budget_ms : BENCH_DEFAULT_BUDGET_MS) +
		    2.0 * check_work_timeout_ms(b, 20u * (have_base ? 2u : 1u));
	return ms >= CHECK_MAX_TIMEOUT_MS ? CHECK_MAX_TIMEOUT_MS : (unsigned)ms;
}

static int bench_job(void *arg, int gpu, const volatile int *stop, struct kf_err *err)
{
	struct bctx *c = arg;
	const struct bench_opts *o = c->o;
	c->gpu = gpu;
	c->phases->queue_wait_ms += check_now_ms() - c->queued_ms;
	const struct spec *s = c->p->s;
	for (size_t i = 0; i < c->nrows; i++) {
		struct brow *r = &c->rows[i];
		if (r->not_run)
			break; /* and so are the rest */
		if (o->progress) {
			char m[96];
			snprintf(m, sizeof m, "timing size %zu of %zu on GPU %d", i + 1, c->nrows,
				 gpu);
			o->progress(o->progress_arg, (double)i, (double)c->nrows, m);
		}
		json_t *sizes = json_array();
		for (size_t k = 0; k < s->vars_len; k++)
			json_array_append_new(sizes, json_integer(r->vals[k]));
		char sh[20], vh[20];
		hexseed(r->seed, sh, sizeof sh);
		hexseed(r->vseed, vh, sizeof vh);
		json_t *job = json_pack(
			"{s:s, s:i, s:s, s:o, s:s, s:s, s:f, s:f, s:f, s:i, s:i, s:b}", "mode",
			"bench", "device", gpu, "module", "cand.cubin", "sizes", sizes, "seed", sh,
			"verify_seed", vh, "warmup_ms",
			o->warmup_ms > 0 ? o->warmup_ms : BENCH_DEFAULT_WARMUP_MS, "budget_ms",
			o->budget_ms > 0 ? o->budget_ms : BENCH_DEFAULT_BUDGET_MS, "target_rel_se",
			o->target_rel_se > 0 ? o->target_rel_se : BENCH_DEFAULT_TARGET, "min_reps",
			10, "max_reps", 10000, "flush_l2", !o->no_flush);
		unsigned to = o->timeout_ms ? o->timeout_ms : bench_timeout(o, &r->b, c->have_base);
		json_object_set_new(job, "row_timeout_ms", json_integer(to));
		if (c->have_base)
			json_object_set_new(job, "baseline_module", json_string("base.mod"));
		struct kf_err e = {0};
		double t0 = check_now_ms();
		/* The harness's watchdog ends a hang at `to` and says so; the
		 * jail's limit is the backstop. */
		r->rc = check_harness_exec(c->env, r->dir, job, to + 15000u, stop, &r->rep, NULL,
					   &e);
		check_phases_add_run(c->phases, r->rep, check_now_ms() - t0);
		snprintf(r->err, sizeof r->err, "%s", e.msg);
		const json_t *line = json_array_get(json_object_get(r->rep, "rows"), 0);
		if (r->rc == KF_ETIMEOUT || json_is_true(json_object_get(line, "timeout"))) {
			r->rc = KF_ETIMEOUT;
			snprintf(r->err, sizeof r->err,
				 "the kernel did not finish within %u ms: the harness was killed",
				 to);
		}
		json_decref(job);
		if (r->rc == KF_ECANCELED || r->rc == KF_ESANDBOX || r->rc == KF_ENOTFOUND)
			return kf_err_set(err, r->rc, "%s", e.msg);
		if (r->rc == KF_ETIMEOUT)
			bench_not_run_after(c, i, 0);
		/* After a hang of the reference, later rows have its reason. */
		if (s->ref.kind == SPEC_REF_CUDA && !r->rc && !r->ref_rc &&
		    bench_ref_run(c, r, gpu, vh, to, stop))
			bench_not_run_after(c, i, 1);
		if (r->ref_rc == KF_ECANCELED)
			return kf_err_set(err, r->ref_rc, "%s", r->ref_err);
	}
	return 0;
}

static void bench_progress(void *arg, const struct runner_progress *p)
{
	const struct bench_opts *o = arg;
	if (o->progress)
		o->progress(o->progress_arg, p->progress, 0, p->message);
}

static int samples(const json_t *arr, double **out, size_t *n)
{
	*n = json_array_size(arr);
	*out = malloc((*n ? *n : 1) * sizeof **out);
	if (!*out)
		return KF_ENOMEM;
	for (size_t i = 0; i < *n; i++)
		(*out)[i] = json_number_value(json_array_get(arr, i));
	return 0;
}

/* Peaks for the GPU the job ran on. */
static void find_peaks(struct check_env *env, int gpu, enum kf_dtype dt, struct bench_peaks *pk)
{
	memset(pk, 0, sizeof *pk);
	const struct gpu_info *gi = gpu_get(gpu);
	if (!gi)
		return;
	const struct kb_gpu *kg = NULL;
	struct kb_peaks kp;
	if (env->kb &&
	    kb_gpu_match_device(env->kb, gi->name, gi->cc_major, gi->cc_minor, gi->sm_count,
				(unsigned long long)gi->total_mem_bytes, &kg, NULL) == 0 &&
	    kb_gpu_peaks(env->kb, kg->id, &kp, NULL) == 0) {
		snprintf(pk->gpu_id, sizeof pk->gpu_id, "%s", kg->id);
		if (kp.mem_bw_gbs.known)
			pk->bw_gbs = kp.mem_bw_gbs.value;
		/* Tensor-core peak for 16-bit types (the highest a kernel could
		 * reach), CUDA-core FP32 otherwise. */
		if ((dt == KF_DT_BF16 || dt == KF_DT_F16) && kp.bf16_tflops.known) {
			pk->tflops = kp.bf16_tflops.value;
			pk->tflops_kind = "bf16/f16 tensor, dense";
		} else if (dt == KF_DT_F64 && kp.fp64_tflops.known) {
			pk->tflops = kp.fp64_tflops.value;
			pk->tflops_kind = "fp64";
		} else if (kp.fp32_tflops.known) {
			pk->tflops = kp.fp32_tflops.value;
			pk->tflops_kind = "fp32 (CUDA cores)";
		}
	}
	if (env->history &&
	    history_get_ceilings_of(env->history, gi->uuid, gi->name, &pk->ceil, NULL) == 0)
		pk->have_ceil = 1;
}

static enum kf_dtype main_dtype(const struct spec *s)
{
	for (size_t t = 0; t < s->tensors_len; t++)
		if (s->tensors[t].role != SPEC_ROLE_INPUT)
			return s->tensors[t].dtype;
	return KF_DT_F32;
}

void bench_result_fini(struct bench_result *res)
{
	if (!res)
		return;
	compile_result_fini(&res->compile_failed.compile);
	for (size_t i = 0; res->sizes && i < res->sizes_len; i++) {
		check_run_fini(&res->sizes[i].failure);
		check_run_fini(&res->sizes[i].verification);
	}
	free(res->sizes);
	memset(res, 0, sizeof *res);
	res->fail_size = -1;
}

static int check_bench_opts(const struct bench_opts *o, struct kf_err *err)
{
	if (o->target_rel_se < 0 || o->target_rel_se > 0.5)
		return kf_err_set(err, KF_EINVAL, "target_rel_se: must be in (0, 0.5]");
	if (o->budget_ms < 0 || (o->budget_ms > 0 && (o->budget_ms < 10 || o->budget_ms > 60000)))
		return kf_err_set(err, KF_EINVAL, "budget_ms: must be in [10, 60000]");
	if (o->warmup_ms < 0 || o->warmup_ms > 10000)
		return kf_err_set(err, KF_EINVAL, "warmup_ms: must be in [0, 10000]");
	return 0;
}

/* The rows to time (every size, or the one asked for), each bound, with
 * seeds and its own job directory holding the modules. */
static int plan_bench_rows(struct check_env *env, const struct bench_opts *o,
			   const struct check_prep *p, int have_base, struct brow **rows,
			   size_t *nrows, struct kf_err *err)
{
	const struct spec *s = p->s;
	if (o->size_index >= (int)s->sizes_len)
		return kf_err_set(err, KF_EINVAL, "size: index %d, the spec has %zu sizes",
				  o->size_index, s->sizes_len);
	*rows = calloc(s->sizes_len, sizeof **rows);
	if (!*rows)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	for (size_t r = 0; r < s->sizes_len; r++) {
		if (o->size_index >= 0 && (size_t)o->size_index != r)
			continue;
		struct brow *b = &(*rows)[(*nrows)++];
		memcpy(b->vals, &s->sizes[r * s->vars_len], s->vars_len * sizeof(int64_t));
		b->seed = check_new_seed();
		b->vseed = check_new_seed();
		char where[32];
		snprintf(where, sizeof where, "sizes[%zu]", r);
		int rc;
		if ((rc = spec_bind(s, b->vals, NULL, where, &b->b, err)) ||
		    (rc = check_jobdir_new(env, s, b->dir, sizeof b->dir, err)) ||
		    (rc = check_copy_file(p->cand_cubin, b->dir, "cand.cubin", err)) ||
		    (have_base &&
		     (rc = check_copy_file(p->base_module, b->dir, "base.mod", err))) ||
		    (s->ref.kind == SPEC_REF_CUDA &&
		     (rc = check_copy_file(p->ref_cubin, b->dir, "ref.cubin", err))))
			return rc;
	}
	return 0;
}

/* A row without timing samples: which safeguard fired. */
static void bench_untimed(const struct brow *r, struct bench_size *out, struct check_fired *fired)
{
	const json_t *f = r->rep ? json_object_get(r->rep, "fault") : NULL;
	const char *e = json_string_value(json_object_get(r->rep, "error"));
	if (r->not_run)
		check_fire(&out->failure, fired, "not_run", "%s", r->err);
	else if (r->rc)
		check_fire(&out->failure, fired, r->rc == KF_ETIMEOUT ? "timeout" : "crash", "%s",
			   r->err);
	else if (f)
		check_fire(&out->failure, fired, "fault", "%s during %s: %s",
			   json_string_value(json_object_get(f, "error")),
			   json_string_value(json_object_get(f, "during")),
			   json_string_value(json_object_get(f, "message")));
	else
		check_fire(&out->failure, fired, "harness_error", "%s",
			   e ? e : "no timing samples");
}

/* Statistics of the candidate (and the baseline when it ran), the
 * baseline_unavailable flag. */
static int bench_stats(const struct brow *r, struct bench_size *out, struct check_flags *flags,
		       struct kf_err *err)
{
	double *cs = NULL, *bs = NULL;
	size_t cn = 0, bn = 0;
	if (samples(json_object_get(r->rep, "candidate_ms"), &cs, &cn) ||
	    stats_summarize(cs, cn, &out->candidate, err)) {
		free(cs);
		return kf_err_set(err, KF_EINTERNAL, "bad timing samples from the harness");
	}
	free(cs);
	const char *stop = json_string_value(json_object_get(r->rep, "stop"));
	if (stop) {
		out->has_stop = 1;
		snprintf(out->stop, sizeof out->stop, "%s", stop);
	}
	const json_t *be = json_object_get(r->rep, "baseline_error");
	if (be) {
		const char *e = json_string_value(json_object_get(be, "error"));
		const char *d = json_string_value(json_object_get(be, "during"));
		check_flag_set(flags, "baseline_unavailable", 0,
			       "the baseline could not be loaded (%s during %s); the candidate "
			       "was timed alone",
			       e ? e : "error", d ? d : "loading");
	}
	if (json_object_get(r->rep, "baseline_ms") &&
	    !samples(json_object_get(r->rep, "baseline_ms"), &bs, &bn) &&
	    !stats_summarize(bs, bn, &out->baseline, NULL)) {
		stats_speedup(&out->candidate, &out->baseline, &out->speedup);
		out->has_baseline = 1;
	}
	free(bs);
	return 0;
}

/* Bytes, FLOPs and the roofline for the candidate's median; the
 * below_floor flag. */
static int bench_roofline(const struct spec *s, const struct brow *r, const struct bench_peaks *pk,
			  const char *st, struct bench_size *out, struct check_flags *flags,
			  struct kf_err *err)
{
	double ceil_bw = pk->have_ceil ? pk->ceil.copy_gbps : 0;
	double ceil_fl = 0;
	if (pk->have_ceil) {
		enum kf_dtype dt = main_dtype(s);
		ceil_fl = (dt == KF_DT_BF16 || dt == KF_DT_F16) ? pk->ceil.bf16_tflops
								: pk->ceil.fp32_tflops;
	}
	struct stats_roofline *rf = &out->roofline;
	if (stats_roofline(r->b.cost_bytes, r->b.cost_flops, out->candidate.median, pk->bw_gbs,
			   pk->tflops, rf, err))
		return KF_EINTERNAL;
	out->bytes = r->b.cost_bytes;
	out->bytes_from_cost = s->cost_bytes != NULL;
	out->flops = r->b.cost_flops;
	out->has_pct_copy = ceil_bw > 0;
	out->pct_copy = ceil_bw > 0 ? 100.0 * rf->gbs / ceil_bw : 0;
	out->has_pct_matmul = ceil_fl > 0 && rf->tflops >= 0;
	out->pct_matmul = out->has_pct_matmul ? 100.0 * rf->tflops / ceil_fl : 0;
	if (rf->below_floor)
		check_flag_set(flags, "below_floor", 1,
			       "%s: median %.2f us is below the roofline floor "
			       "%.2f us: impossible unless the kernel skips work "
			       "or cost overstates the bytes/FLOPs",
			       st, out->candidate.median * 1e3, rf->floor_ms * 1e3);
	return 0;
}

/* Judges the run after timing against the reference. */
static void bench_verify(struct check_env *env, const struct spec *s, const struct bench_opts *o,
			 struct brow *r, struct bench_size *out, struct bench_result *res)
{
	double *want[SPEC_MAX_TENSORS] = {0};
	struct kf_err we = {0};
	int have_want = 0;
	double t0 = check_now_ms();
	if (s->ref.kind == SPEC_REF_NONE) {
		kf_err_set(&we, KF_EINVAL, "the spec has no reference");
	} else if (s->ref.kind == SPEC_REF_CUDA &&
		   (r->ref_rc || !r->ref || json_object_get(r->ref, "fault"))) {
		kf_err_set(&we, KF_EFAULT, "the CUDA reference failed: %s",
			   r->ref_rc ? r->ref_err : "fault");
	} else {
		int trc = 0;
		if (s->ref.kind == SPEC_REF_TORCH)
			trc = check_torch_reference(env, s, r->dir, r->vals, &r->b, &r->vseed, 1,
						    o->cancel, &res->phases, &we);
		if (!trc)
			have_want = check_reference_want(s, r->dir, "ref", r->vals, &r->b, 0,
							 r->vseed, want, &we) == 0;
	}
	double mr = 0;
	const json_t *vrep = json_object_get(r->rep, "verify");
	double t1 = check_now_ms();
	res->phases.reference_ms += t1 - t0;
	int vpass = check_judge_run(s, r->dir, &r->b, vrep, have_want ? want : NULL,
				    &out->verification, &res->fired, &res->flags, &mr);
	res->phases.compare_ms += check_now_ms() - t1;
	for (size_t t = 0; t < SPEC_MAX_TENSORS; t++)
		free(want[t]);
	out->compared = have_want;
	if (!have_want) {
		snprintf(out->not_compared, sizeof out->not_compared, "%s", we.msg);
		if (s->ref.kind != SPEC_REF_NONE)
			vpass = 0;
	}
	out->verified = vpass;
	out->verify_seed = r->vseed;
}

/* Judges row i of the benchmark into res->sizes[i]. */
static int bench_row(struct check_env *env, const struct spec *s, const struct bench_opts *o,
		     struct brow *r, const struct bench_peaks *pk, struct bench_size *out,
		     struct bench_result *res, struct kf_err *err)
{
	memcpy(out->vals, r->vals, sizeof out->vals);
	if (r->rc || !r->rep || json_object_get(r->rep, "fault") ||
	    json_object_get(r->rep, "error") || !json_object_get(r->rep, "candidate_ms")) {
		bench_untimed(r, out, &res->fired);
		return out->failure.nomem ? kf_err_set(err, KF_ENOMEM, "out of memory") : 0;
	}
	out->timed = 1;
	char st[160] = "";
	size_t n = 0;
	for (size_t k = 0; k < s->vars_len && n < sizeof st; k++)
		n += (size_t)snprintf(st + n, sizeof st - n, "%s%s=%" PRId64, k ? "," : "",
				      s->vars[k], r->vals[k]);
	int rc;
	if ((rc = bench_stats(r, out, &res->flags, err)) ||
	    (rc = bench_roofline(s, r, pk, st, out, &res->flags, err)))
		return rc;
	bench_verify(env, s, o, r, out, res);
	if (out->verification.nomem)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	return 0;
}

/* The method as run and what the answer names besides the sizes. */
static void describe_bench(const struct check_prep *p, const struct bench_opts *o, int have_base,
			   struct bench_result *res)
{
	const struct spec *s = p->s;
	res->vars_len = s->vars_len;
	for (size_t k = 0; k < s->vars_len; k++)
		snprintf(res->vars[k], sizeof res->vars[k], "%s", s->vars[k]);
	snprintf(res->kernel, sizeof res->kernel, "%s", s->launch[0].kernel);
	res->have_base = have_base;
	res->baseline = s->baseline.kind;
	res->warmup_ms = o->warmup_ms > 0 ? o->warmup_ms : BENCH_DEFAULT_WARMUP_MS;
	res->budget_ms = o->budget_ms > 0 ? o->budget_ms : BENCH_DEFAULT_BUDGET_MS;
	res->target_rel_se = o->target_rel_se > 0 ? o->target_rel_se : BENCH_DEFAULT_TARGET;
	res->flushed = !o->no_flush;
}

int bench_kernel(struct check_env *env, const json_t *spec, const struct bench_opts *o,
		 struct bench_result *res, int *gpu, struct kf_err *err)
{
	memset(res, 0, sizeof *res);
	res->fail_size = -1;
	*gpu = -1;
	struct check_prep p;
	struct brow *rows = NULL;
	size_t nrows = 0;
	int rc = check_bench_opts(o, err);
	if (rc)
		return rc;
	double t0 = check_now_ms();
	rc = check_prepare(env, spec, !o->no_baseline, o->cancel, &p, &res->compile_failed, err);
	res->phases.compile_ms = check_now_ms() - t0;
	if (rc) {
		if (rc == KF_ECOMPILE)
			res->answer = CHECK_ANSWER_COMPILE;
		goto out;
	}
	const struct spec *s = p.s;
	int have_base = !o->no_baseline && p.base_module[0];
	if ((rc = plan_bench_rows(env, o, &p, have_base, &rows, &nrows, err)))
		goto out;
	struct bctx c = {.env = env,
			 .p = &p,
			 .rows = rows,
			 .nrows = nrows,
			 .o = o,
			 .gpu = -1,
			 .have_base = have_base,
			 .phases = &res->phases};
	char label[RUNNER_LABEL_BYTES];
	snprintf(label, sizeof label, "bench %s", s->launch[0].kernel);
	struct runner_opts ro = {.timeout_ms = -1, .label = label};
	c.queued_ms = check_now_ms();
	rc = runner_run(env->runner, RUNNER_GPU, bench_job, &c, bench_progress, (void *)o,
			o->cancel, &ro, err);
	*gpu = c.gpu;
	if (rc)
		goto out;
	find_peaks(env, c.gpu, main_dtype(s), &res->peak);
	res->sizes = calloc(nrows, sizeof *res->sizes);
	if (!res->sizes) {
		rc = kf_err_set(err, KF_ENOMEM, "out of memory");
		goto out;
	}
	res->sizes_len = nrows;
	res->passed = 1;
	for (size_t i = 0; i < nrows; i++) {
		struct bench_size *bs = &res->sizes[i];
		if ((rc = bench_row(env, s, o, &rows[i], &res->peak, bs, res, err)))
			goto out;
		if (!bs->verified) {
			res->passed = 0;
			if (res->fail_size < 0)
				res->fail_size = (int)i;
		}
	}
	describe_bench(&p, o, have_base, res);
	check_device_read(rows[0].rep ? json_object_get(rows[0].rep, "device") : NULL,
			  &res->device);
	res->answer = CHECK_ANSWER_VERDICT;
	if (!res->passed)
		rc = KF_EFAULT;
out:
	for (size_t i = 0; rows && i < nrows; i++) {
		json_decref(rows[i].rep);
		json_decref(rows[i].ref);
		check_jobdir_remove(rows[i].dir);
	}
	free(rows);
	check_prep_fini(&p);
	return rc;
}

/* --- calibrate ----------------------------------------------------------- */

struct cctx {
	struct check_env *env;
	char dir[PATH_MAX];
	json_t *rep;
	int gpu;
};

static int calib_job(void *arg, int gpu, const volatile int *stop, struct kf_err *err)
{
	struct cctx *c = arg;
	c->gpu = gpu;
	const char *home = getenv("CUDA_HOME") ? getenv("CUDA_HOME") : "/usr/local/cuda";
	json_t *job =
		json_pack("{s:s, s:i, s:s}", "mode", "calibrate", "device", gpu, "cuda_home", home);
	int rc = check_harness_exec(c->env, c->dir, job, 300000, stop, &c->rep, NULL, err);
	json_decref(job);
	return rc;
}

void bench_calibration_fini(struct bench_calibration *c)
{
	if (!c)
		return;
	json_decref(c->cublas);
	memset(c, 0, sizeof *c);
}

int bench_calibrate(struct check_env *env, int device, const volatile int *cancel,
		    struct bench_calibration *out, int *gpu, struct kf_err *err)
{
	memset(out, 0, sizeof *out);
	*gpu = -1;
	if (gpu_count() <= 0)
		return kf_err_set(err, KF_ENOGPU, "no usable GPU: %s", gpu_no_gpu_reason());
	struct cctx c = {.env = env, .gpu = -1};
	int rc = check_jobdir_new(env, NULL, c.dir, sizeof c.dir, err);
	if (rc)
		return rc;
	struct runner_opts ro = {
		.pin_gpu = device >= 0, .gpu = device, .timeout_ms = -1, .label = "calibrate"};
	rc = runner_run(env->runner, RUNNER_GPU, calib_job, &c, NULL, NULL, cancel, &ro, err);
	*gpu = c.gpu;
	if (rc)
		goto out;
	if (json_object_get(c.rep, "fault") || !json_object_get(c.rep, "copy_gbps")) {
		const json_t *f = json_object_get(c.rep, "fault");
		rc = kf_err_set(err, KF_EFAULT, "calibration failed: %s",
				f ? json_string_value(json_object_get(f, "message"))
				: json_string_value(json_object_get(c.rep, "error"))
					? json_string_value(json_object_get(c.rep, "error"))
					: "no figures");
		goto out;
	}
	const struct gpu_info *gi = gpu_get(c.gpu);
	struct history_ceilings *hc = &out->ceil;
	snprintf(hc->gpu_uuid, sizeof hc->gpu_uuid, "%s", gi ? gi->uuid : "");
	snprintf(hc->device_name, sizeof hc->device_name, "%s", gi ? gi->name : "");
	hc->copy_gbps = json_number_value(json_object_get(c.rep, "copy_gbps"));
	hc->bf16_tflops = json_number_value(json_object_get(c.rep, "bf16_tflops"));
	hc->fp32_tflops = json_number_value(json_object_get(c.rep, "fp32_tflops"));
	snprintf(hc->method, sizeof hc->method, "%s",
		 json_string_value(json_object_get(c.rep, "method"))
			 ? json_string_value(json_object_get(c.rep, "method"))
			 : "");
	if (env->history && (rc = history_set_ceilings(env->history, hc, err)))
		goto out;
	if (json_object_get(c.rep, "cublas"))
		out->cublas = json_incref(json_object_get(c.rep, "cublas"));
out:
	json_decref(c.rep);
	check_jobdir_remove(c.dir);
	return rc;
}
