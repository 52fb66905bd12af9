/* stats: benchmark statistics; see stats.h. */
#include "sandbox/check/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double stats_quantile_sorted(const double *s, size_t n, double q)
{
	if (n == 1)
		return s[0];
	if (q <= 0)
		return s[0];
	if (q >= 1)
		return s[n - 1];
	double pos = q * (double)(n - 1);
	size_t i = (size_t)pos;
	double f = pos - (double)i;
	return i + 1 < n ? s[i] + f * (s[i + 1] - s[i]) : s[i];
}

int stats_summarize(const double *x, size_t n, struct stats_summary *out, struct kf_err *err)
{
	memset(out, 0, sizeof *out);
	if (n == 0)
		return kf_err_set(err, KF_EINVAL, "statistics: no samples");
	for (size_t i = 0; i < n; i++)
		if (!isfinite(x[i]) || x[i] < 0)
			return kf_err_set(err, KF_EINVAL,
					  "statistics: sample %zu is %g (must be finite, >= 0)", i,
					  x[i]);
	double *s = malloc(n * sizeof *s);
	if (!s)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	memcpy(s, x, n * sizeof *s);
	qsort(s, n, sizeof *s, cmp_double);
	out->n = n;
	out->min = s[0];
	out->max = s[n - 1];
	out->median = stats_quantile_sorted(s, n, 0.5);
	out->p10 = stats_quantile_sorted(s, n, 0.1);
	out->p90 = stats_quantile_sorted(s, n, 0.9);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += s[i];
	out->mean = sum / (double)n;
	double ss = 0;
	for (size_t i = 0; i < n; i++)
		ss += (s[i] - out->mean) * (s[i] - out->mean);
	out->sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
	out->cv = out->mean > 0 ? out->sd / out->mean : 0;
	for (size_t i = 0; i < n; i++)
		s[i] = fabs(s[i] - out->median);
	qsort(s, n, sizeof *s, cmp_double);
	out->mad = stats_quantile_sorted(s, n, 0.5);
	free(s);
	/* The MAD is 0 for quantized samples that mostly repeat one value;
	 * fall back to the sd then, so the error is never claimed to be 0
	 * while samples differ. */
	double sigma = 1.4826 * out->mad;
	if (sigma == 0)
		sigma = out->sd;
	out->se_median = 1.2533 * sigma / sqrt((double)n);
	out->rel_se = out->median > 0 ? out->se_median / out->median : 0;
	out->ci_lo = out->median - 1.96 * out->se_median;
	out->ci_hi = out->median + 1.96 * out->se_median;
	return 0;
}

void stats_speedup(const struct stats_summary *c, const struct stats_summary *b,
		   struct stats_speedup *out)
{
	out->speedup = c->median > 0 ? b->median / c->median : 0;
	double r = sqrt(c->rel_se * c->rel_se + b->rel_se * b->rel_se);
	out->lo = out->speedup * exp(-1.96 * r);
	out->hi = out->speedup * exp(1.96 * r);
	int overlap = c->ci_lo <= b->ci_hi && b->ci_lo <= c->ci_hi;
	if (overlap || (out->lo <= 1.0 && out->hi >= 1.0))
		out->verdict = STATS_NO_DIFFERENCE;
	else
		out->verdict = out->lo > 1.0 ? STATS_FASTER : STATS_SLOWER;
}

const char *stats_verdict_name(enum stats_verdict v)
{
	switch (v) {
	case STATS_FASTER: return "faster";
	case STATS_SLOWER: return "slower";
	default: return "no measurable difference";
	}
}

int stats_roofline(double bytes, double flops, double time_ms, double peak_gbs, double peak_tflops,
		   struct stats_roofline *out, struct kf_err *err)
{
	memset(out, 0, sizeof *out);
	if (!(time_ms > 0) || !(bytes >= 0))
		return kf_err_set(err, KF_EINVAL,
				  "roofline: time %g ms and bytes %g must be positive", time_ms,
				  bytes);
	double t = time_ms * 1e-3;
	out->gbs = bytes / t / 1e9;
	out->tflops = flops >= 0 ? flops / t / 1e12 : -1;
	out->pct_bw = peak_gbs > 0 ? 100.0 * out->gbs / peak_gbs : -1;
	out->pct_flops = peak_tflops > 0 && flops >= 0 ? 100.0 * out->tflops / peak_tflops : -1;
	double fb = peak_gbs > 0 ? bytes / (peak_gbs * 1e9) : -1;
	double ff = peak_tflops > 0 && flops >= 0 ? flops / (peak_tflops * 1e12) : -1;
	double f = fb > ff ? fb : ff;
	out->floor_ms = f >= 0 ? f * 1e3 : -1;
	out->bound = fb < 0 && ff < 0 ? "unknown" : (fb >= ff ? "memory" : "compute");
	out->below_floor = out->floor_ms > 0 && time_ms < out->floor_ms;
	return 0;
}
