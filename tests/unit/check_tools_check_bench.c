/* check_tools_check_bench: check_kernel and benchmark_kernel through mcp_tool_call
 * on a host without a GPU (KFORGE_NO_GPU=1 forces that even on a GPU
 * machine): a structured isError result with error.code "no_gpu" and no
 * number; a bad spec is still answered with the field that is wrong;
 * arguments outside the schema are refused. And the answers written from
 * the domain's result structs (tools_check_json.c, tools_compile_json.c)
 * for verdicts the mock GPU cannot produce. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/app.h"
#include "base/log.h"
#include "server/mcp/mcp.h"
#include "server/mcp/tools.h"
#include "sandbox/history/history.h"
#include "server/tools/tools_check_int.h"
#include "server/tools/tools_compile_int.h"
#include "tests/unit/fixture.h"

static struct app *app;
static char dir[PATH_MAX];

static void setup(void)
{
	fixture_dir_new(dir, sizeof dir, "tools-check-bench");
	app = fixture_app_open(dir);
}

static void teardown(void)
{
	app_close(app);
	fixture_dir_remove(dir);
}

static const char *SPEC =
	"{\"source\": \"extern \\\"C\\\" __global__ void k(float *y, const float *x, int n) {}\","
	" \"sizes\": [{\"N\": 1000}],"
	" \"tensors\": {\"x\": {\"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"input\"},"
	"   \"y\": {\"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"output\"}},"
	" \"launch\": [{\"kernel\": \"k\", \"grid\": [\"ceil_div(N, 256)\"], \"block\": [256], "
	"\"args\": [\"y\", \"x\", \"N\"]}],"
	" \"reference\": {\"torch\": \"x\"}}";

static const char *const TOOLS[] = {"check_kernel", "benchmark_kernel"};

START_TEST(no_gpu_is_a_structured_error_without_numbers)
{
	json_t *args = json_pack("{s:o}", "spec", json_loads(SPEC, 0, NULL));
	json_t *res = NULL;
	int is_error = 0;
	struct kf_err err = {0};
	ck_assert_int_eq(mcp_tool_call(app, TOOLS[_i], args, &res, &is_error, &err), 0);
	ck_assert_int_eq(is_error, 1);
	const json_t *e = json_object_get(res, "error");
	ck_assert_str_eq(json_string_value(json_object_get(e, "code")), "no_gpu");
	const char *summary = json_string_value(json_object_get(res, "summary"));
	ck_assert_ptr_nonnull(strstr(summary, "no usable GPU"));
	ck_assert_ptr_nonnull(strstr(summary, "KFORGE_NO_GPU"));
	/* no timing, no pass/fail per size: nothing measured */
	ck_assert_ptr_null(json_object_get(res, "candidate"));
	ck_assert_ptr_null(json_object_get(res, "sizes"));
	ck_assert(json_is_false(json_object_get(res, "passed")));
	/* summary comes first */
	void *it = json_object_iter(res);
	ck_assert_str_eq(json_object_iter_key(it), "summary");
	json_decref(res);
	json_decref(args);
}
END_TEST

START_TEST(bad_spec_names_the_field_even_without_a_gpu)
{
	json_t *spec = json_loads(SPEC, 0, NULL);
	json_object_set_new(json_object_get(json_object_get(spec, "tensors"), "y"), "shape",
			    json_pack("[s]", "M"));
	json_t *args = json_pack("{s:o}", "spec", spec);
	json_t *res = NULL;
	int is_error = 0;
	struct kf_err err = {0};
	ck_assert_int_eq(mcp_tool_call(app, TOOLS[_i], args, &res, &is_error, &err), 0);
	ck_assert_int_eq(is_error, 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res, "error"), "code")),
			 "invalid");
	ck_assert_ptr_nonnull(
		strstr(json_string_value(json_object_get(res, "summary")),
		       "tensors.y.shape[0]: size 'M' is not defined by any entry of sizes"));
	json_decref(res);
	json_decref(args);
}
END_TEST

