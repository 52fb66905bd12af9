"""The Slurm executor end to end (run by tests/proto/proto_slurm.sh, which
brings up the one-node cluster and exports SLURM_CONF, T, the mock harness
and the node data dir): refusals at start, checks and benchmarks through
sbatch over REST, a kernel that fails, jobs Slurm refuses, cancellation
and a client hanging up (scancel), benchmark_model and build_torch_op on
the node (its clear "no torch" error; a driver double's answer; a
cancelled model job scancel'd), `kforge eval run --executor slurm` (its
checks as job arrays, rows in task order), slurmd killed mid-job (a clear failure,
then the next job passes), the daemon killed and restarted mid-job (the
run is recorded once), and 50 calls at once (submitted as job arrays, a
broken element failing alone, all others answered with their own results,
each run recorded once, never more of the client's jobs running at Slurm
than its limit)."""
import glob
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request

from proto_common import Checks, StdioSession, wait_port_file

BIN, SRC = sys.argv[1], sys.argv[2]
T = os.environ["T"]
CHECKS = Checks()
check = CHECKS.check
SHARED = f"{T}/shared"


def load_spec():
    sys.path.insert(0, f"{SRC}/tests/gpu")
    import run  # tests/gpu/run.py: the spec loader the GPU suites use
    spec, _, _ = run.load_spec(f"{SRC}/tests/gpu/pass/axpb_f32.json")
    return spec


SPEC = load_spec()


def spec_n(n):
    s = json.loads(json.dumps(SPEC))
    s["sizes"] = [{"N": n}]
    return s


def serve_args(data, *extra, partition="gpu"):
    return [BIN, "serve", "--data-dir", data, "--sandbox=none", "--executor", "slurm",
            "--partition", partition, "--shared-dir", SHARED, "--slurm-poll-ms", "200",
            *extra]


class Http:
    """kforge serve --http on a free port."""

    def __init__(self, data, *extra, partition="gpu", env=None):
        self.port_file = f"{data}.port"
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)
        self.log = open(f"{data}.log", "ab")
        self.p = subprocess.Popen(
            serve_args(data, "--http", "127.0.0.1:0", "--port-file", self.port_file, *extra,
                       partition=partition), stdout=self.log, stderr=self.log,
            env={**os.environ, **(env or {})})
        self.port = wait_port_file(self.port_file, self.p)

    def post(self, path, body, timeout=300):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def get(self, path, timeout=300):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=timeout) as r:
            return r.status, json.loads(r.read())

    def stop(self, sig=signal.SIGTERM):
        self.p.send_signal(sig)
        self.p.wait(timeout=120)
        self.log.close()


def db_rows(data, sql, args=()):
    c = sqlite3.connect(f"{data}/state.db", timeout=30)
    try:
        return c.execute(sql, args).fetchall()
    finally:
        c.close()


def scontrol_job(job_id):
    return subprocess.run(["scontrol", "show", "job", str(job_id)], capture_output=True,
                          text=True).stdout


def squeue(job_id):
    out = subprocess.run(["squeue", "-h", "-t", "all", "-j", str(job_id), "-o", "%T|%r"],
                         capture_output=True, text=True).stdout.strip()
    return out


def cancelled(job_id):
    """True once Slurm shows the job CANCELLED (it is COMPLETING while its
    processes are being killed)."""
    for _ in range(300):
        state = squeue(job_id)
        if not state.startswith("COMPLETING"):
            return state.startswith("CANCELLED")
        time.sleep(0.1)
    return False


def wait_for(cond, what, tries=600, delay=0.2):
    for _ in range(tries):
        if cond():
            return True
        time.sleep(delay)
    check(what, False, "never happened")
    return False


def started():
    return glob.glob(f"{T}/started-*")


def clear_started():
    for f in started():
        os.unlink(f)


# A held job waits before its harness starts; the calls that hold one give
# timeout_s, since the default watchdog follows the (tiny) work and the
# jail's limit on a harness process follows the watchdog.
def hold(on):
    if on:
        open(f"{T}/hold", "w").close()
    elif os.path.exists(f"{T}/hold"):
        os.unlink(f"{T}/hold")


