/* cli_kb: `kforge gpu` and `kforge guide` — the knowledge base from the
 * shell, through the same tools an agent calls (get_gpu_specs,
 * search_guides, read_guide). Readable tables by default, the
 * structuredContent JSON with --json. */
#include "server/cli/cli.h"
#include "server/cli/cli_opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/mcp.h"
#include "server/mcp/tools.h"

/* gpu's options: those bound to a get_gpu_specs argument take their type
 * and bounds from its schema (cli_opts.h); --full, --list and --compare
 * choose the request's shape and are read by gpu_parse. */
static const struct cli_opt GPU_OPT_TABLE[] = {
	{"--full", NULL, CLI_OPT_OWN, NULL,
	 "every figure with its label and unit, every derived figure with its formula, the "
	 "feature rules, notes and source titles"},
	{"--fields", "fields", CLI_OPT_VALUE, "F,..",
	 "only these figures, derived figures or sections (features, notes, conflicts, "
	 "aliases), with their sources"},
	{"--list", NULL, CLI_OPT_OWN, NULL, "every GPU, one line each"},
	{"--compare", NULL, CLI_OPT_OWN, "A B..", "2 to 4 GPUs side by side"},
	{"--arch", "arch", CLI_OPT_VALUE, "TARGET",
	 "target for feature usability (default the GPU's best: sm_90a on Hopper, sm_100a on "
	 "B200...)"},
	{"--block", "occupancy.block_threads", CLI_OPT_VALUE, "N",
	 "occupancy for blocks of N threads"},
	{"--regs", "occupancy.regs_per_thread", CLI_OPT_VALUE, "R",
	 "with --block: registers per thread"},
	{"--smem", "occupancy.smem_per_block_bytes", CLI_OPT_VALUE, "BYTES",
	 "with --block: shared memory per block"},
	{NULL, NULL, CLI_OPT_VALUE, NULL, NULL},
};

static const struct cli_opts GPU_OPTS = {"get_gpu_specs", GPU_OPT_TABLE};

static const char GPU_USAGE[] =
	"usage: kforge gpu NAME [--full | --fields F,..] [--arch TARGET]\n"
	"                  [--block N [--regs R] [--smem BYTES]] [--json]\n"
	"       kforge gpu --list [--json]\n"
	"       kforge gpu --compare A B [C [D]] [--full | --fields F,..] [--json]\n"
	"       kforge gpu local [--full] [--json]\n"
	"\n"
	"GPU facts from kforge's sourced table. NAME is a name or alias: h100,\n"
	"'H100 SXM', a100-80g-pcie, h200, b200, 'rtx 4090', 4090, t4, sm_90, hopper.\n"
	"An alias naming several GPUs (h100, sm_90, hopper) shows the canonical pick\n"
	"and lists the others. The answer is brief by default, as get_gpu_specs\n"
	"gives it to an agent: the figures kernel work uses most, each with its\n"
	"source keys (see docs/knowledge.md), a few derived figures and the usable\n"
	"features. '-' means not confirmed by a source, 'n/a' that the format does\n"
	"not exist there. Derived figures are marked 'derived'.\n"
	"  local            the GPUs of this host, read from the CUDA driver, matched\n"
	"                   to the table (exit 3 when there is no GPU)\n"
	"\n"
	"Options (bounds from get_gpu_specs's input schema):\n";

static const char GPU_USAGE_TAIL[] =
	"\n" CLI_COMMON_HELP "\n"
	"Examples:\n"
	"  kforge gpu h100\n"
	"  kforge gpu h100 --full\n"
	"  kforge gpu h200 --fields memory_bandwidth_gbs,smem_per_sm_kb\n"
	"  kforge gpu --compare a100 h100 h200\n"
	"  kforge gpu h100 --block 256 --regs 128 --smem 49152\n";

