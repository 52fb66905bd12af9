// Reference solution of eval task silu_and_mul_bf16: y = silu(x[:, :D]) * x[:, D:], bf16 in and out, fp32 arithmetic
#include <cuda_bf16.h>

#define LD(p) __bfloat162float(p)
#define ST(v) __float2bfloat16(v)
typedef __nv_bfloat16 bf16;

extern "C" __global__ void silu_and_mul_bf16_ref(bf16 *y, const bf16 *x, int T, int D)
{
	const int n = T * D;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		const size_t o = (size_t)(i / D) * 2 * D + i % D;
		const float v = LD(x[o]);
		y[i] = ST(v / (1.f + expf(-v)) * LD(x[o + D]));
	}
}
