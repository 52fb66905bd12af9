# Sourced by the protocol suites that run the real kforge and kforge-harness
# on the libcuda test double (tests/gpu/mock_cuda.c: host memory, kernels as
# C functions), unsandboxed because the double is found through
# LD_LIBRARY_PATH.
#   mock_setup NAME  SRC, BIN, HARNESS, CUDA_HOME; skips the suite (exit 0)
#                    without nvcc or the harness; T a new temporary
#                    directory (the caller's trap removes it) holding the
#                    double as libcuda.so.1
#   mock_harness     $T/harness.sh: the harness on the double, in the mode
#                    $T/mode names (MOCK_CUDA_AXPB)
#   mock_axpb_spec   $T/axpb.json: the pass suite's axpb_f32 spec
mock_setup() {
	SRC=${KFORGE_SRC:-$(pwd)}
	BIN=${KFORGE_BIN:-$SRC/build/kforge}
	HARNESS=${KFORGE_HARNESS:-$SRC/build/kforge-harness}
	CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
	if ! [ -x "$CUDA_HOME/bin/nvcc" ] || ! [ -x "$HARNESS" ]; then
		echo "SKIP proto_$1: needs nvcc and build/kforge-harness"
		exit 0
	fi
	T=$(mktemp -d "/tmp/kforge-$1-XXXXXX")
	cc -shared -fPIC -I"$CUDA_HOME/include" -o "$T/libcuda.so.1" \
		"$SRC/tests/gpu/mock_cuda.c" || { rm -rf "$T"; exit 1; }
}

mock_harness() {
	cat >"$T/harness.sh" <<EOS
#!/bin/sh
export MOCK_CUDA_AXPB=\$(cat "$T/mode" 2>/dev/null)
LD_LIBRARY_PATH="$T" exec "$HARNESS" "\$@"
EOS
	chmod +x "$T/harness.sh"
}

mock_axpb_spec() {
	python3 - "$SRC/tests/gpu/pass/axpb_f32.json" "$T/axpb.json" <<'EOS'
import json, os, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]) + "/..")
import run
spec, _, _ = run.load_spec(sys.argv[1])
json.dump(spec, open(sys.argv[2], "w"))
EOS
}
