#!/bin/sh
# eval.sh BIN OUT: `kforge eval run` and `kforge dataset export` on this GPU.
# Scores the reference solutions of every task of kernels/eval
# (tests/gpu/eval/ref: all must be correct, the torch-referenced ones
# against the real PyTorch), the skill's plain and fast RMSNorm posing as
# rmsnorm_bf16 (correct, with their speedups over kforge's kernel) and the
# cheat suite posing as solutions (tests/gpu/eval/cheats.py: each scored
# failed with its safeguard), all in one history; then exports that history
# and checks it (tests/gpu/eval/check.py: loads with pandas and pyarrow
# where installed, exactly the correct solutions, no cheat). The torch tasks
# spend most of their time starting python for their references, so they
# are scored by 8 processes at once sharing the history; the op tasks and
# the skill examples, whose speedups are reported, run after them alone.
# Logs, results and the export go to OUT; the last line is the summary.
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
OUT=$2
cd "$(dirname "$0")/../.." || exit 1
# KFORGE_EVAL_NO_GPU=1 runs it anyway (the plumbing on the libcuda test
# double, whose results are not the expectations above).
if ! nvidia-smi -L >/dev/null 2>&1 && [ -z "${KFORGE_EVAL_NO_GPU:-}" ]; then
	echo "SKIP tests/gpu/eval.sh: no NVIDIA GPU on this host (nvidia-smi -L failed)"
	exit 0
fi
mkdir -p "$OUT/eval"
T=$(mktemp -d /tmp/kforge-evalgpu-XXXXXX)
trap 'rm -rf "$T"' EXIT
D=$T/data
t0=$(date +%s)
step() { echo "== $(($(date +%s) - t0))s $*"; }
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1
# bubblewrap may be unusable here (user namespaces): then unsandboxed.
SB=
python3 -c "
import json, sys
sys.path.insert(0, 'tests/gpu')
import run
json.dump(run.load_spec('tests/gpu/pass/axpb_f32.json')[0], open('$T/axpb.json', 'w'))"
if ! "$BIN" check "$T/axpb.json" --trials 1 --data-dir "$T/probe" --json >"$OUT/probe.json" 2>&1; then
	SB=--sandbox=none
	echo "note: a check in bubblewrap failed here ($(python3 -c "import json; print(json.load(open('$OUT/probe.json'))['summary'][:300])" 2>/dev/null || head -c 300 "$OUT/probe.json")); running with --sandbox=none"
fi
timeout 60 "$BIN" calibrate --data-dir "$D" $SB >"$OUT/calibrate.txt" 2>&1 ||
	echo "note: calibrate failed: $(tail -1 "$OUT/calibrate.txt")"
python3 tests/gpu/eval/cheats.py "$T/cheats"
mkdir -p "$T/skill-plain" "$T/skill-fast"
for v in plain fast; do
	cp "skill/examples/qwen3-rmsnorm/$v.cu" "$T/skill-$v/rmsnorm_bf16.cu"
	python3 -c "
import json
s = json.load(open('skill/examples/qwen3-rmsnorm/check.json'))
s['launch'][0]['kernel'] = 'rmsnorm_$v'
json.dump({'launch': s['launch'], 'notes': 'the skill worked example, $v.cu'}, open('$T/skill-$v/rmsnorm_bf16.json', 'w'))"
done
# ev NAME SOLDIR [eval options]: one eval run into the shared history.
ev() {
	name=$1 dir=$2
	shift 2
	echo "$name $dir" >>"$OUT/eval/sources.txt"
	timeout "${KFORGE_EVAL_PHASE_S:-200}" "$BIN" eval run "$dir" --data-dir "$D" $SB --json \
		--out "$OUT/eval/$name.json" "$@" >"$OUT/eval/$name.stdout" 2>"$OUT/eval/$name.log"
	echo "$name: exit $?, $(python3 -c "import json; print(json.load(open('$OUT/eval/$name.json'))['summary'])" 2>/dev/null)"
}
: >"$OUT/eval/sources.txt"
step "torch-referenced tasks (8 processes) and the cheats"
python3 -c "
import json
ids = [t['id'] for f in ('level1', 'level2') for t in json.load(open('kernels/eval/%s.json' % f))['tasks']]
for g in range(8):
    print(','.join(ids[g::8]))" >"$T/groups"
g=0
while read -r only; do
	g=$((g + 1))
	ev "ref-torch$g" tests/gpu/eval/ref --only "$only" --budget-ms 100 &
done <"$T/groups"
ev cheats "$T/cheats/sol" --tasks "$T/cheats/tasks" --timeout-s 5 --budget-ms 100 &
wait
step "op tasks against kforge's kernels, then the skill's RMSNorm"
ev ref-ops tests/gpu/eval/ref --only "$(python3 -c "
import json
print(','.join(t['id'] for t in json.load(open('kernels/eval/ops.json'))['tasks']))")" --budget-ms 300
ev skill-plain "$T/skill-plain" --only rmsnorm_bf16 --budget-ms 300
ev skill-fast "$T/skill-fast" --only rmsnorm_bf16 --budget-ms 300
step "dataset export"
"$BIN" dataset export --out "$OUT/dataset" --data-dir "$D" --trajectories >"$OUT/export.txt" 2>&1
echo "export: exit $?, $(head -1 "$OUT/export.txt")"
"$BIN" dataset export --out "$OUT/dataset-h200" --data-dir "$D" --gpu H200 --min-speedup 1 --trajectories \
	>"$OUT/export-h200.txt" 2>&1
echo "export --gpu H200 --min-speedup 1: exit $?, $(head -1 "$OUT/export-h200.txt")"
"$BIN" runs --data-dir "$D" --json --limit 1000 >"$OUT/runs.json" 2>/dev/null
step "checks"
python3 tests/gpu/eval/check.py "$OUT/eval" "$T/cheats" "$OUT/dataset" "$OUT/eval/sources.txt" \
	"$OUT/dataset-h200"
rc=$?
step "done"
exit $rc
