/* layernorm: C API of kernels/layernorm.cu (math, shapes, cost in its
 * header; float64 specification in kernels/ref/layernorm_ref.c). Device
 * pointers, contiguous row-major; only enqueues on stream s, never
 * synchronizes. Returns cudaErrorInvalidValue for a dtype other than
 * f32/f16/bf16, T < 0, D < 1, T or D >= 2^31, eps < 0 or NaN, or a NULL y
 * or x with T > 0; otherwise the launch error. T == 0 launches nothing. */
#ifndef KF_LAYERNORM_H
#define KF_LAYERNORM_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y (T, D) = layernorm(x (T, D)) * w (D) + b (D); w and b may each be NULL
 * (no scale, no shift). Borrows all. */
cudaError_t layernorm_launch(enum kf_dtype dt, void *y, const void *x, const void *w, const void *b,
			     int64_t T, int64_t D, float eps, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
