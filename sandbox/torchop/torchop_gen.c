/* torchop_gen: the sources of a torch op, generated from a parsed spec.
 * The op's arguments are the spec's input and inout tensors (in spec order),
 * then an int per size variable no input dimension names, then the scalars
 * with the spec's values as defaults; it returns the output tensors,
 * allocated from their shape expressions. Size variables are read from the
 * first input dimension whose shape entry is exactly that variable; every
 * other dimension and constraint is checked against them. */
#include "sandbox/torchop/torchop.h"
#include "sandbox/torchop/torchop_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The op's interface derived from the spec. */
struct sig {
	size_t args[SPEC_MAX_TENSORS]; /* input and inout tensors, spec order */
	size_t args_len;
	size_t outs[SPEC_MAX_TENSORS]; /* output tensors, spec order */
	size_t outs_len;
	int src_t[SPEC_MAX_VARS]; /* tensor naming variable k, -1: an int argument */
	int src_d[SPEC_MAX_VARS];
};

static const char *at_type(enum kf_dtype dt)
{
	static const char *const n[] = {"at::kFloat", "at::kHalf", "at::kBFloat16", "at::kDouble",
					"at::kChar",  "at::kByte", "at::kInt",	    "at::kLong"};
	return dt < KF_DT_COUNT ? n[dt] : "at::kFloat";
}

static const char *py_type(enum kf_dtype dt)
{
	static const char *const n[] = {"torch.float32", "torch.float16", "torch.bfloat16",
					"torch.float64", "torch.int8",	  "torch.uint8",
					"torch.int32",	 "torch.int64"};
	return dt < KF_DT_COUNT ? n[dt] : "torch.float32";
}

