/* check_mcp: MCP sessions driven in-process through mcp_session_handle with
 * a capturing send — lifecycle and version negotiation, every JSON-RPC
 * error code, pagination, tool results, cancellation, progress, logging
 * levels, completion, resources, prompts, server-to-client requests, the
 * busy limit, and mcp_tool_call. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/app.h"
#include "server/mcp/mcp.h"
#include "server/mcp/tools.h"

/* --- capture ---------------------------------------------------------------- */

struct cap {
	pthread_mutex_t m;
	pthread_cond_t c;
	json_t *msgs; /* every message sent, parsed */
	int finals;   /* sends with final = 1 */
	int nonjson;  /* sends that were not one JSON object */
};

static struct cap cap;
static struct app app;
static struct mcp_session *S;
static json_t *parsed; /* error objects error_of parsed, freed at teardown */

static void cap_send(void *arg, void *call, int final, const char *json, size_t len)
{
	struct cap *c = arg;
	json_t *v = json_loadb(json, len, 0, NULL);

	(void)call;
	pthread_mutex_lock(&c->m);
	if (!json_is_object(v) || memchr(json, '\n', len))
		c->nonjson++;
	json_array_append_new(c->msgs, v ? v : json_null());
	c->finals += final;
	pthread_cond_broadcast(&c->c);
	pthread_mutex_unlock(&c->m);
}

static json_t *find_reply(json_int_t id)
{
	size_t i;
	json_t *v;

	json_array_foreach(cap.msgs, i, v) {
		json_t *vid = json_object_get(v, "id");
		if (json_is_integer(vid) && json_integer_value(vid) == id &&
		    !json_object_get(v, "method"))
			return v;
	}
	return NULL;
}

/* Waits up to 5 s for the response to id; returns it (borrowed). */
static json_t *wait_reply(json_int_t id)
{
	struct timespec dl;
	json_t *r;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	pthread_mutex_lock(&cap.m);
	while (!(r = find_reply(id)))
		if (pthread_cond_timedwait(&cap.c, &cap.m, &dl))
			break;
	pthread_mutex_unlock(&cap.m);
	ck_assert_msg(r != NULL, "no reply to request %lld", (long long)id);
	return r;
}

/* Waits for the n-th (0-based) message whose method is method. */
static json_t *wait_method(const char *method, size_t nth)
{
	struct timespec dl;
	json_t *found = NULL;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	pthread_mutex_lock(&cap.m);
	for (;;) {
		size_t i, k = 0;
		json_t *v;
		json_array_foreach(cap.msgs, i, v) {
			const char *m = json_string_value(json_object_get(v, "method"));
			if (m && strcmp(m, method) == 0 && k++ == nth) {
				found = v;
				break;
			}
		}
		if (found || pthread_cond_timedwait(&cap.c, &cap.m, &dl))
			break;
	}
	pthread_mutex_unlock(&cap.m);
	return found;
}

static size_t count_method(const char *method)
{
	size_t i, n = 0;
	json_t *v;

	pthread_mutex_lock(&cap.m);
	json_array_foreach(cap.msgs, i, v) {
		const char *m = json_string_value(json_object_get(v, "method"));
		if (m && strcmp(m, method) == 0)
			n++;
	}
	pthread_mutex_unlock(&cap.m);
	return n;
}

static enum mcp_in in(const char *text)
{
	return mcp_session_handle(S, text, strlen(text), NULL);
}

/* Sends a request {id, method, params(JSON text or NULL)} and waits. */
static json_t *req(json_int_t id, const char *method, const char *params)
{
	char buf[4096];

	snprintf(buf, sizeof(buf), "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"%s\"%s%s}",
		 (long long)id, method, params ? ",\"params\":" : "", params ? params : "");
	ck_assert_int_eq(in(buf), MCP_IN_REQUEST);
	return wait_reply(id);
}

static int err_code(const json_t *reply)
{
	json_t *e = json_object_get(reply, "error");
	ck_assert_msg(e != NULL, "expected an error reply");
	return (int)json_integer_value(json_object_get(e, "code"));
}

static const char *err_msg(const json_t *reply)
{
	return json_string_value(json_object_get(json_object_get(reply, "error"), "message"));
}

static json_t *result(const json_t *reply)
{
	json_t *r = json_object_get(reply, "result");
	ck_assert_msg(r != NULL, "expected a result, got %s",
		      err_msg(reply) ? err_msg(reply) : "?");
	return r;
}

/* The error object of a failed call's result r: asserts isError, no
 * structuredContent (a tool's outputSchema describes its answers only) and
 * one text block, and returns that block parsed (borrowed until teardown). */
static json_t *error_of(const json_t *r)
{
	json_t *content = json_object_get(r, "content"), *obj;

	ck_assert(json_is_true(json_object_get(r, "isError")));
	ck_assert_ptr_null(json_object_get(r, "structuredContent"));
	ck_assert_uint_eq(json_array_size(content), 1);
	obj = json_loads(json_string_value(json_object_get(json_array_get(content, 0), "text")), 0,
			 NULL);
	ck_assert_msg(json_is_object(obj), "the error's text block is not a JSON object");
	ck_assert_str_eq(json_object_iter_key(json_object_iter(obj)), "summary");
	json_array_append_new(parsed, obj);
	return obj;
}

static const char *error_code(const json_t *r)
{
	return json_string_value(json_object_get(json_object_get(error_of(r), "error"), "code"));
}

#define INIT_PARAMS(v)              \
	"{\"protocolVersion\":\"" v \
	"\",\"capabilities\":{\"sampling\":{}},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}"

static void initialize(void)
{
	result(req(1000, "initialize", INIT_PARAMS("2025-11-25")));
	ck_assert_int_eq(in("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"),
			 MCP_IN_NOTIFICATION);
}

