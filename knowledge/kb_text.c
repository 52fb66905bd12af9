/* kb_text: text helpers of the knowledge module: name normalization, whole
 * file reads with a cap, an RFC 4180 CSV parser, edit distance. No sqlite,
 * no global state. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/fs.h"
#include "knowledge/kb_int.h"

void kb_norm_name(const char *in, char *out, size_t cap)
{
	size_t n = 0;
	if (cap == 0)
		return;
	for (const char *p = in ? in : ""; *p && n + 1 < cap; p++) {
		unsigned char c = (unsigned char)tolower((unsigned char)*p);
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.')
			out[n++] = (char)c;
	}
	out[n] = '\0';
	/* Vendor and brand words carry no identity; dropping them lets
	 * "NVIDIA GeForce RTX 4090" and "rtx 4090" meet. */
	static const char *const drop[] = {"nvidia", "geforce", "tesla", "quadro"};
	for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++) {
		size_t dl = strlen(drop[i]);
		if (strncmp(out, drop[i], dl) == 0 && out[dl] != '\0') {
			memmove(out, out + dl, strlen(out + dl) + 1);
			if (i > 0)
				break; /* one brand word after "nvidia" at most */
		}
	}
}

int kb_read_file(const char *path, size_t cap, char **out, size_t *len, struct kf_err *err)
{
	int rc = fs_read_file(path, cap, 0, out, len);
	if (rc == KF_ETOOBIG)
		return kf_err_set(err, rc, "%s: larger than %zu bytes", path, cap);
	if (rc == KF_ENOMEM)
		return kf_err_set(err, rc, "%s: out of memory", path);
	if (rc)
		return kf_err_set(err, rc, "%s: cannot read: %s", path, strerror(errno));
	return 0;
}

/* Grows *arr (elements of size sz) to hold at least need elements. */
static int grow(void **arr, size_t *cap, size_t need, size_t sz)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 16;
	while (nc < need)
		nc *= 2;
	void *p = realloc(*arr, nc * sz);
	if (!p)
		return KF_ENOMEM;
	*arr = p;
	*cap = nc;
	return 0;
}

/* Copies one cell at *p (quoted, with "" for a quote, or plain up to the
 * next comma or line end) unescaped into buf at *bn; *p and *line move
 * past it. */
static int csv_cell(const char *name, const char **pp, size_t *line, char *buf, size_t *bn,
		    struct kf_err *err)
{
	const char *p = *pp;
	if (*p == '"') {
		size_t qline = *line;
		p++;
		for (;;) {
			if (*p == '\0')
				return kf_err_set(err, KF_EINVAL,
						  "%s:%zu: unterminated quoted cell", name, qline);
			if (*p == '"' && p[1] == '"') {
				buf[(*bn)++] = '"';
				p += 2;
			} else if (*p == '"') {
				p++;
				break;
			} else {
				if (*p == '\n')
					(*line)++;
				buf[(*bn)++] = *p++;
			}
		}
		if (*p != ',' && *p != '\n' && *p != '\r' && *p)
			return kf_err_set(err, KF_EINVAL, "%s:%zu: text after a closing quote",
					  name, *line);
	} else {
		while (*p && *p != ',' && *p != '\n' && !(*p == '\r' && p[1] == '\n'))
			buf[(*bn)++] = *p++;
	}
	*pp = p;
	return 0;
}

