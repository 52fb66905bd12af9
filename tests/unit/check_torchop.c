/* check_torchop: the torch-op generator and export without a GPU or torch:
 * the C++ binding, launcher and Python package generated for a spec (the
 * skill's qwen3 RMSNorm and specs with inout tensors, int arguments and
 * several outputs), the errors for specs an op cannot come from, compiler
 * diagnostics mapped to the kernel source's line, the refusal of runs that
 * are not passing checks (directly and through build_torch_op), and the
 * kernel-builder project tree with its reference data. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "kernels/op.h"
#include "sandbox/history/history.h"
#include "sandbox/torchop/torchop.h"
#include "server/app.h"
#include "server/mcp/mcp.h"
#include "server/mcp/tools.h"
#include "tests/unit/fixture.h"

/* The skill's qwen3 RMSNorm example with its source inlined. */
static json_t *qwen3_spec(void)
{
	char p[PATH_MAX];
	json_t *j = json_load_file(
		fixture_src_path(p, sizeof p, "skill/examples/qwen3-rmsnorm/check.json"), 0, NULL);
	ck_assert_ptr_nonnull(j);
	char *cu = fixture_src_read("skill/examples/qwen3-rmsnorm/fast.cu", NULL);
	json_object_del(j, "source_file");
	json_object_set_new(j, "source", json_string(cu));
	free(cu);
	return j;
}

static struct spec *parse(const json_t *j)
{
	json_t *x = NULL;
	struct spec *s = NULL;
	struct kf_err err = {0};
	ck_assert_msg(spec_expand_op(j, op_find, &x, &err) == 0, "%s", err.msg);
	ck_assert_msg(spec_parse(x, NULL, op_find, &s, &err) == 0, "%s", err.msg);
	json_decref(x);
	return s;
}

static struct spec *parse_text(const char *text)
{
	json_t *j = json_loads(text, 0, NULL);
	ck_assert_msg(j != NULL, "bad test JSON");
	struct spec *s = parse(j);
	json_decref(j);
	return s;
}

#define HAS(hay, needle) ck_assert_msg(strstr((hay), (needle)) != NULL, "missing: %s", needle)

/* HAS over the compact JSON of j (the dump is freed). */
static void has_json(const json_t *j, const char *needle)
{
	char *text = json_dumps(j, 0);
	int found = text && strstr(text, needle) != NULL;
	free(text);
	ck_assert_msg(found, "missing: %s", needle);
}

START_TEST(qwen3_rmsnorm_binding_checks_allocates_and_launches_on_the_stream)
{
	json_t *j = qwen3_spec();
	struct spec *s = parse(j);
	struct torchop_gen g;
	struct kf_err err = {0};
	ck_assert_msg(torchop_generate(s, NULL, "kforge_t", TORCHOP_STANDALONE, &g, &err) == 0,
		      "%s", err.msg);
	ck_assert_str_eq(g.name, "rmsnorm_fast");
	ck_assert_str_eq(g.schema, "rmsnorm_fast(Tensor x, Tensor w, float eps=1e-06) -> Tensor");
	HAS(g.binding_cpp, "TORCH_LIBRARY(kforge_t, m)");
	HAS(g.binding_cpp,
	    "m.def(\"rmsnorm_fast(Tensor x, Tensor w, float eps=1e-06) -> Tensor\")");
	HAS(g.binding_cpp, "kf_check_tensor(x, \"x\", at::kBFloat16, 2, \"[T, D]\", dev);");
	HAS(g.binding_cpp, "kf_check_tensor(w, \"w\", at::kBFloat16, 1, \"[D]\", dev);");
	HAS(g.binding_cpp, "const int64_t v_T = x.size(0);");
	HAS(g.binding_cpp, "TORCH_CHECK(w.size(0) == ((v_D))");
	HAS(g.binding_cpp, "at::Tensor y = at::empty(at::IntArrayRef{(v_T), (v_D)}");
	HAS(g.binding_cpp, "c10::cuda::getCurrentCUDAStream().stream()");
	HAS(g.binding_cpp, "must be contiguous");
	/* the launcher: the spec's grid, block and argument order */
	HAS(g.kernel_cu, "const int64_t g[3] = {(v_T), 1, 1};");
	HAS(g.kernel_cu, "const int64_t bl[3] = {(256LL), 1, 1};");
	HAS(g.kernel_cu, "void *a0 = ptrs[2];"); /* y is tensor 2 of the op template */
	HAS(g.kernel_cu, "float a5 = static_cast<float>((scalars[0]));");
	HAS(g.kernel_cu, "cudaLaunchKernel(reinterpret_cast<const void *>(rmsnorm_fast)");
	/* the source is in the kernel file unchanged, where the map says */
	HAS(g.kernel_cu, s->source);
	ck_assert_ptr_eq(strstr(g.kernel_cu, "__launch_bounds__(256)"),
			 strstr(g.kernel_cu, s->source) +
				 (strstr(s->source, "__launch_bounds__") - s->source));
	/* the fake: output shape from the input shapes */
	HAS(g.init_py, "@torch.library.register_fake(QUALNAME)");
	HAS(g.init_py, "v_T = x.shape[0]");
	HAS(g.init_py, "return (torch.empty(((v_T), (v_D)), dtype=torch.bfloat16, device=dev))");
	HAS(g.init_py, "op = torch.ops.kforge_t.rmsnorm_fast");
	ck_assert_int_eq(json_array_size(json_object_get(g.call, "args")), 3);
	torchop_gen_fini(&g);
	spec_free(s);
	json_decref(j);
}
END_TEST

