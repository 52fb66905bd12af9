/* cli_exec: the executor options of `kforge serve` (--executor slurm
 * --partition ...) and `kforge exec-job DIR`, what a Slurm job runs on the
 * compute node: the tool call in DIR/call.json through this node's own
 * GPU pool, its answer written to DIR/answer.json (atomically, so the
 * daemon never reads half of one). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/exec/exec.h"
#include "server/app.h"
#include "server/cli/cli.h"
#include "server/mcp/mcp.h"

/* "--name N" with N in 1..100000 into *dst: 1, 0 (another option) or
 * KF_EINVAL. */
static int count_opt(int argc, char **argv, int *i, const char *name, int *dst, struct kf_err *err)
{
	int missing = 0;
	const char *v = cli_opt_value(argc, argv, i, name, &missing);
	char *end = NULL;
	long n;

	if (!v && !missing)
		return 0;
	n = v ? strtol(v, &end, 10) : -1;
	if (missing || !end || *end || n < 1 || n > 100000)
		return kf_err_set(err, KF_EINVAL, "%s needs a number from 1 to 100000", name);
	*dst = (int)n;
	return 1;
}

int cli_exec_serve_opt(int argc, char **argv, int *i, struct exec_config *xc, struct kf_err *err)
{
	static const char *const STR_OPTS[] = {"--partition", "--gres", "--account", "--time-limit",
					       "--shared-dir"};
	const char **fields[] = {&xc->partition, &xc->gres, &xc->account, &xc->time_limit,
				 &xc->shared_dir};
	const char *v;
	int missing = 0, r;

	if ((v = cli_opt_value(argc, argv, i, "--executor", &missing)) || missing) {
		if (missing || (strcmp(v, "local") && strcmp(v, "slurm")))
			return kf_err_set(err, KF_EINVAL,
					  "--executor needs local or slurm, not '%s'", v ? v : "");
		xc->kind = strcmp(v, "slurm") == 0 ? EXEC_SLURM : EXEC_LOCAL;
		return 1;
	}
	for (size_t k = 0; k < sizeof(STR_OPTS) / sizeof(STR_OPTS[0]); k++)
		if ((v = cli_opt_value(argc, argv, i, STR_OPTS[k], &missing)) || missing) {
			if (missing || !*v)
				return kf_err_set(err, KF_EINVAL, "%s needs a value", STR_OPTS[k]);
			*fields[k] = v;
			return 1;
		}
	if ((r = count_opt(argc, argv, i, "--max-jobs-per-client", &xc->max_per_client, err)))
		return r;
	if ((r = count_opt(argc, argv, i, "--slurm-poll-ms", &xc->poll_ms, err)))
		return r;
	return 0;
}

int cli_exec_serve_check(const struct exec_config *xc, struct kf_err *err)
{
	if (xc->kind == EXEC_LOCAL && (xc->partition || xc->gres || xc->account || xc->time_limit ||
				       xc->shared_dir || xc->max_per_client))
		return kf_err_set(err, KF_EINVAL,
				  "--partition, --gres, --account, --time-limit, --shared-dir and "
				  "--max-jobs-per-client need --executor slurm");
	return 0;
}

/* --- exec-job ------------------------------------------------------------ */

static const char EXEC_JOB_USAGE[] =
	"usage: kforge exec-job DIR [--sandbox=bwrap|none] [--data-dir DIR]\n"
	"\n"
	"What a Slurm job of `kforge serve --executor slurm` runs on the compute\n"
	"node: the tool call in DIR/call.json on this node's GPUs, the answer\n"
	"written to DIR/answer.json. The data dir defaults to $KFORGE_NODE_DATA_DIR,\n"
	"else /tmp/kforge-node-UID (node-local: the compile cache and a state.db\n"
	"of this node's own runs). Not for interactive use.\n";

/* {"tool", "is_error", "code", "message", "result", "node"} to
 * DIR/answer.json via a temporary name. */
static int write_answer(const char *dir, const char *tool, json_t *result, int is_error,
			struct kf_err *err)
{
	char p[PATH_MAX + 16], tmp[PATH_MAX + 32], host[256] = "";
	const json_t *e = json_object_get(result, "error");
	const char *code = json_string_value(json_object_get(e, "code"));
	const char *msg = json_string_value(json_object_get(e, "message"));
	json_t *a;
	int rc = 0;

	gethostname(host, sizeof(host) - 1);
	if (is_error && !code)
		code = kf_err_name(KF_EFAULT); /* a verdict: the answer explains it */
	a = json_pack("{s:s, s:b, s:s, s:s, s:O, s:s}", "tool", tool, "is_error", is_error, "code",
		      is_error ? code : "ok", "message", msg ? msg : "", "result", result, "node",
		      host);
	snprintf(p, sizeof(p), "%s/answer.json", dir);
	snprintf(tmp, sizeof(tmp), "%s/.answer.json.tmp", dir);
	if (!a || json_dump_file(a, tmp, JSON_COMPACT) || rename(tmp, p))
		rc = kf_err_set(err, KF_EIO, "cannot write %s: %s", p, strerror(errno));
	json_decref(a);
	return rc;
}

static int cmd_exec_job(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};
	struct app *app = NULL;
	char p[PATH_MAX + 16], data[PATH_MAX];
	json_t *call = NULL, *result = NULL;
	const char *tool;
	int is_error = 0, rc;

	cli_common_init(&co);
	if (cli_common_parse(&co, &argc, argv, &err))
		return cli_usage_error("exec-job", "%s", err.msg);
	if (argc != 2)
		return cli_usage_error("exec-job", "needs the job directory");
	snprintf(p, sizeof(p), "%s/call.json", argv[1]);
	call = json_load_file(p, 0, NULL);
	tool = json_string_value(json_object_get(call, "tool"));
	if (!tool || !json_is_object(json_object_get(call, "arguments"))) {
		fprintf(stderr, "kforge exec-job: %s is not a call ({\"tool\", \"arguments\"})\n",
			p);
		json_decref(call);
		return CLI_EXIT_USAGE;
	}
	if (!co.data_dir) {
		const char *d = getenv("KFORGE_NODE_DATA_DIR");
		snprintf(data, sizeof(data), "%s", d && *d ? d : "");
		if (!data[0])
			snprintf(data, sizeof(data), "/tmp/kforge-node-%u", (unsigned)getuid());
		if (mkdir(data, 0700) && errno != EEXIST) {
			fprintf(stderr, "kforge exec-job: cannot create %s: %s\n", data,
				strerror(errno));
			json_decref(call);
			return CLI_EXIT_ENV;
		}
		co.data_dir = data;
	}
	rc = cli_app_open(&co, &app, &err);
	if (!rc)
		rc = mcp_tool_call(app, tool, json_object_get(call, "arguments"), &result,
				   &is_error, &err);
	if (!rc)
		rc = write_answer(argv[1], tool, result, is_error, &err);
	if (rc)
		fprintf(stderr, "kforge exec-job: %s\n", err.msg);
	json_decref(result);
	json_decref(call);
	app_close(app);
	return rc ? cli_exit_code(rc) : CLI_EXIT_OK;
}

const struct cli_cmd CLI_EXEC[] = {
	{"exec-job", "run one GPU job of a Slurm executor (on the compute node)", EXEC_JOB_USAGE,
	 cmd_exec_job, NULL, NULL},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
