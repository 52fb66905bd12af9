/* spec: the kernel spec parser and validator; see spec.h.
 * Parsing walks the JSON once, turning every expression into a parsed expr
 * and checking that it names only size variables; then every row of sizes is
 * bound (shapes, overflow, caps, constraints, launch dimensions), so a spec
 * that parses can run at every size it lists. This file: helpers, sizes,
 * tensors, scalars and the top level; launch lists, reference, baseline,
 * tolerance, cost and constraints are in spec_launch.c, binding and the odd
 * size in spec_bind.c, input values in spec_fill.c (internals: spec_int.h). */
#include "sandbox/spec/spec.h"
#include "sandbox/spec/spec_int.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- small helpers ----------------------------------------------------- */

int spec_valid_name(const char *s)
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
int spec_check_keys(const json_t *obj, const char *path, const char *const *known,
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
int spec_parse_expr(const struct spec *s, const json_t *v, const char *path, struct expr **out,
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
	expr_free(l->when);
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
		if (!spec_valid_name(key))
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
	char path[SPEC_PATH_MAX_LEN];
	snprintf(path, sizeof path, "tensors.%s", name);
	static const char *const KEYS[] = {"dtype", "shape", "role", "init", "init_max", NULL};
	if (!json_is_object(t))
		return kf_err_set(err, KF_EINVAL, "%s: must be an object with dtype, shape, role",
				  path);
	int rc = spec_check_keys(t, path, KEYS, err);
	if (rc)
		return rc;
	char p2[SPEC_PATH_MAX_LEN * 2];
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
		if ((rc = spec_parse_expr(s, json_array_get(sh, d), p2, &out->shape[d], err)))
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
		if ((rc = spec_parse_expr(s, im, p2, &out->init_max_expr, err)))
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
		if (!spec_valid_name(key))
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
		char path[SPEC_PATH_MAX_LEN], p2[SPEC_PATH_MAX_LEN * 2];
		snprintf(path, sizeof path, "scalars.%s", key);
		if (!spec_valid_name(key))
			return kf_err_set(err, KF_EINVAL, "scalars: '%s' is not a valid name", key);
		if (spec_var_index(s, key) >= 0 || spec_tensor_index(s, key) >= 0)
			return kf_err_set(err, KF_EINVAL, "%s: the name is also a size or a tensor",
					  path);
		if (!json_is_object(v))
			return kf_err_set(err, KF_EINVAL, "%s: must be an object {dtype, value}",
					  path);
		int rc = spec_check_keys(v, path, KEYS, err);
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
	int rc = spec_check_keys(j, "spec", KEYS, err);
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
		if (!s->op) {
			rc = kf_err_set(err, KF_ENOMEM, "out of memory");
			goto out;
		}
		const json_t *dt = json_object_get(j, "dtype");
		if (dt && (rc = parse_dtype(dt, "dtype", &s->op_dtype, err)))
			goto out;
	}
	if ((rc = spec_parse_source(json_object_get(j, "source"), "source", 1, &s->source, err)))
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
		if (!s->arch) { /* NULL would mean "the local GPU's" */
			rc = kf_err_set(err, KF_ENOMEM, "out of memory");
			goto out;
		}
	}
	if ((rc = parse_sizes(s, j, err)) || (rc = parse_tensors(s, j, err)) ||
	    (rc = parse_scalars(s, j, err)))
		goto out;
	if ((rc = spec_parse_launch_list(s, json_object_get(j, "launch"), "launch", &s->launch,
					 &s->launch_len, err)))
		goto out;
	if ((rc = spec_parse_reference(s, j, find, err)) || (rc = spec_parse_baseline(s, j, err)) ||
	    (rc = spec_parse_tolerance(s, j, err)) || (rc = spec_parse_cost(s, j, err)) ||
	    (rc = spec_parse_constraints(s, j, err)))
		goto out;
	for (size_t r = 0; r < s->sizes_len; r++) {
		char where[32];
		struct spec_bound b;
		snprintf(where, sizeof where, "sizes[%zu]", r);
		const int64_t *vals = &s->sizes[r * s->vars_len];
		if ((rc = spec_bind(s, vals, lim, where, &b, err)) ||
		    (rc = spec_check_launches_at(s, vals, where, err)))
			goto out;
	}
	*out = s;
	return 0;
out:
	spec_free(s);
	return rc;
}
