/* tools_compile_json: the compile_kernel answer written from struct
 * compile_result (sandbox/compile/compile.h). See tools_compile_int.h. */
#include "server/tools/tools_compile_int.h"

#include <stdio.h>
#include <string.h>

#include "server/mcp/mcp.h"
static json_t *timeout_json(const struct compile_result *res, const char *sum)
{
	json_t *o = json_object();
	json_object_set_new(o, "summary", json_string(sum));
	json_object_set_new(o, "ok", json_false());
	json_object_set_new(o, "arch", json_string(res->arch));
	json_object_set_new(o, "sandbox", json_string(res->sandbox));
	json_object_set_new(o, "timed_out", json_true());
	json_object_set_new(o, "timeout_ms", json_integer(res->timeout_ms));
	json_object_set_new(o, "error", mcp_error_member("timeout", sum));
	if (res->log_tail)
		json_object_set_new(o, "log_tail", json_string(res->log_tail));
	return o;
}

static json_t *mem_limit_json(const struct compile_result *res, const char *sum)
{
	json_t *o = json_object();
	json_object_set_new(o, "summary", json_string(sum));
	json_object_set_new(o, "ok", json_false());
	json_object_set_new(o, "arch", json_string(res->arch));
	json_object_set_new(o, "sandbox", json_string(res->sandbox));
	json_object_set_new(o, "memory_limited", json_true());
	json_object_set_new(o, "memory_limit_bytes",
			    json_integer((json_int_t)res->memory_limit_bytes));
	json_object_set_new(o, "error", mcp_error_member("compile_error", sum));
	if (res->log_tail)
		json_object_set_new(o, "log_tail", json_string(res->log_tail));
	return o;
}

json_t *tools_compile_json(const struct compile_result *res)
{
	char sum[600];
	if (!res->timed_out && !res->memory_limited && !res->report)
		return NULL;
	compile_summary(res, sum, sizeof sum);
	if (res->timed_out)
		return timeout_json(res, sum);
	if (res->memory_limited)
		return mem_limit_json(res, sum);
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "summary", json_string(sum));
	const char *key;
	json_t *v;
	json_object_foreach(res->report, key, v) {
		json_object_set(o, key, v);
		if (!strcmp(key, "ok")) {
			json_object_set_new(o, "arch", json_string(res->arch));
			json_object_set_new(o, "sandbox", json_string(res->sandbox));
			json_object_set_new(o, "cache_hit", json_boolean(res->cache_hit));
			json_object_set_new(o, "compile_ms", json_integer(res->compile_ms));
			json_object_set_new(o, "artifact_id", json_string(res->artifact_id));
		}
	}
	if (res->want_ptx) {
		if (res->ptx_bytes >= 0) {
			char uri[128];
			snprintf(uri, sizeof uri, "kforge://artifacts/%s/ptx", res->artifact_id);
			json_object_set_new(o, "ptx",
					    json_pack("{s:s, s:I, s:s}", "uri", uri, "bytes",
						      (json_int_t)res->ptx_bytes, "mime_type",
						      "text/plain"));
		} else {
			json_object_set_new(o, "ptx", json_null());
		}
	}
	if (res->sass)
		json_object_set(o, "sass", res->sass);
	return o;
}
