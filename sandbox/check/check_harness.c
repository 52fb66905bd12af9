/* check_harness: finding kforge's files, the jail, job directories and one
 * run of kforge-harness in the jail (job.json in, a JSON report on fd 3
 * out, capped at CHECK_REPORT_MAX_BYTES): on a spare harness of the GPU
 * when the env keeps them (check_spare.c), else a fresh process. Used by
 * check, bench and the reference runs. */
#include "sandbox/check/check.h"
#include "sandbox/check/check_int.h"
#include "sandbox/check/check_pyworker.h"
#include "sandbox/check/check_spare.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/log.h"
#include "sandbox/jail/jail.h"

/* An AddressSanitizer build (make asan, tests only) makes its harness in
 * the same build, and that harness reserves terabytes of shadow memory as
 * private writable mappings, which RLIMIT_DATA counts: it runs without the
 * data limit. */
#if defined(__SANITIZE_ADDRESS__)
#define HARNESS_DATA_LIMIT 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HARNESS_DATA_LIMIT 0
#endif
#endif
#ifndef HARNESS_DATA_LIMIT
#define HARNESS_DATA_LIMIT 1
#endif

/* --- paths, jail ---------------------------------------------- */

/* The first existing of: $env, <exe dir>/rel1, <exe dir>/rel2. */
int check_find_file(const char *env, const char *rel1, const char *rel2, char *out, size_t cap)
{
	const char *e = getenv(env);
	if (e && *e && access(e, R_OK) == 0) {
		snprintf(out, cap, "%s", e);
		return 0;
	}
	char d[PATH_MAX];
	if (fs_exe_dir(d, sizeof d))
		return -1;
	const char *rels[] = {rel1, rel2};
	for (int i = 0; i < 2; i++) {
		if (!rels[i])
			continue;
		char p[PATH_MAX + 64];
		snprintf(p, sizeof p, "%s/%s", d, rels[i]);
		char real[PATH_MAX];
		if (realpath(p, real) && access(real, R_OK) == 0) {
			snprintf(out, cap, "%s", real);
			return 0;
		}
	}
	return -1;
}

/* The daemon's spare harnesses: how many per GPU, said once at start. */
static void spares_open(struct check_env *env)
{
	int n;
	struct kf_err e = {0};
	if (!env->warm_harness)
		return;
	if (check_spares_count(&n, &e)) {
		log_warn("check", "%s; no spare harness processes are kept", e.msg);
		return;
	}
	if (n && check_spares_new(n, &env->spares)) {
		log_warn("check", "out of memory for the spare harnesses; none are kept");
		return;
	}
	if (n)
		log_info("check",
			 "each GPU keeps %d spare kforge-harness process%s, started by its first "
			 "job (KFORGE_HARNESS_SPARES)",
			 n, n == 1 ? "" : "es");
	else
		log_info("check", "no spare kforge-harness processes (KFORGE_HARNESS_SPARES=0)");
}

void check_env_init(struct check_env *env)
{
	unsigned long long mem;
	struct kf_err e = {0};

	pthread_mutex_init(&env->jail_mu, NULL);
	env->jail = NULL;
	env->pyworkers = NULL;
	env->spares = NULL;
	spares_open(env);
	/* Said once at start, where the operator reads the daemon's limits. */
	if (check_harness_mem_bytes(&mem, &e))
		log_warn("check", "%s; checks and benchmarks refuse until it is fixed", e.msg);
	else if (!HARNESS_DATA_LIMIT)
		log_info("check", "kforge-harness runs without its host memory limit: an "
				  "AddressSanitizer build's shadow memory would count against it");
	else
		log_info("check",
			 "each kforge-harness may use %llu MiB of host memory "
			 "(RLIMIT_DATA; KFORGE_HARNESS_MEM_MB)",
			 mem >> 20);
}

void check_env_fini(struct check_env *env)
{
	if (!env)
		return;
	check_spares_free(env->spares); /* spares and workers run in the jail */
	env->spares = NULL;
	check_pyworkers_close(env);
	jail_close(env->jail);
	env->jail = NULL;
	pthread_mutex_destroy(&env->jail_mu);
}

