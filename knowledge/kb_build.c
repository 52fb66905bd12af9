/* kb_build: makes knowledge.db from the text sources. GPU facts come from
 * gpu-facts/gpus.csv and per_cc.csv (empty cell = unknown -> NULL, `n/a` =
 * not applicable), sources and conflicts from gpu-facts/SOURCES.md, ids and
 * aliases from aliases.csv; guides from guides/ (kb_build_guides.c). Every
 * known figure must carry a source naming a key of SOURCES.md, or the build
 * fails naming the file, row and column. Deterministic output: fixed page
 * size, inputs in file order, FTS optimize, VACUUM, no timestamps. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/kb_build.h"
#include "knowledge/kb_build_int.h"
#include "knowledge/kb_int.h"

enum { F_PRODUCT, F_PER_CC, F_FEATURE };
static const char *const KIND_NAME[] = {"product", "per_cc", "feature"};

/* Figure columns, in display order. from_cc: only in per_cc.csv, taken from
 * the GPU's compute-capability row. */
static const struct field_def {
	const char *field, *label, *unit;
	int kind, from_cc;
} FIELDS[] = {
	{"sm_count", "SMs", "", F_PRODUCT, 0},
	{"boost_clock_mhz", "boost clock", "MHz", F_PRODUCT, 0},
	{"memory_gb", "memory", "GB", F_PRODUCT, 0},
	{"memory_type", "memory type", "", F_PRODUCT, 0},
	{"memory_bandwidth_gbs", "memory bandwidth", "GB/s", F_PRODUCT, 0},
	{"l2_cache_mb", "L2 cache", "MB", F_PRODUCT, 0},
	{"peak_fp32_tflops", "FP32 (non-tensor)", "TFLOPS", F_PRODUCT, 0},
	{"peak_fp64_tflops", "FP64 (non-tensor)", "TFLOPS", F_PRODUCT, 0},
	{"fp64_tensor_tflops", "FP64 tensor", "TFLOPS", F_PRODUCT, 0},
	{"tf32_tensor_dense_tflops", "TF32 tensor (dense)", "TFLOPS", F_PRODUCT, 0},
	{"fp16_bf16_tensor_dense_tflops", "FP16/BF16 tensor (dense)", "TFLOPS", F_PRODUCT, 0},
	{"fp8_tensor_dense_tflops", "FP8 tensor (dense)", "TFLOPS", F_PRODUCT, 0},
	{"int8_tensor_dense_tops", "INT8 tensor (dense)", "TOPS", F_PRODUCT, 0},
	{"fp4_tensor_dense_tflops", "FP4 tensor (dense)", "TFLOPS", F_PRODUCT, 0},
	{"tdp_w", "board power", "W", F_PRODUCT, 0},
	{"fp32_lanes_per_sm", "FP32 lanes per SM", "", F_PER_CC, 0},
	{"max_threads_per_sm", "max threads per SM", "", F_PER_CC, 0},
	{"max_threads_per_block", "max threads per block", "", F_PER_CC, 0},
	{"max_resident_blocks_per_sm", "max resident blocks per SM", "", F_PER_CC, 0},
	{"max_warps_per_sm", "max warps per SM", "", F_PER_CC, 0},
	{"regs_32bit_per_sm", "32-bit registers per SM", "", F_PER_CC, 0},
	{"max_regs_per_block", "max registers per block", "", F_PER_CC, 1},
	{"max_regs_per_thread", "max registers per thread", "", F_PER_CC, 0},
	{"smem_per_sm_kb", "shared memory per SM", "KB", F_PER_CC, 0},
	{"max_smem_per_block_optin_kb", "max shared memory per block (opt-in)", "KB", F_PER_CC, 0},
	{"static_smem_per_block_kb", "static shared memory per block", "KB", F_PER_CC, 1},
	{"l1_plus_smem_per_sm_kb", "L1 + shared memory per SM", "KB", F_PER_CC, 0},
	{"feat_cp_async_sm80", "cp.async", "", F_FEATURE, 0},
	{"feat_tma_sm90", "TMA", "", F_FEATURE, 0},
	{"feat_wgmma_sm90a", "wgmma", "", F_FEATURE, 0},
	{"feat_clusters_dsmem_sm90", "clusters / DSMEM", "", F_FEATURE, 0},
	{"feat_fp8_tensor_sm89", "FP8 tensor cores", "", F_FEATURE, 0},
	{"feat_bf16_sm80", "BF16 tensor cores", "", F_FEATURE, 0},
	{"feat_tcgen05_tmem_sm100a", "tcgen05 / TMEM", "", F_FEATURE, 0},
	{"feat_fp4_tensor", "FP4 tensor cores", "", F_FEATURE, 0},
	{"feat_fp64_tensor", "FP64 tensor cores", "", F_FEATURE, 0},
};
#define FIELDS_LEN (sizeof FIELDS / sizeof FIELDS[0])

