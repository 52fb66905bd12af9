#!/bin/sh
# make bench-protocol: requests/s and p50/p99 latency of MCP over HTTP
# (wrk, 2 threads, C connections spread over C sessions made beforehand)
# and over stdio (tests/bench/bench_stdio.c), written to OUT.md (default
# build/bench/bench-protocol.md; docs/bench-protocol.md is copied from it
# by hand).
# usage: KFORGE_BIN=... BENCH_STDIO=... sh tests/bench/bench_protocol.sh OUT.md
# BENCH_SECONDS (default 10) sets each wrk run's length; BENCH_CONNS
# (default "8 64") the connection counts.
set -eu
OUT=${1:-build/bench/bench-protocol.md}
BIN=${KFORGE_BIN:-build/kforge}
STDIO=${BENCH_STDIO:-build/tests/bench/bench_stdio}
SECS=${BENCH_SECONDS:-10}
CONNS=${BENCH_CONNS:-"8 64"}
KB=${KFORGE_KB:-$(dirname "$BIN")/knowledge.db}
command -v wrk >/dev/null || { echo "bench_protocol: wrk is not installed (make deps)"; exit 1; }
command -v curl >/dev/null || { echo "bench_protocol: curl is not installed (make deps)"; exit 1; }

TMP=$(mktemp -d)
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$TMP"' EXIT
KBARG=
[ -f "$KB" ] && KBARG="--kb $KB"
# Every wrk connection has a session of its own, all from 127.0.0.1: the
# per-client session and connection caps are raised past BENCH_CONNS.
# shellcheck disable=SC2086
"$BIN" serve --http 127.0.0.1:0 --port-file "$TMP/port" --conformance-fixtures \
	--max-sessions-per-client 1024 --max-conns-per-ip 4096 \
	--data-dir "$TMP/data" --log-level warn $KBARG 2>"$TMP/log" &
PID=$!
i=0
while [ ! -s "$TMP/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
PORT=$(cat "$TMP/port")
URL="http://127.0.0.1:$PORT/mcp"

cat >"$TMP/mcp.lua" <<'EOF'
-- One JSON-RPC request per HTTP request, round-robin over the sessions in
-- KF_SIDS; any status but 200 counts as an error.
local sids, idx = {}, 0
local body = os.getenv("KF_BODY")
local n = 0
function setup(thread) n = n + 1; thread:set("tid", n) end
function init(args)
  for s in string.gmatch(os.getenv("KF_SIDS"), "[^,]+") do sids[#sids + 1] = s end
  idx = tid
end
function request()
  idx = idx % #sids + 1
  return wrk.format("POST", "/mcp", {["Content-Type"] = "application/json",
    ["Accept"] = "application/json, text/event-stream", ["Mcp-Session-Id"] = sids[idx]}, body)
end
EOF

sessions() {
	s=""
	for _ in $(seq "$1"); do
		id=$(curl -s -i -H 'Content-Type: application/json' \
			-H 'Accept: application/json, text/event-stream' "$URL" \
			-d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' |
			tr -d '\r' | awk 'tolower($1)=="mcp-session-id:"{print $2}')
		[ -n "$id" ] || { echo "bench_protocol: initialize failed" >&2; exit 1; }
		curl -s -o /dev/null -H 'Content-Type: application/json' \
			-H 'Accept: application/json, text/event-stream' -H "Mcp-Session-Id: $id" "$URL" \
			-d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
		s="$s,$id"
	done
	echo "${s#,}"
}

# CPU time (user + system, in clock ticks) kforge has used so far.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
HZ=$(getconf CLK_TCK)

# wrk_run NAME BODY CONNS -> one Markdown row
wrk_run() {
	sids=$(sessions "$3")
	t0=$(cpu_ticks)
	KF_SIDS=$sids KF_BODY=$2 wrk -t2 -c"$3" -d"${SECS}s" --latency \
		-s "$TMP/mcp.lua" "$URL" >"$TMP/wrk.txt" 2>&1
	t1=$(cpu_ticks)
	n=$(awk '/requests in/{print $1}' "$TMP/wrk.txt")
	cpu=$(awk -v a="$t0" -v b="$t1" -v n="$n" -v hz="$HZ" \
		'BEGIN{ if (n > 0) printf "%.1f", (b - a) * 1e6 / hz / n; else print "?" }')
	rps=$(awk '/^Requests\/sec:/{printf "%.0f", $2}' "$TMP/wrk.txt")
	p50=$(awk '$1=="50%"{print $2}' "$TMP/wrk.txt")
	p99=$(awk '$1=="99%"{print $2}' "$TMP/wrk.txt")
	bad=$(awk '/Non-2xx/{print $NF}' "$TMP/wrk.txt")
	errs=$(awk '/Socket errors/{print}' "$TMP/wrk.txt")
	echo "| HTTP | $1 | $3 | $rps | $p50 | $p99 | $cpu | ${bad:-0}${errs:+ ($errs)} |"
}

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
ROWS=""
for c in $CONNS; do
	ROWS="$ROWS
$(wrk_run tools/list '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' "$c")
$(wrk_run 'tools/call test_simple_text' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}' "$c")"
done
# A tool that runs on the worker pool (not TOOL_FAST): an sqlite query of
# the (empty) run history.
ROWS="$ROWS
$(wrk_run 'tools/call list_runs (worker pool)' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_runs","arguments":{"limit":1}}}' 8)"
if [ -n "$KBARG" ]; then
	ROWS="$ROWS
$(wrk_run 'tools/call get_gpu_specs h100' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_gpu_specs","arguments":{"gpu":"h100"}}}' 8)"
fi
"$STDIO" "$BIN" "$TMP/sdata" 100000 32 >"$TMP/stdio.txt"
ROWS="$ROWS
$(awk '{printf "| stdio | %s | 1 pipe, 32 in flight | %s | %.0fus (one at a time) | %.0fus (one at a time) | - | %s |\n", $2, $3, $4, $5, $6}' "$TMP/stdio.txt")"
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

{
	echo "# Protocol benchmark (make bench-protocol)"
	echo
	echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n): $(nproc) CPUs,"
	echo "$(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo), $(uname -sr);"
	echo "kforge $(git -C "$(dirname "$0")/../.." rev-parse --short HEAD 2>/dev/null || echo '?')."
	echo "Load average before / after: $LOAD0 / $LOAD1 (other processes share these CPUs;"
	echo "wrk itself runs on the same machine and takes part of them)."
	echo
	echo "HTTP: \`wrk -t2 -cC -d${SECS}s\`, one POST /mcp per request, C sessions made"
	echo "beforehand and used round-robin, keep-alive connections. Latency columns are"
	echo "wrk's percentiles under that load. stdio: tests/bench/bench_stdio.c, latency with"
	echo "one request at a time, throughput with 32 requests in flight on one pipe."
	echo "kforge CPU us/request: the server's user + system CPU time over the run divided"
	echo "by the requests answered, a figure the other load on the machine barely moves;"
	echo "2,000,000 / it is what two dedicated cores could serve if the client cost nothing."
	echo
	echo "test_simple_text is a TOOL_FAST fixture: it runs on the HTTP thread. list_runs"
	echo "runs on the worker pool (two thread handoffs per call); get_gpu_specs h100 too,"
	echo "and its cost is the knowledge-base lookup itself."
	echo
	echo "| transport | request | connections | requests/s | p50 | p99 | kforge CPU us/request | errors |"
	echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
	echo "$ROWS" | sed '/^$/d'
} >"$OUT"
cat "$OUT"
