/* check_schema: the JSON-Schema-subset validator — schemas it refuses at
 * parse time (with the path of the bad keyword), values it accepts and
 * rejects (with the path of the bad field), and the tool registry refusing
 * a bad table at startup. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "server/mcp/schema.h"
#include "server/app.h"
#include "server/mcp/tools.h"

struct bad_schema {
	const char *text;
	const char *words;
};

static const struct bad_schema BAD_SCHEMAS[] = {
	{"{\"type\":\"object\"", "not valid JSON"},
	{"[]", "schema: expected a schema object"},
	{"{\"type\":\"float\"}", "schema.type: unknown type 'float'"},
	{"{\"type\":[]}", "schema.type: expected a type name or a non-empty array"},
	{"{\"type\":[\"string\",5]}", "schema.type[1]"},
	{"{\"properties\":[]}", "schema.properties: expected an object"},
	{"{\"properties\":{\"a\":{\"type\":\"strin\"}}}", "schema.properties.a.type"},
	{"{\"required\":\"a\"}", "schema.required: expected an array"},
	{"{\"required\":[1]}", "schema.required[0]"},
	{"{\"enum\":[]}", "schema.enum: expected a non-empty array"},
	{"{\"minimum\":\"1\"}", "schema.minimum: expected a number"},
	{"{\"minimum\":5,\"maximum\":1}", "minimum is above maximum"},
	{"{\"maxLength\":-1}", "schema.maxLength: expected a non-negative integer"},
	{"{\"minItems\":1.5}", "schema.minItems"},
	{"{\"items\":{\"type\":\"x\"}}", "schema.items.type"},
	{"{\"additionalProperties\":3}", "schema.additionalProperties: expected a schema"},
	{"{\"pattern\":\"^a\"}", "unsupported keyword 'pattern'"},
	{"{\"properties\":{\"a\":{\"oneOf\":[]}}}",
	 "schema.properties.a: unsupported keyword 'oneOf'"},
	{"{\"$ref\":\"#/$defs/missing\"}", "schema.$ref"},
	{"{\"$ref\":\"http://x/y\"}", "schema.$ref"},
	{"{\"$defs\":{\"a\":{\"type\":1}}}", "schema.$defs.a.type"},
};

START_TEST(parse_refuses_bad_schemas_naming_the_keyword)
{
	const struct bad_schema *c = &BAD_SCHEMAS[_i];
	struct schema *s = (struct schema *)1;
	struct kf_err err = {0};

	ck_assert_int_eq(schema_parse(c->text, &s, &err), KF_EINVAL);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(err.msg, c->words), "case %d: '%s' lacks '%s'", _i, err.msg, c->words);
}
END_TEST

static const char *const TOOL_SCHEMA =
	"{\"type\":\"object\",\"additionalProperties\":false,"
	"\"required\":[\"source\"],"
	"\"properties\":{"
	"\"source\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":10},"
	"\"arch\":{\"type\":\"string\",\"enum\":[\"sm_80\",\"sm_90\"]},"
	"\"n\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100},"
	"\"x\":{\"type\":\"number\"},"
	"\"opt\":{\"type\":[\"string\",\"null\"]},"
	"\"flag\":{\"type\":\"boolean\"},"
	"\"flags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1,\"maxItems\":3},"
	"\"sizes\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"integer\"}}},"
	"\"addr\":{\"$ref\":\"#/$defs/addr\"}},"
	"\"$defs\":{\"addr\":{\"type\":\"object\",\"required\":[\"city\"],\"properties\":{\"city\":{\"type\":\"string\"}}}}}";

struct val_case {
	const char *value;
	const char *words; /* NULL: valid */
};

