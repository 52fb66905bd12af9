"""The daemon's spare harness processes, run by tests/proto/proto_gpu_spare.sh
(which exports T with $T/axpb.json, MOCK_CUDA_DEVICES=2, the mock libcuda
and a harness wrapper that holds fresh starts while $T/hold exists):
a GPU's first job starts its spares (two per GPU by default), both GPUs get
theirs, the next check runs on spares only and says so in its phases, killed
spares are replaced and the check still passes (logged), a kernel that
hangs on a spare is stopped by its watchdog and the next job passes, a
stopped daemon
leaves neither processes nor directories, a SIGKILLed one no process. And
the harness's side of the protocol by itself: a spare without a context
exits 3 before any report line, one whose go pipe closes exits quietly, one
that takes its job says so first and refuses a job for another GPU."""
import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time

from proto_common import Checks, rest_post, wait_port_file

BIN = sys.argv[1]
T = os.environ["T"]
CHECKS = Checks()
check = CHECKS.check
SPEC = json.load(open(f"{T}/axpb.json"))


def spares(pid):
    """{pid: device} of the daemon's waiting spare harnesses (its children
    whose command line has --wait-fd)."""
    out = {}
    for d in glob.glob("/proc/[0-9]*"):
        try:
            stat = open(f"{d}/stat").read()
            args = open(f"{d}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and b"--wait-fd" in args:
            out[int(d[6:])] = int(args[args.index(b"--device") + 1])
    return out


def wait_spares(pid, want):
    """The daemon's spares once they are `want` ({device: count}), or what
    there is after 10 s."""
    got = {}
    for _ in range(200):
        sp = spares(pid)
        got = {d: list(sp.values()).count(d) for d in set(sp.values())}
        if got == want:
            return sp
        time.sleep(0.05)
    return got


def alive(pids):
    return [p for p in pids if os.path.exists(f"/proc/{p}") and
            open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"]


def phases(r):
    p = (r or {}).get("phases") or {}
    return p.get("harness_runs", -1), p.get("harness_spares", -1)


def serve(data, log):
    return subprocess.Popen([BIN, "serve", "--http", "127.0.0.1:0", "--port-file",
                             f"{data}/port", "--data-dir", data, "--sandbox=none"],
                            stdout=log, stderr=log)


def two_gpus(port):
    """Two benchmarks at once, held at their fresh starts until both began:
    one per GPU, each GPU's first job."""
    open(f"{T}/hold", "w").close()
    res = [None, None]

    def one(i):
        res[i] = rest_post(port, "/v1/bench", {"spec": SPEC, "budget_ms": 50, "size": 0,
                                          "baseline": False})
    ths = [threading.Thread(target=one, args=(i,)) for i in range(2)]
    for t in ths:
        t.start()
    for _ in range(600):
        if len(glob.glob(f"{T}/started-*")) >= 2:
            break
        time.sleep(0.05)
    os.unlink(f"{T}/hold")
    for t in ths:
        t.join()
    return res


def scenarios(srv, port, log_path):
    res = two_gpus(port)
    devs = sorted(((r or {}).get("device") or {}).get("index", -1) for r in res)
    check("each GPU's first job passes", all(r and r.get("passed") for r in res) and
          devs == [0, 1], [(r or {}).get("summary") for r in res])
    runs = [phases(r) for r in res]
    check("a GPU's first job starts its harness fresh (its CUDA reference run takes a spare)",
          all(n == 2 and s == 1 for n, s in runs), runs)
    sp = wait_spares(srv.pid, {0: 2, 1: 2})
    check("each of the two GPUs keeps two spares", sorted(sp.values()) == [0, 0, 1, 1], sp)

    r = rest_post(port, "/v1/check", {"spec": SPEC})
    gpu = ((r.get("device") or {}).get("index", 0))
    check("the next check passes on spares alone and its phases say so",
          r.get("passed") and phases(r) == (2, 2) and
          r["phases"]["harness_start_ms"] >= 0, (r.get("summary"), r.get("phases")))
    after = wait_spares(srv.pid, {0: 2, 1: 2})
    check("the spares it took are replaced by new processes",
          len(after) == 4 and len(set(after) - set(sp)) == 2 and
          all(after[p] == gpu for p in set(after) - set(sp)), (sp, after))

    for p in after:
        os.kill(p, signal.SIGKILL)
    for _ in range(200):
        if not spares(srv.pid):
            break
        time.sleep(0.05)
    r = rest_post(port, "/v1/check", {"spec": SPEC})
    gpu = ((r.get("device") or {}).get("index", 0))
    check("with its spares killed a check still passes, its harness started fresh",
          r.get("passed") and phases(r)[0] == 2 and phases(r)[1] < 2,
          (r.get("summary"), r.get("phases")))
    log = open(log_path, errors="replace").read()
    # killed while waiting, or (its death not yet seen) when the job was sent to it
    check("a dead spare is logged", "ended before it had a job" in log or
          "ended without taking its job" in log, log[-600:])
    again = wait_spares(srv.pid, {gpu: 2})
    check("the GPU has new spares after it", len(again) == 2 and not set(again) & set(after),
          again)
    r = rest_post(port, "/v1/check", {"spec": SPEC})
    check("and the check after uses them", r.get("passed") and phases(r) == (2, 2),
          (r.get("summary"), r.get("phases")))

    # A hang on a spare ends at its watchdog as on a fresh harness. The
    # mode is read as a harness starts: new spares are made to hang.
    def renew(mode):
        open(f"{T}/mode", "w").write(mode)
        for p in spares(srv.pid):
            os.kill(p, signal.SIGKILL)
        for _ in range(200):
            if not spares(srv.pid):
                break
            time.sleep(0.05)
        return rest_post(port, "/v1/check", {"spec": SPEC, "timeout_s": 1, "trials": 1})
    renew("hang")
    r = rest_post(port, "/v1/check", {"spec": SPEC, "timeout_s": 1, "trials": 1})
    check("a kernel that hangs on a spare is stopped by the watchdog",
          "timeout" in r.get("safeguards_fired", []) and phases(r) == (1, 1) and
          "did not finish within 1000 ms" in r.get("summary", ""),
          (r.get("summary"), r.get("phases")))
    r = renew("")
    check("and the next job passes", r.get("passed"), r.get("summary"))
    return list(wait_spares(srv.pid, {((r.get("device") or {}).get("index", 0)): 2}))


def spare_alone(device, job=None, go=True):
    """The harness as a spare by itself: --wait-fd, --device; job (a dict)
    written as job.json beside the spec before the go (none: the go pipe
    is closed without one). Returns (exit status, report text, stderr)."""
    d = f"{T}/alone-{device}-{bool(job)}"
    os.makedirs(d)
    json.dump(SPEC, open(f"{d}/spec.json", "w"))
    rr, rw = os.pipe()
    gr, gw = os.pipe()
    p = subprocess.Popen([f"{T}/harness.sh", "--job", d, "--report-fd", str(rw), "--wait-fd",
                          str(gr), "--device", str(device)], pass_fds=(rw, gr),
                         stderr=subprocess.PIPE)
    os.close(rw)
    os.close(gr)
    if job is not None:
        json.dump(job, open(f"{d}/job.json", "w"))
        if go:
            os.write(gw, b"go 30\n")
    try:
        os.close(gw)
        rep = b""
        while True:
            b = os.read(rr, 65536)
            if not b:
                break
            rep += b
        err = p.stderr.read().decode(errors="replace")
        return p.wait(timeout=30), rep.decode(errors="replace"), err
    finally:
        os.close(rr)


def harness_protocol():
    rc, rep, err = spare_alone(5)
    check("a spare whose context cannot be made exits 3 before any report line",
          rc == 3 and rep == "" and "no CUDA context on device 5" in err, (rc, rep, err))
    rc, rep, err = spare_alone(0)
    check("a spare whose go pipe closes exits quietly", rc == 0 and rep == "" and err == "",
          (rc, rep, err))
    rc, rep, err = spare_alone(0, {"mode": "check", "device": 1, "rows": []})
    lines = rep.splitlines()
    check("a spare takes its job with its first line and refuses another GPU's",
          rc == 0 and lines and lines[0] == '{"spare":"taken"}' and
          "differs from the spare's --device" in lines[-1], (rc, rep, err))


def main():
    harness_protocol()
    # A stopped daemon ends its spares and removes their directories.
    data = f"{T}/term"
    os.makedirs(data)
    log = open(f"{data}/serve.log", "wb")
    srv = serve(data, log)
    port = wait_port_file(f"{data}/port", srv)
    r = rest_post(port, "/v1/check", {"spec": SPEC})
    sp = wait_spares(srv.pid, {0: 2})
    srv.terminate()
    srv.wait(timeout=60)
    log.close()
    check("SIGTERM: the spares end with the daemon and leave no directory",
          r.get("passed") and len(sp) == 2 and not alive(sp) and
          not glob.glob(f"{data}/jobs/spare-*"), (sp, alive(sp), glob.glob(f"{data}/jobs/*")))

    data = f"{T}/data"
    os.makedirs(data)
    log = open(f"{data}/serve.log", "wb")
    srv = serve(data, log)
    pids = []
    try:
        port = wait_port_file(f"{data}/port", srv)
        pids = scenarios(srv, port, f"{data}/serve.log")
    finally:
        # SIGKILL: nothing of the daemon's runs on (PR_SET_PDEATHSIG).
        srv.kill()
        srv.wait(timeout=60)
        log.close()
    for _ in range(100):
        if not alive(pids):
            break
        time.sleep(0.05)
    check("SIGKILL of the daemon leaves no spare harness", pids and not alive(pids),
          (pids, alive(pids)))
    sys.exit(CHECKS.summary("proto_gpu_spare"))


main()