/* --- test tools --------------------------------------------------------------- */

static volatile int slow_saw_cancel;

static int t_echo(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)ctx;
	(void)err;
	/* Deliberately without summary first: the server must reorder. */
	*out = json_pack("{s:O,s:s}", "echo", json_object_get(args, "text"), "summary", "echoed");
	return 0;
}

static int t_fail(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)ctx;
	(void)args;
	(void)out;
	return kf_err_set(err, KF_ENOGPU, "no GPU on this host: run where one is");
}

static int t_fail_detail(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)ctx;
	(void)args;
	*out = json_pack("{s:[i,i]}", "mismatches", 3, 4);
	return kf_err_set(err, KF_EFAULT, "2 elements wrong");
}

static int t_slow(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	const volatile int *cancel = mcp_call_cancel_flag(ctx);

	(void)args;
	for (int i = 0; i < 500; i++) {
		if (*cancel) {
			slow_saw_cancel = 1;
			return kf_err_set(err, KF_ECANCELED, "stopped after %d steps", i);
		}
		mcp_call_progress(ctx, i, 500, "working");
		usleep(10000);
	}
	*out = json_pack("{s:s}", "summary", "finished");
	return 0;
}

static int t_log(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)args;
	(void)err;
	mcp_call_log(ctx, "debug", "d");
	mcp_call_log(ctx, "info", "i");
	mcp_call_log(ctx, "warning", "w");
	mcp_call_log(ctx, "error", "e");
	*out = json_pack("{s:s}", "summary", "logged");
	return 0;
}

static int t_ask(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	json_t *res = NULL;
	int rc;

	rc = mcp_call_request(ctx, "sampling/createMessage", json_pack("{s:i}", "maxTokens", 5),
			      (int)json_integer_value(json_object_get(args, "timeout_ms")), &res,
			      err);
	if (rc)
		return rc;
	*out = json_pack("{s:s,s:o,s:b}", "summary", "asked", "answer", res, "sampling",
			 mcp_call_client_supports(ctx, "sampling"));
	return 0;
}

static int t_badout(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)ctx;
	(void)args;
	(void)err;
	*out = json_pack("{s:s,s:s}", "summary", "x", "n", "not a number");
	return 0;
}

static int t_huge(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	size_t n = 3u << 20;
	char *big = malloc(n + 1);

	(void)ctx;
	(void)args;
	(void)err;
	memset(big, 'x', n);
	big[n] = '\0';
	*out = json_pack("{s:s,s:s}", "summary", "huge", "blob", big);
	free(big);
	return 0;
}

static int t_whoami(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	const char *who = mcp_call_client(ctx);

	(void)args;
	(void)err;
	*out = json_pack("{s:s,s:s?}", "summary", "who", "client", who);
	return 0;
}

/* The admission hooks' record (gpu_job_tools_pass_the_admission_hook). */
static int admitted, released;

static int admit_unless_full(struct tool_ctx *ctx, struct kf_err *err)
{
	const char *who = mcp_call_client(ctx);

	if (who && !strcmp(who, "token:full"))
		return kf_err_set(err, KF_EBUSY, "busy, retry: %s has its jobs waiting", who);
	admitted++;
	return 0;
}

static void count_release(struct tool_ctx *ctx)
{
	(void)ctx;
	released++;
}

static const struct tool_def TEST_TOOLS[] = {
	{"huge", "Huge", "returns 3 MiB", NULL, NULL, 0, t_huge},
	{"echo", "Echo", "echoes text",
	 "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"],\"additionalProperties\":false}",
	 NULL, TOOL_READ_ONLY, t_echo},
	{"fail", "Fail", "always fails", NULL, NULL, 0, t_fail},
	{"fail_detail", "Fail detail", "fails with detail", NULL,
	 "{\"type\":\"object\",\"required\":[\"summary\",\"ok\"],\"properties\":{\"ok\":{\"type\":\"boolean\"}}}",
	 0, t_fail_detail},
	{"slow", "Slow", "runs 5 s unless cancelled", NULL, NULL, 0, t_slow},
	{"log", "Log", "logs at four levels", NULL, NULL, 0, t_log},
	{"ask", "Ask", "asks the client",
	 "{\"type\":\"object\",\"properties\":{\"timeout_ms\":{\"type\":\"integer\"}}}", NULL, 0,
	 t_ask},
	{"badout", "Bad output", "breaks its output schema", NULL,
	 "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}}}", 0, t_badout},
	{"whoami", "Who am I", "names the calling client", NULL, NULL, 0, t_whoami},
	{"gpujob", "GPU job", "names the calling client, admitted first", NULL, NULL, TOOL_GPU_JOB,
	 t_whoami},
};

/* 120 generated tools for pagination. */
#define MANY 120
static struct tool_def many_tools[MANY];
static char many_names[MANY][16];

static int r_fail_read(struct app *a, const char *uri, json_t **contents, struct kf_err *err)
{
	(void)a;
	(void)uri;
	(void)contents;
	return kf_err_set(err, KF_EIO, "disk on fire");
}

static int r_fail_list(struct app *a, json_t *arr, struct kf_err *err)
{
	(void)a;
	json_array_append_new(arr, json_pack("{s:s,s:s}", "uri", "kftest://half", "name", "half"));
	return kf_err_set(err, KF_EDB, "index gone");
}

static const struct resource_def TEST_RESOURCES[] = {
	{"kftest://broken", "broken", "Broken", "fails to read", "text/plain", NULL, r_fail_read,
	 NULL},
	{"kftest://items/{x}", "items", "Items", "fails to list", "text/plain", r_fail_list,
	 r_fail_read, NULL},
};

