// Reference solution of eval task cross_entropy_soft: soft-target cross-entropy per row
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

extern "C" __global__ void cross_entropy_soft_ref(float *loss, const float *x, const float *p, int T,
						  int C)
{
	__shared__ float sh[32];
	const float *xr = x + (size_t)blockIdx.x * C, *pr = p + (size_t)blockIdx.x * C;
	float m = -INFINITY;
	for (int i = threadIdx.x; i < C; i += blockDim.x)
		m = fmaxf(m, xr[i]);
	m = block_max(m, sh);
	float s = 0.f;
	for (int i = threadIdx.x; i < C; i += blockDim.x)
		s += expf(xr[i] - m);
	const float lse = m + logf(block_sum(s, sh));
	/* -sum q * log_softmax with q = |p| / sum|p|: one pass over p */
	float a = 0.f, ax = 0.f;
	for (int i = threadIdx.x; i < C; i += blockDim.x) {
		const float q = fabsf(pr[i]);
		a += q;
		ax += q * (xr[i] - lse);
	}
	a = block_sum(a, sh);
	ax = block_sum(ax, sh);
	if (threadIdx.x == 0)
		loss[blockIdx.x] = -ax / a;
}
