#!/bin/sh
# kforge torch-op and kforge export from the shell without a GPU (see
# proto_torchop.py): runs that did not pass are refused with the reason,
# usage errors exit 2, nothing is written for a refused export.
set -eu
BIN=${KFORGE_BIN:-build/kforge}
SRC=${KFORGE_SRC:-.}
[ -x "$BIN" ] || { echo "proto_torchop: $BIN not built"; exit 1; }
exec python3 "$SRC/tests/proto/proto_torchop.py" "$BIN"