static const struct tool_group TEST_GROUP = {
	TEST_TOOLS, sizeof(TEST_TOOLS) / sizeof(TEST_TOOLS[0]), TEST_RESOURCES, 2, NULL, 0};

static void setup_with(int many)
{
	static struct tool_group many_group;
	const struct tool_group *groups[3] = {&TEST_GROUP, &TOOLS_FIXTURES, NULL};
	struct kf_err err = {0};

	if (many) {
		for (int i = 0; i < MANY; i++) {
			snprintf(many_names[i], sizeof(many_names[i]), "gen_%03d", i);
			many_tools[i] = (struct tool_def){many_names[i], "gen", "generated", NULL,
							  NULL,		 0,	t_echo};
		}
		many_group = (struct tool_group){many_tools, MANY, NULL, 0, NULL, 0};
		groups[2] = &many_group;
	}
	ck_assert_int_eq(tools_load_groups(groups, 3, &err), 0);
	pthread_mutex_init(&cap.m, NULL);
	pthread_cond_init(&cap.c, NULL);
	cap.msgs = json_array();
	parsed = json_array();
	cap.finals = 0;
	cap.nonjson = 0;
	memset(&app, 0, sizeof(app));
	app.cfg.max_message_bytes = 4096;
	slow_saw_cancel = 0;
	S = mcp_session_new(&app, cap_send, &cap);
	ck_assert_ptr_nonnull(S);
}

static void setup(void)
{
	setup_with(0);
}

static void setup_many(void)
{
	setup_with(1);
}

static void teardown(void)
{
	mcp_session_free(S);
	S = NULL;
	ck_assert_int_eq(cap.nonjson, 0);
	json_decref(cap.msgs);
	json_decref(parsed);
}

/* --- lifecycle ----------------------------------------------------------------- */

START_TEST(requests_before_initialize_are_refused_but_ping_works)
{
	json_t *r = req(1, "tools/list", NULL);

	ck_assert_int_eq(err_code(r), -32600);
	ck_assert_ptr_nonnull(strstr(err_msg(r), "initialize"));
	ck_assert_int_eq(json_object_size(result(req(2, "ping", NULL))), 0);
	ck_assert_ptr_null(mcp_session_version(S));
	ck_assert_int_eq(mcp_session_initialized(S), 0);
}
END_TEST

static const char *const OFFERED[][2] = {
	{"2025-11-25", "2025-11-25"}, {"2025-06-18", "2025-06-18"}, {"2025-03-26", "2025-03-26"},
	{"2024-11-05", "2025-11-25"}, {"9999-01-01", "2025-11-25"},
};

START_TEST(initialize_negotiates_the_protocol_version)
{
	char params[256];
	json_t *r;

	snprintf(
		params, sizeof(params),
		"{\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}",
		OFFERED[_i][0]);
	r = result(req(1, "initialize", params));
	ck_assert_str_eq(json_string_value(json_object_get(r, "protocolVersion")), OFFERED[_i][1]);
	ck_assert_str_eq(mcp_session_version(S), OFFERED[_i][1]);
	ck_assert_int_eq(mcp_session_initialized(S), 1);
	ck_assert_str_eq(
		json_string_value(json_object_get(json_object_get(r, "serverInfo"), "name")),
		"kforge");
	ck_assert_ptr_nonnull(
		strstr(json_string_value(json_object_get(r, "instructions")), "benchmark"));
	r = json_object_get(r, "capabilities");
	ck_assert_ptr_nonnull(json_object_get(r, "tools"));
	ck_assert_ptr_nonnull(json_object_get(r, "logging"));
	ck_assert_ptr_nonnull(json_object_get(r, "completions"));
	ck_assert(json_is_true(json_object_get(json_object_get(r, "resources"), "subscribe")));
}
END_TEST

