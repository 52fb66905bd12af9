/* spec_int: internals shared by spec.c (helpers, sizes, tensors, scalars,
 * the top level), spec_launch.c (launch lists, reference, baseline,
 * tolerance, cost, constraints) and spec_bind.c (binding, odd size).
 * Included by no one else. */
#ifndef KF_SPEC_INT_H
#define KF_SPEC_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "sandbox/spec/spec.h"

#define SPEC_PATH_MAX_LEN 160 /* bytes of a field path in messages ("tensors.x.shape[1]") */

/* 1 when s is a C identifier of at most SPEC_NAME_MAX characters. */
int spec_valid_name(const char *s);

/* Rejects keys of obj (borrowed) not in known (NULL-terminated): KF_EINVAL
 * naming path, the key and the known ones. */
int spec_check_keys(const json_t *obj, const char *path, const char *const *known,
		    struct kf_err *err);

/* Parses v (a string or an integer) at path into an expression that may
 * name only size variables of s. *out: new (free with expr_free). KF_EINVAL
 * naming path. */
int spec_parse_expr(const struct spec *s, const json_t *v, const char *path, struct expr **out,
		    struct kf_err *err);

/* Parses the launch list v at path into *out (new, freed by spec_free with
 * s), *out_len entries. KF_EINVAL naming the field. */
int spec_parse_launch_list(struct spec *s, const json_t *v, const char *path,
			   struct spec_launch **out, size_t *out_len, struct kf_err *err);

/* Parses a kernel source (a string, or absent when !required) into *out
 * (new, free()). KF_EINVAL or KF_ETOOBIG naming path. */
int spec_parse_source(const json_t *v, const char *path, int required, char **out,
		      struct kf_err *err);

/* The spec's "reference", "baseline", "tolerance", "cost" and
 * "constraints" members of j (borrowed), into s. find resolves built-in
 * ops for {"op": ...} references. KF_EINVAL naming the field. */
int spec_parse_reference(struct spec *s, const json_t *j,
			 const struct op_template *(*find)(const char *), struct kf_err *err);
int spec_parse_baseline(struct spec *s, const json_t *j, struct kf_err *err);
int spec_parse_tolerance(struct spec *s, const json_t *j, struct kf_err *err);
int spec_parse_cost(struct spec *s, const json_t *j, struct kf_err *err);
int spec_parse_constraints(struct spec *s, const json_t *j, struct kf_err *err);

/* Checks every launch list of s (candidate, reference, baseline) at one row
 * of sizes: dimensions in range, size arguments fitting their dtype.
 * KF_EINVAL prefixed with where. */
int spec_check_launches_at(const struct spec *s, const int64_t *vals, const char *where,
			   struct kf_err *err);

#endif
