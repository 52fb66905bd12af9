/* gpu: probes the host's GPUs through a dlopen'ed libcuda; see gpu.h.
 * The driver API is reached only through function pointers looked up here, so
 * the daemon has no link-time dependency on the driver. The attribute numbers
 * are the driver ABI's (stable since CUDA 2-9), written out so this file
 * builds without cuda.h. */
#include "sandbox/pool/gpu.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult_t;
typedef int CUdevice_t;

enum {
	ATTR_MAX_THREADS_PER_BLOCK = 1,
	ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8,
	ATTR_WARP_SIZE = 10,
	ATTR_MAX_REGISTERS_PER_BLOCK = 12,
	ATTR_CLOCK_RATE = 13,
	ATTR_MULTIPROCESSOR_COUNT = 16,
	ATTR_ECC_ENABLED = 32,
	ATTR_MEMORY_CLOCK_RATE = 36,
	ATTR_GLOBAL_MEMORY_BUS_WIDTH = 37,
	ATTR_L2_CACHE_SIZE = 38,
	ATTR_MAX_THREADS_PER_MULTIPROCESSOR = 39,
	ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
	ATTR_COMPUTE_CAPABILITY_MINOR = 76,
	ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
	ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
	ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
};

enum {
	CUDA_ERROR_STUB_LIBRARY = 34,
	CUDA_ERROR_INSUFFICIENT_DRIVER = 35,
	CUDA_ERROR_NO_DEVICE = 100
};

struct cu_api {
	CUresult_t (*init)(unsigned int);
	CUresult_t (*driver_get_version)(int *);
	CUresult_t (*device_get_count)(int *);
	CUresult_t (*device_get)(CUdevice_t *, int);
	CUresult_t (*device_get_name)(char *, int, CUdevice_t);
	CUresult_t (*device_total_mem)(size_t *, CUdevice_t);
	CUresult_t (*device_get_attribute)(int *, int, CUdevice_t);
	CUresult_t (*device_get_uuid)(unsigned char *, CUdevice_t);
	CUresult_t (*device_get_pci_bus_id)(char *, int, CUdevice_t);
	CUresult_t (*get_error_name)(CUresult_t, const char **);
	CUresult_t (*get_error_string)(CUresult_t, const char **);
};

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static struct gpu_host cached_host;
static struct kf_err cached_err;
static int cached_rc;

/* Names for the codes a probe meets, for libraries (the toolkit stub) whose
 * cuGetErrorName does not answer. */
static const char *known_error_name(CUresult_t rc)
{
	switch (rc) {
	case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
	case 3: return "CUDA_ERROR_NOT_INITIALIZED";
	case 34: return "CUDA_ERROR_STUB_LIBRARY";
	case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
	case 46: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
	case 100: return "CUDA_ERROR_NO_DEVICE";
	case 101: return "CUDA_ERROR_INVALID_DEVICE";
	case 803: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
	case 804: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
	default: return "CUDA_ERROR_UNKNOWN";
	}
}

static const char *cu_error_name(const struct cu_api *cu, CUresult_t rc)
{
	const char *s = NULL;

	if (cu->get_error_name && cu->get_error_name(rc, &s) == 0 && s)
		return s;
	return known_error_name(rc);
}

static const char *cu_error_string(const struct cu_api *cu, CUresult_t rc)
{
	const char *s = NULL;

	if (cu->get_error_string && cu->get_error_string(rc, &s) == 0 && s)
		return s;
	return NULL;
}

/* Why cuInit failed, in words a user can act on. */
static int init_failure(const struct cu_api *cu, CUresult_t rc, struct kf_err *err)
{
	const char *hint = "", *desc = cu_error_string(cu, rc);

	if (rc == CUDA_ERROR_NO_DEVICE)
		hint = access("/dev/nvidiactl", F_OK) != 0
			       ? ": the driver sees no GPU (/dev/nvidiactl missing: no device nodes in this container?)"
			       : ": the driver sees no GPU (CUDA_VISIBLE_DEVICES empty?)";
	else if (rc == CUDA_ERROR_STUB_LIBRARY)
		hint = ": this is the CUDA toolkit's stub libcuda, not a driver";
	else if (rc == CUDA_ERROR_INSUFFICIENT_DRIVER)
		hint = ": the installed driver is older than this libcuda";

	return kf_err_set(err, KF_ENOGPU, "no GPU: cuInit failed: %s (%d)%s%s%s",
			  cu_error_name(cu, rc), rc, desc ? ": " : "", desc ? desc : "", hint);
}

