"""The run history end to end with the real binary: `kforge runs` on an empty
and a filled history, the run tools and resources over MCP (stdio), and the
crash test: `kforge serve` is killed with SIGKILL while tool calls that
record runs are in flight; every run whose answer (with its run_id) reached
the client must still be in state.db, and the file must pass
PRAGMA integrity_check. Run by tests/proto/proto_runs.sh."""
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

from proto_common import Checks, StdioSession, tool_object

BIN = sys.argv[1]
CHECKS = Checks()
check = CHECKS.check
DIRS = []


def cli(data, *args):
    p = subprocess.run([BIN, *args, "--data-dir", data], capture_output=True,
                       timeout=60)
    return p.returncode, p.stdout.decode(), p.stderr.decode()



def structured(reply):
    return tool_object(reply)


SOURCE = ('extern "C" __global__ void scale_f32(float *y, const float *x, int n)\n'
          '{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }\n')
CHECK_SPEC = {
    "source": SOURCE, "arch": "sm_90", "sizes": [{"N": 1000}],
    "tensors": {"x": {"dtype": "f32", "shape": ["N"], "role": "input"},
                "y": {"dtype": "f32", "shape": ["N"], "role": "output"}},
    "launch": [{"kernel": "scale_f32", "grid": ["ceil_div(N, 256)"], "block": [256],
                "args": ["y", "x", "N"]}],
    "reference": {"torch": "y = 2 * x"},
}


def run_tool(tools):
    """The cheapest tool that records a run: a no_gpu check (forced with
    KFORGE_NO_GPU, so it is quick on a GPU machine too), else a compile
    answered from the cache."""
    if "check_kernel" in tools:
        return "check_kernel", {"spec": CHECK_SPEC}
    if "compile_kernel" in tools:
        return "compile_kernel", {"source": SOURCE, "arch": "sm_90"}
    return None, None


def test_cli_empty_history():
    data = tempfile.mkdtemp(prefix="kforge-runs-")
    DIRS.append(data)
    rc, out, err = cli(data, "runs")
    check("runs on an empty history exits 0", rc == 0, f"rc {rc} {err}")
    check("runs on an empty history says so", "no runs match" in out, out)
    rc, out, err = cli(data, "runs", "--json")
    check("runs --json is JSON with an empty list",
          rc == 0 and json.loads(out).get("runs") == [], out)
    rc, out, err = cli(data, "runs", "show", "r000000000000000")
    check("runs show of an unknown id exits 4", rc == 4, f"rc {rc} {err}")
    rc, out, err = cli(data, "runs", "compare", "r000000000000000")
    check("runs compare with one id is a usage error", rc == 2, f"rc {rc} {err}")
    rc, out, err = cli(data, "runs", "--kind", "benchmark")
    check("runs --kind with a bad kind is a usage error naming the option and list_runs's enum",
          rc == 2 and "--kind: 'benchmark' is not one of compile, check, bench, calibrate" in err,
          f"rc {rc} {err}")
    rc, out, err = cli(data, "runs", "--limit", "501")
    check("runs --limit past list_runs's maximum names the option and the range",
          rc == 2 and "--limit: '501' is not an integer from 1 to 500" in err, f"rc {rc} {err}")
    rc, out, err = cli(data, "runs", "--since", "yesterday")
    check("runs --since with a bad time fails naming since",
          rc == 1 and "since" in (out + err), f"rc {rc} {out} {err}")


def test_mcp_and_crash():
    data = tempfile.mkdtemp(prefix="kforge-runs-")
    DIRS.append(data)
    env = dict(os.environ, KFORGE_NO_GPU="1")
    s = StdioSession(BIN, data, "proto-runs", env=env, timeout=60)
    s.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    tools = {t["name"] for t in (s.wait(1) or {}).get("result", {}).get("tools", [])}
    for t in ("list_runs", "get_run", "compare_runs"):
        check(f"tools/list has {t}", t in tools, sorted(tools))
    s.send({"jsonrpc": "2.0", "id": 2, "method": "resources/templates/list"})
    temps = [t["uriTemplate"] for t in
             (s.wait(2) or {}).get("result", {}).get("resourceTemplates", [])]
    check("run resource template listed", "kforge://runs/{id}" in temps, temps)
    r = s.call(3, "list_runs", {})
    check("list_runs on an empty history", structured(r).get("runs") == [], r)
    r = s.call(4, "get_run", {"id": "short"})
    check("get_run with a malformed id is an error naming the id",
          (r or {}).get("result", {}).get("isError") is True and
          "arguments.id" in structured(r).get("summary", ""), r)

    name, args = run_tool(tools)
    check("a tool that records runs exists (check_kernel or compile_kernel)",
          name is not None, sorted(tools))
    if name is None:
        s.close(timeout=30)
        return
    first = s.call(10, name, args)
    rid = structured(first).get("run_id")
    check(f"{name} answers with a run_id (it calls tools_runs_record)",
          isinstance(rid, str) and len(rid) == 16, first)
    if not rid:
        s.close(timeout=30)
        return
    r = s.call(11, "get_run", {"id": rid})
    run = structured(r).get("run", {})
    check("get_run finds the recorded run", run.get("id") == rid, r)
    check("the run's kind matches the tool",
          run.get("kind") == ("check" if name == "check_kernel" else "compile"), run)
    if name == "check_kernel":
        check("a no_gpu check is recorded with status error (not failed)",
              run.get("status") == "error", run)
    s.send({"jsonrpc": "2.0", "id": 12, "method": "resources/read",
            "params": {"uri": f"kforge://runs/{rid}"}})
    rr = s.wait(12) or {}
    text = ((rr.get("result") or {}).get("contents") or [{}])[0].get("text", "")
    check("resources/read kforge://runs/{id} gives the run",
          json.loads(text or "{}").get("id") == rid, rr)
    s.close(timeout=30)

    # The crash: calls kept in flight (under the session's in-flight cap)
    # until enough were answered, then SIGKILL with more still running.
    s = StdioSession(BIN, data, "proto-runs", env=env, timeout=60)
    sent = 0
    in_flight_cap = 32
    end = time.time() + 120
    while time.time() < end:
        with s.lock:
            done = [m for k, m in s.replies.items() if k >= 100]
        if sum(1 for m in done if structured(m).get("run_id")) >= 40:
            break
        while sent - len(done) < in_flight_cap and sent < 5000:
            s.send({"jsonrpc": "2.0", "id": 100 + sent, "method": "tools/call",
                    "params": {"name": name, "arguments": args}})
            sent += 1
        time.sleep(0.001)
    s.p.send_signal(signal.SIGKILL)
    s.p.wait(timeout=30)
    s.t.join(timeout=10)
    answered = [structured(m).get("run_id") for k, m in s.replies.items() if k >= 100]
    busy = [a for a in answered if not a]
    answered = [a for a in answered if a]
    check("calls were answered before the kill", len(answered) >= 40,
          f"{len(answered)} with a run_id, {len(busy)} without")
    check("the kill came mid-stream (calls still in flight)",
          sent > len(answered) + len(busy), f"sent {sent}, answered {len(answered)}")
    db = sqlite3.connect(os.path.join(data, "state.db"))
    check("state.db passes integrity_check after SIGKILL",
          db.execute("PRAGMA integrity_check").fetchone()[0] == "ok")
    have = {row[0] for row in db.execute("SELECT id FROM runs")}
    lost = [a for a in answered if a not in have]
    check("no answered run was lost", not lost, f"{len(lost)} lost: {lost[:5]}")
    db.close()
    rc, out, err = cli(data, "runs", "--json", "--limit", "500")
    listed = {r["id"] for r in json.loads(out or "{}").get("runs", [])}
    check("kforge runs lists them after the crash",
          rc == 0 and set(answered) <= listed, f"rc {rc} {err}")
    a, b = answered[0], answered[1]
    rc, out, err = cli(data, "runs", "compare", a, b, "--json")
    check("kforge runs compare A B answers", rc == 0 and json.loads(out).get("a"),
          f"rc {rc} {out} {err}")


