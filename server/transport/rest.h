/* rest: the REST API for people under /v1, one table of routes, each a
 * method + path pattern (+ query parameters) mapped onto an MCP tool call
 * through mcp_tool_call, answering the tool's structuredContent JSON with an
 * HTTP status taken from the result. Knows nothing of libmicrohttpd: the
 * HTTP transport hands in the request's parts and sends what comes back.
 * rest_plan is cheap and runs on the HTTP thread; rest_run may block (it
 * runs the tool) and runs on a worker thread. */
#ifndef KF_REST_H
#define KF_REST_H

#include <jansson.h>
#include <stddef.h>

struct app;

/* One incoming REST request. Strings borrowed for the call. */
struct rest_req {
	const char *method; /* "GET", "POST"... */
	const char *path;   /* URL path without the query, e.g. "/v1/gpus/h100" */
	/* Returns the decoded value of query parameter name, or NULL. */
	const char *(*query)(void *qarg, const char *name);
	void *qarg;
	const char *body; /* request body (POST), may be NULL */
	size_t body_len;
};

/* What the server reports in /v1/health. */
struct rest_info {
	size_t sessions;    /* open MCP sessions */
	size_t inflight;    /* requests waiting for an answer */
	double uptime_s;    /* seconds since the server started */
	const char *listen; /* "http://127.0.0.1:7070", borrowed */
	int auth;	    /* 1 when a bearer token is required */
};

enum rest_kind {
	REST_TOOL = 0, /* call plan.tool with plan.args (may block) */
	REST_HEALTH,   /* answer /v1/health */
	REST_OPENAPI,  /* answer /v1/openapi.json */
	REST_STREAM    /* served by the HTTP transport's streams; listed for OpenAPI */
};

/* A matched route, ready to run. Free with rest_plan_fini. */
struct rest_plan {
	enum rest_kind kind;
	const char *tool;   /* borrowed, static */
	json_t *args;	    /* owned: the tool's arguments */
	const char *client; /* who calls (borrowed: the caller's, for the
			     * plan's life), or NULL: the anonymous client */
};

/* Matches req against the route table and builds the tool's arguments from
 * the path, the query and the JSON body. Returns 0 with plan filled, or an
 * HTTP status (400 bad parameter or body, 404 no route, 405 method not
 * allowed) with *body set to a new JSON error object
 * {"summary", "error": {"code", "message"}} naming the problem; for 405
 * *allow is set to the methods the path accepts (static). */
int rest_plan(const struct rest_req *req, struct rest_plan *plan, json_t **body,
	      const char **allow);

/* Releases plan's arguments. NULL-safe. */
void rest_plan_fini(struct rest_plan *plan);

/* Runs plan (blocking while the tool runs; call it off the HTTP thread for
 * REST_TOOL). Returns the HTTP status: 200 for a result, or from the
 * tool's error code (400 invalid, 404 not_found / no such tool, 413
 * too_big, 422 compile_error or a failed check, 503 no_gpu or busy,
 * 504 timeout, 500 otherwise), and sets *body to a new JSON object (the
 * structuredContent, or an error object). info: borrowed, for REST_HEALTH. */
int rest_run(struct app *app, const struct rest_plan *plan, const struct rest_info *info,
	     json_t **body);

/* The OpenAPI 3.1 document describing every route. Returns new JSON. */
json_t *rest_openapi(void);

#endif
