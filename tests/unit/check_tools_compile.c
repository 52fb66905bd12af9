/* check_tools_compile: the compile_kernel tool and the artifact resources
 * (server/tools/tools_compile.c) through mcp_tool_call and the registry, on a
 * real app (jail, compiler, history, knowledge base when built): results
 * are structured with summary first, compile errors are isError results
 * with diagnostics, bad arguments name the field, runs land in the history,
 * and the PTX is a resource that reads back. */
#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/history/history.h"
#include "server/app.h"
#include "server/mcp/mcp.h"
#include "server/mcp/tools.h"
#include "tests/unit/fixture.h"

static char g_dir[PATH_MAX];
static struct app *g_app;

/* A real app: the compiler runs in the jail, and the knowledge base is
 * the build's when there is one. */
static void setup(void)
{
	const char *kb = getenv("KFORGE_KB");
	fixture_dir_new(g_dir, sizeof g_dir, "tools-compile");
	struct app_config cfg = {.data_dir = g_dir,
				 .kb_path = kb && *kb ? kb : "/nonexistent/kb.db"};
	g_app = fixture_app_open_config(&cfg);
	ck_assert_ptr_nonnull(g_app->cc);
}

static void teardown(void)
{
	app_close(g_app);
	g_app = NULL;
	fixture_dir_remove(g_dir);
}

static json_t *call(json_t *args, int *is_error, int *rc, struct kf_err *err)
{
	json_t *res = NULL;
	*rc = mcp_tool_call(g_app, "compile_kernel", args, &res, is_error, err);
	json_decref(args);
	return res;
}

static const char *GOOD =
	"extern \"C\" __global__ void axpy(float *y, const float *x, float a, int n) {\n"
	"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	"  if (i < n) y[i] = a * x[i] + y[i];\n}\n";

START_TEST(compile_result_is_structured_and_recorded)
{
	int is_error = 1, rc;
	struct kf_err err = {0};
	json_t *res = call(
		json_pack("{s:s,s:b,s:s}", "source", GOOD, "want_ptx", 1, "flags", "-O3 -lineinfo"),
		&is_error, &rc, &err);
	ck_assert_msg(rc == 0, "%s", err.msg);
	ck_assert_int_eq(is_error, 0);
	ck_assert_str_eq(json_object_iter_key(json_object_iter(res)), "summary");
	ck_assert(json_is_true(json_object_get(res, "ok")));
	ck_assert_str_eq(json_string_value(json_object_get(res, "arch")), "sm_90");
	json_t *k = json_array_get(json_object_get(res, "kernels"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(k, "name")), "axpy");
	if (g_app->kb) {
		json_t *occ = json_object_get(k, "occupancy");
		ck_assert_int_eq(json_array_size(occ), 4);
		ck_assert_int_eq(json_integer_value(
					 json_object_get(json_array_get(occ, 0), "block_threads")),
				 128);
		ck_assert(json_real_value(json_object_get(json_array_get(occ, 1), "occupancy")) >
			  0.5);
		/* One occupancy shape: the names get_gpu_specs' occupancy uses. */
		ck_assert(json_is_string(json_object_get(json_array_get(occ, 1), "limiting")));
		ck_assert_ptr_null(json_object_get(json_array_get(occ, 1), "limited_by"));
	}

	/* The run is in the history with kind compile and status ok. */
	const char *run_id = json_string_value(json_object_get(res, "run_id"));
	ck_assert_ptr_nonnull(run_id);
	struct history_run run;
	ck_assert_int_eq(history_get(g_app->history, run_id, &run, &err), 0);
	ck_assert_int_eq(run.kind, HISTORY_COMPILE);
	ck_assert_int_eq(run.status, HISTORY_OK);
	ck_assert_str_eq(run.kernels, "axpy");
	history_run_fini(&run);

	/* The PTX link reads back through the resource template. */
	const char *uri = json_string_value(json_object_get(json_object_get(res, "ptx"), "uri"));
	ck_assert_ptr_nonnull(uri);
	const struct resource_def *rd = NULL;
	for (size_t i = 0; i < tools_resource_count(); i++)
		if (!strcmp(tools_resource_at(i)->uri_template, "kforge://artifacts/{id}/{kind}"))
			rd = tools_resource_at(i);
	ck_assert_ptr_nonnull(rd);
	json_t *contents = NULL;
	ck_assert_int_eq(rd->read(g_app, uri, &contents, &err), 0);
	ck_assert(strstr(json_string_value(json_object_get(json_array_get(contents, 0), "text")),
			 ".entry axpy") != NULL);
	json_decref(contents);
	char bad[200];
	snprintf(bad, sizeof bad, "kforge://artifacts/%.64s/shadow",
		 json_string_value(json_object_get(res, "artifact_id")));
	ck_assert_int_eq(rd->read(g_app, bad, &contents, &err), KF_ENOTFOUND);
	ck_assert_int_eq(rd->read(g_app, "kforge://artifacts/../../etc/passwd", &contents, &err),
			 KF_ENOTFOUND);
	json_decref(res);
}
END_TEST

