"""Swap every RMSNorm of a transformers Qwen3 model for the checked kernel,
then compare the patched model's logits with the original's.

The op: the kernel-builder package built from skill/templates/kernel-builder
(paste fast.cu's kernel into rmsnorm_cuda/rmsnorm.cu) when it is installed,
else kforge's own library op (kernels/torch: torch.ops.kforge.rmsnorm, C++,
with a fake implementation so torch.compile keeps the graph whole).

    python3 patch_qwen3.py                # Qwen/Qwen3-8B from the Hub
    python3 patch_qwen3.py --random-init  # a 2-layer Qwen3 from a config,
                                          # random weights, nothing downloaded

The same patch, timed inside the model against eager, torch.compile and
CUDA graphs: `kforge model-bench --args model_bench.json` (benchmark_model)."""
import os
import sys

import torch
import transformers

try:
    import kforge_rmsnorm  # the kernel-builder package

    def rms_norm(x, w, eps):
        return kforge_rmsnorm.rms_norm(x, w, eps)
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                    "kernels", "torch"))
    import kforge_torch

    kforge_torch.load()

    def rms_norm(x, w, eps):
        return torch.ops.kforge.rmsnorm(x.contiguous(), w, eps)

# Qwen3 has RMSNorm at four places per layer: input_layernorm,
# post_attention_layernorm, and q_norm / k_norm over head_dim (128), plus the
# final norm. They are all Qwen3RMSNorm; match by class name so the patch
# survives the module moving between transformers versions.
NORM_CLASSES = {"Qwen3RMSNorm", "LlamaRMSNorm", "Qwen2RMSNorm"}


def patch_rmsnorm(model: torch.nn.Module) -> int:
    n = 0
    for module in model.modules():
        if type(module).__name__ not in NORM_CLASSES:
            continue
        # transformers calls it variance_epsilon; other code bases say eps.
        eps = getattr(module, "variance_epsilon", getattr(module, "eps", 1e-6))

        def forward(x, m=module, e=eps):
            return rms_norm(x, m.weight.to(x.dtype), e)

        module.forward = forward
        n += 1
    return n


def load(random_init):
    if random_init:
        cfg = transformers.Qwen3Config(hidden_size=4096, intermediate_size=12288,
                                       num_hidden_layers=2, num_attention_heads=32,
                                       num_key_value_heads=8, head_dim=128, vocab_size=151936)
        cfg._attn_implementation = "sdpa"
        torch.manual_seed(0)
        torch.set_default_dtype(torch.bfloat16)
        with torch.device("cuda"):  # built on the GPU: a CPU init of 1.5B params takes minutes
            model = transformers.Qwen3ForCausalLM(cfg)
        torch.set_default_dtype(torch.float32)
        ids = torch.randint(0, cfg.vocab_size, (1, 64))
    else:
        name = "Qwen/Qwen3-8B"
        tok = transformers.AutoTokenizer.from_pretrained(name)
        model = transformers.AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)
        ids = tok("The roofline of an H200 says", return_tensors="pt").input_ids
    return model.cuda().eval(), ids.cuda()


def main():
    model, ids = load("--random-init" in sys.argv)
    with torch.no_grad():
        want = model(ids).logits.float()
        print("patched", patch_rmsnorm(model), "RMSNorm modules")
        got = model(ids).logits.float()
    rel = (got - want).norm() / want.norm()
    print(f"logits relative L2 difference: {rel:.2e}")  # bf16 rounding: ~1e-3 to 1e-2
    assert rel < 2e-2
    assert (got.argmax(-1) == want.argmax(-1)).float().mean() > 0.9


if __name__ == "__main__":
    main()