int kb_csv_parse(const char *name, const char *text, struct kb_csv *csv, struct kf_err *err)
{
	int rc = 0;
	size_t tlen = strlen(text);
	/* Cells are copied unescaped into one buffer, each NUL-terminated:
	 * never longer than the text plus one NUL per cell. */
	char *buf = malloc(tlen * 2 + 2);
	char **cells = NULL; /* all cells, in order */
	size_t cells_len = 0, cells_cap = 0;
	size_t *row_start = NULL, *row_line = NULL; /* index into cells */
	size_t rows_len = 0, rows_cap = 0, lines_cap = 0;
	size_t bn = 0, line = 1;
	const char *p = text;

	memset(csv, 0, sizeof *csv);
	if (!buf)
		return kf_err_set(err, KF_ENOMEM, "%s: out of memory", name);
	while (*p) {
		if (*p == '#') { /* comment line */
			while (*p && *p != '\n')
				p++;
			if (*p == '\n') {
				p++;
				line++;
			}
			continue;
		}
		if (*p == '\n' || (*p == '\r' && p[1] == '\n')) { /* blank */
			p += *p == '\r' ? 2 : 1;
			line++;
			continue;
		}
		if (grow((void **)&row_start, &rows_cap, rows_len + 1, sizeof *row_start) ||
		    grow((void **)&row_line, &lines_cap, rows_len + 1, sizeof *row_line)) {
			rc = kf_err_set(err, KF_ENOMEM, "%s: out of memory", name);
			goto out;
		}
		row_start[rows_len] = cells_len;
		row_line[rows_len] = line;
		rows_len++;
		for (;;) { /* one cell */
			if (grow((void **)&cells, &cells_cap, cells_len + 1, sizeof *cells)) {
				rc = kf_err_set(err, KF_ENOMEM, "%s: out of memory", name);
				goto out;
			}
			cells[cells_len++] = buf + bn;
			if ((rc = csv_cell(name, &p, &line, buf, &bn, err)))
				goto out;
			buf[bn++] = '\0';
			if (*p == ',') {
				p++;
				continue;
			}
			if (*p == '\r')
				p++;
			if (*p == '\n') {
				p++;
				line++;
			}
			break;
		}
	}
	if (rows_len == 0) {
		rc = kf_err_set(err, KF_EINVAL, "%s: no header row", name);
		goto out;
	}
	csv->cols_len = (rows_len > 1 ? row_start[1] : cells_len) - row_start[0];
	for (size_t r = 0; r < rows_len; r++) {
		size_t end = r + 1 < rows_len ? row_start[r + 1] : cells_len;
		if (end - row_start[r] != csv->cols_len) {
			rc = kf_err_set(err, KF_EINVAL, "%s:%zu: %zu cells, but the header has %zu",
					name, row_line[r], end - row_start[r], csv->cols_len);
			goto out;
		}
	}
	csv->rows = malloc(rows_len * sizeof *csv->rows);
	csv->lines = malloc(rows_len * sizeof *csv->lines);
	if (!csv->rows || !csv->lines) {
		rc = kf_err_set(err, KF_ENOMEM, "%s: out of memory", name);
		goto out;
	}
	csv->header = cells;
	csv->rows_len = rows_len - 1;
	for (size_t r = 1; r < rows_len; r++) {
		csv->rows[r - 1] = cells + row_start[r];
		csv->lines[r - 1] = row_line[r];
	}
	csv->buf = buf;
	buf = NULL;
	cells = NULL;
out:
	free(row_start);
	free(row_line);
	if (rc) {
		free(csv->rows);
		free(csv->lines);
		memset(csv, 0, sizeof *csv);
		free(cells);
	}
	free(buf);
	return rc;
}

void kb_csv_fini(struct kb_csv *csv)
{
	if (!csv)
		return;
	free(csv->header); /* the cells array starts at the header */
	free(csv->rows);
	free(csv->lines);
	free(csv->buf);
	memset(csv, 0, sizeof *csv);
}

int kb_csv_col(const struct kb_csv *csv, const char *name)
{
	for (size_t i = 0; i < csv->cols_len; i++)
		if (strcmp(csv->header[i], name) == 0)
			return (int)i;
	return -1;
}

int kb_edit_distance(const char *a, const char *b)
{
	int d[64][64];
	size_t la = strnlen(a, 63), lb = strnlen(b, 63);
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			int c = a[i - 1] == b[j - 1] ? 0 : 1;
			int v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + c < v)
				v = d[i - 1][j - 1] + c;
			d[i][j] = v;
		}
	return d[la][lb];
}

void kb_best_insert(const char **ids, int *scores, size_t *len, size_t cap, const char *id,
		    int score)
{
	for (size_t i = 0; i < *len; i++)
		if (strcmp(ids[i], id) == 0) {
			if (score >= scores[i])
				return;
			/* better score for a known id: drop it, reinsert */
			memmove(ids + i, ids + i + 1, (*len - i - 1) * sizeof *ids);
			memmove(scores + i, scores + i + 1, (*len - i - 1) * sizeof *scores);
			(*len)--;
			break;
		}
	size_t pos = *len;
	while (pos > 0 && scores[pos - 1] > score)
		pos--;
	if (pos >= cap)
		return;
	size_t n = *len < cap ? *len : cap - 1;
	memmove(ids + pos + 1, ids + pos, (n - pos) * sizeof *ids);
	memmove(scores + pos + 1, scores + pos, (n - pos) * sizeof *scores);
	ids[pos] = id;
	scores[pos] = score;
	if (*len < cap)
		(*len)++;
}

