#!/bin/sh
# proto_slurm: the Slurm executor end to end on a one-node cluster brought
# up here from Debian's slurm-wlm and munge: munged, slurmctld and slurmd
# with a generated slurm.conf in a temporary directory (own ports, own
# state, two fake GPUs as gres of two types, h100 and a100), torn down
# after. The real kforge serves
# with --executor slurm; the compute node's jobs run `kforge exec-job` with
# the mock libcuda (tests/gpu/mock_cuda.c), unsandboxed as proto_gpu_mock.sh
# is. The scenarios are in proto_slurm.py. Needs root (slurmd starts jobs
# as their user, and the fake GPU nodes are made with mknod).
set -u
SRC=${KFORGE_SRC:-$(pwd)}
BIN=${KFORGE_BIN:-$SRC/build/kforge}
HARNESS=${KFORGE_HARNESS:-$SRC/build/kforge-harness}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
skip() { echo "SKIP proto_slurm: $*"; exit 0; }
for p in munged slurmctld slurmd sbatch squeue scancel sinfo; do
	command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] ||
		skip "$p not installed (Debian packages slurm-wlm and munge: make deps)"
done
[ "$(id -u)" = 0 ] || skip "needs root: slurmd runs jobs as their user and the fake GPUs are device nodes (CI runs as root)"
[ -x "$CUDA_HOME/bin/nvcc" ] && [ -x "$HARNESS" ] || skip "needs nvcc and build/kforge-harness"
PATH=$PATH:/usr/sbin
T=$(mktemp -d /tmp/kforge-slurm-XXXXXX)
chmod 755 "$T"
cleanup() {
	[ -f "$T/slurm.conf" ] && SLURM_CONF="$T/slurm.conf" scancel --quiet --full -p gpu >/dev/null 2>&1
	for f in slurmd slurmctld munged; do
		[ -f "$T/$f.pid" ] && kill "$(cat "$T/$f.pid")" 2>/dev/null
	done
	sleep 1
	for f in slurmd slurmctld munged; do
		[ -f "$T/$f.pid" ] && kill -9 "$(cat "$T/$f.pid")" 2>/dev/null
	done
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
mkdir -p "$T/state" "$T/spool" "$T/log" "$T/shared" "$T/node-data"
ports=$(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')
set -- $ports
mknod "$T/gpu0" c 1 3 && mknod "$T/gpu1" c 1 3 || skip "cannot mknod the fake GPU device nodes here"
cat >"$T/slurm.conf" <<EOF
ClusterName=kforgetest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$1
SlurmdPort=$2
AuthType=auth/munge
AuthInfo=socket=$T/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
GresTypes=gpu
ReturnToService=2
SlurmdTimeout=5
MinJobAge=300
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
NodeName=kfnode NodeAddr=127.0.0.1 CPUs=2 Gres=gpu:h100:1,gpu:a100:1 State=UNKNOWN
PartitionName=gpu Nodes=kfnode Default=YES MaxTime=INFINITE State=UP
PartitionName=short Nodes=kfnode MaxTime=1 State=UP
EOF
printf 'NodeName=kfnode Name=gpu Type=h100 File=%s/gpu0\nNodeName=kfnode Name=gpu Type=a100 File=%s/gpu1\n' "$T" "$T" >"$T/gres.conf"
dd if=/dev/urandom of="$T/munge.key" bs=1024 count=1 2>/dev/null
chmod 600 "$T/munge.key"
export SLURM_CONF="$T/slurm.conf"
munged --key-file="$T/munge.key" --socket="$T/munge.sock" --pid-file="$T/munged.pid" \
	--log-file="$T/log/munged.log" --seed-file="$T/munge.seed" --force ||
	skip "munged does not start here (see $T/log/munged.log)"
slurmctld -f "$T/slurm.conf" -i || { cat "$T/log/slurmctld.log"; exit 1; }
slurmd -f "$T/slurm.conf" -N kfnode || { cat "$T/log/slurmd.log"; exit 1; }
up=0
for _ in $(seq 1 100); do
	[ "$(sinfo -h -n kfnode -p gpu -o %t 2>/dev/null)" = idle ] && { up=1; break; }
	sleep 0.2
done
[ "$up" = 1 ] || { echo "FAIL proto_slurm: the node never became idle"; sinfo; tail -5 "$T/log/slurmctld.log"; exit 1; }
cc -shared -fPIC -I"$CUDA_HOME/include" -o "$T/libcuda.so.1" "$SRC/tests/gpu/mock_cuda.c" || exit 1
# The harness the node runs: the mock libcuda; $T/hold keeps it from
# starting (the test releases it), $T/started-* says it got there.
cat >"$T/harness.sh" <<EOF
#!/bin/sh
touch "$T/started-\$\$"
while [ -f "$T/hold" ]; do sleep 0.1; done
export MOCK_CUDA_AXPB=\$(cat "$T/mode" 2>/dev/null)
LD_LIBRARY_PATH="$T" exec "$HARNESS" "\$@"
EOF
chmod +x "$T/harness.sh"
echo ok >"$T/mode"
start=$(date +%s)
T="$T" LD_LIBRARY_PATH="$T" KFORGE_HARNESS="$T/harness.sh" KFORGE_NODE_DATA_DIR="$T/node-data" \
	python3 "$SRC/tests/proto/proto_slurm.py" "$BIN" "$SRC"
rc=$?
echo "proto_slurm: $(($(date +%s) - start)) s of scenarios"
exit $rc
