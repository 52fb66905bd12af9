/* cli_gpu: `kforge check SPEC.json`, `kforge bench SPEC.json` (through the
 * check_kernel and benchmark_kernel tools) and `kforge calibrate` (measures
 * this GPU's ceilings and stores them in state.db). */
#include "server/cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/cli/cli_opts.h"
#include "server/mcp/mcp.h"
#include "sandbox/check/bench.h"
#include "sandbox/exec/exec.h"
#include "sandbox/pool/gpu.h"
#include "sandbox/spec/spec.h"
#include "server/tools/tools_exec.h"
#include "server/tools/tools_runs.h"

#define SPEC_FILE_MAX_BYTES (8u << 20)

/* What a run means, stored with it and exported as data (README "Building
 * a dataset"). The schema keeps these bare strings (tools/list stays
 * small), so their help lines are here. */
/* clang-format off */
#define META_OPTS                                                                 \
	{"--description", "description", CLI_OPT_VALUE, "TEXT",                   \
	 "what the kernel computes: words and math"},                              \
	{"--notes", "notes", CLI_OPT_VALUE, "TEXT",                               \
	 "your reasoning: what was tried, why it is faster"},                      \
	{"--parent", "parent", CLI_OPT_VALUE, "RUN_ID",                           \
	 "the run this one improves on (must exist)"}
/* clang-format on */

/* check's options: each bound to a check_kernel argument, whose schema
 * gives the type, bounds and default (cli_opts.h); --replay-size is the
 * replay.size object written as VAR=N,VAR=N. */
static const struct cli_opt CHECK_OPT_TABLE[] = {
	{"--trials", "trials", CLI_OPT_VALUE, "N", "trials per size, fresh inputs each"},
	{"--no-odd-size", "odd_size", CLI_OPT_FALSE, NULL, "only the sizes the spec lists"},
	{"--replay-seed", "replay.seed", CLI_OPT_VALUE, "HEX",
	 "with --replay-size: re-run one reported case exactly"},
	{"--replay-size", NULL, CLI_OPT_OWN, "VAR=N,..", "the reported case's sizes"},
	{"--timeout-s", "timeout_s", CLI_OPT_VALUE, "N",
	 "watchdog per run, seconds (default: from the work, at least 2)"},
	META_OPTS,
	{NULL, NULL, CLI_OPT_VALUE, NULL, NULL},
};

static const struct cli_opts CHECK_OPTS = {"check_kernel", CHECK_OPT_TABLE};

static const struct cli_opt BENCH_OPT_TABLE[] = {
	{"--size", "size", CLI_OPT_VALUE, "I", NULL},
	{"--no-baseline", "baseline", CLI_OPT_FALSE, NULL, "time the candidate alone"},
	{"--budget-ms", "budget_ms", CLI_OPT_VALUE, "N", NULL},
	{"--target", "target_rel_se", CLI_OPT_VALUE, "F", "relative standard error target"},
	{"--warmup-ms", "warmup_ms", CLI_OPT_VALUE, "N", "warm-up, milliseconds"},
	{"--no-flush", "flush_l2", CLI_OPT_FALSE, NULL, "keep the L2 warm between iterations"},
	{"--timeout-s", "timeout_s", CLI_OPT_VALUE, "N",
	 "watchdog per run, seconds (default: from the work, at least 2)"},
	META_OPTS,
	{NULL, NULL, CLI_OPT_VALUE, NULL, NULL},
};

static const struct cli_opts BENCH_OPTS = {"benchmark_kernel", BENCH_OPT_TABLE};

static const char CHECK_USAGE[] =
	"usage: kforge check SPEC.json [--trials N] [--no-odd-size]\n"
	"                    [--replay-seed HEX --replay-size VAR=N,VAR=N]\n"
	"                    [--timeout-s N] [--description TEXT] [--notes TEXT]\n"
	"                    [--parent RUN_ID] [--json]\n"
	"\n"
	"Checks a kernel spec against its reference on this host's GPU: every size of\n"
	"the spec plus one odd size, N trials (default 3) with fresh secret inputs,\n"
	"poisoned outputs, guard bands, input and determinism checks. Exit 0 when it\n"
	"passes, 1 when the kernel fails (the summary says which safeguard fired and\n"
	"how to replay it), 3 without a GPU.\n"
	"\n"
	"Options (bounds and defaults from check_kernel's input schema):\n";

