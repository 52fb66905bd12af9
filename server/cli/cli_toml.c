/* cli_toml: see cli_toml.h. A one-pass scanner over TOML 1.0: table and
 * array-of-tables headers, dotted keys (bare, "basic", 'literal'), and
 * values (strings of all four kinds, arrays over several lines, inline
 * tables, numbers, booleans, dates). It keeps only what the edit needs:
 * where each [name] table starts and where its last statement ends, and the
 * key paths seen, to refuse duplicates. Key paths are stored with their parts
 * joined by SEP, so a dot inside a quoted key stays a different key. */
#include "server/cli/cli_toml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEP	     '\x1f' /* joins key parts */
#define PATH_MAX_LEN 512    /* bytes of one key path */
#define PATHS_MAX    4096   /* keys and tables in one document */
#define REGIONS_MAX  16	    /* [name] tables in one document */
#define NEST_MAX     32	    /* arrays and inline tables inside each other */

struct region {
	size_t start, end; /* bytes [start, end): header to the end of its last statement */
};

struct scan {
	const char *s;
	size_t len, pos;
	int line;
	struct kf_err *err;
	char name[PATH_MAX_LEN]; /* the table to replace, SEP-joined */
	char table[PATH_MAX_LEN];
	int aot; /* arrays of tables seen: makes each element's keys distinct */
	char (*paths)[PATH_MAX_LEN];
	size_t npaths;
	struct region regions[REGIONS_MAX];
	size_t nregions;
	int in_mine;	 /* inside a [name] or [name.*] table */
	size_t last_end; /* end of the last statement's line */
};

static int fail(struct scan *sc, const char *what)
{
	return kf_err_set(sc->err, KF_EINVAL, "line %d: %s", sc->line, what);
}

static int at_end(const struct scan *sc)
{
	return sc->pos >= sc->len;
}

static char peek(const struct scan *sc, size_t ahead)
{
	return sc->pos + ahead < sc->len ? sc->s[sc->pos + ahead] : '\0';
}

static void skip_blank(struct scan *sc)
{
	while (!at_end(sc) && (peek(sc, 0) == ' ' || peek(sc, 0) == '\t'))
		sc->pos++;
}

/* Skips blanks, comments and newlines (inside arrays). */
static void skip_space(struct scan *sc)
{
	for (;;) {
		skip_blank(sc);
		if (peek(sc, 0) == '#')
			while (!at_end(sc) && peek(sc, 0) != '\n')
				sc->pos++;
		if (peek(sc, 0) == '\r' && peek(sc, 1) == '\n')
			sc->pos++;
		if (peek(sc, 0) != '\n')
			return;
		sc->pos++;
		sc->line++;
	}
}

/* After a statement: blanks, an optional comment, then a newline or EOF. */
static int end_of_line(struct scan *sc)
{
	skip_blank(sc);
	if (peek(sc, 0) == '#')
		while (!at_end(sc) && peek(sc, 0) != '\n')
			sc->pos++;
	if (peek(sc, 0) == '\r' && peek(sc, 1) == '\n')
		sc->pos++;
	if (at_end(sc) || peek(sc, 0) == '\n') {
		if (!at_end(sc))
			sc->pos++;
		sc->last_end = sc->pos;
		sc->line++;
		return 0;
	}
	char msg[80];
	snprintf(msg, sizeof msg, "unexpected '%c' where the line should end", peek(sc, 0));
	return fail(sc, msg);
}

/* A string starting at pos (quote q, triple when multi-line); appends its
 * raw body to buf when buf is not NULL. */
static int string(struct scan *sc, char *buf, size_t cap, size_t *blen)
{
	char q = peek(sc, 0);
	int multi = peek(sc, 1) == q && peek(sc, 2) == q, line = sc->line;
	sc->pos += multi ? 3 : 1;
	for (;;) {
		if (at_end(sc)) {
			sc->line = line; /* where it opened */
			return fail(sc, "a string is not closed");
		}
		char c = peek(sc, 0);
		if (c == '\n') {
			if (!multi)
				return fail(sc, "a string runs past the end of its line");
			sc->line++;
		}
		if (c == '\\' && q == '"') {
			sc->pos += 2;
			continue;
		}
		if (c == q && (!multi || (peek(sc, 1) == q && peek(sc, 2) == q))) {
			sc->pos += multi ? 3 : 1;
			/* """a"""" : up to two more quotes belong to the body */
			while (multi && peek(sc, 0) == q)
				sc->pos++;
			return 0;
		}
		if (buf) {
			if (*blen + 1 >= cap)
				return kf_err_set(sc->err, KF_ETOOBIG,
						  "line %d: a key is over %d bytes", sc->line,
						  PATH_MAX_LEN);
			buf[(*blen)++] = c;
		}
		sc->pos++;
	}
}

