/* check: check_kernel on the daemon side (DESIGN.md "What a check does").
 * Parses the spec, compiles the candidate (and a CUDA reference) through
 * sandbox/compile/compile.h, runs kforge-harness in the jail on a GPU from the
 * runner for every size (the spec's plus an odd one) and trial, computes the
 * reference outside the harness process (float64 CPU op from kernels/, a
 * CUDA reference in a separate harness process, or PyTorch in a sandboxed
 * python3), compares, and builds the structured answer. Also the pieces
 * bench.c shares: preparing a spec, running the harness, references and
 * the element-wise comparison. Thread-safe. */
#ifndef KF_CHECK_H
#define KF_CHECK_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "base/kf_err.h"
#include "sandbox/compile/compile.h"
#include "sandbox/spec/spec.h"

struct kb;
struct compiler;
struct runner;
struct history;
struct jail;
struct check_pyworkers;
struct check_spares;

/* What check and bench read from the daemon, filled by the composition root
 * (server/app.c) and passed down by the tool layer and the CLI. The module
 * pointers are borrowed (owned by the caller, valid for the env's life);
 * the jail is opened on first use and owned by the env: call
 * check_env_init before use and check_env_fini after the last job. */
struct check_env {
	const char *data_dir;	 /* job directories go under <data_dir>/jobs; NULL = /tmp */
	int sandbox_none;	 /* 1: run the harness without bwrap (--sandbox=none) */
	struct kb *kb;		 /* peaks for roofline figures; may be NULL */
	struct compiler *cc;	 /* nvcc driver + artifact cache; NULL = no compiler */
	struct runner *runner;	 /* GPU job queue */
	struct history *history; /* calibrated ceilings; may be NULL */
	int warm_harness;	 /* 1: keep spare harness processes per GPU (the daemon:
				  * KFORGE_HARNESS_SPARES of them, started by a GPU's
				  * first run); 0: every run starts its own (the CLI) */
	/* Owned by the env (check_env_fini closes them): */
	pthread_mutex_t jail_mu;
	struct jail *jail;	     /* opened on first use */
	struct check_spares *spares; /* the spare harnesses; NULL when none are kept */
	/* the torch references' python workers (check_pyworker.h) */
	struct check_pyworkers *pyworkers;
};

/* Initialises env's owned part (the module pointers and warm_harness are
 * the caller's to set). */
void check_env_init(struct check_env *env);

/* Ends the spare harnesses, stops the torch workers and closes the jail
 * env opened, if any. Call after the last job finished. */
void check_env_fini(struct check_env *env);

/* The first readable of: $env (as given), <exe dir>/rel1, <exe dir>/rel2
 * (resolved with realpath; either may be NULL), into out (cap bytes).
 * Returns 0, or -1 when none is. */
int check_find_file(const char *env, const char *rel1, const char *rel2, char *out, size_t cap);

/* The process-wide jail for env's sandbox mode (opened on first use, owned
 * by env until check_env_fini; thread-safe) in *out (borrowed): for jobs
 * other modules run beside check's (the profiler). Returns 0 or the codes
 * of jail_open / jail_usable. */
int check_get_jail(struct check_env *env, struct jail **out, struct kf_err *err);

#define CHECK_FIRST_MAX		     5 /* first mismatches reported per output */
#define CHECK_DEFAULT_TRIALS	     3
#define CHECK_MAX_TRIALS	     20
#define CHECK_DEFAULT_TIMEOUT_MS     60000u	 /* the watchdog when the work is unknown */
#define CHECK_REPORT_MAX_BYTES	     (16u << 20) /* harness report cap */
#define CHECK_EXTRA_LAUNCHES	     8		 /* launches between the two compared runs */
#define CHECK_HARNESS_MEM_DEFAULT_MB 16384	 /* host memory of one harness, MiB */
#define CHECK_HARNESS_MEM_MIN_MB     256	 /* below it CUDA's own setup may fail */

/* The host memory limit of each kforge-harness process (RLIMIT_DATA, which
 * the CUDA driver tolerates where RLIMIT_AS does not): $KFORGE_HARNESS_MEM_MB
 * MiB, else CHECK_HARNESS_MEM_DEFAULT_MB. Returns 0 and *bytes, or
 * KF_EINVAL naming the variable's bad value and the range. */
