/* exec_int: what exec.c (jobs, their rows, the per-client queue, recovery)
 * shares with exec_slurm.c (the Slurm commands). Included by no one else. */
#ifndef KF_EXEC_INT_H
#define KF_EXEC_INT_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>

#include "sandbox/exec/exec.h"

#define EXEC_ARRAY_MAX 1000 /* elements of one array (Slurm's MaxArraySize is 1001) */
/* How long the head of a line waits for more calls to join its array:
 * little next to the poll interval and Slurm's seconds of scheduling. */
#define EXEC_GATHER_MS 200

/* Calls of one client that reached the head of its line together,
 * submitted as one sbatch --array=0-(n-1)%slots: Slurm itself then runs at
 * most slots of them at once, the slots the client had free. Made and
 * submitted by its first element (the leader); freed by the last to leave. */
struct exec_batch {
	struct history_job **jobs;  /* the elements' rows (on their callers' stacks),
				    * valid until done */
	int n;			    /* elements */
	int slots;		    /* client slots held: min(throttle, remaining) */
	int remaining;		    /* elements that have not left */
	int done;		    /* 1 once submitted or refused */
	int rc;			    /* the submission's outcome */
	char id[32];		    /* the array's job id; element i is "<id>_<i>" */
	char said[EXEC_SAID_BYTES]; /* sbatch's words when it refused */
	/* One squeue for the whole array per poll, shared by its elements
	 * (not one per element): */
	pthread_mutex_t list_mu; /* guards listing and listed_ms; held while refreshing */
	char *listing;		 /* squeue -r -j <id> lines "id|state|reason|nodes" */
	int64_t listed_ms;	 /* monotonic ms of the listing; 0 = never */
};

/* One call waiting for its client's turn (on the waiter's stack). */
struct exec_waiter {
	struct exec_waiter *next;
	struct history_job *job;  /* its row and directory, ready to submit */
	int exclusive;		  /* only calls alike (exclusive, gres) share an array */
	const char *gres;	  /* the job's --gres, NULL = the executor's */
	struct exec_batch *batch; /* admitted as element index of batch; NULL:
				   * admitted alone (one slot) */
	int index;
	int admitted;
};

/* A client's line: its waiters in arrival order and its jobs at Slurm. */
struct exec_client {
	char name[HISTORY_JOB_TEXT_BYTES];
	struct exec_waiter *waiters; /* FIFO; the head enters next */
	int running;		     /* slots held at Slurm now */
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

/* Waits for w (w->job and w->exclusive set) to be admitted among client
 * name's max_per_client slots, in arrival order. The head of the line,
 * once a slot is free, waits EXEC_GATHER_MS and takes the calls alike
 * queued behind it with it: alone, w->batch stays NULL and the caller
 * submits; together, they share one batch that its leader (index 0)
 * submits through exec_batch_submit. Returns 0 with *out (give back with
 * exec_client_leave), KF_ECANCELED (*cancel set while waiting), KF_EBUSY
 * (closing), KF_ENOMEM. */
int exec_client_enter(struct exec *x, const char *name, const volatile int *cancel,
		      struct exec_waiter *w, struct exec_client **out);

/* Gives back w's slot (or, for a batch element, the batch's share of
 * slots as its remaining elements drop below them). */
void exec_client_leave(struct exec *x, struct exec_client *c, struct exec_waiter *w);

/* For an admitted batch element: the leader writes <its dir>/array.sh
 * and submits it, stores every element's id in its row, and wakes the
 * others; every element waits for that and gets its own id in
 * w->job->slurm_id. Returns 0, or the submission's KF_EINVAL (said: sbatch's
 * words) / KF_EIO / KF_EBUSY. */
int exec_batch_submit(struct exec *x, struct exec_waiter *w, char *said, size_t said_cap,
		      struct kf_err *err);

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
			    const char *key, int exclusive, const char *gres, struct kf_err *err);

/* The state, reason and nodes of element id of batch b (as
 * exec_slurm_query), from a listing of the whole array at most poll_ms/2
 * old; an element the listing lacks is asked for alone. */
int exec_batch_query(struct exec *x, struct exec_batch *b, const char *id, char *state,
		     size_t state_cap, char *reason, size_t reason_cap, char *nodes,
		     size_t nodes_cap);

#define EXEC_LISTING_BYTES (EXEC_ARRAY_MAX * 256) /* squeue's lines for one array */

/* squeue -h -r -t all -j array_id -o '%i|%T|%r|%N' into out. Returns 0,
 * or KF_EIO when squeue could not answer. */
int exec_slurm_list_array(const char *array_id, char *out, size_t cap);

/* Writes script: one array job (name kforge-array-<leader key>, options
 * as exec_slurm_write_script, --array=0-(n-1)%throttle) whose element i
 * runs kforge exec-job on jobs[i]->dir, its output in that directory as
 * slurm-<array id>_<i>.out (where the follow loop reads a job's last
 * words). Returns 0 or KF_EIO. */
int exec_slurm_write_array(const struct exec_config *cfg, const char *kforge, const char *script,
			   struct history_job *const *jobs, int n, int throttle, int exclusive,
			   const char *gres, struct kf_err *err);

/* sbatch --parsable [--exclude=exclude] script. Returns 0 with the job id
 * in id, or KF_EINVAL with sbatch's words in said (Slurm refused), KF_EIO
 * (sbatch could not run). */
int exec_slurm_submit(const char *script, const char *exclude, char *id, size_t id_cap, char *said,
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

/* sinfo -h -p partition -o %G (the partition's gres, a line per node
 * group) into out. Returns 0, or KF_EIO with sinfo's words. */
int exec_slurm_gres(const char *partition, char *out, size_t cap, struct kf_err *err);

/* The partitions sinfo knows, comma-separated, into out. Returns 0 or
 * KF_EIO with sinfo's words (the controller unreachable...). */
int exec_slurm_partitions(char *out, size_t cap, struct kf_err *err);

#endif
