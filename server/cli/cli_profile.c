/* cli_profile: `kforge profile SPEC.json` through the profile_kernel tool:
 * the kernel under Nsight Compute at one size of the spec, the findings
 * and what to try (docs/profile.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/cli/cli.h"
#include "server/cli/cli_opts.h"

static const char PROFILE_USAGE[] =
	"usage: kforge profile SPEC.json [--size I] [--baseline] [--timeout-s N]\n"
	"\n"
	"Runs the kernel of SPEC.json under Nsight Compute (ncu) in the sandbox at\n"
	"size index I of its sizes (default 0), after a warm-up, with caches flushed\n"
	"before every replay pass and the clocks left alone. Prints where the kernel\n"
	"stands against its speed of light, occupancy and its limiter, registers and\n"
	"local memory, the top warp stalls, hit rates, bank conflicts, sectors per\n"
	"request, tensor-pipe use, DRAM bytes against the spec's cost model, each\n"
	"finding with the guide that addresses it, and the things most worth trying.\n"
	"The raw ncu CSV is kept in the data dir (profiles/) and served as the\n"
	"resource named in raw_report.\n"
	"\n"
	"Options (bounds from profile_kernel's input schema):\n";

static const char PROFILE_USAGE_TAIL[] =
	"\n" CLI_COMMON_HELP "\n"
	"Needs a GPU and ncu (on PATH, in the CUDA toolkit or KFORGE_NCU). Exit: 0\n"
	"profiled, 1 no counters or the kernel failed, 2 usage, 3 no GPU, 4 no ncu.\n"
	"\n"
	"Example:\n"
	"  kforge profile skill/examples/qwen3-rmsnorm/plain.json --size 0\n";

/* profile's options, bound to profile_kernel's arguments (cli_opts.h). */
static const struct cli_opt PROFILE_OPT_TABLE[] = {
	{"--size", "size", CLI_OPT_VALUE, "I", "index into the spec's sizes, default 0"},
	{"--baseline", "baseline", CLI_OPT_TRUE, NULL, "profile the spec's baseline too"},
	{"--timeout-s", "timeout_s", CLI_OPT_VALUE, "N",
	 "the kernel's limit in the warm-up (default: from the work)"},
	{NULL, NULL, CLI_OPT_VALUE, NULL, NULL},
};

static const struct cli_opts PROFILE_OPTS = {"profile_kernel", PROFILE_OPT_TABLE};

/* --- readable output ------------------------------------------------------ */

static const char *str(const json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v ? v : "";
}

/* Member k of o as text with its unit (scaled by div), or "-" when ncu did
 * not report it; then the text that follows. */
static void metric(FILE *f, const json_t *o, const char *k, double div, const char *unit,
		   const char *then)
{
	const json_t *v = json_object_get(o, k);
	if (json_is_number(v))
		fprintf(f, "%.4g%s%s", json_number_value(v) / div, unit, then);
	else
		fprintf(f, "-%s", then);
}

static void print_kernel(FILE *f, const json_t *k)
{
	const json_t *sol = json_object_get(k, "speed_of_light_pct"),
		     *occ = json_object_get(k, "occupancy_pct"), *l = json_object_get(k, "launch"),
		     *hr = json_object_get(k, "hit_rate_pct"),
		     *sec = json_object_get(k, "global_sectors_per_request"),
		     *tp = json_object_get(k, "tensor_pipe_pct"),
		     *db = json_object_get(k, "dram_bytes"),
		     *bc = json_object_get(k, "shared_bank_conflicts"),
		     *lm = json_object_get(k, "local_memory_sectors");
	fprintf(f, "\n%s %s: ", str(k, "program"), str(k, "name"));
	metric(f, k, "duration_us", 1, " us", " under replay, grid ");
	metric(f, l, "grid", 1, "", " x ");
	metric(f, l, "block", 1, "", " threads, ");
	metric(f, k, "registers_per_thread", 1, "", " registers\n");
	fprintf(f, "  %s\n  speed of light: DRAM ", str(k, "verdict"));
	metric(f, sol, "dram", 1, "%", " (the cost model's bytes in its time: ");
	metric(f, sol, "dram_cost_model", 1, "%", "), L2 ");
	metric(f, sol, "l2", 1, "%", ", L1/shared ");
	metric(f, sol, "l1_shared", 1, "%", ", compute ");
	metric(f, sol, "compute", 1, "%", "\n  occupancy: ");
	metric(f, occ, "achieved", 1, "%", " achieved of ");
	metric(f, occ, "theoretical", 1, "%", " theoretical");
	const char *lim = json_string_value(json_object_get(occ, "limiter"));
	fprintf(f, " (limit: %s)\n  stalls:", lim ? lim : "-");
	const json_t *st = json_object_get(k, "stalls");
	for (size_t i = 0; i < json_array_size(st); i++) {
		fprintf(f, "%s %s ", i ? "," : "", str(json_array_get(st, i), "reason"));
		metric(f, json_array_get(st, i), "share_pct", 1, "%", "");
	}
	fputs("\n  hit rate: L1 ", f);
	metric(f, hr, "l1", 1, "%", ", L2 ");
	metric(f, hr, "l2", 1, "%", "; global sectors per request: load ");
	metric(f, sec, "load", 1, "", ", store ");
	metric(f, sec, "store", 1, "", "\n  shared bank conflicts ");
	metric(f, bc, "count", 1, "", "; local memory sectors ");
	metric(f, lm, "load", 1, "", " loaded, ");
	metric(f, lm, "store", 1, "", " stored; tensor pipe: wgmma ");
	metric(f, tp, "wgmma", 1, "%", ", hmma ");
	metric(f, tp, "hmma", 1, "%", "\n  DRAM: ");
	metric(f, db, "read", 1e6, " MB", " read, ");
	metric(f, db, "write", 1e6, " MB", " written; the cost model counts ");
	metric(f, db, "cost_model", 1e6, " MB", " (moved ");
	metric(f, db, "moved_vs_cost", 1, "x", " of it)\n");
	const json_t *fs = json_object_get(k, "findings");
	for (size_t i = 0; i < json_array_size(fs); i++) {
		const json_t *x = json_array_get(fs, i);
		fprintf(f, "  - %s (%s)\n", str(x, "text"), str(x, "guide"));
	}
}

