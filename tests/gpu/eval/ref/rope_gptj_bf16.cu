// Reference solution of eval task rope_gptj_bf16: rotary embedding, interleaved pairs, bf16 in and out, fp32 arithmetic
#include <cuda_bf16.h>

#define LD(p) __bfloat162float(p)
#define ST(v) __float2bfloat16(v)
typedef __nv_bfloat16 bf16;

extern "C" __global__ void rope_gptj_bf16_ref(bf16 *y, const bf16 *x, const float *cos_t, const float *sin_t,
				  int T, int H, int Dh)
{
	const int half = Dh / 2, n = T * H * half;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		const int k = i % half, th = i / half, t = th / H;
		const float c = cos_t[(size_t)t * half + k], s = sin_t[(size_t)t * half + k];
		const size_t a = (size_t)th * Dh + 2 * k, b = (size_t)th * Dh + 2 * k + 1;
		const float xa = LD(x[a]), xb = LD(x[b]);
		y[a] = ST(xa * c - xb * s);
		y[b] = ST(xb * c + xa * s);
	}
}
