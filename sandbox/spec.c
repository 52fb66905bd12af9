/* spec: the kernel spec parser and validator; see spec.h.
 * Parsing walks the JSON once, turning every expression into a parsed expr
 * and checking that it names only size variables; then every row of sizes is
 * bound (shapes, overflow, caps, constraints, launch dimensions), so a spec
 * that parses can run at every size it lists. */
#include "spec.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PATH_MAX_LEN 160

/* --- small helpers ----------------------------------------------------- */

static int valid_name(const char *s)
{
	if (!s || !*s || strlen(s) > SPEC_NAME_MAX)
		return 0;
	if (!isalpha((unsigned char)s[0]) && s[0] != '_')
		return 0;
	for (const char *c = s; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '_')
			return 0;
	return 1;
}

/* Rejects keys of obj not in known (NULL-terminated). */
static int check_keys(const json_t *obj, const char *path, const char *const *known,
		      struct kf_err *err)
{
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)obj, key, v) {
		int ok = 0;
		for (const char *const *k = known; *k; k++)
			if (strcmp(*k, key) == 0)
				ok = 1;
		if (!ok) {
			char list[256] = "";
			size_t n = 0;
			for (const char *const *k = known; *k && n < sizeof list - 1; k++)
				n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
						      k == known ? "" : ", ", *k);
			return kf_err_set(err, KF_EINVAL, "%s: unknown key '%s' (known: %s)", path,
					  key, list);
		}
	}
	return 0;
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	default: return "null";
	}
}

static char *dup_str(const char *s)
{
	return s ? strdup(s) : NULL;
}

int spec_var_index(const struct spec *s, const char *name)
{
	for (size_t i = 0; i < s->vars_len; i++)
		if (strcmp(s->vars[i], name) == 0)
			return (int)i;
	return -1;
}

int spec_tensor_index(const struct spec *s, const char *name)
{
	for (size_t i = 0; i < s->tensors_len; i++)
		if (strcmp(s->tensors[i].name, name) == 0)
			return (int)i;
	return -1;
}

int spec_scalar_index(const struct spec *s, const char *name)
{
	for (size_t i = 0; i < s->scalars_len; i++)
		if (strcmp(s->scalars[i].name, name) == 0)
			return (int)i;
	return -1;
}

struct expr_env spec_env(const struct spec *s, const int64_t *vals)
{
	struct expr_env env = {(const char *const *)s->vars, vals, s->vars_len};
	return env;
}

/* Parses v (a string or an integer) at path into an expression that may
 * name only size variables of s. */
static int parse_expr(const struct spec *s, const json_t *v, const char *path, struct expr **out,
		      struct kf_err *err)
{
	*out = NULL;
	if (json_is_integer(v)) {
		*out = expr_new_const(json_integer_value(v));
		return *out ? 0 : kf_err_set(err, KF_ENOMEM, "out of memory");
	}
	if (!json_is_string(v))
		return kf_err_set(err, KF_EINVAL,
				  "%s: must be an integer expression (a string or an "
				  "integer), not %s",
				  path, type_name(v));
	struct kf_err local = {0};
	int rc = expr_parse(json_string_value(v), out, &local);
	if (rc)
		return kf_err_set(err, rc, "%s: %s", path, local.msg);
	for (size_t i = 0; i < expr_var_count(*out); i++) {
		const char *n = expr_var_at(*out, i);
		if (spec_var_index(s, n) < 0) {
			rc = kf_err_set(err, KF_EINVAL,
					"%s: size '%s' is not defined by any entry of sizes", path,
					n);
			expr_free(*out);
			*out = NULL;
			return rc;
		}
	}
	return 0;
}

/* --- freeing ----------------------------------------------------------- */

static void launch_fini(struct spec_launch *l)
{
	free(l->kernel);
	for (int k = 0; k < 3; k++) {
		expr_free(l->grid[k]);
		expr_free(l->block[k]);
	}
	expr_free(l->shared_bytes);
	for (size_t a = 0; a < l->args_len; a++)
		expr_free(l->args[a].expr);
	free(l->args);
}

static void launches_free(struct spec_launch *l, size_t n)
{
	for (size_t i = 0; l && i < n; i++)
		launch_fini(&l[i]);
	free(l);
}

void spec_free(struct spec *s)
{
	if (!s)
		return;
	free(s->source);
	free(s->arch);
	free(s->op);
	for (size_t i = 0; i < s->vars_len; i++)
		free(s->vars[i]);
	free(s->sizes);
	for (size_t i = 0; i < s->tensors_len; i++) {
		free(s->tensors[i].name);
		expr_free(s->tensors[i].init_max_expr);
		for (size_t d = 0; d < s->tensors[i].rank; d++)
			expr_free(s->tensors[i].shape[d]);
	}
	free(s->tensors);
	for (size_t i = 0; i < s->scalars_len; i++)
		free(s->scalars[i].name);
	free(s->scalars);
	launches_free(s->launch, s->launch_len);
	free(s->ref.op);
	free(s->ref.params);
	free(s->ref.source);
	free(s->ref.torch);
	launches_free(s->ref.launch, s->ref.launch_len);
	free(s->baseline.source);
	launches_free(s->baseline.launch, s->baseline.launch_len);
	expr_free(s->cost_bytes);
	expr_free(s->cost_flops);
	for (size_t i = 0; i < s->constraints_len; i++)
		expr_free(s->constraints[i]);
	free(s->constraints);
	json_decref(s->json);
	free(s);
}

/* --- sizes ------------------------------------------------------------- */

static int parse_sizes(struct spec *s, const json_t *j, struct kf_err *err)
{
	const json_t *sz = json_object_get(j, "sizes");
	if (!sz) {
		/* No size variables: one row with none (shapes are constants). */
		s->sizes_len = 1;
		s->sizes = calloc(1, sizeof *s->sizes);
		return s->sizes ? 0 : kf_err_set(err, KF_ENOMEM, "out of memory");
	}
	if (!json_is_array(sz) || json_array_size(sz) == 0)
		return kf_err_set(err, KF_EINVAL,
				  "sizes: must be a non-empty array of objects such "
				  "as [{\"T\": 4096, \"D\": 4096}]");
	if (json_array_size(sz) > SPEC_MAX_SIZES)
		return kf_err_set(err, KF_ETOOBIG, "sizes: %zu entries, at most %d",
				  json_array_size(sz), SPEC_MAX_SIZES);
	/* Variables: the keys of the first row, in order. */
	const json_t *row0 = json_array_get(sz, 0);
	if (!json_is_object(row0))
		return kf_err_set(err, KF_EINVAL,
				  "sizes[0]: must be an object of size variables, not %s",
				  type_name(row0));
	const char *key;
	json_t *v;
	json_object_foreach((json_t *)row0, key, v) {
		if (!valid_name(key))
			return kf_err_set(err, KF_EINVAL,
					  "sizes[0]: '%s' is not a valid size name "
					  "(letters, digits, _; not starting with a digit)",
					  key);
		if (s->vars_len >= SPEC_MAX_VARS)
			return kf_err_set(err, KF_ETOOBIG, "sizes[0]: more than %d size variables",
					  SPEC_MAX_VARS);
		s->vars[s->vars_len] = strdup(key);
		if (!s->vars[s->vars_len])
			return kf_err_set(err, KF_ENOMEM, "out of memory");
		s->vars_len++;
	}
	s->sizes_len = json_array_size(sz);
	s->sizes = calloc(s->sizes_len * (s->vars_len ? s->vars_len : 1), sizeof *s->sizes);
	if (!s->sizes)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	for (size_t r = 0; r < s->sizes_len; r++) {
		const json_t *row = json_array_get(sz, r);
		if (!json_is_object(row))
			return kf_err_set(err, KF_EINVAL,
					  "sizes[%zu]: must be an object of size "
					  "variables, not %s",
					  r, type_name(row));
		json_object_foreach((json_t *)row, key, v) {
			int k = spec_var_index(s, key);
			if (k < 0)
				return kf_err_set(err, KF_EINVAL,
						  "sizes[%zu]: '%s' is not in sizes[0]; "
						  "every entry must define the same variables",
						  r, key);
			if (!json_is_integer(v) || json_integer_value(v) < 1)
				return kf_err_set(err, KF_EINVAL,
						  "sizes[%zu].%s: must be a positive integer", r,
						  key);
			s->sizes[r * s->vars_len + (size_t)k] = json_integer_value(v);
		}
		for (size_t k = 0; k < s->vars_len; k++)
			if (!json_object_get(row, s->vars[k]))
				return kf_err_set(err, KF_EINVAL,
						  "sizes[%zu]: missing '%s' (sizes[0] "
						  "defines it)",
						  r, s->vars[k]);
		for (size_t q = 0; q < r; q++)
			if (s->vars_len &&
			    memcmp(&s->sizes[q * s->vars_len], &s->sizes[r * s->vars_len],
				   s->vars_len * sizeof *s->sizes) == 0)
				return kf_err_set(err, KF_EINVAL, "sizes[%zu]: same as sizes[%zu]",
						  r, q);
	}
	return 0;
}

