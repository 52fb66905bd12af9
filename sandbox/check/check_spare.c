/* check_spare: spare kforge-harness processes per GPU. Each spare is one
 * thread blocked in jail_run for its whole life, so the process dies with
 * the daemon exactly as a fresh harness does (PR_SET_PDEATHSIG is tied to
 * the forking thread; bubblewrap's --die-with-parent inside). The jail
 * binds the spare's own directory at spawn, before any job exists: a job's
 * files are renamed into it for the run and back after, so callers keep
 * their directory. The wall clock of the job starts at its "go"; the
 * spare's own jail limits are its life's (the harness lowers its CPU limit
 * to the job's on go). */
#include "sandbox/check/check_spare.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/log.h"
#include "sandbox/pool/runner.h"

/* A waiting spare's CPU limit (s): it waits without using any; the job's
 * own limit replaces it on go. */
#define SPARE_CPU_S 0x7ffffff0u

struct spare {
	int device;
	char dir[PATH_MAX];  /* its job directory, bound at the jail's /job */
	int report_r;	     /* the report pipe (fd 3 in the harness) */
	int report_w;	     /* closed by the thread after jail_run */
	int go_r, go_w;	     /* the go pipe (fd 4 in the harness) */
	volatile int cancel; /* nonzero: the jail kills the process */
	struct jail *jail;
	char harness[PATH_MAX];
	unsigned long long data_bytes;
	pthread_t th;
	int th_started;
	pthread_mutex_t mu; /* guards the fields below */
	int taken;	    /* a job was sent */
	int retired;	    /* the daemon ended it (shutdown): not logged */
	int ended;	    /* jail_run returned: rc, res, jerr are set */
	int rc;
	struct jail_result res;
	struct kf_err jerr;
};

struct check_spares {
	pthread_mutex_t mu;
	int per_gpu;
	int closing;
	struct spare *slot[RUNNER_MAX_GPUS][CHECK_SPARES_MAX_PER_GPU];
};

void check_report_append(struct check_report_buf *r, const char *data, size_t n)
{
	if (r->too_big || r->len + n > CHECK_REPORT_MAX_BYTES) {
		r->too_big = 1; /* the reader keeps draining so the harness never blocks */
		return;
	}
	if (r->len + n + 1 > r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 1 << 16;
		while (nc < r->len + n + 1)
			nc *= 2;
		char *nb = realloc(r->buf, nc);
		if (!nb) {
			r->too_big = 1;
			return;
		}
		r->buf = nb;
		r->cap = nc;
	}
	memcpy(r->buf + r->len, data, n);
	r->len += n;
	r->buf[r->len] = 0;
}

int check_spares_count(int *per_gpu, struct kf_err *err)
{
	const char *v = getenv("KFORGE_HARNESS_SPARES");
	*per_gpu = CHECK_SPARES_DEFAULT;
	if (!v || !*v)
		return 0;
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (errno || *end || n < 0 || n > CHECK_SPARES_MAX_PER_GPU)
		return kf_err_set(err, KF_EINVAL,
				  "KFORGE_HARNESS_SPARES: '%.32s' is not a count from 0 to %d "
				  "(default %d)",
				  v, CHECK_SPARES_MAX_PER_GPU, CHECK_SPARES_DEFAULT);
	*per_gpu = (int)n;
	return 0;
}

