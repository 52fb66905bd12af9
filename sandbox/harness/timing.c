/* timing: the harness's benchmark mode. Candidate and baseline (when the
 * job has one) run interleaved on the harness's stream, each launch list
 * timed by CUDA events, the L2 flushed before every timed region (outside
 * it), after a warm-up by time, until the median's standard error is under
 * the target or the time budget ends. Then fresh inputs, poisoned outputs
 * and one more candidate run whose outputs the daemon checks. Raw samples
 * go to the daemon; statistics are computed there (sandbox/check/stats.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "sandbox/harness/harness_int.h"

#define BATCH	    8
#define MAX_SAMPLES 20000

struct series {
	double *ms;
	size_t len;
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Relative standard error of the median from the sorted copy: 1.2533 *
 * robust sigma (1.4826 MAD) / sqrt(n) / median. */
static double rel_se(const struct series *s)
{
	if (s->len < 3)
		return INFINITY;
	double *v = malloc(s->len * sizeof *v);
	if (!v)
		return INFINITY;
	memcpy(v, s->ms, s->len * sizeof *v);
	qsort(v, s->len, sizeof *v, cmp_double);
	double med = v[s->len / 2];
	for (size_t i = 0; i < s->len; i++)
		v[i] = fabs(v[i] - med);
	qsort(v, s->len, sizeof *v, cmp_double);
	double mad = v[s->len / 2];
	free(v);
	if (med <= 0)
		return INFINITY;
	double sigma = 1.4826 * mad;
	return 1.2533 * sigma / sqrt((double)s->len) / med;
}

static json_t *series_json(const struct series *s)
{
	json_t *a = json_array();
	for (size_t i = 0; i < s->len; i++)
		json_array_append_new(a, json_real(s->ms[i]));
	return a;
}

static double jnum(const json_t *j, const char *k, double def)
{
	const json_t *v = json_object_get(j, k);
	return json_is_number(v) ? json_number_value(v) : def;
}

/* The programs being timed (candidate, baseline) and what timing them
 * holds. */
struct bench_run {
	int nprog; /* 1, or 2 with a baseline */
	int flush; /* 1: L2 flushed before each timed launch */
	struct harness_prog prog[2];
	struct harness_buf bufs[2][SPEC_MAX_TENSORS];
	struct series ser[2];
	CUdeviceptr flushbuf;
	size_t flush_bytes;
	CUevent ev[2][BATCH][2];
};

/* Warm-up by time: clocks ramp, caches and TLBs settle, lazy module
 * loading happens here rather than in a timed launch. */
static int warm_up(struct harness *h, struct bench_run *br, double warmup_ms)
{
	double t0 = harness_now_ms();
	int warm = 0, rc = 0;
	while (harness_now_ms() - t0 < warmup_ms || warm < 3) {
		for (int p = 0; p < br->nprog && !rc; p++)
			rc = harness_prog_launch(h, &br->prog[p], br->bufs[p]);
		if (!rc)
			rc = harness_sync(h, "warm-up launches");
		if (rc)
			return rc;
		warm++;
		if (warm > 100000)
			break;
	}
	json_object_set_new(h->report, "warmup_launches", json_integer(warm));
	return 0;
}

/* One batch of timed launches per program, then their event times. */
static int time_batch(struct harness *h, struct bench_run *br, size_t *iter, uint32_t *flush_val)
{
	int rc;
	for (int b = 0; b < BATCH; b++, (*iter)++) {
		/* Alternate the order so neither always runs right after the
		 * other's flush tail. */
		for (int q = 0; q < br->nprog; q++) {
			int p = (*iter & 1) ? br->nprog - 1 - q : q;
			if (br->flush) {
				CUresult r = cuMemsetD32Async(br->flushbuf, (*flush_val)++,
							      br->flush_bytes / 4, h->stream);
				if (r != CUDA_SUCCESS)
					return harness_cuda_fail(h, r, "flushing L2");
			}
			cuEventRecord(br->ev[p][b][0], h->stream);
			if ((rc = harness_prog_launch(h, &br->prog[p], br->bufs[p])))
				return rc;
			cuEventRecord(br->ev[p][b][1], h->stream);
		}
	}
	if ((rc = harness_sync(h, "timed launches")))
		return rc;
	for (int p = 0; p < br->nprog; p++)
		for (int b = 0; b < BATCH; b++) {
			float ms = 0;
			CUresult r = cuEventElapsedTime(&ms, br->ev[p][b][0], br->ev[p][b][1]);
			if (r != CUDA_SUCCESS)
				return harness_cuda_fail(h, r, "reading event times");
			br->ser[p].ms[br->ser[p].len++] = ms;
		}
	return 0;
}

