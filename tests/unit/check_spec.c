/* check_spec: the kernel spec parser (sandbox/spec/spec.c): a valid spec parses
 * completely; every rejection names its field and reason (table-driven: one
 * base spec, one mutation per case); binding, caps, the odd size, the op
 * shorthand and the seeded input generator. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/spec/spec.h"

static const char *BASE =
	"{\"source\": \"extern \\\"C\\\" __global__ void k(float *y, const float *x, int n, float "
	"a) {}\","
	" \"arch\": \"sm_90\","
	" \"sizes\": [{\"N\": 1000, \"M\": 4}, {\"N\": 7, \"M\": 2}],"
	" \"tensors\": {"
	"   \"x\": {\"dtype\": \"f32\", \"shape\": [\"N\", \"M\"], \"role\": \"input\", \"init\": "
	"\"uniform\"},"
	"   \"ids\": {\"dtype\": \"i32\", \"shape\": [\"N\"], \"role\": \"input\", \"init\": "
	"\"index\", \"init_max\": \"M\"},"
	"   \"y\": {\"dtype\": \"f32\", \"shape\": [\"N\", \"M\"], \"role\": \"output\"}},"
	" \"scalars\": {\"alpha\": {\"dtype\": \"f32\", \"value\": 2.5}, \"k\": {\"dtype\": "
	"\"i32\", \"value\": 3}},"
	" \"launch\": [{\"kernel\": \"k\", \"grid\": [\"ceil_div(N * M, 256)\"], \"block\": [256],"
	"   \"shared_bytes\": \"4 * 256\", \"args\": [\"y\", \"x\", \"N * M\", \"alpha\", "
	"\"N:i64\", \"k\"]}],"
	" \"reference\": {\"source\": \"extern \\\"C\\\" __global__ void r(float *y) {}\","
	"   \"launch\": [{\"kernel\": \"r\", \"grid\": [\"N\"], \"block\": [\"M\"], \"args\": "
	"[\"y\"]}]},"
	" \"tolerance\": {\"atol\": 1e-5, \"rtol\": 1e-5},"
	" \"cost\": {\"bytes\": \"8 * N * M\", \"flops\": \"N * M\"},"
	" \"constraints\": [\"M % 2 == 0\", \"N >= 1\"]}";

static json_t *base_json(void)
{
	json_error_t je;
	json_t *j = json_loads(BASE, 0, &je);
	ck_assert_msg(j != NULL, "base spec: %s", je.text);
	return j;
}

/* Sets (or with value NULL deletes) the member at a dotted path such as
 * "tensors.y.shape" or "launch.0.grid"; numbers index arrays. */
static void mutate(json_t *root, const char *path, const char *value)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", path);
	json_t *cur = root;
	char *save = NULL, *tok = strtok_r(buf, ".", &save);
	while (tok) {
		char *next = strtok_r(NULL, ".", &save);
		int is_index = tok[0] >= '0' && tok[0] <= '9';
		if (!next) {
			json_t *v = NULL;
			if (value) {
				json_error_t je;
				v = json_loads(value, JSON_DECODE_ANY, &je);
				ck_assert_msg(v != NULL, "value %s: %s", value, je.text);
			}
			if (is_index) {
				size_t i = (size_t)strtoul(tok, NULL, 10);
				if (v)
					json_array_set_new(cur, i, v);
				else
					json_array_remove(cur, i);
			} else if (v)
				json_object_set_new(cur, tok, v);
			else
				json_object_del(cur, tok);
			return;
		}
		cur = is_index ? json_array_get(cur, (size_t)strtoul(tok, NULL, 10))
			       : json_object_get(cur, tok);
		ck_assert_msg(cur != NULL, "path %s missing at %s", path, tok);
		tok = next;
	}
}

