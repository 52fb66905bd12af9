#!/bin/sh
# Registration with the real Claude Code and Codex CLIs (tests/proto/
# proto_clients.py; the clients are pinned in tests/sdk/package.json and
# installed with `npm ci` on first use). Skips, with a line that says so,
# only when the npm registry cannot be reached.
set -u
BIN=${KFORGE_BIN:-build/kforge}
SRC=${KFORGE_SRC:-.}
KB=${KFORGE_KB:-$(dirname "$BIN")/knowledge.db}
DIR="$SRC/tests/sdk"
command -v node >/dev/null || { echo "proto_clients: FAIL: node is not installed"; exit 1; }
if [ ! -x "$DIR/node_modules/.bin/claude" ] || [ ! -x "$DIR/node_modules/.bin/codex" ]; then
	if ! (cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error); then
		if ! timeout 30 npm ping >/dev/null 2>&1; then
			echo "SKIP proto_clients: the npm registry is unreachable, so the Claude Code and Codex CLIs cannot be installed"
			exit 0
		fi
		echo "proto_clients: FAIL: npm ci in tests/sdk failed"
		exit 1
	fi
fi
exec python3 "$SRC/tests/proto/proto_clients.py" "$BIN" "$KB" "$DIR/node_modules/.bin"
