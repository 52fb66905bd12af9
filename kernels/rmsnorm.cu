/* rmsnorm: root-mean-square normalization over the last dimension, with and
 * without a weight, and the fused residual add + rmsnorm.
 *
 *   rmsnorm:          y[t,i] = x[t,i] * rsqrt(mean_i(x[t,:]^2) + eps) * w[i]
 *   rmsnorm_noweight: the same without w
 *   add_rmsnorm:      r[t,i] = x[t,i] + res[t,i];  y = rmsnorm(r, w)
 *
 * Shapes: x, res, y, r (T, D) row-major, contiguous; w (D). Types f32, f16,
 * bf16 (all tensors one type); eps f32; arithmetic in fp32. add_rmsnorm
 * stores r rounded to the type and normalizes that stored r (as vLLM's
 * fused_add_rms_norm does), so y is exactly rmsnorm(r, w) of the r it wrote.
 * Preconditions: T >= 0, D >= 1, both < 2^31; any D (16-byte vectors when D
 * is a multiple of 16/sizeof(type) and the pointers are 16-byte aligned,
 * scalar otherwise). Launch (rms_launch): block (tx, ty) from
 * kf::row_block, grid ceil_div(T, ty), any grid/block of that form being
 * correct; rows of at most 32 whole vectors (rms_short_group: bf16/f16
 * D <= 256, f32 D <= 128) run kf_rmsnorm[_noweight]_short_* instead, block
 * (g, 256 / g) with g = D / V rounded up to a power of two, grid
 * ceil_div(T, 256 / g * SHORT_ROWS); other few 16-bit rows (rms_few_rows)
 * kf_rmsnorm[_noweight]_rows_*, one row a block of ceil_div(D / 16, 32) *
 * 32 threads, grid T.
 * Cost (bytes moved, FLOPs), e = sizeof(type):
 *   rmsnorm:          bytes = (2*T*D + D) * e,  flops = 4*T*D
 *   rmsnorm_noweight: bytes = 2*T*D * e,        flops = 3*T*D
 *   add_rmsnorm:      bytes = (4*T*D + D) * e,  flops = 5*T*D
 * Technique: one row per group of tx threads, the row held in registers as
 * 16-byte vectors (one read and one write of HBM), every load (x and the
 * weight) issued before the first use, warp-shuffle reduction plus one
 * shared-memory step; few rows get more threads each (kf::row_block), and
 * few 16-bit rows a kernel of their own, each thread holding 4 elements
 * of each quarter of the row, so that every row is resident at once;
 * short rows (a model's per-head q/k norms) one vector a thread, a
 * sub-warp group a row and SHORT_ROWS rows a thread, so that every lane
 * loads and each holds several loads in flight.
 * Loads that must precede stores are issued in groups before them: the
 * compiler keeps a load behind any earlier store that may alias it. The
 * mean square divides by D with __fdividef (2 ulp; IEEE division is a
 * longer dependent sequence on the latency-bound small shapes). */
#include "kernels/kf_cuda.cuh"
#include "kernels/rmsnorm.h"

