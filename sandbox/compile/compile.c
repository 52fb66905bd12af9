/* compile: untrusted CUDA device code -> cubin, in the jail. The flags pass an
 * allowlist and are rebuilt for the backend (NVRTC through the kforge-nvrtc
 * helper when it exists, nvcc --cubin otherwise or when NVRTC fails, so
 * nvcc's diagnostics are the authoritative ones). Output is parsed into
 * diagnostics and per-kernel resources (compile_parse.c), then stored as an
 * artifact keyed by sha256(compiler version, arch, flags, source). The flag
 * allowlist is in compile_flags.c. */
#include "sandbox/compile/compile.h"

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
#include "sandbox/compile/cache.h"
#include "sandbox/compile/compile_int.h"
#include "sandbox/compile/compile_queue.h"
#include "sandbox/pool/gpu.h"
#include "sandbox/jail/jail.h"
#include "sandbox/compile/sass.h"

#define DEFAULT_TIMEOUT_MS 60000u
#define LOG_CAP		   (256u << 10) /* bytes of compiler output kept */
#define PTX_READ_CAP	   (64u << 20)
#define SRC_NAME	   "kernel.cu"

struct compiler {
	struct compile_config cfg;
	struct jail *jail;
	struct jail *own_jail; /* opened here when cfg->jail was NULL */
	struct cache *cache;
	char nvcc[PATH_MAX];
	char cuobjdump[PATH_MAX];    /* "" when the toolkit has none */
	char nvrtc_helper[PATH_MAX]; /* "" when not available */
	char libnvrtc[PATH_MAX];
	char version[64]; /* "13.0.88" */
	char default_arch[16];
	struct compile_queue *queue; /* bounds compiler processes, fair between clients */
};

static long long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* --- open / close -------------------------------------------------------- */

static void find_helper(struct compiler *cc)
{
	char dir[PATH_MAX], p[PATH_MAX + 32];
	cc->nvrtc_helper[0] = 0;
	if (cc->cfg.nvrtc_helper) {
		if (*cc->cfg.nvrtc_helper && access(cc->cfg.nvrtc_helper, X_OK) == 0)
			realpath(cc->cfg.nvrtc_helper, cc->nvrtc_helper)
				? (void)0
				: (void)(cc->nvrtc_helper[0] = 0);
	} else if (fs_exe_dir(dir, sizeof dir) == 0) {
		const char *cands[] = {"%s/kforge-nvrtc", "%s/../kforge-nvrtc",
				       "%s/../lib/kforge/kforge-nvrtc"};
		for (size_t i = 0; i < 3 && !cc->nvrtc_helper[0]; i++) {
			snprintf(p, sizeof p, cands[i], dir);
			if (access(p, X_OK) == 0 && !realpath(p, cc->nvrtc_helper))
				cc->nvrtc_helper[0] = 0;
		}
	}
	if (!cc->nvrtc_helper[0])
		return;
	const char *libs[] = {"lib64/libnvrtc.so", "lib/libnvrtc.so", "lib64/libnvrtc.so.13",
			      "lib64/libnvrtc.so.12"};
	for (size_t i = 0; i < 4; i++) {
		snprintf(p, sizeof p, "%s/%s", jail_cuda_home(cc->jail), libs[i]);
		if (access(p, R_OK) == 0 && realpath(p, cc->libnvrtc))
			return;
	}
	cc->nvrtc_helper[0] = 0; /* no libnvrtc: nvcc only */
}

/* nvcc --version, run as a plain child: trusted binary, trusted argument. */
static void read_version(struct compiler *cc)
{
	snprintf(cc->version, sizeof cc->version, "unknown");
	struct jail *plain = NULL;
	struct jail_config jc = {.mode = JAIL_NONE, .cuda_home = jail_cuda_home(cc->jail)};
	if (jail_open(&jc, &plain, NULL) != 0)
		return;
	const char *argv[] = {cc->nvcc, "--version", NULL};
	struct jail_job job = {.argv = argv, .job_dir = "/", .wall_ms = 30000};
	struct jail_result r;
	if (jail_run(plain, &job, &r, NULL) == 0 && r.exit_code == 0) {
		const char *v = strstr(r.out, ", V");
		if (v) {
			v += 3;
			size_t n = strcspn(v, " \n");
			if (n < sizeof cc->version)
				snprintf(cc->version, sizeof cc->version, "%.*s", (int)n, v);
		}
	}
	jail_result_fini(&r);
	jail_close(plain);
}