static int is_bare(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

/* A dotted key, appended to path (which holds len bytes) with SEP between
 * parts; stops before '=' or ']'. */
static int key(struct scan *sc, char *path, size_t *len)
{
	for (;;) {
		skip_blank(sc);
		if (*len) {
			if (*len + 1 >= PATH_MAX_LEN)
				return kf_err_set(sc->err, KF_ETOOBIG, "line %d: a key is too long",
						  sc->line);
			path[(*len)++] = SEP;
		}
		char c = peek(sc, 0);
		if (c == '"' || c == '\'') {
			if (peek(sc, 1) == c && peek(sc, 2) == c)
				return fail(sc, "a key cannot be a multi-line string");
			int rc = string(sc, path, PATH_MAX_LEN, len);
			if (rc)
				return rc;
		} else if (is_bare(c)) {
			while (is_bare(peek(sc, 0))) {
				if (*len + 1 >= PATH_MAX_LEN)
					return kf_err_set(sc->err, KF_ETOOBIG,
							  "line %d: a key is too long", sc->line);
				path[(*len)++] = peek(sc, 0);
				sc->pos++;
			}
		} else {
			return fail(sc, "expected a key (letters, digits, _ or -, or a quoted "
					"name)");
		}
		path[*len] = '\0';
		skip_blank(sc);
		if (peek(sc, 0) != '.')
			return 0;
		sc->pos++;
	}
}

static int value(struct scan *sc, int depth);

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Digits from t[*i] (at least one; with under, single '_' between them),
 * of the class given by hex/oct/bin. Advances *i; returns how many. */
static size_t run(const char *t, size_t n, size_t *i, int under, int base)
{
	size_t k = 0;
	while (*i < n) {
		char c = t[*i];
		int ok = base == 16
				 ? is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
			 : base == 8 ? c >= '0' && c <= '7'
			 : base == 2 ? c == '0' || c == '1'
				     : is_digit(c);
		if (ok) {
			k++;
			(*i)++;
		} else if (c == '_' && under && k && *i + 1 < n && t[*i + 1] != '_') {
			(*i)++;
		} else {
			break;
		}
	}
	return k;
}

/* An integer or float of TOML 1.0: [+-]?(0|[1-9][0-9_]*)(.[0-9_]+)?([eE][+-]?[0-9_]+)?,
 * or 0x/0o/0b with their digits. */
static int is_number(const char *t, size_t n)
{
	size_t i = 0;
	if (n > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'o' || t[1] == 'b')) {
		i = 2;
		return run(t, n, &i, 1, t[1] == 'x' ? 16 : t[1] == 'o' ? 8 : 2) && i == n;
	}
	if (i < n && (t[i] == '+' || t[i] == '-'))
		i++;
	size_t start = i, k = run(t, n, &i, 1, 10);
	if (!k || (t[start] == '0' && k > 1))
		return 0;
	if (i < n && t[i] == '.') {
		i++;
		if (!run(t, n, &i, 1, 10))
			return 0;
	}
	if (i < n && (t[i] == 'e' || t[i] == 'E')) {
		i++;
		if (i < n && (t[i] == '+' || t[i] == '-'))
			i++;
		if (!run(t, n, &i, 1, 10))
			return 0;
	}
	return i == n;
}

/* HH:MM:SS(.frac)? from t[*i]. */
static int is_time(const char *t, size_t n, size_t *i)
{
	for (int part = 0; part < 3; part++) {
		size_t at = *i;
		if (part && (at >= n || t[(*i)++] != ':'))
			return 0;
		at = *i;
		if (run(t, n, i, 0, 10) != 2 || *i != at + 2)
			return 0;
	}
	if (*i < n && t[*i] == '.') {
		(*i)++;
		if (!run(t, n, i, 0, 10))
			return 0;
	}
	return 1;
}

