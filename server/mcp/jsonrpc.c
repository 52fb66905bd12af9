/* jsonrpc: JSON-RPC 2.0 parse and build; see jsonrpc.h. The parser checks
 * the size cap before touching the text and the nesting depth before
 * handing it to jansson, whose recursive parser would otherwise let a
 * message of a million '[' exhaust the stack. */
#include "server/mcp/jsonrpc.h"

#include <stdlib.h>
#include <string.h>

/* Returns the deepest nesting of [ and { outside strings, stopping early
 * once it passes limit. */
static int max_depth(const char *s, size_t len, int limit)
{
	int depth = 0, max = 0, in_str = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
			continue;
		}
		if (c == '"') {
			in_str = 1;
		} else if (c == '[' || c == '{') {
			if (++depth > max) {
				max = depth;
				if (max > limit)
					return max;
			}
		} else if (c == ']' || c == '}') {
			depth--;
		}
	}
	return max;
}

static int fail(struct jsonrpc_msg *msg, int rpc_code, int kf_code, struct kf_err *err,
		const char *what)
{
	msg->rpc_code = rpc_code;
	return kf_err_set(err, kf_code, "%s", what);
}

int jsonrpc_parse(const char *text, size_t len, size_t max_bytes, struct jsonrpc_msg *msg,
		  struct kf_err *err)
{
	json_error_t jerr;
	json_t *root, *v, *id;

	memset(msg, 0, sizeof(*msg));
	if (max_bytes == 0)
		max_bytes = JSONRPC_MAX_MESSAGE_BYTES_DEFAULT;
	if (len > max_bytes) {
		msg->rpc_code = JSONRPC_INVALID_REQUEST;
		return kf_err_set(
			err, KF_ETOOBIG,
			"message of %zu bytes is over the %zu-byte limit (--max-message-bytes)",
			len, max_bytes);
	}
	if (max_depth(text, len, JSONRPC_MAX_DEPTH) > JSONRPC_MAX_DEPTH) {
		msg->rpc_code = JSONRPC_PARSE_ERROR;
		return kf_err_set(err, KF_EINVAL, "Parse error: nesting deeper than %d levels",
				  JSONRPC_MAX_DEPTH);
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
	if (!root) {
		msg->rpc_code = JSONRPC_PARSE_ERROR;
		return kf_err_set(err, KF_EINVAL, "Parse error: %s (line %d, column %d)", jerr.text,
				  jerr.line, jerr.column);
	}
	msg->root = root;
	if (json_is_array(root))
		return fail(
			msg, JSONRPC_INVALID_REQUEST, KF_EINVAL, err,
			"Invalid Request: batch requests (JSON arrays) are not supported; send one JSON-RPC object per message");
	if (!json_is_object(root))
		return fail(msg, JSONRPC_INVALID_REQUEST, KF_EINVAL, err,
			    "Invalid Request: a message must be a JSON object");

	/* Recover the id first so even a faulty request gets a matching reply. */
	id = json_object_get(root, "id");
	if (id && (json_is_string(id) || json_is_integer(id)))
		msg->bad_id = json_incref(id);

	v = json_object_get(root, "jsonrpc");
	if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0)
		return fail(msg, JSONRPC_INVALID_REQUEST, KF_EINVAL, err,
			    "Invalid Request: \"jsonrpc\" must be the string \"2.0\"");
	if (id && !json_is_string(id) && !json_is_integer(id))
		return fail(msg, JSONRPC_INVALID_REQUEST, KF_EINVAL, err,
			    "Invalid Request: \"id\" must be a string or an integer");
	v = json_object_get(root, "method");
	if (v) {
		if (!json_is_string(v) || json_string_length(v) == 0)
			return fail(msg, JSONRPC_INVALID_REQUEST, KF_EINVAL, err,
				    "Invalid Request: \"method\" must be a non-empty string");
		if (json_object_get(root, "result") || json_object_get(root, "error"))
			return fail(
				msg, JSONRPC_INVALID_REQUEST, KF_EINVAL, err,
				"Invalid Request: a request cannot carry \"result\" or \"error\"");
		msg->method = json_string_value(v);
		v = json_object_get(root, "params");
		if (v && !json_is_object(v) && !json_is_array(v))
			return fail(msg, JSONRPC_INVALID_REQUEST, KF_EINVAL, err,
				    "Invalid Request: \"params\" must be an object or an array");
		msg->params = v;
		msg->id = id;
		msg->kind = id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION;
		json_decref(msg->bad_id);
		msg->bad_id = NULL;
		return 0;
	}

