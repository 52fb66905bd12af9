/* fixtures: the tools, resources and prompts the official MCP conformance
 * suite (@modelcontextprotocol/conformance 0.1.16, server scenarios)
 * expects, registered only with --conformance-fixtures. Names, texts and
 * shapes follow the suite's scenario descriptions; nothing here is part of
 * kforge's real surface. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/mcp/tools.h"

/* A 1x1 red PNG and a 1 ms 8 kHz silent WAV. */
static const char PNG_B64[] =
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
static const char WAV_B64[] =
	"UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

#define CLIENT_TIMEOUT_MS 60000

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static json_t *text_block(const char *text)
{
	return json_pack("{s:s,s:s}", "type", "text", "text", text);
}

static int content_only(struct tool_ctx *ctx, json_t *content)
{
	mcp_call_set_content(ctx, content);
	return 0;
}

/* --- tools -------------------------------------------------------------------- */

static int t_simple_text(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)args;
	(void)out;
	(void)err;
	return content_only(
		ctx, json_pack("[o]", text_block("This is a simple text response for testing.")));
}

static int t_image(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)args;
	(void)out;
	(void)err;
	return content_only(ctx, json_pack("[{s:s,s:s,s:s}]", "type", "image", "data", PNG_B64,
					   "mimeType", "image/png"));
}

static int t_audio(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)args;
	(void)out;
	(void)err;
	return content_only(ctx, json_pack("[{s:s,s:s,s:s}]", "type", "audio", "data", WAV_B64,
					   "mimeType", "audio/wav"));
}

static int t_embedded(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)args;
	(void)out;
	(void)err;
	return content_only(ctx,
			    json_pack("[{s:s,s:{s:s,s:s,s:s}}]", "type", "resource", "resource",
				      "uri", "test://embedded-resource", "mimeType", "text/plain",
				      "text", "This is an embedded resource content."));
}

static int t_mixed(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)args;
	(void)out;
	(void)err;
	return content_only(
		ctx, json_pack("[o,{s:s,s:s,s:s},{s:s,s:{s:s,s:s,s:s}}]",
			       text_block("Multiple content types test:"), "type", "image", "data",
			       PNG_B64, "mimeType", "image/png", "type", "resource", "resource",
			       "uri", "test://mixed-content-resource", "mimeType",
			       "application/json", "text", "{\"test\":\"data\",\"value\":123}"));
}

static int t_logging(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)args;
	(void)out;
	(void)err;
	mcp_call_log(ctx, "info", "Tool execution started");
	sleep_ms(50);
	mcp_call_log(ctx, "info", "Tool processing data");
	sleep_ms(50);
	mcp_call_log(ctx, "info", "Tool execution completed");
	return content_only(
		ctx, json_pack("[o]", text_block("Tool with logging executed successfully")));
}

static int t_progress(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)args;
	(void)out;
	for (int step = 0; step <= 2; step++) {
		if (*mcp_call_cancel_flag(ctx))
			return kf_err_set(err, KF_ECANCELED, "cancelled at step %d", step);
		mcp_call_progress(ctx, step * 50.0, 100.0, NULL);
		/* After the last one too: the TypeScript SDK runs notification
		 * handlers a microtask late, so a response read in the same
		 * chunk would otherwise retire the progress handler first. */
		sleep_ms(step < 2 ? 50 : 20);
	}
	return content_only(
		ctx, json_pack("[o]", text_block("Tool with progress executed successfully")));
}

static int t_error(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)args;
	(void)out;
	mcp_call_set_content(
		ctx, json_pack("[o]",
			       text_block("This tool intentionally returns an error for testing")));
	return kf_err_set(err, KF_EINVAL, "This tool intentionally returns an error for testing");
}

