/* spec: the kernel spec (DESIGN.md "The kernel spec"), parsed from JSON and
 * validated before anything runs. Shared by the daemon (check, bench) and
 * the harness. Every rejection names the field path and the reason, e.g.
 * "tensors.y.shape[1]: size 'N' is not defined by any entry of sizes".
 * The `op` shorthand is expanded at the JSON level (spec_expand_op) by the
 * daemon, which hands the harness the expanded JSON: the harness never links
 * the op templates or their float64 references. A parsed spec is immutable
 * and safe to share between threads. Also here: the seeded, counter-based
 * input generator both sides use to produce bit-identical inputs. */
#ifndef KF_SPEC_H
#define KF_SPEC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/dtype.h"
#include "kernels/op.h"
#include "base/kf_err.h"
#include "sandbox/spec/expr.h"

#define SPEC_MAX_RANK	      8
#define SPEC_MAX_VARS	      16 /* distinct size variables */
#define SPEC_MAX_SIZES	      32 /* entries of "sizes" */
#define SPEC_MAX_TENSORS      32
#define SPEC_MAX_SCALARS      32
#define SPEC_MAX_LAUNCHES     16
#define SPEC_MAX_ARGS	      64 /* per launch */
#define SPEC_MAX_SOURCE_BYTES (1u << 20)
#define SPEC_MAX_CONSTRAINTS  32
#define SPEC_NAME_MAX	      63 /* tensor, scalar, size and kernel names */

/* Bytes of guard band before and after every device buffer. */
#define SPEC_GUARD_BYTES 4096u

enum spec_role { SPEC_ROLE_INPUT = 0, SPEC_ROLE_OUTPUT, SPEC_ROLE_INOUT };

/* How an input (or inout) tensor is filled from the seed. */
enum spec_init {
	SPEC_INIT_NORMAL = 0, /* N(0, 1) (floats); integers: uniform in [-8, 8] */
	SPEC_INIT_UNIFORM,    /* U[-1, 1) (floats); integers: full small range */
	SPEC_INIT_UNIFORM01,  /* U[0, 1) */
	SPEC_INIT_POSITIVE,   /* U[0.5, 1.5) (e.g. variances, divisors) */
	SPEC_INIT_ONES,	      /* every element 1 (not random: flagged in checks) */
	SPEC_INIT_ARANGE,     /* element i = i mod 128, exact in every dtype */
	SPEC_INIT_INDEX	      /* uniform integers in [0, init_max) (gather ids) */
};

struct spec_tensor {
	char *name;
	enum kf_dtype dtype;
	enum spec_role role;
	enum spec_init init;
	int64_t init_max;	    /* SPEC_INIT_INDEX upper bound value, 0 = n/a */
	struct expr *init_max_expr; /* or as an expression over sizes, NULL */
	size_t rank;		    /* 0 = a single element */
	struct expr *shape[SPEC_MAX_RANK];
};

struct spec_scalar {
	char *name;
	enum kf_dtype dtype; /* f32, f64, i32, i64 (f16/bf16 passed as their bits) */
	double value;	     /* the value (integers: exact up to 2^53) */
	int64_t ivalue;	     /* integer value for integer dtypes */
};

enum spec_arg_kind { SPEC_ARG_TENSOR = 0, SPEC_ARG_SCALAR, SPEC_ARG_SIZE };

/* One kernel argument. Tensors pass a device pointer; scalars their dtype;
 * sizes an integer expression over the size variables passed as i32 (the
 * default, range-checked) or i64 ("T:i64", "T*D:i64"). */
struct spec_arg {
	enum spec_arg_kind kind;
	size_t index;	     /* into tensors or scalars */
	struct expr *expr;   /* SPEC_ARG_SIZE */
	enum kf_dtype dtype; /* SPEC_ARG_SIZE: KF_DT_I32 or KF_DT_I64 */
};

struct spec_launch {
	char *kernel;		    /* extern "C" name */
	struct expr *when;	    /* NULL: always runs; else runs where non-zero */
	size_t grid_len, block_len; /* 1..3 */
	struct expr *grid[3];
	struct expr *block[3];
	struct expr *shared_bytes; /* never NULL (constant 0 by default) */
	struct spec_arg *args;
	size_t args_len;
};

enum spec_ref_kind {
	SPEC_REF_NONE = 0, /* no reference: check refuses, bench allowed */
	SPEC_REF_OP,	   /* built-in op from kernels/op.h */
	SPEC_REF_CUDA,	   /* a second CUDA source with its own launch list */
	SPEC_REF_TORCH	   /* a PyTorch expression over the tensor names */
};

