/* check_cli_opts: command-line options read through a tool's inputSchema
 * (server/cli/cli_opts.c). A value is converted to the property's type and
 * checked against its bounds, and a refusal names the option and what the
 * schema allows; --help prints the schema's description, bounds, enum and
 * default; the same option table follows a changed bound with no edit of
 * its own; a table naming a property the schema lacks is refused. And the
 * exit status a tool's answer gives every command (cli_answer_exit). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/app.h"
#include "server/cli/cli.h"
#include "server/cli/cli_opts.h"
#include "server/mcp/mcp.h"
#include "server/mcp/schema.h"
#include "server/mcp/tools.h"

static int noop(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	(void)ctx, (void)args, (void)err;
	*out = json_pack("{s:s}", "summary", "ok");
	return 0;
}

#define SCHEMA(max)                                                                             \
	"{\"type\": \"object\", \"additionalProperties\": false, \"properties\": {"             \
	"\"n\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": " max ", \"default\": 3, " \
	"\"description\": \"how many\"}, "                                                      \
	"\"rate\": {\"type\": \"number\", \"minimum\": 0.0001, \"maximum\": 0.5}, "             \
	"\"kind\": {\"type\": \"string\", \"enum\": [\"fast\", \"slow\"], \"default\": "        \
	"\"fast\"}, "                                                                           \
	"\"odd\": {\"type\": \"boolean\", \"default\": true}, "                                 \
	"\"modes\": {\"type\": \"array\", \"maxItems\": 2, \"items\": {\"type\": \"string\", "  \
	"\"enum\": [\"x\", \"y\"]}}, "                                                          \
	"\"replay\": {\"type\": \"object\", \"properties\": {\"seed\": {\"type\": \"string\", " \
	"\"minLength\": 1, \"maxLength\": 4}}}}}"

static const struct tool_def TOOL_7[] = {
	{"t", "t", "a test tool", SCHEMA("7"), NULL, 0, noop},
};
static const struct tool_def TOOL_9[] = {
	{"t", "t", "a test tool", SCHEMA("9"), NULL, 0, noop},
};

static const struct cli_opt OPT_TABLE[] = {
	{"--n", "n", CLI_OPT_VALUE, "N", NULL},
	{"--rate", "rate", CLI_OPT_VALUE, "F", "relative error"},
	{"--kind", "kind", CLI_OPT_VALUE, "K", "which way"},
	{"--no-odd", "odd", CLI_OPT_FALSE, NULL, "only the listed sizes"},
	{"--modes", "modes", CLI_OPT_VALUE, "M,..", "which modes"},
	{"--seed", "replay.seed", CLI_OPT_VALUE, "HEX", "the case's seed"},
	{"--own", NULL, CLI_OPT_OWN, "X", "the command reads this one"},
	{NULL, NULL, CLI_OPT_VALUE, NULL, NULL},
};
static const struct cli_opts OPTS = {"t", OPT_TABLE};

static void load(const struct tool_def *tools)
{
	static struct tool_group g;
	const struct tool_group *groups[] = {&g};
	struct kf_err err = {0};

	g.tools = tools;
	g.tools_len = 1;
	ck_assert_msg(tools_load_groups(groups, 1, &err) == 0, "%s", err.msg);
}

static void setup(void)
{
	load(TOOL_7);
}

/* Runs cli_opts_take on the argument vector a (NULL-terminated, first
 * element at index 0). Returns its code; *args gets what it stored. */
static int take(const char **a, json_t **args, struct kf_err *err)
{
	int argc = 0, i = 0, rc = 0;

	while (a[argc])
		argc++;
	*args = json_object();
	for (i = 0; i < argc && rc >= 0; i++) {
		rc = cli_opts_take(&OPTS, argc, (char **)a, &i, *args, err);
		if (rc == 0)
			break;
	}
	return rc;
}

