#!/bin/sh
# The official MCP TypeScript SDK client (tests/sdk, version pinned in
# package-lock.json) connects to kforge over stdio, lists the tools and calls
# them. Installs the SDK into tests/sdk/node_modules with `npm ci` on first
# use. Set KFORGE_SDK_HTTP_URL to also run it against a running HTTP server.
set -eu
BIN=${KFORGE_BIN:-build/kforge}
SRC=${KFORGE_SRC:-.}
DIR="$SRC/tests/sdk"
command -v node >/dev/null || { echo "proto_sdk: node is not installed"; exit 1; }
if [ ! -d "$DIR/node_modules/@modelcontextprotocol/sdk" ]; then
	(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error) ||
		{ echo "proto_sdk: npm ci failed (is the npm registry reachable?)"; exit 1; }
fi
DATA=$(mktemp -d)
trap 'rm -rf "$DATA"' EXIT
ABS_BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
node "$DIR/client.mjs" stdio "$ABS_BIN" "$DATA"
# The demo workflow (GPU facts, guides, compile, check, benchmark, runs).
mkdir -p "$DATA/workflow"
node "$DIR/demo_workflow.mjs" "$ABS_BIN" "$DATA/workflow"
if [ -n "${KFORGE_SDK_HTTP_URL:-}" ]; then
	node "$DIR/client.mjs" http "$KFORGE_SDK_HTTP_URL"
fi
