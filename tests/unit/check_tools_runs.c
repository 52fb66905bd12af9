/* check_tools_runs: list_runs, get_run, compare_runs and the run resources
 * through mcp_tool_call (schema validation included), and tools_runs_record, over
 * a state.db in a temporary directory. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/history/history.h"
#include "server/app.h"
#include "server/mcp/mcp.h"
#include "server/mcp/tools.h"
#include "server/tools/groups.h"
#include "server/tools/tools_runs.h"
#include "tests/unit/fixture.h"
#include "base/version.h"

static char dir[256];
static struct app app;

static void setup(void)
{
	const struct tool_group *groups[] = {&TOOLS_RUNS};
	struct kf_err err = {0};

	fixture_dir_new(dir, sizeof(dir), "runs");
	memset(&app, 0, sizeof(app));
	app.history = fixture_history_open(dir);
	ck_assert_msg(tools_load_groups(groups, 1, &err) == 0, "%s", err.msg);
}

static void teardown(void)
{
	history_close(app.history);
	fixture_dir_remove(dir);
}

/* Calls a tool; returns the result (new), and *is_error. */
static json_t *call(const char *tool, const char *args_text, int *is_error)
{
	json_t *args = json_loads(args_text, 0, NULL), *res = NULL;
	struct kf_err err = {0};
	int rc;

	ck_assert_msg(args != NULL, "bad test JSON: %s", args_text);
	rc = mcp_tool_call(&app, tool, args, &res, is_error, &err);
	json_decref(args);
	ck_assert_msg(rc == 0, "%s: %s", tool, err.msg);
	ck_assert_str_eq(json_object_iter_key(json_object_iter(res)), "summary");
	return res;
}

static const char *summary_of(const json_t *res)
{
	return json_string_value(json_object_get(res, "summary"));
}

/* Adds a run with result text and returns its id in id. */
static void add(enum history_kind kind, enum history_status status, const char *kernels,
		const char *result_text, const char *device, char id[HISTORY_ID_BYTES])
{
	struct history_run run = {0};
	json_t *result = result_text ? json_loads(result_text, 0, NULL) : NULL;

	run.kind = kind;
	run.status = status;
	run.kernels = (char *)kernels;
	run.summary = (char *)"stored summary";
	run.result = result;
	run.device_name = (char *)"NVIDIA H200";
	run.device_uuid = (char *)device;
	ck_assert_int_eq(history_add(app.history, &run, NULL), 0);
	memcpy(id, run.id, HISTORY_ID_BYTES);
	json_decref(result);
}

START_TEST(list_runs_filters_and_pages_with_a_cursor)
{
	char id[HISTORY_ID_BYTES], args[128];
	json_t *res, *runs;
	int is_error;
	const char *cursor;

	add(HISTORY_COMPILE, HISTORY_OK, "a_kernel", NULL, NULL, id);
	add(HISTORY_CHECK, HISTORY_FAILED, "b_kernel", NULL, NULL, id);
	add(HISTORY_CHECK, HISTORY_OK, "c_kernel", NULL, NULL, id);
	add(HISTORY_CHECK, HISTORY_OK, "c_kernel", NULL, NULL, id);

	res = call("list_runs", "{\"kind\": \"check\", \"limit\": 2}", &is_error);
	ck_assert_int_eq(is_error, 0);
	runs = json_object_get(res, "runs");
	ck_assert_uint_eq(json_array_size(runs), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(runs, 0), "id")), id);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(runs, 0), "kind")),
			 "check");
	ck_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(json_array_get(runs, 0), "kernels"), 0)),
			 "c_kernel");
	cursor = json_string_value(json_object_get(res, "next_cursor"));
	ck_assert_ptr_nonnull(cursor);
	snprintf(args, sizeof(args), "{\"kind\": \"check\", \"limit\": 2, \"cursor\": \"%s\"}",
		 cursor);
	json_decref(res);
	res = call("list_runs", args, &is_error);
	runs = json_object_get(res, "runs");
	ck_assert_uint_eq(json_array_size(runs), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(runs, 0), "status")),
			 "failed");
	ck_assert_ptr_null(json_object_get(res, "next_cursor"));
	json_decref(res);

	res = call("list_runs", "{\"kernel\": \"b_k\", \"status\": \"failed\", \"since\": \"1h\"}",
		   &is_error);
	ck_assert_uint_eq(json_array_size(json_object_get(res, "runs")), 1);
	json_decref(res);
	res = call("list_runs", "{\"since\": \"2999-01-01\"}", &is_error);
	ck_assert_uint_eq(json_array_size(json_object_get(res, "runs")), 0);
	ck_assert_str_eq(summary_of(res), "no runs match");
	json_decref(res);
}
END_TEST

