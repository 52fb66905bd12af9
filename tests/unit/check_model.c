/* check_model: benchmark_model's CPU side (sandbox/model/model.c and the
 * tool in server/tools/tools_model.c): patch-map checks, the job's
 * defaults and caps, the unknown-target message built from a model's
 * class listing, the speedups and summary computed from a result, and the
 * run every call leaves in the history. The GPU side is
 * tests/gpu/test_model_bench.sh. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/history/history.h"
#include "sandbox/model/model.h"
#include "server/app.h"
#include "server/mcp/mcp.h"
#include "tests/unit/fixture.h"

static int patch_rc(const char *text, char *msg, size_t cap)
{
	struct kf_err err = {0};
	json_t *p = json_loads(text, JSON_DECODE_ANY, NULL);
	int rc = model_patch_check(p, "patch", &err);
	json_decref(p);
	snprintf(msg, cap, "%s", err.msg);
	return rc;
}

START_TEST(patch_map_accepts_classes_and_globs)
{
	char msg[256];
	ck_assert_int_eq(patch_rc("{\"Qwen3RMSNorm\": \"rmsnorm\", \"model.layers.*.mlp\": "
				  "\"gate_up_silu\", \"transformer_blocks.[0-3].norm2\": "
				  "\"layernorm\"}",
				  msg, sizeof msg),
			 0);
}
END_TEST

static const struct {
	const char *map;
	int rc;
	const char *words;
} BAD_PATCH[] = {
	{"{}", KF_EINVAL, "at least one entry"},
	{"[\"rmsnorm\"]", KF_EINVAL, "expected an object"},
	{"{\"Qwen3RMSNorm\": \"fastnorm\"}", KF_EINVAL, "'fastnorm' is not an op"},
	{"{\"Qwen3RMSNorm\": 3}", KF_EINVAL, "a non-string is not an op"},
	{"{\"Qwen3 RMSNorm\": \"rmsnorm\"}", KF_EINVAL, "'Qwen3 RMSNorm' is not a module class"},
	{"{\"x;rm -rf\": \"rmsnorm\"}", KF_EINVAL, "not a module class name"},
	{"{\"\": \"rmsnorm\"}", KF_EINVAL, "not a module class name"},
};

START_TEST(patch_map_rejects_bad_entries)
{
	char msg[256];
	int rc = patch_rc(BAD_PATCH[_i].map, msg, sizeof msg);
	ck_assert_int_eq(rc, BAD_PATCH[_i].rc);
	ck_assert_msg(strstr(msg, BAD_PATCH[_i].words), "'%s' lacks '%s'", msg,
		      BAD_PATCH[_i].words);
}
END_TEST

START_TEST(patch_map_caps_entries_and_target_length)
{
	char msg[256], key[300];
	json_t *p = json_object();
	for (int i = 0; i <= MODEL_PATCH_MAX; i++) {
		snprintf(key, sizeof key, "Class%d", i);
		json_object_set_new(p, key, json_string("rmsnorm"));
	}
	struct kf_err err = {0};
	ck_assert_int_eq(model_patch_check(p, "patch", &err), KF_ETOOBIG);
	json_decref(p);
	memset(key, 'A', MODEL_TARGET_MAX + 1);
	key[MODEL_TARGET_MAX + 1] = 0;
	p = json_pack("{s:s}", key, "rmsnorm");
	ck_assert_int_eq(model_patch_check(p, "compile_patch", &err), KF_ETOOBIG);
	json_decref(p);
	(void)msg;
}
END_TEST

static json_t *job_of(const char *args_text, int *rc, char *msg, size_t cap)
{
	struct kf_err err = {0};
	json_t *args = json_loads(args_text, 0, NULL), *job = NULL;
	ck_assert_ptr_nonnull(args);
	*rc = model_job_new(args, &job, &err);
	json_decref(args);
	snprintf(msg, cap, "%s", err.msg);
	return job;
}

START_TEST(job_defaults_per_recipe)
{
	int rc;
	char msg[256];
	json_t *j = job_of("{\"recipe\": \"qwen3\"}", &rc, msg, sizeof msg);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "shapes")), 3);
	ck_assert_str_eq(
		json_string_value(json_object_get(json_object_get(j, "patch"), "Qwen3Attention")),
		"qk_norm_rope");
	ck_assert_str_eq(
		json_string_value(json_object_get(json_object_get(j, "compile_patch"), "Qwen3MLP")),
		"gate_up");
	ck_assert_str_eq(json_string_value(json_object_get(j, "dtype")), "bf16");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "iters")), 20);
	json_decref(j);
	j = job_of("{\"recipe\": \"dit\", \"dims\": {\"activation\": \"gelu_tanh\"}}", &rc, msg,
		   sizeof msg);
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "patch"), "GELU")),
			 "gelu_tanh");
	ck_assert_ptr_null(json_object_get(json_object_get(j, "patch"), "GEGLU"));
	json_decref(j);
	/* a caller's patch is also the compile patch unless one is given */
	j = job_of("{\"recipe\": \"llama\", \"patch\": {\"LlamaRMSNorm\": \"rmsnorm\"}}", &rc, msg,
		   sizeof msg);
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "compile_patch"),
							   "LlamaRMSNorm")),
			 "rmsnorm");
	json_decref(j);
}
END_TEST