static void pick_default_arch(struct compiler *cc)
{
	snprintf(cc->default_arch, sizeof cc->default_arch, "sm_90");
	if (cc->cfg.default_arch && compile_check_arch(cc->cfg.default_arch, NULL) == 0) {
		snprintf(cc->default_arch, sizeof cc->default_arch, "%s", cc->cfg.default_arch);
		return;
	}
	/* The local GPU's arch when there is one (sandbox/pool/gpu.h). */
	const struct gpu_host *host = NULL;
	if (gpu_probe(&host, NULL) == 0 && host->count > 0 &&
	    compile_check_arch(host->gpus[0].arch, NULL) == 0)
		snprintf(cc->default_arch, sizeof cc->default_arch, "%s", host->gpus[0].arch);
}

/* An operator's knob: a positive integer from the environment, or dflt. */
static int env_uint(const char *name, unsigned long lo, unsigned long hi, unsigned long dflt,
		    unsigned long *v, struct kf_err *err)
{
	const char *s = getenv(name);
	char *end;
	*v = dflt;
	if (!s || !*s)
		return 0;
	*v = strtoul(s, &end, 10);
	if (*end || *v < lo || *v > hi)
		return kf_err_set(err, KF_EINVAL, "%s='%.20s': expected an integer %lu..%lu", name,
				  s, lo, hi);
	return 0;
}

/* The resource limits of compiles: memory per compiler process, slots,
 * and the per-client share of them (config first, then the environment). */
static int open_queue(struct compiler *cc, struct kf_err *err)
{
	unsigned long mb, per, slots;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int rc = env_uint("KFORGE_COMPILE_MEM_MB", 256, 1ul << 20, COMPILE_MEM_DEFAULT_BYTES >> 20,
			  &mb, err);
	if (rc)
		return rc;
	if (!cc->cfg.mem_bytes)
		cc->cfg.mem_bytes = (unsigned long long)mb << 20;
	rc = env_uint("KFORGE_COMPILE_SLOTS", 1, 1024, ncpu < 2 ? 2 : (unsigned long)ncpu, &slots,
		      err);
	if (rc)
		return rc;
	struct compile_queue_limits lim = {
		.slots = cc->cfg.slots > 0 ? cc->cfg.slots : (int)slots,
		.client_waiting = cc->cfg.client_waiting > 0 ? cc->cfg.client_waiting
							     : COMPILE_CLIENT_WAITING_DEFAULT,
	};
	rc = env_uint("KFORGE_COMPILE_CLIENT_SLOTS", 1, (unsigned long)lim.slots,
		      lim.slots / 2 > 0 ? (unsigned long)lim.slots / 2 : 1, &per, err);
	if (rc)
		return rc;
	lim.client_slots = cc->cfg.client_slots > 0 ? cc->cfg.client_slots : (int)per;
	return compile_queue_new(&lim, &cc->queue, err);
}