	/* A response from the client (to a server-initiated request). */
	msg->result = json_object_get(root, "result");
	msg->error = json_object_get(root, "error");
	if (!msg->result == !msg->error)
		return fail(
			msg, JSONRPC_INVALID_REQUEST, KF_EINVAL, err,
			"Invalid Request: a message needs \"method\", or exactly one of \"result\" and \"error\"");
	if (!id)
		return fail(msg, JSONRPC_INVALID_REQUEST, KF_EINVAL, err,
			    "Invalid Request: a response needs an \"id\"");
	if (msg->error &&
	    (!json_is_object(msg->error) || !json_is_integer(json_object_get(msg->error, "code"))))
		return fail(
			msg, JSONRPC_INVALID_REQUEST, KF_EINVAL, err,
			"Invalid Request: \"error\" must be an object with an integer \"code\"");
	msg->id = id;
	msg->kind = msg->result ? JSONRPC_RESPONSE : JSONRPC_ERROR_REPLY;
	json_decref(msg->bad_id);
	msg->bad_id = NULL;
	return 0;
}

void jsonrpc_msg_fini(struct jsonrpc_msg *msg)
{
	if (!msg)
		return;
	json_decref(msg->bad_id);
	json_decref(msg->root);
	memset(msg, 0, sizeof(*msg));
}

/* Serializes and frees obj. */
static char *finish(json_t *obj, size_t *len)
{
	char *s = NULL;

	if (obj)
		s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(obj);
	if (len)
		*len = s ? strlen(s) : 0;
	return s;
}

static json_t *envelope(const json_t *id)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "jsonrpc", json_string("2.0"));
	json_object_set_new(o, "id", id ? json_copy((json_t *)id) : json_null());
	return o;
}

char *jsonrpc_result(const json_t *id, json_t *result, size_t *len)
{
	json_t *o = envelope(id);

	if (!o || !result) {
		json_decref(o);
		json_decref(result);
		return finish(NULL, len);
	}
	json_object_set_new(o, "result", result);
	return finish(o, len);
}

char *jsonrpc_error(const json_t *id, int code, const char *message, json_t *data, size_t *len)
{
	json_t *o = envelope(id), *e = json_object();

	if (!o || !e) {
		json_decref(o);
		json_decref(e);
		json_decref(data);
		return finish(NULL, len);
	}
	json_object_set_new(e, "code", json_integer(code));
	json_object_set_new(e, "message",
			    json_string(message ? message : jsonrpc_code_message(code)));
	if (data)
		json_object_set_new(e, "data", data);
	json_object_set_new(o, "error", e);
	return finish(o, len);
}

char *jsonrpc_notification(const char *method, json_t *params, size_t *len)
{
	json_t *o = json_object();

	if (!o) {
		json_decref(params);
		return finish(NULL, len);
	}
	json_object_set_new(o, "jsonrpc", json_string("2.0"));
	json_object_set_new(o, "method", json_string(method));
	if (params)
		json_object_set_new(o, "params", params);
	return finish(o, len);
}

char *jsonrpc_request(const json_t *id, const char *method, json_t *params, size_t *len)
{
	json_t *o = envelope(id);

	if (!o) {
		json_decref(params);
		return finish(NULL, len);
	}
	json_object_set_new(o, "method", json_string(method));
	if (params)
		json_object_set_new(o, "params", params);
	return finish(o, len);
}

const char *jsonrpc_code_message(int code)
{
	switch (code) {
	case JSONRPC_PARSE_ERROR: return "Parse error";
	case JSONRPC_INVALID_REQUEST: return "Invalid Request";
	case JSONRPC_METHOD_NOT_FOUND: return "Method not found";
	case JSONRPC_INVALID_PARAMS: return "Invalid params";
	case JSONRPC_INTERNAL_ERROR: return "Internal error";
	default: return "Server error";
	}
}