/* guide search's options, each a search_guides argument. */
static const struct cli_opt GUIDE_OPT_TABLE[] = {
	{"--arch", "arch", CLI_OPT_VALUE, "TARGET",
	 "only guides for this target or GPU (sm_90, h100, hopper)"},
	{"--tag", "tag", CLI_OPT_VALUE, "TAG", "only guides with this tag"},
	{"--limit", "limit", CLI_OPT_VALUE, "N", "at most N hits"},
	{NULL, NULL, CLI_OPT_VALUE, NULL, NULL},
};

static const struct cli_opts GUIDE_OPTS = {"search_guides", GUIDE_OPT_TABLE};

static const char GUIDE_USAGE[] =
	"usage: kforge guide search WORDS [--arch TARGET] [--tag TAG] [--limit N] [--json]\n"
	"       kforge guide read ID [--json]\n"
	"       kforge guide list [--json]\n"
	"\n"
	"Search and read kforge's CUDA optimization guides.\n"
	"  search WORDS     ranked full-text search (BM25; titles weigh more)\n"
	"  read ID          one guide, whole, with its sources\n"
	"  list             every guide id and title\n"
	"\n"
	"Options of search (bounds and defaults from search_guides's input schema):\n";

static const char GUIDE_USAGE_TAIL[] = "\n" CLI_COMMON_HELP "\n"
				       "Examples:\n"
				       "  kforge guide search \"bank conflicts\"\n"
				       "  kforge guide search wgmma --arch sm_90\n"
				       "  kforge guide read coalescing\n";

/* A tool error of kforge gpu or guide: its summary on stderr (the whole
 * answer with --json). Returns its exit code. */
static int tool_error(const json_t *res, int json)
{
	if (json)
		cli_print_result(stdout, res, 1);
	else
		fprintf(stderr, "kforge: %s\n", json_string_value(json_object_get(res, "summary")));
	return cli_answer_exit(res, 1);
}

/* The string member key of o, or "" when absent. */
static const char *sget(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static void value_str(const json_t *v, char *buf, size_t cap)
{
	if (!v || json_is_null(v))
		snprintf(buf, cap, "-");
	else if (json_is_integer(v))
		snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, cap, "%.10g", json_real_value(v));
	else if (json_is_string(v))
		snprintf(buf, cap, "%s", json_string_value(v));
	else if (json_is_boolean(v))
		snprintf(buf, cap, "%s", json_is_true(v) ? "yes" : "no");
	else
		snprintf(buf, cap, "?");
}

static void keys_str(const json_t *keys, char *buf, size_t cap)
{
	size_t at = 0, i;
	json_t *k;
	buf[0] = '\0';
	json_array_foreach(keys, i, k) {
		int n = snprintf(buf + at, cap - at, "%s%s", i ? ", " : "", json_string_value(k));
		if (n < 0 || (size_t)n >= cap - at)
			break;
		at += (size_t)n;
	}
}

/* The source column of figure f of GPU g: its own source keys, or in a
 * brief answer the key list of its source group (g's "sources"). */
static void figure_sources(const json_t *g, const json_t *f, char *buf, size_t cap)
{
	const json_t *keys = json_object_get(f, "source_keys");
	const char *grp = json_string_value(json_object_get(f, "source"));
	if (!keys && grp)
		keys = json_object_get(json_object_get(g, "sources"), grp);
	keys_str(keys, buf, cap);
}

/* One GPU, brief (get_gpu_specs' default) or full: whatever sections the
 * answer holds. */