namespace kf_rms
{

using namespace kf;

template <typename T, bool HAS_W, bool ADD> struct row_op {
	T *y;
	T *r; /* ADD: the sum out */
	const T *x;
	const T *res; /* ADD: the residual in */
	const T *w;
	int D;
	float eps;
	bool active;
	float *red;

	/* The row's chunk i: x, or for ADD the sum x + res rounded to T (and
	 * written to r when WRITE_R), as add_rmsnorm normalizes the stored sum.
	 * STREAM: the single-use loads (kf_cuda.cuh hint mode) for the
	 * single-pass path; the two-pass path uses plain loads so its second
	 * read can hit L2. */
	template <int W, bool STREAM, bool WRITE_R>
	__device__ __forceinline__ chunk<T, W> load(int i) const
	{
		chunk<T, W> c = STREAM ? ld_stream<T, W>(x, i) : ld_plain<T, W>(x, i);
		if constexpr (ADD) {
			float f[W], g[W];
			unpack<T, W>(c, f);
			unpack<T, W>(STREAM ? ld_stream<T, W>(res, i) : ld_plain<T, W>(res, i), g);
#pragma unroll
			for (int j = 0; j < W; j++)
				f[j] += g[j];
			c = pack<T, W>(f);
			if (WRITE_R)
				st_row<T, W>(r, i, c);
		}
		return c;
	}

	template <int W> __device__ __forceinline__ static float sumsq(const chunk<T, W> &c)
	{
		float f[W], s = 0.f;
		unpack<T, W>(c, f);
#pragma unroll
		for (int j = 0; j < W; j++)
			s += f[j] * f[j];
		return s;
	}

	/* wc: the weight chunk when preloaded, else NULL (loaded here). */
	template <int W>
	__device__ __forceinline__ void emit(int i, const chunk<T, W> &c, float inv,
					     const chunk<T, W> *wc) const
	{
		float f[W];
		unpack<T, W>(c, f);
		if constexpr (HAS_W) {
			float g[W];
			unpack<T, W>(wc ? *wc : ld_keep<T, W>(w, i), g);
#pragma unroll
			for (int j = 0; j < W; j++)
				f[j] = f[j] * inv * g[j];
		} else {
#pragma unroll
			for (int j = 0; j < W; j++)
				f[j] = f[j] * inv;
		}
		st_row<T, W>(y, i, pack<T, W>(f));
	}

	template <int W, int NV> __device__ __forceinline__ void run()
	{
		const int n = active ? D / W : 0;
		const int tx = blockDim.x, t = threadIdx.x;
		float ss = 0.f;
		if constexpr (NV > 0) {
			/* All loads first: NV vectors in flight per thread, held
			 * packed (4 registers per 16 bytes). The weight is loaded
			 * with them (NV <= 4, to bound registers) so it is not a
			 * second dependent memory round trip after the reduction,
			 * which is what small, latency-bound inputs pay for.
			 * add_rmsnorm issues the x and res loads of up to 4 chunks
			 * before the first store of r: the compiler cannot move a
			 * load above a store that may alias it, so storing r chunk
			 * by chunk made the load phase NV dependent round trips.
			 * Its weight is preloaded too (20 bytes of spill at 64
			 * registers, and still 1.4% faster than loading it after
			 * the reduction: 135.3 against 137.1 us on an H200). */
			constexpr bool PRE = HAS_W && NV <= 4;
			constexpr int G = NV < 4 ? NV : 4; /* chunks a group: loads, then stores */
			chunk<T, W> c[NV], wc[PRE ? NV : 1], rc[ADD ? G : 1];
#pragma unroll
			for (int g = 0; g < NV; g += G) {
#pragma unroll
				for (int k = g; k < g + G; k++)
					if (t + k * tx < n) {
						c[k] = ld_row<T, W>(x, t + k * tx);
						if constexpr (ADD)
							rc[k - g] = ld_row<T, W>(res, t + k * tx);
						if constexpr (PRE)
							wc[k] = ld_keep<T, W>(w, t + k * tx);
					}
				if constexpr (ADD) {
#pragma unroll
					for (int k = g; k < g + G; k++)
						if (t + k * tx < n) {
							float f[W], h[W];
							unpack<T, W>(c[k], f);
							unpack<T, W>(rc[k - g], h);
#pragma unroll
							for (int j = 0; j < W; j++)
								f[j] += h[j];
							c[k] = pack<T, W>(f);
							st_row<T, W>(r, t + k * tx, c[k]);
						}
				}
			}
#pragma unroll
			for (int k = 0; k < NV; k++)
				if (t + k * tx < n)
					ss += sumsq<W>(c[k]);
			ss = row_reduce<false, false>(ss, red); /* the only one */
			const float inv = rsqrtf(__fdividef(ss, (float)D) + eps);
			/* A weight not preloaded is loaded in groups of up to 4
			 * chunks before their stores: loaded chunk by chunk, each
			 * load waited behind the previous chunk's store (possible
			 * aliasing), NV dependent L1/L2 round trips (f32, NV = 8,
			 * where torch.compile was 4% faster). */
#pragma unroll
			for (int g = 0; g < NV; g += G) {
				constexpr bool LATE = HAS_W && !PRE;
				chunk<T, W> lw[LATE ? G : 1];
				if constexpr (LATE) {
#pragma unroll
					for (int k = g; k < g + G; k++)
						if (t + k * tx < n)
							lw[k - g] = ld_keep<T, W>(w, t + k * tx);
				}
#pragma unroll
				for (int k = g; k < g + G; k++)
					if (t + k * tx < n)
						emit<W>(t + k * tx, c[k], inv,
							PRE    ? &wc[PRE ? k : 0]
							: LATE ? &lw[LATE ? k - g : 0]
							       : nullptr);
			}
		} else {
			/* Rows too wide for registers, or not a whole number of
			 * vectors: two passes, the second mostly from L2. */
			for (int i = t; i < n; i += tx)
				ss += sumsq<W>(load<W, false, true>(i));
			ss = row_reduce<false, false>(ss, red); /* the only one */
			const float inv = rsqrtf(__fdividef(ss, (float)D) + eps);
			for (int i = t; i < n; i += tx)
				emit<W>(i, load<W, false, false>(i), inv, nullptr);
		}
	}
};

template <typename T, bool HAS_W, bool ADD>
__device__ __forceinline__ void body(T *y, T *r, const T *x, const T *res, const T *w, int rows,
				     int D, float eps)
{
	__shared__ float red[32];
	const int64_t row = (int64_t)blockIdx.x * blockDim.y + threadIdx.y;
	const int64_t off = row * (int64_t)D;
	constexpr int V = vec_width<T>::value;
	const bool vec_ok = D % V == 0 && aligned16(x) && aligned16(y) &&
			    (!HAS_W || aligned16(w)) && (!ADD || (aligned16(r) && aligned16(res)));
	row_op<T, HAS_W, ADD> op{y + off, ADD ? r + off : nullptr,
				 x + off, ADD ? res + off : nullptr,
				 w,	  D,
				 eps,	  row < rows,
				 red};
	row_dispatch<T>(op, D, vec_ok);
}

/* --- few rows: kf_rmsnorm_rows_* ------------------------------------------ */

/* Four consecutive elements of T: 8 bytes (f16, bf16) or 16 (f32). */
template <typename T> using quad = std::conditional_t<sizeof(T) == 2, uint2, uint4>;

/* f32 quads are kf_cuda.cuh's 16-byte chunks; 16-bit ones two packed pairs. */
template <typename T> __device__ __forceinline__ void quad_unpack(const quad<T> &q, float (&f)[4])
{
	if constexpr (sizeof(T) == 4) {
		unpack<T, 4>(chunk<T, 4>{q}, f);
	} else {
		const uint32_t u[2] = {q.x, q.y};
#pragma unroll
		for (int k = 0; k < 2; k++) {
			const float2 g = pair_unpack<T>(u[k]);
			f[2 * k] = g.x;
			f[2 * k + 1] = g.y;
		}
	}
}

template <typename T> __device__ __forceinline__ quad<T> quad_pack(const float (&f)[4])
{
	if constexpr (sizeof(T) == 4)
		return pack<T, 4>(f).raw;
	else
		return make_uint2(pair_pack<T>(f[0], f[1]), pair_pack<T>(f[2], f[3]));
}

/* p: 8-byte (16-bit T) or 16-byte (f32) aligned. Loaded with L1::evict_last
 * and an L2 evict_last policy, as Inductor loads these rows (its SASS on an
 * H200): f32 through kf::ld_row, which loads so; volatile keeps program
 * order. */
template <typename T> __device__ __forceinline__ quad<T> quad_ld(const T *p)
{
	if constexpr (sizeof(T) == 4) {
		return ld_row<T, 4>(p, 0).raw;
	} else {
		quad<T> q;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
		asm volatile("ld.global.L1::evict_last.L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;"
			     : "=r"(q.x), "=r"(q.y)
			     : "l"(p), "l"(evict_last_policy()));
#else
		q = *reinterpret_cast<const quad<T> *>(p);
#endif
		return q;
	}
}

/* One row a block of ceil_div(D / 16, 32) * 32 threads (blockDim.y == 1):
 * thread t holds 4 elements of each quarter of the row, x[kD/4 + 4t, kD/4 +
 * 4t + 4) for k = 0..3, all loaded with the weight before the reduction, so
 * the kernel is one memory round trip, one block-wide sum and the stores.
 * Quarters rather than Inductor's halves (a 4096 row in 256 threads, 8
 * warps to sum over instead of 16; 48 registers).
 * Preconditions: D % 16 == 0, D <= 8192, x, y, w 16-byte aligned,
 * gridDim.x >= rows. */
template <typename T, bool HAS_W>
__device__ __forceinline__ void rows_body(T *y, const T *x, const T *w, int rows, int D, float eps)
{
	constexpr int P = 4; /* parts of the row a thread holds a quad of */
	__shared__ float red[32];
	if ((int)blockIdx.x >= rows)
		return; /* the whole block: no barrier is left waiting */
	const int h = D / P, t = 4 * (int)threadIdx.x;
	const bool on = t < h;
	const T *xr = x + (int64_t)blockIdx.x * D;
	T *yr = y + (int64_t)blockIdx.x * D;
	quad<T> a[P] = {}, wa[P] = {};
	if (on) {
#pragma unroll
		for (int k = 0; k < P; k++)
			a[k] = quad_ld<T>(xr + k * h + t);
		if constexpr (HAS_W)
#pragma unroll
			for (int k = 0; k < P; k++)
				wa[k] = quad_ld<T>(w + k * h + t);
	}
	float f[P][4], ss = 0.f;
#pragma unroll
	for (int k = 0; k < P; k++) {
		quad_unpack<T>(a[k], f[k]);
#pragma unroll
		for (int j = 0; j < 4; j++)
			ss += f[k][j] * f[k][j];
	}
	ss = row_reduce<false, false>(ss, red);
	const float inv = rsqrtf(__fdividef(ss, (float)D) + eps);
	if (!on)
		return;
#pragma unroll
	for (int k = 0; k < P; k++) {
		float g[4];
		if constexpr (HAS_W)
			quad_unpack<T>(wa[k], g);
#pragma unroll
		for (int j = 0; j < 4; j++)
			f[k][j] *= HAS_W ? inv * g[j] : inv;
		*reinterpret_cast<quad<T> *>(yr + k * h + t) = quad_pack<T>(f[k]);
	}
}

/* --- short rows: kf_rmsnorm_short_* -------------------------------------- */

/* Rows a thread of the short-row kernels holds, their loads all in flight
 * before the first use. 2: 40 registers (ptxas, bf16 with the weight), 6
 * blocks of 256 an SM, 48 KB of loads in flight an SM, about 1.5x what a
 * 4.3 TB/s copy needs at 1 us of latency over 132 SMs; 4 rows took 63
 * registers (4 blocks, 64 KB). */
constexpr int SHORT_ROWS = 2;

/* Rows of at most 32 whole 16-byte vectors (bf16/f16 D <= 256, f32 D <=
 * 128), as a model's per-head q/k norms have (head_dim 64-256): a group of
 * blockDim.x = G threads a row (G the power of two >= D / V, dividing the
 * warp), one vector each, blockDim.y groups a block, and every thread holds
 * the vectors of SHORT_ROWS rows blockDim.y apart, all loaded (and its one
 * weight vector, shared by its rows) before the first use. The reductions
 * are G-lane shuffles, the SHORT_ROWS of a thread independent of each
 * other. Block b covers rows [b * R, (b + 1) * R), R = SHORT_ROWS *
 * blockDim.y. Sums are formed as the row kernel's run<V, 1> forms them
 * (one vector's squares in order, then a butterfly over the lanes, idle
 * lanes adding exact zeros), so y is bit-identical to it.
 * Preconditions: D % V == 0, D / V <= blockDim.x, blockDim.x a power of two
 * <= 32, x, y, w 16-byte aligned, gridDim.x * R >= rows. */
template <typename T, bool HAS_W>
__device__ __forceinline__ void short_body(T *y, const T *x, const T *w, int rows, int D, float eps)
{
	constexpr int V = vec_width<T>::value;
	const int g = (int)blockDim.x, lane = (int)threadIdx.x;
	const unsigned ty = blockDim.y;
	const bool on = lane < D / V;
	/* unsigned: row0 + k * ty < rows + SHORT_ROWS * ty <= 2^31 + 1024 */
	const unsigned row0 = blockIdx.x * SHORT_ROWS * ty + threadIdx.y;
	/* element offset of this thread's vector in row row0, and between its
	 * rows: 64-bit, T * D may pass 2^31 */
	const int64_t off = (int64_t)row0 * D + lane * V, step = (int64_t)ty * D;
	chunk<T, V> c[SHORT_ROWS], wc;
	wc.raw = make_uint4(0u, 0u, 0u, 0u);
	if (HAS_W && on)
		wc = ld_keep<T, V>(w, lane);
#pragma unroll
	for (int k = 0; k < SHORT_ROWS; k++) {
		c[k].raw = make_uint4(0u, 0u, 0u, 0u);
		if (on && row0 + k * ty < (unsigned)rows)
			c[k] = ld_row<T, V>(x + off + k * step, 0);
	}
	float ss[SHORT_ROWS];
#pragma unroll
	for (int k = 0; k < SHORT_ROWS; k++)
		ss[k] = row_op<T, HAS_W, false>::template sumsq<V>(c[k]);
#pragma unroll
	for (int k = 0; k < SHORT_ROWS; k++)
		ss[k] = group_sum(ss[k], g);
	float wf[V];
	if constexpr (HAS_W)
		unpack<T, V>(wc, wf);
#pragma unroll
	for (int k = 0; k < SHORT_ROWS; k++) {
		if (!on || row0 + k * ty >= (unsigned)rows)
			continue;
		const float inv = rsqrtf(__fdividef(ss[k], (float)D) + eps);
		float f[V];
		unpack<T, V>(c[k], f);
		if constexpr (HAS_W) {
#pragma unroll
			for (int j = 0; j < V; j++)
				f[j] = f[j] * inv * wf[j];
		} else {
#pragma unroll
			for (int j = 0; j < V; j++)
				f[j] = f[j] * inv;
		}
		st_row<T, V>(y + off + k * step, 0, pack<T, V>(f));
	}
}

} /* namespace kf_rms */

