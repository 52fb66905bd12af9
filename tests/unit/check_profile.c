/* check_profile: profile_kernel without a GPU: the reader of ncu's raw CSV
 * on a report in ncu's --csv --page raw format (tests/data/ncu/), the rules
 * on metric sets (each finding's guide exists in knowledge/guides), ncu's
 * error words, and the answers that come before any GPU work: an unknown
 * size index, a size over the replay cap, no GPU. The run itself is
 * tests/proto/proto_profile.sh (mock libcuda and a stand-in ncu). */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "sandbox/profile/profile.h"
#include "tests/unit/fixture.h"

static void plain_report(struct profile_report *rep)
{
	size_t len;
	char *text = fixture_src_read("tests/data/ncu/raw-rmsnorm-plain.csv", &len);
	struct kf_err err = {0};
	ck_assert_msg(profile_csv_parse(text, len, rep, &err) == 0, "%s", err.msg);
	free(text);
}

START_TEST(csv_reads_the_recorded_report_with_units_and_separators)
{
	struct profile_report rep;
	plain_report(&rep);
	ck_assert_uint_eq(rep.kernels_len, 1);
	const struct profile_metrics *m = &rep.kernels[0];
	ck_assert_str_eq(m->kernel, "rmsnorm_plain");
	ck_assert_double_eq_tol(m->dram_read_bytes, 33.62e6, 1);     /* Mbyte */
	ck_assert_double_eq_tol(m->duration_ns, 51230, 0.01);	     /* usecond */
	ck_assert_double_eq_tol(m->shared_static_bytes, 1020, 0.01); /* Kbyte/block */
	ck_assert_double_eq(m->gld_requests, 1052672);		     /* "1,052,672" */
	ck_assert_double_eq(m->grid_size, 4096);
	ck_assert_double_eq_tol(m->sol_dram_pct, 27.41, 1e-9);
	ck_assert(isnan(m->hmma_pct)); /* "n/a" */
	ck_assert_double_eq(m->gmma_pct, 0);
	ck_assert_uint_eq(m->stalls_len, 18);
	int found = 0;
	for (size_t i = 0; i < m->stalls_len; i++)
		if (!strcmp(m->stalls[i].name, "long_scoreboard")) {
			ck_assert_double_eq_tol(m->stalls[i].per_inst, 21.37, 1e-9);
			found = 1;
		}
	ck_assert(found);
}
END_TEST

START_TEST(csv_handles_quotes_and_rejects_what_is_not_a_report)
{
	static const char quoted[] =
		"program output, with a comma\n"
		"\"ID\",\"Kernel Name\",\"dram__bytes_read.sum\",\"lts__t_sector_hit_rate.pct\"\n"
		"\"\",\"\",\"Kbyte\",\"%\"\n"
		"\"0\",\"k<\"\"a, b\"\">\",\"1,500.5\",\"87.5\"\n"
		"\"1\",\"second\",\"\",\"n/a\"\n";
	struct profile_report rep;
	struct kf_err err = {0};
	ck_assert_int_eq(profile_csv_parse(quoted, strlen(quoted), &rep, &err), 0);
	ck_assert_uint_eq(rep.kernels_len, 2);
	ck_assert_str_eq(rep.kernels[0].kernel, "k<\"a, b\">");
	ck_assert_double_eq_tol(rep.kernels[0].dram_read_bytes, 1500500, 1e-6);
	ck_assert_double_eq(rep.kernels[0].l2_hit_pct, 87.5);
	ck_assert(isnan(rep.kernels[1].dram_read_bytes));
	ck_assert(isnan(rep.kernels[0].sol_dram_pct)); /* not in the report */

	static const char none[] = "==ERROR== something went wrong\n";
	ck_assert_int_eq(profile_csv_parse(none, strlen(none), &rep, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "no CSV header"));
	static const char header_only[] = "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n"
					  "\"\",\"\",\"nsecond\"\n";
	kf_err_clear(&err);
	ck_assert_int_eq(profile_csv_parse(header_only, strlen(header_only), &rep, &err),
			 KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "no profiled launch"));
	kf_err_clear(&err);
	ck_assert_int_eq(profile_csv_parse(none, PROFILE_CSV_MAX_BYTES + 1, &rep, &err),
			 KF_ETOOBIG);
}
END_TEST

static int has_finding(const struct profile_findings *fs, const char *id, const char *guide)
{
	for (size_t i = 0; i < fs->len; i++)
		if (!strcmp(fs->f[i].id, id))
			return !guide || !strcmp(fs->f[i].guide, guide);
	return 0;
}