START_TEST(list_runs_rejects_a_bad_since_and_bad_kind)
{
	json_t *args, *res = NULL;
	struct kf_err err = {0};
	int is_error;

	res = call("list_runs", "{\"since\": \"yesterday\"}", &is_error);
	ck_assert_int_eq(is_error, 1);
	ck_assert_ptr_nonnull(strstr(summary_of(res), "since: 'yesterday' is not a time"));
	json_decref(res);
	/* An age past 1970 (1e300 days would overflow int64) is refused. */
	res = call("list_runs", "{\"since\": \"1e300d\"}", &is_error);
	ck_assert_int_eq(is_error, 1);
	ck_assert_ptr_nonnull(strstr(summary_of(res), "reaches back before 1970"));
	json_decref(res);
	res = call("list_runs", "{\"since\": \"20000d\"}", &is_error);
	ck_assert_int_eq(is_error, 0);
	json_decref(res);
	res = call("list_runs", "{\"cursor\": \"xxxxxxxxxxxxxxxx\"}", &is_error);
	ck_assert_int_eq(is_error, 1);
	ck_assert_ptr_nonnull(strstr(summary_of(res), "cursor"));
	json_decref(res);
	args = json_pack("{s:s}", "kind", "benchmark");
	ck_assert_int_eq(mcp_tool_call(&app, "list_runs", args, &res, &is_error, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "kind"));
	json_decref(args);
}
END_TEST

START_TEST(get_run_links_a_big_source_and_the_resource_serves_it)
{
	json_t *args = json_object(), *res, *run, *spec, *contents = NULL;
	char *source = malloc(40001), uri[64], id[HISTORY_ID_BYTES];
	char req[64];
	int is_error;

	memset(source, 'x', 40000);
	source[40000] = '\0';
	json_object_set_new(args, "source", json_string(source));
	json_object_set_new(args, "arch", json_string("sm_90"));
	res = json_pack("{s:s, s:b}", "summary", "compiled", "ok", 1);
	ck_assert_int_eq(tools_runs_record(&app, HISTORY_COMPILE, args, res, 0, NULL, -1, 12, id),
			 0);
	ck_assert_str_eq(json_string_value(json_object_get(res, "run_id")), id);
	json_decref(res);

	snprintf(req, sizeof(req), "{\"id\": \"%s\"}", id);
	res = call("get_run", req, &is_error);
	ck_assert_int_eq(is_error, 0);
	run = json_object_get(res, "run");
	ck_assert_str_eq(json_string_value(json_object_get(run, "status")), "ok");
	ck_assert_int_eq(json_integer_value(json_object_get(run, "duration_ms")), 12);
	spec = json_object_get(run, "spec");
	ck_assert_str_eq(json_string_value(json_object_get(spec, "arch")), "sm_90");
	snprintf(uri, sizeof(uri), "kforge://runs/%s/source", id);
	ck_assert_str_eq(
		json_string_value(json_object_get(json_object_get(spec, "source"), "resource")),
		uri);
	json_decref(res);

	ck_assert_int_eq(TOOLS_RUNS.resources[0].read(&app, uri, &contents, NULL), 0);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(contents, 0), "text")),
			 source);
	ck_assert_str_eq(
		json_string_value(json_object_get(json_array_get(contents, 0), "mimeType")),
		"text/x-cuda");
	json_decref(contents);
	json_decref(args);
	free(source);
}
END_TEST

