// Bug: writes through a wild pointer.
extern "C" __global__ void axpb(float *y, const float *x, const float *w, float s, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[(size_t)i * 4000000000ull] = s * x[i] + w[i];
}
