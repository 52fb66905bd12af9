/* history: state.db, the run history and calibrated ceilings; see history.h.
 * Durability: WAL with synchronous=FULL, so a commit is fsync'ed to the WAL
 * before history_add returns; a SIGKILL or a power cut after that cannot
 * lose the run (NORMAL would survive a process crash but may drop the last
 * commits on power loss; a run costs seconds, an fsync ~1 ms, so FULL is
 * cheap). One connection per struct history, serialized by a mutex;
 * busy_timeout lets the CLI and the daemon share the file. */
#include "sandbox/history/history.h"
#include "sandbox/history/history_int.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BUSY_TIMEOUT_MS 10000
#define ID_TIME_CHARS	9 /* 45 bits of unix ms: good until the year 3084 */
#define ID_RAND_CHARS	6 /* 30 random bits */
#define ID_LEN		(1 + ID_TIME_CHARS + ID_RAND_CHARS)

/* Crockford base32, lowercase: ASCII order equals numeric order, so ids sort
 * by time as strings. */
static const char B32[] = "0123456789abcdefghjkmnpqrstvwxyz";

static const char *const KIND_NAMES[] = {"compile", "check", "bench", "calibrate", "profile"};
static const char *const STATUS_NAMES[] = {"ok", "failed", "error"};

/* Each step migrates from version i to i + 1. Never edit a shipped step:
 * append a new one and raise HISTORY_SCHEMA_VERSION. */
static const char *const MIGRATIONS[HISTORY_SCHEMA_VERSION] = {
	/* 0 -> 1: runs */
	"CREATE TABLE runs ("
	" id TEXT PRIMARY KEY,"
	" kind TEXT NOT NULL CHECK (kind IN ('compile','check','bench','calibrate')),"
	" created_ms INTEGER NOT NULL,"
	" status TEXT NOT NULL CHECK (status IN ('ok','failed','error')),"
	" kernels TEXT NOT NULL DEFAULT '',"
	" source_hash TEXT,"
	" spec TEXT,"
	" device_name TEXT,"
	" device_uuid TEXT,"
	" summary TEXT NOT NULL DEFAULT '',"
	" result TEXT,"
	" duration_ms INTEGER NOT NULL DEFAULT 0"
	") WITHOUT ROWID;"
	"CREATE INDEX runs_kind ON runs(kind, id);",
	/* 1 -> 2: calibrated ceilings per GPU; listing by time */
	"CREATE TABLE ceilings ("
	" gpu_uuid TEXT PRIMARY KEY,"
	" device_name TEXT NOT NULL DEFAULT '',"
	" copy_gbps REAL,"
	" bf16_tflops REAL,"
	" fp32_tflops REAL,"
	" measured_ms INTEGER NOT NULL,"
	" method TEXT NOT NULL DEFAULT '',"
	" run_id TEXT"
	");"
	"CREATE INDEX runs_status ON runs(status, id);",
	/* 2 -> 3: GPU jobs handed to a cluster executor (sandbox/exec/) */
	"CREATE TABLE exec_jobs ("
	" key TEXT PRIMARY KEY,"
	" tool TEXT NOT NULL,"
	" client TEXT NOT NULL DEFAULT '',"
	" dir TEXT NOT NULL,"
	" slurm_id TEXT NOT NULL DEFAULT '',"
	" attempt INTEGER NOT NULL DEFAULT 0,"
	" state TEXT NOT NULL CHECK (state IN ('submitted','ended','recorded')),"
	" reason TEXT NOT NULL DEFAULT '',"
	" run_id TEXT,"
	" created_ms INTEGER NOT NULL"
	") WITHOUT ROWID;"
	"CREATE INDEX exec_jobs_state ON exec_jobs(state, key);",
	/* 3 -> 4: what a run means (for datasets): its description, the
	 * author's notes, the run it improves on, the versions it ran with */
	"ALTER TABLE runs ADD COLUMN description TEXT;"
	"ALTER TABLE runs ADD COLUMN notes TEXT;"
	"ALTER TABLE runs ADD COLUMN parent TEXT;"
	"ALTER TABLE runs ADD COLUMN env TEXT;"
	"CREATE INDEX runs_parent ON runs(parent);"
	"CREATE INDEX runs_source ON runs(source_hash, id);",
	/* 4 -> 5: profile runs (profile_kernel). The kind's CHECK lives in the
	 * table definition, so the table is rebuilt with its rows and indexes */
	"CREATE TABLE runs_v5 ("
	" id TEXT PRIMARY KEY,"
	" kind TEXT NOT NULL CHECK (kind IN ('compile','check','bench','calibrate','profile')),"
	" created_ms INTEGER NOT NULL,"
	" status TEXT NOT NULL CHECK (status IN ('ok','failed','error')),"
	" kernels TEXT NOT NULL DEFAULT '',"
	" source_hash TEXT,"
	" spec TEXT,"
	" device_name TEXT,"
	" device_uuid TEXT,"
	" summary TEXT NOT NULL DEFAULT '',"
	" result TEXT,"
	" duration_ms INTEGER NOT NULL DEFAULT 0,"
	" description TEXT,"
	" notes TEXT,"
	" parent TEXT,"
	" env TEXT"
	") WITHOUT ROWID;"
	"INSERT INTO runs_v5 (id, kind, created_ms, status, kernels, source_hash, spec,"
	" device_name, device_uuid, summary, result, duration_ms, description, notes, parent, env)"
	" SELECT id, kind, created_ms, status, kernels, source_hash, spec, device_name,"
	" device_uuid, summary, result, duration_ms, description, notes, parent, env FROM runs;"
	"DROP TABLE runs;"
	"ALTER TABLE runs_v5 RENAME TO runs;"
	"CREATE INDEX runs_kind ON runs(kind, id);"
	"CREATE INDEX runs_status ON runs(status, id);"
	"CREATE INDEX runs_parent ON runs(parent);"
	"CREATE INDEX runs_source ON runs(source_hash, id);",
};

