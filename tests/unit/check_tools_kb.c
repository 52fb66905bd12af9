/* check_tools_kb: the knowledge tools, resources and prompt
 * (server/tools/tools_kb.c) through mcp_tool_call and the registry, on a
 * knowledge base built from the real GPU facts and the fixture guides:
 * every GPU row round-trips through get_gpu_specs against the CSV, unknown
 * names get suggestions, hostile queries are plain text. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "knowledge/kb_build.h"
#include "knowledge/kb_int.h"
#include "server/app.h"
#include "server/mcp/mcp.h"
#include "server/mcp/tools.h"

#define KB_FIXTURE_NAME "check_tools_kb"
#include "tests/unit/kb_fixture.h"

/* Calls tool with args given as JSON text; returns the result (new). */
static json_t *call(const char *tool, const char *args_json, int *is_error, int *rc)
{
	json_error_t je;
	json_t *args = json_loads(args_json, 0, &je);
	ck_assert_msg(args != NULL, "bad test JSON: %s", je.text);
	json_t *res = NULL;
	struct kf_err err = {0};
	*rc = mcp_tool_call(g_app, tool, args, &res, is_error, &err);
	json_decref(args);
	return res;
}

static json_t *call_ok(const char *tool, const char *args_json)
{
	int is_error = 1, rc = -1;
	json_t *res = call(tool, args_json, &is_error, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(!is_error, "%s %s: %s", tool, args_json,
		      json_string_value(json_object_get(res, "summary")));
	ck_assert_str_eq(json_object_iter_key(json_object_iter(res)), "summary");
	return res;
}

static const char *err_code(const json_t *res)
{
	return json_string_value(json_object_get(json_object_get(res, "error"), "code"));
}

START_TEST(every_gpu_row_round_trips_through_get_gpu_specs)
{
	char path[700], *text = NULL;
	size_t len;
	struct kb_csv csv;
	struct kf_err err = {0};
	snprintf(path, sizeof path, "%s/tests/data/kb/gpu-facts/gpus.csv", g_src);
	ck_assert_int_eq(kb_read_file(path, 1 << 22, &text, &len, &err), 0);
	ck_assert_int_eq(kb_csv_parse(path, text, &csv, &err), 0);
	json_t *list = call_ok("get_gpu_specs", "{\"list\": true}");
	json_t *gpus = json_object_get(list, "gpus");
	ck_assert_uint_eq(json_array_size(gpus), csv.rows_len);
	int figures = 0;
	for (size_t r = 0; r < csv.rows_len; r++) {
		const char *id = json_string_value(json_object_get(json_array_get(gpus, r), "id"));
		char args[160];
		snprintf(args, sizeof args, "{\"gpu\": \"%s\", \"detail\": \"full\"}", id);
		json_t *res = call_ok("get_gpu_specs", args);
		json_t *g = json_object_get(res, "gpu");
		ck_assert_str_eq(json_string_value(json_object_get(g, "name")), csv.rows[r][0]);
		json_t *figs = json_object_get(g, "figures");
		for (size_t c = 0; c < csv.cols_len; c++) {
			json_t *f = json_object_get(figs, csv.header[c]);
			if (!f)
				continue;
			const char *cell = csv.rows[r][c];
			const char *st = json_object_get(f, "status")
						 ? json_string_value(json_object_get(f, "status"))
						 : "known";
			json_t *v = json_object_get(f, "value");
			if (!*cell) {
				ck_assert_str_eq(st, "unknown");
				ck_assert(json_is_null(v));
			} else if (strcmp(cell, "n/a") == 0) {
				ck_assert_str_eq(st, "n/a");
				ck_assert(json_is_null(v));
			} else {
				ck_assert_str_eq(st, "known");
				char *end;
				double d = strtod(cell, &end);
				if (json_is_number(v))
					ck_assert_msg(!*end && json_number_value(v) == d,
						      "%s.%s: %g vs %s", id, csv.header[c],
						      json_number_value(v), cell);
				else
					ck_assert_str_eq(json_string_value(v), cell);
				ck_assert_uint_gt(
					json_array_size(json_object_get(f, "source_keys")), 0);
				ck_assert(json_object_get(f, "source_in") ||
					  json_object_get(f, "source"));
			}
			figures++;
		}
		/* derived figures say so, with a formula */
		json_t *d = json_object_get(json_object_get(g, "derived"), "ridge_point_fp32");
		ck_assert(json_is_true(json_object_get(d, "derived")));
		ck_assert_ptr_nonnull(json_string_value(json_object_get(d, "formula")));
		json_decref(res);
	}
	ck_assert_int_gt(figures, 500);
	json_decref(list);
	kb_csv_fini(&csv);
	free(text);
}
END_TEST

/* The brief answer (the default): the most used figures of every GPU row,
 * each known one with a source group whose key list is in "sources", the
 * same values as the full answer, and at most 2 KB of JSON; for an alias
 * naming several GPUs too. */
START_TEST(brief_answers_are_small_and_sourced)
{
	json_t *list = call_ok("get_gpu_specs", "{\"list\": true}");
	size_t i;
	json_t *row;
	const char *names[40];
	size_t n = 0;
	json_array_foreach(json_object_get(list, "gpus"), i, row)
		if (n < 38)
			names[n++] = json_string_value(json_object_get(row, "id"));
	names[n++] = "hopper"; /* 3 matches: the longest summary */
	names[n++] = "sm_90";
	for (i = 0; i < n; i++) {
		char args[200];
		snprintf(args, sizeof args, "{\"gpu\": \"%s\"}", names[i]);
		json_t *res = call_ok("get_gpu_specs", args);
		snprintf(args, sizeof args, "{\"gpu\": \"%s\", \"detail\": \"full\"}", names[i]);
		json_t *full = call_ok("get_gpu_specs", args);
		char *text = json_dumps(res, JSON_COMPACT);
		ck_assert_msg(strlen(text) <= 2048, "%s: brief answer is %zu bytes", names[i],
			      strlen(text));
		free(text);
		json_t *g = json_object_get(res, "gpu"), *f;
		json_t *ffigs = json_object_get(json_object_get(full, "gpu"), "figures");
		const char *key;
		int known = 0;
		ck_assert_uint_ge(json_object_size(json_object_get(g, "figures")), 15);
		json_object_foreach(json_object_get(g, "figures"), key, f) {
			if (json_is_true(json_object_get(f, "derived")))
				continue;
			json_t *ff = json_object_get(ffigs, key);
			ck_assert_msg(json_equal(json_object_get(f, "value"),
						 json_object_get(ff, "value")),
				      "%s.%s differs from the full answer", names[i], key);
			if (json_is_null(json_object_get(f, "value")))
				continue;
			/* its row's group, or its own keys (figure_sources.csv) */
			const char *grp = json_string_value(json_object_get(f, "source"));
			json_t *keys = grp ? json_object_get(json_object_get(g, "sources"), grp)
					   : json_object_get(f, "source_keys");
			ck_assert_msg(json_equal(keys, json_object_get(ff, "source_keys")),
				      "%s.%s: source %s", names[i], key, grp ? grp : "(own keys)");
			known++;
		}
		ck_assert_int_ge(known, 7); /* GH200: its per-CC figures only */
		ck_assert_ptr_nonnull(json_object_get(g, "usable_features"));
		ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(res, "more")),
					     "detail: \"full\""));
		json_decref(full);
		json_decref(res);
	}
	json_decref(list);
}
END_TEST