START_TEST(list_and_get_show_description_notes_and_parent)
{
	char parent[HISTORY_ID_BYTES], id[HISTORY_ID_BYTES], args[64];
	struct tools_runs_meta meta = {"softmax: y = exp(x - max) / sum(exp(x - max))",
				       "one warp per row, online max", NULL};
	json_t *result = json_pack("{s:s, s:b}", "summary", "passed", "passed", 1), *res, *row;
	int is_error;

	add(HISTORY_CHECK, HISTORY_OK, "softmax_plain", NULL, NULL, parent);
	meta.parent = parent;
	ck_assert_int_eq(tools_runs_record_meta(&app, HISTORY_CHECK, NULL, result, 0, NULL, -1, 5,
						&meta, id),
			 0);
	res = call("list_runs", "{\"limit\": 2}", &is_error);
	row = json_array_get(json_object_get(res, "runs"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(row, "description")), meta.description);
	ck_assert_str_eq(json_string_value(json_object_get(row, "parent")), parent);
	ck_assert_ptr_null(json_object_get(row, "notes"));
	ck_assert_ptr_null(
		json_object_get(json_array_get(json_object_get(res, "runs"), 1), "description"));
	json_decref(res);
	snprintf(args, sizeof(args), "{\"id\": \"%s\"}", id);
	res = call("get_run", args, &is_error);
	row = json_object_get(res, "run");
	ck_assert_str_eq(json_string_value(json_object_get(row, "notes")), meta.notes);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(row, "env"), "kforge")),
			 KFORGE_VERSION);
	ck_assert_str_eq(json_string_value(json_object_get(row, "parent")), parent);
	json_decref(res);
	json_decref(result);
}
END_TEST

START_TEST(get_run_of_an_unknown_id_is_a_not_found_error)
{
	json_t *res;
	int is_error;

	res = call("get_run", "{\"id\": \"r000000000000000\"}", &is_error);
	ck_assert_int_eq(is_error, 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res, "error"), "code")),
			 "not_found");
	json_decref(res);
}
END_TEST

START_TEST(run_resources_list_read_and_refuse_unknown_parts)
{
	char id[HISTORY_ID_BYTES], uri[96];
	json_t *arr = json_array(), *contents = NULL, *doc;
	struct kf_err err = {0};

	add(HISTORY_BENCH, HISTORY_OK, "k", "{\"summary\": \"s\", \"x\": 1}", NULL, id);
	ck_assert_int_eq(TOOLS_RUNS.resources[1].list(&app, arr, NULL), 0);
	ck_assert_uint_eq(json_array_size(arr), 1);
	snprintf(uri, sizeof(uri), "kforge://runs/%s", id);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(arr, 0), "uri")), uri);
	ck_assert_int_eq(TOOLS_RUNS.resources[1].read(&app, uri, &contents, NULL), 0);
	doc = json_loads(json_string_value(json_object_get(json_array_get(contents, 0), "text")), 0,
			 NULL);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(doc, "result"), "x")),
			 1);
	json_decref(doc);
	json_decref(contents);
	snprintf(uri, sizeof(uri), "kforge://runs/%s/binary", id);
	ck_assert_int_eq(TOOLS_RUNS.resources[0].read(&app, uri, &contents, &err), KF_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.msg, "source, spec and result"));
	json_decref(arr);
}
END_TEST

static json_t *compare(const char *a, const char *b, int *is_error)
{
	char req[96];

	snprintf(req, sizeof(req), "{\"a\": \"%s\", \"b\": \"%s\"}", a, b);
	return call("compare_runs", req, is_error);
}

