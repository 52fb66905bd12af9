/* mcp: one MCP session: lifecycle (initialize, version negotiation, ping),
 * the list/read/get methods, logging level, completion, subscriptions and
 * the dispatch of everything else; tool calls go to mcp_call.c. Every
 * request leads to exactly one final send; notifications to none. State is
 * under the session lock, sends under the send lock, so transports may call
 * mcp_session_handle from several threads. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/app.h"
#include "server/mcp/jsonrpc.h"
#include "base/log.h"
#include "server/mcp/mcp_int.h"
#include "server/mcp/schema.h"
#include "base/version.h"

const char *const MCP_VERSIONS[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};

const char *const MCP_LOG_LEVELS[] = {"debug",	  "info",  "notice",	"warning", "error",
				      "critical", "alert", "emergency", NULL};

static const char INSTRUCTIONS[] =
	"kforge is a CUDA kernel workbench: GPU facts, optimization guides, a "
	"sandboxed nvcc compile, an anti-cheat correctness check against a "
	"trusted reference, and an honest benchmark. You write device code "
	"only; kforge's harness owns allocation, launches, timing and "
	"comparison.\n"
	"Workflow: (1) get_gpu_specs for the target GPU (gpu: \"local\" for "
	"this host's): bandwidth, peak FLOP/s, ridge point, shared memory and "
	"registers per SM. (2) search_guides / read_guide for the technique "
	"(coalescing, tiling, occupancy, tensor cores, reductions). (3) Write "
	"the plain, obviously correct version first and compile_kernel it. "
	"(4) check_kernel it against a built-in op or your plain version as the "
	"reference; a failed check says which element and by how much. "
	"(5) Optimize one change at a time, check_kernel after each change. "
	"(6) benchmark_kernel against the baseline: speedups come with their "
	"uncertainty, and 'no difference' when the intervals overlap. "
	"(7) list_runs / compare_runs to see what each change bought.\n"
	"Every result has a one-line 'summary' first; isError results say what "
	"to fix. Without a GPU, compile works and GPU tools answer no_gpu. "
	"Large artifacts (PTX, SASS, logs) are resources: read them by URI.";

static pthread_mutex_t g_sessions_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mcp_session *g_sessions;

int mcp_log_level_index(const char *name)
{
	for (int i = 0; MCP_LOG_LEVELS[i]; i++)
		if (strcmp(name, MCP_LOG_LEVELS[i]) == 0)
			return i;
	return -1;
}

/* --- sending -------------------------------------------------------------- */

void mcp_send_text(struct mcp_session *s, void *call, int final, const json_t *id, char *text,
		   size_t len)
{
	if (!text) {
		if (!final)
			return;
		text = jsonrpc_error(id, JSONRPC_INTERNAL_ERROR, "Internal error: out of memory",
				     NULL, &len);
		if (!text) {
			/* Still owe the transport its final send. */
			static const char oom[] =
				"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,\"message\":\"Internal error: out of memory\"}}";
			pthread_mutex_lock(&s->send_lock);
			s->send(s->arg, call, final, oom, sizeof(oom) - 1);
			pthread_mutex_unlock(&s->send_lock);
			return;
		}
	}
	pthread_mutex_lock(&s->send_lock);
	s->send(s->arg, call, final, text, len);
	pthread_mutex_unlock(&s->send_lock);
	free(text);
}

void mcp_reply_error(struct mcp_session *s, void *call, const json_t *id, int code, const char *fmt,
		     ...)
{
	char msg[512];
	va_list ap;
	size_t len;
	char *text;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	text = jsonrpc_error(id, code, msg, NULL, &len);
	mcp_send_text(s, call, 1, id, text, len);
}

void mcp_reply(struct mcp_session *s, void *call, const json_t *id, json_t *result)
{
	size_t len;
	char *text = jsonrpc_result(id, result, &len);

	mcp_send_text(s, call, 1, id, text, len);
}

static void notify(struct mcp_session *s, const char *method, json_t *params)
{
	size_t len;
	char *text = jsonrpc_notification(method, params, &len);

	mcp_send_text(s, NULL, 0, NULL, text, len);
}

