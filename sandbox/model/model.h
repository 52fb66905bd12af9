/* model: benchmark_model's domain: a model with kforge's ops swapped in,
 * timed against the same model unpatched, eager and under torch.compile.
 * The C side validates the request and turns it into a job (recipes,
 * patch map, shapes, modes, caps), runs sandbox/model/model_bench.py in
 * the jail with the GPU (one job at a time per GPU, through the runner),
 * and turns the driver's JSON into the answer: speedups per shape, the
 * agreement verdict and a one-line summary. The Python side (recipes.py,
 * model_bench.py, kernels/torch/kforge_torch) builds the model with random
 * weights and measures; nothing is downloaded. */
#ifndef KF_MODEL_H
#define KF_MODEL_H

#include <jansson.h>
#include <stddef.h>

#include "base/kf_err.h"

#define MODEL_PATCH_MAX	       32	  /* entries in one patch map */
#define MODEL_TARGET_MAX       200	  /* bytes of one patch target */
#define MODEL_SHAPES_MAX       8	  /* shapes in one request */
#define MODEL_ITERS_MAX	       200	  /* timed repetitions per mode */
#define MODEL_TIMEOUT_S	       900	  /* default wall-clock limit of a job */
#define MODEL_TIMEOUT_MAX_S    1800	  /* the most a request may ask for */
#define MODEL_RESULT_MAX_BYTES (4u << 20) /* cap on the driver's JSON */

/* The patch ops the driver knows (kforge_torch.patch.PATCH_OPS), NULL
 * terminated. Borrowed, static. */
extern const char *const MODEL_PATCH_OPS[];

/* Checks a patch map (borrowed): a JSON object of 1..MODEL_PATCH_MAX
 * entries, each key a module class name or a glob over qualified module
 * names (1..MODEL_TARGET_MAX bytes of letters, digits and _ . * ? [ ] -),
 * each value one of MODEL_PATCH_OPS. field names the argument in messages
 * ("patch", "compile_patch"). Returns 0 or KF_EINVAL / KF_ETOOBIG naming
 * the bad entry and what would be right. */
int model_patch_check(const json_t *pmap, const char *field, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Turns the tool's arguments (borrowed) into the driver's job: recipe
 * (qwen3, llama, dit), dims, dtype, patch and compile_patch (defaults per
 * recipe), shapes (defaults per recipe), modes, iters, warmup, profile,
 * fp32_check, seed. Every value is checked and capped. Returns 0 and *job
 * (new, json_decref), or KF_EINVAL / KF_ETOOBIG naming the argument. */
int model_job_new(const json_t *args, json_t **job, struct kf_err *err)
	__attribute__((warn_unused_result));

/* The message for a patch target that names no module of the model:
 * target, the recipe and its classes (a JSON array of strings, borrowed,
 * as the driver listed them), written into buf (cap bytes, truncated). */
void model_unknown_target_msg(const char *target, const char *recipe, const json_t *classes,
			      char *buf, size_t cap);

/* Adds to res (the driver's result, borrowed, modified) "speedups": per
 * shape the patched eager / compile / graphs figures against eager,
 * torch.compile and CUDA graphs (medians; null where a mode did not run),
 * and "summary": one line with those ratios and the agreement verdict.
 * Returns 0, or KF_EINVAL when res has no "latency" array. */
int model_result_finish(json_t *res, struct kf_err *err) __attribute__((warn_unused_result));

struct runner;

/* What a run needs from the daemon (all borrowed). */
struct model_env {
	const char *data_dir;  /* job directories (<data_dir>/jobs) and the built
				* ops (<data_dir>/torch-ops); NULL = /tmp */
	int sandbox_none;      /* 1: run without bwrap (--sandbox=none) */
	struct runner *runner; /* the GPU queue */
};

/* Options of one run. */
struct model_opts {
	unsigned timeout_s;	    /* wall-clock limit; 0 = MODEL_TIMEOUT_S */
	const volatile int *cancel; /* polled; may be NULL */
};

/* Runs the job (from model_job_new, borrowed) on a GPU of env's runner in
 * a jail with the GPU nodes, the installed torch and the kforge source
 * tree (read-only); the ops library it builds is kept in
 * <data_dir>/torch-ops and reused by later runs. Returns 0 and *out (new: the finished result with summary,
 * speedups, versions...), writing the device ordinal to *gpu (-1 when it
 * never ran); or KF_EINVAL (unknown patch target: the message lists the
 * model's classes, and *out (new) is {"target", "classes": [every class]};
 * a patch that does not fit; a bad dimension), KF_ENOGPU,
 * KF_ENOTFOUND (no torch or driver script on this host), KF_EFAULT (the
 * job crashed or ran out of GPU memory: the message says which, with the
 * tail of its output), KF_ETIMEOUT (*out, new, may then hold the shapes
 * measured before the limit), KF_ECANCELED, KF_ESANDBOX, KF_EIO. A job
 * that died after some shapes returns 0 with the result marked partial. */
int model_run(const struct model_env *env, const json_t *job, const struct model_opts *o,
	      json_t **out, int *gpu, struct kf_err *err) __attribute__((warn_unused_result));

#endif
