/* ops: the registry of built-in op templates (kernels/op.h). Each entry
 * pairs a kernel-spec JSON fragment (tensors, scalars, constraints, default
 * sizes, per-dtype tolerances and costs, the baseline launch of kforge's
 * fast kernel) with its float64 reference from kernels/ref/ and its cost
 * function. Static, immutable data: every function here is thread-safe.
 * The launch expressions mirror the C launch helpers in kernels/OP.cu. */
#include "kernels/op.h"

#include <string.h>

#include "kernels/ref/activation_ref.h"
#include "kernels/ref/adaln_ref.h"
#include "kernels/ref/gemm_ref.h"
#include "kernels/ref/layernorm_ref.h"
#include "kernels/ref/rmsnorm_ref.h"
#include "kernels/ref/rope_ref.h"
#include "kernels/ref/softmax_ref.h"

/* --- shared JSON pieces ----------------------------------------------------- */

#define DTYPES_FLOAT "\"dtypes\": [\"f32\", \"f16\", \"bf16\"]"

/* Default tolerances: the output is rounded to the dtype once after fp32
 * arithmetic, so bf16 (8-bit mantissa, half-ulp 2^-9) gets 1e-2, f16
 * (half-ulp 2^-12) 2e-3 and f32 1e-5, absolute and relative. */
#define TOL_STD                                                       \
	"\"tolerance\": {\"f32\": {\"atol\": 1e-5, \"rtol\": 1e-5}, " \
	"\"f16\": {\"atol\": 2e-3, \"rtol\": 2e-3}, "                 \
	"\"bf16\": {\"atol\": 1e-2, \"rtol\": 1e-2}}"

/* "cost" per dtype (the byte count depends on the element size): BYTES is an
 * expression counting elements moved, multiplied here by the element size. */
#define COST3(ELEMS, FLOPS)                                                                \
	"\"cost\": {\"f32\": {\"bytes\": \"(" ELEMS ") * 4\", \"flops\": \"" FLOPS "\"}, " \
	"\"f16\": {\"bytes\": \"(" ELEMS ") * 2\", \"flops\": \"" FLOPS "\"}, "            \
	"\"bf16\": {\"bytes\": \"(" ELEMS ") * 2\", \"flops\": \"" FLOPS "\"}}"

/* Row ops: kf::row_block in kernels/kf_cuda.cuh ($esize: the dtype's bytes;
 * N: a block's threads on large inputs, 256 for the rmsnorm family, 128 for
 * layernorm and softmax). */
#define ROW_B "ceil_div(D * $esize, 2048) * 32"
#define ROW_TX                                                                          \
	"min(1024, max(32, " ROW_B " * (1 + (T * " ROW_B " <= 67584) + 2 * (T * " ROW_B \
	" <= 33792))))"
#define ROW_TY(N) "max(1, (" #N " / " ROW_TX ") * (T > 1024))"
#define ROW_GRID(N) \
	"\"grid\": [\"ceil_div(T, " ROW_TY(N) ")\"], \"block\": [\"" ROW_TX "\", \"" ROW_TY(N) "\"]"
/* A row op's baseline: KERNEL launched as kf::row_block with N threads;
 * ARGS the JSON list of its arguments. */
#define ROW_LAUNCH(KERNEL, N, ARGS) \
	"{\"kernel\": \"" KERNEL "\", " ROW_GRID(N) ", \"shared_bytes\": 0, \"args\": [" ARGS "]}"
#define ROW_BASELINE(KERNEL, N, ARGS) \
	"\"baseline\": {\"launch\": [" ROW_LAUNCH(KERNEL, N, ARGS) "]}"
/* A row op's baseline that picks by shape: KERNEL_VARIANT_$dtype with the
 * launch dims DIMS where WHEN holds, else KERNEL_$dtype launched as
 * ROW_BASELINE with N threads. */
#define ROW_BASELINE_PICK(KERNEL, VARIANT, WHEN, DIMS, N, ARGS)                              \
	"\"baseline\": {\"launch\": [{\"kernel\": \"" KERNEL "_" VARIANT                     \
	"_$dtype\", \"when\": \"" WHEN "\", " DIMS ", \"shared_bytes\": 0, \"args\": [" ARGS \
	"]}, {\"kernel\": \"" KERNEL "_$dtype\", \"when\": \"!(" WHEN                        \
	")\", " ROW_GRID(N) ", \"shared_bytes\": 0, \"args\": [" ARGS "]}]}"
