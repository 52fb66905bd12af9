/* schema: the JSON-Schema-subset checker and validator; see schema.h.
 * Parsing checks every keyword once, so validation can trust the document's
 * shape and walks it without re-checking. Paths in messages are built in a
 * fixed buffer; a path longer than it is cut, never overflowed. */
#include "server/mcp/schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_MAX_BYTES 200

struct schema {
	json_t *doc;
};

static const char *const TYPE_NAMES[] = {"integer", "number", "string", "boolean",
					 "object",  "array",  "null"};

static const char *const ANNOTATIONS[] = {"$schema",	 "$id",	      "$comment", "title",
					  "description", "default",   "examples", "deprecated",
					  "readOnly",	 "writeOnly", "format"};

static int is_type_name(const char *s)
{
	for (size_t i = 0; i < sizeof(TYPE_NAMES) / sizeof(TYPE_NAMES[0]); i++)
		if (strcmp(s, TYPE_NAMES[i]) == 0)
			return 1;
	return 0;
}

static int is_annotation(const char *s)
{
	for (size_t i = 0; i < sizeof(ANNOTATIONS) / sizeof(ANNOTATIONS[0]); i++)
		if (strcmp(s, ANNOTATIONS[i]) == 0)
			return 1;
	return 0;
}

/* Appends a printf-style segment to path (of PATH_MAX_BYTES); returns the
 * old length so the caller can cut it back. */
static size_t path_push(char *path, const char *fmt, const char *s, size_t i)
{
	size_t n = strlen(path);

	if (n < PATH_MAX_BYTES - 1) {
		if (s)
			snprintf(path + n, PATH_MAX_BYTES - n, fmt, s);
		else
			snprintf(path + n, PATH_MAX_BYTES - n, fmt, i);
	}
	return n;
}

static int is_count(const json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) >= 0;
}

static int check_schema(json_t *root, json_t *s, char *path, struct kf_err *err);

/* Resolves "#/$defs/NAME" against root; returns the schema or NULL. */
static json_t *resolve_ref(const json_t *root, const json_t *ref)
{
	const char *r = json_string_value(ref);

	if (!r || strncmp(r, "#/$defs/", 8) != 0)
		return NULL;
	return json_object_get(json_object_get(root, "$defs"), r + 8);
}

