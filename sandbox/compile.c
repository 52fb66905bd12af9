/* compile: untrusted CUDA device code -> cubin, in the jail. The flags pass an
 * allowlist and are rebuilt for the backend (NVRTC through the kforge-nvrtc
 * helper when it exists, nvcc --cubin otherwise or when NVRTC fails, so
 * nvcc's diagnostics are the authoritative ones). Output is parsed into
 * diagnostics and per-kernel resources (compile_parse.c), then stored as an
 * artifact keyed by sha256(compiler version, arch, flags, source). */
#include "sandbox/compile.h"

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

#include "sandbox/cache.h"
#include "sandbox/compile_int.h"
#include "sandbox/gpu.h"
#include "sandbox/jail.h"
#include "sandbox/sass.h"

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
	pthread_mutex_t slot_lock; /* bounds concurrent compiler processes */
	pthread_cond_t slot_cond;
	int slots_free;
};

static long long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* --- flags --------------------------------------------------------------- */

static int name_ok(const char *s, size_t n)
{
	if (n == 0 ||
	    !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

/* -D NAME[=VALUE]: VALUE from a charset that cannot smuggle a path or a
 * second option: letters, digits and _ . + - * ( ) */
static int define_ok(const char *d)
{
	const char *eq = strchr(d, '=');
	size_t n = eq ? (size_t)(eq - d) : strlen(d);
	if (!name_ok(d, n))
		return 0;
	if (!eq)
		return 1;
	const char *v = eq + 1;
	if (strlen(v) > 64)
		return 0;
	for (; *v; v++)
		if (!((*v >= 'A' && *v <= 'Z') || (*v >= 'a' && *v <= 'z') ||
		      (*v >= '0' && *v <= '9') || strchr("_.+-*()", *v)))
			return 0;
	return 1;
}

/* A path named by -I or -include: relative, inside the job, no "..". */
static int job_path_ok(const char *p)
{
	if (!*p || *p == '/' || *p == '~' || strlen(p) > 128)
		return 0;
	const char *s = p;
	while (*s) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return 0;
		s += n;
		if (*s == '/')
			s++;
	}
	for (s = p; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || strchr("_.-/", *s)))
			return 0;
	return 1;
}

static const char *ptxas_ok[] = {"-v",
				 "--verbose",
				 "-O0",
				 "-O1",
				 "-O2",
				 "-O3",
				 "--warn-on-spills",
				 "-warn-spills",
				 "--warn-on-local-memory-usage",
				 "-warn-lmem-usage",
				 "--allow-expensive-optimizations=true",
				 "--allow-expensive-optimizations=false",
				 NULL};

static int in_list(const char *s, const char *const *list)
{
	for (int i = 0; list[i]; i++)
		if (!strcmp(s, list[i]))
			return 1;
	return 0;
}

