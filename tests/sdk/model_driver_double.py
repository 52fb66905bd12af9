#!/usr/bin/env python3
"""Test double of sandbox/model/model_bench.py for the protocol tour (the
model counterpart of tests/gpu/mock_cuda.c): no torch, no GPU. It reads the
job benchmark_model wrote and answers in the driver's result format, every
latency 1.0 ms, so the daemon's side (job, jail run, result, summary, run
record, outputSchema) is exercised on a host without a GPU. Its figures are
placeholders, never measurements."""
import json
import sys

job = json.load(open(sys.argv[1]))
rows = []
for s in job["shapes"]:
    name = f"{s['kind']} {s['batch']}x{s.get('seq', 1)}"
    for mode in ("eager", "patched"):
        rows.append({"shape": name, "mode": mode, "median_ms": 1.0, "ci_ms": [1.0, 1.0],
                     "n": job["iters"]})
res = {"recipe": job["recipe"], "dims": job["dims"], "patch": job["patch"], "latency": rows,
       "test_double": True}
with open(sys.argv[2], "w") as f:
    json.dump(res, f)
