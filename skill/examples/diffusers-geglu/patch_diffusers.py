"""Swap diffusers' GEGLU activations for the checked kernel, before any CPU
offload hooks are installed, then compare a transformer block's output.

GEGLU in diffusers keeps its projection (self.proj, a Linear to 2*D); only
the split-and-gate runs in our kernel. Its gate is the SECOND half of the
projection: keep that order (the kernel was checked against it)."""
import torch
from diffusers.models.activations import GEGLU

import kforge_geglu  # a kernel-builder package made from skill/templates/kernel-builder


def patch_geglu(model: torch.nn.Module) -> int:
    n = 0
    for module in model.modules():
        if not isinstance(module, GEGLU):
            continue

        def forward(hidden_states, *args, m=module, **kwargs):
            x = m.proj(hidden_states)
            if x.dtype != torch.bfloat16 or not x.is_cuda:
                h, gate = x.chunk(2, dim=-1)
                return h * torch.nn.functional.gelu(gate)
            return kforge_geglu.geglu(x.contiguous())

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
