/* app: opens the daemon's long-lived modules in order and closes them in
 * reverse; see app.h. Also resolves the defaults the configuration leaves
 * open: the data dir ($XDG_DATA_HOME/kforge or ~/.local/share/kforge) and
 * the knowledge base ($KFORGE_KB, then knowledge.db next to the binary, then
 * ../share/kforge/knowledge.db for an installed binary). Each domain adds its
 * open/close lines below (small edits, marked). */
#include "server/app.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "knowledge/kb.h" /* kb */
#include "base/fs.h"
#include "base/log.h"
#include "sandbox/compile/compile.h" /* compile */
#include "sandbox/exec/exec.h"	     /* exec */
#include "sandbox/history/history.h" /* history */
#include "sandbox/pool/runner.h"     /* runner */
#include "server/mcp/tools.h"
#include "server/tools/groups.h"
#include "server/tools/tools_exec.h"
#include "server/tools/tools_jobs.h"

#define APP_MAX_MESSAGE_BYTES_DEFAULT (8u << 20)

/* The app plus the storage its resolved paths live in. */
struct app_priv {
	struct app app; /* first, so a struct app * is a struct app_priv * */
	char data_dir[PATH_MAX];
	char kb_path[PATH_MAX];
	int check_ready; /* app->check initialised (check_env_fini at close) */
};

/* mkdir -p with mode 0700 for the parts it creates. */
static int make_dirs(const char *path, struct kf_err *err)
{
	char failed[PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(failed))
		return kf_err_set(err, KF_EINVAL, "data dir '%s': empty or too long", path);
	if (fs_mkdir_p(path, 0700, failed, sizeof(failed)) != 0)
		return kf_err_set(err, KF_EIO, "data dir: cannot create '%s': %s", failed,
				  strerror(errno));
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return kf_err_set(err, KF_EIO, "data dir '%s' is not a directory", path);
	if (access(path, W_OK) != 0)
		return kf_err_set(err, KF_EPERM, "data dir '%s' is not writable", path);
	return 0;
}

static int resolve_data_dir(struct app_priv *p, struct kf_err *err)
{
	const char *cfg = p->app.cfg.data_dir, *xdg, *home;
	int n;

	if (cfg && *cfg)
		n = snprintf(p->data_dir, sizeof(p->data_dir), "%s", cfg);
	else if ((xdg = getenv("XDG_DATA_HOME")) && *xdg == '/')
		n = snprintf(p->data_dir, sizeof(p->data_dir), "%s/kforge", xdg);
	else if ((home = getenv("HOME")) && *home)
		n = snprintf(p->data_dir, sizeof(p->data_dir), "%s/.local/share/kforge", home);
	else
		return kf_err_set(err, KF_EINVAL,
				  "data dir: neither --data-dir, XDG_DATA_HOME nor HOME is set");
	if (n < 0 || (size_t)n >= sizeof(p->data_dir))
		return kf_err_set(err, KF_EINVAL, "data dir: path too long");
	p->app.cfg.data_dir = p->data_dir;
	return make_dirs(p->data_dir, err);
}

/* Picks the first existing candidate; without one, the first candidate, so
 * the knowledge module reports a missing file by its expected path. */
static void resolve_kb(struct app_priv *p)
{
	char exe[PATH_MAX], cand[2][PATH_MAX];
	const char *env = getenv("KFORGE_KB");

	if (p->app.cfg.kb_path && *p->app.cfg.kb_path)
		return;
	if (env && *env) {
		snprintf(p->kb_path, sizeof(p->kb_path), "%s", env);
		p->app.cfg.kb_path = p->kb_path;
		return;
	}
	if (fs_exe_dir(exe, sizeof(exe)) != 0) {
		snprintf(p->kb_path, sizeof(p->kb_path), "knowledge.db");
		p->app.cfg.kb_path = p->kb_path;
		return;
	}
	snprintf(cand[0], sizeof(cand[0]), "%.*s/knowledge.db", PATH_MAX - 16, exe);
	snprintf(cand[1], sizeof(cand[1]), "%.*s/../share/kforge/knowledge.db", PATH_MAX - 32, exe);
	snprintf(p->kb_path, sizeof(p->kb_path), "%s", cand[0]);
	for (int i = 0; i < 2; i++)
		if (access(cand[i], R_OK) == 0) {
			snprintf(p->kb_path, sizeof(p->kb_path), "%s", cand[i]);
			break;
		}
	p->app.cfg.kb_path = p->kb_path;
}

/* runner: state.db in the data dir, and the job runner over every GPU the
 * driver reports (probed at the first GPU job), compiles in nproc slots,
 * 64 waiting jobs per queue, a 15-minute backstop per job. */
static int app_open_history_runner(struct app *app, struct kf_err *err)
{
	char db[PATH_MAX + 16];
	int rc;

	snprintf(db, sizeof(db), "%s/state.db", app->cfg.data_dir);
	rc = history_open(db, &app->history, err);
	if (rc)
		return rc;
	return runner_new(RUNNER_GPUS_PROBE, 0, 64, 15 * 60 * 1000, NULL, &app->runner, err);
}

