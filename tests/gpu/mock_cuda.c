/* mock_cuda: a test double of the CUDA driver API (libcuda.so.1) for
 * exercising the check/benchmark plumbing on machines without a GPU
 * (tests/gpu/mock_check.sh): device memory is host memory, modules are
 * files that must exist, and "kernels" are C functions looked up by name
 * (axpb, ref_axpb, and rmsnorm_plain: the skill example's bf16 RMSNorm,
 * for tests/bench/bench_check.sh; MOCK_CUDA_AXPB=wrong scales its output
 * by 1.5). MOCK_CUDA_AXPB picks a behaviour of axpb: ok, partial,
 * oob, mutate, fault, hang, poisona/poisonb (see k_axpb); refhang: axpb is right and ref_axpb (the CUDA
 * reference) never finishes. MOCK_CUDA_DEVICES (1 to 8, default 1) is how
 * many devices it shows, each with its own UUID and PCI bus id (the GPU
 * pool's tests). It reports itself as "kforge mock GPU" and is
 * never used outside these tests: the figures it produces are not GPU
 * measurements. */
#include <cuda.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static CUresult sticky;

CUresult CUDAAPI cuInit(unsigned int f)
{
	(void)f;
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDriverGetVersion(int *v)
{
	*v = 13000;
	return CUDA_SUCCESS;
}
static int device_count(void)
{
	const char *e = getenv("MOCK_CUDA_DEVICES");
	int n = e ? (int)strtol(e, NULL, 10) : 1;
	return n >= 1 && n <= 8 ? n : 1;
}
CUresult CUDAAPI cuDeviceGetCount(int *n)
{
	*n = device_count();
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGet(CUdevice *d, int o)
{
	*d = o;
	return o >= 0 && o < device_count() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult CUDAAPI cuDeviceGetName(char *n, int len, CUdevice d)
{
	(void)d;
	snprintf(n, (size_t)len, "kforge mock GPU");
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceTotalMem(size_t *b, CUdevice d)
{
	(void)d;
	*b = 1ull << 34;
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *u, CUdevice d)
{
	memset(u, 0x42 + d, sizeof *u);
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetPCIBusId(char *b, int len, CUdevice d)
{
	snprintf(b, (size_t)len, "0000:%02x:00.0", (unsigned)d);
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
	(void)d;
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
	case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 1 << 20; break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
	default: *v = 1024; break;
	}
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorName(CUresult e, const char **s)
{
	*s = e == CUDA_ERROR_ILLEGAL_ADDRESS ? "CUDA_ERROR_ILLEGAL_ADDRESS"
	     : e == CUDA_ERROR_NOT_FOUND     ? "CUDA_ERROR_NOT_FOUND"
	     : e			     ? "CUDA_ERROR_UNKNOWN"
					     : "CUDA_SUCCESS";
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGetErrorString(CUresult e, const char **s)
{
	*s = e == CUDA_ERROR_ILLEGAL_ADDRESS ? "an illegal memory access was encountered"
					     : "mock error";
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	(void)d;
	*c = (CUcontext)1;
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSetCurrent(CUcontext c)
{
	(void)c;
	return CUDA_SUCCESS;
}
/* Stream ordering as a real GPU has it: the synchronous memsets and
 * host-to-device copies run on the legacy stream and return before the
 * device is done; a stream created CU_STREAM_NON_BLOCKING does not wait for
 * them, so work queued there right after may run first. The mock runs
 * everything at once, so it refuses such work instead of racing. */
static unsigned stream_flags;
static int legacy_pending;

static CUresult stream_ordered(CUstream s, const char *what)
{
	if (s && (stream_flags & CU_STREAM_NON_BLOCKING) && legacy_pending) {
		fprintf(stderr,
			"mock libcuda: %s on a non-blocking stream does not wait for the memset or "
			"copy just issued on the legacy stream (a race on a real GPU)\n",
			what);
		return CUDA_ERROR_ILLEGAL_STATE;
	}
	if (!s || !(stream_flags & CU_STREAM_NON_BLOCKING))
		legacy_pending = 0; /* a blocking stream waits for the legacy one */
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream *s, unsigned int f)
{
	stream_flags = f;
	*s = (CUstream)1;
	return CUDA_SUCCESS;
}

struct mod {
	int dummy;
};
CUresult CUDAAPI cuModuleLoad(CUmodule *m, const char *path)
{
	if (access(path, R_OK))
		return CUDA_ERROR_FILE_NOT_FOUND;
	*m = (CUmodule)calloc(1, sizeof(struct mod));
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleUnload(CUmodule m)
{
	free(m);
	return CUDA_SUCCESS;
}

typedef void (*kfn)(void **params, unsigned threads);
static void k_axpb(void **p, unsigned threads)
{
	float *y = *(float **)p[0];
	float *x = *(float **)p[1];
	const float *w = *(float **)p[2];
	float s = *(float *)p[3];
	int n = *(int *)p[4];
	const char *mode = getenv("MOCK_CUDA_AXPB");
	mode = mode ? mode : "ok";
	if (!strcmp(mode, "fault")) {
		sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
		return;
	}
	if (!strcmp(mode, "hang"))
		for (;;)
			sleep(1);
	for (unsigned i = 0; i < threads; i++) {
		if (!strcmp(mode, "oob") ? (int)i < n + 16 : (int)i < n) {
			if (!strcmp(mode, "partial") && (int)i >= n / 2)
				continue;
			y[i] = (int)i < n ? s * x[i] + w[i] : 0.0f;
			if (!strcmp(mode, "mutate") && (int)i < n)
				x[i] = 0;
			/* "poisonb" ("poisona"): every launch writes the second
			 * (first) run's poison bits to every 64th element, as an
			 * 8-bit output can legitimately hold its poison byte */
			int pb = !strcmp(mode, "poisonb"), pa = !strcmp(mode, "poisona");
			if ((pa || pb) && i % 64 == 0) {
				uint32_t b = pb ? 0xffb4b4b4u : 0x7fa5a5a5u;
				memcpy(&y[i], &b, 4);
			}
		}
	}
}
static void k_ref_axpb(void **p, unsigned threads)
{
	float *y = *(float **)p[0];
	const float *x = *(float **)p[1], *w = *(float **)p[2];
	float s = *(float *)p[3];
	int n = *(int *)p[4];
	const char *mode = getenv("MOCK_CUDA_AXPB");
	if (mode && !strcmp(mode, "refhang"))
		for (;;)
			sleep(1);
	for (unsigned i = 0; i < threads && (int)i < n; i++)
		y[i] = s * x[i] + w[i];
}
static float bf16_f(uint16_t v)
{
	uint32_t u = (uint32_t)v << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}
static uint16_t f_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
/* skill/examples/qwen3-rmsnorm/plain.cu: one block per row (grid T). */
static void k_rmsnorm_plain(void **p, unsigned threads)
{
	uint16_t *y = *(uint16_t **)p[0];
	const uint16_t *x = *(uint16_t **)p[1], *w = *(uint16_t **)p[2];
	int T = *(int *)p[3], D = *(int *)p[4];
	float eps = *(float *)p[5];
	const char *mode = getenv("MOCK_CUDA_AXPB");
	float scale = mode && !strcmp(mode, "wrong") ? 1.5f : 1.0f;
	(void)threads;
	for (int t = 0; t < T; t++) {
		const uint16_t *xr = x + (size_t)t * D;
		float ss = 0;
		for (int i = 0; i < D; i++)
			ss += bf16_f(xr[i]) * bf16_f(xr[i]);
		float r = 1.0f / sqrtf(ss / (float)D + eps);
		for (int i = 0; i < D; i++)
			y[(size_t)t * D + i] = f_bf16(bf16_f(xr[i]) * r * bf16_f(w[i]) * scale);
	}
}
static const struct {
	const char *name;
	kfn fn;
} KERNELS[] = {
	{ "axpb", k_axpb },
	{ "ref_axpb", k_ref_axpb },
	{ "rmsnorm_plain", k_rmsnorm_plain },
};
CUresult CUDAAPI cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	(void)m;
	for (size_t i = 0; i < sizeof KERNELS / sizeof KERNELS[0]; i++)
		if (!strcmp(KERNELS[i].name, name)) {
			*f = (CUfunction)(uintptr_t)(i + 1);
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_NOT_FOUND;
}
CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v)
{
	(void)f;
	(void)a;
	(void)v;
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
				unsigned by, unsigned bz, unsigned sm, CUstream s, void **params,
				void **extra)
{
	(void)sm;
	(void)extra;
	if (sticky)
		return sticky;
	CUresult r = stream_ordered(s, "a kernel launch");
	if (r)
		return r;
	KERNELS[(uintptr_t)f - 1].fn(params, gx * gy * gz * bx * by * bz);
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream s)
{
	if (!s)
		legacy_pending = 0;
	return sticky;
}
CUresult CUDAAPI cuMemAlloc(CUdeviceptr *p, size_t n)
{
	void *m = malloc(n);
	*p = (CUdeviceptr)(uintptr_t)m;
	return m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr p)
{
	free((void *)(uintptr_t)p);
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n)
{
	memcpy((void *)(uintptr_t)d, s, n);
	legacy_pending = 1;
	return sticky;
}
CUresult CUDAAPI cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n)
{
	memcpy(d, (void *)(uintptr_t)s, n);
	legacy_pending = 0; /* returns when the legacy stream is done */
	return sticky;
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
	CUresult r = stream_ordered(st, "a device-to-device copy");
	if (r)
		return r;
	memcpy((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
	return sticky;
}
CUresult CUDAAPI cuMemsetD8(CUdeviceptr d, unsigned char v, size_t n)
{
	memset((void *)(uintptr_t)d, v, n);
	legacy_pending = 1;
	return sticky;
}
CUresult CUDAAPI cuMemsetD16(CUdeviceptr d, unsigned short v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((uint16_t *)(uintptr_t)d)[i] = v;
	legacy_pending = 1;
	return sticky;
}
static void set32(CUdeviceptr d, unsigned int v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		((uint32_t *)(uintptr_t)d)[i] = v;
}
CUresult CUDAAPI cuMemsetD32(CUdeviceptr d, unsigned int v, size_t n)
{
	set32(d, v, n);
	legacy_pending = 1;
	return sticky;
}
CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s)
{
	CUresult r = stream_ordered(s, "a memset");
	if (r)
		return r;
	set32(d, v, n);
	return sticky;
}
struct ev {
	double t;
};
CUresult CUDAAPI cuEventCreate(CUevent *e, unsigned f)
{
	(void)f;
	*e = (CUevent)calloc(1, sizeof(struct ev));
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s)
{
	(void)s;
	((struct ev *)e)->t = now_ms();
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventSynchronize(CUevent e)
{
	(void)e;
	return sticky;
}
CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	*ms = (float)(((struct ev *)b)->t - ((struct ev *)a)->t);
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventDestroy(CUevent e)
{
	free(e);
	return CUDA_SUCCESS;
}
/* The profiled range of the harness's profile mode: nothing to do without
 * a profiler attached (as with the real driver). */
CUresult CUDAAPI cuProfilerStart(void)
{
	return CUDA_SUCCESS;
}
CUresult CUDAAPI cuProfilerStop(void)
{
	return CUDA_SUCCESS;
}