START_TEST(compare_benchmarks_gives_speedup_with_interval)
{
	char a[HISTORY_ID_BYTES], b[HISTORY_ID_BYTES], c[HISTORY_ID_BYTES];
	json_t *res, *bench;
	int is_error;
	double lo, hi;

	add(HISTORY_BENCH, HISTORY_OK, "k",
	    "{\"summary\": \"a\", \"candidate\": {\"median_us\": 100.0, \"ci95_us\": [99.0, 101.0], \"count\": 200}}",
	    "GPU-1", a);
	add(HISTORY_BENCH, HISTORY_OK, "k",
	    "{\"summary\": \"b\", \"candidate\": {\"median_us\": 50.0, \"median_se_us\": 0.25, \"count\": 200}}",
	    "GPU-1", b);
	add(HISTORY_BENCH, HISTORY_OK, "k",
	    "{\"summary\": \"c\", \"candidate\": {\"median_us\": 100.5, \"ci_low_us\": 99.5, \"ci_high_us\": 101.5, \"count\": 200}}",
	    "GPU-1", c);
	res = compare(a, b, &is_error);
	ck_assert_int_eq(is_error, 0);
	bench = json_object_get(res, "benchmark");
	ck_assert(fabs(json_real_value(json_object_get(bench, "speedup")) - 2.0) < 1e-9);
	ck_assert_str_eq(json_string_value(json_object_get(bench, "verdict")), "b is faster");
	lo = json_real_value(json_array_get(json_object_get(bench, "speedup_ci95"), 0));
	hi = json_real_value(json_array_get(json_object_get(bench, "speedup_ci95"), 1));
	ck_assert(lo < 2.0 && hi > 2.0 && lo > 1.95 && hi < 2.05);
	ck_assert_ptr_nonnull(strstr(summary_of(res), "b is 2x faster than a"));
	ck_assert_ptr_null(json_object_get(res, "note"));
	json_decref(res);

	res = compare(a, c, &is_error);
	ck_assert_str_eq(
		json_string_value(json_object_get(json_object_get(res, "benchmark"), "verdict")),
		"no measurable difference");
	ck_assert_ptr_nonnull(strstr(summary_of(res), "no measurable difference"));
	json_decref(res);

	/* milliseconds with stats_summary's field names: 0.2 ms = 200 us */
	add(HISTORY_BENCH, HISTORY_OK, "k",
	    "{\"summary\": \"d\", \"candidate\": {\"median_ms\": 0.2, \"ci_lo_ms\": 0.199, \"ci_hi_ms\": 0.201, \"n\": 50}}",
	    "GPU-1", c);
	res = compare(a, c, &is_error);
	bench = json_object_get(res, "benchmark");
	ck_assert(fabs(json_real_value(json_object_get(bench, "speedup")) - 0.5) < 1e-9);
	ck_assert_str_eq(json_string_value(json_object_get(bench, "verdict")), "b is slower");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(bench, "b"), "ci_from")),
			 "ci_lo_ms/ci_hi_ms");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(bench, "b"), "count")),
			 50);
	ck_assert_ptr_nonnull(strstr(summary_of(res), "b is 2x slower than a"));
	json_decref(res);
}
END_TEST

