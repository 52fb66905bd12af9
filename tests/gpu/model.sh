#!/bin/sh
# make test-gpu, the model side: tests/gpu/test_torch_ops.py (every kforge
# torch op against the PyTorch formula, opcheck, clear errors, compile with
# fullgraph, CUDA-graph replay), then benchmark_model through
# `kforge model-bench` (the daemon's jail, the runner, the history) on
# small random-init models: a Qwen3 with a prefill and a decode shape and a
# DiT block; each result must carry a latency for every mode, speedups,
# the agreement verdict and a run id; an unknown class must be an error
# that lists the model's classes. Skips without a GPU or torch.
# KFORGE_BIN: the kforge binary (default build/kforge). Extra arguments go
# to every model-bench call (e.g. --sandbox=none where bwrap cannot run).
here=$(dirname "$0")
root=$here/../..
bin=${KFORGE_BIN:-$root/build/kforge}
if ! nvidia-smi -L >/dev/null 2>&1; then
	echo "SKIP tests/gpu/model.sh: no NVIDIA GPU on this host"
	exit 0
fi
if ! python3 -c 'import torch, transformers' >/dev/null 2>&1; then
	echo "SKIP tests/gpu/model.sh: python3 cannot import torch and transformers"
	exit 0
fi
fail=0
# KF_SKIP_OPS_TEST=1: the ops test already ran (a GPU session running both)
[ -n "${KF_SKIP_OPS_TEST:-}" ] || python3 "$here/test_torch_ops.py" || fail=1
data=$(mktemp -d /tmp/kforge-model-test.XXXXXX)
trap 'rm -rf "$data"' EXIT
small="--dim layers=2 --dim hidden=1024 --dim intermediate=2816 --dim heads=8 --dim kv_heads=4 --dim vocab=32000"

# check_result FILE MODES...: every mode has a latency, speedups, agreement, run id
check_result() {
	python3 - "$@" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
modes = set(sys.argv[2:])
got = {x["mode"] for x in r.get("latency", [])}
bad = []
if not modes <= got:
    bad.append(f"modes {sorted(modes - got)} have no latency")
if not r.get("speedups"):
    bad.append("no speedups")
if not isinstance(r.get("agreement"), dict) or "patched_no_further" not in r["agreement"]:
    bad.append("no agreement verdict")
if not str(r.get("run_id", "")).startswith("r"):
    bad.append("no run id")
print(("FAIL " if bad else "ok   ") + sys.argv[1].rsplit("/", 1)[-1] + ": " +
      ("; ".join(bad) if bad else r["summary"]))
sys.exit(1 if bad else 0)
EOF
}

# shellcheck disable=SC2086
"$bin" model-bench qwen3 $small --shape prefill:2x256 --shape decode:4x128 --iters 5 \
	--json --data-dir "$data" "$@" >"$data/qwen3.json" 2>"$data/qwen3.err"
check_result "$data/qwen3.json" eager patched compile patched_compile graphs patched_graphs ||
	{ fail=1; tail -5 "$data/qwen3.err"; }
"$bin" model-bench dit --dim layers=2 --dim hidden=1024 --dim heads=16 --shape prefill:1x512 \
	--iters 5 --json --data-dir "$data" "$@" >"$data/dit.json" 2>"$data/dit.err"
check_result "$data/dit.json" eager patched compile patched_compile ||
	{ fail=1; tail -5 "$data/dit.err"; }
# shellcheck disable=SC2086
if "$bin" model-bench qwen3 $small --patch Qwen2RMSNorm=rmsnorm --shape prefill:1x64 \
	--modes eager,patched --iters 3 --data-dir "$data" "$@" >"$data/bad.out" 2>&1; then
	echo "FAIL unknown class: model-bench succeeded"
	fail=1
elif grep -q "its classes: .*Qwen3RMSNorm" "$data/bad.out"; then
	echo "ok   unknown class: the error lists the model's classes"
else
	echo "FAIL unknown class: $(head -c 300 "$data/bad.out")"
	fail=1
fi
exit $fail
