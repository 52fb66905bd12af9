/* jail: runs one untrusted job (nvcc, the GPU harness) as a child process in
 * bubblewrap. The job sees only an allowlist of read-only binds (the CUDA
 * toolkit with symlinks resolved, the host compiler with its libraries and
 * headers, /usr/include, the few /etc files nvcc reads), a private /tmp,
 * its job directory (the only writable path, mounted at JAIL_JOB_DIR and
 * used as the working directory), a new network/pid/ipc/uts/user namespace,
 * and the GPU device nodes plus the driver's libraries only when it asks.
 * Never `--ro-bind / /`. Limits: wall clock (kills the whole process group),
 * CPU time, file size, process count, address space or data size (when
 * the job asks), no core files, capped stdout/stderr, a clean environment. The job dies
 * with the daemon (PR_SET_PDEATHSIG, bubblewrap's --die-with-parent), so a
 * SIGKILLed daemon leaves no jail behind. Every function is thread-safe:
 * many jobs run at once. */
#ifndef KF_JAIL_H
#define KF_JAIL_H

#include <stddef.h>

#include "base/kf_err.h"

/* Where the job directory appears inside the jail (and the cwd of the job). */
#define JAIL_JOB_DIR "/job"

enum jail_mode {
	JAIL_BWRAP = 0, /* every job in bubblewrap (the default) */
	JAIL_NONE = 1	/* operator passed --sandbox=none: plain child process,
			 * same limits, no isolation; results say "sandbox": "none" */
};

struct jail;

struct jail_config {
	enum jail_mode mode;
	const char *cuda_home;	/* toolkit; NULL = $CUDA_HOME or /usr/local/cuda */
	const char *bwrap_path; /* NULL = $KFORGE_BWRAP, /usr/bin/bwrap, or the
				 * first bwrap on PATH */
};

/* A read-only bind of a host path into the jail (a tool the job runs, a
 * fatbin it loads). dst NULL = the same path inside as outside. */
struct jail_bind {
	const char *src; /* host path; must exist */
	const char *dst; /* absolute path in the jail, or NULL */
};

/* One job. Zero fields take the defaults in brackets. Paths the job uses for
 * its own files should be relative (they resolve in the job directory, in
 * both modes); tools are named by absolute host paths, which are the same
 * inside the jail (the toolkit is bound at its real path and at cuda_home). */
struct jail_job {
	const char *const *argv;	  /* NULL-terminated; argv[0] an absolute path */
	const char *job_dir;		  /* host directory, must exist; writable by the job */
	const char *const *env;		  /* extra "NAME=VALUE" entries, NULL-terminated, or
				  * NULL; the base is PATH, HOME=/tmp, LANG=C */
	const struct jail_bind *ro_binds; /* extra read-only binds, or NULL */
	size_t ro_binds_len;
	int want_gpu;			/* 1: bind /dev/nvidia*, the driver libraries */
	const int *pass_fds;		/* host fds the job inherits as fd 3, 4, ... */
	size_t pass_fds_len;		/* at most JAIL_MAX_PASS_FDS */
	unsigned wall_ms;		/* wall-clock limit, ms [60000] */
	unsigned cpu_s;			/* RLIMIT_CPU per process, s [wall limit] */
	unsigned long long fsize_bytes; /* RLIMIT_FSIZE, bytes [256 MiB] */
	unsigned nproc;			/* RLIMIT_NPROC [512] */
	unsigned long long mem_bytes;	/* RLIMIT_AS per process, bytes [none]: an
					 * allocation past it fails in the job. Not
					 * for GPU jobs: the CUDA driver reserves
					 * far more address space than it uses */
	unsigned long long data_bytes;	/* RLIMIT_DATA per process, bytes [none]:
					 * heap and private writable mappings; an
					 * allocation past it fails in the job. GPU
					 * jobs can have it: the CUDA driver's
					 * address-space reservations are PROT_NONE
					 * and its device mappings shared, neither
					 * counted */
	size_t stdout_cap_bytes;	/* bytes kept of stdout [1 MiB]; rest drained */
	size_t stderr_cap_bytes;	/* bytes kept of stderr [1 MiB] */
	const volatile int *cancel;	/* polled; nonzero kills the job; or NULL */
};

#define JAIL_MAX_PASS_FDS 8

/* What happened. Output buffers are NUL-terminated (the NUL is not counted). */
struct jail_result {
	int exited;	   /* 1 when the job exited by itself */
	int exit_code;	   /* its exit status when exited */
	int term_signal;   /* signal that ended it, 0 if none */
	int timed_out;	   /* 1 when killed at the wall-clock limit */
	int canceled;	   /* 1 when killed because *cancel became nonzero */
	int cpu_limited;   /* 1 when it died of SIGXCPU (CPU time limit) */
	int fsize_limited; /* 1 when it died of SIGXFSZ (file size limit) */
	int mem_limited;   /* 1 when it had mem_bytes or data_bytes, failed, and
			    * said it ran out of memory (bad_alloc, "out of
			    * memory", ENOMEM) */
	char *out;	   /* captured stdout, new (freed by jail_result_fini) */
	size_t out_len;	   /* bytes in out */
	int out_truncated; /* 1 when stdout exceeded its cap */
	char *errout;	   /* captured stderr, new */
	size_t errout_len;
	int errout_truncated;
	unsigned wall_ms; /* elapsed, ms */
	unsigned cpu_ms;  /* user + system CPU of the job's process tree, ms */
};

/* Opens a jail with cfg (copied). Resolves the bind allowlist once and, in
 * JAIL_BWRAP mode, probes that bubblewrap can create namespaces here. A
 * failing probe does not fail the open: jail_usable then returns
 * KF_ESANDBOX with the explanation and every jail_run refuses. Returns 0 and
 * sets *out to a new jail (free with jail_close), KF_ENOMEM, or KF_EINVAL
 * (cuda_home missing) with err set. */
int jail_open(const struct jail_config *cfg, struct jail **out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Frees j. NULL is a no-op. No job may be running. */
void jail_close(struct jail *j);

/* 0 when jobs can run; KF_ESANDBOX with err saying why not (bubblewrap
 * missing, namespaces not permitted) and that --sandbox=none overrides. */
int jail_usable(const struct jail *j, struct kf_err *err) __attribute__((warn_unused_result));

/* "bwrap" or "none": what results report as "sandbox". Borrowed, static. */
const char *jail_mode_name(const struct jail *j);

/* The toolkit directory as resolved (symlinks followed), e.g.
 * "/usr/local/cuda-13.0". Borrowed, valid until jail_close. */
const char *jail_cuda_home(const struct jail *j);

/* Runs job and waits for it. res (caller storage) is always initialised and
 * must be released with jail_result_fini, whatever the return.
 * Returns 0 when the job ended by itself (any exit status or signal: read
 * res), KF_ETIMEOUT when it was killed at the wall-clock limit,
 * KF_ECANCELED when *cancel became nonzero, KF_ESANDBOX when the jail is
 * unusable or bubblewrap failed to set it up, KF_EINVAL for a bad job
 * (missing job_dir, relative argv[0], too many fds), KF_EIO/KF_ENOMEM on
 * pipe, fork or allocation failure. Partial output is kept in every case. */
int jail_run(struct jail *j, const struct jail_job *job, struct jail_result *res,
	     struct kf_err *err) __attribute__((warn_unused_result));

/* Frees the buffers in res and zeroes it. NULL is a no-op. */
void jail_result_fini(struct jail_result *res);

#endif
