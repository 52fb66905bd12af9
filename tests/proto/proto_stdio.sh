#!/bin/sh
# Protocol test: drives the real kforge binary over stdio with scripted
# sessions and malformed input (see proto_stdio.py), then checks the CLI's
# help, version and usage exit codes.
set -eu
BIN=${KFORGE_BIN:-build/kforge}
SRC=${KFORGE_SRC:-.}
[ -x "$BIN" ] || { echo "proto_stdio: $BIN not built"; exit 1; }
exec python3 "$SRC/tests/proto/proto_stdio.py" "$BIN"
