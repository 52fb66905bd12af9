/* profile: profile_kernel on the daemon side. Runs the candidate (and the
 * baseline when asked) under Nsight Compute (ncu) in the same jail as check
 * and benchmark, at one size of the spec, after a warm-up, with caches
 * flushed before every replay pass and the clocks left alone, then reads
 * ncu's raw CSV into per-kernel metrics (profile_csv.c) and derives findings
 * and the one or two things most worth trying from the numbers
 * (profile_rules.c). Where the counters cannot be read (no GPU, no ncu,
 * counters denied, the profiler library missing) the result says why.
 * Thread-safe. */
#ifndef KF_PROFILE_H
#define KF_PROFILE_H

#include <jansson.h>
#include <stddef.h>

#include "base/kf_err.h"
#include "sandbox/check/check.h"

/* Kernel replay saves and restores every buffer a kernel writes before each
 * of its passes; past this many bytes of tensors and guard bands at the
 * profiled size the replay's copies dominate and may not fit: pick a
 * smaller size. */
#define PROFILE_MAX_DEVICE_BYTES (4ull << 30)
#define PROFILE_CSV_MAX_BYTES	 (4u << 20) /* ncu's raw CSV report */
#define PROFILE_KERNELS_MAX	 16	    /* launches read from one report */
#define PROFILE_STALLS_MAX	 24	    /* stall reasons per kernel */
#define PROFILE_FINDINGS_MAX	 12
#define PROFILE_TRY_MAX		 2   /* suggestions at the end of the answer */
#define PROFILE_TEXT_BYTES	 400 /* one finding or suggestion */
#define PROFILE_ID_BYTES	 17  /* a report id: 16 hex digits + NUL */
/* Time the profiler run may take beyond the warm-up's watchdog: ncu's
 * start and the replay passes. */
#define PROFILE_RUN_MAX_MS 240000u

/* One stall reason: warps stalled per issued instruction. */
struct profile_stall {
	char name[40];	 /* "long_scoreboard" */
	double per_inst; /* smsp__average_warps_issue_stalled_<name>_per_issue_active.ratio */
};

/* What ncu measured for one kernel launch. A metric ncu did not report is
 * NaN. Percentages are 0..100; bytes in bytes; time in ns. */
struct profile_metrics {
	char kernel[128];	    /* the kernel's name as ncu gives it */
	char program[12];	    /* "candidate" or "baseline" */
	double duration_ns;	    /* gpu__time_duration.sum (under replay) */
	double sol_compute_pct;	    /* sm__throughput */
	double sol_memory_pct;	    /* gpu__compute_memory_throughput: busiest memory unit */
	double sol_dram_pct;	    /* dram__throughput */
	double sol_l2_pct;	    /* lts__throughput */
	double sol_l1_pct;	    /* l1tex__throughput (L1 and shared) */
	double occ_achieved_pct;    /* sm__warps_active */
	double occ_theoretical_pct; /* sm__maximum_warps_per_active_cycle_pct */
	double limit_blocks, limit_registers, limit_shared, limit_warps; /* blocks/SM each allows */
	double regs_per_thread;
	double block_size, grid_size; /* threads per block, blocks */
	double shared_static_bytes, shared_dynamic_bytes;
	double waves_per_sm;
	double local_ld_sectors, local_st_sectors; /* local memory: spills, indexed arrays */
	double l1_hit_pct, l2_hit_pct;
	double shared_ld_conflicts, shared_st_conflicts;   /* bank conflicts */
	double shared_ld_wavefronts, shared_st_wavefronts; /* shared accesses, in wavefronts */
	double gld_sectors, gld_requests, gst_sectors, gst_requests;
	double gld_bytes_used_pct; /* bytes of each loaded sector the threads asked for */
	double hmma_pct;	   /* tensor pipe, HMMA path (mma.sync, WMMA) */
	double gmma_pct;	   /* tensor pipe, Hopper GMMA path (wgmma) */
	double issue_active_pct;   /* cycles an instruction was issued */
	double dram_read_bytes, dram_write_bytes;
	size_t stalls_len;
	struct profile_stall stalls[PROFILE_STALLS_MAX]; /* as ncu listed them */
};

