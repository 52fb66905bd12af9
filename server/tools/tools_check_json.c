/* tools_check_json: check_kernel's and benchmark_kernel's answers written
 * from the result structs of sandbox/check (check.h, bench.h): the JSON
 * and the one-line summary. The domain decides; this file only words and
 * shapes what it decided. See tools_check_int.h. */
#include "server/tools/tools_check_int.h"
#include "server/tools/tools_compile_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* "N=4097, D=512" (sep ", ") or "N=4097,D=512" (sep ","). */
static void sizes_text(const char (*vars)[SPEC_NAME_MAX + 1], size_t vars_len, const int64_t *vals,
		       const char *sep, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = 0;
	for (size_t k = 0; k < vars_len && n < cap; k++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%s=%" PRId64, k ? sep : "", vars[k],
				      vals[k]);
}

static json_t *sizes_obj(const char (*vars)[SPEC_NAME_MAX + 1], size_t vars_len,
			 const int64_t *vals)
{
	json_t *o = json_object();
	for (size_t k = 0; k < vars_len; k++)
		json_object_set_new(o, vars[k], json_integer(vals[k]));
	return o;
}

static void hex_seed(uint64_t seed, char *buf, size_t cap)
{
	snprintf(buf, cap, "%016" PRIx64, seed);
}

/* A phase time: ms rounded to the microsecond (what the clocks resolve
 * usefully; the rest is noise in an answer meant to be read). */
static json_t *ms_json(double ms)
{
	return json_real(round(ms * 1e3) / 1e3);
}

static json_t *phases_json(const struct check_phases *ph)
{
	const struct {
		const char *name;
		double ms;
	} P[] = {
		{"compile_ms", ph->compile_ms},
		{"queue_wait_ms", ph->queue_wait_ms},
		{"harness_start_ms", ph->harness_start_ms},
		{"module_load_ms", ph->module_load_ms},
		{"upload_ms", ph->upload_ms},
		{"kernel_runs_ms", ph->kernel_runs_ms},
		{"download_ms", ph->download_ms},
		{"reference_ms", ph->reference_ms},
		{"compare_ms", ph->compare_ms},
	};
	json_t *o = json_object();
	for (size_t i = 0; i < sizeof P / sizeof P[0]; i++)
		json_object_set_new(o, P[i].name, ms_json(P[i].ms));
	/* Not a phase: which torch reference jobs a warm worker served, and
	 * the worker starts (python3, import torch) inside reference_ms. */
	if (ph->torch_runs)
		json_object_set_new(o, "torch_reference",
				    json_pack("{s:i, s:i, s:o}", "runs", (int)ph->torch_runs,
					      "warm", (int)ph->torch_warm, "worker_start_ms",
					      ms_json(ph->torch_start_ms)));
	json_object_set_new(o, "harness_runs", json_integer(ph->harness_runs));
	json_object_set_new(o, "harness_spares", json_integer(ph->harness_spares));
	return o;
}

void tools_check_phases_finish(json_t *answer, double history_write_ms, double total_ms)
{
	json_t *ph = json_object_get(answer, "phases");
	if (!json_is_object(ph))
		return;
	json_object_set_new(ph, "history_write_ms", ms_json(history_write_ms));
	json_object_set_new(ph, "total_ms", ms_json(total_ms));
}

static json_t *compile_failure_json(const struct check_compile_failure *cf,
				    const struct check_phases *ph)
{
	char sum[600] = "", msg[400];
	if (cf->compile.report)
		compile_summary(&cf->compile, sum, sizeof sum);
	snprintf(msg, sizeof msg, "%s did not compile: %s", cf->what, sum[0] ? sum : cf->message);
	json_t *answer = tools_compile_json(&cf->compile);
	return json_pack("{s:s, s:b, s:s, s:o, s:o}", "summary", msg, "passed", 0, "failed_stage",
			 "compile", "compile", answer ? answer : json_null(), "phases",
			 phases_json(ph));
}

static json_t *safeguards_json(const struct check_run *run)
{
	json_t *sg = json_array();
	for (size_t i = 0; i < run->safeguards_len; i++)
		json_array_append_new(sg, json_pack("{s:s, s:s}", "name", run->safeguards[i].name,
						    "message", run->safeguards[i].message));
	return sg;
}

