#!/bin/bash
# session 9 lease 1: output check of 7 bench-only variants, then traces
. .debs/setup.sh >/dev/null 2>&1
B=build/gpu-kernels
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $OUT/gpu.txt 2>&1
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/tc9 KF_LIB=$B/libkfk_base.so
L="base=$B/libkfk_base.so"; for i in 1 2 3 4 5 6 7; do L="$L ab$i=$B/libkfk_ab$i.so"; done
BENCH_AB_LIBS="$L" BENCH_AB_ONLY=1 BENCH_AB_ITERS=3 timeout 150 python3 kernels/bench/bench.py > $OUT/abcheck.log 2>&1
echo "abcheck rc=$? at $(el) s"; grep -c "A/B" $OUT/abcheck.log; grep -i "mismatch\|fail\|error" $OUT/abcheck.log | head
tr() { # name libs regex [extra env]
  echo "== $1"; BENCH_AB_LIBS="$2" BENCH_AB_ITERS=200 BENCH_TRACE="$3" timeout 150 python3 kernels/bench/bench.py 2>&1 | grep -v "Warn\|warn_once"; }
{ BENCH_TRITON=1 tr silu "base=$B/libkfk_base.so ab6=$B/libkfk_ab6.so ab7=$B/libkfk_ab7.so" 'silu_and_mul 16384x4096'
  tr adaln "base=$B/libkfk_base.so ab5=$B/libkfk_ab5.so" 'adaln'
  tr rms512 "base=$B/libkfk_base.so ab5=$B/libkfk_ab5.so" 'rmsnorm 1x512x4096 bf16'
  tr ln "base=$B/libkfk_base.so ab1=$B/libkfk_ab1.so ab2=$B/libkfk_ab2.so ab3=$B/libkfk_ab3.so ab4=$B/libkfk_ab4.so" 'layernorm (16384x4096|2x4096x3072) bf16'
  BENCH_TRITON=1 tr silu2 "ab7=$B/libkfk_ab7.so ab6=$B/libkfk_ab6.so base=$B/libkfk_base.so" 'silu_and_mul 16384x4096'
  tr ln2 "ab4=$B/libkfk_ab4.so ab3=$B/libkfk_ab3.so base=$B/libkfk_base.so" 'layernorm 16384x4096 bf16'
} > $OUT/trace.log 2>&1
echo "traces at $(el) s"; grep "^#  \|^# trace\|^==" $OUT/trace.log | cut -c1-70,100-190
