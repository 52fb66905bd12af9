#!/usr/bin/env python3
"""bench.py: kforge's kernels against PyTorch eager and torch.compile on the
local GPU; prints ONE table (op, shape, dtype, kforge / eager / compile /
fused-torch microseconds, GB/s, % of the measured copy bandwidth, speedups).

Run by `make bench-kernels` (kernels/bench/run.sh) on a GPU machine after
kernels/bench/build.sh built build/gpu-kernels/libkfk.so. Every side is
timed the same way: CUDA events around one call on the current stream,
the L2 flushed before every call by writing a 512 MiB buffer (the flush is
queued before the start event, so host launch overhead hides behind it and
the figure is GPU time), warm-up first, the implementations interleaved
in an order shuffled every repetition (rep_order), the median of the
repetitions reported. kforge is called
through ctypes with torch's current stream; inputs are N(0,1) (never
zeros). Every kforge output is compared with eager before timing.

"eager" is what model code calls: the Hugging Face formula for RMSNorm
(x.float(), pow, mean, rsqrt, multiply, cast), F.layer_norm, torch.softmax,
F.silu(a) * b, F.gelu, the rotate-halves / interleaved rotary formula in
fp32, x * (1 + scale) + shift, and torch.matmul (cuBLAS) for the GEMM.
"compile" is torch.compile(eager, dynamic=False), compiled per shape.
"fused" is PyTorch's own fused op where one exists (F.rms_norm).

It writes files only where BENCH_MD, BENCH_JSON and BENCH_TRITON_DUMP
point (build/ or $OUT, never the tree); everything else is printed.

Environment: KF_LIB (path of libkfk.so), BENCH_ITERS (default 30),
BENCH_MD (also write the table as Markdown there, the form
kernels/MEASUREMENTS.md uses), BENCH_BUDGET_S (after this many seconds
torch.compile is skipped so the table still prints; default 200),
BENCH_JSON (write all rows there), BENCH_QUICK=1 (fewer cases),
BENCH_KF_ALLOC=0 (kforge writes one output buffer made once instead of a
fresh one from the caching allocator every call, as eager's and compile's
outputs are; see kf_out), BENCH_PROBE=REGEX (for ncu: the target cases
whose names match run kforge's kernel and torch.compile's twice each,
untimed, each after the flush, between cudaProfilerStart and Stop after a
warm-up; e.g. `ncu --profile-from-start off --cache-control none -k
regex:'kf_|triton' python3 bench.py`), BENCH_TRACE=REGEX (the matching
target cases' kforge and torch.compile timed as the table times them,
under the CUDA profiler: per side the event time, the kernels' own
duration, and the gap from the flush's end to the first kernel's start;
BENCH_TRACE_ITERS repetitions, default 50; BENCH_TRITON=1 adds, for
silu_and_mul, Inductor's kernel and a Triton replica writing the output
kforge gets: see triton_sides),
BENCH_CASES=REGEX (the table's rows for the matching target cases only),
BENCH_CHUNK=N (time_all: N calls of one implementation in a row instead
of alternating every call), BENCH_ORDER=shuffle|rotate|reverse (the order
of the sides in each repetition; default shuffle, see rep_order)."""
import ctypes
import json
import math
import os
import random
import re
import statistics
import sys
import time

import torch
import torch.nn.functional as F

T0 = time.time()
ITERS = int(os.environ.get("BENCH_ITERS", "30"))
CHUNK = max(1, int(os.environ.get("BENCH_CHUNK", "1")))
ORDER_MODE = os.environ.get("BENCH_ORDER", "shuffle")  # rep_order
if ORDER_MODE not in ("shuffle", "rotate", "reverse"):
    sys.exit(f"bench.py: BENCH_ORDER={ORDER_MODE!r}: expected shuffle, rotate or reverse")
BUDGET = float(os.environ.get("BENCH_BUDGET_S", "200"))
QUICK = os.environ.get("BENCH_QUICK") == "1"
LIB = os.environ.get("KF_LIB", "build/gpu-kernels/libkfk.so")

try:
    import torch._dynamo as dynamo
    for k in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
              "accumulated_recompile_limit"):
        if hasattr(dynamo.config, k):
            setattr(dynamo.config, k, 4096)
except Exception:  # pragma: no cover - older torch
    pass

dev = torch.device("cuda")
DT = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}  # enum kf_dtype
DTN = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
vp, i64, f32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_float


