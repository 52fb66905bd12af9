/* mcp: one MCP session over any transport. The transport hands in each
 * incoming message as text; the session parses it (jsonrpc.c), checks the
 * lifecycle (initialize first), dispatches to the tool/resource/prompt
 * tables, and hands every outgoing message back through the transport's send
 * callback. Tool calls run on worker threads, so a long benchmark does not
 * block pings or cancellation; send may be called from any thread. */
#ifndef KF_MCP_H
#define KF_MCP_H

#include <jansson.h>
#include <stddef.h>

#include "base/kf_err.h"

struct app;
struct mcp_session;

/* Protocol revisions with the initialize handshake, newest first; the
 * first is what kforge offers to a client asking for an unknown one. */
extern const char *const MCP_VERSIONS[];

/* Stateless revisions (per-request _meta, server/discover), newest first. */
extern const char *const MCP_MODERN_VERSIONS[];

/* 1 when v (borrowed, may be NULL) is one of MCP_MODERN_VERSIONS. */
int mcp_is_modern_version(const char *v);

/* Every revision kforge speaks, newest first: a new JSON array. */
json_t *mcp_supported_versions(void);

/* Delivers one outgoing message (compact JSON text, no newline, borrowed for
 * the call). call is the call_arg given to mcp_session_handle for the
 * incoming message this belongs to (its response, or a progress or log
 * notification sent while it runs), or NULL for messages tied to no request.
 * final is 1 for the response that ends that request: after it, call is
 * never passed again. Called from any thread, never concurrently for one
 * session (the session serializes). */
typedef void (*mcp_send_fn)(void *arg, void *call, int final, const char *json, size_t len);

enum mcp_in {
	MCP_IN_REQUEST = 0,  /* exactly one final send with this call will follow
			       * (perhaps already made, perhaps from a worker) */
	MCP_IN_NOTIFICATION, /* nothing will be sent for this call */
	MCP_IN_RESPONSE,     /* a client response; nothing will be sent */
	MCP_IN_ERROR	     /* malformed: the final error response (id null
			       * when unknown) was already sent with this call */
};

/* Returns a new session (free with mcp_session_free) bound to app
 * (borrowed, must outlive it) that sends through send(arg, ...), or NULL on
 * allocation failure. */
struct mcp_session *mcp_session_new(struct app *app, mcp_send_fn send, void *arg);

/* Cancels every request still running, waits for their workers, frees the
 * session. NULL is a no-op. */
void mcp_session_free(struct mcp_session *s);

/* Handles one incoming message of len bytes (borrowed). call is an opaque
 * transport pointer passed back to send for the messages that belong to this
 * one. A JSON array (batch) is answered with an Invalid Request error. */
enum mcp_in mcp_session_handle(struct mcp_session *s, const char *msg, size_t len, void *call);

/* The protocol revision negotiated by initialize, or NULL before it.
 * Returns borrowed, static. */
const char *mcp_session_version(const struct mcp_session *s);

/* Makes every request of s take the stateless path: the transport calls
 * it for a request that declared a stateless revision (HTTP). */
void mcp_session_set_modern(struct mcp_session *s);

/* Names who s's calls come from (client: borrowed, copied, truncated to
 * 63 bytes) instead of its own "session-<n>": the key compiles queue
 * under (sandbox/compile/compile_queue.h). A transport that gives each
 * stateless request a session of its own sets the client's address, so
 * one client's many requests share one place in the queue. */
void mcp_session_set_client(struct mcp_session *s, const char *client);

/* 1 when s speaks a stateless revision (per-request _meta). */
int mcp_session_is_modern(const struct mcp_session *s);

/* 1 once initialize has been answered. */
int mcp_session_initialized(const struct mcp_session *s);

/* Cancels every running task of the tasks extension and waits until
 * their calls have ended: before the domain resources close. */
void mcp_tasks_shutdown(void);

/* Sends notifications/resources/updated for uri (borrowed) to every
 * session that subscribed to it. Thread-safe; callable from any module
 * that changes what a resource reads (e.g. a run finishing). */
void mcp_resource_updated(const char *uri);

/* Calls tool name outside any session (REST, CLI, tests) with args
 * (borrowed; validated against the tool's schema here). Returns 0 and sets
 * *result to a new JSON object: the structuredContent (summary first), and
 * *is_error to 1 for a tool-level failure (its "error" member says why).
 * Returns KF_ENOTFOUND for an unknown tool and KF_EINVAL for arguments that
 * fail the schema, with err naming the field. */
int mcp_tool_call(struct app *app, const char *name, const json_t *args, json_t **result,
		  int *is_error, struct kf_err *err) __attribute__((warn_unused_result));

/* mcp_tool_call on behalf of client (borrowed for the call; NULL = the
 * anonymous client): what mcp_call_client answers inside the handler, so
 * a REST call's compiles and GPU jobs queue under its bearer token. */
int mcp_tool_call_as(struct app *app, const char *client, const char *name, const json_t *args,
		     json_t **result, int *is_error, struct kf_err *err)
	__attribute__((warn_unused_result));

/* The "error" member of a failed call's answer: {code, message}; code is
 * a KF_E* code's name (kf_err_name) or a transport's own
 * ("method_not_allowed"). Every answer that fails names its error this one
 * way (tools, REST, the CLI). Returns new, or NULL when out of memory. */
json_t *mcp_error_member(const char *code, const char *msg);

/* The answer of a failed call with nothing more to say: {summary: msg,
 * error: mcp_error_member(code, msg)}. Returns new, or NULL when out of
 * memory. */
json_t *mcp_error_answer(const char *code, const char *msg);

#endif
