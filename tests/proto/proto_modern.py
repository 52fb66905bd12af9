#!/usr/bin/env python3
"""Protocol 2026-07-28 (stateless: per-request _meta, server/discover,
resultType, caching hints, sessionless HTTP with the MCP-Protocol-Version /
Mcp-Method / Mcp-Name headers and the -32020/-32021/-32022 errors) beside
the handshake revisions, on one stdio process and one /mcp endpoint: every
bad input gets its specific error and the daemon keeps serving both eras.
Exits 1 if any check failed. Environment: KFORGE_BIN, KFORGE_KB (optional)."""
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

from proto_common import Checks, initialize_msg, wait_port_file

BIN = os.environ.get("KFORGE_BIN", "build/kforge")
KB = os.environ.get("KFORGE_KB")
V = "2026-07-28"
ACCEPT = "application/json, text/event-stream"
C = Checks()


def meta(version=V, caps=None, **extra):
    m = {"io.modelcontextprotocol/protocolVersion": version,
         "io.modelcontextprotocol/clientCapabilities": {} if caps is None else caps,
         "io.modelcontextprotocol/clientInfo": {"name": "proto_modern", "version": "1"}}
    m.update(extra)
    return m


def err_code(r):
    return (r or {}).get("error", {}).get("code")


# --- stdio ----------------------------------------------------------------------------


class Stdio:
    """kforge serve over stdio without the initialize handshake."""

    def __init__(self, data):
        cmd = [BIN, "serve", "--data-dir", data, "--conformance-fixtures"]
        if KB:
            cmd += ["--kb", KB]
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.msgs = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            try:
                m = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.msgs.append(m)

    def send(self, i, method, params):
        self.p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                        "params": params}) + "\n").encode())
        self.p.stdin.flush()

    def request(self, i, method, params):
        self.send(i, method, params)
        return self.wait(i)

    def wait(self, i):
        end = time.time() + 60
        while time.time() < end:
            with self.lock:
                for m in self.msgs:
                    if m.get("id") == i and "method" not in m:
                        return m
            time.sleep(0.01)
        return None

    def notifications(self, method):
        with self.lock:
            return [m for m in self.msgs if m.get("method") == method]

    def close(self):
        self.p.stdin.close()
        return self.p.wait(timeout=60)


