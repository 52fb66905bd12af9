/* rmsnorm_ref: the float64 specification of the rmsnorm family
 * (kernels/rmsnorm.cu) and its cost model. Plain C, no CUDA.
 *   rmsnorm:     y[t,i] = x[t,i] / sqrt(mean_i(x[t,:]^2) + eps) * w[i]
 *   add_rmsnorm: r = x + res;  y = rmsnorm(r) * w
 * Tensors (T, D) row-major, w (D). */
#ifndef KF_RMSNORM_REF_H
#define KF_RMSNORM_REF_H

#include <stddef.h>
#include <stdint.h>

#include "base/kf_err.h"

/* y = rmsnorm(x) * w; w == NULL means no weight. Borrows every buffer.
 * Returns 0, or KF_EINVAL (with err) for T < 0, D < 1, eps < 0 or NaN, or a
 * NULL y or x. */
int rmsnorm_ref(double *y, const double *x, const double *w, int64_t T, int64_t D, double eps,
		struct kf_err *err) __attribute__((warn_unused_result));

/* r = x + res; y = rmsnorm(r) * w (w may be NULL). Same errors, plus a NULL
 * r or res. Borrows every buffer. */
int add_rmsnorm_ref(double *y, double *r, const double *x, const double *res, const double *w,
		    int64_t T, int64_t D, double eps, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Cost with esize bytes per element:
 *   rmsnorm:     bytes = (2*T*D + (has_weight ? D : 0)) * esize,
 *                flops = (has_weight ? 4 : 3) * T*D
 *   add_rmsnorm: bytes = (4*T*D + D) * esize, flops = 5*T*D */
void rmsnorm_cost(int64_t T, int64_t D, size_t esize, int has_weight, double *bytes, double *flops);
void add_rmsnorm_cost(int64_t T, int64_t D, size_t esize, double *bytes, double *flops);

#endif
