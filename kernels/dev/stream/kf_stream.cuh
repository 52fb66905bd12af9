/* kf_stream: the block shape, launch and loop of the bench-only
 * persistent streamed row kernels (run 5's first lease: the grid capped at
 * a few blocks an SM, each block looping over row groups with the next
 * group's rows fetched into shared memory by cp.async while it reduces and
 * stores the current one). At __launch_bounds__(1024) (64 registers) that
 * spilled inside the loop and lost 8-21%; here the kernels are built with
 * __launch_bounds__(256, 3) (80 registers, no spills for 16-bit rows per
 * ptxas), 3 blocks an SM, rows of at most 256 threads. Only the streaming
 * pieces live here, in namespace kfs; the chunks, conversions and
 * reductions are kf_cuda.cuh's. Never part of the library: build_ab.sh
 * builds libkfk_stream.so from it when KF_AB_STREAM=1. The copies are the
 * code of that lease: they predate run 5's instruction trims (packed
 * softmax maxima, layernorm's floats), so a win here should be ported onto
 * the current kernels before it is believed. */
#ifndef KF_STREAM_CUH
#define KF_STREAM_CUH

#include "kernels/kf_cuda.cuh"

namespace kfs
{

using namespace kf;

/* The row-op block shape (kf::row_block as of run 4, rows capped at 256
 * threads for __launch_bounds__(256, 3)). On large inputs tx threads per row hold 32 elements each (4 vectors of bf16/f16,
 * 8 of f32: the whole row in registers, one pass over memory), rounded to
 * a warp, and small rows are packed ty to a block (about 256 threads).
 * Few rows cannot fill the GPU, so there each row gets 4x or 2x the
 * threads (less serial work per thread, a shorter latency chain) as long
 * as all rows still fit in one wave: T * tx <= 135168 threads, an H200's
 * 132 SMs x 1024 threads at 64 registers (run 3 gave 4x to every T <= 512,
 * and 1x512x4096 ran in two waves, 8.1 us against run 1's 7.3).
 *   b  = ceil_div(D, 1024) * 32
 *   f  = 1 + (T * b <= 67584) + 2 * (T * b <= 33792)
 *   tx = min(1024, max(32, b * f))
 *   ty = max(1, (256 / tx) * (T > 1024)) */
static inline void row_block(int64_t T, int64_t D, int *tx, int *ty)
{
	const int64_t b = (D + 1023) / 1024 * 32;
	const int64_t f = 1 + (T * b <= 67584) + 2 * (T * b <= 33792);
	int64_t x = b * f;
	x = x < 32 ? 32 : x > 256 ? 256 : x; /* __launch_bounds__(256, 3) */
	*tx = (int)x;
	const int y = (256 / (int)x) * (T > 1024);
	*ty = y > 1 ? y : 1;
}

/* --- streamed row groups ---------------------------------------------------
 * Holding the row in registers caps a row op at 4 blocks of 256 threads an
 * SM (64 registers), and a block that is reducing or computing has no loads
 * in flight: with long compute phases (softmax's exps, layernorm's two
 * reductions) the memory pipe idles, 82-87% of copy bandwidth in run 4. On
 * large inputs (T > 1024, blocks of at most 256 threads) the grid is
 * therefore capped at 4 blocks an SM, one wave, and each block loops over
 * row groups g = blockIdx.x, += gridDim.x; while it reduces and stores
 * group g, the rows of the next group are already on their way into
 * shared memory (cp.async, 16 bytes a thread, each thread fetching exactly
 * the chunks it will read: no barrier guards the landing buffer). The
 * thread copies its chunks to registers, starts the next fetch once it has
 * used them, and the op runs as before from registers. */
constexpr int LAND_THREADS = 256;    /* the largest block that streams */
constexpr int LAND_BYTES = 32768;    /* 256 threads x 32 elements x 4 bytes */
constexpr int ROW_BLOCKS_PER_SM = 3; /* 256 threads at 80 registers */

/* Row groups ahead in the landing buffer (two gained 1-2% when the kernels
 * spilled). */
template <typename T> struct land_depth {
	static constexpr int value = 1;
};

/* The row ops' launch: block (tx, ty) from row_block; grid one block per
 * row group, capped at ROW_BLOCKS_PER_SM x sms blocks when the op streams
 * (all but add_rmsnorm), T > 1024 and tx <= 256, which is also when
 * LAND_BYTES of dynamic shared memory are passed (the kernels stream only
 * with it). */
static inline void row_launch(int64_t T, int64_t D, dim3 *grid, dim3 *block, unsigned *shared,
			      bool streams = true)
{
	int tx, ty;
	row_block(T, D, &tx, &ty);
	int64_t g = (T + ty - 1) / ty;
	*shared = 0;
	if (streams && T > 1024 && tx <= LAND_THREADS) {
		int dev = 0, sms = 0;
		if (cudaGetDevice(&dev) != cudaSuccess ||
		    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) !=
			    cudaSuccess ||
		    sms < 1)
			sms = 132;
		if (g > (int64_t)ROW_BLOCKS_PER_SM * sms)
			g = (int64_t)ROW_BLOCKS_PER_SM * sms;
		*shared = LAND_BYTES;
	}
	*grid = dim3((unsigned)g);
	*block = dim3(tx, ty);
}

