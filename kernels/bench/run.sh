#!/bin/sh
# run.sh: `make bench-kernels`. Builds the kernels for the local GPU
# (build.sh) and prints the benchmark table of bench.py (kforge vs PyTorch
# eager and torch.compile). Needs a GPU, nvcc and python3 with torch.
cd "$(dirname "$0")/../.." || exit 1
if ! nvidia-smi -L >/dev/null 2>&1; then
	echo "bench-kernels: no NVIDIA GPU on this host; nothing to measure"
	exit 1
fi
B=${KF_GPU_BUILD:-build/gpu-kernels}
KF_GPU_BUILD=$B sh kernels/bench/build.sh || exit 1
KF_LIB=$B/libkfk.so BENCH_MD=$B/bench.md BENCH_JSON=$B/bench.json PYTHONUNBUFFERED=1 \
	python3 kernels/bench/bench.py || exit 1
echo "bench-kernels: Markdown table in $B/bench.md (the form kernels/MEASUREMENTS.md uses), all rows in $B/bench.json"