/* --- tensors and scalars ----------------------------------------------- */

static const char *const INIT_NAMES[] = {
	[SPEC_INIT_NORMAL] = "normal",	     [SPEC_INIT_UNIFORM] = "uniform",
	[SPEC_INIT_UNIFORM01] = "uniform01", [SPEC_INIT_POSITIVE] = "positive",
	[SPEC_INIT_ONES] = "ones",	     [SPEC_INIT_ARANGE] = "arange",
	[SPEC_INIT_INDEX] = "index",
};
static const char *const ROLE_NAMES[] = {"input", "output", "inout"};

const char *spec_role_name(enum spec_role r)
{
	return (unsigned)r < 3 ? ROLE_NAMES[r] : "?";
}

const char *spec_init_name(enum spec_init i)
{
	return (unsigned)i <= SPEC_INIT_INDEX ? INIT_NAMES[i] : "?";
}

static int parse_dtype(const json_t *v, const char *path, enum kf_dtype *out, struct kf_err *err)
{
	int dt = json_is_string(v) ? dtype_parse(json_string_value(v)) : -1;
	if (dt < 0)
		return kf_err_set(err, KF_EINVAL,
				  "%s: '%s' is not a dtype (f32, f16, bf16, f64, i8, u8, "
				  "i32, i64)",
				  path, json_is_string(v) ? json_string_value(v) : type_name(v));
	*out = (enum kf_dtype)dt;
	return 0;
}

static int parse_tensor(struct spec *s, const char *name, const json_t *t, struct spec_tensor *out,
			struct kf_err *err)
{
	char path[PATH_MAX_LEN];
	snprintf(path, sizeof path, "tensors.%s", name);
	static const char *const KEYS[] = {"dtype", "shape", "role", "init", "init_max", NULL};
	if (!json_is_object(t))
		return kf_err_set(err, KF_EINVAL, "%s: must be an object with dtype, shape, role",
				  path);
	int rc = check_keys(t, path, KEYS, err);
	if (rc)
		return rc;
	char p2[PATH_MAX_LEN * 2];
	snprintf(p2, sizeof p2, "%s.dtype", path);
	const json_t *dt = json_object_get(t, "dtype");
	if (!dt)
		return kf_err_set(err, KF_EINVAL, "%s: missing", p2);
	if ((rc = parse_dtype(dt, p2, &out->dtype, err)))
		return rc;
	const json_t *sh = json_object_get(t, "shape");
	snprintf(p2, sizeof p2, "%s.shape", path);
	if (!json_is_array(sh))
		return kf_err_set(err, KF_EINVAL,
				  "%s: must be an array of size expressions such as "
				  "[\"T\", \"D\"] ([] for one element)",
				  p2);
	if (json_array_size(sh) > SPEC_MAX_RANK)
		return kf_err_set(err, KF_ETOOBIG, "%s: rank %zu, at most %d", p2,
				  json_array_size(sh), SPEC_MAX_RANK);
	out->rank = json_array_size(sh);
	for (size_t d = 0; d < out->rank; d++) {
		snprintf(p2, sizeof p2, "%s.shape[%zu]", path, d);
		if ((rc = parse_expr(s, json_array_get(sh, d), p2, &out->shape[d], err)))
			return rc;
	}
	const json_t *role = json_object_get(t, "role");
	snprintf(p2, sizeof p2, "%s.role", path);
	if (!json_is_string(role))
		return kf_err_set(err, KF_EINVAL, "%s: must be input, output or inout", p2);
	int r = -1;
	for (int k = 0; k < 3; k++)
		if (strcmp(json_string_value(role), ROLE_NAMES[k]) == 0)
			r = k;
	if (r < 0)
		return kf_err_set(err, KF_EINVAL, "%s: '%s' is not a role (input, output, inout)",
				  p2, json_string_value(role));
	out->role = (enum spec_role)r;
	const json_t *init = json_object_get(t, "init");
	snprintf(p2, sizeof p2, "%s.init", path);
	out->init = SPEC_INIT_NORMAL;
	if (init) {
		if (out->role == SPEC_ROLE_OUTPUT)
			return kf_err_set(err, KF_EINVAL,
					  "%s: an output is poisoned before each run, "
					  "not initialised; use role inout to give it "
					  "initial values",
					  p2);
		int k = -1;
		if (json_is_string(init))
			for (int q = 0; q <= SPEC_INIT_INDEX; q++)
				if (strcmp(json_string_value(init), INIT_NAMES[q]) == 0)
					k = q;
		if (k < 0)
			return kf_err_set(err, KF_EINVAL,
					  "%s: '%s' is not an init (normal, uniform, "
					  "uniform01, positive, ones, arange, index; "
					  "zeros is refused: a zero input cannot tell a "
					  "wrong kernel from a right one)",
					  p2,
					  json_is_string(init) ? json_string_value(init)
							       : type_name(init));
		out->init = (enum spec_init)k;
	}
	const json_t *im = json_object_get(t, "init_max");
	snprintf(p2, sizeof p2, "%s.init_max", path);
	if (out->init == SPEC_INIT_INDEX) {
		if (!im)
			return kf_err_set(err, KF_EINVAL,
					  "%s: init 'index' needs init_max (values are "
					  "drawn from [0, init_max))",
					  p2);
		if (dtype_is_float(out->dtype))
			return kf_err_set(err, KF_EINVAL, "%s: init 'index' needs an integer dtype",
					  path);
		if ((rc = parse_expr(s, im, p2, &out->init_max_expr, err)))
			return rc;
	} else if (im) {
		return kf_err_set(err, KF_EINVAL, "%s: only meaningful with init 'index'", p2);
	}
	return 0;
}