def stdio_suite(tmp):
    s = Stdio(os.path.join(tmp, "d1"))
    r = s.request(1, "server/discover", {"_meta": meta()})
    res = (r or {}).get("result", {})
    C.check("stdio discover answers", V in res.get("supportedVersions", [])
            and "2025-11-25" in res.get("supportedVersions", []), r)
    C.check("stdio discover resultType", res.get("resultType") == "complete", r)
    C.check("stdio discover serverInfo in _meta",
            res.get("_meta", {}).get("io.modelcontextprotocol/serverInfo", {}).get("name")
            == "kforge", r)
    C.check("stdio discover cache hints", res.get("ttlMs", -1) > 0
            and res.get("cacheScope") == "public", r)
    C.check("stdio discover: no resources.subscribe (removed in 2026-07-28)",
            res.get("capabilities", {}).get("resources", {}).get("subscribe") is False, r)

    m = meta()
    del m["io.modelcontextprotocol/clientCapabilities"]
    r = s.request(2, "tools/list", {"_meta": m})
    C.check("stdio _meta without clientCapabilities: -32602", err_code(r) == -32602
            and "clientCapabilities" in r["error"]["message"], r)
    m = meta()
    del m["io.modelcontextprotocol/protocolVersion"]
    m["progressToken"] = 1
    r = s.request(3, "server/discover", {"_meta": m})
    C.check("stdio discover without protocolVersion: -32602", err_code(r) == -32602, r)
    r = s.request(4, "tools/list", {"_meta": meta(version="2031-01-01")})
    C.check("stdio unknown version: -32022 with supported/requested",
            err_code(r) == -32022 and r["error"].get("data", {}).get("requested") == "2031-01-01"
            and V in r["error"]["data"].get("supported", []), r)
    r = s.request(6, "tools/list", {"_meta": {"progressToken": 1}})
    C.check("stdio (2026-07-28 connection) _meta without protocolVersion: -32602",
            err_code(r) == -32602 and "protocolVersion" in r["error"]["message"], r)
    r = s.request(5, "tools/list", {"_meta": meta(version="2025-11-25")})
    C.check("stdio handshake version in _meta: -32022 naming initialize",
            err_code(r) == -32022 and "initialize" in r["error"]["message"], r)
    for i, method in enumerate(["ping", "logging/setLevel", "resources/subscribe"]):
        r = s.request(10 + i, method, {"_meta": meta(), "level": "info", "uri": "x"})
        C.check(f"stdio {method} removed: -32601", err_code(r) == -32601, r)
    r = s.request(20, "tools/list", {"_meta": meta()})
    res = (r or {}).get("result", {})
    C.check("stdio tools/list: resultType and public cache hint",
            res.get("resultType") == "complete" and res.get("cacheScope") == "public"
            and res.get("ttlMs", 0) > 0 and len(res.get("tools", [])) > 0, r)
    r = s.request(21, "resources/read", {"_meta": meta(), "uri": "test://static-text"})
    res = (r or {}).get("result", {})
    C.check("stdio resources/read: static resource is public and fresh for a while",
            res.get("cacheScope") == "public" and res.get("ttlMs", 0) > 0, r)
    r = s.request(22, "resources/read", {"_meta": meta(), "uri": "test://watched-resource"})
    res = (r or {}).get("result", {})
    C.check("stdio resources/read: changing resource is immediately stale",
            res.get("ttlMs") == 0 and res.get("cacheScope") == "private", r)
    r = s.request(23, "resources/read", {"_meta": meta(), "uri": "test://nope"})
    C.check("stdio unknown resource: -32602 (not -32002)", err_code(r) == -32602, r)
    r = s.request(24, "resources/list", {"_meta": meta()})
    res = (r or {}).get("result", {})
    C.check("stdio resources/list: private, immediately stale (runs grow)",
            res.get("ttlMs") == 0 and res.get("cacheScope") == "private", r)

    r = s.request(30, "tools/call", {"_meta": meta(), "name": "test_missing_capability",
                                     "arguments": {}})
    C.check("stdio tool needing sampling without it: -32021 naming sampling",
            err_code(r) == -32021
            and r["error"].get("data", {}).get("requiredCapabilities") == {"sampling": {}}, r)
    r = s.request(31, "tools/call", {"_meta": meta(caps={"sampling": {}}),
                                     "name": "test_missing_capability", "arguments": {}})
    res = (r or {}).get("result", {})
    C.check("stdio no server-to-client request in 2026-07-28: a tool error instead",
            res.get("isError") is True and res.get("resultType") == "complete"
            and not s.notifications("sampling/createMessage"), r)
    r = s.request(32, "tools/call", {"_meta": meta(), "name": "test_tool_with_logging",
                                     "arguments": {}})
    C.check("stdio no log notifications without _meta logLevel",
            (r or {}).get("result") is not None and not s.notifications("notifications/message"),
            s.notifications("notifications/message"))
    r = s.request(33, "tools/call", {"_meta": meta(**{"io.modelcontextprotocol/logLevel": "info"}),
                                     "name": "test_tool_with_logging", "arguments": {}})
    C.check("stdio log notifications with _meta logLevel info",
            (r or {}).get("result") is not None
            and len(s.notifications("notifications/message")) == 3, r)
    # A call keeps its own request's log level while later requests (no
    # logLevel) come in on the same connection.
    before = len(s.notifications("notifications/message"))
    s.send(35, "tools/call", {"_meta": meta(**{"io.modelcontextprotocol/logLevel": "info"}),
                              "name": "test_tool_with_logging", "arguments": {}})
    s.request(36, "tools/list", {"_meta": meta()})
    s.request(37, "server/discover", {"_meta": meta()})
    s.wait(35)
    C.check("stdio a call's log level is its request's, not the next request's",
            len(s.notifications("notifications/message")) - before == 3,
            s.notifications("notifications/message"))
    r = s.request(34, "tools/list", {"_meta": meta(**{"io.modelcontextprotocol/logLevel": "loud"})})
    C.check("stdio bad logLevel: -32602", err_code(r) == -32602, r)

    tasks_stdio(s)

    # A dual-era client may still choose the handshake after probing.
    r = s.request(40, "initialize", initialize_msg("proto_modern")["params"])
    C.check("stdio initialize after a discover probe works",
            (r or {}).get("result", {}).get("protocolVersion") == "2025-11-25", r)
    r = s.request(41, "tools/list", {})
    res = (r or {}).get("result", {})
    C.check("stdio legacy tools/list unchanged (no resultType, no hints)",
            "tools" in res and "resultType" not in res and "ttlMs" not in res, r)
    r = s.request(42, "tools/list", {"_meta": meta()})
    C.check("stdio stateless request on an initialized connection: -32600",
            err_code(r) == -32600 and "initialized" in r["error"]["message"], r)
    r = s.request(43, "ping", {})
    C.check("stdio still serving after the errors", (r or {}).get("result") == {}, r)
    C.check("stdio exits cleanly", s.close() == 0)


TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


def poll_terminal(request, tid, start_id):
    """tasks/get until the task is terminal; the last answer."""
    r = None
    for i in range(300):
        r = request(start_id + i, "tasks/get", {"_meta": meta(caps=TASKS), "taskId": tid})
        if (r or {}).get("result", {}).get("status") in ("completed", "failed", "cancelled"):
            break
        time.sleep(0.05)
    return r


def tasks_stdio(s):
    r = s.request(100, "server/discover", {"_meta": meta()})
    C.check("stdio discover advertises the tasks extension",
            "io.modelcontextprotocol/tasks"
            in (r or {}).get("result", {}).get("capabilities", {}).get("extensions", {}), r)
    r = s.request(101, "tools/call", {"_meta": meta(), "name": "slow_compute",
                                      "arguments": {"seconds": 0}})
    C.check("stdio task tool without the extension: an ordinary result",
            (r or {}).get("result", {}).get("resultType") == "complete"
            and "taskId" not in r["result"], r)
    r = s.request(102, "tools/call", {"_meta": meta(caps=TASKS), "name": "greet",
                                      "arguments": {"name": "kforge"}})
    C.check("stdio quick tool with the extension: never a task",
            (r or {}).get("result", {}).get("resultType") == "complete", r)
    r = s.request(103, "tools/call", {"_meta": meta(caps=TASKS), "name": "slow_compute",
                                      "arguments": {"seconds": 0.3, "label": "x"}})
    res = (r or {}).get("result", {})
    tid = res.get("taskId", "")
    C.check("stdio task created: resultType task, flat handle, 128-bit id",
            res.get("resultType") == "task" and res.get("status") == "working"
            and len(tid) == 32 and res.get("ttlMs", 0) > 0 and res.get("pollIntervalMs", 0) > 0
            and "createdAt" in res and "result" not in res, r)
    r = poll_terminal(s.request, tid, 110)
    res = (r or {}).get("result", {})
    C.check("stdio task polled to completed with the tool's result inlined",
            res.get("status") == "completed" and res.get("resultType") == "complete"
            and "Computed x" in res.get("result", {}).get("content", [{}])[0].get("text", ""), r)
    r = s.request(500, "tools/call", {"_meta": meta(caps=TASKS), "name": "failing_job",
                                      "arguments": {}})
    r = poll_terminal(s.request, r["result"]["taskId"], 510)
    res = (r or {}).get("result", {})
    C.check("stdio tool error in a task: completed with result.isError (not failed)",
            res.get("status") == "completed" and res.get("result", {}).get("isError") is True, r)
    r = s.request(800, "tools/call", {"_meta": meta(caps=TASKS), "name": "slow_compute",
                                      "arguments": {"seconds": 30}})
    tid = r["result"]["taskId"]
    r = s.request(801, "tasks/cancel", {"_meta": meta(caps=TASKS), "taskId": tid})
    C.check("stdio tasks/cancel acknowledges with an empty result",
            (r or {}).get("result", {}).get("resultType") == "complete"
            and "status" not in r["result"], r)
    r = s.request(802, "tasks/get", {"_meta": meta(caps=TASKS), "taskId": tid})
    res = (r or {}).get("result", {})
    C.check("stdio a cancelled task fetched: status cancelled, no result",
            res.get("status") == "cancelled" and "result" not in res
            and "cancel" in res.get("statusMessage", ""), r)
    r = s.request(803, "tasks/cancel", {"_meta": meta(caps=TASKS), "taskId": tid})
    C.check("stdio tasks/cancel of a finished task: the same ack",
            (r or {}).get("result", {}).get("resultType") == "complete", r)
    r = s.request(804, "tasks/get", {"_meta": meta(caps=TASKS), "taskId": "0" * 32})
    C.check("stdio unknown task id: -32602 naming it", err_code(r) == -32602
            and "0" * 32 in r["error"]["message"], r)
    r = s.request(805, "tasks/get", {"_meta": meta(), "taskId": tid})
    C.check("stdio tasks/get without declaring the extension: -32021",
            err_code(r) == -32021 and "io.modelcontextprotocol/tasks"
            in r["error"]["data"]["requiredCapabilities"].get("extensions", {}), r)
    r = s.request(806, "tools/call", {"_meta": meta(caps=TASKS), "name": "check_kernel",
                                      "arguments": {"spec": {"op": "relu"}}})
    res = (r or {}).get("result", {})
    C.check("stdio check_kernel runs as a task", res.get("resultType") == "task", r)
    if res.get("taskId"):
        r = poll_terminal(s.request, res["taskId"], 810)
        C.check("stdio check_kernel task reaches completed with its result",
                (r or {}).get("result", {}).get("status") == "completed"
                and '"summary"' in r["result"].get("result", {}).get("content", [{}])[0]
                .get("text", ""), r)


