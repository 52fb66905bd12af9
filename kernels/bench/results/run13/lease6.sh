#!/bin/bash
# session 9 lease 6: GEMM with clusters of two and multicast w halves: kernels_test, then trace against the persistent kernel without clusters, and cuBLAS
. .debs/setup.sh >/dev/null 2>&1
B=build/gpu-kernels
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $OUT/gpu.txt 2>&1
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/tc9 KF_LIB=$B/libkfk.so
timeout -s KILL 150 $B/kernels_test --quick > $OUT/kernels-test.log 2>&1
rc=$?; echo "kernels_test rc=$rc at $(el) s"; grep -E "FAIL" $OUT/kernels-test.log | head; grep "gemm" $OUT/kernels-test.log | grep -v "^ok" | head; tail -1 $OUT/kernels-test.log
[ $rc -eq 0 ] || exit 1
BENCH_AB_LIBS="new=$B/libkfk.so unity=$B/libkfk_ab1.so base=$B/libkfk_base.so" BENCH_AB_ITERS=100 BENCH_TRACE='gemm' \
  timeout -s KILL 150 python3 kernels/bench/bench.py > $OUT/trace.log 2>&1
echo "trace rc=$? at $(el) s"; grep "^#  \|^# trace" $OUT/trace.log | cut -c1-70,100-190
timeout -s KILL 200 compute-sanitizer --tool memcheck --print-limit 20 $B/kernels_test --quick > $OUT/memcheck.log 2>&1
echo "memcheck rc=$? at $(el) s"; grep -E "ERROR SUMMARY|passed" $OUT/memcheck.log | head -3
