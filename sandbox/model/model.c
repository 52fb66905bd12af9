/* model: the request side of benchmark_model: the patch map's and the
 * job's checks and defaults, the unknown-target message, and the
 * speedups and summary added to the driver's result. Pure (no I/O), so
 * every rule here is unit-tested on the CPU (tests/unit/check_model.c);
 * model_run.c runs the job. */
#include "sandbox/model/model.h"

#include <stdio.h>
#include <string.h>

const char *const MODEL_PATCH_OPS[] = {"rmsnorm",      "layernorm", "add_rmsnorm", "gate_up_silu",
				       "qk_norm_rope", "gate_up",   "fused_qkv",   "geglu",
				       "gelu_tanh",    "gelu",	    "adaln_zero",  NULL};

static const char *const RECIPES[] = {"qwen3", "llama", "dit", NULL};
static const char *const LLM_DIMS[] = {"layers",   "hidden",   "intermediate", "heads",
				       "kv_heads", "head_dim", "vocab",	       NULL};
static const char *const DIT_DIMS[] = {"layers", "hidden", "heads", "head_dim", "ff_mult", NULL};
static const char *const MODES[] = {"eager",  "patched",	"compile", "patched_compile",
				    "graphs", "patched_graphs", NULL};
static const char *const DTYPES[] = {"bf16", "f16", "f32", NULL};

static int in_list(const char *s, const char *const *list)
{
	for (size_t i = 0; s && list[i]; i++)
		if (strcmp(s, list[i]) == 0)
			return 1;
	return 0;
}

static void join(const char *const *list, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = 0;
	for (size_t i = 0; list[i] && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", list[i]);
}

static int target_ok(const char *t)
{
	size_t n = strlen(t);
	if (n == 0 || n > MODEL_TARGET_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = t[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("_.*?[]-", c)))
			return 0;
	}
	return 1;
}

int model_patch_check(const json_t *pmap, const char *field, struct kf_err *err)
{
	char ops[256];
	if (!json_is_object(pmap) || json_object_size(pmap) == 0)
		return kf_err_set(err, KF_EINVAL,
				  "%s: expected an object {target: op} with at least one entry, "
				  "e.g. {\"Qwen3RMSNorm\": \"rmsnorm\"}",
				  field);
	if (json_object_size(pmap) > MODEL_PATCH_MAX)
		return kf_err_set(err, KF_ETOOBIG, "%s: %zu entries; at most %d", field,
				  json_object_size(pmap), MODEL_PATCH_MAX);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)pmap, k, v) {
		if (strlen(k) > MODEL_TARGET_MAX)
			return kf_err_set(err, KF_ETOOBIG,
					  "%s: target '%.40s...' is %zu bytes; at "
					  "most %d",
					  field, k, strlen(k), MODEL_TARGET_MAX);
		if (!target_ok(k))
			return kf_err_set(err, KF_EINVAL,
					  "%s: target '%.80s' is not a module class name or a "
					  "module-name glob (1-%d characters of letters, digits "
					  "and _ . * ? [ ] -)",
					  field, k, MODEL_TARGET_MAX);
		if (!in_list(json_string_value(v), MODEL_PATCH_OPS)) {
			join(MODEL_PATCH_OPS, ops, sizeof ops);
			return kf_err_set(err, KF_EINVAL,
					  "%s: '%s' -> %s%.60s%s is not an op; expected "
					  "one of %s",
					  field, k, json_is_string(v) ? "'" : "",
					  json_is_string(v) ? json_string_value(v) : "a non-string",
					  json_is_string(v) ? "'" : "", ops);
		}
	}
	return 0;
}

/* Defaults per recipe: the patch (eager), the patch under torch.compile,
 * the shapes. Under compile, norms (and rope) are left to Inductor, which
 * fuses them with their neighbours: as opaque ops they cut those fusions
 * and kforge's rmsnorm over 64-wide heads took 5x Inductor's fused norm
 * (DiT profile, docs/model-bench.md). The DiT keeps its activation op
 * (kforge's geglu kernel beat Inductor's there); the LLMs keep only the
 * GEMM merges (q|k|v and gate|up as single GEMMs). */
