/* jail: bubblewrap children with limits. The bind allowlist is resolved once
 * at open; the GPU driver's library directory once, on the first GPU job.
 * The child is made with fork (argv, envp and every path prepared before it,
 * so the child only makes async-signal-safe system calls) and waited for
 * with a poll loop over its output pipes and a pidfd, which also watches
 * the wall clock and the cancel flag. Never `--ro-bind / /`. */
#include "sandbox/jail/jail.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_BINDS	48
#define MAX_ARGS	512
#define DEFAULT_WALL_MS 60000u
#define DEFAULT_FSIZE	(256ull << 20)
#define DEFAULT_NPROC	512u
#define DEFAULT_CAP	(1u << 20)
#define BASE_PATH	"/usr/local/bin:/usr/bin:/bin"

struct bind {
	char src[PATH_MAX]; /* host path (resolved) */
	char dst[PATH_MAX]; /* path in the jail */
	int is_symlink;	    /* 1: create dst as a symlink to src instead */
};

struct jail {
	enum jail_mode mode;
	char bwrap[PATH_MAX];
	char cuda_real[PATH_MAX]; /* toolkit, symlinks resolved */
	struct bind binds[MAX_BINDS];
	int binds_len;
	int usable;			   /* 1 when jobs may run */
	unsigned long long tmp_size_bytes; /* size of the job's /tmp tmpfs, 0 = bwrap's default */
	char why[256];			   /* why not, when !usable */

	pthread_mutex_t gpu_lock; /* guards the gpu_* fields */
	int gpu_resolved;
	char gpu_libdir[PATH_MAX]; /* where libcuda.so.1 lives, "" unknown */
	int gpu_libdir_bound;	   /* 1 when already inside a bound dir */
};

/* snprintf that may truncate (paths in messages); truncation is fine here. */
static void sfmt(char *dst, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void sfmt(char *dst, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(dst, cap, fmt, ap);
	va_end(ap);
}

static int path_exists(const char *p)
{
	struct stat st;
	return lstat(p, &st) == 0;
}

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int add_bind(struct jail *j, const char *src, const char *dst, int is_symlink)
{
	if (j->binds_len >= MAX_BINDS)
		return -1;
	struct bind *b = &j->binds[j->binds_len];
	if (snprintf(b->src, sizeof b->src, "%s", src) >= (int)sizeof b->src ||
	    snprintf(b->dst, sizeof b->dst, "%s", dst) >= (int)sizeof b->dst)
		return -1;
	b->is_symlink = is_symlink;
	j->binds_len++;
	return 0;
}

/* Is path covered by a directory bind already made? */
static int bound_already(const struct jail *j, const char *path)
{
	for (int i = 0; i < j->binds_len; i++) {
		const struct bind *b = &j->binds[i];
		size_t n = strlen(b->dst);
		if (!b->is_symlink && strncmp(path, b->dst, n) == 0 &&
		    (path[n] == '/' || path[n] == 0))
			return 1;
	}
	return 0;
}

/* Binds path read-only where it exists. A symlink (a merged-/usr /lib, an
 * alternatives link) becomes the same symlink in the jail plus a bind of its
 * resolved target, so nothing outside the list appears through it. */
static void add_ro(struct jail *j, const char *path)
{
	struct stat st;
	char real[PATH_MAX], link[PATH_MAX];
	if (lstat(path, &st) != 0 || bound_already(j, path))
		return;
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlink(path, link, sizeof link - 1);
		if (n <= 0 || !realpath(path, real))
			return;
		link[n] = 0;
		add_bind(j, link, path, 1);
		/* A directory link (/lib -> usr/lib on merged-/usr hosts) only
		 * gets the link: the parts of its target that jobs need are
		 * on the list themselves. A file link gets its target. */
		if (!is_dir(real) && !bound_already(j, real))
			add_bind(j, real, real, 0);
		return;
	}
	add_bind(j, path, path, 0);
}

