// prints cudaOccupancyMaxActiveClusters for the GEMM's launch shape
#include <cstdio>
#include <cuda_runtime.h>
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1) k2(int *p)
{
	if (p)
		p[0] = 1;
}
int main()
{
	const int smem = 4 * 49152 + 2048;
	cudaFuncSetAttribute(k2, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
	cudaLaunchConfig_t cfg = {};
	cfg.gridDim = dim3(2 * 1024);
	cfg.blockDim = dim3(384);
	cfg.dynamicSmemBytes = smem;
	int n = -1;
	cudaError_t e = cudaOccupancyMaxActiveClusters(&n, k2, &cfg);
	printf("max active clusters of 2 (384 threads, %d B smem): %d (%s)\n", smem, n,
	       cudaGetErrorString(e));
	cfg.dynamicSmemBytes = 0;
	e = cudaOccupancyMaxActiveClusters(&n, k2, &cfg);
	printf("with no dynamic smem: %d (%s)\n", n, cudaGetErrorString(e));
	return 0;
}
