// Reference solution of eval task leaky_relu: y = f(x) elementwise, f32
extern "C" __global__ void leaky_relu_ref(float *y, const float *x, float a, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		const float v = x[i];
		y[i] = v > 0.f ? v : a * v;
	}
}
