/* dataset_int: shared between dataset.c (selection, records) and
 * dataset_export.c (the scan, deduplication, files). Included by no one
 * else. */
#ifndef KF_DATASET_INT_H
#define KF_DATASET_INT_H

#include <jansson.h>

#include "sandbox/dataset/dataset.h"

/* The runs that vouch for one benchmark: its passing check and, when there
 * is one, a compile of the same source (for the resources). Owned. */
struct dataset_pair {
	struct history_run check;
	struct history_run compile;
	int has_compile;
};

/* Finds the pair of bench (a full run from history_get, borrowed). Returns
 * 1 (bench is verified and *pair filled: release with dataset_pair_fini),
 * 0 (not exportable: no passing check of the same source and spec, or the
 * benchmark itself failed a safeguard), or a negative KF_E* code. */
int dataset_kernel_pair(struct history *h, const struct history_run *bench,
			struct dataset_pair *pair, struct kf_err *err);

void dataset_pair_fini(struct dataset_pair *pair);

/* The lineage of bench: parent, ancestor ids nearest first, and with whole
 * the ancestor runs oldest first as a trajectory. Returns new. */
json_t *dataset_lineage(struct history *h, const struct history_run *b, int whole);

/* The record of bench b with pair p; takes lineage. Returns new. */
json_t *dataset_record(const struct history_run *b, const struct dataset_pair *p, json_t *lineage,
		       const char *license);

/* Whether rec (of benchmark b) passes f's arch, gpu, op and speedup. */
int dataset_filter_match(const struct dataset_filter *f, const json_t *rec,
			 const struct history_run *b);

#endif
