/* check_runner: the job queue and GPU pool (sandbox/pool/runner.c) with a GPU
 * count injected by the test: FIFO order, one job per GPU at a time, queue
 * positions, cancellation while queued and running, timeouts, busy when the
 * queue is full, the no_gpu answer, CPU jobs in parallel. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/pool/runner.h"

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* A job that waits until its gate opens or stop is raised. */
struct gate {
	atomic_int open;
	atomic_int entered;
	atomic_int saw_stop;
	int gpu;
};

static int gate_job(void *arg, int gpu, const volatile int *stop, struct kf_err *err)
{
	struct gate *g = arg;

	g->gpu = gpu;
	atomic_store(&g->entered, 1);
	while (!atomic_load(&g->open)) {
		if (__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
			atomic_store(&g->saw_stop, 1);
			return kf_err_set(err, KF_ECANCELED, "gate job stopped");
		}
		sleep_ms(2);
	}
	return 0;
}

/* Records the order jobs start in. */
static pthread_mutex_t order_mu = PTHREAD_MUTEX_INITIALIZER;
static int order[16];
static int order_len;

struct tagged {
	int tag;
};

static int order_job(void *arg, int gpu, const volatile int *stop, struct kf_err *err)
{
	(void)gpu, (void)stop, (void)err;
	pthread_mutex_lock(&order_mu);
	order[order_len++] = ((struct tagged *)arg)->tag;
	pthread_mutex_unlock(&order_mu);
	return 0;
}

/* A thread calling runner_run. */
struct caller {
	pthread_t th;
	struct runner *r;
	enum runner_kind kind;
	runner_job_fn fn;
	void *arg;
	runner_progress_fn progress;
	void *progress_arg;
	volatile int cancel;
	struct runner_opts opts;
	int rc;
	struct kf_err err;
	atomic_int finished;
};

static void *caller_main(void *p)
{
	struct caller *c = p;

	c->rc = runner_run(c->r, c->kind, c->fn, c->arg, c->progress, c->progress_arg, &c->cancel,
			   &c->opts, &c->err);
	atomic_store(&c->finished, 1);
	return NULL;
}

static void caller_start(struct caller *c, struct runner *r, enum runner_kind kind,
			 runner_job_fn fn, void *arg)
{
	c->r = r;
	c->kind = kind;
	c->fn = fn;
	c->arg = arg;
	ck_assert_int_eq(pthread_create(&c->th, NULL, caller_main, c), 0);
}

static void caller_join(struct caller *c)
{
	pthread_join(c->th, NULL);
}

/* Waits (up to 2 s) until the GPU queue holds n jobs. */
static void wait_gpu_queued(struct runner *r, size_t n)
{
	struct runner_status st;

	for (int i = 0; i < 1000; i++) {
		runner_status(r, &st);
		if (st.gpu_queued == n)
			return;
		sleep_ms(2);
	}
	ck_abort_msg("GPU queue never reached %zu jobs", n);
}

static void wait_entered(struct gate *g)
{
	for (int i = 0; i < 1000 && !atomic_load(&g->entered); i++)
		sleep_ms(2);
	ck_assert_int_eq(atomic_load(&g->entered), 1);
}

static struct runner *new_runner(int gpus, int cpus, size_t max_queue)
{
	struct runner *r = NULL;
	struct kf_err err = {0};

	ck_assert_int_eq(runner_new(gpus, cpus, max_queue, 0, NULL, &r, &err), 0);
	runner_set_heartbeat_ms(r, 10);
	return r;
}

START_TEST(gpu_jobs_start_in_fifo_order)
{
	struct runner *r = new_runner(1, 2, 16);
	struct gate blocker = {0};
	struct caller cb = {0}, c[5];
	struct tagged tags[5];

	order_len = 0;
	memset(c, 0, sizeof(c));
	caller_start(&cb, r, RUNNER_GPU, gate_job, &blocker);
	wait_entered(&blocker);
	for (int i = 0; i < 5; i++) {
		tags[i].tag = i;
		caller_start(&c[i], r, RUNNER_GPU, order_job, &tags[i]);
		wait_gpu_queued(r, (size_t)i + 1);
	}
	atomic_store(&blocker.open, 1);
	caller_join(&cb);
	for (int i = 0; i < 5; i++) {
		caller_join(&c[i]);
		ck_assert_int_eq(c[i].rc, 0);
	}
	ck_assert_int_eq(order_len, 5);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(order[i], i);
	runner_free(r);
}
END_TEST

