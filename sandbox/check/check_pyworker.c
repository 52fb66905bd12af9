/* check_pyworker: the warm sandboxed python workers for torch references
 * (check_pyworker.h). A worker is a thread of the daemon that sits in
 * jail_run for the python's whole life (so the jail's limits, its death
 * with the daemon and its kill on a cancel flag all apply unchanged) and a
 * SOCK_SEQPACKET socket pair: the python's end is its fd 3, the daemon's
 * end carries one JSON message per packet (torch_worker.py says which). */
#include "sandbox/check/check_pyworker.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/embed.h"
#include "base/fs.h"
#include "base/log.h"
#include "sandbox/jail/jail.h"

EMBED_FILE(kf_torch_worker, "sandbox/check/torch_worker.py");

#define PYW_SCRIPT   "torch_worker.py"
#define PYW_WORK     "work"
#define PYW_LIFE_MS  (UINT_MAX - 1000u) /* the jail's wall clock: the daemon's life */
#define PYW_LIFE_CPU (7u * 24 * 3600)	/* the parent's CPU s; each job lowers its own */
#define PYW_POLL_MS  50			/* how often a wait looks at cancel */

/* --- the host's python ---------------------------------------------------- */

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
#define PYW_MAX_PATHS 12
static char py_exe[PATH_MAX];
static char py_paths[PYW_MAX_PATHS][PATH_MAX];
static size_t py_paths_len;
static char py_pythonpath[4096];
static char py_why[256];

/* Where python3 and torch live, found once by a trusted probe that only
 * imports torch: the interpreter's real path and every directory of its
 * sys.path (standard library, site-packages), bound read-only into the
 * jail. */
static void probe(void)
{
	FILE *f = popen("python3 -c 'import os, sys, torch, numpy; "
			"print(os.path.realpath(sys.executable)); "
			"[print(p) for p in sys.path if p and os.path.isdir(p)]' 2>&1",
			"r");
	if (!f) {
		snprintf(py_why, sizeof py_why, "python3 could not be started");
		return;
	}
	char line[PATH_MAX];
	int n = 0, bad = 0;
	size_t pp = 0;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		if (line[0] != '/') {
			bad = 1;
			continue;
		}
		if (n++ == 0) {
			snprintf(py_exe, sizeof py_exe, "%s", line);
			continue;
		}
		if (py_paths_len < PYW_MAX_PATHS) {
			snprintf(py_paths[py_paths_len++], PATH_MAX, "%s", line);
			pp += (size_t)snprintf(py_pythonpath + pp, sizeof py_pythonpath - pp,
					       "%s%s", pp ? ":" : "", line);
			if (pp >= sizeof py_pythonpath)
				pp = sizeof py_pythonpath - 1;
		}
	}
	int st = pclose(f);
	if (st != 0 || bad || !py_exe[0]) {
		py_exe[0] = 0;
		snprintf(py_why, sizeof py_why,
			 "python3 -c 'import torch, numpy' failed on this host");
	}
}

int check_pyworker_probe(struct kf_err *err)
{
	pthread_once(&probe_once, probe);
	if (!py_exe[0])
		return kf_err_set(err, KF_ENOTFOUND,
				  "torch not available: %s; use a built-in op or a CUDA "
				  "source as the reference",
				  py_why);
	return 0;
}

/* --- the set -------------------------------------------------------------- */

enum pyw_state { PYW_DOWN, PYW_IDLE, PYW_BUSY };

struct check_pyworker {
	enum pyw_state state; /* under the set's mutex */
	int up;		      /* thread started (stop_worker joins it); the holder's */
	int fd;		      /* the daemon's end of the socket pair, or -1 */
	int peer;	      /* the python's end; the thread closes it after jail_run */
	pthread_t th;
	volatile int kill; /* the jail's cancel flag: 1 kills the python */
	int dead;	   /* a job found it dead or hung: stopped at release */
	struct jail *jail;
	char dir[PATH_MAX];	 /* <data_dir>/jobs/pyworker-XXXXXX, at /job in the jail */
	char work[PATH_MAX + 8]; /* dir/work: the job's directory */
	char ended[300];	 /* how jail_run ended, set by the thread */
};

