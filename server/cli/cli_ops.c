/* cli_ops: `kforge ops` lists the built-in ops (kernels/op.h) and prints, for
 * one op and dtype, either the expanded template (what the `op` shorthand
 * fills in) or a starting kernel spec: the shorthand, the default sizes, a
 * launch list shaped like kforge's own kernel, and a kernel skeleton whose
 * parameters follow that launch's arguments. The build writes the starting
 * specs into skill/templates/specs/, so the skill's templates come from the
 * same registry as the harness's references. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/cli/cli.h"
#include "kernels/op.h"
#include "sandbox/spec/spec.h"

static const char OPS_USAGE[] =
	"usage: kforge ops [--json | --names]\n"
	"       kforge ops NAME [--dtype f32|f16|bf16] [--spec | --template]\n"
	"\n"
	"Without NAME, lists kforge's built-in ops (usable as \"op\" in a kernel spec\n"
	"and as references and baselines); --names prints only the names, one a\n"
	"line. With NAME:\n"
	"  --spec       (default) a starting kernel spec for NAME: the op shorthand,\n"
	"               the default sizes, a launch list like kforge's own kernel and\n"
	"               a kernel skeleton with matching parameters to fill in\n"
	"  --template   what the op shorthand expands to: tensors, scalars,\n"
	"               constraints, tolerance, cost, reference and baseline\n"
	"  --dtype DT   the element type (default bf16, or the op's first)\n"
	"\n"
	"Examples:\n"
	"  kforge ops\n"
	"  kforge ops rmsnorm --dtype bf16 > rmsnorm.json\n";

/* The CUDA C type of a dtype's element. */
static const char *c_type(int dt)
{
	switch (dt) {
	case KF_DT_F32: return "float";
	case KF_DT_F16: return "__half";
	case KF_DT_BF16: return "__nv_bfloat16";
	case KF_DT_F64: return "double";
	case KF_DT_I8: return "signed char";
	case KF_DT_U8: return "unsigned char";
	case KF_DT_I32: return "int";
	default: return "long long";
	}
}

/* Returns the op's expanded template for dtype dt (new reference) or NULL
 * with err set. */
static json_t *expand(const char *name, const char *dt, struct kf_err *err)
{
	json_t *in = json_pack("{s:s, s:s}", "op", name, "dtype", dt), *out = NULL;
	if (!in) {
		kf_err_set(err, KF_ENOMEM, "out of memory");
		return NULL;
	}
	if (spec_expand_op(in, op_find, &out, err) != 0)
		out = NULL;
	json_decref(in);
	return out;
}

/* Appends one kernel parameter for launch argument arg to f. */
static void param(FILE *f, const json_t *tmpl, const char *arg, int first)
{
	char name[SPEC_NAME_MAX + 1];
	const char *colon = strchr(arg, ':');
	size_t n = colon ? (size_t)(colon - arg) : strlen(arg);

	if (n > SPEC_NAME_MAX)
		n = SPEC_NAME_MAX;
	memcpy(name, arg, n);
	name[n] = '\0';
	fprintf(f, "%s", first ? "" : ", ");
	const json_t *t = json_object_get(json_object_get(tmpl, "tensors"), name);
	const json_t *s = json_object_get(json_object_get(tmpl, "scalars"), name);
	if (t) {
		const char *role = json_string_value(json_object_get(t, "role"));
		int dt = dtype_parse(json_string_value(json_object_get(t, "dtype")));
		fprintf(f, "%s%s *%s", role && strcmp(role, "input") == 0 ? "const " : "",
			c_type(dt), name);
	} else if (s) {
		int dt = dtype_parse(json_string_value(json_object_get(s, "dtype")));
		fprintf(f, "%s %s", c_type(dt), name);
	} else {
		/* a size expression: i32 unless typed ":i64" */
		int is64 = colon && strcmp(colon + 1, "i64") == 0;
		int plain =
			strspn(name,
			       "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789") ==
			strlen(name);
		fprintf(f, "%s %s", is64 ? "long long" : "int", plain ? name : "size_arg");
	}
}

/* Prints a starting spec: returns 0 or a CLI exit code. A baseline whose
 * launches are alternatives picked by "when" (kforge's few-row or flat
 * kernels beside a general one) starts from the last, general launch alone,
 * without its "when": one kernel to write, valid at every size. */
