/* fuzz_jsonrpc: libFuzzer target for the JSON-RPC message parser: any
 * bytes must parse or fail cleanly (no crash, leak or overflow), a failure
 * must carry a JSON-RPC code, and a success must rebuild into valid JSON. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>

#include "server/mcp/jsonrpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jsonrpc_msg m;
	struct kf_err err = {0};
	size_t len;
	char *out;

	if (jsonrpc_parse((const char *)data, size, 1u << 20, &m, &err)) {
		assert(m.rpc_code == JSONRPC_PARSE_ERROR || m.rpc_code == JSONRPC_INVALID_REQUEST);
		assert(err.msg[0] != '\0');
		out = jsonrpc_error(m.bad_id, m.rpc_code, err.msg, NULL, &len);
	} else if (m.kind == JSONRPC_REQUEST || m.kind == JSONRPC_NOTIFICATION) {
		assert(m.method != NULL);
		out = jsonrpc_request(m.id, m.method, m.params ? json_incref(m.params) : NULL,
				      &len);
	} else {
		assert(m.id != NULL);
		out = jsonrpc_result(m.id, json_incref(m.result ? m.result : m.error), &len);
	}
	assert(out != NULL);
	json_t *back = json_loadb(out, len, 0, NULL);
	assert(back != NULL);
	json_decref(back);
	free(out);
	jsonrpc_msg_fini(&m);
	return 0;
}