def test_refused_at_start():
    data = f"{T}/d-refuse"
    os.makedirs(data, exist_ok=True)
    cases = [
        ("sbatch not on PATH", serve_args(data), {"PATH": "/nonexistent"},
         "sbatch not found on PATH"),
        ("a missing shared dir",
         [a if a != SHARED else f"{T}/no-such-dir" for a in serve_args(data)], {},
         "does not exist"),
        ("an unknown partition", serve_args(data, partition="nope"), {},
         "no partition 'nope'"),
    ]
    for name, cmd, env, words in cases:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                           env={**os.environ, **env})
        check(f"serve refuses {name} with exit 5", p.returncode == 5,
              f"rc {p.returncode} {p.stderr}")
        check(f"serve names {name}", words in p.stderr, p.stderr)
    p = subprocess.run([BIN, "serve", "--partition", "gpu"], capture_output=True, text=True)
    check("--partition without --executor slurm is a usage error",
          p.returncode == 2 and "--executor slurm" in p.stderr, f"{p.returncode} {p.stderr}")


def test_check_bench_and_failures(srv, data):
    st, r = srv.post("/v1/check", {"spec": SPEC})
    ex = r.get("executor", {})
    passed_run = r.get("run_id")
    check("a check through Slurm passes", st == 200 and r.get("passed") is True,
          f"{st} {r.get('summary')}")
    check("the answer names the Slurm job and node",
          ex.get("kind") == "slurm" and ex.get("job_id") and ex.get("node") == "kfnode", ex)
    check("the check ran on the node's (mock) GPU",
          r.get("device", {}).get("name") == "kforge mock GPU", r.get("device"))
    rows = db_rows(data, "SELECT kind, status, device_name FROM runs WHERE id = ?",
                   (r.get("run_id"),))
    check("the check is one run in state.db", rows == [("check", "ok", "kforge mock GPU")], rows)
    st, r = srv.post("/v1/bench", {"spec": SPEC, "budget_ms": 50, "size": 0})
    check("a benchmark through Slurm measures", st == 200 and r.get("passed") is True and
          r.get("candidate", {}).get("count", 0) >= 8, f"{st} {r.get('summary')}")
    check("a benchmark asks Slurm for the node to itself",
          "OverSubscribe=NO" in scontrol_job(r.get("executor", {}).get("job_id")),
          scontrol_job(r.get("executor", {}).get("job_id")))
    check("a check does not", "OverSubscribe=NO" not in scontrol_job(ex.get("job_id")),
          scontrol_job(ex.get("job_id")))
    keys = db_rows(data, "SELECT key FROM exec_jobs WHERE state = 'recorded'")
    check("an answered job's directory is removed once its run is recorded",
          keys and not any(os.path.exists(f"{SHARED}/jobs/{k}") for (k,) in keys), keys)
    runs_before = db_rows(data, "SELECT count(*) FROM runs")[0][0]
    st, r = srv.get("/v1/gpus/local")
    local = r.get("local", [])
    check("get_gpu_specs local answers for each GPU type of the partition, from a node of it",
          st == 200 and sorted(g.get("gres_type", "") for g in local) == ["a100", "h100"] and
          all(g.get("device", {}).get("name") == "kforge mock GPU" and g.get("node") == "kfnode"
              for g in local) and
          r.get("partition") == {"name": "gpu", "gpu_types": ["h100", "a100"]}, r)
    jobs = db_rows(data, "SELECT slurm_id FROM exec_jobs WHERE tool = 'get_gpu_specs'")
    check("one get_gpu_specs job per GPU type, each asking Slurm for that type",
          sorted("gpu:a100:1" in scontrol_job(j) for (j,) in jobs) == [False, True] and
          sorted("gpu:h100:1" in scontrol_job(j) for (j,) in jobs) == [False, True],
          [scontrol_job(j) for (j,) in jobs])
    check("get_gpu_specs local records no run and leaves no job open",
          db_rows(data, "SELECT count(*) FROM runs")[0][0] == runs_before and
          db_rows(data, "SELECT count(*) FROM exec_jobs WHERE state != 'recorded'") == [(0,)],
          db_rows(data, "SELECT tool, state FROM exec_jobs"))
    open(f"{T}/mode", "w").write("oob")
    st, r = srv.post("/v1/check", {"spec": SPEC, "trials": 1})
    open(f"{T}/mode", "w").write("ok")
    check("a wrong kernel fails on the node with its safeguard",
          r.get("passed") is False and "out_of_bounds" in r.get("safeguards_fired", []),
          r.get("summary"))
    rows = db_rows(data, "SELECT status FROM runs WHERE id = ?", (r.get("run_id"),))
    check("the failed check is recorded as failed", rows == [("failed",)], rows)
    failed_run = r.get("run_id")
    jobs = len(exec_jobs(data))
    st, r = srv.post("/v1/check", {"spec": SPEC, "trials": 1, "parent": passed_run,
                                   "description": "axpb, again", "notes": "same kernel"})
    rows = db_rows(data, "SELECT description, notes, parent FROM runs WHERE id = ?",
                   (r.get("run_id"),))
    check("a check's description, notes and parent (a run of the daemon's history) are kept",
          r.get("passed") is True and rows == [("axpb, again", "same kernel", passed_run)],
          (r.get("summary"), rows))
    st, r = srv.post("/v1/check", {"spec": SPEC, "parent": "r0000000000000000"})
    check("a parent the daemon's history lacks is refused without a Slurm job",
          "parent" in r.get("error", {}).get("message", "") and
          len(exec_jobs(data)) == jobs + 1, (r, exec_jobs(data)[jobs:]))
    return passed_run, failed_run


