/* check_judge: the anti-cheat judge's element-wise comparison
 * (check_compare in sandbox/check/check_compare.c) fed synthetic got/want
 * buffers: verdicts, mismatch indices, non-finite outputs and the
 * weak-reference signals; and check_judge_run's verdict struct (struct
 * check_run) for a harness report and an output file written here. No GPU;
 * runs in CI. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/op.h"
#include "sandbox/check/check.h"
#include "sandbox/check/check_spare.h"

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

START_TEST(phases_add_the_harness_own_and_the_rest_as_its_start)
{
	struct check_phases ph = {.reference_ms = 5};
	json_t *rep = json_pack("{s:{s:f, s:f, s:f, s:f}}", "phases", "module_load_ms", 1.0,
				"upload_ms", 2.0, "kernel_runs_ms", 30.0, "download_ms", 4.0);
	check_phases_add_run(&ph, rep, 50);
	check_phases_add_run(&ph, rep, 40);
	ck_assert(ph.module_load_ms == 2 && ph.upload_ms == 4 && ph.kernel_runs_ms == 60 &&
		  ph.download_ms == 8);
	ck_assert(ph.harness_start_ms == 13 + 3);
	ck_assert(ph.reference_ms == 5 && ph.compile_ms == 0);
	/* Each run is counted; a report that says "spare" counts as one. */
	ck_assert(ph.harness_runs == 2 && ph.harness_spares == 0);
	json_object_set_new(rep, "spare", json_true());
	check_phases_add_run(&ph, rep, 37);
	check_phases_count_run(&ph, NULL);
	ck_assert(ph.harness_runs == 4 && ph.harness_spares == 1);
	json_object_del(rep, "spare");
	/* Phases past the wall time (rounding) leave the start at 0 rather
	 * than below; a run that died before reporting is all start. */
	struct check_phases z = {0};
	check_phases_add_run(&z, rep, 36.5);
	ck_assert(z.harness_start_ms == 0 && z.kernel_runs_ms == 30);
	check_phases_add_run(&z, NULL, 12);
	ck_assert(z.harness_start_ms == 12 && z.kernel_runs_ms == 30);
	/* Nonsense from the harness counts as nothing. */
	json_object_set_new(json_object_get(rep, "phases"), "upload_ms", json_real(-7));
	json_object_set_new(json_object_get(rep, "phases"), "download_ms", json_string("x"));
	struct check_phases w = {0};
	check_phases_add_run(&w, rep, 100);
	ck_assert(w.upload_ms == 0 && w.download_ms == 0 && w.harness_start_ms == 69);
	json_decref(rep);
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

/* --- check_judge_run: one run judged into struct check_run ------------- */

static struct spec *jspec;
static struct spec_bound jb;
static char jdir[] = "/tmp/kforge-judge-XXXXXX";
static double jwant[8];

static void run_setup(void)
{
	static const char *SPEC =
		"{\"source\": \"extern \\\"C\\\" __global__ void k(float *y, const float *x, "
		"int n) {}\", \"sizes\": [{\"N\": 8}], \"tensors\": {"
		"\"x\": {\"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"input\"},"
		"\"y\": {\"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"output\"}},"
		"\"launch\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [32], "
		"\"args\": [\"y\", \"x\", \"N\"]}], \"reference\": {\"torch\": \"x\"}}";
	struct spec_limits lim;
	spec_limits_default(&lim);
	struct kf_err err = {0};
	ck_assert_msg(spec_parse_text(SPEC, strlen(SPEC), &lim, op_find, &jspec, &err) == 0, "%s",
		      err.msg);
	int64_t n = 8;
	ck_assert_msg(spec_bind(jspec, &n, &lim, "sizes[0]", &jb, &err) == 0, "%s", err.msg);
	ck_assert_ptr_nonnull(mkdtemp(jdir));
	for (int i = 0; i < 8; i++)
		jwant[i] = 1.0 + i;
}

static void run_teardown(void)
{
	char path[128];
	snprintf(path, sizeof path, "%s/y.bin", jdir);
	unlink(path);
	rmdir(jdir);
	memcpy(jdir + strlen(jdir) - 6, "XXXXXX", 6);
	spec_free(jspec);
}

