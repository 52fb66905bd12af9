// Cheat: an fp32 op computed in fp16.
#include <cuda_fp16.h>
extern "C" __global__ void axpb(float *y, const float *x, const float *w, float s, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = __half2float(__hfma(__float2half(s), __float2half(x[i]), __float2half(w[i])));
}