int compile_open(const struct compile_config *cfg, struct compiler **out, struct kf_err *err)
{
	*out = NULL;
	if (!cfg || !cfg->data_dir)
		return kf_err_set(err, KF_EINVAL, "compile: a data dir is required");
	struct compiler *cc = calloc(1, sizeof *cc);
	if (!cc)
		return kf_err_set(err, KF_ENOMEM, "compile: out of memory");
	cc->cfg = *cfg;
	cc->jail = cfg->jail;
	int rc = 0;
	if (!cc->jail) {
		struct jail_config jc = {.mode = cfg->sandbox_none ? JAIL_NONE : JAIL_BWRAP};
		rc = jail_open(&jc, &cc->own_jail, err);
		if (rc)
			goto out;
		cc->jail = cc->own_jail;
	}
	snprintf(cc->nvcc, sizeof cc->nvcc, "%s/bin/nvcc", jail_cuda_home(cc->jail));
	if (access(cc->nvcc, X_OK) != 0) {
		rc = kf_err_set(err, KF_EINVAL, "compile: nvcc not found at %s (set CUDA_HOME)",
				cc->nvcc);
		goto out;
	}
	snprintf(cc->cuobjdump, sizeof cc->cuobjdump, "%s/bin/cuobjdump", jail_cuda_home(cc->jail));
	if (access(cc->cuobjdump, X_OK) != 0)
		cc->cuobjdump[0] = 0;
	char root[PATH_MAX];
	if (snprintf(root, sizeof root, "%s/artifacts", cfg->data_dir) >= (int)sizeof root) {
		rc = kf_err_set(err, KF_EINVAL, "compile: data dir path too long");
		goto out;
	}
	rc = cache_open(root, cfg->cache_cap_bytes, &cc->cache, err);
	if (rc)
		goto out;
	find_helper(cc);
	read_version(cc);
	pick_default_arch(cc);
	/* The operator's knob for the time limit (tests use a short one). */
	const char *tmo = getenv("KFORGE_COMPILE_TIMEOUT_MS");
	if (!cc->cfg.timeout_ms && tmo && *tmo) {
		char *end;
		unsigned long v = strtoul(tmo, &end, 10);
		if (*end || v < 100 || v > 3600000) {
			rc = kf_err_set(
				err, KF_EINVAL,
				"KFORGE_COMPILE_TIMEOUT_MS='%.20s': expected milliseconds, 100..3600000",
				tmo);
			goto out;
		}
		cc->cfg.timeout_ms = (unsigned)v;
	}
	rc = open_queue(cc, err);
	if (rc)
		goto out;
	*out = cc;
	return 0;
out:
	compile_close(cc); /* frees what was opened so far */
	return rc;
}

void compile_close(struct compiler *cc)
{
	if (!cc)
		return;
	cache_close(cc->cache);
	jail_close(cc->own_jail);
	compile_queue_free(cc->queue);
	free(cc);
}

const char *compile_default_arch(const struct compiler *cc)
{
	return cc->default_arch;
}

const char *compile_backend_name(const struct compiler *cc)
{
	return cc->nvrtc_helper[0] ? "nvrtc" : "nvcc";
}

const char *compile_compiler_version(const struct compiler *cc)
{
	return cc->version;
}

/* --- slots: at most one compiler process per CPU, fair between clients --- */

static int slot_take(struct compiler *cc, const struct compile_req *req, struct kf_err *err)
{
	return compile_queue_take(cc->queue, req->client, req->cancel, err);
}

static void slot_give(struct compiler *cc, const struct compile_req *req)
{
	compile_queue_give(cc->queue, req->client);
}

/* --- the compile --------------------------------------------------------- */

static void compute_key(const struct compiler *cc, const struct compile_req *req, const char *arch,
			char id[COMPILE_ID_LEN + 1])
{
	struct cache_sha256 s;
	cache_sha256_init(&s);
	/* The stored result's format is part of the key: /2 names occupancy
	 * entries as get_gpu_specs does (block_threads, limiting). */
	const char tag[] = "kforge-compile/2";
	cache_sha256_update(&s, tag, sizeof tag);
	cache_sha256_update(&s, cc->version, strlen(cc->version) + 1);
	cache_sha256_update(&s, arch, strlen(arch) + 1);
	char n[32];
	snprintf(n, sizeof n, "%zu", req->flags_len);
	cache_sha256_update(&s, n, strlen(n) + 1);
	for (size_t i = 0; i < req->flags_len; i++)
		cache_sha256_update(&s, req->flags[i], strlen(req->flags[i]) + 1);
	cache_sha256_update(&s, req->source, req->source_len);
	cache_sha256_final_hex(&s, id);
}

