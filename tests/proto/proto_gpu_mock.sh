#!/bin/sh
# proto_gpu_mock: the check/benchmark plumbing end to end on a machine
# without a GPU: the real kforge and kforge-harness binaries, the real
# compile service (nvcc), job directories, the report pipe, the reference
# in a separate harness process, the comparison and the safeguards, with a
# test double of libcuda (tests/gpu/mock_cuda.c: host memory, kernels as C
# functions). Unsandboxed (--sandbox=none) because the double is found
# through LD_LIBRARY_PATH. Real GPU behaviour is tested by make test-gpu.
set -u
. "$(dirname "$0")/mock_env.sh"
mock_setup gpu_mock
trap 'rm -rf "$T"' EXIT
mock_harness
python3 - "$SRC/tests/gpu/pass/axpb_f32.json" "$T/axpb.json" <<'EOF'
import sys
sys.path.insert(0, __import__("os").path.dirname(sys.argv[1]) + "/..")
import run
spec, _, _ = run.load_spec(sys.argv[1])
__import__("json").dump(spec, open(sys.argv[2], "w"))
# the same with a baseline whose kernel does not exist
spec["baseline"] = {"source": spec["reference"]["source"],
                    "launch": [dict(spec["reference"]["launch"][0], kernel="nope")]}
__import__("json").dump(spec, open(sys.argv[2].replace(".json", "_nobase.json"), "w"))
# launches chosen by "when": the first (x and w swapped, a wrong answer)
# never runs, the second runs at every size
spec = run.load_spec(sys.argv[1])[0]
good = dict(spec["launch"][0], when="N >= 1")
bad = dict(good, when="N < 0", args=["y", "w", "x", "s", "N"], grid=["N - 1000000"])
spec["launch"] = [bad, good]
__import__("json").dump(spec, open(sys.argv[2].replace(".json", "_when.json"), "w"))
# 64 MiB per tensor: the three device buffers (host memory in the mock)
# fit under a 256 MiB harness limit, the first input's host copy does not
spec = run.load_spec(sys.argv[1])[0]
spec["sizes"] = [{"N": 16 << 20}]
__import__("json").dump(spec, open(sys.argv[2].replace(".json", "_big.json"), "w"))
EOF
fail=0
# The harness must not contain the op templates or their float64 references:
# expected outputs never exist in the candidate's process.
if nm "$HARNESS" 2>/dev/null | grep -qE ' (op_find|op_at|rmsnorm_ref)$'; then
	echo "FAIL proto_gpu_mock: kforge-harness links the op templates / references"
	fail=1
else
	echo "ok   proto_gpu_mock: kforge-harness links no reference code"
fi
# mode, command, expected exit, python assertion on the JSON result r
check() {
	mode=$1; cmd=$2; want=$3; assertion=$4; shift 4
	printf '%s' "$mode" >"$T/mode"
	LD_LIBRARY_PATH="$T" KFORGE_HARNESS="$T/harness.sh" "$BIN" "$cmd" "$T/${SPEC:-axpb}.json" \
		--data-dir "$T/data" --sandbox=none --json "$@" >"$T/out.json" 2>"$T/err"
	code=$?
	if [ "$code" != "$want" ] || ! python3 -c "
import json, sys
r = json.load(open('$T/out.json'))
PH = ['compile_ms', 'queue_wait_ms', 'harness_start_ms', 'module_load_ms', 'upload_ms',
      'kernel_runs_ms', 'download_ms', 'reference_ms', 'compare_ms']
def phased(r):
    # every phase a number >= 0; disjoint parts of the call: their sum is within its total;
    # the CLI starts every harness itself (spare harnesses are the daemon's)
    p = r['phases']
    allp = PH + ['history_write_ms', 'total_ms']
    return sorted(p) == sorted(allp + ['harness_runs', 'harness_spares']) and \
        all(p[k] >= 0 for k in allp) and p['harness_runs'] >= 1 and p['harness_spares'] == 0 and \
        sum(p[k] for k in PH + ['history_write_ms']) <= p['total_ms'] + 0.01
assert $assertion, r.get('summary')
" 2>>"$T/err"; then
		echo "FAIL proto_gpu_mock: $cmd with axpb=$mode: exit $code (want $want)"
		tail -3 "$T/err"
		fail=1
	else
		echo "ok   proto_gpu_mock: $cmd with axpb=$mode"
	fi
}
check ok check 0 "r['passed'] and len(r['sizes']) == 3 and r['sizes'][2]['odd_size'] and r['device']['name'] == 'kforge mock GPU' and phased(r) and r['phases']['harness_start_ms'] > 0"
# The run record keeps the phases (all but its own write, timed after it).
run_id=$(python3 -c "import json; print(json.load(open('$T/out.json'))['run_id'])")
if "$BIN" runs show "$run_id" --data-dir "$T/data" --json >"$T/run.json" 2>>"$T/err" &&
	python3 -c "
