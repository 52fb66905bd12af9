// Cheat: correct output, but scribbles on an input.
extern "C" __global__ void axpb(float *y, float *x, const float *w, float s, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		y[i] = s * x[i] + w[i];
		x[i] = 0.0f;
	}
}
