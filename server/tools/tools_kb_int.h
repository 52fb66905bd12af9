/* tools_kb_int: internals shared by tools_kb.c (the tools), tools_kb_res.c
 * (resources and the prompt) and tools_kb_fields.c; included by no one else. */
#ifndef KF_TOOLS_KB_INT_H
#define KF_TOOLS_KB_INT_H

#include <jansson.h>

#include "base/kf_err.h"
#include "knowledge/kb.h"
#include "server/mcp/tools.h"

#define GUIDE_URI "kforge://guides/"
#define GPU_URI	  "kforge://gpus/"

struct app;

/* Sets *kb to the app's knowledge base (borrowed), or returns KF_EIO naming
 * the path and the fix when it was not loaded. */
int tools_kb_need(struct app *app, struct kb **kb, struct kf_err *err);

/* Splits s on sep into a new JSON array of trimmed, non-empty strings. */
json_t *tools_kb_split(const char *s, char sep);

/* The whole record of one GPU as new JSON; target: feature target (NULL =
 * the GPU's best target). */
json_t *tools_kb_gpu_json(const struct kb *kb, const struct kb_gpu *g,
			  const struct kb_arch *target);

/* The brief record of one GPU as new JSON: its identity, the most used
 * figures as {value, source} (source names a key list in "sources": the
 * product or per-CC sources), three derived figures, and the features code
 * for target (NULL = the GPU's best target) may use (tools_kb_fields.c). */
json_t *tools_kb_gpu_brief(const struct kb_gpu *g, const struct kb_arch *target);

/* The brief comparison of g[0..n-1] (n <= KB_COMPARE_MAX) as new JSON:
 * {gpus: [{id, name, best_target, sources}], rows: [{field, values,
 * source | unit+derived}]} over the same figures as tools_kb_gpu_brief. */
json_t *tools_kb_compare_brief(const struct kb_gpu *const *g, size_t n);

/* Applies get_gpu_specs' "fields" to a finished answer res (in place): the
 * one GPU, each local GPU that matched a row, or with compare the rows.
 * KF_EINVAL naming the valid names when one is unknown (tools_kb_fields.c). */
int tools_kb_fields(json_t *res, const json_t *fields, int compare, struct kf_err *err);

extern const struct resource_def TOOLS_KB_RESOURCES[2];
extern const struct prompt_def TOOLS_KB_PROMPTS[1];

#endif
