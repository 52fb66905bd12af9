/* check_expr: the integer expression evaluator (sandbox/spec/expr.c): values,
 * precedence, short-circuit logic, and every documented error. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/spec/expr.h"

static const char *const NAMES[] = {"T", "D", "N", "Z", "BIG"};
static const int64_t VALUES[] = {4096, 1000, 7, 0, INT64_MAX / 2};
static const struct expr_env ENV = {NAMES, VALUES, 5};

static const struct {
	const char *text;
	int64_t want;
} GOOD[] = {
	{"1", 1},
	{"T", 4096},
	{"T * D", 4096000},
	{"1 + 2 * 3", 7},
	{"(1 + 2) * 3", 9},
	{"10 - 3 - 2", 5},
	{"100 / 7 / 2", 7},
	{"17 % 5", 2},
	{"-7 / 2", -3},
	{"-N", -7},
	{"--N", 7},
	{"+N", 7},
	{"ceil_div(T, 256)", 16},
	{"ceil_div(D, 256)", 4},
	{"ceil_div(0, 3)", 0},
	{"ceil_div(-7, 2)", -3},
	{"min(T, D)", 1000},
	{"max(T, D, N)", 4096},
	{"min(N, 3, 9, 1)", 1},
	{"D % 2 == 0", 1},
	{"N % 2 == 0", 0},
	{"N != 7", 0},
	{"N < 8", 1},
	{"N <= 7", 1},
	{"N > 7", 0},
	{"N >= 7", 1},
	{"D > 0 && T > 0", 1},
	{"2 && 3", 1},
	{"0 || 5", 1},
	{"0 || 0", 0},
	{"!Z", 1},
	{"!N", 0},
	/* short-circuit: the right side would divide by zero */
	{"Z != 0 && D / Z > 1", 0},
	{"Z == 0 || D / Z > 1", 1},
	{"1 + 2 == 3 && 4 < 5", 1},
	{"ceil_div(T * D, 256 * 4) + min(1, 2) * max(3, 4)", 4004},
	{"9223372036854775807", INT64_MAX},
	{"  T\t*\n2 ", 8192},
};

START_TEST(eval_computes_every_operator_with_c_precedence)
{
	struct kf_err err = {0};
	struct expr *e = NULL;
	ck_assert_msg(expr_parse(GOOD[_i].text, &e, &err) == 0, "%s: %s", GOOD[_i].text, err.msg);
	int64_t v = -12345;
	ck_assert_msg(expr_eval(e, &ENV, &v, &err) == 0, "%s: %s", GOOD[_i].text, err.msg);
	ck_assert_msg(v == GOOD[_i].want, "%s = %lld, want %lld", GOOD[_i].text, (long long)v,
		      (long long)GOOD[_i].want);
	expr_free(e);
}
END_TEST

static const struct {
	const char *text;
	int code;
	const char *msg; /* substring of the message */
} BAD_PARSE[] = {
	{"", KF_EINVAL, "empty expression"},
	{"   ", KF_EINVAL, "empty expression"},
	{"T *", KF_EINVAL, "unexpected end, expected a number, name or '(' at position 4"},
	{"T * * 2", KF_EINVAL, "expected a number, name or '(' at position 5"},
	{"(T + 1", KF_EINVAL, "expected ')'"},
	{"T + 1)", KF_EINVAL, "unexpected character at position 6"},
	{"T = 1", KF_EINVAL, "unknown operator (use ==, &&, ||)"},
	{"T & 1", KF_EINVAL, "unknown operator"},
	{"T | 1", KF_EINVAL, "unknown operator"},
	{"T ^ 1", KF_EINVAL, "unexpected character at position 3"},
	{"1.5", KF_EINVAL, "only decimal integers"},
	{"0x10", KF_EINVAL, "only decimal integers"},
	{"99999999999999999999", KF_EINVAL, "integer literal out of int64 range"},
	{"sqrt(4)", KF_EINVAL, "unknown function 'sqrt'"},
	{"ceil_div(4)", KF_EINVAL, "ceil_div takes exactly 2 arguments"},
	{"ceil_div(4, 2, 1)", KF_EINVAL, "ceil_div takes exactly 2 arguments"},
	{"min(4)", KF_EINVAL, "min and max take at least 2 arguments"},
	{"max()", KF_EINVAL, "function needs arguments"},
	{"min(1 2)", KF_EINVAL, "expected ',' or ')'"},
	{"T 2", KF_EINVAL, "unexpected character at position 3"},
	{"\"T\"", KF_EINVAL, "expected a number, name or '(' at position 1"},
};

