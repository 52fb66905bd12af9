/* softmax_ref: the float64 specification of kernels/softmax.cu and its
 * cost model. Plain C, no CUDA.
 *   y[t,i] = exp(x[t,i] - max_t) / sum_j exp(x[t,j] - max_t),  x, y (T, D). */
#ifndef KF_SOFTMAX_REF_H
#define KF_SOFTMAX_REF_H

#include <stddef.h>
#include <stdint.h>

#include "base/kf_err.h"

/* Borrows both. Returns 0, or KF_EINVAL (with err) for T < 0, D < 1, or a
 * NULL y or x. */
int softmax_ref(double *y, const double *x, int64_t T, int64_t D, struct kf_err *err)
	__attribute__((warn_unused_result));

/* bytes = 2*T*D * esize, flops = 5*T*D. */
void softmax_cost(int64_t T, int64_t D, size_t esize, double *bytes, double *flops);

#endif