int check_get_jail(struct check_env *env, struct jail **out, struct kf_err *err)
{
	*out = NULL;
	if (!env)
		return kf_err_set(err, KF_ESANDBOX, "check: no environment to hold the jail");
	pthread_mutex_lock(&env->jail_mu);
	int rc = 0;
	if (!env->jail) {
		struct jail_config cfg = {.mode = env->sandbox_none ? JAIL_NONE : JAIL_BWRAP};
		rc = jail_open(&cfg, &env->jail, err);
	}
	*out = env->jail;
	pthread_mutex_unlock(&env->jail_mu);
	if (!rc)
		rc = jail_usable(*out, err);
	return rc;
}

/* --- job directories ---------------------------------------------------- */

void check_jobdir_remove(const char *dir)
{
	if (dir && *dir && !getenv("KFORGE_KEEP_JOBS"))
		fs_rm_tree(dir);
}

int check_jobdir_new(struct check_env *env, const struct spec *s, char *dir, size_t cap,
		     struct kf_err *err)
{
	const char *base = env && env->data_dir ? env->data_dir : "/tmp";
	char jobs[PATH_MAX];
	snprintf(jobs, sizeof jobs, "%s/jobs", base);
	if (mkdir(jobs, 0700) && errno != EEXIST)
		return kf_err_set(err, KF_EIO, "cannot create %s: %s", jobs, strerror(errno));
	snprintf(dir, cap, "%s/gpu-XXXXXX", jobs);
	if (!mkdtemp(dir))
		return kf_err_set(err, KF_EIO, "cannot create a job directory in %s: %s", jobs,
				  strerror(errno));
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/spec.json", dir);
	if (s && json_dump_file(s->json, p, JSON_COMPACT)) {
		check_jobdir_remove(dir);
		return kf_err_set(err, KF_EIO, "cannot write %s", p);
	}
	return 0;
}

int check_copy_file(const char *src, const char *dir, const char *name, struct kf_err *err)
{
	char dst[PATH_MAX + 64];
	snprintf(dst, sizeof dst, "%s/%s", dir, name);
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return kf_err_set(err, KF_EIO, "cannot read %s: %s", src, strerror(errno));
	int o = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (o < 0) {
		close(in);
		return kf_err_set(err, KF_EIO, "cannot write %s: %s", dst, strerror(errno));
	}
	char buf[1 << 16];
	ssize_t n;
	int rc = 0;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(o, buf, (size_t)n) != n) {
			rc = kf_err_set(err, KF_EIO, "cannot write %s", dst);
			break;
		}
	if (n < 0)
		rc = kf_err_set(err, KF_EIO, "cannot read %s", src);
	close(in);
	if (close(o) && !rc)
		rc = kf_err_set(err, KF_EIO, "cannot write %s", dst);
	return rc;
}

/* --- running the harness ------------------------------------------------ */

struct reader {
	int fd;
	struct check_report_buf rep;
};

static void *read_all(void *arg)
{
	struct reader *r = arg;
	char tmp[65536];
	for (;;) {
		ssize_t n = read(r->fd, tmp, sizeof tmp);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		check_report_append(&r->rep, tmp, (size_t)n);
	}
	return NULL;
}

int check_harness_mem_bytes(unsigned long long *bytes, struct kf_err *err)
{
	const char *v = getenv("KFORGE_HARNESS_MEM_MB");
	unsigned long long mb = CHECK_HARNESS_MEM_DEFAULT_MB;
	if (v && *v) {
		char *end;
		errno = 0;
		mb = strtoull(v, &end, 10);
		if (errno || *end || v[0] == '-' || mb < CHECK_HARNESS_MEM_MIN_MB ||
		    mb > (1ull << 24))
			return kf_err_set(err, KF_EINVAL,
					  "KFORGE_HARNESS_MEM_MB: '%.32s' is not a count of MiB "
					  "from %d to %llu (default %d)",
					  v, CHECK_HARNESS_MEM_MIN_MB, 1ull << 24,
					  CHECK_HARNESS_MEM_DEFAULT_MB);
	}
	*bytes = mb << 20;
	return 0;
}

