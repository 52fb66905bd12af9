/* cli_profile: `kforge profile SPEC.json` through the profile_kernel tool:
 * the kernel under Nsight Compute at one size of the spec, the findings
 * and what to try (docs/profile.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/cli/cli.h"

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
	"Options:\n"
	"  --size I        index into the spec's sizes (default 0)\n"
	"  --baseline      profile the spec's baseline too\n"
	"  --timeout-s N   the kernel's limit in the warm-up (default: from the work)\n"
	"\n" CLI_COMMON_HELP "\n"
	"Needs a GPU and ncu (on PATH, in the CUDA toolkit or KFORGE_NCU). Exit: 0\n"
	"profiled, 1 no counters or the kernel failed, 2 usage, 3 no GPU, 4 no ncu.\n"
	"\n"
	"Example:\n"
	"  kforge profile skill/examples/qwen3-rmsnorm/plain.json --size 0\n";

static int int_opt(const char *name, const char *v, long lo, long hi, long *out)
{
	char *end;
	errno = 0;
	long d = strtol(v, &end, 10);
	if (errno || !*v || *end || d < lo || d > hi)
		return cli_usage_error("profile", "%s: '%s' is not a whole number from %ld to %ld",
				       name, v, lo, hi);
	*out = d;
	return 0;
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
		int missing = 0;
		const char *v;
		long d;
		if ((v = cli_opt_value(argc, argv, &i, "--size", &missing))) {
			if (!(rc = int_opt("--size", v, 0, 31, &d)))
				json_object_set_new(args, "size", json_integer(d));
		} else if ((v = cli_opt_value(argc, argv, &i, "--timeout-s", &missing))) {
			if (!(rc = int_opt("--timeout-s", v, 1, 600, &d)))
				json_object_set_new(args, "timeout_s", json_integer(d));
		} else if (missing) {
			rc = cli_usage_error("profile", "%s needs a value", argv[i]);
		} else if (strcmp(argv[i], "--baseline") == 0) {
			json_object_set_new(args, "baseline", json_true());
		} else if (argv[i][0] == '-' && argv[i][1]) {
			rc = cli_usage_error("profile", "unknown option %s", argv[i]);
		} else if (path) {
			rc = cli_usage_error("profile", "one SPEC.json only");
		} else {
			path = argv[i];
		}
	}
	if (!rc && !path)
		rc = cli_usage_error("profile", "SPEC.json missing");
	json_t *spec = rc ? NULL : cli_load_spec("profile", path);
	if (!spec) {
		json_decref(args);
		return rc ? rc : CLI_EXIT_FAIL;
	}
	json_object_set_new(args, "spec", spec);
	return cli_tool_run(&co, "profile_kernel", args);
}

const struct cli_cmd CLI_PROFILE[] = {
	{"profile", "profile a kernel spec under Nsight Compute: why it is slow", PROFILE_USAGE,
	 profile_main},
	{NULL, NULL, NULL, NULL},
};
