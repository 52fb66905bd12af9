// Reference solution of eval task adaln_modulate_bf16: y = x * (1 + scale[b]) + shift[b], bf16 in and out, fp32 arithmetic
#include <cuda_bf16.h>

#define LD(p) __bfloat162float(p)
#define ST(v) __float2bfloat16(v)
typedef __nv_bfloat16 bf16;

extern "C" __global__ void adaln_modulate_bf16_ref(bf16 *y, const bf16 *x, const bf16 *scale,
						   const bf16 *shift, int B, int S, int D)
{
	const long long n = (long long)B * S * D;
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
	     i += (long long)gridDim.x * blockDim.x) {
		const long long bd = i / ((long long)S * D) * D + i % D;
		y[i] = ST(LD(x[i]) * (1.f + LD(scale[bd])) + LD(shift[bd]));
	}
}
