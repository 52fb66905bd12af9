// Reference solution of eval task residual_layernorm: s = x + r; y = layer_norm(s) * w + b
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

extern "C" __global__ void residual_layernorm_ref(float *s, float *y, const float *x, const float *r,
						  const float *w, const float *b, float eps, int T, int D)
{
	__shared__ float sh[32];
	const size_t o = (size_t)blockIdx.x * D;
	float a = 0.f;
	for (int i = threadIdx.x; i < D; i += blockDim.x) {
		const float v = x[o + i] + r[o + i];
		s[o + i] = v;
		a += v;
	}
	const float mean = block_sum(a, sh) / D;
	float q = 0.f;
	for (int i = threadIdx.x; i < D; i += blockDim.x) {
		const float d = x[o + i] + r[o + i] - mean;
		q += d * d;
	}
	const float rstd = rsqrtf(block_sum(q, sh) / D + eps);
	for (int i = threadIdx.x; i < D; i += blockDim.x)
		y[o + i] = (x[o + i] + r[o + i] - mean) * rstd * w[i] + b[i];
}
