/* par: a parallel for over fixed chunks of an index range, for the CPU
 * work of a check (input conversion, references, comparisons). The chunks
 * depend on n and the chunk size only, never on the number of threads, so
 * a caller that keeps one result per chunk and combines them in chunk
 * order gets the same answer on every machine. */
#ifndef KF_PAR_H
#define KF_PAR_H

#include <stdint.h>

#define PAR_THREADS_MAX 16 /* threads of one par_for, caller included */

/* Work on elements [lo, hi) of chunk number c. arg: the caller's. */
typedef void (*par_fn)(void *arg, uint64_t c, uint64_t lo, uint64_t hi);

/* The number of chunks of [0, n) in chunks of chunk elements (chunk 0 is
 * taken as 1): ceil(n / chunk). */
uint64_t par_chunks(uint64_t n, uint64_t chunk);

/* Calls fn(arg, c, lo, hi) once for each chunk c of [0, n) (chunk elements
 * each, the last one shorter) on up to the online cores (at most
 * PAR_THREADS_MAX) threads, the calling one included, and returns when
 * every chunk is done. When threads cannot be started the caller does the
 * chunks left. fn must only write what chunk c owns. arg: borrowed. */
void par_for(uint64_t n, uint64_t chunk, par_fn fn, void *arg);

#endif