/* --- session -------------------------------------------------------------- */

struct mcp_session *mcp_session_new(struct app *app, mcp_send_fn send, void *arg)
{
	struct mcp_session *s = calloc(1, sizeof(*s));
	pthread_condattr_t ca;

	if (!s)
		return NULL;
	s->subs = json_object();
	if (!s->subs) {
		free(s);
		return NULL;
	}
	s->app = app;
	s->send = send;
	s->arg = arg;
	s->log_level = 1; /* info until the client sets it */
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->send_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_lock(&g_sessions_lock);
	/* Numbered for the process's life, never reused: the key compiles
	 * queue under (sandbox/compile/compile_queue.h). */
	static unsigned long serial;
	snprintf(s->client, sizeof(s->client), "session-%lu", ++serial);
	s->g_next = g_sessions;
	if (g_sessions)
		g_sessions->g_prev = s;
	g_sessions = s;
	pthread_mutex_unlock(&g_sessions_lock);
	return s;
}

void mcp_session_free(struct mcp_session *s)
{
	if (!s)
		return;
	mcp_call_drain(s);
	pthread_mutex_lock(&g_sessions_lock);
	if (s->g_prev)
		s->g_prev->g_next = s->g_next;
	else
		g_sessions = s->g_next;
	if (s->g_next)
		s->g_next->g_prev = s->g_prev;
	pthread_mutex_unlock(&g_sessions_lock);
	json_decref(s->client_caps);
	json_decref(s->subs);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->send_lock);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

const char *mcp_session_version(const struct mcp_session *s)
{
	const char *v;

	pthread_mutex_lock((pthread_mutex_t *)&s->lock);
	v = s->version;
	pthread_mutex_unlock((pthread_mutex_t *)&s->lock);
	return v;
}

int mcp_session_initialized(const struct mcp_session *s)
{
	int v;

	pthread_mutex_lock((pthread_mutex_t *)&s->lock);
	v = s->initialized;
	pthread_mutex_unlock((pthread_mutex_t *)&s->lock);
	return v;
}

void mcp_resource_updated(const char *uri)
{
	pthread_mutex_lock(&g_sessions_lock);
	for (struct mcp_session *s = g_sessions; s; s = s->g_next) {
		int sub;
		pthread_mutex_lock(&s->lock);
		sub = json_object_get(s->subs, uri) != NULL && !s->closing;
		pthread_mutex_unlock(&s->lock);
		if (sub)
			notify(s, "notifications/resources/updated",
			       json_pack("{s:s}", "uri", uri));
	}
	pthread_mutex_unlock(&g_sessions_lock);
}

/* --- initialize ------------------------------------------------------------ */

static json_t *capabilities(void)
{
	json_t *caps = json_object();

	json_object_set_new(caps, "tools", json_pack("{s:b}", "listChanged", 0));
	if (tools_resource_count() > 0)
		json_object_set_new(caps, "resources",
				    json_pack("{s:b,s:b}", "subscribe", 1, "listChanged", 0));
	if (tools_prompt_count() > 0)
		json_object_set_new(caps, "prompts", json_pack("{s:b}", "listChanged", 0));
	json_object_set_new(caps, "logging", json_object());
	if (tools_resource_count() > 0 || tools_prompt_count() > 0)
		json_object_set_new(caps, "completions", json_object());
	return caps;
}

