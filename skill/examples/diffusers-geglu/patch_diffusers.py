"""Swap diffusers' GEGLU activations for the checked kernel, before any CPU
offload hooks are installed, then compare a transformer block's output.

GEGLU in diffusers keeps its projection (self.proj, a Linear to 2*D); only
the split-and-gate runs in our kernel. Its gate is the SECOND half of the
projection. The op: the kernel-builder package made from
skill/templates/kernel-builder with fast.cu (it keeps that order) when it is
installed, else kforge's library op torch.ops.kforge.geglu (kernels/torch),
which gates with the FIRST half as vLLM's gelu_and_mul does: the patch then
swaps the projection's two halves once, so the output is unchanged.

Without diffusers installed the block is kforge's DiT recipe
(sandbox/model/recipes.py), which has diffusers' module names and math.
The same patch timed inside DiT blocks against eager and torch.compile:
`kforge model-bench --args model_bench.json` (benchmark_model)."""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
try:
    from diffusers.models.activations import GEGLU
except ImportError:
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "sandbox", "model"))
    from recipes import GEGLU

try:
    import kforge_geglu  # a kernel-builder package made from skill/templates/kernel-builder
    GATE_FIRST = False

    def geglu(x):
        return kforge_geglu.geglu(x)
except ImportError:
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "kernels", "torch"))
    import kforge_torch

    kforge_torch.load()
    GATE_FIRST = True

    def geglu(x):
        return torch.ops.kforge.geglu(x, "none")


def patch_geglu(model: torch.nn.Module) -> int:
    n = 0
    for module in model.modules():
        if not isinstance(module, GEGLU):
            continue
        if GATE_FIRST:  # reorder the projection once: gate half first
            with torch.no_grad():
                for p in (module.proj.weight, module.proj.bias):
                    if p is not None:
                        h = p.shape[0] // 2
                        p.copy_(torch.cat([p[h:], p[:h]], 0))

        def forward(hidden_states, *args, m=module, **kwargs):
            return geglu(m.proj(hidden_states).contiguous())

        module.forward = forward
        n += 1
    return n


# Patch first, then enable offload: enable_model_cpu_offload() wraps modules
# with hooks, and a patch applied after it can be bypassed or moved off GPU.
#   pipe = DiffusionPipeline.from_pretrained(..., torch_dtype=torch.bfloat16)
#   patch_geglu(pipe.transformer)   # or pipe.unet
#   pipe.enable_model_cpu_offload()

if __name__ == "__main__":
    block = GEGLU(1280, 5120).to("cuda", torch.bfloat16)
    x = torch.randn(2, 77, 1280, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        want = block(x)
        patch_geglu(block)
        got = block(x)
    torch.testing.assert_close(got, want, atol=2e-2, rtol=2e-2)
    print("GEGLU patched and matching")