import json
p = json.load(open('$T/run.json'))['run']['result']['phases']
assert 'kernel_runs_ms' in p and 'compile_ms' in p and 'history_write_ms' not in p, p
"; then
	echo "ok   proto_gpu_mock: the run record keeps the phases"
else
	echo "FAIL proto_gpu_mock: the run record keeps the phases"
	fail=1
fi
check partial check 1 "'coverage' in r['safeguards_fired'] and 'never written' in r['summary'] and r['replay']['seed']"
check oob check 1 "'out_of_bounds' in r['safeguards_fired'] and 'wrote past the end' in r['summary']"
check mutate check 1 "'input_modified' in r['safeguards_fired']"
# A value equal to a poison, written the same by every launch, is written:
# wrong here (a NaN), but not 'never written' nor 'state between launches'.
check poisonb check 1 "not r['passed'] and 'coverage' not in r['safeguards_fired'] and 'state_across_launches' not in r['safeguards_fired']"
# The same in the verification after timing (two runs, poisons A and B):
# an element holding the first poison after both runs was written.
check poisona check 1 "not r['passed'] and 'coverage' not in r['safeguards_fired'] and 'state_across_launches' not in r['safeguards_fired']"
check poisona bench 1 "not r['passed'] and 'never written' not in r['summary'] and 'coverage' not in str(r['sizes'][0])" \
	--budget-ms 50 --size 1
check fault check 1 "'fault' in r['safeguards_fired'] and 'CUDA_ERROR_ILLEGAL_ADDRESS' in r['summary']"
# The first hang decides the verdict: later sizes (the odd one too) are not
# run, naming the size that hung. Its time is the kernel runs' (the
# watchdog's line reports it), not the harness start's.
HUNG="[t['safeguards'][0]['name'] for s in r['sizes'] for t in s['trials']] == ['timeout', 'not_run', 'not_run'] and 'did not finish at N=100000' in r['sizes'][2]['trials'][0]['safeguards'][0]['message'] and r['sizes'][2]['odd_size']"
HANG_TIME="phased(r) and r['phases']['module_load_ms'] + r['phases']['upload_ms'] + r['phases']['kernel_runs_ms'] >= 1990 and r['phases']['harness_start_ms'] < r['phases']['kernel_runs_ms']"
check hang check 1 "'timeout' in r['safeguards_fired'] and 'did not finish' in r['summary'] and $HUNG and $HANG_TIME" --timeout-s 2 --trials 1
# Without timeout_s the watchdog follows the work: this small spec gets the
# 2 s floor, not a minute.
check hang check 1 "'within 2000 ms' in r['summary'] and $HUNG" --trials 1
check hang bench 1 "'timeout' in r['safeguards_fired'] and r['phases']['total_ms'] < 20000" --size 0
# A hung CUDA reference: the sizes after it are compared against nothing,
# and say why, instead of waiting for the reference's watchdog each.
check refhang check 1 "[t['safeguards'][-1]['message'] for s in r['sizes'] for t in s['trials']] == ['the reference could not be computed: the CUDA reference did not finish within 2000 ms: the harness was killed'] + ['the reference could not be computed: not run: the CUDA reference did not finish at N=100000'] * 2 and r['phases']['reference_ms'] >= 1990" --timeout-s 2 --trials 1
check refhang bench 1 "[s['verification']['note'] for s in r['sizes']] == ['outputs not compared: the CUDA reference failed: the CUDA reference did not finish within 2000 ms', 'outputs not compared: the CUDA reference failed: not run: the CUDA reference did not finish at N=100000']" \
	--budget-ms 50 --timeout-s 2 --no-baseline