static void resolve_binds(struct jail *j, const char *cuda_home)
{
	static const char *const sys[] = {
		"/usr/bin",
		"/usr/include",
		"/usr/lib/gcc",
		"/usr/libexec/gcc",
		"/usr/lib64",
		"/bin",
		"/lib",
		"/lib64",
		"/sbin",
		"/etc/ld.so.cache",
		"/etc/ld.so.conf",
		"/etc/ld.so.conf.d",
		"/etc/alternatives",
	};
	/* The multiarch library dirs (x86_64-linux-gnu, aarch64-linux-gnu)
	 * hold libc, libstdc++ and the compiler's libraries; the rest of
	 * /usr/lib (python, apt, systemd units) is left out. */
	for (size_t i = 0; i < sizeof sys / sizeof sys[0]; i++) {
		add_ro(j, sys[i]);
		if (strcmp(sys[i], "/usr/include") == 0) {
			DIR *d = opendir("/usr/lib");
			struct dirent *e;
			char p[PATH_MAX];
			while (d && (e = readdir(d))) {
				size_t n = strlen(e->d_name);
				if (n > 10 && strcmp(e->d_name + n - 10, "-linux-gnu") == 0) {
					snprintf(p, sizeof p, "/usr/lib/%s", e->d_name);
					add_ro(j, p);
				}
			}
			if (d)
				closedir(d);
		}
	}
	/* The toolkit at its real path, and the name it was given as a
	 * symlink to it (/usr/local/cuda -> /usr/local/cuda-13.0). */
	add_bind(j, j->cuda_real, j->cuda_real, 0);
	if (strcmp(cuda_home, j->cuda_real) != 0)
		add_bind(j, j->cuda_real, cuda_home, 1);
	if (strcmp("/usr/local/cuda", j->cuda_real) != 0 &&
	    strcmp("/usr/local/cuda", cuda_home) != 0)
		add_bind(j, j->cuda_real, "/usr/local/cuda", 1);
}

/* Finds the directory holding the driver's libcuda.so.1: the daemon's
 * LD_LIBRARY_PATH first (containers put /usr/local/nvidia/lib64 there), then
 * the usual places. */
static void resolve_gpu(struct jail *j)
{
	pthread_mutex_lock(&j->gpu_lock);
	if (j->gpu_resolved)
		goto out;
	j->gpu_resolved = 1;
	char cand[PATH_MAX], real[PATH_MAX];
	const char *ld = getenv("LD_LIBRARY_PATH");
	char ldcopy[4096];
	snprintf(ldcopy, sizeof ldcopy, "%s", ld ? ld : "");
	const char *fixed[] = {"/usr/local/nvidia/lib64",
			       "/usr/local/nvidia/lib",
			       "/usr/lib/x86_64-linux-gnu",
			       "/usr/lib/aarch64-linux-gnu",
			       "/usr/lib64",
			       "/lib/x86_64-linux-gnu",
			       "/usr/lib/wsl/lib"};
	char *save = NULL;
	for (char *d = strtok_r(ldcopy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(cand, sizeof cand, "%s/libcuda.so.1", d);
		if (*d == '/' && realpath(cand, real)) {
			snprintf(j->gpu_libdir, sizeof j->gpu_libdir, "%s", d);
			goto found;
		}
	}
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
		snprintf(cand, sizeof cand, "%s/libcuda.so.1", fixed[i]);
		if (realpath(cand, real)) {
			snprintf(j->gpu_libdir, sizeof j->gpu_libdir, "%s", fixed[i]);
			goto found;
		}
	}
	goto out;
found:
	j->gpu_libdir_bound = bound_already(j, j->gpu_libdir);
out:
	pthread_mutex_unlock(&j->gpu_lock);
}

/* --- argv building (before fork) -------------------------------------- */

struct argbuf {
	const char *v[MAX_ARGS];
	int n;
	int overflow;
};