static void do_initialize(struct mcp_session *s, const json_t *id, const json_t *params, void *call)
{
	json_t *pv = json_object_get(params, "protocolVersion");
	json_t *caps = json_object_get(params, "capabilities");
	const char *want, *version = MCP_VERSIONS[0];
	json_t *result;

	if (!json_is_string(pv)) {
		mcp_reply_error(
			s, call, id, JSONRPC_INVALID_PARAMS,
			"Invalid params: initialize needs params.protocolVersion (a string such as \"%s\")",
			MCP_VERSIONS[0]);
		return;
	}
	if (caps && !json_is_object(caps)) {
		mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
				"Invalid params: params.capabilities must be an object");
		return;
	}
	want = json_string_value(pv);
	for (int i = 0; MCP_VERSIONS[i]; i++)
		if (strcmp(want, MCP_VERSIONS[i]) == 0)
			version = MCP_VERSIONS[i];
	pthread_mutex_lock(&s->lock);
	if (s->initialized) {
		pthread_mutex_unlock(&s->lock);
		mcp_reply_error(s, call, id, JSONRPC_INVALID_REQUEST,
				"Invalid Request: the session is already initialized");
		return;
	}
	s->initialized = 1;
	s->version = version;
	s->client_caps = caps ? json_deep_copy(caps) : json_object();
	pthread_mutex_unlock(&s->lock);
	if (strcmp(want, version) != 0)
		log_info("mcp", "client asked for protocol %s; offering %s", want, version);
	result = json_pack("{s:s,s:o,s:{s:s,s:s,s:s},s:s}", "protocolVersion", version,
			   "capabilities", capabilities(), "serverInfo", "name", "kforge", "title",
			   "kforge CUDA kernel workbench", "version", KFORGE_VERSION,
			   "instructions", INSTRUCTIONS);
	mcp_reply(s, call, id, result);
}

/* --- pagination ------------------------------------------------------------ */

/* Reads params.cursor into *start. Returns 0, or -1 after replying
 * Invalid params. Cursors are "c<offset>"; clients treat them as opaque. */
int mcp_page_start(struct mcp_session *s, const json_t *id, const json_t *params, void *call,
		   size_t total, size_t *start)
{
	json_t *c = json_object_get(params, "cursor");
	const char *t;
	char *end;
	unsigned long v;

	*start = 0;
	if (!c || json_is_null(c))
		return 0;
	t = json_string_value(c);
	if (!t || t[0] != 'c' || t[1] < '0' || t[1] > '9')
		goto bad;
	v = strtoul(t + 1, &end, 10);
	if (*end || v > total)
		goto bad;
	*start = v;
	return 0;
bad:
	mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
			"Invalid params: unknown cursor; pass back nextCursor exactly as received");
	return -1;
}

void mcp_page_finish(json_t *result, size_t next, size_t total)
{
	char buf[32];

	if (next < total) {
		snprintf(buf, sizeof(buf), "c%zu", next);
		json_object_set_new(result, "nextCursor", json_string(buf));
	}
}

void mcp_set_str(json_t *o, const char *key, const char *v)
{
	if (v)
		json_object_set_new(o, key, json_string(v));
}

/* --- tools/list -------------------------------------------------------------- */

static json_t *tool_json(const struct tool_def *t)
{
	json_t *o = json_object(), *ann = json_object();
	const struct schema *out = tools_output_schema(t);

	json_object_set_new(o, "name", json_string(t->name));
	mcp_set_str(o, "title", t->title);
	mcp_set_str(o, "description", t->description);
	json_object_set(o, "inputSchema", schema_json(tools_input_schema(t)));
	if (out)
		json_object_set(o, "outputSchema", schema_json(out));
	/* Only the hints that differ from the spec's defaults (not read-only,
	 * destructive, not idempotent, open world), destructive and idempotent
	 * only where they mean something (a tool that writes), and no second
	 * title: tools/list stays small. */
	if (t->annotations & TOOL_READ_ONLY) {
		json_object_set_new(ann, "readOnlyHint", json_true());
	} else {
		if (!(t->annotations & TOOL_DESTRUCTIVE))
			json_object_set_new(ann, "destructiveHint", json_false());
		if (t->annotations & TOOL_IDEMPOTENT)
			json_object_set_new(ann, "idempotentHint", json_true());
	}
	if (!(t->annotations & TOOL_OPEN_WORLD))
		json_object_set_new(ann, "openWorldHint", json_false());
	json_object_set_new(o, "annotations", ann);
	return o;
}

/* The first tools/list page, serialized once: the tables are fixed after
 * startup, and serializing every schema per request dominated its cost.
 * Keyed by the registry's first and last entries and size, so a reloaded
 * registry (tests) rebuilds it. */