int check_harness_mem_bytes(unsigned long long *bytes, struct kf_err *err)
	__attribute__((warn_unused_result));

/* The default watchdog follows the work: a generous multiple of the
 * size's roofline floor, computed with the peaks of a slow GPU (so it is
 * generous on every GPU kforge supports), plus the host's part of a
 * harness run (inputs from the seed, outputs back and compared), never
 * under CHECK_MIN_TIMEOUT_MS. A hang then costs seconds, not a minute,
 * while a correct slow kernel keeps a wide margin. */
#define CHECK_MIN_TIMEOUT_MS	 2000u
#define CHECK_MAX_TIMEOUT_MS	 600000u  /* what timeout_s may ask for */
#define CHECK_WATCHDOG_GBS	 300.0	  /* slow-GPU memory bandwidth, 1e9 B/s */
#define CHECK_WATCHDOG_TFLOPS	 8.0	  /* slow-GPU throughput, 1e12 FLOP/s */
#define CHECK_WATCHDOG_MULT	 100.0	  /* floors allowed per launch */
#define CHECK_WATCHDOG_HOST_BPMS 100000.0 /* host bytes handled per ms, slow */

/* The watchdog for one harness run of `launches` launch lists at the size
 * bound in b (borrowed): CHECK_WATCHDOG_MULT times the roofline floor of
 * each launch (cost bytes and FLOPs at the slow peaks above) plus the
 * host's time for the tensors' bytes, at least CHECK_MIN_TIMEOUT_MS and at
 * most CHECK_MAX_TIMEOUT_MS. Pure. */
unsigned check_work_timeout_ms(const struct spec_bound *b, unsigned launches);

/* Progress: called with a growing progress value and a message. */
typedef void (*check_progress_fn)(void *arg, double progress, double total, const char *message);

struct check_opts {
	int trials;	      /* 0 = CHECK_DEFAULT_TRIALS */
	int no_odd_size;      /* 1: only the spec's sizes */
	const json_t *replay; /* {"size": {var: v}, "seed": "hex"} or NULL */
	unsigned timeout_ms;  /* per trial; 0 = from the work (check_work_timeout_ms) */
	const volatile int *cancel;
	check_progress_fn progress;
	void *progress_arg;
};

/* --- the verdict: plain result structs ---------------------------------
 * check_kernel and bench_kernel fill these; the tool layer (server/tools/)
 * renders them as JSON and writes the summary sentence. */

#define CHECK_MSG_BYTES	 512 /* one safeguard message */
#define CHECK_FLAG_BYTES 600 /* one flag message */
#define CHECK_KIND_BYTES 32  /* safeguard and flag names */
#define CHECK_FLAGS_MAX	 8
#define CHECK_FIRED_MAX	 32

/* Where the time of a check or benchmark went, in ms, summed over every
 * size and trial. The harness measures its own phases (module load,
 * upload, kernel runs, download) and reports them; the rest of a harness
 * process's wall time is harness_start. */
struct check_phases {
	double compile_ms;	 /* parsing the spec, compiling or finding in the cache */
	double queue_wait_ms;	 /* waiting for a GPU from the pool */
	double harness_start_ms; /* sandbox and process start, CUDA context, freeing, exit */
	double module_load_ms;	 /* loading the candidate's (and baseline's) module */
	double upload_ms;	 /* buffers, inputs from the seed, poison, canaries */
	double kernel_runs_ms;	 /* launches until idle: checked runs, warm-up, timing */
	double download_ms;	 /* outputs back, guard and input checks, output files */
	double reference_ms;	 /* the reference: CPU op (the part not hidden behind the
				  * harness run), CUDA reference process, torch */
	double compare_ms;	 /* the judge: reading outputs, comparing, safeguards */
	/* Torch references (part of reference_ms): jobs run, how many a
	 * running worker served, and the time spent starting workers
	 * (python3 and the torch import) for the others. */
	unsigned torch_runs, torch_warm;
	double torch_start_ms;
	unsigned harness_runs;	 /* harness processes run: candidate, CUDA reference */
	unsigned harness_spares; /* of them, spares started before the call (their
				  * start and CUDA context were off its path) */
};