START_TEST(a_value_in_range_is_stored_with_the_schemas_type)
{
	const char *a[] = {"--n",      "7",	  "--rate=0.25", "--kind", "slow",
			   "--no-odd", "--modes", "y,x",	 NULL};
	struct kf_err err = {0};
	json_t *args;

	ck_assert_int_eq(take(a, &args, &err), 1);
	ck_assert(json_is_integer(json_object_get(args, "n")));
	ck_assert_int_eq(json_integer_value(json_object_get(args, "n")), 7);
	ck_assert(json_real_value(json_object_get(args, "rate")) == 0.25);
	ck_assert_str_eq(json_string_value(json_object_get(args, "kind")), "slow");
	ck_assert(json_is_false(json_object_get(args, "odd")));
	json_t *m = json_object_get(args, "modes");
	ck_assert_int_eq(json_array_size(m), 2);
	ck_assert_str_eq(json_string_value(json_array_get(m, 0)), "y");
	ck_assert_str_eq(json_string_value(json_array_get(m, 1)), "x");
	json_decref(args);
}
END_TEST

START_TEST(a_dotted_property_fills_its_object)
{
	const char *a[] = {"--seed", "9f2c", NULL};
	struct kf_err err = {0};
	json_t *args;

	ck_assert_int_eq(take(a, &args, &err), 1);
	ck_assert_str_eq(
		json_string_value(json_object_get(json_object_get(args, "replay"), "seed")),
		"9f2c");
	json_decref(args);
}
END_TEST

struct bad_case {
	const char *opt, *value, *want;
};

static const struct bad_case BAD[] = {
	{"--n", "8", "--n: '8' is not an integer from 1 to 7"},
	{"--n", "0", "--n: '0' is not an integer from 1 to 7"},
	{"--n", "2.5", "--n: '2.5' is not an integer from 1 to 7"},
	{"--n", "many", "--n: 'many' is not an integer from 1 to 7"},
	{"--rate", "0.9", "--rate: '0.9' is not a number from 0.0001 to 0.5"},
	{"--rate", "x", "--rate: 'x' is not a number from 0.0001 to 0.5"},
	{"--kind", "medium", "--kind: 'medium' is not one of fast, slow"},
	{"--seed", "9f2c0", "--seed: '9f2c0' is not a string of 1 to 4 characters"},
	{"--modes", "x,z",
	 "--modes: 'x,z' is not a comma-separated list of at most 2 items, each "
	 "one of x, y"},
	{"--modes", "x,y,x",
	 "--modes: 'x,y,x' is not a comma-separated list of at most 2 items, "
	 "each one of x, y"},
	{"--modes", "x,,y",
	 "--modes: 'x,,y' is not a comma-separated list of at most 2 items, "
	 "each one of x, y"},
	{"--modes", "x,",
	 "--modes: 'x,' is not a comma-separated list of at most 2 items, each "
	 "one of x, y"},
	{"--n", NULL, "--n needs a value: an integer from 1 to 7"},
};

START_TEST(a_bad_value_names_the_option_and_what_the_schema_allows)
{
	const struct bad_case *c = &BAD[_i];
	const char *a[] = {c->opt, c->value, NULL};
	struct kf_err err = {0};
	json_t *args;

	ck_assert_int_eq(take(a, &args, &err), KF_EINVAL);
	ck_assert_str_eq(err.msg, c->want);
	ck_assert_int_eq(json_object_size(args), 0);
	json_decref(args);
}
END_TEST

START_TEST(other_arguments_and_own_options_are_left_to_the_command)
{
	const char *own[] = {"--own", "x", NULL};
	const char *spec[] = {"spec.json", NULL};
	const char *prefix[] = {"--nn", "3", NULL};
	const char *flag_value[] = {"--no-odd=1", NULL};
	const char **cases[] = {own, spec, prefix, flag_value};
	struct kf_err err = {0};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		json_t *args;
		ck_assert_int_eq(take(cases[k], &args, &err), 0);
		ck_assert_int_eq(json_object_size(args), 0);
		json_decref(args);
	}
}
END_TEST

