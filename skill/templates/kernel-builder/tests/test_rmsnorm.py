"""Compares the op with the float64 formula at awkward sizes, and checks
that torch.compile keeps it in the graph (no graph break)."""
import pytest
import torch

import kforge_rmsnorm

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def reference(x, w, eps):
    x64 = x.double()
    return (x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * w.double()).to(x.dtype)


@pytest.mark.parametrize("dtype,atol", [(torch.float32, 1e-5), (torch.float16, 2e-3), (torch.bfloat16, 1.6e-2)])
@pytest.mark.parametrize("shape", [(1, 1), (7, 1000), (3, 4097), (2048, 4096), (2, 16384)])
def test_matches_float64_reference(dtype, atol, shape):
    gen = torch.Generator(device="cuda").manual_seed(1234)
    x = torch.randn(shape, device="cuda", dtype=dtype, generator=gen)
    w = torch.randn(shape[-1], device="cuda", dtype=dtype, generator=gen)
    got = kforge_rmsnorm.rms_norm(x, w, 1e-6)
    torch.testing.assert_close(got, reference(x, w, 1e-6), atol=atol, rtol=atol)


def test_torch_compile_keeps_the_op():
    x = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    compiled = torch.compile(lambda a, b: kforge_rmsnorm.rms_norm(a, b, 1e-6), fullgraph=True)
    torch.testing.assert_close(compiled(x, w), kforge_rmsnorm.rms_norm(x, w, 1e-6))
