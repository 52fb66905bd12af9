/* check_rest_kb: the knowledge routes of the REST table (server/transport/rest.c)
 * driven through rest_plan and rest_run on a knowledge base built from the
 * real GPU facts and the fixture guides: every GPU row round-trips through
 * GET /v1/gpus/{id} against the CSV, status codes for unknown names, no GPU
 * and bad queries, and hostile search text answered 200. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knowledge/kb_build.h"
#include "knowledge/kb_int.h"
#include "server/app.h"
#include "server/transport/rest.h"
#include "server/mcp/tools.h"

#define KB_FIXTURE_NAME "check_rest_kb"
#include "tests/unit/kb_fixture.h"

/* Query parameters as name, value pairs ended by NULL. */
static const char *query_get(void *qarg, const char *name)
{
	const char *const *kv = qarg;
	for (size_t i = 0; kv && kv[i]; i += 2)
		if (strcmp(kv[i], name) == 0)
			return kv[i + 1];
	return NULL;
}

/* GET path with query pairs; returns the HTTP status and the body (new). */
static int get(const char *path, const char *const *kv, json_t **body)
{
	struct rest_req req = {
		.method = "GET", .path = path, .query = query_get, .qarg = (void *)kv};
	struct rest_plan plan = {0};
	const char *allow = NULL;
	*body = NULL;
	int st = rest_plan(&req, &plan, body, &allow);
	if (st != 0)
		return st;
	struct rest_info info = {0};
	st = rest_run(g_app, &plan, &info, body);
	rest_plan_fini(&plan);
	return st;
}

static const char *err_code(const json_t *b)
{
	return json_string_value(json_object_get(json_object_get(b, "error"), "code"));
}

START_TEST(every_gpu_row_round_trips_through_rest)
{
	char path[700], *text = NULL;
	size_t len;
	struct kb_csv csv;
	struct kf_err err = {0};
	json_t *b = NULL;
	snprintf(path, sizeof path, "%s/tests/data/kb/gpu-facts/gpus.csv", g_src);
	ck_assert_int_eq(kb_read_file(path, 1 << 22, &text, &len, &err), 0);
	ck_assert_int_eq(kb_csv_parse(path, text, &csv, &err), 0);
	ck_assert_int_eq(get("/v1/gpus", NULL, &b), 200);
	json_t *gpus = json_incref(json_object_get(b, "gpus"));
	json_decref(b);
	ck_assert_uint_eq(json_array_size(gpus), csv.rows_len);
	int figures = 0;
	for (size_t r = 0; r < csv.rows_len; r++) {
		char p[160];
		snprintf(p, sizeof p, "/v1/gpus/%s",
			 json_string_value(json_object_get(json_array_get(gpus, r), "id")));
		ck_assert_int_eq(get(p, NULL, &b), 200);
		json_t *g = json_object_get(b, "gpu");
		ck_assert_str_eq(json_string_value(json_object_get(g, "name")), csv.rows[r][0]);
		for (size_t c = 0; c < csv.cols_len; c++) {
			json_t *f = json_object_get(json_object_get(g, "figures"), csv.header[c]);
			if (!f)
				continue;
			const char *cell = csv.rows[r][c];
			json_t *v = json_object_get(f, "value");
			if (!*cell || strcmp(cell, "n/a") == 0) {
				ck_assert(json_is_null(v));
				ck_assert_str_eq(json_string_value(json_object_get(f, "status")),
						 *cell ? "n/a" : "unknown");
			} else if (json_is_number(v)) {
				ck_assert_double_eq(json_number_value(v), strtod(cell, NULL));
			} else {
				ck_assert_str_eq(json_string_value(v), cell);
			}
			figures++;
		}
		json_decref(b);
	}
	ck_assert_int_gt(figures, 500);
	json_decref(gpus);
	kb_csv_fini(&csv);
	free(text);
}
END_TEST