/* Timed batches until every median's relative standard error is under
 * target (after min_reps), the budget ends or max_reps; the samples and
 * why timing stopped go to the report. */
static int time_until(struct harness *h, struct bench_run *br, size_t min_reps, size_t max_reps,
		      double target, double budget_ms)
{
	double start = harness_now_ms();
	size_t iter = 0;
	uint32_t flush_val = 1;
	int stop_reason = 0; /* 1 target met, 2 budget, 3 max reps */
	while (!stop_reason) {
		int rc = time_batch(h, br, &iter, &flush_val);
		if (rc)
			return rc;
		int met = br->ser[0].len >= min_reps;
		for (int p = 0; p < br->nprog; p++)
			met = met && rel_se(&br->ser[p]) < target;
		if (met)
			stop_reason = 1;
		else if (harness_now_ms() - start > budget_ms)
			stop_reason = 2;
		else if (br->ser[0].len >= max_reps)
			stop_reason = 3;
	}
	static const char *const WHY[] = {"", "target", "budget", "max_reps"};
	json_object_set_new(h->report, "stop", json_string(WHY[stop_reason]));
	json_object_set_new(h->report, "timing_ms", json_real(harness_now_ms() - start));
	json_object_set_new(h->report, "candidate_ms", series_json(&br->ser[0]));
	if (br->nprog > 1)
		json_object_set_new(h->report, "baseline_ms", series_json(&br->ser[1]));
	json_object_set_new(h->report, "l2_flushed", json_boolean(br->flush));
	return 0;
}

/* The first indices (at most HARNESS_FIRST_MAX, ascending) of three
 * ascending index arrays together. Returns new. a, b, c: borrowed. */
static json_t *first_of(const json_t *a, const json_t *b, const json_t *c)
{
	const json_t *in[3] = {a, b, c};
	size_t at[3] = {0, 0, 0};
	json_t *out = json_array();
	while (json_array_size(out) < HARNESS_FIRST_MAX) {
		int pick = -1;
		json_int_t best = 0;
		for (int k = 0; k < 3; k++) {
			json_t *v = json_array_get(in[k], at[k]);
			if (v && (pick < 0 || json_integer_value(v) < best)) {
				pick = k;
				best = json_integer_value(v);
			}
		}
		if (pick < 0)
			break;
		at[pick]++;
		json_array_append_new(out, json_integer(best));
	}
	return out;
}

/* Downloads every output of the verification into outs (new buffers). */
static int download_outputs(struct harness *h, struct harness_buf *bufs, void **outs)
{
	int rc = 0;
	for (size_t t = 0; t < h->s->tensors_len && !rc; t++)
		if (h->s->tensors[t].role != SPEC_ROLE_INPUT)
			rc = harness_download(h, bufs, t, &outs[t]);
	return rc;
}

/* Scans output t's two verification runs, writes the first as
 * verify.<name>.bin and adds its entry to outs. An element is unwritten
 * when a run left its poison there and the runs differ (an 8-bit output
 * may hold its poison byte as a value, written the same both times). */
static int verify_output(struct harness *h, size_t t, const void *first, const void *second,
			 json_t *outs)
{
	const struct spec_tensor *T = &h->s->tensors[t];
	struct harness_scan sc;
	harness_scan_runs(T, h->b.elems[t], first, second, &sc);
	json_t *fu = first_of(sc.fu, sc.fu2, sc.fl);
	uint64_t unw = sc.unw + sc.unw2 + sc.late;
	json_decref(sc.fu);
	json_decref(sc.fu2);
	json_decref(sc.fc);
	json_decref(sc.fl);
	char file[300];
	snprintf(file, sizeof file, "verify.%s.bin", T->name);
	if (fs_write_file(file, first, h->b.bytes[t])) {
		json_decref(fu);
		json_object_set_new(h->report, "error",
				    json_string("cannot write outputs to the job directory"));
		return KF_EIO;
	}
	json_object_set_new(outs, T->name,
			    json_pack("{s:s, s:I, s:o}", "file", file, "unwritten", (json_int_t)unw,
				      "first_unwritten", fu));
	return 0;
}

