/* sass: a summary of the SASS (machine code) of a cubin, from the text that
 * `cuobjdump -sass` prints: per kernel, the instructions that tell an agent
 * how its kernel really runs (global loads/stores by width, shared memory,
 * tensor-core MMA, FFMA, local memory, barriers) and hints derived from
 * them. The parser is pure (tests feed captured listings from tests/data/);
 * running cuobjdump is the compile module's job. Thread-safe. */
#ifndef KF_SASS_H
#define KF_SASS_H

#include <jansson.h>
#include <stddef.h>

#include "base/kf_err.h"

#define SASS_MAX_KERNELS    64		/* kernels summarised; more are counted only */
#define SASS_TEXT_MAX_BYTES (32u << 20) /* listing size accepted */

/* Instruction counts of one kernel (static counts in the listing). */
struct sass_kernel {
	char name[256];	  /* as cuobjdump prints it (mangled) */
	int instructions; /* every instruction line */
	int ldg[5];	  /* global loads by width: 8/16, 32, 64, 128 bits, other */
	int stg[5];	  /* global stores, same buckets */
	int lds, sts;	  /* shared loads / stores (LDS, STS) */
	int ldsm;	  /* LDSM (shared -> tensor-core fragments) */
	int ldgsts;	  /* LDGSTS (cp.async) */
	int tma;	  /* UTMALDG / UTMASTG / UBLKCP (TMA bulk copies) */
	int hmma, hgmma, qgmma, imma, dmma; /* tensor-core MMA families */
	int utcmma;			    /* Blackwell tcgen05 MMA (UTCHMMA, UTCQMMA, ...) */
	int ffma, fmul, fadd;		    /* fp32 arithmetic */
	int ldl, stl;			    /* local memory (spills, stack arrays) */
	int bar;			    /* BAR.* barriers */
	int atom;			    /* ATOM/ATOMG/RED global atomics */
};

struct sass_summary {
	struct sass_kernel kernels[SASS_MAX_KERNELS];
	int kernels_len;   /* summarised */
	int kernels_total; /* seen in the listing */
};

/* Parses a `cuobjdump -sass` listing (len bytes, borrowed) into out.
 * Returns 0, KF_ETOOBIG past SASS_TEXT_MAX_BYTES, or KF_EINVAL when the text
 * holds no "Function :" section (err says so). */
int sass_parse(const char *text, size_t len, struct sass_summary *out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* The hints for one kernel ("no 128-bit global loads: ...") appended to arr
 * (borrowed) as strings. Returns how many were added. */
int sass_hints(const struct sass_kernel *k, json_t *arr);

/* Returns a new JSON object for one kernel: the counts in groups and its
 * hints; NULL on allocation failure. */
json_t *sass_kernel_json(const struct sass_kernel *k);

#endif
