/* fuzz_schema: libFuzzer target for the schema validator. The input is
 * "SCHEMA\nVALUE": the schema is parsed (and must be accepted or refused
 * cleanly); the value is validated against it when it parsed, and always
 * against a fixed schema using every supported keyword. */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "server/mcp/schema.h"

static const char *const RICH =
	"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"s\"],"
	"\"properties\":{\"s\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":8},"
	"\"e\":{\"enum\":[\"a\",1,null,[1]]},\"n\":{\"type\":\"integer\",\"minimum\":-5,\"maximum\":5},"
	"\"x\":{\"type\":[\"number\",\"null\"]},\"b\":{\"type\":\"boolean\"},"
	"\"l\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":4,\"items\":{\"$ref\":\"#/$defs/o\"}},"
	"\"m\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}},"
	"\"$defs\":{\"o\":{\"type\":\"object\",\"properties\":{\"k\":{\"type\":\"string\"}}}}}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct schema *rich;
	const char *nl = memchr(data, '\n', size);
	size_t slen = nl ? (size_t)(nl - (const char *)data) : size;
	struct kf_err err = {0};
	struct schema *s = NULL;
	char *text;
	json_t *value = NULL;

	if (!rich && schema_parse(RICH, &rich, &err))
		__builtin_trap();
	text = strndup((const char *)data, slen);
	if (!text)
		return 0;
	if (schema_parse(text, &s, &err) != 0) {
		assert(s == NULL && err.code == KF_EINVAL && err.msg[0]);
	}
	if (nl)
		value = json_loadb(nl + 1, size - slen - 1, JSON_DECODE_ANY, NULL);
	if (value) {
		kf_err_clear(&err);
		if (s && schema_validate(s, value, "v", &err))
			assert(err.code == KF_EINVAL && err.msg[0]);
		kf_err_clear(&err);
		if (schema_validate(rich, value, "arguments", &err))
			assert(strncmp(err.msg, "arguments", 9) == 0);
	}
	json_decref(value);
	schema_free(s);
	free(text);
	return 0;
}
