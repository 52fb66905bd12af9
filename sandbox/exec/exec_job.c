/* exec_job: one GPU tool call as a Slurm job: its row in state.db, its
 * directory (call.json in, answer.json and slurm-<id>.out back), the loop
 * that follows it (one retry away from a failed node), and the recovery
 * of the jobs a previous daemon left. See exec.h. */
#include "sandbox/exec/exec.h"
#include "sandbox/exec/exec_int.h"

#include "base/fs.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HEARTBEAT_MS 5000 /* progress at least this often while waiting */

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sleeps poll_ms in slices, returning early when cancel or closing is set. */
static void wait_poll(struct exec *x, const volatile int *cancel)
{
	for (int t = 0; t < x->cfg.poll_ms && !x->closing && !(cancel && *cancel); t += 100)
		sleep_ms(x->cfg.poll_ms - t < 100 ? x->cfg.poll_ms - t : 100);
}

static void save(struct exec *x, const struct history_job *job)
{
	struct kf_err e = {0};

	/* The job goes on; a restart would miss only this last change. */
	if (history_job_update(x->history, job, &e))
		log_warn("exec", "job %s: %s", job->key, e.msg);
}

/* The last line of the job's Slurm log (what the node printed when it
 * failed), into out. */
static void log_tail(const char *dir, const char *id, char *out, size_t cap)
{
	char p[PATH_MAX + 64], buf[600];
	ssize_t n;
	int fd;

	out[0] = '\0';
	snprintf(p, sizeof(p), "%s/slurm-%s.out", dir, id);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	off_t end = lseek(fd, 0, SEEK_END);
	(void)lseek(fd, end > (off_t)sizeof(buf) - 1 ? end - (off_t)sizeof(buf) + 1 : 0, SEEK_SET);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	char *last = strrchr(buf, '\n');
	snprintf(out, cap, "%.*s", (int)cap - 1, last ? last + 1 : buf);
}

/* Reads <dir>/answer.json (capped). Returns 0 with *out, KF_ENOTFOUND when
 * there is none, KF_ETOOBIG, KF_EIO (not a JSON object). */
static int read_answer(const char *dir, json_t **out, struct kf_err *err)
{
	char p[PATH_MAX + 16];
	struct stat st;
	json_error_t je;

	*out = NULL;
	snprintf(p, sizeof(p), "%s/answer.json", dir);
	if (stat(p, &st))
		return KF_ENOTFOUND;
	if ((unsigned long long)st.st_size > EXEC_ANSWER_MAX_BYTES)
		return kf_err_set(err, KF_ETOOBIG, "%s is %lld bytes, over the %u-byte cap", p,
				  (long long)st.st_size, EXEC_ANSWER_MAX_BYTES);
	*out = json_load_file(p, 0, &je);
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return kf_err_set(err, KF_EIO, "%s is not a JSON object: %s", p, je.text);
	}
	return 0;
}

static void progress(const struct exec_job_req *req, double *value, const char *fmt, const char *a,
		     const char *b, const char *c)
{
	char msg[512];

	if (!req || !req->progress)
		return;
	snprintf(msg, sizeof(msg), fmt, a, b, c);
	*value += 1;
	req->progress(req->progress_arg, *value, msg);
}

/* An ended job: its answer, or why there is none. */
static int finish(struct history_job *job, struct exec_job_result *res, const char *state,
		  struct kf_err *err)
{
	char tail[300];
	int rc = read_answer(job->dir, &res->answer, err);

	if (rc == KF_ENOTFOUND) {
		log_tail(job->dir, job->slurm_id, tail, sizeof(tail));
		snprintf(res->said, sizeof(res->said), "job %s %s without an answer%s%s",
			 job->slurm_id, state, tail[0] ? ": " : "", tail);
		rc = kf_err_set(err, KF_EFAULT, "slurm %s", res->said);
	}
	return rc;
}

/* Follows job until it ends: resubmits once (attempt 1, excluding the
 * node) after a node failure or preemption; scancels on cancel. */
