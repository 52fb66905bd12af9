/* fixture: the state the suites set up the same way: a fresh temporary
 * folder, files of the source tree (tests/data), a state.db in a folder,
 * and the daemon's app on it as the tool suites run it (no GPU, no
 * sandbox). Header-only (static inline, so a suite
 * pays only for what it calls); every helper fails the test rather than
 * return an error. */
#ifndef KF_TESTS_FIXTURE_H
#define KF_TESTS_FIXTURE_H

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/log.h"
#include "sandbox/history/history.h"
#include "server/app.h"

/* Makes a new empty folder /tmp/kf-<name>-XXXXXX; its path into dir (cap
 * bytes). */
static inline void fixture_dir_new(char *dir, size_t cap, const char *name)
{
	ck_assert_int_lt(snprintf(dir, cap, "/tmp/kf-%s-XXXXXX", name), (int)cap);
	ck_assert_msg(mkdtemp(dir) != NULL, "mkdtemp %s failed", dir);
}

/* Removes dir and everything in it. */
static inline void fixture_dir_remove(const char *dir)
{
	fs_rm_tree(dir);
	ck_assert_msg(access(dir, F_OK) != 0, "could not remove %s", dir);
}

/* The path of rel (a path inside the source tree, e.g. "tests/data/x")
 * under $KFORGE_SRC, else the current folder, into buf (cap bytes).
 * Returns buf. */
static inline const char *fixture_src_path(char *buf, size_t cap, const char *rel)
{
	const char *src = getenv("KFORGE_SRC");
	ck_assert_int_lt(snprintf(buf, cap, "%s/%s", src && *src ? src : ".", rel), (int)cap);
	return buf;
}

/* Reads path whole (at most 16 MiB). Returns new NUL-terminated text
 * (free), its length without the NUL in *len (may be NULL). */
static inline char *fixture_read(const char *path, size_t *len)
{
	char *text = NULL;
	ck_assert_msg(fs_read_file(path, 16u << 20, 0, &text, len) == 0, "cannot read %s", path);
	return text;
}

/* fixture_read of rel in the source tree (fixture_src_path). */
static inline char *fixture_src_read(const char *rel, size_t *len)
{
	char path[PATH_MAX];
	return fixture_read(fixture_src_path(path, sizeof path, rel), len);
}

/* Makes dir anew as a knowledge source tree: the real
 * knowledge/schema.sql, the GPU facts and aliases of tests/data/kb (a
 * frozen copy: adding a GPU to knowledge/ changes no count in the suites)
 * and the fixture guides of tests/data/guides. */
static inline void fixture_kb_src(const char *dir)
{
	const char *env = getenv("KFORGE_SRC");
	const char *src = env && *env ? env : ".";
	char cmd[4 * PATH_MAX + 512];
	int n = snprintf(cmd, sizeof cmd,
			 "rm -rf '%s' && mkdir -p '%s/guides' && cp '%s/knowledge/schema.sql' "
			 "'%s/tests/data/kb/aliases.csv' '%s/' && "
			 "cp -r '%s/tests/data/kb/gpu-facts' '%s/' && "
			 "cp '%s'/tests/data/guides/*.md '%s/guides/'",
			 dir, dir, src, src, dir, src, dir, src, dir);
	ck_assert_int_lt(n, (int)sizeof cmd);
	ck_assert_msg(system(cmd) == 0, "could not make the knowledge source %s", dir);
}

/* Opens (creating) <dir>/state.db. Returns new (history_close). */
static inline struct history *fixture_history_open(const char *dir)
{
	char path[PATH_MAX];
	struct history *h = NULL;
	struct kf_err err = {0};
	ck_assert_int_lt(snprintf(path, sizeof path, "%s/state.db", dir), (int)sizeof path);
	ck_assert_msg(history_open(path, &h, &err) == 0, "%s", err.msg);
	return h;
}

/* Opens the daemon's app on cfg (borrowed) with every tool group loaded
 * and no GPU (KFORGE_NO_GPU=1 forces that on a GPU machine too). Returns
 * new (app_close). */
static inline struct app *fixture_app_open_config(const struct app_config *cfg)
{
	struct app *app = NULL;
	struct kf_err err = {0};
	setenv("KFORGE_NO_GPU", "1", 1);
	ck_assert_msg(app_tools_load(0, &err) == 0, "%s", err.msg);
	ck_assert_msg(app_open(cfg, &app, &err) == 0, "%s", err.msg);
	return app;
}

/* The daemon as the tool suites run it: fixture_app_open_config with no
 * sandbox, errors only in the log, its data under dir. Returns new
 * (app_close). */
static inline struct app *fixture_app_open(const char *dir)
{
	struct app_config cfg = {.data_dir = dir,
				 .sandbox = APP_SANDBOX_NONE,
				 .max_message_bytes = 8u << 20,
				 .log_level = LOG_ERROR};
	log_set_level(LOG_ERROR);
	return fixture_app_open_config(&cfg);
}

#endif
