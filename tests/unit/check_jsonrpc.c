/* check_jsonrpc: JSON-RPC 2.0 framing — what parses as which kind, every
 * rejection with its JSON-RPC code and recovered id, the size and depth
 * caps, and the builders' output. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/jsonrpc.h"

struct good_case {
	const char *text;
	enum jsonrpc_kind kind;
	const char *method; /* NULL for responses */
};

static const struct good_case GOOD[] = {
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", JSONRPC_REQUEST, "ping"},
	{"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/list\",\"params\":{}}",
	 JSONRPC_REQUEST, "tools/list"},
	{"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", JSONRPC_NOTIFICATION,
	 "notifications/initialized"},
	{"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", JSONRPC_RESPONSE, NULL},
	{"{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-1,\"message\":\"x\"}}",
	 JSONRPC_ERROR_REPLY, NULL},
	{"  {\"method\":\"m\",\"jsonrpc\":\"2.0\",\"params\":[1,2],\"id\":0}\n", JSONRPC_REQUEST,
	 "m"},
};

START_TEST(parse_classifies_valid_messages)
{
	const struct good_case *c = &GOOD[_i];
	struct jsonrpc_msg m;
	struct kf_err err = {0};

	ck_assert_int_eq(jsonrpc_parse(c->text, strlen(c->text), 0, &m, &err), 0);
	ck_assert_int_eq(m.kind, c->kind);
	if (c->method)
		ck_assert_str_eq(m.method, c->method);
	else
		ck_assert_ptr_null(m.method);
	ck_assert_int_eq(m.kind == JSONRPC_NOTIFICATION, m.id == NULL);
	jsonrpc_msg_fini(&m);
}
END_TEST

struct bad_case {
	const char *text;
	int rpc_code;
	int kf_code;
	int has_id;	   /* the reply can carry the id */
	const char *words; /* expected in the message */
};

static const struct bad_case BAD[] = {
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":", JSONRPC_PARSE_ERROR, KF_EINVAL, 0,
	 "Parse error"},
	{"not json", JSONRPC_PARSE_ERROR, KF_EINVAL, 0, "Parse error"},
	{"", JSONRPC_PARSE_ERROR, KF_EINVAL, 0, "Parse error"},
	{"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", JSONRPC_INVALID_REQUEST, KF_EINVAL,
	 0, "batch"},
	{"42", JSONRPC_INVALID_REQUEST, KF_EINVAL, 0, "JSON object"},
	{"{\"id\":1,\"method\":\"ping\"}", JSONRPC_INVALID_REQUEST, KF_EINVAL, 1, "\"jsonrpc\""},
	{"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", JSONRPC_INVALID_REQUEST, KF_EINVAL,
	 1, "\"2.0\""},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", JSONRPC_INVALID_REQUEST, KF_EINVAL, 1,
	 "method"},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}", JSONRPC_INVALID_REQUEST, KF_EINVAL, 1,
	 "method"},
	{"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", JSONRPC_INVALID_REQUEST, KF_EINVAL,
	 0, "\"id\""},
	{"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", JSONRPC_INVALID_REQUEST, KF_EINVAL,
	 0, "\"id\""},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":\"x\"}",
	 JSONRPC_INVALID_REQUEST, KF_EINVAL, 1, "params"},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"result\":{}}",
	 JSONRPC_INVALID_REQUEST, KF_EINVAL, 1, "result"},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1}}",
	 JSONRPC_INVALID_REQUEST, KF_EINVAL, 1, "exactly one"},
	{"{\"jsonrpc\":\"2.0\",\"id\":1}", JSONRPC_INVALID_REQUEST, KF_EINVAL, 1, "exactly one"},
	{"{\"jsonrpc\":\"2.0\",\"result\":{}}", JSONRPC_INVALID_REQUEST, KF_EINVAL, 0,
	 "needs an \"id\""},
	{"{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"message\":\"m\"}}",
	 JSONRPC_INVALID_REQUEST, KF_EINVAL, 1, "integer \"code\""},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}", JSONRPC_PARSE_ERROR,
	 KF_EINVAL, 0, "duplicate"},
};

START_TEST(parse_rejects_malformed_messages_with_the_right_code)
{
	const struct bad_case *c = &BAD[_i];
	struct jsonrpc_msg m;
	struct kf_err err = {0};

	ck_assert_int_eq(jsonrpc_parse(c->text, strlen(c->text), 0, &m, &err), c->kf_code);
	ck_assert_int_eq(m.rpc_code, c->rpc_code);
	ck_assert_int_eq(m.bad_id != NULL, c->has_id);
	ck_assert_msg(strstr(err.msg, c->words), "case %d: '%s' lacks '%s'", _i, err.msg, c->words);
	jsonrpc_msg_fini(&m);
}
END_TEST

