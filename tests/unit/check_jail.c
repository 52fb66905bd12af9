/* check_jail: the bubblewrap jail. Jobs are small shell commands; the tests
 * assert isolation (no host files, no network, clean environment), limits
 * (wall clock, output caps, file size, CPU) and the plumbing (exit codes,
 * fds passed, cancellation). Each test gets a fresh job directory. */
#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/jail/jail.h"
#include "tests/unit/fixture.h"

static char job_dir[64];
static char outside_dir[64];
static struct jail *jl;

static void setup(void)
{
	fixture_dir_new(job_dir, sizeof job_dir, "jail-job");
	fixture_dir_new(outside_dir, sizeof outside_dir, "jail-out");
	struct jail_config cfg = {.mode = JAIL_BWRAP};
	struct kf_err err = {0};
	ck_assert_int_eq(jail_open(&cfg, &jl, &err), 0);
	ck_assert_msg(jail_usable(jl, &err) == 0, "jail unusable: %s", err.msg);
}

static void teardown(void)
{
	fixture_dir_remove(job_dir);
	fixture_dir_remove(outside_dir);
	jail_close(jl);
	jl = NULL;
}

/* Runs sh -c script in the jail with the given wall limit. */
static int run_sh(struct jail *j, const char *script, unsigned wall_ms, struct jail_result *res,
		  struct kf_err *err)
{
	const char *argv[] = {"/bin/sh", "-c", script, NULL};
	struct jail_job job = {.argv = argv, .job_dir = job_dir, .wall_ms = wall_ms};
	return jail_run(j, &job, res, err);
}

static int contains(const char *hay, size_t len, const char *needle)
{
	size_t n = strlen(needle);
	for (size_t i = 0; i + n <= len; i++)
		if (memcmp(hay + i, needle, n) == 0)
			return 1;
	return 0;
}

START_TEST(run_reports_exit_code_and_both_streams)
{
	struct jail_result r;
	struct kf_err err = {0};
	ck_assert_int_eq(run_sh(jl, "echo out; echo err >&2; exit 3", 0, &r, &err), 0);
	ck_assert_int_eq(r.exited, 1);
	ck_assert_int_eq(r.exit_code, 3);
	ck_assert_str_eq(r.out, "out\n");
	ck_assert_str_eq(r.errout, "err\n");
	ck_assert_str_eq(jail_mode_name(jl), "bwrap");
	jail_result_fini(&r);
}
END_TEST

START_TEST(job_dir_is_the_only_writable_place)
{
	struct jail_result r;
	struct kf_err err = {0};
	ck_assert_int_eq(
		run_sh(jl,
		       "pwd; echo data > made.txt; touch /usr/include/kf-x 2>/dev/null && echo WROTE-USR; true",
		       0, &r, &err),
		0);
	ck_assert_str_eq(r.out, JAIL_JOB_DIR "\n");
	char p[128];
	snprintf(p, sizeof p, "%s/made.txt", job_dir);
	struct stat st;
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert(!contains(r.out, r.out_len, "WROTE-USR"));
	jail_result_fini(&r);
}
END_TEST

