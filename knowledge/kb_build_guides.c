/* kb_build_guides: imports knowledge/guides/<name>.md into knowledge.db.
 * Each guide starts with YAML-ish front matter between two '---' lines:
 * scalars `key: value`, lists inline `key: [a, b]` or as `- item` lines.
 * Required: id, title, tags, archs, sources, checked (which GPUs and CUDA
 * version the advice was checked on; it must name a CUDA version); optional:
 * related. Every
 * kforge://guides/<id> link and every related id must name a guide, every
 * kforge://gpus/<id> a GPU. INDEX.md and README.md are not guides. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/kb.h"
#include "knowledge/kb_build_int.h"
#include "knowledge/kb_int.h"

#define GUIDES_MAX 512
#define LIST_MAX   64
#define LINKS_MAX  256

struct list {
	size_t len;
	char *v[LIST_MAX];
};

struct link {
	char id[64];
	size_t line;
	int gpu; /* 1: kforge://gpus/<id> */
};

struct guide {
	char file[256]; /* name under guides/ */
	char *text;	/* whole file, modified in place */
	char *id, *title, *checked;
	struct list tags, archs, sources, related;
	const char *body;
	size_t body_line;
	size_t links_len;
	struct link links[LINKS_MAX];
};

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	char *e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

static char *unquote(char *s)
{
	size_t n = strlen(s);
	if (n >= 2 && ((s[0] == '"' && s[n - 1] == '"') || (s[0] == '\'' && s[n - 1] == '\''))) {
		s[n - 1] = '\0';
		return s + 1;
	}
	return s;
}

static int list_add(struct guide *g, struct list *l, const char *key, char *v, struct kf_err *err)
{
	v = unquote(trim(v));
	if (!*v)
		return 0;
	if (l->len == LIST_MAX)
		return kf_err_set(err, KF_EINVAL, "guides/%s: '%s' has more than %d items", g->file,
				  key, LIST_MAX);
	l->v[l->len++] = v;
	return 0;
}

