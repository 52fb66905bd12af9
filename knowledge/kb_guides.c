/* kb_guides: guide search, read and list over the pooled read-only
 * connections of kb.c, and the kf_rank ranking function registered on each
 * of them. User text never reaches MATCH as syntax: it is reduced to quoted
 * phrases of ASCII words (build_match). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/kb_int.h"

/* ---- ranking ------------------------------------------------------------------ */

/* kf_rank(fts, w0, w1, ..., wcols, phrase_weights): per-field BM25. Each
 * column's term frequency is saturated on its own (k1 1.2, b 0.75 against
 * that column's average length), then weighted by w<col> and summed, times
 * the term's idf and its phrase weight (a space-separated list, one number
 * per phrase; missing ones are 1). Weighting before saturation (BM25F, and
 * FTS5's bm25()) let a word in a title count like ten in the body and
 * still cap at the same value, so a guide matching many generic words beat
 * the one whose title names the topic: "how do I time a CUDA kernel
 * accurately" put `measuring` 4th, "why is my reduction slow on H100" left
 * `warp-reductions` out of the top 10. The idf is Lucene's
 * log(1 + (N - n + 0.5) / (n + 0.5)), which stays positive; FTS5's own is
 * clamped to ~0 for a term in more than half the rows. Lower is better, as
 * with bm25(). */
#define RANK_MAX_PHRASES 64
#define RANK_MAX_COLS	 8

struct rank_aux {
	int phrases;
	double avgcl[RANK_MAX_COLS]; /* tokens per row, per column */
	double idf[RANK_MAX_PHRASES];
};

static int count_row(const Fts5ExtensionApi *api, Fts5Context *fts, void *ud)
{
	(void)api;
	(void)fts;
	(*(sqlite3_int64 *)ud)++;
	return SQLITE_OK;
}

/* The per-query statistics, computed once per statement (auxdata). */
static struct rank_aux *rank_aux_get(const Fts5ExtensionApi *api, Fts5Context *fts, int ncol)
{
	struct rank_aux *aux = api->xGetAuxdata(fts, 0);
	if (aux)
		return aux;
	sqlite3_int64 rows = 0;
	if (!(aux = sqlite3_malloc(sizeof *aux)))
		return NULL;
	memset(aux, 0, sizeof *aux);
	aux->phrases = api->xPhraseCount(fts);
	if (aux->phrases > RANK_MAX_PHRASES)
		aux->phrases = RANK_MAX_PHRASES;
	if (api->xRowCount(fts, &rows) != SQLITE_OK || rows <= 0)
		rows = 1;
	for (int c = 0; c < ncol; c++) {
		sqlite3_int64 t = 0;
		if (api->xColumnTotalSize(fts, c, &t) != SQLITE_OK)
			t = 0;
		aux->avgcl[c] = t > 0 ? (double)t / (double)rows : 1.0;
	}
	for (int p = 0; p < aux->phrases; p++) {
		sqlite3_int64 n = 0;
		if (api->xQueryPhrase(fts, p, &n, count_row) != SQLITE_OK)
			n = 0;
		aux->idf[p] = log(1.0 + ((double)rows - (double)n + 0.5) / ((double)n + 0.5));
	}
	if (api->xSetAuxdata(fts, aux, sqlite3_free) != SQLITE_OK)
		return NULL; /* FTS5 has freed aux */
	return aux;
}