START_TEST(device_memory_cap_comes_from_the_operator)
{
	setenv("KFORGE_MAX_DEVICE_BYTES", "1M", 1);
	json_t *spec = json_loads(SPEC, 0, NULL);
	json_object_set_new(spec, "sizes", json_pack("[{s:i}]", "N", 1000000));
	json_t *args = json_pack("{s:o}", "spec", spec);
	json_t *res = NULL;
	int is_error = 0;
	struct kf_err err = {0};
	ck_assert_int_eq(mcp_tool_call(app, TOOLS[_i], args, &res, &is_error, &err), 0);
	unsetenv("KFORGE_MAX_DEVICE_BYTES");
	ck_assert_int_eq(is_error, 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res, "error"), "code")),
			 "too_big");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(res, "summary")),
				     "sizes[0]: tensors need 7.6 MiB of device memory with guard "
				     "bands, over the 1.0 MiB cap"));
	json_decref(res);
	json_decref(args);
}
END_TEST

START_TEST(arguments_outside_the_schema_are_refused)
{
	json_t *res = NULL;
	int is_error = 0;
	struct kf_err err = {0};
	json_t *args = json_pack("{s:i}", "trials", 3);
	ck_assert_int_eq(mcp_tool_call(app, TOOLS[_i], args, &res, &is_error, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "spec"));
	json_decref(args);
	args = json_pack("{s:{}, s:i}", "spec", "timeout_s", 100000);
	kf_err_clear(&err);
	ck_assert_int_eq(mcp_tool_call(app, TOOLS[_i], args, &res, &is_error, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "timeout_s"));
	json_decref(args);
}
END_TEST

/* description, notes and parent reach the run record; a parent that is
 * not in the history fails before anything runs, and names the field. */
START_TEST(description_notes_and_parent_are_stored_with_the_run)
{
	struct history_run first = {.kind = HISTORY_CHECK, .status = HISTORY_OK};
	struct history_filter f;
	struct history_page page;
	struct history_run got;
	struct kf_err err = {0};
	json_t *res = NULL;
	int is_error = 0;

	ck_assert_int_eq(history_add(app->history, &first, NULL), 0);
	json_t *args = json_pack("{s:o, s:s, s:s, s:s}", "spec", json_loads(SPEC, 0, NULL),
				 "description", "copy: y = x", "notes", "one float per thread",
				 "parent", "r000000000000000");
	ck_assert_int_eq(mcp_tool_call(app, TOOLS[_i], args, &res, &is_error, &err), 0);
	ck_assert_int_eq(is_error, 1);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(res, "summary")),
				     "parent: no run r000000000000000"));
	json_decref(res);
	history_filter_init(&f);
	ck_assert_int_eq(history_list(app->history, &f, &page, NULL), 0);
	ck_assert_uint_eq(page.len, 1); /* nothing ran, nothing recorded */
	history_page_fini(&page);

	json_object_set_new(args, "parent", json_string(first.id));
	ck_assert_int_eq(mcp_tool_call(app, TOOLS[_i], args, &res, &is_error, &err), 0);
	json_decref(res);
	ck_assert_int_eq(history_list(app->history, &f, &page, NULL), 0);
	ck_assert_uint_eq(page.len, 2);
	ck_assert_int_eq(history_get(app->history, page.runs[0].id, &got, NULL), 0);
	ck_assert_str_eq(got.description, "copy: y = x");
	ck_assert_str_eq(got.notes, "one float per thread");
	ck_assert_str_eq(got.parent, first.id);
	history_run_fini(&got);
	history_page_fini(&page);
	json_decref(args);
}
END_TEST

START_TEST(both_tools_are_registered_with_schemas)
{
	const struct tool_def *t = tools_find(TOOLS[_i]);
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(t->input_schema);
	ck_assert_ptr_nonnull(t->output_schema);
	ck_assert(strlen(t->description) > 100);
}
END_TEST

