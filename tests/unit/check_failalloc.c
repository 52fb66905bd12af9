/* check_failalloc: the failing-allocator pass. Each main path of the spec,
 * history, jail and check modules is run once to count its allocations
 * (kforge's own through -Wl,--wrap, jansson's and sqlite's through their
 * hooks: tests/unit/failalloc.c), then once per allocation N = 1..K with
 * the Nth failing. Every run must end cleanly: success with the right
 * result, or KF_ENOMEM with a message; never a crash, a wrong answer or
 * (under `make asan`) a leak. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/op.h"
#include "sandbox/check/check.h"
#include "sandbox/history/history.h"
#include "sandbox/jail/jail.h"
#include "sandbox/spec/spec.h"
#include "tests/unit/failalloc.h"
#include "tests/unit/fixture.h"

static char g_dir[64];

static void setup(void)
{
	fixture_dir_new(g_dir, sizeof g_dir, "failalloc");
}

static void teardown(void)
{
	failalloc_arm(0);
	fixture_dir_remove(g_dir);
}

/* A path returns 0 with its result checked (KF_EINTERNAL when it is wrong)
 * or the error code of the call that failed. */
typedef int (*path_fn)(struct kf_err *err);

/* Runs path with every one of its allocations failing in turn. */
static void sweep(const char *name, path_fn path)
{
	struct kf_err err = {0};
	int rc;

	failalloc_arm(0);
	rc = path(&err); /* one-time set-up happens outside the count */
	ck_assert_msg(rc == 0, "%s without failures: %s", name, err.msg);
	failalloc_arm(0);
	ck_assert_int_eq(path(&err), 0);
	long k = failalloc_count(), failed = 0;
	ck_assert_int_gt(k, 0);
	for (long n = 1; n <= k; n++) {
		kf_err_clear(&err);
		failalloc_arm(n);
		rc = path(&err);
		int hit = failalloc_failed();
		failalloc_arm(0);
		if (!hit)
			continue; /* this run took a path with fewer allocations */
		/* sqlite reports running out of memory while opening a file as
		 * an open failure: KF_EDB naming it is accepted there. */
		int db_oom = rc == KF_EDB && strstr(err.msg, "out of memory");
		ck_assert_msg(rc == 0 || rc == KF_ENOMEM || db_oom,
			      "%s: allocation %ld of %ld failed: got %d (%s), want 0 or KF_ENOMEM",
			      name, n, k, rc, err.msg);
		ck_assert_msg(rc == 0 || err.msg[0],
			      "%s: allocation %ld: KF_ENOMEM without a message", name, n);
		failed += rc == KF_ENOMEM;
	}
	ck_assert_msg(failed > 0, "%s: no failed allocation was reported", name);
}

/* --- spec ------------------------------------------------------------------ */

static const char *SPEC =
	"{\"source\": \"extern \\\"C\\\" __global__ void k(float *y, const float *x, int n) {}\","
	" \"arch\": \"sm_90\", \"sizes\": [{\"N\": 1000, \"M\": 4}, {\"N\": 7, \"M\": 2}],"
	" \"tensors\": {\"x\": {\"dtype\": \"f32\", \"shape\": [\"N\", \"M\"], \"role\": \"input\"},"
	"   \"ids\": {\"dtype\": \"i32\", \"shape\": [\"N\"], \"role\": \"input\", \"init\": \"index\","
	"     \"init_max\": \"M\"},"
	"   \"y\": {\"dtype\": \"f32\", \"shape\": [\"N\", \"M\"], \"role\": \"output\"}},"
	" \"scalars\": {\"alpha\": {\"dtype\": \"f32\", \"value\": 2.5}},"
	" \"launch\": [{\"kernel\": \"k\", \"grid\": [\"ceil_div(N * M, 256)\"], \"block\": [256],"
	"   \"args\": [\"y\", \"x\", \"N * M\", \"alpha\"]}],"
	" \"tolerance\": {\"atol\": 1e-5, \"rtol\": 1e-5},"
	" \"cost\": {\"bytes\": \"8 * N * M\"}, \"constraints\": [\"M % 2 == 0\"]}";

