/* gemm_sm90: the Hopper path of kernels/gemm.cu (included by it, nowhere
 * else): bf16 GEMM y (M, N) = x (M, K) @ w (N, K)^T with the tensor memory
 * accelerator, wgmma and warp specialization (sm_90a only).
 * Block: 3 warpgroups. Warpgroup 0 is the producer: one thread issues TMA
 * tile loads (cp.async.bulk.tensor, 128-byte swizzle, zero fill past the
 * edges) into a 4-stage ring and each stage completes on an mbarrier
 * ("full"); setmaxnreg gives its registers to the consumers. Warpgroups 1
 * and 2 are consumers: each multiplies 64 rows x 256 columns with
 * wgmma.m64n256k16 (128 fp32 accumulators a thread), keeps one wgmma group
 * in flight and releases the stage it finished through a second mbarrier
 * ("empty"). Tile 128x256x64; grouped raster for L2 reuse. Persistent:
 * one block an SM walks its tiles with the ring running on across them,
 * so the next tile's loads overlap this one's last multiplies and stores.
 * The epilogue goes through shared memory: each consumer rounds its 64 x
 * 256 accumulators to bf16 into a swizzled 16 KB buffer half by half and
 * TMA stores write y while the consumers start the next tile (y's rows
 * whole 16-byte units and y 16-byte aligned; else they store y directly).
 * Preconditions: K % 8 == 0 (TMA row strides are multiples of 16 bytes),
 * x and w 16-byte aligned, M, N >= 1. Dynamic shared memory 231424 bytes. */
#ifndef KF_GEMM_SM90_CUH
#define KF_GEMM_SM90_CUH

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <stdint.h>

namespace kf_tma
{

constexpr int BM = 128, BN = 256, BK = 64, Q = 4, THREADS = 384;
constexpr int A_ELEMS = BM * BK, B_ELEMS = BN * BK, STAGE_ELEMS = A_ELEMS + B_ELEMS;
constexpr int STAGE_BYTES = STAGE_ELEMS * 2;
/* the epilogue's staging buffer: a consumer's 64 rows x 128 columns (half
 * its tile), two 64 x 64 boxes in the 128-byte swizzle, one a consumer */
constexpr int OUT_BYTES = 64 * 128 * 2;
constexpr int SMEM_BYTES =
	Q * STAGE_BYTES + 2 * OUT_BYTES + 1024 /* barriers */ + 1024 /* alignment */;

__device__ __forceinline__ uint32_t sptr(const void *p)
{
	return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ uint64_t desc(const void *p)
{
	uint64_t a = sptr(p);
	return ((a & 0x3ffff) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) |
	       (1ull << 62);
}

__device__ __forceinline__ void bar_init(uint64_t *b, int count)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(sptr(b)), "r"(count));
}
__device__ __forceinline__ void bar_expect(uint64_t *b, int bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(sptr(b)),
		     "r"(bytes));
}
__device__ __forceinline__ void bar_arrive(uint64_t *b)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(sptr(b)));
}
__device__ __forceinline__ void bar_wait(uint64_t *b, int parity)
{
	asm volatile("{\n.reg .pred p;\nWAIT_%=:\n"
		     "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
		     "@!p bra WAIT_%=;\n}\n" ::"r"(sptr(b)),
		     "r"(parity));
}

__device__ __forceinline__ void tma_2d(void *dst, const CUtensorMap *map, int c0, int c1,
				       uint64_t *bar)
{
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
		     " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(sptr(dst)),
		     "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(sptr(bar))
		     : "memory");
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

/* The epilogue through shared memory: a consumer's 64 x 256 accumulators
 * (wgmma's layout: warp v rows 16v.., lane (g, q) rows g and g + 8, columns
 * 8j + 2q) rounded to bf16 and written in two halves of 64 x 128 into buf
 * as two 64 x 64 boxes in the 128-byte swizzle (16-byte chunk k of row r at
 * k ^ (r & 7): a warp's stores fall in distinct banks), each half sent by
 * two TMA stores, which clip rows and columns past M and N. The buffer is
 * reused once the previous stores have read it (wait_group.read), named
 * barrier 1 + c holding the consumer's 128 threads. */