/* The rows kernels at (1024, 1), the configuration that was measured
 * (kernels/MEASUREMENTS.md): ptxas gives the bf16 kernel 48 registers
 * there and 54 under (1024). */
#define KF_RMS_KERNELS(SUF, T)                                                                   \
	extern "C" __global__ void __launch_bounds__(1024)                                       \
		kf_rmsnorm_##SUF(T *y, const T *x, const T *w, int rows, int D, float eps)       \
	{                                                                                        \
		kf_rms::body<T, true, false>(y, nullptr, x, nullptr, w, rows, D, eps);           \
	}                                                                                        \
	extern "C" __global__ void __launch_bounds__(1024)                                       \
		kf_rmsnorm_noweight_##SUF(T *y, const T *x, int rows, int D, float eps)          \
	{                                                                                        \
		kf_rms::body<T, false, false>(y, nullptr, x, nullptr, nullptr, rows, D, eps);    \
	}                                                                                        \
	extern "C" __global__ void __launch_bounds__(1024) kf_add_rmsnorm_##SUF(                 \
		T *y, T *r, const T *x, const T *res, const T *w, int rows, int D, float eps)    \
	{                                                                                        \
		kf_rms::body<T, true, true>(y, r, x, res, w, rows, D, eps);                      \
	}                                                                                        \
	extern "C" __global__ void __launch_bounds__(1024, 1)                                    \
		kf_rmsnorm_rows_##SUF(T *y, const T *x, const T *w, int rows, int D, float eps)  \
	{                                                                                        \
		kf_rms::rows_body<T, true>(y, x, w, rows, D, eps);                               \
	}                                                                                        \
	extern "C" __global__ void __launch_bounds__(1024, 1)                                    \
		kf_rmsnorm_noweight_rows_##SUF(T *y, const T *x, int rows, int D, float eps)     \
	{                                                                                        \
		kf_rms::rows_body<T, false>(y, x, nullptr, rows, D, eps);                        \
	}                                                                                        \
	extern "C" __global__ void __launch_bounds__(256)                                        \
		kf_rmsnorm_short_##SUF(T *y, const T *x, const T *w, int rows, int D, float eps) \
	{                                                                                        \
		kf_rms::short_body<T, true>(y, x, w, rows, D, eps);                              \
	}                                                                                        \
	extern "C" __global__ void __launch_bounds__(256)                                        \
		kf_rmsnorm_noweight_short_##SUF(T *y, const T *x, int rows, int D, float eps)    \
	{                                                                                        \
		kf_rms::short_body<T, false>(y, x, nullptr, rows, D, eps);                       \
	}