START_TEST(host_files_outside_the_allowlist_are_invisible)
{
	const char *marker = "KF-SECRET-7f3a9c21-MARKER";
	char secret[128], script[512];
	snprintf(secret, sizeof secret, "%s/secret.txt", outside_dir);
	FILE *f = fopen(secret, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%s\n", marker);
	fclose(f);
	snprintf(
		script, sizeof script,
		"cat %s; cat /etc/shadow; cat /etc/passwd; ls / /root /home /work /etc; cat /proc/1/environ; "
		"cat /proc/self/environ",
		secret);
	struct jail_result r;
	struct kf_err err = {0};
	ck_assert_int_eq(run_sh(jl, script, 0, &r, &err), 0);
	ck_assert(!contains(r.out, r.out_len, marker));
	ck_assert(!contains(r.errout, r.errout_len, marker));
	ck_assert(!contains(r.out, r.out_len, "root:"));
	ck_assert(contains(r.errout, r.errout_len, "No such file"));
	jail_result_fini(&r);
}
END_TEST

START_TEST(tmp_is_private_and_bounded)
{
	struct jail_result r;
	struct kf_err err = {0};
	ck_assert_int_eq(run_sh(jl, "echo x > /tmp/kf-jail-private-probe; df -k /tmp", 0, &r, &err),
			 0);
	ck_assert_msg(contains(r.out, r.out_len, "1048576"), "df: %s %s", r.out, r.errout);
	ck_assert_int_ne(access("/tmp/kf-jail-private-probe", F_OK), 0);
	jail_result_fini(&r);
}
END_TEST

START_TEST(environment_is_clean)
{
	setenv("KF_JAIL_TEST_MARKER", "KF-ENV-MARKER-55aa", 1);
	struct jail_result r;
	struct kf_err err = {0};
	ck_assert_int_eq(run_sh(jl, "env; cat /proc/self/environ", 0, &r, &err), 0);
	ck_assert(!contains(r.out, r.out_len, "KF-ENV-MARKER-55aa"));
	ck_assert(contains(r.out, r.out_len, "HOME=/tmp"));
	ck_assert(contains(r.out, r.out_len, "LANG=C"));
	/* a user name without a passwd entry: torch.compile's getpass.getuser() */
	ck_assert(contains(r.out, r.out_len, "USER=kforge"));
	ck_assert(contains(r.out, r.out_len, "LOGNAME=kforge"));
	jail_result_fini(&r);
	unsetenv("KF_JAIL_TEST_MARKER");
}
END_TEST

/* Accepts one connection within ms; returns 1 if one came. */
static int accept_within(int ls, int ms)
{
	struct timespec t = {0, 10 * 1000000};
	for (int i = 0; i < ms / 10; i++) {
		int c = accept(ls, NULL, NULL);
		if (c >= 0) {
			close(c);
			return 1;
		}
		nanosleep(&t, NULL);
	}
	return 0;
}

START_TEST(jail_cannot_reach_host_loopback)
{
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	ck_assert_int_ge(ls, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	ck_assert_int_eq(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
	ck_assert_int_eq(listen(ls, 4), 0);
	socklen_t al = sizeof a;
	ck_assert_int_eq(getsockname(ls, (struct sockaddr *)&a, &al), 0);
	char script[256];
	snprintf(script, sizeof script,
		 "exec /bin/bash -c 'echo hello > /dev/tcp/127.0.0.1/%d && echo CONNECTED'",
		 ntohs(a.sin_port));
	struct jail_result r;
	struct kf_err err = {0};
	ck_assert_int_eq(run_sh(jl, script, 5000, &r, &err), 0);
	ck_assert(!contains(r.out, r.out_len, "CONNECTED"));
	ck_assert_int_eq(accept_within(ls, 200), 0);
	jail_result_fini(&r);

	/* The same job without the sandbox does connect: the probe works. */
	struct jail *none;
	struct jail_config cfg = {.mode = JAIL_NONE};
	ck_assert_int_eq(jail_open(&cfg, &none, &err), 0);
	ck_assert_str_eq(jail_mode_name(none), "none");
	ck_assert_int_eq(run_sh(none, script, 5000, &r, &err), 0);
	ck_assert(contains(r.out, r.out_len, "CONNECTED"));
	ck_assert_int_eq(accept_within(ls, 2000), 1);
	jail_result_fini(&r);
	jail_close(none);
	close(ls);
}
END_TEST

START_TEST(wall_clock_limit_kills_the_process_group)
{
	struct jail_result r;
	struct kf_err err = {0};
	time_t t0 = time(NULL);
	int rc = run_sh(jl, "sleep 30 & sleep 30; echo never", 300, &r, &err);
	ck_assert_int_eq(rc, KF_ETIMEOUT);
	ck_assert_int_eq(r.timed_out, 1);
	ck_assert_int_eq(r.exited, 0);
	ck_assert(strstr(err.msg, "300 ms") != NULL);
	ck_assert(time(NULL) - t0 < 10);
	ck_assert(!contains(r.out, r.out_len, "never"));
	jail_result_fini(&r);
	/* And the jail keeps working. */
	ck_assert_int_eq(run_sh(jl, "echo again", 0, &r, &err), 0);
	ck_assert_str_eq(r.out, "again\n");
	jail_result_fini(&r);
}
END_TEST

START_TEST(output_flood_is_capped_and_reported)
{
	const char *argv[] = {
		"/bin/sh", "-c",
		"head -c 3000000 /dev/zero | tr '\\0' x; head -c 100000 /dev/zero >&2", NULL};
	struct jail_job job = {
		.argv = argv, .job_dir = job_dir, .stdout_cap_bytes = 1000, .stderr_cap_bytes = 50};
	struct jail_result r;
	struct kf_err err = {0};
	ck_assert_int_eq(jail_run(jl, &job, &r, &err), 0);
	ck_assert_int_eq(r.out_len, 1000);
	ck_assert_int_eq(r.out_truncated, 1);
	ck_assert_int_eq(r.errout_len, 50);
	ck_assert_int_eq(r.errout_truncated, 1);
	ck_assert_int_eq(r.exit_code, 0);
	jail_result_fini(&r);
}
END_TEST

START_TEST(file_size_limit_stops_big_writes)
{
	const char *argv[] = {"/bin/sh", "-c", "head -c 3000000 /dev/zero > big; echo rc=$?", NULL};
	struct jail_job job = {.argv = argv, .job_dir = job_dir, .fsize_bytes = 1 << 20};
	struct jail_result r;
	struct kf_err err = {0};
	ck_assert_int_eq(jail_run(jl, &job, &r, &err), 0);
	char p[128];
	snprintf(p, sizeof p, "%s/big", job_dir);
	struct stat st;
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_int_le(st.st_size, 1 << 20);
	ck_assert(!contains(r.out, r.out_len, "rc=0"));
	jail_result_fini(&r);
}
END_TEST

START_TEST(cpu_limit_kills_a_spinning_job)
{
	const char *argv[] = {"/bin/sh", "-c", "while :; do :; done", NULL};
	struct jail_job job = {.argv = argv, .job_dir = job_dir, .cpu_s = 1, .wall_ms = 20000};
	struct jail_result r;
	struct kf_err err = {0};
	ck_assert_int_eq(jail_run(jl, &job, &r, &err), 0);
	ck_assert_int_eq(r.timed_out, 0);
	ck_assert_int_eq(r.cpu_limited, 1);
	jail_result_fini(&r);
}
END_TEST

START_TEST(memory_limit_fails_big_allocations_and_says_so)
{
	/* dd allocates its block up front: 600 MiB against a 256 MiB limit. */
	const char *argv[] = {"/bin/dd", "if=/dev/zero", "of=/dev/null",
			      "bs=600M", "count=1",	 NULL};
	struct jail_job job = {.argv = argv, .job_dir = job_dir, .mem_bytes = 256ull << 20};
	struct jail_result r;
	struct kf_err err = {0};
	ck_assert_int_eq(jail_run(jl, &job, &r, &err), 0);
	ck_assert_int_ne(r.exit_code, 0);
	ck_assert_int_eq(r.mem_limited, 1);
	jail_result_fini(&r);
	/* Without the limit the same job runs. */
	job.mem_bytes = 0;
	ck_assert_int_eq(jail_run(jl, &job, &r, &err), 0);
	ck_assert_int_eq(r.exit_code, 0);
	ck_assert_int_eq(r.mem_limited, 0);
	jail_result_fini(&r);
}
END_TEST

START_TEST(data_limit_fails_big_allocations_and_says_so)
{
	/* RLIMIT_DATA counts dd's private 600 MiB buffer against 256 MiB. */
	const char *argv[] = {"/bin/dd", "if=/dev/zero", "of=/dev/null",
			      "bs=600M", "count=1",	 NULL};
	struct jail_job job = {.argv = argv, .job_dir = job_dir, .data_bytes = 256ull << 20};
	struct jail_result r;
	struct kf_err err = {0};
	ck_assert_int_eq(jail_run(jl, &job, &r, &err), 0);
	ck_assert_int_ne(r.exit_code, 0);
	ck_assert_int_eq(r.mem_limited, 1);
	jail_result_fini(&r);
	/* Without the limit the same job runs. */
	job.data_bytes = 0;
	ck_assert_int_eq(jail_run(jl, &job, &r, &err), 0);
	ck_assert_int_eq(r.exit_code, 0);
	ck_assert_int_eq(r.mem_limited, 0);
	jail_result_fini(&r);
}
END_TEST

/* How many live processes have marker in their command line (zombies
 * have none: they are dead, waiting for their new parent to reap them). */
static int procs_with(const char *marker)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		char p[300], buf[4096];
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(p, sizeof p, "/proc/%s/cmdline", e->d_name);
		int fd = open(p, O_RDONLY);
		if (fd < 0)
			continue;
		ssize_t len = read(fd, buf, sizeof buf);
		close(fd);
		if (len > 0 && contains(buf, (size_t)len, marker))
			n++;
	}
	closedir(d);
	return n;
}

START_TEST(jobs_die_with_a_killed_daemon)
{
	/* A stand-in daemon runs a long job and is SIGKILLed mid-job: neither
	 * bwrap nor the job may outlive it. */
	char marker[64], script[128], started[128];
	snprintf(marker, sizeof marker, "kf-orphan-marker-%d", (int)getpid());
	snprintf(script, sizeof script, "touch started; exec sleep 300 # %s", marker);
	snprintf(started, sizeof started, "%s/started", job_dir);
	pid_t d = fork();
	ck_assert_int_ge(d, 0);
	if (d == 0) {
		const char *argv[] = {"/bin/sh", "-c", script, NULL};
		struct jail_job job = {.argv = argv, .job_dir = job_dir, .wall_ms = 600000};
		struct jail_result r;
		_exit(jail_run(jl, &job, &r, NULL) == 0 ? 0 : 1);
	}
	struct stat st;
	for (int i = 0; i < 1000 && stat(started, &st) != 0; i++)
		usleep(10000);
	ck_assert_int_eq(stat(started, &st), 0);
	ck_assert_int_gt(procs_with(marker), 0);
	kill(d, SIGKILL);
	ck_assert_int_eq(waitpid(d, NULL, 0), d);
	/* The kernel delivers the death signals at once; give the dying
	 * processes two seconds to be reaped. */
	int left = 1;
	for (int i = 0; i < 200 && (left = procs_with(marker)) > 0; i++)
		usleep(10000);
	ck_assert_int_eq(left, 0);
}
END_TEST

static volatile int cancel_flag;
static void *cancel_later(void *arg)
{
	(void)arg;
	struct timespec t = {0, 200 * 1000000};
	nanosleep(&t, NULL);
	cancel_flag = 1;
	return NULL;
}

START_TEST(cancel_flag_kills_the_job)
{
	cancel_flag = 0;
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, cancel_later, NULL), 0);
	const char *argv[] = {"/bin/sh", "-c", "sleep 30", NULL};
	struct jail_job job = {.argv = argv, .job_dir = job_dir, .cancel = &cancel_flag};
	struct jail_result r;
	struct kf_err err = {0};
	time_t t0 = time(NULL);
	ck_assert_int_eq(jail_run(jl, &job, &r, &err), KF_ECANCELED);
	ck_assert_int_eq(r.canceled, 1);
	ck_assert(time(NULL) - t0 < 10);
	pthread_join(th, NULL);
	jail_result_fini(&r);
}
END_TEST