static void push(struct argbuf *a, const char *s)
{
	if (a->n >= MAX_ARGS - 1) {
		a->overflow = 1;
		return;
	}
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

/* Device nodes for a GPU job: every /dev/nvidia* and /dev/nvidia-caps.
 * Names are copied into names (caller storage, n slots). */
static int gpu_nodes(char names[][64], int n)
{
	DIR *d = opendir("/dev");
	struct dirent *e;
	int k = 0;
	while (d && (e = readdir(d)) && k < n) {
		if (strncmp(e->d_name, "nvidia", 6) == 0 && strlen(e->d_name) < 40)
			sfmt(names[k++], 64, "/dev/%s", e->d_name);
	}
	if (d)
		closedir(d);
	return k;
}

static void now_ts(struct timespec *t)
{
	clock_gettime(CLOCK_MONOTONIC, t);
}

static long long elapsed_ms(const struct timespec *t0)
{
	struct timespec t;
	now_ts(&t);
	return (long long)(t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Runs /bin/true in the jail. 0 when it worked; KF_ESANDBOX with the
 * bubblewrap message; KF_EIO when no probe dir could be made; KF_ENOMEM. */
static int probe(struct jail *j, struct kf_err *perr)
{
	char dir[] = "/tmp/kforge-jailprobe-XXXXXX";
	if (!mkdtemp(dir))
		return kf_err_set(perr, KF_EIO, "jail: cannot create a probe dir in /tmp: %s",
				  strerror(errno));
	const char *argv[] = {"/bin/true", NULL};
	if (!path_exists("/bin/true"))
		argv[0] = "/usr/bin/true";
	struct jail_job job = {.argv = argv, .job_dir = dir, .wall_ms = 10000};
	struct jail_result res;
	int rc = jail_run(j, &job, &res, perr);
	if (rc == 0 && !(res.exited && res.exit_code == 0)) {
		char msg[200];
		size_t n = res.errout_len < sizeof msg - 1 ? res.errout_len : sizeof msg - 1;
		memcpy(msg, res.errout ? res.errout : "", n);
		msg[n] = 0;
		while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
			msg[--n] = 0;
		rc = kf_err_set(perr, KF_ESANDBOX, "bwrap: %s", n ? msg : "failed");
	} else if (rc != 0 && rc != KF_ENOMEM) {
		rc = KF_ESANDBOX;
	}
	jail_result_fini(&res);
	rmdir(dir);
	return rc;
}

/* bubblewrap: the configured path, else $KFORGE_BWRAP, /usr/bin/bwrap, or
 * the first bwrap on PATH (a GPU host may carry it under /opt). */
static void find_bwrap(struct jail *j, const char *cfg_path)
{
	const char *env = getenv("KFORGE_BWRAP");
	sfmt(j->bwrap, sizeof j->bwrap, "%s",
	     cfg_path	   ? cfg_path
	     : env && *env ? env
			   : "/usr/bin/bwrap");
	if (cfg_path || (env && *env) || access(j->bwrap, X_OK) == 0)
		return;
	const char *path = getenv("PATH");
	char copy[4096], cand[PATH_MAX];
	snprintf(copy, sizeof copy, "%s", path ? path : "");
	char *save = NULL;
	for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		sfmt(cand, sizeof cand, "%s/bwrap", d);
		if (*d == '/' && access(cand, X_OK) == 0) {
			sfmt(j->bwrap, sizeof j->bwrap, "%s", cand);
			return;
		}
	}
}

/* --- public ------------------------------------------------------------ */

int jail_open(const struct jail_config *cfg, struct jail **out, struct kf_err *err)
{
	*out = NULL;
	struct jail *j = calloc(1, sizeof *j);
	if (!j)
		return kf_err_set(err, KF_ENOMEM, "jail: out of memory");
	j->mode = cfg->mode;
	pthread_mutex_init(&j->gpu_lock, NULL);
	const char *cuda = cfg->cuda_home;
	if (!cuda || !*cuda)
		cuda = getenv("CUDA_HOME");
	if (!cuda || !*cuda)
		cuda = "/usr/local/cuda";
	if (!realpath(cuda, j->cuda_real) || !is_dir(j->cuda_real)) {
		int rc = kf_err_set(err, KF_EINVAL,
				    "jail: CUDA toolkit '%s' not found (set CUDA_HOME "
				    "to the toolkit directory, e.g. /usr/local/cuda)",
				    cuda);
		jail_close(j);
		return rc;
	}
	find_bwrap(j, cfg->bwrap_path);
	resolve_binds(j, cuda);
	j->usable = 1;
	j->tmp_size_bytes = 1ull << 30;
	if (j->mode == JAIL_NONE) {
		*out = j;
		return 0;
	}
	if (access(j->bwrap, X_OK) != 0) {
		j->usable = 0;
		sfmt(j->why, sizeof j->why,
		     "sandbox unavailable: bubblewrap not found at %s (install "
		     "the bubblewrap package, or run with --sandbox=none to "
		     "compile without isolation)",
		     j->bwrap);
		*out = j;
		return 0;
	}
	/* Probe: can bubblewrap make its namespaces here? An old bubblewrap
	 * without --size gets an unbounded /tmp rather than no sandbox. */
	struct kf_err perr = {0};
	int rc = probe(j, &perr);
	if (rc == KF_ESANDBOX && strstr(perr.msg, "--size")) {
		j->tmp_size_bytes = 0;
		kf_err_clear(&perr);
		rc = probe(j, &perr);
	}
	if (rc == KF_EIO || rc == KF_ENOMEM) { /* the host's trouble, not bubblewrap's */
		kf_err_set(err, rc, "%s", perr.msg);
		jail_close(j);
		return rc;
	}
	if (rc != 0) {
		j->usable = 0;
		sfmt(j->why, sizeof j->why,
		     "sandbox unavailable: bubblewrap cannot create namespaces "
		     "here (%.120s); untrusted jobs are refused. Allow user "
		     "namespaces, or run with --sandbox=none to accept no isolation",
		     perr.msg);
	}
	*out = j;
	return 0;
}

void jail_close(struct jail *j)
{
	if (!j)
		return;
	pthread_mutex_destroy(&j->gpu_lock);
	free(j);
}

int jail_usable(const struct jail *j, struct kf_err *err)
{
	if (!j)
		return kf_err_set(err, KF_ESANDBOX, "sandbox not opened");
	if (!j->usable)
		return kf_err_set(err, KF_ESANDBOX, "%s", j->why);
	return 0;
}

const char *jail_mode_name(const struct jail *j)
{
	return j && j->mode == JAIL_NONE ? "none" : "bwrap";
}

const char *jail_cuda_home(const struct jail *j)
{
	return j->cuda_real;
}

void jail_result_fini(struct jail_result *res)
{
	if (!res)
		return;
	free(res->out);
	free(res->errout);
	memset(res, 0, sizeof *res);
}

/* A growing capture buffer with a cap; bytes past it are read and dropped. */
struct cap_buf {
	char *p;
	size_t len, alloc, cap;
	int truncated;
};

static int cap_append(struct cap_buf *b, const char *data, size_t n)
{
	if (b->len + n > b->cap) {
		b->truncated = 1;
		n = b->cap - b->len;
	}
	if (n == 0)
		return 0;
	if (b->len + n + 1 > b->alloc) {
		size_t na = b->alloc ? b->alloc : 4096;
		while (na < b->len + n + 1)
			na *= 2;
		if (na > b->cap + 1)
			na = b->cap + 1;
		char *np = realloc(b->p, na);
		if (!np)
			return -1;
		b->p = np;
		b->alloc = na;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = 0;
	return 0;
}

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

/* Limits set in the child, in this order. */
enum { LIM_CPU, LIM_FSIZE, LIM_NPROC, LIM_CORE, LIM_AS, LIM_DATA, LIM_N };
static const int LIM_RESOURCE[LIM_N] = {RLIMIT_CPU,  RLIMIT_FSIZE, RLIMIT_NPROC,
					RLIMIT_CORE, RLIMIT_AS,	   RLIMIT_DATA};

/* The child side, after fork: async-signal-safe calls only. parent is the
 * daemon's pid before the fork: if it died before PR_SET_PDEATHSIG took
 * hold, the child is already an orphan and must not start the job. */
static void child_exec(const char *path, char *const argv[], char *const envp[],
		       const char *chdir_to, int in_fd, int out_fd, int err_fd, const int *pass,
		       int npass, const struct rlimit *lim, pid_t parent)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	for (int s = 1; s < 32; s++)
		if (s != SIGKILL && s != SIGSTOP)
			sigaction(s, &dfl, NULL);
	if (setsid() < 0)
		_exit(126);
	/* Die with the daemon also without bubblewrap (--die-with-parent does
	 * this inside the jail): a hung kernel must not keep the GPU after a
	 * SIGKILL of kforge. The forking thread waits for the child, so the
	 * signal never fires while the job is wanted. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(126);
	if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
		_exit(126);
	int high[JAIL_MAX_PASS_FDS];
	for (int i = 0; i < npass; i++) {
		high[i] = fcntl(pass[i], F_DUPFD, 3 + npass);
		if (high[i] < 0)
			_exit(126);
	}
	for (int i = 0; i < npass; i++)
		if (dup2(high[i], 3 + i) < 0)
			_exit(126);
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3 + npass, ~0u, 0) != 0)
#endif
		for (int fd = 3 + npass; fd < 4096; fd++)
			close(fd);
	for (int i = 0; i < LIM_N; i++)
		if (setrlimit(LIM_RESOURCE[i], &lim[i]) != 0)
			_exit(126);
	if (chdir_to && chdir(chdir_to) != 0)
		_exit(126);
	execve(path, argv, envp);
	_exit(127);
}

/* One jail_run between its steps: what the child execs (prepared before
 * the fork, so the child only makes async-signal-safe calls; argv points
 * into the stores here, so they live until the exec), the pipes, the
 * captured output and how the child ended. */
struct run {
	struct argbuf a;
	const char *exec_path;
	const char *chdir_to;
	char *envp[40];
	char envstore[3][PATH_MAX + 32];
	char gpunodes[32][64];
	char tmpsize[32];
	struct rlimit lim[LIM_N];
	unsigned wall_ms;
	int outp[2], errp[2], devnull, pidfd;
	pid_t pid;
	struct cap_buf ob, eb;
	int status, reaped, killed;
	struct rusage ru;
	struct timespec t0;
};

static int check_job(struct jail *j, const struct jail_job *job, struct kf_err *err)
{
	if (!job || !job->argv || !job->argv[0] || job->argv[0][0] != '/')
		return kf_err_set(err, KF_EINVAL, "jail: argv[0] must be an absolute path");
	if (!job->job_dir || !is_dir(job->job_dir))
		return kf_err_set(err, KF_EINVAL, "jail: job directory '%s' does not exist",
				  job->job_dir ? job->job_dir : "(null)");
	if (job->pass_fds_len > JAIL_MAX_PASS_FDS)
		return kf_err_set(err, KF_EINVAL, "jail: %zu fds to pass, at most %d",
				  job->pass_fds_len, JAIL_MAX_PASS_FDS);
	return jail_usable(j, err);
}

/* want bytes of resource, never above the hard limit the daemon has
 * (setrlimit could not raise it: the job would not start); 0: what the
 * daemon has (a batch system may have set one). */
static rlim_t inherit_or(int resource, unsigned long long want)
{
	struct rlimit cur = {RLIM_INFINITY, RLIM_INFINITY};
	if (getrlimit(resource, &cur) != 0)
		cur.rlim_max = RLIM_INFINITY;
	if (!want)
		return cur.rlim_max;
	return cur.rlim_max != RLIM_INFINITY && (rlim_t)want > cur.rlim_max ? cur.rlim_max
									    : (rlim_t)want;
}

static void set_limits(struct run *r, const struct jail_job *job)
{
	r->wall_ms = job->wall_ms ? job->wall_ms : DEFAULT_WALL_MS;
	rlim_t cpu = job->cpu_s ? job->cpu_s : (r->wall_ms + 999) / 1000;
	rlim_t fsize = job->fsize_bytes ? job->fsize_bytes : DEFAULT_FSIZE;
	rlim_t nproc = job->nproc ? job->nproc : DEFAULT_NPROC;
	rlim_t as = inherit_or(RLIMIT_AS, job->mem_bytes);
	rlim_t data = inherit_or(RLIMIT_DATA, job->data_bytes);
	r->lim[LIM_CPU] = (struct rlimit){cpu, cpu + 1};
	r->lim[LIM_FSIZE] = (struct rlimit){fsize, fsize};
	r->lim[LIM_NPROC] = (struct rlimit){nproc, nproc};
	r->lim[LIM_CORE] = (struct rlimit){0, 0};
	r->lim[LIM_AS] = (struct rlimit){as, as};
	r->lim[LIM_DATA] = (struct rlimit){data, data};
}

/* The environment: clean, plus the job's extras. */
static int build_env(struct jail *j, const struct jail_job *job, struct run *r, struct kf_err *err)
{
	int ne = 0;
	sfmt(r->envstore[0], sizeof r->envstore[0], "PATH=%s/bin:%s", j->cuda_real, BASE_PATH);
	r->envp[ne++] = r->envstore[0];
	r->envp[ne++] = (char *)"HOME=/tmp";
	/* The jail has no passwd entry for its uid: programs that name their
	 * caches after the user (Python's getpass.getuser(), so torch.compile)
	 * take these instead of failing in getpwuid(). */
	r->envp[ne++] = (char *)"USER=kforge";
	r->envp[ne++] = (char *)"LOGNAME=kforge";
	r->envp[ne++] = (char *)"LANG=C";
	r->envp[ne++] = (char *)"LC_ALL=C";
	r->envp[ne++] = (char *)"TMPDIR=/tmp";
	if (job->want_gpu && j->gpu_libdir[0]) {
		sfmt(r->envstore[1], sizeof r->envstore[1], "LD_LIBRARY_PATH=%s", j->gpu_libdir);
		r->envp[ne++] = r->envstore[1];
		/* Triton (torch.compile) finds libcuda with /sbin/ldconfig -p,
		 * whose cache does not describe the jail; it takes this first. */
		sfmt(r->envstore[2], sizeof r->envstore[2], "TRITON_LIBCUDA_PATH=%s",
		     j->gpu_libdir);
		r->envp[ne++] = r->envstore[2];
	}
	for (int i = 0; job->env && job->env[i]; i++) {
		if (ne >= (int)(sizeof r->envp / sizeof r->envp[0]) - 1)
			return kf_err_set(err, KF_EINVAL, "jail: too many environment entries");
		r->envp[ne++] = (char *)job->env[i];
	}
	r->envp[ne] = NULL;
	return 0;
}

/* bubblewrap's options: namespaces, the allowlist, the job's binds, the
 * GPU when asked, the job directory. */
static int push_bwrap(struct jail *j, const struct jail_job *job, struct run *r, struct kf_err *err)
{
	struct argbuf *a = &r->a;
	static const char *const fixed[] = {
		"--unshare-all", "--cap-drop", "ALL",	      "--die-with-parent",
		"--new-session", "--hostname", "kforge-jail", "--proc",
		"/proc",	 "--dev",      "/dev"};
	push(a, j->bwrap);
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		push(a, fixed[i]);
	if (j->tmp_size_bytes) {
		sfmt(r->tmpsize, sizeof r->tmpsize, "%llu", j->tmp_size_bytes);
		push(a, "--size");
		push(a, r->tmpsize);
	}
	push(a, "--tmpfs");
	push(a, "/tmp");
	for (int i = 0; i < j->binds_len; i++) {
		const struct bind *b = &j->binds[i];
		push(a, b->is_symlink ? "--symlink" : "--ro-bind");
		push(a, b->src);
		push(a, b->dst);
	}
	for (size_t i = 0; i < job->ro_binds_len; i++) {
		const struct jail_bind *b = &job->ro_binds[i];
		if (!b->src || !path_exists(b->src))
			return kf_err_set(err, KF_EINVAL, "jail: bind source '%s' does not exist",
					  b->src ? b->src : "(null)");
		push(a, "--ro-bind");
		push(a, b->src);
		push(a, b->dst ? b->dst : b->src);
	}
	if (job->want_gpu) {
		int n = gpu_nodes(r->gpunodes, 32);
		for (int i = 0; i < n; i++) {
			push(a, "--dev-bind");
			push(a, r->gpunodes[i]);
			push(a, r->gpunodes[i]);
		}
		if (j->gpu_libdir[0] && !j->gpu_libdir_bound) {
			push(a, "--ro-bind");
			push(a, j->gpu_libdir);
			push(a, j->gpu_libdir);
		}
	}
	push(a, "--bind");
	push(a, job->job_dir);
	push(a, JAIL_JOB_DIR);
	push(a, "--chdir");
	push(a, JAIL_JOB_DIR);
	push(a, "--");
	return 0;
}

static int build_argv(struct jail *j, const struct jail_job *job, struct run *r, struct kf_err *err)
{
	if (j->mode == JAIL_NONE) {
		r->exec_path = job->argv[0];
		r->chdir_to = job->job_dir;
	} else {
		r->exec_path = j->bwrap;
		int rc = push_bwrap(j, job, r, err);
		if (rc)
			return rc;
	}
	for (int i = 0; job->argv[i]; i++)
		push(&r->a, job->argv[i]);
	if (r->a.overflow)
		return kf_err_set(err, KF_EINVAL, "jail: too many arguments (at most %d)",
				  MAX_ARGS);
	return 0;
}

static int spawn(const struct jail_job *job, struct run *r, struct kf_err *err)
{
	r->devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (r->devnull < 0 || pipe2(r->outp, O_CLOEXEC) || pipe2(r->errp, O_CLOEXEC))
		return kf_err_set(err, KF_EIO, "jail: pipe: %s", strerror(errno));
	pid_t self = getpid();
	r->pid = fork();
	if (r->pid < 0)
		return kf_err_set(err, KF_EIO, "jail: fork: %s", strerror(errno));
	if (r->pid == 0)
		child_exec(r->exec_path, (char *const *)r->a.v, r->envp, r->chdir_to, r->devnull,
			   r->outp[1], r->errp[1], job->pass_fds, (int)job->pass_fds_len, r->lim,
			   self);
	close(r->outp[1]);
	close(r->errp[1]);
	r->outp[1] = r->errp[1] = -1;
	r->pidfd = pidfd_open_(r->pid);
	return 0;
}

static void kill_job(struct run *r)
{
	kill(-r->pid, SIGKILL);
	kill(r->pid, SIGKILL);
	r->killed = 1;
}

/* Reads what is ready on the pipes in pf into the capture buffers; closes
 * a pipe at EOF. Returns KF_ENOMEM (and kills the job) when a buffer
 * cannot grow. */
static int drain(struct run *r, const struct pollfd *pf, int np, struct kf_err *err)
{
	char buf[16384];
	int rc = 0;
	for (int i = 0; i < np; i++) {
		if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)) || pf[i].fd == r->pidfd)
			continue;
		int *fd = pf[i].fd == r->outp[0] ? &r->outp[0] : &r->errp[0];
		ssize_t n = read(*fd, buf, sizeof buf);
		if (n > 0) {
			if (cap_append(fd == &r->outp[0] ? &r->ob : &r->eb, buf, (size_t)n)) {
				rc = kf_err_set(err, KF_ENOMEM, "jail: out of memory for output");
				kill_job(r);
			}
		} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
			close(*fd);
			*fd = -1;
		}
	}
	return rc;
}