/* A brief comparison of any 4 GPUs of the table fits in 4 KB. */
START_TEST(brief_comparisons_of_four_stay_under_4_kb)
{
	json_t *list = call_ok("get_gpu_specs", "{\"list\": true}");
	json_t *gpus = json_object_get(list, "gpus");
	size_t n = json_array_size(gpus), worst = 0;
#define ID(k) json_string_value(json_object_get(json_array_get(gpus, k), "id"))
	for (size_t a = 0; a < n; a++)
		for (size_t b = a + 1; b < n; b++)
			for (size_t c = b + 1; c < n; c++)
				for (size_t d = c + 1; d < n; d++) {
					char args[300];
					snprintf(args, sizeof args,
						 "{\"compare\": [\"%s\", \"%s\", \"%s\", \"%s\"]}",
						 ID(a), ID(b), ID(c), ID(d));
					json_t *res = call_ok("get_gpu_specs", args);
					char *text = json_dumps(res, JSON_COMPACT);
					worst = strlen(text) > worst ? strlen(text) : worst;
					free(text);
					json_decref(res);
				}
#undef ID
	ck_assert_msg(worst <= 4096, "a brief comparison of 4 is %zu bytes", worst);
	json_t *res = call_ok("get_gpu_specs", "{\"compare\": [\"a100\", \"h100\", \"h200\"]}");
	json_t *r0 = json_array_get(json_object_get(res, "rows"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(r0, "field")), "sm_count");
	ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(r0, "values"), 1)), 132);
	/* each GPU's SM count cites its own source (figure_sources.csv) */
	json_t *src1 = json_array_get(json_object_get(r0, "source"), 1);
	ck_assert_str_eq(json_string_value(json_array_get(src1, 0)), "HOPPER-BLOG");
	json_t *rt = NULL, *r;
	size_t k;
	json_array_foreach(json_object_get(res, "rows"), k, r)
		if (strcmp(json_string_value(json_object_get(r, "field")), "max_threads_per_sm") ==
		    0)
			rt = r;
	ck_assert_str_eq(json_string_value(json_object_get(rt, "source")), "per_cc");
	json_t *g1 = json_array_get(json_object_get(res, "gpus"), 1);
	ck_assert_uint_gt(
		json_array_size(json_object_get(json_object_get(g1, "sources"), "per_cc")), 0);
	json_decref(res);
	json_decref(list);
}
END_TEST

