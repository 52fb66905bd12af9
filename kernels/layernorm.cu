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
 * Launch: 16-bit rows of 257-512 whole 16-byte vectors (D % 8 == 0, 2056
 * <= D <= 4096, pointers 16-byte aligned): the two-row kernels
 * kf_layernorm[_noaffine]_2rows_*, block 128, grid ceil_div(T, 2);
 * otherwise block (tx, ty) from kf::row_block, grid ceil_div(T, ty).
 * Cost, e = sizeof(type), nw = (w != NULL) + (b != NULL):
 *   bytes = (2*T*D + nw*D) * e,  flops = (7 + nw) * T*D
 * Technique: as rmsnorm (row in registers, one HBM pass), with two
 * row reductions; the wide-row fallback makes three passes through L2.
 * 16-bit kernels hold x packed and run at 40 registers (more rows in
 * flight an SM), so they keep at most 32 elements a thread in registers:
 * rows over 32768 elements take the three-pass path. 16-bit rows of
 * 2056-4096 elements go two a thread instead (8 blocks of 128 threads at
 * 64 registers: 16 rows an SM against 12, one barrier for both rows'
 * sums, the weight and bias loaded once for two rows). On an H200 (CUPTI
 * kernel time against the one-row kernel, two traces): bf16 16384x4096
 * 67.26-67.37 -> 66.34-66.58 us, 2x4096x3072 26.98 -> 26.69; see
 * kernels/MEASUREMENTS.md. */
#include "kernels/kf_cuda.cuh"
#include "kernels/layernorm.h"

