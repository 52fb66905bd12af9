/* cli_opts: command-line options read through the called tool's
 * inputSchema (see cli_opts.h). The schema is the one the server validates
 * against, looked up in the registry at parse and help time, never copied:
 * the CLI states an option's spelling and the property it fills, nothing
 * the schema already says. */
#include "server/cli/cli_opts.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/app.h"
#include "server/cli/cli.h"
#include "server/mcp/schema.h"
#include "server/mcp/tools.h"

#define PROP_KEY_MAX  64 /* one segment of a dotted property path */
#define HELP_COL_MAX  24 /* the widest option column before help wraps below it */
#define HELP_WIDTH    79
#define ALLOWED_BYTES 256
/* Items of one a,b,c value: a cap on what the CLI splits; the schema's
 * maxItems is the limit that applies. */
#define CSV_ITEMS_MAX 256

/* The inputSchema document of tool (borrowed from the registry, valid until
 * the next tools_load), loading the daemon's registry when none is. */
static const json_t *tool_doc(const char *tool, struct kf_err *err)
{
	const struct tool_def *t;

	if (tools_count() == 0 && app_tools_load(0, err))
		return NULL;
	t = tools_find(tool);
	if (!t) {
		kf_err_set(err, KF_EINVAL, "tool '%s' is not registered", tool);
		return NULL;
	}
	return schema_json(tools_input_schema(t));
}

/* The schema of the property at the dotted path prop ("replay.seed"), or
 * NULL when the document has none. Borrowed from doc. */
static const json_t *prop_schema(const json_t *doc, const char *prop)
{
	const json_t *s = doc;
	char key[PROP_KEY_MAX];

	for (const char *p = prop; s && *p;) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		if (n == 0 || n >= sizeof(key))
			return NULL;
		memcpy(key, p, n);
		key[n] = '\0';
		s = json_object_get(json_object_get(s, "properties"), key);
		p = dot ? dot + 1 : p + n;
	}
	return s;
}

/* The schema of opt's property, or NULL with err naming the table's fault. */
static const json_t *opt_schema(const struct cli_opts *o, const struct cli_opt *opt,
				struct kf_err *err)
{
	const json_t *doc = tool_doc(o->tool, err);
	const json_t *s = doc ? prop_schema(doc, opt->prop) : NULL;

	if (doc && !s)
		kf_err_set(err, KF_EINVAL, "%s: %s's inputSchema has no property '%s'", opt->name,
			   o->tool, opt->prop);
	return s;
}

/* 1 when schema's "type" is or lists name; an untyped schema is a string. */
static int has_type(const json_t *schema, const char *name)
{
	const json_t *t = json_object_get(schema, "type");
	size_t i;
	json_t *v;

	if (!t)
		return strcmp(name, "string") == 0;
	if (json_is_string(t))
		return strcmp(json_string_value(t), name) == 0;
	json_array_foreach(t, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), name) == 0)
			return 1;
	return 0;
}

/* A bound or default as the user types it: 60000, not 6e+04. */
static void num_text(double d, char *buf, size_t cap)
{
	if (d == floor(d) && fabs(d) < 1e15)
		snprintf(buf, cap, "%lld", (long long)d);
	else
		snprintf(buf, cap, "%g", d);
}

/* Appends "a, b, c" (sep between) of the enum's values to buf at *n. */
static void enum_text(const json_t *e, const char *sep, char *buf, size_t cap, size_t *n)
{
	size_t i;
	json_t *v;

	json_array_foreach(e, i, v) {
		char num[32];
		const char *s = json_string_value(v);
		if (!s) {
			num_text(json_number_value(v), num, sizeof(num));
			s = num;
		}
		if (*n < cap)
			*n += (size_t)snprintf(buf + *n, cap - *n, "%s%s", i ? sep : "", s);
	}
}

/* " from 1 to 20", " of at least 10", " of at most 500", " of exactly 16
 * characters", or "": lo and hi are the schema's two bound keywords, unit
 * follows each number. */
static void range_text(const json_t *schema, const char *lo, const char *hi, const char *unit,
		       char *buf, size_t cap)
{
	const json_t *a = json_object_get(schema, lo), *b = json_object_get(schema, hi);
	char x[32], y[32];

	num_text(json_number_value(a), x, sizeof(x));
	num_text(json_number_value(b), y, sizeof(y));
	if (a && b && strcmp(x, y) == 0)
		snprintf(buf, cap, " of exactly %s%s", x, unit);
	else if (a && b)
		snprintf(buf, cap, " from %s to %s%s", x, y, unit);
	else if (a)
		snprintf(buf, cap, " of at least %s%s", x, unit);
	else if (b)
		snprintf(buf, cap, " of at most %s%s", y, unit);
	else
		buf[0] = '\0';
}

