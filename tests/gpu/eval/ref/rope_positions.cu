// Reference solution of eval task rope_positions: rotary embedding with angles from integer positions
/* The angle reaches 4095 rad: float sin/cos of it would be off by ~2e-4, so
 * the angle and the rotation are computed in double, as the reference does. */
extern "C" __global__ void rope_positions_ref(float *y, const float *x, const int *pos, float base,
					      int T, int H, int Dh)
{
	const int half = Dh / 2;
	const int n = T * H * half;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
		const int k = i % half, th = i / half, t = th / H;
		const long long p = llabs((long long)pos[t]) % 4096;
		const double f = pow((double)base, -2.0 * k / Dh);
		double s, c;
		sincos((double)p * f, &s, &c);
		const float *xr = x + (size_t)th * Dh;
		const double x1 = xr[k], x2 = xr[k + half];
		y[(size_t)th * Dh + k] = (float)(x1 * c - x2 * s);
		y[(size_t)th * Dh + k + half] = (float)(x2 * c + x1 * s);
	}
}