namespace kf_ln
{

using namespace kf;

template <typename T, bool HW, bool HB> struct row_op {
	T *y;
	const T *x;
	const T *w;
	const T *b;
	int D;
	float eps;
	bool active;
	float *red;

	/* wc, bc: preloaded weight and bias chunks, or NULL (loaded here).
	 * x: the chunk's elements as floats. (x - mu) * inv keeps the
	 * subtraction exact-ish (x * inv - mu * inv would cancel when |mu| is
	 * large against the spread); the affine part is one FMA. */
	template <int W>
	__device__ __forceinline__ void emit(int i, const float (&x)[W], float mu, float inv,
					     const chunk<T, W> *wc, const chunk<T, W> *bc) const
	{
		float f[W], g[W], h[W];
#pragma unroll
		for (int j = 0; j < W; j++)
			f[j] = (x[j] - mu) * inv;
		if constexpr (HW)
			unpack<T, W>(wc ? *wc : ld_keep<T, W>(w, i), g);
		if constexpr (HB)
			unpack<T, W>(bc ? *bc : ld_keep<T, W>(b, i), h);
#pragma unroll
		for (int j = 0; j < W; j++)
			f[j] = HW && HB ? fmaf(f[j], g[j], h[j])
			       : HW	? f[j] * g[j]
			       : HB	? f[j] + h[j]
					: f[j];
		st_row<T, W>(y, i, pack<T, W>(f));
	}
	template <int W>
	__device__ __forceinline__ void emit(int i, const chunk<T, W> &c, float mu, float inv,
					     const chunk<T, W> *wc, const chunk<T, W> *bc) const
	{
		float f[W];
		unpack<T, W>(c, f);
		emit<W>(i, f, mu, inv, wc, bc);
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

	template <int W, int NV> __device__ __forceinline__ void run()
	{
		const int n = active ? D / W : 0;
		const int tx = blockDim.x, t = threadIdx.x;
		/* 1/D once, off the critical path (it overlaps the loads):
		 * each statistic is then one multiply, not an IEEE division
		 * (a dependent sequence with a slow-path call) after each
		 * reduction; 1 ulp more error in the mean than dividing */
		const float rD = 1.f / (float)D;
		float s = 0.f, q = 0.f;
		if constexpr (NV > 0) {
			/* weight and bias loaded with x (NV <= 2 bounds registers):
			 * no dependent round trip after the reductions */
			constexpr bool PW = HW && NV <= 2, PB = HB && NV <= 2;
			chunk<T, W> c[NV], wc[PW ? NV : 1], bc[PB ? NV : 1];
#pragma unroll
			for (int k = 0; k < NV; k++)
				if (t + k * tx < n) {
					c[k] = ld_row<T, W>(x, t + k * tx);
					if constexpr (PW)
						wc[k] = ld_keep<T, W>(w, t + k * tx);
					if constexpr (PB)
						bc[k] = ld_keep<T, W>(b, t + k * tx);
				}
			if constexpr (NV * W <= 32 && sizeof(T) == 4) {
				/* f32: x held as the floats it is (at most 16
				 * elements a thread). 16-bit x stays packed (the
				 * branch below converts it on each pass): half the
				 * registers, so the 40-register kernels (KF_LN_16)
				 * hold it without spilling */
				float xf[NV][W];
#pragma unroll
				for (int k = 0; k < NV; k++)
					if (t + k * tx < n) {
						unpack<T, W>(c[k], xf[k]);
#pragma unroll
						for (int j = 0; j < W; j++)
							s += xf[k][j];
					}
				const float mu = row_reduce<false, false>(s, red) * rD;
#pragma unroll
				for (int k = 0; k < NV; k++)
					if (t + k * tx < n)
#pragma unroll
						for (int j = 0; j < W; j++)
							q = fmaf(xf[k][j] - mu, xf[k][j] - mu, q);
				const float inv =
					rsqrtf(row_reduce<false, false>(q, red + 32) * rD + eps);
#pragma unroll
				for (int k = 0; k < NV; k++)
					if (t + k * tx < n)
						emit<W>(t + k * tx, xf[k], mu, inv,
							PW ? &wc[PW ? k : 0] : nullptr,
							PB ? &bc[PB ? k : 0] : nullptr);
			} else {
#pragma unroll
				for (int k = 0; k < NV; k++)
					if (t + k * tx < n)
						s += csum<W>(c[k]);
				const float mu = row_reduce<false, false>(s, red) * rD;
#pragma unroll
				for (int k = 0; k < NV; k++)
					if (t + k * tx < n)
						q += csq<W>(c[k], mu);
				const float inv =
					rsqrtf(row_reduce<false, false>(q, red + 32) * rD + eps);
#pragma unroll
				for (int k = 0; k < NV; k++)
					if (t + k * tx < n)
						emit<W>(t + k * tx, c[k], mu, inv, nullptr,
							nullptr);
			}
		} else {
			for (int i = t; i < n; i += tx)
				s += csum<W>(ld_plain<T, W>(x, i));
			const float mu = row_reduce<false, false>(s, red) * rD;
			for (int i = t; i < n; i += tx)
				q += csq<W>(ld_plain<T, W>(x, i), mu);
			const float inv = rsqrtf(row_reduce<false, false>(q, red + 32) * rD + eps);
			for (int i = t; i < n; i += tx)
				emit<W>(i, ld_plain<T, W>(x, i), mu, inv, nullptr, nullptr);
		}
	}
};

template <typename T, bool HW, bool HB>
__device__ __forceinline__ void body(T *y, const T *x, const T *w, const T *b, int rows, int D,
				     float eps)
{
	__shared__ float red[64]; /* the two reductions' buffers */
	const int64_t row = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
	const int64_t off = row * (int64_t)D;
	constexpr int V = vec_width<T>::value;
	const bool vec_ok = D % V == 0 && aligned16(x) && aligned16(y) && (!HW || aligned16(w)) &&
			    (!HB || aligned16(b));
	row_op<T, HW, HB> op{y + off, x + off, w, b, D, eps, row < rows, red};
	/* 16-bit: at most 4 chunks a thread (32 elements) in registers, the
	 * wider rows (D > 32768) through the loop path, at 40 registers */
	row_dispatch<T, sizeof(T) == 2 ? 4 : 8>(op, D, vec_ok);
}

/* 16-bit layernorm kernels are held to 40 registers: 12 blocks of 128
 * threads an SM instead of 8 at 64, more rows' loads in flight. On an H200
 * (CUPTI kernel time, against 64 registers built the same way): bf16
 * 16384x4096 67.5-67.8 -> 67.1 us, 2x4096x3072 27.8-28.0 -> 26.8-27.0; at
 * 48 registers 67.1 and 27.1-27.3; f32 at 40 or 48 registers 1% slower,
 * so it keeps 64 (kernels/MEASUREMENTS.md). */
#define KF_LN_16 __maxnreg__(40)
#define KF_LN_32 __launch_bounds__(1024)

template <typename T, bool HW, bool HB>
__global__ void KF_LN_32 ln_kernel(T *y, const T *x, const T *w, const T *b, int rows, int D,
				   float eps)
{
	body<T, HW, HB>(y, x, w, b, rows, D, eps);
}
template <typename T, bool HW, bool HB>
__global__ void KF_LN_16 ln_kernel16(T *y, const T *x, const T *w, const T *b, int rows, int D,
				     float eps)
{
	body<T, HW, HB>(y, x, w, b, rows, D, eps);
}

/* Two rows a thread: rows 2*blockIdx.x and the next, each of the
 * block's threads holding the same chunk columns of both, so both rows'
 * sums share one barrier, every weight and bias chunk is loaded once for
 * two rows, and an SM holds 16 rows' loads in flight (8 blocks at 64
 * registers) instead of ln_kernel16's 12. Preconditions: D % V == 0 (V:
 * a 16-byte vector), D / V <= 4 * blockDim.x, blockDim.x a multiple of 32,
 * 16-byte aligned pointers, grid ceil_div(rows, 2). */
constexpr int TWO_NV = 4, TWO_BLOCK = 128; /* chunks a thread a row; threads */

__device__ __forceinline__ float2 row_reduce2(float2 v, float2 *red)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) {
		v.x += __shfl_xor_sync(0xffffffffu, v.x, o);
		v.y += __shfl_xor_sync(0xffffffffu, v.y, o);
	}
	const int warps = blockDim.x >> 5;
	if ((threadIdx.x & 31) == 0)
		red[threadIdx.x >> 5] = v;
	__syncthreads();
	float2 s = red[0];
	for (int k = 1; k < warps; k++) {
		s.x += red[k].x;
		s.y += red[k].y;
	}
	return s;
}

