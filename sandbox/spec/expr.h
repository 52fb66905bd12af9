/* expr: integer expressions over named size variables, used by kernel specs
 * for shapes, grids, blocks, shared bytes, cost formulas and constraints.
 * Grammar (C precedence): || && ; == != ; < <= > >= ; + - ; * / % ; unary
 * - + ! ; primary = integer | name | name(args) | ( expr ). Functions:
 * ceil_div(a,b), min(a,b,...), max(a,b,...). Values are int64; overflow,
 * division or modulo by zero and unknown variables are errors naming the
 * expression and the position. Parse once, evaluate many; a parsed expr is
 * immutable, so evaluation is thread-safe. */
#ifndef KF_EXPR_H
#define KF_EXPR_H

#include <stddef.h>
#include <stdint.h>

#include "base/kf_err.h"

/* Caps: longer text or deeper nesting is rejected with KF_ETOOBIG. */
#define EXPR_MAX_TEXT  1024 /* characters */
#define EXPR_MAX_DEPTH 64   /* nesting of parentheses / unary operators */
#define EXPR_MAX_NAME  63   /* characters of one variable name */

struct expr;

/* The variables an evaluation sees: names[i] has value values[i].
 * Borrowed for the call. */
struct expr_env {
	const char *const *names;
	const int64_t *values;
	size_t len;
};

/* Parses text (borrowed). Returns 0 and sets *out to a new expr (free with
 * expr_free), or KF_EINVAL with err "expression 'T*': expected a number,
 * name or '(' at position 3" (positions are 1-based), or KF_ETOOBIG past
 * EXPR_MAX_TEXT / EXPR_MAX_DEPTH. */
int expr_parse(const char *text, struct expr **out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Returns a new expr holding the constant v (free with expr_free), or NULL
 * when out of memory. */
struct expr *expr_new_const(int64_t v);

/* Frees e. NULL is a no-op. */
void expr_free(struct expr *e);

/* Evaluates e with the variables of env (borrowed). Returns 0 and sets *out,
 * or KF_EINVAL with err naming the expression and position: "unknown
 * variable 'N'", "division by zero", "integer overflow in '*'",
 * "ceil_div by zero or negative divisor". Comparisons and && || ! yield 0
 * or 1. */
int expr_eval(const struct expr *e, const struct expr_env *env, int64_t *out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* The source text of e. Returns borrowed, valid until expr_free(e). */
const char *expr_text(const struct expr *e);

/* The distinct variable names e refers to, in order of first use.
 * Returns borrowed, valid until expr_free(e). */
size_t expr_var_count(const struct expr *e);
const char *expr_var_at(const struct expr *e, size_t i);

/* 1 when e has no variables (its value is known after parsing). */
int expr_is_const(const struct expr *e);

/* Convenience: parse text and evaluate it once. Same errors as above. */
int expr_eval_text(const char *text, const struct expr_env *env, int64_t *out, struct kf_err *err)
	__attribute__((warn_unused_result));

#endif