__device__ __forceinline__ void store_tile(const float (&d)[128], unsigned char *buf,
					   const CUtensorMap *tc, int m0, int n0, int t, int c)
{
	const int lane = t & 31, v = t >> 5, g = lane >> 2, q = lane & 3;
#pragma unroll
	for (int hh = 0; hh < 2; hh++) {
		if (t == 0)
			asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
		asm volatile("bar.sync %0, 128;\n" ::"r"(1 + c) : "memory");
#pragma unroll
		for (int jj = 0; jj < 16; jj++)
#pragma unroll
			for (int h = 0; h < 2; h++) {
				const int j = hh * 16 + jj, r = v * 16 + g + h * 8;
				const int box = jj >> 3, chunk = (jj & 7) ^ (r & 7);
				__nv_bfloat162 p = __floats2bfloat162_rn(d[4 * j + 2 * h],
									 d[4 * j + 2 * h + 1]);
				*reinterpret_cast<__nv_bfloat162 *>(buf + box * 8192 + r * 128 +
								    chunk * 16 + q * 4) = p;
			}
		asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
		asm volatile("bar.sync %0, 128;\n" ::"r"(1 + c) : "memory");
		if (t == 0) {
			for (int box = 0; box < 2; box++)
				asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group"
					     " [%0, {%1, %2}], [%3];\n" ::"l"((uint64_t)tc),
					     "r"(n0 + hh * 128 + box * 64), "r"(m0),
					     "r"(sptr(buf + box * 8192))
					     : "memory");
			asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
		}
	}
}

/* The tile origin (m0, n0) of tile number `tile` of npm x npn: row-major,
 * or with group > 0 a grouped raster (group tile rows walked column by
 * column, for L2 reuse of w's tiles). */
__device__ __forceinline__ void tile_origin(int tile, int npm, int npn, int group, int *m0, int *n0)
{
	int pm = tile / npn, pn = tile % npn;
	if (group > 0) {
		const int first = tile / (group * npn) * group, r = tile % (group * npn);
		const int gsz = min(npm - first, group);
		pm = first + r % gsz;
		pn = r / gsz;
	}
	*m0 = pm * BM;
	*n0 = pn * BN;
}

} /* namespace kf_tma */

extern "C" __global__ void __launch_bounds__(384, 1)
	kf_gemm_tma_bf16(const __grid_constant__ CUtensorMap ta,
			 const __grid_constant__ CUtensorMap tb,
			 const __grid_constant__ CUtensorMap tc, __nv_bfloat16 *y, int M, int N,
			 int K, int group, int tma_store)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	using namespace kf_tma;
	extern __shared__ unsigned char smem_raw[];
	unsigned char *base = (unsigned char *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
	__nv_bfloat16 *stages = reinterpret_cast<__nv_bfloat16 *>(base);
	unsigned char *outbuf = base + Q * STAGE_BYTES; /* OUT_BYTES a consumer */
	uint64_t *full = reinterpret_cast<uint64_t *>(base + Q * STAGE_BYTES + 2 * OUT_BYTES);
	uint64_t *empty = full + Q;

	const int npm = (M + BM - 1) / BM, npn = (N + BN - 1) / BN, tiles = npm * npn;
	const int KT = (K + BK - 1) / BK;
	const int wg = threadIdx.x >> 7, t = threadIdx.x & 127;

	if (threadIdx.x == 0) {
		for (int s = 0; s < Q; s++) {
			bar_init(&full[s], 1);
			bar_init(&empty[s], 2);
		}
		asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
	}
	__syncthreads();

	/* it counts k-steps over all of this block's tiles: stage it % Q, its
	 * (it / Q)-th use, so the ring runs on across tiles and the producer
	 * loads the next tile's first stages during the consumers' stores */
	if (wg == 0) {
		asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
		if (t == 0) {
			int it = 0;
			for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
				int m0, n0;
				tile_origin(tile, npm, npn, group, &m0, &n0);
				for (int kt = 0; kt < KT; kt++, it++) {
					const int s = it % Q;
					if (it >= Q)
						bar_wait(&empty[s], ((it / Q) + 1) & 1);
					__nv_bfloat16 *sa = stages + s * STAGE_ELEMS;
					bar_expect(&full[s], STAGE_BYTES);
					tma_2d(sa, &ta, kt * BK, m0, &full[s]);
					tma_2d(sa + A_ELEMS, &tb, kt * BK, n0, &full[s]);
				}
			}
		}
		return;
	}
	asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
	const int c = wg - 1; /* consumer: rows 64c .. 64c+63 of the tile */
	int it = 0;
	for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
		int m0, n0;
		tile_origin(tile, npm, npn, group, &m0, &n0);
		float d[128];