static json_t *output_json(const struct check_output *o)
{
	json_t *fm = json_array();
	for (size_t q = 0; q < o->first_len; q++) {
		const struct check_mismatch *m = &o->first[q];
		json_t *e = json_pack("{s:s, s:f, s:f}", "at", m->at, "got",
				      isfinite(m->got) ? m->got : 0.0, "want", m->want);
		if (e && !isfinite(m->got))
			json_object_set_new(e, "got",
					    json_string(isnan(m->got) ? "NaN"
							: m->got > 0  ? "Inf"
								      : "-Inf"));
		json_array_append_new(fm, e);
	}
	return json_pack("{s:f, s:f, s:f, s:I, s:I, s:I, s:o}", "max_abs_err", o->max_abs,
			 "max_rel_err", o->max_rel, "rel_l2_err",
			 isfinite(o->rel_l2) ? o->rel_l2 : 1e308, "mismatches",
			 (json_int_t)o->mismatches, "nonfinite", (json_int_t)o->nonfinite,
			 "elements", (json_int_t)o->elements, "first_mismatches", fm);
}

/* Adds a run's verdict to obj: safeguards (when any fired or the judge
 * ran), the judge's per-output errors, passed. */
static void run_into(const struct check_run *run, json_t *obj)
{
	if (run->judged || run->safeguards_len)
		json_object_set_new(obj, "safeguards", safeguards_json(run));
	if (run->judged) {
		json_t *outs = json_object();
		for (size_t i = 0; i < run->outputs_len; i++)
			json_object_set_new(outs, run->outputs[i].name,
					    output_json(&run->outputs[i]));
		json_object_set_new(obj, "outputs", outs);
	}
	json_object_set_new(obj, "passed", json_boolean(run->passed));
}

static json_t *fired_json(const struct check_fired *fired)
{
	json_t *fl = json_array();
	for (size_t i = 0; i < fired->len; i++)
		json_array_append_new(fl, json_string(fired->name[i]));
	return fl;
}

static json_t *flags_json(const struct check_flags *flags)
{
	json_t *o = json_object();
	for (size_t i = 0; i < flags->len; i++)
		json_object_set_new(o, flags->f[i].name, json_string(flags->f[i].message));
	return o;
}

static json_t *device_json(const struct check_device *d)
{
	return json_pack("{s:i, s:s, s:i, s:i, s:I}", "index", d->index, "name", d->name,
			 "cc_major", d->cc_major, "cc_minor", d->cc_minor, "l2_bytes",
			 (json_int_t)d->l2_bytes);
}

/* --- check_kernel ---------------------------------------------------------- */

static json_t *check_size_json(const struct check_result *res, const struct check_size *sz)
{
	json_t *rj = json_object(), *trs = json_array();
	json_object_set_new(rj, "sizes", sizes_obj(res->vars, res->vars_len, sz->vals));
	json_object_set_new(rj, "odd_size", json_boolean(sz->odd));
	json_object_set_new(rj, "trials", trs);
	for (int k = 0; k < sz->ntrials; k++) {
		const struct check_trial *t = &sz->trials[k];
		char hex[20];
		hex_seed(t->seed, hex, sizeof hex);
		json_t *tj = json_pack("{s:i, s:s}", "trial", t->trial, "seed", hex);
		run_into(&t->run, tj);
		if (t->has_kernel_ms)
			json_object_set_new(tj, "kernel_ms", json_real(t->kernel_ms));
		json_array_append_new(trs, tj);
	}
	json_object_set_new(rj, "passed", json_boolean(sz->passed));
	return rj;
}

/* The first safeguard of run that is a failure (not a hint), or "". */
static const char *first_failure(const struct check_run *run)
{
	for (size_t i = 0; i < run->safeguards_len; i++)
		if (strcmp(run->safeguards[i].name, "precision_hint") != 0)
			return run->safeguards[i].message;
	return "";
}

static void check_summary(const struct check_result *res, char *summary, size_t cap)
{
	const char(*vars)[SPEC_NAME_MAX + 1] = res->vars;
	if (res->passed) {
		char odd[160] = "";
		int ntr = 0;
		for (size_t i = 0; i < res->sizes_len; i++) {
			ntr += res->sizes[i].ntrials;
			if (res->sizes[i].odd) {
				char st[140];
				sizes_text(vars, res->vars_len, res->sizes[i].vals, ", ", st,
					   sizeof st);
				snprintf(odd, sizeof odd, " incl. odd size %s", st);
			}
		}
		const char *weak = check_flag_get(&res->flags, "weak_reference");
		snprintf(summary, cap, "passed: %zu sizes%s, %d runs in all; max rel err %.2e%s%s",
			 res->sizes_len, odd, ntr, res->max_rel, weak ? "; WARNING: " : "",
			 weak ? weak : "");
		return;
	}
	char first_fail[600] = "";
	int listed_pass = 1, odd_fail = 0;
	for (size_t i = 0; i < res->sizes_len; i++)
		if (!res->sizes[i].passed) {
			if (res->sizes[i].odd)
				odd_fail = 1;
			else
				listed_pass = 0;
		}
	if (res->fail_size >= 0) {
		const struct check_size *sz = &res->sizes[res->fail_size];
		char st[160];
		sizes_text(vars, res->vars_len, sz->vals, ", ", st, sizeof st);
		/* Capped: the message may be cut (its return value says so). */
		if (snprintf(first_fail, sizeof first_fail, "%s%s trial %d: %s",
			     sz->odd ? "odd size " : "", st, res->fail_trial,
			     first_failure(&sz->trials[res->fail_trial].run)) < 0)
			first_fail[0] = 0;
	}
	if (listed_pass && odd_fail)
		snprintf(summary, cap,
			 "FAILED only at the size kforge chose (%s): the kernel handles only the "
			 "sizes in the spec",
			 first_fail);
	else
		snprintf(summary, cap, "FAILED at %s", first_fail);
}

