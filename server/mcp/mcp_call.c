/* mcp_call: tools/call. Arguments are validated against the tool's parsed
 * inputSchema, the handler runs on a bounded worker pool shared by every
 * session (a full queue answers "busy, retry" at once instead of piling
 * up), and the result becomes structuredContent (summary first) plus the
 * same JSON as a text block; a tool-level failure is isError with the error
 * object as text only (tool_result_error). Also the tool_ctx calls handlers
 * use, and mcp_tool_call for REST and the CLI. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/app.h"
#include "server/mcp/jsonrpc.h"
#include "base/log.h"
#include "server/mcp/mcp_int.h"
#include "server/mcp/schema.h"

#define POOL_QUEUE_MAX	     256 /* queued calls across all sessions */
#define POOL_THREADS_MAX     64
#define MCP_RESULT_MAX_BYTES (2u << 20) /* structuredContent as JSON */

static struct {
	pthread_once_t once;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct tool_ctx *head, *tail;
	size_t len;
	int threads;
} pool = {.once = PTHREAD_ONCE_INIT,
	  .lock = PTHREAD_MUTEX_INITIALIZER,
	  .cond = PTHREAD_COND_INITIALIZER};

/* --- results ----------------------------------------------------------------- */

json_t *mcp_error_member(const char *code, const char *msg)
{
	return json_pack("{s:s,s:s}", "code", code, "message", msg);
}

json_t *mcp_error_answer(const char *code, const char *msg)
{
	return json_pack("{s:s,s:o}", "summary", msg, "error", mcp_error_member(code, msg));
}

/* mcp_error_answer of a KF_E* code. Returns new. */
static json_t *error_object(int code, const char *msg)
{
	return mcp_error_answer(kf_err_name(code), msg);
}

/* Returns obj (taken) with "summary" as its first member, inserting
 * fallback when it has none. */
static json_t *summary_first(json_t *obj, const char *fallback)
{
	void *it = json_object_iter(obj);
	json_t *n, *sum;
	const char *key;
	json_t *v;

	if (it && strcmp(json_object_iter_key(it), "summary") == 0)
		return obj;
	sum = json_object_get(obj, "summary");
	n = json_object();
	if (sum)
		json_object_set(n, "summary", sum);
	else
		json_object_set_new(n, "summary", json_string(fallback));
	json_object_foreach(obj, key, v)
		if (strcmp(key, "summary") != 0)
			json_object_set(n, key, v);
	json_decref(obj);
	return n;
}

/* The error object of a handler that failed with code and msg: its own
 * detail (taken, may be NULL or not an object) with summary first and an
 * "error" member unless it names one. Returns new. */
static json_t *error_with_detail(json_t *detail, int code, const char *msg)
{
	if (!json_is_object(detail)) {
		json_decref(detail);
		return error_object(code, msg);
	}
	detail = summary_first(detail, msg);
	if (!json_object_get(detail, "error"))
		json_object_set_new(detail, "error", mcp_error_member(kf_err_name(code), msg));
	return detail;
}

/* JSON text of obj (borrowed) for a text block; returns new (free()), or
 * NULL when it is over MCP_RESULT_MAX_BYTES, with why set: a client must
 * never receive an unbounded answer, large artifacts belong in resources. */
static char *result_text(const struct tool_ctx *c, const json_t *obj, char *why, size_t why_len)
{
	char *text = json_dumps(obj, JSON_COMPACT);

	if (text && strlen(text) > MCP_RESULT_MAX_BYTES) {
		snprintf(why, why_len,
			 "internal error: %s produced a %zu-byte result, over the %u-byte cap",
			 c->tool->name, strlen(text), MCP_RESULT_MAX_BYTES);
		log_error("mcp", "%s", why);
		free(text);
		return NULL;
	}
	return text ? text : strdup("{}");
}

/* The one builder of a failed call's MCP result: isError and one text block
 * holding obj (taken, an error object: summary first, error {code, message},
 * any detail) as JSON, and no structuredContent. A tool's outputSchema
 * describes its answers; the spec reports tool execution errors as content
 * with isError, and clients (TS SDK Client, Inspector) check any
 * structuredContent against the outputSchema even when isError is set.
 * Content blocks the handler set (content, borrowed, may be NULL) replace
 * the text block. Returns new. */