template <typename T, bool HW, bool HB>
__device__ __forceinline__ void body2(T *y, const T *x, const T *w, const T *b, int rows, int D,
				      float eps)
{
	constexpr int V = vec_width<T>::value;
	__shared__ float2 red[2][32]; /* the two reductions' buffers */
	const int n = D / V, t = threadIdx.x, tx = blockDim.x;
	const int64_t r0 = 2 * (int64_t)blockIdx.x;
	const bool two = r0 + 1 < rows;
	const float rD = 1.f / (float)D;
	using op = row_op<T, HW, HB>;
	const op o0{y + r0 * D, x + r0 * D, w, b, D, eps, true, nullptr};
	const op o1{y + (r0 + 1) * D, x + (r0 + 1) * D, w, b, D, eps, two, nullptr};
	chunk<T, V> c0[TWO_NV], c1[TWO_NV];
#pragma unroll
	for (int k = 0; k < TWO_NV; k++)
		if (t + k * tx < n) {
			c0[k] = ld_row<T, V>(o0.x, t + k * tx);
			if (two)
				c1[k] = ld_row<T, V>(o1.x, t + k * tx);
		}
	float2 s = make_float2(0.f, 0.f);
#pragma unroll
	for (int k = 0; k < TWO_NV; k++)
		if (t + k * tx < n) {
			s.x += op::template csum<V>(c0[k]);
			if (two)
				s.y += op::template csum<V>(c1[k]);
		}
	s = row_reduce2(s, red[0]);
	const float mu0 = s.x * rD, mu1 = s.y * rD;
	float2 q = make_float2(0.f, 0.f);
#pragma unroll
	for (int k = 0; k < TWO_NV; k++)
		if (t + k * tx < n) {
			q.x += op::template csq<V>(c0[k], mu0);
			if (two)
				q.y += op::template csq<V>(c1[k], mu1);
		}
	q = row_reduce2(q, red[1]);
	const float inv0 = rsqrtf(q.x * rD + eps), inv1 = rsqrtf(q.y * rD + eps);
#pragma unroll
	for (int k = 0; k < TWO_NV; k++)
		if (t + k * tx < n) {
			chunk<T, V> wc, bc;
			if constexpr (HW)
				wc = ld_keep<T, V>(w, t + k * tx);
			if constexpr (HB)
				bc = ld_keep<T, V>(b, t + k * tx);
			o0.template emit<V>(t + k * tx, c0[k], mu0, inv0, HW ? &wc : nullptr,
					    HB ? &bc : nullptr);
			if (two)
				o1.template emit<V>(t + k * tx, c1[k], mu1, inv1,
						    HW ? &wc : nullptr, HB ? &bc : nullptr);
		}
}

/* at most 64 registers (8 blocks an SM): the two rows' 8 chunks and their
 * statistics, spill-free */
#define KF_LN_TWO __launch_bounds__(kf_ln::TWO_BLOCK, 8)

template <typename T, bool HW, bool HB>
__global__ void KF_LN_TWO ln2_kernel(T *y, const T *x, const T *w, const T *b, int rows, int D,
				     float eps)
{
	body2<T, HW, HB>(y, x, w, b, rows, D, eps);
}

} /* namespace kf_ln */