/* The readable answer: each kernel's figures and findings, then what to
 * try, last. */
static void print_profile(FILE *f, const json_t *r)
{
	const json_t *size = json_object_get(r, "size"), *v;
	const char *name;
	fputs("profile at", f);
	json_object_foreach((json_t *)size, name, v)
		fprintf(f, " %s=%lld", name, (long long)json_integer_value(v));
	const json_t *dev = json_object_get(r, "device");
	if (dev)
		fprintf(f, " on %s", str(dev, "name"));
	fputc('\n', f);
	const json_t *ks = json_object_get(r, "kernels");
	for (size_t i = 0; i < json_array_size(ks); i++)
		print_kernel(f, json_array_get(ks, i));
	if (json_object_get(r, "baseline_unavailable"))
		fprintf(f, "\nbaseline not profiled: %s\n", str(r, "baseline_unavailable"));
	const json_t *mu = json_object_get(r, "metrics_unavailable");
	for (size_t i = 0; i < json_array_size(mu); i++)
		fprintf(f, "%s%s", i ? ", " : "\nmetrics this ncu does not know: ",
			json_string_value(json_array_get(mu, i)));
	fprintf(f, "%s\nraw report: %s (run %s)\n", json_array_size(mu) ? "\n" : "",
		str(r, "raw_report"), str(r, "run_id"));
	const json_t *tr = json_object_get(r, "try");
	for (size_t i = 0; i < json_array_size(tr); i++)
		fprintf(f, "%s  %zu. %s\n", i ? "" : "\nworth trying:\n", i + 1,
			json_string_value(json_array_get(tr, i)));
}

static int profile_main(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};
	cli_common_init(&co);
	if (cli_common_parse(&co, &argc, argv, &err))
		return cli_usage_error("profile", "%s", err.msg);
	const char *path = NULL;
	json_t *args = json_object();
	int rc = 0;
	for (int i = 1; i < argc && !rc; i++) {
		int taken = cli_opts_take(&PROFILE_OPTS, argc, argv, &i, args, &err);
		if (taken < 0)
			rc = cli_usage_error("profile", "%s", err.msg);
		else if (taken)
			continue;
		else if (argv[i][0] == '-' && argv[i][1])
			rc = cli_usage_error("profile", "unknown option %s", argv[i]);
		else if (path)
			rc = cli_usage_error("profile", "one SPEC.json only");
		else
			path = argv[i];
	}
	if (!rc && !path)
		rc = cli_usage_error("profile", "SPEC.json missing");
	json_t *spec = rc ? NULL : cli_load_spec("profile", path);
	if (!spec) {
		json_decref(args);
		return rc ? rc : CLI_EXIT_FAIL;
	}
	json_object_set_new(args, "spec", spec);
	return cli_tool_run_print(&co, "profile_kernel", args, print_profile);
}

const struct cli_cmd CLI_PROFILE[] = {
	{"profile", "profile a kernel spec under Nsight Compute: why it is slow", PROFILE_USAGE,
	 profile_main, &PROFILE_OPTS, PROFILE_USAGE_TAIL},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