/* --- answers written from result structs ------------------------------ */

/* A check of size N: one listed size (4096) and the odd one (4097), two
 * trials each, every trial passed unless told. */
static void two_sizes(struct check_result *res)
{
	memset(res, 0, sizeof *res);
	res->answer = CHECK_ANSWER_VERDICT;
	res->fail_size = -1;
	res->vars_len = 1;
	snprintf(res->vars[0], sizeof res->vars[0], "N");
	res->sizes = calloc(2, sizeof *res->sizes);
	ck_assert_ptr_nonnull(res->sizes);
	res->sizes_len = 2;
	for (int i = 0; i < 2; i++) {
		res->sizes[i].vals[0] = 4096 + i;
		res->sizes[i].odd = i;
		res->sizes[i].passed = 1;
		res->sizes[i].ntrials = 2;
		for (int k = 0; k < 2; k++) {
			res->sizes[i].trials[k].trial = k;
			res->sizes[i].trials[k].seed = 0x10u * (unsigned)i + (unsigned)k;
			res->sizes[i].trials[k].run.passed = 1;
			res->sizes[i].trials[k].run.judged = 1;
		}
	}
	res->passed = 1;
	res->reference = SPEC_REF_OP;
	res->max_rel = 1e-3;
}

START_TEST(check_answer_warns_about_a_weak_reference)
{
	struct check_result res;
	two_sizes(&res);
	check_flag_set(&res.flags, "weak_reference", 0, "a kernel writing zeros would pass");
	json_t *j = tools_check_json(&res);
	ck_assert_str_eq(json_string_value(json_object_get(j, "summary")),
			 "passed: 2 sizes incl. odd size N=4097, 4 runs in all; max rel err "
			 "1.00e-03; WARNING: a kernel writing zeros would pass");
	ck_assert_str_eq(json_object_iter_key(json_object_iter(j)), "summary");
	ck_assert_ptr_null(json_object_get(j, "replay"));
	json_decref(j);
	check_result_fini(&res);
}
END_TEST

START_TEST(check_answer_blames_only_the_odd_size_and_gives_its_replay)
{
	struct check_result res;
	two_sizes(&res);
	struct check_run *run = &res.sizes[1].trials[1].run;
	run->passed = 0;
	check_fire(run, &res.fired, "precision_hint", "a hint, not the failure");
	check_fire(run, &res.fired, "coverage", "y: 1 of 4097 elements never written");
	res.sizes[1].passed = 0;
	res.passed = 0;
	res.fail_size = 1;
	res.fail_trial = 1;
	json_t *j = tools_check_json(&res);
	ck_assert_str_eq(json_string_value(json_object_get(j, "summary")),
			 "FAILED only at the size kforge chose (odd size N=4097 trial 1: y: 1 of "
			 "4097 elements never written): the kernel handles only the sizes in the "
			 "spec");
	json_t *rp = json_object_get(j, "replay");
	ck_assert_str_eq(json_string_value(json_object_get(rp, "seed")), "0000000000000011");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(rp, "size"), "N")),
			 4097);
	json_t *fired = json_object_get(j, "safeguards_fired");
	ck_assert_int_eq(json_array_size(fired), 2);
	json_decref(j);
	check_result_fini(&res);
}
END_TEST

