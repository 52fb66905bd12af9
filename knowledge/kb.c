/* kb: the knowledge base at run time. kb_open loads the GPU tables (gpus,
 * figures, aliases, per-CC limits, sources, conflicts) into immutable memory,
 * so GPU lookups take no lock; guides are queried through a pool of
 * read-only sqlite connections (immutable=1: no file locks), each used by one
 * thread at a time under a mutex-guarded free list. */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/kb_int.h"

#define POOL_MAX 8

struct conn {
	sqlite3 *db;
	sqlite3_stmt *search;
	sqlite3_stmt *snippet;
	int busy;
};

struct alias {
	const char *alias; /* normalized */
	int gpu;           /* index into gpus */
	int rank;
};

struct cc_row {
	int major, minor;
	const char *sources;
	size_t figures_len;
	const char **fields; /* per_cc.csv column names */
	int *status;
	double *values;
};

struct chunk {
	struct chunk *next;
	size_t used, cap;
	char data[];
};

struct kb {
	char *uri;
	struct chunk *arena;
	struct kb_gpu *gpus;
	size_t gpus_len;
	struct alias *aliases;
	size_t aliases_len;
	struct kb_source *sources;
	size_t sources_len;
	struct kb_conflict *conflicts;
	size_t conflicts_len;
	struct cc_row *ccs;
	size_t ccs_len;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct conn pool[POOL_MAX];
	int pool_len;
};

/* ---- arena ------------------------------------------------------------------ */

static void *arena_alloc(struct kb *kb, size_t n)
{
	n = (n + 7) & ~(size_t)7;
	if (!kb->arena || kb->arena->cap - kb->arena->used < n) {
		size_t cap = n > 65536 ? n : 65536;
		struct chunk *c = malloc(sizeof *c + cap);
		if (!c)
			return NULL;
		c->next = kb->arena;
		c->used = 0;
		c->cap = cap;
		kb->arena = c;
	}
	void *p = kb->arena->data + kb->arena->used;
	kb->arena->used += n;
	memset(p, 0, n);
	return p;
}

static const char *arena_str(struct kb *kb, const unsigned char *s)
{
	const char *t = s ? (const char *)s : "";
	size_t n = strlen(t) + 1;
	char *p = arena_alloc(kb, n);
	if (p)
		memcpy(p, t, n);
	return p;
}

/* ---- ranking ------------------------------------------------------------------ */

/* kf_rank(fts, w0, w1, ...): BM25 like FTS5's bm25() (k1 1.2, b 0.75,
 * column-weighted term frequency, whole-row length), but with the Lucene
 * idf log(1 + (N - n + 0.5) / (n + 0.5)), which stays positive. FTS5's own
 * idf is clamped to ~0 for a term in more than half the rows, so in a
 * corpus where "registers" or "shared" appear in most guides a question
 * made of such words ranked at random. Lower is better, as with bm25(). */
struct rank_aux {
	int phrases;
	double avgdl;
	double idf[64];
};

static int count_row(const Fts5ExtensionApi *api, Fts5Context *fts, void *ud)
{
	(void)api;
	(void)fts;
	(*(sqlite3_int64 *)ud)++;
	return SQLITE_OK;
}

static void kf_rank(const Fts5ExtensionApi *api, Fts5Context *fts,
		    sqlite3_context *ctx, int nval, sqlite3_value **vals)
{
	struct rank_aux *aux = api->xGetAuxdata(fts, 0);
	int ncol = api->xColumnCount(fts);
	if (!aux) {
		sqlite3_int64 rows = 0, tokens = 0;
		aux = sqlite3_malloc(sizeof *aux);
		if (!aux) {
			sqlite3_result_error_nomem(ctx);
			return;
		}
		memset(aux, 0, sizeof *aux);
		aux->phrases = api->xPhraseCount(fts);
		if (aux->phrases > 64)
			aux->phrases = 64;
		if (api->xRowCount(fts, &rows) != SQLITE_OK || rows <= 0)
			rows = 1;
		for (int c = 0; c < ncol; c++) {
			sqlite3_int64 t = 0;
			if (api->xColumnTotalSize(fts, c, &t) == SQLITE_OK)
				tokens += t;
		}
		aux->avgdl = (double)tokens / (double)rows;
		for (int p = 0; p < aux->phrases; p++) {
			sqlite3_int64 n = 0;
			if (api->xQueryPhrase(fts, p, &n, count_row) != SQLITE_OK)
				n = 0;
			aux->idf[p] = log(1.0 + ((double)rows - (double)n + 0.5) /
						  ((double)n + 0.5));
		}
		if (api->xSetAuxdata(fts, aux, sqlite3_free) != SQLITE_OK) {
			sqlite3_result_error_code(ctx, SQLITE_NOMEM);
			return;
		}
	}
	double freq[64] = {0}, dl = 0;
	int ninst = 0;
	if (api->xInstCount(fts, &ninst) != SQLITE_OK) {
		sqlite3_result_error(ctx, "kf_rank: instances", -1);
		return;
	}
	for (int i = 0; i < ninst; i++) {
		int ph = 0, col = 0, off = 0;
		if (api->xInst(fts, i, &ph, &col, &off) != SQLITE_OK || ph >= 64)
			continue;
		double w = col < nval ? sqlite3_value_double(vals[col]) : 1.0;
		freq[ph] += w;
	}
	for (int c = 0; c < ncol; c++) {
		int t = 0;
		if (api->xColumnSize(fts, c, &t) == SQLITE_OK)
			dl += t;
	}
	const double k1 = 1.2, b = 0.75;
	double score = 0;
	for (int p = 0; p < aux->phrases; p++)
		if (freq[p] > 0)
			score += aux->idf[p] * freq[p] * (k1 + 1) /
				 (freq[p] + k1 * (1 - b + b * dl / (aux->avgdl > 0 ? aux->avgdl : 1)));
	sqlite3_result_double(ctx, -score);
}

