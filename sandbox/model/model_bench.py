#!/usr/bin/env python3
"""model_bench: one benchmark_model job on the local GPU.

Reads the job (JSON, file named by argv[1]), builds the recipe's model with
random weights (recipes.py), patches a copy with kforge's ops
(kforge_torch.patch), and writes one JSON result to stdout (argv[2] names a
file instead): versions, the patch counts, output agreement, latencies,
the profiler's per-op shares and peak GPU memory. Errors are one JSON
object {"error": "..."} and exit status 2 (bad job, unknown class) or 3
(no torch / GPU, out of memory).

Job: recipe (qwen3|llama|dit), dims {}, dtype (bf16|f16|f32), seed,
patch {target: op}, compile_patch {target: op} (the patch used under
torch.compile; default patch), shapes [{kind: prefill, batch, seq} |
{kind: decode, batch, past}], modes [eager, patched, compile,
patched_compile, graphs, patched_graphs], iters, warmup, profile (bool),
fp32_check (bool), lib (libkforge_torch.so; built when absent).

Timing: every mode of a shape is called once per repetition in a shuffled
order, each call between two synchronizations and timed with CUDA events,
so a figure is the call's whole latency (host launch time included, as a
user sees it). Median and a 95% order-statistics interval of the median.
"""
import copy
import json
import math
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


LIB = None  # the ops library once loaded: reported with errors too, so it is kept


def fail(msg, code, **extra):
    if LIB:
        extra["lib"] = LIB
    out = json.dumps({"error": msg, **extra})
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write(out)
    print(out)
    sys.exit(code)


try:
    import torch
except Exception as e:  # noqa: BLE001 - any import failure is "no torch"
    fail(f"torch not available: {e}", 3)

sys.path.insert(0, HERE)
sys.path.insert(0, os.environ.get("KF_TORCH_PKG", os.path.join(HERE, "..", "..", "kernels", "torch")))
import recipes  # noqa: E402
import kforge_torch  # noqa: E402
from kforge_torch import patch as kpatch  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
MODES = ("eager", "patched", "compile", "patched_compile", "graphs", "patched_graphs")


def median_ci(xs):
    s = sorted(xs)
    n = len(s)
    half = 1.96 * math.sqrt(n) / 2
    lo = max(0, int(math.floor(n / 2 - half)))
    hi = min(n - 1, int(math.ceil(n / 2 + half)))
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    return med, s[lo], s[hi]