static void print_gpu(const json_t *g)
{
	const char *key;
	json_t *f;
	char v[64], keys[160];
	printf("\n%-38s %18s %-10s %s\n", "figure", "value", "unit", "source");
	json_object_foreach(json_object_get(g, "figures"), key, f) {
		const char *st = json_string_value(json_object_get(f, "status"));
		value_str(json_object_get(f, "value"), v, sizeof v);
		if (st && strcmp(st, "n/a") == 0)
			snprintf(v, sizeof v, "n/a");
		figure_sources(g, f, keys, sizeof keys);
		const char *lab = json_string_value(json_object_get(f, "label"));
		const char *gap = json_string_value(json_object_get(f, "gap"));
		printf("%-38.38s %18.18s %-10s %s%s%s\n", lab ? lab : key, v, sget(f, "unit"),
		       keys[0]				  ? keys
		       : gap				  ? gap
		       : st && strcmp(st, "unknown") == 0 ? "(not confirmed)"
							  : "",
		       json_is_true(json_object_get(f, "derived")) ? "derived" : "",
		       json_object_get(f, "derivation") ? " [derived in source]" : "");
	}
	if (json_object_get(g, "derived"))
		printf("\n%-38s %14s %-12s %s\n", "derived figure", "value", "unit", "formula");
	json_object_foreach(json_object_get(g, "derived"), key, f) {
		value_str(json_object_get(f, "value"), v, sizeof v);
		printf("%-38.38s %14.14s %-12s %s\n",
		       json_string_value(json_object_get(f, "label")), v, sget(f, "unit"),
		       json_string_value(json_object_get(f, "formula")));
	}
	if (json_object_get(g, "features"))
		printf("\n%-10s %-7s %s\n", "feature", "usable", "rule (derived)");
	json_object_foreach(json_object_get(g, "features"), key, f)
		printf("%-10s %-7s %s\n", key,
		       json_is_true(json_object_get(f, "usable")) ? "yes" : "no",
		       json_string_value(json_object_get(f, "rule")));
	if (json_object_get(g, "usable_features")) {
		keys_str(json_object_get(g, "usable_features"), keys, sizeof keys);
		printf("\nusable features on %s (derived): %s\n", sget(g, "features_target"),
		       keys[0] ? keys
			       : "none of cp.async, tma, wgmma, clusters, fp8, tcgen05, "
				 "bf16, fp4");
	}
	if (json_object_get(g, "notes"))
		printf("\nnotes: %s\n", sget(g, "notes"));
	if (json_object_get(g, "sources_product"))
		printf("sources (product): %s\n", sget(g, "sources_product"));
	if (json_object_get(g, "sources_per_cc_limits"))
		printf("sources (per-CC):  %s\n", sget(g, "sources_per_cc_limits"));
	size_t i;
	json_array_foreach(json_object_get(g, "conflicts"), i, f)
		printf("conflict %s: %s\n", json_string_value(json_object_get(f, "id")),
		       json_string_value(json_object_get(f, "text")));
	json_object_foreach(json_object_get(g, "sources"), key, f)
		if (json_is_string(f))
			printf("  [%s] %s\n", key, json_string_value(f));
}

static void print_occupancy(const json_t *o)
{
	if (!o)
		return;
	printf("\noccupancy (derived): %s\n", json_string_value(json_object_get(o, "reason")));
	json_t *l = json_object_get(o, "limits");
	printf("  blocks/SM allowed by warps %lld, blocks %lld, registers %lld, shared memory %lld\n",
	       (long long)json_integer_value(json_object_get(l, "warps")),
	       (long long)json_integer_value(json_object_get(l, "blocks")),
	       (long long)json_integer_value(json_object_get(l, "registers")),
	       (long long)json_integer_value(json_object_get(l, "shared_memory")));
	printf("  registers per warp allocated %lld, shared memory per block allocated %lld B%s\n",
	       (long long)json_integer_value(json_object_get(o, "regs_per_warp_alloc")),
	       (long long)json_integer_value(json_object_get(o, "smem_per_block_alloc_bytes")),
	       json_is_true(json_object_get(o, "needs_smem_optin"))
		       ? " (over 48 KB: needs cudaFuncSetAttribute opt-in)"
		       : "");
}