#pragma unroll
		for (int i = 0; i < 128; i++)
			d[i] = 0.f;
		for (int kt = 0; kt < KT; kt++, it++) {
			const int s = it % Q;
			bar_wait(&full[s], (it / Q) & 1);
			const __nv_bfloat16 *sa = stages + s * STAGE_ELEMS + c * 64 * BK;
			const __nv_bfloat16 *sb = stages + s * STAGE_ELEMS + A_ELEMS;
			const uint64_t da = desc(sa), db = desc(sb);
			asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
			for (int kk = 0; kk < BK / 16; kk++)
				wgmma_256(d, da + 2 * kk, db + 2 * kk);
			asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
			asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
			if (kt > 0 && t == 0)
				bar_arrive(&empty[(it - 1) % Q]);
		}
		asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
		if (t == 0)
			bar_arrive(&empty[(it - 1) % Q]); /* the tile's last stage */

		const int lane = t & 31, v = t >> 5, g = lane >> 2, q = lane & 3;
		if (tma_store) {
			store_tile(d, outbuf + c * OUT_BYTES, &tc, m0 + c * 64, n0, t, c);
			continue;
		}
#pragma unroll
		for (int j = 0; j < 32; j++)
#pragma unroll
			for (int h = 0; h < 2; h++) {
				const int row = m0 + c * 64 + v * 16 + g + h * 8;
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
	}
	if (tma_store && t == 0) /* the last stores, done before the block ends */
		asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#else
	__trap(); /* TMA + wgmma need sm_90a */
#endif
}

/* Encodes the tensor maps of x, w and (for the TMA stores) y, through the
 * runtime's driver entry point, so no -lcuda; raises the shared-memory
 * limit; launches: a persistent grid of min(tiles, SMs) blocks of 384
 * threads, tiles = ceil_div(M, 128) * ceil_div(N, 256), block b taking
 * tiles b, b + grid, ... The caller
 * checked that the device is sm_90 and this code was built for sm_90a.
 * Thread-safe: the entry point is looked up once (a benign race: every
 * thread stores the same pointer). */
static cudaError_t gemm_sm90_go(void *y, const void *x, const void *w, int64_t M, int64_t N,
				int64_t K, int group, cudaStream_t s)
{
	const int64_t tiles = ((M + 127) / 128) * ((N + 255) / 256);
	if (M < 1 || N < 1 || K < 8 || K % 8 || M > INT32_MAX || N > INT32_MAX || K > INT32_MAX ||
	    tiles > INT32_MAX || ((uintptr_t)x & 15) || ((uintptr_t)w & 15))
		return cudaErrorInvalidValue;
	int dev, sms = 0;
	if (cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
	    sms < 1)
		return cudaErrorNotSupported;
	static PFN_cuTensorMapEncodeTiled_v12000 encode = NULL; /* looked up once */
	if (!encode) {
		cudaDriverEntryPointQueryResult q;
		void *fn = NULL;
		cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn,
								 12000, cudaEnableDefault, &q);
		if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !fn)
			return cudaErrorNotSupported;
		encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
	}
	CUtensorMap ta, tb, tc;
	const cuuint32_t estr[2] = {1, 1};
	const cuuint64_t da[2] = {(cuuint64_t)K, (cuuint64_t)M},
			 db[2] = {(cuuint64_t)K, (cuuint64_t)N};
	const cuuint64_t st[1] = {(cuuint64_t)K * 2};
	const cuuint32_t ba[2] = {64, 128}, bb[2] = {64, 256};
	if (encode(&ta, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)x, da, st, ba, estr,
		   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
		   CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
		   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS ||
	    encode(&tb, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)w, db, st, bb, estr,
		   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
		   CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
		   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS)
		return cudaErrorInvalidValue;
	/* y through TMA stores where its rows are whole 16-byte units and it
	 * is 16-byte aligned; else the consumers store it themselves */
	const cuuint64_t dc[2] = {(cuuint64_t)N, (cuuint64_t)M}, sc[1] = {(cuuint64_t)N * 2};
	const cuuint32_t bc[2] = {64, 64};
	const int tma_store = N % 8 == 0 && ((uintptr_t)y & 15) == 0 &&
			      encode(&tc, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, y, dc, sc, bc, estr,
				     CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
				     CU_TENSOR_MAP_L2_PROMOTION_NONE,
				     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
	if (!tma_store)
		tc = ta; /* unused */
	cudaError_t e = cudaFuncSetAttribute(
		kf_gemm_tma_bf16, cudaFuncAttributeMaxDynamicSharedMemorySize, kf_tma::SMEM_BYTES);
	if (e != cudaSuccess)
		return e;
	const unsigned grid = (unsigned)(tiles < sms ? tiles : sms);
	kf_gemm_tma_bf16<<<grid, kf_tma::THREADS, kf_tma::SMEM_BYTES, s>>>(
		ta, tb, tc, (__nv_bfloat16 *)y, (int)M, (int)N, (int)K, group, tma_store);
	return cudaGetLastError();
}

#endif
