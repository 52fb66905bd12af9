#!/bin/sh
# bench_check: the phase timings of a check (and a benchmark --size 0) of
# the skill's plain RMSNorm (skill/examples/qwen3-rmsnorm/plain.json: 4096x4096
# bf16 and smaller sizes, plus the hidden odd size, 3 trials) through the
# real kforge and kforge-harness, with the mock libcuda
# (tests/gpu/mock_cuda.c: device memory is host memory, the kernel a C
# function). What it measures is the CPU side of the loop (filling inputs,
# downloads, safeguard scans, references, comparisons); upload, download
# and kernel_runs are not GPU figures. Usage: bench_check.sh [report.md]
# [repeats]; the report goes to build/bench/bench-check.md by default.
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
cc -O2 -shared -fPIC -I"$CUDA_HOME/include" -o "$T/libcuda.so.1" "$SRC/tests/gpu/mock_cuda.c" -lm || exit 1
cat >"$T/harness.sh" <<EOS
#!/bin/sh
LD_LIBRARY_PATH="$T" exec "$HARNESS" "\$@"
EOS
chmod +x "$T/harness.sh"
SPEC=$SRC/skill/examples/qwen3-rmsnorm/plain.json
mkdir -p "$(dirname "$REPORT")"
run() { # cmd, extra args...
	cmd=$1
	shift
	LD_LIBRARY_PATH="$T" KFORGE_HARNESS="$T/harness.sh" "$BIN" "$cmd" "$SPEC" \
		--data-dir "$T/data" --sandbox=none --json "$@" >"$T/out.json" 2>"$T/err"
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
run check || exit 1 # compiles once: the measured runs hit the cache
: >"$T/rows"
i=0
while [ "$i" -lt "$REPS" ]; do
	run check || exit 1
	run bench --size 0 || exit 1
	i=$((i + 1))
done
python3 - "$T/rows" "$REPORT" "$(nproc)" <<'EOP'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
PH = ["compile_ms", "queue_wait_ms", "harness_start_ms", "module_load_ms", "upload_ms",
      "kernel_runs_ms", "download_ms", "reference_ms", "compare_ms", "history_write_ms",
      "total_ms"]
out = ["# bench-check: phase timings with the mock GPU (CPU machine, %s cores)" % sys.argv[3], "",
       "Medians over %d runs of each; mock libcuda: upload/download/kernel_runs are host "
       "memcpy and C code, not GPU figures." % (len(rows) // 2), "",
       "| phase (ms) | check | benchmark --size 0 |", "| --- | --- | --- |"]
by = {c: [r for r in rows if r["cmd"] == c] for c in ("check", "bench")}
for k in PH:
    med = [("%.1f" % statistics.median(r["phases"].get(k, 0) for r in by[c])) if by[c] else "-"
           for c in ("check", "bench")]
    out.append("| %s | %s | %s |" % (k[:-3], med[0], med[1]))
out.append("")
out.append("check verdicts: %s" % sorted({str(r["passed"]) for r in by["check"]}))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print("\n".join(out))
EOP
echo "bench_check: report in $REPORT"
