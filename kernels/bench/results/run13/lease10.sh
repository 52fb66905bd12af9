#!/bin/bash
# session 9 lease 10: the GEMM epilogue through shared memory and TMA stores: kernels_test, trace, memcheck
. .debs/setup.sh >/dev/null 2>&1
B=build/gpu-kernels
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
export PYTHONUNBUFFERED=1 KF_LIB=$B/libkfk.so
timeout -s KILL 200 $B/kernels_test build/kernels/kernels.fatbin > $OUT/kernels-test.log 2>&1
rc=$?; echo "kernels_test rc=$rc at $(el) s"; grep FAIL $OUT/kernels-test.log | head -5; grep "gemm M=1500 N=3000" $OUT/kernels-test.log | head -2; tail -1 $OUT/kernels-test.log
[ $rc -eq 0 ] || exit 1
BENCH_AB_LIBS="new=$B/libkfk.so unity=$B/libkfk_ab1.so base=$B/libkfk_base.so" BENCH_AB_ITERS=100 BENCH_TRACE='gemm' \
  timeout -s KILL 150 python3 kernels/bench/bench.py > $OUT/trace.log 2>&1
echo "trace rc=$? at $(el) s"; grep "^#  \|^# trace" $OUT/trace.log | cut -c1-70,100-190
timeout -s KILL 200 compute-sanitizer --tool memcheck --print-limit 20 $B/kernels_test --quick > $OUT/memcheck.log 2>&1
echo "memcheck rc=$? at $(el) s"; grep -E "ERROR SUMMARY|passed" $OUT/memcheck.log | head -3
