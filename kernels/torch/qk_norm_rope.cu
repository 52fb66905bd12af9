/* qk_norm_rope: the attention prologue of Qwen3-style models in one pass:
 * per-head RMSNorm of q and k (optional: Llama has none) followed by the
 * rotary embedding in the NeoX (rotate halves) layout, read straight from
 * the fused q|k|v projection row.
 *
 *   for token t and head h (H query heads, then KV key heads):
 *   x = qkv[t, h*Dh : (h+1)*Dh]
 *   n = x * rsqrt(mean(x^2) + eps) * w        (w = q_w or k_w; n = x if NULL)
 *   out[t,h,i]      = n[i] c[i] - n[i+Dh/2] s[i]          i < Dh/2
 *   out[t,h,i+Dh/2] = n[i+Dh/2] c[i+Dh/2] + n[i] s[i+Dh/2]
 *   with c = cos[row(t)], s = sin[row(t)], row(t) = t, or t % S when the
 *   tables have one batch row for every batch (bcast != 0).
 *
 * Shapes: qkv rows of ld >= (H+2KV)*Dh elements (row-major; q at column 0,
 * k at H*Dh); cos, sin (rows, Dh) contiguous, as Hugging Face's rotary
 * module returns them (both halves hold the same angles), in the qkv type;
 * q_out (T, H, Dh), k_out (T, KV, Dh) contiguous. Types f32, f16, bf16
 * (one type for all); fp32 arithmetic and one rounding, where the
 * module chain rounds after the norm, the weight and each rope product.
 * Preconditions: Dh in {64, 128, 256}; T*(H+KV) < 2^31.
 * Launch: one warp per (t, head), Dh/32 elements per lane, lane l holding
 * [l*E, l*E+E) so that element i's partner i +- Dh/2 sits on lane l ^ 16;
 * block 256 (8 rows), grid ceil_div(T*(H+KV), 8).
 * Cost, e = sizeof(type): bytes = T*(H+KV)*Dh*2e + 2*T*Dh*e + 2*Dh*e,
 * flops = T*(H+KV)*Dh*7. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/torch/qk_norm_rope.h"

namespace kf_qkr
{

__device__ __forceinline__ float to_f(float v)
{
	return v;
}
__device__ __forceinline__ float to_f(__half v)
{
	return __half2float(v);
}
__device__ __forceinline__ float to_f(__nv_bfloat16 v)
{
	return __bfloat162float(v);
}
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v)
{
	return v;
}
template <> __device__ __forceinline__ __half from_f<__half>(float v)
{
	return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v)
{
	return __float2bfloat16_rn(v);
}

template <typename T, int E>
__global__ void __launch_bounds__(256)
	qk_norm_rope_kernel(T *q_out, T *k_out, const T *qkv, const T *q_w, const T *k_w,
			    const T *cos_t, const T *sin_t, int T_, int H, int KV, long long ld,
			    int S, int bcast, float eps)
{
	const int Dh = 32 * E;
	const int lane = threadIdx.x & 31;
	const long long row = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);
	const int HK = H + KV;
	if (row >= (long long)T_ * HK)
		return;
	const int t = (int)(row / HK), h = (int)(row % HK);
	const bool is_q = h < H;
	const T *x = qkv + (long long)t * ld + (long long)h * Dh + lane * E;
	const T *w = is_q ? q_w : k_w;
	const long long crow = bcast ? t % S : t;
	const T *c = cos_t + crow * Dh + lane * E, *s = sin_t + crow * Dh + lane * E;
	float v[E], cv[E], sv[E], wv[E];
#pragma unroll
	for (int i = 0; i < E; i++) {
		v[i] = to_f(x[i]);
		cv[i] = to_f(c[i]);
		sv[i] = to_f(s[i]);
		wv[i] = w ? to_f(w[lane * E + i]) : 1.0f;
	}
	float scale = 1.0f;
	if (q_w || k_w) {
		float ss = 0.0f;
#pragma unroll
		for (int i = 0; i < E; i++)
			ss += v[i] * v[i];
#pragma unroll
		for (int o = 16; o > 0; o >>= 1)
			ss += __shfl_xor_sync(0xffffffffu, ss, o);
		scale = rsqrtf(ss / (float)Dh + eps);
	}
	float out[E];
	const bool lo = lane < 16; /* first half of the head */
