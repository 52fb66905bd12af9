/* groups: the tool groups of the daemon, one per file in server/tools/
 * (declared here, defined there). The composition root lists them
 * (app_tools_load in server/app.c); the registry (server/mcp/tools.h) never
 * names them. */
#ifndef KF_TOOL_GROUPS_H
#define KF_TOOL_GROUPS_H

#include "server/mcp/tools.h"

extern const struct tool_group TOOLS_KB;	  /* tools_kb.c: GPU facts, guides */
extern const struct tool_group TOOLS_COMPILE;	  /* tools_compile.c */
extern const struct tool_group TOOLS_CHECK_BENCH; /* tools_check_bench.c: check, benchmark */
extern const struct tool_group TOOLS_RUNS;	  /* tools_runs.c: the run history */
extern const struct tool_group TOOLS_TORCH;	  /* tools_torch.c: build_torch_op */
extern const struct tool_group TOOLS_PROMPTS;	  /* tools_prompts.c: optimize, integrate */
extern const struct tool_group TOOLS_MODEL;	  /* tools_model.c: benchmark_model */
extern const struct tool_group TOOLS_PROFILE;	  /* tools_profile.c: profile_kernel */

#endif