static struct {
	pthread_mutex_t lock;
	const void *first, *last;
	size_t count;
	char *text; /* the result object */
} list_cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Sends {"jsonrpc":"2.0","id":ID,"result":RESULT} with RESULT as text. */
static void reply_raw(struct mcp_session *s, void *call, const json_t *id, const char *result,
		      size_t result_len)
{
	char *ids = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
	size_t len = 0;
	char *text = NULL;

	if (ids) {
		len = strlen(ids) + result_len + 40;
		text = malloc(len);
		if (text) {
			int n = snprintf(text, len,
					 "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":%.*s}", ids,
					 (int)result_len, result);
			len = n > 0 ? (size_t)n : 0;
		}
	}
	free(ids);
	mcp_send_text(s, call, 1, id, text, len);
}

static json_t *tools_page(size_t start, size_t total)
{
	json_t *arr = json_array(), *result;
	size_t i;

	for (i = start; i < total && i < start + MCP_PAGE_SIZE; i++)
		json_array_append_new(arr, tool_json(tools_at(i)));
	result = json_pack("{s:o}", "tools", arr);
	mcp_page_finish(result, i, total);
	return result;
}

static void do_tools_list(struct mcp_session *s, const json_t *id, const json_t *params, void *call)
{
	size_t total = tools_count(), start;
	const void *first = tools_at(0), *last = total ? tools_at(total - 1) : NULL;

	if (mcp_page_start(s, id, params, call, total, &start))
		return;
	if (start != 0) {
		mcp_reply(s, call, id, tools_page(start, total));
		return;
	}
	pthread_mutex_lock(&list_cache.lock);
	if (!list_cache.text || list_cache.first != first || list_cache.last != last ||
	    list_cache.count != total) {
		json_t *page = tools_page(0, total);
		free(list_cache.text);
		list_cache.text = json_dumps(page, JSON_COMPACT);
		json_decref(page);
		list_cache.first = first;
		list_cache.last = last;
		list_cache.count = total;
	}
	if (list_cache.text) {
		/* Copied under the lock: a reload may replace the cache. */
		size_t n = strlen(list_cache.text);
		char *copy = malloc(n + 1);
		if (copy)
			memcpy(copy, list_cache.text, n + 1);
		pthread_mutex_unlock(&list_cache.lock);
		if (copy) {
			reply_raw(s, call, id, copy, n);
			free(copy);
			return;
		}
	} else {
		pthread_mutex_unlock(&list_cache.lock);
	}
	mcp_reply(s, call, id, tools_page(0, total));
}

/* --- logging ------------------------------------------------------------------ */

static void do_set_level(struct mcp_session *s, const json_t *id, const json_t *params, void *call)
{
	const char *level = json_string_value(json_object_get(params, "level"));
	int i = level ? mcp_log_level_index(level) : -1;

	if (i < 0) {
		mcp_reply_error(
			s, call, id, JSONRPC_INVALID_PARAMS,
			"Invalid params: params.level must be one of debug, info, notice, warning, error, critical, alert, emergency");
		return;
	}
	pthread_mutex_lock(&s->lock);
	s->log_level = i;
	pthread_mutex_unlock(&s->lock);
	mcp_reply(s, call, id, json_object());
}

/* --- dispatch ------------------------------------------------------------------ */