static void *need_sym(void *lib, const char *name, const char *alt)
{
	void *p = dlsym(lib, name);

	if (!p && alt)
		p = dlsym(lib, alt);
	return p;
}

static int load_api(void *lib, const char *libname, struct cu_api *cu, struct kf_err *err)
{
	memset(cu, 0, sizeof(*cu));
	*(void **)&cu->init = need_sym(lib, "cuInit", NULL);
	*(void **)&cu->driver_get_version = need_sym(lib, "cuDriverGetVersion", NULL);
	*(void **)&cu->device_get_count = need_sym(lib, "cuDeviceGetCount", NULL);
	*(void **)&cu->device_get = need_sym(lib, "cuDeviceGet", NULL);
	*(void **)&cu->device_get_name = need_sym(lib, "cuDeviceGetName", NULL);
	*(void **)&cu->device_total_mem = need_sym(lib, "cuDeviceTotalMem_v2", "cuDeviceTotalMem");
	*(void **)&cu->device_get_attribute = need_sym(lib, "cuDeviceGetAttribute", NULL);
	*(void **)&cu->device_get_uuid = need_sym(lib, "cuDeviceGetUuid_v2", "cuDeviceGetUuid");
	*(void **)&cu->device_get_pci_bus_id = need_sym(lib, "cuDeviceGetPCIBusId", NULL);
	*(void **)&cu->get_error_name = need_sym(lib, "cuGetErrorName", NULL);
	*(void **)&cu->get_error_string = need_sym(lib, "cuGetErrorString", NULL);
	if (!cu->init || !cu->driver_get_version || !cu->device_get_count || !cu->device_get ||
	    !cu->device_get_name || !cu->device_total_mem || !cu->device_get_attribute)
		return kf_err_set(
			err, KF_ENOGPU,
			"no GPU: %s lacks the CUDA driver API entry points (cuInit, cuDeviceGetAttribute): not a usable NVIDIA driver library",
			libname);
	return 0;
}

static int attr(const struct cu_api *cu, CUdevice_t dev, int which)
{
	int v = 0;

	/* An attribute a driver no longer reports reads as 0 ("unknown"),
	 * never as a guess. */
	if (cu->device_get_attribute(&v, which, dev) != 0)
		return 0;
	return v;
}

static void format_uuid(const unsigned char u[16], char *out, size_t cap)
{
	snprintf(out, cap,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
		 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		 u[14], u[15]);
}

