"""Swap every RMSNorm of a transformers Qwen3 model for the checked kernel,
then compare the patched model's logits with the original's.

Build the op first from skill/templates/kernel-builder (paste fast.cu's
kernel into rmsnorm_cuda/rmsnorm.cu), or load it from the Kernel Hub."""
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

import kforge_rmsnorm  # the kernel-builder package

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
            return kforge_rmsnorm.rms_norm(x, m.weight.to(x.dtype), e)

        module.forward = forward
        n += 1
    return n


def main():
    name = "Qwen/Qwen3-8B"
    tok = AutoTokenizer.from_pretrained(name)
    model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16).cuda().eval()
    ids = tok("The roofline of an H200 says", return_tensors="pt").input_ids.cuda()
    with torch.no_grad():
        want = model(ids).logits.float()
        print("patched", patch_rmsnorm(model), "RMSNorm modules")
        got = model(ids).logits.float()
    rel = (got - want).norm() / want.norm()
    print(f"logits relative L2 difference: {rel:.2e}")  # bf16 rounding: ~1e-3
    assert rel < 2e-2
    assert (got.argmax(-1) == want.argmax(-1)).float().mean() > 0.95


if __name__ == "__main__":
    main()