static void print_list(const json_t *res)
{
	size_t i;
	json_t *g;
	char c[6][24];
	static const char *const cols[] = {"sm_count",
					   "memory_gb",
					   "memory_bandwidth_gbs",
					   "peak_fp32_tflops",
					   "fp16_bf16_tensor_dense_tflops",
					   "fp8_tensor_dense_tflops"};
	printf("%-14s %-44s %-5s %5s %6s %7s %7s %8s %8s\n", "id", "name", "CC", "SMs", "GB",
	       "GB/s", "FP32", "BF16 TC", "FP8 TC");
	json_array_foreach(json_object_get(res, "gpus"), i, g) {
		for (int k = 0; k < 6; k++)
			value_str(json_object_get(g, cols[k]), c[k], sizeof c[k]);
		printf("%-14s %-44.44s %-5s %5s %6s %7s %7s %8s %8s\n",
		       json_string_value(json_object_get(g, "id")),
		       json_string_value(json_object_get(g, "name")),
		       json_string_value(json_object_get(g, "compute_capability")), c[0], c[1],
		       c[2], c[3], c[4], c[5]);
	}
	printf("(TFLOPS dense; '-' = not confirmed by a source; kforge gpu ID for sources)\n");
}

static void print_compare(const json_t *res)
{
	size_t i, j;
	json_t *r, *v;
	json_t *gpus = json_object_get(res, "gpus");
	char s[64];
	printf("%-38s", "figure");
	json_array_foreach(gpus, i, v)
		printf(" %14.14s", json_string_value(json_object_get(v, "id")));
	printf("  unit\n");
	json_array_foreach(json_object_get(res, "rows"), i, r) {
		const char *lab = json_string_value(json_object_get(r, "label"));
		printf("%-38.38s", lab ? lab : sget(r, "field"));
		json_array_foreach(json_object_get(r, "values"), j, v) {
			value_str(v, s, sizeof s);
			printf(" %14.14s", s);
		}
		printf("  %s%s\n", sget(r, "unit"),
		       json_is_true(json_object_get(r, "derived")) ? " (derived)" : "");
	}
	printf("('-' = not confirmed by a source, 'n/a' = no such format on that GPU; sources "
	       "per figure: kforge gpu ID, or --json)\n");
}

enum gpu_mode { GPU_ONE, GPU_LIST, GPU_COMPARE };

/* kforge gpu's command line (after the common options) as get_gpu_specs
 * arguments: sets *out (new) and *mode, or returns the usage exit code
 * with the message printed. */
static int gpu_parse(int argc, char **argv, json_t **out, enum gpu_mode *mode)
{
	json_t *args = json_object(), *names = json_array(), *occ;
	struct kf_err err = {0};
	int list = 0, compare = 0, full = 0, rc = 0, t;
	for (int i = 1; i < argc && !rc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--list") == 0)
			list = 1;
		else if (strcmp(a, "--compare") == 0)
			compare = 1;
		else if (strcmp(a, "--full") == 0)
			full = 1;
		else if ((t = cli_opts_take(&GPU_OPTS, argc, argv, &i, args, &err)) != 0)
			rc = t < 0 ? cli_usage_error("gpu", "%s", err.msg) : 0;
		else if (a[0] == '-' && a[1])
			rc = cli_usage_error("gpu", "unknown option '%s'", a);
		else
			json_array_append_new(names, json_string(a));
	}
	occ = json_object_get(args, "occupancy");
	size_t nn = json_array_size(names);
	if (rc)
		;
	else if (list + compare > 1 || (list && nn) || (!list && !compare && nn != 1))
		rc = cli_usage_error("gpu",
				     "give one GPU name, --list, or --compare with 2-4 names");
	else if (compare && (nn < 2 || nn > 4))
		rc = cli_usage_error("gpu", "--compare takes 2 to 4 GPU names, got %zu", nn);
	else if (occ && !json_object_get(occ, "block_threads"))
		rc = cli_usage_error("gpu", "--regs and --smem need --block N");
	else if (full && json_object_get(args, "fields"))
		rc = cli_usage_error("gpu", "give --full or --fields, not both");
	else if (list && (full || json_object_get(args, "fields")))
		rc = cli_usage_error("gpu", "--full and --fields apply to one GPU or --compare");
	if (rc) {
		json_decref(args);
		json_decref(names);
		return rc;
	}
	if (list)
		json_object_set_new(args, "list", json_true());
	else if (compare)
		json_object_set(args, "compare", names);
	else
		json_object_set(args, "gpu", json_array_get(names, 0));
	if (full)
		json_object_set_new(args, "detail", json_string("full"));
	json_decref(names);
	*mode = list ? GPU_LIST : compare ? GPU_COMPARE : GPU_ONE;
	*out = args;
	return 0;
}