START_TEST(compare_benchmarks_matches_every_size_both_measured)
{
	char a[HISTORY_ID_BYTES], b[HISTORY_ID_BYTES];
	json_t *res, *per;
	int is_error;

	add(HISTORY_BENCH, HISTORY_OK, "k",
	    "{\"summary\": \"a\", \"candidate\": {\"median_us\": 10.0, \"ci95_us\": [9.9, 10.1]},"
	    " \"sizes\": [{\"sizes\": {\"N\": 1024}, \"candidate\": {\"median_us\": 10.0, \"ci95_us\": [9.9, 10.1]}},"
	    " {\"sizes\": {\"N\": 7}, \"candidate\": {\"median_us\": 2.0, \"ci95_us\": [1.9, 2.1]}},"
	    " {\"sizes\": {\"N\": 99}, \"candidate\": {\"median_us\": 3.0}}]}",
	    "GPU-1", a);
	add(HISTORY_BENCH, HISTORY_OK, "k",
	    "{\"summary\": \"b\", \"candidate\": {\"median_us\": 5.0, \"ci95_us\": [4.9, 5.1]},"
	    " \"sizes\": [{\"sizes\": {\"N\": 7}, \"candidate\": {\"median_us\": 2.05, \"ci95_us\": [1.95, 2.15]}},"
	    " {\"sizes\": {\"N\": 1024}, \"candidate\": {\"median_us\": 5.0, \"ci95_us\": [4.9, 5.1]}}]}",
	    "GPU-1", b);
	res = compare(a, b, &is_error);
	ck_assert_int_eq(is_error, 0);
	per = json_object_get(json_object_get(res, "benchmark"), "per_size");
	ck_assert_uint_eq(json_array_size(per), 2); /* N=99 only in a */
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(json_array_get(per, 0), "sizes"), "N")),
			 1024);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(per, 0), "verdict")),
			 "b is faster");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(per, 1), "verdict")),
			 "no measurable difference");
	json_decref(res);
}
END_TEST

START_TEST(compare_benchmarks_falls_back_to_cv_or_says_unknown)
{
	char a[HISTORY_ID_BYTES], b[HISTORY_ID_BYTES], c[HISTORY_ID_BYTES];
	json_t *res, *bench;
	int is_error;

	add(HISTORY_BENCH, HISTORY_OK, "k",
	    "{\"summary\": \"a\", \"candidate\": {\"median_us\": 10.0, \"cv\": 0.01, \"count\": 100}}",
	    "GPU-1", a);
	add(HISTORY_BENCH, HISTORY_OK, "k",
	    "{\"summary\": \"b\", \"candidate\": {\"median_us\": 10.01, \"cv\": 0.01, \"count\": 100}}",
	    "GPU-2", b);
	add(HISTORY_BENCH, HISTORY_OK, "k",
	    "{\"summary\": \"c\", \"candidate\": {\"median_us\": 5.0}}", "GPU-1", c);
	res = compare(a, b, &is_error);
	bench = json_object_get(res, "benchmark");
	ck_assert_str_eq(json_string_value(json_object_get(bench, "verdict")),
			 "no measurable difference");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(bench, "a"), "ci_from")),
			 "cv and count (approximate)");
	ck_assert_ptr_nonnull(
		strstr(json_string_value(json_object_get(res, "note")), "different GPUs"));
	json_decref(res);
	res = compare(a, c, &is_error);
	ck_assert_str_eq(
		json_string_value(json_object_get(json_object_get(res, "benchmark"), "verdict")),
		"uncertainty unknown");
	json_decref(res);
}
END_TEST

START_TEST(compare_of_a_benchmark_without_timing_is_an_error)
{
	char a[HISTORY_ID_BYTES], b[HISTORY_ID_BYTES];
	json_t *res;
	int is_error;

	add(HISTORY_BENCH, HISTORY_OK, "k",
	    "{\"summary\": \"a\", \"candidate\": {\"median_us\": 10.0}}", NULL, a);
	add(HISTORY_BENCH, HISTORY_ERROR, "k",
	    "{\"summary\": \"no GPU\", \"error\": {\"code\": \"no_gpu\"}}", NULL, b);
	res = compare(a, b, &is_error);
	ck_assert_int_eq(is_error, 1);
	ck_assert_ptr_nonnull(strstr(summary_of(res), "has no candidate median"));
	json_decref(res);
}
END_TEST

