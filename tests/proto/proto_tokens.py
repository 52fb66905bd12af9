#!/usr/bin/env python3
"""Per-client caps count per bearer token (kforge serve --token-file), not
per address: many agents behind one proxy or login node connect from one
address, so each token is one client. Against the real binary, all from
127.0.0.1: a token at its session cap gets 429 with Retry-After and a
JSON-RPC error naming the token and the option while another token gets a
session; a session answers only its own token; requests in flight are
capped per token (MCP, REST and dataset streams); GPU jobs are admitted per token
(--max-jobs-per-token, --max-queued-jobs-per-token) above the executor:
a token's extra job waits in its own queue and says so, one past its
queue is refused at once, and another token's call is served meanwhile;
a token file that is readable by others, repeats a secret or holds a
short one is refused at start; secrets never reach the log. Exits 1 if any
check failed. Environment: KFORGE_BIN, KFORGE_KB (optional)."""
import json
import os
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

from proto_common import Checks, HttpServer, initialize_msg

BIN = os.environ.get("KFORGE_BIN", "build/kforge")
KB = os.environ.get("KFORGE_KB")
SRC = os.environ.get("KFORGE_SRC", ".")
ACCEPT = "application/json, text/event-stream"
ALICE = "alice-secret-0123456789abcdef"
BOB = "bob-secret-fedcba9876543210xyz"
C = Checks()
# Compiles until the compile time limit: a check of it holds its GPU job
# admission that long.
FOREVER = ('template <int N, unsigned long long M> struct A {\n'
           '  static constexpr unsigned long long v = A<N - 1, 2 * M>::v + A<N - 1, 2 * M + 1>::v;\n};\n'
           'template <unsigned long long M> struct A<0, M> { static constexpr unsigned long long v = M; };\n'
           'extern "C" __global__ void axpb(float *y, const float *x, const float *w, float s, int n)'
           ' { if (threadIdx.x == 0) y[0] = A<40, 0>::v; }\n')


def token_file(tmp, lines, mode=0o600, name="tokens"):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(lines)
    os.chmod(path, mode)
    return path


def Server(tmp, *args, env=None):
    """kforge serve with the conformance fixtures, logging at info
    (HttpServer)."""
    return HttpServer(BIN, tmp, "--conformance-fixtures", *args, kb=KB, log_level="info",
                      env=env)


def send(port, method, path, body=None, headers=None):
    """A request on a raw socket; returns the socket (the answer unread)."""
    data = json.dumps(body).encode() if body is not None else b""
    h = {"Host": "127.0.0.1", "Accept": ACCEPT, "Content-Type": "application/json",
         "Content-Length": str(len(data))}
    h.update(headers or {})
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items())
    s = socket.create_connection(("127.0.0.1", port), timeout=120)
    s.sendall(head.encode() + b"Connection: close\r\n\r\n" + data)
    return s


def answer(s):
    """Reads the whole answer of send's socket: (status, headers, body)."""
    buf = b""
    while True:
        try:
            k = s.recv(65536)
        except OSError:
            break
        if not k:
            break
        buf += k
    s.close()
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return None, {}, buf
    hd = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hd[k.strip().lower()] = v.strip()
    if hd.get("transfer-encoding") == "chunked":
        out, rest = b"", body
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            n = int(size or b"0", 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        body = out
    return status, hd, body


def call(port, method, path, body=None, headers=None):
    return answer(send(port, method, path, body, headers))


def auth(tok, sid=None):
    h = {"Authorization": f"Bearer {tok}"}
    if sid:
        h["Mcp-Session-Id"] = sid
    return h


def session(port, tok, caps=None):
    msg = initialize_msg("tokens", 1)
    if caps:
        msg["params"]["capabilities"] = caps
    st, hd, body = call(port, "POST", "/mcp", msg, auth(tok))
    sid = hd.get("mcp-session-id")
    if st == 200 and sid:
        call(port, "POST", "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"},
             auth(tok, sid))
    return st, sid, body


def message(body):
    """The error message of a JSON-RPC or REST error body, or the last SSE
    event's data."""
    text = body.decode(errors="replace")
    for ln in reversed(text.splitlines()):
        if ln.startswith("data:") and ln[5:].strip():
            text = ln[5:].strip()
            break
    try:
        j = json.loads(text)
    except ValueError:
        return text
    e = j.get("error") if isinstance(j, dict) else None
    if isinstance(e, dict):
        return e.get("message", "")
    return json.dumps(j)


def get_stream(port, tok, sid):
    s = send(port, "GET", "/mcp", None, dict(auth(tok, sid), Accept="text/event-stream"))
    s.recv(4096)  # the header and the priming event
    return s


