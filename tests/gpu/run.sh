#!/bin/sh
# make test-gpu: check_kernel against correct kernels and the cheat suite on
# this host's GPU (tests/gpu/run.py). Skips with a clear line without a GPU.
# KFORGE_GPU_BENCH=1 also measures the benchmark figures (docs/bench-harness.md).
here=$(dirname "$0")
if ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP tests/gpu: no NVIDIA GPU on this host (nvidia-smi -L failed)"
	exit 0
fi
if [ -n "${KFORGE_GPU_BENCH:-}" ]; then
	exec python3 "$here/run.py" --bench "$@"
fi
exec python3 "$here/run.py" "$@"
