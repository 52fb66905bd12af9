#!/usr/bin/env python3
"""rms_short.py: rmsnorm on short rows (a model's per-head q/k norms, D of
64-256) from several builds of kforge's rmsnorm_launch against PyTorch:
F.rms_norm under torch.compile (Inductor's fused kernel), the Hugging Face
formula under torch.compile, F.rms_norm eager, and kforge's torch op
(torch.ops.kforge.rmsnorm) inside a compiled function when it loads.

    python3 kernels/bench/rms_short.py new=build/a/librms.so old=build/b/librms.so

Each LABEL=PATH is a shared library exporting rmsnorm_launch (libkfk.so
from kernels/bench/build.sh, or kernels/rmsnorm.cu alone built with
nvcc -shared); the first is the one the others are compared with.

Correctness first: every library's output against a float64 reference on
the same inputs (relative L2 and max abs error, NaN fails), and whether
it equals the first library's output bit for bit. Then timing as
kernels/bench/bench.py times: CUDA events around one call, the L2 flushed
(512 MiB written) before every call, warm-up first, the sides in an order
shuffled every repetition; the median and the 10th-90th percentiles of
the event times, and each side's kernel time (the torch profiler's device
time of its kernels over RMS_KERNEL_ITERS flushed calls, per call).

Environment: RMS_SHAPES (default "262144x64,262144x128"), RMS_DTYPES
(default "bf16"; f16, f32), RMS_ITERS (default 100), RMS_KERNEL_ITERS
(default 30), RMS_NO_COMPILE=1 (skip the compiled sides), RMS_JSON (write
every row there), KF_TORCH_LIB (libkforge_torch.so for the op side;
without it the side is left out). Writes files only where RMS_JSON points.
"""
import ctypes
import json
import os
import random
import statistics
import sys
import time

import torch
import torch.nn.functional as F

dev = torch.device("cuda")
DTYPES = {"bf16": (torch.bfloat16, 2), "f16": (torch.float16, 1), "f32": (torch.float32, 0)}
EPS = 1e-6
ITERS = int(os.environ.get("RMS_ITERS", "100"))
KITERS = int(os.environ.get("RMS_KERNEL_ITERS", "30"))
FLUSH = torch.empty(512 << 20, dtype=torch.uint8, device=dev)
vp = ctypes.c_void_p


def load(path):
    lib = ctypes.CDLL(path)
    lib.rmsnorm_launch.argtypes = [ctypes.c_int, vp, vp, vp, ctypes.c_int64, ctypes.c_int64,
                                   ctypes.c_float, vp]
    lib.rmsnorm_launch.restype = ctypes.c_int
    return lib


def kf_side(lib, code, x, w):
    T, D = x.shape
    s = vp(torch.cuda.current_stream().cuda_stream)

    def f():
        y = torch.empty_like(x)
        rc = lib.rmsnorm_launch(code, vp(y.data_ptr()), vp(x.data_ptr()), vp(w.data_ptr()), T, D,
                                EPS, s)
        if rc != 0:
            raise RuntimeError(f"rmsnorm_launch returned cudaError {rc}")
        return y
    return f


def hf_rmsnorm(x, w):
    h = x.float()
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS)
    return w * h.to(x.dtype)