START_TEST(initialize_twice_or_without_version_is_refused)
{
	ck_assert_int_eq(err_code(req(1, "initialize", "{\"capabilities\":{}}")), -32602);
	ck_assert_int_eq(err_code(req(2, "initialize", "{\"protocolVersion\":5}")), -32602);
	ck_assert_int_eq(err_code(req(3, "initialize",
				      "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":[]}")),
			 -32602);
	initialize();
	ck_assert_int_eq(err_code(req(4, "initialize", INIT_PARAMS("2025-11-25"))), -32600);
}
END_TEST

/* --- every JSON-RPC error code ---------------------------------------------------- */

START_TEST(protocol_faults_get_their_error_codes)
{
	char big[5000];
	json_t *r;

	initialize();
	ck_assert_int_eq(err_code(req(1, "no/such/method", NULL)), -32601);
	ck_assert_int_eq(err_code(req(2, "tools/list", "[1,2]")), -32602);
	ck_assert_int_eq(err_code(req(3, "tools/call", "{\"name\":\"nope\"}")), -32602);
	ck_assert_int_eq(err_code(req(4, "tools/call", "{}")), -32602);
	ck_assert_int_eq(err_code(req(5, "tools/call", "{\"name\":\"echo\",\"arguments\":[]}")),
			 -32602);
	ck_assert_int_eq(
		err_code(req(
			6, "tools/call",
			"{\"name\":\"echo\",\"arguments\":{},\"_meta\":{\"progressToken\":{}}}")),
		-32602);
	ck_assert_int_eq(err_code(req(7, "resources/read", "{\"uri\":\"kftest://broken\"}")),
			 -32603);
	ck_assert_ptr_nonnull(strstr(err_msg(wait_reply(7)), "disk on fire"));

	ck_assert_int_eq(in("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":"), MCP_IN_ERROR);
	r = json_array_get(cap.msgs, json_array_size(cap.msgs) - 1);
	ck_assert_int_eq(err_code(r), -32700);
	ck_assert(json_is_null(json_object_get(r, "id")));

	ck_assert_int_eq(in("[{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}]"), MCP_IN_ERROR);
	r = json_array_get(cap.msgs, json_array_size(cap.msgs) - 1);
	ck_assert_int_eq(err_code(r), -32600);
	ck_assert_ptr_nonnull(strstr(err_msg(r), "batch"));

	ck_assert_int_eq(in("{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":7}"), MCP_IN_ERROR);
	ck_assert_int_eq(err_code(wait_reply(10)), -32600);

	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"ping\"}", 40);
	ck_assert_int_eq(in(big), MCP_IN_ERROR);
	r = json_array_get(cap.msgs, json_array_size(cap.msgs) - 1);
	ck_assert_int_eq(err_code(r), -32600);
	ck_assert_ptr_nonnull(strstr(err_msg(r), "4096-byte limit"));

	/* The session keeps working after each fault. */
	ck_assert_int_eq(json_object_size(result(req(12, "ping", NULL))), 0);
}
END_TEST

START_TEST(notifications_and_stray_responses_get_no_reply)
{
	size_t before;

	initialize();
	before = json_array_size(cap.msgs);
	ck_assert_int_eq(in("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}"),
			 MCP_IN_NOTIFICATION);
	ck_assert_int_eq(
		in("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":99}}"),
		MCP_IN_NOTIFICATION);
	ck_assert_int_eq(in("{\"jsonrpc\":\"2.0\",\"id\":77,\"result\":{}}"), MCP_IN_RESPONSE);
	ck_assert_int_eq(
		in("{\"jsonrpc\":\"2.0\",\"id\":78,\"error\":{\"code\":1,\"message\":\"m\"}}"),
		MCP_IN_RESPONSE);
	ck_assert_uint_eq(json_array_size(cap.msgs), before);
}
END_TEST

/* --- tools ------------------------------------------------------------------------ */

START_TEST(tools_list_pages_with_an_opaque_cursor)
{
	json_t *r;
	const char *cur;
	char params[128];
	size_t total;

	initialize();
	r = result(req(1, "tools/list", NULL));
	ck_assert_uint_eq(json_array_size(json_object_get(r, "tools")), 50);
	cur = json_string_value(json_object_get(r, "nextCursor"));
	ck_assert_ptr_nonnull(cur);
	total = 50;
	for (int id = 2; cur; id++) {
		snprintf(params, sizeof(params), "{\"cursor\":\"%s\"}", cur);
		r = result(req(id, "tools/list", params));
		total += json_array_size(json_object_get(r, "tools"));
		cur = json_string_value(json_object_get(r, "nextCursor"));
	}
	ck_assert_uint_eq(total, tools_count());
	ck_assert_int_eq(err_code(req(50, "tools/list", "{\"cursor\":\"garbage\"}")), -32602);
	ck_assert_int_eq(err_code(req(51, "tools/list", "{\"cursor\":\"c99999\"}")), -32602);
	ck_assert_int_eq(err_code(req(52, "tools/list", "{\"cursor\":5}")), -32602);
}
END_TEST

START_TEST(tools_list_describes_each_tool)
{
	json_t *r, *t;

	initialize();
	r = result(req(1, "tools/list", NULL));
	t = json_array_get(json_object_get(r, "tools"), 1);
	ck_assert_str_eq(json_string_value(json_object_get(t, "name")), "echo");
	ck_assert_str_eq(json_string_value(json_object_get(t, "description")), "echoes text");
	ck_assert(json_is_false(
		json_object_get(json_object_get(t, "inputSchema"), "additionalProperties")));
	ck_assert(json_is_true(json_object_get(json_object_get(t, "annotations"), "readOnlyHint")));
	ck_assert_ptr_null(json_object_get(r, "nextCursor"));
}
END_TEST

START_TEST(tool_results_put_summary_first_and_mirror_it_as_text)
{
	json_t *r = result(req(1, "initialize", INIT_PARAMS("2025-11-25"))), *sc, *text;
	const char *first;

	(void)r;
	r = result(req(2, "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}"));
	sc = json_object_get(r, "structuredContent");
	first = json_object_iter_key(json_object_iter(sc));
	ck_assert_str_eq(first, "summary");
	ck_assert_str_eq(json_string_value(json_object_get(sc, "echo")), "hi");
	ck_assert_ptr_null(json_object_get(r, "isError"));
	text = json_loads(json_string_value(json_object_get(
				  json_array_get(json_object_get(r, "content"), 0), "text")),
			  0, NULL);
	ck_assert(json_equal(text, sc));
	json_decref(text);
}
END_TEST

START_TEST(tool_failures_are_results_with_is_error)
{
	json_t *r, *sc;

	initialize();
	r = result(req(1, "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":5}}"));
	sc = error_of(r);
	ck_assert_str_eq(json_string_value(json_object_get(sc, "summary")),
			 "arguments.text: expected string, got integer");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(sc, "error"), "code")),
			 "invalid");

	r = result(
		req(2, "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"a\",\"x\":1}}"));
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(error_of(r), "summary")),
				     "unknown property 'x'"));

	r = result(req(3, "tools/call", "{\"name\":\"fail\"}"));
	ck_assert_str_eq(error_code(r), "no_gpu");

	/* fail_detail has an outputSchema its failure does not match: the
	 * detail travels in the text block, never as structuredContent. */
	r = result(req(4, "tools/call", "{\"name\":\"fail_detail\"}"));
	sc = error_of(r);
	ck_assert_str_eq(json_string_value(json_object_get(sc, "summary")), "2 elements wrong");
	ck_assert_uint_eq(json_array_size(json_object_get(sc, "mismatches")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(sc, "error"), "code")),
			 "fault");

	r = result(req(6, "tools/call", "{\"name\":\"huge\"}"));
	ck_assert_str_eq(error_code(r), "too_big");

	r = result(req(5, "tools/call", "{\"name\":\"badout\"}"));
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(error_of(r), "summary")),
				     "structuredContent.n: expected integer"));
}
END_TEST

