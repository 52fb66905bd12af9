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
};

struct bctx {
	struct check_env *env;
	struct check_prep *p;
	struct brow *rows;
	size_t nrows;
	const struct bench_opts *o;
	int gpu;
	int have_base;
};

static void hexseed(uint64_t v, char *buf, size_t cap)
{
	snprintf(buf, cap, "%016" PRIx64, v);
}

static int bench_job(void *arg, int gpu, const volatile int *stop, struct kf_err *err)
{
	struct bctx *c = arg;
	const struct bench_opts *o = c->o;
	c->gpu = gpu;
	const struct spec *s = c->p->s;
	for (size_t i = 0; i < c->nrows; i++) {
		struct brow *r = &c->rows[i];
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
		if (c->have_base)
			json_object_set_new(job, "baseline_module", json_string("base.mod"));
		struct kf_err e = {0};
		unsigned to = o->timeout_ms ? o->timeout_ms : 120000;
		r->rc = check_harness_exec(c->env, r->dir, job, to, stop, &r->rep, NULL, &e);
		snprintf(r->err, sizeof r->err, "%s", e.msg);
		json_decref(job);
		if (r->rc == KF_ECANCELED || r->rc == KF_ESANDBOX || r->rc == KF_ENOTFOUND)
			return kf_err_set(err, r->rc, "%s", e.msg);
		if (s->ref.kind == SPEC_REF_CUDA && !r->rc) {
			sizes = json_array();
			for (size_t k = 0; k < s->vars_len; k++)
				json_array_append_new(sizes, json_integer(r->vals[k]));
			job = json_pack(
				"{s:s, s:i, s:s, s:s, s:i, s:i, s:i, s:[{s:o, s:[s], s:s}]}",
				"mode", "check", "device", gpu, "program", "reference", "module",
				"ref.cubin", "runs", 1, "extra_launches", 0, "row_timeout_ms",
				(int)to, "rows", "sizes", sizes, "seeds", vh, "out_prefix", "ref");
			kf_err_clear(&e);
			r->ref_rc = check_harness_exec(c->env, r->dir, job, to, stop, &r->ref, NULL,
						       &e);
			snprintf(r->ref_err, sizeof r->ref_err, "%s", e.msg);
			json_decref(job);
			if (r->ref_rc == KF_ECANCELED)
				return kf_err_set(err, r->ref_rc, "%s", e.msg);
		}
	}
	return 0;
}

static void bench_progress(void *arg, const struct runner_progress *p)
{
	const struct bench_opts *o = arg;
	if (o->progress)
		o->progress(o->progress_arg, p->progress, 0, p->message);
}

static json_t *stats_json(const struct stats_summary *st)
{
	/* samples are in ms; report microseconds */
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:f, s:[f,f]}", "median_us",
			 st->median * 1e3, "p10_us", st->p10 * 1e3, "p90_us", st->p90 * 1e3,
			 "mean_us", st->mean * 1e3, "min_us", st->min * 1e3, "cv", st->cv, "rel_se",
			 st->rel_se, "count", (json_int_t)st->n, "se_median_us",
			 st->se_median * 1e3, "ci95_us", st->ci_lo * 1e3, st->ci_hi * 1e3);
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

/* Peaks for the GPU the job ran on: knowledge base (theoretical) and this
 * GPU's calibration (measured). */
struct peaks {
	double bw_gbs, tflops;
	const char *tflops_kind;
	char gpu_id[64];
	int have_ceil;
	struct history_ceilings ceil;
};

static void find_peaks(struct check_env *env, int gpu, enum kf_dtype dt, struct peaks *pk)
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
	if (env->history && history_get_ceilings(env->history, gi->uuid, &pk->ceil, NULL) == 0)
		pk->have_ceil = 1;
}

static enum kf_dtype main_dtype(const struct spec *s)
{
	for (size_t t = 0; t < s->tensors_len; t++)
		if (s->tensors[t].role != SPEC_ROLE_INPUT)
			return s->tensors[t].dtype;
	return KF_DT_F32;
}