static int tries_guide(const struct profile_findings *fs, const char *guide)
{
	for (size_t i = 0; i < fs->try_len; i++)
		if (!strcmp(fs->f[fs->try_idx[i]].guide, guide))
			return 1;
	return 0;
}

/* Every guide a finding names is a guide of the knowledge base. */
static void guides_exist(const struct profile_findings *fs)
{
	for (size_t i = 0; i < fs->len; i++) {
		char rel[256], p[PATH_MAX];
		snprintf(rel, sizeof rel, "knowledge/guides/%s.md", fs->f[i].guide);
		fixture_src_path(p, sizeof p, rel);
		ck_assert_msg(access(p, R_OK) == 0, "finding %s names guide %s: no %s", fs->f[i].id,
			      fs->f[i].guide, p);
	}
}

START_TEST(rules_on_the_plain_rmsnorm_say_memory_latency_and_vector_loads)
{
	struct profile_report rep;
	plain_report(&rep);
	struct profile_findings fs;
	/* T=4096, D=4096 bf16: x read and y written once, w once */
	profile_rules(&rep.kernels[0], 2.0 * 4096 * 4096 * 2 + 4096 * 2, &fs);
	ck_assert_str_eq(fs.bound, "memory_latency");
	ck_assert_ptr_nonnull(strstr(fs.verdict, "fraction of DRAM speed of light"));
	ck_assert(has_finding(&fs, "dram_underused", "latency-hiding"));
	ck_assert(has_finding(&fs, "narrow_loads", "vector-access"));
	ck_assert(has_finding(&fs, "stalls", "latency-hiding"));
	ck_assert(!has_finding(&fs, "dram_excess", NULL)); /* 67 MB moved, 67 MB counted */
	ck_assert(!has_finding(&fs, "bank_conflicts", NULL));
	ck_assert_uint_eq(fs.try_len, 2);
	ck_assert(tries_guide(&fs, "latency-hiding"));
	ck_assert(tries_guide(&fs, "vector-access"));
	guides_exist(&fs);
}
END_TEST

/* Measured on an H200: the skill's fast RMSNorm and kforge's kernel move
 * 0.68x the cost model's bytes through DRAM while they run (the output is
 * still in L2 at their end), so the counters' DRAM share (52%, 55%)
 * understates how close their time is to the floor: the cost model's bytes
 * in their time are 76% and 83% of DRAM's speed of light. */
START_TEST(rules_on_the_measured_fast_rmsnorm_read_its_time_against_the_floor)
{
	size_t len;
	char *text = fixture_src_read("tests/data/ncu/h200-rmsnorm-fast.csv", &len);
	struct profile_report rep;
	struct kf_err err = {0};
	ck_assert_msg(profile_csv_parse(text, len, &rep, &err) == 0, "%s", err.msg);
	free(text);
	ck_assert_uint_eq(rep.kernels_len, 2);
	const double cost = 2.0 * 4096 * 4096 * 2 + 4096 * 2;
	const char *names[2] = {"rmsnorm_fast", "kf_rmsnorm_bf16"};
	const double lo[2] = {74, 81}, hi[2] = {78, 85};
	for (int k = 0; k < 2; k++) {
		const struct profile_metrics *m = &rep.kernels[k];
		ck_assert_str_eq(m->kernel, names[k]);
		ck_assert(m->sol_dram_pct < 60);
		struct profile_findings fs;
		profile_rules(m, cost, &fs);
		ck_assert_msg(fs.dram_cost_pct > lo[k] && fs.dram_cost_pct < hi[k], "%s: %.1f%%",
			      names[k], fs.dram_cost_pct);
		ck_assert_str_eq(fs.bound, "memory");
		ck_assert_ptr_nonnull(strstr(fs.verdict, "near the DRAM floor"));
		ck_assert_ptr_nonnull(strstr(fs.verdict, "stayed in L2"));
		ck_assert(has_finding(&fs, "dram_near_floor", "roofline"));
		ck_assert(!has_finding(&fs, "dram_underused", NULL));
		for (size_t i = 0; i < fs.len; i++)
			if (!strcmp(fs.f[i].id, "dram_near_floor"))
				ck_assert_ptr_nonnull(
					strstr(fs.f[i].text, "the spec's bytes in its time"));
		/* without a cost model only the counters speak */
		profile_rules(m, 0, &fs);
		ck_assert(isnan(fs.dram_cost_pct));
		ck_assert_str_eq(fs.bound, "memory_latency");
	}
}
END_TEST

