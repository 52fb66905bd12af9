/* gemm_ref: the float64 specification of kernels/gemm.cu and its cost
 * model. Plain C, no CUDA.
 *   y[m,n] = sum_k x[m,k] * w[n,k];  x (M, K), w (N, K), y (M, N). */
#ifndef KF_GEMM_REF_H
#define KF_GEMM_REF_H

#include <stddef.h>
#include <stdint.h>

#include "base/kf_err.h"

/* Borrows all. Returns 0, or KF_EINVAL (with err) for M, N or K < 1, or a
 * NULL pointer. O(M*N*K): keep the sizes checked on the CPU moderate. */
int gemm_ref(double *y, const double *x, const double *w, int64_t M, int64_t N, int64_t K,
	     struct kf_err *err) __attribute__((warn_unused_result));

/* bytes = (M*K + N*K + M*N) * esize, flops = 2*M*N*K. */
void gemm_cost(int64_t M, int64_t N, int64_t K, size_t esize, double *bytes, double *flops);

#endif