static const struct val_case VALUES[] = {
	{"{\"source\":\"k\"}", NULL},
	{"{\"source\":\"k\",\"arch\":\"sm_90\",\"n\":100,\"x\":1.5,\"opt\":null,\"flag\":true,\"flags\":[\"-O3\"]}",
	 NULL},
	{"{\"source\":\"k\",\"n\":3.0}", NULL},
	{"{\"source\":\"k\",\"x\":3}", NULL},
	{"{\"source\":\"k\",\"opt\":\"s\"}", NULL},
	{"{\"source\":\"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\"}",
	 NULL},
	{"{\"source\":\"k\",\"sizes\":[{\"T\":1,\"D\":2}]}", NULL},
	{"{\"source\":\"k\",\"addr\":{\"city\":\"Oslo\"}}", NULL},
	{"{}", "arguments: missing required property 'source'"},
	{"[]", "arguments: expected object, got array"},
	{"{\"source\":5}", "arguments.source: expected string, got integer"},
	{"{\"source\":\"\"}", "arguments.source: expected at least 1 characters, got 0"},
	{"{\"source\":\"12345678901\"}",
	 "arguments.source: expected at most 10 characters, got 11"},
	{"{\"source\":\"k\",\"arch\":\"sm_99\"}",
	 "arguments.arch: \"sm_99\" is not one of \"sm_80\", \"sm_90\""},
	{"{\"source\":\"k\",\"n\":0}", "arguments.n: 0 is below the minimum 1"},
	{"{\"source\":\"k\",\"n\":101}", "arguments.n: 101 is above the maximum 100"},
	{"{\"source\":\"k\",\"n\":1.5}", "arguments.n: expected integer, got number"},
	{"{\"source\":\"k\",\"x\":\"1\"}", "arguments.x: expected number, got string"},
	{"{\"source\":\"k\",\"opt\":1}", "arguments.opt: expected string or null, got integer"},
	{"{\"source\":\"k\",\"flag\":\"yes\"}", "arguments.flag: expected boolean, got string"},
	{"{\"source\":\"k\",\"flags\":[\"a\",\"b\",3]}",
	 "arguments.flags[2]: expected string, got integer"},
	{"{\"source\":\"k\",\"flags\":[]}", "arguments.flags: expected at least 1 items, got 0"},
	{"{\"source\":\"k\",\"flags\":[\"a\",\"b\",\"c\",\"d\"]}",
	 "arguments.flags: expected at most 3 items, got 4"},
	{"{\"source\":\"k\",\"sizes\":[{\"T\":1},{\"D\":\"x\"}]}",
	 "arguments.sizes[1].D: expected integer, got string"},
	{"{\"source\":\"k\",\"extra\":1}",
	 "arguments: unknown property 'extra' (allowed: source, arch, n, x, opt, flag, flags, sizes, addr)"},
	{"{\"source\":\"k\",\"addr\":{}}", "arguments.addr: missing required property 'city'"},
	{"{\"source\":\"k\",\"addr\":{\"city\":1}}",
	 "arguments.addr.city: expected string, got integer"},
};

START_TEST(validate_names_the_failing_field)
{
	const struct val_case *c = &VALUES[_i];
	struct schema *s = NULL;
	struct kf_err err = {0};
	json_error_t jerr;
	json_t *v = json_loads(c->value, JSON_DECODE_ANY, &jerr);

	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(schema_parse(TOOL_SCHEMA, &s, &err), 0);
	if (!c->words) {
		ck_assert_msg(schema_validate(s, v, "arguments", &err) == 0, "case %d: %s", _i,
			      err.msg);
	} else {
		ck_assert_int_eq(schema_validate(s, v, "arguments", &err), KF_EINVAL);
		ck_assert_msg(strcmp(err.msg, c->words) == 0, "case %d: got '%s' want '%s'", _i,
			      err.msg, c->words);
	}
	json_decref(v);
	schema_free(s);
}
END_TEST

START_TEST(validate_stops_a_cyclic_ref)
{
	struct schema *s = NULL;
	struct kf_err err = {0};
	json_t *v = json_integer(1);

	ck_assert_int_eq(
		schema_parse("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}",
			     &s, &err),
		0);
	ck_assert_int_eq(schema_validate(s, v, "v", &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "cyclic"));
	json_decref(v);
	schema_free(s);
}
END_TEST

START_TEST(schema_keeps_annotations_and_the_document)
{
	struct schema *s = NULL;
	struct kf_err err = {0};

	ck_assert_int_eq(
		schema_parse(
			"{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
			"\"title\":\"t\",\"description\":\"d\",\"type\":\"object\","
			"\"properties\":{\"a\":{\"type\":\"string\",\"default\":\"x\",\"format\":\"uri\"}}}",
			&s, &err),
		0);
	ck_assert_str_eq(json_string_value(json_object_get(schema_json(s), "title")), "t");
	schema_free(s);
	schema_free(NULL);
}
END_TEST

/* --- the registry ---------------------------------------------------------- */

static int noop(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)ctx;
	(void)args;
	(void)err;
	*out = json_pack("{s:s}", "summary", "ok");
	return 0;
}

static const struct tool_def GOOD_TOOLS[] = {
	{"a_tool", "A", "does a", "{\"type\":\"object\"}", NULL, TOOL_READ_ONLY, noop},
	{"b.tool-2", "B", "does b", NULL,
	 "{\"type\":\"object\",\"properties\":{\"summary\":{\"type\":\"string\"}}}", 0, noop},
};
static const struct tool_group GOOD_GROUP = {GOOD_TOOLS, 2, NULL, 0, NULL, 0};

