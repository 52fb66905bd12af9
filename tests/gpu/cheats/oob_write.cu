// Cheat: no tail guard; writes 64 elements past the end of y.
extern "C" __global__ void axpb(float *y, const float *x, const float *w, float s, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n + 64)
		y[i] = i < n ? s * x[i] + w[i] : 0.0f;
}
