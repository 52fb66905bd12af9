"""The CLI's options and the tools' input schemas, with the real binary.

The bounds are read from `kforge tools TOOL --json` (the inputSchema MCP
clients get), never written here, so the suite checks that the CLI's
--help and its refusals follow the schema rather than a copy of it. Needs
no GPU: every refusal happens before a spec is read or a tool runs.
Prints 'proto_cli: N passed, N failed'."""
import json
import re
import shutil
import subprocess
import sys
import tempfile

from proto_common import Checks

BIN = sys.argv[1]
CHECKS = Checks()
check = CHECKS.check

# (command and the positional arguments it needs, option, tool, property path)
BOUND = [
    (["check", "x.json"], "--trials", "check_kernel", "trials"),
    (["check", "x.json"], "--timeout-s", "check_kernel", "timeout_s"),
    (["bench", "x.json"], "--size", "benchmark_kernel", "size"),
    (["bench", "x.json"], "--budget-ms", "benchmark_kernel", "budget_ms"),
    (["bench", "x.json"], "--target", "benchmark_kernel", "target_rel_se"),
    (["bench", "x.json"], "--warmup-ms", "benchmark_kernel", "warmup_ms"),
    (["bench", "x.json"], "--timeout-s", "benchmark_kernel", "timeout_s"),
    (["runs"], "--limit", "list_runs", "limit"),
    (["model-bench", "qwen3"], "--iters", "benchmark_model", "iters"),
    (["model-bench", "qwen3"], "--timeout", "benchmark_model", "timeout_s"),
    (["torch-op", "r0jf3k9q2mzx7c4a"], "--timeout", "build_torch_op", "timeout_s"),
    (["guide", "search", "bank"], "--limit", "search_guides", "limit"),
    (["gpu", "h100"], "--block", "get_gpu_specs", "occupancy.block_threads"),
]


def run(*args, data):
    p = subprocess.run([BIN, *args, "--data-dir", data], capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


def num(x):
    return str(int(x)) if float(x) == int(x) else f"{x:g}"


def prop(schema, path):
    for key in path.split("."):
        schema = schema["properties"][key]
    return schema


def main():
    data = tempfile.mkdtemp(prefix="proto_cli.")
    p = subprocess.run([BIN, "--help"], capture_output=True, text=True, timeout=60)
    rc, out = p.returncode, p.stdout
    cmds = re.findall(r"^  ([a-z][a-z-]*) ", out.split("Commands:", 1)[-1], re.M)
    check("kforge --help lists the commands", rc == 0 and "check" in cmds and "bench" in cmds,
          out[:300])
    for cmd in cmds:
        rc, out, err = run("help", cmd, data=data)
        check(f"kforge help {cmd} exits 0 (its options match its tool's schema)",
              rc == 0 and out.startswith("usage:") and not err, f"rc {rc} {err}")

    schemas = {}
    for argv, opt, tool, path in BOUND:
        if tool not in schemas:
            rc, out, err = run("tools", tool, "--json", data=data)
            schemas[tool] = json.loads(out) if rc == 0 else {}
        p = prop(schemas[tool], path)
        lo, hi = p["minimum"], p["maximum"]
        kind = "an integer" if p["type"] == "integer" else "a number"
        where = f"{argv[0]} {opt}"

        rc, out, _ = run(argv[0], "--help", data=data)
        line = next((ln for ln in out.splitlines() if ln.strip().startswith(opt + " ")), "")
        # the help may wrap after the range; join the line with the next one
        rest = out[out.find(line) + len(line):].split("\n", 2)[1] if line else ""
        text = line + " " + rest.strip()
        want = f"({num(lo)}-{num(hi)}" + (f", default {num(p['default'])})" if "default" in p
                                          else ")")
        check(f"{where}: --help shows {tool}.{path}'s bounds {want}", rc == 0 and want in text,
              text or out[-600:])

        over = hi + 1 if p["type"] == "integer" else hi * 2
        rc, _, err = run(*argv, opt, num(over), data=data)
        check(f"{where} {num(over)}: exit 2 naming the option and the schema's range",
              rc == 2 and f"{opt}: '{num(over)}' is not {kind} from {num(lo)} to {num(hi)}" in err,
              f"rc {rc} {err}")
        rc, _, err = run(*argv, f"{opt}=many", data=data)
        check(f"{where}=many: exit 2, not {kind}",
              rc == 2 and f"{opt}: 'many' is not {kind} from" in err, f"rc {rc} {err}")

    p = prop(schemas["benchmark_kernel"], "budget_ms")
    rc, _, err = run("eval", "run", "x", "--budget-ms", "1", data=data)
    check("eval run --budget-ms is checked against benchmark_kernel's budget_ms",
          rc == 2 and f"--budget-ms: '1' is not a number from {num(p['minimum'])} to "
          f"{num(p['maximum'])}" in err, f"rc {rc} {err}")
    rc, _, err = run("check", "x.json", "--trials", data=data)
    check("a missing value names the option and what it takes",
          rc == 2 and "--trials needs a value: an integer from 1 to" in err, f"rc {rc} {err}")
    for argv in (["check", "x.json"], ["bench", "x.json"], ["runs"], ["compile", "k.cu"],
                 ["gpu", "h100"], ["torch-op", "r0jf3k9q2mzx7c4a"], ["guide", "search", "x"]):
        rc, _, err = run(*argv, "--frobnicate", "1", data=data)
        check(f"{argv[0]}: an unknown option exits 2 naming it",
              rc == 2 and "--frobnicate" in err, f"rc {rc} {err}")
    rc, _, err = run("runs", "--status", "broken", data=data)
    check("an enum option lists the schema's values",
          rc == 2 and "--status: 'broken' is not one of ok, failed, error" in err, f"rc {rc} {err}")

    shutil.rmtree(data, ignore_errors=True)
    return CHECKS.summary("proto_cli")


if __name__ == "__main__":
    sys.exit(main())