static int parse_tensors(struct spec *s, const json_t *j, struct kf_err *err)
{
	const json_t *ts = json_object_get(j, "tensors");
	if (!json_is_object(ts) || json_object_size(ts) == 0)
		return kf_err_set(err, KF_EINVAL,
				  "tensors: required, an object of name -> {dtype, "
				  "shape, role} (or use the op shorthand)");
	if (json_object_size(ts) > SPEC_MAX_TENSORS)
		return kf_err_set(err, KF_ETOOBIG, "tensors: %zu, at most %d", json_object_size(ts),
				  SPEC_MAX_TENSORS);
	s->tensors = calloc(json_object_size(ts), sizeof *s->tensors);
	if (!s->tensors)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	const char *key;
	json_t *v;
	int outputs = 0;
	json_object_foreach((json_t *)ts, key, v) {
		if (!valid_name(key))
			return kf_err_set(err, KF_EINVAL,
					  "tensors: '%s' is not a valid name (letters, "
					  "digits, _)",
					  key);
		if (spec_var_index(s, key) >= 0)
			return kf_err_set(err, KF_EINVAL,
					  "tensors.%s: the name is also a size variable", key);
		struct spec_tensor *t = &s->tensors[s->tensors_len++];
		t->name = strdup(key);
		if (!t->name)
			return kf_err_set(err, KF_ENOMEM, "out of memory");
		int rc = parse_tensor(s, key, v, t, err);
		if (rc)
			return rc;
		outputs += t->role != SPEC_ROLE_INPUT;
	}
	if (!outputs)
		return kf_err_set(err, KF_EINVAL,
				  "tensors: no tensor has role output or inout; a "
				  "check needs something to compare");
	return 0;
}

static int parse_scalars(struct spec *s, const json_t *j, struct kf_err *err)
{
	const json_t *ss = json_object_get(j, "scalars");
	if (!ss)
		return 0;
	if (!json_is_object(ss))
		return kf_err_set(err, KF_EINVAL,
				  "scalars: must be an object of name -> {dtype, value}");
	if (json_object_size(ss) > SPEC_MAX_SCALARS)
		return kf_err_set(err, KF_ETOOBIG, "scalars: %zu, at most %d", json_object_size(ss),
				  SPEC_MAX_SCALARS);
	s->scalars = calloc(json_object_size(ss) + 1, sizeof *s->scalars);
	if (!s->scalars)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	const char *key;
	json_t *v;
	static const char *const KEYS[] = {"dtype", "value", NULL};
	json_object_foreach((json_t *)ss, key, v) {
		char path[PATH_MAX_LEN], p2[PATH_MAX_LEN * 2];
		snprintf(path, sizeof path, "scalars.%s", key);
		if (!valid_name(key))
			return kf_err_set(err, KF_EINVAL, "scalars: '%s' is not a valid name", key);
		if (spec_var_index(s, key) >= 0 || spec_tensor_index(s, key) >= 0)
			return kf_err_set(err, KF_EINVAL, "%s: the name is also a size or a tensor",
					  path);
		if (!json_is_object(v))
			return kf_err_set(err, KF_EINVAL, "%s: must be an object {dtype, value}",
					  path);
		int rc = check_keys(v, path, KEYS, err);
		if (rc)
			return rc;
		struct spec_scalar *sc = &s->scalars[s->scalars_len++];
		sc->name = strdup(key);
		if (!sc->name)
			return kf_err_set(err, KF_ENOMEM, "out of memory");
		snprintf(p2, sizeof p2, "%s.dtype", path);
		const json_t *dt = json_object_get(v, "dtype");
		if (!dt)
			return kf_err_set(err, KF_EINVAL, "%s: missing", p2);
		if ((rc = parse_dtype(dt, p2, &sc->dtype, err)))
			return rc;
		if (sc->dtype == KF_DT_I8 || sc->dtype == KF_DT_U8)
			return kf_err_set(err, KF_EINVAL,
					  "%s: scalars are f32, f64, f16, bf16, i32 or i64", p2);
		const json_t *val = json_object_get(v, "value");
		snprintf(p2, sizeof p2, "%s.value", path);
		if (!json_is_number(val))
			return kf_err_set(err, KF_EINVAL, "%s: must be a number", p2);
		sc->value = json_number_value(val);
		if (!isfinite(sc->value))
			return kf_err_set(err, KF_EINVAL, "%s: must be finite", p2);
		if (!dtype_is_float(sc->dtype)) {
			if (!json_is_integer(val))
				return kf_err_set(err, KF_EINVAL,
						  "%s: must be an integer for dtype %s", p2,
						  dtype_name(sc->dtype));
			sc->ivalue = json_integer_value(val);
			if (sc->dtype == KF_DT_I32 &&
			    (sc->ivalue < INT32_MIN || sc->ivalue > INT32_MAX))
				return kf_err_set(err, KF_EINVAL,
						  "%s: %" PRId64 " does not fit in i32", p2,
						  sc->ivalue);
		}
	}
	return 0;
}

/* --- launches ---------------------------------------------------------- */

static int parse_dims(struct spec *s, const json_t *v, const char *path, struct expr **out,
		      size_t *len, int required, struct kf_err *err)
{
	if (!v && !required) {
		*len = 0;
		return 0;
	}
	if (json_is_string(v) || json_is_integer(v)) {
		*len = 1;
		return parse_expr(s, v, path, &out[0], err);
	}
	if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > 3)
		return kf_err_set(err, KF_EINVAL,
				  "%s: must be a list of 1 to 3 integer expressions, "
				  "such as [\"ceil_div(N, 256)\"]",
				  path);
	*len = json_array_size(v);
	for (size_t k = 0; k < *len; k++) {
		char p2[PATH_MAX_LEN * 2];
		snprintf(p2, sizeof p2, "%s[%zu]", path, k);
		int rc = parse_expr(s, json_array_get(v, k), p2, &out[k], err);
		if (rc)
			return rc;
	}
	return 0;
}

static int parse_arg(struct spec *s, const json_t *v, const char *path, struct spec_arg *a,
		     struct kf_err *err)
{
	if (json_is_integer(v)) {
		a->kind = SPEC_ARG_SIZE;
		a->dtype = KF_DT_I32;
		return parse_expr(s, v, path, &a->expr, err);
	}
	if (!json_is_string(v))
		return kf_err_set(err, KF_EINVAL,
				  "%s: must name a tensor, a scalar or a size "
				  "expression (optionally typed, \"T:i64\")",
				  path);
	const char *text = json_string_value(v);
	char buf[EXPR_MAX_TEXT + 1];
	if (strlen(text) > EXPR_MAX_TEXT)
		return kf_err_set(err, KF_ETOOBIG, "%s: too long", path);
	snprintf(buf, sizeof buf, "%s", text);
	char *colon = strrchr(buf, ':');
	enum kf_dtype dt = KF_DT_I32;
	if (colon) {
		*colon = 0;
		const char *ty = colon + 1;
		if (strcmp(ty, "i64") == 0)
			dt = KF_DT_I64;
		else if (strcmp(ty, "i32") == 0)
			dt = KF_DT_I32;
		else
			return kf_err_set(err, KF_EINVAL,
					  "%s: '%s' is not a size type (i32 or i64)", path, ty);
	}
	int ti = spec_tensor_index(s, buf), si = spec_scalar_index(s, buf);
	if (ti >= 0 || si >= 0) {
		if (colon)
			return kf_err_set(err, KF_EINVAL,
					  "%s: only sizes take a type suffix; '%s' is a %s", path,
					  buf, ti >= 0 ? "tensor" : "scalar");
		a->kind = ti >= 0 ? SPEC_ARG_TENSOR : SPEC_ARG_SCALAR;
		a->index = (size_t)(ti >= 0 ? ti : si);
		return 0;
	}
	a->kind = SPEC_ARG_SIZE;
	a->dtype = dt;
	json_t *tmp = json_string(buf);
	if (!tmp)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	struct kf_err local = {0};
	int rc = parse_expr(s, tmp, path, &a->expr, &local);
	json_decref(tmp);
	if (rc) {
		/* A bare unknown name is most likely a typo of a tensor name. */
		if (valid_name(buf))
			return kf_err_set(err, KF_EINVAL,
					  "%s: '%s' is not a tensor, scalar or size of "
					  "the spec",
					  path, buf);
		return kf_err_set(err, rc, "%s", local.msg);
	}
	return 0;
}

