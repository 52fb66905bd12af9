/* gemm_wgmma: experiment (kernels/dev/, not in the library yet): bf16 GEMM
 * y (M, N) = x (M, K) @ w (N, K)^T with Hopper's wgmma (sm_90a only).
 * 128x256x64 block tiles, two consumer warpgroups of 64x256 each
 * (wgmma.m64n256k16, 128 fp32 accumulators a thread), operands staged by
 * cp.async into the 128-byte-swizzled K-major layout that wgmma's shared
 * memory descriptors read (16-byte chunk c of row r at chunk c ^ (r % 8),
 * 8-row groups 1024 bytes apart), 4 stages with a prefetch distance of 2 so
 * one wgmma group stays in flight while the next tiles land.
 * Preconditions as kernels/gemm.cu (K % 8 == 0, 16-byte aligned x and w).
 * Dynamic shared memory: 4 x (128 + 256) x 64 x 2 = 196608 bytes. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace kf_wg
{

constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4, THREADS = 256;
constexpr int A_ELEMS = BM * BK, B_ELEMS = BN * BK, STAGE_ELEMS = A_ELEMS + B_ELEMS;
constexpr int SMEM_BYTES = STAGES * STAGE_ELEMS * 2;

__device__ __forceinline__ int swz(int r, int c)
{
	return r * BK + ((c ^ (r & 7)) << 3);
}

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool pred)
{
	unsigned s = (unsigned)__cvta_generic_to_shared(smem);
	int n = pred ? 16 : 0;
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(n));
}

/* K-major operand, 128-byte swizzle: start address, LBO 16 (unused for
 * this layout), SBO 1024 (the next 8-row group), swizzle mode 1. */
__device__ __forceinline__ uint64_t desc(const void *p)
{
	uint64_t a = (uint64_t)(unsigned)__cvta_generic_to_shared(p);
	return ((a & 0x3ffff) >> 4) | ((uint64_t)(16 >> 4) << 16) | ((uint64_t)(1024 >> 4) << 32) |
	       (1ull << 62);
}

__device__ __forceinline__ void wgmma_256(float (&d)[128], uint64_t da, uint64_t db)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	asm volatile(
		"{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
		"wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
		"{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, "
		"%18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, "
		"%34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, "
		"%50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, "
		"%66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, "
		"%82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, "
		"%98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
		"%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, "
		"%125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
		: "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
		  "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
		  "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
		  "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
		  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
		  "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
		  "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
		  "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
		  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
		  "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
		  "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]),
		  "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
		  "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]),
		  "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
		  "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]),
		  "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
		  "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]),
		  "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]),
		  "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
		  "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]),
		  "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),
		  "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
		: "l"(da), "l"(db), "r"(1));
#endif
}

template <typename T>
__device__ __forceinline__ void load_tile(T *st, const T *x, const T *w, int M, int N, int K,
					  int m0, int n0, int kt)
{
	const int tid = threadIdx.x;
#pragma unroll
	for (int q = 0; q < (BM + BN) * 8 / THREADS; q++) {
		const int idx = tid + q * THREADS;
		const int r = idx >> 3, c = idx & 7;
		const int k = kt * BK + c * 8;
		if (r < BM) {
			const bool p = k < K && m0 + r < M;
			cp_async16(st + swz(r, c), p ? x + (int64_t)(m0 + r) * K + k : x, p);
		} else {
			const int rb = r - BM;
			const bool p = k < K && n0 + rb < N;
			cp_async16(st + A_ELEMS + swz(rb, c),
				   p ? w + (int64_t)(n0 + rb) * K + k : w, p);
		}
	}
}

} /* namespace kf_wg */

extern "C" __global__ void __launch_bounds__(256, 1)
	kf_gemm_wgmma_bf16(__nv_bfloat16 *y, const __nv_bfloat16 *x, const __nv_bfloat16 *w, int M,
			   int N, int K, int group)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	using namespace kf_wg;
	extern __shared__ __align__(1024) unsigned char smem_raw[];
	__nv_bfloat16 *smem = reinterpret_cast<__nv_bfloat16 *>(smem_raw);
	int pm = blockIdx.y, pn = blockIdx.x;
	if (group > 0) {
		/* grouped raster: `group` tile rows sweep the tile columns
		 * together, so their x and w tiles are reused from L2 */
		const int pid = blockIdx.y * gridDim.x + blockIdx.x, npm = gridDim.y,
			  npn = gridDim.x;
		const int gid = pid / (group * npn), first = gid * group;
		const int gsz = min(npm - first, group);
		pm = first + (pid % (group * npn)) % gsz;
		pn = (pid % (group * npn)) / gsz;
	}
	const int m0 = pm * BM, n0 = pn * BN;
	const int wg = threadIdx.x >> 7;
	const int KT = (K + BK - 1) / BK;
	float d[128];