START_TEST(parse_rejects_malformed_text_with_position)
{
	struct kf_err err = {0};
	struct expr *e = (struct expr *)1;
	int rc = expr_parse(BAD_PARSE[_i].text, &e, &err);
	ck_assert_int_eq(rc, BAD_PARSE[_i].code);
	ck_assert_ptr_null(e);
	ck_assert_msg(strstr(err.msg, BAD_PARSE[_i].msg) != NULL, "'%s': got '%s'",
		      BAD_PARSE[_i].text, err.msg);
	ck_assert_msg(strstr(err.msg, "expression '") == err.msg, "%s", err.msg);
}
END_TEST

static const struct {
	const char *text;
	const char *msg;
} BAD_EVAL[] = {
	{"T / Z", "division by zero at position 3"},
	{"T % Z", "modulo by zero at position 3"},
	{"ceil_div(T, Z)", "ceil_div by zero or negative divisor"},
	{"ceil_div(T, 0 - 1)", "ceil_div by zero or negative divisor"},
	{"BIG * 3", "integer overflow in '*' at position 5"},
	{"BIG + BIG + BIG", "integer overflow in '+'"},
	{"0 - BIG - BIG - BIG", "integer overflow in '-'"},
	{"-(0 - 9223372036854775807 - 1)", "integer overflow in 'unary -'"},
	{"(0 - 9223372036854775807 - 1) / (0 - 1)", "integer overflow in '/'"},
	{"T * M", "unknown variable 'M' at position 5"},
};

START_TEST(eval_reports_runtime_errors_with_position)
{
	struct kf_err err = {0};
	struct expr *e = NULL;
	ck_assert_msg(expr_parse(BAD_EVAL[_i].text, &e, &err) == 0, "%s", err.msg);
	int64_t v = 0;
	ck_assert_int_eq(expr_eval(e, &ENV, &v, &err), KF_EINVAL);
	ck_assert_msg(strstr(err.msg, BAD_EVAL[_i].msg) != NULL, "'%s': got '%s'",
		      BAD_EVAL[_i].text, err.msg);
	expr_free(e);
}
END_TEST

START_TEST(parse_rejects_too_long_and_too_deep)
{
	struct kf_err err = {0};
	struct expr *e = NULL;
	char *long_text = malloc(EXPR_MAX_TEXT + 10);
	memset(long_text, '1', EXPR_MAX_TEXT + 5);
	long_text[EXPR_MAX_TEXT + 5] = 0;
	ck_assert_int_eq(expr_parse(long_text, &e, &err), KF_ETOOBIG);
	ck_assert_ptr_nonnull(strstr(err.msg, "longer than"));
	free(long_text);

	char deep[EXPR_MAX_DEPTH * 2 + 8];
	size_t n = 0;
	for (int k = 0; k < EXPR_MAX_DEPTH + 1; k++)
		deep[n++] = '(';
	deep[n++] = '1';
	for (int k = 0; k < EXPR_MAX_DEPTH + 1; k++)
		deep[n++] = ')';
	deep[n] = 0;
	kf_err_clear(&err);
	ck_assert_int_eq(expr_parse(deep, &e, &err), KF_ETOOBIG);
	ck_assert_ptr_nonnull(strstr(err.msg, "nesting too deep"));

	char name[EXPR_MAX_NAME + 10];
	memset(name, 'a', sizeof name - 1);
	name[sizeof name - 1] = 0;
	kf_err_clear(&err);
	ck_assert_int_eq(expr_parse(name, &e, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "name too long"));
}
END_TEST