static const char CHECK_USAGE_TAIL[] =
	"\n" CLI_COMMON_HELP "\n"
	"Examples:\n"
	"  kforge check rmsnorm.json\n"
	"  kforge check rmsnorm.json --replay-size T=7,D=1000 --replay-seed 9f2c01d4e5a6b7c8\n";

static const char BENCH_USAGE[] =
	"usage: kforge bench SPEC.json [--size I] [--no-baseline] [--budget-ms N]\n"
	"                    [--target F] [--warmup-ms N] [--no-flush] [--timeout-s N]\n"
	"                    [--description TEXT] [--notes TEXT] [--parent RUN_ID] [--json]\n"
	"\n"
	"Benchmarks a kernel spec (and its baseline, interleaved) with CUDA events,\n"
	"the L2 flushed before each timed run, until the median's standard error is\n"
	"under the target or the budget ends; then verifies a run after timing.\n"
	"\n"
	"Options (bounds and defaults from benchmark_kernel's input schema):\n";

static const char BENCH_USAGE_TAIL[] = "\n" CLI_COMMON_HELP "\n"
				       "Example:\n"
				       "  kforge bench rmsnorm.json --size 0\n";

static const char CALIBRATE_USAGE[] =
	"usage: kforge calibrate [--device N] [--json]\n"
	"       kforge calibrate --executor slurm --partition P --shared-dir DIR [--gres G]\n"
	"                        [--account A] [--time-limit T] [--json]\n"
	"\n"
	"Measures this GPU's ceilings once: device-to-device copy bandwidth (read +\n"
	"write bytes) and cuBLAS bf16 and fp32 matmul throughput, and stores them in\n"
	"state.db; benchmarks then report % of these measured ceilings.\n"
	"  --device N   the CUDA device ordinal (default: the first free GPU)\n"
	"With --executor slurm: one exclusive job per GPU type of the partition (sinfo's\n"
	"gres types; one job when untyped) calibrates a node of that type; each is\n"
	"stored here per type and in the node's data dir (docs/runs.md).\n"
	"\n" CLI_COMMON_HELP;

/* A spec file may name its CUDA source as "source_file" (relative to the
 * spec's folder) instead of embedding it as a JSON string: the CLI reads the
 * file and sends "source", so the tools never read host paths. obj may be
 * NULL or not an object (nothing to do). Returns 0 or -1 after a message. */
static int inline_source(const char *cmd, const char *spec_path, json_t *obj, const char *where)
{
	const char *file = json_string_value(json_object_get(obj, "source_file"));
	char path[4096];

	if (!file)
		return 0;
	if (json_object_get(obj, "source")) {
		fprintf(stderr, "kforge %s: %ssource_file: give source or source_file, not both\n",
			cmd, where);
		return -1;
	}
	const char *slash = strrchr(spec_path, '/');
	int n = file[0] == '/' || !slash ? snprintf(path, sizeof(path), "%s", file)
					 : snprintf(path, sizeof(path), "%.*s/%s",
						    (int)(slash - spec_path), spec_path, file);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		fprintf(stderr, "kforge %s: %ssource_file: path too long\n", cmd, where);
		return -1;
	}
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "kforge %s: %ssource_file: cannot open %s: %s\n", cmd, where, path,
			strerror(errno));
		return -1;
	}
	char *buf = malloc(SPEC_MAX_SOURCE_BYTES + 1);
	size_t len = buf ? fread(buf, 1, SPEC_MAX_SOURCE_BYTES + 1, f) : 0;
	fclose(f);
	if (!buf || len > SPEC_MAX_SOURCE_BYTES) {
		fprintf(stderr, "kforge %s: %ssource_file: %s is larger than %u bytes\n", cmd,
			where, path, SPEC_MAX_SOURCE_BYTES);
		free(buf);
		return -1;
	}
	json_t *src = json_stringn(buf, len);
	free(buf);
	if (!src) {
		fprintf(stderr, "kforge %s: %ssource_file: %s is not UTF-8 text\n", cmd, where,
			path);
		return -1;
	}
	json_object_set_new(obj, "source", src);
	json_object_del(obj, "source_file");
	return 0;
}

