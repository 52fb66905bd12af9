/* check_dataset: sandbox/dataset over a state.db in a temporary directory
 * filled with check, benchmark and compile runs shaped like the harness's
 * answers: which runs make a record (and every way one is refused), the
 * cheat suite of tests/gpu/cheats never exported even with a passing
 * benchmark beside it, deduplication by normalized source, the filters,
 * lineage, and the export directory (refusal, --force, the card). */
#include <check.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/compile/cache.h"
#include "sandbox/dataset/dataset.h"
#include "sandbox/history/history.h"
#include "tests/unit/fixture.h"

static char dir[256];
static struct history *h;

static void setup(void)
{
	fixture_dir_new(dir, sizeof(dir), "dataset");
	h = fixture_history_open(dir);
}

static void teardown(void)
{
	history_close(h);
	fixture_dir_remove(dir);
}

static const char SRC[] =
	"// scale\nextern \"C\" __global__ void scale(float *y, const float *x, float s, int n)\n"
	"{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = s * x[i]; }\n";

/* A spec of source src (the rest fixed). Returns new. */
static json_t *spec_of(const char *src)
{
	return json_pack("{s:s, s:s, s:[{s:i}], s:{s:s}, s:s}", "source", src, "arch", "sm_90",
			 "sizes", "N", 1000, "reference", "torch", "y = s * x", "dtype", "f32");
}

/* A passing check answer: two sizes, the second the odd one. */
static json_t *check_ok(void)
{
	return json_pack("{s:s, s:b, s:[{s:{s:i}, s:b, s:b, s:[{s:i, s:{s:{s:f, s:f}}}]},"
			 "{s:{s:i}, s:b, s:b, s:[]}], s:[], s:{}, s:s, s:{s:s}}",
			 "summary", "passed", "passed", 1, "sizes", "sizes", "N", 1000, "odd_size",
			 0, "passed", 1, "trials", "trial", 0, "outputs", "y", "max_abs_err", 1e-7,
			 "max_rel_err", 2e-7, "sizes", "N", 4099, "odd_size", 1, "passed", 1,
			 "trials", "safeguards_fired", "flags", "reference", "torch", "compile",
			 "arch", "sm_90");
}

/* A passing benchmark answer with speedup sp. */
static json_t *bench_ok(double sp)
{
	return json_pack("{s:s, s:b, s:{s:f, s:[f,f]}, s:{s:f}, s:{s:f, s:f, s:f, s:s},"
			 "s:[{s:{s:i}, s:[], s:{s:f, s:[f,f]}, s:{s:f, s:f, s:f}, s:f, s:f,"
			 " s:b, s:b, s:s}], s:[], s:{}, s:s, s:s, s:{s:i, s:i}}",
			 "summary", "timed", "passed", 1, "candidate", "median_us", 10.0, "ci95_us",
			 9.5, 10.5, "baseline", "median_us", 10.0 * sp, "speedup", "value", sp,
			 "ci95_lo", sp * 0.95, "ci95_hi", sp * 1.05, "verdict", "faster", "sizes",
			 "sizes", "N", 1000, "safeguards", "candidate", "median_us", 10.0,
			 "ci95_us", 9.5, 10.5, "speedup", "value", sp, "ci95_lo", sp * 0.95,
			 "ci95_hi", sp * 1.05, "roofline_floor_us", 5.0, "gbs", 800.0,
			 "below_floor", 0, "verified", 1, "bound", "memory", "safeguards_fired",
			 "flags", "method", "CUDA events", "baseline_kind", "op", "device",
			 "cc_major", 9, "cc_minor", 0);
}

/* Records a run of kind with spec and result (both taken) and returns its
 * id in id; the source hash is that of spec.source, as runs_record makes
 * it. */
