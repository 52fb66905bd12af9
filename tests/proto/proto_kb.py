"""The knowledge base end to end with the real binary and build/knowledge.db:
REST over real HTTP (every GPU row of gpus.csv round-trips through
GET /v1/gpus/{id}; compare; 404 with suggestions; hostile search text,
URL-encoded, answers 200), MCP over stdio (hostile queries through
tools/call are results, never JSON-RPC errors; resources and the
write-kernel prompt), and the CLI (tables, --json, exit codes).
Run by tests/proto/proto_kb.sh."""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from proto_common import Checks, wait_port_file

BIN, KB, SRC = sys.argv[1], sys.argv[2], sys.argv[3]
CHECKS = Checks()
check = CHECKS.check


HOSTILE = ['"', '""', 'NEAR(bank conflicts)', 'bank NEAR/2 x', '*', 'bank*', '-bank',
           'title:bank', '{title body}: bank', 'body:x OR', '(((', ')', 'bank AND', 'OR',
           'NOT', "'; DROP TABLE guides; --", '^bank', 'a + b', '\\', '%00', '%',
           'é ü 🙂', 'rank bm25() snippet(']


def rows():
    with open(os.path.join(SRC, "knowledge/gpu-facts/gpus.csv"), newline="") as f:
        return list(csv.DictReader(f))


def same(cell, fig):
    v = fig.get("value")
    st = fig.get("status", "known")
    if cell == "":
        return v is None and st == "unknown"
    if cell == "n/a":
        return v is None and st == "n/a"
    if isinstance(v, (int, float)):
        return float(cell) == float(v)
    return v == cell


def http_get(base, path, params=None):
    url = base + path
    if params:
        url += "?" + urllib.parse.urlencode(params)
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        body = e.read()
        try:
            return e.code, json.loads(body)
        except ValueError:
            return e.code, {"raw": body.decode(errors="replace")}


def test_rest(data):
    portf = os.path.join(data, "port")
    p = subprocess.Popen([BIN, "serve", "--http", "127.0.0.1:0", "--port-file", portf,
                          "--kb", KB, "--data-dir", data],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=dict(os.environ, KFORGE_NO_GPU="1"))
    try:
        base = f"http://127.0.0.1:{wait_port_file(portf, p)}"
        st, lst = http_get(base, "/v1/gpus")
        csvrows = rows()
        check("rest list", st == 200 and len(lst.get("gpus", [])) == len(csvrows),
              f"{st} {str(lst)[:200]}")
        n = 0
        for row, g in zip(csvrows, lst.get("gpus", [])):
            st, one = http_get(base, "/v1/gpus/" + g["id"])
            figs = one.get("gpu", {}).get("figures", {})
            ok = st == 200 and one["gpu"]["name"] == row["name"]
            for col, cell in row.items():
                if col in figs:
                    n += 1
                    if not same(cell, figs[col]):
                        ok = False
                        check(f"rest {g['id']}.{col}", False, f"csv {cell!r} got {figs[col]}")
            check(f"rest round trip {g['id']}", ok, f"status {st}")
        check("rest figures checked", n > 500, str(n))
        st, one = http_get(base, "/v1/gpus/" + urllib.parse.quote("rtx 4090"))
        check("rest alias with a space", st == 200 and one["gpu"]["id"] == "rtx-4090",
              f"{st}")
        st, cmp = http_get(base, "/v1/gpus/compare", {"ids": "a100,h100,h200"})
        check("rest compare", st == 200 and [x["id"] for x in cmp["gpus"]] ==
              ["a100-80g-sxm", "h100-sxm", "h200"], f"{st} {str(cmp)[:200]}")
        st, e = http_get(base, "/v1/gpus/h1000")
        check("rest unknown gpu 404", st == 404 and "h100-sxm" in e.get("summary", ""),
              f"{st} {e}")
        st, e = http_get(base, "/v1/gpus/local")
        check("rest local without gpu 503", st == 503 and e["error"]["code"] == "no_gpu",
              f"{st} {e}")
        for q in HOSTILE:
            st, r = http_get(base, "/v1/guides", {"q": q})
            check(f"rest hostile {q!r}", st == 200 and isinstance(r.get("hits"), list),
                  f"{st} {str(r)[:200]}")
        st, r = http_get(base, "/v1/guides", {"q": "bank conflicts", "arch": "sm_90"})
        check("rest search", st == 200 and r["hits"] and r["hits"][0]["id"] == "bank-conflicts",
              f"{st} {str(r)[:300]}")
        st, r = http_get(base, "/v1/guides", {"q": " "})
        check("rest empty query 400", st == 400 and r["error"]["code"] == "invalid", f"{st}")
        st, r = http_get(base, "/v1/guides", {"q": "x" * 600})
        check("rest long query 400", st == 400, f"{st}")
        st, r = http_get(base, "/v1/guides/coalescing")
        check("rest read guide", st == 200 and r.get("sources"), f"{st}")
        st, r = http_get(base, "/v1/guides/no-such-guide")
        check("rest unknown guide 404", st == 404, f"{st}")
        st, api = http_get(base, "/v1/openapi.json")
        check("openapi lists the kb routes", st == 200 and "/v1/gpus/{id}" in api.get("paths", {})
              and "/v1/guides" in api.get("paths", {}), f"{st}")
    finally:
        p.terminate()
        p.wait(timeout=10)