static json_t *tool_result_error(const struct tool_ctx *c, json_t *obj, json_t *content)
{
	char why[200];
	char *text = NULL;
	json_t *r;

	if (!content) {
		text = result_text(c, obj, why, sizeof(why));
		if (!text) {
			json_decref(obj);
			obj = error_object(KF_ETOOBIG, why);
			text = json_dumps(obj, JSON_COMPACT);
		}
	}
	r = json_pack(
		"{s:o,s:b}", "content",
		content ? json_incref(content)
			: json_pack("[{s:s,s:s}]", "type", "text", "text", text ? text : "{}"),
		"isError", 1);
	free(text);
	json_decref(obj);
	return r;
}

/* Runs the call: validation, handler, result shaping. Sets *sc to the
 * result object (new: structuredContent on success, the error object on
 * failure; NULL when the handler gave content blocks only) and *is_error. */
/* The handler, behind the admission hook for GPU jobs. */
static int run_admitted(struct tool_ctx *c, json_t **out, struct kf_err *err)
{
	tool_admit_fn admit;
	tool_release_fn release;
	int rc;

	tools_admission(&admit, &release);
	if (!(c->tool->annotations & TOOL_GPU_JOB) || !admit)
		return c->tool->handler(c, c->args, out, err);
	rc = admit(c, err);
	if (rc)
		return rc;
	rc = c->tool->handler(c, c->args, out, err);
	if (release)
		release(c);
	return rc;
}

static void execute(struct tool_ctx *c, json_t **sc, int *is_error)
{
	const struct schema *in = tools_input_schema(c->tool);
	const struct schema *outs = tools_output_schema(c->tool);
	struct kf_err err = {0};
	json_t *out = NULL;
	int rc;

	*sc = NULL;
	*is_error = 1;
	if (in && schema_validate(in, c->args, "arguments", &err)) {
		*sc = error_object(KF_EINVAL, err.msg);
		return;
	}
	if (c->cancelled) {
		*sc = error_object(KF_ECANCELED, "cancelled before it started");
		return;
	}
	rc = run_admitted(c, &out, &err);
	if (rc) {
		if (!err.code)
			kf_err_set(&err, rc, "%s failed (%s)", c->tool->name, kf_err_name(rc));
		*sc = error_with_detail(out, rc, err.msg);
		return;
	}
	if (!out && c->content) {
		*is_error = 0;
		return;
	}
	if (!json_is_object(out)) {
		json_decref(out);
		log_error("mcp", "tool %s returned no result object", c->tool->name);
		*sc = error_object(KF_EINTERNAL, "internal error: the tool returned no result");
		return;
	}
	out = summary_first(out, "done");
	if (outs && schema_validate(outs, out, "structuredContent", &err)) {
		log_error("mcp", "tool %s: result does not match its outputSchema: %s",
			  c->tool->name, err.msg);
		json_decref(out);
		*sc = error_object(KF_EINTERNAL, err.msg);
		return;
	}
	*sc = out;
	*is_error = 0;
}

/* The MCP result of a call: sc (taken) as structuredContent plus the same
 * JSON as a text block (or the handler's content blocks), or the error
 * result when is_error. Returns new. */
static json_t *mcp_result(struct tool_ctx *c, json_t *sc, int is_error)
{
	json_t *r;
	char why[200];
	char *text;

	if (is_error)
		return tool_result_error(c, sc, c->content);
	r = json_object();
	if (c->content) {
		json_object_set(r, "content", c->content);
	} else {
		text = result_text(c, sc, why, sizeof(why));
		if (!text) {
			json_decref(r);
			json_decref(sc);
			return tool_result_error(c, error_object(KF_ETOOBIG, why), NULL);
		}
		json_object_set_new(r, "content",
				    json_pack("[{s:s,s:s}]", "type", "text", "text", text));
		free(text);
	}
	if (sc)
		json_object_set_new(r, "structuredContent", sc);
	return r;
}

