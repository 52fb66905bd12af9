/* tools_runs: list_runs, get_run, compare_runs and the kforge://runs/...
 * resources over sandbox/history; tools_runs_record for the handlers that make
 * runs. See tools_runs.h. The kind-specific comparisons live in
 * tools_runs_compare.c; nothing here measures or invents a number. */
#include "server/tools/tools_runs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/app.h"
#include "server/mcp/mcp.h"
#include "base/log.h"
#include "base/version.h"
#include "sandbox/compile/compile.h"
#include "sandbox/compile/cache.h"
#include "sandbox/pool/gpu.h"
#include "server/mcp/tools.h"
#include "server/tools/tools_runs_int.h"

#define INLINE_SPEC_MAX	  16384 /* spec JSON bytes shown inline by get_run */
#define INLINE_RESULT_MAX 32768 /* result JSON bytes shown inline */
#define RESOURCE_LIST_MAX 20	/* runs listed by resources/list */

int64_t tools_runs_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void iso_time(int64_t ms, char *buf, size_t cap)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static size_t json_size(const json_t *j)
{
	return j ? json_dumpb(j, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY) : 0;
}

/* ---- recording --------------------------------------------------------- */

/* Appends name to a comma list (buf, cap) unless already there. */
static void add_name(char *buf, size_t cap, const char *name)
{
	size_t n = strlen(name), len = strlen(buf);
	const char *p = buf;

	if (!n || strchr(name, ','))
		return;
	while ((p = strstr(p, name))) {
		if ((p == buf || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return;
		p += n;
	}
	if (len + n + 2 > cap)
		return;
	if (len)
		buf[len++] = ',';
	memcpy(buf + len, name, n + 1);
}

static void kernel_names(const json_t *args, const json_t *result, char *buf, size_t cap)
{
	const json_t *ks = result ? json_object_get(result, "kernels") : NULL;
	const json_t *launch = args ? json_object_get(args, "launch") : NULL;
	size_t i;
	json_t *v;

	buf[0] = '\0';
	json_array_foreach(ks, i, v) {
		if (json_is_string(v))
			add_name(buf, cap, json_string_value(v));
		else if (json_is_string(json_object_get(v, "name")))
			add_name(buf, cap, json_string_value(json_object_get(v, "name")));
	}
	json_array_foreach(launch, i, v)
		if (json_is_string(json_object_get(v, "kernel")))
			add_name(buf, cap, json_string_value(json_object_get(v, "kernel")));
	if (!buf[0] && args && json_is_string(json_object_get(args, "op")))
		add_name(buf, cap, json_string_value(json_object_get(args, "op")));
}

static enum history_status status_of(int rc, const json_t *result)
{
	if (rc == 0)
		return json_is_false(json_object_get(result, "passed")) ? HISTORY_FAILED
									: HISTORY_OK;
	/* The kernel's fault; anything else (no_gpu, a bad spec, busy,
	 * cancelled) is an error even when the result says "passed": false. */
	if (rc == KF_ECOMPILE || rc == KF_EFAULT || rc == KF_ETIMEOUT)
		return HISTORY_FAILED;
	return HISTORY_ERROR;
}

/* The versions a run ran with: kforge, the CUDA toolkit (nvcc) and, for a
 * GPU run, the driver; a dataset record names them. Returns new. */
static json_t *env_json(struct app *app, int gpu)
{
	const struct gpu_host *host = NULL;
	const char *cuda = app->cc ? compile_compiler_version(app->cc) : NULL;
	json_t *o = json_pack("{s:s}", "kforge", KFORGE_VERSION);

	if (cuda && *cuda)
		json_object_set_new(o, "cuda", json_string(cuda));
	if (gpu >= 0 && gpu_probe(&host, NULL) == 0)
		json_object_set_new(o, "driver", json_string(host->driver_version_str));
	return o;
}

int tools_runs_meta_from_args(struct app *app, const json_t *args, struct tools_runs_meta *meta,
			      struct kf_err *err)
{
	memset(meta, 0, sizeof(*meta));
	meta->description = json_string_value(json_object_get(args, "description"));
	meta->notes = json_string_value(json_object_get(args, "notes"));
	meta->parent = json_string_value(json_object_get(args, "parent"));
	if (meta->description && strlen(meta->description) > HISTORY_TEXT_MAX)
		return kf_err_set(err, KF_ETOOBIG,
				  "description: %zu bytes, over the %d-byte cap: keep it to the "
				  "math and a sentence; reasoning goes in notes",
				  strlen(meta->description), HISTORY_TEXT_MAX);
	if (meta->notes && strlen(meta->notes) > HISTORY_NOTES_MAX)
		return kf_err_set(err, KF_ETOOBIG, "notes: %zu bytes, over the %d-byte cap",
				  strlen(meta->notes), HISTORY_NOTES_MAX);
	if (!meta->parent)
		return 0;
	if (!app || !app->history)
		return kf_err_set(err, KF_EINTERNAL, "run history is not open");
	return history_check_parent(app->history, meta->parent, err);
}

/* Records one run: job_key (or NULL) makes it exactly-once for a cluster
 * job, meta (or NULL) stores what the run means. See tools_runs.h. */
static int record_run(struct app *app, const char *job_key, enum history_kind kind,
		      const json_t *args, json_t *result, int rc, const char *err_msg, int gpu,
		      int64_t duration_ms, const struct tools_runs_meta *meta,
		      char id_out[HISTORY_ID_BYTES])
{
	struct history_run run = {0};
	struct kf_err err = {0};
	char kernels[1024], hash[CACHE_ID_LEN + 1];
	const json_t *src = args ? json_object_get(args, "source") : NULL;
	const json_t *sum = result ? json_object_get(result, "summary") : NULL;
	const struct gpu_info *g = gpu >= 0 ? gpu_get(gpu) : NULL;
	json_t *stored = NULL, *stored_spec = NULL;
	char summary[1024];
	int ret;

	if (id_out)
		id_out[0] = '\0';
	if (!app || !app->history)
		return KF_EINTERNAL;
	kernel_names(args, result, kernels, sizeof(kernels));
	run.kind = kind;
	run.status = status_of(rc, result);
	run.duration_ms = duration_ms;
	run.kernels = kernels;
	if (json_is_string(src)) {
		struct cache_sha256 s;

		cache_sha256_init(&s);
		cache_sha256_update(&s, json_string_value(src), json_string_length(src));
		cache_sha256_final_hex(&s, hash);
		run.source_hash = hash;
	}
	if (g) {
		run.device_name = (char *)g->name;
		run.device_uuid = (char *)g->uuid;
	} else if (result &&
		   json_is_string(json_object_get(json_object_get(result, "device"), "name"))) {
		/* Ran elsewhere (a cluster node): the device its answer names. */ run.device_name =
			(char *)json_string_value(
				json_object_get(json_object_get(result, "device"), "name"));
		run.device_uuid = (char *)json_string_value(
			json_object_get(json_object_get(result, "device"), "uuid"));
	}
	run.job_key = job_key;
	/* A long summary is cut (at a character boundary) rather than the
	 * run lost; so is a result over the history's cap. */
	snprintf(summary, sizeof(summary), "%s",
		 json_is_string(sum) ? json_string_value(sum)
		 : err_msg	     ? err_msg
				     : kf_err_name(rc));
	if (strlen(summary) == sizeof(summary) - 1) {
		size_t n = sizeof(summary) - 1;

		/* drop a character the cut may have split (perhaps a whole
		 * one: never half of one) */
		while (n > 0 && ((unsigned char)summary[n - 1] & 0xC0) == 0x80)
			summary[--n] = '\0';
		if (n > 0 && (unsigned char)summary[n - 1] >= 0xC0)
			summary[--n] = '\0';
	}
	run.summary = summary;
	run.env = env_json(app, gpu);
	if (meta) {
		run.description = (char *)meta->description;
		run.notes = (char *)meta->notes;
		run.parent = (char *)meta->parent;
	}
	run.spec = (json_t *)args;
	if (json_size(args) > HISTORY_JSON_MAX) {
		stored_spec = json_pack("{s:b, s:I}", "truncated", 1, "bytes",
					(json_int_t)json_size(args));
		run.spec = stored_spec;
	}
	if (result && json_size(result) > HISTORY_JSON_MAX) {
		stored = json_pack("{s:s, s:b, s:I}", "summary", summary, "truncated", 1, "bytes",
				   (json_int_t)json_size(result));
		run.result = stored;
	} else if (result) {
		run.result = result;
	} else {
		stored = json_pack("{s:s, s:o}", "summary", summary, "error",
				   mcp_error_member(kf_err_name(rc), err_msg ? err_msg : ""));
		run.result = stored;
	}
	ret = history_add(app->history, &run, &err);
	json_decref(run.env);
	json_decref(stored);
	json_decref(stored_spec);
	if (ret) {
		log_warn("runs", "run not recorded: %s", err.msg);
		return ret;
	}
	if (result && json_is_object(result))
		json_object_set_new(result, "run_id", json_string(run.id));
	if (id_out)
		memcpy(id_out, run.id, HISTORY_ID_BYTES);
	return 0;
}

int tools_runs_record(struct app *app, enum history_kind kind, const json_t *args, json_t *result,
		      int rc, const char *err_msg, int gpu, int64_t duration_ms,
		      char id_out[HISTORY_ID_BYTES])
{
	return record_run(app, NULL, kind, args, result, rc, err_msg, gpu, duration_ms, NULL,
			  id_out);
}

int tools_runs_record_job(struct app *app, const char *job_key, enum history_kind kind,
			  const json_t *args, json_t *result, int rc, const char *err_msg, int gpu,
			  int64_t duration_ms, const struct tools_runs_meta *meta,
			  char id_out[HISTORY_ID_BYTES])
{
	return record_run(app, job_key, kind, args, result, rc, err_msg, gpu, duration_ms, meta,
			  id_out);
}

int tools_runs_record_meta(struct app *app, enum history_kind kind, const json_t *args,
			   json_t *result, int rc, const char *err_msg, int gpu,
			   int64_t duration_ms, const struct tools_runs_meta *meta,
			   char id_out[HISTORY_ID_BYTES])
{
	return record_run(app, NULL, kind, args, result, rc, err_msg, gpu, duration_ms, meta,
			  id_out);
}

/* ---- shared helpers ---------------------------------------------------- */

static struct history *hist(struct tool_ctx *ctx, struct kf_err *err)
{
	struct app *app = mcp_call_app(ctx);

	if (!app || !app->history) {
		kf_err_set(err, KF_EINTERNAL, "run history is not open");
		return NULL;
	}
	return app->history;
}

static json_t *kernels_array(const char *list)
{
	json_t *arr = json_array();
	const char *p = list ? list : "";

	while (*p) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);

		if (n)
			json_array_append_new(arr, json_stringn(p, n));
		p += n + (c ? 1 : 0);
	}
	return arr;
}

