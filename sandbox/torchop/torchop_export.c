/* torchop_export: a kernel-builder project for a checked kernel. The
 * binding and Python package are the build_torch_op sources in
 * kernel-builder's flavor (TORCH_LIBRARY_EXPAND, REGISTER_EXTENSION, _ops);
 * the tests compare with reference outputs kforge computes now from the
 * spec's reference, so they need only torch on the machine that runs them.
 * The test, benchmark and setup.py templates are embedded from
 * sandbox/torchop/export/ with __PKG__, __NAME__, __EXT__ and __ARCH__
 * replaced. */
#include "sandbox/torchop/torchop.h"
#include "sandbox/torchop/torchop_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/embed.h"
#include "kernels/op.h"
#include "sandbox/compile/cache.h"

EMBED_FILE(kf_torchop_test, "sandbox/torchop/export/test_op.py");
EMBED_FILE(kf_torchop_bench, "sandbox/torchop/export/benchmark.py");
EMBED_FILE(kf_torchop_setup, "sandbox/torchop/export/setup.py");

/* The test data's fixed seed: the same project bytes every export. */
#define EXPORT_SEED 0x6b666f7267650001ull

struct names {
	const char *pkg, *name, *ext, *arch;
};

/* Writes template [start, end) to dir/file with the placeholders replaced. */
static int write_template(const char *dir, const char *file, const char *start, const char *end,
			  const struct names *n, struct kf_err *err)
{
	const char *keys[][2] = {{"__PKG__", n->pkg},
				 {"__NAME__", n->name},
				 {"__EXT__", n->ext},
				 {"__ARCH__", n->arch}};
	struct torchop_sb b = {0};
	for (const char *p = start; p < end;) {
		size_t k;
		for (k = 0; k < 4; k++) {
			size_t l = strlen(keys[k][0]);
			if ((size_t)(end - p) >= l && memcmp(p, keys[k][0], l) == 0) {
				torchop_sb_printf(&b, "%s", keys[k][1]);
				p += l;
				break;
			}
		}
		if (k == 4)
			torchop_sb_printf(&b, "%c", *p++);
	}
	char *text = torchop_sb_take(&b);
	if (!text)
		return kf_err_set(err, KF_ETOOBIG, "%s: the generated file is too large", file);
	int rc = torchop_write_file(dir, file, text, strlen(text), err);
	free(text);
	return rc;
}

static int dir_ready(const char *dir, int force, struct kf_err *err)
{
	DIR *d = opendir(dir);
	if (!d) {
		if (errno != ENOENT)
			return kf_err_set(err, KF_EIO, "%s: %s", dir, strerror(errno));
		if (mkdir(dir, 0755))
			return kf_err_set(err, KF_EIO, "cannot create %s: %s", dir,
					  strerror(errno));
		return 0;
	}
	struct dirent *e;
	int empty = 1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = 0;
	closedir(d);
	if (!empty && !force)
		return kf_err_set(err, KF_EPERM,
				  "%s is not empty: choose a new folder or pass --force to write "
				  "into it",
				  dir);
	return 0;
}

static int sub_dir(const char *dir, const char *sub, char *out, size_t cap, struct kf_err *err)
{
	snprintf(out, cap, "%s/%s", dir, sub);
	if (mkdir(out, 0755) && errno != EEXIST)
		return kf_err_set(err, KF_EIO, "cannot create %s: %s", out, strerror(errno));
	return 0;
}

/* The spec's size row with the fewest tensor bytes: the tests' data. */
static size_t small_row(const struct spec *s)
{
	size_t best = 0;
	uint64_t best_bytes = UINT64_MAX;
	for (size_t r = 0; r < s->sizes_len; r++) {
		struct spec_bound b;
		uint64_t n = 0;
		if (spec_bind(s, &s->sizes[r * s->vars_len], NULL, "sizes", &b, NULL))
			continue;
		for (size_t t = 0; t < s->tensors_len; t++)
			n += b.bytes[t] +
			     (s->tensors[t].role != SPEC_ROLE_INPUT ? b.elems[t] * 4 : 0);
		if (n < best_bytes) {
			best_bytes = n;
			best = r;
		}
	}
	return best;
}

