/* kb_build_figsrc: imports gpu-facts/figure_sources.csv, the source of one
 * figure ("gpu,field,source") where a GPU row's source list names several
 * documents. Each line replaces that figure's source text and source keys,
 * so a figure cites the one document (and place in it) it came from; a
 * figure without a line keeps its row's text. A line for an unknown (empty)
 * figure is its gap: why it has no value and which documents were searched
 * ("no NVIDIA source: ..."), so the answer says so instead of a bare null.
 * Runs after the GPUs are in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/kb_build_int.h"
#include "knowledge/kb_int.h"

struct figsrc {
	sqlite3 *db;
	sqlite3_stmt *status, *has_key, *upd, *del, *ins;
	const char *path;
};

/* One line: the figure must exist and not be n/a (n/a explains itself), the
 * source must name a key of SOURCES.md, and no figure may have two lines. */
static int import_line(struct figsrc *f, const struct kb_csv *csv, size_t r, struct kf_err *err)
{
	const char *gpu = csv->rows[r][kb_csv_col(csv, "gpu")];
	const char *field = csv->rows[r][kb_csv_col(csv, "field")];
	const char *src = csv->rows[r][kb_csv_col(csv, "source")];
	size_t line = csv->lines[r];
	for (size_t q = 0; q < r; q++)
		if (strcmp(csv->rows[q][kb_csv_col(csv, "gpu")], gpu) == 0 &&
		    strcmp(csv->rows[q][kb_csv_col(csv, "field")], field) == 0)
			return kf_err_set(err, KF_EINVAL,
					  "%s:%zu: %s.%s already has a source at line %zu; one "
					  "line per figure",
					  f->path, line, gpu, field, csv->lines[q]);
	kb_build_bind_text(f->status, 1, gpu);
	kb_build_bind_text(f->status, 2, field);
	int s = sqlite3_step(f->status);
	char st[16] = "";
	if (s == SQLITE_ROW)
		snprintf(st, sizeof st, "%s", (const char *)sqlite3_column_text(f->status, 0));
	sqlite3_reset(f->status);
	sqlite3_clear_bindings(f->status);
	if (s != SQLITE_ROW)
		return kf_err_set(err, KF_EINVAL,
				  "%s:%zu: no figure %s.%s (gpu is an id of aliases.csv, field a "
				  "figure column of gpus.csv)",
				  f->path, line, gpu, field);
	if (strcmp(st, "n/a") == 0)
		return kf_err_set(err, KF_EINVAL,
				  "%s:%zu: figure %s.%s is n/a in gpus.csv; only a known figure "
				  "takes a source, or an unknown one its gap",
				  f->path, line, gpu, field);
	int rc, nkeys = 0;
	kb_build_bind_text(f->upd, 1, src);
	kb_build_bind_text(f->upd, 2, gpu);
	kb_build_bind_text(f->upd, 3, field);
	kb_build_bind_text(f->del, 1, gpu);
	kb_build_bind_text(f->del, 2, field);
	if ((rc = kb_build_step_reset(f->db, f->upd, "figure source", err)) ||
	    (rc = kb_build_step_reset(f->db, f->del, "figure source", err)) ||
	    (rc = kb_build_link_keys(f->db, f->has_key, f->ins, gpu, field, src, &nkeys, err)))
		return rc;
	if (nkeys == 0)
		return kf_err_set(err, KF_EINVAL,
				  "%s:%zu: source of %s.%s names no key of SOURCES.md ('%.60s')",
				  f->path, line, gpu, field, src);
	return 0;
}

int kb_build_figsrc_import(sqlite3 *db, const char *path, struct kf_err *err)
{
	int rc = 0;
	char *text = NULL;
	size_t len = 0;
	struct kb_csv csv;
	struct figsrc f = {.db = db, .path = path};
	memset(&csv, 0, sizeof csv);
	FILE *probe = fopen(path, "rb");
	if (!probe)
		return 0; /* no per-figure sources: every figure cites its row */
	fclose(probe);
	if ((rc = kb_read_file(path, KB_FILE_MAX_BYTES, &text, &len, err)) ||
	    (rc = kb_csv_parse(path, text, &csv, err)))
		goto out;
	static const char *const need[] = {"gpu", "field", "source"};
	for (size_t i = 0; i < 3; i++)
		if (kb_csv_col(&csv, need[i]) < 0) {
			rc = kf_err_set(err, KF_EINVAL, "%s: no column '%s' (gpu,field,source)",
					path, need[i]);
			goto out;
		}
	if ((rc = kb_build_prepare(db, "SELECT status FROM gpu_figures WHERE gpu_id=? AND field=?",
				   &f.status, err)) ||
	    (rc = kb_build_prepare(db, "SELECT 1 FROM sources WHERE key=?", &f.has_key, err)) ||
	    (rc = kb_build_prepare(db, "UPDATE gpu_figures SET source=? WHERE gpu_id=? AND field=?",
				   &f.upd, err)) ||
	    (rc = kb_build_prepare(db, "DELETE FROM figure_sources WHERE gpu_id=? AND field=?",
				   &f.del, err)) ||
	    (rc = kb_build_prepare(db, "INSERT OR IGNORE INTO figure_sources VALUES (?,?,?)",
				   &f.ins, err)))
		goto out;
	for (size_t r = 0; r < csv.rows_len && !rc; r++)
		rc = import_line(&f, &csv, r, err);
out:
	sqlite3_finalize(f.status);
	sqlite3_finalize(f.has_key);
	sqlite3_finalize(f.upd);
	sqlite3_finalize(f.del);
	sqlite3_finalize(f.ins);
	kb_csv_fini(&csv);
	free(text);
	return rc;
}
