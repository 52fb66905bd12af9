/* tools_compile_int: the compile_kernel answer as JSON (tools_compile_json.c)
 * for tools_compile.c and for the compile failures check_kernel and
 * benchmark_kernel report (tools_check_json.c). Included by no one else. */
#ifndef KF_TOOLS_COMPILE_INT_H
#define KF_TOOLS_COMPILE_INT_H

#include <jansson.h>

#include "sandbox/compile/compile.h"

/* The compile_kernel answer for res (borrowed): "summary" first
 * (compile_summary), then the compiler's report with the run's facts
 * (arch, sandbox, cache_hit, compile_ms, artifact_id) after "ok", the PTX
 * link when asked for, the SASS summary; or, when the compile timed out,
 * {summary, ok, arch, sandbox, timed_out, timeout_ms, error, log_tail}.
 * Returns new JSON, or NULL when res has no report (or on ENOMEM). */
json_t *tools_compile_json(const struct compile_result *res);

#endif
