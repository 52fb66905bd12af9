/* prompts: the workflow prompts beyond write-kernel (tools_kb_res.c):
 * optimize-kernel, which turns a benchmark run into the next measured change,
 * and integrate-kernel, which takes a checked kernel into PyTorch,
 * transformers or diffusers. Each assembles a brief from the knowledge base's
 * guides (search) and, for optimize-kernel, the run history (get_run), so
 * the text names what this installation actually has. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/app.h"
#include "knowledge/kb.h"
#include "server/mcp/mcp.h"
#include "server/mcp/tools.h"

#define GUIDE_URI "kforge://guides/"

/* The guide ids a brief already links, so two searches never list one twice. */
struct seen {
	char ids[16][64];
	int n;
};

/* Appends up to limit guide links for query (arch may be NULL) to f, skipping
 * those in seen. Search failures leave the list short: the brief is still
 * useful without it. */
static void guide_links(FILE *f, struct kb *kb, struct seen *seen, const char *query,
			const char *arch, int limit)
{
	struct kb_search s = {.query = query, .arch = arch, .limit = limit + seen->n};
	struct kb_hit *hits = NULL;
	size_t n = 0;
	struct kf_err err;

	kf_err_clear(&err);
	if (!kb || kb_search_guides(kb, &s, &hits, &n, &err) != 0)
		return;
	for (size_t i = 0; i < n && limit > 0; i++) {
		int dup = 0;
		for (int j = 0; j < seen->n; j++)
			dup |= strcmp(seen->ids[j], hits[i].id) == 0;
		if (dup || seen->n == 16)
			continue;
		snprintf(seen->ids[seen->n++], sizeof(seen->ids[0]), "%s", hits[i].id);
		fprintf(f, "- " GUIDE_URI "%s — %s\n", hits[i].id, hits[i].title);
		limit--;
	}
	free(hits);
}

/* Wraps text (takes it) as a one-message prompt. */
static int one_message(char *text, json_t **messages, struct kf_err *err)
{
	*messages = text ? json_pack("[{s:s, s:{s:s, s:s}}]", "role", "user", "content", "type",
				     "text", "text", text)
			 : NULL;
	free(text);
	return *messages ? 0 : kf_err_set(err, KF_ENOMEM, "out of memory building the prompt");
}

static const char *arg_str(const json_t *args, const char *name)
{
	const char *v = json_string_value(json_object_get(args, name));
	return v && *v ? v : NULL;
}

static int check_len(const char *name, const char *v, struct kf_err *err)
{
	if (v && strlen(v) > 128)
		return kf_err_set(err, KF_EINVAL, "%s: at most 128 characters", name);
	return 0;
}

static int prompt_optimize(struct app *app, const json_t *args, json_t **messages,
			   struct kf_err *err)
{
	const char *op = arg_str(args, "op"), *gpu = arg_str(args, "gpu");
	const char *run = arg_str(args, "run");
	char *text = NULL, query[200];
	size_t len = 0;
	int rc;

