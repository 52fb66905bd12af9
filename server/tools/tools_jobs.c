/* tools_jobs: per-client admission of GPU jobs, a compile_queue (the same
 * per-client FIFOs served round robin that compiles use) with one slot
 * per admitted job. See tools_jobs.h. */
#include "server/tools/tools_jobs.h"

#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "sandbox/compile/compile_queue.h"
#include "sandbox/exec/exec.h"
#include "server/app.h"

static int pick(int v, int def, const char *opt, struct kf_err *err)
{
	if (v == 0)
		return def;
	if (v < 1 || v > TOOLS_JOBS_MAX)
		return kf_err_set(err, KF_EINVAL, "%s: %d is not a count from 1 to %d", opt, v,
				  TOOLS_JOBS_MAX);
	return v;
}

int tools_jobs_open(struct app *app, struct kf_err *err)
{
	struct compile_queue_limits lim;
	int per = pick(app->cfg.max_jobs_per_client, TOOLS_JOBS_PER_CLIENT, "--max-jobs-per-token",
		       err);
	int queued = pick(app->cfg.queued_jobs_per_client, TOOLS_JOBS_QUEUED,
			  "--max-queued-jobs-per-token", err);

	if (per < 0)
		return per;
	if (queued < 0)
		return queued;
	lim.slots = exec_is_remote(app->exec) ? TOOLS_JOBS_SLOTS_CLUSTER : TOOLS_JOBS_SLOTS_LOCAL;
	lim.client_slots = per < lim.slots ? per : lim.slots;
	lim.client_waiting = queued;
	app->cfg.max_jobs_per_client = per;
	app->cfg.queued_jobs_per_client = queued;
	return compile_queue_new(&lim, &app->jobs, err);
}

void tools_jobs_close(struct app *app)
{
	compile_queue_free(app->jobs);
	app->jobs = NULL;
}

/* The client as people read it: "token 'alice'", "MCP session session-3",
 * "client 127.0.0.1". */
static void describe(const char *client, char *buf, size_t cap)
{
	if (!strncmp(client, "token:", 6))
		snprintf(buf, cap, "token '%s'", client + 6);
	else if (!strncmp(client, "session-", 8))
		snprintf(buf, cap, "MCP session %s", client);
	else
		snprintf(buf, cap, "client %s", client);
}

int tools_jobs_admit(struct tool_ctx *ctx, struct kf_err *err)
{
	struct app *app = mcp_call_app(ctx);
	const char *client = mcp_call_client(ctx);
	struct compile_queue_count all, mine;
	char who[96], msg[256];
	struct kf_err e = {0};
	int rc;

	if (!app || !app->jobs)
		return 0;
	if (!client || !*client)
		client = NULL;
	describe(client ? client : "anonymous", who, sizeof(who));
	if (client) {
		compile_queue_count(app->jobs, client, &all, &mine);
		if (mine.running >= app->cfg.max_jobs_per_client &&
		    mine.waiting < app->cfg.queued_jobs_per_client) {
			snprintf(msg, sizeof(msg),
				 "queued: %s has %d GPU jobs running, its limit "
				 "(--max-jobs-per-token %d); %d of its jobs wait before this one",
				 who, mine.running, app->cfg.max_jobs_per_client, mine.waiting);
			mcp_call_progress(ctx, 0, 0, msg);
		}
	}
	rc = compile_queue_take(app->jobs, client, mcp_call_cancel_flag(ctx), &e);
	if (rc == KF_EBUSY) {
		log_info("jobs", "%s refused a GPU job: %d waiting, %d running", who,
			 app->cfg.queued_jobs_per_client, app->cfg.max_jobs_per_client);
		return kf_err_set(err, KF_EBUSY,
				  "busy, retry: %s already has %d GPU jobs waiting (at most %d, "
				  "--max-queued-jobs-per-token) behind its %d running "
				  "(--max-jobs-per-token); retry when some have finished",
				  who, app->cfg.queued_jobs_per_client,
				  app->cfg.queued_jobs_per_client, app->cfg.max_jobs_per_client);
	}
	if (rc == KF_ECANCELED)
		return kf_err_set(err, KF_ECANCELED,
				  "cancelled while waiting behind %s's other GPU jobs", who);
	if (rc)
		return kf_err_set(err, rc, "%s", e.msg);
	log_debug("jobs", "%s: a GPU job admitted", who);
	return 0;
}

void tools_jobs_release(struct tool_ctx *ctx)
{
	struct app *app = mcp_call_app(ctx);

	if (app && app->jobs)
		compile_queue_give(app->jobs, mcp_call_client(ctx));
}
