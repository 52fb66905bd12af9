/* cli: `kforge` argument dispatch, the common options, result printing, and
 * the core commands (serve, tools, call, version). Other commands live in
 * their owners' cli_<x>.c files, listed in TABLES below (one line each). */
#include "server/cli/cli.h"

#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "server/cli/cli_opts.h"
#include "server/mcp/mcp.h"
#include "server/mcp/schema.h"
#include "server/mcp/tools.h"
#include "sandbox/exec/exec.h"
#include "server/transport/transport.h"
#include "base/version.h"

/* Every command table, in the order `kforge --help` lists them. */
static const struct cli_cmd *const TABLES[] = {
	CLI_CORE, CLI_SETUP, CLI_DEMO,	CLI_OPS,     CLI_KB,   CLI_COMPILE, CLI_RUNS,
	CLI_GPU,  CLI_EXEC,  CLI_MODEL, CLI_DATASET, CLI_EVAL, CLI_TORCH,   CLI_PROFILE,
};

#define TABLES_LEN		(sizeof(TABLES) / sizeof(TABLES[0]))
#define CLI_JSON_ARGS_MAX_BYTES (8u << 20)

/* --- common options ---------------------------------------------------------- */

void cli_common_init(struct cli_common *co)
{
	memset(co, 0, sizeof(*co));
	co->sandbox = APP_SANDBOX_BWRAP;
	co->log_level = LOG_WARN;
}

const char *cli_opt_value(int argc, char **argv, int *i, const char *name, int *missing)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != '\0')
		return NULL;
	if (*i + 1 >= argc) {
		*missing = 1;
		return NULL;
	}
	return argv[++*i];
}

static int parse_size(const char *s, size_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (*end || v == 0 || v > (1ull << 30))
		return -1;
	*out = (size_t)v;
	return 0;
}

int cli_common_parse(struct cli_common *co, int *argc, char **argv, struct kf_err *err)
{
	int out = 1;

	for (int i = 1; i < *argc; i++) {
		const char *v = NULL;
		int missing = 0;

		if (strcmp(argv[i], "--") == 0) {
			while (i < *argc)
				argv[out++] = argv[i++];
			break;
		}
		if ((v = cli_opt_value(*argc, argv, &i, "--data-dir", &missing)) || missing) {
			if (missing || !*v)
				return kf_err_set(err, KF_EINVAL, "--data-dir needs a directory");
			co->data_dir = v;
		} else if ((v = cli_opt_value(*argc, argv, &i, "--kb", &missing)) || missing) {
			if (missing || !*v)
				return kf_err_set(err, KF_EINVAL, "--kb needs a knowledge.db path");
			co->kb_path = v;
		} else if ((v = cli_opt_value(*argc, argv, &i, "--sandbox", &missing)) || missing) {
			if (v && strcmp(v, "none") == 0)
				co->sandbox = APP_SANDBOX_NONE;
			else if (v && strcmp(v, "bwrap") == 0)
				co->sandbox = APP_SANDBOX_BWRAP;
			else
				return kf_err_set(err, KF_EINVAL,
						  "--sandbox must be bwrap or none, not '%s'",
						  v ? v : "");
		} else if ((v = cli_opt_value(*argc, argv, &i, "--log-level", &missing)) ||
			   missing) {
			int l = v ? log_level_parse(v) : -1;
			if (l < 0)
				return kf_err_set(
					err, KF_EINVAL,
					"--log-level must be debug, info, warn, error or off, not '%s'",
					v ? v : "");
			co->log_level = l;
		} else if ((v = cli_opt_value(*argc, argv, &i, "--max-message-bytes", &missing)) ||
			   missing) {
			if (missing || parse_size(v, &co->max_message_bytes))
				return kf_err_set(
					err, KF_EINVAL,
					"--max-message-bytes needs a size from 1 to 1G (e.g. 8M), not '%s'",
					v ? v : "");
		} else if (strcmp(argv[i], "--json") == 0) {
			co->json = 1;
		} else if (strcmp(argv[i], "--conformance-fixtures") == 0) {
			co->conformance_fixtures = 1;
		} else {
			argv[out++] = argv[i];
		}
	}
	*argc = out;
	argv[out] = NULL;
	return 0;
}