/* The help cli_opts_help prints, as a new string (free with free()). */
static char *help_text(const struct cli_opts *o, int *rc)
{
	struct kf_err err = {0};
	FILE *f = tmpfile();
	char *buf = calloc(1, 8192);

	ck_assert_ptr_nonnull(f);
	*rc = cli_opts_help(f, o, &err);
	rewind(f);
	size_t n = fread(buf, 1, 8191, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

START_TEST(help_lines_carry_the_schemas_description_bounds_and_default)
{
	int rc;
	char *h = help_text(&OPTS, &rc);

	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(h, "  --n N         how many (1-7, default 3)\n"), "%s", h);
	ck_assert_msg(strstr(h, "--rate F      relative error (0.0001-0.5)\n"), "%s", h);
	ck_assert_msg(strstr(h, "--kind K      which way (fast|slow, default fast)\n"), "%s", h);
	ck_assert_msg(strstr(h, "--no-odd      only the listed sizes\n"), "%s", h);
	ck_assert_msg(strstr(h, "--modes M,..  which modes (x,y)\n"), "%s", h);
	ck_assert_msg(strstr(h, "--own X       the command reads this one\n"), "%s", h);
	free(h);
}
END_TEST

START_TEST(a_changed_bound_changes_validation_and_help)
{
	const char *a[] = {"--n", "8", NULL};
	struct kf_err err = {0};
	json_t *args;
	int rc;

	load(TOOL_9);
	ck_assert_int_eq(take(a, &args, &err), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(args, "n")), 8);
	json_decref(args);
	const char *b[] = {"--n", "10", NULL};
	ck_assert_int_eq(take(b, &args, &err), KF_EINVAL);
	ck_assert_str_eq(err.msg, "--n: '10' is not an integer from 1 to 9");
	json_decref(args);
	char *h = help_text(&OPTS, &rc);
	ck_assert_msg(strstr(h, "how many (1-9, default 3)"), "%s", h);
	free(h);
}
END_TEST

START_TEST(a_table_naming_a_missing_property_is_refused)
{
	static const struct cli_opt stale[] = {
		{"--m", "m", CLI_OPT_VALUE, "N", "gone"},
		{NULL, NULL, CLI_OPT_VALUE, NULL, NULL},
	};
	static const struct cli_opts o = {"t", stale};
	static const struct cli_opts no_tool = {"nope", OPT_TABLE};
	const char *a[] = {"--m", "1", NULL};
	struct kf_err err = {0};
	json_t *args = json_object();
	int i = 0, rc;

	ck_assert_int_eq(cli_opts_take(&o, 2, (char **)a, &i, args, &err), KF_EINVAL);
	ck_assert_msg(strstr(err.msg, "no property 'm'"), "%s", err.msg);
	json_decref(args);
	free(help_text(&o, &rc));
	ck_assert_int_eq(rc, KF_EINVAL);
	free(help_text(&no_tool, &rc));
	ck_assert_int_eq(rc, KF_EINVAL);
}
END_TEST

/* The daemon's own tables: `kforge check --help` and `kforge bench --help`
 * show the bounds check_kernel's and benchmark_kernel's schemas hold. */
