// Reference solution of eval task transpose: y[d, t] = x[t, d]
extern "C" __global__ void transpose_ref(float *y, const float *x, int T, int D, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		y[i] = x[(size_t)(i % T) * D + i / T]; /* i = d * T + t: coalesced writes */
	}
}