static int parse_launch_list(struct spec *s, const json_t *v, const char *path,
			     struct spec_launch **out, size_t *out_len, struct kf_err *err)
{
	if (!json_is_array(v) || json_array_size(v) == 0)
		return kf_err_set(err, KF_EINVAL,
				  "%s: must be a non-empty list of {kernel, grid, "
				  "block, args}",
				  path);
	if (json_array_size(v) > SPEC_MAX_LAUNCHES)
		return kf_err_set(err, KF_ETOOBIG, "%s: %zu launches, at most %d", path,
				  json_array_size(v), SPEC_MAX_LAUNCHES);
	size_t n = json_array_size(v);
	struct spec_launch *ls = calloc(n, sizeof *ls);
	if (!ls)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	*out = ls;
	*out_len = n;
	static const char *const KEYS[] = {"kernel", "grid", "block", "shared_bytes", "args", NULL};
	for (size_t i = 0; i < n; i++) {
		char lp[PATH_MAX_LEN], p2[PATH_MAX_LEN * 2];
		snprintf(lp, sizeof lp, "%s[%zu]", path, i);
		const json_t *l = json_array_get(v, i);
		struct spec_launch *L = &ls[i];
		if (!json_is_object(l))
			return kf_err_set(err, KF_EINVAL,
					  "%s: must be an object {kernel, grid, block, args}", lp);
		int rc = check_keys(l, lp, KEYS, err);
		if (rc)
			return rc;
		const json_t *k = json_object_get(l, "kernel");
		if (!json_is_string(k) || !valid_name(json_string_value(k)))
			return kf_err_set(err, KF_EINVAL,
					  "%s.kernel: must be the extern \"C\" name of a "
					  "__global__ function",
					  lp);
		L->kernel = strdup(json_string_value(k));
		if (!L->kernel)
			return kf_err_set(err, KF_ENOMEM, "out of memory");
		snprintf(p2, sizeof p2, "%s.grid", lp);
		if ((rc = parse_dims(s, json_object_get(l, "grid"), p2, L->grid, &L->grid_len, 1,
				     err)))
			return rc;
		snprintf(p2, sizeof p2, "%s.block", lp);
		if ((rc = parse_dims(s, json_object_get(l, "block"), p2, L->block, &L->block_len, 1,
				     err)))
			return rc;
		const json_t *sb = json_object_get(l, "shared_bytes");
		snprintf(p2, sizeof p2, "%s.shared_bytes", lp);
		if (sb)
			rc = parse_expr(s, sb, p2, &L->shared_bytes, err);
		else if (!(L->shared_bytes = expr_new_const(0)))
			rc = kf_err_set(err, KF_ENOMEM, "out of memory");
		if (rc)
			return rc;
		const json_t *args = json_object_get(l, "args");
		snprintf(p2, sizeof p2, "%s.args", lp);
		if (!json_is_array(args))
			return kf_err_set(err, KF_EINVAL,
					  "%s: must be a list naming tensors, scalars and "
					  "sizes in the kernel's parameter order",
					  p2);
		if (json_array_size(args) > SPEC_MAX_ARGS)
			return kf_err_set(err, KF_ETOOBIG, "%s: %zu args, at most %d", p2,
					  json_array_size(args), SPEC_MAX_ARGS);
		L->args_len = json_array_size(args);
		L->args = calloc(L->args_len + 1, sizeof *L->args);
		if (!L->args)
			return kf_err_set(err, KF_ENOMEM, "out of memory");
		for (size_t a = 0; a < L->args_len; a++) {
			snprintf(p2, sizeof p2, "%s.args[%zu]", lp, a);
			if ((rc = parse_arg(s, json_array_get(args, a), p2, &L->args[a], err)))
				return rc;
		}
	}
	return 0;
}

static int parse_source(const json_t *v, const char *path, int required, char **out,
			struct kf_err *err)
{
	if (!v) {
		if (required)
			return kf_err_set(err, KF_EINVAL,
					  "%s: required (CUDA C++ with extern \"C\" "
					  "__global__ kernels)",
					  path);
		return 0;
	}
	if (!json_is_string(v))
		return kf_err_set(err, KF_EINVAL, "%s: must be a string of CUDA C++", path);
	if (json_string_length(v) > SPEC_MAX_SOURCE_BYTES)
		return kf_err_set(err, KF_ETOOBIG, "%s: %zu bytes, at most %u", path,
				  json_string_length(v), SPEC_MAX_SOURCE_BYTES);
	if (json_string_length(v) == 0 || strlen(json_string_value(v)) != json_string_length(v))
		return kf_err_set(err, KF_EINVAL, "%s: empty or contains a NUL byte", path);
	*out = strdup(json_string_value(v));
	return *out ? 0 : kf_err_set(err, KF_ENOMEM, "out of memory");
}

/* --- reference, baseline, tolerance, cost, constraints ----------------- */