static const char *INOUT_SPEC =
	"{\"source\": \"extern \\\"C\\\" __global__ void k(float *a, float *o1, double *o2, "
	"const float *x, long n, int m, float s) {}\","
	" \"sizes\": [{\"N\": 100, \"M\": 7}],"
	" \"tensors\": {\"a\": {\"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"inout\"},"
	"   \"x\": {\"dtype\": \"f32\", \"shape\": [\"N * 2\"], \"role\": \"input\"},"
	"   \"o1\": {\"dtype\": \"f32\", \"shape\": [\"M\", \"ceil_div(N, 4)\"], \"role\": \"output\"},"
	"   \"o2\": {\"dtype\": \"f64\", \"shape\": [], \"role\": \"output\"}},"
	" \"scalars\": {\"s\": {\"dtype\": \"f32\", \"value\": 2}},"
	" \"launch\": [{\"kernel\": \"k\", \"grid\": [\"ceil_div(N, 128)\", \"M\"], \"block\": [128],"
	"   \"when\": \"N > 0 && M > 0\", \"args\": [\"a\", \"o1\", \"o2\", \"x\", \"N:i64\", \"M\", "
	"\"s\"]}],"
	" \"reference\": {\"torch\": \"a\"}}";

START_TEST(inout_int_argument_and_several_outputs)
{
	struct spec *s = parse_text(INOUT_SPEC);
	struct torchop_gen g;
	struct kf_err err = {0};
	ck_assert_msg(torchop_generate(s, "mix", "kforge_t", TORCHOP_STANDALONE, &g, &err) == 0,
		      "%s", err.msg);
	/* M names no input dimension: it becomes an argument; "2" reads as a float */
	ck_assert_str_eq(g.schema,
			 "mix(Tensor(a!) a, Tensor x, int M, float s=2.0) -> (Tensor, Tensor)");
	HAS(g.binding_cpp, "std::tuple<at::Tensor, at::Tensor> kf_op_mix(const at::Tensor &a, "
			   "const at::Tensor &x, int64_t M_, double s)");
	HAS(g.binding_cpp, "TORCH_CHECK(x.size(0) == ((v_N * 2LL))");
	HAS(g.binding_cpp,
	    "at::Tensor o1 = at::empty(at::IntArrayRef{(v_M), (kf_ceil_div(v_N, 4LL))}");
	HAS(g.binding_cpp, "at::Tensor o2 = at::empty(at::IntArrayRef{}");
	HAS(g.kernel_cu, "if ((v_N > 0LL && v_M > 0LL))");
	HAS(g.kernel_cu, "int64_t a4 = static_cast<int64_t>(w4);"); /* N:i64 */
	HAS(g.kernel_cu, "int32_t a5 = static_cast<int32_t>(w5);"); /* M */
	HAS(g.kernel_cu, "does not fit in int32");
	HAS(g.init_py, "v_M = M");
	HAS(g.init_py, "_kf_ceil_div(v_N, 4)");
	HAS(g.init_py, "torch.empty((), dtype=torch.float64, device=dev),)");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(g.call, "mutated"), 0)),
			 "a");
	torchop_gen_fini(&g);
	/* kernel-builder's registration */
	ck_assert(torchop_generate(s, "mix", NULL, TORCHOP_KERNEL_BUILDER, &g, &err) == 0);
	HAS(g.binding_cpp, "#include \"registration.h\"");
	HAS(g.binding_cpp, "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops)");
	HAS(g.binding_cpp, "REGISTER_EXTENSION(TORCH_EXTENSION_NAME)");
	HAS(g.init_py, "from ._ops import add_op_namespace_prefix, ops");
	torchop_gen_fini(&g);
	spec_free(s);
}
END_TEST