#pragma unroll
	for (int i = 0; i < E; i++) {
		float n = v[i] * scale * wv[i];
		float p = __shfl_xor_sync(0xffffffffu, n, 16); /* partner i -+ Dh/2 */
		out[i] = lo ? n * cv[i] - p * sv[i] : n * cv[i] + p * sv[i];
	}
	T *y = is_q ? q_out + ((long long)t * H + h) * Dh
		    : k_out + ((long long)t * KV + (h - H)) * Dh;
#pragma unroll
	for (int i = 0; i < E; i++)
		y[lane * E + i] = from_f<T>(out[i]);
}

template <typename T>
static cudaError_t launch(void *q_out, void *k_out, const void *qkv, const void *q_w,
			  const void *k_w, const void *cos_t, const void *sin_t, int64_t T_,
			  int64_t H, int64_t KV, int64_t Dh, int64_t ld, int64_t S, int bcast,
			  float eps, cudaStream_t st)
{
	long long rows = (long long)T_ * (H + KV);
	dim3 grid((unsigned)((rows + 7) / 8)), block(256);
#define KF_QKR_ARGS                                                                               \
	(T *)q_out, (T *)k_out, (const T *)qkv, (const T *)q_w, (const T *)k_w, (const T *)cos_t, \
		(const T *)sin_t, (int)T_, (int)H, (int)KV, (long long)ld, (int)S, bcast, eps
	if (Dh == 64)
		qk_norm_rope_kernel<T, 2><<<grid, block, 0, st>>>(KF_QKR_ARGS);
	else if (Dh == 128)
		qk_norm_rope_kernel<T, 4><<<grid, block, 0, st>>>(KF_QKR_ARGS);
	else
		qk_norm_rope_kernel<T, 8><<<grid, block, 0, st>>>(KF_QKR_ARGS);
#undef KF_QKR_ARGS
	return cudaGetLastError();
}

} // namespace kf_qkr

extern "C" cudaError_t qk_norm_rope_launch(enum kf_dtype dt, void *q_out, void *k_out,
					   const void *qkv, const void *q_w, const void *k_w,
					   const void *cos_t, const void *sin_t, int64_t T,
					   int64_t H, int64_t KV, int64_t Dh, int64_t ld, int64_t S,
					   int bcast, float eps, cudaStream_t s)
{
	if ((Dh != 64 && Dh != 128 && Dh != 256) || T < 0 || H < 1 || KV < 1 ||
	    T * (H + KV) >= (1LL << 31) || ld < (H + 2 * KV) * Dh || !(eps >= 0.0f) ||
	    (bcast && S < 1))
		return cudaErrorInvalidValue;
	if (T == 0)
		return cudaSuccess;
	if (!q_out || !k_out || !qkv || !cos_t || !sin_t)
		return cudaErrorInvalidValue;
	switch (dt) {
	case KF_DT_F32:
		return kf_qkr::launch<float>(q_out, k_out, qkv, q_w, k_w, cos_t, sin_t, T, H, KV,
					     Dh, ld, S, bcast, eps, s);
	case KF_DT_F16:
		return kf_qkr::launch<__half>(q_out, k_out, qkv, q_w, k_w, cos_t, sin_t, T, H, KV,
					      Dh, ld, S, bcast, eps, s);
	case KF_DT_BF16:
		return kf_qkr::launch<__nv_bfloat16>(q_out, k_out, qkv, q_w, k_w, cos_t, sin_t, T,
						     H, KV, Dh, ld, S, bcast, eps, s);
	default: return cudaErrorInvalidValue;
	}
}
