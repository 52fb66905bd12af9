#!/bin/sh
# Hostile input over HTTP (see proto_hostile_http.py): rebinding Host and
# Origin, text/plain POSTs, slow and half-open connections, stalled
# uploads, initialize and subscribe floods, "busy" below the in-flight
# limit, and quiet client hang-ups, each against the real binary.
set -eu
BIN=${KFORGE_BIN:-build/kforge}
SRC=${KFORGE_SRC:-.}
[ -x "$BIN" ] || { echo "proto_hostile_http: $BIN not built"; exit 1; }
KFORGE_BIN=$BIN exec python3 "$SRC/tests/proto/proto_hostile_http.py"
