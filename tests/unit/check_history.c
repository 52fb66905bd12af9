/* check_history: state.db (sandbox/history/history.c): add/get round trips, list
 * filters and cursors, schema migrations, every documented error, concurrent
 * writers (threads and processes), and crash safety: a writer killed with
 * SIGKILL mid-stream loses no run whose add returned and leaves a database
 * that passes PRAGMA integrity_check. */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/history/history.h"
#include "tests/unit/fixture.h"

static char dir[256];
static char path[320];

static void setup(void)
{
	fixture_dir_new(dir, sizeof(dir), "history");
	snprintf(path, sizeof(path), "%s/state.db", dir);
}

static void teardown(void)
{
	fixture_dir_remove(dir);
}

static struct history *open_ok(void)
{
	return fixture_history_open(dir);
}

static void add_ok(struct history *h, enum history_kind kind, enum history_status status,
		   const char *kernels, int64_t created_ms, char id_out[HISTORY_ID_BYTES])
{
	struct history_run run = {0};
	struct kf_err err = {0};

	run.kind = kind;
	run.status = status;
	run.kernels = (char *)kernels;
	run.created_ms = created_ms;
	run.summary = (char *)"a run";
	ck_assert_msg(history_add(h, &run, &err) == 0, "%s", err.msg);
	if (id_out)
		memcpy(id_out, run.id, HISTORY_ID_BYTES);
}

START_TEST(add_then_get_returns_every_field)
{
	struct history *h = open_ok();
	struct history_run run = {0}, got;
	struct kf_err err = {0};
	json_t *spec = json_pack("{s:s, s:[i,i]}", "arch", "sm_90", "sizes", 7, 9);
	json_t *result = json_pack("{s:s, s:f}", "summary", "passed", "median_us", 12.5);

	run.kind = HISTORY_BENCH;
	run.status = HISTORY_OK;
	run.created_ms = 1700000000123;
	run.duration_ms = 842;
	run.kernels = (char *)"rmsnorm_bf16,rmsnorm_ref";
	run.source_hash = (char *)"ab12cd";
	run.device_name = (char *)"NVIDIA H200";
	run.device_uuid = (char *)"GPU-00000000-1111-2222-3333-444444444444";
	run.summary = (char *)"12.5 us, 1.8x the baseline";
	run.spec = spec;
	run.result = result;
	ck_assert_int_eq(history_add(h, &run, &err), 0);
	ck_assert_uint_eq(strlen(run.id), 16);
	ck_assert_int_eq(run.id[0], 'r');
	ck_assert_int_eq(history_get(h, run.id, &got, &err), 0);
	ck_assert_str_eq(got.id, run.id);
	ck_assert_int_eq(got.kind, HISTORY_BENCH);
	ck_assert_int_eq(got.status, HISTORY_OK);
	ck_assert_int_eq(got.created_ms, 1700000000123);
	ck_assert_int_eq(got.duration_ms, 842);
	ck_assert_str_eq(got.kernels, "rmsnorm_bf16,rmsnorm_ref");
	ck_assert_str_eq(got.source_hash, "ab12cd");
	ck_assert_str_eq(got.device_name, "NVIDIA H200");
	ck_assert_str_eq(got.device_uuid, run.device_uuid);
	ck_assert_str_eq(got.summary, "12.5 us, 1.8x the baseline");
	ck_assert(json_equal(got.spec, spec));
	ck_assert(json_equal(got.result, result));
	history_run_fini(&got);
	ck_assert_ptr_null(got.kernels);
	json_decref(spec);
	json_decref(result);
	history_close(h);
}
END_TEST

START_TEST(absent_fields_come_back_null)
{
	struct history *h = open_ok();
	struct history_run run = {0}, got;

	run.kind = HISTORY_COMPILE;
	run.status = HISTORY_FAILED;
	ck_assert_int_eq(history_add(h, &run, NULL), 0);
	ck_assert_int_eq(history_get(h, run.id, &got, NULL), 0);
	ck_assert_str_eq(got.kernels, "");
	ck_assert_ptr_null(got.source_hash);
	ck_assert_ptr_null(got.device_name);
	ck_assert_ptr_null(got.spec);
	ck_assert_ptr_null(got.result);
	ck_assert_int_gt(got.created_ms, 1600000000000);
	history_run_fini(&got);
	history_close(h);
}
END_TEST