/* Writes y (8 floats) as the candidate's output file. */
static void write_y(const float *y)
{
	char path[128];
	snprintf(path, sizeof path, "%s/y.bin", jdir);
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(y, sizeof *y, 8, f), 8);
	fclose(f);
}

static int judge(const char *report, struct check_run *run, struct check_fired *fired,
		 struct check_flags *flags)
{
	json_t *tr = json_loads(report, 0, NULL);
	ck_assert_ptr_nonnull(tr);
	double *want[SPEC_MAX_TENSORS] = {0};
	want[spec_tensor_index(jspec, "y")] = jwant;
	double max_rel = 0;
	int pass = check_judge_run(jspec, jdir, &jb, tr, want, run, fired, flags, &max_rel);
	json_decref(tr);
	return pass;
}

static const char *Y_OK = "{\"outputs\": {\"y\": {\"file\": \"y.bin\"}}}";

START_TEST(judge_run_passes_matching_output)
{
	float y[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	write_y(y);
	struct check_run run = {0};
	struct check_fired fired = {0};
	struct check_flags flags = {0};
	ck_assert_int_eq(judge(Y_OK, &run, &fired, &flags), 1);
	ck_assert_int_eq(run.passed, 1);
	ck_assert_int_eq(run.judged, 1);
	ck_assert_uint_eq(run.safeguards_len, 0);
	ck_assert_uint_eq(run.outputs_len, 1);
	ck_assert_str_eq(run.outputs[0].name, "y");
	ck_assert_uint_eq(run.outputs[0].elements, 8);
	ck_assert_uint_eq(run.outputs[0].mismatches, 0);
	ck_assert_uint_eq(fired.len, 0);
	ck_assert_uint_eq(flags.len, 0);
	check_run_fini(&run);
}
END_TEST

/* An output file the judge cannot map as the tensor's bytes (missing,
 * cut short, a link) is the harness's error, named, not a comparison. */
START_TEST(judge_run_names_an_output_file_it_cannot_map)
{
	char path[128], other[160];
	snprintf(path, sizeof path, "%s/y.bin", jdir);
	const char *want[3] = {"output y missing", "output y: file has the wrong size",
			       "output y missing"};
	for (int k = 0; k < 3; k++) {
		unlink(path);
		if (k == 1) {
			FILE *f = fopen(path, "wb");
			ck_assert_ptr_nonnull(f);
			ck_assert_uint_eq(fwrite(jwant, 4, 7, f), 7); /* 28 of 32 bytes */
			fclose(f);
		} else if (k == 2) {
			float y[8] = {1, 2, 3, 4, 5, 6, 7, 8};
			write_y(y);
			snprintf(other, sizeof other, "%s/real.bin", jdir);
			ck_assert_int_eq(rename(path, other), 0);
			ck_assert_int_eq(symlink("real.bin", path), 0);
		}
		struct check_run run = {0};
		struct check_fired fired = {0};
		struct check_flags flags = {0};
		ck_assert_int_eq(judge(Y_OK, &run, &fired, &flags), 0);
		ck_assert_uint_eq(run.safeguards_len, 1);
		ck_assert_str_eq(run.safeguards[0].name, "harness_error");
		ck_assert_msg(strstr(run.safeguards[0].message, want[k]), "%s",
			      run.safeguards[0].message);
		ck_assert_uint_eq(run.outputs_len, 0);
		check_run_fini(&run);
	}
	unlink(other);
}
END_TEST

START_TEST(judge_run_fires_mismatch_with_coordinates)
{
	float y[8] = {1, 2, 3, 40, 5, 6, 7, 8};
	write_y(y);
	struct check_run run = {0};
	struct check_fired fired = {0};
	struct check_flags flags = {0};
	ck_assert_int_eq(judge(Y_OK, &run, &fired, &flags), 0);
	ck_assert_int_eq(run.passed, 0);
	ck_assert_uint_eq(run.safeguards_len, 1);
	ck_assert_str_eq(run.safeguards[0].name, "mismatch");
	ck_assert_ptr_nonnull(strstr(run.safeguards[0].message, "y: 1 of 8 elements"));
	ck_assert_ptr_nonnull(strstr(run.safeguards[0].message, "first at [3]: got 40"));
	ck_assert_uint_eq(run.outputs[0].mismatches, 1);
	ck_assert_uint_eq(run.outputs[0].first_len, 1);
	ck_assert_str_eq(run.outputs[0].first[0].at, "[3]");
	ck_assert(run.outputs[0].first[0].got == 40 && run.outputs[0].first[0].want == 4);
	ck_assert_uint_eq(fired.len, 1);
	ck_assert_str_eq(fired.name[0], "mismatch");
	check_run_fini(&run);
}
END_TEST

START_TEST(judge_run_fires_coverage_before_comparing_and_records_names_once)
{
	float y[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	write_y(y);
	const char *rep = "{\"outputs\": {\"y\": {\"file\": \"y.bin\", \"unwritten\": 2, "
			  "\"first_unwritten\": [6]}}}";
	struct check_run a = {0}, b = {0};
	struct check_fired fired = {0};
	struct check_flags flags = {0};
	ck_assert_int_eq(judge(rep, &a, &fired, &flags), 0);
	ck_assert_int_eq(judge(rep, &b, &fired, &flags), 0);
	ck_assert_uint_eq(a.safeguards_len, 1);
	ck_assert_str_eq(a.safeguards[0].name, "coverage");
	ck_assert_ptr_nonnull(strstr(a.safeguards[0].message, "2 of 8 elements never written "
							      "(first at [6])"));
	ck_assert_uint_eq(fired.len, 1);
	check_run_fini(&a);
	check_run_fini(&b);
}
END_TEST

START_TEST(judge_run_flags_a_reference_zeros_would_pass_once)
{
	for (int i = 0; i < 8; i++)
		jwant[i] = 1e-9 * i;
	float y[8] = {0};
	for (int i = 0; i < 8; i++)
		y[i] = (float)jwant[i];
	write_y(y);
	struct check_run run = {0};
	struct check_fired fired = {0};
	struct check_flags flags = {0};
	ck_assert_int_eq(judge(Y_OK, &run, &fired, &flags), 1);
	ck_assert_uint_eq(flags.len, 1);
	const char *m = check_flag_get(&flags, "weak_reference");
	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(strstr(m, "a kernel writing zeros would pass"));
	/* first message wins */
	check_flag_set(&flags, "weak_reference", 0, "other");
	ck_assert_str_eq(check_flag_get(&flags, "weak_reference"), m);
	check_run_fini(&run);
}
END_TEST

START_TEST(flag_set_replaces_in_place_when_asked)
{
	struct check_flags flags = {0};
	check_flag_set(&flags, "a", 0, "one");
	check_flag_set(&flags, "b", 0, "two");
	check_flag_set(&flags, "a", 1, "three");
	ck_assert_uint_eq(flags.len, 2);
	ck_assert_str_eq(flags.f[0].name, "a");
	ck_assert_str_eq(flags.f[0].message, "three");
	ck_assert_ptr_null(check_flag_get(&flags, "c"));
}
END_TEST

/* The default watchdog follows the work: the skill's RMSNorm gets the
 * floor, a large GEMM minutes, the cap holds, the host's bytes count. */
START_TEST(watchdog_follows_the_work_with_a_floor_and_a_cap)
{
	struct spec_bound b = {0};
	b.cost_bytes = 2.0 * 4096 * 4096 * 2; /* RMSNorm T=4096, D=4096 bf16 */
	b.cost_flops = -1;
	b.device_bytes = (uint64_t)b.cost_bytes;
	ck_assert_uint_eq(check_work_timeout_ms(&b, 10), CHECK_MIN_TIMEOUT_MS);
	memset(&b, 0, sizeof b);
	b.cost_flops = 2.0 * 8192 * 8192 * 8192; /* GEMM: 137 ms at 8 TFLOP/s */
	b.cost_bytes = 3.0 * 8192 * 8192 * 2;
	unsigned t = check_work_timeout_ms(&b, 10);
	ck_assert_uint_gt(t, 100000); /* 100 floors per launch, 10 launches */
	ck_assert_uint_lt(t, CHECK_MAX_TIMEOUT_MS);
	ck_assert_uint_eq(check_work_timeout_ms(&b, 1000), CHECK_MAX_TIMEOUT_MS);
	memset(&b, 0, sizeof b);
	b.cost_flops = -1;
	b.device_bytes = 4ull << 30; /* the host's part alone: 43 s */
	t = check_work_timeout_ms(&b, 10);
	ck_assert_uint_gt(t, 40000);
	ck_assert_uint_lt(t, 50000);
}
END_TEST

/* More elements than one chunk of the parallel comparison (CHECK_PAR_CHUNK,
 * 65536): what it reports is what one pass in index order finds. */
#define BIG (3 * 65536 + 17)

START_TEST(compare_across_chunks_reports_what_one_pass_would)
{
	double *g = malloc(BIG * sizeof *g), *w = malloc(BIG * sizeof *w);
	ck_assert(g && w);
	for (int i = 0; i < BIG; i++)
		w[i] = g[i] = 2.0 + sin(0.001 * i);
	g[100] = NAN;
	g[65535] += 0.5;
	w[65536] = w[131077] = 1.0; /* the same largest excess twice: the first wins */
	g[65536] = g[131077] = 1.7;
	g[BIG - 7] -= 0.1;
	double max_abs = 0, max_rel = 0, num = 0, den = 0;
	for (int i = 0; i < BIG; i++)
		if (isfinite(g[i])) {
			double d = fabs(g[i] - w[i]);
			max_abs = d > max_abs ? d : max_abs;
			max_rel = d / fabs(w[i]) > max_rel ? d / fabs(w[i]) : max_rel;
			num += d * d;
			den += w[i] * w[i];
		}
	struct check_cmp c, c2;
	check_compare(g, w, BIG, 1e-3, 1e-3, &c);
	check_compare(g, w, BIG, 1e-3, 1e-3, &c2);
	ck_assert_uint_eq(c.n, BIG);
	ck_assert_uint_eq(c.mismatches, 5);
	ck_assert_uint_eq(c.nonfinite, 1);
	ck_assert_uint_eq(c.first_len, 5);
	const uint64_t first[5] = {100, 65535, 65536, 131077, BIG - 7};
	for (int q = 0; q < 5; q++) {
		ck_assert_uint_eq(c.first[q], first[q]);
		ck_assert(c.first_got[q] == g[first[q]] || (q == 0 && isnan(c.first_got[q])));
		ck_assert(c.first_want[q] == w[first[q]]);
	}
	ck_assert_uint_eq(c.worst, 65536);
	ck_assert(c.max_abs == max_abs && c.max_rel == max_rel);
	ck_assert(fabs(c.rel_l2 - sqrt(num / den)) <= 1e-12 * sqrt(num / den));
	ck_assert_int_eq(c.zeros_would_pass, 0);
	ck_assert_int_eq(c.constant_would_pass, 0);
	ck_assert(memcmp(&c, &c2, sizeof c) == 0); /* the same bits every time */
	free(g);
	free(w);
}
END_TEST

/* An output file's raw elements compared a block at a time give the
 * comparison of the same elements converted to float64 first, bit for
 * bit: mismatches at block and chunk edges, a NaN, the sums. */
START_TEST(compare_raw_matches_the_comparison_of_converted_elements)
{
	const enum kf_dtype dts[] = {KF_DT_BF16, KF_DT_F16, KF_DT_F32, KF_DT_I32};
	double *g = malloc(BIG * sizeof *g), *w = malloc(BIG * sizeof *w);
	void *raw = malloc(BIG * 8);
	ck_assert(g && w && raw);
	for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
		enum kf_dtype dt = dts[d];
		for (int i = 0; i < BIG; i++) {
			w[i] = dt == KF_DT_I32 ? (double)(i % 17 - 8) : 2.0 + sin(0.001 * i);
			dtype_store(dt, raw, (size_t)i, w[i]);
		}
		const int bad[] = {0, 1023, 1024, 65535, 65536, BIG - 1};
		for (size_t q = 0; q < sizeof bad / sizeof bad[0]; q++)
			dtype_store(dt, raw, (size_t)bad[q], w[bad[q]] + 3.0);
		if (dt != KF_DT_I32)
			dtype_store(dt, raw, 2047, NAN);
		for (int i = 0; i < BIG; i++)
			g[i] = dtype_load(dt, raw, (size_t)i);
		struct check_cmp c, r;
		check_compare(g, w, BIG, 1e-2, 1e-2, &c);
		check_compare_raw(dt, raw, w, BIG, 1e-2, 1e-2, &r);
		ck_assert_uint_eq(r.mismatches, dt == KF_DT_I32 ? 6 : 7);
		ck_assert_uint_eq(r.first[1], 1023);
		ck_assert_uint_eq(r.first[2], 1024);
		ck_assert_msg(memcmp(&c, &r, sizeof c) == 0, "dtype %s differs", dtype_name(dt));
	}
	free(g);
	free(w);
	free(raw);
}
END_TEST

/* KFORGE_HARNESS_SPARES: unset or empty is the default, 0 to the cap is
 * taken, anything else is refused naming the value and the range. */
START_TEST(spares_count_reads_its_variable_and_refuses_bad_values)
{
	struct kf_err e = {0};
	int n = -1;
	unsetenv("KFORGE_HARNESS_SPARES");
	ck_assert_int_eq(check_spares_count(&n, &e), 0);
	ck_assert_int_eq(n, CHECK_SPARES_DEFAULT);
	setenv("KFORGE_HARNESS_SPARES", "0", 1);
	ck_assert_int_eq(check_spares_count(&n, &e), 0);
	ck_assert_int_eq(n, 0);
	setenv("KFORGE_HARNESS_SPARES", "4", 1);
	ck_assert_int_eq(check_spares_count(&n, &e), 0);
	ck_assert_int_eq(n, 4);
	const char *bad[] = {"5", "-1", "two", "1x"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		setenv("KFORGE_HARNESS_SPARES", bad[i], 1);
		memset(&e, 0, sizeof e);
		ck_assert_int_eq(check_spares_count(&n, &e), KF_EINVAL);
		ck_assert_msg(strstr(e.msg, bad[i]) && strstr(e.msg, "from 0 to 4"), "%s", e.msg);
	}
	unsetenv("KFORGE_HARNESS_SPARES");
}
END_TEST

static Suite *judge_suite(void)
{
	Suite *s = suite_create("judge");
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
	tcase_add_test(tc, compare_across_chunks_reports_what_one_pass_would);
	tcase_add_test(tc, compare_raw_matches_the_comparison_of_converted_elements);
	suite_add_tcase(s, tc);
	TCase *ph = tcase_create("phases");
	tcase_add_test(ph, phases_add_the_harness_own_and_the_rest_as_its_start);
	tcase_add_test(ph, spares_count_reads_its_variable_and_refuses_bad_values);
	suite_add_tcase(s, ph);
	TCase *wd = tcase_create("watchdog");
	tcase_add_test(wd, watchdog_follows_the_work_with_a_floor_and_a_cap);
	suite_add_tcase(s, wd);
	TCase *fi = tcase_create("format_index");
	tcase_add_test(fi, format_index_writes_row_major_coordinates);
	suite_add_tcase(s, fi);
	TCase *jr = tcase_create("judge_run");
	tcase_add_checked_fixture(jr, run_setup, run_teardown);
	tcase_add_test(jr, judge_run_passes_matching_output);
	tcase_add_test(jr, judge_run_names_an_output_file_it_cannot_map);
	tcase_add_test(jr, judge_run_fires_mismatch_with_coordinates);
	tcase_add_test(jr, judge_run_fires_coverage_before_comparing_and_records_names_once);
	tcase_add_test(jr, judge_run_flags_a_reference_zeros_would_pass_once);
	tcase_add_test(jr, flag_set_replaces_in_place_when_asked);
	suite_add_tcase(s, jr);
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