/* Registers kf_rank on db (FTS5's API pointer comes from SELECT fts5(?)). */
static int rank_register(sqlite3 *db)
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

/* ---- connections ------------------------------------------------------------ */

static int conn_open(const struct kb *kb, sqlite3 **db, struct kf_err *err)
{
	int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
	if (sqlite3_open_v2(kb->uri, db, flags, NULL) != SQLITE_OK) {
		int rc = kf_err_set(err, KF_EIO, "knowledge base %s: %s", kb->uri,
				    *db ? sqlite3_errmsg(*db) : "out of memory");
		sqlite3_close(*db);
		*db = NULL;
		return rc;
	}
	if (rank_register(*db) != 0) {
		int rc = kf_err_set(err, KF_EDB, "knowledge base: sqlite lacks FTS5 (%s)",
				    sqlite3_errmsg(*db));
		sqlite3_close(*db);
		*db = NULL;
		return rc;
	}
	return 0;
}

static int pool_get(struct kb *kb, struct conn **out, struct kf_err *err)
{
	int rc = 0;
	pthread_mutex_lock(&kb->mu);
	for (;;) {
		for (int i = 0; i < kb->pool_len; i++)
			if (!kb->pool[i].busy) {
				kb->pool[i].busy = 1;
				*out = &kb->pool[i];
				goto out;
			}
		if (kb->pool_len < POOL_MAX) {
			struct conn *c = &kb->pool[kb->pool_len];
			if ((rc = conn_open(kb, &c->db, err)))
				goto out;
			c->busy = 1;
			kb->pool_len++;
			*out = c;
			goto out;
		}
		pthread_cond_wait(&kb->cv, &kb->mu);
	}
out:
	pthread_mutex_unlock(&kb->mu);
	return rc;
}

static void pool_put(struct kb *kb, struct conn *c)
{
	pthread_mutex_lock(&kb->mu);
	c->busy = 0;
	pthread_cond_signal(&kb->cv);
	pthread_mutex_unlock(&kb->mu);
}

/* ---- loading -------------------------------------------------------------- */

static int q_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st,
		     struct kf_err *err)
{
	if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
		return kf_err_set(err, KF_EDB,
				  "knowledge base: %s (is it a kforge knowledge.db? "
				  "rebuild with `make`)",
				  sqlite3_errmsg(db));
	return 0;
}

