/* cli_eval: `kforge eval` — the task set as prompts, and a directory of
 * solutions scored with the full harness: each solution is checked
 * (check_kernel: every safeguard) and, when correct, benchmarked
 * (benchmark_kernel: verified after timing) through the same tool calls an
 * agent makes, so every attempt is a run in the history and the correct
 * ones export as data. fast_p is the share of the selected tasks whose
 * solution is correct and at least p times faster than the task's baseline
 * (KernelBench's metric); a task without a baseline counts only for p = 0. */
#include "server/cli/cli.h"
#include "server/cli/cli_opts.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "kernels/op.h"
#include "sandbox/exec/exec.h"
#include "server/cli/cli_eval.h"
#include "server/mcp/mcp.h"

#define SOLUTION_MAX_BYTES (1u << 20)
#define EVAL_P_COUNT	   4
static const double EVAL_P[EVAL_P_COUNT] = {0, 1, 1.5, 2};

static const char EVAL_USAGE[] =
	"usage: kforge eval list [--tasks DIR] [--json]\n"
	"       kforge eval prompt TASK [--tasks DIR]\n"
	"       kforge eval run SOLUTIONS_DIR [--tasks DIR] [--only ID,ID] [--timeout-s N]\n"
	"                       [--budget-ms N] [--out FILE] [--json]\n"
	"\n"
	"The eval task set (kernels/eval/*.json: id, description and math, reference,\n"
	"sizes, spec skeleton, baseline). `prompt` prints a task as a prompt a model\n"
	"can answer. `run` scores SOLUTIONS_DIR/ID.cu (device code) with the launch in\n"
	"SOLUTIONS_DIR/ID.json ({\"launch\": [...], \"notes\": \"...\"}): check_kernel with\n"
	"every safeguard, then benchmark_kernel against the baseline. A solution that\n"
	"does not compile, faults, hangs or is wrong is scored failed with its reason\n"
	"and the eval goes on. Reports correctness and fast_p for p = 0, 1, 1.5, 2\n"
	"over the selected tasks, a per-task table, and JSON (--json, --out FILE).\n"
	"  --tasks DIR     the task set (default: kernels/eval of this kforge)\n"
	"  --only ID,ID    these tasks only\n"
	"  --timeout-s N   per harness run (default 30)\n"
	"  --budget-ms N   benchmark budget per size (default 500)\n"
	"  --executor slurm --partition P --shared-dir DIR [--gres G] [--account A]\n"
	"  [--time-limit T] [--max-jobs-per-client N]\n"
	"                  score on a Slurm cluster, every task at once: the checks\n"
	"                  (then the benchmarks) go as job arrays (docs/runs.md)\n"
	"\n" CLI_COMMON_HELP "\n"
	"Examples:\n"
	"  kforge eval prompt rmsnorm_bf16\n"
	"  kforge eval run my-model-solutions --out results.json\n";

/* --timeout-s goes to check_kernel and benchmark_kernel alike (the same
 * bounds), --budget-ms to benchmark_kernel: their schemas check the values
 * (cli_opts.h); eval's own defaults (30 s, 500 ms) are in EVAL_USAGE. */
static const struct cli_opt EVAL_CHECK_OPT_TABLE[] = {
	{"--timeout-s", "timeout_s", CLI_OPT_VALUE, "N", "per harness run"},
	{NULL, NULL, CLI_OPT_VALUE, NULL, NULL},
};
static const struct cli_opt EVAL_BENCH_OPT_TABLE[] = {
	{"--budget-ms", "budget_ms", CLI_OPT_VALUE, "N", "benchmark budget per size"},
	{NULL, NULL, CLI_OPT_VALUE, NULL, NULL},
};
static const struct cli_opts EVAL_CHECK_OPTS = {"check_kernel", EVAL_CHECK_OPT_TABLE};
static const struct cli_opts EVAL_BENCH_OPTS = {"benchmark_kernel", EVAL_BENCH_OPT_TABLE};

static char *read_small(const char *path, size_t cap)
{
	char *buf = NULL;
	return fs_read_file(path, cap, 0, &buf, NULL) == 0 ? buf : NULL;
}