# --- HTTP -----------------------------------------------------------------------------


def post(port, body, headers=None, base=True):
    h = {"Content-Type": "application/json", "Accept": ACCEPT}
    if base and isinstance(body, dict) and "method" in body:
        h["MCP-Protocol-Version"] = V
        h["Mcp-Method"] = body["method"]
        p = body.get("params", {})
        n = p.get("name") if body["method"] in ("tools/call", "prompts/get") else \
            p.get("uri") if body["method"] == "resources/read" else None
        if n is not None:
            h["Mcp-Name"] = n
    for k, v in (headers or {}).items():
        if v is None:
            h.pop(k, None)
        else:
            h[k] = v
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("POST", "/mcp", json.dumps(body), h)
    r = c.getresponse()
    data = r.read().decode()
    ctype = r.getheader("Content-Type") or ""
    sid = r.getheader("Mcp-Session-Id")
    c.close()
    msgs = []
    if "text/event-stream" in ctype:
        for line in data.splitlines():
            if line.startswith("data:") and line[5:].strip():
                msgs.append(json.loads(line[5:]))
    elif data:
        msgs.append(json.loads(data))
    final = next((m for m in msgs if "id" in m and "method" not in m), None)
    return r.status, final, msgs, sid


def req(i, method, params):
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params}


