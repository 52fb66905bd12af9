/* gemm_ref: float64 y = x @ w^T; see gemm_ref.h. */
#include "kernels/ref/gemm_ref.h"

int gemm_ref(double *y, const double *x, const double *w, int64_t M, int64_t N, int64_t K,
	     struct kf_err *err)
{
	if (M < 1 || N < 1 || K < 1)
		return kf_err_set(err, KF_EINVAL, "gemm: M=%lld N=%lld K=%lld, want all >= 1",
				  (long long)M, (long long)N, (long long)K);
	if (!y || !x || !w)
		return kf_err_set(err, KF_EINVAL, "gemm: tensor '%s' is missing",
				  !y   ? "y"
				  : !x ? "x"
				       : "w");
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++) {
			double s = 0;
			const double *xr = x + m * K, *wr = w + n * K;
			for (int64_t k = 0; k < K; k++)
				s += xr[k] * wr[k];
			y[m * N + n] = s;
		}
	return 0;
}

void gemm_cost(int64_t M, int64_t N, int64_t K, size_t esize, double *bytes, double *flops)
{
	*bytes = ((double)M * K + (double)N * K + (double)M * N) * (double)esize;
	*flops = 2.0 * (double)M * (double)N * (double)K;
}
