/* history_jobs: the exec_jobs table of state.db: GPU jobs handed to a
 * cluster executor, from submission until their run is recorded. The
 * "recorded" mark is written in the same transaction as the run
 * (history_add with a job_key), so a run is recorded once even when two
 * daemons (the one that submitted it, a restarted one) both finish it. */
#include "sandbox/history/history.h"
#include "sandbox/history/history_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const STATE_NAMES[] = {"submitted", "ended", "recorded"};

const char *history_job_state_name(int state)
{
	return state >= 0 && state <= HISTORY_JOB_RECORDED ? STATE_NAMES[state] : "?";
}

static int state_parse(const char *s)
{
	for (int i = 0; s && i <= HISTORY_JOB_RECORDED; i++)
		if (strcmp(s, STATE_NAMES[i]) == 0)
			return i;
	return HISTORY_JOB_SUBMITTED;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Fields are fixed arrays filled by the caller: one without its NUL would
 * be read past its end. */
static int check_fields(const struct history_job *j, struct kf_err *err)
{
	const struct {
		const char *name;
		const char *v;
		size_t cap;
	} f[] = {{"tool", j->tool, sizeof(j->tool)},
		 {"client", j->client, sizeof(j->client)},
		 {"dir", j->dir, sizeof(j->dir)},
		 {"slurm_id", j->slurm_id, sizeof(j->slurm_id)},
		 {"reason", j->reason, sizeof(j->reason)}};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (!memchr(f[i].v, '\0', f[i].cap))
			return kf_err_set(err, KF_ETOOBIG,
					  "history: job %s is not terminated "
					  "within %zu bytes",
					  f[i].name, f[i].cap);
	return 0;
}

int history_job_add(struct history *h, struct history_job *job, struct kf_err *err)
{
	static const char sql[] = "INSERT INTO exec_jobs (key, tool, client, dir, slurm_id, "
				  "attempt, state, reason, created_ms) VALUES (?,?,?,?,?,?,?,?,?)";
	sqlite3_stmt *st = NULL;
	int rc = check_fields(job, err);

	if (rc)
		return rc;
	pthread_mutex_lock(&h->mu);
	job->created_ms = now_ms();
	history_make_id(job->created_ms, job->key);
	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK) {
		rc = history_db_fail(h, "preparing the job insert", err);
		goto out;
	}
	sqlite3_bind_text(st, 1, job->key, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, job->tool, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, job->client, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, job->dir, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, job->slurm_id, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 6, job->attempt);
	sqlite3_bind_text(st, 7, history_job_state_name(job->state), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 8, job->reason, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 9, job->created_ms);
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = history_db_fail(h, "recording the job", err);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&h->mu);
	return rc;
}

int history_job_update(struct history *h, const struct history_job *job, struct kf_err *err)
{
	static const char sql[] =
		"UPDATE exec_jobs SET slurm_id = ?, attempt = ?, reason = ?, "
		"state = CASE WHEN state = 'recorded' THEN state ELSE ? END, dir = ? WHERE key = ?";
	sqlite3_stmt *st = NULL;
	int rc = check_fields(job, err);

	if (rc)
		return rc;
	pthread_mutex_lock(&h->mu);
	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK) {
		rc = history_db_fail(h, "preparing the job update", err);
		goto out;
	}
	sqlite3_bind_text(st, 1, job->slurm_id, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, job->attempt);
	sqlite3_bind_text(st, 3, job->reason, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, history_job_state_name(job->state), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, job->dir, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, job->key, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = history_db_fail(h, "updating the job", err);
	else if (sqlite3_changes(h->db) == 0)
		rc = kf_err_set(err, KF_ENOTFOUND, "history: no job '%s'", job->key);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&h->mu);
	return rc;
}

#define JOB_COLUMNS "key, tool, client, dir, slurm_id, attempt, state, reason, run_id, created_ms"