static json_t *shape_json(const struct spec *s, const struct spec_bound *b, size_t t)
{
	json_t *a = json_array();
	for (size_t d = 0; d < s->tensors[t].rank; d++)
		json_array_append_new(a, json_integer(b->dims[t][d]));
	return a;
}

/* The reference outputs (float64, new, per tensor) for vals and EXPORT_SEED:
 * the built-in op now, or the torch expression in a sandboxed python. */
static int reference(struct check_env *env, const struct spec *s, const int64_t *vals,
		     const struct spec_bound *b, double **want, struct kf_err *err)
{
	uint64_t seed = EXPORT_SEED;
	char tmp[PATH_MAX] = "";
	int rc;
	if (s->ref.kind == SPEC_REF_OP)
		return check_reference_want(s, "", "ref", vals, b, 0, seed, want, err);
	if ((rc = check_jobdir_new(env, s, tmp, sizeof tmp, err)))
		return rc;
	rc = check_torch_reference(env, s, tmp, vals, b, &seed, 1, NULL, NULL, err);
	if (!rc)
		rc = check_reference_want(s, tmp, "ref", vals, b, 0, seed, want, err);
	check_jobdir_remove(tmp);
	return rc;
}

static int write_outputs(const struct spec *s, const struct spec_bound *b, double **want,
			 const char *data, json_t *outs, struct kf_err *err)
{
	for (size_t t = 0; t < s->tensors_len; t++) {
		if (s->tensors[t].role == SPEC_ROLE_INPUT || !want[t])
			continue;
		float *f = malloc((b->elems[t] ? b->elems[t] : 1) * sizeof *f);
		if (!f)
			return kf_err_set(err, KF_ENOMEM, "out of memory for the test data");
		for (uint64_t i = 0; i < b->elems[t]; i++)
			f[i] = (float)want[t][i];
		char file[128];
		snprintf(file, sizeof file, "want.%s.f32.bin", s->tensors[t].name);
		int rc = torchop_write_file(data, file, (const char *)f, b->elems[t] * sizeof *f,
					    err);
		free(f);
		if (rc)
			return rc;
		double atol, rtol;
		if (s->tol_given) {
			atol = s->atol;
			rtol = s->rtol;
		} else
			spec_default_tolerance(s->tensors[t].dtype, &atol, &rtol);
		json_array_append_new(outs, json_pack("{s:s, s:s, s:o, s:s, s:f, s:f}", "name",
						      s->tensors[t].name, "dtype", "f32", "shape",
						      shape_json(s, b, t), "file", file, "atol",
						      atol, "rtol", rtol));
	}
	return 0;
}

/* tests/data: the inputs at the smallest size, the reference's outputs and
 * case.json (how to call the op, tolerances, benchmark shapes). */
