#!/usr/bin/env python3
"""Hostile input against the real `kforge serve --http`: each finding of a
red-team pass on the HTTP transport, replayed so it cannot come back.
DNS rebinding through Host/Origin names that only start like loopback, a
text/plain POST (a browser sends it without a preflight), half-open and
byte-a-second connections against the per-address limit and the request
deadline, stalled uploads against the total upload memory, an initialize
flood against other clients' sessions, a subscribe flood, 64 concurrent
calls answered "busy" below the documented limit, and client hang-ups
logged as warnings. Linux routes all of 127.0.0.0/8 to loopback, so
"another client" connects from 127.0.0.2. Exits 1 if any check failed.
Environment: KFORGE_BIN, KFORGE_KB (optional)."""
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from proto_common import Checks, HttpServer, initialize_msg

BIN = os.environ.get("KFORGE_BIN", "build/kforge")
KB = os.environ.get("KFORGE_KB")
ACCEPT = "application/json, text/event-stream"
OTHER = "127.0.0.2"  # a second client address on loopback
C = Checks()


def Server(tmp, *args, log_level="warn"):
    """kforge serve with the conformance fixtures (HttpServer)."""
    return HttpServer(BIN, tmp, "--conformance-fixtures", *args, kb=KB, log_level=log_level)


def req(port, method, path, body=None, headers=None, src=None, timeout=30):
    """One request on a fresh connection (from address src); returns
    (status, headers, body), or (None, {}, error text) when the server
    closed or refused the connection."""
    h = {"Accept": ACCEPT, "Content-Type": "application/json"}
    h.update(headers or {})
    h = {k: v for k, v in h.items() if v is not None}
    if isinstance(body, (dict, list)):
        body = json.dumps(body)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                   source_address=(src, 0) if src else None)
    try:
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    except (OSError, http.client.HTTPException) as e:
        return None, {}, repr(e)
    finally:
        c.close()


def rpc(port, msg, sid=None, headers=None, src=None):
    h = dict(headers or {})
    if sid:
        h["Mcp-Session-Id"] = sid
    return req(port, "POST", "/mcp", msg, h, src)


def jbody(data):
    try:
        return json.loads(data)
    except (ValueError, TypeError):
        return None


def open_session(port, src=None, name="hostile"):
    st, hd, data = rpc(port, initialize_msg(name, 1), src=src)
    sid = hd.get("mcp-session-id")
    if st == 200 and sid:
        rpc(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid, src=src)
    return st, sid, data


def error_text(data):
    j = jbody(data) or {}
    e = j.get("error")
    return (e.get("message") if isinstance(e, dict) else "") or j.get("summary", "")


def closed_by_server(sock, limit_s):
    """Reads until the server closes sock (True) or limit_s pass (False)."""
    sock.settimeout(1)
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        try:
            if sock.recv(4096) == b"":
                return True
        except socket.timeout:
            continue
        except OSError:
            return True
    return False


