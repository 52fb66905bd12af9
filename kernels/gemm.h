/* gemm: C API of kernels/gemm.cu, y (M, N) = x (M, K) @ w (N, K)^T on the
 * tensor cores, bf16 or f16 in and out with fp32 accumulation (math, tiles,
 * cost in its header; float64 specification in kernels/ref/gemm_ref.c).
 * gemm_launch picks the fastest kernel for the device and dtype.
 * Device pointers, contiguous row-major; only enqueues on stream s. */
#ifndef KF_GEMM_H
#define KF_GEMM_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Borrows all; y must not alias x or w. Returns cudaErrorInvalidValue for a
 * dtype other than bf16/f16, M or N < 1, K < 8 or not a multiple of 8, a
 * size >= 2^31, ceil_div(M, 128) > 65535, a NULL pointer, x or w not
 * 16-byte aligned or y not 4-byte aligned; the error of raising the
 * shared-memory limit (96 KiB, sm_80+); otherwise the launch error. */
cudaError_t gemm_launch(enum kf_dtype dt, void *y, const void *x, const void *w, int64_t M,
			int64_t N, int64_t K, cudaStream_t s);

/* The portable mma.sync kernel alone (any sm_80+ GPU); same arguments and
 * errors as gemm_launch. */
cudaError_t gemm_mma_launch(enum kf_dtype dt, void *y, const void *x, const void *w, int64_t M,
			    int64_t N, int64_t K, cudaStream_t s);

/* The Hopper kernel alone (bf16; TMA, wgmma, warp specialization), with a
 * grouped raster of `group` tile rows (0 = row-major tile order, 0..64).
 * Same errors as gemm_launch, plus cudaErrorInvalidValue for a bad group
 * and cudaErrorNotSupported when the device is not sm_90 or the library
 * was built without sm_90a code (KF_HAVE_SM90A). */
cudaError_t gemm_sm90_launch(void *y, const void *x, const void *w, int64_t M, int64_t N, int64_t K,
			     int group, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
