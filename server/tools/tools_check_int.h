/* tools_check_int: the check_kernel and benchmark_kernel answers as JSON
 * (tools_check_json.c), for the handlers in tools_check_bench.c. Included
 * by no one else. */
#ifndef KF_TOOLS_CHECK_INT_H
#define KF_TOOLS_CHECK_INT_H

#include <jansson.h>

#include "sandbox/check/bench.h"
#include "sandbox/check/check.h"

/* The check_kernel answer for res (borrowed): "summary" first (the one-line
 * verdict), then passed, sizes with their trials, the safeguards that
 * fired, flags, tolerances, the reference, the compile, the device, the
 * kernel's printf output and the case to replay. A compile failure is
 * {summary, passed, failed_stage, compile}. Returns new JSON, or NULL when
 * res->answer is CHECK_ANSWER_NONE or on ENOMEM. */
json_t *tools_check_json(const struct check_result *res);

/* The benchmark_kernel answer for res (borrowed): "summary" first, the
 * first size's figures, sizes, safeguards, flags, the baseline, peaks,
 * ceilings, the device, the method and passed. A compile failure as
 * tools_check_json. Returns new JSON, or NULL (no answer, ENOMEM). */
json_t *tools_bench_json(const struct bench_result *res);

#endif
