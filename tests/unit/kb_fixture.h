/* kb_fixture: the checked fixture the knowledge-tool suites share: builds a
 * knowledge base from the fixture GPU facts (tests/data/kb, a frozen copy
 * of knowledge/'s, so new GPUs there change no count here) and the fixture
 * guides (tests/data/guides) in a temporary folder (fixture_kb_src), loads
 * the tool table without a GPU and opens an app on it
 * (fixture_app_open_config). Header-only: each suite includes it once and
 * names its folder with KB_FIXTURE_NAME before including. */
#ifndef KF_TESTS_KB_FIXTURE_H
#define KF_TESTS_KB_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "knowledge/kb_build.h"
#include "server/app.h"
#include "server/mcp/tools.h"
#include "tests/unit/fixture.h"

#ifndef KB_FIXTURE_NAME
#error "define KB_FIXTURE_NAME (the suite's name) before including kb_fixture.h"
#endif

static char g_src[512], g_dir[512], g_db[600], g_data[600];
static struct app *g_app;

static void setup(void)
{
	const char *src = getenv("KFORGE_SRC");
	struct kf_err err = {0};
	snprintf(g_src, sizeof g_src, "%s", src && *src ? src : ".");
	snprintf(g_dir, sizeof g_dir, "/tmp/%s.%d", KB_FIXTURE_NAME, (int)getpid());
	fixture_kb_src(g_dir);
	snprintf(g_db, sizeof g_db, "%s/knowledge.db", g_dir);
	snprintf(g_data, sizeof g_data, "%s/data", g_dir);
	ck_assert_msg(kb_build(g_dir, g_db, &err) == 0, "build: %s", err.msg);
	/* no GPU: `local` must answer no_gpu here */
	struct app_config cfg = {.data_dir = g_data, .kb_path = g_db};
	g_app = fixture_app_open_config(&cfg);
}

static void teardown(void)
{
	app_close(g_app);
	g_app = NULL;
	fixture_dir_remove(g_dir);
}

#endif
