#!/bin/bash
# session 9 lease 3: rmsnorm few-rows halves (ab1) traced; the table again; compute-sanitizer memcheck on kernels_test --quick
. .debs/setup.sh >/dev/null 2>&1
B=build/gpu-kernels
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $OUT/gpu.txt 2>&1
export PYTHONUNBUFFERED=1 TORCHINDUCTOR_CACHE_DIR=/tmp/tc9 KF_LIB=$B/libkfk.so
BENCH_AB_LIBS="new=$B/libkfk.so base=$B/libkfk_base.so ab1=$B/libkfk_ab1.so" BENCH_AB_ITERS=400 BENCH_TRACE='rmsnorm 1x(128|512)x4096 bf16|adaln' \
  timeout 150 python3 kernels/bench/bench.py > $OUT/trace.log 2>&1
echo "trace rc=$? at $(el) s"; grep "^#  \|^# trace" $OUT/trace.log | cut -c1-70,100-190
BENCH_ITERS=100 BENCH_BUDGET_S=400 BENCH_MD=$OUT/bench.md BENCH_JSON=$OUT/bench.json \
  timeout 200 python3 kernels/bench/bench.py > $OUT/bench.log 2>&1
echo "table rc=$? at $(el) s"; grep -v gemm $OUT/bench.md | cut -d'|' -f2-4,5,7,10,11,12
timeout 240 compute-sanitizer --tool memcheck --print-limit 20 $B/kernels_test --quick > $OUT/memcheck.log 2>&1
echo "memcheck rc=$? at $(el) s"; grep -E "FAIL|ERROR SUMMARY|passed" $OUT/memcheck.log | head