def test_refused_jobs():
    data = f"{T}/d-gres"
    os.makedirs(data, exist_ok=True)
    srv = Http(data, "--gres", "gpu:5")
    st, r = srv.post("/v1/check", {"spec": SPEC, "trials": 1})
    err = r.get("error", {})
    check("a job sbatch refuses is a structured error", err.get("code") == "invalid", r)
    check("the error carries Slurm's words",
          "Requested node configuration is not available" in err.get("slurm", {}).get("said", ""),
          err)
    srv.stop()
    data = f"{T}/d-time"
    os.makedirs(data, exist_ok=True)
    srv = Http(data, "--time-limit", "10", partition="short")
    st, r = srv.post("/v1/check", {"spec": SPEC, "trials": 1})
    err = r.get("error", {})
    # Slurm 22.05 says PartitionConfig here, newer ones PartitionTimeLimit
    check("a time limit over the partition's is refused with Slurm's reason",
          err.get("code") == "invalid" and ("PartitionTimeLimit" in err.get("message", "") or
                                            "PartitionConfig" in err.get("message", "")), r)
    job = err.get("slurm", {}).get("job_id")
    check("the job that could never start was cancelled",
          job and cancelled(job), squeue(job) if job else r)
    srv.stop()


def mcp_call(sess, i, args, tool="check_kernel"):
    sess.send({"jsonrpc": "2.0", "id": i, "method": "tools/call",
               "params": {"name": tool, "arguments": args}})


def exec_jobs(data):
    return db_rows(data, "SELECT key, tool, state, run_id FROM exec_jobs ORDER BY key")


