/* tools_model: the benchmark_model MCP tool over sandbox/model: a model
 * built offline from a recipe with random weights, its modules swapped for
 * kforge's torch ops by a patch map, timed against the unpatched model
 * eager, under torch.compile and with CUDA graphs. Every call, answered or
 * failed, is a run in the history (kind bench, kernels "model:<recipe>"
 * and the patch ops). */
#include <string.h>

#include "sandbox/model/model.h"
#include "server/app.h"
#include "server/tools/groups.h"
#include "server/tools/tools_runs.h"

/* The result's "kernels": the model and the ops the patch maps use, so
 * list_runs can find the runs that used an op. */
static void add_kernels(json_t *out, const json_t *job)
{
	json_t *k = json_array(), *seen = json_object();
	char name[64];
	snprintf(name, sizeof name, "model:%s",
		 json_string_value(json_object_get(job, "recipe"))
			 ? json_string_value(json_object_get(job, "recipe"))
			 : "?");
	json_array_append_new(k, json_string(name));
	for (int c = 0; c < 2; c++) {
		const char *t;
		json_t *op;
		json_object_foreach(json_object_get(job, c ? "compile_patch" : "patch"), t, op) {
			const char *s = json_string_value(op);
			if (s && !json_object_get(seen, s)) {
				json_object_set_new(seen, s, json_true());
				snprintf(name, sizeof name, "patch:%s", s);
				json_array_append_new(k, json_string(name));
			}
		}
	}
	json_decref(seen);
	json_object_set_new(out, "kernels", k);
}

static int model_handler(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	struct app *app = tool_ctx_app(ctx);
	int64_t t0 = runs_now_ms();
	json_t *job = NULL;
	int gpu = -1;
	int rc = model_job_new(args, &job, err);
	if (!rc) {
		struct model_env env = {.data_dir = app->check.data_dir,
					.sandbox_none = app->check.sandbox_none,
					.runner = app->runner};
		struct model_opts o = {.timeout_s = (unsigned)json_integer_value(
					       json_object_get(args, "timeout_s")),
				       .cancel = tool_ctx_cancel_flag(ctx)};
		tool_ctx_progress(ctx, 0, 0, "building the model and the ops on the GPU host");
		rc = model_run(&env, job, &o, out, &gpu, err);
	}
	if (rc) { /* summary first, then what the run left (the model's classes) */
		json_t *e = json_pack("{s:s, s:{s:s, s:s}}", "summary", err->msg, "error", "code",
				      kf_err_name(rc), "message", err->msg);
		if (*out)
			json_object_update_missing(e, *out);
		json_decref(*out);
		*out = e;
	}
	if (job)
		add_kernels(*out, job);
	runs_record(app, HISTORY_BENCH, args, *out, rc, err->msg, gpu, runs_now_ms() - t0, NULL);
	json_decref(job);
	return rc;
}