START_TEST(compile_error_is_an_iserror_result_with_diagnostics)
{
	int is_error = 0, rc;
	struct kf_err err = {0};
	json_t *res = call(json_pack("{s:s}", "source", "__global__ void f(int *x) { *x = y; }\n"),
			   &is_error, &rc, &err);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(is_error, 1);
	ck_assert(json_is_false(json_object_get(res, "ok")));
	json_t *d = json_array_get(json_object_get(res, "diagnostics"), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(d, "line")), 1);
	ck_assert(strstr(json_string_value(json_object_get(d, "message")), "\"y\"") != NULL);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res, "error"), "code")),
			 kf_err_name(KF_ECOMPILE));
	ck_assert_ptr_nonnull(json_object_get(res, "run_id"));
	json_decref(res);
}
END_TEST

/* res is an error result whose run is in the history as an error. */
static void expect_error_run(json_t *res, const char *code)
{
	struct kf_err err = {0};
	struct history_run run;
	const char *id = json_string_value(json_object_get(res, "run_id"));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res, "error"), "code")),
			 code);
	ck_assert_msg(id != NULL, "no run_id in the %s result", code);
	ck_assert_int_eq(history_get(g_app->history, id, &run, &err), 0);
	ck_assert_int_eq(run.kind, HISTORY_COMPILE);
	ck_assert_int_eq(run.status, HISTORY_ERROR);
	ck_assert_str_eq(run.summary, json_string_value(json_object_get(res, "summary")));
	history_run_fini(&run);
}

START_TEST(a_run_the_history_cannot_keep_is_an_error_not_a_silent_success)
{
	/* state.db refuses every insert, as on a full disk. */
	char db[PATH_MAX + 16];
	sqlite3 *raw = NULL;
	snprintf(db, sizeof db, "%s/state.db", g_dir);
	ck_assert_int_eq(sqlite3_open(db, &raw), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(raw,
				      "CREATE TRIGGER full BEFORE INSERT ON runs BEGIN "
				      "SELECT RAISE(ABORT, 'database or disk is full'); END",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(raw);
	int is_error = 0, rc;
	struct kf_err err = {0};
	json_t *res = call(json_pack("{s:s}", "source", GOOD), &is_error, &rc, &err);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(is_error, 1);
	ck_assert_ptr_null(json_object_get(res, "run_id"));
	const char *sum = json_string_value(json_object_get(res, "summary"));
	ck_assert_msg(strstr(sum, "could not be recorded") && strstr(sum, "disk is full"), "%s",
		      sum);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res, "error"), "code")),
			 "db");
	/* The compile itself is still there to read. */
	ck_assert(json_is_true(json_object_get(res, "ok")));
	json_decref(res);
}
END_TEST

START_TEST(refused_flag_and_bad_arguments_name_the_problem)
{
	int is_error = 0, rc;
	struct kf_err err = {0};
	json_t *res =
		call(json_pack("{s:s,s:[s,s]}", "source", GOOD, "flags", "-Xcompiler", "-fopenmp"),
		     &is_error, &rc, &err);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(is_error, 1);
	ck_assert(strstr(json_string_value(json_object_get(res, "summary")), "-Xcompiler") != NULL);
	expect_error_run(res, "refused");
	json_decref(res);

	/* Schema failures are argument errors naming the field. */
	res = call(json_pack("{s:s,s:i}", "source", GOOD, "flags", 3), &is_error, &rc, &err);
	ck_assert_int_eq(rc, KF_EINVAL);
	ck_assert_msg(strstr(err.msg, "flags") != NULL, "%s", err.msg);
	json_decref(res);
	kf_err_clear(&err);

	res = call(json_pack("{s:s,s:s}", "source", GOOD, "arch", "sm_99x"), &is_error, &rc, &err);
	ck_assert_int_eq(is_error, 1);
	ck_assert(strstr(json_string_value(json_object_get(res, "summary")), "sm_99x") != NULL);
	expect_error_run(res, "invalid");
	json_decref(res);

	/* A flag string that splits past the cap is refused and recorded too. */
	char many[400] = "";
	for (int i = 0; i < 65; i++)
		memcpy(many + 3 * i, "-w ", 4);
	res = call(json_pack("{s:s,s:s}", "source", GOOD, "flags", many), &is_error, &rc, &err);
	ck_assert_int_eq(is_error, 1);
	expect_error_run(res, "too_big");
	json_decref(res);

	res = call(json_pack("{s:s}", "arch", "sm_90"), &is_error, &rc, &err);
	ck_assert_int_eq(rc, KF_EINVAL);
	ck_assert_msg(strstr(err.msg, "source") != NULL, "%s", err.msg);
	json_decref(res);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tools_compile");
	TCase *tc = tcase_create("tool");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, compile_result_is_structured_and_recorded);
	tcase_add_test(tc, compile_error_is_an_iserror_result_with_diagnostics);
	tcase_add_test(tc, refused_flag_and_bad_arguments_name_the_problem);
	tcase_add_test(tc, a_run_the_history_cannot_keep_is_an_error_not_a_silent_success);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