/* Appends the jail's output to log (stdout then stderr). */
static char *join_output(const struct jail_result *r)
{
	size_t n = r->out_len + r->errout_len + 2;
	char *s = malloc(n);
	if (!s)
		return NULL;
	memcpy(s, r->out, r->out_len);
	size_t k = r->out_len;
	if (k && s[k - 1] != '\n' && r->errout_len)
		s[k++] = '\n';
	memcpy(s + k, r->errout, r->errout_len);
	s[k + r->errout_len] = 0;
	return s;
}

/* Runs one backend in the jail. Returns the jail_run code; *exit_code the
 * backend's exit status; *log new text (stdout+stderr); *oom 1 when it ran
 * out of its memory limit. */
static int run_backend(struct compiler *cc, int use_nvrtc, const char *dir, const char *arch,
		       const struct compile_flagset *fs, int keep_ptx,
		       const struct compile_req *req, unsigned timeout_ms, int *exit_code,
		       char **log, int *log_truncated, int *oom, struct kf_err *err)
{
	const char *argv[COMPILE_ARGS_MAX + 24];
	int n = 0;
	char archopt[48], gencode[96];
	struct jail_bind bind = {.src = cc->nvrtc_helper};
	if (use_nvrtc) {
		argv[n++] = cc->nvrtc_helper;
		argv[n++] = cc->libnvrtc;
		argv[n++] = SRC_NAME;
		argv[n++] = "kernel.cubin";
		argv[n++] = "kernel.ptx";
		snprintf(archopt, sizeof archopt, "-arch=%s", arch);
		argv[n++] = archopt;
		argv[n++] = "--ptxas-options=-v";
		for (int i = 0; i < fs->nvrtc_len; i++)
			argv[n++] = fs->nvrtc[i];
	} else {
		argv[n++] = cc->nvcc;
		argv[n++] = "--cubin";
		const char *num = arch + 3;
		snprintf(gencode, sizeof gencode, "-gencode=arch=compute_%s,code=%s", num, arch);
		argv[n++] = gencode;
		argv[n++] = "-Xptxas";
		argv[n++] = "-v";
		for (int i = 0; i < fs->nvcc_len; i++)
			argv[n++] = fs->nvcc[i];
		if (keep_ptx) {
			argv[n++] = "--keep";
			argv[n++] = "--keep-dir";
			argv[n++] = "kf-keep";
		}
		argv[n++] = "-o";
		argv[n++] = "kernel.cubin";
		argv[n++] = SRC_NAME;
	}
	argv[n] = NULL;
	if (keep_ptx && !use_nvrtc) {
		char kd[PATH_MAX];
		snprintf(kd, sizeof kd, "%s/kf-keep", dir);
		mkdir(kd, 0755);
	}
	struct jail_job job = {
		.argv = argv,
		.job_dir = dir,
		.ro_binds = use_nvrtc ? &bind : NULL,
		.ro_binds_len = use_nvrtc ? 1 : 0,
		.wall_ms = timeout_ms,
		.mem_bytes = cc->cfg.mem_bytes,
		.stdout_cap_bytes = LOG_CAP,
		.stderr_cap_bytes = LOG_CAP,
		.cancel = req->cancel,
	};
	struct jail_result r;
	int rc = jail_run(cc->jail, &job, &r, err);
	*exit_code = r.exited ? r.exit_code : -1;
	*log = join_output(&r);
	*log_truncated = r.out_truncated || r.errout_truncated;
	/* Only a compiler that died of it (abort, or a signal's exit code):
	 * a source's own "#error out of memory" is a normal diagnostic. */
	*oom = r.mem_limited && (r.term_signal || r.exit_code > 128);
	jail_result_fini(&r);
	if (!*log && rc == 0)
		rc = kf_err_set(err, KF_ENOMEM, "compile: out of memory");
	return rc;
}

