/* tools_runs_int: shared between tools_runs.c (tools, resources,
 * recording) and tools_runs_compare.c (the comparisons). Included by no
 * one else. */
#ifndef KF_TOOLS_RUNS_INT_H
#define KF_TOOLS_RUNS_INT_H

#include <jansson.h>
#include <stddef.h>

#include "base/kf_err.h"
#include "sandbox/history/history.h"

/* Adds the kind-specific comparison of runs a and b (borrowed, same kind)
 * to out ("benchmark", "kernels", "check" or "figures") and writes a
 * one-line description into detail (cap bytes). Returns 0, or KF_EINVAL
 * when a benchmark run has no timing (err names the run). */
int tools_runs_compare_detail(const struct history_run *a, const struct history_run *b, json_t *out,
			      char *detail, size_t cap, struct kf_err *err)
	__attribute__((warn_unused_result));

#endif
