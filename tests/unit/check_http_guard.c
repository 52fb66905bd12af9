/* check_http_guard: the Host/Origin and Content-Type checks of the HTTP
 * transport (server/transport/http_guard.c) without HTTP: exact loopback
 * names with and without ports, rebinding names that only start like a
 * loopback address, operator names and origins, wildcard binds, and the
 * JSON media type. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "server/transport/http_guard.h"

static const char *const HOSTS[] = {"gpu-box.lan", NULL};
static const char *const ORIGINS[] = {"https://tools.example.org", NULL};

struct guard_case {
	const char *host, *origin;
	int ok;
};

/* A loopback server with one --allow-host name and one --allow-origin. */
static const struct guard_case CASES[] = {
	{"localhost", NULL, 1},
	{"LOCALHOST:7070", NULL, 1},
	{"127.0.0.1", NULL, 1},
	{"127.0.0.1:65535", NULL, 1},
	{"[::1]", NULL, 1},
	{"[::1]:7070", NULL, 1},
	{"::1", NULL, 1},
	{"gpu-box.lan:7070", NULL, 1},
	{"localhost", "http://localhost:3000", 1},
	{"localhost", "https://127.0.0.1", 1},
	{"localhost", "http://[::1]:7070", 1},
	{"localhost", "http://gpu-box.lan:7070", 1},
	{"localhost", "https://tools.example.org", 1},
	{"127.attacker.example", NULL, 0},
	{"127.0.0.1.attacker.example", NULL, 0},
	{"localhost.attacker.example", NULL, 0},
	{"127.0.0.2", NULL, 0},
	{"localhost:", NULL, 0},
	{"localhost:0", NULL, 0},
	{"localhost:65536", NULL, 0},
	{"localhost:80x", NULL, 0},
	{"[::1", NULL, 0},
	{"[::1]x", NULL, 0},
	{"::2", NULL, 0},
	{"", NULL, 0},
	{NULL, NULL, 0},
	{"localhost", "http://127.attacker.example", 0},
	{"localhost", "http://127.attacker.example:7070", 0},
	{"localhost", "http://localhost.attacker.example", 0},
	{"localhost", "http://localhost@attacker.example", 0},
	{"localhost", "http://localhost/path", 0},
	{"localhost", "null", 0},
	{"localhost", "file://localhost", 0},
	{"localhost", "http://", 0},
	{"localhost", "https://tools.example.org.attacker.example", 0},
	{"localhost", "http://::1", 0},
};

START_TEST(check_admits_exact_loopback_and_operator_names_only)
{
	const struct guard_case *c = &CASES[_i];
	struct http_guard g = {0, NULL, HOSTS, ORIGINS};
	struct kf_err err = {0};
	int rc = http_guard_check(&g, c->host, c->origin, &err);

	ck_assert_msg((rc == 0) == c->ok, "Host '%s' Origin '%s': got %d (%s)",
		      c->host ? c->host : "(none)", c->origin ? c->origin : "(none)", rc, err.msg);
	if (!c->ok) {
		ck_assert_int_eq(rc, KF_EPERM);
		ck_assert_ptr_nonnull(strstr(err.msg, "Forbidden"));
	}
}
END_TEST

START_TEST(check_names_the_refused_value_printably)
{
	struct http_guard g = {0};
	struct kf_err err = {0};

	ck_assert_int_eq(http_guard_check(&g, "127.attacker.example", NULL, &err), KF_EPERM);
	ck_assert_ptr_nonnull(strstr(err.msg, "Host '127.attacker.example'"));
	ck_assert_ptr_nonnull(strstr(err.msg, "--allow-host"));
	kf_err_clear(&err);
	ck_assert_int_eq(http_guard_check(&g, "localhost", "http://x\x01'y", &err), KF_EPERM);
	ck_assert_ptr_nonnull(strstr(err.msg, "Origin 'http://x??y'"));
}
END_TEST

START_TEST(check_serves_any_host_on_a_wildcard_bind_but_still_checks_origin)
{
	struct http_guard g = {1, NULL, NULL, NULL};

	ck_assert_int_eq(http_guard_check(&g, "gpu-box.example:7070", NULL, NULL), 0);
	ck_assert_int_eq(http_guard_check(&g, NULL, NULL, NULL), 0);
	ck_assert_int_eq(http_guard_check(&g, "x", "http://evil.example", NULL), KF_EPERM);
	ck_assert_int_eq(http_guard_check(&g, "x", "http://localhost:7070", NULL), 0);
}
END_TEST

START_TEST(check_admits_the_bound_address)
{
	struct http_guard g = {0, "10.0.0.5", NULL, NULL};

	ck_assert_int_eq(http_guard_check(&g, "10.0.0.5:7070", "http://10.0.0.5:7070", NULL), 0);
	ck_assert_int_eq(http_guard_check(&g, "10.0.0.50", NULL, NULL), KF_EPERM);
	ck_assert_int_eq(http_guard_check(&g, "10.0.0.5.attacker.example", NULL, NULL), KF_EPERM);
}
END_TEST

START_TEST(check_refuses_an_overlong_value)
{
	struct http_guard g = {0};
	char big[HTTP_GUARD_VALUE_MAX + 20];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "localhost:", 10);
	ck_assert_int_eq(http_guard_check(&g, big, NULL, NULL), KF_EPERM);
	ck_assert_int_eq(http_guard_check(&g, "localhost", big, NULL), KF_EPERM);
}
END_TEST

START_TEST(json_type_takes_application_json_with_parameters_only)
{
	ck_assert_int_eq(http_guard_json_type("application/json"), 1);
	ck_assert_int_eq(http_guard_json_type("Application/JSON; charset=utf-8"), 1);
	ck_assert_int_eq(http_guard_json_type(" application/json ;charset=utf-8"), 1);
	ck_assert_int_eq(http_guard_json_type("text/plain"), 0);
	ck_assert_int_eq(http_guard_json_type("application/jsonx"), 0);
	ck_assert_int_eq(http_guard_json_type("application/json-seq"), 0);
	ck_assert_int_eq(http_guard_json_type("application/x-www-form-urlencoded"), 0);
	ck_assert_int_eq(http_guard_json_type("application/js"), 0);
	ck_assert_int_eq(http_guard_json_type(""), 0);
	ck_assert_int_eq(http_guard_json_type(NULL), 0);
}
END_TEST

static Suite *guard_suite(void)
{
	Suite *s = suite_create("http_guard");
	TCase *t = tcase_create("host_origin");

	tcase_add_loop_test(t, check_admits_exact_loopback_and_operator_names_only, 0,
			    sizeof(CASES) / sizeof(CASES[0]));
	tcase_add_test(t, check_names_the_refused_value_printably);
	tcase_add_test(t, check_serves_any_host_on_a_wildcard_bind_but_still_checks_origin);
	tcase_add_test(t, check_admits_the_bound_address);
	tcase_add_test(t, check_refuses_an_overlong_value);
	suite_add_tcase(s, t);
	t = tcase_create("content_type");
	tcase_add_test(t, json_type_takes_application_json_with_parameters_only);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(guard_suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
