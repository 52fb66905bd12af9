#!/usr/bin/env python3
"""PyTorch CUDA-event timing of y.copy_(x) for N bytes, timed like kforge's
harness: warm-up, L2 flushed (a 2x-L2 buffer written) before each timed
copy, outside the timed region; prints the median in microseconds."""
import json
import statistics
import sys

import torch

n = int(sys.argv[1]) // 4
x = torch.randn(n, device="cuda")
y = torch.empty_like(x)
l2 = torch.cuda.get_device_properties(0).L2_cache_size
flush = torch.empty(2 * l2 // 4, dtype=torch.float32, device="cuda")
for _ in range(20):
    y.copy_(x)
torch.cuda.synchronize()
times = []
for i in range(300):
    flush.fill_(float(i))
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    a.record()
    y.copy_(x)
    b.record()
    b.synchronize()
    times.append(a.elapsed_time(b) * 1e3)
print(json.dumps({"median_us": statistics.median(times), "count": len(times),
                  "torch": torch.__version__}))