/* Polls the output pipes and the child until both pipes are closed and the
 * child is reaped, enforcing the wall clock and the cancel flag. */
static int wait_job(const struct jail_job *job, struct run *r, struct jail_result *res,
		    struct kf_err *err)
{
	int rc = 0;
	long long drain_until = -1; /* after the child exits, drain until EOF briefly */
	for (;;) {
		struct pollfd pf[3];
		int np = 0, io = r->outp[0] >= 0 || r->errp[0] >= 0;
		if (r->outp[0] >= 0)
			pf[np++] = (struct pollfd){.fd = r->outp[0], .events = POLLIN};
		if (r->errp[0] >= 0)
			pf[np++] = (struct pollfd){.fd = r->errp[0], .events = POLLIN};
		if (!r->reaped && r->pidfd >= 0)
			pf[np++] = (struct pollfd){.fd = r->pidfd, .events = POLLIN};
		if (r->reaped && !io)
			break;
		long long el = elapsed_ms(&r->t0);
		if (!r->reaped && !r->killed && el >= r->wall_ms) {
			res->timed_out = 1;
			kill_job(r);
		}
		if (!r->reaped && !r->killed && job->cancel && *job->cancel) {
			res->canceled = 1;
			kill_job(r);
		}
		if (r->reaped && drain_until >= 0 && el >= drain_until)
			break; /* a descendant holds the pipe open: stop reading */
		if (np == 0) {
			struct timespec ts = {0, 10 * 1000000};
			nanosleep(&ts, NULL);
		} else if (poll(pf, np, 50) < 0 && errno != EINTR) {
			break;
		}
		int drc = drain(r, pf, np, err);
		if (drc && !rc)
			rc = drc;
		if (!r->reaped) {
			pid_t w = wait4(r->pid, &r->status, WNOHANG, &r->ru);
			if (w < 0 && errno == ECHILD) {
				/* Reaped elsewhere (SIGCHLD ignored): status unknown. */
				r->status = 0xff00; /* reads as exit code 255 */
				w = r->pid;
			}
			if (w == r->pid) {
				r->reaped = 1;
				/* Anything left in the process group dies with it. */
				kill(-r->pid, SIGKILL);
				drain_until = elapsed_ms(&r->t0) + 2000;
			}
		}
	}
	if (!r->reaped) {
		kill(-r->pid, SIGKILL);
		if (wait4(r->pid, &r->status, 0, &r->ru) == r->pid)
			r->reaped = 1;
	}
	return rc;
}