START_TEST(check_and_bench_help_show_their_tools_bounds)
{
	static const struct {
		const char *cmd, *tool, *prop;
	} C[] = {{"check", "check_kernel", "trials"},
		 {"check", "check_kernel", "timeout_s"},
		 {"bench", "benchmark_kernel", "budget_ms"},
		 {"bench", "benchmark_kernel", "warmup_ms"}};
	struct kf_err err = {0};

	ck_assert_msg(app_tools_load(0, &err) == 0, "%s", err.msg);
	for (size_t k = 0; k < sizeof(C) / sizeof(C[0]); k++) {
		const struct cli_cmd *c = cli_find(C[k].cmd);
		const json_t *p = json_object_get(
			json_object_get(schema_json(tools_input_schema(tools_find(C[k].tool))),
					"properties"),
			C[k].prop);
		char want[96], buf[8192];
		FILE *f = tmpfile();

		ck_assert_ptr_nonnull(c);
		ck_assert_ptr_nonnull(p);
		const json_t *def = json_object_get(p, "default");
		int n = snprintf(want, sizeof(want), "(%lld-%lld",
				 (long long)json_number_value(json_object_get(p, "minimum")),
				 (long long)json_number_value(json_object_get(p, "maximum")));
		if (def) /* timeout_s has none: its default follows the work */
			snprintf(want + n, sizeof(want) - (size_t)n, ", default %lld)",
				 (long long)json_number_value(def));
		else
			snprintf(want + n, sizeof(want) - (size_t)n, ")");
		ck_assert_int_eq(cli_cmd_help(f, c), CLI_EXIT_OK);
		rewind(f);
		buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
		fclose(f);
		ck_assert_msg(strstr(buf, want), "%s --help lacks %s:\n%s", C[k].cmd, want, buf);
	}
}
END_TEST

/* Every tool-calling command exits by one table (docs/cli.md): a tool
 * error's code picks the exit status, an answer without error is 0. */
static const struct {
	const char *code;
	int exit;
} ANSWER_EXIT[] = {
	{"no_gpu", CLI_EXIT_NOGPU},
	{"not_found", CLI_EXIT_NOTFOUND},
	{"sandbox", CLI_EXIT_ENV},
	{"db", CLI_EXIT_ENV},
	{"io", CLI_EXIT_ENV},
	{"busy", CLI_EXIT_BUSY},
	{"timeout", CLI_EXIT_BUSY},
	{"cancelled", CLI_EXIT_CANCELED},
	{"invalid", CLI_EXIT_FAIL},
	{"fault", CLI_EXIT_FAIL},
	{"compile_error", CLI_EXIT_FAIL},
	{NULL, CLI_EXIT_FAIL},
};

START_TEST(a_tool_errors_code_picks_the_exit_status)
{
	json_t *res = ANSWER_EXIT[_i].code ? mcp_error_answer(ANSWER_EXIT[_i].code, "why")
					   : json_pack("{s:s}", "summary", "failed");
	ck_assert_int_eq(cli_answer_exit(res, 1), ANSWER_EXIT[_i].exit);
	ck_assert_int_eq(cli_answer_exit(res, 0), CLI_EXIT_OK);
	json_decref(res);
}
END_TEST

static Suite *opts_suite(void)
{
	Suite *s = suite_create("cli_opts");
	TCase *tc = tcase_create("take");
	TCase *th = tcase_create("help");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, a_value_in_range_is_stored_with_the_schemas_type);
	tcase_add_test(tc, a_dotted_property_fills_its_object);
	tcase_add_loop_test(tc, a_bad_value_names_the_option_and_what_the_schema_allows, 0,
			    sizeof(BAD) / sizeof(BAD[0]));
	tcase_add_test(tc, other_arguments_and_own_options_are_left_to_the_command);
	tcase_add_test(tc, a_table_naming_a_missing_property_is_refused);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(th, setup, NULL);
	tcase_add_test(th, help_lines_carry_the_schemas_description_bounds_and_default);
	tcase_add_test(th, a_changed_bound_changes_validation_and_help);
	tcase_add_test(th, check_and_bench_help_show_their_tools_bounds);
	suite_add_tcase(s, th);
	TCase *te = tcase_create("exit");
	tcase_add_loop_test(te, a_tool_errors_code_picks_the_exit_status, 0,
			    sizeof(ANSWER_EXIT) / sizeof(ANSWER_EXIT[0]));
	suite_add_tcase(s, te);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(opts_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
