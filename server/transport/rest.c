/* rest: the /v1 route table and the mapping of HTTP requests onto tool
 * calls (see rest.h). One row per route; the first row that matches the
 * path wins, so fixed paths (/v1/gpus/compare) come before patterns
 * (/v1/gpus/{id}). Adding a route is one row: the tool, where each argument
 * comes from (a {path} segment, a query parameter, or the JSON body for
 * POST), fixed arguments, and a line for the OpenAPI document. */
#include "server/transport/rest.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/kf_err.h"
#include "server/mcp/mcp.h"
#include "base/version.h"

#define REST_PARAMS_MAX 8
#define REST_SEGS_MAX	8
#define REST_CSV_MAX	16 /* items in one comma-separated query value */

enum rest_ptype {
	RP_STR = 0, /* string as given */
	RP_INT,	    /* decimal integer */
	RP_BOOL,    /* true/false/1/0 */
	RP_CSV	    /* a,b,c -> ["a","b","c"] */
};

struct rest_param {
	const char *name; /* the {name} in the path, or the query parameter */
	const char *arg;  /* the tool argument it fills */
	enum rest_ptype type;
	int required;	 /* 1: a query parameter that must be given */
	const char *doc; /* one line for OpenAPI */
};

struct rest_route {
	const char *method;
	const char *path; /* segments; "{name}" matches one segment */
	enum rest_kind kind;
	const char *tool;  /* REST_TOOL: the MCP tool it calls */
	const char *fixed; /* JSON object text merged into the args, or NULL */
	int body;	   /* 1: the JSON body (an object) is the args */
	const char *summary;
	struct rest_param params[REST_PARAMS_MAX];
};