/* --- calls -------------------------------------------------------------------- */

static void call_free(struct tool_ctx *c)
{
	if (!c)
		return;
	json_decref(c->id);
	json_decref(c->progress_token);
	json_decref(c->args);
	json_decref(c->content);
	json_decref(c->caps);
	free(c);
}

/* Removes c from its session and wakes mcp_call_drain. */
static void call_done(struct tool_ctx *c)
{
	struct mcp_session *s = c->s;
	struct tool_ctx **pp;

	pthread_mutex_lock(&s->lock);
	for (pp = &s->calls; *pp; pp = &(*pp)->snext)
		if (*pp == c) {
			*pp = c->snext;
			break;
		}
	if (c->slot)
		s->calls_len--;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	call_free(c);
}

/* Returns r (taken) with what a stateless revision adds to results. */
static json_t *finished(struct tool_ctx *c, json_t *r)
{
	mcp_result_finish(c->s, r);
	return r;
}

static void call_run(struct tool_ctx *c)
{
	json_t *sc;
	int is_error;
	size_t len;
	char *text;

	execute(c, &sc, &is_error);
	if (c->task) {
		/* No session to answer: the result waits in the task. */
		mcp_task_finish(c, mcp_result(c, sc, is_error));
		call_free(c);
		return;
	}
	text = jsonrpc_result(c->id, finished(c, mcp_result(c, sc, is_error)), &len);
	/* The slot is free before the client can see the answer: its next
	 * call must not find the session still full. */
	pthread_mutex_lock(&c->s->lock);
	if (c->slot)
		c->s->calls_len--;
	c->slot = 0;
	pthread_mutex_unlock(&c->s->lock);
	mcp_send_text(c->s, c->tcall, 1, c->id, text, len);
	call_done(c);
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		struct tool_ctx *c;

		pthread_mutex_lock(&pool.lock);
		while (!pool.head)
			pthread_cond_wait(&pool.cond, &pool.lock);
		c = pool.head;
		pool.head = c->qnext;
		if (!pool.head)
			pool.tail = NULL;
		pool.len--;
		pthread_mutex_unlock(&pool.lock);
		call_run(c);
	}
	return NULL;
}

/* Tool handlers block on nvcc and the GPU queue, so the pool is larger
 * than the CPU count; KFORGE_WORKERS overrides it. */
static void pool_start(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	const char *env = getenv("KFORGE_WORKERS");
	int n = ncpu > 0 ? (int)ncpu * 2 : 4;

	if (n < 4)
		n = 4;
	if (env && *env) {
		char *end;
		long v = strtol(env, &end, 10);
		if (!*end && v > 0 && v <= POOL_THREADS_MAX)
			n = (int)v;
	}
	if (n > POOL_THREADS_MAX)
		n = POOL_THREADS_MAX;
	for (int i = 0; i < n; i++) {
		pthread_t t;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &a, worker, NULL) == 0)
			pool.threads++;
		pthread_attr_destroy(&a);
	}
	if (pool.threads == 0)
		log_error("mcp", "could not start any worker thread: %s", strerror(errno));
}

/* Queues c; returns 0, or -1 when the queue is full or there are no workers. */
static int pool_push(struct tool_ctx *c)
{
	pthread_once(&pool.once, pool_start);
	pthread_mutex_lock(&pool.lock);
	if (pool.len >= POOL_QUEUE_MAX || pool.threads == 0) {
		pthread_mutex_unlock(&pool.lock);
		return -1;
	}
	c->qnext = NULL;
	if (pool.tail)
		pool.tail->qnext = c;
	else
		pool.head = c;
	pool.tail = c;
	pool.len++;
	pthread_cond_signal(&pool.cond);
	pthread_mutex_unlock(&pool.lock);
	return 0;
}

static void reply_busy(struct mcp_session *s, struct tool_ctx *c, const char *why)
{
	size_t len;
	char *text = jsonrpc_result(
		c->id, finished(c, tool_result_error(c, error_object(KF_EBUSY, why), NULL)), &len);

	mcp_send_text(s, c->tcall, 1, c->id, text, len);
}

