/* gemm: tiled matrix product on the tensor cores, the compute-bound example.
 *
 *   y[m,n] = sum_k x[m,k] * w[n,k]        (y = x @ w^T, as nn.Linear)
 *
 * Shapes: x (M, K), w (N, K), y (M, N), row-major, contiguous. Types bf16 or
 * f16 in and out (same for all three), fp32 accumulation, y rounded once.
 * Preconditions: M, N >= 1, K >= 8 with K % 8 == 0 (16-byte cp.async rows),
 * pointers 16-byte aligned; any M and N (edge tiles are zero-filled on load
 * and masked on store). sm_80 or newer (mma.sync bf16); on older GPUs the
 * kernel traps.
 * Launch: block 256 (8 warps), grid (ceil_div(N, 128), ceil_div(M, 128)),
 * dynamic shared memory 98304 bytes (3 stages x (128x64 of x + 128x64 of
 * w) x 2 bytes), which needs the opt-in above 48 KiB
 * (cudaFuncAttributeMaxDynamicSharedMemorySize; the launch helper sets it).
 * Cost, e = sizeof(type): bytes = (M*K + N*K + M*N) * e, flops = 2*M*N*K.
 * Two kernels: the portable one below (the op template's baseline, since
 * the harness passes only pointers and sizes), and on sm_90 devices built
 * with sm_90a code the TMA + wgmma kernel of kernels/gemm_sm90.cuh, which
 * needs host-encoded tensor maps; gemm_launch picks.
 * Technique (portable): 128x128x64 block tiles, a 3-stage cp.async pipeline (global ->
 * shared without registers, two tiles in flight while the third is
 * multiplied), 16-byte chunks XOR-swizzled by row so ldmatrix reads are
 * bank-conflict free, ldmatrix.x4 fragments, mma.sync.m16n8k16 with fp32
 * accumulators, 64x32 warp tiles (16 MMAs per 6 ldmatrix), 2 blocks per SM. */
#include "kernels/gemm.h"
#include "kernels/gemm_sm90.cuh"
#include "kernels/kf_cuda.cuh"

namespace kf_gemm
{

constexpr int BM = 128, BN = 128, BK = 64, STAGES = 3, THREADS = 256;
constexpr int WM = 64, WN = 32;		 /* warp tile */
constexpr int MT = WM / 16, NT = WN / 8; /* mma tiles per warp */
constexpr int TILE_ELEMS = BM * BK;	 /* per operand per stage */
static_assert(BM == BN, "one tile size serves x and w");
constexpr int SMEM_BYTES = STAGES * 2 * TILE_ELEMS * 2;

/* Element offset of 16-byte chunk c (0..7) of row r in a [rows][64] tile:
 * chunks XOR-swizzled by the row's low 3 bits, so the 8 rows an ldmatrix
 * phase reads fall in 8 different bank groups. */
__device__ __forceinline__ int swz(int r, int c)
{
	return r * BK + ((c ^ (r & 7)) << 3);
}

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool pred)
{
#if __CUDA_ARCH__ >= 800
	unsigned s = (unsigned)__cvta_generic_to_shared(smem);
	int n = pred ? 16 : 0; /* 0: fill the 16 bytes with zeros */
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(n));
#endif
}
__device__ __forceinline__ void cp_commit()
{
#if __CUDA_ARCH__ >= 800
	asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N> __device__ __forceinline__ void cp_wait()
{
#if __CUDA_ARCH__ >= 800
	asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const void *smem)
{
	unsigned s = (unsigned)__cvta_generic_to_shared(smem);
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(s));
}

template <typename T>
__device__ __forceinline__ void mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
#if __CUDA_ARCH__ >= 800
	if constexpr (std::is_same<T, __nv_bfloat16>::value)
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
			     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
			     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
			     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
	else
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
			     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
			     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
			     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}

/* Copies the k-tile kt of x (rows m0..m0+127) and w (rows n0..n0+127) into
 * stage buffers sa, sb: 1024 chunks each, 4 per thread, zero-filled past M,
 * N or K. */
template <typename T>
__device__ __forceinline__ void load_tile(T *sa, T *sb, const T *x, const T *w, int M, int N, int K,
					  int m0, int n0, int kt)
{
	const int tid = threadIdx.x;
#pragma unroll
	for (int q = 0; q < 4; q++) {
		const int idx = tid + q * THREADS; /* 0..1023 */
		const int r = idx >> 3, c = idx & 7;
		const int k = kt * BK + c * 8;
		const bool kin = k < K;
		const bool pa = kin && m0 + r < M, pb = kin && n0 + r < N;
		cp_async16(sa + swz(r, c), pa ? x + (int64_t)(m0 + r) * K + k : x, pa);
		cp_async16(sb + swz(r, c), pb ? w + (int64_t)(n0 + r) * K + k : w, pb);
	}
}