struct bad_table {
	struct tool_def tool;
	const char *words;
};

static const struct bad_table BAD_TABLES[] = {
	{{"t", "T", "d", "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"nope\"}}}", NULL,
	  0, noop},
	 "tool 't': inputSchema: schema.properties.a.type: unknown type 'nope'"},
	{{"t", "T", "d", "{\"type\":\"string\"}", NULL, 0, noop},
	 "inputSchema must have \"type\": \"object\""},
	{{"t", "T", "d", "{\"type\":\"object\"}", "{\"minLength\":\"x\"}", 0, noop},
	 "tool 't': outputSchema"},
	{{"bad name", "T", "d", NULL, NULL, 0, noop}, "name must be"},
	{{"t", "T", NULL, NULL, NULL, 0, noop}, "needs a description and a handler"},
	{{"t", "T", "d", NULL, NULL, 0, NULL}, "needs a description and a handler"},
	{{"a_tool", "T", "d", NULL, NULL, 0, noop}, "tool 'a_tool' is registered twice"},
};

START_TEST(tools_load_refuses_a_bad_table_at_startup)
{
	const struct tool_group bad = {&BAD_TABLES[_i].tool, 1, NULL, 0, NULL, 0};
	const struct tool_group *groups[] = {&GOOD_GROUP, &bad};
	struct kf_err err = {0};

	ck_assert_int_eq(tools_load_groups(groups, 2, &err), KF_EINVAL);
	ck_assert_msg(strstr(err.msg, BAD_TABLES[_i].words), "case %d: '%s' lacks '%s'", _i,
		      err.msg, BAD_TABLES[_i].words);
	ck_assert_uint_eq(tools_count(), 0);
}
END_TEST

START_TEST(tools_load_registers_groups_in_order)
{
	const struct tool_group *groups[] = {&GOOD_GROUP, NULL};
	struct kf_err err = {0};

	ck_assert_int_eq(tools_load_groups(groups, 2, &err), 0);
	ck_assert_uint_eq(tools_count(), 2);
	ck_assert_str_eq(tools_at(0)->name, "a_tool");
	ck_assert_ptr_eq(tools_find("b.tool-2"), &GOOD_TOOLS[1]);
	ck_assert_ptr_null(tools_find("c"));
	ck_assert_ptr_nonnull(tools_input_schema(tools_at(1)));
	ck_assert_ptr_null(tools_output_schema(tools_at(0)));
	ck_assert_ptr_nonnull(tools_output_schema(tools_at(1)));
	ck_assert_ptr_null(tools_at(2));
}
END_TEST

START_TEST(tools_load_with_fixtures_registers_the_conformance_set)
{
	struct kf_err err = {0};

	ck_assert_int_eq(app_tools_load(1, &err), 0);
	ck_assert_ptr_nonnull(tools_find("test_simple_text"));
	ck_assert_ptr_nonnull(tools_find("json_schema_2020_12_tool"));
	ck_assert_ptr_nonnull(tools_prompt_find("test_prompt_with_arguments"));
	ck_assert_uint_ge(tools_resource_count(), 4);
	ck_assert_int_eq(app_tools_load(0, &err), 0);
	ck_assert_ptr_null(tools_find("test_simple_text"));
}
END_TEST

static Suite *schema_suite(void)
{
	Suite *s = suite_create("schema");
	TCase *tc = tcase_create("parse");

	tcase_add_loop_test(tc, parse_refuses_bad_schemas_naming_the_keyword, 0,
			    sizeof(BAD_SCHEMAS) / sizeof(BAD_SCHEMAS[0]));
	tcase_add_test(tc, schema_keeps_annotations_and_the_document);
	suite_add_tcase(s, tc);
	tc = tcase_create("validate");
	tcase_add_loop_test(tc, validate_names_the_failing_field, 0,
			    sizeof(VALUES) / sizeof(VALUES[0]));
	tcase_add_test(tc, validate_stops_a_cyclic_ref);
	suite_add_tcase(s, tc);
	tc = tcase_create("registry");
	tcase_add_loop_test(tc, tools_load_refuses_a_bad_table_at_startup, 0,
			    sizeof(BAD_TABLES) / sizeof(BAD_TABLES[0]));
	tcase_add_test(tc, tools_load_registers_groups_in_order);
	tcase_add_test(tc, tools_load_with_fixtures_registers_the_conformance_set);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(schema_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