static void kf_rank(const Fts5ExtensionApi *api, Fts5Context *fts, sqlite3_context *ctx, int nval,
		    sqlite3_value **vals)
{
	int ncol = api->xColumnCount(fts);
	if (ncol > RANK_MAX_COLS)
		ncol = RANK_MAX_COLS;
	struct rank_aux *aux = rank_aux_get(api, fts, ncol);
	if (!aux) {
		sqlite3_result_error_nomem(ctx);
		return;
	}
	double tf[RANK_MAX_PHRASES][RANK_MAX_COLS] = {{0}}, len[RANK_MAX_COLS] = {0};
	double colw[RANK_MAX_COLS], pw[RANK_MAX_PHRASES];
	for (int c = 0; c < ncol; c++) {
		int t = 0;
		len[c] = api->xColumnSize(fts, c, &t) == SQLITE_OK ? t : 0;
		colw[c] = c < nval ? sqlite3_value_double(vals[c]) : 1.0;
	}
	const char *ws = nval > ncol ? (const char *)sqlite3_value_text(vals[ncol]) : NULL;
	for (int p = 0; p < RANK_MAX_PHRASES; p++) {
		char *end = NULL;
		double w = ws ? strtod(ws, &end) : 1.0;
		if (ws && end == ws)
			ws = NULL, w = 1.0;
		else if (ws)
			ws = end;
		pw[p] = w;
	}
	int ninst = 0;
	if (api->xInstCount(fts, &ninst) != SQLITE_OK) {
		sqlite3_result_error(ctx, "kf_rank: instances", -1);
		return;
	}
	for (int i = 0; i < ninst; i++) {
		int ph = 0, col = 0, off = 0;
		if (api->xInst(fts, i, &ph, &col, &off) == SQLITE_OK && ph < RANK_MAX_PHRASES &&
		    col < ncol)
			tf[ph][col] += 1;
	}
	const double k1 = 1.2, b = 0.75;
	double score = 0;
	for (int p = 0; p < aux->phrases; p++)
		for (int c = 0; c < ncol; c++)
			if (tf[p][c] > 0)
				score += pw[p] * aux->idf[p] * colw[c] * tf[p][c] * (k1 + 1) /
					 (tf[p][c] + k1 * (1 - b + b * len[c] / aux->avgcl[c]));
	sqlite3_result_double(ctx, -score);
}

/* Registers kf_rank on db (FTS5's API pointer comes from SELECT fts5(?)). */
int kb_rank_register(sqlite3 *db)
{
	fts5_api *api = NULL;
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_pointer(st, 1, (void *)&api, "fts5_api_ptr", NULL);
	sqlite3_step(st);
	sqlite3_finalize(st);
	if (!api || api->iVersion < 2)
		return -1;
	return api->xCreateFunction(api, "kf_rank", NULL, kf_rank, NULL) == SQLITE_OK ? 0 : -1;
}

/* ---- guides ----------------------------------------------------------------- */

