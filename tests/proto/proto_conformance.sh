#!/bin/sh
# The official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned below, Node 22 through npx) against `kforge serve --http` with the
# conformance fixtures: the requirement sets of protocol 2025-11-25 (the
# initialize handshake) and 2026-07-28 (stateless, per-request _meta), each
# at its own wire version. Every scored scenario must pass except those in
# tests/proto/conformance-baseline.yml (not applicable to kforge; docs/mcp.md
# says why), and an entry there that starts passing fails too. Prints each
# run's summary; exits non-zero on any unexpected failure, on a missing
# summary, or when the suite cannot be fetched.
set -u
BIN=${KFORGE_BIN:-build/kforge}
SRC=${KFORGE_SRC:-.}
CONF_PKG=@modelcontextprotocol/conformance@0.2.0-alpha.12
BASELINE=$(cd "$SRC" && pwd)/tests/proto/conformance-baseline.yml
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

fail=0
for REV in 2025-11-25 2026-07-28; do
	# The suite writes results/ into the working directory: keep it in $TMP.
	(cd "$TMP" && timeout 600 npx -y -p node@22 -p "$CONF_PKG" conformance server \
		--url "http://127.0.0.1:$PORT/mcp" --requirements "$REV" \
		--expected-failures "$BASELINE") >"$TMP/out-$REV.txt" 2>&1
	rc=$?
	echo "--- requirements $REV"
	grep -E "^Total: [0-9]+ passed|Baseline check|^Not scored" "$TMP/out-$REV.txt"
	if ! grep -q '^Total: [0-9]* passed' "$TMP/out-$REV.txt" || [ $rc -ne 0 ]; then
		echo "proto_conformance: FAIL: requirements $REV (exit $rc):"
		sed -n '/Unexpected\|stale\|Stale/,$p' "$TMP/out-$REV.txt" | head -40
		tail -20 "$TMP/out-$REV.txt"
		fail=1
	fi
done
if ! kill -0 "$PID" 2>/dev/null; then
	echo "proto_conformance: FAIL: kforge died during the suite"; tail -20 "$TMP/server.log"; exit 1
fi
if [ $fail -ne 0 ]; then
	echo "--- server log"; tail -20 "$TMP/server.log"
	exit 1
fi
echo "proto_conformance: ok ($CONF_PKG, requirements 2025-11-25 and 2026-07-28)"