static pthread_mutex_t id_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t id_last_ms = -1;
static uint32_t id_last_rand;

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static uint32_t random_bits(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)wall_ms() ^ (uint32_t)(uintptr_t)&v;
	return v;
}

/* "r" + 9 chars of ms + 6 random chars. Two ids made in one millisecond by
 * this process sort in creation order (the random part counts up). */
void history_make_id(int64_t ms, char out[HISTORY_ID_BYTES])
{
	uint32_t rnd;
	uint64_t t = (uint64_t)ms;

	pthread_mutex_lock(&id_mu);
	if (ms == id_last_ms)
		rnd = (id_last_rand + 1) & ((1u << 30) - 1);
	else
		rnd = random_bits() & ((1u << 29) - 1); /* room to count up */
	id_last_ms = ms;
	id_last_rand = rnd;
	pthread_mutex_unlock(&id_mu);
	out[0] = 'r';
	for (int i = ID_TIME_CHARS; i >= 1; i--, t >>= 5)
		out[i] = B32[t & 31];
	for (int i = ID_LEN - 1; i > ID_TIME_CHARS; i--, rnd >>= 5)
		out[i] = B32[rnd & 31];
	out[ID_LEN] = '\0';
}

static int id_valid(const char *id)
{
	if (!id || strlen(id) != ID_LEN || id[0] != 'r')
		return 0;
	for (int i = 1; i < ID_LEN; i++)
		if (!strchr(B32, id[i]) || id[i] == '\0')
			return 0;
	return 1;
}

const char *history_kind_name(int kind)
{
	return kind >= 0 && kind <= HISTORY_PROFILE ? KIND_NAMES[kind] : "?";
}

const char *history_status_name(int status)
{
	return status >= 0 && status <= HISTORY_ERROR ? STATUS_NAMES[status] : "?";
}

int history_kind_parse(const char *name)
{
	for (int i = 0; name && i <= HISTORY_PROFILE; i++)
		if (strcmp(name, KIND_NAMES[i]) == 0)
			return i;
	return KF_EINVAL;
}

int history_status_parse(const char *name)
{
	for (int i = 0; name && i <= HISTORY_ERROR; i++)
		if (strcmp(name, STATUS_NAMES[i]) == 0)
			return i;
	return KF_EINVAL;
}

/* sqlite running out of memory is the host's trouble, not the database's:
 * KF_ENOMEM, so callers do not report a broken state.db. */
static int db_code(struct history *h)
{
	return sqlite3_errcode(h->db) == SQLITE_NOMEM ? KF_ENOMEM : KF_EDB;
}

