"""compile_kernel end to end with the real binary. `kforge compile` on a good
file, a syntax error and a refused flag (exit codes, compiler-style output);
then over stdio MCP: the tool and the artifact template are listed, a compile
with want_ptx returns a resource_link that resources/read resolves, an
#include of a planted secret leaks nothing, and a compile that never ends
(KFORGE_COMPILE_TIMEOUT_MS=2500) times out while the daemon keeps answering
pings and other compiles. Run by tests/proto/proto_compile.sh."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from proto_common import Checks, StdioSession, tool_object

BIN = sys.argv[1]
CHECKS = Checks()
check = CHECKS.check


GOOD = ('extern "C" __global__ void axpy(float *y, const float *x, float a, int n) {\n'
        '  int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
        '  if (i < n) y[i] = a * x[i] + y[i];\n}\n')
BAD = '__global__ void f(float *x) {\n  int i = threadIdx.x\n  x[i] = 1;\n}\n'
FOREVER = ('template <int N, unsigned long long M> struct A {\n'
           '  static constexpr unsigned long long v = A<N - 1, 2 * M>::v + A<N - 1, 2 * M + 1>::v;\n};\n'
           'template <unsigned long long M> struct A<0, M> { static constexpr unsigned long long v = M; };\n'
           '__global__ void k(unsigned long long *o) { *o = A<40, 0>::v; }\n')


def cli(data, *args):
    p = subprocess.run([BIN, "compile", *args, "--data-dir", data], capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode(), p.stderr.decode()



def main():
    tmp = tempfile.mkdtemp(prefix="kf-proto-compile-")
    try:
        data = os.path.join(tmp, "data")
        good, bad = os.path.join(tmp, "good.cu"), os.path.join(tmp, "bad.cu")
        with open(good, "w") as f:
            f.write(GOOD)
        with open(bad, "w") as f:
            f.write(BAD)

        rc, out, err = cli(data, good, "--arch", "sm_90")
        check("cli good exits 0", rc == 0, f"rc {rc} {err}")
        check("cli good prints the kernel row", "axpy" in out and "regs" in out, out)
        rc, out, err = cli(data, bad)
        check("cli syntax error exits 1", rc == 1, f"rc {rc}")
        check("cli prints file:line:col", 'kernel.cu:3:3: error: expected a ";"' in err, err)
        rc, out, err = cli(data, good, "--flags", "-rdc=true")
        check("cli refused flag exits 1", rc == 1 and "relocatable" in err, f"rc {rc} {err}")
        rc, out, err = cli(data, good, "--arch", "sm_999")
        check("cli unknown --arch exits 1 (a tool-level error, as every command)",
              rc == 1 and "sm_999" in err, f"rc {rc} {err}")
        rc, out, err = cli(data, good, "--json")
        doc = json.loads(out) if rc == 0 else {}
        check("cli --json is the structured result", doc.get("ok") is True and
              list(doc)[0] == "summary", out[:200])

        secret_dir = os.path.join(tmp, "outside")
        os.mkdir(secret_dir)
        marker = "KFPROTO_SECRET_51f0c2"
        secret = os.path.join(secret_dir, "secret.h")
        with open(secret, "w") as f:
            f.write(marker + "\n")

        env = dict(os.environ, KFORGE_COMPILE_TIMEOUT_MS="2500", KF_PROTO_MARKER=marker)
        s = StdioSession(BIN, data, "proto-compile", env=env)
        tools = s.request(1, "tools/list", {})
        names = [t["name"] for t in tools["result"]["tools"]]
        check("compile_kernel listed", "compile_kernel" in names, names)
        tmpl = s.request(2, "resources/templates/list", {})
        uris = [t["uriTemplate"] for t in tmpl["result"]["resourceTemplates"]]
        check("artifact template listed", "kforge://artifacts/{id}/{kind}" in uris, uris)

        r = s.request(3, "tools/call", {"name": "compile_kernel",
                                        "arguments": {"source": GOOD, "want_ptx": True}})
        res = r["result"]
        links = [c for c in res["content"] if c["type"] == "resource_link"]
        check("ptx comes as a resource_link", len(links) == 1, res["content"])
        if links:
            rd = s.request(4, "resources/read", {"uri": links[0]["uri"]})
            text = rd.get("result", {}).get("contents", [{}])[0].get("text", "")
            check("resources/read returns the PTX", ".entry axpy" in text, str(rd)[:200])

        for i, path in enumerate([secret, "/etc/shadow", "/proc/self/environ"]):
            r = s.request(10 + i, "tools/call", {"name": "compile_kernel", "arguments": {
                "source": f'#include "{path}"\n__global__ void f(int *x) {{ *x = {i}; }}\n'}})
            blob = json.dumps(r)
            check(f"no leak from {path}", marker not in blob and "root:" not in blob, blob[:300])

        # The endless compile runs on a worker while pings and a compile answer.
        s.send({"jsonrpc": "2.0", "id": 20, "method": "tools/call",
                "params": {"name": "compile_kernel", "arguments": {"source": FOREVER}}})
        time.sleep(0.3)
        t0 = time.time()
        ping = s.request(21, "ping", {})
        check("ping answered during the endless compile", ping is not None and "result" in ping and
              s.replies.get(20) is None, str(ping))
        other = s.request(22, "tools/call", {"name": "compile_kernel",
                                              "arguments": {"source": GOOD.replace("axpy", "axpy2")}})
        check("another compile works meanwhile",
              other and other["result"]["structuredContent"].get("ok") is True, str(other)[:300])
        r = s.wait(20, timeout=60)
        sc = tool_object(r)
        check("endless compile times out as isError",
              r and r["result"].get("isError") is True and sc.get("timed_out") is True, str(r)[:300])
        check("timeout came at the limit", time.time() - t0 < 30, time.time() - t0)
        after = s.request(23, "tools/call", {"name": "compile_kernel",
                                              "arguments": {"source": GOOD.replace("axpy", "axpy3")}})
        sc = (after or {}).get("result", {}).get("structuredContent", {})
        check("a fresh compile works after the timeout",
              sc.get("ok") is True and sc.get("cache_hit") is False, str(after)[:200])
        s.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return CHECKS.summary("proto_compile")


if __name__ == "__main__":
    sys.exit(main())