int cli_app_open(const struct cli_common *co, struct app **out, struct kf_err *err)
{
	struct app_config cfg = {0};
	int rc;

	log_set_level(co->log_level);
	rc = app_tools_load(co->conformance_fixtures, err);
	if (rc)
		return rc;
	cfg.data_dir = co->data_dir;
	cfg.kb_path = co->kb_path;
	cfg.sandbox = co->sandbox;
	cfg.max_message_bytes = co->max_message_bytes;
	cfg.log_level = co->log_level;
	cfg.conformance_fixtures = co->conformance_fixtures;
	cfg.exec = co->exec;
	cfg.max_jobs_per_client = co->max_jobs_per_client;
	cfg.queued_jobs_per_client = co->queued_jobs_per_client;
	cfg.warm_harness = co->warm_harness;
	return app_open(&cfg, out, err);
}

int cli_exit_code(int kf_code)
{
	switch (kf_code) {
	case KF_OK: return CLI_EXIT_OK;
	case KF_EINVAL: return CLI_EXIT_USAGE;
	case KF_ENOGPU: return CLI_EXIT_NOGPU;
	case KF_ENOTFOUND: return CLI_EXIT_NOTFOUND;
	case KF_EIO:
	case KF_EDB:
	case KF_ESANDBOX: return CLI_EXIT_ENV;
	case KF_EBUSY:
	case KF_ETIMEOUT: return CLI_EXIT_BUSY;
	case KF_ECANCELED: return CLI_EXIT_CANCELED;
	default: return CLI_EXIT_FAIL;
	}
}

static int exit_of_name(const char *name)
{
	static const int codes[] = {KF_ENOGPU,	  KF_ENOTFOUND, KF_EBUSY, KF_ETIMEOUT,
				    KF_ECANCELED, KF_ESANDBOX,	KF_EDB,	  KF_EIO};

	for (size_t i = 0; name && i < sizeof(codes) / sizeof(codes[0]); i++)
		if (strcmp(name, kf_err_name(codes[i])) == 0)
			return cli_exit_code(codes[i]);
	return CLI_EXIT_FAIL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "kforge %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(see: kforge %s --help)\n", cmd);
	return CLI_EXIT_USAGE;
}

/* --- printing ------------------------------------------------------------------ */

#define CELL_MAX 40
#define COLS_MAX 10

static void scalar_text(const json_t *v, char *buf, size_t cap)
{
	if (json_is_string(v)) {
		snprintf(buf, cap, "%s", json_string_value(v));
	} else if (json_is_integer(v)) {
		snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
	} else if (json_is_real(v)) {
		snprintf(buf, cap, "%.6g", json_real_value(v));
	} else if (json_is_boolean(v)) {
		snprintf(buf, cap, "%s", json_is_true(v) ? "yes" : "no");
	} else if (json_is_null(v) || !v) {
		snprintf(buf, cap, "-");
	} else {
		char *s = json_dumps(v, JSON_COMPACT);
		snprintf(buf, cap, "%s", s ? s : "?");
		free(s);
	}
	for (char *p = buf; *p; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
}

static int is_scalar(const json_t *v)
{
	return !json_is_object(v) && !json_is_array(v);
}

static int all_objects(const json_t *arr)
{
	size_t i;
	json_t *v;

	if (json_array_size(arr) == 0)
		return 0;
	json_array_foreach(arr, i, v)
		if (!json_is_object(v))
			return 0;
	return 1;
}

static void print_table(FILE *f, const json_t *rows, int indent)
{
	const char *cols[COLS_MAX];
	size_t ncols = 0, width[COLS_MAX], i;
	char cell[CELL_MAX + 1];
	json_t *row, *v;
	const char *key;

	json_array_foreach(rows, i, row) {
		json_object_foreach(row, key, v) {
			size_t c;
			if (!is_scalar(v) && !(json_is_array(v) && json_array_size(v) <= 4))
				continue;
			for (c = 0; c < ncols && strcmp(cols[c], key) != 0; c++)
				;
			if (c == ncols && ncols < COLS_MAX)
				cols[ncols++] = key;
		}
	}
	for (size_t c = 0; c < ncols; c++) {
		width[c] = strlen(cols[c]);
		json_array_foreach(rows, i, row) {
			scalar_text(json_object_get(row, cols[c]), cell, sizeof(cell));
			if (strlen(cell) > width[c])
				width[c] = strlen(cell);
		}
	}
	fprintf(f, "%*s", indent, "");
	for (size_t c = 0; c < ncols; c++)
		fprintf(f, "%-*s%s", (int)width[c], cols[c], c + 1 < ncols ? "  " : "\n");
	json_array_foreach(rows, i, row) {
		fprintf(f, "%*s", indent, "");
		for (size_t c = 0; c < ncols; c++) {
			scalar_text(json_object_get(row, cols[c]), cell, sizeof(cell));
			fprintf(f, "%-*s%s", (int)width[c], cell, c + 1 < ncols ? "  " : "\n");
		}
	}
}

static void print_members(FILE *f, const json_t *obj, int indent, int depth)
{
	char cell[512];
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v) {
		if (depth == 0 && strcmp(key, "summary") == 0)
			continue;
		if (is_scalar(v)) {
			scalar_text(v, cell, sizeof(cell));
			fprintf(f, "%*s%s: %s\n", indent, "", key, cell);
		} else if (json_is_array(v) && all_objects(v) && depth < 3) {
			fprintf(f, "%*s%s:\n", indent, "", key);
			print_table(f, v, indent + 2);
		} else if (json_is_object(v) && depth < 3) {
			fprintf(f, "%*s%s:\n", indent, "", key);
			print_members(f, v, indent + 2, depth + 1);
		} else {
			char *s = json_dumps(v, JSON_COMPACT);
			fprintf(f, "%*s%s: %s\n", indent, "", key, s ? s : "?");
			free(s);
		}
	}
}

