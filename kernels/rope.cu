/* rope: rotary position embedding, GPT-NeoX and GPT-J layouts.
 *
 *   for each token t, head h, pair k in [0, Dh/2), c = cos[t,k], s = sin[t,k]:
 *   NeoX (rotate halves):   (a, b) = (x[t,h,k], x[t,h,k+Dh/2])
 *   GPT-J (interleaved):    (a, b) = (x[t,h,2k], x[t,h,2k+1])
 *   y at a's place = a*c - b*s,  y at b's place = b*c + a*s
 *
 * Shapes: x, y (T, H, Dh) row-major, contiguous, type f32/f16/bf16; cos, sin
 * (T, Dh/2) f32 (the tables as models compute them, before any rounding).
 * fp32 arithmetic. Preconditions: 0 <= T, H < 2^31; Dh even, 2 <= Dh < 2^31;
 * any such Dh. Vector path when the half (NeoX)
 * or the row (GPT-J) is a whole number of 16-byte vectors and pointers are
 * 16-byte aligned; a scalar pair loop otherwise.
 * Launch: block 256, grid min(ceil_div(T*H*Dh, 4096), 2^31-1), a
 * grid-stride loop over (row, vector) pairs, so any grid is correct.
 * Cost, e = sizeof(type): bytes = 2*T*H*Dh * e + 2*T*(Dh/2) * 4,
 * flops = 3*T*H*Dh (two multiplies and an add per output).
 * Technique: 16-byte vectors of x and y, flat (row, vector) indexing with
 * 32-bit division when the count fits, cos/sin through the read-only
 * cache (every head of a token reuses them). */
#include "kernels/kf_cuda.cuh"
#include "kernels/rope.h"

namespace kf_rope
{

using namespace kf;

/* Loads K consecutive floats of a table (K = 1, 2, 4 or 8), aligned to
 * min(16, 4*K) bytes. */
template <int K> __device__ __forceinline__ void ld_tab(const float *p, float (&f)[K])
{
	if constexpr (K >= 4) {
#pragma unroll
		for (int q = 0; q < K / 4; q++) {
			float4 v = __ldg(reinterpret_cast<const float4 *>(p) + q);
			f[4 * q] = v.x, f[4 * q + 1] = v.y, f[4 * q + 2] = v.z, f[4 * q + 3] = v.w;
		}
	} else if constexpr (K == 2) {
		float2 v = __ldg(reinterpret_cast<const float2 *>(p));
		f[0] = v.x, f[1] = v.y;
	} else {
		f[0] = __ldg(p);
	}
}

/* NEOX: chunk c of a row holds elements [c*W, c*W+W) of the first half and
 * the same of the second half. GPT-J: chunk c holds elements [c*W, c*W+W),
 * pairs [c*W/2, c*W/2 + W/2). For W == 1 (scalar path) a "chunk" is one
 * pair in both layouts. */
template <typename T, bool NEOX, int W>
__device__ __forceinline__ void one(T *y, const T *x, const float *cs, const float *sn, int64_t row,
				    int64_t t, int c, int Dh)
{
	const int half = Dh / 2;
	const T *xr = x + row * Dh;
	T *yr = y + row * Dh;
	const float *cr = cs + t * half, *sr = sn + t * half;
	if constexpr (W == 1) {
		const int ia = NEOX ? c : 2 * c, ib = NEOX ? c + half : 2 * c + 1;
		const float a = to_f(xr[ia]), b = to_f(xr[ib]);
		const float co = __ldg(cr + c), si = __ldg(sr + c);
		yr[ia] = from_f<T>(a * co - b * si);
		yr[ib] = from_f<T>(b * co + a * si);
	} else if constexpr (NEOX) {
		float a[W], b[W], co[W], si[W];
		unpack<T, W>(ld_stream<T, W>(xr, c), a);
		unpack<T, W>(ld_stream<T, W>(xr + half, c), b);
		ld_tab<W>(cr + c * W, co);
		ld_tab<W>(sr + c * W, si);
		float ya[W], yb[W];
#pragma unroll
		for (int j = 0; j < W; j++) {
			ya[j] = a[j] * co[j] - b[j] * si[j];
			yb[j] = b[j] * co[j] + a[j] * si[j];
		}
		st_stream<T, W>(yr, c, pack<T, W>(ya));
		st_stream<T, W>(yr + half, c, pack<T, W>(yb));
	} else {
		float v[W], co[W / 2], si[W / 2];
		unpack<T, W>(ld_stream<T, W>(xr, c), v);
		ld_tab<W / 2>(cr + c * (W / 2), co);
		ld_tab<W / 2>(sr + c * (W / 2), si);
#pragma unroll
		for (int j = 0; j < W / 2; j++) {
			const float a = v[2 * j], b = v[2 * j + 1];
			v[2 * j] = a * co[j] - b * si[j];
			v[2 * j + 1] = b * co[j] + a * si[j];
		}
		st_stream<T, W>(yr, c, pack<T, W>(v));
	}
}

template <typename T, bool NEOX, int W>
__device__ __forceinline__ void run(T *y, const T *x, const float *cs, const float *sn, int T_,
				    int H, int Dh)
{
	const int n = W == 1 ? Dh / 2 : (NEOX ? Dh / 2 / W : Dh / W); /* chunks per row */
	const uint64_t total = (uint64_t)T_ * H * n;
	const uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
	uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (total <= 0xffffffffull) {
		/* 32-bit division is several times cheaper than 64-bit. */
		for (; i < total; i += stride) {
			const uint32_t ii = (uint32_t)i, row = ii / (uint32_t)n;
			one<T, NEOX, W>(y, x, cs, sn, row, row / (uint32_t)H, (int)(ii - row * n),
					Dh);
		}
	} else {
		for (; i < total; i += stride) {
			const uint64_t row = i / n;
			one<T, NEOX, W>(y, x, cs, sn, (int64_t)row, (int64_t)(row / H),
					(int)(i - row * n), Dh);
		}
	}
}

template <typename T, bool NEOX>
__device__ __forceinline__ void body(T *y, const T *x, const float *cs, const float *sn, int T_,
				     int H, int Dh)
{
	constexpr int V = vec_width<T>::value;
	const bool ok = (NEOX ? (Dh / 2) % V == 0 : Dh % V == 0) && aligned16(x) && aligned16(y) &&
			aligned16(cs) && aligned16(sn);
	if (ok)
		run<T, NEOX, V>(y, x, cs, sn, T_, H, Dh);
	else
		run<T, NEOX, 1>(y, x, cs, sn, T_, H, Dh);
}

} /* namespace kf_rope */

