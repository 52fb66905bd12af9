/* check_rest: the REST route table (server/transport/rest.c) without HTTP: route
 * matching, arguments from path, query and body, every planning error
 * (400, 404, 405), the status mapping of tool results, and the OpenAPI
 * document covering every route. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "server/transport/rest.h"

struct q {
	const char *names[4];
	const char *values[4];
};

static const char *qget(void *arg, const char *name)
{
	const struct q *q = arg;
	for (int i = 0; i < 4 && q->names[i]; i++)
		if (!strcmp(q->names[i], name))
			return q->values[i];
	return NULL;
}

/* Plans method path (+ query, body); returns the status, fills plan/body. */
static int plan(const char *method, const char *path, struct q *q, const char *body,
		struct rest_plan *p, json_t **err, const char **allow)
{
	struct rest_req r = {method, path, qget, q, body, body ? strlen(body) : 0};
	static struct q none;
	if (!q)
		r.qarg = &none;
	return rest_plan(&r, p, err, allow);
}

/* --- matching ------------------------------------------------------------------- */

struct route_case {
	const char *method, *path;
	const char *tool;
	const char *args; /* expected arguments, JSON */
};

static const struct route_case ROUTE_CASES[] = {
	{"GET", "/v1/gpus", "get_gpu_specs", "{\"list\":true}"},
	{"GET", "/v1/gpus/h100", "get_gpu_specs", "{\"gpu\":\"h100\",\"detail\":\"full\"}"},
	{"GET", "/v1/gpus/H100 SXM", "get_gpu_specs", "{\"gpu\":\"H100 SXM\",\"detail\":\"full\"}"},
	{"GET", "/v1/guides/bank-conflicts", "read_guide", "{\"id\":\"bank-conflicts\"}"},
	{"GET", "/v1/runs", "list_runs", "{}"},
	{"GET", "/v1/runs/0123456789abcdef", "get_run", "{\"id\":\"0123456789abcdef\"}"},
	{"GET", "/v1/runs/", "list_runs", "{}"},
	{"GET", "//v1//gpus", "get_gpu_specs", "{\"list\":true}"},
};

START_TEST(plan_maps_each_route_onto_its_tool_and_arguments)
{
	const struct route_case *c = &ROUTE_CASES[_i];
	struct rest_plan p;
	json_t *err = NULL, *want = json_loads(c->args, 0, NULL);
	const char *allow;
	int st = plan(c->method, c->path, NULL, NULL, &p, &err, &allow);

	ck_assert_msg(st == 0, "%s %s: status %d", c->method, c->path, st);
	ck_assert_int_eq(p.kind, REST_TOOL);
	ck_assert_str_eq(p.tool, c->tool);
	ck_assert_msg(json_equal(p.args, want), "%s: args %s", c->path,
		      json_dumps(p.args, JSON_COMPACT));
	json_decref(want);
	rest_plan_fini(&p);
}
END_TEST

START_TEST(plan_prefers_fixed_paths_over_patterns)
{
	struct q q = {{"ids"}, {"h100,a100,l4"}};
	struct rest_plan p;
	json_t *err = NULL,
	       *want = json_loads("{\"compare\":[\"h100\",\"a100\",\"l4\"],\"detail\":\"full\"}", 0,
				  NULL);
	const char *allow;

	ck_assert_int_eq(plan("GET", "/v1/gpus/compare", &q, NULL, &p, &err, &allow), 0);
	ck_assert_str_eq(p.tool, "get_gpu_specs");
	ck_assert(json_equal(p.args, want));
	json_decref(want);
	rest_plan_fini(&p);
}
END_TEST

