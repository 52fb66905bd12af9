/* ops: the registry of built-in op templates (kernels/op.h). Each entry
 * pairs a kernel-spec JSON fragment (tensors, scalars, constraints, default
 * sizes, per-dtype tolerances and costs, the baseline launch of kforge's
 * fast kernel) with its float64 reference from kernels/ref/ and its cost
 * function. Static, immutable data: every function here is thread-safe.
 * The launch expressions mirror the C launch helpers in kernels/OP.cu. */
#include "op.h"

#include <string.h>

#include "ref/rmsnorm_ref.h"

/* --- shared JSON pieces ----------------------------------------------------- */

#define DTYPES_FLOAT "\"dtypes\": [\"f32\", \"f16\", \"bf16\"]"

/* Default tolerances: the output is rounded to the dtype once after fp32
 * arithmetic, so bf16 (8-bit mantissa, half-ulp 2^-9) gets 1e-2, f16
 * (half-ulp 2^-12) 2e-3 and f32 1e-5, absolute and relative. */
#define TOL_STD                                                                      \
	"\"tolerance\": {\"f32\": {\"atol\": 1e-5, \"rtol\": 1e-5}, "                  \
	"\"f16\": {\"atol\": 2e-3, \"rtol\": 2e-3}, "                                  \
	"\"bf16\": {\"atol\": 1e-2, \"rtol\": 1e-2}}"

/* "cost" per dtype (the byte count depends on the element size): BYTES is an
 * expression counting elements moved, multiplied here by the element size. */
#define COST3(ELEMS, FLOPS)                                                          \
	"\"cost\": {\"f32\": {\"bytes\": \"(" ELEMS ") * 4\", \"flops\": \"" FLOPS "\"}, " \
	"\"f16\": {\"bytes\": \"(" ELEMS ") * 2\", \"flops\": \"" FLOPS "\"}, "          \
	"\"bf16\": {\"bytes\": \"(" ELEMS ") * 2\", \"flops\": \"" FLOPS "\"}}"

/* Row ops: kf::row_block in kernels/kf_cuda.cuh. */
#define ROW_TX "min(1024, max(32, ceil_div(D, 1024) * 32))"
#define ROW_TY "max(1, 256 / " ROW_TX ")"
#define ROW_GRID "\"grid\": [\"ceil_div(T, " ROW_TY ")\"], \"block\": [\"" ROW_TX "\", \"" ROW_TY "\"]"

#define T_TD(NAME, ROLE) "\"" NAME "\": {\"dtype\": \"$dtype\", \"shape\": [\"T\", \"D\"], \"role\": \"" ROLE "\"}"
#define T_D(NAME) "\"" NAME "\": {\"dtype\": \"$dtype\", \"shape\": [\"D\"], \"role\": \"input\"}"
#define EPS_SCALAR "\"scalars\": {\"eps\": {\"dtype\": \"f32\", \"value\": 1e-6}}"
#define SIZES_TD "\"default_sizes\": [{\"T\": 4096, \"D\": 4096}, {\"T\": 7, \"D\": 1000}, {\"T\": 3, \"D\": 20001}]"

static const char *const SZ_TD[] = {"T", "D", NULL};
static const char *const SC_EPS[] = {"eps", NULL};
static const char *const SC_NONE[] __attribute__((unused)) = {NULL};

static size_t esz(enum kf_dtype dt)
{
	return dtype_bytes(dt);
}

/* --- rmsnorm family --------------------------------------------------------- */

static int ref_rmsnorm(const struct op_ref_call *c, struct kf_err *err)
{
	return rmsnorm_ref(c->out[0], c->in[0], c->in[1], c->sizes[0], c->sizes[1],
			   c->scalars[0], err);
}
static int ref_rmsnorm_noweight(const struct op_ref_call *c, struct kf_err *err)
{
	return rmsnorm_ref(c->out[0], c->in[0], NULL, c->sizes[0], c->sizes[1], c->scalars[0],
			   err);
}
static int ref_add_rmsnorm(const struct op_ref_call *c, struct kf_err *err)
{
	return add_rmsnorm_ref(c->out[0], c->out[1], c->in[0], c->in[1], c->in[2], c->sizes[0],
			       c->sizes[1], c->scalars[0], err);
}
static void cost_rmsnorm(const int64_t *s, enum kf_dtype dt, double *b, double *f)
{
	rmsnorm_cost(s[0], s[1], esz(dt), 1, b, f);
}
static void cost_rmsnorm_noweight(const int64_t *s, enum kf_dtype dt, double *b, double *f)
{
	rmsnorm_cost(s[0], s[1], esz(dt), 0, b, f);
}
static void cost_add_rmsnorm(const int64_t *s, enum kf_dtype dt, double *b, double *f)
{
	add_rmsnorm_cost(s[0], s[1], esz(dt), b, f);
}