/* For an op task: the op's tensors, scalars, constraints and sizes, which
 * the shorthand spec leaves implicit ("$dtype" is the task's dtype). */
static void op_part(const char *name)
{
	const struct op_template *op = op_find(name);
	json_t *j = op ? json_loads(op->spec_json, 0, NULL) : NULL, *keep;
	char *s;

	if (!j)
		return;
	keep = json_pack("{s:O*, s:O*, s:O*, s:O*}", "tensors", json_object_get(j, "tensors"),
			 "scalars", json_object_get(j, "scalars"), "constraints",
			 json_object_get(j, "constraints"), "sizes",
			 json_object_get(j, "default_sizes"));
	s = json_dumps(keep, JSON_INDENT(2));
	printf("\nThe op's tensors, scalars, constraints and sizes (\"$dtype\" is the task's "
	       "dtype; args name them):\n\n```json\n%s\n```\n",
	       s ? s : "{}");
	free(s);
	json_decref(keep);
	json_decref(j);
}

static int prompt_main(const json_t *t)
{
	const json_t *spec = json_object_get(t, "spec");
	char *s = json_dumps(spec, JSON_INDENT(2));

	printf("# Task %s\n\n%s\n\nMath: %s\n\n", json_string_value(json_object_get(t, "id")),
	       json_string_value(json_object_get(t, "description")),
	       json_string_value(json_object_get(t, "math")));
	printf("Write CUDA device code (extern \"C\" __global__ kernels; kforge owns the host "
	       "code) for this kernel spec, and the launch list that runs it (grid, block, "
	       "shared_bytes and args as expressions over the sizes). Your kernel is checked "
	       "against the reference on fresh secret inputs, at every size plus one it "
	       "chooses, with poisoned outputs, guard bands, input and determinism checks, "
	       "then timed against the baseline (%s). Answer with two files: %s.cu (the "
	       "source) and %s.json ({\"launch\": [...], \"notes\": \"why it is fast\"}).\n\n",
	       json_string_value(json_object_get(json_object_get(t, "baseline"), "why")),
	       json_string_value(json_object_get(t, "id")),
	       json_string_value(json_object_get(t, "id")));
	printf("Spec (without source and launch):\n\n```json\n%s\n```\n", s ? s : "{}");
	free(s);
	op_part(json_string_value(json_object_get(t, "op")));
	return CLI_EXIT_OK;
}

/* The spec to score: the task's skeleton with the solution's source and
 * launch. Returns new, or NULL with why written. */