START_TEST(specs_an_op_cannot_come_from_are_refused)
{
	struct spec *s = parse_text(INOUT_SPEC);
	struct torchop_gen g;
	struct kf_err err = {0};
	ck_assert_int_eq(torchop_generate(s, "not-a-name", "ns", TORCHOP_STANDALONE, &g, &err),
			 KF_EINVAL);
	HAS(err.msg, "name: 'not-a-name' is not an identifier");
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(torchop_generate(s, NULL, "bad ns", TORCHOP_STANDALONE, &g, &err),
			 KF_EINVAL);
	HAS(err.msg, "namespace");
	spec_free(s);
	/* a Python keyword cannot be a parameter */
	s = parse_text("{\"source\": \"extern \\\"C\\\" __global__ void k(float *y, const float "
		       "*in) {}\", \"sizes\": [{\"N\": 4}], \"tensors\": {\"in\": {\"dtype\": "
		       "\"f32\", \"shape\": [\"N\"], \"role\": \"input\"}, \"y\": {\"dtype\": "
		       "\"f32\", \"shape\": [\"N\"], \"role\": \"output\"}},"
		       " \"launch\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1], "
		       "\"args\": [\"y\", \"in\"]}]}");
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(torchop_generate(s, NULL, "ns", TORCHOP_STANDALONE, &g, &err), KF_EINVAL);
	HAS(err.msg, "tensors.in: 'in' is a C++ or Python keyword");
	spec_free(s);
}
END_TEST

START_TEST(diagnostics_name_the_generated_line_and_the_source_line)
{
	json_t *j = qwen3_spec();
	struct spec *s = parse(j);
	struct torchop_gen g;
	struct kf_err err = {0};
	ck_assert(torchop_generate(s, NULL, "kforge_t", TORCHOP_STANDALONE, &g, &err) == 0);
	size_t gen = g.source_first_line + 27; /* source line 28 */
	size_t launcher = g.source_first_line + g.source_lines + 5;
	char text[1024];
	snprintf(text, sizeof text,
		 "op_kernel.cu(%zu): error: identifier \"undefined_name_here\" is undefined\n"
		 "In file included from op_binding.cpp:3:\n"
		 "op_kernel.cu(%zu): warning: unused variable\n"
		 "op_binding.cpp:41:9: error: 'foo' was not declared in this scope\n"
		 "1 error detected in the compilation of \"op_kernel.cu\".\n",
		 gen, launcher);
	json_t *d = torchop_diagnostics(&g, "op_kernel.cu", text);
	ck_assert_int_eq(json_array_size(d), 3);
	json_t *e0 = json_array_get(d, 0), *e1 = json_array_get(d, 1), *e2 = json_array_get(d, 2);
	ck_assert_str_eq(json_string_value(json_object_get(e0, "file")), "op_kernel.cu");
	ck_assert_int_eq(json_integer_value(json_object_get(e0, "line")), (json_int_t)gen);
	ck_assert_int_eq(json_integer_value(json_object_get(e0, "source_line")), 28);
	ck_assert_str_eq(json_string_value(json_object_get(e0, "severity")), "error");
	HAS(json_string_value(json_object_get(e0, "message")), "undefined_name_here");
	/* launcher code has no source line */
	ck_assert_ptr_null(json_object_get(e1, "source_line"));
	ck_assert_str_eq(json_string_value(json_object_get(e1, "severity")), "warning");
	ck_assert_str_eq(json_string_value(json_object_get(e2, "file")), "op_binding.cpp");
	ck_assert_int_eq(json_integer_value(json_object_get(e2, "line")), 41);
	ck_assert_ptr_null(json_object_get(e2, "source_line"));
	ck_assert_int_eq(torchop_source_line(&g, g.source_first_line), 1);
	ck_assert_int_eq(torchop_source_line(&g, g.source_first_line - 1), 0);
	json_decref(d);
	torchop_gen_fini(&g);
	spec_free(s);
	json_decref(j);
}
END_TEST

