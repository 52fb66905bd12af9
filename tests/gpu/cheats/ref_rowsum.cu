// Plain reference: y[r] = sum_c x[r, c], one thread per row, in order.
extern "C" __global__ void ref_rowsum(float *y, const float *x, int rows, int cols)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r < rows) {
		float acc = 0.0f;
		for (int c = 0; c < cols; c++)
			acc += x[(size_t)r * cols + c];
		y[r] = acc;
	}
}
