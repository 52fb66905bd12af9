/* kforge-harness: runs a kernel spec's launch list on the GPU for the daemon.
 * Usage: kforge-harness --job DIR (--report-fd N | --report-file PATH)
 *        [--wait-fd M --device D]
 * With --wait-fd the process is a spare: it makes its CUDA context on
 * device D first and then waits for "go CPU_S" on fd M (spare_wait). DIR
 * holds spec.json (the expanded spec), job.json (mode, sizes, seeds,
 * module paths) and the modules; candidate outputs are written there as raw
 * files. The structured report goes to fd N, never stdout (kernel printf
 * lands there, captured and capped by the jail). This file: job loading,
 * modules and launches, the report line writer, the watchdog and main;
 * buffers with guard bands are in buffers.c, the check mode in check.c,
 * the benchmark mode in timing.c, calibration in calib.c, the profile mode
 * (run under ncu, which starts the harness itself: the report goes to a
 * file there) in profile.c. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "sandbox/harness/harness_int.h"

double harness_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* --- the phase clock ---------------------------------------------------- */

static const char *const PHASE_NAMES[HARNESS_PH_N] = {"module_load_ms", "upload_ms",
						      "kernel_runs_ms", "download_ms"};

/* Nanosecond totals and the running phase; atomic because the watchdog
 * reads them while the main thread is stuck in a kernel. */
static struct {
	atomic_llong ns[HARNESS_PH_N];
	atomic_int cur; /* enum harness_phase */
	atomic_llong since_ns;
} ph = {.cur = HARNESS_PH_NONE};

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void harness_phase(enum harness_phase p)
{
	long long now = now_ns();
	int c = atomic_load(&ph.cur);
	if (c >= 0 && c < HARNESS_PH_N)
		atomic_fetch_add(&ph.ns[c], now - atomic_load(&ph.since_ns));
	atomic_store(&ph.since_ns, now);
	atomic_store(&ph.cur, (int)p);
}

/* The totals in ms, the running phase's time so far included. */
static void phases_now(double ms[HARNESS_PH_N])
{
	long long now = now_ns();
	int c = atomic_load(&ph.cur);
	for (int i = 0; i < HARNESS_PH_N; i++)
		ms[i] = (double)atomic_load(&ph.ns[i]) / 1e6;
	if (c >= 0 && c < HARNESS_PH_N)
		ms[c] += (double)(now - atomic_load(&ph.since_ns)) / 1e6;
}

json_t *harness_phases_json(void)
{
	double ms[HARNESS_PH_N];
	phases_now(ms);
	json_t *o = json_object();
	for (int i = 0; i < HARNESS_PH_N; i++)
		json_object_set_new(o, PHASE_NAMES[i], json_real(ms[i]));
	return o;
}

const char *harness_cu_name(CUresult r)
{
	const char *n = NULL;
	if (cuGetErrorName(r, &n) != CUDA_SUCCESS || !n)
		return "CUDA_ERROR_UNKNOWN";
	return n;
}

int harness_cuda_fail(struct harness *h, CUresult r, const char *what)
{
	const char *msg = NULL;
	cuGetErrorString(r, &msg);
	if (!json_object_get(h->report, "fault"))
		json_object_set_new(h->report, "fault",
				    json_pack("{s:s, s:i, s:s, s:s}", "error", harness_cu_name(r),
					      "code", (int)r, "message", msg ? msg : "", "during",
					      what));
	return KF_EFAULT;
}

