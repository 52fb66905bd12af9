// Reference solution of eval task gemm_bf16: y = x @ w^T, bf16 in and out, fp32 arithmetic
#include <cuda_bf16.h>

#define LD(p) __bfloat162float(p)
#define ST(v) __float2bfloat16(v)
typedef __nv_bfloat16 bf16;

__device__ float warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

/* One warp per output: lanes stride over K, fp32 accumulation. */
extern "C" __global__ void gemm_bf16_ref(bf16 *y, const bf16 *x, const bf16 *w, int M, int N, int K)
{
	const long long gw = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	const int lane = threadIdx.x & 31;
	if (gw >= (long long)M * N)
		return;
	const bf16 *xr = x + (size_t)(gw / N) * K, *wr = w + (size_t)(gw % N) * K;
	float acc = 0.f;
	for (int k = lane; k < K; k += 32)
		acc = fmaf(LD(xr[k]), LD(wr[k]), acc);
	acc = warp_sum(acc);
	if (lane == 0)
		y[gw] = ST(acc);
}