/* Counts jobs running per GPU at once. */
static atomic_int per_gpu[4];
static atomic_int overall, overall_max, per_gpu_max;
static atomic_int used[4];

static int counting_job(void *arg, int gpu, const volatile int *stop, struct kf_err *err)
{
	int n, all;

	(void)arg, (void)stop, (void)err;
	ck_assert(gpu >= 0 && gpu < 2);
	n = atomic_fetch_add(&per_gpu[gpu], 1) + 1;
	all = atomic_fetch_add(&overall, 1) + 1;
	atomic_store(&used[gpu], 1);
	if (n > atomic_load(&per_gpu_max))
		atomic_store(&per_gpu_max, n);
	if (all > atomic_load(&overall_max))
		atomic_store(&overall_max, all);
	sleep_ms(20);
	atomic_fetch_sub(&per_gpu[gpu], 1);
	atomic_fetch_sub(&overall, 1);
	return 0;
}

START_TEST(each_gpu_runs_one_job_at_a_time_and_all_gpus_are_used)
{
	struct runner *r = new_runner(2, 2, 16);
	struct caller c[8];
	struct runner_status st;

	memset(c, 0, sizeof(c));
	for (int i = 0; i < 8; i++)
		caller_start(&c[i], r, RUNNER_GPU, counting_job, NULL);
	for (int i = 0; i < 8; i++) {
		caller_join(&c[i]);
		ck_assert_int_eq(c[i].rc, 0);
	}
	ck_assert_int_eq(atomic_load(&per_gpu_max), 1);
	ck_assert_int_eq(atomic_load(&overall_max), 2);
	ck_assert_int_eq(atomic_load(&used[0]), 1);
	ck_assert_int_eq(atomic_load(&used[1]), 1);
	runner_status(r, &st);
	ck_assert_uint_eq(st.gpu_jobs_done, 8);
	ck_assert_uint_eq(st.gpus[0].jobs_done + st.gpus[1].jobs_done, 8);
	runner_free(r);
}
END_TEST

/* Records every progress report of one job. */
struct progress_log {
	pthread_mutex_t mu;
	int n;
	struct {
		enum runner_state state;
		size_t position;
		int gpu;
		double progress;
		char message[160];
	} e[512];
};

static void log_progress(void *arg, const struct runner_progress *p)
{
	struct progress_log *l = arg;

	pthread_mutex_lock(&l->mu);
	if (l->n < 512) {
		l->e[l->n].state = p->state;
		l->e[l->n].position = p->position;
		l->e[l->n].gpu = p->gpu;
		l->e[l->n].progress = p->progress;
		snprintf(l->e[l->n].message, sizeof(l->e[0].message), "%s", p->message);
		l->n++;
	}
	pthread_mutex_unlock(&l->mu);
}