START_TEST(only_a_passing_check_run_is_usable)
{
	struct kf_err err = {0};
	json_t *ok = json_pack("{s:s, s:b}", "summary", "passed: 4 sizes", "passed", 1);
	json_t *bad =
		json_pack("{s:s, s:b}", "summary", "FAILED at T=7 trial 0: mismatch", "passed", 0);
	ck_assert_int_eq(torchop_run_usable("r1", "check", "ok", ok, &err), 0);
	ck_assert_int_eq(torchop_run_usable("r1", "bench", "ok", ok, &err), KF_EINVAL);
	HAS(err.msg, "run r1 is a bench run");
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(torchop_run_usable("r2", "check", "failed", bad, &err), KF_EINVAL);
	HAS(err.msg, "run r2 did not pass its check (FAILED at T=7 trial 0: mismatch)");
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(torchop_run_usable("r3", "check", "error", NULL, &err), KF_EINVAL);
	HAS(err.msg, "did not pass");
	json_decref(ok);
	json_decref(bad);
}
END_TEST

/* ---- through the tool, with a history -------------------------------------- */

static struct app *app;
static char dir[PATH_MAX];

static void app_setup(void)
{
	fixture_dir_new(dir, sizeof dir, "torchop");
	app = fixture_app_open(dir);
}

static void app_teardown(void)
{
	app_close(app);
	fixture_dir_remove(dir);
}

static void add_run(enum history_kind kind, enum history_status st, const json_t *spec,
		    const json_t *result, char id[HISTORY_ID_BYTES])
{
	struct history_run r = {.kind = kind,
				.status = st,
				.kernels = "rmsnorm_fast",
				.summary = "x",
				.spec = (json_t *)spec,
				.result = (json_t *)result};
	struct kf_err err = {0};
	ck_assert_msg(history_add(app->history, &r, &err) == 0, "%s", err.msg);
	memcpy(id, r.id, HISTORY_ID_BYTES);
}

static json_t *call(json_t *args, int *is_error)
{
	json_t *res = NULL;
	struct kf_err err = {0};
	ck_assert_int_eq(mcp_tool_call(app, "build_torch_op", args, &res, is_error, &err), 0);
	json_decref(args);
	return res;
}

START_TEST(build_torch_op_refuses_runs_that_did_not_pass)
{
	json_t *spec = qwen3_spec();
	json_t *failed = json_pack("{s:s, s:b}", "summary", "FAILED at T=128 trial 1: mismatch",
				   "passed", 0);
	json_t *passed = json_pack("{s:s, s:b}", "summary", "passed", "passed", 1);
	char fid[HISTORY_ID_BYTES], bid[HISTORY_ID_BYTES], pid[HISTORY_ID_BYTES];
	add_run(HISTORY_CHECK, HISTORY_FAILED, spec, failed, fid);
	add_run(HISTORY_BENCH, HISTORY_OK, spec, passed, bid);
	add_run(HISTORY_CHECK, HISTORY_OK, spec, passed, pid);
	int is_error = 0;
	json_t *res = call(json_pack("{s:s}", "run", fid), &is_error);
	ck_assert_int_eq(is_error, 1);
	has_json(res, "did not pass its check (FAILED at T=128 trial 1: mismatch)");
	json_decref(res);
	res = call(json_pack("{s:s}", "run", bid), &is_error);
	ck_assert_int_eq(is_error, 1);
	has_json(res, "is a bench run");
	json_decref(res);
	res = call(json_pack("{s:s}", "run", "r0000000000000000"), &is_error);
	ck_assert_int_eq(is_error, 1);
	json_decref(res);
	res = call(json_pack("{}"), &is_error);
	ck_assert_int_eq(is_error, 1);
	has_json(res, "give either run");
	json_decref(res);
	/* a passing run gets as far as the GPU, which this host lacks */
	res = call(json_pack("{s:s}", "run", pid), &is_error);
	ck_assert_int_eq(is_error, 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res, "error"), "code")),
			 "no_gpu");
	json_decref(res);
	json_decref(failed);
	json_decref(passed);
	json_decref(spec);
}
END_TEST