START_TEST(passed_fd_reaches_the_job_as_fd_3)
{
	int p[2];
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	const char *argv[] = {"/bin/sh", "-c", "echo report >&3", NULL};
	struct jail_job job = {
		.argv = argv, .job_dir = job_dir, .pass_fds = &p[1], .pass_fds_len = 1};
	struct jail_result r;
	struct kf_err err = {0};
	ck_assert_int_eq(jail_run(jl, &job, &r, &err), 0);
	close(p[1]);
	char buf[64] = {0};
	ck_assert_int_eq(read(p[0], buf, sizeof buf - 1), 7);
	ck_assert_str_eq(buf, "report\n");
	close(p[0]);
	ck_assert_int_eq(r.exit_code, 0);
	jail_result_fini(&r);
}
END_TEST

START_TEST(no_gpu_nodes_unless_asked)
{
	struct jail_result r;
	struct kf_err err = {0};
	ck_assert_int_eq(run_sh(jl, "ls /dev", 0, &r, &err), 0);
	ck_assert(!contains(r.out, r.out_len, "nvidia"));
	ck_assert(contains(r.out, r.out_len, "null"));
	jail_result_fini(&r);
}
END_TEST

/* With a GPU: a driver-API probe built by nvcc outside the jail sees the
 * device only when the job asks for it. Without one: asking for the GPU
 * still runs the job, with no device nodes. */