json_t *cli_load_spec(const char *cmd, const char *path)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "kforge %s: cannot open %s: %s\n", cmd, path, strerror(errno));
		return NULL;
	}
	char *buf = malloc(SPEC_FILE_MAX_BYTES + 1);
	size_t n = buf ? fread(buf, 1, SPEC_FILE_MAX_BYTES + 1, f) : 0;
	if (f != stdin)
		fclose(f);
	if (!buf)
		return NULL;
	if (n > SPEC_FILE_MAX_BYTES) {
		fprintf(stderr, "kforge %s: %s is larger than %u bytes\n", cmd, path,
			SPEC_FILE_MAX_BYTES);
		free(buf);
		return NULL;
	}
	json_error_t je;
	json_t *j = json_loadb(buf, n, 0, &je);
	free(buf);
	if (!j) {
		fprintf(stderr, "kforge %s: %s: invalid JSON at line %d column %d: %s\n", cmd, path,
			je.line, je.column, je.text);
		return NULL;
	}
	if (inline_source(cmd, path, j, "") != 0 ||
	    inline_source(cmd, path, json_object_get(j, "reference"), "reference.") != 0 ||
	    inline_source(cmd, path, json_object_get(j, "baseline"), "baseline.") != 0) {
		json_decref(j);
		return NULL;
	}
	return j;
}

static int num_opt(const char *cmd, const char *name, const char *v, double lo, double hi,
		   double *out)
{
	char *end;
	errno = 0;
	double d = strtod(v, &end);
	if (errno || *end || !(d >= lo && d <= hi))
		return cli_usage_error(cmd, "%s: '%s' is not a number from %g to %g", name, v, lo,
				       hi);
	*out = d;
	return 0;
}

/* --- readable output ------------------------------------------------------ */

static const char *str(const json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v ? v : "";
}

static void sizes_label(const json_t *sz, char *buf, size_t cap)
{
	const char *k;
	json_t *v;
	size_t n = 0;
	buf[0] = 0;
	json_object_foreach((json_t *)sz, k, v) {
		if (n >= cap)
			break;
		n += (size_t)snprintf(buf + n, cap - n, "%s%s=%" JSON_INTEGER_FORMAT, n ? "," : "",
				      k, json_integer_value(v));
	}
}

/* "time: 2025 ms (kernel runs 1993, harness start 16, ...)" from the
 * answer's phases, largest first, those under 0.5 ms left out. */