/* Parses the front matter of g->text; sets body. */
static int parse_front(struct guide *g, struct kf_err *err)
{
	char *p = g->text;
	size_t line = 1;
	if (strncmp(p, "\xEF\xBB\xBF", 3) == 0)
		p += 3;
	if (strncmp(p, "---\n", 4) != 0 && strncmp(p, "---\r\n", 5) != 0)
		return kf_err_set(
			err, KF_EINVAL,
			"guides/%s: no front matter (the file must start with a "
			"'---' line, then id, title, tags, archs, sources, checked, then '---')",
			g->file);
	p = strchr(p, '\n') + 1;
	line++;
	struct list *cur = NULL;
	const char *cur_key = "";
	for (;;) {
		if (!*p)
			return kf_err_set(err, KF_EINVAL,
					  "guides/%s: front matter is not closed by a '---' line",
					  g->file);
		char *nl = strchr(p, '\n');
		char *next = nl ? nl + 1 : p + strlen(p);
		if (nl)
			*nl = '\0';
		char *t = trim(p);
		if (strcmp(t, "---") == 0 && p[0] == '-') {
			g->body = next;
			g->body_line = line + 1;
			break;
		}
		if (!*t || *t == '#') {
			/* blank or comment */
		} else if (*t == '-' && (p[0] == ' ' || p[0] == '\t' || p[0] == '-')) {
			if (!cur)
				return kf_err_set(err, KF_EINVAL,
						  "guides/%s:%zu: list item outside a list key",
						  g->file, line);
			int rc = list_add(g, cur, cur_key, t + 1, err);
			if (rc)
				return rc;
		} else {
			char *colon = strchr(t, ':');
			if (!colon || p[0] == ' ' || p[0] == '\t')
				return kf_err_set(err, KF_EINVAL,
						  "guides/%s:%zu: expected 'key: value' in the "
						  "front matter, got '%.60s'",
						  g->file, line, t);
			*colon = '\0';
			char *key = trim(t), *val = trim(colon + 1);
			struct list *l = strcmp(key, "tags") == 0      ? &g->tags
					 : strcmp(key, "archs") == 0   ? &g->archs
					 : strcmp(key, "sources") == 0 ? &g->sources
					 : strcmp(key, "related") == 0 ? &g->related
								       : NULL;
			cur = NULL;
			if (strcmp(key, "id") == 0)
				g->id = unquote(val);
			else if (strcmp(key, "title") == 0)
				g->title = unquote(val);
			else if (strcmp(key, "checked") == 0)
				g->checked = unquote(val);
			else if (l && *val == '[') {
				size_t vl = strlen(val);
				if (val[vl - 1] != ']')
					return kf_err_set(
						err, KF_EINVAL,
						"guides/%s:%zu: '%s' list is not closed by ']'",
						g->file, line, key);
				val[vl - 1] = '\0';
				char *save = NULL;
				for (char *it = strtok_r(val + 1, ",", &save); it;
				     it = strtok_r(NULL, ",", &save)) {
					int rc = list_add(g, l, key, it, err);
					if (rc)
						return rc;
				}
			} else if (l && *val) {
				int rc = list_add(g, l, key, val, err);
				if (rc)
					return rc;
			} else if (l) {
				cur = l;
				cur_key = key;
			}
		}
		p = next;
		line++;
	}
	static const char *const req[] = {"id", "title", "tags", "archs", "sources", "checked"};
	const int have[] = {g->id && *g->id,  g->title && *g->title, g->tags.len > 0,
			    g->archs.len > 0, g->sources.len > 0,    g->checked && *g->checked};
	for (size_t i = 0; i < 6; i++)
		if (!have[i])
			return kf_err_set(err, KF_EINVAL,
					  "guides/%s: front matter has no '%s' (required: id, "
					  "title, tags, archs, sources, checked)",
					  g->file, req[i]);
	/* "checked" must say which CUDA the advice was checked with: "CUDA 13.0" */
	const char *cu = strstr(g->checked, "CUDA ");
	if (!cu || !isdigit((unsigned char)cu[5]))
		return kf_err_set(err, KF_EINVAL,
				  "guides/%s: 'checked' names no CUDA version ('%.60s'); say "
				  "which GPUs and CUDA it was checked on, e.g. 'H200 (sm_90a), "
				  "CUDA 13.0' or 'no GPU run; CUDA 13.0 documentation'",
				  g->file, g->checked);
	size_t il = strlen(g->id);
	for (size_t i = 0; i < il; i++)
		if (!(isalnum((unsigned char)g->id[i]) || strchr("._-", g->id[i])))
			return kf_err_set(err, KF_EINVAL,
					  "guides/%s: id '%s' may use only letters, digits, '.', "
					  "'_' and '-'",
					  g->file, g->id);
	if (il > 63)
		return kf_err_set(err, KF_EINVAL, "guides/%s: id longer than 63 bytes", g->file);
	return 0;
}