static int parse_reference(struct spec *s, const json_t *j,
			   const struct op_template *(*find)(const char *), struct kf_err *err)
{
	const json_t *r = json_object_get(j, "reference");
	if (!r)
		return 0;
	if (!json_is_object(r))
		return kf_err_set(err, KF_EINVAL,
				  "reference: must be {\"op\": ...}, {\"source\": ..., "
				  "\"launch\": [...]} or {\"torch\": ...}");
	int kinds = !!json_object_get(r, "op") + !!json_object_get(r, "source") +
		    !!json_object_get(r, "torch");
	if (kinds != 1)
		return kf_err_set(err, KF_EINVAL,
				  "reference: give exactly one of op, source (with "
				  "launch) or torch");
	int rc;
	if (json_object_get(r, "op")) {
		static const char *const KEYS[] = {"op", "params", NULL};
		if ((rc = check_keys(r, "reference", KEYS, err)))
			return rc;
		const json_t *op = json_object_get(r, "op");
		if (!json_is_string(op))
			return kf_err_set(err, KF_EINVAL, "reference.op: must be a string");
		s->ref.kind = SPEC_REF_OP;
		s->ref.op = strdup(json_string_value(op));
		if (!s->ref.op)
			return kf_err_set(err, KF_ENOMEM, "out of memory");
		const json_t *params = json_object_get(r, "params");
		if (params && !json_is_object(params))
			return kf_err_set(err, KF_EINVAL,
					  "reference.params: must be an object of "
					  "scalar name -> number");
		if (!find)
			return 0; /* the harness never computes a reference */
		const struct op_template *t = find(s->ref.op);
		if (!t)
			return kf_err_set(err, KF_EINVAL, "reference.op: '%s' is not a built-in op",
					  s->ref.op);
		for (const char *const *n = t->size_names; *n; n++)
			if (spec_var_index(s, *n) < 0)
				return kf_err_set(err, KF_EINVAL,
						  "reference.op: op '%s' needs size '%s', "
						  "which sizes does not define",
						  t->name, *n);
		for (int pass = 0; pass < 2; pass++)
			for (const char *const *n = pass ? t->outputs : t->inputs; *n; n++) {
				int ti = spec_tensor_index(s, *n);
				if (ti < 0)
					return kf_err_set(err, KF_EINVAL,
							  "reference.op: op '%s' needs "
							  "tensor '%s', which tensors does "
							  "not declare",
							  t->name, *n);
				enum spec_role role = s->tensors[ti].role;
				if (pass ? role == SPEC_ROLE_INPUT : role == SPEC_ROLE_OUTPUT)
					return kf_err_set(err, KF_EINVAL,
							  "tensors.%s.role: op '%s' has it "
							  "as an %s",
							  *n, t->name, pass ? "output" : "input");
			}
		size_t np = 0;
		while (t->scalar_names[np])
			np++;
		s->ref.params = calloc(np + 1, sizeof *s->ref.params);
		if (!s->ref.params)
			return kf_err_set(err, KF_ENOMEM, "out of memory");
		s->ref.params_len = np;
		for (size_t k = 0; k < np; k++) {
			const char *n = t->scalar_names[k];
			const json_t *pv = params ? json_object_get(params, n) : NULL;
			int si = spec_scalar_index(s, n);
			if (pv && !json_is_number(pv))
				return kf_err_set(err, KF_EINVAL,
						  "reference.params.%s: must be a number", n);
			if (pv)
				s->ref.params[k] = json_number_value(pv);
			else if (si >= 0)
				s->ref.params[k] = s->scalars[si].value;
			else
				return kf_err_set(err, KF_EINVAL,
						  "reference.params: op '%s' needs '%s' "
						  "(give it in params or as a scalar)",
						  t->name, n);
		}
		if (params) {
			const char *key;
			json_t *v;
			json_object_foreach((json_t *)params, key, v) {
				int known = 0;
				for (size_t k = 0; k < np; k++)
					known |= strcmp(t->scalar_names[k], key) == 0;
				if (!known)
					return kf_err_set(err, KF_EINVAL,
							  "reference.params.%s: op '%s' has "
							  "no such parameter",
							  key, t->name);
			}
		}
		return 0;
	}
	if (json_object_get(r, "source")) {
		static const char *const KEYS[] = {"source", "launch", NULL};
		if ((rc = check_keys(r, "reference", KEYS, err)))
			return rc;
		s->ref.kind = SPEC_REF_CUDA;
		if ((rc = parse_source(json_object_get(r, "source"), "reference.source", 1,
				       &s->ref.source, err)))
			return rc;
		return parse_launch_list(s, json_object_get(r, "launch"), "reference.launch",
					 &s->ref.launch, &s->ref.launch_len, err);
	}
	static const char *const KEYS[] = {"torch", NULL};
	if ((rc = check_keys(r, "reference", KEYS, err)))
		return rc;
	const json_t *t = json_object_get(r, "torch");
	if (!json_is_string(t) || json_string_length(t) == 0 || json_string_length(t) > 8192)
		return kf_err_set(err, KF_EINVAL,
				  "reference.torch: must be a Python expression (at "
				  "most 8192 characters) over the tensor names, e.g. "
				  "\"x * torch.rsqrt((x.float()**2).mean(-1, "
				  "keepdim=True) + eps).to(x.dtype) * w\"");
	s->ref.kind = SPEC_REF_TORCH;
	s->ref.torch = strdup(json_string_value(t));
	return s->ref.torch ? 0 : kf_err_set(err, KF_ENOMEM, "out of memory");
}

static int copy_launches(struct spec *s, const json_t *j, const char *path,
			 struct spec_launch **out, size_t *len, struct kf_err *err)
{
	return parse_launch_list(s, j, path, out, len, err);
}

static int parse_baseline(struct spec *s, const json_t *j, struct kf_err *err)
{
	const json_t *b = json_object_get(j, "baseline");
	int rc;
	if (!b) {
		/* A second CUDA source reference doubles as the baseline. */
		if (s->ref.kind == SPEC_REF_CUDA) {
			const json_t *r = json_object_get(j, "reference");
			s->baseline.kind = SPEC_BASE_CUDA;
			s->baseline.source = strdup(s->ref.source);
			if (!s->baseline.source)
				return kf_err_set(err, KF_ENOMEM, "out of memory");
			return copy_launches(s, json_object_get(r, "launch"), "reference.launch",
					     &s->baseline.launch, &s->baseline.launch_len, err);
		}
		return 0;
	}
	if (!json_is_object(b))
		return kf_err_set(err, KF_EINVAL,
				  "baseline: must be {\"launch\": [...]} (kernels.fatbin) "
				  "or {\"source\": ..., \"launch\": [...]}");
	static const char *const KEYS[] = {"source", "launch", NULL};
	if ((rc = check_keys(b, "baseline", KEYS, err)))
		return rc;
	if (json_object_get(b, "source")) {
		s->baseline.kind = SPEC_BASE_CUDA;
		if ((rc = parse_source(json_object_get(b, "source"), "baseline.source", 1,
				       &s->baseline.source, err)))
			return rc;
	} else {
		s->baseline.kind = SPEC_BASE_FATBIN;
	}
	return parse_launch_list(s, json_object_get(b, "launch"), "baseline.launch",
				 &s->baseline.launch, &s->baseline.launch_len, err);
}

static int parse_tolerance(struct spec *s, const json_t *j, struct kf_err *err)
{
	const json_t *t = json_object_get(j, "tolerance");
	if (!t)
		return 0;
	static const char *const KEYS[] = {"atol", "rtol", NULL};
	if (!json_is_object(t))
		return kf_err_set(err, KF_EINVAL,
				  "tolerance: must be {\"atol\": number, \"rtol\": number}");
	int rc = check_keys(t, "tolerance", KEYS, err);
	if (rc)
		return rc;
	const json_t *a = json_object_get(t, "atol"), *r = json_object_get(t, "rtol");
	if (!json_is_number(a) || !json_is_number(r))
		return kf_err_set(err, KF_EINVAL, "tolerance: needs both atol and rtol as numbers");
	s->atol = json_number_value(a);
	s->rtol = json_number_value(r);
	if (!(s->atol >= 0) || !(s->rtol >= 0) || !isfinite(s->atol) || !isfinite(s->rtol))
		return kf_err_set(err, KF_EINVAL,
				  "tolerance: atol and rtol must be finite and >= 0");
	if (s->atol >= 1 || s->rtol >= 1)
		return kf_err_set(err, KF_EINVAL,
				  "tolerance: atol %g / rtol %g would accept almost any "
				  "answer; keep both below 1",
				  s->atol, s->rtol);
	s->tol_given = 1;
	return 0;
}

static int parse_cost(struct spec *s, const json_t *j, struct kf_err *err)
{
	const json_t *c = json_object_get(j, "cost");
	if (!c)
		return 0;
	static const char *const KEYS[] = {"bytes", "flops", NULL};
	if (!json_is_object(c))
		return kf_err_set(err, KF_EINVAL,
				  "cost: must be {\"bytes\": expr, \"flops\": expr}");
	int rc = check_keys(c, "cost", KEYS, err);
	if (rc)
		return rc;
	if (json_object_get(c, "bytes") &&
	    (rc = parse_expr(s, json_object_get(c, "bytes"), "cost.bytes", &s->cost_bytes, err)))
		return rc;
	if (json_object_get(c, "flops") &&
	    (rc = parse_expr(s, json_object_get(c, "flops"), "cost.flops", &s->cost_flops, err)))
		return rc;
	return 0;
}