	if (!op)
		return kf_err_set(err, KF_EINVAL, "op: name the kernel's operation, e.g. rmsnorm");
	if ((rc = check_len("op", op, err)) || (rc = check_len("gpu", gpu, err)) ||
	    (rc = check_len("run", run, err)))
		return rc;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return kf_err_set(err, KF_ENOMEM, "out of memory building the prompt");
	fprintf(f, "Make the `%s` kernel faster%s%s, one measured change at a time.\n\n", op,
		gpu ? " on the " : "", gpu ? gpu : "");
	if (run) {
		json_t *args_run = json_pack("{s:s}", "id", run), *res = NULL;
		int is_error = 0;
		struct kf_err rerr;
		kf_err_clear(&rerr);
		if (args_run &&
		    mcp_tool_call(app, "get_run", args_run, &res, &is_error, &rerr) == 0 &&
		    !is_error)
			fprintf(f, "## Where it stands (run %s)\n\n%s\n\n", run,
				json_string_value(json_object_get(res, "summary")));
		else
			fprintf(f,
				"## Where it stands\n\nRun '%s' was not found in the history; "
				"call list_runs {\"kind\": \"bench\"} to pick one.\n\n",
				run);
		json_decref(res);
		json_decref(args_run);
	} else {
		fprintf(f, "## Where it stands\n\nBenchmark it first: benchmark_kernel with a "
			   "baseline, then read %% of peak, the roofline floor and the speedup "
			   "interval.\n\n");
	}
	fprintf(f,
		"## The loop\n\n"
		"1. From the benchmark: achieved GB/s and TFLOP/s against the GPU's ceilings "
		"(get_gpu_specs; `kforge calibrate` ceilings when present). The larger of "
		"bytes/bandwidth and FLOPs/peak is the floor; the gap to it is what you can win.\n"
		"2. Read compile_kernel's answer before changing code: registers, spills, local "
		"memory, occupancy and its limit, the SASS summary (are global loads 128-bit? are "
		"tensor-core instructions there?).\n"
		"3. When both rates are far under their ceilings, the usual causes, in this "
		"order: more bytes moved than counted (re-reads, uncoalesced access, local "
		"memory); too little independent work in flight; many small launches; index or "
		"special-function arithmetic; shared-memory bank conflicts.\n"
		"4. Write a prediction before each change (what moves, by how much), make one "
		"change, check_kernel (it must still pass), benchmark_kernel, then compare_runs "
		"against the previous run. A speedup whose interval overlaps 1 is no speedup. If "
		"the result misses the prediction, find out why before the next change.\n\n"
		"## Guides for this op\n\n");
	struct seen seen = {.n = 0};
	snprintf(query, sizeof(query), "%s", op);
	for (char *c = query; *c; c++)
		if (*c == '_')
			*c = ' ';
	guide_links(f, app->kb, &seen, query, gpu, 3);
	guide_links(f, app->kb, &seen, "roofline time floor", NULL, 1);
	guide_links(f, app->kb, &seen, "registers spills local memory", NULL, 1);
	guide_links(f, app->kb, &seen, "measuring kernel time correctly", NULL, 1);
	if (fclose(f) != 0) {
		free(text);
		return kf_err_set(err, KF_ENOMEM, "out of memory building the prompt");
	}
	return one_message(text, messages, err);
}

static const char FRAMEWORKS[] = "pytorch, transformers or diffusers";

static int prompt_integrate(struct app *app, const json_t *args, json_t **messages,
			    struct kf_err *err)
{
	const char *op = arg_str(args, "op"), *fw = arg_str(args, "framework");
	const char *gpu = arg_str(args, "gpu");
	char *text = NULL;
	size_t len = 0;
	int rc;

