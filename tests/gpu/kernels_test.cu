/* kernels_test: every op of kernels/ in every dtype against its float64
 * reference from kernels/ref/, at awkward sizes (one element, a single row,
 * D not a multiple of the vector width, rows wider than the register
 * cache, more rows than one grid dimension holds). Built with nvcc on a
 * GPU machine by tests/gpu/kernels.sh; prints one line per case and exits
 * nonzero on any failure. Also loads build/kernels/kernels.fatbin (when
 * given) and checks that every op template's baseline kernel exists in it
 * for every dtype the template allows. Inputs are rounded to the dtype
 * before the reference sees them, so both sides compute on the same data;
 * outputs are poisoned (all bits set, NaN) before every launch. */
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

extern "C" {
#include "kernels/op.h"
#include "kernels/ref/activation_ref.h"
#include "kernels/ref/adaln_ref.h"
#include "kernels/ref/gemm_ref.h"
#include "kernels/ref/layernorm_ref.h"
#include "kernels/ref/rmsnorm_ref.h"
#include "kernels/ref/rope_ref.h"
#include "kernels/ref/softmax_ref.h"
}
#include "kernels/activation.h"
#include "kernels/adaln.h"
#include "kernels/gemm.h"
#include "kernels/layernorm.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/softmax.h"

static int g_fail, g_pass;
static const char *g_only; /* --only FAMILY: run that family's tests alone */

static bool want(const char *family)
{
	return !g_only || strcmp(g_only, family) == 0;
}
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;