START_TEST(content_only_tools_return_their_blocks)
{
	json_t *r, *c;

	initialize();
	r = result(req(1, "tools/call",
		       "{\"name\":\"test_multiple_content_types\",\"arguments\":{}}"));
	c = json_object_get(r, "content");
	ck_assert_uint_eq(json_array_size(c), 3);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c, 1), "type")), "image");
	ck_assert_ptr_null(json_object_get(r, "structuredContent"));
	r = result(req(2, "tools/call", "{\"name\":\"test_error_handling\",\"arguments\":{}}"));
	ck_assert(json_is_true(json_object_get(r, "isError")));
	ck_assert_ptr_null(json_object_get(r, "structuredContent"));
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(json_object_get(r, "content"), 0), "text")),
			 "This tool intentionally returns an error for testing");
}
END_TEST

START_TEST(fast_tools_answer_before_handle_returns)
{
	initialize();
	ck_assert_int_eq(
		in("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"test_simple_text\"}}"),
		MCP_IN_REQUEST);
	/* No waiting: a TOOL_FAST handler ran on this thread. */
	ck_assert_ptr_nonnull(find_reply(9));
	ck_assert_int_eq(cap.finals, 2);
}
END_TEST

/* --- cancel, progress, logging --------------------------------------------------- */

START_TEST(cancelled_notification_stops_the_handler)
{
	json_t *r;

	initialize();
	ck_assert_int_eq(
		in("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\"}}"),
		MCP_IN_REQUEST);
	usleep(50000); /* let the handler start */
	ck_assert_int_eq(
		in("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":5,\"reason\":\"user\"}}"),
		MCP_IN_NOTIFICATION);
	r = result(wait_reply(5));
	ck_assert_int_eq(slow_saw_cancel, 1);
	ck_assert_str_eq(error_code(r), "cancelled");
}
END_TEST

START_TEST(progress_is_sent_only_with_a_token)
{
	json_t *n;

	initialize();
	ck_assert_int_eq(
		in("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\",\"_meta\":{\"progressToken\":\"tok\"}}}"),
		MCP_IN_REQUEST);
	n = wait_method("notifications/progress", 1);
	ck_assert_ptr_nonnull(n);
	n = json_object_get(n, "params");
	ck_assert_str_eq(json_string_value(json_object_get(n, "progressToken")), "tok");
	ck_assert(json_number_value(json_object_get(n, "progress")) >= 1);
	ck_assert(json_number_value(json_object_get(n, "total")) == 500);
	ck_assert_str_eq(json_string_value(json_object_get(n, "message")), "working");
	in("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":5}}");
	wait_reply(5);

	pthread_mutex_lock(&cap.m);
	json_array_clear(cap.msgs);
	pthread_mutex_unlock(&cap.m);
	in("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\"}}");
	usleep(100000);
	in("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":6}}");
	wait_reply(6);
	ck_assert_uint_eq(count_method("notifications/progress"), 0);
}
END_TEST

START_TEST(log_notifications_follow_the_level)
{
	json_t *n;

	initialize();
	result(req(1, "tools/call", "{\"name\":\"log\"}"));
	ck_assert_uint_eq(count_method("notifications/message"), 3); /* default info */
	result(req(2, "logging/setLevel", "{\"level\":\"error\"}"));
	result(req(3, "tools/call", "{\"name\":\"log\"}"));
	ck_assert_uint_eq(count_method("notifications/message"), 4);
	n = json_object_get(wait_method("notifications/message", 3), "params");
	ck_assert_str_eq(json_string_value(json_object_get(n, "level")), "error");
	ck_assert_str_eq(json_string_value(json_object_get(n, "data")), "e");
	ck_assert_str_eq(json_string_value(json_object_get(n, "logger")), "log");
	result(req(4, "logging/setLevel", "{\"level\":\"debug\"}"));
	result(req(5, "tools/call", "{\"name\":\"log\"}"));
	ck_assert_uint_eq(count_method("notifications/message"), 8);
	ck_assert_int_eq(err_code(req(6, "logging/setLevel", "{\"level\":\"loud\"}")), -32602);
	ck_assert_int_eq(err_code(req(7, "logging/setLevel", NULL)), -32602);
}
END_TEST

/* --- completion, resources, prompts ------------------------------------------------ */

START_TEST(completion_offers_prompt_args_and_template_variables)
{
	json_t *r;

	initialize();
	r = result(req(
		1, "completion/complete",
		"{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"test_prompt_with_arguments\"},\"argument\":{\"name\":\"arg1\",\"value\":\"par\"}}"));
	r = json_object_get(r, "completion");
	ck_assert_uint_eq(json_array_size(json_object_get(r, "values")), 3);
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(r, "values"), 0)),
			 "paris");
	ck_assert(json_is_false(json_object_get(r, "hasMore")));
	r = result(req(
		2, "completion/complete",
		"{\"ref\":{\"type\":\"ref/resource\",\"uri\":\"test://template/{id}/data\"},\"argument\":{\"name\":\"id\",\"value\":\"12\"}}"));
	ck_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(json_object_get(r, "completion"), "values"), 0)),
			 "123");
	ck_assert_int_eq(
		err_code(req(
			3, "completion/complete",
			"{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"nope\"},\"argument\":{\"name\":\"a\",\"value\":\"\"}}")),
		-32602);
	ck_assert_int_eq(
		err_code(req(
			4, "completion/complete",
			"{\"ref\":{\"type\":\"ref/prompt\",\"name\":\"test_prompt_with_arguments\"},\"argument\":{\"name\":\"zzz\",\"value\":\"\"}}")),
		-32602);
	ck_assert_int_eq(
		err_code(req(
			5, "completion/complete",
			"{\"ref\":{\"type\":\"ref/resource\",\"uri\":\"test://template/{id}/data\"},\"argument\":{\"name\":\"nope\",\"value\":\"\"}}")),
		-32602);
	ck_assert_int_eq(
		err_code(req(
			6, "completion/complete",
			"{\"ref\":{\"type\":\"ref/other\"},\"argument\":{\"name\":\"a\",\"value\":\"\"}}")),
		-32602);
	ck_assert_int_eq(err_code(req(7, "completion/complete", "{}")), -32602);
}
END_TEST

