/* log: leveled, thread-safe logging to stderr for the daemon and the CLI.
 * stdout belongs to the stdio transport, so nothing here ever writes there.
 * Each line is formatted whole and written with one write(2) under a lock,
 * so lines from worker threads never interleave. Lines longer than
 * LOG_LINE_MAX bytes are truncated with a trailing "...". */
#ifndef KF_LOG_H
#define KF_LOG_H

#include <stdarg.h>

enum {
	LOG_DEBUG = 0,
	LOG_INFO = 1,
	LOG_WARN = 2,
	LOG_ERROR = 3,
	LOG_OFF = 4 /* nothing is written */
};

#define LOG_LINE_MAX 2048 /* bytes per line, including the prefix */

/* Sets the least severe level that is written (default LOG_INFO).
 * Thread-safe. Out-of-range values are clamped. */
void log_set_level(int level);

/* The current level. Thread-safe. */
int log_get_level(void);

/* Parses "debug", "info", "warn"/"warning", "error", "off" (any case).
 * Returns the LOG_* value, or -1 for anything else. name: borrowed. */
int log_level_parse(const char *name);

/* Returns the static lowercase name of level ("debug".."error", "off"). */
const char *log_level_name(int level);

/* Writes "2026-11-30T09:50:01.123Z kforge[pid] LEVEL module: message\n" to
 * stderr when level >= the current level. module: borrowed, may be NULL.
 * Never fails; a failed write is ignored. */
void log_write(int level, const char *module, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void log_vwrite(int level, const char *module, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

#define log_debug(mod, ...) log_write(LOG_DEBUG, (mod), __VA_ARGS__)
#define log_info(mod, ...)  log_write(LOG_INFO, (mod), __VA_ARGS__)
#define log_warn(mod, ...)  log_write(LOG_WARN, (mod), __VA_ARGS__)
#define log_error(mod, ...) log_write(LOG_ERROR, (mod), __VA_ARGS__)

#endif
