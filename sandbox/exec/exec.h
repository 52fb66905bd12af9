/* exec: where GPU jobs run. EXEC_LOCAL is the daemon's own GPU pool
 * (sandbox/pool/runner.h): tool handlers call the domain directly and
 * nothing here is involved. EXEC_SLURM hands each GPU tool call to a Slurm
 * cluster as one batch job: the call's arguments go into a job directory
 * under the shared directory, sbatch runs `kforge exec-job DIR` on a
 * compute node (the same tool, the same kforge-harness in the same jail,
 * with that node's local pool), squeue/sacct follow it, scancel cancels it,
 * and the node's answer is read back from the directory. Every job has a
 * row in state.db (history_job) from before submission until its run is
 * recorded, so a restarted daemon follows its jobs again (exec_recover)
 * and each run is recorded once. A job lost to a node failure or
 * preemption is resubmitted once, away from that node. Calls of one
 * client that queue together go to Slurm as one job array, each element
 * still its own job to the caller (row, directory, answer, retry).
 * Thread-safe. */
#ifndef KF_EXEC_H
#define KF_EXEC_H

#include <jansson.h>
#include <stddef.h>

#include "base/kf_err.h"
#include "sandbox/history/history.h"

enum exec_kind { EXEC_LOCAL = 0, EXEC_SLURM = 1 };

#define EXEC_ANSWER_MAX_BYTES (16u << 20) /* cap on a node's answer.json */
#define EXEC_SAID_BYTES	      512	  /* Slurm's words kept for an error */

/* Operator settings (kforge serve --executor ...). Strings borrowed for
 * exec_open's call (copied). */
struct exec_config {
	enum exec_kind kind;
	const char *partition;	 /* slurm: sbatch --partition; required */
	const char *gres;	 /* --gres; NULL = "gpu:1" */
	const char *account;	 /* --account; NULL = none */
	const char *time_limit;	 /* --time, Slurm's syntax ("10", "1:00:00"); NULL = the
				  * partition's default */
	const char *shared_dir;	 /* job directories <shared_dir>/jobs/<key>: must be the
				  * same path on the compute nodes */
	const char *kforge_path; /* what the node runs; NULL = this process's binary */
	int sandbox_none;	 /* 1: the node runs the harness without bwrap */
	int max_per_client;	 /* jobs one client may have at Slurm at once; queued
				  * beyond, in arrival order; 0 = 16 */
	int poll_ms;		 /* squeue interval; 0 = 1000 */
};

struct exec;

/* Opens an executor. EXEC_LOCAL always succeeds. EXEC_SLURM checks, in
 * order: sbatch, squeue, scancel and sinfo on PATH; shared_dir an existing
 * writable directory (jobs/ is created in it); the partition known to
 * sinfo (the message lists the known ones); and refuses a partition,
 * gres, account or time limit with characters that are not Slurm's.
 * history (borrowed, required for slurm) keeps the job rows. Returns 0 and
 * *out (free with exec_close), or KF_EINVAL / KF_ENOTFOUND / KF_EIO with err
 * saying what to fix. */
int exec_open(const struct exec_config *cfg, struct history *history, struct exec **out,
	      struct kf_err *err) __attribute__((warn_unused_result));

/* Stops following jobs (they keep running at Slurm: a restart picks them
 * up), waits for the recovery threads, frees x. NULL: no-op. */
void exec_close(struct exec *x);

/* 1 when GPU tool calls go to a cluster (x not NULL and not local). */
int exec_is_remote(const struct exec *x);

/* The Slurm partition (borrowed, valid until exec_close), "" when local. */
const char *exec_partition(const struct exec *x);

/* "local" or "slurm". Static. */
const char *exec_kind_name(enum exec_kind k);

/* Progress while a job waits and runs: message like "slurm job 41
 * PENDING (Resources)", "slurm job 41 RUNNING on node7". */
typedef void (*exec_progress_fn)(void *arg, double progress, const char *message);

/* One GPU tool call. */
struct exec_job_req {
	const char *tool;	    /* "check_kernel", ...; borrowed */
	const json_t *args;	    /* the tool's arguments; borrowed */
	const json_t *seed;	    /* what the node adds to its data dir before it runs
			     * the call (call.json's "seed": the daemon's
			     * calibrations); borrowed, may be NULL */
	const json_t *keep;	    /* what only the daemon needs back when it
				     * records the run (call.json's "daemon"), so
				     * a restarted daemon has it too; borrowed,
				     * may be NULL */
	const char *client;	    /* per-client limit key; NULL = "rest" */
	int exclusive;		    /* 1: the node to itself (benchmarks) */
	const char *gres;	    /* --gres for this job ("gpu:h100:1": a GPU type of
				     * the partition); NULL = the executor's */
	const volatile int *cancel; /* polled; set: scancel; may be NULL */
	exec_progress_fn progress;  /* may be NULL */
	void *progress_arg;
};