static void add(enum history_kind kind, enum history_status st, json_t *spec, json_t *result,
		const char *parent, const char *device, char id[HISTORY_ID_BYTES])
{
	struct history_run run = {0};
	struct cache_sha256 s;
	char hash[CACHE_ID_LEN + 1];
	const char *src = json_string_value(json_object_get(spec, "source"));
	struct kf_err err = {0};

	cache_sha256_init(&s);
	cache_sha256_update(&s, src, strlen(src));
	cache_sha256_final_hex(&s, hash);
	run.kind = kind;
	run.status = st;
	run.kernels = (char *)"scale";
	run.source_hash = hash;
	run.device_name = (char *)(device ? device : "NVIDIA H200");
	run.spec = spec;
	run.result = result;
	run.parent = (char *)parent;
	run.description = (char *)"scale: y = s * x";
	run.env = json_pack("{s:s, s:s, s:s}", "kforge", "0.1.0", "cuda", "13.0.88", "driver",
			    "13.0");
	ck_assert_msg(history_add(h, &run, &err) == 0, "%s", err.msg);
	if (id)
		memcpy(id, run.id, HISTORY_ID_BYTES);
	json_decref(run.env);
	json_decref(spec);
	json_decref(result);
}

/* A verified pair (passing check and benchmark) of src with speedup sp;
 * the benchmark's id in id. */
static void add_pair(const char *src, double sp, const char *parent, char id[HISTORY_ID_BYTES])
{
	add(HISTORY_CHECK, HISTORY_OK, spec_of(src), check_ok(), NULL, NULL, NULL);
	add(HISTORY_BENCH, HISTORY_OK, spec_of(src), bench_ok(sp), parent, NULL, id);
}

static int collect(void *arg, const json_t *rec, struct kf_err *err)
{
	(void)err;
	json_array_append((json_t *)arg, (json_t *)rec);
	return 0;
}

/* Exports with f (NULL: everything) and returns the records (new). */
static json_t *export_all(const struct dataset_filter *f, struct dataset_stats *st)
{
	struct dataset_filter all;
	json_t *recs = json_array();
	struct kf_err err = {0};

	dataset_filter_init(&all);
	ck_assert_msg(dataset_export(h, f ? f : &all, collect, recs, st, &err) == 0, "%s", err.msg);
	return recs;
}

START_TEST(a_verified_kernel_becomes_one_whole_record)
{
	char bid[HISTORY_ID_BYTES];
	struct dataset_stats st;
	json_t *recs, *r;

	add(HISTORY_COMPILE, HISTORY_OK, spec_of(SRC),
	    json_pack("{s:s, s:[{s:s, s:i, s:i}]}", "summary", "ok", "kernels", "name", "scale",
		      "registers", 16, "spill_store_bytes", 0),
	    NULL, NULL, NULL);
	add_pair(SRC, 1.8, NULL, bid);
	recs = export_all(NULL, &st);
	ck_assert_uint_eq(json_array_size(recs), 1);
	ck_assert_uint_eq(st.exported, 1);
	r = json_array_get(recs, 0);
	ck_assert_str_eq(json_string_value(json_object_get(r, "source")), SRC);
	ck_assert_ptr_null(json_object_get(json_object_get(r, "spec"), "source"));
	ck_assert_str_eq(
		json_string_value(json_object_get(json_object_get(r, "task"), "description")),
		"scale: y = s * x");
	ck_assert_str_eq(json_string_value(json_object_get(r, "arch")), "sm_90");
	ck_assert_str_eq(
		json_string_value(json_object_get(json_object_get(r, "versions"), "driver")),
		"13.0");
	ck_assert_int_eq(
		json_integer_value(json_object_get(
			json_array_get(json_object_get(json_object_get(r, "compile"), "kernels"),
				       0),
			"registers")),
		16);
	ck_assert(json_is_true(json_object_get(json_object_get(r, "check"), "passed")));
	ck_assert_int_eq(
		json_integer_value(json_object_get(json_object_get(r, "check"), "trials_per_size")),
		1);
	ck_assert_str_eq(
		json_string_value(json_object_get(json_object_get(r, "benchmark"), "run_id")), bid);
	ck_assert(json_real_value(json_object_get(json_object_get(r, "benchmark"), "speedup")) ==
		  1.8);
	/* floor 5 us, median 10 us: 50% of the roofline floor */
	ck_assert(json_real_value(json_object_get(
			  json_array_get(json_object_get(json_object_get(r, "benchmark"), "sizes"),
					 0),
			  "pct_of_roofline")) == 50.0);
	ck_assert_str_eq(json_string_value(json_object_get(r, "license")), DATASET_LICENSE);
	json_decref(recs);
}
END_TEST

/* Every way a benchmark is refused, each with a passing benchmark beside a
 * check that does not vouch for it (or the other way round). */
