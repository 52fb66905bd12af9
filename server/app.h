/* app: the daemon's long-lived state shared by every session and transport:
 * configuration, the knowledge base, the compiler and its cache, the GPU
 * runner and the run history. Opened once in main, closed at exit. Each
 * domain owns its field; app.c opens them in order and closes in reverse. */
#ifndef KF_APP_H
#define KF_APP_H

#include <stddef.h>

#include "base/kf_err.h"
#include "sandbox/check/check.h"

struct kb;
struct compiler;
struct runner;
struct history;
struct exec;
struct exec_config;
struct compile_queue;

enum app_sandbox { APP_SANDBOX_BWRAP = 0, APP_SANDBOX_NONE = 1 };

struct app_config {
	const char *data_dir;		/* state.db, cache; created if missing */
	const char *kb_path;		/* knowledge.db; NULL = next to the binary / installed */
	enum app_sandbox sandbox;	/* --sandbox=none only when the operator asks */
	size_t max_message_bytes;	/* JSON-RPC message cap, default 8 MiB */
	int log_level;			/* LOG_* from log.h */
	int conformance_fixtures;	/* register the conformance fixture tools */
	const struct exec_config *exec; /* where GPU tool calls run; NULL = local */
	int max_jobs_per_client;	/* GPU jobs at once per client; 0 = default */
	int queued_jobs_per_client;	/* GPU jobs waiting per client; 0 = default */
	int warm_harness;		/* keep spare harness processes per GPU (serve) */
};

struct app {
	struct app_config cfg;
	struct kb *kb;		 /* knowledge/: read-only at run time */
	struct compiler *cc;	 /* sandbox/: nvcc driver + artifact cache */
	struct runner *runner;	 /* sandbox/: job queue, GPU pool */
	struct history *history; /* sandbox/: state.db runs */
	struct exec *exec;	 /* sandbox/exec/: local, or GPU calls to Slurm */
	struct check_env check;	 /* sandbox/check/: filled from the above; owns the GPU jail */
	/* server/tools/tools_jobs.c: GPU job admission per client */
	struct compile_queue *jobs;
};

/* Opens every domain module with cfg (copied; strings borrowed for the app's
 * life). Returns 0 and sets *out to a new app (free with app_close), or a
 * KF_E* code with err set naming what failed. */
int app_open(const struct app_config *cfg, struct app **out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Registers the daemon's tool, resource and prompt groups (server/tools/)
 * with the registry (server/mcp/tools.h); with fixtures nonzero the
 * conformance suite's fixture group too. Call once before any session.
 * Returns 0, or KF_EINVAL naming the tool whose table is wrong. */
int app_tools_load(int fixtures, struct kf_err *err) __attribute__((warn_unused_result));

/* Closes the modules in reverse order and frees app. NULL is a no-op. */
void app_close(struct app *app);

#endif
