/* mcp_task: the tasks extension (io.modelcontextprotocol/tasks) of the
 * stateless revision. A tools/call of a tool marked TOOL_TASK from a
 * request that declares the extension is answered at once with a task
 * handle (resultType "task"); the call runs on the worker pool with no
 * session, and the client polls tasks/get for its status and, at the end,
 * the tool's result, or cancels it with tasks/cancel. Tasks live in one
 * table for the process (HTTP requests share no session), capped at
 * MCP_TASKS_MAX, each kept MCP_TASK_TTL_MS after its last change. Task
 * ids are 128 random bits: whoever holds one may read the task. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "server/mcp/jsonrpc.h"
#include "base/log.h"
#include "server/mcp/mcp_int.h"

#define TASKS_EXT	 "io.modelcontextprotocol/tasks"
#define MCP_TASKS_MAX	 256	 /* tasks kept, running or finished */
#define MCP_TASK_TTL_MS	 3600000 /* a task is kept this long after its last change */
#define MCP_TASK_POLL_MS 1000	 /* the polling interval suggested to clients */
#define TASK_ID_LEN	 32	 /* hex digits */
#define TASK_MESSAGE_MAX 256	 /* bytes of a status message */

enum task_status { TASK_WORKING = 0, TASK_COMPLETED, TASK_CANCELLED };

static const char *const STATUS_NAMES[] = {"working", "completed", "cancelled"};

struct mcp_task {
	char id[TASK_ID_LEN + 1];
	enum task_status status;
	char message[TASK_MESSAGE_MAX]; /* statusMessage, "" for none */
	time_t created, updated;	/* wall-clock seconds */
	struct timespec touched;	/* monotonic: last change, for expiry */
	json_t *result;			/* the CallToolResult once completed */
	struct tool_ctx *ctx;		/* while the call runs */
	struct mcp_task *next;
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_done = PTHREAD_COND_INITIALIZER; /* a task's call ended */
static struct mcp_task *g_tasks;
static size_t g_len;

static long long mono_ms(const struct timespec *t)
{
	return (long long)t->tv_sec * 1000 + t->tv_nsec / 1000000;
}

static void touch_locked(struct mcp_task *t)
{
	t->updated = time(NULL);
	clock_gettime(CLOCK_MONOTONIC, &t->touched);
}

/* Drops finished tasks untouched for MCP_TASK_TTL_MS; when the table is
 * still full and want_room is set, the least recently changed finished
 * one. Under g_lock. */
static void purge_locked(int want_room)
{
	struct timespec now;
	struct mcp_task **pp, *t, **oldest = NULL;

	clock_gettime(CLOCK_MONOTONIC, &now);
	for (pp = &g_tasks; (t = *pp) != NULL;) {
		if (!t->ctx && mono_ms(&now) - mono_ms(&t->touched) >= MCP_TASK_TTL_MS) {
			*pp = t->next;
			json_decref(t->result);
			free(t);
			g_len--;
			continue;
		}
		if (!t->ctx && (!oldest || mono_ms(&t->touched) <= mono_ms(&(*oldest)->touched)))
			oldest = pp;
		pp = &t->next;
	}
	if (want_room && g_len >= MCP_TASKS_MAX && oldest) {
		t = *oldest;
		*oldest = t->next;
		json_decref(t->result);
		free(t);
		g_len--;
	}
}

static struct mcp_task *find_locked(const char *id)
{
	for (struct mcp_task *t = g_tasks; t; t = t->next)
		if (strcmp(t->id, id) == 0)
			return t;
	return NULL;
}

static void iso_time(time_t t, char *buf, size_t cap)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The Task object (new) of t, under g_lock. */
static json_t *task_json_locked(const struct mcp_task *t)
{
	char created[32], updated[32];
	json_t *o;

	iso_time(t->created, created, sizeof(created));
	iso_time(t->updated, updated, sizeof(updated));
	o = json_pack("{s:s,s:s,s:s,s:s,s:i,s:i}", "taskId", t->id, "status",
		      STATUS_NAMES[t->status], "createdAt", created, "lastUpdatedAt", updated,
		      "ttlMs", MCP_TASK_TTL_MS, "pollIntervalMs", MCP_TASK_POLL_MS);
	if (o && t->message[0])
		json_object_set_new(o, "statusMessage", json_string(t->message));
	return o;
}

int mcp_task_client_declared(const struct mcp_session *s)
{
	int yes;

	pthread_mutex_lock((pthread_mutex_t *)&s->lock);
	yes = json_object_get(json_object_get(s->client_caps, "extensions"), TASKS_EXT) != NULL;
	pthread_mutex_unlock((pthread_mutex_t *)&s->lock);
	return yes;
}

int mcp_task_wanted(const struct mcp_session *s, const struct tool_def *tool)
{
	return (tool->annotations & TOOL_TASK) && mcp_session_is_modern(s) &&
	       mcp_task_client_declared(s);
}

int mcp_task_start(struct mcp_session *s, const json_t *id, struct tool_ctx *c, void *call)
{
	struct mcp_task *t = calloc(1, sizeof(*t));
	unsigned char raw[TASK_ID_LEN / 2];
	json_t *handle;

	if (!t)
		return -1;
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		free(t);
		return -1;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(t->id + 2 * i, 3, "%02x", raw[i]);
	t->created = time(NULL);
	touch_locked(t);
	t->ctx = c;
	pthread_mutex_lock(&g_lock);
	purge_locked(1);
	if (g_len >= MCP_TASKS_MAX) {
		/* Every kept task is still running: run this call in place. */
		pthread_mutex_unlock(&g_lock);
		free(t);
		return -1;
	}
	t->next = g_tasks;
	g_tasks = t;
	g_len++;
	c->task = t;
	handle = task_json_locked(t);
	pthread_mutex_unlock(&g_lock);
	/* Durable before the client can see the handle: tasks/get finds it. */
	json_object_set_new(handle, "resultType", json_string("task"));
	mcp_reply(s, call, id, handle);
	log_debug("mcp", "task %.8s...: %s started", t->id, c->tool->name);
	return 0;
}

void mcp_task_finish(struct tool_ctx *c, json_t *result)
{
	struct mcp_task *t = c->task;

	if (result && !json_object_get(result, "resultType"))
		json_object_set_new(result, "resultType", json_string("complete"));
	pthread_mutex_lock(&g_lock);
	t->ctx = NULL;
	pthread_cond_broadcast(&g_done);
	if (t->status == TASK_WORKING) {
		t->status = TASK_COMPLETED;
		t->result = result;
		result = NULL;
		t->message[0] = '\0';
	}
	touch_locked(t);
	pthread_mutex_unlock(&g_lock);
	json_decref(result); /* a cancelled task keeps no result */
}

void mcp_task_progress(struct tool_ctx *c, double progress, double total, const char *message)
{
	struct mcp_task *t = c->task;

	pthread_mutex_lock(&g_lock);
	if (t->status == TASK_WORKING) {
		if (message)
			snprintf(t->message, sizeof(t->message), "%s", message);
		else if (total > 0)
			snprintf(t->message, sizeof(t->message), "%.0f of %.0f", progress, total);
		touch_locked(t);
	}
	pthread_mutex_unlock(&g_lock);
}

/* Reads params.taskId, checks the request declared the extension. Returns
 * the id, or NULL after replying the error. */
static const char *task_request(struct mcp_session *s, const json_t *id, const json_t *params,
				const char *method, void *call)
{
	const char *tid = json_string_value(json_object_get(params, "taskId"));

	if (!mcp_task_client_declared(s)) {
		mcp_reply_missing_cap(s, call, id, json_pack("{s:{s:{}}}", "extensions", TASKS_EXT),
				      method);
		return NULL;
	}
	if (!tid) {
		mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
				"Invalid params: params.taskId must be the taskId a tools/call "
				"answered");
		return NULL;
	}
	return tid;
}