KF_RMS_KERNELS(f32, float)
KF_RMS_KERNELS(f16, __half)
KF_RMS_KERNELS(bf16, __nv_bfloat16)

/* --- launch helpers ------------------------------------------------------ */

static cudaError_t rms_check(enum kf_dtype dt, const void *y, const void *x, int64_t T, int64_t D,
			     float eps)
{
	if (dt != KF_DT_F32 && dt != KF_DT_F16 && dt != KF_DT_BF16)
		return cudaErrorInvalidValue;
	if (T < 0 || T > INT32_MAX || D < 1 || D > INT32_MAX || !(eps >= 0.f))
		return cudaErrorInvalidValue;
	if (T > 0 && (!y || !x))
		return cudaErrorInvalidValue;
	return cudaSuccess;
}

/* kf_rmsnorm_rows_* runs 16-bit rmsnorm (with or without weight) when all
 * rows are resident at once on an H200: at 48 registers an SM holds at
 * least 1024 of the D/16 threads a row, so T * D <= 132 * 1024 * 16 (the
 * same bound as halves of the row, D/8 threads at 32 registers, 2048 an
 * SM); and D % 16 == 0, D <= 8192, the pointers 16-byte aligned. Kernel
 * time (H200, CUPTI, each step against the one before it), row kernel ->
 * halves -> quarters: 1x128x4096 1.95-2.05 -> 1.92-1.95 -> 1.89-1.92;
 * 1x512x4096 3.14-3.23 -> 3.10-3.14 -> 3.01-3.07; 1x1024x2048 3.17-3.26
 * -> 3.07-3.10 -> 3.01-3.04. At 1x1024x4096 (two waves) the halves ran
 * 5.1 against the row kernel's 4.9, hence the bound. The op templates
 * (kernels/ops.c) pick the same kernel with the same test. */