static double rnd_normal(void)
{
	/* xorshift64* + Box-Muller */
	auto u = []() {
		g_rng ^= g_rng >> 12, g_rng ^= g_rng << 25, g_rng ^= g_rng >> 27;
		return ((g_rng * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
	};
	double a = u(), b = u();
	return sqrt(-2.0 * log(a + 1e-300)) * cos(6.283185307179586 * b);
}

/* A host tensor: values as double (rounded to dt) and the device copy. */
struct tens {
	enum kf_dtype dt;
	size_t n;
	std::vector<double> h;
	void *d = nullptr;
	tens(enum kf_dtype t, size_t count, bool fill, double scale = 1.0, double shift = 0.0)
	    : dt(t), n(count), h(count)
	{
		std::vector<unsigned char> raw(n * dtype_bytes(dt) + 1);
		for (size_t i = 0; i < n; i++) {
			dtype_store(dt, raw.data(), i, fill ? rnd_normal() * scale + shift : 0.0);
			h[i] = dtype_load(dt, raw.data(), i);
		}
		if (cudaMalloc(&d, n * dtype_bytes(dt) + 16) != cudaSuccess) {
			fprintf(stderr, "cudaMalloc of %zu bytes failed\n", n * dtype_bytes(dt));
			exit(2);
		}
		if (fill)
			cudaMemcpy(d, raw.data(), n * dtype_bytes(dt), cudaMemcpyHostToDevice);
		else
			cudaMemset(d, 0xff, n * dtype_bytes(dt)); /* poison: NaN */
	}
	~tens()
	{
		cudaFree(d);
	}
	std::vector<double> get() const
	{
		std::vector<unsigned char> raw(n * dtype_bytes(dt) + 1);
		cudaMemcpy(raw.data(), d, n * dtype_bytes(dt), cudaMemcpyDeviceToHost);
		std::vector<double> v(n);
		for (size_t i = 0; i < n; i++)
			v[i] = dtype_load(dt, raw.data(), i);
		return v;
	}
};

struct tol {
	double atol, rtol;
};
static tol tol_std(enum kf_dtype dt)
{
	return dt == KF_DT_F32	 ? tol{1e-5, 1e-5}
	       : dt == KF_DT_F16 ? tol{2e-3, 2e-3}
				 : tol{1e-2, 1e-2};
}
static tol tol_softmax(enum kf_dtype dt)
{
	return dt == KF_DT_F32	 ? tol{1e-8, 1e-5}
	       : dt == KF_DT_F16 ? tol{1e-6, 2e-3}
				 : tol{1e-6, 1e-2};
}
static tol tol_gemm(enum kf_dtype dt)
{
	return dt == KF_DT_F16 ? tol{1e-2, 2e-3} : tol{2e-2, 1e-2};
}

/* Compares got with want; reports the case. */
static void compare(const char *what, const char *out, enum kf_dtype dt, cudaError_t launch,
		    const tens &got, const std::vector<double> &want, tol t)
{
	cudaError_t e = launch != cudaSuccess ? launch : cudaDeviceSynchronize();
	if (e != cudaSuccess) {
		printf("FAIL %-44s %-4s %s: CUDA error %s\n", what, dtype_name(dt), out,
		       cudaGetErrorString(e));
		g_fail++;
		return;
	}
	std::vector<double> g = got.get();
	size_t bad = 0, first = (size_t)-1;
	double worst = 0, maxerr = 0;
	for (size_t i = 0; i < g.size(); i++) {
		double err = fabs(g[i] - want[i]);
		double lim = t.atol + t.rtol * fabs(want[i]);
		if (!(err <= lim)) { /* NaN fails */
			if (first == (size_t)-1)
				first = i;
			bad++;
		}
		if (err > maxerr)
			maxerr = err;
		if (err / lim > worst)
			worst = err / lim;
	}
	if (bad) {
		printf("FAIL %-44s %-4s %s: %zu of %zu mismatched, first [%zu] got %.8g want "
		       "%.8g\n",
		       what, dtype_name(dt), out, bad, g.size(), first, g[first], want[first]);
		g_fail++;
	} else {
		printf("ok   %-44s %-4s %s: max |err| %.3g, worst err/tol %.3f\n", what,
		       dtype_name(dt), out, maxerr, worst);
		g_pass++;
	}
}

static const enum kf_dtype FLOATS[] = {KF_DT_F32, KF_DT_F16, KF_DT_BF16};

static void must(int rc, const struct kf_err *err)
{
	if (rc) {
		fprintf(stderr, "reference failed: %s\n", err->msg);
		exit(2);
	}
}

static void test_rmsnorm(int64_t T, int64_t D)
{
	for (enum kf_dtype dt : FLOATS) {
		struct kf_err err = {0, ""};
		char what[96];
		tens x(dt, T * D, true), w(dt, D, true), res(dt, T * D, true);
		std::vector<double> want(T * D), wr(T * D);
		{
			tens y(dt, T * D, false);
			must(rmsnorm_ref(want.data(), x.h.data(), w.h.data(), T, D, 1e-6, &err),
			     &err);
			snprintf(what, sizeof what, "rmsnorm T=%lld D=%lld", (long long)T,
				 (long long)D);
			compare(what, "y", dt, rmsnorm_launch(dt, y.d, x.d, w.d, T, D, 1e-6f, 0), y,
				want, tol_std(dt));
		}
		{
			tens y(dt, T * D, false);
			must(rmsnorm_ref(want.data(), x.h.data(), NULL, T, D, 1e-6, &err), &err);
			snprintf(what, sizeof what, "rmsnorm_noweight T=%lld D=%lld", (long long)T,
				 (long long)D);
			compare(what, "y", dt, rmsnorm_launch(dt, y.d, x.d, NULL, T, D, 1e-6f, 0),
				y, want, tol_std(dt));
		}
		{
			tens y(dt, T * D, false), r(dt, T * D, false);
			must(add_rmsnorm_ref(want.data(), wr.data(), x.h.data(), res.h.data(),
					     w.h.data(), T, D, 1e-6, &err),
			     &err);
			snprintf(what, sizeof what, "add_rmsnorm T=%lld D=%lld", (long long)T,
				 (long long)D);
			cudaError_t e =
				add_rmsnorm_launch(dt, y.d, r.d, x.d, res.d, w.d, T, D, 1e-6f, 0);
			compare(what, "y", dt, e, y, want, tol_std(dt));
			compare(what, "r", dt, e, r, wr, tol_std(dt));
		}
	}
}

/* Pointers 8 bytes off 16-byte alignment (16-bit types): the few-row
 * kernel's alignment test fails and the row kernel's scalar path runs. */
static void test_rmsnorm_offset(int64_t T, int64_t D)
{
	for (enum kf_dtype dt : {KF_DT_F16, KF_DT_BF16}) {
		struct kf_err err = {0, ""};
		char what[96];
		const size_t n = T * D, eb = dtype_bytes(dt);
		tens x(dt, n, true), w(dt, D, true), y(dt, n, false);
		tens xs(dt, n, false), ws(dt, D, false), ys(dt, n, false); /* 16 bytes spare */
		cudaMemcpy((char *)xs.d + 8, x.d, n * eb, cudaMemcpyDeviceToDevice);
		cudaMemcpy((char *)ws.d + 8, w.d, D * eb, cudaMemcpyDeviceToDevice);
		std::vector<double> want(n);
		must(rmsnorm_ref(want.data(), x.h.data(), w.h.data(), T, D, 1e-6, &err), &err);
		snprintf(what, sizeof what, "rmsnorm T=%lld D=%lld, 8-byte offset", (long long)T,
			 (long long)D);
		cudaError_t e = rmsnorm_launch(dt, (char *)ys.d + 8, (char *)xs.d + 8,
					       (char *)ws.d + 8, T, D, 1e-6f, 0);
		if (e == cudaSuccess)
			e = cudaMemcpy(y.d, (char *)ys.d + 8, n * eb, cudaMemcpyDeviceToDevice);
		compare(what, "y", dt, e, y, want, tol_std(dt));
	}
}

/* The few-row kernels launched directly as the op templates would: f32,
 * which no launcher picks (rms_few_rows in kernels/rmsnorm.cu is 16-bit
 * only) but the templates name for every dtype, and 16-bit rows of D <=
 * 256, which the launchers and templates give the short-row kernel. */
extern "C" __global__ void kf_rmsnorm_rows_f32(float *, const float *, const float *, int, int,
					       float);
extern "C" __global__ void kf_rmsnorm_noweight_rows_f32(float *, const float *, int, int, float);
extern "C" __global__ void kf_rmsnorm_rows_bf16(__nv_bfloat16 *, const __nv_bfloat16 *,
						const __nv_bfloat16 *, int, int, float);
extern "C" __global__ void kf_rmsnorm_noweight_rows_bf16(__nv_bfloat16 *, const __nv_bfloat16 *,
							 int, int, float);
extern "C" __global__ void kf_rmsnorm_rows_f16(__half *, const __half *, const __half *, int, int,
					       float);
extern "C" __global__ void kf_rmsnorm_noweight_rows_f16(__half *, const __half *, int, int, float);

template <typename T>
static void launch_rows(void (*k)(T *, const T *, const T *, int, int, float),
			void (*kn)(T *, const T *, int, int, float), bool hw, const tens &y,
			const tens &x, const tens &w, int64_t T_, int64_t D)
{
	const unsigned block = (unsigned)((D + 511) / 512 * 32);
	if (hw)
		k<<<(unsigned)T_, block>>>((T *)y.d, (const T *)x.d, (const T *)w.d, (int)T_,
					   (int)D, 1e-6f);
	else
		kn<<<(unsigned)T_, block>>>((T *)y.d, (const T *)x.d, (int)T_, (int)D, 1e-6f);
}

static void test_rmsnorm_rows(enum kf_dtype dt, int64_t T, int64_t D)
{
	struct kf_err err = {0, ""};
	char what[96];
	tens x(dt, T * D, true), w(dt, D, true);
	std::vector<double> want(T * D);
	for (int hw = 1; hw >= 0; hw--) {
		tens y(dt, T * D, false);
		must(rmsnorm_ref(want.data(), x.h.data(), hw ? w.h.data() : NULL, T, D, 1e-6, &err),
		     &err);
		if (dt == KF_DT_F32)
			launch_rows<float>(kf_rmsnorm_rows_f32, kf_rmsnorm_noweight_rows_f32, hw, y,
					   x, w, T, D);
		else if (dt == KF_DT_F16)
			launch_rows<__half>(kf_rmsnorm_rows_f16, kf_rmsnorm_noweight_rows_f16, hw,
					    y, x, w, T, D);
		else
			launch_rows<__nv_bfloat16>(kf_rmsnorm_rows_bf16,
						   kf_rmsnorm_noweight_rows_bf16, hw, y, x, w, T,
						   D);
		snprintf(what, sizeof what, "kf_rmsnorm%s_rows T=%lld D=%lld",
			 hw ? "" : "_noweight", (long long)T, (long long)D);
		compare(what, "y", dt, cudaGetLastError(), y, want, tol_std(dt));
	}
}

/* mean: 3 checks that the variance is taken about the mean; 300 (against
 * a spread of 1) that it does not cancel (E[x^2] - E[x]^2 would lose every
 * digit in f32). At |mean| = 300 sigma the fp32 mean itself is off by a few
 * 1e-5 sigma (partial sums near 1e6 round at 0.06; PyTorch's fp32
 * layernorm is no better), and the weight (|w| up to ~4.5 here) scales
 * that: f32 there is held to 5e-4 absolute, 1e-4 relative instead of 1e-5
 * (H200, 2026-11-30: worst 1.7e-4 with the weight, 3.6e-5 without). */
static void test_layernorm(int64_t T, int64_t D, double mean = 3.0)
{
	for (enum kf_dtype dt : FLOATS)
		for (int aff = 0; aff < 4; aff++) {
			struct kf_err err = {0, ""};
			char what[96];
			tens x(dt, T * D, true, 1.0, mean), w(dt, D, true), b(dt, D, true);
			tens y(dt, T * D, false);
			std::vector<double> want(T * D);
			const double *wp = (aff & 1) ? w.h.data() : NULL,
				     *bp = (aff & 2) ? b.h.data() : NULL;
			must(layernorm_ref(want.data(), x.h.data(), wp, bp, T, D, 1e-5, &err),
			     &err);
			snprintf(what, sizeof what, "layernorm%s%s T=%lld D=%lld mean %g",
				 (aff & 1) ? "+w" : "", (aff & 2) ? "+b" : "", (long long)T,
				 (long long)D, mean);
			const tol t =
				dt == KF_DT_F32 && fabs(mean) > 100 ? tol{5e-4, 1e-4} : tol_std(dt);
			compare(what, "y", dt,
				layernorm_launch(dt, y.d, x.d, (aff & 1) ? w.d : NULL,
						 (aff & 2) ? b.d : NULL, T, D, 1e-5f, 0),
				y, want, t);
		}
}

/* Masked softmax (attention's -inf): row t keeps elements i <= t * D / T
 * and i % 5 != 4 (element 0 always), so whole threads' parts of a row are
 * -inf and must contribute exactly 0. */
static void test_softmax_masked(int64_t T, int64_t D)
{
	for (enum kf_dtype dt : FLOATS) {
		struct kf_err err = {0, ""};
		char what[96];
		tens x(dt, T * D, true, 3.0), y(dt, T * D, false);
		std::vector<unsigned char> raw(T * D * dtype_bytes(dt) + 1);
		for (int64_t t = 0; t < T; t++)
			for (int64_t i = 0; i < D; i++) {
				const int64_t k = t * D + i;
				if (i > 0 && (i > t * D / T || i % 5 == 4))
					x.h[k] = -INFINITY;
				dtype_store(dt, raw.data(), k, x.h[k]);
			}
		cudaMemcpy(x.d, raw.data(), T * D * dtype_bytes(dt), cudaMemcpyHostToDevice);
		std::vector<double> want(T * D);
		must(softmax_ref(want.data(), x.h.data(), T, D, &err), &err);
		snprintf(what, sizeof what, "softmax masked T=%lld D=%lld", (long long)T,
			 (long long)D);
		compare(what, "y", dt, softmax_launch(dt, y.d, x.d, T, D, 0), y, want,
			tol_softmax(dt));
	}
}

static void test_softmax(int64_t T, int64_t D)
{
	for (enum kf_dtype dt : FLOATS) {
		struct kf_err err = {0, ""};
		char what[96];
		tens x(dt, T * D, true, 3.0), y(dt, T * D, false);
		std::vector<double> want(T * D);
		must(softmax_ref(want.data(), x.h.data(), T, D, &err), &err);
		snprintf(what, sizeof what, "softmax T=%lld D=%lld", (long long)T, (long long)D);
		compare(what, "y", dt, softmax_launch(dt, y.d, x.d, T, D, 0), y, want,
			tol_softmax(dt));
	}
}

/* Pointers 8 bytes off 16-byte alignment: the flat kernel's test fails and
 * the row kernel's scalar path runs. */
static void test_adaln_offset(int64_t B, int64_t S, int64_t D)
{
	for (enum kf_dtype dt : FLOATS) {
		struct kf_err err = {0, ""};
		char what[96];
		const size_t n = B * S * D, eb = dtype_bytes(dt);
		tens x(dt, n, true), sc(dt, B * D, true), sh(dt, B * D, true), y(dt, n, false);
		tens xs(dt, n, false), scs(dt, B * D, false), shs(dt, B * D, false),
			ys(dt, n, false);
		cudaMemcpy((char *)xs.d + 8, x.d, n * eb, cudaMemcpyDeviceToDevice);
		cudaMemcpy((char *)scs.d + 8, sc.d, B * D * eb, cudaMemcpyDeviceToDevice);
		cudaMemcpy((char *)shs.d + 8, sh.d, B * D * eb, cudaMemcpyDeviceToDevice);
		std::vector<double> want(n);
		must(adaln_modulate_ref(want.data(), x.h.data(), sc.h.data(), sh.h.data(), B, S, D,
					&err),
		     &err);
		snprintf(what, sizeof what, "adaln_modulate B=%lld S=%lld D=%lld, 8-byte offset",
			 (long long)B, (long long)S, (long long)D);
		cudaError_t e =
			adaln_modulate_launch(dt, (char *)ys.d + 8, (char *)xs.d + 8,
					      (char *)scs.d + 8, (char *)shs.d + 8, B, S, D, 0);
		if (e == cudaSuccess)
			e = cudaMemcpy(y.d, (char *)ys.d + 8, n * eb, cudaMemcpyDeviceToDevice);
		compare(what, "y", dt, e, y, want, tol_std(dt));
	}
}

static void test_activation(int64_t T, int64_t D)
{
	static const char *names[] = {"silu_and_mul", "geglu", "geglu_tanh", "gelu", "gelu_tanh"};
	for (int op = 0; op < KF_ACT_COUNT; op++)
		for (enum kf_dtype dt : FLOATS) {
			struct kf_err err = {0, ""};
			char what[96];
			const int64_t xw = op <= KF_ACT_GEGLU_TANH ? 2 * D : D;
			tens x(dt, T * xw, true, 2.0), y(dt, T * D, false);
			std::vector<double> want(T * D);
			must(activation_ref((enum act_ref_op)op, want.data(), x.h.data(), T, D,
					    &err),
			     &err);
			snprintf(what, sizeof what, "%s T=%lld D=%lld", names[op], (long long)T,
				 (long long)D);
			compare(what, "y", dt,
				activation_launch((enum kf_act_op)op, dt, y.d, x.d, T, D, 0), y,
				want, tol_std(dt));
		}
}

/* The gated ops on 8-byte-offset x and y: whole vectors a row, but not
 * 16-byte aligned, so the launcher takes the row kernel's scalar path
 * instead of the flat kernel. */
static void test_activation_offset(int64_t T, int64_t D)
{
	static const char *names[] = {"silu_and_mul", "geglu", "geglu_tanh"};
	for (int op = 0; op <= KF_ACT_GEGLU_TANH; op++)
		for (enum kf_dtype dt : FLOATS) {
			struct kf_err err = {0, ""};
			char what[96];
			const size_t eb = dtype_bytes(dt);
			tens x(dt, T * 2 * D, true, 2.0), y(dt, T * D, false);
			tens xs(dt, T * 2 * D, false), ys(dt, T * D, false);
			cudaMemcpy((char *)xs.d + 8, x.d, T * 2 * D * eb, cudaMemcpyDeviceToDevice);
			std::vector<double> want(T * D);
			must(activation_ref((enum act_ref_op)op, want.data(), x.h.data(), T, D,
					    &err),
			     &err);
			snprintf(what, sizeof what, "%s T=%lld D=%lld, 8-byte offset", names[op],
				 (long long)T, (long long)D);
			cudaError_t e = activation_launch((enum kf_act_op)op, dt, (char *)ys.d + 8,
							  (char *)xs.d + 8, T, D, 0);
			if (e == cudaSuccess)
				e = cudaMemcpy(y.d, (char *)ys.d + 8, T * D * eb,
					       cudaMemcpyDeviceToDevice);
			compare(what, "y", dt, e, y, want, tol_std(dt));
		}
}

static void test_rope(int64_t T, int64_t H, int64_t Dh)
{
	for (int neox = 0; neox < 2; neox++)
		for (enum kf_dtype dt : FLOATS) {
			struct kf_err err = {0, ""};
			char what[96];
			tens x(dt, T * H * Dh, true), y(dt, T * H * Dh, false);
			tens c(KF_DT_F32, T * Dh / 2, true), s(KF_DT_F32, T * Dh / 2, true);
			std::vector<double> want(T * H * Dh);
			must(rope_ref(neox, want.data(), x.h.data(), c.h.data(), s.h.data(), T, H,
				      Dh, &err),
			     &err);
			snprintf(what, sizeof what, "rope_%s T=%lld H=%lld Dh=%lld",
				 neox ? "neox" : "gptj", (long long)T, (long long)H, (long long)Dh);
			compare(what, "y", dt,
				rope_launch(neox, dt, y.d, x.d, (const float *)c.d,
					    (const float *)s.d, T, H, Dh, 0),
				y, want, tol_std(dt));
		}
}

static void test_adaln(int64_t B, int64_t S, int64_t D)
{
	for (enum kf_dtype dt : FLOATS) {
		struct kf_err err = {0, ""};
		char what[96];
		tens x(dt, B * S * D, true), sc(dt, B * D, true), sh(dt, B * D, true);
		tens y(dt, B * S * D, false);
		std::vector<double> want(B * S * D);
		must(adaln_modulate_ref(want.data(), x.h.data(), sc.h.data(), sh.h.data(), B, S, D,
					&err),
		     &err);
		snprintf(what, sizeof what, "adaln_modulate B=%lld S=%lld D=%lld", (long long)B,
			 (long long)S, (long long)D);
		compare(what, "y", dt, adaln_modulate_launch(dt, y.d, x.d, sc.d, sh.d, B, S, D, 0),
			y, want, tol_std(dt));
	}
}

static void test_gemm(int64_t M, int64_t N, int64_t K)
{
	for (enum kf_dtype dt : {KF_DT_F16, KF_DT_BF16}) {
		struct kf_err err = {0, ""};
		char what[96];
		tens x(dt, M * K, true), w(dt, N * K, true), y(dt, M * N, false);
		std::vector<double> want(M * N);
		must(gemm_ref(want.data(), x.h.data(), w.h.data(), M, N, K, &err), &err);
		snprintf(what, sizeof what, "gemm M=%lld N=%lld K=%lld", (long long)M, (long long)N,
			 (long long)K);
		/* tolerance scales with the output's size (sqrt(K) for unit inputs) */
		tol t = tol_gemm(dt);
		t.atol *= sqrt((double)K) / 8;
		compare(what, "y", dt, gemm_launch(dt, y.d, x.d, w.d, M, N, K, 0), y, want, t);
		tens y2(dt, M * N, false);
		compare(what, "y (mma.sync)", dt, gemm_mma_launch(dt, y2.d, x.d, w.d, M, N, K, 0),
			y2, want, t);
		if (dt == KF_DT_BF16) {
			tens y3(dt, M * N, false);
			cudaError_t e = gemm_sm90_launch(y3.d, x.d, w.d, M, N, K, 3, 0);
			if (e == cudaErrorNotSupported)
				printf("skip %-44s bf16 y (sm90): not an sm_90a build or device\n",
				       what);
			else
				compare(what, "y (sm90, group 3)", dt, e, y3, want, t);
		}
	}
}

/* Every template's baseline kernel, for every dtype it allows, must be in
 * the fatbin: the harness looks them up by these names. */
static void test_fatbin(const char *path)
{
	CUmodule mod;
	if (cuInit(0) != CUDA_SUCCESS || cuModuleLoad(&mod, path) != CUDA_SUCCESS) {
		printf("FAIL fatbin %s: cannot load\n", path);
		g_fail++;
		return;
	}
	for (size_t i = 0; i < op_count(); i++) {
		const struct op_template *op = op_at(i);
		const char *k = strstr(op->spec_json, "\"kernel\": \"");
		const char *dts = strstr(op->spec_json, "\"dtypes\": [");
		if (!k || !dts) {
			printf("FAIL op %s: no kernel or dtypes in spec_json\n", op->name);
			g_fail++;
			continue;
		}
		/* every launch's kernel, in every dtype the template allows */
		for (; k; k = strstr(k, "\"kernel\": \"")) {
			k += strlen("\"kernel\": \"");
			const char *end = strstr(k, "$dtype");
			if (!end) {
				printf("FAIL op %s: a kernel name without $dtype\n", op->name);
				g_fail++;
				break;
			}
			for (enum kf_dtype dt : {KF_DT_F32, KF_DT_F16, KF_DT_BF16}) {
				char q[16];
				snprintf(q, sizeof q, "\"%s\"", dtype_name(dt));
				const char *close = strchr(dts, ']');
				const char *hit = strstr(dts, q);
				if (!hit || hit > close)
					continue;
				char name[128];
				snprintf(name, sizeof name, "%.*s%s", (int)(end - k), k,
					 dtype_name(dt));
				CUfunction f;
				if (cuModuleGetFunction(&f, mod, name) != CUDA_SUCCESS) {
					printf("FAIL fatbin: kernel %s of op %s missing\n", name,
					       op->name);
					g_fail++;
				} else {
					g_pass++;
				}
			}
			k = end;
		}
	}
	printf("ok   fatbin %s: every op template's baseline kernel present\n", path);
	cuModuleUnload(mod);
}

/* Bad arguments are refused before any launch. */
static void test_rejects(void)
{
	int bad = 0;
	bad += rmsnorm_launch(KF_DT_I32, (void *)16, (void *)16, NULL, 1, 1, 1e-6f, 0) !=
	       cudaErrorInvalidValue;
	bad += rmsnorm_launch(KF_DT_BF16, (void *)16, (void *)16, NULL, 1, 0, 1e-6f, 0) !=
	       cudaErrorInvalidValue;
	bad += rmsnorm_launch(KF_DT_BF16, (void *)16, (void *)16, NULL, 1, 8, -1.f, 0) !=
	       cudaErrorInvalidValue;
	bad += softmax_launch(KF_DT_F32, NULL, NULL, 3, 8, 0) != cudaErrorInvalidValue;
	bad += rope_launch(1, KF_DT_F32, (void *)16, (void *)16, (const float *)16,
			   (const float *)16, 1, 1, 3, 0) != cudaErrorInvalidValue;
	bad += gemm_launch(KF_DT_BF16, (void *)16, (void *)16, (void *)16, 8, 8, 12, 0) !=
	       cudaErrorInvalidValue;
	bad += gemm_launch(KF_DT_F32, (void *)16, (void *)16, (void *)16, 8, 8, 16, 0) !=
	       cudaErrorInvalidValue;
	bad += gemm_sm90_launch((void *)16, (void *)16, (void *)16, 8, 8, 16, -1, 0) !=
	       cudaErrorInvalidValue;
	bad += activation_launch(KF_ACT_COUNT, KF_DT_F32, (void *)16, (void *)16, 1, 1, 0) !=
	       cudaErrorInvalidValue;
	bad += adaln_modulate_launch(KF_DT_F32, (void *)16, (void *)16, NULL, NULL, 1, 1, 1, 0) !=
	       cudaErrorInvalidValue;
	if (bad) {
		printf("FAIL launch helpers accepted %d bad argument sets\n", bad);
		g_fail++;
	} else {
		printf("ok   launch helpers refuse bad arguments\n");
		g_pass++;
	}
	/* T == 0 is a no-op, not an error */
	if (rmsnorm_launch(KF_DT_BF16, NULL, NULL, NULL, 0, 8, 1e-6f, 0) != cudaSuccess) {
		printf("FAIL rmsnorm_launch with T=0 is not a no-op\n");
		g_fail++;
	}
}

int main(int argc, char **argv)
{
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("SKIP kernels_test: no CUDA device\n");
		return 0;
	}
	cudaDeviceProp p;
	cudaGetDeviceProperties(&p, 0);
	printf("kernels_test on %s (sm_%d%d, %d SMs)\n", p.name, p.major, p.minor,
	       p.multiProcessorCount);
	/* usage: kernels_test [--quick] [--only FAMILY] [path/to/kernels.fatbin]
	 * FAMILY: rmsnorm, layernorm, softmax, activation, rope, adaln or
	 * gemm; the rest is skipped (e.g. one family under compute-sanitizer) */
	bool quick = false;
	const char *fatbin = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0)
			quick = true;
		else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
			g_only = argv[++i];
		else
			fatbin = argv[i];
	}

	if (g_only) {
		static const char *const FAMILIES[] = {
			"rmsnorm", "layernorm", "softmax", "activation", "rope", "adaln", "gemm"};
		bool known = false;
		for (const char *f : FAMILIES)
			known = known || strcmp(f, g_only) == 0;
		if (!known) {
			fprintf(stderr,
				"kernels_test: --only %s: expected rmsnorm, layernorm, softmax, "
				"activation, rope, adaln or gemm\n",
				g_only);
			return 2;
		}
	}
	test_rejects();
	/* (T, D): one element, odd widths, a single row, exactly the vector
	 * width, wider than the register cache (f32 > 32768, 16-bit > 65536),
	 * more rows than one grid dimension holds, and few rows where
	 * kf::row_block gives each row 2x (1000 x 2048) or 4x (7 x 8, ...) the
	 * threads; rows packed 2 to a block with T odd (1025), 8 to a block
	 * with 125 chunks over 32 threads (2500 x 1000), and a row that is no
	 * whole number of 16-bit vectors (3001 x 4100: the two-pass path; f32
	 * holds it, 7 or 8 chunks a thread). 16-bit rmsnorm's few-row kernel
	 * (T * D <= 2162688, D % 16 == 0, D <= 8192, D > 256) at a partial
	 * warp (5 x 1008: 63 of 64 threads), D = 8192 (512 threads), T * D at
	 * the bound (264 x 8192) and one row past it (265 x 8192); D % 16 == 8
	 * (5 x 1000) and D = 8200 run the row kernel; the rows it no longer
	 * receives (one active thread of a warp, 7 x 16) are launched directly
	 * (test_rmsnorm_rows). 16-bit layernorm's two-row kernel (D % 8 ==
	 * 0, 2048 < D <= 4096) at one row (1 x 4096: the pair's second row absent), T odd
	 * (3 x 2056, its smallest D; 1001 x 3000; 1025 x 4096), T even (4 x
	 * 4096, 1000 x 3000); D = 2048 and 4104 on either side run the
	 * one-row kernel. rmsnorm's short-row kernel (D a whole number of at
	 * most 32 vectors: 16-bit D <= 256, f32 D <= 128): a group of one
	 * lane (7 x 8, 16-bit), groups with idle lanes (16-bit 3 x 24: 3 of
	 * 4, 5 x 40: 5 of 8, 513 x 96: 12 of 16, 33 x 136: 17 of 32; f32
	 * 3 x 24: 6 of 8, 5 x 40: 10 of 16), D = 64, 128, 200 (f32: the row
	 * kernel), 256 (the largest, 16-bit), 264 (the row kernel), one row,
	 * T not a multiple of a block's rows (70001 x 64, 4099 x 128, 1001 x
	 * 256, 16385 x 64), and T where the few-row kernel ran before. */
	const int64_t rows[][2] = {
		{1, 1},	      {1, 7},	    {3, 33},	  {5, 1000},	{2, 4097},    {4, 4096},
		{7, 8},	      {1, 16384},   {2, 20000},	  {1, 40000},	{2, 65536},   {1, 131072},
		{1, 70001},   {70000, 64},  {3000, 2048}, {1000, 3000}, {1000, 2048}, {1025, 4096},
		{2500, 1000}, {3001, 4100}, {1, 8192},	  {264, 8192},	{265, 8192},  {3, 8200},
		{128, 4096},  {512, 4096},  {7, 16},	  {5, 1008},	{1, 4096},    {3, 2056},
		{1001, 3000}, {2, 2048},    {5, 4104},	  {1, 64},	{3, 24},      {5, 40},
		{513, 96},    {300, 200},   {70001, 64},  {4099, 128},	{1001, 256},  {77, 264},
		{2, 128},     {33, 136},    {16385, 64}};
	for (auto &r : rows) {
		if (quick && r[0] * r[1] > 300000)
			continue;
		if (want("rmsnorm"))
			test_rmsnorm(r[0], r[1]);
		if (want("layernorm"))
			test_layernorm(r[0], r[1]);
		if (want("softmax"))
			test_softmax(r[0], r[1]);
	}
	if (want("rmsnorm")) {
		test_rmsnorm_offset(4, 4096);
		test_rmsnorm_offset(3, 1008);
		test_rmsnorm_offset(5, 64);
		test_rmsnorm_offset(1000, 128);
		test_rmsnorm_rows(KF_DT_F32, 7, 16);
		test_rmsnorm_rows(KF_DT_F32, 5, 1008);
		test_rmsnorm_rows(KF_DT_F32, 128, 4096);
		test_rmsnorm_rows(KF_DT_F32, 2, 8192);
		test_rmsnorm_rows(KF_DT_BF16, 7, 16);
		test_rmsnorm_rows(KF_DT_F16, 7, 16);
		test_rmsnorm_rows(KF_DT_BF16, 9, 64);
		test_rmsnorm_rows(KF_DT_F16, 3, 240);
	}
	const int64_t far[][2] = {{4, 4096}, {1025, 4096}, {2500, 1000},
				  {3, 33},   {2, 20000},   {1001, 3000}};
	for (auto &r : far)
		if (want("layernorm"))
			test_layernorm(r[0], r[1], 300.0);
	const int64_t masked[][2] = {{8, 4096}, {3000, 2048}, {3, 20001}, {2, 70001}};
	for (auto &r : masked)
		if (want("softmax"))
			test_softmax_masked(r[0], r[1]);
	/* gated ops: silu_and_mul's flat kernels with the row by a division
	 * (D = 24, 1000, 3000: partial last blocks) and by a shift (D = 4096,
	 * 16384; 64 and 8 over 70000 and 300000 rows), the row kernels where
	 * D is not whole vectors (1, 7, 20001) and for geglu, geglu_tanh; the
	 * plain ops: the row kernel (70000 and 300000 rows: more than a grid's
	 * y holds) */
	const int64_t acts[][2] = {{1, 1},     {3, 7},	    {5, 1000},	 {4, 4096}, {1, 16384},
				   {2, 20001}, {70000, 64}, {300000, 8}, {9, 3000}, {7, 24}};
	for (auto &r : acts)
		if (want("activation") && (!quick || r[0] * r[1] <= 300000))
			test_activation(r[0], r[1]);
	if (want("activation")) {
		test_activation_offset(5, 1000);
		test_activation_offset(2, 4096);
	}
	const int64_t ropes[][3] = {{1, 1, 2},	   {3, 2, 6},	  {7, 3, 66}, {5, 4, 128},
				    {2, 1, 20000}, {1000, 8, 64}, {9, 5, 72}, {4, 2, 256}};
	for (auto &r : ropes)
		if (want("rope"))
			test_rope(r[0], r[1], r[2]);
	/* adaln: the row kernel's scalar path (D = 1, 7), the flat kernel with
	 * divisions (S = 5, D = 1000; S = 140000, one vector a row) and with
	 * shifts (64 x 4096, 2 x 16384) */
	const int64_t adas[][3] = {{1, 1, 1},	  {2, 3, 7},	 {3, 5, 1000},
				   {2, 64, 4096}, {1, 2, 16384}, {2, 140000, 8}};
	for (auto &r : adas)
		if (want("adaln") && (!quick || r[0] * r[1] * r[2] <= 1000000))
			test_adaln(r[0], r[1], r[2]);
	if (want("adaln")) {
		test_adaln_offset(2, 64, 4096);
		test_adaln_offset(3, 5, 1000);
	}
	/* gemm: edge tiles, and more 128x256 tiles than an H200 has SMs (132)
	 * so the persistent Hopper kernel's blocks take several: 1024 x 4352
	 * (136 tiles), 1500 x 2900 (144, ragged in M and N; N % 8 != 0: the
	 * consumers store y) and 1500 x 3000 (144, ragged; TMA stores clip) */
	const int64_t gemms[][3] = {{1, 1, 8},	      {77, 200, 72},	 {128, 128, 64},
				    {129, 257, 136},  {256, 256, 4096},	 {512, 384, 1024},
				    {300, 131, 2000}, {1000, 520, 264},	 {640, 768, 512},
				    {1024, 4352, 64}, {1500, 2900, 136}, {1500, 3000, 72}};
	for (auto &r : gemms)
		if (want("gemm"))
			test_gemm(r[0], r[1], r[2]);
	if (fatbin)
		test_fatbin(fatbin);

	printf("kernels_test: %d passed, %d failed\n", g_pass, g_fail);
	return g_fail ? 1 : 0;
}
