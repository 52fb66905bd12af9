#!/bin/sh
# guides.sh: the GPU measurements behind the groupnorm-conv, triton-vs-cuda,
# attention-registers, attention-decode and nsys guides: their code blocks are
# built exactly as the guides print them and checked, then timed
# (kernels/bench/guides_bench.py). Needs an NVIDIA GPU (sm_90a: the blocks are
# built for it), nvcc, python3 with torch and triton; nsys is optional. Run from
# anywhere:
#   OUT=/some/dir sh kernels/bench/guides.sh      (default OUT: build/guides-bench)
# Every step's timeout is cut to what is left of GUIDES_DEADLINE_S (default
# 225 s) and a step with under 15 s left is skipped, so the whole run stays
# under 4 minutes; the steps run in the order of what the guides need most.
#   build   nvcc, in parallel: the first ```cuda block of groupnorm-conv.md (the
#           GroupNorm + SiLU kernel) -> build/gn/libgn.so; the first ```cuda blocks
#           of attention-registers.md (a mma.sync flash-attention forward) and
#           attention-decode.md (the split-KV combine) -> build/gn/libattn.so
#   attn    both attention kernels against float64 references, the forward timed
#           against F.scaled_dot_product_attention: attn.json
#   bench   guides_bench.py: GroupNorm(+SiLU) eager / channels_last / torch.compile
#           / the guide's kernel, 3x3 conv NCHW vs channels_last and the kernels each
#           launches: gn.md, gn.json; run under TORCH_LOGS=output_code, so Inductor's
#           code for GroupNorm + SiLU lands in inductor_output_code.txt
#   triton  the triton-vs-cuda guide's Triton RMSNorm (its ```python block) against
#           float64, eager and compiled F.rms_norm at 262144x64/128 and 16384x1024,
#           and inside a compiled graph (output_code in triton_rms.log)
#   nsys    if nsys is installed: nsys profile of guides_bench.py --quick
#           (NVTX ranges "eager" and "cuda") and its kernel / NVTX / API summaries
# Everything lands in $OUT; summary.txt is the digest (also printed). With
# GUIDES_PACK=1 (the GPU machine, which returns only a few files) the files go
# to a temporary folder instead and $OUT gets all.tgz of them and summary.txt.
set -u
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/build/guides-bench}
DEADLINE=${GUIDES_DEADLINE_S:-225}
DEST=
if [ "${GUIDES_PACK:-0}" = 1 ]; then
	DEST=$OUT
	mkdir -p "$DEST"
	OUT=$(mktemp -d /tmp/guides-bench.XXXXXX) || exit 1
fi
mkdir -p "$OUT" build/gn
T0=$(date +%s)
S="$OUT/summary.txt"
: >"$S"
say() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$S"; }
# cap N: N, or the seconds left before the deadline when fewer; 0 when under 15
cap() {
	left=$((DEADLINE - ($(date +%s) - T0)))
	[ "$left" -lt 15 ] && left=0
	[ "$left" -gt "$1" ] && left=$1
	echo "$left"
}
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
{
	date -u
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used --format=csv
	python3 -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "triton", triton.__version__)'
	"$NVCC" --version | tail -2
	command -v nsys && nsys --version
} >"$OUT/env.txt" 2>&1
say "env: $(grep -m1 NVIDIA "$OUT/env.txt" 2>/dev/null); $(grep -m1 '^torch' "$OUT/env.txt")"

# block GUIDE OUT: the guide's first ```cuda block (a "```cuda fragment" block never
# matches) with the headers tests/proto/proto_guides.py prepends
block() {
	python3 - "$1" "$2" <<'PY'
import re, sys
m = re.search(r"^```cuda\n(.*?)^```", open(sys.argv[1]).read(), re.S | re.M)
pre = ("#include <cuda_runtime.h>\n#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n"
       "#include <cstdint>\n#include <cstdio>\n")
open(sys.argv[2], "w").write(pre + m.group(1))
PY
}
G=knowledge/guides
if ! { block $G/groupnorm-conv.md build/gn/gn.cu && block $G/attention-registers.md build/gn/attn.cu &&
	block $G/attention-decode.md build/gn/combine.cu; }; then
	say "build: a guide's first cuda block is missing"
fi
cp build/gn/gn.cu build/gn/attn.cu build/gn/combine.cu "$OUT/" 2>/dev/null
NVFLAGS="-O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Xptxas -v -shared -Xcompiler -fPIC"
# shellcheck disable=SC2086 # NVFLAGS is a list of flags
"$NVCC" $NVFLAGS build/gn/gn.cu -o build/gn/libgn.so >"$OUT/gn-build.log" 2>&1 &
P1=$!
# shellcheck disable=SC2086
"$NVCC" $NVFLAGS build/gn/attn.cu build/gn/combine.cu -o build/gn/libattn.so \
	>"$OUT/attn-build.log" 2>&1 &
P2=$!
LIB=
if wait $P1; then
	say "gn build: ok ($(grep 'Used' "$OUT/gn-build.log" | sed 's/.*Used/Used/' | tr '\n' ';'))"
	LIB=$PWD/build/gn/libgn.so