START_TEST(ids_are_unique_and_sort_in_creation_order)
{
	struct history *h = open_ok();
	char prev[HISTORY_ID_BYTES] = "", id[HISTORY_ID_BYTES];

	for (int i = 0; i < 100; i++) {
		add_ok(h, HISTORY_CHECK, HISTORY_OK, "k", 0, id);
		ck_assert_msg(strcmp(id, prev) > 0, "%s after %s", id, prev);
		memcpy(prev, id, sizeof(id));
	}
	/* an older created time sorts before */
	add_ok(h, HISTORY_CHECK, HISTORY_OK, "k", 1500000000000, id);
	ck_assert(strcmp(id, prev) < 0);
	history_close(h);
}
END_TEST

START_TEST(get_rejects_malformed_and_unknown_ids)
{
	struct history *h = open_ok();
	struct history_run got;
	struct kf_err err = {0};

	ck_assert_int_eq(history_get(h, "run-1; DROP TABLE runs", &got, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "is not a run id"));
	kf_err_clear(&err);
	ck_assert_int_eq(history_get(h, "r000000000000000", &got, &err), KF_ENOTFOUND);
	ck_assert_str_eq(err.msg, "no run with id r000000000000000");
	history_close(h);
}
END_TEST

START_TEST(add_rejects_bad_kind_status_and_oversize_fields)
{
	struct history *h = open_ok();
	struct history_run run = {0};
	struct kf_err err = {0};
	char *big = malloc(HISTORY_TEXT_MAX + 2);
	json_t *huge;

	run.kind = (enum history_kind)7;
	ck_assert_int_eq(history_add(h, &run, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "kind 7"));
	run.kind = HISTORY_CHECK;
	run.status = (enum history_status) - 1;
	kf_err_clear(&err);
	ck_assert_int_eq(history_add(h, &run, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "status -1"));
	run.status = HISTORY_OK;
	memset(big, 'x', HISTORY_TEXT_MAX + 1);
	big[HISTORY_TEXT_MAX + 1] = '\0';
	run.summary = big;
	kf_err_clear(&err);
	ck_assert_int_eq(history_add(h, &run, &err), KF_ETOOBIG);
	ck_assert_ptr_nonnull(strstr(err.msg, "summary"));
	run.summary = NULL;
	big = realloc(big, HISTORY_JSON_MAX + 1);
	memset(big, 'y', HISTORY_JSON_MAX);
	big[HISTORY_JSON_MAX] = '\0';
	huge = json_string(big);
	run.result = huge;
	kf_err_clear(&err);
	ck_assert_int_eq(history_add(h, &run, &err), KF_ETOOBIG);
	ck_assert_ptr_nonnull(strstr(err.msg, "result JSON"));
	json_decref(huge);
	free(big);
	history_close(h);
}
END_TEST

START_TEST(list_filters_by_kind_status_kernel_and_since)
{
	struct history *h = open_ok();
	struct history_filter f;
	struct history_page p;

	add_ok(h, HISTORY_COMPILE, HISTORY_OK, "rmsnorm_bf16", 1000000000000, NULL);
	add_ok(h, HISTORY_CHECK, HISTORY_FAILED, "rmsnorm_bf16", 1000000001000, NULL);
	add_ok(h, HISTORY_BENCH, HISTORY_OK, "softmax_f32,softmax_ref", 1000000002000, NULL);
	add_ok(h, HISTORY_CHECK, HISTORY_OK, "100%_kernel", 1000000003000, NULL);
	add_ok(h, HISTORY_CALIBRATE, HISTORY_ERROR, "", 1000000004000, NULL);

	history_filter_init(&f);
	ck_assert_int_eq(history_list(h, &f, &p, NULL), 0);
	ck_assert_uint_eq(p.len, 5);
	ck_assert_str_eq(p.runs[0].summary, "a run");
	ck_assert_int_eq(p.runs[0].kind, HISTORY_CALIBRATE); /* newest first */
	ck_assert_ptr_null(p.runs[0].result);		     /* listings are light */
	ck_assert_str_eq(p.next_cursor, "");
	history_page_fini(&p);

	f.kind = HISTORY_CHECK;
	ck_assert_int_eq(history_list(h, &f, &p, NULL), 0);
	ck_assert_uint_eq(p.len, 2);
	history_page_fini(&p);

	f.status = HISTORY_FAILED;
	ck_assert_int_eq(history_list(h, &f, &p, NULL), 0);
	ck_assert_uint_eq(p.len, 1);
	ck_assert_str_eq(p.runs[0].kernels, "rmsnorm_bf16");
	history_page_fini(&p);

	history_filter_init(&f);
	f.kernel = "softmax";
	ck_assert_int_eq(history_list(h, &f, &p, NULL), 0);
	ck_assert_uint_eq(p.len, 1);
	ck_assert_int_eq(p.runs[0].kind, HISTORY_BENCH);
	history_page_fini(&p);

	f.kernel = "0%_k"; /* % and _ are literal, not wildcards */
	ck_assert_int_eq(history_list(h, &f, &p, NULL), 0);
	ck_assert_uint_eq(p.len, 1);
	ck_assert_str_eq(p.runs[0].kernels, "100%_kernel");
	history_page_fini(&p);

	f.kernel = "r%m";
	ck_assert_int_eq(history_list(h, &f, &p, NULL), 0);
	ck_assert_uint_eq(p.len, 0);
	history_page_fini(&p);

	history_filter_init(&f);
	f.since_ms = 1000000002000;
	ck_assert_int_eq(history_list(h, &f, &p, NULL), 0);
	ck_assert_uint_eq(p.len, 3);
	history_page_fini(&p);
	history_close(h);
}
END_TEST

