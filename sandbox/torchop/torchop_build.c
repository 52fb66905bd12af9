/* torchop_build: compiles a generated op into a shared library the host's
 * torch loads. nvcc compiles the kernel file (no torch headers: it stays a
 * plain CUDA compile) while g++ compiles the binding against torch's
 * headers, in parallel, each in the jail; one g++ link makes op.so with the
 * CUDA runtime linked statically (no second libcudart next to torch's).
 * torch.utils.cpp_extension's ninja route is not used: it adds a build
 * system, Python startup and torch/extension.h (the whole C++ frontend) to
 * every cold build. Results are cached under <data_dir>/torchops/<key>,
 * key = sha256 of the generated sources, torch version and ABI, arch and
 * nvcc version; an entry appears by rename, so a reader never sees half. */
#include "sandbox/torchop/torchop_int.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "sandbox/compile/cache.h"
#include "sandbox/compile/compile.h"

#define BUILD_WALL_MS 180000u /* per compiler run */

static unsigned ms_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (unsigned)((t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000);
}

int torchop_write_file(const char *dir, const char *name, const char *data, size_t len,
		       struct kf_err *err)
{
	char p[PATH_MAX + 128];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "wb");
	int ok = f && fwrite(data, 1, len, f) == len;
	if (f && fclose(f))
		ok = 0;
	if (!ok)
		return kf_err_set(err, KF_EIO, "cannot write %s: %s", p, strerror(errno));
	return 0;
}

/* ---- diagnostics ----------------------------------------------------------- */

/* One line of compiler output as {file, line, severity, message}, or NULL. */
static json_t *diag_line(const char *l, size_t n)
{
	char file[256], sev[32];
	long line = 0;
	size_t i = 0;
	while (i < n && !isspace((unsigned char)l[i]) && l[i] != '(' && l[i] != ':')
		i++;
	if (i == 0 || i >= n || i >= sizeof file)
		return NULL;
	snprintf(file, sizeof file, "%.*s", (int)i, l);
	const char *p = l + i, *end = l + n;
	if (*p == '(') { /* nvcc: file(12): error: msg */
		line = strtol(p + 1, (char **)&p, 10);
		if (p + 3 > end || p[0] != ')' || p[1] != ':' || p[2] != ' ')
			return NULL;
		p += 3;
	} else { /* gcc: file:12:5: error: msg */
		line = strtol(p + 1, (char **)&p, 10);
		if (p >= end || *p != ':')
			return NULL;
		if (isdigit((unsigned char)p[1]))
			strtol(p + 1, (char **)&p, 10);
		if (p + 2 > end || p[0] != ':' || p[1] != ' ')
			return NULL;
		p += 2;
	}
	size_t k = 0;
	while (p + k < end && p[k] != ':' && k < sizeof sev - 1)
		k++;
	if (p + k >= end || line <= 0)
		return NULL;
	snprintf(sev, sizeof sev, "%.*s", (int)k, p);
	if (strstr(sev, "error"))
		snprintf(sev, sizeof sev, "error");
	else if (strstr(sev, "warning"))
		snprintf(sev, sizeof sev, "warning");
	else
		return NULL;
	p += k + 1;
	while (p < end && *p == ' ')
		p++;
	return json_pack("{s:s, s:I, s:s, s:s%}", "file", file, "line", (json_int_t)line,
			 "severity", sev, "message", p, (size_t)(end - p));
}

json_t *torchop_diagnostics(const struct torchop_gen *g, const char *kernel_file, const char *text)
{
	json_t *out = json_array();
	const char *l = text ? text : "";
	while (*l && json_array_size(out) < TORCHOP_DIAG_MAX) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		json_t *d = diag_line(l, n);
		if (d) {
			const char *f = json_string_value(json_object_get(d, "file"));
			size_t line = (size_t)json_integer_value(json_object_get(d, "line"));
			size_t sl = strcmp(f, kernel_file) == 0 ? torchop_source_line(g, line) : 0;
			if (sl)
				json_object_set_new(d, "source_line", json_integer((json_int_t)sl));
			json_array_append_new(out, d);
		}
		l += n + (e ? 1 : 0);
	}
	return out;
}