START_TEST(compare_puts_up_to_four_gpus_side_by_side)
{
	json_t *res =
		call_ok("get_gpu_specs",
			"{\"compare\": [\"a100\", \"h100\", \"h200\"], \"detail\": \"full\"}");
	json_t *rows = json_object_get(res, "rows");
	ck_assert_uint_gt(json_array_size(rows), 40);
	json_t *r0 = json_array_get(rows, 0);
	ck_assert_str_eq(json_string_value(json_object_get(r0, "field")), "sm_count");
	ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(r0, "values"), 1)), 132);
	json_decref(res);
	int is_error, rc;
	res = call("get_gpu_specs", "{\"compare\": [\"t4\", \"a10\", \"l4\", \"h100\", \"b200\"]}",
		   &is_error, &rc);
	ck_assert_int_eq(rc, KF_EINVAL); /* maxItems 4 */
	json_decref(res);
	/* "n/a" (no such format: T4 FP8) reads apart from null (unconfirmed:
	 * L40S INT8) */
	res = call_ok("get_gpu_specs",
		      "{\"compare\": [\"t4\", \"l40s\"], \"fields\": "
		      "[\"fp8_tensor_dense_tflops\", \"int8_tensor_dense_tops\"]}");
	json_t *v8 = json_object_get(json_array_get(json_object_get(res, "rows"), 0), "values");
	json_t *vi = json_object_get(json_array_get(json_object_get(res, "rows"), 1), "values");
	ck_assert_str_eq(json_string_value(json_array_get(v8, 0)), "n/a");
	ck_assert(json_is_number(json_array_get(v8, 1)));
	ck_assert(json_is_number(json_array_get(vi, 0)));
	ck_assert(json_is_null(json_array_get(vi, 1)));
	json_decref(res);
	/* the brief (default) comparison too: TF32 is n/a on the T4, unconfirmed
	 * on the RTX 6000 Ada */
	res = call_ok("get_gpu_specs", "{\"compare\": [\"t4\", \"rtx-6000-ada\"]}");
	json_t *row, *tf = NULL;
	size_t ri;
	json_array_foreach(json_object_get(res, "rows"), ri, row)
		if (strcmp(json_string_value(json_object_get(row, "field")),
			   "tf32_tensor_dense_tflops") == 0)
			tf = json_object_get(row, "values");
	ck_assert_str_eq(json_string_value(json_array_get(tf, 0)), "n/a");
	ck_assert(json_is_null(json_array_get(tf, 1)));
	json_decref(res);
	res = call("get_gpu_specs", "{\"compare\": [\"t4\", \"zz9\"]}", &is_error, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(is_error, 1);
	ck_assert_str_eq(err_code(res), "not_found");
	json_decref(res);
}
END_TEST

