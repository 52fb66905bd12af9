/* mcp_modern: the stateless revision (2026-07-28) beside the handshake
 * revisions. A request is modern when its params._meta names
 * io.modelcontextprotocol/protocolVersion, when it is server/discover, or
 * when the transport made the session modern (an HTTP POST that declared
 * MCP-Protocol-Version 2026-07-28). Each modern request is checked on its
 * own (_meta keys, version) and carries its own client capabilities and
 * log level; results gain resultType and the server's identity, and list
 * and read results their caching hints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/jsonrpc.h"
#include "base/log.h"
#include "server/mcp/mcp_int.h"
#include "base/version.h"

const char *const MCP_MODERN_VERSIONS[] = {"2026-07-28", NULL};

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS    "io.modelcontextprotocol/clientCapabilities"
#define META_LOG     "io.modelcontextprotocol/logLevel"
#define META_SERVER  "io.modelcontextprotocol/serverInfo"

/* Methods of the handshake revisions that 2026-07-28 removed: answered
 * Method not found when asked for statelessly. */
static const char *const REMOVED[] = {
	"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
	NULL};

int mcp_is_modern_version(const char *v)
{
	for (int i = 0; v && MCP_MODERN_VERSIONS[i]; i++)
		if (strcmp(v, MCP_MODERN_VERSIONS[i]) == 0)
			return 1;
	return 0;
}

json_t *mcp_supported_versions(void)
{
	json_t *a = json_array();

	for (int i = 0; MCP_MODERN_VERSIONS[i]; i++)
		json_array_append_new(a, json_string(MCP_MODERN_VERSIONS[i]));
	for (int i = 0; MCP_VERSIONS[i]; i++)
		json_array_append_new(a, json_string(MCP_VERSIONS[i]));
	return a;
}

int mcp_request_is_modern(const struct mcp_session *s, const char *method, const json_t *params)
{
	json_t *meta = json_object_get(params, "_meta");
	enum mcp_era era;

	pthread_mutex_lock((pthread_mutex_t *)&s->lock);
	era = s->era;
	pthread_mutex_unlock((pthread_mutex_t *)&s->lock);
	if (era == MCP_ERA_MODERN_ONLY)
		return 1;
	/* A connection that spoke 2026-07-28 keeps to it, so a request that
	 * lost its _meta gets the specific -32602; only initialize may still
	 * turn it into a handshake session. */
	if (era == MCP_ERA_MODERN && strcmp(method, "initialize") != 0)
		return 1;
	return strcmp(method, "server/discover") == 0 || json_object_get(meta, META_VERSION);
}

void mcp_session_set_modern(struct mcp_session *s)
{
	pthread_mutex_lock(&s->lock);
	s->era = MCP_ERA_MODERN_ONLY;
	pthread_mutex_unlock(&s->lock);
}

void mcp_session_set_client(struct mcp_session *s, const char *client)
{
	pthread_mutex_lock(&s->lock);
	snprintf(s->client, sizeof(s->client), "%s", client);
	pthread_mutex_unlock(&s->lock);
}

int mcp_session_is_modern(const struct mcp_session *s)
{
	int v;

	pthread_mutex_lock((pthread_mutex_t *)&s->lock);
	v = s->era != MCP_ERA_NONE;
	pthread_mutex_unlock((pthread_mutex_t *)&s->lock);
	return v;
}

/* Sends the UnsupportedProtocolVersionError for requested (borrowed). */
static void reply_unsupported(struct mcp_session *s, void *call, const json_t *id,
			      const char *requested)
{
	json_t *data = json_pack("{s:o,s:s}", "supported", mcp_supported_versions(), "requested",
				 requested);
	char msg[256];
	size_t len;
	char *text;

	snprintf(msg, sizeof(msg),
		 "Unsupported protocol version '%.40s' in _meta: per-request _meta speaks %s; "
		 "%s and older are served after an initialize handshake",
		 requested, MCP_MODERN_VERSIONS[0], MCP_VERSIONS[0]);
	text = jsonrpc_error(id, MCP_UNSUPPORTED_VERSION, msg, data, &len);
	mcp_send_text(s, call, 1, id, text, len);
}

