#!/bin/sh
# The run history end to end (see proto_runs.py): kforge runs, the run tools
# over stdio MCP, and kforge serve killed with SIGKILL mid-run losing no
# answered run.
set -eu
BIN=${KFORGE_BIN:-build/kforge}
SRC=${KFORGE_SRC:-.}
[ -x "$BIN" ] || { echo "proto_runs: $BIN not built"; exit 1; }
exec python3 "$SRC/tests/proto/proto_runs.py" "$BIN"
