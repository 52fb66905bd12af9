/* model_run: one benchmark_model job on a GPU: a fresh job directory with
 * job.json, sandbox/model/model_bench.py run by the installed python3 in
 * the jail (GPU nodes, torch's directories, the kforge tree read-only)
 * from the runner's GPU queue, its result.json read back (capped), the
 * built ops library kept for the next run, and the driver's errors mapped
 * to KF_E* codes with their messages. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "sandbox/jail/jail.h"
#include "sandbox/model/model.h"
#include "sandbox/pool/runner.h"

#define PY_PATHS_MAX 24

/* python3 and its import directories, found once by a trusted probe; the
 * driver itself reports a missing torch or transformers. */
static pthread_once_t py_once = PTHREAD_ONCE_INIT;
static char py_exe[PATH_MAX];
static char py_paths[PY_PATHS_MAX][PATH_MAX];
static size_t py_paths_len;
static char py_pythonpath[8192];

static void py_probe(void)
{
	FILE *f = popen("python3 -c 'import os, sys; print(os.path.realpath(sys.executable)); "
			"[print(os.path.realpath(p)) for p in sys.path if p and os.path.isdir(p)]' "
			"2>/dev/null",
			"r");
	if (!f)
		return;
	char line[PATH_MAX];
	size_t pp = 0;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		if (!py_exe[0]) {
			snprintf(py_exe, sizeof py_exe, "%s", line);
		} else if (py_paths_len < PY_PATHS_MAX && pp < sizeof py_pythonpath) {
			snprintf(py_paths[py_paths_len++], PATH_MAX, "%s", line);
			pp += (size_t)snprintf(py_pythonpath + pp, sizeof py_pythonpath - pp,
					       "%s%s", pp ? ":" : "", line);
		}
	}
	if (pclose(f) != 0)
		py_exe[0] = 0;
}

/* The kforge tree holding sandbox/model/model_bench.py (resolved into out):
 * $KFORGE_ROOT, or the directory above the binary's (build/kforge in a
 * checkout; `make install` does not install the Python side). */
static int find_root(char out[PATH_MAX], struct kf_err *err)
{
	const char *e = getenv("KFORGE_ROOT");
	char p[PATH_MAX], probe[PATH_MAX + 64];
	if (e && *e) {
		snprintf(p, sizeof p, "%s", e);
	} else {
		if (fs_exe_dir(p, sizeof p) != 0)
			return kf_err_set(err, KF_ENOTFOUND, "cannot read /proc/self/exe");
		char *slash = strrchr(p, '/');
		if (slash)
			*slash = 0;
	}
	snprintf(probe, sizeof probe, "%s/sandbox/model/model_bench.py", p);
	if (access(probe, R_OK) != 0 || !realpath(p, out))
		return kf_err_set(err, KF_ENOTFOUND,
				  "benchmark_model: %s not found; run kforge from its source tree "
				  "or set KFORGE_ROOT to it",
				  probe);
	return 0;
}

/* Reads path into a new NUL-terminated buffer of at most cap bytes. */
static int read_capped(const char *path, size_t cap, char **out, struct kf_err *err)
{
	int rc = fs_read_file(path, cap, 0, out, NULL);
	if (rc == KF_ETOOBIG)
		return kf_err_set(err, rc, "%s is over %zu bytes", path, cap);
	if (rc == KF_ENOMEM)
		return kf_err_set(err, rc, "out of memory");
	if (rc)
		return kf_err_set(err, rc, "cannot open %s: %s", path, strerror(errno));
	return 0;
}

struct job_ctx {
	const struct model_env *env;
	const char *dir, *root, *prebuilt, *cache;
	unsigned timeout_s;
	int gpu;
	struct jail_result res;
	int ran;
};