/* rmsnorm and rmsnorm_noweight: rows of at most 32 whole 16-byte vectors
 * run KERNEL_short_$dtype, block (G, 256 / G) with G = D * $esize / 16
 * rounded up to a power of two, 2 rows a thread (SHORT_ROWS), grid
 * ceil_div(T, 256 / G * 2) (rms_short_group in kernels/rmsnorm.cu); other
 * few 16-bit rows KERNEL_rows_$dtype, one row a block of ceil_div(D / 16,
 * 32) * 32 threads (rms_few_rows); the rest KERNEL_$dtype as ROW_BASELINE.
 * The launcher's alignment tests always hold for the harness's buffers. */
#define RMS_SHORT "D * $esize % 16 == 0 && D * $esize <= 512"
#define RMS_NV	  "(D * $esize / 16)"
#define RMS_G                                                                                \
	"(1 + (" RMS_NV " > 1) + 2 * (" RMS_NV " > 2) + 4 * (" RMS_NV " > 4) + 8 * (" RMS_NV \
	" > 8) + 16 * (" RMS_NV " > 16))"
#define RMS_FEW "$esize == 2 && D % 16 == 0 && D <= 8192 && T * D <= 2162688"
#define RMS_LAUNCH(KERNEL, WHEN, DIMS, ARGS)                                \
	"{\"kernel\": \"" KERNEL "_$dtype\", \"when\": \"" WHEN "\", " DIMS \
	", \"shared_bytes\": 0, \"args\": [" ARGS "]}"
#define RMS_BASELINE(KERNEL, ARGS)                                                                 \
	"\"baseline\": {\"launch\": [" RMS_LAUNCH(                                                 \
		KERNEL "_short", RMS_SHORT,                                                        \
		"\"grid\": [\"ceil_div(T, 256 / " RMS_G " * 2)\"], \"block\": [\"" RMS_G           \
		"\", \"256 / " RMS_G "\"]",                                                        \
		ARGS) ", " RMS_LAUNCH(KERNEL "_rows", "!(" RMS_SHORT ") && " RMS_FEW,              \
				      "\"grid\": [\"T\"], \"block\": [\"ceil_div(D, 512) * 32\"]", \
				      ARGS) ", " RMS_LAUNCH(KERNEL,                                \
							    "!(" RMS_SHORT ") && !(" RMS_FEW ")",  \
							    ROW_GRID(256), ARGS) "]}"

#define T_TD(NAME, ROLE) \
	"\"" NAME "\": {\"dtype\": \"$dtype\", \"shape\": [\"T\", \"D\"], \"role\": \"" ROLE "\"}"
#define T_D(NAME)  "\"" NAME "\": {\"dtype\": \"$dtype\", \"shape\": [\"D\"], \"role\": \"input\"}"
#define EPS_SCALAR "\"scalars\": {\"eps\": {\"dtype\": \"f32\", \"value\": 1e-6}}"
#define SIZES_TD                                                                               \
	"\"default_sizes\": [{\"T\": 4096, \"D\": 4096}, {\"T\": 7, \"D\": 1000}, {\"T\": 3, " \
	"\"D\": 20001}]"

static const char *const SZ_TD[] = {"T", "D", NULL};
static const char *const SC_EPS[] = {"eps", NULL};
static const char *const SC_NONE[] = {NULL};

static size_t esz(enum kf_dtype dt)
{
	return dtype_bytes(dt);
}

/* --- rmsnorm family --------------------------------------------------------- */

