/* activation: elementwise activations and gated (GLU) activations.
 *
 *   silu_and_mul (SwiGLU): y[t,i] = silu(x[t,i]) * x[t,D+i],  silu(a) = a / (1 + exp(-a))
 *   geglu:                 y[t,i] = gelu(x[t,i]) * x[t,D+i]       (erf gelu)
 *   geglu_tanh:            y[t,i] = gelu_tanh(x[t,i]) * x[t,D+i]
 *   gelu:                  y[t,i] = 0.5 x (1 + erf(x / sqrt(2)))
 *   gelu_tanh:             y[t,i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 *
 * Shapes: gated: x (T, 2D), y (T, D) (the first half is activated, the
 * second multiplies, as vLLM's silu_and_mul / gelu_and_mul); plain: x, y
 * (T, D). Row-major, contiguous. Types f32, f16, bf16; fp32 arithmetic.
 * f32: erff and tanhf (a few ulp); f16/bf16: the cheap formulas of
 * kernels/ref/gelu_fast.h (A&S 7.1.28 erf, |error| <= |x| 4e-6; tanh GELU as
 * x / (1 + 2^(k x (1 + c x^2))) with ex2/rcp.approx), errors far below
 * the output's rounding; silu a / (1 + expf(-a)) by div.full.f32 in the
 * flat kernels, a * rcp.approx(1 + exp(-a)) in the row kernels (2 ulp).
 * Preconditions: T >= 0, 1 <= D < 2^31, any D (vector path when D is a
 * multiple of 16/sizeof(type) and the pointers are 16-byte aligned).
 * Launch: silu_and_mul on whole aligned vectors with T*D < 2^30: the flat
 * kernels kf_silu_and_mul_flat_pow2_* (D a power of two) and
 * kf_silu_and_mul_flat_*, args (y, x, T*D, D), block 128, grid
 * ceil_div(T*D/V, 128) (V elements a 16-byte vector), which must cover
 * every vector. Everything else: the row kernels, args (y, x, T, D),
 * block 256, grid (ceil_div(D, 2048), min(ceil_div(T, R), 65535)) with
 * R = 1 for the gated ops and 2 for the plain ones, grid-stride loops over
 * both, so any grid is correct.
 * Cost, e = sizeof(type): gated: bytes = 3*T*D * e; plain: 2*T*D * e.
 * FLOPs per output element: silu_and_mul 5, geglu 9, geglu_tanh 10,
 * gelu 8, gelu_tanh 9 (exp, erf, tanh counted as one each).
 * Technique: 16-byte vectors, all loads issued before any math, no shared
 * memory. silu_and_mul runs Inductor's shape: one vector of y a thread
 * over the whole tensor (both halves' loads in flight), 32-bit offsets, no
 * loop, no branch before the loads, evict-first stores: on an H200
 * (CUPTI kernel time, 16384x4096 bf16) 94.9 us, level with Inductor's
 * kernel on the same buffer, where the row kernel (256 threads along a
 * row, grid-stride loops, 64-bit offsets) ran 95.2-95.4. geglu and
 * geglu_tanh keep the row kernel (flat: 95.23-95.33 against 95.10, and
 * level), the plain ops two rows a thread (one row: GELU 70.0 against
 * 65.9); see kernels/MEASUREMENTS.md. GELU's erf/tanh cost ~30
 * instructions an element, which at 4.2 TB/s of 16-bit data is most of the
 * issue rate; the 16-bit formulas cut that to ~15 (erf) and ~8 (tanh) so
 * the ops stay memory-bound. */
#include "kernels/activation.h"
#include "kernels/kf_cuda.cuh"
#include "kernels/ref/gelu_fast.h"