/* Adds one harness run to ph: the "phases" of report (borrowed; the
 * harness's totals, NULL or without phases counts as none) and the rest of
 * wall_ms (the process's wall time seen by the daemon) as harness_start;
 * counts it (check_phases_count_run). */
void check_phases_add_run(struct check_phases *ph, const json_t *report, double wall_ms);

/* Counts one harness run in ph->harness_runs, and in ph->harness_spares
 * when report (borrowed; may be NULL) says "spare": true (set by
 * check_harness_exec). */
void check_phases_count_run(struct check_phases *ph, const json_t *report);

/* Milliseconds on the monotonic clock (for phase timings). */
double check_now_ms(void);

/* One safeguard that fired in a run. */
struct check_safeguard {
	char name[CHECK_KIND_BYTES];   /* "mismatch", "coverage", "timeout", ... */
	char message[CHECK_MSG_BYTES]; /* what happened, where, what to do */
};

/* One element outside the tolerance. */
struct check_mismatch {
	char at[96]; /* coordinates, "[i, j]" */
	double got;  /* may be NaN or +-Inf */
	double want;
};

/* How one output of a run compared with the reference. */
struct check_output {
	char name[SPEC_NAME_MAX + 1]; /* the spec's tensor name */
	double max_abs;		      /* max |got - want| over finite pairs */
	double max_rel;		      /* max |got - want| / |want| */
	double rel_l2;		      /* ||got - want||_2 / ||want||_2; may be Inf */
	uint64_t mismatches;	      /* elements outside the tolerance */
	uint64_t nonfinite;	      /* NaN/Inf where the reference is finite */
	uint64_t elements;	      /* elements compared */
	size_t first_len;
	struct check_mismatch first[CHECK_FIRST_MAX]; /* first mismatches, in index order */
};

/* The verdict on one harness run: a check trial, or a benchmark's run
 * after timing. The arrays are owned (check_run_fini frees them). */
struct check_run {
	int passed;
	int judged; /* 1: the judge compared the run (outputs is its list) */
	int nomem;  /* 1: a safeguard was lost to an allocation failure */
	struct check_safeguard *safeguards; /* in the order they fired */
	size_t safeguards_len, safeguards_cap;
	struct check_output *outputs; /* outputs compared, in spec order */
	size_t outputs_len, outputs_cap;
};

/* Frees run's arrays and zeroes it. NULL is a no-op. */
void check_run_fini(struct check_run *run);

/* Distinct safeguard names of a whole result, in the order they first
 * fired (precision hints are not failures and are left out). */
struct check_fired {
	size_t len;
	char name[CHECK_FIRED_MAX][CHECK_KIND_BYTES];
};

/* Notes on a whole result ("weak_reference", "baseline_unavailable",
 * "below_floor"), in the order first set. */
struct check_flags {
	size_t len;
	struct check_flag {
		char name[CHECK_KIND_BYTES];
		char message[CHECK_FLAG_BYTES];
	} f[CHECK_FLAGS_MAX];
};

/* Sets flag name to message: a new flag goes last; an existing one keeps
 * its place and takes message only when replace is 1. */
