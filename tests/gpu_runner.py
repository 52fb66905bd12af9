#!/usr/bin/env python3
"""The GPU pool and run history on a real GPU, through `kforge serve` over
stdio (run on the GPU machine; skips with a clear line elsewhere):

1. a hanging kernel holds GPU 0; two correct checks sent meanwhile wait in
   the queue and are told their positions (MCP progress), then the hang is
   cancelled (notifications/cancelled), the GPU is freed at once and both
   queued checks run on GPU 0 and pass;
2. their runs are in state.db with the device name and UUID;
3. `kforge serve` is killed with SIGKILL while a check runs on the GPU; a
   new daemon finds every answered run, state.db passes integrity_check,
   and the next check passes (the GPU is fine).

usage: tests/gpu_runner.py [--bin build/kforge] [--sandbox none|bwrap]
"""
import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "gpu"))
from run import load_spec  # noqa: E402  (tests/gpu/run.py: inlines file: sources)

FAILS = []
PASSES = 0


def check(name, cond, detail=""):
    global PASSES
    if cond:
        PASSES += 1
        print(f"ok   {name}")
    else:
        FAILS.append(name)
        print(f"FAIL {name}: {str(detail)[:600]}")


class Serve:
    def __init__(self, binary, data, sandbox):
        argv = [binary, "serve", "--data-dir", data]
        if sandbox:
            argv.append("--sandbox=" + sandbox)
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.lock = threading.Lock()
        self.replies, self.progress = {}, {}
        threading.Thread(target=self._read, daemon=True).start()
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "gpu-runner", "version": "1"}}})
        self.wait(lambda: 0 in self.replies, 60)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self):
        for line in self.p.stdout:
            try:
                m = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                if m.get("method") == "notifications/progress":
                    p = m["params"]
                    self.progress.setdefault(p["progressToken"], []).append(
                        (time.time(), p.get("message", "")))
                elif "id" in m and "method" not in m:
                    self.replies[m["id"]] = m

    def send(self, m):
        self.p.stdin.write((json.dumps(m) + "\n").encode())
        self.p.stdin.flush()

    def wait(self, cond, timeout):
        end = time.time() + timeout
        while time.time() < end:
            with self.lock:
                if cond():
                    return True
            time.sleep(0.02)
        return False

    def call(self, i, tool, args, token=None):
        params = {"name": tool, "arguments": args}
        if token:
            params["_meta"] = {"progressToken": token}
        self.send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})

    def messages(self, token):
        with self.lock:
            return [m for _, m in self.progress.get(token, [])]

    def result(self, i):
        """structuredContent, or on isError the error object in the text block."""
        with self.lock:
            r = (self.replies.get(i) or {}).get("result", {})
        if r.get("isError"):
            try:
                return json.loads(r["content"][0]["text"])
            except (KeyError, IndexError, ValueError):
                return {}
        return r.get("structuredContent") or {}