static void reply_unknown(struct mcp_session *s, const json_t *id, const char *tid, void *call)
{
	mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
			"Invalid params: unknown task '%.64s': no such task, or it finished "
			"more than %d s ago and was dropped",
			tid, MCP_TASK_TTL_MS / 1000);
}

void mcp_task_method(struct mcp_session *s, const char *method, const json_t *id,
		     const json_t *params, void *call)
{
	const char *tid = task_request(s, id, params, method, call);
	struct mcp_task *t;
	json_t *result = NULL;

	if (!tid)
		return;
	pthread_mutex_lock(&g_lock);
	purge_locked(0);
	t = find_locked(tid);
	if (t && strcmp(method, "tasks/get") == 0) {
		result = task_json_locked(t);
		if (t->status == TASK_COMPLETED && t->result)
			json_object_set(result, "result", t->result);
	} else if (t && strcmp(method, "tasks/cancel") == 0) {
		/* Terminal tasks stay as they are (the ack is idempotent). */
		if (t->status == TASK_WORKING) {
			t->status = TASK_CANCELLED;
			snprintf(t->message, sizeof(t->message), "cancelled by tasks/cancel");
			if (t->ctx)
				t->ctx->cancelled = 1;
			touch_locked(t);
		}
		result = json_object();
	} else if (t) {
		/* tasks/update: kforge's tools never ask for input, so there is
		 * nothing outstanding to answer; responses are ignored. */
		result = json_object();
	}
	pthread_mutex_unlock(&g_lock);
	if (!t) {
		reply_unknown(s, id, tid, call);
		return;
	}
	mcp_reply(s, call, id, result);
}

void mcp_tasks_shutdown(void)
{
	pthread_mutex_lock(&g_lock);
	for (;;) {
		int running = 0;
		for (struct mcp_task *t = g_tasks; t; t = t->next)
			if (t->ctx) {
				t->ctx->cancelled = 1;
				running = 1;
			}
		if (!running)
			break;
		pthread_cond_wait(&g_done, &g_lock);
	}
	pthread_mutex_unlock(&g_lock);
}