struct spec_reference {
	enum spec_ref_kind kind;
	char *op;	/* SPEC_REF_OP: template name */
	double *params; /* SPEC_REF_OP: scalar values, template order */
	size_t params_len;
	char *source;		    /* SPEC_REF_CUDA */
	struct spec_launch *launch; /* SPEC_REF_CUDA */
	size_t launch_len;
	char *torch; /* SPEC_REF_TORCH: expression or statements */
};

/* Where the benchmark baseline comes from. */
enum spec_base_kind {
	SPEC_BASE_NONE = 0,
	SPEC_BASE_FATBIN, /* kforge's fast kernel from kernels.fatbin */
	SPEC_BASE_CUDA	  /* a second CUDA source (the reference's) */
};

struct spec_baseline {
	enum spec_base_kind kind;
	char *source; /* SPEC_BASE_CUDA */
	struct spec_launch *launch;
	size_t launch_len;
};

struct spec {
	char *source;		/* the candidate's CUDA source */
	char *arch;		/* "sm_90"; NULL = the local GPU's */
	char *op;		/* op template name when the spec came from one, else NULL */
	enum kf_dtype op_dtype; /* the shorthand's dtype (op != NULL) */

	size_t vars_len; /* size variables, in first-seen order */
	char *vars[SPEC_MAX_VARS];
	size_t sizes_len; /* rows of "sizes" */
	int64_t *sizes;	  /* sizes_len x vars_len, row-major */

	struct spec_tensor *tensors;
	size_t tensors_len;
	struct spec_scalar *scalars;
	size_t scalars_len;
	struct spec_launch *launch;
	size_t launch_len;
	struct spec_reference ref;
	struct spec_baseline baseline;

	int tol_given;		 /* 1 when "tolerance" was in the spec */
	double atol, rtol;	 /* valid when tol_given */
	struct expr *cost_bytes; /* NULL: default (bytes of all tensors) */
	struct expr *cost_flops; /* NULL: unknown */
	struct expr **constraints;
	size_t constraints_len;
	json_t *json; /* the expanded spec as parsed (owned) */
};

/* Limits a spec must stay within; spec_limits_default fills the defaults. */
struct spec_limits {
	uint64_t max_device_bytes; /* all buffers + guards; default 16 GiB */
	uint64_t max_tensor_elems; /* per tensor; default 2^31 - 1 */
	uint64_t max_host_bytes;   /* host copies (reference in f64); default 16 GiB */
};

void spec_limits_default(struct spec_limits *lim);

/* Expands the `op` shorthand: when in (borrowed) has "op" (a template name
 * found through find, e.g. op_find) and "dtype", returns a new JSON object
 * with "tensors", "scalars", "constraints", "tolerance" (for the dtype),
 * "cost", "sizes" (the template's defaults unless given), "reference"
 * ({"op": name}) and "baseline" ({"launch": ...}) taken from the template
 * with "$dtype" substituted; keys the spec gives win. Without "op" returns a
 * new reference to in. find may be NULL (then "op" is rejected).
 * Errors: KF_EINVAL naming "op" or "dtype". */
int spec_expand_op(const json_t *in, const struct op_template *(*find)(const char *name),
		   json_t **out, struct kf_err *err) __attribute__((warn_unused_result));

/* Parses and validates an expanded spec j (borrowed; a copy is kept).
 * find (may be NULL) resolves {"reference": {"op": ...}}; without it the op
 * name is kept unchecked (the harness never runs it). Returns 0 and *out (a
 * new spec, free with spec_free) or KF_EINVAL / KF_ETOOBIG with err naming
 * the field ("launch[0].grid[0]: ...", "sizes[1]: ..."). Every size row
 * is checked against the constraints and the limits (shapes, overflow,
 * device memory). */
int spec_parse(const json_t *j, const struct spec_limits *lim,
	       const struct op_template *(*find)(const char *name), struct spec **out,
	       struct kf_err *err) __attribute__((warn_unused_result));

/* Parses JSON text (len bytes, borrowed), expands the op shorthand with find
 * and validates. Same returns as spec_parse. */
int spec_parse_text(const char *text, size_t len, const struct spec_limits *lim,
		    const struct op_template *(*find)(const char *name), struct spec **out,
		    struct kf_err *err) __attribute__((warn_unused_result));

void spec_free(struct spec *s);

