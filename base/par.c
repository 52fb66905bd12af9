/* par: a parallel for over fixed chunks; see par.h. Threads are started
 * per call: a check calls it a few dozen times on millions of elements,
 * where starting a thread (tens of microseconds) does not count. */
#include "base/par.h"

#include <pthread.h>
#include <unistd.h>

struct par_job {
	par_fn fn;
	void *arg;
	uint64_t n, chunk, chunks;
	uint64_t next; /* the next chunk to take (atomic) */
};

static void *par_worker(void *p)
{
	struct par_job *j = p;
	for (;;) {
		uint64_t c = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
		if (c >= j->chunks)
			break;
		uint64_t lo = c * j->chunk, hi = lo + j->chunk;
		j->fn(j->arg, c, lo, hi < j->n ? hi : j->n);
	}
	return NULL;
}

uint64_t par_chunks(uint64_t n, uint64_t chunk)
{
	if (!chunk)
		chunk = 1;
	return n / chunk + (n % chunk != 0);
}

void par_for(uint64_t n, uint64_t chunk, par_fn fn, void *arg)
{
	struct par_job j = {.fn = fn,
			    .arg = arg,
			    .n = n,
			    .chunk = chunk ? chunk : 1,
			    .chunks = par_chunks(n, chunk)};
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t want = cpus > PAR_THREADS_MAX ? PAR_THREADS_MAX : cpus > 1 ? (uint64_t)cpus : 1;
	if (want > j.chunks)
		want = j.chunks;
	pthread_t th[PAR_THREADS_MAX];
	uint64_t started = 0;
	for (uint64_t k = 1; k < want; k++)
		if (pthread_create(&th[started], NULL, par_worker, &j) == 0)
			started++;
	par_worker(&j);
	for (uint64_t k = 0; k < started; k++)
		pthread_join(th[k], NULL);
}