static int job_fn(void *arg, int gpu, const volatile int *stop, struct kf_err *err)
{
	struct job_ctx *c = arg;
	char drv[PATH_MAX + 40], pp[sizeof py_pythonpath + 16], pkg[PATH_MAX + 40],
		pre[PATH_MAX + 40], dev[48];
	c->gpu = gpu;
	snprintf(drv, sizeof drv, "%s/sandbox/model/model_bench.py", c->root);
	snprintf(pp, sizeof pp, "PYTHONPATH=%s", py_pythonpath);
	snprintf(pkg, sizeof pkg, "KF_TORCH_PKG=%s/kernels/torch", c->root);
	snprintf(pre, sizeof pre, "KF_TORCH_PREBUILT=%s", c->prebuilt ? c->prebuilt : "");
	snprintf(dev, sizeof dev, "CUDA_VISIBLE_DEVICES=%d", gpu);
	const char *argv[] = {py_exe, drv, "job.json", "result.json", NULL};
	const char *envp[] = {pp, pkg, pre, dev, "KF_TORCH_CACHE=" JAIL_JOB_DIR "/torch-ops",
			      "TORCHINDUCTOR_CACHE_DIR=/tmp/inductor",
			      "TRITON_CACHE_DIR=/tmp/triton",
			      /* Inductor's compile worker pool needs POSIX semaphores
			       * (/dev/shm), which the jail does not mount */
			      "TORCHINDUCTOR_COMPILE_THREADS=1", "OMP_NUM_THREADS=8", NULL};
	struct jail_bind binds[PY_PATHS_MAX + 3];
	size_t nb = 0;
	binds[nb++] = (struct jail_bind){.src = py_exe};
	binds[nb++] = (struct jail_bind){.src = c->root};
	if (c->prebuilt)
		binds[nb++] = (struct jail_bind){.src = c->prebuilt};
	for (size_t k = 0; k < py_paths_len; k++)
		binds[nb++] = (struct jail_bind){.src = py_paths[k]};
	struct jail_config cfg = {.mode = c->env->sandbox_none ? JAIL_NONE : JAIL_BWRAP};
	struct jail *j = NULL;
	int rc = jail_open(&cfg, &j, err);
	if (!rc)
		rc = jail_usable(j, err);
	if (!rc) {
		struct jail_job jj = {.argv = argv,
				      .job_dir = c->dir,
				      .env = envp,
				      .ro_binds = binds,
				      .ro_binds_len = nb,
				      .want_gpu = 1,
				      .wall_ms = c->timeout_s * 1000u,
				      .cpu_s = c->timeout_s * 8u,
				      .fsize_bytes = 1ull << 30,
				      .nproc = 1024,
				      .stdout_cap_bytes = 64u << 10,
				      .stderr_cap_bytes = 64u << 10,
				      .cancel = stop};
		rc = jail_run(j, &jj, &c->res, err);
		c->ran = 1;
	}
	jail_close(j);
	return rc;
}

/* Keeps the library the job built (job dir torch-ops/<key>/) in
 * <data_dir>/torch-ops/<key>/ for the next run; best effort. */
static void keep_lib(const char *dir, const char *cache, const json_t *res)
{
	const char *lib = json_string_value(json_object_get(res, "lib"));
	const char *pre = JAIL_JOB_DIR "/torch-ops/";
	if (!lib || strncmp(lib, pre, strlen(pre)) != 0 || strstr(lib, ".."))
		return;
	char src[PATH_MAX * 2], dst[PATH_MAX * 2], d[PATH_MAX * 2];
	snprintf(src, sizeof src, "%s/torch-ops/%s", dir, lib + strlen(pre));
	snprintf(dst, sizeof dst, "%s/%s", cache, lib + strlen(pre));
	snprintf(d, sizeof d, "%s", dst);
	char *slash = strrchr(d, '/');
	if (!slash)
		return;
	*slash = 0;
	if (fs_mkdir_p(d, 0755, NULL, 0))
		return;
	char tmp[sizeof dst + 16];
	snprintf(tmp, sizeof tmp, "%s.tmp", dst);
	FILE *in = fopen(src, "rb"), *out = in ? fopen(tmp, "wb") : NULL;
	char buf[65536];
	size_t n;
	int ok = in && out;
	while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0)
		ok = fwrite(buf, 1, n, out) == n;
	if (in)
		fclose(in);
	if (out && fclose(out))
		ok = 0;
	if (ok)
		ok = rename(tmp, dst) == 0;
	if (!ok)
		unlink(tmp);
}

/* The driver's {"error": ...} as a KF_E* code: exit 2 is the request's
 * fault (unknown target: the message lists the model's classes), 3 the
 * host's (no torch or GPU) or the GPU memory's. */
static int driver_error(const json_t *res, int exit_code, const char *recipe, struct kf_err *err)
{
	const char *msg = json_string_value(json_object_get(res, "error"));
	const json_t *classes = json_object_get(res, "classes");
	const char *target = json_string_value(json_object_get(res, "target"));
	if (target && json_is_array(classes)) {
		char buf[sizeof err->msg];
		model_unknown_target_msg(target, recipe, classes, buf, sizeof buf);
		return kf_err_set(err, KF_EINVAL, "%s", buf);
	}
	if (strncmp(msg, "out of GPU memory", 17) == 0)
		return kf_err_set(err, KF_EFAULT, "%s", msg);
	if (strncmp(msg, "torch not available", 19) == 0)
		return kf_err_set(err, KF_ENOTFOUND, "%s", msg);
	if (strncmp(msg, "no CUDA GPU", 11) == 0)
		return kf_err_set(err, KF_ENOGPU, "%s", msg);
	return kf_err_set(err, exit_code == 2 ? KF_EINVAL : KF_EFAULT, "benchmark_model: %s", msg);
}

