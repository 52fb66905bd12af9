/* runner: the job queue and GPU pool. GPU jobs (checks, benchmarks,
 * calibration) run one at a time per GPU, across every GPU of the host, from
 * one FIFO queue: timings are never shared with another job. CPU jobs
 * (compiles) run in parallel up to cpu_slots from their own FIFO queue and
 * never wait for a GPU. The caller's thread runs its own job: runner_run
 * blocks until the job has run (or was refused, cancelled, timed out), so a
 * tool handler simply calls it. Thread-safe. */
#ifndef KF_RUNNER_H
#define KF_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include "base/kf_err.h"

#define RUNNER_MAX_GPUS	   16
#define RUNNER_LABEL_BYTES 64

struct runner;

enum runner_kind { RUNNER_GPU = 0, RUNNER_CPU = 1 };

/* A job. Runs on the thread that called runner_run. gpu is the assigned CUDA
 * device ordinal for RUNNER_GPU jobs (-1 for RUNNER_CPU). stop is a flag that
 * becomes nonzero when the caller cancels or the job passes its timeout:
 * pass it to jail_run (or poll it) so the child is killed promptly; the
 * runner cannot return before fn does. Returns 0 or a KF_E* code with err
 * set. arg is borrowed. */
typedef int (*runner_job_fn)(void *arg, int gpu, const volatile int *stop, struct kf_err *err);

enum runner_state {
	RUNNER_QUEUED = 0, /* waiting; position says where */
	RUNNER_RUNNING = 1 /* started; gpu says where */
};

/* What a progress callback sees. Valid only during the callback. */
struct runner_progress {
	enum runner_state state;
	size_t position;     /* QUEUED: 1 = next to start; 0 when RUNNING */
	size_t queued;	     /* jobs waiting in this queue now */
	int gpu;	     /* RUNNING GPU job: device ordinal; else -1 */
	double waited_s;     /* seconds since runner_run was called */
	double running_s;    /* seconds since the job started (0 if queued) */
	double progress;     /* strictly increasing across one job's calls:
			       * pass as MCP progress (total unknown) */
	const char *message; /* "queued: position 2 of 3 (GPU jobs)",
			       * "running on GPU 0 (NVIDIA H200), 3 s" */
};

/* Progress callback: called while the job is queued (on every change of
 * position, and at least every heartbeat) and while it runs (once at start,
 * then every heartbeat). Called from the caller's thread while queued and at
 * start, from the runner's monitor thread while running; never after
 * runner_run returns and never concurrently for one job. Must not call back
 * into the runner. p borrowed for the call. */
typedef void (*runner_progress_fn)(void *arg, const struct runner_progress *p);

/* Per-job options. Zeroed struct (or NULL) = defaults. */
struct runner_opts {
	int pin_gpu;	    /* RUNNER_GPU: 0 = the first free GPU; 1 = only
			     * device ordinal gpu (calibrate, "device": k) */
	int gpu;	    /* with pin_gpu: the device ordinal */
	int64_t timeout_ms; /* running-time limit (queue wait excluded);
			     * 0 = the runner's default; < 0 = none */
	const char *label;  /* shown in runner_status, e.g. "check rmsnorm";
			     * borrowed, copied (truncated to RUNNER_LABEL_BYTES) */
};

#define RUNNER_GPUS_PROBE \
	(-1) /* gpu_count: ask gpu_probe() at the first
				* GPU job (so CLI commands that run no GPU
				* job never load the driver) */

/* Creates a runner. gpu_count: GPUs in the pool (device ordinals
 * 0..gpu_count-1; 0 = none: every GPU job answers KF_ENOGPU at once with
 * no_gpu_reason, borrowed and copied; NULL gives "no GPU on this host");
 * RUNNER_GPUS_PROBE: every GPU the driver reports, found by gpu_probe()
 * when the first GPU job arrives, with its reason when there is none.
 * cpu_slots: parallel CPU jobs (<= 0: the number of online CPUs).
 * max_queue: jobs allowed to wait in each queue before runner_run answers
 * KF_EBUSY (0: default 64). default_timeout_ms: running-time limit for jobs
 * whose opts say 0 (<= 0: none). Returns 0 and *out (free with runner_free),
 * or KF_EINVAL (gpu_count outside -1..RUNNER_MAX_GPUS) / KF_ENOMEM. */
int runner_new(int gpu_count, int cpu_slots, size_t max_queue, int64_t default_timeout_ms,
	       const char *no_gpu_reason, struct runner **out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Cancels every queued job (their runner_run returns KF_ECANCELED), raises
 * stop for running ones, waits for them to return, frees r. NULL: no-op. */
void runner_free(struct runner *r);

/* Queues fn(arg, gpu, stop, err) and blocks until it ran. progress may be
 * NULL. cancel (borrowed, may be NULL) is polled: set while queued, the job
 * leaves the queue; set while running, stop is raised. opts may be NULL.
 * Returns fn's result (0 or its KF_E* code and message), or:
 *   KF_ENOGPU   GPU job on a runner without GPUs (err: the reason);
 *   KF_EINVAL   opts pins a GPU a GPU the pool does not have;
 *   KF_EBUSY    the queue already holds max_queue jobs: "busy, retry";
 *   KF_ECANCELED cancel was set (queued, or running and fn failed);
 *   KF_ETIMEOUT the job ran past its limit and fn failed (err names the
 *               limit);
 *   KF_ECANCELED also when the runner is being freed.
 * A job that finishes with 0 keeps 0 even if cancel or the timeout came
 * right at the end. */
int runner_run(struct runner *r, enum runner_kind kind, runner_job_fn fn, void *arg,
	       runner_progress_fn progress, void *progress_arg, const volatile int *cancel,
	       const struct runner_opts *opts, struct kf_err *err)
	__attribute__((warn_unused_result));

/* A snapshot of the queues. */
struct runner_gpu_status {
	int busy;			/* 1 while a job runs on it */
	char label[RUNNER_LABEL_BYTES]; /* the running job's label or "" */
	double running_s;		/* seconds the current job has run */
	uint64_t jobs_done;		/* jobs finished on this GPU */
};

struct runner_status {
	int gpu_count;
	int cpu_slots;
	size_t max_queue;
	size_t gpu_queued;  /* GPU jobs waiting */
	size_t cpu_queued;  /* CPU jobs waiting */
	size_t cpu_running; /* CPU jobs running */
	uint64_t gpu_jobs_done;
	uint64_t cpu_jobs_done;
	uint64_t rejected_busy; /* runner_run calls answered KF_EBUSY */
	struct runner_gpu_status gpus[RUNNER_MAX_GPUS];
};

/* Fills *out with the current state. Thread-safe. */
void runner_status(struct runner *r, struct runner_status *out);

/* GPUs in the pool (0 = none); probes first under RUNNER_GPUS_PROBE. */
int runner_gpu_count(struct runner *r);

/* Sets how often progress is reported while queued or running, in ms
 * (default 1000; tests use less). */
void runner_set_heartbeat_ms(struct runner *r, int ms);

#endif
