/* layernorm_stream: bench-only streamed version (see kf_stream.cuh), built into
 * libkfk_stream.so by build_ab.sh with KF_AB_STREAM=1 in place of
 * kernels/layernorm.cu. */
/* layernorm: layer normalization over the last dimension, weight and bias
 * optional.
 *
 *   mu[t] = mean_i x[t,i],  var[t] = mean_i (x[t,i] - mu[t])^2
 *   y[t,i] = (x[t,i] - mu[t]) * rsqrt(var[t] + eps) * w[i] + b[i]
 *   (w == NULL: no scale; b == NULL: no shift)
 *
 * Shapes: x, y (T, D) row-major, contiguous; w, b (D). Types f32, f16, bf16
 * (one type for all tensors); eps f32; arithmetic in fp32, variance from
 * the centered values (two reductions over the row held in registers, not
 * E[x^2] - E[x]^2, which cancels).
 * Preconditions: T >= 0, 1 <= D < 2^31; any D (vector path when D is a
 * multiple of 16/sizeof(type) and pointers are 16-byte aligned).
 * Launch: block (tx, ty) from kfs::row_block, grid ceil_div(T, ty).
 * Cost, e = sizeof(type), nw = (w != NULL) + (b != NULL):
 *   bytes = (2*T*D + nw*D) * e,  flops = (7 + nw) * T*D
 * Technique: as rmsnorm (row in registers, one HBM pass), with two
 * row reductions; the wide-row fallback makes three passes through L2. */
#include "kernels/dev/stream/kf_stream.cuh"
#include "kernels/layernorm.h"

