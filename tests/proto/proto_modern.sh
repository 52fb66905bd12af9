#!/bin/sh
# Protocol 2026-07-28 (stateless) beside the handshake revisions over stdio
# and HTTP: tests/proto/proto_modern.py.
set -u
SRC=${KFORGE_SRC:-.}
python3 "$SRC/tests/proto/proto_modern.py"
