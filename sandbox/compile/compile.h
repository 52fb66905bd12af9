/* compile: the nvcc driver. Compiles untrusted CUDA device code to a cubin in
 * the jail (never a host pass), parses nvcc/cicc/ptxas output into
 * diagnostics and per-kernel resources, adds occupancy and warnings, and
 * stores everything in a content-addressed artifact cache (sandbox/compile/cache.h)
 * keyed by source, flags, arch and compiler version. Flags pass an
 * allowlist; anything else is refused with a reason. Thread-safe: one
 * struct compiler serves every worker thread. */
#ifndef KF_COMPILE_H
#define KF_COMPILE_H

#include <jansson.h>
#include <stddef.h>

#include "base/kf_err.h"

struct jail;
struct kb;
struct compiler;

#define COMPILE_SOURCE_MAX_BYTES (1u << 20) /* source cap: 1 MiB */
#define COMPILE_FLAGS_MAX	 64	    /* flags per request */
#define COMPILE_FLAG_MAX_CHARS	 150	    /* characters per flag */
#define COMPILE_ID_LEN		 64	    /* artifact id: hex sha256 */

struct compile_config {
	const char *data_dir;	  /* artifacts in data_dir/artifacts; required */
	struct jail *jail;	  /* borrowed, outlives the compiler; NULL = the
				   * compiler opens (and closes) its own */
	int sandbox_none;	  /* with jail NULL: 1 = --sandbox=none */
	struct kb *kb;		  /* occupancy calculator; borrowed; may be NULL */
	const char *default_arch; /* NULL = the local GPU's (sandbox/pool/gpu.h), else sm_90 */
	unsigned timeout_ms;	  /* per compile wall clock, ms [$KFORGE_COMPILE_TIMEOUT_MS,
				   * else 60000] */
	unsigned long long cache_cap_bytes; /* LRU cap of the artifact cache [1 GiB] */
	const char *nvrtc_helper;	    /* build/kforge-nvrtc; NULL = next to the running
				   * binary; when missing, nvcc is used */
	int force_nvcc;			    /* 1: never NVRTC (benchmarks, comparisons) */
	unsigned long long mem_bytes;	    /* address space of each compiler process
				   * [$KFORGE_COMPILE_MEM_MB MiB, else
				   * COMPILE_MEM_DEFAULT_BYTES] */
	int slots;			    /* compiler processes at once [$KFORGE_COMPILE_SLOTS,
				   * else the online CPUs, >= 2] */
	int client_slots;		    /* at once per client [$KFORGE_COMPILE_CLIENT_SLOTS,
				   * else half the slots, >= 1] */
	int client_waiting;		    /* waiting per client before "busy"
				   * [COMPILE_CLIENT_WAITING_DEFAULT] */
};

#define COMPILE_MEM_DEFAULT_BYTES      (4ull << 30) /* 4 GiB per compiler process */
#define COMPILE_CLIENT_WAITING_DEFAULT 16

/* One compile. */
struct compile_req {
	const char *source;	  /* CUDA C++, device code; borrowed */
	size_t source_len;	  /* bytes, <= COMPILE_SOURCE_MAX_BYTES */
	const char *arch;	  /* "sm_90", "sm_90a", ...; NULL = default */
	const char *const *flags; /* nvcc flags, one per element (see
				   * compile_split_flags); borrowed; may be NULL */
	size_t flags_len;
	int want_ptx;		    /* 1: keep the PTX as an artifact */
	int want_sass;		    /* 1: SASS summary where cuobjdump exists */
	const volatile int *cancel; /* polled; nonzero kills the compile */
	const char *client;	    /* who asked (an MCP session...): compiles queue
				     * per client, round robin between clients
				     * (compile_queue.h); NULL = the shared
				     * anonymous client; borrowed */
};

/* What one compile produced. Owned: release with compile_result_fini.
 * The tool layer (server/tools/) writes the compile_kernel answer from it. */
struct compile_result {
	int ok;				      /* 1 when a cubin was produced */
	int cache_hit;			      /* 1 when answered from the cache */
	char artifact_id[COMPILE_ID_LEN + 1]; /* hex; "" when nothing was stored */
	char arch[16];			      /* the arch compiled for, e.g. "sm_90" */
	unsigned compile_ms;		      /* wall time of this call, ms */
	const char *sandbox;		      /* "bwrap" or "none"; static */
	json_t *report;			      /* the compiler's report as the artifact's
				   * result.json stores it (new reference): ok,
				   * arch, backend, compiler_version, errors,
				   * kernels, warnings, diagnostics,
				   * module_const_bytes, log_truncated,
				   * artifact_id; NULL when timed out or memory limited */
	int timed_out;			      /* 1: killed at timeout_ms */
	unsigned timeout_ms;
	int memory_limited;		       /* 1: the compiler ran out of its memory limit */
	unsigned long long memory_limit_bytes; /* that limit, bytes */
	char *log_tail;	     /* timed out or memory limited: what the compiler said,
			 * path-cleaned (new), or NULL */
	int want_ptx;	     /* 1: the PTX link was asked for */
	long long ptx_bytes; /* size of the kept PTX; -1 when there is none */
	json_t *sass;	     /* the SASS summary when asked for (new reference), or NULL */
};

