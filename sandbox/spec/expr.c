/* expr: integer expressions over size variables; see expr.h.
 * The parser (recursive descent, C precedence) compiles the text once into a
 * postfix program with short-circuit jumps for && and ||; evaluation runs
 * the program on a small stack with checked int64 arithmetic. */
#include "sandbox/spec/expr.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op {
	OP_CONST,
	OP_VAR,
	OP_NEG,
	OP_NOT,
	OP_ADD,
	OP_SUB,
	OP_MUL,
	OP_DIV,
	OP_MOD,
	OP_EQ,
	OP_NE,
	OP_LT,
	OP_LE,
	OP_GT,
	OP_GE,
	OP_BOOL,     /* top = top != 0 */
	OP_AND_JUMP, /* top == 0: keep 0 and jump to arg; else pop */
	OP_OR_JUMP,  /* top != 0: set 1 and jump to arg; else pop */
	OP_CEIL_DIV,
	OP_MIN, /* arg = number of operands */
	OP_MAX
};

struct ins {
	enum op op;
	int pos;   /* 1-based position in the text, for messages */
	int64_t v; /* OP_CONST value, OP_VAR index, jump target, argc */
};

#define EXPR_MAX_INS  EXPR_MAX_TEXT
#define EXPR_MAX_VARS 32

struct expr {
	char *text;
	struct ins *code;
	size_t code_len;
	char *vars[EXPR_MAX_VARS];
	size_t vars_len;
	size_t max_stack;
};

/* --- parser ------------------------------------------------------------ */

struct parser {
	const char *s;
	size_t i;
	int depth;
	struct expr *e;
	struct kf_err *err;
	int rc;
};

static int perr(struct parser *p, int code, size_t at, const char *what)
{
	if (!p->rc)
		p->rc = kf_err_set(p->err, code, "expression '%s': %s at position %zu", p->s, what,
				   at + 1);
	return p->rc;
}

static void skip_ws(struct parser *p)
{
	while (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')
		p->i++;
}

static int emit(struct parser *p, enum op op, size_t at, int64_t v)
{
	if (p->e->code_len >= EXPR_MAX_INS)
		return perr(p, KF_ETOOBIG, at, "expression too long");
	struct ins *in = &p->e->code[p->e->code_len++];
	in->op = op;
	in->pos = (int)at + 1;
	in->v = v;
	return 0;
}

/* Matches the operator text op at the cursor (after spaces), consuming it. */
static int accept(struct parser *p, const char *op)
{
	skip_ws(p);
	size_t n = strlen(op);
	if (strncmp(p->s + p->i, op, n) != 0)
		return 0;
	/* "<" must not match "<=", "=" alone is not an operator, "&" not "&&". */
	if (n == 1 && (op[0] == '<' || op[0] == '>') && p->s[p->i + 1] == '=')
		return 0;
	if (n == 1 && op[0] == '!' && p->s[p->i + 1] == '=')
		return 0;
	p->i += n;
	return 1;
}

static int parse_or(struct parser *p);

static int var_index(struct parser *p, const char *name, size_t at)
{
	for (size_t k = 0; k < p->e->vars_len; k++)
		if (strcmp(p->e->vars[k], name) == 0)
			return (int)k;
	if (p->e->vars_len >= EXPR_MAX_VARS)
		return perr(p, KF_ETOOBIG, at, "too many distinct variables");
	p->e->vars[p->e->vars_len] = strdup(name);
	if (!p->e->vars[p->e->vars_len])
		return perr(p, KF_ENOMEM, at, "out of memory");
	return (int)p->e->vars_len++;
}

static int parse_call(struct parser *p, const char *name, size_t at)
{
	enum op op;
	if (strcmp(name, "ceil_div") == 0)
		op = OP_CEIL_DIV;
	else if (strcmp(name, "min") == 0)
		op = OP_MIN;
	else if (strcmp(name, "max") == 0)
		op = OP_MAX;
	else {
		char msg[128];
		snprintf(msg, sizeof msg, "unknown function '%s' (known: ceil_div, min, max)",
			 name);
		return perr(p, KF_EINVAL, at, msg);
	}
	int argc = 0;
	skip_ws(p);
	if (p->s[p->i] == ')')
		return perr(p, KF_EINVAL, p->i, "function needs arguments");
	for (;;) {
		if (parse_or(p))
			return p->rc;
		argc++;
		if (accept(p, ","))
			continue;
		if (accept(p, ")"))
			break;
		skip_ws(p);
		return perr(p, KF_EINVAL, p->i, "expected ',' or ')' in function call");
	}
	if (op == OP_CEIL_DIV && argc != 2)
		return perr(p, KF_EINVAL, at, "ceil_div takes exactly 2 arguments");
	if (op != OP_CEIL_DIV && argc < 2)
		return perr(p, KF_EINVAL, at, "min and max take at least 2 arguments");
	return emit(p, op, at, argc);
}

static int parse_primary(struct parser *p)
{
	skip_ws(p);
	size_t at = p->i;
	char c = p->s[p->i];
	if (isdigit((unsigned char)c)) {
		int64_t v = 0;
		while (isdigit((unsigned char)p->s[p->i])) {
			int d = p->s[p->i] - '0';
			if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, d, &v))
				return perr(p, KF_EINVAL, at, "integer literal out of int64 range");
			p->i++;
		}
		if (isalpha((unsigned char)p->s[p->i]) || p->s[p->i] == '_' || p->s[p->i] == '.')
			return perr(p, KF_EINVAL, p->i, "only decimal integers are allowed");
		return emit(p, OP_CONST, at, v);
	}
	if (isalpha((unsigned char)c) || c == '_') {
		char name[EXPR_MAX_NAME + 1];
		size_t n = 0;
		while (isalnum((unsigned char)p->s[p->i]) || p->s[p->i] == '_') {
			if (n >= EXPR_MAX_NAME)
				return perr(p, KF_EINVAL, at, "name too long");
			name[n++] = p->s[p->i++];
		}
		name[n] = 0;
		if (accept(p, "(")) {
			if (++p->depth > EXPR_MAX_DEPTH)
				return perr(p, KF_ETOOBIG, at, "nesting too deep");
			int rc = parse_call(p, name, at);
			p->depth--;
			return rc;
		}
		int k = var_index(p, name, at);
		if (k < 0)
			return k;
		return emit(p, OP_VAR, at, k);
	}
	if (c == '(') {
		p->i++;
		if (++p->depth > EXPR_MAX_DEPTH)
			return perr(p, KF_ETOOBIG, at, "nesting too deep");
		if (parse_or(p))
			return p->rc;
		p->depth--;
		if (!accept(p, ")")) {
			skip_ws(p);
			return perr(p, KF_EINVAL, p->i, "expected ')'");
		}
		return 0;
	}
	if (c == 0)
		return perr(p, KF_EINVAL, at, "unexpected end, expected a number, name or '('");
	return perr(p, KF_EINVAL, at, "expected a number, name or '('");
}

