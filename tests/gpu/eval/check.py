#!/usr/bin/env python3
"""check.py RESULTS CHEATS EXPORT SOURCES [FILTERED]: the expectations of
tests/gpu/eval.sh.

RESULTS: the `kforge eval run --out` files (ref-*.json: the reference
solutions, every task must be correct; skill-*.json: the skill's RMSNorm
posing as rmsnorm_bf16, must be correct; cheats.json: every cheat must be
scored failed as CHEATS/expect.json says). EXPORT: the `kforge dataset
export` directory of the same history: it must load (pandas and pyarrow
where installed, always the json module) and hold exactly the correct
solutions' sources, none of the cheats' (SOURCES: the solutions directory
of each result file, "NAME DIR" a line). FILTERED: the export with
--gpu H200 --min-speedup 1. Prints one ok/FAIL/SKIP line per
expectation and a last summary line; exits 1 on any FAIL.
"""
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
counts = {"ok": 0, "FAIL": 0, "SKIP": 0}


def line(kind, what):
    counts[kind] += 1
    print("%-4s eval-gpu: %s" % (kind, what))


def norm(src):
    """The export's deduplication key, loosely: no comments, no blanks."""
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    src = re.sub(r"//[^\n]*", "", src)
    return re.sub(r"\s+", "", src)


def tasks_of(path):
    out = {}
    for f in sorted(glob.glob(os.path.join(path, "*.json"))):
        for t in json.load(open(f))["tasks"]:
            out[t["id"]] = t
    return out


def rows_of(files):
    rows = {}
    for f in files:
        try:
            for r in json.load(open(f))["results"]:
                rows[r["id"]] = r
        except (OSError, ValueError, KeyError) as e:
            line("FAIL", "%s: no eval result (%s)" % (os.path.basename(f), e))
    return rows


def check_ref(results):
    tasks = tasks_of(os.path.join(ROOT, "kernels", "eval"))
    rows = rows_of(sorted(glob.glob(os.path.join(results, "ref-*.json"))))
    torch_ids = [i for i, t in tasks.items() if "torch" in t["reference"]]
    bad = []
    for i in tasks:
        r = rows.get(i)
        if not r:
            bad.append(i)
            line("FAIL", "task %s: not scored (its eval run did not finish?)" % i)
        elif not r.get("correct"):
            bad.append(i)
            line("FAIL", "task %s: reference solution scored failed: %s" % (i, (r.get("reason") or "")[:400]))
    n = len(tasks)
    line("ok" if not bad else "FAIL", "reference solutions: %d of %d tasks correct" % (n - len(bad), n))
    tc = sum(1 for i in torch_ids if rows.get(i, {}).get("correct"))
    nt = sum(1 for i in torch_ids if "torch not available" in (rows.get(i, {}).get("reason") or ""))
    line("ok" if tc == len(torch_ids) else "FAIL",
         "torch-referenced tasks on real PyTorch: %d of %d correct (%d without torch)" % (tc, len(torch_ids), nt))
    ops = [i for i, t in tasks.items() if "op" in t["reference"]]
    sp = {i: rows[i].get("speedup") for i in ops if rows.get(i, {}).get("correct")}
    fast = {p: sum(1 for v in sp.values() if isinstance(v, (int, float)) and v >= p) for p in (1, 1.5, 2)}
    print("info eval-gpu: op tasks against kforge's kernels: %d of %d correct; fast_1 %d, fast_1.5 %d, fast_2 %d;"
          " speedups %s" % (len(sp), len(ops), fast[1], fast[1.5], fast[2],
                            ", ".join("%s %.2f" % (k, v) for k, v in sorted(sp.items()) if isinstance(v, (int, float)))))
    return rows


def check_skill(results):
    files = sorted(glob.glob(os.path.join(results, "skill-*.json")))
    for f in files:
        for r in json.load(open(f)).get("results", []):
            name = os.path.basename(f)[len("skill-"):-len(".json")]
            line("ok" if r.get("correct") else "FAIL", "skill example %s as %s: %s, speedup %s" % (
                name, r["id"], "correct" if r.get("correct") else (r.get("reason") or "")[:300], r.get("speedup")))
    if not files:
        line("FAIL", "the skill examples were not scored")
    return files


def check_cheats(results, cheats):
    expect = json.load(open(os.path.join(cheats, "expect.json")))
    rows = rows_of([os.path.join(results, "cheats.json")])
    caught = 0
    for i, e in sorted(expect.items()):
        r = rows.get(i)
        if not r:
            line("FAIL", "cheat %s: not scored" % i)
            continue
        why = r.get("reason") or ""
        problems = []
        if r.get("correct"):
            problems.append("scored correct")
        if e.get("safeguard") and e["safeguard"] not in (r.get("safeguards") or []):
            problems.append("safeguard %s not named (safeguards: %s)" % (e["safeguard"], r.get("safeguards")))
        if e.get("flag") and e["flag"] not in (r.get("flags") or {}):
            problems.append("flag %s missing" % e["flag"])
        if e["reason"] not in why:
            problems.append("reason lacks '%s'" % e["reason"])
        if problems:
            line("FAIL", "cheat %s: %s: %s" % (i, "; ".join(problems), why[:300]))
        else:
            caught += 1
            line("ok", "cheat %s caught: %s" % (i, (e.get("safeguard") or e.get("flag"))))
    line("ok" if caught == len(expect) else "FAIL", "cheats caught: %d of %d" % (caught, len(expect)))
    srcs = set()
    for f in glob.glob(os.path.join(cheats, "sol", "*.cu")):
        srcs.add(norm(open(f).read()))
    return srcs