START_TEST(bench_answer_headlines_the_first_timed_size_or_the_first_failure)
{
	struct bench_result res = {.answer = CHECK_ANSWER_VERDICT, .fail_size = -1, .passed = 1};
	res.vars_len = 1;
	snprintf(res.vars[0], sizeof res.vars[0], "N");
	snprintf(res.kernel, sizeof res.kernel, "axpb");
	res.sizes = calloc(2, sizeof *res.sizes);
	ck_assert_ptr_nonnull(res.sizes);
	res.sizes_len = 2;
	for (int i = 0; i < 2; i++) {
		struct bench_size *b = &res.sizes[i];
		b->vals[0] = 4096 * (i + 1);
		b->timed = b->verified = b->compared = 1;
		b->candidate =
			(struct stats_summary){.n = 50, .median = 0.01, .p10 = 0.009, .p90 = 0.012};
		b->roofline = (struct stats_roofline){.gbs = 123,
						      .tflops = -1,
						      .pct_bw = -1,
						      .pct_flops = -1,
						      .floor_ms = -1,
						      .bound = "unknown"};
		b->flops = -1;
		b->verification.judged = b->verification.passed = 1;
	}
	check_flag_set(&res.flags, "below_floor", 1, "too fast");
	json_t *j = tools_bench_json(&res);
	ck_assert_str_eq(json_string_value(json_object_get(j, "summary")),
			 "axpb N=4096: 10.00 us (p10 9.00, p90 12.00, n=50), 123 GB/s (+1 more "
			 "sizes); WARNING: below the roofline floor");
	ck_assert(json_is_true(json_object_get(j, "passed")));
	ck_assert(json_real_value(json_object_get(json_object_get(j, "candidate"), "median_us")) ==
		  10.0);
	json_decref(j);

	/* The first size never produced a timing: the answer says why. */
	res.sizes[0].timed = res.sizes[0].verified = 0;
	check_fire(&res.sizes[0].failure, &res.fired, "timeout", "the kernel did not finish");
	res.passed = 0;
	res.fail_size = 0;
	j = tools_bench_json(&res);
	ck_assert_str_eq(json_string_value(json_object_get(j, "summary")),
			 "FAILED: N=4096: the kernel did not finish");
	ck_assert_ptr_null(json_object_get(j, "candidate"));
	json_t *s0 = json_array_get(json_object_get(j, "sizes"), 0);
	ck_assert(json_is_false(json_object_get(s0, "verified")));
	ck_assert_int_eq(json_array_size(json_object_get(s0, "safeguards")), 1);
	json_decref(j);
	bench_result_fini(&res);
}
END_TEST

/* The value of phases.name in answer j. */
static double phase(const json_t *j, const char *name)
{
	const json_t *v = json_object_get(json_object_get(j, "phases"), name);
	ck_assert_msg(json_is_number(v), "phases.%s missing", name);
	return json_number_value(v);
}

static const char *const PHASES[] = {"compile_ms",     "queue_wait_ms", "harness_start_ms",
				     "module_load_ms", "upload_ms",	"kernel_runs_ms",
				     "download_ms",    "reference_ms",	"compare_ms"};

