/* check_pyworker: the warm sandboxed python behind torch references
 * (sandbox/check/check_pyworker.c, torch_worker.py), in bubblewrap (loop
 * 0) and without a sandbox (loop 1). PyTorch is not needed: the suites put
 * tests/data/torch_double (a stand-in torch, see its README) on PYTHONPATH,
 * so the fork server, its reset between jobs, the limits and the restarts
 * are the real code; the arithmetic is the double's. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/log.h"
#include "kernels/op.h"
#include "sandbox/check/check.h"
#include "sandbox/check/check_int.h"
#include "sandbox/check/check_pyworker.h"
#include "sandbox/jail/jail.h"

#define N 1000

static char tmp[] = "/tmp/kf-pyworker-XXXXXX";
static char jdir[PATH_MAX];
static struct check_env env;

static void setup_mode(int none)
{
	const char *src = getenv("KFORGE_SRC");
	char pp[PATH_MAX];
	snprintf(pp, sizeof pp, "%s/tests/data/torch_double", src ? src : ".");
	setenv("PYTHONPATH", pp, 1);
	log_set_level(LOG_ERROR);
	memcpy(tmp + strlen(tmp) - 6, "XXXXXX", 6);
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	snprintf(jdir, sizeof jdir, "%s/job", tmp);
	ck_assert_int_eq(mkdir(jdir, 0700), 0);
	memset(&env, 0, sizeof env);
	check_env_init(&env);
	env.data_dir = tmp;
	env.sandbox_none = none;
	struct jail *j;
	struct kf_err err = {0};
	ck_assert_msg(check_get_jail(&env, &j, &err) == 0, "jail: %s", err.msg);
}

static void teardown(void)
{
	check_env_fini(&env);
	fs_rm_tree(tmp);
}

/* The axpb spec of tests/gpu/pass/axpb_torch.json with reference expr. */
static struct spec *axpb(const char *expr, struct spec_bound *b, int64_t *n)
{
	json_t *j = json_pack(
		"{s:s, s:[{s:i}], s:{s:{s:s, s:[s], s:s}, s:{s:s, s:[s], s:s}, s:{s:s, s:[s], "
		"s:s}}, s:{s:{s:s, s:f}}, s:[{s:s, s:[i], s:[i], s:[s,s,s,s,s]}], s:{s:s}}",
		"source", "extern \"C\" __global__ void axpb() {}", "sizes", "N", N, "tensors", "x",
		"dtype", "f32", "shape", "N", "role", "input", "w", "dtype", "f32", "shape", "N",
		"role", "input", "y", "dtype", "f32", "shape", "N", "role", "output", "scalars",
		"s", "dtype", "f32", "value", 1.5, "launch", "kernel", "axpb", "grid", 4, "block",
		256, "args", "y", "x", "w", "s", "N", "reference", "torch", expr);
	struct spec_limits lim;
	spec_limits_default(&lim);
	struct spec *s = NULL;
	struct kf_err err = {0};
	ck_assert_msg(spec_parse(j, &lim, op_find, &s, &err) == 0, "%s", err.msg);
	json_decref(j);
	*n = N;
	ck_assert_msg(spec_bind(s, n, &lim, "sizes[0]", b, &err) == 0, "%s", err.msg);
	return s;
}

/* Runs expr as the reference for seed, its outputs into dir; 0 or its
 * error code. */
static int ref_in(const char *dir, const char *expr, uint64_t seed, struct check_phases *ph,
		  struct kf_err *err)
{
	struct spec_bound b;
	int64_t n;
	struct spec *s = axpb(expr, &b, &n);
	int rc = check_torch_reference(&env, s, dir, &n, &b, &seed, 1, NULL, ph, err);
	spec_free(s);
	return rc;
}

static int ref(const char *expr, uint64_t seed, struct check_phases *ph, struct kf_err *err)
{
	return ref_in(jdir, expr, seed, ph, err);
}

/* The reference's y for seed in dir compared with scale * x + add * w
 * computed here from the same seed: the number of elements that differ. */
