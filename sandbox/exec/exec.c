/* exec: opening an executor (the Slurm checks done at start), one job from
 * its row and directory to its answer, the per-client queue, and the
 * recovery of a previous daemon's jobs. See exec.h. */
#include "sandbox/exec/exec.h"
#include "sandbox/exec/exec_int.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/log.h"

#define EXEC_MAX_PER_CLIENT_DEFAULT 16
#define EXEC_POLL_MS_DEFAULT	    1000

const char *exec_kind_name(enum exec_kind k)
{
	return k == EXEC_SLURM ? "slurm" : "local";
}

const char *exec_partition(const struct exec *x)
{
	return exec_is_remote(x) && x->cfg.partition ? x->cfg.partition : "";
}

int exec_is_remote(const struct exec *x)
{
	return x && x->cfg.kind != EXEC_LOCAL;
}

/* Values that go into #SBATCH lines and paths the script names: no
 * whitespace, quotes or shell characters. */
static int slurm_word(const char *what, const char *v, size_t cap, const char *extra,
		      struct kf_err *err)
{
	if (!v)
		return 0;
	if (!*v || strlen(v) >= cap)
		return kf_err_set(err, KF_EINVAL, "%s: '%s' must be 1 to %zu characters", what, v,
				  cap - 1);
	for (const char *c = v; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || strchr(extra, *c)))
			return kf_err_set(err, KF_EINVAL,
					  "%s: '%s' has '%c'; allowed: letters, digits and '%s'",
					  what, v, *c, extra);
	return 0;
}

static int check_shared_dir(const char *dir, struct kf_err *err)
{
	char jobs[PATH_MAX + 8];
	struct stat st;

	if (!dir)
		return kf_err_set(err, KF_EINVAL,
				  "--executor slurm needs --shared-dir DIR: a directory the "
				  "compute nodes see at the same path");
	if (dir[0] != '/')
		return kf_err_set(err, KF_EINVAL, "--shared-dir: '%s' must be an absolute path",
				  dir);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return kf_err_set(err, KF_ENOTFOUND,
				  "--shared-dir: '%s' does not exist or is not a directory (create "
				  "it on the shared file system first)",
				  dir);
	if (access(dir, W_OK | X_OK))
		return kf_err_set(err, KF_EIO, "--shared-dir: '%s' is not writable by this user",
				  dir);
	snprintf(jobs, sizeof(jobs), "%s/jobs", dir);
	if (mkdir(jobs, 0700) && errno != EEXIST)
		return kf_err_set(err, KF_EIO, "--shared-dir: cannot create %s: %s", jobs,
				  strerror(errno));
	return 0;
}

static int check_slurm(struct exec *x, struct kf_err *err)
{
	static const char *const progs[] = {"sbatch", "squeue", "scancel", "sinfo"};
	char parts[2048];
	int rc;

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
		if (!exec_on_path(progs[i]))
			return kf_err_set(err, KF_ENOTFOUND,
					  "--executor slurm: %s not found on PATH (install the "
					  "Slurm client, e.g. Debian's slurm-client, or load the "
					  "cluster's slurm module)",
					  progs[i]);
	if (!x->cfg.partition)
		return kf_err_set(err, KF_EINVAL, "--executor slurm needs --partition NAME");
	if ((rc = slurm_word("--partition", x->cfg.partition, sizeof(x->partition), "_-.", err)) ||
	    (rc = slurm_word("--gres", x->cfg.gres, sizeof(x->gres), "_-.:,", err)) ||
	    (rc = slurm_word("--account", x->cfg.account, sizeof(x->account), "_-.", err)) ||
	    (rc = slurm_word("--time-limit", x->cfg.time_limit, sizeof(x->time_limit), ":-",
			     err)) ||
	    (rc = slurm_word("--shared-dir", x->cfg.shared_dir, sizeof(x->shared_dir), "/_-.+",
			     err)) ||
	    (rc = slurm_word("kforge's path", x->cfg.kforge_path, sizeof(x->kforge), "/_-.+",
			     err)) ||
	    (rc = check_shared_dir(x->cfg.shared_dir, err)))
		return rc;
	if ((rc = exec_slurm_partitions(parts, sizeof(parts), err)))
		return rc;
	for (char *p = parts, *e; p && *p; p = e ? e + 1 : NULL) {
		e = strchr(p, ',');
		if ((e ? (size_t)(e - p) : strlen(p)) == strlen(x->cfg.partition) &&
		    strncmp(p, x->cfg.partition, strlen(x->cfg.partition)) == 0)
			return 0;
	}
	return kf_err_set(err, KF_ENOTFOUND,
			  "--partition: Slurm has no partition '%s' (sinfo lists: %s)",
			  x->cfg.partition, parts[0] ? parts : "none");
}

