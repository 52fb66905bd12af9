/* sass: counts instruction families in a `cuobjdump -sass` listing. A line
 * is an instruction when it starts (after blanks) with an address comment
 * like slash-star 0a30 star-slash; an optional predicate (@P0, @!UP1)
 * precedes the opcode, whose dot-separated modifiers give the access width
 * (LDG.E.128 = 128-bit). Hints are plain rules over the counts. */
#include "sandbox/compile/sass.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static int has_mod(const char *mods, const char *m)
{
	size_t n = strlen(m);
	for (const char *p = mods; (p = strstr(p, m)); p += n)
		if (p[-1] == '.' && (p[n] == '.' || p[n] == 0))
			return 1;
	return 0;
}

/* Width bucket: 0 = 8/16-bit, 1 = 32, 2 = 64, 3 = 128, 4 = other. */
static int width_bucket(const char *op)
{
	const char *mods = strchr(op, '.');
	if (!mods)
		return 1;
	if (has_mod(mods, "128"))
		return 3;
	if (has_mod(mods, "64"))
		return 2;
	if (has_mod(mods, "U8") || has_mod(mods, "S8") || has_mod(mods, "U16") ||
	    has_mod(mods, "S16"))
		return 0;
	if (has_mod(mods, "256"))
		return 4;
	return 1;
}

static int base_is(const char *op, const char *base)
{
	size_t n = strlen(base);
	return !strncmp(op, base, n) && (op[n] == '.' || op[n] == 0);
}

static void count(struct sass_kernel *k, const char *op)
{
	k->instructions++;
	if (base_is(op, "LDG"))
		k->ldg[width_bucket(op)]++;
	else if (base_is(op, "STG"))
		k->stg[width_bucket(op)]++;
	else if (base_is(op, "LDS"))
		k->lds++;
	else if (base_is(op, "STS"))
		k->sts++;
	else if (base_is(op, "LDSM"))
		k->ldsm++;
	else if (base_is(op, "LDGSTS"))
		k->ldgsts++;
	else if (base_is(op, "UTMALDG") || base_is(op, "UTMASTG") || base_is(op, "UBLKCP") ||
		 base_is(op, "UTMAPF"))
		k->tma++;
	else if (base_is(op, "HMMA"))
		k->hmma++;
	else if (base_is(op, "HGMMA"))
		k->hgmma++;
	else if (base_is(op, "QGMMA"))
		k->qgmma++;
	else if (base_is(op, "IMMA") || base_is(op, "IGMMA"))
		k->imma++;
	else if (base_is(op, "DMMA"))
		k->dmma++;
	else if (!strncmp(op, "UTC", 3) && strstr(op, "MMA"))
		k->utcmma++;
	else if (base_is(op, "FFMA"))
		k->ffma++;
	else if (base_is(op, "FMUL"))
		k->fmul++;
	else if (base_is(op, "FADD"))
		k->fadd++;
	else if (base_is(op, "LDL"))
		k->ldl++;
	else if (base_is(op, "STL"))
		k->stl++;
	else if (base_is(op, "BAR"))
		k->bar++;
	else if (base_is(op, "ATOM") || base_is(op, "ATOMG") || base_is(op, "RED") ||
		 base_is(op, "REDG"))
		k->atom++;
}

int sass_parse(const char *text, size_t len, struct sass_summary *out, struct kf_err *err)
{
	memset(out, 0, sizeof *out);
	if (len > SASS_TEXT_MAX_BYTES)
		return kf_err_set(err, KF_ETOOBIG,
				  "SASS listing is %zu bytes, over the %u-byte cap", len,
				  SASS_TEXT_MAX_BYTES);
	struct sass_kernel *cur = NULL;
	struct sass_kernel overflow;
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		if (!e)
			e = end;
		char line[512];
		size_t n = (size_t)(e - p) < sizeof line - 1 ? (size_t)(e - p) : sizeof line - 1;
		memcpy(line, p, n);
		line[n] = 0;
		p = e + 1;
		char *s = line;
		while (*s == ' ' || *s == '\t')
			s++;
		if (!strncmp(s, "Function :", 10) || !strncmp(s, "Function:", 9)) {
			out->kernels_total++;
			if (out->kernels_len < SASS_MAX_KERNELS) {
				cur = &out->kernels[out->kernels_len++];
			} else {
				cur = &overflow;
			}
			memset(cur, 0, sizeof *cur);
			char *nm = strchr(s, ':') + 1;
			while (*nm == ' ')
				nm++;
			size_t l = strcspn(nm, " \t\r");
			snprintf(cur->name, sizeof cur->name, "%.*s", (int)l, nm);
			continue;
		}
		if (!cur || strncmp(s, "/*", 2) != 0)
			continue;
		char *c = strstr(s, "*/");
		if (!c)
			continue;
		/* The address comment holds hex digits only; the encoding
		 * comments (" 0x000fe4...") hold blanks and an x, and are skipped. */
		int hex = 1;
		for (char *q = s + 2; q < c; q++)
			if (!isxdigit((unsigned char)*q))
				hex = 0;
		if (!hex)
			continue;
		char *op = c + 2;
		while (*op == ' ' || *op == '\t')
			op++;
		if (*op == '@') {
			while (*op && *op != ' ')
				op++;
			while (*op == ' ')
				op++;
		}
		if (!isupper((unsigned char)*op))
			continue;
		char opc[64];
		size_t ol = strcspn(op, " ;\t");
		snprintf(opc, sizeof opc, "%.*s", (int)(ol < 63 ? ol : 63), op);
		count(cur, opc);
	}
	if (out->kernels_total == 0)
		return kf_err_set(
			err, KF_EINVAL,
			"no \"Function :\" section in the SASS listing (is it cuobjdump -sass output?)");
	return 0;
}

