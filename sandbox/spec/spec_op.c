/* spec_op: the op shorthand (spec_expand_op) and spec_parse_text, kept
 * apart from spec.c so that kforge-harness, which parses only expanded
 * specs, links neither the op templates nor their float64 references. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/str.h"
#include "sandbox/spec/spec.h"

/* Whether jansson failed for memory: it says so, or it failed before
 * reading a byte (an allocation in its set-up leaves no error text). */
static int oom(const json_error_t *je)
{
	return json_error_code(je) == json_error_out_of_memory || je->text[0] == '\0';
}

/* --- op shorthand ------------------------------------------------------ */

int spec_expand_op(const json_t *in, const struct op_template *(*find)(const char *name),
		   json_t **out, struct kf_err *err)
{
	*out = NULL;
	const json_t *op = json_is_object(in) ? json_object_get(in, "op") : NULL;
	if (!op || json_object_get(in, "tensors")) {
		*out = json_incref((json_t *)in);
		return 0;
	}
	if (!json_is_string(op))
		return kf_err_set(err, KF_EINVAL, "op: must be the name of a built-in op");
	const char *name = json_string_value(op);
	const struct op_template *t = find ? find(name) : NULL;
	if (!t) {
		char list[512] = "";
		size_t n = 0;
		for (size_t i = 0; find && i < op_count() && n < sizeof list; i++)
			n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "",
					      op_at(i)->name);
		return kf_err_set(err, KF_EINVAL, "op: '%s' is not a built-in op (known: %s)", name,
				  n ? list : "none");
	}
	const json_t *dt = json_object_get(in, "dtype");
	if (!json_is_string(dt) || dtype_parse(json_string_value(dt)) < 0)
		return kf_err_set(err, KF_EINVAL,
				  "dtype: the op shorthand needs \"dtype\" (f32, f16, "
				  "bf16, ...)");
	const char *dts = json_string_value(dt);
	/* $dtype: the dtype's name; $esize: its size in bytes (launch shapes
	 * that depend on the bytes a thread moves) */
	char esize[24];
	snprintf(esize, sizeof esize, "%zu", dtype_bytes((enum kf_dtype)dtype_parse(dts)));
	char *named = str_replace_all(t->spec_json, "$dtype", dts);
	char *text = named ? str_replace_all(named, "$esize", esize) : NULL;
	free(named);
	if (!text)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	json_error_t je;
	json_t *tpl = json_loads(text, 0, &je);
	free(text);
	if (!tpl && oom(&je))
		return kf_err_set(err, KF_ENOMEM, "op '%s': out of memory reading its template",
				  name);
	if (!tpl)
		return kf_err_set(err, KF_EINTERNAL, "op '%s': template JSON is invalid: %s", name,
				  je.text);
	int rc = 0;
	json_t *o = json_deep_copy(in);
	if (!o) {
		rc = kf_err_set(err, KF_ENOMEM, "out of memory");
		goto out;
	}
	const json_t *allowed = json_object_get(tpl, "dtypes");
	if (json_is_array(allowed)) {
		int ok = 0;
		size_t i;
		json_t *v;
		json_array_foreach(allowed, i, v)
			ok |= json_is_string(v) && strcmp(json_string_value(v), dts) == 0;
		if (!ok) {
			char list[128] = "";
			size_t n = 0;
			json_array_foreach(allowed, i, v)
				if (json_is_string(v))
					n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
							      n ? ", " : "", json_string_value(v));
			rc = kf_err_set(err, KF_EINVAL,
					"dtype: '%s' is not supported by op '%s' "
					"(supported: %s)",
					dts, name, list);
			goto out;
		}
	}
	/* "cost" may be per dtype ({"bf16": {"bytes": ...}}), like "tolerance". */
	/* Every set is checked: one lost for memory would change the spec. */
	int set_failed = 0;
	json_t *cost = json_object_get(tpl, "cost");
	if (json_is_object(cost) && json_object_get(cost, dts))
		set_failed |= json_object_set(tpl, "cost", json_object_get(cost, dts));
	else if (json_is_object(cost) && !json_object_get(cost, "bytes") &&
		 !json_object_get(cost, "flops"))
		json_object_del(tpl, "cost");
	static const char *const COPY[] = {"tensors", "scalars",  "constraints",
					   "cost",    "baseline", NULL};
	for (const char *const *k = COPY; *k; k++) {
		json_t *v = json_object_get(tpl, *k);
		if (v && !json_object_get(o, *k))
			set_failed |= json_object_set(o, *k, v);
	}
	if (!json_object_get(o, "sizes") && json_object_get(tpl, "default_sizes"))
		set_failed |= json_object_set(o, "sizes", json_object_get(tpl, "default_sizes"));
	if (!json_object_get(o, "tolerance")) {
		json_t *tol = json_object_get(tpl, "tolerance");
		json_t *td = tol ? json_object_get(tol, dts) : NULL;
		if (td)
			set_failed |= json_object_set(o, "tolerance", td);
		else if (tol && json_object_get(tol, "atol"))
			set_failed |= json_object_set(o, "tolerance", tol);
	}
	if (!json_object_get(o, "reference"))
		set_failed |= json_object_set_new(o, "reference", json_pack("{s:s}", "op", name));
	if (set_failed) {
		rc = kf_err_set(err, KF_ENOMEM, "op '%s': out of memory expanding it", name);
		goto out;
	}
	*out = o;
	o = NULL;
out:
	json_decref(o);
	json_decref(tpl);
	return rc;
}

int spec_parse_text(const char *text, size_t len, const struct spec_limits *lim,
		    const struct op_template *(*find)(const char *name), struct spec **out,
		    struct kf_err *err)
{
	*out = NULL;
	if (len > SPEC_MAX_SOURCE_BYTES * 3ull)
		return kf_err_set(err, KF_ETOOBIG, "spec: %zu bytes, at most %u", len,
				  SPEC_MAX_SOURCE_BYTES * 3u);
	json_error_t je;
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!j && oom(&je))
		return kf_err_set(err, KF_ENOMEM, "spec: out of memory reading the JSON");
	if (!j)
		return kf_err_set(err, KF_EINVAL, "spec: invalid JSON at line %d column %d: %s",
				  je.line, je.column, je.text);
	json_t *x = NULL;
	int rc = spec_expand_op(j, find, &x, err);
	if (!rc)
		rc = spec_parse(x, lim, find, out, err);
	json_decref(x);
	json_decref(j);
	return rc;
}