static json_t *solution_spec(const char *dir, const json_t *t, json_t **meta, char *why, size_t cap)
{
	const char *id = json_string_value(json_object_get(t, "id"));
	char path[2048];
	char *src;
	json_t *spec;
	json_error_t je;

	*meta = NULL;
	snprintf(path, sizeof(path), "%s/%s.cu", dir, id);
	src = read_small(path, SOLUTION_MAX_BYTES);
	if (!src) {
		snprintf(why, cap, "no solution: %s missing, unreadable or over 1 MiB", path);
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/%s.json", dir, id);
	*meta = json_load_file(path, 0, &je);
	if (!*meta && access(path, F_OK) == 0) {
		snprintf(why, cap, "%s: line %d: %s", path, je.line, je.text);
		free(src);
		return NULL;
	}
	spec = json_deep_copy(json_object_get(t, "spec"));
	json_object_set_new(spec, "source", json_string(src));
	free(src);
	if (json_is_array(json_object_get(*meta, "launch")))
		json_object_set(spec, "launch", json_object_get(*meta, "launch"));
	if (!json_object_get(spec, "launch")) {
		snprintf(why, cap, "no launch: %s must hold {\"launch\": [...]}", path);
		json_decref(spec);
		return NULL;
	}
	return spec;
}

/* One tool call; returns its result (new) with *ok (no error, passed). */
static json_t *call(struct app *app, const char *tool, json_t *args, int *ok)
{
	struct kf_err err = {0};
	json_t *res = NULL;
	int is_error = 0;

	if (mcp_tool_call(app, tool, args, &res, &is_error, &err)) {
		json_decref(res);
		res = json_pack("{s:s}", "summary", err.msg);
		is_error = 1;
	}
	json_decref(args);
	*ok = !is_error && !json_is_false(json_object_get(res, "passed"));
	return res;
}

/* Scores task t with the solution in dir. Returns the row (new). */
static json_t *score(struct app *app, const char *dir, const json_t *t, int timeout_s,
		     int budget_ms)
{
	char why[2600] = "", desc[4096];
	json_t *meta, *spec = solution_spec(dir, t, &meta, why, sizeof(why));
	json_t *row = json_pack("{s:O, s:O*, s:b}", "id", json_object_get(t, "id"), "level",
				json_object_get(t, "level"), "correct", 0);
	json_t *res, *args;
	const json_t *weak;
	int ok;

	if (!spec) {
		json_object_set_new(row, "reason", json_string(why));
		json_decref(meta);
		return row;
	}
	snprintf(desc, sizeof(desc), "%s Math: %s",
		 json_string_value(json_object_get(t, "description")),
		 json_string_value(json_object_get(t, "math")));
	args = json_pack("{s:O, s:s, s:i}", "spec", spec, "description", desc, "timeout_s",
			 timeout_s);
	if (json_is_string(json_object_get(meta, "notes")))
		json_object_set(args, "notes", json_object_get(meta, "notes"));
	res = call(app, "check_kernel", json_deep_copy(args), &ok);
	json_object_set(row, "check_run", json_object_get(res, "run_id"));
	weak = json_object_get(json_object_get(res, "flags"), "weak_reference");
	if (ok && weak) {
		/* A pass against a weak reference proves nothing (a kernel writing
		 * zeros or one value would pass): not correct, and the dataset
		 * would not export it either. */
		ok = 0;
		snprintf(why, sizeof(why), "weak reference: %s", json_string_value(weak));
		json_object_set_new(res, "summary", json_string(why));
	}
	if (json_object_size(json_object_get(res, "flags")))
		json_object_set(row, "flags", json_object_get(res, "flags"));
	if (ok) {
		json_object_set_new(args, "budget_ms", json_integer(budget_ms));
		json_decref(res);
		res = call(app, "benchmark_kernel", json_incref(args), &ok);
		json_object_set(row, "bench_run", json_object_get(res, "run_id"));
		json_object_set(row, "speedup",
				json_object_get(json_object_get(res, "speedup"), "value"));
	}
	json_object_set_new(row, "correct", json_boolean(ok));
	if (!ok)
		json_object_set(row, "reason", json_object_get(res, "summary"));
	if (!ok && json_array_size(json_object_get(res, "safeguards_fired")))
		json_object_set(row, "safeguards", json_object_get(res, "safeguards_fired"));
	json_decref(res);
	json_decref(args);
	json_decref(spec);
	json_decref(meta);
	return row;
}

/* The summary object: fast_p over n tasks, the rows. Takes rows. */
static json_t *report(json_t *rows, size_t n)
{
	json_t *fast = json_object(), *r;
	char summary[256], key[32];
	size_t i, solved = 0;

	for (int k = 0; k < EVAL_P_COUNT; k++) {
		size_t c = 0;
		json_array_foreach(rows, i, r) {
			const json_t *sp = json_object_get(r, "speedup");
			if (json_is_true(json_object_get(r, "correct")) &&
			    (EVAL_P[k] == 0 ||
			     (json_is_number(sp) && json_number_value(sp) >= EVAL_P[k])))
				c++;
		}
		snprintf(key, sizeof(key), "fast_%g", EVAL_P[k]);
		json_object_set_new(fast, key, json_real(n ? (double)c / (double)n : 0));
		if (k == 0)
			solved = c;
	}
	snprintf(summary, sizeof(summary),
		 "%zu of %zu tasks correct; fast_1 %.3f, fast_1.5 %.3f, fast_2 %.3f", solved, n,
		 json_real_value(json_object_get(fast, "fast_1")),
		 json_real_value(json_object_get(fast, "fast_1.5")),
		 json_real_value(json_object_get(fast, "fast_2")));
	return json_pack("{s:s, s:I, s:I, s:o, s:o}", "summary", summary, "tasks", (json_int_t)n,
			 "correct", (json_int_t)solved, "fast_p", fast, "results", rows);
}

static int in_list(const char *list, const char *id)
{
	size_t n = strlen(id);

	for (const char *p = list; p && *p;) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		if (len == n && !strncmp(p, id, n))
			return 1;
		p = c ? c + 1 : NULL;
	}
	return 0;
}

