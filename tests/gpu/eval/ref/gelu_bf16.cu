// Reference solution of eval task gelu_bf16: exact GELU, bf16 in and out, fp32 arithmetic
#include <cuda_bf16.h>

#define LD(p) __bfloat162float(p)
#define ST(v) __float2bfloat16(v)
typedef __nv_bfloat16 bf16;

extern "C" __global__ void gelu_bf16_ref(bf16 *y, const bf16 *x, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		const float v = LD(x[i]);
		y[i] = ST(0.5f * v * (1.f + erff(v * 0.70710678118654752f)));
	}
}
