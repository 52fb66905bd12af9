/* rmsnorm: C API of the rmsnorm family (kernels/rmsnorm.cu): rmsnorm with
 * and without a weight, and the fused residual add + rmsnorm. The math,
 * shapes, preconditions and cost model are in the .cu header; the float64
 * specification is kernels/ref/rmsnorm_ref.c. Device pointers, contiguous
 * row-major; every helper only enqueues on stream s (never synchronizes)
 * and returns cudaErrorInvalidValue for bad arguments (dtype other than
 * f32/f16/bf16, T < 0, D < 1, T or D >= 2^31, eps < 0 or NaN, a NULL
 * pointer that is required) or the launch error. T == 0 launches nothing. */
#ifndef KF_RMSNORM_H
#define KF_RMSNORM_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y (T, D) = rmsnorm(x (T, D)) * w (D); w == NULL: no weight. Borrows all. */
cudaError_t rmsnorm_launch(enum kf_dtype dt, void *y, const void *x, const void *w, int64_t T,
			   int64_t D, float eps, cudaStream_t s);

/* r (T, D) = x + res; y (T, D) = rmsnorm(r) * w. r may alias res (in-place
 * residual update, as in vLLM's fused_add_rms_norm); y must not alias x or
 * res. All pointers required. Borrows all. */
cudaError_t add_rmsnorm_launch(enum kf_dtype dt, void *y, void *r, const void *x, const void *res,
			       const void *w, int64_t T, int64_t D, float eps, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