START_TEST(answers_carry_every_phase_and_the_tool_layer_adds_its_own)
{
	struct check_result res;
	two_sizes(&res);
	res.phases = (struct check_phases){.compile_ms = 1,
					   .queue_wait_ms = 2,
					   .harness_start_ms = 3,
					   .module_load_ms = 4,
					   .upload_ms = 5,
					   .kernel_runs_ms = 6,
					   .download_ms = 7,
					   .reference_ms = 8,
					   .compare_ms = 9.0004,
					   .harness_runs = 2,
					   .harness_spares = 1};
	json_t *j = tools_check_json(&res);
	ck_assert_int_eq(json_object_size(json_object_get(j, "phases")), 11);
	for (size_t i = 0; i < sizeof PHASES / sizeof PHASES[0]; i++)
		ck_assert(phase(j, PHASES[i]) == (double)(i + 1));
	/* How many harness processes ran and how many of them were spares. */
	ck_assert(json_is_integer(json_object_get(json_object_get(j, "phases"), "harness_runs")));
	ck_assert(phase(j, "harness_runs") == 2 && phase(j, "harness_spares") == 1);
	ck_assert_ptr_null(json_object_get(json_object_get(j, "phases"), "history_write_ms"));
	tools_check_phases_finish(j, 0.25, 70.5);
	ck_assert(phase(j, "history_write_ms") == 0.25);
	ck_assert(phase(j, "total_ms") == 70.5);
	json_decref(j);
	check_result_fini(&res);

	/* A benchmark too, and a compile failure: how long the compile took. */
	struct bench_result b = {.answer = CHECK_ANSWER_VERDICT, .fail_size = -1, .passed = 1};
	b.phases.kernel_runs_ms = 1000;
	j = tools_bench_json(&b);
	ck_assert(phase(j, "kernel_runs_ms") == 1000);
	ck_assert(phase(j, "compile_ms") == 0);
	json_decref(j);
	b.answer = CHECK_ANSWER_COMPILE;
	b.compile_failed.what = "the candidate";
	b.phases.compile_ms = 812.5;
	j = tools_bench_json(&b);
	ck_assert_str_eq(json_string_value(json_object_get(j, "failed_stage")), "compile");
	ck_assert(phase(j, "compile_ms") == 812.5);
	json_decref(j);
	bench_result_fini(&b);

	/* An answer without phases (an error result) is left alone. */
	json_t *e = json_pack("{s:s}", "summary", "no usable GPU");
	tools_check_phases_finish(e, 1, 2);
	ck_assert_ptr_null(json_object_get(e, "phases"));
	json_decref(e);
}
END_TEST

START_TEST(compile_timeout_answer_names_the_limit_and_keeps_the_log_tail)
{
	struct compile_result res = {.timed_out = 1, .timeout_ms = 1500, .sandbox = "none"};
	snprintf(res.arch, sizeof res.arch, "sm_90");
	res.log_tail = strdup("kernel.cu(2): still instantiating");
	json_t *j = tools_compile_json(&res);
	const char *sum = json_string_value(json_object_get(j, "summary"));
	ck_assert_ptr_nonnull(strstr(sum, "compile timed out after 1500 ms for sm_90"));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "code")),
			 "timeout");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "error"), "message")),
			 sum);
	ck_assert(json_is_true(json_object_get(j, "timed_out")));
	ck_assert_str_eq(json_string_value(json_object_get(j, "log_tail")),
			 "kernel.cu(2): still instantiating");
	json_decref(j);
	compile_result_fini(&res);
	/* No report and no timeout: nothing to answer. */
	struct compile_result none = {0};
	ck_assert_ptr_null(tools_compile_json(&none));
}
END_TEST

static Suite *tools_check_bench_suite(void)
{
	Suite *s = suite_create("tools_check_bench");
	TCase *t = tcase_create("no_gpu");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 30);
	tcase_add_loop_test(t, no_gpu_is_a_structured_error_without_numbers, 0, 2);
	tcase_add_loop_test(t, bad_spec_names_the_field_even_without_a_gpu, 0, 2);
	tcase_add_loop_test(t, arguments_outside_the_schema_are_refused, 0, 2);
	tcase_add_loop_test(t, device_memory_cap_comes_from_the_operator, 0, 2);
	tcase_add_loop_test(t, both_tools_are_registered_with_schemas, 0, 2);
	tcase_add_loop_test(t, description_notes_and_parent_are_stored_with_the_run, 0, 2);
	suite_add_tcase(s, t);
	TCase *a = tcase_create("answers");
	tcase_add_test(a, check_answer_warns_about_a_weak_reference);
	tcase_add_test(a, check_answer_blames_only_the_odd_size_and_gives_its_replay);
	tcase_add_test(a, bench_answer_headlines_the_first_timed_size_or_the_first_failure);
	tcase_add_test(a, compile_timeout_answer_names_the_limit_and_keeps_the_log_tail);
	tcase_add_test(a, answers_carry_every_phase_and_the_tool_layer_adds_its_own);
	suite_add_tcase(s, a);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(tools_check_bench_suite());
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