static int exists(const char *root, const char *rel)
{
	char p[8400];
	struct stat st;
	snprintf(p, sizeof p, "%s/%s", root, rel);
	return stat(p, &st) == 0;
}

START_TEST(export_writes_a_kernel_builder_project)
{
	json_t *spec = qwen3_spec();
	json_t *rep =
		json_pack("{s:s, s:s, s:{s:s, s:b, s:[{s:{s:i, s:i}, s:b, s:b}]}, s:n}", "run_id",
			  "r0testrun", "device", "NVIDIA H200", "check", "summary",
			  "passed: 4 sizes incl. odd size T=4095, D=4097", "passed", 1, "sizes",
			  "sizes", "T", 128, "D", 4096, "odd_size", 0, "passed", 1, "bench");
	char proj[4200], p[4300];
	struct kf_err err = {0};
	snprintf(proj, sizeof proj, "%s/proj", dir);
	ck_assert_msg(torchop_export(&app->check, spec, NULL, rep, proj, 0, &err) == 0, "%s",
		      err.msg);
	const char *files[] = {"build.toml",
			       "flake.nix",
			       "setup.py",
			       "README.md",
			       "compat/registration.h",
			       "rmsnorm_fast_cuda/rmsnorm_fast.cu",
			       "torch-ext/torch_binding.cpp",
			       "torch-ext/kforge_rmsnorm_fast/__init__.py",
			       "torch-ext/kforge_rmsnorm_fast/_setuptools_ops.py",
			       "tests/test_op.py",
			       "tests/data/case.json",
			       "tests/data/in.x.bin",
			       "tests/data/in.w.bin",
			       "tests/data/want.y.f32.bin",
			       "benchmarks/benchmark.py"};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		ck_assert_msg(exists(proj, files[i]), "missing %s", files[i]);
	/* the reference data at the smallest size (T=128, D=4096) */
	struct stat st;
	snprintf(p, sizeof p, "%s/tests/data/want.y.f32.bin", proj);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_int_eq(st.st_size, 128 * 4096 * 4);
	snprintf(p, sizeof p, "%s/tests/data/case.json", proj);
	json_t *c = json_load_file(p, 0, NULL);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(c, "sizes"), "T")),
			 128);
	ck_assert(json_number_value(json_object_get(
			  json_array_get(json_object_get(c, "outputs"), 0), "atol")) > 0);
	json_decref(c);
	snprintf(p, sizeof p, "%s/setup.py", proj);
	char *t = fixture_read(p, NULL);
	HAS(t, "\"kforge_rmsnorm_fast._kforge_rmsnorm_fast_C\"");
	HAS(t, "compute_90,code=sm_90");
	ck_assert_ptr_null(strstr(t, "__PKG__"));
	free(t);
	snprintf(p, sizeof p, "%s/build.toml", proj);
	t = fixture_read(p, NULL);
	HAS(t, "cuda-capabilities = [\"9.0\"]");
	HAS(t, "src = [\"rmsnorm_fast_cuda/rmsnorm_fast.cu\"]");
	free(t);
	snprintf(p, sizeof p, "%s/README.md", proj);
	t = fixture_read(p, NULL);
	HAS(t, "kforge run r0testrun, NVIDIA H200");
	HAS(t, "passed: 4 sizes incl. odd size");
	HAS(t, "No benchmark of this source");
	free(t);
	/* not into a non-empty folder unless forced */
	memset(&err, 0, sizeof err);
	ck_assert_int_eq(torchop_export(&app->check, spec, NULL, rep, proj, 0, &err), KF_EPERM);
	HAS(err.msg, "is not empty");
	ck_assert_int_eq(torchop_export(&app->check, spec, NULL, rep, proj, 1, &err), 0);
	json_decref(rep);
	json_decref(spec);
}
END_TEST

/* The real build path without torch: a stand-in python3 answers the probe
 * with header folders that exist, so nvcc meets the kernel file with a bad
 * line 28 and the answer maps the error back to it. */