check ok check 0 "r['passed']" --trials 1
# The scan of a large output runs in chunks on several threads: the count
# and the first indices are those of one pass (the second half unwritten,
# from an element inside the second chunk).
check partial check 1 "'300000 of 600000' in r['sizes'][0]['trials'][0]['safeguards'][0]['message'] and '[300000]' in r['sizes'][0]['trials'][0]['safeguards'][0]['message']" \
	--replay-size N=600000 --replay-seed ff
check partial check 1 "r['sizes'][0]['trials'][0]['seed'] == '00000000000000ff' and len(r['sizes']) == 1" \
	--replay-size N=4097 --replay-seed ff
check ok bench 0 "r['passed'] and r['candidate']['count'] >= 8 and 'speedup' in r and r['sizes'][0]['verified'] and phased(r) and r['phases']['kernel_runs_ms'] > 0" \
	--budget-ms 50 --size 1
check partial bench 1 "not r['passed'] and 'verification after timing' not in r['summary'] and 'failed verification' in r['summary']" \
	--budget-ms 50 --size 1
check hang bench 1 "[s['safeguards'][0]['name'] for s in r['sizes']] == ['timeout', 'not_run'] and 'did not finish at N=100000' in r['sizes'][1]['safeguards'][0]['message'] and 'within 2000 ms' in r['summary'] and $HANG_TIME" \
	--budget-ms 50 --timeout-s 2
# Without --json the CLI prints where the time went, largest first.
printf ok >"$T/mode"
if LD_LIBRARY_PATH="$T" KFORGE_HARNESS="$T/harness.sh" "$BIN" check "$T/axpb.json" \
	--data-dir "$T/data" --sandbox=none --trials 1 >"$T/out.txt" 2>>"$T/err" &&
	grep -Eq '^time: [0-9]+ ms \(.*harness start [0-9]+' "$T/out.txt"; then
	echo "ok   proto_gpu_mock: kforge check prints its phases"
else
	echo "FAIL proto_gpu_mock: kforge check prints its phases"
	cat "$T/out.txt"
	fail=1
fi
# The harness's host memory limit (RLIMIT_DATA from KFORGE_HARNESS_MEM_MB):
# past it the answer names the limit and the knob; without it the same
# spec passes; a bad value is refused naming the variable.
# An AddressSanitizer harness (make asan) runs without the limit: its
# shadow memory would count against it.
HOSTMEM="'host memory limit 256 MiB exceeded' in r['summary'] and 'KFORGE_HARNESS_MEM_MB' in r['summary']"
if nm "$HARNESS" 2>/dev/null | grep -q ' __asan_init$'; then
	echo "ok   proto_gpu_mock: the host memory limit is skipped (AddressSanitizer harness)"
else
	# --timeout-s: the mock runs the kernel on the CPU, far slower than the
	# work-scaled default watchdog (floor 2 s) assumes of a GPU
	KFORGE_HARNESS_MEM_MB=256 SPEC=axpb_big check ok check 1 "not r['passed'] and $HOSTMEM" \
		--trials 1 --no-odd-size --timeout-s 120
	SPEC=axpb_big check ok check 0 "r['passed']" --trials 1 --no-odd-size --timeout-s 120
fi
KFORGE_HARNESS_MEM_MB=12 check ok check 1 "'KFORGE_HARNESS_MEM_MB' in r['summary'] and 'from 256' in r['summary']" --trials 1
SPEC=axpb_when check ok check 0 "r['passed'] and len(r['sizes']) == 3" --trials 1
SPEC=axpb_nobase check ok bench 0 "'baseline_unavailable' in r['flags'] and 'baseline' not in r['sizes'][0]" \
	--budget-ms 50 --size 1
# A built-in op reference (the float64 rmsnorm, computed by the daemon
# while the harness runs): the mock's plain RMSNorm passes every size and
# trial; a wrong one (y scaled by 1.5: mode wrong) fails with a mismatch.
cp "$SRC/skill/examples/qwen3-rmsnorm/plain.cu" "$T/plain.cu"
python3 - "$SRC/skill/examples/qwen3-rmsnorm/plain.json" "$T/rms.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
s["sizes"] = [{"T": 64, "D": 512}, {"T": 3, "D": 1000}]
json.dump(s, open(sys.argv[2], "w"))
EOF
SPEC=rms check ok check 0 "r['passed'] and len(r['sizes']) == 3 and phased(r)" --trials 2
SPEC=rms check wrong check 1 "not r['passed'] and 'outside' in r['summary']" --trials 2
exit $fail
