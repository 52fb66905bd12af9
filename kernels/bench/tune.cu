/* tune: bench-only entry points that launch library kernels with an
 * explicit block shape, for the block-shape sweeps of bench.py
 * (BENCH_TUNE=1) and the experiments of kernels/dev/ (the wgmma GEMM).
 * Built into libkfk_tune.so by build.sh, never into the
 * library or the fatbin: it includes the kernel source directly. */
#include "kernels/activation.cu"
#include "kernels/dev/gemm_wgmma.cu"
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
		kf_rmsnorm_f32<<<grid, block, 0, s>>>((float *)y, (const float *)x,
						      (const float *)w, (int)T, (int)D, eps);
	else if (dt == KF_DT_F16)
		kf_rmsnorm_f16<<<grid, block, 0, s>>>((__half *)y, (const __half *)x,
						      (const __half *)w, (int)T, (int)D, eps);
	else
		kf_rmsnorm_bf16<<<grid, block, 0, s>>>((__nv_bfloat16 *)y, (const __nv_bfloat16 *)x,
						       (const __nv_bfloat16 *)w, (int)T, (int)D,
						       eps);
	return (int)cudaGetLastError();
}

template <int R>
__global__ void __launch_bounds__(256)
	tune_silu_k(__nv_bfloat16 *y, const __nv_bfloat16 *x, int rows, int D)
{
	kf_act::body<__nv_bfloat16, kf_act::SILU, true, R>(y, x, rows, D);
}

/* bf16 silu_and_mul with R rows per thread-iteration, block bx, grid
 * (ceil_div(D, 8 * bx), min(ceil_div(T, R), gy_cap)). */
extern "C" int tune_silu(void *y, const void *x, int64_t T, int64_t D, int R, int bx, int gy_cap,
			 cudaStream_t s)
{
	if (bx < 32 || bx > 256 || T < 1 || D < 1 || gy_cap < 1)
		return (int)cudaErrorInvalidValue;
	int64_t gy = (T + R - 1) / R;
	dim3 block(bx),
		grid((unsigned)((D + 8 * bx - 1) / (8 * bx)), (unsigned)(gy > gy_cap  ? gy_cap
									 : gy > 65535 ? 65535
										      : gy));
	__nv_bfloat16 *yy = (__nv_bfloat16 *)y;
	const __nv_bfloat16 *xx = (const __nv_bfloat16 *)x;
	switch (R) {
	case 1: tune_silu_k<1><<<grid, block, 0, s>>>(yy, xx, (int)T, (int)D); break;
	case 2: tune_silu_k<2><<<grid, block, 0, s>>>(yy, xx, (int)T, (int)D); break;
	case 4: tune_silu_k<4><<<grid, block, 0, s>>>(yy, xx, (int)T, (int)D); break;
	case 8: tune_silu_k<8><<<grid, block, 0, s>>>(yy, xx, (int)T, (int)D); break;
	default: return (int)cudaErrorInvalidValue;
	}
	return (int)cudaGetLastError();
}

/* rmsnorm (bf16, weight) with a tighter register cap: minimum 8 (<= 32
 * registers) or 6 (<= 40) resident 256-thread blocks per SM, to measure
 * occupancy against spills. Same body as kf_rmsnorm_bf16. */
extern "C" __global__ void __launch_bounds__(256, 8)
	tune_rms_lb8(__nv_bfloat16 *y, const __nv_bfloat16 *x, const __nv_bfloat16 *w, int rows,
		     int D, float eps)
{
	kf_rms::body<__nv_bfloat16, true, false>(y, nullptr, x, nullptr, w, rows, D, eps);
}
extern "C" __global__ void __launch_bounds__(256, 6)
	tune_rms_lb6(__nv_bfloat16 *y, const __nv_bfloat16 *x, const __nv_bfloat16 *w, int rows,
		     int D, float eps)
{
	kf_rms::body<__nv_bfloat16, true, false>(y, nullptr, x, nullptr, w, rows, D, eps);
}

extern "C" int tune_rmsnorm_lb(int variant, void *y, const void *x, const void *w, int64_t T,
			       int64_t D, float eps, int tx, int ty, cudaStream_t s)
{
	if (tx < 1 || ty < 1 || tx * ty > 256 || T < 1 || D < 1)
		return (int)cudaErrorInvalidValue;
	dim3 block(tx, ty), grid((unsigned)((T + ty - 1) / ty));
	__nv_bfloat16 *yy = (__nv_bfloat16 *)y;
	const __nv_bfloat16 *xx = (const __nv_bfloat16 *)x, *ww = (const __nv_bfloat16 *)w;
	if (variant == 8)
		tune_rms_lb8<<<grid, block, 0, s>>>(yy, xx, ww, (int)T, (int)D, eps);
	else
		tune_rms_lb6<<<grid, block, 0, s>>>(yy, xx, ww, (int)T, (int)D, eps);
	return (int)cudaGetLastError();
}
