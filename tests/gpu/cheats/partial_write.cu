// Cheat: writes only the first half of the output.
extern "C" __global__ void axpb(float *y, const float *x, const float *w, float s, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n / 2)
		y[i] = s * x[i] + w[i];
}