/* ---- snippets ---------------------------------------------------------------- */

static int word_char(unsigned char c)
{
	return isalnum(c) || c >= 0x80 || c == '_';
}

/* Light stemming for highlighting only: drops a plural or -ing/-ed ending
 * so "conflicts" finds "conflict" and "coalescing" finds "coalesced". */
static size_t stem_len(const char *w, size_t n)
{
	static const char *const suf[] = {"ing", "es", "ed", "s"};
	for (size_t i = 0; i < sizeof suf / sizeof suf[0]; i++) {
		size_t sl = strlen(suf[i]);
		if (n > sl + 2 && strncmp(w + n - sl, suf[i], sl) == 0)
			return n - sl;
	}
	return n;
}

struct term {
	const char *w;
	size_t len, stem;
	unsigned char first; /* lower-case first letter */
};

static int word_matches(const char *bw, size_t bn, const struct term *t, size_t nt)
{
	unsigned char f = (unsigned char)tolower((unsigned char)bw[0]);
	for (size_t i = 0; i < nt; i++)
		if (t[i].first == f && t[i].stem >= 2 && bn >= t[i].stem &&
		    (bn == t[i].len || t[i].stem >= 3) && strncasecmp(bw, t[i].w, t[i].stem) == 0)
			return 1;
	return 0;
}

void kb_snippet(const char *body, const char *terms, char *out, size_t cap)
{
	enum { WIN = 24, MAXW = 4096 };
	size_t starts[MAXW], lens[MAXW];
	unsigned char hit[MAXW];
	size_t nw = 0, at = 0, nt = 0;
	struct term t[64];
	const char *p = body;
	out[0] = '\0';
	if (cap < 16)
		return;
	for (const char *q = terms; *q && nt < 64;) {
		size_t tl = strcspn(q, " ");
		if (tl > 0) {
			t[nt].w = q;
			t[nt].len = tl;
			t[nt].stem = stem_len(q, tl);
			t[nt].first = (unsigned char)tolower((unsigned char)q[0]);
			nt++;
		}
		q += tl;
		while (*q == ' ')
			q++;
	}
	while (*p && nw < MAXW) {
		while (*p && !word_char((unsigned char)*p))
			p++;
		if (!*p)
			break;
		const char *s = p;
		while (*p && word_char((unsigned char)*p))
			p++;
		starts[nw] = (size_t)(s - body);
		lens[nw] = (size_t)(p - s);
		hit[nw] = (unsigned char)word_matches(s, lens[nw], t, nt);
		nw++;
	}
	if (nw == 0)
		return;
	/* the window of WIN words holding the most matches */
	size_t best = 0, best_n = 0, cur = 0;
	for (size_t i = 0; i < nw; i++) {
		cur += hit[i];
		if (i >= WIN)
			cur -= hit[i - WIN];
		if (cur > best_n) {
			best_n = cur;
			best = i >= WIN - 1 ? i - (WIN - 1) : 0;
		}
	}
	size_t end = best + WIN < nw ? best + WIN : nw;
	if (best > 0)
		at += (size_t)snprintf(out + at, cap - at, "...");
	for (size_t i = best; i < end && at + 8 < cap; i++) {
		/* the text between words, flattened to one space */
		if (i > best) {
			int nl = 0;
			for (size_t k = starts[i - 1] + lens[i - 1]; k < starts[i]; k++)
				nl |= body[k] == '\n' || body[k] == '\r' || body[k] == '\t';
			size_t gap = starts[i] - (starts[i - 1] + lens[i - 1]);
			if (nl || gap > 3) {
				out[at++] = ' ';
			} else {
				for (size_t k = starts[i - 1] + lens[i - 1];
				     k < starts[i] && at + 8 < cap; k++)
					out[at++] = body[k] == '*' ? ' ' : body[k];
			}
		}
		size_t need = lens[i] + (hit[i] ? 4 : 0);
		if (at + need + 4 >= cap)
			break;
		if (hit[i]) {
			memcpy(out + at, "**", 2);
			at += 2;
		}
		memcpy(out + at, body + starts[i], lens[i]);
		at += lens[i];
		if (hit[i]) {
			memcpy(out + at, "**", 2);
			at += 2;
		}
	}
	if (end < nw && at + 4 < cap)
		at += (size_t)snprintf(out + at, cap - at, "...");
	out[at < cap ? at : cap - 1] = '\0';
}
