// Reference solution of eval task instancenorm: instance normalization of (B, C, HW) over HW
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

extern "C" __global__ void instancenorm_ref(float *y, const float *x, int HW, float eps)
{
	__shared__ float sh[32];
	const int n = HW;
	const float *xg = x + (size_t)blockIdx.x * HW;
	float s = 0.f;
	for (int j = threadIdx.x; j < n; j += blockDim.x)
		s += xg[j];
	const float mean = block_sum(s, sh) / n;
	float v = 0.f;
	for (int j = threadIdx.x; j < n; j += blockDim.x)
		v += (xg[j] - mean) * (xg[j] - mean);
	const float rstd = rsqrtf(block_sum(v, sh) / n + eps);
	for (int j = threadIdx.x; j < n; j += blockDim.x)
		y[(size_t)blockIdx.x * HW + j] = (xg[j] - mean) * rstd;
}
