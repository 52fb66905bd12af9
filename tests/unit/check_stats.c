/* check_stats: benchmark statistics (sandbox/check/stats.c) and the tolerance
 * comparison of checks (check_compare in sandbox/check/check_compare.c): percentiles,
 * robust standard errors, the speedup interval and verdict, the roofline,
 * and every rule of the element-wise comparison. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/check/check.h"
#include "sandbox/check/stats.h"

START_TEST(summary_gives_numpy_percentiles_and_moments)
{
	double x[] = {5, 1, 4, 2, 3, 10, 6, 7, 9, 8};
	struct stats_summary s;
	struct kf_err err = {0};
	ck_assert_int_eq(stats_summarize(x, 10, &s, &err), 0);
	ck_assert_uint_eq(s.n, 10);
	ck_assert_double_eq_tol(s.median, 5.5, 1e-12);
	/* numpy.percentile([1..10], 10) = 1.9, 90 -> 9.1 */
	ck_assert_double_eq_tol(s.p10, 1.9, 1e-12);
	ck_assert_double_eq_tol(s.p90, 9.1, 1e-12);
	ck_assert_double_eq_tol(s.mean, 5.5, 1e-12);
	ck_assert_double_eq_tol(s.sd, 3.0276503540974917, 1e-12);
	ck_assert_double_eq_tol(s.cv, 3.0276503540974917 / 5.5, 1e-12);
	ck_assert_double_eq_tol(s.mad, 2.5, 1e-12);
	ck_assert_double_eq_tol(s.se_median, 1.2533 * 1.4826 * 2.5 / sqrt(10.0), 1e-12);
	ck_assert_double_eq_tol(s.ci_lo, 5.5 - 1.96 * s.se_median, 1e-12);
	ck_assert(s.min == 1 && s.max == 10);
	/* the input is not reordered */
	ck_assert(x[0] == 5 && x[9] == 8);
}
END_TEST

START_TEST(summary_of_repeated_values_still_reports_spread)
{
	/* MAD 0 (most samples equal) falls back to the sd: never a zero error
	 * while the samples differ. */
	double x[] = {2, 2, 2, 2, 2, 2, 2, 3};
	struct stats_summary s;
	ck_assert_int_eq(stats_summarize(x, 8, &s, NULL), 0);
	ck_assert(s.mad == 0);
	ck_assert(s.se_median > 0);
	double one[] = {4};
	ck_assert_int_eq(stats_summarize(one, 1, &s, NULL), 0);
	ck_assert(s.median == 4 && s.p10 == 4 && s.sd == 0);
}
END_TEST

START_TEST(summary_rejects_empty_and_bad_samples)
{
	struct stats_summary s;
	struct kf_err err = {0};
	ck_assert_int_eq(stats_summarize(NULL, 0, &s, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "no samples"));
	double bad[] = {1, NAN, 2};
	kf_err_clear(&err);
	ck_assert_int_eq(stats_summarize(bad, 3, &s, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "sample 1"));
	double neg[] = {1, -2};
	kf_err_clear(&err);
	ck_assert_int_eq(stats_summarize(neg, 2, &s, &err), KF_EINVAL);
}
END_TEST

static struct stats_summary fake(double median, double rel_se)
{
	struct stats_summary s = {0};
	s.n = 100;
	s.median = median;
	s.rel_se = rel_se;
	s.se_median = rel_se * median;
	s.ci_lo = median - 1.96 * s.se_median;
	s.ci_hi = median + 1.96 * s.se_median;
	return s;
}

START_TEST(speedup_interval_and_verdicts)
{
	struct stats_speedup sp;
	struct stats_summary c = fake(10, 0.005), b = fake(15, 0.005);
	stats_speedup(&c, &b, &sp);
	ck_assert_double_eq_tol(sp.speedup, 1.5, 1e-12);
	double r = sqrt(2 * 0.005 * 0.005);
	ck_assert_double_eq_tol(sp.lo, 1.5 * exp(-1.96 * r), 1e-12);
	ck_assert_double_eq_tol(sp.hi, 1.5 * exp(1.96 * r), 1e-12);
	ck_assert_int_eq(sp.verdict, STATS_FASTER);
	ck_assert_str_eq(stats_verdict_name(sp.verdict), "faster");
	stats_speedup(&b, &c, &sp);
	ck_assert_int_eq(sp.verdict, STATS_SLOWER);
	/* 0.3% apart with 0.5% errors: the intervals overlap */
	struct stats_summary c2 = fake(10.0, 0.005), b2 = fake(10.03, 0.005);
	stats_speedup(&c2, &b2, &sp);
	ck_assert_int_eq(sp.verdict, STATS_NO_DIFFERENCE);
	ck_assert_str_eq(stats_verdict_name(sp.verdict), "no measurable difference");
	/* the same 0.3% with 0.01% errors is measurable */
	c2 = fake(10.0, 0.0001);
	b2 = fake(10.03, 0.0001);
	stats_speedup(&c2, &b2, &sp);
	ck_assert_int_eq(sp.verdict, STATS_FASTER);
}
END_TEST

