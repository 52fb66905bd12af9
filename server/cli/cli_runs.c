/* cli_runs: `kforge runs` — the run history from the shell, through the
 * same tools an agent calls (list_runs, get_run, compare_runs). */
#include "server/cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char RUNS_USAGE[] =
	"usage: kforge runs [--kind compile|check|bench|calibrate] [--kernel NAME]\n"
	"                   [--status ok|failed|error] [--since WHEN] [--limit N]\n"
	"                   [--cursor C] [--json]\n"
	"       kforge runs show ID [--json]\n"
	"       kforge runs compare A B [--json]\n"
	"\n"
	"Lists past compiles, checks, benchmarks and calibrations, newest first.\n"
	"  --kind KIND      only runs of this kind\n"
	"  --kernel NAME    only runs whose kernel names contain NAME\n"
	"  --status STATUS  ok (compiled/passed/measured), failed (the kernel's\n"
	"                   fault) or error (could not run: no GPU, bad spec...)\n"
	"  --since WHEN     2026-11-30, 2026-11-30T09:00:00Z, or an age: 30m, 6h, 7d\n"
	"  --limit N        rows per page (1-500, default 20)\n"
	"  --cursor C       the next page: the next_cursor a listing printed\n"
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
	/* clang-format off */
	static const char *const string_opts[][2] = {
		{ "--kind", "kind" },     { "--kernel", "kernel" },
		{ "--status", "status" }, { "--since", "since" },
		{ "--cursor", "cursor" },
	};
	/* clang-format on */
	json_t *args = json_object();

	for (int i = 1; i < argc; i++) {
		int missing = 0, matched = 0;
		const char *v;

		for (size_t k = 0; k < sizeof(string_opts) / sizeof(string_opts[0]); k++) {
			v = cli_opt_value(argc, argv, &i, string_opts[k][0], &missing);
			if (missing)
				break;
			if (v) {
				json_object_set_new(args, string_opts[k][1], json_string(v));
				matched = 1;
				break;
			}
		}
		if (!matched && !missing) {
			v = cli_opt_value(argc, argv, &i, "--limit", &missing);
			if (v) {
				char *end;
				long n = strtol(v, &end, 10);

				if (*end || n < 1 || n > 500) {
					json_decref(args);
					return cli_usage_error(
						"runs",
						"--limit: '%s' is not a number from 1 to 500", v);
				}
				json_object_set_new(args, "limit", json_integer(n));
				matched = 1;
			}
		}
		if (missing) {
			json_decref(args);
			return cli_usage_error("runs", "%s needs a value", argv[i]);
		}
		if (!matched) {
			json_decref(args);
			return cli_usage_error("runs", "unknown option or argument '%s'", argv[i]);
		}
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
	 runs_main, NULL, NULL},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