/* Sets every metric of m to NaN and its names to "". */
void profile_metrics_init(struct profile_metrics *m);

/* The metric names profile_kernel asks ncu for (static, NULL-terminated):
 * valid for sm_90 per `ncu --query-metrics`. */
const char *const *profile_metric_names(void);

/* A parsed ncu report. */
struct profile_report {
	size_t kernels_len;
	struct profile_metrics kernels[PROFILE_KERNELS_MAX]; /* in launch order */
};

/* Parses ncu's raw page as CSV (`--csv --page raw`: a header row "ID",
 * ..., "Kernel Name", ..., metric names; a units row; one row per launch),
 * text borrowed (len bytes; lines before the header, such as ==PROF== and
 * the program's own output, are skipped). Quoted fields, doubled quotes,
 * thousands separators, "n/a" and unit prefixes (Kbyte, usecond, ...) are
 * handled. Fills rep (caller storage). Returns 0, KF_EINVAL when there is
 * no header or no launch row (err says which), or KF_ETOOBIG past
 * PROFILE_CSV_MAX_BYTES or PROFILE_KERNELS_MAX launches. */
int profile_csv_parse(const char *text, size_t len, struct profile_report *rep, struct kf_err *err)
	__attribute__((warn_unused_result));

/* --- findings ----------------------------------------------------------- */

/* What a finding is about; each has its guide. */
struct profile_finding {
	char id[32];		       /* "dram_bound", "bank_conflicts", ... */
	char guide[32];		       /* knowledge-base guide id that addresses it */
	double weight;		       /* how much time it plausibly costs, 0..1 */
	char text[PROFILE_TEXT_BYTES]; /* the numbers and what they mean */
	char try_[PROFILE_TEXT_BYTES]; /* what to try, or "" (nothing to do) */
};

struct profile_findings {
	char bound[16];			  /* "memory", "memory_latency", "compute" or "latency" */
	char verdict[PROFILE_TEXT_BYTES]; /* one sentence: where the kernel stands */
	/* The spec's cost-model bytes over the kernel's time, as a share of
	 * DRAM's speed of light (NaN when unknown): its distance from the
	 * roofline floor. Above the counters' DRAM share when the kernel moved
	 * fewer DRAM bytes than the cost model (writes still in L2 when it
	 * ended); the verdict reads the larger of the two. */
	double dram_cost_pct;
	size_t len;
	struct profile_finding f[PROFILE_FINDINGS_MAX]; /* most costly first */
	size_t try_len;
	int try_idx[PROFILE_TRY_MAX]; /* indexes into f of the things worth trying */
};

/* Derives the findings for one kernel's metrics m (borrowed) from the
 * numbers alone; cost_bytes is the spec's cost model at the profiled size
 * (bytes the kernel must move; <= 0 unknown). Pure: no I/O. */
void profile_rules(const struct profile_metrics *m, double cost_bytes,
		   struct profile_findings *out);

/* --- the run ------------------------------------------------------------ */

struct profile_opts {
	int size_index;	     /* row of the spec's sizes; 0 = the first */
	int baseline;	     /* 1: profile the baseline too */
	unsigned timeout_ms; /* the kernel's limit in the warm-up; 0 = from the work
			      * (check_work_timeout_ms) */
	const volatile int *cancel;
	check_progress_fn progress;
	void *progress_arg;
};

/* Why the counters were not read. */
enum profile_unavailable {
	PROFILE_AVAILABLE = 0,
	PROFILE_NO_GPU,		 /* no usable GPU on this host */
	PROFILE_NO_NCU,		 /* ncu not found */
	PROFILE_COUNTERS_DENIED, /* ERR_NVGPUCTRPERM: counters restricted to admins */
	PROFILE_LIBRARY_MISSING, /* ncu could not load its injection library */
	PROFILE_FAILED		 /* ncu ran but reported no metrics (its words in why) */
};

