// Correct, plain rmsnorm: one block per row, fp32 accumulation, a shared
// memory tree reduction; one extern "C" kernel per dtype.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ void from_f(float *p, float v) { *p = v; }
__device__ __forceinline__ void from_f(__half *p, float v) { *p = __float2half_rn(v); }
__device__ __forceinline__ void from_f(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }

template <typename T>
__device__ void rms(T *y, const T *x, const T *w, int rows, int d, float eps)
{
	__shared__ float part[256];
	int r = blockIdx.x;
	if (r >= rows)
		return;
	const T *xr = x + (size_t)r * d;
	float acc = 0.0f;
	for (int i = threadIdx.x; i < d; i += blockDim.x) {
		float v = to_f(xr[i]);
		acc += v * v;
	}
	part[threadIdx.x] = acc;
	__syncthreads();
	for (int s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s)
			part[threadIdx.x] += part[threadIdx.x + s];
		__syncthreads();
	}
	float inv = rsqrtf(part[0] / d + eps);
	for (int i = threadIdx.x; i < d; i += blockDim.x)
		from_f(&y[(size_t)r * d + i], to_f(xr[i]) * inv * to_f(w[i]));
}

extern "C" __global__ void rms_f32(float *y, const float *x, const float *w, int t, int d, float eps)
{
	rms(y, x, w, t, d, eps);
}
extern "C" __global__ void rms_f16(__half *y, const __half *x, const __half *w, int t, int d, float eps)
{
	rms(y, x, w, t, d, eps);
}
extern "C" __global__ void rms_bf16(__nv_bfloat16 *y, const __nv_bfloat16 *x, const __nv_bfloat16 *w,
				    int t, int d, float eps)
{
	rms(y, x, w, t, d, eps);
}
