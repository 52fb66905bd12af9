/* fuzz_mcp: libFuzzer target for MCP dispatch through the session handler
 * (server/mcp/mcp.c, mcp_call.c, mcp_res.c) with the conformance fixture
 * tools, resources and prompts registered. The input is one message per
 * line, handed to a fresh session; unless the input starts with 'R' (raw)
 * the session is first initialized, so mutations reach tools/call,
 * resources, prompts, completion, logging and cancellation. Oracles: every
 * outgoing message is one compact JSON-RPC 2.0 object; a request, or a
 * malformed message, gets exactly one final send with its call, a
 * notification or a client response none (the transports rely on this). */
#include <assert.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/app.h"
#include "server/mcp/mcp.h"
#include "server/mcp/tools.h"

#define MAX_MSGS 48

struct slot {
	int finals; /* final sends with this call */
	int sends;  /* every send with this call */
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot g_slots[MAX_MSGS + 2];

static void on_send(void *arg, void *call, int final, const char *json, size_t len)
{
	json_error_t je;
	json_t *v = json_loadb(json, len, 0, &je);

	(void)arg;
	assert(v && json_is_object(v) && !memchr(json, '\n', len));
	assert(strcmp(json_string_value(json_object_get(v, "jsonrpc")), "2.0") == 0);
	json_decref(v);
	if (!call) {
		assert(!final);
		return;
	}
	pthread_mutex_lock(&g_lock);
	struct slot *sl = call;
	sl->sends++;
	sl->finals += final;
	pthread_mutex_unlock(&g_lock);
}

/* The fixtures that sleep on purpose (progress, logging, reconnection)
 * are left out: they only slow the fuzzer down. */
static int slow(const char *name)
{
	return !strcmp(name, "test_tool_with_progress") ||
	       !strcmp(name, "test_tool_with_logging") || !strcmp(name, "test_reconnection");
}

static void load_tools(void)
{
	static struct tool_def tools[64];
	static struct tool_group group;
	const struct tool_group *groups[1] = {&group};
	struct kf_err err = {0};
	size_t n = 0;

	for (size_t i = 0; i < TOOLS_FIXTURES.tools_len && n < 64; i++)
		if (!slow(TOOLS_FIXTURES.tools[i].name))
			tools[n++] = TOOLS_FIXTURES.tools[i];
	group = TOOLS_FIXTURES;
	group.tools = tools;
	group.tools_len = n;
	if (tools_load_groups(groups, 1, &err))
		__builtin_trap();
}

static const char INIT[] =
	"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
	"\"2025-11-25\",\"capabilities\":{\"sampling\":{},\"elicitation\":{}},\"clientInfo\":"
	"{\"name\":\"fuzz\",\"version\":\"1\"}}}";
static const char INITIALIZED[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int loaded;
	static struct app app;
	enum mcp_in kinds[MAX_MSGS + 2];
	size_t n = 0;

	if (!loaded) {
		load_tools();
		app.cfg.max_message_bytes = 1u << 16;
		loaded = 1;
	}
	memset(g_slots, 0, sizeof g_slots);
	struct mcp_session *s = mcp_session_new(&app, on_send, NULL);
	if (!s)
		return 0;
	const char *p = (const char *)data, *end = p + size;
	if (size == 0 || p[0] != 'R') {
		kinds[n] = mcp_session_handle(s, INIT, sizeof INIT - 1, &g_slots[n]);
		n++;
		kinds[n] = mcp_session_handle(s, INITIALIZED, sizeof INITIALIZED - 1, &g_slots[n]);
		n++;
	} else {
		p++;
	}
	while (p < end && n < MAX_MSGS + 2) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		kinds[n] = mcp_session_handle(s, p, len, &g_slots[n]);
		n++;
		p += len + 1;
	}
	mcp_session_free(s);
	for (size_t i = 0; i < n; i++) {
		if (kinds[i] == MCP_IN_REQUEST || kinds[i] == MCP_IN_ERROR) {
			assert(g_slots[i].finals == 1);
		} else {
			assert(kinds[i] == MCP_IN_NOTIFICATION || kinds[i] == MCP_IN_RESPONSE);
			assert(g_slots[i].sends == 0);
		}
	}
	return 0;
}
