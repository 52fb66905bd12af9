/* runner: FIFO queues, a GPU pool and CPU slots; see runner.h.
 * Invariants, all under r->mu: a job is in exactly one of {its queue, the
 * running list, neither (finished)}; a GPU slot holds at most one job; a job
 * struct lives on its caller's stack and is touched by another thread only
 * while it is queued or running (the caller waits out in-flight progress
 * callbacks before it returns). One monitor thread raises stop flags for
 * cancelled and overdue running jobs and sends running heartbeats. */
#include "sandbox/pool/runner.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/pool/gpu.h"

#define CANCEL_POLL_MS	  25 /* how often a set cancel flag is noticed */
#define DEFAULT_MAX_QUEUE 64

enum { STOP_NONE = 0, STOP_CANCEL = 1, STOP_TIMEOUT = 2, STOP_CLOSING = 3 };

struct job {
	struct job *next; /* queue or running list link */
	struct job *prev; /* running list only */
	enum runner_kind kind;
	int pin_gpu; /* only gpu_want */
	int gpu_want;
	int gpu;	   /* assigned device ordinal, -1 for CPU */
	int started;	   /* left the queue for a slot */
	int done;	   /* fn returned */
	volatile int stop; /* what fn polls */
	int stop_reason;   /* STOP_* */
	int in_cb;	   /* a progress callback is running */
	const volatile int *cancel;
	runner_progress_fn progress;
	void *progress_arg;
	double progress_seq; /* strictly increasing progress value */
	int64_t enq_ms;	     /* monotonic ms */
	int64_t start_ms;
	int64_t timeout_ms; /* < 0: none */
	int64_t next_beat_ms;
	char label[RUNNER_LABEL_BYTES];
};

struct queue {
	struct job *head, *tail;
	size_t len;
};

struct runner {
	pthread_mutex_t mu;
	pthread_cond_t cv;     /* any queue or slot change */
	pthread_cond_t mon_cv; /* wakes the monitor */
	pthread_t monitor;
	int monitor_started;
	int monitor_ready; /* set by the monitor once it is in its loop */
	int closing;
	int users; /* threads inside runner_run */
	int gpu_count;
	int cpu_slots;
	int cpu_busy;
	size_t max_queue;
	int64_t default_timeout_ms;
	int heartbeat_ms;
	char no_gpu_reason[256];
	struct queue gq, cq;
	struct job *running; /* doubly linked, both kinds */
	struct job *gpu_slot[RUNNER_MAX_GPUS];
	uint64_t gpu_done[RUNNER_MAX_GPUS];
	uint64_t gpu_jobs_done, cpu_jobs_done, rejected_busy;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The caller's flag is set from another thread without our lock. */
static int cancelled(const volatile int *cancel)
{
	return cancel && __atomic_load_n(cancel, __ATOMIC_ACQUIRE) != 0;
}

static void wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t at_ms)
{
	struct timespec ts;

	ts.tv_sec = at_ms / 1000;
	ts.tv_nsec = (at_ms % 1000) * 1000000;
	(void)pthread_cond_timedwait(cv, mu, &ts);
}

static void queue_push(struct queue *q, struct job *j)
{
	j->next = NULL;
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	q->len++;
}

static void queue_remove(struct queue *q, struct job *j)
{
	struct job *prev = NULL;

	for (struct job *it = q->head; it; prev = it, it = it->next) {
		if (it != j)
			continue;
		if (prev)
			prev->next = it->next;
		else
			q->head = it->next;
		if (q->tail == it)
			q->tail = prev;
		q->len--;
		it->next = NULL;
		return;
	}
}

static size_t queue_position(const struct queue *q, const struct job *j)
{
	size_t pos = 1;

	for (const struct job *it = q->head; it; it = it->next, pos++)
		if (it == j)
			return pos;
	return 0;
}

static void running_add(struct runner *r, struct job *j)
{
	j->prev = NULL;
	j->next = r->running;
	if (r->running)
		r->running->prev = j;
	r->running = j;
}

