#!/usr/bin/env python3
"""kforge source checker (make lint), in the spirit of curl's checksrc.

usage: checksrc.py [--root DIR] [--makefile FILE] [--allow FILE] [--libdir DIR]
                   [--no-link] [FILE...]

Rules (each finding is "path:line: rule: message"):
  include  every #include "..." is root-relative, has no ../, and exists
  layer    a module includes only itself, its DEPS_* closure (Makefile), and
           the extras below; knowledge/ sandbox/ kernels/ base/ never include
           server/; sandbox/harness and sandbox/compile/nvrtc include only
           base/, kernels/ and their own folder; server/ may include app.h
  link     every undefined symbol of build/libkf_M.a that another kforge
           library defines comes from M's DEPS closure (nm)
  history  no run/lease/issue/session history in comments
  funclen  no function body over 120 lines; filelen: no file over 1000 lines
  prefix   exported functions carry their file/folder name as prefix
tests/lint/allow.txt lists known findings as "rule path[:name]"; an allow
line that no longer matches is reported too, so the list only shrinks.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

FUNC_MAX = 120
FILE_MAX = 1000
SCAN_DIRS = ["base", "server", "sandbox", "knowledge", "kernels", "tests"]
EXTS = (".c", ".h", ".cu", ".cuh")
HISTORY_RES = [re.compile(p, re.I) for p in (
    r"\brun ?#?[0-9]+\b", r"\blease ?#?[0-9]+", r"\bleases\b",
    r"\bissue ?#?[0-9]+", r"\bsession ?#?[0-9]+")]
EXPORT_DIRS = ("base/", "sandbox/", "knowledge/", "server/")
LENGTH_DIRS = ("base/", "server/", "sandbox/", "knowledge/")

findings = []


def report(rule, path, line, key, msg):
    findings.append((rule, path, line, key, msg))


def parse_makefile(path):
    text = open(path).read().replace("\\\n", " ")
    var = {}
    for m in re.finditer(r"^([A-Za-z_][A-Za-z0-9_]*)\s*:?=(.*)$", text, re.M):
        var[m.group(1)] = m.group(2).strip()
    modules = var["MODULES"].split()
    deps = {m: var.get("DEPS_" + m, "").split() for m in modules}
    # kforge-harness is a program, not a module library: DEPS_HARNESS names
    # the modules it links (and so may include).
    deps["HARNESS"] = var.get("DEPS_HARNESS", "").split()
    dirs = {}
    for m in modules:
        src = var.get("SRC_" + m, "")
        pats = re.findall(r"[\w./*-]+\.c\b", src)
        pats = [p for p in pats if not p.startswith("$")]
        excl = set(re.findall(r"filter-out\s+([\w./-]+)", src))
        dirs[m] = sorted({os.path.dirname(p) if "*" in p else p
                          for p in pats if p not in excl})
    return modules, deps, dirs


def closure(m, deps):
    seen, todo = set(), list(deps.get(m, []))
    while todo:
        d = todo.pop()
        if d not in seen:
            seen.add(d)
            todo += deps.get(d, [])
    return seen


def module_of(path, dirs):
    """The module owning path (a file in dir D or a header next to it)."""
    best, blen = None, -1
    d = os.path.dirname(path)
    stem = os.path.splitext(path)[0]
    for m, ds in dirs.items():
        for x in ds:
            if x.endswith(".c"):
                hit = stem == os.path.splitext(x)[0]
                ln = len(x)
            else:
                hit = d == x
                ln = len(x)
            if hit and ln > blen:
                best, blen = m, ln
    return best


def strip_code(text):
    """(comments, code): comment text keyed by line, code with comments and
    strings blanked (newlines kept)."""
    out, comments = [], {}
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            seg = text[i:j]
            for k, part in enumerate(seg.split("\n")):
                comments.setdefault(line + k, []).append(part)
            out.append(re.sub(r"[^\n]", " ", seg))
            line += seg.count("\n")
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            comments.setdefault(line, []).append(text[i:j])
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            seg = text[i:j + 1]
            out.append(c + re.sub(r"[^\n]", " ", seg[1:-1]) + c if len(seg) > 1 else seg)
            line += seg.count("\n")
            i = j + 1
        else:
            if c == "\n":
                line += 1
            out.append(c)
            i += 1
    return comments, "".join(out)


INC_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def check_includes(path, text, root, modules, deps, dirs):
    mod = module_of(path, dirs)
    top = path.split("/")[0]
    special = None
    if path.startswith("sandbox/harness/") or path.startswith("sandbox/compile/nvrtc/"):
        special = os.path.dirname(path)
    for m in INC_RE.finditer(text):
        inc = m.group(1)
        ln = text.count("\n", 0, m.start()) + 1
        if "../" in inc or inc.startswith("./"):
            report("include", path, ln, inc, f'relative include "{inc}"')
            continue
        if not os.path.isfile(os.path.join(root, inc)):
            report("include", path, ln, inc, f'"{inc}" is not a root-relative existing file')
            continue
        if special is not None:
            linked = closure("HARNESS", deps) if special == "sandbox/harness" else set()
            if not (inc.startswith("base/") or inc.startswith("kernels/")
                    or os.path.dirname(inc) == special
                    or module_of(inc, dirs) in linked):
                report("layer", path, ln, inc,
                       f'{special} may include only base/, kernels/, its own folder'
                       f' and DEPS_HARNESS (harness only), not "{inc}"')
            continue
        if top in ("knowledge", "sandbox", "kernels", "base") and inc.startswith("server/"):
            report("layer", path, ln, inc, f'{top}/ never includes server/ ("{inc}")')
            continue
        if mod is None:
            continue
        if top == "server" and inc == "server/app.h":
            continue
        tm = module_of(inc, dirs)
        if tm is None or tm == mod:
            continue
        if tm not in closure(mod, deps):
            report("layer", path, ln, inc,
                   f'module {mod} includes "{inc}" of module {tm}, not in DEPS_{mod}')


def check_history(path, comments):
    for ln in sorted(comments):
        for part in comments[ln]:
            for r in HISTORY_RES:
                mm = r.search(part)
                if mm:
                    report("history", path, ln, None,
                           f'history in a comment: "{mm.group(0)}"')
                    break


FUNC_HEAD_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\([^;{}]*\)\s*$", re.S)


def functions(code):
    """(name, start line, body length, static) for each function whose
    body opens and closes with a brace at column 0."""
    lines = code.split("\n")
    res = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("{"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("}"):
                j += 1
            head = "\n".join(lines[max(0, i - 8):i])
            # the declarator: text after the last ; } or preprocessor line
            chunk = re.split(r"[;}]|^\s*#.*$", head, flags=re.M)[-1]
            mm = FUNC_HEAD_RE.search(chunk)
            if mm and not re.search(r"=\s*$|\b(struct|enum|union)\s+\w*\s*$",
                                    chunk.split("(")[0]):
                name = mm.group(1)
                pre = chunk[:mm.start()]
                static = re.search(r"\bstatic\b", pre) is not None
                res.append((name, i + 1, j - i + 1, static, pre))
            i = j + 1
        else:
            i += 1
    return res


def prefixes_for(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    folder = os.path.basename(os.path.dirname(path))
    ps = {stem, folder}
    ps |= {stem.split("_")[0]}
    if folder == "knowledge":
        ps.add("kb")
    return ps


def check_c(path, text, code):
    nlines = text.count("\n")
    if path.startswith(LENGTH_DIRS) and nlines > FILE_MAX:
        report("filelen", path, 1, None, f"{nlines} lines (max {FILE_MAX})")
    for name, ln, length, static, pre in functions(code):
        if name in ("if", "for", "while", "switch", "return", "sizeof"):
            continue
        if path.startswith(LENGTH_DIRS) and length > FUNC_MAX:
            report("funclen", path, ln, name, f"{name}: {length} lines (max {FUNC_MAX})")
        if (not static and path.endswith(".c") and path.startswith(EXPORT_DIRS)
                and name != "main" and not path.startswith("sandbox/harness/")
                and not path.startswith("sandbox/compile/nvrtc/")):
            if not any(name == p or name.startswith(p + "_") for p in prefixes_for(path)):
                report("prefix", path, ln, name,
                       f"exported {name} lacks a prefix of {sorted(prefixes_for(path))}")


def check_link(libdir, modules, deps):
    defined, undef = {}, {}
    for m in modules:
        lib = os.path.join(libdir, f"libkf_{m}.a")
        if not os.path.isfile(lib):
            report("link", lib, 0, None, "library missing (build it first)")
            continue
        out = subprocess.run(["nm", "-g", lib], capture_output=True, text=True).stdout
        u = set()
        for l in out.splitlines():
            f = l.split()
            if len(f) == 2 and f[0] == "U":
                u.add(f[1])
            elif len(f) == 3 and f[1] in "TDBRVWCG" and f[1] != "U":
                defined.setdefault(f[2], m)
        undef[m] = u
    for m, u in undef.items():
        ok = closure(m, deps) | {m}
        for s in sorted(u):
            d = defined.get(s)
            if d and d not in ok:
                report("link", f"build/libkf_{m}.a", 0, s,
                       f"{m} uses {s} from {d}, not in DEPS_{m}")


def load_allow(path):
    allow = {}
    if not path or not os.path.isfile(path):
        return allow
    for n, l in enumerate(open(path), 1):
        l = l.split("#", 1)[0].strip()
        if l:
            allow[l] = n
    return allow


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=".")
    ap.add_argument("--makefile")
    ap.add_argument("--allow")
    ap.add_argument("--libdir", default="build")
    ap.add_argument("--no-link", action="store_true")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    root = a.root
    modules, deps, dirs = parse_makefile(a.makefile or os.path.join(root, "Makefile"))
    files = a.files
    if not files:
        try:
            out = subprocess.run(["git", "-C", root, "ls-files", "--"] + SCAN_DIRS,
                                 capture_output=True, text=True, check=True).stdout
            files = out.split()
        except (OSError, subprocess.CalledProcessError):
            files = [os.path.relpath(p, root) for d in SCAN_DIRS
                     for p in glob.glob(os.path.join(root, d, "**", "*"), recursive=True)]
    files = sorted(f for f in files if f.endswith(EXTS)
                   and not f.startswith("tests/lint/fixtures/"))
    for f in files:
        full = os.path.join(root, f)
        if not os.path.isfile(full):
            continue
        text = open(full, errors="replace").read()
        comments, code = strip_code(text)
        check_includes(f, text, root, modules, deps, dirs)
        check_history(f, comments)
        if f.endswith((".c", ".cu")):
            check_c(f, text, code)
    if not a.no_link:
        check_link(os.path.join(root, a.libdir), modules, deps)
    allow = load_allow(a.allow)
    used = set()
    bad = 0
    for rule, path, line, key, msg in findings:
        ks = [f"{rule} {path}"] + ([f"{rule} {path}:{key}"] if key else [])
        hit = [k for k in ks if k in allow]
        if hit:
            used.update(hit)
            continue
        print(f"{path}:{line}: {rule}: {msg}")
        bad += 1
    for k, n in allow.items():
        if k not in used and not a.files:
            print(f"{a.allow}:{n}: allow: stale entry '{k}' (fixed? remove it)")
            bad += 1
    if bad:
        print(f"checksrc: {bad} finding(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