/* Why a harness ended without its final report, into err. */
static int no_report(const struct jail_result *res, const struct check_report_buf *rd,
		     unsigned long long mem, struct kf_err *err)
{
	char tail[160] = "";
	if (res->errout_len) {
		const char *t = res->errout;
		if (res->errout_len > 150)
			t += res->errout_len - 150;
		snprintf(tail, sizeof tail, "%s", t);
		for (char *c = tail; *c; c++)
			if (*c == '\n')
				*c = ' ';
	}
	if (rd->too_big)
		return kf_err_set(err, KF_ETOOBIG, "the harness report exceeded %u bytes",
				  CHECK_REPORT_MAX_BYTES);
	if (res->mem_limited)
		return kf_err_set(err, KF_EFAULT,
				  "host memory limit %llu MiB exceeded: the harness ran out of "
				  "memory (raise KFORGE_HARNESS_MEM_MB in the daemon's "
				  "environment)%s%s",
				  mem >> 20, tail[0] ? ": " : "", tail);
	if (res->term_signal)
		return kf_err_set(err, KF_EFAULT,
				  "the harness died of signal %d without a report%s%s",
				  res->term_signal, tail[0] ? ": " : "", tail);
	return kf_err_set(err, KF_EFAULT, "the harness exited with status %d without a report%s%s",
			  res->exit_code, tail[0] ? ": " : "", tail);
}

/* A fresh harness for the run r (its report into rep): a process of its
 * own in the jail. Returns jail_run's codes with jerr and res set. */
static int run_fresh(const struct check_spare_run *r, struct jail_result *res,
		     struct check_report_buf *rep, struct kf_err *jerr)
{
	memset(res, 0, sizeof *res);
	int fds[2];
	if (pipe2(fds, O_CLOEXEC))
		return kf_err_set(jerr, KF_EIO, "pipe: %s", strerror(errno));
	struct reader rd = {.fd = fds[0]};
	pthread_t th;
	if (pthread_create(&th, NULL, read_all, &rd)) {
		close(fds[0]);
		close(fds[1]);
		return kf_err_set(jerr, KF_ENOMEM, "cannot start the report reader");
	}
	const char *argv[] = {r->harness, "--job", ".", "--report-fd", "3", NULL};
	struct jail_bind binds[] = {{r->harness, NULL}};
	struct jail_job jj = {
		.argv = argv,
		.job_dir = r->dir,
		.ro_binds = binds,
		.ro_binds_len = 1,
		.want_gpu = 1,
		.pass_fds = &fds[1],
		.pass_fds_len = 1,
		.wall_ms = r->wall_ms,
		.fsize_bytes = 64ull << 30,
		.data_bytes = r->data_bytes,
		.stdout_cap_bytes = 16384,
		.stderr_cap_bytes = 16384,
		.cancel = r->stop,
	};
	int rc = jail_run(r->jail, &jj, res, jerr);
	close(fds[1]);
	pthread_join(th, NULL);
	close(fds[0]);
	*rep = rd.rep;
	return rc;
}

/* The report's JSON lines as one object: the final object with "rows"
 * (one per finished row), or just {"rows": [...]} when the harness died.
 * What arrived is kept even then. Returns new. */
static json_t *report_parse(char *text)
{
	json_t *rep = json_object(), *rows = json_array(), *final = NULL;
	json_object_set_new(rep, "rows", rows);
	/* Phase totals are cumulative: the last line that has them knows most
	 * (a killed process leaves its row or timeout line's). */
	for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		json_t *o = json_loads(line, 0, NULL);
		if (!json_is_object(o)) {
			json_decref(o);
			continue;
		}
		if (json_is_object(json_object_get(o, "phases")))
			json_object_set(rep, "phases", json_object_get(o, "phases"));
		if (json_is_true(json_object_get(o, "final"))) {
			json_decref(final);
			final = o;
		} else
			json_array_append_new(rows, o);
	}
	if (final) {
		json_object_update_missing(final, rep);
		json_decref(rep);
		rep = final;
	}
	return rep;
}