static void rm_job_junk(const char *dir)
{
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/kf-keep", dir);
	/* kf-keep holds nvcc's intermediates; only kernel.ptx is kept. */
	char from[PATH_MAX + 48], to[PATH_MAX + 48];
	snprintf(from, sizeof from, "%s/kernel.ptx", p);
	snprintf(to, sizeof to, "%s/kernel.ptx", dir);
	struct stat st;
	if (lstat(from, &st) == 0 && S_ISREG(st.st_mode))
		rename(from, to);
	fs_rm_tree(p);
}

/* Refuses a request that cannot be compiled: no source, empty, over the
 * cap, binary, or a bad arch. */
static int check_request(const struct compile_req *req, const char *arch, struct kf_err *err)
{
	if (!req || !req->source)
		return kf_err_set(err, KF_EINVAL,
				  "source is missing: give the CUDA C++ text of the kernels");
	if (req->source_len == 0)
		return kf_err_set(err, KF_EINVAL,
				  "source is empty: give the CUDA C++ text of the kernels");
	if (req->source_len > COMPILE_SOURCE_MAX_BYTES)
		return kf_err_set(err, KF_ETOOBIG,
				  "source is %zu bytes, over the %u-byte (1 MiB) cap",
				  req->source_len, COMPILE_SOURCE_MAX_BYTES);
	if (memchr(req->source, 0, req->source_len))
		return kf_err_set(err, KF_EINVAL, "source contains a NUL byte: expected text");
	return compile_check_arch(arch, err);
}

/* Runs the compiler on dir's source: NVRTC first when there is a helper,
 * nvcc when NVRTC fails (it lacks the host headers and some options: nvcc
 * has the last word, and its diagnostics are the ones reported). */
static int run_compilers(struct compiler *cc, const struct compile_req *req, const char *dir,
			 const char *arch, const struct compile_flagset *fs, unsigned timeout,
			 long long t0, int *code, char **log, int *trunc, int *oom,
			 const char **backend, struct kf_err *err)
{
	*backend = "nvcc";
	if (!cc->nvrtc_helper[0] || cc->cfg.force_nvcc)
		return run_backend(cc, 0, dir, arch, fs, 1, req, timeout, code, log, trunc, oom,
				   err);
	*backend = "nvrtc";
	int rc = run_backend(cc, 1, dir, arch, fs, 1, req, timeout, code, log, trunc, oom, err);
	/* A compiler that ran out of its memory limit is the answer: nvcc
	 * would run out too. */
	if (rc == 0 && *code != 0 && !*oom) {
		free(*log);
		*log = NULL;
		*backend = "nvcc";
		long long left = (long long)timeout - (now_ms() - t0);
		rc = run_backend(cc, 0, dir, arch, fs, 1, req, left > 1000 ? (unsigned)left : 1000,
				 code, log, trunc, oom, err);
	}
	return rc;
}

/* Builds the result of a finished compile (in) and stores it with the
 * cleaned log as artifact id (dir is published into the cache, or left
 * for the caller to discard on error). Returns the result in *base (new). */
static int store_result(struct compiler *cc, const struct compile_parse_in *in, char *dir,
			const char *id, json_t **base, struct kf_err *err)
{
	*base = compile_build_result(in);
	if (!*base)
		return kf_err_set(err, KF_ENOMEM, "compile: out of memory");
	char *clean = compile_clean_log(in);
	char lp[PATH_MAX + 16];
	snprintf(lp, sizeof lp, "%s/log.txt", dir);
	/* The log is a copy for reading; result.json below is what must land. */
	int lrc = clean ? fs_write_file(lp, clean, strlen(clean)) : 0;
	(void)lrc;
	free(clean);
	json_object_set_new(*base, "artifact_id", json_string(id));
	char *txt = json_dumps(*base, JSON_COMPACT);
	snprintf(lp, sizeof lp, "%s/result.json", dir);
	if (!txt || fs_write_file(lp, txt, strlen(txt)) != 0) {
		free(txt);
		return kf_err_set(err, KF_EIO, "compile: cannot write result.json");
	}
	free(txt);
	/* The source stays as kernel.cu; nothing else from the job. */
	int rc = cache_publish(cc->cache, dir, id, err);
	dir[0] = 0;
	return rc;
}

