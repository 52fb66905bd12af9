"""kforge_torch: kforge's library kernels as PyTorch custom ops (torch.ops.kforge.*).

load() builds libkforge_torch.so once with kernels/torch/build.sh (direct
nvcc and g++ against the installed torch, cached by source, torch version
and GPU arch) and loads it; the ops themselves are C++ (kforge_ops.cpp):
no Python runs when a model calls them. This module only adds the fake
(meta) implementations torch.compile traces with, so a compiled model
keeps its graph whole around the ops.

    import kforge_torch
    kforge_torch.load()
    y = torch.ops.kforge.rmsnorm(x, w, 1e-6)

Ops: rmsnorm(x, weight?, eps), add_rmsnorm(x, residual, weight, eps) -> (y,
x + residual), layernorm(x, weight?, bias?, eps), silu_and_mul(x),
geglu(x, approximate), gelu(x, approximate), rope(x (T,H,Dh), cos, sin
(T,Dh/2) f32, neox), adaln_modulate(x (B,S,D), scale, shift (B,D)),
qk_norm_rope(qkv (B,S,(H+2KV)Dh), q_weight?, k_weight?, cos, sin (B|1,S,Dh),
H, KV, eps) -> (q (B,S,H,Dh), k (B,S,KV,Dh)).
"""
import os
import subprocess

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
_loaded = None


def build(cache_dir=None):
    """Builds (or finds in the cache) libkforge_torch.so; returns its path.
    Raises RuntimeError with the compiler's output when the build fails."""
    env = dict(os.environ)
    if "KF_GPU_ARCH" not in env and torch.cuda.is_available():
        env["KF_GPU_ARCH"] = "%d%d" % torch.cuda.get_device_capability()
    if cache_dir:
        env["KF_TORCH_CACHE"] = cache_dir
    p = subprocess.run(["sh", os.path.join(ROOT, "kernels", "torch", "build.sh")], env=env,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("kforge_torch: build failed:\n" + p.stdout[-4000:] + p.stderr[-8000:])
    return p.stdout.strip().splitlines()[-1]


def load(lib=None, cache_dir=None):
    """Loads the ops (building them first unless lib names a built library);
    returns the library's path. Idempotent."""
    global _loaded
    if _loaded:
        return _loaded
    lib = lib or os.environ.get("KF_TORCH_LIB") or build(cache_dir)
    torch.ops.load_library(lib)
    _register_fakes()
    _loaded = lib
    return lib


def _register_fakes():
    fake = torch.library.register_fake

    @fake("kforge::rmsnorm")
    def _rmsnorm(x, weight, eps):
        return torch.empty_like(x)

    @fake("kforge::add_rmsnorm")
    def _add_rmsnorm(x, residual, weight, eps):
        return torch.empty_like(x), torch.empty_like(x)

    @fake("kforge::layernorm")
    def _layernorm(x, weight, bias, eps):
        return torch.empty_like(x)

    def gated(x):
        return x.new_empty((*x.shape[:-1], x.shape[-1] // 2))

    @fake("kforge::silu_and_mul")
    def _silu_and_mul(x):
        return gated(x)

    @fake("kforge::geglu")
    def _geglu(x, approximate="none"):
        return gated(x)

    @fake("kforge::gelu")
    def _gelu(x, approximate="none"):
        return torch.empty_like(x)

    @fake("kforge::rope")
    def _rope(x, cos, sin, neox=True):
        return torch.empty_like(x)

    @fake("kforge::adaln_modulate")
    def _adaln(x, scale, shift):
        return torch.empty_like(x)

    @fake("kforge::qk_norm_rope")
    def _qk_norm_rope(qkv, q_weight, k_weight, cos, sin, num_heads, num_kv_heads, eps):
        B, S, N = qkv.shape
        dh = N // (num_heads + 2 * num_kv_heads)
        return qkv.new_empty((B, S, num_heads, dh)), qkv.new_empty((B, S, num_kv_heads, dh))
