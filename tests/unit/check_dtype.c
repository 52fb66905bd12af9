/* check_dtype: element types and their conversions (kernels/dtype.c). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "kernels/dtype.h"

START_TEST(parse_names_every_dtype_and_rejects_unknown)
{
	for (int i = 0; i < KF_DT_COUNT; i++)
		ck_assert_int_eq(dtype_parse(dtype_name(i)), i);
	ck_assert_int_eq(dtype_parse("fp32"), -1);
	ck_assert_int_eq(dtype_parse(NULL), -1);
	ck_assert_uint_eq(dtype_bytes(KF_DT_BF16), 2);
	ck_assert_uint_eq(dtype_bytes(KF_DT_I64), 8);
}
END_TEST

START_TEST(half_round_trips_every_finite_value)
{
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
			continue; /* NaN payloads need not round-trip */
		float f = dtype_f16_to_f32((uint16_t)h);
		ck_assert_uint_eq(dtype_f32_to_f16(f), h);
	}
}
END_TEST

START_TEST(bf16_round_trips_and_rounds_to_nearest_even)
{
	for (uint32_t b = 0; b < 0x10000; b++) {
		if ((b & 0x7f80) == 0x7f80 && (b & 0x7f))
			continue;
		ck_assert_uint_eq(dtype_f32_to_bf16(dtype_bf16_to_f32((uint16_t)b)), b);
	}
	/* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0). */
	ck_assert_uint_eq(dtype_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
	ck_assert_uint_eq(dtype_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-12f), 0x3f81);
}
END_TEST

START_TEST(half_rounds_ties_to_even_and_overflows_to_inf)
{
	ck_assert_uint_eq(dtype_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
	ck_assert_uint_eq(dtype_f32_to_f16(1.0f + 0x1p-11f + 0x1p-14f), 0x3c01);
	ck_assert_uint_eq(dtype_f32_to_f16(65520.0f), 0x7c00);
	ck_assert_uint_eq(dtype_f32_to_f16(-1e9f), 0xfc00);
	ck_assert_uint_eq(dtype_f32_to_f16(0x1p-25f), 0x0000);
	ck_assert_uint_eq(dtype_f32_to_f16(0x1p-24f), 0x0001);
}
END_TEST

START_TEST(integer_stores_saturate)
{
	int8_t i8[1];
	uint8_t u8[1];
	dtype_store(KF_DT_I8, i8, 0, 300.0);
	ck_assert_int_eq(i8[0], 127);
	dtype_store(KF_DT_U8, u8, 0, -5.0);
	ck_assert_int_eq(u8[0], 0);
	dtype_store(KF_DT_I8, i8, 0, NAN);
	ck_assert_int_eq(i8[0], 0);
	ck_assert(dtype_load(KF_DT_I8, i8, 0) == 0.0);
}
END_TEST

START_TEST(load_range_reads_what_dtype_load_reads)
{
	uint8_t raw[8 * 300];
	double d[300];
	uint32_t x = 12345;
	for (size_t i = 0; i < sizeof raw; i++) { /* every bit pattern class, NaNs included */
		x = x * 1103515245u + 12345u;
		raw[i] = (uint8_t)(x >> 16);
	}
	for (int dt = 0; dt < KF_DT_COUNT; dt++) {
		dtype_load_range((enum kf_dtype)dt, raw, 17, 300, d);
		for (size_t i = 17; i < 300; i++) {
			double want = dtype_load((enum kf_dtype)dt, raw, i);
			ck_assert_msg(memcmp(&d[i - 17], &want, sizeof want) == 0,
				      "%s element %zu differs", dtype_name((enum kf_dtype)dt), i);
		}
	}
}
END_TEST

static Suite *dtype_suite(void)
{
	Suite *s = suite_create("dtype");
	TCase *tc = tcase_create("conversions");
	tcase_add_test(tc, parse_names_every_dtype_and_rejects_unknown);
	tcase_add_test(tc, half_round_trips_every_finite_value);
	tcase_add_test(tc, bf16_round_trips_and_rounds_to_nearest_even);
	tcase_add_test(tc, half_rounds_ties_to_even_and_overflows_to_inf);
	tcase_add_test(tc, integer_stores_saturate);
	tcase_add_test(tc, load_range_reads_what_dtype_load_reads);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(dtype_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
