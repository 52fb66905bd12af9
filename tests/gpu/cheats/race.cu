// Cheat (or bug): float atomics in arbitrary order: the answer moves run to run.
extern "C" __global__ void zero(float *y, int rows)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r < rows)
		y[r] = 0.0f;
}
extern "C" __global__ void rowsum(float *y, const float *x, int rows, int cols)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < (size_t)rows * cols)
		atomicAdd(&y[i / cols], x[i]);
}