static int load_gpus(struct kb *kb, sqlite3 *db, struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = q_prepare(db,
			   "SELECT id, name, form_factor, architecture, compute_capability,"
			   " cc_major, cc_minor, sm_target, best_target, notes,"
			   " derived_fields, sources_product, sources_per_cc_limits,"
			   " conflicts, (SELECT count(*) FROM gpus),"
			   " (SELECT group_concat(alias, ', ') FROM (SELECT alias FROM"
			   "  aliases a WHERE a.gpu_id = g.id ORDER BY alias))"
			   " FROM gpus g ORDER BY ord",
			   &st, err);
	if (rc)
		return rc;
	size_t i = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (!kb->gpus) {
			kb->gpus_len = (size_t)sqlite3_column_int(st, 14);
			kb->gpus = arena_alloc(kb, kb->gpus_len * sizeof *kb->gpus);
			if (!kb->gpus) {
				rc = kf_err_set(err, KF_ENOMEM, "out of memory");
				break;
			}
		}
		if (i >= kb->gpus_len)
			break;
		struct kb_gpu *g = &kb->gpus[i++];
		g->id = arena_str(kb, sqlite3_column_text(st, 0));
		g->name = arena_str(kb, sqlite3_column_text(st, 1));
		g->form_factor = arena_str(kb, sqlite3_column_text(st, 2));
		g->architecture = arena_str(kb, sqlite3_column_text(st, 3));
		g->compute_capability = arena_str(kb, sqlite3_column_text(st, 4));
		g->cc_major = sqlite3_column_int(st, 5);
		g->cc_minor = sqlite3_column_int(st, 6);
		g->sm_target = arena_str(kb, sqlite3_column_text(st, 7));
		g->best_target = arena_str(kb, sqlite3_column_text(st, 8));
		g->notes = arena_str(kb, sqlite3_column_text(st, 9));
		g->derived_fields = arena_str(kb, sqlite3_column_text(st, 10));
		g->sources_product = arena_str(kb, sqlite3_column_text(st, 11));
		g->sources_per_cc_limits = arena_str(kb, sqlite3_column_text(st, 12));
		g->conflicts = arena_str(kb, sqlite3_column_text(st, 13));
		g->aliases = arena_str(kb, sqlite3_column_text(st, 15));
		if (!g->aliases) {
			rc = kf_err_set(err, KF_ENOMEM, "out of memory");
			break;
		}
	}
	sqlite3_finalize(st);
	if (rc)
		return rc;
	if (kb->gpus_len == 0 || i != kb->gpus_len)
		return kf_err_set(err, KF_EDB, "knowledge base has no GPUs: rebuild with `make`");

	/* figures, in (gpu order, field order) */
	if ((rc = q_prepare(db,
			    "SELECT g.ord, f.field, d.label, d.unit, d.kind, f.status,"
			    " f.value, f.text, ifnull(f.source, ''), f.derivation,"
			    " ifnull((SELECT group_concat(source_key, ',') FROM (SELECT"
			    "  source_key FROM figure_sources s WHERE s.gpu_id = f.gpu_id"
			    "  AND s.field = f.field ORDER BY source_key)), ''),"
			    " (SELECT count(*) FROM fields)"
			    " FROM gpu_figures f JOIN gpus g ON g.id = f.gpu_id"
			    " JOIN fields d ON d.field = f.field ORDER BY g.ord, d.ord",
			    &st, err)))
		return rc;
	while (sqlite3_step(st) == SQLITE_ROW) {
		size_t gi = (size_t)sqlite3_column_int(st, 0);
		size_t nf = (size_t)sqlite3_column_int(st, 11);
		if (gi >= kb->gpus_len || nf > KB_MAX_FIGURES) {
			rc = kf_err_set(err, KF_EDB, "knowledge base: bad figure row");
			break;
		}
		struct kb_gpu *g = &kb->gpus[gi];
		if (!g->figures) {
			g->figures = arena_alloc(kb, nf * sizeof *g->figures);
			if (!g->figures) {
				rc = kf_err_set(err, KF_ENOMEM, "out of memory");
				break;
			}
		}
		if (g->figures_len >= nf)
			continue;
		struct kb_figure *f = (struct kb_figure *)&g->figures[g->figures_len++];
		f->field = arena_str(kb, sqlite3_column_text(st, 1));
		f->label = arena_str(kb, sqlite3_column_text(st, 2));
		f->unit = arena_str(kb, sqlite3_column_text(st, 3));
		const char *kind = (const char *)sqlite3_column_text(st, 4);
		f->kind = strcmp(kind, "product") == 0  ? KB_FIG_PRODUCT
			  : strcmp(kind, "per_cc") == 0 ? KB_FIG_PER_CC
							: KB_FIG_FEATURE;
		const char *status = (const char *)sqlite3_column_text(st, 5);
		f->status = strcmp(status, "known") == 0 ? KB_FIG_KNOWN
			    : strcmp(status, "n/a") == 0 ? KB_FIG_NA
							 : KB_FIG_UNKNOWN;
		f->is_number = sqlite3_column_type(st, 6) != SQLITE_NULL;
		f->value = f->is_number ? sqlite3_column_double(st, 6) : 0;
		f->text = arena_str(kb, sqlite3_column_text(st, 7));
		f->source = arena_str(kb, sqlite3_column_text(st, 8));
		f->derivation = arena_str(kb, sqlite3_column_text(st, 9));
		f->source_keys = arena_str(kb, sqlite3_column_text(st, 10));
		if (!f->source_keys) {
			rc = kf_err_set(err, KF_ENOMEM, "out of memory");
			break;
		}
	}
	sqlite3_finalize(st);
	return rc;
}

static int load_aliases(struct kb *kb, sqlite3 *db, struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = q_prepare(db,
			   "SELECT a.alias, g.ord, a.rank, (SELECT count(*) FROM aliases)"
			   " FROM aliases a JOIN gpus g ON g.id = a.gpu_id"
			   " ORDER BY a.alias, a.rank, g.ord",
			   &st, err);
	if (rc)
		return rc;
	size_t i = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (!kb->aliases) {
			kb->aliases_len = (size_t)sqlite3_column_int(st, 3);
			kb->aliases = arena_alloc(kb, kb->aliases_len * sizeof *kb->aliases);
			if (!kb->aliases) {
				rc = kf_err_set(err, KF_ENOMEM, "out of memory");
				break;
			}
		}
		if (i >= kb->aliases_len)
			break;
		struct alias *a = &kb->aliases[i++];
		a->alias = arena_str(kb, sqlite3_column_text(st, 0));
		a->gpu = sqlite3_column_int(st, 1);
		a->rank = sqlite3_column_int(st, 2);
		if (!a->alias || a->gpu < 0 || (size_t)a->gpu >= kb->gpus_len) {
			rc = kf_err_set(err, KF_EDB, "knowledge base: bad alias row");
			break;
		}
	}
	kb->aliases_len = i;
	sqlite3_finalize(st);
	return rc;
}

