"""Torch references through the daemon (run by tests/proto/proto_pyworker.sh,
which exports T, the mock libcuda, a harness wrapper and PYTHONPATH with the
stand-in torch): warm workers across sizes and calls, a failing expression
reported while the worker keeps serving, the CLI's one-shot check, and no
worker process after a SIGKILL of the daemon."""
import json
import os
import signal
import subprocess
import sys
import time

from proto_common import Checks, StdioSession, tool_object

BIN, SRC = sys.argv[1], sys.argv[2]
T = os.environ["T"]
CHECKS = Checks()
check = CHECKS.check
sys.path.insert(0, f"{SRC}/tests/gpu")
import run  # noqa: E402  tests/gpu/run.py: the spec loader the GPU suites use

SPEC, _, _ = run.load_spec(f"{SRC}/tests/gpu/pass/axpb_torch.json")


def torch_ref(r):
    return (r.get("phases") or {}).get("torch_reference") or {}


def workers():
    """Processes of this suite's torch workers (their command line names
    torch_worker.py and the data directory under T)."""
    out = []
    for p in os.listdir("/proc"):
        try:
            cmd = open(f"/proc/{p}/cmdline", "rb").read().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue
        if "torch_worker.py" in cmd and T in cmd:
            out.append(int(p))
    return out


def main():
    data = f"{T}/data"
    s = StdioSession(BIN, data, "pyworker", cmd=[BIN, "serve", "--data-dir", data,
                                                 "--sandbox=none"])
    try:
        r = tool_object(s.call(1, "check_kernel", {"spec": SPEC}))
        tr = torch_ref(r)
        check("the first torch check passes", r.get("passed"), r.get("summary"))
        check("its first size starts the worker, the other two are served warm",
              tr.get("runs") == 3 and tr.get("warm") == 2 and tr.get("worker_start_ms", 0) > 0,
              tr)
        check("the worker start is inside reference_ms",
              r["phases"]["reference_ms"] >= tr.get("worker_start_ms", 0), r.get("phases"))
        r = tool_object(s.call(2, "check_kernel", {"spec": SPEC}))
        tr = torch_ref(r)
        check("the second check passes, every reference served warm",
              r.get("passed") and tr == {"runs": 3, "warm": 3, "worker_start_ms": 0}, tr)
        bad = dict(SPEC, reference={"torch": "s * x + nothing_here"})
        r = tool_object(s.call(3, "check_kernel", {"spec": bad}))
        msgs = [sg["message"] for z in r.get("sizes", []) for t in z.get("trials", [])
                for sg in t.get("safeguards", [])]
        check("a failing expression fails the check, naming the error",
              not r.get("passed") and msgs and all("reference.torch failed: " in m and
                                                   "NameError" in m for m in msgs),
              msgs[:2] or r)
        r = tool_object(s.call(4, "check_kernel", {"spec": SPEC}))
        check("the worker keeps serving after it",
              r.get("passed") and torch_ref(r).get("warm") == 3, torch_ref(r))
        kids = workers()
        check("one worker (and its guard) serves the daemon", 1 <= len(kids) <= 2, kids)
        s.p.send_signal(signal.SIGKILL)
        s.p.wait()
        left = kids
        for _ in range(300):
            left = [k for k in kids if os.path.exists(f"/proc/{k}")]
            if not left:
                break
            time.sleep(0.01)
        check("no worker process outlives a SIGKILLed daemon", not left, left)
    finally:
        if s.p.poll() is None:
            s.p.kill()
            s.p.wait()
    json.dump(SPEC, open(f"{T}/axpb_torch.json", "w"))
    p = subprocess.run([BIN, "check", f"{T}/axpb_torch.json", "--data-dir", f"{T}/cli",
                        "--sandbox=none"], capture_output=True, text=True, timeout=300)
    check("the CLI's one-shot check imports torch once for its three sizes",
          p.returncode == 0 and "torch reference: 2 of 3 jobs served by a warm worker" in p.stdout,
          p.stdout[-400:] + p.stderr[-400:])
    sys.exit(CHECKS.summary("proto_pyworker"))


main()
