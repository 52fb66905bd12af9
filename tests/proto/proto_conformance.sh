#!/bin/sh
# The official MCP conformance suite (@modelcontextprotocol/conformance
# 0.1.16, Node 22 through npx) against `kforge serve --http` with the
# conformance fixtures: every active server scenario must pass, 0 failed.
# Prints the suite's summary; exits non-zero on any failed check, on a
# missing summary, or when the suite cannot be fetched.
set -u
BIN=${KFORGE_BIN:-build/kforge}
CONF_PKG=@modelcontextprotocol/conformance@0.1.16
command -v npx >/dev/null || { echo "proto_conformance: FAIL: npx (Node.js) is not installed"; exit 1; }

TMP=$(mktemp -d)
PID=
cleanup() {
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

KBARG=
[ -n "${KFORGE_KB:-}" ] && [ -f "$KFORGE_KB" ] && KBARG="--kb $KFORGE_KB"
# shellcheck disable=SC2086
"$BIN" serve --http 127.0.0.1:0 --port-file "$TMP/port" --conformance-fixtures \
	--data-dir "$TMP/data" --log-level warn $KBARG 2>"$TMP/server.log" &
PID=$!
i=0
while [ ! -s "$TMP/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
if [ ! -s "$TMP/port" ]; then
	echo "proto_conformance: FAIL: kforge did not start listening"; cat "$TMP/server.log"; exit 1
fi
PORT=$(cat "$TMP/port")

# The suite writes results/ into the working directory: keep it in $TMP.
(cd "$TMP" && timeout 600 npx -y -p node@22 -p "$CONF_PKG" conformance server \
	--url "http://127.0.0.1:$PORT/mcp") >"$TMP/out.txt" 2>&1
rc=$?
sed -n '/=== SUMMARY ===/,$p' "$TMP/out.txt"
if ! grep -q '^Total: [0-9]* passed, 0 failed' "$TMP/out.txt"; then
	echo "proto_conformance: FAIL (exit $rc); failed checks:"
	grep -A3 -E 'FAILURE|Failed Checks|Error' "$TMP/out.txt" | head -80
	[ -s "$TMP/out.txt" ] && tail -20 "$TMP/out.txt"
	echo "--- server log"; tail -20 "$TMP/server.log"
	exit 1
fi
if [ $rc -ne 0 ]; then
	echo "proto_conformance: FAIL: the suite exited $rc"; tail -20 "$TMP/out.txt"; exit 1
fi
if ! kill -0 "$PID" 2>/dev/null; then
	echo "proto_conformance: FAIL: kforge died during the suite"; tail -20 "$TMP/server.log"; exit 1
fi
echo "proto_conformance: ok ($CONF_PKG, every active server scenario passed)"