/* The row of a listing: light, no spec, result or notes; description and
 * parent only when the run has them. */
static json_t *row_json(const struct history_run *r)
{
	char when[32];
	json_t *o;

	iso_time(r->created_ms, when, sizeof(when));
	o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s?, s:I, s:s}", "id", r->id, "kind",
		      history_kind_name(r->kind), "status", history_status_name(r->status),
		      "created", when, "kernels", kernels_array(r->kernels), "device",
		      r->device_name, "duration_ms", (json_int_t)r->duration_ms, "summary",
		      r->summary ? r->summary : "");
	if (r->description)
		json_object_set_new(o, "description", json_string(r->description));
	if (r->parent)
		json_object_set_new(o, "parent", json_string(r->parent));
	return o;
}

static json_t *res_link(const char *id, const char *part, const char *what, size_t bytes)
{
	char uri[96];

	snprintf(uri, sizeof(uri), "kforge://runs/%s/%s", id, part);
	return json_pack("{s:s, s:s, s:I}", "resource", uri, "what", what, "bytes",
			 (json_int_t)bytes);
}

/* The whole record. With inline_all zero, a big spec loses its source and a
 * big result is replaced by a resource link. */
static json_t *run_json(const struct history_run *r, int inline_all)
{
	json_t *o = row_json(r);
	size_t spec_bytes = json_size(r->spec), result_bytes = json_size(r->result);

	json_object_set_new(o, "created_ms", json_integer(r->created_ms));
	json_object_set_new(o, "source_hash",
			    r->source_hash ? json_string(r->source_hash) : json_null());
	json_object_set_new(o, "device_uuid",
			    r->device_uuid ? json_string(r->device_uuid) : json_null());
	if (r->notes)
		json_object_set_new(o, "notes", json_string(r->notes));
	if (r->env)
		json_object_set(o, "env", r->env);
	if (!r->spec) {
		json_object_set_new(o, "spec", json_null());
	} else if (inline_all || spec_bytes <= INLINE_SPEC_MAX) {
		json_object_set(o, "spec", r->spec);
	} else {
		json_t *spec = json_deep_copy(r->spec);
		const json_t *src = json_object_get(spec, "source");

		if (json_is_string(src)) {
			json_object_set_new(spec, "source",
					    res_link(r->id, "source", "the kernel source",
						     json_string_length(src)));
		}
		if (json_size(spec) > INLINE_SPEC_MAX) {
			json_decref(spec);
			spec = res_link(r->id, "spec", "the run's spec", spec_bytes);
		}
		json_object_set_new(o, "spec", spec);
	}
	if (!r->result)
		json_object_set_new(o, "result", json_null());
	else if (inline_all || result_bytes <= INLINE_RESULT_MAX)
		json_object_set(o, "result", r->result);
	else
		json_object_set_new(
			o, "result",
			res_link(r->id, "result", "the tool's full result", result_bytes));
	return o;
}

