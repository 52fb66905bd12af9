/* kb_fixture: the checked fixture the knowledge-tool suites share: builds a
 * knowledge base from the fixture GPU facts (tests/data/kb, a frozen copy
 * of knowledge/'s, so new GPUs there change no count here) and the fixture
 * guides (tests/data/guides) in a temporary folder, loads the tool table
 * without a GPU and opens an app on it. Header-only: each suite includes it once and
 * names its folder with KB_FIXTURE_NAME before including. */
#ifndef KF_TESTS_KB_FIXTURE_H
#define KF_TESTS_KB_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "knowledge/kb_build.h"
#include "server/app.h"
#include "server/mcp/tools.h"

#ifndef KB_FIXTURE_NAME
#error "define KB_FIXTURE_NAME (the suite's name) before including kb_fixture.h"
#endif

static char g_src[512], g_dir[512], g_db[600], g_data[600];
static struct app *g_app;

static void setup(void)
{
	const char *src = getenv("KFORGE_SRC");
	char cmd[8192];
	struct kf_err err = {0};
	snprintf(g_src, sizeof g_src, "%s", src && *src ? src : ".");
	snprintf(g_dir, sizeof g_dir, "/tmp/%s.%d", KB_FIXTURE_NAME, (int)getpid());
	snprintf(
		cmd, sizeof cmd,
		"rm -rf '%s' && mkdir -p '%s/guides' '%s/data' && cp '%s/knowledge/schema.sql' "
		"'%s/tests/data/kb/aliases.csv' '%s/' && cp -r '%s/tests/data/kb/gpu-facts' '%s/' && "
		"cp '%s'/tests/data/guides/*.md '%s/guides/'",
		g_dir, g_dir, g_dir, g_src, g_src, g_dir, g_src, g_dir, g_src, g_dir);
	if (system(cmd) != 0)
		abort();
	snprintf(g_db, sizeof g_db, "%s/knowledge.db", g_dir);
	snprintf(g_data, sizeof g_data, "%s/data", g_dir);
	if (kb_build(g_dir, g_db, &err) != 0) {
		fprintf(stderr, "build: %s\n", err.msg);
		abort();
	}
	setenv("KFORGE_NO_GPU", "1", 1); /* `local` must answer no_gpu here */
	if (app_tools_load(0, &err) != 0) {
		fprintf(stderr, "tools_load: %s\n", err.msg);
		abort();
	}
	struct app_config cfg = {.data_dir = g_data, .kb_path = g_db};
	if (app_open(&cfg, &g_app, &err) != 0) {
		fprintf(stderr, "app_open: %s\n", err.msg);
		abort();
	}
}

static void teardown(void)
{
	char cmd[700];
	app_close(g_app);
	g_app = NULL;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", g_dir);
}

#endif
