#!/bin/sh
# proto_pyworker: torch references through the real daemon on a machine
# without a GPU or PyTorch: `kforge serve` over stdio and the `kforge check`
# CLI with the mock libcuda (tests/gpu/mock_cuda.c) and the stand-in torch
# of tests/data/torch_double (a test double, see its README) on PYTHONPATH,
# unsandboxed as proto_gpu_mock.sh is (the bubblewrap side is
# tests/unit/check_pyworker.c). Scenarios in proto_pyworker.py: the first
# check starts the worker and its later sizes are served warm, the next
# check is served warm from the start, a failing expression is reported and
# the worker keeps serving, the CLI's one-shot check imports torch once,
# and no worker process outlives a SIGKILLed daemon.
set -u
. "$(dirname "$0")/mock_env.sh"
mock_setup pyworker
trap 'rm -rf "$T"' EXIT
mock_harness
T="$T" LD_LIBRARY_PATH="$T" KFORGE_HARNESS="$T/harness.sh" \
	PYTHONPATH="$SRC/tests/data/torch_double" \
	python3 "$SRC/tests/proto/proto_pyworker.py" "$BIN" "$SRC"