START_TEST(queued_job_reports_its_position_then_running_on_its_gpu)
{
	struct runner *r = new_runner(1, 2, 16);
	struct gate blocker = {0}, second = {0}, third = {0};
	struct caller cb = {0}, c2 = {0}, c3 = {0};
	struct progress_log *log = calloc(1, sizeof(*log));
	int saw2 = 0, saw1 = 0, saw_running = 0;

	pthread_mutex_init(&log->mu, NULL);
	caller_start(&cb, r, RUNNER_GPU, gate_job, &blocker);
	wait_entered(&blocker);
	caller_start(&c2, r, RUNNER_GPU, gate_job, &second);
	wait_gpu_queued(r, 1);
	c3.progress = log_progress;
	c3.progress_arg = log;
	atomic_store(&third.open, 1);
	caller_start(&c3, r, RUNNER_GPU, gate_job, &third);
	wait_gpu_queued(r, 2);
	sleep_ms(30);
	atomic_store(&blocker.open, 1);
	wait_entered(&second);
	sleep_ms(30);
	atomic_store(&second.open, 1);
	caller_join(&cb);
	caller_join(&c2);
	caller_join(&c3);
	ck_assert_int_eq(c3.rc, 0);
	for (int i = 0; i < log->n; i++) {
		if (i > 0)
			ck_assert(log->e[i].progress > log->e[i - 1].progress);
		if (log->e[i].state == RUNNER_QUEUED) {
			ck_assert_msg(!saw_running, "queued after running");
			if (log->e[i].position == 2)
				saw2 = 1;
			if (log->e[i].position == 1) {
				ck_assert_msg(saw2, "position 1 before 2");
				saw1 = 1;
			}
			ck_assert_ptr_nonnull(strstr(log->e[i].message, "queued: position"));
		} else {
			ck_assert_int_eq(log->e[i].gpu, 0);
			ck_assert_ptr_nonnull(strstr(log->e[i].message, "running on GPU 0"));
			saw_running = 1;
		}
	}
	ck_assert(saw2 && saw1 && saw_running);
	free(log);
	runner_free(r);
}
END_TEST

static atomic_int never_called;

static int must_not_run(void *arg, int gpu, const volatile int *stop, struct kf_err *err)
{
	(void)arg, (void)gpu, (void)stop, (void)err;
	atomic_store(&never_called, 1);
	return 0;
}

START_TEST(cancel_removes_a_queued_job_without_running_it)
{
	struct runner *r = new_runner(1, 2, 16);
	struct gate blocker = {0};
	struct caller cb = {0}, cq = {0};
	struct runner_status st;

	atomic_store(&never_called, 0);
	caller_start(&cb, r, RUNNER_GPU, gate_job, &blocker);
	wait_entered(&blocker);
	caller_start(&cq, r, RUNNER_GPU, must_not_run, NULL);
	wait_gpu_queued(r, 1);
	__atomic_store_n(&cq.cancel, 1, __ATOMIC_RELEASE);
	caller_join(&cq);
	ck_assert_int_eq(cq.rc, KF_ECANCELED);
	ck_assert_int_eq(cq.err.code, KF_ECANCELED);
	ck_assert_ptr_nonnull(strstr(cq.err.msg, "cancelled while queued"));
	runner_status(r, &st);
	ck_assert_uint_eq(st.gpu_queued, 0);
	atomic_store(&blocker.open, 1);
	caller_join(&cb);
	ck_assert_int_eq(cb.rc, 0);
	ck_assert_int_eq(atomic_load(&never_called), 0);
	runner_free(r);
}
END_TEST

START_TEST(cancel_stops_a_running_job_and_the_next_job_runs)
{
	struct runner *r = new_runner(1, 2, 16);
	struct gate g = {0}, next = {0};
	struct caller c = {0}, cn = {0};

	caller_start(&c, r, RUNNER_GPU, gate_job, &g);
	wait_entered(&g);
	atomic_store(&next.open, 1);
	caller_start(&cn, r, RUNNER_GPU, gate_job, &next);
	wait_gpu_queued(r, 1);
	__atomic_store_n(&c.cancel, 1, __ATOMIC_RELEASE);
	caller_join(&c);
	ck_assert_int_eq(c.rc, KF_ECANCELED);
	ck_assert_int_eq(atomic_load(&g.saw_stop), 1);
	ck_assert_ptr_nonnull(strstr(c.err.msg, "cancelled while running on GPU 0"));
	caller_join(&cn);
	ck_assert_int_eq(cn.rc, 0);
	runner_free(r);
}
END_TEST