/* A date, date-time (T, t or one space between), or local time. */
static int is_datetime(const char *t, size_t n)
{
	size_t i = 0;
	if (n >= 8 && t[2] == ':')
		return is_time(t, n, &i) && i == n;
	if (n < 10 || run(t, n, &i, 0, 10) != 4 || t[i++] != '-' || run(t, n, &i, 0, 10) != 2 ||
	    t[i++] != '-' || run(t, n, &i, 0, 10) != 2)
		return 0;
	if (i == n)
		return 1;
	if (t[i] != 'T' && t[i] != 't' && t[i] != ' ')
		return 0;
	i++;
	if (!is_time(t, n, &i))
		return 0;
	if (i < n && (t[i] == 'Z' || t[i] == 'z'))
		i++;
	else if (i < n && (t[i] == '+' || t[i] == '-')) {
		size_t at = ++i;
		if (run(t, n, &i, 0, 10) != 2 || i != at + 2 || i >= n || t[i++] != ':' ||
		    run(t, n, &i, 0, 10) != 2)
			return 0;
	}
	return i == n;
}

/* A scalar: boolean, number, date or time. */
static int scalar(struct scan *sc)
{
	size_t start = sc->pos;
	while (!at_end(sc) && (is_bare(peek(sc, 0)) || strchr("+.:", peek(sc, 0))))
		sc->pos++;
	/* a date and a time separated by one space: 1979-05-27 07:32:00 */
	if (sc->pos - start == 10 && peek(sc, 0) == ' ' && is_digit(peek(sc, 1)))
		for (sc->pos++;
		     !at_end(sc) && (is_bare(peek(sc, 0)) || strchr("+.:", peek(sc, 0)));)
			sc->pos++;
	size_t n = sc->pos - start;
	const char *t = sc->s + start, *u = t + (n && (t[0] == '+' || t[0] == '-'));
	size_t un = n - (size_t)(u - t);
	if ((n == 4 && !strncmp(t, "true", 4)) || (n == 5 && !strncmp(t, "false", 5)) ||
	    (un == 3 && (!strncmp(u, "inf", 3) || !strncmp(u, "nan", 3))) || is_number(t, n) ||
	    is_datetime(t, n))
		return 0;
	return fail(sc, n ? "a value is not a string, number, boolean, date, array or table"
			  : "expected a value here");
}

/* [v, v, ...] over any number of lines, with comments. */
static int array(struct scan *sc, int depth)
{
	int line = sc->line;
	sc->pos++;
	for (;;) {
		skip_space(sc);
		if (at_end(sc)) {
			sc->line = line; /* where it opened */
			return fail(sc, "an array is not closed with ']'");
		}
		if (peek(sc, 0) == ']') {
			sc->pos++;
			return 0;
		}
		int rc = value(sc, depth + 1);
		if (rc)
			return rc;
		skip_space(sc);
		if (peek(sc, 0) == ',') {
			sc->pos++;
		} else if (at_end(sc)) {
			sc->line = line;
			return fail(sc, "an array is not closed with ']'");
		} else if (peek(sc, 0) != ']') {
			return fail(sc, "expected ',' or ']' in an array");
		}
	}
}

/* { k = v, ... } on one line. */
static int inline_table(struct scan *sc, int depth)
{
	char path[PATH_MAX_LEN];
	sc->pos++;
	skip_blank(sc);
	if (peek(sc, 0) == '}') {
		sc->pos++;
		return 0;
	}
	for (;;) {
		size_t len = 0;
		int rc = key(sc, path, &len);
		if (rc)
			return rc;
		if (peek(sc, 0) != '=')
			return fail(sc, "expected '=' after a key in an inline table");
		sc->pos++;
		skip_blank(sc);
		if ((rc = value(sc, depth + 1)))
			return rc;
		skip_blank(sc);
		if (peek(sc, 0) == '}') {
			sc->pos++;
			return 0;
		}
		if (peek(sc, 0) != ',')
			return fail(sc, "expected ',' or '}' in an inline table (on one line)");
		sc->pos++;
	}
}

