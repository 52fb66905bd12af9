#!/bin/sh
# The harness's host memory limit on a real GPU (RLIMIT_DATA from
# KFORGE_HARNESS_MEM_MB): a normal check and benchmark pass under the
# default limit and under 1 GiB (the CUDA driver's context, module and
# device buffers are not counted), and a size whose host copies do not fit
# under 1 GiB fails naming the limit, after which the next check passes.
# Skips without a GPU. Logs go to $OUT (default: a temporary directory).
set -u
SRC=${KFORGE_SRC:-$(pwd)}
BIN=${KFORGE_BIN:-$SRC/build/kforge}
if ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP tests/gpu/hostmem: no NVIDIA GPU on this host (nvidia-smi -L failed)"
	exit 0
fi
O=${OUT:-$(mktemp -d /tmp/kforge-hostmem-XXXXXX)}
mkdir -p "$O"
D=$(mktemp -d /tmp/kforge-hostmem-data-XXXXXX)
trap 'rm -rf "$D"' EXIT
python3 - "$SRC/tests/gpu/pass/axpb_f32.json" "$D" <<'PY'
import json, os, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]) + "/..")
import run
spec = run.load_spec(sys.argv[1])[0]
json.dump(spec, open(sys.argv[2] + "/axpb.json", "w"))
# 1 GiB per f32 tensor: the first input's host copy alone fills a 1 GiB
# harness limit, while the daemon's float64 copies (10 GiB) stay under its
# 16 GiB cap for a check
spec["sizes"] = [{"N": 256 << 20}]
json.dump(spec, open(sys.argv[2] + "/big.json", "w"))
PY
fail=0
# name, env (VAR=value or -), command, spec, expected exit, python assertion on r
t() {
	name=$1; envset=$2; cmd=$3; spec=$4; want=$5; assertion=$6; shift 6
	if [ "$envset" = - ]; then
		"$BIN" "$cmd" "$D/$spec.json" --data-dir "$D/data" --json "$@" >"$O/hostmem-$name.json" 2>"$O/hostmem-$name.err"
	else
		env "$envset" "$BIN" "$cmd" "$D/$spec.json" --data-dir "$D/data" --json "$@" >"$O/hostmem-$name.json" 2>"$O/hostmem-$name.err"
	fi
	code=$?
	summary=$(python3 -c "import json; print(json.load(open('$O/hostmem-$name.json')).get('summary'))" 2>/dev/null)
	if [ "$code" = "$want" ] && python3 -c "
import json
r = json.load(open('$O/hostmem-$name.json'))
assert $assertion
" 2>>"$O/hostmem-$name.err"; then
		echo "ok   hostmem: $name: $summary"
	else
		echo "FAIL hostmem: $name (exit $code, want $want): $summary"
		tail -3 "$O/hostmem-$name.err"
		fail=1
	fi
}
t check-default - check axpb 0 "r['passed']" --trials 1
t check-1g KFORGE_HARNESS_MEM_MB=1024 check axpb 0 "r['passed']" --trials 1
t bench-1g KFORGE_HARNESS_MEM_MB=1024 bench axpb 0 "r['passed'] and r['candidate']['count'] > 0" --budget-ms 100 --size 0
t check-256m KFORGE_HARNESS_MEM_MB=256 check axpb 0 "r['passed']" --trials 1
t big-1g KFORGE_HARNESS_MEM_MB=1024 check big 1 "not r['passed'] and 'host memory limit 1024 MiB exceeded' in r['summary'] and 'KFORGE_HARNESS_MEM_MB' in r['summary']" --trials 1 --no-odd-size
t big-default - check big 0 "r['passed']" --trials 1 --no-odd-size
t after-big KFORGE_HARNESS_MEM_MB=1024 check axpb 0 "r['passed']" --trials 1
exit $fail