int check_spares_new(int per_gpu, struct check_spares **out)
{
	*out = calloc(1, sizeof **out);
	if (!*out)
		return KF_ENOMEM;
	pthread_mutex_init(&(*out)->mu, NULL);
	(*out)->per_gpu = per_gpu;
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The tail of a spare's stderr on one line, for the log. */
static void stderr_tail(const struct jail_result *res, char *out, size_t cap)
{
	const char *t = res->errout ? res->errout : "";
	if (res->errout_len > 150)
		t += res->errout_len - 150;
	snprintf(out, cap, "%s", t);
	for (char *c = out; *c; c++)
		if (*c == '\n')
			*c = ' ';
}

static void *spare_main(void *arg)
{
	struct spare *sp = arg;
	char dev[16];
	snprintf(dev, sizeof dev, "%d", sp->device);
	const char *argv[] = {sp->harness, "--job", ".",	"--report-fd", "3",
			      "--wait-fd", "4",	    "--device", dev,	       NULL};
	struct jail_bind binds[] = {{sp->harness, NULL}};
	int pass[2] = {sp->report_w, sp->go_r};
	struct jail_job jj = {
		.argv = argv,
		.job_dir = sp->dir,
		.ro_binds = binds,
		.ro_binds_len = 1,
		.want_gpu = 1,
		.pass_fds = pass,
		.pass_fds_len = 2,
		.wall_ms = UINT_MAX, /* a spare waits as long as it must */
		.cpu_s = SPARE_CPU_S,
		.fsize_bytes = 64ull << 30,
		.data_bytes = sp->data_bytes,
		.stdout_cap_bytes = 16384,
		.stderr_cap_bytes = 16384,
		.cancel = &sp->cancel,
	};
	struct jail_result res;
	struct kf_err e = {0};
	int rc = jail_run(sp->jail, &jj, &res, &e);
	/* The reader's EOF: the harness has exited and nothing else writes. */
	close_fd(&sp->report_w);
	close_fd(&sp->go_r);
	pthread_mutex_lock(&sp->mu);
	sp->ended = 1;
	sp->rc = rc;
	sp->res = res;
	sp->jerr = e;
	int quiet = sp->taken || sp->retired;
	pthread_mutex_unlock(&sp->mu);
	if (!quiet) {
		char tail[sizeof e.msg];
		if (rc)
			snprintf(tail, sizeof tail, "%s", e.msg);
		else
			stderr_tail(&res, tail, sizeof tail);
		log_warn("check",
			 "a spare kforge-harness on GPU %d ended before it had a job (exit %d, "
			 "signal %d)%s%s; the next job there starts a fresh one",
			 sp->device, res.exit_code, res.term_signal, tail[0] ? ": " : "", tail);
	}
	return NULL;
}

/* Ends sp (when it still runs) and frees it. */
static void spare_free(struct spare *sp)
{
	if (!sp)
		return;
	if (sp->th_started) {
		pthread_mutex_lock(&sp->mu);
		sp->retired = 1;
		pthread_mutex_unlock(&sp->mu);
		sp->cancel = 1;
		close_fd(&sp->go_w);
		pthread_join(sp->th, NULL);
	}
	jail_result_fini(&sp->res);
	close_fd(&sp->report_r);
	close_fd(&sp->report_w);
	close_fd(&sp->go_r);
	close_fd(&sp->go_w);
	if (sp->dir[0])
		fs_rm_tree(sp->dir);
	pthread_mutex_destroy(&sp->mu);
	free(sp);
}

/* A new spare of device started in its thread, or NULL (logged). */
static struct spare *spare_start(const char *data_dir, const struct check_spare_run *r, int device)
{
	struct spare *sp = calloc(1, sizeof *sp);
	if (!sp)
		return NULL;
	sp->report_r = sp->report_w = sp->go_r = sp->go_w = -1;
	pthread_mutex_init(&sp->mu, NULL);
	sp->device = device;
	sp->jail = r->jail;
	sp->data_bytes = r->data_bytes;
	snprintf(sp->harness, sizeof sp->harness, "%s", r->harness);
	char jobs[PATH_MAX - 16];
	snprintf(jobs, sizeof jobs, "%s/jobs", data_dir ? data_dir : "/tmp");
	int rp[2], gp[2];
	if (mkdir(jobs, 0700) && errno != EEXIST)
		goto fail;
	snprintf(sp->dir, sizeof sp->dir, "%s/spare-XXXXXX", jobs);
	if (!mkdtemp(sp->dir)) {
		sp->dir[0] = 0;
		goto fail;
	}
	if (pipe2(rp, O_CLOEXEC))
		goto fail;
	sp->report_r = rp[0];
	sp->report_w = rp[1];
	if (pipe2(gp, O_CLOEXEC))
		goto fail;
	sp->go_r = gp[0];
	sp->go_w = gp[1];
	if (pthread_create(&sp->th, NULL, spare_main, sp))
		goto fail;
	sp->th_started = 1;
	return sp;
fail:
	log_warn("check", "cannot start a spare kforge-harness on GPU %d: %s", device,
		 strerror(errno));
	spare_free(sp);
	return NULL;
}

/* Takes the oldest spare of r->device (the likeliest to be ready: a GPU's
 * places are a queue, oldest first), or NULL when there is none. */
static struct spare *take(struct check_spares *p, const struct check_spare_run *r)
{
	struct spare *got = NULL;
	if (r->device < 0 || r->device >= RUNNER_MAX_GPUS)
		return NULL;
	pthread_mutex_lock(&p->mu);
	struct spare **s = p->slot[r->device];
	if (!p->closing && s[0]) {
		got = s[0];
		memmove(s, s + 1, (CHECK_SPARES_MAX_PER_GPU - 1) * sizeof *s);
		s[CHECK_SPARES_MAX_PER_GPU - 1] = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	return got;
}

void check_spare_refill(struct check_env *env, const struct check_spare_run *r)
{
	struct check_spares *p = env ? env->spares : NULL;
	if (!p || r->device < 0 || r->device >= RUNNER_MAX_GPUS)
		return;
	pthread_mutex_lock(&p->mu);
	struct spare **s = p->slot[r->device];
	for (int k = 0; k < p->per_gpu && !p->closing; k++)
		if (!s[k] && !(s[k] = spare_start(env->data_dir, r, r->device)))
			break; /* the queue stays without holes */
	pthread_mutex_unlock(&p->mu);
}

void check_spares_free(struct check_spares *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->closing = 1;
	pthread_mutex_unlock(&p->mu);
	/* Every spare told first, then waited for: they end together. */
	for (int d = 0; d < RUNNER_MAX_GPUS; d++)
		for (int k = 0; k < CHECK_SPARES_MAX_PER_GPU; k++) {
			struct spare *sp = p->slot[d][k];
			if (!sp || !sp->th_started)
				continue;
			pthread_mutex_lock(&sp->mu);
			sp->retired = 1;
			pthread_mutex_unlock(&sp->mu);
			sp->cancel = 1;
			close_fd(&sp->go_w);
		}
	for (int d = 0; d < RUNNER_MAX_GPUS; d++)
		for (int k = 0; k < CHECK_SPARES_MAX_PER_GPU; k++)
			spare_free(p->slot[d][k]);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* Renames every entry of directory from into directory to; passes repeat
 * until one finds nothing (a directory read while entries leave it may
 * skip some). Returns 0, or -1 with the failing name in bad (errno set). */
static int move_all(const char *from, const char *to, char *bad, size_t cap)
{
	DIR *d = opendir(from);
	int tfd = open(to, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0, saved = 0;
	if (!d || tfd < 0) {
		saved = errno;
		snprintf(bad, cap, "%s", d ? to : from);
		rc = -1;
		goto out;
	}
	for (int moved = 1; moved && !rc;) {
		struct dirent *e;
		moved = 0;
		rewinddir(d);
		while (!rc && (e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (renameat(dirfd(d), e->d_name, tfd, e->d_name)) {
				saved = errno;
				snprintf(bad, cap, "%s/%s", from, e->d_name);
				rc = -1;
			}
			moved++;
		}
	}
out:
	if (d)
		closedir(d);
	if (tfd >= 0)
		close(tfd);
	errno = saved;
	return rc;
}

enum { FIRED_NONE, FIRED_TIMEOUT, FIRED_CANCEL };

/* Reads sp's report into rep until EOF, killing the process at the wall
 * clock or stop. Returns what fired. The time from the final line to EOF
 * (the process's exit: CUDA teardown, the jail's reaping) is logged at
 * debug level: it is the part of harness_start a spare leaves. */
static int read_report(struct spare *sp, const struct check_spare_run *r,
		       struct check_report_buf *rep)
{
	double t0 = check_now_ms(), t_final = 0;
	int fired = FIRED_NONE;
	char buf[65536];
	for (;;) {
		struct pollfd pf = {.fd = sp->report_r, .events = POLLIN};
		int n = poll(&pf, 1, 50);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0) {
			ssize_t k = read(sp->report_r, buf, sizeof buf);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			check_report_append(rep, buf, (size_t)k);
			if (!t_final && buf[k - 1] == '\n' &&
			    memmem(buf, (size_t)k, "\"final\":true", 12))
				t_final = check_now_ms();
		}
		if (fired == FIRED_NONE && r->stop && *r->stop)
			fired = FIRED_CANCEL;
		else if (fired == FIRED_NONE && check_now_ms() - t0 >= r->wall_ms)
			fired = FIRED_TIMEOUT;
		if (fired != FIRED_NONE)
			sp->cancel = 1;
	}
	if (t_final)
		log_debug("check",
			  "spare on GPU %d: final report %.1f ms after go, exit %.1f ms later",
			  sp->device, t_final - t0, check_now_ms() - t_final);
	return fired;
}

/* Sends the job to sp and collects it: rep, res, the files back in r->dir.
 * Returns as check_spare_exec. */
static int run_taken(struct spare *sp, const struct check_spare_run *r, struct jail_result *res,
		     struct check_report_buf *rep, struct kf_err *err)
{
	char bad[PATH_MAX + 300], go[32];
	if (move_all(r->dir, sp->dir, bad, sizeof bad)) {
		int moved = errno;
		if (move_all(sp->dir, r->dir, bad, sizeof bad) == 0) {
			log_warn("check", "spare on GPU %d: cannot move %s into its directory: %s",
				 sp->device, bad, strerror(moved));
			return CHECK_SPARE_NONE;
		}
		return kf_err_set(err, KF_EIO, "cannot move the job's files back from %s: %s", bad,
				  strerror(errno));
	}
	int n = snprintf(go, sizeof go, "go %u\n", (r->wall_ms + 999) / 1000);
	int sent = write(sp->go_w, go, (size_t)n) == n;
	close_fd(&sp->go_w);
	int fired = sent ? read_report(sp, r, rep) : FIRED_NONE;
	pthread_join(sp->th, NULL);
	sp->th_started = 0;
	*res = sp->res;
	memset(&sp->res, 0, sizeof sp->res);
	if (move_all(sp->dir, r->dir, bad, sizeof bad))
		return kf_err_set(err, KF_EIO, "cannot move the job's files back from %s: %s", bad,
				  strerror(errno));
	size_t tl = strlen(CHECK_SPARE_TAKEN_LINE);
	int taken = rep->buf && rep->len >= tl && memcmp(rep->buf, CHECK_SPARE_TAKEN_LINE, tl) == 0;
	if (!taken && fired == FIRED_CANCEL) { /* nothing to run it again for */
		free(rep->buf);
		memset(rep, 0, sizeof *rep);
		return kf_err_set(err, KF_ECANCELED, "job cancelled");
	}
	if (!taken) {
		char tail[160];
		stderr_tail(res, tail, sizeof tail);
		log_warn("check",
			 "a spare kforge-harness on GPU %d ended without taking its job (exit "
			 "%d, signal %d%s%s); starting a fresh one",
			 sp->device, res->exit_code, res->term_signal, tail[0] ? ": " : "", tail);
		jail_result_fini(res);
		free(rep->buf);
		memset(rep, 0, sizeof *rep);
		return CHECK_SPARE_NONE;
	}
	memmove(rep->buf, rep->buf + tl, rep->len - tl + 1);
	rep->len -= tl;
	if (fired == FIRED_TIMEOUT) {
		res->timed_out = 1;
		res->canceled = 0;
		return kf_err_set(err, KF_ETIMEOUT, "job killed after the %u ms wall-clock limit",
				  r->wall_ms);
	}
	if (fired == FIRED_CANCEL)
		return kf_err_set(err, KF_ECANCELED, "job cancelled");
	if (sp->rc)
		return kf_err_set(err, sp->rc, "%s", sp->jerr.msg);
	return 0;
}

int check_spare_exec(struct check_env *env, const struct check_spare_run *r,
		     struct jail_result *res, struct check_report_buf *rep, struct kf_err *err)
{
	memset(res, 0, sizeof *res);
	if (!env || !env->spares)
		return CHECK_SPARE_NONE;
	/* The first that still runs; one that ended on its own (logged by its
	 * thread) is freed and the next one tried. */
	struct spare *sp;
	while ((sp = take(env->spares, r))) {
		pthread_mutex_lock(&sp->mu);
		int ended = sp->ended;
		sp->taken = !ended;
		pthread_mutex_unlock(&sp->mu);
		if (!ended)
			break;
		spare_free(sp);
	}
	if (!sp)
		return CHECK_SPARE_NONE;
	int rc = run_taken(sp, r, res, rep, err);
	spare_free(sp);
	return rc;
}