/* A kernel near the DRAM floor: nothing but fewer bytes would help. */
START_TEST(rules_near_the_dram_floor_suggest_nothing)
{
	struct profile_metrics m;
	profile_metrics_init(&m);
	m.sol_dram_pct = 88;
	m.sol_memory_pct = 90;
	m.sol_compute_pct = 30;
	m.dram_read_bytes = 33.6e6;
	m.dram_write_bytes = 33.6e6;
	m.gld_sectors = 1.6e6;
	m.gld_requests = 1e5;
	m.occ_theoretical_pct = 100;
	m.occ_achieved_pct = 90;
	struct profile_findings fs;
	profile_rules(&m, 67.2e6, &fs);
	ck_assert_str_eq(fs.bound, "memory");
	ck_assert_ptr_nonnull(strstr(fs.verdict, "near the DRAM floor"));
	ck_assert(has_finding(&fs, "dram_near_floor", "roofline"));
	ck_assert(!has_finding(&fs, "narrow_loads", NULL));
	ck_assert_uint_eq(fs.try_len, 0);
	guides_exist(&fs);
}
END_TEST

/* One metric set per finding: the finding, its guide, first to try. */
START_TEST(rules_tie_each_problem_to_its_guide)
{
	struct profile_metrics m;
	struct profile_findings fs;
	profile_metrics_init(&m);
	m.sol_memory_pct = 70; /* shared-memory bound, DRAM idle */
	m.sol_l1_pct = 70;
	m.sol_dram_pct = 10;
	m.sol_compute_pct = 40;
	m.shared_ld_conflicts = 3e6;
	m.shared_ld_wavefronts = 4e6;
	profile_rules(&m, 0, &fs);
	ck_assert(has_finding(&fs, "bank_conflicts", "bank-conflicts"));
	ck_assert_str_eq(fs.f[fs.try_idx[0]].guide, "bank-conflicts");
	guides_exist(&fs);

	profile_metrics_init(&m);
	m.sol_memory_pct = 40;
	m.sol_dram_pct = 35;
	m.sol_compute_pct = 10;
	m.gld_bytes_used_pct = 12.5; /* one float of each sector */
	m.gld_sectors = 32e6;
	m.gld_requests = 1e6;
	profile_rules(&m, 0, &fs);
	ck_assert(has_finding(&fs, "uncoalesced", "coalescing"));
	ck_assert(tries_guide(&fs, "coalescing"));
	guides_exist(&fs);

	profile_metrics_init(&m);
	m.sol_compute_pct = 20;
	m.sol_memory_pct = 10;
	m.occ_theoretical_pct = 25;
	m.occ_achieved_pct = 24;
	m.limit_registers = 2;
	m.limit_shared = 8;
	m.limit_warps = 8;
	m.limit_blocks = 32;
	m.regs_per_thread = 128;
	m.local_ld_sectors = 1e5;
	m.local_st_sectors = 1e5;
	profile_rules(&m, 0, &fs);
	ck_assert_str_eq(fs.bound, "latency");
	ck_assert(has_finding(&fs, "occupancy_limited", "registers-spills"));
	/* no unit busy, compute ahead of memory, but the warps wait on their
	 * global loads (the plain RMSNorm's figures on an H200): memory latency */
	struct profile_metrics lat;
	profile_metrics_init(&lat);
	lat.sol_compute_pct = 42;
	lat.sol_memory_pct = 26;
	lat.sol_dram_pct = 21;
	lat.stalls_len = 3;
	lat.stalls[0] = (struct profile_stall){"selected", 1.0};
	lat.stalls[1] = (struct profile_stall){"long_scoreboard", 7.6};
	lat.stalls[2] = (struct profile_stall){"barrier", 1.2};
	struct profile_findings lf;
	profile_rules(&lat, 0, &lf);
	ck_assert_str_eq(lf.bound, "memory_latency");
	lat.stalls[1].per_inst = 0.5; /* the barrier leads: not a memory wait */
	profile_rules(&lat, 0, &lf);
	ck_assert_str_eq(lf.bound, "latency");
	ck_assert(has_finding(&fs, "local_memory", "registers-spills"));
	guides_exist(&fs);

	profile_metrics_init(&m);
	m.sol_compute_pct = 80;
	m.sol_memory_pct = 30;
	m.gmma_pct = 72;
	m.hmma_pct = 0;
	profile_rules(&m, 0, &fs);
	ck_assert_str_eq(fs.bound, "compute");
	ck_assert(has_finding(&fs, "tensor_pipe", "wgmma"));
	guides_exist(&fs);
}
END_TEST

