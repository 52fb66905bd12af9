#!/bin/sh
# proto_profile: profile_kernel end to end without a GPU: the real kforge
# and kforge-harness (profile mode) on the libcuda test double of
# proto_gpu_mock (tests/gpu/mock_cuda.c), and a stand-in for ncu
# (tests/data/ncu/ncu: runs the harness, writes the recorded raw CSV or the
# error a real ncu prints). Checks the answer, the raw report as a
# resource, the run in the history, and the answers without counters: no
# GPU, no ncu, counters denied, the injection library missing, an unknown
# metric (dropped and retried), a kernel that hangs or faults in the
# warm-up, an unknown size index. Unsandboxed (--sandbox=none) because the
# double is found through LD_LIBRARY_PATH.
set -u
. "$(dirname "$0")/mock_env.sh"
mock_setup profile
trap 'rm -rf "$T"' EXIT
mock_harness
mock_axpb_spec
NCU=$SRC/tests/data/ncu
fail=0
# name, axpb mode, ncu, expected exit, python assertion on the answer r; rest: kforge args
check() {
	name=$1; mode=$2; ncu=$3; want=$4; assertion=$5; shift 5
	printf '%s' "$mode" >"$T/mode"
	LD_LIBRARY_PATH="${LIBS-$T}" KFORGE_HARNESS="$T/harness.sh" KFORGE_NCU="$ncu" \
		"$BIN" profile "$T/axpb.json" --data-dir "$T/data" --sandbox=none --json "$@" \
		>"$T/out.json" 2>"$T/err"
	code=$?
	if [ "$code" != "$want" ] || ! python3 -c "
import json
r = json.load(open('$T/out.json'))
assert $assertion, r.get('summary')
" 2>>"$T/err"; then
		echo "FAIL proto_profile: $name: exit $code (want $want)"
		tail -3 "$T/err"
		fail=1
	else
		echo "ok   proto_profile: $name"
	fi
}
check "the answer: speed of light, stalls, findings with guides, what to try" ok "$NCU/ncu" 0 \
	"r['profiled'] and r['kernels'][0]['name'] == 'rmsnorm_plain' and \
	 r['kernels'][0]['speed_of_light_pct']['dram'] == 27.41 and \
	 r['kernels'][0]['stalls'][0]['reason'] == 'long_scoreboard' and \
	 all(f['guide'].startswith('kforge://guides/') for f in r['kernels'][0]['findings']) and \
	 len(r['try']) >= 1 and r['raw_report'].startswith('kforge://profiles/') and \
	 r['run_id'].startswith('r') and 'Try 1' in r['summary']"
uri=$(python3 -c "import json; print(json.load(open('$T/out.json'))['raw_report'])")
# the raw report over MCP (stdio): resources/read
printf '%s\n' \
	'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/read\",\"params\":{\"uri\":\"$uri\"}}" \
	'{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"kforge://profiles/../../etc"}}' |
	"$BIN" serve --data-dir "$T/data" --sandbox=none >"$T/mcp.out" 2>/dev/null
if python3 -c "
import json
m = {}
for l in open('$T/mcp.out'):
    o = json.loads(l); m[o.get('id')] = o
c = m[2]['result']['contents'][0]
assert c['mimeType'] == 'text/csv' and '\"Kernel Name\"' in c['text'], c
assert 'error' in m[3], m[3]
"; then echo "ok   proto_profile: raw report served as a resource, bad ids refused"
else echo "FAIL proto_profile: raw report resource"; fail=1; fi
if "$BIN" runs --kind profile --data-dir "$T/data" --json 2>/dev/null | grep -q rmsnorm_plain; then
	echo "ok   proto_profile: the run is in the history as kind profile"
else echo "FAIL proto_profile: no profile run in the history"; fail=1; fi
check "an unknown metric is dropped and the run repeated" ok "$NCU/ncu-unknown" 0 \
	"r['profiled'] and r['metrics_unavailable'] == \
	 ['sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active']"
check "counters denied: said why" ok "$NCU/ncu-denied" 1 \
	"not r['profiled'] and r['reason'] == 'counters_denied' and 'ERR_NVGPUCTRPERM' in r['summary']"
check "the injection library missing: said why" ok "$NCU/ncu-nolib" 4 \
	"not r['profiled'] and r['reason'] == 'profiler_library_missing'"
check "a report without the harness's own is not taken" ok "$NCU/ncu-norun" 1 \
	"not r['profiled'] and r['reason'] == 'profiler_failed' and 'wrote no report' in r['summary']"
check "no ncu: said where it looked" ok /nonexistent/ncu 4 \
	"not r['profiled'] and r['reason'] == 'no_ncu' and 'KFORGE_NCU' in r['summary']"
check "a kernel that hangs is killed in the warm-up" hang "$NCU/ncu" 1 \
	"not r['profiled'] and r['safeguard'] == 'timeout' and 'did not finish within 1000 ms' in r['summary']" \
	--timeout-s 1
check "a kernel that faults is reported like a check" fault "$NCU/ncu" 1 \
	"not r['profiled'] and r['safeguard'] == 'fault' and 'faulted' in r['summary']"
python3 - "$T/axpb.json" "$T/bad.json" <<'EOS'
import sys, json
spec = json.load(open(sys.argv[1]))
spec["source"] = spec["source"] + "\nthis is not CUDA;\n"
json.dump(spec, open(sys.argv[2], "w"))
EOS
cp "$T/axpb.json" "$T/good.json"; cp "$T/bad.json" "$T/axpb.json"
check "a candidate that does not compile: the compiler's words" ok "$NCU/ncu" 1 \
	"not r['profiled'] and r['stage'] == 'compile' and r['error']['code'] == 'compile_error'"
cp "$T/good.json" "$T/axpb.json"
check "an unknown size index names the sizes" ok "$NCU/ncu" 1 \
	"'size: index 5, the spec has' in r['summary']" --size 5
LIBS=/nonexistent check "no GPU: said why" ok "$NCU/ncu" 3 \
	"not r['profiled'] and r['reason'] == 'no_gpu'"
exit $fail