static int idch(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

static int scan_links(struct guide *g, struct kf_err *err)
{
	static const struct {
		const char *prefix;
		int gpu;
	} kinds[] = {{"kforge://guides/", 0}, {"kforge://gpus/", 1}};
	for (size_t k = 0; k < 2; k++) {
		size_t pl = strlen(kinds[k].prefix);
		for (const char *p = strstr(g->body, kinds[k].prefix); p;
		     p = strstr(p + pl, kinds[k].prefix)) {
			const char *s = p + pl;
			size_t n = 0;
			while (idch(s[n]))
				n++;
			while (n > 0 && s[n - 1] == '.')
				n--; /* sentence end */
			if (g->links_len == LINKS_MAX)
				return kf_err_set(err, KF_EINVAL,
						  "guides/%s: more than %d kforge:// links",
						  g->file, LINKS_MAX);
			struct link *l = &g->links[g->links_len++];
			snprintf(l->id, sizeof l->id, "%.*s", (int)n, s);
			l->gpu = kinds[k].gpu;
			l->line = g->body_line;
			for (const char *q = g->body; q < p; q++)
				l->line += *q == '\n';
		}
	}
	return 0;
}

static int cmp_guide(const void *a, const void *b)
{
	const struct guide *x = *(struct guide *const *)a;
	const struct guide *y = *(struct guide *const *)b;
	return strcmp(x->id, y->id);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static const struct guide *find_guide(struct guide **gs, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(gs[i]->id, id) == 0)
			return gs[i];
	return NULL;
}

static int gpu_alias_known(sqlite3 *db, const char *name)
{
	char norm[KB_NAME_MAX_BYTES];
	kb_norm_name(name, norm, sizeof norm);
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM aliases WHERE alias=?", -1, &q, NULL) !=
	    SQLITE_OK)
		return 0;
	sqlite3_bind_text(q, 1, norm, -1, SQLITE_TRANSIENT);
	int ok = sqlite3_step(q) == SQLITE_ROW;
	sqlite3_finalize(q);
	return ok;
}