static int follow(struct exec *x, struct history_job *job, struct exec_batch *b,
		  const struct exec_job_req *req, struct exec_job_result *res, struct kf_err *err)
{
	char state[64] = "", reason[256] = "", nodes[128] = "", last[400] = "";
	const volatile int *cancel = req ? req->cancel : NULL;
	double pv = 0;
	int64_t beat = 0;
	int rc = 0;

	for (;;) {
		if (cancel && *cancel) {
			exec_slurm_cancel(job->slurm_id);
			snprintf(job->reason, sizeof(job->reason), "cancelled by the client");
			return kf_err_set(err, KF_ECANCELED,
					  "cancelled: slurm job %s was scancel'd", job->slurm_id);
		}
		if (x->closing)
			return kf_err_set(err, KF_EBUSY,
					  "the daemon is stopping; slurm job %s "
					  "continues and a restarted daemon records it",
					  job->slurm_id);
		int q = b ? exec_batch_query(x, b, job->slurm_id, state, sizeof(state), reason,
					     sizeof(reason), nodes, sizeof(nodes))
			  : exec_slurm_query(job->slurm_id, state, sizeof(state), reason,
					     sizeof(reason), nodes, sizeof(nodes));
		if (q == KF_EIO) {
			/* The controller is away; the job is not lost. */
			if (strcmp(last, "unreachable")) {
				progress(req, &pv, "slurm job %s: %s%s", job->slurm_id,
					 "the controller does not answer squeue; ", "asking again");
				snprintf(last, sizeof(last), "unreachable");
			}
			wait_poll(x, cancel);
			continue;
		}
		if (q) {
			/* Neither squeue nor sacct knows it: the directory decides. */
			snprintf(state, sizeof(state), "gone from squeue");
			if ((rc = finish(job, res, state, err)) == 0)
				return 0;
			return rc;
		}
		if (nodes[0] && strcmp(nodes, "(null)"))
			snprintf(res->node, sizeof(res->node), "%s", nodes);
		snprintf(res->slurm_id, sizeof(res->slurm_id), "%s", job->slurm_id);
		char now[400];
		snprintf(now, sizeof(now), "%s|%s|%s", state, reason, nodes);
		if (strcmp(now, last) || mono_ms() - beat > HEARTBEAT_MS) {
			progress(req, &pv, "slurm job %s %s %s", job->slurm_id, state,
				 nodes[0] ? nodes : reason);
			snprintf(last, sizeof(last), "%s", now);
			beat = mono_ms();
		}
		enum exec_verdict v = exec_slurm_verdict(state, reason);
		if (v == EXEC_WAIT) {
			wait_poll(x, cancel);
			continue;
		}
		snprintf(job->reason, sizeof(job->reason), "%s%s%s", state,
			 reason[0] && strcmp(reason, "None") ? " " : "",
			 reason[0] && strcmp(reason, "None") ? reason : "");
		if (v == EXEC_DONE)
			return finish(job, res, state, err);
		if (v == EXEC_RETRY && job->attempt == 0) {
			char said[EXEC_SAID_BYTES];
			job->attempt = 1;
			res->attempts = 2;
			progress(req, &pv, "slurm job %s %s on %s: resubmitting elsewhere",
				 job->slurm_id, state, nodes);
			char old[32];
			snprintf(old, sizeof(old), "%s", job->slurm_id);
			struct kf_err se = {0};
			char script[PATH_MAX];
			/* alone, also an array's element: only it failed */
			snprintf(script, sizeof(script), "%s/job.sh", job->dir);
			rc = exec_slurm_submit(script, nodes, job->slurm_id, sizeof(job->slurm_id),
					       said, sizeof(said), &se);
			if (rc) {
				snprintf(res->said, sizeof(res->said),
					 "job %s: %.100s on %.60s; the retry was refused: %.200s",
					 old, job->reason, nodes, said[0] ? said : se.msg);
				snprintf(job->slurm_id, sizeof(job->slurm_id), "%s", old);
				return kf_err_set(err, KF_EFAULT, "slurm %s", res->said);
			}
			save(x, job);
			b = NULL; /* a job of its own now */
			last[0] = '\0';
			continue;
		}
		/* A job that can never start is not left in the queue. */
		if (v == EXEC_FAILED && strncmp(state, "PENDING", 7) == 0)
			exec_slurm_cancel(job->slurm_id);
		char tail[300];
		log_tail(job->dir, job->slurm_id, tail, sizeof(tail));
		snprintf(res->said, sizeof(res->said), "job %s %.150s%s%.80s%s%.200s",
			 job->slurm_id, job->reason, nodes[0] ? " on " : "", nodes,
			 tail[0] ? ": " : "", tail);
		if (v == EXEC_CANCELLED)
			return kf_err_set(err, KF_ECANCELED, "slurm %s", res->said);
		return kf_err_set(err,
				  v == EXEC_FAILED && !strncmp(state, "PENDING", 7) ? KF_EINVAL
										    : KF_EFAULT,
				  "slurm %s", res->said);
	}
}