/* Did the job say it ran out of memory? Allocation failures read
 * differently per runtime: LLVM's "out of memory", C++'s bad_alloc,
 * strerror(ENOMEM). */
static int said_oom(const struct cap_buf *b)
{
	static const char *const marks[] = {"out of memory",	 "Out of memory",
					    "bad_alloc",	 "Cannot allocate memory",
					    "allocation failed", "memory exhausted"};
	for (size_t i = 0; b->p && i < sizeof marks / sizeof marks[0]; i++)
		if (memmem(b->p, b->len, marks[i], strlen(marks[i])))
			return 1;
	return 0;
}

/* How the child ended -> res; the code jail_run returns. */
static int finish(struct jail *j, const struct jail_job *job, struct run *r,
		  struct jail_result *res, int rc, struct kf_err *err)
{
	const struct rusage *ru = &r->ru;
	res->wall_ms = (unsigned)elapsed_ms(&r->t0);
	res->cpu_ms = (unsigned)(ru->ru_utime.tv_sec * 1000 + ru->ru_utime.tv_usec / 1000 +
				 ru->ru_stime.tv_sec * 1000 + ru->ru_stime.tv_usec / 1000);
	if (r->reaped && WIFEXITED(r->status)) {
		res->exited = 1;
		res->exit_code = WEXITSTATUS(r->status);
		/* bubblewrap reports a child killed by signal s as 128 + s. */
		if (j->mode != JAIL_NONE && res->exit_code > 128 && res->exit_code <= 128 + 64) {
			res->exited = 0;
			res->term_signal = res->exit_code - 128;
		}
	} else if (r->reaped && WIFSIGNALED(r->status)) {
		res->term_signal = WTERMSIG(r->status);
	}
	res->cpu_limited = res->term_signal == SIGXCPU;
	res->fsize_limited = res->term_signal == SIGXFSZ;
	if (res->timed_out || res->canceled) {
		res->exited = 0;
		res->exit_code = 0;
	}
	res->mem_limited = (job->mem_bytes || job->data_bytes) && !res->timed_out &&
			   !res->canceled && !(res->exited && res->exit_code == 0) &&
			   (said_oom(&r->eb) || said_oom(&r->ob));
	if (rc)
		return rc;
	if (res->timed_out)
		return kf_err_set(err, KF_ETIMEOUT, "job killed after the %u ms wall-clock limit",
				  r->wall_ms);
	if (res->canceled)
		return kf_err_set(err, KF_ECANCELED, "job cancelled");
	if (res->exited && res->exit_code == 1 && j->mode != JAIL_NONE && r->eb.len >= 6 &&
	    strncmp(r->eb.p, "bwrap:", 6) == 0) {
		/* bubblewrap's own setup failure, not the job's. */
		char m[160];
		size_t n = r->eb.len < sizeof m - 1 ? r->eb.len : sizeof m - 1;
		memcpy(m, r->eb.p, n);
		m[n] = 0;
		if (n && m[n - 1] == '\n')
			m[n - 1] = 0;
		return kf_err_set(err, KF_ESANDBOX, "sandbox setup failed: %s", m);
	}
	return 0;
}