/* The route table. Others add rows here with one-line edits. */
/* clang-format off */
static const struct rest_route ROUTES[] = {
	{"GET", "/v1/health", REST_HEALTH, NULL, NULL, 0,
	 "Liveness: version, uptime, open sessions; needs no token", {{0}}},
	{"GET", "/v1/openapi.json", REST_OPENAPI, NULL, NULL, 0,
	 "This API as an OpenAPI 3.1 document", {{0}}},
	{"GET", "/v1/gpus", REST_TOOL, "get_gpu_specs", "{\"list\":true}", 0,
	 "Every GPU in the knowledge base (get_gpu_specs list)", {{0}}},
	{"GET", "/v1/gpus/compare", REST_TOOL, "get_gpu_specs", "{\"detail\":\"full\"}", 0,
	 "2 to 4 GPUs side by side (get_gpu_specs compare)",
	 {{"ids", "compare", RP_CSV, 1, "comma-separated GPU names, e.g. h100,a100"},
	  {"arch", "arch", RP_STR, 0, "target for feature usability, e.g. sm_90a"},
	  {"fields", "fields", RP_CSV, 0, "only these rows, e.g. memory_bandwidth_gbs,sm_count"}}},
	{"GET", "/v1/gpus/{id}", REST_TOOL, "get_gpu_specs", "{\"detail\":\"full\"}", 0,
	 "One GPU's facts with sources (get_gpu_specs gpu); 'local' for this host",
	 {{"id", "gpu", RP_STR, 1, "GPU name or alias: h100, a100-80g-pcie, sm_90, local"},
	  {"arch", "arch", RP_STR, 0, "target for feature usability, e.g. sm_90a"},
	  {"fields", "fields", RP_CSV, 0,
	   "only these figures, derived figures or sections, e.g. memory_bandwidth_gbs,features"}}},
	{"GET", "/v1/guides", REST_TOOL, "search_guides", NULL, 0,
	 "Ranked full-text search over the optimization guides (search_guides)",
	 {{"q", "query", RP_STR, 1, "words, e.g. bank conflicts"},
	  {"arch", "arch", RP_STR, 0, "only guides for this target or GPU"},
	  {"tag", "tag", RP_STR, 0, "only guides with this tag"},
	  {"limit", "limit", RP_INT, 0, "at most this many hits (1-50)"}}},
	{"GET", "/v1/guides/{id}", REST_TOOL, "read_guide", NULL, 0,
	 "One guide, whole, as Markdown with its sources (read_guide)",
	 {{"id", "id", RP_STR, 1, "guide id from a search hit"}}},
	{"POST", "/v1/compile", REST_TOOL, "compile_kernel", NULL, 1,
	 "Compile CUDA device code in the sandbox (compile_kernel; body = its arguments)", {{0}}},
	{"POST", "/v1/check", REST_TOOL, "check_kernel", NULL, 1,
	 "Check a kernel spec against its reference on the GPU (check_kernel)", {{0}}},
	{"POST", "/v1/bench", REST_TOOL, "benchmark_kernel", NULL, 1,
	 "Benchmark a kernel spec and its baseline on the GPU (benchmark_kernel)", {{0}}},
	{"POST", "/v1/profile", REST_TOOL, "profile_kernel", NULL, 1,
	 "Profile a kernel spec under Nsight Compute at one size (profile_kernel)", {{0}}},
	{"POST", "/v1/model-bench", REST_TOOL, "benchmark_model", NULL, 1,
	 "Time a model with kforge's ops swapped in against eager, torch.compile and CUDA graphs "
	 "(benchmark_model; body = its arguments)",
	 {{0}}},
	{"GET", "/v1/dataset.jsonl", REST_STREAM, NULL, NULL, 0,
	 "Verified kernels as JSONL, streamed (kforge dataset export; docs/dataset.md)",
	 {{"since", "since", RP_STR, 0, "benchmarks since a date or an age (7d)"},
	  {"op", "op", RP_STR, 0, "built-in op, or a kernel name containing it"},
	  {"arch", "arch", RP_STR, 0, "compile target, e.g. sm_90"},
	  {"gpu", "gpu", RP_STR, 0, "GPU name containing this, e.g. H200"},
	  {"min_speedup", "min_speedup", RP_STR, 0, "speedup over the baseline at least this"},
	  {"trajectories", "trajectories", RP_BOOL, 0, "each record carries its ancestor runs"}}},
	{"POST", "/v1/torch-op", REST_TOOL, "build_torch_op", NULL, 1,
	 "Build a passing check run (or a spec) as a PyTorch op and verify it (build_torch_op)", {{0}}},
	{"GET", "/v1/runs", REST_TOOL, "list_runs", NULL, 0,
	 "The run history, newest first (list_runs)",
	 {{"kind", "kind", RP_STR, 0, "compile, check, bench, calibrate or profile"},
	  {"kernel", "kernel", RP_STR, 0, "substring of a kernel name"},
	  {"status", "status", RP_STR, 0, "ok, failed or error"},
	  {"since", "since", RP_STR, 0, "a date or an age like 6h"},
	  {"limit", "limit", RP_INT, 0, "page size (1-500)"},
	  {"cursor", "cursor", RP_STR, 0, "next_cursor of the previous page"}}},
	{"GET", "/v1/runs/compare", REST_TOOL, "compare_runs", NULL, 0,
	 "Two runs of one kind side by side (compare_runs)",
	 {{"a", "a", RP_STR, 1, "the earlier / reference run id"},
	  {"b", "b", RP_STR, 1, "the run compared against a"}}},
	{"GET", "/v1/runs/{id}", REST_TOOL, "get_run", NULL, 0,
	 "One run, whole (get_run)", {{"id", "id", RP_STR, 1, "run id"}}},
};
/* clang-format on */

#define ROUTES_LEN (sizeof(ROUTES) / sizeof(ROUTES[0]))

