/* tools_exec: GPU tool calls on a cluster executor (sandbox/exec/exec.h).
 * A GPU tool's handler starts with
 *     if (exec_is_remote(app->exec))
 *             return tools_exec_forward(ctx, "tool_name", args, out, err);
 * and the call runs as one Slurm job: the compute node runs the same tool
 * (`kforge exec-job`), the answer comes back as the tool's own result,
 * recorded once in the run history. The table of GPU tools (their history
 * kind, whether they need the node to themselves) is in tools_exec.c. */
#ifndef KF_TOOLS_EXEC_H
#define KF_TOOLS_EXEC_H

#include <jansson.h>

#include "base/kf_err.h"
#include "sandbox/exec/exec.h"
#include "server/mcp/tools.h"

/* Runs tool with args (borrowed) at the cluster, reporting the job's queue
 * and node as progress; the call's cancellation (or the client hanging up)
 * cancels the job. Sets *out (new) to the node's answer, with "executor":
 * {"kind", "job_id", "node", "attempts"}, or to an error result whose
 * "error" carries Slurm's words ("slurm": {...}); records the run. Returns
 * the tool's code (0, KF_EFAULT for a failed kernel...) or exec_job_run's
 * (KF_EINVAL: Slurm refused the job; KF_EFAULT: it failed at Slurm;
 * KF_ECANCELED). KF_EINVAL also for a tool that is not a GPU tool. */
int tools_exec_forward(struct tool_ctx *ctx, const char *tool, const json_t *args, json_t **out,
		       struct kf_err *err) __attribute__((warn_unused_result));

/* get_gpu_specs {"gpu": "local"} under a cluster executor: one job per GPU
 * type of the partition (sinfo's gres types, --gres gpu:TYPE:1, at once),
 * "local" listing every type's GPUs with "gres_type" and "node", plus
 * "partition": {"name", "gpu_types"}; untyped GPUs: one job, its node's
 * answer. Returns 0 when a type answered, else the first error. */
int tools_exec_gpu_local(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* kforge calibrate under a cluster executor: one exclusive job per GPU
 * type (or one, untyped) runs calibrate on a node of that type (its
 * ceilings also stay in the node's data dir); each is recorded here as a
 * calibrate run and its ceilings stored in app's history. *out (new):
 * {"summary", "results": [each type's calibration, "gres_type"],
 * "partition"}. Returns 0 when a type was calibrated, else the first
 * error. */
int tools_exec_calibrate(struct app *app, json_t **out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* exec_recovered_fn for exec_recover: records the run of a job a previous
 * daemon submitted (arg: struct app *). */
void tools_exec_recovered(void *arg, const struct history_job *job, int rc,
			  const struct exec_job_result *res, const char *msg);

#endif
