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

int h_mode_bench(struct harness *h)
{
	const json_t *job = h->job;
	const char *cand = json_string_value(json_object_get(job, "module"));
	const char *base = json_string_value(json_object_get(job, "baseline_module"));
	uint64_t seed, vseed;
	if (!cand || h_parse_seed(json_object_get(job, "seed"), &seed) ||
	    h_parse_seed(json_object_get(job, "verify_seed"), &vseed)) {
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
	int flush = json_is_false(json_object_get(job, "flush_l2")) ? 0 : 1;

	int nprog = base ? 2 : 1;
	struct hprog prog[2];
	struct hbuf bufs[2][SPEC_MAX_TENSORS];
	struct series ser[2] = {{0}};
	CUdeviceptr flushbuf = 0;
	size_t flush_bytes = 0;
	CUevent ev[2][BATCH][2];
	int ev_made = 0;
	int rc = 0;
	memset(prog, 0, sizeof prog);
	memset(bufs, 0, sizeof bufs);
	if ((rc = h_prog_load(h, &prog[0], cand, h->s->launch, h->s->launch_len)))
		return rc;
	if (base &&
	    h_prog_load(h, &prog[1], base, h->s->baseline.launch, h->s->baseline.launch_len)) {
		/* A baseline that cannot load (no kernel of that name, another
		 * arch) is reported; the candidate is still timed. Loading errors
		 * do not poison the context. */
		json_t *f = json_object_get(h->report, "fault");
		json_object_set(h->report, "baseline_error", f ? f : json_string("cannot load"));
		json_object_del(h->report, "fault");
		base = NULL;
		nprog = 1;
	}
	for (int p = 0; p < nprog; p++) {
		if ((rc = h_bufs_alloc(h, bufs[p])) ||
		    (rc = h_bufs_fill_inputs(h, bufs[p], seed)) ||
		    (rc = h_bufs_canary(h, bufs[p])) || (rc = h_bufs_poison(h, bufs[p], 0)))
			goto out;
		ser[p].ms = calloc(max_reps + BATCH, sizeof(double));
		if (!ser[p].ms) {
			rc = KF_ENOMEM;
			goto out;
		}
	}
	if (flush) {
		/* Twice the L2 so nothing of the previous run stays cached. */
		flush_bytes = (size_t)(h->l2_bytes > 0 ? h->l2_bytes : 64 << 20) * 2;
		flush_bytes = (flush_bytes + 255) & ~(size_t)255;
		CUresult r = cuMemAlloc(&flushbuf, flush_bytes);
		if (r != CUDA_SUCCESS) {
			rc = h_cuda_fail(h, r, "allocating the L2 flush buffer");
			goto out;
		}
	}
	for (int p = 0; p < 2; p++)
		for (int b = 0; b < BATCH; b++)
			for (int k = 0; k < 2; k++)
				cuEventCreate(&ev[p][b][k], CU_EVENT_DEFAULT);
	ev_made = 1;

	/* Warm-up by time: clocks ramp, caches and TLBs settle, lazy module
	 * loading happens here rather than in a timed launch. */
	double t0 = h_now_ms();
	int warm = 0;
	while (h_now_ms() - t0 < warmup_ms || warm < 3) {
		for (int p = 0; p < nprog && !rc; p++)
			rc = h_prog_launch(h, &prog[p], bufs[p]);
		if (!rc)
			rc = h_sync(h, "warm-up launches");
		if (rc)
			goto out;
		warm++;
		if (warm > 100000)
			break;
	}
	json_object_set_new(h->report, "warmup_launches", json_integer(warm));

	double start = h_now_ms();
	size_t iter = 0;
	uint32_t flush_val = 1;
	int stop_reason = 0; /* 1 target met, 2 budget, 3 max reps */
	while (!stop_reason) {
		for (int b = 0; b < BATCH; b++, iter++) {
			/* Alternate the order so neither always runs right after the
			 * other's flush tail. */
			for (int q = 0; q < nprog; q++) {
				int p = (iter & 1) ? nprog - 1 - q : q;
				if (flush) {
					CUresult r = cuMemsetD32Async(flushbuf, flush_val++,
								      flush_bytes / 4, h->stream);
					if (r != CUDA_SUCCESS) {
						rc = h_cuda_fail(h, r, "flushing L2");
						goto out;
					}
				}
				cuEventRecord(ev[p][b][0], h->stream);
				if ((rc = h_prog_launch(h, &prog[p], bufs[p])))
					goto out;
				cuEventRecord(ev[p][b][1], h->stream);
			}
		}
		if ((rc = h_sync(h, "timed launches")))
			goto out;
		for (int p = 0; p < nprog; p++)
			for (int b = 0; b < BATCH; b++) {
				float ms = 0;
				CUresult r = cuEventElapsedTime(&ms, ev[p][b][0], ev[p][b][1]);
				if (r != CUDA_SUCCESS) {
					rc = h_cuda_fail(h, r, "reading event times");
					goto out;
				}
				ser[p].ms[ser[p].len++] = ms;
			}
		int met = ser[0].len >= min_reps;
		for (int p = 0; p < nprog; p++)
			met = met && rel_se(&ser[p]) < target;
		if (met)
			stop_reason = 1;
		else if (h_now_ms() - start > budget_ms)
			stop_reason = 2;
		else if (ser[0].len >= max_reps)
			stop_reason = 3;
	}
	static const char *const WHY[] = {"", "target", "budget", "max_reps"};
	json_object_set_new(h->report, "stop", json_string(WHY[stop_reason]));
	json_object_set_new(h->report, "timing_ms", json_real(h_now_ms() - start));
	json_object_set_new(h->report, "candidate_ms", series_json(&ser[0]));
	if (nprog > 1)
		json_object_set_new(h->report, "baseline_ms", series_json(&ser[1]));
	json_object_set_new(h->report, "l2_flushed", json_boolean(flush));

	/* Verification after timing: the same module (not reloaded), fresh
	 * inputs, poisoned outputs, one run; the daemon compares. */
	{
		json_t *v = json_object();
		json_object_set_new(h->report, "verify", v);
		json_t *guards = json_array(), *inputs = json_array(), *outs = json_object();
		json_object_set_new(v, "guard_violations", guards);
		json_object_set_new(v, "inputs_modified", inputs);
		json_object_set_new(v, "outputs", outs);
		if ((rc = h_bufs_fill_inputs(h, bufs[0], vseed)) ||
		    (rc = h_bufs_canary(h, bufs[0])) || (rc = h_bufs_poison(h, bufs[0], 0)) ||
		    (rc = h_prog_launch(h, &prog[0], bufs[0])) ||
		    (rc = h_sync(h, "the verification run after timing")))
			goto out;
		if ((rc = h_check_guards(h, bufs[0], guards)) < 0 ||
		    (rc = h_check_inputs(h, bufs[0], inputs)) < 0)
			goto out;
		rc = 0;
		for (size_t t = 0; t < h->s->tensors_len; t++) {
			const struct spec_tensor *T = &h->s->tensors[t];
			if (T->role == SPEC_ROLE_INPUT)
				continue;
			void *o;
			if ((rc = h_download(h, bufs[0], t, &o)))
				goto out;
			uint64_t unw = 0;
			json_t *fu = json_array();
			for (uint64_t i = 0; i < h->b.elems[t]; i++)
				if (T->role == SPEC_ROLE_OUTPUT && h_is_poison(T->dtype, o, i, 0)) {
					if (json_array_size(fu) < 8)
						json_array_append_new(fu,
								      json_integer((json_int_t)i));
					unw++;
				}
			char file[300];
			snprintf(file, sizeof file, "verify.%s.bin", T->name);
			int wr = h_write_file(file, o, h->b.bytes[t]);
			free(o);
			if (wr) {
				json_object_set_new(
					h->report, "error",
					json_string("cannot write outputs to the job directory"));
				rc = KF_EIO;
				goto out;
			}
			json_object_set_new(outs, T->name,
					    json_pack("{s:s, s:I, s:o}", "file", file, "unwritten",
						      (json_int_t)unw, "first_unwritten", fu));
		}
	}
out:
	if (!json_object_get(h->report, "fault")) {
		if (ev_made)
			for (int p = 0; p < 2; p++)
				for (int b = 0; b < BATCH; b++)
					for (int k = 0; k < 2; k++)
						cuEventDestroy(ev[p][b][k]);
		if (flushbuf)
			cuMemFree(flushbuf);
		for (int p = 0; p < nprog; p++) {
			h_bufs_free(h, bufs[p]);
			h_prog_unload(&prog[p]);
		}
	}
	free(ser[0].ms);
	free(ser[1].ms);
	return rc;
}
