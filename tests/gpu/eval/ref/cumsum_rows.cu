// Reference solution of eval task cumsum_rows: inclusive prefix sum of each row
/* One thread per row, accumulated in double (the reference sums in double). */
extern "C" __global__ void cumsum_rows_ref(float *y, const float *x, int T, int D)
{
	const int t = blockIdx.x * blockDim.x + threadIdx.x;
	if (t >= T)
		return;
	double s = 0;
	for (int d = 0; d < D; d++) {
		s += x[(size_t)t * D + d];
		y[(size_t)t * D + d] = (float)s;
	}
}