/* The readable answer of kforge gpu. */
static void gpu_print(const json_t *res, enum gpu_mode mode)
{
	printf("%s\n", json_string_value(json_object_get(res, "summary")));
	if (mode == GPU_LIST) {
		print_list(res);
	} else if (mode == GPU_COMPARE) {
		print_compare(res);
	} else if (json_object_get(res, "local")) {
		size_t i;
		json_t *d;
		json_array_foreach(json_object_get(res, "local"), i, d) {
			json_t *g = json_object_get(d, "gpu");
			if (g)
				print_gpu(g);
			else
				printf("%s\n", json_string_value(json_object_get(d, "no_match")));
		}
	} else {
		json_t *amb = json_object_get(res, "ambiguous");
		if (amb) {
			char m[256];
			keys_str(json_object_get(amb, "matches"), m, sizeof m);
			printf("'%s' names: %s\n", json_string_value(json_object_get(amb, "query")),
			       m);
		}
		print_gpu(json_object_get(res, "gpu"));
		print_occupancy(json_object_get(res, "occupancy"));
	}
	if (json_object_get(res, "more") && mode != GPU_LIST)
		printf("\n(brief: --full for every figure with its label, unit and formula, the "
		       "feature rules, notes and source titles; --fields F,.. for some)\n");
}

static int gpu_main(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};
	json_t *args = NULL, *res = NULL;
	enum gpu_mode mode = GPU_ONE;
	int rc, is_error = 0;

	cli_common_init(&co);
	if (cli_common_parse(&co, &argc, argv, &err))
		return cli_usage_error("gpu", "%s", err.msg);
	if ((rc = gpu_parse(argc, argv, &args, &mode)))
		return rc;
	if ((rc = cli_tool_call(&co, "get_gpu_specs", args, &res, &is_error)))
		return rc;
	if (is_error)
		rc = tool_error(res, co.json);
	else if (co.json)
		cli_print_result(stdout, res, 1);
	else
		gpu_print(res, mode);
	json_decref(res);
	return is_error ? rc : CLI_EXIT_OK;
}

/* kforge guide search's words and options (argv[2..]) as search_guides
 * arguments in args (borrowed). Returns 0 or the usage exit code. */
static int guide_search_args(int argc, char **argv, json_t *args)
{
	struct kf_err err = {0};
	char q[600] = "";
	size_t at = 0;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		int rc = cli_opts_take(&GUIDE_OPTS, argc, argv, &i, args, &err);
		if (rc < 0)
			return cli_usage_error("guide", "%s", err.msg);
		if (rc > 0)
			continue;
		if (strncmp(a, "--", 2) == 0)
			return cli_usage_error("guide", "unknown option '%s'", a);
		int w = snprintf(q + at, sizeof q - at, "%s%s", at ? " " : "", a);
		if (w < 0 || (size_t)w >= sizeof q - at)
			return cli_usage_error("guide", "the query is longer than 512 bytes");
		at += (size_t)w;
	}
	if (!at)
		return cli_usage_error("guide", "search needs words, e.g. \"bank conflicts\"");
	json_object_set_new(args, "query", json_string(q));
	return 0;
}