def time_sides(fns):
    """Median, p10 and p90 event microseconds of each fn, interleaved in a
    shuffled order, the L2 flushed before every call."""
    for f in fns:
        for _ in range(3):
            f()
    torch.cuda.synchronize()
    ev = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
           for _ in range(ITERS)] for _ in fns]
    order = list(range(len(fns)))
    for i in range(ITERS):
        random.Random(i).shuffle(order)
        for j in order:
            FLUSH.zero_()
            ev[j][i][0].record()
            fns[j]()
            ev[j][i][1].record()
    torch.cuda.synchronize()
    out = []
    for j in range(len(fns)):
        t = sorted(s.elapsed_time(e) * 1e3 for s, e in ev[j])
        out.append((statistics.median(t), t[len(t) // 10], t[(9 * len(t)) // 10]))
    return out


def kernel_us(f):
    """The device time of f's kernels per call (flush kernels left out),
    over KITERS calls each after the flush."""
    from torch.profiler import ProfilerActivity, profile
    f()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(KITERS):
            FLUSH.zero_()
            f()
        torch.cuda.synchronize()
    tot, names = 0.0, set()
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None)
        if t is None:
            t = getattr(e, "cuda_time_total", 0)
        k = e.key or ""
        if t > 0 and "fill" not in k.lower() and not k.startswith(("cuda", "Memset")):
            tot += t
            names.add(k[:48])
    return tot / KITERS, sorted(names)


def check(y, ref):
    d = y.double()
    finite = bool(torch.isfinite(d).all())
    return {"rel_l2": float((d - ref).norm() / ref.norm()), "max_abs": float((d - ref).abs().max()),
            "finite": finite}


def run_shape(T, D, dtn, libs, op_ok, rows):
    dt, code = DTYPES[dtn]
    g = torch.Generator(device=dev).manual_seed(T * 1000 + D)
    x = torch.randn(T, D, device=dev, dtype=dt, generator=g)
    w = (1 + 0.1 * torch.randn(D, device=dev, dtype=torch.float32, generator=g)).to(dt)
    xd, wd = x.double(), w.double()
    ref = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + EPS) * wd
    sides, first = [], None
    tol = {"bf16": 8e-3, "f16": 1e-3, "f32": 1e-6}[dtn]
    for label, lib in libs:
        f = kf_side(lib, code, x, w)
        y = f()
        torch.cuda.synchronize()
        c = check(y, ref)
        c["bitwise_vs_first"] = None if first is None else bool(torch.equal(y, first))
        c["ok"] = c["finite"] and c["rel_l2"] <= tol
        first = y if first is None else first
        sides.append((label, f, c))
    if op_ok:
        op = lambda: torch.ops.kforge.rmsnorm(x, w, EPS)
        sides.append(("kforge op compiled", torch.compile(op, dynamic=False), None))
    if os.environ.get("RMS_NO_COMPILE") != "1":
        fr = torch.compile(lambda: F.rms_norm(x, (D,), w, EPS), dynamic=False)
        c = check(fr(), ref)
        c["ok"] = c["finite"] and c["rel_l2"] <= tol
        sides.append(("F.rms_norm compiled", fr, c))
        sides.append(("HF formula compiled", torch.compile(lambda: hf_rmsnorm(x, w),
                                                           dynamic=False), None))
    sides.append(("F.rms_norm eager", lambda: F.rms_norm(x, (D,), w, EPS), None))
    t0 = time.time()
    ts = time_sides([f for _, f, _ in sides])
    nbytes = (2 * T * D + D) * x.element_size()
    print(f"\n## {T}x{D} {dtn}: {nbytes / 1e6:.1f} MB moved; {ITERS} flushed calls a side "
          f"({time.time() - t0:.0f} s)", flush=True)
    print(f"{'side':<22}{'median us':>10}{'p10':>8}{'p90':>8}{'kernel us':>10}{'GB/s':>8}"
          f"{'x first':>8}  check", flush=True)
    base = ts[0][0]
    for (label, f, c), (med, p10, p90) in zip(sides, ts):
        try:
            kus, names = kernel_us(f)
        except Exception as e:  # noqa: BLE001 - the table still prints
            kus, names = float("nan"), [f"profiler failed: {e}"[:60]]
        chk = "-" if c is None else (
            f"{'ok' if c.get('ok', True) else 'FAIL'} relL2 {c['rel_l2']:.2e} max {c['max_abs']:.2e}"
            + ("" if c.get("bitwise_vs_first") is None else
               f" bitwise={'yes' if c['bitwise_vs_first'] else 'no'}"))
        print(f"{label:<22}{med:>10.2f}{p10:>8.2f}{p90:>8.2f}{kus:>10.2f}"
              f"{nbytes / (kus * 1e-6) / 1e9 if kus == kus and kus > 0 else 0:>8.0f}"
              f"{med / base:>8.2f}  {chk}", flush=True)
        rows.append(dict(shape=f"{T}x{D}", dtype=dtn, side=label, median_us=med, p10_us=p10,
                         p90_us=p90, kernel_us=kus, kernels=names, bytes=nbytes, check=c))
    del x, w, ref, xd, wd
    torch.cuda.empty_cache()


def main():
    libs = []
    for a in sys.argv[1:]:
        label, _, path = a.partition("=")
        if not path:
            sys.exit(f"rms_short.py: '{a}': expected LABEL=PATH of a library with rmsnorm_launch")
        libs.append((label, load(path)))
    if not libs:
        sys.exit("usage: rms_short.py LABEL=LIB.so [LABEL=LIB.so ...]")
    op_ok = False
    if os.environ.get("KF_TORCH_LIB"):
        try:
            sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "torch"))
            import kforge_torch
            kforge_torch.load(os.environ["KF_TORCH_LIB"])
            op_ok = True
        except Exception as e:  # noqa: BLE001 - the other sides still run
            print(f"# kforge torch op not loaded: {e}", flush=True)
    for k in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, k):
            setattr(torch._dynamo.config, k, 256)
    p = torch.cuda.get_device_properties(0)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {p.name}, "
          f"{p.multi_processor_count} SMs, torch {torch.__version__}; libs: "
          + ", ".join(a for a in sys.argv[1:]), flush=True)
    rows = []
    for sh in os.environ.get("RMS_SHAPES", "262144x64,262144x128").split(","):
        T, D = (int(v) for v in sh.split("x"))
        for dtn in os.environ.get("RMS_DTYPES", "bf16").split(","):
            try:
                run_shape(T, D, dtn, libs, op_ok, rows)
            except Exception as e:  # noqa: BLE001 - report, keep going
                print(f"# {sh} {dtn} failed: {type(e).__name__}: {e}", flush=True)
    if os.environ.get("RMS_JSON"):
        with open(os.environ["RMS_JSON"], "w") as f:
            json.dump(dict(gpu=p.name, torch=torch.__version__, rows=rows), f, indent=1)
    bad = [r for r in rows if r["check"] is not None and not r["check"].get("ok", True)]
    print(f"\n# {len(rows)} rows, {len(bad)} failed checks", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