/* Flags refused outright, each with the reason. */
static const struct {
	const char *flag;
	int prefix; /* 1: also refuse flag=... and flagVALUE */
	const char *why;
} refused[] = {
	{"-rdc", 1,
	 "relocatable device code is not supported: kernels must be self-contained (device code only, no separate linking)"},
	{"--relocatable-device-code", 1,
	 "relocatable device code is not supported: kernels must be self-contained"},
	{"-dc", 0,
	 "separate device compilation is not supported: kforge compiles one self-contained source"},
	{"--device-c", 0, "separate device compilation is not supported"},
	{"-dlink", 0, "device linking is not supported"},
	{"--device-link", 0, "device linking is not supported"},
	{"-o", 1, "kforge names the outputs itself; the artifact id identifies them"},
	{"--output-file", 1, "kforge names the outputs itself"},
	{"-ccbin", 1, "the host compiler is fixed by kforge"},
	{"--compiler-bindir", 1, "the host compiler is fixed by kforge"},
	{"-Xcompiler", 1,
	 "no host compilation happens: device code only, so host compiler options are refused"},
	{"--compiler-options", 1, "no host compilation happens: device code only"},
	{"-Xlinker", 1, "nothing is linked"},
	{"--linker-options", 1, "nothing is linked"},
	{"-Xnvlink", 1, "nothing is linked"},
	{"-l", 1, "nothing is linked"},
	{"-L", 1, "nothing is linked"},
	{"-arch", 1, "give the target in the arch field (sm_90, sm_90a), not as a flag"},
	{"--gpu-architecture", 1, "give the target in the arch field"},
	{"-gencode", 1, "give the target in the arch field"},
	{"--generate-code", 1, "give the target in the arch field"},
	{"-code", 1, "give the target in the arch field"},
	{"--gpu-code", 1, "give the target in the arch field"},
	{"--keep", 1, "kforge keeps the artifacts itself (ask for want_ptx)"},
	{"-keep", 1, "kforge keeps the artifacts itself (ask for want_ptx)"},
	{"--cubin", 0, "kforge always builds a cubin"},
	{"-cubin", 0, "kforge always builds a cubin"},
	{"-ptx", 0, "ask for want_ptx instead"},
	{"--ptx", 0, "ask for want_ptx instead"},
	{"-c", 0, "device code only: kforge builds a cubin, never a host object"},
	{"-run", 0, "nothing is run at compile time"},
	{"--run", 0, "nothing is run at compile time"},
	{"-E", 0, "preprocessor output is not returned"},
	{"-odir", 1, "kforge names the outputs itself"},
	{"--dependency-output", 1, "kforge names the outputs itself"},
	{"-MF", 1, "kforge names the outputs itself"},
	{"-Xcudafe", 1, "front-end options are not on the allowlist"},
	{"-Xarchive", 1, "nothing is archived"},
	{"--dryrun", 0, "not supported"},
	{"-isystem", 1, "include paths outside the job are not allowed"},
	{"--system-include", 1, "include paths outside the job are not allowed"},
	{"--options-file", 1, "options files are not read"},
	{"-optf", 1, "options files are not read"},
	{"--library", 1, "nothing is linked"},
	{"--library-path", 1, "nothing is linked"},
};

struct flagset {
	/* Backend arguments; strings point into the request or into store. */
	const char *nvcc[COMPILE_FLAGS_MAX * 2];
	int nvcc_len;
	const char *nvrtc[COMPILE_FLAGS_MAX * 2];
	int nvrtc_len;
	char store[COMPILE_FLAGS_MAX * 2][160];
	int store_len;
	int debug; /* -G */
};

static const char *keep(struct flagset *fs, const char *a, const char *b)
{
	if (fs->store_len >= (int)(sizeof fs->store / sizeof fs->store[0]))
		return "";
	char *s = fs->store[fs->store_len++];
	snprintf(s, sizeof fs->store[0], "%s%s", a, b ? b : "");
	return s;
}

static void both(struct flagset *fs, const char *nv, const char *rtc)
{
	if (nv)
		fs->nvcc[fs->nvcc_len++] = nv;
	if (rtc)
		fs->nvrtc[fs->nvrtc_len++] = rtc;
}

static int bool_opt(const char *f, const char *name, const char **val)
{
	size_t n = strlen(name);
	const char *p = f;
	if (p[0] == '-' && p[1] == '-')
		p += 2;
	else if (p[0] == '-')
		p += 1;
	else
		return 0;
	if (strncmp(p, name, n) || p[n] != '=')
		return 0;
	*val = p + n + 1;
	return 1;
}