static int value(struct scan *sc, int depth)
{
	if (depth > NEST_MAX)
		return kf_err_set(sc->err, KF_ETOOBIG,
				  "line %d: arrays or tables nested over %d deep", sc->line,
				  NEST_MAX);
	char c = peek(sc, 0);
	if (c == '"' || c == '\'')
		return string(sc, NULL, 0, NULL);
	if (c == '[')
		return array(sc, depth);
	if (c == '{')
		return inline_table(sc, depth);
	return scalar(sc);
}

/* p relates to the name to replace: 0 unrelated, 1 p is name or inside it,
 * 2 p is a table above name (mcp_servers for mcp_servers.kforge). */
static int relation(const struct scan *sc, const char *p)
{
	size_t n = strlen(sc->name), m = strlen(p);
	if (!strncmp(p, sc->name, n) && (m == n || p[n] == SEP))
		return 1;
	if (m < n && !strncmp(p, sc->name, m) && sc->name[m] == SEP)
		return 2;
	return 0;
}

/* Records path (a key, or a table when table is set); a second definition
 * is a TOML error. */
static int define(struct scan *sc, const char *path, int table)
{
	for (size_t i = 0; i < sc->npaths; i++)
		if (!strcmp(sc->paths[i] + 1, path)) {
			char msg[PATH_MAX_LEN + 64], shown[PATH_MAX_LEN];
			snprintf(shown, sizeof shown, "%s", path);
			for (char *c = shown; *c; c++)
				*c = *c == SEP ? '.' : *c;
			snprintf(msg, sizeof msg, "%s %s is defined twice", table ? "table" : "key",
				 shown);
			return fail(sc, msg);
		}
	if (sc->npaths == PATHS_MAX)
		return kf_err_set(sc->err, KF_ETOOBIG, "more than %d keys and tables", PATHS_MAX);
	snprintf(sc->paths[sc->npaths++], PATH_MAX_LEN, "%c%s", table ? 't' : 'k', path);
	return 0;
}

/* Ends the current [name] region, if any, at the last statement. */
static int close_region(struct scan *sc)
{
	if (!sc->in_mine)
		return 0;
	if (sc->nregions == REGIONS_MAX)
		return kf_err_set(sc->err, KF_ETOOBIG, "more than %d of the tables to replace",
				  REGIONS_MAX);
	sc->regions[sc->nregions++].end = sc->last_end;
	sc->in_mine = 0;
	return 0;
}

static int header(struct scan *sc)
{
	size_t start = sc->pos, len = 0;
	int aot = peek(sc, 1) == '[';
	sc->pos += aot ? 2 : 1;
	char path[PATH_MAX_LEN];
	int rc = key(sc, path, &len);
	if (rc)
		return rc;
	if (peek(sc, 0) != ']' || (aot && peek(sc, 1) != ']'))
		return fail(sc, aot ? "expected ']]' to close the header"
				    : "expected ']' to close the header");
	sc->pos += aot ? 2 : 1;
	int rel = relation(sc, path);
	if (aot && rel)
		return fail(sc, "an array of tables [[...]] holds the table to replace; edit it by "
				"hand");
	int mine = rel == 1;
	if (mine && !sc->in_mine) {
		if ((rc = close_region(sc)))
			return rc;
		sc->regions[sc->nregions].start = start;
		sc->in_mine = 1;
	} else if (!mine && (rc = close_region(sc))) {
		return rc;
	}
	snprintf(sc->table, sizeof sc->table, "%s", path);
	if (aot) {
		/* each element is a table of its own */
		size_t n = strlen(sc->table);
		snprintf(sc->table + n, sizeof sc->table - n, "%c#%d", SEP, ++sc->aot);
	} else if (!mine && (rc = define(sc, path, 1))) {
		return rc;
	}
	return end_of_line(sc);
}

static int keyval(struct scan *sc)
{
	char path[PATH_MAX_LEN];
	size_t len = strlen(sc->table);
	snprintf(path, sizeof path, "%s", sc->table);
	int line = sc->line, rc = key(sc, path, &len);
	if (rc)
		return rc;
	if (peek(sc, 0) != '=')
		return fail(sc, "expected '=' after the key");
	sc->pos++;
	skip_blank(sc);
	if ((rc = value(sc, 0)))
		return rc;
	if (!sc->in_mine) {
		int rel = relation(sc, path);
		if (rel)
			sc->line = line; /* the error names the key's line */
		if (rel == 1)
			return fail(sc, "the table to replace is set by a key here, not by its own "
					"[table] header; remove these keys or edit by hand");
		if (rel == 2)
			return fail(sc, "a key here gives a value to a table the one to replace "
					"belongs to (an inline table?); edit by hand");
		if ((rc = define(sc, path, 0)))
			return rc;
	}
	return end_of_line(sc);
}