static int ref_rmsnorm(const struct op_ref_call *c, struct kf_err *err)
{
	return rmsnorm_ref(c->out[0], c->in[0], c->in[1], c->sizes[0], c->sizes[1], c->scalars[0],
			   err);
}
static int ref_rmsnorm_noweight(const struct op_ref_call *c, struct kf_err *err)
{
	return rmsnorm_ref(c->out[0], c->in[0], NULL, c->sizes[0], c->sizes[1], c->scalars[0], err);
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
	"{" DTYPES_FLOAT ", \"tensors\": {" T_TD("x", "input") ", " T_D("w") ", " T_TD(
		"y", "output") "}, " EPS_SCALAR ", \"constraints\": [\"D >= 1\"], " SIZES_TD
			       ", " TOL_STD ", " COST3("2*T*D + D", "4*T*D") ", " RMS_BASELINE(
				       "kf_rmsnorm",
				       "\"y\", \"x\", \"w\", \"T\", \"D\", \"eps\"") "}";

static const char RMSNORM_NOWEIGHT_JSON[] =
	"{" DTYPES_FLOAT ", \"tensors\": {" T_TD("x", "input") ", " T_TD(
		"y", "output") "}, " EPS_SCALAR ", \"constraints\": [\"D >= 1\"], " SIZES_TD
			       ", " TOL_STD ", " COST3("2*T*D", "3*T*D") ", " RMS_BASELINE(
				       "kf_rmsnorm_noweight",
				       "\"y\", \"x\", \"T\", \"D\", \"eps\"") "}";

static const char ADD_RMSNORM_JSON[] =
	"{" DTYPES_FLOAT
	", \"tensors\": {" T_TD("x", "input") ", " T_TD("res", "input") ", " T_D("w") ", " T_TD(
		"y",
		"output") ", " T_TD("r",
				    "output") "}, " EPS_SCALAR
					      ", \"constraints\": [\"D >= 1\"], " SIZES_TD
					      ", " TOL_STD
					      ", " COST3("4*T*D + D", "5*T*D") ", " ROW_BASELINE(
						      "kf_add_rmsnorm_$dtype", 256,
						      "\"y\", \"r\", \"x\", \"res\", \"w\", \"T\", \"D\", \"eps\"") "}";

/* --- layernorm ----------------------------------------------------------------- */

static int ref_layernorm(const struct op_ref_call *c, struct kf_err *err)
{
	return layernorm_ref(c->out[0], c->in[0], c->in[1], c->in[2], c->sizes[0], c->sizes[1],
			     c->scalars[0], err);
}
static int ref_layernorm_noaffine(const struct op_ref_call *c, struct kf_err *err)
{
	return layernorm_ref(c->out[0], c->in[0], NULL, NULL, c->sizes[0], c->sizes[1],
			     c->scalars[0], err);
}
static void cost_layernorm(const int64_t *s, enum kf_dtype dt, double *b, double *f)
{
	layernorm_cost(s[0], s[1], esz(dt), 2, b, f);
}
static void cost_layernorm_noaffine(const int64_t *s, enum kf_dtype dt, double *b, double *f)
{
	layernorm_cost(s[0], s[1], esz(dt), 0, b, f);
}

static const char *const IN_X_W_B[] = {"x", "w", "b", NULL};

/* kernels/layernorm.cu: 16-bit rows of 257-512 whole 16-byte vectors run
 * KERNEL_2rows_$dtype, two rows a block of 128 threads (its alignment test
 * always holds for the harness's buffers); the rest KERNEL_$dtype as
 * ROW_BASELINE. */
#define LN_TWO "$esize == 2 && D % 8 == 0 && D > 2048 && D <= 4096"
#define LN_BASELINE(KERNEL, ARGS)                  \
	ROW_BASELINE_PICK(KERNEL, "2rows", LN_TWO, \
			  "\"grid\": [\"ceil_div(T, 2)\"], \"block\": [128]", 128, ARGS)

static const char LAYERNORM_JSON[] =
	"{" DTYPES_FLOAT
	", \"tensors\": {" T_TD("x", "input") ", " T_D("w") ", " T_D("b") ", " T_TD(
		"y", "output") "}, " EPS_SCALAR ", \"constraints\": [\"D >= 1\"], " SIZES_TD
			       ", " TOL_STD ", " COST3("2*T*D + 2*D", "9*T*D") ", " LN_BASELINE(
				       "kf_layernorm",
				       "\"y\", \"x\", \"w\", \"b\", \"T\", \"D\", \"eps\"") "}";

static const char LAYERNORM_NOAFFINE_JSON[] =
	"{" DTYPES_FLOAT ", \"tensors\": {" T_TD("x", "input") ", " T_TD(
		"y", "output") "}, " EPS_SCALAR ", \"constraints\": [\"D >= 1\"], " SIZES_TD
			       ", " TOL_STD ", " COST3("2*T*D", "7*T*D") ", " LN_BASELINE(
				       "kf_layernorm_noaffine",
				       "\"y\", \"x\", \"T\", \"D\", \"eps\"") "}";

/* --- softmax -------------------------------------------------------------------- */

static int ref_softmax(const struct op_ref_call *c, struct kf_err *err)
{
	return softmax_ref(c->out[0], c->in[0], c->sizes[0], c->sizes[1], err);
}
static void cost_softmax(const int64_t *s, enum kf_dtype dt, double *b, double *f)
{
	softmax_cost(s[0], s[1], esz(dt), b, f);
}

/* Outputs are about 1/D: absolute tolerances far below them. */
static const char SOFTMAX_JSON[] = "{" DTYPES_FLOAT ", \"tensors\": {" T_TD("x", "input") ", " T_TD(
	"y",
	"output") "}, "
		  "\"scalars\": {}, \"constraints\": [\"D >= 1\"], " SIZES_TD ", "
		  "\"tolerance\": {\"f32\": {\"atol\": 1e-8, \"rtol\": 1e-5}, "
		  "\"f16\": {\"atol\": 1e-6, \"rtol\": 2e-3}, \"bf16\": {\"atol\": 1e-6, \"rtol\": 1e-2}}, " COST3(
			  "2*T*D", "5*T*D") ", " ROW_BASELINE("kf_softmax_$dtype", 128,
							      "\"y\", \"x\", \"T\", \"D\"") "}";

/* --- activations ------------------------------------------------------------------ */

#define ACT_REF(NAME, OP)                                                                      \
	static int ref_##NAME(const struct op_ref_call *c, struct kf_err *err)                 \
	{                                                                                      \
		return activation_ref(OP, c->out[0], c->in[0], c->sizes[0], c->sizes[1], err); \
	}                                                                                      \
	static void cost_##NAME(const int64_t *s, enum kf_dtype dt, double *b, double *f)      \
	{                                                                                      \
		activation_cost(OP, s[0], s[1], esz(dt), b, f);                                \
	}
ACT_REF(silu_and_mul, ACT_REF_SILU_AND_MUL)
ACT_REF(geglu, ACT_REF_GEGLU)
ACT_REF(geglu_tanh, ACT_REF_GEGLU_TANH)
ACT_REF(gelu, ACT_REF_GELU)
ACT_REF(gelu_tanh, ACT_REF_GELU_TANH)

/* kernels/activation.cu: silu_and_mul's flat kernels for whole 16-byte
 * vectors (their alignment test always holds for the harness's buffers)
 * and T*D < 2^30, _flat_pow2 where D is a power of two (it divides 2^30),
 * _flat otherwise; else a row a thread. The other gated ops a row a
 * thread, the plain ones two. */
#define ACT_GRID(ROWS)                                               \
	"\"grid\": [\"ceil_div(D, 2048)\", \"min(ceil_div(T, " #ROWS \
	"), 65535)\"], \"block\": [256]"
#define ACT_ARGS "\"shared_bytes\": 0, \"args\": [\"y\", \"x\", \"T\", \"D\"]"
#define ACT_ROW_LAUNCH(KERNEL) \
	"[{\"kernel\": \"" KERNEL "_$dtype\", " ACT_GRID(1) ", " ACT_ARGS "}]"
#define SILU_FLAT "D % (16 / $esize) == 0 && T*D < 1073741824"
#define SILU_FLAT_LAUNCH(NAME, WHEN)                                                           \
	"{\"kernel\": \"kf_silu_and_mul_" NAME "_$dtype\", \"when\": \"" SILU_FLAT " && " WHEN \
	"\", \"grid\": [\"ceil_div(T*D / (16 / $esize), 128)\"], \"block\": [128], "           \
	"\"shared_bytes\": 0, \"args\": [\"y\", \"x\", \"T*D\", \"D\"]}"
#define SILU_LAUNCH                                                                          \
	"[" SILU_FLAT_LAUNCH("flat_pow2", "1073741824 % D == 0") ", " SILU_FLAT_LAUNCH(      \
		"flat", "1073741824 % D != 0") ", {\"kernel\": \"kf_silu_and_mul_$dtype\", " \
					       "\"when\": \"!(" SILU_FLAT                    \
					       ")\", " ACT_GRID(1) ", " ACT_ARGS "}]"
#define GATED_JSON(LAUNCH, FLOPS)                                                                \
	"{" DTYPES_FLOAT ", "                                                                    \
	"\"tensors\": {\"x\": {\"dtype\": \"$dtype\", \"shape\": [\"T\", \"2*D\"], \"role\": "   \
	"\"input\"}, " T_TD(                                                                     \
		"y", "output") "}, \"scalars\": {}, \"constraints\": [\"D >= 1\"], " SIZES_TD    \
			       ", " TOL_STD                                                      \
			       ", " COST3("3*T*D", FLOPS) ", \"baseline\": {\"launch\": " LAUNCH \
							  "}}"
#define PLAIN_JSON(KERNEL, FLOPS)                                                                  \
	"{" DTYPES_FLOAT ", \"tensors\": {" T_TD("x", "input") ", " T_TD(                          \
		"y",                                                                               \
		"output") "}, "                                                                    \
			  "\"scalars\": {}, \"constraints\": [\"D >= 1\"], " SIZES_TD ", " TOL_STD \
			  ", " COST3("2*T*D",                                                      \
				     FLOPS) ", \"baseline\": {\"launch\": [{\"kernel\": \"" KERNEL \
					    "_$dtype\", " ACT_GRID(2) ", " ACT_ARGS "}]}}"

static const char SILU_AND_MUL_JSON[] = GATED_JSON(SILU_LAUNCH, "5*T*D");
static const char GEGLU_JSON[] = GATED_JSON(ACT_ROW_LAUNCH("kf_geglu"), "9*T*D");
static const char GEGLU_TANH_JSON[] = GATED_JSON(ACT_ROW_LAUNCH("kf_geglu_tanh"), "10*T*D");
static const char GELU_JSON[] = PLAIN_JSON("kf_gelu", "8*T*D");
static const char GELU_TANH_JSON[] = PLAIN_JSON("kf_gelu_tanh", "9*T*D");

/* --- rotary embedding --------------------------------------------------------------- */

static int ref_rope_neox(const struct op_ref_call *c, struct kf_err *err)
{
	return rope_ref(1, c->out[0], c->in[0], c->in[1], c->in[2], c->sizes[0], c->sizes[1],
			c->sizes[2], err);
}
static int ref_rope_gptj(const struct op_ref_call *c, struct kf_err *err)
{
	return rope_ref(0, c->out[0], c->in[0], c->in[1], c->in[2], c->sizes[0], c->sizes[1],
			c->sizes[2], err);
}
static void cost_rope(const int64_t *s, enum kf_dtype dt, double *b, double *f)
{
	rope_cost(s[0], s[1], s[2], esz(dt), b, f);
}

static const char *const SZ_THD[] = {"T", "H", "Dh", NULL};
static const char *const IN_X_COS_SIN[] = {"x", "cos", "sin", NULL};

#define ROPE_JSON(KERNEL)                                                                          \
	"{" DTYPES_FLOAT ", \"tensors\": {"                                                        \
	"\"x\": {\"dtype\": \"$dtype\", \"shape\": [\"T\", \"H\", \"Dh\"], \"role\": \"input\"}, " \
	"\"cos\": {\"dtype\": \"f32\", \"shape\": [\"T\", \"Dh / 2\"], \"role\": \"input\", "      \
	"\"init\": \"uniform\"}, "                                                                 \
	"\"sin\": {\"dtype\": \"f32\", \"shape\": [\"T\", \"Dh / 2\"], \"role\": \"input\", "      \
	"\"init\": \"uniform\"}, "                                                                 \
	"\"y\": {\"dtype\": \"$dtype\", \"shape\": [\"T\", \"H\", \"Dh\"], \"role\": "             \
	"\"output\"}}, "                                                                           \
	"\"scalars\": {}, \"constraints\": [\"Dh >= 2\", \"Dh % 2 == 0\"], "                       \
	"\"default_sizes\": [{\"T\": 4096, \"H\": 32, \"Dh\": 128}, {\"T\": 7, \"H\": 3, \"Dh\": " \
	"66}], " TOL_STD ", \"cost\": {"                                                           \
	"\"f32\": {\"bytes\": \"2*T*H*Dh*4 + 2*T*(Dh/2)*4\", \"flops\": \"3*T*H*Dh\"}, "           \
	"\"f16\": {\"bytes\": \"2*T*H*Dh*2 + 2*T*(Dh/2)*4\", \"flops\": \"3*T*H*Dh\"}, "           \
	"\"bf16\": {\"bytes\": \"2*T*H*Dh*2 + 2*T*(Dh/2)*4\", \"flops\": \"3*T*H*Dh\"}}, "         \
	"\"baseline\": {\"launch\": [{\"kernel\": \"" KERNEL "_$dtype\", "                         \
	"\"grid\": [\"ceil_div(T*H*Dh, 4096)\"], \"block\": [256], \"shared_bytes\": 0, "          \
	"\"args\": [\"y\", \"x\", \"cos\", \"sin\", \"T\", \"H\", \"Dh\"]}]}}"

static const char ROPE_NEOX_JSON[] = ROPE_JSON("kf_rope_neox");
static const char ROPE_GPTJ_JSON[] = ROPE_JSON("kf_rope_gptj");

/* --- AdaLN modulation ---------------------------------------------------------------- */

static int ref_adaln(const struct op_ref_call *c, struct kf_err *err)
{
	return adaln_modulate_ref(c->out[0], c->in[0], c->in[1], c->in[2], c->sizes[0], c->sizes[1],
				  c->sizes[2], err);
}
static void cost_adaln(const int64_t *s, enum kf_dtype dt, double *b, double *f)
{
	adaln_modulate_cost(s[0], s[1], s[2], esz(dt), b, f);
}

static const char *const SZ_BSD[] = {"B", "S", "D", NULL};
static const char *const IN_X_SCALE_SHIFT[] = {"x", "scale", "shift", NULL};

/* kernels/adaln.cu: the flat kernel for whole 16-byte vectors (its
 * alignment test always holds for the harness's buffers) and B*S*D/V < 2^32 */
#define ADALN_FLAT "D % (16 / $esize) == 0 && B*S*(D / (16 / $esize)) <= 4294967295"

static const char ADALN_JSON[] =
	"{" DTYPES_FLOAT ", \"tensors\": {"
	"\"x\": {\"dtype\": \"$dtype\", \"shape\": [\"B\", \"S\", \"D\"], \"role\": \"input\"}, "
	"\"scale\": {\"dtype\": \"$dtype\", \"shape\": [\"B\", \"D\"], \"role\": \"input\"}, "
	"\"shift\": {\"dtype\": \"$dtype\", \"shape\": [\"B\", \"D\"], \"role\": \"input\"}, "
	"\"y\": {\"dtype\": \"$dtype\", \"shape\": [\"B\", \"S\", \"D\"], \"role\": \"output\"}}, "
	"\"scalars\": {}, \"constraints\": [\"D >= 1\"], "
	"\"default_sizes\": [{\"B\": 2, \"S\": 4096, \"D\": 3072}, {\"B\": 3, \"S\": 5, \"D\": "
	"1000}], " TOL_STD ", " COST3(
		"2*B*S*D + 2*B*D",
		"2*B*S*D") ", "
			   "\"baseline\": {\"launch\": [{\"kernel\": \"kf_adaln_modulate_flat_$dtype\", "
			   "\"when\": \"" ADALN_FLAT
			   "\", \"grid\": [\"ceil_div(B*S*(D / (16 / $esize)), "
			   "128)\"], \"block\": [128], \"shared_bytes\": 0, \"args\": [\"y\", \"x\", "
			   "\"scale\", \"shift\", \"B\", \"S\", \"D\"]}, "
			   "{\"kernel\": \"kf_adaln_modulate_$dtype\", \"when\": \"!(" ADALN_FLAT
			   ")\", "
			   "\"grid\": [\"ceil_div(D, 2048)\", \"min(ceil_div(B*S, 2), 65535)\"], "
			   "\"block\": [256], "
			   "\"shared_bytes\": 0, \"args\": [\"y\", \"x\", \"scale\", \"shift\", "
			   "\"B\", \"S\", \"D\"]}]}}";

/* --- GEMM ------------------------------------------------------------------------------ */

static int ref_gemm(const struct op_ref_call *c, struct kf_err *err)
{
	return gemm_ref(c->out[0], c->in[0], c->in[1], c->sizes[0], c->sizes[1], c->sizes[2], err);
}
static void cost_gemm(const int64_t *s, enum kf_dtype dt, double *b, double *f)
{
	gemm_cost(s[0], s[1], s[2], esz(dt), b, f);
}

static const char *const SZ_MNK[] = {"M", "N", "K", NULL};

/* fp32 accumulation over K, one rounding of y: relative error a bf16/f16
 * half-ulp; absolute slack for outputs near zero. */
static const char GEMM_JSON[] =
	"{\"dtypes\": [\"bf16\", \"f16\"], \"tensors\": {"
	"\"x\": {\"dtype\": \"$dtype\", \"shape\": [\"M\", \"K\"], \"role\": \"input\"}, "
	"\"w\": {\"dtype\": \"$dtype\", \"shape\": [\"N\", \"K\"], \"role\": \"input\"}, "
	"\"y\": {\"dtype\": \"$dtype\", \"shape\": [\"M\", \"N\"], \"role\": \"output\"}}, "
	"\"scalars\": {}, \"constraints\": [\"K % 8 == 0\", \"ceil_div(M, 128) <= 65535\"], "
	"\"default_sizes\": [{\"M\": 1024, \"N\": 1024, \"K\": 1024}, {\"M\": 77, \"N\": 200, "
	"\"K\": 72}], "
	"\"tolerance\": {\"f16\": {\"atol\": 1e-2, \"rtol\": 2e-3}, \"bf16\": {\"atol\": 2e-2, "
	"\"rtol\": 1e-2}}, "
	"\"cost\": {\"f16\": {\"bytes\": \"(M*K + N*K + M*N) * 2\", \"flops\": \"2*M*N*K\"}, "
	"\"bf16\": {\"bytes\": \"(M*K + N*K + M*N) * 2\", \"flops\": \"2*M*N*K\"}}, "
	"\"baseline\": {\"launch\": [{\"kernel\": \"kf_gemm_$dtype\", "
	"\"grid\": [\"ceil_div(N, 128)\", \"ceil_div(M, 128)\"], \"block\": [256], "
	"\"shared_bytes\": 98304, \"args\": [\"y\", \"x\", \"w\", \"M\", \"N\", \"K\"]}]}}";

/* --- the registry ------------------------------------------------------------ */

static const struct op_template OPS[] = {
	{"rmsnorm", "y = x / sqrt(mean(x^2, last dim) + eps) * w", SZ_TD, IN_X_W, OUT_Y, SC_EPS,
	 RMSNORM_JSON, ref_rmsnorm, cost_rmsnorm,
	 "RMS normalization of each row of x, scaled per column by w (LLaMA-style pre-norm)."},
	{"rmsnorm_noweight", "y = x / sqrt(mean(x^2, last dim) + eps)", SZ_TD, IN_X, OUT_Y, SC_EPS,
	 RMSNORM_NOWEIGHT_JSON, ref_rmsnorm_noweight, cost_rmsnorm_noweight,
	 "RMS normalization of each row of x without a learned scale."},
	{"add_rmsnorm", "r = x + res; y = r / sqrt(mean(r^2, last dim) + eps) * w", SZ_TD,
	 IN_X_RES_W, OUT_Y_R, SC_EPS, ADD_RMSNORM_JSON, ref_add_rmsnorm, cost_add_rmsnorm,
	 "Residual add then RMS normalization: writes the sum r (the new residual stream) and its normalized, scaled rows y."},
	{"layernorm", "y = (x - mean) / sqrt(var + eps) * w + b over the last dim", SZ_TD, IN_X_W_B,
	 OUT_Y, SC_EPS, LAYERNORM_JSON, ref_layernorm, cost_layernorm,
	 "Layer normalization of each row of x: subtract the row mean, divide by the row standard deviation, then scale by w and shift by b."},
	{"layernorm_noaffine", "y = (x - mean) / sqrt(var + eps) over the last dim", SZ_TD, IN_X,
	 OUT_Y, SC_EPS, LAYERNORM_NOAFFINE_JSON, ref_layernorm_noaffine, cost_layernorm_noaffine,
	 "Layer normalization of each row of x without scale or shift."},
	{"softmax", "y = exp(x - max) / sum(exp(x - max)) over the last dim", SZ_TD, IN_X, OUT_Y,
	 SC_NONE, SOFTMAX_JSON, ref_softmax, cost_softmax,
	 "Numerically stable softmax of each row of x."},
	{"silu_and_mul", "y = silu(x[:, :D]) * x[:, D:] (SwiGLU), x (T, 2D)", SZ_TD, IN_X, OUT_Y,
	 SC_NONE, SILU_AND_MUL_JSON, ref_silu_and_mul, cost_silu_and_mul,
	 "SwiGLU gate of a transformer MLP: the first half of each row through SiLU, times the second half."},
	{"geglu", "y = gelu(x[:, :D]) * x[:, D:] (erf gelu), x (T, 2D)", SZ_TD, IN_X, OUT_Y,
	 SC_NONE, GEGLU_JSON, ref_geglu, cost_geglu,
	 "GeGLU gate: the first half of each row through exact (erf) GELU, times the second half."},
	{"geglu_tanh", "y = gelu_tanh(x[:, :D]) * x[:, D:], x (T, 2D)", SZ_TD, IN_X, OUT_Y, SC_NONE,
	 GEGLU_TANH_JSON, ref_geglu_tanh, cost_geglu_tanh,
	 "GeGLU gate with the tanh approximation of GELU."},
	{"gelu", "y = x/2 * (1 + erf(x / sqrt(2)))", SZ_TD, IN_X, OUT_Y, SC_NONE, GELU_JSON,
	 ref_gelu, cost_gelu, "Exact GELU activation, elementwise."},
	{"gelu_tanh", "y = x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))", SZ_TD, IN_X, OUT_Y,
	 SC_NONE, GELU_TANH_JSON, ref_gelu_tanh, cost_gelu_tanh,
	 "GELU activation with the tanh approximation, elementwise."},
	{"rope_neox", "rotary embedding, rotate-halves (GPT-NeoX) layout, x (T, H, Dh)", SZ_THD,
	 IN_X_COS_SIN, OUT_Y, SC_NONE, ROPE_NEOX_JSON, ref_rope_neox, cost_rope,
	 "Rotary position embedding of each head's vector, pairs (i, i + Dh/2) rotated by the angle whose cos and sin are given per token: y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin."},
	{"rope_gptj", "rotary embedding, interleaved-pairs (GPT-J) layout, x (T, H, Dh)", SZ_THD,
	 IN_X_COS_SIN, OUT_Y, SC_NONE, ROPE_GPTJ_JSON, ref_rope_gptj, cost_rope,
	 "Rotary position embedding with interleaved pairs (2i, 2i + 1) rotated by the per-token cos and sin: y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin."},
	{"adaln_modulate", "y = x * (1 + scale) + shift, x (B, S, D), scale/shift (B, D)", SZ_BSD,
	 IN_X_SCALE_SHIFT, OUT_Y, SC_NONE, ADALN_JSON, ref_adaln, cost_adaln,
	 "Adaptive layer-norm modulation of a diffusion transformer: each batch's rows scaled by (1 + scale) and shifted by shift."},
	{"gemm", "y = x @ w^T, x (M, K), w (N, K), fp32 accumulation", SZ_MNK, IN_X_W, OUT_Y,
	 SC_NONE, GEMM_JSON, ref_gemm, cost_gemm,
	 "Matrix multiply of x by the transpose of w (a linear layer without bias), accumulated in fp32."},
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