START_TEST(unverified_benchmarks_are_left_out)
{
	struct dataset_stats st;
	json_t *recs, *res, *spec;
	char src[512];
	int n = 0;

#define VARIANT() (snprintf(src, sizeof(src), "%s// variant %d\n", SRC, n++), src)
	/* the check failed */
	res = check_ok();
	json_object_set_new(res, "passed", json_false());
	add(HISTORY_CHECK, HISTORY_FAILED, spec_of(VARIANT()), res, NULL, NULL, NULL);
	add(HISTORY_BENCH, HISTORY_OK, spec_of(src), bench_ok(3), NULL, NULL, NULL);
	/* no check at all */
	add(HISTORY_BENCH, HISTORY_OK, spec_of(VARIANT()), bench_ok(3), NULL, NULL, NULL);
	/* the check was of another reference */
	spec = spec_of(VARIANT());
	json_object_set_new(spec, "reference", json_pack("{s:s}", "torch", "y = x"));
	add(HISTORY_CHECK, HISTORY_OK, spec, check_ok(), NULL, NULL, NULL);
	add(HISTORY_BENCH, HISTORY_OK, spec_of(src), bench_ok(3), NULL, NULL, NULL);
	/* the check ran without the odd size */
	res = check_ok();
	json_array_remove(json_object_get(res, "sizes"), 1);
	add(HISTORY_CHECK, HISTORY_OK, spec_of(VARIANT()), res, NULL, NULL, NULL);
	add(HISTORY_BENCH, HISTORY_OK, spec_of(src), bench_ok(3), NULL, NULL, NULL);
	/* the check's reference was too weak to tell */
	res = check_ok();
	json_object_set_new(json_object_get(res, "flags"), "weak_reference", json_string("tiny"));
	add(HISTORY_CHECK, HISTORY_OK, spec_of(VARIANT()), res, NULL, NULL, NULL);
	add(HISTORY_BENCH, HISTORY_OK, spec_of(src), bench_ok(3), NULL, NULL, NULL);
	/* the benchmark timed under the roofline floor */
	res = bench_ok(40);
	json_object_set_new(json_array_get(json_object_get(res, "sizes"), 0), "below_floor",
			    json_true());
	add(HISTORY_CHECK, HISTORY_OK, spec_of(VARIANT()), check_ok(), NULL, NULL, NULL);
	add(HISTORY_BENCH, HISTORY_OK, spec_of(src), res, NULL, NULL, NULL);
	/* a size not verified after timing */
	res = bench_ok(3);
	json_object_set_new(json_array_get(json_object_get(res, "sizes"), 0), "verified",
			    json_false());
	add(HISTORY_CHECK, HISTORY_OK, spec_of(VARIANT()), check_ok(), NULL, NULL, NULL);
	add(HISTORY_BENCH, HISTORY_OK, spec_of(src), res, NULL, NULL, NULL);
#undef VARIANT
	recs = export_all(NULL, &st);
	ck_assert_uint_eq(json_array_size(recs), 0);
	ck_assert_uint_eq(st.scanned, 7);
	ck_assert_uint_eq(st.unverified, 7);
	json_decref(recs);
}
END_TEST

/* Reads path whole. Returns new text (free). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	ck_assert_msg(f != NULL, "cannot read %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

/* The spec of a cheat file with its "file:" sources inlined. Returns new;
 * *expect gets the cheat's "_expect" (new). */
static json_t *cheat_spec(const char *path, json_t **expect)
{
	json_t *spec = json_load_file(path, 0, NULL);
	json_t *parts[2];
	char file[1024], *slash;

	ck_assert_msg(spec != NULL, "%s does not parse", path);
	*expect = json_incref(json_object_get(spec, "_expect"));
	json_object_del(spec, "_expect");
	json_object_del(spec, "_args");
	parts[0] = spec;
	parts[1] = json_object_get(spec, "reference");
	for (int i = 0; i < 2; i++) {
		const char *v = json_string_value(json_object_get(parts[i], "source"));
		char *text;

		if (!v || strncmp(v, "file:", 5) != 0)
			continue;
		snprintf(file, sizeof(file), "%s", path);
		slash = strrchr(file, '/');
		snprintf(slash + 1, sizeof(file) - (size_t)(slash + 1 - file), "%s", v + 5);
		text = slurp(file);
		json_object_set_new(parts[i], "source", json_string(text));
		free(text);
	}
	return spec;
}