def load_lib(path):
    lib = ctypes.CDLL(path)
    for name, args in {
        "rmsnorm_launch": [ctypes.c_int, vp, vp, vp, i64, i64, f32, vp],
        "add_rmsnorm_launch": [ctypes.c_int, vp, vp, vp, vp, vp, i64, i64, f32, vp],
        "layernorm_launch": [ctypes.c_int, vp, vp, vp, vp, i64, i64, f32, vp],
        "softmax_launch": [ctypes.c_int, vp, vp, i64, i64, vp],
        "activation_launch": [ctypes.c_int, ctypes.c_int, vp, vp, i64, i64, vp],
        "rope_launch": [ctypes.c_int, ctypes.c_int, vp, vp, vp, vp, i64, i64, i64, vp],
        "adaln_modulate_launch": [ctypes.c_int, vp, vp, vp, vp, i64, i64, i64, vp],
        "gemm_launch": [ctypes.c_int, vp, vp, vp, i64, i64, i64, vp],
        "gemm_mma_launch": [ctypes.c_int, vp, vp, vp, i64, i64, i64, vp],
        "gemm_sm90_launch": [vp, vp, vp, i64, i64, i64, ctypes.c_int, vp],
    }.items():
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = ctypes.c_int
    return lib


kf = load_lib(LIB)
PROBE = os.environ.get("BENCH_PROBE")  # a regex of target_cases() names: ncu mode
TRACE = os.environ.get("BENCH_TRACE")  # a regex of target_cases() names: profiler mode
TRACE_ITERS = int(os.environ.get("BENCH_TRACE_ITERS", "50"))


def stream():
    return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)


def ptr(t):
    return ctypes.c_void_p(t.data_ptr()) if t is not None else None


def call(rc):
    if rc != 0:
        raise RuntimeError(f"kforge launch returned cudaError {rc}")


FLUSH = torch.empty(512 << 20, dtype=torch.uint8, device=dev)
ORDER = []  # time_all: the fn index of every timed call, in order (trace_case)


def rep_order(n, r):
    """The order of the n fns in repetition r (BENCH_ORDER). shuffle (the
    default): a permutation drawn from a generator seeded with r, so every
    fn takes every position and follows every other fn about equally often.
    rotate: fns shifted by r; it keeps the cycle, so each fn always follows
    the same other fn (across the flush), and that neighbour moved the
    small shapes' event times by 0.3-0.4 us on an H200.
    reverse: the rotation run backwards (each fn follows the other
    neighbour), to measure that effect."""
    if ORDER_MODE == "shuffle":
        p = list(range(n))
        random.Random(r).shuffle(p)
        return p
    if ORDER_MODE == "reverse":
        return [(r - p) % n for p in range(n)]
    return [(p + r) % n for p in range(n)]


def time_all(fns, iters=ITERS):
    """Median microseconds of each fn, interleaved, L2 flushed before each.
    The order changes every repetition (rep_order): in a fixed order the
    same code read up to 0.9 us (small shapes) or 1-2% (large) apart by its
    position alone on an H200 (kernels/MEASUREMENTS.md).
    BENCH_CHUNK=N > 1: each fn runs N timed calls in a row after one untimed
    call, so every timed call follows a call of the same fn (same buffers)
    and the flush; the chunks change order the same way."""
    for f in fns:
        for _ in range(3):
            f()
    torch.cuda.synchronize()
    ev = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
           for _ in range(iters)] for _ in fns]
    n = len(fns)
    ORDER.clear()
    for r in range(0, iters, CHUNK):
        for j in rep_order(n, r // CHUNK):
            f = fns[j]
            if CHUNK > 1:  # untimed: the chunk's calls all follow this fn
                FLUSH.zero_()
                f()
            for i in range(r, min(r + CHUNK, iters)):
                ORDER.append(j)
                FLUSH.zero_()
                ev[j][i][0].record()
                f()
                ev[j][i][1].record()
    torch.cuda.synchronize()
    return [statistics.median(s.elapsed_time(e) * 1e3 for s, e in ev[j]) for j in range(len(fns))]


def trace_case(kf_fn, eager_fn, extra=()):
    """BENCH_TRACE: kforge, the named fns of extra, and torch.compile (when
    eager_fn is given) timed by time_all under the CUDA profiler (CUPTI kernel records). The kernel stream is
    cut at every flush kernel; the pieces are the timed calls in time_all's
    order (ORDER). Prints, per side, the median event time, the median sum
    of its kernels' durations, the median gap from the flush's end to its
    first kernel's start, and its first kernel's name, grid, block and
    registers (which configuration Inductor picked): whether a side is
    slower in its kernels or before they start."""
    import tempfile
    from torch.profiler import ProfilerActivity, profile
    names = ["kforge"] + [n for n, _ in extra] + (["compile"] if eager_fn else [])
    fns = [kf_fn] + [f for _, f in extra]
    fns += [torch.compile(eager_fn, dynamic=False)] if eager_fn else []
    outs = []  # where each side's first output lies (kf_out: placement moves times)
    for f in fns:
        o = f()
        o = o[0] if isinstance(o, (tuple, list)) else o
        outs.append(f"out 0x{o.data_ptr():x}" if isinstance(o, torch.Tensor) else "")
        del o
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        evt = time_all(fns, iters=TRACE_ITERS)
    with tempfile.NamedTemporaryFile(suffix=".json") as tf:
        prof.export_chrome_trace(tf.name)
        with open(tf.name) as fh:
            trace = json.load(fh)
    ks = sorted((e for e in trace["traceEvents"] if e.get("cat") == "kernel"),
                key=lambda e: e["ts"])
    flush = [i for i, k in enumerate(ks) if "fill" in k["name"].lower()]
    if len(flush) != len(ORDER):
        print(f"#   trace: {len(flush)} flush kernels for {len(ORDER)} calls; not attributed",
              flush=True)
        return None
    calls = [[] for _ in fns]  # per fn: (kernel us, gap us, first kernel's name)
    for c, (i, j) in enumerate(zip(flush, flush[1:] + [len(ks)])):
        seg = ks[i + 1:j]
        if seg:
            a = seg[0].get("args", {})
            calls[ORDER[c]].append((sum(k["dur"] for k in seg),
                                    seg[0]["ts"] - ks[i]["ts"] - ks[i]["dur"], seg[0]["name"],
                                    f"{a.get('grid')}x{a.get('block')} "
                                    f"r{a.get('registers per thread')}"))
    for n, cs, ev, o in zip(names, calls, evt, outs):
        med = lambda k: statistics.median(c[k] for c in cs) if cs else float("nan")
        print(f"#   {n:<8} event {ev:8.2f}  kernel {med(0):8.2f}  gap {med(1):6.2f}  "
              f"n={len(cs)}  {cs[0][2][:60] + ' ' + cs[0][3] if cs else '-'}  {o}", flush=True)
    return None


def copy_bandwidth():
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device=dev)
    b = torch.empty_like(a)
    a.random_(0, 255)
    (us,) = time_all([lambda: b.copy_(a)], iters=20)
    return 2 * n / (us * 1e-6) / 1e9