/* The job's directory: call.json (what the node runs) and job.sh. */
static int prepare_dir(struct exec *x, const struct exec_job_req *req, struct history_job *job,
		       struct kf_err *err)
{
	char p[PATH_MAX + 16];
	json_t *call;
	int rc;

	snprintf(job->dir, sizeof(job->dir), "%s/jobs/%s", x->cfg.shared_dir, job->key);
	/* The job runs as the daemon's user (sbatch submits as it). */
	if (mkdir(job->dir, 0700))
		return kf_err_set(err, KF_EIO, "cannot create %s: %s", job->dir, strerror(errno));
	snprintf(p, sizeof(p), "%s/call.json", job->dir);
	call = json_pack("{s:s, s:O, s:s, s:O*, s:O*}", "tool", req->tool, "arguments", req->args,
			 "key", job->key, "daemon", req->keep, "seed", req->seed);
	rc = call && json_dump_file(call, p, JSON_COMPACT) == 0
		     ? 0
		     : kf_err_set(err, KF_EIO, "cannot write %s", p);
	json_decref(call);
	if (!rc)
		rc = exec_slurm_write_script(&x->cfg, x->cfg.kforge_path, job->dir, job->key,
					     req->exclusive, req->gres, err);
	return rc;
}

/* Submits job: alone (its job.sh), or as its batch's element. */
static int submit(struct exec *x, struct exec_waiter *w, struct exec_job_result *res,
		  struct kf_err *err)
{
	char script[PATH_MAX];
	int rc;

	if (w->batch)
		return exec_batch_submit(x, w, res->said, sizeof(res->said), err);
	snprintf(script, sizeof(script), "%s/job.sh", w->job->dir);
	rc = exec_slurm_submit(script, NULL, w->job->slurm_id, sizeof(w->job->slurm_id), res->said,
			       sizeof(res->said), err);
	if (!rc)
		save(x, w->job);
	return rc;
}

int exec_job_run(struct exec *x, const struct exec_job_req *req, struct exec_job_result *res,
		 struct kf_err *err)
{
	struct history_job job = {0};
	struct exec_waiter w = {0};
	struct exec_client *c = NULL;
	const char *client = req->client ? req->client : "rest";
	int rc;