/* exec: GPU tool calls run here (local) or go to Slurm; a Slurm executor
 * that cannot work (no sbatch, no shared dir, unknown partition) stops the
 * start, and the jobs a previous daemon left are followed again. */
static int app_open_exec(struct app *app, struct kf_err *err)
{
	struct exec_config local = {.kind = EXEC_LOCAL};
	int rc = exec_open(app->cfg.exec ? app->cfg.exec : &local, app->history, &app->exec, err);

	if (rc)
		return rc;
	return exec_recover(app->exec, tools_exec_recovered, app, err);
}

/* kb: a missing or stale knowledge.db must not stop compiles and GPU
 * runs, so it is logged and the knowledge tools answer with the reason. */
static void app_open_kb(struct app *app)
{
	struct kf_err e = {0};

	if (kb_open(app->cfg.kb_path, &app->kb, &e) != 0)
		log_warn("kb", "%s; knowledge tools will answer with an error", e.msg);
}

/* compile: nvcc/NVRTC in bubblewrap (or plain with --sandbox=none), the
 * artifact cache in data_dir/artifacts. A host where bubblewrap cannot make
 * namespaces still starts: compiles are refused with the reason. */
static void app_open_compiler(struct app *app)
{
	struct compile_config cc = {.data_dir = app->cfg.data_dir,
				    .kb = app->kb,
				    .sandbox_none = app->cfg.sandbox == APP_SANDBOX_NONE};
	struct kf_err e = {0};
	int rc = compile_open(&cc, &app->cc, &e);

	if (rc) {
		log_warn("compile", "%s; compile_kernel will answer with an error", e.msg);
		return;
	}
	if (compile_sandbox_usable(app->cc, &e) != 0)
		log_warn("compile", "%s", e.msg);
}

int app_tools_load(int fixtures, struct kf_err *err)
{
	/* In the order tools/list shows them; the conformance fixtures last, so
	 * n - 1 leaves them out. */
	const struct tool_group *groups[] = {&TOOLS_KB,	     &TOOLS_COMPILE, &TOOLS_CHECK_BENCH,
					     &TOOLS_PROFILE, &TOOLS_MODEL,   &TOOLS_TORCH,
					     &TOOLS_RUNS,    &TOOLS_PROMPTS, &TOOLS_FIXTURES};
	size_t n = sizeof(groups) / sizeof(groups[0]);

	tools_set_admission(tools_jobs_admit, tools_jobs_release);
	return tools_load_groups(groups, fixtures ? n : n - 1, err);
}

int app_open(const struct app_config *cfg, struct app **out, struct kf_err *err)
{
	struct app_priv *p;
	struct app *app;
	int rc;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return kf_err_set(err, KF_ENOMEM, "app: out of memory");
	app = &p->app;
	app->cfg = *cfg;
	if (app->cfg.max_message_bytes == 0)
		app->cfg.max_message_bytes = APP_MAX_MESSAGE_BYTES_DEFAULT;
	rc = resolve_data_dir(p, err);
	if (rc)
		goto out;
	resolve_kb(p);
	log_debug("app", "data dir %s, knowledge base %s, sandbox %s", app->cfg.data_dir,
		  app->cfg.kb_path, app->cfg.sandbox == APP_SANDBOX_NONE ? "none" : "bwrap");

	/* Domain modules, in dependency order (each adds its lines here). */
	app_open_kb(app);			/* kb: knowledge.db, read-only; never fatal */
	app_open_compiler(app);			/* compile: jail + artifact cache; never fatal */
	rc = app_open_history_runner(app, err); /* runner: state.db + GPU pool */
	if (rc)
		goto out;
	rc = app_open_exec(app, err); /* exec: local, or Slurm */
	if (rc)
		goto out;
	rc = tools_jobs_open(app, err); /* GPU job admission per client */
	if (rc)
		goto out;
	app->check = (struct check_env){.data_dir = app->cfg.data_dir, /* check: */
					.sandbox_none = app->cfg.sandbox == APP_SANDBOX_NONE,
					.kb = app->kb,
					.cc = app->cc,
					.runner = app->runner,
					.history = app->history,
					.warm_harness = app->cfg.warm_harness};
	check_env_init(&app->check);
	p->check_ready = 1;

out:
	if (rc) {
		app_close(app);
		return rc;
	}
	*out = app;
	return 0;
}

void app_close(struct app *app)
{
	if (!app)
		return;
	/* Domain modules, in reverse order (each adds its lines here). */
	tools_jobs_close(app);	  /* no call is running any more */
	exec_close(app->exec);	  /* exec: Slurm jobs go on; a restart follows them */
	runner_free(app->runner); /* runner: waits for running jobs */
	if (((struct app_priv *)app)->check_ready)
		check_env_fini(&app->check); /* check: the GPU jail, after the last job */
	history_close(app->history);
	compile_close(app->cc); /* compile */
	kb_close(app->kb);	/* kb: opened first, closed last */

	free((struct app_priv *)app);
}