/* Validates flags and translates them for both backends. */
static int parse_flags(const char *const *flags, size_t len, struct flagset *fs, struct kf_err *err)
{
	memset(fs, 0, sizeof *fs);
	if (len > COMPILE_FLAGS_MAX)
		return kf_err_set(err, KF_ETOOBIG, "flags: %zu given, at most %d", len,
				  COMPILE_FLAGS_MAX);
	for (size_t i = 0; i < len; i++) {
		const char *f = flags[i];
		const char *next = i + 1 < len ? flags[i + 1] : NULL;
		const char *v;
		if (!f || !*f)
			return kf_err_set(err, KF_EINVAL, "flags[%zu] is empty", i);
		if (strlen(f) > 150)
			return kf_err_set(err, KF_EINVAL,
					  "flags[%zu] is longer than 150 characters", i);
		if (f[0] != '-')
			return kf_err_set(
				err, KF_EPERM,
				"flag '%.60s' refused: not an option (input files are not "
				"accepted; put all code in source)",
				f);
		/* -lineinfo starts like -l (a library): allowed, checked first. */
		for (size_t r = 0; strcmp(f, "-lineinfo") && r < sizeof refused / sizeof refused[0];
		     r++) {
			size_t n = strlen(refused[r].flag);
			if (!strcmp(f, refused[r].flag) ||
			    (refused[r].prefix && !strncmp(f, refused[r].flag, n) &&
			     (f[n] == '=' || (n == 2 && f[n]))))
				return kf_err_set(err, KF_EPERM, "flag '%.60s' refused: %s", f,
						  refused[r].why);
		}
		if (!strcmp(f, "-O0") || !strcmp(f, "-O1") || !strcmp(f, "-O2") ||
		    !strcmp(f, "-O3")) {
			both(fs, f, NULL); /* host optimisation level: no effect on device code */
		} else if (!strcmp(f, "--use_fast_math") || !strcmp(f, "-use_fast_math")) {
			both(fs, "--use_fast_math", "--use_fast_math");
		} else if (!strcmp(f, "-lineinfo") || !strcmp(f, "--generate-line-info")) {
			both(fs, "-lineinfo", "-lineinfo");
		} else if (!strcmp(f, "--extra-device-vectorization") ||
			   !strcmp(f, "-extra-device-vectorization")) {
			both(fs, "--extra-device-vectorization", "--extra-device-vectorization");
		} else if (!strcmp(f, "--restrict") || !strcmp(f, "-restrict")) {
			both(fs, "--restrict", "--restrict");
		} else if (!strcmp(f, "--expt-relaxed-constexpr") ||
			   !strcmp(f, "-expt-relaxed-constexpr")) {
			both(fs, "--expt-relaxed-constexpr", "--expt-relaxed-constexpr");
		} else if (!strcmp(f, "--extended-lambda") ||
			   !strcmp(f, "--expt-extended-lambda") || !strcmp(f, "-extended-lambda")) {
			both(fs, "--extended-lambda", "--extended-lambda");
		} else if (!strcmp(f, "-w") || !strcmp(f, "--disable-warnings")) {
			both(fs, "-w", "-w");
		} else if (!strcmp(f, "-G") || !strcmp(f, "--device-debug")) {
			both(fs, "-G", "-G");
			fs->debug = 1;
		} else if (!strcmp(f, "--resource-usage") || !strcmp(f, "-res-usage")) {
			/* kforge always reports resources (ptxas -v). */
		} else if (bool_opt(f, "ftz", &v) || bool_opt(f, "prec-div", &v) ||
			   bool_opt(f, "prec-sqrt", &v) || bool_opt(f, "fmad", &v)) {
			if (strcmp(v, "true") && strcmp(v, "false"))
				return kf_err_set(err, KF_EINVAL,
						  "flag '%.60s': the value must be true or false",
						  f);
			const char *s = f[1] == '-' ? f : keep(fs, "-", f);
			both(fs, s, s);
		} else if (bool_opt(f, "std", &v)) {
			if (strcmp(v, "c++14") && strcmp(v, "c++17") && strcmp(v, "c++20") &&
			    strcmp(v, "c++11"))
				return kf_err_set(
					err, KF_EINVAL,
					"flag '%.60s': the standard must be c++11, c++14, c++17 or c++20",
					f);
			const char *s = keep(fs, "-std=", v);
			both(fs, s, s);
		} else if (!strncmp(f, "-maxrregcount", 13) || !strncmp(f, "--maxrregcount", 14)) {
			const char *num = strchr(f, '=');
			if (num)
				num++;
			else if (!strcmp(f, "-maxrregcount") || !strcmp(f, "--maxrregcount"))
				num = next, i++;
			char *end = NULL;
			long n = num ? strtol(num, &end, 10) : -1;
			if (!num || !*num || *end || n < 16 || n > 255)
				return kf_err_set(
					err, KF_EINVAL,
					"flag -maxrregcount needs a register count 16..255 (e.g. -maxrregcount=64)");
			const char *s = keep(fs, "--maxrregcount=", num);
			both(fs, s, s);
		} else if (!strcmp(f, "-Xptxas") || !strcmp(f, "--ptxas-options") ||
			   !strncmp(f, "-Xptxas=", 8) || !strncmp(f, "--ptxas-options=", 16)) {
			const char *val = strchr(f, '=') ? strchr(f, '=') + 1 : (i++, next);
			if (!val)
				return kf_err_set(err, KF_EINVAL,
						  "flag '%s' needs a value (e.g. -Xptxas -v)", f);
			char tmp[160];
			snprintf(tmp, sizeof tmp, "%s", val);
			char *save = NULL;
			for (char *t = strtok_r(tmp, ",", &save); t;
			     t = strtok_r(NULL, ",", &save)) {
				if (!in_list(t, ptxas_ok))
					return kf_err_set(
						err, KF_EPERM,
						"ptxas option '%.40s' refused: allowed are -v, -O0..-O3, "
						"--warn-on-spills, --warn-on-local-memory-usage, "
						"--allow-expensive-optimizations=true|false",
						t);
				if (!strcmp(t, "-v") || !strcmp(t, "--verbose"))
					continue; /* always on */
				both(fs, "-Xptxas", NULL);
				const char *s = keep(fs, t, NULL);
				both(fs, s, keep(fs, "--ptxas-options=", t));
			}
		} else if (!strcmp(f, "-D") || !strcmp(f, "-U") || !strncmp(f, "-D", 2) ||
			   !strncmp(f, "-U", 2) || !strncmp(f, "--define-macro", 14) ||
			   !strncmp(f, "--undefine-macro", 16)) {
			int undef = f[1] == 'U' || !strncmp(f, "--undefine", 10);
			const char *d;
			if (!strcmp(f, "-D") || !strcmp(f, "-U") || !strcmp(f, "--define-macro") ||
			    !strcmp(f, "--undefine-macro"))
				d = next, i++;
			else if (f[1] == '-')
				d = strchr(f, '=') ? strchr(f, '=') + 1 : NULL;
			else
				d = f + 2;
			if (!d || !define_ok(d) || (undef && strchr(d, '=')))
				return kf_err_set(
					err, KF_EINVAL,
					"flag '%.60s%s%.60s': a macro must be NAME or NAME=VALUE, NAME "
					"an identifier, VALUE up to 64 of [A-Za-z0-9_.+-*()]",
					f, d && d != f + 2 ? " " : "", d && d != f + 2 ? d : "");
			const char *s = keep(fs, undef ? "-U" : "-D", d);
			both(fs, s, s);
		} else if (!strcmp(f, "-I") || !strncmp(f, "-I", 2) ||
			   !strncmp(f, "--include-path", 14)) {
			const char *p =
				!strcmp(f, "-I") || !strcmp(f, "--include-path")
					? (i++, next)
					: (f[1] == '-'
						   ? (strchr(f, '=') ? strchr(f, '=') + 1 : NULL)
						   : f + 2);
			if (!p || !job_path_ok(p))
				return kf_err_set(
					err, KF_EPERM,
					"flag '%.60s' refused: include directories must be relative "
					"paths inside the job (no absolute paths, no '..'); the "
					"toolkit's headers are found without -I",
					p ? p : f);
			const char *s = keep(fs, "-I", p);
			both(fs, s, s);
		} else if (!strcmp(f, "-include") || !strncmp(f, "--pre-include", 13)) {
			const char *p = !strcmp(f, "-include") || !strcmp(f, "--pre-include")
						? (i++, next)
						: (strchr(f, '=') ? strchr(f, '=') + 1 : NULL);
			if (!p || !job_path_ok(p))
				return kf_err_set(
					err, KF_EPERM,
					"flag '-include %.60s' refused: only files inside the job "
					"(relative, no '..') may be pre-included",
					p ? p : "");
			both(fs, "-include", NULL);
			both(fs, p, keep(fs, "--pre-include=", p));
		} else if (!strncmp(f, "--diag-suppress=", 16) ||
			   !strncmp(f, "-diag-suppress=", 15)) {
			const char *p = strchr(f, '=') + 1;
			if (!*p || strspn(p, "0123456789,") != strlen(p))
				return kf_err_set(
					err, KF_EINVAL,
					"flag '%.60s': expected numbers, e.g. --diag-suppress=177",
					f);
			const char *s = keep(fs, "--diag-suppress=", p);
			both(fs, s, s);
		} else {
			return kf_err_set(
				err, KF_EPERM,
				"flag '%.60s' refused: not on the allowlist (allowed: -O0..-O3, "
				"--use_fast_math, -lineinfo, -maxrregcount=N, -Xptxas -v|-O<n>, "
				"-D NAME[=VALUE], -U NAME, -std=c++14|17|20, "
				"--extra-device-vectorization, --ftz/--prec-div/--prec-sqrt/--fmad="
				"true|false, -G, --restrict, --expt-relaxed-constexpr, "
				"--extended-lambda, -w, --diag-suppress=N, -I/-include inside the job)",
				f);
		}
		if (i >= len)
			return kf_err_set(err, KF_EINVAL, "flag '%.60s' needs a value after it", f);
	}
	return 0;
}

