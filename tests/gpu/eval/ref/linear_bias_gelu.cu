// Reference solution of eval task linear_bias_gelu: y = gelu(x @ w^T + b) (erf)
__device__ float warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

/* One warp per output: the lanes stride over K (coalesced rows of x and w),
 * a shuffle reduction, then the epilogue. */
extern "C" __global__ void linear_bias_gelu_ref(float *y, const float *x, const float *w, const float *b, int M, int N, int K)
{
	const long long gw = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	const int lane = threadIdx.x & 31;
	if (gw >= (long long)M * N)
		return;
	const int m = (int)(gw / N), n = (int)(gw % N);
	const float *xr = x + (size_t)m * K, *wr = w + (size_t)n * K;
	float acc = 0.f;
	for (int k = lane; k < K; k += 32)
		acc = fmaf(xr[k], wr[k], acc);
	acc = warp_sum(acc);
	if (lane == 0)
		y[gw] = 0.5f * (acc + b[n]) * (1.f + erff((acc + b[n]) * 0.70710678118654752f));
}