static void running_remove(struct runner *r, struct job *j)
{
	if (j->prev)
		j->prev->next = j->next;
	else
		r->running = j->next;
	if (j->next)
		j->next->prev = j->prev;
	j->next = j->prev = NULL;
}

/* Starts every queued job that has a free slot, oldest first. A pinned job
 * waiting for its GPU does not hold back a later job that can use another:
 * FIFO among the jobs that can run. */
static void dispatch(struct runner *r)
{
	struct job *j, *next;
	int started = 0;

	if (r->closing)
		return; /* queued callers leave with KF_ECANCELED */
	for (j = r->gq.head; j; j = next) {
		int gpu = -1;

		next = j->next;
		if (j->pin_gpu) {
			if (!r->gpu_slot[j->gpu_want])
				gpu = j->gpu_want;
		} else {
			for (int g = 0; g < r->gpu_count; g++)
				if (!r->gpu_slot[g]) {
					gpu = g;
					break;
				}
		}
		if (gpu < 0)
			continue;
		queue_remove(&r->gq, j);
		r->gpu_slot[gpu] = j;
		j->gpu = gpu;
		j->started = 1;
		started = 1;
	}
	while (r->cq.head && r->cpu_busy < r->cpu_slots) {
		j = r->cq.head;
		queue_remove(&r->cq, j);
		r->cpu_busy++;
		j->gpu = -1;
		j->started = 1;
		started = 1;
	}
	if (started)
		pthread_cond_broadcast(&r->cv);
}

static void format_running(const struct job *j, char *buf, size_t cap, double running_s)
{
	const struct gpu_info *g;

	if (j->kind == RUNNER_CPU) {
		snprintf(buf, cap, "running (CPU job), %.0f s", running_s);
		return;
	}
	g = gpu_get(j->gpu);
	if (g)
		snprintf(buf, cap, "running on GPU %d (%s), %.0f s", j->gpu, g->name, running_s);
	else
		snprintf(buf, cap, "running on GPU %d, %.0f s", j->gpu, running_s);
}

/* Calls j's progress callback with the runner unlocked; j->in_cb keeps the
 * caller from returning (and the monitor from calling) meanwhile. */
static void notify(struct runner *r, struct job *j, size_t position, size_t queued)
{
	struct runner_progress p;
	char msg[160];
	int64_t t = now_ms();

	if (!j->progress)
		return;
	memset(&p, 0, sizeof(p));
	p.state = j->started ? RUNNER_RUNNING : RUNNER_QUEUED;
	p.position = j->started ? 0 : position;
	p.queued = queued;
	p.gpu = j->started ? j->gpu : -1;
	p.waited_s = (double)(t - j->enq_ms) / 1000.0;
	p.running_s = j->started ? (double)(t - j->start_ms) / 1000.0 : 0.0;
	p.progress = ++j->progress_seq;
	if (j->started)
		format_running(j, msg, sizeof(msg), p.running_s);
	else
		snprintf(msg, sizeof(msg), "queued: position %zu of %zu (%s jobs), waited %.0f s",
			 position, queued, j->kind == RUNNER_GPU ? "GPU" : "CPU", p.waited_s);
	p.message = msg;
	j->in_cb = 1;
	pthread_mutex_unlock(&r->mu);
	j->progress(j->progress_arg, &p);
	pthread_mutex_lock(&r->mu);
	j->in_cb = 0;
	pthread_cond_broadcast(&r->cv);
	pthread_cond_broadcast(&r->mon_cv);
}

