#!/bin/sh
# The knowledge base end to end (see proto_kb.py): REST over real HTTP,
# MCP over stdio, and the kforge gpu / kforge guide CLI, on build/knowledge.db.
set -eu
BIN=${KFORGE_BIN:-build/kforge}
KB=${KFORGE_KB:-build/knowledge.db}
SRC=${KFORGE_SRC:-.}
[ -x "$BIN" ] || { echo "proto_kb: $BIN not built"; exit 1; }
[ -r "$KB" ] || { echo "proto_kb: $KB not built"; exit 1; }
exec python3 "$SRC/tests/proto/proto_kb.py" "$BIN" "$KB" "$SRC"