static int is_ident(const char *s)
{
	if (!s || !(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

/* The shape entry is exactly the variable (spaces allowed). */
static int is_var(const struct expr *e, const char *var)
{
	const char *t = expr_text(e);
	size_t n = strlen(var);
	while (*t == ' ')
		t++;
	if (strncmp(t, var, n) != 0)
		return 0;
	for (t += n; *t == ' '; t++)
		;
	return *t == '\0';
}

static void derive(const struct spec *s, struct sig *g)
{
	memset(g, 0, sizeof *g);
	for (size_t t = 0; t < s->tensors_len; t++) {
		if (s->tensors[t].role == SPEC_ROLE_OUTPUT)
			g->outs[g->outs_len++] = t;
		else
			g->args[g->args_len++] = t;
	}
	for (size_t k = 0; k < s->vars_len; k++) {
		g->src_t[k] = -1;
		for (size_t a = 0; a < g->args_len && g->src_t[k] < 0; a++) {
			const struct spec_tensor *T = &s->tensors[g->args[a]];
			for (size_t d = 0; d < T->rank; d++)
				if (is_var(T->shape[d], s->vars[k])) {
					g->src_t[k] = (int)g->args[a];
					g->src_d[k] = (int)d;
					break;
				}
		}
	}
}

/* The shortest text that reads back as v, always with a '.' or an exponent
 * (the schema parser takes "1" as an int). */
static void float_text(double v, char *buf, size_t cap)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, cap, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (!strpbrk(buf, ".eEn"))
		snprintf(buf + strlen(buf), cap - strlen(buf), ".0");
}

static int scalar_is_float(const struct spec_scalar *sc)
{
	return sc->dtype != KF_DT_I32 && sc->dtype != KF_DT_I64;
}

static void scalar_default(const struct spec_scalar *sc, char *buf, size_t cap)
{
	if (scalar_is_float(sc))
		float_text(sc->value, buf, cap);
	else
		snprintf(buf, cap, "%lld", (long long)sc->ivalue);
}

static void shape_text(const struct spec_tensor *T, char *buf, size_t cap)
{
	size_t n = (size_t)snprintf(buf, cap, "[");
	for (size_t d = 0; d < T->rank && n < cap; d++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%s", d ? ", " : "",
				      expr_text(T->shape[d]));
	if (n < cap)
		snprintf(buf + n, cap - n, "]");
}

/* The expressions e[0..n) as "e0, e1, ..." (python: in Python), then "1"
 * for each missing entry up to pad: grids, blocks and shapes. */
static void emit_exprs(struct torchop_sb *b, const struct spec *s, struct expr *const *e, size_t n,
		       size_t pad, int python)
{
	for (size_t d = 0; d < n || d < pad; d++) {
		torchop_sb_printf(b, "%s", d ? ", " : "");
		if (d < n)
			torchop_sb_expr(b, s, expr_text(e[d]), python);
		else
			torchop_sb_printf(b, "1");
	}
}

/* ---- the schema ---------------------------------------------------------- */

static void emit_schema(struct torchop_sb *b, const struct spec *s, const struct sig *g,
			const char *name)
{
	char alias = 'a', def[64];
	torchop_sb_printf(b, "%s(", name);
	const char *sep = "";
	for (size_t a = 0; a < g->args_len; a++, sep = ", ") {
		const struct spec_tensor *T = &s->tensors[g->args[a]];
		if (T->role == SPEC_ROLE_INOUT)
			torchop_sb_printf(b, "%sTensor(%c!) %s", sep, alias++, T->name);
		else
			torchop_sb_printf(b, "%sTensor %s", sep, T->name);
	}
	for (size_t k = 0; k < s->vars_len; k++, sep = ", ")
		if (g->src_t[k] < 0)
			torchop_sb_printf(b, "%sint %s", sep, s->vars[k]);
	for (size_t k = 0; k < s->scalars_len; k++, sep = ", ") {
		scalar_default(&s->scalars[k], def, sizeof def);
		torchop_sb_printf(b, "%s%s %s=%s", sep,
				  scalar_is_float(&s->scalars[k]) ? "float" : "int",
				  s->scalars[k].name, def);
	}
	torchop_sb_printf(b, ") -> ");
	if (g->outs_len == 1) {
		torchop_sb_printf(b, "Tensor");
		return;
	}
	torchop_sb_printf(b, "(");
	for (size_t o = 0; o < g->outs_len; o++)
		torchop_sb_printf(b, "%sTensor", o ? ", " : "");
	torchop_sb_printf(b, ")");
}

/* ---- the kernel file: source + launcher --------------------------------- */

/* The spec's expression functions (ceil_div, min, max) over int64, for the
 * launcher and the binding alike. */
#define EXPR_FUNCS_CXX                                                                                    \
	"[[maybe_unused]] inline int64_t kf_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }\n" \
	"[[maybe_unused]] inline int64_t kf_min(int64_t a) { return a; }\n"                               \
	"[[maybe_unused]] inline int64_t kf_max(int64_t a) { return a; }\n"                               \
	"template <typename... R> [[maybe_unused]] int64_t kf_min(int64_t a, int64_t b, R... r)\n"        \
	"{ return kf_min(a < b ? a : b, static_cast<int64_t>(r)...); }\n"                                 \
	"template <typename... R> [[maybe_unused]] int64_t kf_max(int64_t a, int64_t b, R... r)\n"        \
	"{ return kf_max(a > b ? a : b, static_cast<int64_t>(r)...); }\n"

static const char CU_HELPERS[] =
	"namespace {\n"
	"/* The spec's expression functions, over int64. */\n" EXPR_FUNCS_CXX
	"[[maybe_unused]] inline uint16_t kf_f16_bits(double v)\n"
	"{ __half h = __float2half(static_cast<float>(v)); uint16_t u; memcpy(&u, &h, 2); "
	"return u; }\n"
	"[[maybe_unused]] inline uint16_t kf_bf16_bits(double v)\n"
	"{ __nv_bfloat16 h = __float2bfloat16(static_cast<float>(v)); uint16_t u; "
	"memcpy(&u, &h, 2); return u; }\n"
	"} // namespace\n\n";

static const char *arg_ctype(enum kf_dtype dt)
{
	switch (dt) {
	case KF_DT_F32: return "float";
	case KF_DT_F64: return "double";
	case KF_DT_I32: return "int32_t";
	case KF_DT_I64: return "int64_t";
	default: return "uint16_t";
	}
}

/* One launch of the list, as a block that returns a message on failure. */
static void emit_launch(struct torchop_sb *b, const struct spec *s, size_t i)
{
	const struct spec_launch *l = &s->launch[i];
	torchop_sb_printf(b, "\t/* launch[%zu]: %s */\n", i, l->kernel);
	if (l->when) {
		torchop_sb_printf(b, "\tif (");
		torchop_sb_expr(b, s, expr_text(l->when), 0);
		torchop_sb_printf(b, ")\n");
	}
	torchop_sb_printf(b, "\tdo {\n\t\tconst int64_t g[3] = {");
	emit_exprs(b, s, l->grid, l->grid_len, 3, 0);
	torchop_sb_printf(b, "};\n\t\tconst int64_t bl[3] = {");
	emit_exprs(b, s, l->block, l->block_len, 3, 0);
	torchop_sb_printf(b, "};\n\t\tconst int64_t sh = ");
	torchop_sb_expr(b, s, expr_text(l->shared_bytes), 0);
	torchop_sb_printf(
		b,
		";\n"
		"\t\tif (g[0] == 0 || g[1] == 0 || g[2] == 0)\n"
		"\t\t\tbreak; /* an empty tensor: nothing to compute */\n"
		"\t\tif (g[0] < 0 || g[0] > 2147483647 || g[1] < 0 || g[1] > 65535 || g[2] < 0 "
		"||\n\t\t    g[2] > 65535 || bl[0] < 1 || bl[1] < 1 || bl[2] < 1 ||\n"
		"\t\t    bl[0] * bl[1] * bl[2] > 1024 || sh < 0)\n"
		"\t\t\treturn kf_fail(\"%s: grid (%%lld, %%lld, %%lld), block (%%lld, %%lld, "
		"%%lld), shared %%lld bytes are out of range at these sizes\",\n"
		"\t\t\t\t       (long long)g[0], (long long)g[1], (long long)g[2], "
		"(long long)bl[0],\n"
		"\t\t\t\t       (long long)bl[1], (long long)bl[2], (long long)sh);\n",
		l->kernel);
	for (size_t a = 0; a < l->args_len; a++) {
		const struct spec_arg *arg = &l->args[a];
		if (arg->kind == SPEC_ARG_TENSOR) {
			torchop_sb_printf(b, "\t\tvoid *a%zu = ptrs[%zu];\n", a, arg->index);
		} else if (arg->kind == SPEC_ARG_SCALAR) {
			enum kf_dtype dt = s->scalars[arg->index].dtype;
			const char *conv = dt == KF_DT_F16    ? "kf_f16_bits"
					   : dt == KF_DT_BF16 ? "kf_bf16_bits"
							      : "";
			torchop_sb_printf(b, "\t\t%s a%zu = static_cast<%s>(%s(scalars[%zu]));\n",
					  arg_ctype(dt), a, arg_ctype(dt), conv, arg->index);
		} else {
			int wide = arg->dtype == KF_DT_I64;
			torchop_sb_printf(b, "\t\tconst int64_t w%zu = ", a);
			torchop_sb_expr(b, s, expr_text(arg->expr), 0);
			torchop_sb_printf(b, ";\n");
			if (!wide)
				torchop_sb_printf(
					b,
					"\t\tif (w%zu < -2147483648LL || w%zu > 2147483647LL)\n"
					"\t\t\treturn kf_fail(\"%s: argument %zu (%s = %%lld) "
					"does not fit in int32\", (long long)w%zu);\n",
					a, a, l->kernel, a, expr_text(arg->expr), a);
			torchop_sb_printf(b, "\t\t%s a%zu = static_cast<%s>(w%zu);\n",
					  wide ? "int64_t" : "int32_t", a,
					  wide ? "int64_t" : "int32_t", a);
		}
	}
	torchop_sb_printf(b, "\t\tvoid *args[] = {");
	for (size_t a = 0; a < l->args_len; a++)
		torchop_sb_printf(b, "%s&a%zu", a ? ", " : "", a);
	if (!l->args_len)
		torchop_sb_printf(b, "nullptr");
	torchop_sb_printf(
		b,
		"};\n"
		"\t\tcudaError_t e = cudaSuccess;\n"
		"\t\tif (sh > 48 * 1024)\n"
		"\t\t\te = cudaFuncSetAttribute(reinterpret_cast<const void *>(%s),\n"
		"\t\t\t\t\t\t cudaFuncAttributeMaxDynamicSharedMemorySize, "
		"static_cast<int>(sh));\n"
		"\t\tif (e == cudaSuccess)\n"
		"\t\t\te = cudaLaunchKernel(reinterpret_cast<const void *>(%s),\n"
		"\t\t\t\t\t     dim3((unsigned)g[0], (unsigned)g[1], (unsigned)g[2]),\n"
		"\t\t\t\t\t     dim3((unsigned)bl[0], (unsigned)bl[1], (unsigned)bl[2]),\n"
		"\t\t\t\t\t     %s, static_cast<size_t>(sh), stream);\n"
		"\t\tif (e != cudaSuccess)\n"
		"\t\t\treturn kf_fail(\"launching %s failed: %%s\", cudaGetErrorString(e));\n"
		"\t} while (0);\n",
		l->kernel, l->kernel, l->args_len ? "args" : "nullptr", l->kernel);
}

static void emit_kernel_cu(struct torchop_sb *b, const struct spec *s, const char *name,
			   struct torchop_gen *g)
{
	torchop_sb_printf(b,
			  "// %s: the kernel source kforge checked, unchanged, then the "
			  "spec's launch list\n// as the host launcher the torch binding "
			  "calls. Generated by kforge.\n"
			  "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n"
			  "#include <cuda_bf16.h>\n#include <stdarg.h>\n#include <stdint.h>\n"
			  "#include <stdio.h>\n"
			  "#include <string.h>\n\n// ---- the kernel source ----\n",
			  name);
	size_t line = 1;
	for (const char *p = b->p; p && *p; p++)
		line += *p == '\n';
	g->source_first_line = line;
	g->source_lines = 0;
	for (const char *p = s->source; *p; p++)
		g->source_lines += *p == '\n';
	if (s->source[0] && s->source[strlen(s->source) - 1] != '\n')
		g->source_lines++;
	torchop_sb_printf(b, "%s%s", s->source,
			  s->source[0] && s->source[strlen(s->source) - 1] != '\n' ? "\n" : "");
	torchop_sb_printf(b, "// ---- the launcher ----\n%s", CU_HELPERS);
	torchop_sb_printf(b,
			  "namespace {\nthread_local char kf_msg[512];\n"
			  "__attribute__((format(printf, 1, 2))) const char *kf_fail(const char "
			  "*fmt, ...)\n{\n\tva_list ap;\n\tva_start(ap, fmt);\n"
			  "\tvsnprintf(kf_msg, sizeof kf_msg, fmt, ap);\n\tva_end(ap);\n"
			  "\treturn kf_msg;\n}\n} // namespace\n\n"
			  "/* ptrs: every tensor of the spec in its order; sizes: the size "
			  "variables;\n * scalars: the scalars as double. Returns NULL or "
			  "what failed. */\n"
			  "extern \"C\" __attribute__((visibility(\"hidden\"))) const char *\n"
			  "kforge_launch_%s(void *const *ptrs, const int64_t *sizes, const double "
			  "*scalars, void *stream_)\n{\n"
			  "\tcudaStream_t stream = static_cast<cudaStream_t>(stream_);\n"
			  "\t(void)ptrs; (void)sizes; (void)scalars;\n",
			  name);
	for (size_t k = 0; k < s->vars_len; k++)
		torchop_sb_printf(b, "\tconst int64_t v_%s = sizes[%zu];\n\t(void)v_%s;\n",
				  s->vars[k], k, s->vars[k]);
	for (size_t i = 0; i < s->launch_len; i++)
		emit_launch(b, s, i);
	torchop_sb_printf(b, "\treturn nullptr;\n}\n");
}

/* ---- the binding -------------------------------------------------------- */

static void emit_checks(struct torchop_sb *b, const struct spec *s, const struct sig *g,
			const char *name)
{
	char shp[256];
	for (size_t a = 0; a < g->args_len; a++) {
		const struct spec_tensor *T = &s->tensors[g->args[a]];
		shape_text(T, shp, sizeof shp);
		torchop_sb_printf(b, "\tkf_check_tensor(%s, \"%s\", %s, %zu, \"%s\", dev);\n",
				  T->name, T->name, at_type(T->dtype), T->rank, shp);
	}
	for (size_t k = 0; k < s->vars_len; k++) {
		if (g->src_t[k] >= 0)
			torchop_sb_printf(b, "\tconst int64_t v_%s = %s.size(%d);\n", s->vars[k],
					  s->tensors[g->src_t[k]].name, g->src_d[k]);
		else
			torchop_sb_printf(b,
					  "\tconst int64_t v_%s = %s_;\n"
					  "\tTORCH_CHECK(v_%s >= 0, \"%s: %s must be >= 0, got \", "
					  "v_%s);\n",
					  s->vars[k], s->vars[k], s->vars[k], name, s->vars[k],
					  s->vars[k]);
	}
	for (size_t a = 0; a < g->args_len; a++) {
		const struct spec_tensor *T = &s->tensors[g->args[a]];
		shape_text(T, shp, sizeof shp);
		for (size_t d = 0; d < T->rank; d++) {
			size_t k;
			for (k = 0; k < s->vars_len; k++)
				if (g->src_t[k] == (int)g->args[a] && g->src_d[k] == (int)d)
					break;
			if (k < s->vars_len)
				continue;
			torchop_sb_printf(b, "\tTORCH_CHECK(%s.size(%zu) == (", T->name, d);
			torchop_sb_expr(b, s, expr_text(T->shape[d]), 0);
			torchop_sb_printf(b, "), \"%s: %s.shape[%zu] must be %s = \", (", name,
					  T->name, d, expr_text(T->shape[d]));
			torchop_sb_expr(b, s, expr_text(T->shape[d]), 0);
			torchop_sb_printf(b, "), \" (%s is %s), got \", %s.sizes());\n", T->name,
					  shp, T->name);
		}
	}
	for (size_t c = 0; c < s->constraints_len; c++) {
		const char *t = expr_text(s->constraints[c]);
		torchop_sb_printf(b, "\tTORCH_CHECK(");
		torchop_sb_expr(b, s, t, 0);
		torchop_sb_printf(b, ", \"%s: the kernel requires '%s', which fails for", name, t);
		for (size_t k = 0; k < s->vars_len; k++)
			torchop_sb_printf(b, " %s=\", v_%s, \"", s->vars[k], s->vars[k]);
		torchop_sb_printf(b, "\");\n");
	}
}

static const char CPP_HELPERS[] =
	"namespace {\n" EXPR_FUNCS_CXX "\n"
	"/* The op takes exactly what the kernel was checked with: no silent copy\n"
	" * or cast, so a wrong tensor is an error that says how to fix it. */\n"
	"void kf_check_tensor(const at::Tensor &t, const char *name, at::ScalarType dt, int64_t "
	"rank,\n\t\t     const char *shape, const c10::Device &dev)\n{\n"
	"\tTORCH_CHECK(t.is_cuda(), OPNAME \": \", name, \" must be a CUDA tensor, got one on "
	"\", t.device());\n"
	"\tTORCH_CHECK(t.device() == dev, OPNAME \": \", name, \" is on \", t.device(), \" but "
	"the first tensor is on \", dev);\n"
	"\tTORCH_CHECK(t.scalar_type() == dt, OPNAME \": \", name, \" must be \", dt, \", got "
	"\", t.scalar_type(),\n\t\t    \" (convert with .to(\", dt, \"))\");\n"
	"\tTORCH_CHECK(t.dim() == rank, OPNAME \": \", name, \" must have \", rank, \" "
	"dimensions \", shape, \", got shape \", t.sizes());\n"
	"\tTORCH_CHECK(t.is_contiguous(), OPNAME \": \", name, \" must be contiguous "
	"(row-major), got strides \", t.strides(),\n\t\t    \"; call .contiguous() "
	"first\");\n"
	"}\n} // namespace\n\n";

static void emit_binding_fn(struct torchop_sb *b, const struct spec *s, const struct sig *g,
			    const char *name)
{
	const char *ret = g->outs_len == 1 ? "at::Tensor" : g->outs_len == 0 ? "void" : NULL;
	if (ret)
		torchop_sb_printf(b, "%s kf_op_%s(", ret, name);
	else {
		torchop_sb_printf(b, "std::tuple<");
		for (size_t o = 0; o < g->outs_len; o++)
			torchop_sb_printf(b, "%sat::Tensor", o ? ", " : "");
		torchop_sb_printf(b, "> kf_op_%s(", name);
	}
	const char *sep = "";
	for (size_t a = 0; a < g->args_len; a++, sep = ", ")
		torchop_sb_printf(b, "%sconst at::Tensor &%s", sep, s->tensors[g->args[a]].name);
	for (size_t k = 0; k < s->vars_len; k++, sep = ", ")
		if (g->src_t[k] < 0)
			torchop_sb_printf(b, "%sint64_t %s_", sep, s->vars[k]);
	for (size_t k = 0; k < s->scalars_len; k++, sep = ", ")
		torchop_sb_printf(b, "%s%s %s", sep,
				  scalar_is_float(&s->scalars[k]) ? "double" : "int64_t",
				  s->scalars[k].name);
	torchop_sb_printf(b, ")\n{\n");
	if (g->args_len)
		torchop_sb_printf(b, "\tconst c10::Device dev = %s.device();\n",
				  s->tensors[g->args[0]].name);
	else
		torchop_sb_printf(b, "\tconst c10::Device dev(c10::DeviceType::CUDA, "
				     "c10::cuda::current_device());\n");
	emit_checks(b, s, g, name);
	torchop_sb_printf(b, "\tconst c10::cuda::OptionalCUDAGuard guard(dev);\n");
	for (size_t o = 0; o < g->outs_len; o++) {
		const struct spec_tensor *T = &s->tensors[g->outs[o]];
		/* at::IntArrayRef spelled out: a bare {} would be ambiguous for
		 * a rank-0 output */
		torchop_sb_printf(b, "\tat::Tensor %s = at::empty(at::IntArrayRef{", T->name);
		emit_exprs(b, s, T->shape, T->rank, 0, 0);
		torchop_sb_printf(b, "}, at::TensorOptions().dtype(%s).device(dev));\n",
				  at_type(T->dtype));
	}
	torchop_sb_printf(b, "\tvoid *const ptrs[] = {");
	for (size_t t = 0; t < s->tensors_len; t++)
		torchop_sb_printf(b, "%s%s.data_ptr()", t ? ", " : "", s->tensors[t].name);
	torchop_sb_printf(b, "};\n\tconst int64_t sizes[] = {");
	for (size_t k = 0; k < s->vars_len; k++)
		torchop_sb_printf(b, "%sv_%s", k ? ", " : "", s->vars[k]);
	torchop_sb_printf(b, "%s};\n\tconst double scalars[] = {", s->vars_len ? "" : "0");
	for (size_t k = 0; k < s->scalars_len; k++)
		torchop_sb_printf(b, "%sstatic_cast<double>(%s)", k ? ", " : "",
				  s->scalars[k].name);
	torchop_sb_printf(b,
			  "%s};\n"
			  "\tconst char *failed = kforge_launch_%s(ptrs, sizes, scalars,\n"
			  "\t\t\t\t\t\tc10::cuda::getCurrentCUDAStream().stream());\n"
			  "\tTORCH_CHECK(failed == nullptr, OPNAME \": \", failed);\n",
			  s->scalars_len ? "" : "0", name);
	if (g->outs_len == 1)
		torchop_sb_printf(b, "\treturn %s;\n", s->tensors[g->outs[0]].name);
	else if (g->outs_len > 1) {
		torchop_sb_printf(b, "\treturn {");
		for (size_t o = 0; o < g->outs_len; o++)
			torchop_sb_printf(b, "%s%s", o ? ", " : "", s->tensors[g->outs[o]].name);
		torchop_sb_printf(b, "};\n");
	}
	torchop_sb_printf(b, "}\n\n");
}

static void emit_binding(struct torchop_sb *b, const struct spec *s, const struct sig *g,
			 const char *name, const char *ns, const char *schema,
			 enum torchop_flavor flavor)
{
	torchop_sb_printf(b,
			  "// The torch binding of %s: argument checks, output allocation, the "
			  "launch on\n// the current CUDA stream, registration with the "
			  "dispatcher. Generated by kforge.\n"
			  "#include <torch/library.h>\n#include <ATen/core/Tensor.h>\n"
			  "#include <ATen/ops/empty.h>\n#include <c10/cuda/CUDAGuard.h>\n"
			  "#include <c10/cuda/CUDAStream.h>\n#include <tuple>\n%s\n"
			  "#define OPNAME \"%s\"\n\n"
			  "extern \"C\" const char *kforge_launch_%s(void *const *ptrs, const "
			  "int64_t *sizes,\n\t\t\t\t\tconst double *scalars, void *stream);\n\n",
			  name,
			  flavor == TORCHOP_KERNEL_BUILDER ? "\n#include \"registration.h\"" : "",
			  name, name);
	torchop_sb_printf(b, "%s", CPP_HELPERS);
	emit_binding_fn(b, s, g, name);
	if (flavor == TORCHOP_KERNEL_BUILDER)
		torchop_sb_printf(b,
				  "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops)\n{\n"
				  "\tops.def(\"%s\");\n"
				  "\tops.impl(\"%s\", c10::DeviceType::CUDA, &kf_op_%s);\n}\n\n"
				  "REGISTER_EXTENSION(TORCH_EXTENSION_NAME)\n",
				  schema, name, name);
	else
		torchop_sb_printf(b,
				  "TORCH_LIBRARY(%s, m)\n{\n\tm.def(\"%s\");\n"
				  "\tm.impl(\"%s\", c10::DeviceType::CUDA, &kf_op_%s);\n}\n",
				  ns, schema, name, name);
}

/* ---- the Python package --------------------------------------------------- */

static const char PY_HELPERS[] =
	"\n\ndef _kf_ceil_div(a, b):\n    return (a + b - 1) // b\n\n\n"
	"def _kf_min(*a):\n    r = a[0]\n    for v in a[1:]:\n        r = torch.sym_min(r, v)\n"
	"    return r\n\n\n"
	"def _kf_max(*a):\n    r = a[0]\n    for v in a[1:]:\n        r = torch.sym_max(r, v)\n"
	"    return r\n";

/* The Python function's parameters (defaults: the scalars' "=value"), or
 * without defaults the arguments that pass them on. */
static void emit_py_params(struct torchop_sb *b, const struct spec *s, const struct sig *g,
			   int defaults)
{
	char def[64];
	const char *sep = "";
	for (size_t a = 0; a < g->args_len; a++, sep = ", ")
		torchop_sb_printf(b, "%s%s", sep, s->tensors[g->args[a]].name);
	for (size_t k = 0; k < s->vars_len; k++, sep = ", ")
		if (g->src_t[k] < 0)
			torchop_sb_printf(b, "%s%s", sep, s->vars[k]);
	for (size_t k = 0; k < s->scalars_len; k++, sep = ", ") {
		torchop_sb_printf(b, "%s%s", sep, s->scalars[k].name);
		if (defaults) {
			scalar_default(&s->scalars[k], def, sizeof def);
			torchop_sb_printf(b, "=%s", def);
		}
	}
}

/* The fake (meta) implementation: output shapes from the spec's
 * expressions over the input shapes (symbolic under torch.compile). */
static void emit_fake(struct torchop_sb *b, const struct spec *s, const struct sig *g)
{
	torchop_sb_printf(b, "\n\n@torch.library.register_fake(QUALNAME)\ndef _fake(");
	emit_py_params(b, s, g, 1);
	torchop_sb_printf(b, "):\n");
	for (size_t k = 0; k < s->vars_len; k++) {
		if (g->src_t[k] >= 0)
			torchop_sb_printf(b, "    v_%s = %s.shape[%d]\n", s->vars[k],
					  s->tensors[g->src_t[k]].name, g->src_d[k]);
		else
			torchop_sb_printf(b, "    v_%s = %s\n", s->vars[k], s->vars[k]);
	}
	if (g->args_len)
		torchop_sb_printf(b, "    dev = %s.device\n", s->tensors[g->args[0]].name);
	else
		torchop_sb_printf(b, "    dev = torch.device(\"cuda\")\n");
	if (!g->outs_len) {
		torchop_sb_printf(b, "    return None\n");
		return;
	}
	torchop_sb_printf(b, "    return (");
	for (size_t o = 0; o < g->outs_len; o++) {
		const struct spec_tensor *T = &s->tensors[g->outs[o]];
		torchop_sb_printf(b, "%storch.empty((", o ? ", " : "");
		emit_exprs(b, s, T->shape, T->rank, 0, 1);
		torchop_sb_printf(b, "%s), dtype=%s, device=dev)", T->rank == 1 ? "," : "",
				  py_type(T->dtype));
	}
	/* one output: the parentheses only group; several: a tuple */
	torchop_sb_printf(b, "%s)\n", g->outs_len == 1 ? "" : ",");
}

static void emit_init_py(struct torchop_sb *b, const struct spec *s, const struct sig *g,
			 const char *name, const char *ns, const char *schema,
			 enum torchop_flavor flavor)
{
	torchop_sb_printf(b,
			  "\"\"\"%s: a CUDA kernel kforge checked, as a PyTorch op.\n\n"
			  "Schema: %s\n\n"
			  "The op takes contiguous CUDA tensors of the spec's dtypes and raises "
			  "a clear\nerror otherwise; it launches on the current CUDA stream. The "
			  "fake\nimplementation below lets torch.compile trace it without a graph "
			  "break.\nGenerated by kforge.\n\"\"\"\n",
			  name, schema);
	if (flavor == TORCHOP_KERNEL_BUILDER)
		torchop_sb_printf(
			b,
			"import torch\n\ntry:\n"
			"    from ._ops import add_op_namespace_prefix, ops\n"
			"except ImportError:  # built with setup.py, not kernel-builder\n"
			"    from ._setuptools_ops import add_op_namespace_prefix, ops\n\n"
			"op = ops.%s\nQUALNAME = add_op_namespace_prefix(\"%s\")\n",
			name, name);
	else
		torchop_sb_printf(b,
				  "import os\n\nimport torch\n\n"
				  "torch.ops.load_library(os.path.join(os.path.dirname(os.path."
				  "abspath(__file__)), \"op.so\"))\n"
				  "op = torch.ops.%s.%s\nQUALNAME = \"%s::%s\"\n",
				  ns, name, ns, name);
	torchop_sb_printf(b, "%s", PY_HELPERS);
	emit_fake(b, s, g);
	torchop_sb_printf(b, "\n\ndef %s(", name);
	emit_py_params(b, s, g, 1);
	torchop_sb_printf(b, "):\n    \"\"\"%s\"\"\"\n    return op(", schema);
	emit_py_params(b, s, g, 0);
	torchop_sb_printf(b, ")\n\n\n__all__ = [\"%s\", \"op\", \"QUALNAME\"]\n", name);
}

static json_t *call_json(const struct spec *s, const struct sig *g)
{
	json_t *args = json_array(), *outs = json_array(), *mut = json_array();
	for (size_t a = 0; a < g->args_len; a++) {
		const struct spec_tensor *T = &s->tensors[g->args[a]];
		json_array_append_new(args,
				      json_pack("{s:s, s:s}", "kind", "tensor", "name", T->name));
		if (T->role == SPEC_ROLE_INOUT)
			json_array_append_new(mut, json_string(T->name));
	}
	for (size_t k = 0; k < s->vars_len; k++)
		if (g->src_t[k] < 0)
			json_array_append_new(
				args, json_pack("{s:s, s:s}", "kind", "int", "name", s->vars[k]));
	for (size_t k = 0; k < s->scalars_len; k++) {
		const struct spec_scalar *sc = &s->scalars[k];
		json_array_append_new(args,
				      json_pack("{s:s, s:s, s:o}", "kind", "scalar", "name",
						sc->name, "value",
						scalar_is_float(sc) ? json_real(sc->value)
								    : json_integer(sc->ivalue)));
	}
	for (size_t o = 0; o < g->outs_len; o++)
		json_array_append_new(outs, json_string(s->tensors[g->outs[o]].name));
	return json_pack("{s:o, s:o, s:o}", "args", args, "outputs", outs, "mutated", mut);
}

/* ---- entry points --------------------------------------------------------- */

/* Names the generated C++ and Python use as identifiers: a keyword of
 * either language cannot be a parameter name. */
static int reserved(const char *n)
{
	static const char *const kw[] = {
		"and",	    "as",	"assert",   "async",	"await",     "break",	"class",
		"continue", "def",	"del",	    "elif",	"else",	     "except",	"finally",
		"for",	    "from",	"global",   "if",	"import",    "in",	"is",
		"lambda",   "nonlocal", "not",	    "or",	"pass",	     "raise",	"return",
		"try",	    "while",	"with",	    "yield",	"None",	     "True",	"False",
		"auto",	    "bool",	"case",	    "char",	"const",     "default", "delete",
		"do",	    "double",	"enum",	    "explicit", "extern",    "float",	"friend",
		"goto",	    "inline",	"int",	    "long",	"namespace", "new",	"operator",
		"private",  "public",	"register", "short",	"signed",    "sizeof",	"static",
		"struct",   "switch",	"template", "this",	"throw",     "typedef", "union",
		"unsigned", "using",	"virtual",  "void",	"volatile",  "dev",	"guard",
		"ptrs",	    "sizes",	"scalars",  "failed",	"op",	     "torch",	"self"};
	for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
		if (strcmp(kw[i], n) == 0)
			return 1;
	return 0;
}

static int check_names(const struct spec *s, const struct sig *g, struct kf_err *err)
{
	/* spec_parse guarantees an output or inout tensor: the op returns or
	 * mutates something. */
	for (size_t t = 0; t < s->tensors_len; t++)
		if (reserved(s->tensors[t].name))
			return kf_err_set(err, KF_EINVAL,
					  "tensors.%s: '%s' is a C++ or Python keyword (or a name "
					  "the generated code uses); rename the tensor",
					  s->tensors[t].name, s->tensors[t].name);
	for (size_t k = 0; k < s->scalars_len; k++)
		if (reserved(s->scalars[k].name))
			return kf_err_set(err, KF_EINVAL,
					  "scalars.%s: '%s' is a C++ or Python keyword (or a name "
					  "the generated code uses); rename the scalar",
					  s->scalars[k].name, s->scalars[k].name);
	for (size_t k = 0; k < s->vars_len; k++)
		if (g->src_t[k] < 0 && reserved(s->vars[k]))
			return kf_err_set(err, KF_EINVAL,
					  "sizes: '%s' is a C++ or Python keyword and would be an "
					  "argument of the op; rename it",
					  s->vars[k]);
	return 0;
}

int torchop_generate(const struct spec *s, const char *name, const char *ns,
		     enum torchop_flavor flavor, struct torchop_gen *g, struct kf_err *err)
{
	memset(g, 0, sizeof *g);
	struct sig sg;
	struct torchop_sb b = {0};
	if (!s->launch_len || !s->source)
		return kf_err_set(err, KF_EINVAL, "launch: the spec has no kernel to launch");
	if (!name)
		name = s->launch[0].kernel;
	if (!is_ident(name) || strlen(name) > TORCHOP_NAME_MAX)
		return kf_err_set(err, KF_EINVAL,
				  "name: '%s' is not an identifier of at most %d characters "
				  "(letters, digits, _)",
				  name, TORCHOP_NAME_MAX);
	if (flavor == TORCHOP_STANDALONE && (!ns || !is_ident(ns) || strlen(ns) >= sizeof g->ns))
		return kf_err_set(err, KF_EINVAL, "namespace: '%s' is not an identifier",
				  ns ? ns : "(null)");
	derive(s, &sg);
	int rc = check_names(s, &sg, err);
	if (rc)
		return rc;
	snprintf(g->name, sizeof g->name, "%s", name);
	snprintf(g->ns, sizeof g->ns, "%s", flavor == TORCHOP_STANDALONE ? ns : "");
	emit_schema(&b, s, &sg, name);
	g->schema = torchop_sb_take(&b);
	if (!g->schema)
		goto toobig;
	emit_kernel_cu(&b, s, name, g);
	g->kernel_cu = torchop_sb_take(&b);
	emit_binding(&b, s, &sg, name, ns, g->schema, flavor);
	g->binding_cpp = torchop_sb_take(&b);
	emit_init_py(&b, s, &sg, name, ns, g->schema, flavor);
	g->init_py = torchop_sb_take(&b);
	if (!g->kernel_cu || !g->binding_cpp || !g->init_py)
		goto toobig;
	g->call = call_json(s, &sg);
	return 0;
toobig:
	torchop_gen_fini(g);
	return kf_err_set(err, KF_ETOOBIG, "the generated sources exceed %u bytes",
			  TORCHOP_GEN_MAX);
}

void torchop_gen_fini(struct torchop_gen *g)
{
	if (!g)
		return;
	free(g->kernel_cu);
	free(g->binding_cpp);
	free(g->init_py);
	free(g->schema);
	json_decref(g->call);
	memset(g, 0, sizeof *g);
}

size_t torchop_source_line(const struct torchop_gen *g, size_t line)
{
	if (line < g->source_first_line || line >= g->source_first_line + g->source_lines)
		return 0;
	return line - g->source_first_line + 1;
}

/* ---- the string builder and expressions ------------------------------------ */

void torchop_sb_printf(struct torchop_sb *b, const char *fmt, ...)
{
	if (b->over)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		size_t room = b->cap - b->len;
		int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->over = 1;
			return;
		}
		if (b->p && (size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t need = b->len + (size_t)n + 1;
		if (need > TORCHOP_GEN_MAX) {
			b->over = 1;
			return;
		}
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < need)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->over = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
		b->p[b->len] = '\0';
	}
}

char *torchop_sb_take(struct torchop_sb *b)
{
	char *p = b->over ? NULL : b->p;
	if (b->over)
		free(b->p);
	if (p == NULL && !b->over)
		p = strdup("");
	memset(b, 0, sizeof *b);
	return p;
}

void torchop_sb_expr(struct torchop_sb *b, const struct spec *s, const char *t, int python)
{
	torchop_sb_printf(b, "(");
	while (*t) {
		if (isalpha((unsigned char)*t) || *t == '_') {
			const char *e = t;
			while (isalnum((unsigned char)*e) || *e == '_')
				e++;
			int n = (int)(e - t);
			char id[EXPR_MAX_NAME + 1];
			snprintf(id, sizeof id, "%.*s", n, t);
			if (!strcmp(id, "ceil_div") || !strcmp(id, "min") || !strcmp(id, "max"))
				torchop_sb_printf(b, "%skf_%s", python ? "_" : "", id);
			else if (spec_var_index(s, id) >= 0)
				torchop_sb_printf(b, "v_%s", id);
			else
				torchop_sb_printf(b, "%s", id);
			t = e;
		} else if (python && t[0] == '&' && t[1] == '&') {
			torchop_sb_printf(b, " and ");
			t += 2;
		} else if (python && t[0] == '|' && t[1] == '|') {
			torchop_sb_printf(b, " or ");
			t += 2;
		} else if (python && t[0] == '!' && t[1] != '=') {
			torchop_sb_printf(b, " not ");
			t++;
		} else if (python && t[0] == '/') {
			torchop_sb_printf(b, "//");
			t++;
		} else if (isdigit((unsigned char)*t)) {
			const char *e = t;
			while (isalnum((unsigned char)*e))
				e++;
			torchop_sb_printf(b, "%.*s%s", (int)(e - t), t, python ? "" : "LL");
			t = e;
		} else {
			torchop_sb_printf(b, "%c", *t);
			t++;
		}
	}
	torchop_sb_printf(b, ")");
}
