/* compile_int: internals shared by compile.c (driver, cache use),
 * compile_flags.c (the flag allowlist), compile_parse.c (compiler output ->
 * diagnostics, kernels, warnings), compile_answer.c (the verdict, PTX, SASS) and
 * compile_sass.c (cuobjdump in the jail). Included by no one else. */
#ifndef KF_COMPILE_INT_H
#define KF_COMPILE_INT_H

#include <jansson.h>
#include <stddef.h>

#include "sandbox/compile/compile.h"

struct cache;
struct jail;

/* Slots in each of nvcc, nvrtc and store: the most backend arguments the
 * flags may expand to (-Xptxas=a,b,c adds two nvcc arguments per option). */
#define COMPILE_ARGS_MAX (COMPILE_FLAGS_MAX * 2)

/* A request's flags, checked and rebuilt for both backends. */
struct compile_flagset {
	/* Backend arguments; strings point into the request or into store. */
	const char *nvcc[COMPILE_ARGS_MAX];
	int nvcc_len;
	const char *nvrtc[COMPILE_ARGS_MAX];
	int nvrtc_len;
	/* a flag or value (COMPILE_FLAG_MAX_CHARS) behind a prefix of at most
	 * 16 ("--ptxas-options="): it always fits whole */
	char store[COMPILE_ARGS_MAX][COMPILE_FLAG_MAX_CHARS + 17];
	int store_len;
	int debug;    /* -G */
	int overflow; /* 1 once an append found nvcc, nvrtc or store full */
};

/* Validates flags (len of them, borrowed) and translates them for both
 * backends into *fs (caller's storage; strings point into flags or into
 * fs->store). Returns 0, KF_EPERM for a refused flag (with the reason),
 * KF_EINVAL for a malformed one, or KF_ETOOBIG past COMPILE_FLAGS_MAX flags
 * or when they expand to more than COMPILE_ARGS_MAX backend arguments. */
int compile_parse_flags(const char *const *flags, size_t len, struct compile_flagset *fs,
			struct kf_err *err);

/* What the parser reads. Strings borrowed. */
struct compile_parse_in {
	const char *log;    /* stdout + stderr of the backend, NUL-terminated */
	int log_truncated;  /* 1 when the output hit its cap */
	const char *source; /* the submitted source */
	size_t source_len;
	const char *ptx;	    /* PTX text or NULL (launch bounds, .const) */
	const unsigned char *cubin; /* the cubin (ELF) or NULL: constant banks */
	size_t cubin_len;
	const char *job_dir;   /* host path of the job dir, rewritten away */
	const char *cuda_home; /* resolved toolkit path, rewritten to "cuda" */
	int ok;		       /* 1 when the backend produced a cubin */
	const char *arch, *backend, *version;
	int debug;     /* -G given */
	struct kb *kb; /* occupancy; may be NULL */
};

/* Returns new JSON (no summary yet): ok, arch, backend, compiler_version,
 * kernels, warnings, diagnostics, log_truncated, ...; NULL on ENOMEM. */
json_t *compile_build_result(const struct compile_parse_in *in);

/* Marks res as killed at the time limit, with the tail of what the
 * compiler said (in->log, path-cleaned, at most 2000 bytes). */
void compile_answer_timeout(const struct compile_parse_in *in, unsigned timeout_ms,
			    struct compile_result *res);

/* Marks res as a compile whose compiler ran out of its memory limit
 * (mem_bytes per process), with the tail of what it said. */
void compile_answer_mem_limit(const struct compile_parse_in *in, unsigned long long mem_bytes,
			      struct compile_result *res);

/* A new JSON string of s; text that is not valid UTF-8 has its bytes
 * >= 0x80 and control characters replaced by '?'. NULL on ENOMEM. */
json_t *compile_json_text(const char *s);

/* Returns the log with host paths rewritten (new, free()), or NULL. */
char *compile_clean_log(const struct compile_parse_in *in);

/* Rewrites host paths in text (new string, free()); NULL on ENOMEM. */
char *compile_rewrite_paths(const char *text, const char *job_dir, const char *cuda_home);

/* The kept PTX's size (when want_ptx) and the SASS summary (when
 * want_sass) of a compile that produced res->artifact_id. */
void compile_answer_fill(struct compiler *cc, struct compile_result *res, int want_ptx,
			 int want_sass);

/* Returns a new JSON "sass" member for artifact id (runs cuobjdump in the
 * jail the first time, then reads the stored summary). */
json_t *compile_sass_json(struct compiler *cc, const char *id);

/* The artifact file name for a kind ("ptx" -> "kernel.ptx"), or NULL. */
const char *compile_artifact_file(const char *kind);

struct cache *compile_cache(struct compiler *cc);
const char *compile_cuobjdump(const struct compiler *cc);

#endif