/* cp.async (sm_80 and later): 16 bytes global -> shared, completing at the
 * next cp_async_wait<N> that leaves at most N newer groups pending. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define KF_CP_ASYNC 1
#else
#define KF_CP_ASYNC 0
#endif
__device__ __forceinline__ void cp_async16(void *dst, const void *src)
{
#if KF_CP_ASYNC
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(
			     (uint32_t)__cvta_generic_to_shared(dst)),
		     "l"(src)
		     : "memory");
#endif
}
__device__ __forceinline__ void cp_async_commit()
{
#if KF_CP_ASYNC
	asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void cp_async_wait()
{
#if KF_CP_ASYNC
	asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}
__device__ __forceinline__ uint32_t dynamic_smem_bytes()
{
	uint32_t r;
	asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
	return r;
}

/* The landing buffer: the row ops' dynamic shared memory. */
extern __shared__ uint4 kf_landing[];

/* A thread's landing slot: chunk k of its current row at
 * kf_landing[cur + k * nthr]; refill fetches the next row into the same
 * slot (the one just used), so with two groups ahead the slots alternate.
 * Offsets rather than pointers: 32-bit shared addressing, fewer registers. */
template <typename T> struct land {
	int cur = 0, nthr = 0;
	const T *next = nullptr; /* the row fetched next; nullptr: none */

	/* Chunk k (W == the vector width) of the current row. */
	template <int W> __device__ __forceinline__ chunk<T, W> get(int k) const
	{
		chunk<T, W> c;
		if constexpr (W > 1)
			c.raw = kf_landing[cur + k * nthr];
		return c;
	}
	/* Starts fetching the next row's chunks t + k * tx, k < NV, n chunks a
	 * row, and commits them as one group (an empty one at the end, so
	 * every iteration commits one); call it after the current chunks'
	 * values have been used (their shared-memory reads are complete). */
	template <int W, int NV> __device__ __forceinline__ void refill(int t, int tx, int n) const
	{
		if constexpr (W > 1) {
			if (next) {
#pragma unroll
				for (int k = 0; k < NV; k++)
					if (t + k * tx < n)
						cp_async16(&kf_landing[cur + k * nthr],
							   reinterpret_cast<const uint4 *>(next) +
								   t + k * tx);
			}
			cp_async_commit();
		}
	}
};

/* Picks the per-thread register cache depth for a row of n chunks over
 * blockDim.x threads and runs op.run<W, NV, LAND>() (NV == 0: the loop path
 * that reads the row from memory again instead of holding it; LAND: the
 * chunks come from the landing buffer, vector rows of at most 32 elements
 * a thread only). The choice is uniform across the block, so barriers
 * inside run() are safe. */
template <typename T, bool LAND, class Op>
__device__ __forceinline__ void row_dispatch(Op &op, int D, bool vec_ok)
{
	constexpr int V = vec_width<T>::value;
	if (vec_ok) {
		const int per = (D / V + (int)blockDim.x - 1) / (int)blockDim.x;
		if (per <= 1)
			op.template run<V, 1, LAND>();
		else if (per <= 2)
			op.template run<V, 2, LAND>();
		else if (per <= 4)
			op.template run<V, 4, LAND>();
		else if constexpr (LAND) {
			if constexpr (V <= 4) /* 32 elements a thread: 8 f32 vectors */
				op.template run<V, 8, true>();
		} else if (per <= 8)
			op.template run<V, 8, false>();
		else
			op.template run<V, 0, false>();
	} else if constexpr (!LAND) {
		op.template run<1, 0, false>();
	}
}

