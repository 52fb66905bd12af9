/* kb_build_sources: imports gpu-facts/SOURCES.md into knowledge.db: the
 * "Source keys" table (one row per key; the DQ-* row expanded into one key
 * per device query) and the "Conflicts found" bullets (C1...). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/kb_build_int.h"
#include "knowledge/kb_int.h"

/* Splits a Markdown table row "| a | b | c |" into at most cap trimmed
 * cells written into row (modified in place); `\|` is a literal bar. */
static size_t md_cells(char *row, char **cells, size_t cap)
{
	size_t n = 0;
	char *p = row;
	while (*p == ' ')
		p++;
	if (*p != '|')
		return 0;
	p++;
	while (*p && n < cap) {
		char *start = p, *w = p;
		while (*p && !(*p == '|' && (p == start || p[-1] != '\\'))) {
			if (*p == '\\' && p[1] == '|')
				p++;
			*w++ = *p++;
		}
		if (!*p)
			break; /* text after the last bar is not a cell */
		*w = '\0';
		p++;
		while (*start == ' ')
			start++;
		char *e = start + strlen(start);
		while (e > start && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		cells[n++] = start;
	}
	return n;
}

static int insert_source(sqlite3 *db, sqlite3_stmt *st, const char *key, const char *title,
			 const char *where, struct kf_err *err)
{
	kb_build_bind_text(st, 1, key);
	kb_build_bind_text(st, 2, title);
	kb_build_bind_text(st, 3, where);
	char what[96];
	snprintf(what, sizeof what, "SOURCES.md: source key %.60s", key);
	return kb_build_step_reset(db, st, what, err);
}

/* The DQ-* row lists one device query per ';'-separated item: "DQ-T4 ids
 * 1677002290, 32424744097". Each becomes its own key. */
static int insert_dq_keys(sqlite3 *db, sqlite3_stmt *st, char *desc, struct kf_err *err)
{
	char *colon = strchr(desc, ':');
	if (!colon)
		return 0;
	*colon = '\0';
	const char *title = desc;
	char *save = NULL;
	for (char *it = strtok_r(colon + 1, ";", &save); it; it = strtok_r(NULL, ";", &save)) {
		while (*it == ' ')
			it++;
		if (strncmp(it, "DQ-", 3) != 0)
			continue;
		char key[64];
		size_t k = 0;
		while (it[k] && it[k] != ' ' && k + 1 < sizeof key) {
			key[k] = it[k];
			k++;
		}
		key[k] = '\0';
		char where[256];
		snprintf(where, sizeof where, "%s", it + k + (it[k] == ' '));
		int rc = insert_source(db, st, key, title, where, err);
		if (rc)
			return rc;
	}
	return 0;
}

int kb_build_import_sources_md(sqlite3 *db, const char *path, struct kf_err *err)
{
	int rc = 0;
	char *text = NULL;
	size_t len = 0;
	sqlite3_stmt *src = NULL, *cf = NULL;
	enum { NONE, KEYS, CONFLICTS } sect = NONE;
	size_t keys = 0;
	char *cur_text = NULL; /* the open conflict bullet */
	char cur_id[16] = "", cur_title[160] = "";

	if ((rc = kb_read_file(path, KB_FILE_MAX_BYTES, &text, &len, err)))
		return rc;
	if ((rc = kb_build_prepare(db, "INSERT INTO sources VALUES (?,?,?)", &src, err)) ||
	    (rc = kb_build_prepare(db, "INSERT INTO conflicts VALUES (?,?,?)", &cf, err)))
		goto out;
	size_t cur_len = 0;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		int bullet = strncmp(line, "* **C", 5) == 0;
		int cont = (line[0] == ' ' && line[1] == ' ');
		if (cur_text && !cont) { /* a conflict bullet ended */
			kb_build_bind_text(cf, 1, cur_id);
			kb_build_bind_text(cf, 2, cur_title);
			kb_build_bind_text(cf, 3, cur_text);
			if ((rc = kb_build_step_reset(db, cf, "SOURCES.md: conflict", err)))
				goto out;
			free(cur_text);
			cur_text = NULL;
		}
		if (strncmp(line, "## ", 3) == 0) {
			sect = strstr(line, "Source keys") ? KEYS
			       : strstr(line, "Conflicts") ? CONFLICTS
							   : NONE;
			continue;
		}
		if (sect == KEYS && line[0] == '|') {
			char *cells[4];
			size_t n = md_cells(line, cells, 4);
			if (n < 3 || strcmp(cells[0], "key") == 0 ||
			    strncmp(cells[0], "---", 3) == 0)
				continue;
			if ((rc = insert_source(db, src, cells[0], cells[1], cells[2], err)))
				goto out;
			keys++;
			if (strcmp(cells[0], "DQ-*") == 0 &&
			    (rc = insert_dq_keys(db, src, cells[1], err)))
				goto out;
		} else if (sect == CONFLICTS && bullet) {
			/* "* **C1 — title.** text" */
			const char *p = line + 4;
			size_t k = 0;
			while (isalnum((unsigned char)p[k]) && k + 1 < sizeof cur_id) {
				cur_id[k] = p[k];
				k++;
			}
			cur_id[k] = '\0';
			const char *t = p + k;
			while (*t == ' ' || (unsigned char)*t >= 0x80)
				t++; /* the dash (UTF-8) and spaces */
			const char *te = strstr(t, "**");
			if (!te)
				te = t + strlen(t);
			snprintf(cur_title, sizeof cur_title, "%.*s", (int)(te - t), t);
			const char *body = *te ? te + 2 : te;
			while (*body == ' ')
				body++;
			cur_len = strlen(body);
			cur_text = malloc(cur_len + 1);
			if (!cur_text) {
				rc = kf_err_set(err, KF_ENOMEM, "out of memory");
				goto out;
			}
			memcpy(cur_text, body, cur_len + 1);
		} else if (cur_text && cont) {
			const char *c = line + 2;
			size_t cl = strlen(c);
			char *nt = realloc(cur_text, cur_len + cl + 2);
			if (!nt) {
				rc = kf_err_set(err, KF_ENOMEM, "out of memory");
				goto out;
			}
			cur_text = nt;
			cur_text[cur_len++] = ' ';
			memcpy(cur_text + cur_len, c, cl + 1);
			cur_len += cl;
		}
	}
	if (keys == 0)
		rc = kf_err_set(err, KF_EINVAL,
				"%s: no source keys table (a '## Source keys' section with "
				"a | key | source | where read | table)",
				path);
out:
	free(cur_text);
	sqlite3_finalize(src);
	sqlite3_finalize(cf);
	free(text);
	return rc;
}
