// Step 1: diffusers' GEGLU as it computes it, one thread per output element.
// diffusers.models.activations.GEGLU: h, gate = proj(x).chunk(2, dim=-1);
// return h * gelu(gate)   (exact erf GELU). So for x = proj(...) of shape
// (T, 2D): y[t, j] = x[t, j] * gelu(x[t, D + j]). Note the order: the gate is
// the SECOND half, unlike vLLM's gelu_and_mul (kforge's built-in "geglu").
#include <cuda_bf16.h>

extern "C" __global__ void geglu_plain(__nv_bfloat16 *y, const __nv_bfloat16 *x, int T, int D)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= (size_t)T * D)
		return;
	size_t t = i / D, j = i % D;
	float h = __bfloat162float(x[t * 2 * D + j]);
	float g = __bfloat162float(x[t * 2 * D + D + j]);
	float gelu = 0.5f * g * (1.f + erff(g * 0.70710678118654752f));
	y[i] = __float2bfloat16(h * gelu);
}
