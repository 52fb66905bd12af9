"""Registration with the real clients: the Claude Code and Codex CLIs from
npm (tests/sdk, pinned). The lines `kforge mcp-config` prints are run as a
user would (eval for Claude Code, --write for Codex) with HOME a temporary
folder and kforge in a folder whose name has a space; then `claude mcp list`
must say Connected (from another directory: user scope), `codex mcp list`
must list kforge and `codex app-server` must reach it and take every tool
kforge registers, each with its input and output schema;
over stdio, HTTP, and HTTP with a bearer token that must never be written
into either client's config. No login is needed for any of it.
Usage: proto_clients.py KFORGE_BIN KB CLIENT_BIN_DIR"""
import json
import os
import queue
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from proto_common import Checks, wait_port_file

BIN, KB, NPM_BIN = (os.path.abspath(a) for a in sys.argv[1:4])
CHECKS = Checks()
check = CHECKS.check
TOKEN = "kforge-test-token-7f3a"
# Every tool this build registers, as `kforge tools --json` lists them.
TOOLS = set(subprocess.run([BIN, "tools", "--json"], capture_output=True, text=True,
                           timeout=60).stdout.split())


def run(cmd, env, cwd, timeout=120):
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        return 124, f"timed out after {timeout} s: {e}"


def serve_http(home, kforge, token):
    """A `kforge serve --http` on a free port; returns (process, URL)."""
    portf = os.path.join(home, f"port-{bool(token)}")
    env = dict(os.environ, KFORGE_TOKEN=TOKEN)
    cmd = [kforge, "serve", "--http", "127.0.0.1:0", "--port-file", portf,
           "--data-dir", os.path.join(home, "data-http"), "--log-level", "warn"]
    if token:
        cmd += ["--token-env", "KFORGE_TOKEN"]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p, f"http://127.0.0.1:{wait_port_file(portf, p)}/mcp"


