/* compile_flags: the flag allowlist. Every flag the user gives is checked
 * (refused with the reason, or allowed in one of the shapes listed here) and
 * rebuilt for both backends: nvcc's spelling and NVRTC's. Paths in flags
 * must stay inside the job directory; defines must be NAME or NAME=VALUE
 * with a plain value. Arch names are checked here too. */
#include "sandbox/compile/compile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/compile/compile_int.h"

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

/* A path named by -I or -include: relative, inside the job, no "..", and
 * not starting with '-' (after -include it is a separate argument, which
 * would read as an option). */
static int job_path_ok(const char *p)
{
	if (!*p || *p == '/' || *p == '~' || *p == '-' || strlen(p) > 128)
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

static const char *keep(struct compile_flagset *fs, const char *a, const char *b)
{
	if (fs->store_len >= COMPILE_ARGS_MAX) {
		fs->overflow = 1;
		return "";
	}
	char *s = fs->store[fs->store_len++];
	snprintf(s, sizeof fs->store[0], "%s%s", a, b ? b : "");
	return s;
}

static void both(struct compile_flagset *fs, const char *nv, const char *rtc)
{
	/* A full array sets overflow; the parser checks it after every flag. */
	if (nv) {
		if (fs->nvcc_len < COMPILE_ARGS_MAX)
			fs->nvcc[fs->nvcc_len++] = nv;
		else
			fs->overflow = 1;
	}
	if (rtc) {
		if (fs->nvrtc_len < COMPILE_ARGS_MAX)
			fs->nvrtc[fs->nvrtc_len++] = rtc;
		else
			fs->overflow = 1;
	}
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
/* Refuses what can never be a flag: empty, too long, not an option, or on
 * the refused list. */
static int refuse_flag(const char *f, size_t i, struct kf_err *err)
{
	if (!f || !*f)
		return kf_err_set(err, KF_EINVAL, "flags[%zu] is empty", i);
	if (strlen(f) > COMPILE_FLAG_MAX_CHARS)
		return kf_err_set(err, KF_EINVAL, "flags[%zu] is longer than %d characters", i,
				  COMPILE_FLAG_MAX_CHARS);
	if (f[0] != '-')
		return kf_err_set(err, KF_EPERM,
				  "flag '%.60s' refused: not an option (input files are not "
				  "accepted; put all code in source)",
				  f);
	/* -lineinfo starts like -l (a library): allowed, checked first. */
	for (size_t r = 0; strcmp(f, "-lineinfo") && r < sizeof refused / sizeof refused[0]; r++) {
		size_t n = strlen(refused[r].flag);
		if (!strcmp(f, refused[r].flag) ||
		    (refused[r].prefix && !strncmp(f, refused[r].flag, n) &&
		     (f[n] == '=' || (n == 2 && f[n]))))
			return kf_err_set(err, KF_EPERM, "flag '%.60s' refused: %s", f,
					  refused[r].why);
	}
	return 0;
}

/* The flags without a value. Returns 1 when f is one of them. */
static int plain_flag(struct compile_flagset *fs, const char *f)
{
	if (!strcmp(f, "-O0") || !strcmp(f, "-O1") || !strcmp(f, "-O2") || !strcmp(f, "-O3")) {
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
	} else if (!strcmp(f, "--extended-lambda") || !strcmp(f, "--expt-extended-lambda") ||
		   !strcmp(f, "-extended-lambda")) {
		both(fs, "--extended-lambda", "--extended-lambda");
	} else if (!strcmp(f, "-w") || !strcmp(f, "--disable-warnings")) {
		both(fs, "-w", "-w");
	} else if (!strcmp(f, "-G") || !strcmp(f, "--device-debug")) {
		both(fs, "-G", "-G");
		fs->debug = 1;
	} else if (!strcmp(f, "--resource-usage") || !strcmp(f, "-res-usage")) {
		/* kforge always reports resources (ptxas -v). */
	} else {
		return 0;
	}
	return 1;
}

/* -maxrregcount=N or -maxrregcount N. */
static int maxrreg_flag(struct compile_flagset *fs, const char *f, const char *next, size_t *i,
			struct kf_err *err)
{
	const char *num = strchr(f, '=');
	if (num)
		num++;
	else if (!strcmp(f, "-maxrregcount") || !strcmp(f, "--maxrregcount"))
		num = next, (*i)++;
	char *end = NULL;
	long n = num ? strtol(num, &end, 10) : -1;
	if (!num || !*num || *end || n < 16 || n > 255)
		return kf_err_set(
			err, KF_EINVAL,
			"flag -maxrregcount needs a register count 16..255 (e.g. -maxrregcount=64)");
	const char *s = keep(fs, "--maxrregcount=", num);
	both(fs, s, s);
	return 0;
}

/* -Xptxas a,b or --ptxas-options=a,b: each option on the ptxas list. */
static int ptxas_flag(struct compile_flagset *fs, const char *f, const char *next, size_t *i,
		      struct kf_err *err)
{
	const char *val = strchr(f, '=') ? strchr(f, '=') + 1 : ((*i)++, next);
	if (!val)
		return kf_err_set(err, KF_EINVAL, "flag '%s' needs a value (e.g. -Xptxas -v)", f);
	char tmp[160];
	snprintf(tmp, sizeof tmp, "%s", val);
	char *save = NULL;
	for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!in_list(t, ptxas_ok))
			return kf_err_set(err, KF_EPERM,
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
	return 0;
}

/* -D NAME[=VALUE], -U NAME and their long forms. */
static int macro_flag(struct compile_flagset *fs, const char *f, const char *next, size_t *i,
		      struct kf_err *err)
{
	int undef = f[1] == 'U' || !strncmp(f, "--undefine", 10);
	const char *d;
	if (!strcmp(f, "-D") || !strcmp(f, "-U") || !strcmp(f, "--define-macro") ||
	    !strcmp(f, "--undefine-macro"))
		d = next, (*i)++;
	else if (f[1] == '-')
		d = strchr(f, '=') ? strchr(f, '=') + 1 : NULL;
	else
		d = f + 2;
	if (!d || !define_ok(d) || (undef && strchr(d, '=')))
		return kf_err_set(err, KF_EINVAL,
				  "flag '%.60s%s%.60s': a macro must be NAME or NAME=VALUE, NAME "
				  "an identifier, VALUE up to 64 of [A-Za-z0-9_.+-*()]",
				  f, d && d != f + 2 ? " " : "", d && d != f + 2 ? d : "");
	const char *s = keep(fs, undef ? "-U" : "-D", d);
	both(fs, s, s);
	return 0;
}

/* -I DIR and -include FILE: only relative paths inside the job. */
static int include_flag(struct compile_flagset *fs, const char *f, const char *next, size_t *i,
			struct kf_err *err)
{
	if (!strcmp(f, "-include") || !strncmp(f, "--pre-include", 13)) {
		const char *p = !strcmp(f, "-include") || !strcmp(f, "--pre-include")
					? ((*i)++, next)
					: (strchr(f, '=') ? strchr(f, '=') + 1 : NULL);
		if (!p || !job_path_ok(p))
			return kf_err_set(
				err, KF_EPERM,
				"flag '-include %.60s' refused: only files inside the job "
				"(relative, no '..') may be pre-included",
				p ? p : "");
		both(fs, "-include", NULL);
		both(fs, p, keep(fs, "--pre-include=", p));
		return 0;
	}
	const char *p =
		!strcmp(f, "-I") || !strcmp(f, "--include-path")
			? ((*i)++, next)
			: (f[1] == '-' ? (strchr(f, '=') ? strchr(f, '=') + 1 : NULL) : f + 2);
	if (!p || !job_path_ok(p))
		return kf_err_set(err, KF_EPERM,
				  "flag '%.60s' refused: include directories must be relative "
				  "paths inside the job (no absolute paths, no '..'); the "
				  "toolkit's headers are found without -I",
				  p ? p : f);
	const char *s = keep(fs, "-I", p);
	both(fs, s, s);
	return 0;
}

/* One flag (f, with next the one after it) into fs; *i moves past a value
 * the flag consumed. */
static int parse_flag(struct compile_flagset *fs, const char *f, const char *next, size_t *i,
		      struct kf_err *err)
{
	const char *v;
	if (plain_flag(fs, f))
		return 0;
	if (bool_opt(f, "ftz", &v) || bool_opt(f, "prec-div", &v) || bool_opt(f, "prec-sqrt", &v) ||
	    bool_opt(f, "fmad", &v)) {
		if (strcmp(v, "true") && strcmp(v, "false"))
			return kf_err_set(err, KF_EINVAL,
					  "flag '%.60s': the value must be true or false", f);
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
		return maxrreg_flag(fs, f, next, i, err);
	} else if (!strcmp(f, "-Xptxas") || !strcmp(f, "--ptxas-options") ||
		   !strncmp(f, "-Xptxas=", 8) || !strncmp(f, "--ptxas-options=", 16)) {
		return ptxas_flag(fs, f, next, i, err);
	} else if (!strcmp(f, "-D") || !strcmp(f, "-U") || !strncmp(f, "-D", 2) ||
		   !strncmp(f, "-U", 2) || !strncmp(f, "--define-macro", 14) ||
		   !strncmp(f, "--undefine-macro", 16)) {
		return macro_flag(fs, f, next, i, err);
	} else if (!strcmp(f, "-I") || !strncmp(f, "-I", 2) || !strncmp(f, "--include-path", 14) ||
		   !strcmp(f, "-include") || !strncmp(f, "--pre-include", 13)) {
		return include_flag(fs, f, next, i, err);
	} else if (!strncmp(f, "--diag-suppress=", 16) || !strncmp(f, "-diag-suppress=", 15)) {
		const char *p = strchr(f, '=') + 1;
		if (!*p || strspn(p, "0123456789,") != strlen(p))
			return kf_err_set(
				err, KF_EINVAL,
				"flag '%.60s': expected numbers, e.g. --diag-suppress=177", f);
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
	return 0;
}

int compile_parse_flags(const char *const *flags, size_t len, struct compile_flagset *fs,
			struct kf_err *err)
{
	memset(fs, 0, sizeof *fs);
	if (len > COMPILE_FLAGS_MAX)
		return kf_err_set(err, KF_ETOOBIG, "flags: %zu given, at most %d", len,
				  COMPILE_FLAGS_MAX);
	/* Every element, values after -D, -I, -Xptxas... included. */
	for (size_t i = 0; i < len; i++) {
		if (!flags[i] || !*flags[i])
			return kf_err_set(err, KF_EINVAL, "flags[%zu] is empty", i);
		if (strlen(flags[i]) > COMPILE_FLAG_MAX_CHARS)
			return kf_err_set(err, KF_EINVAL, "flags[%zu] is longer than %d characters",
					  i, COMPILE_FLAG_MAX_CHARS);
	}
	for (size_t i = 0; i < len; i++) {
		const char *f = flags[i];
		const char *next = i + 1 < len ? flags[i + 1] : NULL;
		int rc = refuse_flag(f, i, err);
		if (!rc)
			rc = parse_flag(fs, f, next, &i, err);
		if (rc)
			return rc;
		if (fs->overflow)
			return kf_err_set(
				err, KF_ETOOBIG,
				"flags expand to more than %d nvcc arguments (at flag %zu, "
				"'%.40s'); give fewer flags or fewer -Xptxas options",
				COMPILE_ARGS_MAX, i, f);
		if (i >= len)
			return kf_err_set(err, KF_EINVAL, "flag '%.60s' needs a value after it", f);
	}
	return 0;
}

int compile_check_flags(const char *const *flags, size_t flags_len, struct kf_err *err)
{
	struct compile_flagset *fs = malloc(sizeof *fs);
	if (!fs)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	int rc = compile_parse_flags(flags, flags_len, fs, err);
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
		if (e - p > COMPILE_FLAG_MAX_CHARS) {
			compile_flags_free(v);
			return kf_err_set(err, KF_ETOOBIG,
					  "flags[%zu] is %zu characters, at most %d", n,
					  (size_t)(e - p), COMPILE_FLAG_MAX_CHARS);
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