START_TEST(job_past_its_timeout_is_stopped_with_timeout)
{
	struct runner *r = new_runner(1, 2, 16);
	struct gate g = {0};
	struct caller c = {0};

	c.opts.timeout_ms = 50;
	caller_start(&c, r, RUNNER_GPU, gate_job, &g);
	caller_join(&c);
	ck_assert_int_eq(c.rc, KF_ETIMEOUT);
	ck_assert_int_eq(atomic_load(&g.saw_stop), 1);
	ck_assert_ptr_nonnull(strstr(c.err.msg, "limit of 0.1 s"));
	runner_free(r);
}
END_TEST

START_TEST(default_timeout_applies_when_the_job_sets_none)
{
	struct runner *r = NULL;
	struct gate g = {0};
	struct caller c = {0};

	ck_assert_int_eq(runner_new(1, 1, 4, 40, NULL, &r, NULL), 0);
	caller_start(&c, r, RUNNER_GPU, gate_job, &g);
	caller_join(&c);
	ck_assert_int_eq(c.rc, KF_ETIMEOUT);
	runner_free(r);
}
END_TEST

START_TEST(full_queue_answers_busy_retry)
{
	struct runner *r = new_runner(1, 2, 2);
	struct gate blocker = {0}, q1 = {0}, q2 = {0};
	struct caller cb = {0}, c1 = {0}, c2 = {0};
	struct kf_err err = {0};
	struct runner_status st;

	atomic_store(&never_called, 0);
	caller_start(&cb, r, RUNNER_GPU, gate_job, &blocker);
	wait_entered(&blocker);
	atomic_store(&q1.open, 1);
	atomic_store(&q2.open, 1);
	caller_start(&c1, r, RUNNER_GPU, gate_job, &q1);
	wait_gpu_queued(r, 1);
	caller_start(&c2, r, RUNNER_GPU, gate_job, &q2);
	wait_gpu_queued(r, 2);
	ck_assert_int_eq(
		runner_run(r, RUNNER_GPU, must_not_run, NULL, NULL, NULL, NULL, NULL, &err),
		KF_EBUSY);
	ck_assert_ptr_nonnull(strstr(err.msg, "busy, retry"));
	runner_status(r, &st);
	ck_assert_uint_eq(st.rejected_busy, 1);
	atomic_store(&blocker.open, 1);
	caller_join(&cb);
	caller_join(&c1);
	caller_join(&c2);
	ck_assert_int_eq(c1.rc, 0);
	ck_assert_int_eq(c2.rc, 0);
	ck_assert_int_eq(atomic_load(&never_called), 0);
	runner_free(r);
}
END_TEST

START_TEST(gpu_job_without_gpus_answers_no_gpu_with_the_reason)
{
	struct runner *r = NULL;
	struct kf_err err = {0};
	struct gate g = {0};

	atomic_store(&never_called, 0);
	ck_assert_int_eq(runner_new(0, 1, 4, 0,
				    "libcuda.so.1 not found: no NVIDIA driver on this host", &r,
				    &err),
			 0);
	ck_assert_int_eq(runner_gpu_count(r), 0);
	ck_assert_int_eq(
		runner_run(r, RUNNER_GPU, must_not_run, NULL, NULL, NULL, NULL, NULL, &err),
		KF_ENOGPU);
	ck_assert_str_eq(err.msg, "libcuda.so.1 not found: no NVIDIA driver on this host");
	ck_assert_int_eq(atomic_load(&never_called), 0);
	/* compiles still work */
	atomic_store(&g.open, 1);
	ck_assert_int_eq(runner_run(r, RUNNER_CPU, gate_job, &g, NULL, NULL, NULL, NULL, NULL), 0);
	ck_assert_int_eq(g.gpu, -1);
	runner_free(r);
}
END_TEST