def test_mcp(data):
    p = subprocess.Popen([BIN, "serve", "--kb", KB, "--data-dir", data],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    msgs = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "proto-kb", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    for i, q in enumerate(HOSTILE):
        msgs.append({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call",
                     "params": {"name": "search_guides", "arguments": {"query": q}}})
    msgs.append({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
                 "params": {"uri": "kforge://guides/bank-conflicts"}})
    msgs.append({"jsonrpc": "2.0", "id": 3, "method": "prompts/get",
                 "params": {"name": "write-kernel", "arguments": {"op": "rmsnorm", "gpu": "h200"}}})
    msgs.append({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                 "params": {"name": "get_gpu_specs", "arguments": {"gpu": "sm_90"}}})
    msgs.append({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
    msgs.append({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                 "params": {"name": "get_gpu_specs",
                            "arguments": {"compare": ["b200", "gb200", "rtx-5090", "h100-pcie"]}}})
    msgs.append({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                 "params": {"name": "get_gpu_specs", "arguments": {"gpu": "h100", "detail": "full"}}})
    want = {m["id"] for m in msgs if "id" in m}
    got = {}
    for m in msgs:
        p.stdin.write(json.dumps(m) + "\n")
    p.stdin.flush()
    deadline = time.time() + 60
    while want - set(got) and time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        r = json.loads(line)
        if "id" in r:
            got[r["id"]] = r
    p.stdin.close()
    p.wait(timeout=10)
    for i, q in enumerate(HOSTILE):
        r = got.get(100 + i, {})
        res = r.get("result", {})
        check(f"mcp hostile {q!r}", "error" not in r and not res.get("isError") and
              isinstance(res.get("structuredContent", {}).get("hits"), list), str(r)[:200])
    text = got.get(2, {}).get("result", {}).get("contents", [{}])[0].get("text", "")
    check("mcp guide resource", "## Sources" in text, text[:100])
    pm = got.get(3, {}).get("result", {}).get("messages", [{}])[0].get("content", {}).get("text", "")
    check("mcp write-kernel prompt", "H200" in pm and "kforge://guides/" in pm, pm[:200])
    sc = got.get(4, {}).get("result", {}).get("structuredContent", {})
    check("mcp ambiguous sm_90", sc.get("gpu", {}).get("id") == "h100-sxm" and
          len(sc.get("ambiguous", {}).get("matches", [])) == 6, str(sc)[:200])
    # Small answers: what an agent's context pays for, as sent.
    def text_len(i):
        res = got.get(i, {}).get("result", {})
        return len(res.get("content", [{}])[0].get("text", "").encode()) if res else 10 ** 9
    tl = got.get(5, {}).get("result", {})
    tl_len = len(json.dumps(tl, separators=(",", ":")).encode())
    check("tools/list is at most 10 KB", tl and 0 < tl_len <= 10240, tl_len)
    check("tools/list descriptions teach",
          all(len(t.get("description", "")) >= 60 for t in tl.get("tools", [])) and
          len(tl.get("tools", [])) >= 9, [t.get("name") for t in tl.get("tools", [])])
    check("get_gpu_specs of one GPU is at most 2 KB", text_len(4) <= 2048, text_len(4))
    check("a comparison of 4 GPUs is at most 4 KB", text_len(6) <= 4096, text_len(6))
    full = got.get(7, {}).get("result", {}).get("structuredContent", {}).get("gpu", {})
    check("detail full has every figure with its formula", text_len(7) > 8192 and
          len(full.get("figures", {})) > 30 and "formula" in
          full.get("derived", {}).get("ridge_point_fp32", {}), text_len(7))


def test_cli(data):
    def run(*a):
        p = subprocess.run([BIN, *a, "--kb", KB, "--data-dir", data], capture_output=True,
                           text=True, timeout=60, env=dict(os.environ, KFORGE_NO_GPU="1"))
        return p.returncode, p.stdout, p.stderr
    rc, out, _ = run("gpu", "h100")
    check("cli gpu brief table", rc == 0 and "memory_bandwidth_gbs" in out and "3350" in out
          and "H100-DS" in out and "--full" in out and "derived figure" not in out, out[:300])
    rc, out, _ = run("gpu", "h100", "--full")
    check("cli gpu --full", rc == 0 and "memory bandwidth" in out and "formula" in out and
          "notes:" in out, out[:300])
    rc, out, _ = run("gpu", "h200", "--fields", "memory_bandwidth_gbs,features", "--json")
    j = json.loads(out) if rc == 0 else {}
    check("cli gpu --fields", list(j.get("gpu", {}).get("figures", {})) == ["memory_bandwidth_gbs"]
          and "tma" in j.get("gpu", {}).get("features", {}), out[:300])
    rc, _, err = run("gpu", "h100", "--full", "--fields", "sm_count")
    check("cli --full with --fields exit 2", rc == 2, f"{rc} {err}")
    rc, out, _ = run("gpu", "--compare", "a100", "h100", "h200", "--json")
    check("cli compare json", rc == 0 and len(json.loads(out)["gpus"]) == 3, out[:200])
    rc, out, _ = run("gpu", "--list")
    check("cli list", rc == 0 and out.count("\n") >= 19, out[:200])
    rc, _, err = run("gpu", "rtx 4080")
    check("cli unknown gpu exit 4", rc == 4 and "rtx-4090" in err, f"{rc} {err}")
    rc, _, err = run("gpu", "local")
    check("cli local exit 3", rc == 3 and "no GPU" in err, f"{rc} {err}")
    rc, out, _ = run("guide", "search", "bank conflicts", "--arch", "sm_90")
    check("cli guide search", rc == 0 and "bank-conflicts" in out, out[:200])
    rc, out, _ = run("guide", "read", "coalescing")
    check("cli guide read", rc == 0 and "## Sources" in out, out[:200])
    rc, _, err = run("guide", "read", "nope-nope")
    check("cli unknown guide exit 4", rc == 4, f"{rc} {err}")
    rc, _, err = run("gpu", "h100", "--block", "0")
    check("cli bad --block exit 2, naming get_gpu_specs's occupancy.block_threads range",
          rc == 2 and "--block: '0' is not an integer from 1 to 1024" in err, f"{rc} {err}")
    rc, _, err = run("gpu", "h100", "--fields", "sm_count,,l2_cache_mb")
    check("cli --fields with an empty item exit 2", rc == 2 and "--fields" in err and
          "1 to 64 items" in err, f"{rc} {err}")
    rc, _, err = run("guide", "search", "bank", "--limit=51")
    check("cli guide --limit past search_guides's maximum exit 2, naming the range",
          rc == 2 and "--limit: '51' is not an integer from 1 to 50" in err, f"{rc} {err}")
    rc, out, _ = run("guide", "--help")
    check("cli guide --help shows search_guides's limit bounds and default",
          rc == 0 and "at most N hits (1-50, default 10)" in out, out[-400:])


def main():
    data = tempfile.mkdtemp(prefix="proto_kb.")
    try:
        test_rest(data)
        test_mcp(data)
        test_cli(data)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    sys.exit(CHECKS.summary("proto_kb"))


main()
