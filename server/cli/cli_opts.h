/* cli_opts: a command's options bound to the properties of the tool it
 * calls. The option's spelling lives here; its type, bounds, enum, default
 * and help line come from the tool's inputSchema in the registry
 * (server/mcp/tools.h), the same document tools/list publishes and the
 * server validates against, so a bound changed in a schema changes the
 * CLI's validation and --help with it. Options only the CLI has (a file it
 * reads, a VAR=N list it splits) are listed too, for --help, and parsed by
 * their command. */
#ifndef KF_CLI_OPTS_H
#define KF_CLI_OPTS_H

#include <jansson.h>
#include <stdio.h>

#include "base/kf_err.h"

enum cli_opt_kind {
	CLI_OPT_VALUE = 0, /* --name VALUE: converted to the property's type */
	CLI_OPT_TRUE,	   /* --name: sets a boolean property to true */
	CLI_OPT_FALSE,	   /* --no-name: sets a boolean property to false */
	CLI_OPT_OWN	   /* parsed by the command; listed in --help only */
};

struct cli_opt {
	const char *name; /* "--trials" */
	const char *prop; /* "trials", or "replay.seed" for a member of an
				 * object property; NULL for CLI_OPT_OWN */
	enum cli_opt_kind kind;
	const char *metavar; /* "N" in --help; NULL for a flag */
	const char *help;    /* the help line; NULL = the property's
				 * "description" (required for CLI_OPT_OWN and
				 * for properties without one) */
};

/* The options of one command, bound to one tool. */
struct cli_opts {
	const char *tool;	    /* "check_kernel" */
	const struct cli_opt *opts; /* ended by an entry whose name is NULL */
};

/* Takes argv[*i] when it is one of o's schema-bound options ("--name
 * VALUE", "--name=VALUE" or a flag), advancing *i past a separate VALUE:
 * the value is converted to the property's type, checked against the
 * property's schema and stored in args (borrowed; a dotted prop creates the
 * object it lives in). Loads the daemon's tool registry (app_tools_load)
 * when none is loaded. Returns 1 (taken), 0 (not one of them, or a
 * CLI_OPT_OWN option) or KF_EINVAL with err naming the option, the value
 * and what the schema allows ("--trials: '50' is not an integer from 1 to
 * 20"), or a missing value. */
int cli_opts_take(const struct cli_opts *o, int argc, char **argv, int *i, json_t *args,
		  struct kf_err *err) __attribute__((warn_unused_result));

/* Prints o's options as help lines to f: "  --trials N   <help> (1-20,
 * default 3)", the description, range, enum and default taken from the
 * schema. Returns 0, or KF_EINVAL when the tool or a property is missing
 * from the registry (a table out of step with its schema). */
int cli_opts_help(FILE *f, const struct cli_opts *o, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Writes what schema (a property's, borrowed) allows as a phrase into buf:
 * "an integer from 1 to 20", "one of ok, failed, error", "a string of 1 to
 * 16 characters". Returns buf. */
const char *cli_opts_allowed(const json_t *schema, char *buf, size_t cap);

#endif
