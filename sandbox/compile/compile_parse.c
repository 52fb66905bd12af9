/* compile_parse: turns what nvcc, cicc, ptxas (or NVRTC) printed into the
 * structured compile result: diagnostics with file/line/column and the
 * offending source line, per-kernel resources from the ptxas -v lines,
 * launch bounds from the PTX, occupancy from the knowledge base and the
 * warnings an agent should act on. Host paths never reach the output: the
 * job directory and the toolkit path are rewritten before parsing. */
#include <ctype.h>
#include <stdint.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/str.h"
#include "knowledge/kb.h"
#include "sandbox/compile/compile_int.h"

#define MAX_DIAGS    50
#define MAX_KERNELS  64
#define MSG_CAP	     600
#define SRC_LINE_CAP 240

struct kinfo {
	char name[256]; /* mangled (or extern "C") */
	int registers, barriers, smem, stack, spill_st, spill_ld, cumulative_stack;
	long cmem; /* -1 unknown */
	int have_props, have_used;
	int maxntid, minblocks, maxnreg, reqntid; /* from PTX; 0 none */
	int ptx_order;
};

/* --- small helpers ------------------------------------------------------- */

const char *compile_artifact_file(const char *kind)
{
	static const char *const map[][2] = {
		{"cubin", "kernel.cubin"}, {"ptx", "kernel.ptx"},
		{"log", "log.txt"},	   {"sass", "sass.txt"},
		{"source", "kernel.cu"},   {"result.json", "result.json"},
		{"result", "result.json"}, {"sass.json", "sass.json"},
	};
	for (size_t i = 0; kind && i < sizeof map / sizeof map[0]; i++)
		if (!strcmp(kind, map[i][0]))
			return map[i][1];
	return NULL;
}

/* Drops nvcc's temporary prefixes: /tmp/tmpxft_0000a1b2_00000000-6_kernel.ptx
 * -> kernel.ptx. */
static void strip_tmpxft(char *s)
{
	char *p;
	while ((p = strstr(s, "/tmp/tmpxft_")) || (p = strstr(s, "tmpxft_"))) {
		char *q = strstr(p, "tmpxft_") + 7;
		while (*q && (isxdigit((unsigned char)*q) || *q == '_' || *q == '-'))
			q++;
		/* q is past "..._00000000-6_" and maybe into the name; back up to
		 * the last '_' so the name (kernel.ptx) survives. */
		char *u = q;
		while (u > p && *(u - 1) != '_')
			u--;
		memmove(p, u, strlen(u) + 1);
	}
}

char *compile_rewrite_paths(const char *text, const char *job_dir, const char *cuda_home)
{
	char jd[4200], ch[4200];
	char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
	snprintf(jd, sizeof jd, "%s/", job_dir ? job_dir : "/nonexistent-kf");
	snprintf(ch, sizeof ch, "%s/", cuda_home ? cuda_home : "/nonexistent-kf");
	a = str_replace_all(text ? text : "", jd, "");
	b = a ? str_replace_all(a, "/job/", "") : NULL;
	c = b ? str_replace_all(b, ch, "cuda/") : NULL;
	d = c ? str_replace_all(c, "/usr/local/cuda/", "cuda/") : NULL;
	if (d)
		strip_tmpxft(d);
	free(a);
	free(b);
	free(c);
	return d;
}

char *compile_clean_log(const struct compile_parse_in *in)
{
	return compile_rewrite_paths(in->log, in->job_dir, in->cuda_home);
}

/* __cxa_demangle from libstdc++, loaded once; NULL when unavailable. */
typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
static demangle_fn demangle_p;
static pthread_once_t demangle_once = PTHREAD_ONCE_INIT;
static void demangle_load(void)
{
	void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
	if (h)
		demangle_p = (demangle_fn)dlsym(h, "__cxa_demangle");
}

