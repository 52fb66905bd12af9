/* tools_compile: the compile group (TOOLS_COMPILE): the compile_kernel tool
 * and the kforge://artifacts/{id}/{kind} resources (PTX, SASS listing,
 * compiler log, source). The handler only shapes arguments into a
 * compile_req (sandbox/compile/compile.h, thread-safe), records the run in the
 * history and adds the PTX resource link; the answer is written from the
 * result struct in tools_compile_json.c. A compile error is a normal
 * result with isError and the diagnostics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/app.h"
#include "server/mcp/mcp.h"
#include "base/log.h"
#include "sandbox/compile/cache.h"
#include "sandbox/compile/compile.h"
#include "sandbox/history/history.h"
#include "server/mcp/tools.h"
#include "server/tools/tools_compile_int.h"
#include "server/tools/tools_runs.h"

#define ARTIFACT_URI	  "kforge://artifacts/"
#define ARTIFACT_READ_CAP (32u << 20)

static int need_cc(struct app *app, struct kf_err *err)
{
	if (!app || !app->cc)
		return kf_err_set(err, KF_ESANDBOX,
				  "the compiler is not available (nvcc not found at startup)");
	return 0;
}

/* Records the call in the run history and adds its run_id to result.
 * Returns 0, or KF_EDB when state.db refused it (a full disk): then the
 * reason is logged and result gains "error" and a summary that say so. */
static int record(struct app *app, const json_t *args, const char *src, size_t src_len, int rc,
		  json_t *result)
{
	if (!app->history || !result)
		return 0;
	char kernels[1024] = "", hash[CACHE_ID_LEN + 1];
	size_t n = 0, i;
	json_t *k;
	json_array_foreach(json_object_get(result, "kernels"), i, k) {
		const char *name = json_string_value(json_object_get(k, "name"));
		if (name && n + strlen(name) + 2 < sizeof kernels)
			n += (size_t)snprintf(kernels + n, sizeof kernels - n, "%s%s", n ? "," : "",
					      name);
	}
	struct cache_sha256 s;
	cache_sha256_init(&s);
	cache_sha256_update(&s, src, src_len);
	cache_sha256_final_hex(&s, hash);
	struct history_run run = {
		.kind = HISTORY_COMPILE,
		.status = rc == 0	      ? HISTORY_OK
			  : rc == KF_ECOMPILE ? HISTORY_FAILED
					      : HISTORY_ERROR,
		.duration_ms = json_integer_value(json_object_get(result, "compile_ms")),
		.kernels = kernels,
		.source_hash = hash,
		.summary = (char *)json_string_value(json_object_get(result, "summary")),
		.spec = (json_t *)args,
		.result = result,
	};
	struct kf_err herr = {0};
	if (history_add(app->history, &run, &herr) == 0) {
		json_object_set_new(result, "run_id", json_string(run.id));
		return 0;
	}
	log_warn("compile", "run not recorded: %s", herr.msg);
	char msg[600];
	snprintf(msg, sizeof msg,
		 "the run could not be recorded in the history: %s; the compile: %s", herr.msg,
		 run.summary ? run.summary : "");
	json_object_set_new(result, "summary", json_string(msg));
	json_object_set_new(result, "error", mcp_error_member(kf_err_name(KF_EDB), msg));
	return KF_EDB;
}

/* A compile refused before it ran (a refused flag, a bad arch, busy, no
 * compiler) is a run too: recorded as an error and answered with its
 * run_id. Returns rc. */
static int refused(struct app *app, const json_t *args, int rc, const struct kf_err *err,
		   json_t **out)
{
	const char *msg = err && err->msg[0] ? err->msg : kf_err_name(rc);
	/* The server's own trouble (disk, database, sandbox) is the
	 * operator's to see, not only the client's. */
	if (rc == KF_EIO || rc == KF_EDB || rc == KF_ENOMEM || rc == KF_ESANDBOX)
		log_warn("compile", "%s", msg);
	*out = mcp_error_answer(kf_err_name(rc), msg);
	if (app && app->history && *out)
		tools_runs_record(app, HISTORY_COMPILE, args, *out, rc, msg, -1, 0, NULL);
	return rc;
}