static json_t *error_body(const char *code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static json_t *error_body(const char *code, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return mcp_error_answer(code, msg);
}

/* Splits path into at most REST_SEGS_MAX segments (pointers into path,
 * lengths in lens). Returns the count, or -1 when there are too many. */
static int split(const char *path, const char **segs, size_t *lens)
{
	int n = 0;

	while (*path) {
		const char *e;
		while (*path == '/')
			path++;
		if (!*path)
			break;
		if (n == REST_SEGS_MAX)
			return -1;
		e = strchr(path, '/');
		if (!e)
			e = path + strlen(path);
		segs[n] = path;
		lens[n] = (size_t)(e - path);
		n++;
		path = e;
	}
	return n;
}

/* 1 when route r's pattern matches the request's segments; the values of
 * {name} segments are stored in vals (pointers into the request path). */
static int match(const struct rest_route *r, const char **segs, const size_t *lens, int n,
		 const char **vals, size_t *vlens, const char **vnames, size_t *vnlens, int *nv)
{
	const char *psegs[REST_SEGS_MAX];
	size_t plens[REST_SEGS_MAX];
	int pn = split(r->path, psegs, plens);

	*nv = 0;
	if (pn != n)
		return 0;
	for (int i = 0; i < n; i++) {
		if (psegs[i][0] == '{') {
			vnames[*nv] = psegs[i] + 1;
			vnlens[*nv] = plens[i] - 2;
			vals[*nv] = segs[i];
			vlens[*nv] = lens[i];
			(*nv)++;
		} else if (plens[i] != lens[i] || memcmp(psegs[i], segs[i], lens[i]) != 0) {
			return 0;
		}
	}
	return 1;
}

/* Converts one textual value to the JSON the tool expects. */
static json_t *convert(const struct rest_param *p, const char *v, char *why, size_t cap)
{
	char *end;
	long long n;

	switch (p->type) {
	case RP_INT:
		errno = 0;
		n = strtoll(v, &end, 10);
		if (errno || end == v || *end) {
			snprintf(why, cap, "parameter '%s': '%.64s' is not an integer", p->name, v);
			return NULL;
		}
		return json_integer(n);
	case RP_BOOL:
		if (!strcmp(v, "true") || !strcmp(v, "1"))
			return json_true();
		if (!strcmp(v, "false") || !strcmp(v, "0"))
			return json_false();
		snprintf(why, cap, "parameter '%s': '%.64s' is not true or false", p->name, v);
		return NULL;
	case RP_CSV: {
		json_t *arr = json_array();
		const char *s = v;
		while (arr) {
			const char *e = strchr(s, ',');
			size_t len = e ? (size_t)(e - s) : strlen(s);
			if (len == 0 || json_array_size(arr) >= REST_CSV_MAX) {
				snprintf(why, cap,
					 "parameter '%s': '%.64s' needs comma-separated non-empty "
					 "names (at most %d)",
					 p->name, v, REST_CSV_MAX);
				json_decref(arr);
				return NULL;
			}
			json_array_append_new(arr, json_stringn(s, len));
			if (!e)
				break;
			s = e + 1;
		}
		return arr;
	}
	default: return json_string(v);
	}
}

/* The arguments of route r from the request's JSON body (r->body) or a
 * new empty object. Returns 0 with *args set, or an HTTP status with
 * *body set to the error. */
static int plan_args(const struct rest_req *req, const struct rest_route *r, json_t **args,
		     json_t **body)
{
	json_error_t je;

	*args = NULL;
	if (!r->body) {
		*args = json_object();
		goto out;
	}
	if (!req->body || req->body_len == 0) {
		*body = error_body("invalid",
				   "%s %s needs a JSON object body with the arguments of %s",
				   req->method, r->path, r->tool);
		return 400;
	}
	*args = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &je);
	if (!*args) {
		*body = error_body("invalid", "body is not valid JSON: %s (line %d, column %d)",
				   je.text, je.line, je.column);
		return 400;
	}
	if (!json_is_object(*args)) {
		json_decref(*args);
		*args = NULL;
		*body = error_body("invalid", "body must be a JSON object with the arguments of %s",
				   r->tool);
		return 400;
	}
out:
	if (*args && r->fixed) {
		json_t *f = json_loads(r->fixed, 0, NULL);
		if (f)
			json_object_update(*args, f);
		json_decref(f);
		if (!f) {
			json_decref(*args);
			*args = NULL;
		}
	}
	if (!*args) {
		*body = error_body("no_memory", "out of memory");
		return 500;
	}
	return 0;
}

