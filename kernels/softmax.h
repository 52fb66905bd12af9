/* softmax: C API of kernels/softmax.cu (math, shapes, cost in its header;
 * float64 specification in kernels/ref/softmax_ref.c). Device pointers,
 * contiguous row-major; only enqueues on stream s, never synchronizes.
 * Returns cudaErrorInvalidValue for a dtype other than f32/f16/bf16, T < 0,
 * D < 1, T or D >= 2^31, or a NULL y or x with T > 0; otherwise the launch
 * error. T == 0 launches nothing. */
#ifndef KF_SOFTMAX_H
#define KF_SOFTMAX_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y (T, D) = softmax(x (T, D)) over D. Borrows both. y may alias x. */
cudaError_t softmax_launch(enum kf_dtype dt, void *y, const void *x, int64_t T, int64_t D,
			   cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