START_TEST(parse_refuses_a_message_over_the_cap)
{
	const char *t = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
	struct jsonrpc_msg m;
	struct kf_err err = {0};

	ck_assert_int_eq(jsonrpc_parse(t, strlen(t), 10, &m, &err), KF_ETOOBIG);
	ck_assert_int_eq(m.rpc_code, JSONRPC_INVALID_REQUEST);
	ck_assert_ptr_nonnull(strstr(err.msg, "10-byte limit"));
	jsonrpc_msg_fini(&m);
	ck_assert_int_eq(jsonrpc_parse(t, strlen(t), strlen(t), &m, &err), 0);
	jsonrpc_msg_fini(&m);
}
END_TEST

START_TEST(parse_refuses_nesting_deeper_than_the_limit)
{
	size_t n = 100000, len;
	char *t = malloc(2 * n + 64);
	struct jsonrpc_msg m;
	struct kf_err err = {0};

	len = (size_t)snprintf(t, 64,
			       "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":");
	memset(t + len, '[', n);
	memset(t + len + n, ']', n);
	len += 2 * n;
	t[len++] = '}';
	t[len++] = '}';
	ck_assert_int_eq(jsonrpc_parse(t, len, 1u << 20, &m, &err), KF_EINVAL);
	ck_assert_int_eq(m.rpc_code, JSONRPC_PARSE_ERROR);
	ck_assert_ptr_nonnull(strstr(err.msg, "nesting"));
	jsonrpc_msg_fini(&m);
	free(t);
}
END_TEST

START_TEST(parse_ignores_brackets_inside_strings_for_depth)
{
	char t[400];
	struct jsonrpc_msg m;
	struct kf_err err = {0};
	int n = snprintf(
		t, sizeof(t),
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"s\":\"%0100d\"}}", 0);

	for (int i = 0; i < 100; i++)
		t[n - 103 + i] = '[';
	ck_assert_int_eq(jsonrpc_parse(t, (size_t)n, 0, &m, &err), 0);
	jsonrpc_msg_fini(&m);
}
END_TEST

START_TEST(builders_write_compact_json_with_the_id)
{
	json_t *id = json_string("q1");
	size_t len;
	char *s;

	s = jsonrpc_result(id, json_pack("{s:i}", "a", 1), &len);
	ck_assert_str_eq(s, "{\"jsonrpc\":\"2.0\",\"id\":\"q1\",\"result\":{\"a\":1}}");
	ck_assert_uint_eq(len, strlen(s));
	free(s);
	s = jsonrpc_error(NULL, JSONRPC_METHOD_NOT_FOUND, NULL, NULL, &len);
	ck_assert_str_eq(
		s,
		"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}");
	free(s);
	s = jsonrpc_error(id, JSONRPC_INVALID_PARAMS, "bad", json_pack("{s:s}", "f", "x"), &len);
	ck_assert_str_eq(
		s,
		"{\"jsonrpc\":\"2.0\",\"id\":\"q1\",\"error\":{\"code\":-32602,\"message\":\"bad\",\"data\":{\"f\":\"x\"}}}");
	free(s);
	s = jsonrpc_notification("notifications/message", NULL, &len);
	ck_assert_str_eq(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}");
	free(s);
	json_decref(id);
	id = json_integer(3);
	s = jsonrpc_request(id, "ping", NULL, &len);
	ck_assert_str_eq(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
	free(s);
	json_decref(id);
}
END_TEST

START_TEST(code_messages_name_every_standard_code)
{
	ck_assert_str_eq(jsonrpc_code_message(JSONRPC_PARSE_ERROR), "Parse error");
	ck_assert_str_eq(jsonrpc_code_message(JSONRPC_INVALID_REQUEST), "Invalid Request");
	ck_assert_str_eq(jsonrpc_code_message(JSONRPC_METHOD_NOT_FOUND), "Method not found");
	ck_assert_str_eq(jsonrpc_code_message(JSONRPC_INVALID_PARAMS), "Invalid params");
	ck_assert_str_eq(jsonrpc_code_message(JSONRPC_INTERNAL_ERROR), "Internal error");
}
END_TEST

static Suite *jsonrpc_suite(void)
{
	Suite *s = suite_create("jsonrpc");
	TCase *tc = tcase_create("parse");

	tcase_add_loop_test(tc, parse_classifies_valid_messages, 0, sizeof(GOOD) / sizeof(GOOD[0]));
	tcase_add_loop_test(tc, parse_rejects_malformed_messages_with_the_right_code, 0,
			    sizeof(BAD) / sizeof(BAD[0]));
	tcase_add_test(tc, parse_refuses_a_message_over_the_cap);
	tcase_add_test(tc, parse_refuses_nesting_deeper_than_the_limit);
	tcase_add_test(tc, parse_ignores_brackets_inside_strings_for_depth);
	suite_add_tcase(s, tc);
	tc = tcase_create("build");
	tcase_add_test(tc, builders_write_compact_json_with_the_id);
	tcase_add_test(tc, code_messages_name_every_standard_code);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(jsonrpc_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