/* Closes what is open and hands the captured output to res. */
static int release(struct run *r, struct jail_result *res, int rc, struct kf_err *err)
{
	if (r->pidfd >= 0)
		close(r->pidfd);
	for (int i = 0; i < 2; i++) {
		if (r->outp[i] >= 0)
			close(r->outp[i]);
		if (r->errp[i] >= 0)
			close(r->errp[i]);
	}
	if (r->devnull >= 0)
		close(r->devnull);
	res->out = r->ob.p ? r->ob.p : strdup("");
	res->out_len = r->ob.len;
	res->out_truncated = r->ob.truncated;
	res->errout = r->eb.p ? r->eb.p : strdup("");
	res->errout_len = r->eb.len;
	res->errout_truncated = r->eb.truncated;
	if ((!res->out || !res->errout) && rc == 0)
		rc = kf_err_set(err, KF_ENOMEM, "jail: out of memory");
	return rc;
}

int jail_run(struct jail *j, const struct jail_job *job, struct jail_result *res,
	     struct kf_err *err)
{
	memset(res, 0, sizeof *res);
	int rc = check_job(j, job, err);
	if (rc)
		return rc;
	struct run *r = calloc(1, sizeof *r);
	if (!r)
		return kf_err_set(err, KF_ENOMEM, "jail: out of memory");
	r->outp[0] = r->outp[1] = r->errp[0] = r->errp[1] = -1;
	r->devnull = r->pidfd = -1;
	now_ts(&r->t0);
	r->ob.cap = job->stdout_cap_bytes ? job->stdout_cap_bytes : DEFAULT_CAP;
	r->eb.cap = job->stderr_cap_bytes ? job->stderr_cap_bytes : DEFAULT_CAP;
	set_limits(r, job);
	if (job->want_gpu)
		resolve_gpu(j);
	rc = build_env(j, job, r, err);
	if (!rc)
		rc = build_argv(j, job, r, err);
	if (!rc)
		rc = spawn(job, r, err);
	if (!rc && r->pid > 0) {
		rc = wait_job(job, r, res, err);
		rc = finish(j, job, r, res, rc, err);
	}
	rc = release(r, res, rc, err);
	free(r);
	return rc;
}