static int sum5(const int *v)
{
	return v[0] + v[1] + v[2] + v[3] + v[4];
}

int sass_hints(const struct sass_kernel *k, json_t *arr)
{
	int n = 0;
	char h[320];
	int loads = sum5(k->ldg);
	int mma = k->hmma + k->hgmma + k->qgmma + k->imma + k->dmma + k->utcmma;
	if (loads >= 1 && k->ldg[3] == 0 && k->ldgsts == 0 && k->tma == 0) {
		snprintf(h, sizeof h,
			 "no 128-bit global loads (%d narrower LDG): vectorize with float4/uint4 "
			 "(16-byte aligned) to move more bytes per instruction",
			 loads);
		json_array_append_new(arr, json_string(h));
		n++;
	}
	if (k->ffma >= 32 && mma == 0 && (k->lds + k->ldsm) > 0) {
		snprintf(h, sizeof h,
			 "matrix-style code (%d FFMA, shared-memory tiles) without tensor-core "
			 "instructions: for a GEMM-like loop use mma.sync/wmma (HMMA) or wgmma "
			 "(HGMMA on sm_90a) with f16/bf16/tf32 inputs",
			 k->ffma);
		json_array_append_new(arr, json_string(h));
		n++;
	}
	if (k->ldl || k->stl) {
		snprintf(h, sizeof h,
			 "local memory traffic (%d LDL, %d STL): register spills or a "
			 "dynamically indexed local array",
			 k->ldl, k->stl);
		json_array_append_new(arr, json_string(h));
		n++;
	}
	if (k->hgmma == 0 && k->qgmma == 0 && k->utcmma == 0 && k->hmma > 0 && k->tma == 0 &&
	    k->ldgsts == 0) {
		json_array_append_new(
			arr,
			json_string(
				"tensor cores used with synchronous loads: on sm_80+ overlap loads with "
				"cp.async (LDGSTS) or TMA pipelines"));
		n++;
	}
	return n;
}

json_t *sass_kernel_json(const struct sass_kernel *k)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "name", json_string(k->name));
	json_object_set_new(o, "instructions", json_integer(k->instructions));
	static const char *const w[] = {"8_16", "32", "64", "128", "other"};
	json_t *ld = json_object(), *st = json_object();
	for (int i = 0; i < 5; i++) {
		json_object_set_new(ld, w[i], json_integer(k->ldg[i]));
		json_object_set_new(st, w[i], json_integer(k->stg[i]));
	}
	json_object_set_new(o, "global_loads_by_bits", ld);
	json_object_set_new(o, "global_stores_by_bits", st);
	json_t *sh = json_object();
	json_object_set_new(sh, "lds", json_integer(k->lds));
	json_object_set_new(sh, "sts", json_integer(k->sts));
	json_object_set_new(sh, "ldsm", json_integer(k->ldsm));
	json_object_set_new(o, "shared", sh);
	json_t *async = json_object();
	json_object_set_new(async, "ldgsts", json_integer(k->ldgsts));
	json_object_set_new(async, "tma", json_integer(k->tma));
	json_object_set_new(o, "async_copies", async);
	json_t *mma = json_object();
	json_object_set_new(mma, "hmma", json_integer(k->hmma));
	json_object_set_new(mma, "hgmma", json_integer(k->hgmma));
	json_object_set_new(mma, "qgmma", json_integer(k->qgmma));
	json_object_set_new(mma, "imma", json_integer(k->imma));
	json_object_set_new(mma, "dmma", json_integer(k->dmma));
	json_object_set_new(mma, "tcgen05", json_integer(k->utcmma));
	json_object_set_new(o, "tensor_core", mma);
	json_t *fp = json_object();
	json_object_set_new(fp, "ffma", json_integer(k->ffma));
	json_object_set_new(fp, "fmul", json_integer(k->fmul));
	json_object_set_new(fp, "fadd", json_integer(k->fadd));
	json_object_set_new(o, "fp32", fp);
	json_t *loc = json_object();
	json_object_set_new(loc, "ldl", json_integer(k->ldl));
	json_object_set_new(loc, "stl", json_integer(k->stl));
	json_object_set_new(o, "local", loc);
	json_object_set_new(o, "barriers", json_integer(k->bar));
	json_object_set_new(o, "atomics", json_integer(k->atom));
	json_t *hints = json_array();
	sass_hints(k, hints);
	json_object_set_new(o, "hints", hints);
	return o;
}
