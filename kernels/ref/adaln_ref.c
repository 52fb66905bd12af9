/* adaln_ref: float64 AdaLN modulation; see adaln_ref.h. */
#include "kernels/ref/adaln_ref.h"

int adaln_modulate_ref(double *y, const double *x, const double *scale, const double *shift,
		       int64_t B, int64_t S, int64_t D, struct kf_err *err)
{
	if (B < 0 || S < 0)
		return kf_err_set(err, KF_EINVAL, "adaln_modulate: B=%lld S=%lld, want both >= 0",
				  (long long)B, (long long)S);
	if (D < 1)
		return kf_err_set(err, KF_EINVAL, "adaln_modulate: D=%lld, want D >= 1",
				  (long long)D);
	if (!y || !x || !scale || !shift)
		return kf_err_set(err, KF_EINVAL, "adaln_modulate: tensor '%s' is missing",
				  !y	   ? "y"
				  : !x	   ? "x"
				  : !scale ? "scale"
					   : "shift");
	for (int64_t b = 0; b < B; b++)
		for (int64_t s = 0; s < S; s++)
			for (int64_t i = 0; i < D; i++) {
				int64_t k = (b * S + s) * D + i;
				y[k] = x[k] * (1.0 + scale[b * D + i]) + shift[b * D + i];
			}
	return 0;
}

void adaln_modulate_cost(int64_t B, int64_t S, int64_t D, size_t esize, double *bytes,
			 double *flops)
{
	double bsd = (double)B * (double)S * (double)D;
	*bytes = (2 * bsd + 2 * (double)B * (double)D) * (double)esize;
	*flops = 2 * bsd;
}
