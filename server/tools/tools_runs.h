/* tools_runs: the run history as MCP tools (list_runs, get_run,
 * compare_runs) and resources (kforge://runs/{id}[/source|spec|result]),
 * plus tools_runs_record, which every compile, check, benchmark and calibrate
 * handler calls once its result is built, so state.db holds every run
 * whichever way it came in (MCP, REST, CLI). */
#ifndef KF_TOOLS_RUNS_H
#define KF_TOOLS_RUNS_H

#include <jansson.h>
#include <stdint.h>

#include "base/kf_err.h"
#include "sandbox/history/history.h"

struct app;

/* Records one finished tool call in app->history and, on success, adds
 * "run_id": "r..." to result so the agent can cite it (get_run,
 * compare_runs).
 *   kind        HISTORY_COMPILE / CHECK / BENCH / CALIBRATE;
 *   args        the tool's arguments (borrowed): stored as the run's spec;
 *               its "source" string gives the source hash (sha256) and its
 *               "launch"[].kernel names the kernels when the result does not;
 *   result      the structuredContent (borrowed, gains "run_id"); its
 *               "summary" is stored as the run's summary and its
 *               "kernels"[].name (or strings) as the kernel names; may be
 *               NULL (then only the error is stored);
 *   rc          the handler's return: 0 -> status ok unless result has
 *               "passed": false (-> failed); KF_ECOMPILE, KF_EFAULT,
 *               KF_ETIMEOUT -> failed (the kernel's fault); any other code
 *               -> error (no_gpu, bad spec, busy, cancelled...);
 *   err_msg     the handler's message when rc != 0 (borrowed, may be NULL):
 *               the summary when result has none;
 *   gpu         the device ordinal the job ran on, or -1: its name and uuid
 *               are stored (from sandbox/pool/gpu.h);
 *   duration_ms wall time of the call.
 * Returns 0, or the KF_E* code of history_add (the failure is logged; the
 * tool's own result is still valid, so callers normally carry on). Writes
 * the id into id_out when it is not NULL. Thread-safe. */
int tools_runs_record(struct app *app, enum history_kind kind, const json_t *args, json_t *result,
		      int rc, const char *err_msg, int gpu, int64_t duration_ms,
		      char id_out[HISTORY_ID_BYTES]);

struct tools_runs_meta;

/* tools_runs_record_meta for a job a cluster ran (sandbox/exec/): job_key
 * (borrowed) makes the record exactly-once (history_add), and with gpu -1
 * the device is the one result's "device" names. A job already recorded
 * leaves the history as it is and gives result the first run's id. */
int tools_runs_record_job(struct app *app, const char *job_key, enum history_kind kind,
			  const json_t *args, json_t *result, int rc, const char *err_msg, int gpu,
			  int64_t duration_ms, const struct tools_runs_meta *meta,
			  char id_out[HISTORY_ID_BYTES]);

/* What a check or benchmark means, from its call's arguments (every
 * pointer borrowed, NULL = not given): see history_run. */
struct tools_runs_meta {
	const char *description; /* what the kernel computes: words + math */
	const char *notes;	 /* the author's reasoning */
	const char *parent;	 /* the run it improves on */
};

/* tools_runs_record, storing meta (borrowed, may be NULL) with the run. A parent
 * that is not in the history fails the recording (KF_ENOTFOUND; handlers
 * check it first with tools_runs_meta_from_args). */
int tools_runs_record_meta(struct app *app, enum history_kind kind, const json_t *args,
			   json_t *result, int rc, const char *err_msg, int gpu,
			   int64_t duration_ms, const struct tools_runs_meta *meta,
			   char id_out[HISTORY_ID_BYTES]);

/* Fills *meta from a tool call's arguments ("description", "notes",
 * "parent": borrowed from args) and checks that the parent is a run of
 * app's history. Returns 0, or KF_EINVAL / KF_ENOTFOUND naming "parent". */
int tools_runs_meta_from_args(struct app *app, const json_t *args, struct tools_runs_meta *meta,
			      struct kf_err *err) __attribute__((warn_unused_result));

/* Parses a "since" value: an ISO date or time (UTC: 2026-11-30,
 * 2026-11-30T09:00:00Z) or an age (30m, 6h, 7d). Returns 0 with *ms (unix
 * ms) or KF_EINVAL naming "since". */
int tools_runs_parse_since(const char *s, int64_t *ms, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Monotonic milliseconds, for duration_ms. */
int64_t tools_runs_now_ms(void);

#endif
