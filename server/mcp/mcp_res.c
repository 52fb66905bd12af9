/* mcp_res: the resources, prompts and completion methods of an MCP
 * session (list, read, templates, subscriptions, get, complete), over the
 * tables in tools.c. Split from mcp.c, which dispatches to these. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/jsonrpc.h"
#include "base/log.h"
#include "server/mcp/mcp_int.h"

/* --- resources --------------------------------------------------------------- */

/* RFC 6570 level-1 match: a {var} matches one or more characters other than
 * '/', or, as the template's last part, the rest of the uri. */
static int uri_match(const char *t, const char *u)
{
	while (*t) {
		if (*t == '{') {
			const char *close = strchr(t, '}');
			size_t n = 0;
			if (!close)
				return 0;
			t = close + 1;
			if (!*t)
				return *u != '\0';
			while (u[n] && u[n] != '/' && u[n] != *t)
				n++;
			if (n == 0)
				return 0;
			u += n;
			continue;
		}
		if (*t++ != *u++)
			return 0;
	}
	return *u == '\0';
}

static int is_template(const struct resource_def *r)
{
	return strchr(r->uri_template, '{') != NULL;
}

static const struct resource_def *resource_for(const char *uri)
{
	for (size_t i = 0; i < tools_resource_count(); i++) {
		const struct resource_def *r = tools_resource_at(i);
		if (uri_match(r->uri_template, uri))
			return r;
	}
	return NULL;
}

/* Maps a domain error to a JSON-RPC error for resources and prompts. */
static int rpc_code_of(int kf)
{
	switch (kf) {
	case KF_EINVAL: return JSONRPC_INVALID_PARAMS;
	case KF_ENOTFOUND: return MCP_RESOURCE_NOT_FOUND;
	default: return JSONRPC_INTERNAL_ERROR;
	}
}

/* Replies to a list request with the page of all (taken) that params'
 * cursor selects, as result[key], with nextCursor when more follow. */
static void reply_page(struct mcp_session *s, const json_t *id, const json_t *params, void *call,
		       json_t *all, const char *key)
{
	size_t start, i, total = json_array_size(all);
	if (mcp_page_start(s, id, params, call, total, &start)) {
		json_decref(all);
		return;
	}
	json_t *page = json_array();
	for (i = start; i < total && i < start + MCP_PAGE_SIZE; i++)
		json_array_append(page, json_array_get(all, i));
	json_decref(all);
	json_t *result = json_pack("{s:o}", key, page);
	mcp_page_finish(result, i, total);
	mcp_reply(s, call, id, result);
}

void mcp_resources_list(struct mcp_session *s, const json_t *id, const json_t *params, void *call)
{
	json_t *all = json_array();
	struct kf_err err = {0};
	size_t i;

	for (i = 0; i < tools_resource_count(); i++) {
		const struct resource_def *r = tools_resource_at(i);
		if (r->list) {
			/* One family failing (the knowledge base missing) must not
			 * hide the others: skip it, say why in the log. */
			json_t *part = json_array();
			int rc = r->list(s->app, part, &err);
			if (rc) {
				log_warn("mcp", "resources/list: skipping %s: %s", r->uri_template,
					 err.msg);
				kf_err_clear(&err);
			} else {
				json_array_extend(all, part);
			}
			json_decref(part);
		} else if (!is_template(r)) {
			json_t *o = json_pack("{s:s,s:s}", "uri", r->uri_template, "name", r->name);
			mcp_set_str(o, "title", r->title);
			mcp_set_str(o, "description", r->description);
			mcp_set_str(o, "mimeType", r->mime_type);
			json_array_append_new(all, o);
		}
	}
	reply_page(s, id, params, call, all, "resources");
}

void mcp_templates_list(struct mcp_session *s, const json_t *id, const json_t *params, void *call)
{
	json_t *all = json_array();
	size_t i;

	for (i = 0; i < tools_resource_count(); i++) {
		const struct resource_def *r = tools_resource_at(i);
		json_t *o;
		if (!is_template(r))
			continue;
		o = json_pack("{s:s,s:s}", "uriTemplate", r->uri_template, "name", r->name);
		mcp_set_str(o, "title", r->title);
		mcp_set_str(o, "description", r->description);
		mcp_set_str(o, "mimeType", r->mime_type);
		json_array_append_new(all, o);
	}
	reply_page(s, id, params, call, all, "resourceTemplates");
}

static const char *need_uri(struct mcp_session *s, const json_t *id, const json_t *params,
			    void *call)
{
	const char *uri = json_string_value(json_object_get(params, "uri"));

	if (!uri || !*uri)
		mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
				"Invalid params: params.uri must be a non-empty string");
	return uri && *uri ? uri : NULL;
}

