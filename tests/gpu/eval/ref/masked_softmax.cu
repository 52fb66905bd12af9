// Reference solution of eval task masked_softmax: softmax over the positions whose mask byte is odd (position 0 always)
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

extern "C" __global__ void masked_softmax_ref(float *y, const float *x, const unsigned char *mask, int T, int S)
{
	__shared__ float sh[32];
	const int t = blockIdx.x;
	const float *xr = x + (size_t)t * S;
	float *yr = y + (size_t)t * S;
	const unsigned char *mr = mask + (size_t)t * S;
#define KEEP(i) ((i) == 0 || (mr[i] & 1))
	float m = -INFINITY;
	for (int i = threadIdx.x; i < S; i += blockDim.x)
		if (KEEP(i))
			m = fmaxf(m, xr[i]);
	m = block_max(m, sh);
	float s = 0.f;
	for (int i = threadIdx.x; i < S; i += blockDim.x)
		if (KEEP(i))
			s += expf(xr[i] - m);
	s = block_sum(s, sh);
	/* a row with no key kept is 0/0 in the reference: NaN */
	for (int i = threadIdx.x; i < S; i += blockDim.x)
		yr[i] = KEEP(i) ? expf(xr[i] - m) / s : (s > 0.f ? 0.f : NAN);
}
