#!/bin/bash
# gpu_run.sh: one GPU-machine lease's worth of kernels/ work in one command:
# builds the library, the GPU test and the sm_90 fatbin, runs the GPU test
# (every op and dtype against the float64 references), the benchmark table
# with block-shape sweeps, and, if time is left, the GPU test under
# compute-sanitizer. Logs go to $OUT (at most 8 files); the table is
# printed last. KF_DEADLINE_S (default 540; kernels_test alone took 93 s in run 8) bounds the whole run.
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/kf-out}
mkdir -p "$OUT"
T0=$(date +%s)
DEADLINE=${KF_DEADLINE_S:-540}
left() { echo $((DEADLINE - ($(date +%s) - T0))); }
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
export NVCC
nvidia-smi --query-gpu=name,driver_version,compute_cap,clocks.sm,clocks.max.sm,clocks.mem,power.draw \
	--format=csv >"$OUT/gpu.txt" 2>&1
"$NVCC" --version | tail -2 >>"$OUT/gpu.txt"
(make --no-print-directory build/kernels/kernels.fatbin KERNEL_ARCHS=90 NVCC="$NVCC" \
	>"$OUT/fatbin.log" 2>&1; echo "fatbin rc=$?" >>"$OUT/fatbin.log") &
fatpid=$!
KF_BUILD_TUNE=1 KF_HINT_MODES="0 1 2 3" KF_GPU_BUILD=build/gpu-kernels sh kernels/bench/build.sh >"$OUT/build.log" 2>&1
echo "build rc=$? after $(($(date +%s) - T0)) s" | tee -a "$OUT/build.log"
cp build/gpu-kernels/resources.txt "$OUT/" 2>/dev/null
wait $fatpid
tail -1 "$OUT/fatbin.log"
timeout 240 build/gpu-kernels/kernels_test build/kernels/kernels.fatbin >"$OUT/test.log" 2>&1
echo "kernels_test rc=$? after $(($(date +%s) - T0)) s"
grep -E "^FAIL" "$OUT/test.log" | head -20
tail -1 "$OUT/test.log"
B=$(($(left) - 75))
BENCH_BUDGET_S=$((B > 20 ? B : 20)) BENCH_TUNE=1 BENCH_JSON="$OUT/bench.json" BENCH_MD="$OUT/bench.md" \
	KF_HINT_LIBS="$(ls build/gpu-kernels/libkfk_h*.so 2>/dev/null | tr '\n' ' ')" \
	KF_LIB=build/gpu-kernels/libkfk.so PYTHONUNBUFFERED=1 \
	timeout $(($(left) - 20)) python3 kernels/bench/bench.py >"$OUT/bench.log" 2>&1
echo "bench rc=$? after $(($(date +%s) - T0)) s"
if [ "$(left)" -gt 30 ]; then
	timeout $(($(left) - 5)) compute-sanitizer --tool memcheck --print-limit 20 \
		build/gpu-kernels/kernels_test --quick >"$OUT/sanitizer.log" 2>&1
	echo "sanitizer rc=$? after $(($(date +%s) - T0)) s"
	tail -3 "$OUT/sanitizer.log"
fi
cat "$OUT/bench.log"