ROWS = []


def compile_fn(fn):
    if time.time() - T0 > BUDGET:
        return None
    return torch.compile(fn, dynamic=False)


def run_case(op, shape, dt, kf_fn, eager_fn, nbytes, check=None, fused_fn=None, flops=None,
             tol=None, do_compile=True, trace_extra=(), ref_fn=None):
    """Checks kf_fn's output against ref_fn's (default: eager's), then
    times kforge, eager, compile and fused."""
    if PROBE:
        # for ncu (--profile-from-start off): kforge's kernel and
        # torch.compile's, warmed up (compile and autotune) outside the
        # profiled range, then twice each inside it, each after the L2
        # flush as the table times them (ncu --cache-control none keeps
        # that state), untimed
        fns = [kf_fn]
        if do_compile:
            fns.append(torch.compile(eager_fn, dynamic=False))
        for f in fns + fns:
            f()
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        for f in fns + fns:
            FLUSH.zero_()
            f()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        return None
    if TRACE:
        return trace_case(kf_fn, eager_fn if do_compile else None, trace_extra)
    out_kf = kf_fn()
    torch.cuda.synchronize()
    out_ref = (ref_fn or eager_fn)()
    ok = True
    if check is not False:
        a = out_kf if isinstance(out_kf, (tuple, list)) else (out_kf,)
        b = out_ref if isinstance(out_ref, (tuple, list)) else (out_ref,)
        at, rt = tol or {torch.float32: (1e-4, 1e-4), torch.float16: (4e-3, 4e-3),
                         torch.bfloat16: (2e-2, 2e-2)}[dt]
        for u, v in zip(a, b):
            if not torch.allclose(u.float(), v.float(), atol=at, rtol=rt):
                ok = False
                err = (u.float() - v.float()).abs().max().item()
                print(f"# MISMATCH {op} {shape} {DTN[dt]}: max |kforge - eager| = {err:.4g}",
                      flush=True)
    fns = [kf_fn, eager_fn]
    comp = None
    if do_compile:
        try:
            comp = compile_fn(eager_fn)
            if comp is not None:
                comp()
                fns.append(comp)
        except Exception as e:  # report, keep going
            print(f"# torch.compile failed for {op} {shape}: {type(e).__name__}: {e}", flush=True)
            comp = None
    if fused_fn is not None:
        fns.append(fused_fn)
    ts = time_all(fns)
    t_kf, t_eager = ts[0], ts[1]
    t_comp = ts[2] if comp is not None else None
    t_fused = ts[-1] if fused_fn is not None else None
    row = dict(op=op, shape=shape, dtype=DTN[dt], kforge_us=t_kf, eager_us=t_eager,
               compile_us=t_comp, fused_us=t_fused, bytes=nbytes,
               gbps=nbytes / (t_kf * 1e-6) / 1e9, ok=ok)
    if flops:
        row["tflops"] = flops / (t_kf * 1e-6) / 1e12
        row["eager_tflops"] = flops / (t_eager * 1e-6) / 1e12
    ROWS.append(row)
    print_row(row)
    return row