START_TEST(gpu_is_bound_only_when_asked)
{
	struct jail_result r;
	struct kf_err err = {0};
	if (access("/dev/nvidiactl", F_OK) != 0) {
		const char *argv[] = {"/bin/sh", "-c", "ls /dev", NULL};
		struct jail_job job = {.argv = argv, .job_dir = job_dir, .want_gpu = 1};
		ck_assert_int_eq(jail_run(jl, &job, &r, &err), 0);
		ck_assert_int_eq(r.exit_code, 0);
		ck_assert(!contains(r.out, r.out_len, "nvidia"));
		jail_result_fini(&r);
		return;
	}
	char cmd[4096 + 512], probe[128];
	snprintf(probe, sizeof probe, "%s/probe.cu", job_dir);
	FILE *f = fopen(probe, "w");
	ck_assert_ptr_nonnull(f);
	fputs("#include <cuda.h>\n#include <stdio.h>\nint main(void) { int n = 0; CUresult r = cuInit(0);\n"
	      "if (r == CUDA_SUCCESS) cuDeviceGetCount(&n); printf(\"init=%d count=%d\\n\", (int)r, n); return 0; }\n",
	      f);
	fclose(f);
	snprintf(cmd, sizeof cmd, "cd %s && %s/bin/nvcc -o probe probe.cu -lcuda", job_dir,
		 jail_cuda_home(jl));
	ck_assert_int_eq(system(cmd), 0);
	/* The job sees its dir as /job: run it by that name. */
	const char *jargv[] = {"/job/probe", NULL};
	struct jail_job job = {.argv = jargv, .job_dir = job_dir, .want_gpu = 1};
	ck_assert_int_eq(jail_run(jl, &job, &r, &err), 0);
	ck_assert_msg(contains(r.out, r.out_len, "init=0 count="), "with GPU: %s %s", r.out,
		      r.errout);
	ck_assert(!contains(r.out, r.out_len, "count=0"));
	jail_result_fini(&r);
	job.want_gpu = 0;
	ck_assert_int_eq(jail_run(jl, &job, &r, &err), 0);
	ck_assert_msg(!contains(r.out, r.out_len, "init=0 "), "without GPU: %s", r.out);
	jail_result_fini(&r);
}
END_TEST

