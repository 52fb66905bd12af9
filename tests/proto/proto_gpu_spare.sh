#!/bin/sh
# proto_gpu_spare: the daemon's spare kforge-harness processes
# (sandbox/check/check_spare.c) on the mock libcuda (tests/gpu/mock_cuda.c)
# with two devices, the real kforge serve and kforge-harness, unsandboxed as
# proto_gpu_mock.sh is. Scenarios in proto_gpu_spare.py.
set -u
. "$(dirname "$0")/mock_env.sh"
mock_setup gpu_spare
trap 'rm -rf "$T"' EXIT
mock_axpb_spec
# The harness on the double. A fresh start (no --wait-fd: a harness started
# for its job) says so in $T/started-PID and waits while $T/hold exists, so
# two jobs at once hold both GPUs; spares start at once.
cat >"$T/harness.sh" <<EOF
#!/bin/sh
case "\$*" in
*--wait-fd*) ;;
*) : >"$T/started-\$\$"; while [ -f "$T/hold" ]; do sleep 0.05; done ;;
esac
export MOCK_CUDA_DEVICES=2 # the jail's environment is a clean one
export MOCK_CUDA_AXPB=\$(cat "$T/mode" 2>/dev/null) # read as the process starts
LD_LIBRARY_PATH="$T" exec "$HARNESS" "\$@"
EOF
chmod +x "$T/harness.sh"
T="$T" MOCK_CUDA_DEVICES=2 LD_LIBRARY_PATH="$T" KFORGE_HARNESS="$T/harness.sh" \
	python3 "$SRC/tests/proto/proto_gpu_spare.py" "$BIN"