static int compile_handler(struct tool_ctx *ctx, const json_t *args, json_t **out,
			   struct kf_err *err)
{
	struct app *app = mcp_call_app(ctx);
	int rc = need_cc(app, err);
	if (rc)
		return refused(app, args, rc, err, out);
	const char *src = json_string_value(json_object_get(args, "source"));
	size_t src_len = json_string_length(json_object_get(args, "source"));
	const json_t *jf = json_object_get(args, "flags");
	char **split = NULL;
	const char *flags[COMPILE_FLAGS_MAX];
	size_t nflags = 0;
	if (json_is_string(jf)) {
		rc = compile_split_flags(json_string_value(jf), &split, &nflags, err);
		if (rc)
			return refused(app, args, rc, err, out);
		for (size_t i = 0; i < nflags; i++)
			flags[i] = split[i];
	} else if (json_is_array(jf)) {
		size_t i;
		json_t *v;
		if (json_array_size(jf) > COMPILE_FLAGS_MAX)
			return refused(app, args,
				       kf_err_set(err, KF_ETOOBIG, "flags: %zu given, at most %d",
						  json_array_size(jf), COMPILE_FLAGS_MAX),
				       err, out);
		json_array_foreach(jf, i, v)
			flags[nflags++] = json_string_value(v);
	}
	struct compile_req req = {
		.source = src,
		.source_len = src_len,
		.arch = json_string_value(json_object_get(args, "arch")),
		.flags = flags,
		.flags_len = nflags,
		.want_ptx = json_is_true(json_object_get(args, "want_ptx")),
		.want_sass = json_is_true(json_object_get(args, "want_sass")),
		.cancel = mcp_call_cancel_flag(ctx),
		.client = mcp_call_client(ctx),
	};
	mcp_call_progress(ctx, 0, 1, "compiling");
	struct compile_result res;
	rc = compile_kernel(app->cc, &req, &res, err);
	compile_flags_free(split);
	json_t *answer = tools_compile_json(&res);
	if (!answer && rc) {
		compile_result_fini(&res);
		return refused(app, args, rc, err, out);
	}
	if (answer) {
		int hrc = record(app, args, src, src_len, rc, answer);
		if (hrc && !rc)
			rc = kf_err_set(err, hrc, "%s",
					json_string_value(json_object_get(answer, "summary")));
		json_t *ptx = json_object_get(answer, "ptx");
		if (json_is_object(ptx)) {
			/* The PTX travels as a resource link, never inline. */
			char *txt = json_dumps(answer, JSON_COMPACT);
			json_t *content = json_array();
			json_array_append_new(content, json_pack("{s:s,s:s}", "type", "text",
								 "text", txt ? txt : ""));
			json_array_append_new(
				content, json_pack("{s:s,s:O,s:s,s:s,s:O}", "type", "resource_link",
						   "uri", json_object_get(ptx, "uri"), "name",
						   "kernel.ptx", "mimeType", "text/plain", "size",
						   json_object_get(ptx, "bytes")));
			free(txt);
			mcp_call_set_content(ctx, content);
		}
		*out = answer;
	}
	compile_result_fini(&res);
	mcp_call_progress(ctx, 1, 1, rc == 0 ? "compiled" : "done");
	return rc;
}

/* ---- resources: kforge://artifacts/{id}/{kind} -------------------------- */

static const char *const KINDS[] = {"ptx", "sass", "log", "source"};
static const char *const MIMES[] = {"text/plain", "text/plain", "text/plain", "text/x-cuda"};

