/* kb: the knowledge base query module. Opens build/knowledge.db (made by
 * kb-build from knowledge/), read-only. GPU facts, aliases and per-CC limits
 * are loaded into memory at open and never change, so every GPU lookup is
 * lock-free; guide search and reads go through a small pool of sqlite
 * connections guarded by a mutex. Every function here is thread-safe.
 * Figures carry their source; derived figures are computed here, never
 * stored, and say how (formula). Unknown figures are KB_FIG_UNKNOWN, never 0. */
#ifndef KF_KB_H
#define KF_KB_H

#include <stddef.h>

#include "base/kf_err.h"

struct kb;

/* Caps on outside-fed text. */
#define KB_QUERY_MAX_BYTES  512 /* guide search query */
#define KB_NAME_MAX_BYTES   128 /* GPU name / alias / arch / guide id input */
#define KB_COMPARE_MAX	    4	/* GPUs side by side */
#define KB_SEARCH_MAX_LIMIT 50	/* hits per search */
#define KB_MAX_FIGURES	    48	/* figures per GPU */
#define KB_MAX_DERIVED	    24	/* derived figures per GPU */
#define KB_MAX_MATCHES	    24	/* GPUs one alias can name */

/* ---- open / close ------------------------------------------------------ */

/* Opens the database at path (borrowed) read-only and loads the GPU tables.
 * Returns 0 and sets *out to a new kb (free with kb_close); KF_EIO when the
 * file cannot be opened, KF_EDB when it is not a kforge knowledge base (the
 * message names the path and says to run `make`). */