namespace kf_act
{

using namespace kf;

enum act { SILU = 0, GELU = 1, GELU_TANH = 2 };

/* FAST (f16/bf16 outputs): the formulas of kernels/ref/gelu_fast.h, whose
 * error bounds (|gelu_fast - gelu| <= |x| 4e-6 for erf; ~3e-5 relative for
 * tanh) are far below a 16-bit output's rounding and are checked for every
 * f16/bf16 input by tests/unit/check_kernels_ref.c. f32 keeps erff and tanhf
 * (its 1e-5 tolerance is the reason). silu: a * rcp(1 + e^-a) for every
 * dtype (2 ulp instead of IEEE division's long sequence). */
template <int A, bool FAST> __device__ __forceinline__ float apply(float a)
{
	if constexpr (A == SILU) {
		return a * rcp_approx(1.f + __expf(-a));
	} else if constexpr (A == GELU) {
		if constexpr (FAST) {
			const float t = fabsf(a);
			float p = fmaf(t, KF_GELU_C6, KF_GELU_C5);
			p = fmaf(t, p, KF_GELU_C4);
			p = fmaf(t, p, KF_GELU_C3);
			p = fmaf(t, p, KF_GELU_C2);
			p = fmaf(t, p, KF_GELU_C1);
			p = fmaf(t, p, KF_GELU_C0);
			float r = rcp_approx(p);
			r = r * r;
			r = r * r;
			r = r * r;
			r = r * r; /* q = (1 - erf(|a| / sqrt 2)) / 2 */
			return a * (a >= 0.f ? 1.f - r : r);
		} else {
			return 0.5f * a * (1.f + erff(a * 0.70710678118654752f));
		}
	} else {
		if constexpr (FAST)
			return a * rcp_approx(1.f + ex2_approx(a * fmaf(a * a, KF_GELU_TANH_K3,
									KF_GELU_TANH_K1)));
		else
			return 0.5f * a *
			       (1.f + tanhf(0.79788456080286536f * (a + 0.044715f * a * a * a)));
	}
}

/* Rows a thread per iteration: 2 for the plain activations (1 and 4 were
 * slower on an H200), 1 for the gated ones, which load two vectors a row
 * anyway. CUPTI kernel time on an H200: silu_and_mul 16384x4096 bf16
 * 95.2-95.4 us with one row against 95.5-95.7 with two, geglu 95.0-95.1
 * against 95.6-95.8; one row for GELU: 70.0 against 65.9 (see
 * kernels/MEASUREMENTS.md). */
template <bool GATED> constexpr int rows_per_thread()
{
	return GATED ? 1 : 2;
}

template <typename T, int A, bool GATED, int W, int ROWS = rows_per_thread<GATED>()>
__device__ __forceinline__ void run(T *y, const T *x, int64_t rows, int D)
{
	const int n = D / W;
	const int64_t xs = GATED ? 2 * (int64_t)D : D; /* x row stride */
	for (int64_t r0 = (int64_t)blockIdx.y * ROWS; r0 < rows; r0 += (int64_t)gridDim.y * ROWS) {
		for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < n;
		     c += gridDim.x * blockDim.x) {
			chunk<T, W> a[ROWS], b[ROWS];
#pragma unroll
			for (int u = 0; u < ROWS; u++)
				if (r0 + u < rows) {
					const T *xr = x + (r0 + u) * xs;
					a[u] = ld_stream<T, W>(xr, c);
					if constexpr (GATED)
						b[u] = ld_stream<T, W>(xr + D, c);
				}
#pragma unroll
			for (int u = 0; u < ROWS; u++)
				if (r0 + u < rows) {
					float f[W];
					unpack<T, W>(a[u], f);
#pragma unroll
					for (int j = 0; j < W; j++)
						f[j] = apply<A, (sizeof(T) == 2)>(f[j]);
					if constexpr (GATED) {
						float g[W];
						unpack<T, W>(b[u], g);
#pragma unroll
						for (int j = 0; j < W; j++)
							f[j] *= g[j];
					}
					st_stream<T, W>(y + (r0 + u) * (int64_t)D, c,
							pack<T, W>(f));
				}
		}
	}
}