def load_export(export):
    path = os.path.join(export, "data", "kernels.jsonl")
    recs = []
    try:
        recs = [json.loads(l) for l in open(path) if l.strip()]
        line("ok", "export read with the json module: %d records" % len(recs))
    except (OSError, ValueError) as e:
        line("FAIL", "export %s: %s" % (path, e))
        return recs
    try:
        import pandas as pd
        df = pd.read_json(path, lines=True)
        good = len(df) == len(recs) and {"id", "source", "task"} <= set(df.columns)
        line("ok" if good else "FAIL", "pandas %s read_json(lines=True): %d rows, %d columns" % (
            pd.__version__, len(df), len(df.columns)))
    except ImportError:
        line("SKIP", "pandas is not installed here: not loaded with pandas")
    except Exception as e:  # a load failure is the finding
        line("FAIL", "pandas could not load the export: %s" % e)
    try:
        import pyarrow
        import pyarrow.json as pj
        tb = pj.read_json(path)
        good = tb.num_rows == len(recs) and "source" in tb.column_names
        line("ok" if good else "FAIL", "pyarrow %s json.read_json: %d rows, %d columns" % (
            pyarrow.__version__, tb.num_rows, tb.num_columns))
    except ImportError:
        line("SKIP", "pyarrow is not installed here: not loaded with pyarrow")
    except Exception as e:
        line("FAIL", "pyarrow could not load the export: %s" % e)
    try:
        import datasets
        ds = datasets.load_dataset(export)
        n = sum(len(v) for v in ds.values())
        line("ok" if n == len(recs) else "FAIL", "datasets %s load_dataset(DIR): %d rows" % (datasets.__version__, n))
    except ImportError:
        line("SKIP", "datasets is not installed here: not loaded with load_dataset")
    except Exception as e:
        line("FAIL", "datasets could not load the export: %s" % str(e)[:300])
    card = os.path.join(export, "README.md")
    ok = os.path.exists(card) and open(card).read().startswith("---\n")
    line("ok" if ok else "FAIL", "dataset card README.md with a YAML header")
    try:
        import jsonschema
        schema = json.load(open(os.path.join(export, "schema.json")))
        for r in recs:
            jsonschema.validate(r, schema)
        line("ok", "every record validates against schema.json (jsonschema)")
    except ImportError:
        line("SKIP", "jsonschema is not installed here: records not validated against schema.json")
    except Exception as e:
        line("FAIL", "schema.json validation: %s" % str(e)[:300])
    return recs


def check_export(export, results, sources, cheat_srcs):
    recs = load_export(export)
    want = {}
    for name, d in sources.items():
        f = os.path.join(results, name + ".json")
        if name == "cheats":
            continue
        if not os.path.exists(f):
            continue
        for r in json.load(open(f)).get("results", []):
            if r.get("correct"):
                want.setdefault(norm(open(os.path.join(d, r["id"] + ".cu")).read()), r["id"])
    got = {norm(r.get("source", "")): r for r in recs}
    missing = [v for k, v in want.items() if k not in got]
    extra = [r.get("id") for k, r in got.items() if k not in want]
    leaked = [r.get("id") for k, r in got.items() if k in cheat_srcs]
    line("ok" if not missing and not extra and len(recs) == len(want) else "FAIL",
         "export holds exactly the correct solutions: %d records, %d expected; missing %s; unexpected %s" % (
             len(recs), len(want), missing[:10], extra[:10]))
    line("ok" if not leaked else "FAIL", "no cheat in the export (%d cheat sources looked for): %s" % (
        len(cheat_srcs), leaked or "none"))


def check_filtered(export):
    """The README's command: --gpu H200 --min-speedup 1 keeps only records
    of that GPU at least as fast as their baseline."""
    recs = [json.loads(l) for l in open(os.path.join(export, "data", "kernels.jsonl")) if l.strip()]
    def fast(r):
        sp = (r.get("benchmark") or {}).get("speedup")
        return isinstance(sp, (int, float)) and sp >= 1
    bad = [r["id"] for r in recs if "H200" not in ((r.get("gpu") or {}).get("name") or "").upper() or not fast(r)]
    line("ok" if not bad else "FAIL", "export --gpu H200 --min-speedup 1: %d records, all H200 and >= 1x%s" % (
        len(recs), "" if not bad else "; not: %s" % bad[:10]))


def main():
    results, cheats, export, srcfile = sys.argv[1:5]
    sources = {}
    for l in open(srcfile):
        if l.strip():
            name, d = l.split(None, 1)
            sources[name] = d.strip()
    check_ref(results)
    check_skill(results)
    cheat_srcs = check_cheats(results, cheats)
    check_export(export, results, sources, cheat_srcs)
    if len(sys.argv) > 5:
        check_filtered(sys.argv[5])
    print("eval-gpu summary: %d ok, %d FAIL, %d SKIP" % (counts["ok"], counts["FAIL"], counts["SKIP"]))
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