def test_model_and_torch_op(srv, data, check_run, failed_run):
    """benchmark_model and build_torch_op run on the node; this host has no
    torch, so the node's own clear error comes back through the job
    directory (the real model_bench.py, the real torch probe)."""
    jobs = len(exec_jobs(data))
    st, r = srv.post("/v1/model-bench", {"recipe": "qwen3"})
    err, ex = r.get("error", {}), r.get("executor", {})
    check("benchmark_model runs on the node and says torch is missing there",
          err.get("code") == "not_found" and "torch not available" in err.get("message", "") and
          ex.get("node") == "kfnode", r)
    check("benchmark_model asks Slurm for the node to itself",
          "OverSubscribe=NO" in scontrol_job(ex.get("job_id")), scontrol_job(ex.get("job_id")))
    rows = db_rows(data, "SELECT r.kind, r.status, r.kernels FROM runs r JOIN exec_jobs j "
                   "ON j.run_id = r.id WHERE j.slurm_id = ?", (ex.get("job_id"),))
    check("the model benchmark is one run in state.db (bench, error)",
          len(rows) == 1 and rows[0][:2] == ("bench", "error") and "model:qwen3" in rows[0][2],
          rows)
    jobs += 1
    st, r = srv.post("/v1/model-bench", {"recipe": "qwen3", "patch": {"Qwen3MLP": "fast"}})
    check("a bad model request is refused by the daemon, without a Slurm job",
          r.get("error", {}).get("code") == "invalid" and "executor" not in r and
          len(exec_jobs(data)) == jobs, (r, exec_jobs(data)[jobs:]))
    runs = db_rows(data, "SELECT count(*) FROM runs")[0][0]
    st, r = srv.post("/v1/torch-op", {"spec": SPEC})
    err, ex = r.get("error", {}), r.get("executor", {})
    check("build_torch_op runs on the node and says python3 cannot import torch there",
          err.get("code") == "not_found" and "import torch" in err.get("message", "") and
          "torch" in err.get("message", "") and ex.get("node") == "kfnode", r)
    check("build_torch_op records no run and closes its job",
          db_rows(data, "SELECT count(*) FROM runs")[0][0] == runs and
          exec_jobs(data)[-1][1:3] == ("build_torch_op", "recorded"), exec_jobs(data)[-1])
    jobs += 1
    st, r = srv.post("/v1/torch-op", {"run": check_run, "name": "axpb"})
    err = r.get("error", {})
    check("build_torch_op of a run: the daemon's run becomes the node's spec",
          "import torch" in err.get("message", "") and r.get("run") == check_run and
          r.get("executor", {}).get("node") == "kfnode", r)
    jobs += 1
    runs = db_rows(data, "SELECT count(*) FROM runs WHERE kind = 'profile'")[0][0]
    st, r = srv.post("/v1/profile", {"spec": SPEC})
    ex = r.get("executor", {})
    check("profile_kernel runs on the node (exclusive) and says why there are no counters",
          ex.get("node") == "kfnode" and r.get("profiled") is False and
          r.get("reason") in ("no_ncu", "no_gpu") and
          "OverSubscribe=NO" in scontrol_job(ex.get("job_id")), r)
    check("the node's profile is one profile run in state.db",
          db_rows(data, "SELECT count(*) FROM runs WHERE kind = 'profile'")[0][0] == runs + 1,
          db_rows(data, "SELECT kind, status FROM runs WHERE kind = 'profile'"))
    jobs += 1
    st, r = srv.post("/v1/torch-op", {"run": failed_run})
    check("build_torch_op of a failed check is refused by the daemon, without a Slurm job",
          "did not pass" in r.get("error", {}).get("message", "") and
          len(exec_jobs(data)) == jobs, (r, exec_jobs(data)[jobs:]))


MODEL_SHIM = """import os, runpy, sys, time
open("{t}/started-model-%d" % os.getpid(), "w").close()
while os.path.exists("{t}/hold"):
    time.sleep(0.1)
runpy.run_path("{double}", run_name="__main__")
"""


def test_model_answer_and_cancel():
    """benchmark_model's answer and its cancellation through Slurm, with the
    driver double (tests/sdk/model_driver_double.py) behind a hold."""
    root = f"{T}/model-root"
    os.makedirs(f"{root}/sandbox/model", exist_ok=True)
    with open(f"{root}/sandbox/model/model_bench.py", "w") as f:
        f.write(MODEL_SHIM.format(t=T, double=f"{SRC}/tests/sdk/model_driver_double.py"))
    data = f"{T}/d-model"
    os.makedirs(data, exist_ok=True)
    log = open(f"{data}.log", "ab")
    sess = StdioSession(BIN, data, "model-test", cmd=serve_args(data), stderr=log,
                        env={**os.environ, "KFORGE_ROOT": root})
    hold(True)
    clear_started()
    mcp_call(sess, 5, {"recipe": "qwen3"}, tool="benchmark_model")
    wait_for(started, "the model job to start on the node")
    sess.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": 5, "reason": "test"}})
    wait_for(lambda: [j[2] for j in exec_jobs(data)] == ["recorded"],
             "the cancelled model call to be recorded")
    job = db_rows(data, "SELECT slurm_id FROM exec_jobs")[0][0]
    check("a cancelled benchmark_model scancels its Slurm job", cancelled(job), squeue(job))
    hold(False)
    mcp_call(sess, 6, {"recipe": "qwen3"}, tool="benchmark_model")
    r = (sess.wait(6, timeout=300) or {}).get("result", {})
    sc = r.get("structuredContent", {})
    check("benchmark_model answers through Slurm with the node's result",
          not r.get("isError") and sc.get("speedups") and sc.get("test_double") is True and
          sc.get("executor", {}).get("node") == "kfnode", r)
    rows = db_rows(data, "SELECT r.kind, r.status FROM runs r JOIN exec_jobs j "
                   "ON j.run_id = r.id ORDER BY j.key")
    check("each model call is one run: the cancelled one an error, the answered one ok",
          rows == [("bench", "error"), ("bench", "ok")], rows)
    sess.close()
    log.close()