START_TEST(gpu_routes_answer_compare_unknown_and_no_gpu)
{
	json_t *b = NULL;
	const char *ids[] = {"ids", "a100,h100,h200", NULL};
	ck_assert_int_eq(get("/v1/gpus/compare", ids, &b), 200);
	ck_assert_uint_eq(json_array_size(json_object_get(b, "gpus")), 3);
	json_decref(b);
	const char *five[] = {"ids", "t4,a10,l4,h100,b200", NULL};
	ck_assert_int_eq(get("/v1/gpus/compare", five, &b), 400);
	json_decref(b);
	ck_assert_int_eq(get("/v1/gpus/h1000", NULL, &b), 404);
	ck_assert_str_eq(err_code(b), "not_found");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(b, "summary")), "h100-sxm"));
	json_decref(b);
	ck_assert_int_eq(get("/v1/gpus/local", NULL, &b), 503);
	ck_assert_str_eq(err_code(b), "no_gpu");
	json_decref(b);
	ck_assert_int_eq(get("/v1/gpus/hopper", NULL, &b), 200);
	ck_assert_ptr_nonnull(json_object_get(b, "ambiguous"));
	json_decref(b);
}
END_TEST

static const char *const HOSTILE[] = {
	"\"",	      "NEAR(a b)",  "*",
	"-bank",      "title:bank", "(((",
	"bank AND",   "OR NOT",	    "'; DROP TABLE guides; --",
	"{title}: x", "^x",	    "a NEAR/1 b \"",
	"\\",	      "%00",
};

START_TEST(hostile_search_through_rest_answers_200)
{
	json_t *b = NULL;
	const char *kv[] = {"q", HOSTILE[_i], NULL};
	ck_assert_int_eq(get("/v1/guides", kv, &b), 200);
	ck_assert(json_is_array(json_object_get(b, "hits")));
	json_decref(b);
	const char *ok[] = {"q", "bank conflicts", NULL};
	ck_assert_int_eq(get("/v1/guides", ok, &b), 200);
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(json_object_get(b, "hits"), 0), "id")),
			 "fx-bank");
	json_decref(b);
}
END_TEST

START_TEST(guide_routes_search_filter_read_and_reject)
{
	json_t *b = NULL;
	const char *kv[] = {"q", "fixture", "arch", "sm_90", "tag", "memory", NULL};
	ck_assert_int_eq(get("/v1/guides", kv, &b), 200);
	ck_assert_uint_eq(json_array_size(json_object_get(b, "hits")), 1);
	json_decref(b);
	ck_assert_int_eq(get("/v1/guides/fx-bank", NULL, &b), 200);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(b, "markdown")), "pad"));
	json_decref(b);
	ck_assert_int_eq(get("/v1/guides/fx-nope", NULL, &b), 404);
	json_decref(b);
	const char *empty[] = {"q", "   ", NULL};
	ck_assert_int_eq(get("/v1/guides", empty, &b), 400);
	ck_assert_str_eq(err_code(b), "invalid");
	json_decref(b);
	char big[700];
	memset(big, 'x', 600);
	big[600] = '\0';
	const char *lng[] = {"q", big, NULL};
	ck_assert_int_eq(get("/v1/guides", lng, &b), 400);
	json_decref(b);
	ck_assert_int_eq(get("/v1/guides", NULL, &b), 400); /* q is required */
	json_decref(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rest_kb");
	TCase *t = tcase_create("rest");
	tcase_add_unchecked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, every_gpu_row_round_trips_through_rest);
	tcase_add_test(t, gpu_routes_answer_compare_unknown_and_no_gpu);
	tcase_add_loop_test(t, hostile_search_through_rest_answers_200, 0,
			    sizeof HOSTILE / sizeof HOSTILE[0]);
	tcase_add_test(t, guide_routes_search_filter_read_and_reject);
	suite_add_tcase(s, t);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