int harness_host_oom(struct harness *h, const char *what, uint64_t bytes)
{
	struct rlimit lim;
	char m[320];
	if (getrlimit(RLIMIT_DATA, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY)
		snprintf(m, sizeof m,
			 "host memory limit %llu MiB exceeded: %" PRIu64 " bytes for %s could "
			 "not be allocated (raise KFORGE_HARNESS_MEM_MB in the daemon's "
			 "environment, or use smaller sizes)",
			 (unsigned long long)(lim.rlim_cur >> 20), bytes, what);
	else
		snprintf(m, sizeof m, "out of host memory: %" PRIu64 " bytes for %s", bytes, what);
	if (!json_object_get(h->report, "error"))
		json_object_set_new(h->report, "error", json_string(m));
	return KF_ENOMEM;
}

int harness_parse_seed(const json_t *v, uint64_t *out)
{
	if (!json_is_string(v))
		return KF_EINVAL;
	char *end = NULL;
	errno = 0;
	unsigned long long x = strtoull(json_string_value(v), &end, 16);
	if (errno || !end || *end)
		return KF_EINVAL;
	*out = x;
	return 0;
}

/* --- modules and launches ---------------------------------------------- */

int harness_prog_load(struct harness *h, struct harness_prog *p, const char *path,
		      const struct spec_launch *launch, size_t launch_len)
{
	memset(p, 0, sizeof *p);
	p->path = path;
	p->launch = launch;
	p->launch_len = launch_len;
	CUresult r = cuModuleLoad(&p->mod, path);
	if (r != CUDA_SUCCESS) {
		char what[300];
		snprintf(what, sizeof what, "loading module %s (built for another arch?)", path);
		return harness_cuda_fail(h, r, what);
	}
	for (size_t i = 0; i < launch_len; i++) {
		r = cuModuleGetFunction(&p->fn[i], p->mod, launch[i].kernel);
		if (r != CUDA_SUCCESS) {
			char what[300];
			snprintf(what, sizeof what,
				 "finding kernel '%s' (declare it extern \"C\" __global__)",
				 launch[i].kernel);
			harness_cuda_fail(h, r, what);
			json_object_set_new(json_object_get(h->report, "fault"), "kind",
					    json_string("kernel_not_found"));
			return KF_EINVAL;
		}
	}
	return 0;
}

void harness_prog_unload(struct harness_prog *p)
{
	if (p->mod)
		cuModuleUnload(p->mod);
	p->mod = NULL;
}

int harness_prog_launch(struct harness *h, struct harness_prog *p, struct harness_buf *bufs)
{
	for (size_t i = 0; i < p->launch_len; i++) {
		const struct spec_launch *l = &p->launch[i];
		uint32_t g[3], b[3], sb;
		struct kf_err err = {0};
		int runs = 1;
		if (spec_launch_runs(h->s, l, h->vals, &runs, &err) ||
		    (runs && spec_launch_dims(h->s, l, h->vals, "launch", g, b, &sb, &err))) {
			json_object_set_new(h->report, "error", json_string(err.msg));
			return KF_EINVAL;
		}
		if (!runs) /* its "when" is false at this size */
			continue;
		union {
			CUdeviceptr ptr;
			float f32;
			double f64;
			int32_t i32;
			int64_t i64;
			uint16_t u16;
		} store[SPEC_MAX_ARGS];
		void *params[SPEC_MAX_ARGS];
		for (size_t a = 0; a < l->args_len; a++) {
			const struct spec_arg *arg = &l->args[a];
			memset(&store[a], 0, sizeof store[a]);
			if (arg->kind == SPEC_ARG_TENSOR) {
				store[a].ptr = bufs[arg->index].data;
			} else if (arg->kind == SPEC_ARG_SCALAR) {
				const struct spec_scalar *sc = &h->s->scalars[arg->index];
				switch (sc->dtype) {
				case KF_DT_F32: store[a].f32 = (float)sc->value; break;
				case KF_DT_F64: store[a].f64 = sc->value; break;
				case KF_DT_I32: store[a].i32 = (int32_t)sc->ivalue; break;
				case KF_DT_I64: store[a].i64 = sc->ivalue; break;
				case KF_DT_F16:
					store[a].u16 = dtype_f32_to_f16((float)sc->value);
					break;
				case KF_DT_BF16:
					store[a].u16 = dtype_f32_to_bf16((float)sc->value);
					break;
				default: break;
				}
			} else {
				int64_t v;
				struct expr_env env = spec_env(h->s, h->vals);
				if (expr_eval(arg->expr, &env, &v, &err)) {
					json_object_set_new(h->report, "error",
							    json_string(err.msg));
					return KF_EINVAL;
				}
				if (arg->dtype == KF_DT_I64)
					store[a].i64 = v;
				else if (v < INT32_MIN || v > INT32_MAX) {
					char m[300];
					snprintf(m, sizeof m,
						 "launch %s: argument %zu ('%s') is %" PRId64
						 ", which does not fit in i32: type it '%s:i64'",
						 l->kernel, a, expr_text(arg->expr), v,
						 expr_text(arg->expr));
					json_object_set_new(h->report, "error", json_string(m));
					return KF_EINVAL;
				} else
					store[a].i32 = (int32_t)v;
			}
			params[a] = &store[a];
		}
		if (sb > 48 * 1024) {
			CUresult r = cuFuncSetAttribute(
				p->fn[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)sb);
			if (r != CUDA_SUCCESS) {
				char what[200];
				snprintf(what, sizeof what,
					 "raising the shared memory limit of %s to %u bytes",
					 l->kernel, sb);
				return harness_cuda_fail(h, r, what);
			}
		}
		CUresult r = cuLaunchKernel(p->fn[i], g[0], g[1], g[2], b[0], b[1], b[2], sb,
					    h->stream, l->args_len ? params : NULL, NULL);
		if (r != CUDA_SUCCESS) {
			char what[200];
			snprintf(what, sizeof what,
				 "launching %s (grid %u,%u,%u block %u,%u,%u shared %u)", l->kernel,
				 g[0], g[1], g[2], b[0], b[1], b[2], sb);
			return harness_cuda_fail(h, r, what);
		}
	}
	return 0;
}

int harness_sync(struct harness *h, const char *what)
{
	CUresult r = cuStreamSynchronize(h->stream);
	return r == CUDA_SUCCESS ? 0 : harness_cuda_fail(h, r, what);
}

/* --- main -------------------------------------------------------------- */

static json_t *load_json(const char *path, json_t *report)
{
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);
	if (!j) {
		char m[300];
		snprintf(m, sizeof m, "%s: %s (line %d)", path, je.text, je.line);
		json_object_set_new(report, "error", json_string(m));
	}
	return j;
}