int history_db_fail(struct history *h, const char *what, struct kf_err *err)
{
	return kf_err_set(err, db_code(h), "state.db (%s): %s: %s", h->path, what,
			  sqlite3_errmsg(h->db));
}

static int exec(struct history *h, const char *sql, struct kf_err *err)
{
	char *msg = NULL;
	int rc;

	if (sqlite3_exec(h->db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	rc = kf_err_set(err, db_code(h), "state.db (%s): %s", h->path,
			msg ? msg : sqlite3_errmsg(h->db));
	sqlite3_free(msg);
	return rc;
}

static int read_version(struct history *h, int *v, struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if (sqlite3_prepare_v2(h->db, "PRAGMA user_version", -1, &st, NULL))
		return history_db_fail(h, "reading the schema version", err);
	rc = sqlite3_step(st);
	*v = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : history_db_fail(h, "reading the schema version", err);
}

/* One migration step (or none when current) in its own transaction.
 * BEGIN IMMEDIATE and re-reading the version inside it make two processes
 * opening a fresh file at once safe. Sets *done when the schema is current. */
static int migrate_step(struct history *h, int *done, struct kf_err *err)
{
	int v = 0, rc;
	char sql[64];

	*done = 0;
	rc = exec(h, "BEGIN IMMEDIATE", err);
	if (rc)
		return rc;
	rc = read_version(h, &v, err);
	if (rc)
		goto out;
	if (v == HISTORY_SCHEMA_VERSION) {
		*done = 1;
		goto out;
	}
	if (v > HISTORY_SCHEMA_VERSION || v < 0) {
		rc = kf_err_set(
			err, KF_EDB,
			"state.db (%s) schema version %d is newer than this kforge (%d): use a newer kforge or another data dir",
			h->path, v, HISTORY_SCHEMA_VERSION);
		goto out;
	}
	rc = exec(h, MIGRATIONS[v], err);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v + 1);
	if (!rc)
		rc = exec(h, sql, err);
out:
	if (!rc)
		rc = exec(h, "COMMIT", err);
	if (rc)
		(void)sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* Brings the schema to HISTORY_SCHEMA_VERSION, one step at a time. */
static int migrate(struct history *h, struct kf_err *err)
{
	int done = 0, rc = 0;

	while (!done && !rc)
		rc = migrate_step(h, &done, err);
	return rc;
}

/* The advice every refusal of an existing state.db ends with. */
#define KEEP_ADVICE                                                                     \
	"kforge will not start an empty history over it: restore it from a backup, or " \
	"move it away to start a new one"

/* Reads the schema: a file sqlite cannot read (not a database, corrupt
 * pages) is refused here with the reason, before anything writes to it. */
static int check_readable(struct history *h, struct kf_err *err)
{
	int rc = sqlite3_exec(h->db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
	int ext = sqlite3_extended_errcode(h->db) & 0xff;

	if (rc == SQLITE_OK)
		return 0;
	if (ext == SQLITE_NOTADB || ext == SQLITE_CORRUPT)
		return kf_err_set(err, KF_EDB, "state.db at %s is corrupt (%s); " KEEP_ADVICE,
				  h->path, sqlite3_errmsg(h->db));
	return kf_err_set(err, KF_EDB, "cannot read state.db at %s: %s", h->path,
			  sqlite3_errmsg(h->db));
}

/* Opens path into h (path already in h->path) and brings the schema up to
 * date. */
static int open_db(struct history *h, struct kf_err *err)
{
	int rc = sqlite3_open_v2(h->path, &h->db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
				 NULL);

	if (rc != SQLITE_OK)
		return kf_err_set(err, KF_EDB, "cannot open state.db at %s: %s", h->path,
				  h->db ? sqlite3_errmsg(h->db) : sqlite3_errstr(rc));
	sqlite3_busy_timeout(h->db, BUSY_TIMEOUT_MS);
	rc = check_readable(h, err);
	if (!rc)
		rc = exec(h, "PRAGMA journal_mode=WAL", err);
	if (!rc)
		rc = exec(h, "PRAGMA synchronous=FULL", err);
	if (!rc)
		rc = exec(h, "PRAGMA foreign_keys=ON", err);
	if (!rc)
		rc = migrate(h, err);
	return rc;
}

static struct history *history_alloc(const char *path)
{
	struct history *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	snprintf(h->path, sizeof(h->path), "%s", path);
	pthread_mutex_init(&h->mu, NULL);
	return h;
}

/* A missing state.db is made whole under a temporary name and linked into
 * place, so no process ever finds it empty; if another process linked its
 * own first, that one is used. */
static int create_whole(const char *path, struct kf_err *err)
{
	char tmp[sizeof(((struct history *)0)->path)];
	unsigned r = 0;
	struct history *h;
	int rc;

	if (getrandom(&r, sizeof(r), 0) < 0)
		r = (unsigned)time(NULL);
	if (snprintf(tmp, sizeof(tmp), "%s.new-%ld-%08x", path, (long)getpid(), r) >=
	    (int)sizeof(tmp))
		return kf_err_set(err, KF_EINVAL, "state.db path '%.200s...' is too long", path);
	h = history_alloc(tmp);
	if (!h)
		return kf_err_set(err, KF_ENOMEM, "history: out of memory");
	rc = open_db(h, err);
	history_close(h); /* checkpoints the WAL into the file */
	/* A file system without hard links gets a rename: the same
	 * whole file, without the check that no one else made one first. */
	if (!rc && link(tmp, path) != 0 && errno != EEXIST &&
	    ((errno != EPERM && errno != EOPNOTSUPP) || rename(tmp, path) != 0))
		rc = kf_err_set(err, KF_EDB, "cannot create state.db at %s: %s", path,
				strerror(errno));
	unlink(tmp);
	return rc;
}

/* An existing state.db must hold a history: 0 bytes (a full disk, an
 * interrupted copy) is refused, unless the history is still in the WAL
 * file, waiting for a checkpoint. Sets *missing when there is none. */
static int check_existing(const char *path, int *missing, struct kf_err *err)
{
	struct stat st;
	char wal[600];

	*missing = 0;
	if (stat(path, &st) != 0) {
		*missing = errno == ENOENT;
		return *missing ? 0
				: kf_err_set(err, KF_EDB, "cannot open state.db at %s: %s", path,
					     strerror(errno));
	}
	if (st.st_size > 0)
		return 0;
	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (stat(wal, &st) == 0 && st.st_size > 0)
		return 0;
	return kf_err_set(err, KF_EDB,
			  "state.db at %s is 0 bytes: the run history was truncated (a full "
			  "disk, an interrupted copy?); " KEEP_ADVICE,
			  path);
}

int history_open(const char *path, struct history **out, struct kf_err *err)
{
	struct history *h;
	int rc, missing;

	*out = NULL;
	if (!path || !*path)
		return kf_err_set(err, KF_EINVAL, "history: empty state.db path");
	rc = check_existing(path, &missing, err);
	if (!rc && missing)
		rc = create_whole(path, err);
	if (rc)
		return rc;
	h = history_alloc(path);
	if (!h)
		return kf_err_set(err, KF_ENOMEM, "history: out of memory");
	rc = open_db(h, err);
	if (rc) {
		history_close(h);
		return rc;
	}
	*out = h;
	return 0;
}

void history_close(struct history *h)
{
	if (!h)
		return;
	sqlite3_close(h->db);
	pthread_mutex_destroy(&h->mu);
	free(h);
}

int history_schema_version(struct history *h)
{
	int v = -1;

	pthread_mutex_lock(&h->mu);
	if (read_version(h, &v, NULL))
		v = -1;
	pthread_mutex_unlock(&h->mu);
	return v;
}

static int check_text(const char *field, const char *s, struct kf_err *err)
{
	if (s && strlen(s) > HISTORY_TEXT_MAX)
		return kf_err_set(err, KF_ETOOBIG, "history: %s is %zu bytes, over the %d-byte cap",
				  field, strlen(s), HISTORY_TEXT_MAX);
	return 0;
}

/* Returns new text (free with free) of j, NULL for j NULL. */
static int dump_json(const char *field, const json_t *j, char **out, struct kf_err *err)
{
	*out = NULL;
	if (!j)
		return 0;
	*out = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!*out)
		return kf_err_set(err, KF_ENOMEM, "history: cannot encode %s", field);
	if (strlen(*out) > HISTORY_JSON_MAX) {
		size_t n = strlen(*out);

		free(*out);
		*out = NULL;
		return kf_err_set(err, KF_ETOOBIG,
				  "history: %s JSON is %zu bytes, over the %u-byte cap", field, n,
				  HISTORY_JSON_MAX);
	}
	return 0;
}

/* Every text is bound SQLITE_STATIC: each outlives its statement (finalized
 * before the function returns), and a copy that failed for memory would
 * leave the column NULL without an error. */
static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

/* Whether run id parent exists; called with h->mu held. */
static int parent_exists(struct history *h, const char *parent, struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int step;

	if (!id_valid(parent))
		return kf_err_set(err, KF_EINVAL,
				  "parent: '%.40s' is not a run id (like r0jf3k9q2mzx7c4a, from "
				  "list_runs or a result's run_id)",
				  parent);
	if (sqlite3_prepare_v2(h->db, "SELECT 1 FROM runs WHERE id = ?", -1, &st, NULL) !=
	    SQLITE_OK)
		return history_db_fail(h, "preparing the parent lookup", err);
	sqlite3_bind_text(st, 1, parent, -1, SQLITE_TRANSIENT);
	step = sqlite3_step(st);
	sqlite3_finalize(st);
	if (step == SQLITE_ROW)
		return 0;
	if (step != SQLITE_DONE)
		return history_db_fail(h, "looking up the parent run", err);
	return kf_err_set(err, KF_ENOTFOUND,
			  "parent: no run %s in this history (list_runs shows the ids)", parent);
}

int history_check_parent(struct history *h, const char *parent, struct kf_err *err)
{
	int rc;

	pthread_mutex_lock(&h->mu);
	rc = parent_exists(h, parent, err);
	pthread_mutex_unlock(&h->mu);
	return rc;
}

/* Inserts run with its encoded JSON under the lock. A clash of ids (another
 * process, same millisecond, same 30 random bits) is retried with a fresh
 * id; anything else is an error. */
static int insert_run(struct history *h, struct history_run *run, const char *spec,
		      const char *result, const char *env, int64_t created, struct kf_err *err)
{
	static const char sql[] = "INSERT INTO runs (id, kind, created_ms, status, kernels, "
				  "source_hash, spec, device_name, device_uuid, summary, result, "
				  "duration_ms, description, notes, parent, env) "
				  "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
	sqlite3_stmt *st = NULL;
	int rc = KF_EDB, in_tx = 0, recorded = 0;

	pthread_mutex_lock(&h->mu);
	if (run->parent && (rc = parent_exists(h, run->parent, err)))
		goto out;
	rc = KF_EDB;
	/* A job's run: the insert and the job's "recorded" mark commit
	 * together, and a job already recorded gives back its run's id. */
	if (run->job_key) {
		rc = history_job_record_begin(h, run->job_key, run->id, &recorded, err);
		in_tx = !rc && !recorded;
		if (rc || recorded)
			goto out;
		rc = KF_EDB;
	}
	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK) {
		rc = history_db_fail(h, "preparing the insert", err);
		goto out;
	}
	for (int attempt = 0; attempt < 8; attempt++) {
		history_make_id(created, run->id);
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, run->id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, KIND_NAMES[run->kind], -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, created);
		sqlite3_bind_text(st, 4, STATUS_NAMES[run->status], -1, SQLITE_STATIC);
		bind_text(st, 5, run->kernels ? run->kernels : "");
		bind_text(st, 6, run->source_hash);
		bind_text(st, 7, spec);
		bind_text(st, 8, run->device_name);
		bind_text(st, 9, run->device_uuid);
		bind_text(st, 10, run->summary ? run->summary : "");
		bind_text(st, 11, result);
		sqlite3_bind_int64(st, 12, run->duration_ms);
		bind_text(st, 13, run->description);
		bind_text(st, 14, run->notes);
		bind_text(st, 15, run->parent);
		bind_text(st, 16, env);
		if (sqlite3_step(st) == SQLITE_DONE) {
			rc = 0;
			goto out;
		}
		if (sqlite3_extended_errcode(h->db) != SQLITE_CONSTRAINT_PRIMARYKEY)
			break;
	}
	rc = history_db_fail(h, "recording the run", err);
out:
	sqlite3_finalize(st);
	if (in_tx)
		rc = history_job_record_end(h, run->job_key, run->id, rc, err);
	if (rc)
		run->id[0] = '\0';
	pthread_mutex_unlock(&h->mu);
	return rc;
}