static const struct {
	const char *args;
	int rc;
	const char *words;
} BAD_JOB[] = {
	{"{\"recipe\": \"gpt2\"}", KF_EINVAL, "recipe: expected qwen3, llama or dit"},
	{"{\"recipe\": \"qwen3\", \"dims\": {\"width\": 4}}", KF_EINVAL,
	 "'width' is not a dimension of qwen3; expected one of layers, hidden"},
	{"{\"recipe\": \"qwen3\", \"dims\": {\"layers\": 0}}", KF_EINVAL,
	 "dims.layers: expected an integer in 1..1048576"},
	{"{\"recipe\": \"dit\", \"shapes\": [{\"kind\": \"decode\", \"batch\": 1}]}", KF_EINVAL,
	 "shapes[0].kind: a dit block has no decode step"},
	{"{\"recipe\": \"qwen3\", \"shapes\": [{\"kind\": \"train\"}]}", KF_EINVAL,
	 "shapes[0].kind: expected 'prefill' or 'decode'"},
	{"{\"recipe\": \"qwen3\", \"shapes\": [{\"kind\": \"prefill\", \"seq\": 100000}]}",
	 KF_EINVAL, "shapes[0].seq: expected an integer in 1..65536"},
	{"{\"recipe\": \"qwen3\", \"shapes\": [{}, {}, {}, {}, {}, {}, {}, {}, {}]}", KF_ETOOBIG,
	 "at most 8"},
	{"{\"recipe\": \"qwen3\", \"modes\": [\"eager\", \"turbo\"]}", KF_EINVAL,
	 "modes[1]: expected one of eager"},
	{"{\"recipe\": \"qwen3\", \"iters\": 1000}", KF_EINVAL,
	 "iters: expected an integer in 3..200"},
	{"{\"recipe\": \"qwen3\", \"dtype\": \"fp8\"}", KF_EINVAL, "dtype: expected bf16"},
	{"{\"recipe\": \"qwen3\", \"compile_patch\": {\"Qwen3MLP\": \"silu\"}}", KF_EINVAL,
	 "compile_patch: 'Qwen3MLP' -> 'silu' is not an op"},
};

START_TEST(job_rejects_bad_arguments)
{
	int rc;
	char msg[256];
	json_t *j = job_of(BAD_JOB[_i].args, &rc, msg, sizeof msg);
	ck_assert_ptr_null(j);
	ck_assert_int_eq(rc, BAD_JOB[_i].rc);
	ck_assert_msg(strstr(msg, BAD_JOB[_i].words), "'%s' lacks '%s'", msg, BAD_JOB[_i].words);
}
END_TEST

START_TEST(unknown_target_lists_the_model_classes)
{
	json_t *classes = json_pack("[s, s, s]", "Qwen3Attention", "Qwen3MLP", "Qwen3RMSNorm");
	char buf[512];
	model_unknown_target_msg("Qwen2RMSNorm", "qwen3", classes, buf, sizeof buf);
	ck_assert_msg(strstr(buf, "patch target 'Qwen2RMSNorm' is no module class or name of the "
				  "qwen3 model"),
		      "%s", buf);
	ck_assert_msg(strstr(buf, "its classes: Qwen3Attention, Qwen3MLP, Qwen3RMSNorm"), "%s",
		      buf);
	char small[40];
	model_unknown_target_msg("Qwen2RMSNorm", "qwen3", classes, small, sizeof small);
	ck_assert_uint_eq(strlen(small), sizeof small - 1);
	json_decref(classes);
}
END_TEST