V2_SCHEMA = """
CREATE TABLE runs (id TEXT PRIMARY KEY,
 kind TEXT NOT NULL CHECK (kind IN ('compile','check','bench','calibrate')),
 created_ms INTEGER NOT NULL, status TEXT NOT NULL CHECK (status IN ('ok','failed','error')),
 kernels TEXT NOT NULL DEFAULT '', source_hash TEXT, spec TEXT, device_name TEXT,
 device_uuid TEXT, summary TEXT NOT NULL DEFAULT '', result TEXT,
 duration_ms INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
CREATE INDEX runs_kind ON runs(kind, id);
CREATE TABLE ceilings (gpu_uuid TEXT PRIMARY KEY, device_name TEXT NOT NULL DEFAULT '',
 copy_gbps REAL, bf16_tflops REAL, fp32_tflops REAL, measured_ms INTEGER NOT NULL,
 method TEXT NOT NULL DEFAULT '', run_id TEXT);
CREATE INDEX runs_status ON runs(status, id);
INSERT INTO runs (id, kind, created_ms, status, kernels, summary)
 VALUES ('r00000000v000002', 'check', 2000, 'ok', 'scale_f32', 'from an older kforge');
PRAGMA user_version = 2;
"""


def test_daemon_migrates_an_older_history():
    """A daemon started on a state.db of schema 2 (before runs carried a
    description) migrates it in place, keeps its runs, and records new runs
    with description, notes and a parent from the old history."""
    data = tempfile.mkdtemp(prefix="kforge-runs-")
    DIRS.append(data)
    db = sqlite3.connect(os.path.join(data, "state.db"))
    db.executescript(V2_SCHEMA)
    db.close()
    env = dict(os.environ, KFORGE_NO_GPU="1")
    s = StdioSession(BIN, data, "proto-runs", env=env, timeout=60)
    args = {"spec": CHECK_SPEC, "description": "scale: y = 2 x",
            "notes": "one element per thread", "parent": "r00000000v000002"}
    r = s.call(1, "check_kernel", args)
    rid = structured(r).get("run_id")
    check("a check on a migrated history is recorded", isinstance(rid, str), r)
    run = structured(s.call(2, "get_run", {"id": rid or "r000000000000000"})).get("run", {})
    check("get_run shows description, notes and parent",
          run.get("description") == "scale: y = 2 x" and
          run.get("notes") == "one element per thread" and
          run.get("parent") == "r00000000v000002", run)
    rows = structured(s.call(3, "list_runs", {})).get("runs", [])
    check("list_runs keeps the old run and shows the new one's parent",
          [x.get("id") for x in rows][-1:] == ["r00000000v000002"] and
          rows[0].get("parent") == "r00000000v000002", rows)
    r = s.call(4, "check_kernel", dict(args, parent="r0000000000zzzzz"))
    check("an unknown parent is refused naming the field",
          "parent: no run r0000000000zzzzz" in structured(r).get("summary", ""), r)
    s.close(timeout=30)
    db = sqlite3.connect(os.path.join(data, "state.db"))
    check("state.db is at the current schema (4)",
          db.execute("PRAGMA user_version").fetchone()[0] == 4)
    db.close()


try:
    test_cli_empty_history()
    test_daemon_migrates_an_older_history()
    test_mcp_and_crash()
finally:
    for d in DIRS:
        shutil.rmtree(d, ignore_errors=True)
sys.exit(CHECKS.summary("proto_runs"))
