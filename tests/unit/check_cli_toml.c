/* check_cli_toml: cli_toml_set_table, the in-place edit behind `kforge
 * mcp-config codex --write`: the table is replaced where it stands (with its
 * sub-tables, and every copy an earlier append left), or appended; every
 * other byte is kept; a second run changes nothing; a document the scanner
 * cannot read, or that sets the table another way, is refused with the line
 * and the reason. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/cli/cli_toml.h"

#define NAME  "mcp_servers.kforge"
#define BLOCK "[mcp_servers.kforge]\ncommand = \"/opt/k f/kforge\"\nargs = [\"serve\"]\n"

/* Edits doc; asserts success and returns the result (free with free()). */
static char *edit(const char *doc, int *replaced)
{
	struct kf_err err = {0};
	char *out = NULL;
	size_t len = 0;
	int rc = cli_toml_set_table(doc, strlen(doc), NAME, BLOCK, &out, &len, replaced, &err);
	ck_assert_msg(rc == 0, "rc %d: %s", rc, err.msg);
	ck_assert_uint_eq(len, strlen(out));
	return out;
}

struct edit_case {
	const char *doc, *want;
	int replaced;
};

static const struct edit_case EDITS[] = {
	{"", BLOCK, 0},
	{"model = \"o3\"", "model = \"o3\"\n\n" BLOCK, 0},
	{"model = \"o3\"\n\n", "model = \"o3\"\n\n" BLOCK, 0},
	/* in place, the comments and tables around it untouched */
	{"# mine\nmodel = 'o3'  # trailing\n\n[mcp_servers.kforge]\ncommand = \"old\"\n"
	 "args=[\n  \"serve\", # multi-line\n]\n\n# the next one\n[mcp_servers.other]\nurl = \"x\"\n",
	 "# mine\nmodel = 'o3'  # trailing\n\n" BLOCK
	 "\n# the next one\n[mcp_servers.other]\nurl = \"x\"\n",
	 1},
	/* sub-tables go with it */
	{"[mcp_servers.kforge]\ncommand = \"a\"\n[mcp_servers.kforge.env]\nX = \"1\"\n[a]\nb = 1\n",
	 BLOCK "[a]\nb = 1\n", 1},
	/* two copies from appending twice become one */
	{"[mcp_servers.kforge]\ncommand = \"a\"\n\n[x]\ny = 2\n[mcp_servers.kforge]\ncommand = \"b\"\n",
	 BLOCK "\n[x]\ny = 2\n", 2},
	/* numbers of every form TOML 1.0 has */
	{"a = [0x1F, 0o17, 0b1101, -3.5E-2, 6.02e+23, 1_000, +nan, -0, 1979-05-27, 07:32:00.5,"
	 " 1979-05-27T00:32:00.999999-07:00, 1979-05-27t07:32:00z]\n",
	 "a = [0x1F, 0o17, 0b1101, -3.5E-2, 6.02e+23, 1_000, +nan, -0, 1979-05-27, 07:32:00.5,"
	 " 1979-05-27T00:32:00.999999-07:00, 1979-05-27t07:32:00z]\n\n" BLOCK,
	 0},
	/* the grammar it must read: strings of all kinds, dates, inline tables,
	 * CRLF, quoted keys with dots, a parent table */
	{"a = \"\"\"x\n\"y\"\n\"\"\"\nb = '''z\n'''\nc = 1979-05-27 07:32:00Z\nd = {e = 1, f = [1, 2]}\r\n"
	 "\"g.h\" = -inf\n[mcp_servers]\n\"kforge.x\" = 1\n",
	 "a = \"\"\"x\n\"y\"\n\"\"\"\nb = '''z\n'''\nc = 1979-05-27 07:32:00Z\nd = {e = 1, f = [1, 2]}\r\n"
	 "\"g.h\" = -inf\n[mcp_servers]\n\"kforge.x\" = 1\n\n" BLOCK,
	 0},
};

