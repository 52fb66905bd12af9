/* layernorm_ref: float64 layer normalization; see layernorm_ref.h. */
#include "kernels/ref/layernorm_ref.h"

#include <math.h>

int layernorm_ref(double *y, const double *x, const double *w, const double *b, int64_t T,
		  int64_t D, double eps, struct kf_err *err)
{
	if (T < 0)
		return kf_err_set(err, KF_EINVAL, "layernorm: T=%lld, want T >= 0", (long long)T);
	if (D < 1)
		return kf_err_set(err, KF_EINVAL, "layernorm: D=%lld, want D >= 1", (long long)D);
	if (!(eps >= 0))
		return kf_err_set(err, KF_EINVAL, "layernorm: eps=%g, want eps >= 0", eps);
	if (!y || !x)
		return kf_err_set(err, KF_EINVAL, "layernorm: tensor '%s' is missing",
				  !y ? "y" : "x");
	for (int64_t t = 0; t < T; t++) {
		const double *xr = x + t * D;
		double *yr = y + t * D;
		double mu = 0, var = 0;
		for (int64_t i = 0; i < D; i++)
			mu += xr[i];
		mu /= (double)D;
		for (int64_t i = 0; i < D; i++)
			var += (xr[i] - mu) * (xr[i] - mu);
		var /= (double)D;
		double inv = 1.0 / sqrt(var + eps);
		for (int64_t i = 0; i < D; i++)
			yr[i] = (xr[i] - mu) * inv * (w ? w[i] : 1.0) + (b ? b[i] : 0.0);
	}
	return 0;
}

void layernorm_cost(int64_t T, int64_t D, size_t esize, int nw, double *bytes, double *flops)
{
	double td = (double)T * (double)D;
	*bytes = (2 * td + nw * (double)D) * (double)esize;
	*flops = (7 + nw) * td;
}
