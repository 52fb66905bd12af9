/* bench_compile: how long a compile takes. Times, for one small kernel:
 * `nvcc -c` (host + device object, what a build would do), `nvcc --cubin`
 * (device only), the kforge-nvrtc helper, kforge's cold compile through the
 * jail with each backend (a fresh source each time, so never a cache hit),
 * and a cache hit. Medians of several runs; writes a Markdown report.
 * Usage: bench_compile [REPORT.md] (default build/bench/bench-compile.md);
 * $BENCH_COMMIT names the commit measured. The curated
 * docs/bench-compile.md is copied from the report by hand. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "sandbox/compile/compile.h"
#include "sandbox/jail/jail.h"

#define RUNS 7
#define HITS 400

static const char *KERNEL =
	"extern \"C\" __global__ void axpy(float *y, const float *x, float a, int n) {\n"
	"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
	"  if (i < n) y[i] = a * x[i] + y[i];\n"
	"}\n";

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Runs argv in dir, output discarded; returns wall ms or -1. */
static double run_cmd(const char *dir, char *const argv[])
{
	double t0 = now_ms();
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (chdir(dir) != 0)
			_exit(126);
		int nul = open("/dev/null", O_WRONLY);
		if (nul < 0 || dup2(nul, 1) < 0 || dup2(nul, 2) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	return now_ms() - t0;
}

static char src_variant[8192];
static const char *variant(int i)
{
	snprintf(src_variant, sizeof src_variant, "// variant %d %ld\n%s", i, (long)getpid(),
		 KERNEL);
	return src_variant;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static double time_tool(const char *dir, char *const argv[], int write_src)
{
	double v[RUNS];
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/k.cu", dir);
	for (int i = 0; i < RUNS; i++) {
		if (write_src && write_file(p, variant(1000 + i)) != 0)
			return -1;
		v[i] = run_cmd(dir, argv);
		if (v[i] < 0)
			return -1;
	}
	return median(v, RUNS);
}

static double time_kforge(struct compiler *cc, int base, unsigned *backend_ok)
{
	double v[RUNS];
	for (int i = 0; i < RUNS; i++) {
		const char *s = variant(base + i);
		struct compile_req req = {.source = s, .source_len = strlen(s), .arch = "sm_90"};
		struct compile_result res;
		struct kf_err err = {0};
		double t0 = now_ms();
		int rc = compile_kernel(cc, &req, &res, &err);
		v[i] = now_ms() - t0;
		if (rc != 0 || res.cache_hit) {
			fprintf(stderr, "bench_compile: compile failed: %s\n", err.msg);
			compile_result_fini(&res);
			return -1;
		}
		*backend_ok = 1;
		compile_result_fini(&res);
	}
	return median(v, RUNS);
}

int main(int argc, char **argv)
{
	const char *report = argc > 1 ? argv[1] : "build/bench/bench-compile.md";
	char dir[] = "/tmp/kf-bench-compile-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	struct jail *jl = NULL;
	struct jail_config jc = {.mode = JAIL_BWRAP};
	struct kf_err err = {0};
	if (jail_open(&jc, &jl, &err) != 0 || jail_usable(jl, &err) != 0) {
		fprintf(stderr, "bench_compile: %s\n", err.msg);
		return 1;
	}
	char nvcc[PATH_MAX + 16], helper[PATH_MAX + 32], lib[PATH_MAX + 32], exe[PATH_MAX];
	snprintf(nvcc, sizeof nvcc, "%s/bin/nvcc", jail_cuda_home(jl));
	if (fs_exe_dir(exe, sizeof exe) != 0)
		exe[0] = 0;
	/* build/tests/bench/bench_compile -> build/kforge-nvrtc */
	snprintf(helper, sizeof helper, "%s/../../kforge-nvrtc", exe);
	snprintf(lib, sizeof lib, "%s/lib64/libnvrtc.so", jail_cuda_home(jl));

	char *nvcc_c[] = {nvcc, "-c", "-arch=sm_90", "-o", "k.o", "k.cu", NULL};
	char *nvcc_cubin[] = {nvcc, "--cubin", "-arch=sm_90", "-Xptxas", "-v",
			      "-o", "k.cubin", "k.cu",	      NULL};
	char *nvrtc[] = {
		helper, lib, "k.cu", "k.cubin", "k.ptx", "-arch=sm_90", "--ptxas-options=-v", NULL};
	double t_c = time_tool(dir, nvcc_c, 1);
	double t_cubin = time_tool(dir, nvcc_cubin, 1);
	double t_rtc = access(helper, X_OK) == 0 ? time_tool(dir, nvrtc, 1) : -1;

	char data[PATH_MAX];
	snprintf(data, sizeof data, "%s/data", dir);
	struct compiler *c_nvcc = NULL, *c_auto = NULL;
	/* The helper is named: compile_open looks beside the running binary,
	 * which is not build/ here. */
	struct compile_config cfg = {.data_dir = data,
				     .jail = jl,
				     .force_nvcc = 1,
				     .nvrtc_helper = access(helper, X_OK) == 0 ? helper : NULL};
	if (compile_open(&cfg, &c_nvcc, &err) != 0) {
		fprintf(stderr, "bench_compile: %s\n", err.msg);
		return 1;
	}
	cfg.force_nvcc = 0;
	if (compile_open(&cfg, &c_auto, &err) != 0) {
		fprintf(stderr, "bench_compile: %s\n", err.msg);
		return 1;
	}
	unsigned ok = 0;
	double k_nvcc = time_kforge(c_nvcc, 2000, &ok);
	double k_auto = time_kforge(c_auto, 3000, &ok);

	/* Cache hits: the same source again and again. */
	static double hits[HITS];
	const char *s = variant(3000);
	for (int i = 0; i < HITS; i++) {
		struct compile_req req = {.source = s, .source_len = strlen(s), .arch = "sm_90"};
		struct compile_result res;
		double t0 = now_ms();
		int rc = compile_kernel(c_auto, &req, &res, &err);
		hits[i] = now_ms() - t0;
		if (rc != 0 || !res.cache_hit) {
			fprintf(stderr, "bench_compile: expected a cache hit\n");
			return 1;
		}
		compile_result_fini(&res);
	}
	qsort(hits, HITS, sizeof hits[0], cmp_d);
	double h_med = hits[HITS / 2], h_p99 = hits[HITS * 99 / 100];

	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	time_t now = time(NULL);
	char when[64];
	strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&now));
	FILE *f = fopen(report, "w");
	if (!f) {
		fprintf(stderr, "bench_compile: cannot write %s: %s\n", report, strerror(errno));
		return 1;
	}
	fprintf(f,
		"# Compile benchmark\n\n"
		"Written by `make bench-compile` (tests/bench/bench_compile.c) on %s at commit %s;\n"
		"docs/bench-compile.md is copied from it by hand. %ld CPUs, nvcc %s,\n"
		"sandbox %s. One small kernel (axpy, sm_90), median of %d runs each; the\n"
		"kforge rows compile a fresh variant of the source every run (never a\n"
		"cache hit) and include the bubblewrap jail, parsing and storing the\n"
		"artifact. Wall-clock times on a shared machine: compare rows, not runs.\n\n",
		when, getenv("BENCH_COMMIT") ? getenv("BENCH_COMMIT") : "unknown", ncpu,
		compile_compiler_version(c_auto), jail_mode_name(jl), RUNS);
	fprintf(f, "| what | median ms | vs `nvcc -c` |\n| --- | ---: | ---: |\n");
	fprintf(f, "| `nvcc -c` (host + device object), no jail | %.0f | 1.00 |\n", t_c);
	fprintf(f, "| `nvcc --cubin -Xptxas -v`, no jail | %.0f | %.2f |\n", t_cubin,
		t_cubin / t_c);
	if (t_rtc > 0)
		fprintf(f, "| kforge-nvrtc helper (NVRTC), no jail | %.0f | %.2f |\n", t_rtc,
			t_rtc / t_c);
	fprintf(f, "| kforge cold compile, nvcc backend, in the jail | %.0f | %.2f |\n", k_nvcc,
		k_nvcc / t_c);
	fprintf(f, "| kforge cold compile, %s backend, in the jail | %.0f | %.2f |\n",
		compile_backend_name(c_auto), k_auto, k_auto / t_c);
	fprintf(f,
		"\nCache hit (same source, flags, arch), %d calls: median %.3f ms, p99 %.3f ms "
		"(target < 5 ms).\n\n",
		HITS, h_med, h_p99);
	fprintf(f, "Target: a cold compile in at most half the time of `nvcc -c`: %s (%.2f).\n",
		k_auto <= t_c / 2 ? "met" : "NOT met", k_auto / t_c);
	fclose(f);
	printf("bench_compile: nvcc -c %.0f ms, --cubin %.0f ms, nvrtc %.0f ms, kforge nvcc %.0f ms, "
	       "kforge %s %.0f ms, hit median %.3f ms p99 %.3f ms -> %s\n",
	       t_c, t_cubin, t_rtc, k_nvcc, compile_backend_name(c_auto), k_auto, h_med, h_p99,
	       report);
	compile_close(c_nvcc);
	compile_close(c_auto);
	jail_close(jl);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return ok ? 0 : 1;
}
