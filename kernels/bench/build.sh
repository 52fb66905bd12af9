#!/bin/sh
# build.sh: builds the kernels/ library for the local GPU with nvcc, for the
# GPU test and the benchmark: objects of every kernels/*.cu (-fPIC), the
# shared library libkfk.so (loaded by bench.py through ctypes), and
# tests/gpu/kernels_test. Output in $KF_GPU_BUILD (default build/gpu-kernels).
# Needs nvcc and a host C compiler; no other dependency (runs on a bare GPU
# machine). The .cu files compile in parallel.
set -e
cd "$(dirname "$0")/../.."
B=${KF_GPU_BUILD:-build/gpu-kernels}
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null 2>&1 || NVCC=/usr/local/cuda/bin/nvcc
CC=${CC:-cc}
if [ -z "$KF_GPU_ARCH" ]; then
	cc_=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
	KF_GPU_ARCH=${cc_:-90}
fi
# sm_90a (Hopper's own instructions) where the GPU is sm_90
case "$KF_GPU_ARCH" in 90) GEN="-gencode arch=compute_90a,code=sm_90a -DKF_HAVE_SM90A=1" ;;
*) GEN="-gencode arch=compute_$KF_GPU_ARCH,code=sm_$KF_GPU_ARCH" ;; esac
mkdir -p "$B"
pids=""
for f in kernels/*.cu; do
	o="$B/$(basename "$f" .cu).o"
	"$NVCC" -O3 -std=c++17 -I. $GEN -Xcompiler -fPIC -Xptxas -v -c "$f" -o "$o" \
		>"$o.log" 2>&1 &
	pids="$pids $!"
done
for f in kernels/ref/*.c kernels/dtype.c kernels/ops.c base/kf_err.c base/par.c; do
	"$CC" -std=c11 -O2 -fPIC -D_GNU_SOURCE -I. -c "$f" -o "$B/c_$(basename "$f" .c).o"
done
fail=0
for p in $pids; do wait "$p" || fail=1; done
if [ "$fail" != 0 ]; then cat "$B"/*.log; exit 1; fi
CU_OBJS=$(for f in kernels/*.cu; do printf '%s ' "$B/$(basename "$f" .cu).o"; done)
"$NVCC" -shared $GEN -o "$B/libkfk.so" $CU_OBJS "$B"/c_*.o -lpthread
"$NVCC" -O2 -std=c++17 -I. $GEN -o "$B/kernels_test" tests/gpu/kernels_test.cu $CU_OBJS \
	"$B"/c_*.o -L"$(dirname "$(command -v "$NVCC")")/../lib64/stubs" -lcuda -lpthread
# Resource usage (registers, spills) of every kernel: check for spills
# before spending GPU time.
grep -hE "Function properties|spill|registers" "$B"/*.o.log >"$B/resources.txt" || true
echo "build.sh: built $B/libkfk.so and $B/kernels_test for sm_$KF_GPU_ARCH"