static json_t *demangled(const char *name)
{
	if (strncmp(name, "_Z", 2) != 0)
		return json_string(name);
	pthread_once(&demangle_once, demangle_load);
	if (!demangle_p)
		return json_string(name);
	int st = 0;
	char *d = demangle_p(name, NULL, NULL, &st);
	json_t *j = json_string(st == 0 && d ? d : name);
	free(d);
	return j;
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* The source line number line (1-based) of src, copied into buf. */
static int source_line(const char *src, size_t len, long line, char *buf, size_t cap)
{
	long cur = 1;
	size_t i = 0;
	while (i < len && cur < line) {
		if (src[i++] == '\n')
			cur++;
	}
	if (cur != line || i > len)
		return -1;
	size_t e = i;
	while (e < len && src[e] != '\n' && src[e] != '\r')
		e++;
	size_t n = e - i < cap - 1 ? e - i : cap - 1;
	memcpy(buf, src + i, n);
	buf[n] = 0;
	return 0;
}

/* A copy of json-safe text: invalid UTF-8 becomes '?'. */
json_t *compile_json_text(const char *s)
{
	json_t *j = json_string(s);
	if (j)
		return j;
	char *c = strdup(s);
	if (!c)
		return NULL;
	for (char *p = c; *p; p++)
		if ((unsigned char)*p >= 0x80 || (unsigned char)*p < 0x20)
			*p = '?';
	j = json_string(c);
	free(c);
	return j;
}

/* --- diagnostics ------------------------------------------------------- */

struct diag_ctx {
	json_t *arr;
	const struct compile_parse_in *in;
	int errors, warnings, dropped;
	json_t *last; /* the previous front-end diagnostic (for context lines) */
};

static void add_diag(struct diag_ctx *dc, const char *file, long line, long col, const char *sev,
		     const char *msg, const char *echo)
{
	if (!strcmp(sev, "error"))
		dc->errors++;
	else if (!strcmp(sev, "warning"))
		dc->warnings++;
	if (json_array_size(dc->arr) >= MAX_DIAGS) {
		dc->dropped++;
		dc->last = NULL;
		return;
	}
	json_t *d = json_object();
	char m[MSG_CAP + 1];
	snprintf(m, sizeof m, "%s", msg);
	json_object_set_new(d, "file", file ? compile_json_text(file) : json_null());
	json_object_set_new(d, "line", line > 0 ? json_integer(line) : json_null());
	json_object_set_new(d, "column", col > 0 ? json_integer(col) : json_null());
	json_object_set_new(d, "severity", json_string(sev));
	json_object_set_new(d, "message", compile_json_text(m));
	char sl[SRC_LINE_CAP + 1];
	if (file && line > 0 && !strcmp(file, "kernel.cu") &&
	    source_line(dc->in->source, dc->in->source_len, line, sl, sizeof sl) == 0)
		json_object_set_new(d, "source_line", compile_json_text(sl));
	else if (echo)
		json_object_set_new(d, "source_line", compile_json_text(echo));
	else
		json_object_set_new(d, "source_line", json_null());
	json_array_append_new(dc->arr, d);
	dc->last = d;
}

static const char *norm_sev(const char *s, size_t n)
{
	if (n >= 5 && !strncmp(s + n - 5, "error", 5))
		return "error";
	if (!strncmp(s, "warning", 7))
		return "warning";
	if (!strncmp(s, "remark", 6))
		return "remark";
	if (!strncmp(s, "note", 4))
		return "note";
	if (!strncmp(s, "fatal", 5))
		return "error";
	return "error";
}

/* "FILE(LINE): SEV[ #NNN-D]: MSG" (cudafe, NVRTC). Returns 1 if matched. */
static int parse_frontend(struct diag_ctx *dc, char **lines, int nl, int *i)
{
	const char *l = lines[*i];
	const char *lp = strstr(l, "): ");
	if (!lp || l[0] == ' ')
		return 0;
	const char *op = lp;
	while (op > l && *op != '(')
		op--;
	if (op == l || *op != '(')
		return 0;
	for (const char *q = op + 1; q < lp; q++)
		if (!isdigit((unsigned char)*q))
			return 0;
	const char *sev = lp + 3;
	const char *sevs[] = {"catastrophic error", "error", "warning", "remark", "note", NULL};
	int k = 0;
	for (; sevs[k]; k++)
		if (!strncmp(sev, sevs[k], strlen(sevs[k])))
			break;
	if (!sevs[k])
		return 0;
	const char *msg = sev + strlen(sevs[k]);
	if (*msg == ' ' && msg[1] == '#') { /* " #177-D" */
		msg += 2;
		while (*msg && *msg != ':')
			msg++;
	}
	if (*msg != ':')
		return 0;
	msg = skip_ws(msg + 1);
	char file[256];
	snprintf(file, sizeof file, "%.*s", (int)(op - l), l);
	long line = strtol(op + 1, NULL, 10);
	long col = 0;
	const char *echo = NULL;
	/* Next lines: the source echo ("  " + line) and the caret line. */
	if (*i + 2 < nl && !strncmp(lines[*i + 1], "  ", 2)) {
		const char *caret = strchr(lines[*i + 2], '^');
		if (caret && strspn(lines[*i + 2], " ") == (size_t)(caret - lines[*i + 2])) {
			col = (long)(caret - lines[*i + 2]) - 2 + 1;
			echo = lines[*i + 1] + 2;
			*i += 2;
		}
	}
	add_diag(dc, file, line, col, norm_sev(sevs[k], strlen(sevs[k])), msg, echo);
	return 1;
}

/* "FILE:LINE:COL: SEV: MSG" (the host preprocessor). */
static int parse_gcc(struct diag_ctx *dc, const char *l)
{
	const char *c1 = strchr(l, ':');
	if (!c1 || c1 == l || l[0] == ' ')
		return 0;
	char *e;
	long line = strtol(c1 + 1, &e, 10);
	if (e == c1 + 1 || *e != ':')
		return 0;
	long col = strtol(e + 1, &e, 10);
	if (*e != ':')
		return 0;
	const char *sev = skip_ws(e + 1);
	const char *sevs[] = {"fatal error", "error", "warning", "note", NULL};
	int k = 0;
	for (; sevs[k]; k++)
		if (!strncmp(sev, sevs[k], strlen(sevs[k])) && sev[strlen(sevs[k])] == ':')
			break;
	if (!sevs[k])
		return 0;
	char file[256];
	snprintf(file, sizeof file, "%.*s", (int)(c1 - l), l);
	add_diag(dc, file, line, col, norm_sev(sevs[k], strlen(sevs[k])),
		 skip_ws(sev + strlen(sevs[k]) + 1), NULL);
	dc->last = NULL;
	return 1;
}

/* --- ptxas -v ---------------------------------------------------------- */

static struct kinfo *kfind(struct kinfo *k, int *n, const char *name, int create)
{
	for (int i = 0; i < *n; i++)
		if (!strcmp(k[i].name, name))
			return &k[i];
	if (!create || *n >= MAX_KERNELS)
		return NULL;
	struct kinfo *x = &k[(*n)++];
	memset(x, 0, sizeof *x);
	snprintf(x->name, sizeof x->name, "%s", name);
	x->cmem = -1;
	x->ptx_order = 1 << 20;
	return x;
}

static int quoted(const char *l, const char *after, char *out, size_t cap)
{
	const char *p = strstr(l, after);
	if (!p)
		return -1;
	p = strchr(p + strlen(after), '\'');
	if (!p)
		return -1;
	const char *q = strchr(p + 1, '\'');
	if (!q)
		return -1;
	snprintf(out, cap, "%.*s", (int)(q - p - 1), p + 1);
	return 0;
}

static long num_before(const char *l, const char *word)
{
	const char *p = strstr(l, word);
	if (!p)
		return -1;
	while (p > l && *(p - 1) == ' ')
		p--;
	const char *e = p;
	while (p > l && isdigit((unsigned char)*(p - 1)))
		p--;
	if (p == e)
		return -1;
	return strtol(p, NULL, 10);
}

static void parse_used(struct kinfo *k, const char *l)
{
	long v;
	k->have_used = 1;
	if ((v = num_before(l, " registers")) >= 0)
		k->registers = (int)v;
	if ((v = num_before(l, " barriers")) >= 0)
		k->barriers = (int)v;
	if ((v = num_before(l, " bytes smem")) >= 0)
		k->smem = (int)v;
	if ((v = num_before(l, " bytes cumulative stack size")) >= 0)
		k->cumulative_stack = (int)v;
	for (const char *p = l; (p = strstr(p, " bytes cmem[")); p++) {
		const char *s = p;
		while (s > l && isdigit((unsigned char)*(s - 1)))
			s--;
		if (k->cmem < 0)
			k->cmem = 0;
		k->cmem += strtol(s, NULL, 10);
	}
}

static void parse_props(struct kinfo *k, const char *l)
{
	long v;
	k->have_props = 1;
	if ((v = num_before(l, " bytes stack frame")) >= 0)
		k->stack = (int)v;
	if ((v = num_before(l, " bytes spill stores")) >= 0)
		k->spill_st = (int)v;
	if ((v = num_before(l, " bytes spill loads")) >= 0)
		k->spill_ld = (int)v;
}

/* Launch bounds and order from the PTX: ".entry NAME(" ... ".maxntid". */
static void parse_ptx(const char *ptx, struct kinfo *k, int *n, long *const_bytes)
{
	*const_bytes = -1;
	if (!ptx)
		return;
	*const_bytes = 0;
	int order = 0;
	for (const char *p = ptx; (p = strstr(p, ".entry "));) {
		p += 7;
		const char *e = p;
		while (*e && *e != '(' && *e != ' ' && *e != '\n' && *e != '\r')
			e++;
		char name[256];
		snprintf(name, sizeof name, "%.*s", (int)(e - p), p);
		struct kinfo *x = kfind(k, n, name, 0);
		const char *body = strchr(e, '{');
		if (!x || !body)
			continue;
		x->ptx_order = order++;
		const char *q;
		for (q = e; q < body; q++) {
			if (!strncmp(q, ".maxntid ", 9))
				x->maxntid = (int)strtol(q + 9, NULL, 10);
			else if (!strncmp(q, ".reqntid ", 9))
				x->reqntid = (int)strtol(q + 9, NULL, 10);
			else if (!strncmp(q, ".minnctapersm ", 14))
				x->minblocks = (int)strtol(q + 14, NULL, 10);
			else if (!strncmp(q, ".maxnreg ", 9))
				x->maxnreg = (int)strtol(q + 9, NULL, 10);
		}
	}
	/* Module constants: ".const .align 4 .b8 coef[256];", ".const .f32 x;" */
	for (const char *p = ptx; (p = strstr(p, "\n.const ")); p++) {
		const char *e = strchr(p + 1, ';');
		if (!e)
			break;
		char decl[256];
		snprintf(decl, sizeof decl, "%.*s", (int)(e - p - 1 < 255 ? e - p - 1 : 255),
			 p + 1);
		int sz = 4;
		if (strstr(decl, ".b8 ") || strstr(decl, ".u8 ") || strstr(decl, ".s8 "))
			sz = 1;
		else if (strstr(decl, "16 "))
			sz = 2;
		else if (strstr(decl, "64 "))
			sz = 8;
		long cnt = 1;
		const char *br = strchr(decl, '[');
		if (br)
			cnt = strtol(br + 1, NULL, 10);
		*const_bytes += sz * cnt;
	}
}

/* Constant banks from the cubin's section table: .nv.constant0.<kernel> is
 * the kernel's bank 0 (parameters and driver constants), .nv.constant<N>
 * without a kernel name holds the module's __constant__ data. The ELF comes
 * from the jail, so every offset is checked against the buffer. */
static uint64_t rd(const unsigned char *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void parse_cubin(const unsigned char *e, size_t len, struct kinfo *k, int nk,
			long *module_const)
{
	if (!e || len < 64 || memcmp(e, "\177ELF", 4) != 0 || e[4] != 2 /* 64-bit */ || e[5] != 1)
		return;
	uint64_t shoff = rd(e + 0x28, 8), shentsize = rd(e + 0x3A, 2), shnum = rd(e + 0x3C, 2),
		 shstrndx = rd(e + 0x3E, 2);
	if (shentsize < 0x28 || shnum == 0 || shnum > 4096 || shstrndx >= shnum || shoff > len ||
	    shnum * shentsize > len - shoff)
		return;
	const unsigned char *strsh = e + shoff + shstrndx * shentsize;
	uint64_t stroff = rd(strsh + 0x18, 8), strsize = rd(strsh + 0x20, 8);
	if (stroff > len || strsize > len - stroff)
		return;
	long user = 0;
	int have_user = 0;
	for (uint64_t i = 0; i < shnum; i++) {
		const unsigned char *sh = e + shoff + i * shentsize;
		uint64_t name = rd(sh, 4), size = rd(sh + 0x20, 8);
		if (name >= strsize)
			continue;
		const char *nm = (const char *)e + stroff + name;
		size_t maxn = strsize - name;
		if (strnlen(nm, maxn) == maxn || strncmp(nm, ".nv.constant", 12) != 0)
			continue;
		const char *bank = nm + 12;
		const char *dot = strchr(bank, '.');
		if (!dot) {
			user += (long)size;
			have_user = 1;
		} else if (!strncmp(bank, "0.", 2)) {
			for (int j = 0; j < nk; j++)
				if (!strcmp(k[j].name, dot + 1) && k[j].cmem < 0)
					k[j].cmem = (long)size;
		}
	}
	if (have_user)
		*module_const = user;
	else if (*module_const < 0)
		*module_const = 0;
}

static int cmp_kinfo(const void *a, const void *b)
{
	const struct kinfo *x = a, *y = b;
	return (x->ptx_order > y->ptx_order) - (x->ptx_order < y->ptx_order);
}

/* --- the result ---------------------------------------------------------- */

static json_t *occupancy_json(const struct compile_parse_in *in, const struct kinfo *k,
			      json_t *warnings, const char *shown)
{
	if (!in->kb)
		return json_null();
	struct kb_cc_limits lim;
	if (kb_cc_limits_for_arch(in->kb, in->arch, &lim, NULL) != 0)
		return json_null();
	static const int sizes[] = {128, 256, 512, 1024};
	json_t *arr = json_array();
	for (size_t i = 0; i < 4; i++) {
		int bs = sizes[i];
		json_t *o = json_object();
		json_object_set_new(o, "block_threads", json_integer(bs));
		int bound = k->reqntid ? k->reqntid : k->maxntid;
		if (bound && bs > bound) {
			json_object_set_new(o, "blocks_per_sm", json_integer(0));
			json_object_set_new(o, "occupancy", json_real(0));
			json_object_set_new(o, "limiting", json_string("launch_bounds"));
			json_array_append_new(arr, o);
			continue;
		}
		struct kb_occupancy r;
		if (kb_occupancy(&lim, bs, k->registers, k->smem, &r, NULL) != 0) {
			json_decref(o);
			continue;
		}
		json_object_set_new(o, "blocks_per_sm", json_integer(r.blocks_per_sm));
		json_object_set_new(o, "occupancy",
				    json_real((double)(int)(r.occupancy * 1000 + 0.5) / 1000));
		json_object_set_new(o, "limiting", json_string(r.limiting_name));
		json_array_append_new(arr, o);
		if (bs == 256 && r.limiting == KB_OCC_LIMIT_REGS && r.occupancy < 0.5) {
			char w[400];
			snprintf(
				w, sizeof w,
				"'%s': occupancy at 256 threads/block is %d%%, limited by registers "
				"(%d per thread): fewer live values, __launch_bounds__(256, N) or "
				"-maxrregcount would allow more resident warps",
				shown, (int)(r.occupancy * 100 + 0.5), k->registers);
			json_array_append_new(warnings, json_string(w));
		}
	}
	return arr;
}

/* A "ptxas info" line: the kernel being compiled (cur), its properties
 * heading (props), its resource usage. */
static void ptxas_info(const char *l, struct kinfo *ks, int *nk, char *cur, size_t cur_cap,
		       char *props, size_t props_cap)
{
	char name[256];
	const char *m = strchr(l, ':');
	m = m ? skip_ws(m + 1) : l;
	if (!strncmp(m, "Compiling entry function", 24) &&
	    quoted(m, "function", name, sizeof name) == 0) {
		kfind(ks, nk, name, 1);
		snprintf(cur, cur_cap, "%s", name);
	} else if (!strncmp(m, "Function properties for ", 24)) {
		snprintf(props, props_cap, "%s", skip_ws(m + 24));
	} else if (!strncmp(m, "Used ", 5) && cur[0]) {
		struct kinfo *k = kfind(ks, nk, cur, 0);
		if (k)
			parse_used(k, m);
	}
}

/* "ptxas error   : MSG", "ptxas kernel.ptx, line 5; error   : MSG" */
static void ptxas_diag(struct diag_ctx *dc, const char *l)
{
	const char *c = strstr(l, " : ");
	if (!c)
		c = strchr(l, ':');
	if (!c)
		return;
	char file[256] = "ptxas";
	long line = 0;
	const char *sevp = l + 5;
	const char *ln = strstr(l, ", line ");
	if (ln && ln < c) {
		snprintf(file, sizeof file, "%.*s", (int)(ln - l - 6), l + 6);
		line = strtol(ln + 7, NULL, 10);
		sevp = strchr(ln, ';') ? strchr(ln, ';') + 1 : ln;
	}
	sevp = skip_ws(sevp);
	const char *sev = !strncmp(sevp, "warning", 7) ? "warning" : "error";
	add_diag(dc, file, line, 0, sev, skip_ws(c + (c[0] == ' ' ? 3 : 1)), NULL);
	dc->last = NULL;
}

/* Reads the compiler's lines: diagnostics into dc, per-kernel resources
 * into ks (*nk kernels). */
static void parse_log(struct diag_ctx *dc, char **lines, int nl, struct kinfo *ks, int *nk)
{
	char cur[256] = "", props[256] = "";
	for (int i = 0; i < nl; i++) {
		const char *l = lines[i];
		const char *body = l;
		if (!strncmp(l, "ptxas         .", 15))
			body = l + 15; /* NVRTC prefixes continuation lines */
		if (!strncmp(l, "ptxas info", 10)) {
			ptxas_info(l, ks, nk, cur, sizeof cur, props, sizeof props);
		} else if (strstr(body, "bytes stack frame")) {
			struct kinfo *k = props[0] ? kfind(ks, nk, props, 0) : NULL;
			if (k)
				parse_props(k, body);
		} else if (!strncmp(l, "ptxas", 5)) {
			ptxas_diag(dc, l);
		} else if (!strncmp(l, "nvcc ", 5) && strchr(l, ':')) {
			const char *sp = skip_ws(l + 5);
			const char *sev = !strncmp(sp, "warning", 7) ? "warning" : "error";
			add_diag(dc, "nvcc", 0, 0, sev, skip_ws(strchr(l, ':') + 1), NULL);
			dc->last = NULL;
		} else if (parse_frontend(dc, lines, nl, &i) || parse_gcc(dc, l)) {
			continue;
		} else if ((l[0] == ' ' || l[0] == '\t') && dc->last &&
			   strstr(l, "detected during")) {
			/* Template instantiation context: append to the message. */
			json_t *m = json_object_get(dc->last, "message");
			char buf[MSG_CAP + 1];
			snprintf(buf, sizeof buf, "%s; %s", json_string_value(m), skip_ws(l));
			json_object_set_new(dc->last, "message", compile_json_text(buf));
		} else if (!strncmp(l, "error: ", 7) || !strncmp(l, "fatal error: ", 13) ||
			   !strncmp(l, "warning: ", 9)) {
			add_diag(dc, NULL, 0, 0, l[0] == 'w' ? "warning" : "error",
				 skip_ws(strchr(l, ':') + 1), NULL);
		} else if (strstr(l, "died due to signal") || strstr(l, "Killed")) {
			add_diag(dc, NULL, 0, 0, "error", l, NULL);
		}
	}
	if (!dc->in->ok && dc->errors == 0)
		add_diag(
			dc, NULL, 0, 0, "error",
			"the compiler failed without a diagnostic kforge could parse; see the log artifact",
			NULL);
}

static json_t *launch_bounds_json(const struct kinfo *k)
{
	if (!(k->maxntid || k->reqntid || k->minblocks || k->maxnreg))
		return json_null();
	json_t *lb = json_object();
	json_object_set_new(lb, "max_threads", k->maxntid ? json_integer(k->maxntid) : json_null());
	json_object_set_new(lb, "min_blocks_per_sm",
			    k->minblocks ? json_integer(k->minblocks) : json_null());
	if (k->reqntid)
		json_object_set_new(lb, "required_threads", json_integer(k->reqntid));
	if (k->maxnreg)
		json_object_set_new(lb, "max_registers", json_integer(k->maxnreg));
	return lb;
}

/* One kernel's resources, occupancy and warnings (spills, local memory). */
static json_t *kernel_json(const struct compile_parse_in *in, const struct kinfo *k,
			   json_t *warnings)
{
	json_t *o = json_object();
	json_t *dn = demangled(k->name);
	const char *shown = json_string_value(dn);
	json_object_set_new(o, "name", dn);
	json_object_set_new(o, "mangled", json_string(k->name));
	json_object_set_new(o, "registers", json_integer(k->registers));
	json_object_set_new(o, "shared_static_bytes", json_integer(k->smem));
	json_object_set_new(o, "const_bytes", k->cmem >= 0 ? json_integer(k->cmem) : json_null());
	json_object_set_new(o, "stack_bytes", json_integer(k->stack));
	json_object_set_new(
		o, "local_bytes",
		json_integer(k->cumulative_stack > k->stack ? k->cumulative_stack : k->stack));
	json_object_set_new(o, "spill_store_bytes", json_integer(k->spill_st));
	json_object_set_new(o, "spill_load_bytes", json_integer(k->spill_ld));
	json_object_set_new(o, "barriers", json_integer(k->barriers));
	json_object_set_new(o, "launch_bounds", launch_bounds_json(k));
	char w[400];
	if (k->spill_st || k->spill_ld) {
		snprintf(w, sizeof w,
			 "'%s' spills registers to local memory (%d bytes stored, %d bytes "
			 "loaded per thread): cut live values (smaller tiles, less unrolling) "
			 "or relax __launch_bounds__/-maxrregcount",
			 shown, k->spill_st, k->spill_ld);
		json_array_append_new(warnings, json_string(w));
	} else if (k->stack > 0) {
		snprintf(w, sizeof w,
			 "'%s' uses %d bytes of local memory per thread (stack frame): "
			 "dynamically indexed local arrays or large structs live in slow "
			 "local memory; index with compile-time constants or use shared memory",
			 shown, k->stack);
		json_array_append_new(warnings, json_string(w));
	}
	json_object_set_new(o, "occupancy", occupancy_json(in, k, warnings, shown));
	return o;
}

/* Warnings about the whole compile: no kernel, -G, a truncated log,
 * diagnostics not shown. */
static void build_warnings(const struct compile_parse_in *in, int nk, int dropped, json_t *warnings)
{
	if (in->ok && nk == 0)
		json_array_append_new(
			warnings,
			json_string(
				"no __global__ kernel in the cubin: templates must be instantiated "
				"explicitly, and only __global__ functions become kernels"));
	if (in->debug)
		json_array_append_new(
			warnings,
			json_string(
				"-G builds unoptimized device-debug code: do not benchmark it"));
	if (in->log_truncated)
		json_array_append_new(
			warnings,
			json_string("compiler output exceeded its cap and was truncated"));
	if (dropped) {
		char w[128];
		snprintf(w, sizeof w, "%d more diagnostics not shown (see the log artifact)",
			 dropped);
		json_array_append_new(warnings, json_string(w));
	}
}

/* Splits log in place into lines (new array, free(); the strings point
 * into log), trailing CRs removed. Returns NULL on ENOMEM. */
static char **split_lines(char *log, int *nl)
{
	int n = 0;
	for (char *p = log; *p; p++)
		if (*p == '\n')
			n++;
	char **lines = calloc((size_t)n + 2, sizeof *lines);
	if (!lines)
		return NULL;
	n = 0;
	for (char *save = NULL, *t = strtok_r(log, "\n", &save); t;
	     t = strtok_r(NULL, "\n", &save)) {
		size_t len = strlen(t);
		if (len && t[len - 1] == '\r')
			t[len - 1] = 0;
		lines[n++] = t;
	}
	*nl = n;
	return lines;
}

json_t *compile_build_result(const struct compile_parse_in *in)
{
	char *log = compile_clean_log(in);
	if (!log)
		return NULL;
	json_t *out = json_object();
	json_t *diags = json_array();
	json_t *warnings = json_array();
	json_t *kernels = json_array();
	struct kinfo *ks = calloc(MAX_KERNELS, sizeof *ks);
	char **lines = NULL;
	int nl = 0, nk = 0;
	if (!out || !diags || !warnings || !kernels || !ks)
		goto fail;
	lines = split_lines(log, &nl);
	if (!lines)
		goto fail;

	struct diag_ctx dc = {.arr = diags, .in = in};
	parse_log(&dc, lines, nl, ks, &nk);
	long module_const = -1;
	parse_ptx(in->ptx, ks, &nk, &module_const);
	parse_cubin(in->cubin, in->cubin_len, ks, nk, &module_const);
	qsort(ks, (size_t)nk, sizeof *ks, cmp_kinfo);
	for (int i = 0; i < nk && in->ok; i++)
		json_array_append_new(kernels, kernel_json(in, &ks[i], warnings));
	build_warnings(in, nk, dc.dropped, warnings);

	json_object_set_new(out, "ok", json_boolean(in->ok));
	json_object_set_new(out, "arch", json_string(in->arch));
	json_object_set_new(out, "backend", json_string(in->backend));
	json_object_set_new(out, "compiler_version", json_string(in->version));
	json_object_set_new(out, "errors", json_integer(dc.errors));
	json_object_set_new(out, "kernels", kernels);
	json_object_set_new(out, "warnings", warnings);
	json_object_set_new(out, "diagnostics", diags);
	json_object_set_new(out, "module_const_bytes",
			    module_const >= 0 ? json_integer(module_const) : json_null());
	json_object_set_new(out, "log_truncated", json_boolean(in->log_truncated));
	free(lines);
	free(ks);
	free(log);
	return out;
fail:
	json_decref(out);
	json_decref(diags);
	json_decref(warnings);
	json_decref(kernels);
	free(lines);
	free(ks);
	free(log);
	return NULL;
}
