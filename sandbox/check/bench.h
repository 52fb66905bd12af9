/* bench: benchmark_kernel and calibrate on the daemon side (DESIGN.md "What
 * a benchmark does"). Compiles through check_prepare, runs kforge-harness in
 * benchmark mode (candidate and baseline interleaved, events, L2 flushed,
 * until the standard-error target or the time budget) on a GPU from the
 * runner, verifies the run after timing against the reference, and turns
 * the samples into statistics (sandbox/check/stats.h), roofline figures with the
 * knowledge base's peaks and this GPU's calibrated ceilings. Calibrate
 * measures those ceilings and stores them in state.db. Thread-safe. */
#ifndef KF_BENCH_H
#define KF_BENCH_H

#include <jansson.h>

#include "base/kf_err.h"
#include "sandbox/check/check.h"

#define BENCH_DEFAULT_TARGET	0.005  /* relative standard error of the median */
#define BENCH_DEFAULT_BUDGET_MS 1000.0 /* timing budget per size */
#define BENCH_DEFAULT_WARMUP_MS 50.0

struct bench_opts {
	double target_rel_se; /* 0 = BENCH_DEFAULT_TARGET; (0, 0.5] */
	double budget_ms;     /* 0 = default; per size, [10, 60000] */
	double warmup_ms;     /* 0 = default; [0, 10000] */
	int size_index;	      /* -1 = every size of the spec; else that row */
	int no_baseline;      /* 1: time the candidate alone */
	int no_flush;	      /* 1: keep L2 warm between iterations */
	unsigned timeout_ms;  /* per harness run; 0 = 120000 */
	const volatile int *cancel;
	check_progress_fn progress;
	void *progress_arg;
};

/* Benchmarks spec (borrowed; op shorthand allowed). Returns 0 and *out
 * (new) with per size: candidate and baseline statistics (microseconds),
 * speedup with its 95% interval and verdict, bytes/FLOPs, GB/s, TFLOP/s,
 * % of the knowledge base's peak and of the calibrated ceilings, the
 * roofline floor and a below-floor flag, and the verification after timing.
 * Returns KF_EFAULT (with *out) when the kernel faulted, timed out or
 * failed the verification after timing; KF_ECOMPILE (with *out), KF_EINVAL,
 * KF_ENOGPU and the other codes as check_kernel. *gpu = device used or -1. */
int bench_kernel(struct check_env *env, const json_t *spec, const struct bench_opts *o,
		 json_t **out, int *gpu, struct kf_err *err) __attribute__((warn_unused_result));

/* Measures the ceilings of GPU device (-1 = the first free one): copy
 * bandwidth and cuBLAS bf16 / fp32 matmul throughput, stores them with
 * history_set_ceilings and returns them in *out. KF_ENOGPU without a GPU. */
int bench_calibrate(struct check_env *env, int device, const volatile int *cancel, json_t **out,
		    int *gpu, struct kf_err *err) __attribute__((warn_unused_result));

#endif