static json_t *default_patch(const char *recipe, const char *act, int compiled)
{
	if (strcmp(recipe, "dit") == 0) {
		if (compiled) /* only the activation: kforge's geglu beats Inductor's */
			return strcmp(act, "geglu") == 0 ? json_pack("{s:s}", "GEGLU", "geglu")
							 : json_pack("{s:s}", "GELU", "gelu_tanh");
		return json_pack("{s:s, s:s, s:s, s:s}", "RMSNorm", "rmsnorm",
				 strcmp(act, "geglu") == 0 ? "GEGLU" : "GELU",
				 strcmp(act, "geglu") == 0 ? "geglu" : "gelu_tanh",
				 "AdaLayerNormZero", "adaln_zero", "transformer_blocks.*.norm2",
				 "layernorm");
	}
	const char *p = strcmp(recipe, "qwen3") == 0 ? "Qwen3" : "Llama";
	char norm[32], mlp[32], attn[32], layer[32];
	snprintf(norm, sizeof norm, "%sRMSNorm", p);
	snprintf(mlp, sizeof mlp, "%sMLP", p);
	snprintf(attn, sizeof attn, "%sAttention", p);
	snprintf(layer, sizeof layer, "%sDecoderLayer", p);
	if (compiled)
		return json_pack("{s:s, s:s}", mlp, "gate_up", attn, "fused_qkv");
	return json_pack("{s:s, s:s, s:s, s:s}", norm, "rmsnorm", mlp, "gate_up_silu", attn,
			 "qk_norm_rope", layer, "add_rmsnorm");
}

static json_t *default_shapes(const char *recipe)
{
	if (strcmp(recipe, "dit") == 0)
		return json_pack("[{s:s, s:i, s:i}]", "kind", "prefill", "batch", 2, "seq", 4096);
	return json_pack("[{s:s, s:i, s:i}, {s:s, s:i, s:i}, {s:s, s:i, s:i}]", "kind", "prefill",
			 "batch", 1, "seq", 2048, "kind", "prefill", "batch", 8, "seq", 512, "kind",
			 "decode", "batch", 32, "past", 512);
}

/* An integer field of o in [lo, hi]; absent -> def. */
static int int_field(const json_t *o, const char *key, const char *field, long long lo,
		     long long hi, long long def, long long *v, struct kf_err *err)
{
	const json_t *j = json_object_get(o, key);
	*v = def;
	if (!j)
		return 0;
	if (!json_is_integer(j) || json_integer_value(j) < lo || json_integer_value(j) > hi)
		return kf_err_set(err, KF_EINVAL, "%s%s: expected an integer in %lld..%lld", field,
				  key, lo, hi);
	*v = json_integer_value(j);
	return 0;
}

static int check_dims(const char *recipe, const json_t *dims, json_t *job, const char **act,
		      struct kf_err *err)
{
	const char *const *names = strcmp(recipe, "dit") == 0 ? DIT_DIMS : LLM_DIMS;
	char list[200];
	json_t *out = json_object();
	json_object_set_new(job, "dims", out);
	*act = "geglu";
	if (!dims)
		return 0;
	if (!json_is_object(dims))
		return kf_err_set(err, KF_EINVAL, "dims: expected an object of dimensions");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)dims, k, v) {
		if (strcmp(recipe, "dit") == 0 && strcmp(k, "activation") == 0) {
			if (!in_list(json_string_value(v),
				     (const char *const[]){"geglu", "gelu_tanh", NULL}))
				return kf_err_set(
					err, KF_EINVAL,
					"dims.activation: expected 'geglu' or 'gelu_tanh'");
			*act = json_string_value(v);
			json_object_set(out, k, v);
			continue;
		}
		if (!in_list(k, names)) {
			join(names, list, sizeof list);
			return kf_err_set(err, KF_EINVAL,
					  "dims: '%.60s' is not a dimension of %s; expected one of "
					  "%s%s",
					  k, recipe, list,
					  strcmp(recipe, "dit") == 0 ? ", activation" : "");
		}
		long long x;
		int rc = int_field(dims, k, "dims.", 1, 1 << 20, 0, &x, err);
		if (rc)
			return rc;
		json_object_set_new(out, k, json_integer(x));
	}
	return 0;
}

static int check_shapes(const char *recipe, const json_t *shapes, json_t *job, struct kf_err *err)
{
	if (!shapes) {
		json_object_set_new(job, "shapes", default_shapes(recipe));
		return 0;
	}
	if (!json_is_array(shapes) || json_array_size(shapes) == 0)
		return kf_err_set(err, KF_EINVAL,
				  "shapes: expected a non-empty array of {kind, batch, seq|past}");
	if (json_array_size(shapes) > MODEL_SHAPES_MAX)
		return kf_err_set(err, KF_ETOOBIG, "shapes: %zu entries; at most %d",
				  json_array_size(shapes), MODEL_SHAPES_MAX);
	json_t *out = json_array();
	json_object_set_new(job, "shapes", out);
	size_t i;
	json_t *s;
	json_array_foreach(shapes, i, s) {
		const char *kind = json_string_value(json_object_get(s, "kind"));
		char f[40];
		long long b, n;
		snprintf(f, sizeof f, "shapes[%zu].", i);
		if (!json_is_object(s) ||
		    !in_list(kind, (const char *const[]){"prefill", "decode", NULL}))
			return kf_err_set(err, KF_EINVAL, "%skind: expected 'prefill' or 'decode'",
					  f);
		if (strcmp(kind, "decode") == 0 && strcmp(recipe, "dit") == 0)
			return kf_err_set(err, KF_EINVAL,
					  "%skind: a dit block has no decode step; use prefill", f);
		int dec = strcmp(kind, "decode") == 0, rc;
		if ((rc = int_field(s, "batch", f, 1, 1024, 1, &b, err)) ||
		    (rc = int_field(s, dec ? "past" : "seq", f, 1, 65536, 512, &n, err)))
			return rc;
		json_array_append_new(out, json_pack("{s:s, s:I, s:I}", "kind", kind, "batch",
						     (json_int_t)b, dec ? "past" : "seq",
						     (json_int_t)n));
	}
	return 0;
}