START_TEST(unknown_gpu_is_an_error_with_the_closest_names)
{
	int is_error = 0, rc;
	json_t *res = call("get_gpu_specs", "{\"gpu\": \"h1000\"}", &is_error, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(is_error, 1);
	ck_assert_str_eq(err_code(res), "not_found");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(res, "suggestions"), 0)),
			 "h100-sxm");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(res, "summary")), "h100"));
	json_decref(res);
	res = call("get_gpu_specs", "{}", &is_error, &rc);
	ck_assert_int_eq(is_error, 1);
	ck_assert_str_eq(err_code(res), "invalid");
	json_decref(res);
	res = call("get_gpu_specs", "{\"gpu\": \"h100\", \"list\": true}", &is_error, &rc);
	ck_assert_int_eq(is_error, 1);
	json_decref(res);
	res = call("get_gpu_specs", "{\"gpu\": \"h100\", \"arch\": \"sm_9x\"}", &is_error, &rc);
	ck_assert_int_eq(is_error, 1);
	ck_assert_str_eq(err_code(res), "invalid");
	json_decref(res);
}
END_TEST

/* fields: only the named figures, derived figures and sections, with
 * exactly the sources they cite; a name that is none of them is an error
 * that lists the names there are. */
START_TEST(fields_narrow_the_answer_to_the_named_figures)
{
	json_t *whole = call_ok("get_gpu_specs", "{\"gpu\": \"h200\", \"detail\": \"full\"}");
	json_t *res = call_ok("get_gpu_specs",
			      "{\"gpu\": \"h200\", \"fields\": [\"memory_bandwidth_gbs\", "
			      "\"ridge_point_fp32\", \"features\"]}");
	json_t *g = json_object_get(res, "gpu");
	ck_assert_str_eq(json_string_value(json_object_get(g, "id")), "h200");
	ck_assert_uint_eq(json_object_size(json_object_get(g, "figures")), 1);
	ck_assert_int_eq(
		json_integer_value(json_object_get(
			json_object_get(json_object_get(g, "figures"), "memory_bandwidth_gbs"),
			"value")),
		4800);
	ck_assert_uint_eq(json_object_size(json_object_get(g, "derived")), 1);
	ck_assert_ptr_nonnull(json_object_get(json_object_get(g, "features"), "tma"));
	ck_assert_ptr_nonnull(json_object_get(json_object_get(g, "sources"), "H200-DS"));
	/* cited only: the bandwidth's own source (figure_sources.csv) */
	ck_assert_uint_eq(json_object_size(json_object_get(g, "sources")), 1);
	/* the figure carries its own source text, so the row's lists go */
	ck_assert_ptr_nonnull(strstr(
		json_string_value(json_object_get(
			json_object_get(json_object_get(g, "figures"), "memory_bandwidth_gbs"),
			"source")),
		"H200-DS"));
	ck_assert_ptr_null(json_object_get(g, "sources_product"));
	ck_assert_ptr_null(json_object_get(g, "sources_per_cc_limits"));
	ck_assert_ptr_null(json_object_get(g, "notes"));
	char *a = json_dumps(whole, JSON_COMPACT), *b = json_dumps(res, JSON_COMPACT);
	ck_assert_uint_lt(strlen(b) * 4, strlen(a));
	free(a);
	free(b);
	json_decref(res);
	json_decref(whole);

	res = call_ok("get_gpu_specs", "{\"compare\": [\"h100\", \"h200\"], \"fields\": "
				       "[\"smem_per_sm_kb\", \"ridge_point_fp32\"]}");
	json_t *rows = json_object_get(res, "rows");
	ck_assert_uint_eq(json_array_size(rows), 2);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(rows, 1), "field")),
			 "ridge_point_fp32");
	json_decref(res);

	int is_error = 0, rc;
	res = call("get_gpu_specs", "{\"gpu\": \"h200\", \"fields\": [\"bandwidth\"]}", &is_error,
		   &rc);
	ck_assert_int_eq(is_error, 1);
	ck_assert_str_eq(err_code(res), "invalid");
	const char *msg = json_string_value(json_object_get(res, "summary"));
	ck_assert_ptr_nonnull(strstr(msg, "'bandwidth'"));
	ck_assert_ptr_nonnull(strstr(msg, "memory_bandwidth_gbs"));
	/* the whole lists, not a message cut at 256 bytes: the last figure and
	 * the last derived figure are there */
	json_t *valid = json_object_get(res, "valid_fields");
	json_t *vf = json_object_get(valid, "figures"), *vd = json_object_get(valid, "derived");
	ck_assert_uint_gt(json_array_size(vf), 30);
	ck_assert_str_eq(json_string_value(json_array_get(vf, json_array_size(vf) - 1)),
			 "feat_fp64_tensor");
	ck_assert_str_eq(json_string_value(json_array_get(vd, json_array_size(vd) - 1)),
			 "l2_per_sm_kb");
	ck_assert_uint_eq(json_array_size(json_object_get(valid, "sections")), 4);
	json_decref(res);
	res = call("get_gpu_specs", "{\"compare\": [\"h100\", \"h200\"], \"fields\": [\"x\"]}",
		   &is_error, &rc);
	ck_assert_int_eq(is_error, 1);
	json_decref(res);
	res = call("get_gpu_specs", "{\"list\": true, \"fields\": [\"sm_count\"]}", &is_error, &rc);
	ck_assert_int_eq(is_error, 1);
	json_decref(res);
	res = call("get_gpu_specs", "{\"gpu\": \"h200\", \"fields\": []}", &is_error, &rc);
	ck_assert_int_eq(rc, KF_EINVAL); /* minItems 1 */
	json_decref(res);
}
END_TEST