static int parse_constraints(struct spec *s, const json_t *j, struct kf_err *err)
{
	const json_t *c = json_object_get(j, "constraints");
	if (!c)
		return 0;
	if (!json_is_array(c))
		return kf_err_set(err, KF_EINVAL,
				  "constraints: must be a list of expressions that "
				  "must be nonzero, e.g. [\"D %% 8 == 0\"]");
	if (json_array_size(c) > SPEC_MAX_CONSTRAINTS)
		return kf_err_set(err, KF_ETOOBIG, "constraints: at most %d", SPEC_MAX_CONSTRAINTS);
	s->constraints = calloc(json_array_size(c) + 1, sizeof *s->constraints);
	if (!s->constraints)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	for (size_t i = 0; i < json_array_size(c); i++) {
		char p[PATH_MAX_LEN];
		snprintf(p, sizeof p, "constraints[%zu]", i);
		int rc = parse_expr(s, json_array_get(c, i), p, &s->constraints[s->constraints_len],
				    err);
		if (rc)
			return rc;
		s->constraints_len++;
	}
	return 0;
}

/* --- binding ----------------------------------------------------------- */

void spec_limits_default(struct spec_limits *lim)
{
	lim->max_device_bytes = 16ull << 30;
	lim->max_tensor_elems = (1ull << 31) - 1;
	lim->max_host_bytes = 16ull << 30;
}

static void fmt_vals(const struct spec *s, const struct expr *e, const int64_t *vals, char *buf,
		     size_t cap)
{
	size_t n = 0;
	buf[0] = 0;
	for (size_t i = 0; i < expr_var_count(e) && n < cap; i++) {
		int k = spec_var_index(s, expr_var_at(e, i));
		n += (size_t)snprintf(buf + n, cap - n, "%s%s=%" PRId64, i ? ", " : "",
				      expr_var_at(e, i), k >= 0 ? vals[k] : 0);
	}
}

static int eval_at(const struct spec *s, const struct expr *e, const int64_t *vals,
		   const char *where, const char *field, int64_t *out, struct kf_err *err)
{
	struct expr_env env = spec_env(s, vals);
	struct kf_err local = {0};
	int rc = expr_eval(e, &env, out, &local);
	if (rc)
		return kf_err_set(err, rc, "%s: %s: %s", where, field, local.msg);
	return 0;
}

/* "3.35 GiB" or "512.0 MiB" into buf. */
static const char *fmt_size(uint64_t b, char *buf, size_t cap)
{
	if (b >= (1ull << 30))
		snprintf(buf, cap, "%.2f GiB", (double)b / (double)(1ull << 30));
	else
		snprintf(buf, cap, "%.1f MiB", (double)b / (double)(1ull << 20));
	return buf;
}

int spec_bind(const struct spec *s, const int64_t *vals, const struct spec_limits *lim,
	      const char *where, struct spec_bound *b, struct kf_err *err)
{
	struct spec_limits dl;
	if (!lim) {
		spec_limits_default(&dl);
		lim = &dl;
	}
	memset(b, 0, sizeof *b);
	char field[PATH_MAX_LEN], vb[256];
	int rc;
	for (size_t c = 0; c < s->constraints_len; c++) {
		int64_t v;
		snprintf(field, sizeof field, "constraints[%zu]", c);
		if ((rc = eval_at(s, s->constraints[c], vals, where, field, &v, err)))
			return rc;
		if (!v) {
			fmt_vals(s, s->constraints[c], vals, vb, sizeof vb);
			return kf_err_set(err, KF_EINVAL, "%s: constraint '%s' fails for %s", where,
					  expr_text(s->constraints[c]), vb);
		}
	}
	uint64_t dev = 0, host = 0;
	double def_bytes = 0;
	for (size_t t = 0; t < s->tensors_len; t++) {
		const struct spec_tensor *T = &s->tensors[t];
		int64_t elems = 1;
		for (size_t d = 0; d < T->rank; d++) {
			int64_t v;
			snprintf(field, sizeof field, "tensors.%s.shape[%zu]", T->name, d);
			if ((rc = eval_at(s, T->shape[d], vals, where, field, &v, err)))
				return rc;
			if (v < 1)
				return kf_err_set(err, KF_EINVAL,
						  "%s: %s: '%s' is %" PRId64 ", must be at least 1",
						  where, field, expr_text(T->shape[d]), v);
			b->dims[t][d] = v;
			if (__builtin_mul_overflow(elems, v, &elems))
				return kf_err_set(err, KF_ETOOBIG,
						  "%s: tensors.%s: shape overflows int64", where,
						  T->name);
		}
		if ((uint64_t)elems > lim->max_tensor_elems)
			return kf_err_set(err, KF_ETOOBIG,
					  "%s: tensors.%s: %" PRId64
					  " elements, over the cap of %" PRIu64,
					  where, T->name, elems, lim->max_tensor_elems);
		uint64_t bytes;
		if (__builtin_mul_overflow((uint64_t)elems, dtype_bytes(T->dtype), &bytes))
			return kf_err_set(err, KF_ETOOBIG, "%s: tensors.%s: byte size overflows",
					  where, T->name);
		b->elems[t] = (uint64_t)elems;
		b->bytes[t] = bytes;
		/* Each buffer: guard, data rounded up to 256 bytes, guard. */
		uint64_t padded = (bytes + 255) & ~255ull;
		if (__builtin_add_overflow(dev, padded + 2ull * SPEC_GUARD_BYTES, &dev))
			dev = UINT64_MAX;
		/* The daemon holds the reference in f64, plus the candidate's
		 * output and, for inputs, their regenerated copy. */
		uint64_t h = (uint64_t)elems * 8u * (T->role == SPEC_ROLE_INPUT ? 1u : 3u);
		if (__builtin_add_overflow(host, h, &host))
			host = UINT64_MAX;
		def_bytes += (double)bytes * (T->role == SPEC_ROLE_INOUT ? 2.0 : 1.0);
		if (T->init_max_expr) {
			int64_t im;
			snprintf(field, sizeof field, "tensors.%s.init_max", T->name);
			if ((rc = eval_at(s, T->init_max_expr, vals, where, field, &im, err)))
				return rc;
			if (im < 1)
				return kf_err_set(err, KF_EINVAL,
						  "%s: %s: '%s' is %" PRId64 ", must be at least 1",
						  where, field, expr_text(T->init_max_expr), im);
		}
	}
	b->device_bytes = dev;
	char s1[32], s2[32];
	if (dev > lim->max_device_bytes)
		return kf_err_set(err, KF_ETOOBIG,
				  "%s: tensors need %s of device memory with guard bands, "
				  "over the %s cap",
				  where, fmt_size(dev, s1, sizeof s1),
				  fmt_size(lim->max_device_bytes, s2, sizeof s2));
	if (host > lim->max_host_bytes)
		return kf_err_set(err, KF_ETOOBIG,
				  "%s: checking needs %s of host memory (float64 copies), "
				  "over the %s cap",
				  where, fmt_size(host, s1, sizeof s1),
				  fmt_size(lim->max_host_bytes, s2, sizeof s2));
	b->cost_bytes = def_bytes;
	b->cost_flops = -1;
	int64_t v;
	if (s->cost_bytes) {
		if ((rc = eval_at(s, s->cost_bytes, vals, where, "cost.bytes", &v, err)))
			return rc;
		if (v < 0)
			return kf_err_set(err, KF_EINVAL, "%s: cost.bytes is negative", where);
		b->cost_bytes = (double)v;
	}
	if (s->cost_flops) {
		if ((rc = eval_at(s, s->cost_flops, vals, where, "cost.flops", &v, err)))
			return rc;
		if (v < 0)
			return kf_err_set(err, KF_EINVAL, "%s: cost.flops is negative", where);
		b->cost_flops = (double)v;
	}
	return 0;
}