#define KF_ROPE_KERNELS(SUF, T)                                                            \
	extern "C" __global__ void __launch_bounds__(256) kf_rope_neox_##SUF(              \
		T *y, const T *x, const float *cs, const float *sn, int T_, int H, int Dh) \
	{                                                                                  \
		kf_rope::body<T, true>(y, x, cs, sn, T_, H, Dh);                           \
	}                                                                                  \
	extern "C" __global__ void __launch_bounds__(256) kf_rope_gptj_##SUF(              \
		T *y, const T *x, const float *cs, const float *sn, int T_, int H, int Dh) \
	{                                                                                  \
		kf_rope::body<T, false>(y, x, cs, sn, T_, H, Dh);                          \
	}

KF_ROPE_KERNELS(f32, float)
KF_ROPE_KERNELS(f16, __half)
KF_ROPE_KERNELS(bf16, __nv_bfloat16)

/* Block 256; grid ceil_div(T*H*Dh, 4096): one bf16 NeoX vector pair (16
 * elements) per thread, a grid-stride loop covers the rest. */
extern "C" cudaError_t rope_launch(int neox, enum kf_dtype dt, void *y, const void *x,
				   const float *cos_t, const float *sin_t, int64_t T, int64_t H,
				   int64_t Dh, cudaStream_t s)
{
	if (dt != KF_DT_F32 && dt != KF_DT_F16 && dt != KF_DT_BF16)
		return cudaErrorInvalidValue;
	if (T < 0 || H < 0 || T > INT32_MAX || H > INT32_MAX || Dh < 2 || Dh % 2 || Dh > INT32_MAX)
		return cudaErrorInvalidValue;
	if (T * H == 0)
		return cudaSuccess;
	if (!y || !x || !cos_t || !sin_t)
		return cudaErrorInvalidValue;
	int64_t g = (T * H * Dh + 4095) / 4096;
	dim3 block(256), grid((unsigned)(g > INT32_MAX ? INT32_MAX : g));
#define KF_ROPE_GO(SUF, TY)                                                                        \
	do {                                                                                       \
		if (neox)                                                                          \
			kf_rope_neox_##SUF<<<grid, block, 0, s>>>((TY *)y, (const TY *)x, cos_t,   \
								  sin_t, (int)T, (int)H, (int)Dh); \
		else                                                                               \
			kf_rope_gptj_##SUF<<<grid, block, 0, s>>>((TY *)y, (const TY *)x, cos_t,   \
								  sin_t, (int)T, (int)H, (int)Dh); \
	} while (0)
	if (dt == KF_DT_F32)
		KF_ROPE_GO(f32, float);
	else if (dt == KF_DT_F16)
		KF_ROPE_GO(f16, __half);
	else
		KF_ROPE_GO(bf16, __nv_bfloat16);
#undef KF_ROPE_GO
	return cudaGetLastError();
}