static pthread_mutex_t send_mu = PTHREAD_MUTEX_INITIALIZER;

void harness_send_line(struct harness *h, const json_t *obj)
{
	char *text = json_dumps(obj, JSON_COMPACT);
	if (!text)
		return;
	size_t len = strlen(text);
	text[len++] = '\n'; /* json_dumps leaves room: replace the NUL */
	pthread_mutex_lock(&send_mu);
	/* A failed write cuts the report short, which the daemon reports; the
	 * harness has no other channel to say so. */
	int rc = fs_write_all(h->report_fd, text, len);
	pthread_mutex_unlock(&send_mu);
	free(text);
	(void)rc;
}

/* The watchdog: a check trial (or a whole benchmark size) that runs past
 * row_timeout_ms (a hung kernel) reports {"row": i, "timeout": true} with
 * the phase totals and ends the process, which is the only way to stop a
 * running kernel. */
static struct {
	atomic_llong deadline_ms; /* 0 = disarmed */
	atomic_long row;
	int fd;
	long long limit_ms;
} wd;

static void *watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		usleep(20000);
		long long d = atomic_load(&wd.deadline_ms);
		if (d && (long long)harness_now_ms() > d) {
			/* Formatted on the stack: the hung thread may hold the
			 * allocator's lock. */
			_Static_assert(HARNESS_PH_N == 4, "the timeout line names 4 phases");
			double ms[HARNESS_PH_N];
			phases_now(ms);
			char line[400];
			int n = snprintf(line, sizeof line,
					 "{\"row\":%ld,\"timeout\":true,\"timeout_ms\":%lld,"
					 "\"phases\":{\"%s\":%.3f,\"%s\":%.3f,\"%s\":%.3f,"
					 "\"%s\":%.3f}}\n",
					 atomic_load(&wd.row), wd.limit_ms, PHASE_NAMES[0], ms[0],
					 PHASE_NAMES[1], ms[1], PHASE_NAMES[2], ms[2],
					 PHASE_NAMES[3], ms[3]);
			pthread_mutex_lock(&send_mu);
			int rc = fs_write_all(wd.fd, line, (size_t)n);
			(void)rc; /* exiting either way: a cut line reads as a crash */
			_exit(0);
		}
	}
	return NULL;
}

void harness_watchdog_arm(long row)
{
	if (wd.limit_ms <= 0)
		return;
	atomic_store(&wd.row, row);
	atomic_store(&wd.deadline_ms, (long long)harness_now_ms() + wd.limit_ms);
}

void harness_watchdog_disarm(void)
{
	atomic_store(&wd.deadline_ms, 0);
}

static void watchdog_start(struct harness *h)
{
	wd.fd = h->report_fd;
	wd.limit_ms = (long long)json_integer_value(json_object_get(h->job, "row_timeout_ms"));
	if (wd.limit_ms <= 0)
		return;
	pthread_t t;
	if (pthread_create(&t, NULL, watchdog, NULL) == 0)
		pthread_detach(t);
	else
		wd.limit_ms = 0;
}