static int check_modes(const json_t *modes, json_t *job, struct kf_err *err)
{
	char list[200];
	if (!modes)
		return 0;
	join(MODES, list, sizeof list);
	if (!json_is_array(modes) || json_array_size(modes) == 0 || json_array_size(modes) > 6)
		return kf_err_set(err, KF_EINVAL, "modes: expected 1-6 of %s", list);
	size_t i;
	json_t *m;
	json_array_foreach(modes, i, m) {
		if (!in_list(json_string_value(m), MODES))
			return kf_err_set(err, KF_EINVAL, "modes[%zu]: expected one of %s", i,
					  list);
	}
	json_object_set(job, "modes", (json_t *)modes);
	return 0;
}

int model_job_new(const json_t *args, json_t **job, struct kf_err *err)
{
	*job = NULL;
	const char *recipe = json_string_value(json_object_get(args, "recipe"));
	const char *act;
	if (!in_list(recipe, RECIPES))
		return kf_err_set(err, KF_EINVAL, "recipe: expected qwen3, llama or dit");
	json_t *j = json_pack("{s:s}", "recipe", recipe);
	const char *dt = json_string_value(json_object_get(args, "dtype"));
	long long iters, warmup, seed;
	int rc = check_dims(recipe, json_object_get(args, "dims"), j, &act, err);
	if (rc)
		goto out;
	if (json_object_get(args, "dtype") && !in_list(dt, DTYPES)) {
		rc = kf_err_set(err, KF_EINVAL, "dtype: expected bf16, f16 or f32");
		goto out;
	}
	json_object_set_new(j, "dtype", json_string(dt ? dt : "bf16"));
	for (int c = 0; c < 2; c++) {
		const char *field = c ? "compile_patch" : "patch";
		const json_t *p = json_object_get(args, field);
		if (p && (rc = model_patch_check(p, field, err)))
			goto out;
		/* compile_patch absent: the caller's patch when there is one */
		const json_t *user = json_object_get(args, "patch");
		if (!p && c && user)
			p = user;
		json_object_set_new(j, field,
				    p ? json_deep_copy(p) : default_patch(recipe, act, c));
	}
	if ((rc = check_shapes(recipe, json_object_get(args, "shapes"), j, err)) ||
	    (rc = check_modes(json_object_get(args, "modes"), j, err)) ||
	    (rc = int_field(args, "iters", "", 3, MODEL_ITERS_MAX, 20, &iters, err)) ||
	    (rc = int_field(args, "warmup", "", 1, 50, 3, &warmup, err)) ||
	    (rc = int_field(args, "seed", "", 0, 1LL << 31, 0, &seed, err)))
		goto out;
	json_object_set_new(j, "iters", json_integer(iters));
	json_object_set_new(j, "warmup", json_integer(warmup));
	json_object_set_new(j, "seed", json_integer(seed));
	for (int c = 0; c < 2; c++) {
		const char *k = c ? "fp32_check" : "profile";
		const json_t *b = json_object_get(args, k);
		if (b && !json_is_boolean(b)) {
			rc = kf_err_set(err, KF_EINVAL, "%s: expected true or false", k);
			goto out;
		}
		json_object_set_new(j, k, json_boolean(b ? json_is_true(b) : 1));
	}
out:
	if (rc)
		json_decref(j);
	else
		*job = j;
	return rc;
}

void model_unknown_target_msg(const char *target, const char *recipe, const json_t *classes,
			      char *buf, size_t cap)
{
	size_t n = (size_t)snprintf(buf, cap,
				    "patch target '%s' is no module class or name of the %s "
				    "model; its classes: ",
				    target, recipe);
	size_t i;
	json_t *c;
	json_array_foreach(classes, i, c) {
		if (n >= cap)
			break;
		n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "",
				      json_string_value(c) ? json_string_value(c) : "?");
	}
}

static const char *str_or(const json_t *j, const char *def)
{
	return json_string_value(j) ? json_string_value(j) : def;
}

