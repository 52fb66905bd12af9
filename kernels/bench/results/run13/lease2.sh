#!/bin/bash
# session 9 lease 2: two-row layernorm adopted: kernels_test, GPU suite, kforge check/bench of the layernorm template, trace, the table
. .debs/setup.sh >/dev/null 2>&1
B=build/gpu-kernels
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $OUT/gpu.txt 2>&1
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/tc9 KF_LIB=$B/libkfk.so
{ build/kforge check build/s9/ln.json --data-dir /tmp/kfd; echo "check rc=$?"
  for i in 0 1 2; do build/kforge bench build/s9/ln.json --size $i --budget-ms 500 --data-dir /tmp/kfd; echo "rc=$?"; done; } > $OUT/kforge-layernorm.txt 2>&1
echo "kforge at $(el) s"; grep -i "vs baseline\|rc=\|passed\|baseline\|2rows" $OUT/kforge-layernorm.txt | head -20
BENCH_AB_LIBS="new=$B/libkfk.so unity=$B/libkfk_ab1.so base=$B/libkfk_base.so" BENCH_AB_ITERS=200 BENCH_TRACE='layernorm' \
  timeout 120 python3 kernels/bench/bench.py > $OUT/trace.log 2>&1
echo "trace rc=$? at $(el) s"; grep "^#  \|^# trace" $OUT/trace.log | cut -c1-70,100-190
BENCH_ITERS=100 BENCH_BUDGET_S=400 BENCH_MD=$OUT/bench.md BENCH_JSON=$OUT/bench.json \
  timeout 200 python3 kernels/bench/bench.py > $OUT/bench.log 2>&1
echo "table rc=$? at $(el) s"; grep -v gemm $OUT/bench.md | cut -d'|' -f2-4,5,7,10,11,12
timeout 200 $B/kernels_test build/kernels/kernels.fatbin > $OUT/kernels-test.log 2>&1
echo "kernels_test rc=$? at $(el) s"; grep -E "FAIL" $OUT/kernels-test.log | head; tail -1 $OUT/kernels-test.log
timeout 150 python3 tests/gpu/run.py > $OUT/gpu-suite.txt 2>&1
echo "gpu suite rc=$? at $(el) s"; tail -3 $OUT/gpu-suite.txt