def test_sessions_and_inflight(tmp):
    tf = token_file(tmp, f"# team tokens\nalice {ALICE}\n\nbob   {BOB}\n")
    s = Server(tmp, "--token-file", tf, "--max-sessions-per-client", "2",
               "--max-inflight-per-client", "1")
    held = []
    try:
        st, _, body = call(s.port, "POST", "/mcp", initialize_msg("x", 1))
        C.check("no token: 401", st == 401, (st, body))
        st, _, body = call(s.port, "POST", "/mcp", initialize_msg("x", 1), auth(ALICE[:-1]))
        C.check("a token that is a prefix of one: 401", st == 401, (st, body))
        sids = []
        for _ in range(2):
            st, sid, body = session(s.port, ALICE)
            sids.append(sid)
            held.append(get_stream(s.port, ALICE, sid))
        st, hd, body = call(s.port, "POST", "/mcp", initialize_msg("third", 1), auth(ALICE))
        m = message(body)
        C.check("alice, her 2 sessions busy, gets 429 with Retry-After",
                st == 429 and hd.get("retry-after"), (st, hd, body))
        C.check("the 429 is a JSON-RPC error naming the token, the cap and its option",
                "token 'alice'" in m and "--max-sessions-per-client" in m and
                b'"jsonrpc"' in body, m)
        st, bsid, body = session(s.port, BOB)
        C.check("bob, from the same address, still gets a session", st == 200 and bsid,
                (st, body))
        ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
        st, _, body = call(s.port, "POST", "/mcp", ping, auth(BOB, sids[0]))
        C.check("bob cannot use alice's session id (404)", st == 404, (st, body))
        st, _, body = call(s.port, "POST", "/mcp", ping, auth(ALICE, sids[0]))
        C.check("alice can", st == 200, (st, body))
        # In flight: a sampling call waits for alice's answer, which never comes.
        for k in held:
            k.close()
        held.clear()
        call(s.port, "DELETE", "/mcp", None, auth(ALICE, sids[0]))
        st, asid, _ = session(s.port, ALICE, {"sampling": {}})
        waiting = send(s.port, "POST", "/mcp",
                       {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                        "params": {"name": "test_sampling", "arguments": {"prompt": "hi"}}},
                       auth(ALICE, asid))
        waiting.recv(4096)  # the sampling request arrived: the call is in flight
        held.append(waiting)
        st, hd, body = call(s.port, "POST", "/mcp", ping, auth(ALICE, asid))
        m = message(body)
        C.check("alice's second request in flight: 429 naming the cap's option",
                st == 429 and hd.get("retry-after") and "token 'alice'" in m and
                "--max-inflight-per-client" in m, (st, m))
        st, hd, body = call(s.port, "GET", "/v1/runs?limit=1", None, auth(ALICE))
        C.check("REST counts under the same token (429)",
                st == 429 and "--max-inflight-per-client" in message(body), (st, body))
        st, _, body = call(s.port, "GET", "/v1/dataset.jsonl", None, auth(ALICE))
        C.check("and a dataset stream (429)",
                st == 429 and "--max-inflight-per-client" in message(body), (st, body))
        st, _, body = call(s.port, "GET", "/v1/dataset.jsonl", None, auth(BOB))
        C.check("bob's dataset stream is served", st == 200, (st, body[:200]))
        st, _, body = call(s.port, "POST", "/mcp", ping, auth(BOB, bsid))
        C.check("bob's request is served meanwhile", st == 200, (st, body))
        st, _, body = call(s.port, "GET", "/v1/runs?limit=1", None, auth(BOB))
        C.check("and bob's REST call", st == 200, (st, body))
        log = s.log_text()
        C.check("the log names the token", "token 'alice'" in log, log[-500:])
        C.check("no secret in the log", ALICE not in log and BOB not in log, "secret logged")
    finally:
        for k in held:
            k.close()
        s.stop()


def spec_with(source):
    sys.path.insert(0, os.path.join(SRC, "tests", "gpu"))
    import run
    spec = run.load_spec(os.path.join(SRC, "tests", "gpu", "pass", "axpb_f32.json"))[0]
    spec["source"] = source
    return spec


