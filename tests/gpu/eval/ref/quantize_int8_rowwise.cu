// Reference solution of eval task quantize_int8_rowwise: symmetric int8 quantization with one scale per row
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

extern "C" __global__ void quantize_int8_rowwise_ref(signed char *q, float *scale, const float *x,
						     int T, int D)
{
	__shared__ float sh[32];
	const size_t o = (size_t)blockIdx.x * D;
	float m = 0.f;
	for (int i = threadIdx.x; i < D; i += blockDim.x)
		m = fmaxf(m, fabsf(x[o + i]));
	const float sc = fmaxf(block_max(m, sh), 1e-12f) / 127.f;
	if (threadIdx.x == 0)
		scale[blockIdx.x] = sc;
	for (int i = threadIdx.x; i < D; i += blockDim.x)
		q[o + i] = (signed char)fminf(fmaxf(rintf(x[o + i] / sc), -127.f), 127.f);
}
