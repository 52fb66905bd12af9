/* stats: the statistics of benchmarks (daemon side): summaries of timing
 * samples, the speedup of a candidate over a baseline with its uncertainty,
 * and the roofline arithmetic (achieved GB/s and TFLOP/s, % of peak, the
 * floor time below which a measurement is physically impossible). Pure
 * functions, thread-safe. */
#ifndef KF_STATS_H
#define KF_STATS_H

#include <stddef.h>

#include "base/kf_err.h"

struct stats_summary {
	size_t n;	 /* samples */
	double median;	 /* same unit as the samples (ms) */
	double p10, p90; /* linear-interpolated percentiles */
	double mean, sd; /* sample mean and standard deviation */
	double cv;	 /* sd / mean */
	double min, max;
	double mad;	     /* median absolute deviation */
	double se_median;    /* 1.2533 * 1.4826 * MAD / sqrt(n): robust standard
			   * error of the median */
	double rel_se;	     /* se_median / median */
	double ci_lo, ci_hi; /* 95% interval of the median: median -+ 1.96 se */
};

/* Summarizes n samples (borrowed, not modified). Returns 0, or KF_EINVAL
 * for n == 0 or a non-finite or negative sample (names its index),
 * KF_ENOMEM. */
int stats_summarize(const double *x, size_t n, struct stats_summary *out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* The q-quantile (0..1) of sorted[0..n), linear interpolation between
 * closest ranks (numpy's default). n > 0. */
double stats_quantile_sorted(const double *sorted, size_t n, double q);

enum stats_verdict {
	STATS_FASTER = 0,   /* candidate faster: the whole interval > 1 */
	STATS_SLOWER,	    /* candidate slower: the whole interval < 1 */
	STATS_NO_DIFFERENCE /* the interval contains 1, or the medians'
			       * intervals overlap */
};

struct stats_speedup {
	double speedup; /* baseline median / candidate median (> 1 = faster) */
	double lo, hi;	/* 95% interval (log-normal, delta method) */
	enum stats_verdict verdict;
};

/* Speedup of cand over base from their summaries. The interval uses the
 * relative standard errors of both medians: exp(+-1.96 sqrt(rc^2 + rb^2)).
 * "no measurable difference" when that interval contains 1 or the two
 * medians' 95% intervals overlap. */
void stats_speedup(const struct stats_summary *cand, const struct stats_summary *base,
		   struct stats_speedup *out);

/* "faster", "slower", "no measurable difference". Static. */
const char *stats_verdict_name(enum stats_verdict v);

struct stats_roofline {
	double gbs;	   /* achieved bytes / time, 1e9 B/s */
	double tflops;	   /* achieved flops / time, 1e12 FLOP/s; -1 unknown */
	double pct_bw;	   /* % of peak_gbs; -1 when no peak */
	double pct_flops;  /* % of peak_tflops; -1 when no peak or no flops */
	double floor_ms;   /* max(bytes / peak_gbs, flops / peak_tflops), ms;
			      * -1 when no peak */
	int below_floor;   /* 1 when time_ms < floor_ms (impossible: the
			      * kernel skips work or the cost overstates it) */
	const char *bound; /* "memory", "compute" or "unknown" */
};

/* Roofline figures for one measured time. bytes > 0; flops < 0 = unknown;
 * peak_gbs / peak_tflops <= 0 = unknown. Returns 0 or KF_EINVAL (time_ms
 * <= 0 or bytes < 0). */
int stats_roofline(double bytes, double flops, double time_ms, double peak_gbs, double peak_tflops,
		   struct stats_roofline *out, struct kf_err *err)
	__attribute__((warn_unused_result));

#endif