/* A compile killed at the time limit (its partial log may say where it
 * was). Returns KF_ETIMEOUT. */
static int timed_out(struct compiler *cc, const struct compile_req *req, const char *log,
		     const char *dir, unsigned timeout, struct compile_result *res,
		     struct kf_err *err)
{
	kf_err_clear(err);
	int rc = kf_err_set(err, KF_ETIMEOUT,
			    "compile timed out after %u ms (runaway template recursion or "
			    "constexpr evaluation?); the compiler was killed",
			    timeout);
	struct compile_parse_in in = {.log = log,
				      .source = req->source,
				      .source_len = req->source_len,
				      .job_dir = dir,
				      .cuda_home = jail_cuda_home(cc->jail)};
	compile_answer_timeout(&in, timeout, res);
	return rc;
}

/* Takes a compiler slot for req's client (waiting in its queue) and stages
 * a job directory holding the source. On error the slot is given back;
 * a staged dir (dir[0] != 0) is the caller's to discard. */
static int stage_job(struct compiler *cc, const struct compile_req *req, char *dir, size_t cap,
		     struct kf_err *err)
{
	int rc = slot_take(cc, req, err);
	if (rc)
		return rc;
	rc = cache_stage(cc->cache, dir, cap, err);
	if (rc) {
		slot_give(cc, req);
		return rc;
	}
	char src_path[PATH_MAX + 16];
	snprintf(src_path, sizeof src_path, "%s/" SRC_NAME, dir);
	if (fs_write_file(src_path, req->source, req->source_len) != 0) {
		slot_give(cc, req);
		return kf_err_set(err, KF_EIO, "compile: cannot write the source: %s",
				  strerror(errno));
	}
	return 0;
}

int compile_kernel(struct compiler *cc, const struct compile_req *req, struct compile_result *res,
		   struct kf_err *err)
{
	memset(res, 0, sizeof *res);
	long long t0 = now_ms();
	int rc = 0;
	struct compile_flagset *fs = NULL;
	char *log = NULL, *ptx = NULL, *rjson = NULL, *cubin = NULL;
	size_t cubin_len = 0;
	char dir[PATH_MAX] = "";
	json_t *base = NULL;

	const char *arch = req && req->arch && *req->arch ? req->arch : cc->default_arch;
	rc = check_request(req, arch, err);
	if (rc)
		return rc;
	snprintf(res->arch, sizeof res->arch, "%s", arch);
	res->sandbox = jail_mode_name(cc->jail);
	res->ptx_bytes = -1;
	fs = malloc(sizeof *fs);
	if (!fs)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	rc = compile_parse_flags(req->flags, req->flags_len, fs, err);
	if (rc)
		goto out;
	rc = jail_usable(cc->jail, err);
	if (rc)
		goto out;

	char id[COMPILE_ID_LEN + 1];
	compute_key(cc, req, arch, id);

	/* Cache hit: the stored result plus what this request asks for. */
	size_t rlen = 0;
	if (cache_read(cc->cache, id, "result.json", 1u << 20, &rjson, &rlen, NULL) == 0) {
		base = json_loadb(rjson, rlen, 0, NULL);
		if (base) {
			res->cache_hit = 1;
			goto answer;
		}
	}