int spec_launch_dims(const struct spec *s, const struct spec_launch *l, const int64_t *vals,
		     const char *where, uint32_t grid[3], uint32_t block[3], uint32_t *shared_bytes,
		     struct kf_err *err)
{
	char field[PATH_MAX_LEN];
	int rc;
	int64_t threads = 1;
	for (int k = 0; k < 3; k++) {
		grid[k] = block[k] = 1;
		int64_t v;
		if ((size_t)k < l->grid_len) {
			snprintf(field, sizeof field, "%s.grid[%d]", l->kernel, k);
			if ((rc = eval_at(s, l->grid[k], vals, where, field, &v, err)))
				return rc;
			int64_t max = k == 0 ? INT32_MAX : 65535;
			if (v < 1 || v > max)
				return kf_err_set(err, KF_EINVAL,
						  "%s: launch %s: '%s' is %" PRId64
						  ", must be in [1, %" PRId64 "]",
						  where, field, expr_text(l->grid[k]), v, max);
			grid[k] = (uint32_t)v;
		}
		if ((size_t)k < l->block_len) {
			snprintf(field, sizeof field, "%s.block[%d]", l->kernel, k);
			if ((rc = eval_at(s, l->block[k], vals, where, field, &v, err)))
				return rc;
			int64_t max = k == 2 ? 64 : 1024;
			if (v < 1 || v > max)
				return kf_err_set(err, KF_EINVAL,
						  "%s: launch %s: '%s' is %" PRId64
						  ", must be in [1, %" PRId64 "]",
						  where, field, expr_text(l->block[k]), v, max);
			block[k] = (uint32_t)v;
			threads *= v;
		}
	}
	if (threads > 1024)
		return kf_err_set(err, KF_EINVAL,
				  "%s: launch %s: block has %" PRId64 " threads, at most 1024",
				  where, l->kernel, threads);
	int64_t sb;
	snprintf(field, sizeof field, "%s.shared_bytes", l->kernel);
	if ((rc = eval_at(s, l->shared_bytes, vals, where, field, &sb, err)))
		return rc;
	if (sb < 0 || sb > (1 << 20))
		return kf_err_set(err, KF_EINVAL,
				  "%s: launch %s: %" PRId64 " bytes, must be in [0, 1 MiB]", where,
				  field, sb);
	*shared_bytes = (uint32_t)sb;
	return 0;
}

static int check_launches_at(const struct spec *s, const int64_t *vals, const char *where,
			     struct kf_err *err)
{
	const struct spec_launch *lists[3] = {s->launch, s->ref.launch, s->baseline.launch};
	size_t lens[3] = {s->launch_len, s->ref.launch_len, s->baseline.launch_len};
	for (int q = 0; q < 3; q++)
		for (size_t i = 0; i < lens[q]; i++) {
			uint32_t g[3], b[3], sb;
			const struct spec_launch *l = &lists[q][i];
			int rc = spec_launch_dims(s, l, vals, where, g, b, &sb, err);
			if (rc)
				return rc;
			for (size_t a = 0; a < l->args_len; a++) {
				if (l->args[a].kind != SPEC_ARG_SIZE)
					continue;
				char field[PATH_MAX_LEN];
				int64_t v;
				snprintf(field, sizeof field, "launch %s: args[%zu]", l->kernel, a);
				if ((rc = eval_at(s, l->args[a].expr, vals, where, field, &v, err)))
					return rc;
				if (l->args[a].dtype == KF_DT_I32 &&
				    (v < INT32_MIN || v > INT32_MAX))
					return kf_err_set(err, KF_EINVAL,
							  "%s: %s: '%s' is %" PRId64
							  ", which does not fit in i32; "
							  "type it '%s:i64'",
							  where, field, expr_text(l->args[a].expr),
							  v, expr_text(l->args[a].expr));
			}
		}
	return 0;
}

/* --- top level --------------------------------------------------------- */

int spec_parse(const json_t *j, const struct spec_limits *lim,
	       const struct op_template *(*find)(const char *name), struct spec **out,
	       struct kf_err *err)
{
	*out = NULL;
	if (!json_is_object(j))
		return kf_err_set(err, KF_EINVAL, "spec: must be a JSON object");
	static const char *const KEYS[] = {"source",	"arch",	  "sizes",	 "tensors",
					   "scalars",	"launch", "reference",	 "baseline",
					   "tolerance", "cost",	  "constraints", "op",
					   "dtype",	"name",	  "description", NULL};
	int rc = check_keys(j, "spec", KEYS, err);
	if (rc)
		return rc;
	struct spec *s = calloc(1, sizeof *s);
	if (!s)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	s->json = json_deep_copy(j);
	if (!s->json) {
		rc = kf_err_set(err, KF_ENOMEM, "out of memory");
		goto out;
	}
	const json_t *op = json_object_get(j, "op");
	if (op) {
		if (!json_is_string(op)) {
			rc = kf_err_set(err, KF_EINVAL, "op: must be a string");
			goto out;
		}
		if (!json_object_get(j, "tensors")) {
			rc = kf_err_set(err, KF_EINVAL,
					"op: the shorthand '%s' was not expanded "
					"(spec_expand_op)",
					json_string_value(op));
			goto out;
		}
		s->op = dup_str(json_string_value(op));
		const json_t *dt = json_object_get(j, "dtype");
		if (dt && (rc = parse_dtype(dt, "dtype", &s->op_dtype, err)))
			goto out;
	}
	if ((rc = parse_source(json_object_get(j, "source"), "source", 1, &s->source, err)))
		goto out;
	const json_t *arch = json_object_get(j, "arch");
	if (arch) {
		const char *a = json_is_string(arch) ? json_string_value(arch) : "";
		int ok = strncmp(a, "sm_", 3) == 0 && isdigit((unsigned char)a[3]) && strlen(a) < 8;
		for (const char *c = a + 3; ok && *c; c++)
			ok = isdigit((unsigned char)*c) || (*c == 'a' && !c[1]);
		if (!ok) {
			rc = kf_err_set(err, KF_EINVAL,
					"arch: '%s' is not an arch such as \"sm_90\"", a);
			goto out;
		}
		s->arch = dup_str(a);
	}
	if ((rc = parse_sizes(s, j, err)) || (rc = parse_tensors(s, j, err)) ||
	    (rc = parse_scalars(s, j, err)))
		goto out;
	if ((rc = parse_launch_list(s, json_object_get(j, "launch"), "launch", &s->launch,
				    &s->launch_len, err)))
		goto out;
	if ((rc = parse_reference(s, j, find, err)) || (rc = parse_baseline(s, j, err)) ||
	    (rc = parse_tolerance(s, j, err)) || (rc = parse_cost(s, j, err)) ||
	    (rc = parse_constraints(s, j, err)))
		goto out;
	for (size_t r = 0; r < s->sizes_len; r++) {
		char where[32];
		struct spec_bound b;
		snprintf(where, sizeof where, "sizes[%zu]", r);
		const int64_t *vals = &s->sizes[r * s->vars_len];
		if ((rc = spec_bind(s, vals, lim, where, &b, err)) ||
		    (rc = check_launches_at(s, vals, where, err)))
			goto out;
	}
	*out = s;
	return 0;
out:
	spec_free(s);
	return rc;
}

/* --- odd size ---------------------------------------------------------- */

static int row_listed(const struct spec *s, const int64_t *v)
{
	for (size_t r = 0; r < s->sizes_len; r++)
		if (memcmp(&s->sizes[r * s->vars_len], v, s->vars_len * sizeof *v) == 0)
			return 1;
	return 0;
}

