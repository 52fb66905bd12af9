#!/bin/sh
# build_ab.sh: bench-only builds of the library for bench.py's
# BENCH_AB_LIBS (the same cases timed with several builds, interleaved):
#   $B/libkfk_ab1.so .. abN.so  the working tree with -DKF_AB=1 .. N
#                      (N = KF_AB_COUNT, default 3)
#                      (the alternatives written under each KF_AB value;
#                      leave one value without code and time it as a
#                      control: the A/B's own noise)
#   $B/libkfk_base.so  the library at git revision $KF_AB_BASE, if set
# Run kernels/bench/build.sh first (this reuses its C objects). Never part
# of the library or the fatbin.
set -e
cd "$(dirname "$0")/../.."
B=${KF_GPU_BUILD:-build/gpu-kernels}
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null 2>&1 || NVCC=/usr/local/cuda/bin/nvcc
case "${KF_GPU_ARCH:-90}" in 90) GEN="-gencode arch=compute_90a,code=sm_90a -DKF_HAVE_SM90A=1" ;;
*) GEN="-gencode arch=compute_$KF_GPU_ARCH,code=sm_$KF_GPU_ARCH" ;; esac
ls "$B"/c_*.o >/dev/null
printf '#include "%s"\n' kernels/*.cu >"$B/unity_ab.cu"
ab() {
	"$NVCC" -O3 -std=c++17 -I. $GEN -DKF_AB=$1 -Xcompiler -fPIC -shared \
		-o "$B/libkfk_ab$1.so" "$B/unity_ab.cu" "$B"/c_*.o
}
# KF_AB_COUNT builds (default 3), two at a time
n=1
while [ "$n" -le "${KF_AB_COUNT:-3}" ]; do
	ab $n &
	pid=$!
	[ $((n + 1)) -le "${KF_AB_COUNT:-3}" ] && ab $((n + 1))
	wait $pid
	n=$((n + 2))
done
if [ -n "${KF_AB_BASE:-}" ]; then
	T=$(mktemp -d)
	git archive "$KF_AB_BASE" kernels base/kf_err.h | tar -x -C "$T"
	(cd "$T" && printf '#include "%s"\n' kernels/*.cu >unity.cu)
	"$NVCC" -O3 -std=c++17 -I"$T" $GEN -Xcompiler -fPIC -shared -o "$B/libkfk_base.so" \
		"$T/unity.cu" "$B"/c_*.o
	rm -rf "$T"
fi
echo "build_ab.sh: built $B/libkfk_ab1.so .. ab${KF_AB_COUNT:-3}.so${KF_AB_BASE:+, $B/libkfk_base.so ($KF_AB_BASE)}"