/* Verification after timing: the same module (not reloaded), fresh
 * inputs (vseed), outputs poisoned with A for one run and B for a second
 * (inout tensors restored between); the daemon compares the first. */
static int verify_after(struct harness *h, struct bench_run *br, uint64_t vseed)
{
	struct harness_buf *bufs = br->bufs[0];
	json_t *v = json_object();
	json_object_set_new(h->report, "verify", v);
	json_t *guards = json_array(), *inputs = json_array(), *outs = json_object();
	json_object_set_new(v, "guard_violations", guards);
	json_object_set_new(v, "inputs_modified", inputs);
	json_object_set_new(v, "outputs", outs);
	void *first[SPEC_MAX_TENSORS] = {0}, *second[SPEC_MAX_TENSORS] = {0};
	int rc;
	harness_phase(HARNESS_PH_UPLOAD);
	if ((rc = harness_bufs_fill_inputs(h, bufs, vseed)) ||
	    (rc = harness_bufs_canary(h, bufs)) || (rc = harness_bufs_poison(h, bufs, 0)))
		goto out;
	harness_phase(HARNESS_PH_KERNEL_RUNS);
	if ((rc = harness_prog_launch(h, &br->prog[0], bufs)) ||
	    (rc = harness_sync(h, "the verification run after timing")))
		goto out;
	harness_phase(HARNESS_PH_DOWNLOAD);
	if ((rc = harness_check_guards(h, bufs, guards)) < 0 ||
	    (rc = harness_check_inputs(h, bufs, inputs)) < 0 ||
	    (rc = download_outputs(h, bufs, first)))
		goto out;
	harness_phase(HARNESS_PH_UPLOAD);
	if ((rc = harness_bufs_restore_inout(h, bufs)) || (rc = harness_bufs_poison(h, bufs, 1)))
		goto out;
	harness_phase(HARNESS_PH_KERNEL_RUNS);
	if ((rc = harness_prog_launch(h, &br->prog[0], bufs)) ||
	    (rc = harness_sync(h, "the verification run after timing")))
		goto out;
	harness_phase(HARNESS_PH_DOWNLOAD);
	if ((rc = harness_check_guards(h, bufs, guards)) < 0 ||
	    (rc = harness_check_inputs(h, bufs, inputs)) < 0 ||
	    (rc = download_outputs(h, bufs, second)))
		goto out;
	for (size_t t = 0; t < h->s->tensors_len && !rc; t++)
		if (h->s->tensors[t].role != SPEC_ROLE_INPUT)
			rc = verify_output(h, t, first[t], second[t], outs);
out:
	for (size_t t = 0; t < SPEC_MAX_TENSORS; t++) {
		free(first[t]);
		free(second[t]);
	}
	return rc;
}

/* Loads the candidate and the baseline (a baseline that cannot load, no
 * kernel of that name or another arch, is reported and the candidate is
 * still timed: loading errors do not poison the context). */
static int load_programs(struct harness *h, struct bench_run *br, const char *cand,
			 const char *base)
{
	int rc = harness_prog_load(h, &br->prog[0], cand, h->s->launch, h->s->launch_len);
	if (rc)
		return rc;
	br->nprog = 1;
	if (base && harness_prog_load(h, &br->prog[1], base, h->s->baseline.launch,
				      h->s->baseline.launch_len)) {
		json_t *f = json_object_get(h->report, "fault");
		json_object_set(h->report, "baseline_error", f ? f : json_string("cannot load"));
		json_object_del(h->report, "fault");
	} else if (base) {
		br->nprog = 2;
	}
	return 0;
}