COPY = None


def fmt(x, w=8, p=1):
    return f"{x:{w}.{p}f}" if x is not None else f"{'-':>{w}}"


def print_header():
    print(f"{'op':<17}{'shape':<16}{'dtype':<6}{'kforge':>8}{'eager':>8}{'compile':>8}"
          f"{'fused':>8}{'GB/s':>8}{'%copy':>7}{'x eager':>8}{'x comp':>8}{'x fused':>8}  ok",
          flush=True)


def print_row(r):
    pct = 100 * r["gbps"] / COPY
    sp = lambda t: fmt(t / r["kforge_us"], 8, 2) if t else f"{'-':>8}"
    extra = f"  {r['tflops']:.0f} TFLOP/s vs cuBLAS {r['eager_tflops']:.0f}" if "tflops" in r else ""
    print(f"{r['op']:<17}{r['shape']:<16}{r['dtype']:<6}{fmt(r['kforge_us'])}{fmt(r['eager_us'])}"
          f"{fmt(r['compile_us'])}{fmt(r['fused_us'])}{fmt(r['gbps'], 8, 0)}{fmt(pct, 7, 1)}"
          f"{sp(r['eager_us'])}{sp(r['compile_us'])}{sp(r['fused_us'])}  "
          f"{'yes' if r['ok'] else 'NO'}{extra}", flush=True)


KF_ALLOC = os.environ.get("BENCH_KF_ALLOC", "1") == "1"


def kf_out(make):
    """kforge's output buffer: a fresh one from the caching allocator every
    call, as eager's and compile's outputs are (the default); with
    BENCH_KF_ALLOC=0 one buffer made once. Where the output lies moves a
    kernel's time: Inductor's own silu_and_mul kernel ran 0.07-0.19 us (up
    to 0.2%) slower writing a fixed buffer than writing its own on an H200,
    so every side gets its output the same way.
    Returns a function giving the buffer."""
    if KF_ALLOC:
        return make
    buf = make()
    return lambda: buf


def rn(*s, dtype):
    return torch.randn(*s, device=dev, dtype=dtype)


# --- cases -----------------------------------------------------------------

def hf_rmsnorm(x, w, eps=1e-6):
    h = x.float()
    v = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(v + eps)
    return w * h.to(x.dtype) if w is not None else h.to(x.dtype)


def case_rmsnorm(shape, dt, weight=True):
    *lead, D = shape
    T = math.prod(lead)
    x = rn(*shape, dtype=dt)
    w = rn(D, dtype=dt) if weight else None
    yo = kf_out(lambda: torch.empty_like(x))
    s = stream()

    def kfn():
        y = yo()
        call(kf.rmsnorm_launch(DT[dt], ptr(y), ptr(x), ptr(w), T, D, 1e-6, s))
        return y
    eager = lambda: hf_rmsnorm(x, w)
    fused = lambda: F.rms_norm(x, (D,), w, 1e-6)
    nb = (2 * T * D + (D if weight else 0)) * x.element_size()
    return run_case("rmsnorm" if weight else "rmsnorm_noweight", "x".join(map(str, shape)), dt, kfn,
             eager, nb, fused_fn=fused)


def case_add_rmsnorm(shape, dt):
    *lead, D = shape
    T = math.prod(lead)
    x, res, w = rn(*shape, dtype=dt), rn(*shape, dtype=dt), rn(D, dtype=dt)
    yo, ro = kf_out(lambda: torch.empty_like(x)), kf_out(lambda: torch.empty_like(x))
    s = stream()

    def kfn():
        y, r = yo(), ro()
        call(kf.add_rmsnorm_launch(DT[dt], ptr(y), ptr(r), ptr(x), ptr(res), ptr(w), T, D, 1e-6, s))
        return y, r

    def eager():
        rr = x + res
        return hf_rmsnorm(rr, w), rr
    nb = (4 * T * D + D) * x.element_size()
    return run_case("add_rmsnorm", "x".join(map(str, shape)), dt, kfn, eager, nb)


def case_layernorm(shape, dt):
    *lead, D = shape
    T = math.prod(lead)
    x, w, b = rn(*shape, dtype=dt), rn(D, dtype=dt), rn(D, dtype=dt)
    yo = kf_out(lambda: torch.empty_like(x))
    s = stream()

    def kfn():
        y = yo()
        call(kf.layernorm_launch(DT[dt], ptr(y), ptr(x), ptr(w), ptr(b), T, D, 1e-5, s))
        return y
    eager = lambda: F.layer_norm(x, (D,), w, b, 1e-5)
    return run_case("layernorm", "x".join(map(str, shape)), dt, kfn, eager, (2 * T * D + 2 * D) * x.element_size())