START_TEST(resources_list_read_templates_and_subscriptions)
{
	json_t *r;

	initialize();
	/* broken + 3 static fixtures; the family whose list fails is skipped
	 * whole (not even the entry it added before failing). */
	r = result(req(1, "resources/list", NULL));
	ck_assert_uint_eq(json_array_size(json_object_get(r, "resources")), 4);
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(json_object_get(r, "resources"), 0), "uri")),
			 "kftest://broken");
	r = result(req(2, "resources/templates/list", NULL));
	ck_assert_str_eq(
		json_string_value(json_object_get(
			json_array_get(json_object_get(r, "resourceTemplates"), 1), "uriTemplate")),
		"test://template/{id}/data");
	r = result(req(3, "resources/read", "{\"uri\":\"test://template/42/data\"}"));
	ck_assert_ptr_nonnull(
		strstr(json_string_value(json_object_get(
			       json_array_get(json_object_get(r, "contents"), 0), "text")),
		       "Data for ID: 42"));
	r = req(4, "resources/read", "{\"uri\":\"test://nothing\"}");
	ck_assert_int_eq(err_code(r), -32002);
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(json_object_get(r, "error"), "data"), "uri")),
			 "test://nothing");
	ck_assert_int_eq(err_code(req(5, "resources/read", "{\"uri\":\"test://template//data\"}")),
			 -32002);
	ck_assert_int_eq(err_code(req(6, "resources/read", "{}")), -32602);
	ck_assert_int_eq(json_object_size(result(req(7, "resources/subscribe",
						     "{\"uri\":\"test://watched-resource\"}"))),
			 0);
	mcp_resource_updated("test://watched-resource");
	mcp_resource_updated("test://static-text");
	ck_assert_uint_eq(count_method("notifications/resources/updated"), 1);
	ck_assert_int_eq(json_object_size(result(req(8, "resources/unsubscribe",
						     "{\"uri\":\"test://watched-resource\"}"))),
			 0);
	mcp_resource_updated("test://watched-resource");
	ck_assert_uint_eq(count_method("notifications/resources/updated"), 1);
	ck_assert_int_eq(err_code(req(9, "resources/subscribe", "{\"uri\":\"test://nothing\"}")),
			 -32002);
}
END_TEST

START_TEST(subscriptions_are_capped_per_session)
{
	char buf[3200];
	json_t *r;

	initialize();
	for (int i = 0; i < 256; i++) {
		snprintf(buf, sizeof(buf), "{\"uri\":\"kftest://items/%d\"}", i);
		ck_assert_int_eq(json_object_size(result(req(100 + i, "resources/subscribe", buf))),
				 0);
	}
	r = req(1, "resources/subscribe", "{\"uri\":\"kftest://items/x256\"}");
	ck_assert_int_eq(err_code(r), -32602);
	ck_assert_ptr_nonnull(strstr(err_msg(r), "256 subscriptions"));
	/* Subscribing again to a URI already held is not a new one. */
	result(req(2, "resources/subscribe", "{\"uri\":\"kftest://items/7\"}"));
	result(req(3, "resources/unsubscribe", "{\"uri\":\"kftest://items/7\"}"));
	result(req(4, "resources/subscribe", "{\"uri\":\"kftest://items/x256\"}"));
	/* An overlong URI is refused before it is stored. */
	result(req(5, "resources/unsubscribe", "{\"uri\":\"kftest://items/8\"}"));
	snprintf(buf, sizeof(buf), "{\"uri\":\"kftest://items/%03000d\"}", 1);
	r = req(6, "resources/subscribe", buf);
	ck_assert_int_eq(err_code(r), -32602);
	ck_assert_ptr_nonnull(strstr(err_msg(r), "at most 2048"));
}
END_TEST

START_TEST(prompts_check_their_arguments)
{
	json_t *r;

	initialize();
	r = result(req(1, "prompts/list", NULL));
	ck_assert_uint_eq(json_array_size(json_object_get(r, "prompts")), 4);
	r = result(req(
		2, "prompts/get",
		"{\"name\":\"test_prompt_with_arguments\",\"arguments\":{\"arg1\":\"A\",\"arg2\":\"B\"}}"));
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(json_array_get(json_object_get(r, "messages"), 0),
						 "content"),
				 "text")),
			 "Prompt with arguments: arg1='A', arg2='B'");
	ck_assert_ptr_nonnull(strstr(
		err_msg(req(
			3, "prompts/get",
			"{\"name\":\"test_prompt_with_arguments\",\"arguments\":{\"arg1\":\"A\"}}")),
		"needs argument 'arg2'"));
	ck_assert_int_eq(
		err_code(req(
			4, "prompts/get",
			"{\"name\":\"test_prompt_with_arguments\",\"arguments\":{\"arg1\":1,\"arg2\":\"B\"}}")),
		-32602);
	ck_assert_int_eq(err_code(req(5, "prompts/get", "{\"name\":\"nope\"}")), -32602);
	ck_assert_int_eq(
		err_code(req(6, "prompts/get",
			     "{\"name\":\"test_simple_prompt\",\"arguments\":{\"x\":\"1\"}}")),
		-32602);
	ck_assert_int_eq(err_code(req(7, "prompts/get", "{}")), -32602);
}
END_TEST

