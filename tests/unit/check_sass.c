/* check_sass: the SASS summary parser on listings captured with
 * `cuobjdump -sass` on an H200 (tests/data/sass/NAME.sass, from the .cu files
 * beside them, nvcc 13.0 -arch=sm_90 -O3), plus small hand-made listings for
 * predicates, encoding lines and the errors. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/compile/sass.h"
#include "tests/unit/fixture.h"

static const struct sass_kernel *find(const struct sass_summary *s, const char *name)
{
	for (int i = 0; i < s->kernels_len; i++)
		if (!strcmp(s->kernels[i].name, name))
			return &s->kernels[i];
	return NULL;
}

static int has_hint(const struct sass_kernel *k, const char *needle)
{
	json_t *arr = json_array();
	sass_hints(k, arr);
	size_t i;
	json_t *h;
	int found = 0;
	json_array_foreach(arr, i, h)
		if (strstr(json_string_value(h), needle))
			found = 1;
	json_decref(arr);
	return found;
}

static struct sass_summary sum;

START_TEST(float4_kernel_has_128_bit_loads_and_float_kernel_gets_the_hint)
{
	size_t len;
	char *t = fixture_src_read("tests/data/sass/vec4.sm_90.sass", &len);
	ck_assert_int_eq(sass_parse(t, len, &sum, NULL), 0);
	ck_assert_int_eq(sum.kernels_len, 2);
	const struct sass_kernel *v4 = find(&sum, "scale4"), *v1 = find(&sum, "scale1");
	ck_assert_ptr_nonnull(v4);
	ck_assert_ptr_nonnull(v1);
	ck_assert_int_eq(v4->ldg[3], 1);
	ck_assert_int_eq(v4->stg[3], 1);
	ck_assert_int_eq(v4->ldg[1], 0);
	ck_assert_int_eq(v1->ldg[1], 1);
	ck_assert_int_eq(v1->stg[1], 1);
	ck_assert_int_eq(v1->ldg[3], 0);
	ck_assert(!has_hint(v4, "no 128-bit global loads"));
	ck_assert(has_hint(v1, "no 128-bit global loads"));
	ck_assert_int_gt(v4->instructions, 10);
	free(t);
}
END_TEST

START_TEST(tiled_fp32_matmul_is_flagged_for_tensor_cores)
{
	size_t len;
	char *t = fixture_src_read("tests/data/sass/matmul.sm_90.sass", &len);
	ck_assert_int_eq(sass_parse(t, len, &sum, NULL), 0);
	const struct sass_kernel *k = find(&sum, "sgemm_tiled");
	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(k->ffma, 32);
	ck_assert_int_eq(k->lds, 40);
	ck_assert_int_eq(k->sts, 2);
	ck_assert_int_eq(k->bar, 2);
	ck_assert_int_eq(k->hmma + k->hgmma + k->qgmma, 0);
	ck_assert(has_hint(k, "without tensor-core instructions"));
	free(t);
}
END_TEST

START_TEST(wmma_kernel_uses_hmma_and_is_not_flagged)
{
	size_t len;
	char *t = fixture_src_read("tests/data/sass/wmma.sm_90.sass", &len);
	ck_assert_int_eq(sass_parse(t, len, &sum, NULL), 0);
	const struct sass_kernel *k = find(&sum, "hgemm_wmma");
	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(k->hmma, 10);
	ck_assert(!has_hint(k, "without tensor-core instructions"));
	json_t *j = sass_kernel_json(k);
	ck_assert_int_eq(
		json_integer_value(json_object_get(json_object_get(j, "tensor_core"), "hmma")), 10);
	json_decref(j);
	free(t);
}
END_TEST

START_TEST(spilling_kernel_shows_local_memory_traffic)
{
	size_t len;
	char *t = fixture_src_read("tests/data/sass/spill.sm_90.sass", &len);
	ck_assert_int_eq(sass_parse(t, len, &sum, NULL), 0);
	ck_assert_int_eq(sum.kernels_len, 2);
	const struct sass_kernel *k = find(&sum, "spill");
	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(k->ldl, 86);
	ck_assert_int_eq(k->stl, 38);
	ck_assert(has_hint(k, "local memory traffic"));
	const struct sass_kernel *sm = find(&sum, "_Z2smPf");
	ck_assert_ptr_nonnull(sm);
	ck_assert_int_eq(sm->ldl + sm->stl, 0);
	free(t);
}
END_TEST

START_TEST(predicates_and_encoding_lines_are_handled)
{
	const char *t =
		"\tcode for sm_90\n"
		"\t\tFunction : k\n"
		"\t.headerflags\t@\"EF_CUDA_SM90\"\n"
		"        /*0000*/                   LDC R1, c[0x0][0x28] ;   /* 0x00000a00ff017b82 */\n"
		"                                                            /* 0x000fe40000000800 */\n"
		"        /*0010*/              @!P0 LDG.E.64 R2, desc[UR4][R4.64] ;\n"
		"        /*0020*/               @P1 STG.E.U8 desc[UR4][R4.64], R2 ;\n"
		"        /*0030*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ ;\n"
		"        /*0038*/                   UTCHMMA gdesc[UR8], gdesc[UR10], tmem[UR12], idesc[UR13], UPT ;\n"
		"        /*0040*/                   EXIT ;\n";
	ck_assert_int_eq(sass_parse(t, strlen(t), &sum, NULL), 0);
	ck_assert_int_eq(sum.kernels_len, 1);
	const struct sass_kernel *k = &sum.kernels[0];
	ck_assert_str_eq(k->name, "k");
	ck_assert_int_eq(k->instructions, 6);
	ck_assert_int_eq(k->utcmma, 1);
	ck_assert_int_eq(k->ldg[2], 1);
	ck_assert_int_eq(k->stg[0], 1);
	ck_assert_int_eq(k->hgmma, 1);
}
END_TEST

START_TEST(listing_without_functions_or_too_big_is_an_error)
{
	struct kf_err err = {0};
	const char *t = "not a sass listing\n";
	ck_assert_int_eq(sass_parse(t, strlen(t), &sum, &err), KF_EINVAL);
	ck_assert(strstr(err.msg, "Function") != NULL);
	kf_err_clear(&err);
	ck_assert_int_eq(sass_parse(t, (size_t)SASS_TEXT_MAX_BYTES + 1, &sum, &err), KF_ETOOBIG);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sass");
	TCase *tc = tcase_create("parse");
	tcase_add_test(tc, float4_kernel_has_128_bit_loads_and_float_kernel_gets_the_hint);
	tcase_add_test(tc, tiled_fp32_matmul_is_flagged_for_tensor_cores);
	tcase_add_test(tc, wmma_kernel_uses_hmma_and_is_not_flagged);
	tcase_add_test(tc, spilling_kernel_shows_local_memory_traffic);
	tcase_add_test(tc, predicates_and_encoding_lines_are_handled);
	tcase_add_test(tc, listing_without_functions_or_too_big_is_an_error);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