int tools_runs_parse_since(const char *s, int64_t *ms, struct kf_err *err)
{
	struct tm tm;
	char *end;
	double v;

	memset(&tm, 0, sizeof(tm));
	v = strtod(s, &end);
	if (end != s && end[0] && !end[1] && v >= 0 && isfinite(v) && strchr("smhdw", end[0]) &&
	    !strchr(s, '-')) {
		static const char units[] = "smhdw";
		static const double secs[] = {1, 60, 3600, 86400, 604800};
		struct timespec ts;
		double age_ms = v * secs[strchr(units, end[0]) - units] * 1000;
		int64_t now_ms;

		clock_gettime(CLOCK_REALTIME, &ts);
		now_ms = (int64_t)ts.tv_sec * 1000;
		/* Compared as doubles: an age past 1970 would not fit the
		 * conversion to int64 below. */
		if (age_ms > (double)now_ms)
			return kf_err_set(
				err, KF_EINVAL,
				"since: '%.40s' reaches back before 1970: give an age up to %lldd, or a date",
				s, (long long)(now_ms / 86400000));
		*ms = now_ms - (int64_t)age_ms;
		return 0;
	}
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		end = strptime(s, "%Y-%m-%d %H:%M:%S", &tm);
	if (!end) {
		memset(&tm, 0, sizeof(tm));
		end = strptime(s, "%Y-%m-%d", &tm);
	}
	if (!end || (*end && strcmp(end, "Z") != 0))
		return kf_err_set(
			err, KF_EINVAL,
			"since: '%.40s' is not a time: use 2026-11-30, 2026-11-30T09:00:00Z, or an age like 30m, 6h, 7d",
			s);
	*ms = (int64_t)timegm(&tm) * 1000;
	return 0;
}