START_TEST(valid_spec_parses_every_field)
{
	json_t *j = base_json();
	struct spec *s = NULL;
	struct kf_err err = {0};
	ck_assert_msg(spec_parse(j, NULL, NULL, &s, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(s->arch, "sm_90");
	ck_assert_uint_eq(s->vars_len, 2);
	ck_assert_str_eq(s->vars[0], "N");
	ck_assert_uint_eq(s->sizes_len, 2);
	ck_assert_int_eq(s->sizes[2], 7);
	ck_assert_int_eq(s->sizes[3], 2);
	ck_assert_uint_eq(s->tensors_len, 3);
	int y = spec_tensor_index(s, "y");
	ck_assert_int_ge(y, 0);
	ck_assert_int_eq(s->tensors[y].role, SPEC_ROLE_OUTPUT);
	ck_assert_int_eq(s->tensors[spec_tensor_index(s, "x")].init, SPEC_INIT_UNIFORM);
	ck_assert_int_eq(s->tensors[spec_tensor_index(s, "ids")].init, SPEC_INIT_INDEX);
	ck_assert_uint_eq(s->scalars_len, 2);
	ck_assert(s->scalars[spec_scalar_index(s, "alpha")].value == 2.5);
	ck_assert_int_eq(s->scalars[spec_scalar_index(s, "k")].ivalue, 3);
	ck_assert_uint_eq(s->launch_len, 1);
	const struct spec_launch *l = &s->launch[0];
	ck_assert_str_eq(l->kernel, "k");
	ck_assert_uint_eq(l->args_len, 6);
	ck_assert_int_eq(l->args[0].kind, SPEC_ARG_TENSOR);
	ck_assert_int_eq(l->args[2].kind, SPEC_ARG_SIZE);
	ck_assert_int_eq(l->args[2].dtype, KF_DT_I32);
	ck_assert_int_eq(l->args[3].kind, SPEC_ARG_SCALAR);
	ck_assert_int_eq(l->args[4].dtype, KF_DT_I64);
	ck_assert_int_eq(s->ref.kind, SPEC_REF_CUDA);
	ck_assert_int_eq(s->baseline.kind, SPEC_BASE_CUDA);
	ck_assert_uint_eq(s->baseline.launch_len, 1);
	ck_assert_int_eq(s->tol_given, 1);
	ck_assert_uint_eq(s->constraints_len, 2);

	struct spec_bound b;
	int64_t vals[] = {1000, 4};
	ck_assert_int_eq(spec_bind(s, vals, NULL, "sizes[0]", &b, &err), 0);
	ck_assert_uint_eq(b.elems[y], 4000);
	ck_assert_uint_eq(b.bytes[y], 16000);
	ck_assert(b.cost_bytes == 32000);
	ck_assert(b.cost_flops == 4000);
	/* x: 16000 -> 16128 padded, ids: 4000 -> 4096, y 16128; 3 x 2 guards */
	ck_assert_uint_eq(b.device_bytes, 16128 + 4096 + 16128 + 6 * SPEC_GUARD_BYTES);
	uint32_t g[3], bl[3], sb;
	ck_assert_int_eq(spec_launch_dims(s, l, vals, "sizes[0]", g, bl, &sb, &err), 0);
	ck_assert_uint_eq(g[0], 16);
	ck_assert_uint_eq(g[1], 1);
	ck_assert_uint_eq(bl[0], 256);
	ck_assert_uint_eq(sb, 1024);
	spec_free(s);
	spec_free(NULL);
	json_decref(j);
}
END_TEST

static const struct {
	const char *path;  /* dotted path to change */
	const char *value; /* new JSON value, NULL = delete */
	int code;
	const char *msg; /* substring of the rejection */
} BAD[] = {
	{"bogus", "1", KF_EINVAL, "spec: unknown key 'bogus'"},
	{"source", NULL, KF_EINVAL, "source: required"},
	{"source", "42", KF_EINVAL, "source: must be a string"},
	{"source", "\"\"", KF_EINVAL, "source: empty"},
	{"arch", "\"90\"", KF_EINVAL, "arch: '90' is not an arch"},
	{"arch", "\"sm_9x\"", KF_EINVAL, "arch: 'sm_9x' is not an arch"},
	{"sizes", "[]", KF_EINVAL, "sizes: must be a non-empty array"},
	{"sizes", "{\"N\": 4}", KF_EINVAL, "sizes: must be a non-empty array"},
	{"sizes.0", "[1]", KF_EINVAL, "sizes[0]: must be an object"},
	{"sizes.1", "5", KF_EINVAL, "sizes[1]: must be an object"},
	{"sizes.1.N", "0", KF_EINVAL, "sizes[1].N: must be a positive integer"},
	{"sizes.1.N", "-3", KF_EINVAL, "sizes[1].N: must be a positive integer"},
	{"sizes.1.N", "2.5", KF_EINVAL, "sizes[1].N: must be a positive integer"},
	{"sizes.1.Q", "3", KF_EINVAL, "sizes[1]: 'Q' is not in sizes[0]"},
	{"sizes.1.M", NULL, KF_EINVAL, "sizes[1]: missing 'M' (sizes[0] defines it)"},
	{"sizes.1", "{\"N\": 1000, \"M\": 4}", KF_EINVAL, "sizes[1]: same as sizes[0]"},
	{"sizes.0.x-y", "3", KF_EINVAL, "sizes[0]: 'x-y' is not a valid size name"},
	{"sizes.1.M", "3", KF_EINVAL, "sizes[1]: constraint 'M % 2 == 0' fails for M=3"},
	{"tensors", NULL, KF_EINVAL, "tensors: required"},
	{"tensors", "{}", KF_EINVAL, "tensors: required"},
	{"tensors.y.role", "\"input\"", KF_EINVAL, "tensors: no tensor has role output"},
	{"tensors.y.role", "\"result\"", KF_EINVAL, "tensors.y.role: 'result' is not a role"},
	{"tensors.y.role", NULL, KF_EINVAL, "tensors.y.role: must be input, output or inout"},
	{"tensors.y.dtype", "\"fp32\"", KF_EINVAL, "tensors.y.dtype: 'fp32' is not a dtype"},
	{"tensors.y.dtype", NULL, KF_EINVAL, "tensors.y.dtype: missing"},
	{"tensors.y.shape", "\"N\"", KF_EINVAL, "tensors.y.shape: must be an array"},
	{"tensors.y.shape.1", "\"K\"", KF_EINVAL,
	 "tensors.y.shape[1]: size 'K' is not defined by any entry of sizes"},
	{"tensors.y.shape.1", "\"M *\"", KF_EINVAL, "tensors.y.shape[1]: expression 'M *'"},
	{"tensors.y.shape.1", "1.5", KF_EINVAL,
	 "tensors.y.shape[1]: must be an integer expression"},
	{"tensors.y.shape.1", "\"M - 4\"", KF_EINVAL,
	 "sizes[0]: tensors.y.shape[1]: 'M - 4' is 0, must be at least 1"},
	{"tensors.y.shape.1", "\"M / (M - 4)\"", KF_EINVAL, "division by zero"},
	{"tensors.y.shape", "[1,1,1,1,1,1,1,1,1]", KF_ETOOBIG,
	 "tensors.y.shape: rank 9, at most 8"},
	{"tensors.y.shape", "[\"N * 1000000000000\", \"N * 1000000000\"]", KF_ETOOBIG,
	 "tensors.y: shape overflows int64"},
	{"tensors.y.shape", "[\"N * 3000000\"]", KF_ETOOBIG,
	 "tensors.y: 3000000000 elements, over the cap"},
	{"tensors.y.shap", "[1]", KF_EINVAL, "tensors.y: unknown key 'shap'"},
	{"tensors.y.init", "\"normal\"", KF_EINVAL, "tensors.y.init: an output is poisoned"},
	{"tensors.x.init", "\"zeros\"", KF_EINVAL, "tensors.x.init: 'zeros' is not an init"},
	{"tensors.ids.init_max", NULL, KF_EINVAL,
	 "tensors.ids.init_max: init 'index' needs init_max"},
	{"tensors.ids.init_max", "\"M - 4\"", KF_EINVAL, "tensors.ids.init_max: 'M - 4' is 0"},
	{"tensors.x.init_max", "3", KF_EINVAL,
	 "tensors.x.init_max: only meaningful with init 'index'"},
	{"tensors.ids.dtype", "\"f32\"", KF_EINVAL,
	 "tensors.ids: init 'index' needs an integer dtype"},
	{"tensors.N", "{\"dtype\": \"f32\", \"shape\": [1], \"role\": \"input\"}", KF_EINVAL,
	 "tensors.N: the name is also a size variable"},
	{"tensors.x y", "{}", KF_EINVAL, "tensors: 'x y' is not a valid name"},
	{"tensors.z", "3", KF_EINVAL, "tensors.z: must be an object"},
	{"scalars", "[]", KF_EINVAL, "scalars: must be an object"},
	{"scalars.alpha.value", "\"2\"", KF_EINVAL, "scalars.alpha.value: must be a number"},
	{"scalars.alpha.dtype", "\"i8\"", KF_EINVAL, "scalars.alpha.dtype: scalars are f32"},
	{"scalars.alpha.dtype", NULL, KF_EINVAL, "scalars.alpha.dtype: missing"},
	{"scalars.k.value", "2.5", KF_EINVAL, "scalars.k.value: must be an integer for dtype i32"},
	{"scalars.k.value", "4294967296", KF_EINVAL,
	 "scalars.k.value: 4294967296 does not fit in i32"},
	{"scalars.k.unit", "1", KF_EINVAL, "scalars.k: unknown key 'unit'"},
	{"scalars.x", "{\"dtype\": \"f32\", \"value\": 1}", KF_EINVAL,
	 "scalars.x: the name is also a size or a tensor"},
	{"scalars.q", "5", KF_EINVAL, "scalars.q: must be an object"},
	{"launch", NULL, KF_EINVAL, "launch: must be a non-empty list"},
	{"launch", "[]", KF_EINVAL, "launch: must be a non-empty list"},
	{"launch.0", "3", KF_EINVAL, "launch[0]: must be an object"},
	{"launch.0.kernel", "\"my kernel\"", KF_EINVAL, "launch[0].kernel: must be the extern"},
	{"launch.0.grid", NULL, KF_EINVAL, "launch[0].grid: must be a list of 1 to 3"},
	{"launch.0.grid", "[1,1,1,1]", KF_EINVAL, "launch[0].grid: must be a list of 1 to 3"},
	{"launch.0.grid.0", "\"ceil_div(N, Z)\"", KF_EINVAL,
	 "launch[0].grid[0]: size 'Z' is not defined by any entry of sizes"},
	{"launch.0.grid.0", "\"N - 1000\"", KF_EINVAL,
	 "sizes[0]: launch k.grid[0]: 'N - 1000' is 0, must be in [1,"},
	{"launch.0.grid", "[1, 70000]", KF_EINVAL,
	 "launch k.grid[1]: '70000' is 70000, must be in [1, 65535]"},
	{"launch.0.block", "[2048]", KF_EINVAL,
	 "launch k.block[0]: '2048' is 2048, must be in [1, 1024]"},
	{"launch.0.block", "[64, 64]", KF_EINVAL, "block has 4096 threads, at most 1024"},
	{"launch.0.shared_bytes", "\"0 - 1\"", KF_EINVAL, "k.shared_bytes: -1 bytes"},
	{"launch.0.args", NULL, KF_EINVAL, "launch[0].args: must be a list"},
	{"launch.0.args.0", "\"yy\"", KF_EINVAL,
	 "launch[0].args[0]: 'yy' is not a tensor, scalar or size"},
	{"launch.0.args.0", "\"y:i64\"", KF_EINVAL,
	 "launch[0].args[0]: only sizes take a type suffix"},
	{"launch.0.args.2", "\"N:u16\"", KF_EINVAL, "launch[0].args[2]: 'u16' is not a size type"},
	{"launch.0.args.2", "\"N +\"", KF_EINVAL, "launch[0].args[2]: expression 'N +'"},
	{"launch.0.args.2", "[1]", KF_EINVAL, "launch[0].args[2]: must name a tensor"},
	{"launch.0.args.2", "\"N * 3000000\"", KF_EINVAL,
	 "sizes[0]: launch k: args[2]: 'N * 3000000' is 3000000000, which does not fit in i32; "
	 "type it 'N * 3000000:i64'"},
	{"launch.0.stream", "1", KF_EINVAL, "launch[0]: unknown key 'stream'"},
	{"launch.0.when", "\"Z > 1\"", KF_EINVAL,
	 "launch[0].when: size 'Z' is not defined by any entry of sizes"},
	{"launch.0.when", "[1]", KF_EINVAL, "launch[0].when: must be an integer expression"},
	{"launch.0.when", "\"N > 5000\"", KF_EINVAL,
	 "sizes[0]: no kernel of launch runs at this size: every launch's 'when' is false"},
	{"launch.0.when", "\"N / (M - 4)\"", KF_EINVAL, "k.when"},
	{"reference", "\"torch\"", KF_EINVAL, "reference: must be"},
	{"reference.torch", "\"x * 2\"", KF_EINVAL, "reference: give exactly one of"},
	{"reference", "{}", KF_EINVAL, "reference: give exactly one of"},
	{"reference", "{\"torch\": \"\"}", KF_EINVAL,
	 "reference.torch: must be a Python expression"},
	{"reference", "{\"torch\": \"x\", \"dtype\": 1}", KF_EINVAL,
	 "reference: unknown key 'dtype'"},
	{"reference.launch", NULL, KF_EINVAL, "reference.launch: must be a non-empty list"},
	{"reference.launch.0.args.0", "\"w\"", KF_EINVAL,
	 "reference.launch[0].args[0]: 'w' is not a tensor"},
	{"reference.source", "7", KF_EINVAL, "reference.source: must be a string"},
	{"reference", "{\"op\": 3}", KF_EINVAL, "reference.op: must be a string"},
	{"reference", "{\"op\": \"scale\", \"params\": 3}", KF_EINVAL,
	 "reference.params: must be an object"},
	{"baseline", "[]", KF_EINVAL, "baseline: must be"},
	{"baseline", "{\"launch\": []}", KF_EINVAL, "baseline.launch: must be a non-empty list"},
	{"baseline",
	 "{\"launch\": [{\"kernel\": \"b\", \"grid\": [1], \"block\": [1], \"args\": [\"q\"]}]}",
	 KF_EINVAL, "baseline.launch[0].args[0]: 'q' is not a tensor"},
	{"baseline", "{\"lunch\": []}", KF_EINVAL, "baseline: unknown key 'lunch'"},
	{"tolerance", "1e-3", KF_EINVAL, "tolerance: must be"},
	{"tolerance.atol", NULL, KF_EINVAL, "tolerance: needs both atol and rtol"},
	{"tolerance.atol", "-1", KF_EINVAL, "tolerance: atol and rtol must be finite and >= 0"},
	{"tolerance.rtol", "5", KF_EINVAL, "would accept almost any answer"},
	{"tolerance.abs", "1", KF_EINVAL, "tolerance: unknown key 'abs'"},
	{"cost", "5", KF_EINVAL, "cost: must be"},
	{"cost.bytes", "\"8 * Q\"", KF_EINVAL, "cost.bytes: size 'Q' is not defined"},
	{"cost.flops", "\"0 - N\"", KF_EINVAL, "sizes[0]: cost.flops is negative"},
	{"cost.time", "1", KF_EINVAL, "cost: unknown key 'time'"},
	{"constraints", "\"M % 2 == 0\"", KF_EINVAL, "constraints: must be a list"},
	{"constraints.0", "\"M %% 2\"", KF_EINVAL, "constraints[0]: expression 'M %% 2'"},
	{"constraints.0", "\"N > 1000\"", KF_EINVAL,
	 "sizes[0]: constraint 'N > 1000' fails for N=1000"},
	{"constraints.0", "\"K > 1\"", KF_EINVAL, "constraints[0]: size 'K' is not defined"},
	{"op", "\"scale\"", KF_EINVAL, "op: the shorthand 'scale' was not expanded"},
	{"op", "3", KF_EINVAL, "op: must be a string"},
};

START_TEST(parse_rejects_each_bad_field_by_name)
{
	json_t *j = base_json();
	mutate(j, BAD[_i].path, BAD[_i].value);
	if (strcmp(BAD[_i].path, "op") == 0 && json_is_string(json_object_get(j, "op")))
		json_object_del(j, "tensors");
	struct spec *s = (struct spec *)1;
	struct kf_err err = {0};
	int rc = spec_parse(j, NULL, NULL, &s, &err);
	ck_assert_msg(rc == BAD[_i].code, "%s=%s: rc %d (%s), want %d", BAD[_i].path,
		      BAD[_i].value ? BAD[_i].value : "(deleted)", rc, err.msg, BAD[_i].code);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(err.msg, BAD[_i].msg) != NULL, "%s: got '%s', want '%s'", BAD[_i].path,
		      err.msg, BAD[_i].msg);
	json_decref(j);
}
END_TEST

/* "when" picks the launches that run at each size: a launch skipped at a
 * size need not have valid dims there, and spec_launch_runs says which
 * run (the op templates can then choose a kernel by shape). */
START_TEST(when_picks_the_launches_that_run_at_each_size)
{
	json_t *j = base_json();
	json_array_append_new(json_object_get(j, "launch"),
			      json_pack("{s:s,s:s,s:[s],s:[i],s:[s,s]}", "kernel", "small", "when",
					"N <= 100", "grid", "N - 100", "block", 32, "args", "y",
					"x"));
	mutate(j, "launch.0.when", "\"N > 100\"");
	struct spec *s = NULL;
	struct kf_err err = {0};
	/* grid N - 100 is 0 at N=7 (sizes[1]), where "small" runs: refused */
	ck_assert_int_eq(spec_parse(j, NULL, NULL, &s, &err), KF_EINVAL);
	ck_assert_msg(strstr(err.msg, "sizes[1]: launch small.grid[0]") != NULL, "%s", err.msg);
	mutate(j, "launch.1.grid.0", "\"101 - N\"");
	ck_assert_msg(spec_parse(j, NULL, NULL, &s, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(s->launch_len, 2);
	int64_t big[2] = {1000, 4}, small[2] = {7, 2};
	int r0, r1;
	ck_assert_int_eq(spec_launch_runs(s, &s->launch[0], big, &r0, &err), 0);
	ck_assert_int_eq(spec_launch_runs(s, &s->launch[1], big, &r1, &err), 0);
	ck_assert(r0 && !r1);
	ck_assert_int_eq(spec_launch_runs(s, &s->launch[0], small, &r0, &err), 0);
	ck_assert_int_eq(spec_launch_runs(s, &s->launch[1], small, &r1, &err), 0);
	ck_assert(!r0 && r1);
	ck_assert_int_eq(spec_launch_runs(s, &s->ref.launch[0], small, &r0, &err), 0);
	ck_assert(r0); /* no "when": always */
	spec_free(s);
	json_decref(j);
}
END_TEST

START_TEST(device_memory_over_the_cap_is_refused_up_front)
{
	json_t *j = base_json();
	mutate(j, "sizes.0.N", "100000000");
	struct spec_limits lim;
	spec_limits_default(&lim);
	lim.max_device_bytes = 1ull << 30;
	struct spec *s = NULL;
	struct kf_err err = {0};
	ck_assert_int_eq(spec_parse(j, &lim, NULL, &s, &err), KF_ETOOBIG);
	ck_assert_msg(strstr(err.msg, "sizes[0]: tensors need 3.35 GiB of device memory "
				      "with guard bands, over the 1.00 GiB cap") != NULL,
		      "%s", err.msg);
	/* Raising the cap admits it, but the host-memory cap still applies. */
	lim.max_device_bytes = 8ull << 30;
	lim.max_host_bytes = 1ull << 30;
	kf_err_clear(&err);
	ck_assert_int_eq(spec_parse(j, &lim, NULL, &s, &err), KF_ETOOBIG);
	ck_assert_ptr_nonnull(strstr(err.msg, "GiB of host memory"));
	lim.max_host_bytes = 64ull << 30;
	kf_err_clear(&err);
	ck_assert_msg(spec_parse(j, &lim, NULL, &s, &err) == 0, "%s", err.msg);
	spec_free(s);
	json_decref(j);
}
END_TEST

START_TEST(parse_text_reports_json_syntax_and_duplicate_keys)
{
	struct spec *s = NULL;
	struct kf_err err = {0};
	const char *bad = "{\"source\": \"x\",}";
	ck_assert_int_eq(spec_parse_text(bad, strlen(bad), NULL, NULL, &s, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "spec: invalid JSON at line 1"));
	const char *dup = "{\"source\": \"x\", \"source\": \"y\"}";
	kf_err_clear(&err);
	ck_assert_int_eq(spec_parse_text(dup, strlen(dup), NULL, NULL, &s, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "duplicate"));
	kf_err_clear(&err);
	ck_assert_int_eq(spec_parse_text("[1]", 3, NULL, NULL, &s, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "spec: must be a JSON object"));
	ck_assert_msg(spec_parse_text(BASE, strlen(BASE), NULL, NULL, &s, &err) == 0, "%s",
		      err.msg);
	spec_free(s);
}
END_TEST

/* A test op template: y = x * scale, with a fatbin baseline. */
static int scale_ref(const struct op_ref_call *c, struct kf_err *err)
{
	(void)err;
	for (int64_t i = 0; i < c->sizes[0]; i++)
		c->out[0][i] = c->in[0][i] * c->scalars[0];
	return 0;
}
static const char *const SCALE_SIZES[] = {"N", NULL};
static const char *const SCALE_IN[] = {"x", NULL};
static const char *const SCALE_OUT[] = {"y", NULL};
static const char *const SCALE_SCALARS[] = {"scale", NULL};
static const struct op_template SCALE = {
	.name = "scale",
	.summary = "y = x * scale",
	.size_names = SCALE_SIZES,
	.inputs = SCALE_IN,
	.outputs = SCALE_OUT,
	.scalar_names = SCALE_SCALARS,
	.spec_json = "{\"dtypes\": [\"f32\", \"bf16\"],"
		     " \"tensors\": {\"x\": {\"dtype\": \"$dtype\", \"shape\": [\"N\"], \"role\": "
		     "\"input\"},"
		     "   \"y\": {\"dtype\": \"$dtype\", \"shape\": [\"N\"], \"role\": \"output\"}},"
		     " \"scalars\": {\"scale\": {\"dtype\": \"f32\", \"value\": 0.5}},"
		     " \"constraints\": [\"N % 2 == 0\"],"
		     " \"default_sizes\": [{\"N\": 4096}, {\"N\": 100}],"
		     " \"tolerance\": {\"f32\": {\"atol\": 1e-6, \"rtol\": 1e-6}, \"bf16\": "
		     "{\"atol\": 1e-2, \"rtol\": 1e-2}},"
		     " \"cost\": {\"bytes\": \"N * 4\", \"flops\": \"N\"},"
		     " \"baseline\": {\"launch\": [{\"kernel\": \"kf_scale_$dtype\", \"grid\": "
		     "[\"ceil_div(N, 256)\"],"
		     "   \"block\": [256], \"args\": [\"y\", \"x\", \"N\", \"scale\"]}]}}",
	.ref = scale_ref,
};
static const struct op_template *find_scale(const char *name)
{
	return strcmp(name, "scale") == 0 ? &SCALE : NULL;
}

START_TEST(op_shorthand_fills_tensors_scalars_and_baseline)
{
	const char *text = "{\"op\": \"scale\", \"dtype\": \"bf16\", \"source\": \"s\","
			   " \"launch\": [{\"kernel\": \"mine\", \"grid\": [\"N\"], \"block\": "
			   "[1], \"args\": [\"y\", \"x\", \"N\", \"scale\"]}]}";
	struct spec *s = NULL;
	struct kf_err err = {0};
	ck_assert_msg(spec_parse_text(text, strlen(text), NULL, find_scale, &s, &err) == 0, "%s",
		      err.msg);
	ck_assert_str_eq(s->op, "scale");
	ck_assert_int_eq(s->op_dtype, KF_DT_BF16);
	ck_assert_int_eq(s->tensors[spec_tensor_index(s, "x")].dtype, KF_DT_BF16);
	ck_assert_uint_eq(s->sizes_len, 2);
	ck_assert_int_eq(s->ref.kind, SPEC_REF_OP);
	ck_assert_uint_eq(s->ref.params_len, 1);
	ck_assert(s->ref.params[0] == 0.5);
	ck_assert_int_eq(s->baseline.kind, SPEC_BASE_FATBIN);
	ck_assert_str_eq(s->baseline.launch[0].kernel, "kf_scale_bf16");
	ck_assert(s->atol == 1e-2);
	ck_assert_uint_eq(s->constraints_len, 1);
	spec_free(s);
}
END_TEST

static const struct {
	const char *text;
	const char *msg;
} BAD_OP[] = {
	{"{\"op\": \"nope\", \"dtype\": \"f32\", \"source\": \"s\"}",
	 "op: 'nope' is not a built-in op"},
	{"{\"op\": 5, \"source\": \"s\"}", "op: must be the name of a built-in op"},
	{"{\"op\": \"scale\", \"source\": \"s\"}", "dtype: the op shorthand needs \"dtype\""},
	{"{\"op\": \"scale\", \"dtype\": \"f64\", \"source\": \"s\"}",
	 "dtype: 'f64' is not supported by op 'scale' (supported: f32, bf16)"},
	{"{\"op\": \"scale\", \"dtype\": \"f32\", \"source\": \"s\", \"sizes\": [{\"N\": 7}],"
	 " \"launch\": [{\"kernel\": \"m\", \"grid\": [1], \"block\": [1], \"args\": [\"y\"]}]}",
	 "sizes[0]: constraint 'N % 2 == 0' fails for N=7"},
	{"{\"source\": \"s\", \"sizes\": [{\"N\": 8}], \"tensors\": {\"x\": {\"dtype\": \"f32\", "
	 "\"shape\": [\"N\"], \"role\": \"input\"},"
	 " \"z\": {\"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"output\"}},"
	 " \"launch\": [{\"kernel\": \"m\", \"grid\": [1], \"block\": [1], \"args\": [\"z\"]}], "
	 "\"reference\": {\"op\": \"scale\"}}",
	 "reference.op: op 'scale' needs tensor 'y', which tensors does not declare"},
	{"{\"source\": \"s\", \"sizes\": [{\"N\": 8}], \"tensors\": {\"x\": {\"dtype\": \"f32\", "
	 "\"shape\": [\"N\"], \"role\": \"output\"},"
	 " \"y\": {\"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"output\"}},"
	 " \"launch\": [{\"kernel\": \"m\", \"grid\": [1], \"block\": [1], \"args\": [\"y\"]}], "
	 "\"reference\": {\"op\": \"scale\"}}",
	 "tensors.x.role: op 'scale' has it as an input"},
	{"{\"source\": \"s\", \"sizes\": [{\"M\": 8}], \"tensors\": {\"x\": {\"dtype\": \"f32\", "
	 "\"shape\": [\"M\"], \"role\": \"input\"},"
	 " \"y\": {\"dtype\": \"f32\", \"shape\": [\"M\"], \"role\": \"output\"}},"
	 " \"launch\": [{\"kernel\": \"m\", \"grid\": [1], \"block\": [1], \"args\": [\"y\"]}], "
	 "\"reference\": {\"op\": \"scale\"}}",
	 "reference.op: op 'scale' needs size 'N'"},
	{"{\"source\": \"s\", \"sizes\": [{\"N\": 8}], \"tensors\": {\"x\": {\"dtype\": \"f32\", "
	 "\"shape\": [\"N\"], \"role\": \"input\"},"
	 " \"y\": {\"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"output\"}},"
	 " \"launch\": [{\"kernel\": \"m\", \"grid\": [1], \"block\": [1], \"args\": [\"y\"]}], "
	 "\"reference\": {\"op\": \"scale\"}}",
	 "reference.params: op 'scale' needs 'scale'"},
	{"{\"source\": \"s\", \"sizes\": [{\"N\": 8}], \"tensors\": {\"x\": {\"dtype\": \"f32\", "
	 "\"shape\": [\"N\"], \"role\": \"input\"},"
	 " \"y\": {\"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"output\"}},"
	 " \"launch\": [{\"kernel\": \"m\", \"grid\": [1], \"block\": [1], \"args\": [\"y\"]}],"
	 " \"reference\": {\"op\": \"scale\", \"params\": {\"scale\": 2, \"bias\": 1}}}",
	 "reference.params.bias: op 'scale' has no such parameter"},
	{"{\"source\": \"s\", \"sizes\": [{\"N\": 8}], \"tensors\": {\"x\": {\"dtype\": \"f32\", "
	 "\"shape\": [\"N\"], \"role\": \"input\"},"
	 " \"y\": {\"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"output\"}},"
	 " \"launch\": [{\"kernel\": \"m\", \"grid\": [1], \"block\": [1], \"args\": [\"y\"]}],"
	 " \"reference\": {\"op\": \"scale\", \"params\": {\"scale\": \"2\"}}}",
	 "reference.params.scale: must be a number"},
	{"{\"source\": \"s\", \"sizes\": [{\"N\": 8}], \"tensors\": {\"x\": {\"dtype\": \"f32\", "
	 "\"shape\": [\"N\"], \"role\": \"input\"},"
	 " \"y\": {\"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"output\"}},"
	 " \"launch\": [{\"kernel\": \"m\", \"grid\": [1], \"block\": [1], \"args\": [\"y\"]}],"
	 " \"reference\": {\"op\": \"gemm\"}}",
	 "reference.op: 'gemm' is not a built-in op"},
};

START_TEST(op_shorthand_and_op_reference_reject_mismatches)
{
	struct spec *s = NULL;
	struct kf_err err = {0};
	int rc = spec_parse_text(BAD_OP[_i].text, strlen(BAD_OP[_i].text), NULL, find_scale, &s,
				 &err);
	ck_assert_int_eq(rc, KF_EINVAL);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(err.msg, BAD_OP[_i].msg) != NULL, "got '%s', want '%s'", err.msg,
		      BAD_OP[_i].msg);
}
END_TEST

START_TEST(op_reference_without_find_is_kept_unchecked_for_the_harness)
{
	const char *text = "{\"source\": \"s\", \"sizes\": [{\"N\": 8}], \"tensors\": {\"y\": "
			   "{\"dtype\": \"f32\", \"shape\": [\"N\"], \"role\": \"output\"}},"
			   " \"launch\": [{\"kernel\": \"m\", \"grid\": [1], \"block\": [1], "
			   "\"args\": [\"y\"]}], \"reference\": {\"op\": \"whatever\"}}";
	struct spec *s = NULL;
	struct kf_err err = {0};
	ck_assert_msg(spec_parse_text(text, strlen(text), NULL, NULL, &s, &err) == 0, "%s",
		      err.msg);
	ck_assert_int_eq(s->ref.kind, SPEC_REF_OP);
	ck_assert_str_eq(s->ref.op, "whatever");
	spec_free(s);
}
END_TEST

START_TEST(odd_size_satisfies_constraints_and_is_not_listed)
{
	json_t *j = base_json();
	struct spec *s = NULL;
	struct kf_err err = {0};
	ck_assert_int_eq(spec_parse(j, NULL, NULL, &s, &err), 0);
	for (uint64_t seed = 1; seed < 40; seed++) {
		int64_t v[2];
		ck_assert_msg(spec_odd_size(s, NULL, seed, v, &err) == 0, "%s", err.msg);
		ck_assert_int_eq(v[1] % 2, 0); /* constraint M % 2 == 0 */
		ck_assert(!(v[0] == 1000 && v[1] == 4));
		ck_assert(!(v[0] == 7 && v[1] == 2));
		ck_assert_int_ge(v[0], 1);
		ck_assert_int_ge(v[1], 1);
	}
	spec_free(s);
	/* A constraint nothing nearby satisfies: no odd size, said so. */
	mutate(j, "constraints",
	       "[\"N == 1000 || N == 7\", \"M == 4 || M == 2\", \"N * M == 4000 || N * M == 14\"]");
	ck_assert_msg(spec_parse(j, NULL, NULL, &s, &err) == 0, "%s", err.msg);
	int64_t v[2];
	kf_err_clear(&err);
	ck_assert_int_eq(spec_odd_size(s, NULL, 3, v, &err), KF_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.msg, "satisfies the constraints"));
	spec_free(s);
	json_decref(j);
}
END_TEST

START_TEST(odd_size_near_int64_max_stays_in_range)
{
	/* K is only a launch argument, so any positive value binds; at
	 * INT64_MAX a step up would overflow. */
	json_t *j = base_json();
	struct spec *s = NULL;
	struct kf_err err = {0};
	mutate(j, "sizes",
	       "[{\"N\": 1000, \"M\": 4, \"K\": 9223372036854775807},"
	       " {\"N\": 7, \"M\": 2, \"K\": 9223372036854775806}]");
	json_array_append_new(
		json_object_get(json_array_get(json_object_get(j, "launch"), 0), "args"),
		json_string("K:i64"));
	ck_assert_msg(spec_parse(j, NULL, NULL, &s, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(s->vars_len, 3);
	int k = s->vars[2][0] == 'K' ? 2 : s->vars[1][0] == 'K' ? 1 : 0;
	for (uint64_t seed = 1; seed < 40; seed++) {
		int64_t v[3];
		ck_assert_msg(spec_odd_size(s, NULL, seed, v, &err) == 0, "%s", err.msg);
		ck_assert_int_ge(v[k], 9223372036854775807ll - 4096);
	}
	spec_free(s);
	json_decref(j);
}
END_TEST

START_TEST(init_max_is_its_expression_at_the_row_sizes)
{
	json_t *j = base_json();
	struct spec *s = NULL;
	struct kf_err err = {0};
	ck_assert_msg(spec_parse(j, NULL, NULL, &s, &err) == 0, "%s", err.msg);
	int ids = spec_tensor_index(s, "ids"), x = spec_tensor_index(s, "x");
	ck_assert(ids >= 0 && x >= 0);
	/* ids: init_max "M"; rows {N 1000, M 4} and {N 7, M 2} */
	ck_assert_int_eq(spec_init_max(s, (size_t)ids, &s->sizes[0]), 4);
	ck_assert_int_eq(spec_init_max(s, (size_t)ids, &s->sizes[s->vars_len]), 2);
	ck_assert_int_eq(spec_init_max(s, (size_t)x, &s->sizes[0]), 0); /* none */
	spec_free(s);
	json_decref(j);
}
END_TEST

START_TEST(fill_is_deterministic_per_seed_and_tensor)
{
	struct spec_tensor t = {.name = "x", .dtype = KF_DT_F32, .init = SPEC_INIT_NORMAL};
	enum { N = 20000 };
	float *a = malloc(N * 4), *b = malloc(N * 4), *c = malloc(N * 4);
	spec_fill(&t, 0, 42, 0, a, N);
	spec_fill(&t, 0, 42, 0, b, N);
	ck_assert_int_eq(memcmp(a, b, N * 4), 0);
	spec_fill(&t, 1, 42, 0, c, N);
	ck_assert_int_ne(memcmp(a, c, N * 4), 0);
	spec_fill(&t, 0, 43, 0, c, N);
	ck_assert_int_ne(memcmp(a, c, N * 4), 0);
	/* normal: mean ~0, variance ~1 */
	double sum = 0, sq = 0;
	for (int i = 0; i < N; i++) {
		sum += a[i];
		sq += (double)a[i] * a[i];
	}
	ck_assert(fabs(sum / N) < 0.05);
	ck_assert(fabs(sq / N - 1.0) < 0.05);
	/* uniform in [-1, 1), positive in [0.5, 1.5) */
	t.init = SPEC_INIT_UNIFORM;
	spec_fill(&t, 0, 7, 0, a, N);
	t.init = SPEC_INIT_POSITIVE;
	spec_fill(&t, 0, 7, 0, b, N);
	for (int i = 0; i < N; i++) {
		ck_assert(a[i] >= -1 && a[i] < 1);
		ck_assert(b[i] >= 0.5 && b[i] < 1.5);
	}
	/* index: integers in [0, max) */
	int32_t *ids = (int32_t *)c;
	struct spec_tensor ti = {.name = "i", .dtype = KF_DT_I32, .init = SPEC_INIT_INDEX};
	spec_fill(&ti, 2, 9, 13, ids, N);
	int seen_top = 0;
	for (int i = 0; i < N; i++) {
		ck_assert(ids[i] >= 0 && ids[i] < 13);
		seen_top |= ids[i] == 12;
	}
	ck_assert(seen_top);
	/* bf16 values are rounded bf16, stored as their bits */
	uint16_t *h = (uint16_t *)a;
	struct spec_tensor tb = {.name = "b", .dtype = KF_DT_BF16, .init = SPEC_INIT_ARANGE};
	spec_fill(&tb, 0, 1, 0, h, 300);
	ck_assert(dtype_bf16_to_f32(h[5]) == 5.0f);
	ck_assert(dtype_bf16_to_f32(h[130]) == 2.0f);
	free(a);
	free(b);
	free(c);
}
END_TEST

START_TEST(parallel_fill_of_large_tensors_matches_element_by_element)
{
	/* The same elements filled by differently split threads (N and P
	 * split differently; 65535 elements, under two threads' minimum, by
	 * one thread) must be the same bytes. */
	enum { N = (1 << 20) + 5, P = (1 << 20) - 2, ONE = 65535 };
	struct spec_tensor t = {.name = "x", .dtype = KF_DT_F32, .init = SPEC_INIT_NORMAL};
	float *big = malloc((size_t)N * 4), *small = malloc((size_t)P * 4);
	spec_fill(&t, 3, 77, 0, big, N);
	spec_fill(&t, 3, 77, 0, small, P);
	ck_assert_int_eq(memcmp(big, small, (size_t)P * 4), 0);
	spec_fill(&t, 3, 77, 0, small, ONE);
	ck_assert_int_eq(memcmp(big, small, (size_t)ONE * 4), 0);
	for (uint64_t i = P; i < N; i++)
		ck_assert(isfinite(big[i]));
	double sum = 0, sq = 0;
	for (uint64_t i = 0; i < N; i++) {
		sum += big[i];
		sq += (double)big[i] * big[i];
	}
	ck_assert(fabs(sum / N) < 0.01);
	ck_assert(fabs(sq / N - 1.0) < 0.01);
	free(big);
	free(small);
}
END_TEST

START_TEST(default_tolerances_are_per_dtype)
{
	double a, r;
	spec_default_tolerance(KF_DT_F32, &a, &r);
	ck_assert(a == 1e-4 && r == 1e-4);
	spec_default_tolerance(KF_DT_BF16, &a, &r);
	ck_assert(a == 2e-2 && r == 2e-2);
	spec_default_tolerance(KF_DT_F16, &a, &r);
	ck_assert(a == 1e-2 && r == 1e-2);
	spec_default_tolerance(KF_DT_I32, &a, &r);
	ck_assert(a == 0 && r == 0);
	ck_assert_str_eq(spec_role_name(SPEC_ROLE_INOUT), "inout");
	ck_assert_str_eq(spec_init_name(SPEC_INIT_INDEX), "index");
}
END_TEST

START_TEST(every_builtin_op_expands_and_parses_for_each_dtype)
{
	ck_assert_uint_gt(op_count(), 0);
	for (size_t i = 0; i < op_count(); i++) {
		const struct op_template *t = op_at(i);
		json_t *tpl = json_loads(t->spec_json, 0, NULL);
		ck_assert_msg(tpl != NULL, "op %s: template JSON does not parse", t->name);
		json_t *dts = json_object_get(tpl, "dtypes");
		size_t k;
		json_t *dt;
		json_array_foreach(dts, k, dt) {
			json_t *in = json_pack("{s:s, s:s, s:s}", "op", t->name, "dtype",
					       json_string_value(dt), "source", "x");
			/* The candidate launches like the baseline. */
			json_t *x = NULL;
			struct kf_err err = {0};
			ck_assert_msg(spec_expand_op(in, op_find, &x, &err) == 0, "%s/%s: %s",
				      t->name, json_string_value(dt), err.msg);
			json_object_set(x, "launch",
					json_object_get(json_object_get(x, "baseline"), "launch"));
			struct spec *s = NULL;
			ck_assert_msg(spec_parse(x, NULL, op_find, &s, &err) == 0, "%s/%s: %s",
				      t->name, json_string_value(dt), err.msg);
			ck_assert_int_eq(s->ref.kind, SPEC_REF_OP);
			ck_assert_int_eq(s->baseline.kind, SPEC_BASE_FATBIN);
			ck_assert_int_eq(s->tol_given, 1);
			spec_free(s);
			json_decref(x);
			json_decref(in);
		}
		json_decref(tpl);
	}
}
END_TEST

/* Rejections that need many entries or long text: built in code. */
static json_t *big_case(int i, const char **msg, int *code)
{
	json_t *j = base_json();
	*code = KF_ETOOBIG;
	switch (i) {
	case 0: {
		json_t *sz = json_array();
		for (int k = 1; k <= SPEC_MAX_SIZES + 1; k++)
			json_array_append_new(sz, json_pack("{s:i, s:i}", "N", k, "M", 2));
		json_object_set_new(j, "sizes", sz);
		*msg = "sizes: 33 entries, at most 32";
		break;
	}
	case 1: {
		json_t *row = json_object();
		for (int k = 0; k <= SPEC_MAX_VARS; k++) {
			char n[8];
			snprintf(n, sizeof n, "V%d", k);
			json_object_set_new(row, n, json_integer(1));
		}
		json_object_set_new(j, "sizes", json_pack("[o]", row));
		*msg = "sizes[0]: more than 16 size variables";
		break;
	}
	case 2: {
		json_t *t = json_object_get(j, "tensors");
		for (int k = 0; k < SPEC_MAX_TENSORS; k++) {
			char n[8];
			snprintf(n, sizeof n, "t%d", k);
			json_object_set_new(t, n,
					    json_pack("{s:s, s:[i], s:s}", "dtype", "f32", "shape",
						      1, "role", "input"));
		}
		*msg = "tensors: 35, at most 32";
		break;
	}
	case 3: {
		json_t *t = json_object_get(j, "scalars");
		for (int k = 0; k < SPEC_MAX_SCALARS; k++) {
			char n[8];
			snprintf(n, sizeof n, "c%d", k);
			json_object_set_new(t, n,
					    json_pack("{s:s, s:f}", "dtype", "f32", "value", 1.0));
		}
		*msg = "scalars: 34, at most 32";
		break;
	}
	case 4: {
		json_t *l = json_object_get(j, "launch");
		for (int k = 0; k < SPEC_MAX_LAUNCHES; k++)
			json_array_append(l, json_array_get(l, 0));
		*msg = "launch: 17 launches, at most 16";
		break;
	}
	case 5: {
		json_t *a =
			json_object_get(json_array_get(json_object_get(j, "launch"), 0), "args");
		for (int k = 0; k < SPEC_MAX_ARGS; k++)
			json_array_append_new(a, json_string("N"));
		*msg = "launch[0].args: 70 args, at most 64";
		break;
	}
	case 6: {
		char *src = malloc(SPEC_MAX_SOURCE_BYTES + 2);
		memset(src, ' ', SPEC_MAX_SOURCE_BYTES + 1);
		src[SPEC_MAX_SOURCE_BYTES + 1] = 0;
		json_object_set_new(j, "source", json_string(src));
		free(src);
		*msg = "source: 1048577 bytes, at most 1048576";
		break;
	}
	case 7: {
		json_object_set_new(j, "source", json_stringn("ab\0cd", 5));
		*code = KF_EINVAL;
		*msg = "source: empty or contains a NUL byte";
		break;
	}
	case 8: {
		json_t *c = json_array();
		for (int k = 0; k <= SPEC_MAX_CONSTRAINTS; k++)
			json_array_append_new(c, json_string("N > 0"));
		json_object_set_new(j, "constraints", c);
		*msg = "constraints: at most 32";
		break;
	}
	case 9: {
		char *e = malloc(EXPR_MAX_TEXT + 10);
		memset(e, '1', EXPR_MAX_TEXT + 5);
		e[EXPR_MAX_TEXT + 5] = 0;
		json_array_set_new(
			json_object_get(json_array_get(json_object_get(j, "launch"), 0), "args"), 2,
			json_string(e));
		free(e);
		*msg = "launch[0].args[2]: too long";
		break;
	}
	case 10: {
		json_object_set_new(json_object_get(j, "cost"), "bytes", json_string("0 - N"));
		*code = KF_EINVAL;
		*msg = "sizes[0]: cost.bytes is negative";
		break;
	}
	default: break;
	}
	return j;
}

START_TEST(parse_rejects_specs_over_each_cap)
{
	const char *msg = "";
	int code = 0;
	json_t *j = big_case(_i, &msg, &code);
	struct spec *s = (struct spec *)1;
	struct kf_err err = {0};
	ck_assert_int_eq(spec_parse(j, NULL, NULL, &s, &err), code);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(err.msg, msg) != NULL, "case %d: got '%s', want '%s'", _i, err.msg,
		      msg);
	json_decref(j);
}
END_TEST

START_TEST(parse_text_refuses_oversized_input_and_odd_size_needs_variables)
{
	struct spec *s = NULL;
	struct kf_err err = {0};
	size_t big = SPEC_MAX_SOURCE_BYTES * 3u + 1;
	ck_assert_int_eq(spec_parse_text("{}", big, NULL, NULL, &s, &err), KF_ETOOBIG);
	ck_assert_ptr_nonnull(strstr(err.msg, "spec: 3145729 bytes, at most 3145728"));
	const char *text = "{\"source\": \"s\", \"tensors\": {\"y\": {\"dtype\": \"f32\", "
			   "\"shape\": [4], \"role\": \"output\"}},"
			   " \"launch\": [{\"kernel\": \"m\", \"grid\": [1], \"block\": [4], "
			   "\"args\": [\"y\"]}]}";
	kf_err_clear(&err);
	ck_assert_msg(spec_parse_text(text, strlen(text), NULL, NULL, &s, &err) == 0, "%s",
		      err.msg);
	ck_assert_uint_eq(s->vars_len, 0);
	ck_assert_uint_eq(s->sizes_len, 1);
	int64_t v[1];
	ck_assert_int_eq(spec_odd_size(s, NULL, 1, v, &err), KF_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.msg, "no size variables"));
	spec_free(s);
	/* the op shorthand needs a find function that knows the op */
	const char *op = "{\"op\": \"scale\", \"dtype\": \"f32\", \"source\": \"s\"}";
	kf_err_clear(&err);
	ck_assert_int_eq(spec_parse_text(op, strlen(op), NULL, NULL, &s, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "op: 'scale' is not a built-in op (known: none)"));
}
END_TEST

static Suite *spec_suite(void)
{
	Suite *s = suite_create("spec");
	TCase *p = tcase_create("parse");
	tcase_add_test(p, valid_spec_parses_every_field);
	tcase_add_loop_test(p, parse_rejects_each_bad_field_by_name, 0, sizeof BAD / sizeof BAD[0]);
	tcase_add_test(p, when_picks_the_launches_that_run_at_each_size);
	tcase_add_test(p, device_memory_over_the_cap_is_refused_up_front);
	tcase_add_test(p, parse_text_reports_json_syntax_and_duplicate_keys);
	tcase_add_loop_test(p, parse_rejects_specs_over_each_cap, 0, 11);
	tcase_add_test(p, parse_text_refuses_oversized_input_and_odd_size_needs_variables);
	suite_add_tcase(s, p);
	TCase *o = tcase_create("op");
	tcase_add_test(o, op_shorthand_fills_tensors_scalars_and_baseline);
	tcase_add_loop_test(o, op_shorthand_and_op_reference_reject_mismatches, 0,
			    sizeof BAD_OP / sizeof BAD_OP[0]);
	tcase_add_test(o, op_reference_without_find_is_kept_unchecked_for_the_harness);
	tcase_add_test(o, every_builtin_op_expands_and_parses_for_each_dtype);
	suite_add_tcase(s, o);
	TCase *b = tcase_create("bind");
	tcase_add_test(b, odd_size_satisfies_constraints_and_is_not_listed);
	tcase_add_test(b, odd_size_near_int64_max_stays_in_range);
	tcase_add_test(b, init_max_is_its_expression_at_the_row_sizes);
	tcase_add_test(b, fill_is_deterministic_per_seed_and_tensor);
	tcase_add_test(b, default_tolerances_are_per_dtype);
	tcase_add_test(b, parallel_fill_of_large_tensors_matches_element_by_element);
	suite_add_tcase(s, b);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(spec_suite());
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
