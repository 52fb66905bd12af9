/* kb_build_int: internals shared by kb_build.c (GPU facts, sources, the
 * database) and kb_build_guides.c (guides); included by no one else. */
#ifndef KF_KB_BUILD_INT_H
#define KF_KB_BUILD_INT_H

#include <sqlite3.h>

#include "base/kf_err.h"

/* Runs sql (no results) on db; KF_EDB with sqlite's message and what. */
int kb_build_exec(sqlite3 *db, const char *sql, const char *what, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Prepares sql; KF_EDB on failure. */
int kb_build_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Steps a bound insert once and resets it; KF_EDB naming what on failure
 * (a CHECK or UNIQUE violation included). */
int kb_build_step_reset(sqlite3 *db, sqlite3_stmt *st, const char *what, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Binds (a[, b], key) to ins for every key of the sources table (has finds
 * one by its ?1) named in text, words of [A-Za-z0-9-]; b NULL binds two
 * columns. Returns 0 and how many through *n, or the step's error. */
int kb_build_link_keys(sqlite3 *db, sqlite3_stmt *has, sqlite3_stmt *ins, const char *a,
		       const char *b, const char *text, int *n, struct kf_err *err);

/* Binds s (copied) or NULL to parameter i of st. */
void kb_build_bind_text(sqlite3_stmt *st, int i, const char *s);

/* Imports SOURCES.md at path: the source keys and the conflicts. KF_EINVAL
 * when it has no source keys table. */
int kb_build_import_sources_md(sqlite3 *db, const char *path, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Imports gpu-facts/figure_sources.csv at path (after the GPUs): each
 * line gives one known figure its own source text and keys. A missing file
 * means none. KF_EINVAL naming the file and line for an unknown or not
 * known figure, a repeated one, or a source naming no key of SOURCES.md. */
int kb_build_figsrc_import(sqlite3 *db, const char *path, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Imports every guides/<name>.md under dir into db (whose gpus and aliases
 * are already filled: guide archs may name GPUs and architectures). A
 * missing dir means no guides. Errors name the file (and line). */
int kb_build_import_guides(sqlite3 *db, const char *dir, struct kf_err *err)
	__attribute__((warn_unused_result));

#endif
