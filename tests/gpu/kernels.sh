#!/bin/sh
# kernels.sh: the kernels/ GPU suite, called by tests/gpu/run.sh (make
# test-gpu). Builds the library and tests/gpu/kernels_test.cu with nvcc for
# the local GPU and compares every op in every dtype against the float64
# references at awkward sizes. Skips with a clear line where there is no GPU.
cd "$(dirname "$0")/../.." || exit 1
if ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP kernels GPU suite: no NVIDIA GPU on this host"
	exit 0
fi
B=${KF_GPU_BUILD:-build/gpu-kernels}
KF_GPU_BUILD=$B sh kernels/bench/build.sh || { echo "FAIL kernels GPU suite: build failed"; exit 1; }
FATBIN=build/kernels/kernels.fatbin
if [ -f "$FATBIN" ]; then
	"$B/kernels_test" "$FATBIN"
else
	echo "note: $FATBIN not built; the baseline-kernel lookup is skipped"
	"$B/kernels_test"
fi