static const char *keep(char *buf, size_t cap, const char *v)
{
	if (!v)
		return NULL;
	snprintf(buf, cap, "%s", v);
	return buf;
}

int exec_open(const struct exec_config *cfg, struct history *history, struct exec **out,
	      struct kf_err *err)
{
	struct exec *x = calloc(1, sizeof(*x));
	int rc = 0;

	*out = NULL;
	if (!x)
		return kf_err_set(err, KF_ENOMEM, "exec: out of memory");
	x->cfg = *cfg;
	x->history = history;
	pthread_mutex_init(&x->mu, NULL);
	pthread_cond_init(&x->cv, NULL);
	if (cfg->kind == EXEC_SLURM) {
		if (!history) {
			rc = kf_err_set(err, KF_EINVAL, "exec: slurm needs the run history");
			goto out;
		}
		if ((rc = check_slurm(x, err)))
			goto out;
		x->cfg.partition = keep(x->partition, sizeof(x->partition), cfg->partition);
		x->cfg.gres = keep(x->gres, sizeof(x->gres), cfg->gres);
		x->cfg.account = keep(x->account, sizeof(x->account), cfg->account);
		x->cfg.time_limit = keep(x->time_limit, sizeof(x->time_limit), cfg->time_limit);
		x->cfg.shared_dir = keep(x->shared_dir, sizeof(x->shared_dir), cfg->shared_dir);
		if (cfg->kforge_path)
			x->cfg.kforge_path = keep(x->kforge, sizeof(x->kforge), cfg->kforge_path);
		else {
			/* On failure x->kforge is "", which slurm_word refuses. */
			int erc = fs_exe_path(x->kforge, sizeof(x->kforge));
			(void)erc;
			x->cfg.kforge_path = x->kforge;
			rc = slurm_word("kforge's path", x->kforge, sizeof(x->kforge), "/_-.+",
					err);
		}
	}
	if (x->cfg.max_per_client <= 0)
		x->cfg.max_per_client = EXEC_MAX_PER_CLIENT_DEFAULT;
	if (x->cfg.poll_ms <= 0)
		x->cfg.poll_ms = EXEC_POLL_MS_DEFAULT;
out:
	if (rc) {
		exec_close(x);
		return rc;
	}
	*out = x;
	return 0;
}

void exec_close(struct exec *x)
{
	if (!x)
		return;
	pthread_mutex_lock(&x->mu);
	x->closing = 1;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->mu);
	while (x->recoveries) {
		struct exec_recovery *r = x->recoveries;
		x->recoveries = r->next;
		pthread_join(r->th, NULL);
		free(r);
	}
	while (x->clients) {
		struct exec_client *c = x->clients;
		x->clients = c->next;
		free(c);
	}
	pthread_cond_destroy(&x->cv);
	pthread_mutex_destroy(&x->mu);
	free(x);
}

int exec_gpu_types(struct exec *x, char (*types)[EXEC_GPU_TYPE_BYTES], int cap, struct kf_err *err)
{
	char out[EXEC_CMD_OUT_BYTES];
	int rc;

	if (!exec_is_remote(x))
		return 0;
	if ((rc = exec_slurm_gres(x->cfg.partition, out, sizeof(out), err)))
		return rc;
	return exec_slurm_gres_types(out, types, cap);
}