static int art_read(struct app *app, const char *uri, json_t **contents, struct kf_err *err)
{
	int rc = need_cc(app, err);
	if (rc)
		return rc;
	if (strncmp(uri, ARTIFACT_URI, strlen(ARTIFACT_URI)) != 0)
		return kf_err_set(err, KF_ENOTFOUND, "not an artifact uri: %.80s", uri);
	const char *id = uri + strlen(ARTIFACT_URI);
	const char *slash = strchr(id, '/');
	if (!slash || slash - id != CACHE_ID_LEN)
		return kf_err_set(
			err, KF_ENOTFOUND,
			"artifact uri '%.120s': expected kforge://artifacts/<64-hex id>/<ptx|sass|log|source>",
			uri);
	char idbuf[CACHE_ID_LEN + 1];
	memcpy(idbuf, id, CACHE_ID_LEN);
	idbuf[CACHE_ID_LEN] = 0;
	const char *kind = slash + 1;
	size_t k = 0;
	for (; k < sizeof KINDS / sizeof KINDS[0]; k++)
		if (!strcmp(kind, KINDS[k]))
			break;
	if (k == sizeof KINDS / sizeof KINDS[0])
		return kf_err_set(err, KF_ENOTFOUND,
				  "artifact part '%.32s' unknown: ptx, sass, log or source", kind);
	char *data = NULL;
	size_t len = 0;
	rc = compile_artifact_read(app->cc, idbuf, kind, ARTIFACT_READ_CAP, &data, &len, err);
	if (rc)
		return rc == KF_EINVAL ? KF_ENOTFOUND : rc;
	*contents =
		json_pack("[{s:s,s:s,s:s%}]", "uri", uri, "mimeType", MIMES[k], "text", data, len);
	free(data);
	if (!*contents)
		return kf_err_set(err, KF_EIO, "artifact %s/%s is not text", idbuf, kind);
	return 0;
}

static int art_complete(struct app *app, const char *var, const char *prefix, json_t *arr,
			struct kf_err *err)
{
	(void)app;
	(void)err;
	if (strcmp(var, "kind") != 0)
		return 0;
	for (size_t k = 0; k < sizeof KINDS / sizeof KINDS[0]; k++)
		if (!strncmp(KINDS[k], prefix, strlen(prefix)))
			json_array_append_new(arr, json_string(KINDS[k]));
	return 0;
}

static const struct tool_def COMPILE_TOOLS[] = {
	{
		.name = "compile_kernel",
		.title = "Compile a kernel",
		.description =
			"Compiles CUDA device code in a sandbox (cached): diagnostics; per kernel "
			"registers, shared/local memory, spills, occupancy.",
		.input_schema =
			"{\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"source\"], "
			"\"properties\": {"
			"\"source\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 1048576, "
			"\"description\": \"__global__ kernels, no host code (extern \\\"C\\\" keeps names)\"},"
			"\"arch\": {\"type\": \"string\", \"minLength\": 5, \"maxLength\": 8, "
			"\"description\": \"e.g. sm_90a; default the local GPU, else sm_90\"},"
			"\"flags\": {\"type\": [\"array\", \"string\"], \"maxItems\": 64, "
			"\"items\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 150}, "
			"\"description\": \"allowlisted: -O3, --use_fast_math, -lineinfo, -maxrregcount=N, "
			"-D...\"},"
			"\"want_ptx\": {\"type\": \"boolean\", \"default\": false, \"description\": \"the PTX as a resource link\"},"
			"\"want_sass\": {\"type\": \"boolean\", \"default\": false, \"description\": \"a SASS summary\"}}}",
		.output_schema =
			"{\"type\": \"object\", \"required\": [\"summary\", \"ok\"], \"properties\": {"
			"\"summary\": {\"type\": \"string\"}, \"ok\": {\"type\": \"boolean\"}}}",
		.annotations = TOOL_IDEMPOTENT,
		.handler = compile_handler,
	},
};

static const struct resource_def COMPILE_RESOURCES[] = {
	{
		.uri_template = "kforge://artifacts/{id}/{kind}",
		.name = "artifact",
		.title = "Compile artifact",
		.description =
			"A compile artifact by id (from compile_kernel): kind ptx (the PTX), "
			"sass (cuobjdump -sass listing, after want_sass), log (compiler output, "
			"paths rewritten) or source",
		.mime_type = "text/plain",
		.list = NULL,
		.read = art_read,
		.complete = art_complete,
	},
};

const struct tool_group TOOLS_COMPILE = {
	COMPILE_TOOLS,
	sizeof COMPILE_TOOLS / sizeof COMPILE_TOOLS[0],
	COMPILE_RESOURCES,
	sizeof COMPILE_RESOURCES / sizeof COMPILE_RESOURCES[0],
	NULL,
	0,
};
