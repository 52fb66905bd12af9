/* fuzz_flags: libFuzzer target for the compile flag allowlist
 * (sandbox/compile/compile_flags.c). The input is one flag per line: the
 * parser must accept or refuse cleanly with a known code and a message,
 * never write past its argument slots, and never hand the backends a path
 * outside the job or a refused option. The whole input also goes through
 * compile_split_flags (the CLI's splitter) and its first line through
 * compile_check_arch. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/compile/compile_int.h"

#define MAX_LINES (COMPILE_FLAGS_MAX + 8)

/* A path the backends would read: absolute or climbing out of the job. */
static int escapes(const char *p)
{
	if (p[0] == '/' || p[0] == '~')
		return 1;
	for (const char *s = p; (s = strstr(s, "..")) != NULL; s += 2)
		if ((s == p || s[-1] == '/' || s[-1] == '=') && (s[2] == '\0' || s[2] == '/'))
			return 1;
	return 0;
}

/* The invariants of an accepted flag set. */
static void check_args(const char *const *args, int len)
{
	assert(len >= 0 && len <= COMPILE_ARGS_MAX);
	for (int i = 0; i < len; i++) {
		const char *a = args[i];
		assert(a != NULL);
		if (!strncmp(a, "-I", 2))
			assert(!escapes(a + 2));
		else if (!strncmp(a, "--pre-include=", 14))
			assert(!escapes(a + 14));
		else if (i > 0 && !strcmp(args[i - 1], "-include"))
			assert(!escapes(a));
		assert(strncmp(a, "-o", 2) && strncmp(a, "-Xcompiler", 10) &&
		       strncmp(a, "-ccbin", 6) && strncmp(a, "-L", 2) && strncmp(a, "-rdc", 4));
		assert(strncmp(a, "-l", 2) || !strcmp(a, "-lineinfo"));
	}
}

static void run_flags(const char *const *flags, size_t n)
{
	struct compile_flagset *fs = malloc(sizeof *fs);
	struct kf_err err = {0};

	if (!fs)
		return;
	int rc = compile_parse_flags(flags, n, fs, &err);
	if (rc) {
		assert(rc == KF_EPERM || rc == KF_EINVAL || rc == KF_ETOOBIG);
		assert(err.code == rc && err.msg[0]);
	} else {
		assert(!fs->overflow && fs->store_len <= COMPILE_ARGS_MAX);
		check_args(fs->nvcc, fs->nvcc_len);
		check_args(fs->nvrtc, fs->nvrtc_len);
		/* every stored argument kept its whole text (no silent cut) */
		for (int i = 0; i < fs->store_len; i++)
			assert(strlen(fs->store[i]) + 1 < sizeof fs->store[0]);
	}
	free(fs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	const char *lines[MAX_LINES];
	size_t n = 0;
	struct kf_err err = {0};

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	/* the CLI path: blank-separated text */
	char **argv = NULL;
	size_t argc = 0;
	int rc = compile_split_flags(text, &argv, &argc, &err);
	if (rc == 0) {
		assert(argc <= COMPILE_FLAGS_MAX && argv[argc] == NULL);
		run_flags((const char *const *)argv, argc);
		compile_flags_free(argv);
	} else {
		assert(rc == KF_ETOOBIG && argv == NULL);
	}

	/* the JSON path: one flag per line (a flag may hold blanks) */
	for (char *p = text, *nl; n < MAX_LINES; p = nl + 1) {
		nl = strchr(p, '\n');
		lines[n++] = p;
		if (!nl)
			break;
		*nl = '\0';
	}
	kf_err_clear(&err);
	if (compile_check_arch(lines[0], &err))
		assert(err.code == KF_EINVAL && strstr(err.msg, "sm_"));
	run_flags(lines, n);
	free(text);
	return 0;
}