START_TEST(result_gets_speedups_and_summary)
{
	const char *text =
		"{\"recipe\": \"qwen3\", \"latency\": ["
		"{\"shape\": \"prefill 1x2048\", \"mode\": \"eager\", \"median_ms\": 12.0},"
		"{\"shape\": \"prefill 1x2048\", \"mode\": \"patched\", \"median_ms\": 10.0},"
		"{\"shape\": \"prefill 1x2048\", \"mode\": \"compile\", \"median_ms\": 10.5},"
		"{\"shape\": \"prefill 1x2048\", \"mode\": \"patched_compile\", \"median_ms\": 10.0},"
		"{\"shape\": \"decode 32x1\", \"mode\": \"graphs\", \"median_ms\": 2.0},"
		"{\"shape\": \"decode 32x1\", \"mode\": \"patched_graphs\", \"median_ms\": 2.5}],"
		"\"agreement\": {\"rel_l2\": 0.0123, \"patched_no_further\": true}}";
	json_t *r = json_loads(text, 0, NULL);
	struct kf_err err = {0};
	ck_assert_int_eq(model_result_finish(r, &err), 0);
	json_t *sp = json_object_get(r, "speedups");
	ck_assert_uint_eq(json_array_size(sp), 2);
	json_t *p = json_array_get(sp, 0);
	ck_assert_double_eq_tol(json_real_value(json_object_get(p, "patched_vs_eager")), 1.2,
				1e-12);
	ck_assert_double_eq_tol(json_real_value(json_object_get(p, "patched_compile_vs_compile")),
				1.05, 1e-12);
	ck_assert(json_is_null(json_object_get(p, "patched_graphs_vs_graphs")));
	json_t *d = json_array_get(sp, 1);
	ck_assert_double_eq_tol(json_real_value(json_object_get(d, "patched_graphs_vs_graphs")),
				0.8, 1e-12);
	const char *s = json_string_value(json_object_get(r, "summary"));
	ck_assert_str_eq(json_object_iter_key(json_object_iter(r)), "summary");
	ck_assert_msg(strstr(s, "prefill 1x2048: best patched 1.05x vs best unpatched, eager 1.2x, "
				"compile 1.05x"),
		      "%s", s);
	ck_assert_msg(strstr(s, "decode 32x1: best patched 0.8x"), "%s", s);
	ck_assert_msg(strstr(s, "rel L2 vs unpatched 0.012, no further from fp32"), "%s", s);
	json_decref(r);
	r = json_pack("{s:s}", "recipe", "dit");
	ck_assert_int_eq(model_result_finish(r, &err), KF_EINVAL);
	json_decref(r);
}
END_TEST

START_TEST(result_summary_names_failed_shapes_and_partial_runs)
{
	json_t *r = json_loads(
		"{\"recipe\": \"qwen3\", \"partial\": true, \"latency\": ["
		"{\"shape\": \"prefill 1x2048\", \"mode\": \"eager\", \"median_ms\": 12.0}],"
		"\"shape_errors\": [{\"shape\": \"decode 32x1 (past 512)\", \"error\": "
		"\"AcceleratorError: device-side assert triggered\"}]}",
		0, NULL);
	struct kf_err err = {0};
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(model_result_finish(r, &err), 0);
	const char *s = json_string_value(json_object_get(r, "summary"));
	ck_assert_msg(strstr(s, "decode 32x1 (past 512) FAILED: AcceleratorError: device-side"),
		      "%s", s);
	ck_assert_msg(strstr(s, "PARTIAL: the job ended before every shape ran"), "%s", s);
	json_decref(r);
}
END_TEST

/* --- the tool: every call is a run in the history ------------------------ */

static char g_dir[PATH_MAX];
static struct app *g_app;

static void setup(void)
{
	fixture_dir_new(g_dir, sizeof g_dir, "model");
	g_app = fixture_app_open(g_dir);
}

