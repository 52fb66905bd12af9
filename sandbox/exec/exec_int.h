/* exec_int: what exec.c (jobs, their rows, the per-client queue, recovery)
 * shares with exec_slurm.c (the Slurm commands). Included by no one else. */
#ifndef KF_EXEC_INT_H
#define KF_EXEC_INT_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>

#include "sandbox/exec/exec.h"

/* One call waiting for its client's turn (on the waiter's stack). */
struct exec_waiter {
	struct exec_waiter *next;
};

/* A client's line: its waiters in arrival order and its jobs at Slurm. */
struct exec_client {
	char name[HISTORY_JOB_TEXT_BYTES];
	struct exec_waiter *waiters; /* FIFO; the head enters next */
	int running;		     /* jobs at Slurm now */
	struct exec_client *next;
};

/* A previous daemon's job followed on its own thread. */
struct exec_recovery {
	struct exec *x;
	struct history_job job;
	exec_recovered_fn fn;
	void *arg;
	pthread_t th;
	struct exec_recovery *next;
};

struct exec {
	struct exec_config cfg; /* strings point into the buffers below */
	char partition[128], gres[128], account[128], time_limit[64];
	char shared_dir[PATH_MAX], kforge[PATH_MAX];
	struct history *history; /* borrowed */
	pthread_mutex_t mu;	 /* clients, recoveries, closing */
	pthread_cond_t cv;
	struct exec_client *clients;
	struct exec_recovery *recoveries;
	volatile int closing; /* exec_close: every follow loop returns */
};

/* Waits for a place among client name's max_per_client jobs, in arrival
 * order. Returns 0 with *out (give back with exec_client_leave),
 * KF_ECANCELED (*cancel set while waiting), KF_EBUSY (closing), KF_ENOMEM. */
int exec_client_enter(struct exec *x, const char *name, const volatile int *cancel,
		      struct exec_client **out);
void exec_client_leave(struct exec *x, struct exec_client *c);

#define EXEC_CMD_OUT_BYTES 4096 /* what is kept of a Slurm command's output */

/* Runs argv (argv[0] found on PATH) without a shell; keeps up to out_cap
 * - 1 bytes of stdout in out and of stderr in errout (both NUL-terminated,
 * the rest drained). *status: its exit status, or 128 + the signal.
 * Returns 0 when it ran, KF_EIO when it could not be started. */
int exec_cmd(const char *const *argv, char *out, size_t out_cap, char *errout, size_t err_cap,
	     int *status, struct kf_err *err);

/* 1 when prog is an executable on PATH. */
int exec_on_path(const char *prog);

/* Writes <dir>/job.sh: the #SBATCH lines of cfg (name kforge-<key>,
 * --no-requeue so a node failure comes back to us, output
 * <dir>/slurm-%j.out, --exclusive when exclusive) and the line that runs
 * kforge exec-job on dir. Returns 0 or KF_EIO. */
int exec_slurm_write_script(const struct exec_config *cfg, const char *kforge, const char *dir,
			    const char *key, int exclusive, struct kf_err *err);

/* sbatch --parsable [--exclude=exclude] <dir>/job.sh. Returns 0 with the
 * job id in id, or KF_EINVAL with sbatch's words in said (Slurm refused),
 * KF_EIO (sbatch could not run). */
int exec_slurm_submit(const char *dir, const char *exclude, char *id, size_t id_cap, char *said,
		      size_t said_cap, struct kf_err *err);

/* The job's state, reason (sacct: the exit code) and nodes: squeue first,
 * sacct once squeue no longer knows it. Returns 0, KF_ENOTFOUND when
 * neither knows the job, or KF_EIO when squeue could not reach the
 * controller (and sacct did not answer either). */
int exec_slurm_query(const char *id, char *state, size_t state_cap, char *reason, size_t reason_cap,
		     char *nodes, size_t nodes_cap);

/* The id of the live job named kforge-<key>, if squeue lists one: 0 or
 * KF_ENOTFOUND. */
int exec_slurm_find(const char *key, char *id, size_t id_cap);

/* scancel id (best effort: the job may have ended). */
void exec_slurm_cancel(const char *id);

/* The partitions sinfo knows, comma-separated, into out. Returns 0 or
 * KF_EIO with sinfo's words (the controller unreachable...). */
int exec_slurm_partitions(char *out, size_t cap, struct kf_err *err);

#endif