START_TEST(plan_takes_query_parameters_with_their_types)
{
	struct q q = {{"q", "arch", "limit"}, {"bank conflicts", "sm_90", "7"}};
	struct rest_plan p;
	json_t *err = NULL;
	const char *allow;

	ck_assert_int_eq(plan("GET", "/v1/guides", &q, NULL, &p, &err, &allow), 0);
	ck_assert_str_eq(p.tool, "search_guides");
	ck_assert_str_eq(json_string_value(json_object_get(p.args, "query")), "bank conflicts");
	ck_assert_str_eq(json_string_value(json_object_get(p.args, "arch")), "sm_90");
	ck_assert(json_is_integer(json_object_get(p.args, "limit")));
	ck_assert_int_eq(json_integer_value(json_object_get(p.args, "limit")), 7);
	ck_assert_ptr_null(json_object_get(p.args, "tag"));
	rest_plan_fini(&p);
}
END_TEST

START_TEST(plan_passes_a_post_body_as_the_arguments)
{
	struct rest_plan p;
	json_t *err = NULL;
	const char *allow;

	ck_assert_int_eq(plan("POST", "/v1/compile", NULL, "{\"source\":\"x\",\"arch\":\"sm_90\"}",
			      &p, &err, &allow),
			 0);
	ck_assert_str_eq(p.tool, "compile_kernel");
	ck_assert_str_eq(json_string_value(json_object_get(p.args, "source")), "x");
	rest_plan_fini(&p);
}
END_TEST

START_TEST(plan_answers_health_and_openapi_itself)
{
	struct rest_plan p;
	json_t *err = NULL, *body = NULL;
	const char *allow;
	struct rest_info info = {3, 1, 12.0, "http://127.0.0.1:1", 0};

	ck_assert_int_eq(plan("GET", "/v1/health", NULL, NULL, &p, &err, &allow), 0);
	ck_assert_int_eq(p.kind, REST_HEALTH);
	ck_assert_int_eq(rest_run(NULL, &p, &info, &body), 200);
	ck_assert_str_eq(json_object_iter_key(json_object_iter(body)), "summary");
	ck_assert_int_eq(json_integer_value(json_object_get(body, "sessions")), 3);
	json_decref(body);
	rest_plan_fini(&p);
	ck_assert_int_eq(plan("GET", "/v1/openapi.json", NULL, NULL, &p, &err, &allow), 0);
	ck_assert_int_eq(p.kind, REST_OPENAPI);
	rest_plan_fini(&p);
}
END_TEST

/* --- errors ---------------------------------------------------------------------- */

struct err_case {
	const char *method, *path;
	struct q q;
	const char *body;
	int status;
	const char *needle; /* in the error message */
};

static const struct err_case ERR_CASES[] = {
	{"GET", "/v1/nope", {{0}, {0}}, NULL, 404, "no route"},
	{"GET", "/v1/gpus/a/b/c", {{0}, {0}}, NULL, 404, "no route"},
	{"GET", "/v1/a/b/c/d/e/f/g/h/i/j", {{0}, {0}}, NULL, 404, "no route"},
	{"POST", "/v1/gpus", {{0}, {0}}, NULL, 405, "GET only"},
	{"DELETE", "/v1/runs/x", {{0}, {0}}, NULL, 405, "GET only"},
	{"GET", "/v1/compile", {{0}, {0}}, NULL, 405, "POST only"},
	{"GET", "/v1/guides", {{0}, {0}}, NULL, 400, "'q' is required"},
	{"GET", "/v1/gpus/compare", {{0}, {0}}, NULL, 400, "'ids' is required"},
	{"GET", "/v1/gpus/compare", {{"ids"}, {"h100,,a100"}}, NULL, 400, "'ids'"},
	{"GET", "/v1/gpus/compare", {{"ids"}, {",h100"}}, NULL, 400, "'ids'"},
	{"GET",
	 "/v1/guides",
	 {{"q", "limit"}, {"x", "ten"}},
	 NULL,
	 400,
	 "'limit': 'ten' is not an integer"},
	{"GET", "/v1/runs", {{"limit"}, {"5x"}}, NULL, 400, "'limit'"},
	{"GET", "/v1/runs/compare", {{"a"}, {"x"}}, NULL, 400, "'b' is required"},
	{"POST", "/v1/compile", {{0}, {0}}, NULL, 400, "needs a JSON object body"},
	{"POST", "/v1/check", {{0}, {0}}, "{\"spec\":", 400, "not valid JSON"},
	{"POST", "/v1/bench", {{0}, {0}}, "[1]", 400, "must be a JSON object"},
	{"POST", "/v1/bench", {{0}, {0}}, "{\"a\":1,\"a\":2}", 400, "not valid JSON"},
};

