/* softmax: softmax over the last dimension.
 *
 *   m[t] = max_i x[t,i],  s[t] = sum_i exp(x[t,i] - m[t])
 *   y[t,i] = exp(x[t,i] - m[t]) / s[t]
 *
 * Shapes: x, y (T, D) row-major, contiguous. Types f32, f16, bf16; fp32
 * arithmetic (exp as exp2f of the log2(e)-scaled difference).
 * Preconditions: T >= 0, 1 <= D < 2^31, any D. A row of all -inf gives NaN
 * (as PyTorch). Launch: block (tx, ty) from kf::row_block, grid
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
#include "kernels/kf_cuda.cuh"
#include "kernels/softmax.h"

namespace kf_softmax
{

using namespace kf;

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
 * calls it and gets its row's pair. red: __shared__ float[64]. */
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
	/* no closing barrier: each path makes this its only reduction */
}

template <typename T> struct row_op {
	T *y;
	const T *x;
	int D;
	bool active;
	float *red;

	/* packed maxima for 16-bit chunks (kf::chunk_max) */
	template <int W> __device__ __forceinline__ static float cmax(const chunk<T, W> &c)
	{
		return chunk_max<T, W>(c);
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
	__device__ __forceinline__ void emit(int i, const chunk<T, W> &c, float ml, float inv) const
	{
		float f[W];
		unpack<T, W>(c, f);
#pragma unroll
		for (int j = 0; j < W; j++)
			f[j] = exp2f(fmaf(f[j], KF_LOG2E, -ml)) * inv;
		st_stream<T, W>(y, i, pack<T, W>(f));
	}

	template <int W, int NV> __device__ __forceinline__ void run()
	{
		const int n = active ? D / W : 0;
		const int tx = blockDim.x, t = threadIdx.x;
		if constexpr (NV > 0) {
			chunk<T, W> c[NV];
			float m = -INFINITY, s = 0.f;
#pragma unroll
			for (int k = 0; k < NV; k++)
				if (t + k * tx < n)
					c[k] = ld_stream<T, W>(x, t + k * tx);
#pragma unroll
			for (int k = 0; k < NV; k++)
				if (t + k * tx < n)
					m = fmaxf(m, cmax<W>(c[k]));
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
						unpack<T, W>(c[k], e[k]);
#pragma unroll
						for (int j = 0; j < W; j++) {
							e[k][j] = ex2_approx(
								fmaf(e[k][j], KF_LOG2E, -sh));
							s += e[k][j];
						}
					}
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
				const float ml = row_reduce<true>(m, red) * KF_LOG2E;
#pragma unroll
				for (int k = 0; k < NV; k++)
					if (t + k * tx < n)
						s += cexp<W>(c[k], ml);
				const float inv = 1.f / row_reduce<false>(s, red);
#pragma unroll
				for (int k = 0; k < NV; k++)
					if (t + k * tx < n)
						emit<W>(t + k * tx, c[k], ml, inv);
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
				emit<W>(i, ld_plain<T, W>(x, i), ml, inv);
		}
	}
};

template <typename T> __device__ __forceinline__ void body(T *y, const T *x, int rows, int D)
{
	__shared__ float red[64];
	const int64_t row = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
	const int64_t off = row * (int64_t)D;
	constexpr int V = vec_width<T>::value;
	const bool vec_ok = D % V == 0 && aligned16(x) && aligned16(y);
	row_op<T> op{y + off, x + off, D, row < rows, red};
	row_dispatch<T>(op, D, vec_ok);
}

} /* namespace kf_softmax */

#define KF_SOFTMAX_KERNELS(SUF, T)                                  \
	extern "C" __global__ void __launch_bounds__(1024)          \
		kf_softmax_##SUF(T *y, const T *x, int rows, int D) \
	{                                                           \
		kf_softmax::body<T>(y, x, rows, D);                 \
	}

KF_SOFTMAX_KERNELS(f32, float)
KF_SOFTMAX_KERNELS(f16, __half)
KF_SOFTMAX_KERNELS(bf16, __nv_bfloat16)

/* Block (tx, ty) from kf::row_block (row in registers, 64 bytes a
 * thread), grid ceil_div(T, ty), 256 bytes of static shared memory. */
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
	int tx, ty;
	kf::row_block(T, D, dt == KF_DT_F32 ? 4 : 2, 128, &tx, &ty);
	dim3 block(tx, ty), grid((unsigned)((T + ty - 1) / ty));
	if (dt == KF_DT_F32)
		kf_softmax_f32<<<grid, block, 0, s>>>((float *)y, (const float *)x, (int)T, (int)D);
	else if (dt == KF_DT_F16)
		kf_softmax_f16<<<grid, block, 0, s>>>((__half *)y, (const __half *)x, (int)T,
						      (int)D);
	else
		kf_softmax_bf16<<<grid, block, 0, s>>>((__nv_bfloat16 *)y, (const __nv_bfloat16 *)x,
						       (int)T, (int)D);
	return cudaGetLastError();
}