int check_harness_exec(struct check_env *env, const char *dir, const json_t *job,
		       unsigned timeout_ms, const volatile int *stop, json_t **report,
		       char **stdout_text, struct kf_err *err)
{
	*report = NULL;
	if (stdout_text)
		*stdout_text = NULL;
	char harness[PATH_MAX];
	if (check_find_file("KFORGE_HARNESS", "kforge-harness", "../lib/kforge/kforge-harness",
			    harness, sizeof harness))
		return kf_err_set(err, KF_ENOTFOUND,
				  "kforge-harness not found next to kforge (set KFORGE_HARNESS)");
	unsigned long long mem;
	int rc = check_harness_mem_bytes(&mem, err);
	if (rc)
		return rc;
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/job.json", dir);
	if (json_dump_file(job, p, JSON_COMPACT))
		return kf_err_set(err, KF_EIO, "cannot write %s", p);
	struct jail *j;
	rc = check_get_jail(env, &j, err);
	if (rc)
		return rc;
	struct check_spare_run run = {
		.jail = j,
		.harness = harness,
		.data_bytes = HARNESS_DATA_LIMIT ? mem : 0,
		.device = (int)json_integer_value(json_object_get(job, "device")),
		.dir = dir,
		.wall_ms = timeout_ms ? timeout_ms : CHECK_DEFAULT_TIMEOUT_MS,
		.stop = stop,
	};
	struct jail_result res;
	struct check_report_buf rd = {0};
	struct kf_err jerr = {0};
	rc = check_spare_exec(env, &run, &res, &rd, &jerr);
	int spare = rc != CHECK_SPARE_NONE;
	if (!spare)
		rc = run_fresh(&run, &res, &rd, &jerr);
	check_spare_refill(env, &run);
	if (rc && rc != KF_ETIMEOUT)
		kf_err_set(err, rc, "%s", jerr.msg);
	if (stdout_text && res.out && res.out_len)
		*stdout_text = strdup(res.out);
	if (rc == KF_ETIMEOUT) {
		kf_err_set(err, KF_ETIMEOUT,
			   "the kernel did not finish within %u ms: the harness was killed",
			   run.wall_ms);
	}
	json_t *rep = report_parse(rd.buf);
	if (spare)
		json_object_set_new(rep, "spare", json_true());
	if (rc == 0 && !json_is_true(json_object_get(rep, "final")))
		rc = no_report(&res, &rd, mem, err);
	*report = rep;
	jail_result_fini(&res);
	free(rd.buf);
	return rc;
}

/* --- phase timings ------------------------------------------------------ */

double check_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A phase total from the harness: a finite number >= 0, else 0. */
static double phase_ms(const json_t *phases, const char *name)
{
	double v = json_number_value(json_object_get(phases, name));
	return v >= 0 && v < 1e12 ? v : 0;
}

void check_phases_add_run(struct check_phases *ph, const json_t *report, double wall_ms)
{
	const json_t *p = json_object_get(report, "phases");
	double load = phase_ms(p, "module_load_ms"), up = phase_ms(p, "upload_ms"),
	       runs = phase_ms(p, "kernel_runs_ms"), down = phase_ms(p, "download_ms");
	ph->module_load_ms += load;
	ph->upload_ms += up;
	ph->kernel_runs_ms += runs;
	ph->download_ms += down;
	/* Rounded phase totals may exceed the wall time by a hair: the start
	 * is never negative. */
	double rest = wall_ms - (load + up + runs + down);
	ph->harness_start_ms += rest > 0 ? rest : 0;
	check_phases_count_run(ph, report);
}

void check_phases_count_run(struct check_phases *ph, const json_t *report)
{
	ph->harness_runs++;
	if (json_is_true(json_object_get(report, "spare")))
		ph->harness_spares++;
}