static int write_data(struct check_env *env, const struct spec *s, const struct torchop_gen *g,
		      const char *data, struct kf_err *err)
{
	size_t row = small_row(s);
	const int64_t *vals = &s->sizes[row * s->vars_len];
	struct spec_bound b;
	double *want[SPEC_MAX_TENSORS] = {0};
	json_t *ins = json_array(), *outs = json_array(), *sizes = json_object(),
	       *tensors = json_array(), *bench = json_array();
	json_t *c = json_pack("{s:O, s:o, s:o, s:o, s:o, s:o}", "call", g->call, "sizes", sizes,
			      "inputs", ins, "outputs", outs, "tensors", tensors, "bench", bench);
	uint64_t total = 0;
	int rc = spec_bind(s, vals, NULL, "sizes", &b, err);
	for (size_t k = 0; k < s->vars_len; k++)
		json_object_set_new(sizes, s->vars[k], json_integer(vals[k]));
	for (size_t t = 0; !rc && t < s->tensors_len; t++)
		total += b.bytes[t] + b.elems[t] * 4;
	if (!rc && total > TORCHOP_EXPORT_DATA_MAX)
		rc = kf_err_set(
			err, KF_ETOOBIG,
			"the tests' data at the spec's smallest size would take %llu bytes, "
			"over %u: add a smaller entry to the spec's sizes",
			(unsigned long long)total, TORCHOP_EXPORT_DATA_MAX);
	for (size_t t = 0; !rc && t < s->tensors_len; t++) {
		const struct spec_tensor *T = &s->tensors[t];
		json_array_append_new(tensors, json_pack("{s:s, s:s, s:s}", "name", T->name,
							 "dtype", dtype_name(T->dtype), "role",
							 spec_role_name(T->role)));
		if (T->role == SPEC_ROLE_OUTPUT)
			continue;
		char *raw = malloc(b.bytes[t] ? b.bytes[t] : 1), file[128];
		if (!raw) {
			rc = kf_err_set(err, KF_ENOMEM, "out of memory for the test data");
			break;
		}
		int64_t im = 0;
		if (T->init_max_expr) {
			struct expr_env e = spec_env(s, vals);
			if (expr_eval(T->init_max_expr, &e, &im, NULL))
				im = 1;
		}
		spec_fill(T, t, EXPORT_SEED, im, raw, b.elems[t]);
		snprintf(file, sizeof file, "in.%s.bin", T->name);
		rc = torchop_write_file(data, file, raw, b.bytes[t], err);
		free(raw);
		json_array_append_new(ins, json_pack("{s:s, s:s, s:o, s:s}", "name", T->name,
						     "dtype", dtype_name(T->dtype), "shape",
						     shape_json(s, &b, t), "file", file));
	}
	const char *how =
		s->ref.kind == SPEC_REF_OP	? "built-in op (float64 CPU)"
		: s->ref.kind == SPEC_REF_TORCH ? "torch expression"
		: s->ref.kind == SPEC_REF_CUDA
			? "a CUDA source: kforge check compares with it; no stored outputs"
			: "none";
	json_object_set_new(c, "reference", json_string(how));
	if (!rc && (s->ref.kind == SPEC_REF_OP || s->ref.kind == SPEC_REF_TORCH) &&
	    !(rc = reference(env, s, vals, &b, want, err)))
		rc = write_outputs(s, &b, want, data, outs, err);
	for (size_t r = 0; !rc && r < s->sizes_len; r++) {
		struct spec_bound rb;
		json_t *shapes = json_object(), *sz = json_object();
		const int64_t *v = &s->sizes[r * s->vars_len];
		if (spec_bind(s, v, NULL, "sizes", &rb, NULL)) {
			json_decref(shapes);
			json_decref(sz);
			continue;
		}
		uint64_t bytes = 0;
		for (size_t t = 0; t < s->tensors_len; t++) {
			json_object_set_new(shapes, s->tensors[t].name, shape_json(s, &rb, t));
			bytes += rb.bytes[t];
		}
		for (size_t k = 0; k < s->vars_len; k++)
			json_object_set_new(sz, s->vars[k], json_integer(v[k]));
		json_array_append_new(bench, json_pack("{s:o, s:o, s:I}", "sizes", sz, "shapes",
						       shapes, "bytes", (json_int_t)bytes));
	}
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/case.json", data);
	if (!rc && json_dump_file(c, p, JSON_INDENT(1) | JSON_SORT_KEYS))
		rc = kf_err_set(err, KF_EIO, "cannot write %s", p);
	for (size_t t = 0; t < SPEC_MAX_TENSORS; t++)
		free(want[t]);
	json_decref(c);
	return rc;
}

static void readme_sizes(struct torchop_sb *b, const json_t *sizes)
{
	const char *k;
	json_t *v;
	const char *sep = "";
	json_object_foreach((json_t *)sizes, k, v) {
		torchop_sb_printf(b, "%s%s=%" JSON_INTEGER_FORMAT, sep, k, json_integer_value(v));
		sep = ", ";
	}
}

