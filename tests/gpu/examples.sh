#!/bin/sh
# examples.sh BIN DATA: the skill's worked examples through the real CLI on
# this GPU (calibrate, check and bench each spec, the run history, a
# comparison of the plain and fast RMSNorm), then `kforge demo`.
set -u
BIN=$1
DATA=$2
cd "$(dirname "$0")/../.." || exit 1
fail=0
"$BIN" calibrate --data-dir "$DATA" || fail=1
for ex in qwen3-rmsnorm diffusers-geglu; do
	for spec in skill/examples/$ex/*.json; do
		echo "== check $spec"
		timeout 90 "$BIN" check "$spec" --data-dir "$DATA" || fail=1
		echo "== bench $spec"
		timeout 60 "$BIN" bench "$spec" --data-dir "$DATA" --size 0 || fail=1
	done
done
echo "== runs"
"$BIN" runs --data-dir "$DATA" --limit 20
ids=$("$BIN" runs --data-dir "$DATA" --kind bench --kernel rmsnorm --json --limit 2 |
	python3 -c 'import json,sys; print(" ".join(r["id"] for r in json.load(sys.stdin)["runs"]))')
echo "== compare $ids"
"$BIN" runs compare $ids --data-dir "$DATA" || fail=1
echo "== demo"
timeout 120 "$BIN" demo --data-dir "$DATA" || fail=1
exit $fail
