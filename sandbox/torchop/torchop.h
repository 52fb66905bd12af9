/* torchop: a checked kernel as a PyTorch custom op. From a parsed spec it
 * generates the sources (the kernel source unchanged plus the spec's launch
 * list as a host launcher; a C++ binding registered with TORCH_LIBRARY that
 * checks dtype, device, shape and contiguity, allocates the outputs from the
 * spec's shapes and launches on the current CUDA stream; a Python package
 * with the register_fake implementation), builds them in the jail with the
 * host's torch (nvcc and g++ in parallel, one link; cached by the content
 * hash of the sources, torch version, arch and toolchain), and verifies the
 * op in a sandboxed python on the GPU: torch.library.opcheck, the spec's
 * reference, torch.compile(fullgraph=True), CUDA-graph capture and replay.
 * Also the kernel-builder project export. Thread-safe. */
#ifndef KF_TORCHOP_H
#define KF_TORCHOP_H

#include <jansson.h>
#include <stddef.h>

#include "base/kf_err.h"
#include "sandbox/check/check.h"
#include "sandbox/spec/spec.h"

#define TORCHOP_NAME_MAX	48	     /* op name characters */
#define TORCHOP_GEN_MAX		(4u << 20)   /* bytes of one generated file */
#define TORCHOP_DIAG_MAX	50	     /* diagnostics kept from one build */
#define TORCHOP_OUTPUT_MAX	(256u << 10) /* compiler / python output kept */
#define TORCHOP_EXPORT_DATA_MAX (32u << 20)  /* bytes of an export's test data */

/* How the binding registers itself. */
enum torchop_flavor {
	TORCHOP_STANDALONE = 0,	   /* TORCH_LIBRARY(ns, m); loaded by torch.ops.load_library */
	TORCHOP_KERNEL_BUILDER = 1 /* TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) and
				    * REGISTER_EXTENSION, kernel-builder's registration.h */
};

/* The generated sources of one op. Strings are new (torchop_gen_fini). */
struct torchop_gen {
	char name[TORCHOP_NAME_MAX + 1]; /* op name, e.g. "rmsnorm_fast" */
	char ns[64];			 /* library namespace (standalone), e.g.
					  * "kforge_3f9a0c1d2e4b" */
	char *kernel_cu;		 /* the source, then the host launcher */
	char *binding_cpp;		 /* the TORCH_LIBRARY binding */
	char *init_py;			 /* the Python package's __init__.py */
	char *schema;			 /* "rmsnorm_fast(Tensor x, Tensor w, float eps=1e-06)
					  * -> Tensor" */
	json_t *call;			 /* how to call it: {"args": [{"kind": "tensor" |
					  * "int" | "scalar", "name"}], "outputs":
					  * [returned tensor names], "mutated": [inout
					  * names]} (new) */
	size_t source_first_line;	 /* line of kernel_cu where the source starts (1-based) */
	size_t source_lines;		 /* lines of the source */
};

/* Generates the sources of s's op (s borrowed). name: the op name (NULL:
 * the first launch's kernel name); it must be a C identifier of at most
 * TORCHOP_NAME_MAX characters. ns: the library namespace for
 * TORCHOP_STANDALONE (an identifier; ignored for kernel-builder). Returns 0
 * and fills *g (release with torchop_gen_fini), or KF_EINVAL naming what
 * cannot become an op ("name: 'x-y' is not an identifier", "tensors.in: 'in'
 * is a C++ or Python keyword ..."), or KF_ETOOBIG past TORCHOP_GEN_MAX. */
int torchop_generate(const struct spec *s, const char *name, const char *ns,
		     enum torchop_flavor flavor, struct torchop_gen *g, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Frees g's strings and zeroes it. NULL is a no-op. */
void torchop_gen_fini(struct torchop_gen *g);

/* Where each generated line came from: maps line (1-based) of kernel_cu to
 * the line of the kernel source (*source_line, 1-based), or 0 when the line
 * is generated launcher code. */
size_t torchop_source_line(const struct torchop_gen *g, size_t line);

/* Parses compiler output (text, borrowed; nvcc's "file(12): error: ..." and
 * gcc's "file:12:5: error: ...") into diagnostics: a new JSON array of
 * {"file", "line", "severity", "message"} plus, for lines of the generated
 * kernel file (kernel_file) that come from the kernel source, "source_line".
 * At most TORCHOP_DIAG_MAX entries. */
json_t *torchop_diagnostics(const struct torchop_gen *g, const char *kernel_file, const char *text);

/* Refuses a run that is not a passing check: run_kind / run_status are the
 * history's names ("check", "ok"), result the run's stored answer
 * (borrowed, may be NULL). Returns 0 when the run is a check that passed,
 * else KF_EINVAL "run r...: ..." saying why (a benchmark, a failed check
 * with its summary, a check that could not run). */
int torchop_run_usable(const char *run_id, const char *run_kind, const char *run_status,
		       const json_t *result, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Options of torchop_build_verify. Zero = defaults. */
struct torchop_opts {
	const char *name;	    /* op name; NULL = the first kernel's */
	int no_verify;		    /* 1: build only */
	unsigned timeout_ms;	    /* per verification job [180000] */
	const volatile int *cancel; /* polled */
	check_progress_fn progress; /* may be NULL */
	void *progress_arg;
};

/* Builds spec (borrowed JSON, op shorthand allowed) as a torch op and
 * verifies it. Returns 0 with *out (new): "summary", "passed" (every
 * verification passed), "op" {name, qualified, schema, package, library},
 * "build" {cache_hit, build_ms, nvcc_ms, cxx_ms, link_ms, torch, arch,
 * key}, "checks" {opcheck, reference, compile, cuda_graph, input_checks:
 * each {passed, message, ms}}, "device". Or:
 *   KF_EFAULT    a verification failed (*out says which, with the message);
 *   KF_ECOMPILE  the build failed: *out has "diagnostics" with the generated
 *                file's line and the kernel source's line;
 *   KF_ENOMEM    out of GPU memory in the verification (*out says so);
 *   KF_ENOTFOUND torch (with its headers) is not installed for python3;
 *   KF_EINVAL / KF_ETOOBIG the spec (err names the field);
 *   KF_ENOGPU, KF_ECANCELED, KF_ETIMEOUT, KF_ESANDBOX, KF_EIO.
 * *gpu is the device ordinal used, or -1. */
int torchop_build_verify(struct check_env *env, const json_t *spec, const struct torchop_opts *o,
			 json_t **out, int *gpu, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Writes a kernel-builder project for spec (borrowed JSON, op shorthand
 * allowed) into dir: build.toml, flake.nix, the .cu, torch-ext/ (binding
 * and the Python package with register_fake), tests/ (opcheck, the
 * reference comparison against outputs kforge computed with the spec's
 * reference at the spec's smallest size, torch.compile, CUDA graph),
 * benchmarks/, setup.py (plain setuptools + torch cpp_extension), compat/
 * (registration.h for setup.py) and README.md carrying report (borrowed
 * JSON: {"run_id", "device", "check": the check's answer, "bench": {"run_id",
 * "result"} or null}). env: for a torch reference (sandboxed python).
 * dir must not exist or be empty unless force. Returns 0, or KF_EPERM
 * "DIR is not empty: pass --force", KF_EINVAL (spec, name), KF_ETOOBIG (the
 * test data would pass TORCHOP_EXPORT_DATA_MAX), KF_EIO naming the file,
 * or the reference's codes. */
int torchop_export(struct check_env *env, const json_t *spec, const char *name,
		   const json_t *report, const char *dir, int force, struct kf_err *err)
	__attribute__((warn_unused_result));

#endif