static void print_phases(FILE *f, const json_t *r)
{
	static const struct {
		const char *key, *label;
	} P[] = {{"compile_ms", "compile"},
		 {"queue_wait_ms", "queue wait"},
		 {"harness_start_ms", "harness start"},
		 {"module_load_ms", "module load"},
		 {"upload_ms", "upload"},
		 {"kernel_runs_ms", "kernel runs"},
		 {"download_ms", "download"},
		 {"reference_ms", "reference"},
		 {"compare_ms", "compare"},
		 {"history_write_ms", "history write"}};
	enum { NP = sizeof P / sizeof P[0] };
	const json_t *ph = json_object_get(r, "phases");
	if (!json_is_object(ph))
		return;
	double ms[NP];
	int order[NP];
	for (int i = 0; i < NP; i++) {
		ms[i] = json_number_value(json_object_get(ph, P[i].key));
		order[i] = i;
		for (int j = i; j > 0 && ms[order[j]] > ms[order[j - 1]]; j--) {
			int t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	}
	fprintf(f, "time: %.0f ms", json_number_value(json_object_get(ph, "total_ms")));
	int shown = 0;
	for (int i = 0; i < NP; i++)
		if (ms[order[i]] >= 0.5)
			fprintf(f, "%s%s %.0f", shown++ ? ", " : " (", P[order[i]].label,
				ms[order[i]]);
	fprintf(f, "%s\n", shown ? ")" : "");
	const json_t *tr = json_object_get(ph, "torch_reference");
	if (json_is_object(tr))
		fprintf(f, "torch reference: %d of %d jobs served by a warm worker%s%.0f ms)\n",
			(int)json_integer_value(json_object_get(tr, "warm")),
			(int)json_integer_value(json_object_get(tr, "runs")),
			json_number_value(json_object_get(tr, "worker_start_ms")) > 0
				? " (worker start "
				: " (",
			json_number_value(json_object_get(tr, "worker_start_ms")));
}

/* One line per size: the worst errors over its trials and outputs, and the
 * safeguards that fired. */
static void print_check(FILE *f, const json_t *r)
{
	fprintf(f, "%s\n", str(r, "summary"));
	const json_t *sizes = json_object_get(r, "sizes");
	if (json_array_size(sizes)) {
		fprintf(f, "\n%-22s %-4s %-6s %-10s %-10s %-10s %s\n", "size", "odd", "result",
			"max abs", "max rel", "rel L2", "safeguards");
		size_t i;
		json_t *row;
		json_array_foreach(sizes, i, row) {
			char label[128], sg[256] = "";
			double ma = 0, mr = 0, l2 = 0;
			size_t n = 0, t;
			json_t *tr;
			sizes_label(json_object_get(row, "sizes"), label, sizeof label);
			json_array_foreach(json_object_get(row, "trials"), t, tr) {
				const char *k;
				json_t *o;
				json_object_foreach(json_object_get(tr, "outputs"), k, o) {
					double a = json_number_value(
						json_object_get(o, "max_abs_err"));
					double b = json_number_value(
						json_object_get(o, "max_rel_err"));
					double c =
						json_number_value(json_object_get(o, "rel_l2_err"));
					ma = a > ma ? a : ma;
					mr = b > mr ? b : mr;
					l2 = c > l2 ? c : l2;
				}
				size_t q;
				json_t *g;
				json_array_foreach(json_object_get(tr, "safeguards"), q, g) {
					const char *nm = str(g, "name");
					if (!strstr(sg, nm) && n < sizeof sg)
						n += (size_t)snprintf(sg + n, sizeof sg - n, "%s%s",
								      n ? ", " : "", nm);
				}
			}
			fprintf(f, "%-22s %-4s %-6s %-10.3g %-10.3g %-10.3g %s\n", label,
				json_is_true(json_object_get(row, "odd_size")) ? "yes" : "",
				json_is_true(json_object_get(row, "passed")) ? "pass" : "FAIL", ma,
				mr, l2, sg);
		}
	}
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(r, "tolerance"), k, v)
		fprintf(f, "tolerance %s: atol %g rtol %g (%s)\n", k,
			json_number_value(json_object_get(v, "atol")),
			json_number_value(json_object_get(v, "rtol")), str(v, "source"));
	json_object_foreach(json_object_get(r, "flags"), k, v)
		fprintf(f, "flag %s: %s\n", k, json_string_value(v));
	const json_t *rp = json_object_get(r, "replay");
	if (rp) {
		char label[128];
		sizes_label(json_object_get(rp, "size"), label, sizeof label);
		fprintf(f, "replay: kforge check SPEC.json --replay-size %s --replay-seed %s\n",
			label, str(rp, "seed"));
	}
	if (json_object_get(r, "kernel_stdout"))
		fprintf(f, "kernel stdout:\n%s\n", str(r, "kernel_stdout"));
	print_phases(f, r);
	if (json_object_get(r, "run_id"))
		fprintf(f, "run: %s\n", str(r, "run_id"));
}