/* A GPU job is told where the driver's libcuda lives: the loader by
 * LD_LIBRARY_PATH, Triton by TRITON_LIBCUDA_PATH (its /sbin/ldconfig -p
 * lookup does not describe the jail). The driver's folder is found on the
 * daemon's LD_LIBRARY_PATH first: a folder with a stand-in libcuda.so.1. */
START_TEST(a_gpu_job_is_told_where_libcuda_is)
{
	char lib[64], p[128], want[160];
	struct jail_result r;
	struct kf_err err = {0};
	snprintf(lib, sizeof lib, "/tmp/kf-jail-lib-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(lib));
	snprintf(p, sizeof p, "%s/libcuda.so.1", lib);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	setenv("LD_LIBRARY_PATH", lib, 1);
	const char *argv[] = {"/bin/sh", "-c", "env", NULL};
	struct jail_job job = {.argv = argv, .job_dir = job_dir, .want_gpu = 1};
	ck_assert_int_eq(jail_run(jl, &job, &r, &err), 0);
	snprintf(want, sizeof want, "TRITON_LIBCUDA_PATH=%s\n", lib);
	ck_assert_msg(contains(r.out, r.out_len, want), "%s", r.out);
	snprintf(want, sizeof want, "LD_LIBRARY_PATH=%s\n", lib);
	ck_assert_msg(contains(r.out, r.out_len, want), "%s", r.out);
	jail_result_fini(&r);
	job.want_gpu = 0;
	ck_assert_int_eq(jail_run(jl, &job, &r, &err), 0);
	ck_assert(!contains(r.out, r.out_len, "TRITON_LIBCUDA_PATH"));
	jail_result_fini(&r);
	unlink(p);
	rmdir(lib);
}
END_TEST

START_TEST(bad_jobs_are_rejected_with_a_reason)
{
	struct jail_result r;
	struct kf_err err = {0};
	const char *rel[] = {"sh", "-c", "true", NULL};
	struct jail_job job = {.argv = rel, .job_dir = job_dir};
	ck_assert_int_eq(jail_run(jl, &job, &r, &err), KF_EINVAL);
	ck_assert(strstr(err.msg, "absolute") != NULL);
	jail_result_fini(&r);

	kf_err_clear(&err);
	const char *ok[] = {"/bin/true", NULL};
	struct jail_job nodir = {.argv = ok, .job_dir = "/nonexistent/kf-dir"};
	ck_assert_int_eq(jail_run(jl, &nodir, &r, &err), KF_EINVAL);
	ck_assert(strstr(err.msg, "/nonexistent/kf-dir") != NULL);
	jail_result_fini(&r);

	kf_err_clear(&err);
	int fds[JAIL_MAX_PASS_FDS + 1] = {0};
	struct jail_job many = {.argv = ok,
				.job_dir = job_dir,
				.pass_fds = fds,
				.pass_fds_len = JAIL_MAX_PASS_FDS + 1};
	ck_assert_int_eq(jail_run(jl, &many, &r, &err), KF_EINVAL);
	jail_result_fini(&r);

	kf_err_clear(&err);
	struct jail_bind b = {.src = "/nonexistent/kf-bind"};
	struct jail_job badbind = {
		.argv = ok, .job_dir = job_dir, .ro_binds = &b, .ro_binds_len = 1};
	ck_assert_int_eq(jail_run(jl, &badbind, &r, &err), KF_EINVAL);
	ck_assert(strstr(err.msg, "kf-bind") != NULL);
	jail_result_fini(&r);
}
END_TEST

START_TEST(missing_bubblewrap_refuses_jobs_and_names_the_override)
{
	struct jail *j;
	struct jail_config cfg = {.mode = JAIL_BWRAP, .bwrap_path = "/nonexistent/bwrap"};
	struct kf_err err = {0};
	ck_assert_int_eq(jail_open(&cfg, &j, &err), 0);
	ck_assert_int_eq(jail_usable(j, &err), KF_ESANDBOX);
	ck_assert(strstr(err.msg, "--sandbox=none") != NULL);
	struct jail_result r;
	kf_err_clear(&err);
	ck_assert_int_eq(run_sh(j, "echo hi", 0, &r, &err), KF_ESANDBOX);
	ck_assert_int_eq(r.out_len, 0);
	jail_result_fini(&r);
	jail_close(j);
}
END_TEST

START_TEST(missing_toolkit_fails_open)
{
	struct jail *j = NULL;
	struct jail_config cfg = {.mode = JAIL_BWRAP, .cuda_home = "/nonexistent/cuda"};
	struct kf_err err = {0};
	ck_assert_int_eq(jail_open(&cfg, &j, &err), KF_EINVAL);
	ck_assert_ptr_null(j);
	ck_assert(strstr(err.msg, "/nonexistent/cuda") != NULL);
}
END_TEST

START_TEST(nvcc_runs_in_the_jail)
{
	char src[128], nvcc[4200];
	snprintf(src, sizeof src, "%s/k.cu", job_dir);
	FILE *f = fopen(src, "w");
	ck_assert_ptr_nonnull(f);
	fputs("extern \"C\" __global__ void k(float *x) { x[threadIdx.x] = 1.0f; }\n", f);
	fclose(f);
	snprintf(nvcc, sizeof nvcc, "%s/bin/nvcc", jail_cuda_home(jl));
	const char *argv[] = {nvcc, "--cubin", "-arch=sm_90", "-o", "k.cubin", "k.cu", NULL};
	struct jail_job job = {.argv = argv, .job_dir = job_dir};
	struct jail_result r;
	struct kf_err err = {0};
	ck_assert_int_eq(jail_run(jl, &job, &r, &err), 0);
	ck_assert_msg(r.exit_code == 0, "nvcc failed: %s", r.errout);
	snprintf(src, sizeof src, "%s/k.cubin", job_dir);
	struct stat st;
	ck_assert_int_eq(stat(src, &st), 0);
	ck_assert_int_gt(st.st_size, 0);
	jail_result_fini(&r);
}
END_TEST

static Suite *jail_suite(void)
{
	Suite *s = suite_create("jail");
	TCase *tc = tcase_create("run");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, run_reports_exit_code_and_both_streams);
	tcase_add_test(tc, job_dir_is_the_only_writable_place);
	tcase_add_test(tc, host_files_outside_the_allowlist_are_invisible);
	tcase_add_test(tc, tmp_is_private_and_bounded);
	tcase_add_test(tc, environment_is_clean);
	tcase_add_test(tc, jail_cannot_reach_host_loopback);
	tcase_add_test(tc, wall_clock_limit_kills_the_process_group);
	tcase_add_test(tc, output_flood_is_capped_and_reported);
	tcase_add_test(tc, file_size_limit_stops_big_writes);
	tcase_add_test(tc, cpu_limit_kills_a_spinning_job);
	tcase_add_test(tc, memory_limit_fails_big_allocations_and_says_so);
	tcase_add_test(tc, data_limit_fails_big_allocations_and_says_so);
	tcase_add_test(tc, jobs_die_with_a_killed_daemon);
	tcase_add_test(tc, cancel_flag_kills_the_job);
	tcase_add_test(tc, passed_fd_reaches_the_job_as_fd_3);
	tcase_add_test(tc, no_gpu_nodes_unless_asked);
	tcase_add_test(tc, gpu_is_bound_only_when_asked);
	tcase_add_test(tc, a_gpu_job_is_told_where_libcuda_is);
	tcase_add_test(tc, bad_jobs_are_rejected_with_a_reason);
	tcase_add_test(tc, missing_bubblewrap_refuses_jobs_and_names_the_override);
	tcase_add_test(tc, missing_toolkit_fails_open);
	tcase_add_test(tc, nvcc_runs_in_the_jail);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(jail_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
