/* calib: the harness's calibrate mode. Measures this GPU's ceilings: the
 * device-to-device copy bandwidth (read + write bytes counted) and the
 * matmul throughput of cuBLAS in bf16 (fp32 accumulate) and fp32, cuBLAS
 * loaded with dlopen where the toolkit has it. Each figure is the median
 * of timed repetitions after warm-up, CUDA events on the harness's stream. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/harness/harness_int.h"

#define REPS 15

static int cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

static float median_f(float *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_f);
	return v[n / 2];
}

static int copy_bw(struct harness *h, double *gbps, char *method, size_t cap)
{
	size_t bytes = (size_t)1 << 30;
	CUdeviceptr a = 0, b = 0;
	CUresult r = cuMemAlloc(&a, bytes);
	if (r == CUDA_SUCCESS)
		r = cuMemAlloc(&b, bytes);
	if (r != CUDA_SUCCESS) {
		if (a)
			cuMemFree(a);
		return harness_cuda_fail(h, r, "allocating copy buffers");
	}
	cuMemsetD32(a, 0x3f800000u, bytes / 4);
	CUevent e0, e1;
	cuEventCreate(&e0, CU_EVENT_DEFAULT);
	cuEventCreate(&e1, CU_EVENT_DEFAULT);
	float t[REPS];
	int rc = 0;
	for (int i = -3; i < REPS && !rc; i++) {
		cuEventRecord(e0, h->stream);
		r = cuMemcpyDtoDAsync(b, a, bytes, h->stream);
		cuEventRecord(e1, h->stream);
		if (r == CUDA_SUCCESS)
			r = cuEventSynchronize(e1);
		if (r != CUDA_SUCCESS)
			rc = harness_cuda_fail(h, r, "timing the copy");
		else if (i >= 0)
			cuEventElapsedTime(&t[i], e0, e1);
	}
	if (!rc) {
		float med = median_f(t, REPS);
		*gbps = 2.0 * (double)bytes / (med * 1e-3) / 1e9;
		snprintf(method, cap,
			 "copy: cuMemcpyDtoDAsync of 1 GiB, read+write bytes, median of %d "
			 "after 3 warm-up; ",
			 REPS);
	}
	cuEventDestroy(e0);
	cuEventDestroy(e1);
	cuMemFree(a);
	cuMemFree(b);
	return rc;
}

typedef int (*create_fn)(void **);
typedef int (*destroy_fn)(void *);
typedef int (*setstream_fn)(void *, CUstream);
typedef int (*gemmex_fn)(void *, int, int, int, int, int, const void *, const void *, int, int,
			 const void *, int, int, const void *, void *, int, int, int, int);

enum { CUDA_R_32F_ = 0, CUDA_R_16BF_ = 14, CUBLAS_COMPUTE_32F_ = 68, CUBLAS_GEMM_DEFAULT_ = -1 };

static void *open_cublas(const char *cuda_home, char *which, size_t cap)
{
	static const char *const NAMES[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
					    NULL};
	for (const char *const *n = NAMES; *n; n++) {
		void *d = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
		if (!d && cuda_home) {
			char p[512];
			snprintf(p, sizeof p, "%s/lib64/%s", cuda_home, *n);
			d = dlopen(p, RTLD_NOW | RTLD_LOCAL);
		}
		if (d) {
			snprintf(which, cap, "%s", *n);
			return d;
		}
	}
	return NULL;
}

/* Times an n x n x n GEMM of element type dt (bf16 or fp32 storage, fp32
 * compute); returns TFLOP/s in *tflops. */