static bool rms_few_rows(enum kf_dtype dt, const void *y, const void *x, const void *w, int64_t T,
			 int64_t D)
{
	return dt != KF_DT_F32 && D % 16 == 0 && D <= 8192 && T * D <= 132 * 1024 * 16 &&
	       (((uintptr_t)y | (uintptr_t)x | (uintptr_t)w) & 15u) == 0;
}

/* kf_rmsnorm[_noweight]_short_* runs rows of at most 32 whole 16-byte
 * vectors with 16-byte aligned pointers (bf16/f16 D <= 256, f32 D <= 128),
 * at every T. The row kernel gives such a row a warp (tx = 32, or 4x that
 * for few rows) of which only D / V lanes load, one vector each: at D = 64
 * bf16 a quarter of the warp, 8 KB in flight an SM, 0.61 ms for the DiT
 * block's 8 q/k norms of 262144 x 64 (H200) against Inductor's 0.12. The
 * few-row kernel is no better there (one row a 32-thread block, 4 threads
 * loading). Returns the threads a row, a power of two, else 0. */
static int rms_short_group(enum kf_dtype dt, const void *y, const void *x, const void *w, int64_t D)
{
	const int64_t v = dt == KF_DT_F32 ? 4 : 8;
	if (D % v != 0 || D / v > 32 || (((uintptr_t)y | (uintptr_t)x | (uintptr_t)w) & 15u) != 0)
		return 0;
	int g = 1;
	while (g < D / v)
		g *= 2;
	return g;
}