void check_flag_set(struct check_flags *fl, const char *name, int replace, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The flag's message, or NULL when it is not set (borrowed from fl). */
const char *check_flag_get(const struct check_flags *fl, const char *name);

/* The device the harness reported ("device" of its report). */
struct check_device {
	int present; /* 0: the harness never reported one */
	int index;   /* CUDA ordinal */
	char name[256];
	int cc_major, cc_minor;
	long long l2_bytes;
};

/* Fills d from the "device" object of a harness report (dev borrowed;
 * NULL or not an object leaves d absent). */
void check_device_read(const json_t *dev, struct check_device *d);

/* A candidate, reference or baseline that did not compile (stage
 * "compile"): what it was, the compiler's result (owned, released by the
 * result's fini) and its error text for when there is no report. */
struct check_compile_failure {
	const char *what; /* "the candidate", "the reference source", ...; static */
	struct compile_result compile;
	char message[256]; /* the compiler's error text */
};

/* The candidate's compile. */
struct check_compiled {
	char artifact_id[80];
	int cache_hit;
	unsigned compile_ms;
	char arch[16];
};

/* One trial of one size. */
struct check_trial {
	int trial;
	uint64_t seed;
	int has_kernel_ms; /* 1: kernel_ms was measured */
	double kernel_ms;  /* the candidate's launch time, ms */
	struct check_run run;
};

/* One size of a check (a row). */
struct check_size {
	int64_t vals[SPEC_MAX_VARS]; /* per check_result.vars */
	int odd;		     /* 1: the size kforge picked */
	int passed;
	int ntrials;
	struct check_trial trials[CHECK_MAX_TRIALS];
};

/* An output's tolerance. */
struct check_tolerance {
	char name[SPEC_NAME_MAX + 1];
	double atol, rtol;
	int from_spec; /* 1: the spec's; 0: the default for the dtype */
};

enum check_answer {
	CHECK_ANSWER_NONE,    /* only the error: nothing ran */
	CHECK_ANSWER_COMPILE, /* compile_failed says what did not compile */
	CHECK_ANSWER_VERDICT, /* the check ran: everything below */
};

/* check_kernel's answer. Owned: release with check_result_fini. */
struct check_result {
	enum check_answer answer;
	struct check_compile_failure compile_failed; /* CHECK_ANSWER_COMPILE */
	int passed;
	size_t vars_len; /* size variable names, in spec order */
	char vars[SPEC_MAX_VARS][SPEC_NAME_MAX + 1];
	struct check_size *sizes; /* every size checked, in order */
	size_t sizes_len;
	char odd_note[300]; /* why no odd size was tested; "" when one was */
	struct check_fired fired;
	struct check_flags flags;
	struct check_tolerance tolerance[SPEC_MAX_TENSORS]; /* per output */
	size_t tolerance_len;
	enum spec_ref_kind reference; /* where the expected outputs came from */
	struct check_compiled compile;
	struct check_device device;
	char *kernel_stdout;	    /* the kernel's printf output (new), or NULL */
	double max_rel;		    /* largest relative error seen */
	int fail_size;		    /* index into sizes of the first failure, or -1 */
	int fail_trial;		    /* its trial (the case to replay) */
	struct check_phases phases; /* where the time went (also with a compile failure) */
};

/* Releases what res owns (sizes, their runs, the compile failure, the
 * kernel's output) and zeroes it. NULL is a no-op. */
void check_result_fini(struct check_result *res);

/* Runs check_kernel for spec (borrowed JSON, op shorthand allowed), filling
 * res (caller storage, always initialised; release with check_result_fini
 * whatever the return). Returns 0 when every size and trial passed
 * (res->answer CHECK_ANSWER_VERDICT, perhaps with flags), or:
 *   KF_EFAULT    the kernel failed (mismatch, safeguard, fault, timeout):
 *                res says which and where; err is left for the caller,
 *                which words the verdict;
 *   KF_ECOMPILE  the candidate or reference did not compile
 *                (res->answer CHECK_ANSWER_COMPILE, err says which);
 *   KF_EINVAL / KF_ETOOBIG  the spec was rejected (err names the field);
 *   KF_ENOGPU    no GPU on this host (err says why); never a number;
 *   KF_ENOTFOUND "torch not available" for a torch reference;
 *   KF_ECANCELED, KF_EBUSY, KF_ESANDBOX, KF_EIO, KF_ENOMEM.
 * *gpu is set to the device ordinal used, or -1. */
int check_kernel(struct check_env *env, const json_t *spec, const struct check_opts *o,
		 struct check_result *res, int *gpu, struct kf_err *err)
	__attribute__((warn_unused_result));

/* --- element-wise comparison (pure; tested in CI) ----------------------- */

struct check_cmp {
	uint64_t n;	     /* elements compared */
	uint64_t mismatches; /* |got - want| > atol + rtol |want| */
	uint64_t nonfinite;  /* got NaN/Inf where want is finite */
	double max_abs;	     /* max |got - want| over finite pairs */
	double max_rel;	     /* max |got - want| / |want| (want != 0) */
	double rel_l2;	     /* ||got - want||_2 / ||want||_2 (0/0 = 0) */
	uint64_t worst;	     /* index of the largest excess over the bound */
	size_t first_len;    /* first mismatches, in index order */
	uint64_t first[CHECK_FIRST_MAX];
	double first_got[CHECK_FIRST_MAX], first_want[CHECK_FIRST_MAX];
	/* What the reference can tell apart: */
	double want_absmax;	 /* max |want| */
	int zeros_would_pass;	 /* all-zero output would pass the tolerance */
	int constant_would_pass; /* one constant (the mean) would pass */
};

/* Compares got against want (n elements each, borrowed) with the bound
 * atol + rtol * |want|. NaN where want is NaN, and an infinity equal to
 * want's, match. */
void check_compare(const double *got, const double *want, uint64_t n, double atol, double rtol,
		   struct check_cmp *out);

/* The same with got as n raw elements of dtype dt (an output file as the
 * harness wrote it), converted as dtype_load does, a block at a time. */
void check_compare_raw(enum kf_dtype dt, const void *got, const double *want, uint64_t n,
		       double atol, double rtol, struct check_cmp *out);

/* Formats flat index i of a tensor with dims (rank entries) as "[a, b]". */
void check_format_index(const int64_t *dims, size_t rank, uint64_t i, char *buf, size_t cap);

/* --- pieces shared with bench.c ---------------------------------------- */

/* A spec ready to run: parsed, compiled, with module paths on the host. */
struct check_prep {
	struct spec *s;
	char cand_cubin[1024];
	char ref_cubin[1024];	/* SPEC_REF_CUDA */
	char base_module[1024]; /* baseline cubin or kernels.fatbin; "" none */
	char cand_artifact[80];
	int cand_cache_hit;
	unsigned compile_ms;
	char arch[16];
};

/* Parses spec (op shorthand allowed) and checks a GPU is present, then
 * compiles the candidate (and the reference / baseline sources). With
 * want_baseline it also resolves the baseline module. On a compile error
 * returns KF_ECOMPILE and fills *cf (caller storage, zeroed first; release
 * cf->compile with compile_result_fini). Release p with check_prep_fini whatever
 * the return. */
int check_prepare(struct check_env *env, const json_t *spec, int want_baseline,
		  const volatile int *cancel, struct check_prep *p,
		  struct check_compile_failure *cf, struct kf_err *err)
	__attribute__((warn_unused_result));
void check_prep_fini(struct check_prep *p);

/* Creates a fresh job directory under the data dir (path written to dir,
 * cap bytes) holding spec.json (the expanded spec). Remove it with
 * check_jobdir_remove. */
int check_jobdir_new(struct check_env *env, const struct spec *s, char *dir, size_t cap,
		     struct kf_err *err) __attribute__((warn_unused_result));
void check_jobdir_remove(const char *dir);

/* Copies src (host path) into dir as name. */
int check_copy_file(const char *src, const char *dir, const char *name, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Writes job (borrowed) as dir/job.json and runs kforge-harness on it in
 * the jail with the GPU nodes, killing it after timeout_ms or when stop
 * becomes nonzero. The harness reports JSON lines (one per finished row in
 * check mode, then a final object); *report (new, set whenever the harness
 * ran) is the final object with "rows": [the row lines], or just {"rows":
 * [...]} when it died. Returns 0 when the final report arrived (it may
 * itself describe a fault); KF_ETIMEOUT when the harness was killed at the
 * limit; KF_EFAULT when it died without a final report (err has the signal
 * or exit status and the tail of stderr); KF_ECANCELED; KF_ESANDBOX;
 * KF_EIO. *stdout_text (new, may be NULL) gets the kernel's printf output,
 * capped at 16 KiB. The report's "phases" are the harness's phase totals
 * from the last line that had them (check_phases_add_run reads them); its
 * "spare" is true when a spare harness of env ran the job (the job's
 * "device" names the GPU; check_spare.h), whose start and CUDA context
 * were then not part of this call: the time from the call to the report
 * is what the job waited. Without a spare a fresh harness starts. */
int check_harness_exec(struct check_env *env, const char *dir, const json_t *job,
		       unsigned timeout_ms, const volatile int *stop, json_t **report,
		       char **stdout_text, struct kf_err *err) __attribute__((warn_unused_result));

/* The reference outputs for one size and seed, float64, in the order of the
 * spec's tensors (NULL for inputs): a built-in op on the CPU, or (CUDA
 * references) read back from dir/ref.t<trial>.<name>.bin written by a
 * reference harness run, or a torch run. want[i] are new (free each). */
int check_reference_cpu(const struct spec *s, const int64_t *vals, uint64_t seed, double **want,
			struct kf_err *err) __attribute__((warn_unused_result));

/* Reads an output file of tensor t (stored as its dtype) into new float64
 * storage. */
int check_load_output(const struct spec *s, const struct spec_bound *b, size_t t, const char *path,
		      double **out, struct kf_err *err) __attribute__((warn_unused_result));

/* Maps output file path (b->bytes[t] bytes of tensor t) read-only into
 * *out, for check_compare_raw without copying it; released with
 * check_unmap_output. Errors as check_load_output. */
int check_map_output(const struct spec_bound *b, size_t t, const char *name, const char *path,
		     const void **out, struct kf_err *err);
void check_unmap_output(const struct spec_bound *b, size_t t, const void *p);

/* The reference outputs (float64, per spec tensor, NULL for inputs; free
 * each) of trial `trial` with seed for one size: a built-in op computed on
 * the CPU now; a CUDA reference read from dir/ref.t<trial>.<name>.bin (a
 * reference harness run wrote them); a torch reference read from
 * dir/torch.t<trial>.<name>.bin (check_torch_reference wrote them). */
int check_reference_want(const struct spec *s, const char *dir, const char *prefix,
			 const int64_t *vals, const struct spec_bound *b, int trial, uint64_t seed,
			 double **want, struct kf_err *err) __attribute__((warn_unused_result));

/* Runs the spec's torch reference in the warm sandboxed python
 * (check_pyworker.h: no GPU, a fresh process per job) for ntrials seeds of
 * one size, writing dir/torch.t<k>.<name>.bin, and counts the run in ph
 * (may be NULL: torch_runs, torch_warm, torch_start_ms). Returns 0,
 * KF_ENOTFOUND "torch not available: ..." when python3 cannot import torch
 * on this host, KF_EINVAL when the expression fails (its error),
 * KF_ETIMEOUT, KF_ECANCELED, KF_EFAULT (the worker died), or the jail's
 * codes. */
int check_torch_reference(struct check_env *env, const struct spec *s, const char *dir,
			  const int64_t *vals, const struct spec_bound *b, const uint64_t *seeds,
			  int ntrials, const volatile int *cancel, struct check_phases *ph,
			  struct kf_err *err) __attribute__((warn_unused_result));

/* Judges one harness run (tr: a trial or the benchmark's "verify" object of
 * the report, borrowed) for one size: guard bands, inputs, coverage,
 * state across launches, determinism, and, when want is not NULL, the
 * comparison with the tolerance. Appends safeguards and per-output errors
 * to run (sets judged and passed), records safeguard names in fired and a
 * "weak_reference" flag in flags. Returns 1 when it passed. */
int check_judge_run(const struct spec *s, const char *dir, const struct spec_bound *b,
		    const json_t *tr, double **want, struct check_run *run,
		    struct check_fired *fired, struct check_flags *flags, double *max_rel_seen);

/* Appends safeguard name with the formatted message (capped at
 * CHECK_MSG_BYTES) to run and adds name to fired (fired may be NULL). An
 * allocation failure sets run->nomem. */
void check_fire(struct check_run *run, struct check_fired *fired, const char *name, const char *fmt,
		...) __attribute__((format(printf, 4, 5)));

/* The limits specs are held to: spec_limits_default, then the operator's
 * KFORGE_MAX_DEVICE_BYTES / KFORGE_MAX_HOST_BYTES ("16G", "512M", bytes),
 * never above 40% of the smallest GPU's memory (a benchmark holds two
 * buffer sets). */
void check_limits(struct spec_limits *lim);

/* One size of s as "N=4097, D=512" into buf (cap bytes, cut to fit). */
void check_sizes_text(const struct spec *s, const int64_t *vals, char *buf, size_t cap);

/* Why a row after a hang is not run, into buf (cap bytes, cut to fit): the
 * kernel (is_ref 0) or the CUDA reference (1) did not finish at the sizes
 * vals of s (odd: the row that hung is the odd size). A hang decides the
 * verdict, so check and benchmark skip the later rows instead of waiting
 * for the watchdog on each. */
void check_not_run_reason(const struct spec *s, const int64_t *vals, int odd, int is_ref, char *buf,
			  size_t cap);

/* Random 64-bit seed from the kernel (getrandom). */
uint64_t check_new_seed(void);

#endif
