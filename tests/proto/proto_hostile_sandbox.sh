#!/bin/sh
# Hostile compiles against the real daemon (see proto_hostile_sandbox.py):
# the memory limit, fairness between clients, no orphan after a SIGKILL,
# a full disk, a 0-byte or corrupt state.db.
set -eu
BIN=${KFORGE_BIN:-build/kforge}
SRC=${KFORGE_SRC:-.}
[ -x "$BIN" ] || { echo "proto_hostile_sandbox: $BIN not built"; exit 1; }
exec python3 "$SRC/tests/proto/proto_hostile_sandbox.py" "$BIN"