/* ---- the build ------------------------------------------------------------- */

struct step {
	struct jail *jail;
	const char *dir;
	const char *const *argv;
	const struct jail_bind *binds;
	size_t binds_len;
	const volatile int *cancel;
	int rc;	      /* jail_run's answer */
	int ok;	      /* exited 0 */
	char *output; /* stderr then stdout, new */
	unsigned ms;
	struct kf_err err;
};

static void *step_run(void *arg)
{
	struct step *st = arg;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct jail_job job = {.argv = st->argv,
			       .job_dir = st->dir,
			       .ro_binds = st->binds,
			       .ro_binds_len = st->binds_len,
			       .wall_ms = BUILD_WALL_MS,
			       .cancel = st->cancel,
			       .stdout_cap_bytes = TORCHOP_OUTPUT_MAX,
			       .stderr_cap_bytes = TORCHOP_OUTPUT_MAX};
	struct jail_result res;
	st->rc = jail_run(st->jail, &job, &res, &st->err);
	st->ok = !st->rc && res.exited && res.exit_code == 0;
	size_t n = res.errout_len + res.out_len;
	st->output = malloc(n + 1);
	if (st->output) {
		memcpy(st->output, res.errout ? res.errout : "", res.errout_len);
		memcpy(st->output + res.errout_len, res.out ? res.out : "", res.out_len);
		st->output[n] = '\0';
	}
	jail_result_fini(&res);
	st->ms = ms_since(&t0);
	return NULL;
}

static void build_key(const struct torchop_gen *g, const char *arch, const struct torchop_torch *t,
		      const char *nvcc_version, char key[65])
{
	struct cache_sha256 h;
	const char *parts[] = {"torchop-1",    g->kernel_cu,
			       g->binding_cpp, g->init_py,
			       t->version,     t->cxx11_abi ? "abi1" : "abi0",
			       arch,	       nvcc_version ? nvcc_version : ""};
	cache_sha256_init(&h);
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		cache_sha256_update(&h, parts[i], strlen(parts[i]) + 1);
	cache_sha256_final_hex(&h, key);
}

static int mkdir_p(const char *path, struct kf_err *err)
{
	char failed[PATH_MAX];
	int rc = fs_mkdir_p(path, 0700, failed, sizeof failed);
	if (rc)
		return kf_err_set(err, rc, "cannot create %s: %s", failed[0] ? failed : path,
				  strerror(errno));
	return 0;
}