static int t_sampling(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	const char *prompt = json_string_value(json_object_get(args, "prompt"));
	json_t *res = NULL;
	char buf[1024];
	int rc;

	(void)out;
	if (!mcp_call_client_supports(ctx, "sampling"))
		return kf_err_set(err, KF_EPERM,
				  "the client did not declare the sampling capability");
	rc = mcp_call_request(ctx, "sampling/createMessage",
			      json_pack("{s:[{s:s,s:{s:s,s:s}}],s:i}", "messages", "role", "user",
					"content", "type", "text", "text", prompt, "maxTokens",
					100),
			      CLIENT_TIMEOUT_MS, &res, err);
	if (rc)
		return rc;
	snprintf(buf, sizeof(buf), "LLM response: %s",
		 json_string_value(json_object_get(json_object_get(res, "content"), "text"))
			 ?: "(no text)");
	json_decref(res);
	return content_only(ctx, json_pack("[o]", text_block(buf)));
}

/* Sends elicitation/create with schema (taken) and answers with prefix and
 * the client's action and content. */
static int elicit(struct tool_ctx *ctx, const char *message, json_t *schema, const char *prefix,
		  struct kf_err *err)
{
	json_t *res = NULL;
	char *content;
	char buf[2048];
	int rc;

	if (!mcp_call_client_supports(ctx, "elicitation")) {
		json_decref(schema);
		return kf_err_set(err, KF_EPERM,
				  "the client did not declare the elicitation capability");
	}
	rc = mcp_call_request(ctx, "elicitation/create",
			      json_pack("{s:s,s:o}", "message", message, "requestedSchema", schema),
			      CLIENT_TIMEOUT_MS, &res, err);
	if (rc)
		return rc;
	content = json_dumps(json_object_get(res, "content"), JSON_COMPACT | JSON_ENCODE_ANY);
	snprintf(buf, sizeof(buf), "%saction=%s, content=%s", prefix,
		 json_string_value(json_object_get(res, "action")) ?: "?",
		 content ? content : "null");
	free(content);
	json_decref(res);
	return content_only(ctx, json_pack("[o]", text_block(buf)));
}

static int t_elicitation(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)out;
	return elicit(ctx, json_string_value(json_object_get(args, "message")),
		      json_pack("{s:s,s:{s:{s:s,s:s},s:{s:s,s:s}},s:[s,s]}", "type", "object",
				"properties", "username", "type", "string", "description",
				"User's response", "email", "type", "string", "description",
				"User's email address", "required", "username", "email"),
		      "User response: ", err);
}

/* The stateless suite's probes: a tool that cannot work without the
 * sampling capability, and one that asks the user through elicitation. */
static int t_needs_sampling(struct tool_ctx *ctx, const json_t *args, json_t **out,
			    struct kf_err *err)
{
	json_t *a = json_pack("{s:s}", "prompt", "Say hello");
	int rc;

	(void)args;
	rc = t_sampling(ctx, a, out, err);
	json_decref(a);
	return rc;
}

static int t_streaming_elicitation(struct tool_ctx *ctx, const json_t *args, json_t **out,
				   struct kf_err *err)
{
	json_t *a = json_pack("{s:s}", "message", "Please provide your details");
	int rc;

	(void)args;
	rc = t_elicitation(ctx, a, out, err);
	json_decref(a);
	return rc;
}

static int t_elicit_defaults(struct tool_ctx *ctx, const json_t *args, json_t **out,
			     struct kf_err *err)
{
	json_t *schema = json_loads(
		"{\"type\":\"object\",\"properties\":{"
		"\"name\":{\"type\":\"string\",\"default\":\"John Doe\"},"
		"\"age\":{\"type\":\"integer\",\"default\":30},"
		"\"score\":{\"type\":\"number\",\"default\":95.5},"
		"\"status\":{\"type\":\"string\",\"enum\":[\"active\",\"inactive\",\"pending\"],\"default\":\"active\"},"
		"\"verified\":{\"type\":\"boolean\",\"default\":true}}}",
		0, NULL);

