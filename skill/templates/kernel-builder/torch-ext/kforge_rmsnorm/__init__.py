"""RMSNorm checked and benchmarked with kforge, as a torch op.

The fake (meta) implementation lets torch.compile trace through the op
without running it, so the compiled graph keeps this kernel instead of
falling back to eager or decomposing it.
"""
import torch

from ._ops import add_op_namespace_prefix, ops


@torch.library.register_fake(add_op_namespace_prefix("rms_norm"))
def _rms_norm_fake(out, x, w, eps):
    return None


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    out = torch.empty_like(x)
    ops.rms_norm(out, x.contiguous(), w, eps)
    return out


class RMSNorm(torch.nn.Module):
    """Drop-in for transformers' LlamaRMSNorm / Qwen3RMSNorm (eps attribute
    is `variance_epsilon` there: copy it when you swap modules)."""

    def __init__(self, hidden_size: int, eps: float = 1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight.to(x.dtype), self.variance_epsilon)


__all__ = ["rms_norm", "RMSNorm"]