static void print_bench(FILE *f, const json_t *r)
{
	fprintf(f, "%s\n", str(r, "summary"));
	const json_t *sizes = json_object_get(r, "sizes");
	if (json_array_size(sizes)) {
		fprintf(f, "\n%-22s %-24s %-10s %-26s %-8s %-6s %-9s %s\n", "size",
			"candidate us (p10-p90)", "baseline", "speedup [95%]", "GB/s", "%peak",
			"floor us", "verified");
		size_t i;
		json_t *row;
		json_array_foreach(sizes, i, row) {
			char label[128], cand[64] = "-", base[32] = "-", sp[64] = "-";
			sizes_label(json_object_get(row, "sizes"), label, sizeof label);
			const json_t *c = json_object_get(row, "candidate");
			const json_t *b = json_object_get(row, "baseline");
			const json_t *s = json_object_get(row, "speedup");
			if (c)
				snprintf(cand, sizeof cand, "%.2f (%.2f-%.2f)",
					 json_number_value(json_object_get(c, "median_us")),
					 json_number_value(json_object_get(c, "p10_us")),
					 json_number_value(json_object_get(c, "p90_us")));
			if (b)
				snprintf(base, sizeof base, "%.2f",
					 json_number_value(json_object_get(b, "median_us")));
			if (s)
				snprintf(sp, sizeof sp, "%.3f [%.3f, %.3f]",
					 json_number_value(json_object_get(s, "value")),
					 json_number_value(json_object_get(s, "ci95_lo")),
					 json_number_value(json_object_get(s, "ci95_hi")));
			fprintf(f, "%-22s %-24s %-10s %-26s %-8.0f %-6.0f %-9.2f %s\n", label, cand,
				base, sp, json_number_value(json_object_get(row, "gbs")),
				json_number_value(json_object_get(row, "pct_of_peak_bw")),
				json_number_value(json_object_get(row, "roofline_floor_us")),
				json_is_true(json_object_get(row, "verified")) ? "yes" : "NO");
			size_t q;
			json_t *g;
			json_array_foreach(json_object_get(row, "safeguards"), q, g)
				fprintf(f, "  %s: %s\n", str(g, "name"), str(g, "message"));
			json_array_foreach(
				json_object_get(json_object_get(row, "verification"), "safeguards"),
				q, g)
				fprintf(f, "  after timing, %s: %s\n", str(g, "name"),
					str(g, "message"));
		}
	}
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(r, "flags"), k, v)
		fprintf(f, "flag %s: %s\n", k, json_string_value(v));
	if (json_object_get(r, "method"))
		fprintf(f, "method: %s\n", str(r, "method"));
	print_phases(f, r);
	if (json_object_get(r, "run_id"))
		fprintf(f, "run: %s\n", str(r, "run_id"));
}

/* cli_tool_call, shown this module's way: a failed kernel (error.code
 * fault or compile_error, or none) is a verdict printed by print like a
 * passing one; any other error is its summary on stderr. */
static int run_tool(const struct cli_common *co, const char *tool, json_t *args,
		    void (*print)(FILE *, const json_t *))
{
	json_t *res;
	int is_error, rc = cli_tool_call(co, tool, args, &res, &is_error);

	if (rc)
		return rc;
	const char *code =
		json_string_value(json_object_get(json_object_get(res, "error"), "code"));
	if (co->json)
		cli_print_result(stdout, res, 1);
	else if (code && strcmp(code, "fault") != 0 && strcmp(code, "compile_error") != 0)
		fprintf(stderr, "kforge %s: %s\n", tool, str(res, "summary"));
	else
		print(stdout, res);
	rc = cli_answer_exit(res, is_error);
	json_decref(res);
	return rc;
}

/* The arguments check and bench share after their own options: an option
 * whose value is missing, an unknown option, the one SPEC.json (into
 * *path). Returns 0 or the usage error's exit code. */
static int spec_arg(const char *cmd, const char *a, int missing, const char **path)
{
	if (missing)
		return cli_usage_error(cmd, "%s needs a value", a);
	if (a[0] == '-' && a[1])
		return cli_usage_error(cmd, "unknown option %s", a);
	if (*path)
		return cli_usage_error(cmd, "one SPEC.json only");
	*path = a;
	return 0;
}

/* The end of check and bench: unless rc (a usage error already printed) is
 * set, loads the spec at path into args["spec"] and runs tool. Takes args.
 * Returns rc, CLI_EXIT_FAIL when the spec cannot be loaded, or run_tool's
 * code. */
