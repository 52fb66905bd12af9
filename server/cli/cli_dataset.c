/* cli_dataset: `kforge dataset export` — the run history's verified
 * kernels as a dataset directory (sandbox/dataset): JSONL, a Hugging Face
 * dataset card and the record's JSON schema. */
#include "server/cli/cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/dataset/dataset.h"
#include "server/app.h"
#include "server/tools/tools_runs.h"
#include "server/transport/transport.h"

static const char DATASET_USAGE[] =
	"usage: kforge dataset export --out DIR [--since WHEN] [--op NAME] [--arch SM]\n"
	"                      [--gpu NAME] [--min-speedup F] [--trajectories]\n"
	"                      [--license ID] [--force] [--json]\n"
	"\n"
	"Writes the verified kernels of the run history as a dataset: DIR/data/\n"
	"kernels.jsonl (one record per kernel: task description and math, source,\n"
	"spec, GPU, versions, compile resources, check verdict, benchmark, lineage),\n"
	"DIR/README.md (a Hugging Face dataset card) and DIR/schema.json. A kernel is\n"
	"exported only when its benchmark passed (outputs verified after timing) and\n"
	"a check of the same source and spec passed every safeguard; sources are\n"
	"deduplicated after removing comments and whitespace (the fastest is kept).\n"
	"  --out DIR         where to write; must be missing or empty unless --force\n"
	"  --since WHEN      benchmarks since 2026-11-30, 2026-11-30T09:00:00Z, or an\n"
	"                    age: 30m, 6h, 7d\n"
	"  --op NAME         the built-in op, or a kernel name containing NAME\n"
	"  --arch SM         the compile target, e.g. sm_90\n"
	"  --gpu NAME        GPU name containing NAME (case-insensitive), e.g. H200\n"
	"  --min-speedup F   speedup over the baseline at least F\n"
	"  --trajectories    each record carries the runs it improved on, whole\n"
	"  --license ID      the records' license (default " DATASET_LICENSE ")\n"
	"  --force           write into a non-empty DIR (replaces the export's files)\n"
	"\n" CLI_COMMON_HELP "\n"
	"Example:\n"
	"  kforge dataset export --out kernels-h200 --gpu H200 --min-speedup 1\n";

/* The export filter's fields with a value, as the query of GET
 * /v1/dataset.jsonl names them and as export's options spell them. */
static const char *const FILTER_FIELDS[][2] = {
	{"since", "--since"},
	{"op", "--op"},
	{"arch", "--arch"},
	{"gpu", "--gpu"},
	{"min_speedup", "--min-speedup"},
	{"license", "--license"},
};

#define FILTER_FIELDS_LEN (sizeof FILTER_FIELDS / sizeof FILTER_FIELDS[0])

/* Sets the filter's field FILTER_FIELDS[k] from its text v (borrowed, kept
 * by f): the one reading of the filter for the CLI and the REST stream.
 * Returns 0, or KF_EINVAL with err naming the field ("since: ..."). */
static int filter_set(struct dataset_filter *f, size_t k, const char *v, struct kf_err *err)
{
	const char *key = FILTER_FIELDS[k][0];
	char *end;

	if (!strcmp(key, "since"))
		return tools_runs_parse_since(v, &f->since_ms, err);
	if (!strcmp(key, "min_speedup")) {
		f->min_speedup = strtod(v, &end);
		if (*end || end == v || !isfinite(f->min_speedup) || f->min_speedup < 0)
			return kf_err_set(err, KF_EINVAL,
					  "min_speedup: '%.40s' is not a number >= 0", v);
	} else if (!strcmp(key, "op"))
		f->op = v;
	else if (!strcmp(key, "arch"))
		f->arch = v;
	else if (!strcmp(key, "gpu"))
		f->gpu = v;
	else
		f->license = v;
	return 0;
}

/* Takes one option of export at argv[*i] into f / out / force. Returns 0,
 * 1 (not an export option) or CLI_EXIT_USAGE (printed). */
static int export_opt(int argc, char **argv, int *i, struct dataset_filter *f, const char **out,
		      int *force)
{
	int missing = 0;
	const char *v;
	struct kf_err err = {0};

	if ((v = cli_opt_value(argc, argv, i, "--out", &missing))) {
		*out = v;
		return 0;
	}
	for (size_t k = 0; k < FILTER_FIELDS_LEN && !missing; k++) {
		if (!(v = cli_opt_value(argc, argv, i, FILTER_FIELDS[k][1], &missing)))
			continue;
		if (filter_set(f, k, v, &err)) /* the message names the field as the option */
			return cli_usage_error("dataset", "%s%s", FILTER_FIELDS[k][1],
					       err.msg + strlen(FILTER_FIELDS[k][0]));
		return 0;
	}
	if (missing)
		return cli_usage_error("dataset", "%s needs a value", argv[*i]);
	if (strcmp(argv[*i], "--trajectories") == 0)
		f->trajectories = 1;
	else if (strcmp(argv[*i], "--force") == 0)
		*force = 1;
	else
		return 1;
	return 0;
}