/* ---- list_runs --------------------------------------------------------- */

static int list_runs(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	struct history *h = hist(ctx, err);
	struct history_filter f;
	struct history_page page;
	const char *s;
	json_t *rows;
	char summary[256];
	int rc;

	if (!h)
		return KF_EINTERNAL;
	history_filter_init(&f);
	if ((s = json_string_value(json_object_get(args, "kind"))))
		f.kind = history_kind_parse(s);
	if ((s = json_string_value(json_object_get(args, "status"))))
		f.status = history_status_parse(s);
	f.kernel = json_string_value(json_object_get(args, "kernel"));
	f.cursor = json_string_value(json_object_get(args, "cursor"));
	if (json_is_integer(json_object_get(args, "limit")))
		f.limit = (size_t)json_integer_value(json_object_get(args, "limit"));
	if ((s = json_string_value(json_object_get(args, "since")))) {
		rc = tools_runs_parse_since(s, &f.since_ms, err);
		if (rc)
			return rc;
	}
	rc = history_list(h, &f, &page, err);
	if (rc)
		return rc;
	rows = json_array();
	for (size_t i = 0; i < page.len; i++)
		json_array_append_new(rows, row_json(&page.runs[i]));
	if (page.len == 0)
		snprintf(summary, sizeof(summary), "no runs match%s",
			 f.cursor ? " (end of the listing)" : "");
	else
		snprintf(summary, sizeof(summary), "%zu run%s, newest first%s", page.len,
			 page.len == 1 ? "" : "s",
			 page.next_cursor[0] ? "; more with cursor next_cursor" : "");
	*out = json_pack("{s:s, s:o}", "summary", summary, "runs", rows);
	if (page.next_cursor[0])
		json_object_set_new(*out, "next_cursor", json_string(page.next_cursor));
	history_page_fini(&page);
	return 0;
}