/* silu for the flat kernel: a / (1 + e^-a) with the accurate expf and
 * div.full.f32 (2 ulp), the formula of Inductor's kernel. In the flat
 * kernel it measured 0.03-0.17 us faster than the rcp.approx form
 * (16384x4096 bf16 on an H200); in the row kernel 3.5 us slower, so that
 * one keeps apply<SILU>. */
__device__ __forceinline__ float silu_div(float a)
{
	float r;
	asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(1.f + expf(-a)));
	return r;
}

/* silu_and_mul as a flat list of the n = T*D elements of y, V (a 16-byte
 * vector) a thread, no loop, 32-bit offsets, both halves' loads issued
 * before any math: Inductor's launch and index arithmetic. a's offset is
 * e + row*D: e & -D where D is a power of two (POW2), else a division.
 * What the kernel spends beyond the memory traffic is the instructions
 * before its loads: the row by a uniform branch and a shift instead of
 * e & -D measured 0.16 us slower (the same build form, on an H200).
 * Stores are evict-first (y is not read again): 0.07-0.12 us faster (GELU's
 * row kernel was 0.3 us slower with them, so only here). Preconditions: D % V == 0, x and y 16-byte
 * aligned, n < 2^30 (x's offsets stay below 2^31), block FLAT_BLOCK, a
 * grid of at least n/V threads. */
constexpr int FLAT_BLOCK = 128;

template <typename T, bool POW2>
__device__ __forceinline__ void silu_flat(T *y, const T *x, int n, int D)
{
	constexpr int V = vec_width<T>::value;
	const int e = (int)(blockIdx.x * FLAT_BLOCK + threadIdx.x) * V;
	if (e >= n)
		return;
	const int ai = POW2 ? e + (e & -D) : e + (int)((unsigned)e / (unsigned)D) * D;
	const chunk<T, V> a = ld_stream<T, V>(x + ai, 0), b = ld_stream<T, V>(x + ai + D, 0);
	float f[V], g[V];
	unpack<T, V>(a, f);
	unpack<T, V>(b, g);
#pragma unroll
	for (int j = 0; j < V; j++)
		f[j] = silu_div(f[j]) * g[j];
	__stcs(reinterpret_cast<uint4 *>(y + e), pack<T, V>(f).raw);
}

template <typename T, int A, bool GATED, int ROWS = rows_per_thread<GATED>()>
__device__ __forceinline__ void body(T *y, const T *x, int rows, int D)
{
	constexpr int V = vec_width<T>::value;
	if (D % V == 0 && aligned16(x) && aligned16(y))
		run<T, A, GATED, V, ROWS>(y, x, rows, D);
	else
		run<T, A, GATED, 1, ROWS>(y, x, rows, D);
}

} /* namespace kf_act */

#define KF_ACT_KERNEL(NAME, SUF, T, A, GATED)                        \
	extern "C" __global__ void __launch_bounds__(256)            \
		kf_##NAME##_##SUF(T *y, const T *x, int rows, int D) \
	{                                                            \
		kf_act::body<T, kf_act::A, GATED>(y, x, rows, D);    \
	}
#define KF_ACT_FLAT_KERNEL(NAME, SUF, T, POW2)                                 \
	extern "C" __global__ void __launch_bounds__(kf_act::FLAT_BLOCK)       \
		kf_silu_and_mul_##NAME##_##SUF(T *y, const T *x, int n, int D) \
	{                                                                      \
		kf_act::silu_flat<T, POW2>(y, x, n, D);                        \
	}
#define KF_ACT_KERNELS(SUF, T)                             \
	KF_ACT_FLAT_KERNEL(flat, SUF, T, false)            \
	KF_ACT_FLAT_KERNEL(flat_pow2, SUF, T, true)        \
	KF_ACT_KERNEL(silu_and_mul, SUF, T, SILU, true)    \
	KF_ACT_KERNEL(geglu, SUF, T, GELU, true)           \
	KF_ACT_KERNEL(geglu_tanh, SUF, T, GELU_TANH, true) \
	KF_ACT_KERNEL(gelu, SUF, T, GELU, false)           \
	KF_ACT_KERNEL(gelu_tanh, SUF, T, GELU_TANH, false)

