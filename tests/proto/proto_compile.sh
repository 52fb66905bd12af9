#!/bin/sh
# compile_kernel end to end (see proto_compile.py): the kforge compile CLI,
# the tool and artifact resources over stdio MCP, secrets not leaking, and
# an endless compile timing out while the daemon keeps serving.
set -eu
BIN=${KFORGE_BIN:-build/kforge}
SRC=${KFORGE_SRC:-.}
[ -x "$BIN" ] || { echo "proto_compile: $BIN not built"; exit 1; }
exec python3 "$SRC/tests/proto/proto_compile.py" "$BIN"
