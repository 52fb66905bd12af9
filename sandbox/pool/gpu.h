/* gpu: what GPUs this host has, read from the CUDA driver. libcuda is
 * dlopen'ed ("libcuda.so.1"), never linked, so kforge builds and runs on
 * machines without a driver; there every probe answers KF_ENOGPU with the
 * reason. The first successful or failed probe is cached for the process;
 * every function here is thread-safe. Nothing here can invent a GPU: the only
 * override (KFORGE_NO_GPU=1 in the environment) forces "no GPU". */
#ifndef KF_GPU_H
#define KF_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "base/kf_err.h"

#define GPU_MAX 16 /* devices reported; more are ignored (and logged) */

/* One device, as the driver reports it. Index is the CUDA device ordinal
 * (the runner's GPU index and what the harness is told to use). */
struct gpu_info {
	int index;			/* CUDA device ordinal, 0-based */
	char name[128];			/* "NVIDIA H200" */
	char uuid[48];			/* "GPU-1a2b3c4d-...", 36-hex form */
	char pci_bus_id[32];		/* "0000:19:00.0" */
	int cc_major;			/* compute capability, e.g. 9 */
	int cc_minor;			/* e.g. 0 */
	char arch[16];			/* "sm_90" (from cc; "sm_90a" never) */
	int sm_count;			/* multiprocessors */
	uint64_t total_mem_bytes;	/* device memory */
	int clock_khz;			/* max SM clock, kHz */
	int mem_clock_khz;		/* max memory clock, kHz */
	int mem_bus_width_bits;		/* global memory bus width, bits */
	int l2_bytes;			/* L2 cache size, bytes */
	int max_threads_per_block;	/* threads */
	int max_threads_per_sm;		/* threads */
	int regs_per_sm;		/* 32-bit registers */
	int regs_per_block;		/* 32-bit registers */
	int smem_per_sm_bytes;		/* shared memory per multiprocessor */
	int smem_per_block_bytes;	/* default per-block shared memory limit */
	int smem_per_block_optin_bytes; /* opt-in per-block maximum */
	int warp_size;			/* threads */
	int ecc_enabled;		/* 1 when ECC is on */
};

/* The host as a whole. */
struct gpu_host {
	int driver_version;	     /* cuDriverGetVersion, e.g. 13000 */
	char driver_version_str[16]; /* "13.0" */
	int count;		     /* devices in gpus[] (>= 1 on success) */
	struct gpu_info gpus[GPU_MAX];
};

/* Probes the GPUs once (first call; later calls return the cached answer,
 * success or failure). On success returns 0 and sets *out to a borrowed,
 * immutable struct valid for the life of the process. Without a usable GPU
 * returns KF_ENOGPU with err naming the reason, e.g.
 * "libcuda.so.1 not found: no NVIDIA driver on this host",
 * "cuInit failed: CUDA_ERROR_NO_DEVICE (100): the driver sees no GPU
 * (/dev/nvidia0 missing?)", "no GPU: disabled by KFORGE_NO_GPU=1".
 * Thread-safe. */
int gpu_probe(const struct gpu_host **out, struct kf_err *err) __attribute__((warn_unused_result));

/* Number of usable GPUs (0 when the probe fails). Probes if needed. */
int gpu_count(void);

/* The cached reason there is no GPU ("" when there is one). Returns
 * borrowed, static, valid for the life of the process. Probes if needed. */
const char *gpu_no_gpu_reason(void);

/* Returns borrowed info for device index or NULL (no GPU / out of range). */
const struct gpu_info *gpu_get(int index);

/* Uncached probe into caller storage, loading the driver library from
 * libname (NULL = "libcuda.so.1"). For tests (a missing library must give
 * KF_ENOGPU with its name in the reason) and for diagnostics. Ignores the
 * cache but honours KFORGE_NO_GPU. Thread-safe. */
int gpu_probe_uncached(const char *libname, struct gpu_host *out, struct kf_err *err)
	__attribute__((warn_unused_result));

#endif
