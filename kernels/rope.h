/* rope: C API of kernels/rope.cu, rotary position embedding in the GPT-NeoX
 * (rotate halves) and GPT-J (interleaved pairs) layouts (math, shapes, cost
 * in its header; float64 specification in kernels/ref/rope_ref.c). Device
 * pointers, contiguous row-major; only enqueues on stream s. */
#ifndef KF_ROPE_H
#define KF_ROPE_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y, x (T, H, Dh) of dtype dt; cos_t, sin_t (T, Dh/2) f32. neox != 0: NeoX
 * layout, else GPT-J. Borrows all; y may alias x. Returns
 * cudaErrorInvalidValue for a dtype other than f32/f16/bf16, T or H < 0 or
 * >= 2^31, Dh odd or < 2, or a NULL pointer with T*H > 0; otherwise the
 * launch error. T*H == 0 launches nothing. */
cudaError_t rope_launch(int neox, enum kf_dtype dt, void *y, const void *x, const float *cos_t,
			const float *sin_t, int64_t T, int64_t H, int64_t Dh, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