/* A stateless request declares its client capabilities each time: one
 * that lacks what tool t needs is refused before it runs. Returns 1 after
 * replying the error. Handshake sessions keep their tool-level error. */
static int missing_cap(struct mcp_session *s, const struct tool_def *t, void *call,
		       const json_t *id)
{
	static const struct {
		unsigned bit;
		const char *cap;
	} need[] = {{TOOL_NEEDS_SAMPLING, "sampling"}, {TOOL_NEEDS_ELICITATION, "elicitation"}};
	int has;

	if (!mcp_session_is_modern(s))
		return 0;
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if (!(t->annotations & need[i].bit))
			continue;
		pthread_mutex_lock(&s->lock);
		has = json_object_get(s->client_caps, need[i].cap) != NULL;
		pthread_mutex_unlock(&s->lock);
		if (!has) {
			mcp_reply_missing_cap(s, call, id, json_pack("{s:{}}", need[i].cap),
					      t->name);
			return 1;
		}
	}
	return 0;
}

/* Runs c as a task of the tasks extension: no session slot (it outlives
 * the request), answered with the task handle now. Returns 1 when done
 * so, 0 when the call should run as usual. */
static int start_task(struct mcp_session *s, const json_t *id, struct tool_ctx *c, void *call)
{
	snprintf(c->task_client, sizeof(c->task_client), "%s", s->client);
	c->client = c->task_client;
	c->s = NULL;
	if (mcp_task_start(s, id, c, call)) {
		c->s = s;
		return 0;
	}
	if (pool_push(c)) {
		mcp_task_finish(c,
				mcp_result(c,
					   error_object(KF_EBUSY, "busy: the server's call queue "
								  "is full; call again in a "
								  "moment"),
					   1));
		call_free(c);
	}
	return 1;
}

void mcp_call_start(struct mcp_session *s, const json_t *id, const json_t *params, void *call)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments");
	json_t *meta = json_object_get(params, "_meta");
	json_t *token = json_object_get(meta, "progressToken");
	const struct tool_def *t;
	struct tool_ctx *c;
	int full;

	if (!name) {
		mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
				"Invalid params: params.name must be a tool name (see tools/list)");
		return;
	}
	t = tools_find(name);
	if (!t) {
		mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
				"Invalid params: unknown tool '%.128s' (see tools/list)", name);
		return;
	}
	if (args && !json_is_object(args)) {
		mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
				"Invalid params: params.arguments must be an object");
		return;
	}
	if (token && !json_is_string(token) && !json_is_integer(token)) {
		mcp_reply_error(
			s, call, id, JSONRPC_INVALID_PARAMS,
			"Invalid params: _meta.progressToken must be a string or an integer");
		return;
	}
	if (missing_cap(s, t, call, id))
		return;
	c = calloc(1, sizeof(*c));
	if (!c) {
		mcp_reply_error(s, call, id, JSONRPC_INTERNAL_ERROR,
				"Internal error: out of memory");
		return;
	}
	c->s = s;
	c->app = s->app;
	c->id = json_deep_copy(id);
	c->tcall = call;
	c->tool = t;
	c->args = args ? json_deep_copy(args) : json_object();
	c->progress_token = token ? json_deep_copy(token) : NULL;
	if (mcp_session_is_modern(s)) {
		/* A stateless request's capabilities and log level are its own:
		 * the next request on this connection must not change them. */
		pthread_mutex_lock(&s->lock);
		c->caps = json_deep_copy(s->client_caps);
		c->log_level = s->log_level;
		pthread_mutex_unlock(&s->lock);
	}
	if (mcp_task_wanted(s, t) && start_task(s, id, c, call))
		return;

	pthread_mutex_lock(&s->lock);
	full = s->calls_len >= MCP_SESSION_MAX_CALLS || s->closing;
	if (!full) {
		c->snext = s->calls;
		s->calls = c;
		s->calls_len++;
		c->slot = 1;
	}
	pthread_mutex_unlock(&s->lock);
	if (full) {
		reply_busy(
			s, c,
			"busy: this session has too many calls in flight; retry when some finish");
		call_free(c);
		return;
	}
	if (t->annotations & TOOL_FAST) {
		/* Cheaper than two thread handoffs, and it cannot block pings. */
		call_run(c);
		return;
	}
	if (pool_push(c)) {
		reply_busy(s, c, "busy: the server's call queue is full; retry in a moment");
		call_done(c);
	}
}