static int parse_unary(struct parser *p)
{
	skip_ws(p);
	size_t at = p->i;
	enum op op;
	if (accept(p, "-"))
		op = OP_NEG;
	else if (accept(p, "!"))
		op = OP_NOT;
	else if (accept(p, "+"))
		op = OP_BOOL; /* marker: unary plus emits nothing */
	else
		return parse_primary(p);
	if (++p->depth > EXPR_MAX_DEPTH)
		return perr(p, KF_ETOOBIG, at, "nesting too deep");
	if (parse_unary(p))
		return p->rc;
	p->depth--;
	if (op == OP_BOOL)
		return 0;
	return emit(p, op, at, 0);
}

struct binop {
	const char *text;
	enum op op;
};

/* One precedence level: operand (op operand)*, left-associative. */
static int parse_level(struct parser *p, int (*next)(struct parser *), const struct binop *ops)
{
	if (next(p))
		return p->rc;
	for (;;) {
		skip_ws(p);
		size_t at = p->i;
		const struct binop *hit = NULL;
		for (const struct binop *b = ops; b->text; b++)
			if (accept(p, b->text)) {
				hit = b;
				break;
			}
		if (!hit)
			return 0;
		if (next(p))
			return p->rc;
		if (emit(p, hit->op, at, 0))
			return p->rc;
	}
}

static int parse_mul(struct parser *p)
{
	static const struct binop ops[] = {{"*", OP_MUL}, {"/", OP_DIV}, {"%", OP_MOD}, {NULL, 0}};
	return parse_level(p, parse_unary, ops);
}

static int parse_add(struct parser *p)
{
	static const struct binop ops[] = {{"+", OP_ADD}, {"-", OP_SUB}, {NULL, 0}};
	return parse_level(p, parse_mul, ops);
}

static int parse_rel(struct parser *p)
{
	static const struct binop ops[] = {
		{"<=", OP_LE}, {">=", OP_GE}, {"<", OP_LT}, {">", OP_GT}, {NULL, 0}};
	return parse_level(p, parse_add, ops);
}

static int parse_eq(struct parser *p)
{
	static const struct binop ops[] = {{"==", OP_EQ}, {"!=", OP_NE}, {NULL, 0}};
	return parse_level(p, parse_rel, ops);
}