/* Buffers and sample series per program, the L2 flush buffer (twice the
 * L2, so nothing of the previous run stays cached) and the events. */
static int bench_alloc(struct harness *h, struct bench_run *br, uint64_t seed, size_t max_reps)
{
	int rc;
	for (int p = 0; p < br->nprog; p++) {
		if ((rc = harness_bufs_alloc(h, br->bufs[p])) ||
		    (rc = harness_bufs_fill_inputs(h, br->bufs[p], seed)) ||
		    (rc = harness_bufs_canary(h, br->bufs[p])) ||
		    (rc = harness_bufs_poison(h, br->bufs[p], 0)))
			return rc;
		br->ser[p].ms = calloc(max_reps + BATCH, sizeof(double));
		if (!br->ser[p].ms)
			return harness_host_oom(h, "the timing samples",
						(max_reps + BATCH) * sizeof(double));
	}
	if (br->flush) {
		br->flush_bytes = (size_t)(h->l2_bytes > 0 ? h->l2_bytes : 64 << 20) * 2;
		br->flush_bytes = (br->flush_bytes + 255) & ~(size_t)255;
		CUresult r = cuMemAlloc(&br->flushbuf, br->flush_bytes);
		if (r != CUDA_SUCCESS)
			return harness_cuda_fail(h, r, "allocating the L2 flush buffer");
	}
	return 0;
}

int harness_mode_bench(struct harness *h)
{
	const json_t *job = h->job;
	const char *cand = json_string_value(json_object_get(job, "module"));
	const char *base = json_string_value(json_object_get(job, "baseline_module"));
	uint64_t seed, vseed;
	if (!cand || harness_parse_seed(json_object_get(job, "seed"), &seed) ||
	    harness_parse_seed(json_object_get(job, "verify_seed"), &vseed)) {
		json_object_set_new(
			h->report, "error",
			json_string("job.json: module, seed and verify_seed are required"));
		return KF_EINVAL;
	}
	double warmup_ms = jnum(job, "warmup_ms", 50);
	double budget_ms = jnum(job, "budget_ms", 1000);
	double target = jnum(job, "target_rel_se", 0.005);
	size_t min_reps = (size_t)jnum(job, "min_reps", 10);
	size_t max_reps = (size_t)jnum(job, "max_reps", 10000);
	if (max_reps > MAX_SAMPLES)
		max_reps = MAX_SAMPLES;
	struct bench_run *br = calloc(1, sizeof *br);
	if (!br)
		return harness_host_oom(h, "the benchmark's state", sizeof *br);
	br->flush = json_is_false(json_object_get(job, "flush_l2")) ? 0 : 1;
	int ev_made = 0;
	harness_phase(HARNESS_PH_MODULE_LOAD);
	int rc = load_programs(h, br, cand, base);
	if (rc)
		goto out;
	harness_phase(HARNESS_PH_UPLOAD);
	if ((rc = bench_alloc(h, br, seed, max_reps)))
		goto out;
	for (int p = 0; p < 2; p++)
		for (int b = 0; b < BATCH; b++)
			for (int k = 0; k < 2; k++)
				cuEventCreate(&br->ev[p][b][k], CU_EVENT_DEFAULT);
	ev_made = 1;
	harness_phase(HARNESS_PH_KERNEL_RUNS);
	if ((rc = warm_up(h, br, warmup_ms)) ||
	    (rc = time_until(h, br, min_reps, max_reps, target, budget_ms)))
		goto out;
	rc = verify_after(h, br, vseed);
out:
	harness_phase(HARNESS_PH_NONE);
	if (!json_object_get(h->report, "fault")) {
		if (ev_made)
			for (int p = 0; p < 2; p++)
				for (int b = 0; b < BATCH; b++)
					for (int k = 0; k < 2; k++)
						cuEventDestroy(br->ev[p][b][k]);
		if (br->flushbuf)
			cuMemFree(br->flushbuf);
		for (int p = 0; p < br->nprog; p++) {
			harness_bufs_free(h, br->bufs[p]);
			harness_prog_unload(&br->prog[p]);
		}
	}
	free(br->ser[0].ms);
	free(br->ser[1].ms);
	free(br);
	return rc;
}
