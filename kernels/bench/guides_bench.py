#!/usr/bin/env python3
"""guides_bench.py: the measurements behind knowledge/guides/groupnorm-conv.md,
triton-vs-cuda.md, attention-registers.md and attention-decode.md, on the local GPU. The default
mode measures GroupNorm and convolutions at the shapes of diffusers' UNets
and VAEs (bf16, 32 groups):

- GroupNorm + SiLU (diffusers' ResnetBlock2D norm -> nonlinearity): eager
  F.group_norm alone and with F.silu, NCHW and channels_last; torch.compile of
  the same function (Inductor's Triton kernels), NCHW and channels_last; the
  guide's two-pass CUDA kernel (the first ```cuda block of groupnorm-conv.md,
  built by the caller into GN_LIB) with its default split and with one block
  per group. Every output is compared with a float64 reference first.
- 3x3 convolution (cuDNN, cudnn.benchmark on) NCHW against channels_last, and
  the kernels each launches (torch.profiler), so transposes show by name.
- GroupNorm + SiLU + conv chain: eager NCHW, eager channels_last, compiled
  channels_last.

Timing as kernels/bench/bench.py: CUDA events around one call on the current
stream, the L2 flushed before every call by writing a 512 MiB buffer, warm-up
first, the variants interleaved in a shuffled order each repetition, the
median reported with the min and max of the repetitions. Writes only under
GN_OUT (default build/gn-bench).

Modes: (none) the GroupNorm and convolution tables; --attn LIB: the
attention-registers guide's forward kernel and attention-decode's split-KV
combine (their first ```cuda blocks, built together into LIB) against float64
references, the forward timed against SDPA; --triton-rms PATH: the triton-vs-cuda guide's
Triton RMSNorm (its ```python block saved at PATH) checked and timed;
--inductor-code: compile GroupNorm + SiLU for one
shape NCHW and channels_last and exit (run under TORCH_LOGS=output_code to see
Inductor's code); --quick: one shape, eager and CUDA only, inside NVTX ranges
(for nsys). Environment: GN_LIB, GN_OUT, GN_ITERS (default 25), GN_BUDGET_S
(torch.compile is skipped after this many seconds; default 120)."""
import ctypes
import json
import os
import random
import statistics
import sys
import time

import torch
import torch.nn.functional as F

G, EPS = 32, 1e-6
SHAPES = [  # (N, C, H, W) and where diffusers meets it
    ((2, 320, 128, 128), "SDXL UNet, 1024 px, first level"),
    ((2, 1280, 32, 32), "SDXL UNet, lowest level"),
    ((1, 512, 256, 256), "VAE decoder, 512 ch at 256 px"),
    ((1, 128, 1024, 1024), "VAE decoder, last level at 1024 px"),
]
OUT = os.environ.get("GN_OUT", "build/gn-bench")
ITERS = int(os.environ.get("GN_ITERS", "25"))
BUDGET = float(os.environ.get("GN_BUDGET_S", "120"))
T0 = time.time()
dev = torch.device("cuda")
flush = None
# every (shape, memory format) compiles gn_silu again: keep them all compiled
for _k in ("recompile_limit", "cache_size_limit"):
    if hasattr(torch._dynamo.config, _k):
        setattr(torch._dynamo.config, _k, 64)


def timed(variants, iters=ITERS):
    """variants: {name: fn}. Median, min, max microseconds per name."""
    global flush
    if flush is None:
        flush = torch.empty(512 << 20, dtype=torch.uint8, device=dev)
    for fn in variants.values():
        for _ in range(3):
            fn()
    ev = {k: [] for k in variants}
    names = list(variants)
    for _ in range(iters):
        random.shuffle(names)
        for k in names:
            flush.zero_()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            variants[k]()
            b.record()
            ev[k].append((a, b))
    torch.cuda.synchronize()
    res = {}
    for k, pairs in ev.items():
        us = [a.elapsed_time(b) * 1000 for a, b in pairs]
        res[k] = (statistics.median(us), min(us), max(us))
    return res