int compile_check_flags(const char *const *flags, size_t flags_len, struct kf_err *err)
{
	struct flagset *fs = malloc(sizeof *fs);
	if (!fs)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	int rc = parse_flags(flags, flags_len, fs, err);
	free(fs);
	return rc;
}

int compile_check_arch(const char *arch, struct kf_err *err)
{
	if (!arch)
		return kf_err_set(err, KF_EINVAL,
				  "arch is missing: expected sm_XX or sm_XXa, e.g. sm_90");
	int n = 0, len = (int)strlen(arch);
	if (len < 5 || len > 7 || strncmp(arch, "sm_", 3) != 0)
		goto bad;
	for (int i = 3; i < len; i++) {
		if (arch[i] >= '0' && arch[i] <= '9')
			n = n * 10 + (arch[i] - '0');
		else if (i == len - 1 && i > 4 && (arch[i] == 'a' || arch[i] == 'f'))
			;
		else
			goto bad;
	}
	if (n < 50 || n > 129)
		goto bad;
	return 0;
bad:
	return kf_err_set(err, KF_EINVAL,
			  "arch '%.32s' is not a target: expected sm_XX or sm_XXa with XX from 50 "
			  "to 129, e.g. sm_80, sm_90, sm_90a, sm_100a",
			  arch);
}