/* The short-row kernels: block (g, 256 / g), g from rms_short_group, and
 * SHORT_ROWS rows a thread, grid ceil_div(T, 256 / g * SHORT_ROWS). */
static cudaError_t rms_short_launch(enum kf_dtype dt, void *y, const void *x, const void *w,
				    int64_t T, int64_t D, float eps, int g, cudaStream_t s)
{
	const dim3 block((unsigned)g, (unsigned)(256 / g));
	const int64_t per_block = (int64_t)block.y * kf_rms::SHORT_ROWS;
	const unsigned grid = (unsigned)((T + per_block - 1) / per_block);
	const int rows = (int)T, d = (int)D;
#define KF_RMS_SHORT(SUF, TY)                                                         \
	do {                                                                          \
		if (w)                                                                \
			kf_rmsnorm_short_##SUF<<<grid, block, 0, s>>>(                \
				(TY *)y, (const TY *)x, (const TY *)w, rows, d, eps); \
		else                                                                  \
			kf_rmsnorm_noweight_short_##SUF<<<grid, block, 0, s>>>(       \
				(TY *)y, (const TY *)x, rows, d, eps);                \
	} while (0)
	if (dt == KF_DT_F32)
		KF_RMS_SHORT(f32, float);
	else if (dt == KF_DT_F16)
		KF_RMS_SHORT(f16, __half);
	else
		KF_RMS_SHORT(bf16, __nv_bfloat16);