/* The values of a path's {name} segments, as match() found them. */
struct plan_vals {
	const char *vals[REST_SEGS_MAX], *names[REST_SEGS_MAX];
	size_t lens[REST_SEGS_MAX], nlens[REST_SEGS_MAX];
	int n;
};

/* Sets args from r's parameters: each from its {path} segment or the
 * query, converted to its type. Returns 0, or 400 with *body set. */
static int plan_params(const struct rest_req *req, const struct rest_route *r,
		       const struct plan_vals *pv, json_t *args, json_t **body)
{
	char why[300];

	for (int i = 0; i < REST_PARAMS_MAX && r->params[i].name; i++) {
		const struct rest_param *p = &r->params[i];
		char vbuf[512];
		const char *v = NULL;
		json_t *j;

		for (int k = 0; k < pv->n; k++) {
			if (pv->nlens[k] != strlen(p->name) ||
			    memcmp(pv->names[k], p->name, pv->nlens[k]) != 0)
				continue;
			if (pv->lens[k] >= sizeof(vbuf)) {
				*body = error_body("invalid",
						   "path segment '%s' is too long (max %zu bytes)",
						   p->name, sizeof(vbuf) - 1);
				return 400;
			}
			memcpy(vbuf, pv->vals[k], pv->lens[k]);
			vbuf[pv->lens[k]] = '\0';
			v = vbuf;
		}
		if (!v && req->query)
			v = req->query(req->qarg, p->name);
		if (!v && p->required) {
			*body = error_body("invalid", "query parameter '%s' is required: %s",
					   p->name, p->doc);
			return 400;
		}
		if (!v)
			continue;
		j = convert(p, v, why, sizeof(why));
		if (!j) {
			*body = error_body("invalid", "%s", why);
			return 400;
		}
		json_object_set_new(args, p->arg, j);
	}
	return 0;
}

int rest_plan(const struct rest_req *req, struct rest_plan *plan, json_t **body, const char **allow)
{
	const char *segs[REST_SEGS_MAX];
	size_t lens[REST_SEGS_MAX];
	const struct rest_route *r = NULL;
	struct plan_vals pv = {0};
	int n = split(req->path, segs, lens), path_known = 0, st;
	json_t *args = NULL;

	memset(plan, 0, sizeof(*plan));
	*body = NULL;
	*allow = NULL;
	for (size_t i = 0; n >= 0 && i < ROUTES_LEN; i++) {
		if (!match(&ROUTES[i], segs, lens, n, pv.vals, pv.lens, pv.names, pv.nlens, &pv.n))
			continue;
		if (strcmp(ROUTES[i].method, req->method) != 0) {
			if (!path_known)
				*allow = ROUTES[i].method;
			path_known = 1;
			continue;
		}
		r = &ROUTES[i];
		break;
	}
	if (!r && path_known) {
		*body = error_body("method_not_allowed", "%s %s: this path accepts %s only",
				   req->method, req->path, *allow);
		return 405;
	}
	if (!r) {
		*body = error_body("not_found",
				   "no route for %s %s; GET /v1/openapi.json lists the API",
				   req->method, req->path);
		return 404;
	}
	plan->kind = r->kind;
	plan->tool = r->tool;
	st = plan_args(req, r, &args, body);
	if (!st)
		st = plan_params(req, r, &pv, args, body);
	if (st) {
		json_decref(args);
		return st;
	}
	plan->args = args;
	return 0;
}

void rest_plan_fini(struct rest_plan *plan)
{
	if (!plan)
		return;
	json_decref(plan->args);
	plan->args = NULL;
}