/* Index of the size variable, tensor or scalar named name, or -1. */
int spec_var_index(const struct spec *s, const char *name);
int spec_tensor_index(const struct spec *s, const char *name);
int spec_scalar_index(const struct spec *s, const char *name);

/* An env over the size variables with values vals (vars_len of them,
 * borrowed for the env's life). */
struct expr_env spec_env(const struct spec *s, const int64_t *vals);

/* Everything derived from one set of size values. */
struct spec_bound {
	uint64_t elems[SPEC_MAX_TENSORS]; /* elements per tensor */
	uint64_t bytes[SPEC_MAX_TENSORS]; /* bytes per tensor (no guards) */
	int64_t dims[SPEC_MAX_TENSORS][SPEC_MAX_RANK];
	uint64_t device_bytes; /* all tensors + guard bands */
	double cost_bytes;     /* from cost.bytes or the default */
	double cost_flops;     /* from cost.flops, or -1 unknown */
};

/* Evaluates shapes, caps and constraints for the size values vals
 * (vars_len of them, borrowed) and fills *b. where names the context for
 * messages ("sizes[1]"). Returns 0, or KF_EINVAL ("sizes[1]: constraint
 * 'D % 2 == 0' fails for D=7"), or KF_ETOOBIG ("sizes[0]: tensors need
 * 20.0 GiB of device memory with guard bands, over the 16.0 GiB cap"). */
int spec_bind(const struct spec *s, const int64_t *vals, const struct spec_limits *lim,
	      const char *where, struct spec_bound *b, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Evaluates grid, block and shared bytes of launch l for vals. Returns 0 or
 * KF_EINVAL naming "launch[i].grid[0]" etc. for values outside
 * [1, 2^31-1] (grid x), [1, 65535] (grid y, z), [1, 1024] (block), or
 * negative shared bytes. */
int spec_launch_dims(const struct spec *s, const struct spec_launch *l, const int64_t *vals,
		     const char *where, uint32_t grid[3], uint32_t block[3], uint32_t *shared_bytes,
		     struct kf_err *err) __attribute__((warn_unused_result));

/* Sets *runs to whether launch l runs at the size values vals (its "when"
 * expression is non-zero, or it has none). Returns 0 or KF_EINVAL when the
 * expression cannot be evaluated (division by zero...). */
int spec_launch_runs(const struct spec *s, const struct spec_launch *l, const int64_t *vals,
		     int *runs, struct kf_err *err) __attribute__((warn_unused_result));

/* Finds the odd size: a row of size values near vals0 (the first row of
 * sizes) the agent did not list, satisfying every constraint, binding
 * within lim, and (when possible) not a multiple of 2 in the perturbed
 * variables. seed picks among candidates. Returns 0 and fills out
 * (vars_len values), or KF_ENOTFOUND when no such size exists. */
int spec_odd_size(const struct spec *s, const struct spec_limits *lim, uint64_t seed, int64_t *out,
		  struct kf_err *err) __attribute__((warn_unused_result));

/* Input generation, shared by harness and daemon: fills elems elements of
 * buf (stored as t->dtype) for tensor number tensor_index of the spec from
 * seed. Counter-based (splitmix64 of seed, tensor index and element index),
 * so any process regenerates identical bytes. Values are rounded to the
 * dtype. dims (rank entries) are the bound shape (for SPEC_INIT_INDEX with
 * init_max_expr, pass its value in init_max). */
void spec_fill(const struct spec_tensor *t, size_t tensor_index, uint64_t seed, int64_t init_max,
	       void *buf, uint64_t elems);

/* The init_max spec_fill takes for tensor t of s at sizes vals: its
 * init_max_expr's value (1 when it cannot be evaluated; spec_bind has
 * refused such sizes already), or 0 without one. Every process that fills
 * inputs (harness, references, torch-op verification) uses this, so they
 * draw the same values. */
int64_t spec_init_max(const struct spec *s, size_t t, const int64_t *vals);

/* splitmix64 step, exposed for seeds and tests. */
uint64_t spec_mix64(uint64_t x);

/* The default tolerance of a dtype (documented in docs/check-and-bench.md):
 * f32 1e-4/1e-4, f16 1e-2/1e-2, bf16 2e-2/2e-2, f64 1e-10/1e-10,
 * integers exact (0/0). */
void spec_default_tolerance(enum kf_dtype dt, double *atol, double *rtol);

/* Human-readable names. */
const char *spec_role_name(enum spec_role r);
const char *spec_init_name(enum spec_init i);

#endif
