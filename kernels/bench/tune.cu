/* tune: bench-only entry points that launch library kernels with an
 * explicit block shape, for the block-shape sweeps of bench.py
 * (BENCH_TUNE=1). Built into libkfk_tune.so by build.sh, never into the
 * library or the fatbin: it includes the kernel source directly. */
#include "kernels/rmsnorm.cu"

/* rmsnorm with block (tx, ty), grid ceil_div(T, ty). tx must be a power of
 * two <= 32 or a multiple of 32, tx * ty <= 1024. */
extern "C" int tune_rmsnorm(int dt, void *y, const void *x, const void *w, int64_t T, int64_t D,
			    float eps, int tx, int ty, cudaStream_t s)
{
	if (tx < 1 || ty < 1 || tx * ty > 1024 || T < 1 || D < 1)
		return (int)cudaErrorInvalidValue;
	dim3 block(tx, ty), grid((unsigned)((T + ty - 1) / ty));
	if (dt == KF_DT_F32)
		kf_rmsnorm_f32<<<grid, block, 0, s>>>((float *)y, (const float *)x, (const float *)w,
						      (int)T, (int)D, eps);
	else if (dt == KF_DT_F16)
		kf_rmsnorm_f16<<<grid, block, 0, s>>>((__half *)y, (const __half *)x,
						      (const __half *)w, (int)T, (int)D, eps);
	else
		kf_rmsnorm_bf16<<<grid, block, 0, s>>>((__nv_bfloat16 *)y, (const __nv_bfloat16 *)x,
						       (const __nv_bfloat16 *)w, (int)T, (int)D, eps);
	return (int)cudaGetLastError();
}
