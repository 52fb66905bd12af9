/* tools: the registry of every tool, resource and prompt group. Groups are
 * handed in by the composition root (app_tools_load in server/app.c);
 * tools_load_groups concatenates them, parses each tool's schemas once and
 * rejects a bad table at startup. After
 * startup the registry is read-only, so lookups need no lock. */
#include "server/mcp/tools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "server/mcp/schema.h"

#define REG_MAX_GROUPS 16

struct entry {
	const struct tool_def *def;
	struct schema *in;
	struct schema *out;
};

static struct {
	struct entry *tools;
	size_t tools_len;
	const struct resource_def **res;
	size_t res_len;
	const struct prompt_def **prompts;
	size_t prompts_len;
} reg;

static tool_admit_fn g_admit;
static tool_release_fn g_release;

void tools_set_admission(tool_admit_fn admit, tool_release_fn release)
{
	g_admit = admit;
	g_release = release;
}

void tools_admission(tool_admit_fn *admit, tool_release_fn *release)
{
	*admit = g_admit;
	*release = g_release;
}

static void reg_clear(void)
{
	for (size_t i = 0; i < reg.tools_len; i++) {
		schema_free(reg.tools[i].in);
		schema_free(reg.tools[i].out);
	}
	free(reg.tools);
	free(reg.res);
	free(reg.prompts);
	memset(&reg, 0, sizeof(reg));
}

static int name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 128)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return 0;
	}
	return 1;
}

static int load_tool(const struct tool_def *t, struct entry *e, struct kf_err *err)
{
	struct kf_err sub = {0};
	json_t *type;

	e->def = t;
	if (!name_ok(t->name))
		return kf_err_set(err, KF_EINVAL,
				  "tool '%s': name must be 1-128 characters of A-Z a-z 0-9 _ - .",
				  t->name ? t->name : "(null)");
	if (!t->handler || !t->description)
		return kf_err_set(err, KF_EINVAL, "tool '%s': needs a description and a handler",
				  t->name);
	if (schema_parse(t->input_schema ? t->input_schema : "{\"type\":\"object\"}", &e->in, &sub))
		return kf_err_set(err, KF_EINVAL, "tool '%s': inputSchema: %s", t->name, sub.msg);
	type = json_object_get(schema_json(e->in), "type");
	if (!json_is_string(type) || strcmp(json_string_value(type), "object") != 0)
		return kf_err_set(err, KF_EINVAL,
				  "tool '%s': inputSchema must have \"type\": \"object\"", t->name);
	if (t->output_schema) {
		if (schema_parse(t->output_schema, &e->out, &sub))
			return kf_err_set(err, KF_EINVAL, "tool '%s': outputSchema: %s", t->name,
					  sub.msg);
		type = json_object_get(schema_json(e->out), "type");
		if (!json_is_string(type) || strcmp(json_string_value(type), "object") != 0)
			return kf_err_set(err, KF_EINVAL,
					  "tool '%s': outputSchema must have \"type\": \"object\"",
					  t->name);
	}
	return 0;
}

int tools_load_groups(const struct tool_group *const *groups, size_t n, struct kf_err *err)
{
	size_t nt = 0, nr = 0, np = 0;
	int rc = 0;

	reg_clear();
	for (size_t g = 0; g < n; g++) {
		if (!groups[g])
			continue;
		nt += groups[g]->tools_len;
		nr += groups[g]->resources_len;
		np += groups[g]->prompts_len;
	}
	reg.tools = calloc(nt + 1, sizeof(*reg.tools));
	reg.res = calloc(nr + 1, sizeof(*reg.res));
	reg.prompts = calloc(np + 1, sizeof(*reg.prompts));
	if (!reg.tools || !reg.res || !reg.prompts) {
		rc = kf_err_set(err, KF_ENOMEM, "tools: out of memory");
		goto out;
	}
	for (size_t g = 0; g < n; g++) {
		const struct tool_group *gr = groups[g];
		if (!gr)
			continue;
		for (size_t i = 0; i < gr->tools_len; i++) {
			const struct tool_def *t = &gr->tools[i];
			if (t->name && tools_find(t->name)) {
				rc = kf_err_set(err, KF_EINVAL, "tool '%s' is registered twice",
						t->name);
				goto out;
			}
			rc = load_tool(t, &reg.tools[reg.tools_len], err);
			reg.tools_len++; /* counted even on failure, so reg_clear frees */
			if (rc)
				goto out;
		}
		for (size_t i = 0; i < gr->resources_len; i++) {
			const struct resource_def *r = &gr->resources[i];
			if (!r->uri_template || !r->name) {
				rc = kf_err_set(
					err, KF_EINVAL,
					"resource %zu of a group has no uri_template or name", i);
				goto out;
			}
			reg.res[reg.res_len++] = r;
		}
		for (size_t i = 0; i < gr->prompts_len; i++) {
			const struct prompt_def *p = &gr->prompts[i];
			if (!name_ok(p->name) || !p->get) {
				rc = kf_err_set(
					err, KF_EINVAL,
					"prompt '%s': needs a valid name and a get callback",
					p->name ? p->name : "(null)");
				goto out;
			}
			if (tools_prompt_find(p->name)) {
				rc = kf_err_set(err, KF_EINVAL, "prompt '%s' is registered twice",
						p->name);
				goto out;
			}
			reg.prompts[reg.prompts_len++] = p;
		}
	}
out:
	if (rc)
		reg_clear();
	return rc;
}

const struct tool_def *tools_find(const char *name)
{
	for (size_t i = 0; i < reg.tools_len; i++)
		if (reg.tools[i].def->name && strcmp(reg.tools[i].def->name, name) == 0)
			return reg.tools[i].def;
	return NULL;
}

size_t tools_count(void)
{
	return reg.tools_len;
}

const struct tool_def *tools_at(size_t i)
{
	return i < reg.tools_len ? reg.tools[i].def : NULL;
}

static const struct entry *entry_of(const struct tool_def *t)
{
	for (size_t i = 0; i < reg.tools_len; i++)
		if (reg.tools[i].def == t)
			return &reg.tools[i];
	return NULL;
}

const struct schema *tools_input_schema(const struct tool_def *t)
{
	const struct entry *e = entry_of(t);
	return e ? e->in : NULL;
}

const struct schema *tools_output_schema(const struct tool_def *t)
{
	const struct entry *e = entry_of(t);
	return e ? e->out : NULL;
}

size_t tools_resource_count(void)
{
	return reg.res_len;
}

const struct resource_def *tools_resource_at(size_t i)
{
	return i < reg.res_len ? reg.res[i] : NULL;
}

size_t tools_prompt_count(void)
{
	return reg.prompts_len;
}

const struct prompt_def *tools_prompt_at(size_t i)
{
	return i < reg.prompts_len ? reg.prompts[i] : NULL;
}

const struct prompt_def *tools_prompt_find(const char *name)
{
	for (size_t i = 0; i < reg.prompts_len; i++)
		if (strcmp(reg.prompts[i]->name, name) == 0)
			return reg.prompts[i];
	return NULL;
}