def test_gpu_jobs(tmp):
    # The mock libcuda (tests/gpu/mock_cuda.c) is the GPU: a check gets as
    # far as its compile, which FOREVER keeps busy until the time limit.
    mock = os.path.join(tmp, "mock")
    os.makedirs(mock)
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    subprocess.run(["cc", "-shared", "-fPIC", f"-I{cuda}/include", "-o",
                    os.path.join(mock, "libcuda.so.1"),
                    os.path.join(SRC, "tests", "gpu", "mock_cuda.c")], check=True)
    tf = token_file(tmp, f"alice {ALICE}\nbob {BOB}\n", name="tokens2")
    s = Server(tmp, "--token-file", tf, "--sandbox=none", "--max-jobs-per-token", "1",
               "--log-level", "debug",
               "--max-queued-jobs-per-token", "1",
               env={"KFORGE_COMPILE_TIMEOUT_MS": "8000", "LD_LIBRARY_PATH": mock})
    try:
        slow = {"spec": spec_with(FOREVER), "trials": 1}
        first = send(s.port, "POST", "/v1/check", slow, auth(ALICE))
        for _ in range(600):  # its admission is logged (debug)
            if "token 'alice': a GPU job admitted" in s.log_text():
                break
            time.sleep(0.05)
        _, sid, _ = session(s.port, ALICE)
        call_b = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                  "params": {"name": "check_kernel", "arguments": slow,
                             "_meta": {"progressToken": "b"}}}
        second = send(s.port, "POST", "/mcp", call_b, auth(ALICE, sid))
        # The second waits behind the first: its progress says so.
        got = b""
        while b"max-jobs-per-token" not in got:
            k = second.recv(4096)
            if not k:
                break
            got += k
        C.check("alice's second GPU job (another session, same token) waits in her queue, "
                "saying so", b"queued: token 'alice' has 1 GPU jobs running" in got, got[-400:])
        time.sleep(1)  # the progress is sent just before it joins the queue
        st, _, body = call(s.port, "POST", "/v1/check", slow, auth(ALICE))
        m = message(body)
        C.check("her third, past her queue, is refused at once naming both options",
                st == 503 and "token 'alice'" in m and "--max-queued-jobs-per-token" in m and
                "--max-jobs-per-token" in m, (st, m))
        bad = {"spec": dict(spec_with("x"), tensors={}), "trials": 1}
        st, _, body = call(s.port, "POST", "/v1/check", bad, auth(BOB))
        C.check("bob's check is admitted and answered meanwhile (his own spec error)",
                st == 400 and "busy" not in message(body), (st, message(body)))
        done = []
        t = threading.Thread(target=lambda: done.append(answer(first)))
        t.start()
        C.check("while alice's first job still runs", not done, "it had finished")
        t.join(120)
        st, _, body = done[0] if done else (None, {}, b"")
        C.check("alice's first job ends at its compile limit",
                st == 504 and b"compile timed out" in body, (st, body[-300:]))
        rest = b""
        while True:
            k = second.recv(65536)
            if not k:
                break
            rest += k
        second.close()
        C.check("then her second ran (to its compile limit, not busy)",
                b"compile timed out" in rest and b"busy" not in rest, (got + rest)[-400:])
    finally:
        s.stop()


def test_refused_token_files(tmp):
    cases = [
        (f"alice {ALICE}\n", 0o644, "chmod 600"),
        (f"alice {ALICE}\nbob {ALICE}\n", 0o600, "same secret"),
        ("alice short\n", 0o600, "has 5 bytes"),
        (f"alice {ALICE}\nalice {BOB}\n", 0o600, "used twice"),
        (f"al ice {ALICE}\n", 0o600, "line 1: expected 'NAME SECRET'"),
        (f"al/ice {ALICE}\n", 0o600, "token name 'al/ice'"),
        ("# nothing\n", 0o600, "no tokens"),
    ]
    for i, (text, mode, want) in enumerate(cases):
        tf = token_file(tmp, text, mode, name=f"bad{i}")
        r = subprocess.run([BIN, "serve", "--http", "127.0.0.1:0", "--token-file", tf,
                            "--data-dir", os.path.join(tmp, "data")],
                           capture_output=True, text=True, timeout=60)
        C.check(f"a token file with {want!r} is refused at start naming it",
                r.returncode == 2 and want in r.stderr and ALICE not in r.stderr and
                BOB not in r.stderr, (r.returncode, r.stderr[-300:]))
    r = subprocess.run([BIN, "serve", "--http", "127.0.0.1:0", "--max-jobs-per-token", "0"],
                       capture_output=True, text=True, timeout=60)
    C.check("--max-jobs-per-token 0 is a usage error",
            r.returncode == 2 and "--max-jobs-per-token needs a count" in r.stderr, r.stderr)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_refused_token_files(tmp)
        test_sessions_and_inflight(tmp)
        if os.path.exists("/usr/local/cuda/bin/nvcc") or os.environ.get("CUDA_HOME"):
            test_gpu_jobs(tmp)
        else:
            print("SKIP proto_tokens: GPU job admission needs nvcc")
    return C.summary("proto_tokens")


if __name__ == "__main__":
    sys.exit(main())