	(void)args;
	(void)out;
	return elicit(ctx, "Please review and update the form fields with defaults", schema,
		      "Elicitation completed: ", err);
}

static int t_elicit_enums(struct tool_ctx *ctx, const json_t *args, json_t **out,
			  struct kf_err *err)
{
	json_t *schema = json_loads(
		"{\"type\":\"object\",\"properties\":{"
		"\"untitledSingle\":{\"type\":\"string\",\"enum\":[\"option1\",\"option2\",\"option3\"]},"
		"\"titledSingle\":{\"type\":\"string\",\"oneOf\":["
		"{\"const\":\"value1\",\"title\":\"First Option\"},"
		"{\"const\":\"value2\",\"title\":\"Second Option\"},"
		"{\"const\":\"value3\",\"title\":\"Third Option\"}]},"
		"\"legacyEnum\":{\"type\":\"string\",\"enum\":[\"opt1\",\"opt2\",\"opt3\"],"
		"\"enumNames\":[\"Option One\",\"Option Two\",\"Option Three\"]},"
		"\"untitledMulti\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
		"\"enum\":[\"option1\",\"option2\",\"option3\"]}},"
		"\"titledMulti\":{\"type\":\"array\",\"items\":{\"anyOf\":["
		"{\"const\":\"value1\",\"title\":\"First Choice\"},"
		"{\"const\":\"value2\",\"title\":\"Second Choice\"},"
		"{\"const\":\"value3\",\"title\":\"Third Choice\"}]}}}}",
		0, NULL);

	(void)args;
	(void)out;
	return elicit(ctx, "Please select options from the enum fields", schema,
		      "Elicitation completed: ", err);
}

static int t_schema_2020(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	char *s = json_dumps(args, JSON_COMPACT);
	char buf[1024];

	(void)out;
	(void)err;
	snprintf(buf, sizeof(buf), "Received: %s", s ? s : "{}");
	free(s);
	return content_only(ctx, json_pack("[o]", text_block(buf)));
}

static int t_reconnection(struct tool_ctx *ctx, const json_t *args, json_t **out,
			  struct kf_err *err)
{
	(void)args;
	(void)out;
	(void)err;
	sleep_ms(100);
	return content_only(ctx, json_pack("[o]", text_block("Reconnection test completed")));
}

/* The tasks suite's fixtures: a quick tool that never becomes a task, a
 * task that works for params.seconds (stopping when cancelled), and one
 * that fails at the tool level after a second. */
static int t_greet(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	char buf[160];

	(void)out;
	(void)err;
	snprintf(buf, sizeof(buf), "Hello, %.100s!",
		 json_string_value(json_object_get(args, "name")) ?: "world");
	return content_only(ctx, json_pack("[o]", text_block(buf)));
}

static int t_slow_compute(struct tool_ctx *ctx, const json_t *args, json_t **out,
			  struct kf_err *err)
{
	double secs = json_number_value(json_object_get(args, "seconds"));
	char buf[160];

	(void)out;
	for (int ms = 0; ms < (int)(secs * 1000); ms += 50) {
		if (*mcp_call_cancel_flag(ctx))
			return kf_err_set(err, KF_ECANCELED, "cancelled after %d ms", ms);
		mcp_call_progress(ctx, ms, secs * 1000, "computing");
		sleep_ms(50);
	}
	snprintf(buf, sizeof(buf), "Computed %.100s after %g s",
		 json_string_value(json_object_get(args, "label")) ?: "result", secs);
	return content_only(ctx, json_pack("[o]", text_block(buf)));
}

static int t_failing_job(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)args;
	(void)out;
	sleep_ms(1000);
	if (*mcp_call_cancel_flag(ctx))
		return kf_err_set(err, KF_ECANCELED, "cancelled");
	return kf_err_set(err, KF_EINVAL, "failing_job always fails (a tool-level error)");
}

#define NO_ARGS "{\"type\":\"object\",\"properties\":{}}"

