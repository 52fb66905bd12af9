#!/bin/sh
# build.sh: builds libkforge_torch.so (the `kforge` torch ops of
# kforge_ops.cpp over kernels/*.cu and qk_norm_rope.cu) with direct nvcc
# and g++ calls against the installed torch's headers and libraries: no
# ninja, no cpp_extension. The .cu files and the binding compile in
# parallel. The output lands in $KF_TORCH_CACHE (default
# build/torch-ops)/<key>/, key = sha256 of the sources, this script, the
# torch version, the C++ ABI, the GPU arch and the compiler, so a second call with the
# same inputs only prints the path. Prints the library's path last.
# KF_GPU_ARCH (e.g. 90) overrides the arch nvidia-smi reports. Needs
# python3 with torch, nvcc and g++.
set -e
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null 2>&1 || NVCC=/usr/local/cuda/bin/nvcc
CXX=${CXX:-g++}
PY=${PYTHON:-python3}
if [ -z "$KF_GPU_ARCH" ]; then
	cc_=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
	KF_GPU_ARCH=${cc_:-90}
fi
CUS="kernels/rmsnorm.cu kernels/layernorm.cu kernels/activation.cu kernels/rope.cu kernels/adaln.cu kernels/torch/qk_norm_rope.cu"
# torch's prefix, version, C++ ABI and the libstdc++ it loaded, in one
# interpreter start (~1 s)
set -- $("$PY" -c 'import os, torch
so = [l.split()[-1] for l in open("/proc/self/maps") if "/libstdc++.so" in l]
print(os.path.dirname(torch.__file__), torch.__version__, int(torch._C._GLIBCXX_USE_CXX11_ABI), so[0] if so else "-lstdc++")')
TORCH_DIR=$1 TORCH_VER=$2 ABI=$3 STDCXX=$4
KEY=$( (cat $CUS kernels/*.h kernels/kf_cuda.cuh kernels/torch/*.h kernels/torch/kforge_ops.cpp "$0"
	echo "$TORCH_VER $ABI $KF_GPU_ARCH $CXX $STDCXX") | sha256sum | cut -c1-16)
# KF_TORCH_PREBUILT: a read-only cache of earlier builds (the daemon's)
if [ -n "$KF_TORCH_PREBUILT" ] && [ -f "$KF_TORCH_PREBUILT/$KEY/libkforge_torch.so" ]; then
	echo "$KF_TORCH_PREBUILT/$KEY/libkforge_torch.so"
	exit 0
fi
B=${KF_TORCH_CACHE:-build/torch-ops}/$KEY
LIB=$B/libkforge_torch.so
if [ -f "$LIB" ]; then
	echo "$LIB"
	exit 0
fi
mkdir -p "$B"
CUDA_DIR=$(dirname "$(dirname "$(command -v "$NVCC")")")
GEN="-gencode arch=compute_$KF_GPU_ARCH,code=sm_$KF_GPU_ARCH"
pids=""
for f in $CUS; do
	o="$B/$(basename "$f" .cu).o"
	"$NVCC" -O3 -std=c++17 -I. $GEN -Xcompiler -fPIC -c "$f" -o "$o" >"$o.log" 2>&1 &
	pids="$pids $!"
done
"$CXX" -O2 -std=c++20 -fPIC -I. -I"$TORCH_DIR/include" \
	-I"$TORCH_DIR/include/torch/csrc/api/include" -I"$CUDA_DIR/include" \
	-D_GLIBCXX_USE_CXX11_ABI="$ABI" -c kernels/torch/kforge_ops.cpp -o "$B/kforge_ops.o" \
	>"$B/kforge_ops.o.log" 2>&1 &
pids="$pids $!"
fail=0
for p in $pids; do wait "$p" || fail=1; done
if [ "$fail" != 0 ]; then
	cat "$B"/*.log >&2
	exit 1
fi
# Link to a temporary name first: a concurrent build never sees half a
# file. The binding needs c10, c10_cuda and torch_cpu only (as the jail's
# build_torch_op links). The libstdc++ torch runs with is named by its path
# before anything else can supply C++ library symbols: a compiler whose own
# libstdc++ is only an archive (a GCC built under /opt, say) would
# otherwise put a second libstdc++ inside the library, whose std::locale
# facets are never set up, and the first error message an op formats
# crashes the process.
"$CXX" -shared -o "$LIB.tmp.$$" "$B"/*.o -L"$TORCH_DIR/lib" -Wl,-rpath,"$TORCH_DIR/lib" \
	-lc10 -lc10_cuda -ltorch_cpu "$STDCXX" "$CUDA_DIR/lib64/libcudart_static.a" -ldl -lrt \
	-lpthread -Wl,-Map,"$B/link.map"
if nm -D --defined-only "$LIB.tmp.$$" | grep -qE '_ZNSt6locale|__codecvt_utf8_base'; then
	rm -f "$LIB.tmp.$$"
	echo "build.sh: $CXX put a static libstdc++ into the library (see $B/link.map):" >&2
	grep -m3 'libstdc++' "$B/link.map" >&2
	exit 1
fi
mv "$LIB.tmp.$$" "$LIB"
echo "$LIB"
