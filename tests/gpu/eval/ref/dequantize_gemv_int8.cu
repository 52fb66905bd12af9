// Reference solution of eval task dequantize_gemv_int8: y[n] = scale[n] * sum_k w[n, k] * x[k], int8 weights
__device__ float warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

extern "C" __global__ void dequantize_gemv_int8_ref(float *y, const float *x, const signed char *w,
						    const float *scale, int N, int K)
{
	const int n = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
	if (n >= N)
		return;
	const signed char *wr = w + (size_t)n * K;
	float acc = 0.f;
	for (int k = lane; k < K; k += 32)
		acc = fmaf((float)wr[k], x[k], acc);
	acc = warp_sum(acc);
	if (lane == 0)
		y[n] = scale[n] * acc;
}
