/* check_compile: the sandboxed compiler end to end (real nvcc / NVRTC in the
 * bubblewrap jail): resources and diagnostics, the bad inputs a compile
 * service meets (syntax error, ptxas failure, spills, secret includes, a
 * compile that never ends, an output flood, 20 compiles at once, refused
 * flags), the artifact cache and the SHA-256 under it. Each test gets a
 * fresh data dir. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/compile/cache.h"
#include "sandbox/compile/compile.h"
#include "sandbox/compile/compile_int.h"
#include "sandbox/compile/compile_queue.h"
#include "sandbox/jail/jail.h"
#include "tests/unit/fixture.h"

static char data_dir[64];
static struct jail *jl;
static struct compiler *cc;

static void open_compiler(unsigned timeout_ms, int force_nvcc)
{
	struct compile_config cfg = {.data_dir = data_dir,
				     .jail = jl,
				     .timeout_ms = timeout_ms,
				     .force_nvcc = force_nvcc,
				     .default_arch = "sm_90"};
	struct kf_err err = {0};
	ck_assert_msg(compile_open(&cfg, &cc, &err) == 0, "compile_open: %s", err.msg);
}

static void setup(void)
{
	fixture_dir_new(data_dir, sizeof data_dir, "compile");
	struct jail_config jc = {.mode = JAIL_BWRAP};
	struct kf_err err = {0};
	ck_assert_int_eq(jail_open(&jc, &jl, &err), 0);
	ck_assert_msg(jail_usable(jl, &err) == 0, "%s", err.msg);
	open_compiler(0, 0);
}

static void teardown(void)
{
	compile_close(cc);
	cc = NULL;
	jail_close(jl);
	jl = NULL;
	fixture_dir_remove(data_dir);
}

static int compile_src(const char *src, const char *const *flags, size_t nflags,
		       struct compile_result *res, struct kf_err *err)
{
	struct compile_req req = {
		.source = src, .source_len = strlen(src), .flags = flags, .flags_len = nflags};
	return compile_kernel(cc, &req, res, err);
}

static json_t *kernel_named(json_t *result, const char *name)
{
	size_t i;
	json_t *k;
	json_array_foreach(json_object_get(result, "kernels"), i, k)
		if (!strcmp(json_string_value(json_object_get(k, "name")), name))
			return k;
	return NULL;
}

static const char *GOOD = "extern \"C\" __global__ void add(float *y, const float *x, int n) {\n"
			  "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
			  "  if (i < n) y[i] += x[i];\n"
			  "}\n"
			  "template <typename T> __global__ void scale(T *y, T a, int n) {\n"
			  "  int i = threadIdx.x; if (i < n) y[i] *= a;\n"
			  "}\n"
			  "template __global__ void scale<float>(float *, float, int);\n";

START_TEST(compile_reports_kernels_and_resources)
{
	struct compile_result res;
	struct kf_err err = {0};
	ck_assert_msg(compile_src(GOOD, NULL, 0, &res, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(res.ok, 1);
	ck_assert_int_eq(res.cache_hit, 0);
	ck_assert_str_eq(res.arch, "sm_90");
	ck_assert_int_eq(strlen(res.artifact_id), 64);
	json_t *j = res.report;
	ck_assert(json_is_true(json_object_get(j, "ok")));
	ck_assert_str_eq(res.sandbox, "bwrap");
	ck_assert_int_eq(json_array_size(json_object_get(j, "kernels")), 2);
	json_t *add = kernel_named(j, "add");
	ck_assert_ptr_nonnull(add);
	ck_assert_int_gt(json_integer_value(json_object_get(add, "registers")), 0);
	ck_assert_int_eq(json_integer_value(json_object_get(add, "spill_store_bytes")), 0);
	ck_assert_ptr_nonnull(kernel_named(j, "void scale<float>(float*, float, int)"));
	ck_assert_int_eq(json_array_size(json_object_get(j, "diagnostics")), 0);

	char *cubin = NULL;
	size_t len = 0;
	ck_assert_int_eq(
		compile_artifact_read(cc, res.artifact_id, "cubin", 1 << 24, &cubin, &len, &err),
		0);
	ck_assert_int_gt(len, 4);
	ck_assert_int_eq(memcmp(cubin, "\177ELF", 4), 0);
	free(cubin);
	compile_result_fini(&res);
}
END_TEST

START_TEST(syntax_error_gives_diagnostic_at_the_line)
{
	const char *src = "__global__ void f(float *x) {\n"
			  "  int i = threadIdx.x\n"
			  "  x[i] = 1;\n"
			  "}\n";
	struct compile_result res;
	struct kf_err err = {0};
	ck_assert_int_eq(compile_src(src, NULL, 0, &res, &err), KF_ECOMPILE);
	ck_assert_int_eq(res.ok, 0);
	json_t *j = res.report;
	ck_assert(json_is_false(json_object_get(j, "ok")));
	json_t *d = json_array_get(json_object_get(j, "diagnostics"), 0);
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(json_string_value(json_object_get(d, "file")), "kernel.cu");
	ck_assert_int_eq(json_integer_value(json_object_get(d, "line")), 3);
	ck_assert_int_eq(json_integer_value(json_object_get(d, "column")), 3);
	ck_assert_str_eq(json_string_value(json_object_get(d, "severity")), "error");
	ck_assert(strstr(json_string_value(json_object_get(d, "message")), "expected a \";\"") !=
		  NULL);
	ck_assert_str_eq(json_string_value(json_object_get(d, "source_line")), "  x[i] = 1;");
	char sum[600];
	compile_summary(&res, sum, sizeof sum);
	ck_assert(strstr(sum, "kernel.cu:3") != NULL);
	ck_assert(strstr(err.msg, "kernel.cu:3") != NULL);
	compile_result_fini(&res);
}
END_TEST

START_TEST(ptxas_shared_memory_overflow_is_a_structured_error)
{
	const char *src = "__global__ void f(float *x) {\n"
			  "  __shared__ float big[100000];\n"
			  "  big[threadIdx.x] = x[threadIdx.x]; __syncthreads();\n"
			  "  x[threadIdx.x] = big[threadIdx.x + 1];\n"
			  "}\n";
	struct compile_result res;
	struct kf_err err = {0};
	ck_assert_int_eq(compile_src(src, NULL, 0, &res, &err), KF_ECOMPILE);
	json_t *d = json_array_get(json_object_get(res.report, "diagnostics"), 0);
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(json_string_value(json_object_get(d, "file")), "ptxas");
	ck_assert_str_eq(json_string_value(json_object_get(d, "severity")), "error");
	ck_assert(strstr(json_string_value(json_object_get(d, "message")),
			 "too much shared data") != NULL);
	compile_result_fini(&res);
}
END_TEST

static const char *SPILL =
	"extern \"C\" __global__ void __launch_bounds__(1024) spill(float *out, const float *in, int n) {\n"
	"  float a[64];\n"
	"#pragma unroll\n"
	"  for (int i = 0; i < 64; i++) a[i] = in[threadIdx.x * 64 + i];\n"
	"  float s = 0;\n"
	"  for (int k = 0; k < n; k++) {\n"
	"#pragma unroll\n"
	"    for (int i = 0; i < 64; i++) s += a[i] * a[(i * 7 + k) & 63];\n"
	"  }\n"
	"  out[threadIdx.x] = s;\n"
	"}\n";

START_TEST(spilling_kernel_gets_a_warning)
{
	struct compile_result res;
	struct kf_err err = {0};
	ck_assert_msg(compile_src(SPILL, NULL, 0, &res, &err) == 0, "%s", err.msg);
	json_t *k = kernel_named(res.report, "spill");
	ck_assert_ptr_nonnull(k);
	ck_assert_int_gt(json_integer_value(json_object_get(k, "spill_store_bytes")), 0);
	ck_assert_int_gt(json_integer_value(json_object_get(k, "stack_bytes")), 0);
	json_t *lb = json_object_get(k, "launch_bounds");
	ck_assert_int_eq(json_integer_value(json_object_get(lb, "max_threads")), 1024);
	json_t *w = json_object_get(res.report, "warnings");
	int found = 0;
	size_t i;
	json_t *s;
	json_array_foreach(w, i, s)
		if (strstr(json_string_value(s), "'spill' spills registers"))
			found = 1;
	ck_assert_msg(found, "no spill warning in %s", json_dumps(w, 0));
	char sum[600];
	compile_summary(&res, sum, sizeof sum);
	ck_assert(strstr(sum, "SPILLS") != NULL);
	compile_result_fini(&res);
}
END_TEST

START_TEST(constant_and_shared_memory_are_reported)
{
	const char *src =
		"__constant__ float coef[64];\n"
		"__global__ void __launch_bounds__(256, 2) sm(float *x, float a) {\n"
		"  __shared__ float t[1024];\n"
		"  t[threadIdx.x] = x[threadIdx.x] * coef[threadIdx.x % 64] * a; __syncthreads();\n"
		"  x[threadIdx.x] = t[(threadIdx.x + 1) % 1024];\n"
		"}\n";
	struct compile_result res;
	struct kf_err err = {0};
	ck_assert_msg(compile_src(src, NULL, 0, &res, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(json_integer_value(json_object_get(res.report, "module_const_bytes")),
			 256);
	json_t *k = kernel_named(res.report, "sm(float*, float)");
	ck_assert_ptr_nonnull(k);
	ck_assert_int_eq(json_integer_value(json_object_get(k, "shared_static_bytes")), 4096);
	ck_assert_int_gt(json_integer_value(json_object_get(k, "const_bytes")), 12);
	ck_assert_int_eq(json_integer_value(json_object_get(k, "barriers")), 1);
	json_t *lb = json_object_get(k, "launch_bounds");
	ck_assert_int_eq(json_integer_value(json_object_get(lb, "max_threads")), 256);
	ck_assert_int_eq(json_integer_value(json_object_get(lb, "min_blocks_per_sm")), 2);
	compile_result_fini(&res);
}
END_TEST

/* Nothing of marker may appear in the result JSON or any artifact file. */
static void assert_no_leak(const struct compile_result *res, const char *marker)
{
	char *txt = json_dumps(res->report, 0);
	ck_assert_ptr_nonnull(txt);
	ck_assert_msg(strstr(txt, marker) == NULL, "'%s' leaked into %s", marker, txt);
	ck_assert_msg(strstr(txt, data_dir) == NULL, "host path leaked into %s", txt);
	free(txt);
	static const char *kinds[] = {"log", "result.json", "ptx"};
	for (size_t i = 0; i < 3 && res->artifact_id[0]; i++) {
		char *data = NULL;
		size_t len = 0;
		struct kf_err err = {0};
		if (compile_artifact_read(cc, res->artifact_id, kinds[i], 1 << 26, &data, &len,
					  &err) == 0) {
			ck_assert_msg(strstr(data, marker) == NULL, "'%s' leaked into %s", marker,
				      kinds[i]);
			free(data);
		}
	}
}

