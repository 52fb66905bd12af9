// Reference solution of eval task add_rmsnorm_bf16: residual add + RMSNorm (r stored in bf16, normalized as stored), bf16 in and out, fp32 arithmetic
#include <cuda_bf16.h>

#define LD(p) __bfloat162float(p)
#define ST(v) __float2bfloat16(v)
typedef __nv_bfloat16 bf16;

// Block-wide sum and max over blockDim.x (a multiple of 32); every thread
// gets the result. sh: 32 floats of shared memory, reused call after call.
__device__ float block_sum(float v, float *sh)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	__syncthreads();
	if ((threadIdx.x & 31) == 0)
		sh[threadIdx.x >> 5] = v;
	__syncthreads();
	v = (threadIdx.x & 31) < (blockDim.x >> 5) ? sh[threadIdx.x & 31] : 0.f;
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}
__device__ float block_max(float v, float *sh)
{
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	__syncthreads();
	if ((threadIdx.x & 31) == 0)
		sh[threadIdx.x >> 5] = v;
	__syncthreads();
	v = (threadIdx.x & 31) < (blockDim.x >> 5) ? sh[threadIdx.x & 31] : -INFINITY;
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

extern "C" __global__ void add_rmsnorm_bf16_ref(bf16 *y, bf16 *r, const bf16 *x, const bf16 *res, const bf16 *w, int T, int D, float eps)
{
	__shared__ float sh[32];
	const size_t o = (size_t)blockIdx.x * D;
	float ss = 0.f;
	for (int i = threadIdx.x; i < D; i += blockDim.x) {
		const float v = LD(ST(LD(x[o + i]) + LD(res[o + i])));
		ss += v * v;
	}
	const float inv = rsqrtf(block_sum(ss, sh) / D + eps);
	for (int i = threadIdx.x; i < D; i += blockDim.x) {
		const bf16 s = ST(LD(x[o + i]) + LD(res[o + i]));
		r[o + i] = s;
		y[o + i] = ST(LD(s) * inv * LD(w[i]));
	}
}
