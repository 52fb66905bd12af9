/* failalloc: the counting allocator behind check_failalloc (failalloc.h).
 * The __wrap_ functions replace kforge's calls through the linker's --wrap;
 * __real_ ones reach the C library (or the sanitizer's allocator). */
#include "tests/unit/failalloc.h"

#include <jansson.h>
#include <malloc.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
json_t *__real_json_loads(const char *input, size_t flags, json_error_t *error);
json_t *__real_json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *error);
json_t *__real_json_load_file(const char *path, size_t flags, json_error_t *error);
json_t *__wrap_json_loads(const char *input, size_t flags, json_error_t *error);
json_t *__wrap_json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *error);
json_t *__wrap_json_load_file(const char *path, size_t flags, json_error_t *error);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static long g_count, g_fail_at;
static int g_failed;
static __thread int t_in_loader; /* inside a jansson loader: no injection */

/* 1 when this allocation is the one to fail. */
static int hit(void)
{
	if (t_in_loader)
		return 0;
	long n = __atomic_add_fetch(&g_count, 1, __ATOMIC_SEQ_CST);
	if (n != __atomic_load_n(&g_fail_at, __ATOMIC_SEQ_CST))
		return 0;
	__atomic_store_n(&g_failed, 1, __ATOMIC_SEQ_CST);
	return 1;
}

void *__wrap_malloc(size_t n)
{
	return hit() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return hit() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
	return hit() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
	return hit() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
	return hit() ? NULL : __real_strndup(s, n);
}

/* jansson's loaders drop a byte instead of failing when an allocation in
 * their lexer fails (its lex_save ignores the result), so a failure
 * injected there would test jansson, not kforge. A loader call counts as
 * one allocation instead, and failing it returns NULL with jansson's
 * out-of-memory error, as a loader that ran out of memory should. */
static json_t *loader_failed(json_error_t *error)
{
	if (error) {
		memset(error, 0, sizeof *error);
		error->line = error->column = -1;
		snprintf(error->text, sizeof error->text, "%s", "out of memory");
		error->text[JSON_ERROR_TEXT_LENGTH - 1] = (char)json_error_out_of_memory;
	}
	return NULL;
}

json_t *__wrap_json_loads(const char *input, size_t flags, json_error_t *error)
{
	if (hit())
		return loader_failed(error);
	t_in_loader = 1;
	json_t *j = __real_json_loads(input, flags, error);
	t_in_loader = 0;
	return j;
}

json_t *__wrap_json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *error)
{
	if (hit())
		return loader_failed(error);
	t_in_loader = 1;
	json_t *j = __real_json_loadb(buffer, buflen, flags, error);
	t_in_loader = 0;
	return j;
}

json_t *__wrap_json_load_file(const char *path, size_t flags, json_error_t *error)
{
	if (hit())
		return loader_failed(error);
	t_in_loader = 1;
	json_t *j = __real_json_load_file(path, flags, error);
	t_in_loader = 0;
	return j;
}

/* sqlite's allocator methods over the counter; sizes from the C library. */
static void *sq_malloc(int n)
{
	return __wrap_malloc((size_t)n);
}

static void *sq_realloc(void *p, int n)
{
	return __wrap_realloc(p, (size_t)n);
}

static int sq_size(void *p)
{
	return (int)malloc_usable_size(p);
}

static int sq_roundup(int n)
{
	return (n + 7) & ~7;
}

static int sq_init(void *arg)
{
	(void)arg;
	return SQLITE_OK;
}

static void sq_shutdown(void *arg)
{
	(void)arg;
}

void failalloc_install(void)
{
	static const sqlite3_mem_methods methods = {sq_malloc,	free,	 sq_realloc,  sq_size,
						    sq_roundup, sq_init, sq_shutdown, NULL};
	json_set_alloc_funcs(__wrap_malloc, free);
	if (sqlite3_config(SQLITE_CONFIG_MALLOC, &methods) != SQLITE_OK)
		abort();
}

void failalloc_arm(long fail_at)
{
	__atomic_store_n(&g_failed, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&g_count, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&g_fail_at, fail_at, __ATOMIC_SEQ_CST);
}

long failalloc_count(void)
{
	return __atomic_load_n(&g_count, __ATOMIC_SEQ_CST);
}

int failalloc_failed(void)
{
	return __atomic_load_n(&g_failed, __ATOMIC_SEQ_CST);
}
