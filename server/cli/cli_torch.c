/* cli_torch: `kforge torch-op` (the build_torch_op tool from the shell) and
 * `kforge export RUN --kernel-builder DIR` (a kernel-builder project from a
 * passing check run, written by sandbox/torchop/torchop_export.c). */
#include "server/cli/cli.h"
#include "server/cli/cli_opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sandbox/history/history.h"
#include "sandbox/torchop/torchop.h"
#include "server/app.h"

/* torch-op's options, each a build_torch_op argument whose schema gives
 * the bounds and default (cli_opts.h). */
static const struct cli_opt TORCH_OPT_TABLE[] = {
	{"--name", "name", CLI_OPT_VALUE, "NAME", "the op's name (default: the first kernel's)"},
	{"--no-verify", "verify", CLI_OPT_FALSE, NULL, "build only"},
	{"--timeout", "timeout_s", CLI_OPT_VALUE, "S", "limit of the verification job, seconds"},
	{NULL, NULL, CLI_OPT_VALUE, NULL, NULL},
};

static const struct cli_opts TORCH_OPTS = {"build_torch_op", TORCH_OPT_TABLE};

static const char TORCH_USAGE[] =
	"usage: kforge torch-op RUN|SPEC.json [--name NAME] [--no-verify] [--timeout S]\n"
	"                       [--json]\n"
	"\n"
	"Builds a kernel as a PyTorch custom op with this host's torch and verifies it\n"
	"on the GPU: torch.library.opcheck, the spec's reference, torch.compile with\n"
	"fullgraph=True, CUDA-graph capture and replay, and the op's argument errors.\n"
	"  RUN          id of a check run that passed (kforge runs --kind check)\n"
	"  SPEC.json    or a kernel spec file, as kforge check takes it\n"
	"\n"
	"Options (bounds and defaults from build_torch_op's input schema):\n";

static const char TORCH_USAGE_TAIL[] = "\n" CLI_COMMON_HELP "\n"
				       "Example:\n"
				       "  kforge torch-op r0jf3k9q2mzx7c4a\n";

static const char EXPORT_USAGE[] =
	"usage: kforge export RUN --kernel-builder DIR [--name NAME] [--force]\n"
	"\n"
	"Writes a kernel-builder project for a check run that passed: build.toml,\n"
	"flake.nix, the kernel and launcher (.cu), torch-ext/ (the TORCH_LIBRARY\n"
	"binding and the Python package with register_fake), tests/ (opcheck, the\n"
	"reference comparison, torch.compile), benchmarks/, setup.py (plain\n"
	"setuptools + torch cpp_extension) and a README with the run's check and\n"
	"latest benchmark. A run that did not pass is refused.\n"
	"  --kernel-builder DIR  where to write it (must not exist or be empty)\n"
	"  --name NAME           the op's name (default: the first kernel's)\n"
	"  --force               write into a non-empty DIR\n"
	"\n" CLI_COMMON_HELP "\n"
	"Example:\n"
	"  kforge export r0jf3k9q2mzx7c4a --kernel-builder ./rmsnorm-kernel\n";

static int torch_main(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};
	const char *target = NULL;
	json_t *args = json_object();

	cli_common_init(&co);
	if (cli_common_parse(&co, &argc, argv, &err)) {
		json_decref(args);
		return cli_usage_error("torch-op", "%s", err.msg);
	}
	for (int i = 1; i < argc; i++) {
		int rc = cli_opts_take(&TORCH_OPTS, argc, argv, &i, args, &err);
		if (rc < 0) {
			json_decref(args);
			return cli_usage_error("torch-op", "%s", err.msg);
		} else if (rc > 0) {
			continue;
		} else if ((argv[i][0] == '-' && argv[i][1]) || target) {
			json_decref(args);
			return cli_usage_error("torch-op", "unknown option or extra argument '%s'",
					       argv[i]);
		} else {
			target = argv[i];
		}
	}
	if (!target) {
		json_decref(args);
		return cli_usage_error("torch-op", "give a check run id or a spec file");
	}
	struct stat st;
	if (strcmp(target, "-") == 0 || stat(target, &st) == 0) {
		json_t *spec = cli_load_spec("torch-op", target);
		if (!spec) {
			json_decref(args);
			return CLI_EXIT_USAGE;
		}
		json_object_set_new(args, "spec", spec);
	} else {
		json_object_set_new(args, "run", json_string(target));
	}
	return cli_tool_run(&co, "build_torch_op", args);
}