static void handle_request(struct mcp_session *s, struct jsonrpc_msg *m, void *call)
{
	const char *method = m->method;
	const json_t *id = m->id, *params = m->params;
	int initialized;

	if (params && !json_is_object(params)) {
		mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
				"Invalid params: MCP params must be an object, not an array");
		return;
	}
	if (strcmp(method, "initialize") == 0) {
		do_initialize(s, id, params, call);
		return;
	}
	if (strcmp(method, "ping") == 0) {
		mcp_reply(s, call, id, json_object());
		return;
	}
	pthread_mutex_lock(&s->lock);
	initialized = s->initialized;
	pthread_mutex_unlock(&s->lock);
	if (!initialized) {
		mcp_reply_error(
			s, call, id, JSONRPC_INVALID_REQUEST,
			"Invalid Request: the session is not initialized; send initialize first (only ping is allowed before it)");
		return;
	}
	if (strcmp(method, "tools/call") == 0)
		mcp_call_start(s, id, params, call);
	else if (strcmp(method, "tools/list") == 0)
		do_tools_list(s, id, params, call);
	else if (strcmp(method, "logging/setLevel") == 0)
		do_set_level(s, id, params, call);
	else if (strcmp(method, "completion/complete") == 0 &&
		 (tools_resource_count() || tools_prompt_count()))
		mcp_complete(s, id, params, call);
	else if (strncmp(method, "resources/", 10) == 0 && tools_resource_count()) {
		if (strcmp(method + 10, "list") == 0)
			mcp_resources_list(s, id, params, call);
		else if (strcmp(method + 10, "read") == 0)
			mcp_resources_read(s, id, params, call);
		else if (strcmp(method + 10, "templates/list") == 0)
			mcp_templates_list(s, id, params, call);
		else if (strcmp(method + 10, "subscribe") == 0)
			mcp_subscribe(s, id, params, call, 1);
		else if (strcmp(method + 10, "unsubscribe") == 0)
			mcp_subscribe(s, id, params, call, 0);
		else
			goto unknown;
	} else if (strncmp(method, "prompts/", 8) == 0 && tools_prompt_count()) {
		if (strcmp(method + 8, "list") == 0)
			mcp_prompts_list(s, id, params, call);
		else if (strcmp(method + 8, "get") == 0)
			mcp_prompts_get(s, id, params, call);
		else
			goto unknown;
	} else {
		goto unknown;
	}
	return;
unknown:
	mcp_reply_error(s, call, id, JSONRPC_METHOD_NOT_FOUND, "Method not found: %.100s", method);
}

static void handle_notification(struct mcp_session *s, struct jsonrpc_msg *m)
{
	if (strcmp(m->method, "notifications/cancelled") == 0) {
		json_t *rid = json_object_get(m->params, "requestId");
		if (rid)
			mcp_call_cancel(s, rid);
		return;
	}
	/* notifications/initialized, roots/list_changed, progress from the
	 * client and unknown notifications need nothing from kforge. */
	log_debug("mcp", "notification %s", m->method);
}

static void handle_response(struct mcp_session *s, struct jsonrpc_msg *m)
{
	json_int_t id = json_is_integer(m->id) ? json_integer_value(m->id) : -1;
	struct mcp_pending *p;

	pthread_mutex_lock(&s->lock);
	for (p = s->pending; p; p = p->next)
		if (p->id == id && !p->done)
			break;
	if (p) {
		p->result = m->result ? json_incref(m->result) : NULL;
		p->error = m->error ? json_incref(m->error) : NULL;
		p->done = 1;
		pthread_cond_broadcast(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	if (!p)
		log_debug("mcp", "response to unknown request id ignored");
}

enum mcp_in mcp_session_handle(struct mcp_session *s, const char *msg, size_t len, void *call)
{
	struct jsonrpc_msg m;
	struct kf_err err = {0};
	enum mcp_in kind;

	if (jsonrpc_parse(msg, len, s->app ? s->app->cfg.max_message_bytes : 0, &m, &err)) {
		mcp_reply_error(s, call, m.bad_id, m.rpc_code, "%s", err.msg);
		jsonrpc_msg_fini(&m);
		return MCP_IN_ERROR;
	}
	switch (m.kind) {
	case JSONRPC_REQUEST:
		handle_request(s, &m, call);
		kind = MCP_IN_REQUEST;
		break;
	case JSONRPC_NOTIFICATION:
		handle_notification(s, &m);
		kind = MCP_IN_NOTIFICATION;
		break;
	default:
		handle_response(s, &m);
		kind = MCP_IN_RESPONSE;
		break;
	}
	jsonrpc_msg_fini(&m);
	return kind;
}