START_TEST(roofline_floor_bound_and_below_floor_flag)
{
	struct stats_roofline rf;
	struct kf_err err = {0};
	/* 4.8e9 bytes at 4800 GB/s = 1 ms floor; flops small: memory bound */
	ck_assert_int_eq(stats_roofline(4.8e9, 1e9, 2.0, 4800, 60, &rf, &err), 0);
	ck_assert_double_eq_tol(rf.gbs, 2400, 1e-9);
	ck_assert_double_eq_tol(rf.pct_bw, 50, 1e-9);
	ck_assert_double_eq_tol(rf.tflops, 0.5, 1e-12);
	ck_assert_double_eq_tol(rf.floor_ms, 1.0, 1e-12);
	ck_assert_str_eq(rf.bound, "memory");
	ck_assert_int_eq(rf.below_floor, 0);
	/* 0.5 ms for what needs at least 1 ms: impossible, flagged */
	ck_assert_int_eq(stats_roofline(4.8e9, 1e9, 0.5, 4800, 60, &rf, &err), 0);
	ck_assert_int_eq(rf.below_floor, 1);
	/* compute bound: 120e12 flops at 60 TFLOP/s = 2 s */
	ck_assert_int_eq(stats_roofline(1e6, 120e12, 2500, 4800, 60, &rf, &err), 0);
	ck_assert_str_eq(rf.bound, "compute");
	ck_assert_double_eq_tol(rf.floor_ms, 2000, 1e-9);
	/* no peaks: no floor, no percentages, no flag */
	ck_assert_int_eq(stats_roofline(1e6, -1, 1, 0, 0, &rf, &err), 0);
	ck_assert(rf.floor_ms < 0 && rf.pct_bw < 0 && rf.tflops < 0 && !rf.below_floor);
	ck_assert_str_eq(rf.bound, "unknown");
	ck_assert_int_eq(stats_roofline(1e6, -1, 0, 1, 1, &rf, &err), KF_EINVAL);
}
END_TEST

START_TEST(compare_applies_atol_plus_rtol_bound)
{
	double want[] = {1.0, 100.0, 0.0, -2.0};
	double got[] = {1.0 + 1.5e-3, 100.0 + 0.11, 1e-3, -2.0};
	struct check_cmp c;
	/* bound = 1e-3 + 1e-3 |want|: 2e-3, 0.101, 1e-3, 3e-3 */
	check_compare(got, want, 4, 1e-3, 1e-3, &c);
	ck_assert_uint_eq(c.n, 4);
	ck_assert_uint_eq(c.mismatches, 1); /* only 100.11 (0.11 > 0.101) */
	ck_assert_uint_eq(c.first_len, 1);
	ck_assert_uint_eq(c.first[0], 1);
	ck_assert(c.first_got[0] == 100.11 && c.first_want[0] == 100.0);
	ck_assert_uint_eq(c.worst, 1);
	ck_assert_double_eq_tol(c.max_abs, 0.11, 1e-12);
	ck_assert_double_eq_tol(c.max_rel, 1.5e-3, 1e-12);
	double num = 1.5e-3 * 1.5e-3 + 0.11 * 0.11 + 1e-6, den = 1 + 1e4 + 4;
	ck_assert_double_eq_tol(c.rel_l2, sqrt(num / den), 1e-12);
	ck_assert_uint_eq(c.nonfinite, 0);
	ck_assert_int_eq(c.zeros_would_pass, 0);
}
END_TEST