/* The newest benchmark that measured the same source as the check. */
static json_t *latest_bench(struct history *h, const struct history_run *check)
{
	struct history_filter f;
	struct history_page page = {0};
	struct kf_err err = {0};
	json_t *found = NULL;
	history_filter_init(&f);
	f.kind = HISTORY_BENCH;
	f.status = HISTORY_OK;
	f.limit = 50;
	if (history_list(h, &f, &page, &err))
		return NULL;
	for (size_t i = 0; i < page.len && !found; i++) {
		struct history_run r = {0};
		if (!check->source_hash || !page.runs[i].source_hash ||
		    strcmp(check->source_hash, page.runs[i].source_hash) != 0)
			continue;
		if (history_get(h, page.runs[i].id, &r, &err) == 0 && r.result)
			found = json_pack("{s:s, s:O}", "run_id", r.id, "result", r.result);
		history_run_fini(&r);
	}
	history_page_fini(&page);
	return found;
}

static int export_run(struct app *app, const char *id, const char *name, const char *dir, int force)
{
	struct history_run r = {0};
	struct kf_err err = {0};
	json_t *report = NULL;
	int rc = history_get(app->history, id, &r, &err);
	if (!rc)
		rc = torchop_run_usable(id, history_kind_name(r.kind),
					history_status_name(r.status), r.result, &err);
	if (!rc && (!json_is_object(r.spec) || json_object_get(r.spec, "truncated")))
		rc = kf_err_set(&err, KF_EINVAL, "run %s: its spec was not stored whole", id);
	if (!rc) {
		json_t *bench = latest_bench(app->history, &r);
		report = json_pack("{s:s, s:s, s:O, s:o}", "run_id", id, "device",
				   r.device_name ? r.device_name : "", "check", r.result, "bench",
				   bench ? bench : json_null());
		rc = torchop_export(&app->check, r.spec, name, report, dir, force, &err);
	}
	if (rc)
		fprintf(stderr, "kforge export: %s\n", err.msg);
	else
		printf("wrote the kernel-builder project for run %s to %s (README.md says how to "
		       "build and test it)\n",
		       id, dir);
	json_decref(report);
	history_run_fini(&r);
	/* A refused run or spec is the operation failing, not the command line. */
	return rc == KF_EINVAL ? CLI_EXIT_FAIL : rc ? cli_exit_code(rc) : CLI_EXIT_OK;
}

static int export_main(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};
	const char *run = NULL, *dir = NULL, *name = NULL;
	int force = 0;

	cli_common_init(&co);
	if (cli_common_parse(&co, &argc, argv, &err))
		return cli_usage_error("export", "%s", err.msg);
	for (int i = 1; i < argc; i++) {
		int missing = 0;
		const char *v;
		if ((v = cli_opt_value(argc, argv, &i, "--kernel-builder", &missing)))
			dir = v;
		else if (!missing && (v = cli_opt_value(argc, argv, &i, "--name", &missing)))
			name = v;
		else if (!missing && strcmp(argv[i], "--force") == 0)
			force = 1;
		else if (missing || argv[i][0] == '-' || run)
			return cli_usage_error("export", "%s '%s'",
					       missing ? "a value is missing after"
						       : "unknown option or extra argument",
					       argv[i]);
		else
			run = argv[i];
	}
	if (!run || !dir || !*dir)
		return cli_usage_error("export", "give a check run id and --kernel-builder DIR");
	struct app *app = NULL;
	if (cli_app_open(&co, &app, &err)) {
		fprintf(stderr, "kforge export: %s\n", err.msg);
		return cli_exit_code(err.code);
	}
	int rc = export_run(app, run, name, dir, force);
	app_close(app);
	return rc;
}

const struct cli_cmd CLI_TORCH[] = {
	{"torch-op", "build a passing check run as a PyTorch op and verify it", TORCH_USAGE,
	 torch_main, &TORCH_OPTS, TORCH_USAGE_TAIL},
	{"export", "write a kernel-builder project for a passing check run", EXPORT_USAGE,
	 export_main, NULL, NULL},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
