/* activation_ref: float64 activations; see activation_ref.h. */
#include "kernels/ref/activation_ref.h"

#include <math.h>

double act_ref_silu(double a)
{
	return a / (1.0 + exp(-a));
}

double act_ref_gelu(double a)
{
	return 0.5 * a * (1.0 + erf(a / sqrt(2.0)));
}

double act_ref_gelu_tanh(double a)
{
	const double k = sqrt(2.0 / 3.14159265358979323846);
	return 0.5 * a * (1.0 + tanh(k * (a + 0.044715 * a * a * a)));
}

static int gated(enum act_ref_op op)
{
	return op == ACT_REF_SILU_AND_MUL || op == ACT_REF_GEGLU || op == ACT_REF_GEGLU_TANH;
}

int activation_ref(enum act_ref_op op, double *y, const double *x, int64_t T, int64_t D,
		   struct kf_err *err)
{
	if ((unsigned)op >= ACT_REF_COUNT)
		return kf_err_set(err, KF_EINVAL, "activation: op %d unknown, want 0..%d", (int)op,
				  ACT_REF_COUNT - 1);
	if (T < 0)
		return kf_err_set(err, KF_EINVAL, "activation: T=%lld, want T >= 0", (long long)T);
	if (D < 1)
		return kf_err_set(err, KF_EINVAL, "activation: D=%lld, want D >= 1", (long long)D);
	if (!y || !x)
		return kf_err_set(err, KF_EINVAL, "activation: tensor '%s' is missing",
				  !y ? "y" : "x");
	const int64_t xs = gated(op) ? 2 * D : D;
	for (int64_t t = 0; t < T; t++)
		for (int64_t i = 0; i < D; i++) {
			double a = x[t * xs + i], v;
			if (op == ACT_REF_SILU_AND_MUL)
				v = act_ref_silu(a);
			else if (op == ACT_REF_GEGLU || op == ACT_REF_GELU)
				v = act_ref_gelu(a);
			else
				v = act_ref_gelu_tanh(a);
			y[t * D + i] = gated(op) ? v * x[t * xs + D + i] : v;
		}
	return 0;
}

void activation_cost(enum act_ref_op op, int64_t T, int64_t D, size_t esize, double *bytes,
		     double *flops)
{
	static const int k[ACT_REF_COUNT] = {5, 9, 10, 8, 9};
	double td = (double)T * (double)D;
	if ((unsigned)op >= ACT_REF_COUNT) {
		*bytes = *flops = 0;
		return;
	}
	*bytes = (gated(op) ? 3 : 2) * td * (double)esize;
	*flops = k[op] * td;
}
