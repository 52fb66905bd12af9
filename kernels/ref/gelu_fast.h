/* gelu_fast: the cheap GELU formulas kernels/activation.cu uses for f16 and
 * bf16 outputs (f32 keeps erff / tanhf), their coefficients, and a plain C
 * emulation of the device arithmetic for tests/unit/check_kernels_ref.c. Plain
 * C, header-only; the .cu includes it for the constants only.
 *
 * erf GELU, gelu(x) = x * Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2:
 *   Abramowitz & Stegun 7.1.28: for z >= 0,
 *     erf(z) = 1 - (1 + a1 z + a2 z^2 + ... + a6 z^6)^-16 + e(z), |e(z)| <= 3e-7.
 *   With t = |x|, z = t / sqrt 2 and the factor 2^(1/16) folded into the
 *   polynomial, q = (1 / P(t))^16 = (1 - erf(t / sqrt 2)) / 2 (+ e/2), where
 *   P(t) = sum_k c_k t^k, c_k = 2^(1/16) a_k 2^(-k/2) (a0 = 1), so
 *     Phi(x) = 1 - q (x >= 0),  q (x < 0),  gelu = x * Phi.
 *   Device cost: 6 FMA (Horner), one rcp.approx (MUFU), 4 squarings, a
 *   subtract, a select, a multiply; about 15 instructions against ~30 for
 *   erff with its two branches.
 *   Error: |Phi_fast(x) - Phi(x)| <= KF_GELU_ERF_PHI_ERR = 4e-6: the
 *   formula's 1.5e-7 (3e-7 / 2; 1.3e-7 measured in float64), the float
 *   coefficients and Horner steps (a few 1e-8), and the reciprocal's error
 *   raised to the 16th power, which dominates: rcp.approx.ftz.f32 is
 *   within 1 ulp (< 1.2e-7 relative; the test allows 2.4e-7), so q's
 *   relative error is at most 16 * 2.4e-7 + 15 roundings of 6e-8 = 4.7e-6
 *   of q <= 0.5, i.e. 2.4e-6, plus the rest: 2.6e-6 by analysis, 3.2e-6
 *   measured with the doubled reciprocal error. So |gelu_fast - gelu| <=
 *   |x| * 4e-6 (+ the final product's rounding), 500x below bf16's and
 *   100x below f16's relative rounding (2^-9, 2^-12) wherever gelu is not
 *   tiny (x > -1: |gelu| >= |x| / 7). tests/unit/check_kernels_ref.c
 *   checks the bound against float64 erf on a dense grid of x in [-12, 12]
 *   (step 2^-12) with the reciprocal perturbed by +-1 ulp, and checks every
 *   finite f16 and bf16 input, rounded to the dtype, against the op
 *   templates' tolerances (f16 2e-3, bf16 1e-2). f32's 1e-5 tolerance would
 *   also hold far from zero, but f32 keeps the accurate erff.
 *
 * tanh GELU, gelu_tanh(x) = x/2 (1 + tanh(u)), u = sqrt(2/pi)(x + 0.044715 x^3):
 *   (1 + tanh u)/2 = 1 / (1 + exp(-2u)), so
 *     gelu_tanh(x) = x * rcp(1 + ex2(x * (k1 + k3 x^2))),
 *     k1 = -2 log2(e) sqrt(2/pi), k3 = 0.044715 k1.
 *   Exact identity, no cancellation for negative x (1 + tanh.approx would
 *   lose all relative accuracy there: tanh.approx.f32's 2^-11 relative
 *   error is an absolute error of up to |x| 2^-12 in the output, beyond the
 *   f16 tolerance for x < -8). Device cost: x^2, an FMA, a multiply,
 *   ex2.approx (MUFU), an add, rcp.approx (MUFU), a multiply.
 *   Error: ex2.approx (2 ulp) and rcp.approx (1 ulp) plus the rounding of
 *   the exponent (its relative error times |exponent| <= 128): at most
 *   ~3e-5 relative where the output is above 1e-30; the test perturbs ex2
 *   and rcp and checks every f16/bf16 input against the tolerances. */
#ifndef KF_GELU_FAST_H
#define KF_GELU_FAST_H

#include <math.h>

/* c_k = 2^(1/16) * a_k * 2^(-k/2), a_k from A&S 7.1.28, a0 = 1. */
#define KF_GELU_C0	    1.0442737824274138f	    /* 2^(1/16) */
#define KF_GELU_C1	    0.052075163036630567f   /* 2^(1/16) * 0.0705230784 / 2^(1/2) */
#define KF_GELU_C2	    0.022076998456581714f   /* 2^(1/16) * 0.0422820123 / 2 */
#define KF_GELU_C3	    0.0034227392389008242f  /* 2^(1/16) * 0.0092705272 / 2^(3/2) */
#define KF_GELU_C4	    3.9686137011013902e-05f /* 2^(1/16) * 0.0001520143 / 4 */
#define KF_GELU_C5	    5.1055209008659831e-05f /* 2^(1/16) * 0.0002765672 / 2^(5/2) */
#define KF_GELU_C6	    5.6212996639622074e-06f /* 2^(1/16) * 0.0000430638 / 8 */
#define KF_GELU_ERF_PHI_ERR 4e-6

/* k1 = -2 log2(e) sqrt(2/pi), k3 = 0.044715 * k1 */
#define KF_GELU_TANH_K1 -2.302208198f
#define KF_GELU_TANH_K3 -0.1029432396f

/* C emulation of the device formulas (tests only). rcp_rel, ex2_rel: the
 * relative perturbation applied to the reciprocal and to 2^v, to model the
 * approximate hardware instructions (0 = correctly rounded). */
static inline float gelu_fast_erf_emul(float x, double rcp_rel)
{
	const float t = fabsf(x);
	float p = fmaf(t, KF_GELU_C6, KF_GELU_C5);
	p = fmaf(t, p, KF_GELU_C4);
	p = fmaf(t, p, KF_GELU_C3);
	p = fmaf(t, p, KF_GELU_C2);
	p = fmaf(t, p, KF_GELU_C1);
	p = fmaf(t, p, KF_GELU_C0);
	float r = (float)((double)(1.0f / p) * (1.0 + rcp_rel));
	r = r * r;
	r = r * r;
	r = r * r;
	r = r * r; /* q = r^16 */
	const float phi = x >= 0.f ? 1.f - r : r;
	return x * phi;
}

static inline float gelu_fast_tanh_emul(float x, double ex2_rel, double rcp_rel)
{
	const float v = x * fmaf(x * x, KF_GELU_TANH_K3, KF_GELU_TANH_K1);
	const float e = (float)((double)exp2f(v) * (1.0 + ex2_rel));
	const float r = (float)((double)(1.0f / (1.f + e)) * (1.0 + rcp_rel));
	return x * r;
}

#endif
