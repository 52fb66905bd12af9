/* check_judge: the anti-cheat judge's element-wise comparison
 * (check_compare in sandbox/check/check_compare.c) fed synthetic got/want
 * buffers: verdicts, mismatch indices, non-finite outputs and the
 * weak-reference signals. No GPU, no JSON; runs in CI. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/check/check.h"

#define N 64

static double got[N], want[N];

static void setup(void)
{
	for (int i = 0; i < N; i++)
		want[i] = got[i] = sin(0.37 * i) * 3.0 - 0.5 * (i % 7);
}

START_TEST(compare_passes_exact_match)
{
	struct check_cmp c;
	check_compare(got, want, N, 1e-5, 1e-5, &c);
	ck_assert_uint_eq(c.n, N);
	ck_assert_uint_eq(c.mismatches, 0);
	ck_assert_uint_eq(c.nonfinite, 0);
	ck_assert_uint_eq(c.first_len, 0);
	ck_assert(c.max_abs == 0 && c.rel_l2 == 0);
	ck_assert_int_eq(c.zeros_would_pass, 0);
	ck_assert_int_eq(c.constant_would_pass, 0);
}
END_TEST

START_TEST(compare_fails_one_element_out_of_tolerance_with_its_index)
{
	got[41] += 1e-2;
	struct check_cmp c;
	check_compare(got, want, N, 1e-4, 1e-4, &c);
	ck_assert_uint_eq(c.mismatches, 1);
	ck_assert_uint_eq(c.first_len, 1);
	ck_assert_uint_eq(c.first[0], 41);
	ck_assert_uint_eq(c.worst, 41);
	ck_assert(c.first_got[0] == got[41] && c.first_want[0] == want[41]);
	ck_assert(fabs(c.max_abs - 1e-2) < 1e-12);
}
END_TEST

START_TEST(compare_passes_error_inside_tolerance)
{
	got[3] += 5e-5;
	struct check_cmp c;
	check_compare(got, want, N, 1e-4, 0, &c);
	ck_assert_uint_eq(c.mismatches, 0);
	ck_assert(c.max_abs > 0);
}
END_TEST

START_TEST(compare_fails_nan_where_reference_is_finite)
{
	got[7] = NAN;
	got[9] = INFINITY;
	struct check_cmp c;
	check_compare(got, want, N, 1e-3, 1e-3, &c);
	ck_assert_uint_eq(c.nonfinite, 2);
	ck_assert_uint_eq(c.mismatches, 2);
	ck_assert_uint_eq(c.first[0], 7);
	ck_assert_uint_eq(c.first[1], 9);
}
END_TEST

START_TEST(compare_matches_nan_where_reference_is_nan)
{
	want[5] = got[5] = NAN;
	want[6] = got[6] = -INFINITY;
	struct check_cmp c;
	check_compare(got, want, N, 1e-3, 1e-3, &c);
	ck_assert_uint_eq(c.mismatches, 0);
	got[6] = INFINITY;
	check_compare(got, want, N, 1e-3, 1e-3, &c);
	ck_assert_uint_eq(c.mismatches, 1);
	ck_assert_uint_eq(c.first[0], 6);
}
END_TEST

START_TEST(compare_reports_first_mismatches_in_index_order_capped)
{
	for (int i = 0; i < N; i += 4)
		got[i] += 1.0;
	struct check_cmp c;
	check_compare(got, want, N, 1e-3, 1e-3, &c);
	ck_assert_uint_eq(c.mismatches, N / 4);
	ck_assert_uint_eq(c.first_len, CHECK_FIRST_MAX);
	for (size_t k = 0; k < c.first_len; k++)
		ck_assert_uint_eq(c.first[k], 4 * k);
}
END_TEST

START_TEST(compare_flags_near_constant_reference)
{
	for (int i = 0; i < N; i++)
		want[i] = got[i] = 2.0 + 1e-7 * (i % 3);
	struct check_cmp c;
	check_compare(got, want, N, 1e-5, 1e-5, &c);
	ck_assert_uint_eq(c.mismatches, 0);
	ck_assert_int_eq(c.constant_would_pass, 1);
	ck_assert_int_eq(c.zeros_would_pass, 0);
}
END_TEST

START_TEST(compare_flags_reference_that_zeros_would_pass)
{
	for (int i = 0; i < N; i++)
		want[i] = got[i] = 1e-7 * (i % 5);
	struct check_cmp c;
	check_compare(got, want, N, 1e-5, 1e-5, &c);
	ck_assert_int_eq(c.zeros_would_pass, 1);
}
END_TEST

START_TEST(format_index_writes_row_major_coordinates)
{
	int64_t dims[2] = {3, 5};
	char buf[64];
	check_format_index(dims, 2, 13, buf, sizeof buf);
	ck_assert_str_eq(buf, "[2, 3]");
}
END_TEST

static Suite *judge_suite(void)
{
	Suite *s = suite_create("check_judge");
	TCase *tc = tcase_create("compare");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, compare_passes_exact_match);
	tcase_add_test(tc, compare_fails_one_element_out_of_tolerance_with_its_index);
	tcase_add_test(tc, compare_passes_error_inside_tolerance);
	tcase_add_test(tc, compare_fails_nan_where_reference_is_finite);
	tcase_add_test(tc, compare_matches_nan_where_reference_is_nan);
	tcase_add_test(tc, compare_reports_first_mismatches_in_index_order_capped);
	tcase_add_test(tc, compare_flags_near_constant_reference);
	tcase_add_test(tc, compare_flags_reference_that_zeros_would_pass);
	suite_add_tcase(s, tc);
	TCase *fi = tcase_create("format_index");
	tcase_add_test(fi, format_index_writes_row_major_coordinates);
	suite_add_tcase(s, fi);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(judge_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