int kb_build_exec(sqlite3 *db, const char *sql, const char *what, struct kf_err *err)
{
	char *msg = NULL;
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		int rc = kf_err_set(err, KF_EDB, "%s: %s", what, msg ? msg : sqlite3_errmsg(db));
		sqlite3_free(msg);
		return rc;
	}
	return 0;
}

int kb_build_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, struct kf_err *err)
{
	if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
		return kf_err_set(err, KF_EDB, "prepare: %s (%.60s)", sqlite3_errmsg(db), sql);
	return 0;
}

int kb_build_step_reset(sqlite3 *db, sqlite3_stmt *st, const char *what, struct kf_err *err)
{
	int s = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (s != SQLITE_DONE)
		return kf_err_set(err, KF_EDB, "%s: %s", what, sqlite3_errmsg(db));
	return 0;
}

void kb_build_bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

/* ---- source keys of a figure -------------------------------------------- */

/* Inserts into figure_sources (or per_cc_sources) every key of the sources
 * table named in text; returns how many through *n. Keys are words of
 * [A-Za-z0-9-]. */
int kb_build_link_keys(sqlite3 *db, sqlite3_stmt *has, sqlite3_stmt *ins, const char *a,
		       const char *b, const char *text, int *n, struct kf_err *err)
{
	*n = 0;
	for (const char *p = text; *p;) {
		if (!(isalnum((unsigned char)*p) || *p == '-')) {
			p++;
			continue;
		}
		const char *s = p;
		while (isalnum((unsigned char)*p) || *p == '-')
			p++;
		size_t l = (size_t)(p - s);
		while (l > 0 && s[l - 1] == '-')
			l--;
		if (l == 0 || l > 63)
			continue;
		char key[64];
		memcpy(key, s, l);
		key[l] = '\0';
		sqlite3_bind_text(has, 1, key, -1, SQLITE_TRANSIENT);
		int found = sqlite3_step(has) == SQLITE_ROW;
		sqlite3_reset(has);
		if (!found)
			continue;
		int bi = 1;
		kb_build_bind_text(ins, bi++, a);
		if (b)
			kb_build_bind_text(ins, bi++, b);
		kb_build_bind_text(ins, bi, key);
		/* the same key twice in one text is fine: OR IGNORE */
		int rc = kb_build_step_reset(db, ins, "source link", err);
		if (rc)
			return rc;
		(*n)++;
	}
	return 0;
}

/* ---- figures -------------------------------------------------------------- */

static int is_number(const char *s, double *v)
{
	char *end = NULL;
	if (!*s)
		return 0;
	errno = 0;
	*v = strtod(s, &end);
	return errno == 0 && end && *end == '\0';
}

/* Which fields a ';'-separated item of derived_fields ("fp64 = fp32/64",
 * "tensor dense = sparse / 2", "bw = 5001 MHz x2 ...") describes: the words
 * before '='. Returns the item text for field, or "" (into buf). */