const char *cli_opts_allowed(const json_t *schema, char *buf, size_t cap)
{
	const json_t *e = json_object_get(schema, "enum");
	char range[96];
	size_t n = 0;

	if (cap == 0)
		return buf;
	buf[0] = '\0';
	if (json_is_array(e)) {
		n = (size_t)snprintf(buf, cap, "one of ");
		enum_text(e, ", ", buf, cap, &n);
	} else if (has_type(schema, "integer") || has_type(schema, "number")) {
		range_text(schema, "minimum", "maximum", "", range, sizeof(range));
		snprintf(buf, cap, "%s%s", has_type(schema, "integer") ? "an integer" : "a number",
			 range);
	} else if (has_type(schema, "array") && !has_type(schema, "string")) {
		const json_t *items = json_object_get(schema, "items");
		char each[ALLOWED_BYTES / 2];
		range_text(schema, "minItems", "maxItems", " items", range, sizeof(range));
		snprintf(buf, cap, "a comma-separated list%s%s, each %s",
			 strncmp(range, " from ", 6) == 0 ? " of " : "",
			 strncmp(range, " from ", 6) == 0 ? range + 6 : range,
			 cli_opts_allowed(items, each, sizeof(each)));
	} else if (has_type(schema, "string")) {
		range_text(schema, "minLength", "maxLength", " characters", range, sizeof(range));
		if (strncmp(range, " from ", 6) == 0)
			snprintf(buf, cap, "a string of %s", range + 6);
		else
			snprintf(buf, cap, "a string%s", range);
	} else {
		snprintf(buf, cap, "a JSON %s",
			 json_string_value(json_object_get(schema, "type"))
				 ? json_string_value(json_object_get(schema, "type"))
				 : "value");
	}
	return buf;
}

/* text converted to the first of schema's types it parses as (integer,
 * number, string, then an array of strings written a,b,c with no empty
 * item). Returns a new value, or NULL when it is none. */
static json_t *convert(const json_t *schema, const char *text)
{
	char *end;

	if (has_type(schema, "integer") && *text) {
		errno = 0;
		long long v = strtoll(text, &end, 10);
		if (!errno && !*end)
			return json_integer(v);
	}
	if (has_type(schema, "number") && *text) {
		errno = 0;
		double d = strtod(text, &end);
		if (!errno && !*end && isfinite(d))
			return json_real(d);
	}
	if (has_type(schema, "string"))
		return json_string(text);
	if (has_type(schema, "array")) {
		json_t *arr = json_array();
		for (const char *p = text; arr && *p;) {
			size_t n = strcspn(p, ",");
			if (n == 0 || json_array_size(arr) >= CSV_ITEMS_MAX ||
			    json_array_append_new(arr, json_stringn(p, n))) {
				json_decref(arr);
				return NULL;
			}
			p += n + (p[n] == ',');
			if (p[-1] == ',' && !*p) { /* "a," */
				json_decref(arr);
				return NULL;
			}
		}
		return arr;
	}
	return NULL;
}

/* Stores v (taken) at the dotted path prop of args, creating the objects
 * on the way. Returns 0 or KF_ENOMEM. */
static int put(json_t *args, const char *prop, json_t *v)
{
	json_t *obj = args;
	char key[PROP_KEY_MAX];
	const char *dot;

	while ((dot = strchr(prop, '.'))) {
		size_t n = (size_t)(dot - prop);
		json_t *sub;
		if (n >= sizeof(key))
			break;
		memcpy(key, prop, n);
		key[n] = '\0';
		sub = json_object_get(obj, key);
		if (!json_is_object(sub)) {
			sub = json_object();
			if (json_object_set_new(obj, key, sub)) {
				json_decref(v);
				return KF_ENOMEM;
			}
		}
		obj = sub;
		prop = dot + 1;
	}
	return json_object_set_new(obj, prop, v) ? KF_ENOMEM : 0;
}

/* Converts text, checks it against the property's schema with the server's
 * own validator and stores it. Returns 1 or KF_EINVAL/KF_ENOMEM. */
static int take_value(const struct cli_opt *opt, const json_t *ps, const char *text, json_t *args,
		      struct kf_err *err)
{
	char allowed[ALLOWED_BYTES];
	struct schema *sub = NULL;
	struct kf_err why = {0};
	json_t *v = convert(ps, text);
	int rc;

	cli_opts_allowed(ps, allowed, sizeof(allowed));
	if (!v)
		return kf_err_set(err, KF_EINVAL, "%s: '%s' is not %s", opt->name, text, allowed);
	rc = schema_from_json((json_t *)ps, &sub, &why);
	if (!rc)
		rc = schema_validate(sub, v, opt->name, &why);
	schema_free(sub);
	if (rc) {
		json_decref(v);
		return kf_err_set(err, rc, "%s: '%s' is not %s", opt->name, text, allowed);
	}
	rc = put(args, opt->prop, v);
	return rc ? kf_err_set(err, rc, "%s: out of memory", opt->name) : 1;
}