/* --- server-to-client requests, limits ---------------------------------------------- */

START_TEST(tools_can_ask_the_client_and_get_its_answer)
{
	json_t *q, *r;
	char buf[256];

	initialize();
	in("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"ask\",\"arguments\":{\"timeout_ms\":5000}}}");
	q = wait_method("sampling/createMessage", 0);
	ck_assert_ptr_nonnull(q);
	snprintf(buf, sizeof(buf), "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":{\"text\":\"42\"}}",
		 (long long)json_integer_value(json_object_get(q, "id")));
	ck_assert_int_eq(in(buf), MCP_IN_RESPONSE);
	r = json_object_get(result(wait_reply(5)), "structuredContent");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "answer"), "text")),
			 "42");
	ck_assert(json_is_true(json_object_get(r, "sampling")));

	in("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"ask\",\"arguments\":{\"timeout_ms\":5000}}}");
	q = wait_method("sampling/createMessage", 1);
	snprintf(
		buf, sizeof(buf),
		"{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-1,\"message\":\"user said no\"}}",
		(long long)json_integer_value(json_object_get(q, "id")));
	in(buf);
	r = error_of(result(wait_reply(6)));
	ck_assert_ptr_nonnull(
		strstr(json_string_value(json_object_get(r, "summary")), "user said no"));

	r = result(req(7, "tools/call", "{\"name\":\"ask\",\"arguments\":{\"timeout_ms\":50}}"));
	ck_assert_str_eq(error_code(r), "timeout");
}
END_TEST

START_TEST(a_session_over_its_call_limit_is_told_busy)
{
	char buf[200];
	json_t *r;

	initialize();
	for (int i = 0; i < 64; i++) {
		snprintf(
			buf, sizeof(buf),
			"{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\"}}",
			100 + i);
		ck_assert_int_eq(in(buf), MCP_IN_REQUEST);
	}
	r = result(req(1, "tools/call", "{\"name\":\"slow\"}"));
	ck_assert_str_eq(error_code(r), "busy");
	/* Pings are still answered while the calls run. */
	result(req(2, "ping", NULL));
}
END_TEST

START_TEST(freeing_a_session_cancels_and_answers_every_call)
{
	initialize();
	for (int i = 0; i < 10; i++) {
		char buf[200];
		snprintf(
			buf, sizeof(buf),
			"{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\"}}",
			100 + i);
		in(buf);
	}
	mcp_session_free(S);
	S = NULL;
	/* initialize + 10 calls, each with exactly one final send. */
	ck_assert_int_eq(cap.finals, 11);
	for (int i = 0; i < 10; i++)
		ck_assert_ptr_nonnull(find_reply(100 + i));
	S = mcp_session_new(&app, cap_send, &cap);
}
END_TEST

/* --- outside a session ----------------------------------------------------------------- */

START_TEST(a_transport_names_the_client_of_stateless_requests)
{
	json_t *r, *sc;

	mcp_session_set_modern(S);
	mcp_session_set_client(S, "127.0.0.1");
	r = result(
		req(1, "tools/call",
		    "{\"name\":\"whoami\",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
		    "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}"));
	sc = json_object_get(r, "structuredContent");
	ck_assert_str_eq(json_string_value(json_object_get(sc, "client")), "127.0.0.1");
	ck_assert_str_eq(json_string_value(json_object_get(r, "resultType")), "complete");
}
END_TEST

START_TEST(each_session_is_its_own_client)
{
	struct mcp_session *s1 = S;
	json_t *r = result(req(1, "initialize", INIT_PARAMS("2025-11-25")));
	const char *c1;
	char first[32];
	struct kf_err err = {0};
	int is_error = -1;

	r = result(req(2, "tools/call", "{\"name\":\"whoami\"}"));
	c1 = json_string_value(json_object_get(json_object_get(r, "structuredContent"), "client"));
	ck_assert_ptr_nonnull(c1);
	ck_assert_int_eq(strncmp(c1, "session-", 8), 0);
	snprintf(first, sizeof(first), "%s", c1);
	/* A second session is another client (ids 3, 4: the replies share cap). */
	S = mcp_session_new(&app, cap_send, &cap);
	ck_assert_ptr_nonnull(S);
	r = result(req(3, "initialize", INIT_PARAMS("2025-11-25")));
	r = result(req(4, "tools/call", "{\"name\":\"whoami\"}"));
	ck_assert_str_ne(json_string_value(json_object_get(json_object_get(r, "structuredContent"),
							   "client")),
			 first);
	mcp_session_free(s1);
	/* Outside a session there is no client. */
	ck_assert_int_eq(mcp_tool_call(&app, "whoami", NULL, &r, &is_error, &err), 0);
	ck_assert_ptr_null(json_string_value(json_object_get(r, "client")));
	json_decref(r);
}
END_TEST