/* The headline names the tensor format the figure is: T4 and V100 have no
 * BF16, so their 65 and 125 TFLOPS are FP16; an unsourced figure (the
 * A10G's) says so. */
START_TEST(headline_says_fp16_where_there_is_no_bf16)
{
	static const char *const cases[][2] = {{"t4", "FP16 tensor 65 TFLOPS"},
					       {"v100", "FP16 tensor 125 TFLOPS"},
					       {"h200", "BF16 tensor 989.4 TFLOPS"},
					       {"a10g", "BF16 tensor unconfirmed"}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char args[64];
		snprintf(args, sizeof args, "{\"gpu\": \"%s\"}", cases[i][0]);
		json_t *res = call_ok("get_gpu_specs", args);
		const char *sum = json_string_value(json_object_get(res, "summary"));
		ck_assert_msg(strstr(sum, cases[i][1]) != NULL, "%s: %s", cases[i][0], sum);
		json_decref(res);
	}
}
END_TEST

/* An empty figure with a gap line in figure_sources.csv says why it has no
 * value, in the full view and through fields; one without keeps a bare
 * "unknown". */
START_TEST(an_unconfirmed_figure_states_why_it_has_no_value)
{
	json_t *res = call_ok("get_gpu_specs",
			      "{\"gpu\": \"l40s\", \"fields\": [\"int8_tensor_dense_tops\", "
			      "\"fp8_tensor_dense_tflops\"]}");
	json_t *figs = json_object_get(json_object_get(res, "gpu"), "figures");
	json_t *int8 = json_object_get(figs, "int8_tensor_dense_tops");
	ck_assert(json_is_null(json_object_get(int8, "value")));
	ck_assert_str_eq(json_string_value(json_object_get(int8, "status")), "unknown");
	const char *gap = json_string_value(json_object_get(int8, "gap"));
	ck_assert_ptr_nonnull(gap);
	ck_assert_msg(strncmp(gap, "no NVIDIA source: L40S-DS", 25) == 0, "%s", gap);
	/* a known figure has a source, no gap */
	ck_assert_ptr_null(
		json_object_get(json_object_get(figs, "fp8_tensor_dense_tflops"), "gap"));
	json_decref(res);
	res = call_ok("get_gpu_specs", "{\"gpu\": \"a10g\", \"detail\": \"full\"}");
	json_t *bf16 = json_object_get(json_object_get(json_object_get(res, "gpu"), "figures"),
				       "fp16_bf16_tensor_dense_tflops");
	ck_assert_str_eq(json_string_value(json_object_get(bf16, "status")), "unknown");
	ck_assert_ptr_null(json_object_get(bf16, "gap"));
	json_decref(res);
}
END_TEST