static void *monitor_main(void *arg)
{
	struct runner *r = arg;

	pthread_mutex_lock(&r->mu);
	r->monitor_ready = 1;
	pthread_cond_broadcast(&r->cv);
	for (;;) {
		int64_t t = now_ms(), wake = -1;
		struct job *beat = NULL;

		/* Only once no caller is left can no job start any more. */
		if (r->closing && r->users == 0)
			break;
		for (struct job *j = r->running; j; j = j->next) {
			if (!j->stop) {
				if (r->closing)
					j->stop_reason = STOP_CLOSING;
				else if (cancelled(j->cancel))
					j->stop_reason = STOP_CANCEL;
				else if (j->timeout_ms >= 0 && t >= j->start_ms + j->timeout_ms)
					j->stop_reason = STOP_TIMEOUT;
				/* fn polls stop from its own thread */
				if (j->stop_reason)
					__atomic_store_n(&j->stop, 1, __ATOMIC_RELEASE);
			}
			if (!j->stop && j->cancel && (wake < 0 || t + CANCEL_POLL_MS < wake))
				wake = t + CANCEL_POLL_MS;
			if (!j->stop && j->timeout_ms >= 0 &&
			    (wake < 0 || j->start_ms + j->timeout_ms < wake))
				wake = j->start_ms + j->timeout_ms;
			if (j->progress && !j->done && !j->in_cb) {
				if (t >= j->next_beat_ms && !beat)
					beat = j;
				else if (wake < 0 || j->next_beat_ms < wake)
					wake = j->next_beat_ms;
			}
		}
		if (beat) {
			beat->next_beat_ms = t + r->heartbeat_ms;
			notify(r, beat, 0, r->gq.len);
			continue; /* the running list may have changed */
		}
		if (wake < 0)
			pthread_cond_wait(&r->mon_cv, &r->mu);
		else
			wait_until(&r->mon_cv, &r->mu, wake);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

int runner_new(int gpu_count, int cpu_slots, size_t max_queue, int64_t default_timeout_ms,
	       const char *no_gpu_reason, struct runner **out, struct kf_err *err)
{
	struct runner *r;
	pthread_condattr_t ca;

	*out = NULL;
	if (gpu_count < RUNNER_GPUS_PROBE || gpu_count > RUNNER_MAX_GPUS)
		return kf_err_set(err, KF_EINVAL, "runner: gpu_count %d is outside -1..%d",
				  gpu_count, RUNNER_MAX_GPUS);
	r = calloc(1, sizeof(*r));
	if (!r)
		return kf_err_set(err, KF_ENOMEM, "runner: out of memory");
	if (cpu_slots <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		cpu_slots = n > 0 ? (int)n : 1;
	}
	r->gpu_count = gpu_count;
	r->cpu_slots = cpu_slots;
	r->max_queue = max_queue ? max_queue : DEFAULT_MAX_QUEUE;
	r->default_timeout_ms = default_timeout_ms > 0 ? default_timeout_ms : -1;
	r->heartbeat_ms = 1000;
	snprintf(r->no_gpu_reason, sizeof(r->no_gpu_reason), "%s",
		 no_gpu_reason && *no_gpu_reason ? no_gpu_reason : "no GPU on this host");
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv, &ca);
	pthread_cond_init(&r->mon_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&r->monitor, NULL, monitor_main, r) != 0) {
		runner_free(r);
		return kf_err_set(err, KF_ENOMEM, "runner: cannot start the monitor thread");
	}
	r->monitor_started = 1;
	/* Return only once the monitor sits in its wait, holding no lock: a
	 * fork() right after (Check's forked tests, the jail) must not catch
	 * it inside the allocator, or the child deadlocks in malloc. */
	pthread_mutex_lock(&r->mu);
	while (!r->monitor_ready)
		pthread_cond_wait(&r->cv, &r->mu);
	pthread_mutex_unlock(&r->mu);
	*out = r;
	return 0;
}