int history_add(struct history *h, struct history_run *run, struct kf_err *err)
{
	char *spec = NULL, *result = NULL, *env = NULL;
	int64_t created;
	int rc;

	if ((int)run->kind < 0 || run->kind > HISTORY_PROFILE)
		return kf_err_set(
			err, KF_EINVAL,
			"history: kind %d is not one of compile, check, bench, calibrate, profile",
			(int)run->kind);
	if ((int)run->status < 0 || run->status > HISTORY_ERROR)
		return kf_err_set(err, KF_EINVAL,
				  "history: status %d is not one of ok, failed, error",
				  (int)run->status);
	if ((rc = check_text("kernels", run->kernels, err)) ||
	    (rc = check_text("source_hash", run->source_hash, err)) ||
	    (rc = check_text("device_name", run->device_name, err)) ||
	    (rc = check_text("device_uuid", run->device_uuid, err)) ||
	    (rc = check_text("summary", run->summary, err)) ||
	    (rc = check_text("description", run->description, err)))
		return rc;
	if (run->notes && strlen(run->notes) > HISTORY_NOTES_MAX)
		return kf_err_set(err, KF_ETOOBIG,
				  "history: notes is %zu bytes, over the %d-byte cap",
				  strlen(run->notes), HISTORY_NOTES_MAX);
	created = run->created_ms > 0 ? run->created_ms : wall_ms();
	if (!(rc = dump_json("spec", run->spec, &spec, err)) &&
	    !(rc = dump_json("result", run->result, &result, err)) &&
	    !(rc = dump_json("env", run->env, &env, err)))
		rc = insert_run(h, run, spec, result, env, created, err);
	if (!rc)
		run->created_ms = created;
	free(spec);
	free(result);
	free(env);
	return rc;
}

