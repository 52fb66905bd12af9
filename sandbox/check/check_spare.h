/* check_spare: the daemon's spare kforge-harness processes (check_env's
 * warm_harness). Per GPU of the pool up to CHECK_SPARES_MAX_PER_GPU
 * harness processes are started in the jail ahead of their job, each with
 * its CUDA context made and its own job directory bound, waiting on a
 * pipe. A harness run takes one (check_spare_exec); each process serves
 * exactly one job and exits, so nothing carries from one job to the next.
 * The replacement starts in the background when the run ends
 * (check_spare_refill), not when it begins: a spare's CUDA context is then
 * not being made on the GPU while that run's kernels are timed (the pool
 * runs one job per GPU), and with two spares per GPU a check's CUDA
 * reference run still finds one ready. Internal to sandbox/check/
 * (check_harness.c). */
#ifndef KF_CHECK_SPARE_H
#define KF_CHECK_SPARE_H

#include <stddef.h>

#include "base/kf_err.h"
#include "sandbox/check/check.h"
#include "sandbox/jail/jail.h"

#define CHECK_SPARES_DEFAULT	 2 /* a check's candidate and CUDA reference runs */
#define CHECK_SPARES_MAX_PER_GPU 4
#define CHECK_SPARE_NONE	 1 /* check_spare_exec: no spare ran the job */

/* The line a spare writes first on its report fd once it has its job and a
 * healthy context (sandbox/harness/main.c writes the same bytes). */
#define CHECK_SPARE_TAKEN_LINE "{\"spare\":\"taken\"}\n"

/* A harness report as it arrives: capped at CHECK_REPORT_MAX_BYTES (past
 * it too_big is set and the rest dropped). */
struct check_report_buf {
	char *buf; /* NUL-terminated, new (free); NULL when nothing came */
	size_t len, cap;
	int too_big;
};

/* Appends n bytes of data (borrowed) to r, or sets r->too_big. */
void check_report_append(struct check_report_buf *r, const char *data, size_t n);

/* Spares per GPU from $KFORGE_HARNESS_SPARES (0 to CHECK_SPARES_MAX_PER_GPU,
 * default CHECK_SPARES_DEFAULT; 0 turns them off) into *per_gpu. Returns 0,
 * or KF_EINVAL naming the bad value and the range. */
int check_spares_count(int *per_gpu, struct kf_err *err) __attribute__((warn_unused_result));

/* A new, empty set of spares keeping per_gpu per GPU (started on a GPU's
 * first harness run). Returns 0 and *out (free with check_spares_free) or
 * KF_ENOMEM. */
int check_spares_new(int per_gpu, struct check_spares **out) __attribute__((warn_unused_result));

/* Ends every waiting spare (its pipe closed, its process killed), waits for
 * their threads and removes their directories; no run may be in flight.
 * NULL is a no-op. */
void check_spares_free(struct check_spares *sp);

/* One harness run, as check_harness_exec has prepared it. Borrowed. */
struct check_spare_run {
	struct jail *jail;
	const char *harness;	       /* the executable, absolute */
	unsigned long long data_bytes; /* the harness's RLIMIT_DATA; 0 = none */
	int device;		       /* the job's GPU */
	const char *dir;	       /* the job's directory, its files written */
	unsigned wall_ms;	       /* the run's wall-clock limit, from the go */
	const volatile int *stop;      /* nonzero cancels; or NULL */
};

/* Starts a spare in every empty place of r->device's (none when env keeps
 * no spares or is closing; a failed start is logged). Called after every
 * harness run, so a GPU's first run (a fresh harness) starts its spares. */
void check_spare_refill(struct check_env *env, const struct check_spare_run *r);

/* Runs the job in r->dir on a spare of r->device of env's spares: its
 * files move into the spare's directory, "go" starts it, the report is
 * read into rep (caller's, zeroed) while the wall clock and stop are
 * watched, and every file moves back into r->dir. res (caller storage, always initialised;
 * release with jail_result_fini) as jail_run fills it. Returns 0,
 * KF_ETIMEOUT, KF_ECANCELED or jail_run's codes with err set, or
 * CHECK_SPARE_NONE (nothing ran; res and rep empty) when env keeps no
 * spares, none of the GPU's still runs (one that died waiting is freed
 * and the next tried), or the one sent the job ended before it took it (a
 * dead process, a faulted GPU: logged): the caller starts a fresh
 * harness. */
int check_spare_exec(struct check_env *env, const struct check_spare_run *r,
		     struct jail_result *res, struct check_report_buf *rep, struct kf_err *err)
	__attribute__((warn_unused_result));

#endif