START_TEST(gpu_job_tools_pass_the_admission_hook)
{
	json_t *r = NULL;
	struct kf_err err = {0};
	int is_error = -1;

	tools_set_admission(admit_unless_full, count_release);
	admitted = released = 0;
	/* Admitted: the handler runs as the caller's client, then release. */
	ck_assert_int_eq(mcp_tool_call_as(&app, "token:ok", "gpujob", NULL, &r, &is_error, &err),
			 0);
	ck_assert_int_eq(is_error, 0);
	ck_assert_str_eq(json_string_value(json_object_get(r, "client")), "token:ok");
	ck_assert_int_eq(admitted, 1);
	ck_assert_int_eq(released, 1);
	json_decref(r);
	/* Refused: the refusal is the call's error result; no handler, no release. */
	ck_assert_int_eq(mcp_tool_call_as(&app, "token:full", "gpujob", NULL, &r, &is_error, &err),
			 0);
	ck_assert_int_eq(is_error, 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
			 "busy");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(r, "summary")),
				     "token:full has its jobs waiting"));
	ck_assert_int_eq(released, 1);
	json_decref(r);
	/* Tools that are not GPU jobs never pass the hook. */
	ck_assert_int_eq(mcp_tool_call_as(&app, "token:full", "whoami", NULL, &r, &is_error, &err),
			 0);
	ck_assert_int_eq(is_error, 0);
	ck_assert_int_eq(admitted, 1);
	json_decref(r);
	tools_set_admission(NULL, NULL);
}
END_TEST

START_TEST(tool_call_outside_a_session_validates_and_runs)
{
	struct kf_err err = {0};
	json_t *res = NULL, *args = json_pack("{s:s}", "text", "x");
	int is_error = -1;

	ck_assert_int_eq(mcp_tool_call(&app, "echo", args, &res, &is_error, &err), 0);
	ck_assert_int_eq(is_error, 0);
	ck_assert_str_eq(json_object_iter_key(json_object_iter(res)), "summary");
	json_decref(res);
	json_decref(args);

	ck_assert_int_eq(mcp_tool_call(&app, "nope", NULL, &res, &is_error, &err), KF_ENOTFOUND);
	kf_err_clear(&err);
	args = json_pack("{s:i}", "text", 1);
	ck_assert_int_eq(mcp_tool_call(&app, "echo", args, &res, &is_error, &err), KF_EINVAL);
	ck_assert_str_eq(err.msg, "arguments.text: expected string, got integer");
	json_decref(args);

	ck_assert_int_eq(mcp_tool_call(&app, "fail", NULL, &res, &is_error, &err), 0);
	ck_assert_int_eq(is_error, 1);
	json_decref(res);
	ck_assert_int_eq(mcp_tool_call(&app, "ask", NULL, &res, &is_error, &err), 0);
	ck_assert_int_eq(is_error, 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res, "error"), "code")),
			 "not_found");
	json_decref(res);
	ck_assert_int_eq(mcp_tool_call(&app, "test_simple_text", NULL, &res, &is_error, &err), 0);
	ck_assert_str_eq(json_string_value(json_object_get(res, "summary")),
			 "This is a simple text response for testing.");
	json_decref(res);
}
END_TEST

/* The one shape of a failed call's answer, written byte for byte as REST,
 * the CLI and every tool send it: summary first, then error {code,
 * message}. */
START_TEST(error_answers_have_one_shape)
{
	json_t *a = mcp_error_answer("no_gpu", "no usable GPU");
	char *text = json_dumps(a, JSON_COMPACT);
	ck_assert_str_eq(text, "{\"summary\":\"no usable GPU\",\"error\":{\"code\":\"no_gpu\","
			       "\"message\":\"no usable GPU\"}}");
	free(text);
	json_decref(a);
	a = mcp_error_member("method_not_allowed", "GET only");
	text = json_dumps(a, JSON_COMPACT);
	ck_assert_str_eq(text, "{\"code\":\"method_not_allowed\",\"message\":\"GET only\"}");
	free(text);
	json_decref(a);
}
END_TEST

static Suite *mcp_suite(void)
{
	Suite *s = suite_create("mcp");
	TCase *tc = tcase_create("lifecycle");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, requests_before_initialize_are_refused_but_ping_works);
	tcase_add_loop_test(tc, initialize_negotiates_the_protocol_version, 0,
			    sizeof(OFFERED) / sizeof(OFFERED[0]));
	tcase_add_test(tc, initialize_twice_or_without_version_is_refused);
	tcase_add_test(tc, protocol_faults_get_their_error_codes);
	tcase_add_test(tc, notifications_and_stray_responses_get_no_reply);
	suite_add_tcase(s, tc);

	tc = tcase_create("tools");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, tools_list_describes_each_tool);
	tcase_add_test(tc, tool_results_put_summary_first_and_mirror_it_as_text);
	tcase_add_test(tc, tool_failures_are_results_with_is_error);
	tcase_add_test(tc, content_only_tools_return_their_blocks);
	tcase_add_test(tc, fast_tools_answer_before_handle_returns);
	tcase_add_test(tc, cancelled_notification_stops_the_handler);
	tcase_add_test(tc, progress_is_sent_only_with_a_token);
	tcase_add_test(tc, log_notifications_follow_the_level);
	tcase_add_test(tc, tools_can_ask_the_client_and_get_its_answer);
	tcase_add_test(tc, a_session_over_its_call_limit_is_told_busy);
	tcase_add_test(tc, freeing_a_session_cancels_and_answers_every_call);
	tcase_add_test(tc, tool_call_outside_a_session_validates_and_runs);
	tcase_add_test(tc, gpu_job_tools_pass_the_admission_hook);
	tcase_add_test(tc, each_session_is_its_own_client);
	tcase_add_test(tc, a_transport_names_the_client_of_stateless_requests);
	tcase_add_test(tc, error_answers_have_one_shape);
	suite_add_tcase(s, tc);

	tc = tcase_create("pagination");
	tcase_add_checked_fixture(tc, setup_many, teardown);
	tcase_add_test(tc, tools_list_pages_with_an_opaque_cursor);
	suite_add_tcase(s, tc);

	tc = tcase_create("resources_prompts");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, completion_offers_prompt_args_and_template_variables);
	tcase_add_test(tc, resources_list_read_templates_and_subscriptions);
	tcase_add_test(tc, subscriptions_are_capped_per_session);
	tcase_add_test(tc, prompts_check_their_arguments);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(mcp_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