static json_t *tolerance_json(const struct check_result *res)
{
	json_t *tol = json_object();
	for (size_t i = 0; i < res->tolerance_len; i++) {
		const struct check_tolerance *t = &res->tolerance[i];
		json_object_set_new(tol, t->name,
				    json_pack("{s:f, s:f, s:s}", "atol", t->atol, "rtol", t->rtol,
					      "source",
					      t->from_spec ? "spec" : "default for the dtype"));
	}
	return tol;
}

static const char *reference_name(enum spec_ref_kind k)
{
	return k == SPEC_REF_OP	    ? "built-in op (float64 CPU)"
	       : k == SPEC_REF_CUDA ? "CUDA source (separate process)"
				    : "torch expression";
}

json_t *tools_check_json(const struct check_result *res)
{
	if (res->answer == CHECK_ANSWER_COMPILE)
		return compile_failure_json(&res->compile_failed, &res->phases);
	if (res->answer != CHECK_ANSWER_VERDICT)
		return NULL;
	char summary[900];
	check_summary(res, summary, sizeof summary);
	json_t *out = json_object(), *sizes = json_array();
	json_object_set_new(out, "summary", json_string(summary));
	json_object_set_new(out, "passed", json_boolean(res->passed));
	for (size_t i = 0; i < res->sizes_len; i++)
		json_array_append_new(sizes, check_size_json(res, &res->sizes[i]));
	json_object_set_new(out, "sizes", sizes);
	if (res->odd_note[0])
		json_object_set_new(out, "odd_size", json_string(res->odd_note));
	json_object_set_new(out, "safeguards_fired", fired_json(&res->fired));
	json_object_set_new(out, "flags", flags_json(&res->flags));
	json_object_set_new(out, "tolerance", tolerance_json(res));
	json_object_set_new(out, "reference", json_string(reference_name(res->reference)));
	json_object_set_new(out, "compile",
			    json_pack("{s:s, s:b, s:i, s:s}", "artifact_id",
				      res->compile.artifact_id, "cache_hit", res->compile.cache_hit,
				      "compile_ms", (int)res->compile.compile_ms, "arch",
				      res->compile.arch));
	if (res->device.present)
		json_object_set_new(out, "device", device_json(&res->device));
	json_object_set_new(out, "phases", phases_json(&res->phases));
	if (res->kernel_stdout)
		json_object_set_new(out, "kernel_stdout", json_string(res->kernel_stdout));
	if (!res->passed && res->fail_size >= 0) {
		const struct check_size *sz = &res->sizes[res->fail_size];
		char hex[20];
		hex_seed(sz->trials[res->fail_trial].seed, hex, sizeof hex);
		json_object_set_new(out, "replay",
				    json_pack("{s:o, s:s}", "size",
					      sizes_obj(res->vars, res->vars_len, sz->vals), "seed",
					      hex));
	}
	return out;
}

/* --- benchmark_kernel ------------------------------------------------------ */

static json_t *stats_json(const struct stats_summary *st)
{
	/* samples are in ms; report microseconds */
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:f, s:[f,f]}", "median_us",
			 st->median * 1e3, "p10_us", st->p10 * 1e3, "p90_us", st->p90 * 1e3,
			 "mean_us", st->mean * 1e3, "min_us", st->min * 1e3, "cv", st->cv, "rel_se",
			 st->rel_se, "count", (json_int_t)st->n, "se_median_us",
			 st->se_median * 1e3, "ci95_us", st->ci_lo * 1e3, st->ci_hi * 1e3);
}