static const char MODEL_INPUT[] =
	"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"recipe\"], "
	"\"properties\": {"
	"\"recipe\": {\"type\": \"string\", \"enum\": [\"qwen3\", \"llama\", \"dit\"], "
	"\"description\": \"qwen3 / llama: transformers' causal LM from a config; dit: DiT "
	"blocks with diffusers' module names (AdaLayerNormZero, Attention, RMSNorm, GEGLU or "
	"GELU, FeedForward); random weights, nothing downloaded\"}, "
	"\"dims\": {\"type\": \"object\", \"description\": \"qwen3/llama: layers (8), hidden "
	"(4096), intermediate (12288), heads (32), kv_heads (8), head_dim (128), vocab "
	"(151936); dit: layers (4), hidden (2048), heads (32), head_dim (64), ff_mult (4), "
	"activation (geglu | gelu_tanh)\"}, "
	"\"dtype\": {\"type\": \"string\", \"enum\": [\"bf16\", \"f16\", \"f32\"], "
	"\"default\": \"bf16\"}, "
	"\"patch\": {\"type\": \"object\", \"description\": \"{target: op}: target a module "
	"class name (Qwen3RMSNorm) or a glob over module names (model.layers.*.mlp); op one "
	"of rmsnorm, layernorm, add_rmsnorm (decoder layer: residual add + norm), "
	"gate_up_silu (MLP: one gate|up GEMM + kforge silu_and_mul), qk_norm_rope "
	"(attention: one q|k|v GEMM + fused per-head norm and rope), gate_up, fused_qkv "
	"(the GEMM merges alone), geglu, gelu_tanh, gelu, adaln_zero. Default per recipe\"}, "
	"\"compile_patch\": {\"type\": \"object\", \"description\": \"the patch used under "
	"torch.compile and CUDA graphs; default: the patch when given, else the recipe's "
	"(the GEMM merges: Inductor fuses norms and activations better than opaque ops "
	"let it)\"}, "
	"\"shapes\": {\"type\": \"array\", \"maxItems\": 8, \"items\": {\"type\": \"object\"}, "
	"\"description\": \"[{kind: prefill, batch, seq} | {kind: decode, batch, past}]; "
	"default prefill 1x2048, 8x512, decode 32x1 after 512 (dit: prefill 2x4096)\"}, "
	"\"modes\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"description\": "
	"\"eager, patched, compile, patched_compile, graphs, patched_graphs (decode; "
	"torch.compile mode reduce-overhead); default all\"}, "
	"\"iters\": {\"type\": \"integer\", \"minimum\": 3, \"maximum\": 200, \"default\": 20}, "
	"\"warmup\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 50, \"default\": 3}, "
	"\"seed\": {\"type\": \"integer\", \"minimum\": 0}, "
	"\"profile\": {\"type\": \"boolean\", \"default\": true}, "
	"\"fp32_check\": {\"type\": \"boolean\", \"default\": true}, "
	"\"timeout_s\": {\"type\": \"integer\", \"minimum\": 60, \"maximum\": 1800, "
	"\"default\": 900}}}";

static const char MODEL_OUTPUT[] =
	"{\"type\": \"object\", \"required\": [\"summary\"], \"properties\": {"
	"\"summary\": {\"type\": \"string\"}, \"speedups\": {\"type\": \"array\"}, "
	"\"latency\": {\"type\": \"array\"}, \"agreement\": {}, \"profile\": {\"type\": "
	"\"object\"}, \"memory\": {\"type\": \"object\"}, \"versions\": {\"type\": \"object\"}, "
	"\"patch\": {\"type\": \"object\"}, \"kernels\": {\"type\": \"array\"}, \"error\": "
	"{\"type\": \"object\"}}}";

static const struct tool_def MODEL_TOOLS[] = {
	{
		.name = "benchmark_model",
		.title = "Benchmark kforge's ops inside a model",
		.description =
			"Builds a model offline with random weights (transformers Qwen3 or Llama "
			"of any size, or DiT blocks with diffusers' module names), swaps modules "
			"for kforge's torch ops by a patch map, and measures: output agreement "
			"(rel L2 and max error vs the unpatched model, and whether the patched "
			"bf16 model is no further from an fp32 run than the unpatched one), "
			"latency medians with 95% intervals for prefill and decode shapes in "
			"eager, patched eager, torch.compile, patched + torch.compile and CUDA "
			"graphs (decode), the profiler's per-op share of GPU time, and peak GPU "
			"memory. An unknown module class is an error listing the model's classes. "
			"Minutes per call (torch.compile).",
		.input_schema = MODEL_INPUT,
		.output_schema = MODEL_OUTPUT,
		.annotations = 0,
		.handler = model_handler,
	},
};

const struct tool_group TOOLS_MODEL = {
	.tools = MODEL_TOOLS,
	.tools_len = sizeof(MODEL_TOOLS) / sizeof(MODEL_TOOLS[0]),
};
