#!/bin/sh
# Protocol tests of the HTTP transport: the real binary over HTTP
# (tests/proto/proto_http.py: sessions, SSE, every HTTP error, malformed input,
# concurrency, expiry, tokens, REST), then the official TypeScript SDK
# client over Streamable HTTP (tests/sdk/client.mjs http).
set -u
BIN=${KFORGE_BIN:-build/kforge}
SRC=${KFORGE_SRC:-.}
fail=0
python3 "$SRC/tests/proto/proto_http.py" || fail=1

DIR="$SRC/tests/sdk"
if ! command -v node >/dev/null; then
	echo "proto_http: FAIL: node is not installed (needed for the SDK client)"; exit 1
fi
if [ ! -d "$DIR/node_modules/@modelcontextprotocol/sdk" ]; then
	(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error) ||
		{ echo "proto_http: FAIL: npm ci in tests/sdk failed"; exit 1; }
fi
TMP=$(mktemp -d)
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$TMP"' EXIT
"$BIN" serve --http 127.0.0.1:0 --port-file "$TMP/port" --conformance-fixtures \
	--data-dir "$TMP/data" --log-level warn 2>"$TMP/log" &
PID=$!
i=0
while [ ! -s "$TMP/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
URL="http://127.0.0.1:$(cat "$TMP/port")/mcp"
node "$DIR/client.mjs" http "$URL" || fail=1
node "$DIR/http_client.mjs" "$URL" || fail=1
[ $fail -eq 0 ] && echo "proto_http: ok" || { echo "proto_http: FAILED"; tail -20 "$TMP/log"; }
exit $fail