static int guide_list(const struct cli_common *co)
{
	struct kf_err err = {0};
	struct app *app = NULL;
	int rc;
	if ((rc = cli_app_open(co, &app, &err))) {
		fprintf(stderr, "kforge: %s\n", err.msg);
		return CLI_EXIT_ENV;
	}
	json_t *arr = json_array();
	const struct resource_def *r = NULL;
	for (size_t i = 0; i < tools_resource_count(); i++)
		if (strcmp(tools_resource_at(i)->uri_template, "kforge://guides/{id}") == 0)
			r = tools_resource_at(i);
	rc = r && r->list ? r->list(app, arr, &err)
			  : kf_err_set(&err, KF_EINTERNAL, "no guides resource");
	app_close(app);
	if (rc) {
		json_decref(arr);
		fprintf(stderr, "kforge: %s\n", err.msg);
		return cli_exit_code(rc);
	}
	size_t i;
	json_t *g;
	if (co->json)
		cli_print_result(stdout, arr, 1);
	else
		json_array_foreach(arr, i, g)
			printf("%-28s %s\n", json_string_value(json_object_get(g, "name")),
			       json_string_value(json_object_get(g, "title")));
	json_decref(arr);
	return CLI_EXIT_OK;
}

/* The readable answer of kforge guide search (search) or read. */
static void guide_print(const json_t *res, int search)
{
	size_t i;
	json_t *h;
	if (search) {
		printf("%s\n", json_string_value(json_object_get(res, "summary")));
		json_array_foreach(json_object_get(res, "hits"), i, h) {
			printf("\n%2zu. %s — %s\n", i + 1,
			       json_string_value(json_object_get(h, "id")),
			       json_string_value(json_object_get(h, "title")));
			printf("    %s\n", json_string_value(json_object_get(h, "snippet")));
		}
		return;
	}
	printf("%s\n", json_string_value(json_object_get(res, "markdown")));
	printf("\n## Checked on\n\n%s\n", sget(res, "checked"));
	printf("\n## Sources\n\n");
	json_array_foreach(json_object_get(res, "sources"), i, h)
		printf("- %s\n", json_string_value(h));
}

static int guide_main(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};
	cli_common_init(&co);
	if (cli_common_parse(&co, &argc, argv, &err))
		return cli_usage_error("guide", "%s", err.msg);
	if (argc < 2)
		return cli_usage_error("guide", "give search WORDS, read ID or list");
	const char *sub = argv[1];
	int search = strcmp(sub, "search") == 0, rc, is_error = 0;
	if (strcmp(sub, "list") == 0)
		return guide_list(&co);
	if (!search && strcmp(sub, "read") != 0)
		return cli_usage_error("guide", "unknown subcommand '%s' (search, read, list)",
				       sub);
	if (!search && argc != 3)
		return cli_usage_error("guide", "read takes one guide id");
	json_t *args = json_object(), *res = NULL;
	if (search && (rc = guide_search_args(argc, argv, args))) {
		json_decref(args);
		return rc;
	}
	if (!search)
		json_object_set_new(args, "id", json_string(argv[2]));
	if ((rc = cli_tool_call(&co, search ? "search_guides" : "read_guide", args, &res,
				&is_error)))
		return rc;
	if (is_error)
		rc = tool_error(res, co.json);
	else if (co.json)
		cli_print_result(stdout, res, 1);
	else
		guide_print(res, search);
	json_decref(res);
	return is_error ? rc : CLI_EXIT_OK;
}

const struct cli_cmd CLI_KB[] = {
	{"gpu", "GPU facts with sources: one GPU, --list, --compare, local, occupancy", GPU_USAGE,
	 gpu_main, &GPU_OPTS, GPU_USAGE_TAIL},
	{"guide", "search and read the CUDA optimization guides", GUIDE_USAGE, guide_main,
	 &GUIDE_OPTS, GUIDE_USAGE_TAIL},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