/* profile_kernel's answer. Caller storage, release with profile_result_fini. */
struct profile_result {
	enum check_answer answer;		     /* NONE, COMPILE or VERDICT */
	struct check_compile_failure compile_failed; /* CHECK_ANSWER_COMPILE */
	enum profile_unavailable unavailable;	     /* != 0: why no metrics */
	char why[1024];				     /* the reason in words */
	size_t vars_len;
	char vars[SPEC_MAX_VARS][SPEC_NAME_MAX + 1];
	int64_t vals[SPEC_MAX_VARS]; /* the profiled size */
	int size_index;
	double cost_bytes;	     /* the spec's cost model at that size */
	unsigned timeout_ms;	     /* the warm-up's watchdog as used */
	char fault[CHECK_MSG_BYTES]; /* the kernel faulted or hung: what happened */
	int hung;		     /* 1: it did not finish within timeout_ms */
	char baseline_error[256];    /* the baseline could not be profiled */
	struct profile_report report;
	struct profile_findings findings[PROFILE_KERNELS_MAX]; /* per report kernel */
	char report_id[PROFILE_ID_BYTES]; /* the raw CSV kept: profile_report_path */
	char ncu_path[1024];
	char dropped[1024]; /* metrics this ncu did not know, comma-separated */
	struct check_device device;
	double wall_ms; /* the profiler run, start to end */
};

void profile_result_fini(struct profile_result *res);

/* Profiles spec (borrowed; op shorthand allowed) at opts->size_index into
 * res (caller storage, always initialised; release with
 * profile_result_fini). Returns 0 with res->answer CHECK_ANSWER_VERDICT and
 * the metrics and findings; or:
 *   KF_EINVAL    bad spec or size index (err names it);
 *   KF_ETOOBIG   the size needs more than PROFILE_MAX_DEVICE_BYTES (err
 *                names the cap);
 *   KF_ENOGPU, KF_ENOTFOUND (no ncu), KF_EPERM (counters denied),
 *   KF_EFAULT (the profiler failed, or the kernel faulted or hung: res says
 *                which; a fault is reported like a check's),
 *   KF_ECOMPILE (res->answer CHECK_ANSWER_COMPILE), KF_ECANCELED,
 *   KF_ESANDBOX, KF_EIO, KF_ENOMEM.
 * With KF_ENOGPU, KF_ENOTFOUND for ncu, KF_EPERM and the profiler's
 * failures res->unavailable and res->why say why no counters were read.
 * *gpu is the device used or -1. The raw CSV is kept under
 * <data_dir>/profiles/<report_id>.csv. */
int profile_kernel(struct check_env *env, const json_t *spec, const struct profile_opts *o,
		   struct profile_result *res, int *gpu, struct kf_err *err)
	__attribute__((warn_unused_result));

/* The ncu to run, into out (cap bytes): $KFORGE_NCU when set (only it),
 * else ncu on PATH, $CUDA_HOME/bin/ncu, /usr/local/cuda/bin/ncu, the newest
 * /opt/nvidia/nsight-compute/<version>/ncu. Symlinks are resolved, and a
 * launcher script (the CUDA toolkit's bin/ncu) is replaced by the
 * installation it starts, <toolkit>/nsight-compute-<version>/ncu or
 * /opt/nvidia/nsight-compute/<version>/ncu, since only ncu's own folder is
 * bound into the jail. Returns 0, or KF_ENOTFOUND saying where it looked. */
int profile_ncu_find(char *out, size_t cap, struct kf_err *err) __attribute__((warn_unused_result));

/* Sorts ncu's output text (borrowed) into why the counters could not be
 * read: PROFILE_COUNTERS_DENIED, PROFILE_LIBRARY_MISSING, or
 * PROFILE_AVAILABLE when it names neither. */
enum profile_unavailable profile_ncu_error(const char *text);

/* The metric ncu refused, written to out (cap bytes): the name after
 * "Failed to find metric", else the first metric of list (comma-separated,
 * borrowed; may be NULL) that an ==ERROR== line of text names. 0 when
 * found, -1 when text (may be NULL) names none. */
int profile_ncu_unknown_metric(const char *text, const char *list, char *out, size_t cap);

/* The host path of report id (16 hex digits) under data_dir, into out.
 * Returns 0, or KF_EINVAL for a malformed id. */
int profile_report_path(const char *data_dir, const char *id, char *out, size_t cap,
			struct kf_err *err) __attribute__((warn_unused_result));

#endif
