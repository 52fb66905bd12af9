/* profile: the harness's profile mode, run under Nsight Compute with
 * --profile-from-start off. The candidate (and the baseline when the job
 * has one) gets fresh inputs and a warm-up outside the profiled range,
 * under the watchdog (a hang or fault shows there, at native speed); then
 * each program's launch list runs once between cuProfilerStart and
 * cuProfilerStop, so ncu profiles exactly those launches, candidate first.
 * The report says how many launches each program put in the range. */
#include <cudaProfiler.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/harness/harness_int.h"

#define WARMUP_MIN 3 /* launch lists run before the profiled one */

/* Launches of p's list that run at this size (their "when" holds). */
static int launches_run(struct harness *h, const struct harness_prog *p)
{
	int n = 0;
	for (size_t i = 0; i < p->launch_len; i++) {
		int runs = 1;
		struct kf_err err = {0};
		if (spec_launch_runs(h->s, &p->launch[i], h->vals, &runs, &err) == 0 && runs)
			n++;
	}
	return n;
}

static int warm_up(struct harness *h, struct harness_prog *prog,
		   struct harness_buf (*bufs)[SPEC_MAX_TENSORS], int nprog, double warmup_ms)
{
	double t0 = harness_now_ms();
	int rc = 0, n = 0;
	harness_watchdog_arm(0);
	while (!rc && (n < WARMUP_MIN || harness_now_ms() - t0 < warmup_ms) && n < 100000) {
		for (int p = 0; p < nprog && !rc; p++)
			rc = harness_prog_launch(h, &prog[p], bufs[p]);
		if (!rc)
			rc = harness_sync(h, "warm-up launches");
		n++;
	}
	harness_watchdog_disarm();
	json_object_set_new(h->report, "warmup_launches", json_integer(n));
	return rc;
}

/* One profiled range per program, candidate first. */
static int profiled_runs(struct harness *h, struct harness_prog *prog,
			 struct harness_buf (*bufs)[SPEC_MAX_TENSORS], int nprog)
{
	static const char *const NAMES[] = {"candidate", "baseline"};
	json_t *arr = json_array();
	json_object_set_new(h->report, "profiled", arr);
	for (int p = 0; p < nprog; p++) {
		CUresult r = cuProfilerStart();
		if (r != CUDA_SUCCESS)
			return harness_cuda_fail(h, r, "starting the profiled range");
		int rc = harness_prog_launch(h, &prog[p], bufs[p]);
		if (!rc)
			rc = harness_sync(h, "the profiled launches");
		cuProfilerStop();
		if (rc)
			return rc;
		json_array_append_new(arr, json_pack("{s:s, s:i}", "program", NAMES[p], "launches",
						     launches_run(h, &prog[p])));
	}
	return 0;
}

int harness_mode_profile(struct harness *h)
{
	const json_t *job = h->job;
	const char *cand = json_string_value(json_object_get(job, "module"));
	const char *base = json_string_value(json_object_get(job, "baseline_module"));
	uint64_t seed;
	if (!cand || harness_parse_seed(json_object_get(job, "seed"), &seed)) {
		json_object_set_new(h->report, "error",
				    json_string("job.json: module and seed are required"));
		return KF_EINVAL;
	}
	const json_t *wm = json_object_get(job, "warmup_ms");
	double warmup_ms = json_is_number(wm) ? json_number_value(wm) : 20;
	struct harness_prog prog[2];
	struct harness_buf(*bufs)[SPEC_MAX_TENSORS] = calloc(2, sizeof *bufs);
	if (!bufs)
		return KF_ENOMEM;
	int nprog = 0, rc;
	memset(prog, 0, sizeof prog);
	harness_phase(HARNESS_PH_MODULE_LOAD);
	if ((rc = harness_prog_load(h, &prog[0], cand, h->s->launch, h->s->launch_len)))
		goto out;
	nprog = 1;
	if (base && harness_prog_load(h, &prog[1], base, h->s->baseline.launch,
				      h->s->baseline.launch_len)) {
		/* The candidate is still profiled; the daemon says why the
		 * baseline is not. */
		json_t *f = json_object_get(h->report, "fault");
		json_object_set(h->report, "baseline_error", f ? f : json_string("cannot load"));
		json_object_del(h->report, "fault");
	} else if (base) {
		nprog = 2;
	}
	harness_phase(HARNESS_PH_UPLOAD);
	for (int p = 0; p < nprog; p++)
		if ((rc = harness_bufs_alloc(h, bufs[p])) ||
		    (rc = harness_bufs_fill_inputs(h, bufs[p], seed)) ||
		    (rc = harness_bufs_canary(h, bufs[p])) ||
		    (rc = harness_bufs_poison(h, bufs[p], 0)))
			goto out;
	harness_phase(HARNESS_PH_KERNEL_RUNS);
	if ((rc = warm_up(h, prog, bufs, nprog, warmup_ms)))
		goto out;
	rc = profiled_runs(h, prog, bufs, nprog);
out:
	harness_phase(HARNESS_PH_NONE);
	if (!json_object_get(h->report, "fault"))
		for (int p = 0; p < nprog; p++) {
			harness_bufs_free(h, bufs[p]);
			harness_prog_unload(&prog[p]);
		}
	free(bufs);
	return rc;
}
