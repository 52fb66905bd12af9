// Reference solution of eval task groupnorm: group normalization of (B, C, HW), G groups, affine per channel
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

/* G is a scalar, which launch expressions cannot name: the grid is B * C
 * blocks (G <= C) and the blocks past B * G return at once. */
extern "C" __global__ void groupnorm_ref(float *y, const float *x, const float *w, const float *b,
					 int B, int C, int HW, int G, float eps)
{
	__shared__ float sh[32];
	if (blockIdx.x >= B * G)
		return;
	const int g = blockIdx.x % G, cg = C / G, n = cg * HW;
	const size_t base = (size_t)blockIdx.x * n; /* (b, g) groups are contiguous */
	const float *xg = x + base;
	float s = 0.f;
	for (int j = threadIdx.x; j < n; j += blockDim.x)
		s += xg[j];
	const float mean = block_sum(s, sh) / n;
	float v = 0.f;
	for (int j = threadIdx.x; j < n; j += blockDim.x)
		v += (xg[j] - mean) * (xg[j] - mean);
	const float rstd = rsqrtf(block_sum(v, sh) / n + eps);
	for (int j = threadIdx.x; j < n; j += blockDim.x) {
		const int c = g * cg + j / HW;
		y[base + j] = (xg[j] - mean) * rstd * w[c] + b[c];
	}
}
