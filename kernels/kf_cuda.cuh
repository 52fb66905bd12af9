/* kf_cuda: device helpers shared by every kernels/*.cu: element conversion
 * to and from float, 16-byte "chunks" of W elements (uint4 holding 8 bf16,
 * 8 f16 or 4 f32; or a single element when W == 1), single-use loads and
 * stores, and warp/row reductions. Header-only, everything inline in
 * namespace kf, so the kernels fatbin can be one unity translation unit. */
#ifndef KF_CUDA_CUH
#define KF_CUDA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

namespace kf
{

/* Elements of T in one 16-byte vector. */
template <typename T> struct vec_width {
	static constexpr int value = 16 / (int)sizeof(T);
};

__device__ __forceinline__ float to_f(float v)
{
	return v;
}
__device__ __forceinline__ float to_f(__half v)
{
	return __half2float(v);
}
__device__ __forceinline__ float to_f(__nv_bfloat16 v)
{
	return __uint_as_float((uint32_t)__bfloat16_as_ushort(v) << 16);
}

template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v)
{
	return v;
}
template <> __device__ __forceinline__ __half from_f<__half>(float v)
{
	return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v)
{
	return __float2bfloat16_rn(v);
}

/* W consecutive elements of T: one 16-byte vector, or one element (W == 1,
 * the scalar path for rows that are not a whole number of vectors). */
template <typename T, int W> struct chunk {
	uint4 raw;
};
template <typename T> struct chunk<T, 1> {
	T raw;
};

/* The single-use streams are loaded and stored plainly (ld.global /
 * st.global, default caching), as torch.compile's kernels do: on an H200
 * evict-first loads were 1-5% slower, evict-first stores slowed GELU by
 * 0.3 us and ld.global.L2::256B loads 0.5-1% (kernels/MEASUREMENTS.md).
 * p + i*W must be 16-byte aligned for the vector form. */
template <typename T, int W> __device__ __forceinline__ chunk<T, W> ld_stream(const T *p, int64_t i)
{
	chunk<T, W> c;
	if constexpr (W == 1) {
		c.raw = p[i];
	} else {
		const uint4 *q = reinterpret_cast<const uint4 *>(p) + i;
		c.raw = *q;
	}
	return c;
}

/* Cached load through the read-only path, for data reused across rows
 * (weights, biases, rotary tables, modulation vectors). */
template <typename T, int W> __device__ __forceinline__ chunk<T, W> ld_keep(const T *p, int64_t i)
{
	chunk<T, W> c;
	if constexpr (W == 1)
		c.raw = __ldg(p + i);
	else
		c.raw = __ldg(reinterpret_cast<const uint4 *>(p) + i);
	return c;
}

/* Plain load: for the multi-pass fallbacks, whose second read should hit L2. */
template <typename T, int W> __device__ __forceinline__ chunk<T, W> ld_plain(const T *p, int64_t i)
{
	chunk<T, W> c;
	if constexpr (W == 1)
		c.raw = p[i];
	else
		c.raw = reinterpret_cast<const uint4 *>(p)[i];
	return c;
}

template <typename T, int W>
__device__ __forceinline__ void st_stream(T *p, int64_t i, const chunk<T, W> &c)
{
	if constexpr (W == 1)
		p[i] = c.raw;
	else
		reinterpret_cast<uint4 *>(p)[i] = c.raw;
}

/* The single-pass row ops' loads and stores (rmsnorm family, layernorm):
 * f32 vectors carry an L2 evict_last policy both ways, as torch.compile's
 * f32 RMSNorm loads x; 16-bit types and scalars use ld_stream/st_stream.
 * On an H200 (A/B, two runs): f32 RMSNorm 16384x4096 134.5 -> 129.6 us, layernorm 135.1 -> 130.7; the same loads without the store
 * policy 130.8 and 131.3; the store policy on bf16 made RMSNorm at
 * 1x4096x2048 5% slower, and the load policy on f32 softmax 0.8% slower,
 * so neither is used there. Needs sm_80 (createpolicy). */
__device__ __forceinline__ uint64_t evict_last_policy()
{
	uint64_t pol;
	asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
	return pol;
}

template <typename T, int W> __device__ __forceinline__ chunk<T, W> ld_row(const T *p, int64_t i)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	if constexpr (sizeof(T) == 4 && W == 4) {
		chunk<T, W> c;
		/* volatile: kept in program order with st_row's stores */
		asm volatile(
			"ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
			: "=r"(c.raw.x), "=r"(c.raw.y), "=r"(c.raw.z), "=r"(c.raw.w)
			: "l"(reinterpret_cast<const uint4 *>(p) + i), "l"(evict_last_policy()));
		return c;
	}
#endif
	return ld_stream<T, W>(p, i);
}

template <typename T, int W>
__device__ __forceinline__ void st_row(T *p, int64_t i, const chunk<T, W> &c)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
	if constexpr (sizeof(T) == 4 && W == 4) {
		asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;" ::"l"(
				     reinterpret_cast<uint4 *>(p) + i),
			     "r"(c.raw.x), "r"(c.raw.y), "r"(c.raw.z), "r"(c.raw.w),
			     "l"(evict_last_policy())
			     : "memory");
		return;
	}