void exec_job_result_fini(struct exec_job_result *res)
{
	if (!res)
		return;
	json_decref(res->answer);
	res->answer = NULL;
}

/* --- the per-client queue ---------------------------------------------- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits on x->cv for at most ms (x->mu held). */
static void wait_cv(struct exec *x, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ms * 1000000L;
	while (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&x->cv, &x->mu, &ts);
}

static int alike(const struct exec_waiter *a, const struct exec_waiter *b)
{
	return a->exclusive == b->exclusive &&
	       (a->gres && b->gres ? strcmp(a->gres, b->gres) == 0 : a->gres == b->gres);
}

/* The head w of c's line takes itself and the calls alike queued behind
 * it (x->mu held, a slot free): alone, one slot; together, a batch with
 * the slots free, up to one per element. Returns 0 or KF_ENOMEM. */
static int admit(struct exec *x, struct exec_client *c, struct exec_waiter *w)
{
	struct exec_waiter *e;
	struct exec_batch *b;
	int n = 0, free_slots = x->cfg.max_per_client - c->running;
	for (e = w; e && alike(e, w) && n < EXEC_ARRAY_MAX; e = e->next)
		n++;
	if (n == 1) {
		c->running++;
		c->waiters = w->next;
		w->admitted = 1;
		return 0;
	}
	b = calloc(1, sizeof(*b));
	if (b) {
		b->jobs = calloc((size_t)n, sizeof(*b->jobs));
		b->listing = malloc(EXEC_LISTING_BYTES);
	}
	if (!b || !b->jobs || !b->listing) {
		if (b) {
			free(b->jobs);
			free(b->listing);
		}
		free(b);
		return KF_ENOMEM;
	}
	pthread_mutex_init(&b->list_mu, NULL);
	b->n = b->remaining = n;
	b->slots = n < free_slots ? n : free_slots;
	c->running += b->slots;
	e = w;
	for (int i = 0; i < n; i++, e = e->next) {
		b->jobs[i] = e->job;
		e->batch = b;
		e->index = i;
		e->admitted = 1;
	}
	c->waiters = e;
	return 0;
}

int exec_client_enter(struct exec *x, const char *name, const volatile int *cancel,
		      struct exec_waiter *w, struct exec_client **out)
{
	struct exec_client *c;
	struct exec_waiter **pp;
	int64_t head_since = -1;
	int rc = 0;

	*out = NULL;
	w->next = NULL;
	w->batch = NULL;
	w->admitted = 0;
	pthread_mutex_lock(&x->mu);
	for (c = x->clients; c && strcmp(c->name, name); c = c->next)
		;
	if (!c && (c = calloc(1, sizeof(*c)))) {
		snprintf(c->name, sizeof(c->name), "%s", name);
		c->next = x->clients;
		x->clients = c;
	}
	if (!c) {
		pthread_mutex_unlock(&x->mu);
		return KF_ENOMEM;
	}
	for (pp = &c->waiters; *pp; pp = &(*pp)->next)
		;
	*pp = w;
	while (!w->admitted) {
		if (x->closing || (cancel && *cancel)) {
			rc = x->closing ? KF_EBUSY : KF_ECANCELED;
			break;
		}
		if (c->waiters == w && c->running < x->cfg.max_per_client) {
			/* The head with a slot: give the calls that arrive with
			 * it a moment to join its array. */
			if (head_since < 0)
				head_since = now_ms();
			if (now_ms() - head_since >= EXEC_GATHER_MS) {
				rc = admit(x, c, w);
				break;
			}
			wait_cv(x, EXEC_GATHER_MS);
			continue;
		}
		head_since = -1;
		wait_cv(x, 200);
	}
	if (!w->admitted) {
		for (pp = &c->waiters; *pp != w; pp = &(*pp)->next)
			;
		*pp = w->next;
	} else {
		*out = c;
		rc = 0;
	}
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->mu);
	return rc;
}