START_TEST(cpu_jobs_run_while_every_gpu_is_busy)
{
	struct runner *r = new_runner(1, 2, 4);
	struct gate blocker = {0}, c1g = {0}, c2g = {0};
	struct caller cb = {0}, c1 = {0}, c2 = {0};
	struct runner_status st;

	caller_start(&cb, r, RUNNER_GPU, gate_job, &blocker);
	wait_entered(&blocker);
	caller_start(&c1, r, RUNNER_CPU, gate_job, &c1g);
	caller_start(&c2, r, RUNNER_CPU, gate_job, &c2g);
	wait_entered(&c1g);
	wait_entered(&c2g); /* both CPU slots at once */
	runner_status(r, &st);
	ck_assert_uint_eq(st.cpu_running, 2);
	ck_assert_int_eq(st.gpus[0].busy, 1);
	atomic_store(&c1g.open, 1);
	atomic_store(&c2g.open, 1);
	caller_join(&c1);
	caller_join(&c2);
	ck_assert_int_eq(atomic_load(&cb.finished), 0); /* GPU job still running */
	atomic_store(&blocker.open, 1);
	caller_join(&cb);
	runner_free(r);
}
END_TEST

START_TEST(pinned_job_runs_on_its_gpu_and_unknown_gpu_is_refused)
{
	struct runner *r = new_runner(2, 1, 4);
	struct gate g = {0};
	struct runner_opts o = {0};
	struct kf_err err = {0};

	atomic_store(&g.open, 1);
	o.pin_gpu = 1;
	o.gpu = 1;
	ck_assert_int_eq(runner_run(r, RUNNER_GPU, gate_job, &g, NULL, NULL, NULL, &o, &err), 0);
	ck_assert_int_eq(g.gpu, 1);
	o.gpu = 2;
	ck_assert_int_eq(runner_run(r, RUNNER_GPU, must_not_run, NULL, NULL, NULL, NULL, &o, &err),
			 KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "device 2 does not exist"));
	runner_free(r);
}
END_TEST

START_TEST(pinned_job_waiting_for_its_gpu_does_not_block_others)
{
	struct runner *r = new_runner(2, 1, 8);
	struct gate blocker = {0}, pinned = {0}, any = {0};
	struct caller cb = {0}, cp = {0}, ca = {0};

	cb.opts.pin_gpu = 1;
	cb.opts.gpu = 0;
	caller_start(&cb, r, RUNNER_GPU, gate_job, &blocker);
	wait_entered(&blocker);
	cp.opts.pin_gpu = 1;
	cp.opts.gpu = 0;
	atomic_store(&pinned.open, 1);
	caller_start(&cp, r, RUNNER_GPU, gate_job, &pinned);
	wait_gpu_queued(r, 1);
	atomic_store(&any.open, 1);
	caller_start(&ca, r, RUNNER_GPU, gate_job, &any);
	caller_join(&ca); /* ran on GPU 1 while the pinned job waits */
	ck_assert_int_eq(ca.rc, 0);
	ck_assert_int_eq(any.gpu, 1);
	ck_assert_int_eq(atomic_load(&cp.finished), 0);
	atomic_store(&blocker.open, 1);
	caller_join(&cb);
	caller_join(&cp);
	ck_assert_int_eq(pinned.gpu, 0);
	runner_free(r);
}
END_TEST

static int failing_job(void *arg, int gpu, const volatile int *stop, struct kf_err *err)
{
	(void)arg, (void)gpu, (void)stop;
	return kf_err_set(err, KF_EFAULT, "kernel faulted: illegal address");
}

START_TEST(job_error_comes_back_with_its_message)
{
	struct runner *r = new_runner(1, 1, 4);
	struct kf_err err = {0};

	ck_assert_int_eq(runner_run(r, RUNNER_GPU, failing_job, NULL, NULL, NULL, NULL, NULL, &err),
			 KF_EFAULT);
	ck_assert_str_eq(err.msg, "kernel faulted: illegal address");
	runner_free(r);
}
END_TEST

static int slow_job(void *arg, int gpu, const volatile int *stop, struct kf_err *err)
{
	(void)arg, (void)gpu, (void)stop, (void)err;
	sleep_ms(120);
	return 0;
}

START_TEST(running_job_gets_heartbeats_that_increase)
{
	struct runner *r = new_runner(1, 1, 4);
	struct progress_log *log = calloc(1, sizeof(*log));
	int running = 0;

	pthread_mutex_init(&log->mu, NULL);
	ck_assert_int_eq(
		runner_run(r, RUNNER_GPU, slow_job, NULL, log_progress, log, NULL, NULL, NULL), 0);
	for (int i = 0; i < log->n; i++) {
		if (i)
			ck_assert(log->e[i].progress > log->e[i - 1].progress);
		running += log->e[i].state == RUNNER_RUNNING;
	}
	ck_assert_msg(running >= 3, "only %d running reports", running);
	free(log);
	runner_free(r);
}
END_TEST

