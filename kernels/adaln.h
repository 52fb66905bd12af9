/* adaln: C API of kernels/adaln.cu, the AdaLN modulation
 * y = x * (1 + scale) + shift (math, shapes, cost in its header; float64
 * specification in kernels/ref/adaln_ref.c). Device pointers, contiguous
 * row-major; only enqueues on stream s, never synchronizes. */
#ifndef KF_ADALN_H
#define KF_ADALN_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y, x (B, S, D); scale, shift (B, D). Borrows all; y may alias x.
 * Returns cudaErrorInvalidValue for a dtype other than f32/f16/bf16, B or
 * S < 0, D < 1, B*S or D >= 2^31, or a NULL pointer with B*S > 0;
 * otherwise the launch error. B*S == 0 launches nothing. */
cudaError_t adaln_modulate_launch(enum kf_dtype dt, void *y, const void *x, const void *scale,
				  const void *shift, int64_t B, int64_t S, int64_t D,
				  cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
