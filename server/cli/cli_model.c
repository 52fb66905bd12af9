/* cli_model: `kforge model-bench`, the benchmark_model tool from the
 * command line: options become the tool's arguments (checked again by the
 * tool, which gives the field-level messages), the result prints as a
 * table or, with --json, as the structuredContent. */
#include <stdlib.h>
#include <string.h>

#include "server/cli/cli.h"
#include "server/cli/cli_opts.h"

/* The options, those bound to a benchmark_model argument taking its type,
 * bounds and default from the schema (cli_opts.h); the rest are written
 * the CLI's way (NAME=VALUE, prefill:BxS, a file) and parsed here. */
static const struct cli_opt MODEL_OPT_TABLE[] = {
	{"--dim", NULL, CLI_OPT_OWN, "NAME=N",
	 "a dimension (layers, hidden, intermediate, heads, kv_heads, head_dim, vocab; dit: "
	 "ff_mult, activation=geglu|gelu_tanh); repeatable"},
	{"--patch", NULL, CLI_OPT_OWN, "TARGET=OP",
	 "module class or name glob -> op; repeatable (default: the recipe's)"},
	{"--compile-patch", NULL, CLI_OPT_OWN, "TARGET=OP",
	 "the patch under torch.compile; repeatable"},
	{"--shape", NULL, CLI_OPT_OWN, "KIND:BxN",
	 "prefill:BxS or decode:BxP (P: tokens already cached); repeatable"},
	{"--modes", "modes", CLI_OPT_VALUE, "M,M,..",
	 "eager, patched, compile, patched_compile, graphs, patched_graphs"},
	{"--iters", "iters", CLI_OPT_VALUE, "N", "timed repetitions per mode"},
	{"--timeout", "timeout_s", CLI_OPT_VALUE, "S", "wall-clock limit of the job, seconds"},
	{"--no-profile", "profile", CLI_OPT_FALSE, NULL, "skip the per-op profile"},
	{"--no-fp32-check", "fp32_check", CLI_OPT_FALSE, NULL,
	 "skip the comparison with an fp32 run"},
	{"--args", NULL, CLI_OPT_OWN, "FILE.json",
	 "the tool's arguments as JSON (options override)"},
	{NULL, NULL, CLI_OPT_VALUE, NULL, NULL},
};

static const struct cli_opts MODEL_OPTS = {"benchmark_model", MODEL_OPT_TABLE};

#define MODEL_USAGE                                                                     \
	"usage: kforge model-bench RECIPE [options]\n"                                  \
	"Builds a model with random weights (RECIPE: qwen3, llama or dit; nothing is\n" \
	"downloaded), swaps modules for kforge's torch ops and times it against the\n"  \
	"unpatched model: eager, torch.compile, CUDA graphs (decode). Needs a GPU\n"    \
	"and python3 with torch (and transformers for qwen3/llama).\n"                  \
	"Options (bounds and defaults from benchmark_model's input schema):\n"

#define MODEL_USAGE_TAIL \
	CLI_COMMON_HELP  \
	"Example:\n"     \
	"  kforge model-bench qwen3 --dim layers=2 --shape prefill:1x512\n"

/* "NAME=VALUE" into obj[NAME] (VALUE an integer when it is one). */
static int kv_into(const char *opt, const char *v, json_t *obj, int numeric)
{
	const char *eq = strchr(v, '=');
	if (!eq || eq == v || !eq[1])
		return cli_usage_error("model-bench", "%s '%s': expected NAME=VALUE", opt, v);
	char key[256];
	snprintf(key, sizeof key, "%.*s", (int)(eq - v), v);
	char *end;
	long long n = strtoll(eq + 1, &end, 10);
	if (numeric && *end == 0)
		json_object_set_new(obj, key, json_integer(n));
	else
		json_object_set_new(obj, key, json_string(eq + 1));
	return 0;
}

/* "prefill:BxS" or "decode:BxP" appended to shapes. */
static int shape_into(const char *v, json_t *shapes)
{
	char kind[16];
	long long b, n;
	int used = 0;
	if (sscanf(v, "%15[a-z]:%lldx%lld%n", kind, &b, &n, &used) != 3 || v[used] ||
	    (strcmp(kind, "prefill") && strcmp(kind, "decode")))
		return cli_usage_error("model-bench",
				       "--shape '%s': expected prefill:BxS or decode:BxP", v);
	int dec = strcmp(kind, "decode") == 0;
	json_array_append_new(shapes,
			      json_pack("{s:s, s:I, s:I}", "kind", kind, "batch", (json_int_t)b,
					dec ? "past" : "seq", (json_int_t)n));
	return 0;
}

static json_t *sub(json_t *args, const char *key, int array)
{
	json_t *o = json_object_get(args, key);
	if (!o) {
		o = array ? json_array() : json_object();
		json_object_set_new(args, key, o);
	}
	return o;
}

static int load_args(const char *path, json_t **args)
{
	json_error_t je;
	json_t *a = json_load_file(path, 0, &je);
	if (!json_is_object(a)) {
		json_decref(a);
		return cli_usage_error("model-bench", "--args %s: %s", path,
				       a ? "expected a JSON object" : je.text);
	}
	json_object_update(*args, a);
	json_decref(a);
	return 0;
}

static int model_main(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};
	cli_common_init(&co);
	if (cli_common_parse(&co, &argc, argv, &err))
		return cli_usage_error("model-bench", "%s", err.msg);
	json_t *args = json_object(), *opts = json_object();
	int rc = 0;
	for (int i = 1; i < argc && !rc; i++) {
		int missing = 0, t;
		const char *v;
		if ((v = cli_opt_value(argc, argv, &i, "--dim", &missing)))
			rc = kv_into("--dim", v, sub(opts, "dims", 0), 1);
		else if ((v = cli_opt_value(argc, argv, &i, "--patch", &missing)))
			rc = kv_into("--patch", v, sub(opts, "patch", 0), 0);
		else if ((v = cli_opt_value(argc, argv, &i, "--compile-patch", &missing)))
			rc = kv_into("--compile-patch", v, sub(opts, "compile_patch", 0), 0);
		else if ((v = cli_opt_value(argc, argv, &i, "--shape", &missing)))
			rc = shape_into(v, sub(opts, "shapes", 1));
		else if ((v = cli_opt_value(argc, argv, &i, "--args", &missing)))
			rc = load_args(v, &args);
		else if (!missing && (t = cli_opts_take(&MODEL_OPTS, argc, argv, &i, opts, &err)))
			rc = t < 0 ? cli_usage_error("model-bench", "%s", err.msg) : 0;
		else if (missing || argv[i][0] == '-')
			rc = cli_usage_error("model-bench", "unknown option or missing value: %s",
					     argv[i]);
		else if (json_object_get(opts, "recipe"))
			rc = cli_usage_error("model-bench", "one RECIPE only (got '%s')", argv[i]);
		else
			json_object_set_new(opts, "recipe", json_string(argv[i]));
	}
	if (!rc)
		json_object_update(args, opts);
	json_decref(opts);
	if (!rc && !json_object_get(args, "recipe"))
		rc = cli_usage_error("model-bench", "RECIPE missing (qwen3, llama or dit)");
	if (rc) {
		json_decref(args);
		return rc;
	}
	return cli_tool_run(&co, "benchmark_model", args);
}

const struct cli_cmd CLI_MODEL[] = {
	{"model-bench", "time a model with kforge's ops swapped in (eager, compile, graphs)",
	 MODEL_USAGE, model_main, &MODEL_OPTS, MODEL_USAGE_TAIL},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