/* a && b: a; AND_JUMP L; b; BOOL; L: (and the same shape for ||). */
static int parse_logic(struct parser *p, int (*next)(struct parser *), const char *text,
		       enum op jump)
{
	if (next(p))
		return p->rc;
	for (;;) {
		skip_ws(p);
		size_t at = p->i;
		if (!accept(p, text))
			return 0;
		/* The left operand becomes 0/1 too, so "2 && 3" is 1. */
		if (emit(p, OP_BOOL, at, 0) || emit(p, jump, at, 0))
			return p->rc;
		size_t j = p->e->code_len - 1;
		if (next(p))
			return p->rc;
		if (emit(p, OP_BOOL, at, 0))
			return p->rc;
		p->e->code[j].v = (int64_t)p->e->code_len;
	}
}

static int parse_and(struct parser *p)
{
	return parse_logic(p, parse_eq, "&&", OP_AND_JUMP);
}

static int parse_or(struct parser *p)
{
	return parse_logic(p, parse_and, "||", OP_OR_JUMP);
}

/* The stack depth the program needs (jumps only ever skip a balanced
 * region, so a linear scan bounds it). */
static size_t stack_need(const struct expr *e)
{
	size_t d = 0, m = 0;
	for (size_t k = 0; k < e->code_len; k++) {
		switch (e->code[k].op) {
		case OP_CONST:
		case OP_VAR: d++; break;
		case OP_NEG:
		case OP_NOT:
		case OP_BOOL: break;
		case OP_AND_JUMP:
		case OP_OR_JUMP: d--; break;
		case OP_MIN:
		case OP_MAX: d -= (size_t)e->code[k].v - 1; break;
		default: d--; break;
		}
		if (d > m)
			m = d;
	}
	return m + 1;
}

int expr_parse(const char *text, struct expr **out, struct kf_err *err)
{
	*out = NULL;
	if (!text)
		return kf_err_set(err, KF_EINVAL, "expression missing");
	size_t n = strnlen(text, EXPR_MAX_TEXT + 1);
	if (n > EXPR_MAX_TEXT)
		return kf_err_set(err, KF_ETOOBIG, "expression longer than %d characters",
				  EXPR_MAX_TEXT);
	struct expr *e = calloc(1, sizeof *e);
	if (!e)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	e->text = strdup(text);
	e->code = calloc(EXPR_MAX_INS, sizeof *e->code);
	if (!e->text || !e->code) {
		expr_free(e);
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	}
	struct parser p = {.s = text, .e = e, .err = err};
	skip_ws(&p);
	if (!text[p.i])
		perr(&p, KF_EINVAL, p.i, "empty expression");
	else if (!parse_or(&p)) {
		skip_ws(&p);
		if (text[p.i]) {
			if (text[p.i] == '=' || text[p.i] == '&' || text[p.i] == '|')
				perr(&p, KF_EINVAL, p.i, "unknown operator (use ==, &&, ||)");
			else
				perr(&p, KF_EINVAL, p.i, "unexpected character");
		}
	}
	if (p.rc) {
		expr_free(e);
		return p.rc;
	}
	e->max_stack = stack_need(e);
	*out = e;
	return 0;
}

struct expr *expr_new_const(int64_t v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%lld", (long long)v);
	struct expr *e = NULL;
	if (v == INT64_MIN) {
		/* "-9223372036854775808" cannot be parsed as -(literal). */
		if (expr_parse("-9223372036854775807 - 1", &e, NULL))
			return NULL;
		return e;
	}
	if (expr_parse(buf, &e, NULL))
		return NULL;
	return e;
}

void expr_free(struct expr *e)
{
	if (!e)
		return;
	for (size_t k = 0; k < e->vars_len; k++)
		free(e->vars[k]);
	free(e->code);
	free(e->text);
	free(e);
}

const char *expr_text(const struct expr *e)
{
	return e->text;
}

size_t expr_var_count(const struct expr *e)
{
	return e->vars_len;
}

const char *expr_var_at(const struct expr *e, size_t i)
{
	return i < e->vars_len ? e->vars[i] : NULL;
}

int expr_is_const(const struct expr *e)
{
	return e->vars_len == 0;
}

/* --- evaluation -------------------------------------------------------- */

static int eerr(const struct expr *e, const struct ins *in, struct kf_err *err, const char *what)
{
	return kf_err_set(err, KF_EINVAL, "expression '%s': %s at position %d", e->text, what,
			  in->pos);
}

static const char *op_text(enum op op)
{
	switch (op) {
	case OP_ADD: return "+";
	case OP_SUB: return "-";
	case OP_MUL: return "*";
	case OP_NEG: return "unary -";
	case OP_DIV: return "/";
	case OP_MOD: return "%";
	case OP_CEIL_DIV: return "ceil_div";
	default: return "?";
	}
}