static int setup_device(struct harness *h, int ordinal)
{
	CUresult r = cuInit(0);
	if (r != CUDA_SUCCESS)
		return harness_cuda_fail(h, r, "cuInit (is the GPU visible in the sandbox?)");
	if ((r = cuDeviceGet(&h->dev, ordinal)) != CUDA_SUCCESS)
		return harness_cuda_fail(h, r, "selecting the device");
	cuDeviceGetName(h->dev_name, sizeof h->dev_name, h->dev);
	cuDeviceGetAttribute(&h->l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, h->dev);
	/* The primary context: cuBLAS (calibrate) shares it. */
	if ((r = cuDevicePrimaryCtxRetain(&h->ctx, h->dev)) != CUDA_SUCCESS ||
	    (r = cuCtxSetCurrent(h->ctx)) != CUDA_SUCCESS)
		return harness_cuda_fail(h, r, "creating the context");
	/* A blocking stream: the poisons, canaries and uploads (synchronous
	 * memsets and copies on the legacy stream, which return before the
	 * device is done) finish before the next launch on it starts. A
	 * non-blocking stream let a launch overtake them on a busy GPU: stale
	 * inputs, and poison landing on the outputs a kernel had written. */
	if ((r = cuStreamCreate(&h->stream, CU_STREAM_DEFAULT)) != CUDA_SUCCESS)
		return harness_cuda_fail(h, r, "creating the stream");
	int major = 0, minor = 0;
	cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, h->dev);
	cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, h->dev);
	json_object_set_new(h->report, "device",
			    json_pack("{s:i, s:s, s:i, s:i, s:i}", "index", ordinal, "name",
				      h->dev_name, "cc_major", major, "cc_minor", minor, "l2_bytes",
				      h->l2_bytes));
	return 0;
}

/* The line a spare writes first on the report fd once it has its job and
 * a healthy context: the daemon knows the job started here (and strips the
 * line); a spare that ends without it never had the job, which then gets a
 * fresh harness. */
#define SPARE_TAKEN_LINE "{\"spare\":\"taken\"}\n"

/* Spare mode: the daemon starts the harness before its job exists, so the
 * process and jail start and the CUDA context are off the job's path. The
 * context is made now; the job's files are in the directory when
 * "go CPU_S\n" arrives on wait_fd, and CPU_S (the job's CPU time limit,
 * s) replaces the spare's own. Returns 0 to run the job; 1 when the pipe
 * closed without a job (the daemon retired the spare: exit quietly); 2
 * when the context could not be made or is unusable after the wait (said
 * on stderr; the daemon starts a fresh harness, whose report says why). */
static int spare_wait(struct harness *h, int wait_fd, int ordinal)
{
	int bad = setup_device(h, ordinal);
	if (bad) {
		char *t = json_dumps(json_object_get(h->report, "fault"), JSON_COMPACT);
		fprintf(stderr, "spare: no CUDA context on device %d: %s\n", ordinal, t ? t : "?");
		free(t);
		return 2;
	}
	char line[64];
	size_t n = 0;
	while (n < sizeof line - 1 && (n == 0 || line[n - 1] != '\n')) {
		ssize_t k = read(wait_fd, line + n, sizeof line - 1 - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return 1;
		n += (size_t)k;
	}
	line[n] = 0;
	close(wait_fd);
	unsigned long cpu_s = 0;
	if (sscanf(line, "go %lu", &cpu_s) != 1 || cpu_s == 0)
		return 1;
	/* A context that faulted while the spare waited cannot run the job. */
	CUresult r = cuStreamSynchronize(h->stream);
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "spare: the context on device %d is unusable: %s\n", ordinal,
			harness_cu_name(r));
		return 2;
	}
	struct rusage ru;
	struct rlimit lim;
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		rlim_t used = (rlim_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec);
		lim.rlim_cur = used + cpu_s;
		lim.rlim_max = lim.rlim_cur + 1;
		if (setrlimit(RLIMIT_CPU, &lim) != 0)
			return 2;
	}
	if (fs_write_all(h->report_fd, SPARE_TAKEN_LINE, strlen(SPARE_TAKEN_LINE)))
		return 1;
	return 0;
}

/* The job's device, set up now; a spare's (spare_dev >= 0) is set up
 * already and must be the job's. */