struct freer {
	pthread_t th;
	struct runner *r;
};

static void *free_main(void *p)
{
	runner_free(((struct freer *)p)->r);
	return NULL;
}

START_TEST(free_stops_running_jobs_and_cancels_queued_ones)
{
	struct runner *r = new_runner(1, 1, 4);
	struct gate running = {0};
	struct caller cr = {0}, cq = {0};
	struct freer f = {0};

	atomic_store(&never_called, 0);
	caller_start(&cr, r, RUNNER_GPU, gate_job, &running);
	wait_entered(&running);
	caller_start(&cq, r, RUNNER_GPU, must_not_run, NULL);
	wait_gpu_queued(r, 1);
	f.r = r;
	ck_assert_int_eq(pthread_create(&f.th, NULL, free_main, &f), 0);
	caller_join(&cr);
	caller_join(&cq);
	pthread_join(f.th, NULL);
	ck_assert_int_eq(cr.rc, KF_ECANCELED);
	ck_assert_int_eq(atomic_load(&running.saw_stop), 1);
	ck_assert_int_eq(cq.rc, KF_ECANCELED);
	ck_assert_ptr_nonnull(strstr(cq.err.msg, "shutting down"));
	ck_assert_int_eq(atomic_load(&never_called), 0);
}
END_TEST

START_TEST(probed_pool_without_a_driver_answers_no_gpu_with_the_probe_reason)
{
	struct runner *r = NULL;
	struct kf_err err = {0};

	/* Forcing "no GPU" is the one override the probe honours. */
	setenv("KFORGE_NO_GPU", "1", 1);
	ck_assert_int_eq(runner_new(RUNNER_GPUS_PROBE, 1, 4, 0, NULL, &r, &err), 0);
	ck_assert_int_eq(
		runner_run(r, RUNNER_GPU, must_not_run, NULL, NULL, NULL, NULL, NULL, &err),
		KF_ENOGPU);
	ck_assert_str_eq(err.msg, "no GPU: disabled by KFORGE_NO_GPU in the environment");
	ck_assert_int_eq(runner_gpu_count(r), 0);
	runner_free(r);
}
END_TEST

START_TEST(bad_gpu_count_is_refused)
{
	struct runner *r = NULL;
	struct kf_err err = {0};

	ck_assert_int_eq(runner_new(RUNNER_MAX_GPUS + 1, 1, 4, 0, NULL, &r, &err), KF_EINVAL);
	ck_assert_ptr_null(r);
	ck_assert_ptr_nonnull(strstr(err.msg, "gpu_count"));
}
END_TEST

START_TEST(cancel_set_before_queueing_runs_nothing)
{
	struct runner *r = new_runner(1, 1, 4);
	volatile int cancel = 1;
	struct kf_err err = {0};

	atomic_store(&never_called, 0);
	ck_assert_int_eq(
		runner_run(r, RUNNER_CPU, must_not_run, NULL, NULL, NULL, &cancel, NULL, &err),
		KF_ECANCELED);
	ck_assert_int_eq(atomic_load(&never_called), 0);
	runner_free(r);
}
END_TEST

/* Jobs that check nobody else is on their GPU. */
static atomic_int stress_on[4]; /* GPUs 0-2, then the CPU slots */
static atomic_int stress_overlap;

static int stress_job(void *arg, int gpu, const volatile int *stop, struct kf_err *err)
{
	int slot = gpu < 0 ? 3 : gpu, limit = gpu < 0 ? 2 : 1; /* CPU: 2 slots */

	(void)arg;
	if (atomic_fetch_add(&stress_on[slot], 1) + 1 > limit)
		atomic_store(&stress_overlap, 1);
	for (int i = 0; i < 3; i++) {
		if (__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
			atomic_fetch_sub(&stress_on[slot], 1);
			return kf_err_set(err, KF_ECANCELED, "stopped");
		}
		sleep_ms(1);
	}
	atomic_fetch_sub(&stress_on[slot], 1);
	return 0;
}

