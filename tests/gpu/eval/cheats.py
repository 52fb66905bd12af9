#!/usr/bin/env python3
"""cheats.py OUT: the cheat suite (tests/gpu/cheats/*.json) as an eval task
set and solutions posing as answers, for `kforge eval run`.

Each cheat's spec without its source and launch becomes a task
(OUT/tasks/cheats.json; the reference and baseline stay the suite's plain
CUDA kernels); its kernel and launch become the solution (OUT/sol/ID.cu,
OUT/sol/ID.json). OUT/expect.json says how each must be caught: the
safeguard that must fire and words of the reason, or (zeros_tiny, whose
tiny reference a kernel writing zeros passes) the weak_reference flag that
makes the eval score it failed.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import run  # noqa: E402  (tests/gpu/run.py: load_spec inlines file: sources)


def main(out):
    os.makedirs(os.path.join(out, "tasks"), exist_ok=True)
    os.makedirs(os.path.join(out, "sol"), exist_ok=True)
    cheats = os.path.join(os.path.dirname(HERE), "cheats")
    tasks, expect = [], {}
    for name in sorted(os.listdir(cheats)):
        if not name.endswith(".json"):
            continue
        spec, exp, _ = run.load_spec(os.path.join(cheats, name))
        tid = "cheat_" + name[:-5]
        src, launch = spec.pop("source"), spec.pop("launch")
        tasks.append({"id": tid, "level": 1,
                      "description": "The cheat suite's %s kernel posing as a solution." % name[:-5],
                      "math": "as the reference kernel computes it",
                      "reference": {"source": spec["reference"]["source"],
                                    "launch": spec["reference"]["launch"]},
                      "spec": spec,
                      "baseline": {"kind": "source", "why": "the plain reference kernel"}})
        open(os.path.join(out, "sol", tid + ".cu"), "w").write(src)
        json.dump({"launch": launch, "notes": "a cheat: must be scored failed"},
                  open(os.path.join(out, "sol", tid + ".json"), "w"))
        if exp.get("flag"):
            expect[tid] = {"flag": exp["flag"], "reason": "weak reference"}
        else:
            expect[tid] = {"safeguard": exp["safeguard"], "reason": exp["summary"]}
    json.dump({"about": "the cheat suite as eval tasks (tests/gpu/eval/cheats.py)",
               "tasks": tasks}, open(os.path.join(out, "tasks", "cheats.json"), "w"), indent=1)
    json.dump(expect, open(os.path.join(out, "expect.json"), "w"), indent=1)
    print("%d cheats as eval tasks in %s" % (len(tasks), out))


if __name__ == "__main__":
    main(sys.argv[1])
