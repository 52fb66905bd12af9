/* kforge-nvrtc: compiles one CUDA source to a cubin (and its PTX) with
 * NVRTC, inside the jail, for the compile module. libnvrtc is dlopen'ed from
 * the path given, so the helper builds without the toolkit's libraries.
 * Usage: kforge-nvrtc LIBNVRTC SRC OUT.cubin OUT.ptx [NVRTC options...]
 * The program log (diagnostics, ptxas -v lines) goes to stderr.
 * Exit: 0 compiled, 1 the source did not compile, 2 bad usage or an I/O
 * error, 3 NVRTC rejected an option or failed internally, 4 no libnvrtc. */
#include <dlfcn.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRC_MAX (2u << 20)

typedef nvrtcResult (*create_fn)(nvrtcProgram *, const char *, const char *, int,
				 const char *const *, const char *const *);
typedef nvrtcResult (*compile_fn)(nvrtcProgram, int, const char *const *);
typedef nvrtcResult (*size_fn)(nvrtcProgram, size_t *);
typedef nvrtcResult (*get_fn)(nvrtcProgram, char *);
typedef const char *(*errstr_fn)(nvrtcResult);

static int write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t n = fwrite(data, 1, len, f);
	return fclose(f) == 0 && n == len ? 0 : -1;
}

static int emit(nvrtcProgram p, size_fn sz, get_fn get, const char *path)
{
	size_t n = 0;
	if (sz(p, &n) != NVRTC_SUCCESS || n == 0)
		return -1;
	char *buf = malloc(n);
	if (!buf)
		return -1;
	int rc = get(p, buf) == NVRTC_SUCCESS ? write_file(path, buf, n) : -1;
	free(buf);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr,
			"usage: kforge-nvrtc LIBNVRTC SRC OUT.cubin OUT.ptx [options...]\n");
		return 2;
	}
	void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "kforge-nvrtc: cannot load %s: %s\n", argv[1], dlerror());
		return 4;
	}
	create_fn create = (create_fn)dlsym(lib, "nvrtcCreateProgram");
	compile_fn compile = (compile_fn)dlsym(lib, "nvrtcCompileProgram");
	size_fn logsz = (size_fn)dlsym(lib, "nvrtcGetProgramLogSize");
	get_fn getlog = (get_fn)dlsym(lib, "nvrtcGetProgramLog");
	size_fn cubinsz = (size_fn)dlsym(lib, "nvrtcGetCUBINSize");
	get_fn getcubin = (get_fn)dlsym(lib, "nvrtcGetCUBIN");
	size_fn ptxsz = (size_fn)dlsym(lib, "nvrtcGetPTXSize");
	get_fn getptx = (get_fn)dlsym(lib, "nvrtcGetPTX");
	errstr_fn errstr = (errstr_fn)dlsym(lib, "nvrtcGetErrorString");
	if (!create || !compile || !logsz || !getlog || !cubinsz || !getcubin || !ptxsz ||
	    !getptx || !errstr) {
		fprintf(stderr, "kforge-nvrtc: %s lacks the NVRTC entry points\n", argv[1]);
		return 4;
	}
	FILE *f = fopen(argv[2], "rb");
	if (!f) {
		fprintf(stderr, "kforge-nvrtc: cannot open %s\n", argv[2]);
		return 2;
	}
	char *src = malloc(SRC_MAX + 1);
	size_t n = src ? fread(src, 1, SRC_MAX, f) : 0;
	fclose(f);
	if (!src || n == SRC_MAX) {
		fprintf(stderr, "kforge-nvrtc: source too large\n");
		return 2;
	}
	src[n] = 0;
	const char *name = strrchr(argv[2], '/') ? strrchr(argv[2], '/') + 1 : argv[2];
	nvrtcProgram prog;
	nvrtcResult r = create(&prog, src, name, 0, NULL, NULL);
	if (r != NVRTC_SUCCESS) {
		fprintf(stderr, "kforge-nvrtc: nvrtcCreateProgram: %s\n", errstr(r));
		return 3;
	}
	r = compile(prog, argc - 5, (const char *const *)argv + 5);
	size_t ls = 0;
	if (logsz(prog, &ls) == NVRTC_SUCCESS && ls > 1) {
		char *log = malloc(ls);
		if (log && getlog(prog, log) == NVRTC_SUCCESS)
			fwrite(log, 1, strnlen(log, ls), stderr);
		free(log);
	}
	if (r == NVRTC_ERROR_COMPILATION)
		return 1;
	if (r != NVRTC_SUCCESS) {
		fprintf(stderr, "kforge-nvrtc: nvrtcCompileProgram: %s\n", errstr(r));
		return 3;
	}
	if (emit(prog, cubinsz, getcubin, argv[3]) != 0) {
		fprintf(stderr, "kforge-nvrtc: no cubin (is the arch a real sm_XX?)\n");
		return 3;
	}
	emit(prog, ptxsz, getptx, argv[4]);
	return 0;
}
