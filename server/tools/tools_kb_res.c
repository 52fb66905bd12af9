/* tools_kb_res: the knowledge base's MCP resources (kforge://guides/{id},
 * kforge://gpus/{id}: list, read, completion) and the write-kernel prompt.
 * Part of the TOOLS_KB group (tools_kb.c); shared helpers in tools_kb_int.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/app.h"
#include "kernels/op.h"
#include "knowledge/kb.h"
#include "server/mcp/tools.h"
#include "server/tools/tools_kb_int.h"

/* ---- resources -------------------------------------------------------------- */

static int res_guides_list(struct app *app, json_t *arr, struct kf_err *err)
{
	struct kb *kb = NULL;
	struct kb_guide_entry *e = NULL;
	size_t n = 0;
	int rc = tools_kb_need(app, &kb, err);
	if (rc || (rc = kb_guide_list(kb, NULL, &e, &n, err)))
		return rc;
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, json_pack("{s:o,s:s,s:s,s:s}", "uri",
						     json_sprintf(GUIDE_URI "%s", e[i].id), "name",
						     e[i].id, "title", e[i].title, "mimeType",
						     "text/markdown"));
	free(e);
	return 0;
}

static int res_guides_read(struct app *app, const char *uri, json_t **contents, struct kf_err *err)
{
	struct kb *kb = NULL;
	struct kb_guide *g = NULL;
	int rc = tools_kb_need(app, &kb, err);
	if (rc)
		return rc;
	if (strncmp(uri, GUIDE_URI, strlen(GUIDE_URI)) != 0)
		return kf_err_set(err, KF_ENOTFOUND, "not a guide uri: %.80s", uri);
	if ((rc = kb_guide_read(kb, uri + strlen(GUIDE_URI), &g, err)))
		return rc == KF_EINVAL ? KF_ENOTFOUND : rc;
	json_t *src = tools_kb_split(g->sources, '\n');
	size_t len = strlen(g->body) + 256;
	size_t i;
	json_t *v;
	json_array_foreach(src, i, v)
		len += json_string_length(v) + 8;
	char *text = malloc(len);
	if (!text) {
		json_decref(src);
		kb_guide_free(g);
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	}
	len += strlen(g->checked);
	size_t at = (size_t)snprintf(text, len, "%s\n\n## Checked on\n\n%s\n\n## Sources\n\n",
				     g->body, g->checked);
	json_array_foreach(src, i, v)
		at += (size_t)snprintf(text + at, len - at, "- %s\n", json_string_value(v));
	*contents =
		json_pack("[{s:s,s:s,s:s}]", "uri", uri, "mimeType", "text/markdown", "text", text);
	free(text);
	json_decref(src);
	kb_guide_free(g);
	return 0;
}

static int res_guides_complete(struct app *app, const char *var, const char *prefix, json_t *arr,
			       struct kf_err *err)
{
	struct kb *kb = NULL;
	struct kb_guide_entry *e = NULL;
	size_t n = 0;
	int rc = tools_kb_need(app, &kb, err);
	if (rc || strcmp(var, "id") != 0)
		return rc;
	if ((rc = kb_guide_list(kb, prefix, &e, &n, err)))
		return rc;
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, json_string(e[i].id));
	free(e);
	return 0;
}

static int res_gpus_list(struct app *app, json_t *arr, struct kf_err *err)
{
	struct kb *kb = NULL;
	int rc = tools_kb_need(app, &kb, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < kb_gpu_count(kb); i++) {
		const struct kb_gpu *g = kb_gpu_at(kb, i);
		json_array_append_new(arr,
				      json_pack("{s:o,s:s,s:s,s:s}", "uri",
						json_sprintf(GPU_URI "%s", g->id), "name", g->id,
						"title", g->name, "mimeType", "application/json"));
	}
	return 0;
}

static int res_gpus_read(struct app *app, const char *uri, json_t **contents, struct kf_err *err)
{
	struct kb *kb = NULL;
	const struct kb_gpu *g = NULL;
	int rc = tools_kb_need(app, &kb, err);
	if (rc)
		return rc;
	if (strncmp(uri, GPU_URI, strlen(GPU_URI)) != 0)
		return kf_err_set(err, KF_ENOTFOUND, "not a GPU uri: %.80s", uri);
	if ((rc = kb_gpu_find(kb, uri + strlen(GPU_URI), &g, err)))
		return rc == KF_EINVAL ? KF_ENOTFOUND : rc;
	json_t *o = tools_kb_gpu_json(kb, g, NULL);
	char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!text)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	*contents = json_pack("[{s:s,s:s,s:s}]", "uri", uri, "mimeType", "application/json", "text",
			      text);
	free(text);
	return 0;
}