static const struct tool_def FIXTURE_TOOLS[] = {
	{"test_simple_text", "Simple text", "Returns a simple text response.", NO_ARGS, NULL,
	 TOOL_READ_ONLY | TOOL_FAST, t_simple_text},
	{"test_image_content", "Image content", "Returns a 1x1 PNG image.", NO_ARGS, NULL,
	 TOOL_READ_ONLY | TOOL_FAST, t_image},
	{"test_audio_content", "Audio content", "Returns a short WAV clip.", NO_ARGS, NULL,
	 TOOL_READ_ONLY | TOOL_FAST, t_audio},
	{"test_embedded_resource", "Embedded resource", "Returns an embedded text resource.",
	 NO_ARGS, NULL, TOOL_READ_ONLY | TOOL_FAST, t_embedded},
	{"test_multiple_content_types", "Mixed content",
	 "Returns text, an image and an embedded resource.", NO_ARGS, NULL,
	 TOOL_READ_ONLY | TOOL_FAST, t_mixed},
	{"test_tool_with_logging", "Logging", "Sends three info log notifications.", NO_ARGS, NULL,
	 TOOL_READ_ONLY, t_logging},
	{"test_tool_with_progress", "Progress", "Reports progress 0, 50 and 100 of 100.", NO_ARGS,
	 NULL, TOOL_READ_ONLY, t_progress},
	{"test_error_handling", "Error", "Always fails with isError.", NO_ARGS, NULL,
	 TOOL_READ_ONLY | TOOL_FAST, t_error},
	{"test_sampling", "Sampling", "Asks the client's LLM to answer a prompt.",
	 "{\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":\"string\","
	 "\"description\":\"The prompt to send to the LLM\"}},\"required\":[\"prompt\"]}",
	 NULL, TOOL_NEEDS_SAMPLING, t_sampling},
	{"test_elicitation", "Elicitation", "Asks the user for a username and email.",
	 "{\"type\":\"object\",\"properties\":{\"message\":{\"type\":\"string\","
	 "\"description\":\"The message to show the user\"}},\"required\":[\"message\"]}",
	 NULL, TOOL_NEEDS_ELICITATION, t_elicitation},
	{"test_elicitation_sep1034_defaults", "Elicitation defaults",
	 "Elicits a form whose fields carry defaults (SEP-1034).", NO_ARGS, NULL,
	 TOOL_NEEDS_ELICITATION, t_elicit_defaults},
	{"test_elicitation_sep1330_enums", "Elicitation enums",
	 "Elicits a form with every enum variant (SEP-1330).", NO_ARGS, NULL,
	 TOOL_NEEDS_ELICITATION, t_elicit_enums},
	{"test_missing_capability", "Needs sampling",
	 "Asks the client's LLM to say hello: needs the sampling capability.", NO_ARGS, NULL,
	 TOOL_NEEDS_SAMPLING, t_needs_sampling},
	{"test_streaming_elicitation", "Streaming elicitation",
	 "Asks the user for a username and email: needs the elicitation capability.", NO_ARGS, NULL,
	 TOOL_NEEDS_ELICITATION, t_streaming_elicitation},
	{"greet", "Greet", "Says hello to params.name at once (never a task).",
	 "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}", NULL,
	 TOOL_READ_ONLY | TOOL_FAST, t_greet},
	{"slow_compute", "Slow compute", "Works for params.seconds, then answers; runs as a task.",
	 "{\"type\":\"object\",\"properties\":{\"seconds\":{\"type\":\"number\","
	 "\"minimum\":0,\"maximum\":60},\"label\":{\"type\":\"string\"}}}",
	 NULL, TOOL_READ_ONLY | TOOL_TASK, t_slow_compute},
	{"failing_job", "Failing job", "Fails with a tool error after a second; runs as a task.",
	 NO_ARGS, NULL, TOOL_READ_ONLY | TOOL_TASK, t_failing_job},
	{"test_logging_tool", "Logging (stateless)", "Sends three info log notifications.", NO_ARGS,
	 NULL, TOOL_READ_ONLY, t_logging},
	{"json_schema_2020_12_tool", "JSON Schema 2020-12",
	 "Tool with JSON Schema 2020-12 features",
	 "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\","
	 "\"$defs\":{\"address\":{\"type\":\"object\",\"properties\":{"
	 "\"street\":{\"type\":\"string\"},\"city\":{\"type\":\"string\"}}}},"
	 "\"properties\":{\"name\":{\"type\":\"string\"},"
	 "\"address\":{\"$ref\":\"#/$defs/address\"}},\"additionalProperties\":false}",
	 NULL, TOOL_READ_ONLY | TOOL_FAST, t_schema_2020},
	{"test_reconnection", "Reconnection",
	 "Takes a moment, so a client can test SSE stream resumption.", NO_ARGS, NULL,
	 TOOL_READ_ONLY, t_reconnection},
};