void mcp_call_cancel(struct mcp_session *s, const json_t *id)
{
	pthread_mutex_lock(&s->lock);
	for (struct tool_ctx *c = s->calls; c; c = c->snext)
		if (json_equal(c->id, (json_t *)id)) {
			c->cancelled = 1;
			log_debug("mcp", "call to %s cancelled", c->tool->name);
		}
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

void mcp_call_drain(struct mcp_session *s)
{
	pthread_mutex_lock(&s->lock);
	s->closing = 1;
	for (struct tool_ctx *c = s->calls; c; c = c->snext)
		c->cancelled = 1;
	pthread_cond_broadcast(&s->cond);
	while (s->calls)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

/* --- tool_ctx ------------------------------------------------------------------- */

struct app *mcp_call_app(struct tool_ctx *ctx)
{
	return ctx->app;
}

const volatile int *mcp_call_cancel_flag(struct tool_ctx *ctx)
{
	return &ctx->cancelled;
}

void mcp_call_progress(struct tool_ctx *ctx, double progress, double total, const char *message)
{
	json_t *p;
	size_t len;
	char *text;

	if (ctx->task) {
		mcp_task_progress(ctx, progress, total, message);
		return;
	}
	if (!ctx->s || !ctx->progress_token)
		return;
	p = json_pack("{s:O,s:f}", "progressToken", ctx->progress_token, "progress", progress);
	if (!p)
		return;
	if (total > 0)
		json_object_set_new(p, "total", json_real(total));
	if (message)
		json_object_set_new(p, "message", json_string(message));
	text = jsonrpc_notification("notifications/progress", p, &len);
	mcp_send_text(ctx->s, ctx->tcall, 0, NULL, text, len);
}

void mcp_call_log(struct tool_ctx *ctx, const char *level, const char *fmt, ...)
{
	char msg[1024];
	int li = mcp_log_level_index(level), want;
	va_list ap;
	size_t len;
	char *text;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!ctx->s) {
		log_write(li <= 0   ? LOG_DEBUG
			  : li <= 2 ? LOG_INFO
			  : li == 3 ? LOG_WARN
				    : LOG_ERROR,
			  ctx->tool ? ctx->tool->name : "tool", "%s", msg);
		return;
	}
	pthread_mutex_lock(&ctx->s->lock);
	want = ctx->caps ? ctx->log_level : ctx->s->log_level;
	pthread_mutex_unlock(&ctx->s->lock);
	if (li < 0 || li < want)
		return;
	text = jsonrpc_notification("notifications/message",
				    json_pack("{s:s,s:s,s:s}", "level", level, "logger",
					      ctx->tool ? ctx->tool->name : "kforge", "data", msg),
				    &len);
	mcp_send_text(ctx->s, ctx->tcall, 0, NULL, text, len);
}

void mcp_call_set_content(struct tool_ctx *ctx, json_t *content)
{
	json_decref(ctx->content);
	ctx->content = json_is_array(content) ? content : NULL;
	if (!ctx->content)
		json_decref(content);
}

int mcp_call_client_supports(struct tool_ctx *ctx, const char *name)
{
	int yes;

	if (!ctx->s)
		return 0;
	pthread_mutex_lock(&ctx->s->lock);
	yes = json_object_get(ctx->caps ? ctx->caps : ctx->s->client_caps, name) != NULL;
	pthread_mutex_unlock(&ctx->s->lock);
	return yes;
}

int mcp_call_request(struct tool_ctx *ctx, const char *method, json_t *params, int timeout_ms,
		     json_t **result, struct kf_err *err)
{
	struct mcp_session *s = ctx->s;
	struct mcp_pending p = {0}, **pp;
	struct timespec dl;
	json_t *jid;
	size_t len;
	char *text;
	int rc = 0;

	*result = NULL;
	if (!s) {
		json_decref(params);
		return kf_err_set(err, KF_ENOTFOUND, "%s needs an MCP client session", method);
	}
	if (mcp_session_is_modern(s)) {
		/* 2026-07-28 forbids requests from the server on a response
		 * stream (input-required results replace them). */
		json_decref(params);
		return kf_err_set(err, KF_EPERM,
				  "%s: the client speaks protocol %s, in which a server sends no "
				  "requests of its own",
				  method, MCP_MODERN_VERSIONS[0]);
	}
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->lock);
	p.id = ++s->next_id;
	p.next = s->pending;
	s->pending = &p;
	pthread_mutex_unlock(&s->lock);

	jid = json_integer(p.id);
	text = jsonrpc_request(jid, method, params, &len);
	json_decref(jid);
	mcp_send_text(s, ctx->tcall, 0, NULL, text, len);

	pthread_mutex_lock(&s->lock);
	while (!p.done && !ctx->cancelled && !s->closing && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&s->cond, &s->lock, &dl);
	for (pp = &s->pending; *pp; pp = &(*pp)->next)
		if (*pp == &p) {
			*pp = p.next;
			break;
		}
	pthread_mutex_unlock(&s->lock);

	if (!p.done) {
		if (ctx->cancelled || s->closing)
			return kf_err_set(err, KF_ECANCELED, "%s: cancelled", method);
		return kf_err_set(err, KF_ETIMEOUT, "%s: the client did not answer within %d ms",
				  method, timeout_ms);
	}
	if (p.error) {
		const char *m = json_string_value(json_object_get(p.error, "message"));
		rc = kf_err_set(err, KF_EINVAL, "%s: the client answered error %lld: %s", method,
				(long long)json_integer_value(json_object_get(p.error, "code")),
				m ? m : "(no message)");
		json_decref(p.error);
		json_decref(p.result);
		return rc;
	}
	*result = p.result;
	return 0;
}