#define KF_LN_KERNELS(SUF, T, BOUNDS)                                                             \
	extern "C" __global__ void BOUNDS kf_layernorm_##SUF(                                     \
		T *y, const T *x, const T *w, const T *b, int rows, int D, float eps)             \
	{                                                                                         \
		kf_ln::body<T, true, true>(y, x, w, b, rows, D, eps);                             \
	}                                                                                         \
	extern "C" __global__ void BOUNDS kf_layernorm_noaffine_##SUF(T *y, const T *x, int rows, \
								      int D, float eps)           \
	{                                                                                         \
		kf_ln::body<T, false, false>(y, x, nullptr, nullptr, rows, D, eps);               \
	}

KF_LN_KERNELS(f32, float, KF_LN_32)
KF_LN_KERNELS(f16, __half, KF_LN_16)
KF_LN_KERNELS(bf16, __nv_bfloat16, KF_LN_16)

/* The two-row kernels, for the op templates: 16-bit rows of 257-512 whole
 * vectors (the f32 ones exist because a template names its kernels per
 * dtype; no launch picks them). */
#define KF_LN_TWO_KERNELS(SUF, T)                                                     \
	extern "C" __global__ void KF_LN_TWO kf_layernorm_2rows_##SUF(                \
		T *y, const T *x, const T *w, const T *b, int rows, int D, float eps) \
	{                                                                             \
		kf_ln::body2<T, true, true>(y, x, w, b, rows, D, eps);                \
	}                                                                             \
	extern "C" __global__ void KF_LN_TWO kf_layernorm_noaffine_2rows_##SUF(       \
		T *y, const T *x, int rows, int D, float eps)                         \
	{                                                                             \
		kf_ln::body2<T, false, false>(y, x, nullptr, nullptr, rows, D, eps);  \
	}

KF_LN_TWO_KERNELS(f32, float)
KF_LN_TWO_KERNELS(f16, __half)
KF_LN_TWO_KERNELS(bf16, __nv_bfloat16)

/* --- launch helper --------------------------------------------------------- */

template <typename T>
static cudaError_t ln_go(dim3 grid, dim3 block, cudaStream_t s, void *y, const void *x,
			 const void *w, const void *b, int rows, int D, float eps)
{
	T *yy = (T *)y;
	const T *xx = (const T *)x, *ww = (const T *)w, *bb = (const T *)b;
#define KF_LN_GO(K)                                                                              \
	do {                                                                                     \
		if (w && b)                                                                      \
			K<T, true, true><<<grid, block, 0, s>>>(yy, xx, ww, bb, rows, D, eps);   \
		else if (w)                                                                      \
			K<T, true, false><<<grid, block, 0, s>>>(yy, xx, ww, bb, rows, D, eps);  \
		else if (b)                                                                      \
			K<T, false, true><<<grid, block, 0, s>>>(yy, xx, ww, bb, rows, D, eps);  \
		else                                                                             \
			K<T, false, false><<<grid, block, 0, s>>>(yy, xx, ww, bb, rows, D, eps); \
	} while (0)
	if constexpr (sizeof(T) == 2) {
		/* rows of 257-512 whole 16-byte vectors: two a thread */
		const int nv = D % 8 == 0 ? D / 8 : 0;
		if (nv > 2 * kf_ln::TWO_BLOCK && nv <= kf_ln::TWO_NV * kf_ln::TWO_BLOCK &&
		    (((uintptr_t)x | (uintptr_t)y | (uintptr_t)w | (uintptr_t)b) & 15u) == 0) {
			grid = dim3((unsigned)(((int64_t)rows + 1) / 2));
			block = dim3(kf_ln::TWO_BLOCK);
			KF_LN_GO(kf_ln::ln2_kernel);
		} else {
			KF_LN_GO(kf_ln::ln_kernel16);
		}
	} else {
		KF_LN_GO(kf_ln::ln_kernel);
	}
#undef KF_LN_GO
	return cudaGetLastError();
}

/* Block (tx, ty) from kf::row_block: the row in registers at 64 bytes a
 * thread, ty small rows packed per block; grid ceil_div(T, ty); 256 bytes of
 * static shared memory for the two reductions. 16-bit rows of 257-512
 * whole vectors with aligned pointers: two rows a block of 128 threads
 * (ln_go). */
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
	int tx, ty;
	kf::row_block(T, D, dt == KF_DT_F32 ? 4 : 2, 128, &tx, &ty);
	dim3 block(tx, ty), grid((unsigned)((T + ty - 1) / ty));
	if (dt == KF_DT_F32)
		return ln_go<float>(grid, block, s, y, x, w, b, (int)T, (int)D, eps);
	if (dt == KF_DT_F16)
		return ln_go<__half>(grid, block, s, y, x, w, b, (int)T, (int)D, eps);
	return ln_go<__nv_bfloat16>(grid, block, s, y, x, w, b, (int)T, (int)D, eps);
}