static int load_small(struct kb *kb, sqlite3 *db, struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = q_prepare(db,
			   "SELECT key, title, where_read, (SELECT count(*) FROM sources)"
			   " FROM sources ORDER BY key",
			   &st, err);
	if (rc)
		return rc;
	size_t i = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (!kb->sources) {
			kb->sources_len = (size_t)sqlite3_column_int(st, 3);
			kb->sources = arena_alloc(kb, kb->sources_len * sizeof *kb->sources);
		}
		if (!kb->sources || i >= kb->sources_len)
			break;
		struct kb_source *s = &kb->sources[i++];
		s->key = arena_str(kb, sqlite3_column_text(st, 0));
		s->title = arena_str(kb, sqlite3_column_text(st, 1));
		s->where = arena_str(kb, sqlite3_column_text(st, 2));
	}
	kb->sources_len = i;
	sqlite3_finalize(st);
	if ((rc = q_prepare(db,
			    "SELECT id, title || ': ' || text, (SELECT count(*) FROM"
			    " conflicts) FROM conflicts ORDER BY length(id), id",
			    &st, err)))
		return rc;
	i = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (!kb->conflicts) {
			kb->conflicts_len = (size_t)sqlite3_column_int(st, 2);
			kb->conflicts =
				arena_alloc(kb, kb->conflicts_len * sizeof *kb->conflicts);
		}
		if (!kb->conflicts || i >= kb->conflicts_len)
			break;
		kb->conflicts[i].id = arena_str(kb, sqlite3_column_text(st, 0));
		kb->conflicts[i].text = arena_str(kb, sqlite3_column_text(st, 1));
		i++;
	}
	kb->conflicts_len = i;
	sqlite3_finalize(st);

	/* per-CC rows with their figures */
	if ((rc = q_prepare(db,
			    "SELECT c.cc_major, c.cc_minor, c.sources, f.field,"
			    " f.status, f.value, (SELECT count(*) FROM per_cc),"
			    " (SELECT count(*) FROM per_cc_figures x WHERE x.cc = c.cc)"
			    " FROM per_cc c JOIN per_cc_figures f ON f.cc = c.cc"
			    " ORDER BY c.cc_major, c.cc_minor, f.field",
			    &st, err)))
		return rc;
	struct cc_row *cur = NULL;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (!kb->ccs) {
			size_t n = (size_t)sqlite3_column_int(st, 6);
			kb->ccs = arena_alloc(kb, n * sizeof *kb->ccs);
			if (!kb->ccs) {
				rc = kf_err_set(err, KF_ENOMEM, "out of memory");
				break;
			}
			kb->ccs_len = 0;
		}
		int maj = sqlite3_column_int(st, 0), mnr = sqlite3_column_int(st, 1);
		if (!cur || cur->major != maj || cur->minor != mnr) {
			cur = &kb->ccs[kb->ccs_len++];
			size_t nf = (size_t)sqlite3_column_int(st, 7);
			cur->major = maj;
			cur->minor = mnr;
			cur->sources = arena_str(kb, sqlite3_column_text(st, 2));
			cur->fields = arena_alloc(kb, nf * sizeof *cur->fields);
			cur->status = arena_alloc(kb, nf * sizeof *cur->status);
			cur->values = arena_alloc(kb, nf * sizeof *cur->values);
			if (!cur->fields || !cur->status || !cur->values) {
				rc = kf_err_set(err, KF_ENOMEM, "out of memory");
				break;
			}
		}
		size_t k = cur->figures_len++;
		cur->fields[k] = arena_str(kb, sqlite3_column_text(st, 3));
		cur->status[k] = strcmp((const char *)sqlite3_column_text(st, 4),
					"known") == 0 &&
				 sqlite3_column_type(st, 5) != SQLITE_NULL;
		cur->values[k] = sqlite3_column_double(st, 5);
	}
	sqlite3_finalize(st);
	return rc;
}

int kb_open(const char *path, struct kb **out, struct kf_err *err)
{
	int rc = 0;
	sqlite3 *db = NULL;
	struct kb *kb = NULL;
	FILE *f;

	*out = NULL;
	if (!path || !*path)
		return kf_err_set(err, KF_EINVAL, "knowledge base path is empty");
	if (!(f = fopen(path, "rb")))
		return kf_err_set(err, KF_EIO,
				  "knowledge base %s cannot be opened (build it with `make`, "
				  "or pass --kb FILE)",
				  path);
	fclose(f);
	kb = calloc(1, sizeof *kb);
	if (!kb)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	pthread_mutex_init(&kb->mu, NULL);
	pthread_cond_init(&kb->cv, NULL);
	/* URI form so immutable=1 can skip locking; escape what URIs reserve. */
	size_t pl = strlen(path);
	kb->uri = malloc(pl * 3 + 32);
	if (!kb->uri) {
		rc = kf_err_set(err, KF_ENOMEM, "out of memory");
		goto out;
	}
	char *u = kb->uri;
	memcpy(u, "file:", 5);
	u += 5;
	for (const char *p = path; *p; p++) {
		if (*p == '%' || *p == '?' || *p == '#') {
			snprintf(u, 4, "%%%02X", (unsigned char)*p);
			u += 3;
		} else {
			*u++ = *p;
		}
	}
	memcpy(u, "?immutable=1", 13);
	if ((rc = conn_open(kb, &db, err)))
		goto out;
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='schema_version'",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW ||
	    strcmp((const char *)sqlite3_column_text(st, 0), KB_SCHEMA_VERSION) != 0) {
		sqlite3_finalize(st);
		rc = kf_err_set(err, KF_EDB,
				"%s is not a kforge knowledge base of schema version %s "
				"(rebuild it with `make`)",
				path, KB_SCHEMA_VERSION);
		goto out;
	}
	sqlite3_finalize(st);
	if ((rc = load_gpus(kb, db, err)) || (rc = load_aliases(kb, db, err)) ||
	    (rc = load_small(kb, db, err)))
		goto out;
	/* the first connection joins the pool */
	kb->pool[0].db = db;
	kb->pool_len = 1;
	db = NULL;
	*out = kb;
	kb = NULL;
