#!/bin/sh
# proto_guides: every complete C/CUDA code block of the guides compiles
# (see proto_guides.py). Needs nvcc; skips with a line without it.
set -eu
SRC=${KFORGE_SRC:-.}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if ! [ -x "$CUDA_HOME/bin/nvcc" ]; then
	echo "SKIP proto_guides: needs nvcc ($CUDA_HOME/bin/nvcc)"
	exit 0
fi
exec python3 "$SRC/tests/proto/proto_guides.py" "$SRC" "$CUDA_HOME/bin/nvcc"