/* The figures of a timed size: statistics, speedup, roofline. */
static void bench_figures_into(const struct bench_size *b, json_t *rj)
{
	const struct stats_roofline *rf = &b->roofline;
	json_object_set_new(rj, "candidate", stats_json(&b->candidate));
	if (b->has_stop)
		json_object_set_new(rj, "stop", json_string(b->stop));
	if (b->has_baseline) {
		json_object_set_new(rj, "baseline", stats_json(&b->baseline));
		json_object_set_new(rj, "speedup",
				    json_pack("{s:f, s:f, s:f, s:s}", "value", b->speedup.speedup,
					      "ci95_lo", b->speedup.lo, "ci95_hi", b->speedup.hi,
					      "verdict", stats_verdict_name(b->speedup.verdict)));
	}
	json_object_set_new(rj, "bytes", json_real(b->bytes));
	json_object_set_new(
		rj, "bytes_source",
		json_string(b->bytes_from_cost ? "cost.bytes" : "default: every tensor once"));
	if (b->flops >= 0)
		json_object_set_new(rj, "flops", json_real(b->flops));
	json_object_set_new(rj, "gbs", json_real(rf->gbs));
	if (rf->tflops >= 0)
		json_object_set_new(rj, "tflops", json_real(rf->tflops));
	if (rf->pct_bw >= 0)
		json_object_set_new(rj, "pct_of_peak_bw", json_real(rf->pct_bw));
	if (rf->pct_flops >= 0)
		json_object_set_new(rj, "pct_of_peak_flops", json_real(rf->pct_flops));
	if (b->has_pct_copy)
		json_object_set_new(rj, "pct_of_measured_copy_bw", json_real(b->pct_copy));
	if (b->has_pct_matmul)
		json_object_set_new(rj, "pct_of_measured_matmul", json_real(b->pct_matmul));
	if (rf->floor_ms > 0) {
		json_object_set_new(rj, "roofline_floor_us", json_real(rf->floor_ms * 1e3));
		json_object_set_new(rj, "bound", json_string(rf->bound));
	}
	json_object_set_new(rj, "below_floor", json_boolean(rf->below_floor));
}

static json_t *bench_size_json(const struct bench_result *res, const struct bench_size *b)
{
	json_t *rj = json_object();
	json_object_set_new(rj, "sizes", sizes_obj(res->vars, res->vars_len, b->vals));
	json_object_set_new(rj, "safeguards", safeguards_json(&b->failure));
	if (b->timed) {
		bench_figures_into(b, rj);
		json_t *vj = json_object();
		run_into(&b->verification, vj);
		if (!b->compared)
			json_object_set_new(
				vj, "note",
				json_sprintf("outputs not compared: %s", b->not_compared));
		char vh[20];
		hex_seed(b->verify_seed, vh, sizeof vh);
		json_object_set_new(vj, "seed", json_string(vh));
		json_object_set_new(rj, "verification", vj);
	}
	json_object_set_new(rj, "verified", json_boolean(b->verified));
	return rj;
}

/* The first timed size's figures in one line (+ how many more sizes). */
static void bench_headline(const struct bench_result *res, char *summary, size_t cap)
{
	summary[0] = 0;
	for (size_t i = 0; i < res->sizes_len; i++) {
		const struct bench_size *b = &res->sizes[i];
		if (!b->timed)
			continue;
		char st[160];
		sizes_text(res->vars, res->vars_len, b->vals, ",", st, sizeof st);
		size_t q = (size_t)snprintf(
			summary, cap, "%s %s: %.2f us (p10 %.2f, p90 %.2f, n=%zu), %.0f GB/s",
			res->kernel, st, b->candidate.median * 1e3, b->candidate.p10 * 1e3,
			b->candidate.p90 * 1e3, b->candidate.n, b->roofline.gbs);
		if (b->roofline.pct_bw >= 0 && q < cap)
			q += (size_t)snprintf(summary + q, cap - q, " = %.0f%% of peak",
					      b->roofline.pct_bw);
		if (b->has_baseline && q < cap)
			q += (size_t)snprintf(summary + q, cap - q,
					      "; %.3fx vs baseline [%.3f, %.3f]: %s",
					      b->speedup.speedup, b->speedup.lo, b->speedup.hi,
					      stats_verdict_name(b->speedup.verdict));
		if (res->sizes_len > 1 && q < cap)
			snprintf(summary + q, cap - q, " (+%zu more sizes)", res->sizes_len - 1);
		return;
	}
}

