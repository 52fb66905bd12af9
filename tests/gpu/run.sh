#!/bin/sh
# make test-gpu: the kernels/ GPU suite (tests/gpu/kernels.sh: every op of
# the library against its float64 reference), then check_kernel against
# correct kernels and the cheat suite (tests/gpu/run.py). Skips with a clear
# line without a GPU. KFORGE_GPU_BENCH=1 also measures the benchmark figures
# of docs/bench-harness.md.
here=$(dirname "$0")
if ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP tests/gpu: no NVIDIA GPU on this host (nvidia-smi -L failed)"
	exit 0
fi
fail=0
if [ -f "$here/kernels.sh" ]; then
	sh "$here/kernels.sh" || fail=1
fi
if [ -n "${KFORGE_GPU_BENCH:-}" ]; then
	python3 "$here/run.py" --bench "$@" || fail=1
else
	python3 "$here/run.py" "$@" || fail=1
fi
exit $fail
