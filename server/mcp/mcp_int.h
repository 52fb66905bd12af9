/* mcp_int: what mcp.c (lifecycle, dispatch, lists) and mcp_call.c (tool
 * calls, the worker pool, tool_ctx) share. Included by no one else. */
#ifndef KF_MCP_INT_H
#define KF_MCP_INT_H

#include <jansson.h>
#include <pthread.h>

#include "server/mcp/mcp.h"
#include "server/mcp/tools.h"

#define MCP_SESSION_MAX_CALLS	64   /* in-flight tool calls per session */
#define MCP_SESSION_MAX_SUBS	256  /* resources/subscribe URIs per session */
#define MCP_SUB_URI_MAX		2048 /* bytes of one subscribed URI */
#define MCP_PAGE_SIZE		50   /* entries per tools/resources/prompts page */
#define MCP_COMPLETION_MAX	100  /* values per completion/complete answer */
#define MCP_RESOURCE_NOT_FOUND	-32002
#define MCP_MISSING_CLIENT_CAP	-32021	/* 2026-07-28 */
#define MCP_UNSUPPORTED_VERSION -32022	/* 2026-07-28 */
#define MCP_LOG_NONE		99	/* log level index: send no log notifications */
#define MCP_TTL_STATIC_MS	3600000 /* cache hint for what changes only with the binary */

/* Which revision a session speaks. */
enum mcp_era {
	MCP_ERA_NONE = 0,   /* handshake revisions (or nothing yet) */
	MCP_ERA_MODERN,	    /* 2026-07-28, chosen by its first request (stdio) */
	MCP_ERA_MODERN_ONLY /* 2026-07-28 for every request (set by the transport) */
};

/* A request the server sent to the client, waiting for its response. */
struct mcp_pending {
	json_int_t id;
	json_t *result; /* new reference once answered */
	json_t *error;	/* new reference when the client answered an error */
	int done;
	struct mcp_pending *next;
};

struct mcp_session {
	struct app *app;
	mcp_send_fn send;
	void *arg;
	pthread_mutex_t lock;	   /* everything below */
	pthread_cond_t cond;	   /* calls finishing, pending answers, cancels */
	pthread_mutex_t send_lock; /* serializes send */
	const char *version;	   /* negotiated, static; NULL before initialize */
	int initialized;
	enum mcp_era era;
	int closing;
	int log_level;		/* index into MCP_LOG_LEVELS */
	json_t *client_caps;	/* initialize's params.capabilities */
	json_t *subs;		/* object: subscribed uri -> true */
	struct tool_ctx *calls; /* in flight (queued, running or answering) */
	size_t calls_len;	/* calls holding a slot (not yet answering) */
	struct mcp_pending *pending;
	json_int_t next_id;		     /* ids of server-to-client requests */
	char client[64];		     /* who the calls come from: "session-<n>", or what the
			  * transport set (mcp_session_set_client) */
	struct mcp_session *g_next, *g_prev; /* all sessions (resource updates) */
};

/* One tool call; also what handlers see as struct tool_ctx. */
struct tool_ctx {
	struct mcp_session *s; /* NULL outside a session (REST, CLI) */
	const char *client;    /* outside a session: who calls (borrowed), or NULL */
	char task_client[64];  /* a task's: its session's client, which the task outlives */
	struct app *app;
	json_t *id;		/* the request id; owned */
	void *tcall;		/* the transport's call pointer */
	json_t *progress_token; /* owned, or NULL */
	volatile int cancelled;
	int slot; /* holds one of MCP_SESSION_MAX_CALLS (under s->lock) */
	const struct tool_def *tool;
	json_t *args;		/* owned */
	json_t *content;	/* owned: set by mcp_call_set_content */
	struct mcp_task *task;	/* set: runs as this task (s is NULL) */
	json_t *caps;		/* owned: a stateless request's client capabilities, or
			* NULL (the session's, from initialize) */
	int log_level;		/* with caps: the request's log level index */
	struct tool_ctx *snext; /* session's in-flight list */
	struct tool_ctx *qnext; /* pool queue */
};

/* MCP logging levels, least severe first. */
extern const char *const MCP_LOG_LEVELS[];
int mcp_log_level_index(const char *name); /* -1 when unknown */

/* Sends text (taken: freed here) through the session's send under its send
 * lock. A NULL text (allocation failed) sends a prebuilt internal error
 * when final, else nothing. */
void mcp_send_text(struct mcp_session *s, void *call, int final, const json_t *id, char *text,
		   size_t len);