static int res_gpus_complete(struct app *app, const char *var, const char *prefix, json_t *arr,
			     struct kf_err *err)
{
	struct kb *kb = NULL;
	int rc = tools_kb_need(app, &kb, err);
	if (rc || strcmp(var, "id") != 0)
		return rc;
	size_t pl = strlen(prefix);
	for (size_t i = 0; i < kb_gpu_count(kb); i++)
		if (strncmp(kb_gpu_at(kb, i)->id, prefix, pl) == 0)
			json_array_append_new(arr, json_string(kb_gpu_at(kb, i)->id));
	return 0;
}

/* ---- prompt: write-kernel ----------------------------------------------------- */

struct buf {
	char *p;
	size_t len, cap;
};

static void bprintf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = b->p ? vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap) : -1;
		va_end(ap);
		if (n >= 0 && (size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		size_t nc = b->cap ? b->cap * 2 : 4096;
		while (n >= 0 && nc < b->len + (size_t)n + 1)
			nc *= 2;
		char *np = realloc(b->p, nc);
		if (!np)
			return;
		b->p = np;
		b->cap = nc;
	}
}

static int prompt_write_kernel(struct app *app, const json_t *args, json_t **messages,
			       struct kf_err *err)
{
	struct kb *kb = NULL;
	int rc = tools_kb_need(app, &kb, err);
	if (rc)
		return rc;
	const char *op = json_string_value(json_object_get(args, "op"));
	const char *gpu = json_string_value(json_object_get(args, "gpu"));
	if (!op || !*op || strlen(op) > 64)
		return kf_err_set(err, KF_EINVAL, "op: give the operation to write, e.g. rmsnorm");
	if (!gpu || !*gpu)
		gpu = "h100";
	const struct kb_gpu *g = NULL;
	if ((rc = kb_gpu_find(kb, gpu, &g, err)))
		return rc == KF_ENOTFOUND ? KF_EINVAL : rc;
	struct buf b = {0};
	bprintf(&b, "Write a fast CUDA kernel for `%s` on the %s (%s, CC %s, compile for %s).\n\n",
		op, g->name, g->architecture, g->compute_capability, g->best_target);
	const struct op_template *t = op_find(op);
	if (t)
		bprintf(&b,
			"kforge has a reference and a baseline for this op: %s\n"
			"Use `\"reference\": {\"op\": \"%s\"}` (or the op shorthand) in the kernel spec.\n\n",
			t->summary, op);
	else
		bprintf(&b,
			"kforge has no built-in op named '%s'; write a plain reference kernel "
			"first and check the fast one against it.\n\n",
			op);
	bprintf(&b, "## GPU facts (sourced; see get_gpu_specs for every figure)\n\n");
	static const char *const keys[] = {"sm_count",
					   "memory_bandwidth_gbs",
					   "l2_cache_mb",
					   "peak_fp32_tflops",
					   "fp16_bf16_tensor_dense_tflops",
					   "fp8_tensor_dense_tflops",
					   "smem_per_sm_kb",
					   "max_smem_per_block_optin_kb",
					   "max_threads_per_sm",
					   "max_resident_blocks_per_sm"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		const struct kb_figure *f = kb_gpu_figure(g, keys[i]);
		if (!f)
			continue;
		if (f->status == KB_FIG_KNOWN)
			bprintf(&b, "- %s: %s %s (source: %s)\n", f->label, f->text, f->unit,
				f->source_keys);
		else if (f->gap[0])
			bprintf(&b, "- %s: unknown (%s)\n", f->label, f->gap);
		else
			bprintf(&b, "- %s: %s\n", f->label,
				f->status == KB_FIG_NA ? "n/a on this GPU"
						       : "unknown (not confirmed)");
	}
	struct kb_derived d[KB_MAX_DERIVED];
	size_t nd = kb_gpu_derived(g, d, KB_MAX_DERIVED);
	for (size_t i = 0; i < nd; i++)
		if (d[i].known && (strstr(d[i].name, "ridge_point_fp32") ||
				   strstr(d[i].name, "ridge_point_fp16_bf16")))
			bprintf(&b, "- %s: %.1f %s (derived: %s)\n", d[i].label, d[i].value,
				d[i].unit, d[i].formula);
	struct kb_arch a;
	if (kb_arch_parse(g->best_target, &a, NULL) == 0) {
		bprintf(&b, "- usable on %s:", g->best_target);
		for (int i = 0; i < KB_FEAT_COUNT; i++) {
			struct kb_feature_use u;
			kb_feature_usable(&a, i, &u);
			if (u.usable)
				bprintf(&b, " %s", u.name);
		}
		bprintf(&b, "\n");
	}
	bprintf(&b, "\n## Guides to read first\n\n");
	char q[160];
	snprintf(q, sizeof q, "%s kernel", op);
	for (char *c = q; *c; c++)
		if (*c == '_')
			*c = ' ';
	struct kb_search s = {.query = q, .arch = g->best_target, .limit = 5};
	struct kb_hit *hits = NULL;
	size_t n = 0;
	struct kf_err serr;
	kf_err_clear(&serr);
	if (kb_search_guides(kb, &s, &hits, &n, &serr) == 0)
		for (size_t i = 0; i < n; i++)
			bprintf(&b, "- " GUIDE_URI "%s: %s\n", hits[i].id, hits[i].title);
	free(hits);
	bprintf(&b, "- " GUIDE_URI "roofline and " GUIDE_URI
		    "measuring if they exist (search_guides \"roofline\", \"measuring\")\n");
	bprintf(&b,
		"\n## Workflow\n\n"
		"1. Count the bytes and FLOPs of `%s` and compare with the ridge point: "
		"memory-bound or compute-bound?\n"
		"2. Write device code only (extern \"C\" __global__), compile with compile_kernel "
		"for %s and read registers/spills.\n"
		"3. check_kernel against the reference at several sizes, including odd ones.\n"
		"4. benchmark_kernel against the baseline; report %% of peak and iterate.\n",
		op, g->best_target);
	if (!b.p) {
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	}
	*messages = json_pack("[{s:s,s:{s:s,s:s}}]", "role", "user", "content", "type", "text",
			      "text", b.p);
	free(b.p);
	return *messages ? 0 : kf_err_set(err, KF_ENOMEM, "out of memory");
}