START_TEST(the_table_is_replaced_in_place_or_appended)
{
	const struct edit_case *c = &EDITS[_i];
	int replaced = -1;
	char *out = edit(c->doc, &replaced);
	ck_assert_str_eq(out, c->want);
	ck_assert_int_eq(replaced, c->replaced);
	/* a second run finds one table and changes nothing */
	char *again = edit(out, &replaced);
	ck_assert_str_eq(again, out);
	ck_assert_int_eq(replaced, 1);
	free(again);
	free(out);
}
END_TEST

struct bad_case {
	const char *doc, *why; /* why: a part of the message */
	int line;
};

static const struct bad_case BAD[] = {
	{"a = \"open\nb = 1\n", "past the end of its line", 1},
	{"a = 1\nb = \"\"\"never closed\n", "not closed", 2},
	{"a = 1\nb 2\n", "expected '='", 2},
	{"a = 1 2\n", "where the line should end", 1},
	{"a = 1\n\nb =\n", "expected a value", 3},
	{"a = [1, 2\n", "array is not closed", 1},
	{"a = [1 2]\n", "expected ',' or ']'", 1},
	{"a = {b = 1\n", "inline table", 1},
	{"a = 1\na = 2\n", "key a is defined twice", 2},
	{"[t]\n[t]\n", "table t is defined twice", 2},
	{"[t\n", "expected ']'", 1},
	{"a = what\n", "not a string, number", 1},
	{"a = 07:3a:00\n", "not a string, number", 1},
	{"a = 1979-05-27 07:32:00Zb\n", "not a string, number", 1},
	{"a = 00\n", "not a string, number", 1},
	{"a = 1.\n", "not a string, number", 1},
	{"a = +0x1F\n", "not a string, number", 1},
	{"a = 1__0\n", "not a string, number", 1},
	{"mcp_servers.kforge.command = \"x\"\n", "set by a key here", 1},
	{"[mcp_servers]\nother = 1\nkforge = {command = \"x\"}\n", "set by a key here", 3},
	{"mcp_servers = {kforge = {command = \"x\"}}\n", "inline table", 1},
	{"[[mcp_servers.kforge]]\ncommand = \"x\"\n", "array of tables", 1},
};

START_TEST(a_document_it_cannot_read_is_refused_with_the_line)
{
	const struct bad_case *c = &BAD[_i];
	struct kf_err err = {0};
	char *out = (char *)1, want[32];
	size_t len = 9;
	int replaced;
	int rc = cli_toml_set_table(c->doc, strlen(c->doc), NAME, BLOCK, &out, &len, &replaced,
				    &err);
	ck_assert_int_eq(rc, KF_EINVAL);
	ck_assert_ptr_null(out);
	ck_assert_msg(strstr(err.msg, c->why), "'%s' does not say '%s'", err.msg, c->why);
	snprintf(want, sizeof want, "line %d:", c->line);
	ck_assert_msg(strstr(err.msg, want), "'%s' does not name %s", err.msg, want);
}
END_TEST

START_TEST(a_document_over_the_cap_is_too_big)
{
	size_t n = CLI_TOML_MAX_BYTES + 1;
	char *doc = malloc(n + 1), *out = NULL;
	struct kf_err err = {0};
	size_t len;
	int replaced;
	memset(doc, '\n', n);
	doc[n] = '\0';
	ck_assert_int_eq(cli_toml_set_table(doc, n, NAME, BLOCK, &out, &len, &replaced, &err),
			 KF_ETOOBIG);
	ck_assert_ptr_null(out);
	free(doc);
}
END_TEST

static Suite *toml_suite(void)
{
	Suite *s = suite_create("cli_toml");
	TCase *tc = tcase_create("set_table");

	tcase_add_loop_test(tc, the_table_is_replaced_in_place_or_appended, 0,
			    sizeof EDITS / sizeof EDITS[0]);
	tcase_add_loop_test(tc, a_document_it_cannot_read_is_refused_with_the_line, 0,
			    sizeof BAD / sizeof BAD[0]);
	tcase_add_test(tc, a_document_over_the_cap_is_too_big);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(toml_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
