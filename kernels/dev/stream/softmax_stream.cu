/* softmax_stream: bench-only streamed version (see kf_stream.cuh), built into
 * libkfk_stream.so by build_ab.sh with KF_AB_STREAM=1 in place of
 * kernels/softmax.cu. */
/* softmax: softmax over the last dimension.
 *
 *   m[t] = max_i x[t,i],  s[t] = sum_i exp(x[t,i] - m[t])
 *   y[t,i] = exp(x[t,i] - m[t]) / s[t]
 *
 * Shapes: x, y (T, D) row-major, contiguous. Types f32, f16, bf16; fp32
 * arithmetic (exp as exp2f of the log2(e)-scaled difference).
 * Preconditions: T >= 0, 1 <= D < 2^31, any D. A row of all -inf gives NaN
 * (as PyTorch). Launch: block (tx, ty) from kfs::row_block, grid
 * ceil_div(T, ty).
 * Cost, e = sizeof(type): bytes = 2*T*D * e,  flops = 5*T*D (max, sub,
 * exp, add, scale; exp counted as one).
 * Technique: the row held in registers (one HBM pass); each thread
 * exponentiates against its own maximum (the exps kept in registers: one
 * exp an element), then ONE reduction of (max, sum) pairs across the row
 * (warp shuffles + one shared-memory step; s_a 2^(m_a - m) + s_b 2^(m_b - m)),
 * and each thread rescales its exps by 2^(own max - row max) / sum. Rows
 * wider than the register cache use an online (running max, rescaled sum)
 * first pass and a second pass through L2. */
#include "kernels/dev/stream/kf_stream.cuh"
#include "kernels/softmax.h"

namespace kf_sm
{

using namespace kfs;

#define KF_LOG2E 1.4426950408889634f

/* Folds the partial softmax sum (mb, sb) into (m, s): maxima in log2
 * units, s = sum of 2^(x - m); a part whose max is -inf holds no finite
 * element and adds nothing. */
__device__ __forceinline__ void ms_fold(float &m, float &s, float mb, float sb)
{
	const float mn = fmaxf(m, mb);
	const float fa = m == -INFINITY ? 0.f : exp2f(m - mn);
	const float fb = mb == -INFINITY ? 0.f : exp2f(mb - mn);
	s = s * fa + sb * fb;
	m = mn;
}

/* row_reduce (kf_cuda.cuh) for (max, sum) pairs: every thread of the block
 * calls it and gets its row's pair. red: __shared__ float[64], alternated
 * between two buffers by the caller (no closing barrier). */
__device__ __forceinline__ void row_reduce_ms(float &m, float &s, float *red)
{
	const int tx = blockDim.x, width = tx < 32 ? tx : 32;
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		if (o < width)
			ms_fold(m, s, __shfl_xor_sync(0xffffffffu, m, o),
				__shfl_xor_sync(0xffffffffu, s, o));
	if (tx <= 32)
		return;
	const int warps = tx >> 5;
	const int tid = threadIdx.y * tx + threadIdx.x;
	if ((tid & 31) == 0) {
		red[tid >> 5] = m;
		red[32 + (tid >> 5)] = s;
	}
	__syncthreads();
	const int w0 = threadIdx.y * warps;
	m = red[w0];
	s = red[32 + w0];
	for (int k = 1; k < warps; k++)
		ms_fold(m, s, red[w0 + k], red[32 + w0 + k]);
}

template <typename T> struct row_op {
	T *const y0;
	const T *const x0;
	const int rows, D;
	static constexpr bool STREAMS = true;
	float *const red2; /* two buffers of 64 */
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

	template <int W> __device__ __forceinline__ static float cmax(const chunk<T, W> &c)
	{
		float f[W], m = -INFINITY;
		unpack<T, W>(c, f);
#pragma unroll
		for (int j = 0; j < W; j++)
			m = fmaxf(m, f[j]);
		return m;
	}
	/* sum of exp(x - m), m pre-scaled by log2(e) */
	template <int W>
	__device__ __forceinline__ static float cexp(const chunk<T, W> &c, float ml)
	{
		float f[W], s = 0.f;
		unpack<T, W>(c, f);
#pragma unroll
		for (int j = 0; j < W; j++)
			s += exp2f(fmaf(f[j], KF_LOG2E, -ml));
		return s;
	}
	template <int W>
	__device__ __forceinline__ static void emit(T *y, int i, const chunk<T, W> &c, float ml,
						    float inv)
	{
		float f[W];
		unpack<T, W>(c, f);
#pragma unroll
		for (int j = 0; j < W; j++)
			f[j] = exp2f(fmaf(f[j], KF_LOG2E, -ml)) * inv;
		st_stream<T, W>(y, i, pack<T, W>(f));
	}

	/* LAND: the chunks come from the landing buffer (kfs::row_loop), which
	 * is refilled with the next row once the maxima have used them. */
	template <int W, int NV, bool LAND> __device__ __forceinline__ void run()
	{
		const int n = active ? D / W : 0;
		const int tx = blockDim.x, t = threadIdx.x;
		T *const y = y0 + off;
		const T *const x = x0 + off;
		float *const red = red2 + par * 64;
		if constexpr (NV > 0) {
			/* LAND: the chunks are read from shared memory twice
			 * (maxima, exps) instead of held, which leaves the
			 * registers to the exps, and the slot is refilled after
			 * the second read. */
			chunk<T, W> c[LAND ? 1 : NV];
			float m = -INFINITY, s = 0.f;
			if constexpr (!LAND) {
#pragma unroll
				for (int k = 0; k < NV; k++)
					if (t + k * tx < n)
						c[k] = ld_stream<T, W>(x, t + k * tx);
			}
			auto ch = [&](int k) -> chunk<T, W> {
				if constexpr (LAND)
					return lp.template get<W>(k);
				else
					return c[k];
			};
#pragma unroll
			for (int k = 0; k < NV; k++)
				if (t + k * tx < n)
					m = fmaxf(m, cmax<W>(ch(k)));
			if constexpr (LAND)
				asm volatile("" ::: "memory"); /* read again, do not hold */
			if constexpr (NV * W <= 32) {
				/* One reduction round instead of two: each thread
				 * exponentiates against its own max (kept in
				 * registers, one exp an element: the special-function
				 * unit runs at 1/4 of the FMA rate), then the (max,
				 * sum) pairs combine across the row, and each thread
				 * rescales by 2^(own max - row max) / row sum. Half
				 * the barriers, the same one pass over memory. exps
				 * as one ex2.approx.ftz each (exp2f adds 3
				 * instructions for subnormal results; here those
				 * flush to 0, far below every tolerance). */
				const float mt = m * KF_LOG2E; /* -inf: no finite element */
				const float sh = mt == -INFINITY ? 0.f : mt;
				float e[NV][W];
#pragma unroll
				for (int k = 0; k < NV; k++)
					if (t + k * tx < n) {
						unpack<T, W>(ch(k), e[k]);
#pragma unroll
						for (int j = 0; j < W; j++) {
							e[k][j] = ex2_approx(
								fmaf(e[k][j], KF_LOG2E, -sh));
							s += e[k][j];
						}
					}
				if constexpr (LAND)
					lp.template refill<W, NV>(t, tx, D / W);
				float M = mt, S = s;
				row_reduce_ms(M, S, red);
				/* all -inf: S = 0, 0/0 = NaN (as PyTorch) */
				const float inv = (mt == -INFINITY ? 0.f : exp2f(mt - M)) / S;
#pragma unroll
				for (int k = 0; k < NV; k++)
					if (t + k * tx < n) {
#pragma unroll
						for (int j = 0; j < W; j++)
							e[k][j] *= inv;
						st_stream<T, W>(y, t + k * tx, pack<T, W>(e[k]));
					}
			} else {
				const float ml = row_reduce<true, false>(m, red) * KF_LOG2E;
#pragma unroll
				for (int k = 0; k < NV; k++)
					if (t + k * tx < n)
						s += cexp<W>(ch(k), ml);
				const float inv = 1.f / row_reduce<false, false>(s, red + 32);
#pragma unroll
				for (int k = 0; k < NV; k++)
					if (t + k * tx < n)
						emit<W>(y, t + k * tx, ch(k), ml, inv);
			}
		} else {
			/* Online pass: running max and a sum rescaled when it grows. */
			float m = -INFINITY, s = 0.f;
			for (int i = t; i < n; i += tx) {
				chunk<T, W> c = ld_plain<T, W>(x, i);
				const float cm = cmax<W>(c);
				if (cm > m) {
					s *= exp2f((m - cm) * KF_LOG2E);
					m = cm;
				}
				if (m != -INFINITY) /* else every element so far is -inf */
					s += cexp<W>(c, m * KF_LOG2E);
			}
			float ml = m * KF_LOG2E; /* s is relative to it */
			row_reduce_ms(ml, s, red);
			const float inv = 1.f / s;
			for (int i = t; i < n; i += tx)
				emit<W>(y, i, ld_plain<T, W>(x, i), ml, inv);
		}
	}
};

template <typename T> __device__ __forceinline__ void body(T *y, const T *x, int rows, int D)
{
	__shared__ float red[128];
	constexpr int V = vec_width<T>::value;
	const bool vec_ok = D % V == 0 && aligned16(x) && aligned16(y);
	row_op<T> op{y, x, rows, D, red};
	row_loop<T>(op, x, rows, D, vec_ok);
}

} /* namespace kf_sm */

