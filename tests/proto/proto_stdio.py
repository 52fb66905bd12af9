"""Drives `kforge serve` (stdio) with scripted MCP sessions and malformed
input and checks every answer; then the CLI's --help/--version/usage exit
codes. Run by tests/proto/proto_stdio.sh; exits nonzero on the first failure."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

from proto_common import Checks, tool_object

BIN = sys.argv[1]
DATA = tempfile.mkdtemp(prefix="kforge-proto-")
CHECKS = Checks()
check = CHECKS.check


def serve(lines, extra=(), timeout=60, wait_ids=None):
    """Feeds lines (str or bytes) to a fresh server, waits for the replies to
    wait_ids (default: every integer id sent; tool calls still running at
    EOF would be cancelled, by design), closes stdin, returns (replies
    parsed, raw stdout lines, stderr, exit code)."""
    data = b"".join((l if isinstance(l, bytes) else l.encode()) + b"\n" for l in lines)
    if wait_ids is None:
        wait_ids = set()
        for l in lines:
            try:
                m = json.loads(l)
                if isinstance(m, dict) and isinstance(m.get("id"), int) and isinstance(m.get("method"), str):
                    wait_ids.add(m["id"])
            except ValueError:
                pass
    p = subprocess.Popen([BIN, "serve", "--data-dir", DATA, "--conformance-fixtures", *extra],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err_chunks = []
    t = threading.Thread(target=lambda: err_chunks.append(p.stderr.read()))
    t.start()
    p.stdin.write(data)
    p.stdin.flush()
    out = []
    pending = set(wait_ids)
    deadline = time.time() + timeout
    while pending and time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        out.append(line)
        try:
            m = json.loads(line)
            if isinstance(m, dict) and "method" not in m:
                pending.discard(m.get("id"))
        except ValueError:
            pass
    p.stdin.close()
    out.extend(p.stdout.readlines())
    rc = p.wait(timeout=timeout)
    t.join()
    raw = b"".join(out).decode().splitlines()
    parsed = []
    for l in raw:
        try:
            parsed.append(json.loads(l))
        except ValueError:
            parsed.append(None)
    return parsed, raw, err_chunks[0].decode() if err_chunks else "", rc


def by_id(replies, i):
    for r in replies:
        if isinstance(r, dict) and r.get("id") == i and "method" not in r:
            return r
    return None


def errors_with_null_id(replies):
    return [r for r in replies if isinstance(r, dict) and r.get("id") is None and "error" in r]


INIT = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "proto", "version": "1"}}})
INITED = '{"jsonrpc":"2.0","method":"notifications/initialized"}'


def req(i, method, params=None):
    m = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        m["params"] = params
    return json.dumps(m)


# 1. A scripted session: handshake, listing, calls, resources, prompts.
replies, raw, err, rc = serve([
    INIT, INITED,
    req(2, "tools/list"),
    req(3, "tools/call", {"name": "test_simple_text", "arguments": {}}),
    req(4, "resources/read", {"uri": "test://static-text"}),
    req(5, "prompts/get", {"name": "test_simple_prompt"}),
    req(6, "ping"),
    req(7, "tools/call", {"name": "json_schema_2020_12_tool", "arguments": {"name": 5}}),
])
check("session exits 0 at EOF", rc == 0, f"rc={rc} stderr={err[-300:]}")
check("stdout holds only JSON lines", all(r is not None for r in replies), raw)
r = by_id(replies, 1)
check("initialize answers 2025-11-25", r and r["result"]["protocolVersion"] == "2025-11-25", r)
check("initialize gives instructions", r and "kforge" in r["result"].get("instructions", ""), r)
r = by_id(replies, 2)
names = [t["name"] for t in r["result"]["tools"]] if r else []
check("tools/list lists fixtures", "test_simple_text" in names, names)
r = by_id(replies, 3)
check("tools/call returns text", r and r["result"]["content"][0]["text"] ==
      "This is a simple text response for testing.", r)
r = by_id(replies, 4)
check("resources/read", r and r["result"]["contents"][0]["uri"] == "test://static-text", r)
r = by_id(replies, 5)
check("prompts/get", r and r["result"]["messages"][0]["role"] == "user", r)
check("ping", by_id(replies, 6) == {"jsonrpc": "2.0", "id": 6, "result": {}}, by_id(replies, 6))
r = by_id(replies, 7)
check("bad arguments are an isError result naming the field",
      r and r["result"].get("isError") is True and
      "structuredContent" not in r["result"] and
      tool_object(r).get("summary") == "arguments.name: expected string, got integer", r)
check("logs go to stderr", "serving MCP" in err, err[-200:])

# 2. Malformed input: each gets its error and the session keeps going.
big = req(20, "ping", {"pad": "x" * 5000})
replies, raw, err, rc = serve([
    req(10, "tools/list"),                              # before initialize
    INIT, INITED,
    '{"jsonrpc":"2.0","id":11,"method":"tools/li',      # truncated
    '{"jsonrpc":"2.0","id":12,"method":"no/such"}',     # unknown method
    '{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}',   # wrong id type
    '{"jsonrpc":"2.0","id":13,"method":42}',            # wrong method type
    '{"jsonrpc":"2.0","id":14,"method":"tools/call","params":"x"}',  # params type
    '{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"nope"}}',
    '[{"jsonrpc":"2.0","id":16,"method":"ping"}]',      # batch
    '{"id":17,"method":"ping"}',                        # no jsonrpc
    "",                                                 # blank line
    big,                                                # over --max-message-bytes
    b'{"jsonrpc":"2.0","id":18,"method":"ping","params":{"s":"\xff\xfe"}}',  # bad UTF-8
    req(19, "ping"),
], extra=("--max-message-bytes", "1024"), wait_ids={19})
check("malformed session exits 0", rc == 0, f"rc={rc}")
check("malformed: stdout holds only JSON", all(r is not None for r in replies), raw)
r = by_id(replies, 10)
check("request before initialize: -32600", r and r["error"]["code"] == -32600, r)
nulls = errors_with_null_id(replies)
codes = sorted(e["error"]["code"] for e in nulls)
check("truncated JSON: -32700 with null id", -32700 in codes, nulls)
check("unknown method: -32601", by_id(replies, 12) and by_id(replies, 12)["error"]["code"] == -32601, by_id(replies, 12))
check("wrong method type: -32600 keeps the id", by_id(replies, 13) and by_id(replies, 13)["error"]["code"] == -32600, by_id(replies, 13))
check("params not an object: -32600", by_id(replies, 14) and by_id(replies, 14)["error"]["code"] == -32600, by_id(replies, 14))
check("unknown tool: -32602", by_id(replies, 15) and by_id(replies, 15)["error"]["code"] == -32602, by_id(replies, 15))
check("missing jsonrpc: -32600", by_id(replies, 17) and by_id(replies, 17)["error"]["code"] == -32600, by_id(replies, 17))
batch = [e for e in nulls if "batch" in e["error"]["message"]]
check("batch: -32600 naming batches", len(batch) == 1 and batch[0]["error"]["code"] == -32600, nulls)
over = [e for e in nulls if "1024-byte limit" in e["error"]["message"]]
check("oversized line: error naming the limit", len(over) == 1, nulls)
check("no reply to the oversized request itself", by_id(replies, 20) is None, by_id(replies, 20))
check("invalid UTF-8: parse error", by_id(replies, 18) is None and codes.count(-32700) >= 2, nulls)
check("session continues after faults", by_id(replies, 19) and by_id(replies, 19)["result"] == {}, by_id(replies, 19))
check("wrong id type answered with null id", any("id" in e["error"]["message"] for e in nulls), nulls)

# 3. A line split across many reads and one much larger than the read chunk.
pad = "y" * 200000
replies, raw, err, rc = serve([INIT, req(30, "ping", {"pad": pad}), req(31, "ping")])
check("200 kB message under the default cap is served", by_id(replies, 30) and by_id(replies, 30)["result"] == {}, "")
check("and the next one too", by_id(replies, 31) is not None, "")

# 4. EOF with a call in flight: it is cancelled and still answered; exit 0.
replies, raw, err, rc = serve([INIT, INITED,
                               req(40, "tools/call", {"name": "test_reconnection", "arguments": {},
                                                      "_meta": {"progressToken": 1}})], wait_ids={1})
check("EOF mid-call exits 0", rc == 0, rc)
check("EOF mid-call: the call is answered", by_id(replies, 40) is not None, replies)

# 5. Progress notifications and cancellation over the real pipe.
p = subprocess.Popen([BIN, "serve", "--data-dir", DATA, "--conformance-fixtures"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def send(line):
    p.stdin.write(line.encode() + b"\n")
    p.stdin.flush()


def recv():
    return json.loads(p.stdout.readline())


send(INIT)
recv()
send(INITED)
send(req(50, "tools/call", {"name": "test_tool_with_progress", "arguments": {},
                            "_meta": {"progressToken": "pt"}}))
seen = []
while True:
    m = recv()
    seen.append(m)
    if m.get("id") == 50:
        break
prog = [m["params"]["progress"] for m in seen if m.get("method") == "notifications/progress"]
check("progress notifications before the result", prog == [0, 50, 100], seen)
send(req(51, "logging/setLevel", {"level": "debug"}))
check("logging/setLevel answers {}", recv() == {"jsonrpc": "2.0", "id": 51, "result": {}}, "")
send(req(52, "tools/call", {"name": "test_tool_with_logging", "arguments": {}}))
seen = []
while True:
    m = recv()
    seen.append(m)
    if m.get("id") == 52:
        break
logs = [m["params"]["data"] for m in seen if m.get("method") == "notifications/message"]
check("three log notifications", logs == ["Tool execution started", "Tool processing data",
                                          "Tool execution completed"], seen)
p.stdin.close()
check("pipe session exits 0", p.wait(timeout=30) == 0, p.returncode)

# 6. The CLI: help, version, usage errors and their exit codes.


def cli(*args):
    q = subprocess.run([BIN, *args], capture_output=True, timeout=30)
    return q.returncode, q.stdout.decode(), q.stderr.decode()


rc, out, _ = cli("--version")
check("--version", rc == 0 and out.startswith("kforge "), out)
rc, out, _ = cli("--help")
check("--help lists serve", rc == 0 and "serve" in out and "Exit status" in out, out)
rc, out, _ = cli("help", "serve")
check("help serve", rc == 0 and "--http" in out, out)
rc, out, _ = cli("serve", "--help")
check("serve --help", rc == 0 and "--max-message-bytes" in out, out)
rc, _, e = cli("frobnicate")
check("unknown command exits 2", rc == 2 and "unknown command" in e, e)
rc, _, e = cli("serve", "--bogus")
check("unknown option exits 2", rc == 2 and "--bogus" in e, e)
rc, _, e = cli("serve", "--http", "notaport")
check("bad --http exits 2", rc == 2 and "PORT" in e, e)
rc, _, e = cli("serve", "--log-level", "loud")
check("bad --log-level exits 2", rc == 2 and "log-level" in e, e)
rc, _, e = cli("serve", "--max-message-bytes", "0")
check("bad --max-message-bytes exits 2", rc == 2, e)
rc, out, e = cli("call", "test_simple_text", "--conformance-fixtures", "--data-dir", DATA, "--json")
check("call prints JSON", rc == 0 and json.loads(out)["summary"].startswith("This is a simple"), out + e)
rc, out, e = cli("call", "test_error_handling", "--conformance-fixtures", "--data-dir", DATA)
check("call of a failing tool exits 1", rc == 1 and "intentionally" in e, out + e)
rc, out, e = cli("call", "nope", "--data-dir", DATA)
check("call of an unknown tool exits 4", rc == 4, out + e)
rc, out, e = cli("call", "json_schema_2020_12_tool", "{\"name\":1}", "--conformance-fixtures", "--data-dir", DATA)
check("call with bad arguments exits 2 naming the field", rc == 2 and "arguments.name" in e, out + e)
rc, out, e = cli("call", "test_simple_text", "{oops", "--data-dir", DATA)
check("call with bad JSON exits 2", rc == 2 and "not JSON" in e, e)
q = subprocess.run([BIN, "call", "get_gpu_specs", '{"gpu":"local"}', "--data-dir", DATA],
                   capture_output=True, timeout=60, env={**os.environ, "KFORGE_NO_GPU": "1"})
check("a GPU tool without a GPU exits 3", q.returncode == 3 and b"no_gpu" in q.stderr,
      (q.returncode, q.stderr[-300:]))
rc, out, e = cli("serve", "--data-dir", "/proc/nope/kforge")
check("unusable data dir exits 5", rc == 5 and "data dir" in e, e)
# Every command `kforge --help` lists documents itself both ways.
rc, out, _ = cli("--help")
cmds = [l.split()[0] for l in out.split("Commands:\n")[1].split("\n\n")[0].splitlines() if l.strip()]
check("--help lists the core commands", {"serve", "tools", "call", "version"} <= set(cmds), cmds)
for name in cmds:
    rc, out, _ = cli(name, "--help")
    check(f"{name} --help", rc == 0 and "usage" in out.lower() and name in out, out[:200])
    rc2, out2, _ = cli("help", name)
    check(f"help {name}", rc2 == 0 and out2 == out, out2[:200])

sys.exit(CHECKS.summary("proto_stdio"))