START_TEST(compare_compiles_lists_resource_changes_per_kernel)
{
	char a[HISTORY_ID_BYTES], b[HISTORY_ID_BYTES];
	json_t *res, *ks, *changes;
	int is_error;

	add(HISTORY_COMPILE, HISTORY_OK, "k1,k2",
	    "{\"summary\": \"a\", \"kernels\": [{\"name\": \"k1\", \"registers\": 32, \"spill_stores\": 0, \"shared_bytes\": 1024},"
	    " {\"name\": \"k2\", \"registers\": 16}]}",
	    NULL, a);
	add(HISTORY_COMPILE, HISTORY_OK, "k1,k3",
	    "{\"summary\": \"b\", \"kernels\": [{\"name\": \"k1\", \"registers\": 40, \"spill_stores\": 8, \"shared_bytes\": 1024},"
	    " {\"name\": \"k3\", \"registers\": 16}]}",
	    NULL, b);
	res = compare(a, b, &is_error);
	ck_assert_int_eq(is_error, 0);
	ks = json_object_get(res, "kernels");
	ck_assert_uint_eq(json_array_size(ks), 3);
	changes = json_object_get(json_array_get(ks, 0), "changes");
	ck_assert_int_eq(
		json_integer_value(json_object_get(json_object_get(changes, "registers"), "b")),
		40);
	ck_assert(json_real_value(
			  json_object_get(json_object_get(changes, "spill_stores"), "delta")) == 8);
	ck_assert_ptr_null(json_object_get(changes, "shared_bytes"));
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ks, 1), "only_in")), "a");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(ks, 2), "only_in")), "b");
	ck_assert_ptr_nonnull(strstr(summary_of(res), "k1 registers 32 -> 40"));
	json_decref(res);
}
END_TEST

START_TEST(compare_checks_shows_pass_fail_and_safeguards)
{
	char a[HISTORY_ID_BYTES], b[HISTORY_ID_BYTES];
	json_t *res, *cb;
	int is_error;

	add(HISTORY_CHECK, HISTORY_OK, "k",
	    "{\"summary\": \"passed\", \"passed\": true, \"cases\": [{\"passed\": true, \"rel_l2\": 1e-6}]}",
	    NULL, a);
	add(HISTORY_CHECK, HISTORY_FAILED, "k",
	    "{\"summary\": \"coverage: 12 outputs never written\", \"passed\": false, \"cases\": ["
	    "{\"passed\": false, \"safeguard\": \"coverage\", \"rel_l2\": 0.5}, {\"passed\": false, \"safeguard\": \"coverage\"}]}",
	    NULL, b);
	res = compare(a, b, &is_error);
	ck_assert_int_eq(is_error, 0);
	ck_assert_ptr_nonnull(strstr(summary_of(res), "a passed, b failed; b: stored summary"));
	cb = json_object_get(json_object_get(res, "check"), "b");
	ck_assert(json_is_false(json_object_get(cb, "passed")));
	ck_assert_int_eq(json_integer_value(json_object_get(cb, "failing_cases")), 2);
	ck_assert_uint_eq(json_array_size(json_object_get(cb, "safeguards")), 1);
	ck_assert(json_real_value(json_object_get(cb, "worst_rel_l2")) == 0.5);
	json_decref(res);

	/* the harness's layout: sizes[].trials[] with named safeguards */
	add(HISTORY_CHECK, HISTORY_FAILED, "k",
	    "{\"summary\": \"sizes[0] trial 1: stale output\", \"passed\": false, \"safeguards_fired\": [\"coverage\"],"
	    " \"sizes\": [{\"sizes\": {\"N\": 7}, \"trials\": ["
	    "{\"trial\": 0, \"passed\": true, \"outputs\": {\"y\": {\"rel_l2_err\": 0.001}}},"
	    "{\"trial\": 1, \"passed\": false, \"safeguards\": [{\"name\": \"inputs_changed\", \"message\": \"x\"}],"
	    " \"outputs\": {\"y\": {\"rel_l2_err\": 0.25}}}]}]}",
	    NULL, b);
	res = compare(a, b, &is_error);
	cb = json_object_get(json_object_get(res, "check"), "b");
	ck_assert_int_eq(json_integer_value(json_object_get(cb, "cases")), 2);
	ck_assert_int_eq(json_integer_value(json_object_get(cb, "failing_cases")), 1);
	ck_assert_uint_eq(json_array_size(json_object_get(cb, "safeguards")), 2);
	ck_assert(json_real_value(json_object_get(cb, "worst_rel_l2")) == 0.25);
	json_decref(res);
}
END_TEST

