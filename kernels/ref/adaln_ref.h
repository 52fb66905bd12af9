/* adaln_ref: the float64 specification of kernels/adaln.cu (AdaLN
 * modulation) and its cost model. Plain C, no CUDA.
 *   y[b,s,i] = x[b,s,i] * (1 + scale[b,i]) + shift[b,i];  x, y (B, S, D);
 *   scale, shift (B, D). */
#ifndef KF_ADALN_REF_H
#define KF_ADALN_REF_H

#include <stddef.h>
#include <stdint.h>

#include "base/kf_err.h"

/* Borrows all. Returns 0, or KF_EINVAL (with err) for B < 0, S < 0, D < 1,
 * or a NULL pointer. */
int adaln_modulate_ref(double *y, const double *x, const double *scale, const double *shift,
		       int64_t B, int64_t S, int64_t D, struct kf_err *err)
	__attribute__((warn_unused_result));

/* bytes = (2*B*S*D + 2*B*D) * esize, flops = 2*B*S*D. */
void adaln_modulate_cost(int64_t B, int64_t S, int64_t D, size_t esize, double *bytes,
			 double *flops);

#endif
