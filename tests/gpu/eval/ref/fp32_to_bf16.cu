// Reference solution of eval task fp32_to_bf16: y = bf16(x), round to nearest even
#include <cuda_bf16.h>
extern "C" __global__ void fp32_to_bf16_ref(__nv_bfloat16 *y, const float *x, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		y[i] = __float2bfloat16_rn(x[i]);
	}
}