def test_cancel_and_hangup():
    data = f"{T}/d-cancel"
    os.makedirs(data, exist_ok=True)
    log = open(f"{data}.log", "ab")
    sess = StdioSession(BIN, data, "cancel-test", cmd=serve_args(data), stderr=log)
    hold(True)
    clear_started()
    mcp_call(sess, 5, {"spec": SPEC, "trials": 1, "timeout_s": 60})
    wait_for(started, "the job to start on the node")
    sess.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": 5, "reason": "test"}})
    wait_for(lambda: db_rows(data, "SELECT state FROM exec_jobs") == [("recorded",)],
             "the cancelled call to be recorded")
    job = db_rows(data, "SELECT slurm_id FROM exec_jobs")[0][0]
    check("a cancelled call scancels its Slurm job", cancelled(job), squeue(job))
    rows = db_rows(data, "SELECT status, summary FROM runs")
    check("the cancelled call is one run, an error", len(rows) == 1 and rows[0][0] == "error",
          rows)
    clear_started()
    mcp_call(sess, 6, {"spec": SPEC, "trials": 1, "timeout_s": 60})
    wait_for(started, "the second job to start on the node")
    sess.close()  # the client hangs up: end of stdin
    jobs = db_rows(data, "SELECT slurm_id, state FROM exec_jobs ORDER BY key")
    check("a client that hangs up cancels its Slurm job",
          len(jobs) == 2 and cancelled(jobs[1][0]),
          f"{jobs} {squeue(jobs[-1][0]) if jobs else ''}")
    hold(False)
    log.close()


def test_slurmd_killed(srv, data):
    hold(True)
    clear_started()
    out = {}
    args = {"spec": SPEC, "trials": 1, "timeout_s": 60}
    th = threading.Thread(target=lambda: out.update(r=srv.post("/v1/check", args)))
    th.start()
    wait_for(started, "the job to start before slurmd is killed")
    pid = int(open(f"{T}/slurmd.pid").read())
    os.kill(pid, signal.SIGKILL)
    th.join(timeout=300)
    st, r = out.get("r", (0, {}))
    err = r.get("error", {})
    check("slurmd killed mid-job: the call fails clearly",
          err.get("code") == "fault" and "NODE_FAIL" in err.get("message", ""), r)
    check("slurmd killed mid-job: the retry elsewhere was tried and refused",
          "retry was refused" in err.get("message", "") and
          err.get("slurm", {}).get("attempts") == 2, err)
    hold(False)
    # the orphaned job finishes before slurmd comes back
    key = db_rows(data, "SELECT key FROM exec_jobs ORDER BY key DESC LIMIT 1")[0][0]
    check("a job that failed at Slurm keeps its directory and log",
          glob.glob(f"{SHARED}/jobs/{key}/slurm-*.out"), key)
    wait_for(lambda: os.path.exists(f"{SHARED}/jobs/{key}/answer.json"),
             "the orphaned job to end")
    subprocess.run(["slurmd", "-f", os.environ["SLURM_CONF"], "-N", "kfnode"], check=True)
    subprocess.run(["scontrol", "update", "nodename=kfnode", "state=resume"],
                   capture_output=True)
    wait_for(lambda: subprocess.run(["sinfo", "-h", "-n", "kfnode", "-p", "gpu", "-o", "%t"],
                                    capture_output=True, text=True).stdout.strip() == "idle",
             "the node to come back")
    st, r = srv.post("/v1/check", {"spec": SPEC, "trials": 1})
    check("after slurmd is back the next job passes", r.get("passed") is True, r.get("summary"))


