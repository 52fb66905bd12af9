#!/bin/sh
# bench_check: the phase timings of a check (and a benchmark --size 0) of
# the skill's plain RMSNorm (skill/examples/qwen3-rmsnorm/plain.json: 4096x4096
# bf16 and smaller sizes, plus the hidden odd size, 3 trials) through the
# real kforge and kforge-harness, with the mock libcuda
# (tests/gpu/mock_cuda.c: device memory is host memory, the kernel a C
# function). What it measures is the CPU side of the loop (filling inputs,
# downloads, safeguard scans, references, comparisons); upload, download
# and kernel_runs are not GPU figures. BENCH_CHECK_GPU=1 runs the same on
# this host's GPU instead (the real libcuda, the default sandbox, or
# BENCH_CHECK_SANDBOX=--sandbox=none). The
# first check compiles (cold, its own column); the others hit the cache.
# BENCH_COMMIT names the commit where the tree has no .git. Usage:
# bench_check.sh [report.md] [repeats]; the report goes to
# build/bench/bench-check.md by default.
set -u
SRC=${KFORGE_SRC:-$(pwd)}
BIN=${KFORGE_BIN:-$SRC/build/kforge}
HARNESS=${KFORGE_HARNESS:-$SRC/build/kforge-harness}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
REPORT=${1:-$SRC/build/bench/bench-check.md}
REPS=${2:-3}
if ! [ -x "$CUDA_HOME/bin/nvcc" ] || ! [ -x "$HARNESS" ]; then
	echo "SKIP bench_check: needs nvcc and build/kforge-harness"
	exit 0
fi
T=$(mktemp -d /tmp/kforge-bench-check-XXXXXX)
trap 'rm -rf "$T"' EXIT
GPU=${BENCH_CHECK_GPU:-0}
if [ "$GPU" = 1 ]; then
	WHAT="this host's GPU ($(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1))"
	SANDBOX=${BENCH_CHECK_SANDBOX-}
	HSH=$HARNESS
else
	WHAT="the mock GPU: upload/download/kernel_runs are host memcpy and C code, not GPU figures"
	SANDBOX=--sandbox=none
	cc -O2 -shared -fPIC -I"$CUDA_HOME/include" -o "$T/libcuda.so.1" "$SRC/tests/gpu/mock_cuda.c" -lm || exit 1
	cat >"$T/harness.sh" <<EOS
#!/bin/sh
LD_LIBRARY_PATH="$T" exec "$HARNESS" "\$@"
EOS
	chmod +x "$T/harness.sh"
	HSH=$T/harness.sh
fi
SPEC=$SRC/skill/examples/qwen3-rmsnorm/plain.json
mkdir -p "$(dirname "$REPORT")"
run() { # cmd, extra args...
	cmd=$1
	shift
	LD_LIBRARY_PATH="$T${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" KFORGE_HARNESS="$HSH" "$BIN" "$cmd" "$SPEC" \
		--data-dir "$T/data" $SANDBOX --json "$@" >"$T/out.json" 2>"$T/err"
	python3 - "$T/out.json" "$cmd" <<'EOP' >>"$T/rows" || { tail -5 "$T/err"; exit 1; }
import json, sys
r = json.load(open(sys.argv[1]))
p = r.get("phases")
if not p:
    sys.exit("no phases in the result: " + str(r.get("summary") or r)[:300])
v = r.get("passed", r.get("verdict", ""))
print(json.dumps({"cmd": sys.argv[2], "passed": v, "phases": p,
                  "max_rel": r.get("max_rel_err", r.get("max_rel"))}))
EOP
}
: >"$T/rows"
run check || exit 1 # compiles once (cold): the other runs hit the cache
mv "$T/rows" "$T/cold"
: >"$T/rows"
i=0
while [ "$i" -lt "$REPS" ]; do
	run check || exit 1
	run bench --size 0 || exit 1
	i=$((i + 1))
done
python3 - "$T/rows" "$REPORT" "$(nproc)" "$T/cold" "$WHAT" "${BENCH_COMMIT:-$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null)}" <<'EOP'
import json, sys, statistics, time
rows = [json.loads(l) for l in open(sys.argv[1])]
cold = [json.loads(l) for l in open(sys.argv[4])]
PH = ["compile_ms", "queue_wait_ms", "harness_start_ms", "module_load_ms", "upload_ms",
      "kernel_runs_ms", "download_ms", "reference_ms", "compare_ms", "history_write_ms",
      "total_ms"]
out = ["# bench-check: phase timings of the skill's plain RMSNorm", "",
       "%s, commit %s, %s cores, on %s. Medians over %d runs of each (compile cached); "
       "the cold check is the first one (it compiles)." % (time.strftime("%Y-%m-%d"), sys.argv[6],
       sys.argv[3], sys.argv[5], len(rows) // 2), "",
       "| phase (ms) | check | benchmark --size 0 | check, cold |", "| --- | --- | --- | --- |"]
by = {c: [r for r in rows if r["cmd"] == c] for c in ("check", "bench")}
for k in PH:
    med = [("%.1f" % statistics.median(r["phases"].get(k, 0) for r in by[c])) if by[c] else "-"
           for c in ("check", "bench")]
    out.append("| %s | %s | %s | %.1f |" % (k[:-3], med[0], med[1], cold[0]["phases"].get(k, 0)))
out.append("")
out.append("check verdicts: %s" % sorted({str(r["passed"]) for r in by["check"]}))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print("\n".join(out))
EOP
echo "bench_check: report in $REPORT"