static void read_job(sqlite3_stmt *st, struct history_job *j)
{
	memset(j, 0, sizeof(*j));
	history_col_text(st, 0, j->key, sizeof(j->key));
	history_col_text(st, 1, j->tool, sizeof(j->tool));
	history_col_text(st, 2, j->client, sizeof(j->client));
	history_col_text(st, 3, j->dir, sizeof(j->dir));
	history_col_text(st, 4, j->slurm_id, sizeof(j->slurm_id));
	j->attempt = sqlite3_column_int(st, 5);
	j->state = state_parse((const char *)sqlite3_column_text(st, 6));
	history_col_text(st, 7, j->reason, sizeof(j->reason));
	history_col_text(st, 8, j->run_id, sizeof(j->run_id));
	j->created_ms = sqlite3_column_int64(st, 9);
}

int history_job_get(struct history *h, const char *key, struct history_job *out, struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = 0, step;

	pthread_mutex_lock(&h->mu);
	if (sqlite3_prepare_v2(h->db, "SELECT " JOB_COLUMNS " FROM exec_jobs WHERE key = ?", -1,
			       &st, NULL) != SQLITE_OK) {
		rc = history_db_fail(h, "preparing a job lookup", err);
		goto out;
	}
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	step = sqlite3_step(st);
	if (step == SQLITE_ROW)
		read_job(st, out);
	else if (step == SQLITE_DONE)
		rc = kf_err_set(err, KF_ENOTFOUND, "history: no job '%s'", key);
	else
		rc = history_db_fail(h, "reading a job", err);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&h->mu);
	return rc;
}

int history_jobs_pending(struct history *h, struct history_job **out, size_t *len,
			 struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	struct history_job *v = NULL;
	size_t n = 0, cap = 0;
	int rc = 0, step;

	*out = NULL;
	*len = 0;
	pthread_mutex_lock(&h->mu);
	if (sqlite3_prepare_v2(h->db,
			       "SELECT " JOB_COLUMNS " FROM exec_jobs WHERE state != 'recorded' "
			       "ORDER BY key",
			       -1, &st, NULL) != SQLITE_OK) {
		rc = history_db_fail(h, "preparing the job listing", err);
		goto out;
	}
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct history_job *nv = realloc(v, nc * sizeof(*nv));
			if (!nv) {
				rc = kf_err_set(err, KF_ENOMEM, "history: out of memory");
				goto out;
			}
			v = nv;
			cap = nc;
		}
		read_job(st, &v[n++]);
	}
	if (step != SQLITE_DONE)
		rc = history_db_fail(h, "listing jobs", err);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&h->mu);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*len = n;
	return 0;
}

int history_job_record_begin(struct history *h, const char *key, char id[HISTORY_ID_BYTES],
			     int *recorded, struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = 0, step;

	*recorded = 0;
	if (sqlite3_exec(h->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return history_db_fail(h, "starting the job's record", err);
	if (sqlite3_prepare_v2(h->db, "SELECT run_id FROM exec_jobs WHERE key = ?", -1, &st,
			       NULL) != SQLITE_OK) {
		rc = history_db_fail(h, "preparing a job lookup", err);
		goto out;
	}
	sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
	step = sqlite3_step(st);
	if (step == SQLITE_DONE)
		rc = kf_err_set(err, KF_ENOTFOUND, "history: no job '%s' to record a run for", key);
	else if (step != SQLITE_ROW)
		rc = history_db_fail(h, "reading a job", err);
	else if (sqlite3_column_type(st, 0) != SQLITE_NULL) {
		history_col_text(st, 0, id, HISTORY_ID_BYTES);
		*recorded = 1;
	}
out:
	sqlite3_finalize(st);
	if (rc)
		(void)sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
	else if (*recorded && sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		rc = history_db_fail(h, "ending the job's record", err);
	return rc;
}

int history_job_record_end(struct history *h, const char *key, const char *id, int rc,
			   struct kf_err *err)
{
	sqlite3_stmt *st = NULL;

	if (!rc) {
		if (sqlite3_prepare_v2(h->db,
				       "UPDATE exec_jobs SET state = 'recorded', run_id = ? "
				       "WHERE key = ?",
				       -1, &st, NULL) != SQLITE_OK ||
		    (sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC),
		     sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC),
		     sqlite3_step(st)) != SQLITE_DONE)
			rc = history_db_fail(h, "marking the job recorded", err);
		sqlite3_finalize(st);
	}
	if (!rc && sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		rc = history_db_fail(h, "committing the job's run", err);
	if (rc)
		(void)sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}
