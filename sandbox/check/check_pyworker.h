/* check_pyworker: the warm sandboxed python behind {"torch": ...}
 * references. Internal to sandbox/check/ (and its tests).
 *
 * Each worker is one python3 in its own jail (the binds a torch reference
 * always had: the interpreter and its sys.path read-only, its directory
 * writable; no GPU, no network) running sandbox/check/torch_worker.py: it
 * imports torch and numpy once, then runs one job at a time in a forked
 * child that evaluates the expression in a fresh namespace and exits. The
 * parent never runs a job's code, kills whatever a job left running, and
 * the daemon empties the job's directory before the next job: nothing
 * passes from one job to the next. A worker serves one job at a time, so
 * concurrent jobs never share a jail; up to CHECK_PYWORKER_MAX run, started
 * on demand (the first reference, or every running one busy) and restarted
 * when one died. They end with check_env_fini, or with the daemon
 * (PR_SET_PDEATHSIG, bubblewrap's --die-with-parent: jail.h). */
#ifndef KF_CHECK_PYWORKER_H
#define KF_CHECK_PYWORKER_H

#include "base/kf_err.h"
#include "sandbox/check/check.h"

#define CHECK_PYWORKER_MAX	4	/* workers at once, so torch references at once */
#define CHECK_PYWORKER_START_MS 180000u /* python3 started and torch imported */
#define CHECK_PYWORKER_GRACE_MS 10000u	/* past a job's limit before a worker counts as hung */
#define CHECK_PYWORKER_MSG_MAX	4096	/* bytes of one message from a worker */

/* One worker while a job holds it. */
struct check_pyworker;

/* How a job's child ended. */
struct check_pyworker_status {
	int exited;	/* 1: it exited by itself with code */
	int code;	/* its exit status */
	int signal;	/* the signal that ended it, or 0 */
	int timed_out;	/* 1: killed at the wall-clock limit */
	double wall_ms; /* the child's wall time as the worker measured it */
};

/* Where python3 with torch and numpy lives on this host (probed once per
 * process). Returns 0, or KF_ENOTFOUND with err "torch not available: ...;
 * use a built-in op or a CUDA source as the reference". */
int check_pyworker_probe(struct kf_err *err) __attribute__((warn_unused_result));

/* Holds a worker for one job: an idle running one when there is one,
 * else a new one when fewer than CHECK_PYWORKER_MAX run, else waits for one
 * (polling cancel). *started is 1 when this call started the worker
 * (python3 and the torch import, *start_ms of it), 0 when a warm one
 * served. On 0, *out (borrowed) is held until check_pyworker_release.
 * Returns 0, KF_ENOTFOUND (torch not available, as check_pyworker_probe or
 * as the worker's own import said), KF_ECANCELED, KF_ETIMEOUT (the start
 * took over CHECK_PYWORKER_START_MS), KF_EFAULT (the worker died while
 * starting: its stderr's tail), or the jail's codes. */
int check_pyworker_lease(struct check_env *env, const volatile int *cancel,
			 struct check_pyworker **out, int *started, double *start_ms,
			 struct kf_err *err) __attribute__((warn_unused_result));

/* The host directory the held worker's job runs in, empty when leased:
 * write torch_job.json and the inputs there; the job writes its outputs
 * and torch.log (its stdout and stderr) there. Borrowed until release. */
const char *check_pyworker_dir(const struct check_pyworker *w);

/* Runs the job in w's directory in a forked child: wall_ms of wall clock
 * and as many CPU seconds; cancel (or NULL) kills it. Returns 0 with *st
 * (the child ran: read st), KF_ECANCELED, KF_EFAULT (the worker itself
 * died during the job: it is restarted by a later lease), KF_ETIMEOUT (the
 * worker did not answer CHECK_PYWORKER_GRACE_MS past the limit: it is
 * killed), KF_EIO. */
int check_pyworker_run(struct check_pyworker *w, unsigned wall_ms, const volatile int *cancel,
		       struct check_pyworker_status *st, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Gives w back: its directory emptied for the next job, or the worker
 * stopped when a job found it dead or hung. */
void check_pyworker_release(struct check_env *env, struct check_pyworker *w);

/* Stops every worker of env (no job may hold one) and frees the set. */
void check_pyworkers_close(struct check_env *env);

#endif
