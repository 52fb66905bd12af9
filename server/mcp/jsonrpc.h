/* jsonrpc: JSON-RPC 2.0 framing for MCP. Parses one message (a request, a
 * notification or a response; batches are refused), and builds compact
 * response, error, notification and request texts. No I/O and no state:
 * safe from any thread. */
#ifndef KF_JSONRPC_H
#define KF_JSONRPC_H

#include <jansson.h>
#include <stddef.h>

#include "base/kf_err.h"

enum {
	JSONRPC_PARSE_ERROR = -32700,
	JSONRPC_INVALID_REQUEST = -32600,
	JSONRPC_METHOD_NOT_FOUND = -32601,
	JSONRPC_INVALID_PARAMS = -32602,
	JSONRPC_INTERNAL_ERROR = -32603
};

#define JSONRPC_MAX_MESSAGE_BYTES_DEFAULT (8u << 20)
#define JSONRPC_MAX_DEPTH		  64 /* nesting allowed in a message */

enum jsonrpc_kind {
	JSONRPC_REQUEST = 0,  /* method + id */
	JSONRPC_NOTIFICATION, /* method, no id */
	JSONRPC_RESPONSE,     /* id + result */
	JSONRPC_ERROR_REPLY   /* id + error */
};

struct jsonrpc_msg {
	enum jsonrpc_kind kind;
	json_t *root;	    /* the whole message; owned (jsonrpc_msg_fini) */
	json_t *id;	    /* borrowed from root: string or integer; NULL for a
			     * notification */
	const char *method; /* borrowed from root; NULL for responses */
	json_t *params;	    /* borrowed from root: object or array, or NULL */
	json_t *result;	    /* borrowed: a response's result */
	json_t *error;	    /* borrowed: an error reply's error object */
	/* On failure: */
	int rpc_code;	/* JSONRPC_PARSE_ERROR or JSONRPC_INVALID_REQUEST */
	json_t *bad_id; /* new reference to the id when one could be read
			     * from a faulty message, else NULL (reply with null) */
};

/* Parses len bytes of text (borrowed; need not be NUL-terminated) into msg
 * (caller's storage; always finish with jsonrpc_msg_fini). max_bytes caps
 * len (0 = the 8 MiB default). Returns 0, or:
 *   KF_ETOOBIG: len > max_bytes (msg->rpc_code JSONRPC_INVALID_REQUEST);
 *   KF_EINVAL: not JSON (JSONRPC_PARSE_ERROR), or JSON that is not one
 *     JSON-RPC 2.0 message: a batch array, a missing or wrong "jsonrpc", a
 *     non-string method, an id that is not a string or integer, params not
 *     an object or array, both or neither of result/error
 *     (JSONRPC_INVALID_REQUEST).
 * err names the problem ("batch requests are not supported: send one JSON
 * object per message"). */
int jsonrpc_parse(const char *text, size_t len, size_t max_bytes, struct jsonrpc_msg *msg,
		  struct kf_err *err) __attribute__((warn_unused_result));

/* Releases what msg holds. Safe on a zeroed or failed msg. */
void jsonrpc_msg_fini(struct jsonrpc_msg *msg);

/* Builders. Each returns new compact JSON text without a newline (free with
 * free()) and its length in *len, or NULL on allocation failure.
 * id: borrowed (NULL = null). Values marked "takes" are consumed even on
 * failure. */
char *jsonrpc_result(const json_t *id, json_t *result /* takes */, size_t *len);
char *jsonrpc_error(const json_t *id, int code, const char *message,
		    json_t *data /* takes, may be NULL */, size_t *len);
char *jsonrpc_notification(const char *method, json_t *params /* takes, may be NULL */,
			   size_t *len);
char *jsonrpc_request(const json_t *id, const char *method, json_t *params /* takes, may be NULL */,
		      size_t *len);

/* The standard message of a JSON-RPC error code ("Parse error", ...). */
const char *jsonrpc_code_message(int code);

#endif
