#!/bin/sh
# Per-client caps per bearer token (see proto_tokens.py): sessions,
# requests in flight and GPU jobs count per token of --token-file, not per
# address; token files that would leak or confuse are refused at start.
set -eu
BIN=${KFORGE_BIN:-build/kforge}
SRC=${KFORGE_SRC:-.}
[ -x "$BIN" ] || { echo "proto_tokens: $BIN not built"; exit 1; }
KFORGE_BIN=$BIN KFORGE_SRC=$SRC exec python3 "$SRC/tests/proto/proto_tokens.py"