/* What came back. */
struct exec_job_result {
	char key[HISTORY_ID_BYTES];	 /* the job's row: history_run.job_key */
	char slurm_id[32];		 /* the last Slurm job id, "" if never submitted */
	char node[128];			 /* where it ran, "" if unknown */
	int attempts;			 /* submissions made (1, or 2 after a retry) */
	json_t *answer;			 /* 0: the node's answer, new (json_decref):
				     * {"tool", "is_error", "code", "message", "result"} */
	char said[EXEC_SAID_BYTES];	 /* error: Slurm's own words (sbatch's stderr,
				     * the job's state and reason), or "" */
	char dir[HISTORY_JOB_DIR_BYTES]; /* the job directory, "" before it exists */
};

/* Runs req at Slurm and waits for it. res (caller storage) is always
 * filled; res->key is set once the job has a row (the caller records the
 * run with it even on error). Returns 0 with res->answer, or:
 *   KF_EINVAL     Slurm refused the job (res->said: sbatch's words), or a
 *                 pending reason that cannot resolve (PartitionTimeLimit...);
 *   KF_EFAULT     the job failed at Slurm (FAILED, TIMEOUT, OUT_OF_MEMORY,
 *                 a node failure twice): err and said name the state and
 *                 reason;
 *   KF_ECANCELED  req->cancel was set (the job was scancel'd) or Slurm
 *                 cancelled it;
 *   KF_EBUSY      the executor is closing;
 *   KF_EIO, KF_ETOOBIG, KF_ENOMEM, KF_EDB.
 * Never called with x local (KF_EINVAL). */
int exec_job_run(struct exec *x, const struct exec_job_req *req, struct exec_job_result *res,
		 struct kf_err *err) __attribute__((warn_unused_result));

/* Closes the row of job key whose tool records no run (a lookup such as
 * get_gpu_specs local), so no restart follows it again. Returns 0,
 * KF_ENOTFOUND, KF_EDB. */
int exec_job_close(struct exec *x, const char *key, struct kf_err *err)
	__attribute__((warn_unused_result));

/* The GPU types of the partition, from `sinfo -h -p P -o %G` (gres
 * "gpu:h100:4(S:0-1),gpu:a100:2"): up to cap distinct types into types
 * (each < EXEC_GPU_TYPE_BYTES), in sinfo's order. Untyped GPUs ("gpu:2")
 * give none. Returns the count (0..cap), or KF_EIO when sinfo failed. */
#define EXEC_GPU_TYPE_BYTES 32
int exec_gpu_types(struct exec *x, char (*types)[EXEC_GPU_TYPE_BYTES], int cap, struct kf_err *err)
	__attribute__((warn_unused_result));

/* The GPU types named in sinfo's %G output (one node group a line), as
 * exec_gpu_types. Exposed for tests. */
int exec_slurm_gres_types(const char *sinfo_out, char (*types)[EXEC_GPU_TYPE_BYTES], int cap);

/* Frees res->answer. */
void exec_job_result_fini(struct exec_job_result *res);

/* Removes the directory of a job that answered (rc 0) once its run is
 * recorded; a job that failed at Slurm keeps its directory (call.json,
 * job.sh, slurm-<id>.out) for the operator. KFORGE_KEEP_JOBS in the
 * environment keeps every one. */
void exec_job_done(const struct exec_job_result *res, int rc);

/* Called once per recovered job when it ends: job (borrowed), rc and res as
 * exec_job_run would have returned them, msg the error text when rc != 0.
 * Runs on a recovery thread. */
typedef void (*exec_recovered_fn)(void *arg, const struct history_job *job, int rc,
				  const struct exec_job_result *res, const char *msg);

/* Follows every job state.db lists as not recorded (a previous daemon's)
 * on background threads, calling fn as each ends; a job whose submission
 * was interrupted is found by its job name or ends as an error. Returns 0
 * (also when there is none) or KF_EDB / KF_ENOMEM. Call once, after
 * exec_open. */
int exec_recover(struct exec *x, exec_recovered_fn fn, void *arg, struct kf_err *err)
	__attribute__((warn_unused_result));

/* --- pieces exposed for tests ----------------------------------------- */

/* What to do with a Slurm job state (squeue %T / sacct State). */
enum exec_verdict {
	EXEC_WAIT = 0,	   /* PENDING, RUNNING, CONFIGURING, COMPLETING... */
	EXEC_DONE = 1,	   /* COMPLETED: read the answer */
	EXEC_RETRY = 2,	   /* NODE_FAIL, PREEMPTED, BOOT_FAIL: once elsewhere */
	EXEC_FAILED = 3,   /* FAILED, TIMEOUT, OUT_OF_MEMORY, DEADLINE... */
	EXEC_CANCELLED = 4 /* CANCELLED (by us or an operator) */
};

/* The verdict for state (as squeue or sacct print it, "CANCELLED by 0"
 * included) and, for PENDING, whether reason can never resolve
 * (PartitionTimeLimit, ReqNodeNotAvail with no node, BadConstraints,
 * InvalidAccount, InvalidQOS, PartitionConfig...: EXEC_FAILED). */
enum exec_verdict exec_slurm_verdict(const char *state, const char *reason);

/* Parses one line of `squeue -h -o '%T|%r|%N'` (state, reason, nodes) into
 * the caps given. Returns 0, or KF_EINVAL when it has not three fields. */
int exec_slurm_parse_line(const char *line, char *state, size_t state_cap, char *reason,
			  size_t reason_cap, char *nodes, size_t nodes_cap)
	__attribute__((warn_unused_result));

#endif