int mcp_modern_begin(struct mcp_session *s, const char *method, const json_t *id,
		     const json_t *params, void *call)
{
	json_t *meta = json_object_get(params, "_meta");
	json_t *pv = json_object_get(meta, META_VERSION);
	json_t *caps = json_object_get(meta, META_CAPS);
	json_t *lvl = json_object_get(meta, META_LOG);
	int initialized, li = MCP_LOG_NONE;

	if (!json_is_object(meta)) {
		mcp_reply_error(
			s, call, id, JSONRPC_INVALID_PARAMS,
			"Invalid params: params._meta is required in protocol %s: an object "
			"with \"%s\" and \"%s\" (or initialize first for %s)",
			MCP_MODERN_VERSIONS[0], META_VERSION, META_CAPS, MCP_VERSIONS[0]);
		return -1;
	}
	if (!json_is_string(pv)) {
		mcp_reply_error(
			s, call, id, JSONRPC_INVALID_PARAMS,
			"Invalid params: params._meta[\"%s\"] is required: a string such as "
			"\"%s\"",
			META_VERSION, MCP_MODERN_VERSIONS[0]);
		return -1;
	}
	if (!json_is_object(caps)) {
		mcp_reply_error(
			s, call, id, JSONRPC_INVALID_PARAMS,
			"Invalid params: params._meta[\"%s\"] is required: an object of the "
			"client's capabilities for this request ({} for none)",
			META_CAPS);
		return -1;
	}
	if (lvl &&
	    (!json_is_string(lvl) || (li = mcp_log_level_index(json_string_value(lvl))) < 0)) {
		mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
				"Invalid params: params._meta[\"%s\"] must be one of debug, info, "
				"notice, warning, error, critical, alert, emergency",
				META_LOG);
		return -1;
	}
	if (!mcp_is_modern_version(json_string_value(pv))) {
		reply_unsupported(s, call, id, json_string_value(pv));
		return -1;
	}
	pthread_mutex_lock(&s->lock);
	initialized = s->initialized;
	if (!initialized) {
		if (s->era == MCP_ERA_NONE)
			s->era = MCP_ERA_MODERN;
		s->version = MCP_MODERN_VERSIONS[0];
		json_decref(s->client_caps);
		s->client_caps = json_deep_copy(caps);
		s->log_level = li;
	}
	pthread_mutex_unlock(&s->lock);
	if (initialized) {
		mcp_reply_error(
			s, call, id, JSONRPC_INVALID_REQUEST,
			"Invalid Request: this connection was initialized with protocol %s; "
			"a request with per-request _meta (%s) needs a connection (or, over "
			"HTTP, a POST without Mcp-Session-Id) that never sent initialize",
			s->version, MCP_MODERN_VERSIONS[0]);
		return -1;
	}
	for (int i = 0; REMOVED[i]; i++)
		if (strcmp(method, REMOVED[i]) == 0) {
			mcp_reply_error(s, call, id, JSONRPC_METHOD_NOT_FOUND,
					"Method not found: %s is not part of protocol %s", method,
					MCP_MODERN_VERSIONS[0]);
			return -1;
		}
	return 0;
}

void mcp_result_finish(struct mcp_session *s, json_t *result)
{
	json_t *meta;

	if (!result || !s || !mcp_session_is_modern(s))
		return;
	if (!json_object_get(result, "resultType"))
		json_object_set_new(result, "resultType", json_string("complete"));
	meta = json_object_get(result, "_meta");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(result, "_meta", meta);
	}
	json_object_set_new(meta, META_SERVER,
			    json_pack("{s:s,s:s}", "name", "kforge", "version", KFORGE_VERSION));
}

void mcp_cache_hint(struct mcp_session *s, json_t *result, long ttl_ms, const char *scope)
{
	if (!result || !s || !mcp_session_is_modern(s))
		return;
	json_object_set_new(result, "ttlMs", json_integer(ttl_ms < 0 ? 0 : ttl_ms));
	json_object_set_new(result, "cacheScope", json_string(scope));
}

void mcp_discover(struct mcp_session *s, const json_t *id, void *call)
{
	json_t *caps = mcp_capabilities(1);
	json_t *result;

	/* Tasks are an extension, advertised here and declared by the client
	 * per request (mcp_task.c). */
	json_object_set_new(caps, "extensions",
			    json_pack("{s:{}}", "io.modelcontextprotocol/tasks"));
	result = json_pack("{s:o,s:o,s:s}", "supportedVersions", mcp_supported_versions(),
			   "capabilities", caps, "instructions", mcp_instructions());

	/* The answer changes only with the binary: an hour is honest, and
	 * public because nothing in it depends on the caller. */
	mcp_cache_hint(s, result, MCP_TTL_STATIC_MS, "public");
	mcp_reply(s, call, id, result);
}

void mcp_reply_missing_cap(struct mcp_session *s, void *call, const json_t *id, json_t *need,
			   const char *what)
{
	char *names = json_dumps(need, JSON_COMPACT);
	size_t len;
	char msg[512];
	char *text;

	snprintf(msg, sizeof(msg),
		 "Missing required client capability: %.60s needs %.100s, which this request's "
		 "_meta[\"%s\"] does not declare",
		 what, names ? names : "a capability", META_CAPS);
	free(names);
	text = jsonrpc_error(id, MCP_MISSING_CLIENT_CAP, msg,
			     json_pack("{s:o}", "requiredCapabilities", need), &len);
	mcp_send_text(s, call, 1, id, text, len);
	log_debug("mcp", "%s refused: a client capability is missing", what);
}