static int export_main(const struct cli_common *co, int argc, char **argv)
{
	struct dataset_filter f;
	struct dataset_stats st = {0};
	struct kf_err err = {0};
	struct app *app = NULL;
	const char *out = NULL;
	char summary[3200];
	json_t *res;
	int force = 0, rc;

	dataset_filter_init(&f);
	for (int i = 2; i < argc; i++) {
		rc = export_opt(argc, argv, &i, &f, &out, &force);
		if (rc == 1)
			return cli_usage_error("dataset", "unknown option or argument '%s'",
					       argv[i]);
		if (rc)
			return rc;
	}
	if (!out)
		return cli_usage_error("dataset", "export needs --out DIR");
	if ((rc = cli_app_open(co, &app, &err))) {
		fprintf(stderr, "kforge: %s\n", err.msg);
		return cli_exit_code(rc);
	}
	rc = dataset_write_dir(app->history, &f, out, force, &st, &err);
	app_close(app);
	if (rc) {
		fprintf(stderr, "kforge dataset: %s\n", err.msg);
		return cli_exit_code(rc);
	}
	snprintf(summary, sizeof(summary), "%zu kernels exported to %.3000s/data/kernels.jsonl",
		 st.exported, out);
	res = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I}", "summary", summary, "exported",
			(json_int_t)st.exported, "scanned", (json_int_t)st.scanned, "unverified",
			(json_int_t)st.unverified, "filtered", (json_int_t)st.filtered,
			"duplicates", (json_int_t)st.duplicates);
	cli_print_result(stdout, res, co->json);
	json_decref(res);
	return CLI_EXIT_OK;
}

static int dataset_main(int argc, char **argv)
{
	struct cli_common co;
	struct kf_err err = {0};

	cli_common_init(&co);
	if (cli_common_parse(&co, &argc, argv, &err))
		return cli_usage_error("dataset", "%s", err.msg);
	if (argc >= 2 && strcmp(argv[1], "export") == 0)
		return export_main(&co, argc, argv);
	return cli_usage_error("dataset", "%s",
			       argc >= 2 ? "unknown subcommand: use export"
					 : "missing subcommand: export");
}

/* ---- GET /v1/dataset.jsonl ------------------------------------------------ */

/* One streamed export: the iterator and the record being sent. */
struct stream_state {
	struct dataset_iter *it;
	char *line; /* the current record as JSON + "\n" */
	size_t len, off;
};

/* The export's filter from the query (since, op, arch, gpu, min_speedup,
 * trajectories, license). Returns 0 or 400 with msg. */
static int stream_filter(const char *(*query)(void *, const char *), void *qarg,
			 struct dataset_filter *f, char *msg, size_t cap)
{
	struct kf_err err = {0};
	const char *v;

	dataset_filter_init(f);
	if ((v = query(qarg, "trajectories")))
		f->trajectories = !strcmp(v, "true") || !strcmp(v, "1");
	for (size_t k = 0; k < FILTER_FIELDS_LEN; k++) {
		if ((v = query(qarg, FILTER_FIELDS[k][0])) && filter_set(f, k, v, &err)) {
			snprintf(msg, cap, "%s", err.msg);
			return 400;
		}
	}
	return 0;
}

static int stream_open(struct app *app, const char *(*query)(void *, const char *), void *qarg,
		       void **state, char *msg, size_t cap)
{
	struct dataset_filter f;
	struct stream_state *s;
	struct kf_err err = {0};
	int st = stream_filter(query, qarg, &f, msg, cap);

	if (st)
		return st;
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(msg, cap, "out of memory");
		return 500;
	}
	if (dataset_iter_new(app->history, &f, &s->it, &err)) {
		snprintf(msg, cap, "%s", err.msg);
		free(s);
		return 500;
	}
	*state = s;
	return 0;
}

static long stream_read(void *state, char *buf, size_t max)
{
	struct stream_state *s = state;
	struct kf_err err = {0};
	size_t n;

	if (s->off == s->len) {
		json_t *rec = NULL;

		free(s->line);
		s->line = NULL;
		s->len = s->off = 0;
		if (dataset_iter_next(s->it, &rec, &err))
			return -1;
		if (!rec)
			return 0;
		s->line = json_dumps(rec, JSON_COMPACT);
		json_decref(rec);
		if (!s->line)
			return -1;
		s->len = strlen(s->line);
		s->line[s->len++] = '\n'; /* over the NUL: the line is sent by length */
	}
	n = s->len - s->off < max ? s->len - s->off : max;
	memcpy(buf, s->line + s->off, n);
	s->off += n;
	return (long)n;
}

static void stream_close(void *state)
{
	struct stream_state *s = state;

	dataset_iter_free(s->it);
	free(s->line);
	free(s);
}

const struct http_stream CLI_DATASET_STREAM = {
	.path = "/v1/dataset.jsonl",
	.mime = "application/x-ndjson",
	.open = stream_open,
	.read = stream_read,
	.close = stream_close,
};

const struct cli_cmd CLI_DATASET[] = {
	{"dataset", "export verified kernels of the run history as a dataset", DATASET_USAGE,
	 dataset_main, NULL, NULL},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
