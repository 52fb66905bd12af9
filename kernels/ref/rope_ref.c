/* rope_ref: float64 rotary embedding; see rope_ref.h. */
#include "kernels/ref/rope_ref.h"

int rope_ref(int neox, double *y, const double *x, const double *cos_t, const double *sin_t,
	     int64_t T, int64_t H, int64_t Dh, struct kf_err *err)
{
	if (T < 0 || H < 0)
		return kf_err_set(err, KF_EINVAL, "rope: T=%lld H=%lld, want both >= 0",
				  (long long)T, (long long)H);
	if (Dh < 2 || Dh % 2)
		return kf_err_set(err, KF_EINVAL, "rope: Dh=%lld, want an even Dh >= 2",
				  (long long)Dh);
	if (!y || !x || !cos_t || !sin_t)
		return kf_err_set(err, KF_EINVAL, "rope: tensor '%s' is missing",
				  !y	   ? "y"
				  : !x	   ? "x"
				  : !cos_t ? "cos"
					   : "sin");
	const int64_t half = Dh / 2;
	for (int64_t t = 0; t < T; t++)
		for (int64_t h = 0; h < H; h++) {
			const double *xr = x + (t * H + h) * Dh;
			double *yr = y + (t * H + h) * Dh;
			for (int64_t k = 0; k < half; k++) {
				const int64_t ia = neox ? k : 2 * k,
					      ib = neox ? k + half : 2 * k + 1;
				const double c = cos_t[t * half + k], s = sin_t[t * half + k];
				const double a = xr[ia], b = xr[ib];
				yr[ia] = a * c - b * s;
				yr[ib] = b * c + a * s;
			}
		}
	return 0;
}

void rope_cost(int64_t T, int64_t H, int64_t Dh, size_t esize, double *bytes, double *flops)
{
	double thd = (double)T * (double)H * (double)Dh;
	*bytes = 2 * thd * (double)esize + 2 * (double)T * (double)(Dh / 2) * 4;
	*flops = 3 * thd;
}
