/* check_kernels_ref: the float64 references of kernels/ref/ against
 * hand-computed values and invariants, their documented errors, the cost
 * functions against their formulas, and the op templates of kernels/ops.c
 * (spec_json parses, has the keys the contract requires, agrees with the
 * template's names, and its cost expressions agree with the C cost
 * functions). CPU only; runs in CI. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype.h"
#include "kernels/op.h"
#include "kernels/ref/activation_ref.h"
#include "kernels/ref/adaln_ref.h"
#include "kernels/ref/gelu_fast.h"
#include "kernels/ref/gemm_ref.h"
#include "kernels/ref/layernorm_ref.h"
#include "kernels/ref/rmsnorm_ref.h"
#include "kernels/ref/rope_ref.h"
#include "kernels/ref/softmax_ref.h"
#include "sandbox/spec/expr.h"
#include "sandbox/spec/spec.h"

#define NEAR(a, b, tol)                                                                    \
	ck_assert_msg(fabs((a) - (b)) <= (tol), "%s = %.17g, want %.17g", #a, (double)(a), \
		      (double)(b))

/* Deterministic pseudo-random values in [-2, 2). */
static void fill(double *v, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		v[i] = ((double)(seed >> 11) / 9007199254740992.0) * 4.0 - 2.0;
	}
}

/* --- rmsnorm ------------------------------------------------------------------ */

START_TEST(rmsnorm_matches_hand_computed_values)
{
	/* x = (3, 4): mean square 12.5, y = x / sqrt(12.5) */
	double x[2] = {3, 4}, w[2] = {2, 0.5}, y[2];
	ck_assert_int_eq(rmsnorm_ref(y, x, NULL, 1, 2, 0, NULL), 0);
	NEAR(y[0], 3 / sqrt(12.5), 1e-15);
	NEAR(y[1], 4 / sqrt(12.5), 1e-15);
	ck_assert_int_eq(rmsnorm_ref(y, x, w, 1, 2, 0, NULL), 0);
	NEAR(y[0], 6 / sqrt(12.5), 1e-15);
	NEAR(y[1], 2 / sqrt(12.5), 1e-15);
	/* eps enters under the root */
	ck_assert_int_eq(rmsnorm_ref(y, x, NULL, 1, 2, 0.5, NULL), 0);
	NEAR(y[0], 3 / sqrt(13.0), 1e-15);
}
END_TEST

START_TEST(rmsnorm_output_has_unit_rms_before_weight)
{
	enum { T = 5, D = 37 };
	double x[T * D], y[T * D];
	fill(x, T * D, 1);
	ck_assert_int_eq(rmsnorm_ref(y, x, NULL, T, D, 0, NULL), 0);
	for (int t = 0; t < T; t++) {
		double ss = 0;
		for (int i = 0; i < D; i++)
			ss += y[t * D + i] * y[t * D + i];
		NEAR(sqrt(ss / D), 1.0, 1e-12);
	}
}
END_TEST

START_TEST(add_rmsnorm_normalizes_the_sum_it_returns)
{
	enum { T = 3, D = 10 };
	double x[T * D], res[T * D], w[D], y[T * D], r[T * D], y2[T * D];
	fill(x, T * D, 2);
	fill(res, T * D, 3);
	fill(w, D, 4);
	ck_assert_int_eq(add_rmsnorm_ref(y, r, x, res, w, T, D, 1e-6, NULL), 0);
	for (int k = 0; k < T * D; k++)
		NEAR(r[k], x[k] + res[k], 0);
	ck_assert_int_eq(rmsnorm_ref(y2, r, w, T, D, 1e-6, NULL), 0);
	for (int k = 0; k < T * D; k++)
		NEAR(y[k], y2[k], 0);
}
END_TEST

/* --- layernorm ---------------------------------------------------------------- */

START_TEST(layernorm_matches_hand_computed_values)
{
	/* x = 1..4: mean 2.5, biased variance 1.25 */
	double x[4] = {1, 2, 3, 4}, w[4] = {1, 2, 1, 1}, b[4] = {0, 0, 0, 10}, y[4];
	ck_assert_int_eq(layernorm_ref(y, x, NULL, NULL, 1, 4, 0, NULL), 0);
	NEAR(y[0], -1.5 / sqrt(1.25), 1e-15);
	NEAR(y[3], 1.5 / sqrt(1.25), 1e-15);
	ck_assert_int_eq(layernorm_ref(y, x, w, b, 1, 4, 0, NULL), 0);
	NEAR(y[1], -0.5 / sqrt(1.25) * 2, 1e-15);
	NEAR(y[3], 1.5 / sqrt(1.25) + 10, 1e-15);
}
END_TEST

START_TEST(layernorm_output_has_zero_mean_unit_variance_and_ignores_offsets)
{
	enum { T = 4, D = 33 };
	double x[T * D], y[T * D], x2[T * D], y2[T * D];
	fill(x, T * D, 5);
	for (int k = 0; k < T * D; k++)
		x2[k] = x[k] + 1000.0;
	ck_assert_int_eq(layernorm_ref(y, x, NULL, NULL, T, D, 0, NULL), 0);
	ck_assert_int_eq(layernorm_ref(y2, x2, NULL, NULL, T, D, 0, NULL), 0);
	for (int t = 0; t < T; t++) {
		double m = 0, v = 0;
		for (int i = 0; i < D; i++)
			m += y[t * D + i];
		m /= D;
		for (int i = 0; i < D; i++)
			v += (y[t * D + i] - m) * (y[t * D + i] - m);
		NEAR(m, 0.0, 1e-14);
		NEAR(v / D, 1.0, 1e-12);
	}
	for (int k = 0; k < T * D; k++)
		NEAR(y2[k], y[k], 1e-9);
}
END_TEST

/* --- softmax ------------------------------------------------------------------ */