def http_suite(tmp):
    pf = os.path.join(tmp, "port")
    cmd = [BIN, "serve", "--http", "127.0.0.1:0", "--port-file", pf, "--conformance-fixtures",
           "--data-dir", os.path.join(tmp, "d2"), "--log-level", "warn"]
    if KB:
        cmd += ["--kb", KB]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port = wait_port_file(pf, p)
        st, r, _, sid = post(port, req(1, "server/discover", {"_meta": meta()}))
        C.check("http discover: 200, no session minted", st == 200 and sid is None
                and V in r["result"]["supportedVersions"], (st, r, sid))
        st, r, _, sid = post(port, req(2, "tools/call", {"_meta": meta(), "name": "test_simple_text",
                                                         "arguments": {}}))
        C.check("http sessionless tools/call: resultType complete",
                st == 200 and sid is None and r["result"].get("resultType") == "complete", (st, r))
        st, r, msgs, _ = post(port, req(3, "tools/call", {
            "_meta": dict(meta(), progressToken="p1"), "name": "test_tool_with_progress",
            "arguments": {}}))
        C.check("http sessionless progress on the request's SSE stream",
                st == 200 and r and r["result"].get("resultType") == "complete"
                and sum(1 for m in msgs if m.get("method") == "notifications/progress") == 3,
                (st, msgs))

        st, r, _, _ = post(port, req(4, "tools/list", {"_meta": meta()}),
                           {"MCP-Protocol-Version": None})
        C.check("http missing MCP-Protocol-Version with _meta: 400 -32020",
                st == 400 and err_code(r) == -32020 and r.get("id") == 4, (st, r))
        st, r, _, _ = post(port, req(5, "tools/list", {"_meta": meta()}),
                           {"MCP-Protocol-Version": "2025-11-25"})
        C.check("http _meta 2026-07-28 with a 2025-11-25 header: 400 -32020",
                st == 400 and err_code(r) == -32020, (st, r))
        st, r, _, _ = post(port, req(6, "tools/list", {}))
        C.check("http 2025-11-25 shape (no _meta) with a 2026-07-28 header: 400 -32602",
                st == 400 and err_code(r) == -32602 and r.get("id") == 6, (st, r))
        st, r, _, _ = post(port, req(7, "tools/list", {"_meta": meta()}),
                           {"Mcp-Method": "prompts/list"})
        C.check("http Mcp-Method mismatch: 400 -32020", st == 400 and err_code(r) == -32020,
                (st, r))
        st, r, _, _ = post(port, req(8, "tools/call", {"_meta": meta(), "name": "test_simple_text",
                                                       "arguments": {}}),
                           {"Mcp-Name": "test_error_handling"})
        C.check("http Mcp-Name mismatch: 400 -32020", st == 400 and err_code(r) == -32020, (st, r))
        st, r, _, _ = post(port, req(9, "tools/call", {"_meta": meta(), "name": "test_simple_text",
                                                       "arguments": {}}),
                           {"Mcp-Name": "=?base64?dGVzdF9zaW1wbGVfdGV4dA==?="})
        C.check("http Mcp-Name in base64 sentinel form accepted",
                st == 200 and r and "result" in r, (st, r))
        st, r, _, _ = post(port, req(10, "tools/list", {"_meta": meta(version="1999-01-01")}),
                           {"MCP-Protocol-Version": "1999-01-01"})
        C.check("http unknown version: 400 -32022 with the id and supported list",
                st == 400 and err_code(r) == -32022 and r.get("id") == 10
                and r["error"]["data"]["requested"] == "1999-01-01", (st, r))
        st, r, _, _ = post(port, req(11, "initialize", {"_meta": meta()}))
        C.check("http initialize under 2026-07-28: 404 -32601",
                st == 404 and err_code(r) == -32601, (st, r))
        st, r, _, _ = post(port, req(12, "no/such", {"_meta": meta()}))
        C.check("http unknown method: 404 -32601", st == 404 and err_code(r) == -32601, (st, r))
        st, r, _, _ = post(port, req(13, "tools/call", {"_meta": meta(), "name": "test_missing_capability",
                                                        "arguments": {}}))
        C.check("http missing client capability: 400 -32021",
                st == 400 and err_code(r) == -32021, (st, r))

        # A task outlives its request: created in one POST, polled in others.
        st, r, _, _ = post(port, req(30, "tools/call", {"_meta": meta(caps=TASKS),
                                                        "name": "slow_compute",
                                                        "arguments": {"seconds": 0.3}}))
        tid = (r or {}).get("result", {}).get("taskId")
        C.check("http task created", st == 200 and tid, (st, r))

        def hreq(i, method, params):
            return post(port, req(i, method, params), {"Mcp-Name": params.get("taskId")})[1]
        r = poll_terminal(hreq, tid, 31)
        C.check("http task polled over separate sessionless POSTs to completed",
                (r or {}).get("result", {}).get("status") == "completed", r)
        st, r, _, _ = post(port, req(400, "tasks/get", {"_meta": meta(caps=TASKS), "taskId": tid}))
        C.check("http tasks/get without Mcp-Name (the taskId): 400 -32020",
                st == 400 and err_code(r) == -32020, (st, r))

        for verb in ("GET", "DELETE"):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request(verb, "/mcp", headers={"Accept": "text/event-stream",
                                             "MCP-Protocol-Version": V})
            resp = c.getresponse()
            resp.read()
            C.check(f"http {verb} /mcp under 2026-07-28: 405, Allow: POST",
                    resp.status == 405 and resp.getheader("Allow") == "POST", resp.status)
            c.close()

        # The handshake era keeps working on the same endpoint.
        st, r, _, sid = post(port, initialize_msg("proto_modern"), base=False)
        C.check("http legacy initialize still mints a session",
                st == 200 and sid and r["result"]["protocolVersion"] == "2025-11-25", (st, r))
        h = {"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
        post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, h, base=False)
        st, r, _, _ = post(port, req(20, "tools/list", {}), h, base=False)
        C.check("http legacy tools/list unchanged (no resultType)",
                st == 200 and "tools" in r["result"] and "resultType" not in r["result"], (st, r))
        st, r, _, _ = post(port, req(21, "tools/list", {"_meta": meta()}), h, base=False)
        C.check("http 2026 _meta inside a 2025-11-25 session: -32600, session kept",
                err_code(r) == -32600, (st, r))
        st, r, _, _ = post(port, req(22, "ping", {}), h, base=False)
        C.check("http legacy session still serving", st == 200 and r.get("result") == {}, (st, r))
        st, r, _, _ = post(port, req(23, "server/discover", {"_meta": meta()}))
        C.check("http still serving stateless requests", st == 200 and "result" in r, (st, r))
    finally:
        p.terminate()
        p.wait(10)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        stdio_suite(tmp)
        http_suite(tmp)
    return C.summary("proto_modern")


if __name__ == "__main__":
    sys.exit(main())
