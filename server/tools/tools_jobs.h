/* tools_jobs: admission of GPU jobs per client, above the executor, so the
 * same limit holds with the local GPU pool and with Slurm. A GPU job is a
 * call of a TOOL_GPU_JOB tool (check_kernel, benchmark_kernel,
 * benchmark_model, build_torch_op); its client is mcp_call_client (a
 * bearer token's name over HTTP with tokens, else the MCP session). A
 * client runs at most max_per_client jobs at once; more wait in its own
 * FIFO (at most queued_per_client, past that a busy error at once), and
 * free admissions go round robin between the clients that wait, so one
 * agent cannot take the whole GPU pool or partition. The anonymous client
 * (the CLI, REST without tokens) has no cap of its own. */
#ifndef KF_TOOLS_JOBS_H
#define KF_TOOLS_JOBS_H

#include "base/kf_err.h"
#include "server/mcp/tools.h"

struct app;

#define TOOLS_JOBS_PER_CLIENT 16 /* default --max-jobs-per-token */
#define TOOLS_JOBS_QUEUED     64 /* default --max-queued-jobs-per-token */
#define TOOLS_JOBS_SLOTS_LOCAL \
	64			      /* jobs admitted at once, all clients, to the
					* local pool: its queue's length, so an
					* admitted job is never told busy there */
#define TOOLS_JOBS_SLOTS_CLUSTER 4096 /* the same with Slurm (exec's limits apply) */
#define TOOLS_JOBS_MAX		 4096 /* largest value of either option */

/* Opens app->jobs from app->cfg.max_jobs_per_client and
 * cfg.queued_jobs_per_client (0: the defaults above). Returns 0, KF_EINVAL
 * naming the option for a value outside 1..TOOLS_JOBS_MAX, or KF_ENOMEM. */
int tools_jobs_open(struct app *app, struct kf_err *err) __attribute__((warn_unused_result));

/* Frees app->jobs. No job may be admitted. */
void tools_jobs_close(struct app *app);

/* The admission hooks (tool_admit_fn, tool_release_fn) for
 * tools_set_admission. tools_jobs_admit waits in the caller's queue,
 * reporting that as progress, and returns 0 (admitted), KF_EBUSY with err
 * naming the client, its counts and the options that raise them, or
 * KF_ECANCELED when the call was cancelled while waiting. Without
 * app->jobs (an app opened without it) every call is admitted. */
int tools_jobs_admit(struct tool_ctx *ctx, struct kf_err *err);
void tools_jobs_release(struct tool_ctx *ctx);

#endif
