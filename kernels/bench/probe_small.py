#!/usr/bin/env python3
"""probe_small.py: bench-only probe of the latency-bound RMSNorm shapes, for
ncu: runs kforge's rmsnorm and torch.compile's kernel for the same inputs a
few times each so `ncu -k regex:...` can report both side by side (launch
shape, registers, instructions, duration). Also prints Inductor's kernel
source when TORCH_LOGS=output_code is set. KF_LIB names libkfk.so.
Arguments: TxD or DTYPE:TxD (bf16, f16, f32); PROBE_NO_COMPILE=1 runs
kforge alone."""
import ctypes
import os
import sys

import torch

DTS = {"bf16": (torch.bfloat16, 2), "f16": (torch.float16, 1), "f32": (torch.float32, 0)}
COMPILE = os.environ.get("PROBE_NO_COMPILE") != "1"
shapes = []
for a in sys.argv[1:] or ["128x4096"]:
    dn, _, sh = a.rpartition(":")
    shapes.append((DTS[dn or "bf16"], tuple(int(v) for v in sh.split("x"))))
lib = ctypes.CDLL(os.environ.get("KF_LIB", "build/gpu-kernels/libkfk.so"))
vp, i64 = ctypes.c_void_p, ctypes.c_int64
lib.rmsnorm_launch.argtypes = [ctypes.c_int, vp, vp, vp, i64, i64, ctypes.c_float, vp]


def eager(x, w):
    v = x.float()
    v = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + 1e-6)
    return (v * w.float()).to(x.dtype)


for (dt, code), (T, D) in shapes:
    x = torch.randn(T, D, device="cuda", dtype=dt)
    w = torch.randn(D, device="cuda", dtype=dt)
    y = torch.empty_like(x)
    comp = torch.compile(eager, dynamic=False) if COMPILE else eager
    comp(x, w)
    torch.cuda.synchronize()
    s = torch.cuda.current_stream().cuda_stream
    for _ in range(3):
        lib.rmsnorm_launch(code, y.data_ptr(), x.data_ptr(), w.data_ptr(), T, D, 1e-6, s)
        if COMPILE:
            comp(x, w)
    torch.cuda.synchronize()
    err = (y.float() - comp(x, w).float()).abs().max().item()
    print(f"{dt} {T}x{D}: max |kforge - {'compile' if COMPILE else 'eager'}| = {err:.3g}")