static int check_keyword(json_t *root, const char *key, json_t *v, char *path, struct kf_err *err)
{
	int rc = 0;
	size_t mark;

	if (strcmp(key, "type") == 0) {
		if (json_is_string(v)) {
			if (!is_type_name(json_string_value(v)))
				return kf_err_set(
					err, KF_EINVAL,
					"%s.type: unknown type '%s' (use integer, number, string, boolean, object, array or null)",
					path, json_string_value(v));
			return 0;
		}
		if (!json_is_array(v) || json_array_size(v) == 0)
			return kf_err_set(
				err, KF_EINVAL,
				"%s.type: expected a type name or a non-empty array of them", path);
		for (size_t i = 0; i < json_array_size(v); i++) {
			json_t *t = json_array_get(v, i);
			if (!json_is_string(t) || !is_type_name(json_string_value(t)))
				return kf_err_set(
					err, KF_EINVAL,
					"%s.type[%zu]: expected a type name (integer, number, string, boolean, object, array, null)",
					path, i);
		}
		return 0;
	}
	if (strcmp(key, "properties") == 0) {
		const char *name;
		json_t *sub;

		if (!json_is_object(v))
			return kf_err_set(err, KF_EINVAL,
					  "%s.properties: expected an object of schemas", path);
		json_object_foreach(v, name, sub) {
			mark = path_push(path, ".properties.%s", name, 0);
			rc = check_schema(root, sub, path, err);
			path[mark] = '\0';
			if (rc)
				return rc;
		}
		return 0;
	}
	if (strcmp(key, "required") == 0) {
		if (!json_is_array(v))
			return kf_err_set(err, KF_EINVAL,
					  "%s.required: expected an array of property names", path);
		for (size_t i = 0; i < json_array_size(v); i++)
			if (!json_is_string(json_array_get(v, i)))
				return kf_err_set(
					err, KF_EINVAL,
					"%s.required[%zu]: expected a property name (string)", path,
					i);
		return 0;
	}
	if (strcmp(key, "enum") == 0) {
		if (!json_is_array(v) || json_array_size(v) == 0)
			return kf_err_set(err, KF_EINVAL,
					  "%s.enum: expected a non-empty array of values", path);
		return 0;
	}
	if (strcmp(key, "minimum") == 0 || strcmp(key, "maximum") == 0) {
		if (!json_is_number(v))
			return kf_err_set(err, KF_EINVAL, "%s.%s: expected a number", path, key);
		return 0;
	}
	if (strcmp(key, "minLength") == 0 || strcmp(key, "maxLength") == 0 ||
	    strcmp(key, "minItems") == 0 || strcmp(key, "maxItems") == 0) {
		if (!is_count(v))
			return kf_err_set(err, KF_EINVAL, "%s.%s: expected a non-negative integer",
					  path, key);
		return 0;
	}
	if (strcmp(key, "items") == 0) {
		mark = path_push(path, ".items", "", 0);
		rc = check_schema(root, v, path, err);
		path[mark] = '\0';
		return rc;
	}
	if (strcmp(key, "additionalProperties") == 0) {
		if (json_is_boolean(v))
			return 0;
		mark = path_push(path, ".additionalProperties", "", 0);
		rc = check_schema(root, v, path, err);
		path[mark] = '\0';
		return rc;
	}
	if (strcmp(key, "$defs") == 0) {
		const char *name;
		json_t *sub;

		if (!json_is_object(v))
			return kf_err_set(err, KF_EINVAL, "%s.$defs: expected an object of schemas",
					  path);
		json_object_foreach(v, name, sub) {
			mark = path_push(path, ".$defs.%s", name, 0);
			rc = check_schema(root, sub, path, err);
			path[mark] = '\0';
			if (rc)
				return rc;
		}
		return 0;
	}
	if (strcmp(key, "$ref") == 0) {
		if (!resolve_ref(root, v))
			return kf_err_set(
				err, KF_EINVAL,
				"%s.$ref: only local references \"#/$defs/NAME\" to an existing definition are supported",
				path);
		return 0;
	}
	if (is_annotation(key))
		return 0;
	return kf_err_set(
		err, KF_EINVAL,
		"%s: unsupported keyword '%s' (the validator knows type, $defs, $ref, properties, required, enum, minimum, maximum, minLength, maxLength, items, additionalProperties, minItems, maxItems)",
		path, key);
}

static int check_schema(json_t *root, json_t *s, char *path, struct kf_err *err)
{
	const char *key;
	json_t *v;
	int rc;

	if (!json_is_object(s))
		return kf_err_set(err, KF_EINVAL, "%s: expected a schema object", path);
	json_object_foreach(s, key, v) {
		rc = check_keyword(root, key, v, path, err);
		if (rc)
			return rc;
	}
	v = json_object_get(s, "minimum");
	if (v && json_object_get(s, "maximum") &&
	    json_number_value(v) > json_number_value(json_object_get(s, "maximum")))
		return kf_err_set(err, KF_EINVAL, "%s: minimum is above maximum", path);
	return 0;
}

int schema_from_json(json_t *doc, struct schema **out, struct kf_err *err)
{
	char path[PATH_MAX_BYTES] = "schema";
	struct schema *s;
	int rc;

	*out = NULL;
	rc = check_schema(doc, doc, path, err);
	if (rc)
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s)
		return kf_err_set(err, KF_ENOMEM, "schema: out of memory");
	s->doc = json_incref(doc);
	*out = s;
	return 0;
}

int schema_parse(const char *text, struct schema **out, struct kf_err *err)
{
	json_error_t jerr;
	json_t *doc;
	int rc;

	*out = NULL;
	if (!text)
		return kf_err_set(err, KF_EINVAL, "schema: no text");
	doc = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return kf_err_set(err, KF_EINVAL, "schema: not valid JSON at line %d column %d: %s",
				  jerr.line, jerr.column, jerr.text);
	rc = schema_from_json(doc, out, err);
	json_decref(doc);
	return rc;
}

void schema_free(struct schema *s)
{
	if (!s)
		return;
	json_decref(s->doc);
	free(s);
}