/* The HTTP status for a tool-level error code name. */
static int status_of_code(const char *code)
{
	/* clang-format off */
	static const struct {
		const char *code;
		int status;
	} MAP[] = {
		{ "invalid", 400 },   { "not_found", 404 }, { "too_big", 413 },
		{ "busy", 503 },      { "no_gpu", 503 },    { "timeout", 504 },
		{ "cancelled", 499 }, { "refused", 403 },   { "compile_error", 422 },
		{ "fault", 422 },
	};
	/* clang-format on */
	for (size_t i = 0; code && i < sizeof(MAP) / sizeof(MAP[0]); i++)
		if (!strcmp(MAP[i].code, code))
			return MAP[i].status;
	return 500;
}

int rest_run(struct app *app, const struct rest_plan *plan, const struct rest_info *info,
	     json_t **body)
{
	struct kf_err err = {0};
	json_t *result = NULL;
	int is_error = 0, rc;

	*body = NULL;
	if (plan->kind == REST_HEALTH) {
		*body = json_pack(
			"{s:s,s:s,s:s,s:f,s:I,s:I,s:s,s:b}", "summary", "kforge is up", "status",
			"ok", "version", KFORGE_VERSION, "uptime_s", info ? info->uptime_s : 0.0,
			"sessions", (json_int_t)(info ? info->sessions : 0), "inflight",
			(json_int_t)(info ? info->inflight : 0), "listen",
			info && info->listen ? info->listen : "", "auth", info ? info->auth : 0);
		return *body ? 200 : 500;
	}
	if (plan->kind == REST_OPENAPI) {
		*body = rest_openapi();
		return *body ? 200 : 500;
	}
	if (plan->kind == REST_STREAM) {
		*body = error_body("not_found", "%s is not served by this server",
				   "/v1/dataset.jsonl");
		return 404;
	}
	rc = mcp_tool_call_as(app, plan->client, plan->tool, plan->args, &result, &is_error, &err);
	if (rc == KF_ENOTFOUND) {
		*body = error_body("not_found", "no such tool '%s' in this build: %s", plan->tool,
				   err.msg[0] ? err.msg : "it is not registered");
		return 404;
	}
	if (rc) {
		*body = error_body(kf_err_name(rc), "%s", err.msg[0] ? err.msg : kf_err_name(rc));
		return rc == KF_EINVAL ? 400 : status_of_code(kf_err_name(rc));
	}
	*body = result;
	if (!is_error)
		return 200;
	{
		const json_t *e = json_object_get(result, "error");
		const char *code = json_string_value(json_object_get(e, "code"));
		/* A failed check or a compile error without an error object is the
		 * kernel's fault, a complete answer: 422. */
		return code ? status_of_code(code) : 422;
	}
}

/* --- OpenAPI ------------------------------------------------------------------ */

static const char *ptype_schema(enum rest_ptype t)
{
	switch (t) {
	case RP_INT: return "{\"type\":\"integer\"}";
	case RP_BOOL: return "{\"type\":\"boolean\"}";
	case RP_CSV: return "{\"type\":\"string\",\"pattern\":\"^[^,]+(,[^,]+)*$\"}";
	default: return "{\"type\":\"string\"}";
	}
}

static json_t *responses(const struct rest_route *r)
{
	json_t *res = json_object();
	json_t *ok = json_pack(
		"{s:s,s:{s:{s:{s:s}}}}", "description",
		r->kind == REST_TOOL ? "the tool's structuredContent (summary first)" : "OK",
		"content", r->kind == REST_STREAM ? "application/x-ndjson" : "application/json",
		"schema", "type", "object");

	json_object_set_new(res, "200", ok);
	if (r->kind == REST_TOOL) {
		json_object_set_new(res, "400",
				    json_pack("{s:s,s:s}", "description",
					      "invalid arguments (the message names the field)",
					      "$ref", "#/components/responses/Error"));
		json_object_set_new(res, "404",
				    json_pack("{s:s}", "$ref", "#/components/responses/Error"));
		json_object_set_new(res, "413",
				    json_pack("{s:s}", "$ref", "#/components/responses/Error"));
		json_object_set_new(res, "422",
				    json_pack("{s:s}", "$ref", "#/components/responses/Error"));
		json_object_set_new(res, "503",
				    json_pack("{s:s}", "$ref", "#/components/responses/Error"));
	}
	json_object_set_new(res, "401", json_pack("{s:s}", "$ref", "#/components/responses/Error"));
	return res;
}