static int run_spec_tool(const struct cli_common *co, const char *cmd, const char *path,
			 json_t *args, int rc, const char *tool,
			 void (*print)(FILE *, const json_t *))
{
	if (rc) {
		json_decref(args);
		return rc;
	}
	json_t *spec = cli_load_spec(cmd, path);
	if (!spec) {
		json_decref(args);
		return CLI_EXIT_FAIL;
	}
	json_object_set_new(args, "spec", spec);
	return run_tool(co, tool, args, print);
}

/* --replay-size T=7,D=1000 into args.replay.size. Returns 0 or the usage
 * error's exit code. */
static int replay_size(const char *v, json_t *args)
{
	json_t *replay = json_object_get(args, "replay");
	json_t *sz = json_object();
	char buf[512];
	char *save = NULL;
	int rc = 0;

	if (!replay) {
		replay = json_object();
		json_object_set_new(args, "replay", replay);
	}
	json_object_set_new(replay, "size", sz);
	snprintf(buf, sizeof buf, "%s", v);
	for (char *tok = strtok_r(buf, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		char *end = NULL;
		long long n = eq ? strtoll(eq + 1, &end, 10) : 0;
		if (!eq || !end || *end || eq == tok) {
			rc = cli_usage_error("check", "--replay-size: '%s' is not VAR=N", tok);
		} else {
			*eq = 0;
			json_object_set_new(sz, tok, json_integer(n));
		}
	}
	return rc;
}

/* The options check and bench share the handling of: those of the table
 * (into args), an option whose value is missing, an unknown option, the
 * one SPEC.json (into *path). Returns 0 or the usage error's exit code. */
static int spec_cmd_arg(const char *cmd, const struct cli_opts *o, int argc, char **argv, int *i,
			json_t *args, const char **path)
{
	struct kf_err err = {0};
	int rc = cli_opts_take(o, argc, argv, i, args, &err);

	if (rc < 0)
		return cli_usage_error(cmd, "%s", err.msg);
	if (rc > 0)
		return 0;
	return spec_arg(cmd, argv[*i], 0, path);
}

static int check_main(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};
	cli_common_init(&co);
	if (cli_common_parse(&co, &argc, argv, &err))
		return cli_usage_error("check", "%s", err.msg);
	const char *path = NULL;
	json_t *args = json_object();
	int rc = 0;
	for (int i = 1; i < argc && !rc; i++) {
		int missing = 0;
		const char *v = cli_opt_value(argc, argv, &i, "--replay-size", &missing);
		if (v)
			rc = replay_size(v, args);
		else if (missing)
			rc = spec_arg("check", argv[i], missing, &path);
		else
			rc = spec_cmd_arg("check", &CHECK_OPTS, argc, argv, &i, args, &path);
	}
	if (!rc && !path)
		rc = cli_usage_error("check", "SPEC.json missing");
	const json_t *replay = json_object_get(args, "replay");
	if (!rc && replay && (!json_object_get(replay, "seed") || !json_object_get(replay, "size")))
		rc = cli_usage_error("check", "--replay-seed and --replay-size go together");
	return run_spec_tool(&co, "check", path, args, rc, "check_kernel", print_check);
}

static int bench_main(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};
	cli_common_init(&co);
	if (cli_common_parse(&co, &argc, argv, &err))
		return cli_usage_error("bench", "%s", err.msg);
	const char *path = NULL;
	json_t *args = json_object();
	int rc = 0;
	for (int i = 1; i < argc && !rc; i++)
		rc = spec_cmd_arg("bench", &BENCH_OPTS, argc, argv, &i, args, &path);
	if (!rc && !path)
		rc = cli_usage_error("bench", "SPEC.json missing");
	return run_spec_tool(&co, "bench", path, args, rc, "benchmark_kernel", print_bench);
}

