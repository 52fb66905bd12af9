/* tools: the tables of MCP tools, resources and prompts, and the per-call
 * context their handlers get. Each tool group is a const struct tool_group
 * in its own file under server/tools/ (listed in server/tools/groups.h);
 * the composition root hands them to the registry (tools_load_groups).
 * Handlers see the parsed, already schema-validated arguments and return a
 * result struct as JSON; they never see JSON-RPC, sessions or transports. */
#ifndef KF_TOOLS_H
#define KF_TOOLS_H

#include <jansson.h>
#include <stddef.h>

#include "base/kf_err.h"

struct app;
struct tool_ctx;

/* Annotation bits (MCP ToolAnnotations hints). */
enum {
	TOOL_READ_ONLY = 1u << 0,   /* readOnlyHint: changes nothing */
	TOOL_DESTRUCTIVE = 1u << 1, /* destructiveHint */
	TOOL_IDEMPOTENT = 1u << 2,  /* idempotentHint */
	TOOL_OPEN_WORLD = 1u << 3,  /* openWorldHint: reaches outside kforge */
	TOOL_FAST = 1u << 4,	    /* not a hint: the handler finishes in
				     * microseconds and never blocks (no I/O, no
				     * locks held long, no client requests), so
				     * the server may run it on the transport's
				     * thread instead of the worker pool */
	/* Not hints: client capabilities the handler cannot work without.
	 * A stateless (2026-07-28) request that does not declare them is
	 * refused with MissingRequiredClientCapabilityError before the
	 * handler runs. */
	TOOL_NEEDS_SAMPLING = 1u << 5,
	TOOL_NEEDS_ELICITATION = 1u << 6,
	/* Long work (GPU jobs): a call from a client that declares the tasks
	 * extension is answered with a task handle at once and polled. */
	TOOL_TASK = 1u << 7,
	/* Not a hint: the call is a GPU job (check, benchmark, model
	 * benchmark, torch-op build, profile): it passes the admission hook
	 * (tools_set_admission) before its handler runs. */
	TOOL_GPU_JOB = 1u << 8
};

/* A tool handler. args: borrowed, valid against the tool's input_schema.
 * On success returns 0 and sets *out to a new JSON object, the complete
 * structuredContent, whose first key is "summary" (one line).
 * A tool-level failure (bad spec, compile error, wrong kernel, no_gpu)
 * returns a negative KF_E* code with err->msg set; the handler may also set
 * *out to a structured detail (diagnostics, mismatches). The server answers
 * isError: true with the error object as the text block only (never
 * structuredContent, which the outputSchema describes): *out with summary
 * first and "error" added, or without *out
 * {"summary": msg, "error": {"code": name, "message": msg}}. */
typedef int (*tool_handler_fn)(struct tool_ctx *ctx, const json_t *args, json_t **out,
			       struct kf_err *err);

struct tool_def {
	const char *name;	   /* MCP tool name, e.g. "get_gpu_specs" */
	const char *title;	   /* human title */
	const char *description;   /* what it does, for the model: only what the
				    * schema (names, bounds, defaults, enums) cannot
				    * say, said once; tools/list is at most 10 KB */
	const char *input_schema;  /* JSON Schema text (the validator's subset) */
	const char *output_schema; /* JSON Schema text of structuredContent, or NULL */
	unsigned annotations;	   /* TOOL_* bits */
	tool_handler_fn handler;
};

/* A family of resources addressed by one URI template, e.g.
 * "kforge://guides/{id}". list appends MCP Resource objects to arr (borrowed);
 * read returns new MCP ResourceContents array in *contents for one uri;
 * complete appends candidate values for the template variable starting with
 * prefix to arr. Each returns 0 or a KF_E* code (KF_ENOTFOUND for an unknown
 * uri). Any callback may be NULL. */
struct resource_def {
	const char *uri_template; /* RFC 6570 level 1 */
	const char *name;
	const char *title;
	const char *description;
	const char *mime_type;
	int (*list)(struct app *app, json_t *arr, struct kf_err *err);
	int (*read)(struct app *app, const char *uri, json_t **contents, struct kf_err *err);
	int (*complete)(struct app *app, const char *var, const char *prefix, json_t *arr,
			struct kf_err *err);
};

struct prompt_arg {
	const char *name;
	const char *description;
	int required; /* 1 when the client must give it */
};

/* An MCP prompt. get returns a new MCP PromptMessage array in *messages.
 * args: borrowed object of string values. */
struct prompt_def {
	const char *name;
	const char *title;
	const char *description;
	const struct prompt_arg *args; /* terminated by an entry with name NULL */
	int (*get)(struct app *app, const json_t *args, json_t **messages, struct kf_err *err);
	int (*complete)(struct app *app, const char *arg, const char *prefix, json_t *arr,
			struct kf_err *err);
};