static char *col_dup(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);

	return s ? strdup((const char *)s) : NULL;
}

static json_t *col_json(sqlite3_stmt *st, int i)
{
	const char *s = (const char *)sqlite3_column_text(st, i);
	json_error_t je;
	json_t *j;

	/* A stored document that no longer parses is shown as its text rather
	 * than dropped; one that could not be read for memory is not there. */
	if (!s)
		return NULL;
	j = json_loads(s, JSON_DECODE_ANY, &je);
	if (!j && json_error_code(&je) == json_error_out_of_memory)
		return NULL;
	return j ? j : json_string(s);
}

/* 1 when column i holds a value that did not arrive (out of memory). */
static int col_lost(sqlite3_stmt *st, int i, const void *v)
{
	return !v && sqlite3_column_type(st, i) != SQLITE_NULL;
}

/* Columns: id kind created_ms status kernels source_hash device_name
 * device_uuid summary duration_ms description parent [spec result notes
 * env]. */
#define RUN_COLUMNS                                                         \
	"id, kind, created_ms, status, kernels, source_hash, device_name, " \
	"device_uuid, summary, duration_ms, description, parent"

static int read_row(sqlite3_stmt *st, struct history_run *r, int with_json)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", (const char *)sqlite3_column_text(st, 0));
	r->kind = (enum history_kind)history_kind_parse((const char *)sqlite3_column_text(st, 1));
	r->created_ms = sqlite3_column_int64(st, 2);
	r->status =
		(enum history_status)history_status_parse((const char *)sqlite3_column_text(st, 3));
	r->kernels = col_dup(st, 4);
	r->source_hash = col_dup(st, 5);
	r->device_name = col_dup(st, 6);
	r->device_uuid = col_dup(st, 7);
	r->summary = col_dup(st, 8);
	r->duration_ms = sqlite3_column_int64(st, 9);
	r->description = col_dup(st, 10);
	r->parent = col_dup(st, 11);
	if (with_json) {
		r->spec = col_json(st, 12);
		r->result = col_json(st, 13);
		r->notes = col_dup(st, 14);
		r->env = col_json(st, 15);
	}
	if (!r->kernels || !r->summary || col_lost(st, 5, r->source_hash) ||
	    col_lost(st, 6, r->device_name) || col_lost(st, 7, r->device_uuid) ||
	    col_lost(st, 10, r->description) || col_lost(st, 11, r->parent))
		return KF_ENOMEM;
	if (with_json && (col_lost(st, 12, r->spec) || col_lost(st, 13, r->result) ||
			  col_lost(st, 14, r->notes) || col_lost(st, 15, r->env)))
		return KF_ENOMEM;
	return 0;
}

