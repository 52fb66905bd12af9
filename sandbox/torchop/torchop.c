/* torchop: build_torch_op's domain call. Parses the spec, generates the op
 * (torchop_gen.c), builds it in the jail (torchop_build.c), verifies it on a
 * GPU (torchop_verify.c) and answers every step's result. The op's library
 * namespace is derived from the expanded spec and the name, so two
 * different kernels (or versions of one) load side by side in a process. */
#include "sandbox/torchop/torchop.h"
#include "sandbox/torchop/torchop_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/op.h"
#include "sandbox/compile/cache.h"
#include "sandbox/compile/compile.h"
#include "sandbox/pool/gpu.h"

/* The checks in the order the answer lists them. */
static const char *const CHECKS[] = {"load",	"run",	      "opcheck",     "reference",
				     "compile", "cuda_graph", "input_checks"};

int torchop_run_usable(const char *run_id, const char *run_kind, const char *run_status,
		       const json_t *result, struct kf_err *err)
{
	const char *sum = json_string_value(json_object_get(result, "summary"));
	if (!run_kind || strcmp(run_kind, "check") != 0)
		return kf_err_set(err, KF_EINVAL,
				  "run %s is a %s run: a torch op is built from a check that "
				  "passed (kforge runs --kind check --status ok)",
				  run_id, run_kind ? run_kind : "?");
	if (!run_status || strcmp(run_status, "ok") != 0 ||
	    !json_is_true(json_object_get(result, "passed")))
		return kf_err_set(err, KF_EINVAL,
				  "run %s did not pass its check (%s): fix the kernel and check it "
				  "again before building an op from it",
				  run_id,
				  sum	       ? sum
				  : run_status ? run_status
					       : "no result");
	return 0;
}

static void spec_ns(const json_t *x, const char *name, char ns[32])
{
	struct cache_sha256 h;
	char hex[CACHE_ID_LEN + 1];
	char *text = json_dumps(x, JSON_COMPACT | JSON_SORT_KEYS);
	cache_sha256_init(&h);
	cache_sha256_update(&h, text ? text : "", text ? strlen(text) : 0);
	cache_sha256_update(&h, name ? name : "", name ? strlen(name) + 1 : 0);
	cache_sha256_final_hex(&h, hex);
	free(text);
	snprintf(ns, 32, "kforge_%.12s", hex);
}

static json_t *build_json(const struct torchop_built *b, const struct torchop_torch *t,
			  const char *arch)
{
	return json_pack("{s:b, s:i, s:i, s:i, s:i, s:s, s:s, s:s}", "cache_hit", b->cache_hit,
			 "build_ms", (int)b->build_ms, "nvcc_ms", (int)b->nvcc_ms, "cxx_ms",
			 (int)b->cxx_ms, "link_ms", (int)b->link_ms, "torch", t->version, "arch",
			 arch, "key", b->key);
}

/* Fills out's "checks" (in CHECKS order), "passed" and "summary" from the
 * verification report; returns KF_EFAULT / KF_ENOMEM when a check failed. */
static int judge(json_t *out, const json_t *report, const struct torchop_gen *g,
		 const struct torchop_built *b, struct kf_err *err)
{
	const json_t *checks = json_object_get(report, "checks");
	json_t *ordered = json_object();
	char failed[700] = "";
	int npass = 0, nrun = 0;
	for (size_t i = 0; i < sizeof CHECKS / sizeof CHECKS[0]; i++) {
		json_t *c = json_object_get(checks, CHECKS[i]);
		if (!c) {
			c = json_pack("{s:n, s:s}", "passed", "message",
				      "not run: an earlier step failed");
			json_object_set_new(ordered, CHECKS[i], c);
			continue;
		}
		json_object_set(ordered, CHECKS[i], c);
		nrun++;
		if (json_is_true(json_object_get(c, "passed")))
			npass++;
		else if (!failed[0])
			snprintf(failed, sizeof failed, "%s: %s", CHECKS[i],
				 json_string_value(json_object_get(c, "message")));
	}
	json_object_set_new(out, "checks", ordered);
	int all = nrun == (int)(sizeof CHECKS / sizeof CHECKS[0]) && npass == nrun;
	json_object_set_new(out, "passed", json_boolean(all));
	int oom = json_is_true(json_object_get(report, "oom"));
	if (oom)
		json_object_set_new(out, "out_of_memory", json_true());
	char sum[1000];
	if (all)
		snprintf(sum, sizeof sum,
			 "torch.ops.%s.%s: opcheck, reference, torch.compile(fullgraph=True), "
			 "CUDA graph and input checks passed; built in %.1f s%s",
			 g->ns, g->name, b->build_ms / 1000.0, b->cache_hit ? " (cached)" : "");
	else
		snprintf(sum, sizeof sum, "torch.ops.%s.%s: %sFAILED at %s", g->ns, g->name,
			 oom ? "out of GPU memory; " : "", failed);
	json_object_set_new(out, "summary", json_string(sum));
	if (all)
		return 0;
	return kf_err_set(err, oom ? KF_ENOMEM : KF_EFAULT, "%s", sum);
}