START_TEST(ambiguous_alias_answers_the_canonical_pick_and_the_matches)
{
	json_t *res = call_ok("get_gpu_specs", "{\"gpu\": \"hopper\"}");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res, "gpu"), "id")),
			 "h100-sxm");
	json_t *amb = json_object_get(res, "ambiguous");
	ck_assert_uint_eq(json_array_size(json_object_get(amb, "matches")), 6);
	json_decref(res);
}
END_TEST

START_TEST(local_says_plainly_there_is_no_gpu)
{
	int is_error = 0, rc;
	json_t *res = call("get_gpu_specs", "{\"gpu\": \"local\"}", &is_error, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(is_error, 1);
	ck_assert_str_eq(err_code(res), "no_gpu");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(res, "summary")), "no GPU"));
	json_decref(res);
}
END_TEST

START_TEST(occupancy_and_features_come_derived)
{
	json_t *res = call_ok("get_gpu_specs",
			      "{\"gpu\": \"h100\", \"occupancy\": {\"block_threads\": 256, "
			      "\"regs_per_thread\": 128, \"smem_per_block_bytes\": 49152}}");
	json_t *o = json_object_get(res, "occupancy");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "blocks_per_sm")), 2);
	ck_assert_str_eq(json_string_value(json_object_get(o, "limiting")), "registers");
	ck_assert(json_is_true(json_object_get(o, "derived")));
	json_t *use = json_object_get(json_object_get(res, "gpu"), "usable_features");
	ck_assert_str_eq(json_string_value(json_array_get(use, 2)), "wgmma");
	json_decref(res);
	res = call_ok("get_gpu_specs", "{\"gpu\": \"h100\", \"arch\": \"sm_90\"}");
	use = json_object_get(json_object_get(res, "gpu"), "usable_features");
	for (size_t i = 0; i < json_array_size(use); i++)
		ck_assert_str_ne(json_string_value(json_array_get(use, i)), "wgmma");
	ck_assert_uint_gt(json_array_size(use), 2);
	json_decref(res);
	res = call_ok("get_gpu_specs",
		      "{\"gpu\": \"h100\", \"arch\": \"sm_90\", \"detail\": \"full\"}");
	json_t *f =
		json_object_get(json_object_get(json_object_get(res, "gpu"), "features"), "wgmma");
	ck_assert(json_is_false(json_object_get(f, "usable")));
	json_decref(res);
	res = call_ok("get_gpu_specs", "{\"gpu\": \"b200\", \"arch\": \"sm_90a\"}");
	ck_assert(json_is_false(json_object_get(res, "target_runs_on_gpu")));
	json_decref(res);
}
END_TEST

