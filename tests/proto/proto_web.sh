#!/bin/sh
# The web page in headless Chromium (see proto_web.py).
set -eu
BIN=${KFORGE_BIN:-build/kforge}
SRC=${KFORGE_SRC:-.}
[ -x "$BIN" ] || { echo "proto_web: $BIN not built"; exit 1; }
exec python3 "$SRC/tests/proto/proto_web.py" "$BIN"