namespace kf_ln
{

using namespace kfs;

template <typename T, bool HW, bool HB> struct row_op {
	T *const y0;
	const T *const x0;
	const T *const w;
	const T *const b;
	const int rows, D;
	const float eps;
	static constexpr bool STREAMS = true;
	float *const red2; /* two buffers of 64: two reductions a row each */
	int64_t off = 0;
	bool active = false;
	int par = 0;
	land<T> lp;

	__device__ __forceinline__ void at(int64_t row, int it)
	{
		active = row < rows;
		off = row * (int64_t)D;
		par = it & 1;
	}

	/* wc, bc: weight and bias chunks (ignored without HW / HB). */
	template <int W>
	__device__ __forceinline__ static void emit(T *y, int i, const chunk<T, W> &c, float mu,
						    float inv, const chunk<T, W> &wc,
						    const chunk<T, W> &bc)
	{
		float f[W];
		unpack<T, W>(c, f);
#pragma unroll
		for (int j = 0; j < W; j++)
			f[j] = (f[j] - mu) * inv;
		if constexpr (HW) {
			float g[W];
			unpack<T, W>(wc, g);
#pragma unroll
			for (int j = 0; j < W; j++)
				f[j] *= g[j];
		}
		if constexpr (HB) {
			float g[W];
			unpack<T, W>(bc, g);
#pragma unroll
			for (int j = 0; j < W; j++)
				f[j] += g[j];
		}
		st_stream<T, W>(y, i, pack<T, W>(f));
	}

	template <int W> __device__ __forceinline__ static float csum(const chunk<T, W> &c)
	{
		float f[W], s = 0.f;
		unpack<T, W>(c, f);
#pragma unroll
		for (int j = 0; j < W; j++)
			s += f[j];
		return s;
	}
	template <int W> __device__ __forceinline__ static float csq(const chunk<T, W> &c, float mu)
	{
		float f[W], s = 0.f;
		unpack<T, W>(c, f);
#pragma unroll
		for (int j = 0; j < W; j++)
			s += (f[j] - mu) * (f[j] - mu);
		return s;
	}
	template <int W> __device__ __forceinline__ chunk<T, W> wload(int i) const
	{
		chunk<T, W> c{};
		if constexpr (HW)
			c = ld_keep<T, W>(w, i);
		return c;
	}
	template <int W> __device__ __forceinline__ chunk<T, W> bload(int i) const
	{
		chunk<T, W> c{};
		if constexpr (HB)
			c = ld_keep<T, W>(b, i);
		return c;
	}

	/* LAND: x comes from the landing buffer (kfs::row_loop), refilled with
	 * the next row once the sums have used it. */
	template <int W, int NV, bool LAND> __device__ __forceinline__ void run()
	{
		const int n = active ? D / W : 0;
		const int tx = blockDim.x, t = threadIdx.x;
		T *const y = y0 + off;
		const T *const x = x0 + off;
		float *const red = red2 + par * 64;
		float s = 0.f, q = 0.f;
		if constexpr (NV > 0) {
			/* weight and bias loaded with x when NV <= 2 (registers):
			 * no dependent round trip after the reductions; else in
			 * groups of 2 chunks before their stores (the compiler
			 * keeps a load behind an earlier store that may alias). */
			constexpr bool PRE = (HW || HB) && NV <= 2;
			constexpr int G = 1;
			chunk<T, W> c[NV], wc[PRE ? NV : 1], bc[PRE ? NV : 1];
#pragma unroll
			for (int k = 0; k < NV; k++)
				if (t + k * tx < n) {
					c[k] = LAND ? lp.template get<W>(k)
						    : ld_stream<T, W>(x, t + k * tx);
					if constexpr (PRE) {
						wc[k] = wload<W>(t + k * tx);
						bc[k] = bload<W>(t + k * tx);
					}
				}
#pragma unroll
			for (int k = 0; k < NV; k++)
				if (t + k * tx < n)
					s += csum<W>(c[k]);
			if constexpr (LAND)
				lp.template refill<W, NV>(t, tx, D / W);
			const float mu = row_reduce<false, false>(s, red) / (float)D;
#pragma unroll
			for (int k = 0; k < NV; k++)
				if (t + k * tx < n)
					q += csq<W>(c[k], mu);
			const float inv =
				rsqrtf(row_reduce<false, false>(q, red + 32) / (float)D + eps);
#pragma unroll
			for (int g = 0; g < NV; g += G) {
				chunk<T, W> lw[PRE ? 1 : G], lb[PRE ? 1 : G];
				if constexpr (!PRE) {
#pragma unroll
					for (int k = g; k < g + G; k++)
						if (t + k * tx < n) {
							lw[k - g] = wload<W>(t + k * tx);
							lb[k - g] = bload<W>(t + k * tx);
						}
				}
#pragma unroll
				for (int k = g; k < g + G; k++)
					if (t + k * tx < n)
						emit<W>(y, t + k * tx, c[k], mu, inv,
							PRE ? wc[PRE ? k : 0] : lw[PRE ? 0 : k - g],
							PRE ? bc[PRE ? k : 0]
							    : lb[PRE ? 0 : k - g]);
			}
		} else {
			for (int i = t; i < n; i += tx)
				s += csum<W>(ld_plain<T, W>(x, i));
			const float mu = row_reduce<false, false>(s, red) / (float)D;
			for (int i = t; i < n; i += tx)
				q += csq<W>(ld_plain<T, W>(x, i), mu);
			const float inv =
				rsqrtf(row_reduce<false, false>(q, red + 32) / (float)D + eps);
			for (int i = t; i < n; i += tx)
				emit<W>(y, i, ld_plain<T, W>(x, i), mu, inv, wload<W>(i),
					bload<W>(i));
		}
	}
};

template <typename T, bool HW, bool HB>
__device__ __forceinline__ void body(T *y, const T *x, const T *w, const T *b, int rows, int D,
				     float eps)
{
	__shared__ float red[128];
	constexpr int V = vec_width<T>::value;
	const bool vec_ok = D % V == 0 && aligned16(x) && aligned16(y) && (!HW || aligned16(w)) &&
			    (!HB || aligned16(b));
	row_op<T, HW, HB> op{y, x, w, b, rows, D, eps, red};
	row_loop<T>(op, x, rows, D, vec_ok);
}

template <typename T, bool HW, bool HB>
__global__ void __launch_bounds__(256, 3)
	ln_kernel(T *y, const T *x, const T *w, const T *b, int rows, int D, float eps)
{
	body<T, HW, HB>(y, x, w, b, rows, D, eps);
}

} /* namespace kf_ln */

