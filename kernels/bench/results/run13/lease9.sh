#!/bin/bash
# session 9 lease 9: the persistent GEMM's epilogue cost (ab1: no stores) and three stages (ab2)
. .debs/setup.sh >/dev/null 2>&1
B=build/gpu-kernels
export PYTHONUNBUFFERED=1 KF_LIB=$B/libkfk_base.so
BENCH_AB_LIBS="base=$B/libkfk_base.so ab1=$B/libkfk_ab1.so ab2=$B/libkfk_ab2.so" BENCH_AB_ITERS=100 BENCH_TRACE='gemm (4096x4096x4096|16384x4096x4096|1000x3000x1000)' \
  timeout -s KILL 150 python3 kernels/bench/bench.py > $OUT/trace.log 2>&1
echo "trace rc=$?"; grep "^#  \|^# trace" $OUT/trace.log | cut -c1-70,100-190