START_TEST(compare_calibrations_gives_each_figure_and_its_ratio)
{
	char a[HISTORY_ID_BYTES], b[HISTORY_ID_BYTES];
	json_t *res, *copy;
	int is_error;

	add(HISTORY_CALIBRATE, HISTORY_OK, "",
	    "{\"summary\": \"a\", \"copy_gbs\": 4000.0, \"bf16_tflops\": 700.0, \"method\": \"m\"}",
	    "GPU-1", a);
	add(HISTORY_CALIBRATE, HISTORY_OK, "",
	    "{\"summary\": \"b\", \"copy_gbs\": 4100.0, \"fp32_tflops\": 50.0}", "GPU-1", b);
	res = compare(a, b, &is_error);
	ck_assert_int_eq(is_error, 0);
	copy = json_object_get(json_object_get(res, "figures"), "copy_gbs");
	ck_assert(fabs(json_real_value(json_object_get(copy, "ratio")) - 1.025) < 1e-12);
	ck_assert_ptr_null(json_object_get(json_object_get(res, "figures"), "bf16_tflops"));
	ck_assert_ptr_nonnull(strstr(summary_of(res), "copy_gbs 4000 -> 4100"));
	json_decref(res);
}
END_TEST

START_TEST(compare_of_different_kinds_is_refused)
{
	char a[HISTORY_ID_BYTES], b[HISTORY_ID_BYTES];
	json_t *res;
	int is_error;

	add(HISTORY_CHECK, HISTORY_OK, "k", NULL, NULL, a);
	add(HISTORY_BENCH, HISTORY_OK, "k", NULL, NULL, b);
	res = compare(a, b, &is_error);
	ck_assert_int_eq(is_error, 1);
	ck_assert_ptr_nonnull(strstr(summary_of(res), "compare two runs of one kind"));
	json_decref(res);
}
END_TEST

