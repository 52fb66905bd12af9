#!/bin/sh
# MCP clients from npm against kforge (tests/sdk, versions pinned in
# package.json and package-lock.json, installed with `npm ci` on first use):
# the TypeScript SDK client over stdio (client.mjs, demo_workflow.mjs), then
# the tour (tour.mjs: every tool on a success and an error path, results
# checked against each tool's outputSchema) with the SDK 1.x Client, the v2
# client and the Inspector CLI, over stdio and HTTP. The tour's GPU tools
# run on the libcuda test double of proto_gpu_mock.sh (tests/gpu/mock_cuda.c,
# --sandbox=none); benchmark_model on a driver double
# (tests/sdk/model_driver_double.py, found through KFORGE_ROOT). Set KFORGE_SDK_HTTP_URL to also run client.mjs against a
# running HTTP server.
set -eu
BIN=${KFORGE_BIN:-build/kforge}
SRC=${KFORGE_SRC:-.}
DIR="$SRC/tests/sdk"
HARNESS=${KFORGE_HARNESS:-$(dirname "$BIN")/kforge-harness}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
command -v node >/dev/null || { echo "proto_sdk: node is not installed"; exit 1; }
for p in @modelcontextprotocol/sdk @modelcontextprotocol/client @modelcontextprotocol/inspector node; do
	[ -d "$DIR/node_modules/$p" ] && continue
	(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error) ||
		{ echo "proto_sdk: npm ci failed (is the npm registry reachable?)"; exit 1; }
	break
done
DATA=$(mktemp -d)
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$DATA"' EXIT
ABS_BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
node "$DIR/client.mjs" stdio "$ABS_BIN" "$DATA"
# The demo workflow (GPU facts, guides, compile, check, benchmark, runs).
mkdir -p "$DATA/workflow"
node "$DIR/demo_workflow.mjs" "$ABS_BIN" "$DATA/workflow"
if [ -n "${KFORGE_SDK_HTTP_URL:-}" ]; then
	node "$DIR/client.mjs" http "$KFORGE_SDK_HTTP_URL"
fi

# The tour. The Inspector needs Node 22: the pinned node package's binary.
if ! [ -x "$CUDA_HOME/bin/nvcc" ] || ! [ -x "$HARNESS" ]; then
	echo "SKIP proto_sdk tour: needs nvcc and build/kforge-harness"
	exit 0
fi
NODE22="$DIR/node_modules/.bin/node"
ABS_HARNESS="$(cd "$(dirname "$HARNESS")" && pwd)/$(basename "$HARNESS")"
M="$DATA/mock"
mkdir -p "$M"
cc -shared -fPIC -I"$CUDA_HOME/include" -o "$M/libcuda.so.1" "$SRC/tests/gpu/mock_cuda.c"
mkdir -p "$M/root/sandbox/model"
cp "$SRC/tests/sdk/model_driver_double.py" "$M/root/sandbox/model/model_bench.py"
printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$M" "$ABS_HARNESS" >"$M/harness"
# One command for every client's stdio server: some clients pass the server
# only a few environment variables.
# profile_kernel runs the stand-in ncu (tests/data/ncu/ncu: the recorded report).
NCU="$(cd "$SRC" && pwd)/tests/data/ncu/ncu"
printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" KFORGE_HARNESS="%s" KFORGE_ROOT="%s" KFORGE_NCU="%s" exec "%s" serve --data-dir "%s" --sandbox=none --log-level warn\n' \
	"$M" "$M/harness" "$M/root" "$NCU" "$ABS_BIN" "$DATA/tour" >"$M/kforge"
chmod +x "$M/harness" "$M/kforge"
LD_LIBRARY_PATH="$M" KFORGE_HARNESS="$M/harness" KFORGE_ROOT="$M/root" KFORGE_NCU="$NCU" \
	"$ABS_BIN" serve --http 127.0.0.1:0 \
	--port-file "$DATA/port" --data-dir "$DATA/tour-http" --sandbox=none --log-level warn \
	2>"$DATA/http.log" &
PID=$!
i=0
while [ ! -s "$DATA/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
URL="http://127.0.0.1:$(cat "$DATA/port")/mcp"
fail=0
for client in sdk1 v2 inspector; do
	"$NODE22" "$DIR/tour.mjs" $client stdio "$M/kforge" || fail=1
	"$NODE22" "$DIR/tour.mjs" $client http "$URL" || fail=1
done
[ $fail -eq 0 ] || { echo "proto_sdk: tour FAILED"; tail -20 "$DATA/http.log"; }
exit $fail
