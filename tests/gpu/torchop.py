"""GPU test of build_torch_op and kforge export (run by `make test-gpu`).

Checks skill/examples/qwen3-rmsnorm (fast.cu + check.json), builds the
passing run as a torch op (cold, then cached) and requires every
verification to pass: opcheck, the reference, torch.compile(fullgraph=True),
the CUDA graph and the input checks. Then: the op imported here and compared
with the float64 formula; a source with an error at a known line answered
with diagnostics at that line of the kernel source and of the generated
file; a failing check run refused; the kernel-builder export built with
setup.py and its tests run. Prints the build times it measured. Skips (exit
0, with a line saying why) without a GPU or without torch.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXAMPLE = os.path.join(ROOT, "skill", "examples", "qwen3-rmsnorm")
failures = []


def expect(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)
    return cond


def kforge(args, data, bin_):
    t0 = time.time()
    p = subprocess.run([bin_] + args + ["--data-dir", data, "--json"], capture_output=True,
                       text=True, timeout=600)
    dt = time.time() - t0
    try:
        out = json.loads(p.stdout) if p.stdout.strip() else {}
    except ValueError:
        out = {}
    if not out:
        print("  (kforge %s: exit %d, stderr: %s)" % (args[0], p.returncode, p.stderr[-800:]))
    return p.returncode, out, dt, p.stderr


def spec_with(source):
    spec = json.load(open(os.path.join(EXAMPLE, "check.json")))
    spec.pop("source_file", None)
    spec["source"] = source
    return spec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "kforge"))
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    if shutil.which("nvidia-smi") is None or subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True).returncode != 0:
        print("SKIP torchop: no NVIDIA GPU on this host")
        return 0
    if subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode:
        print("SKIP torchop: python3 cannot import torch")
        return 0
    import torch

    tmp = tempfile.mkdtemp(prefix="kforge-torchop-")
    data = os.path.join(tmp, "data")
    os.makedirs(data)
    times = {}
    try:
        rc, chk, _, _ = kforge(["check", os.path.join(EXAMPLE, "check.json")], data, a.bin)
        if not expect(rc == 0 and chk.get("passed") is True, "qwen3-rmsnorm check passes"):
            return 1
        run = chk["run_id"]

        rc, op, dt, err = kforge(["torch-op", run], data, a.bin)
        checks = op.get("checks", {})
        for name in ("load", "run", "opcheck", "reference", "compile", "cuda_graph",
                     "input_checks"):
            c = checks.get(name, {})
            expect(c.get("passed") is True, "torch-op check %s: %s" % (name, c.get("message")))
        expect(rc == 0 and op.get("passed") is True, "torch-op passes: " + op.get("summary", err))
        b = op.get("build", {})
        expect(b.get("cache_hit") is False, "first build is cold")
        times["cold"] = b
        times["cold_cli_s"] = dt

        rc, op2, dt, _ = kforge(["torch-op", run, "--no-verify"], data, a.bin)
        b2 = op2.get("build", {})
        expect(rc == 0 and b2.get("cache_hit") is True, "second build is a cache hit")
        times["cached"] = b2

        # The op as a user imports it, against the float64 formula.
        sys.path.insert(0, os.path.dirname(op["op"]["package_dir"]))
        mod = __import__(op["op"]["package"])
        x = torch.randn(33, 4104, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(4104, device="cuda", dtype=torch.bfloat16)
        y = getattr(mod, op["op"]["name"])(x, w, 1e-6)
        ref = x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
        err = (y.double() - ref).abs().max().item()
        expect(err < 0.05, "imported op matches the float64 formula (max err %.3g)" % err)

        # A build error: diagnostics at the kernel source's line.
        src = open(os.path.join(EXAMPLE, "fast.cu")).read().split("\n")
        bad_line = 28
        src[bad_line - 1] = "\tint broken = undefined_name_here;"
        bad = os.path.join(tmp, "bad.json")
        json.dump(spec_with("\n".join(src)), open(bad, "w"))
        rc, ans, _, _ = kforge(["torch-op", bad], data, a.bin)
        diags = ans.get("diagnostics", [])
        hit = [d for d in diags if d.get("source_line") == bad_line]
        expect(rc != 0 and hit and hit[0]["file"] == "op_kernel.cu" and hit[0]["line"] > bad_line,
               "build error reported at source line %d and its generated line: %s"
               % (bad_line, hit[:1] or diags[:2]))

        # A failing check is refused.
        wrong = os.path.join(tmp, "wrong.json")
        json.dump(spec_with("\n".join(open(os.path.join(EXAMPLE, "fast.cu")).read().split("\n"))
                            .replace("a.x * r * b.x", "a.x * r")), open(wrong, "w"))
        rc, fc, _, _ = kforge(["check", wrong], data, a.bin)
        if expect(fc.get("passed") is False and fc.get("run_id"), "a wrong kernel fails its check"):
            rc, ans, _, e = kforge(["torch-op", fc["run_id"]], data, a.bin)
            expect(rc != 0 and "did not pass" in (ans.get("summary", "") + e),
                   "torch-op refuses the failed run: " + (ans.get("summary") or e).strip())
            p = subprocess.run([a.bin, "export", fc["run_id"], "--kernel-builder",
                                os.path.join(tmp, "never"), "--data-dir", data],
                               capture_output=True, text=True)
            expect(p.returncode != 0 and "did not pass" in p.stderr,
                   "export refuses the failed run: " + p.stderr.strip())

        # The kernel-builder project, built with setup.py, passes its tests.
        proj = os.path.join(tmp, "proj")
        p = subprocess.run([a.bin, "export", run, "--kernel-builder", proj, "--data-dir", data],
                           capture_output=True, text=True)
        expect(p.returncode == 0, "export writes the project: " + (p.stdout + p.stderr).strip())
        p = subprocess.run([a.bin, "export", run, "--kernel-builder", proj, "--data-dir", data],
                           capture_output=True, text=True)
        expect(p.returncode != 0 and "--force" in p.stderr, "export refuses a non-empty folder")
        t0 = time.time()
        p = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=proj,
                           capture_output=True, text=True)
        times["setup_py_s"] = time.time() - t0
        expect(p.returncode == 0, "setup.py build_ext: " + p.stderr[-600:])
        p = subprocess.run([sys.executable, "tests/test_op.py"], cwd=proj, capture_output=True,
                           text=True)
        expect(p.returncode == 0, "exported tests pass (exit %d):\n%s%s"
               % (p.returncode, p.stdout, p.stderr[-1500:]))
        p = subprocess.run([sys.executable, "benchmarks/benchmark.py"], cwd=proj,
                           capture_output=True, text=True)
        expect(p.returncode == 0, "exported benchmark runs:\n" + p.stdout + p.stderr[-400:])
    finally:
        print("TIMES " + json.dumps(times))
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print("torchop: %d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