void cli_print_result(FILE *f, const json_t *result, int json)
{
	const char *summary = json_string_value(json_object_get(result, "summary"));

	if (json) {
		char *s = json_dumps(result, JSON_INDENT(2));
		fprintf(f, "%s\n", s ? s : "null");
		free(s);
		return;
	}
	if (summary)
		fprintf(f, "%s\n", summary);
	print_members(f, result, summary ? 2 : 0, 0);
}

int cli_tool_run(const struct cli_common *co, const char *tool, json_t *args)
{
	return cli_tool_run_print(co, tool, args, NULL);
}

int cli_tool_call(const struct cli_common *co, const char *tool, json_t *args, json_t **result,
		  int *is_error)
{
	struct kf_err err = {0};
	struct app *app = NULL;
	int rc = cli_app_open(co, &app, &err);

	*result = NULL;
	*is_error = 0;
	if (rc) {
		json_decref(args);
		fprintf(stderr, "kforge: %s\n", err.msg);
		return rc == KF_EINVAL ? CLI_EXIT_ENV : cli_exit_code(rc);
	}
	rc = mcp_tool_call(app, tool, args, result, is_error, &err);
	json_decref(args);
	app_close(app);
	if (rc) {
		fprintf(stderr, "kforge %s: %s\n", tool, err.msg);
		return cli_exit_code(rc);
	}
	return CLI_EXIT_OK;
}

int cli_answer_exit(const json_t *result, int is_error)
{
	if (!is_error)
		return CLI_EXIT_OK;
	return exit_of_name(
		json_string_value(json_object_get(json_object_get(result, "error"), "code")));
}

int cli_tool_run_print(const struct cli_common *co, const char *tool, json_t *args,
		       void (*print)(FILE *f, const json_t *result))
{
	json_t *result;
	int is_error, rc = cli_tool_call(co, tool, args, &result, &is_error);

	if (rc)
		return rc;
	if (print && !is_error && !co->json)
		print(stdout, result);
	else
		cli_print_result(is_error && !co->json ? stderr : stdout, result, co->json);
	rc = cli_answer_exit(result, is_error);
	json_decref(result);
	return rc;
}

/* --- serve --------------------------------------------------------------------- */

