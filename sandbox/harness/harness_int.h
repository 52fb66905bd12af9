/* harness_int: internals shared by the files of kforge-harness (main.c: job
 * loading, buffers, launches, the check mode; timing.c: the benchmark mode;
 * calib.c: the calibrate mode). Included by no one else.
 * The harness runs only untrusted device code (the candidate, or in a
 * separate process the CUDA reference, or kforge's baseline); it never
 * computes or sees expected outputs. */
#ifndef KF_HARNESS_INT_H
#define KF_HARNESS_INT_H

#include <cuda.h>
#include <jansson.h>
#include <stdint.h>

#include "sandbox/spec/spec.h"

/* One device buffer with guard bands: [guard | data (bytes) | canary tail
 * up to the 256-byte rounding | guard]. */
struct harness_buf {
	CUdeviceptr base; /* the allocation */
	CUdeviceptr data; /* base + SPEC_GUARD_BYTES */
	uint64_t bytes;	  /* data bytes */
	uint64_t tail;	  /* canary bytes after the data (padding + guard) */
	void *host;	  /* inputs: the bytes uploaded (to verify unchanged) */
};

/* A program: a loaded module and the launch list that runs it. */
struct harness_prog {
	CUmodule mod;
	const struct spec_launch *launch;
	size_t launch_len;
	CUfunction fn[SPEC_MAX_LAUNCHES];
	const char *path; /* cubin or fatbin in the job dir */
};

struct harness {
	struct spec *s;
	json_t *job; /* job.json */
	int64_t vals[SPEC_MAX_VARS];
	struct spec_bound b;
	CUdevice dev;
	CUcontext ctx;
	CUstream stream;
	int l2_bytes;
	char dev_name[128];
	json_t *report; /* what goes to the daemon */
	int report_fd;
	void *scratch; /* harness_scratch's buffer */
	uint64_t scratch_cap;
};

/* Records a CUDA failure into the report ("fault" with the error name and
 * what was running) and returns KF_EFAULT. */
int harness_cuda_fail(struct harness *h, CUresult r, const char *what);

/* Records a failed host allocation of bytes for what into the report
 * ("error": "host memory limit N MiB exceeded: ..." when the process has a
 * data limit, which the daemon sets from KFORGE_HARNESS_MEM_MB) and returns
 * KF_ENOMEM. The first error recorded stays. */
int harness_host_oom(struct harness *h, const char *what, uint64_t bytes);

/* The name of a CUDA error ("CUDA_ERROR_ILLEGAL_ADDRESS"). Static. */
const char *harness_cu_name(CUresult r);

/* Loads the module at path and resolves the launch list's kernels. */
int harness_prog_load(struct harness *h, struct harness_prog *p, const char *path,
		      const struct spec_launch *launch, size_t launch_len);
void harness_prog_unload(struct harness_prog *p);

/* Allocates every tensor with guards; fills inputs from seed (host copies
 * kept in bufs[i].host), writes canaries, poisons outputs with pattern
 * (0 = A, 1 = B). */
int harness_bufs_alloc(struct harness *h, struct harness_buf *bufs);
void harness_bufs_free(struct harness *h, struct harness_buf *bufs);
int harness_bufs_fill_inputs(struct harness *h, struct harness_buf *bufs, uint64_t seed);
int harness_bufs_restore_inout(struct harness *h, struct harness_buf *bufs);
int harness_bufs_poison(struct harness *h, struct harness_buf *bufs, int pattern);
int harness_bufs_canary(struct harness *h, struct harness_buf *bufs);

/* Enqueues the program's launch list on h->stream with bufs' pointers. */
int harness_prog_launch(struct harness *h, struct harness_prog *p, struct harness_buf *bufs);

/* Waits for the stream; a kernel fault is recorded with what. */
int harness_sync(struct harness *h, const char *what);

/* Downloads tensor t into a new host buffer (free()), or into dst (its
 * bytes long). */
int harness_download(struct harness *h, struct harness_buf *bufs, size_t t, void **out);
int harness_download_into(struct harness *h, struct harness_buf *bufs, size_t t, void *dst);

/* The harness's scratch buffer of at least bytes, kept (and grown) from
 * one call to the next so repeated checks reuse its pages; NULL when it
 * cannot be allocated. Owned by h; valid until the next call. */
void *harness_scratch(struct harness *h, uint64_t bytes);

/* Checks the guard canaries and the inputs; appends findings to arr
 * ("guard_violations", "inputs_modified" entries). Returns the number of
 * violations, or a negative code. */
int harness_check_guards(struct harness *h, struct harness_buf *bufs, json_t *viol);
int harness_check_inputs(struct harness *h, struct harness_buf *bufs, json_t *viol);

/* The poison pattern of dt as its element's bytes read into a uint64_t
 * (little endian, the high bytes 0 below 8-byte dtypes): bulk scans test
 * elements as integers of dtype_bytes(dt) bytes against it. */
uint64_t harness_poison_bits(enum kf_dtype dt, int pattern);

#define HARNESS_FIRST_MAX 8 /* first indices reported per finding */

/* What a scan of an output's two runs found: elements never written (in
 * both runs, or the only run), left unwritten by the second run only or
 * the first run only, and changed between the runs, each with its first
 * HARNESS_FIRST_MAX indices (the arrays: the caller's references). */
struct harness_scan {
	uint64_t unw, unw2, changed, late;
	json_t *fu, *fu2, *fc, *fl;
};

/* Scans n elements of tensor T: first (the first run) and second (the
 * second run, NULL with one run); poison counts only for outputs, an inout
 * tensor is only compared. Fills *sc with new arrays. first, second:
 * borrowed. */
void harness_scan_runs(const struct spec_tensor *T, uint64_t n, const void *first,
		       const void *second, struct harness_scan *sc);

/* Sends one compact JSON line (obj borrowed) to the daemon's report pipe. */
void harness_send_line(struct harness *h, const json_t *obj);

/* Arms the check-mode watchdog for a trial of row (job's row_timeout_ms),
 * and disarms it. */
void harness_watchdog_arm(long row);
void harness_watchdog_disarm(void);

/* Reads a hex seed string. */
int harness_parse_seed(const json_t *v, uint64_t *out);

/* Modes. */
int harness_mode_check(struct harness *h);
int harness_mode_bench(struct harness *h);
int harness_mode_calibrate(struct harness *h);
int harness_mode_profile(struct harness *h);

double harness_now_ms(void);

/* The phase clock: where the harness's time goes, reported to the daemon
 * as "phases" ({"module_load_ms", "upload_ms", "kernel_runs_ms",
 * "download_ms"}, totals since the process started) in every check-mode
 * row line, the watchdog's timeout line and the final report. Time outside
 * these phases (CUDA initialisation, freeing, exit) is not counted here:
 * the daemon reports it as the harness's start. */
enum harness_phase {
	HARNESS_PH_NONE = -1,
	HARNESS_PH_MODULE_LOAD, /* cuModuleLoad, resolving the kernels */
	HARNESS_PH_UPLOAD,	/* allocating, inputs from the seed, poison, canaries */
	HARNESS_PH_KERNEL_RUNS, /* launches until the stream is idle */
	HARNESS_PH_DOWNLOAD,	/* outputs back, guard and input checks, output files */
	HARNESS_PH_N
};

/* Ends the running phase (its time is added to its total) and starts p
 * (HARNESS_PH_NONE: none). Thread-safe against the watchdog's reading. */
void harness_phase(enum harness_phase p);

/* The totals so far, the running phase included, as a new JSON object. */
json_t *harness_phases_json(void);

#endif
