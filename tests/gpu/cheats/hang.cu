// Cheat (or bug): never terminates.
__device__ volatile int never_set;
extern "C" __global__ void axpb(float *y, const float *x, const float *w, float s, int n)
{
	while (!never_set) {
	}
}