static int print_spec(const struct op_template *op, const char *dt, const json_t *tmpl)
{
	const json_t *base = json_object_get(json_object_get(tmpl, "baseline"), "launch");
	json_t *launch = json_array();
	char *src = NULL;
	size_t src_len = 0;
	FILE *f = open_memstream(&src, &src_len);
	size_t i, first = 0;
	json_t *l;

	if (!launch || !f || !json_is_array(base) || json_array_size(base) == 0) {
		if (f)
			fclose(f);
		free(src);
		json_decref(launch);
		fprintf(stderr, "kforge ops: %s has no launch list to start from\n", op->name);
		return CLI_EXIT_FAIL;
	}
	fprintf(f, "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n\n// %s\n// %s\n",
		op->description, op->summary);
	json_array_foreach(base, i, l)
		if (json_object_get(l, "when"))
			first = json_array_size(base) - 1;
	json_array_foreach(base, i, l) {
		if (i < first)
			continue;
		const char *k = json_string_value(json_object_get(l, "kernel"));
		char kname[128];
		snprintf(kname, sizeof(kname), "my_%s", k && strncmp(k, "kf_", 3) == 0 ? k + 3 : k);
		json_t *mine = json_deep_copy(l);
		json_object_set_new(mine, "kernel", json_string(kname));
		json_object_del(mine, "when");
		json_array_append_new(launch, mine);
		fprintf(f, "extern \"C\" __global__ void %s(", kname);
		size_t j;
		json_t *a;
		json_array_foreach(json_object_get(l, "args"), j, a)
			param(f, tmpl, json_string_value(a), j == 0);
		fprintf(f,
			")\n{\n\t// Write the op here. The launch list below is the shape of kforge's\n"
			"\t// own kernel; a plain first version can use a simpler one (e.g. one\n"
			"\t// block per row): change grid, block and shared_bytes to match.\n}\n\n");
	}
	fclose(f);
	json_t *spec = json_pack("{s:s, s:s, s:s, s:s, s:O, s:o}", "op", op->name, "dtype", dt,
				 "arch", "sm_90", "source", src ? src : "", "sizes",
				 json_object_get(tmpl, "sizes"), "launch", launch);
	free(src);
	if (!spec) {
		fprintf(stderr, "kforge ops: out of memory\n");
		return CLI_EXIT_FAIL;
	}
	char *text = json_dumps(spec, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(spec);
	if (!text)
		return CLI_EXIT_FAIL;
	printf("%s\n", text);
	free(text);
	return CLI_EXIT_OK;
}

static int run_ops(int argc, char **argv)
{
	const char *name = NULL, *dt = NULL;
	int json = 0, tmpl_only = 0, names = 0;
	struct kf_err err;

	kf_err_clear(&err);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else if (strcmp(argv[i], "--names") == 0)
			names = 1;
		else if (strcmp(argv[i], "--spec") == 0)
			tmpl_only = 0;
		else if (strcmp(argv[i], "--template") == 0)
			tmpl_only = 1;
		else if (strcmp(argv[i], "--dtype") == 0 && i + 1 < argc)
			dt = argv[++i];
		else if (argv[i][0] == '-')
			return cli_usage_error("ops", "unknown option '%s'", argv[i]);
		else if (!name)
			name = argv[i];
		else
			return cli_usage_error("ops", "unexpected argument '%s'", argv[i]);
	}
	if (!name && names) {
		for (size_t i = 0; i < op_count(); i++)
			printf("%s\n", op_at(i)->name);
		return CLI_EXIT_OK;
	}
	if (!name) {
		json_t *list = json_array();
		for (size_t i = 0; i < op_count(); i++) {
			const struct op_template *t = op_at(i);
			json_t *j = json_loads(t->spec_json, 0, NULL);
			json_array_append_new(
				list, json_pack("{s:s, s:s, s:s, s:O*}", "name", t->name, "summary",
						t->summary, "description", t->description, "dtypes",
						json_object_get(j, "dtypes")));
			json_decref(j);
		}
		json_t *res =
			json_pack("{s:s, s:o}", "summary", "kforge's built-in ops", "ops", list);
		cli_print_result(stdout, res, json);
		json_decref(res);
		return CLI_EXIT_OK;
	}
	const struct op_template *op = op_find(name);
	if (!op) {
		fprintf(stderr, "kforge ops: '%s' is not a built-in op; `kforge ops` lists them\n",
			name);
		return CLI_EXIT_NOTFOUND;
	}
	char first_dt[8] = "bf16";
	if (!dt) {
		/* bf16 where the op has it (the models' dtype), else its first */
		json_t *j = json_loads(op->spec_json, 0, NULL);
		const json_t *dts = json_object_get(j, "dtypes");
		int has_bf16 = 0;
		size_t i;
		json_t *d;
		json_array_foreach(dts, i, d)
			has_bf16 |= strcmp(json_string_value(d), "bf16") == 0;
		if (!has_bf16 && json_string_value(json_array_get(dts, 0)))
			snprintf(first_dt, sizeof(first_dt), "%s",
				 json_string_value(json_array_get(dts, 0)));
		json_decref(j);
		dt = first_dt;
	}
	json_t *tmpl = expand(name, dt, &err);
	if (!tmpl) {
		fprintf(stderr, "kforge ops: %s\n", err.msg);
		return CLI_EXIT_USAGE;
	}
	int rc = CLI_EXIT_OK;
	if (tmpl_only) {
		char *text = json_dumps(tmpl, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("%s\n", text ? text : "");
		free(text);
	} else {
		rc = print_spec(op, dt, tmpl);
	}
	json_decref(tmpl);
	return rc;
}

const struct cli_cmd CLI_OPS[] = {
	{"ops", "list kforge's built-in ops, or print a starting spec for one", OPS_USAGE, run_ops,
	 NULL, NULL},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