/* The run's results, as figures copied from the stored answers. */
static void readme_results(struct torchop_sb *b, const json_t *report)
{
	const json_t *check = json_object_get(report, "check");
	const json_t *bench = json_object_get(report, "bench");
	const char *dev = json_string_value(json_object_get(report, "device"));
	size_t i;
	json_t *row;
	torchop_sb_printf(b, "## Check (kforge run %s%s%s)\n\n%s\n\n",
			  json_string_value(json_object_get(report, "run_id")),
			  dev && *dev ? ", " : "", dev ? dev : "",
			  json_string_value(json_object_get(check, "summary")));
	torchop_sb_printf(b, "| sizes | passed |\n| --- | --- |\n");
	json_array_foreach(json_object_get(check, "sizes"), i, row) {
		torchop_sb_printf(b, "| ");
		readme_sizes(b, json_object_get(row, "sizes"));
		torchop_sb_printf(b, "%s | %s |\n",
				  json_is_true(json_object_get(row, "odd_size")) ? " (odd size)"
										 : "",
				  json_is_true(json_object_get(row, "passed")) ? "yes" : "no");
	}
	const json_t *res = json_object_get(bench, "result");
	if (!res) {
		torchop_sb_printf(b, "\n## Benchmark\n\nNo benchmark of this source is in the "
				     "history; run `kforge bench` on the spec.\n\n");
		return;
	}
	torchop_sb_printf(b, "\n## Benchmark (kforge run %s)\n\n%s\n\n",
			  json_string_value(json_object_get(bench, "run_id")),
			  json_string_value(json_object_get(res, "summary")));
	torchop_sb_printf(b, "| sizes | median us | baseline median us | speedup |\n"
			     "| --- | --- | --- | --- |\n");
	json_array_foreach(json_object_get(res, "sizes"), i, row) {
		const json_t *c = json_object_get(row, "candidate"),
			     *bl = json_object_get(row, "baseline"),
			     *sp = json_object_get(row, "speedup");
		torchop_sb_printf(b, "| ");
		readme_sizes(b, json_object_get(row, "sizes"));
		torchop_sb_printf(b, " | %.2f | ",
				  json_number_value(json_object_get(c, "median_us")));
		if (bl)
			torchop_sb_printf(b, "%.2f | %.3fx |\n",
					  json_number_value(json_object_get(bl, "median_us")),
					  json_number_value(json_object_get(sp, "value")));
		else
			torchop_sb_printf(b, "- | - |\n");
	}
	torchop_sb_printf(b, "\n");
}

static int write_readme(const char *dir, const struct torchop_gen *g, const struct names *n,
			const json_t *report, struct kf_err *err)
{
	struct torchop_sb b = {0};
	torchop_sb_printf(
		&b,
		"# %s\n\nA CUDA kernel checked and benchmarked with kforge, as a PyTorch op "
		"laid out for\nHugging Face's kernel-builder (Kernel Hub). Generated by `kforge "
		"export`.\n\n"
		"Op: `%s`\n\nThe op takes contiguous CUDA tensors of the spec's dtypes and raises "
		"a clear error\notherwise; it launches on the current CUDA stream, and its fake "
		"implementation\n(`register_fake`) lets torch.compile keep it in the graph.\n\n",
		n->pkg, g->schema);
	readme_results(&b, report);
	torchop_sb_printf(
		&b,
		"## Layout\n\n```\nbuild.toml, flake.nix          kernel-builder project\n"
		"%s_cuda/%s.cu        the checked kernel, unchanged, + its launcher\n"
		"torch-ext/torch_binding.cpp    TORCH_LIBRARY registration, argument checks\n"
		"torch-ext/%s/        Python package: the op, register_fake\n"
		"tests/test_op.py               reference, opcheck, torch.compile, CUDA graph\n"
		"tests/data/                    inputs and kforge's reference outputs\n"
		"benchmarks/benchmark.py        eager and CUDA-graph timings\n"
		"setup.py, compat/              plain setuptools build (no Nix)\n```\n\n"
		"## Build and test\n\nWith kernel-builder (Nix):\n\n```\n"
		"nix run .#build-and-copy -L\n```\n\n"
		"With setuptools and the installed torch:\n\n```\n"
		"python setup.py build_ext --inplace\npython tests/test_op.py      # or: "
		"pytest tests\npython benchmarks/benchmark.py\n```\n\n"
		"Use it:\n\n```python\nimport torch\nimport %s\nout = %s.%s(...)  # see the "
		"schema above\n```\n",
		n->name, n->name, n->pkg, n->pkg, n->pkg, n->name);
	char *text = torchop_sb_take(&b);
	if (!text)
		return kf_err_set(err, KF_ETOOBIG, "README.md: too large");
	int rc = torchop_write_file(dir, "README.md", text, strlen(text), err);
	free(text);
	return rc;
}

