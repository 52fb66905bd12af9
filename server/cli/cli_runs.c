/* cli_runs: `kforge runs` — the run history from the shell, through the
 * same tools an agent calls (list_runs, get_run, compare_runs). */
#include "server/cli/cli.h"
#include "server/cli/cli_opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The listing's options, each a list_runs argument whose schema gives the
 * enum, bounds and default (cli_opts.h). */
static const struct cli_opt RUNS_OPT_TABLE[] = {
	{"--kind", "kind", CLI_OPT_VALUE, "KIND", "only runs of this kind"},
	{"--kernel", "kernel", CLI_OPT_VALUE, "NAME", "only runs whose kernel names contain NAME"},
	{"--status", "status", CLI_OPT_VALUE, "STATUS",
	 "ok: compiled, passed, measured; failed: the kernel's fault; error: could not run"},
	{"--since", "since", CLI_OPT_VALUE, "WHEN",
	 "2026-11-30, 2026-11-30T09:00:00Z, or an age: 30m, 6h, 7d"},
	{"--limit", "limit", CLI_OPT_VALUE, "N", "rows per page"},
	{"--cursor", "cursor", CLI_OPT_VALUE, "C",
	 "the next page: the next_cursor a listing printed"},
	{NULL, NULL, CLI_OPT_VALUE, NULL, NULL},
};

static const struct cli_opts RUNS_OPTS = {"list_runs", RUNS_OPT_TABLE};

static const char RUNS_USAGE[] =
	"usage: kforge runs [--kind compile|check|bench|calibrate] [--kernel NAME]\n"
	"                   [--status ok|failed|error] [--since WHEN] [--limit N]\n"
	"                   [--cursor C] [--json]\n"
	"       kforge runs show ID [--json]\n"
	"       kforge runs compare A B [--json]\n"
	"\n"
	"Lists past compiles, checks, benchmarks and calibrations, newest first.\n"
	"Options (bounds and defaults from list_runs's input schema):\n";

static const char RUNS_USAGE_TAIL[] =
	"show ID            one run, whole (spec, result, device, times)\n"
	"compare A B        two runs of one kind side by side: for benchmarks the\n"
	"                   speedup of B over A with its 95% interval, or \"no\n"
	"                   measurable difference\"; for compiles the resource\n"
	"                   changes per kernel; for checks pass/fail and errors\n"
	"\n" CLI_COMMON_HELP "\n"
	"Examples:\n"
	"  kforge runs --kind bench --since 1d\n"
	"  kforge runs show r0jf3k9q2mzx7c4a\n"
	"  kforge runs compare r0jf3k9q2mzx7c4a r0jf3kb81dd0e2yq\n";

static int run_list(const struct cli_common *co, int argc, char **argv)
{
	struct kf_err err = {0};
	json_t *args = json_object();

	for (int i = 1; i < argc; i++) {
		int rc = cli_opts_take(&RUNS_OPTS, argc, argv, &i, args, &err);
		if (rc > 0)
			continue;
		json_decref(args);
		if (rc < 0)
			return cli_usage_error("runs", "%s", err.msg);
		return cli_usage_error("runs", "unknown option or argument '%s'", argv[i]);
	}
	return cli_tool_run(co, "list_runs", args);
}

static int runs_main(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};

	cli_common_init(&co);
	if (cli_common_parse(&co, &argc, argv, &err))
		return cli_usage_error("runs", "%s", err.msg);
	if (argc >= 2 && strcmp(argv[1], "show") == 0) {
		if (argc != 3)
			return cli_usage_error("runs", "show takes one run id (from kforge runs)");
		return cli_tool_run(&co, "get_run", json_pack("{s:s}", "id", argv[2]));
	}
	if (argc >= 2 && strcmp(argv[1], "compare") == 0) {
		if (argc != 4)
			return cli_usage_error("runs", "compare takes two run ids: A B");
		return cli_tool_run(&co, "compare_runs",
				    json_pack("{s:s, s:s}", "a", argv[2], "b", argv[3]));
	}
	return run_list(&co, argc, argv);
}

const struct cli_cmd CLI_RUNS[] = {
	{"runs", "list, show and compare past compiles, checks and benchmarks", RUNS_USAGE,
	 runs_main, &RUNS_OPTS, RUNS_USAGE_TAIL},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