static const char *OP_SPEC =
	"{\"op\": \"rmsnorm\", \"dtype\": \"f32\", \"source\": \"x\", \"sizes\": [{\"T\": 3, \"D\": 8}],"
	" \"launch\": [{\"kernel\": \"k\", \"grid\": [\"T\"], \"block\": [32],"
	" \"args\": [\"y\", \"x\", \"w\", \"T\", \"D\", \"eps\"]}]}";

static int spec_path(struct kf_err *err)
{
	struct spec *s = NULL;
	struct spec_bound b;
	int64_t odd[SPEC_MAX_VARS];
	int rc = spec_parse_text(SPEC, strlen(SPEC), NULL, op_find, &s, err);
	if (rc)
		return rc;
	rc = spec_bind(s, s->sizes, NULL, "sizes[0]", &b, err);
	if (!rc)
		rc = spec_odd_size(s, NULL, 7, odd, err);
	if (!rc &&
	    (s->tensors_len != 3 || b.elems[spec_tensor_index(s, "y")] != 4000 || odd[1] % 2 != 0))
		rc = kf_err_set(err, KF_EINTERNAL, "the spec parsed into another one");
	spec_free(s);
	if (rc)
		return rc;
	rc = spec_parse_text(OP_SPEC, strlen(OP_SPEC), NULL, op_find, &s, err);
	if (rc)
		return rc;
	if (!s->op || strcmp(s->op, "rmsnorm") || spec_tensor_index(s, "y") < 0)
		rc = kf_err_set(err, KF_EINTERNAL, "the op spec parsed into another one (op %s)",
				s->op ? s->op : "missing");
	spec_free(s);
	return rc;
}

START_TEST(spec_parse_bind_and_op_survive_every_failed_allocation)
{
	sweep("spec", spec_path);
}
END_TEST

/* --- history ------------------------------------------------------------------ */