static int write_fixed(const char *dir, const char *pdir, const struct names *n, struct kf_err *err)
{
	char text[4096], compat[PATH_MAX];
	int rc = sub_dir(dir, "compat", compat, sizeof compat, err);
	if (rc)
		return rc;
	snprintf(text, sizeof text,
		 "# A kernel-builder project for %s (generated by kforge export).\n"
		 "[general]\nname = \"%s\"\nbackends = [\"cuda\"]\n\n"
		 "[torch]\nsrc = [\"torch-ext/torch_binding.cpp\"]\n\n"
		 "[kernel.%s]\nbackend = \"cuda\"\ndepends = [\"torch\"]\n"
		 "# The target kforge checked; kernel-builder adds PTX for newer GPUs.\n"
		 "cuda-capabilities = [\"%.*s.%s\"]\nsrc = [\"%s_cuda/%s.cu\"]\n",
		 n->pkg, n->pkg, n->name, (int)strlen(n->arch) - 1, n->arch,
		 n->arch + strlen(n->arch) - 1, n->name, n->name);
	if ((rc = torchop_write_file(dir, "build.toml", text, strlen(text), err)))
		return rc;
	snprintf(text, sizeof text,
		 "{\n  description = \"Flake for the %s kernel (generated by kforge export)\";\n\n"
		 "  inputs = {\n    kernel-builder.url = \"github:huggingface/kernel-builder\";\n"
		 "  };\n\n  outputs =\n    { self, kernel-builder }:\n"
		 "    kernel-builder.lib.genFlakeOutputs {\n      inherit self;\n"
		 "      path = ./.;\n    };\n}\n",
		 n->pkg);
	if ((rc = torchop_write_file(dir, "flake.nix", text, strlen(text), err)))
		return rc;
	snprintf(text, sizeof text,
		 "// kernel-builder generates this header in its builds; setup.py builds\n"
		 "// use this copy (same macros) from compat/.\n#pragma once\n\n"
		 "#include <Python.h>\n\n#define _CONCAT(A, B) A##B\n"
		 "#define CONCAT(A, B) _CONCAT(A, B)\n#define _STRINGIFY(A) #A\n"
		 "#define STRINGIFY(A) _STRINGIFY(A)\n\n"
		 "#define TORCH_LIBRARY_EXPAND(NAME, MODULE) TORCH_LIBRARY(NAME, MODULE)\n\n"
		 "#define REGISTER_EXTENSION(NAME)                                        \\\n"
		 "  PyMODINIT_FUNC CONCAT(PyInit_, NAME)() {                              \\\n"
		 "    static struct PyModuleDef module = {PyModuleDef_HEAD_INIT,          \\\n"
		 "                                        STRINGIFY(NAME), nullptr, 0,     \\\n"
		 "                                        nullptr};                        \\\n"
		 "    return PyModule_Create(&module);                                    \\\n"
		 "  }\n");
	if ((rc = torchop_write_file(compat, "registration.h", text, strlen(text), err)))
		return rc;
	snprintf(text, sizeof text,
		 "\"\"\"The op namespace when built with setup.py (kernel-builder generates\n"
		 "_ops.py instead).\"\"\"\nimport torch\n\nfrom . import %s  # noqa: F401  "
		 "registers the ops\n\nops = torch.ops.%s\n\n\n"
		 "def add_op_namespace_prefix(op_name: str) -> str:\n"
		 "    return \"%s::\" + op_name\n",
		 n->ext, n->ext, n->ext);
	return torchop_write_file(pdir, "_setuptools_ops.py", text, strlen(text), err);
}

