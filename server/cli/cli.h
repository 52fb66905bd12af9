/* cli: the `kforge` command line. Each subcommand is a struct cli_cmd in its
 * owner's server/cli_<x>.c, exported as a table (CLI_KB, CLI_COMPILE, ...)
 * ended by an entry whose name is NULL; server/cli/cli.c lists the tables (one
 * line per table). A command opens the app from the common options, calls
 * tools through mcp_tool_call (via cli_tool_run), and prints a readable
 * table, or the structuredContent JSON with --json. Logs go to stderr. The
 * options that fill a tool's arguments are bound to its inputSchema
 * (cli_opts.h), which gives their bounds, defaults and help lines. */
#ifndef KF_CLI_H
#define KF_CLI_H

#include <jansson.h>
#include <stdio.h>

#include "server/app.h"
#include "base/kf_err.h"

/* Exit codes of every kforge command (documented in docs/cli.md). */
enum {
	CLI_EXIT_OK = 0,	/* success */
	CLI_EXIT_FAIL = 1,	/* the operation failed (tool error, wrong kernel,
				* compile error, I/O) */
	CLI_EXIT_USAGE = 2,	/* bad command line: unknown option, missing arg */
	CLI_EXIT_NOGPU = 3,	/* needs a GPU and this host has none usable */
	CLI_EXIT_NOTFOUND = 4,	/* unknown GPU, guide, run, artifact or tool */
	CLI_EXIT_ENV = 5,	/* could not start: data dir, knowledge base,
				* sandbox, port in use */
	CLI_EXIT_BUSY = 6,	/* queue full or timed out: retry later */
	CLI_EXIT_CANCELED = 130 /* interrupted (SIGINT) */
};

/* One subcommand. run gets argv with argv[0] = the command name; it returns
 * a CLI_EXIT_* code. `kforge CMD --help` and `kforge help CMD` print
 * "usage" without calling run, so run need not handle --help. */
struct cli_opts;
struct cli_cmd {
	const char *name;    /* e.g. "specs" */
	const char *summary; /* one line for `kforge --help` */
	const char *usage;   /* full help: synopsis, options, examples; with
			      * opts, the part before the options */
	int (*run)(int argc, char **argv);
	/* NULL, or the options bound to the inputSchema of the tool the
	 * command calls (cli_opts.h): --help lists them, with the schema's
	 * bounds and defaults, between usage and usage_tail */
	const struct cli_opts *opts;
	const char *usage_tail; /* with opts: common options, examples */
};

/* Prints c's help to f: usage, then the options of c->opts, then
 * usage_tail. Returns CLI_EXIT_OK, or CLI_EXIT_FAIL after saying on stderr
 * that c's option table names a property its tool's schema lacks. */
int cli_cmd_help(FILE *f, const struct cli_cmd *c);

/* Subcommand tables, one per owner file, each ended by {NULL}.
 * Declared here, defined there; cli.c lists those that exist. */
extern const struct cli_cmd CLI_CORE[];	   /* cli.c: serve, tools, call, version */
extern const struct cli_cmd CLI_KB[];	   /* cli_kb.c */
extern const struct cli_cmd CLI_COMPILE[]; /* cli_compile.c */
extern const struct cli_cmd CLI_GPU[];	   /* cli_gpu.c: check, bench, calibrate */
extern const struct cli_cmd CLI_RUNS[];	   /* cli_runs.c */
extern const struct cli_cmd CLI_SETUP[];   /* cli_setup.c: mcp-config, skill */
extern const struct cli_cmd CLI_DEMO[];	   /* cli_demo.c: demo */
extern const struct cli_cmd CLI_OPS[];	   /* cli_ops.c: ops */
extern const struct cli_cmd CLI_EXEC[];	   /* cli_exec.c: exec-job */
extern const struct cli_cmd CLI_MODEL[];   /* cli_model.c: model-bench */
extern const struct cli_cmd CLI_DATASET[]; /* cli_dataset.c: dataset */
extern const struct cli_cmd CLI_EVAL[];	   /* cli_eval.c: eval */
/* cli_dataset.c: GET /v1/dataset.jsonl, the export streamed over HTTP */
extern const struct http_stream CLI_DATASET_STREAM;
extern const struct cli_cmd CLI_TORCH[];   /* cli_torch.c: torch-op, export */
extern const struct cli_cmd CLI_PROFILE[]; /* cli_profile.c: profile */

/* The options every command that opens the app accepts. */
struct cli_common {
	const char *data_dir;		/* --data-dir DIR; NULL = $XDG_DATA_HOME/kforge */
	const char *kb_path;		/* --kb FILE; NULL = $KFORGE_KB or next to the binary */
	enum app_sandbox sandbox;	/* --sandbox=bwrap|none */
	int log_level;			/* --log-level LEVEL (LOG_*), default warn for
				   * commands, info for serve */
	int json;			/* --json: print structuredContent as JSON */
	size_t max_message_bytes;	/* --max-message-bytes N */
	int conformance_fixtures;	/* --conformance-fixtures */
	const struct exec_config *exec; /* serve --executor ...; NULL = local */
	int max_jobs_per_client;	/* serve --max-jobs-per-token N; 0 = default */
	int queued_jobs_per_client;	/* serve --max-queued-jobs-per-token N; 0 = default */
	int warm_harness;		/* serve: keep spare harness processes per GPU */
};