static const char SERVE_USAGE[] =
	"usage: kforge serve [--stdio | --http [ADDR:]PORT] [options]\n"
	"\n"
	"Runs the MCP server. With no transport option it speaks MCP over\n"
	"stdin/stdout (one JSON message per line), which is how Claude Code and\n"
	"Codex start it. With --http it serves Streamable HTTP at /mcp, REST\n"
	"under /v1 and the web page at /, bound to 127.0.0.1 unless ADDR says\n"
	"otherwise; binding beyond loopback requires --token-env or --token-file.\n"
	"\n"
	"Options:\n"
	"  --stdio                 serve one session on stdin/stdout (default)\n"
	"  --http [ADDR:]PORT      serve HTTP (ADDR default 127.0.0.1; PORT 0 picks one)\n"
	"  --token-env VAR         require 'Authorization: Bearer $VAR' on HTTP\n"
	"  --token-file FILE       accept the tokens of FILE, one 'NAME SECRET' line\n"
	"                          each (mode 600); each token is one client for the\n"
	"                          per-client caps, its name in logs\n"
	"  --allow-origin ORIGIN   also accept this Origin (repeatable)\n"
	"  --allow-host NAME       also accept this Host name on loopback (repeatable)\n"
	"  --session-idle SECONDS  expire idle HTTP sessions (default 1800)\n"
	"  --port-file FILE        write the bound HTTP port to FILE\n"
	"  --max-sessions N        open HTTP sessions at most (default 1024; 503 past it)\n"
	"  --max-sessions-per-client N  sessions per client: token, else address\n"
	"                          (default 64)\n"
	"  --max-inflight N        HTTP requests awaiting an answer at most (default 1024)\n"
	"  --max-inflight-per-client N  of those per client (default 256; 429 past it)\n"
	"  --max-conns-per-ip N    connections per client address (default 256)\n"
	"  --request-timeout SECONDS  a request's header and body arrive within this\n"
	"                          (default 30)\n"
	"  --max-upload-total N    request bodies held at once (default 64M; 503 past it)\n"
	"  --http-threads N        HTTP worker threads (default: the CPU count)\n"
	"  --max-message-bytes N   cap one JSON-RPC message / request body\n"
	"                          (default 8M; K and M suffixes)\n"
	"  --conformance-fixtures  register the MCP conformance-suite test tools,\n"
	"                          resources and prompts (tests only)\n"
	"  --executor local|slurm  where checks and benchmarks run (default local:\n"
	"                          this host's GPUs); slurm needs --partition and\n"
	"                          --shared-dir (docs/runs.md)\n"
	"  --partition P --gres G --account A --time-limit T --shared-dir DIR\n"
	"  --max-jobs-per-client N  Slurm job settings (gres default gpu:1; per\n"
	"                          client at most N jobs at Slurm, default 16)\n"
	"  --max-jobs-per-token N  GPU jobs (check, bench, model, torch-op) one client\n"
	"                          runs at once, local or Slurm (default 16); a client\n"
	"                          is a bearer token's name with --token-file/--token-env,\n"
	"                          else an MCP session\n"
	"  --max-queued-jobs-per-token N  its jobs waiting beyond those (default 64;\n"
	"                          past it: busy)\n" CLI_COMMON_HELP "\n"
	"Exit status: 0 after a clean shutdown (EOF on stdin, SIGINT/SIGTERM),\n"
	"2 for a bad command line, 5 when it cannot start (port in use, data dir\n"
	"not writable, no sbatch, unknown partition, missing shared dir), 1 on\n"
	"other failures.\n"
	"\n"
	"Examples:\n"
	"  eval \"$(kforge mcp-config claude)\"   # claude mcp add --scope user kforge -- ...\n"
	"  kforge serve --http 127.0.0.1:7070\n"
	"  KFORGE_TOKEN=secret kforge serve --http 0.0.0.0:7070 --token-env KFORGE_TOKEN\n";

static int parse_addr_port(const char *s, char *addr, size_t cap, int *port)
{
	const char *colon = strrchr(s, ':');
	const char *p = colon ? colon + 1 : s;
	char *end;
	long v;

	if (colon) {
		size_t n = (size_t)(colon - s);
		if (n == 0 || n >= cap)
			return -1;
		if (s[0] == '[' && s[n - 1] == ']') {
			s++;
			n -= 2;
		}
		memcpy(addr, s, n);
		addr[n] = '\0';
	} else {
		snprintf(addr, cap, "127.0.0.1");
	}
	errno = 0;
	v = strtol(p, &end, 10);
	if (errno || end == p || *end || v < 0 || v > 65535)
		return -1;
	*port = (int)v;
	return 0;
}

#define SERVE_NAMES_MAX 16 /* --allow-origin and --allow-host values each */

