/* op: built-in op templates, the contract between kernels/ and the harness.
 * A template names an op ("rmsnorm"), describes its tensors, scalars, size
 * variables, constraints, default tolerances, cost formulas and the launch
 * of kforge's fast kernel, all as a fragment in the kernel-spec JSON format
 * (DESIGN.md "The kernel spec"), and carries the plain float64 CPU reference
 * from kernels/ref/ that check_kernel compares against. Plain C, no CUDA. */
#ifndef KF_OP_H
#define KF_OP_H

#include <stddef.h>
#include <stdint.h>

#include "base/kf_err.h"
#include "kernels/dtype.h"

struct op_template;

/* One call of a reference. All tensors are dense, row-major, converted to
 * double by the caller; shapes follow the template's "tensors" shapes with
 * the sizes given. Borrowed for the call. */
struct op_ref_call {
	const struct op_template *op;
	const int64_t *sizes;	 /* values of op->size_names, same order */
	const double *scalars;	 /* values of op->scalar_names, same order */
	const double *const *in; /* op->inputs order; NULL for an optional input left out */
	double *const *out;	 /* op->outputs order */
};

/* A reference: computes every output from the inputs in float64.
 * Returns 0 or KF_EINVAL (with err) when the sizes break the op's
 * preconditions. Must not allocate unboundedly or touch global state. */
typedef int (*op_ref_fn)(const struct op_ref_call *call, struct kf_err *err);

/* Cost model: bytes moved through device memory (each input read once, each
 * output written once) and floating-point operations, for sizes in
 * op->size_names order and element type dt. */
typedef void (*op_cost_fn)(const int64_t *sizes, enum kf_dtype dt, double *bytes, double *flops);

struct op_template {
	const char *name;		 /* "rmsnorm", "silu_and_mul", ... */
	const char *summary;		 /* one line: the math */
	const char *const *size_names;	 /* NULL-terminated: {"T", "D", NULL} */
	const char *const *inputs;	 /* NULL-terminated tensor names, input role */
	const char *const *outputs;	 /* NULL-terminated tensor names, output role */
	const char *const *scalar_names; /* NULL-terminated, may be empty */
	/* The template as kernel-spec JSON. "$dtype" anywhere in it stands for
	 * the spec's dtype ("bf16"). Keys: "dtypes" (allowed), "tensors",
	 * "scalars" (with default values), "constraints" (integer expressions
	 * over the sizes that must be nonzero, e.g. "D % 2 == 0"),
	 * "default_sizes", "tolerance" (per dtype: {"atol","rtol"}),
	 * "cost" ({"bytes": expr, "flops": expr}, or per dtype like
	 * "tolerance": {"bf16": {"bytes": expr, "flops": expr}, ...}, since the
	 * bytes moved depend on the element size), and "baseline": {"launch":
	 * [...]} the launch list of kforge's fast kernel, whose extern "C"
	 * kernels are in the kernels fatbin built from kernels/OP.cu. */
	const char *spec_json;
	op_ref_fn ref;
	op_cost_fn cost;
	/* Plain words: what the op computes and where models use it; with
	 * summary (the math) it is the task description a dataset record and
	 * an eval prompt carry. */
	const char *description;
};

/* Returns the template named name (borrowed, static) or NULL. */
const struct op_template *op_find(const char *name);

/* The number of templates, and template i (borrowed, static). */
size_t op_count(void);
const struct op_template *op_at(size_t i);

#endif