static int prompt_complete(struct app *app, const char *arg, const char *prefix, json_t *arr,
			   struct kf_err *err)
{
	size_t pl = strlen(prefix);
	if (strcmp(arg, "gpu") == 0)
		return res_gpus_complete(app, "id", prefix, arr, err);
	if (strcmp(arg, "op") == 0)
		for (size_t i = 0; i < op_count(); i++)
			if (strncmp(op_at(i)->name, prefix, pl) == 0)
				json_array_append_new(arr, json_string(op_at(i)->name));
	return 0;
}

const struct resource_def TOOLS_KB_RESOURCES[2] = {
	{"kforge://guides/{id}", "guide", "Optimization guide",
	 "A CUDA optimization guide (Markdown) with its sources", "text/markdown", res_guides_list,
	 res_guides_read, res_guides_complete},
	{"kforge://gpus/{id}", "gpu", "GPU specifications",
	 "Every sourced figure of one GPU, derived figures marked (JSON)", "application/json",
	 res_gpus_list, res_gpus_read, res_gpus_complete},
};

static const struct prompt_arg WRITE_KERNEL_ARGS[] = {
	{"op", "the operation, e.g. rmsnorm, softmax, silu_and_mul, gemm", 1},
	{"gpu", "the target GPU name or alias (default h100)", 0},
	{NULL, NULL, 0},
};

const struct prompt_def TOOLS_KB_PROMPTS[1] = {
	{"write-kernel", "Write a kernel",
	 "A starting brief for writing a fast kernel for an op on a GPU: the GPU's sourced "
	 "facts, derived ridge points, usable features, the guides to read and the "
	 "compile/check/benchmark workflow.",
	 WRITE_KERNEL_ARGS, prompt_write_kernel, prompt_complete},
};