static int file_exists(const char *dir, const char *pkg, const char *name)
{
	char p[PATH_MAX + 200];
	struct stat st;
	snprintf(p, sizeof p, "%s/%s/%s", dir, pkg, name);
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Runs the two compiles in parallel, then the link, in dir. Returns 0,
 * KF_ECOMPILE with b->diagnostics, or the jail's codes. */
static int compile_link(struct jail *j, const char *dir, const struct torchop_gen *g,
			const char *arch, const struct torchop_torch *t, const volatile int *cancel,
			struct torchop_built *b, struct kf_err *err)
{
	char nvcc[PATH_MAX + 16], gencode[64], abi[40], inc0[PATH_MAX + 4], inc1[PATH_MAX + 4],
		incc[PATH_MAX + 16], libdir[PATH_MAX + 4], rpath[PATH_MAX + 16],
		cudalib[PATH_MAX + 16];
	const char *ch = jail_cuda_home(j);
	const char *num = arch + 3; /* "sm_90a" -> "90a" */
	snprintf(nvcc, sizeof nvcc, "%s/bin/nvcc", ch);
	snprintf(gencode, sizeof gencode, "-gencode=arch=compute_%s,code=[sm_%s,compute_%s]", num,
		 num, num);
	snprintf(abi, sizeof abi, "-D_GLIBCXX_USE_CXX11_ABI=%d", t->cxx11_abi);
	snprintf(inc0, sizeof inc0, "-I%s", t->include[0]);
	snprintf(inc1, sizeof inc1, "-I%s", t->include[1]);
	snprintf(incc, sizeof incc, "-I%s/include", ch);
	snprintf(libdir, sizeof libdir, "-L%s", t->lib);
	snprintf(rpath, sizeof rpath, "-Wl,-rpath,%s", t->lib);
	snprintf(cudalib, sizeof cudalib, "-L%s/lib64", ch);
	const char *nv_argv[] = {nvcc,		"-c",		"-O3",	 "-std=c++17",
				 gencode,	"-Xcompiler",	"-fPIC", "-o",
				 "op_kernel.o", "op_kernel.cu", NULL};
	/* -O1: the binding is glue; optimising torch's inline headers harder
	 * costs seconds of every cold build and nothing at run time. */
	const char *cxx_argv[] = {
		"/usr/bin/g++", "-c", "-O1", "-fPIC",	     "-std=c++17",     abi, inc0,
		inc1,		incc, "-o",  "op_binding.o", "op_binding.cpp", NULL};
	const char *ld_argv[] = {"/usr/bin/g++", "-shared",	"-o",
				 "op.so",	 "op_kernel.o", "op_binding.o",
				 libdir,	 "-lc10",	"-lc10_cuda",
				 "-ltorch_cpu",	 cudalib,	"-lcudart_static",
				 "-lrt",	 "-lpthread",	"-ldl",
				 rpath,		 NULL};
	struct jail_bind binds[16];
	size_t nb = torchop_torch_binds(t, binds, 16);
	struct step nv = {.jail = j, .dir = dir, .argv = nv_argv, .cancel = cancel};
	struct step cx = {.jail = j,
			  .dir = dir,
			  .argv = cxx_argv,
			  .binds = binds,
			  .binds_len = nb,
			  .cancel = cancel};
	struct step ld = {.jail = j,
			  .dir = dir,
			  .argv = ld_argv,
			  .binds = binds,
			  .binds_len = nb,
			  .cancel = cancel};
	pthread_t th;
	int threaded = pthread_create(&th, NULL, step_run, &nv) == 0;
	if (!threaded)
		step_run(&nv);
	step_run(&cx);
	if (threaded)
		pthread_join(th, NULL);
	b->nvcc_ms = nv.ms;
	b->cxx_ms = cx.ms;
	int rc = 0;
	if (nv.rc || cx.rc) {
		rc = kf_err_set(err, nv.rc ? nv.rc : cx.rc, "%s", nv.rc ? nv.err.msg : cx.err.msg);
	} else if (!nv.ok || !cx.ok) {
		b->diagnostics = json_array();
		json_t *d1 = nv.ok ? NULL : torchop_diagnostics(g, "op_kernel.cu", nv.output);
		json_t *d2 = cx.ok ? NULL : torchop_diagnostics(g, "op_kernel.cu", cx.output);
		if (d1)
			json_array_extend(b->diagnostics, d1);
		if (d2)
			json_array_extend(b->diagnostics, d2);
		json_decref(d1);
		json_decref(d2);
		if (!json_array_size(b->diagnostics)) {
			const char *o = !nv.ok ? nv.output : cx.output;
			size_t l = o ? strlen(o) : 0;
			json_array_append_new(b->diagnostics,
					      json_pack("{s:s, s:i, s:s, s:s}", "file",
							!nv.ok ? "op_kernel.cu" : "op_binding.cpp",
							"line", 0, "severity", "error", "message",
							l > 2000 ? o + l - 2000
							: o	 ? o
								 : ""));
		}
		rc = kf_err_set(err, KF_ECOMPILE, "the op did not build: %s",
				!nv.ok ? "nvcc rejected the kernel file"
				       : "g++ rejected the binding");
	} else {
		step_run(&ld);
		b->link_ms = ld.ms;
		if (ld.rc)
			rc = kf_err_set(err, ld.rc, "%s", ld.err.msg);
		else if (!ld.ok) {
			size_t l = ld.output ? strlen(ld.output) : 0;
			b->diagnostics = json_pack("[{s:s, s:i, s:s, s:s}]", "file", "op.so",
						   "line", 0, "severity", "error", "message",
						   l > 2000    ? ld.output + l - 2000
						   : ld.output ? ld.output
							       : "");
			rc = kf_err_set(err, KF_ECOMPILE, "the op did not link");
		}
	}
	free(nv.output);
	free(cx.output);
	free(ld.output);
	return rc;
}

int torchop_build(struct check_env *env, const struct torchop_gen *g, const char *arch,
		  const struct torchop_torch *t, const volatile int *cancel,
		  struct torchop_built *b, struct kf_err *err)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	memset(b, 0, sizeof *b);
	if (!env->cc)
		return kf_err_set(err, KF_ESANDBOX, "the compiler is not available");
	struct jail *j = compile_jail(env->cc);
	int rc = compile_sandbox_usable(env->cc, err);
	if (rc)
		return rc;
	if (strncmp(arch, "sm_", 3) != 0 || strlen(arch) > 8)
		return kf_err_set(err, KF_EINVAL, "arch: '%s' is not of the form sm_90", arch);
	build_key(g, arch, t, compile_compiler_version(env->cc), b->key);
	snprintf(b->pkg, sizeof b->pkg, "kforge_%s", g->name);
	char root[PATH_MAX - 128], tmp[PATH_MAX], pkgdir[PATH_MAX + 128];
	snprintf(root, sizeof root, "%s/torchops", env->data_dir ? env->data_dir : "/tmp");
	if ((rc = mkdir_p(root, err)))
		return rc;
	snprintf(b->dir, sizeof b->dir, "%s/%s", root, b->key);
	if (file_exists(b->dir, b->pkg, "op.so") && file_exists(b->dir, b->pkg, "__init__.py")) {
		b->cache_hit = 1;
		b->build_ms = ms_since(&t0);
		return 0;
	}
	snprintf(tmp, sizeof tmp, "%s/.build-XXXXXX", root);
	if (!mkdtemp(tmp))
		return kf_err_set(err, KF_EIO, "cannot create a build folder in %s: %s", root,
				  strerror(errno));
	snprintf(pkgdir, sizeof pkgdir, "%s/%s", tmp, b->pkg);
	if ((rc = torchop_write_file(tmp, "op_kernel.cu", g->kernel_cu, strlen(g->kernel_cu),
				     err)) ||
	    (rc = torchop_write_file(tmp, "op_binding.cpp", g->binding_cpp, strlen(g->binding_cpp),
				     err)) ||
	    (rc = compile_link(j, tmp, g, arch, t, cancel, b, err)))
		goto out;
	char from[PATH_MAX + 64], to[PATH_MAX + 200];
	snprintf(from, sizeof from, "%s/op.so", tmp);
	snprintf(to, sizeof to, "%s/op.so", pkgdir);
	if (mkdir(pkgdir, 0700) || rename(from, to)) {
		rc = kf_err_set(err, KF_EIO, "cannot create %s: %s", pkgdir, strerror(errno));
		goto out;
	}
	if ((rc = torchop_write_file(pkgdir, "__init__.py", g->init_py, strlen(g->init_py), err)))
		goto out;
	/* Another build of the same key may have won the rename: its entry is
	 * the same content, so this one is dropped. */
	if (rename(tmp, b->dir) == 0)
		tmp[0] = '\0';
	else if (errno != EEXIST && errno != ENOTEMPTY)
		rc = kf_err_set(err, KF_EIO, "cannot store the op in %s: %s", b->dir,
				strerror(errno));
out:
	if (tmp[0])
		check_jobdir_remove(tmp);
	b->build_ms = ms_since(&t0);
	return rc;
}