START_TEST(ncu_words_are_sorted_into_reasons)
{
	ck_assert_int_eq(
		profile_ncu_error(
			"==ERROR== ERR_NVGPUCTRPERM - The user does not have permission "
			"to access NVIDIA GPU Performance Counters on the target device 0."),
		PROFILE_COUNTERS_DENIED);
	ck_assert_int_eq(profile_ncu_error("==ERROR== LibraryNotLoaded"), PROFILE_LIBRARY_MISSING);
	ck_assert_int_eq(profile_ncu_error("==PROF== Disconnected from process 1"),
			 PROFILE_AVAILABLE);
	char name[128];
	ck_assert_int_eq(profile_ncu_unknown_metric("==ERROR== Failed to find metric "
						    "sm__foo.sum\n",
						    NULL, name, sizeof name),
			 0);
	ck_assert_str_eq(name, "sm__foo.sum");
	/* another wording: the refused name found among those asked for */
	static const char list[] = "dram__bytes_read.sum,sm__bar.avg,sm__bar.avg.pct";
	ck_assert_int_eq(profile_ncu_unknown_metric("==PROF== sm__bar.avg fine\n"
						    "==ERROR== Metric sm__bar.avg.pct is not "
						    "supported on this chip\n",
						    list, name, sizeof name),
			 0);
	ck_assert_str_eq(name, "sm__bar.avg.pct");
	ck_assert_int_eq(profile_ncu_unknown_metric("all fine", list, name, sizeof name), -1);
	char p[256];
	struct kf_err err = {0};
	ck_assert_int_eq(profile_report_path("/d", "0123456789abcdef", p, sizeof p, &err), 0);
	ck_assert_str_eq(p, "/d/profiles/0123456789abcdef.csv");
	ck_assert_int_eq(profile_report_path("/d", "../../etc/passwd", p, sizeof p, &err),
			 KF_EINVAL);
	/* every metric asked for is read back into the struct */
	size_t n = 0;
	for (const char *const *m = profile_metric_names(); *m; m++)
		n++;
	ck_assert_uint_ge(n, 50);
}
END_TEST

START_TEST(bad_requests_are_refused_before_any_gpu_work)
{
	struct check_env env = {0};
	check_env_init(&env);
	struct profile_result res;
	struct profile_opts o = {.size_index = 3};
	struct kf_err err = {0};
	int gpu;
	json_t *spec = json_pack("{s:s, s:s, s:s, s:[{s:i, s:i}], s:[{s:s, s:[s], s:[i], "
				 "s:[s, s, s, s, s, s]}]}",
				 "op", "rmsnorm", "dtype", "bf16", "source", "x", "sizes", "T", 64,
				 "D", 128, "launch", "kernel", "k", "grid", "T", "block", 128,
				 "args", "y", "x", "w", "T", "D", "eps");
	ck_assert_ptr_nonnull(spec);
	ck_assert_int_eq(profile_kernel(&env, spec, &o, &res, &gpu, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "size: index 3, the spec has 1 sizes"));
	profile_result_fini(&res);
	json_decref(spec);
	/* 9 Mi rows of 32 f32: 2.25 GiB of tensors, twice with the baseline:
	 * over the replay cap */
	spec = json_pack("{s:s, s:s, s:s, s:[{s:I, s:i}], s:[{s:s, s:[s], s:[i], "
			 "s:[s, s, s, s, s, s]}]}",
			 "op", "rmsnorm", "dtype", "f32", "source", "x", "sizes", "T",
			 (json_int_t)(9 << 20), "D", 32, "launch", "kernel", "k", "grid", "T",
			 "block", 128, "args", "y", "x", "w", "T", "D", "eps");
	o.size_index = 0;
	o.baseline = 1;
	kf_err_clear(&err);
	ck_assert_int_eq(profile_kernel(&env, spec, &o, &res, &gpu, &err), KF_ETOOBIG);
	ck_assert_msg(strstr(err.msg, "with the baseline; profile_kernel takes at most 4.0 GiB"),
		      "%s", err.msg);
	profile_result_fini(&res);
	json_decref(spec);
	check_env_fini(&env);
}
END_TEST

START_TEST(no_gpu_is_said_in_words)
{
	struct check_env env = {0};
	check_env_init(&env);
	struct profile_result res;
	struct profile_opts o = {0};
	struct kf_err err = {0};
	int gpu = 7;
	json_t *spec = json_pack("{s:s, s:s, s:s, s:[{s:i, s:i}], s:[{s:s, s:[s], s:[i], "
				 "s:[s, s, s, s, s, s]}]}",
				 "op", "rmsnorm", "dtype", "bf16", "source", "x", "sizes", "T", 64,
				 "D", 128, "launch", "kernel", "k", "grid", "T", "block", 128,
				 "args", "y", "x", "w", "T", "D", "eps");
	int rc = profile_kernel(&env, spec, &o, &res, &gpu, &err);
	ck_assert_int_eq(rc, KF_ENOGPU);
	ck_assert_int_eq(res.unavailable, PROFILE_NO_GPU);
	ck_assert_ptr_nonnull(strstr(res.why, "no usable GPU"));
	ck_assert_int_eq(gpu, -1);
	profile_result_fini(&res);
	json_decref(spec);
	check_env_fini(&env);
}
END_TEST