	if ((rc = stage_job(cc, req, dir, sizeof dir, err)))
		goto out;
	unsigned timeout = cc->cfg.timeout_ms ? cc->cfg.timeout_ms : DEFAULT_TIMEOUT_MS;
	int code = -1, trunc = 0, oom = 0;
	const char *backend;
	rc = run_compilers(cc, req, dir, arch, fs, timeout, t0, &code, &log, &trunc, &oom, &backend,
			   err);
	slot_give(cc, req);
	rm_job_junk(dir);
	struct compile_parse_in in = {.log = log,
				      .log_truncated = trunc,
				      .source = req->source,
				      .source_len = req->source_len,
				      .job_dir = dir,
				      .cuda_home = jail_cuda_home(cc->jail),
				      .ok = code == 0,
				      .arch = arch,
				      .backend = backend,
				      .version = cc->version,
				      .debug = fs->debug,
				      .kb = cc->cfg.kb};
	if (rc == KF_ETIMEOUT) {
		rc = timed_out(cc, req, log, dir, timeout, res, err);
		goto out;
	}
	if (rc == 0 && oom) {
		/* Not cached: the same source may compile under a higher limit. */
		compile_answer_mem_limit(&in, cc->cfg.mem_bytes, res);
		char sum[600];
		compile_summary(res, sum, sizeof sum);
		rc = kf_err_set(err, KF_ECOMPILE, "%s", sum);
		goto out;
	}
	if (rc)
		goto out;
	char path[PATH_MAX + 16];
	size_t plen = 0;
	snprintf(path, sizeof path, "%s/kernel.ptx", dir);
	/* Missing or over the cap, either stays NULL and the result lacks it. */
	if (fs_read_file(path, PTX_READ_CAP, FS_UNTRUSTED, &ptx, &plen) != 0)
		ptx = NULL;
	snprintf(path, sizeof path, "%s/kernel.cubin", dir);
	if (fs_read_file(path, PTX_READ_CAP, FS_UNTRUSTED, &cubin, &cubin_len) != 0)
		cubin = NULL;
	in.ptx = ptx;
	in.cubin = (const unsigned char *)cubin;
	in.cubin_len = cubin_len;
	if ((rc = store_result(cc, &in, dir, id, &base, err)))
		goto out;

answer:
	res->ok = json_is_true(json_object_get(base, "ok"));
	snprintf(res->artifact_id, sizeof res->artifact_id, "%s", id);
	res->compile_ms = (unsigned)(now_ms() - t0);
	res->report = base;
	base = NULL;
	compile_answer_fill(cc, res, req->want_ptx, req->want_sass);
	if (!res->ok) {
		char sum[600];
		compile_summary(res, sum, sizeof sum);
		rc = kf_err_set(err, KF_ECOMPILE, "%s", sum);
	}
out:
	if (dir[0])
		cache_discard(cc->cache, dir);
	json_decref(base);
	free(rjson);
	free(ptx);
	free(cubin);
	free(log);
	free(fs);
	if (res->compile_ms == 0)
		res->compile_ms = (unsigned)(now_ms() - t0);
	return rc;
}

void compile_result_fini(struct compile_result *res)
{
	if (!res)
		return;
	json_decref(res->report);
	json_decref(res->sass);
	free(res->log_tail);
	memset(res, 0, sizeof *res);
}

int compile_artifact_path(struct compiler *cc, const char *id, const char *kind, char *buf,
			  size_t cap, struct kf_err *err)
{
	const char *name = compile_artifact_file(kind);
	if (!name)
		return kf_err_set(err, KF_EINVAL,
				  "artifact kind '%.32s' unknown: expected cubin, ptx, log, sass, "
				  "source or result.json",
				  kind ? kind : "(null)");
	return cache_file_path(cc->cache, id, name, buf, cap, err);
}

int compile_artifact_read(struct compiler *cc, const char *id, const char *kind, size_t max_bytes,
			  char **data, size_t *len, struct kf_err *err)
{
	*data = NULL;
	*len = 0;
	const char *name = compile_artifact_file(kind);
	if (!name)
		return kf_err_set(err, KF_EINVAL,
				  "artifact kind '%.32s' unknown: expected cubin, ptx, log, sass, "
				  "source or result.json",
				  kind ? kind : "(null)");
	return cache_read(cc->cache, id, name, max_bytes, data, len, err);
}

/* For compile_sass.c: the pieces it needs from the compiler. */
struct cache *compile_cache(struct compiler *cc)
{
	return cc->cache;
}
struct jail *compile_jail(struct compiler *cc)
{
	return cc->jail;
}

int compile_sandbox_usable(const struct compiler *cc, struct kf_err *err)
{
	return jail_usable(cc->jail, err);
}
const char *compile_cuobjdump(const struct compiler *cc)
{
	return cc->cuobjdump;
}