#pragma unroll
	for (int i = 0; i < 128; i++)
		d[i] = 0.f;

	for (int s = 0; s < 2; s++) {
		if (s < KT)
			load_tile(smem + s * STAGE_ELEMS, x, w, M, N, K, m0, n0, s);
		asm volatile("cp.async.commit_group;\n" ::);
	}
	for (int kt = 0; kt < KT; kt++) {
		asm volatile("cp.async.wait_group 1;\n" ::);
		/* cp.async wrote through the generic proxy; wgmma reads through
		 * the async proxy. */
		asm volatile("fence.proxy.async.shared::cta;\n" ::);
		__syncthreads();
		if (kt + 2 < KT)
			load_tile(smem + ((kt + 2) % STAGES) * STAGE_ELEMS, x, w, M, N, K, m0, n0,
				  kt + 2);
		asm volatile("cp.async.commit_group;\n" ::);
		const __nv_bfloat16 *sa = smem + (kt % STAGES) * STAGE_ELEMS + wg * 64 * BK;
		const __nv_bfloat16 *sb = smem + (kt % STAGES) * STAGE_ELEMS + A_ELEMS;
		asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
		const uint64_t da = desc(sa), db = desc(sb);
#pragma unroll
		for (int kk = 0; kk < BK / 16; kk++)
			wgmma_256(d, da + 2 * kk, db + 2 * kk); /* +32 bytes along K */
		asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
		asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
	}
	asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
	asm volatile("cp.async.wait_group 0;\n" ::);

	/* Accumulator layout: warp v of the warpgroup owns rows 16v..16v+15;
	 * d[4j..4j+3] hold rows g, g+8 and columns 8j + 2q, +1. */
	const int lane = threadIdx.x & 31, v = (threadIdx.x >> 5) & 3;
	const int g = lane >> 2, q = lane & 3;
#pragma unroll
	for (int j = 0; j < 32; j++)
#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int row = m0 + wg * 64 + v * 16 + g + h * 8;
			const int col = n0 + j * 8 + q * 2;
			if (row >= M)
				continue;
			__nv_bfloat16 *dst = y + (int64_t)row * N + col;
			const float v0 = d[4 * j + 2 * h], v1 = d[4 * j + 2 * h + 1];
			if (col + 1 < N && (N & 1) == 0) {
				*reinterpret_cast<__nv_bfloat162 *>(dst) =
					__floats2bfloat162_rn(v0, v1);
			} else {
				if (col < N)
					dst[0] = __float2bfloat16_rn(v0);
				if (col + 1 < N)
					dst[1] = __float2bfloat16_rn(v1);
			}
		}
#else
	__trap(); /* wgmma needs sm_90a */
#endif
}

/* Block 256 (two warpgroups), grid (ceil_div(N, 256), ceil_div(M, 128)),
 * 192 KiB of dynamic shared memory (opt-in raised here). */
extern "C" int gemm_wgmma_launch(void *y, const void *x, const void *w, int64_t M, int64_t N,
				 int64_t K, int group, cudaStream_t s)
{
	if (M < 1 || N < 1 || K < 8 || K % 8 || M > INT32_MAX || N > INT32_MAX || K > INT32_MAX ||
	    (M + 127) / 128 > 65535)
		return (int)cudaErrorInvalidValue;
	cudaError_t e = cudaFuncSetAttribute(
		kf_gemm_wgmma_bf16, cudaFuncAttributeMaxDynamicSharedMemorySize, kf_wg::SMEM_BYTES);
	if (e != cudaSuccess)
		return (int)e;
	dim3 grid((unsigned)((N + 255) / 256), (unsigned)((M + 127) / 128));
	kf_gemm_wgmma_bf16<<<grid, kf_wg::THREADS, kf_wg::SMEM_BYTES, s>>>(
		(__nv_bfloat16 *)y, (const __nv_bfloat16 *)x, (const __nv_bfloat16 *)w, (int)M,
		(int)N, (int)K, group);
	return (int)cudaGetLastError();
}