/* The options only --http takes, collected into ho. */
struct serve_http {
	struct http_options ho;
	const char *origins[SERVE_NAMES_MAX + 1];
	const char *hosts[SERVE_NAMES_MAX + 1];
	size_t norigins, nhosts;
};

/* The count options: each an unsigned field of struct http_options. */
static const struct {
	const char *name;
	size_t off;
	long max;
} SERVE_COUNTS[] = {
	{"--max-sessions", offsetof(struct http_options, max_sessions), 1000000},
	{"--max-inflight", offsetof(struct http_options, max_inflight), 1000000},
	{"--http-threads", offsetof(struct http_options, threads), 1000000},
	{"--max-sessions-per-client", offsetof(struct http_options, max_sessions_per_client),
	 1000000},
	{"--max-conns-per-ip", offsetof(struct http_options, max_conns_per_ip), 1000000},
	{"--max-inflight-per-client", offsetof(struct http_options, max_inflight_per_client),
	 1000000},
	{"--request-timeout", offsetof(struct http_options, request_timeout_s), 86400},
	{"--session-idle", offsetof(struct http_options, session_idle_s), 86400 * 7},
};

/* Appends v to a NULL-terminated list of at most SERVE_NAMES_MAX. */
static int serve_name(const char **list, size_t *n, const char *opt, const char *v, int missing,
		      const char *example, struct kf_err *err)
{
	if (missing || !*v || *n >= SERVE_NAMES_MAX)
		return kf_err_set(err, KF_EINVAL, "%s needs a value such as %s (at most %d)", opt,
				  example, SERVE_NAMES_MAX);
	list[(*n)++] = v;
	return 1;
}

/* argv[*i] as one of the --http options: 1 taken into sh, 0 not one of
 * them, KF_EINVAL with err set for a bad value. */
static int serve_http_opt(int argc, char **argv, int *i, struct serve_http *sh, struct kf_err *err)
{
	const char *v;
	int missing = 0;

	for (size_t k = 0; k < sizeof(SERVE_COUNTS) / sizeof(SERVE_COUNTS[0]); k++) {
		char *end;
		long n;
		if (!(v = cli_opt_value(argc, argv, i, SERVE_COUNTS[k].name, &missing)) && !missing)
			continue;
		n = v ? strtol(v, &end, 10) : -1;
		if (missing || *end || n < 1 || n > SERVE_COUNTS[k].max)
			return kf_err_set(err, KF_EINVAL,
					  "%s needs a count from 1 to %ld, not '%s'",
					  SERVE_COUNTS[k].name, SERVE_COUNTS[k].max, v ? v : "");
		*(unsigned *)(void *)((char *)&sh->ho + SERVE_COUNTS[k].off) = (unsigned)n;
		return 1;
	}
	if ((v = cli_opt_value(argc, argv, i, "--allow-origin", &missing)) || missing)
		return serve_name(sh->origins, &sh->norigins, "--allow-origin", v, missing,
				  "http://localhost:3000", err);
	if ((v = cli_opt_value(argc, argv, i, "--allow-host", &missing)) || missing)
		return serve_name(sh->hosts, &sh->nhosts, "--allow-host", v, missing, "gpu-box.lan",
				  err);
	if ((v = cli_opt_value(argc, argv, i, "--token-env", &missing)) || missing) {
		if (missing || !*v)
			return kf_err_set(err, KF_EINVAL, "--token-env needs a variable name");
		sh->ho.token_env = v;
		return 1;
	}
	if ((v = cli_opt_value(argc, argv, i, "--token-file", &missing)) || missing) {
		if (missing || !*v)
			return kf_err_set(err, KF_EINVAL,
					  "--token-file needs a file of 'NAME SECRET' lines");
		sh->ho.token_file = v;
		return 1;
	}
	if ((v = cli_opt_value(argc, argv, i, "--port-file", &missing)) || missing) {
		if (missing || !*v)
			return kf_err_set(err, KF_EINVAL, "--port-file needs a path");
		sh->ho.port_file = v;
		return 1;
	}
	if ((v = cli_opt_value(argc, argv, i, "--max-upload-total", &missing)) || missing) {
		if (missing || parse_size(v, &sh->ho.max_upload_total))
			return kf_err_set(err, KF_EINVAL,
					  "--max-upload-total needs a size from 1 to 1G (e.g. "
					  "64M), not '%s'",
					  v ? v : "");
		return 1;
	}
	return 0;
}

