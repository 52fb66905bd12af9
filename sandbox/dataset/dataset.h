/* dataset: the run history (sandbox/history) as a dataset of verified
 * kernels, one JSON record per kernel. A kernel is exported only when a
 * benchmark of it passed with every size verified after timing and no time
 * under the roofline floor, and a check of the same source and spec passed
 * with no safeguard fired. Records are deduplicated by a hash of the
 * normalized source (comments and whitespace dropped), keeping the fastest.
 * The record format is the JSON schema dataset_schema_text() returns. */
#ifndef KF_DATASET_H
#define KF_DATASET_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/kf_err.h"
#include "sandbox/history/history.h"

#define DATASET_SCAN_MAX    100000 /* benchmark runs examined by one export */
#define DATASET_LICENSE	    "cc-by-4.0"
#define DATASET_LINEAGE_MAX 64 /* ancestors followed from one run */

/* What to export. Start from dataset_filter_init (everything). Strings are
 * borrowed. */
struct dataset_filter {
	int64_t since_ms;    /* benchmark created_ms >= since_ms; 0 = any */
	const char *op;	     /* the spec's op or a kernel name containing it; NULL */
	const char *arch;    /* exact compile target, "sm_90"; NULL = any */
	const char *gpu;     /* substring of the GPU name, case-insensitive; NULL */
	double min_speedup;  /* speedup over the baseline >= this; 0 = any */
	int trajectories;    /* 1: each record carries its ancestor runs whole */
	const char *license; /* the license the records are given under */
};

/* Counts of one export. */
struct dataset_stats {
	size_t scanned;	   /* benchmark runs with status ok looked at */
	size_t exported;   /* records written */
	size_t unverified; /* benchmarks left out: no passing check, a
			    * safeguard, unverified sizes, under the floor */
	size_t filtered;   /* left out by the filter */
	size_t duplicates; /* same normalized source as a kept record */
};

/* Receives one record (borrowed for the call). Returns 0 to go on, or a
 * KF_E* code (with err) that stops the export and is returned by it. */
typedef int (*dataset_emit_fn)(void *arg, const json_t *record, struct kf_err *err);

/* Sets *f to everything, license DATASET_LICENSE. */
void dataset_filter_init(struct dataset_filter *f);

/* Builds the records of h (borrowed) that pass f (borrowed), oldest first,
 * and hands each to emit. Fills *stats (may be NULL). Returns 0, KF_EINVAL
 * (f->min_speedup negative), the history's KF_EDB / KF_ENOMEM, or emit's
 * code. */
int dataset_export(struct history *h, const struct dataset_filter *f, dataset_emit_fn emit,
		   void *arg, struct dataset_stats *stats, struct kf_err *err)
	__attribute__((warn_unused_result));

/* An export pulled one record at a time (the REST stream). */
struct dataset_iter;

/* Scans h (borrowed, must outlive the iterator) with f (copied) and
 * decides which records it will give: the judging and deduplication happen
 * here, the records are built again one by one by dataset_iter_next.
 * Returns 0 and *out (free with dataset_iter_free), or what dataset_export
 * returns. */
int dataset_iter_new(struct history *h, const struct dataset_filter *f, struct dataset_iter **out,
		     struct kf_err *err) __attribute__((warn_unused_result));

/* The next record into *rec (new; NULL after the last). Returns 0 or the
 * history's KF_E* code. */
int dataset_iter_next(struct dataset_iter *it, json_t **rec, struct kf_err *err)
	__attribute__((warn_unused_result));

/* The counts so far (exported counts the records given). Borrowed. */
const struct dataset_stats *dataset_iter_stats(const struct dataset_iter *it);

/* Frees it. NULL is a no-op. */
void dataset_iter_free(struct dataset_iter *it);

/* Writes dir/data/kernels.jsonl, dir/README.md (a Hugging Face dataset
 * card) and dir/schema.json. dir may be missing (it is created) or empty;
 * an existing non-empty dir is refused with KF_EINVAL unless force (then
 * the three files are replaced, other files left alone). The JSONL is
 * written to a temporary name and renamed, so a failed export leaves no
 * half file. Returns 0, KF_EINVAL (not empty, or not a directory), KF_EIO naming
 * the path, or what
 * dataset_export returns. */
int dataset_write_dir(struct history *h, const struct dataset_filter *f, const char *dir, int force,
		      struct dataset_stats *stats, struct kf_err *err)
	__attribute__((warn_unused_result));

/* The JSON schema (draft 2020-12) of one record: static text. */
const char *dataset_schema_text(void);

/* The hex sha256 of src normalized: comments removed, every run of
 * whitespace one space, none at the ends. hex has 65 bytes. */
void dataset_source_hash(const char *src, char hex[65]);

#endif