static json_t *op_json(const struct torchop_gen *g, const struct torchop_built *b)
{
	char q[160], lib[PATH_MAX + 160], pkg[PATH_MAX + 100], py[PATH_MAX + 300];
	snprintf(q, sizeof q, "torch.ops.%s.%s", g->ns, g->name);
	snprintf(pkg, sizeof pkg, "%s/%s", b->dir, b->pkg);
	snprintf(lib, sizeof lib, "%s/op.so", pkg);
	snprintf(py, sizeof py, "import sys; sys.path.insert(0, '%s'); from %s import %s", b->dir,
		 b->pkg, g->name);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "name", g->name, "qualified", q,
			 "schema", g->schema, "package", b->pkg, "package_dir", pkg, "library", lib,
			 "python", py);
}

/* The CUDA reference's module, compiled as check_kernel compiles it (a
 * reference that does not compile is the error check_prepare names). */
static int ref_module(struct check_env *env, const json_t *spec, const volatile int *cancel,
		      struct check_prep *p, struct kf_err *err)
{
	struct check_compile_failure cf;
	int rc = check_prepare(env, spec, 0, cancel, p, &cf, err);
	compile_result_fini(&cf.compile);
	return rc;
}

int torchop_build_verify(struct check_env *env, const json_t *spec, const struct torchop_opts *o,
			 json_t **out, int *gpu, struct kf_err *err)
{
	*out = NULL;
	*gpu = -1;
	json_t *x = NULL, *report = NULL;
	struct spec *s = NULL;
	struct torchop_gen g = {0};
	struct torchop_built b = {0};
	struct check_prep prep = {0};
	const struct torchop_torch *t = NULL;
	struct spec_limits lim;
	char ns[32];
	check_limits(&lim);
	int rc = spec_expand_op(spec, op_find, &x, err);
	if (!rc)
		rc = spec_parse(x, &lim, op_find, &s, err);
	if (rc)
		goto out;
	if (!o->no_verify && gpu_count() <= 0) {
		rc = kf_err_set(err, KF_ENOGPU, "no usable GPU: %s", gpu_no_gpu_reason());
		goto out;
	}
	if (!env->cc) {
		rc = kf_err_set(err, KF_ESANDBOX, "the compiler is not available");
		goto out;
	}
	if ((rc = torchop_torch_get(&t, err)))
		goto out;
	spec_ns(x, o->name, ns);
	if ((rc = torchop_generate(s, o->name, ns, TORCHOP_STANDALONE, &g, err)))
		goto out;
	const char *arch = s->arch ? s->arch : compile_default_arch(env->cc);
	if (o->progress)
		o->progress(o->progress_arg, 1, 0, "building the op");
	rc = torchop_build(env, &g, arch, t, o->cancel, &b, err);
	*out = json_pack("{s:s, s:b, s:o, s:o}", "summary", "", "passed", 0, "op", op_json(&g, &b),
			 "build", build_json(&b, t, arch));
	if (rc == KF_ECOMPILE) {
		json_object_set_new(*out, "diagnostics", b.diagnostics);
		b.diagnostics = NULL;
		json_object_set_new(*out, "summary", json_string(err->msg));
		goto out;
	}
	if (rc)
		goto out;
	if (o->no_verify) {
		char sum[300];
		snprintf(sum, sizeof sum, "torch.ops.%s.%s built in %.1f s%s (not verified)", ns,
			 g.name, b.build_ms / 1000.0, b.cache_hit ? " (cached)" : "");
		json_object_set_new(*out, "summary", json_string(sum));
		json_object_set_new(*out, "passed", json_true());
		goto out;
	}
	if (s->ref.kind == SPEC_REF_CUDA && (rc = ref_module(env, spec, o->cancel, &prep, err)))
		goto out;
	if (o->progress)
		o->progress(o->progress_arg, 2, 0, "verifying the op on the GPU");
	rc = torchop_verify(env, s, &g, &b, t, prep.ref_cubin[0] ? prep.ref_cubin : NULL, o,
			    &report, gpu, err);
	if (rc)
		goto out;
	if (json_object_get(report, "device"))
		json_object_set(*out, "device", json_object_get(report, "device"));
	rc = judge(*out, report, &g, &b, err);
out:
	if (rc && *out && !json_string_length(json_object_get(*out, "summary")))
		json_object_set_new(*out, "summary", json_string(err->msg));
	json_decref(report);
	json_decref(b.diagnostics);
	check_prep_fini(&prep);
	torchop_gen_fini(&g);
	spec_free(s);
	json_decref(x);
	return rc;
}