int history_get(struct history *h, const char *id, struct history_run *out, struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc, step;

	memset(out, 0, sizeof(*out));
	if (!id_valid(id))
		return kf_err_set(
			err, KF_EINVAL,
			"id: '%.40s' is not a run id (like r0jf3k9q2mzx7c4a, from list_runs)",
			id ? id : "");
	pthread_mutex_lock(&h->mu);
	if (sqlite3_prepare_v2(h->db,
			       "SELECT " RUN_COLUMNS
			       ", spec, result, notes, env FROM runs WHERE id = ?",
			       -1, &st, NULL) != SQLITE_OK) {
		rc = history_db_fail(h, "preparing a lookup", err);
		goto out;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	step = sqlite3_step(st);
	if (step == SQLITE_DONE) {
		rc = kf_err_set(err, KF_ENOTFOUND, "no run with id %s", id);
	} else if (step != SQLITE_ROW) {
		rc = history_db_fail(h, "reading a run", err);
	} else {
		rc = read_row(st, out, 1);
		if (rc) {
			history_run_fini(out);
			rc = kf_err_set(err, KF_ENOMEM, "history: out of memory");
		}
	}
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&h->mu);
	return rc;
}

void history_filter_init(struct history_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->kind = -1;
	f->status = -1;
}