class Cuda:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        f = self.lib.gn_silu_bf16
        f.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_size_t] + [ctypes.c_int] * 4 + \
            [ctypes.c_float] + [ctypes.c_int] * 2 + [ctypes.c_void_p]
        f.restype = ctypes.c_int
        self.work = torch.empty(4 << 20, dtype=torch.float32, device=dev)

    def __call__(self, x, w, b, silu=True, chunks=0):
        N, C, H, W = x.shape
        assert x.is_contiguous()
        y = torch.empty_like(x)
        rc = self.lib.gn_silu_bf16(x.data_ptr(), w.data_ptr(), b.data_ptr(), y.data_ptr(),
                                   self.work.data_ptr(), self.work.numel() * 4, N, C, H * W, G,
                                   EPS, int(silu), chunks,
                                   torch.cuda.current_stream().cuda_stream)
        if rc != 0:
            raise RuntimeError(f"gn_silu_bf16 returned {rc} for {tuple(x.shape)}")
        return y


def gn_silu(x, w, b):
    return F.silu(F.group_norm(x, G, w, b, EPS))


def gn_only(x, w, b):
    return F.group_norm(x, G, w, b, EPS)


def err(y, ref):
    d = (y.double() - ref).abs()
    return {"max_abs": d.max().item(),
            "rel_l2": ((y.double() - ref).norm() / ref.norm()).item()}


def inputs(shape, seed=0):
    g = torch.Generator(device=dev).manual_seed(seed)
    N, C, H, W = shape
    # a per-channel offset and scale, as activations have: the mean is not 0
    x = (torch.randn(shape, device=dev, generator=g) * 2 +
         torch.randn(1, C, 1, 1, device=dev, generator=g) * 3).to(torch.bfloat16)
    w = (1 + 0.1 * torch.randn(C, device=dev, generator=g)).to(torch.bfloat16)
    b = (0.1 * torch.randn(C, device=dev, generator=g)).to(torch.bfloat16)
    return x, w, b


def gn_rows(cuda, rows, accuracy, save):
    for shape, where in SHAPES:
        x, w, b = inputs(shape)
        xc = x.contiguous(memory_format=torch.channels_last)
        ref = gn_silu(x.double(), w.double(), b.double())
        v = {
            "eager GN only": lambda: gn_only(x, w, b),
            "eager GN+SiLU": lambda: gn_silu(x, w, b),
            "eager GN+SiLU channels_last": lambda: gn_silu(xc, w, b),
        }
        outs = {"eager GN+SiLU": gn_silu(x, w, b), "eager GN+SiLU channels_last": gn_silu(xc, w, b)}
        if cuda:
            v["CUDA two-pass"] = lambda: cuda(x, w, b)
            v["CUDA one block a group"] = lambda: cuda(x, w, b, chunks=1)
            outs["CUDA two-pass"] = cuda(x, w, b)
            outs["CUDA one block a group"] = cuda(x, w, b, chunks=1)
        if time.time() - T0 < BUDGET:
            c1 = torch.compile(gn_silu, dynamic=False)
            c2 = torch.compile(gn_silu, dynamic=False)
            outs["compile GN+SiLU"] = c1(x, w, b)
            outs["compile GN+SiLU channels_last"] = c2(xc, w, b)
            v["compile GN+SiLU"] = lambda: c1(x, w, b)
            v["compile GN+SiLU channels_last"] = lambda: c2(xc, w, b)
        for k, y in outs.items():
            e = err(y, ref)
            e.update(shape=list(shape), variant=k,
                     out_channels_last=bool(y.is_contiguous(memory_format=torch.channels_last)
                                            and not y.is_contiguous()))
            accuracy.append(e)
        del ref
        nbytes = 2 * 2 * x.numel()  # read x, write y: the floor
        for k, (med, lo, hi) in timed(v).items():
            rows.append({"shape": list(shape), "where": where, "variant": k, "us": med,
                         "us_min": lo, "us_max": hi, "GBps_floor_bytes": nbytes / med / 1e3})
        save()
        print(f"[{time.time() - T0:.0f} s] GN {shape} done", flush=True)