/* One task scored on its own thread (under a cluster executor). */
struct scoring {
	struct app *app;
	const char *dir;
	const json_t *task;
	int timeout_s, budget_ms;
	json_t *row;
	pthread_t th;
	int started;
};

static void *score_thread(void *arg)
{
	struct scoring *s = arg;

	s->row = score(s->app, s->dir, s->task, s->timeout_s, s->budget_ms);
	return NULL;
}

/* Scores every selected task at once, rows in task order: their checks
 * queue together at the executor and go to Slurm as job arrays, then the
 * correct ones' benchmarks. A task whose thread cannot start is scored
 * here. */
static void score_all(struct app *app, const char *dir, json_t *sel, int timeout_s, int budget_ms,
		      json_t *rows)
{
	size_t n = json_array_size(sel), i;
	struct scoring *s = calloc(n, sizeof(*s));

	for (i = 0; s && i < n; i++) {
		s[i] = (struct scoring){.app = app,
					.dir = dir,
					.task = json_array_get(sel, i),
					.timeout_s = timeout_s,
					.budget_ms = budget_ms};
		s[i].started = pthread_create(&s[i].th, NULL, score_thread, &s[i]) == 0;
	}
	for (i = 0; i < n; i++) {
		if (s && s[i].started)
			pthread_join(s[i].th, NULL);
		json_array_append_new(rows, s && s[i].started
						    ? s[i].row
						    : score(app, dir, json_array_get(sel, i),
							    timeout_s, budget_ms));
	}
	free(s);
}

static int run_main(const struct cli_common *co, const json_t *tasks, const char *dir,
		    const char *only, int timeout_s, int budget_ms, const char *out)
{
	struct kf_err err = {0};
	struct app *app = NULL;
	json_t *rows = json_array(), *sel = json_array(), *t, *res;
	struct stat st;
	size_t i, n = 0;
	int rc;

	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return cli_usage_error("eval", "SOLUTIONS_DIR %s is not a directory", dir);
	if ((rc = cli_app_open(co, &app, &err))) {
		fprintf(stderr, "kforge: %s\n", err.msg);
		json_decref(sel);
		json_decref(rows);
		return cli_exit_code(rc);
	}
	json_array_foreach(tasks, i, t) {
		const char *id = json_string_value(json_object_get(t, "id"));
		if (only && !in_list(only, id))
			continue;
		n++;
		fprintf(stderr, "kforge eval: %s\n", id);
		if (exec_is_remote(app->exec))
			json_array_append(sel, t);
		else
			json_array_append_new(rows, score(app, dir, t, timeout_s, budget_ms));
	}
	if (json_array_size(sel))
		score_all(app, dir, sel, timeout_s, budget_ms, rows);
	json_decref(sel);
	app_close(app);
	res = report(rows, n);
	if (out && json_dump_file(res, out, JSON_INDENT(1)) != 0)
		fprintf(stderr, "kforge eval: cannot write %s\n", out);
	cli_print_result(stdout, res, co->json);
	json_decref(res);
	return CLI_EXIT_OK;
}

static int list_main(const struct cli_common *co, const json_t *tasks)
{
	json_t *rows = json_array(), *t, *res;
	char summary[64];
	size_t i;

	json_array_foreach(tasks, i, t)
		json_array_append_new(rows,
				      json_pack("{s:O, s:O*, s:O}", "id", json_object_get(t, "id"),
						"level", json_object_get(t, "level"), "math",
						json_object_get(t, "math")));
	snprintf(summary, sizeof(summary), "%zu eval tasks", json_array_size(tasks));
	res = json_pack("{s:s, s:o}", "summary", summary, "tasks", rows);
	cli_print_result(stdout, res, co->json);
	json_decref(res);
	return CLI_EXIT_OK;
}