START_TEST(plan_rejects_bad_requests_naming_the_problem)
{
	const struct err_case *c = &ERR_CASES[_i];
	struct rest_plan p;
	json_t *err = NULL;
	const char *allow = NULL, *msg;
	struct q q = c->q;
	int st = plan(c->method, c->path, &q, c->body, &p, &err, &allow);

	ck_assert_msg(st == c->status, "%s %s: status %d, want %d", c->method, c->path, st,
		      c->status);
	ck_assert_ptr_nonnull(err);
	msg = json_string_value(json_object_get(json_object_get(err, "error"), "message"));
	ck_assert_msg(msg && strstr(msg, c->needle), "%s %s: message '%s' lacks '%s'", c->method,
		      c->path, msg ? msg : "(none)", c->needle);
	ck_assert_str_eq(json_object_iter_key(json_object_iter(err)), "summary");
	if (st == 405)
		ck_assert_ptr_nonnull(allow);
	ck_assert_ptr_null(p.args);
	json_decref(err);
}
END_TEST

/* --- OpenAPI ---------------------------------------------------------------------- */

START_TEST(openapi_describes_every_route_once)
{
	json_t *doc = rest_openapi();
	const char *const paths[] = {"/v1/health",	 "/v1/openapi.json", "/v1/gpus",
				     "/v1/gpus/compare", "/v1/gpus/{id}",    "/v1/guides",
				     "/v1/guides/{id}",	 "/v1/compile",	     "/v1/check",
				     "/v1/bench",	 "/v1/runs",	     "/v1/runs/compare",
				     "/v1/runs/{id}"};
	json_t *ps, *params;

	ck_assert_ptr_nonnull(doc);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "openapi")), "3.1.0");
	ps = json_object_get(doc, "paths");
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		ck_assert_msg(json_object_get(ps, paths[i]), "missing %s", paths[i]);
	ck_assert_ptr_nonnull(json_object_get(
		json_object_get(json_object_get(ps, "/v1/compile"), "post"), "requestBody"));
	params = json_object_get(json_object_get(json_object_get(ps, "/v1/gpus/{id}"), "get"),
				 "parameters");
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(params, 0), "in")),
			 "path");
	ck_assert(json_is_true(json_object_get(json_array_get(params, 0), "required")));
	json_decref(doc);
}
END_TEST

static Suite *rest_suite(void)
{
	Suite *s = suite_create("rest");
	TCase *t = tcase_create("plan");

	tcase_add_loop_test(t, plan_maps_each_route_onto_its_tool_and_arguments, 0,
			    sizeof(ROUTE_CASES) / sizeof(ROUTE_CASES[0]));
	tcase_add_test(t, plan_prefers_fixed_paths_over_patterns);
	tcase_add_test(t, plan_takes_query_parameters_with_their_types);
	tcase_add_test(t, plan_passes_a_post_body_as_the_arguments);
	tcase_add_test(t, plan_answers_health_and_openapi_itself);
	tcase_add_loop_test(t, plan_rejects_bad_requests_naming_the_problem, 0,
			    sizeof(ERR_CASES) / sizeof(ERR_CASES[0]));
	suite_add_tcase(s, t);
	t = tcase_create("openapi");
	tcase_add_test(t, openapi_describes_every_route_once);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(rest_suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