/* The streamed loop of row_loop for NV chunks a thread (a separate loop
 * per NV: with the choice inside one loop, ptxas spills). */
template <typename T, int NV, class Op>
__device__ __forceinline__ void row_stream(Op &op, const T *x, int rows, int D, int G)
{
	constexpr int V = vec_width<T>::value, PD = land_depth<T>::value, PER = 32 / V;
	const int tx = blockDim.x, ty = blockDim.y, nthr = tx * ty, step = gridDim.x;
	const int n = D / V;
	/* slot s of this thread: kf_landing[s * slot + tid], chunk k at + k * nthr */
	const int tid = threadIdx.y * tx + threadIdx.x, slot = nthr * PER;
	for (int s = 0; s < PD; s++) {
		const int64_t r = (int64_t)(blockIdx.x + s * step) * ty + threadIdx.y;
		if (blockIdx.x + s * step < G && r < rows) {
#pragma unroll
			for (int k = 0; k < NV; k++)
				if (k * tx + threadIdx.x < n)
					cp_async16(&kf_landing[s * slot + k * nthr + tid],
						   reinterpret_cast<const uint4 *>(x + r * D) +
							   threadIdx.x + k * tx);
		}
		cp_async_commit();
	}
	op.lp.nthr = nthr;
	int it = 0;
#pragma unroll 1
	for (int g = blockIdx.x; g < G; g += step, it++) {
		const int64_t row = (int64_t)g * ty + threadIdx.y;
		const int64_t rn = row + (int64_t)PD * step * ty;
		op.at(row, it);
		op.lp.cur = (it % PD) * slot + tid;
		op.lp.next = rn < rows ? x + rn * D : nullptr;
		cp_async_wait<PD - 1>();
		op.template run<V, NV, true>();
	}
	cp_async_wait<0>(); /* nothing in flight at exit */
}

/* Runs op over the row groups of this block (rows < 2^31). op provides
 * at(row, it) (point at row `row`, the it-th group of this block; it sets
 * op.active), STREAMS (whether x may stream), a land<T> member lp, and
 * run<W, NV, LAND>() (see
 * row_dispatch); with LAND it reads its chunks through lp.get and calls
 * lp.refill once it has used them. x: the input that streams (into
 * kf_landing, the dynamic shared memory). Three cases, each compiled
 * separately so the one-group case keeps the registers it had without the
 * loop:
 *   one group per block (grid >= groups): as before the loop existed;
 *   streamed: vector rows of at most 32 elements a thread, at most
 *     LAND_THREADS threads, enough dynamic shared memory (row_launch);
 *   otherwise a grid-stride loop over the two-pass path (NV == 0). */
template <typename T, class Op>
__device__ __forceinline__ void row_loop(Op &op, const T *x, int rows, int D, bool vec_ok)
{
	constexpr int V = vec_width<T>::value, PD = land_depth<T>::value, PER = 32 / V;
	const int tx = blockDim.x, ty = blockDim.y, nthr = tx * ty;
	const int G = (int)(((int64_t)rows + ty - 1) / ty), step = (int)gridDim.x;
	if (G <= step) {
		op.at((int64_t)blockIdx.x * ty + threadIdx.y, 0);
		row_dispatch<T, false>(op, D, vec_ok);
		return;
	}
	const int n = D / V, per = (n + tx - 1) / tx;
	if (Op::STREAMS && KF_CP_ASYNC && vec_ok && nthr <= LAND_THREADS && per <= PER &&
	    dynamic_smem_bytes() >= (uint32_t)(PD * nthr * PER * 16)) {
		if constexpr (Op::STREAMS) {
			if (per <= 1)
				row_stream<T, 1>(op, x, rows, D, G);
			else if (per <= 2)
				row_stream<T, 2>(op, x, rows, D, G);
			else if (per <= 4)
				row_stream<T, 4>(op, x, rows, D, G);
			else if constexpr (PER >= 8)
				row_stream<T, 8>(op, x, rows, D, G);
		}
		return;
	}
	int it = 0;
#pragma unroll 1
	for (int g = blockIdx.x; g < G; g += step, it++) {
		op.at((int64_t)g * ty + threadIdx.y, it);
		if (vec_ok)
			op.template run<V, 0, false>();
		else
			op.template run<1, 0, false>();
	}
}

} /* namespace kfs */

#endif