#endif
	st_stream<T, W>(p, i, c);
}

/* A pair of 16-bit T packed in one 32-bit word, to two floats and back
 * (rounding to nearest even): the 16-bit halves of unpack and pack, and
 * layouts other than chunk's 16 bytes. */
template <typename T> __device__ __forceinline__ float2 pair_unpack(uint32_t u)
{
	if constexpr (std::is_same<T, __nv_bfloat16>::value)
		return make_float2(__uint_as_float(u << 16), __uint_as_float(u & 0xffff0000u));
	else
		return __half22float2(*reinterpret_cast<const __half2 *>(&u));
}
template <typename T> __device__ __forceinline__ uint32_t pair_pack(float a, float b)
{
	if constexpr (std::is_same<T, __nv_bfloat16>::value) {
		__nv_bfloat162 h = __floats2bfloat162_rn(a, b);
		return *reinterpret_cast<uint32_t *>(&h);
	} else {
		__half2 h = __floats2half2_rn(a, b);
		return *reinterpret_cast<uint32_t *>(&h);
	}
}

/* Unpacks a chunk into W floats. */
template <typename T, int W>
__device__ __forceinline__ void unpack(const chunk<T, W> &c, float (&f)[W])
{
	if constexpr (W == 1) {
		f[0] = to_f(c.raw);
	} else {
		const uint32_t u[4] = {c.raw.x, c.raw.y, c.raw.z, c.raw.w};
		if constexpr (sizeof(T) == 4) {
#pragma unroll
			for (int k = 0; k < 4; k++)
				f[k] = __uint_as_float(u[k]);
		} else {
#pragma unroll
			for (int k = 0; k < 4; k++) {
				const float2 g = pair_unpack<T>(u[k]);
				f[2 * k] = g.x;
				f[2 * k + 1] = g.y;
			}
		}
	}
}

/* The largest element of a 16-bit chunk, from its packed pairs (exact:
 * 3 packed maxima and one pair instead of 8 conversions and 8 maxima;
 * NaN is dropped as by fmaxf). For f32 and single elements: fmaxf. */
template <typename T, int W> __device__ __forceinline__ float chunk_max(const chunk<T, W> &c)
{
	if constexpr (W == 1) {
		return to_f(c.raw);
	} else if constexpr (sizeof(T) == 4) {
		return fmaxf(fmaxf(__uint_as_float(c.raw.x), __uint_as_float(c.raw.y)),
			     fmaxf(__uint_as_float(c.raw.z), __uint_as_float(c.raw.w)));
	} else {
		using T2 = typename std::conditional<std::is_same<T, __half>::value, __half2,
						     __nv_bfloat162>::type;
		const uint32_t u[4] = {c.raw.x, c.raw.y, c.raw.z, c.raw.w};
		T2 p[4];
#pragma unroll
		for (int k = 0; k < 4; k++)
			p[k] = *reinterpret_cast<const T2 *>(&u[k]);
		const T2 m = __hmax2(__hmax2(p[0], p[1]), __hmax2(p[2], p[3]));
		return fmaxf(to_f(m.x), to_f(m.y));
	}
}

/* Packs W floats into a chunk, rounding to nearest even. */
template <typename T, int W> __device__ __forceinline__ chunk<T, W> pack(const float (&f)[W])
{
	chunk<T, W> c;
	if constexpr (W == 1) {
		c.raw = from_f<T>(f[0]);
	} else {
		uint32_t u[4];
		if constexpr (sizeof(T) == 4) {
#pragma unroll
			for (int k = 0; k < 4; k++)
				u[k] = __float_as_uint(f[k]);
		} else {
#pragma unroll
			for (int k = 0; k < 4; k++)
				u[k] = pair_pack<T>(f[2 * k], f[2 * k + 1]);
		}
		c.raw = make_uint4(u[0], u[1], u[2], u[3]);
	}
	return c;
}

/* One MUFU instruction each, results below 2^-126 flushed to zero:
 * rcp.approx (1 ulp), ex2.approx (2 ulp). */
__device__ __forceinline__ float rcp_approx(float v)
{
	float r;
	asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
	return r;
}
__device__ __forceinline__ float ex2_approx(float v)
{
	float r;
	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
	return r;
}

__device__ __forceinline__ bool aligned16(const void *p)
{
	return ((uintptr_t)p & 15u) == 0;
}

/* Butterfly sum/max over groups of `width` lanes (a power of two <= 32). */
__device__ __forceinline__ float group_sum(float v, int width)
{
	if (width >= 32) { /* the usual case: no branch around each step */
#pragma unroll
		for (int o = 16; o > 0; o >>= 1)
			v += __shfl_xor_sync(0xffffffffu, v, o);
		return v;
	}
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		if (o < width)
			v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}