else
	say "gn build: FAILED (gn-build.log); benchmarking without the CUDA kernel"
fi
ALIB=
if wait $P2; then
	say "attn build: ok ($(grep 'Used' "$OUT/attn-build.log" | sed 's/.*Used/Used/' | tr '\n' ';'))"
	ALIB=$PWD/build/gn/libattn.so
else
	say "attn build: FAILED (attn-build.log)"
fi

# attn
T=$(cap 50)
if [ -n "$ALIB" ] && [ "$T" -gt 0 ]; then
	GN_OUT=$OUT PYTHONUNBUFFERED=1 timeout "$T" python3 kernels/bench/guides_bench.py \
		--attn "$ALIB" >"$OUT/attn.log" 2>&1
	say "attn: rc=$? (timeout $T s)"
	grep '^{' "$OUT/attn.log" >>"$S"
	grep -A3 Traceback "$OUT/attn.log" | tail -4 >>"$S"
else
	say "attn: skipped (no library or no time left)"
fi

# bench (+ Inductor's code for it on stderr)
T=$(cap 110)
if [ "$T" -gt 0 ]; then
	GN_LIB=$LIB GN_OUT=$OUT GN_BUDGET_S=${GN_BUDGET_S:-70} TORCH_LOGS=output_code \
		PYTHONUNBUFFERED=1 timeout "$T" python3 kernels/bench/guides_bench.py \
		>"$OUT/bench.log" 2>"$OUT/inductor_output_code.txt"
	say "bench: rc=$? (timeout $T s; $(wc -l <"$OUT/bench.log") lines of bench.log)"
	[ -f "$OUT/gn.md" ] && cat "$OUT/gn.md" >>"$S"
	say "code: $(grep -c '@triton.jit' "$OUT/inductor_output_code.txt") triton kernels; names: $(grep -o 'def triton_[a-z0-9_]*' "$OUT/inductor_output_code.txt" | sort -u | tr '\n' ' ')"
	grep -A3 Traceback "$OUT/inductor_output_code.txt" | tail -4 >>"$S"
else
	say "bench: skipped (no time left)"
fi

# triton: the triton-vs-cuda guide's Triton RMSNorm (its first ```python block)
T=$(cap 60)
if [ "$T" -gt 0 ]; then
	python3 - $G/triton-vs-cuda.md build/gn/triton_rms.py <<'PY'
import re, sys
m = re.search(r"^```python\n(.*?)^```", open(sys.argv[1]).read(), re.S | re.M)
open(sys.argv[2], "w").write(m.group(1))
PY
	TORCH_LOGS=output_code GN_OUT=$OUT PYTHONUNBUFFERED=1 timeout "$T" python3 \
		kernels/bench/guides_bench.py --triton-rms build/gn/triton_rms.py \
		>"$OUT/triton_rms.log" 2>&1
	say "triton: rc=$? (timeout $T s)"
	grep '^{' "$OUT/triton_rms.log" >>"$S"
	grep -A3 Traceback "$OUT/triton_rms.log" | tail -4 >>"$S"
else
	say "triton: skipped (no time left)"
fi

# nsys
T=$(cap 40)
if ! command -v nsys >/dev/null 2>&1; then
	say "nsys: not installed on this host"
elif [ -z "$LIB" ] || [ "$T" -eq 0 ]; then
	say "nsys: skipped (no GroupNorm library or no time left)"
else
	GN_LIB=$LIB timeout "$T" nsys profile --trace=cuda,nvtx --sample=none --cpuctxsw=none \
		--force-overwrite=true -o "$OUT/gn_quick" python3 kernels/bench/guides_bench.py \
		--quick >"$OUT/nsys-profile.log" 2>&1
	say "nsys profile: rc=$? (timeout $T s)"
	T=$(cap 30)
	if [ "$T" -gt 0 ] && [ -f "$OUT/gn_quick.nsys-rep" ]; then
		timeout "$T" nsys stats --force-export=true \
			--report cuda_gpu_kern_sum,nvtx_sum,cuda_api_sum --format table \
			"$OUT/gn_quick.nsys-rep" >"$OUT/nsys-stats.txt" 2>&1
		say "nsys stats: rc=$?"
		head -60 "$OUT/nsys-stats.txt" >>"$S"
	fi
fi
say "done"
if [ -n "$DEST" ]; then
	cp "$S" "$DEST/summary.txt"
	tar czf "$DEST/all.tgz" -C "$OUT" .
	# files come back up to 16 MiB each: the nsys report and its database go first
	if [ "$(wc -c <"$DEST/all.tgz")" -gt 15000000 ]; then
		tar czf "$DEST/all.tgz" --exclude='*.sqlite' --exclude='*.nsys-rep' -C "$OUT" .
	fi
	echo "packed: $DEST/all.tgz ($(wc -c <"$DEST/all.tgz") bytes) and $DEST/summary.txt"
fi
cat "$S"