def case_softmax(shape, dt):
    *lead, D = shape
    T = math.prod(lead)
    x = rn(*shape, dtype=dt) * 3
    yo = kf_out(lambda: torch.empty_like(x))
    s = stream()

    def kfn():
        y = yo()
        call(kf.softmax_launch(DT[dt], ptr(y), ptr(x), T, D, s))
        return y
    eager = lambda: torch.softmax(x, -1)
    return run_case("softmax", "x".join(map(str, shape)), dt, kfn, eager, 2 * T * D * x.element_size(),
             tol={torch.float32: (1e-6, 1e-4), torch.float16: (1e-5, 4e-3),
                  torch.bfloat16: (1e-5, 2e-2)}[dt])


ACTS = {"silu_and_mul": 0, "geglu": 1, "geglu_tanh": 2, "gelu": 3, "gelu_tanh": 4}


def case_act(name, shape, dt):
    *lead, D = shape
    T = math.prod(lead)
    gated = name in ("silu_and_mul", "geglu", "geglu_tanh")
    x = rn(*lead, 2 * D if gated else D, dtype=dt)
    yo = kf_out(lambda: torch.empty(*lead, D, device=dev, dtype=dt))
    s = stream()

    def kfn():
        y = yo()
        call(kf.activation_launch(ACTS[name], DT[dt], ptr(y), ptr(x), T, D, s))
        return y
    if name == "silu_and_mul":
        eager = lambda: F.silu(x[..., :D]) * x[..., D:]
    elif name == "geglu":
        eager = lambda: F.gelu(x[..., :D]) * x[..., D:]
    elif name == "geglu_tanh":
        eager = lambda: F.gelu(x[..., :D], approximate="tanh") * x[..., D:]
    elif name == "gelu":
        eager = lambda: F.gelu(x)
    else:
        eager = lambda: F.gelu(x, approximate="tanh")
    nb = (3 if gated else 2) * T * D * x.element_size()
    extra = ()
    if TRACE and name == "silu_and_mul" and os.environ.get("BENCH_TRITON") == "1":
        extra = triton_sides(eager, x, yo, T * D)
    return run_case(name, "x".join(map(str, shape)), dt, kfn, eager, nb, trace_extra=extra)