START_TEST(cursor_pages_through_every_run_once)
{
	struct history *h = open_ok();
	struct history_filter f;
	struct history_page p;
	char ids[23][HISTORY_ID_BYTES], cursor[HISTORY_ID_BYTES] = "";
	int seen = 0, pages = 0;

	for (int i = 0; i < 23; i++)
		add_ok(h, HISTORY_CHECK, HISTORY_OK, "k", 0, ids[i]);
	history_filter_init(&f);
	f.limit = 5;
	do {
		f.cursor = cursor;
		ck_assert_int_eq(history_list(h, &f, &p, NULL), 0);
		for (size_t i = 0; i < p.len; i++, seen++)
			ck_assert_str_eq(p.runs[i].id, ids[22 - seen]);
		snprintf(cursor, sizeof(cursor), "%s", p.next_cursor);
		pages++;
		ck_assert(cursor[0] == '\0' || p.len == 5);
		history_page_fini(&p);
	} while (cursor[0]);
	ck_assert_int_eq(seen, 23);
	ck_assert_int_eq(pages, 5);
	history_close(h);
}
END_TEST

START_TEST(list_rejects_bad_kind_status_and_cursor)
{
	struct history *h = open_ok();
	struct history_filter f;
	struct history_page p;
	struct kf_err err = {0};

	history_filter_init(&f);
	f.kind = 9;
	ck_assert_int_eq(history_list(h, &f, &p, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "kind"));
	history_filter_init(&f);
	f.status = 5;
	kf_err_clear(&err);
	ck_assert_int_eq(history_list(h, &f, &p, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "status"));
	history_filter_init(&f);
	f.cursor = "page2";
	kf_err_clear(&err);
	ck_assert_int_eq(history_list(h, &f, &p, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "cursor"));
	history_close(h);
}
END_TEST

START_TEST(names_parse_back)
{
	for (int k = 0; k <= HISTORY_CALIBRATE; k++)
		ck_assert_int_eq(history_kind_parse(history_kind_name(k)), k);
	for (int s = 0; s <= HISTORY_ERROR; s++)
		ck_assert_int_eq(history_status_parse(history_status_name(s)), s);
	ck_assert_int_eq(history_kind_parse("benchmark"), KF_EINVAL);
	ck_assert_int_eq(history_status_parse("passed"), KF_EINVAL);
	ck_assert_str_eq(history_kind_name(11), "?");
}
END_TEST

/* The version-1 schema exactly as shipped, to test the forward migration. */
static const char V1_SCHEMA[] =
	"CREATE TABLE runs ("
	" id TEXT PRIMARY KEY,"
	" kind TEXT NOT NULL CHECK (kind IN ('compile','check','bench','calibrate')),"
	" created_ms INTEGER NOT NULL,"
	" status TEXT NOT NULL CHECK (status IN ('ok','failed','error')),"
	" kernels TEXT NOT NULL DEFAULT '',"
	" source_hash TEXT, spec TEXT, device_name TEXT, device_uuid TEXT,"
	" summary TEXT NOT NULL DEFAULT '', result TEXT,"
	" duration_ms INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
	"CREATE INDEX runs_kind ON runs(kind, id);"
	"INSERT INTO runs (id, kind, created_ms, status, kernels, summary) VALUES"
	" ('r00000000v000001', 'check', 1000, 'ok', 'old_kernel', 'from v1');"
	"PRAGMA user_version = 1;";

