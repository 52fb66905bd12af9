/* history_int: what history.c (runs, ceilings, the schema) shares with
 * history_jobs.c (exec jobs) and history_ceilings.c (reading the
 * calibrations). Included by no one else. */
#ifndef KF_HISTORY_INT_H
#define KF_HISTORY_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "sandbox/history/history.h"

struct history {
	sqlite3 *db;
	pthread_mutex_t mu; /* serializes every use of db */
	char path[512];
};

/* KF_EDB with "state.db (path): what: sqlite's message". */
int history_db_fail(struct history *h, const char *what, struct kf_err *err);

/* The text of column i of st's current row into dst (cap bytes, cut to
 * fit; "" for NULL). */
void history_col_text(sqlite3_stmt *st, int i, char *dst, size_t cap);

/* A new time-sortable id ("r" + 15 base32 chars) for unix time ms. */
void history_make_id(int64_t ms, char out[HISTORY_ID_BYTES]);

/* With h->mu held: BEGIN IMMEDIATE, then looks job key up. A job already
 * recorded: commits, copies its run id into id and sets *recorded.
 * Otherwise the transaction stays open for the insert. Returns 0,
 * KF_ENOTFOUND (no such job; rolled back), KF_EDB. */
int history_job_record_begin(struct history *h, const char *key, char id[HISTORY_ID_BYTES],
			     int *recorded, struct kf_err *err);

/* With h->mu held, ends the transaction record_begin opened: when rc is 0,
 * marks job key RECORDED with run id and commits; otherwise rolls back.
 * Returns rc, or KF_EDB when the commit fails. */
int history_job_record_end(struct history *h, const char *key, const char *id, int rc,
			   struct kf_err *err);

#endif