def harnesses():
    ps = subprocess.run(["ps", "-eo", "pid,ppid,etimes,comm"], capture_output=True,
                        text=True).stdout.splitlines()
    return [l.strip() for l in ps if l.split()[-1] == "kforge-harness"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.environ.get("KFORGE_BIN", "build/kforge"))
    ap.add_argument("--sandbox", default=os.environ.get("KFORGE_GPU_SANDBOX", ""))
    opts = ap.parse_args()
    if not shutil.which("nvidia-smi") or \
            subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode != 0:
        print("SKIP gpu_runner: no NVIDIA GPU on this host (nvidia-smi -L failed)")
        return 0
    good, _, _ = load_spec(os.path.join(HERE, "gpu", "pass", "axpb_f32.json"))
    hang, _, _ = load_spec(os.path.join(HERE, "gpu", "cheats", "hang.json"))
    stale = harnesses()
    if stale:
        print("FAIL gpu_runner: kforge-harness processes already running here "
              "(they would share the GPU): " + "; ".join(stale[:4]))
        return 1
    data = tempfile.mkdtemp(prefix="kforge-gpu-runner-")
    try:
        s = Serve(opts.bin, data, opts.sandbox)
        # 1. the hang holds the GPU; two checks queue behind it
        s.call(1, "check_kernel", {"spec": hang, "timeout_s": 120, "trials": 1,
                                   "odd_size": False}, token="hang")
        ran = s.wait(lambda: any("running on GPU 0" in m for _, m in s.progress.get("hang", [])), 120)
        check("the hanging kernel runs on GPU 0 (progress)", ran, s.messages("hang"))
        s.call(2, "check_kernel", {"spec": good}, token="p1")
        s.wait(lambda: any("queued" in m for _, m in s.progress.get("p1", [])), 120)
        s.call(3, "check_kernel", {"spec": good}, token="p2")
        queued = s.wait(lambda: any("queued: position 2" in m for _, m in s.progress.get("p2", [])), 120)
        check("the second waiting check is told position 2", queued, s.messages("p2"))
        check("the first waiting check was told position 1",
              any("queued: position 1" in m for m in s.messages("p1")), s.messages("p1"))
        t_cancel = time.time()
        s.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 1, "reason": "test"}})
        done = s.wait(lambda: 2 in s.replies and 3 in s.replies, 240)
        check("both queued checks answer after the cancel", done)
        with s.lock:
            starts = [t for t, m in s.progress.get("p1", []) if "running on GPU 0" in m]
        check("the GPU is free within 5 s of the cancel",
              starts and starts[0] - t_cancel < 5.0,
              f"{(starts[0] - t_cancel) if starts else None} s")
        r1, r2 = s.result(2), s.result(3)
        check("queued check 1 passed", r1.get("passed") is True, r1.get("summary"))
        check("queued check 2 passed", r2.get("passed") is True, r2.get("summary"))
        # 2. the runs, with the device
        s.call(4, "get_run", {"id": r1.get("run_id", "r000000000000000")})
        s.wait(lambda: 4 in s.replies, 30)
        run = s.result(4).get("run", {})
        check("the run records the GPU's name", "H200" in str(run.get("device")) or
              bool(run.get("device")), run.get("device"))
        check("the run records the GPU's UUID", str(run.get("device_uuid", "")).startswith("GPU-"),
              run.get("device_uuid"))
        s.call(5, "compare_runs", {"a": r1.get("run_id", ""), "b": r2.get("run_id", "")})
        s.wait(lambda: 5 in s.replies, 30)
        check("compare_runs of the two checks: both passed",
              "both passed" in s.result(5).get("summary", ""), s.result(5))
        answered = [r1.get("run_id"), r2.get("run_id")]
        # 3. SIGKILL while a check runs on the GPU
        s.call(6, "check_kernel", {"spec": hang, "timeout_s": 120, "trials": 1,
                                   "odd_size": False}, token="k")
        ran = s.wait(lambda: any("running on GPU 0" in m for _, m in s.progress.get("k", [])), 120)
        check("a check is running when the daemon is killed", ran)
        s.p.send_signal(signal.SIGKILL)
        s.p.wait(timeout=30)
        db = sqlite3.connect(os.path.join(data, "state.db"))
        check("state.db passes integrity_check after SIGKILL",
              db.execute("PRAGMA integrity_check").fetchone()[0] == "ok")
        have = {row[0] for row in db.execute("SELECT id FROM runs")}
        db.close()
        check("no answered run was lost", all(a in have for a in answered), answered)
        # the killed daemon's harness must die with it (die-with-parent)
        end, left = time.time() + 10, harnesses()
        while left and time.time() < end:
            time.sleep(0.2)
            left = harnesses()
        check("no harness process outlives the killed daemon", not left, left)
        s = Serve(opts.bin, data, opts.sandbox)
        s.call(7, "check_kernel", {"spec": good})
        s.wait(lambda: 7 in s.replies, 240)
        check("the next daemon's check passes (GPU fine after the kill)",
              s.result(7).get("passed") is True, s.result(7).get("summary"))
        s.p.stdin.close()
        s.p.wait(timeout=60)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    print(f"gpu_runner: {PASSES} passed, {len(FAILS)} failed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