START_TEST(parsed_expression_lists_its_variables_and_evaluates_many_times)
{
	struct kf_err err = {0};
	struct expr *e = NULL;
	ck_assert_int_eq(expr_parse("ceil_div(T, 4) * D + T", &e, &err), 0);
	ck_assert_uint_eq(expr_var_count(e), 2);
	ck_assert_str_eq(expr_var_at(e, 0), "T");
	ck_assert_str_eq(expr_var_at(e, 1), "D");
	ck_assert_ptr_null(expr_var_at(e, 2));
	ck_assert_int_eq(expr_is_const(e), 0);
	ck_assert_str_eq(expr_text(e), "ceil_div(T, 4) * D + T");
	const char *names[] = {"D", "T"};
	for (int64_t t = 1; t < 50; t++) {
		int64_t vals[] = {3, t}, v;
		ck_assert_int_eq(expr_eval(e, &(struct expr_env){names, vals, 2}, &v, &err), 0);
		ck_assert_int_eq(v, ((t + 3) / 4) * 3 + t);
	}
	expr_free(e);

	struct expr *c = expr_new_const(-42);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(expr_is_const(c), 1);
	int64_t v;
	ck_assert_int_eq(expr_eval(c, NULL, &v, &err), 0);
	ck_assert_int_eq(v, -42);
	expr_free(c);
	c = expr_new_const(INT64_MIN);
	ck_assert_int_eq(expr_eval(c, NULL, &v, &err), 0);
	ck_assert(v == INT64_MIN);
	expr_free(c);
	expr_free(NULL);

	ck_assert_int_eq(expr_eval_text("N * 2", &ENV, &v, &err), 0);
	ck_assert_int_eq(v, 14);
	ck_assert_int_eq(expr_eval_text("N *", &ENV, &v, &err), KF_EINVAL);
}
END_TEST

START_TEST(min_max_with_many_arguments_use_deep_stacks)
{
	/* 200 operands need a stack beyond the evaluator's fixed fast path. */
	char text[2048];
	size_t n = 0;
	n += (size_t)snprintf(text + n, sizeof text - n, "max(");
	for (int k = 0; k < 200; k++)
		n += (size_t)snprintf(text + n, sizeof text - n, "%s%d", k ? "," : "", k % 37);
	snprintf(text + n, sizeof text - n, ")");
	int64_t v;
	struct kf_err err = {0};
	ck_assert_int_eq(expr_eval_text(text, NULL, &v, &err), 0);
	ck_assert_int_eq(v, 36);
}
END_TEST

static Suite *expr_suite(void)
{
	Suite *s = suite_create("expr");
	TCase *t = tcase_create("eval");
	tcase_add_loop_test(t, eval_computes_every_operator_with_c_precedence, 0,
			    sizeof GOOD / sizeof GOOD[0]);
	tcase_add_loop_test(t, eval_reports_runtime_errors_with_position, 0,
			    sizeof BAD_EVAL / sizeof BAD_EVAL[0]);
	tcase_add_test(t, parsed_expression_lists_its_variables_and_evaluates_many_times);
	tcase_add_test(t, min_max_with_many_arguments_use_deep_stacks);
	suite_add_tcase(s, t);
	TCase *p = tcase_create("parse");
	tcase_add_loop_test(p, parse_rejects_malformed_text_with_position, 0,
			    sizeof BAD_PARSE / sizeof BAD_PARSE[0]);
	tcase_add_test(p, parse_rejects_too_long_and_too_deep);
	suite_add_tcase(s, p);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(expr_suite());
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