struct check_pyworkers {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct check_pyworker w[CHECK_PYWORKER_MAX];
};

static struct check_pyworkers *set_of(struct check_env *env, struct kf_err *err)
{
	pthread_mutex_lock(&env->jail_mu);
	if (!env->pyworkers) {
		struct check_pyworkers *s = calloc(1, sizeof *s);
		if (s) {
			pthread_mutex_init(&s->mu, NULL);
			pthread_cond_init(&s->cv, NULL);
			for (int i = 0; i < CHECK_PYWORKER_MAX; i++)
				s->w[i].fd = s->w[i].peer = -1;
			env->pyworkers = s;
		}
	}
	struct check_pyworkers *s = env->pyworkers;
	pthread_mutex_unlock(&env->jail_mu);
	if (!s)
		kf_err_set(err, KF_ENOMEM, "out of memory for the torch workers");
	return s;
}

/* --- one worker ------------------------------------------------------------ */

/* The thread: the python's whole life in the jail. */
static void *worker_main(void *arg)
{
	struct check_pyworker *w = arg;
	const char *argv[] = {py_exe, PYW_SCRIPT, jail_mode_name(w->jail), w->dir, NULL};
	char pp[sizeof py_pythonpath + 16];
	snprintf(pp, sizeof pp, "PYTHONPATH=%s", py_pythonpath);
	const char *envp[] = {pp, "OMP_NUM_THREADS=8", "PYTHONDONTWRITEBYTECODE=1", NULL};
	struct jail_bind binds[PYW_MAX_PATHS + 1];
	binds[0] = (struct jail_bind){py_exe, NULL};
	for (size_t k = 0; k < py_paths_len; k++)
		binds[k + 1] = (struct jail_bind){py_paths[k], NULL};
	int fds[1] = {w->peer};
	struct jail_job jj = {.argv = argv,
			      .job_dir = w->dir,
			      .env = envp,
			      .ro_binds = binds,
			      .ro_binds_len = py_paths_len + 1,
			      .pass_fds = fds,
			      .pass_fds_len = 1,
			      .wall_ms = PYW_LIFE_MS,
			      .cpu_s = PYW_LIFE_CPU,
			      .cancel = &w->kill,
			      .stdout_cap_bytes = 8192,
			      .stderr_cap_bytes = 8192};
	struct jail_result res;
	struct kf_err e = {0};
	int rc = jail_run(w->jail, &jj, &res, &e);
	const char *o = res.errout_len ? res.errout : res.out ? res.out : "";
	size_t l = strlen(o);
	if (rc)
		snprintf(w->ended, sizeof w->ended, "%s", e.msg);
	else if (res.exited)
		snprintf(w->ended, sizeof w->ended, "exit status %d: %s", res.exit_code,
			 l > 200 ? o + l - 200 : o);
	else
		snprintf(w->ended, sizeof w->ended, "signal %d: %s", res.term_signal,
			 l > 200 ? o + l - 200 : o);
	jail_result_fini(&res);
	close(w->peer); /* the daemon's end now reads EOF */
	w->peer = -1;
	return NULL;
}

/* Removes everything in w->dir but the script and makes an empty work/:
 * what one job wrote never reaches the next. */
static int reset_dir(struct check_pyworker *w, struct kf_err *err)
{
	DIR *d = opendir(w->dir);
	if (!d)
		return kf_err_set(err, KF_EIO, "cannot read %s: %s", w->dir, strerror(errno));
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    strcmp(e->d_name, PYW_SCRIPT))
			fs_rm_tree_at(dirfd(d), e->d_name);
	closedir(d);
	if (mkdir(w->work, 0700))
		return kf_err_set(err, KF_EIO, "cannot create %s: %s", w->work, strerror(errno));
	return 0;
}

