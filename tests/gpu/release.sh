#!/bin/sh
# release.sh: one GPU session that refreshes every figure kforge documents,
# for a lent GPU machine with little time: the kernel benchmark table, the
# worked examples checked and benchmarked through kforge, the demo, the
# calibrated ceilings, the kernels' GPU suite and the check/cheat suite.
# Uses binaries already built (make all; kernels/bench/build.sh), so nothing
# compiles here. Logs go to $OUT (or build/release); each part has a time
# limit, most important first, and the summary is printed last.
#   OUT=/tmp/out sh tests/gpu/release.sh
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-build/release}
mkdir -p "$OUT"
BIN=$(pwd)/build/kforge
export KFORGE_HARNESS=$(pwd)/build/kforge-harness KFORGE_FATBIN=$(pwd)/build/kernels/kernels.fatbin
export KFORGE_KB=$(pwd)/build/knowledge.db
DATA=$(mktemp -d)
summary=$OUT/summary.txt
: >"$summary"
part() { # name, seconds, command...
	name=$1 secs=$2
	shift 2
	start=$(date +%s)
	timeout "$secs" "$@" >"$OUT/$name.log" 2>&1
	rc=$?
	echo "$name: exit $rc in $(($(date +%s) - start)) s" >>"$summary"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >>"$summary" 2>&1

BENCH_BUDGET_S=${BENCH_BUDGET_S:-110} KF_LIB=build/gpu-kernels/libkfk.so \
	BENCH_MD=$OUT/bench-kernels.md BENCH_JSON=$OUT/bench-kernels.json PYTHONUNBUFFERED=1 \
	part bench-kernels 170 python3 kernels/bench/bench.py

part examples 240 sh tests/gpu/examples.sh "$BIN" "$DATA"

part kernels-test 60 build/gpu-kernels/kernels_test build/kernels/kernels.fatbin
part check-suite 120 python3 tests/gpu/run.py --bin "$BIN" --out "$OUT" --deadline 110
cat "$summary"