static int eval_main(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};
	const char *tdir = NULL, *only = NULL, *out = NULL, *pos = NULL, *v;
	int timeout_s = 30, budget_ms = 500, rc;
	char dir[2048];
	json_t *tasks = NULL;
	struct exec_config xc = {.kind = EXEC_LOCAL};

	cli_common_init(&co);
	if (cli_common_parse(&co, &argc, argv, &err))
		return cli_usage_error("eval", "%s", err.msg);
	if (argc < 2 ||
	    (strcmp(argv[1], "list") && strcmp(argv[1], "prompt") && strcmp(argv[1], "run")))
		return cli_usage_error("eval", "want a subcommand: list, prompt or run");
	json_t *limits = json_object(); /* --timeout-s and --budget-ms, checked */
	for (int i = 2; i < argc; i++) {
		int missing = 0;
		if ((v = cli_opt_value(argc, argv, &i, "--tasks", &missing)))
			tdir = v;
		else if (!missing && (v = cli_opt_value(argc, argv, &i, "--only", &missing)))
			only = v;
		else if (!missing && (v = cli_opt_value(argc, argv, &i, "--out", &missing)))
			out = v;
		else if (!missing &&
			 ((rc = cli_opts_take(&EVAL_CHECK_OPTS, argc, argv, &i, limits, &err)) ||
			  (rc = cli_opts_take(&EVAL_BENCH_OPTS, argc, argv, &i, limits, &err)) ||
			  (rc = cli_exec_serve_opt(argc, argv, &i, &xc, &err)))) {
			if (rc < 0) {
				json_decref(limits);
				return cli_usage_error("eval", "%s", err.msg);
			}
		} else if (missing || argv[i][0] == '-' || pos) {
			json_decref(limits);
			return cli_usage_error("eval", "unexpected '%s'", argv[i]);
		} else {
			pos = argv[i];
		}
	}
	if (json_object_get(limits, "timeout_s"))
		timeout_s = (int)json_integer_value(json_object_get(limits, "timeout_s"));
	if (json_object_get(limits, "budget_ms"))
		budget_ms = (int)json_number_value(json_object_get(limits, "budget_ms"));
	json_decref(limits);
	if (cli_exec_serve_check(&xc, &err))
		return cli_usage_error("eval", "%s", err.msg);
	xc.sandbox_none = co.sandbox == APP_SANDBOX_NONE;
	co.exec = &xc;
	if (strcmp(argv[1], "list") && !pos)
		return cli_usage_error("eval", "%s needs %s", argv[1],
				       strcmp(argv[1], "run") ? "TASK" : "SOLUTIONS_DIR");
	if (cli_eval_tasks_dir(tdir, dir, sizeof(dir)) || (rc = cli_eval_load(dir, &tasks, &err))) {
		fprintf(stderr, "kforge eval: %s\n", err.msg[0] ? err.msg : "task path too long");
		return err.code == KF_EINVAL ? CLI_EXIT_FAIL : CLI_EXIT_NOTFOUND;
	}
	if (!strcmp(argv[1], "list"))
		rc = list_main(&co, tasks);
	else if (!strcmp(argv[1], "prompt"))
		rc = cli_eval_find(tasks, pos) ? prompt_main(cli_eval_find(tasks, pos))
					       : (fprintf(stderr,
							  "kforge eval: no task '%s' "
							  "(kforge eval list)\n",
							  pos),
						  CLI_EXIT_NOTFOUND);
	else
		rc = run_main(&co, tasks, pos, only, timeout_s, budget_ms, out);
	json_decref(tasks);
	return rc;
}

const struct cli_cmd CLI_EVAL[] = {
	{"eval", "score kernel solutions on the eval task set (correctness, fast_p)", EVAL_USAGE,
	 eval_main, NULL, NULL},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