START_TEST(record_maps_status_hashes_source_and_names_kernels)
{
	json_t *args = json_pack("{s:s, s:[{s:s}, {s:s}]}", "source", "abc", "launch", "kernel",
				 "pass1", "kernel", "pass2");
	json_t *res = json_pack("{s:s, s:b}", "summary", "wrong answer", "passed", 0);
	struct history_run got;
	char id[HISTORY_ID_BYTES];

	ck_assert_int_eq(tools_runs_record(&app, HISTORY_CHECK, args, res, 0, NULL, -1, 5, id), 0);
	ck_assert_int_eq(history_get(app.history, id, &got, NULL), 0);
	ck_assert_int_eq(got.status, HISTORY_FAILED);
	ck_assert_str_eq(got.kernels, "pass1,pass2");
	ck_assert_str_eq(got.source_hash,
			 "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	ck_assert_str_eq(got.summary, "wrong answer");
	history_run_fini(&got);

	/* no_gpu is an error even though the result says passed: false */
	json_decref(res);
	res = json_pack("{s:s, s:b}", "summary", "no usable GPU", "passed", 0);
	ck_assert_int_eq(tools_runs_record(&app, HISTORY_CHECK, args, res, KF_ENOGPU,
					   "no usable GPU", -1, 0, id),
			 0);
	ck_assert_int_eq(history_get(app.history, id, &got, NULL), 0);
	ck_assert_int_eq(got.status, HISTORY_ERROR);
	history_run_fini(&got);

	/* no result: an error run with the handler's message */
	ck_assert_int_eq(tools_runs_record(&app, HISTORY_BENCH, args, NULL, KF_ENOGPU,
					   "libcuda.so.1 not found: no NVIDIA driver on this host",
					   -1, 0, id),
			 0);
	ck_assert_int_eq(history_get(app.history, id, &got, NULL), 0);
	ck_assert_int_eq(got.status, HISTORY_ERROR);
	ck_assert_str_eq(got.summary, "libcuda.so.1 not found: no NVIDIA driver on this host");
	ck_assert_str_eq(
		json_string_value(json_object_get(json_object_get(got.result, "error"), "code")),
		"no_gpu");
	history_run_fini(&got);

	/* an overlong summary is cut at a character boundary, not lost */
	{
		char *longsum = malloc(3001);
		json_t *r2;

		for (int i = 0; i < 1000; i++)
			memcpy(longsum + 3 * i, "\xe2\x82\xac", 3); /* U+20AC */
		longsum[3000] = '\0';
		r2 = json_pack("{s:s}", "summary", longsum);
		ck_assert_int_eq(
			tools_runs_record(&app, HISTORY_CHECK, args, r2, 0, NULL, -1, 0, id), 0);
		ck_assert_int_eq(history_get(app.history, id, &got, NULL), 0);
		ck_assert_uint_eq(strlen(got.summary) % 3, 0);
		ck_assert_uint_gt(strlen(got.summary), 1000);
		ck_assert_uint_lt(strlen(got.summary), 1024);
		history_run_fini(&got);
		json_decref(r2);
		free(longsum);
	}

	/* a compile error is the kernel's fault */
	ck_assert_int_eq(tools_runs_record(&app, HISTORY_COMPILE, args, NULL, KF_ECOMPILE,
					   "error: expected ';'", -1, 0, id),
			 0);
	ck_assert_int_eq(history_get(app.history, id, &got, NULL), 0);
	ck_assert_int_eq(got.status, HISTORY_FAILED);
	history_run_fini(&got);
	json_decref(args);
	json_decref(res);
}
END_TEST

static Suite *tools_runs_suite(void)
{
	Suite *s = suite_create("tools_runs");
	TCase *t = tcase_create("tools");
	TCase *c = tcase_create("compare");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_checked_fixture(c, setup, teardown);
	tcase_add_test(t, list_runs_filters_and_pages_with_a_cursor);
	tcase_add_test(t, list_runs_rejects_a_bad_since_and_bad_kind);
	tcase_add_test(t, get_run_links_a_big_source_and_the_resource_serves_it);
	tcase_add_test(t, get_run_of_an_unknown_id_is_a_not_found_error);
	tcase_add_test(t, list_and_get_show_description_notes_and_parent);
	tcase_add_test(t, run_resources_list_read_and_refuse_unknown_parts);
	tcase_add_test(t, record_maps_status_hashes_source_and_names_kernels);
	tcase_add_test(c, compare_benchmarks_gives_speedup_with_interval);
	tcase_add_test(c, compare_benchmarks_falls_back_to_cv_or_says_unknown);
	tcase_add_test(c, compare_benchmarks_matches_every_size_both_measured);
	tcase_add_test(c, compare_of_a_benchmark_without_timing_is_an_error);
	tcase_add_test(c, compare_compiles_lists_resource_changes_per_kernel);
	tcase_add_test(c, compare_checks_shows_pass_fail_and_safeguards);
	tcase_add_test(c, compare_of_different_kinds_is_refused);
	tcase_add_test(c, compare_calibrations_gives_each_figure_and_its_ratio);
	suite_add_tcase(s, t);
	suite_add_tcase(s, c);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tools_runs_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