int bench_kernel(struct check_env *env, const json_t *spec, const struct bench_opts *o,
		 json_t **out, int *gpu, struct kf_err *err)
{
	*out = NULL;
	*gpu = -1;
	struct check_prep p;
	json_t *diag = NULL, *result = NULL;
	struct brow *rows = NULL;
	size_t nrows = 0;
	int rc;
	if (o->target_rel_se < 0 || o->target_rel_se > 0.5)
		return kf_err_set(err, KF_EINVAL, "target_rel_se: must be in (0, 0.5]");
	if (o->budget_ms < 0 || (o->budget_ms > 0 && (o->budget_ms < 10 || o->budget_ms > 60000)))
		return kf_err_set(err, KF_EINVAL, "budget_ms: must be in [10, 60000]");
	if (o->warmup_ms < 0 || o->warmup_ms > 10000)
		return kf_err_set(err, KF_EINVAL, "warmup_ms: must be in [0, 10000]");
	rc = check_prepare(env, spec, !o->no_baseline, o->cancel, &p, &diag, err);
	if (rc) {
		*out = diag;
		goto out;
	}
	const struct spec *s = p.s;
	int have_base = !o->no_baseline && p.base_module[0];
	if (o->size_index >= (int)s->sizes_len) {
		rc = kf_err_set(err, KF_EINVAL, "size: index %d, the spec has %zu sizes",
				o->size_index, s->sizes_len);
		goto out;
	}
	rows = calloc(s->sizes_len, sizeof *rows);
	if (!rows) {
		rc = kf_err_set(err, KF_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t r = 0; r < s->sizes_len; r++) {
		if (o->size_index >= 0 && (size_t)o->size_index != r)
			continue;
		struct brow *b = &rows[nrows++];
		memcpy(b->vals, &s->sizes[r * s->vars_len], s->vars_len * sizeof(int64_t));
		b->seed = check_new_seed();
		b->vseed = check_new_seed();
		char where[32];
		snprintf(where, sizeof where, "sizes[%zu]", r);
		if ((rc = spec_bind(s, b->vals, NULL, where, &b->b, err)) ||
		    (rc = check_jobdir_new(env, s, b->dir, sizeof b->dir, err)) ||
		    (rc = check_copy_file(p.cand_cubin, b->dir, "cand.cubin", err)) ||
		    (have_base && (rc = check_copy_file(p.base_module, b->dir, "base.mod", err))) ||
		    (s->ref.kind == SPEC_REF_CUDA &&
		     (rc = check_copy_file(p.ref_cubin, b->dir, "ref.cubin", err))))
			goto out;
	}
	struct bctx c = {.env = env,
			 .p = &p,
			 .rows = rows,
			 .nrows = nrows,
			 .o = o,
			 .gpu = -1,
			 .have_base = have_base};
	char label[RUNNER_LABEL_BYTES];
	snprintf(label, sizeof label, "bench %s", s->launch[0].kernel);
	struct runner_opts ro = {.timeout_ms = -1, .label = label};
	rc = runner_run(env->runner, RUNNER_GPU, bench_job, &c, bench_progress, (void *)o,
			o->cancel, &ro, err);
	*gpu = c.gpu;
	if (rc)
		goto out;

	struct peaks pk;
	find_peaks(env, c.gpu, main_dtype(s), &pk);
	result = json_object();
	json_object_set_new(result, "summary", json_string(""));
	json_t *sizes_j = json_array(), *fired = json_object(), *flags = json_object();
	int all_ok = 1;
	char summary[700] = "", first_bad[400] = "";
	for (size_t i = 0; i < nrows; i++) {
		struct brow *r = &rows[i];
		json_t *rj = json_object(), *sz = json_object();
		for (size_t k = 0; k < s->vars_len; k++)
			json_object_set_new(sz, s->vars[k], json_integer(r->vals[k]));
		json_object_set_new(rj, "sizes", sz);
		json_array_append_new(sizes_j, rj);
		json_t *sg = json_array();
		json_object_set_new(rj, "safeguards", sg);
		char st[160] = "";
		size_t n = 0;
		for (size_t k = 0; k < s->vars_len && n < sizeof st; k++)
			n += (size_t)snprintf(st + n, sizeof st - n, "%s%s=%" PRId64, k ? "," : "",
					      s->vars[k], r->vals[k]);
		if (r->rc || !r->rep || json_object_get(r->rep, "fault") ||
		    json_object_get(r->rep, "error") || !json_object_get(r->rep, "candidate_ms")) {
			const json_t *f = r->rep ? json_object_get(r->rep, "fault") : NULL;
			if (r->rc)
				check_fire(sg, fired, r->rc == KF_ETIMEOUT ? "timeout" : "crash",
					   "%s", r->err);
			else if (f)
				check_fire(sg, fired, "fault", "%s during %s: %s",
					   json_string_value(json_object_get(f, "error")),
					   json_string_value(json_object_get(f, "during")),
					   json_string_value(json_object_get(f, "message")));
			else
				check_fire(sg, fired, "harness_error", "%s",
					   json_string_value(json_object_get(r->rep, "error"))
						   ? json_string_value(
							     json_object_get(r->rep, "error"))
						   : "no timing samples");
			json_object_set_new(rj, "verified", json_false());
			all_ok = 0;
			if (!first_bad[0])
				snprintf(first_bad, sizeof first_bad, "%s: %s", st,
					 json_string_value(json_object_get(json_array_get(sg, 0),
									   "message")));
			continue;
		}
		double *cs = NULL, *bs = NULL;
		size_t cn = 0, bn = 0;
		struct stats_summary cst, bst;
		if (samples(json_object_get(r->rep, "candidate_ms"), &cs, &cn) ||
		    stats_summarize(cs, cn, &cst, err)) {
			free(cs);
			rc = kf_err_set(err, KF_EINTERNAL, "bad timing samples from the harness");
			goto out;
		}
		free(cs);
		json_object_set_new(rj, "candidate", stats_json(&cst));
		json_object_set(rj, "stop", json_object_get(r->rep, "stop"));
		const json_t *be = json_object_get(r->rep, "baseline_error");
		if (be && !json_object_get(flags, "baseline_unavailable"))
			json_object_set_new(
				flags, "baseline_unavailable",
				json_sprintf(
					"the baseline could not be loaded (%s during %s); "
					"the candidate was timed alone",
					json_string_value(json_object_get(be, "error"))
						? json_string_value(json_object_get(be, "error"))
						: "error",
					json_string_value(json_object_get(be, "during"))
						? json_string_value(json_object_get(be, "during"))
						: "loading"));
		struct stats_speedup sp = {0};
		int have_sp = 0;
		if (json_object_get(r->rep, "baseline_ms") &&
		    !samples(json_object_get(r->rep, "baseline_ms"), &bs, &bn) &&
		    !stats_summarize(bs, bn, &bst, NULL)) {
			json_object_set_new(rj, "baseline", stats_json(&bst));
			stats_speedup(&cst, &bst, &sp);
			have_sp = 1;
			json_object_set_new(rj, "speedup",
					    json_pack("{s:f, s:f, s:f, s:s}", "value", sp.speedup,
						      "ci95_lo", sp.lo, "ci95_hi", sp.hi, "verdict",
						      stats_verdict_name(sp.verdict)));
		}
		free(bs);
		struct stats_roofline rf;
		double ceil_bw = pk.have_ceil ? pk.ceil.copy_gbps : 0;
		double ceil_fl = 0;
		if (pk.have_ceil) {
			enum kf_dtype dt = main_dtype(s);
			ceil_fl = (dt == KF_DT_BF16 || dt == KF_DT_F16) ? pk.ceil.bf16_tflops
									: pk.ceil.fp32_tflops;
		}
		if (stats_roofline(r->b.cost_bytes, r->b.cost_flops, cst.median, pk.bw_gbs,
				   pk.tflops, &rf, err)) {
			rc = KF_EINTERNAL;
			goto out;
		}
		json_object_set_new(rj, "bytes", json_real(r->b.cost_bytes));
		json_object_set_new(
			rj, "bytes_source",
			json_string(s->cost_bytes ? "cost.bytes" : "default: every tensor once"));
		if (r->b.cost_flops >= 0)
			json_object_set_new(rj, "flops", json_real(r->b.cost_flops));
		json_object_set_new(rj, "gbs", json_real(rf.gbs));
		if (rf.tflops >= 0)
			json_object_set_new(rj, "tflops", json_real(rf.tflops));
		if (rf.pct_bw >= 0)
			json_object_set_new(rj, "pct_of_peak_bw", json_real(rf.pct_bw));
		if (rf.pct_flops >= 0)
			json_object_set_new(rj, "pct_of_peak_flops", json_real(rf.pct_flops));
		if (ceil_bw > 0)
			json_object_set_new(rj, "pct_of_measured_copy_bw",
					    json_real(100.0 * rf.gbs / ceil_bw));
		if (ceil_fl > 0 && rf.tflops >= 0)
			json_object_set_new(rj, "pct_of_measured_matmul",
					    json_real(100.0 * rf.tflops / ceil_fl));
		if (rf.floor_ms > 0) {
			json_object_set_new(rj, "roofline_floor_us", json_real(rf.floor_ms * 1e3));
			json_object_set_new(rj, "bound", json_string(rf.bound));
		}
		json_object_set_new(rj, "below_floor", json_boolean(rf.below_floor));
		if (rf.below_floor)
			json_object_set_new(
				flags, "below_floor",
				json_sprintf("%s: median %.2f us is below the roofline floor "
					     "%.2f us: impossible unless the kernel skips work "
					     "or cost overstates the bytes/FLOPs",
					     st, cst.median * 1e3, rf.floor_ms * 1e3));
		/* Verification after timing. */
		json_t *vj = json_object();
		json_object_set_new(rj, "verification", vj);
		double *want[SPEC_MAX_TENSORS] = {0};
		struct kf_err we = {0};
		int have_want = 0;
		if (s->ref.kind == SPEC_REF_NONE) {
			kf_err_set(&we, KF_EINVAL, "the spec has no reference");
		} else if (s->ref.kind == SPEC_REF_CUDA &&
			   (r->ref_rc || !r->ref || json_object_get(r->ref, "fault"))) {
			kf_err_set(&we, KF_EFAULT, "the CUDA reference failed: %s",
				   r->ref_rc ? r->ref_err : "fault");
		} else {
			int trc = 0;
			if (s->ref.kind == SPEC_REF_TORCH)
				trc = check_torch_reference(env, s, r->dir, r->vals, &r->b,
							    &r->vseed, 1, o->cancel, &we);
			if (!trc)
				have_want = check_reference_want(s, r->dir, "ref", r->vals, &r->b,
								 0, r->vseed, want, &we) == 0;
		}
		double mr = 0;
		const json_t *vrep = json_object_get(r->rep, "verify");
		int vpass = check_judge_run(s, r->dir, &r->b, vrep, have_want ? want : NULL, vj,
					    fired, flags, &mr);
		for (size_t t = 0; t < SPEC_MAX_TENSORS; t++)
			free(want[t]);
		if (!have_want) {
			json_object_set_new(vj, "note",
					    json_sprintf("outputs not compared: %s", we.msg));
			if (s->ref.kind != SPEC_REF_NONE)
				vpass = 0;
		}
		json_object_set_new(rj, "verified", json_boolean(vpass));
		char vh[20];
		hexseed(r->vseed, vh, sizeof vh);
		json_object_set_new(vj, "seed", json_string(vh));
		if (!vpass) {
			all_ok = 0;
			if (!first_bad[0]) {
				const json_t *m =
					json_array_get(json_object_get(vj, "safeguards"), 0);
				snprintf(first_bad, sizeof first_bad,
					 "%s: the run after timing failed verification: %s", st,
					 m ? json_string_value(json_object_get(m, "message"))
					   : we.msg);
			}
		}
		if (!summary[0]) {
			size_t q = (size_t)snprintf(
				summary, sizeof summary,
				"%s %s: %.2f us (p10 %.2f, p90 %.2f, n=%zu), %.0f GB/s",
				s->launch[0].kernel, st, cst.median * 1e3, cst.p10 * 1e3,
				cst.p90 * 1e3, cst.n, rf.gbs);
			if (rf.pct_bw >= 0 && q < sizeof summary)
				q += (size_t)snprintf(summary + q, sizeof summary - q,
						      " = %.0f%% of peak", rf.pct_bw);
			if (have_sp && q < sizeof summary)
				q += (size_t)snprintf(summary + q, sizeof summary - q,
						      "; %.3fx vs baseline [%.3f, %.3f]: %s",
						      sp.speedup, sp.lo, sp.hi,
						      stats_verdict_name(sp.verdict));
			if (nrows > 1 && q < sizeof summary)
				snprintf(summary + q, sizeof summary - q, " (+%zu more sizes)",
					 nrows - 1);
		}
	}
	/* The first size's figures at the top level too (compare_runs reads
	 * result.candidate.median_us). */
	{
		const json_t *r0 = json_array_get(sizes_j, 0);
		static const char *const TOP[] = {"candidate", "baseline",	 "speedup", "gbs",
						  "tflops",    "pct_of_peak_bw", NULL};
		for (const char *const *k = TOP; *k; k++)
			if (json_object_get(r0, *k))
				json_object_set(result, *k, json_object_get(r0, *k));
	}
	json_object_set_new(result, "sizes", sizes_j);
	json_t *fl = json_array();
	const char *key;
	json_t *val;
	json_object_foreach(fired, key, val)
		json_array_append_new(fl, json_string(key));
	json_decref(fired);
	json_object_set_new(result, "safeguards_fired", fl);
	json_object_set_new(result, "flags", flags);
	json_object_set_new(result, "baseline_kind",
			    json_string(!have_base ? "none"
					: s->baseline.kind == SPEC_BASE_FATBIN
						? "kforge kernels.fatbin"
						: "CUDA source"));
	json_t *peak = json_object();
	if (pk.gpu_id[0])
		json_object_set_new(peak, "gpu", json_string(pk.gpu_id));
	if (pk.bw_gbs > 0)
		json_object_set_new(peak, "bw_gbs", json_real(pk.bw_gbs));
	if (pk.tflops > 0) {
		json_object_set_new(peak, "tflops", json_real(pk.tflops));
		json_object_set_new(peak, "tflops_kind", json_string(pk.tflops_kind));
	}
	json_object_set_new(result, "peak", peak);
	if (pk.have_ceil)
		json_object_set_new(result, "ceilings",
				    json_pack("{s:f, s:f, s:f, s:s}", "copy_gbs", pk.ceil.copy_gbps,
					      "bf16_tflops", pk.ceil.bf16_tflops, "fp32_tflops",
					      pk.ceil.fp32_tflops, "method", pk.ceil.method));
	else
		json_object_set_new(result, "ceilings",
				    json_string("not calibrated: run kforge calibrate"));
	if (rows[0].rep && json_object_get(rows[0].rep, "device"))
		json_object_set(result, "device", json_object_get(rows[0].rep, "device"));
	json_object_set_new(
		result, "method",
		json_sprintf("CUDA events on the harness stream; warm-up %.0f ms; L2 "
			     "%s; candidate%s interleaved; until rel. SE of the "
			     "median < %.2f%% or %.0f ms",
			     o->warmup_ms > 0 ? o->warmup_ms : BENCH_DEFAULT_WARMUP_MS,
			     o->no_flush ? "not flushed" : "flushed before each timed run",
			     have_base ? " and baseline" : "",
			     100 * (o->target_rel_se > 0 ? o->target_rel_se : BENCH_DEFAULT_TARGET),
			     o->budget_ms > 0 ? o->budget_ms : BENCH_DEFAULT_BUDGET_MS));
	if (!all_ok) {
		char sm[900];
		snprintf(sm, sizeof sm, "FAILED: %s", first_bad);
		json_object_set_new(result, "summary", json_string(sm));
		json_object_set_new(result, "passed", json_false());
		rc = kf_err_set(err, KF_EFAULT, "%s", sm);
	} else {
		if (json_object_get(flags, "below_floor")) {
			size_t q = strlen(summary);
			snprintf(summary + q, sizeof summary - q,
				 "; WARNING: below the roofline floor");
		}
		json_object_set_new(result, "summary", json_string(summary));
		json_object_set_new(result, "passed", json_true());
	}
	*out = result;
	result = NULL;
out:
	json_decref(result);
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

int bench_calibrate(struct check_env *env, int device, const volatile int *cancel, json_t **out,
		    int *gpu, struct kf_err *err)
{
	*out = NULL;
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
	struct history_ceilings hc = {0};
	snprintf(hc.gpu_uuid, sizeof hc.gpu_uuid, "%s", gi ? gi->uuid : "");
	snprintf(hc.device_name, sizeof hc.device_name, "%s", gi ? gi->name : "");
	hc.copy_gbps = json_number_value(json_object_get(c.rep, "copy_gbps"));
	hc.bf16_tflops = json_number_value(json_object_get(c.rep, "bf16_tflops"));
	hc.fp32_tflops = json_number_value(json_object_get(c.rep, "fp32_tflops"));
	snprintf(hc.method, sizeof hc.method, "%s",
		 json_string_value(json_object_get(c.rep, "method"))
			 ? json_string_value(json_object_get(c.rep, "method"))
			 : "");
	if (env->history && (rc = history_set_ceilings(env->history, &hc, err)))
		goto out;
	char sm[300];
	snprintf(sm, sizeof sm,
		 "calibrated %s: copy %.0f GB/s, cuBLAS bf16 %.1f TFLOP/s, fp32 %.1f TFLOP/s",
		 hc.device_name, hc.copy_gbps, hc.bf16_tflops, hc.fp32_tflops);
	*out = json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:s}", "summary", sm, "gpu",
			 hc.device_name, "uuid", hc.gpu_uuid, "copy_gbs", hc.copy_gbps,
			 "bf16_tflops", hc.bf16_tflops, "fp32_tflops", hc.fp32_tflops, "method",
			 hc.method);
	if (json_object_get(c.rep, "cublas"))
		json_object_set(*out, "cublas", json_object_get(c.rep, "cublas"));
out:
	json_decref(c.rep);
	check_jobdir_remove(c.dir);
	return rc;
}
