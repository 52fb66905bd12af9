/* check_gpu: the dlopen'ed driver probe (sandbox/pool/gpu.c). Without a driver
 * (CI) every path answers KF_ENOGPU with a reason a person can act on; where
 * libcuda.so.1 loads (the GPU machine) the probe must find the devices with
 * their figures filled in. */
#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/pool/gpu.h"

static int driver_present(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return 0;
	dlclose(lib);
	return 1;
}

START_TEST(probe_finds_the_gpus_or_says_why_not)
{
	const struct gpu_host *h = NULL;
	struct kf_err err = {0};
	int rc = gpu_probe(&h, &err);

	if (!driver_present()) {
		ck_assert_int_eq(rc, KF_ENOGPU);
		ck_assert_ptr_null(h);
		ck_assert_str_eq(err.msg, "libcuda.so.1 not found: no NVIDIA driver on this host");
		ck_assert_int_eq(gpu_count(), 0);
		ck_assert_ptr_null(gpu_get(0));
		ck_assert_str_eq(gpu_no_gpu_reason(), err.msg);
		return;
	}
	/* The GPU machine: a driver is installed, so a GPU must be found. */
	ck_assert_msg(rc == 0, "driver present but probe failed: %s", err.msg);
	ck_assert_int_ge(h->count, 1);
	ck_assert_int_gt(h->driver_version, 0);
	for (int i = 0; i < h->count; i++) {
		const struct gpu_info *g = &h->gpus[i];

		ck_assert_int_eq(g->index, i);
		ck_assert_ptr_eq(gpu_get(i), g);
		ck_assert(g->name[0] != '\0');
		ck_assert_int_ge(g->cc_major, 3);
		ck_assert_int_gt(g->sm_count, 0);
		ck_assert(g->total_mem_bytes > (1ull << 30));
		ck_assert_int_gt(g->l2_bytes, 0);
		ck_assert_int_gt(g->mem_bus_width_bits, 0);
		ck_assert_int_eq(g->warp_size, 32);
		ck_assert_int_eq(strncmp(g->uuid, "GPU-", 4), 0);
		ck_assert_uint_eq(strlen(g->uuid), 40);
		ck_assert(g->pci_bus_id[0] != '\0');
		ck_assert_int_eq(strncmp(g->arch, "sm_", 3), 0);
	}
	ck_assert_str_eq(gpu_no_gpu_reason(), "");
	ck_assert_int_eq(gpu_count(), h->count);
}
END_TEST

START_TEST(missing_library_is_named_in_the_reason)
{
	struct gpu_host h;
	struct kf_err err = {0};

	ck_assert_int_eq(gpu_probe_uncached("libkforge-no-such-cuda.so.1", &h, &err), KF_ENOGPU);
	ck_assert_str_eq(err.msg,
			 "libkforge-no-such-cuda.so.1 not found: no NVIDIA driver on this host");
	ck_assert_int_eq(h.count, 0);
}
END_TEST

START_TEST(library_without_driver_entry_points_is_refused)
{
	struct gpu_host h;
	struct kf_err err = {0};

	ck_assert_int_eq(gpu_probe_uncached("libm.so.6", &h, &err), KF_ENOGPU);
	ck_assert_ptr_nonnull(strstr(err.msg, "libm.so.6 lacks the CUDA driver API"));
}
END_TEST

START_TEST(toolkit_stub_library_fails_cuinit_with_its_name)
{
	static const char stub[] = "/usr/local/cuda/lib64/stubs/libcuda.so";
	struct gpu_host h;
	struct kf_err err = {0};

	if (access(stub, R_OK) != 0) {
		/* No toolkit here: nothing to load; the missing-library case
		 * above covers the path. */
		ck_assert_int_eq(gpu_probe_uncached(stub, &h, &err), KF_ENOGPU);
		return;
	}
	ck_assert_int_eq(gpu_probe_uncached(stub, &h, &err), KF_ENOGPU);
	ck_assert_ptr_nonnull(strstr(err.msg, "cuInit failed"));
	ck_assert_ptr_nonnull(strstr(err.msg, "stub"));
}
END_TEST

START_TEST(environment_can_force_no_gpu)
{
	struct gpu_host h;
	const struct gpu_host *hp = NULL;
	struct kf_err err = {0}, err2 = {0};

	setenv("KFORGE_NO_GPU", "1", 1);
	ck_assert_int_eq(gpu_probe_uncached(NULL, &h, &err), KF_ENOGPU);
	ck_assert_str_eq(err.msg, "no GPU: disabled by KFORGE_NO_GPU in the environment");
	/* the cached probe (first call in this forked test) agrees */
	ck_assert_int_eq(gpu_probe(&hp, &err2), KF_ENOGPU);
	ck_assert_str_eq(err2.msg, err.msg);
	ck_assert_int_eq(gpu_count(), 0);
}
END_TEST

static void *probe_thread(void *arg)
{
	const struct gpu_host *h = NULL;
	struct kf_err err = {0};
	int *rc = arg;

	*rc = gpu_probe(&h, &err);
	return (void *)h;
}

START_TEST(concurrent_first_probes_agree)
{
	pthread_t th[8];
	int rc[8];
	void *res[8];

	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, probe_thread, &rc[i]), 0);
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], &res[i]);
	for (int i = 1; i < 8; i++) {
		ck_assert_int_eq(rc[i], rc[0]);
		ck_assert_ptr_eq(res[i], res[0]);
	}
	ck_assert_int_eq(rc[0] == 0, driver_present());
}
END_TEST

static Suite *gpu_suite(void)
{
	Suite *s = suite_create("gpu");
	TCase *tc = tcase_create("probe");

	tcase_add_test(tc, probe_finds_the_gpus_or_says_why_not);
	tcase_add_test(tc, missing_library_is_named_in_the_reason);
	tcase_add_test(tc, library_without_driver_entry_points_is_refused);
	tcase_add_test(tc, toolkit_stub_library_fails_cuinit_with_its_name);
	tcase_add_test(tc, environment_can_force_no_gpu);
	tcase_add_test(tc, concurrent_first_probes_agree);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(gpu_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