void runner_free(struct runner *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->closing = 1;
	pthread_cond_broadcast(&r->cv);
	pthread_cond_broadcast(&r->mon_cv);
	while (r->users > 0)
		pthread_cond_wait(&r->cv, &r->mu);
	pthread_cond_broadcast(&r->mon_cv);
	pthread_mutex_unlock(&r->mu);
	if (r->monitor_started)
		pthread_join(r->monitor, NULL);
	pthread_cond_destroy(&r->mon_cv);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

/* Leaves the queue (cancelled or closing) and answers why. */
static int leave_queue(struct runner *r, struct job *j, struct queue *q, int closing,
		       struct kf_err *err)
{
	size_t pos = queue_position(q, j);

	queue_remove(q, j);
	dispatch(r); /* a pinned job leaving may unblock nobody, but cheap */
	if (closing)
		return kf_err_set(err, KF_ECANCELED, "cancelled: kforge is shutting down");
	return kf_err_set(err, KF_ECANCELED, "cancelled while queued (position %zu)", pos);
}

/* Waits in the queue until started. Called and returns with r->mu held.
 * Returns 0 once j->started, or KF_ECANCELED with j out of the queue. */
static int wait_turn(struct runner *r, struct job *j, struct queue *q, struct kf_err *err)
{
	size_t last_pos = 0;
	int64_t next_beat = 0;

	while (!j->started) {
		int64_t t = now_ms(), wake;
		size_t pos;

		if (r->closing)
			return leave_queue(r, j, q, 1, err);
		if (cancelled(j->cancel))
			return leave_queue(r, j, q, 0, err);
		pos = queue_position(q, j);
		if (j->progress && (pos != last_pos || t >= next_beat)) {
			last_pos = pos;
			next_beat = t + r->heartbeat_ms;
			notify(r, j, pos, q->len);
			continue; /* we may have started meanwhile */
		}
		wake = j->progress ? next_beat : t + 3600 * 1000;
		if (j->cancel && t + CANCEL_POLL_MS < wake)
			wake = t + CANCEL_POLL_MS;
		wait_until(&r->cv, &r->mu, wake);
	}
	return 0;
}

/* Resolves RUNNER_GPUS_PROBE once. Called with r->mu held; gpu_probe is
 * itself once-only, so later calls return at once. */
static void resolve_gpus(struct runner *r)
{
	int n;

	if (r->gpu_count != RUNNER_GPUS_PROBE)
		return;
	n = gpu_count();
	if (n > RUNNER_MAX_GPUS)
		n = RUNNER_MAX_GPUS;
	if (n == 0)
		snprintf(r->no_gpu_reason, sizeof(r->no_gpu_reason), "%s", gpu_no_gpu_reason());
	r->gpu_count = n;
}

int runner_gpu_count(struct runner *r)
{
	int n;

	pthread_mutex_lock(&r->mu);
	resolve_gpus(r);
	n = r->gpu_count;
	pthread_mutex_unlock(&r->mu);
	return n;
}

int runner_run(struct runner *r, enum runner_kind kind, runner_job_fn fn, void *arg,
	       runner_progress_fn progress, void *progress_arg, const volatile int *cancel,
	       const struct runner_opts *opts, struct kf_err *err)
{
	struct job j;
	struct queue *q;
	struct kf_err jerr = {0};
	int rc, reason;
	int64_t limit;

	if (kind != RUNNER_GPU && kind != RUNNER_CPU)
		return kf_err_set(err, KF_EINVAL, "runner: unknown job kind %d", (int)kind);
	memset(&j, 0, sizeof(j));
	j.kind = kind;
	j.gpu = -1;
	j.cancel = cancel;
	j.progress = progress;
	j.progress_arg = progress_arg;
	if (opts && opts->label)
		snprintf(j.label, sizeof(j.label), "%s", opts->label);
	limit = opts ? opts->timeout_ms : 0;
	if (limit == 0)
		limit = r->default_timeout_ms;
	j.timeout_ms = limit > 0 ? limit : -1;

	if (kind == RUNNER_GPU) {
		int ngpu = runner_gpu_count(r);

		/* no_gpu_reason is final once the count is resolved */
		if (ngpu == 0)
			return kf_err_set(err, KF_ENOGPU, "%s", r->no_gpu_reason);
		if (opts && opts->pin_gpu) {
			if (opts->gpu < 0 || opts->gpu >= ngpu)
				return kf_err_set(
					err, KF_EINVAL,
					"gpu: device %d does not exist on this host (GPUs 0..%d)",
					opts->gpu, ngpu - 1);
			j.pin_gpu = 1;
			j.gpu_want = opts->gpu;
		}
	}
	if (cancelled(cancel))
		return kf_err_set(err, KF_ECANCELED, "cancelled before it was queued");

	q = kind == RUNNER_GPU ? &r->gq : &r->cq;
	pthread_mutex_lock(&r->mu);
	if (r->closing) {
		pthread_mutex_unlock(&r->mu);
		return kf_err_set(err, KF_ECANCELED, "cancelled: kforge is shutting down");
	}
	if (q->len >= r->max_queue) {
		r->rejected_busy++;
		pthread_mutex_unlock(&r->mu);
		return kf_err_set(
			err, KF_EBUSY,
			"busy, retry: %zu %s jobs are already waiting (the queue holds at most %zu)",
			q->len, kind == RUNNER_GPU ? "GPU" : "CPU", r->max_queue);
	}
	r->users++;
	j.enq_ms = now_ms();
	queue_push(q, &j);
	dispatch(r);
	rc = wait_turn(r, &j, q, err);
	if (rc)
		goto out_locked;

	j.start_ms = now_ms();
	j.next_beat_ms = j.start_ms + r->heartbeat_ms;
	running_add(r, &j);
	pthread_cond_broadcast(&r->mon_cv);
	notify(r, &j, 0, q->len);
	pthread_mutex_unlock(&r->mu);

	rc = fn(arg, j.gpu, &j.stop, &jerr);

	pthread_mutex_lock(&r->mu);
	j.done = 1;
	while (j.in_cb)
		pthread_cond_wait(&r->cv, &r->mu);
	running_remove(r, &j);
	if (kind == RUNNER_GPU) {
		r->gpu_slot[j.gpu] = NULL;
		r->gpu_done[j.gpu]++;
		r->gpu_jobs_done++;
	} else {
		r->cpu_busy--;
		r->cpu_jobs_done++;
	}
	reason = j.stop_reason;
	dispatch(r);
	pthread_cond_broadcast(&r->mon_cv);
	if (rc == 0)
		goto out_locked;
	if (reason == STOP_TIMEOUT)
		rc = kf_err_set(err, KF_ETIMEOUT,
				"timeout: the job ran past its limit of %.1f s and was stopped",
				(double)j.timeout_ms / 1000.0);
	else if (reason == STOP_CANCEL)
		rc = kind == RUNNER_GPU
			     ? kf_err_set(err, KF_ECANCELED,
					  "cancelled while running on GPU %d: the job was stopped",
					  j.gpu)
			     : kf_err_set(err, KF_ECANCELED,
					  "cancelled while running: the job was stopped");
	else if (reason == STOP_CLOSING)
		rc = kf_err_set(err, KF_ECANCELED, "cancelled: kforge is shutting down");
	else
		rc = kf_err_set(err, rc, "%s", jerr.msg[0] ? jerr.msg : kf_err_name(rc));
out_locked:
	r->users--;
	pthread_cond_broadcast(&r->cv);
	pthread_cond_broadcast(&r->mon_cv);
	pthread_mutex_unlock(&r->mu);
	return rc;
}

void runner_status(struct runner *r, struct runner_status *out)
{
	int64_t t = now_ms();

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&r->mu);
	resolve_gpus(r);
	out->gpu_count = r->gpu_count;
	out->cpu_slots = r->cpu_slots;
	out->max_queue = r->max_queue;
	out->gpu_queued = r->gq.len;
	out->cpu_queued = r->cq.len;
	out->cpu_running = (size_t)r->cpu_busy;
	out->gpu_jobs_done = r->gpu_jobs_done;
	out->cpu_jobs_done = r->cpu_jobs_done;
	out->rejected_busy = r->rejected_busy;
	for (int g = 0; g < r->gpu_count; g++) {
		struct job *j = r->gpu_slot[g];

		out->gpus[g].jobs_done = r->gpu_done[g];
		if (!j)
			continue;
		out->gpus[g].busy = 1;
		snprintf(out->gpus[g].label, sizeof(out->gpus[g].label), "%s", j->label);
		out->gpus[g].running_s = j->start_ms ? (double)(t - j->start_ms) / 1000.0 : 0.0;
	}
	pthread_mutex_unlock(&r->mu);
}

void runner_set_heartbeat_ms(struct runner *r, int ms)
{
	pthread_mutex_lock(&r->mu);
	r->heartbeat_ms = ms > 0 ? ms : 1000;
	pthread_cond_broadcast(&r->mon_cv);
	pthread_mutex_unlock(&r->mu);
}