START_TEST(softmax_matches_hand_computed_values_without_overflow)
{
	double x[3] = {0, log(2.0), log(3.0)}, y[3];
	ck_assert_int_eq(softmax_ref(y, x, 1, 3, NULL), 0);
	NEAR(y[0], 1.0 / 6, 1e-15);
	NEAR(y[1], 2.0 / 6, 1e-15);
	NEAR(y[2], 3.0 / 6, 1e-15);
	double big[2] = {1000, 1001};
	ck_assert_int_eq(softmax_ref(y, big, 1, 2, NULL), 0);
	NEAR(y[0], 1 / (1 + exp(1.0)), 1e-15);
	NEAR(y[1], exp(1.0) / (1 + exp(1.0)), 1e-15);
}
END_TEST

START_TEST(softmax_rows_sum_to_one_and_are_shift_invariant)
{
	enum { T = 6, D = 29 };
	double x[T * D], xs[T * D], y[T * D], ys[T * D];
	fill(x, T * D, 6);
	for (int k = 0; k < T * D; k++) {
		x[k] *= 5; /* spread over [-10, 10) */
		xs[k] = x[k] - 37.5;
	}
	ck_assert_int_eq(softmax_ref(y, x, T, D, NULL), 0);
	ck_assert_int_eq(softmax_ref(ys, xs, T, D, NULL), 0);
	for (int t = 0; t < T; t++) {
		double s = 0;
		for (int i = 0; i < D; i++) {
			ck_assert(y[t * D + i] > 0);
			s += y[t * D + i];
		}
		NEAR(s, 1.0, 1e-14);
	}
	for (int k = 0; k < T * D; k++)
		NEAR(ys[k], y[k], 1e-15);
}
END_TEST

/* --- activations ------------------------------------------------------------- */

START_TEST(activations_match_known_values)
{
	/* Phi(1) = 0.841344746068542948...; gelu(x) = x * Phi(x) */
	NEAR(act_ref_gelu(1.0), 0.8413447460685429, 1e-15);
	NEAR(act_ref_gelu(-1.0), -0.15865525393145707, 1e-15);
	NEAR(act_ref_gelu(0.0), 0.0, 0);
	NEAR(act_ref_gelu_tanh(1.0), 0.8411919906082768, 1e-15);
	NEAR(act_ref_gelu_tanh(-3.0), -0.0036373920817729943, 1e-15);
	NEAR(act_ref_silu(1.0), 0.7310585786300049, 1e-15);
	NEAR(act_ref_silu(0.0), 0.0, 0);
	NEAR(act_ref_silu(-40.0), -40.0 / (1 + exp(40.0)), 1e-25);
	/* the tanh form approximates the erf form to about 1e-3 */
	for (double a = -6; a <= 6; a += 0.25)
		NEAR(act_ref_gelu_tanh(a), act_ref_gelu(a), 1e-3);
}
END_TEST

START_TEST(gated_activations_multiply_the_second_half)
{
	/* T = 2, D = 2: x rows (a0 a1 | b0 b1) */
	double x[8] = {1, -1, 2, 3, 0.5, 2, -1, 4}, y[4];
	ck_assert_int_eq(activation_ref(ACT_REF_SILU_AND_MUL, y, x, 2, 2, NULL), 0);
	NEAR(y[0], act_ref_silu(1) * 2, 1e-15);
	NEAR(y[1], act_ref_silu(-1) * 3, 1e-15);
	NEAR(y[2], act_ref_silu(0.5) * -1, 1e-15);
	NEAR(y[3], act_ref_silu(2) * 4, 1e-15);
	ck_assert_int_eq(activation_ref(ACT_REF_GEGLU, y, x, 2, 2, NULL), 0);
	NEAR(y[3], act_ref_gelu(2) * 4, 1e-15);
	ck_assert_int_eq(activation_ref(ACT_REF_GEGLU_TANH, y, x, 2, 2, NULL), 0);
	NEAR(y[1], act_ref_gelu_tanh(-1) * 3, 1e-15);
	double g[4];
	ck_assert_int_eq(activation_ref(ACT_REF_GELU, g, x, 1, 4, NULL), 0);
	NEAR(g[3], act_ref_gelu(3), 1e-15);
	ck_assert_int_eq(activation_ref(ACT_REF_GELU_TANH, g, x, 1, 4, NULL), 0);
	NEAR(g[2], act_ref_gelu_tanh(2), 1e-15);
}
END_TEST

/* The 16-bit GELU formulas (kernels/ref/gelu_fast.h), emulated in float
 * with the hardware reciprocal and 2^x perturbed by more than their
 * documented error (rcp.approx 1 ulp, ex2.approx 2 ulp). */
static const double RCP_REL[] = {-2.4e-7, 0, 2.4e-7};
static const double EX2_REL[] = {-4.8e-7, 0, 4.8e-7};

START_TEST(gelu_fast_erf_error_is_below_its_bound_on_a_dense_grid)
{
	/* |gelu_fast(x) - gelu(x)| <= |x| * KF_GELU_ERF_PHI_ERR, x in [-12, 12]
	 * step 2^-12, plus a float's rounding of the product (6e-8 relative) */
	double worst = 0;
	for (int i = -12 * 4096; i <= 12 * 4096; i++) {
		const float x = (float)i / 4096.f;
		const double want = act_ref_gelu(x);
		for (int r = 0; r < 3; r++) {
			const double got = gelu_fast_erf_emul(x, RCP_REL[r]);
			const double e = fabs(got - want) - 6e-8 * fabs(want);
			ck_assert_msg(e <= fabs(x) * KF_GELU_ERF_PHI_ERR,
				      "gelu_fast(%.9g) = %.9g, want %.9g", x, got, want);
			if (x != 0 && e / fabs(x) > worst)
				worst = e / fabs(x);
		}
	}
	/* the bound is not vacuous: the formula's own error shows */
	ck_assert_msg(worst > 1e-7 && worst < KF_GELU_ERF_PHI_ERR, "Phi error %.3g", worst);
	/* limits and specials */
	ck_assert(gelu_fast_erf_emul(1e30f, 0) == 1e30f);
	ck_assert(gelu_fast_erf_emul(-1e30f, 0) == 0.f);
	ck_assert(gelu_fast_erf_emul(INFINITY, 0) == INFINITY);
	ck_assert(isnan(gelu_fast_erf_emul(NAN, 0)));
}
END_TEST

