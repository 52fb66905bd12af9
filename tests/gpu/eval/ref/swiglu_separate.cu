// Reference solution of eval task swiglu_separate: y = silu(g) * u
extern "C" __global__ void swiglu_separate_ref(float *y, const float *g, const float *u, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		const float v = g[i];
		y[i] = v / (1.f + expf(-v)) * u[i];
	}
}