/* --max-jobs-per-token and --max-queued-jobs-per-token into co: 1 taken,
 * 0 not one of them, KF_EINVAL with err set for a bad value. */
static int serve_jobs_opt(int argc, char **argv, int *i, struct cli_common *co, struct kf_err *err)
{
	static const char *const names[2] = {"--max-jobs-per-token", "--max-queued-jobs-per-token"};
	int *fields[2] = {&co->max_jobs_per_client, &co->queued_jobs_per_client};
	const char *v;
	int missing = 0;

	for (int k = 0; k < 2; k++) {
		char *end;
		long n;
		if (!(v = cli_opt_value(argc, argv, i, names[k], &missing)) && !missing)
			continue;
		n = v ? strtol(v, &end, 10) : -1;
		if (missing || *end || n < 1 || n > 4096)
			return kf_err_set(err, KF_EINVAL,
					  "%s needs a count from 1 to 4096, not '%s'", names[k],
					  v ? v : "");
		*fields[k] = (int)n;
		return 1;
	}
	return 0;
}

static int cmd_serve(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};
	struct serve_http sh;
	char addr[256];
	struct app *app = NULL;
	struct exec_config xc = {0};
	int http = 0, seen = 0, rc;

	memset(&sh, 0, sizeof(sh));
	cli_common_init(&co);
	co.log_level = LOG_INFO;
	if (cli_common_parse(&co, &argc, argv, &err))
		return cli_usage_error("serve", "%s", err.msg);
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		int missing = 0;
		if (strcmp(argv[i], "--stdio") == 0) {
			http = 0;
		} else if ((v = cli_opt_value(argc, argv, &i, "--http", &missing)) || missing) {
			if (missing || parse_addr_port(v, addr, sizeof(addr), &sh.ho.port))
				return cli_usage_error(
					"serve",
					"--http needs [ADDR:]PORT with PORT 0-65535, not '%s'",
					v ? v : "");
			http = 1;
		} else if ((rc = serve_jobs_opt(argc, argv, &i, &co, &err)) != 0) {
			if (rc < 0)
				return cli_usage_error("serve", "%s", err.msg);
		} else if ((rc = serve_http_opt(argc, argv, &i, &sh, &err)) != 0) {
			if (rc < 0)
				return cli_usage_error("serve", "%s", err.msg);
			seen = 1;
		} else if ((rc = cli_exec_serve_opt(argc, argv, &i, &xc, &err)) != 0) {
			if (rc < 0)
				return cli_usage_error("serve", "%s", err.msg);
		} else {
			return cli_usage_error("serve", "unknown option '%s'", argv[i]);
		}
	}
	if (!http && seen)
		return cli_usage_error(
			"serve",
			"--token-env, --token-file, --allow-origin, --allow-host, --port-file and "
			"the HTTP limits (--session-idle, --max-*, --request-timeout, "
			"--http-threads) need --http");

	if (cli_exec_serve_check(&xc, &err))
		return cli_usage_error("serve", "%s", err.msg);
	xc.sandbox_none = co.sandbox == APP_SANDBOX_NONE;
	co.exec = &xc;
	co.warm_harness = 1; /* the daemon serves many jobs: spares pay off */
	rc = cli_app_open(&co, &app, &err);
	if (rc) {
		fprintf(stderr, "kforge serve: %s\n", err.msg);
		return CLI_EXIT_ENV;
	}
	if (http) {
		sh.ho.addr = addr;
		sh.ho.max_body_bytes = app->cfg.max_message_bytes;
		sh.ho.allowed_origins = sh.norigins ? sh.origins : NULL;
		sh.ho.allowed_hosts = sh.nhosts ? sh.hosts : NULL;
		sh.ho.streams = &CLI_DATASET_STREAM;
		sh.ho.streams_len = 1;
		rc = transport_http_run(app, &sh.ho, &err);
	} else {
		rc = transport_stdio_run(app, STDIN_FILENO, STDOUT_FILENO, &err);
	}
	if (rc)
		fprintf(stderr, "kforge serve: %s\n", err.msg);
	app_close(app);
	if (rc == KF_EINVAL)
		return CLI_EXIT_USAGE;
	if (rc == KF_EIO || rc == KF_EPERM)
		return http ? CLI_EXIT_ENV : CLI_EXIT_FAIL;
	return rc ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