int compile_split_flags(const char *s, char ***argv, size_t *len, struct kf_err *err)
{
	*argv = NULL;
	*len = 0;
	char **v = calloc(COMPILE_FLAGS_MAX + 1, sizeof *v);
	if (!v)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	size_t n = 0;
	const char *p = s ? s : "";
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == '\n')
			p++;
		if (!*p)
			break;
		const char *e = p;
		while (*e && *e != ' ' && *e != '\t' && *e != '\n')
			e++;
		if (n == COMPILE_FLAGS_MAX) {
			compile_flags_free(v);
			return kf_err_set(err, KF_ETOOBIG, "flags: more than %d",
					  COMPILE_FLAGS_MAX);
		}
		v[n] = strndup(p, (size_t)(e - p));
		if (!v[n]) {
			compile_flags_free(v);
			return kf_err_set(err, KF_ENOMEM, "out of memory");
		}
		n++;
		p = e;
	}
	*argv = v;
	*len = n;
	return 0;
}

void compile_flags_free(char **argv)
{
	if (!argv)
		return;
	for (size_t i = 0; argv[i]; i++)
		free(argv[i]);
	free(argv);
}

/* --- open / close -------------------------------------------------------- */

static int exe_dir(char *buf, size_t cap)
{
	ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *s = strrchr(buf, '/');
	if (!s)
		return -1;
	*s = 0;
	return 0;
}