	if (!op)
		return kf_err_set(err, KF_EINVAL, "op: name the kernel's operation, e.g. rmsnorm");
	if (!fw)
		fw = "pytorch";
	if (strcmp(fw, "pytorch") != 0 && strcmp(fw, "transformers") != 0 &&
	    strcmp(fw, "diffusers") != 0)
		return kf_err_set(err, KF_EINVAL, "framework: '%s' is not one of %s", fw,
				  FRAMEWORKS);
	if ((rc = check_len("op", op, err)) || (rc = check_len("gpu", gpu, err)))
		return rc;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return kf_err_set(err, KF_ENOMEM, "out of memory building the prompt");
	fprintf(f,
		"Integrate the checked `%s` kernel into %s%s%s. Only a kernel that passed "
		"check_kernel and beat its baseline in benchmark_kernel is worth integrating.\n\n"
		"## 1. A torch op that torch.compile keeps\n\n"
		"Start from the kforge skill's skill/templates/kernel-builder/ (build.toml, "
		"torch-ext binding, Python package, pytest). Paste the __global__ kernel "
		"unchanged and launch it with the grid, block and shared bytes the spec used. "
		"Register it with TORCH_LIBRARY (mark written tensors `Tensor!`) and give it a "
		"fake implementation with torch.library.register_fake, so torch.compile traces "
		"through it without a graph break (test with fullgraph=True). Take the stream "
		"from at::cuda::getCurrentCUDAStream().\n\n",
		op, fw, gpu ? " for the " : "", gpu ? gpu : "");
	if (strcmp(fw, "transformers") == 0)
		fprintf(f,
			"## 2. Patch the model\n\n"
			"Match modules by class name (LlamaRMSNorm, Qwen3RMSNorm, ...), not by "
			"import: the classes move between versions. Read eps from the module "
			"(transformers calls it variance_epsilon; others eps). Replace forward on "
			"the instances after loading the weights; check the attention "
			"implementation (attn_implementation) before replacing attention.\n\n");
	else if (strcmp(fw, "diffusers") == 0)
		fprintf(f,
			"## 2. Patch the pipeline\n\n"
			"Patch before enable_model_cpu_offload() or sequential offload install "
			"their hooks. Mind the variants: RMSNorm with and without weight "
			"(elementwise_affine=False), GELU (tanh or erf) versus GEGLU, whose gate "
			"is the second half of proj's output. Attention goes through attention "
			"processors (set_attn_processor), not module replacement.\n\n");
	else
		fprintf(f, "## 2. Call it\n\n"
			   "Call the op from Python through the package's function; keep the "
			   "eager formula as a fallback for dtypes or devices the kernel does "
			   "not cover.\n\n");
	fprintf(f, "## 3. Prove it in place\n\n"
		   "Compare the patched model's outputs with the original's on real inputs "
		   "(relative L2 of the logits or images; bf16 lands near 1e-3), then time the "
		   "whole model: a kernel that wins alone can lose inside the model when it "
		   "breaks fusion.\n\n"
		   "## Guides\n\n");
	struct seen seen = {.n = 0};
	guide_links(f, app->kb, &seen, "torch library custom op register_fake torch.compile", NULL,
		    1);
	guide_links(f, app->kb, &seen, "kernel-builder project layout kernel hub", NULL, 1);
	if (strcmp(fw, "pytorch") != 0) {
		char q[80];
		snprintf(q, sizeof(q), "%s integration", fw);
		guide_links(f, app->kb, &seen, q, NULL, 1);
	} else {
		guide_links(f, app->kb, &seen, "pytorch cpp cuda extension bindings", NULL, 1);
	}
	if (fclose(f) != 0) {
		free(text);
		return kf_err_set(err, KF_ENOMEM, "out of memory building the prompt");
	}
	return one_message(text, messages, err);
}

static int prompt_complete(struct app *app, const char *arg, const char *prefix, json_t *arr,
			   struct kf_err *err)
{
	static const char *const fws[] = {"pytorch", "transformers", "diffusers"};
	size_t pl = strlen(prefix);

	(void)app;
	(void)err;
	if (strcmp(arg, "framework") == 0)
		for (size_t i = 0; i < sizeof(fws) / sizeof(fws[0]); i++)
			if (strncmp(fws[i], prefix, pl) == 0)
				json_array_append_new(arr, json_string(fws[i]));
	return 0;
}

static const struct prompt_arg OPTIMIZE_ARGS[] = {
	{"op", "the kernel's operation, e.g. rmsnorm", 1},
	{"gpu", "the target GPU name or alias", 0},
	{"run", "a benchmark run id from list_runs to start from", 0},
	{NULL, NULL, 0},
};

static const struct prompt_arg INTEGRATE_ARGS[] = {
	{"op", "the kernel's operation, e.g. rmsnorm", 1},
	{"framework", "pytorch (default), transformers or diffusers", 0},
	{"gpu", "the target GPU name or alias", 0},
	{NULL, NULL, 0},
};

static const struct prompt_def PROMPTS[] = {
	{"optimize-kernel", "Optimize a kernel",
	 "The measured optimization loop for a kernel that passes its check: where it stands "
	 "(from a benchmark run), what to read, the usual causes in order, and one change at "
	 "a time with a prediction.",
	 OPTIMIZE_ARGS, prompt_optimize, prompt_complete},
	{"integrate-kernel", "Integrate a kernel",
	 "Take a checked, benchmarked kernel into PyTorch (a torch op torch.compile keeps), "
	 "transformers or diffusers, and prove it inside the model.",
	 INTEGRATE_ARGS, prompt_integrate, prompt_complete},
};

const struct tool_group TOOLS_PROMPTS = {
	NULL, 0, NULL, 0, PROMPTS, sizeof(PROMPTS) / sizeof(PROMPTS[0]),
};