/* --- resources ------------------------------------------------------------------ */

static int r_static_text(struct app *app, const char *uri, json_t **contents, struct kf_err *err)
{
	(void)app;
	(void)err;
	*contents = json_pack("[{s:s,s:s,s:s}]", "uri", uri, "mimeType", "text/plain", "text",
			      "This is the content of the static text resource.");
	return 0;
}

static int r_static_binary(struct app *app, const char *uri, json_t **contents, struct kf_err *err)
{
	(void)app;
	(void)err;
	*contents =
		json_pack("[{s:s,s:s,s:s}]", "uri", uri, "mimeType", "image/png", "blob", PNG_B64);
	return 0;
}

static int r_template(struct app *app, const char *uri, json_t **contents, struct kf_err *err)
{
	const char *p = "test://template/";
	size_t n = strlen(p), idlen;
	char id[128], text[400];

	(void)app;
	idlen = strlen(uri) - n - strlen("/data");
	if (idlen == 0 || idlen >= sizeof(id))
		return kf_err_set(err, KF_ENOTFOUND, "no such template resource: %s", uri);
	memcpy(id, uri + n, idlen);
	id[idlen] = '\0';
	snprintf(text, sizeof(text),
		 "{\"id\":\"%s\",\"templateTest\":true,\"data\":\"Data for ID: %s\"}", id, id);
	*contents = json_pack("[{s:s,s:s,s:s}]", "uri", uri, "mimeType", "application/json", "text",
			      text);
	return 0;
}

static int r_watched(struct app *app, const char *uri, json_t **contents, struct kf_err *err)
{
	(void)app;
	(void)err;
	*contents = json_pack("[{s:s,s:s,s:s}]", "uri", uri, "mimeType", "text/plain", "text",
			      "Watched resource content");
	return 0;
}

static int complete_from(const char *const *words, const char *prefix, json_t *arr)
{
	for (; *words; words++)
		if (strncmp(*words, prefix, strlen(prefix)) == 0)
			json_array_append_new(arr, json_string(*words));
	return 0;
}

static int r_template_complete(struct app *app, const char *var, const char *prefix, json_t *arr,
			       struct kf_err *err)
{
	static const char *const IDS[] = {"1", "2", "3", "123", "456", NULL};

	(void)app;
	(void)err;
	(void)var;
	return complete_from(IDS, prefix, arr);
}

static const struct resource_def FIXTURE_RESOURCES[] = {
	{"test://static-text", "static-text", "Static text", "A static text resource", "text/plain",
	 NULL, r_static_text, NULL},
	{"test://static-binary", "static-binary", "Static binary", "A static binary resource (PNG)",
	 "image/png", NULL, r_static_binary, NULL},
	{"test://template/{id}/data", "template-data", "Template data",
	 "Data for an id, substituted into the text", "application/json", NULL, r_template,
	 r_template_complete},
	{"test://watched-resource", "watched-resource", "Watched resource",
	 "A resource clients can subscribe to", "text/plain", NULL, r_watched, NULL},
};