/* The client a call comes from, for fairness between clients. */
const char *mcp_call_client(struct tool_ctx *ctx)
{
	return ctx->s ? ctx->s->client : ctx->client;
}

/* --- outside a session ------------------------------------------------------------ */

int mcp_tool_call(struct app *app, const char *name, const json_t *args, json_t **result,
		  int *is_error, struct kf_err *err)
{
	return mcp_tool_call_as(app, NULL, name, args, result, is_error, err);
}

int mcp_tool_call_as(struct app *app, const char *client, const char *name, const json_t *args,
		     json_t **result, int *is_error, struct kf_err *err)
{
	struct tool_ctx c = {.client = client};
	const struct schema *in;
	json_t *sc;

	*result = NULL;
	*is_error = 0;
	c.tool = name ? tools_find(name) : NULL;
	if (!c.tool)
		return kf_err_set(err, KF_ENOTFOUND, "unknown tool '%s'", name ? name : "(null)");
	if (args && !json_is_object(args))
		return kf_err_set(err, KF_EINVAL, "arguments: expected object");
	c.args = args ? json_incref((json_t *)args) : json_object();
	in = tools_input_schema(c.tool);
	if (in && schema_validate(in, c.args, "arguments", err)) {
		json_decref(c.args);
		return KF_EINVAL;
	}
	c.app = app;
	execute(&c, &sc, is_error);
	if (!sc) {
		/* Content blocks only: summarize them for REST and the CLI. */
		json_t *first = json_array_get(c.content, 0);
		const char *t = json_string_value(json_object_get(first, "text"));
		sc = json_pack("{s:s,s:o}", "summary", t ? t : "done", "content",
			       c.content ? json_incref(c.content) : json_array());
	}
	json_decref(c.args);
	json_decref(c.content);
	*result = sc;
	return sc ? 0 : kf_err_set(err, KF_ENOMEM, "out of memory");
}
