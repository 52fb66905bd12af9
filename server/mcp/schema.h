/* schema: the one JSON-Schema-subset validator every tool argument passes
 * through. Supported keywords: type (string or array of "integer", "number",
 * "string", "boolean", "object", "array", "null"), properties, required,
 * enum, minimum, maximum, minLength, maxLength (in Unicode code points),
 * items, additionalProperties (false or a schema), minItems, maxItems.
 * Annotations ($schema, $id, title, description, default, examples,
 * deprecated, readOnly, writeOnly, format) are accepted and ignored. Any
 * other keyword is rejected when the schema is parsed, so a tool can never
 * publish a constraint that is silently not enforced. Schemas are parsed once
 * at startup; a parsed schema is immutable and safe to share across threads. */
#ifndef KF_SCHEMA_H
#define KF_SCHEMA_H

#include <jansson.h>

#include "base/kf_err.h"

struct schema;

/* Parses and checks schema text. Returns 0 and sets *out to a new schema
 * (free with schema_free), or KF_EINVAL with err naming the JSON path of
 * the bad keyword ("schema.properties.n.minimum: expected a number"), or
 * KF_ENOMEM. text: borrowed. */
int schema_parse(const char *text, struct schema **out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Like schema_parse for an already-parsed JSON value (borrowed; the schema
 * keeps its own reference). */
int schema_from_json(json_t *doc, struct schema **out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Frees s. NULL is a no-op. */
void schema_free(struct schema *s);

/* Returns the schema document. Borrowed, valid until schema_free. */
json_t *schema_json(const struct schema *s);

/* Validates value (borrowed) against s. root names the value in messages
 * (e.g. "arguments"). Returns 0, or KF_EINVAL with err naming the first
 * failing path and what was expected: "arguments.flags[2]: expected string,
 * got integer", "arguments: missing required property 'source'",
 * "arguments.arch: 'sm_99' is not one of \"sm_80\", \"sm_90\"". */
int schema_validate(const struct schema *s, const json_t *value, const char *root,
		    struct kf_err *err) __attribute__((warn_unused_result));

#endif
