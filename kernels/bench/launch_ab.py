#!/usr/bin/env python3
"""launch_ab.py: bench-only probe of the latency-bound RMSNorm shapes: the
same kforge kernel launched through the library's runtime API call
(libkfk.so) and through the driver API from build/kernels/kernels.fatbin
(cuModuleLoad + cuLaunchKernel, as kforge's harness and Triton launch),
against torch.compile's kernel, timed by bench.py's time_all as the table
is (events, L2 flushed, rotated round-robin). Without the flush (run 9,
lease 2) the host could not keep up (45 us of Python a call) and the
events timed the host, so there is no such mode. Tells whether a gap to
torch.compile is in the kernel or in how it is launched.
LAUNCH_CARVEOUTS="P ..." adds driver-API copies of the kernel with the
preferred shared-memory carveout set to P percent (a kernel's shared-memory
configuration differing from the previous kernel's makes the SMs
reconfigure between them). Arguments: TxD shapes (bf16); KF_LIB and
KF_FATBIN name the builds."""
import ctypes
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the library, FLUSH and hf_rmsnorm)

ITERS = int(os.environ.get("BENCH_AB_ITERS", "300"))
cu = ctypes.CDLL("libcuda.so.1")
vp = ctypes.c_void_p


def ck(r, what):
    if r != 0:
        raise RuntimeError(f"{what}: CUresult {r}")


def module_fn(path, name, carveout=None):
    """The kernel from its own load of the module (attributes set on it
    apply to this copy alone)."""
    mod, fn = vp(), vp()
    ck(cu.cuModuleLoad(ctypes.byref(mod), path.encode()), "cuModuleLoad")
    ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, name.encode()), "cuModuleGetFunction")
    if carveout is not None:  # CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
        ck(cu.cuFuncSetAttribute(fn, 9, carveout), "cuFuncSetAttribute")
    return fn


def row_block(T, D, esize, threads=256):
    """kf::row_block (kernels/kf_cuda.cuh)."""
    b = (D * esize + 2047) // 2048 * 32
    f = 1 + (T * b <= 67584) + 2 * (T * b <= 33792)
    x = min(max(b * f, 32), 1024)
    y = (threads // x) * (T > 1024)
    return x, max(y, 1)


def main():
    fatbin = os.environ.get("KF_FATBIN", "build/kernels/kernels.fatbin")
    fn = module_fn(fatbin, "kf_rmsnorm_bf16")
    carve = [int(p) for p in os.environ.get("LAUNCH_CARVEOUTS", "").split()]
    cfns = [module_fn(fatbin, "kf_rmsnorm_bf16", p) for p in carve]
    for sh in sys.argv[1:] or ["128x4096", "512x4096", "1024x2048", "16384x4096"]:
        T, D = (int(v) for v in sh.split("x"))
        x = torch.randn(T, D, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(D, device="cuda", dtype=torch.bfloat16)
        y_rt, y_drv = torch.empty_like(x), torch.empty_like(x)
        s = torch.cuda.current_stream().cuda_stream
        tx, ty = row_block(T, D, 2)
        args = [vp(y_drv.data_ptr()), vp(x.data_ptr()), vp(w.data_ptr()), ctypes.c_int(T),
                ctypes.c_int(D), ctypes.c_float(1e-6)]
        params = (vp * len(args))(*[ctypes.cast(ctypes.pointer(a), vp) for a in args])
        grid = (T + ty - 1) // ty

        def rt():
            bench.call(bench.kf.rmsnorm_launch(2, vp(y_rt.data_ptr()), vp(x.data_ptr()),
                                               vp(w.data_ptr()), T, D, 1e-6, vp(s)))

        def drv(fn=fn):
            ck(cu.cuLaunchKernel(fn, grid, 1, 1, tx, ty, 1, 0, vp(s), params, None),
               "cuLaunchKernel")

        comp = torch.compile(lambda: bench.hf_rmsnorm(x, w), dynamic=False)
        rt(), drv()
        ref = comp()
        torch.cuda.synchronize()
        same = torch.equal(y_rt, y_drv)
        err = (y_rt.float() - ref.float()).abs().max().item()
        fns = [rt, drv, comp] + [lambda f=f: drv(f) for f in cfns]
        ts = bench.time_all(fns, iters=ITERS)
        print(f"bf16 {T}x{D} block {tx}x{ty}: runtime {ts[0]:7.2f}  driver {ts[1]:7.2f}  "
              f"compile {ts[2]:7.2f} "
              + "".join(f" carveout{p}% {t:7.2f}" for p, t in zip(carve, ts[3:]))
              + f" us  (rt==drv {same}, max|kf-compile| {err:.3g})", flush=True)

if __name__ == "__main__":
    main()