/* --- tools, call, version ---------------------------------------------------- */

static const char TOOLS_USAGE[] =
	"usage: kforge tools [NAME] [--json] [--conformance-fixtures]\n"
	"\n"
	"Lists the MCP tools kforge offers (name, read-only or not, title), or\n"
	"with NAME prints that tool's description and input schema.\n";

static int cmd_tools(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};
	const struct tool_def *t;

	cli_common_init(&co);
	if (cli_common_parse(&co, &argc, argv, &err))
		return cli_usage_error("tools", "%s", err.msg);
	if (argc > 2)
		return cli_usage_error("tools", "takes at most one tool name");
	if (app_tools_load(co.conformance_fixtures, &err)) {
		fprintf(stderr, "kforge tools: %s\n", err.msg);
		return CLI_EXIT_FAIL;
	}
	if (argc == 2) {
		t = tools_find(argv[1]);
		if (!t) {
			fprintf(stderr, "kforge tools: unknown tool '%s' (run `kforge tools`)\n",
				argv[1]);
			return CLI_EXIT_NOTFOUND;
		}
		if (co.json) {
			char *s = json_dumps(schema_json(tools_input_schema(t)), JSON_INDENT(2));
			printf("%s\n", s ? s : "null");
			free(s);
		} else {
			char *s = json_dumps(schema_json(tools_input_schema(t)), JSON_INDENT(2));
			printf("%s — %s\n\n%s\n\ninput schema:\n%s\n", t->name,
			       t->title ? t->title : "", t->description, s ? s : "");
			free(s);
		}
		return CLI_EXIT_OK;
	}
	if (tools_count() == 0)
		printf("no tools are registered in this build\n");
	for (size_t i = 0; i < tools_count(); i++) {
		t = tools_at(i);
		if (co.json)
			printf("%s\n", t->name);
		else
			printf("%-20s %-10s %s\n", t->name,
			       t->annotations & TOOL_READ_ONLY ? "read-only" : "",
			       t->title ? t->title : "");
	}
	return CLI_EXIT_OK;
}

static const char CALL_USAGE[] =
	"usage: kforge call TOOL [ARGS-JSON | -] [options]\n"
	"\n"
	"Calls any MCP tool by name with a JSON object of arguments (from the\n"
	"command line, or from stdin with '-'), exactly as an agent would, and\n"
	"prints the result as a table (or JSON with --json).\n"
	"\n" CLI_COMMON_HELP "\n"
	"Examples:\n"
	"  kforge call get_gpu_specs '{\"gpu\": \"H100\"}'\n"
	"  kforge call check_kernel - < spec.json\n";

static json_t *read_json_stdin(struct kf_err *err)
{
	size_t cap = 65536, used = 0;
	char *buf = malloc(cap);
	json_error_t jerr;
	json_t *v = NULL;

	if (!buf) {
		kf_err_set(err, KF_ENOMEM, "out of memory");
		return NULL;
	}
	for (;;) {
		size_t n;
		if (used == cap) {
			char *nb;
			if (cap >= CLI_JSON_ARGS_MAX_BYTES) {
				kf_err_set(err, KF_ETOOBIG, "stdin: arguments over %u bytes",
					   CLI_JSON_ARGS_MAX_BYTES);
				goto out;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				kf_err_set(err, KF_ENOMEM, "out of memory");
				goto out;
			}
			buf = nb;
			cap *= 2;
		}
		n = fread(buf + used, 1, cap - used, stdin);
		if (n == 0)
			break;
		used += n;
	}
	v = json_loadb(buf, used, 0, &jerr);
	if (!v)
		kf_err_set(err, KF_EINVAL, "stdin: not JSON: %s (line %d)", jerr.text, jerr.line);
out:
	free(buf);
	return v;
}