START_TEST(no_ncu_names_where_it_looked)
{
	char p[512];
	struct kf_err err = {0};
	setenv("KFORGE_NCU", "/nonexistent/ncu", 1);
	ck_assert_int_eq(profile_ncu_find(p, sizeof p, &err), KF_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.msg, "KFORGE_NCU names /nonexistent/ncu"));
	char fake[PATH_MAX];
	setenv("KFORGE_NCU", fixture_src_path(fake, sizeof fake, "tests/data/ncu/ncu"), 1);
	kf_err_clear(&err);
	ck_assert_int_eq(profile_ncu_find(p, sizeof p, &err), 0);
	ck_assert_ptr_nonnull(strstr(p, "tests/data/ncu/ncu"));
	unsetenv("KFORGE_NCU");
}
END_TEST

/* A toolkit layout: bin/ncu a launcher script, the real ncu with its
 * target/ folder in nsight-compute-<version>/; the newest version wins. */
START_TEST(a_launcher_resolves_to_its_installation)
{
	char root[] = "/tmp/kforge-ncu-XXXXXX", p[PATH_MAX], want[PATH_MAX];
	struct kf_err err = {0};
	ck_assert_ptr_nonnull(mkdtemp(root));
	const char *dirs[] = {"bin", "nsight-compute-2025.1.0", "nsight-compute-2025.3.1",
			      "nsight-compute-2025.1.0/target", "nsight-compute-2025.3.1/target"};
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", root, dirs[i]);
		ck_assert_int_eq(mkdir(p, 0755), 0);
	}
	const char *exes[] = {"bin/ncu", "nsight-compute-2025.1.0/ncu",
			      "nsight-compute-2025.3.1/ncu"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof p, "%s/%s", root, exes[i]);
		FILE *f = fopen(p, "w");
		ck_assert_ptr_nonnull(f);
		fputs("#!/bin/sh\n", f);
		fclose(f);
		ck_assert_int_eq(chmod(p, 0755), 0);
	}
	snprintf(p, sizeof p, "%s/bin/ncu", root);
	setenv("KFORGE_NCU", p, 1);
	ck_assert_int_eq(profile_ncu_find(p, sizeof p, &err), 0);
	snprintf(want, sizeof want, "%s/nsight-compute-2025.3.1/ncu", root);
	ck_assert_str_eq(p, want);
	/* an installation's own ncu stays as it is */
	snprintf(p, sizeof p, "%s/nsight-compute-2025.1.0/ncu", root);
	setenv("KFORGE_NCU", p, 1);
	ck_assert_int_eq(profile_ncu_find(p, sizeof p, &err), 0);
	ck_assert_ptr_nonnull(strstr(p, "nsight-compute-2025.1.0/ncu"));
	unsetenv("KFORGE_NCU");
	fs_rm_tree(root);
}
END_TEST

static Suite *profile_suite(void)
{
	Suite *s = suite_create("profile");
	TCase *c = tcase_create("csv");
	tcase_add_test(c, csv_reads_the_recorded_report_with_units_and_separators);
	tcase_add_test(c, csv_handles_quotes_and_rejects_what_is_not_a_report);
	suite_add_tcase(s, c);
	c = tcase_create("rules");
	tcase_add_test(c, rules_on_the_plain_rmsnorm_say_memory_latency_and_vector_loads);
	tcase_add_test(c, rules_near_the_dram_floor_suggest_nothing);
	tcase_add_test(c, rules_on_the_measured_fast_rmsnorm_read_its_time_against_the_floor);
	tcase_add_test(c, rules_tie_each_problem_to_its_guide);
	tcase_add_test(c, ncu_words_are_sorted_into_reasons);
	suite_add_tcase(s, c);
	c = tcase_create("requests");
	tcase_add_test(c, bad_requests_are_refused_before_any_gpu_work);
	tcase_add_test(c, no_gpu_is_said_in_words);
	tcase_add_test(c, no_ncu_names_where_it_looked);
	tcase_add_test(c, a_launcher_resolves_to_its_installation);
	suite_add_tcase(s, c);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(profile_suite());
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