static void raw_exec(const char *sql)
{
	sqlite3 *db = NULL;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

START_TEST(opening_a_version_1_database_migrates_it_and_keeps_runs)
{
	struct history *h;
	struct history_run got;
	struct history_ceilings c = {0};
	struct history_filter f;
	struct history_page p;

	raw_exec(V1_SCHEMA);
	h = open_ok();
	ck_assert_int_eq(history_schema_version(h), HISTORY_SCHEMA_VERSION);
	history_filter_init(&f);
	ck_assert_int_eq(history_list(h, &f, &p, NULL), 0);
	ck_assert_uint_eq(p.len, 1);
	ck_assert_str_eq(p.runs[0].kernels, "old_kernel");
	ck_assert_str_eq(p.runs[0].summary, "from v1");
	history_page_fini(&p);
	/* v2 added the ceilings table */
	snprintf(c.gpu_uuid, sizeof(c.gpu_uuid), "GPU-x");
	ck_assert_int_eq(history_set_ceilings(h, &c, NULL), 0);
	ck_assert_int_eq(history_get(h, "r00000000v000001", &got, NULL), 0);
	ck_assert_int_eq(got.kind, HISTORY_CHECK);
	history_run_fini(&got);
	history_close(h);
	/* a second open is a no-op */
	h = open_ok();
	ck_assert_int_eq(history_schema_version(h), HISTORY_SCHEMA_VERSION);
	history_close(h);
}
END_TEST

/* The version-2 schema exactly as shipped: what a daemon from before
 * descriptions finds on disk. */
static const char V2_SCHEMA[] =
	"CREATE TABLE runs ("
	" id TEXT PRIMARY KEY,"
	" kind TEXT NOT NULL CHECK (kind IN ('compile','check','bench','calibrate')),"
	" created_ms INTEGER NOT NULL,"
	" status TEXT NOT NULL CHECK (status IN ('ok','failed','error')),"
	" kernels TEXT NOT NULL DEFAULT '',"
	" source_hash TEXT, spec TEXT, device_name TEXT, device_uuid TEXT,"
	" summary TEXT NOT NULL DEFAULT '', result TEXT,"
	" duration_ms INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
	"CREATE INDEX runs_kind ON runs(kind, id);"
	"CREATE TABLE ceilings (gpu_uuid TEXT PRIMARY KEY, device_name TEXT NOT NULL DEFAULT '',"
	" copy_gbps REAL, bf16_tflops REAL, fp32_tflops REAL, measured_ms INTEGER NOT NULL,"
	" method TEXT NOT NULL DEFAULT '', run_id TEXT);"
	"CREATE INDEX runs_status ON runs(status, id);"
	"INSERT INTO runs (id, kind, created_ms, status, kernels, summary, spec) VALUES"
	" ('r00000000v000002', 'bench', 2000, 'ok', 'old_bench', 'from v2', '{\"a\":1}');"
	"PRAGMA user_version = 2;";

START_TEST(opening_a_version_2_database_adds_description_notes_and_parent)
{
	struct history *h;
	struct history_run got, run = {0};
	struct kf_err err = {0};

	raw_exec(V2_SCHEMA);
	h = open_ok();
	ck_assert_int_eq(history_schema_version(h), HISTORY_SCHEMA_VERSION);
	ck_assert_int_eq(history_get(h, "r00000000v000002", &got, NULL), 0);
	ck_assert_str_eq(got.summary, "from v2");
	ck_assert_ptr_null(got.description);
	ck_assert_ptr_null(got.notes);
	ck_assert_ptr_null(got.parent);
	history_run_fini(&got);
	/* a run recorded after the migration can point at the old one */
	run.kind = HISTORY_BENCH;
	run.status = HISTORY_OK;
	run.description = (char *)"y = a * x + b";
	run.notes = (char *)"float4 loads";
	run.parent = (char *)"r00000000v000002";
	ck_assert_msg(history_add(h, &run, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(history_get(h, run.id, &got, NULL), 0);
	ck_assert_str_eq(got.description, "y = a * x + b");
	ck_assert_str_eq(got.notes, "float4 loads");
	ck_assert_str_eq(got.parent, "r00000000v000002");
	history_run_fini(&got);
	/* the rebuilt table takes the profile kind and keeps the old rows */
	struct history_run prof = {.kind = HISTORY_PROFILE, .status = HISTORY_OK};
	struct history_filter f;
	struct history_page page;
	ck_assert_msg(history_add(h, &prof, &err) == 0, "%s", err.msg);
	history_filter_init(&f);
	f.kind = HISTORY_PROFILE;
	ck_assert_int_eq(history_list(h, &f, &page, NULL), 0);
	ck_assert_uint_eq(page.len, 1);
	ck_assert_str_eq(history_kind_name(page.runs[0].kind), "profile");
	history_page_fini(&page);
	ck_assert_int_eq(history_get(h, "r00000000v000002", &got, NULL), 0);
	ck_assert_str_eq(got.summary, "from v2");
	history_run_fini(&got);
	history_close(h);
}
END_TEST

START_TEST(description_notes_parent_round_trip_and_list_leaves_notes_out)
{
	struct history *h = open_ok();
	struct history_run run = {0}, got;
	struct history_filter f;
	struct history_page p;
	struct kf_err err = {0};
	char first[HISTORY_ID_BYTES];

	add_ok(h, HISTORY_CHECK, HISTORY_OK, "plain", 0, first);
	run.kind = HISTORY_CHECK;
	run.status = HISTORY_OK;
	run.description = (char *)"RMSNorm: y = x / sqrt(mean(x^2) + eps) * w";
	run.notes = (char *)"one warp per row; the row sum in registers";
	run.parent = first;
	run.env = json_pack("{s:s, s:s}", "kforge", "0.1.0", "driver", "13.0");
	ck_assert_msg(history_add(h, &run, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(history_get(h, run.id, &got, NULL), 0);
	ck_assert(json_equal(got.env, run.env));
	json_decref(run.env);
	ck_assert_str_eq(got.description, run.description);
	ck_assert_str_eq(got.notes, run.notes);
	ck_assert_str_eq(got.parent, first);
	history_run_fini(&got);
	history_filter_init(&f);
	ck_assert_int_eq(history_list(h, &f, &p, NULL), 0);
	ck_assert_uint_eq(p.len, 2);
	ck_assert_str_eq(p.runs[0].description, run.description);
	ck_assert_str_eq(p.runs[0].parent, first);
	ck_assert_ptr_null(p.runs[0].notes);
	ck_assert_ptr_null(p.runs[1].description);
	history_page_fini(&p);
	history_close(h);
}
END_TEST

START_TEST(list_filters_by_exact_source_hash)
{
	struct history *h = open_ok();
	struct history_run run = {0};
	struct history_filter f;
	struct history_page p;

	run.kind = HISTORY_CHECK;
	run.status = HISTORY_OK;
	run.source_hash = (char *)"aa11";
	ck_assert_int_eq(history_add(h, &run, NULL), 0);
	run.source_hash = (char *)"aa1";
	ck_assert_int_eq(history_add(h, &run, NULL), 0);
	add_ok(h, HISTORY_CHECK, HISTORY_OK, "k", 0, NULL);
	history_filter_init(&f);
	f.source_hash = "aa11";
	ck_assert_int_eq(history_list(h, &f, &p, NULL), 0);
	ck_assert_uint_eq(p.len, 1);
	ck_assert_str_eq(p.runs[0].source_hash, "aa11");
	history_page_fini(&p);
	history_close(h);
}
END_TEST

START_TEST(parent_must_name_a_run_and_notes_are_capped)
{
	struct history *h = open_ok();
	struct history_run run = {0};
	struct kf_err err = {0};
	char *big = malloc(HISTORY_NOTES_MAX + 2);

	run.kind = HISTORY_BENCH;
	run.status = HISTORY_OK;
	run.parent = (char *)"r000000000000000";
	ck_assert_int_eq(history_add(h, &run, &err), KF_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.msg, "parent: no run r000000000000000"));
	ck_assert_int_eq(history_check_parent(h, "r000000000000000", NULL), KF_ENOTFOUND);
	memset(&err, 0, sizeof(err));
	run.parent = (char *)"../etc";
	ck_assert_int_eq(history_add(h, &run, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "parent: '../etc' is not a run id"));
	run.parent = NULL;
	memset(big, 'n', HISTORY_NOTES_MAX + 1);
	big[HISTORY_NOTES_MAX + 1] = '\0';
	run.notes = big;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(history_add(h, &run, &err), KF_ETOOBIG);
	ck_assert_ptr_nonnull(strstr(err.msg, "notes is"));
	big[HISTORY_TEXT_MAX + 1] = '\0';
	run.notes = NULL;
	run.description = big;
	memset(&err, 0, sizeof(err));
	ck_assert_int_eq(history_add(h, &run, &err), KF_ETOOBIG);
	ck_assert_ptr_nonnull(strstr(err.msg, "description is"));
	free(big);
	history_close(h);
}
END_TEST

START_TEST(newer_schema_is_refused)
{
	struct history *h = NULL;
	struct kf_err err = {0};

	raw_exec("PRAGMA user_version = 99");
	ck_assert_int_eq(history_open(path, &h, &err), KF_EDB);
	ck_assert_ptr_null(h);
	ck_assert_ptr_nonnull(strstr(err.msg, "schema version 99 is newer than this kforge"));
}
END_TEST

START_TEST(open_in_missing_dir_fails_with_the_path)
{
	struct history *h = NULL;
	struct kf_err err = {0};
	char bad[400];

	snprintf(bad, sizeof(bad), "%s/no/such/dir/state.db", dir);
	ck_assert_int_eq(history_open(bad, &h, &err), KF_EDB);
	ck_assert_ptr_nonnull(strstr(err.msg, bad));
	kf_err_clear(&err);
	ck_assert_int_eq(history_open("", &h, &err), KF_EINVAL);
}
END_TEST

START_TEST(zero_byte_or_corrupt_state_db_is_refused_with_the_reason)
{
	struct history *h = NULL;
	struct kf_err err = {0};
	FILE *f = fopen(path, "w");
	struct stat st;

	/* Truncated to 0 bytes: refused, and left as it was. */
	ck_assert_ptr_nonnull(f);
	fclose(f);
	ck_assert_int_eq(history_open(path, &h, &err), KF_EDB);
	ck_assert_ptr_null(h);
	ck_assert_msg(strstr(err.msg, "is 0 bytes") && strstr(err.msg, path), "%s", err.msg);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	/* Not a database at all. */
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 4096; i++)
		fputc((i * 131) & 0xff, f);
	fclose(f);
	kf_err_clear(&err);
	ck_assert_int_eq(history_open(path, &h, &err), KF_EDB);
	ck_assert_msg(strstr(err.msg, "is corrupt") && strstr(err.msg, "move it away"), "%s",
		      err.msg);
	/* Moved away, a new history starts, made whole before it appears. */
	ck_assert_int_eq(unlink(path), 0);
	h = open_ok();
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_gt(st.st_size, 0);
	history_close(h);
	/* No temporary file is left behind. */
	DIR *d = opendir(dir);
	struct dirent *e;
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		ck_assert_msg(!strstr(e->d_name, ".new-"), "left behind: %s", e->d_name);
	closedir(d);
}
END_TEST

START_TEST(database_is_wal)
{
	struct history *h = open_ok();
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;

	history_close(h);
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "wal");
	sqlite3_finalize(st);
	sqlite3_close(db);
}
END_TEST

START_TEST(ceilings_round_trip_replace_and_report_missing)
{
	struct history *h = open_ok();
	struct history_ceilings c = {0}, got;
	struct kf_err err = {0};

	snprintf(c.gpu_uuid, sizeof(c.gpu_uuid), "GPU-abc");
	snprintf(c.device_name, sizeof(c.device_name), "NVIDIA H200");
	snprintf(c.method, sizeof(c.method), "cuMemcpyDtoD 1 GiB, median of 20");
	c.copy_gbps = 4100.5;
	c.bf16_tflops = 700;
	c.fp32_tflops = 0; /* not measured */
	c.measured_ms = 1700000000000;
	ck_assert_int_eq(history_set_ceilings(h, &c, &err), 0);
	ck_assert_int_eq(history_get_ceilings(h, "GPU-abc", &got, &err), 0);
	ck_assert_str_eq(got.device_name, "NVIDIA H200");
	ck_assert(got.copy_gbps == 4100.5);
	ck_assert(got.bf16_tflops == 700);
	ck_assert(got.fp32_tflops == 0);
	ck_assert_int_eq(got.measured_ms, 1700000000000);
	ck_assert_str_eq(got.method, c.method);
	ck_assert_str_eq(got.run_id, "");
	c.copy_gbps = 4200;
	ck_assert_int_eq(history_set_ceilings(h, &c, &err), 0);
	ck_assert_int_eq(history_get_ceilings(h, "GPU-abc", &got, &err), 0);
	ck_assert(got.copy_gbps == 4200);
	ck_assert_int_eq(history_get_ceilings(h, "GPU-other", &got, &err), KF_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.msg, "run kforge calibrate"));
	c.gpu_uuid[0] = '\0';
	kf_err_clear(&err);
	ck_assert_int_eq(history_set_ceilings(h, &c, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "gpu_uuid"));
	history_close(h);
}
END_TEST

/* A cluster's nodes of one GPU model share a calibration: a GPU without
 * its own gets the newest of its model's; the list has every one. */
START_TEST(ceilings_of_a_model_stand_in_for_an_uncalibrated_gpu)
{
	struct history *h = open_ok();
	struct history_ceilings c = {0}, got, *all = NULL;
	struct kf_err err = {0};
	size_t n = 0;

	snprintf(c.device_name, sizeof(c.device_name), "NVIDIA H100");
	for (int i = 0; i < 2; i++) { /* two H100s, the second measured later */
		snprintf(c.gpu_uuid, sizeof(c.gpu_uuid), "GPU-h100-%d", i);
		c.copy_gbps = 3000 + i;
		c.measured_ms = 1700000000000 + i;
		ck_assert_int_eq(history_set_ceilings(h, &c, &err), 0);
	}
	ck_assert_int_eq(history_get_ceilings_of(h, "GPU-h100-0", "NVIDIA H100", &got, &err), 0);
	ck_assert(got.copy_gbps == 3000); /* its own first */
	ck_assert_msg(history_get_ceilings_of(h, "GPU-h100-9", "NVIDIA H100", &got, &err) == 0,
		      "%s", err.msg);
	ck_assert(got.copy_gbps == 3001); /* the model's newest */
	ck_assert_str_eq(got.gpu_uuid, "GPU-h100-1");
	ck_assert_int_eq(history_get_ceilings_of(h, "GPU-a100-0", "NVIDIA A100", &got, &err),
			 KF_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.msg, "no NVIDIA A100 has a calibration"));
	ck_assert_int_eq(history_list_ceilings(h, &all, &n, &err), 0);
	ck_assert_int_eq((int)n, 2);
	ck_assert_str_eq(all[0].gpu_uuid, "GPU-h100-0");
	ck_assert_str_eq(all[1].gpu_uuid, "GPU-h100-1");
	free(all);
	history_close(h);
}
END_TEST