/* LIKE pattern matching s anywhere, with % _ \ escaped. Returns new text. */
static char *like_pattern(const char *s)
{
	size_t n = strlen(s);
	char *p = malloc(2 * n + 3), *w = p;

	if (!p)
		return NULL;
	*w++ = '%';
	for (; *s; s++) {
		if (*s == '%' || *s == '_' || *s == '\\')
			*w++ = '\\';
		*w++ = *s;
	}
	*w++ = '%';
	*w = '\0';
	return p;
}

int history_list(struct history *h, const struct history_filter *f, struct history_page *page,
		 struct kf_err *err)
{
	char sql[512];
	sqlite3_stmt *st = NULL;
	char *pattern = NULL;
	size_t limit, cap;
	int rc = 0, step, bind = 1;

	memset(page, 0, sizeof(*page));
	if (f->kind < -1 || f->kind > HISTORY_PROFILE)
		return kf_err_set(
			err, KF_EINVAL,
			"kind: %d is not one of compile, check, bench, calibrate, profile",
			f->kind);
	if (f->status < -1 || f->status > HISTORY_ERROR)
		return kf_err_set(err, KF_EINVAL, "status: %d is not one of ok, failed, error",
				  f->status);
	if (f->cursor && *f->cursor && !id_valid(f->cursor))
		return kf_err_set(
			err, KF_EINVAL,
			"cursor: '%.40s' is not a cursor from a previous page (next_cursor)",
			f->cursor);
	if (f->kernel && strlen(f->kernel) > 256)
		return kf_err_set(err, KF_ETOOBIG,
				  "kernel: filter is %zu bytes, over the 256-byte cap",
				  strlen(f->kernel));
	limit = f->limit ? f->limit : 20;
	if (limit > HISTORY_LIST_MAX)
		limit = HISTORY_LIST_MAX;
	snprintf(sql, sizeof(sql),
		 "SELECT " RUN_COLUMNS " FROM runs WHERE 1%s%s%s%s%s%s"
		 " ORDER BY id DESC LIMIT ?",
		 f->kind >= 0 ? " AND kind = ?" : "", f->status >= 0 ? " AND status = ?" : "",
		 f->kernel && *f->kernel ? " AND kernels LIKE ? ESCAPE '\\'" : "",
		 f->since_ms > 0 ? " AND created_ms >= ?" : "",
		 f->source_hash ? " AND source_hash = ?" : "",
		 f->cursor && *f->cursor ? " AND id < ?" : "");
	if (f->kernel && *f->kernel) {
		pattern = like_pattern(f->kernel);
		if (!pattern)
			return kf_err_set(err, KF_ENOMEM, "history: out of memory");
	}
	page->runs = calloc(limit, sizeof(*page->runs));
	if (!page->runs) {
		free(pattern);
		return kf_err_set(err, KF_ENOMEM, "history: out of memory");
	}
	pthread_mutex_lock(&h->mu);
	if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK) {
		rc = history_db_fail(h, "preparing the listing", err);
		goto out;
	}
	if (f->kind >= 0)
		sqlite3_bind_text(st, bind++, KIND_NAMES[f->kind], -1, SQLITE_STATIC);
	if (f->status >= 0)
		sqlite3_bind_text(st, bind++, STATUS_NAMES[f->status], -1, SQLITE_STATIC);
	if (pattern)
		sqlite3_bind_text(st, bind++, pattern, -1, SQLITE_STATIC);
	if (f->since_ms > 0)
		sqlite3_bind_int64(st, bind++, f->since_ms);
	if (f->source_hash)
		sqlite3_bind_text(st, bind++, f->source_hash, -1, SQLITE_TRANSIENT);
	if (f->cursor && *f->cursor)
		sqlite3_bind_text(st, bind++, f->cursor, -1, SQLITE_STATIC);
	/* One extra row tells whether there is a next page. */
	sqlite3_bind_int64(st, bind, (sqlite3_int64)limit + 1);
	cap = limit;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		if (page->len == cap) {
			snprintf(page->next_cursor, sizeof(page->next_cursor), "%s",
				 page->runs[page->len - 1].id);
			break;
		}
		if (read_row(st, &page->runs[page->len], 0)) {
			history_run_fini(&page->runs[page->len]);
			rc = kf_err_set(err, KF_ENOMEM, "history: out of memory");
			goto out;
		}
		page->len++;
	}
	if (step != SQLITE_ROW && step != SQLITE_DONE)
		rc = history_db_fail(h, "listing runs", err);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&h->mu);
	free(pattern);
	if (rc)
		history_page_fini(page);
	return rc;
}