__device__ __forceinline__ float group_max(float v, int width)
{
	if (width >= 32) {
#pragma unroll
		for (int o = 16; o > 0; o >>= 1)
			v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
		return v;
	}
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		if (o < width)
			v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* Reduces v over the blockDim.x threads of one row; a block holds
 * blockDim.y rows. blockDim.x is a power of two <= 32 or a multiple of 32.
 * red: __shared__ float[32]. Every thread of the block must call it (it
 * holds __syncthreads when a row spans several warps); all get the result.
 * TAIL == false leaves out the closing barrier that lets a later reduction
 * reuse red: for the last reduction of a kernel, or one whose successor
 * uses another buffer (one barrier less on the latency-bound shapes). */
template <bool MAX, bool TAIL = true>
__device__ __forceinline__ float row_reduce(float v, float *red)
{
	const int tx = blockDim.x;
	v = MAX ? group_max(v, tx < 32 ? tx : 32) : group_sum(v, tx < 32 ? tx : 32);
	if (tx <= 32)
		return v;
	const int warps = tx >> 5;
	const int tid = threadIdx.y * tx + threadIdx.x;
	if ((tid & 31) == 0)
		red[tid >> 5] = v;
	__syncthreads();
	const float *r = red + threadIdx.y * warps;
	float s;
	if (warps <= 4) {
		s = r[0];
		for (int k = 1; k < warps; k++)
			s = MAX ? fmaxf(s, r[k]) : s + r[k];
	} else {
		/* 5 shuffle steps instead of a chain of `warps` dependent
		 * shared-memory reads, for the few-rows shapes' wide rows
		 * (8-32 warps), where this chain is the kernel's latency */
		const int lane = threadIdx.x & 31;
		const float v = lane < warps ? r[lane] : (MAX ? -INFINITY : 0.f);
		s = MAX ? group_max(v, 32) : group_sum(v, 32);
	}
	if (TAIL)
		__syncthreads(); /* red is reused by the next reduction */
	return s;
}

/* The row-op block shape, shared by every launch helper and every op
 * template's baseline launch so both run the same configuration. On large
 * inputs tx threads per row hold 64 bytes each (4 vectors: 32 elements of
 * bf16/f16, 16 of f32; the whole row in registers, one pass over memory),
 * rounded to a warp, and small rows are packed ty to a block of about
 * `threads` threads: 256 for the rmsnorm family, 128 for layernorm and
 * softmax (one 4096-row a block, so the two reductions' barriers wait
 * for no other row; on an H200 layernorm 74.7 -> 71.7 us, softmax -1%,
 * rmsnorm +1.7%). f32 at 64 bytes a thread against 32 elements (128
 * bytes) measured layernorm 146.7 -> 135.4 us, rmsnorm 135.1 -> 134.1 at
 * 16384 x 4096 (more threads a row, and 4 chunks leave registers for the
 * weight). Few rows cannot fill the GPU, so there each row gets 4x or 2x
 * the threads (less serial work per thread, a shorter latency chain) as
 * long as all rows still fit in one wave: T * tx <= 135168 threads, an
 * H200's 132 SMs x 1024 threads at 64 registers (4x for every T <= 512
 * ran 1x512x4096 in two waves: 8.1 us against 7.3).
 *   b  = ceil_div(D * esize, 2048) * 32    (esize: bytes an element)
 *   f  = 1 + (T * b <= 67584) + 2 * (T * b <= 33792)
 *   tx = min(1024, max(32, b * f))
 *   ty = max(1, (threads / tx) * (T > 1024)) */
static inline void row_block(int64_t T, int64_t D, int esize, int threads, int *tx, int *ty)
{
	const int64_t b = (D * esize + 2047) / 2048 * 32;
	const int64_t f = 1 + (T * b <= 67584) + 2 * (T * b <= 33792);
	int64_t x = b * f;
	x = x < 32 ? 32 : x > 1024 ? 1024 : x;
	*tx = (int)x;
	const int y = (threads / (int)x) * (T > 1024);
	*ty = y > 1 ? y : 1;
}

/* Picks the per-thread register cache depth for a row of n chunks over
 * blockDim.x threads and runs op.run<W, NV>() (NV == 0: the loop path that
 * reads the row from memory again instead of holding it); MAX_NV (4 or 8)
 * caps the depth, for kernels held to fewer registers. The choice is
 * uniform across the block, so barriers inside run() are safe. */
template <typename T, int MAX_NV = 8, class Op>
__device__ __forceinline__ void row_dispatch(Op &op, int D, bool vec_ok)
{
	constexpr int V = vec_width<T>::value;
	if (vec_ok) {
		/* chunks a thread, ceil(n / tx), by comparisons: an integer
		 * division is ~20 instructions, per thread, per row */
		const int n = D / V, tx = (int)blockDim.x;
		if (n <= tx)
			op.template run<V, 1>();
		else if (n <= 2 * tx)
			op.template run<V, 2>();
		else if (n <= 4 * tx)
			op.template run<V, 4>();
		else if (MAX_NV >= 8 && n <= 8 * tx)
			op.template run<V, MAX_NV>(); /* never taken below 8 */
		else
			op.template run<V, 0>();
	} else {
		op.template run<1, 0>();
	}
}

} /* namespace kf */

#endif