/* Scans the whole document into sc. */
static int scan_doc(struct scan *sc)
{
	int rc = 0;
	if (sc->len >= 3 && !memcmp(sc->s, "\xef\xbb\xbf", 3))
		sc->pos = 3;
	while (!rc) {
		skip_space(sc);
		if (at_end(sc))
			break;
		rc = peek(sc, 0) == '[' ? header(sc) : keyval(sc);
	}
	return rc ? rc : close_region(sc);
}

static int scan_init(struct scan *sc, const char *doc, size_t len, const char *name,
		     struct kf_err *err)
{
	memset(sc, 0, sizeof *sc);
	sc->s = doc;
	sc->len = len;
	sc->line = 1;
	sc->err = err;
	if (strlen(name) >= sizeof sc->name)
		return kf_err_set(err, KF_EINVAL, "table name '%.40s...' is too long", name);
	snprintf(sc->name, sizeof sc->name, "%s", name);
	for (char *c = sc->name; *c; c++)
		*c = *c == '.' ? SEP : *c;
	sc->paths = calloc(PATHS_MAX, sizeof *sc->paths);
	return sc->paths ? 0 : kf_err_set(err, KF_ENOMEM, "out of memory");
}

/* Builds the edited document from a scanned one. */
static char *assemble(const struct scan *sc, const char *block, size_t *out_len)
{
	size_t blen = strlen(block), cap = sc->len + blen + 3, n = 0, at = 0;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	if (sc->nregions == 0) {
		memcpy(out, sc->s, sc->len);
		n = sc->len;
		if (n && out[n - 1] != '\n')
			out[n++] = '\n';
		if (n && !(n >= 2 && out[n - 2] == '\n'))
			out[n++] = '\n';
		memcpy(out + n, block, blen);
		n += blen;
	} else {
		for (size_t i = 0; i < sc->nregions; i++) {
			const struct region *r = &sc->regions[i];
			memcpy(out + n, sc->s + at, r->start - at);
			n += r->start - at;
			if (i == 0) {
				memcpy(out + n, block, blen);
				n += blen;
			}
			at = r->end;
		}
		memcpy(out + n, sc->s + at, sc->len - at);
		n += sc->len - at;
	}
	out[n] = '\0';
	*out_len = n;
	return out;
}

int cli_toml_set_table(const char *doc, size_t len, const char *name, const char *block, char **out,
		       size_t *out_len, int *replaced, struct kf_err *err)
{
	struct scan sc, check;
	int rc;

	*out = NULL;
	*out_len = 0;
	*replaced = 0;
	if (len > CLI_TOML_MAX_BYTES)
		return kf_err_set(err, KF_ETOOBIG, "%zu bytes, over the %u-byte limit", len,
				  CLI_TOML_MAX_BYTES);
	if ((rc = scan_init(&sc, doc, len, name, err)))
		return rc;
	if ((rc = scan_doc(&sc)))
		goto out;
	*out = assemble(&sc, block, out_len);
	if (!*out) {
		rc = kf_err_set(err, KF_ENOMEM, "out of memory");
		goto out;
	}
	*replaced = (int)sc.nregions;
	/* The result must scan too, with exactly one table: a check on block
	 * and on the splice. */
	struct kf_err cerr = {0};
	if ((rc = scan_init(&check, *out, *out_len, name, &cerr)) == 0) {
		rc = scan_doc(&check);
		if (rc == 0 && check.nregions != 1)
			rc = kf_err_set(&cerr, KF_EINTERNAL, "%zu tables after the edit",
					check.nregions);
		free(check.paths);
	}
	if (rc) {
		rc = kf_err_set(err, KF_EINTERNAL,
				"internal error: the edited file would not scan "
				"(%s)",
				cerr.msg);
		free(*out);
		*out = NULL;
		*out_len = 0;
	}
out:
	free(sc.paths);
	return rc;
}