int cli_opts_take(const struct cli_opts *o, int argc, char **argv, int *i, json_t *args,
		  struct kf_err *err)
{
	for (const struct cli_opt *opt = o->opts; opt->name; opt++) {
		const json_t *ps;
		const char *v;
		int missing = 0;

		if (opt->kind == CLI_OPT_OWN)
			continue;
		if (opt->kind != CLI_OPT_VALUE) {
			if (strcmp(argv[*i], opt->name) != 0)
				continue;
			if (!(ps = opt_schema(o, opt, err)))
				return KF_EINVAL;
			if (!has_type(ps, "boolean"))
				return kf_err_set(err, KF_EINVAL, "%s: %s.%s is not a boolean",
						  opt->name, o->tool, opt->prop);
			int rc = put(args, opt->prop,
				     opt->kind == CLI_OPT_TRUE ? json_true() : json_false());
			return rc ? kf_err_set(err, rc, "%s: out of memory", opt->name) : 1;
		}
		v = cli_opt_value(argc, argv, i, opt->name, &missing);
		if (!v && !missing)
			continue;
		if (!(ps = opt_schema(o, opt, err)))
			return KF_EINVAL;
		if (missing) {
			char allowed[ALLOWED_BYTES];
			return kf_err_set(err, KF_EINVAL, "%s needs a value: %s", opt->name,
					  cli_opts_allowed(ps, allowed, sizeof(allowed)));
		}
		return take_value(opt, ps, v, args, err);
	}
	return 0;
}

/* "(1-20, default 3)", "(compile|check|bench|calibrate)" or "": what a
 * value option's schema bounds, for its help line. */
static void bounds_text(const json_t *ps, char *buf, size_t cap)
{
	const json_t *e = json_object_get(ps, "enum"), *d = json_object_get(ps, "default");
	const json_t *lo = json_object_get(ps, "minimum"), *hi = json_object_get(ps, "maximum");
	char x[32], y[32];
	size_t n = 0;

	buf[0] = '\0';
	if (!e && has_type(ps, "array"))
		e = json_object_get(json_object_get(ps, "items"), "enum");
	if (json_is_array(e)) {
		enum_text(e, has_type(ps, "array") ? "," : "|", buf, cap, &n);
	} else if (lo || hi) {
		num_text(json_number_value(lo), x, sizeof(x));
		num_text(json_number_value(hi), y, sizeof(y));
		if (lo && hi)
			n = (size_t)snprintf(buf, cap, "%s-%s", x, y);
		else
			n = (size_t)snprintf(buf, cap, "%s %s", lo ? "at least" : "at most",
					     lo ? x : y);
	}
	if (n < cap && (json_is_number(d) || json_is_string(d))) {
		if (json_is_number(d))
			num_text(json_number_value(d), x, sizeof(x));
		snprintf(buf + n, cap - n, "%sdefault %s", n ? ", " : "",
			 json_is_string(d) ? json_string_value(d) : x);
	}
}

/* Prints text from column col, wrapped at HELP_WIDTH; the first line starts
 * where the cursor is (at column at). */
static void wrap(FILE *f, const char *text, size_t col, size_t at)
{
	size_t pos = at;

	while (*text) {
		size_t w = strcspn(text, " ");
		if (pos > col && pos + 1 + w > HELP_WIDTH) {
			fprintf(f, "\n%*s", (int)col, "");
			pos = col;
		} else if (pos > col) {
			fputc(' ', f);
			pos++;
		}
		fprintf(f, "%.*s", (int)w, text);
		pos += w;
		text += w;
		while (*text == ' ')
			text++;
	}
	fputc('\n', f);
}

int cli_opts_help(FILE *f, const struct cli_opts *o, struct kf_err *err)
{
	size_t width = 0;

	for (const struct cli_opt *opt = o->opts; opt->name; opt++) {
		size_t w = strlen(opt->name) + (opt->metavar ? 1 + strlen(opt->metavar) : 0);
		if (w <= HELP_COL_MAX && w > width)
			width = w;
	}
	for (const struct cli_opt *opt = o->opts; opt->name; opt++) {
		const json_t *ps = NULL;
		char left[128], bounds[ALLOWED_BYTES], text[1024];
		const char *help = opt->help;

		if (opt->prop && !(ps = opt_schema(o, opt, err)))
			return KF_EINVAL;
		if (!help)
			help = json_string_value(json_object_get(ps, "description"));
		if (!help)
			return kf_err_set(err, KF_EINVAL,
					  "%s: needs a help line (%s.%s has no description)",
					  opt->name, o->tool, opt->prop ? opt->prop : "");
		bounds[0] = '\0';
		if (ps && opt->kind == CLI_OPT_VALUE)
			bounds_text(ps, bounds, sizeof(bounds));
		snprintf(text, sizeof(text), "%s%s%s%s", help, bounds[0] ? " (" : "", bounds,
			 bounds[0] ? ")" : "");
		snprintf(left, sizeof(left), "%s%s%s", opt->name, opt->metavar ? " " : "",
			 opt->metavar ? opt->metavar : "");
		fprintf(f, "  %-*s", (int)width, left);
		if (strlen(left) > width) {
			fprintf(f, "\n%*s", (int)width + 4, "");
			wrap(f, text, width + 4, width + 4);
		} else {
			fprintf(f, "  ");
			wrap(f, text, width + 4, width + 4);
		}
	}
	return 0;
}
