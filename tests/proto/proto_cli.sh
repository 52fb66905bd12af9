#!/bin/sh
# The CLI's options against the tools' input schemas (see proto_cli.py):
# every command's --help works, each schema-bound option's help line shows
# its tool's bounds and default, and an out-of-range, mistyped, missing or
# unknown value exits 2 naming the option and the range.
set -eu
BIN=${KFORGE_BIN:-build/kforge}
SRC=${KFORGE_SRC:-.}
[ -x "$BIN" ] || { echo "proto_cli: $BIN not built"; exit 1; }
exec python3 "$SRC/tests/proto/proto_cli.py" "$BIN"