/* ---- get_run ----------------------------------------------------------- */

static int get_run(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	struct history *h = hist(ctx, err);
	struct history_run r;
	char summary[512];
	int rc;

	if (!h)
		return KF_EINTERNAL;
	rc = history_get(h, json_string_value(json_object_get(args, "id")), &r, err);
	if (rc)
		return rc;
	snprintf(summary, sizeof(summary), "%s %s (%s): %s", history_kind_name(r.kind), r.id,
		 history_status_name(r.status), r.summary ? r.summary : "");
	*out = json_pack("{s:s, s:o}", "summary", summary, "run", run_json(&r, 0));
	history_run_fini(&r);
	return 0;
}

/* ---- compare_runs ------------------------------------------------------ */

static json_t *side_json(const struct history_run *r)
{
	json_t *o = row_json(r);

	json_object_set_new(o, "source_hash",
			    r->source_hash ? json_string(r->source_hash) : json_null());
	return o;
}

static int compare_runs(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	struct history *h = hist(ctx, err);
	struct history_run a, b;
	char detail[400], summary[600], note[320];
	json_t *res;
	int rc;

	if (!h)
		return KF_EINTERNAL;
	memset(&b, 0, sizeof(b));
	rc = history_get(h, json_string_value(json_object_get(args, "a")), &a, err);
	if (rc)
		return rc;
	rc = history_get(h, json_string_value(json_object_get(args, "b")), &b, err);
	if (rc)
		goto out;
	if (a.kind != b.kind) {
		rc = kf_err_set(err, KF_EINVAL,
				"b: run %s is a %s and run %s a %s: compare two runs of one kind",
				a.id, history_kind_name(a.kind), b.id, history_kind_name(b.kind));
		goto out;
	}
	res = json_pack("{s:s, s:s, s:o, s:o}", "summary", "", "kind", history_kind_name(a.kind),
			"a", side_json(&a), "b", side_json(&b));
	rc = tools_runs_compare_detail(&a, &b, res, detail, sizeof(detail), err);
	if (rc) {
		json_decref(res);
		goto out;
	}
	if (a.device_uuid && b.device_uuid && strcmp(a.device_uuid, b.device_uuid) != 0) {
		snprintf(note, sizeof(note),
			 "different GPUs (%s %s vs %s %s): timings are not comparable",
			 a.device_name ? a.device_name : "?", a.device_uuid,
			 b.device_name ? b.device_name : "?", b.device_uuid);
		json_object_set_new(res, "note", json_string(note));
	}
	if (a.source_hash && b.source_hash)
		json_object_set_new(res, "same_source",
				    json_boolean(strcmp(a.source_hash, b.source_hash) == 0));
	snprintf(summary, sizeof(summary), "%s %s vs %s: %s", history_kind_name(a.kind), a.id, b.id,
		 detail);
	json_object_set_new(res, "summary", json_string(summary));
	*out = res;
out:
	history_run_fini(&a);
	history_run_fini(&b);
	return rc;
}

