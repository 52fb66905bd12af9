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
# BENCH_CHECK_DAEMON=1 measures through the daemon instead, as an agent
# meets it: one `kforge serve --http` (its spare harness processes on:
# KFORGE_HARNESS_SPARES from the caller's environment, 0 turns them off),
# a first check that starts the GPU's spares (its own column), then per
# repeat POST /v1/check (compile cached), POST /v1/bench with size 0 and a
# cold check (the source made new by a comment, so it compiles), each call
# BENCH_CHECK_GAP_S seconds (default 1: an agent's edit between calls)
# after the last; "call" is the HTTP call's wall time at the client.
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
if [ "${BENCH_CHECK_DAEMON:-0}" = 1 ]; then
	LD_LIBRARY_PATH="$T${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" KFORGE_HARNESS="$HSH" "$BIN" serve \
		--http 127.0.0.1:0 --port-file "$T/port" --data-dir "$T/data" $SANDBOX \
		--log-level debug 2>"$T/serve.log" &
	DPID=$!
	# the daemon (and its spares) end with this script, also when it is killed
	trap 'kill $DPID ${CPID:-} 2>/dev/null; wait $DPID 2>/dev/null; rm -rf "$T"' EXIT
	trap 'exit 1' INT TERM
	i=0
	while [ ! -s "$T/port" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	WHAT="$WHAT; through kforge serve (POST /v1/check, /v1/bench), $(grep -o 'each GPU keeps [0-9]* spare[^(]*\|no spare kforge-harness processes' "$T/serve.log" | head -1 | sed 's/ *$//')"
	python3 - "$SPEC" "$(cat "$T/port")" "$REPS" "${BENCH_CHECK_GAP_S:-1}" "$T" "$GPU" <<'EOP' &
import json, os, sys, time, urllib.request
spec_path, port, reps, gap, T = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
mock = sys.argv[6] != "1"
spec = json.load(open(spec_path))
src = open(os.path.join(os.path.dirname(spec_path), spec.pop("source_file"))).read()
def call(cmd, source, extra, out):
    body = dict({"spec": dict(spec, source=source)}, **extra)
    if mock:  # the mock runs kernels on the CPU: the work-scaled watchdog is a GPU's
        body["timeout_s"] = 120
    req = urllib.request.Request("http://127.0.0.1:%s/v1/%s" % (port, cmd), json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=600) as f:
            r = json.loads(f.read())
    except urllib.error.HTTPError as e:
        r = json.loads(e.read() or b"{}")
    wall = (time.monotonic() - t0) * 1e3
    p = r.get("phases")
    if not p:
        sys.exit("%s: no phases in the result: %s" % (cmd, str(r.get("summary") or r)[:300]))
    p["call_ms"] = wall
    if not r.get("passed"):
        print("%s did not pass: %s" % (cmd, r.get("summary", "")[:300]), file=sys.stderr)
    print(json.dumps({"cmd": cmd, "passed": r.get("passed"), "phases": p}), file=out, flush=True)
    time.sleep(gap)
with open(T + "/first", "w") as f:
    call("check", src, {}, f)
with open(T + "/rows", "w") as f, open(T + "/cold", "w") as c:
    for i in range(reps):
        call("check", src, {}, f)
        call("bench", src, {"size": 0}, f)
        call("check", src + "\n// cold %d %f\n" % (i, time.time()), {}, c)
EOP
	CPID=$! # waited for in the background: a signal to this script ends it at once
	wait $CPID || { tail -20 "$T/serve.log"; exit 1; }
	# the spares' exit times (debug lines) and anything else the daemon said
	cp "$T/serve.log" "${REPORT%.md}.serve.log"
fi
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
[ "${BENCH_CHECK_DAEMON:-0}" = 1 ] || {
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
: >"$T/first"
}
python3 - "$T/rows" "$REPORT" "$(nproc)" "$T/cold" "$WHAT" "${BENCH_COMMIT:-$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null)}" "$T/first" <<'EOP'
import json, sys, statistics, time
rows = [json.loads(l) for l in open(sys.argv[1])]
cold = [json.loads(l) for l in open(sys.argv[4])]
first = [json.loads(l) for l in open(sys.argv[7])]
PH = ["compile_ms", "queue_wait_ms", "harness_start_ms", "module_load_ms", "upload_ms",
      "kernel_runs_ms", "download_ms", "reference_ms", "compare_ms", "history_write_ms",
      "total_ms", "call_ms", "harness_runs", "harness_spares"]
daemon = bool(first)
out = ["# bench-check: phase timings of the skill's plain RMSNorm", "",
       "%s, commit %s, %s cores, on %s. Medians over %d runs of each (compile cached)%s." % (
       time.strftime("%Y-%m-%d"), sys.argv[6], sys.argv[3], sys.argv[5], len(rows) // 2,
       "; the cold check compiles a source made new each repeat (median of as many); the "
       "first check is the daemon's first GPU job (no spare yet; it compiles)" if daemon else
       "; the cold check is the first one (it compiles)"), "",
       "| phase (ms) | check | benchmark --size 0 | check, cold |" + (" first check |" if daemon else ""),
       "| --- | --- | --- | --- |" + (" --- |" if daemon else "")]
by = {c: [r for r in rows if r["cmd"] == c] for c in ("check", "bench")}
def med(rs, k):
    v = [r["phases"][k] for r in rs if k in r["phases"]]
    return ("%.1f" % statistics.median(v)) if v else "-"
for k in PH:
    cells = [med(by["check"], k), med(by["bench"], k), med(cold, k)] + ([med(first, k)] if daemon else [])
    if all(c == "-" for c in cells):
        continue
    out.append("| %s | %s |" % (k[:-3] if k.endswith("_ms") else k, " | ".join(cells)))
out.append("")
out.append("check verdicts: %s" % sorted({str(r["passed"]) for r in by["check"] + cold + first}))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print("\n".join(out))
EOP
echo "bench_check: report in $REPORT"