int expr_eval(const struct expr *e, const struct expr_env *env, int64_t *out, struct kf_err *err)
{
	int64_t vals[EXPR_MAX_VARS];
	for (size_t k = 0; k < e->vars_len; k++) {
		size_t j = 0;
		for (; env && j < env->len; j++)
			if (strcmp(env->names[j], e->vars[k]) == 0)
				break;
		if (!env || j == env->len) {
			for (size_t c = 0; c < e->code_len; c++)
				if (e->code[c].op == OP_VAR && e->code[c].v == (int64_t)k) {
					char msg[EXPR_MAX_NAME + 40];
					snprintf(msg, sizeof msg, "unknown variable '%s'",
						 e->vars[k]);
					return eerr(e, &e->code[c], err, msg);
				}
		}
		vals[k] = env->values[j];
	}
	int64_t small[64];
	int64_t *st = small;
	if (e->max_stack > 64) {
		st = malloc(e->max_stack * sizeof *st);
		if (!st)
			return kf_err_set(err, KF_ENOMEM, "out of memory");
	}
	size_t sp = 0;
	int rc = 0;
	char msg[64];
	for (size_t pc = 0; pc < e->code_len; pc++) {
		const struct ins *in = &e->code[pc];
		int64_t a, b, r = 0;
		int ovf = 0;
		switch (in->op) {
		case OP_CONST: st[sp++] = in->v; continue;
		case OP_VAR: st[sp++] = vals[in->v]; continue;
		case OP_NEG:
			if (st[sp - 1] == INT64_MIN) {
				snprintf(msg, sizeof msg, "integer overflow in '%s'",
					 op_text(in->op));
				rc = eerr(e, in, err, msg);
				goto out;
			}
			st[sp - 1] = -st[sp - 1];
			continue;
		case OP_NOT: st[sp - 1] = !st[sp - 1]; continue;
		case OP_BOOL: st[sp - 1] = st[sp - 1] != 0; continue;
		case OP_AND_JUMP:
			if (st[sp - 1] == 0)
				pc = (size_t)in->v - 1;
			else
				sp--;
			continue;
		case OP_OR_JUMP:
			if (st[sp - 1] != 0) {
				st[sp - 1] = 1;
				pc = (size_t)in->v - 1;
			} else
				sp--;
			continue;
		case OP_MIN:
		case OP_MAX: {
			size_t n = (size_t)in->v;
			r = st[sp - n];
			for (size_t k = sp - n + 1; k < sp; k++)
				r = in->op == OP_MIN ? (st[k] < r ? st[k] : r)
						     : (st[k] > r ? st[k] : r);
			sp -= n;
			st[sp++] = r;
			continue;
		}
		default: break;
		}
		b = st[--sp];
		a = st[--sp];
		switch (in->op) {
		case OP_ADD: ovf = __builtin_add_overflow(a, b, &r); break;
		case OP_SUB: ovf = __builtin_sub_overflow(a, b, &r); break;
		case OP_MUL: ovf = __builtin_mul_overflow(a, b, &r); break;
		case OP_DIV:
		case OP_MOD:
			if (b == 0) {
				rc = eerr(e, in, err,
					  in->op == OP_DIV ? "division by zero" : "modulo by zero");
				goto out;
			}
			if (a == INT64_MIN && b == -1) {
				ovf = 1;
				break;
			}
			r = in->op == OP_DIV ? a / b : a % b;
			break;
		case OP_CEIL_DIV:
			if (b <= 0) {
				rc = eerr(e, in, err, "ceil_div by zero or negative divisor");
				goto out;
			}
			r = a / b + (a % b != 0 && a > 0);
			break;
		case OP_EQ: r = a == b; break;
		case OP_NE: r = a != b; break;
		case OP_LT: r = a < b; break;
		case OP_LE: r = a <= b; break;
		case OP_GT: r = a > b; break;
		case OP_GE: r = a >= b; break;
		default: rc = kf_err_set(err, KF_EINTERNAL, "expression: bad opcode"); goto out;
		}
		if (ovf) {
			snprintf(msg, sizeof msg, "integer overflow in '%s'", op_text(in->op));
			rc = eerr(e, in, err, msg);
			goto out;
		}
		st[sp++] = r;
	}
	*out = st[0];
out:
	if (st != small)
		free(st);
	return rc;
}

int expr_eval_text(const char *text, const struct expr_env *env, int64_t *out, struct kf_err *err)
{
	struct expr *e;
	int rc = expr_parse(text, &e, err);
	if (rc)
		return rc;
	rc = expr_eval(e, env, out, err);
	expr_free(e);
	return rc;
}