static const char *derivation_for(const char *derived, const char *field, char *buf, size_t cap)
{
	buf[0] = '\0';
	const char *p = derived;
	while (*p) {
		const char *e = strchr(p, ';');
		size_t il = e ? (size_t)(e - p) : strlen(p);
		char item[512];
		snprintf(item, sizeof item, "%.*s", (int)il, p);
		char lhs[128];
		const char *eq = strchr(item, '=');
		snprintf(lhs, sizeof lhs, "%.*s", eq ? (int)(eq - item) : 0, item);
		for (char *c = lhs; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		int tensor_all = strstr(lhs, "tensor") != NULL;
		int hit = 0;
		char *save = NULL;
		for (char *w = strtok_r(lhs, " /", &save); w && !hit;
		     w = strtok_r(NULL, " /", &save)) {
			if (strcmp(w, "fp64tc") == 0)
				hit = strcmp(field, "fp64_tensor_tflops") == 0;
			else if (strcmp(w, "fp64") == 0)
				hit = strcmp(field, "peak_fp64_tflops") == 0;
			else if (strcmp(w, "fp32") == 0)
				hit = strcmp(field, "peak_fp32_tflops") == 0;
			else if (strcmp(w, "bw") == 0)
				hit = strcmp(field, "memory_bandwidth_gbs") == 0;
			else if (strcmp(w, "tf32") == 0)
				hit = strcmp(field, "tf32_tensor_dense_tflops") == 0;
			else if (strcmp(w, "fp16") == 0 || strcmp(w, "bf16") == 0)
				hit = strcmp(field, "fp16_bf16_tensor_dense_tflops") == 0;
			else if (strcmp(w, "fp8") == 0)
				hit = strcmp(field, "fp8_tensor_dense_tflops") == 0;
			else if (strcmp(w, "int8") == 0)
				hit = strcmp(field, "int8_tensor_dense_tops") == 0;
			else if (strcmp(w, "fp4") == 0)
				hit = strcmp(field, "fp4_tensor_dense_tflops") == 0;
		}
		if (!hit && tensor_all && strstr(field, "_tensor_dense_"))
			hit = 1;
		if (hit) {
			while (*item == ' ')
				memmove(item, item + 1, strlen(item));
			snprintf(buf, cap, "%s", item);
			return buf;
		}
		if (!e)
			break;
		p = e + 1;
	}
	return buf;
}

struct build {
	sqlite3 *db;
	struct kb_csv gpus, cc, al;
	sqlite3_stmt *has_key, *ins_fig, *ins_figsrc, *ins_cc, *ins_ccfig, *ins_ccsrc, *ins_gpu,
		*ins_alias, *has_alias;
	const char *gpus_path, *cc_path, *al_path;
};

static const char *cell(const struct kb_csv *c, size_t row, const char *col)
{
	int i = kb_csv_col(c, col);
	return i < 0 ? NULL : c->rows[row][i];
}

static int status_of(const char *v, const char **st)
{
	if (!v || !*v)
		*st = "unknown";
	else if (strcmp(v, "n/a") == 0)
		*st = "n/a";
	else
		*st = "known";
	return strcmp(*st, "known") == 0;
}

static int import_per_cc(struct build *b, struct kf_err *err)
{
	static const char *const need[] = {"compute_capability", "architecture", "sm_target",
					   "sources"};
	for (size_t i = 0; i < 4; i++)
		if (kb_csv_col(&b->cc, need[i]) < 0)
			return kf_err_set(err, KF_EINVAL, "%s: no column '%s'", b->cc_path,
					  need[i]);
	for (size_t r = 0; r < b->cc.rows_len; r++) {
		const char *ccs = cell(&b->cc, r, "compute_capability");
		int maj = 0, mnr = 0, rc;
		if (sscanf(ccs, "%d.%d", &maj, &mnr) != 2)
			return kf_err_set(err, KF_EINVAL,
					  "%s:%zu: compute_capability '%s' is not X.Y", b->cc_path,
					  b->cc.lines[r], ccs);
		const char *srcs = cell(&b->cc, r, "sources");
		kb_build_bind_text(b->ins_cc, 1, ccs);
		sqlite3_bind_int(b->ins_cc, 2, maj);
		sqlite3_bind_int(b->ins_cc, 3, mnr);
		kb_build_bind_text(b->ins_cc, 4, cell(&b->cc, r, "architecture"));
		kb_build_bind_text(b->ins_cc, 5, cell(&b->cc, r, "sm_target"));
		kb_build_bind_text(b->ins_cc, 6, srcs);
		if ((rc = kb_build_step_reset(b->db, b->ins_cc, "per_cc row", err)))
			return rc;
		int nkeys = 0;
		if ((rc = kb_build_link_keys(b->db, b->has_key, b->ins_ccsrc, ccs, NULL, srcs,
					     &nkeys, err)))
			return rc;
		int any_known = 0;
		for (size_t c = 0; c < b->cc.cols_len; c++) {
			const char *col = b->cc.header[c];
			if (strcmp(col, "compute_capability") == 0 ||
			    strcmp(col, "architecture") == 0 || strcmp(col, "sm_target") == 0 ||
			    strcmp(col, "sources") == 0)
				continue;
			const char *v = b->cc.rows[r][c], *st;
			double num;
			any_known |= status_of(v, &st);
			kb_build_bind_text(b->ins_ccfig, 1, ccs);
			kb_build_bind_text(b->ins_ccfig, 2, col);
			kb_build_bind_text(b->ins_ccfig, 3, st);
			if (strcmp(st, "known") == 0 && is_number(v, &num))
				sqlite3_bind_double(b->ins_ccfig, 4, num);
			else
				sqlite3_bind_null(b->ins_ccfig, 4);
			kb_build_bind_text(b->ins_ccfig, 5, strcmp(st, "unknown") ? v : "");
			if ((rc = kb_build_step_reset(b->db, b->ins_ccfig, "per_cc figure", err)))
				return rc;
		}
		if (any_known && nkeys == 0)
			return kf_err_set(err, KF_EINVAL,
					  "%s:%zu (CC %s): figures without a source: the "
					  "'sources' cell names no key of SOURCES.md",
					  b->cc_path, b->cc.lines[r], ccs);
	}
	return 0;
}

/* The first sm_XY[a|f] in an sm_target cell: "sm_90a (sm_90 baseline)". */
static void best_target(const char *t, char *out, size_t cap)
{
	const char *p = strstr(t, "sm_");
	size_t n = 0;
	out[0] = '\0';
	if (!p)
		return;
	while (p[n] && (isalnum((unsigned char)p[n]) || p[n] == '_') && n + 1 < cap) {
		out[n] = p[n];
		n++;
	}
	out[n] = '\0';
}

static int add_alias(struct build *b, const char *alias, const char *id, int rank, const char *why,
		     struct kf_err *err)
{
	char norm[KB_NAME_MAX_BYTES];
	kb_norm_name(alias, norm, sizeof norm);
	if (!norm[0])
		return kf_err_set(err, KF_EINVAL, "%s: alias '%s' of %s is empty once normalized",
				  b->al_path, alias, id);
	/* A '*' alias and an automatic one may coincide: keep the best rank. */
	sqlite3_bind_text(b->has_alias, 1, norm, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(b->has_alias, 2, id, -1, SQLITE_TRANSIENT);
	int old = -1;
	if (sqlite3_step(b->has_alias) == SQLITE_ROW)
		old = sqlite3_column_int(b->has_alias, 0);
	sqlite3_reset(b->has_alias);
	if (old >= 0 && old <= rank)
		return 0;
	if (rank == 0) { /* at most one canonical pick per alias */
		sqlite3_stmt *q = NULL;
		int rc = kb_build_prepare(b->db,
					  "SELECT gpu_id FROM aliases WHERE alias=? AND "
					  "rank=0 AND gpu_id<>?",
					  &q, err);
		if (rc)
			return rc;
		sqlite3_bind_text(q, 1, norm, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(q, 2, id, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(q) == SQLITE_ROW)
			rc = kf_err_set(err, KF_EINVAL,
					"%s: alias '%s' is marked canonical ('*') for both "
					"%s and %s",
					b->al_path, alias, (const char *)sqlite3_column_text(q, 0),
					id);
		sqlite3_finalize(q);
		if (rc)
			return rc;
	}
	kb_build_bind_text(b->ins_alias, 1, norm);
	kb_build_bind_text(b->ins_alias, 2, id);
	sqlite3_bind_int(b->ins_alias, 3, rank);
	return kb_build_step_reset(b->db, b->ins_alias, why, err);
}

/* Adds every sm_XY[a|f] word of text, and plain sm_XY for each. */
static int add_target_aliases(struct build *b, const char *text, const char *id, int rank,
			      struct kf_err *err)
{
	for (const char *p = strstr(text, "sm_"); p; p = strstr(p + 3, "sm_")) {
		char t[24];
		size_t n = 0;
		while (p[n] && (isalnum((unsigned char)p[n]) || p[n] == '_') && n + 1 < sizeof t) {
			t[n] = p[n];
			n++;
		}
		t[n] = '\0';
		int rc = add_alias(b, t, id, rank, "target alias", err);
		if (rc)
			return rc;
		if (n > 3 && (t[n - 1] == 'a' || t[n - 1] == 'f')) {
			t[n - 1] = '\0';
			if ((rc = add_alias(b, t, id, rank, "target alias", err)))
				return rc;
		}
	}
	return 0;
}

/* The figures of gpus.csv row r (GPU id; per_cc.csv row ccrow, or past
 * its end when the compute capability has none): each with its status,
 * value, source keys (every known figure needs one) and derivation. */
static int import_figures(struct build *b, size_t r, const char *id, size_t ccrow,
			  struct kf_err *err)
{
	int rc;
	const char *name = cell(&b->gpus, r, "name");
	size_t line = b->gpus.lines[r];
	const char *derived = cell(&b->gpus, r, "derived_fields");
	const char *src_prod = cell(&b->gpus, r, "sources_product");
	const char *src_cc = cell(&b->gpus, r, "sources_per_cc_limits");
	char what[160];
	for (size_t f = 0; f < FIELDS_LEN; f++) {
		const struct field_def *fd = &FIELDS[f];
		const char *v, *src, *srccol, *st;
		char deriv[512];
		double num;
		if (fd->from_cc) {
			v = ccrow < b->cc.rows_len ? cell(&b->cc, ccrow, fd->field) : "";
			src = ccrow < b->cc.rows_len ? cell(&b->cc, ccrow, "sources") : "";
			srccol = "per_cc.csv sources";
		} else {
			v = cell(&b->gpus, r, fd->field);
			if (!v)
				return kf_err_set(err, KF_EINVAL, "%s: no column '%s'",
						  b->gpus_path, fd->field);
			src = fd->kind == F_PRODUCT ? src_prod : src_cc;
			srccol =
				fd->kind == F_PRODUCT ? "sources_product" : "sources_per_cc_limits";
		}
		int known = status_of(v, &st);
		kb_build_bind_text(b->ins_fig, 1, id);
		kb_build_bind_text(b->ins_fig, 2, fd->field);
		kb_build_bind_text(b->ins_fig, 3, st);
		if (known && fd->kind != F_FEATURE && is_number(v, &num))
			sqlite3_bind_double(b->ins_fig, 4, num);
		else
			sqlite3_bind_null(b->ins_fig, 4);
		kb_build_bind_text(b->ins_fig, 5, known || strcmp(st, "n/a") == 0 ? v : "");
		kb_build_bind_text(b->ins_fig, 6, known ? src : NULL);
		kb_build_bind_text(b->ins_fig, 7,
				   derivation_for(derived, fd->field, deriv, sizeof deriv));
		if (known && (!src || !*src))
			return kf_err_set(err, KF_EINVAL,
					  "%s:%zu (%s): figure %s = %s has no source "
					  "(column %s is empty)",
					  b->gpus_path, line, name, fd->field, v, srccol);
		snprintf(what, sizeof what, "%s:%zu (%s) %s", b->gpus_path, line, name, fd->field);
		if ((rc = kb_build_step_reset(b->db, b->ins_fig, what, err)))
			return rc;
		if (!known)
			continue;
		int nkeys = 0;
		if ((rc = kb_build_link_keys(b->db, b->has_key, b->ins_figsrc, id, fd->field, src,
					     &nkeys, err)))
			return rc;
		if (nkeys == 0)
			return kf_err_set(err, KF_EINVAL,
					  "%s:%zu (%s): figure %s = %s has no source: "
					  "column %s names no key of SOURCES.md ('%.60s')",
					  b->gpus_path, line, name, fd->field, v, srccol, src);
	}

	return 0;
}

static int import_gpu(struct build *b, size_t r, int ord, struct kf_err *err)
{
	int rc;
	const char *name = cell(&b->gpus, r, "name");
	size_t line = b->gpus.lines[r];
	/* its aliases.csv entry */
	size_t ar = 0;
	while (ar < b->al.rows_len && strcmp(cell(&b->al, ar, "name"), name) != 0)
		ar++;
	if (ar == b->al.rows_len)
		return kf_err_set(
			err, KF_EINVAL,
			"%s:%zu: GPU '%s' has no line in %s (add id,name,aliases,conflicts)",
			b->gpus_path, line, name, b->al_path);
	const char *id = cell(&b->al, ar, "id");
	const char *ccs = cell(&b->gpus, r, "compute_capability");
	int maj = 0, mnr = 0;
	if (sscanf(ccs, "%d.%d", &maj, &mnr) != 2)
		return kf_err_set(err, KF_EINVAL, "%s:%zu (%s): compute_capability '%s' is not X.Y",
				  b->gpus_path, line, name, ccs);
	size_t ccrow = 0;
	while (ccrow < b->cc.rows_len &&
	       strcmp(cell(&b->cc, ccrow, "compute_capability"), ccs) != 0)
		ccrow++;
	const char *sm_target = cell(&b->gpus, r, "sm_target");
	char best[24];
	best_target(sm_target, best, sizeof best);
	const char *derived = cell(&b->gpus, r, "derived_fields");
	const char *src_prod = cell(&b->gpus, r, "sources_product");
	const char *src_cc = cell(&b->gpus, r, "sources_per_cc_limits");

	kb_build_bind_text(b->ins_gpu, 1, id);
	sqlite3_bind_int(b->ins_gpu, 2, ord);
	kb_build_bind_text(b->ins_gpu, 3, name);
	kb_build_bind_text(b->ins_gpu, 4, cell(&b->gpus, r, "form_factor"));
	kb_build_bind_text(b->ins_gpu, 5, cell(&b->gpus, r, "architecture"));
	kb_build_bind_text(b->ins_gpu, 6, ccs);
	sqlite3_bind_int(b->ins_gpu, 7, maj);
	sqlite3_bind_int(b->ins_gpu, 8, mnr);
	kb_build_bind_text(b->ins_gpu, 9, sm_target);
	kb_build_bind_text(b->ins_gpu, 10, best);
	kb_build_bind_text(b->ins_gpu, 11, derived);
	kb_build_bind_text(b->ins_gpu, 12, cell(&b->gpus, r, "notes"));
	kb_build_bind_text(b->ins_gpu, 13, src_prod);
	kb_build_bind_text(b->ins_gpu, 14, src_cc);
	char conf[64];
	snprintf(conf, sizeof conf, "%s", cell(&b->al, ar, "conflicts"));
	for (char *c = conf; *c; c++)
		if (*c == ';')
			*c = ',';
	kb_build_bind_text(b->ins_gpu, 15, conf);
	char what[160];
	snprintf(what, sizeof what, "%s:%zu (%s)", b->gpus_path, line, name);
	if ((rc = kb_build_step_reset(b->db, b->ins_gpu, what, err)))
		return rc;

	if ((rc = import_figures(b, r, id, ccrow, err)))
		return rc;

	/* aliases: explicit ones, then the automatic ones */
	char list[1024];
	snprintf(list, sizeof list, "%s", cell(&b->al, ar, "aliases"));
	char *save = NULL;
	for (char *a = strtok_r(list, ";", &save); a; a = strtok_r(NULL, ";", &save)) {
		int canon = a[0] == '*';
		if ((rc = add_alias(b, a + canon, id, canon ? 0 : 1 + ord, "alias", err)))
			return rc;
	}
	char cc_alias[32], arch1[64];
	snprintf(cc_alias, sizeof cc_alias, "compute_%d%d", maj, mnr);
	const char *arch = cell(&b->gpus, r, "architecture");
	size_t k = 0;
	while (arch[k] && arch[k] != ' ' && arch[k] != '(' && k + 1 < sizeof arch1) {
		arch1[k] = arch[k];
		k++;
	}
	arch1[k] = '\0';
	if ((rc = add_alias(b, id, id, 1 + ord, "id alias", err)) ||
	    (rc = add_alias(b, name, id, 1 + ord, "name alias", err)) ||
	    (rc = add_alias(b, arch, id, 1 + ord, "architecture alias", err)) ||
	    (rc = add_alias(b, arch1, id, 1 + ord, "architecture alias", err)) ||
	    (rc = add_alias(b, ccs, id, 1 + ord, "cc alias", err)) ||
	    (rc = add_alias(b, cc_alias, id, 1 + ord, "cc alias", err)) ||
	    (rc = add_target_aliases(b, sm_target, id, 1 + ord, err)))
		return rc;
	return 0;
}

static int import_gpus(struct build *b, struct kf_err *err)
{
	static const char *const need[] = {"name",
					   "form_factor",
					   "architecture",
					   "compute_capability",
					   "sm_target",
					   "derived_fields",
					   "notes",
					   "sources_product",
					   "sources_per_cc_limits"};
	for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
		if (kb_csv_col(&b->gpus, need[i]) < 0)
			return kf_err_set(err, KF_EINVAL, "%s: no column '%s'", b->gpus_path,
					  need[i]);
	static const char *const aneed[] = {"id", "name", "aliases", "conflicts"};
	for (size_t i = 0; i < 4; i++)
		if (kb_csv_col(&b->al, aneed[i]) < 0)
			return kf_err_set(err, KF_EINVAL, "%s: no column '%s'", b->al_path,
					  aneed[i]);
	for (size_t r = 0; r < b->gpus.rows_len; r++) {
		int rc = import_gpu(b, r, (int)r, err);
		if (rc)
			return rc;
	}
	/* every alias line names a GPU, and every conflict id exists */
	for (size_t ar = 0; ar < b->al.rows_len; ar++) {
		const char *nm = cell(&b->al, ar, "name");
		size_t r = 0;
		while (r < b->gpus.rows_len && strcmp(cell(&b->gpus, r, "name"), nm))
			r++;
		if (r == b->gpus.rows_len)
			return kf_err_set(err, KF_EINVAL, "%s:%zu: '%s' is no GPU name of gpus.csv",
					  b->al_path, b->al.lines[ar], nm);
	}
	return 0;
}

static int check_conflict_ids(struct build *b, struct kf_err *err)
{
	sqlite3_stmt *q = NULL;
	int rc = kb_build_prepare(b->db, "SELECT 1 FROM conflicts WHERE id=?", &q, err);
	if (rc)
		return rc;
	for (size_t ar = 0; ar < b->al.rows_len && !rc; ar++) {
		char list[64];
		snprintf(list, sizeof list, "%s", cell(&b->al, ar, "conflicts"));
		char *save = NULL;
		for (char *c = strtok_r(list, ";", &save); c && !rc;
		     c = strtok_r(NULL, ";", &save)) {
			sqlite3_bind_text(q, 1, c, -1, SQLITE_TRANSIENT);
			if (sqlite3_step(q) != SQLITE_ROW)
				rc = kf_err_set(err, KF_EINVAL,
						"%s:%zu: conflict '%s' is not in SOURCES.md",
						b->al_path, b->al.lines[ar], c);
			sqlite3_reset(q);
		}
	}
	sqlite3_finalize(q);
	return rc;
}

static int load_csv(const char *path, struct kb_csv *csv, struct kf_err *err)
{
	char *text = NULL;
	size_t len = 0;
	int rc = kb_read_file(path, KB_FILE_MAX_BYTES, &text, &len, err);
	if (rc)
		return rc;
	rc = kb_csv_parse(path, text, csv, err);
	free(text);
	return rc;
}

int kb_build(const char *src_dir, const char *out_path, struct kf_err *err)
{
	int rc = 0;
	struct build b;
	char p_schema[4096], p_gpus[4096], p_cc[4096], p_src[4096], p_al[4096], p_guides[4096],
		p_figsrc[4096], tmp[4096];
	char *schema = NULL;
	size_t slen = 0;

	memset(&b, 0, sizeof b);
	if (!src_dir || !out_path)
		return kf_err_set(err, KF_EINVAL, "kb_build: src_dir and out_path are required");
	snprintf(p_schema, sizeof p_schema, "%s/schema.sql", src_dir);
	snprintf(p_gpus, sizeof p_gpus, "%s/gpu-facts/gpus.csv", src_dir);
	snprintf(p_cc, sizeof p_cc, "%s/gpu-facts/per_cc.csv", src_dir);
	snprintf(p_src, sizeof p_src, "%s/gpu-facts/SOURCES.md", src_dir);
	snprintf(p_al, sizeof p_al, "%s/aliases.csv", src_dir);
	snprintf(p_figsrc, sizeof p_figsrc, "%s/gpu-facts/figure_sources.csv", src_dir);
	snprintf(p_guides, sizeof p_guides, "%s/guides", src_dir);
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", out_path) >= sizeof tmp)
		return kf_err_set(err, KF_EINVAL, "output path too long");
	b.gpus_path = p_gpus;
	b.cc_path = p_cc;
	b.al_path = p_al;

	if ((rc = kb_read_file(p_schema, KB_FILE_MAX_BYTES, &schema, &slen, err)) ||
	    (rc = load_csv(p_gpus, &b.gpus, err)) || (rc = load_csv(p_cc, &b.cc, err)) ||
	    (rc = load_csv(p_al, &b.al, err)))
		goto out;

	remove(tmp);
	if (sqlite3_open_v2(tmp, &b.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
	    SQLITE_OK) {
		rc = kf_err_set(err, KF_EIO, "%s: cannot create: %s", tmp,
				b.db ? sqlite3_errmsg(b.db) : "out of memory");
		goto out;
	}
	if ((rc = kb_build_exec(b.db,
				"PRAGMA page_size=4096; PRAGMA journal_mode=OFF; "
				"PRAGMA synchronous=OFF; PRAGMA foreign_keys=ON;",
				"pragmas", err)) ||
	    (rc = kb_build_exec(b.db, schema, p_schema, err)) ||
	    (rc = kb_build_exec(b.db, "BEGIN", "begin", err)))
		goto out;

	/* metadata of the figure columns */
	sqlite3_stmt *fst = NULL;
	if ((rc = kb_build_prepare(b.db, "INSERT INTO fields VALUES (?,?,?,?,?)", &fst, err)))
		goto out;
	for (size_t f = 0; f < FIELDS_LEN && !rc; f++) {
		kb_build_bind_text(fst, 1, FIELDS[f].field);
		sqlite3_bind_int(fst, 2, (int)f);
		kb_build_bind_text(fst, 3, FIELDS[f].label);
		kb_build_bind_text(fst, 4, FIELDS[f].unit);
		kb_build_bind_text(fst, 5, KIND_NAME[FIELDS[f].kind]);
		rc = kb_build_step_reset(b.db, fst, "fields", err);
	}
	sqlite3_finalize(fst);
	if (rc)
		goto out;

	if ((rc = kb_build_import_sources_md(b.db, p_src, err)))
		goto out;
	if ((rc = kb_build_prepare(b.db, "SELECT 1 FROM sources WHERE key=?", &b.has_key, err)) ||
	    (rc = kb_build_prepare(b.db, "INSERT INTO gpu_figures VALUES (?,?,?,?,?,?,?)",
				   &b.ins_fig, err)) ||
	    (rc = kb_build_prepare(b.db, "INSERT OR IGNORE INTO figure_sources VALUES (?,?,?)",
				   &b.ins_figsrc, err)) ||
	    (rc = kb_build_prepare(b.db, "INSERT INTO per_cc VALUES (?,?,?,?,?,?)", &b.ins_cc,
				   err)) ||
	    (rc = kb_build_prepare(b.db, "INSERT INTO per_cc_figures VALUES (?,?,?,?,?)",
				   &b.ins_ccfig, err)) ||
	    (rc = kb_build_prepare(b.db, "INSERT OR IGNORE INTO per_cc_sources VALUES (?,?)",
				   &b.ins_ccsrc, err)) ||
	    (rc = kb_build_prepare(b.db, "INSERT INTO gpus VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
				   &b.ins_gpu, err)) ||
	    (rc = kb_build_prepare(b.db, "INSERT OR REPLACE INTO aliases VALUES (?,?,?)",
				   &b.ins_alias, err)) ||
	    (rc = kb_build_prepare(b.db, "SELECT rank FROM aliases WHERE alias=? AND gpu_id=?",
				   &b.has_alias, err)))
		goto out;
	if ((rc = import_per_cc(&b, err)) || (rc = import_gpus(&b, err)) ||
	    (rc = check_conflict_ids(&b, err)) ||
	    (rc = kb_build_figsrc_import(b.db, p_figsrc, err)))
		goto out;
	if ((rc = kb_build_import_guides(b.db, p_guides, err)))
		goto out;
	if ((rc = kb_build_exec(b.db,
				"INSERT INTO meta VALUES ('schema_version', '" KB_SCHEMA_VERSION
				"');"
				"INSERT INTO meta SELECT 'gpus', count(*) FROM gpus;"
				"INSERT INTO meta SELECT 'guides', count(*) FROM guides;"
				"INSERT INTO guides_fts(guides_fts) VALUES ('optimize');"
				"COMMIT;",
				"finish", err)))
		goto out;
	if ((rc = kb_build_exec(b.db, "VACUUM", "vacuum", err)))
		goto out;
out:
	sqlite3_finalize(b.has_key);
	sqlite3_finalize(b.ins_fig);
	sqlite3_finalize(b.ins_figsrc);
	sqlite3_finalize(b.ins_cc);
	sqlite3_finalize(b.ins_ccfig);
	sqlite3_finalize(b.ins_ccsrc);
	sqlite3_finalize(b.ins_gpu);
	sqlite3_finalize(b.ins_alias);
	sqlite3_finalize(b.has_alias);
	if (b.db && sqlite3_close(b.db) != SQLITE_OK && !rc)
		rc = kf_err_set(err, KF_EDB, "%s: close failed", tmp);
	if (!rc && rename(tmp, out_path) != 0)
		rc = kf_err_set(err, KF_EIO, "rename %s -> %s: %s", tmp, out_path, strerror(errno));
	if (rc)
		remove(tmp);
	kb_csv_fini(&b.gpus);
	kb_csv_fini(&b.cc);
	kb_csv_fini(&b.al);
	free(schema);
	return rc;
}