static int y_differs_in(const char *dir, uint64_t seed, double scale, double add)
{
	struct spec_bound b;
	int64_t n;
	struct spec *s = axpb("x", &b, &n);
	double *want[SPEC_MAX_TENSORS] = {0};
	struct kf_err err = {0};
	ck_assert_msg(check_reference_want(s, dir, "ref", &n, &b, 0, seed, want, &err) == 0, "%s",
		      err.msg);
	float x[N], w[N];
	spec_fill(&s->tensors[0], 0, seed, spec_init_max(s, 0, &n), x, N);
	spec_fill(&s->tensors[1], 1, seed, spec_init_max(s, 1, &n), w, N);
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad += want[2][i] != scale * (double)x[i] + add * (double)w[i];
	for (int t = 0; t < SPEC_MAX_TENSORS; t++)
		free(want[t]);
	spec_free(s);
	return bad;
}

static int y_differs(uint64_t seed, double scale, double add)
{
	return y_differs_in(jdir, seed, scale, add);
}

START_TEST(second_reference_is_served_warm)
{
	setup_mode(_i);
	struct check_phases ph = {0};
	struct kf_err err = {0};
	ck_assert_msg(ref("s * x + w", 7, &ph, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(y_differs(7, 1.5, 1), 0);
	ck_assert_uint_eq(ph.torch_runs, 1);
	ck_assert_uint_eq(ph.torch_warm, 0);
	ck_assert(ph.torch_start_ms > 0);
	double start = ph.torch_start_ms;
	ck_assert_msg(ref("s * x + w", 8, &ph, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(y_differs(8, 1.5, 1), 0);
	ck_assert_uint_eq(ph.torch_runs, 2);
	ck_assert_uint_eq(ph.torch_warm, 1);
	ck_assert(ph.torch_start_ms == start); /* no second start */
	teardown();
}
END_TEST

START_TEST(monkeypatching_torch_does_not_reach_the_next_job)
{
	setup_mode(_i);
	struct check_phases ph = {0};
	struct kf_err err = {0};
	/* Job 1 breaks Tensor addition and marks the module; its own result
	 * shows the patch worked there. */
	ck_assert_msg(ref("torch.Tensor.__add__ = lambda a, b: a\n"
			  "torch.POISONED = 1\n"
			  "import sys; sys.modules['math'] = None\n"
			  "y = x * s + w",
			  1, &ph, &err) == 0,
		      "%s", err.msg);
	ck_assert_int_eq(y_differs(1, 1.5, 0), 0);
	/* Job 2, same worker: the real addition, no mark, math importable. */
	ck_assert_msg(
		ref("import math\ny = x * s + w + (1000 if hasattr(torch, 'POISONED') else 0)", 2,
		    &ph, &err) == 0,
		"%s", err.msg);
	ck_assert_int_eq(y_differs(2, 1.5, 1), 0);
	ck_assert_uint_eq(ph.torch_warm, 1);
	teardown();
}
END_TEST

START_TEST(the_worker_is_out_of_a_jobs_reach)
{
	setup_mode(_i);
	struct kf_err err = {0};
	/* Same uid, but the worker is not dumpable: its memory cannot be
	 * written (or read) through /proc, so a job cannot plant code in it.
	 * In bubblewrap only (the capabilities are dropped there): without a
	 * sandbox a daemon run as root could. */
	ck_assert_msg(ref("import os\n"
			  "try:\n"
			  "    open('/proc/%d/mem' % os.getppid(), 'r+b').close()\n"
			  "    y = x * 0\n"
			  "except OSError:\n"
			  "    y = x * s + w",
			  9, NULL, &err) == 0,
		      "%s", err.msg);
	ck_assert_int_eq(y_differs(9, 1.5, 1), 0);
	teardown();
}
END_TEST

START_TEST(an_output_that_is_a_link_is_refused)
{
	setup_mode(_i);
	/* A host file of the output's size: read through the link, it would
	 * pass for the reference. */
	char host[PATH_MAX + 16], expr[2 * PATH_MAX];
	snprintf(host, sizeof host, "%s/host.bin", tmp);
	static double zeros[N];
	ck_assert_int_eq(fs_write_file(host, zeros, sizeof zeros), 0);
	snprintf(expr, sizeof expr, "import os\nos.symlink('%s', 'torch.t0.y.bin')\nos._exit(0)",
		 host);
	struct kf_err err = {0};
	ck_assert_msg(ref(expr, 1, NULL, &err) == 0, "%s", err.msg);
	struct spec_bound b;
	int64_t n;
	struct spec *s = axpb("x", &b, &n);
	double *want[SPEC_MAX_TENSORS] = {0};
	ck_assert_int_eq(check_reference_want(s, jdir, "ref", &n, &b, 0, 1, want, &err), KF_EIO);
	ck_assert_msg(strstr(err.msg, "torch reference output y missing or of the wrong size"),
		      "%s", err.msg);
	spec_free(s);
	teardown();
}
END_TEST

START_TEST(files_a_job_leaves_are_gone_for_the_next)
{
	setup_mode(_i);
	struct check_phases ph = {0};
	struct kf_err err = {0};
	ck_assert_msg(ref("import os\n"
			  "open('left.py', 'w').write('x')\n"
			  "open(os.environ['HOME'] + '/cache', 'w').write('x')\n"
			  "open('/tmp/planted', 'w').write('x')\n"
			  "y = x * s + w",
			  1, &ph, &err) == 0,
		      "%s", err.msg);
	/* The work directory and scratch are emptied by the daemon and the
	 * worker; /tmp is the jail's own only in bubblewrap. */
	const char *check =
		_i == 0 ? "import os\nassert not os.path.exists('/tmp/planted')\n"
			  "assert os.listdir('.') == ['torch_job.json', "
			  "'torch.in.t0.x.bin', 'torch.in.t0.w.bin', 'torch.log', "
			  "'scratch'] or sorted(os.listdir('.')) == sorted(['torch_job.json', "
			  "'torch.in.t0.x.bin', 'torch.in.t0.w.bin', 'torch.log', "
			  "'scratch'])\ny = x * s + w"
			: "import os\nassert sorted(os.listdir('.')) == sorted(["
			  "'torch_job.json', 'torch.in.t0.x.bin', 'torch.in.t0.w.bin', "
			  "'torch.log', 'scratch'])\nassert os.listdir(os.environ['HOME']) "
			  "== []\ny = x * s + w";
	if (_i == 1)
		unlink("/tmp/planted");
	ck_assert_msg(ref(check, 2, &ph, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(ph.torch_warm, 1);
	teardown();
}
END_TEST

/* Processes whose command line holds both a and b (NUL-separated args),
 * bubblewrap's own not counted. */
static int procs_with(const char *a, const char *b)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char p[300], buf[8192];
		snprintf(p, sizeof p, "/proc/%s/cmdline", e->d_name);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		size_t len = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		if (len == 0 || strstr(buf, "bwrap")) /* argv[0] */
			continue;
		for (size_t i = 0; i < len; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[len] = 0;
		n += strstr(buf, a) && strstr(buf, b);
	}
	closedir(d);
	return n;
}

START_TEST(a_hanging_job_is_killed_and_the_worker_keeps_serving)
{
	setup_mode(_i);
	struct check_pyworker *w;
	int started;
	double start_ms;
	struct kf_err err = {0};
	ck_assert_msg(check_pyworker_lease(&env, NULL, &w, &started, &start_ms, &err) == 0, "%s",
		      err.msg);
	ck_assert_int_eq(started, 1);
	/* It forks a process that outlives it, then hangs. */
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/torch_job.json", check_pyworker_dir(w));
	static const char JOB[] =
		"{\"expr\": \"import os, time\\nif os.fork() == 0:\\n    os.setsid()\\n    "
		"time.sleep(600)\\nwhile True: pass\", \"sizes\": {}, \"scalars\": {}, "
		"\"outputs\": [], \"trials\": [{\"trial\": 0, \"inputs\": []}]}";
	ck_assert_int_eq(fs_write_file(p, JOB, strlen(JOB)), 0);
	struct check_pyworker_status st;
	ck_assert_msg(check_pyworker_run(w, 1000, NULL, &st, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(st.timed_out, 1);
	ck_assert_int_eq(st.exited, 0);
	check_pyworker_release(&env, w);
	/* Only the server is left (and its guard without bubblewrap): the
	 * job and what it forked were killed. */
	ck_assert_int_eq(procs_with("torch_worker.py", tmp), _i == 0 ? 1 : 2);
	struct check_phases ph = {0};
	ck_assert_msg(ref("s * x + w", 3, &ph, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(y_differs(3, 1.5, 1), 0);
	ck_assert_uint_eq(ph.torch_warm, 1);
	teardown();
}
END_TEST

START_TEST(a_crashing_job_is_reported_and_the_worker_keeps_serving)
{
	setup_mode(_i);
	struct check_phases ph = {0};
	struct kf_err err = {0};
	ck_assert_int_eq(
		ref("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)", 1, &ph, &err),
		KF_EINVAL);
	ck_assert_msg(strstr(err.msg, "reference.torch failed: its python process died of "
				      "signal 11"),
		      "%s", err.msg);
	struct kf_err e2 = {0};
	ck_assert_int_eq(ref("y = undefined_name", 1, &ph, &e2), KF_EINVAL);
	ck_assert_msg(strstr(e2.msg, "reference.torch failed: ") &&
			      strstr(e2.msg, "NameError: name 'undefined_name' is not defined"),
		      "%s", e2.msg);
	struct kf_err e3 = {0};
	ck_assert_msg(ref("s * x + w", 4, &ph, &e3) == 0, "%s", e3.msg);
	ck_assert_int_eq(y_differs(4, 1.5, 1), 0);
	ck_assert_uint_eq(ph.torch_runs, 3);
	ck_assert_uint_eq(ph.torch_warm, 2);
	teardown();
}
END_TEST

static volatile int cancel_flag;

static void *cancel_when_started(void *arg)
{
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof cmd, "ls %s/jobs/pyworker-*/work/started >/dev/null 2>&1",
		 (const char *)arg);
	for (int i = 0; i < 3000 && system(cmd) != 0; i++)
		usleep(10000);
	cancel_flag = 1;
	return NULL;
}

START_TEST(a_cancelled_job_is_killed_and_the_worker_keeps_serving)
{
	setup_mode(_i);
	cancel_flag = 0;
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, cancel_when_started, tmp), 0);
	struct spec_bound b;
	int64_t n;
	struct spec *s = axpb("open('started', 'w').close()\nimport time\ntime.sleep(600)", &b, &n);
	uint64_t seed = 1;
	struct check_phases ph = {0};
	struct kf_err err = {0};
	ck_assert_int_eq(
		check_torch_reference(&env, s, jdir, &n, &b, &seed, 1, &cancel_flag, &ph, &err),
		KF_ECANCELED);
	pthread_join(th, NULL);
	spec_free(s);
	/* The job is gone; the worker (and its guard without bubblewrap) stays. */
	ck_assert_int_eq(procs_with("torch_worker.py", tmp), _i == 0 ? 1 : 2);
	ck_assert_msg(ref("s * x + w", 2, &ph, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(y_differs(2, 1.5, 1), 0);
	ck_assert_uint_eq(ph.torch_warm, 1);
	teardown();
}
END_TEST

/* The pid of the worker's python (the server: the one matching process
 * whose parent does not match; its guard's does), or 0. */
static pid_t worker_pid(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t pids[64], ppids[64];
	int n = 0;
	while ((e = readdir(d)) && n < 64) {
		char p[300], buf[8192];
		snprintf(p, sizeof p, "/proc/%s/cmdline", e->d_name);
		FILE *f = e->d_name[0] >= '1' && e->d_name[0] <= '9' ? fopen(p, "r") : NULL;
		if (!f)
			continue;
		size_t len = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[len] = 0;
		int is_bwrap = strstr(buf, "bwrap") != NULL; /* argv[0] */
		for (size_t i = 0; i < len; i++)
			if (!buf[i])
				buf[i] = ' ';
		if (is_bwrap || !strstr(buf, "torch_worker.py") || !strstr(buf, tmp))
			continue;
		snprintf(p, sizeof p, "/proc/%s/stat", e->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		len = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[len] = 0;
		char *rp = strrchr(buf, ')');
		pids[n] = (pid_t)strtol(e->d_name, NULL, 10);
		ppids[n++] = rp ? (pid_t)strtol(rp + 4, NULL, 10) : 0; /* ") S PPID" */
	}
	closedir(d);
	for (int i = 0; i < n; i++) {
		int child = 0;
		for (int k = 0; k < n; k++)
			child |= ppids[i] == pids[k];
		if (!child)
			return pids[i];
	}
	return 0;
}

START_TEST(a_dead_worker_is_restarted)
{
	setup_mode(_i);
	struct check_phases ph = {0};
	struct kf_err err = {0};
	/* A job that kills its worker fails, saying so. */
	ck_assert_int_eq(ref("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
			     "import time; time.sleep(30)",
			     1, &ph, &err),
			 KF_EFAULT);
	ck_assert_msg(strstr(err.msg, "the torch worker died during the reference"), "%s", err.msg);
	/* The next reference starts a new one. */
	struct kf_err e2 = {0};
	ck_assert_msg(ref("s * x + w", 5, &ph, &e2) == 0, "%s", e2.msg);
	ck_assert_int_eq(y_differs(5, 1.5, 1), 0);
	ck_assert_uint_eq(ph.torch_warm, 0);
	/* A worker killed from outside between jobs is replaced too. */
	pid_t pid = worker_pid();
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	for (int i = 0; i < 200 && worker_pid() == pid; i++)
		usleep(10000);
	ck_assert_msg(ref("s * x + w", 6, &ph, &e2) == 0, "%s", e2.msg);
	ck_assert_int_eq(y_differs(6, 1.5, 1), 0);
	ck_assert_uint_eq(ph.torch_runs, 3);
	ck_assert_uint_eq(ph.torch_warm, 0);
	teardown();
}
END_TEST

START_TEST(workers_die_with_a_killed_daemon)
{
	setup_mode(_i);
	char started[PATH_MAX + 16];
	snprintf(started, sizeof started, "%s/started", tmp);
	pid_t d = fork();
	ck_assert_int_ge(d, 0);
	if (d == 0) { /* the stand-in daemon: a reference that hangs */
		/* In bubblewrap even a process the job detaches (fork, setsid)
		 * dies with the jail's pid namespace; without a sandbox the
		 * worker's guard kills its session, which a detached process
		 * has left, as for any --sandbox=none job. */
		const char *expr = _i == 0 ? "import os\nif os.fork() == 0:\n    os.setsid()\n"
					     "    while True: pass\n"
					     "open('started', 'w').close()\nwhile True: pass"
					   : "import os\nif os.fork() == 0:\n    while True: pass\n"
					     "open('started', 'w').close()\nwhile True: pass";
		struct kf_err err = {0};
		_exit(ref(expr, 1, NULL, &err) == 0 ? 0 : 1);
	}
	/* The job's marker appears in the worker's work directory. */
	int up = 0;
	for (int i = 0; i < 3000 && !up; i++) {
		char cmd[PATH_MAX + 64];
		snprintf(cmd, sizeof cmd, "ls %s/jobs/pyworker-*/work/started >/dev/null 2>&1",
			 tmp);
		up = system(cmd) == 0;
		if (!up)
			usleep(10000);
	}
	ck_assert_msg(up, "the job did not start");
	/* server, job, its child (and the guard without bubblewrap) */
	ck_assert_int_ge(procs_with("torch_worker.py", tmp), 3 + _i);
	kill(d, SIGKILL);
	ck_assert_int_eq(waitpid(d, NULL, 0), d);
	int left = 1;
	for (int i = 0; i < 200 && (left = procs_with("torch_worker.py", tmp)) > 0; i++)
		usleep(10000);
	ck_assert_int_eq(left, 0);
	teardown();
}
END_TEST

START_TEST(torch_missing_is_a_clear_answer)
{
	setup_mode(_i);
	setenv("PYTHONPATH", "/nonexistent", 1);
	struct kf_err err = {0};
	ck_assert_int_eq(ref("s * x + w", 1, NULL, &err), KF_ENOTFOUND);
	ck_assert_msg(
		strstr(err.msg, "torch not available: ") &&
			strstr(err.msg, "use a built-in op or a CUDA source as the reference"),
		"%s", err.msg);
	teardown();
}
END_TEST

struct conc {
	char dir[PATH_MAX + 8];
	uint64_t seed;
	int rc;
	struct kf_err err;
};

static void *concurrent_ref(void *arg)
{
	struct conc *c = arg;
	c->rc = ref_in(c->dir, "import time\ntime.sleep(0.2)\ny = s * x + w", c->seed, NULL,
		       &c->err);
	return NULL;
}

START_TEST(concurrent_references_each_get_their_own_answer)
{
	setup_mode(_i);
	struct conc c[CHECK_PYWORKER_MAX + 2];
	pthread_t th[CHECK_PYWORKER_MAX + 2];
	for (int k = 0; k < CHECK_PYWORKER_MAX + 2; k++) {
		memset(&c[k], 0, sizeof c[k]);
		snprintf(c[k].dir, sizeof c[k].dir, "%s/c%d", tmp, k);
		ck_assert_int_eq(mkdir(c[k].dir, 0700), 0);
		c[k].seed = 100 + (uint64_t)k;
		ck_assert_int_eq(pthread_create(&th[k], NULL, concurrent_ref, &c[k]), 0);
	}
	for (int k = 0; k < CHECK_PYWORKER_MAX + 2; k++) {
		pthread_join(th[k], NULL);
		ck_assert_msg(c[k].rc == 0, "%s", c[k].err.msg);
		ck_assert_int_eq(y_differs_in(c[k].dir, c[k].seed, 1.5, 1), 0);
	}
	/* Never more workers than the cap (each with its guard without
	 * bubblewrap). */
	ck_assert_int_le(procs_with("torch_worker.py", tmp), CHECK_PYWORKER_MAX * (_i + 1));
	teardown();
}
END_TEST

Suite *pyworker_suite(void)
{
	Suite *s = suite_create("pyworker");
	TCase *tc = tcase_create("worker");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, second_reference_is_served_warm, 0, 2);
	tcase_add_loop_test(tc, monkeypatching_torch_does_not_reach_the_next_job, 0, 2);
	tcase_add_loop_test(tc, the_worker_is_out_of_a_jobs_reach, 0, 1);
	tcase_add_loop_test(tc, files_a_job_leaves_are_gone_for_the_next, 0, 2);
	tcase_add_loop_test(tc, an_output_that_is_a_link_is_refused, 0, 2);
	tcase_add_loop_test(tc, a_hanging_job_is_killed_and_the_worker_keeps_serving, 0, 2);
	tcase_add_loop_test(tc, a_crashing_job_is_reported_and_the_worker_keeps_serving, 0, 2);
	tcase_add_loop_test(tc, a_cancelled_job_is_killed_and_the_worker_keeps_serving, 0, 2);
	tcase_add_loop_test(tc, a_dead_worker_is_restarted, 0, 2);
	tcase_add_loop_test(tc, workers_die_with_a_killed_daemon, 0, 2);
	tcase_add_loop_test(tc, torch_missing_is_a_clear_answer, 0, 2);
	tcase_add_loop_test(tc, concurrent_references_each_get_their_own_answer, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pyworker_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
