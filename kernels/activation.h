/* activation: C API of kernels/activation.cu: silu_and_mul (SwiGLU),
 * geglu, geglu_tanh, gelu, gelu_tanh (math, shapes, cost in its header;
 * float64 specification in kernels/ref/activation_ref.c). Device pointers,
 * contiguous row-major; only enqueues on stream s, never synchronizes. */
#ifndef KF_ACTIVATION_H
#define KF_ACTIVATION_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

enum kf_act_op {
	KF_ACT_SILU_AND_MUL = 0, /* x (T, 2D) -> y (T, D) */
	KF_ACT_GEGLU,		 /* x (T, 2D) -> y (T, D), erf gelu */
	KF_ACT_GEGLU_TANH,	 /* x (T, 2D) -> y (T, D), tanh gelu */
	KF_ACT_GELU,		 /* x (T, D) -> y (T, D), erf gelu */
	KF_ACT_GELU_TANH,	 /* x (T, D) -> y (T, D), tanh gelu */
	KF_ACT_COUNT
};

/* Applies op to x into y (borrowed device buffers; y must not alias x for
 * the gated ops). D is the output width. Returns cudaErrorInvalidValue for
 * an unknown op, a dtype other than f32/f16/bf16, T < 0 or >= 2^31,
 * D < 1 or 2*D >= 2^31, or a NULL y or x with T > 0; otherwise the launch
 * error. T == 0 launches nothing. */
cudaError_t activation_launch(enum kf_act_op op, enum kf_dtype dt, void *y, const void *x,
			      int64_t T, int64_t D, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