/* The result of a finished job: result.json, or the reason there is none. */
static int job_result(struct job_ctx *c, const char *recipe, json_t **out, struct kf_err *err)
{
	char p[PATH_MAX + 32], *text = NULL;
	snprintf(p, sizeof p, "%s/result.json", c->dir);
	json_t *res = NULL;
	if (access(p, R_OK) == 0) {
		int rc = read_capped(p, MODEL_RESULT_MAX_BYTES, &text, err);
		if (rc)
			return rc;
		res = json_loads(text, 0, NULL);
		free(text);
	}
	if (!json_is_object(res)) {
		json_decref(res);
		const char *tail = c->res.errout ? c->res.errout : "";
		size_t n = strlen(tail);
		return kf_err_set(err, KF_EFAULT,
				  "benchmark_model: the job ended (%s %d) without a result; "
				  "stderr ends: %s",
				  c->res.term_signal ? "signal" : "exit status",
				  c->res.term_signal ? c->res.term_signal : c->res.exit_code,
				  n > 160 ? tail + n - 160 : tail);
	}
	if (json_is_string(json_object_get(res, "error"))) {
		int rc = driver_error(res, c->res.exit_code, recipe, err);
		keep_lib(c->dir, c->cache, res); /* built before the request failed */
		const json_t *classes = json_object_get(res, "classes");
		if (json_is_array(classes)) /* the whole listing, past the message's cap */
			*out = json_pack("{s:O, s:O}", "target", json_object_get(res, "target"),
					 "classes", classes);
		json_decref(res);
		return rc;
	}
	*out = res;
	return 0;
}

int model_run(const struct model_env *env, const json_t *job, const struct model_opts *o,
	      json_t **out, int *gpu, struct kf_err *err)
{
	char root[PATH_MAX], dir[PATH_MAX], cache[PATH_MAX], p[PATH_MAX + 32];
	const char *base = env->data_dir ? env->data_dir : "/tmp";
	const char *recipe = json_string_value(json_object_get(job, "recipe"));
	struct job_ctx c = {.env = env, .dir = dir, .root = root, .gpu = -1};
	int rc;
	*out = NULL;
	*gpu = -1;
	pthread_once(&py_once, py_probe);
	if (!py_exe[0])
		return kf_err_set(err, KF_ENOTFOUND,
				  "benchmark_model needs python3 with torch on this host; "
				  "python3 could not be started");
	if ((rc = find_root(root, err)))
		return rc;
	snprintf(cache, sizeof cache, "%s/torch-ops", base);
	snprintf(dir, sizeof dir, "%s/jobs", base);
	if (fs_mkdir_p(dir, 0755, NULL, 0) || fs_mkdir_p(cache, 0755, NULL, 0))
		return kf_err_set(err, KF_EIO, "cannot create %s or %s: %s", dir, cache,
				  strerror(errno));
	snprintf(dir, sizeof dir, "%s/jobs/model-XXXXXX", base);
	if (!mkdtemp(dir))
		return kf_err_set(err, KF_EIO, "mkdtemp %s: %s", dir, strerror(errno));
	c.prebuilt = cache;
	c.cache = cache;
	c.timeout_s = o && o->timeout_s ? o->timeout_s : MODEL_TIMEOUT_S;
	snprintf(p, sizeof p, "%s/job.json", dir);
	if (json_dump_file(job, p, 0)) {
		rc = kf_err_set(err, KF_EIO, "cannot write %s", p);
		goto out;
	}
	char label[64];
	snprintf(label, sizeof label, "model %s", recipe ? recipe : "?");
	struct runner_opts ro = {.timeout_ms = -1, .label = label};
	rc = runner_run(env->runner, RUNNER_GPU, job_fn, &c, NULL, NULL, o ? o->cancel : NULL, &ro,
			err);
	*gpu = c.gpu;
	if (rc == KF_ETIMEOUT || (!rc && c.res.timed_out)) {
		/* the shapes measured before the limit (written as each finished)
		 * come back with the error */
		struct kf_err ignored = {0};
		if (!job_result(&c, recipe ? recipe : "?", out, &ignored) &&
		    model_result_finish(*out, &ignored)) {
			json_decref(*out);
			*out = NULL;
		}
		rc = kf_err_set(err, KF_ETIMEOUT,
				"benchmark_model: the job ran past its %u s limit (timeout_s)",
				c.timeout_s);
		goto out;
	}
	if (rc)
		goto out;
	if ((rc = job_result(&c, recipe ? recipe : "?", out, err)))
		goto out;
	keep_lib(dir, cache, *out);
	rc = model_result_finish(*out, err);
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
out:
	jail_result_fini(&c.res);
	fs_rm_tree(dir);
	return rc;
}