def rel_l2(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def out_tensor(o):
    if hasattr(o, "logits"):
        return o.logits
    return o[0] if isinstance(o, (tuple, list)) else o


class Shape:
    def __init__(self, spec, make_inputs, recipe, g):
        self.kind = spec.get("kind", "prefill")
        self.batch = int(spec.get("batch", 1))
        if self.kind == "prefill":
            self.seq = int(spec.get("seq", 512))
            self.name = f"prefill {self.batch}x{self.seq}"
            self.inputs = make_inputs(self.batch, self.seq, g)
        elif self.kind == "decode":
            if recipe == "dit":
                raise ValueError("decode shapes need a language model recipe (qwen3, llama)")
            self.past = int(spec.get("past", 512))
            self.name = f"decode {self.batch}x1 (past {self.past})"
            self.prompt = make_inputs(self.batch, self.past, g)
            self.inputs = make_inputs(self.batch, 1, g)
        else:
            raise ValueError(f"shape kind '{self.kind}': expected prefill or decode")


def decode_caller(model, shape, fwd, calls):
    """A decode step of batch shape.batch after shape.past tokens in a
    transformers StaticCache. The model places each step itself (recent
    transformers derive the position from the cache, as generate() does),
    so every call decodes the next token: the cache has room for the
    prompt plus `calls` steps, and the context grows from past to
    past + calls over the measurement (the same for every mode)."""
    from transformers import StaticCache
    n = shape.past + calls
    try:
        cache = StaticCache(config=model.config, max_cache_len=n)
    except TypeError:
        cache = StaticCache(config=model.config, max_batch_size=shape.batch, max_cache_len=n,
                            device="cuda", dtype=next(model.parameters()).dtype)
    with torch.no_grad():
        model(**shape.prompt, past_key_values=cache, use_cache=True)
    ids = shape.inputs["input_ids"]

    def call():
        return fwd(input_ids=ids, past_key_values=cache, use_cache=True)
    return call


def calls_per_mode(job):
    """Calls of one mode on one shape: warm-up, timed, profile (1 + 3),
    memory (1), with a margin."""
    return int(job.get("warmup", 3)) + int(job.get("iters", 20)) + 8


def callers(job, shape, base, patched, cpatched):
    """{mode: zero-argument callable} for the modes of job that fit shape."""
    out = {}
    modes = job.get("modes", list(MODES))
    for m in modes:
        if m not in MODES:
            raise ValueError(f"mode '{m}': expected one of " + ", ".join(MODES))
    dyn = dict(dynamic=False)
    want_graphs = any(m.endswith("graphs") for m in modes)
    for m in modes:
        graphs = m.endswith("graphs")
        if graphs and shape.kind != "decode":
            continue  # CUDA graphs are the decode mode: prefill is not launch-bound
        if shape.kind == "decode" and want_graphs and m.endswith("compile"):
            continue  # decode is compiled as reduce-overhead (the graphs modes)
        model = {"eager": base, "compile": base, "graphs": base}.get(m)
        if model is None:
            model = patched if m == "patched" else cpatched
        if m in ("eager", "patched"):
            fwd = model
        elif graphs:
            fwd = torch.compile(model.forward, mode="reduce-overhead", **dyn)
        else:
            fwd = torch.compile(model.forward, **dyn)
        if graphs:
            fwd = (lambda f: lambda **kw: (torch.compiler.cudagraph_mark_step_begin(),
                                           f(**kw))[1])(fwd)
        if shape.kind == "decode":
            out[m] = decode_caller(model, shape, fwd, calls_per_mode(job))
        else:
            out[m] = (lambda f: lambda: f(**shape.inputs))(fwd)
    return out


def time_modes(calls, iters, warmup, rng):
    names = list(calls)
    times = {n: [] for n in names}
    outs = {}
    with torch.no_grad():
        for n in names:
            t0 = time.time()
            for _ in range(warmup):
                o = calls[n]()
            torch.cuda.synchronize()
            outs[n] = out_tensor(o).detach().clone()
            times[n + ":first_s"] = time.time() - t0
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        for _ in range(iters):
            order = names[:]
            rng.shuffle(order)
            for n in order:
                torch.cuda.synchronize()
                ev[0].record()
                calls[n]()
                ev[1].record()
                torch.cuda.synchronize()
                times[n].append(ev[0].elapsed_time(ev[1]))
    return times, outs


def profile_ops(call, top=12):
    """Per-kernel share of GPU time of a few calls, from torch.profiler."""
    from torch.profiler import ProfilerActivity, profile
    with torch.no_grad():
        call()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(3):
                call()
            torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None)
        if t is None:
            t = getattr(e, "cuda_time_total", 0)
        if t > 0 and e.key and not e.key.startswith(("ProfilerStep", "cudaGraphLaunch")):
            rows.append((e.key, t / 3.0 / 1000.0, e.count // 3))
    total = sum(r[1] for r in rows) or 1.0
    rows.sort(key=lambda r: -r[1])
    return [{"op": k[:120], "ms": round(ms, 4), "calls": c, "share": round(ms / total, 4)}
            for k, ms, c in rows[:top]]


def agreement(job, base, patched, shapes, fp32_check):
    """Rel L2 / max error of the patched model's output vs the unpatched
    one, eager, on the first prefill shape; with fp32_check, both vs an fp32
    copy of the same (bf16-rounded) weights."""
    sh = next((s for s in shapes if s.kind == "prefill"), None)
    if sh is None:
        return None
    with torch.no_grad():
        a = out_tensor(base(**sh.inputs)).float()
        b = out_tensor(patched(**sh.inputs)).float()
        r = {"shape": sh.name, "rel_l2": rel_l2(b, a), "max_abs": float((b - a).abs().max()),
             "ref_max_abs": float(a.abs().max())}
        if fp32_check:
            ref = copy.deepcopy(base).float()
            ins = {k: (v.float() if v.is_floating_point() else v) for k, v in sh.inputs.items()}
            c = out_tensor(ref(**ins)).float()
            del ref
            torch.cuda.empty_cache()
            r["unpatched_vs_fp32"] = rel_l2(a, c)
            r["patched_vs_fp32"] = rel_l2(b, c)
            r["patched_no_further"] = r["patched_vs_fp32"] <= r["unpatched_vs_fp32"] * 1.0001
    return r


def versions():
    v = {"torch": torch.__version__, "cuda": torch.version.cuda,
         "gpu": torch.cuda.get_device_name(0)}
    try:
        import transformers
        v["transformers"] = transformers.__version__
    except Exception:  # noqa: BLE001 - optional for the dit recipe
        v["transformers"] = None
    try:
        import subprocess
        v["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version",
                                      "--format=csv,noheader"], capture_output=True,
                                     text=True).stdout.strip().splitlines()[0]
    except Exception:  # noqa: BLE001 - nvidia-smi may be absent in the jail
        v["driver"] = None
    return v


def run(job):
    if not torch.cuda.is_available():
        fail("no CUDA GPU visible to torch", 3)
    for k in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, k):
            setattr(torch._dynamo.config, k, 64)
    dtype = DTYPES.get(job.get("dtype", "bf16"))
    if dtype is None:
        raise ValueError(f"dtype '{job.get('dtype')}': expected bf16, f16 or f32")
    recipe = job.get("recipe", "qwen3")
    t0 = time.time()
    global LIB
    lib = LIB = kforge_torch.load(job.get("lib"))
    t_build = time.time() - t0
    base, make_inputs, dims = recipes.build(recipe, job.get("dims"), dtype, "cuda",
                                            int(job.get("seed", 0)))
    pmap = job.get("patch")
    if not pmap:
        raise ValueError("patch: give at least one {target: op} entry")
    cmap = job.get("compile_patch") or pmap
    res = {"versions": versions(), "recipe": recipe, "dims": dims, "lib": lib,
           "build_s": round(t_build, 2), "classes": kpatch.model_classes(base),
           "params": sum(p.numel() for p in base.parameters())}
    patched = copy.deepcopy(base)
    res["patch"] = kpatch.apply(patched, pmap)
    if cmap == pmap:
        cpatched = patched
    else:
        cpatched = copy.deepcopy(base)
        res["compile_patch"] = kpatch.apply(cpatched, cmap)
    g = torch.Generator().manual_seed(int(job.get("seed", 0)) + 1)
    shapes = [Shape(s, make_inputs, recipe, g) for s in job.get("shapes", [])]
    if not shapes:
        raise ValueError("shapes: give at least one shape")
    res["agreement"] = agreement(job, base, patched, shapes, job.get("fp32_check", True))
    rng = random.Random(int(job.get("seed", 0)))
    res["latency"], res["profile"], res["memory"], res["shape_errors"] = [], {}, {}, []
    # prefill first: a decode failure (a dead CUDA context) keeps them
    for sh in sorted(shapes, key=lambda s: s.kind == "decode"):
        try:
            measure_shape(job, sh, base, patched, cpatched, rng, res)
        except (ValueError, torch.cuda.OutOfMemoryError):
            raise
        except Exception as e:  # noqa: BLE001 - reported with the shapes measured so far
            res["shape_errors"].append({"shape": sh.name,
                                        "error": f"{type(e).__name__}: {str(e)[:300]}"})
            break  # the CUDA context may be unusable: stop here, keep what was measured
        write_result(res, partial=True)
    res["memory"]["weights_mb"] = {
        "unpatched": round(sum(p.numel() * p.element_size() for p in base.parameters()) / 2**20, 1),
        "patched": round(sum(p.numel() * p.element_size() for p in patched.parameters()) / 2**20,
                         1)}
    return res