void mcp_resources_read(struct mcp_session *s, const json_t *id, const json_t *params, void *call)
{
	const char *uri = need_uri(s, id, params, call);
	const struct resource_def *r;
	struct kf_err err = {0};
	json_t *contents = NULL;
	int rc;

	if (!uri)
		return;
	r = resource_for(uri);
	if (!r || !r->read) {
		size_t len;
		char *text = jsonrpc_error(id, MCP_RESOURCE_NOT_FOUND, "Resource not found",
					   json_pack("{s:s}", "uri", uri), &len);
		mcp_send_text(s, call, 1, id, text, len);
		return;
	}
	rc = r->read(s->app, uri, &contents, &err);
	if (rc || !json_is_array(contents)) {
		json_decref(contents);
		if (!rc)
			kf_err_set(&err, KF_EINTERNAL, "reader returned no contents array");
		mcp_reply_error(s, call, id, rpc_code_of(rc), "%s: %s",
				rc == KF_ENOTFOUND ? "Resource not found" : "Cannot read resource",
				err.msg[0] ? err.msg : uri);
		return;
	}
	mcp_reply(s, call, id, json_pack("{s:o}", "contents", contents));
}

void mcp_subscribe(struct mcp_session *s, const json_t *id, const json_t *params, void *call,
		   int on)
{
	const char *uri = need_uri(s, id, params, call);

	if (!uri)
		return;
	if (on && strlen(uri) > MCP_SUB_URI_MAX) {
		mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
				"Invalid params: params.uri is %zu bytes; a subscription's URI is "
				"at most %d",
				strlen(uri), MCP_SUB_URI_MAX);
		return;
	}
	if (on && !resource_for(uri)) {
		mcp_reply_error(s, call, id, MCP_RESOURCE_NOT_FOUND, "Resource not found: %s", uri);
		return;
	}
	pthread_mutex_lock(&s->lock);
	if (on && !json_object_get(s->subs, uri) &&
	    json_object_size(s->subs) >= MCP_SESSION_MAX_SUBS) {
		pthread_mutex_unlock(&s->lock);
		mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
				"Invalid params: this session already has %d subscriptions, the "
				"cap; unsubscribe from one first",
				MCP_SESSION_MAX_SUBS);
		return;
	}
	if (on)
		json_object_set_new(s->subs, uri, json_true());
	else
		json_object_del(s->subs, uri);
	pthread_mutex_unlock(&s->lock);
	mcp_reply(s, call, id, json_object());
}

/* --- prompts ------------------------------------------------------------------ */

void mcp_prompts_list(struct mcp_session *s, const json_t *id, const json_t *params, void *call)
{
	size_t total = tools_prompt_count(), start, i;
	json_t *arr, *result;

	if (mcp_page_start(s, id, params, call, total, &start))
		return;
	arr = json_array();
	for (i = start; i < total && i < start + MCP_PAGE_SIZE; i++) {
		const struct prompt_def *p = tools_prompt_at(i);
		json_t *o = json_pack("{s:s}", "name", p->name), *args = json_array();
		mcp_set_str(o, "title", p->title);
		mcp_set_str(o, "description", p->description);
		for (const struct prompt_arg *a = p->args; a && a->name; a++) {
			json_t *ao =
				json_pack("{s:s,s:b}", "name", a->name, "required", a->required);
			mcp_set_str(ao, "description", a->description);
			json_array_append_new(args, ao);
		}
		json_object_set_new(o, "arguments", args);
		json_array_append_new(arr, o);
	}
	result = json_pack("{s:o}", "prompts", arr);
	mcp_page_finish(result, i, total);
	mcp_reply(s, call, id, result);
}