/* ---- resources --------------------------------------------------------- */

static int runs_list_resources(struct app *app, json_t *arr, struct kf_err *err)
{
	struct history_filter f;
	struct history_page page;
	int rc;

	if (!app->history)
		return 0;
	history_filter_init(&f);
	f.limit = RESOURCE_LIST_MAX;
	rc = history_list(app->history, &f, &page, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < page.len; i++) {
		const struct history_run *r = &page.runs[i];
		char uri[64], title[256];

		snprintf(uri, sizeof(uri), "kforge://runs/%s", r->id);
		snprintf(title, sizeof(title), "%s %s: %.200s", history_kind_name(r->kind),
			 history_status_name(r->status), r->summary ? r->summary : "");
		json_array_append_new(arr,
				      json_pack("{s:s, s:s, s:s, s:s}", "uri", uri, "name", r->id,
						"title", title, "mimeType", "application/json"));
	}
	history_page_fini(&page);
	return 0;
}

static int runs_read(struct app *app, const char *uri, json_t **contents, struct kf_err *err)
{
	static const char prefix[] = "kforge://runs/";
	char id[HISTORY_ID_BYTES + 1];
	const char *rest, *slash, *part = NULL;
	struct history_run r;
	json_t *body = NULL;
	char *text = NULL;
	const char *mime = "application/json";
	int rc;

	if (strncmp(uri, prefix, sizeof(prefix) - 1) != 0)
		return kf_err_set(err, KF_ENOTFOUND, "not a run resource: %s", uri);
	rest = uri + sizeof(prefix) - 1;
	slash = strchr(rest, '/');
	if ((slash ? (size_t)(slash - rest) : strlen(rest)) >= sizeof(id))
		return kf_err_set(err, KF_ENOTFOUND, "no run at %s", uri);
	snprintf(id, sizeof(id), "%.*s", (int)(slash ? (size_t)(slash - rest) : strlen(rest)),
		 rest);
	if (slash)
		part = slash + 1;
	if (part && strcmp(part, "source") && strcmp(part, "spec") && strcmp(part, "result"))
		return kf_err_set(err, KF_ENOTFOUND,
				  "%s: a run has the parts source, spec and result", uri);
	rc = history_get(app->history, id, &r, err);
	if (rc)
		return rc == KF_EINVAL ? KF_ENOTFOUND : rc;
	if (!part) {
		body = run_json(&r, 1);
	} else if (!strcmp(part, "spec")) {
		body = r.spec ? json_incref(r.spec) : json_null();
	} else if (!strcmp(part, "result")) {
		body = r.result ? json_incref(r.result) : json_null();
	} else {
		const json_t *src = json_object_get(r.spec, "source");

		if (!json_is_string(src)) {
			history_run_fini(&r);
			return kf_err_set(err, KF_ENOTFOUND, "run %s stored no source", id);
		}
		text = strdup(json_string_value(src));
		mime = "text/x-cuda";
	}
	if (!text)
		text = json_dumps(body, JSON_INDENT(1) | JSON_ENCODE_ANY);
	json_decref(body);
	history_run_fini(&r);
	if (!text)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	*contents = json_pack("[{s:s, s:s, s:s}]", "uri", uri, "mimeType", mime, "text", text);
	free(text);
	return *contents ? 0 : kf_err_set(err, KF_ENOMEM, "out of memory");
}

static int runs_complete(struct app *app, const char *var, const char *prefix, json_t *arr,
			 struct kf_err *err)
{
	struct history_filter f;
	struct history_page page;
	int rc;

	if (strcmp(var, "id") != 0) {
		if (!strcmp(var, "part"))
			for (int i = 0; i < 3; i++) {
				static const char *const parts[] = {"source", "spec", "result"};
				if (!strncmp(parts[i], prefix, strlen(prefix)))
					json_array_append_new(arr, json_string(parts[i]));
			}
		return 0;
	}
	history_filter_init(&f);
	f.limit = 100;
	rc = history_list(app->history, &f, &page, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < page.len; i++)
		if (!strncmp(page.runs[i].id, prefix, strlen(prefix)))
			json_array_append_new(arr, json_string(page.runs[i].id));
	history_page_fini(&page);
	return 0;
}