KF_ACT_KERNELS(f32, float)
KF_ACT_KERNELS(f16, __half)
KF_ACT_KERNELS(bf16, __nv_bfloat16)

/* silu_and_mul on whole 16-byte vectors (D % V == 0, x and y aligned) with
 * T*D < 2^30: the flat kernels (_flat_pow2 where D is a power of two,
 * _flat otherwise), args (y, x, T*D, D), block 128, grid
 * ceil_div(T*D/V, 128). Otherwise args (y, x, T, D), block 256 along the
 * row; grid.x = ceil_div(D, 2048) covers a bf16/f16 row with one vector
 * per thread (f32 loops twice), grid.y = T rows (gated) or ceil_div(T, 2)
 * row pairs (plain), capped at 65535, the rest by the grid-stride loop.
 * No shared memory. */
extern "C" cudaError_t activation_launch(enum kf_act_op op, enum kf_dtype dt, void *y,
					 const void *x, int64_t T, int64_t D, cudaStream_t s)
{
	if (dt != KF_DT_F32 && dt != KF_DT_F16 && dt != KF_DT_BF16)
		return cudaErrorInvalidValue;
	if ((unsigned)op >= KF_ACT_COUNT || T < 0 || T > INT32_MAX || D < 1 || D > INT32_MAX / 2)
		return cudaErrorInvalidValue;
	if (T == 0)
		return cudaSuccess;
	if (!y || !x)
		return cudaErrorInvalidValue;
	const bool gated =
		op == KF_ACT_SILU_AND_MUL || op == KF_ACT_GEGLU || op == KF_ACT_GEGLU_TANH;
	const int64_t V = dt == KF_DT_F32 ? 4 : 8;
	const bool flat = op == KF_ACT_SILU_AND_MUL && D % V == 0 && T * D < ((int64_t)1 << 30) &&
			  (((uintptr_t)y | (uintptr_t)x) & 15u) == 0;
	const int rpt = gated ? kf_act::rows_per_thread<true>() : kf_act::rows_per_thread<false>();
	const int64_t gy = (T + rpt - 1) / rpt;
	dim3 block(256), grid((unsigned)((D + 2047) / 2048), (unsigned)(gy > 65535 ? 65535 : gy));
	if (flat) {
		block = dim3(kf_act::FLAT_BLOCK);
		grid = dim3((unsigned)((T * D / V + kf_act::FLAT_BLOCK - 1) / kf_act::FLAT_BLOCK));
	}
	const bool pow2 = (D & (D - 1)) == 0;
	const int n = (int)(flat ? T * D : T), d = (int)D; /* elements, or rows */
#define KF_ACT_GO(SUF, TY)                                              \
	do {                                                            \
		void (*k)(TY *, const TY *, int, int);                  \
		switch (op) {                                           \
		case KF_ACT_SILU_AND_MUL:                               \
			k = !flat  ? kf_silu_and_mul_##SUF              \
			    : pow2 ? kf_silu_and_mul_flat_pow2_##SUF    \
				   : kf_silu_and_mul_flat_##SUF;        \
			break;                                          \
		case KF_ACT_GEGLU: k = kf_geglu_##SUF; break;           \
		case KF_ACT_GEGLU_TANH: k = kf_geglu_tanh_##SUF; break; \
		case KF_ACT_GELU: k = kf_gelu_##SUF; break;             \
		default: k = kf_gelu_tanh_##SUF; break;                 \
		}                                                       \
		k<<<grid, block, 0, s>>>((TY *)y, (const TY *)x, n, d); \
	} while (0)
	if (dt == KF_DT_F32)
		KF_ACT_GO(f32, float);
	else if (dt == KF_DT_F16)
		KF_ACT_GO(f16, __half);
	else
		KF_ACT_GO(bf16, __nv_bfloat16);
#undef KF_ACT_GO
	return cudaGetLastError();
}
