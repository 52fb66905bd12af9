"""Hostile compiles against the real daemon (issue 19's sandbox findings):
a 1 GiB initialized __device__ array fails at the compile memory limit with
a compile error that names it while the daemon keeps serving; one client's
compile bombs wait behind its own work, so another client's compile is
answered while all of them still wait (two HTTP sessions, two compile
slots, one per client); a SIGKILLed daemon leaves no jail process behind;
on a full disk (a tiny tmpfs in a user namespace) a compile answers an
error, never a success without run_id, and the daemon logs it; a 0-byte or
corrupt state.db stops the daemon with the reason. Run by
tests/proto/proto_hostile_sandbox.sh."""
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

from proto_common import Checks, HttpServer, StdioSession, tool_object

BIN = os.path.abspath(sys.argv[1])
CHECKS = Checks()
check = CHECKS.check

GOOD = ('extern "C" __global__ void axpy(float *y, const float *x, float a, int n) {\n'
        '  int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
        '  if (i < n) y[i] = a * x[i] + y[i];\n}\n')
HUGE = ('__device__ char big[1u << 30] = {1};\n'
        '__global__ void k(char *o) { o[0] = big[threadIdx.x]; }\n')
# Exponential template instantiation: runs until the compile time limit.
FOREVER = ('template <int N, unsigned long long M> struct A {\n'
           '  static constexpr unsigned long long v = A<N - 1, 2 * M>::v + A<N - 1, 2 * M + 1>::v;\n};\n'
           'template <unsigned long long M> struct A<0, M> { static constexpr unsigned long long v = M; };\n'
           '__global__ void k(unsigned long long *o) { *o = A<40, 0>::v; }\n')


def env_with(**kw):
    e = dict(os.environ)
    e.update({k: str(v) for k, v in kw.items()})
    return e


def sc_of(reply):
    """The tool's answer object (the error object on isError) and isError."""
    return tool_object(reply), ((reply or {}).get("result") or {}).get("isError", False)