	memset(res, 0, sizeof(*res));
	if (!exec_is_remote(x))
		return kf_err_set(err, KF_EINVAL, "exec: the local executor runs no jobs here");
	snprintf(job.tool, sizeof(job.tool), "%s", req->tool);
	snprintf(job.client, sizeof(job.client), "%s", client);
	job.state = HISTORY_JOB_SUBMITTED;
	if ((rc = history_job_add(x->history, &job, err)))
		return rc;
	snprintf(res->key, sizeof(res->key), "%s", job.key);
	/* Ready before it queues, so calls that reach the head of the line
	 * together go to Slurm as one array. */
	rc = prepare_dir(x, req, &job, err);
	snprintf(res->dir, sizeof(res->dir), "%s", job.dir);
	if (rc)
		goto end;
	save(x, &job);
	w.job = &job;
	w.exclusive = req->exclusive;
	w.gres = req->gres;
	rc = exec_client_enter(x, client, req->cancel, &w, &c);
	if (rc) {
		rc = kf_err_set(err, rc,
				rc == KF_ECANCELED ? "cancelled while queued for Slurm"
				: rc == KF_EBUSY   ? "the daemon is stopping"
						   : "out of memory");
		if (rc == KF_ECANCELED) {
			snprintf(job.reason, sizeof(job.reason), "cancelled while queued");
			fs_rm_tree(job.dir); /* never submitted: nothing to keep */
		}
		goto end;
	}
	res->attempts = 1;
	rc = submit(x, &w, res, err);
	if (rc) {
		snprintf(job.reason, sizeof(job.reason), "sbatch: %.240s", res->said);
		goto end;
	}
	rc = follow(x, &job, w.batch, req, res, err);
end:
	/* The daemon stopping leaves the job SUBMITTED for the next one. */
	if (rc != KF_EBUSY) {
		job.state = HISTORY_JOB_ENDED;
		save(x, &job);
	}
	exec_client_leave(x, c, &w);
	return rc;
}

int exec_job_close(struct exec *x, const char *key, struct kf_err *err)
{
	struct history_job job;
	int rc = history_job_get(x->history, key, &job, err);

	if (rc)
		return rc;
	job.state = HISTORY_JOB_RECORDED;
	return history_job_update(x->history, &job, err);
}

void exec_job_done(const struct exec_job_result *res, int rc)
{
	if (rc || !res->dir[0] || getenv("KFORGE_KEEP_JOBS"))
		return;
	fs_rm_tree(res->dir);
}

/* --- recovery ---------------------------------------------------------- */

static void *recover_one(void *arg)
{
	struct exec_recovery *r = arg;
	struct history_job *job = &r->job;
	struct exec_job_result res = {0};
	struct kf_err err = {0};
	int rc;

	snprintf(res.key, sizeof(res.key), "%s", job->key);
	snprintf(res.dir, sizeof(res.dir), "%s", job->dir);
	res.attempts = job->attempt + 1;
	if (job->state == HISTORY_JOB_ENDED) {
		/* Ended before the last daemon could record it. */
		rc = finish(job, &res, "ended", &err);
	} else if (!job->slurm_id[0] &&
		   exec_slurm_find(job->key, job->slurm_id, sizeof(job->slurm_id))) {
		rc = read_answer(job->dir, &res.answer, &err);
		if (rc == KF_ENOTFOUND)
			rc = kf_err_set(&err, KF_EFAULT,
					"the daemon stopped before the job reached Slurm (queued "
					"or being submitted); Slurm has no job named kforge-%s",
					job->key);
	} else {
		save(r->x, job);
		rc = follow(r->x, job, NULL, NULL, &res, &err);
	}
	if (rc != KF_EBUSY) {
		job->state = HISTORY_JOB_ENDED;
		save(r->x, job);
		r->fn(r->arg, job, rc, &res, err.msg);
	}
	exec_job_result_fini(&res);
	return NULL;
}

int exec_recover(struct exec *x, exec_recovered_fn fn, void *arg, struct kf_err *err)
{
	struct history_job *jobs = NULL;
	size_t n = 0;
	int rc;

	if (!exec_is_remote(x))
		return 0;
	if ((rc = history_jobs_pending(x->history, &jobs, &n, err)))
		return rc;
	for (size_t i = 0; i < n && !rc; i++) {
		struct exec_recovery *r = calloc(1, sizeof(*r));
		if (!r) {
			rc = kf_err_set(err, KF_ENOMEM, "exec: out of memory");
			break;
		}
		*r = (struct exec_recovery){.x = x, .job = jobs[i], .fn = fn, .arg = arg};
		if (pthread_create(&r->th, NULL, recover_one, r)) {
			free(r);
			rc = kf_err_set(err, KF_ENOMEM, "exec: cannot start a recovery thread");
			break;
		}
		pthread_mutex_lock(&x->mu);
		r->next = x->recoveries;
		x->recoveries = r;
		pthread_mutex_unlock(&x->mu);
	}
	free(jobs);
	return rc;
}
