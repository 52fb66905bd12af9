/* spec_launch: the parts of spec_parse that describe what runs: launch
 * lists (grid, block, shared memory, arguments), kernel sources, the
 * reference, the baseline, the tolerance, the cost formulas and the
 * constraints. Every expression is parsed here and bound in spec_bind.c. */
#include "sandbox/spec/spec.h"
#include "sandbox/spec/spec_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		return spec_parse_expr(s, v, path, &out[0], err);
	}
	if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > 3)
		return kf_err_set(err, KF_EINVAL,
				  "%s: must be a list of 1 to 3 integer expressions, "
				  "such as [\"ceil_div(N, 256)\"]",
				  path);
	*len = json_array_size(v);
	for (size_t k = 0; k < *len; k++) {
		char p2[SPEC_PATH_MAX_LEN * 2];
		snprintf(p2, sizeof p2, "%s[%zu]", path, k);
		int rc = spec_parse_expr(s, json_array_get(v, k), p2, &out[k], err);
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
		return spec_parse_expr(s, v, path, &a->expr, err);
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
	int rc = spec_parse_expr(s, tmp, path, &a->expr, &local);
	json_decref(tmp);
	if (rc) {
		/* A bare unknown name is most likely a typo of a tensor name. */
		if (rc != KF_ENOMEM && spec_valid_name(buf))
			return kf_err_set(err, KF_EINVAL,
					  "%s: '%s' is not a tensor, scalar or size of "
					  "the spec",
					  path, buf);
		return kf_err_set(err, rc, "%s", local.msg);
	}
	return 0;
}

int spec_parse_launch_list(struct spec *s, const json_t *v, const char *path,
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
	static const char *const KEYS[] = {"kernel", "grid", "block", "shared_bytes",
					   "args",   "when", NULL};
	for (size_t i = 0; i < n; i++) {
		char lp[SPEC_PATH_MAX_LEN], p2[SPEC_PATH_MAX_LEN * 2];
		snprintf(lp, sizeof lp, "%s[%zu]", path, i);
		const json_t *l = json_array_get(v, i);
		struct spec_launch *L = &ls[i];
		if (!json_is_object(l))
			return kf_err_set(err, KF_EINVAL,
					  "%s: must be an object {kernel, grid, block, args}", lp);
		int rc = spec_check_keys(l, lp, KEYS, err);
		if (rc)
			return rc;
		const json_t *k = json_object_get(l, "kernel");
		if (!json_is_string(k) || !spec_valid_name(json_string_value(k)))
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
		const json_t *when = json_object_get(l, "when");
		snprintf(p2, sizeof p2, "%s.when", lp);
		if (when && (rc = spec_parse_expr(s, when, p2, &L->when, err)))
			return rc;
		const json_t *sb = json_object_get(l, "shared_bytes");
		snprintf(p2, sizeof p2, "%s.shared_bytes", lp);
		if (sb)
			rc = spec_parse_expr(s, sb, p2, &L->shared_bytes, err);
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
		/* args_len only once args exists: spec_free walks args_len of them. */
		L->args = calloc(json_array_size(args) + 1, sizeof *L->args);
		if (!L->args)
			return kf_err_set(err, KF_ENOMEM, "out of memory");
		L->args_len = json_array_size(args);
		for (size_t a = 0; a < L->args_len; a++) {
			snprintf(p2, sizeof p2, "%s.args[%zu]", lp, a);
			if ((rc = parse_arg(s, json_array_get(args, a), p2, &L->args[a], err)))
				return rc;
		}
	}
	return 0;
}

int spec_parse_source(const json_t *v, const char *path, int required, char **out,
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

/* The built-in op's parameters (its scalar names) from params (borrowed,
 * may be NULL) or the spec's scalars of the same name; a parameter the op
 * does not have is refused. */
static int op_params(struct spec *s, const struct op_template *t, const json_t *params,
		     struct kf_err *err)
{
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
			return kf_err_set(err, KF_EINVAL, "reference.params.%s: must be a number",
					  n);
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

int spec_parse_reference(struct spec *s, const json_t *j,
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
		if ((rc = spec_check_keys(r, "reference", KEYS, err)))
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
		return op_params(s, t, params, err);
	}
	if (json_object_get(r, "source")) {
		static const char *const KEYS[] = {"source", "launch", NULL};
		if ((rc = spec_check_keys(r, "reference", KEYS, err)))
			return rc;
		s->ref.kind = SPEC_REF_CUDA;
		if ((rc = spec_parse_source(json_object_get(r, "source"), "reference.source", 1,
					    &s->ref.source, err)))
			return rc;
		return spec_parse_launch_list(s, json_object_get(r, "launch"), "reference.launch",
					      &s->ref.launch, &s->ref.launch_len, err);
	}
	static const char *const KEYS[] = {"torch", NULL};
	if ((rc = spec_check_keys(r, "reference", KEYS, err)))
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
	return spec_parse_launch_list(s, j, path, out, len, err);
}

int spec_parse_baseline(struct spec *s, const json_t *j, struct kf_err *err)
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
	if ((rc = spec_check_keys(b, "baseline", KEYS, err)))
		return rc;
	if (json_object_get(b, "source")) {
		s->baseline.kind = SPEC_BASE_CUDA;
		if ((rc = spec_parse_source(json_object_get(b, "source"), "baseline.source", 1,
					    &s->baseline.source, err)))
			return rc;
	} else {
		s->baseline.kind = SPEC_BASE_FATBIN;
	}
	return spec_parse_launch_list(s, json_object_get(b, "launch"), "baseline.launch",
				      &s->baseline.launch, &s->baseline.launch_len, err);
}

int spec_parse_tolerance(struct spec *s, const json_t *j, struct kf_err *err)
{
	const json_t *t = json_object_get(j, "tolerance");
	if (!t)
		return 0;
	static const char *const KEYS[] = {"atol", "rtol", NULL};
	if (!json_is_object(t))
		return kf_err_set(err, KF_EINVAL,
				  "tolerance: must be {\"atol\": number, \"rtol\": number}");
	int rc = spec_check_keys(t, "tolerance", KEYS, err);
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

int spec_parse_cost(struct spec *s, const json_t *j, struct kf_err *err)
{
	const json_t *c = json_object_get(j, "cost");
	if (!c)
		return 0;
	static const char *const KEYS[] = {"bytes", "flops", NULL};
	if (!json_is_object(c))
		return kf_err_set(err, KF_EINVAL,
				  "cost: must be {\"bytes\": expr, \"flops\": expr}");
	int rc = spec_check_keys(c, "cost", KEYS, err);
	if (rc)
		return rc;
	if (json_object_get(c, "bytes") &&
	    (rc = spec_parse_expr(s, json_object_get(c, "bytes"), "cost.bytes", &s->cost_bytes,
				  err)))
		return rc;
	if (json_object_get(c, "flops") &&
	    (rc = spec_parse_expr(s, json_object_get(c, "flops"), "cost.flops", &s->cost_flops,
				  err)))
		return rc;
	return 0;
}

int spec_parse_constraints(struct spec *s, const json_t *j, struct kf_err *err)
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
		char p[SPEC_PATH_MAX_LEN];
		snprintf(p, sizeof p, "constraints[%zu]", i);
		int rc = spec_parse_expr(s, json_array_get(c, i), p,
					 &s->constraints[s->constraints_len], err);
		if (rc)
			return rc;
		s->constraints_len++;
	}
	return 0;
}
