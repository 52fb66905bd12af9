/* rmsnorm_ref: float64 rmsnorm, rmsnorm without weight, residual add +
 * rmsnorm; see rmsnorm_ref.h. Straight loops: this is the specification.
 * Rows are independent and each is computed by one thread in index order
 * (par_for over rows), so the result does not depend on the cores. */
#include "kernels/ref/rmsnorm_ref.h"

#include <math.h>

#include "base/par.h"

static int check(const double *y, const double *x, int64_t T, int64_t D, double eps,
		 struct kf_err *err)
{
	if (T < 0)
		return kf_err_set(err, KF_EINVAL, "rmsnorm: T=%lld, want T >= 0", (long long)T);
	if (D < 1)
		return kf_err_set(err, KF_EINVAL, "rmsnorm: D=%lld, want D >= 1", (long long)D);
	if (!(eps >= 0))
		return kf_err_set(err, KF_EINVAL, "rmsnorm: eps=%g, want eps >= 0", eps);
	if (!y || !x)
		return kf_err_set(err, KF_EINVAL, "rmsnorm: tensor '%s' is missing",
				  !y ? "y" : "x");
	return 0;
}

static void norm_row(double *y, const double *v, const double *w, int64_t D, double eps)
{
	double ss = 0;
	for (int64_t i = 0; i < D; i++)
		ss += v[i] * v[i];
	double inv = 1.0 / sqrt(ss / (double)D + eps);
	for (int64_t i = 0; i < D; i++)
		y[i] = v[i] * inv * (w ? w[i] : 1.0);
}

struct rows_job {
	double *y;
	const double *v, *w;
	int64_t D;
	double eps;
};

static void norm_rows(void *arg, uint64_t c, uint64_t lo, uint64_t hi)
{
	const struct rows_job *j = arg;
	(void)c;
	for (uint64_t t = lo; t < hi; t++)
		norm_row(j->y + t * (uint64_t)j->D, j->v + t * (uint64_t)j->D, j->w, j->D, j->eps);
}

/* Rows per chunk: about 64K elements. */
static uint64_t rows_chunk(int64_t D)
{
	return D >= (1 << 16) ? 1 : (uint64_t)((1 << 16) / D);
}

int rmsnorm_ref(double *y, const double *x, const double *w, int64_t T, int64_t D, double eps,
		struct kf_err *err)
{
	int rc = check(y, x, T, D, eps, err);
	if (rc)
		return rc;
	struct rows_job j = {y, x, w, D, eps};
	par_for((uint64_t)T, rows_chunk(D), norm_rows, &j);
	return 0;
}

int add_rmsnorm_ref(double *y, double *r, const double *x, const double *res, const double *w,
		    int64_t T, int64_t D, double eps, struct kf_err *err)
{
	int rc = check(y, x, T, D, eps, err);
	if (rc)
		return rc;
	if (!r || !res)
		return kf_err_set(err, KF_EINVAL, "add_rmsnorm: tensor '%s' is missing",
				  !r ? "r" : "res");
	for (int64_t k = 0; k < T * D; k++)
		r[k] = x[k] + res[k];
	struct rows_job j = {y, r, w, D, eps};
	par_for((uint64_t)T, rows_chunk(D), norm_rows, &j);
	return 0;
}

void rmsnorm_cost(int64_t T, int64_t D, size_t esize, int has_weight, double *bytes, double *flops)
{
	double td = (double)T * (double)D;
	*bytes = (2 * td + (has_weight ? (double)D : 0)) * (double)esize;
	*flops = (has_weight ? 4 : 3) * td;
}

void add_rmsnorm_cost(int64_t T, int64_t D, size_t esize, double *bytes, double *flops)
{
	double td = (double)T * (double)D;
	*bytes = (4 * td + (double)D) * (double)esize;
	*flops = 5 * td;
}