static int gemm_tflops(struct harness *h, gemmex_fn gemm, void *handle, int dtype, double *tflops)
{
	const int n = 8192;
	size_t es = dtype == CUDA_R_16BF_ ? 2 : 4;
	size_t bytes = (size_t)n * n * es;
	CUdeviceptr A = 0, B = 0, C = 0;
	CUresult r = cuMemAlloc(&A, bytes);
	if (r == CUDA_SUCCESS)
		r = cuMemAlloc(&B, bytes);
	if (r == CUDA_SUCCESS)
		r = cuMemAlloc(&C, bytes);
	int rc = 0;
	if (r != CUDA_SUCCESS) {
		rc = harness_cuda_fail(h, r, "allocating matmul buffers");
		goto out;
	}
	if (es == 2) {
		cuMemsetD16(A, 0x3c00, (size_t)n * n); /* bf16 0.0078125 */
		cuMemsetD16(B, 0x3c00, (size_t)n * n);
	} else {
		cuMemsetD32(A, 0x3c000000u, (size_t)n * n);
		cuMemsetD32(B, 0x3c000000u, (size_t)n * n);
	}
	float alpha = 1, beta = 0;
	CUevent e0, e1;
	cuEventCreate(&e0, CU_EVENT_DEFAULT);
	cuEventCreate(&e1, CU_EVENT_DEFAULT);
	float t[REPS];
	for (int i = -2; i < REPS && !rc; i++) {
		cuEventRecord(e0, h->stream);
		int st = gemm(handle, 0, 0, n, n, n, &alpha, (void *)A, dtype, n, (void *)B, dtype,
			      n, &beta, (void *)C, dtype, n, CUBLAS_COMPUTE_32F_,
			      CUBLAS_GEMM_DEFAULT_);
		cuEventRecord(e1, h->stream);
		r = cuEventSynchronize(e1);
		if (st != 0) {
			char m[96];
			snprintf(m, sizeof m, "cublasGemmEx failed with status %d", st);
			json_object_set_new(h->report, "error", json_string(m));
			rc = KF_EFAULT;
		} else if (r != CUDA_SUCCESS)
			rc = harness_cuda_fail(h, r, "timing cuBLAS");
		else if (i >= 0)
			cuEventElapsedTime(&t[i], e0, e1);
	}
	if (!rc)
		*tflops = 2.0 * n * (double)n * n / (median_f(t, REPS) * 1e-3) / 1e12;
	cuEventDestroy(e0);
	cuEventDestroy(e1);
out:
	if (A)
		cuMemFree(A);
	if (B)
		cuMemFree(B);
	if (C)
		cuMemFree(C);
	return rc;
}

int harness_mode_calibrate(struct harness *h)
{
	char method[512] = "";
	double gbps = 0, bf16 = 0, fp32 = 0;
	int rc = copy_bw(h, &gbps, method, sizeof method);
	if (rc)
		return rc;
	json_object_set_new(h->report, "copy_gbps", json_real(gbps));
	const char *home = json_string_value(json_object_get(h->job, "cuda_home"));
	char which[64] = "";
	void *lib = open_cublas(home, which, sizeof which);
	size_t used = strlen(method);
	if (!lib) {
		json_object_set_new(h->report, "cublas",
				    json_string("not found: matmul ceilings not measured"));
		snprintf(method + used, sizeof method - used, "cuBLAS not found");
	} else {
		create_fn create = (create_fn)dlsym(lib, "cublasCreate_v2");
		destroy_fn destroy = (destroy_fn)dlsym(lib, "cublasDestroy_v2");
		setstream_fn setstream = (setstream_fn)dlsym(lib, "cublasSetStream_v2");
		gemmex_fn gemm = (gemmex_fn)dlsym(lib, "cublasGemmEx");
		void *handle = NULL;
		if (!create || !destroy || !setstream || !gemm || create(&handle) != 0) {
			json_object_set_new(h->report, "cublas",
					    json_string("could not be initialised"));
		} else {
			setstream(handle, h->stream);
			if (!(rc = gemm_tflops(h, gemm, handle, CUDA_R_16BF_, &bf16)))
				rc = gemm_tflops(h, gemm, handle, CUDA_R_32F_, &fp32);
			destroy(handle);
			json_object_set_new(h->report, "cublas", json_string(which));
			snprintf(method + used, sizeof method - used,
				 "matmul: %s cublasGemmEx 8192^3, bf16 and fp32 storage, "
				 "fp32 compute, median of %d after 2 warm-up",
				 which, REPS);
		}
		dlclose(lib);
	}
	if (bf16 > 0)
		json_object_set_new(h->report, "bf16_tflops", json_real(bf16));
	if (fp32 > 0)
		json_object_set_new(h->report, "fp32_tflops", json_real(fp32));
	json_object_set_new(h->report, "method", json_string(method));
	return rc;
}