START_TEST(gelu_fast_tanh_is_within_3e_5_relative_on_a_dense_grid)
{
	/* x in [-48, 48] step 2^-9 (every f16/bf16 input: the next test) */
	for (int i = -48 * 512; i <= 48 * 512; i++) {
		const float x = (float)i / 512.f;
		/* the same function as act_ref_gelu_tanh, written as x * sigmoid(2u),
		 * since float64's tanh is exactly -1 below x = -6.5 and its
		 * gelu_tanh 0 where the true value is 1e-16 or less */
		const double u = 0.7978845608028654 * (x + 0.044715 * (double)x * x * x);
		const double want = x / (1 + exp(-2 * u));
		ck_assert(fabs(want - act_ref_gelu_tanh(x)) <= 1e-15 * (1 + fabs(want)));
		for (int e = 0; e < 3; e++)
			for (int r = 0; r < 3; r++) {
				const double got = gelu_fast_tanh_emul(x, EX2_REL[e], RCP_REL[r]);
				ck_assert_msg(fabs(got - want) <= 3e-5 * fabs(want) + 1e-35,
					      "gelu_tanh_fast(%.9g) = %.9g, want %.9g", x, got,
					      want);
			}
	}
	ck_assert(gelu_fast_tanh_emul(1e30f, 0, 0) == 1e30f);
	ck_assert(gelu_fast_tanh_emul(-1e30f, 0, 0) == 0.f);
	ck_assert(gelu_fast_tanh_emul(INFINITY, 0, 0) == INFINITY);
}
END_TEST

static float round16(int bf, float v)
{
	return bf ? dtype_bf16_to_f32(dtype_f32_to_bf16(v)) : dtype_f16_to_f32(dtype_f32_to_f16(v));
}

/* Every finite f16 and bf16 input a (loop index: 0 f16, 1 bf16), plain and
 * gated (times b), through both fast formulas with perturbed hardware
 * steps, rounded to the dtype, meets the op templates' tolerances
 * (|got - want| <= atol + rtol |want|; f16 2e-3, bf16 1e-2). */
START_TEST(gelu_fast_meets_the_op_tolerances_for_every_16_bit_input)
{
	const int bf = _i;
	const double tol = bf ? 1e-2 : 2e-3, dmax = bf ? 3.3e38 : 65504;
	static const float B[] = {1.f, -1.f, 3.5f, -17.25f, 0.0625f};
	for (uint32_t u = 0; u < 65536; u++) {
		const float a = bf ? dtype_bf16_to_f32((uint16_t)u) : dtype_f16_to_f32((uint16_t)u);
		if (!isfinite(a))
			continue;
		const double we = act_ref_gelu(a), wt = act_ref_gelu_tanh(a);
		for (size_t k = 0; k < sizeof B / sizeof B[0]; k++)
			for (int p = 0; p < 3; p++) {
				const float ge = gelu_fast_erf_emul(a, RCP_REL[p]) * B[k];
				const float gt =
					gelu_fast_tanh_emul(a, EX2_REL[p], RCP_REL[2 - p]) * B[k];
				const double wge = we * B[k], wgt = wt * B[k];
				if (fabs(wge) < dmax)
					ck_assert_msg(fabs(round16(bf, ge) - wge) <=
							      tol + tol * fabs(wge),
						      "%s gelu(%.9g) * %g = %.9g, want %.9g",
						      bf ? "bf16" : "f16", a, B[k], round16(bf, ge),
						      wge);
				if (fabs(wgt) < dmax)
					ck_assert_msg(fabs(round16(bf, gt) - wgt) <=
							      tol + tol * fabs(wgt),
						      "%s gelu_tanh(%.9g) * %g = %.9g, want %.9g",
						      bf ? "bf16" : "f16", a, B[k], round16(bf, gt),
						      wgt);
			}
	}
}
END_TEST

/* --- rope --------------------------------------------------------------------- */

START_TEST(rope_rotates_the_right_pairs_in_each_layout)
{
	/* Dh = 4, one token, one head; pair 0 by 90 degrees, pair 1 by 0. */
	double x[4] = {1, 2, 3, 4}, c[2] = {0, 1}, s[2] = {1, 0}, y[4];
	ck_assert_int_eq(rope_ref(1, y, x, c, s, 1, 1, 4, NULL), 0);
	/* NeoX pairs (x0, x2), (x1, x3): (1,3) -> (-3, 1); (2,4) unchanged */
	NEAR(y[0], -3, 1e-15);
	NEAR(y[2], 1, 1e-15);
	NEAR(y[1], 2, 1e-15);
	NEAR(y[3], 4, 1e-15);
	ck_assert_int_eq(rope_ref(0, y, x, c, s, 1, 1, 4, NULL), 0);
	/* GPT-J pairs (x0, x1), (x2, x3): (1,2) -> (-2, 1); (3,4) unchanged */
	NEAR(y[0], -2, 1e-15);
	NEAR(y[1], 1, 1e-15);
	NEAR(y[2], 3, 1e-15);
	NEAR(y[3], 4, 1e-15);
}
END_TEST

START_TEST(rope_preserves_pair_norms)
{
	enum { T = 3, H = 2, Dh = 10, HALF = Dh / 2 };
	double x[T * H * Dh], y[T * H * Dh], c[T * HALF], s[T * HALF], ang[T * HALF];
	fill(x, T * H * Dh, 7);
	fill(ang, T * HALF, 8);
	for (int k = 0; k < T * HALF; k++)
		c[k] = cos(ang[k] * 3), s[k] = sin(ang[k] * 3);
	for (int neox = 0; neox < 2; neox++) {
		ck_assert_int_eq(rope_ref(neox, y, x, c, s, T, H, Dh, NULL), 0);
		for (int row = 0; row < T * H; row++)
			for (int k = 0; k < HALF; k++) {
				int a = neox ? k : 2 * k, b = neox ? k + HALF : 2 * k + 1;
				const double *xr = x + row * Dh, *yr = y + row * Dh;
				NEAR(yr[a] * yr[a] + yr[b] * yr[b], xr[a] * xr[a] + xr[b] * xr[b],
				     1e-13);
			}
	}
}
END_TEST

