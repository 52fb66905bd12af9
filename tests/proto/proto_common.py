"""Helpers shared by the protocol tests (tests/proto/proto_*.py): the pass/fail
tally every suite prints as "NAME: N passed, M failed", a stdio MCP session
against `kforge serve` with replies collected by a reader thread, and
`kforge serve --http` on a free port (the wait for its --port-file) and a
REST POST to it. Imported by the scripts next to it
(python3 puts the script's folder on sys.path)."""
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request


class Checks:
    """Counts passing checks and records failing ones, printing each failure
    to stderr as it happens."""

    def __init__(self, detail_max=None):
        """detail_max: a failure's detail is cut to this many characters
        (a whole page or answer is noise in the log); None keeps it whole."""
        self.passes = 0
        self.fails = []
        self.detail_max = detail_max

    def check(self, name, cond, detail=""):
        if cond:
            self.passes += 1
        else:
            detail = str(detail)[:self.detail_max]
            self.fails.append(f"{name}: {detail}")
            print(f"FAIL {name}: {detail}", file=sys.stderr)

    def summary(self, suite):
        """Prints "suite: N passed, M failed"; returns the exit status."""
        print(f"{suite}: {self.passes} passed, {len(self.fails)} failed")
        return 1 if self.fails else 0


def initialize_msg(client, msg_id=0):
    """The initialize request a test client sends first."""
    return {"jsonrpc": "2.0", "id": msg_id, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": client, "version": "1"}}}


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def tool_object(reply):
    """The object a tools/call reply carries: structuredContent on success;
    on isError (which has no structuredContent: the outputSchema describes
    answers only) the error object in the text block. {} when neither."""
    res = (reply or {}).get("result") or {}
    if res.get("isError"):
        blocks = res.get("content") or [{}]
        try:
            obj = json.loads(blocks[0].get("text", ""))
        except ValueError:
            return {}
        return obj if isinstance(obj, dict) else {}
    return res.get("structuredContent") or {}


class StdioSession:
    """`kforge serve --data-dir DATA` over stdio, initialized as client;
    replies (not server requests) are collected by id by a reader thread.
    cmd replaces the command line (a wrapper that ends by exec'ing the
    daemon); stderr is a file for the daemon's log (default: dropped)."""

    def __init__(self, binary, data, client, env=None, timeout=120, cmd=None, stderr=None):
        self.p = subprocess.Popen(cmd or [binary, "serve", "--data-dir", data],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=stderr or subprocess.DEVNULL, env=env)
        self.timeout = timeout
        self.replies = {}
        self.lock = threading.Lock()
        self.wlock = threading.Lock()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()
        self.send(initialize_msg(client))
        self.wait(0)
        self.send(INITIALIZED)

    def _read(self):
        for line in self.p.stdout:
            try:
                m = json.loads(line)
            except ValueError:
                continue
            if isinstance(m, dict) and "id" in m and "method" not in m:
                with self.lock:
                    self.replies[m["id"]] = m

    def send(self, msg):
        with self.wlock:
            self.p.stdin.write((json.dumps(msg) + "\n").encode())
            self.p.stdin.flush()

    def wait(self, i, timeout=None):
        """The reply with id i, or None after timeout seconds."""
        end = time.time() + (self.timeout if timeout is None else timeout)
        while time.time() < end:
            with self.lock:
                if i in self.replies:
                    return self.replies[i]
            time.sleep(0.01)
        return None

    def request(self, i, method, params):
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        return self.wait(i)

    def call(self, i, name, args):
        """tools/call name with args; the reply or None."""
        return self.request(i, "tools/call", {"name": name, "arguments": args})

    def close(self, timeout=60):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        self.p.wait(timeout=timeout)


def rest_post(port, path, body):
    """POSTs body as JSON to http://127.0.0.1:port/path; returns the JSON
    answer, of an error status too ({} when it has none)."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        return json.loads(e.read() or b"{}")


def wait_port_file(path, proc=None, tries=200, delay=0.05):
    """The port a `kforge serve --port-file path` wrote, polling tries times
    every delay seconds; raises RuntimeError when proc exits first, and
    ValueError or OSError when the file never appears."""
    for _ in range(tries):
        if os.path.exists(path) and os.path.getsize(path) > 0:
            break
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"kforge exited {proc.returncode}")
        time.sleep(delay)
    return int(open(path).read().strip())


class HttpServer:
    """`kforge serve --http LISTEN` (127.0.0.1:0: a free port, read back
    from a --port-file in tmp) with its data in data (default tmp/data).
    Its stderr is appended to tmp/server<n>.log, n the number of entries in
    tmp before it started, so each server of a suite keeps its own log.
    kb adds --kb, log_level --log-level; args follow; env is added to this
    process's environment."""

    def __init__(self, binary, tmp, *args, listen="127.0.0.1:0", data=None, kb=None,
                 log_level=None, env=None):
        n = len(os.listdir(tmp))
        self.portfile = os.path.join(tmp, f"port{n}")
        self.logpath = os.path.join(tmp, f"server{n}.log")
        cmd = [binary, "serve", "--http", listen, "--port-file", self.portfile,
               "--data-dir", data or os.path.join(tmp, "data")]
        if log_level:
            cmd += ["--log-level", log_level]
        if kb:
            cmd += ["--kb", kb]
        cmd += list(args)
        self.log = open(self.logpath, "ab")
        self.p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log,
                                  env={**os.environ, **(env or {})})
        self.port = wait_port_file(self.portfile, self.p)

    def stop(self, timeout=30):
        """SIGTERM, then SIGKILL after timeout seconds; returns the exit
        status (-9 when it had to be killed)."""
        self.p.terminate()
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
        self.log.close()
        return rc

    def log_text(self):
        """What the server wrote to its log so far."""
        with open(self.logpath, "rb") as f:
            return f.read().decode(errors="replace")