def half_open(port, src="127.0.0.1"):
    """A connection that sent part of a request header and stops."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(src, 0))
    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    return s


# --- the findings ------------------------------------------------------------------


def test_rebinding(port):
    for host in ("127.attacker.example", "127.0.0.1.attacker.example",
                 "localhost.attacker.example:7070"):
        st, hd, data = rpc(port, initialize_msg("rebind"), headers={"Host": host})
        C.check(f"Host {host} gets 403 on /mcp", st == 403, (st, data))
        C.check(f"the 403 for Host {host} names it and the fix",
                host in error_text(data) and "--allow-host" in error_text(data), data)
        C.check(f"the 403 for Host {host} carries no CORS header",
                "access-control-allow-origin" not in hd, hd)
        st, _, data = req(port, "GET", "/v1/runs", headers={"Host": host})
        C.check(f"Host {host} gets 403 on the run history", st == 403, (st, data))
        st, _, data = req(port, "POST", "/v1/compile", {"source": "x"}, {"Host": host})
        C.check(f"Host {host} gets 403 on compile", st == 403, (st, data))
    origin = "http://127.attacker.example"
    st, hd, data = rpc(port, initialize_msg("rebind"), headers={"Origin": origin})
    C.check("Origin http://127.attacker.example gets 403 without CORS headers",
            st == 403 and "access-control-allow-origin" not in hd, (st, hd, data))
    C.check("the 403 names the Origin", origin in error_text(data), data)
    st, _, data = req(port, "GET", "/v1/runs", headers={"Origin": origin + ":7070"})
    C.check("Origin http://127.attacker.example:7070 gets 403 on REST", st == 403, (st, data))
    for host in ("localhost", f"127.0.0.1:{port}", f"[::1]:{port}"):
        st, _, data = req(port, "GET", "/v1/health", headers={"Host": host})
        C.check(f"Host {host} is still served", st == 200, (st, data))
    st, _, data = req(port, "GET", "/v1/health",
                      headers={"Origin": f"http://localhost:{port}"})
    C.check("a loopback Origin is still served", st == 200, (st, data))


def test_allow_host(tmp):
    s = Server(tmp, "--allow-host", "gpu-box.lan")
    try:
        st, _, data = req(s.port, "GET", "/v1/health", headers={"Host": "gpu-box.lan:7070"})
        C.check("--allow-host admits that name", st == 200, (st, data))
        st, _, data = req(s.port, "GET", "/v1/health",
                          headers={"Host": "localhost", "Origin": "http://gpu-box.lan:7070"})
        C.check("--allow-host admits pages on that name", st == 200, (st, data))
        st, _, data = req(s.port, "GET", "/v1/health", headers={"Host": "gpu-box.lan.evil"})
        C.check("--allow-host is not a prefix", st == 403, (st, data))
    finally:
        s.stop()


def test_text_plain(port):
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                  None):
        st, _, data = req(port, "POST", "/v1/compile",
                          '{"source":"__global__ void k(){}","arch":"sm_90"}',
                          {"Content-Type": ctype})
        C.check(f"REST POST with Content-Type {ctype} gets 415", st == 415, (st, data))
        C.check(f"the 415 for {ctype} says what to send",
                "application/json" in error_text(data), data)
        st, _, data = rpc(port, initialize_msg("plain"), headers={"Content-Type": ctype})
        C.check(f"MCP POST with Content-Type {ctype} gets 415", st == 415, (st, data))
    st, _, data = req(port, "POST", "/v1/compile", {"source": 1},
                      {"Content-Type": "application/json; charset=utf-8"})
    C.check("application/json with a charset is still taken", st == 400, (st, data))


def test_slowloris(tmp):
    s = Server(tmp, "--max-conns-per-ip", "8", "--request-timeout", "3", log_level="info")
    socks = []
    try:
        socks = [half_open(s.port) for _ in range(8)]
        time.sleep(0.3)
        st, _, data = req(s.port, "GET", "/v1/health", timeout=5)
        C.check("past the per-address limit a 9th connection is refused", st is None,
                (st, data))
        st, _, data = req(s.port, "GET", "/v1/health", src=OTHER)
        C.check("a client from another address is served meanwhile", st == 200, (st, data))
        C.check("half-open connections are closed after the request deadline",
                all(closed_by_server(k, 30) for k in socks), "a connection stayed open")
        # the server releases a closed connection's per-address slot after the
        # client sees the close, so the next request may be refused briefly
        deadline = time.time() + 10
        while True:
            st, _, data = req(s.port, "GET", "/v1/health")
            if st == 200 or time.time() > deadline:
                break
            time.sleep(0.2)
        C.check("once they are gone the address is served again", st == 200, (st, data))
        # One byte a second keeps an idle timer alive forever; the deadline
        # counts from the connection's start.
        d = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        d.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Drip: ")
        closed = False
        for _ in range(40):
            try:
                d.sendall(b"a")
            except OSError:
                closed = True
                break
            if closed_by_server(d, 1):
                closed = True
                break
        d.close()
        C.check("a connection dripping a byte a second is closed at the deadline", closed,
                "still open after 40 s")
        C.check("the cut connections are logged",
                "did not arrive within 3 s" in s.log_text(), s.log_text()[-800:])
    finally:
        for k in socks:
            k.close()
        s.stop()


def stalled_upload(port, size):
    """A POST /mcp that declares size bytes, sends 100 and stalls."""
    k = socket.create_connection(("127.0.0.1", port), timeout=10)
    k.sendall(("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               f"Accept: {ACCEPT}\r\nContent-Length: {size}\r\n\r\n").encode() + b" " * 100)
    return k


def test_stalled_uploads(tmp):
    s = Server(tmp, "--max-message-bytes", "512K", "--max-upload-total", "1M",
               "--request-timeout", "4")
    socks = []
    try:
        socks = [stalled_upload(s.port, 512 * 1024) for _ in range(2)]
        time.sleep(0.3)
        st, hd, data = rpc(s.port, initialize_msg("upload"))
        C.check("while stalled uploads hold the upload memory a new body gets 503",
                st == 503 and "retry-after" in hd, (st, data))
        C.check("the 503 names the cap and its option",
                "--max-upload-total" in error_text(data), data)
        k = stalled_upload(s.port, 600 * 1024)
        head = k.recv(4096)
        k.close()
        C.check("a body over --max-message-bytes still gets 413 before it is read",
                head.startswith(b"HTTP/1.1 413"), head[:200])
        C.check("the stalled uploads are cut at the deadline",
                all(closed_by_server(k, 30) for k in socks), "an upload stayed open")
        st, _, data = rpc(s.port, initialize_msg("upload"))
        C.check("their memory is returned: a new body is served", st == 200, (st, data))
    finally:
        for k in socks:
            k.close()
        s.stop()


def test_initialize_flood(tmp):
    s = Server(tmp, log_level="info")
    try:
        st, keep, _ = open_session(s.port, name="established")
        C.check("an established session opens", st == 200 and keep, st)
        rpc(s.port, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, keep)
        codes = []
        lock = threading.Lock()

        def flood(n):
            for _ in range(n):
                st, _, _ = rpc(s.port, initialize_msg("flood"))
                with lock:
                    codes.append(st)

        ts = [threading.Thread(target=flood, args=(129,)) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        C.check("1,032 initialize calls from one address are all answered",
                len(codes) == 1032 and all(c == 200 for c in codes),
                {c: codes.count(c) for c in set(codes)})
        st, sid, data = open_session(s.port, src=OTHER, name="fresh")
        C.check("after the flood a client from another address gets a session",
                st == 200 and sid, (st, data))
        st, sid, data = open_session(s.port, name="fresh-local")
        C.check("and so does a new client from the flooding address", st == 200 and sid,
                (st, data))
        st, _, data = rpc(s.port, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, keep)
        C.check("the established session survives the flood", st == 200, (st, data))
        st, _, data = req(s.port, "GET", "/v1/health")
        n = (jbody(data) or {}).get("sessions", 10**6)
        C.check("the flooding address holds at most its 64 sessions", n <= 64 + 2, n)
    finally:
        s.stop()


def get_stream(port, sid):
    k = socket.create_connection(("127.0.0.1", port), timeout=10)
    k.sendall((f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
               f"Mcp-Session-Id: {sid}\r\n\r\n").encode())
    k.recv(4096)  # the response header and the priming event
    return k


def test_busy_sessions(tmp):
    s = Server(tmp, "--max-sessions-per-client", "4")
    streams = []
    try:
        for _ in range(4):
            st, sid, _ = open_session(s.port)
            streams.append(get_stream(s.port, sid))
        st, hd, data = rpc(s.port, initialize_msg("fifth"))
        C.check("a client whose sessions all hold a GET stream gets 429 for a fifth",
                st == 429 and "retry-after" in hd, (st, data))
        C.check("the 429 names the cap's option",
                "--max-sessions-per-client" in error_text(data), data)
        st, sid, data = open_session(s.port, src=OTHER)
        C.check("a client from another address still gets a session", st == 200 and sid,
                (st, data))
    finally:
        for k in streams:
            k.close()
        s.stop()


def test_subscribe_flood(port):
    st, sid, _ = open_session(port)
    answers = []
    for i in range(300):
        st, _, data = rpc(port, {"jsonrpc": "2.0", "id": 10 + i, "method": "resources/subscribe",
                                 "params": {"uri": f"test://template/{i}/data"}}, sid)
        answers.append(jbody(data) or {})
    ok = sum(1 for a in answers if "result" in a)
    refused = [a for a in answers if "error" in a]
    C.check("one session holds at most 256 subscriptions", ok == 256, ok)
    C.check("past the cap subscribe answers an error naming it",
            len(refused) == 44 and all("256 subscriptions" in a["error"]["message"]
                                       for a in refused), refused[:1])
    st, _, data = rpc(port, {"jsonrpc": "2.0", "id": 5, "method": "ping"}, sid)
    C.check("the session goes on serving", st == 200, (st, data))


# wrk keeps 64 connections busy, each sending its next request the moment
# its answer arrives: fast enough to catch a slot that is freed only after
# the answer went out. Counts answers that are 503 or carry a "busy" error.
WRK_LUA = r"""
local sid, body, path = os.getenv("KF_SID"), os.getenv("KF_BODY"), os.getenv("KF_PATH")
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) busy = 0; total = 0 end
request = function()
  if path ~= "" then return wrk.format("GET", path) end
  return wrk.format("POST", "/mcp", {["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream", ["Mcp-Session-Id"] = sid}, body)
end
response = function(status, headers, b)
  total = total + 1
  if status == 503 or string.find(b, '"busy"', 1, true) then busy = busy + 1 end
end
done = function(summary, latency, requests)
  local b, t = 0, 0
  for _, th in ipairs(threads) do b = b + th:get("busy"); t = t + th:get("total") end
  io.write(string.format("BUSY %d TOTAL %d\n", b, t))
end
"""


def wrk_busy(tmp, port, sid="", body="", path="", secs=3):
    """Runs wrk with 64 connections for secs; returns (busy, total) or None."""
    script = os.path.join(tmp, "busy.lua")
    with open(script, "w") as f:
        f.write(WRK_LUA)
    env = dict(os.environ, KF_SID=sid, KF_BODY=body, KF_PATH=path)
    r = subprocess.run(["wrk", "-t2", "-c64", f"-d{secs}s", "-s", script,
                        f"http://127.0.0.1:{port}/"], env=env, capture_output=True, text=True,
                       timeout=60)
    for line in r.stdout.splitlines():
        if line.startswith("BUSY "):
            f = line.split()
            return int(f[1]), int(f[3])
    print(r.stdout[-500:], r.stderr[-500:], file=sys.stderr)
    return None


def test_64_in_flight(tmp, port):
    if not shutil.which("wrk"):
        C.check("wrk is installed (make deps) for the 64-connection test", False, "no wrk")
        return
    st, sid, _ = open_session(port)
    call = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "list_runs", "arguments": {"limit": 1}}})
    r = wrk_busy(tmp, port, sid=sid, body=call)
    C.check("64 connections calling a tool in one session are never told busy",
            r is not None and r[1] > 0 and r[0] == 0, r)
    # The REST slot was freed a few instructions after the answer: a rarer
    # race, so a longer run.
    r = wrk_busy(tmp, port, path="/v1/runs?limit=1", secs=6)
    C.check("64 connections calling REST tools are never told busy",
            r is not None and r[1] > 0 and r[0] == 0, r)


def test_hangups_are_quiet(tmp):
    s = Server(tmp, log_level="info")
    try:
        k = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        k.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"
                  b"Content-Type: application/json\r\n\r\n{\"a\"")
        time.sleep(0.2)
        k.close()
        k = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        k.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        time.sleep(0.2)
        k.close()
        st, sid, _ = open_session(s.port)
        k = get_stream(s.port, sid)
        time.sleep(0.2)
        k.close()
        rpc(s.port, {"jsonrpc": "2.0", "method": "notifications/message"}, sid)
        time.sleep(0.5)
    finally:
        s.stop()
    text = s.log_text()
    C.check("a client hanging up is not a WARN line", " WARN " not in text, text[-800:])
    C.check("the log has no blank lines", "\n\n" not in text and not text.startswith("\n"),
            repr(text[-400:]))


def test_bad_limit_options():
    for args, want in ((["--max-conns-per-ip", "0"], "--max-conns-per-ip needs a count"),
                       (["--request-timeout", "x"], "--request-timeout needs a count"),
                       (["--max-sessions-per-client", "-1"], "--max-sessions-per-client"),
                       (["--max-upload-total", "2G"], "--max-upload-total needs a size"),
                       (["--allow-host", ""], "--allow-host needs a value")):
        r = subprocess.run([BIN, "serve", "--http", "127.0.0.1:0"] + args, capture_output=True,
                           text=True, timeout=30)
        C.check(f"serve {' '.join(args)} exits 2 naming the option",
                r.returncode == 2 and want in r.stderr, (r.returncode, r.stderr[-300:]))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        s = Server(tmp)
        try:
            test_rebinding(s.port)
            test_text_plain(s.port)
            test_subscribe_flood(s.port)
            test_64_in_flight(tmp, s.port)
        finally:
            s.stop()
        test_allow_host(tmp)
        test_slowloris(tmp)
        test_stalled_uploads(tmp)
        test_initialize_flood(tmp)
        test_busy_sessions(tmp)
        test_hangups_are_quiet(tmp)
    test_bad_limit_options()
    return C.summary("proto_hostile_http")


if __name__ == "__main__":
    sys.exit(main())
