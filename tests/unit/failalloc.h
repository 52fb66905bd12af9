/* failalloc: a test-only allocator that fails the Nth allocation, for the
 * failing-allocator suite (check_failalloc.c). The suite's binary is linked
 * with -Wl,--wrap for malloc, calloc, realloc, strdup, strndup and
 * jansson's loaders (see the Makefile), so every allocation made by
 * kforge's own code is counted; failalloc_install routes jansson
 * (json_set_alloc_funcs) and sqlite (SQLITE_CONFIG_MALLOC) through the same
 * counter. A jansson loader call counts as one allocation (failalloc.c says
 * why). Thread-safe counters. */
#ifndef KF_TESTS_FAILALLOC_H
#define KF_TESTS_FAILALLOC_H

/* Routes jansson's and sqlite's allocations through the counter. Call once
 * at the start of main, before any sqlite call. */
void failalloc_install(void);

/* Starts counting allocations from zero; with fail_at > 0 the fail_at-th
 * one (only that one) returns NULL. fail_at 0 never fails. */
void failalloc_arm(long fail_at);

/* Allocations counted since failalloc_arm. */
long failalloc_count(void);

/* 1 when the armed allocation was reached and failed. */
int failalloc_failed(void);

#endif