/* Copies src into dst (cap bytes), cutting at a UTF-8 character boundary. */
static void copy_utf8(char *dst, size_t cap, const unsigned char *src)
{
	const char *s = src ? (const char *)src : "";
	size_t n = strlen(s);
	if (n >= cap) {
		n = cap - 1;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(dst, s, n);
	dst[n] = '\0';
}

static int is_stopword(const char *w)
{
	static const char *const stop[] = {
		"a",	"an",	 "and",	 "are",	 "as",	  "at",	   "be",     "by",   "can",  "do",
		"does", "for",	 "from", "get",	 "how",	  "i",	   "if",     "in",   "is",   "it",
		"its",	"me",	 "my",	 "of",	 "on",	  "or",	   "should", "so",   "that", "the",
		"this", "to",	 "what", "when", "where", "which", "why",    "with", "you",  "your",
		"use",	"using", "we",	 "our",	 "make",  "want",  "need"};
	for (size_t i = 0; i < sizeof stop / sizeof stop[0]; i++)
		if (strcmp(w, stop[i]) == 0)
			return 1;
	return 0;
}

/* Words an agent uses for a topic the guides name otherwise. A query word
 * found in a group (compared after lower-casing, before stemming; FTS5's
 * porter stemmer then folds "timing" into "time") adds the group's other
 * members as extra phrases at SYN_WEIGHT of a typed word, so the guide that
 * says "measure" still ranks for "time", while the typed words stay ahead.
 * Groups are topics, not loose associations: every member must name the
 * same thing in kernel-writing usage. */
static const char *const SYNONYMS[][7] = {
	{"time", "timing", "measure", "benchmark", "events", NULL},
	{"slow", "slower", "fast", "faster", "speed", "speedup", NULL},
	{"profile", "profiler", "profiling", "ncu", "nsight", "metrics", NULL},
	{"moe", "experts", "expert", "mixture of experts", "grouped gemm", "routing", NULL},
	{"smem", "shared memory", NULL},
	{"gmem", "global memory", NULL},
	{"crash", "crashes", "illegal", "fault", "segfault", "compute sanitizer", NULL},
	{"hang", "hangs", "deadlock", "stuck", NULL},
	{"matmul", "gemm", "matrix multiply", NULL},
	{"disassembly", "sass", "cuobjdump", NULL},
	{"regs", "registers", NULL},
	{"blocks", "grid", NULL},
	{"reduction", "reduce", "sum", NULL},
	{"attn", "attention", NULL},
	{"quant", "quantization", "quantized", NULL},
	{"tc", "tensor core", "tensor cores", NULL},
};
#define SYN_WEIGHT  0.7
#define MATCH_TERMS 32

struct query_terms {
	int n;
	char term[MATCH_TERMS][64]; /* lower-case ASCII words, spaces between */
	double weight[MATCH_TERMS]; /* 1 typed, SYN_WEIGHT added by a synonym */
};

static int term_add(struct query_terms *t, const char *w, double weight)
{
	if (strlen(w) >= sizeof t->term[0])
		return 0; /* longer than any word the guides use: it matches nothing */
	for (int i = 0; i < t->n; i++)
		if (strcmp(t->term[i], w) == 0) {
			if (t->weight[i] < weight)
				t->weight[i] = weight;
			return 0;
		}
	if (t->n == MATCH_TERMS)
		return -1;
	snprintf(t->term[t->n], sizeof t->term[0], "%s", w);
	t->weight[t->n++] = weight;
	return 0;
}

static void synonyms_add(struct query_terms *t, const char *w)
{
	for (size_t g = 0; g < sizeof SYNONYMS / sizeof SYNONYMS[0]; g++) {
		int hit = 0;
		for (int i = 0; SYNONYMS[g][i] && !hit; i++)
			hit = strcmp(SYNONYMS[g][i], w) == 0;
		for (int i = 0; hit && SYNONYMS[g][i]; i++)
			if (term_add(t, SYNONYMS[g][i], SYN_WEIGHT))
				return;
	}
}

/* Builds the FTS5 query: each whitespace-separated word, reduced to ASCII
 * letters and digits (anything else becomes a space, so "cp.async" is the
 * phrase "cp async"), becomes a double-quoted phrase, then the synonyms of
 * the typed words; phrases are OR-ed. Nothing of the user's text can be an
 * FTS5 operator, column filter or quote. weights gets each phrase's weight
 * for kf_rank, space-separated; words the typed words for snippets.
 * Returns the number of phrases (0: nothing searchable). */
static int build_match(const char *q, char *out, size_t cap, int drop_stop, char *words,
		       size_t wcap, char *weights, size_t wtcap)
{
	struct query_terms t = {0};
	size_t at = 0, wat = 0;
	out[0] = '\0';
	words[0] = '\0';
	weights[0] = '\0';
	for (const char *p = q; *p && t.n < MATCH_TERMS;) {
		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		char word[KB_QUERY_MAX_BYTES + 1];
		size_t wn = 0, alnum = 0;
		while (*p && !isspace((unsigned char)*p)) {
			unsigned char c = (unsigned char)*p++;
			if (c < 0x80 && isalnum(c)) {
				word[wn++] = (char)tolower(c);
				alnum++;
			} else if (wn > 0 && word[wn - 1] != ' ') {
				word[wn++] = ' ';
			}
		}
		while (wn > 0 && word[wn - 1] == ' ')
			wn--;
		word[wn] = '\0';
		if (alnum == 0 || (drop_stop && is_stopword(word)))
			continue;
		term_add(&t, word, 1.0);
		int w = snprintf(words + wat, wcap - wat, "%s%s", wat ? " " : "", word);
		if (w > 0 && (size_t)w < wcap - wat)
			wat += (size_t)w;
	}
	for (int i = 0, typed = t.n; i < typed; i++)
		synonyms_add(&t, t.term[i]);
	for (int i = 0, wt = 0; i < t.n; i++) {
		int w = snprintf(out + at, cap - at, "%s\"%s\"", i ? " OR " : "", t.term[i]);
		if (w < 0 || (size_t)w >= cap - at)
			return i;
		at += (size_t)w;
		w = snprintf(weights + wt, wtcap - wt, "%s%g", i ? " " : "", t.weight[i]);
		if (w > 0 && (size_t)w < wtcap - wt)
			wt += w;
	}
	return t.n;
}

/* The CC (major*10+minor) an arch filter names: a target or a GPU alias. */
static int arch_filter_cc(const struct kb *kb, const char *arch, int *cc, struct kf_err *err)
{
	struct kb_arch a;
	if (kb_arch_parse(arch, &a, NULL) == 0) {
		*cc = a.major * 10 + a.minor;
		return 0;
	}
	const struct kb_gpu *g = NULL;
	struct kf_err e2;
	kf_err_clear(&e2);
	if (kb_gpu_find(kb, arch, &g, &e2) == 0) {
		*cc = g->cc_major * 10 + g->cc_minor;
		return 0;
	}
	return kf_err_set(err, KF_EINVAL,
			  "arch '%.60s' names no target or GPU: use sm_XY (e.g. sm_90), "
			  "X.Y, or a GPU/architecture name (h100, hopper)",
			  arch);
}

int kb_search_guides(struct kb *kb, const struct kb_search *q, struct kb_hit **hits, size_t *len,
		     struct kf_err *err)
{
	int rc = 0, cc = -1;
	struct conn *c = NULL;
	struct kb_hit *res = NULL;
	size_t n = 0;
	char match[KB_QUERY_MAX_BYTES * 3 + 256];

	*hits = NULL;
	*len = 0;
	if (!q || !q->query)
		return kf_err_set(err, KF_EINVAL, "query: required");
	size_t ql = strlen(q->query);
	if (ql > KB_QUERY_MAX_BYTES)
		return kf_err_set(err, KF_EINVAL,
				  "query: %zu bytes, more than the %d allowed; shorten it to "
				  "the key words",
				  ql, KB_QUERY_MAX_BYTES);
	const char *p = q->query;
	while (*p && isspace((unsigned char)*p))
		p++;
	if (!*p)
		return kf_err_set(
			err, KF_EINVAL,
			"query: empty; give words to search for, e.g. \"bank conflicts\"");
	int limit = q->limit == 0 ? 10 : q->limit;
	if (limit < 1 || limit > KB_SEARCH_MAX_LIMIT)
		return kf_err_set(err, KF_EINVAL, "limit: %d out of range 1..%d", q->limit,
				  KB_SEARCH_MAX_LIMIT);
	if (q->tag && strlen(q->tag) >= KB_NAME_MAX_BYTES)
		return kf_err_set(err, KF_EINVAL, "tag: longer than %d bytes",
				  KB_NAME_MAX_BYTES - 1);
	if (q->arch && *q->arch && (rc = arch_filter_cc(kb, q->arch, &cc, err)))
		return rc;
	char words[KB_QUERY_MAX_BYTES + 64], weights[MATCH_TERMS * 8];
	int terms = build_match(q->query, match, sizeof match, 1, words, sizeof words, weights,
				sizeof weights);
	if (terms == 0) /* only stopwords: search them after all */
		terms = build_match(q->query, match, sizeof match, 0, words, sizeof words, weights,
				    sizeof weights);
	if (terms == 0)
		return 0; /* nothing searchable (only punctuation): no hits */
	res = calloc((size_t)limit, sizeof *res);
	if (!res)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	if ((rc = kb_pool_get(kb, &c, err)))
		goto out;
	/* Two steps: rank every match, then cut a snippet from each returned
	 * guide's body (kb_snippet; FTS5's snippet() re-tokenizes whole bodies
	 * and cost ~80 us a hit). Column weights id 1, title 2, tags 1, body 1:
	 * with each column saturated on its own, a title word already adds a
	 * whole term's worth beside the body's; heavier titles (id 2, title 3,
	 * tags 2) lowered INDEX.md's mean reciprocal rank from 0.968 to 0.957. */
	if ((!c->search &&
	     sqlite3_prepare_v2(c->db,
				"SELECT id, title,"
				" kf_rank(guides_fts, 1.0, 2.0, 1.0, 1.0, ?5) AS score"
				" FROM guides_fts WHERE guides_fts MATCH ?1"
				" AND (?2 IS NULL OR id IN (SELECT guide_id FROM guide_tags"
				"  WHERE tag = lower(?2)))"
				" AND (?3 IS NULL OR id IN (SELECT guide_id FROM guide_archs"
				"  WHERE any = 1 OR cc = ?3 OR (plus = 1 AND cc <= ?3)"
				"  OR (fam = 1 AND cc / 10 = ?3 / 10 AND cc <= ?3)))"
				" ORDER BY score, id LIMIT ?4",
				-1, &c->search, NULL) != SQLITE_OK) ||
	    (!c->snippet && sqlite3_prepare_v2(c->db, "SELECT body FROM guides WHERE id = ?1", -1,
					       &c->snippet, NULL) != SQLITE_OK)) {
		rc = kf_err_set(err, KF_EDB, "guide search: %s", sqlite3_errmsg(c->db));
		goto out;
	}
	sqlite3_bind_text(c->search, 1, match, -1, SQLITE_TRANSIENT);
	if (q->tag && *q->tag)
		sqlite3_bind_text(c->search, 2, q->tag, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(c->search, 2);
	if (cc >= 0)
		sqlite3_bind_int(c->search, 3, cc);
	else
		sqlite3_bind_null(c->search, 3);
	sqlite3_bind_int(c->search, 4, limit);
	sqlite3_bind_text(c->search, 5, weights, -1, SQLITE_TRANSIENT);
	int s;
	while ((s = sqlite3_step(c->search)) == SQLITE_ROW && n < (size_t)limit) {
		struct kb_hit *h = &res[n];
		n++;
		copy_utf8(h->id, sizeof h->id, sqlite3_column_text(c->search, 0));
		copy_utf8(h->title, sizeof h->title, sqlite3_column_text(c->search, 1));
		h->score = sqlite3_column_double(c->search, 2);
	}
	if (s != SQLITE_ROW && s != SQLITE_DONE)
		rc = kf_err_set(err, KF_EDB, "guide search: %s", sqlite3_errmsg(c->db));
	for (size_t i = 0; !rc && i < n; i++) {
		sqlite3_bind_text(c->snippet, 1, res[i].id, -1, SQLITE_STATIC);
		if (sqlite3_step(c->snippet) == SQLITE_ROW) {
			const unsigned char *body = sqlite3_column_text(c->snippet, 0);
			char sn[sizeof res[i].snippet];
			kb_snippet(body ? (const char *)body : "", words, sn, sizeof sn);
			copy_utf8(res[i].snippet, sizeof res[i].snippet, (const unsigned char *)sn);
		}
		sqlite3_reset(c->snippet);
	}
	sqlite3_clear_bindings(c->snippet);
	sqlite3_reset(c->search);
	sqlite3_clear_bindings(c->search);
out:
	if (c)
		kb_pool_put(kb, c);
	if (rc) {
		free(res);
		return rc;
	}
	*hits = res;
	*len = n;
	return 0;
}

static char *dup_col(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	return strdup(t ? (const char *)t : "");
}

void kb_guide_free(struct kb_guide *g)
{
	if (!g)
		return;
	free(g->id);
	free(g->title);
	free(g->tags);
	free(g->archs);
	free(g->sources);
	free(g->body);
	free(g->links);
	free(g->related);
	free(g->checked);
	free(g);
}

int kb_guide_read(struct kb *kb, const char *id, struct kb_guide **out, struct kf_err *err)
{
	int rc = 0;
	struct conn *c = NULL;
	sqlite3_stmt *st = NULL;
	struct kb_guide *g = NULL;

	*out = NULL;
	if (!id || !*id)
		return kf_err_set(err, KF_EINVAL, "id: empty; give a guide id (see search_guides)");
	if (strlen(id) >= 64)
		return kf_err_set(err, KF_EINVAL, "id: longer than 63 bytes");
	if ((rc = kb_pool_get(kb, &c, err)))
		return rc;
	if (sqlite3_prepare_v2(c->db,
			       "SELECT id, title, tags, archs, sources, body, links, related,"
			       " checked FROM guides WHERE id = ?",
			       -1, &st, NULL) != SQLITE_OK) {
		rc = kf_err_set(err, KF_EDB, "guide read: %s", sqlite3_errmsg(c->db));
		goto out;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(st) != SQLITE_ROW) {
		sqlite3_finalize(st);
		st = NULL;
		/* closest ids for the message */
		const char *best[3];
		int scores[3];
		size_t bn = 0;
		char *keep[3] = {NULL, NULL, NULL};
		if (sqlite3_prepare_v2(c->db, "SELECT id FROM guides ORDER BY id", -1, &st, NULL) ==
		    SQLITE_OK) {
			char *all[512];
			size_t an = 0;
			while (sqlite3_step(st) == SQLITE_ROW && an < 512)
				all[an++] = dup_col(st, 0);
			for (size_t i = 0; i < an; i++)
				if (all[i]) {
					int d = kb_edit_distance(id, all[i]);
					if (strstr(all[i], id))
						d /= 2;
					kb_best_insert(best, scores, &bn, 3, all[i], d);
				}
			for (size_t i = 0; i < bn; i++)
				keep[i] = strdup(best[i]);
			for (size_t i = 0; i < an; i++)
				free(all[i]);
		}
		rc = kf_err_set(err, KF_ENOTFOUND,
				"unknown guide '%.60s'; closest: %s%s%s%s%s (search_guides "
				"finds guides by topic)",
				id, keep[0] ? keep[0] : "none", keep[1] ? ", " : "",
				keep[1] ? keep[1] : "", keep[2] ? ", " : "",
				keep[2] ? keep[2] : "");
		for (size_t i = 0; i < 3; i++)
			free(keep[i]);
		goto out;
	}
	g = calloc(1, sizeof *g);
	if (!g || !(g->id = dup_col(st, 0)) || !(g->title = dup_col(st, 1)) ||
	    !(g->tags = dup_col(st, 2)) || !(g->archs = dup_col(st, 3)) ||
	    !(g->sources = dup_col(st, 4)) || !(g->body = dup_col(st, 5)) ||
	    !(g->links = dup_col(st, 6)) || !(g->related = dup_col(st, 7)) ||
	    !(g->checked = dup_col(st, 8))) {
		rc = kf_err_set(err, KF_ENOMEM, "out of memory");
		goto out;
	}
	*out = g;
	g = NULL;
out:
	sqlite3_finalize(st);
	kb_pool_put(kb, c);
	kb_guide_free(g);
	return rc;
}

int kb_guide_list(struct kb *kb, const char *prefix, struct kb_guide_entry **out, size_t *len,
		  struct kf_err *err)
{
	int rc = 0;
	struct conn *c = NULL;
	sqlite3_stmt *st = NULL;
	struct kb_guide_entry *res = NULL;
	size_t n = 0, cap = 0;

	*out = NULL;
	*len = 0;
	if (prefix && strlen(prefix) >= 64)
		return kf_err_set(err, KF_EINVAL, "prefix: longer than 63 bytes");
	if ((rc = kb_pool_get(kb, &c, err)))
		return rc;
	if (sqlite3_prepare_v2(c->db,
			       "SELECT id, title FROM guides WHERE substr(id, 1, length(?1))"
			       " = ?1 ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK) {
		rc = kf_err_set(err, KF_EDB, "guide list: %s", sqlite3_errmsg(c->db));
		goto out;
	}
	sqlite3_bind_text(st, 1, prefix ? prefix : "", -1, SQLITE_TRANSIENT);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct kb_guide_entry *r = realloc(res, nc * sizeof *r);
			if (!r) {
				rc = kf_err_set(err, KF_ENOMEM, "out of memory");
				goto out;
			}
			res = r;
			cap = nc;
		}
		copy_utf8(res[n].id, sizeof res[n].id, sqlite3_column_text(st, 0));
		copy_utf8(res[n].title, sizeof res[n].title, sqlite3_column_text(st, 1));
		n++;
	}
	*out = res;
	*len = n;
	res = NULL;
out:
	sqlite3_finalize(st);
	kb_pool_put(kb, c);
	free(res);
	return rc;
}