out:
	sqlite3_close(db);
	kb_close(kb);
	return rc;
}

void kb_close(struct kb *kb)
{
	if (!kb)
		return;
	for (int i = 0; i < kb->pool_len; i++) {
		sqlite3_finalize(kb->pool[i].search);
		sqlite3_finalize(kb->pool[i].snippet);
		sqlite3_close(kb->pool[i].db);
	}
	while (kb->arena) {
		struct chunk *n = kb->arena->next;
		free(kb->arena);
		kb->arena = n;
	}
	pthread_mutex_destroy(&kb->mu);
	pthread_cond_destroy(&kb->cv);
	free(kb->uri);
	free(kb);
}

/* ---- GPUs ------------------------------------------------------------------- */

size_t kb_gpu_count(const struct kb *kb)
{
	return kb ? kb->gpus_len : 0;
}

const struct kb_gpu *kb_gpu_at(const struct kb *kb, size_t i)
{
	return kb && i < kb->gpus_len ? &kb->gpus[i] : NULL;
}

const struct kb_figure *kb_gpu_figure(const struct kb_gpu *gpu, const char *field)
{
	for (size_t i = 0; gpu && i < gpu->figures_len; i++)
		if (strcmp(gpu->figures[i].field, field) == 0)
			return &gpu->figures[i];
	return NULL;
}

/* First index of alias a in the sorted alias table, or -1. */
static long alias_find(const struct kb *kb, const char *a)
{
	size_t lo = 0, hi = kb->aliases_len;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (strcmp(kb->aliases[mid].alias, a) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < kb->aliases_len && strcmp(kb->aliases[lo].alias, a) == 0
		       ? (long)lo
		       : -1;
}

size_t kb_gpu_suggest(const struct kb *kb, const char *name, const char **ids,
		      size_t cap)
{
	char norm[KB_NAME_MAX_BYTES];
	const char *best[8];
	int scores[8];
	size_t n = 0;
	if (cap > 8)
		cap = 8;
	kb_norm_name(name, norm, sizeof norm);
	for (size_t i = 0; i < kb->aliases_len; i++) {
		const char *a = kb->aliases[i].alias;
		int d = kb_edit_distance(norm, a);
		/* containment either way is a strong hint ("h10" in "h100") */
		if (norm[0] && (strstr(a, norm) || strstr(norm, a)))
			d = d / 2;
		/* scale by length so short aliases do not win by being short */
		int score = d * 100 / (int)(strlen(a) > strlen(norm) ? strlen(a) + 1
								   : strlen(norm) + 1);
		kb_best_insert(best, scores, &n, cap,
			       kb->gpus[kb->aliases[i].gpu].id, score);
	}
	for (size_t i = 0; i < n; i++)
		ids[i] = best[i];
	return n;
}

static int not_found(const struct kb *kb, const char *name, struct kf_err *err)
{
	const char *ids[4];
	size_t n = kb_gpu_suggest(kb, name, ids, 4);
	char list[160] = "";
	size_t at = 0;
	for (size_t i = 0; i < n && at < sizeof list; i++)
		at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "",
				       ids[i]);
	return kf_err_set(err, KF_ENOTFOUND,
			  "unknown GPU '%.60s'; closest known: %s (see get_gpu_specs "
			  "with list: true)",
			  name, list);
}

int kb_gpu_resolve(const struct kb *kb, const char *name,
		   const struct kb_gpu **matches, size_t cap, size_t *len,
		   int *ambiguous, struct kf_err *err)
{
	char norm[KB_NAME_MAX_BYTES];
	*len = 0;
	if (ambiguous)
		*ambiguous = 0;
	if (!name || !*name)
		return kf_err_set(err, KF_EINVAL, "GPU name is empty; give a name or "
						  "alias such as h100, a100-80g-pcie, sm_90");
	if (strlen(name) >= KB_NAME_MAX_BYTES)
		return kf_err_set(err, KF_EINVAL, "GPU name is longer than %d bytes",
				  KB_NAME_MAX_BYTES - 1);
	kb_norm_name(name, norm, sizeof norm);
	long at = norm[0] ? alias_find(kb, norm) : -1;
	if (at < 0)
		return not_found(kb, name, err);
	size_t n = 0;
	for (size_t i = (size_t)at;
	     i < kb->aliases_len && strcmp(kb->aliases[i].alias, norm) == 0; i++) {
		if (n < cap)
			matches[n] = &kb->gpus[kb->aliases[i].gpu];
		n++;
	}
	*len = n < cap ? n : cap;
	if (ambiguous)
		*ambiguous = n > 1;
	return 0;
}