/* Sends a JSON-RPC error response (final) for id. */
void mcp_reply_error(struct mcp_session *s, void *call, const json_t *id, int code, const char *fmt,
		     ...) __attribute__((format(printf, 5, 6)));

/* Sends a result response (final); result taken. */
void mcp_reply(struct mcp_session *s, void *call, const json_t *id, json_t *result);

/* Sets o[key] to the string v when v is not NULL. */
void mcp_set_str(json_t *o, const char *key, const char *v);

/* Reads params.cursor of a list request into *start. Returns 0, or -1
 * after replying Invalid params. mcp_page_finish sets nextCursor when
 * next < total. */
int mcp_page_start(struct mcp_session *s, const json_t *id, const json_t *params, void *call,
		   size_t total, size_t *start);
void mcp_page_finish(json_t *result, size_t next, size_t total);

/* mcp_modern.c: the stateless revision. */
/* 1 when this request takes the stateless path (see mcp_modern.c). */
int mcp_request_is_modern(const struct mcp_session *s, const char *method, const json_t *params);
/* Checks params._meta of a modern request and applies its capabilities
 * and log level. Returns 0, or -1 after replying the error. */
int mcp_modern_begin(struct mcp_session *s, const char *method, const json_t *id,
		     const json_t *params, void *call);
/* server/discover's answer (one final send). */
void mcp_discover(struct mcp_session *s, const json_t *id, void *call);
/* For a modern session: adds resultType "complete" and the server's
 * identity to result (borrowed); nothing otherwise. */
void mcp_result_finish(struct mcp_session *s, json_t *result);
/* For a modern session: adds ttlMs and cacheScope ("public" or
 * "private") to result (borrowed); nothing otherwise. */
void mcp_cache_hint(struct mcp_session *s, json_t *result, long ttl_ms, const char *scope);
/* Sends MissingRequiredClientCapabilityError with need (taken: the
 * ClientCapabilities object that was missing, e.g. {"sampling": {}}) for
 * what (a tool or method name). */
void mcp_reply_missing_cap(struct mcp_session *s, void *call, const json_t *id, json_t *need,
			   const char *what);

/* mcp_task.c: the tasks extension. */
struct mcp_task;
/* 1 when a call of tool from this (stateless) request runs as a task. */
int mcp_task_wanted(const struct mcp_session *s, const struct tool_def *tool);
/* Registers a task for call c (its s already NULL) and answers the
 * request with the task handle. Returns 0, or -1 (nothing sent) when no
 * task could be made: the caller runs the call as usual. */
int mcp_task_start(struct mcp_session *s, const json_t *id, struct tool_ctx *c, void *call);
/* The task's call ended with result (taken: the CallToolResult). */
void mcp_task_finish(struct tool_ctx *c, json_t *result);
/* Progress of a task's call, kept as its statusMessage. */
void mcp_task_progress(struct tool_ctx *c, double progress, double total, const char *message);
/* tasks/get, tasks/cancel, tasks/update (one final send). */
void mcp_task_method(struct mcp_session *s, const char *method, const json_t *id,
		     const json_t *params, void *call);

/* mcp.c: the server's capabilities (new object; modern: without the
 * methods 2026-07-28 removed) and instructions (static). */
json_t *mcp_capabilities(int modern);
const char *mcp_instructions(void);

/* mcp_res.c: each answers the request (exactly one final send). */
void mcp_resources_list(struct mcp_session *s, const json_t *id, const json_t *params, void *call);
void mcp_templates_list(struct mcp_session *s, const json_t *id, const json_t *params, void *call);
void mcp_resources_read(struct mcp_session *s, const json_t *id, const json_t *params, void *call);
void mcp_subscribe(struct mcp_session *s, const json_t *id, const json_t *params, void *call,
		   int on);
void mcp_prompts_list(struct mcp_session *s, const json_t *id, const json_t *params, void *call);
void mcp_prompts_get(struct mcp_session *s, const json_t *id, const json_t *params, void *call);
void mcp_complete(struct mcp_session *s, const json_t *id, const json_t *params, void *call);

/* tools/call: validates params, then either answers at once (unknown tool,
 * busy) or queues the call on the worker pool. Always leads to exactly one
 * final send for call. */
void mcp_call_start(struct mcp_session *s, const json_t *id, const json_t *params, void *call);

/* notifications/cancelled: flags the in-flight call with this id. */
void mcp_call_cancel(struct mcp_session *s, const json_t *id);

/* Flags every call of s, wakes waiters, and waits until none is left. */
void mcp_call_drain(struct mcp_session *s);

#endif