json_t *schema_json(const struct schema *s)
{
	return s->doc;
}

/* --- validation ---------------------------------------------------------- */

static const char *value_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

static int type_matches(const char *t, const json_t *v)
{
	if (strcmp(t, "integer") == 0) {
		if (json_is_integer(v))
			return 1;
		if (json_is_real(v)) {
			double d = json_real_value(v);
			return isfinite(d) && d == floor(d);
		}
		return 0;
	}
	if (strcmp(t, "number") == 0)
		return json_is_number(v);
	if (strcmp(t, "string") == 0)
		return json_is_string(v);
	if (strcmp(t, "boolean") == 0)
		return json_is_boolean(v);
	if (strcmp(t, "object") == 0)
		return json_is_object(v);
	if (strcmp(t, "array") == 0)
		return json_is_array(v);
	return json_is_null(v);
}

static size_t utf8_len(const char *s, size_t bytes)
{
	size_t n = 0;

	for (size_t i = 0; i < bytes; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			n++;
	return n;
}

/* Writes a short rendering of v into buf for messages. */
static void show(const json_t *v, char *buf, size_t cap)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	snprintf(buf, cap, "%s", s ? s : "?");
	if (s && strlen(s) >= cap && cap > 4)
		memcpy(buf + cap - 4, "...", 4);
	free(s);
}

static int values_equal(const json_t *a, const json_t *b)
{
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	return json_equal((json_t *)a, (json_t *)b);
}

static int validate(const json_t *root, const json_t *s, const json_t *v, char *path,
		    struct kf_err *err);

static int validate_type(const json_t *s, const json_t *v, const char *path, struct kf_err *err)
{
	json_t *t = json_object_get(s, "type");
	char want[128] = "";

	if (!t)
		return 0;
	if (json_is_string(t)) {
		if (type_matches(json_string_value(t), v))
			return 0;
		return kf_err_set(err, KF_EINVAL, "%s: expected %s, got %s", path,
				  json_string_value(t), value_type(v));
	}
	for (size_t i = 0; i < json_array_size(t); i++) {
		const char *name = json_string_value(json_array_get(t, i));
		size_t n = strlen(want);
		if (type_matches(name, v))
			return 0;
		snprintf(want + n, sizeof(want) - n, "%s%s", i ? " or " : "", name);
	}
	return kf_err_set(err, KF_EINVAL, "%s: expected %s, got %s", path, want, value_type(v));
}

static int validate_enum(const json_t *e, const json_t *v, const char *path, struct kf_err *err)
{
	char got[64], list[160] = "";

	for (size_t i = 0; i < json_array_size(e); i++)
		if (values_equal(json_array_get(e, i), v))
			return 0;
	for (size_t i = 0; i < json_array_size(e); i++) {
		char one[64];
		size_t n = strlen(list);
		show(json_array_get(e, i), one, sizeof(one));
		if (n + strlen(one) + 8 >= sizeof(list)) {
			snprintf(list + n, sizeof(list) - n, ", ...");
			break;
		}
		snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", one);
	}
	show(v, got, sizeof(got));
	return kf_err_set(err, KF_EINVAL, "%s: %s is not one of %s", path, got, list);
}

static int validate_object(const json_t *root, const json_t *s, const json_t *v, char *path,
			   struct kf_err *err)
{
	json_t *props = json_object_get(s, "properties");
	json_t *req = json_object_get(s, "required");
	json_t *addl = json_object_get(s, "additionalProperties");
	const char *key;
	json_t *sub;
	size_t mark;
	int rc;

	for (size_t i = 0; i < json_array_size(req); i++) {
		const char *name = json_string_value(json_array_get(req, i));
		if (!json_object_get(v, name))
			return kf_err_set(err, KF_EINVAL, "%s: missing required property '%s'",
					  path, name);
	}
	json_object_foreach((json_t *)v, key, sub) {
		json_t *ps = props ? json_object_get(props, key) : NULL;
		if (!ps) {
			if (json_is_false(addl)) {
				char known[160] = "";
				const char *pk;
				json_t *pv;
				json_object_foreach(props, pk, pv) {
					size_t n = strlen(known);
					(void)pv;
					if (n + strlen(pk) + 8 >= sizeof(known)) {
						snprintf(known + n, sizeof(known) - n, ", ...");
						break;
					}
					snprintf(known + n, sizeof(known) - n, "%s%s",
						 n ? ", " : "", pk);
				}
				return kf_err_set(err, KF_EINVAL,
						  "%s: unknown property '%s' (allowed: %s)", path,
						  key, known[0] ? known : "none");
			}
			if (!json_is_object(addl))
				continue;
			ps = addl;
		}
		mark = path_push(path, ".%s", key, 0);
		rc = validate(root, ps, sub, path, err);
		path[mark] = '\0';
		if (rc)
			return rc;
	}
	return 0;
}

