#!/bin/sh
# guides.sh: the GPU measurements behind the groupnorm-conv, triton-vs-cuda,
# attention-registers and nsys guides: their code blocks are built exactly as
# the guides print them and checked, then timed (kernels/bench/guides_bench.py).
# Needs an NVIDIA GPU (sm_90a: the blocks are built for it), nvcc, python3 with
# torch and triton; nsys is optional. Run from anywhere:
#   OUT=/some/dir sh kernels/bench/guides.sh      (default OUT: build/guides-bench)
# Steps (about 4 minutes; each has a timeout, about 9 minutes in all at worst):
#   build   the first ```cuda block of knowledge/guides/groupnorm-conv.md (the
#           guide's GroupNorm + SiLU kernel, exactly as printed) -> build/gn/libgn.so
#   attn    the first ```cuda block of knowledge/guides/attention-registers.md (a
#           mma.sync flash-attention forward, a split-KV combine) against float64
#           references and F.scaled_dot_product_attention: attn.json
#   bench   kernels/bench/guides_bench.py: GroupNorm(+SiLU) eager / channels_last /
#           torch.compile / the guide's kernel, 3x3 conv NCHW vs channels_last and
#           the kernels each launches; gn.md is the table
#   code    TORCH_LOGS=output_code for the compiled GroupNorm + SiLU (NCHW and
#           channels_last): inductor_output_code.txt
#   triton  the triton-vs-cuda guide's Triton RMSNorm (its ```python block) against
#           float64, eager and compiled F.rms_norm at 262144x64/128 and 16384x1024,
#           and inside a compiled graph (output_code in triton_rms.log)
#   nsys    if nsys is installed: nsys profile of guides_bench.py --quick
#           (NVTX ranges "eager" and "cuda") and its kernel / NVTX / API summaries
# Everything lands in $OUT; summary.txt is the digest (also printed).
set -u
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/build/guides-bench}
mkdir -p "$OUT" build/gn
T0=$(date +%s)
S="$OUT/summary.txt"
: >"$S"
say() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$S"; }
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
{
	date -u
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used --format=csv
	python3 -c 'import torch, triton; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(), "triton", triton.__version__)'
	"$NVCC" --version | tail -2
	command -v nsys && nsys --version
} >"$OUT/env.txt" 2>&1
say "env: $(grep -m1 NVIDIA "$OUT/env.txt" 2>/dev/null); $(grep -m1 '^torch' "$OUT/env.txt")"

# build: the guide's block with the prelude tests/proto/proto_guides.py gives it
python3 - knowledge/guides/groupnorm-conv.md build/gn/gn.cu <<'PY'
import re, sys
text = open(sys.argv[1]).read()
m = re.search(r"^```cuda\n(.*?)^```", text, re.S | re.M)
pre = "#include <cuda_runtime.h>\n#include <cuda_bf16.h>\n#include <cstdint>\n#include <cstdio>\n"
open(sys.argv[2], "w").write(pre + m.group(1))
PY
if "$NVCC" -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Xptxas -v -shared \
	-Xcompiler -fPIC build/gn/gn.cu -o build/gn/libgn.so >"$OUT/gn-build.log" 2>&1; then
	say "build: ok ($(grep -c 'Used' "$OUT/gn-build.log") kernels; $(grep 'Used' "$OUT/gn-build.log" | sed 's/.*Used/Used/' | tr '\n' ';'))"
	LIB=$PWD/build/gn/libgn.so
else
	say "build: FAILED (gn-build.log); benchmarking without the CUDA kernel"
	LIB=
fi
cp build/gn/gn.cu "$OUT/gn.cu"

# attn: the attention-registers guide's first ```cuda block (mma.sync flash attention,
# split-KV combine) -> build/gn/libattn.so, checked against float64 and timed against SDPA
python3 - knowledge/guides/attention-registers.md build/gn/attn.cu <<'PY'
import re, sys
m = re.search(r"^```cuda\n(.*?)^```", open(sys.argv[1]).read(), re.S | re.M)
pre = "#include <cuda_runtime.h>\n#include <cuda_bf16.h>\n#include <cstdint>\n#include <cstdio>\n"
open(sys.argv[2], "w").write(pre + m.group(1))
PY
if "$NVCC" -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Xptxas -v -shared \
	-Xcompiler -fPIC build/gn/attn.cu -o build/gn/libattn.so >"$OUT/attn-build.log" 2>&1; then
	say "attn build: ok ($(grep 'Used' "$OUT/attn-build.log" | sed 's/.*Used/Used/' | tr '\n' ';'))"
	GN_OUT=$OUT PYTHONUNBUFFERED=1 timeout 90 python3 kernels/bench/guides_bench.py \
		--attn "$PWD/build/gn/libattn.so" >"$OUT/attn.log" 2>&1
	say "attn: rc=$?"
	grep '^{' "$OUT/attn.log" >>"$S"
else
	say "attn build: FAILED (attn-build.log)"
fi

# bench
GN_LIB=$LIB GN_OUT=$OUT GN_BUDGET_S=${GN_BUDGET_S:-90} PYTHONUNBUFFERED=1 \
	timeout 150 python3 kernels/bench/guides_bench.py >"$OUT/bench.log" 2>&1
say "bench: rc=$? ($(wc -l <"$OUT/bench.log") lines of bench.log)"
[ -f "$OUT/gn.md" ] && cat "$OUT/gn.md" >>"$S"

# code: Inductor's generated code for GroupNorm + SiLU
TORCH_LOGS=output_code GN_OUT=$OUT timeout 60 python3 kernels/bench/guides_bench.py \
	--inductor-code >"$OUT/inductor_output_code.txt" 2>&1
say "code: rc=$? ($(grep -c '@triton.jit' "$OUT/inductor_output_code.txt") triton kernels; names: $(grep -o 'def triton_[a-z0-9_]*' "$OUT/inductor_output_code.txt" | sort -u | tr '\n' ' '))"

# triton: the triton-vs-cuda guide's Triton RMSNorm (its first ```python block)
python3 - knowledge/guides/triton-vs-cuda.md build/gn/triton_rms.py <<'PY'
import re, sys
m = re.search(r"^```python\n(.*?)^```", open(sys.argv[1]).read(), re.S | re.M)
open(sys.argv[2], "w").write(m.group(1))
PY
TORCH_LOGS=output_code GN_OUT=$OUT PYTHONUNBUFFERED=1 timeout 150 python3 \
	kernels/bench/guides_bench.py --triton-rms build/gn/triton_rms.py >"$OUT/triton_rms.log" 2>&1
say "triton: rc=$?"
grep '^{' "$OUT/triton_rms.log" >>"$S"

# nsys
if command -v nsys >/dev/null 2>&1; then
	GN_LIB=$LIB timeout 60 nsys profile --trace=cuda,nvtx --sample=none --cpuctxsw=none \
		--force-overwrite=true -o "$OUT/gn_quick" python3 kernels/bench/guides_bench.py \
		--quick >"$OUT/nsys-profile.log" 2>&1
	say "nsys profile: rc=$?"
	timeout 40 nsys stats --force-export=true --report cuda_gpu_kern_sum,nvtx_sum,cuda_api_sum \
		--format table "$OUT/gn_quick.nsys-rep" >"$OUT/nsys-stats.txt" 2>&1
	say "nsys stats: rc=$?"
	head -60 "$OUT/nsys-stats.txt" >>"$S"
else
	say "nsys: not installed on this host"
fi
say "done"
cat "$S"