/* Why the first failed size failed. */
static void bench_first_bad(const struct bench_result *res, char *buf, size_t cap)
{
	buf[0] = 0;
	if (res->fail_size < 0)
		return;
	const struct bench_size *b = &res->sizes[res->fail_size];
	char st[160];
	sizes_text(res->vars, res->vars_len, b->vals, ",", st, sizeof st);
	const struct check_run *v = &b->verification;
	int n = !b->timed
			? snprintf(buf, cap, "%s: %s", st,
				   b->failure.safeguards_len ? b->failure.safeguards[0].message
							     : "")
			: snprintf(buf, cap, "%s: the run after timing failed verification: %s", st,
				   v->safeguards_len ? v->safeguards[0].message : b->not_compared);
	if (n < 0) /* capped at cap: a long message is cut */
		buf[0] = 0;
}

static json_t *peak_json(const struct bench_peaks *pk)
{
	json_t *peak = json_object();
	if (pk->gpu_id[0])
		json_object_set_new(peak, "gpu", json_string(pk->gpu_id));
	if (pk->bw_gbs > 0)
		json_object_set_new(peak, "bw_gbs", json_real(pk->bw_gbs));
	if (pk->tflops > 0) {
		json_object_set_new(peak, "tflops", json_real(pk->tflops));
		json_object_set_new(peak, "tflops_kind", json_string(pk->tflops_kind));
	}
	return peak;
}

static json_t *ceilings_json(const struct bench_peaks *pk)
{
	if (!pk->have_ceil)
		return json_string("not calibrated: run kforge calibrate");
	return json_pack("{s:f, s:f, s:f, s:s}", "copy_gbs", pk->ceil.copy_gbps, "bf16_tflops",
			 pk->ceil.bf16_tflops, "fp32_tflops", pk->ceil.fp32_tflops, "method",
			 pk->ceil.method);
}

json_t *tools_bench_json(const struct bench_result *res)
{
	if (res->answer == CHECK_ANSWER_COMPILE)
		return compile_failure_json(&res->compile_failed, &res->phases);
	if (res->answer != CHECK_ANSWER_VERDICT)
		return NULL;
	json_t *out = json_object(), *sizes = json_array();
	json_object_set_new(out, "summary", json_string(""));
	for (size_t i = 0; i < res->sizes_len; i++)
		json_array_append_new(sizes, bench_size_json(res, &res->sizes[i]));
	/* The first size's figures at the top level too (compare_runs reads
	 * result.candidate.median_us). */
	const json_t *r0 = json_array_get(sizes, 0);
	static const char *const TOP[] = {"candidate", "baseline",	 "speedup", "gbs",
					  "tflops",    "pct_of_peak_bw", NULL};
	for (const char *const *k = TOP; *k; k++)
		if (json_object_get(r0, *k))
			json_object_set(out, *k, json_object_get(r0, *k));
	json_object_set_new(out, "sizes", sizes);
	json_object_set_new(out, "safeguards_fired", fired_json(&res->fired));
	json_object_set_new(out, "flags", flags_json(&res->flags));
	json_object_set_new(out, "baseline_kind",
			    json_string(!res->have_base ? "none"
					: res->baseline == SPEC_BASE_FATBIN
						? "kforge kernels.fatbin"
						: "CUDA source"));
	json_object_set_new(out, "peak", peak_json(&res->peak));
	json_object_set_new(out, "ceilings", ceilings_json(&res->peak));
	if (res->device.present)
		json_object_set_new(out, "device", device_json(&res->device));
	json_object_set_new(
		out, "method",
		json_sprintf("CUDA events on the harness stream; warm-up %.0f ms; L2 "
			     "%s; candidate%s interleaved; until rel. SE of the "
			     "median < %.2f%% or %.0f ms",
			     res->warmup_ms,
			     res->flushed ? "flushed before each timed run" : "not flushed",
			     res->have_base ? " and baseline" : "", 100 * res->target_rel_se,
			     res->budget_ms));
	json_object_set_new(out, "phases", phases_json(&res->phases));
	if (!res->passed) {
		char bad[400], sm[900];
		bench_first_bad(res, bad, sizeof bad);
		snprintf(sm, sizeof sm, "FAILED: %s", bad);
		json_object_set_new(out, "summary", json_string(sm));
		json_object_set_new(out, "passed", json_false());
	} else {
		char summary[700];
		bench_headline(res, summary, sizeof summary);
		if (check_flag_get(&res->flags, "below_floor")) {
			size_t q = strlen(summary);
			snprintf(summary + q, sizeof summary - q,
				 "; WARNING: below the roofline floor");
		}
		json_object_set_new(out, "summary", json_string(summary));
		json_object_set_new(out, "passed", json_true());
	}
	return out;
}