/* The one-line verdict of res: kernels and their resources, the first
 * error with its place, or the timeout. It is also the error message of a
 * failed compile. Writes at most cap bytes (599 are enough). */
void compile_summary(const struct compile_result *res, char *buf, size_t cap);

/* Opens the compiler with cfg (copied; strings borrowed for its life):
 * finds nvcc in the jail's toolkit, reads its version (part of the cache
 * key), opens the cache. Returns 0 and sets *out (free with compile_close),
 * or KF_EINVAL (no nvcc), KF_EIO (data dir), KF_ENOMEM with err set. */
int compile_open(const struct compile_config *cfg, struct compiler **out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Frees cc. NULL is a no-op. No compile may be running. */
void compile_close(struct compiler *cc);

/* The jail compiles run in (borrowed, valid until compile_close), and 0
 * when it can run jobs or KF_ESANDBOX with the reason (compiles are then
 * refused; --sandbox=none overrides). */
struct jail *compile_jail(struct compiler *cc);
int compile_sandbox_usable(const struct compiler *cc, struct kf_err *err)
	__attribute__((warn_unused_result));

/* The arch used when a request names none ("sm_90"). Borrowed, static for
 * the compiler's life. */
const char *compile_default_arch(const struct compiler *cc);

/* "nvrtc" when NVRTC is used first (nvcc as the fallback), else "nvcc";
 * and nvcc's version ("13.0.88"). Borrowed, valid for the compiler's life. */
const char *compile_backend_name(const struct compiler *cc);
const char *compile_compiler_version(const struct compiler *cc);

/* Compiles req. res (caller storage) is always initialised; release it with
 * compile_result_fini whatever the return. Returns
 *   0            ok: res->ok = 1, res->report has kernels and resources;
 *   KF_ECOMPILE  the compiler rejected the source: res->report has ok false
 *                and the diagnostics (err is compile_summary's sentence);
 *   KF_ETIMEOUT  the compile ran past the limit: res->timed_out is set;
 *   KF_ECOMPILE  also when the compiler ran out of its memory limit
 *                (mem_bytes): res->memory_limited is set, err names the
 *                limit; such a result is not cached;
 *   KF_EBUSY     the client already has client_waiting compiles waiting;
 *   KF_EPERM     a refused flag (err names it and why);
 *   KF_EINVAL    bad arch or flag syntax; KF_ETOOBIG source over the cap;
 *   KF_ECANCELED, KF_ESANDBOX, KF_EIO, KF_ENOMEM.
 * No host path and no byte of a file outside the job appears in res. */
int compile_kernel(struct compiler *cc, const struct compile_req *req, struct compile_result *res,
		   struct kf_err *err) __attribute__((warn_unused_result));

/* Releases what res owns and zeroes it. NULL is a no-op. */
void compile_result_fini(struct compile_result *res);

/* Checks flags against the allowlist without compiling. Returns 0, or
 * KF_EPERM / KF_EINVAL with err naming the flag and the reason. */
int compile_check_flags(const char *const *flags, size_t flags_len, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Checks an arch string ("sm_XX" or "sm_XXa", XX in 50..129). Returns 0 or
 * KF_EINVAL with err saying what would be right. */
int compile_check_arch(const char *arch, struct kf_err *err) __attribute__((warn_unused_result));

/* Splits a flag string on blanks ("-O3 -D N=4" -> "-O3", "-D", "N=4"); no
 * quoting. Returns 0 and sets *argv to a new NULL-terminated array (free with
 * compile_flags_free) and *len; KF_ETOOBIG past COMPILE_FLAGS_MAX flags or
 * for a flag longer than COMPILE_FLAG_MAX_CHARS (err names it). */
int compile_split_flags(const char *s, char ***argv, size_t *len, struct kf_err *err)
	__attribute__((warn_unused_result));
void compile_flags_free(char **argv);

/* Artifact files by id: kind is "cubin", "ptx", "log", "sass" (the SASS
 * listing, kept when want_sass found cuobjdump), "source" or "result.json". compile_artifact_path writes the host path into buf (cap
 * bytes) and returns 0, or KF_ENOTFOUND (unknown id or kind not kept),
 * KF_EINVAL (malformed id). compile_artifact_read returns the bytes in *data
 * (new, free()) and *len, capped at max_bytes (KF_ETOOBIG past it). Both
 * mark the artifact as recently used. */
int compile_artifact_path(struct compiler *cc, const char *id, const char *kind, char *buf,
			  size_t cap, struct kf_err *err) __attribute__((warn_unused_result));
int compile_artifact_read(struct compiler *cc, const char *id, const char *kind, size_t max_bytes,
			  char **data, size_t *len, struct kf_err *err)
	__attribute__((warn_unused_result));

#endif