static void *writer_thread(void *arg)
{
	struct history *h = arg;

	for (int i = 0; i < 20; i++) {
		struct history_run run = {0};

		run.kind = HISTORY_COMPILE;
		run.status = HISTORY_OK;
		run.kernels = (char *)"threaded";
		if (history_add(h, &run, NULL) != 0)
			return (void *)1;
	}
	return NULL;
}

static int count_rows(void)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int n = -1;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(
		sqlite3_prepare_v2(db, "SELECT count(DISTINCT id) FROM runs", -1, &st, NULL),
		SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

START_TEST(concurrent_threads_and_processes_all_commit)
{
	struct history *h = open_ok();
	pthread_t th[4];
	pid_t kids[2];
	int status;

	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		ck_assert_int_ge(kids[i], 0);
		if (kids[i] == 0) {
			struct history *hc = NULL;

			if (history_open(path, &hc, NULL) != 0)
				_exit(2);
			_exit(writer_thread(hc) ? 1 : 0);
		}
	}
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, writer_thread, h), 0);
	for (int i = 0; i < 4; i++) {
		void *ret;

		pthread_join(th[i], &ret);
		ck_assert_ptr_null(ret);
	}
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(waitpid(kids[i], &status, 0), kids[i]);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	history_close(h);
	ck_assert_int_eq(count_rows(), 6 * 20);
}
END_TEST