/* The calibration as the run history stores it and --json prints it. */
static json_t *calibration_json(const struct bench_calibration *cal)
{
	const struct history_ceilings *hc = &cal->ceil;
	char sm[300];
	snprintf(sm, sizeof sm,
		 "calibrated %s: copy %.0f GB/s, cuBLAS bf16 %.1f TFLOP/s, fp32 %.1f TFLOP/s",
		 hc->device_name, hc->copy_gbps, hc->bf16_tflops, hc->fp32_tflops);
	json_t *out = json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:s}", "summary", sm, "gpu",
				hc->device_name, "uuid", hc->gpu_uuid, "copy_gbs", hc->copy_gbps,
				"bf16_tflops", hc->bf16_tflops, "fp32_tflops", hc->fp32_tflops,
				"method", hc->method);
	if (out && cal->cublas)
		json_object_set(out, "cublas", cal->cublas);
	/* the device as check and benchmark answers name it (a node's run
	 * is recorded with it) */
	if (out)
		json_object_set_new(
			out, "device",
			json_pack("{s:s, s:s}", "name", hc->device_name, "uuid", hc->gpu_uuid));
	return out;
}

int cli_calibrate_result(struct app *app, int device, json_t **out, struct kf_err *err)
{
	struct bench_calibration cal;
	int gpu = -1;
	int64_t t0 = tools_runs_now_ms();
	int rc = bench_calibrate(&app->check, device, NULL, &cal, &gpu, err);
	json_t *args = json_pack("{s:i}", "device", device);
	*out = rc ? NULL : calibration_json(&cal);
	bench_calibration_fini(&cal);
	if (rc)
		*out = mcp_error_answer(kf_err_name(rc), err->msg);
	tools_runs_record(app, HISTORY_CALIBRATE, args, *out, rc, err->msg, gpu,
			  tools_runs_now_ms() - t0, NULL);
	json_decref(args);
	return rc;
}

static int calibrate_main(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};
	struct exec_config xc = {.kind = EXEC_LOCAL};
	cli_common_init(&co);
	if (cli_common_parse(&co, &argc, argv, &err))
		return cli_usage_error("calibrate", "%s", err.msg);
	int device = -1;
	for (int i = 1; i < argc; i++) {
		int missing = 0, r;
		const char *v = cli_opt_value(argc, argv, &i, "--device", &missing);
		double d = 0;
		if (v) {
			int rc = num_opt("calibrate", "--device", v, 0, 15, &d);
			if (rc)
				return rc;
			device = (int)d;
		} else if (!missing && (r = cli_exec_serve_opt(argc, argv, &i, &xc, &err))) {
			if (r < 0)
				return cli_usage_error("calibrate", "%s", err.msg);
		} else
			return cli_usage_error("calibrate", "%s %s",
					       missing ? "needs a value:" : "unknown option",
					       argv[i]);
	}
	if (cli_exec_serve_check(&xc, &err))
		return cli_usage_error("calibrate", "%s", err.msg);
	if (xc.kind == EXEC_SLURM && device >= 0)
		return cli_usage_error("calibrate", "--device picks a GPU of this host; with "
						    "--executor slurm each GPU type is one job");
	xc.sandbox_none = co.sandbox == APP_SANDBOX_NONE;
	co.exec = &xc;
	struct app *app = NULL;
	int rc = cli_app_open(&co, &app, &err);
	if (rc) {
		fprintf(stderr, "kforge: %s\n", err.msg);
		return CLI_EXIT_ENV;
	}
	json_t *out = NULL;
	rc = exec_is_remote(app->exec) ? tools_exec_calibrate(app, &out, &err)
				       : cli_calibrate_result(app, device, &out, &err);
	if (rc)
		fprintf(stderr, "kforge: %s\n", err.msg);
	if (!rc || (out && exec_is_remote(app->exec)))
		cli_print_result(stdout, out, co.json);
	json_decref(out);
	app_close(app);
	return rc ? cli_exit_code(rc) : CLI_EXIT_OK;
}

const struct cli_cmd CLI_GPU[] = {
	{"check", "check a kernel spec against its reference on the GPU", CHECK_USAGE, check_main,
	 &CHECK_OPTS, CHECK_USAGE_TAIL},
	{"bench", "benchmark a kernel spec (and its baseline) on the GPU", BENCH_USAGE, bench_main,
	 &BENCH_OPTS, BENCH_USAGE_TAIL},
	{"calibrate", "measure this GPU's copy and matmul ceilings", CALIBRATE_USAGE,
	 calibrate_main, NULL, NULL},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