static const char *const HOSTILE[] = {
	"\\\"",	      "NEAR(a b)",  "*",
	"-bank",      "title:bank", "(((",
	"bank AND",   "OR NOT",	    "'; DROP TABLE guides; --",
	"{title}: x", "^x",	    "a NEAR/1 b \\\"",
};

START_TEST(hostile_search_through_the_tool_is_never_an_error)
{
	char args[256];
	snprintf(args, sizeof args, "{\"query\": \"%s\"}", HOSTILE[_i]);
	json_t *res = call_ok("search_guides", args);
	ck_assert(json_is_array(json_object_get(res, "hits")));
	json_decref(res);
	res = call_ok("search_guides", "{\"query\": \"bank conflicts\"}");
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_array_get(json_object_get(res, "hits"), 0), "id")),
			 "fx-bank");
	json_decref(res);
}
END_TEST

START_TEST(search_and_read_guides)
{
	json_t *res = call_ok("search_guides",
			      "{\"query\": \"fixture\", \"arch\": \"sm_90\", \"tag\": \"memory\"}");
	json_t *hits = json_object_get(res, "hits");
	ck_assert_uint_eq(json_array_size(hits), 1);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(hits, 0), "uri")),
			 "kforge://guides/fx-coalesce");
	json_decref(res);
	res = call_ok("read_guide", "{\"id\": \"fx-coalesce\"}");
	ck_assert_ptr_nonnull(
		strstr(json_string_value(json_object_get(res, "markdown")), "sectors"));
	ck_assert_uint_eq(json_array_size(json_object_get(res, "sources")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(res, "checked")),
			 "fixture: no GPU run; CUDA 13.0 documentation");
	json_decref(res);
	int is_error, rc;
	res = call("read_guide", "{\"id\": \"fx-nope\"}", &is_error, &rc);
	ck_assert_int_eq(is_error, 1);
	ck_assert_str_eq(err_code(res), "not_found");
	json_decref(res);
	res = call("search_guides", "{\"query\": \"  \"}", &is_error, &rc);
	ck_assert_int_eq(is_error, 1);
	ck_assert_str_eq(err_code(res), "invalid");
	ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(res, "summary")), "empty"));
	json_decref(res);
	char big[700];
	memset(big, 0, sizeof big);
	memcpy(big, "{\"query\": \"", 11);
	memset(big + 11, 'x', 600);
	memcpy(big + 611, "\"}", 2);
	res = call("search_guides", big, &is_error, &rc);
	ck_assert_int_eq(rc, KF_EINVAL); /* maxLength 512 in the schema */
	json_decref(res);
}
END_TEST

static const struct resource_def *resource(const char *tmpl)
{
	for (size_t i = 0; i < tools_resource_count(); i++)
		if (strcmp(tools_resource_at(i)->uri_template, tmpl) == 0)
			return tools_resource_at(i);
	ck_abort_msg("no resource %s", tmpl);
	return NULL;
}