/* --- prompts ---------------------------------------------------------------------- */

static json_t *user_msg(json_t *content)
{
	return json_pack("{s:s,s:o}", "role", "user", "content", content);
}

static int p_simple(struct app *app, const json_t *args, json_t **messages, struct kf_err *err)
{
	(void)app;
	(void)args;
	(void)err;
	*messages = json_pack("[o]", user_msg(text_block("This is a simple prompt for testing.")));
	return 0;
}

static int p_args(struct app *app, const json_t *args, json_t **messages, struct kf_err *err)
{
	char buf[1024];

	(void)app;
	(void)err;
	snprintf(buf, sizeof(buf), "Prompt with arguments: arg1='%s', arg2='%s'",
		 json_string_value(json_object_get(args, "arg1")),
		 json_string_value(json_object_get(args, "arg2")));
	*messages = json_pack("[o]", user_msg(text_block(buf)));
	return 0;
}

static int p_args_complete(struct app *app, const char *arg, const char *prefix, json_t *arr,
			   struct kf_err *err)
{
	static const char *const A1[] = {"paris", "park", "party", "test", "testValue1", NULL};
	static const char *const A2[] = {"world", "work", "testValue2", NULL};

	(void)app;
	(void)err;
	return complete_from(strcmp(arg, "arg1") == 0 ? A1 : A2, prefix, arr);
}

static int p_embedded(struct app *app, const json_t *args, json_t **messages, struct kf_err *err)
{
	(void)app;
	(void)err;
	*messages = json_pack(
		"[o,o]",
		user_msg(json_pack("{s:s,s:{s:s,s:s,s:s}}", "type", "resource", "resource", "uri",
				   json_string_value(json_object_get(args, "resourceUri")),
				   "mimeType", "text/plain", "text",
				   "Embedded resource content for testing.")),
		user_msg(text_block("Please process the embedded resource above.")));
	return 0;
}

static int p_image(struct app *app, const json_t *args, json_t **messages, struct kf_err *err)
{
	(void)app;
	(void)args;
	(void)err;
	*messages = json_pack("[o,o]",
			      user_msg(json_pack("{s:s,s:s,s:s}", "type", "image", "data", PNG_B64,
						 "mimeType", "image/png")),
			      user_msg(text_block("Please analyze the image above.")));
	return 0;
}

static const struct prompt_arg ARGS_TWO[] = {
	{"arg1", "First test argument", 1},
	{"arg2", "Second test argument", 1},
	{NULL, NULL, 0},
};
static const struct prompt_arg ARGS_URI[] = {
	{"resourceUri", "URI of the resource to embed", 1},
	{NULL, NULL, 0},
};

static const struct prompt_def FIXTURE_PROMPTS[] = {
	{"test_simple_prompt", "Simple prompt", "A simple prompt without arguments", NULL, p_simple,
	 NULL},
	{"test_prompt_with_arguments", "Prompt with arguments",
	 "A prompt with two required arguments", ARGS_TWO, p_args, p_args_complete},
	{"test_prompt_with_embedded_resource", "Prompt with embedded resource",
	 "A prompt that embeds a resource", ARGS_URI, p_embedded, NULL},
	{"test_prompt_with_image", "Prompt with image", "A prompt with an image", NULL, p_image,
	 NULL},
};

const struct tool_group TOOLS_FIXTURES = {
	FIXTURE_TOOLS,	   sizeof(FIXTURE_TOOLS) / sizeof(FIXTURE_TOOLS[0]),
	FIXTURE_RESOURCES, sizeof(FIXTURE_RESOURCES) / sizeof(FIXTURE_RESOURCES[0]),
	FIXTURE_PROMPTS,   sizeof(FIXTURE_PROMPTS) / sizeof(FIXTURE_PROMPTS[0]),
};