START_TEST(build_error_is_reported_at_the_generated_and_the_source_line)
{
	char bin[4200], inc[4200], path[8600], py[4300];
	snprintf(bin, sizeof bin, "%s/fakebin", dir);
	snprintf(inc, sizeof inc, "%s/fakeinc", dir);
	ck_assert_int_eq(mkdir(bin, 0700), 0);
	ck_assert_int_eq(mkdir(inc, 0700), 0);
	snprintf(py, sizeof py, "%s/python3", bin);
	FILE *f = fopen(py, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f,
		"#!/bin/sh\necho '{\"python\": \"/bin/sh\", \"version\": \"0.0-test\", "
		"\"abi\": 1, \"include\": [\"%s\", \"%s\"], \"lib\": \"%s\", \"paths\": "
		"[\"%s\"]}'\n",
		inc, inc, inc, inc);
	fclose(f);
	ck_assert_int_eq(chmod(py, 0700), 0);
	snprintf(path, sizeof path, "%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/usr/bin");
	setenv("PATH", path, 1);

	json_t *spec = qwen3_spec();
	const char *src = json_string_value(json_object_get(spec, "source"));
	/* line 28 of fast.cu is blank: replace it with an error */
	char *bad = strdup(src), *p = bad;
	for (int line = 1; line < 28; p++)
		line += *p == '\n';
	ck_assert(*p == '\n');
	size_t n = strlen(bad) + 64;
	char *fixed = malloc(n);
	snprintf(fixed, n, "%.*s\tint broken = undefined_name_here;%s", (int)(p - bad), bad, p);
	json_object_set_new(spec, "source", json_string(fixed));
	struct spec *s = parse(spec);
	struct torchop_gen g;
	struct kf_err err = {0};
	ck_assert(torchop_generate(s, NULL, "kforge_t", TORCHOP_STANDALONE, &g, &err) == 0);

	struct torchop_opts o = {.no_verify = 1};
	json_t *out = NULL;
	int gpu = -1;
	int rc = torchop_build_verify(&app->check, spec, &o, &out, &gpu, &err);
	if (app->cc == NULL) { /* no nvcc on this host: nothing to build with */
		ck_assert_int_eq(rc, KF_ESANDBOX);
	} else {
		ck_assert_msg(rc == KF_ECOMPILE, "rc %d: %s", rc, err.msg);
		json_t *d, *hit = NULL;
		size_t i;
		json_array_foreach(json_object_get(out, "diagnostics"), i, d)
			if (json_integer_value(json_object_get(d, "source_line")) == 28 && !hit)
				hit = d;
		ck_assert_msg(hit != NULL, "%s", json_dumps(out, 0));
		ck_assert_str_eq(json_string_value(json_object_get(hit, "file")), "op_kernel.cu");
		ck_assert_int_eq(json_integer_value(json_object_get(hit, "line")),
				 (json_int_t)(g.source_first_line + 27));
		HAS(json_string_value(json_object_get(hit, "message")), "undefined_name_here");
		ck_assert(
			json_is_false(json_object_get(json_object_get(out, "build"), "cache_hit")));
		HAS(json_string_value(json_object_get(out, "summary")), "did not build");
	}
	json_decref(out);
	torchop_gen_fini(&g);
	spec_free(s);
	free(fixed);
	free(bad);
	json_decref(spec);
}
END_TEST

static Suite *torchop_suite(void)
{
	Suite *s = suite_create("torchop");
	TCase *t = tcase_create("generate");
	tcase_add_test(t, qwen3_rmsnorm_binding_checks_allocates_and_launches_on_the_stream);
	tcase_add_test(t, inout_int_argument_and_several_outputs);
	tcase_add_test(t, specs_an_op_cannot_come_from_are_refused);
	tcase_add_test(t, diagnostics_name_the_generated_line_and_the_source_line);
	tcase_add_test(t, only_a_passing_check_run_is_usable);
	suite_add_tcase(s, t);
	t = tcase_create("tool_and_export");
	tcase_add_checked_fixture(t, app_setup, app_teardown);
	tcase_set_timeout(t, 180);
	tcase_add_test(t, build_torch_op_refuses_runs_that_did_not_pass);
	tcase_add_test(t, export_writes_a_kernel_builder_project);
	tcase_add_test(t, build_error_is_reported_at_the_generated_and_the_source_line);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(torchop_suite());
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