json_t *rest_openapi(void)
{
	json_t *doc = json_pack(
		"{s:s,s:{s:s,s:s,s:s},s:{},s:{s:{s:{s:s,s:s}},s:{s:{s:s,s:{s:{s:{s:s,s:s,s:{s:{s:s}"
		",s:{s:s,s:{s:{s:s},s:{s:s}}}}}}}}}}}",
		"openapi", "3.1.0", "info", "title", "kforge REST API", "version", KFORGE_VERSION,
		"description",
		"GPU facts, CUDA optimization guides, sandboxed compile, check and benchmark of "
		"kernels, and the run history: the same operations as kforge's MCP tools. "
		"Every answer is the tool's JSON with a one-line summary first.",
		"paths", "components", "securitySchemes", "bearer", "type", "http", "scheme",
		"bearer", "responses", "Error", "description",
		"an error: summary and error.code (invalid, not_found, too_big, busy, no_gpu...)",
		"content", "application/json", "schema", "type", "object", "required", "summary",
		"properties", "summary", "type", "string", "error", "type", "object", "properties",
		"code", "type", "string", "message", "type", "string");
	json_t *paths;

	if (!doc)
		return NULL;
	json_object_set_new(doc, "security", json_pack("[{s:[]}]", "bearer"));
	paths = json_object_get(doc, "paths");
	for (size_t i = 0; i < ROUTES_LEN; i++) {
		const struct rest_route *r = &ROUTES[i];
		json_t *item = json_object_get(paths, r->path);
		json_t *op, *params = json_array();
		char method[8];
		size_t k;

		if (!item) {
			item = json_object();
			json_object_set_new(paths, r->path, item);
		}
		for (k = 0; r->method[k] && k + 1 < sizeof(method); k++)
			method[k] = (char)(r->method[k] | 0x20);
		method[k] = '\0';
		op = json_pack("{s:s}", "summary", r->summary);
		/* operationId must be unique: method and path ("get_v1_gpus_id"). */
		{
			char oid[128];
			size_t o = 0;
			for (const char *q = method; *q && o + 1 < sizeof(oid); q++)
				oid[o++] = *q;
			for (const char *q = r->path; *q && o + 1 < sizeof(oid); q++) {
				if (*q == '{' || *q == '}')
					continue;
				oid[o++] = (*q == '/' || *q == '.') ? '_' : *q;
			}
			oid[o] = '\0';
			json_object_set_new(op, "operationId", json_string(oid));
		}
		if (r->tool)
			json_object_set_new(op, "x-mcp-tool", json_string(r->tool));
		for (int p = 0; p < REST_PARAMS_MAX && r->params[p].name; p++) {
			const struct rest_param *rp = &r->params[p];
			char pat[72];
			int in_path;
			snprintf(pat, sizeof(pat), "{%s}", rp->name);
			in_path = strstr(r->path, pat) != NULL;
			json_array_append_new(
				params,
				json_pack("{s:s,s:s,s:b,s:s,s:o}", "name", rp->name, "in",
					  in_path ? "path" : "query", "required",
					  in_path || rp->required, "description", rp->doc, "schema",
					  json_loads(ptype_schema(rp->type), 0, NULL)));
		}
		if (json_array_size(params))
			json_object_set_new(op, "parameters", params);
		else
			json_decref(params);
		if (r->body)
			json_object_set_new(op, "requestBody",
					    json_pack("{s:b,s:s,s:{s:{s:{s:s}}}}", "required", 1,
						      "description",
						      "the tool's arguments as a JSON object (see "
						      "its inputSchema "
						      "via MCP tools/list or `kforge tools NAME`)",
						      "content", "application/json", "schema",
						      "type", "object"));
		if (r->kind == REST_HEALTH)
			json_object_set_new(op, "security", json_array());
		json_object_set_new(op, "responses", responses(r));
		json_object_set_new(item, method, op);
	}
	return doc;
}