def triton_sides(eager, x, yo, n):
    """BENCH_TRITON=1 (trace mode, silu_and_mul): two more sides that get
    their output as kforge does (yo(), see kf_out): "inductor", the Triton
    kernel torch.compile generated for eager, launched through Inductor's
    own launcher; "replica", the same computation written here in Triton.
    Whether compile's lead comes with its code or with its buffers.
    BENCH_TRITON_DUMP=DIR: Inductor's source, the replica's PTX and cubin.
    bf16 and T*D a multiple of the replica's 1024-element blocks only."""
    if x.dtype != torch.bfloat16 or n % 1024:
        print("#   BENCH_TRITON: bf16 and T*D % 1024 == 0 only; no Triton sides", flush=True)
        return ()
    import types
    import triton
    import triton.language as tl
    from torch._inductor.utils import run_and_get_code
    sides, dump = [], os.environ.get("BENCH_TRITON_DUMP")
    s = lambda: torch.cuda.current_stream().cuda_stream
    try:
        torch._dynamo.reset()
        _, codes = run_and_get_code(torch.compile(eager, dynamic=False))
        mod = types.ModuleType("kf_inductor_silu")
        exec(compile(codes[0], "kf_inductor_silu", "exec"), mod.__dict__)
        names = [k for k in vars(mod) if k.startswith("triton_")]
        kern = getattr(mod, names[0])

        def ind():
            y = yo()
            kern.run(x, y, n, stream=s())
            return y
        ind()
        sides.append(("inductor", ind))
        if dump:
            with open(os.path.join(dump, "inductor-silu.py"), "w") as f:
                f.write(codes[0])
    except Exception as e:
        print(f"#   inductor side failed: {type(e).__name__}: {e}", flush=True)
    try:
        from triton.language.extra import libdevice
        D = x.shape[-1] // 2

        @triton.jit
        def replica(in_ptr0, out_ptr0, D: tl.constexpr, XBLOCK: tl.constexpr):
            xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
            x0 = xindex % D
            x1 = xindex // D
            a = tl.load(in_ptr0 + (x0 + 2 * D * x1)).to(tl.float32)
            b = tl.load(in_ptr0 + (D + x0 + 2 * D * x1)).to(tl.float32)
            tl.store(out_ptr0 + xindex, (a / (1.0 + libdevice.exp(-a)) * b).to(tl.bfloat16))
        grid = (n // 1024,)
        k = replica[grid](x, yo(), D, XBLOCK=1024, num_warps=4)

        def rep():
            y = yo()
            replica[grid](x, y, D, XBLOCK=1024, num_warps=4)
            return y
        sides.append(("replica", rep))
        if dump:
            for ext in ("ptx", "cubin"):
                mode = "w" if ext == "ptx" else "wb"
                with open(os.path.join(dump, f"replica-silu.{ext}"), mode) as f:
                    f.write(k.asm[ext])
    except Exception as e:
        print(f"#   replica side failed: {type(e).__name__}: {e}", flush=True)
    torch.cuda.synchronize()
    ref = eager()
    for name, f in sides:
        out = f()
        torch.cuda.synchronize()
        if not torch.allclose(out.float(), ref.float(), atol=2e-2, rtol=2e-2):
            print(f"#   {name} side: output differs from eager", flush=True)
    return sides


def case_rope(neox, T, H, Dh, dt):
    x = rn(T, H, Dh, dtype=dt)
    ang = torch.rand(T, Dh // 2, device=dev) * 6.283
    c, sn = torch.cos(ang).contiguous(), torch.sin(ang).contiguous()
    yo = kf_out(lambda: torch.empty_like(x))
    s = stream()
    h = Dh // 2

    def kfn():
        y = yo()
        call(kf.rope_launch(1 if neox else 0, DT[dt], ptr(y), ptr(x), ptr(c), ptr(sn), T, H, Dh, s))
        return y
    cc, ss = c[:, None, :], sn[:, None, :]
    if neox:
        def eager():
            xf = x.float()
            x1, x2 = xf[..., :h], xf[..., h:]
            return torch.cat((x1 * cc - x2 * ss, x2 * cc + x1 * ss), -1).to(dt)
    else:
        def eager():
            xf = x.float()
            x1, x2 = xf[..., 0::2], xf[..., 1::2]
            return torch.stack((x1 * cc - x2 * ss, x2 * cc + x1 * ss), -1).flatten(-2).to(dt)
    nb = 2 * T * H * Dh * x.element_size() + 2 * T * h * 4
    return run_case("rope_neox" if neox else "rope_gptj", f"{T}x{H}x{Dh}", dt, kfn, eager, nb)


def case_adaln(B, S, D, dt):
    x, sc, sh = rn(B, S, D, dtype=dt), rn(B, D, dtype=dt) * 0.1, rn(B, D, dtype=dt)
    yo = kf_out(lambda: torch.empty_like(x))
    s = stream()

    def kfn():
        y = yo()
        call(kf.adaln_modulate_launch(DT[dt], ptr(y), ptr(x), ptr(sc), ptr(sh), B, S, D, s))
        return y
    eager = lambda: x * (1 + sc[:, None, :]) + sh[:, None, :]
    # checked against the formula in fp32, rounded once: eager rounds 1 +
    # scale and the product to bf16 before adding shift, and where the sum
    # cancels (|x| ~ 4, y ~ 0) that is off by more than the tolerance (max
    # |kforge - eager| 0.031 on random inputs)
    ref = lambda: (x.float() * (1 + sc.float()[:, None, :]) + sh.float()[:, None, :]).to(dt)
    return run_case("adaln_modulate", f"{B}x{S}x{D}", dt, kfn, eager,
                    (2 * B * S * D + 2 * B * D) * x.element_size(), ref_fn=ref)


def case_gemm(M, N, K, dt):
    x, w = rn(M, K, dtype=dt), rn(N, K, dtype=dt)
    y = torch.full((M, N), float("nan"), device=dev, dtype=dt)
    s = stream()
    if dt == torch.bfloat16:
        y3 = torch.empty(M, N, device=dev, dtype=dt)
        variants = [("gemm_mma", lambda: kf.gemm_mma_launch(DT[dt], ptr(y3), ptr(x), ptr(w), M, N, K, s))]
        variants += [(f"gemm_sm90 g{g}", lambda g=g: kf.gemm_sm90_launch(ptr(y3), ptr(x), ptr(w), M, N, K, g, s))
                     for g in (0, 4, 16)]
        for name, f in variants:
            def vfn(f=f):
                call(f())
                return y3
            y3.fill_(float("nan"))  # poisoned: an unwritten tile fails the check
            run_case(name, f"{M}x{N}x{K}", dt, vfn, lambda: torch.matmul(x, w.t()),
                     (M * K + N * K + M * N) * 2, flops=2 * M * N * K,
                     tol={torch.bfloat16: (1.0, 2e-2)}[dt], do_compile=False)

    def kfn():
        call(kf.gemm_launch(DT[dt], ptr(y), ptr(x), ptr(w), M, N, K, s))
        return y
    eager = lambda: torch.matmul(x, w.t())
    nb = (M * K + N * K + M * N) * x.element_size()
    return run_case("gemm", f"{M}x{N}x{K}", dt, kfn, eager, nb, flops=2 * M * N * K,
             tol={torch.float16: (0.5, 1e-2), torch.bfloat16: (1.0, 2e-2)}[dt], do_compile=False)


def case_gemm_lib(M, N, K):
    """gemm_launch alone (bf16), for the trace and BENCH_CASES: y made per
    call; the trace adds cuBLAS (torch.matmul) as a side."""
    bf = torch.bfloat16
    x, w = rn(M, K, dtype=bf), rn(N, K, dtype=bf)
    s = stream()

    def kfn():
        y = torch.empty(M, N, device=dev, dtype=bf)
        call(kf.gemm_launch(DT[bf], ptr(y), ptr(x), ptr(w), M, N, K, s))
        return y
    eager = lambda: torch.matmul(x, w.t())
    return run_case("gemm", f"{M}x{N}x{K}", bf, kfn, eager, (M * K + N * K + M * N) * 2,
                    flops=2 * M * N * K, tol={bf: (1.0, 2e-2)}, do_compile=False,
                    trace_extra=(("cublas", eager),))


def target_cases():
    """The cases BENCH_TRACE, BENCH_PROBE and BENCH_CASES pick from:
    [(name, fn)]."""
    bf, big = torch.bfloat16, (16384, 4096)
    cases = [(f"rmsnorm {'x'.join(map(str, sh))} bf16", lambda sh=sh: case_rmsnorm(sh, bf))
             for sh in ((1, 128, 4096), (1, 512, 4096), (1, 1024, 4096), (1, 1024, 2048),
                        (2, 1024, 2048), (1, 8192, 2048))]
    cases += [(f"rmsnorm {'x'.join(map(str, sh))} bf16", lambda sh=sh: case_rmsnorm(sh, bf))
              for sh in ((1, 4096, 2048), (2, 4096, 3072), (1, 8192, 4096), (4, 4096, 3072))]
    cases += [(f"rmsnorm {'x'.join(map(str, sh))} f32",
               lambda sh=sh: case_rmsnorm(sh, torch.float32))
              for sh in ((1, 128, 4096), (1, 512, 4096))]
    cases += [("rmsnorm 16384x4096 bf16", lambda: case_rmsnorm(big, bf)),
              ("rmsnorm 16384x4096 f16", lambda: case_rmsnorm(big, torch.float16)),
              ("rmsnorm 16384x4096 f32", lambda: case_rmsnorm(big, torch.float32)),
              ("rmsnorm_noweight 16384x4096 bf16", lambda: case_rmsnorm(big, bf, False)),
              ("add_rmsnorm 16384x4096 bf16", lambda: case_add_rmsnorm(big, bf)),
              ("layernorm 16384x4096 bf16", lambda: case_layernorm(big, bf)),
              ("layernorm 16384x4096 f32", lambda: case_layernorm(big, torch.float32)),
              ("layernorm 2x4096x3072 bf16", lambda: case_layernorm((2, 4096, 3072), bf)),
              ("softmax 16384x4096 bf16", lambda: case_softmax(big, bf)),
              ("softmax 16384x4096 f16", lambda: case_softmax(big, torch.float16)),
              ("softmax 16384x4096 f32", lambda: case_softmax(big, torch.float32)),
              ("softmax 4096x8192 bf16", lambda: case_softmax((4096, 8192), bf))]
    cases += [(f"{a} 16384x4096 bf16", lambda a=a: case_act(a, big, bf)) for a in ACTS]
    cases += [("silu_and_mul 16384x3072 bf16", lambda: case_act("silu_and_mul", (16384, 3072), bf))]
    cases += [("gelu 16384x4096 f16", lambda: case_act("gelu", big, torch.float16)),
              ("adaln_modulate 4x4096x4096 bf16", lambda: case_adaln(4, 4096, 4096, bf))]
    cases += [(f"gemm {M}x{N}x{K} bf16", lambda M=M, N=N, K=K: case_gemm_lib(M, N, K))
              for M, N, K in ((4096, 4096, 4096), (16384, 4096, 4096), (8192, 8192, 8192),
                              (1000, 3000, 1000))]
    return cases


def driver_version():
    try:
        import subprocess
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout
        return out.strip().splitlines()[0]
    except Exception:
        return "?"


def write_markdown(path, gpu, cuda):
    """The table as Markdown, the form kernels/MEASUREMENTS.md uses."""
    with open(path, "w") as f:
        f.write(f"{gpu}, driver {driver_version()}, CUDA {cuda}, PyTorch {torch.__version__}, "
                f"{time.strftime('%Y-%m-%d', time.gmtime())}; device-to-device copy "
                f"{COPY:.0f} GB/s. Times in us, median of {ITERS}, L2 flushed.\n\n")
        f.write("| op | shape | dtype | kforge | eager | compile | fused | GB/s | % copy | x eager "
                "| x compile | TFLOP/s (cuBLAS) |\n")
        f.write("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
        for r in ROWS:
            def c(v, p=1):
                return f"{v:.{p}f}" if v is not None else "-"
            sp = lambda t: f"{t / r['kforge_us']:.2f}" if t else "-"
            tf = f"{r['tflops']:.0f} ({r['eager_tflops']:.0f})" if "tflops" in r else ""
            f.write(f"| {r['op']} | {r['shape'].replace('x', '×')} | {r['dtype']} | {c(r['kforge_us'])} | "
                    f"{c(r['eager_us'])} | {c(r['compile_us'])} | {c(r['fused_us'])} | {c(r['gbps'], 0)} | "
                    f"{100 * r['gbps'] / COPY:.1f} | {sp(r['eager_us'])} | {sp(r['compile_us'])} | {tf} |"
                    f"{'' if r['ok'] else ' MISMATCH'}\n")


def write_json(p):
    """BENCH_JSON: every row printed."""
    if os.environ.get("BENCH_JSON"):
        with open(os.environ["BENCH_JSON"], "w") as f:
            json.dump(dict(gpu=p.name, copy_gbps=COPY, torch=torch.__version__, order=ORDER_MODE,
                           rows=ROWS), f, indent=1)


def main():
    global COPY
    p = torch.cuda.get_device_properties(0)
    drv = torch.version.cuda
    COPY = copy_bandwidth()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {p.name}, "
          f"{p.multi_processor_count} SMs, torch {torch.__version__} (CUDA {drv}), "
          f"device-to-device copy {COPY:.0f} GB/s (read + write, 1 GiB)", flush=True)
    print(f"# times in us (median of {ITERS}, L2 flushed); GB/s and %copy are kforge's; "
          f"x = speedup of kforge over that column", flush=True)
    if os.environ.get("BENCH_CASES"):
        print_header()
        for name, c in target_cases():
            if re.search(os.environ["BENCH_CASES"], name):
                c()
        write_json(p)
        return 0
    if PROBE or TRACE:
        for name, c in target_cases():
            if re.search(PROBE or TRACE, name):
                print(f"# {'probe' if PROBE else 'trace'} {name}", flush=True)
                c()
        return 0
    print_header()
    bf = torch.bfloat16
    ltx = [(1, 1024, 2048), (2, 1024, 2048), (4, 1024, 2048), (1, 4096, 2048), (2, 4096, 3072),
           (1, 8192, 2048), (4, 4096, 3072)]
    qwen = [(1, 128, 4096), (1, 512, 4096), (1, 1024, 4096), (1, 2048, 4096), (1, 4096, 4096),
            (4, 512, 4096), (8, 256, 4096), (1, 8192, 4096)]
    big = (16384, 4096)
    cases = []
    for s in (ltx if not QUICK else ltx[:2]) + (qwen if not QUICK else qwen[:2]) + [big]:
        cases.append(lambda s=s: case_rmsnorm(s, bf))
    cases += [lambda: case_rmsnorm(big, torch.float32), lambda: case_rmsnorm(big, torch.float16),
              lambda: case_rmsnorm(big, bf, weight=False),
              lambda: case_rmsnorm((2, 4096, 3072), bf, weight=False),
              lambda: case_add_rmsnorm(big, bf), lambda: case_layernorm(big, bf),
              lambda: case_layernorm(big, torch.float32), lambda: case_softmax(big, bf),
              lambda: case_softmax(big, torch.float32)]
    for a in ACTS:
        cases.append(lambda a=a: case_act(a, big, bf))
    cases += [lambda: case_rope(True, 16384, 32, 128, bf), lambda: case_rope(False, 16384, 32, 128, bf),
              lambda: case_adaln(4, 4096, 4096, bf),
              lambda: case_gemm(4096, 4096, 4096, bf), lambda: case_gemm(16384, 4096, 4096, bf),
              lambda: case_gemm(8192, 8192, 8192, bf), lambda: case_gemm(1000, 3000, 1000, bf),
              lambda: case_gemm(4096, 4096, 4096, torch.float16)]
    for c in cases:
        try:
            c()
        except Exception as e:
            print(f"# case failed: {type(e).__name__}: {e}", flush=True)
        torch.cuda.empty_cache()
    if os.environ.get("BENCH_MD"):
        write_markdown(os.environ["BENCH_MD"], p.name, drv)
    write_json(p)
    print(f"# {len(ROWS)} rows in {time.time() - T0:.0f} s; {sum(not r['ok'] for r in ROWS)} mismatches",
          flush=True)


if __name__ == "__main__":
    sys.exit(main())