static void find_helper(struct compiler *cc)
{
	char dir[PATH_MAX], p[PATH_MAX + 32];
	cc->nvrtc_helper[0] = 0;
	if (cc->cfg.nvrtc_helper) {
		if (*cc->cfg.nvrtc_helper && access(cc->cfg.nvrtc_helper, X_OK) == 0)
			realpath(cc->cfg.nvrtc_helper, cc->nvrtc_helper)
				? (void)0
				: (void)(cc->nvrtc_helper[0] = 0);
	} else if (exe_dir(dir, sizeof dir) == 0) {
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
	/* The local GPU's arch when there is one (sandbox/gpu.h). */
	const struct gpu_host *host = NULL;
	if (gpu_probe(&host, NULL) == 0 && host->count > 0 &&
	    compile_check_arch(host->gpus[0].arch, NULL) == 0)
		snprintf(cc->default_arch, sizeof cc->default_arch, "%s", host->gpus[0].arch);
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
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cc->slots_free = ncpu < 2 ? 2 : (int)ncpu;
	pthread_mutex_init(&cc->slot_lock, NULL);
	pthread_cond_init(&cc->slot_cond, NULL);
	*out = cc;
	return 0;
out:
	cache_close(cc->cache);
	jail_close(cc->own_jail);
	free(cc);
	return rc;
}

void compile_close(struct compiler *cc)
{
	if (!cc)
		return;
	cache_close(cc->cache);
	jail_close(cc->own_jail);
	pthread_mutex_destroy(&cc->slot_lock);
	pthread_cond_destroy(&cc->slot_cond);
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

/* --- slots: at most one compiler process per CPU ------------------------ */

static int slot_take(struct compiler *cc, const volatile int *cancel, struct kf_err *err)
{
	pthread_mutex_lock(&cc->slot_lock);
	while (cc->slots_free == 0) {
		if (cancel && *cancel) {
			pthread_mutex_unlock(&cc->slot_lock);
			return kf_err_set(err, KF_ECANCELED, "compile cancelled while queued");
		}
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += 50 * 1000000;
		if (t.tv_nsec >= 1000000000)
			t.tv_sec++, t.tv_nsec -= 1000000000;
		pthread_cond_timedwait(&cc->slot_cond, &cc->slot_lock, &t);
	}
	cc->slots_free--;
	pthread_mutex_unlock(&cc->slot_lock);
	return 0;
}

static void slot_give(struct compiler *cc)
{
	pthread_mutex_lock(&cc->slot_lock);
	cc->slots_free++;
	pthread_cond_signal(&cc->slot_cond);
	pthread_mutex_unlock(&cc->slot_lock);
}

/* --- the compile --------------------------------------------------------- */

static int write_all(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	size_t off = 0;
	while (off < len) {
		ssize_t n = write(fd, (const char *)data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	return close(fd) == 0 && off == len ? 0 : -1;
}

static void compute_key(const struct compiler *cc, const struct compile_req *req, const char *arch,
			char id[COMPILE_ID_LEN + 1])
{
	struct cache_sha256 s;
	cache_sha256_init(&s);
	const char tag[] = "kforge-compile/1";
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
 * backend's exit status; *log new text (stdout+stderr). */
static int run_backend(struct compiler *cc, int use_nvrtc, const char *dir, const char *arch,
		       const struct flagset *fs, int keep_ptx, const struct compile_req *req,
		       unsigned timeout_ms, int *exit_code, char **log, int *log_truncated,
		       struct kf_err *err)
{
	const char *argv[COMPILE_FLAGS_MAX * 2 + 24];
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
		.stdout_cap_bytes = LOG_CAP,
		.stderr_cap_bytes = LOG_CAP,
		.cancel = req->cancel,
	};
	struct jail_result r;
	int rc = jail_run(cc->jail, &job, &r, err);
	*exit_code = r.exited ? r.exit_code : -1;
	*log = join_output(&r);
	*log_truncated = r.out_truncated || r.errout_truncated;
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
	compile_rm_tree(p);
}

int compile_kernel(struct compiler *cc, const struct compile_req *req, struct compile_result *res,
		   struct kf_err *err)
{
	memset(res, 0, sizeof *res);
	long long t0 = now_ms();
	int rc = 0;
	struct flagset *fs = NULL;
	char *log = NULL, *ptx = NULL, *rjson = NULL, *cubin = NULL;
	size_t cubin_len = 0;
	char dir[PATH_MAX] = "";
	json_t *base = NULL;

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
	const char *arch = req->arch && *req->arch ? req->arch : cc->default_arch;
	rc = compile_check_arch(arch, err);
	if (rc)
		return rc;
	snprintf(res->arch, sizeof res->arch, "%s", arch);
	fs = malloc(sizeof *fs);
	if (!fs)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	rc = parse_flags(req->flags, req->flags_len, fs, err);
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

	rc = slot_take(cc, req->cancel, err);
	if (rc)
		goto out;
	rc = cache_stage(cc->cache, dir, sizeof dir, err);
	if (rc) {
		slot_give(cc);
		goto out;
	}
	char src_path[PATH_MAX + 16];
	snprintf(src_path, sizeof src_path, "%s/" SRC_NAME, dir);
	if (write_all(src_path, req->source, req->source_len) != 0) {
		slot_give(cc);
		rc = kf_err_set(err, KF_EIO, "compile: cannot write the source: %s",
				strerror(errno));
		goto out;
	}
	unsigned timeout = cc->cfg.timeout_ms ? cc->cfg.timeout_ms : DEFAULT_TIMEOUT_MS;
	int code = -1, trunc = 0;
	const char *backend = "nvcc";
	if (cc->nvrtc_helper[0] && !cc->cfg.force_nvcc) {
		backend = "nvrtc";
		rc = run_backend(cc, 1, dir, arch, fs, 1, req, timeout, &code, &log, &trunc, err);
		if (rc == 0 && code != 0) {
			/* NVRTC lacks the host headers and some options: nvcc has the
			 * last word, and its diagnostics are the ones reported. */
			free(log);
			log = NULL;
			backend = "nvcc";
			long long left = (long long)timeout - (now_ms() - t0);
			rc = run_backend(cc, 0, dir, arch, fs, 1, req,
					 left > 1000 ? (unsigned)left : 1000, &code, &log, &trunc,
					 err);
		}
	} else {
		rc = run_backend(cc, 0, dir, arch, fs, 1, req, timeout, &code, &log, &trunc, err);
	}
	slot_give(cc);
	rm_job_junk(dir);
	if (rc == KF_ETIMEOUT) {
		kf_err_clear(err);
		rc = kf_err_set(err, KF_ETIMEOUT,
				"compile timed out after %u ms (runaway template recursion or "
				"constexpr evaluation?); the compiler was killed",
				timeout);
		struct compile_parse_in in = {.log = log,
					      .source = req->source,
					      .source_len = req->source_len,
					      .job_dir = dir,
					      .cuda_home = jail_cuda_home(cc->jail)};
		res->json = compile_timeout_json(&in, arch, jail_mode_name(cc->jail), timeout);
		goto out;
	}
	if (rc)
		goto out;

	{
		char ptx_path[PATH_MAX + 16];
		snprintf(ptx_path, sizeof ptx_path, "%s/kernel.ptx", dir);
		size_t plen = 0;
		compile_read_file(ptx_path, PTX_READ_CAP, &ptx, &plen);
		snprintf(ptx_path, sizeof ptx_path, "%s/kernel.cubin", dir);
		compile_read_file(ptx_path, PTX_READ_CAP, &cubin, &cubin_len);
		struct compile_parse_in in = {
			.log = log,
			.log_truncated = trunc,
			.source = req->source,
			.source_len = req->source_len,
			.ptx = ptx,
			.job_dir = dir,
			.cubin = (const unsigned char *)cubin,
			.cubin_len = cubin_len,
			.cuda_home = jail_cuda_home(cc->jail),
			.ok = code == 0,
			.arch = arch,
			.backend = backend,
			.version = cc->version,
			.debug = fs->debug,
			.kb = cc->cfg.kb,
		};
		base = compile_build_result(&in);
		if (!base) {
			rc = kf_err_set(err, KF_ENOMEM, "compile: out of memory");
			goto out;
		}
		char *clean = compile_clean_log(&in);
		char lp[PATH_MAX + 16];
		snprintf(lp, sizeof lp, "%s/log.txt", dir);
		if (clean)
			write_all(lp, clean, strlen(clean));
		free(clean);
		json_object_set_new(base, "artifact_id", json_string(id));
		char *txt = json_dumps(base, JSON_COMPACT);
		snprintf(lp, sizeof lp, "%s/result.json", dir);
		if (!txt || write_all(lp, txt, strlen(txt)) != 0) {
			free(txt);
			rc = kf_err_set(err, KF_EIO, "compile: cannot write result.json");
			goto out;
		}
		free(txt);
		/* The source stays as kernel.cu; nothing else from the job. */
		rc = cache_publish(cc->cache, dir, id, err);
		dir[0] = 0;
		if (rc)
			goto out;
	}

answer:
	res->ok = json_is_true(json_object_get(base, "ok"));
	snprintf(res->artifact_id, sizeof res->artifact_id, "%s", id);
	res->compile_ms = (unsigned)(now_ms() - t0);
	{
		struct sass_summary_ctx sctx = {
			.cc = cc, .id = id, .want = req->want_sass && res->ok};
		res->json = compile_answer_json(base, res, jail_mode_name(cc->jail), req->want_ptx,
						&sctx);
	}
	if (!res->json) {
		rc = kf_err_set(err, KF_ENOMEM, "compile: out of memory");
		goto out;
	}
	if (!res->ok)
		rc = kf_err_set(err, KF_ECOMPILE, "%s",
				json_string_value(json_object_get(res->json, "summary")));
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
	json_decref(res->json);
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
