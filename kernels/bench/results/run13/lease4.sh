#!/bin/bash
# session 9 lease 4: persistent Hopper GEMM: kernels_test, trace against the non-persistent kernel and cuBLAS, the table
. .debs/setup.sh >/dev/null 2>&1
B=build/gpu-kernels
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $OUT/gpu.txt 2>&1
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/tc9 KF_LIB=$B/libkfk.so
timeout 200 $B/kernels_test build/kernels/kernels.fatbin > $OUT/kernels-test.log 2>&1
echo "kernels_test rc=$? at $(el) s"; grep -E "FAIL" $OUT/kernels-test.log | head; grep "gemm M=1500\|gemm M=1024" $OUT/kernels-test.log | head -4; tail -1 $OUT/kernels-test.log
BENCH_AB_LIBS="new=$B/libkfk.so unity=$B/libkfk_ab1.so base=$B/libkfk_base.so" BENCH_AB_ITERS=100 BENCH_TRACE='gemm' \
  timeout 150 python3 kernels/bench/bench.py > $OUT/trace.log 2>&1
echo "trace rc=$? at $(el) s"; grep "^#  \|^# trace" $OUT/trace.log | cut -c1-70,100-190
BENCH_ITERS=100 BENCH_BUDGET_S=400 BENCH_MD=$OUT/bench.md BENCH_JSON=$OUT/bench.json \
  timeout 200 python3 kernels/bench/bench.py > $OUT/bench.log 2>&1
echo "table rc=$? at $(el) s"; grep "gemm\|MISMATCH" $OUT/bench.md | cut -d'|' -f2-5,10,11,13; grep -c "| ok\|MISMATCH" $OUT/bench.log