START_TEST(resources_list_read_and_complete)
{
	const struct resource_def *g = resource("kforge://guides/{id}");
	const struct resource_def *p = resource("kforge://gpus/{id}");
	struct kf_err err = {0};
	json_t *arr = json_array();
	ck_assert_int_eq(g->list(g_app, arr, &err), 0);
	ck_assert_uint_eq(json_array_size(arr), 5);
	json_decref(arr);
	json_t *c = NULL;
	ck_assert_int_eq(g->read(g_app, "kforge://guides/fx-bank", &c, &err), 0);
	const char *text = json_string_value(json_object_get(json_array_get(c, 0), "text"));
	ck_assert_ptr_nonnull(strstr(text, "## Sources"));
	ck_assert_ptr_nonnull(strstr(text, "## Checked on\n\nfixture: no GPU run; CUDA 13.0"));
	json_decref(c);
	ck_assert_int_eq(g->read(g_app, "kforge://guides/nope", &c, &err), KF_ENOTFOUND);
	arr = json_array();
	ck_assert_int_eq(g->complete(g_app, "id", "fx-b", arr, &err), 0);
	ck_assert_uint_eq(json_array_size(arr), 2);
	json_decref(arr);
	arr = json_array();
	ck_assert_int_eq(p->list(g_app, arr, &err), 0);
	ck_assert_uint_eq(json_array_size(arr), 22);
	json_decref(arr);
	ck_assert_int_eq(p->read(g_app, "kforge://gpus/h200", &c, &err), 0);
	json_t *doc = json_loads(json_string_value(json_object_get(json_array_get(c, 0), "text")),
				 0, NULL);
	ck_assert_str_eq(json_string_value(json_object_get(doc, "id")), "h200");
	json_decref(doc);
	json_decref(c);
	ck_assert_int_eq(p->read(g_app, "kforge://gpus/zz", &c, &err), KF_ENOTFOUND);
	arr = json_array();
	ck_assert_int_eq(p->complete(g_app, "id", "h1", arr, &err), 0);
	ck_assert_uint_eq(json_array_size(arr), 3); /* h100-sxm, h100-pcie, h100-nvl */
	json_decref(arr);
}
END_TEST

START_TEST(write_kernel_prompt_assembles_facts_and_guides)
{
	const struct prompt_def *p = tools_prompt_find("write-kernel");
	ck_assert_ptr_nonnull(p);
	struct kf_err err = {0};
	json_t *args = json_pack("{s:s,s:s}", "op", "rmsnorm", "gpu", "h200"), *msgs = NULL;
	ck_assert_int_eq(p->get(g_app, args, &msgs, &err), 0);
	const char *text = json_string_value(
		json_object_get(json_object_get(json_array_get(msgs, 0), "content"), "text"));
	ck_assert_ptr_nonnull(strstr(text, "H200"));
	ck_assert_ptr_nonnull(strstr(text, "4800"));
	ck_assert_ptr_nonnull(strstr(text, "ridge point"));
	ck_assert_ptr_nonnull(strstr(text, "sm_90a"));
	json_decref(msgs);
	json_decref(args);
	args = json_pack("{s:s,s:s}", "op", "rmsnorm", "gpu", "h9999");
	ck_assert_int_eq(p->get(g_app, args, &msgs, &err), KF_EINVAL);
	json_decref(args);
	json_t *arr = json_array();
	ck_assert_int_eq(p->complete(g_app, "gpu", "b2", arr, &err), 0);
	ck_assert_str_eq(json_string_value(json_array_get(arr, 0)), "b200");
	json_decref(arr);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tools_kb");
	TCase *t = tcase_create("tools");
	tcase_add_unchecked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, every_gpu_row_round_trips_through_get_gpu_specs);
	tcase_add_test(t, brief_answers_are_small_and_sourced);
	tcase_add_test(t, brief_comparisons_of_four_stay_under_4_kb);
	tcase_add_test(t, compare_puts_up_to_four_gpus_side_by_side);
	tcase_add_test(t, unknown_gpu_is_an_error_with_the_closest_names);
	tcase_add_test(t, fields_narrow_the_answer_to_the_named_figures);
	tcase_add_test(t, headline_says_fp16_where_there_is_no_bf16);
	tcase_add_test(t, an_unconfirmed_figure_states_why_it_has_no_value);
	tcase_add_test(t, ambiguous_alias_answers_the_canonical_pick_and_the_matches);
	tcase_add_test(t, local_says_plainly_there_is_no_gpu);
	tcase_add_test(t, occupancy_and_features_come_derived);
	tcase_add_loop_test(t, hostile_search_through_the_tool_is_never_an_error, 0,
			    sizeof HOSTILE / sizeof HOSTILE[0]);
	tcase_add_test(t, search_and_read_guides);
	tcase_add_test(t, resources_list_read_and_complete);
	tcase_add_test(t, write_kernel_prompt_assembles_facts_and_guides);
	suite_add_tcase(s, t);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