static void teardown(void)
{
	app_close(g_app);
	g_app = NULL;
	fixture_dir_remove(g_dir);
}

static void newest_run(struct history_run *out)
{
	struct history_filter f;
	struct history_page page = {0};
	struct kf_err err = {0};
	history_filter_init(&f);
	ck_assert_int_eq(history_list(g_app->history, &f, &page, &err), 0);
	ck_assert_uint_ge(page.len, 1);
	ck_assert_int_eq(history_get(g_app->history, page.runs[0].id, out, &err), 0);
	history_page_fini(&page);
}

START_TEST(bad_request_is_an_error_run)
{
	json_t *res = NULL;
	int is_error = 0;
	struct kf_err err = {0};
	json_t *args = json_pack("{s:s, s:{s:s}}", "recipe", "qwen3", "patch", "Qwen3MLP", "fast");
	int rc = mcp_tool_call(g_app, "benchmark_model", args, &res, &is_error, &err);
	json_decref(args);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(is_error, 1);
	const char *sum = json_string_value(json_object_get(res, "summary"));
	ck_assert_msg(sum && strstr(sum, "'Qwen3MLP' -> 'fast' is not an op"), "%s", sum);
	ck_assert_ptr_nonnull(json_object_get(res, "run_id"));
	struct history_run run = {0};
	newest_run(&run);
	ck_assert_int_eq(run.kind, HISTORY_BENCH);
	ck_assert_int_eq(run.status, HISTORY_ERROR);
	ck_assert_msg(strstr(run.summary, "is not an op"), "%s", run.summary);
	ck_assert_str_eq(json_string_value(json_object_get(run.spec, "recipe")), "qwen3");
	history_run_fini(&run);
	json_decref(res);
}
END_TEST

/* Here there is no GPU (KFORGE_NO_GPU) and maybe no torch: the call fails
 * before any job runs, and the run names the model and the patch ops. */
START_TEST(valid_request_without_gpu_is_recorded_with_its_ops)
{
	json_t *res = NULL;
	int is_error = 0;
	struct kf_err err = {0};
	json_t *args = json_pack("{s:s, s:{s:i}}", "recipe", "qwen3", "dims", "layers", 2);
	int rc = mcp_tool_call(g_app, "benchmark_model", args, &res, &is_error, &err);
	json_decref(args);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(is_error, 1);
	const char *code =
		json_string_value(json_object_get(json_object_get(res, "error"), "code"));
	ck_assert_msg(code && (strcmp(code, "no_gpu") == 0 || strcmp(code, "not_found") == 0), "%s",
		      code);
	struct history_run run = {0};
	newest_run(&run);
	ck_assert_int_eq(run.status, HISTORY_ERROR);
	ck_assert_msg(strstr(run.kernels, "model:qwen3") &&
			      strstr(run.kernels, "patch:qk_norm_rope"),
		      "%s", run.kernels);
	history_run_fini(&run);
	json_decref(res);
}
END_TEST

static Suite *model_suite(void)
{
	Suite *s = suite_create("model");
	TCase *tc = tcase_create("patch");
	tcase_add_test(tc, patch_map_accepts_classes_and_globs);
	tcase_add_loop_test(tc, patch_map_rejects_bad_entries, 0,
			    (int)(sizeof BAD_PATCH / sizeof BAD_PATCH[0]));
	tcase_add_test(tc, patch_map_caps_entries_and_target_length);
	suite_add_tcase(s, tc);
	tc = tcase_create("job");
	tcase_add_test(tc, job_defaults_per_recipe);
	tcase_add_loop_test(tc, job_rejects_bad_arguments, 0,
			    (int)(sizeof BAD_JOB / sizeof BAD_JOB[0]));
	tcase_add_test(tc, unknown_target_lists_the_model_classes);
	tcase_add_test(tc, result_gets_speedups_and_summary);
	tcase_add_test(tc, result_summary_names_failed_shapes_and_partial_runs);
	suite_add_tcase(s, tc);
	tc = tcase_create("tool");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, bad_request_is_an_error_run);
	tcase_add_test(tc, valid_request_without_gpu_is_recorded_with_its_ops);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(model_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
