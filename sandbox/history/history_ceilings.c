/* history_ceilings: reading the calibrations (history.c stores them): one
 * GPU's by uuid, the list, and those of a GPU's model rather than of the
 * one GPU: a cluster's nodes of one GPU type share the calibration made on
 * one of them (kforge calibrate --executor slurm), so a node looks its
 * GPU up by uuid, then by model name. See history.h. */
#include "sandbox/history/history.h"
#include "sandbox/history/history_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CEIL_COLS                                                                                  \
	"SELECT gpu_uuid, device_name, copy_gbps, bf16_tflops, fp32_tflops, measured_ms, method, " \
	"run_id FROM ceilings "

static void read_row(sqlite3_stmt *st, struct history_ceilings *c)
{
	memset(c, 0, sizeof(*c));
	history_col_text(st, 0, c->gpu_uuid, sizeof(c->gpu_uuid));
	history_col_text(st, 1, c->device_name, sizeof(c->device_name));
	c->copy_gbps = sqlite3_column_double(st, 2);
	c->bf16_tflops = sqlite3_column_double(st, 3);
	c->fp32_tflops = sqlite3_column_double(st, 4);
	c->measured_ms = sqlite3_column_int64(st, 5);
	history_col_text(st, 6, c->method, sizeof(c->method));
	history_col_text(st, 7, c->run_id, sizeof(c->run_id));
}

/* The first row of sql (CEIL_COLS and a clause with one ?, bound to
 * value) into *out, zeroed first; what names the lookup in a database
 * error. Returns 0, KF_ENOTFOUND with no message (the caller words it) or
 * KF_EDB. */
static int read_one(struct history *h, const char *sql, const char *what, const char *value,
		    struct history_ceilings *out, struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	char msg[80];

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&h->mu);
	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK) {
		snprintf(msg, sizeof msg, "preparing %s", what);
		rc = history_db_fail(h, msg, err);
		goto out;
	}
	sqlite3_bind_text(st, 1, value ? value : "", -1, SQLITE_STATIC);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW: read_row(st, out); break;
	case SQLITE_DONE: rc = KF_ENOTFOUND; break;
	default: rc = history_db_fail(h, "reading the ceilings", err);
	}
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&h->mu);
	return rc;
}

int history_get_ceilings(struct history *h, const char *gpu_uuid, struct history_ceilings *out,
			 struct kf_err *err)
{
	int rc = read_one(h, CEIL_COLS "WHERE gpu_uuid = ?", "the ceilings lookup", gpu_uuid, out,
			  err);

	if (rc == KF_ENOTFOUND)
		kf_err_set(err, rc, "GPU %s has no calibration: run kforge calibrate",
			   gpu_uuid ? gpu_uuid : "(none)");
	return rc;
}

int history_get_ceilings_of(struct history *h, const char *gpu_uuid, const char *device_name,
			    struct history_ceilings *out, struct kf_err *err)
{
	struct kf_err e = {0};
	int rc = history_get_ceilings(h, gpu_uuid, out, &e);

	if (rc != KF_ENOTFOUND) {
		if (rc)
			kf_err_set(err, rc, "%s", e.msg);
		return rc;
	}
	rc = read_one(h, CEIL_COLS "WHERE device_name = ? ORDER BY measured_ms DESC LIMIT 1",
		      "the ceilings lookup by name", device_name, out, err);
	if (rc == KF_ENOTFOUND)
		kf_err_set(err, rc, "no %s has a calibration: run kforge calibrate",
			   device_name ? device_name : "GPU");
	return rc;
}

int history_list_ceilings(struct history *h, struct history_ceilings **out, size_t *n,
			  struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int rc = 0, step;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&h->mu);
	if (sqlite3_prepare_v2(h->db, CEIL_COLS "ORDER BY measured_ms", -1, &st, NULL) !=
	    SQLITE_OK) {
		rc = history_db_fail(h, "preparing the ceilings list", err);
		goto out;
	}
	while ((step = sqlite3_step(st)) == SQLITE_ROW && *n < HISTORY_CEILINGS_MAX) {
		if (*n == cap) {
			size_t nc = cap ? cap * 2 : 8;
			struct history_ceilings *g = realloc(*out, nc * sizeof(**out));
			if (!g) {
				rc = kf_err_set(err, KF_ENOMEM, "history: out of memory");
				goto out;
			}
			*out = g;
			cap = nc;
		}
		read_row(st, &(*out)[(*n)++]);
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		rc = history_db_fail(h, "listing the ceilings", err);
out:
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	sqlite3_finalize(st);
	pthread_mutex_unlock(&h->mu);
	return rc;
}