START_TEST(sigkill_mid_stream_loses_no_committed_run)
{
	int fds[2];
	pid_t kid;
	char ids[4096][HISTORY_ID_BYTES];
	int n = 0, status;
	FILE *in;
	struct history *h;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;

	ck_assert_int_eq(pipe(fds), 0);
	kid = fork();
	ck_assert_int_ge(kid, 0);
	if (kid == 0) {
		struct history *hc = NULL;
		json_t *result =
			json_pack("{s:s, s:[f,f,f]}", "summary", "x", "samples", 1.0, 2.0, 3.0);

		close(fds[0]);
		if (history_open(path, &hc, NULL) != 0)
			_exit(2);
		for (;;) {
			struct history_run run = {0};
			char line[HISTORY_ID_BYTES + 1];

			run.kind = HISTORY_BENCH;
			run.status = HISTORY_OK;
			run.kernels = (char *)"crash";
			run.result = result;
			if (history_add(hc, &run, NULL) != 0)
				_exit(3);
			/* only after add returned is the id reported */
			snprintf(line, sizeof(line), "%s\n", run.id);
			if (write(fds[1], line, strlen(line)) < 0)
				_exit(4);
		}
	}
	close(fds[1]);
	in = fdopen(fds[0], "r");
	while (n < 40 && fgets(ids[n], sizeof(ids[n]), in))
		ids[n++][16] = '\0';
	kill(kid, SIGKILL);
	while (n < 4096 && fgets(ids[n], sizeof(ids[n]), in))
		ids[n++][16] = '\0';
	fclose(in);
	ck_assert_int_eq(waitpid(kid, &status, 0), kid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ck_assert_int_ge(n, 40);

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL),
			 SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
	sqlite3_close(db);

	h = open_ok();
	for (int i = 0; i < n; i++) {
		struct history_run got;

		ck_assert_msg(history_get(h, ids[i], &got, NULL) == 0, "run %s (#%d of %d) lost",
			      ids[i], i, n);
		ck_assert(json_is_object(got.result));
		history_run_fini(&got);
	}
	history_close(h);
}
END_TEST

