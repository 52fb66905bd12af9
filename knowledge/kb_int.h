/* kb_int: internals shared by the knowledge module's files (kb.c, kb_occ.c,
 * kb_build.c, kb_build_guides.c, kb_text.c); included by no one else. */
#ifndef KF_KB_INT_H
#define KF_KB_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>

#include "knowledge/kb.h"
#include "base/kf_err.h"

#define KB_FILE_MAX_BYTES (4u << 20) /* any one source file */
#define KB_SCHEMA_VERSION "3"

/* ---- the kb (kb.c, kb_guides.c) ---------------------------------------- */

#define POOL_MAX 8

struct conn {
	sqlite3 *db;
	sqlite3_stmt *search;
	sqlite3_stmt *snippet;
	int busy;
};

struct alias {
	const char *alias; /* normalized */
	int gpu;	   /* index into gpus */
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

/* Takes a free pooled connection, opening one (up to POOL_MAX) or waiting
 * for one; give it back with kb_pool_put. KF_EIO/KF_EDB when opening fails. */
int kb_pool_get(struct kb *kb, struct conn **out, struct kf_err *err)
	__attribute__((warn_unused_result));
void kb_pool_put(struct kb *kb, struct conn *c);

/* Registers the kf_rank FTS5 function on db (kb_guides.c). 0 or -1. */
int kb_rank_register(sqlite3 *db);

/* Normalizes a GPU name or alias for matching: lower case, keeps only
 * [a-z0-9.], drops a leading "nvidia", then "geforce", "tesla" or "quadro".
 * Writes at most cap bytes (NUL-terminated) into out. */
void kb_norm_name(const char *in, char *out, size_t cap);

/* Reads the whole file at path into a new NUL-terminated buffer (*out, free
 * with free(), *len bytes without the NUL). KF_EIO naming the path when it
 * cannot be read, KF_ETOOBIG past cap bytes. */
int kb_read_file(const char *path, size_t cap, char **out, size_t *len, struct kf_err *err)
	__attribute__((warn_unused_result));

/* A parsed CSV file (RFC 4180: quotes, doubled quotes, commas and newlines
 * inside quotes). Lines starting with '#' outside quotes are comments. */
struct kb_csv {
	size_t rows_len; /* data rows, the header not counted */
	size_t cols_len; /* header columns */
	char **header;	 /* cols_len names */
	char ***rows;	 /* rows_len arrays of cols_len cells */
	size_t *lines;	 /* 1-based line where each row starts */
	char *buf;	 /* storage for every cell */
};

/* Parses text (borrowed) from file name (for messages). Every row must have
 * as many cells as the header. Returns 0 and fills csv (free with
 * kb_csv_fini), or KF_EINVAL naming the file and line. */
int kb_csv_parse(const char *name, const char *text, struct kb_csv *csv, struct kf_err *err)
	__attribute__((warn_unused_result));
void kb_csv_fini(struct kb_csv *csv);

/* Column index of name in csv's header, or -1. */
int kb_csv_col(const struct kb_csv *csv, const char *name);

/* Fixed-size Levenshtein distance of two short strings (each cut at 63
 * bytes), for "did you mean". */
int kb_edit_distance(const char *a, const char *b);

/* Appends to an array of up to cap best (lowest score) candidates; used for
 * suggestions. Keeps ids[] sorted by score, ties in insertion order. */
void kb_best_insert(const char **ids, int *scores, size_t *len, size_t cap, const char *id,
		    int score);

/* Writes into out (cap bytes, NUL-terminated, valid UTF-8 when body is) an
 * excerpt of body: the 24-word window with the most words matching terms
 * (space-separated lower-case words; plural/-ing/-ed endings ignored),
 * matches wrapped in ** **, "..." where text was cut. */
void kb_snippet(const char *body, const char *terms, char *out, size_t cap);

#endif