void exec_client_leave(struct exec *x, struct exec_client *c, struct exec_waiter *w)
{
	struct exec_batch *b = w->batch;

	if (!c)
		return;
	pthread_mutex_lock(&x->mu);
	if (!b)
		c->running--;
	else {
		/* Slurm runs at most min(slots, remaining) of the array. */
		if (--b->remaining < b->slots) {
			b->slots--;
			c->running--;
		}
		if (b->remaining == 0) {
			pthread_mutex_destroy(&b->list_mu);
			free(b->listing);
			free(b->jobs);
			free(b);
		}
	}
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->mu);
}

int exec_batch_submit(struct exec *x, struct exec_waiter *w, char *said, size_t said_cap,
		      struct kf_err *err)
{
	struct exec_batch *b = w->batch;
	int rc = 0;

	if (w->index == 0) {
		char script[PATH_MAX + 16], id[32];
		struct kf_err e = {0};

		snprintf(script, sizeof(script), "%s/array.sh", w->job->dir);
		rc = exec_slurm_write_array(&x->cfg, x->cfg.kforge_path, script, b->jobs, b->n,
					    b->slots, w->exclusive, w->gres, &e);
		if (!rc)
			rc = exec_slurm_submit(script, NULL, id, sizeof(id), b->said,
					       sizeof(b->said), &e);
		if (!rc && strlen(id) + 12 > sizeof(b->id))
			rc = kf_err_set(&e, KF_EIO, "sbatch's job id '%s' is too long", id);
		pthread_mutex_lock(&x->mu);
		if (!rc) {
			snprintf(b->id, sizeof(b->id), "%s", id);
			/* Every row knows its id before any element follows it. */
			for (int i = 0; i < b->n; i++) {
				struct kf_err se = {0};
				snprintf(b->jobs[i]->slurm_id, sizeof(b->jobs[i]->slurm_id),
					 "%s_%d", id, i);
				if (history_job_update(x->history, b->jobs[i], &se))
					log_warn("exec", "job %s: %s", b->jobs[i]->key, se.msg);
			}
		} else if (!b->said[0])
			snprintf(b->said, sizeof(b->said), "%s", e.msg);
		b->rc = rc;
		b->done = 1;
		pthread_cond_broadcast(&x->cv);
		pthread_mutex_unlock(&x->mu);
	}
	pthread_mutex_lock(&x->mu);
	while (!b->done)
		wait_cv(x, 200);
	rc = b->rc;
	snprintf(said, said_cap, "%s", rc ? b->said : "");
	pthread_mutex_unlock(&x->mu);
	if (rc)
		return kf_err_set(err, rc, "slurm refused the job array: %s", said);
	return 0;
}

int exec_batch_query(struct exec *x, struct exec_batch *b, const char *id, char *state,
		     size_t state_cap, char *reason, size_t reason_cap, char *nodes,
		     size_t nodes_cap)
{
	size_t k = strlen(id);
	int rc = KF_ENOTFOUND;

	pthread_mutex_lock(&b->list_mu);
	if (!b->listed_ms || now_ms() - b->listed_ms >= x->cfg.poll_ms / 2) {
		if (exec_slurm_list_array(b->id, b->listing, EXEC_LISTING_BYTES))
			b->listing[0] = '\0';
		b->listed_ms = now_ms();
	}
	for (const char *l = b->listing; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, id, k) == 0 && l[k] == '|') {
			rc = exec_slurm_parse_line(l + k + 1, state, state_cap, reason, reason_cap,
						   nodes, nodes_cap);
			break;
		}
	pthread_mutex_unlock(&b->list_mu);
	if (rc)
		rc = exec_slurm_query(id, state, state_cap, reason, reason_cap, nodes, nodes_cap);
	return rc;
}