template <typename T>
__device__ __forceinline__ void body(T *y, const T *x, const T *w, int M, int N, int K)
{
#if __CUDA_ARCH__ >= 800
	extern __shared__ __align__(128) unsigned char smem_raw[];
	T *smem = reinterpret_cast<T *>(smem_raw);
	const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	const int wm = (warp >> 2) * WM, wn = (warp & 3) * WN; /* 2 x 4 warps */
	const int KT = (K + BK - 1) / BK;

	float acc[MT][NT][4];
#pragma unroll
	for (int i = 0; i < MT; i++)
#pragma unroll
		for (int j = 0; j < NT; j++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				acc[i][j][e] = 0.f;

#pragma unroll
	for (int s = 0; s < STAGES - 1; s++) {
		if (s < KT)
			load_tile<T>(smem + s * 2 * TILE_ELEMS,
				     smem + s * 2 * TILE_ELEMS + TILE_ELEMS, x, w, M, N, K, m0, n0,
				     s);
		cp_commit();
	}

	for (int kt = 0; kt < KT; kt++) {
		cp_wait<STAGES - 2>();
		__syncthreads(); /* tile kt landed; stage (kt-1) % STAGES is free */
		{
			const int nk = kt + STAGES - 1, st = nk % STAGES;
			if (nk < KT)
				load_tile<T>(smem + st * 2 * TILE_ELEMS,
					     smem + st * 2 * TILE_ELEMS + TILE_ELEMS, x, w, M, N, K,
					     m0, n0, nk);
			cp_commit(); /* an empty group keeps the wait count right */
		}
		const T *sa = smem + (kt % STAGES) * 2 * TILE_ELEMS;
		const T *sb = sa + TILE_ELEMS;
#pragma unroll
		for (int kk = 0; kk < BK / 16; kk++) {
			unsigned af[MT][4], bf[NT / 2][4];
#pragma unroll
			for (int i = 0; i < MT; i++) {
				const int r = wm + i * 16 + (lane & 15);
				ldsm_x4(af[i], sa + swz(r, kk * 2 + (lane >> 4)));
			}
#pragma unroll
			for (int j = 0; j < NT / 2; j++) {
				const int r = wn + j * 16 + (lane & 7) + ((lane >> 4) << 3);
				ldsm_x4(bf[j], sb + swz(r, kk * 2 + ((lane >> 3) & 1)));
			}
#pragma unroll
			for (int i = 0; i < MT; i++)
#pragma unroll
				for (int j = 0; j < NT; j++)
					mma<T>(acc[i][j], af[i], bf[j >> 1][(j & 1) * 2],
					       bf[j >> 1][(j & 1) * 2 + 1]);
		}
	}
	cp_wait<0>();

	/* Epilogue: accumulator (i, j) holds rows g, g+8 and columns 2q, 2q+1 of
	 * its 16x8 tile (g = lane / 4, q = lane % 4). */
	const int g = lane >> 2, q = lane & 3;
#pragma unroll
	for (int i = 0; i < MT; i++)
#pragma unroll
		for (int j = 0; j < NT; j++)
#pragma unroll
			for (int h = 0; h < 2; h++) {
				const int row = m0 + wm + i * 16 + g + h * 8;
				const int col = n0 + wn + j * 8 + q * 2;
				if (row >= M)
					continue;
				T *dst = y + (int64_t)row * N + col;
				const float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
				if (col + 1 < N && (N & 1) == 0) {
					if constexpr (std::is_same<T, __nv_bfloat16>::value)
						*reinterpret_cast<__nv_bfloat162 *>(dst) =
							__floats2bfloat162_rn(v0, v1);
					else
						*reinterpret_cast<__half2 *>(dst) =
							__floats2half2_rn(v0, v1);
				} else {
					if (col < N)
						dst[0] = kf::from_f<T>(v0);
					if (col + 1 < N)
						dst[1] = kf::from_f<T>(v1);
				}
			}
#else
	__trap(); /* mma.sync bf16 needs sm_80 */
#endif
}

} /* namespace kf_gemm */

extern "C" __global__ void __launch_bounds__(256, 2)
	kf_gemm_bf16(__nv_bfloat16 *y, const __nv_bfloat16 *x, const __nv_bfloat16 *w, int M, int N,
		     int K)
{
	kf_gemm::body<__nv_bfloat16>(y, x, w, M, N, K);
}