static int cmd_call(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};
	json_error_t jerr;
	json_t *args;

	cli_common_init(&co);
	if (cli_common_parse(&co, &argc, argv, &err))
		return cli_usage_error("call", "%s", err.msg);
	if (argc < 2 || argc > 3)
		return cli_usage_error("call", "needs TOOL and optionally ARGS-JSON");
	if (argc == 2) {
		args = json_object();
	} else if (strcmp(argv[2], "-") == 0) {
		args = read_json_stdin(&err);
		if (!args)
			return cli_usage_error("call", "%s", err.msg);
	} else {
		args = json_loads(argv[2], 0, &jerr);
		if (!args)
			return cli_usage_error("call", "ARGS-JSON is not JSON: %s (column %d)",
					       jerr.text, jerr.column);
	}
	if (!json_is_object(args)) {
		json_decref(args);
		return cli_usage_error("call", "ARGS-JSON must be a JSON object");
	}
	return cli_tool_run(&co, argv[1], args);
}

static const char VERSION_USAGE[] = "usage: kforge version\n\nPrints kforge's version.\n";

static int cmd_version(int argc, char **argv)
{
	(void)argv;
	if (argc > 1)
		return cli_usage_error("version", "takes no arguments");
	printf("kforge %s\n", KFORGE_VERSION);
	return CLI_EXIT_OK;
}

const struct cli_cmd CLI_CORE[] = {
	{"serve", "run the MCP server (stdio by default, or --http)", SERVE_USAGE, cmd_serve, NULL,
	 NULL},
	{"tools", "list the MCP tools, or show one tool's input schema", TOOLS_USAGE, cmd_tools,
	 NULL, NULL},
	{"call", "call any MCP tool with JSON arguments", CALL_USAGE, cmd_call, NULL, NULL},
	{"version", "print the version", VERSION_USAGE, cmd_version, NULL, NULL},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};

/* --- dispatch ---------------------------------------------------------------------- */

const struct cli_cmd *cli_find(const char *name)
{
	for (size_t t = 0; t < TABLES_LEN; t++)
		for (const struct cli_cmd *c = TABLES[t]; c->name; c++)
			if (strcmp(c->name, name) == 0)
				return c;
	return NULL;
}

int cli_cmd_help(FILE *f, const struct cli_cmd *c)
{
	struct kf_err err = {0};

	fputs(c->usage, f);
	if (c->opts && cli_opts_help(f, c->opts, &err)) {
		fprintf(stderr, "kforge %s: %s\n", c->name, err.msg);
		return CLI_EXIT_FAIL;
	}
	if (c->usage_tail)
		fputs(c->usage_tail, f);
	return CLI_EXIT_OK;
}

static void print_help(FILE *f)
{
	fprintf(f,
		"kforge %s — a CUDA kernel workbench for coding agents (MCP server + CLI)\n"
		"\n"
		"usage: kforge COMMAND [options]\n"
		"       kforge help COMMAND | kforge COMMAND --help\n"
		"       kforge --version\n"
		"\n"
		"Commands:\n",
		KFORGE_VERSION);
	for (size_t t = 0; t < TABLES_LEN; t++)
		for (const struct cli_cmd *c = TABLES[t]; c->name; c++)
			fprintf(f, "  %-14s %s\n", c->name, c->summary);
	fprintf(f, "\n"
		   "Exit status: 0 ok, 1 failed, 2 bad usage, 3 no GPU, 4 not found,\n"
		   "5 cannot start (data dir, knowledge base, sandbox, port), 6 busy or\n"
		   "timed out (retry), 130 interrupted. See docs/cli.md.\n");
}

int cli_main(int argc, char **argv)
{
	const struct cli_cmd *c;

	if (argc < 2) {
		print_help(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("kforge %s\n", KFORGE_VERSION);
		return CLI_EXIT_OK;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		if (argc > 2) {
			c = cli_find(argv[2]);
			if (!c) {
				fprintf(stderr,
					"kforge: unknown command '%s' (run `kforge --help`)\n",
					argv[2]);
				return CLI_EXIT_USAGE;
			}
			return cli_cmd_help(stdout, c);
		}
		print_help(stdout);
		return CLI_EXIT_OK;
	}
	c = cli_find(argv[1]);
	if (!c) {
		fprintf(stderr, "kforge: unknown command '%s' (run `kforge --help`)\n", argv[1]);
		return CLI_EXIT_USAGE;
	}
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return cli_cmd_help(stdout, c);
	}
	return c->run(argc - 1, argv + 1);
}