def test_daemon_restarted(srv, data):
    hold(True)
    clear_started()
    before = db_rows(data, "SELECT count(*) FROM runs")[0][0]
    def call():
        try:
            srv.post("/v1/check", {"spec": SPEC, "trials": 1, "timeout_s": 60})
        except OSError:
            pass  # the daemon is killed under it

    th = threading.Thread(target=call, daemon=True)
    th.start()
    wait_for(started, "the job to start before the daemon is killed")
    srv.stop(signal.SIGKILL)
    key = db_rows(data, "SELECT key FROM exec_jobs ORDER BY key DESC LIMIT 1")[0][0]
    srv2 = Http(data, "--max-jobs-per-client", "4")
    hold(False)
    wait_for(lambda: db_rows(data, "SELECT state FROM exec_jobs WHERE key = ?", (key,)) ==
             [("recorded",)], "the restarted daemon to record the job")
    rows = db_rows(data, "SELECT r.status, r.summary FROM runs r JOIN exec_jobs j "
                   "ON j.run_id = r.id WHERE j.key = ?", (key,))
    check("the restarted daemon completes the run", len(rows) == 1 and rows[0][0] == "ok", rows)
    after = db_rows(data, "SELECT count(*) FROM runs")[0][0]
    check("the run is recorded once", after == before + 1, f"{before} -> {after}")
    return srv2


def corrupt_one_queued(data, keys_before):
    """Once the client's 4 slots are taken (held jobs end no slot), breaks
    the call.json of one of the calls still queued in the daemon (or
    pending at Slurm): its element fails on the node, alone. Returns its
    key."""
    def ids():
        return dict(db_rows(data, "SELECT key, slurm_id FROM exec_jobs"))

    wait_for(lambda: len(exec_jobs(data)) >= keys_before + 50, "the 50 calls' rows")
    wait_for(lambda: sum(1 for k, *_ in exec_jobs(data)[keys_before:] if ids()[k]) >= 4,
             "the client's 4 slots to be taken")
    rows = exec_jobs(data)[keys_before:]
    ids = ids()
    queued = [k for k, *_ in rows if not ids[k]]
    pending = [k for k, *_ in rows if ids[k] and squeue(ids[k]).startswith("PENDING")]
    key = (queued or pending)[-1]
    with open(f"{SHARED}/jobs/{key}/call.json", "w") as f:
        f.write("{}")
    return key


def test_fifty_at_once(srv, data):
    before = db_rows(data, "SELECT count(*) FROM runs")[0][0]
    keys_before = len(exec_jobs(data))
    results = [None] * 50
    seen_max = [0]
    done = threading.Event()

    def watch():
        while not done.is_set():
            out = subprocess.run(["squeue", "-h", "-r", "-p", "gpu", "-t", "R", "-o", "%j"],
                                 capture_output=True, text=True).stdout.split()
            seen_max[0] = max(seen_max[0], sum(1 for j in out if j.startswith("kforge-")))
            time.sleep(0.1)

    def one(i):
        results[i] = srv.post("/v1/check", {"spec": spec_n(1000 + i), "trials": 1,
                                            "odd_size": False}, timeout=900)

    hold(True)
    clear_started()
    w = threading.Thread(target=watch)
    w.start()
    ths = [threading.Thread(target=one, args=(i,)) for i in range(50)]
    for t in ths:
        t.start()
    broken = corrupt_one_queued(data, keys_before)
    hold(False)
    for t in ths:
        t.join()
    done.set()
    w.join()
    rows = exec_jobs(data)[keys_before:]
    ids = dict(db_rows(data, "SELECT key, slurm_id FROM exec_jobs"))
    run_of = {k: run for k, _, _, run in rows}
    bad = [i for i, x in enumerate(results) if x and x[1].get("run_id") == run_of.get(broken)]
    ok = [i for i, x in enumerate(results) if x and x[1].get("passed") is True]
    check("50 calls at once: all but the broken one pass", len(ok) == 49 and bad and bad[0] not in ok,
          [x[1].get("summary") if x else None for x in results if not x or not x[1].get("passed")][:3])
    err = results[bad[0]][1].get("error", {}) if bad else {}
    check("the broken element fails alone, with its state and its own log's last words",
          err.get("code") == "fault" and f"{ids[broken]} FAILED" in err.get("message", "") and
          "is not a call" in err.get("message", ""), err)
    own = [i for i, x in enumerate(results)
           if x and x[1].get("sizes", [{}])[0].get("sizes", {}).get("N") == 1000 + i]
    check("50 calls at once: each answer is its own call's", len(own) == 49, len(own))
    subs = {ids[k].split("_")[0] for k, *_ in rows}
    elements = [k for k, *_ in rows if "_" in ids[k]]
    check("50 calls at once: submitted as job arrays, not one sbatch each",
          len(subs) < 50 and len(elements) >= 40 and "_" in ids[broken],
          f"{len(subs)} submissions, {len(elements)} array elements")
    ids_seen = {x[1].get("run_id") for x in results if x}
    after = db_rows(data, "SELECT count(*) FROM runs")[0][0]
    check("50 calls at once: 50 runs, none lost or doubled",
          len(ids_seen) == 50 and after == before + 50, f"{len(ids_seen)} ids, {before} -> {after}")
    check("50 calls at once: never more than the client's limit running at Slurm",
          0 < seen_max[0] <= 4, seen_max[0])
    pending = db_rows(data, "SELECT count(*) FROM exec_jobs WHERE state != 'recorded'")
    check("50 calls at once: no job left unrecorded", pending == [(0,)], pending)