static Suite *history_suite(void)
{
	Suite *s = suite_create("history");
	TCase *rw = tcase_create("add_get");
	TCase *ls = tcase_create("list");
	TCase *schema = tcase_create("schema");
	TCase *safety = tcase_create("concurrency_and_crashes");

	tcase_add_checked_fixture(rw, setup, teardown);
	tcase_add_checked_fixture(ls, setup, teardown);
	tcase_add_checked_fixture(schema, setup, teardown);
	tcase_add_checked_fixture(safety, setup, teardown);
	tcase_set_timeout(rw, 30);
	tcase_set_timeout(safety, 60);
	tcase_add_test(rw, add_then_get_returns_every_field);
	tcase_add_test(rw, absent_fields_come_back_null);
	tcase_add_test(rw, ids_are_unique_and_sort_in_creation_order);
	tcase_add_test(rw, get_rejects_malformed_and_unknown_ids);
	tcase_add_test(rw, add_rejects_bad_kind_status_and_oversize_fields);
	tcase_add_test(rw, names_parse_back);
	tcase_add_test(rw, ceilings_round_trip_replace_and_report_missing);
	tcase_add_test(rw, ceilings_of_a_model_stand_in_for_an_uncalibrated_gpu);
	tcase_add_test(ls, list_filters_by_kind_status_kernel_and_since);
	tcase_add_test(ls, cursor_pages_through_every_run_once);
	tcase_add_test(ls, list_rejects_bad_kind_status_and_cursor);
	tcase_add_test(schema, opening_a_version_1_database_migrates_it_and_keeps_runs);
	tcase_add_test(schema, newer_schema_is_refused);
	tcase_add_test(schema, opening_a_version_2_database_adds_description_notes_and_parent);
	tcase_add_test(rw, description_notes_parent_round_trip_and_list_leaves_notes_out);
	tcase_add_test(rw, parent_must_name_a_run_and_notes_are_capped);
	tcase_add_test(ls, list_filters_by_exact_source_hash);
	tcase_add_test(schema, zero_byte_or_corrupt_state_db_is_refused_with_the_reason);
	tcase_add_test(schema, open_in_missing_dir_fails_with_the_path);
	tcase_add_test(schema, database_is_wal);
	tcase_add_test(safety, concurrent_threads_and_processes_all_commit);
	tcase_add_test(safety, sigkill_mid_stream_loses_no_committed_run);
	suite_add_tcase(s, rw);
	suite_add_tcase(s, ls);
	suite_add_tcase(s, schema);
	suite_add_tcase(s, safety);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(history_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