def app_server_tools(env, cwd):
    """Starts `codex app-server`, asks mcpServerStatus/list, returns kforge's
    entry (or a dict with "error")."""
    p = subprocess.Popen([os.path.join(NPM_BIN, "codex"), "app-server"], env=env, cwd=cwd,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    q = queue.Queue()
    threading.Thread(target=lambda: [q.put(line) for line in p.stdout], daemon=True).start()

    def send(m):
        p.stdin.write(json.dumps(m) + "\n")
        p.stdin.flush()

    def wait(i, timeout=90):
        end = time.time() + timeout
        while time.time() < end:
            try:
                m = json.loads(q.get(timeout=1))
            except (queue.Empty, ValueError):
                continue
            if m.get("id") == i and "method" not in m:
                return m
        return {"error": f"no answer to request {i} in {timeout} s"}

    try:
        send({"id": 1, "method": "initialize",
              "params": {"clientInfo": {"name": "kforge-test", "version": "1"}}})
        r = wait(1)
        if "error" in r:
            return r
        send({"method": "initialized"})
        send({"id": 2, "method": "mcpServerStatus/list", "params": {}})
        r = wait(2)
        for s in (r.get("result") or {}).get("data") or []:
            if s.get("name") == "kforge":
                return s
        return {"error": json.dumps(r)[:400]}
    finally:
        p.kill()
        p.wait(timeout=10)


def claude(home, kforge, other, label, args, env_extra):
    """Registers with the line mcp-config prints (through eval, as the help
    says) and checks `claude mcp list` from another directory."""
    env = dict(os.environ, HOME=home, PATH=NPM_BIN + ":" + os.environ["PATH"], **env_extra)
    env.pop("XDG_DATA_HOME", None)  # kforge's state.db goes under the temporary HOME
    run([os.path.join(NPM_BIN, "claude"), "mcp", "remove", "kforge", "-s", "user"], env, other)
    line = f'eval "$({shlex.quote(kforge)} mcp-config claude {" ".join(args)})"'
    rc, out = run(["sh", "-c", line], env, home)
    check(f"claude {label}: the printed line registers kforge", rc == 0, out[-400:])
    path = os.path.join(home, ".claude.json")
    cfg = json.load(open(path)) if os.path.exists(path) else {}
    server = cfg.get("mcpServers", {}).get("kforge", {})
    check(f"claude {label}: user scope, in ~/.claude.json", bool(server), str(cfg)[:300])
    rc, out = run([os.path.join(NPM_BIN, "claude"), "mcp", "list"], env, other)
    check(f"claude {label}: `claude mcp list` elsewhere says Connected",
          rc == 0 and "kforge:" in out and "Connected" in out and "Failed" not in out, out[-600:])
    return server, env


def codex(home, kforge, label, args, env_extra, want):
    env = dict(os.environ, HOME=home, **env_extra)
    env.pop("CODEX_HOME", None)
    env.pop("XDG_DATA_HOME", None)
    rc, out = run([kforge, "mcp-config", "codex", "--write", *args], env, home)
    check(f"codex {label}: --write", rc == 0, out)
    rc, out = run([os.path.join(NPM_BIN, "codex"), "mcp", "list", "--json"], env, home)
    try:
        servers = {s["name"]: s for s in json.loads(out[out.index("["):])}
    except ValueError:
        servers = {}
    t = servers.get("kforge", {}).get("transport", {})
    check(f"codex {label}: `codex mcp list` shows kforge",
          rc == 0 and all(t.get(k) == v for k, v in want.items()), out[-600:])
    s = app_server_tools(env, home)
    got = s.get("tools") or {}
    check(f"codex {label}: app-server reaches kforge and takes every tool and schema",
          (s.get("serverInfo") or {}).get("name") == "kforge" and not s.get("toolsError") and
          set(got) == TOOLS and all(got[n].get("inputSchema", {}).get("type") == "object" and
                                    got[n].get("outputSchema") for n in got),
          f"{sorted(TOOLS - set(got))} missing; {str(s)[:600]}")
    return env


def main():
    home = tempfile.mkdtemp(prefix="kforge-clients-", dir="/var/tmp")
    procs = []
    try:
        # kforge in a folder whose name needs quoting, with its knowledge base
        kdir = os.path.join(home, "k forge")
        os.makedirs(kdir)
        kforge = os.path.join(kdir, "kforge")
        shutil.copy2(BIN, kforge)
        shutil.copy2(KB, os.path.join(kdir, "knowledge.db"))
        other = os.path.join(home, "elsewhere")
        os.makedirs(other)
        p, url = serve_http(home, kforge, token=False)
        procs.append(p)
        p, turl = serve_http(home, kforge, token=True)
        procs.append(p)

        server, _ = claude(home, kforge, other, "stdio", [], {})
        check("claude stdio: the path with a space is one word",
              server.get("command") == kforge and server.get("args") == ["serve"], server)
        claude(home, kforge, other, "http", ["--http", url], {})
        # The token is in the environment when the line runs: neither the
        # shell nor eval may expand it into the config.
        server, env = claude(home, kforge, other, "http+token",
                             ["--http", turl, "--token-env", "KFORGE_TOKEN"],
                             {"KFORGE_TOKEN": TOKEN})
        path = os.path.join(home, ".claude.json")
        text = open(path).read() if os.path.exists(path) else ""
        check("claude http+token: ~/.claude.json keeps ${KFORGE_TOKEN}, not the token",
              TOKEN not in text and
              server.get("headers", {}).get("Authorization") == "Bearer ${KFORGE_TOKEN}", server)
        env.pop("KFORGE_TOKEN")
        rc, out = run([os.path.join(NPM_BIN, "claude"), "mcp", "list"], env, other)
        check("claude http+token: without the variable it does not connect (read at run time)",
              "Connected" not in out and "KFORGE_TOKEN" in out, out[-600:])

        codex(home, kforge, "stdio", [], {}, {"type": "stdio", "command": kforge})
        codex(home, kforge, "http", ["--http", url], {}, {"url": url})
        env = codex(home, kforge, "http+token", ["--http", turl, "--token-env", "KFORGE_TOKEN"],
                    {"KFORGE_TOKEN": TOKEN}, {"url": turl, "bearer_token_env_var": "KFORGE_TOKEN"})
        cfgpath = os.path.join(home, ".codex", "config.toml")
        text = open(cfgpath).read() if os.path.exists(cfgpath) else ""
        check("codex http+token: config.toml names the variable, not the token",
              TOKEN not in text and 'bearer_token_env_var = "KFORGE_TOKEN"' in text, text)
        env.pop("KFORGE_TOKEN")
        s = app_server_tools(env, home)
        check("codex http+token: without the variable no tools are listed (read at run time)",
              "get_gpu_specs" not in (s.get("tools") or {}), str(s)[:300])
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=10)
        shutil.rmtree(home, ignore_errors=True)
    return CHECKS.summary("proto_clients")


sys.exit(main())