int kb_gpu_find(const struct kb *kb, const char *name, const struct kb_gpu **out,
		struct kf_err *err)
{
	const struct kb_gpu *m[1];
	size_t n = 0;
	int rc = kb_gpu_resolve(kb, name, m, 1, &n, NULL, err);
	if (rc)
		return rc;
	*out = m[0];
	return 0;
}

int kb_gpu_compare(const struct kb *kb, const char *const *names, size_t n,
		   const struct kb_gpu **out, struct kf_err *err)
{
	if (n < 2 || n > KB_COMPARE_MAX)
		return kf_err_set(err, KF_EINVAL, "compare: give 2 to %d GPUs, got %zu",
				  KB_COMPARE_MAX, n);
	for (size_t i = 0; i < n; i++) {
		int rc = kb_gpu_find(kb, names[i] ? names[i] : "", &out[i], err);
		if (rc)
			return rc;
	}
	return 0;
}

int kb_gpu_match_device(const struct kb *kb, const char *device_name,
			int cc_major, int cc_minor, int sm_count,
			unsigned long long mem_bytes, const struct kb_gpu **out,
			struct kf_err *err)
{
	const struct kb_gpu *m[KB_MAX_MATCHES];
	size_t n = 0;
	/* the driver's name is often an alias ("NVIDIA H100 80GB HBM3") */
	if (device_name && *device_name && strlen(device_name) < KB_NAME_MAX_BYTES &&
	    kb_gpu_resolve(kb, device_name, m, KB_MAX_MATCHES, &n, NULL, NULL) == 0) {
		for (size_t i = 0; i < n; i++)
			if (m[i]->cc_major == cc_major && m[i]->cc_minor == cc_minor) {
				*out = m[i];
				return 0;
			}
	}
	/* otherwise: same CC, then the SM count, then the closest memory */
	const struct kb_gpu *best = NULL;
	double best_score = 0;
	for (size_t i = 0; i < kb->gpus_len; i++) {
		const struct kb_gpu *g = &kb->gpus[i];
		if (g->cc_major != cc_major || g->cc_minor != cc_minor)
			continue;
		const struct kb_figure *sm = kb_gpu_figure(g, "sm_count");
		const struct kb_figure *mem = kb_gpu_figure(g, "memory_gb");
		double score = 0;
		if (sm_count > 0 && sm && sm->status == KB_FIG_KNOWN)
			score += sm->value == sm_count ? 0 : 1000;
		if (mem_bytes > 0 && mem && mem->status == KB_FIG_KNOWN) {
			double gb = (double)mem_bytes / 1e9;
			score += gb > mem->value ? gb - mem->value : mem->value - gb;
		}
		if (!best || score < best_score) {
			best = g;
			best_score = score;
		}
	}
	if (!best)
		return kf_err_set(err, KF_ENOTFOUND,
				  "device '%.60s' (CC %d.%d) matches no GPU of the table "
				  "(no row has CC %d.%d)",
				  device_name ? device_name : "", cc_major, cc_minor,
				  cc_major, cc_minor);
	*out = best;
	return 0;
}