int spec_odd_size(const struct spec *s, const struct spec_limits *lim, uint64_t seed, int64_t *out,
		  struct kf_err *err)
{
	if (s->vars_len == 0)
		return kf_err_set(err, KF_ENOTFOUND, "the spec has no size variables");
	/* Base: the listed row with the least device memory, so the extra size
	 * costs little time. */
	size_t base = 0;
	uint64_t best = UINT64_MAX;
	for (size_t r = 0; r < s->sizes_len; r++) {
		struct spec_bound b;
		if (spec_bind(s, &s->sizes[r * s->vars_len], lim, "sizes", &b, NULL) == 0 &&
		    b.device_bytes < best) {
			best = b.device_bytes;
			base = r;
		}
	}
	const int64_t *v0 = &s->sizes[base * s->vars_len];
	/* Steps grow from small odd numbers (breaking multiples of 2) to powers
	 * of two (to satisfy divisibility constraints). */
	static const int64_t STEPS[] = {1,  3,	5,  7,	2,   6,	  4,   12,  8,	 16,   24,
					32, 48, 64, 96, 128, 192, 256, 384, 512, 1024, 2048};
	const size_t nsteps = sizeof STEPS / sizeof STEPS[0];
	int64_t cand[SPEC_MAX_VARS];
	uint64_t rng = spec_mix64(seed ^ 0x6f64645f73697a65ull);
	/* Pass 0 wants every changed variable odd (no power-of-two tiling
	 * divides it); pass 1 takes any value the constraints allow. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t round = 0; round < nsteps; round++) {
			for (int attempt = 0; attempt < 24; attempt++) {
				int changed = 0;
				for (size_t k = 0; k < s->vars_len; k++) {
					rng = spec_mix64(rng);
					int64_t step = STEPS[round];
					int which = (int)(rng % 4); /* +, -, keep, + */
					int64_t v = v0[k];
					if (which == 2 && attempt % 3 != 0) {
						cand[k] = v;
						continue;
					}
					int64_t nv = which == 1 ? v - step : v + step;
					if (nv < 1)
						nv = v + step;
					cand[k] = nv;
					changed = 1;
				}
				if (!changed || row_listed(s, cand))
					continue;
				int odd = 1;
				for (size_t k = 0; k < s->vars_len; k++)
					if (cand[k] != v0[k] && cand[k] % 2 == 0)
						odd = 0;
				if (pass == 0 && !odd)
					continue;
				struct spec_bound b;
				if (spec_bind(s, cand, lim, "odd size", &b, NULL) == 0 &&
				    check_launches_at(s, cand, "odd size", NULL) == 0 &&
				    b.device_bytes <= 2 * best + (64u << 20)) {
					memcpy(out, cand, s->vars_len * sizeof *out);
					return 0;
				}
			}
		}
	return kf_err_set(err, KF_ENOTFOUND,
			  "no size near sizes[%zu] satisfies the constraints and "
			  "is not already listed",
			  base);
}

/* --- inputs ------------------------------------------------------------ */

uint64_t spec_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static double u01(uint64_t key, uint64_t ctr)
{
	/* 53 random bits -> [0, 1). */
	return (double)(spec_mix64(key ^ spec_mix64(ctr)) >> 11) * 0x1p-53;
}

struct fill_job {
	const struct spec_tensor *t;
	uint64_t key;
	int64_t init_max;
	void *buf;
	uint64_t lo, hi; /* lo is even, so Box-Muller pairs never straddle jobs */
};

static void fill_range(const struct fill_job *f)
{
	const struct spec_tensor *t = f->t;
	uint64_t key = f->key;
	int64_t init_max = f->init_max;
	void *buf = f->buf;
	int is_float = dtype_is_float(t->dtype);
	int is_unsigned = t->dtype == KF_DT_U8;
	for (uint64_t i = f->lo; i < f->hi; i++) {
		double v;
		switch (t->init) {
		case SPEC_INIT_NORMAL:
			if (is_float) {
				/* Box-Muller on the counters of pair i/2: its cosine
				 * for even i, its sine for odd i (one pair of
				 * transcendentals per two elements). */
				uint64_t j = i & ~1ull;
				double a = u01(key, j), b = u01(key, j + 1);
				double r = sqrt(-2.0 * log(1.0 - a)), th = 6.283185307179586 * b;
				v = r * cos(th);
				if (i + 1 < f->hi && !(i & 1)) {
					dtype_store(t->dtype, buf, (size_t)i, v);
					i++;
					v = r * sin(th);
				} else if (i & 1) {
					v = r * sin(th);
				}
			} else {
				v = floor(u01(key, i) * 17.0) - (is_unsigned ? 0 : 8);
			}
			break;
		case SPEC_INIT_UNIFORM:
			v = is_float ? 2.0 * u01(key, i) - 1.0
				     : floor(u01(key, i) * 128.0) - (is_unsigned ? 0 : 64);
			break;
		case SPEC_INIT_UNIFORM01:
			v = is_float ? u01(key, i) : floor(u01(key, i) * 2.0);
			break;
		case SPEC_INIT_POSITIVE:
			v = is_float ? 0.5 + u01(key, i) : 1.0 + floor(u01(key, i) * 8.0);
			break;
		case SPEC_INIT_ONES: v = 1.0; break;
		case SPEC_INIT_ARANGE: v = (double)(i % 128); break;
		case SPEC_INIT_INDEX:
		default: v = floor(u01(key, i) * (double)(init_max > 0 ? init_max : 1)); break;
		}
		dtype_store(t->dtype, buf, (size_t)i, v);
	}
}

static void *fill_thread(void *arg)
{
	fill_range(arg);
	return NULL;
}

#define FILL_THREADS_MAX  8
#define FILL_PARALLEL_MIN (1u << 20) /* elements */

void spec_fill(const struct spec_tensor *t, size_t tensor_index, uint64_t seed, int64_t init_max,
	       void *buf, uint64_t elems)
{
	uint64_t key = spec_mix64(seed ^ spec_mix64(0x74656e736f72ull + tensor_index));
	struct fill_job jobs[FILL_THREADS_MAX];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int n = elems < FILL_PARALLEL_MIN ? 1
		: cpus > FILL_THREADS_MAX ? FILL_THREADS_MAX
		: cpus > 1		  ? (int)cpus
					  : 1;
	uint64_t chunk = ((elems + (uint64_t)n - 1) / (uint64_t)n + 1) & ~1ull;
	pthread_t th[FILL_THREADS_MAX];
	int started[FILL_THREADS_MAX] = {0};
	for (int k = 0; k < n; k++) {
		uint64_t lo = (uint64_t)k * chunk, hi = lo + chunk;
		jobs[k] = (struct fill_job){
			t, key, init_max, buf, lo < elems ? lo : elems, hi < elems ? hi : elems};
		if (k > 0)
			started[k] = pthread_create(&th[k], NULL, fill_thread, &jobs[k]) == 0;
	}
	fill_range(&jobs[0]);
	for (int k = 1; k < n; k++) {
		if (started[k])
			pthread_join(th[k], NULL);
		else
			fill_range(&jobs[k]);
	}
}

void spec_default_tolerance(enum kf_dtype dt, double *atol, double *rtol)
{
	switch (dt) {
	case KF_DT_F32:
		*atol = 1e-4;
		*rtol = 1e-4;
		break;
	case KF_DT_F16:
		*atol = 1e-2;
		*rtol = 1e-2;
		break;
	case KF_DT_BF16:
		*atol = 2e-2;
		*rtol = 2e-2;
		break;
	case KF_DT_F64:
		*atol = 1e-10;
		*rtol = 1e-10;
		break;
	default:
		*atol = 0;
		*rtol = 0;
		break;
	}
}
