/* compile_answer: the compile_kernel answer built from the parsed result:
 * the one-line summary first (kernels and their resources, or the first
 * error with its place), the run's facts (arch, sandbox, cache hit, time,
 * artifact id), the PTX link and the SASS summary when asked for; and the
 * answer for a compile killed at its time limit. */
#include "sandbox/compile/compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sandbox/compile/compile_int.h"

json_t *compile_timeout_json(const struct compile_parse_in *in, const char *arch,
			     const char *sandbox, unsigned timeout_ms)
{
	char s[256];
	snprintf(s, sizeof s,
		 "compile timed out after %u ms for %s: the compiler was killed (runaway "
		 "template recursion or constexpr evaluation?)",
		 timeout_ms, arch);
	json_t *o = json_object();
	json_object_set_new(o, "summary", json_string(s));
	json_object_set_new(o, "ok", json_false());
	json_object_set_new(o, "arch", json_string(arch));
	json_object_set_new(o, "sandbox", json_string(sandbox));
	json_object_set_new(o, "timed_out", json_true());
	json_object_set_new(o, "timeout_ms", json_integer(timeout_ms));
	json_t *e = json_object();
	json_object_set_new(e, "code", json_string("timeout"));
	json_object_set_new(e, "message", json_string(s));
	json_object_set_new(o, "error", e);
	/* What the compiler said before it was killed, path-cleaned. */
	char *clean = in->log ? compile_clean_log(in) : NULL;
	if (clean) {
		size_t n = strlen(clean);
		if (n > 2000)
			clean[2000] = 0;
		json_object_set_new(o, "log_tail", compile_json_text(n > 2000 ? clean : clean));
	}
	free(clean);
	return o;
}

json_t *compile_mem_limit_json(const struct compile_parse_in *in, const char *arch,
			       const char *sandbox, unsigned long long mem_bytes)
{
	char s[320];
	snprintf(s, sizeof s,
		 "compile failed for %s: the compiler ran out of memory at its %llu MiB limit "
		 "(address space per compiler process; the operator sets it with "
		 "KFORGE_COMPILE_MEM_MB). Large initialized __device__ arrays or runaway "
		 "unrolling need more",
		 arch, mem_bytes >> 20);
	json_t *o = json_object();
	json_object_set_new(o, "summary", json_string(s));
	json_object_set_new(o, "ok", json_false());
	json_object_set_new(o, "arch", json_string(arch));
	json_object_set_new(o, "sandbox", json_string(sandbox));
	json_object_set_new(o, "memory_limited", json_true());
	json_object_set_new(o, "memory_limit_bytes", json_integer((json_int_t)mem_bytes));
	json_t *e = json_object();
	json_object_set_new(e, "code", json_string("compile_error"));
	json_object_set_new(e, "message", json_string(s));
	json_object_set_new(o, "error", e);
	char *clean = in->log ? compile_clean_log(in) : NULL;
	if (clean) {
		if (strlen(clean) > 2000)
			clean[2000] = 0;
		json_object_set_new(o, "log_tail", compile_json_text(clean));
	}
	free(clean);
	return o;
}

json_t *compile_answer_json(const json_t *base, const struct compile_result *res,
			    const char *sandbox, int want_ptx, const struct sass_summary_ctx *sctx)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	char sum[600];
	int ok = json_is_true(json_object_get(base, "ok"));
	json_t *ks = json_object_get(base, "kernels");
	json_t *ds = json_object_get(base, "diagnostics");
	json_t *ws = json_object_get(base, "warnings");
	if (ok) {
		int n = snprintf(sum, sizeof sum, "ok: %zu kernel%s for %s", json_array_size(ks),
				 json_array_size(ks) == 1 ? "" : "s", res->arch);
		size_t i;
		json_t *k;
		json_array_foreach(ks, i, k) {
			if (n >= (int)sizeof sum - 80 || i >= 4)
				break;
			n += snprintf(sum + n, sizeof sum - (size_t)n,
				      "%s %s: %lld regs, %lld B smem%s", i ? ";" : " —",
				      json_string_value(json_object_get(k, "name")),
				      json_integer_value(json_object_get(k, "registers")),
				      json_integer_value(json_object_get(k, "shared_static_bytes")),
				      json_integer_value(json_object_get(k, "spill_store_bytes"))
					      ? ", SPILLS"
					      : "");
		}
		if (n < (int)sizeof sum - 40)
			snprintf(sum + n, sizeof sum - (size_t)n, "; %zu warning%s%s",
				 json_array_size(ws), json_array_size(ws) == 1 ? "" : "s",
				 res->cache_hit ? " (cached)" : "");
	} else {
		json_t *first = NULL;
		size_t i;
		json_t *d;
		json_array_foreach(ds, i, d) {
			if (!strcmp(json_string_value(json_object_get(d, "severity")), "error")) {
				first = d;
				break;
			}
		}
		long long ne = json_integer_value(json_object_get(base, "errors"));
		if (first) {
			json_t *f = json_object_get(first, "file");
			json_int_t line = json_integer_value(json_object_get(first, "line"));
			char where[300] = "";
			if (json_is_string(f) && line > 0)
				snprintf(where, sizeof where, "%.200s:%lld: ", json_string_value(f),
					 (long long)line);
			else if (json_is_string(f))
				snprintf(where, sizeof where, "%.200s: ", json_string_value(f));
			snprintf(sum, sizeof sum,
				 "compile failed for %s: %lld error%s; first: %s%.300s", res->arch,
				 ne, ne == 1 ? "" : "s", where,
				 json_string_value(json_object_get(first, "message")));
		} else {
			snprintf(sum, sizeof sum, "compile failed for %s", res->arch);
		}
	}
	json_object_set_new(o, "summary", compile_json_text(sum));
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)base, key, v) {
		json_object_set(o, key, v);
		if (!strcmp(key, "ok")) {
			json_object_set_new(o, "arch", json_string(res->arch));
			json_object_set_new(o, "sandbox", json_string(sandbox));
			json_object_set_new(o, "cache_hit", json_boolean(res->cache_hit));
			json_object_set_new(o, "compile_ms", json_integer(res->compile_ms));
			json_object_set_new(o, "artifact_id", json_string(res->artifact_id));
		}
	}
	if (want_ptx) {
		char p[4200];
		struct stat st;
		if (ok &&
		    compile_artifact_path(sctx->cc, res->artifact_id, "ptx", p, sizeof p, NULL) ==
			    0 &&
		    stat(p, &st) == 0) {
			json_t *l = json_object();
			char uri[128];
			snprintf(uri, sizeof uri, "kforge://artifacts/%s/ptx", res->artifact_id);
			json_object_set_new(l, "uri", json_string(uri));
			json_object_set_new(l, "bytes", json_integer(st.st_size));
			json_object_set_new(l, "mime_type", json_string("text/plain"));
			json_object_set_new(o, "ptx", l);
		} else {
			json_object_set_new(o, "ptx", json_null());
		}
	}
	if (sctx->want)
		json_object_set_new(o, "sass", compile_sass_json(sctx->cc, sctx->id));
	return o;
}