/* The cheat suite's kernels, each with the check verdict the GPU suite
 * expects of it (a fired safeguard, or zeros_tiny's weak_reference flag)
 * and a benchmark that passed, the worst case: none is exported; an honest
 * kernel beside them is. */
START_TEST(no_kernel_of_the_cheat_suite_is_ever_exported)
{
	const char *src_root = getenv("KFORGE_SRC");
	char pattern[1024];
	glob_t g;
	json_t *recs;
	struct dataset_stats st;

	snprintf(pattern, sizeof(pattern), "%s/tests/gpu/cheats/*.json", src_root ? src_root : ".");
	ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
	ck_assert_uint_ge(g.gl_pathc, 10);
	for (size_t i = 0; i < g.gl_pathc; i++) {
		json_t *expect, *spec = cheat_spec(g.gl_pathv[i], &expect), *res = check_ok();
		const char *guard = json_string_value(json_object_get(expect, "safeguard"));
		const char *flag = json_string_value(json_object_get(expect, "flag"));

		ck_assert_msg(guard || flag, "%s expects neither a safeguard nor a flag",
			      g.gl_pathv[i]);
		if (guard) {
			json_object_set_new(res, "passed", json_false());
			json_array_append_new(json_object_get(res, "safeguards_fired"),
					      json_string(guard));
		} else {
			json_object_set_new(json_object_get(res, "flags"), flag,
					    json_string("the reference is tiny"));
		}
		add(HISTORY_CHECK, guard ? HISTORY_FAILED : HISTORY_OK, json_deep_copy(spec), res,
		    NULL, NULL, NULL);
		add(HISTORY_BENCH, HISTORY_OK, spec, bench_ok(25), NULL, NULL, NULL);
		json_decref(expect);
	}
	add_pair(SRC, 1.2, NULL, NULL);
	recs = export_all(NULL, &st);
	ck_assert_uint_eq(st.scanned, g.gl_pathc + 1);
	ck_assert_uint_eq(st.unverified, g.gl_pathc);
	ck_assert_uint_eq(json_array_size(recs), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(recs, 0), "source")),
			 SRC);
	json_decref(recs);
	globfree(&g);
}
END_TEST

START_TEST(sources_differing_in_comments_and_spaces_are_one_record_the_fastest)
{
	char slow[512], fast[512], other[512];
	struct dataset_stats st;
	json_t *recs, *res;

	snprintf(slow, sizeof(slow), "/* v1 */ %s", SRC);
	snprintf(fast, sizeof(fast), "%s\n\n   // tuned\n", SRC);
	snprintf(other, sizeof(other), "%s__device__ int other;\n", SRC);
	add_pair(slow, 1.1, NULL, NULL);
	add_pair(fast, 2.5, NULL, NULL);
	add_pair(other, 1.0, NULL, NULL);
	/* a benchmark without a baseline (no speedup) of the same source */
	res = bench_ok(1.0);
	json_object_del(res, "speedup");
	add(HISTORY_BENCH, HISTORY_OK, spec_of(fast), res, NULL, NULL, NULL);
	recs = export_all(NULL, &st);
	ck_assert_uint_eq(json_array_size(recs), 2);
	ck_assert_uint_eq(st.duplicates, 2);
	ck_assert(json_real_value(json_object_get(
			  json_object_get(json_array_get(recs, 0), "benchmark"), "speedup")) ==
		  2.5);
	json_decref(recs);
}
END_TEST

