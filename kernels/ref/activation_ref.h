/* activation_ref: the float64 specification of kernels/activation.cu and
 * its cost model. Plain C, no CUDA.
 *   silu(a) = a / (1 + exp(-a));  gelu(a) = a/2 (1 + erf(a / sqrt 2));
 *   gelu_tanh(a) = a/2 (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3)))
 *   gated ops: x (T, 2D) -> y[t,i] = act(x[t,i]) * x[t,D+i], y (T, D)
 *   plain ops: x (T, D) -> y = act(x) */
#ifndef KF_ACTIVATION_REF_H
#define KF_ACTIVATION_REF_H

#include <stddef.h>
#include <stdint.h>

#include "base/kf_err.h"

enum act_ref_op {
	ACT_REF_SILU_AND_MUL = 0,
	ACT_REF_GEGLU,
	ACT_REF_GEGLU_TANH,
	ACT_REF_GELU,
	ACT_REF_GELU_TANH,
	ACT_REF_COUNT
};

/* The scalar activations in float64. */
double act_ref_silu(double a);
double act_ref_gelu(double a);
double act_ref_gelu_tanh(double a);

/* Applies op; D is the output width. Borrows both. Returns 0, or KF_EINVAL
 * (with err) for an unknown op, T < 0, D < 1, or a NULL y or x. */
int activation_ref(enum act_ref_op op, double *y, const double *x, int64_t T, int64_t D,
		   struct kf_err *err) __attribute__((warn_unused_result));

/* gated: bytes = 3*T*D * esize; plain: 2*T*D * esize. flops = k*T*D with
 * k = 5 (silu_and_mul), 9 (geglu), 10 (geglu_tanh), 8 (gelu), 9 (gelu_tanh).
 * An unknown op costs 0. */
void activation_cost(enum act_ref_op op, int64_t T, int64_t D, size_t esize, double *bytes,
		     double *flops);

#endif
