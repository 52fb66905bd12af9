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
#include "sandbox/check/stats.h"
#include "sandbox/history/history.h"

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
	unsigned timeout_ms;  /* per size; 0 = from the work: warm-up, budget and
			       * check_work_timeout_ms of its launches */
	const volatile int *cancel;
	check_progress_fn progress;
	void *progress_arg;
};

/* The GPU's peaks: the knowledge base's (theoretical) and this GPU's
 * calibration (measured). */
struct bench_peaks {
	char gpu_id[64];	 /* knowledge-base id; "" when the GPU is unknown */
	double bw_gbs;		 /* memory bandwidth, 1e9 B/s; 0 unknown */
	double tflops;		 /* 1e12 FLOP/s for the output dtype; 0 unknown */
	const char *tflops_kind; /* which peak tflops is; static */
	int have_ceil;		 /* 1: ceil holds this GPU's calibration */
	struct history_ceilings ceil;
};

/* One size of a benchmark. */
struct bench_size {
	int64_t vals[SPEC_MAX_VARS];	/* per bench_result.vars */
	int timed;			/* 0: no timing; failure says why */
	struct check_run failure;	/* the safeguard that fired when not timed */
	struct stats_summary candidate; /* samples in ms */
	char stop[16];			/* why timing stopped ("target", ...); has_stop */
	int has_stop;
	int has_baseline; /* 1: baseline and speedup are set */
	struct stats_summary baseline;
	struct stats_speedup speedup;
	double bytes;	     /* bytes moved per launch */
	int bytes_from_cost; /* 1: the spec's cost.bytes; 0: every tensor once */
	double flops;	     /* FLOPs per launch; < 0 unknown */
	struct stats_roofline roofline;
	int has_pct_copy, has_pct_matmul;
	double pct_copy;	       /* % of the calibrated copy bandwidth */
	double pct_matmul;	       /* % of the calibrated matmul throughput */
	struct check_run verification; /* the run after timing, judged */
	int compared;		       /* 0: outputs not compared; why in not_compared */
	char not_compared[256];
	uint64_t verify_seed;
	int verified;
};

/* bench_kernel's answer. Owned: release with bench_result_fini. */
struct bench_result {
	enum check_answer answer;
	struct check_compile_failure compile_failed; /* CHECK_ANSWER_COMPILE */
	int passed;
	size_t vars_len; /* size variable names, in spec order */
	char vars[SPEC_MAX_VARS][SPEC_NAME_MAX + 1];
	char kernel[SPEC_NAME_MAX + 1]; /* the first launch's kernel */
	struct bench_size *sizes;	/* every size timed, in order */
	size_t sizes_len;
	int fail_size; /* index of the first failed size, or -1 */
	struct check_fired fired;
	struct check_flags flags;
	int have_base;		      /* 1: the baseline ran interleaved */
	enum spec_base_kind baseline; /* which baseline */
	struct bench_peaks peak;
	struct check_device device;
	/* The method, as run (defaults applied): */
	double warmup_ms, budget_ms, target_rel_se;
	int flushed;		    /* 1: L2 flushed before each timed run */
	struct check_phases phases; /* where the time went (also with a compile failure) */
};

/* Releases what res owns (sizes, their runs, the compile failure) and
 * zeroes it. NULL is a no-op. */
void bench_result_fini(struct bench_result *res);

/* Benchmarks spec (borrowed; op shorthand allowed) into res (caller
 * storage, always initialised; release with bench_result_fini whatever the
 * return): per size candidate and baseline statistics, speedup with its 95%
 * interval and verdict, bytes/FLOPs, GB/s, TFLOP/s, % of the knowledge
 * base's peak and of the calibrated ceilings, the roofline floor and a
 * below-floor flag, and the verification after timing. Returns 0, or
 * KF_EFAULT (res has the verdict; err is left for the caller, which words
 * it) when the kernel faulted, timed out or failed the verification after
 * timing; KF_ECOMPILE (res->answer CHECK_ANSWER_COMPILE), KF_EINVAL,
 * KF_ENOGPU and the other codes as check_kernel. *gpu = device used or -1. */
int bench_kernel(struct check_env *env, const json_t *spec, const struct bench_opts *o,
		 struct bench_result *res, int *gpu, struct kf_err *err)
	__attribute__((warn_unused_result));

/* What calibrate measured. Owned: release with bench_calibration_fini. */
struct bench_calibration {
	struct history_ceilings ceil; /* device, copy and matmul figures, method */
	json_t *cublas;		      /* the harness's cuBLAS details (new reference), or NULL */
};

/* Releases c->cublas and zeroes c. NULL is a no-op. */
void bench_calibration_fini(struct bench_calibration *c);

/* Measures the ceilings of GPU device (-1 = the first free one): copy
 * bandwidth and cuBLAS bf16 / fp32 matmul throughput, stores them with
 * history_set_ceilings and returns them in *out (caller storage, always
 * initialised). KF_ENOGPU without a GPU; KF_EFAULT when the measurement
 * failed (err says why). */
int bench_calibrate(struct check_env *env, int device, const volatile int *cancel,
		    struct bench_calibration *out, int *gpu, struct kf_err *err)
	__attribute__((warn_unused_result));

#endif