START_TEST(many_jobs_with_cancels_all_return_and_leave_the_pool_idle)
{
	struct runner *r = new_runner(3, 2, 64);
	struct caller *c = calloc(48, sizeof(*c));
	struct runner_status st;
	int ok = 0, cancelled = 0;

	for (int i = 0; i < 48; i++)
		caller_start(&c[i], r, i % 5 == 4 ? RUNNER_CPU : RUNNER_GPU, stress_job, NULL);
	for (int i = 0; i < 48; i += 3) {
		sleep_ms(1);
		__atomic_store_n(&c[i].cancel, 1, __ATOMIC_RELEASE);
	}
	for (int i = 0; i < 48; i++) {
		caller_join(&c[i]);
		ck_assert_msg(c[i].rc == 0 || c[i].rc == KF_ECANCELED, "job %d: %d %s", i, c[i].rc,
			      c[i].err.msg);
		ok += c[i].rc == 0;
		cancelled += c[i].rc == KF_ECANCELED;
	}
	ck_assert_int_eq(ok + cancelled, 48);
	ck_assert_int_ge(ok, 32); /* only every third was cancelled */
	ck_assert_int_eq(atomic_load(&stress_overlap), 0);
	runner_status(r, &st);
	ck_assert_uint_eq(st.gpu_queued, 0);
	ck_assert_uint_eq(st.cpu_queued, 0);
	ck_assert_uint_eq(st.cpu_running, 0);
	for (int g = 0; g < 3; g++)
		ck_assert_int_eq(st.gpus[g].busy, 0);
	free(c);
	runner_free(r);
}
END_TEST

static Suite *runner_suite(void)
{
	Suite *s = suite_create("runner");
	TCase *q = tcase_create("queue");
	TCase *c = tcase_create("cancel_timeout");
	TCase *g = tcase_create("pool");

	tcase_set_timeout(q, 20);
	tcase_set_timeout(c, 20);
	tcase_set_timeout(g, 20);
	tcase_add_test(q, gpu_jobs_start_in_fifo_order);
	tcase_add_test(q, queued_job_reports_its_position_then_running_on_its_gpu);
	tcase_add_test(q, full_queue_answers_busy_retry);
	tcase_add_test(q, running_job_gets_heartbeats_that_increase);
	tcase_add_test(q, job_error_comes_back_with_its_message);
	tcase_add_test(c, cancel_removes_a_queued_job_without_running_it);
	tcase_add_test(c, cancel_stops_a_running_job_and_the_next_job_runs);
	tcase_add_test(c, cancel_set_before_queueing_runs_nothing);
	tcase_add_test(c, job_past_its_timeout_is_stopped_with_timeout);
	tcase_add_test(c, default_timeout_applies_when_the_job_sets_none);
	tcase_add_test(c, free_stops_running_jobs_and_cancels_queued_ones);
	tcase_add_test(g, each_gpu_runs_one_job_at_a_time_and_all_gpus_are_used);
	tcase_add_test(g, gpu_job_without_gpus_answers_no_gpu_with_the_reason);
	tcase_add_test(g, cpu_jobs_run_while_every_gpu_is_busy);
	tcase_add_test(g, pinned_job_runs_on_its_gpu_and_unknown_gpu_is_refused);
	tcase_add_test(g, pinned_job_waiting_for_its_gpu_does_not_block_others);
	tcase_add_test(g, bad_gpu_count_is_refused);
	tcase_add_test(g, many_jobs_with_cancels_all_return_and_leave_the_pool_idle);
	tcase_add_test(g, probed_pool_without_a_driver_answers_no_gpu_with_the_probe_reason);
	suite_add_tcase(s, q);
	suite_add_tcase(s, c);
	suite_add_tcase(s, g);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(runner_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