/* ---- the table --------------------------------------------------------- */

#define KIND_ENUM     "[\"compile\", \"check\", \"bench\", \"calibrate\", \"profile\"]"
#define STATUS_ENUM   "[\"ok\", \"failed\", \"error\"]"
#define RUN_ID_SCHEMA "{\"type\": \"string\", \"minLength\": 16, \"maxLength\": 16}"

static const struct tool_def RUNS_TOOLS[] = {
	{
		.name = "list_runs",
		.title = "List runs",
		.description =
			"Run history, newest first. kernel: a substring; status failed = the "
			"kernel's fault, error = could not run; since: a date or an age (7d).",
		.input_schema =
			"{\"type\": \"object\", \"additionalProperties\": false, \"properties\": {"
			"\"kind\": {\"type\": \"string\", \"enum\": " KIND_ENUM "},"
			"\"kernel\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 256},"
			"\"status\": {\"type\": \"string\", \"enum\": " STATUS_ENUM "},"
			"\"since\": {\"type\": \"string\", \"minLength\": 2, \"maxLength\": 40},"
			"\"limit\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 500, \"default\": 20},"
			"\"cursor\": {\"type\": \"string\", \"minLength\": 16, \"maxLength\": 16}}}",
		.output_schema =
			"{\"type\": \"object\", \"required\": [\"summary\", \"runs\"], \"properties\": {"
			"\"summary\": {\"type\": \"string\"}, \"runs\": {\"type\": \"array\"}}}",
		.annotations = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.handler = list_runs,
	},
	{
		.name = "get_run",
		.title = "Get a run",
		.description = "One run, whole, from its run_id; large parts as resource links.",
		.input_schema =
			"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"id\"], \"properties\": {"
			"\"id\": " RUN_ID_SCHEMA "}}",
		.output_schema =
			"{\"type\": \"object\", \"required\": [\"summary\", \"run\"], \"properties\": {"
			"\"summary\": {\"type\": \"string\"}, \"run\": {\"type\": \"object\"}}}",
		.annotations = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.handler = get_run,
	},
	{
		.name = "compare_runs",
		.title = "Compare runs",
		.description =
			"Run b against run a, same kind: speedup with its 95% interval, changed "
			"resources and spills, or verdicts and failing cases.",
		.input_schema =
			"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"a\", \"b\"], \"properties\": {"
			"\"a\": " RUN_ID_SCHEMA ", \"b\": " RUN_ID_SCHEMA "}}",
		.output_schema =
			"{\"type\": \"object\", \"required\": [\"summary\", \"kind\", \"a\", \"b\"], \"properties\": {"
			"\"summary\": {\"type\": \"string\"}, \"kind\": {\"type\": \"string\"},"
			"\"a\": {\"type\": \"object\"}, \"b\": {\"type\": \"object\"}}}",
		.annotations = TOOL_READ_ONLY | TOOL_IDEMPOTENT,
		.handler = compare_runs,
	},
};

static const struct resource_def RUNS_RESOURCES[] = {
	{
		/* first: the generic template below would also match */
		.uri_template = "kforge://runs/{id}/{part}",
		.name = "run-part",
		.title = "Part of a run",
		.description =
			"One part of a run: source (the kernel source), spec or result (JSON).",
		.mime_type = "application/json",
		.read = runs_read,
		.complete = runs_complete,
	},
	{
		.uri_template = "kforge://runs/{id}",
		.name = "run",
		.title = "Run",
		.description =
			"A compile, check, benchmark or calibration from the run history, whole, as JSON.",
		.mime_type = "application/json",
		.list = runs_list_resources,
		.read = runs_read,
		.complete = runs_complete,
	},
};

const struct tool_group TOOLS_RUNS = {
	.tools = RUNS_TOOLS,
	.tools_len = sizeof(RUNS_TOOLS) / sizeof(RUNS_TOOLS[0]),
	.resources = RUNS_RESOURCES,
	.resources_len = sizeof(RUNS_RESOURCES) / sizeof(RUNS_RESOURCES[0]),
};
