/* torchop_int: internals shared by torchop_gen.c (sources), torchop_build.c
 * (the build and its cache), torchop_verify.c (the verification job),
 * torchop_export.c (the kernel-builder project) and torchop_env.c (the
 * host's torch). Included by no one else. */
#ifndef KF_TORCHOP_INT_H
#define KF_TORCHOP_INT_H

#include <limits.h>
#include <stdarg.h>
#include <stddef.h>

#include "sandbox/jail/jail.h"
#include "sandbox/torchop/torchop.h"

/* A growing string capped at TORCHOP_GEN_MAX bytes; over is set (and
 * nothing more appended) past the cap or when memory runs out. */
struct torchop_sb {
	char *p;
	size_t len, cap;
	int over;
};

void torchop_sb_printf(struct torchop_sb *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Appends an expression of the spec (text, borrowed) as C++ (python 0) or
 * Python (python 1): size variables become v_<name>, ceil_div/min/max the
 * generated helpers, and for Python / becomes //, && and || and ! become
 * and, or, not. */
void torchop_sb_expr(struct torchop_sb *b, const struct spec *s, const char *text, int python);
/* Returns the string (new, free()) and resets b; NULL when over. */
char *torchop_sb_take(struct torchop_sb *b);

/* The host's torch, probed once by a trusted python3 -c. */
struct torchop_torch {
	char python[PATH_MAX];	   /* the interpreter's real path */
	char version[64];	   /* "2.11.0+cu130" */
	int cxx11_abi;		   /* torch._C._GLIBCXX_USE_CXX11_ABI */
	char include[2][PATH_MAX]; /* torch/include, torch/include/torch/csrc/api/include */
	char lib[PATH_MAX];	   /* torch/lib */
	char paths[12][PATH_MAX];  /* sys.path directories, bound into the jail */
	size_t paths_len;
	char pythonpath[8192]; /* the same, ':'-joined */
};

/* The probe's answer (borrowed, static): 0, or KF_ENOTFOUND "torch not
 * available: ..." with the reason. */
int torchop_torch_get(const struct torchop_torch **out, struct kf_err *err);

/* The read-only binds a jailed python with torch needs (the interpreter and
 * the sys.path directories): fills binds (cap entries), returns the count. */
size_t torchop_torch_binds(const struct torchop_torch *t, struct jail_bind *binds, size_t cap);

/* A built op: where the package lies and how long it took. */
struct torchop_built {
	char dir[PATH_MAX]; /* the cache entry: <pkg>/__init__.py, <pkg>/op.so */
	char pkg[80];	    /* the package folder's name */
	char key[65];	    /* hex sha256 of the sources, torch, arch, toolchain */
	int cache_hit;
	unsigned build_ms, nvcc_ms, cxx_ms, link_ms;
	json_t *diagnostics; /* KF_ECOMPILE: new array; else NULL */
};

/* Builds g (borrowed) for arch ("sm_90") into the cache under
 * <data_dir>/torchops. Returns 0 with *b filled (release b->diagnostics),
 * KF_ECOMPILE with b->diagnostics, or the jail's codes. */
int torchop_build(struct check_env *env, const struct torchop_gen *g, const char *arch,
		  const struct torchop_torch *t, const volatile int *cancel,
		  struct torchop_built *b, struct kf_err *err) __attribute__((warn_unused_result));

/* The verification script (sandbox/torchop/verify.py, embedded): bytes in
 * *len. Borrowed, static. */
const char *torchop_verify_py(size_t *len);

/* Runs the verification of built op b (generated as g from s; all
 * borrowed) on a GPU from env's runner: the script's checks plus
 * "reference", computed here. ref_cubin: the CUDA reference's module when
 * the spec has one, else NULL. Returns 0 and *report (new): {"checks",
 * "oom", "torch", "device"}; or the runner's and jail's codes. *gpu: the
 * device used or -1. */
int torchop_verify(struct check_env *env, const struct spec *s, const struct torchop_gen *g,
		   const struct torchop_built *b, const struct torchop_torch *t,
		   const char *ref_cubin, const struct torchop_opts *o, json_t **report, int *gpu,
		   struct kf_err *err) __attribute__((warn_unused_result));

/* Writes len bytes of data to dir/name. KF_EIO naming the file. */
int torchop_write_file(const char *dir, const char *name, const char *data, size_t len,
		       struct kf_err *err) __attribute__((warn_unused_result));

#endif
