// Reference solution of eval task clamp: y = f(x) elementwise, f32
extern "C" __global__ void clamp_ref(float *y, const float *x, float lo, float hi, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		const float v = x[i];
		y[i] = fminf(fmaxf(v, lo), hi);
	}
}
