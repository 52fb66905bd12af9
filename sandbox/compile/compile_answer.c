/* compile_answer: what compile_kernel reports besides the compiler's
 * report: the one-line verdict (kernels and their resources, the first
 * error with its place, or the timeout), the kept PTX and the SASS summary
 * when asked for. The JSON answer is written by the tool layer
 * (server/tools/tools_compile_json.c). */
#include "sandbox/compile/compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sandbox/compile/compile_int.h"

/* Text that is not valid UTF-8 (a message cut inside a character, bytes
 * from the compiler) has its bytes >= 0x80 and control characters replaced
 * by '?', as compile_json_text does: the verdict is always valid text. */
static void valid_text(char *s)
{
	json_t *j = json_string(s);
	if (j) {
		json_decref(j);
		return;
	}
	for (char *p = s; *p; p++)
		if ((unsigned char)*p >= 0x80 || (unsigned char)*p < 0x20)
			*p = '?';
}

/* "ok: 2 kernels for sm_90 — k: 32 regs, 0 B smem; ...; 1 warning". */
static void summary_ok(const struct compile_result *res, char *sum, size_t cap)
{
	const json_t *ks = json_object_get(res->report, "kernels");
	const json_t *ws = json_object_get(res->report, "warnings");
	int n = snprintf(sum, cap, "ok: %zu kernel%s for %s", json_array_size(ks),
			 json_array_size(ks) == 1 ? "" : "s", res->arch);
	size_t i;
	const json_t *k;
	json_array_foreach(ks, i, k) {
		if (n >= (int)cap - 80 || i >= 4)
			break;
		n += snprintf(sum + n, cap - (size_t)n, "%s %s: %lld regs, %lld B smem%s",
			      i ? ";" : " —", json_string_value(json_object_get(k, "name")),
			      json_integer_value(json_object_get(k, "registers")),
			      json_integer_value(json_object_get(k, "shared_static_bytes")),
			      json_integer_value(json_object_get(k, "spill_store_bytes"))
				      ? ", SPILLS"
				      : "");
	}
	if (n < (int)cap - 40)
		snprintf(sum + n, cap - (size_t)n, "; %zu warning%s%s", json_array_size(ws),
			 json_array_size(ws) == 1 ? "" : "s", res->cache_hit ? " (cached)" : "");
}

/* "compile failed for sm_90: 1 error; first: kernel.cu:3: MSG". */
static void summary_failed(const struct compile_result *res, char *sum, size_t cap)
{
	const json_t *first = NULL;
	size_t i;
	const json_t *d;
	json_array_foreach(json_object_get(res->report, "diagnostics"), i, d) {
		if (!strcmp(json_string_value(json_object_get(d, "severity")), "error")) {
			first = d;
			break;
		}
	}
	long long ne = json_integer_value(json_object_get(res->report, "errors"));
	if (!first) {
		snprintf(sum, cap, "compile failed for %s", res->arch);
		return;
	}
	const json_t *f = json_object_get(first, "file");
	json_int_t line = json_integer_value(json_object_get(first, "line"));
	char where[300] = "";
	if (json_is_string(f) && line > 0)
		snprintf(where, sizeof where, "%.200s:%lld: ", json_string_value(f),
			 (long long)line);
	else if (json_is_string(f))
		snprintf(where, sizeof where, "%.200s: ", json_string_value(f));
	snprintf(sum, cap, "compile failed for %s: %lld error%s; first: %s%.300s", res->arch, ne,
		 ne == 1 ? "" : "s", where, json_string_value(json_object_get(first, "message")));
}

void compile_summary(const struct compile_result *res, char *buf, size_t cap)
{
	/* Worded in a fixed 600 bytes so the sentence does not depend on cap. */
	char sum[600];
	if (res->timed_out)
		snprintf(sum, 256,
			 "compile timed out after %u ms for %s: the compiler was killed (runaway "
			 "template recursion or constexpr evaluation?)",
			 res->timeout_ms, res->arch);
	else if (res->memory_limited)
		snprintf(sum, 320,
			 "compile failed for %s: the compiler ran out of memory at its %llu MiB "
			 "limit (address space per compiler process; the operator sets it with "
			 "KFORGE_COMPILE_MEM_MB). Large initialized __device__ arrays or runaway "
			 "unrolling need more",
			 res->arch, res->memory_limit_bytes >> 20);
	else if (json_is_true(json_object_get(res->report, "ok")))
		summary_ok(res, sum, sizeof sum);
	else
		summary_failed(res, sum, sizeof sum);
	valid_text(sum);
	snprintf(buf, cap, "%s", sum);
}

void compile_answer_fill(struct compiler *cc, struct compile_result *res, int want_ptx,
			 int want_sass)
{
	res->want_ptx = want_ptx;
	res->ptx_bytes = -1;
	char p[4200];
	struct stat st;
	if (want_ptx && res->ok &&
	    compile_artifact_path(cc, res->artifact_id, "ptx", p, sizeof p, NULL) == 0 &&
	    stat(p, &st) == 0)
		res->ptx_bytes = (long long)st.st_size;
	if (want_sass && res->ok)
		res->sass = compile_sass_json(cc, res->artifact_id);
}

/* What the compiler said before it was stopped: path-cleaned, valid
 * text, at most 2000 bytes (new), or NULL. */
static char *answer_log_tail(const struct compile_parse_in *in)
{
	char *clean = in->log ? compile_clean_log(in) : NULL;
	if (clean) {
		if (strlen(clean) > 2000)
			clean[2000] = 0;
		valid_text(clean);
	}
	return clean;
}

void compile_answer_timeout(const struct compile_parse_in *in, unsigned timeout_ms,
			    struct compile_result *res)
{
	res->timed_out = 1;
	res->timeout_ms = timeout_ms;
	res->log_tail = answer_log_tail(in);
}

void compile_answer_mem_limit(const struct compile_parse_in *in, unsigned long long mem_bytes,
			      struct compile_result *res)
{
	res->memory_limited = 1;
	res->memory_limit_bytes = mem_bytes;
	res->log_tail = answer_log_tail(in);
}
