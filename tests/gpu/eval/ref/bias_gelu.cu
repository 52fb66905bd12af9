// Reference solution of eval task bias_gelu: y = gelu(x + b[d]) (erf)
extern "C" __global__ void bias_gelu_ref(float *y, const float *x, const float *b, int D, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		const float v = x[i] + b[i % D];
		y[i] = 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
	}
}