static int history_path(struct kf_err *err)
{
	char path[128];
	struct history *h = NULL;
	struct history_run run = {0}, got = {0};
	struct history_page page = {0};
	struct history_filter f;
	int rc;

	/* A fresh database: an earlier run whose close failed may have left
	 * its write-ahead log, which sqlite would replay into the new file. */
	static const char *const FILES[] = {"state.db-wal", "state.db-shm", "state.db"};
	for (size_t i = 0; i < sizeof FILES / sizeof FILES[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", g_dir, FILES[i]);
		unlink(path);
	}
	rc = history_open(path, &h, err);
	if (rc)
		return rc;
	run.kind = HISTORY_CHECK;
	run.status = HISTORY_FAILED;
	run.kernels = "rmsnorm_f32";
	run.summary = "2 elements wrong";
	run.spec = json_pack("{s:s, s:[i]}", "arch", "sm_90", "sizes", 7);
	run.result = json_pack("{s:s}", "summary", "2 elements wrong");
	if (!run.spec || !run.result) {
		rc = kf_err_set(err, KF_ENOMEM, "out of memory building the run");
		goto out;
	}
	rc = history_add(h, &run, err);
	if (rc)
		goto out;
	rc = history_get(h, run.id, &got, err);
	if (rc)
		goto out;
	if (strcmp(got.kernels, "rmsnorm_f32") || !json_equal(got.spec, run.spec) ||
	    !json_equal(got.result, run.result)) {
		rc = kf_err_set(err, KF_EINTERNAL, "history_get returned another run");
		goto out;
	}
	history_filter_init(&f);
	rc = history_list(h, &f, &page, err);
	if (!rc && (page.len != 1 || strcmp(page.runs[0].id, run.id)))
		rc = kf_err_set(err, KF_EINTERNAL, "history_list returned %zu runs, want 1",
				page.len);
out:
	history_page_fini(&page);
	history_run_fini(&got);
	json_decref(run.spec);
	json_decref(run.result);
	history_close(h);
	return rc;
}

START_TEST(history_open_add_get_list_survive_every_failed_allocation)
{
	sweep("history", history_path);
}
END_TEST

/* --- jail --------------------------------------------------------------------- */

static enum jail_mode g_jail_mode;

static int jail_path(struct kf_err *err)
{
	const char *argv[] = {"/bin/sh", "-c", "echo hi; echo err >&2", NULL};
	struct jail_config cfg = {.mode = g_jail_mode};
	struct jail_job job = {.argv = argv, .job_dir = g_dir};
	struct jail_result res;
	struct jail *j = NULL;
	int rc = jail_open(&cfg, &j, err);
	if (rc)
		return rc;
	rc = jail_run(j, &job, &res, err);
	if (!rc && (!res.exited || res.exit_code || strcmp(res.out, "hi\n") ||
		    strcmp(res.errout, "err\n")))
		rc = KF_EINTERNAL;
	jail_result_fini(&res);
	jail_close(j);
	return rc;
}

START_TEST(jail_open_and_run_survive_every_failed_allocation)
{
	struct jail_config cfg = {.mode = JAIL_BWRAP};
	struct jail *j = NULL;
	struct kf_err err = {0};
	ck_assert_int_eq(jail_open(&cfg, &j, &err), 0);
	g_jail_mode = jail_usable(j, NULL) == 0 ? JAIL_BWRAP : JAIL_NONE;
	if (g_jail_mode == JAIL_NONE)
		fprintf(stderr, "check_failalloc: bubblewrap unusable here, jail swept unjailed\n");
	jail_close(j);
	sweep("jail", jail_path);
}
END_TEST

/* --- check --------------------------------------------------------------------- */

/* The CPU reference of a built-in op, then the judge on an output that is
 * all zeros: a failed allocation may cost the answer, never let it pass. */
static int check_path(struct kf_err *err)
{
	struct spec *s = NULL;
	struct spec_bound b;
	double *want[SPEC_MAX_TENSORS] = {0};
	json_t *tr = NULL;
	struct check_run run = {0};
	struct check_fired fired = {0};
	struct check_flags flags = {0};
	double max_rel = 0;
	int rc = spec_parse_text(OP_SPEC, strlen(OP_SPEC), NULL, op_find, &s, err);
	if (rc)
		return rc;
	rc = spec_bind(s, s->sizes, NULL, "sizes[0]", &b, err);
	if (!rc)
		rc = check_reference_cpu(s, s->sizes, 42, want, err);
	if (rc)
		goto out;
	int y = spec_tensor_index(s, "y");
	char path[128];
	snprintf(path, sizeof path, "%s/y.bin", g_dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	char *zeros = calloc(1, b.bytes[y]);
	if (fd < 0 || !zeros || write(fd, zeros, b.bytes[y]) != (ssize_t)b.bytes[y])
		rc = kf_err_set(err, zeros ? KF_EIO : KF_ENOMEM, "writing y.bin failed");
	free(zeros);
	if (fd >= 0)
		close(fd);
	if (rc)
		goto out;
	tr = json_pack("{s:{s:{s:s}}}", "outputs", "y", "file", "y.bin");
	if (!tr) {
		rc = kf_err_set(err, KF_ENOMEM, "out of memory building the trial");
		goto out;
	}
	int mismatch = 0;
	if (check_judge_run(s, g_dir, &b, tr, want, &run, &fired, &flags, &max_rel))
		rc = kf_err_set(err, KF_EINTERNAL, "all zeros passed as an RMSNorm");
	for (size_t i = 0; i < run.safeguards_len; i++)
		mismatch |= strcmp(run.safeguards[i].name, "mismatch") == 0;
	if (!rc && !mismatch)
		rc = kf_err_set(err, KF_ENOMEM, "refused without naming the mismatch%s",
				run.nomem ? " (a safeguard was lost for memory)" : "");
out:
	check_run_fini(&run);
	json_decref(tr);
	for (size_t t = 0; t < SPEC_MAX_TENSORS; t++)
		free(want[t]);
	spec_free(s);
	return rc;
}

START_TEST(check_reference_and_judge_survive_every_failed_allocation)
{
	sweep("check", check_path);
}
END_TEST

static Suite *failalloc_suite(void)
{
	Suite *s = suite_create("failalloc");
	TCase *t = tcase_create("sweep");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 300);
	tcase_add_test(t, spec_parse_bind_and_op_survive_every_failed_allocation);
	tcase_add_test(t, history_open_add_get_list_survive_every_failed_allocation);
	tcase_add_test(t, jail_open_and_run_survive_every_failed_allocation);
	tcase_add_test(t, check_reference_and_judge_survive_every_failed_allocation);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	failalloc_install();
	SRunner *sr = srunner_create(failalloc_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
