/* cli_compile: `kforge compile FILE.cu [--arch sm_90] [--flags "..."]
 * [--ptx] [--sass] [--json]`. Calls the compile_kernel tool through
 * mcp_tool_call and prints diagnostics the way compilers do
 * (file:line:col: severity: message, the source line, a caret), then one
 * row per kernel, the warnings and the artifact id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/cli/cli.h"
#include "server/cli/cli_opts.h"
#include "server/mcp/mcp.h"
#include "sandbox/compile/compile.h"

/* compile's options, each a compile_kernel argument whose schema gives the
 * lengths and description (cli_opts.h). */
static const struct cli_opt COMPILE_OPT_TABLE[] = {
	{"--arch", "arch", CLI_OPT_VALUE, "ARCH", NULL},
	{"--flags", "flags", CLI_OPT_VALUE, "FLAGS",
	 "nvcc flags from the allowlist, split on blanks (e.g. \"-O3 --use_fast_math "
	 "-maxrregcount=64 -D TILE=32\")"},
	{"--ptx", "want_ptx", CLI_OPT_TRUE, NULL,
	 "keep the PTX; prints its kforge://artifacts/ID/ptx link"},
	{"--sass", "want_sass", CLI_OPT_TRUE, NULL, "SASS summary (where cuobjdump exists)"},
	{NULL, NULL, CLI_OPT_VALUE, NULL, NULL},
};

static const struct cli_opts COMPILE_OPTS = {"compile_kernel", COMPILE_OPT_TABLE};

static const char COMPILE_USAGE[] =
	"usage: kforge compile FILE.cu [--arch sm_XX[a]] [--flags \"FLAGS\"] [--ptx] [--sass] [options]\n"
	"\n"
	"Compiles CUDA device code to a cubin in the sandbox (nvcc --cubin or\n"
	"NVRTC; no host pass) and prints diagnostics, per-kernel resources\n"
	"(registers, shared/constant/local memory, spills, launch bounds,\n"
	"occupancy) and warnings. Results are cached by content. FILE '-' reads\n"
	"standard input. Exit status: 0 compiled, 1 compile error, 2 usage.\n"
	"\n"
	"Options (from compile_kernel's input schema):\n";

static const char COMPILE_USAGE_TAIL[] =
	"\n" CLI_COMMON_HELP "\n"
	"Examples:\n"
	"  kforge compile rmsnorm.cu --arch sm_90a\n"
	"  kforge compile k.cu --flags \"-lineinfo -Xptxas -O3\" --json\n";

/* Reads path (or stdin for "-") up to the source cap plus one byte. */
static char *read_source(const char *path, size_t *len, int *too_big)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	*too_big = 0;
	if (!f)
		return NULL;
	size_t cap = COMPILE_SOURCE_MAX_BYTES + 1;
	char *buf = malloc(cap + 1);
	size_t n = buf ? fread(buf, 1, cap, f) : 0;
	if (f != stdin)
		fclose(f);
	if (!buf)
		return NULL;
	if (n == cap)
		*too_big = 1;
	buf[n] = 0;
	*len = n;
	return buf;
}

static void print_diags(FILE *f, const json_t *diags)
{
	size_t i;
	json_t *d;
	json_array_foreach(diags, i, d) {
		const char *file = json_string_value(json_object_get(d, "file"));
		json_int_t line = json_integer_value(json_object_get(d, "line"));
		json_int_t col = json_integer_value(json_object_get(d, "column"));
		fprintf(f, "%s", file ? file : "kforge");
		if (line)
			fprintf(f, ":%lld", (long long)line);
		if (col)
			fprintf(f, ":%lld", (long long)col);
		fprintf(f, ": %s: %s\n", json_string_value(json_object_get(d, "severity")),
			json_string_value(json_object_get(d, "message")));
		const char *src = json_string_value(json_object_get(d, "source_line"));
		if (src) {
			fprintf(f, "  %s\n", src);
			if (col > 0 && col < 400)
				fprintf(f, "  %*s^\n", (int)col - 1, "");
		}
	}
}

static void print_kernels(FILE *f, const json_t *ks)
{
	size_t i;
	json_t *k;
	if (!json_array_size(ks))
		return;
	fprintf(f, "%-32s %5s %9s %7s %7s %11s %-9s %s\n", "kernel", "regs", "smem(B)", "cmem(B)",
		"local", "spill st/ld", "bounds", "occupancy 128/256/512/1024");
	json_array_foreach(ks, i, k) {
		char bounds[32] = "-", occ[64] = "-", cm[16] = "-";
		json_t *lb = json_object_get(k, "launch_bounds");
		if (json_is_object(lb) && json_is_integer(json_object_get(lb, "max_threads")))
			snprintf(bounds, sizeof bounds, "%lld",
				 (long long)json_integer_value(json_object_get(lb, "max_threads")));
		json_t *c = json_object_get(k, "const_bytes");
		if (json_is_integer(c))
			snprintf(cm, sizeof cm, "%lld", (long long)json_integer_value(c));
		json_t *oc = json_object_get(k, "occupancy");
		if (json_is_array(oc)) {
			size_t j, n = 0;
			json_t *o;
			json_array_foreach(oc, j, o)
				n += (size_t)snprintf(
					occ + n, sizeof occ - n, "%s%.0f%%", j ? "/" : "",
					100 * json_number_value(json_object_get(o, "occupancy")));
		}
		fprintf(f, "%-32.64s %5lld %9lld %7s %7lld %5lld/%-5lld %-9s %s\n",
			json_string_value(json_object_get(k, "name")),
			(long long)json_integer_value(json_object_get(k, "registers")),
			(long long)json_integer_value(json_object_get(k, "shared_static_bytes")),
			cm, (long long)json_integer_value(json_object_get(k, "local_bytes")),
			(long long)json_integer_value(json_object_get(k, "spill_store_bytes")),
			(long long)json_integer_value(json_object_get(k, "spill_load_bytes")),
			bounds, occ);
	}
}

