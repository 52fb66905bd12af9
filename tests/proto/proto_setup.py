"""First-run commands end to end: `kforge mcp-config` output parses as the
client expects (TOML for Codex, JSON for .mcp.json, the claude line), `kforge
skill install` lands where each client looks and refuses to clobber edits,
SKILL.md's front matter and size are valid, and `kforge demo` completes
without a GPU. Prints 'N passed, N failed'."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib

from proto_common import Checks

BIN = os.path.abspath(sys.argv[1])
SRC = os.path.abspath(sys.argv[2])
CHECKS = Checks()
check = CHECKS.check


def run(*args, cwd=None, env=None, timeout=300):
    return subprocess.run([BIN, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


# --- mcp-config ------------------------------------------------------------
r = run("mcp-config", "claude")
words = shlex.split(r.stdout)
check("claude line, user scope", r.returncode == 0 and
      words[:7] == ["claude", "mcp", "add", "--scope", "user", "kforge", "--"]
      and os.path.isabs(words[7]) and os.path.samefile(words[7], BIN) and words[8:] == ["serve"],
      r.stdout)

# A path with a space and a quote survives the shell as one word.
odd = tempfile.mkdtemp(prefix="kforge it's here ")
odd_bin = os.path.join(odd, "kforge")
shutil.copy2(BIN, odd_bin)  # a copy: /proc/self/exe would see through a link
r = subprocess.run([odd_bin, "mcp-config", "claude"], capture_output=True, text=True)
words = shlex.split(r.stdout)
check("claude line quotes the path", r.returncode == 0 and len(words) == 9 and
      words[7] == odd_bin, r.stdout)
shutil.rmtree(odd, ignore_errors=True)

# The token form: the shell leaves ${KFORGE_TOKEN} to the client.
r = subprocess.run(["sh", "-c", 'eval "set -- $(' + shlex.quote(BIN) + ' mcp-config claude '
                    '--http http://127.0.0.1:7070/mcp --token-env KFORGE_TOKEN)"; '
                    'for a; do printf "%s\\n" "$a"; done'],
                   capture_output=True, text=True, env=dict(os.environ, KFORGE_TOKEN="s3cret"))
args = r.stdout.splitlines()
check("claude token line keeps ${KFORGE_TOKEN} through eval",
      r.returncode == 0 and "Authorization: Bearer ${KFORGE_TOKEN}" in args and
      "s3cret" not in r.stdout and args[3:6] == ["--scope", "user", "--transport"], args)
r = run("mcp-config", "claude", "--http", "http://x/mcp", "--token-env", "A B")
check("token-env must be a variable name", r.returncode == 2, (r.returncode, r.stderr))
r = run("mcp-config", "--help")
check("help never appends with >>", r.returncode == 0 and ">>" not in r.stdout and
      "--write" in r.stdout, r.stdout)

r = run("mcp-config", "codex")
try:
    cfg = tomllib.loads(r.stdout)["mcp_servers"]["kforge"]
    check("codex toml", os.path.samefile(cfg["command"], BIN) and cfg["args"] == ["serve"]
          and cfg["tool_timeout_sec"] >= 300 and cfg["startup_timeout_sec"] >= 10, cfg)
except Exception as e:  # noqa: BLE001 - any parse failure is the finding
    check("codex toml parses", False, f"{e}: {r.stdout}")

r = run("mcp-config", "codex", "--http", "http://127.0.0.1:7070/mcp", "--token-env", "KFORGE_TOKEN")
cfg = tomllib.loads(r.stdout)["mcp_servers"]["kforge"]
check("codex http toml", cfg.get("url") == "http://127.0.0.1:7070/mcp"
      and cfg.get("bearer_token_env_var") == "KFORGE_TOKEN" and "command" not in cfg, cfg)

r = run("mcp-config", "json")
cfg = json.loads(r.stdout)["mcpServers"]["kforge"]
check("mcp.json stdio", os.path.samefile(cfg["command"], BIN) and cfg["args"] == ["serve"], cfg)

r = run("mcp-config", "json", "--http", "http://127.0.0.1:7070/mcp", "--token-env", "T")
cfg = json.loads(r.stdout)["mcpServers"]["kforge"]
check("mcp.json http", cfg == {"type": "http", "url": "http://127.0.0.1:7070/mcp",
                               "headers": {"Authorization": "Bearer ${T}"}}, cfg)

for bad in (["mcp-config"], ["mcp-config", "vscode"], ["mcp-config", "codex", "--token-env", "X"],
            ["mcp-config", "json", "--http", "ftp://x"]):
    r = run(*bad)
    check(f"usage error {bad}", r.returncode == 2 and r.stderr.strip(), (r.returncode, r.stderr))

# --- mcp-config codex --write ------------------------------------------------
home = tempfile.mkdtemp(prefix="kforge-codex-home-")
env = dict(os.environ, HOME=home)
env.pop("CODEX_HOME", None)
cfgpath = os.path.join(home, ".codex", "config.toml")
r = run("mcp-config", "codex", "--write", env=env)
text1 = open(cfgpath).read() if os.path.exists(cfgpath) else ""
check("codex --write creates config.toml", r.returncode == 0 and "added" in r.stdout and
      os.path.samefile(tomllib.loads(text1)["mcp_servers"]["kforge"]["command"], BIN), (r.stdout, r.stderr))
r = run("mcp-config", "codex", "--write", env=env)
check("codex --write twice changes nothing", r.returncode == 0 and "nothing changed" in r.stdout
      and open(cfgpath).read() == text1, r.stdout)

# A file an old `>>` append broke (two tables), with the user's own lines.
mine = ('# my settings\nmodel = "o3"   # keep this spacing\n\n[mcp_servers.other]\n'
        'command = "other"\n\n')
old = '[mcp_servers.kforge]\ncommand = "/old/kforge"\nargs = ["serve"]\n\n'
with open(cfgpath, "w") as f:
    f.write(mine + old + "[profiles.fast]\nmodel = 'o4-mini'\n\n" + old)
r = run("mcp-config", "codex", "--write", "--http", "http://127.0.0.1:7070/mcp",
        "--token-env", "KFORGE_TOKEN", env=dict(env, KFORGE_TOKEN="s3cret"))
text = open(cfgpath).read()
doc = tomllib.loads(text)
check("codex --write repairs a doubled table and keeps the rest byte for byte",
      r.returncode == 0 and "with one" in r.stdout and text.startswith(mine) and
      "[profiles.fast]\nmodel = 'o4-mini'\n" in text and text.count("[mcp_servers.kforge]") == 1
      and doc["mcp_servers"]["kforge"]["url"] == "http://127.0.0.1:7070/mcp"
      and doc["mcp_servers"]["kforge"]["bearer_token_env_var"] == "KFORGE_TOKEN"
      and "command" not in doc["mcp_servers"]["kforge"] and doc["mcp_servers"]["other"]
      and "s3cret" not in text, (r.stdout, r.stderr, text))

bad = mine + '[mcp_servers.kforge\ncommand = "x"\n'
with open(cfgpath, "w") as f:
    f.write(bad)
r = run("mcp-config", "codex", "--write", env=env)
check("codex --write refuses a file that is not TOML, naming the line",
      r.returncode == 1 and "line 7" in r.stderr and "unchanged" in r.stderr and
      open(cfgpath).read() == bad, (r.returncode, r.stderr))

chome = os.path.join(home, "elsewhere")
r = run("mcp-config", "codex", "--write", env=dict(env, CODEX_HOME=chome))
check("codex --write follows CODEX_HOME", r.returncode == 0 and
      "kforge" in tomllib.loads(open(os.path.join(chome, "config.toml")).read())["mcp_servers"],
      (r.stdout, r.stderr))
r = run("mcp-config", "claude", "--write", env=env)
check("--write is only for codex", r.returncode == 2, (r.returncode, r.stderr))
shutil.rmtree(home, ignore_errors=True)

# --- SKILL.md --------------------------------------------------------------
text = open(os.path.join(SRC, "SKILL.md"), encoding="utf-8").read()
m = re.match(r"^---\n(.*?)\n---\n(.*)$", text, re.S)
check("SKILL.md has front matter", m is not None)
if m:
    fm = dict(line.split(":", 1) for line in m.group(1).splitlines() if ":" in line)
    check("front matter name", fm.get("name", "").strip() == "kforge", fm)
    desc = fm.get("description", "").strip()
    check("front matter description says when", 50 <= len(desc) <= 1024 and "Use when" in desc, desc)
    # ~4 characters per token for English prose and code: a conservative bound.
    check("SKILL.md body under 5,000 tokens", len(m.group(2)) / 4 < 5000, len(m.group(2)))
    for tool in ("get_gpu_specs", "search_guides", "compile_kernel", "check_kernel",
                 "benchmark_kernel", "compare_runs"):
        check(f"SKILL.md names {tool}", tool in m.group(2))

# --- skill install ---------------------------------------------------------
with tempfile.TemporaryDirectory() as tmp:
    env = dict(os.environ, HOME=os.path.join(tmp, "home"))
    os.makedirs(env["HOME"])
    proj = os.path.join(tmp, "proj")
    os.makedirs(proj)
    for flag, where in (("--claude", ".claude/skills/kforge"), ("--codex", ".codex/skills/kforge"),
                        ("--agents", ".agents/skills/kforge")):
        r = run("skill", "install", flag, cwd=proj, env=env)
        dest = os.path.join(proj, where)
        check(f"install {flag}", r.returncode == 0 and os.path.isfile(os.path.join(dest, "SKILL.md"))
              and os.path.isdir(os.path.join(dest, "skill", "templates")), (r.returncode, r.stderr))
        r = run("skill", "install", flag, "--global", cwd=proj, env=env)
        check(f"install {flag} --global", r.returncode == 0
              and os.path.isfile(os.path.join(env["HOME"], where, "SKILL.md")), r.stderr)
    dest = os.path.join(proj, ".claude/skills/kforge")
    installed = open(os.path.join(dest, "SKILL.md"), encoding="utf-8").read()
    check("installed SKILL.md is the source", installed == text)
    r = run("skill", "install", "--claude", cwd=proj, env=env)
    check("reinstall over an unchanged copy", r.returncode == 0, r.stderr)
    with open(os.path.join(dest, "SKILL.md"), "a", encoding="utf-8") as f:
        f.write("\nmy own note\n")
    r = run("skill", "install", "--claude", cwd=proj, env=env)
    check("refuses to overwrite a changed copy", r.returncode != 0 and "changed" in r.stderr, r.stderr)
    check("changed copy kept", "my own note" in open(os.path.join(dest, "SKILL.md"), encoding="utf-8").read())
    r = run("skill", "install", "--claude", "--force", cwd=proj, env=env)
    check("--force overwrites", r.returncode == 0 and open(os.path.join(dest, "SKILL.md"),
                                                            encoding="utf-8").read() == text, r.stderr)
    other = os.path.join(tmp, "other")
    os.makedirs(other)
    open(os.path.join(other, "SKILL.md"), "w", encoding="utf-8").write("someone else's skill\n")
    r = run("skill", "install", "--dest", other, env=env)
    check("refuses a folder it did not install", r.returncode != 0, r.stderr)
    r = run("skill", "install", "--dest", os.path.join(tmp, "fresh"), env=env)
    check("--dest installs exactly there", r.returncode == 0
          and os.path.isfile(os.path.join(tmp, "fresh", "SKILL.md")), r.stderr)

# --- the worked examples' specs (source_file inlined by the CLI) -------------
with tempfile.TemporaryDirectory() as tmp:
    for spec in ("qwen3-rmsnorm/check.json", "qwen3-rmsnorm/plain.json", "diffusers-geglu/check.json"):
        r = run("check", os.path.join(SRC, "skill/examples", spec), "--data-dir", tmp)
        if os.path.exists("/dev/nvidiactl"):
            check(f"example {spec} passes", r.returncode == 0, r.stdout + r.stderr)
        else:  # the spec and its source file were accepted; only the GPU is missing
            check(f"example {spec} reaches the GPU step", r.returncode == 3 and "no usable GPU" in r.stderr,
                  (r.returncode, r.stderr))
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        json.dump({"op": "rmsnorm", "dtype": "bf16", "source_file": "missing.cu"}, f)
    r = run("check", bad, "--data-dir", tmp)
    check("missing source_file named", r.returncode == 1 and "source_file" in r.stderr
          and "missing.cu" in r.stderr, (r.returncode, r.stderr))
    with open(bad, "w") as f:
        json.dump({"op": "rmsnorm", "dtype": "bf16", "source": "x", "source_file": "k.cu"}, f)
    r = run("check", bad, "--data-dir", tmp)
    check("source and source_file refused together", r.returncode == 1 and "not both" in r.stderr, r.stderr)

# --- built-in ops and their starting specs --------------------------------
r = run("ops", "--names")
ops = r.stdout.split()
check("ops --names", r.returncode == 0 and "rmsnorm" in ops and "gemm" in ops and len(ops) >= 15, r.stdout)
with tempfile.TemporaryDirectory() as tmp:
    for op in ops:
        r = run("ops", op)
        try:
            spec = json.loads(r.stdout)
        except ValueError:
            check(f"ops {op} prints JSON", False, r.stdout[:300])
            continue
        kernels = [lk["kernel"] for lk in spec["launch"]]
        check(f"ops {op} skeleton matches its launch", spec["op"] == op
              and all(k.startswith("my_") and f"void {k}(" in spec["source"] for k in kernels), spec)
        tpl = json.loads(run("ops", op, "--template").stdout)
        if any("when" in lk for lk in tpl["baseline"]["launch"]):
            # the baseline picks between kernels by "when"; a start is one
            check(f"ops {op} starts from its general kernel alone",
                  kernels == [f"my_{op}_bf16"] and "when" not in spec["launch"][0], spec["launch"])
        path = os.path.join(tmp, f"{op}.json")
        with open(path, "w") as f:
            f.write(r.stdout)
        r = run("check", path, "--data-dir", tmp)
        if not os.path.exists("/dev/nvidiactl"):  # valid spec, compiled; only the GPU is missing
            check(f"ops {op} spec is valid", r.returncode == 3, (r.returncode, r.stderr))
    for gen in ("rmsnorm.json", "gemm.json", "README.md"):
        check(f"skill/templates/specs/{gen} generated",
              os.path.isfile(os.path.join(SRC, "skill/templates/specs", gen)))
r = run("ops", "gemm", "--dtype", "f32")
check("ops refuses a dtype the op lacks", r.returncode == 2 and "f32" in r.stderr, r.stderr)
r = run("ops", "no_such_op")
check("ops unknown name", r.returncode == 4, r.returncode)

# --- make install: the installed binary finds its knowledge base and skill --
with tempfile.TemporaryDirectory() as tmp:
    r = subprocess.run(["make", "-s", "-C", SRC, "install", f"PREFIX={tmp}/usr"], capture_output=True,
                       text=True, timeout=600)
    check("make install", r.returncode == 0, r.stderr[-1500:])
    kf = os.path.join(tmp, "usr/bin/kforge")
    # Its own HOME: the user's data dir may hold a state.db of another build.
    home_env = dict(os.environ, HOME=os.path.join(tmp, "home"))
    home_env.pop("XDG_DATA_HOME", None)
    r = subprocess.run([kf, "gpu", "h200", "--json"], capture_output=True, text=True, timeout=60,
                       env=home_env)
    check("installed kforge finds knowledge.db", r.returncode == 0 and '"h200"' in r.stdout, r.stderr)
    r = subprocess.run([kf, "skill", "install", "--dest", os.path.join(tmp, "sk")], capture_output=True,
                       text=True, timeout=60, env=dict(home_env, KFORGE_SKILL_DIR=""))
    check("installed kforge installs the skill", r.returncode == 0
          and os.path.isfile(os.path.join(tmp, "sk/skill/templates/kernel-builder/build.toml")), r.stderr)

# --- workflow prompts over a real stdio session ----------------------------
def mcp_session(*requests):
    msgs = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "proto_setup", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    msgs += [{"jsonrpc": "2.0", "id": i + 1, "method": m, "params": p} for i, (m, p) in enumerate(requests)]
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([BIN, "serve", "--data-dir", tmp], input="".join(json.dumps(m) + "\n" for m in msgs),
                           capture_output=True, text=True, timeout=120)
    out = {}
    for line in r.stdout.splitlines():
        m = json.loads(line)
        if "id" in m:
            out[m["id"]] = m
    return out


res = mcp_session(
    ("prompts/list", {}),
    ("prompts/get", {"name": "optimize-kernel", "arguments": {"op": "silu_and_mul", "gpu": "h200"}}),
    ("prompts/get", {"name": "optimize-kernel", "arguments": {"op": "rmsnorm", "run": "r-not-a-run"}}),
    ("prompts/get", {"name": "integrate-kernel", "arguments": {"op": "rmsnorm", "framework": "transformers"}}),
    ("prompts/get", {"name": "integrate-kernel", "arguments": {"op": "geglu", "framework": "diffusers"}}),
    ("prompts/get", {"name": "integrate-kernel", "arguments": {"op": "rmsnorm", "framework": "jax"}}),
    ("prompts/get", {"name": "optimize-kernel", "arguments": {}}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "integrate-kernel"},
                             "argument": {"name": "framework", "value": "tr"}}),
)
text = lambda i: res[i]["result"]["messages"][0]["content"]["text"]  # noqa: E731
names = [p["name"] for p in res[1]["result"]["prompts"]]
check("prompts listed", {"write-kernel", "optimize-kernel", "integrate-kernel"} <= set(names), names)
check("optimize-kernel links the op's guide once", text(2).count("kforge://guides/gated-activations") == 1
      and "compare_runs" in text(2), text(2))
check("optimize-kernel says an unknown run is unknown", "was not found" in text(3), text(3))
check("integrate-kernel for transformers", "variance_epsilon" in text(4)
      and "kforge://guides/transformers-integration" in text(4) and "register_fake" in text(4), text(4))
check("integrate-kernel for diffusers", "second half" in text(5) and "offload" in text(5), text(5))
check("unknown framework refused", res[6].get("error", {}).get("code") == -32602
      and "jax" in res[6]["error"]["message"], res[6])
check("missing op refused", res[7].get("error", {}).get("code") == -32602, res[7])
check("framework completion", res[8]["result"]["completion"]["values"] == ["transformers"], res[8])

# --- demo ------------------------------------------------------------------
with tempfile.TemporaryDirectory() as tmp:
    r = run("demo", "--data-dir", tmp, timeout=600)
    steps = re.findall(r"^== (\d+)\.", r.stdout, re.M)
    check("demo completes", r.returncode == 0 and len(steps) >= 9, (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    for tool in ("get_gpu_specs", "search_guides", "read_guide", "compile_kernel", "check_kernel",
                 "benchmark_kernel", "list_runs"):
        check(f"demo calls {tool}", f"tools/call {tool}" in r.stdout)
    if not os.path.exists("/dev/nvidiactl"):
        check("demo shows no_gpu for GPU steps", r.stdout.count("no usable GPU") + r.stdout.count("no GPU") >= 2,
              r.stdout[-1500:])

sys.exit(CHECKS.summary("proto_setup"))
