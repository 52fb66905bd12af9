/* adaln: AdaLN modulation, as in DiT / diffusion transformers.
 *
 *   y[b,s,i] = x[b,s,i] * (1 + scale[b,i]) + shift[b,i]
 *
 * Shapes: x, y (B, S, D); scale, shift (B, D). Row-major, contiguous. Types
 * f32, f16, bf16 (one type for all); fp32 arithmetic (one fma).
 * Preconditions: B, S >= 0, B*S < 2^31, 1 <= D < 2^31; any D (vector path
 * when D is a multiple of 16/sizeof(type) and pointers are 16-byte aligned).
 * Launch (adaln_modulate_launch): whole 16-byte vectors (D % V == 0, V =
 * 16 / sizeof(type), pointers 16-byte aligned) with B*S*D/V < 2^32 run
 * kf_adaln_modulate_flat_*, block 128, grid ceil_div(B*S*D/V, 128);
 * anything else kf_adaln_modulate_*, block 256, grid (ceil_div(D, 2048),
 * min(ceil_div(B*S, 2), 65535)). The flat kernel needs its grid to cover
 * every vector; the row kernel loops over the rest, so any grid is correct
 * for it.
 * Cost, e = sizeof(type): bytes = (2*B*S*D + 2*B*D) * e, flops = 2*B*S*D.
 * Technique: 16-byte vectors; scale and shift through the read-only cache,
 * which every row of a batch reuses from L1/L2; single-use loads/stores
 * for x and y (kf_cuda.cuh cache hints). The flat kernel is Inductor's
 * shape: one vector a thread over the whole tensor, x loaded first and the
 * row, column and batch found by shifts where D/V and S are powers of two:
 * every load issues within a few instructions of the kernel's start. Run
 * 10 (H200, CUPTI kernel time, 4x4096x4096 bf16): the row kernel (two rows
 * a thread, the batch by a division before the modulation loads) 65.3-65.8
 * us, the flat one 64.5-65.1, torch.compile 64.7-65.2; the flat one with a
 * division for the column 65.3, with 256-thread blocks 65.7, with a
 * grid-stride loop 65.3, a 3D grid (column, row, batch: no division at
 * all) 66.0. */
#include "kernels/adaln.h"
#include "kernels/kf_cuda.cuh"

namespace kf_adaln
{

using namespace kf;

/* rows per thread per iteration: 2 (on an H200, 4 rows were 1.1% slower
 * and 1 row 3.3%, see kernels/MEASUREMENTS.md) */
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

/* The vector path as a flat list of the B*S*n vectors (n = D / V): one a
 * thread, 32-bit indices (the launcher keeps B*S*n < 2^32), row and column
 * by a shift and a mask where n is a power of two and the batch by a shift
 * where S is one (integer division otherwise), x loaded before the index
 * of the modulation is worked out. Preconditions: D % V == 0, x, y, scale,
 * shift 16-byte aligned, B*S*n < 2^32, a grid of at least B*S*n threads
 * (no loop: a grid-stride loop here measured 65.3 us against 64.6 at
 * 4x4096x4096 bf16 on an H200). */
template <typename T>
__device__ __forceinline__ void flat(T *y, const T *x, const T *scale, const T *shift, uint32_t B,
				     uint32_t S, uint32_t D)
{
	constexpr int V = vec_width<T>::value;
	const uint32_t n = D / V;
	const uint64_t total = (uint64_t)B * S * n;
	const bool n2 = (n & (n - 1)) == 0, s2 = (S & (S - 1)) == 0;
	const int nl = __ffs(n) - 1, sl = __ffs(S) - 1;
	const uint64_t j = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (j < total) {
		const uint32_t i = (uint32_t)j;
		uint32_t r, c;
		if (n2) { /* uniform: a branch, not a division computed and discarded */
			r = i >> nl;
			c = i & (n - 1);
		} else {
			r = i / n;
			c = i - r * n;
		}
		chunk<T, V> a;
		/* volatile: issued before the batch index below */
		asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
			     : "=r"(a.raw.x), "=r"(a.raw.y), "=r"(a.raw.z), "=r"(a.raw.w)
			     : "l"(reinterpret_cast<const uint4 *>(x + (uint64_t)r * D) + c));
		uint32_t b;
		if (s2)
			b = r >> sl;
		else
			b = r / S;
		float f[V], sc[V], sh[V];
		unpack<T, V>(ld_keep<T, V>(scale + (uint64_t)b * D, c), sc);
		unpack<T, V>(ld_keep<T, V>(shift + (uint64_t)b * D, c), sh);
		unpack<T, V>(a, f);
#pragma unroll
		for (int k = 0; k < V; k++)
			f[k] = fmaf(f[k], 1.f + sc[k], sh[k]);
		st_stream<T, V>(y + (uint64_t)r * D, c, pack<T, V>(f));
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

#define KF_ADALN_FLAT_KERNEL(SUF, T)                                                          \
	extern "C" __global__ void __launch_bounds__(128) kf_adaln_modulate_flat_##SUF(       \
		T *y, const T *x, const T *scale, const T *shift, int B, int S, int D)        \
	{                                                                                     \
		kf_adaln::flat<T>(y, x, scale, shift, (uint32_t)B, (uint32_t)S, (uint32_t)D); \
	}

KF_ADALN_FLAT_KERNEL(f32, float)
KF_ADALN_FLAT_KERNEL(f16, __half)
KF_ADALN_FLAT_KERNEL(bf16, __nv_bfloat16)
KF_ADALN_KERNEL(f32, float)
KF_ADALN_KERNEL(f16, __half)
KF_ADALN_KERNEL(bf16, __nv_bfloat16)

/* Whole 16-byte vectors (D % V == 0, aligned) and B*S*D/V < 2^32: the flat
 * kernel, block 128 (Inductor's; 256 measured 1% slower), grid
 * ceil_div(B*S*D/V, 128). Otherwise block 256 along the row, grid.x =
 * ceil_div(D, 2048) (one bf16 vector per thread), grid.y = ceil_div(B*S,
 * 2) groups of two rows capped at 65535. */
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
	const int64_t nv = D / (dt == KF_DT_F32 ? 4 : 8); /* vectors a row */
	if (D % (dt == KF_DT_F32 ? 4 : 8) == 0 && B * S * nv <= UINT32_MAX &&
	    (((uintptr_t)y | (uintptr_t)x | (uintptr_t)scale | (uintptr_t)shift) & 15u) == 0) {
		const unsigned grid = (unsigned)((B * S * nv + 127) / 128);
#define KF_ADALN_FLAT(SUF, TY)                                                                  \
	kf_adaln_modulate_flat_##SUF<<<grid, 128, 0, s>>>((TY *)y, (const TY *)x,               \
							  (const TY *)scale, (const TY *)shift, \
							  (int)B, (int)S, (int)D)
		if (dt == KF_DT_F32)
			KF_ADALN_FLAT(f32, float);
		else if (dt == KF_DT_F16)
			KF_ADALN_FLAT(f16, __half);
		else
			KF_ADALN_FLAT(bf16, __nv_bfloat16);
#undef KF_ADALN_FLAT
		return cudaGetLastError();
	}
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
