#!/bin/bash
# session 9 lease 8: cluster multicast GEMM with the remote arrive at the default (.release.cta) semantics instead of .release.cluster
. .debs/setup.sh >/dev/null 2>&1
B=build/gpu-kernels
export PYTHONUNBUFFERED=1 KF_LIB=$B/libkfk.so
timeout -s KILL 120 $B/kernels_test --quick > $OUT/kernels-test.log 2>&1
rc=$?; echo "kernels_test rc=$rc"; grep FAIL $OUT/kernels-test.log | head -5; tail -1 $OUT/kernels-test.log
[ $rc -eq 0 ] || exit 1
BENCH_AB_LIBS="new=$B/libkfk.so unity=$B/libkfk_ab1.so base=$B/libkfk_base.so" BENCH_AB_ITERS=100 BENCH_TRACE='gemm' \
  timeout -s KILL 150 python3 kernels/bench/bench.py > $OUT/trace.log 2>&1
echo "trace rc=$?"; grep "^#  \|^# trace" $OUT/trace.log | cut -c1-70,100-190