const struct kb_source *kb_source_find(const struct kb *kb, const char *key)
{
	size_t lo = 0, hi = kb->sources_len;
	while (lo < hi) { /* loaded ORDER BY key: sqlite's binary collation */
		size_t mid = (lo + hi) / 2;
		int c = strcmp(kb->sources[mid].key, key);
		if (c == 0)
			return &kb->sources[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

size_t kb_conflict_count(const struct kb *kb)
{
	return kb->conflicts_len;
}

const struct kb_conflict *kb_conflict_at(const struct kb *kb, size_t i)
{
	return i < kb->conflicts_len ? &kb->conflicts[i] : NULL;
}

/* ---- limits ----------------------------------------------------------------- */

static int cc_value(const struct cc_row *r, const char *field, double *v)
{
	for (size_t i = 0; r && i < r->figures_len; i++)
		if (strcmp(r->fields[i], field) == 0 && r->status[i]) {
			*v = r->values[i];
			return 1;
		}
	return 0;
}

int kb_cc_limits_for_arch(const struct kb *kb, const char *arch,
			  struct kb_cc_limits *out, struct kf_err *err)
{
	struct kb_arch a;
	int rc = kb_arch_parse(arch, &a, err);
	if (rc)
		return rc;
	memset(out, 0, sizeof *out);
	const struct cc_row *row = NULL, *family = NULL;
	for (size_t i = 0; i < kb->ccs_len; i++) {
		if (kb->ccs[i].major == a.major && kb->ccs[i].minor == a.minor)
			row = &kb->ccs[i];
		if (kb->ccs[i].major == a.major && !family)
			family = &kb->ccs[i];
	}
	const struct kb_gpu *gpu = NULL;
	for (size_t i = 0; !row && i < kb->gpus_len; i++)
		if (kb->gpus[i].cc_major == a.major && kb->gpus[i].cc_minor == a.minor)
			gpu = &kb->gpus[i];
	if (!row && !gpu) {
		char known[160] = "";
		size_t at = 0;
		for (size_t i = 0; i < kb->ccs_len && at < sizeof known; i++)
			at += (size_t)snprintf(known + at, sizeof known - at, "%s%d.%d",
					       i ? ", " : "", kb->ccs[i].major,
					       kb->ccs[i].minor);
		return kf_err_set(err, KF_ENOTFOUND,
				  "no limits for CC %d.%d (arch '%s'); known: %s, 10.3",
				  a.major, a.minor, arch, known);
	}
	static const struct {
		const char *field;
		size_t off;
		int scale;
	} map[] = {
		{"max_threads_per_block", offsetof(struct kb_cc_limits, max_threads_per_block), 1},
		{"max_threads_per_sm", offsetof(struct kb_cc_limits, max_threads_per_sm), 1},
		{"max_warps_per_sm", offsetof(struct kb_cc_limits, max_warps_per_sm), 1},
		{"max_resident_blocks_per_sm", offsetof(struct kb_cc_limits, max_blocks_per_sm), 1},
		{"regs_32bit_per_sm", offsetof(struct kb_cc_limits, regs_per_sm), 1},
		{"max_regs_per_block", offsetof(struct kb_cc_limits, max_regs_per_block), 1},
		{"max_regs_per_thread", offsetof(struct kb_cc_limits, max_regs_per_thread), 1},
		{"smem_per_sm_kb", offsetof(struct kb_cc_limits, smem_per_sm_bytes), 1024},
		{"max_smem_per_block_optin_kb",
		 offsetof(struct kb_cc_limits, smem_per_block_optin_bytes), 1024},
		{"static_smem_per_block_kb", offsetof(struct kb_cc_limits, smem_static_max_bytes),
		 1024},
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
		double v = 0;
		int ok = 0;
		if (row)
			ok = cc_value(row, map[i].field, &v);
		else {
			const struct kb_figure *f = kb_gpu_figure(gpu, map[i].field);
			ok = f && f->status == KB_FIG_KNOWN && f->is_number;
			if (ok)
				v = f->value;
			else /* the GPU row omits it: same major (B300 notes: = 10.0) */
				ok = cc_value(family, map[i].field, &v);
		}
		if (!ok)
			return kf_err_set(err, KF_ENOTFOUND,
					  "limit %s is unknown for CC %d.%d", map[i].field,
					  a.major, a.minor);
		*(int *)((char *)out + map[i].off) = (int)(v * map[i].scale);
	}
	out->cc_major = a.major;
	out->cc_minor = a.minor;
	out->warp_size = 32;
	/* cuda_occupancy.h: cudaOccRegAllocationGranularity 256 for every CC
	 * here; cudaOccSubPartitionsPerMultiprocessor 4; 
	 * cudaOccSMemAllocationGranularity 256 for 7.x, 128 for 8.0+. The 1 KB
	 * per-block reservation on 8.0+: SOURCES.md (PG-LEG sect.20.7,
	 * MEAS-H200 RESERVED_SHARED_MEMORY_PER_BLOCK = 1024). */
	out->reg_alloc_unit = 256;
	out->reg_sub_partitions = 4;
	out->smem_alloc_unit_bytes = a.major >= 8 ? 128 : 256;
	out->smem_reserved_per_block_bytes = a.major >= 8 ? 1024 : 0;
	out->source = row ? row->sources : gpu->sources_per_cc_limits;
	return 0;
}

int kb_gpu_peaks(const struct kb *kb, const char *name, struct kb_peaks *out,
		 struct kf_err *err)
{
	const struct kb_gpu *g = NULL;
	int rc = kb_gpu_find(kb, name, &g, err);
	if (rc)
		return rc;
	memset(out, 0, sizeof *out);
	out->gpu = g;
	static const struct {
		const char *field;
		size_t off;
	} map[] = {
		{"memory_bandwidth_gbs", offsetof(struct kb_peaks, mem_bw_gbs)},
		{"peak_fp32_tflops", offsetof(struct kb_peaks, fp32_tflops)},
		{"peak_fp64_tflops", offsetof(struct kb_peaks, fp64_tflops)},
		{"tf32_tensor_dense_tflops", offsetof(struct kb_peaks, tf32_tflops)},
		{"fp16_bf16_tensor_dense_tflops", offsetof(struct kb_peaks, bf16_tflops)},
		{"fp16_bf16_tensor_dense_tflops", offsetof(struct kb_peaks, fp16_tflops)},
		{"fp8_tensor_dense_tflops", offsetof(struct kb_peaks, fp8_tflops)},
		{"int8_tensor_dense_tops", offsetof(struct kb_peaks, int8_tops)},
		{"fp4_tensor_dense_tflops", offsetof(struct kb_peaks, fp4_tflops)},
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
		struct kb_peak *p = (struct kb_peak *)((char *)out + map[i].off);
		const struct kb_figure *f = kb_gpu_figure(g, map[i].field);
		p->field = map[i].field;
		p->source = f ? f->source : "";
		if (f && f->status == KB_FIG_KNOWN && f->is_number) {
			p->known = 1;
			p->value = f->value;
		}
	}
	return 0;
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
		"a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does",
		"for", "from", "get", "how", "i", "if", "in", "is", "it", "its", "me",
		"my", "of", "on", "or", "should", "so", "that", "the", "this", "to",
		"what", "when", "where", "which", "why", "with", "you", "your", "use",
		"using", "we", "our", "make", "want", "need"};
	for (size_t i = 0; i < sizeof stop / sizeof stop[0]; i++)
		if (strcmp(w, stop[i]) == 0)
			return 1;
	return 0;
}

/* Builds the FTS5 query: each whitespace-separated word, reduced to ASCII
 * letters and digits (anything else becomes a space, so "cp.async" is the
 * phrase "cp async"), becomes a double-quoted phrase; phrases are OR-ed.
 * Nothing of the user's text can be an FTS5 operator, column filter or
 * quote. Returns the number of phrases (0: nothing searchable). */
static int build_match(const char *q, char *out, size_t cap, int drop_stop, char *words,
		       size_t wcap)
{
	size_t at = 0, wat = 0;
	int terms = 0;
	out[0] = '\0';
	words[0] = '\0';
	for (const char *p = q; *p && terms < 32;) {
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
		int w = snprintf(out + at, cap - at, "%s\"%s\"", terms ? " OR " : "", word);
		if (w < 0 || (size_t)w >= cap - at)
			break;
		at += (size_t)w;
		terms++;
		w = snprintf(words + wat, wcap - wat, "%s%s", wat ? " " : "", word);
		if (w > 0 && (size_t)w < wcap - wat)
			wat += (size_t)w;
	}
	return terms;
}

/* The CC (major*10+minor) an arch filter names: a target or a GPU alias. */
static int arch_filter_cc(const struct kb *kb, const char *arch, int *cc,
			  struct kf_err *err)
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

int kb_search_guides(struct kb *kb, const struct kb_search *q, struct kb_hit **hits,
		     size_t *len, struct kf_err *err)
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
		return kf_err_set(err, KF_EINVAL,
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
	char words[KB_QUERY_MAX_BYTES + 64];
	int terms = build_match(q->query, match, sizeof match, 1, words, sizeof words);
	if (terms == 0) /* only stopwords: search them after all */
		terms = build_match(q->query, match, sizeof match, 0, words, sizeof words);
	if (terms == 0)
		return 0; /* nothing searchable (only punctuation): no hits */
	res = calloc((size_t)limit, sizeof *res);
	if (!res)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	if ((rc = pool_get(kb, &c, err)))
		goto out;
	/* Two steps: rank every match, then cut a snippet from each returned
	 * guide's body (kb_snippet; FTS5's snippet() re-tokenizes whole bodies
	 * and cost ~80 us a hit). */
	if ((!c->search &&
	     sqlite3_prepare_v2(
		     c->db,
		     "SELECT id, title,"
		     " kf_rank(guides_fts, 8.0, 10.0, 6.0, 1.0) AS score"
		     " FROM guides_fts WHERE guides_fts MATCH ?1"
		     " AND (?2 IS NULL OR id IN (SELECT guide_id FROM guide_tags"
		     "  WHERE tag = lower(?2)))"
		     " AND (?3 IS NULL OR id IN (SELECT guide_id FROM guide_archs"
		     "  WHERE any = 1 OR cc = ?3 OR (plus = 1 AND cc <= ?3)"
		     "  OR (fam = 1 AND cc / 10 = ?3 / 10 AND cc <= ?3)))"
		     " ORDER BY score, id LIMIT ?4",
		     -1, &c->search, NULL) != SQLITE_OK) ||
	    (!c->snippet &&
	     sqlite3_prepare_v2(c->db,
				"SELECT body FROM guides WHERE id = ?1",
				-1, &c->snippet, NULL) != SQLITE_OK)) {
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
		pool_put(kb, c);
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
	free(g);
}

int kb_guide_read(struct kb *kb, const char *id, struct kb_guide **out,
		  struct kf_err *err)
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
	if ((rc = pool_get(kb, &c, err)))
		return rc;
	if (sqlite3_prepare_v2(c->db,
			       "SELECT id, title, tags, archs, sources, body, links, related"
			       " FROM guides WHERE id = ?",
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
		if (sqlite3_prepare_v2(c->db, "SELECT id FROM guides ORDER BY id", -1, &st,
				       NULL) == SQLITE_OK) {
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
	    !(g->links = dup_col(st, 6)) || !(g->related = dup_col(st, 7))) {
		rc = kf_err_set(err, KF_ENOMEM, "out of memory");
		goto out;
	}
	*out = g;
	g = NULL;
out:
	sqlite3_finalize(st);
	pool_put(kb, c);
	kb_guide_free(g);
	return rc;
}

int kb_guide_list(struct kb *kb, const char *prefix, struct kb_guide_entry **out,
		  size_t *len, struct kf_err *err)
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
	if ((rc = pool_get(kb, &c, err)))
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
	pool_put(kb, c);
	free(res);
	return rc;
}