def kernels_of(fn):
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
        fn()
        torch.cuda.synchronize()
    try:
        return [(e.name, getattr(e, "device_time", None) or getattr(e, "cuda_time", 0.0))
                for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    except Exception as ex:  # the profiler's event API moves between versions
        return [(f"profiler: {ex!r}", 0.0)]


def conv_rows(rows, kernels, save):
    torch.backends.cudnn.benchmark = True
    for shape in [(2, 320, 128, 128), (1, 512, 256, 256)]:
        x, w, b = inputs(shape)
        C = shape[1]
        conv = torch.nn.Conv2d(C, C, 3, padding=1).to(dev, torch.bfloat16)
        conv_cl = torch.nn.Conv2d(C, C, 3, padding=1).to(dev, torch.bfloat16)
        conv_cl.load_state_dict(conv.state_dict())
        conv_cl = conv_cl.to(memory_format=torch.channels_last)
        xc = x.contiguous(memory_format=torch.channels_last)
        with torch.no_grad():
            v = {"conv3x3 NCHW": lambda: conv(x), "conv3x3 channels_last": lambda: conv_cl(xc),
                 "GN+SiLU+conv eager NCHW": lambda: conv(gn_silu(x, w, b)),
                 "GN+SiLU+conv eager channels_last": lambda: conv_cl(gn_silu(xc, w, b))}
            if time.time() - T0 < BUDGET:
                chain = torch.compile(lambda t: conv_cl(gn_silu(t, w, b)), dynamic=False)
                chain(xc)
                v["GN+SiLU+conv compile channels_last"] = lambda: chain(xc)
            d = (conv(x).double() - conv_cl(xc).double()).abs().max().item()
            flops = 2 * x.numel() * C * 9
            for k, (med, lo, hi) in timed(v).items():
                rows.append({"shape": list(shape), "variant": k, "us": med, "us_min": lo,
                             "us_max": hi, "conv_TFLOPs": flops / med / 1e6 if "conv3x3" in k else None,
                             "nchw_vs_cl_max_abs": d})
            for k in ("conv3x3 NCHW", "conv3x3 channels_last", "GN+SiLU+conv eager NCHW",
                      "GN+SiLU+conv eager channels_last"):
                kernels[f"{k} {shape}"] = kernels_of(v[k])
        save()
        print(f"[{time.time() - T0:.0f} s] conv {shape} done", flush=True)


def md(rows, accuracy):
    out = ["| shape | variant | median us | min-max us | GB/s (read x + write y) |",
           "| --- | --- | --- | --- | --- |"]
    for r in rows:
        if "GBps_floor_bytes" in r:
            out.append(f"| {tuple(r['shape'])} | {r['variant']} | {r['us']:.1f} | "
                       f"{r['us_min']:.1f}-{r['us_max']:.1f} | {r['GBps_floor_bytes']:.0f} |")
    out += ["", "| shape | variant | median us | min-max us | conv TFLOP/s |",
            "| --- | --- | --- | --- | --- |"]
    for r in rows:
        if "conv_TFLOPs" in r:
            t = f"{r['conv_TFLOPs']:.0f}" if r["conv_TFLOPs"] else ""
            out.append(f"| {tuple(r['shape'])} | {r['variant']} | {r['us']:.1f} | "
                       f"{r['us_min']:.1f}-{r['us_max']:.1f} | {t} |")
    out += ["", "| shape | variant | max abs err vs float64 | rel L2 | output channels_last |",
            "| --- | --- | --- | --- | --- |"]
    for a in accuracy:
        out.append(f"| {tuple(a['shape'])} | {a['variant']} | {a['max_abs']:.3g} | "
                   f"{a['rel_l2']:.3g} | {a['out_channels_last']} |")
    return "\n".join(out) + "\n"


def triton_rms(path):
    """The triton-vs-cuda guide's Triton RMSNorm (its ```python block, saved
    at path): agreement with a float64 reference, time against eager and
    compiled F.rms_norm, and a compiled function around it (run under
    TORCH_LOGS=output_code to see whether Inductor fused its neighbours)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("guide_triton_rms", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    rows = []
    for T, D in ((262144, 64), (262144, 128), (16384, 1024)):
        g = torch.Generator(device=dev).manual_seed(1)
        x = torch.randn(T, D, device=dev, generator=g).to(torch.bfloat16)
        w = (1 + 0.1 * torch.randn(D, device=dev, generator=g)).to(torch.bfloat16)
        ref = F.rms_norm(x.double(), (D,), w.double(), 1e-6)
        y = torch.ops.guide.rmsnorm(x, w, 1e-6)
        e = err(y, ref)
        comp = torch.compile(lambda a: F.rms_norm(a, (D,), w, 1e-6), dynamic=False)
        e_c = err(comp(x), ref)
        v = {"triton_op (guide)": lambda: torch.ops.guide.rmsnorm(x, w, 1e-6),
             "F.rms_norm eager": lambda: F.rms_norm(x, (D,), w, 1e-6),
             "F.rms_norm compiled": lambda: comp(x)}
        for k, (med, lo, hi) in timed(v).items():
            rows.append({"T": T, "D": D, "variant": k, "us": med, "us_min": lo, "us_max": hi,
                         "GBps": 4 * T * D / med / 1e3})
        rows.append({"T": T, "D": D, "variant": "accuracy", "triton_max_abs": e["max_abs"],
                     "compiled_max_abs": e_c["max_abs"]})
    # the op inside a compiled graph, with a neighbour Inductor could fuse
    x = torch.randn(4096, 64, device=dev).to(torch.bfloat16)
    w = torch.ones(64, device=dev, dtype=torch.bfloat16)
    f = torch.compile(lambda a: torch.ops.guide.rmsnorm(a * 2.0, w, 1e-6) + 1.0, dynamic=False)
    d = (f(x).double() - (F.rms_norm(x.double() * 2, (64,), w.double(), 1e-6) + 1)).abs().max()
    rows.append({"variant": "compiled graph around triton_op", "max_abs": d.item()})
    return rows


def attn_check(path):
    """The attention-registers guide's mma.sync flash-attention kernel and the
    attention-decode guide's split-KV combine, against float64 references; the
    forward timed against F.scaled_dot_product_attention (PyTorch's default
    backend choice)."""
    lib = ctypes.CDLL(path)
    lib.attn_fwd_bf16.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 2 + [ctypes.c_void_p]
    lib.splitkv_combine_bf16.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 2 + \
        [ctypes.c_void_p]
    stream = torch.cuda.current_stream().cuda_stream
    rows = []
    for B, H, N in ((2, 8, 1000), (1, 16, 4096), (4, 32, 2048)):
        g = torch.Generator(device=dev).manual_seed(2)
        q, k, v = (torch.randn(B, H, N, 64, device=dev, generator=g).to(torch.bfloat16)
                   for _ in range(3))
        o = torch.empty_like(q)

        def call():
            rc = lib.attn_fwd_bf16(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                                   B * H, N, stream)
            if rc != 0:
                raise RuntimeError(f"attn_fwd_bf16 returned {rc}")
        call()
        ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double())
        e = err(o, ref)
        e_sdpa = err(F.scaled_dot_product_attention(q, k, v), ref)
        del ref
        flops = 4 * B * H * N * N * 64
        t = timed({"guide kernel": call, "SDPA": lambda: F.scaled_dot_product_attention(q, k, v)})
        rows.append({"shape": [B, H, N, 64], "guide_max_abs": e["max_abs"],
                     "guide_rel_l2": e["rel_l2"], "sdpa_max_abs": e_sdpa["max_abs"],
                     "sdpa_rel_l2": e_sdpa["rel_l2"],
                     "guide_us": t["guide kernel"][0], "sdpa_us": t["SDPA"][0],
                     "guide_TFLOPs": flops / t["guide kernel"][0] / 1e6,
                     "sdpa_TFLOPs": flops / t["SDPA"][0] / 1e6})
    # split-KV decode: one query a row, the keys in S splits, one split of row 0 empty
    R, N, S = 64, 8192, 16
    g = torch.Generator(device=dev).manual_seed(3)
    q1 = torch.randn(R, 64, device=dev, generator=g, dtype=torch.float64)
    kk = torch.randn(R, N, 64, device=dev, generator=g, dtype=torch.float64)
    vv = torch.randn(R, N, 64, device=dev, generator=g, dtype=torch.float64)
    sc = torch.einsum("rnd,rd->rn", kk, q1) / 8.0
    sc[0, 3 * (N // S):4 * (N // S)] = -float("inf")
    ref = torch.einsum("rn,rnd->rd", torch.softmax(sc, -1), vv)
    ss = sc.view(R, S, N // S)
    m = ss.amax(-1, keepdim=True)
    p = torch.exp(ss - torch.where(torch.isinf(m), torch.zeros_like(m), m))
    lsum = p.sum(-1)
    part = torch.einsum("rsn,rsnd->rsd", p, vv.view(R, S, N // S, 64)) / lsum.clamp_min(1e-300)[..., None]
    lse = torch.where(lsum > 0, m.squeeze(-1) + torch.log(lsum), torch.full_like(lsum, -float("inf")))
    part, lse = part.float().contiguous(), lse.float().contiguous()
    out = torch.empty(R, 64, device=dev, dtype=torch.bfloat16)
    rc = lib.splitkv_combine_bf16(part.data_ptr(), lse.data_ptr(), out.data_ptr(), R, S, stream)
    torch.cuda.synchronize()
    rows.append({"combine_rc": rc, "combine_max_abs": (out.double() - ref).abs().max().item(),
                 "combine_rows": R, "splits": S, "keys": N, "row0_split3_empty": True})
    return rows


def main():
    os.makedirs(OUT, exist_ok=True)
    if "--attn" in sys.argv:
        rows = attn_check(sys.argv[sys.argv.index("--attn") + 1])
        with open(os.path.join(OUT, "attn.json"), "w") as f:
            json.dump(rows, f, indent=1)
        for r in rows:
            print(json.dumps(r))
        return
    if "--triton-rms" in sys.argv:
        rows = triton_rms(sys.argv[sys.argv.index("--triton-rms") + 1])
        with open(os.path.join(OUT, "triton_rms.json"), "w") as f:
            json.dump(rows, f, indent=1)
        for r in rows:
            print(json.dumps(r))
        return
    lib = os.environ.get("GN_LIB")
    cuda = Cuda(lib) if lib else None
    if "--inductor-code" in sys.argv:
        x, w, b = inputs(SHAPES[0][0])
        torch.compile(gn_silu, dynamic=False)(x, w, b)
        torch.compile(gn_silu, dynamic=False)(x.contiguous(memory_format=torch.channels_last), w, b)
        torch.cuda.synchronize()
        return
    if "--quick" in sys.argv:
        if cuda is None:
            sys.exit("--quick needs GN_LIB (the groupnorm-conv guide's kernel, built)")
        x, w, b = inputs(SHAPES[0][0])
        for name, fn in (("eager", lambda: gn_silu(x, w, b)), ("cuda", lambda: cuda(x, w, b))):
            torch.cuda.nvtx.range_push(name)
            for _ in range(20):
                fn()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
        return
    rows, accuracy, kernels = [], [], {}

    def save():  # after every shape, so a run cut short keeps what it measured
        meta = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
                "iters": ITERS, "seconds": time.time() - T0}
        with open(os.path.join(OUT, "gn.json"), "w") as f:
            json.dump({"meta": meta, "rows": rows, "accuracy": accuracy, "kernels": kernels},
                      f, indent=1)
        with open(os.path.join(OUT, "gn.md"), "w") as f:
            f.write(json.dumps(meta) + "\n\n" + md(rows, accuracy))
    gn_rows(cuda, rows, accuracy, save)
    conv_rows(rows, kernels, save)
    with open(os.path.join(OUT, "gn.md")) as f:
        print(f.read())
    for k, ks in kernels.items():
        print(k)
        for name, t in ks:
            print(f"    {t:9.1f} us  {name[:150]}")


if __name__ == "__main__":
    main()
