/* adaln: AdaLN modulation, as in DiT / diffusion transformers.
 *
 *   y[b,s,i] = x[b,s,i] * (1 + scale[b,i]) + shift[b,i]
 *
 * Shapes: x, y (B, S, D); scale, shift (B, D). Row-major, contiguous. Types
 * f32, f16, bf16 (one type for all); fp32 arithmetic (one fma).
 * Preconditions: B, S >= 0, B*S < 2^31, 1 <= D < 2^31; any D (vector path
 * when D is a multiple of 16/sizeof(type) and pointers are 16-byte aligned).
 * Launch: block 256, grid (ceil_div(D, 2048), min(ceil_div(B*S, 2), 65535)),
 * grid-stride loops, so any grid is correct.
 * Cost, e = sizeof(type): bytes = (2*B*S*D + 2*B*D) * e, flops = 2*B*S*D.
 * Technique: 16-byte vectors, two rows per thread with the loads issued
 * first, single-use loads/stores for x and y (kf_cuda.cuh cache hints),
 * cached (read-only path) loads for scale and shift, which every row of a
 * batch reuses from L1/L2. */
#include "kernels/adaln.h"
#include "kernels/kf_cuda.cuh"

namespace kf_adaln
{

using namespace kf;

/* rows per thread per iteration (swept on an H200 in run 1; run 4 tried 4
 * and 1 and kept 2) */
constexpr int ROWS = 2;

template <typename T, int W>
__device__ __forceinline__ void run(T *y, const T *x, const T *scale, const T *shift, int64_t rows,
				    int S, int D)
{
	const int n = D / W;
	for (int64_t r0 = (int64_t)blockIdx.y * ROWS; r0 < rows; r0 += (int64_t)gridDim.y * ROWS) {
		for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < n;
		     c += gridDim.x * blockDim.x) {
			chunk<T, W> a[ROWS];
#pragma unroll
			for (int u = 0; u < ROWS; u++)
				if (r0 + u < rows)
					a[u] = ld_stream<T, W>(x + (r0 + u) * (int64_t)D, c);
			/* The modulation of the group's first batch, loaded with x:
			 * the group almost always lies in one batch. Rows past it
			 * (a group straddling two batches, or S < ROWS) load their
			 * own. Row indices < 2^31: 32-bit division. */
			const uint32_t b0 = (uint32_t)r0 / (uint32_t)S;
			const int64_t next = (int64_t)(b0 + 1) * S;
			const chunk<T, W> sc0 = ld_keep<T, W>(scale + (int64_t)b0 * D, c);
			const chunk<T, W> sh0 = ld_keep<T, W>(shift + (int64_t)b0 * D, c);
#pragma unroll
			for (int u = 0; u < ROWS; u++)
				if (r0 + u < rows) {
					float f[W], sc[W], sh[W];
					unpack<T, W>(a[u], f);
					if (r0 + u < next) {
						unpack<T, W>(sc0, sc);
						unpack<T, W>(sh0, sh);
					} else {
						const int64_t b = (uint32_t)(r0 + u) / (uint32_t)S;
						unpack<T, W>(ld_keep<T, W>(scale + b * D, c), sc);
						unpack<T, W>(ld_keep<T, W>(shift + b * D, c), sh);
					}
#pragma unroll
					for (int j = 0; j < W; j++)
						f[j] = fmaf(f[j], 1.f + sc[j], sh[j]);
					st_stream<T, W>(y + (r0 + u) * (int64_t)D, c,
							pack<T, W>(f));
				}
		}
	}
}

template <typename T>
__device__ __forceinline__ void body(T *y, const T *x, const T *scale, const T *shift, int B, int S,
				     int D)
{
	constexpr int V = vec_width<T>::value;
	const int64_t rows = (int64_t)B * S;
	if (D % V == 0 && aligned16(x) && aligned16(y) && aligned16(scale) && aligned16(shift))
		run<T, V>(y, x, scale, shift, rows, S, D);
	else
		run<T, 1>(y, x, scale, shift, rows, S, D);
}

} /* namespace kf_adaln */

#define KF_ADALN_KERNEL(SUF, T)                                                        \
	extern "C" __global__ void __launch_bounds__(256) kf_adaln_modulate_##SUF(     \
		T *y, const T *x, const T *scale, const T *shift, int B, int S, int D) \
	{                                                                              \
		kf_adaln::body<T>(y, x, scale, shift, B, S, D);                        \
	}

KF_ADALN_KERNEL(f32, float)
KF_ADALN_KERNEL(f16, __half)
KF_ADALN_KERNEL(bf16, __nv_bfloat16)

/* Block 256 along the row, grid.x = ceil_div(D, 2048) (one bf16 vector per
 * thread), grid.y = ceil_div(B*S, 2) groups of two rows capped at 65535. */
extern "C" cudaError_t adaln_modulate_launch(enum kf_dtype dt, void *y, const void *x,
					     const void *scale, const void *shift, int64_t B,
					     int64_t S, int64_t D, cudaStream_t s)
{
	if (dt != KF_DT_F32 && dt != KF_DT_F16 && dt != KF_DT_BF16)
		return cudaErrorInvalidValue;
	if (B < 0 || S < 0 || D < 1 || D > INT32_MAX || B > INT32_MAX || S > INT32_MAX ||
	    B * S > INT32_MAX)
		return cudaErrorInvalidValue;
	if (B * S == 0)
		return cudaSuccess;
	if (!y || !x || !scale || !shift)
		return cudaErrorInvalidValue;
	int64_t gy = (B * S + kf_adaln::ROWS - 1) / kf_adaln::ROWS;
	dim3 block(256), grid((unsigned)((D + 2047) / 2048), (unsigned)(gy > 65535 ? 65535 : gy));
#define KF_ADALN_GO(SUF, TY)                                                                      \
	kf_adaln_modulate_##SUF<<<grid, block, 0, s>>>((TY *)y, (const TY *)x, (const TY *)scale, \
						       (const TY *)shift, (int)B, (int)S, (int)D)
	if (dt == KF_DT_F32)
		KF_ADALN_GO(f32, float);
	else if (dt == KF_DT_F16)
		KF_ADALN_GO(f16, __half);
	else
		KF_ADALN_GO(bf16, __nv_bfloat16);
#undef KF_ADALN_GO
	return cudaGetLastError();
}
