/* history: the run history in state.db (sqlite, WAL, synchronous=FULL) in
 * the data dir: every compile, check, benchmark and calibration with its
 * spec, source hash, device, result and time, plus the per-GPU ceilings
 * measured by `kforge calibrate`. A run whose history_add returned 0 is
 * durable: a crash (SIGKILL, power loss) cannot lose it. Schema versioned by
 * PRAGMA user_version, migrated forward on open. Thread-safe: one connection
 * behind a mutex, busy_timeout for other processes (CLI and daemon share the
 * file). */
#ifndef KF_HISTORY_H
#define KF_HISTORY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/kf_err.h"

#define HISTORY_SCHEMA_VERSION 5
#define HISTORY_ID_BYTES       24	  /* "r" + 15 base32 chars + NUL, padded */
#define HISTORY_LIST_MAX       500	  /* cap on one history_list page */
#define HISTORY_TEXT_MAX       4096	  /* cap on kernels, summary, device fields */
#define HISTORY_JSON_MAX       (8u << 20) /* cap on spec / result JSON text */
#define HISTORY_NOTES_MAX      16384	  /* cap on a run's notes */

struct history;

enum history_kind {
	HISTORY_COMPILE = 0,
	HISTORY_CHECK = 1,
	HISTORY_BENCH = 2,
	HISTORY_CALIBRATE = 3,
	HISTORY_PROFILE = 4 /* profile_kernel: ncu's metrics and findings */
};

enum history_status {
	HISTORY_OK = 0,	    /* compiled / check passed / benchmark measured */
	HISTORY_FAILED = 1, /* the kernel's fault: compile error, wrong answer */
	HISTORY_ERROR = 2   /* could not run: no_gpu, sandbox, timeout, cancel */
};

/* One run. For history_add every pointer is borrowed (NULL = absent) and id
 * is written by the call. From history_get / history_list every pointer is
 * owned by the struct: release with history_run_fini. */
struct history_run {
	char id[HISTORY_ID_BYTES]; /* "r0jf3k9q2mzx7c4a": sortable by time */
	enum history_kind kind;
	enum history_status status;
	int64_t created_ms;  /* unix time, ms; add: 0 = now */
	int64_t duration_ms; /* wall time of the run, ms */
	char *kernels;	     /* kernel names, comma-separated */
	char *source_hash;   /* hex digest of the source */
	char *device_name;   /* "NVIDIA H200" or NULL (compile) */
	char *device_uuid;   /* "GPU-..." or NULL */
	char *summary;	     /* the one-line summary the tool gave */
	json_t *spec;	     /* the spec / request arguments */
	json_t *result;	     /* the tool's structuredContent */
	const char *job_key; /* add only: the exec job (history_job) this run
			      * ends, or NULL; see history_add */
	char *description;   /* what the kernel computes, words + math, or NULL */
	char *notes;	     /* the author's reasoning, or NULL */
	char *parent;	     /* id of the run this one improves on, or NULL */
	json_t *env;	     /* {"kforge", "driver", "cuda"} versions, or NULL */
};

/* Filters for history_list. Start from history_filter_init (everything,
 * newest first) and set what you need. */
struct history_filter {
	int kind;		 /* enum history_kind, or -1 = any */
	int status;		 /* enum history_status, or -1 = any */
	const char *kernel;	 /* substring of the kernel names, or NULL */
	int64_t since_ms;	 /* created_ms >= since_ms; 0 = no bound */
	const char *source_hash; /* exact source hash, or NULL */
	size_t limit;		 /* rows per page; 0 = 20; capped at
			      * HISTORY_LIST_MAX */
	const char *cursor;	 /* next_cursor of the previous page, or NULL */
};

/* One page of history_list: rows newest first, without spec, result, notes
 * and env (NULL) to keep listings small. */
struct history_page {
	struct history_run *runs; /* len entries */
	size_t len;
	char next_cursor[HISTORY_ID_BYTES]; /* "" on the last page */
};