def test_eval_as_arrays():
    """`kforge eval run --executor slurm`: every task at once, the checks
    as a job array, rows in task order, each with its own runs."""
    ev = f"{T}/eval"
    os.makedirs(f"{ev}/tasks", exist_ok=True)
    os.makedirs(f"{ev}/sol", exist_ok=True)
    spec = json.loads(json.dumps(SPEC))
    src, launch = spec.pop("source"), spec.pop("launch")
    ids = ["a_good", "b_nocompile", "c_good", "d_good", "e_good"]
    tasks = [{"id": i, "level": 1, "description": f"Task {i}: y = s * x + w.",
              "math": "y = s * x + w", "reference": spec["reference"], "spec": spec,
              "baseline": {"kind": "source", "why": "the plain reference kernel"}} for i in ids]
    json.dump({"tasks": tasks}, open(f"{ev}/tasks/t.json", "w"))
    for i in ids:
        open(f"{ev}/sol/{i}.cu", "w").write(src + ("\nthis is not C++;\n" if "nocompile" in i
                                                    else ""))
        json.dump({"launch": launch}, open(f"{ev}/sol/{i}.json", "w"))
    data = f"{ev}/data"
    p = subprocess.run([BIN, "eval", "run", f"{ev}/sol", "--tasks", f"{ev}/tasks", "--json",
                        "--data-dir", data, "--sandbox=none", "--timeout-s", "30",
                        "--budget-ms", "50", "--executor", "slurm", "--partition", "gpu",
                        "--shared-dir", SHARED, "--slurm-poll-ms", "200"],
                       capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL)
    try:
        r = json.loads(p.stdout)
    except ValueError:
        r = {}
    rows = r.get("results", [])
    check("eval under Slurm: every task scored, rows in task order",
          p.returncode == 0 and [x.get("id") for x in rows] == ids, f"{p.returncode} {p.stderr[-300:]}")
    good = [x for x in rows if x.get("id") != "b_nocompile"]
    check("eval under Slurm: the correct solutions checked and benchmarked on the node",
          r.get("correct") == 4 and all(x.get("correct") and x.get("bench_run") for x in good),
          rows)
    bad = rows[1] if len(rows) > 1 else {}
    check("eval under Slurm: the solution that does not compile fails alone, with its reason",
          bad.get("correct") is False and "error" in (bad.get("reason") or "").lower(), bad)
    descs = dict(db_rows(data, "SELECT id, description FROM runs"))
    check("eval under Slurm: each row's runs are its own task's",
          all(f"Task {x.get('id')}:" in (descs.get(x.get("check_run")) or "") for x in rows),
          [(x.get("id"), descs.get(x.get("check_run"))) for x in rows])
    checks = [sid for tool, sid in db_rows(data, "SELECT tool, slurm_id FROM exec_jobs")
              if tool == "check_kernel"]
    check("eval under Slurm: its checks went together as job arrays",
          len(checks) == 5 and len({c.split("_")[0] for c in checks}) < 5, checks)