extern "C" __global__ void __launch_bounds__(256, 2)
	kf_gemm_f16(__half *y, const __half *x, const __half *w, int M, int N, int K)
{
	kf_gemm::body<__half>(y, x, w, M, N, K);
}

static cudaError_t gemm_check(enum kf_dtype dt, const void *y, const void *x, const void *w,
			      int64_t M, int64_t N, int64_t K)
{
	if (dt != KF_DT_BF16 && dt != KF_DT_F16)
		return cudaErrorInvalidValue;
	if (M < 1 || N < 1 || K < 8 || K % 8 || M > INT32_MAX || N > INT32_MAX || K > INT32_MAX)
		return cudaErrorInvalidValue;
	if (!y || !x || !w || ((uintptr_t)x & 15) || ((uintptr_t)w & 15) || ((uintptr_t)y & 3))
		return cudaErrorInvalidValue;
	if ((M + 127) / 128 > 65535)
		return cudaErrorInvalidValue;
	return cudaSuccess;
}

/* Block 256 (8 warps of 64x32), grid (ceil_div(N,128), ceil_div(M,128)),
 * 96 KiB of dynamic shared memory: the limit is raised once per kernel
 * (the attribute is per function and sticky; setting it again is cheap). */
extern "C" cudaError_t gemm_mma_launch(enum kf_dtype dt, void *y, const void *x, const void *w,
				       int64_t M, int64_t N, int64_t K, cudaStream_t s)
{
	cudaError_t e = gemm_check(dt, y, x, w, M, N, K);
	if (e != cudaSuccess)
		return e;
	dim3 block(kf_gemm::THREADS),
		grid((unsigned)((N + 127) / 128), (unsigned)((M + 127) / 128));
	const int smem = kf_gemm::SMEM_BYTES;
	if (dt == KF_DT_BF16) {
		e = cudaFuncSetAttribute(kf_gemm_bf16, cudaFuncAttributeMaxDynamicSharedMemorySize,
					 smem);
		if (e != cudaSuccess)
			return e;
		kf_gemm_bf16<<<grid, block, smem, s>>>((__nv_bfloat16 *)y, (const __nv_bfloat16 *)x,
						       (const __nv_bfloat16 *)w, (int)M, (int)N,
						       (int)K);
	} else {
		e = cudaFuncSetAttribute(kf_gemm_f16, cudaFuncAttributeMaxDynamicSharedMemorySize,
					 smem);
		if (e != cudaSuccess)
			return e;
		kf_gemm_f16<<<grid, block, smem, s>>>((__half *)y, (const __half *)x,
						      (const __half *)w, (int)M, (int)N, (int)K);
	}
	return cudaGetLastError();
}

/* 1 when the current device is compute capability 9.0 and this library was
 * built with sm_90a code (build flag KF_HAVE_SM90A), so the TMA/wgmma
 * kernel can run. */
static int gemm_sm90_usable(void)
{
#if defined(KF_HAVE_SM90A)
	int dev, major = 0, minor = 0;
	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
		return 0;
	return major == 9 && minor == 0;
#else
	return 0;
#endif
}

extern "C" cudaError_t gemm_sm90_launch(void *y, const void *x, const void *w, int64_t M, int64_t N,
					int64_t K, int group, cudaStream_t s)
{
	cudaError_t e = gemm_check(KF_DT_BF16, y, x, w, M, N, K);
	if (e != cudaSuccess)
		return e;
	if (group < 0 || group > 64)
		return cudaErrorInvalidValue;
	if (!gemm_sm90_usable())
		return cudaErrorNotSupported;
	return gemm_sm90_go(y, x, w, M, N, K, group, s);
}

/* bf16 on an sm_90 device with sm_90a code: the TMA + wgmma kernel with a
 * grouped raster of 8 tile rows; otherwise the portable mma.sync kernel. */
extern "C" cudaError_t gemm_launch(enum kf_dtype dt, void *y, const void *x, const void *w,
				   int64_t M, int64_t N, int64_t K, cudaStream_t s)
{
	cudaError_t e = gemm_check(dt, y, x, w, M, N, K);
	if (e != cudaSuccess)
		return e;
	if (dt == KF_DT_BF16 && gemm_sm90_usable())
		return gemm_sm90_go(y, x, w, M, N, K, 8, s);
	return gemm_mma_launch(dt, y, x, w, M, N, K, s);
}