/* The median of mode m for shape sh in lat, or -1. */
static double median_of(const json_t *lat, const char *sh, const char *m)
{
	size_t i;
	json_t *r;
	json_array_foreach(lat, i, r) {
		if (strcmp(str_or(json_object_get(r, "shape"), ""), sh) == 0 &&
		    strcmp(str_or(json_object_get(r, "mode"), ""), m) == 0)
			return json_number_value(json_object_get(r, "median_ms"));
	}
	return -1;
}

static json_t *ratio(double base, double x)
{
	return base > 0 && x > 0 ? json_real(base / x) : json_null();
}

int model_result_finish(json_t *res, struct kf_err *err)
{
	const json_t *lat = json_object_get(res, "latency");
	if (!json_is_array(lat))
		return kf_err_set(err, KF_EINVAL, "model result: no latency array");
	json_t *sp = json_array(), *seen = json_object();
	char sum[1024];
	size_t n = (size_t)snprintf(sum, sizeof sum, "%s",
				    str_or(json_object_get(res, "recipe"), "model"));
	size_t i;
	json_t *r;
	json_array_foreach(lat, i, r) {
		const char *sh = json_string_value(json_object_get(r, "shape"));
		if (!sh || json_object_get(seen, sh))
			continue;
		json_object_set_new(seen, sh, json_true());
		double e = median_of(lat, sh, "eager"), p = median_of(lat, sh, "patched");
		double c = median_of(lat, sh, "compile"),
		       pc = median_of(lat, sh, "patched_compile");
		double g = median_of(lat, sh, "graphs"), pg = median_of(lat, sh, "patched_graphs");
		json_t *row = json_pack("{s:s, s:o, s:o, s:o, s:o, s:o}", "shape", sh,
					"patched_vs_eager", ratio(e, p), "patched_compile_vs_eager",
					ratio(e, pc), "patched_compile_vs_compile", ratio(c, pc),
					"patched_graphs_vs_graphs", ratio(g, pg),
					"best_patched_vs_best", json_null());
		double best = -1, bestp = -1;
		const double all[] = {e, c, g}, pall[] = {p, pc, pg};
		for (int k = 0; k < 3; k++) {
			if (all[k] > 0 && (best < 0 || all[k] < best))
				best = all[k];
			if (pall[k] > 0 && (bestp < 0 || pall[k] < bestp))
				bestp = pall[k];
		}
		json_object_set_new(row, "best_patched_vs_best", ratio(best, bestp));
		json_array_append_new(sp, row);
		if (n < sizeof sum)
			n += (size_t)snprintf(sum + n, sizeof sum - n,
					      "; %s: best patched %.3gx vs "
					      "best unpatched",
					      sh, best > 0 && bestp > 0 ? best / bestp : 0.0);
		if (n < sizeof sum && e > 0 && p > 0)
			n += (size_t)snprintf(sum + n, sizeof sum - n, ", eager %.3gx", e / p);
		if (n < sizeof sum && c > 0 && pc > 0)
			n += (size_t)snprintf(sum + n, sizeof sum - n, ", compile %.3gx", c / pc);
		if (n < sizeof sum && g > 0 && pg > 0)
			n += (size_t)snprintf(sum + n, sizeof sum - n, ", graphs %.3gx", g / pg);
	}
	json_decref(seen);
	json_object_set_new(res, "speedups", sp);
	const json_t *ag = json_object_get(res, "agreement");
	if (json_is_object(ag) && n < sizeof sum) {
		const json_t *nf = json_object_get(ag, "patched_no_further");
		n += (size_t)snprintf(sum + n, sizeof sum - n,
				      "; output rel L2 vs unpatched %.2g%s",
				      json_number_value(json_object_get(ag, "rel_l2")),
				      !nf		 ? ""
				      : json_is_true(nf) ? ", no further from fp32"
							 : ", FURTHER from fp32 than unpatched");
	}
	size_t i2;
	json_t *se;
	json_array_foreach(json_object_get(res, "shape_errors"), i2, se) {
		if (n < sizeof sum)
			n += (size_t)snprintf(sum + n, sizeof sum - n, "; %s FAILED: %.160s",
					      str_or(json_object_get(se, "shape"), "?"),
					      str_or(json_object_get(se, "error"), "?"));
	}
	if (json_is_true(json_object_get(res, "partial")) && n < sizeof sum)
		snprintf(sum + n, sizeof sum - n,
			 "; PARTIAL: the job ended before every shape ran");
	/* summary first, as every answer has it */
	json_t *rest = json_copy(res);
	json_object_clear(res);
	json_object_set_new(res, "summary", json_string(sum));
	json_object_update(res, rest);
	json_decref(rest);
	return 0;
}
