#!/bin/bash
# session 9 lease 11: the final code: GPU suite and the table
. .debs/setup.sh >/dev/null 2>&1
B=build/gpu-kernels
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $OUT/gpu.txt 2>&1
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/tc9 KF_LIB=$B/libkfk.so
BENCH_ITERS=100 BENCH_BUDGET_S=400 BENCH_MD=$OUT/bench.md BENCH_JSON=$OUT/bench.json \
  timeout -s KILL 200 python3 kernels/bench/bench.py > $OUT/bench.log 2>&1
echo "table rc=$? at $(el) s"; grep -c MISMATCH $OUT/bench.log; grep "| gemm |" $OUT/bench.md
timeout -s KILL 120 python3 tests/gpu/run.py > $OUT/gpu-suite.txt 2>&1
echo "gpu suite rc=$? at $(el) s"; tail -1 $OUT/gpu-suite.txt
