/* layernorm_ref: the float64 specification of kernels/layernorm.cu and its
 * cost model. Plain C, no CUDA.
 *   y[t,i] = (x[t,i] - mean) / sqrt(var + eps) * w[i] + b[i]
 * with mean and the biased variance over the row. x, y (T, D); w, b (D). */
#ifndef KF_LAYERNORM_REF_H
#define KF_LAYERNORM_REF_H

#include <stddef.h>
#include <stdint.h>

#include "base/kf_err.h"

/* w == NULL: no scale; b == NULL: no shift. Borrows all. Returns 0, or
 * KF_EINVAL (with err) for T < 0, D < 1, eps < 0 or NaN, a NULL y or x. */
int layernorm_ref(double *y, const double *x, const double *w, const double *b, int64_t T,
		  int64_t D, double eps, struct kf_err *err) __attribute__((warn_unused_result));

/* nw = number of the weight and bias present (0..2), esize bytes/element:
 * bytes = (2*T*D + nw*D) * esize, flops = (7 + nw) * T*D. */
void layernorm_cost(int64_t T, int64_t D, size_t esize, int nw, double *bytes, double *flops);

#endif