/* Each domain's table: an array and its length, defined in its tools_*.c. */
struct tool_group {
	const struct tool_def *tools;
	size_t tools_len;
	const struct resource_def *resources;
	size_t resources_len;
	const struct prompt_def *prompts;
	size_t prompts_len;
};

/* The app the call runs in (knowledge base, compiler, runner, history).
 * Returns borrowed, valid for the call. */
struct app *mcp_call_app(struct tool_ctx *ctx);

/* Reports progress to the client (notifications/progress) when it sent a
 * progressToken; otherwise does nothing. total <= 0 means unknown. */
void mcp_call_progress(struct tool_ctx *ctx, double progress, double total, const char *message);

/* Returns a pointer to a flag that becomes nonzero once the client cancels
 * the request or the session ends. Borrowed, valid for the call. Pass it down
 * to long-running domain calls (jail, runner), which poll it and kill their
 * job. */
const volatile int *mcp_call_cancel_flag(struct tool_ctx *ctx);

/* Sends a notifications/message log line to the client at level
 * ("debug", "info", "warning", "error") if the session's level allows it. */
void mcp_call_log(struct tool_ctx *ctx, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Replaces the one text block the server builds from structuredContent
 * with these MCP content blocks (image, audio, embedded resource...) for
 * the call's result. content: taken (a JSON array). A handler that sets
 * content may leave *out NULL: the result then has no structuredContent. */
void mcp_call_set_content(struct tool_ctx *ctx, json_t *content);

/* 1 when the client declared capability name ("sampling", "elicitation",
 * "roots") in initialize; 0 otherwise and outside a session. */
int mcp_call_client_supports(struct tool_ctx *ctx, const char *name);

/* Sends a request (e.g. "sampling/createMessage", "elicitation/create")
 * to the client and waits up to timeout_ms for its answer. params: taken.
 * Returns 0 and *result (new reference, the response's result), or
 * KF_ENOTFOUND when there is no client session (REST, CLI), KF_ETIMEOUT,
 * KF_ECANCELED (request cancelled or session ended), KF_EINVAL when the
 * client answered with an error (its message in err). */
int mcp_call_request(struct tool_ctx *ctx, const char *method, json_t *params, int timeout_ms,
		     json_t **result, struct kf_err *err) __attribute__((warn_unused_result));

/* Admission of TOOL_GPU_JOB calls. admit runs on the call's worker thread
 * before the handler; it may wait (honouring mcp_call_cancel_flag) and
 * returns 0 to run the handler, or a KF_E* code with err set, which
 * becomes the call's error result. release runs after every handler that
 * was admitted. NULL hooks admit every call. Set once at startup, before
 * any session (app_tools_load). */
typedef int (*tool_admit_fn)(struct tool_ctx *ctx, struct kf_err *err);
typedef void (*tool_release_fn)(struct tool_ctx *ctx);
void tools_set_admission(tool_admit_fn admit, tool_release_fn release);

/* The hooks tools_set_admission set (either may be NULL). */
void tools_admission(tool_admit_fn *admit, tool_release_fn *release);

/* Who the call comes from: "session-<n>", one per MCP session for the
 * process's life, or the name the transport set for the session (over
 * HTTP with tokens, "token:<name>"); outside a session what
 * mcp_tool_call_as named, else NULL (the CLI). Domain modules queue
 * work per client with it (compile_req.client). Borrowed, valid for the
 * call. */
const char *mcp_call_client(struct tool_ctx *ctx);

/* The registry. tools_find returns borrowed or NULL. The *_all functions
 * return the concatenation of every group's entries; the pointers are
 * borrowed and static.
 *
 * Registers the groups, parses every input/output schema (schema.h), and
 * checks that tool names are unique and match [A-Za-z0-9_.-]{1,128}.
 * Returns 0, or KF_EINVAL naming the tool and the schema path. Call once at
 * startup, before any session; a later call replaces the registry (tests
 * only). groups: borrowed, must stay valid while the registry is used. The
 * daemon's list of groups is app_tools_load's (server/app.h). */
int tools_load_groups(const struct tool_group *const *groups, size_t n, struct kf_err *err)
	__attribute__((warn_unused_result));
/* The parsed schemas of a registered tool (t from tools_find/tools_at).
 * Borrowed, valid until the next tools_load. output may be NULL. */
struct schema;
const struct schema *tools_input_schema(const struct tool_def *t);
const struct schema *tools_output_schema(const struct tool_def *t);
const struct tool_def *tools_find(const char *name);
size_t tools_count(void);
const struct tool_def *tools_at(size_t i);
size_t tools_resource_count(void);
const struct resource_def *tools_resource_at(size_t i);
size_t tools_prompt_count(void);
const struct prompt_def *tools_prompt_at(size_t i);
const struct prompt_def *tools_prompt_find(const char *name);

/* The conformance suite's fixture group (fixtures.c; tests only). */
extern const struct tool_group TOOLS_FIXTURES;

#endif