/* Opens (creating if missing) the database at path (a file; the data dir
 * must exist), sets WAL, synchronous=FULL, busy_timeout, and migrates the
 * schema to HISTORY_SCHEMA_VERSION. A missing file is created whole (under
 * a temporary name, then linked into place). An existing file that is 0
 * bytes (with no WAL holding its history) or that sqlite finds corrupt is
 * refused: an empty history never silently replaces a damaged one.
 * Returns 0 and *out (close with history_close), or KF_EDB naming the file
 * and the reason ("is 0 bytes", "is corrupt", sqlite's message), or KF_EDB
 * "state.db schema version N is newer than this kforge (M)". */
int history_open(const char *path, struct history **out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Closes the database. NULL is a no-op. */
void history_close(struct history *h);

/* The schema version of the open database (PRAGMA user_version). */
int history_schema_version(struct history *h);

/* Records run (borrowed; id ignored on input) and writes the new id into
 * run->id. Returns 0 once the row is committed durably, or KF_EINVAL (kind
 * or status out of range: names the field), KF_ETOOBIG (a text field over
 * HISTORY_TEXT_MAX or a JSON field over HISTORY_JSON_MAX: names it),
 * KF_EDB. */
int history_add(struct history *h, struct history_run *run, struct kf_err *err)
	__attribute__((warn_unused_result));
/* With run->job_key set, the run and the job's "recorded" state commit in
 * one transaction, and a job that is already recorded is not recorded again:
 * history_add returns 0 with the first run's id in run->id. So a job's run
 * is recorded exactly once, whichever of the daemon that submitted it or a
 * restarted one gets there first. KF_ENOTFOUND: no such job. */

/* Reads run id into *out (caller storage; release with history_run_fini).
 * Returns 0, KF_EINVAL (malformed id), KF_ENOTFOUND, KF_EDB. */
int history_get(struct history *h, const char *id, struct history_run *out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Checks that parent is the id of a run in h: 0, KF_EINVAL ("parent:
 * '...' is not a run id"), KF_ENOTFOUND ("parent: no run ... in this
 * history"), KF_EDB. Tools call it before a long run so a typo fails fast. */
int history_check_parent(struct history *h, const char *parent, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Sets *f to "everything": kind -1, status -1, no kernel, since 0, limit 0,
 * no cursor. */
void history_filter_init(struct history_filter *f);

/* Lists runs matching f (borrowed), newest first, one page into *page
 * (release with history_page_fini). Returns 0, KF_EINVAL (kind/status out
 * of range, malformed cursor: names the field), KF_EDB. */
int history_list(struct history *h, const struct history_filter *f, struct history_page *page,
		 struct kf_err *err) __attribute__((warn_unused_result));

/* Frees what a history_run from get/list owns and zeroes it. NULL ok. */
void history_run_fini(struct history_run *run);

/* Frees a page's rows and zeroes it. NULL ok. */
void history_page_fini(struct history_page *page);

/* Names: "compile", "check", "bench", "calibrate", "profile" / "ok", "failed",
 * "error". Return static strings ("?" when out of range). */
const char *history_kind_name(int kind);
const char *history_status_name(int status);

/* Parses a name back; returns the enum value or KF_EINVAL. */
int history_kind_parse(const char *name);
int history_status_parse(const char *name);

/* Measured ceilings of one GPU (`kforge calibrate`). */
struct history_ceilings {
	char gpu_uuid[48];	       /* key: "GPU-..." */
	char device_name[128];	       /* "NVIDIA H200" */
	double copy_gbps;	       /* device-to-device copy, 1e9 bytes/s
				   * (read + write counted) */
	double bf16_tflops;	       /* cuBLAS bf16 matmul, 1e12 FLOP/s */
	double fp32_tflops;	       /* cuBLAS fp32 matmul, 1e12 FLOP/s */
	int64_t measured_ms;	       /* unix time, ms; set: 0 = now */
	char method[512];	       /* how: sizes, repetitions, statistic */
	char run_id[HISTORY_ID_BYTES]; /* the calibrate run, or "" */
};

/* Stores (replacing) the ceilings for c->gpu_uuid. A value <= 0 means "not
 * measured" and is stored as NULL. Returns 0, KF_EINVAL (empty uuid), KF_EDB. */
int history_set_ceilings(struct history *h, const struct history_ceilings *c, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Reads the ceilings for gpu_uuid into *out (unmeasured values are 0).
 * Returns 0, KF_ENOTFOUND ("GPU ... has no calibration: run kforge
 * calibrate"), KF_EDB. */
int history_get_ceilings(struct history *h, const char *gpu_uuid, struct history_ceilings *out,
			 struct kf_err *err) __attribute__((warn_unused_result));

/* history_get_ceilings for gpu_uuid, else the newest calibration of a GPU
 * named device_name (another GPU of the same model: a cluster's nodes of
 * one type share one calibration). Returns 0, KF_ENOTFOUND, KF_EDB. */
int history_get_ceilings_of(struct history *h, const char *gpu_uuid, const char *device_name,
			    struct history_ceilings *out, struct kf_err *err)
	__attribute__((warn_unused_result));

#define HISTORY_CEILINGS_MAX 256 /* calibrations history_list_ceilings returns */

/* Every calibration, oldest first (at most HISTORY_CEILINGS_MAX): *out
 * (new, free()) and *n. Returns 0, KF_ENOMEM, KF_EDB. */
int history_list_ceilings(struct history *h, struct history_ceilings **out, size_t *n,
			  struct kf_err *err) __attribute__((warn_unused_result));

/* --- exec jobs: GPU jobs handed to a cluster executor (sandbox/exec/) ----
 * One row per job from submission until its run is recorded, so a daemon
 * restarted mid-job finds its jobs again (history_jobs_pending) and records
 * each run once (history_run.job_key). */

#define HISTORY_JOB_TEXT_BYTES 256
#define HISTORY_JOB_DIR_BYTES  1024

enum history_job_state {
	HISTORY_JOB_SUBMITTED = 0, /* handed to the scheduler (or being handed) */
	HISTORY_JOB_ENDED = 1,	   /* the scheduler says it ended; run not yet recorded */
	HISTORY_JOB_RECORDED = 2   /* its run is in runs (run_id) */
};

struct history_job {
	char key[HISTORY_ID_BYTES];	     /* "r...": made by history_job_add */
	char tool[64];			     /* the tool the job runs, "check_kernel" */
	char client[HISTORY_JOB_TEXT_BYTES]; /* who asked ("session-3", "rest") */
	char dir[HISTORY_JOB_DIR_BYTES];     /* the job directory (shared) */
	char slurm_id[32];		     /* the scheduler's job id, "" before */
	int attempt;			     /* 0 first submission, 1 the retry */
	enum history_job_state state;	     /* where it is */
	char reason[HISTORY_JOB_TEXT_BYTES]; /* the scheduler's last word on it */
	char run_id[HISTORY_ID_BYTES];	     /* RECORDED: the run, else "" */
	int64_t created_ms;		     /* unix ms */
};

/* Adds job (borrowed; key and created_ms are written by the call, state is
 * taken as given). Returns 0, KF_ETOOBIG (a field without its NUL), KF_EDB. */
int history_job_add(struct history *h, struct history_job *job, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Stores job's dir, slurm_id, attempt, state and reason under its key. A job
 * already RECORDED keeps that state. Returns 0, KF_ENOTFOUND, KF_EDB. */
int history_job_update(struct history *h, const struct history_job *job, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Reads job key into *out. Returns 0, KF_ENOTFOUND, KF_EDB. */
int history_job_get(struct history *h, const char *key, struct history_job *out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Every job not yet RECORDED, oldest first, as a new array in *out (free
 * with free()) of *len entries. Returns 0, KF_ENOMEM, KF_EDB. */
int history_jobs_pending(struct history *h, struct history_job **out, size_t *len,
			 struct kf_err *err) __attribute__((warn_unused_result));

/* "submitted", "ended", "recorded" ("?" when out of range); static. */
const char *history_job_state_name(int state);

#endif