START_TEST(filters_and_lineage)
{
	char a[HISTORY_ID_BYTES], b[HISTORY_ID_BYTES], src2[512];
	struct dataset_filter f;
	struct dataset_stats st;
	json_t *recs, *lin;

	snprintf(src2, sizeof(src2), "%s__device__ int v2;\n", SRC);
	add_pair(SRC, 1.0, NULL, a);
	add_pair(src2, 2.0, a, b);
	dataset_filter_init(&f);
	f.min_speedup = 1.5;
	recs = export_all(&f, &st);
	ck_assert_uint_eq(json_array_size(recs), 1);
	ck_assert_uint_eq(st.filtered, 1);
	lin = json_object_get(json_array_get(recs, 0), "lineage");
	ck_assert_str_eq(json_string_value(json_object_get(lin, "parent")), a);
	ck_assert_ptr_null(json_object_get(lin, "trajectory"));
	json_decref(recs);
	f.trajectories = 1;
	recs = export_all(&f, NULL);
	lin = json_object_get(json_array_get(recs, 0), "lineage");
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(json_object_get(lin, "trajectory"), 0), "source")),
			 SRC);
	json_decref(recs);
	dataset_filter_init(&f);
	f.gpu = "h200";
	recs = export_all(&f, NULL);
	ck_assert_uint_eq(json_array_size(recs), 2);
	json_decref(recs);
	f.gpu = "A100";
	recs = export_all(&f, NULL);
	ck_assert_uint_eq(json_array_size(recs), 0);
	json_decref(recs);
	dataset_filter_init(&f);
	f.arch = "sm_80";
	recs = export_all(&f, NULL);
	ck_assert_uint_eq(json_array_size(recs), 0);
	json_decref(recs);
	f.arch = "sm_90";
	f.op = "scale";
	recs = export_all(&f, NULL);
	ck_assert_uint_eq(json_array_size(recs), 2);
	json_decref(recs);
	f.min_speedup = -1;
	ck_assert_int_eq(dataset_export(h, &f, collect, NULL, NULL, NULL), KF_EINVAL);
}
END_TEST

START_TEST(export_dir_is_refused_when_not_empty_unless_forced)
{
	struct dataset_filter f;
	struct dataset_stats st;
	struct kf_err err = {0};
	char out[400], path[500], *text;
	json_t *schema;
	FILE *fp;

	add_pair(SRC, 1.5, NULL, NULL);
	dataset_filter_init(&f);
	snprintf(out, sizeof(out), "%s/export", dir);
	ck_assert_msg(dataset_write_dir(h, &f, out, 0, &st, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(st.exported, 1);
	snprintf(path, sizeof(path), "%s/data/kernels.jsonl", out);
	text = slurp(path);
	ck_assert_ptr_nonnull(strstr(text, "\"source\":"));
	ck_assert_int_eq(text[strlen(text) - 1], '\n');
	free(text);
	snprintf(path, sizeof(path), "%s/README.md", out);
	text = slurp(path);
	ck_assert_int_eq(strncmp(text, "---\nlicense: cc-by-4.0\n", 23), 0);
	ck_assert_ptr_nonnull(strstr(text, "task_categories:"));
	ck_assert_ptr_nonnull(strstr(text, "    path: data/kernels.jsonl\n---\n"));
	free(text);
	snprintf(path, sizeof(path), "%s/schema.json", out);
	schema = json_load_file(path, 0, NULL);
	ck_assert_ptr_nonnull(schema);
	json_decref(schema);
	/* a second export into it: refused, naming --force; forced: done */
	ck_assert_int_eq(dataset_write_dir(h, &f, out, 0, NULL, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "is not empty"));
	ck_assert_ptr_nonnull(strstr(err.msg, "--force"));
	ck_assert_int_eq(dataset_write_dir(h, &f, out, 1, NULL, NULL), 0);
	/* a file where the directory should be */
	snprintf(path, sizeof(path), "%s/afile", dir);
	fp = fopen(path, "w");
	fclose(fp);
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(dataset_write_dir(h, &f, path, 1, NULL, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "is not a directory"));
}
END_TEST

START_TEST(normalized_hash_ignores_comments_and_whitespace_only)
{
	char a[65], b[65], c[65];

	dataset_source_hash("int  x ;// c\n/* block */ int y;", a);
	dataset_source_hash("int x ; int y;", b);
	dataset_source_hash("int x; int y;", c);
	ck_assert_str_eq(a, b);
	ck_assert_str_ne(b, c);
}
END_TEST

static Suite *dataset_suite(void)
{
	Suite *s = suite_create("dataset");
	TCase *t = tcase_create("export");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, a_verified_kernel_becomes_one_whole_record);
	tcase_add_test(t, unverified_benchmarks_are_left_out);
	tcase_add_test(t, no_kernel_of_the_cheat_suite_is_ever_exported);
	tcase_add_test(t, sources_differing_in_comments_and_spaces_are_one_record_the_fastest);
	tcase_add_test(t, filters_and_lineage);
	tcase_add_test(t, export_dir_is_refused_when_not_empty_unless_forced);
	tcase_add_test(t, normalized_hash_ignores_comments_and_whitespace_only);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(dataset_suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