/* --- adaln, gemm ---------------------------------------------------------------- */

START_TEST(adaln_modulate_uses_each_batchs_scale_and_shift)
{
	/* B = 2, S = 2, D = 2 */
	double x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	double sc[4] = {0, 1, -1, 0.5}, sh[4] = {0, 0, 10, -1}, y[8];
	ck_assert_int_eq(adaln_modulate_ref(y, x, sc, sh, 2, 2, 2, NULL), 0);
	const double want[8] = {1, 4, 3, 8, 10, 8, 10, 11};
	for (int k = 0; k < 8; k++)
		NEAR(y[k], want[k], 1e-15);
}
END_TEST

START_TEST(gemm_multiplies_by_the_transposed_weight)
{
	/* x (2, 3), w (2, 3): y = x @ w^T */
	double x[6] = {1, 2, 3, 4, 5, 6}, w[6] = {1, 0, -1, 2, 1, 0}, y[4];
	ck_assert_int_eq(gemm_ref(y, x, w, 2, 2, 3, NULL), 0);
	NEAR(y[0], -2, 0);
	NEAR(y[1], 4, 0);
	NEAR(y[2], -2, 0);
	NEAR(y[3], 13, 0);
	/* identity weight returns x */
	double id[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, z[6];
	ck_assert_int_eq(gemm_ref(z, x, id, 2, 3, 3, NULL), 0);
	for (int k = 0; k < 6; k++)
		NEAR(z[k], x[k], 0);
}
END_TEST

/* --- documented errors -------------------------------------------------------- */

START_TEST(references_reject_bad_sizes_and_missing_tensors)
{
	double a[8] = {0}, b[8] = {0};
	struct kf_err err;
	const struct {
		int rc;
		const char *needle;
	} cases[] = {
		{rmsnorm_ref(a, b, NULL, -1, 2, 0, (kf_err_clear(&err), &err)), "T=-1"},
		{rmsnorm_ref(a, b, NULL, 1, 0, 0, NULL), NULL},
		{rmsnorm_ref(a, b, NULL, 1, 2, -1, NULL), NULL},
		{rmsnorm_ref(NULL, b, NULL, 1, 2, 0, NULL), NULL},
		{add_rmsnorm_ref(a, NULL, b, b, NULL, 1, 2, 0, NULL), NULL},
		{layernorm_ref(a, b, NULL, NULL, 1, 0, 0, NULL), NULL},
		{layernorm_ref(a, NULL, NULL, NULL, 1, 2, 0, NULL), NULL},
		{layernorm_ref(a, b, NULL, NULL, 1, 2, NAN, NULL), NULL},
		{softmax_ref(a, b, 1, 0, NULL), NULL},
		{softmax_ref(a, b, -2, 1, NULL), NULL},
		{softmax_ref(a, NULL, 1, 1, NULL), NULL},
		{activation_ref(ACT_REF_COUNT, a, b, 1, 1, NULL), NULL},
		{activation_ref(ACT_REF_GELU, a, b, 1, 0, NULL), NULL},
		{activation_ref(ACT_REF_GELU, a, b, -1, 1, NULL), NULL},
		{activation_ref(ACT_REF_GELU, NULL, b, 1, 1, NULL), NULL},
		{rope_ref(1, a, b, b, b, 1, 1, 3, NULL), NULL},
		{rope_ref(1, a, b, b, b, -1, 1, 2, NULL), NULL},
		{rope_ref(1, a, b, NULL, b, 1, 1, 2, NULL), NULL},
		{adaln_modulate_ref(a, b, b, b, 1, 1, 0, NULL), NULL},
		{adaln_modulate_ref(a, b, b, b, -1, 1, 1, NULL), NULL},
		{adaln_modulate_ref(a, b, NULL, b, 1, 1, 1, NULL), NULL},
		{gemm_ref(a, b, b, 0, 1, 1, NULL), NULL},
		{gemm_ref(a, b, NULL, 1, 1, 1, NULL), NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		ck_assert_msg(cases[i].rc == KF_EINVAL, "case %zu returned %d", i, cases[i].rc);
	ck_assert_int_eq(err.code, KF_EINVAL);
	ck_assert_msg(strstr(err.msg, "T=-1") && strstr(err.msg, "T >= 0"), "message: %s", err.msg);
	/* Size zero is valid and writes nothing. */
	ck_assert_int_eq(rmsnorm_ref(a, b, NULL, 0, 4, 0, NULL), 0);
}
END_TEST

/* --- cost functions --------------------------------------------------------------- */

START_TEST(cost_functions_follow_their_formulas)
{
	double by, fl;
	rmsnorm_cost(3, 5, 2, 1, &by, &fl);
	NEAR(by, (2 * 15 + 5) * 2.0, 0);
	NEAR(fl, 4 * 15.0, 0);
	rmsnorm_cost(3, 5, 4, 0, &by, &fl);
	NEAR(by, 2 * 15 * 4.0, 0);
	NEAR(fl, 3 * 15.0, 0);
	add_rmsnorm_cost(3, 5, 2, &by, &fl);
	NEAR(by, (4 * 15 + 5) * 2.0, 0);
	NEAR(fl, 5 * 15.0, 0);
	layernorm_cost(3, 5, 2, 2, &by, &fl);
	NEAR(by, (2 * 15 + 2 * 5) * 2.0, 0);
	NEAR(fl, 9 * 15.0, 0);
	softmax_cost(3, 5, 4, &by, &fl);
	NEAR(by, 2 * 15 * 4.0, 0);
	NEAR(fl, 5 * 15.0, 0);
	activation_cost(ACT_REF_SILU_AND_MUL, 3, 5, 2, &by, &fl);
	NEAR(by, 3 * 15 * 2.0, 0);
	NEAR(fl, 5 * 15.0, 0);
	activation_cost(ACT_REF_GELU_TANH, 3, 5, 2, &by, &fl);
	NEAR(by, 2 * 15 * 2.0, 0);
	NEAR(fl, 9 * 15.0, 0);
	activation_cost(ACT_REF_COUNT, 3, 5, 2, &by, &fl);
	NEAR(by, 0, 0);
	rope_cost(3, 2, 8, 2, &by, &fl);
	NEAR(by, 2 * 48 * 2.0 + 2 * 3 * 4 * 4.0, 0);
	NEAR(fl, 3 * 48.0, 0);
	adaln_modulate_cost(2, 3, 5, 2, &by, &fl);
	NEAR(by, (2 * 30 + 2 * 10) * 2.0, 0);
	NEAR(fl, 2 * 30.0, 0);
	gemm_cost(4096, 4096, 4096, 2, &by, &fl);
	NEAR(by, 3 * 4096.0 * 4096 * 2, 0);
	NEAR(fl, 2 * 4096.0 * 4096 * 4096, 0);
}
END_TEST

/* --- op templates ------------------------------------------------------------------ */

/* op's baseline launch[0] as the op shorthand expands it for dtype
 * (spec_expand_op: $dtype and $esize substituted); a new reference. */
static json_t *expanded_launches(const struct op_template *op, const char *dtype)
{
	json_t *in = json_pack("{s:s,s:s}", "op", op->name, "dtype", dtype), *out = NULL;
	struct kf_err err = {0, ""};
	ck_assert_msg(spec_expand_op(in, op_find, &out, &err) == 0, "%s %s: %s", op->name, dtype,
		      err.msg);
	json_t *l = json_object_get(json_object_get(out, "baseline"), "launch");
	ck_assert_msg(json_array_size(l) > 0, "%s: no baseline launch", op->name);
	json_incref(l);
	json_decref(out);
	json_decref(in);
	return l;
}

/* The launch of list l that runs at env's sizes: the one whose "when" holds
 * (or that has none); exactly one must. Borrowed from l. */
static json_t *active_launch(const struct op_template *op, json_t *l, const struct expr_env *env)
{
	json_t *hit = NULL, *x;
	size_t i;
	json_array_foreach(l, i, x) {
		const json_t *when = json_object_get(x, "when");
		int64_t v = 1;
		struct kf_err err = {0, ""};
		if (when)
			ck_assert_msg(expr_eval_text(json_string_value(when), env, &v, &err) == 0,
				      "%s: %s", op->name, err.msg);
		if (v) {
			ck_assert_msg(!hit, "%s: launches %s and %s both run", op->name,
				      json_string_value(json_object_get(hit, "kernel")),
				      json_string_value(json_object_get(x, "kernel")));
			hit = x;
		}
	}
	ck_assert_msg(hit != NULL, "%s: no launch runs", op->name);
	return hit;
}

static size_t count_names(const char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

START_TEST(registry_finds_every_template_by_name)
{
	ck_assert_uint_ge(op_count(), 15);
	for (size_t i = 0; i < op_count(); i++) {
		const struct op_template *op = op_at(i);
		ck_assert_ptr_nonnull(op);
		ck_assert_ptr_eq(op_find(op->name), op);
		ck_assert_ptr_nonnull(op->ref);
		ck_assert_ptr_nonnull(op->cost);
		ck_assert_ptr_nonnull(op->summary);
		/* a task description in words beside the math, a sentence */
		ck_assert_msg(op->description && strlen(op->description) >= 20 &&
				      op->description[strlen(op->description) - 1] == '.',
			      "op %s has no description sentence", op->name);
	}
	ck_assert_ptr_null(op_at(op_count()));
	ck_assert_ptr_null(op_find("no_such_op"));
	ck_assert_ptr_null(op_find(NULL));
	ck_assert_ptr_nonnull(op_find("rmsnorm"));
}
END_TEST

/* One template (loop index): spec_json is JSON with the contract's keys,
 * consistent with the template's name lists; its cost expressions and the
 * C cost function agree for every allowed dtype; its launch expressions
 * evaluate to valid dims for the default sizes. */
START_TEST(template_spec_json_is_complete_and_consistent)
{
	const struct op_template *op = op_at((size_t)_i);
	json_error_t je;
	json_t *j = json_loads(op->spec_json, 0, &je);
	ck_assert_msg(j != NULL, "%s: spec_json line %d: %s", op->name, je.line, je.text);
	static const char *const KEYS[] = {"dtypes",	    "tensors",	 "scalars", "constraints",
					   "default_sizes", "tolerance", "cost",    "baseline"};
	for (size_t k = 0; k < sizeof KEYS / sizeof KEYS[0]; k++)
		ck_assert_msg(json_object_get(j, KEYS[k]), "%s: no \"%s\"", op->name, KEYS[k]);
	json_t *tensors = json_object_get(j, "tensors"), *scalars = json_object_get(j, "scalars");
	/* inputs and outputs name tensors of the right role, and every tensor is one */
	ck_assert_uint_eq(count_names(op->inputs) + count_names(op->outputs),
			  json_object_size(tensors));
	for (const char *const *n = op->inputs; *n; n++) {
		json_t *t = json_object_get(tensors, *n);
		ck_assert_msg(t, "%s: input %s not in tensors", op->name, *n);
		ck_assert_str_eq(json_string_value(json_object_get(t, "role")), "input");
	}
	for (const char *const *n = op->outputs; *n; n++) {
		json_t *t = json_object_get(tensors, *n);
		ck_assert_msg(t, "%s: output %s not in tensors", op->name, *n);
		ck_assert_str_eq(json_string_value(json_object_get(t, "role")), "output");
	}
	ck_assert_uint_eq(count_names(op->scalar_names), json_object_size(scalars));
	for (const char *const *n = op->scalar_names; *n; n++)
		ck_assert_msg(json_object_get(scalars, *n), "%s: scalar %s", op->name, *n);

	/* every launch names a $dtype kernel, and each arg is a tensor, a
	 * scalar or an expression over the op's sizes */
	json_t *launch = json_object_get(json_object_get(j, "baseline"), "launch");
	ck_assert(json_is_array(launch) && json_array_size(launch) >= 1);
	size_t li;
	json_t *l;
	json_array_foreach(launch, li, l) {
		ck_assert_ptr_nonnull(
			strstr(json_string_value(json_object_get(l, "kernel")), "$dtype"));
		size_t ai;
		json_t *a;
		json_array_foreach(json_object_get(l, "args"), ai, a) {
			const char *n = json_string_value(a);
			if (json_object_get(tensors, n) || json_object_get(scalars, n))
				continue;
			struct expr *e = NULL;
			struct kf_err xe = {0, ""};
			ck_assert_msg(expr_parse(n, &e, &xe) == 0, "%s: launch arg %s: %s",
				      op->name, n, xe.msg);
			for (size_t v = 0; v < expr_var_count(e); v++) {
				int known = 0;
				for (const char *const *s = op->size_names; *s; s++)
					known |= strcmp(*s, expr_var_at(e, v)) == 0;
				ck_assert_msg(known, "%s: launch arg %s: %s is no size", op->name,
					      n, expr_var_at(e, v));
			}
			expr_free(e);
		}
	}

	/* every default size row gives every size; launch dims are valid; the
	 * JSON cost for each dtype equals the C cost function */
	size_t nsz = count_names(op->size_names), ri, di;
	json_t *row, *dt;
	json_array_foreach(json_object_get(j, "default_sizes"), ri, row) {
		int64_t vals[8];
		ck_assert_uint_le(nsz, 8);
		for (size_t s = 0; s < nsz; s++) {
			json_t *v = json_object_get(row, op->size_names[s]);
			ck_assert_msg(json_is_integer(v), "%s: default_sizes[%zu] lacks %s",
				      op->name, ri, op->size_names[s]);
			vals[s] = json_integer_value(v);
		}
		struct expr_env env = {op->size_names, vals, nsz};
		struct kf_err err = {0, ""};
		const char *dimkeys[] = {"grid", "block"};
		json_t *ll = expanded_launches(op, "bf16"); /* $esize substituted */
		json_t *lx = active_launch(op, ll, &env);
		for (int d = 0; d < 2; d++) {
			size_t gi;
			json_t *g;
			int64_t prod = 1;
			json_array_foreach(json_object_get(lx, dimkeys[d]), gi, g) {
				int64_t v;
				if (json_is_integer(g))
					v = json_integer_value(g);
				else
					ck_assert_msg(expr_eval_text(json_string_value(g), &env, &v,
								     &err) == 0,
						      "%s: %s", op->name, err.msg);
				ck_assert_int_ge(v, 1);
				prod *= v;
			}
			if (d == 1)
				ck_assert_int_le(prod, 1024);
		}
		json_decref(ll);
		json_array_foreach(json_object_get(j, "dtypes"), di, dt) {
			const char *dn = json_string_value(dt);
			json_t *c = json_object_get(json_object_get(j, "cost"), dn);
			ck_assert_msg(c, "%s: no cost for %s", op->name, dn);
			ck_assert_msg(json_object_get(json_object_get(j, "tolerance"), dn),
				      "%s: no tolerance for %s", op->name, dn);
			int64_t eb, ef;
			ck_assert_msg(expr_eval_text(json_string_value(json_object_get(c, "bytes")),
						     &env, &eb, &err) == 0,
				      "%s: %s", op->name, err.msg);
			ck_assert_msg(expr_eval_text(json_string_value(json_object_get(c, "flops")),
						     &env, &ef, &err) == 0,
				      "%s: %s", op->name, err.msg);
			double cb, cf;
			op->cost(vals, (enum kf_dtype)dtype_parse(dn), &cb, &cf);
			ck_assert_msg(cb == (double)eb && cf == (double)ef,
				      "%s %s: JSON cost %lld bytes %lld flops, C cost %.0f %.0f",
				      op->name, dn, (long long)eb, (long long)ef, cb, cf);
		}
	}
	json_decref(j);
}
END_TEST

/* kf::row_block (kernels/kf_cuda.cuh) written out again: the row ops'
 * JSON launches must give the launch helpers' configuration. threads: the
 * block's threads on large inputs, 0 for rmsnorm's few-row kernel, -1 for
 * its short-row kernel. */
static void row_launch_ref(int64_t T, int64_t D, int esize, int64_t threads, int64_t *grid,
			   int64_t *tx, int64_t *ty)
{
	if (threads == 0) { /* rms_few_rows (kernels/rmsnorm.cu): one row a block */
		*grid = T;
		*tx = (D + 511) / 512 * 32;
		*ty = 1;
		return;
	}
	if (threads < 0) { /* rms_short_launch: g threads a row, 2 rows a thread */
		int64_t g = 1;
		while (g < D * esize / 16)
			g *= 2;
		*tx = g;
		*ty = 256 / g;
		*grid = (T + *ty * 2 - 1) / (*ty * 2);
		return;
	}
	const int64_t b = (D * esize + 2047) / 2048 * 32;
	const int64_t f = 1 + (T * b <= 67584) + 2 * (T * b <= 33792);
	int64_t x = b * f;
	x = x < 32 ? 32 : x > 1024 ? 1024 : x;
	int64_t y = (threads / x) * (T > 1024);
	y = y > 1 ? y : 1;
	*grid = (T + y - 1) / y;
	*tx = x;
	*ty = y;
}

static int64_t eval_dim(const json_t *v, const struct expr_env *env)
{
	int64_t r = -1;
	if (json_is_integer(v))
		return json_integer_value(v);
	struct kf_err err = {0, ""};
	ck_assert_msg(expr_eval_text(json_string_value(v), env, &r, &err) == 0, "%s", err.msg);
	return r;
}

/* The row ops' baseline launches (grid, block, no shared memory) equal the
 * launch helpers' configuration for every shape class: one row, few rows
 * (2x and 4x the threads), many rows packed ty to a block, wide rows. */
START_TEST(row_op_launches_match_the_launch_helpers)
{
	static const char *const OPS[] = {"rmsnorm",   "rmsnorm_noweight",   "add_rmsnorm",
					  "layernorm", "layernorm_noaffine", "softmax"};
	static const int64_t TS[] = {1, 7, 128, 512, 1024, 1025, 1056, 2048, 4096, 16384, 300000};
	static const int64_t DS[] = {1,	   7,	 8,    16,   24,    64,	   96,	 128,
				     200,  256,	 264,  1000, 1008,  2048,  2056, 3000,
				     4096, 4104, 8192, 8193, 16384, 20001, 65536};
	for (size_t o = 0; o < sizeof OPS / sizeof OPS[0] * 2; o++) {
		const struct op_template *op = op_find(OPS[o / 2]);
		const int esize = o % 2 ? 4 : 2;
		ck_assert_ptr_nonnull(op);
		json_t *ll = expanded_launches(op, esize == 4 ? "f32" : "bf16");
		const int rms = strncmp(OPS[o / 2], "rmsnorm", 7) == 0;
		for (size_t ti = 0; ti < sizeof TS / sizeof TS[0]; ti++)
			for (size_t di = 0; di < sizeof DS / sizeof DS[0]; di++) {
				int64_t vals[2] = {TS[ti], DS[di]};
				const char *names[] = {"T", "D"};
				struct expr_env env = {names, vals, 2};
				int64_t g, x, y, sh = 0;
				const int64_t T = TS[ti], D = DS[di];
				const int ln = strncmp(OPS[o / 2], "layernorm", 9) == 0;
				/* rms_short_group, then rms_few_rows */
				const int shrt = rms && D * esize % 16 == 0 && D * esize <= 512;
				const int few = rms && !shrt && esize == 2 && D % 16 == 0 &&
						D <= 8192 && T * D <= 132 * 1024 * 16;
				/* layernorm_launch's two rows a block (ln_go) */
				const int two =
					ln && esize == 2 && D % 8 == 0 && D > 2048 && D <= 4096;
				row_launch_ref(T, D, esize,
					       shrt					  ? -1
					       : few					  ? 0
					       : ln || strcmp(OPS[o / 2], "softmax") == 0 ? 128
											  : 256,
					       &g, &x, &y);
				if (two) {
					g = (T + 1) / 2;
					x = 128;
					y = 1;
				}
				json_t *l0 = active_launch(op, ll, &env);
				const char *kn = json_string_value(json_object_get(l0, "kernel"));
				ck_assert_msg((strstr(kn, "_rows_") != NULL) == few &&
						      (strstr(kn, "_short_") != NULL) == shrt &&
						      (strstr(kn, "_2rows_") != NULL) == two,
					      "%s esize %d T=%lld D=%lld: runs %s", OPS[o / 2],
					      esize, (long long)T, (long long)D, kn);
				json_t *sb = json_object_get(l0, "shared_bytes");
				const int64_t jg = eval_dim(json_array_get(
								    json_object_get(l0, "grid"), 0),
							    &env),
					      jx = eval_dim(
						      json_array_get(json_object_get(l0, "block"),
								     0),
						      &env),
					      jy = json_array_size(json_object_get(l0, "block")) > 1
							   ? eval_dim(json_array_get(
									      json_object_get(
										      l0, "block"),
									      1),
								      &env)
							   : 1,
					      js = sb ? eval_dim(sb, &env) : 0;
				ck_assert_msg(
					jg == g && jx == x && jy == y && js == sh,
					"%s esize %d T=%lld D=%lld: JSON grid %lld block %lldx%lld "
					"shared %lld, helper %lld %lldx%lld %lld",
					OPS[o / 2], esize, (long long)TS[ti], (long long)DS[di],
					(long long)jg, (long long)jx, (long long)jy, (long long)js,
					(long long)g, (long long)x, (long long)y, (long long)sh);
			}
		json_decref(ll);
	}
}
END_TEST

/* Every template, in every dtype it allows, expands through the harness's
 * op shorthand and passes its spec parser: every default size binds and
 * the baseline launch has valid dims. (Loop index: template * 3 + dtype.) */
START_TEST(template_expands_and_parses_with_the_spec_parser)
{
	const struct op_template *op = op_at((size_t)_i / 3);
	const char *dt = dtype_name((enum kf_dtype)(_i % 3)); /* f32, f16, bf16 */
	json_t *tpl = json_loads(op->spec_json, 0, NULL);
	ck_assert_ptr_nonnull(tpl);
	int allowed = 0;
	size_t k;
	json_t *v;
	json_array_foreach(json_object_get(tpl, "dtypes"), k, v)
		allowed |= strcmp(json_string_value(v), dt) == 0;
	json_decref(tpl);
	char text[512];
	snprintf(text, sizeof text,
		 "{\"op\": \"%s\", \"dtype\": \"%s\", \"source\": \"extern \\\"C\\\" "
		 "__global__ void k() {}\", \"launch\": [{\"kernel\": \"k\", \"grid\": [1], "
		 "\"block\": [1], \"args\": []}]}",
		 op->name, dt);
	struct spec_limits lim;
	spec_limits_default(&lim);
	struct spec *s = NULL;
	struct kf_err err = {0, ""};
	int rc = spec_parse_text(text, strlen(text), &lim, op_find, &s, &err);
	if (!allowed) {
		ck_assert_msg(rc == KF_EINVAL, "%s accepted dtype %s", op->name, dt);
		return;
	}
	ck_assert_msg(rc == 0, "%s %s: %s", op->name, dt, err.msg);
	ck_assert_uint_ge(s->sizes_len, 1);
	/* one launch (kf_OP_DTYPE), or a choice by "when" of
	 * kf_OP_VARIANT_DTYPE (rmsnorm's short rows, then its few rows;
	 * layernorm's two rows a block, adaln's flat vectors;
	 * silu_and_mul's flat vectors by a shift, then by a division) and
	 * kf_OP_DTYPE, last */
	const char *variants[2] = {NULL, NULL};
	if (strcmp(op->name, "rmsnorm") == 0 || strcmp(op->name, "rmsnorm_noweight") == 0) {
		variants[0] = "short";
		variants[1] = "rows";
	} else if (strcmp(op->name, "layernorm") == 0 ||
		   strcmp(op->name, "layernorm_noaffine") == 0)
		variants[0] = "2rows";
	else if (strcmp(op->name, "adaln_modulate") == 0)
		variants[0] = "flat";
	else if (strcmp(op->name, "silu_and_mul") == 0) {
		variants[0] = "flat_pow2";
		variants[1] = "flat";
	}
	const size_t nv = (variants[0] != NULL) + (variants[1] != NULL);
	ck_assert_uint_eq(s->baseline.launch_len, nv + 1);
	char want[96];
	snprintf(want, sizeof want, "kf_%s_%s", op->name, dt);
	ck_assert_str_eq(s->baseline.launch[nv].kernel, want);
	for (size_t i = 0; i < nv; i++) {
		snprintf(want, sizeof want, "kf_%s_%s_%s", op->name, variants[i], dt);
		ck_assert_str_eq(s->baseline.launch[i].kernel, want);
	}
	for (size_t r = 0; r < s->sizes_len; r++) {
		struct spec_bound b;
		const int64_t *vals = s->sizes + r * s->vars_len;
		ck_assert_msg(spec_bind(s, vals, &lim, "sizes", &b, &err) == 0, "%s: %s", op->name,
			      err.msg);
		ck_assert(b.cost_bytes > 0 && b.cost_flops > 0);
		size_t ran = 0;
		for (size_t i = 0; i < s->baseline.launch_len; i++) {
			int runs;
			ck_assert_msg(
				spec_launch_runs(s, &s->baseline.launch[i], vals, &runs, &err) == 0,
				"%s: %s", op->name, err.msg);
			if (!runs)
				continue;
			ran++;
			uint32_t g[3], bl[3], sh;
			ck_assert_msg(spec_launch_dims(s, &s->baseline.launch[i], vals, "baseline",
						       g, bl, &sh, &err) == 0,
				      "%s: %s", op->name, err.msg);
		}
		ck_assert_uint_eq(ran, 1);
	}
	spec_free(s);
}
END_TEST

/* The template's reference runs through the op_ref_call adapter. */
START_TEST(template_references_run_through_the_call_struct)
{
	const struct op_template *op = op_find("add_rmsnorm");
	int64_t sizes[2] = {2, 3};
	double scal[1] = {0};
	double x[6] = {1, 2, 3, 4, 5, 6}, res[6] = {1, 1, 1, 1, 1, 1}, w[3] = {1, 1, 1};
	double y[6], r[6], want[6];
	const double *in[3] = {x, res, w};
	double *out[2] = {y, r};
	struct op_ref_call c = {op, sizes, scal, in, out};
	ck_assert_int_eq(op->ref(&c, NULL), 0);
	ck_assert_int_eq(rmsnorm_ref(want, r, NULL, 2, 3, 0, NULL), 0);
	for (int k = 0; k < 6; k++) {
		NEAR(r[k], x[k] + 1, 0);
		NEAR(y[k], want[k], 0);
	}
	/* bad sizes come back as the reference's error */
	sizes[1] = 0;
	struct kf_err err = {0, ""};
	ck_assert_int_eq(op->ref(&c, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "D=0"));
}
END_TEST

static Suite *kernels_ref_suite(void)
{
	Suite *s = suite_create("kernels_ref");
	TCase *tc = tcase_create("references");
	/* the exhaustive 16-bit GELU loops take ~1 s each unloaded; Check's
	 * default 4 s expired on a 2-core machine busy with nvcc */
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, rmsnorm_matches_hand_computed_values);
	tcase_add_test(tc, rmsnorm_output_has_unit_rms_before_weight);
	tcase_add_test(tc, add_rmsnorm_normalizes_the_sum_it_returns);
	tcase_add_test(tc, layernorm_matches_hand_computed_values);
	tcase_add_test(tc, layernorm_output_has_zero_mean_unit_variance_and_ignores_offsets);
	tcase_add_test(tc, softmax_matches_hand_computed_values_without_overflow);
	tcase_add_test(tc, softmax_rows_sum_to_one_and_are_shift_invariant);
	tcase_add_test(tc, activations_match_known_values);
	tcase_add_test(tc, gated_activations_multiply_the_second_half);
	tcase_add_test(tc, gelu_fast_erf_error_is_below_its_bound_on_a_dense_grid);
	tcase_add_test(tc, gelu_fast_tanh_is_within_3e_5_relative_on_a_dense_grid);
	tcase_add_loop_test(tc, gelu_fast_meets_the_op_tolerances_for_every_16_bit_input, 0, 2);
	tcase_add_test(tc, rope_rotates_the_right_pairs_in_each_layout);
	tcase_add_test(tc, rope_preserves_pair_norms);
	tcase_add_test(tc, adaln_modulate_uses_each_batchs_scale_and_shift);
	tcase_add_test(tc, gemm_multiplies_by_the_transposed_weight);
	suite_add_tcase(s, tc);
	TCase *te = tcase_create("errors_and_costs");
	tcase_add_test(te, references_reject_bad_sizes_and_missing_tensors);
	tcase_add_test(te, cost_functions_follow_their_formulas);
	suite_add_tcase(s, te);
	TCase *to = tcase_create("templates");
	tcase_add_test(to, registry_finds_every_template_by_name);
	tcase_add_loop_test(to, template_spec_json_is_complete_and_consistent, 0, (int)op_count());
	tcase_add_test(to, row_op_launches_match_the_launch_helpers);
	tcase_add_loop_test(to, template_expands_and_parses_with_the_spec_parser, 0,
			    (int)op_count() * 3);
	tcase_add_test(to, template_references_run_through_the_call_struct);
	suite_add_tcase(s, to);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(kernels_ref_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