static int read_device(const struct cu_api *cu, int ordinal, struct gpu_info *g, struct kf_err *err)
{
	CUdevice_t dev = 0;
	CUresult_t rc;
	size_t mem = 0;
	unsigned char uuid[16];

	memset(g, 0, sizeof(*g));
	g->index = ordinal;
	rc = cu->device_get(&dev, ordinal);
	if (rc != 0)
		return kf_err_set(err, KF_ENOGPU, "no GPU: cuDeviceGet(%d) failed: %s (%d)",
				  ordinal, cu_error_name(cu, rc), rc);
	if (cu->device_get_name(g->name, (int)sizeof(g->name), dev) != 0)
		snprintf(g->name, sizeof(g->name), "unknown NVIDIA GPU");
	g->name[sizeof(g->name) - 1] = '\0';
	if (cu->device_total_mem(&mem, dev) == 0)
		g->total_mem_bytes = mem;
	if (cu->device_get_uuid && cu->device_get_uuid(uuid, dev) == 0)
		format_uuid(uuid, g->uuid, sizeof(g->uuid));
	if (cu->device_get_pci_bus_id &&
	    cu->device_get_pci_bus_id(g->pci_bus_id, (int)sizeof(g->pci_bus_id), dev) == 0)
		g->pci_bus_id[sizeof(g->pci_bus_id) - 1] = '\0';
	else
		g->pci_bus_id[0] = '\0';
	g->cc_major = attr(cu, dev, ATTR_COMPUTE_CAPABILITY_MAJOR);
	g->cc_minor = attr(cu, dev, ATTR_COMPUTE_CAPABILITY_MINOR);
	snprintf(g->arch, sizeof(g->arch), "sm_%d%d", g->cc_major, g->cc_minor);
	g->sm_count = attr(cu, dev, ATTR_MULTIPROCESSOR_COUNT);
	g->clock_khz = attr(cu, dev, ATTR_CLOCK_RATE);
	g->mem_clock_khz = attr(cu, dev, ATTR_MEMORY_CLOCK_RATE);
	g->mem_bus_width_bits = attr(cu, dev, ATTR_GLOBAL_MEMORY_BUS_WIDTH);
	g->l2_bytes = attr(cu, dev, ATTR_L2_CACHE_SIZE);
	g->max_threads_per_block = attr(cu, dev, ATTR_MAX_THREADS_PER_BLOCK);
	g->max_threads_per_sm = attr(cu, dev, ATTR_MAX_THREADS_PER_MULTIPROCESSOR);
	g->regs_per_sm = attr(cu, dev, ATTR_MAX_REGISTERS_PER_MULTIPROCESSOR);
	g->regs_per_block = attr(cu, dev, ATTR_MAX_REGISTERS_PER_BLOCK);
	g->smem_per_sm_bytes = attr(cu, dev, ATTR_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
	g->smem_per_block_bytes = attr(cu, dev, ATTR_MAX_SHARED_MEMORY_PER_BLOCK);
	g->smem_per_block_optin_bytes = attr(cu, dev, ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
	g->warp_size = attr(cu, dev, ATTR_WARP_SIZE);
	g->ecc_enabled = attr(cu, dev, ATTR_ECC_ENABLED);
	return 0;
}

static int forced_off(void)
{
	const char *v = getenv("KFORGE_NO_GPU");

	return v && *v && strcmp(v, "0") != 0;
}

int gpu_probe_uncached(const char *libname, struct gpu_host *out, struct kf_err *err)
{
	struct cu_api cu;
	void *lib = NULL;
	CUresult_t rc;
	int n = 0, ret = 0, initialised = 0;

	memset(out, 0, sizeof(*out));
	if (!libname)
		libname = "libcuda.so.1";
	if (forced_off())
		return kf_err_set(err, KF_ENOGPU,
				  "no GPU: disabled by KFORGE_NO_GPU in the environment");
	/* RTLD_LOCAL: the driver's symbols stay out of the global namespace.
	 * The library stays loaded for the process: unloading a driver that
	 * has been initialised is unsafe. */
	lib = dlopen(libname, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return kf_err_set(err, KF_ENOGPU, "%s not found: no NVIDIA driver on this host",
				  libname);
	ret = load_api(lib, libname, &cu, err);
	if (ret)
		goto out;
	rc = cu.init(0);
	initialised = 1;
	if (rc != 0) {
		ret = init_failure(&cu, rc, err);
		goto out;
	}
	if (cu.driver_get_version(&out->driver_version) == 0)
		snprintf(out->driver_version_str, sizeof(out->driver_version_str), "%d.%d",
			 out->driver_version / 1000, (out->driver_version % 1000) / 10);
	rc = cu.device_get_count(&n);
	if (rc != 0) {
		ret = kf_err_set(err, KF_ENOGPU, "no GPU: cuDeviceGetCount failed: %s (%d)",
				 cu_error_name(&cu, rc), rc);
		goto out;
	}
	if (n <= 0) {
		ret = kf_err_set(err, KF_ENOGPU, "no GPU: the NVIDIA driver (%s) reports 0 devices",
				 out->driver_version_str);
		goto out;
	}
	if (n > GPU_MAX)
		n = GPU_MAX;
	for (int i = 0; i < n; i++) {
		ret = read_device(&cu, i, &out->gpus[i], err);
		if (ret)
			goto out;
	}
	out->count = n;
out:
	if (ret) {
		out->count = 0;
		/* A library that never initialised can be unloaded. */
		if (lib && !initialised)
			dlclose(lib);
	}
	return ret;
}

static void probe_cached(void)
{
	cached_rc = gpu_probe_uncached(NULL, &cached_host, &cached_err);
}

int gpu_probe(const struct gpu_host **out, struct kf_err *err)
{
	pthread_once(&probe_once, probe_cached);
	if (cached_rc) {
		if (out)
			*out = NULL;
		return kf_err_set(err, cached_rc, "%s", cached_err.msg);
	}
	if (out)
		*out = &cached_host;
	return 0;
}

int gpu_count(void)
{
	const struct gpu_host *h = NULL;

	if (gpu_probe(&h, NULL))
		return 0;
	return h->count;
}

const char *gpu_no_gpu_reason(void)
{
	pthread_once(&probe_once, probe_cached);
	return cached_rc ? cached_err.msg : "";
}

const struct gpu_info *gpu_get(int index)
{
	const struct gpu_host *h = NULL;

	if (gpu_probe(&h, NULL) || index < 0 || index >= h->count)
		return NULL;
	return &h->gpus[index];
}