static const char *const IN_X_W[] = {"x", "w", NULL};
static const char *const IN_X[] = {"x", NULL};
static const char *const IN_X_RES_W[] = {"x", "res", "w", NULL};
static const char *const OUT_Y[] = {"y", NULL};
static const char *const OUT_Y_R[] = {"y", "r", NULL};

static const char RMSNORM_JSON[] =
	"{" DTYPES_FLOAT ", "
	"\"tensors\": {" T_TD("x", "input") ", " T_D("w") ", " T_TD("y", "output") "}, "
	EPS_SCALAR ", \"constraints\": [\"D >= 1\"], " SIZES_TD ", " TOL_STD ", "
	COST3("2*T*D + D", "4*T*D") ", "
	"\"baseline\": {\"launch\": [{\"kernel\": \"kf_rmsnorm_$dtype\", " ROW_GRID ", "
	"\"shared_bytes\": 0, \"args\": [\"y\", \"x\", \"w\", \"T\", \"D\", \"eps\"]}]}}";

static const char RMSNORM_NOWEIGHT_JSON[] =
	"{" DTYPES_FLOAT ", "
	"\"tensors\": {" T_TD("x", "input") ", " T_TD("y", "output") "}, "
	EPS_SCALAR ", \"constraints\": [\"D >= 1\"], " SIZES_TD ", " TOL_STD ", "
	COST3("2*T*D", "3*T*D") ", "
	"\"baseline\": {\"launch\": [{\"kernel\": \"kf_rmsnorm_noweight_$dtype\", " ROW_GRID ", "
	"\"shared_bytes\": 0, \"args\": [\"y\", \"x\", \"T\", \"D\", \"eps\"]}]}}";

static const char ADD_RMSNORM_JSON[] =
	"{" DTYPES_FLOAT ", "
	"\"tensors\": {" T_TD("x", "input") ", " T_TD("res", "input") ", " T_D("w") ", "
	T_TD("y", "output") ", " T_TD("r", "output") "}, "
	EPS_SCALAR ", \"constraints\": [\"D >= 1\"], " SIZES_TD ", " TOL_STD ", "
	COST3("4*T*D + D", "5*T*D") ", "
	"\"baseline\": {\"launch\": [{\"kernel\": \"kf_add_rmsnorm_$dtype\", " ROW_GRID ", "
	"\"shared_bytes\": 0, \"args\": [\"y\", \"r\", \"x\", \"res\", \"w\", \"T\", \"D\", \"eps\"]}]}}";

/* --- the registry ------------------------------------------------------------ */

static const struct op_template OPS[] = {
	{"rmsnorm", "y = x / sqrt(mean(x^2, last dim) + eps) * w", SZ_TD, IN_X_W, OUT_Y, SC_EPS,
	 RMSNORM_JSON, ref_rmsnorm, cost_rmsnorm},
	{"rmsnorm_noweight", "y = x / sqrt(mean(x^2, last dim) + eps)", SZ_TD, IN_X, OUT_Y,
	 SC_EPS, RMSNORM_NOWEIGHT_JSON, ref_rmsnorm_noweight, cost_rmsnorm_noweight},
	{"add_rmsnorm", "r = x + res; y = r / sqrt(mean(r^2, last dim) + eps) * w", SZ_TD,
	 IN_X_RES_W, OUT_Y_R, SC_EPS, ADD_RMSNORM_JSON, ref_add_rmsnorm, cost_add_rmsnorm},
};

size_t op_count(void)
{
	return sizeof(OPS) / sizeof(OPS[0]);
}

const struct op_template *op_at(size_t i)
{
	return i < op_count() ? &OPS[i] : NULL;
}

const struct op_template *op_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < op_count(); i++)
		if (strcmp(OPS[i].name, name) == 0)
			return &OPS[i];
	return NULL;
}
