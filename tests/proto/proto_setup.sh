#!/bin/sh
# First-run experience: mcp-config, skill install, SKILL.md, demo.
set -eu
BIN=${KFORGE_BIN:-build/kforge}
SRC=${KFORGE_SRC:-.}
[ -x "$BIN" ] || { echo "proto_setup: $BIN not built"; exit 1; }
exec python3 "$SRC/tests/proto/proto_setup.py" "$BIN" "$SRC"