void mcp_prompts_get(struct mcp_session *s, const json_t *id, const json_t *params, void *call)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *args = json_object_get(params, "arguments"), *messages = NULL;
	const struct prompt_def *p;
	struct kf_err err = {0};
	const char *key;
	json_t *v, *result;
	int rc;

	if (!name) {
		mcp_reply_error(
			s, call, id, JSONRPC_INVALID_PARAMS,
			"Invalid params: params.name must be a prompt name (see prompts/list)");
		return;
	}
	p = tools_prompt_find(name);
	if (!p) {
		mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
				"Invalid params: unknown prompt '%s' (see prompts/list)", name);
		return;
	}
	if (args && !json_is_object(args)) {
		mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
				"Invalid params: params.arguments must be an object of strings");
		return;
	}
	json_object_foreach(args, key, v) {
		const struct prompt_arg *a = p->args;
		while (a && a->name && strcmp(a->name, key) != 0)
			a++;
		if (!a || !a->name) {
			mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
					"Invalid params: prompt '%s' has no argument '%s'", name,
					key);
			return;
		}
		if (!json_is_string(v)) {
			mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
					"Invalid params: arguments.%s must be a string", key);
			return;
		}
	}
	for (const struct prompt_arg *a = p->args; a && a->name; a++)
		if (a->required && !json_object_get(args, a->name)) {
			mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
					"Invalid params: prompt '%s' needs argument '%s'", name,
					a->name);
			return;
		}
	v = args ? json_incref(args) : json_object();
	rc = p->get(s->app, v, &messages, &err);
	json_decref(v);
	if (rc || !json_is_array(messages)) {
		json_decref(messages);
		if (!rc)
			kf_err_set(&err, KF_EINTERNAL, "prompt returned no messages");
		mcp_reply_error(s, call, id,
				rc == KF_EINVAL ? JSONRPC_INVALID_PARAMS : JSONRPC_INTERNAL_ERROR,
				"prompt '%s': %s", name, err.msg);
		return;
	}
	result = json_object();
	mcp_set_str(result, "description", p->description);
	json_object_set_new(result, "messages", messages);
	mcp_reply(s, call, id, result);
}

/* --- completion, logging ---------------------------------------------------- */

static int template_has_var(const char *t, const char *var)
{
	size_t n = strlen(var);

	for (const char *p = strchr(t, '{'); p; p = strchr(p + 1, '{'))
		if (strncmp(p + 1, var, n) == 0 && p[1 + n] == '}')
			return 1;
	return 0;
}

void mcp_complete(struct mcp_session *s, const json_t *id, const json_t *params, void *call)
{
	json_t *ref = json_object_get(params, "ref");
	json_t *arg = json_object_get(params, "argument");
	const char *type = json_string_value(json_object_get(ref, "type"));
	const char *an = json_string_value(json_object_get(arg, "name"));
	const char *value = json_string_value(json_object_get(arg, "value"));
	json_t *values = json_array(), *result;
	struct kf_err err = {0};
	int rc = 0;
	size_t total;

	if (!type || !an || !value) {
		json_decref(values);
		mcp_reply_error(
			s, call, id, JSONRPC_INVALID_PARAMS,
			"Invalid params: completion/complete needs ref.type, argument.name and argument.value (strings)");
		return;
	}
	if (strcmp(type, "ref/prompt") == 0) {
		const char *pn = json_string_value(json_object_get(ref, "name"));
		const struct prompt_def *p = pn ? tools_prompt_find(pn) : NULL;
		const struct prompt_arg *a = p ? p->args : NULL;
		while (a && a->name && strcmp(a->name, an) != 0)
			a++;
		if (!p || !a || !a->name) {
			json_decref(values);
			mcp_reply_error(s, call, id, JSONRPC_INVALID_PARAMS,
					"Invalid params: %s '%s'%s%s",
					p ? "prompt" : "unknown prompt", pn ? pn : "",
					p ? " has no argument " : "", p ? an : "");
			return;
		}
		if (p->complete)
			rc = p->complete(s->app, an, value, values, &err);
	} else if (strcmp(type, "ref/resource") == 0) {
		const char *uri = json_string_value(json_object_get(ref, "uri"));
		const struct resource_def *r = NULL;
		for (size_t i = 0; uri && i < tools_resource_count(); i++)
			if (strcmp(tools_resource_at(i)->uri_template, uri) == 0)
				r = tools_resource_at(i);
		if (!r || !template_has_var(r->uri_template, an)) {
			json_decref(values);
			mcp_reply_error(
				s, call, id, JSONRPC_INVALID_PARAMS, "Invalid params: %s%s%s",
				r ? "no variable '" : "unknown resource template '",
				r ? an : (uri ? uri : ""),
				r ? "' in that template" : "' (see resources/templates/list)");
			return;
		}
		if (r->complete)
			rc = r->complete(s->app, an, value, values, &err);
	} else {
		json_decref(values);
		mcp_reply_error(
			s, call, id, JSONRPC_INVALID_PARAMS,
			"Invalid params: ref.type must be \"ref/prompt\" or \"ref/resource\"");
		return;
	}
	if (rc) {
		json_decref(values);
		mcp_reply_error(s, call, id, JSONRPC_INTERNAL_ERROR,
				"Internal error: completion failed: %s", err.msg);
		return;
	}
	total = json_array_size(values);
	while (json_array_size(values) > MCP_COMPLETION_MAX)
		json_array_remove(values, json_array_size(values) - 1);
	result = json_pack("{s:{s:o,s:I,s:b}}", "completion", "values", values, "total",
			   (json_int_t)total, "hasMore", total > MCP_COMPLETION_MAX);
	mcp_reply(s, call, id, result);
}