/* The answer the way compilers print: diagnostics, the summary, per-kernel
 * resources, warnings, SASS hints, the PTX link and the artifact. */
static void print_result(FILE *out, const json_t *res)
{
	print_diags(out, json_object_get(res, "diagnostics"));
	fprintf(out, "%s\n", json_string_value(json_object_get(res, "summary")));
	print_kernels(out, json_object_get(res, "kernels"));
	size_t i;
	json_t *w;
	json_array_foreach(json_object_get(res, "warnings"), i, w)
		fprintf(out, "warning: %s\n", json_string_value(w));
	json_t *sass = json_object_get(res, "sass");
	if (json_is_object(sass)) {
		if (json_is_true(json_object_get(sass, "available"))) {
			json_t *k;
			json_array_foreach(json_object_get(sass, "kernels"), i, k) {
				size_t j;
				json_t *h;
				json_array_foreach(json_object_get(k, "hints"), j, h)
					fprintf(out, "sass %s: %s\n",
						json_string_value(json_object_get(k, "name")),
						json_string_value(h));
			}
			fprintf(out, "sass listing: %s\n",
				json_string_value(json_object_get(sass, "listing")));
		} else {
			fprintf(out, "sass: %s\n",
				json_string_value(json_object_get(sass, "reason")));
		}
	}
	json_t *ptx = json_object_get(res, "ptx");
	if (json_is_object(ptx))
		fprintf(out, "ptx: %s\n", json_string_value(json_object_get(ptx, "uri")));
	const char *id = json_string_value(json_object_get(res, "artifact_id"));
	if (id)
		fprintf(out, "artifact: %s (%s, %lld ms, sandbox %s%s)\n", id,
			json_string_value(json_object_get(res, "backend")),
			(long long)json_integer_value(json_object_get(res, "compile_ms")),
			json_string_value(json_object_get(res, "sandbox")),
			json_is_true(json_object_get(res, "cache_hit")) ? ", cached" : "");
}

static int compile_main(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};
	const char *file = NULL;
	json_t *args;

	cli_common_init(&co);
	if (cli_common_parse(&co, &argc, argv, &err))
		return cli_usage_error("compile", "%s", err.msg);
	args = json_object();
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int rc = cli_opts_take(&COMPILE_OPTS, argc, argv, &i, args, &err);
		if (rc > 0)
			continue;
		if (rc < 0)
			rc = cli_usage_error("compile", "%s", err.msg);
		else if (a[0] == '-' && a[1])
			rc = cli_usage_error("compile", "unknown option '%s'", a);
		else if (file)
			rc = cli_usage_error("compile", "one source file at a time ('%s' and '%s')",
					     file, a);
		else
			file = a;
		if (rc) {
			json_decref(args);
			return rc;
		}
	}
	if (!file) {
		json_decref(args);
		return cli_usage_error("compile", "missing FILE.cu");
	}
	size_t len = 0;
	int too_big = 0;
	char *src = read_source(file, &len, &too_big);
	if (!src || too_big) {
		json_decref(args);
		free(src);
		if (too_big)
			fprintf(stderr, "kforge compile: '%s' is over the 1 MiB source cap\n",
				file);
		else
			fprintf(stderr, "kforge compile: cannot read '%s'\n", file);
		return CLI_EXIT_FAIL;
	}
	json_object_set_new(args, "source", json_stringn(src, len));
	free(src);
	if (!json_object_get(args, "source")) {
		json_decref(args);
		fprintf(stderr, "kforge compile: '%s' is not UTF-8 text\n", file);
		return CLI_EXIT_FAIL;
	}
	if (co.json)
		return cli_tool_run(&co, "compile_kernel", args);

	json_t *res;
	int is_error, rc = cli_tool_call(&co, "compile_kernel", args, &res, &is_error);
	if (rc)
		return rc;
	print_result(is_error ? stderr : stdout, res);
	rc = cli_answer_exit(res, is_error);
	json_decref(res);
	return rc;
}

const struct cli_cmd CLI_COMPILE[] = {
	{"compile", "compile CUDA device code in the sandbox: diagnostics, resources, occupancy",
	 COMPILE_USAGE, compile_main, &COMPILE_OPTS, COMPILE_USAGE_TAIL},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
