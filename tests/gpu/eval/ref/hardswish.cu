// Reference solution of eval task hardswish: y = f(x) elementwise, f32
extern "C" __global__ void hardswish_ref(float *y, const float *x, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		const float v = x[i];
		y[i] = v * fminf(fmaxf(v + 3.f, 0.f), 6.f) / 6.f;
	}
}
