#!/usr/bin/env python3
"""Drives the real `kforge serve --http` binary over HTTP: scripted MCP
sessions over Streamable HTTP (JSON and SSE answers, the GET stream,
DELETE), every documented HTTP error (400, 401, 403, 404, 405, 406, 409,
413, 415, 503), malformed input, many concurrent sessions, idle expiry,
the token requirement beyond loopback, and the REST routes. Exits 1 if
any check failed. Environment: KFORGE_BIN, KFORGE_KB (optional)."""
import http.client
import json
import os
import re
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

from proto_common import Checks, HttpServer

BIN = os.environ.get("KFORGE_BIN", "build/kforge")
KB = os.environ.get("KFORGE_KB")
ACCEPT = "application/json, text/event-stream"
CHECKS = Checks(detail_max=600)
check = CHECKS.check


def Server(tmp, *args, listen="127.0.0.1:0", env=None):
    """kforge serve logging warnings (HttpServer)."""
    return HttpServer(BIN, tmp, *args, listen=listen, kb=KB, log_level="warn", env=env)


def req(port, method, path, body=None, headers=None, timeout=20):
    """One request on a fresh connection; returns (status, headers, body)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    h = {"Accept": ACCEPT, "Content-Type": "application/json"}
    if headers:
        h.update(headers)
    h = {k: v for k, v in h.items() if v is not None}
    if isinstance(body, (dict, list)):
        body = json.dumps(body)
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    data = r.read()
    hd = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, hd, data


def rpc(port, msg, sid=None, headers=None):
    h = dict(headers or {})
    if sid:
        h["Mcp-Session-Id"] = sid
    return req(port, "POST", "/mcp", msg, h)


def jbody(data):
    try:
        return json.loads(data)
    except ValueError:
        return None


def sse_events(data):
    """Parses an SSE body into a list of dicts (id, event, data)."""
    out = []
    for block in data.decode().split("\n\n"):
        if not block.strip():
            continue
        ev = {}
        for line in block.split("\n"):
            if line.startswith(":"):
                continue
            k, _, v = line.partition(":")
            ev[k] = ev.get(k, "") + v[1:] if v.startswith(" ") else v
        out.append(ev)
    return out


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "proto_http", "version": "1"}}}


def open_session(port, headers=None):
    st, hd, data = rpc(port, INIT, headers=headers)
    sid = hd.get("mcp-session-id")
    if st == 200 and sid:
        rpc(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid, headers)
    return st, sid, hd, data


def test_session(port):
    st, sid, hd, data = open_session(port)
    check("initialize answers 200 JSON", st == 200 and hd.get("content-type") == "application/json",
          (st, hd))
    check("session id is 32 hex characters", sid and re.fullmatch(r"[0-9a-f]{32}", sid), sid)
    j = jbody(data)
    check("initialize negotiates 2025-11-25",
          j and j["result"]["protocolVersion"] == "2025-11-25", data)
    _, sid2, _, _ = open_session(port)
    check("each session gets its own id", sid2 and sid2 != sid, (sid, sid2))

    st, hd, data = rpc(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    check("a notification answers 202 with no body", st == 202 and data == b"", (st, data))
    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 77, "result": {}}, sid)
    check("a client response answers 202", st == 202 and data == b"", (st, data))

    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, sid)
    j = jbody(data)
    check("tools/list answers JSON with tools", st == 200 and j and j["id"] == 2 and
          any(t["name"] == "test_simple_text" for t in j["result"]["tools"]), data[:300])

    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                              "params": {"name": "test_simple_text", "arguments": {}}}, sid)
    j = jbody(data)
    check("a tool call without progress answers one JSON body",
          st == 200 and hd.get("content-type") == "application/json" and j and
          j["result"]["content"][0]["text"].startswith("This is a simple text"), (st, hd, data))

    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                              "params": {"name": "test_tool_with_progress", "arguments": {},
                                         "_meta": {"progressToken": "tok"}}}, sid)
    evs = sse_events(data)
    msgs = [jbody(e["data"].encode()) for e in evs if e.get("data")]
    kinds = [m.get("method", "result" if "result" in m else "?") for m in msgs if m]
    check("a call with a progressToken answers an SSE stream",
          st == 200 and hd.get("content-type") == "text/event-stream", (st, hd))
    check("progress notifications arrive before the result",
          kinds == ["notifications/progress"] * 3 + ["result"], kinds)
    check("the SSE stream starts with a priming event (id, empty data, retry)",
          evs and evs[0].get("id") and evs[0].get("data") == "" and "retry" in evs[0], evs[:1])
    ids = [tuple(map(int, e["id"].split("-"))) for e in evs if e.get("id")]
    check("SSE event ids are STREAM-SEQ, one stream, increasing from 0",
          ids and len({i[0] for i in ids}) == 1 and [i[1] for i in ids] == list(range(len(ids))),
          ids)

    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                              "params": {"name": "test_tool_with_logging", "arguments": {}}}, sid)
    kinds = [jbody(e["data"].encode()).get("method", "result")
             for e in sse_events(data) if e.get("data")]
    check("log notifications during a call also stream as SSE",
          st == 200 and kinds.count("notifications/message") >= 1 and kinds[-1] == "result", kinds)

    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 6, "method": "ping"}, sid,
                       {"MCP-Protocol-Version": "2025-03-26"})
    check("an older supported MCP-Protocol-Version is accepted", st == 200, (st, data))
    return sid


def test_errors(port, sid):
    def rpc_code(data):
        j = jbody(data)
        return j and j.get("error", {}).get("code")

    st, hd, data = rpc(port, '{"jsonrpc":"2.0","id":9,"method":"tools/li', sid)
    check("truncated JSON answers 400 parse error -32700",
          st == 400 and rpc_code(data) == -32700, (st, data))
    st, hd, data = rpc(port, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}], sid)
    check("a batch answers -32600 Invalid Request", st == 400 and rpc_code(data) == -32600,
          (st, data))
    st, hd, data = rpc(port, [INIT])
    check("a batch without a session answers 400 -32600", st == 400 and rpc_code(data) == -32600,
          (st, data))
    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 10, "method": "no/such"}, sid)
    check("an unknown method answers -32601", st == 200 and rpc_code(data) == -32601, (st, data))
    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 11, "method": "tools/call",
                              "params": "not an object"}, sid)
    check("params of the wrong type answer a JSON-RPC error",
          rpc_code(data) in (-32600, -32602), (st, data))
    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 12, "method": "tools/call",
                              "params": {"name": 42}}, sid)
    check("a tool name of the wrong type answers -32602", rpc_code(data) == -32602, (st, data))
    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 13, "method": "tools/call",
                              "params": {"name": "no_such_tool", "arguments": {}}}, sid)
    check("an unknown tool answers an error", st == 200 and (rpc_code(data) == -32602 or
          (jbody(data) or {}).get("result", {}).get("isError")), data)
    st, hd, data = rpc(port, INIT, sid)
    check("initialize on an initialized session is refused",
          rpc_code(data) == -32600, (st, data))

    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    check("a request without Mcp-Session-Id answers 400", st == 400, (st, data))
    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                       "0123456789abcdef0123456789abcdef")
    check("an unknown session id answers 404", st == 404 and rpc_code(data) == -32001, (st, data))
    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, "bad id!")
    check("a malformed session id answers 404", st == 404, (st, data))
    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid,
                       {"MCP-Protocol-Version": "1999-01-01"})
    check("an unsupported MCP-Protocol-Version answers 400",
          st == 400 and b"1999-01-01" in data, (st, data))
    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid,
                       {"Accept": "application/json"})
    check("Accept without text/event-stream answers 406", st == 406, (st, data))
    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid,
                       {"Accept": "text/html"})
    check("Accept of neither answers 406", st == 406, (st, data))
    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid,
                       {"Content-Type": "text/plain"})
    check("a body that is not application/json answers 415", st == 415, (st, data))
    st, hd, data = req(port, "GET", "/mcp", headers={"Mcp-Session-Id": sid,
                                                     "Accept": "application/json"})
    check("GET /mcp without text/event-stream in Accept answers 406", st == 406, (st, data))
    st, hd, data = req(port, "GET", "/mcp", headers={"Accept": "text/event-stream"})
    check("GET /mcp without a session answers 400", st == 400, (st, data))
    st, hd, data = req(port, "PUT", "/mcp", "{}", {"Mcp-Session-Id": sid})
    check("PUT /mcp answers 405 with Allow", st == 405 and "POST" in hd.get("allow", ""),
          (st, hd))
    st, hd, data = req(port, "DELETE", "/mcp")
    check("DELETE without a session answers 400", st == 400, (st, data))

    # DNS rebinding: Host and Origin
    st, hd, data = rpc(port, INIT, headers={"Host": "evil.example.com"})
    check("a foreign Host answers 403", st == 403, (st, data))
    st, hd, data = rpc(port, INIT, headers={"Origin": "http://evil.example.com"})
    check("a foreign Origin answers 403", st == 403, (st, data))
    st, hd, data = rpc(port, INIT, headers={"Origin": "null"})
    check("Origin null answers 403", st == 403, (st, data))
    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 1, "method": "ping"}, sid,
                       {"Host": "localhost:1234", "Origin": "http://localhost:3000"})
    check("a localhost Host and Origin are accepted", st == 200, (st, data))
    st, hd, data = req(port, "GET", "/v1/health", headers={"Host": "evil.example.com"})
    check("REST also refuses a foreign Host", st == 403, (st, data))


def test_body_caps(port, sid, cap):
    big = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + "x" * (cap + 10) + '"}}'
    st, hd, data = rpc(port, big, sid)
    check("a body over the cap answers 413 (Content-Length)", st == 413 and b"cap" in data,
          (st, data[:200]))
    # Chunked upload without Content-Length: counted while it streams.
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    c.putrequest("POST", "/mcp")
    for k, v in (("Accept", ACCEPT), ("Content-Type", "application/json"),
                 ("Mcp-Session-Id", sid), ("Transfer-Encoding", "chunked")):
        c.putheader(k, v)
    c.endheaders()
    chunk = big.encode()
    for i in range(0, len(chunk), 65536):
        part = chunk[i:i + 65536]
        c.send(b"%x\r\n%s\r\n" % (len(part), part))
    c.send(b"0\r\n\r\n")
    r = c.getresponse()
    check("a chunked body over the cap answers 413", r.status == 413, r.status)
    r.read()
    c.close()
    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, sid)
    check("the session still works after a 413", st == 200, (st, data))
    st, hd, data = req(port, "POST", "/v1/compile", big)
    check("REST answers 413 for a body over the cap", st == 413, (st, data[:200]))


def read_sse_until(resp, pred, limit_s=5):
    """Reads events from an open SSE response until pred(events) holds."""
    buf = b""
    deadline = time.time() + limit_s
    resp.fp.raw._sock.settimeout(0.5)
    while time.time() < deadline:
        try:
            chunk = resp.read1(65536)
        except (socket.timeout, TimeoutError):
            continue
        if not chunk:
            return sse_events(buf), True
        buf += chunk
        if pred(sse_events(buf)):
            return sse_events(buf), False
    return sse_events(buf), False


def test_get_stream_and_delete(port):
    _, sid, _, _ = open_session(port)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/mcp", headers={"Accept": "text/event-stream", "Mcp-Session-Id": sid})
    r = c.getresponse()
    check("GET /mcp opens an SSE stream", r.status == 200 and
          r.getheader("content-type") == "text/event-stream", r.status)
    st, hd, data = req(port, "GET", "/mcp", headers={"Accept": "text/event-stream",
                                                     "Mcp-Session-Id": sid})
    check("a second GET stream on one session answers 409", st == 409, (st, data))
    evs, closed = read_sse_until(r, lambda e: any(x.get("id") for x in e), 5)
    check("the GET stream starts with a priming event", not closed and evs and
          evs[0].get("id") and evs[0].get("data") == "", evs)
    st, hd, data = req(port, "DELETE", "/mcp", headers={"Mcp-Session-Id": sid})
    check("DELETE ends the session with 200", st == 200, (st, data))
    evs, closed = read_sse_until(r, lambda e: False, 5)
    check("DELETE finishes the session's GET stream", closed, evs)
    c.close()
    st, hd, data = rpc(port, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, sid)
    check("a request on a deleted session answers 404", st == 404, (st, data))
    st, hd, data = req(port, "DELETE", "/mcp", headers={"Mcp-Session-Id": sid})
    check("DELETE of an ended session answers 404", st == 404, (st, data))


def raw_post(port, sid, msg):
    """POSTs msg on a raw socket and returns it with the response's header
    block and whatever body bytes came with it."""
    body = json.dumps(msg).encode()
    sk = socket.create_connection(("127.0.0.1", port), timeout=10)
    sk.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Accept: application/json, text/event-stream\r\nMcp-Session-Id: " +
               sid.encode() + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    return sk


def test_resume(port):
    init = json.loads(json.dumps(INIT))
    init["params"]["capabilities"] = {"sampling": {}}
    st, hd, data = rpc(port, init)
    sid = hd.get("mcp-session-id")
    rpc(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
    sk = raw_post(port, sid, {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                              "params": {"name": "test_sampling",
                                         "arguments": {"prompt": "hello"}}})
    buf = b""
    deadline = time.time() + 10
    while b"sampling/createMessage" not in buf and time.time() < deadline:
        chunk = sk.recv(65536)
        if not chunk:
            break
        buf += chunk
    ids = re.findall(rb"\nid: ([0-9]+-[0-9]+)", buf)
    req_line = [ln for ln in buf.split(b"\n") if b"sampling/createMessage" in ln]
    check("a server request mid-call arrives on the POST's SSE stream",
          b"text/event-stream" in buf and req_line and len(ids) >= 2, buf[:400])
    if not req_line or len(ids) < 2:
        sk.close()
        return
    sreq = json.loads(req_line[0].split(b"data: ", 1)[1])
    # The client loses the stream (RST), then answers the sampling request.
    sk.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sk.close()
    st, _, _ = rpc(port, {"jsonrpc": "2.0", "id": sreq["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "resumed fine"},
        "model": "test", "stopReason": "endTurn"}}, sid)
    check("the client's answer to the server request is accepted (202)", st == 202, st)
    time.sleep(0.3)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/mcp", headers={"Accept": "text/event-stream", "Mcp-Session-Id": sid,
                                      "Last-Event-ID": ids[-1].decode()})
    r = c.getresponse()
    evs, closed = read_sse_until(r, lambda e: any('"id":7' in x.get("data", "") for x in e), 5)
    res = [jbody(e["data"].encode()) for e in evs if '"id":7' in e.get("data", "")]
    check("GET with Last-Event-ID resumes the lost stream: the answer arrives",
          r.status == 200 and res and "resumed fine" in json.dumps(res[0]), (r.status, evs))
    check("the resumed stream replays only events after Last-Event-ID",
          not any("sampling/createMessage" in e.get("data", "") for e in evs), evs)
    c.close()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/mcp", headers={"Accept": "text/event-stream", "Mcp-Session-Id": sid,
                                      "Last-Event-ID": ids[-1].decode()})
    r = c.getresponse()
    evs, closed = read_sse_until(r, lambda e: any(x.get("id") for x in e), 3)
    check("a finished stream cannot be resumed twice (a plain GET stream opens instead)",
          r.status == 200 and not any('"id":7' in e.get("data", "") for e in evs), evs)
    c.close()
    req(port, "DELETE", "/mcp", headers={"Mcp-Session-Id": sid})


def test_concurrent(port, nsess=40):
    errors = []

    def client(k):
        try:
            st, sid, _, _ = open_session(port)
            if st != 200:
                errors.append(("init", k, st))
                return
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)  # keep-alive
            for i in range(5):
                body = json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                   "params": {"name": "test_simple_text", "arguments": {}}})
                c.request("POST", "/mcp", body, {"Accept": ACCEPT, "Mcp-Session-Id": sid,
                                                 "Content-Type": "application/json"})
                r = c.getresponse()
                j = jbody(r.read())
                if r.status != 200 or not j or j.get("id") != i:
                    errors.append(("call", k, r.status, j))
            c.close()
            st, _, _ = req(port, "DELETE", "/mcp", headers={"Mcp-Session-Id": sid})
            if st != 200:
                errors.append(("delete", k, st))
        except Exception as e:  # noqa: BLE001 - any failure is a test failure
            errors.append(("exception", k, repr(e)))

    ts = [threading.Thread(target=client, args=(k,)) for k in range(nsess)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    check(f"{nsess} concurrent sessions each get their own answers", not errors, errors[:5])
    st, hd, data = req(port, "GET", "/v1/health")
    j = jbody(data)
    check("no sessions are left after every client deleted its own",
          st == 200 and j and j["sessions"] <= 3, data)


def test_rest(port):
    st, hd, data = req(port, "GET", "/v1/health")
    j = jbody(data)
    check("GET /v1/health answers ok", st == 200 and j["status"] == "ok" and
          list(j)[0] == "summary", data)
    st, hd, data = req(port, "GET", "/v1/openapi.json")
    j = jbody(data)
    check("GET /v1/openapi.json is an OpenAPI 3.1 document",
          st == 200 and j and j["openapi"].startswith("3.1"), data[:200])
    oids = [o.get("operationId") for item in (j or {}).get("paths", {}).values()
            for o in item.values()]
    check("OpenAPI operationIds are present and unique",
          oids and None not in oids and len(set(oids)) == len(oids), oids)
    for p in ("/v1/gpus", "/v1/gpus/{id}", "/v1/gpus/compare", "/v1/guides", "/v1/guides/{id}",
              "/v1/compile", "/v1/check", "/v1/bench", "/v1/runs", "/v1/runs/{id}",
              "/v1/health", "/v1/openapi.json"):
        check(f"OpenAPI describes {p}", j and p in j["paths"], list(j["paths"]) if j else None)
    st, hd, data = req(port, "GET", "/v1/guides")
    check("GET /v1/guides without q answers 400 naming q", st == 400 and b"'q'" in data,
          (st, data))
    st, hd, data = req(port, "GET", "/v1/guides?q=x&limit=abc")
    check("a non-integer limit answers 400 naming limit", st == 400 and b"'limit'" in data,
          (st, data))
    st, hd, data = req(port, "GET", "/v1/gpus/compare?ids=a,,b")
    check("an empty name in ids answers 400", st == 400 and b"'ids'" in data, (st, data))
    st, hd, data = req(port, "POST", "/v1/gpus")
    check("POST on a GET route answers 405 with Allow", st == 405 and hd.get("allow") == "GET",
          (st, hd))
    st, hd, data = req(port, "GET", "/v1/nope")
    check("an unknown REST path answers 404", st == 404, (st, data))
    st, hd, data = req(port, "POST", "/v1/compile", "{not json")
    check("POST /v1/compile with bad JSON answers 400", st == 400 and b"JSON" in data,
          (st, data))
    st, hd, data = req(port, "POST", "/v1/compile", "[1,2]")
    check("POST /v1/compile with a non-object body answers 400", st == 400, (st, data))
    st, hd, data = req(port, "POST", "/v1/compile", "{}")
    check("POST /v1/compile without source answers 400 naming it (or 404 without the tool)",
          (st == 400 and b"source" in data) or (st == 404 and b"no such tool" in data),
          (st, data))
    st, hd, data = req(port, "GET", "/v1/runs?limit=0")
    check("a schema violation through REST answers 400 naming the field",
          (st == 400 and b"limit" in data) or (st == 404 and b"no such tool" in data),
          (st, data))
    st, hd, data = req(port, "GET", "/v1/runs")
    j = jbody(data)
    check("GET /v1/runs answers the list_runs result",
          (st == 200 and "runs" in j) or (st == 404 and b"no such tool" in data), (st, data))
    st, hd, data = req(port, "GET", "/v1/runs/zzzzzzzzzzzzzzzz")
    check("GET /v1/runs/{unknown} answers 400 or 404", st in (400, 404), (st, data))
    if KB:
        st, hd, data = req(port, "GET", "/v1/gpus")
        check("GET /v1/gpus lists GPUs", st == 200 and b"summary" in data, (st, data[:200]))
        st, hd, data = req(port, "GET", "/v1/gpus/h100")
        check("GET /v1/gpus/h100 answers one GPU", st == 200 and b"H100" in data,
              (st, data[:200]))
        st, hd, data = req(port, "GET", "/v1/gpus/no-such-gpu-xyz")
        check("an unknown GPU answers 404", st == 404, (st, data[:300]))
        st, hd, data = req(port, "GET", "/v1/gpus/compare?ids=h100,a100")
        check("GET /v1/gpus/compare answers", st == 200, (st, data[:300]))
        st, hd, data = req(port, "GET", "/v1/gpus/h200?fields=memory_bandwidth_gbs,features")
        j = jbody(data)
        check("GET /v1/gpus/{id}?fields= answers only those",
              st == 200 and j and list(j["gpu"]["figures"]) == ["memory_bandwidth_gbs"]
              and "features" in j["gpu"] and "notes" not in j["gpu"], (st, data[:300]))
        st, hd, data = req(port, "GET", "/v1/gpus/h200?fields=bandwidth")
        check("an unknown field answers 400 naming it", st == 400 and b"bandwidth" in data,
              (st, data[:300]))
        st, hd, data = req(port, "GET", "/v1/guides?q=bank+conflicts&limit=3")
        j = jbody(data)
        check("GET /v1/guides searches", st == 200 and j and j["hits"], (st, data[:300]))
        if st == 200 and j and j["hits"]:
            st, hd, data = req(port, "GET", "/v1/guides/" + j["hits"][0]["id"])
            check("GET /v1/guides/{id} reads a guide", st == 200 and b"markdown" in data,
                  (st, data[:200]))
        st, hd, data = req(port, "GET", "/v1/guides/no-such-guide")
        check("an unknown guide answers 404", st == 404, (st, data[:300]))
    st, hd, data = req(port, "POST", "/v1/compile", {
        "source": 'extern "C" __global__ void k(float *y){ y[threadIdx.x] = 1.0f }',
        "arch": "sm_90"})
    check("a compile error through REST answers 422 with the diagnostics",
          (st == 422 and b"diagnostics" in data) or (st == 404 and b"no such tool" in data),
          (st, data[:300]))
    spec = {"op": "rmsnorm", "dtype": "f32", "arch": "sm_90", "sizes": [{"T": 4, "D": 8}],
            "source": 'extern "C" __global__ void rmsnorm_f32(float *y, const float *x, '
                      'const float *w, int T, int D, float eps) {}',
            "launch": [{"kernel": "rmsnorm_f32", "grid": ["T"], "block": [32],
                        "args": ["y", "x", "w", "T", "D", "eps"]}]}
    st, hd, data = req(port, "POST", "/v1/check", {"spec": spec}, timeout=120)
    if not os.path.exists("/dev/nvidia0"):
        check("check without a GPU answers 503 no_gpu with Retry-After",
              (st == 503 and b"no_gpu" in data and hd.get("retry-after")) or
              (st == 404 and b"no such tool" in data), (st, data[:300]))
    else:
        check("an empty kernel fails its check through REST (422)", st == 422, (st, data[:300]))
    st, hd, data = req(port, "GET", "/")
    check("GET / serves the page", st == 200 and hd.get("content-type", "").startswith(
        "text/html") and b"<html" in data.lower(), (st, hd))
    st, hd, data = req(port, "GET", "/nothing-here")
    check("an unknown path answers 404", st == 404, (st, data))


def test_busy(tmp):
    s = Server(tmp, "--conformance-fixtures",
               env={"KFORGE_HTTP_MAX_SESSIONS": "3", "KFORGE_HTTP_MAX_INFLIGHT": "1"})
    try:
        sts = [open_session(s.port)[0] for _ in range(2)]
        init = json.loads(json.dumps(INIT))
        init["params"]["capabilities"] = {"sampling": {}}
        st, hd, _ = rpc(s.port, init)
        sid = hd.get("mcp-session-id")
        sts.append(st)
        st, hd, data = rpc(s.port, INIT)
        check("sessions past the cap answer 503 busy with Retry-After",
              sts == [200] * 3 and st == 503 and hd.get("retry-after") and b"busy" in data,
              (sts, st, hd, data))
        rpc(s.port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
        time.sleep(0.3)  # earlier connections complete
        sk = raw_post(s.port, sid, {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                                    "params": {"name": "test_sampling",
                                               "arguments": {"prompt": "x"}}})
        buf = b""
        while b"sampling/createMessage" not in buf:
            chunk = sk.recv(65536)
            if not chunk:
                break
            buf += chunk
        st, hd, data = rpc(s.port, {"jsonrpc": "2.0", "id": 6, "method": "ping"}, sid)
        check("requests past the in-flight cap answer 503 busy with Retry-After",
              st == 503 and hd.get("retry-after") and b"busy" in data, (st, hd, data))
        line = [ln for ln in buf.split(b"\n") if b"sampling/createMessage" in ln]
        sreq = json.loads(line[0].split(b"data: ", 1)[1]) if line else {"id": -1}
        st, hd, data = rpc(s.port, {"jsonrpc": "2.0", "id": sreq["id"], "result": {
            "role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m",
            "stopReason": "endTurn"}}, sid)
        check("a client response still gets through at the in-flight cap (202)", st == 202,
              (st, data))
        sk.settimeout(10)
        while b'"id":5' not in buf:
            chunk = sk.recv(65536)
            if not chunk:
                break
            buf += chunk
        check("the waiting call finishes once answered", b'"id":5,"result"' in buf, buf[-300:])
        sk.close()
    finally:
        check("the server exits 0 on SIGTERM", s.stop() == 0)


def test_expiry(tmp):
    s = Server(tmp, "--conformance-fixtures", "--session-idle", "1")
    try:
        _, sid, _, _ = open_session(s.port)
        st1, _, _ = rpc(s.port, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, sid)
        time.sleep(3.2)
        st2, _, data = rpc(s.port, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, sid)
        check("an idle session expires (404 afterwards)", st1 == 200 and st2 == 404,
              (st1, st2, data))
    finally:
        check("the server exits 0 on SIGTERM", s.stop() == 0)


def test_token(tmp):
    env = {"KF_TEST_TOKEN": "s3cret-token-value"}
    s = Server(tmp, "--conformance-fixtures", "--token-env", "KF_TEST_TOKEN", env=env)
    try:
        st, hd, data = rpc(s.port, INIT)
        check("no token answers 401 with WWW-Authenticate",
              st == 401 and hd.get("www-authenticate", "").startswith("Bearer"), (st, hd))
        st, hd, data = rpc(s.port, INIT, headers={"Authorization": "Bearer wrong"})
        check("a wrong token answers 401", st == 401, (st, data))
        st, hd, data = rpc(s.port, INIT, headers={"Authorization": "Bearer s3cret-token-valu"})
        check("a token prefix answers 401", st == 401, (st, data))
        st, hd, data = rpc(s.port, INIT, headers={"Authorization": "Basic czNjcmV0"})
        check("another scheme answers 401", st == 401, (st, data))
        auth = {"Authorization": "Bearer s3cret-token-value"}
        st, sid, hd, data = open_session(s.port, auth)
        check("the right token opens a session", st == 200 and sid, (st, data))
        st, hd, data = req(s.port, "GET", "/v1/runs")
        check("REST needs the token too", st == 401, (st, data))
        st, hd, data = req(s.port, "GET", "/v1/health")
        check("/v1/health needs no token", st == 200, (st, data))
    finally:
        check("the server exits 0 on SIGTERM", s.stop() == 0)
    # beyond loopback: refuses without a token, starts with one
    p = subprocess.run([BIN, "serve", "--http", "0.0.0.0:0", "--data-dir",
                        os.path.join(tmp, "data")], capture_output=True, timeout=20)
    check("binding beyond loopback without a token is refused (exit 5, message)",
          p.returncode == 5 and b"--token-env" in p.stderr, (p.returncode, p.stderr))
    p = subprocess.run([BIN, "serve", "--http", "127.0.0.1:0", "--token-env", "KF_UNSET_VAR_X",
                        "--data-dir", os.path.join(tmp, "data")], capture_output=True,
                       timeout=20, env={k: v for k, v in os.environ.items()
                                        if k != "KF_UNSET_VAR_X"})
    check("--token-env naming an unset variable is refused",
          p.returncode != 0 and b"KF_UNSET_VAR_X" in p.stderr, (p.returncode, p.stderr))
    s = Server(tmp, "--token-env", "KF_TEST_TOKEN", listen="0.0.0.0:0", env=env)
    try:
        st, hd, data = req(s.port, "GET", "/v1/health",
                           headers={"Host": "gpu-box.example:7070"})
        check("beyond loopback with a token any Host is served", st == 200, (st, data))
        st, hd, data = rpc(s.port, INIT, headers={"Authorization": "Bearer s3cret-token-value",
                                                  "Origin": "http://evil.example.com"})
        check("beyond loopback a foreign Origin is still refused", st == 403, (st, data))
    finally:
        check("the server exits 0 on SIGTERM", s.stop() == 0)
    s = Server(tmp, "--conformance-fixtures", "--allow-origin", "https://tools.example.org")
    try:
        st, hd, data = rpc(s.port, INIT, headers={"Origin": "https://tools.example.org"})
        check("--allow-origin admits that Origin", st == 200, (st, data))
        check("an allowed Origin gets CORS headers exposing Mcp-Session-Id",
              hd.get("access-control-allow-origin") == "https://tools.example.org" and
              "Mcp-Session-Id" in hd.get("access-control-expose-headers", ""), hd)
        st, hd, data = req(s.port, "OPTIONS", "/mcp", headers={
            "Origin": "https://tools.example.org", "Access-Control-Request-Method": "POST"})
        check("a CORS preflight from an allowed Origin answers 204 with the methods and headers",
              st == 204 and "POST" in hd.get("access-control-allow-methods", "") and
              "Mcp-Session-Id" in hd.get("access-control-allow-headers", ""), (st, hd))
        st, hd, data = req(s.port, "OPTIONS", "/mcp", headers={
            "Origin": "https://evil.example.org", "Access-Control-Request-Method": "POST"})
        check("a preflight from another Origin answers 403 without CORS headers",
              st == 403 and "access-control-allow-origin" not in hd, (st, hd))
    finally:
        check("the server exits 0 on SIGTERM", s.stop() == 0)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        cap = 64 * 1024
        s = Server(tmp, "--conformance-fixtures", "--max-message-bytes", str(cap))
        try:
            sid = test_session(s.port)
            test_errors(s.port, sid)
            test_body_caps(s.port, sid, cap)
            test_get_stream_and_delete(s.port)
            test_resume(s.port)
            test_rest(s.port)
            test_concurrent(s.port)
            check("the server is still running", s.p.poll() is None, s.p.returncode)
        finally:
            rc = s.stop()
        check("SIGTERM shuts the server down cleanly (exit 0)", rc == 0, rc)
        test_busy(tmp)
        test_expiry(tmp)
        test_token(tmp)
        for log in sorted(f for f in os.listdir(tmp) if CHECKS.fails and f.endswith(".log")):
            with open(os.path.join(tmp, log), errors="replace") as f:
                sys.stdout.write(f"--- {log}\n{f.read()[-3000:]}")
    return CHECKS.summary("proto_http")


if __name__ == "__main__":
    sys.exit(main())
