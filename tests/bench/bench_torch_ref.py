#!/usr/bin/env python3
"""bench_torch_ref: a check whose reference is a torch expression
(tests/gpu/pass/axpb_torch.json: y = s * x + w, N=100000, N=4097 and the
odd size, 3 trials) through `kforge serve` over stdio MCP: the first call
(cold: the daemon starts its torch worker, python3 and `import torch`) and
REPS warm calls, each with its wall time as the client saw it and its
phases (reference_ms, torch_reference: jobs, how many a warm worker served,
worker start). Then a check whose reference monkeypatches torch (it must
fail: its reference is wrong) and the plain check again (it must pass,
served warm: the patch died with its job), and the same check through the
one-shot CLI. Uses this host's GPU and torch as they are; the default
sandbox, or --sandbox=none when bubblewrap cannot start here (said in the
report). Usage: bench_torch_ref.py --bin build/kforge --out DIR [--reps 3];
writes DIR/bench-torch-ref.md, DIR/bench-torch-ref.json and the daemon's
log DIR/serve-SANDBOX.log."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "proto"))
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
from proto_common import StdioSession, tool_object  # noqa: E402
import run  # noqa: E402  tests/gpu/run.py: the spec loader the GPU suites use

SPEC, _, _ = run.load_spec(os.path.join(HERE, "..", "gpu", "pass", "axpb_torch.json"))
PATCHED = dict(SPEC, reference={"torch": "torch.Tensor.__add__ = lambda a, b: a\n"
                                         "y = x * s + w"})


def row(label, r, wall):
    ph = r.get("phases") or {}
    tr = ph.get("torch_reference") or {}
    return {"call": label, "passed": bool(r.get("passed")), "wall_s": round(wall, 3),
            "total_ms": ph.get("total_ms"), "reference_ms": ph.get("reference_ms"),
            "torch_runs": tr.get("runs"), "torch_warm": tr.get("warm"),
            "worker_start_ms": tr.get("worker_start_ms"), "phases": ph,
            "summary": (r.get("summary") or str(r.get("error") or r))[:200]}


def serve_rows(binary, data, sandbox, reps, out):
    cmd = [binary, "serve", "--data-dir", data] + ([f"--sandbox={sandbox}"] if sandbox else [])
    log = open(os.path.join(out, f"serve-{sandbox or 'bwrap'}.log"), "wb")
    s = StdioSession(binary, data, "bench-torch-ref", cmd=cmd, stderr=log, timeout=300)
    rows = []
    try:
        def call(i, label, spec):
            t0 = time.time()
            r = tool_object(s.call(i, "check_kernel", {"spec": spec}))
            rows.append(row(label, r, time.time() - t0))
            return r

        call(1, "cold (worker starts)", SPEC)
        for k in range(reps):
            call(2 + k, f"warm {k + 1}", SPEC)
        call(100, "reference monkeypatches torch (must fail)", PATCHED)
        call(101, "plain again after it (must pass, warm)", SPEC)
    finally:
        s.close()
        log.close()
    return rows


def cli_row(binary, data, sandbox):
    path = os.path.join(data, "axpb_torch.json")
    json.dump(SPEC, open(path, "w"))
    argv = [binary, "check", path, "--json", "--data-dir", os.path.join(data, "cli")]
    if sandbox:
        argv.append(f"--sandbox={sandbox}")
    t0 = time.time()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    try:
        r = json.loads(p.stdout)
    except ValueError:
        r = {"summary": "unparsable: " + p.stdout[-200:] + p.stderr[-200:]}
    return row("CLI one-shot `kforge check`", r, time.time() - t0)


def sh(argv):
    """argv's stdout, or "" when it cannot run."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.environ.get("KFORGE_BIN", "build/kforge"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sandbox", default=os.environ.get("KFORGE_GPU_SANDBOX", ""))
    o = ap.parse_args()
    os.makedirs(o.out, exist_ok=True)
    data = tempfile.mkdtemp(prefix="kforge-torch-ref-")
    sandbox, note = o.sandbox, ""
    rows = serve_rows(o.bin, data, sandbox, o.reps, o.out)
    first = rows[0]["summary"]
    if not sandbox and not rows[0]["passed"]:
        note = f"the first check failed in bubblewrap ({first[:160]}); measured with --sandbox=none"
        sandbox = "none"
        data = tempfile.mkdtemp(prefix="kforge-torch-ref-")
        rows = serve_rows(o.bin, data, sandbox, o.reps, o.out)
    rows.append(cli_row(o.bin, data, sandbox))
    ok = (all(r["passed"] for r in rows if "must fail" not in r["call"]) and
          not rows[-3]["passed"] and rows[-2]["torch_warm"] == rows[-2]["torch_runs"])
    gpu = sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    gpu = gpu.splitlines()
    torch_v = sh(["python3", "-c", "import torch; print(torch.__version__)"])
    head = [f"# torch-reference check through kforge serve ({time.strftime('%Y-%m-%d')})", "",
            f"GPU: {gpu[0] if gpu else 'none'}; torch {torch_v or 'not importable'}; "
            f"sandbox: {sandbox or 'bwrap (default)'}; {os.cpu_count()} cores. {note}", "",
            "| call | passed | wall s | total ms | reference ms | torch jobs (warm) | "
            "worker start ms |", "| --- | --- | --- | --- | --- | --- | --- |"]
    lines = head + [f"| {r['call']} | {r['passed']} | {r['wall_s']} | {r['total_ms']} | "
                    f"{r['reference_ms']} | {r['torch_runs']} ({r['torch_warm']}) | "
                    f"{r['worker_start_ms']} |" for r in rows]
    lines += ["", "Expected: the monkeypatched reference fails, the plain check after it "
              "passes with every torch job warm: " + ("yes" if ok else "NO"), ""]
    lines += [f"- {r['call']}: {r['summary']}" for r in rows]
    open(os.path.join(o.out, "bench-torch-ref.md"), "w").write("\n".join(lines) + "\n")
    json.dump({"sandbox": sandbox or "bwrap", "note": note, "rows": rows},
              open(os.path.join(o.out, "bench-torch-ref.json"), "w"), indent=1)
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