int torchop_export(struct check_env *env, const json_t *spec, const char *name,
		   const json_t *report, const char *dir, int force, struct kf_err *err)
{
	json_t *x = NULL;
	struct spec *s = NULL;
	struct torchop_gen g = {0};
	struct spec_limits lim;
	char pkg[80], ext[96], arch[8], sub[PATH_MAX], tdir[PATH_MAX], pdir[PATH_MAX], file[160];
	spec_limits_default(&lim);
	int rc = spec_expand_op(spec, op_find, &x, err);
	if (!rc)
		rc = spec_parse(x, &lim, op_find, &s, err);
	if (!rc)
		rc = torchop_generate(s, name, NULL, TORCHOP_KERNEL_BUILDER, &g, err);
	if (rc)
		goto out;
	snprintf(pkg, sizeof pkg, "kforge_%s", g.name);
	snprintf(ext, sizeof ext, "_%s_C", pkg);
	snprintf(arch, sizeof arch, "%s", s->arch && strlen(s->arch) > 3 ? s->arch + 3 : "90");
	arch[strcspn(arch, "a")] = '\0'; /* sm_90a's kernel-builder capability is 9.0 */
	struct names n = {.pkg = pkg, .name = g.name, .ext = ext, .arch = arch};
	if ((rc = dir_ready(dir, force, err)))
		goto out;
	snprintf(file, sizeof file, "%s.cu", g.name);
	if ((rc = sub_dir(dir, "torch-ext", tdir, sizeof tdir, err)) ||
	    (rc = sub_dir(tdir, pkg, pdir, sizeof pdir, err)) ||
	    (rc = torchop_write_file(tdir, "torch_binding.cpp", g.binding_cpp,
				     strlen(g.binding_cpp), err)) ||
	    (rc = torchop_write_file(pdir, "__init__.py", g.init_py, strlen(g.init_py), err)) ||
	    (rc = write_fixed(dir, pdir, &n, err)))
		goto out;
	char cu[96];
	snprintf(cu, sizeof cu, "%s_cuda", g.name);
	if ((rc = sub_dir(dir, cu, sub, sizeof sub, err)) ||
	    (rc = torchop_write_file(sub, file, g.kernel_cu, strlen(g.kernel_cu), err)) ||
	    (rc = write_template(dir, "setup.py", kf_torchop_setup_start, kf_torchop_setup_end, &n,
				 err)) ||
	    (rc = sub_dir(dir, "benchmarks", sub, sizeof sub, err)) ||
	    (rc = write_template(sub, "benchmark.py", kf_torchop_bench_start, kf_torchop_bench_end,
				 &n, err)) ||
	    (rc = sub_dir(dir, "tests", sub, sizeof sub, err)) ||
	    (rc = write_template(sub, "test_op.py", kf_torchop_test_start, kf_torchop_test_end, &n,
				 err)) ||
	    (rc = sub_dir(sub, "data", tdir, sizeof tdir, err)) ||
	    (rc = write_data(env, s, &g, tdir, err)) ||
	    (rc = write_readme(dir, &g, &n, report, err)))
		goto out;
out:
	torchop_gen_fini(&g);
	spec_free(s);
	json_decref(x);
	return rc;
}
