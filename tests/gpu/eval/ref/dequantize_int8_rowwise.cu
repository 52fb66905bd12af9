// Reference solution of eval task dequantize_int8_rowwise: y = q * scale[t]
extern "C" __global__ void dequantize_int8_rowwise_ref(float *y, const signed char *q, const float *scale, int D, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		y[i] = (float)q[i] * scale[i / D];
	}
}
