/* http_modern: what Streamable HTTP adds for the stateless revision
 * (2026-07-28): which POSTs take the sessionless path, the checks of the
 * MCP-Protocol-Version, Mcp-Method and Mcp-Name headers against the body
 * (HeaderMismatch, UnsupportedProtocolVersion), and the HTTP status each
 * JSON-RPC error answer gets. Pure: no session, no MHD response. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/jsonrpc.h"
#include "server/transport/http_int.h"

#define HEADER_MISMATCH	    -32020
#define UNSUPPORTED_VERSION -32022
#define NAME_MAX_BYTES	    4096 /* a decoded Mcp-Name value */

int http_modern_known_legacy(const char *v)
{
	for (int i = 0; MCP_VERSIONS[i]; i++)
		if (!strcmp(MCP_VERSIONS[i], v))
			return 1;
	return 0;
}

int http_modern_wanted(const char *pv, const char *sid, const json_t *msg)
{
	json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");

	/* A header naming no handshake revision (2026-07-28, or one kforge
	 * does not know, answered UnsupportedProtocolVersion) is stateless;
	 * so is a POST outside any session whose body declares its version
	 * in _meta, whatever header came with it (a mismatch is an error). */
	if (pv && !http_modern_known_legacy(pv))
		return 1;
	return !sid && json_object_get(meta, "io.modelcontextprotocol/protocolVersion") != NULL;
}

static int b64_val(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Decodes an "=?base64?...?=" header value into out (cap bytes, NUL
 * ended), or copies a plain one. Returns 0, or -1 for bad base64 or a
 * value over cap. */
static int header_value(const char *v, char *out, size_t cap)
{
	size_t n, o = 0;
	unsigned acc = 0;
	int bits = 0;

	/* RFC 9110 5.5: the whitespace around a field value is not part of it. */
	while (*v == ' ' || *v == '\t')
		v++;
	n = strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;

	if (n < 11 || strncmp(v, "=?base64?", 9) != 0 || strncmp(v + n - 2, "?=", 2) != 0) {
		if (n >= cap)
			return -1;
		memcpy(out, v, n);
		out[n] = '\0';
		return 0;
	}
	for (size_t i = 9; i < n - 2; i++) {
		int d = v[i] == '=' ? -2 : b64_val((unsigned char)v[i]);
		if (d == -2)
			break;
		if (d < 0)
			return -1;
		acc = (acc << 6) | (unsigned)d;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o + 1 >= cap)
				return -1;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	out[o] = '\0';
	return 0;
}

/* The body field Mcp-Name mirrors for method, or NULL when it has none. */
static const char *name_field(const char *method)
{
	if (!strcmp(method, "tools/call") || !strcmp(method, "prompts/get"))
		return "name";
	if (!strcmp(method, "resources/read"))
		return "uri";
	if (!strcmp(method, "tasks/get") || !strcmp(method, "tasks/cancel") ||
	    !strcmp(method, "tasks/update"))
		return "taskId";
	return NULL;
}

/* Sets *answer to a new JSON-RPC error for id with HTTP status 400. */
static int refuse(const json_t *id, int code, json_t *data, char **answer, size_t *len,
		  const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int refuse(const json_t *id, int code, json_t *data, char **answer, size_t *len,
		  const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	*answer = jsonrpc_error(id, code, msg, data, len);
	return 1;
}

int http_modern_check(const json_t *msg, const char *pv, const char *hmethod, const char *hname,
		      char **answer, size_t *len)
{
	json_t *params = json_object_get(msg, "params"), *id = json_object_get(msg, "id");
	const char *method = json_string_value(json_object_get(msg, "method"));
	const char *mpv = json_string_value(json_object_get(
		json_object_get(params, "_meta"), "io.modelcontextprotocol/protocolVersion"));
	const char *field, *body_name;
	char name[NAME_MAX_BYTES];

	*answer = NULL;
	if (!method)
		return refuse(id, JSONRPC_INVALID_REQUEST, NULL, answer, len,
			      "Invalid Request: a POST to /mcp carries one request (method "
			      "and id) or notification; responses are not sent in %s",
			      MCP_MODERN_VERSIONS[0]);
	if (!pv)
		return refuse(id, HEADER_MISMATCH, NULL, answer, len,
			      "Header mismatch: the MCP-Protocol-Version header is required "
			      "(the body's _meta names %s)",
			      mpv ? mpv : "(none)");
	if (mpv && strcmp(mpv, pv) != 0)
		return refuse(id, HEADER_MISMATCH, NULL, answer, len,
			      "Header mismatch: MCP-Protocol-Version '%.40s' does not match "
			      "params._meta's protocolVersion '%.40s'",
			      pv, mpv);
	if (!mcp_is_modern_version(pv) && !http_modern_known_legacy(pv))
		return refuse(id, UNSUPPORTED_VERSION,
			      json_pack("{s:o,s:s}", "supported", mcp_supported_versions(),
					"requested", pv),
			      answer, len,
			      "Unsupported protocol version '%.40s'; kforge speaks %s (per-request "
			      "_meta) and %s, %s, %s (initialize first)",
			      pv, MCP_MODERN_VERSIONS[0], MCP_VERSIONS[0], MCP_VERSIONS[1],
			      MCP_VERSIONS[2]);
	if (!hmethod || header_value(hmethod, name, sizeof(name)) || strcmp(name, method) != 0)
		return refuse(id, HEADER_MISMATCH, NULL, answer, len,
			      "Header mismatch: Mcp-Method '%.60s' does not match the body's "
			      "method '%.60s'",
			      hmethod ? hmethod : "(missing)", method);
	if (!id)
		return 0;
	field = name_field(method);
	if (!field)
		return 0;
	body_name = json_string_value(json_object_get(params, field));
	if (!hname)
		return refuse(id, HEADER_MISMATCH, NULL, answer, len,
			      "Header mismatch: %s needs an Mcp-Name header with params.%s", method,
			      field);
	if (header_value(hname, name, sizeof(name)))
		return refuse(id, HEADER_MISMATCH, NULL, answer, len,
			      "Header mismatch: Mcp-Name is not valid base64 or is over %d bytes",
			      NAME_MAX_BYTES);
	if (!body_name || strcmp(name, body_name) != 0)
		return refuse(id, HEADER_MISMATCH, NULL, answer, len,
			      "Header mismatch: Mcp-Name '%.100s' does not match params.%s "
			      "'%.100s'",
			      name, field, body_name ? body_name : "(missing)");
	return 0;
}

unsigned http_modern_status(const char *json, size_t len)
{
	json_t *j = json ? json_loadb(json, len, 0, NULL) : NULL;
	json_t *err = json_object_get(j, "error");
	json_int_t code = json_integer_value(json_object_get(err, "code"));
	unsigned st = 200;

	if (err) {
		switch (code) {
		case JSONRPC_METHOD_NOT_FOUND: st = 404; break;
		case JSONRPC_PARSE_ERROR:
		case JSONRPC_INVALID_REQUEST:
		case JSONRPC_INVALID_PARAMS:
		case HEADER_MISMATCH:
		case -32021: /* MissingRequiredClientCapability */
		case UNSUPPORTED_VERSION: st = 400; break;
		default: st = 500; break;
		}
	}
	json_decref(j);
	return st;
}
