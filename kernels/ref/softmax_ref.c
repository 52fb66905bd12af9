/* softmax_ref: float64 softmax over the last dimension; see softmax_ref.h. */
#include "kernels/ref/softmax_ref.h"

#include <math.h>

int softmax_ref(double *y, const double *x, int64_t T, int64_t D, struct kf_err *err)
{
	if (T < 0)
		return kf_err_set(err, KF_EINVAL, "softmax: T=%lld, want T >= 0", (long long)T);
	if (D < 1)
		return kf_err_set(err, KF_EINVAL, "softmax: D=%lld, want D >= 1", (long long)D);
	if (!y || !x)
		return kf_err_set(err, KF_EINVAL, "softmax: tensor '%s' is missing",
				  !y ? "y" : "x");
	for (int64_t t = 0; t < T; t++) {
		const double *xr = x + t * D;
		double *yr = y + t * D;
		double m = -INFINITY, s = 0;
		for (int64_t i = 0; i < D; i++)
			m = xr[i] > m ? xr[i] : m;
		for (int64_t i = 0; i < D; i++)
			s += exp(xr[i] - m);
		for (int64_t i = 0; i < D; i++)
			yr[i] = exp(xr[i] - m) / s;
	}
	return 0;
}

void softmax_cost(int64_t T, int64_t D, size_t esize, double *bytes, double *flops)
{
	double td = (double)T * (double)D;
	*bytes = 2 * td * (double)esize;
	*flops = 5 * td;
}