def test_calibrate_per_type():
    """kforge calibrate --executor slurm: one exclusive job per GPU type,
    each calibration recorded and its ceilings stored in the daemon's
    state.db."""
    data = f"{T}/d-calib"
    os.makedirs(data, exist_ok=True)
    p = subprocess.run([BIN, "calibrate", "--json", "--data-dir", data, "--sandbox=none",
                        "--executor", "slurm", "--partition", "gpu", "--shared-dir", SHARED,
                        "--slurm-poll-ms", "200"],
                       capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    try:
        r = json.loads(p.stdout)
    except ValueError:
        r = {}
    res = r.get("results", [])
    check("calibrate under Slurm: one calibration per GPU type, measured on the node",
          p.returncode == 0 and sorted(x.get("gres_type", "") for x in res) == ["a100", "h100"]
          and all(x.get("gpu") == "kforge mock GPU" and x.get("copy_gbs", 0) > 0 and
                  x.get("executor", {}).get("node") == "kfnode" for x in res),
          f"{p.returncode} {p.stderr[-300:]} {r}")
    ids = [x.get("executor", {}).get("job_id") for x in res]
    check("each calibrate job asks for its GPU type and the node to itself",
          all(f"gpu:{x.get('gres_type')}:1" in scontrol_job(j) and
              "OverSubscribe=NO" in scontrol_job(j) for x, j in zip(res, ids)),
          [scontrol_job(j) for j in ids])
    runs = db_rows(data, "SELECT kind, status, device_name FROM runs")
    ceil = db_rows(data, "SELECT device_name, copy_gbps FROM ceilings")
    check("calibrate under Slurm: a calibrate run per type and the ceilings in state.db",
          runs == [("calibrate", "ok", "kforge mock GPU")] * 2 and len(ceil) >= 1 and
          ceil[0][0] == "kforge mock GPU" and ceil[0][1] > 0, (runs, ceil))
    # a node with a fresh data dir (no calibration of its own) gets the
    # daemon's for its GPU type with the benchmark
    srv = Http(data, env={"KFORGE_NODE_DATA_DIR": f"{T}/node-fresh"})
    st, b = srv.post("/v1/bench", {"spec": SPEC, "budget_ms": 50, "size": 0})
    srv.stop()
    check("a benchmark on a node without its own calibration reports the daemon's for its type",
          b.get("passed") is True and isinstance(b.get("ceilings"), dict) and
          abs(b["ceilings"].get("copy_gbs", 0) - ceil[0][1]) < 1e-6 and
          os.path.exists(f"{T}/node-fresh/state.db"), (b.get("summary"), b.get("ceilings")))
    # calibrate killed mid-job: a daemon on its data dir records both
    # types' runs and ceilings when the jobs end
    data2 = f"{T}/d-calib2"
    os.makedirs(data2, exist_ok=True)
    hold(True)
    clear_started()
    cal = subprocess.Popen([BIN, "calibrate", "--data-dir", data2, "--sandbox=none",
                            "--executor", "slurm", "--partition", "gpu", "--shared-dir", SHARED,
                            "--slurm-poll-ms", "200"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    wait_for(started, "a calibrate job to start on the node")
    cal.kill()
    cal.wait()
    srv = Http(data2)
    hold(False)
    wait_for(lambda: [s for _, _, s, _ in exec_jobs(data2)] == ["recorded", "recorded"],
             "the restarted daemon to record both calibrate jobs")
    srv.stop()
    check("calibrate jobs of a killed calibrate are recorded by the next daemon, ceilings too",
          db_rows(data2, "SELECT kind, status FROM runs") == [("calibrate", "ok")] * 2 and
          db_rows(data2, "SELECT count(*) FROM ceilings") == [(1,)],
          (db_rows(data2, "SELECT kind, status, summary FROM runs"),
           db_rows(data2, "SELECT count(*) FROM ceilings")))
    p = subprocess.run([BIN, "calibrate", "--device", "0", "--executor", "slurm",
                        "--partition", "gpu", "--shared-dir", SHARED],
                       capture_output=True, text=True, timeout=60)
    check("--device with --executor slurm is a usage error",
          p.returncode == 2 and "each GPU type is one job" in p.stderr, p.stderr)


def main():
    test_refused_at_start()
    test_refused_jobs()
    test_cancel_and_hangup()
    test_model_answer_and_cancel()
    test_eval_as_arrays()
    test_calibrate_per_type()
    data = f"{T}/d-main"
    os.makedirs(data, exist_ok=True)
    srv = Http(data, "--max-jobs-per-client", "4")
    try:
        test_model_and_torch_op(srv, data, *test_check_bench_and_failures(srv, data))
        test_slurmd_killed(srv, data)
        srv = test_daemon_restarted(srv, data)
        test_fifty_at_once(srv, data)
    finally:
        srv.stop()
    sys.exit(CHECKS.summary("proto_slurm"))


main()