def write_result(res, partial=False):
    """Writes res to argv[2] (atomically), marked partial while shapes remain."""
    if len(sys.argv) < 3:
        return
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(dict(res, partial=True) if partial else res, f)
    os.replace(tmp, sys.argv[2])


def measure_shape(job, sh, base, patched, cpatched, rng, res):
    """Times, profiles and measures the memory of every mode on shape sh
    into res."""
    calls = callers(job, sh, base, patched, cpatched)
    times, outs = time_modes(calls, int(job.get("iters", 20)), int(job.get("warmup", 3)),
                             rng)
    ref = outs.get("eager")
    for m in calls:
        med, lo, hi = median_ci(times[m])
        row = {"shape": sh.name, "mode": m, "median_ms": round(med, 4),
               "ci_ms": [round(lo, 4), round(hi, 4)], "n": len(times[m]),
               "first_calls_s": round(times[m + ":first_s"], 2)}
        if ref is not None and m != "eager":
            row["rel_l2_vs_eager"] = rel_l2(outs[m].float(), ref.float())
        res["latency"].append(row)
    if job.get("profile", True):
        for m in calls:
            res["profile"][f"{sh.name} / {m}"] = profile_ops(calls[m])
    for m in calls:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        with torch.no_grad():
            calls[m]()
        torch.cuda.synchronize()
        res["memory"][f"{sh.name} / {m}"] = {
            "call_peak_mb": round((torch.cuda.max_memory_allocated() - before) / 2**20, 1)}
    del calls, outs


def main():
    if len(sys.argv) < 2:
        fail("usage: model_bench.py JOB.json [RESULT.json]", 2)
    try:
        with open(sys.argv[1]) as f:
            job = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"cannot read the job: {e}", 2)
    try:
        res = run(job)
    except kpatch.UnknownTarget as e:
        fail(str(e), 2, target=e.target, classes=e.classes)
    except ValueError as e:
        fail(str(e), 2)
    except torch.cuda.OutOfMemoryError as e:
        fail(f"out of GPU memory: {str(e).splitlines()[0]}", 3)
    write_result(res)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