int kb_open(const char *path, struct kb **out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Closes every pooled connection and frees kb. NULL is a no-op. */
void kb_close(struct kb *kb);

/* ---- GPU figures ------------------------------------------------------- */

enum kb_fig_status {
	KB_FIG_KNOWN = 0,   /* value (and/or text) set, with a source */
	KB_FIG_UNKNOWN = 1, /* empty in the CSV: not confirmed from a source */
	KB_FIG_NA = 2	    /* `n/a`: the format/feature does not exist there */
};

enum kb_fig_kind {
	KB_FIG_PRODUCT = 0, /* per product: SMs, memory, peaks (sources_product) */
	KB_FIG_PER_CC = 1,  /* per compute capability limits (sources_per_cc_limits) */
	KB_FIG_FEATURE = 2  /* feature flag of the CC ("yes", "no", "yes (sm_90a only)") */
};

struct kb_figure {
	const char *field;	 /* CSV column, e.g. "memory_bandwidth_gbs" */
	const char *label;	 /* human label, e.g. "memory bandwidth" */
	const char *unit;	 /* "GB/s", "TFLOPS", "KB", "" */
	int kind;		 /* KB_FIG_PRODUCT / PER_CC / FEATURE */
	int status;		 /* KB_FIG_KNOWN / UNKNOWN / NA */
	int is_number;		 /* 1 when value holds the figure */
	double value;		 /* the figure in unit, when is_number */
	const char *text;	 /* the CSV cell as written ("" when unknown) */
	const char *source;	 /* its own source, else the row's text ("" when unknown) */
	const char *gap;	 /* unknown: why there is no value (figure_sources.csv), or "" */
	const char *source_keys; /* comma-separated keys into kb_source_find */
	const char *derivation;	 /* how the source list derived it, or "" */
};

/* One GPU row. All strings are borrowed from the kb (valid until kb_close). */
struct kb_gpu {
	const char *id;	  /* canonical id, e.g. "h100-sxm" */
	const char *name; /* "NVIDIA H100 SXM5 80GB" */
	const char *form_factor;
	const char *architecture;	/* "Hopper" */
	const char *compute_capability; /* "9.0" */
	int cc_major, cc_minor;
	const char *sm_target;	 /* "sm_90a (sm_90 baseline)" */
	const char *best_target; /* "sm_90a": arch-specific target when there is one */
	const char *notes;
	const char *derived_fields; /* the source list's own derivation notes */
	const char *sources_product;
	const char *sources_per_cc_limits;
	const char *aliases;   /* comma-separated aliases (normalized) */
	const char *conflicts; /* comma-separated SOURCES.md conflict ids */
	size_t figures_len;
	const struct kb_figure *figures;
};

/* Returns the number of GPUs; kb_gpu_at(i) returns borrowed row i in table
 * order (oldest architecture first), NULL past the end. */
size_t kb_gpu_count(const struct kb *kb);
const struct kb_gpu *kb_gpu_at(const struct kb *kb, size_t i);

/* Returns borrowed figure field of gpu, or NULL when there is no such column. */
const struct kb_figure *kb_gpu_figure(const struct kb_gpu *gpu, const char *field);

/* Resolves a name or alias ("h100", "H100 SXM", "sm_90", "hopper",
 * "a100-80g-pcie", "rtx 4090", "4090", "t4"). Matching ignores case, spaces,
 * '-', '_' and a leading "nvidia"/"geforce". Rule for ambiguous names: an
 * alias that names several GPUs (an arch "sm_90", a family "hopper", "a100")
 * returns all of them in table order with the canonical pick first (the
 * flagship datacenter part: H100 SXM for hopper/sm_90/h100, A100 80GB SXM for
 * a100/sm_80, B200 for blackwell/sm_100). Sets matches[0..*len) to borrowed
 * rows (at most cap) and *ambiguous to 1 when more than one matched.
 * KF_EINVAL for an empty or over-long name; KF_ENOTFOUND for an unknown one,
 * with err listing the closest known names (see kb_gpu_suggest). */
int kb_gpu_resolve(const struct kb *kb, const char *name, const struct kb_gpu **matches, size_t cap,
		   size_t *len, int *ambiguous, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Like kb_gpu_resolve but returns only the canonical pick in *out. */
int kb_gpu_find(const struct kb *kb, const char *name, const struct kb_gpu **out,
		struct kf_err *err) __attribute__((warn_unused_result));

/* Resolves 2..KB_COMPARE_MAX names (each to its canonical pick) into
 * out[0..n) for a side-by-side comparison. KF_EINVAL for a count outside
 * 2..4 or a bad name; KF_ENOTFOUND naming the first unknown one with the
 * closest known ids. */
int kb_gpu_compare(const struct kb *kb, const char *const *names, size_t n,
		   const struct kb_gpu **out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Writes up to cap closest known ids (edit distance and token overlap with
 * the aliases) for an unknown name into ids (borrowed strings). Returns how
 * many were written. */
size_t kb_gpu_suggest(const struct kb *kb, const char *name, const char **ids, size_t cap);

/* Matches a device the driver reports (name as from cuDeviceGetName, its
 * compute capability, SM count and total memory in bytes; 0 = not known) to
 * a row. Returns 0 with *out set, or KF_ENOTFOUND when no row has that
 * compute capability (err says which CC and name). */
int kb_gpu_match_device(const struct kb *kb, const char *device_name, int cc_major, int cc_minor,
			int sm_count, unsigned long long mem_bytes, const struct kb_gpu **out,
			struct kf_err *err) __attribute__((warn_unused_result));

/* ---- sources and conflicts --------------------------------------------- */

struct kb_source {
	const char *key;   /* "PG-LEG", "DQ-T4" */
	const char *title; /* what the source is (with URL when known) */
	const char *where; /* which archived copy was read */
};

/* Returns borrowed source for key, or NULL. */
const struct kb_source *kb_source_find(const struct kb *kb, const char *key);

struct kb_conflict {
	const char *id;	  /* "C1" */
	const char *text; /* the conflict and how the CSV resolved it */
};
size_t kb_conflict_count(const struct kb *kb);
const struct kb_conflict *kb_conflict_at(const struct kb *kb, size_t i);

/* ---- derived figures --------------------------------------------------- */

struct kb_derived {
	char name[48]; /* "ridge_point_fp32_flop_per_byte" */
	char label[64];
	char unit[24];
	int known; /* 0 when an input is unknown or n/a: value meaningless */
	double value;
	char formula[192]; /* "peak_fp32_tflops * 1e12 / (memory_bandwidth_gbs * 1e9)" */
	char inputs[192];  /* the input values used, "67 TFLOPS / 3350 GB/s" */
};

/* Computes the derived figures of gpu (ridge points per precision, max
 * resident warps and threads, full-wave grid sizes, ...) into out (cap
 * entries). Returns how many were written. Pure; never fails. */
size_t kb_gpu_derived(const struct kb_gpu *gpu, struct kb_derived *out, size_t cap);

/* ---- targets, limits and occupancy -------------------------------------- */

/* A compilation target: "sm_90a", "sm_90", "compute_90", "sm_100f", "9.0",
 * "90". suffix is 'a' (arch-specific), 'f' (family) or 0. */
struct kb_arch {
	int major, minor;
	char suffix;
	int ptx; /* 1 for compute_XY (PTX, JIT-compiled forward) */
};

/* Parses text (borrowed). KF_EINVAL naming the text and the accepted forms. */
int kb_arch_parse(const char *text, struct kb_arch *out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Writes the canonical spelling ("sm_90a") into buf (cap bytes). */
void kb_arch_format(const struct kb_arch *a, char *buf, size_t cap);

/* 1 when code built for target runs on a device of compute capability
 * major.minor: sm_XYa only on X.Y; sm_XYf on X.Z with Z >= Y; sm_XY on X.Z
 * with Z >= Y; compute_XY (PTX) on any CC >= X.Y. */
int kb_arch_runs_on(const struct kb_arch *target, int major, int minor);

/* Per-CC limits for occupancy. Bytes, registers and threads; granularities
 * from CUDA's cuda_occupancy.h (cudaOccRegAllocationGranularity 256 regs per
 * warp; cudaOccSMemAllocationGranularity 256 B for CC 7.x, 128 B for 8.0+;
 * 4 register sub-partitions) and the per-block reserved shared memory of
 * 1 KB on 8.0+ (PG-LEG sect.20.7; MEAS-H200 RESERVED_SHARED_MEMORY_PER_BLOCK). */
struct kb_cc_limits {
	int cc_major, cc_minor;
	int warp_size; /* threads, 32 */
	int max_threads_per_block;
	int max_threads_per_sm;
	int max_warps_per_sm;
	int max_blocks_per_sm;
	int regs_per_sm; /* 32-bit registers */
	int max_regs_per_block;
	int max_regs_per_thread;	   /* 255 */
	int reg_alloc_unit;		   /* registers per warp allocation, 256 */
	int reg_sub_partitions;		   /* 4 */
	int smem_per_sm_bytes;		   /* max carveout */
	int smem_per_block_optin_bytes;	   /* max dynamic opt-in per block */
	int smem_static_max_bytes;	   /* 48 KB without opt-in */
	int smem_reserved_per_block_bytes; /* 1024 on 8.0+, 0 before */
	int smem_alloc_unit_bytes;	   /* 128 or 256 */
	const char *source;		   /* borrowed: where the limits come from */
};

/* Fills limits for an arch string ("sm_90a", "sm_86", "10.0"); the CC must
 * be a row of per_cc.csv or of a GPU in the table (10.3 from the B300 row).
 * KF_EINVAL for a bad arch string, KF_ENOTFOUND for an unknown CC (err lists
 * the known ones). */
int kb_cc_limits_for_arch(const struct kb *kb, const char *arch, struct kb_cc_limits *out,
			  struct kf_err *err) __attribute__((warn_unused_result));

enum kb_occ_limit {
	KB_OCC_LIMIT_WARPS = 0,	   /* max warps (threads) per SM */
	KB_OCC_LIMIT_BLOCKS,	   /* max resident blocks per SM */
	KB_OCC_LIMIT_REGS,	   /* registers per SM */
	KB_OCC_LIMIT_SMEM,	   /* shared memory per SM */
	KB_OCC_LIMIT_BLOCK_TOO_BIG /* the block cannot launch at all */
};

struct kb_occupancy {
	int blocks_per_sm;   /* resident blocks per SM (0: cannot launch) */
	int warps_per_block; /* ceil(block_threads / 32) */
	int active_warps_per_sm;
	double occupancy; /* active warps / max warps, 0..1 */
	int limit_warps;  /* blocks per SM allowed by each resource */
	int limit_blocks;
	int limit_regs; /* INT_MAX-free: regs 0 -> max_blocks */
	int limit_smem;
	int limiting;			/* KB_OCC_LIMIT_* of the smallest limit */
	const char *limiting_name;	/* static: "warps", "blocks", "registers",
				     * "shared_memory", "block_too_big" */
	int regs_per_warp_alloc;	/* regs/thread * 32 rounded up to 256 */
	int smem_per_block_alloc_bytes; /* smem + reserved, rounded to unit */
	int needs_optin;		/* 1 when smem/block > 48 KB static limit */
	char reason[192];		/* one line, e.g. why the block cannot launch */
};

/* The CUDA occupancy calculation (cudaOccMaxActiveBlocksPerMultiprocessor
 * without partitioned global caching, default carveout preference = max):
 *   warps:  floor(max_threads_per_sm/32 / warps_per_block)
 *   regs:   per-warp alloc = roundup(regs*32, 256); warps per sub-partition =
 *           floor(regs_per_sm/4 / alloc); blocks = floor(4*that / warps_per_block)
 *   smem:   per-block alloc = roundup(smem + reserved, unit);
 *           blocks = floor(smem_per_sm / alloc)
 *   blocks: max_blocks_per_sm
 * block_threads 1..max_threads_per_block, regs_per_thread 0..255 (0 = not
 * known: registers do not limit), smem_per_block_bytes >= 0 (static +
 * dynamic). A block over a per-block limit gives blocks_per_sm 0 with the
 * reason (not an error). KF_EINVAL (naming the argument and its range) for a
 * value outside those ranges. Pure; never touches the database. */
int kb_occupancy(const struct kb_cc_limits *lim, int block_threads, int regs_per_thread,
		 int smem_per_block_bytes, struct kb_occupancy *out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* ---- features ----------------------------------------------------------- */

enum kb_feature {
	KB_FEAT_CP_ASYNC = 0, /* cp.async, sm_80+ */
	KB_FEAT_TMA,	      /* cp.async.bulk.tensor + mbarrier, sm_90+ */
	KB_FEAT_WGMMA,	      /* wgmma.mma_async, sm_90a only */
	KB_FEAT_CLUSTERS,     /* thread block clusters / DSMEM, sm_90+ */
	KB_FEAT_FP8,	      /* FP8 (e4m3/e5m2) tensor-core MMA, sm_89+ */
	KB_FEAT_TCGEN05,      /* tcgen05.* / TMEM: sm_100a/f, sm_103a/f, sm_110a/f */
	KB_FEAT_BF16,	      /* BF16 tensor-core MMA, sm_80+ */
	KB_FEAT_FP4,	      /* FP4 tensor: sm_100a/f+, sm_120a/f */
	KB_FEAT_COUNT
};

struct kb_feature_use {
	const char *name; /* static: "cp.async", "tma", "wgmma", ... */
	int usable;	  /* 1 when code for the target may use it */
	char why[192];	  /* the rule applied, with its source key */
};

/* Whether code compiled for target may use feature. Pure. */
void kb_feature_usable(const struct kb_arch *target, int feature, struct kb_feature_use *out);

/* Returns the static feature name, or NULL past KB_FEAT_COUNT. */
const char *kb_feature_name(int feature);

/* ---- roofline peaks ----------------------------------------------------- */

struct kb_peak {
	int known;	    /* 0: unknown or n/a */
	double value;	    /* GB/s or TFLOPS (dense) */
	const char *source; /* borrowed source text */
	const char *field;  /* the CSV column it came from */
};

struct kb_peaks {
	const struct kb_gpu *gpu; /* borrowed */
	struct kb_peak mem_bw_gbs;
	struct kb_peak fp32_tflops; /* non-tensor FP32 */
	struct kb_peak fp64_tflops;
	struct kb_peak tf32_tflops; /* tensor, dense */
	struct kb_peak bf16_tflops; /* tensor, dense (FP32 accumulate on GeForce) */
	struct kb_peak fp16_tflops; /* same column as bf16 */
	struct kb_peak fp8_tflops;
	struct kb_peak int8_tops;
	struct kb_peak fp4_tflops;
};

/* Fills the roofline peaks of the GPU named name (any alias; ambiguous names
 * take the canonical pick). Errors as kb_gpu_find. */
int kb_gpu_peaks(const struct kb *kb, const char *name, struct kb_peaks *out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* ---- guides ------------------------------------------------------------- */

struct kb_hit {
	char id[64];
	char title[160];
	char snippet[400]; /* body excerpt with matches wrapped in ** ** */
	double score;	   /* kf_rank: minus per-field BM25 (lower = better) */
};

struct kb_search {
	const char *query; /* required, 1..KB_QUERY_MAX_BYTES bytes */
	const char *arch;  /* optional: "sm_90", "hopper", "h100"... NULL = any */
	const char *tag;   /* optional exact tag, NULL = any */
	int limit;	   /* 1..KB_SEARCH_MAX_LIMIT; 0 = 10 */
};

/* Ranked full-text search. The query is tokenized into quoted terms (FTS5
 * syntax in it is plain text, never an operator), expanded by synonym
 * groups and OR-ed, ranked by per-field BM25 with the title weighted above
 * the other columns (docs/knowledge.md). Returns 0 and sets *hits to a
 * new array of *len hits (free with free()), possibly empty. KF_EINVAL for
 * an empty, whitespace-only or over-long query, a bad limit or an arch that
 * names nothing; KF_EDB on a database failure. */
int kb_search_guides(struct kb *kb, const struct kb_search *q, struct kb_hit **hits, size_t *len,
		     struct kf_err *err) __attribute__((warn_unused_result));

struct kb_guide {
	char *id;
	char *title;
	char *tags;    /* comma-separated */
	char *archs;   /* comma-separated, e.g. "sm_90,sm_90a" or "all" */
	char *sources; /* newline-separated source lines */
	char *body;    /* Markdown without front matter */
	char *links;   /* comma-separated ids of guides this one links to */
	char *related; /* comma-separated ids from the front matter's related */
	char *checked; /* which GPUs and CUDA version the advice was checked on */
};

/* Reads guide id. Returns 0 and *out new (free with kb_guide_free);
 * KF_EINVAL for an empty or over-long id, KF_ENOTFOUND for an unknown one
 * (err names the closest ids). */
int kb_guide_read(struct kb *kb, const char *id, struct kb_guide **out, struct kf_err *err)
	__attribute__((warn_unused_result));
void kb_guide_free(struct kb_guide *g);

struct kb_guide_entry {
	char id[64];
	char title[160];
};

/* Lists guides (id order) whose id starts with prefix (NULL or "" = all).
 * Returns 0 and *out new array of *len (free with free()). */
int kb_guide_list(struct kb *kb, const char *prefix, struct kb_guide_entry **out, size_t *len,
		  struct kf_err *err) __attribute__((warn_unused_result));

#endif