void history_run_fini(struct history_run *run)
{
	if (!run)
		return;
	free(run->kernels);
	free(run->source_hash);
	free(run->device_name);
	free(run->device_uuid);
	free(run->summary);
	json_decref(run->spec);
	json_decref(run->result);
	free(run->description);
	free(run->notes);
	free(run->parent);
	json_decref(run->env);
	memset(run, 0, sizeof(*run));
}

void history_page_fini(struct history_page *page)
{
	if (!page)
		return;
	for (size_t i = 0; i < page->len; i++)
		history_run_fini(&page->runs[i]);
	free(page->runs);
	memset(page, 0, sizeof(*page));
}

static void bind_measure(sqlite3_stmt *st, int i, double v)
{
	if (v > 0)
		sqlite3_bind_double(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

int history_set_ceilings(struct history *h, const struct history_ceilings *c, struct kf_err *err)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;

	if (!c->gpu_uuid[0])
		return kf_err_set(err, KF_EINVAL,
				  "ceilings: gpu_uuid is empty (want the GPU's \"GPU-...\" uuid)");
	pthread_mutex_lock(&h->mu);
	if (sqlite3_prepare_v2(h->db,
			       "INSERT OR REPLACE INTO ceilings (gpu_uuid, device_name, "
			       "copy_gbps, bf16_tflops, fp32_tflops, measured_ms, method, "
			       "run_id) VALUES (?,?,?,?,?,?,?,?)",
			       -1, &st, NULL) != SQLITE_OK) {
		rc = history_db_fail(h, "preparing the ceilings", err);
		goto out;
	}
	sqlite3_bind_text(st, 1, c->gpu_uuid, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, c->device_name, -1, SQLITE_STATIC);
	bind_measure(st, 3, c->copy_gbps);
	bind_measure(st, 4, c->bf16_tflops);
	bind_measure(st, 5, c->fp32_tflops);
	sqlite3_bind_int64(st, 6, c->measured_ms > 0 ? c->measured_ms : wall_ms());
	sqlite3_bind_text(st, 7, c->method, -1, SQLITE_STATIC);
	bind_text(st, 8, c->run_id[0] ? c->run_id : NULL);
	if (sqlite3_step(st) != SQLITE_DONE)
		rc = history_db_fail(h, "storing the ceilings", err);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&h->mu);
	return rc;
}

void history_col_text(sqlite3_stmt *st, int i, char *dst, size_t cap)
{
	const char *s = (const char *)sqlite3_column_text(st, i);

	snprintf(dst, cap, "%s", s ? s : "");
}
