/* kb: the knowledge base at run time. kb_open loads the GPU tables (gpus,
 * figures, aliases, per-CC limits, sources, conflicts) into immutable memory,
 * so GPU lookups take no lock; guides are queried through a pool of
 * read-only sqlite connections (immutable=1: no file locks), each used by one
 * thread at a time under a mutex-guarded free list (guide queries live in
 * kb_guides.c). */
#include <ctype.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/kb_int.h"
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
	if (kb_rank_register(*db) != 0) {
		int rc = kf_err_set(err, KF_EDB, "knowledge base: sqlite lacks FTS5 (%s)",
				    sqlite3_errmsg(*db));
		sqlite3_close(*db);
		*db = NULL;
		return rc;
	}
	return 0;
}

int kb_pool_get(struct kb *kb, struct conn **out, struct kf_err *err)
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

void kb_pool_put(struct kb *kb, struct conn *c)
{
	pthread_mutex_lock(&kb->mu);
	c->busy = 0;
	pthread_cond_signal(&kb->cv);
	pthread_mutex_unlock(&kb->mu);
}

/* ---- loading -------------------------------------------------------------- */

static int q_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, struct kf_err *err)
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
		f->kind = strcmp(kind, "product") == 0	? KB_FIG_PRODUCT
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
		/* an unknown figure's line in figure_sources.csv says why it has no
		 * value ("no NVIDIA source: ..."); it is no source of a value */
		f->gap = f->status == KB_FIG_UNKNOWN ? f->source : "";
		if (f->status == KB_FIG_UNKNOWN)
			f->source = "";
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
			kb->conflicts = arena_alloc(kb, kb->conflicts_len * sizeof *kb->conflicts);
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
		cur->status[k] = strcmp((const char *)sqlite3_column_text(st, 4), "known") == 0 &&
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
	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key='schema_version'", -1, &st,
			       NULL) != SQLITE_OK ||
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
	return lo < kb->aliases_len && strcmp(kb->aliases[lo].alias, a) == 0 ? (long)lo : -1;
}

size_t kb_gpu_suggest(const struct kb *kb, const char *name, const char **ids, size_t cap)
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
		int score = d * 100 /
			    (int)(strlen(a) > strlen(norm) ? strlen(a) + 1 : strlen(norm) + 1);
		kb_best_insert(best, scores, &n, cap, kb->gpus[kb->aliases[i].gpu].id, score);
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
		at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", ids[i]);
	return kf_err_set(err, KF_ENOTFOUND,
			  "unknown GPU '%.60s'; closest known: %s (see get_gpu_specs "
			  "with list: true)",
			  name, list);
}

int kb_gpu_resolve(const struct kb *kb, const char *name, const struct kb_gpu **matches, size_t cap,
		   size_t *len, int *ambiguous, struct kf_err *err)
{
	char norm[KB_NAME_MAX_BYTES];
	*len = 0;
	if (ambiguous)
		*ambiguous = 0;
	if (!name || !*name)
		return kf_err_set(err, KF_EINVAL,
				  "GPU name is empty; give a name or "
				  "alias such as h100, a100-80g-pcie, sm_90");
	if (strlen(name) >= KB_NAME_MAX_BYTES)
		return kf_err_set(err, KF_EINVAL, "GPU name is longer than %d bytes",
				  KB_NAME_MAX_BYTES - 1);
	kb_norm_name(name, norm, sizeof norm);
	long at = norm[0] ? alias_find(kb, norm) : -1;
	if (at < 0)
		return not_found(kb, name, err);
	size_t n = 0;
	for (size_t i = (size_t)at; i < kb->aliases_len && strcmp(kb->aliases[i].alias, norm) == 0;
	     i++) {
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

int kb_gpu_match_device(const struct kb *kb, const char *device_name, int cc_major, int cc_minor,
			int sm_count, unsigned long long mem_bytes, const struct kb_gpu **out,
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
		/* an unconfirmed figure (GH200, the NVL cards) ranks below a row
		 * whose figure matches and above one whose figure differs */
		double score = 0;
		if (sm_count > 0)
			score += !sm || sm->status != KB_FIG_KNOWN ? 500
				 : sm->value == sm_count	   ? 0
								   : 1000;
		if (mem_bytes > 0 && mem && mem->status == KB_FIG_KNOWN) {
			double gb = (double)mem_bytes / 1e9;
			score += gb > mem->value ? gb - mem->value : mem->value - gb;
		} else if (mem_bytes > 0) {
			score += 200;
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
				  device_name ? device_name : "", cc_major, cc_minor, cc_major,
				  cc_minor);
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

int kb_cc_limits_for_arch(const struct kb *kb, const char *arch, struct kb_cc_limits *out,
			  struct kf_err *err)
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
					       i ? ", " : "", kb->ccs[i].major, kb->ccs[i].minor);
		return kf_err_set(err, KF_ENOTFOUND,
				  "no limits for CC %d.%d (arch '%s'); known: %s, 10.3", a.major,
				  a.minor, arch, known);
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
			return kf_err_set(err, KF_ENOTFOUND, "limit %s is unknown for CC %d.%d",
					  map[i].field, a.major, a.minor);
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

int kb_gpu_peaks(const struct kb *kb, const char *name, struct kb_peaks *out, struct kf_err *err)
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
