/* qk_norm_rope: C API of kernels/torch/qk_norm_rope.cu, the fused per-head
 * q/k RMSNorm + NeoX rotary embedding read from a fused qkv projection
 * (math, shapes, cost in its header). Device pointers; only enqueues on
 * stream s, never synchronizes. */
#ifndef KF_QK_NORM_ROPE_H
#define KF_QK_NORM_ROPE_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* q_out (T, H, Dh), k_out (T, KV, Dh) from qkv rows of ld elements; q_w,
 * k_w (Dh) both or neither (NULL: no norm); cos_t, sin_t (rows, Dh), row
 * t % S when bcast, else t. Borrows all. Returns cudaErrorInvalidValue for
 * Dh not 64/128/256, T < 0, H or KV < 1, T*(H+KV) >= 2^31, ld <
 * (H+2KV)*Dh, eps < 0 or NaN, bcast with S < 1, a dtype other than
 * f32/f16/bf16, or a NULL required pointer with T > 0; otherwise the launch
 * error. T == 0 launches nothing. */
cudaError_t qk_norm_rope_launch(enum kf_dtype dt, void *q_out, void *k_out, const void *qkv,
				const void *q_w, const void *k_w, const void *cos_t,
				const void *sin_t, int64_t T, int64_t H, int64_t KV, int64_t Dh,
				int64_t ld, int64_t S, int bcast, float eps, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