#define KF_SM_KERNELS(SUF, T)                                       \
	extern "C" __global__ void __launch_bounds__(256, 3)        \
		kf_softmax_##SUF(T *y, const T *x, int rows, int D) \
	{                                                           \
		kf_sm::body<T>(y, x, rows, D);                      \
	}

KF_SM_KERNELS(f32, float)
KF_SM_KERNELS(f16, __half)
KF_SM_KERNELS(bf16, __nv_bfloat16)

/* kfs::row_launch: block (tx, ty) from kfs::row_block (row in registers, 32
 * elements a thread), grid ceil_div(T, ty), capped at 4 blocks an SM with
 * 32 KB of dynamic shared memory on large inputs (the streamed path). */
extern "C" cudaError_t softmax_launch(enum kf_dtype dt, void *y, const void *x, int64_t T,
				      int64_t D, cudaStream_t s)
{
	if (dt != KF_DT_F32 && dt != KF_DT_F16 && dt != KF_DT_BF16)
		return cudaErrorInvalidValue;
	if (T < 0 || T > INT32_MAX || D < 1 || D > INT32_MAX)
		return cudaErrorInvalidValue;
	if (T == 0)
		return cudaSuccess;
	if (!y || !x)
		return cudaErrorInvalidValue;
	dim3 grid, block;
	unsigned sh;
	kfs::row_launch(T, D, &grid, &block, &sh);
	if (dt == KF_DT_F32)
		kf_softmax_f32<<<grid, block, sh, s>>>((float *)y, (const float *)x, (int)T,
						       (int)D);
	else if (dt == KF_DT_F16)
		kf_softmax_f16<<<grid, block, sh, s>>>((__half *)y, (const __half *)x, (int)T,
						       (int)D);
	else
		kf_softmax_bf16<<<grid, block, sh, s>>>((__nv_bfloat16 *)y,
							(const __nv_bfloat16 *)x, (int)T, (int)D);
	return cudaGetLastError();
}