START_TEST(secret_includes_leak_no_byte)
{
	char secret_dir[] = "/tmp/kf-secret-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(secret_dir));
	char secret[128], src[512];
	snprintf(secret, sizeof secret, "%s/secret.h", secret_dir);
	const char *marker = "KFSECRET_9c1e77d2_MARKER";
	FILE *f = fopen(secret, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%s is the secret\n", marker);
	fclose(f);
	setenv("KF_COMPILE_ENV_SECRET", marker, 1);

	const char *targets[] = {"/etc/shadow", secret, "/proc/self/environ", "/proc/1/environ"};
	for (size_t t = 0; t < sizeof targets / sizeof targets[0]; t++) {
		snprintf(src, sizeof src,
			 "#include \"%s\"\n__global__ void f(int *x) { *x = %zu; }\n", targets[t],
			 t);
		struct compile_result res;
		struct kf_err err = {0};
		int rc = compile_src(src, NULL, 0, &res, &err);
		ck_assert_msg(rc == 0 || rc == KF_ECOMPILE, "%s: rc %d %s", targets[t], rc,
			      err.msg);
		assert_no_leak(&res, marker);
		assert_no_leak(&res, "root:");
		ck_assert_msg(strstr(err.msg, marker) == NULL, "leak in err");
		compile_result_fini(&res);
	}
	/* The planted file really is readable outside the jail. */
	f = fopen(secret, "r");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	unlink(secret);
	rmdir(secret_dir);
	unsetenv("KF_COMPILE_ENV_SECRET");
}
END_TEST

static const char *FOREVER =
	"template <int N, unsigned long long M> struct A {\n"
	"  static constexpr unsigned long long v = A<N - 1, 2 * M>::v + A<N - 1, 2 * M + 1>::v;\n"
	"};\n"
	"template <unsigned long long M> struct A<0, M> { static constexpr unsigned long long v = M; };\n"
	"__global__ void k(unsigned long long *o) { *o = A<40, 0>::v; }\n";

START_TEST(endless_compile_times_out_and_the_next_one_works)
{
	compile_close(cc);
	open_compiler(2500, 0);
	struct compile_result res;
	struct kf_err err = {0};
	ck_assert_int_eq(compile_src(FOREVER, NULL, 0, &res, &err), KF_ETIMEOUT);
	ck_assert(strstr(err.msg, "timed out") != NULL);
	ck_assert_int_eq(res.timed_out, 1);
	ck_assert_ptr_null(res.report);
	ck_assert_uint_eq(res.timeout_ms, 2500);
	char sum[600];
	compile_summary(&res, sum, sizeof sum);
	ck_assert(strstr(sum, "compile timed out after 2500 ms") != NULL);
	compile_result_fini(&res);
	kf_err_clear(&err);
	/* The next compile on the same data dir and jail, under the default
	 * limit: 2.5 s is too short for a normal compile on a loaded host. */
	compile_close(cc);
	open_compiler(0, 0);
	ck_assert_msg(compile_src(GOOD, NULL, 0, &res, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(res.ok, 1);
	compile_result_fini(&res);
}
END_TEST

START_TEST(output_flood_is_capped)
{
	/* ~900 KB of source whose every line draws a warning. */
	size_t cap = 900 * 1024, n = 0;
	char *src = malloc(cap + 256);
	ck_assert_ptr_nonnull(src);
	for (int i = 0; n + 200 < cap; i++)
		n += (size_t)snprintf(
			src + n, cap + 256 - n,
			"#warning flood %06d xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n",
			i);
	n += (size_t)snprintf(src + n, cap + 256 - n, "__global__ void f(int *x) { *x = 1; }\n");
	struct compile_req req = {.source = src, .source_len = n};
	struct compile_result res;
	struct kf_err err = {0};
	int rc = compile_kernel(cc, &req, &res, &err);
	ck_assert_msg(rc == 0 || rc == KF_ECOMPILE, "rc %d: %s", rc, err.msg);
	ck_assert(json_is_true(json_object_get(res.report, "log_truncated")));
	ck_assert_int_le(json_array_size(json_object_get(res.report, "diagnostics")), 50);
	char *txt = json_dumps(res.report, 0);
	ck_assert_int_lt(strlen(txt), 100000);
	free(txt);
	compile_result_fini(&res);
	free(src);
}
END_TEST

struct par {
	int idx;
	int rc;
	int ok;
	char name[64];
	char id[65];
};

static void *par_compile(void *arg)
{
	struct par *p = arg;
	char src[256];
	snprintf(src, sizeof src,
		 "extern \"C\" __global__ void k%d(float *x) { x[threadIdx.x] *= %d.0f; }\n",
		 p->idx, p->idx);
	struct compile_result res;
	struct kf_err err = {0};
	struct compile_req req = {.source = src, .source_len = strlen(src)};
	p->rc = compile_kernel(cc, &req, &res, &err);
	p->ok = res.ok;
	json_t *k = json_array_get(json_object_get(res.report, "kernels"), 0);
	snprintf(p->name, sizeof p->name, "%s",
		 k ? json_string_value(json_object_get(k, "name")) : "");
	snprintf(p->id, sizeof p->id, "%s", res.artifact_id);
	compile_result_fini(&res);
	return NULL;
}

START_TEST(twenty_concurrent_compiles_are_all_correct)
{
	struct par ps[20];
	pthread_t th[20];
	for (int i = 0; i < 20; i++) {
		ps[i] = (struct par){.idx = i};
		ck_assert_int_eq(pthread_create(&th[i], NULL, par_compile, &ps[i]), 0);
	}
	for (int i = 0; i < 20; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 20; i++) {
		char want[16];
		snprintf(want, sizeof want, "k%d", i);
		ck_assert_msg(ps[i].rc == 0 && ps[i].ok, "compile %d: rc %d", i, ps[i].rc);
		ck_assert_str_eq(ps[i].name, want);
		for (int j = 0; j < i; j++)
			ck_assert_str_ne(ps[i].id, ps[j].id);
	}
}
END_TEST

/* Refused flags: each is a request, then the word its error must contain. */
static const char *const refused_flags[][3] = {
	{"-rdc=true", NULL, "relocatable"},
	{"-rdc", "true", "relocatable"},
	{"--relocatable-device-code=true", NULL, "relocatable"},
	{"-dc", NULL, "separate"},
	{"-o", "x.o", "outputs"},
	{"--output-file=x", NULL, "outputs"},
	{"-ccbin", "/usr/bin/gcc", "host compiler"},
	{"--compiler-bindir=/tmp", NULL, "host compiler"},
	{"-Xcompiler", "-fopenmp", "host"},
	{"--compiler-options=-O3", NULL, "host"},
	{"-I/etc", NULL, "relative"},
	{"-I", "/etc", "relative"},
	{"-I../..", NULL, "relative"},
	{"-include", "/etc/shadow", "inside the job"},
	{"-include", "-lcuda", "inside the job"},
	{"--pre-include=/etc/passwd", NULL, "inside the job"},
	{"-isystem", "/etc", "outside the job"},
	{"-arch=sm_80", NULL, "arch field"},
	{"-gencode", "arch=compute_80,code=sm_80", "arch field"},
	{"--keep", NULL, "artifacts"},
	{"-lcuda", NULL, "linked"},
	{"-L/usr/lib", NULL, "linked"},
	{"-Xlinker", "-s", "linked"},
	{"-c", NULL, "host object"},
	{"--run", NULL, "run"},
	{"-Xptxas", "--dump-everything", "ptxas option"},
	{"--foo-bar", NULL, "allowlist"},
	{"-DX=$(rm -rf /)", NULL, "macro"},
	{"-D", "A;B", "macro"},
	{"-maxrregcount=9999", NULL, "16..255"},
	{"-std=gnu++99", NULL, "c++17"},
	{"--ftz=maybe", NULL, "true or false"},
	{"kernel2.cu", NULL, "not an option"},
	{"-Xcudafe", "--diag_suppress=1", "allowlist"},
	{"--options-file", "/etc/passwd", "options files"},
};

START_TEST(refused_flag_is_rejected_with_a_reason)
{
	const char *const *row = refused_flags[_i];
	const char *flags[2] = {row[0], row[1]};
	size_t n = row[1] ? 2 : 1;
	struct kf_err err = {0};
	int rc = compile_check_flags(flags, n, &err);
	ck_assert_msg(rc == KF_EPERM || rc == KF_EINVAL, "%s: rc %d", row[0], rc);
	ck_assert_msg(strstr(err.msg, row[2]) != NULL, "%s: message '%s' lacks '%s'", row[0],
		      err.msg, row[2]);
	/* And compile_kernel refuses it before running anything. */
	struct compile_result res;
	kf_err_clear(&err);
	ck_assert_int_eq(compile_src(GOOD, flags, n, &res, &err), rc);
	ck_assert_ptr_null(res.report);
	compile_result_fini(&res);
}
END_TEST

/* n comma-joined "-O3" after "-Xptxas=" into buf: n nvcc arguments pairs. */
static const char *ptxas_o3s(char *buf, size_t cap, int n)
{
	size_t k = (size_t)snprintf(buf, cap, "-Xptxas=");
	for (int i = 0; i < n && k < cap; i++)
		k += (size_t)snprintf(buf + k, cap - k, "%s-O3", i ? "," : "");
	return buf;
}

START_TEST(ptxas_options_past_the_argument_cap_are_too_big)
{
	/* 33 + 32 sub-options expand to 130 nvcc arguments: once a heap overflow. */
	char a[160], b[160];
	const char *flags[2] = {ptxas_o3s(a, sizeof a, 33), ptxas_o3s(b, sizeof b, 32)};
	struct kf_err err = {0};
	ck_assert_int_eq(compile_check_flags(flags, 2, &err), KF_ETOOBIG);
	ck_assert_msg(strstr(err.msg, "flags expand to more than 128 nvcc arguments"), "%s",
		      err.msg);
}
END_TEST

START_TEST(ptxas_options_at_the_argument_cap_are_accepted)
{
	/* 33 + 31 sub-options: exactly 128 nvcc arguments. */
	char a[160], b[160];
	const char *flags[2] = {ptxas_o3s(a, sizeof a, 33), ptxas_o3s(b, sizeof b, 31)};
	struct kf_err err = {0};
	ck_assert_msg(compile_check_flags(flags, 2, &err) == 0, "%s", err.msg);
}
END_TEST

START_TEST(flag_values_past_the_length_cap_are_refused)
{
	/* A value after -D or -Xptxas was once cut to fit its slot: a long
	 * macro name silently shortened, "-v,...,-O3X" checked as "-O3". */
	char name[201], ptxas[200];
	memset(name, 'A', 200);
	name[200] = '\0';
	size_t k = 0;
	for (int i = 0; i < 52; i++)
		k += (size_t)snprintf(ptxas + k, sizeof ptxas - k, "-v,");
	snprintf(ptxas + k, sizeof ptxas - k, "-O3X");
	const char *d[2] = {"-D", name}, *x[2] = {"-Xptxas", ptxas};
	struct kf_err err = {0};
	ck_assert_int_eq(compile_check_flags(d, 2, &err), KF_EINVAL);
	ck_assert_str_eq(err.msg, "flags[1] is longer than 150 characters");
	kf_err_clear(&err);
	ck_assert_int_eq(compile_check_flags(x, 2, &err), KF_EINVAL);
	ck_assert_str_eq(err.msg, "flags[1] is longer than 150 characters");
}
END_TEST

START_TEST(flag_values_at_the_length_cap_are_passed_whole)
{
	char num[151], want[200];
	memset(num, '0', 148);
	snprintf(num + 148, 3, "64");
	snprintf(want, sizeof want, "--maxrregcount=%s", num);
	const char *f[2] = {"-maxrregcount", num};
	struct compile_flagset *fs = malloc(sizeof *fs);
	struct kf_err err = {0};
	ck_assert_msg(compile_parse_flags(f, 2, fs, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(fs->nvcc_len, 1);
	ck_assert_str_eq(fs->nvcc[0], want);
	ck_assert_str_eq(fs->nvrtc[0], want);
	free(fs);
}
END_TEST

START_TEST(allowed_flags_pass_and_compile)
{
	const char *flags[] = {"-O3",
			       "--use_fast_math",
			       "-lineinfo",
			       "-maxrregcount=64",
			       "-Xptxas",
			       "-v",
			       "-Xptxas",
			       "-O2",
			       "-D",
			       "TILE=32",
			       "-DUSE_X",
			       "-std=c++17",
			       "--extra-device-vectorization",
			       "--ftz=true",
			       "--prec-div=false",
			       "--prec-sqrt=false",
			       "--fmad=true",
			       "--restrict",
			       "--expt-relaxed-constexpr",
			       "-I.",
			       "-w"};
	size_t n = sizeof flags / sizeof flags[0];
	struct kf_err err = {0};
	ck_assert_msg(compile_check_flags(flags, n, &err) == 0, "%s", err.msg);
	struct compile_result res;
	const char *src = "#ifndef USE_X\n#error USE_X missing\n#endif\n"
			  "extern \"C\" __global__ void t(float *x) { x[threadIdx.x] = TILE; }\n";
	ck_assert_msg(compile_src(src, flags, n, &res, &err) == 0, "%s", err.msg);
	ck_assert_ptr_nonnull(kernel_named(res.report, "t"));
	compile_result_fini(&res);
}
END_TEST

START_TEST(bad_arch_and_source_are_rejected)
{
	static const char *bad[] = {"sm_9", "compute_90", "sm_90x", "gfx90a", "sm_900", "sm_"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct compile_req req = {
			.source = GOOD, .source_len = strlen(GOOD), .arch = bad[i]};
		struct compile_result res;
		struct kf_err err = {0};
		ck_assert_int_eq(compile_kernel(cc, &req, &res, &err), KF_EINVAL);
		ck_assert(strstr(err.msg, bad[i]) != NULL);
		ck_assert(strstr(err.msg, "sm_90a") != NULL);
		compile_result_fini(&res);
	}
	struct compile_result res;
	struct kf_err err = {0};
	struct compile_req empty = {.source = "", .source_len = 0};
	ck_assert_int_eq(compile_kernel(cc, &empty, &res, &err), KF_EINVAL);
	ck_assert(strstr(err.msg, "source") != NULL);
	size_t big = COMPILE_SOURCE_MAX_BYTES + 1;
	char *s = malloc(big);
	memset(s, ' ', big);
	struct compile_req huge = {.source = s, .source_len = big};
	kf_err_clear(&err);
	ck_assert_int_eq(compile_kernel(cc, &huge, &res, &err), KF_ETOOBIG);
	ck_assert(strstr(err.msg, "1 MiB") != NULL);
	free(s);
	struct compile_req nul = {.source = "a\0b", .source_len = 3};
	kf_err_clear(&err);
	ck_assert_int_eq(compile_kernel(cc, &nul, &res, &err), KF_EINVAL);
}
END_TEST

START_TEST(sm_90a_compiles_with_its_own_gencode)
{
	struct compile_req req = {.source = GOOD, .source_len = strlen(GOOD), .arch = "sm_90a"};
	struct compile_result res;
	struct kf_err err = {0};
	ck_assert_msg(compile_kernel(cc, &req, &res, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(res.arch, "sm_90a");
	compile_result_fini(&res);
}
END_TEST

START_TEST(cache_hit_returns_the_same_artifact)
{
	struct compile_result a, b, c;
	struct kf_err err = {0};
	ck_assert_int_eq(compile_src(GOOD, NULL, 0, &a, &err), 0);
	ck_assert_int_eq(compile_src(GOOD, NULL, 0, &b, &err), 0);
	ck_assert_int_eq(a.cache_hit, 0);
	ck_assert_int_eq(b.cache_hit, 1);
	ck_assert_str_eq(a.artifact_id, b.artifact_id);
	ck_assert(json_equal(json_object_get(a.report, "kernels"),
			     json_object_get(b.report, "kernels")));
	const char *fl[] = {"-lineinfo"};
	ck_assert_int_eq(compile_src(GOOD, fl, 1, &c, &err), 0);
	ck_assert_int_eq(c.cache_hit, 0);
	ck_assert_str_ne(a.artifact_id, c.artifact_id);
	compile_result_fini(&a);
	compile_result_fini(&b);
	compile_result_fini(&c);

	/* A compile error is cached too, and still reported as an error. */
	const char *bad = "__global__ void f( {\n";
	ck_assert_int_eq(compile_src(bad, NULL, 0, &a, &err), KF_ECOMPILE);
	ck_assert_int_eq(compile_src(bad, NULL, 0, &b, &err), KF_ECOMPILE);
	ck_assert_int_eq(b.cache_hit, 1);
	ck_assert(json_equal(json_object_get(a.report, "diagnostics"),
			     json_object_get(b.report, "diagnostics")));
	compile_result_fini(&a);
	compile_result_fini(&b);
}
END_TEST

START_TEST(ptx_is_a_resource_link_not_inline)
{
	struct compile_req req = {.source = GOOD, .source_len = strlen(GOOD), .want_ptx = 1};
	struct compile_result res;
	struct kf_err err = {0};
	ck_assert_int_eq(compile_kernel(cc, &req, &res, &err), 0);
	ck_assert_int_eq(res.want_ptx, 1);
	char *txt = json_dumps(res.report, 0);
	ck_assert(strstr(txt, ".entry") == NULL);
	free(txt);
	char *data;
	size_t len;
	ck_assert_int_eq(
		compile_artifact_read(cc, res.artifact_id, "ptx", 1 << 24, &data, &len, &err), 0);
	ck_assert(strstr(data, ".entry add") != NULL);
	ck_assert_int_eq(res.ptx_bytes, (long long)len);
	free(data);
	compile_result_fini(&res);
}
END_TEST

START_TEST(sass_summary_or_a_reason_why_not)
{
	struct compile_req req = {.source = SPILL, .source_len = strlen(SPILL), .want_sass = 1};
	struct compile_result res;
	struct kf_err err = {0};
	ck_assert_int_eq(compile_kernel(cc, &req, &res, &err), 0);
	json_t *s = res.sass;
	ck_assert_ptr_nonnull(s);
	char cuobjdump[4200];
	snprintf(cuobjdump, sizeof cuobjdump, "%s/bin/cuobjdump", jail_cuda_home(jl));
	if (access(cuobjdump, X_OK) == 0) {
		ck_assert(json_is_true(json_object_get(s, "available")));
		json_t *k = json_array_get(json_object_get(s, "kernels"), 0);
		ck_assert_int_gt(
			json_integer_value(json_object_get(json_object_get(k, "local"), "stl")), 0);
	} else {
		ck_assert(json_is_false(json_object_get(s, "available")));
		ck_assert(strstr(json_string_value(json_object_get(s, "reason")), "cuobjdump") !=
			  NULL);
	}
	compile_result_fini(&res);
}
END_TEST

START_TEST(nvcc_backend_gives_the_same_kernels)
{
	compile_close(cc);
	open_compiler(0, 1);
	struct compile_result res;
	struct kf_err err = {0};
	ck_assert_int_eq(compile_src(GOOD, NULL, 0, &res, &err), 0);
	ck_assert_str_eq(json_string_value(json_object_get(res.report, "backend")), "nvcc");
	ck_assert_ptr_nonnull(kernel_named(res.report, "add"));
	ck_assert_ptr_nonnull(kernel_named(res.report, "void scale<float>(float*, float, int)"));
	compile_result_fini(&res);
}
END_TEST

START_TEST(artifact_lookup_errors_name_the_problem)
{
	char *d;
	size_t n;
	struct kf_err err = {0};
	ck_assert_int_eq(compile_artifact_read(cc, "../../etc", "ptx", 100, &d, &n, &err),
			 KF_EINVAL);
	ck_assert(strstr(err.msg, "64 lowercase hex") != NULL);
	kf_err_clear(&err);
	char zero[65];
	memset(zero, '0', 64);
	zero[64] = 0;
	ck_assert_int_eq(compile_artifact_read(cc, zero, "ptx", 100, &d, &n, &err), KF_ENOTFOUND);
	kf_err_clear(&err);
	ck_assert_int_eq(compile_artifact_read(cc, zero, "shadow", 100, &d, &n, &err), KF_EINVAL);
	ck_assert(strstr(err.msg, "shadow") != NULL);
}
END_TEST

START_TEST(cancelled_compile_stops)
{
	volatile int flag = 1;
	struct compile_req req = {
		.source = FOREVER, .source_len = strlen(FOREVER), .cancel = &flag};
	struct compile_result res;
	struct kf_err err = {0};
	ck_assert_int_eq(compile_kernel(cc, &req, &res, &err), KF_ECANCELED);
	compile_result_fini(&res);
}
END_TEST

START_TEST(unusable_sandbox_refuses_compiles)
{
	struct jail *bad;
	struct jail_config jc = {.mode = JAIL_BWRAP, .bwrap_path = "/nonexistent/bwrap"};
	struct kf_err err = {0};
	ck_assert_int_eq(jail_open(&jc, &bad, &err), 0);
	struct compiler *c2;
	struct compile_config cfg = {.data_dir = data_dir, .jail = bad};
	ck_assert_int_eq(compile_open(&cfg, &c2, &err), 0);
	struct compile_req req = {.source = GOOD, .source_len = strlen(GOOD)};
	struct compile_result res;
	ck_assert_int_eq(compile_kernel(c2, &req, &res, &err), KF_ESANDBOX);
	ck_assert(strstr(err.msg, "--sandbox=none") != NULL);
	compile_result_fini(&res);
	compile_close(c2);
	jail_close(bad);
}
END_TEST

START_TEST(sandbox_none_is_reported_in_results)
{
	struct jail *none;
	struct jail_config jc = {.mode = JAIL_NONE};
	struct kf_err err = {0};
	ck_assert_int_eq(jail_open(&jc, &none, &err), 0);
	struct compiler *c2;
	struct compile_config cfg = {.data_dir = data_dir, .jail = none};
	ck_assert_int_eq(compile_open(&cfg, &c2, &err), 0);
	struct compile_req req = {.source = GOOD, .source_len = strlen(GOOD)};
	struct compile_result res;
	ck_assert_int_eq(compile_kernel(c2, &req, &res, &err), 0);
	ck_assert_str_eq(res.sandbox, "none");
	compile_result_fini(&res);
	compile_close(c2);
	jail_close(none);
}
END_TEST

START_TEST(split_flags_splits_on_blanks)
{
	char **v;
	size_t n;
	struct kf_err err = {0};
	ck_assert_int_eq(compile_split_flags("  -O3 -D  N=4\t--use_fast_math ", &v, &n, &err), 0);
	ck_assert_int_eq(n, 4);
	ck_assert_str_eq(v[0], "-O3");
	ck_assert_str_eq(v[2], "N=4");
	ck_assert_ptr_null(v[4]);
	compile_flags_free(v);
	char many[1024] = "";
	for (int i = 0; i < COMPILE_FLAGS_MAX + 1; i++)
		memcpy(many + 3 * i, "-w ", 4);
	ck_assert_int_eq(compile_split_flags(many, &v, &n, &err), KF_ETOOBIG);
}
END_TEST

START_TEST(split_flags_caps_each_flag_length)
{
	char **v = NULL;
	size_t n = 0;
	struct kf_err err = {0};
	char flags[400];
	/* 150 characters pass (compile_parse_flags' own cap), 151 do not. */
	snprintf(flags, sizeof flags, "-O3 -D%0148d", 7);
	ck_assert_int_eq(strlen(flags + 4), 150);
	ck_assert_int_eq(compile_split_flags(flags, &v, &n, &err), 0);
	ck_assert_int_eq(n, 2);
	compile_flags_free(v);
	snprintf(flags, sizeof flags, "-O3 -D%0149d", 7);
	ck_assert_int_eq(compile_split_flags(flags, &v, &n, &err), KF_ETOOBIG);
	ck_assert_ptr_null(v);
	ck_assert_msg(strstr(err.msg, "flags[1]") && strstr(err.msg, "151"), "%s", err.msg);
}
END_TEST

static const char *HUGE_ARRAY = "__device__ char big[1u << 30] = {1};\n"
				"__global__ void k(char *o) { o[0] = big[threadIdx.x]; }\n";

START_TEST(memory_limit_fails_a_huge_device_array_and_names_it)
{
	compile_close(cc);
	struct compile_config cfg = {.data_dir = data_dir,
				     .jail = jl,
				     .default_arch = "sm_90",
				     .mem_bytes = 512ull << 20};
	struct kf_err err = {0};
	ck_assert_msg(compile_open(&cfg, &cc, &err) == 0, "compile_open: %s", err.msg);
	struct compile_result r;
	ck_assert_int_eq(compile_src(HUGE_ARRAY, NULL, 0, &r, &err), KF_ECOMPILE);
	ck_assert_int_eq(r.memory_limited, 1);
	ck_assert(r.memory_limit_bytes == 512ull << 20);
	char sum[600];
	compile_summary(&r, sum, sizeof sum);
	ck_assert_msg(strstr(sum, "512 MiB") && strstr(sum, "KFORGE_COMPILE_MEM_MB"), "%s", sum);
	ck_assert_msg(strstr(err.msg, "512 MiB"), "%s", err.msg);
	compile_result_fini(&r);
	/* Not cached: the next try compiles again (and fails the same way). */
	kf_err_clear(&err);
	ck_assert_int_eq(compile_src(HUGE_ARRAY, NULL, 0, &r, &err), KF_ECOMPILE);
	ck_assert_int_eq(r.cache_hit, 0);
	compile_result_fini(&r);
	/* A source that only says it is out of memory gets its diagnostic. */
	kf_err_clear(&err);
	ck_assert_int_eq(compile_src("#error out of memory\n", NULL, 0, &r, &err), KF_ECOMPILE);
	ck_assert_int_eq(r.memory_limited, 0);
	ck_assert_int_gt(json_array_size(json_object_get(r.report, "diagnostics")), 0);
	compile_result_fini(&r);
	/* A normal kernel compiles under the same limit. */
	ck_assert_int_eq(compile_src(GOOD, NULL, 0, &r, &err), 0);
	compile_result_fini(&r);
}
END_TEST

/* --- the fair queue ---------------------------------------------------- */

static char q_order[16];
static int q_norder;
static pthread_mutex_t q_mu = PTHREAD_MUTEX_INITIALIZER;

struct q_job {
	struct compile_queue *q;
	const char *client;
	char name;
	const volatile int *cancel;
	int rc;
};

static void *q_run(void *arg)
{
	struct q_job *j = arg;
	j->rc = compile_queue_take(j->q, j->client, j->cancel, NULL);
	if (j->rc)
		return NULL;
	pthread_mutex_lock(&q_mu);
	q_order[q_norder++] = j->name;
	pthread_mutex_unlock(&q_mu);
	compile_queue_give(j->q, j->client);
	return NULL;
}

/* Waits until n compiles wait in q (synchronisation, not timing). */
static void q_wait_for(struct compile_queue *q, int n)
{
	struct compile_queue_count all;
	for (;;) {
		compile_queue_count(q, NULL, &all, NULL);
		if (all.waiting == n)
			return;
		usleep(1000);
	}
}

START_TEST(queue_serves_clients_round_robin)
{
	struct compile_queue_limits lim = {.slots = 1, .client_slots = 1, .client_waiting = 8};
	struct compile_queue *q;
	ck_assert_int_eq(compile_queue_new(&lim, &q, NULL), 0);
	q_norder = 0;
	memset(q_order, 0, sizeof q_order);
	ck_assert_int_eq(compile_queue_take(q, "A", NULL, NULL), 0);
	/* Client A queues three more compiles, then B queues one. */
	struct q_job jobs[4] = {{q, "A", '1', NULL, 0},
				{q, "A", '2', NULL, 0},
				{q, "A", '3', NULL, 0},
				{q, "B", 'B', NULL, 0}};
	pthread_t th[4];
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_create(&th[i], NULL, q_run, &jobs[i]), 0);
		q_wait_for(q, i + 1);
	}
	compile_queue_give(q, "A");
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	/* B waited behind one of A's compiles, not all of them. */
	ck_assert_str_eq(q_order, "B123");
	compile_queue_free(q);
}
END_TEST

START_TEST(queue_caps_one_client_and_lets_others_through)
{
	struct compile_queue_limits lim = {.slots = 2, .client_slots = 1, .client_waiting = 2};
	struct compile_queue *q;
	struct compile_queue_count all, mine;
	struct kf_err err = {0};
	ck_assert_int_eq(compile_queue_new(&lim, &q, NULL), 0);
	q_norder = 0;
	memset(q_order, 0, sizeof q_order);
	ck_assert_int_eq(compile_queue_take(q, "A", NULL, NULL), 0);
	struct q_job a[2] = {{q, "A", '1', NULL, 0}, {q, "A", '2', NULL, 0}};
	pthread_t th[2];
	ck_assert_int_eq(pthread_create(&th[0], NULL, q_run, &a[0]), 0);
	q_wait_for(q, 1);
	/* A free slot, but A is at its share: A waits, B goes at once. */
	compile_queue_count(q, "A", &all, &mine);
	ck_assert_int_eq(all.running, 1);
	ck_assert_int_eq(mine.waiting, 1);
	ck_assert_int_eq(compile_queue_take(q, "B", NULL, NULL), 0);
	ck_assert_int_eq(pthread_create(&th[1], NULL, q_run, &a[1]), 0);
	q_wait_for(q, 2);
	/* A third waiting compile of A's is refused at once. */
	ck_assert_int_eq(compile_queue_take(q, "A", NULL, &err), KF_EBUSY);
	ck_assert_msg(strstr(err.msg, "2 compiles waiting"), "%s", err.msg);
	compile_queue_give(q, "B");
	compile_queue_give(q, "A");
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	ck_assert_str_eq(q_order, "12");
	compile_queue_count(q, "A", &all, &mine);
	ck_assert_int_eq(all.running + all.waiting + mine.running + mine.waiting, 0);
	compile_queue_free(q);
}
END_TEST

START_TEST(queue_cancel_leaves_the_line)
{
	struct compile_queue_limits lim = {.slots = 1, .client_slots = 1, .client_waiting = 2};
	struct compile_queue *q;
	ck_assert_int_eq(compile_queue_new(&lim, &q, NULL), 0);
	ck_assert_int_eq(compile_queue_take(q, NULL, NULL, NULL), 0);
	static volatile int stop;
	stop = 0;
	struct q_job j = {q, "C", 'C', &stop, 0};
	pthread_t th;
	ck_assert_int_eq(pthread_create(&th, NULL, q_run, &j), 0);
	q_wait_for(q, 1);
	stop = 1;
	pthread_join(th, NULL);
	ck_assert_int_eq(j.rc, KF_ECANCELED);
	q_wait_for(q, 0);
	compile_queue_give(q, NULL);
	compile_queue_free(q);
	/* A share larger than the whole is refused, naming the field. */
	struct kf_err err = {0};
	lim.client_slots = 2;
	ck_assert_int_eq(compile_queue_new(&lim, &q, &err), KF_EINVAL);
	ck_assert_msg(strstr(err.msg, "client_slots 2"), "%s", err.msg);
}
END_TEST

/* --- cache ------------------------------------------------------------ */

START_TEST(sha256_matches_the_fips_vectors)
{
	struct cache_sha256 s;
	char hex[65];
	cache_sha256_init(&s);
	cache_sha256_update(&s, "abc", 3);
	cache_sha256_final_hex(&s, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	cache_sha256_init(&s);
	cache_sha256_final_hex(&s, hex);
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	cache_sha256_init(&s);
	for (const char *p = m; *p; p++)
		cache_sha256_update(&s, p, 1);
	cache_sha256_final_hex(&s, hex);
	ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}
END_TEST

static void put(struct cache *c, const char *id, size_t bytes)
{
	char stage[4200], p[4300];
	ck_assert_int_eq(cache_stage(c, stage, sizeof stage, NULL), 0);
	snprintf(p, sizeof p, "%s/blob", stage);
	FILE *f = fopen(p, "w");
	for (size_t i = 0; i < bytes; i++)
		fputc('x', f);
	fclose(f);
	ck_assert_int_eq(cache_publish(c, stage, id, NULL), 0);
}

START_TEST(cache_evicts_least_recently_used_over_the_cap)
{
	char root[128];
	snprintf(root, sizeof root, "%s/lru", data_dir);
	struct cache *c;
	ck_assert_int_eq(cache_open(root, 10000, &c, NULL), 0);
	char ids[4][65];
	for (int i = 0; i < 4; i++) {
		memset(ids[i], 'a' + i, 64);
		ids[i][64] = 0;
	}
	put(c, ids[0], 3000);
	sleep(1);
	put(c, ids[1], 3000);
	sleep(1);
	put(c, ids[2], 3000);
	sleep(1);
	/* Use the oldest: it becomes the most recent. */
	char *d;
	size_t n;
	ck_assert_int_eq(cache_read(c, ids[0], "blob", 100000, &d, &n, NULL), 0);
	free(d);
	put(c, ids[3], 3000); /* 12000 > 10000: evict down to 9000 */
	char p[4300];
	ck_assert_int_eq(cache_file_path(c, ids[1], "blob", p, sizeof p, NULL), KF_ENOTFOUND);
	ck_assert_int_eq(cache_file_path(c, ids[0], "blob", p, sizeof p, NULL), 0);
	ck_assert_int_eq(cache_file_path(c, ids[3], "blob", p, sizeof p, NULL), 0);
	ck_assert_int_le(cache_total_bytes(c), 10000);
	/* Publishing an id that exists keeps the first and drops the second. */
	put(c, ids[3], 10);
	ck_assert_int_eq(cache_read(c, ids[3], "blob", 100000, &d, &n, NULL), 0);
	ck_assert_int_eq(n, 3000);
	free(d);
	cache_close(c);
}
END_TEST

/* Several processes share one cache (a Slurm node's jobs share its data
 * dir): opening it removes the staging and trash dirs of processes that
 * are gone, never those of one still compiling. */
START_TEST(cache_open_keeps_a_live_processs_staging)
{
	char root[128], live[256], dead[256], trash[256];
	struct cache *c;
	pid_t gone = fork();

	ck_assert_int_ge(gone, 0);
	if (gone == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(gone, NULL, 0), gone);
	snprintf(root, sizeof root, "%s/shared-cache", data_dir);
	ck_assert_int_eq(mkdir(root, 0755), 0);
	snprintf(live, sizeof live, "%s/.stage-%ld-1-1", root, (long)getppid());
	snprintf(dead, sizeof dead, "%s/.stage-%ld-1-1", root, (long)gone);
	snprintf(trash, sizeof trash, "%s/.trash-%ld-1", root, (long)gone);
	ck_assert_int_eq(mkdir(live, 0755), 0);
	ck_assert_int_eq(mkdir(dead, 0755), 0);
	ck_assert_int_eq(mkdir(trash, 0755), 0);
	ck_assert_int_eq(cache_open(root, 10000, &c, NULL), 0);
	ck_assert_int_eq(access(live, F_OK), 0);
	ck_assert_int_ne(access(dead, F_OK), 0);
	ck_assert_int_ne(access(trash, F_OK), 0);
	cache_close(c);
}
END_TEST

/* A compiler that cannot open says why and leaves nothing behind (its cache
 * and its own jail are closed again; LeakSanitizer checks under make asan). */
START_TEST(a_bad_timeout_knob_refuses_to_open_naming_it)
{
	struct compile_config cfg = {.data_dir = data_dir, .default_arch = "sm_90"};
	struct compiler *c = NULL;
	struct kf_err err = {0};
	setenv("KFORGE_COMPILE_TIMEOUT_MS", "soon", 1);
	int rc = compile_open(&cfg, &c, &err);
	unsetenv("KFORGE_COMPILE_TIMEOUT_MS");
	ck_assert_int_eq(rc, KF_EINVAL);
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(err.msg, "KFORGE_COMPILE_TIMEOUT_MS='soon'"), "%s", err.msg);
}
END_TEST

static Suite *compile_suite(void)
{
	Suite *s = suite_create("compile");
	TCase *tc = tcase_create("compile");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, compile_reports_kernels_and_resources);
	tcase_add_test(tc, a_bad_timeout_knob_refuses_to_open_naming_it);
	tcase_add_test(tc, syntax_error_gives_diagnostic_at_the_line);
	tcase_add_test(tc, ptxas_shared_memory_overflow_is_a_structured_error);
	tcase_add_test(tc, spilling_kernel_gets_a_warning);
	tcase_add_test(tc, constant_and_shared_memory_are_reported);
	tcase_add_test(tc, secret_includes_leak_no_byte);
	tcase_add_test(tc, endless_compile_times_out_and_the_next_one_works);
	tcase_add_test(tc, output_flood_is_capped);
	tcase_add_test(tc, twenty_concurrent_compiles_are_all_correct);
	tcase_add_loop_test(tc, refused_flag_is_rejected_with_a_reason, 0,
			    sizeof refused_flags / sizeof refused_flags[0]);
	tcase_add_test(tc, allowed_flags_pass_and_compile);
	tcase_add_test(tc, ptxas_options_past_the_argument_cap_are_too_big);
	tcase_add_test(tc, ptxas_options_at_the_argument_cap_are_accepted);
	tcase_add_test(tc, bad_arch_and_source_are_rejected);
	tcase_add_test(tc, sm_90a_compiles_with_its_own_gencode);
	tcase_add_test(tc, cache_hit_returns_the_same_artifact);
	tcase_add_test(tc, ptx_is_a_resource_link_not_inline);
	tcase_add_test(tc, sass_summary_or_a_reason_why_not);
	tcase_add_test(tc, nvcc_backend_gives_the_same_kernels);
	tcase_add_test(tc, artifact_lookup_errors_name_the_problem);
	tcase_add_test(tc, cancelled_compile_stops);
	tcase_add_test(tc, unusable_sandbox_refuses_compiles);
	tcase_add_test(tc, sandbox_none_is_reported_in_results);
	tcase_add_test(tc, split_flags_splits_on_blanks);
	tcase_add_test(tc, split_flags_caps_each_flag_length);
	tcase_add_test(tc, memory_limit_fails_a_huge_device_array_and_names_it);
	suite_add_tcase(s, tc);
	TCase *tf = tcase_create("flags");
	tcase_add_test(tf, flag_values_past_the_length_cap_are_refused);
	tcase_add_test(tf, flag_values_at_the_length_cap_are_passed_whole);
	suite_add_tcase(s, tf);
	TCase *tq = tcase_create("queue");
	tcase_set_timeout(tq, 30);
	tcase_add_test(tq, queue_serves_clients_round_robin);
	tcase_add_test(tq, queue_caps_one_client_and_lets_others_through);
	tcase_add_test(tq, queue_cancel_leaves_the_line);
	suite_add_tcase(s, tq);
	TCase *tk = tcase_create("cache");
	tcase_add_checked_fixture(tk, setup, teardown);
	tcase_set_timeout(tk, 30);
	tcase_add_test(tk, sha256_matches_the_fips_vectors);
	tcase_add_test(tk, cache_evicts_least_recently_used_over_the_cap);
	tcase_add_test(tk, cache_open_keeps_a_live_processs_staging);
	suite_add_tcase(s, tk);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(compile_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