static int validate_array(const json_t *root, const json_t *s, const json_t *v, char *path,
			  struct kf_err *err)
{
	json_t *items = json_object_get(s, "items");
	json_t *lim;
	size_t n = json_array_size(v), mark;
	int rc;

	lim = json_object_get(s, "minItems");
	if (lim && n < (size_t)json_integer_value(lim))
		return kf_err_set(err, KF_EINVAL, "%s: expected at least %lld items, got %zu", path,
				  (long long)json_integer_value(lim), n);
	lim = json_object_get(s, "maxItems");
	if (lim && n > (size_t)json_integer_value(lim))
		return kf_err_set(err, KF_EINVAL, "%s: expected at most %lld items, got %zu", path,
				  (long long)json_integer_value(lim), n);
	if (!items)
		return 0;
	for (size_t i = 0; i < n; i++) {
		mark = path_push(path, "[%zu]", NULL, i);
		rc = validate(root, items, json_array_get(v, i), path, err);
		path[mark] = '\0';
		if (rc)
			return rc;
	}
	return 0;
}

static int validate(const json_t *root, const json_t *s, const json_t *v, char *path,
		    struct kf_err *err)
{
	json_t *k;
	int rc;

	k = json_object_get(s, "$ref");
	if (k) {
		/* Resolved at parse time; the depth cap stops a $ref cycle. */
		static __thread int ref_depth;
		const json_t *t = resolve_ref(root, k);
		if (!t || ref_depth >= 32)
			return kf_err_set(err, KF_EINVAL, "%s: unresolvable or cyclic $ref", path);
		ref_depth++;
		rc = validate(root, t, v, path, err);
		ref_depth--;
		if (rc)
			return rc;
	}

	rc = validate_type(s, v, path, err);
	if (rc)
		return rc;
	k = json_object_get(s, "enum");
	if (k && (rc = validate_enum(k, v, path, err)))
		return rc;
	if (json_is_number(v)) {
		double d = json_number_value(v);
		k = json_object_get(s, "minimum");
		if (k && d < json_number_value(k))
			return kf_err_set(err, KF_EINVAL, "%s: %g is below the minimum %g", path, d,
					  json_number_value(k));
		k = json_object_get(s, "maximum");
		if (k && d > json_number_value(k))
			return kf_err_set(err, KF_EINVAL, "%s: %g is above the maximum %g", path, d,
					  json_number_value(k));
	}
	if (json_is_string(v)) {
		size_t n = utf8_len(json_string_value(v), json_string_length(v));
		k = json_object_get(s, "minLength");
		if (k && n < (size_t)json_integer_value(k))
			return kf_err_set(err, KF_EINVAL,
					  "%s: expected at least %lld characters, got %zu", path,
					  (long long)json_integer_value(k), n);
		k = json_object_get(s, "maxLength");
		if (k && n > (size_t)json_integer_value(k))
			return kf_err_set(err, KF_EINVAL,
					  "%s: expected at most %lld characters, got %zu", path,
					  (long long)json_integer_value(k), n);
	}
	if (json_is_object(v))
		return validate_object(root, s, v, path, err);
	if (json_is_array(v))
		return validate_array(root, s, v, path, err);
	return 0;
}

int schema_validate(const struct schema *s, const json_t *value, const char *root,
		    struct kf_err *err)
{
	char path[PATH_MAX_BYTES];

	snprintf(path, sizeof(path), "%s", root ? root : "value");
	if (!value)
		return kf_err_set(err, KF_EINVAL, "%s: missing", path);
	return validate(s->doc, s->doc, value, path, err);
}
