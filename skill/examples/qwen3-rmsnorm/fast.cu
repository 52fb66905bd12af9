// Step 2: the same op with the changes the guides suggest, one at a time:
// 16-byte loads and stores (8 bf16 per uint4), warp-shuffle reduction
// instead of a shared-memory tree, and a scalar tail so any D works.
// The second pass re-reads the row; it is 8 KB at D = 4096 and still in
// L1/L2, so device memory sees each input byte once.
#include <cuda_bf16.h>
#include <stdint.h>

__device__ __forceinline__ float warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

extern "C" __global__ void __launch_bounds__(256)
rmsnorm_fast(__nv_bfloat16 *__restrict__ y, const __nv_bfloat16 *__restrict__ x,
             const __nv_bfloat16 *__restrict__ w, int T, int D, float eps)
{
	__shared__ float red[32];
	const __nv_bfloat16 *xr = x + (size_t)blockIdx.x * D;
	__nv_bfloat16 *yr = y + (size_t)blockIdx.x * D;
	/* Rows start 16-byte aligned only when D % 8 == 0 (the tensors are). */
	const int nvec = (D % 8 == 0) ? D / 8 : 0;
	const uint4 *xv = reinterpret_cast<const uint4 *>(xr);
	const uint4 *wv = reinterpret_cast<const uint4 *>(w);
	uint4 *yv = reinterpret_cast<uint4 *>(yr);

	float ss = 0.f;
	for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
		uint4 v = xv[i];
		const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&v);
#pragma unroll
		for (int k = 0; k < 4; k++) {
			float2 f = __bfloat1622float2(h[k]);
			ss += f.x * f.x + f.y * f.y;
		}
	}
	for (int i = nvec * 8 + threadIdx.x; i < D; i += blockDim.x) {
		float f = __bfloat162float(xr[i]);
		ss += f * f;
	}
	ss = warp_sum(ss);
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	if (lane == 0)
		red[warp] = ss;
	__syncthreads();
	if (warp == 0) {
		ss = warp_sum(lane < (int)(blockDim.x >> 5) ? red[lane] : 0.f);
		if (lane == 0)
			red[0] = rsqrtf(ss / D + eps);
	}
	__syncthreads();
	const float r = red[0];

	for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
		uint4 v = xv[i], wq = wv[i], o;
		const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&v);
		const __nv_bfloat162 *hw = reinterpret_cast<const __nv_bfloat162 *>(&wq);
		__nv_bfloat162 *ho = reinterpret_cast<__nv_bfloat162 *>(&o);
#pragma unroll
		for (int k = 0; k < 4; k++) {
			float2 a = __bfloat1622float2(h[k]), b = __bfloat1622float2(hw[k]);
			ho[k] = __floats2bfloat162_rn(a.x * r * b.x, a.y * r * b.y);
		}
		yv[i] = o;
	}
	for (int i = nvec * 8 + threadIdx.x; i < D; i += blockDim.x)
		yr[i] = __float2bfloat16(__bfloat162float(xr[i]) * r * __bfloat162float(w[i]));
}