#define KF_LN_KERNELS(SUF, T)                                                             \
	extern "C" __global__ void __launch_bounds__(256, 3) kf_layernorm_##SUF(          \
		T *y, const T *x, const T *w, const T *b, int rows, int D, float eps)     \
	{                                                                                 \
		kf_ln::body<T, true, true>(y, x, w, b, rows, D, eps);                     \
	}                                                                                 \
	extern "C" __global__ void __launch_bounds__(256, 3)                              \
		kf_layernorm_noaffine_##SUF(T *y, const T *x, int rows, int D, float eps) \
	{                                                                                 \
		kf_ln::body<T, false, false>(y, x, nullptr, nullptr, rows, D, eps);       \
	}

KF_LN_KERNELS(f32, float)
KF_LN_KERNELS(f16, __half)
KF_LN_KERNELS(bf16, __nv_bfloat16)

/* --- launch helper --------------------------------------------------------- */

template <typename T>
static cudaError_t ln_go(dim3 grid, dim3 block, unsigned sh, cudaStream_t s, void *y, const void *x,
			 const void *w, const void *b, int rows, int D, float eps)
{
	T *yy = (T *)y;
	const T *xx = (const T *)x, *ww = (const T *)w, *bb = (const T *)b;
	if (w && b)
		kf_ln::ln_kernel<T, true, true>
			<<<grid, block, sh, s>>>(yy, xx, ww, bb, rows, D, eps);
	else if (w)
		kf_ln::ln_kernel<T, true, false>
			<<<grid, block, sh, s>>>(yy, xx, ww, bb, rows, D, eps);
	else if (b)
		kf_ln::ln_kernel<T, false, true>
			<<<grid, block, sh, s>>>(yy, xx, ww, bb, rows, D, eps);
	else
		kf_ln::ln_kernel<T, false, false>
			<<<grid, block, sh, s>>>(yy, xx, ww, bb, rows, D, eps);
	return cudaGetLastError();
}

/* kfs::row_launch: block (tx, ty) from kfs::row_block (the row in registers
 * at 32 elements a thread, ty small rows packed per block), grid
 * ceil_div(T, ty), capped at 4 blocks an SM with 32 KB of dynamic shared
 * memory on large inputs (the streamed path); 512 bytes of static shared
 * memory for the reductions. */
extern "C" cudaError_t layernorm_launch(enum kf_dtype dt, void *y, const void *x, const void *w,
					const void *b, int64_t T, int64_t D, float eps,
					cudaStream_t s)
{
	if (dt != KF_DT_F32 && dt != KF_DT_F16 && dt != KF_DT_BF16)
		return cudaErrorInvalidValue;
	if (T < 0 || T > INT32_MAX || D < 1 || D > INT32_MAX || !(eps >= 0.f))
		return cudaErrorInvalidValue;
	if (T == 0)
		return cudaSuccess;
	if (!y || !x)
		return cudaErrorInvalidValue;
	dim3 grid, block;
	unsigned sh;
	kfs::row_launch(T, D, &grid, &block, &sh);
	if (dt == KF_DT_F32)
		return ln_go<float>(grid, block, sh, s, y, x, w, b, (int)T, (int)D, eps);
	if (dt == KF_DT_F16)
		return ln_go<__half>(grid, block, sh, s, y, x, w, b, (int)T, (int)D, eps);
	return ln_go<__nv_bfloat16>(grid, block, sh, s, y, x, w, b, (int)T, (int)D, eps);
}