/* Help text for the common options, to paste into a command's usage. */
#define CLI_COMMON_HELP                                                       \
	"Common options:\n"                                                   \
	"  --data-dir DIR       state.db and caches (default "                \
	"$XDG_DATA_HOME/kforge,\n"                                            \
	"                       or ~/.local/share/kforge)\n"                  \
	"  --kb FILE            knowledge.db (default $KFORGE_KB, then next " \
	"to the binary)\n"                                                    \
	"  --sandbox=bwrap|none run compiles and GPU jobs in bubblewrap "     \
	"(default) or not\n"                                                  \
	"  --log-level LEVEL    debug, info, warn, error, off (logs go to "   \
	"stderr)\n"                                                           \
	"  --json               print the result as JSON instead of a table\n"

/* Sets co to the defaults (log level warn). */
void cli_common_init(struct cli_common *co);

/* Takes the common options (--data-dir DIR / --data-dir=DIR, --kb,
 * --sandbox, --log-level, --json, --max-message-bytes,
 * --conformance-fixtures) out of argv[1..], shifting the rest down in order
 * and updating *argc; argv[0] stays. Returns 0, or KF_EINVAL with err
 * naming the bad option and value. */
int cli_common_parse(struct cli_common *co, int *argc, char **argv, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Matches the option name ("--trials") at argv[*i], given as "--name VALUE"
 * or "--name=VALUE". Returns the value (borrowed from argv; "" for
 * "--name="), advancing *i past a separate VALUE; NULL when argv[*i] is
 * some other argument. When argv[*i] is exactly name and nothing follows
 * it, returns NULL and sets *missing to 1; *missing is never cleared, so
 * callers set it to 0 before each argument. */
const char *cli_opt_value(int argc, char **argv, int *i, const char *name, int *missing);

/* Sets the log level and opens the app from co (app_tools_load included).
 * Returns 0 and *out (free with app_close), or a KF_E* code with err set. */
int cli_app_open(const struct cli_common *co, struct app **out, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Prints a tool's structuredContent: with json, JSON indented by two and a
 * newline; otherwise the summary line, then the other members as "key: value" lines,
 * arrays of objects as aligned tables. result: borrowed. */
void cli_print_result(FILE *f, const json_t *result, int json);

/* Calls tool with args (taken) in an app opened from co and closed again.
 * Returns CLI_EXIT_OK with *result (new) and *is_error set, or the exit
 * code of a failure before an answer (the app could not open: 5; the
 * arguments fail the schema: 2; an unknown tool: 4), said on stderr. Every
 * tool-calling command goes through here; how it shows the answer is its
 * own. */
int cli_tool_call(const struct cli_common *co, const char *tool, json_t *args, json_t **result,
		  int *is_error);

/* The exit code of a tool's answer (result borrowed): CLI_EXIT_OK, or for a
 * tool error its "error.code" no_gpu -> 3, not_found -> 4, sandbox/db/io
 * -> 5, busy/timeout -> 6, cancelled -> 130, else 1, an argument the tool
 * refused (invalid) included (docs/cli.md). */
int cli_answer_exit(const json_t *result, int is_error);

/* The whole of a tool-calling command: cli_tool_call, the result printed
 * to stdout with cli_print_result (a tool error to stderr unless --json),
 * and cli_answer_exit's code. */
int cli_tool_run(const struct cli_common *co, const char *tool, json_t *args);

/* cli_tool_run with the readable form of a successful result printed by
 * print (result borrowed) instead of cli_print_result; --json and errors
 * print as cli_tool_run does. print NULL = cli_tool_run. */
int cli_tool_run_print(const struct cli_common *co, const char *tool, json_t *args,
		       void (*print)(FILE *f, const json_t *result));

/* Maps a KF_E* code to a CLI_EXIT_* code. */
int cli_exit_code(int kf_code);

/* Prints "kforge CMD: <message>\n" and the command's synopsis hint to
 * stderr; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reads the spec file path ("-" = stdin) for command cmd, with its
 * "source_file" entries (candidate, reference, baseline) read in as
 * "source". Returns a new object, or NULL after printing why to stderr. */
json_t *cli_load_spec(const char *cmd, const char *path);

/* Finds a command by name in every table. Returns borrowed or NULL. */
const struct cli_cmd *cli_find(const char *name);

/* The entry point main() calls: dispatches argv[1]. Returns the exit code. */
int cli_main(int argc, char **argv);

/* serve's executor options (cli_exec.c): takes the option at argv[*i] when
 * it is one of --executor, --partition, --gres, --account, --time-limit,
 * --shared-dir, --max-jobs-per-client, --slurm-poll-ms into xc (values
 * borrowed from argv). Returns 1 (taken), 0 (another option) or KF_EINVAL
 * naming the option. */
struct exec_config;
int cli_exec_serve_opt(int argc, char **argv, int *i, struct exec_config *xc, struct kf_err *err);

/* kforge calibrate on this host's GPU device (-1: the first free one),
 * recorded as a calibrate run: *out (new) the calibration, or an error
 * result. Returns bench_calibrate's code (cli_gpu.c; also what a Slurm
 * node runs for the calibrate job). */
int cli_calibrate_result(struct app *app, int device, json_t **out, struct kf_err *err);

/* KF_EINVAL when Slurm options were given without --executor slurm. */
int cli_exec_serve_check(const struct exec_config *xc, struct kf_err *err);

#endif
