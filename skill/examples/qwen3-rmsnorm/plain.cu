// Step 1 of the worked example: the plain RMSNorm an agent writes first.
// y[t, :] = x[t, :] / sqrt(mean(x[t, :]^2) + eps) * w, bf16 in and out,
// fp32 accumulation. One block per row; a shared-memory tree reduction.
#include <cuda_bf16.h>

extern "C" __global__ void rmsnorm_plain(__nv_bfloat16 *y, const __nv_bfloat16 *x,
                                         const __nv_bfloat16 *w, int T, int D, float eps)
{
	__shared__ float part[256];
	const __nv_bfloat16 *xr = x + (size_t)blockIdx.x * D;
	__nv_bfloat16 *yr = y + (size_t)blockIdx.x * D;
	float ss = 0.f;
	for (int i = threadIdx.x; i < D; i += blockDim.x) {
		float v = __bfloat162float(xr[i]);
		ss += v * v;
	}
	part[threadIdx.x] = ss;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s)
			part[threadIdx.x] += part[threadIdx.x + s];
		__syncthreads();
	}
	const float r = rsqrtf(part[0] / D + eps);
	for (int i = threadIdx.x; i < D; i += blockDim.x)
		yr[i] = __float2bfloat16(__bfloat162float(xr[i]) * r * __bfloat162float(w[i]));
}