START_TEST(compare_fails_nan_and_inf_where_the_reference_is_finite)
{
	double want[] = {1, 2, NAN, INFINITY, 5};
	double got[] = {NAN, INFINITY, NAN, INFINITY, 5};
	struct check_cmp c;
	check_compare(got, want, 5, 0.1, 0.1, &c);
	ck_assert_uint_eq(c.nonfinite, 2);
	ck_assert_uint_eq(c.mismatches, 2); /* NaN==NaN and Inf==Inf match */
	ck_assert_uint_eq(c.first[0], 0);
	ck_assert_uint_eq(c.first[1], 1);
	double got2[] = {1, 2, 3, -INFINITY, 5};
	check_compare(got2, want, 5, 0.1, 0.1, &c);
	ck_assert_uint_eq(c.mismatches, 2); /* 3 vs NaN, -Inf vs Inf */
	ck_assert_uint_eq(c.nonfinite, 0);
}
END_TEST

START_TEST(compare_flags_references_that_cannot_tell_wrong_from_right)
{
	enum { N = 1000 };
	double *want = malloc(N * sizeof *want), *got = calloc(N, sizeof *got);
	for (int i = 0; i < N; i++)
		want[i] = 1e-7 * sin(i);
	struct check_cmp c;
	check_compare(got, want, N, 1e-5, 1e-3, &c);
	ck_assert_uint_eq(c.mismatches, 0);
	ck_assert_int_eq(c.zeros_would_pass, 1);
	ck_assert_int_eq(c.constant_would_pass, 1);
	/* near-constant but not tiny: a constant passes, zeros do not */
	for (int i = 0; i < N; i++)
		want[i] = 3.0 + 1e-4 * sin(i);
	check_compare(want, want, N, 1e-2, 1e-2, &c);
	ck_assert_int_eq(c.zeros_would_pass, 0);
	ck_assert_int_eq(c.constant_would_pass, 1);
	/* a varied reference: neither */
	for (int i = 0; i < N; i++)
		want[i] = sin(i);
	check_compare(want, want, N, 1e-3, 1e-3, &c);
	ck_assert_int_eq(c.zeros_would_pass, 0);
	ck_assert_int_eq(c.constant_would_pass, 0);
	ck_assert(c.rel_l2 == 0 && c.max_abs == 0);
	free(want);
	free(got);
}
END_TEST

START_TEST(compare_keeps_only_the_first_mismatches)
{
	enum { N = 50 };
	double want[N], got[N];
	for (int i = 0; i < N; i++) {
		want[i] = i;
		got[i] = i + (i >= 10 ? 1.0 : 0.0);
	}
	got[40] = 100; /* the worst */
	struct check_cmp c;
	check_compare(got, want, N, 0.01, 0, &c);
	ck_assert_uint_eq(c.mismatches, 40);
	ck_assert_uint_eq(c.first_len, CHECK_FIRST_MAX);
	for (size_t k = 0; k < CHECK_FIRST_MAX; k++)
		ck_assert_uint_eq(c.first[k], 10 + k);
	ck_assert_uint_eq(c.worst, 40);
}
END_TEST

START_TEST(flat_indexes_format_as_row_major_coordinates)
{
	int64_t dims[] = {4, 3, 5};
	char buf[64];
	check_format_index(dims, 3, 0, buf, sizeof buf);
	ck_assert_str_eq(buf, "[0, 0, 0]");
	check_format_index(dims, 3, 5 * 3 + 2 * 5 + 4, buf, sizeof buf);
	ck_assert_str_eq(buf, "[1, 2, 4]");
	check_format_index(dims, 1, 3, buf, sizeof buf);
	ck_assert_str_eq(buf, "[3]");
	check_format_index(dims, 0, 0, buf, sizeof buf);
	ck_assert_str_eq(buf, "[]");
}
END_TEST

static Suite *stats_suite(void)
{
	Suite *s = suite_create("stats");
	TCase *t = tcase_create("stats");
	tcase_add_test(t, summary_gives_numpy_percentiles_and_moments);
	tcase_add_test(t, summary_of_repeated_values_still_reports_spread);
	tcase_add_test(t, summary_rejects_empty_and_bad_samples);
	tcase_add_test(t, speedup_interval_and_verdicts);
	tcase_add_test(t, roofline_floor_bound_and_below_floor_flag);
	suite_add_tcase(s, t);
	TCase *c = tcase_create("compare");
	tcase_add_test(c, compare_applies_atol_plus_rtol_bound);
	tcase_add_test(c, compare_fails_nan_and_inf_where_the_reference_is_finite);
	tcase_add_test(c, compare_flags_references_that_cannot_tell_wrong_from_right);
	tcase_add_test(c, compare_keeps_only_the_first_mismatches);
	tcase_add_test(c, flat_indexes_format_as_row_major_coordinates);
	suite_add_tcase(s, c);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(stats_suite());
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
