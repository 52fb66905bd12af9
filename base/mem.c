/* mem: large host buffers; see mem.h. */
#include "base/mem.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define HUGE_PAGE (2u << 20)

void *mem_alloc_big(size_t bytes)
{
	if (bytes < MEM_BIG_BYTES)
		return malloc(bytes ? bytes : 1);
	if (bytes > SIZE_MAX - HUGE_PAGE)
		return NULL;
	size_t len = (bytes + HUGE_PAGE - 1) & ~(size_t)(HUGE_PAGE - 1);
	void *p = aligned_alloc(HUGE_PAGE, len);
	/* Advice only: without transparent huge pages (or with them off) the
	 * buffer is an ordinary one. */
	if (p)
		(void)madvise(p, len, MADV_HUGEPAGE);
	return p;
}
