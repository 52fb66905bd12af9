/* check_exec: the executor (sandbox/exec/) without a cluster: Slurm's job
 * states and squeue lines, the exec_jobs rows of state.db and the
 * exactly-once record of a job's run, the refusals of exec_open (no sbatch,
 * missing shared dir, unknown partition, values Slurm would misread) and
 * exec_job_run against stand-in Slurm commands on PATH (a refused
 * submission comes back with sbatch's words; a completed one with the
 * node's answer). The real cluster is tests/proto/proto_slurm.sh. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/exec/exec.h"
#include "sandbox/history/history.h"
#include "tests/unit/fixture.h"

static char dir[256];
static char old_path[4096];
static struct history *hist;

static void setup(void)
{
	fixture_dir_new(dir, sizeof(dir), "exec");
	hist = fixture_history_open(dir);
	snprintf(old_path, sizeof(old_path), "%s", getenv("PATH") ? getenv("PATH") : "");
}

static void teardown(void)
{
	history_close(hist);
	setenv("PATH", old_path, 1);
	fixture_dir_remove(dir);
}

/* A stand-in Slurm command in <dir>/bin running body under /bin/sh. */
static void fake(const char *name, const char *body)
{
	char p[400];
	FILE *f;

	snprintf(p, sizeof(p), "%s/bin", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/bin/%s", dir, name);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	fclose(f);
	chmod(p, 0755);
}

/* The four commands exec_open looks for, sinfo listing gpu and debug, and
 * PATH = <dir>/bin:/usr/bin:/bin. */
static void fake_cluster(void)
{
	char p[400];

	fake("sbatch", "echo 42");
	fake("squeue", "echo 'COMPLETED|None|node7'");
	fake("scancel", "exit 0");
	fake("sinfo", "printf 'gpu\\ndebug\\n'");
	snprintf(p, sizeof(p), "%s/bin:/usr/bin:/bin", dir);
	setenv("PATH", p, 1);
	snprintf(p, sizeof(p), "%s/shared", dir);
	mkdir(p, 0700);
}

static struct exec_config slurm_cfg(char *shared, size_t cap)
{
	snprintf(shared, cap, "%s/shared", dir);
	return (struct exec_config){.kind = EXEC_SLURM,
				    .partition = "gpu",
				    .shared_dir = shared,
				    .kforge_path = "/usr/bin/true",
				    .poll_ms = 10};
}

START_TEST(verdicts_follow_slurm_states)
{
	static const struct {
		const char *state, *reason;
		enum exec_verdict v;
	} cases[] = {
		{"COMPLETED", "None", EXEC_DONE},
		{"COMPLETING", "None", EXEC_WAIT},
		{"RUNNING", "None", EXEC_WAIT},
		{"PENDING", "Resources", EXEC_WAIT},
		{"PENDING", "Priority", EXEC_WAIT},
		{"PENDING", "PartitionTimeLimit", EXEC_FAILED},
		{"PENDING", "PartitionConfig", EXEC_FAILED},
		{"PENDING", "InvalidAccount", EXEC_FAILED},
		{"NODE_FAIL", "None", EXEC_RETRY},
		{"PREEMPTED", "None", EXEC_RETRY},
		{"BOOT_FAIL", "None", EXEC_RETRY},
		{"FAILED", "NonZeroExitCode", EXEC_FAILED},
		{"TIMEOUT", "TimeLimit", EXEC_FAILED},
		{"OUT_OF_MEMORY", "None", EXEC_FAILED},
		{"CANCELLED by 0", "None", EXEC_CANCELLED},
		{"CANCELLED+", "None", EXEC_CANCELLED},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(exec_slurm_verdict(cases[i].state, cases[i].reason) == cases[i].v,
			      "%s %s", cases[i].state, cases[i].reason);
}
END_TEST

START_TEST(squeue_lines_parse_and_bad_ones_are_refused)
{
	char st[32], why[64], nodes[32];

	ck_assert_int_eq(exec_slurm_parse_line("RUNNING|None|node7\n", st, sizeof(st), why,
					       sizeof(why), nodes, sizeof(nodes)),
			 0);
	ck_assert_str_eq(st, "RUNNING");
	ck_assert_str_eq(why, "None");
	ck_assert_str_eq(nodes, "node7");
	ck_assert_int_eq(exec_slurm_parse_line("PENDING|Resources|\n", st, sizeof(st), why,
					       sizeof(why), nodes, sizeof(nodes)),
			 0);
	ck_assert_str_eq(nodes, "");
	ck_assert_int_eq(exec_slurm_parse_line("RUNNING", st, sizeof(st), why, sizeof(why), nodes,
					       sizeof(nodes)),
			 KF_EINVAL);
}
END_TEST

static void add_job(struct history_job *j)
{
	struct kf_err err = {0};

	memset(j, 0, sizeof(*j));
	snprintf(j->tool, sizeof(j->tool), "check_kernel");
	snprintf(j->client, sizeof(j->client), "session-1");
	ck_assert_msg(history_job_add(hist, j, &err) == 0, "%s", err.msg);
}

START_TEST(job_rows_round_trip_and_list_until_recorded)
{
	struct history_job j, got, *pend = NULL;
	struct kf_err err = {0};
	size_t n = 0;

	add_job(&j);
	snprintf(j.dir, sizeof(j.dir), "/shared/jobs/%s", j.key);
	snprintf(j.slurm_id, sizeof(j.slurm_id), "77");
	j.attempt = 1;
	j.state = HISTORY_JOB_ENDED;
	snprintf(j.reason, sizeof(j.reason), "NODE_FAIL");
	ck_assert_int_eq(history_job_update(hist, &j, &err), 0);
	ck_assert_int_eq(history_job_get(hist, j.key, &got, &err), 0);
	ck_assert_str_eq(got.slurm_id, "77");
	ck_assert_str_eq(got.dir, j.dir);
	ck_assert_str_eq(got.reason, "NODE_FAIL");
	ck_assert_int_eq(got.attempt, 1);
	ck_assert_int_eq(got.state, HISTORY_JOB_ENDED);
	ck_assert_int_eq(history_jobs_pending(hist, &pend, &n, &err), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(pend[0].key, j.key);
	free(pend);
	ck_assert_int_eq(history_job_get(hist, "r0000000000000000", &got, &err), KF_ENOTFOUND);
	memcpy(got.key, "r0000000000000000", 18);
	ck_assert_int_eq(history_job_update(hist, &got, &err), KF_ENOTFOUND);
}
END_TEST

START_TEST(a_jobs_run_is_recorded_once)
{
	struct history_job j, got, *pend = NULL;
	struct history_run run = {.kind = HISTORY_CHECK, .status = HISTORY_OK, .summary = "x"};
	struct history_page page = {0};
	struct history_filter f;
	struct kf_err err = {0};
	char first[HISTORY_ID_BYTES];
	size_t n = 9;

	add_job(&j);
	run.job_key = j.key;
	ck_assert_msg(history_add(hist, &run, &err) == 0, "%s", err.msg);
	memcpy(first, run.id, sizeof(first));
	/* the same job finished again (a restarted daemon): no second run */
	ck_assert_msg(history_add(hist, &run, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(run.id, first);
	history_filter_init(&f);
	ck_assert_int_eq(history_list(hist, &f, &page, &err), 0);
	ck_assert_uint_eq(page.len, 1);
	history_page_fini(&page);
	ck_assert_int_eq(history_job_get(hist, j.key, &got, &err), 0);
	ck_assert_int_eq(got.state, HISTORY_JOB_RECORDED);
	ck_assert_str_eq(got.run_id, first);
	ck_assert_int_eq(history_jobs_pending(hist, &pend, &n, &err), 0);
	ck_assert_uint_eq(n, 0);
	free(pend);
	/* a recorded job stays recorded whatever an update says */
	got.state = HISTORY_JOB_SUBMITTED;
	ck_assert_int_eq(history_job_update(hist, &got, &err), 0);
	ck_assert_int_eq(history_job_get(hist, j.key, &got, &err), 0);
	ck_assert_int_eq(got.state, HISTORY_JOB_RECORDED);
	run.job_key = "r0000000000000000";
	ck_assert_int_eq(history_add(hist, &run, &err), KF_ENOTFOUND);
}
END_TEST

START_TEST(open_refuses_what_cannot_work)
{
	struct exec *x = NULL;
	struct kf_err err = {0};
	char shared[300], p[400];
	struct exec_config c;

	snprintf(p, sizeof(p), "%s/empty", dir);
	mkdir(p, 0755);
	setenv("PATH", p, 1);
	c = slurm_cfg(shared, sizeof(shared));
	ck_assert_int_eq(exec_open(&c, hist, &x, &err), KF_ENOTFOUND);
	ck_assert_msg(strstr(err.msg, "sbatch not found on PATH"), "%s", err.msg);
	fake_cluster();
	err = (struct kf_err){0};
	c.partition = "nope";
	ck_assert_int_eq(exec_open(&c, hist, &x, &err), KF_ENOTFOUND);
	ck_assert_msg(strstr(err.msg, "no partition 'nope' (sinfo lists: gpu,debug)"), "%s",
		      err.msg);
	err = (struct kf_err){0};
	c = slurm_cfg(shared, sizeof(shared));
	c.shared_dir = "/nonexistent/kforge-shared";
	ck_assert_int_eq(exec_open(&c, hist, &x, &err), KF_ENOTFOUND);
	ck_assert_msg(strstr(err.msg, "does not exist"), "%s", err.msg);
	err = (struct kf_err){0};
	c = slurm_cfg(shared, sizeof(shared));
	c.gres = "gpu:1\n#SBATCH --uid=0";
	ck_assert_int_eq(exec_open(&c, hist, &x, &err), KF_EINVAL);
	ck_assert_msg(strstr(err.msg, "--gres"), "%s", err.msg);
	err = (struct kf_err){0};
	c = slurm_cfg(shared, sizeof(shared));
	c.partition = NULL;
	ck_assert_int_eq(exec_open(&c, hist, &x, &err), KF_EINVAL);
	ck_assert_ptr_null(x);
	c = slurm_cfg(shared, sizeof(shared));
	ck_assert_msg(exec_open(&c, hist, &x, &err) == 0, "%s", err.msg);
	ck_assert(exec_is_remote(x));
	exec_close(x);
}
END_TEST

START_TEST(a_refused_submission_carries_sbatchs_words)
{
	struct exec *x = NULL;
	struct kf_err err = {0};
	struct exec_job_result res;
	struct history_job got;
	char shared[300];
	json_t *args = json_pack("{s:{}}", "spec");

	fake_cluster();
	fake("sbatch", "echo 'sbatch: error: Batch job submission failed: Invalid account or "
		       "account/partition combination specified' >&2; exit 1");
	struct exec_config c = slurm_cfg(shared, sizeof(shared));
	ck_assert_msg(exec_open(&c, hist, &x, &err) == 0, "%s", err.msg);
	struct exec_job_req req = {.tool = "check_kernel", .args = args};
	ck_assert_int_eq(exec_job_run(x, &req, &res, &err), KF_EINVAL);
	ck_assert_msg(strstr(res.said, "Invalid account or account/partition combination"), "%s",
		      res.said);
	ck_assert_msg(strstr(err.msg, "slurm refused the job"), "%s", err.msg);
	ck_assert_int_eq(history_job_get(hist, res.key, &got, &err), 0);
	ck_assert_int_eq(got.state, HISTORY_JOB_ENDED);
	exec_job_done(&res, KF_EINVAL); /* a failed job keeps its directory */
	ck_assert_int_eq(access(res.dir, F_OK), 0);
	exec_job_result_fini(&res);
	exec_close(x);
	json_decref(args);
}
END_TEST

START_TEST(a_completed_job_gives_the_nodes_answer)
{
	struct exec *x = NULL;
	struct kf_err err = {0};
	struct exec_job_result res;
	char shared[300], body[600];
	json_t *args = json_pack("{s:{}}", "spec");

	fake_cluster();
	/* sbatch gets <dir>/job.sh last: the stand-in node answers at once */
	snprintf(
		body, sizeof(body),
		"for a; do s=$a; done; d=$(dirname \"$s\"); "
		"grep -q 'exec-job' \"$s\" && grep -q '^#SBATCH --partition=gpu' \"$s\" || exit 3; "
		"echo '{\"tool\":\"check_kernel\",\"code\":\"ok\",\"result\":{\"passed\":true}}' "
		"> \"$d/answer.json\"; echo '42;cluster'");
	fake("sbatch", body);
	struct exec_config c = slurm_cfg(shared, sizeof(shared));
	ck_assert_msg(exec_open(&c, hist, &x, &err) == 0, "%s", err.msg);
	struct exec_job_req req = {.tool = "check_kernel", .args = args, .client = "a"};
	ck_assert_msg(exec_job_run(x, &req, &res, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(res.slurm_id, "42");
	ck_assert_str_eq(res.node, "node7");
	ck_assert(json_is_true(json_object_get(json_object_get(res.answer, "result"), "passed")));
	ck_assert_int_eq(access(res.dir, F_OK), 0);
	exec_job_done(&res, 0);
	ck_assert_int_ne(access(res.dir, F_OK), 0);
	exec_job_result_fini(&res);
	exec_close(x);
	json_decref(args);
}
END_TEST

START_TEST(an_unreachable_controller_is_waited_out)
{
	struct exec *x = NULL;
	struct kf_err err = {0};
	struct exec_job_result res;
	char shared[300], body[1400];
	json_t *args = json_pack("{s:{}}", "spec");

	fake_cluster();
	snprintf(body, sizeof(body), "for a; do s=$a; done; dirname \"$s\" > %s/jobdir; echo 43",
		 dir);
	fake("sbatch", body);
	/* the first two squeue calls cannot reach the controller; the third
	 * finds the job completed, its answer written meanwhile */
	snprintf(
		body, sizeof(body),
		"n=$(cat %s/n 2>/dev/null || echo 0); echo $((n + 1)) > %s/n; "
		"if [ $n -lt 2 ]; then echo 'squeue: error: Unable to contact slurm controller "
		"(connect failure)' >&2; exit 1; fi; "
		"echo '{\"code\":\"ok\",\"result\":{\"passed\":true}}' > $(cat %s/jobdir)/answer.json; "
		"echo 'COMPLETED|None|node7'",
		dir, dir, dir);
	fake("squeue", body);
	struct exec_config c = slurm_cfg(shared, sizeof(shared));
	ck_assert_msg(exec_open(&c, hist, &x, &err) == 0, "%s", err.msg);
	struct exec_job_req req = {.tool = "check_kernel", .args = args};
	ck_assert_msg(exec_job_run(x, &req, &res, &err) == 0, "%s", err.msg);
	ck_assert(json_is_true(json_object_get(json_object_get(res.answer, "result"), "passed")));
	exec_job_result_fini(&res);
	exec_close(x);
	json_decref(args);
}
END_TEST

START_TEST(a_node_failure_is_retried_once_elsewhere)
{
	struct exec *x = NULL;
	struct kf_err err = {0};
	struct exec_job_result res;
	char shared[300], body[1400], p[400];
	json_t *args = json_pack("{s:{}}", "spec");
	FILE *f;

	fake_cluster();
	/* sbatch: the first submission is job 42, the retry (with its
	 * --exclude, kept in sbatch.args) job 43, which answers */
	snprintf(body, sizeof(body),
		 "echo \"$@\" >> %s/sbatch.args; for a; do s=$a; done; "
		 "if [ -f %s/first ]; then echo '{\"code\":\"ok\",\"result\":{}}' > "
		 "$(dirname \"$s\")/answer.json; echo 43; else touch %s/first; echo 42; fi",
		 dir, dir, dir);
	fake("sbatch", body);
	fake("squeue", "for a; do j=$a; done; case \"$*\" in *' 42 '*) "
		       "echo 'NODE_FAIL|None|node7';; *) echo 'COMPLETED|None|node8';; esac");
	struct exec_config c = slurm_cfg(shared, sizeof(shared));
	ck_assert_msg(exec_open(&c, hist, &x, &err) == 0, "%s", err.msg);
	struct exec_job_req req = {.tool = "check_kernel", .args = args};
	ck_assert_msg(exec_job_run(x, &req, &res, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(res.attempts, 2);
	ck_assert_str_eq(res.slurm_id, "43");
	ck_assert_str_eq(res.node, "node8");
	snprintf(p, sizeof(p), "%s/sbatch.args", dir);
	f = fopen(p, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert(fgets(body, sizeof(body), f) && !strstr(body, "--exclude"));
	ck_assert(fgets(body, sizeof(body), f) && strstr(body, "--exclude=node7"));
	fclose(f);
	exec_job_result_fini(&res);
	/* a second loss is reported with Slurm's reason */
	fake("sbatch", "echo 42");
	fake("squeue", "echo 'NODE_FAIL|None|node7'");
	ck_assert_int_eq(exec_job_run(x, &req, &res, &err), KF_EFAULT);
	ck_assert_msg(strstr(res.said, "NODE_FAIL"), "%s", res.said);
	exec_job_result_fini(&res);
	exec_close(x);
	json_decref(args);
}
END_TEST

START_TEST(gres_types_come_from_sinfo_lines)
{
	static const struct {
		const char *sinfo;
		int n;
		const char *want[3];
	} cases[] = {
		{"gpu:h100:4(S:0-1)\ngpu:a100:8(S:0,1),mps:100\ngpu:h100:4\n", 2, {"h100", "a100"}},
		{"gpu:2\n", 0, {NULL}},
		{"(null)\n", 0, {NULL}},
		{"gpu:tesla_v100:2,gpu:2\n", 1, {"tesla_v100"}},
		{"gpu:bad$type:1\nmps:gpu:2\n", 0, {NULL}},
		{"", 0, {NULL}},
	};
	char types[4][EXEC_GPU_TYPE_BYTES];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int n = exec_slurm_gres_types(cases[i].sinfo, types, 4);
		ck_assert_msg(n == cases[i].n, "'%s': %d types", cases[i].sinfo, n);
		for (int k = 0; k < n; k++)
			ck_assert_str_eq(types[k], cases[i].want[k]);
	}
	/* no more than cap */
	ck_assert_int_eq(exec_slurm_gres_types("gpu:a:1,gpu:b:1,gpu:c:1", types, 2), 2);
}
END_TEST

/* One exec_job_run on its own thread. */
struct call {
	struct exec *x;
	struct exec_job_req req;
	struct exec_job_result res;
	struct kf_err err;
	int rc;
	pthread_t th;
};

static void *call_run(void *arg)
{
	struct call *c = arg;

	c->rc = exec_job_run(c->x, &c->req, &c->res, &c->err);
	return NULL;
}

/* Entries of <dir>/shared/jobs: job directories made so far. */
static int job_dirs(void)
{
	char cmd[400];
	int n = -1;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ls %s/shared/jobs | wc -l", dir);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%d", &n), 1);
	pclose(f);
	return n;
}

static void wait_until(int (*cond)(void), int want)
{
	for (int i = 0; i < 2000 && cond() < want; i++)
		usleep(5000);
	ck_assert_int_ge(cond(), want);
}

static int submissions(void)
{
	char p[400];
	int n = 0;
	FILE *f;

	snprintf(p, sizeof(p), "%s/nsub", dir);
	f = fopen(p, "r");
	if (f) {
		if (fscanf(f, "%d", &n) != 1)
			n = 0;
		fclose(f);
	}
	return n;
}

START_TEST(queued_calls_go_as_one_array_in_arrival_order_each_its_own)
{
	static volatile int zero, cancel4; /* element 2 (call 4) is cancelled */
	struct exec *x = NULL;
	struct kf_err err = {0};
	struct call calls[7];
	char shared[300], body[2000], p[400];
	json_t *args = json_pack("{s:{}}", "spec");
	FILE *f;

	cancel4 = 0;
	fake_cluster();
	/* sbatch answers every job in its own directory, naming it */
	snprintf(body, sizeof(body),
		 "ans() { printf '{\"code\":\"ok\",\"result\":{\"dir\":\"%%s\"}}' \"$1\" "
		 "> \"$1/answer.json\"; }; "
		 "for a; do s=$a; done; n=$(cat %s/nsub 2>/dev/null || echo 0); "
		 "echo $((n + 1)) > %s/nsub; "
		 "if grep -q -- --array \"$s\"; then cp \"$s\" %s/array.sh; "
		 "sed -n \"s/^[0-9]*) d='\\(.*\\)' ;;$/\\1/p\" \"$s\" | "
		 "while read d; do ans \"$d\"; done; echo 7; "
		 "else ans \"$(dirname \"$s\")\"; echo 4$n; fi",
		 dir, dir, dir);
	fake("sbatch", body);
	/* the two first jobs run until <dir>/release exists; the array's
	 * elements are followed through one listing of the whole array (asked
	 * for alone, they would fail); element 2 runs until it is cancelled */
	snprintf(body, sizeof(body),
		 "case \"$*\" in *' -r '*) for i in 0 1 3 4; do "
		 "echo \"7_$i|COMPLETED|None|node7\"; done; echo '7_2|RUNNING|None|node7';; "
		 "*' 7_'*) echo 'FAILED|None|node7';; *) "
		 "if [ -f %s/release ]; then echo 'COMPLETED|None|node7'; "
		 "else echo 'RUNNING|None|node7'; fi;; esac",
		 dir);
	fake("squeue", body);
	snprintf(body, sizeof(body), "echo \"$@\" >> %s/scancel.args", dir);
	fake("scancel", body);
	struct exec_config c = slurm_cfg(shared, sizeof(shared));
	c.max_per_client = 2;
	ck_assert_msg(exec_open(&c, hist, &x, &err) == 0, "%s", err.msg);
	for (int i = 0; i < 7; i++) {
		calls[i] = (struct call){.x = x};
		calls[i].req = (struct exec_job_req){.tool = "check_kernel",
						     .args = args,
						     .client = "a",
						     .cancel = i == 4 ? &cancel4 : &zero};
		ck_assert_int_eq(pthread_create(&calls[i].th, NULL, call_run, &calls[i]), 0);
		/* the first two take the client's two slots, one at a time; the
		 * other five queue, in this order */
		if (i < 2)
			wait_until(submissions, i + 1);
		else
			wait_until(job_dirs, i + 1);
	}
	snprintf(p, sizeof(p), "%s/release", dir);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	for (int i = 0; i < 7; i++)
		if (i != 4)
			pthread_join(calls[i].th, NULL);
	cancel4 = 1; /* only its own element is cancelled */
	pthread_join(calls[4].th, NULL);
	ck_assert_int_eq(calls[4].rc, KF_ECANCELED);
	snprintf(p, sizeof(p), "%s/scancel.args", dir);
	f = fopen(p, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert(fgets(body, sizeof(body), f) && strcmp(body, "7_2\n") == 0);
	ck_assert(!fgets(body, sizeof(body), f));
	fclose(f);
	ck_assert_int_eq(submissions(), 3);
	for (int i = 0; i < 7; i++) {
		char want[32];
		ck_assert_msg(calls[i].rc == (i == 4 ? KF_ECANCELED : 0), "%d: %s", i,
			      calls[i].err.msg);
		snprintf(want, sizeof(want), i < 2 ? "4%d" : "7_%d", i < 2 ? i : i - 2);
		ck_assert_str_eq(calls[i].res.slurm_id, want);
		if (i >= 2 && i != 4) /* each element its own answer */
			ck_assert_str_eq(
				json_string_value(json_object_get(
					json_object_get(calls[i].res.answer, "result"), "dir")),
				calls[i].res.dir);
		exec_job_result_fini(&calls[i].res);
	}
	/* five elements, at most two of them at once: the slots the client had */
	snprintf(p, sizeof(p), "%s/array.sh", dir);
	f = fopen(p, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq((int)fread(body, 1, sizeof(body) - 1, f) > 0, 1);
	fclose(f);
	ck_assert_msg(strstr(body, "#SBATCH --array=0-4%2\n"), "%s", body);
	ck_assert_msg(strstr(body, "slurm-${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.out"), "%s",
		      body);
	exec_close(x);
	json_decref(args);
}
END_TEST

/* What the recovery callback saw: calls, and per job (by key) its rc and
 * whether its answer passed. Recovery threads call it concurrently. */
struct seen {
	pthread_mutex_t mu;
	int calls;
	char key[2][HISTORY_ID_BYTES];
	int rc[2], passed[2];
};

static void on_recovered(void *arg, const struct history_job *job, int rc,
			 const struct exec_job_result *res, const char *msg)
{
	struct seen *s = arg;
	(void)msg;
	pthread_mutex_lock(&s->mu);
	s->calls++;
	for (int i = 0; i < 2; i++)
		if (strcmp(s->key[i], job->key) == 0) {
			s->rc[i] = rc;
			s->passed[i] = json_is_true(
				json_object_get(json_object_get(res->answer, "result"), "passed"));
		}
	pthread_mutex_unlock(&s->mu);
}

START_TEST(a_previous_daemons_jobs_are_followed_to_their_end)
{
	struct exec *x = NULL;
	struct kf_err err = {0};
	struct history_job j, lost;
	struct seen seen = {.mu = PTHREAD_MUTEX_INITIALIZER};
	char shared[300], p[1200];
	FILE *f;

	fake_cluster();
	snprintf(p, sizeof(p), "%s/shared/jobs", dir);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	add_job(&j); /* submitted as job 42; its node answered */
	snprintf(j.dir, sizeof(j.dir), "%s/shared/jobs/%s", dir, j.key);
	snprintf(j.slurm_id, sizeof(j.slurm_id), "42");
	ck_assert_int_eq(mkdir(j.dir, 0700), 0);
	snprintf(p, sizeof(p), "%s/answer.json", j.dir);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{\"code\":\"ok\",\"result\":{\"passed\":true}}", f);
	fclose(f);
	ck_assert_int_eq(history_job_update(hist, &j, &err), 0);
	/* one whose submission was cut short: no id, no job of its name */
	add_job(&lost);
	snprintf(lost.dir, sizeof(lost.dir), "%s/shared/jobs/%s", dir, lost.key);
	ck_assert_int_eq(history_job_update(hist, &lost, &err), 0);
	fake("squeue", "case \"$*\" in *' -n '*) exit 0;; *) echo 'COMPLETED|None|node7';; esac");
	memcpy(seen.key[0], j.key, HISTORY_ID_BYTES);
	memcpy(seen.key[1], lost.key, HISTORY_ID_BYTES);
	struct exec_config c = slurm_cfg(shared, sizeof(shared));
	ck_assert_msg(exec_open(&c, hist, &x, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(exec_recover(x, on_recovered, &seen, &err), 0);
	for (int i = 0; i < 1000; i++) { /* closing would stop them following */
		pthread_mutex_lock(&seen.mu);
		int n = seen.calls;
		pthread_mutex_unlock(&seen.mu);
		if (n == 2)
			break;
		usleep(10000);
	}
	exec_close(x);
	ck_assert_int_eq(seen.calls, 2);
	ck_assert_int_eq(seen.rc[0], 0);
	ck_assert(seen.passed[0]);
	ck_assert_int_eq(seen.rc[1], KF_EFAULT);
}
END_TEST

static Suite *exec_suite(void)
{
	Suite *s = suite_create("exec");
	TCase *slurm = tcase_create("slurm_states");
	TCase *rows = tcase_create("job_rows");
	TCase *run = tcase_create("open_and_run");

	tcase_add_checked_fixture(slurm, setup, teardown);
	tcase_add_checked_fixture(rows, setup, teardown);
	tcase_add_checked_fixture(run, setup, teardown);
	tcase_set_timeout(run, 30);
	tcase_add_test(slurm, verdicts_follow_slurm_states);
	tcase_add_test(slurm, squeue_lines_parse_and_bad_ones_are_refused);
	tcase_add_test(slurm, gres_types_come_from_sinfo_lines);
	tcase_add_test(rows, job_rows_round_trip_and_list_until_recorded);
	tcase_add_test(rows, a_jobs_run_is_recorded_once);
	tcase_add_test(run, open_refuses_what_cannot_work);
	tcase_add_test(run, a_refused_submission_carries_sbatchs_words);
	tcase_add_test(run, a_completed_job_gives_the_nodes_answer);
	tcase_add_test(run, an_unreachable_controller_is_waited_out);
	tcase_add_test(run, a_node_failure_is_retried_once_elsewhere);
	tcase_add_test(run, a_previous_daemons_jobs_are_followed_to_their_end);
	tcase_add_test(run, queued_calls_go_as_one_array_in_arrival_order_each_its_own);
	suite_add_tcase(s, slurm);
	suite_add_tcase(s, rows);
	suite_add_tcase(s, run);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(exec_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