#undef KF_RMS_SHORT
	return cudaGetLastError();
}

/* One launch for every variant: block (tx, ty) from kf::row_block (the whole
 * row in registers at 64 bytes a thread), one row group per block, grid
 * ceil_div(T, ty); or, for short rows without the residual
 * (rms_short_group), the short-row kernels; or, for few 16-bit rows
 * (rms_few_rows), one row a block of ceil_div(D / 16, 32) * 32 threads.
 * Static shared memory only (128 bytes). */
static cudaError_t rms_launch(enum kf_dtype dt, void *y, void *r, const void *x, const void *res,
			      const void *w, int64_t T, int64_t D, float eps, cudaStream_t s)
{
	cudaError_t e = rms_check(dt, y, x, T, D, eps);
	if (e != cudaSuccess || T == 0)
		return e;
	if (r && (!res || !w))
		return cudaErrorInvalidValue;
	const int g = r ? 0 : rms_short_group(dt, y, x, w, D);
	if (g > 0)
		return rms_short_launch(dt, y, x, w, T, D, eps, g, s);
	if (!r && rms_few_rows(dt, y, x, w, T, D)) {
		const unsigned grid = (unsigned)T, block = (unsigned)((D + 511) / 512 * 32);
		const int rows = (int)T, d = (int)D;
#define KF_RMS_ROWS(SUF, TY)                                                                       \
	do {                                                                                       \
		if (w)                                                                             \
			kf_rmsnorm_rows_##SUF<<<grid, block, 0, s>>>((TY *)y, (const TY *)x,       \
								     (const TY *)w, rows, d, eps); \
		else                                                                               \
			kf_rmsnorm_noweight_rows_##SUF<<<grid, block, 0, s>>>(                     \
				(TY *)y, (const TY *)x, rows, d, eps);                             \
	} while (0)
		if (dt == KF_DT_F16)
			KF_RMS_ROWS(f16, __half);
		else
			KF_RMS_ROWS(bf16, __nv_bfloat16);
#undef KF_RMS_ROWS
		return cudaGetLastError();
	}
	int tx, ty;
	kf::row_block(T, D, dt == KF_DT_F32 ? 4 : 2, 256, &tx, &ty);
	dim3 block(tx, ty), grid((unsigned)((T + ty - 1) / ty));
	const int rows = (int)T, d = (int)D;
#define KF_RMS_GO(SUF, TY)                                                                       \
	do {                                                                                     \
		if (r)                                                                           \
			kf_add_rmsnorm_##SUF<<<grid, block, 0, s>>>(                             \
				(TY *)y, (TY *)r, (const TY *)x, (const TY *)res, (const TY *)w, \
				rows, d, eps);                                                   \
		else if (w)                                                                      \
			kf_rmsnorm_##SUF<<<grid, block, 0, s>>>((TY *)y, (const TY *)x,          \
								(const TY *)w, rows, d, eps);    \
		else                                                                             \
			kf_rmsnorm_noweight_##SUF<<<grid, block, 0, s>>>((TY *)y, (const TY *)x, \
									 rows, d, eps);          \
	} while (0)
	if (dt == KF_DT_F32)
		KF_RMS_GO(f32, float);
	else if (dt == KF_DT_F16)
		KF_RMS_GO(f16, __half);
	else
		KF_RMS_GO(bf16, __nv_bfloat16);
#undef KF_RMS_GO
	return cudaGetLastError();
}

extern "C" cudaError_t rmsnorm_launch(enum kf_dtype dt, void *y, const void *x, const void *w,
				      int64_t T, int64_t D, float eps, cudaStream_t s)
{
	return rms_launch(dt, y, NULL, x, NULL, w, T, D, eps, s);
}

extern "C" cudaError_t add_rmsnorm_launch(enum kf_dtype dt, void *y, void *r, const void *x,
					  const void *res, const void *w, int64_t T, int64_t D,
					  float eps, cudaStream_t s)
{
	if (!r || !res || !w)
		return cudaErrorInvalidValue;
	return rms_launch(dt, y, r, x, res, w, T, D, eps, s);
}
