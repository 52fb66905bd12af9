// Step 2: 16-byte loads of both halves and a 16-byte store per thread (8
// bf16 each), a grid-stride loop over rows so the grid is a multiple of the
// SM count, and a scalar path for D not a multiple of 8. Same math as
// plain.cu: y[t, j] = x[t, j] * gelu_erf(x[t, D + j]), fp32 inside.
#include <cuda_bf16.h>
#include <stdint.h>

__device__ __forceinline__ float gelu_erf(float g)
{
	return 0.5f * g * (1.f + erff(g * 0.70710678118654752f));
}

extern "C" __global__ void __launch_bounds__(256)
geglu_fast(__nv_bfloat16 *__restrict__ y, const __nv_bfloat16 *__restrict__ x, int T, int D)
{
	const int vec = (D % 8 == 0) ? D / 8 : 0; /* uint4 per half-row */
	const size_t per_row = vec ? (size_t)vec : (size_t)D;
	const size_t total = (size_t)T * per_row;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
	     i += (size_t)gridDim.x * blockDim.x) {
		const size_t t = i / per_row, j = i % per_row;
		const __nv_bfloat16 *xr = x + t * 2 * D;
		__nv_bfloat16 *yr = y + t * D;
		if (vec) {
			uint4 hv = reinterpret_cast<const uint4 *>(xr)[j];
			uint4 gv = reinterpret_cast<const uint4 *>(xr + D)[j];
			uint4 o;
			const __nv_bfloat162 *h2 = reinterpret_cast<const __nv_bfloat162 *>(&hv);
			const __nv_bfloat162 *g2 = reinterpret_cast<const __nv_bfloat162 *>(&gv);
			__nv_bfloat162 *o2 = reinterpret_cast<__nv_bfloat162 *>(&o);
#pragma unroll
			for (int k = 0; k < 4; k++) {
				float2 h = __bfloat1622float2(h2[k]), g = __bfloat1622float2(g2[k]);
				o2[k] = __floats2bfloat162_rn(h.x * gelu_erf(g.x), h.y * gelu_erf(g.y));
			}
			reinterpret_cast<uint4 *>(yr)[j] = o;
		} else {
			float h = __bfloat162float(xr[j]), g = __bfloat162float(xr[D + j]);
			yr[j] = __float2bfloat16(h * gelu_erf(g));
		}
	}
}
