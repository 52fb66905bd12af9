#!/bin/sh
# proto_gpu_pool: the GPU pool's claims on a host with two GPUs, without a
# GPU: the mock libcuda (tests/gpu/mock_cuda.c) with MOCK_CUDA_DEVICES=2,
# the real kforge serve and kforge-harness, unsandboxed as proto_gpu_mock.sh
# is. Scenarios in proto_gpu_pool.py: get_gpu_specs local lists both
# devices; two benchmarks at once run on different GPUs; four at once: two
# run, two wait, all four finish, never two on one GPU.
set -u
. "$(dirname "$0")/mock_env.sh"
mock_setup gpu_pool
trap 'rm -rf "$T"' EXIT
# The harness: says which job it got ($T/started-PID holds its job.json),
# waits while $T/hold exists, then runs on the mock holding $T/busy-DEVICE
# (mkdir is atomic: a second harness on the same GPU leaves $T/clash).
cat >"$T/harness.sh" <<EOF
#!/bin/sh
cp job.json "$T/.s-\$\$" && mv "$T/.s-\$\$" "$T/started-\$\$"
while [ -f "$T/hold" ]; do sleep 0.05; done
export MOCK_CUDA_DEVICES=2 # the jail's environment is a clean one
dev=\$(sed -n 's/.*"device":\([0-9]*\).*/\1/p' job.json)
mkdir "$T/busy-\$dev" 2>/dev/null || echo "GPU \$dev" >>"$T/clash"
LD_LIBRARY_PATH="$T" "$HARNESS" "\$@"
rc=\$?
rmdir "$T/busy-\$dev" 2>/dev/null
exit \$rc
EOF
chmod +x "$T/harness.sh"
# The wrapper reads each job.json as it starts: every run starts its own
# harness (spare harnesses start before their job: proto_gpu_spare.sh).
T="$T" MOCK_CUDA_DEVICES=2 KFORGE_HARNESS_SPARES=0 LD_LIBRARY_PATH="$T" KFORGE_HARNESS="$T/harness.sh" \
	python3 "$SRC/tests/proto/proto_gpu_pool.py" "$BIN" "$SRC"