static int job_device(struct harness *h, int spare_dev)
{
	int ordinal = (int)json_integer_value(json_object_get(h->job, "device"));
	if (spare_dev < 0)
		return setup_device(h, ordinal);
	if (ordinal == spare_dev)
		return 0;
	json_object_set_new(h->report, "error",
			    json_string("job.json: device differs from the spare's --device"));
	return KF_EINVAL;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	int fd = -1, wait_fd = -1, spare_dev = -1;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--job") == 0)
			dir = argv[i + 1];
		else if (strcmp(argv[i], "--report-fd") == 0)
			fd = (int)strtol(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--wait-fd") == 0)
			wait_fd = (int)strtol(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--device") == 0)
			spare_dev = (int)strtol(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "--report-file") == 0)
			fd = open(argv[i + 1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	}
	if (!dir || fd < 0 || (wait_fd >= 0) != (spare_dev >= 0)) {
		fprintf(stderr, "usage: kforge-harness --job DIR (--report-fd N | --report-file "
				"PATH) [--wait-fd M --device D]\n");
		return 2;
	}
	/* Kernel printf and anything else on stdout stays away from the report. */
	struct harness h = {.report_fd = fd};
	h.report = json_object();
	int rc = 0;
	if (chdir(dir)) {
		json_object_set_new(h.report, "error",
				    json_string("cannot enter the job directory"));
		rc = KF_EIO;
		goto out;
	}
	if (wait_fd >= 0 && (rc = spare_wait(&h, wait_fd, spare_dev))) {
		json_decref(h.report);
		return rc == 1 ? 0 : 3;
	}
	h.job = load_json("job.json", h.report);
	if (!h.job) {
		rc = KF_EINVAL;
		goto out;
	}
	const char *mode = json_string_value(json_object_get(h.job, "mode"));
	json_object_set_new(h.report, "mode", json_string(mode ? mode : "?"));
	if (!mode) {
		json_object_set_new(h.report, "error", json_string("job.json: mode missing"));
		rc = KF_EINVAL;
		goto out;
	}
	if (strcmp(mode, "calibrate") != 0) {
		json_t *sj = load_json("spec.json", h.report);
		if (!sj) {
			rc = KF_EINVAL;
			goto out;
		}
		struct kf_err err = {0};
		struct spec_limits lim;
		spec_limits_default(&lim);
		lim.max_device_bytes = UINT64_MAX; /* the daemon applied its cap */
		lim.max_host_bytes = UINT64_MAX;
		rc = spec_parse(sj, &lim, NULL, &h.s, &err);
		json_decref(sj);
		if (rc) {
			json_object_set_new(h.report, "error", json_string(err.msg));
			goto out;
		}
		const json_t *sz = json_object_get(h.job, "sizes");
		if (!sz && strcmp(mode, "check") == 0)
			goto run; /* check mode binds each row */
		if (!json_is_array(sz) || json_array_size(sz) != h.s->vars_len) {
			json_object_set_new(
				h.report, "error",
				json_string("job.json: sizes must list every size variable"));
			rc = KF_EINVAL;
			goto out;
		}
		for (size_t k = 0; k < h.s->vars_len; k++)
			h.vals[k] = json_integer_value(json_array_get(sz, k));
		if ((rc = spec_bind(h.s, h.vals, &lim, "job", &h.b, &err))) {
			json_object_set_new(h.report, "error", json_string(err.msg));
			goto out;
		}
	}
run:
	if ((rc = job_device(&h, spare_dev)))
		goto out;
	double t0 = harness_now_ms();
	if (strcmp(mode, "check") == 0) {
		watchdog_start(&h);
		rc = harness_mode_check(&h);
	} else if (strcmp(mode, "bench") == 0) {
		/* One watchdog for the whole size: its line says where the time
		 * of a hang went, which the jail's kill could not. */
		watchdog_start(&h);
		harness_watchdog_arm(0);
		rc = harness_mode_bench(&h);
		harness_watchdog_disarm();
	} else if (strcmp(mode, "profile") == 0) {
		watchdog_start(&h); /* armed for the warm-up only */
		rc = harness_mode_profile(&h);
	} else if (strcmp(mode, "calibrate") == 0)
		rc = harness_mode_calibrate(&h);
	else {
		json_object_set_new(h.report, "error", json_string("job.json: unknown mode"));
		rc = KF_EINVAL;
	}
	json_object_set_new(h.report, "harness_ms", json_real(harness_now_ms() - t0));
out:
	harness_phase(HARNESS_PH_NONE);
	json_object_set_new(h.report, "phases", harness_phases_json());
	json_object_set_new(h.report, "ok", json_boolean(rc == 0));
	fflush(stdout);
	json_object_set_new(h.report, "final", json_true());
	harness_send_line(&h, h.report);
	spec_free(h.s);
	json_decref(h.job);
	json_decref(h.report);
	free(h.scratch);
	/* After a fault the context is unusable; exiting releases everything. */
	return rc == 0 || rc == KF_EFAULT || rc == KF_EINVAL ? 0 : 1;
}