/* Kills the python (if running), joins its thread, removes its directory. */
static void stop_worker(struct check_pyworker *w)
{
	if (w->up) {
		w->kill = 1;
		pthread_join(w->th, NULL);
		w->up = 0;
	}
	if (w->fd >= 0)
		close(w->fd);
	if (w->peer >= 0)
		close(w->peer);
	w->fd = w->peer = -1;
	if (w->dir[0])
		check_jobdir_remove(w->dir);
	w->dir[0] = 0;
	w->dead = 0;
}

/* Reads one message from fd into buf (cap bytes, NUL-terminated), waiting
 * until deadline_ms (check_now_ms clock). Returns its length, 0 at EOF, -1
 * at the deadline, -2 when cancel became nonzero, -3 on a read error. */
static ssize_t recv_msg(int fd, char *buf, size_t cap, double deadline_ms,
			const volatile int *cancel)
{
	for (;;) {
		if (cancel && *cancel)
			return -2;
		double left = deadline_ms - check_now_ms();
		if (left <= 0)
			return -1;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int n = poll(&p, 1, left < PYW_POLL_MS ? (int)left + 1 : PYW_POLL_MS);
		if (n < 0 && errno != EINTR)
			return -3;
		if (n <= 0)
			continue;
		ssize_t r = recv(fd, buf, cap - 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -3;
		buf[r] = 0;
		return r;
	}
}

/* 1 when w's python answers a ping within CHECK_PYWORKER_GRACE_MS. */
static int alive(struct check_pyworker *w)
{
	static const char PING[] = "{\"ping\": true}";
	char msg[CHECK_PYWORKER_MSG_MAX];
	if (send(w->fd, PING, sizeof PING - 1, MSG_NOSIGNAL) != (ssize_t)sizeof PING - 1)
		return 0;
	if (recv_msg(w->fd, msg, sizeof msg, check_now_ms() + CHECK_PYWORKER_GRACE_MS, NULL) <= 0)
		return 0;
	json_t *a = json_loads(msg, 0, NULL);
	int ok = json_is_true(json_object_get(a, "pong"));
	json_decref(a);
	return ok;
}

/* Starts w: its directory with the script, the socket pair, the thread,
 * and waits for the python to say it imported torch. */
static int start_worker(struct check_env *env, struct check_pyworker *w, const volatile int *cancel,
			struct kf_err *err)
{
	int rc = check_get_jail(env, &w->jail, err);
	if (rc)
		return rc;
	const char *base = env->data_dir ? env->data_dir : "/tmp";
	char jobs[PATH_MAX - 32];
	if (snprintf(jobs, sizeof jobs, "%s/jobs", base) >= (int)sizeof jobs)
		return kf_err_set(err, KF_ETOOBIG, "the data directory's path is too long");
	if (mkdir(jobs, 0700) && errno != EEXIST)
		return kf_err_set(err, KF_EIO, "cannot create %s: %s", jobs, strerror(errno));
	snprintf(w->dir, sizeof w->dir, "%s/pyworker-XXXXXX", jobs);
	if (!mkdtemp(w->dir)) {
		rc = kf_err_set(err, KF_EIO, "cannot create the torch worker's directory in %s: %s",
				jobs, strerror(errno));
		w->dir[0] = 0;
		return rc;
	}
	snprintf(w->work, sizeof w->work, "%s/" PYW_WORK, w->dir);
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/" PYW_SCRIPT, w->dir);
	if (fs_write_file(p, kf_torch_worker_start,
			  (size_t)(kf_torch_worker_end - kf_torch_worker_start)))
		rc = kf_err_set(err, KF_EIO, "cannot write %s", p);
	int sv[2];
	if (!rc && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		rc = kf_err_set(err, KF_EIO, "socketpair: %s", strerror(errno));
	if (rc)
		goto out;
	w->fd = sv[0];
	w->peer = sv[1];
	w->kill = 0;
	w->ended[0] = 0;
	if ((rc = reset_dir(w, err)))
		goto out;
	if (pthread_create(&w->th, NULL, worker_main, w)) {
		rc = kf_err_set(err, KF_EIO, "cannot start the torch worker's thread");
		goto out;
	}
	w->up = 1;
	char msg[CHECK_PYWORKER_MSG_MAX];
	ssize_t n =
		recv_msg(w->fd, msg, sizeof msg, check_now_ms() + CHECK_PYWORKER_START_MS, cancel);
	json_t *hello = n > 0 ? json_loads(msg, 0, NULL) : NULL;
	const char *why = json_string_value(json_object_get(hello, "error"));
	if (n == -2)
		rc = kf_err_set(err, KF_ECANCELED, "cancelled while the torch worker started");
	else if (n == -1)
		rc = kf_err_set(err, KF_ETIMEOUT,
				"the torch worker did not import torch within %u ms",
				CHECK_PYWORKER_START_MS);
	else if (why)
		rc = kf_err_set(err, KF_ENOTFOUND,
				"%s; use a built-in op or a CUDA source as the reference", why);
	else if (!json_is_true(json_object_get(hello, "ready"))) {
		stop_worker(w); /* joins the thread: ended says how it died */
		rc = kf_err_set(err, KF_EFAULT, "the torch worker did not start: %s",
				w->ended[0] ? w->ended : "no answer");
	}
	json_decref(hello);
out:
	if (rc)
		stop_worker(w);
	return rc;
}

int check_pyworker_lease(struct check_env *env, const volatile int *cancel,
			 struct check_pyworker **out, int *started, double *start_ms,
			 struct kf_err *err)
{
	*out = NULL;
	*started = 0;
	*start_ms = 0;
	int rc = check_pyworker_probe(err);
	if (rc)
		return rc;
	struct check_pyworkers *s = set_of(env, err);
	if (!s)
		return KF_ENOMEM;
	struct check_pyworker *w = NULL;
	pthread_mutex_lock(&s->mu);
	while (!w) {
		for (int i = 0; i < CHECK_PYWORKER_MAX && !w; i++)
			if (s->w[i].state == PYW_IDLE)
				w = &s->w[i];
		for (int i = 0; i < CHECK_PYWORKER_MAX && !w; i++)
			if (s->w[i].state == PYW_DOWN)
				w = &s->w[i];
		if (w)
			break;
		if (cancel && *cancel) {
			pthread_mutex_unlock(&s->mu);
			return kf_err_set(err, KF_ECANCELED,
					  "cancelled waiting for a torch worker");
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += PYW_POLL_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&s->cv, &s->mu, &ts);
	}
	int cold = w->state == PYW_DOWN;
	w->state = PYW_BUSY;
	pthread_mutex_unlock(&s->mu);
	/* An idle worker may have died since its last job (killed from
	 * outside): it must answer a ping, else it is replaced. */
	if (!cold && !alive(w)) {
		log_warn("check", "the idle torch worker in %s did not answer; starting another",
			 w->dir);
		stop_worker(w);
		cold = 1;
	}
	if (cold) {
		double t0 = check_now_ms();
		rc = start_worker(env, w, cancel, err);
		*start_ms = check_now_ms() - t0;
		*started = 1;
		if (rc) {
			pthread_mutex_lock(&s->mu);
			w->state = PYW_DOWN;
			pthread_cond_broadcast(&s->cv);
			pthread_mutex_unlock(&s->mu);
			return rc;
		}
		log_info("check", "torch worker started in %.0f ms (%s)", *start_ms, w->dir);
	}
	*out = w;
	return 0;
}

const char *check_pyworker_dir(const struct check_pyworker *w)
{
	return w->work;
}

/* The worker's answer to a job -> st. Returns 0, or KF_EIO for an answer
 * that is not one. */
static int parse_status(const char *msg, struct check_pyworker_status *st, struct kf_err *err)
{
	json_t *a = json_loads(msg, 0, NULL);
	const char *s = json_string_value(json_object_get(a, "status"));
	int rc = 0;
	memset(st, 0, sizeof *st);
	st->wall_ms = json_number_value(json_object_get(a, "ms"));
	if (s && !strcmp(s, "exited")) {
		st->exited = 1;
		st->code = (int)json_integer_value(json_object_get(a, "code"));
	} else if (s && !strcmp(s, "signal")) {
		st->signal = (int)json_integer_value(json_object_get(a, "signal"));
		/* SIGXCPU: the job's CPU limit, a time limit like the wall one */
		st->timed_out = st->signal == SIGXCPU;
	} else if (s && !strcmp(s, "timeout")) {
		st->timed_out = 1;
	} else {
		rc = kf_err_set(err, KF_EIO, "the torch worker answered '%.80s', not a job status",
				msg);
	}
	json_decref(a);
	return rc;
}

int check_pyworker_run(struct check_pyworker *w, unsigned wall_ms, const volatile int *cancel,
		       struct check_pyworker_status *st, struct kf_err *err)
{
	memset(st, 0, sizeof *st);
	char msg[CHECK_PYWORKER_MSG_MAX];
	/* The CPU limit is one second above the wall one: a job spinning
	 * on one thread is decided by the wall clock, not by whichever limit
	 * a busy host lets fire first. */
	int n = snprintf(msg, sizeof msg, "{\"run\": {\"wall_ms\": %u, \"cpu_s\": %u}}", wall_ms,
			 (wall_ms + 999) / 1000 + 1);
	if (send(w->fd, msg, (size_t)n, MSG_NOSIGNAL) != n) {
		w->dead = 1;
		return kf_err_set(err, KF_EFAULT,
				  "the torch worker is gone (%s); the next reference starts a new "
				  "one",
				  strerror(errno));
	}
	double deadline = check_now_ms() + wall_ms + CHECK_PYWORKER_GRACE_MS;
	ssize_t r = recv_msg(w->fd, msg, sizeof msg, deadline, cancel);
	if (r == -2) { /* the worker kills the child and answers "canceled" */
		if (send(w->fd, "{\"cancel\": true}", 16, MSG_NOSIGNAL) != 16 ||
		    recv_msg(w->fd, msg, sizeof msg, check_now_ms() + CHECK_PYWORKER_GRACE_MS,
			     NULL) <= 0)
			w->dead = 1;
		return kf_err_set(err, KF_ECANCELED, "job cancelled");
	}
	if (r == 0 || r == -3) {
		w->dead = 1;
		/* the thread has ended or is about to: how the python died */
		w->kill = 1;
		pthread_join(w->th, NULL);
		w->up = 0;
		return kf_err_set(err, KF_EFAULT,
				  "the torch worker died during the reference (%s); the next "
				  "reference starts a new one",
				  w->ended[0] ? w->ended : "no status");
	}
	if (r == -1) {
		w->dead = 1;
		return kf_err_set(err, KF_ETIMEOUT,
				  "the torch worker did not answer within %u ms of the job's %u ms "
				  "limit; it was killed",
				  CHECK_PYWORKER_GRACE_MS, wall_ms);
	}
	int rc = parse_status(msg, st, err);
	if (rc)
		w->dead = 1;
	return rc;
}

void check_pyworker_release(struct check_env *env, struct check_pyworker *w)
{
	struct kf_err e = {0};
	if (!w->dead && reset_dir(w, &e)) {
		log_warn("check", "torch worker stopped: %s", e.msg);
		w->dead = 1;
	}
	if (w->dead)
		stop_worker(w);
	struct check_pyworkers *s = env->pyworkers;
	pthread_mutex_lock(&s->mu);
	w->state = w->up ? PYW_IDLE : PYW_DOWN;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

void check_pyworkers_close(struct check_env *env)
{
	struct check_pyworkers *s = env ? env->pyworkers : NULL;
	if (!s)
		return;
	for (int i = 0; i < CHECK_PYWORKER_MAX; i++)
		stop_worker(&s->w[i]);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
	env->pyworkers = NULL;
}
