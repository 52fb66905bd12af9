/* fuzz_expr: libFuzzer target for the size-expression parser and evaluator
 * (sandbox/spec/expr.c). The input is "EXPRESSION\nVALUES": the expression
 * is parsed (accepted, or refused with a message naming it), then evaluated
 * with eight variables whose int64 values come from the bytes after the
 * newline (8 each, little-endian; extremes are likely). Oracles: errors
 * carry a known code and name the expression; evaluation is deterministic;
 * "(e)", "0 + (e)" and "(e) * 1" have the value of e; a constant has the
 * same value with and without variables; the variables an expr reports are
 * names in its text. */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/spec/expr.h"

static const char *const NAMES[] = {"T", "D", "N", "Z", "BIG", "M", "K", "x"};
#define NVARS (sizeof NAMES / sizeof NAMES[0])

/* Parses and evaluates text; returns the eval code (or 1 when it did not
 * parse) and the value in *v. */
static int eval_text(const char *text, const struct expr_env *env, int64_t *v)
{
	struct expr *e = NULL;
	struct kf_err err = {0};
	if (expr_parse(text, &e, &err))
		return 1;
	int rc = expr_eval(e, env, v, &err);
	expr_free(e);
	return rc;
}

/* Wrapping e in a neutral context must not change its value. */
static void check_wrapped(const char *fmt, const char *text, const struct expr_env *env, int rc0,
			  int64_t v0)
{
	char buf[EXPR_MAX_TEXT + 32];
	int64_t v = 0;
	snprintf(buf, sizeof buf, fmt, text);
	int rc = eval_text(buf, env, &v);
	if (rc == 1)
		return; /* over the text or depth cap once wrapped */
	assert(rc == rc0);
	if (rc == 0)
		assert(v == v0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t tlen = nl ? (size_t)(nl - data) : size;
	int64_t vals[NVARS] = {4096, 1000, 7, 0, INT64_MAX, -1, INT64_MIN, 3};
	struct expr_env env = {NAMES, vals, NVARS}, none = {NULL, NULL, 0};
	struct kf_err err = {0};
	struct expr *e = NULL;
	char *text = strndup((const char *)data, tlen);

	if (!text)
		return 0;
	if (nl) {
		const uint8_t *p = nl + 1;
		size_t left = size - tlen - 1;
		for (size_t i = 0; i < NVARS && left >= 8; i++, p += 8, left -= 8)
			memcpy(&vals[i], p, 8);
	}
	int rc = expr_parse(text, &e, &err);
	if (rc) {
		assert(rc == KF_EINVAL || rc == KF_ETOOBIG);
		assert(err.code == rc && strncmp(err.msg, "expression", 10) == 0);
		assert(e == NULL);
		free(text);
		return 0;
	}
	assert(strlen(text) <= EXPR_MAX_TEXT);
	size_t nv = expr_var_count(e);
	assert(expr_is_const(e) == (nv == 0));
	for (size_t i = 0; i < nv; i++) {
		const char *name = expr_var_at(e, i);
		assert(name && strlen(name) <= EXPR_MAX_NAME && strstr(text, name));
	}
	int64_t v = 0, v2 = 0;
	rc = expr_eval(e, &env, &v, &err);
	if (rc)
		assert(rc == KF_EINVAL && err.msg[0]);
	assert(expr_eval(e, &env, &v2, NULL) == rc);
	if (rc == 0)
		assert(v == v2);
	if (nv == 0) {
		int64_t c = 0;
		assert(expr_eval(e, &none, &c, NULL) == rc);
		if (rc == 0)
			assert(c == v);
	}
	check_wrapped("(%s)", text, &env, rc, v);
	check_wrapped("0 + (%s)", text, &env, rc, v);
	check_wrapped("(%s) * 1", text, &env, rc, v);
	expr_free(e);
	free(text);
	return 0;
}
