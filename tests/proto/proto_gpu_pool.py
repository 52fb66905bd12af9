"""The GPU pool on two (mock) GPUs, run by tests/proto/proto_gpu_pool.sh
(which exports T, MOCK_CUDA_DEVICES=2, the mock libcuda and a harness
wrapper that records its job and waits while $T/hold exists): get_gpu_specs
local lists both GPUs; two benchmarks submitted at once over REST run on
different GPUs; four at once: two run and two wait while the first two are
held, all four finish passing, and never do two harnesses run on one GPU."""
import glob
import json
import os
import subprocess
import sys
import threading
import time

from proto_common import Checks, rest_post, wait_port_file

BIN, SRC = sys.argv[1], sys.argv[2]
T = os.environ["T"]
CHECKS = Checks()
check = CHECKS.check
sys.path.insert(0, f"{SRC}/tests/gpu")
import run  # noqa: E402  tests/gpu/run.py: the spec loader the GPU suites use

SPEC, _, _ = run.load_spec(f"{SRC}/tests/gpu/pass/axpb_f32.json")


def started():
    """The device of every harness that has started (and not been cleared)."""
    out = []
    for f in glob.glob(f"{T}/started-*"):
        try:
            out.append(json.load(open(f)).get("device"))
        except ValueError:
            pass
    return out


def run_at_once(port, n):
    """n benchmarks at once with the harness held until n or 2 (the GPUs)
    have started; returns (devices seen while held, max running at once,
    results)."""
    for f in glob.glob(f"{T}/started-*"):
        os.unlink(f)
    open(f"{T}/hold", "w").close()
    results = [None] * n

    def one(i):
        results[i] = rest_post(port, "/v1/bench", {"spec": SPEC, "budget_ms": 50, "size": 0,
                                              "baseline": False})

    ths = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ths:
        t.start()
    want = min(n, 2)
    for _ in range(600):
        if len(started()) >= want:
            break
        time.sleep(0.05)
    # while held nothing finishes: whatever started is running now
    most = 0
    for _ in range(20):
        most = max(most, len(started()))
        time.sleep(0.05)
    held = started()
    os.unlink(f"{T}/hold")
    for t in ths:
        t.join()
    return held, most, results


def main():
    p = subprocess.run([BIN, "gpu", "local", "--json", "--data-dir", f"{T}/d0"],
                       capture_output=True, text=True, timeout=60)
    out = json.loads(p.stdout or "{}") if p.returncode == 0 else {}
    check("get_gpu_specs local lists both GPUs", len(out.get("local", [])) == 2,
          f"rc {p.returncode} {p.stdout[:300]} {p.stderr[:300]}")
    data = f"{T}/data"
    os.makedirs(data)
    log = open(f"{T}/serve.log", "wb")
    srv = subprocess.Popen([BIN, "serve", "--http", "127.0.0.1:0", "--port-file",
                            f"{T}/port", "--data-dir", data, "--sandbox=none"],
                           stdout=log, stderr=log)
    try:
        port = wait_port_file(f"{T}/port", srv)
        held, most, res = run_at_once(port, 2)
        check("two benchmarks at once run on the two GPUs", sorted(held) == [0, 1], held)
        check("both measure", all(r and r.get("passed") for r in res),
              [r.get("summary") for r in res if r])
        devs = sorted(r.get("device", {}).get("index", -1) for r in res if r)
        check("their answers name different GPUs", devs == [0, 1], devs)
        held, most, res = run_at_once(port, 4)
        check("four at once: two run while two wait", most == 2 and sorted(held) == [0, 1],
              f"{most} running, devices {held}")
        check("four at once: all four finish and measure",
              len(res) == 4 and all(r and r.get("passed") for r in res),
              [r.get("summary") if r else None for r in res])
        clash = open(f"{T}/clash").read() if os.path.exists(f"{T}/clash") else ""
        check("never two harnesses on one GPU", clash == "", clash)
    finally:
        srv.terminate()
        srv.wait(timeout=60)
        log.close()
    sys.exit(CHECKS.summary("proto_gpu_pool"))


main()