def descendants(pid):
    """Pids of every live process below pid (by /proc's parent links)."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    st = f.read()
                ppid = int(st[st.rindex(")") + 2:].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def alive(pid):
    """True while pid runs; a zombie is dead (only its entry is left for
    whoever reaps it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
        return st[st.rindex(")") + 2] != "Z"
    except OSError:
        return False


def test_memory_bomb(tmp):
    s = StdioSession(BIN, os.path.join(tmp, "bomb"), "hostile",
                     env=env_with(KFORGE_COMPILE_MEM_MB=512, KFORGE_NO_GPU=1))
    try:
        t0 = time.time()
        sc, is_error = sc_of(s.call(1, "compile_kernel", {"source": HUGE}))
        took = time.time() - t0
        check("a 1 GiB __device__ array is a compile error", is_error and sc.get("ok") is False,
              sc.get("summary"))
        check("the error names the memory limit and its knob",
              "512 MiB" in sc.get("summary", "") and
              "KFORGE_COMPILE_MEM_MB" in sc.get("summary", "") and
              sc.get("memory_limited") is True, sc.get("summary"))
        check("the memory-limited compile is a run", "run_id" in sc, list(sc))
        print(f"  memory bomb answered in {took:.1f} s")
        check("the daemon keeps serving after the bomb",
              (s.request(2, "ping", {}) or {}).get("result") == {}, "no ping answer")
        sc, is_error = sc_of(s.call(3, "compile_kernel", {"source": GOOD}))
        check("a normal compile works under the same limit", not is_error and sc.get("ok"),
              sc.get("summary"))
    finally:
        s.close()


class Http(HttpServer):
    """`kforge serve --http` on a free port, with an MCP client's calls."""

    def __init__(self, tmp, env):
        super().__init__(BIN, tmp, env=env)

    def post(self, body, sid=None, timeout=120):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = {"Accept": "application/json, text/event-stream",
             "Content-Type": "application/json"}
        if sid:
            h["Mcp-Session-Id"] = sid
        c.request("POST", "/mcp", json.dumps(body), h)
        r = c.getresponse()
        data = r.read()
        sid = r.getheader("Mcp-Session-Id")
        c.close()
        return r.status, sid, data

    def session(self, name):
        st, sid, _ = self.post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                           "clientInfo": {"name": name, "version": "1"}}})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
        return sid

    def inflight(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("GET", "/v1/health")
        doc = json.loads(c.getresponse().read())
        c.close()
        return doc.get("inflight", -1)


def test_fairness_and_orphans(tmp):
    # Two slots, one per client: A's three bombs run one at a time, and B
    # finds the second slot free. Without per-client queues A would hold
    # both slots and B would wait behind its bombs.
    env = env_with(KFORGE_COMPILE_SLOTS=2, KFORGE_COMPILE_CLIENT_SLOTS=1,
                   KFORGE_COMPILE_TIMEOUT_MS=60000, KFORGE_NO_GPU=1)
    srv = Http(tmp, env)
    done = []
    lock = threading.Lock()
    try:
        a, b = srv.session("bomber"), srv.session("victim")
        check("two sessions", a and b and a != b, (a, b))

        def bomb(i):
            src = FOREVER + f"// bomb {i}\n"
            try:
                srv.post({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call",
                          "params": {"name": "compile_kernel", "arguments": {"source": src}}},
                         a)
            except (OSError, http.client.HTTPException):
                return  # the daemon was killed below
            with lock:
                done.append(f"A{i}")

        threads = [threading.Thread(target=bomb, args=(i,), daemon=True) for i in range(3)]
        for t in threads:
            t.start()
        for _ in range(500):
            if srv.inflight() >= 3:
                break
            time.sleep(0.02)
        check("the three bombs are in flight", srv.inflight() >= 3, srv.inflight())
        try:
            st, _, data = srv.post({"jsonrpc": "2.0", "id": 20, "method": "tools/call",
                                    "params": {"name": "compile_kernel",
                                               "arguments": {"source": GOOD}}}, b, timeout=50)
        except (OSError, http.client.HTTPException) as e:
            st, data = 0, str(e).encode()
        with lock:
            done.append("B")
            order = list(done)
        body = json.loads(data) if st == 200 else {}
        sc, is_error = sc_of(body)
        check("the other client's compile succeeds", st == 200 and not is_error and sc.get("ok"),
              (st, data[:300]))
        check("it is answered while every bomb still waits or runs", order == ["B"], order)

        # SIGKILL mid-job: the jail processes under the daemon die with it.
        kids = descendants(srv.p.pid)
        check("a bomb is compiling in the jail", len(kids) > 0, kids)
        srv.p.send_signal(signal.SIGKILL)
        srv.p.wait()
        left = kids
        for _ in range(300):
            left = [k for k in kids if alive(k)]
            if not left:
                break
            time.sleep(0.01)
        check("no jail process outlives a SIGKILLed daemon", not left,
              [open(f"/proc/{k}/cmdline").read()[:80] for k in left if alive(k)])
    finally:
        if srv.p.poll() is None:
            srv.p.kill()
            srv.p.wait()
        srv.log.close()


FILL = r'''set -e
mount -t tmpfs -o size=2m tmpfs "$1"
(while [ ! -e "$2/fill-now" ]; do sleep 0.05; done
 dd if=/dev/zero of="$1/filler" bs=16k 2>/dev/null || true
 touch "$2/filled") &
exec "$3" serve --data-dir "$1/data"
'''


def test_full_disk(tmp):
    probe = subprocess.run(["unshare", "-Urm", "true"], capture_output=True)
    if probe.returncode != 0:
        print("  skip full disk: no user namespaces here (unshare -Urm failed)")
        return
    mnt = os.path.join(tmp, "mnt")
    os.mkdir(mnt)
    script = os.path.join(tmp, "fill.sh")
    with open(script, "w") as f:
        f.write(FILL)
    log = os.path.join(tmp, "full.log")
    # The daemon in its own mount namespace with a 2 MiB data dir.
    with open(log, "wb") as lf:
        s = StdioSession(BIN, None, "full", env=env_with(KFORGE_NO_GPU=1), stderr=lf,
                         cmd=["unshare", "-Urm", "sh", script, mnt, tmp, BIN])
    try:
        sc, is_error = sc_of(s.call(1, "compile_kernel", {"source": GOOD}))
        check("a compile works before the disk fills", not is_error and "run_id" in sc,
              sc.get("summary"))
        open(os.path.join(tmp, "fill-now"), "w").close()
        for _ in range(1000):
            if os.path.exists(os.path.join(tmp, "filled")):
                break
            time.sleep(0.02)
        check("the disk is full", os.path.exists(os.path.join(tmp, "filled")), "")
        # A new source: its files cannot be written.
        sc, is_error = sc_of(s.call(2, "compile_kernel", {"source": GOOD + "// new\n"}))
        check("a compile on a full disk is an error", is_error, sc)
        check("the error says the disk is full",
              "No space left" in sc.get("summary", "") or "full" in sc.get("summary", ""),
              sc.get("summary"))
        # The cached source: answered from the cache, then either recorded
        # (the WAL had room) or an error saying it was not; never a
        # success without run_id.
        sc, is_error = sc_of(s.call(3, "compile_kernel", {"source": GOOD}))
        check("a cached compile on a full disk is recorded or an error",
              "run_id" in sc or (is_error and "not be recorded" in sc.get("summary", "")),
              sc.get("summary"))
        check("the daemon keeps serving on a full disk",
              (s.request(4, "ping", {}) or {}).get("result") == {}, "no ping answer")
    finally:
        s.close()
    text = open(log).read()
    check("the daemon logged the full disk", "WARN" in text and "No space left" in text,
          text[-600:])


def test_bad_state_db(tmp):
    for name, content in (("empty", b""), ("garbage", bytes(range(256)) * 16)):
        data = os.path.join(tmp, name)
        os.makedirs(data)
        with open(os.path.join(data, "state.db"), "wb") as f:
            f.write(content)
        p = subprocess.run([BIN, "serve", "--data-dir", data], input=b"",
                           capture_output=True, timeout=60, env=env_with(KFORGE_NO_GPU=1))
        err = p.stderr.decode()
        want = "is 0 bytes" if name == "empty" else "is corrupt"
        check(f"a {name} state.db stops the daemon", p.returncode != 0, p.returncode)
        check(f"a {name} state.db is named with the reason", want in err and "state.db" in err,
              err[-400:])
        check(f"a {name} state.db is left as it was",
              open(os.path.join(data, "state.db"), "rb").read() == content, "changed")


def main():
    tmp = tempfile.mkdtemp(prefix="kf-proto-hostile-")
    try:
        only = sys.argv[2:]  # test names to run; none = all
        for t in (test_memory_bomb, test_fairness_and_orphans, test_full_disk,
                  test_bad_state_db):
            if only and t.__name__ not in only:
                continue
            sub = os.path.join(tmp, t.__name__)
            os.mkdir(sub)
            t(sub)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return CHECKS.summary("proto_hostile_sandbox")


if __name__ == "__main__":
    sys.exit(main())
