/* mem: allocations of large host buffers (tensors of a check: inputs,
 * downloaded outputs, float64 references). */
#ifndef KF_MEM_H
#define KF_MEM_H

#include <stddef.h>

/* Buffers of at least this many bytes are backed by transparent huge
 * pages where the kernel has them. */
#define MEM_BIG_BYTES (4u << 20)

/* bytes of uninitialised memory (0 bytes: a valid 1-byte allocation), or
 * NULL. A buffer of MEM_BIG_BYTES or more is 2 MiB-aligned and advised to
 * use huge pages: first touching it costs one fault per 2 MiB instead of
 * one per 4 KiB, which halves the time to fill or download into a fresh
 * buffer of tens of MiB. Released with free(). */
void *mem_alloc_big(size_t bytes);

#endif