/* Inserts the guide_archs rows of one archs entry. */
static int insert_arch(sqlite3 *db, sqlite3_stmt *ins, const struct guide *g, const char *entry,
		       struct kf_err *err)
{
	char e[64];
	snprintf(e, sizeof e, "%s", entry);
	for (char *c = e; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	size_t el = strlen(e);
	int plus = el > 0 && e[el - 1] == '+';
	if (plus)
		e[--el] = '\0';
	if (strcmp(e, "all") == 0 || strcmp(e, "any") == 0) {
		sqlite3_bind_text(ins, 1, g->id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(ins, 2, 0);
		sqlite3_bind_int(ins, 3, 0);
		sqlite3_bind_int(ins, 4, 1);
		sqlite3_bind_int(ins, 5, 0);
		return kb_build_step_reset(db, ins, "guide_archs", err);
	}
	struct kb_arch a;
	if (kb_arch_parse(e, &a, NULL) == 0) {
		sqlite3_bind_text(ins, 1, g->id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(ins, 2, a.major * 10 + a.minor);
		sqlite3_bind_int(ins, 3, plus);
		sqlite3_bind_int(ins, 4, 0);
		sqlite3_bind_int(ins, 5, a.suffix != 'a');
		return kb_build_step_reset(db, ins, "guide_archs", err);
	}
	/* a GPU or architecture name: every CC it names */
	char norm[KB_NAME_MAX_BYTES];
	kb_norm_name(e, norm, sizeof norm);
	sqlite3_stmt *q = NULL;
	int rc = kb_build_prepare(db,
				  "SELECT DISTINCT g.cc_major*10+g.cc_minor FROM aliases a "
				  "JOIN gpus g ON g.id=a.gpu_id WHERE a.alias=? ORDER BY 1",
				  &q, err);
	if (rc)
		return rc;
	sqlite3_bind_text(q, 1, norm, -1, SQLITE_TRANSIENT);
	int n = 0;
	while (!rc && sqlite3_step(q) == SQLITE_ROW) {
		n++;
		sqlite3_bind_text(ins, 1, g->id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int(ins, 2, sqlite3_column_int(q, 0));
		sqlite3_bind_int(ins, 3, plus);
		sqlite3_bind_int(ins, 4, 0);
		sqlite3_bind_int(ins, 5, 0);
		rc = kb_build_step_reset(db, ins, "guide_archs", err);
	}
	sqlite3_finalize(q);
	if (!rc && n == 0)
		rc = kf_err_set(err, KF_EINVAL,
				"guides/%s: archs entry '%s' is neither 'all', sm_XY[a|f][+], "
				"X.Y[+], nor a GPU or architecture name (e.g. hopper, h100)",
				g->file, entry);
	return rc;
}

/* Joins l's items with sep into a new string. */
static char *join(const struct list *l, const char *sep)
{
	size_t n = 1, sl = strlen(sep), at = 0;
	for (size_t i = 0; i < l->len; i++)
		n += strlen(l->v[i]) + sl;
	char *s = malloc(n);
	if (!s)
		return NULL;
	for (size_t i = 0; i < l->len; i++) {
		size_t vl = strlen(l->v[i]);
		if (i) {
			memcpy(s + at, sep, sl);
			at += sl;
		}
		memcpy(s + at, l->v[i], vl);
		at += vl;
	}
	s[at] = '\0';
	return s;
}

static int insert_guide(sqlite3 *db, sqlite3_stmt *ins_g, sqlite3_stmt *ins_t, sqlite3_stmt *ins_a,
			sqlite3_stmt *ins_f, const struct guide *g, struct kf_err *err)
{
	int rc = 0;
	struct list links = {0};
	for (size_t i = 0; i < g->links_len; i++) {
		if (g->links[i].gpu)
			continue;
		int dup = 0;
		for (size_t j = 0; j < links.len; j++)
			dup |= strcmp(links.v[j], g->links[i].id) == 0;
		if (!dup && links.len < LIST_MAX)
			links.v[links.len++] = (char *)g->links[i].id;
	}
	char *tags = join(&g->tags, ","), *tags_sp = join(&g->tags, " "),
	     *archs = join(&g->archs, ","), *srcs = join(&g->sources, "\n"),
	     *rel = join(&g->related, ","), *lk = join(&links, ",");
	if (!tags || !tags_sp || !archs || !srcs || !rel || !lk) {
		rc = kf_err_set(err, KF_ENOMEM, "out of memory");
		goto out;
	}
	char what[320];
	snprintf(what, sizeof what, "guides/%s", g->file);
	sqlite3_bind_text(ins_g, 1, g->id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(ins_g, 2, g->title, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(ins_g, 3, tags, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(ins_g, 4, archs, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(ins_g, 5, srcs, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(ins_g, 6, rel, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(ins_g, 7, lk, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(ins_g, 8, g->body, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(ins_g, 9, g->file, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(ins_g, 10, g->checked, -1, SQLITE_TRANSIENT);
	if ((rc = kb_build_step_reset(db, ins_g, what, err)))
		goto out;
	for (size_t i = 0; i < g->tags.len && !rc; i++) {
		char tag[64];
		snprintf(tag, sizeof tag, "%s", g->tags.v[i]);
		for (char *c = tag; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		sqlite3_bind_text(ins_t, 1, g->id, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(ins_t, 2, tag, -1, SQLITE_TRANSIENT);
		rc = kb_build_step_reset(db, ins_t, what, err);
	}
	for (size_t i = 0; i < g->archs.len && !rc; i++)
		rc = insert_arch(db, ins_a, g, g->archs.v[i], err);
	if (rc)
		goto out;
	sqlite3_bind_text(ins_f, 1, g->id, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(ins_f, 2, g->title, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(ins_f, 3, tags_sp, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(ins_f, 4, g->body, -1, SQLITE_TRANSIENT);
	rc = kb_build_step_reset(db, ins_f, what, err);
out:
	free(tags);
	free(tags_sp);
	free(archs);
	free(srcs);
	free(rel);
	free(lk);
	return rc;
}

int kb_build_import_guides(sqlite3 *db, const char *dir, struct kf_err *err)
{
	int rc = 0;
	char *names[GUIDES_MAX];
	size_t nn = 0, ng = 0;
	struct guide *gs[GUIDES_MAX];
	sqlite3_stmt *ins_g = NULL, *ins_t = NULL, *ins_a = NULL, *ins_f = NULL;

	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0; /* no guides yet */
		return kf_err_set(err, KF_EIO, "%s: cannot open: %s", dir, strerror(errno));
	}
	for (struct dirent *e; (e = readdir(d));) {
		size_t l = strlen(e->d_name);
		if (l < 4 || strcmp(e->d_name + l - 3, ".md") != 0 || e->d_name[0] == '.' ||
		    strcmp(e->d_name, "INDEX.md") == 0 || strcmp(e->d_name, "README.md") == 0)
			continue;
		if (nn == GUIDES_MAX) {
			rc = kf_err_set(err, KF_ETOOBIG, "%s: more than %d guides", dir,
					GUIDES_MAX);
			break;
		}
		if (!(names[nn] = strdup(e->d_name))) {
			rc = kf_err_set(err, KF_ENOMEM, "out of memory");
			break;
		}
		nn++;
	}
	closedir(d);
	if (rc)
		goto out;
	/* readdir order is the file system's: sort for reproducible output */
	qsort(names, nn, sizeof *names, cmp_str);
	for (size_t i = 0; i < nn; i++) {
		struct guide *g = calloc(1, sizeof *g);
		if (!g) {
			rc = kf_err_set(err, KF_ENOMEM, "out of memory");
			goto out;
		}
		gs[ng++] = g;
		snprintf(g->file, sizeof g->file, "%s", names[i]);
		char path[4096];
		size_t len = 0;
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		if ((rc = kb_read_file(path, KB_FILE_MAX_BYTES, &g->text, &len, err)) ||
		    (rc = parse_front(g, err)) || (rc = scan_links(g, err)))
			goto out;
	}
	qsort(gs, ng, sizeof *gs, cmp_guide);
	for (size_t i = 0; i + 1 < ng; i++)
		if (strcmp(gs[i]->id, gs[i + 1]->id) == 0) {
			rc = kf_err_set(err, KF_EINVAL, "guides/%s and guides/%s both have id '%s'",
					gs[i]->file, gs[i + 1]->file, gs[i]->id);
			goto out;
		}
	for (size_t i = 0; i < ng; i++) {
		const struct guide *g = gs[i];
		for (size_t k = 0; k < g->links_len; k++) {
			const struct link *l = &g->links[k];
			if (l->gpu ? gpu_alias_known(db, l->id) : find_guide(gs, ng, l->id) != NULL)
				continue;
			rc = kf_err_set(err, KF_EINVAL,
					"guides/%s:%zu: broken cross-reference "
					"kforge://%s/%s: no %s has that id",
					g->file, l->line, l->gpu ? "gpus" : "guides", l->id,
					l->gpu ? "GPU" : "guide");
			goto out;
		}
		for (size_t k = 0; k < g->related.len; k++)
			if (!find_guide(gs, ng, g->related.v[k])) {
				rc = kf_err_set(err, KF_EINVAL,
						"guides/%s: broken cross-reference: related "
						"names '%s', which is no guide id",
						g->file, g->related.v[k]);
				goto out;
			}
	}
	if ((rc = kb_build_prepare(db, "INSERT INTO guides VALUES (?,?,?,?,?,?,?,?,?,?)", &ins_g,
				   err)) ||
	    (rc = kb_build_prepare(db, "INSERT OR IGNORE INTO guide_tags VALUES (?,?)", &ins_t,
				   err)) ||
	    (rc = kb_build_prepare(db, "INSERT OR IGNORE INTO guide_archs VALUES (?,?,?,?,?)",
				   &ins_a, err)) ||
	    (rc = kb_build_prepare(db,
				   "INSERT INTO guides_fts(id,title,tags,body) VALUES (?,?,?,?)",
				   &ins_f, err)))
		goto out;
	for (size_t i = 0; i < ng && !rc; i++)
		rc = insert_guide(db, ins_g, ins_t, ins_a, ins_f, gs[i], err);
out:
	sqlite3_finalize(ins_g);
	sqlite3_finalize(ins_t);
	sqlite3_finalize(ins_a);
	sqlite3_finalize(ins_f);
	for (size_t i = 0; i < ng; i++) {
		free(gs[i]->text);
		free(gs[i]);
	}
	for (size_t i = 0; i < nn; i++)
		free(names[i]);
	return rc;
}
