/* log: leveled stderr logging; see log.h. One write(2) per line under a
 * mutex keeps lines from concurrent threads whole. */
#include "base/log.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int log_level = LOG_INFO;

static const char *const LEVEL_NAMES[] = {"debug", "info", "warn", "error", "off"};
static const char *const LEVEL_TAGS[] = {"DEBUG", "INFO", "WARN", "ERROR", "OFF"};

void log_set_level(int level)
{
	if (level < LOG_DEBUG)
		level = LOG_DEBUG;
	if (level > LOG_OFF)
		level = LOG_OFF;
	__atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
}

int log_get_level(void)
{
	return __atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

int log_level_parse(const char *name)
{
	if (!name)
		return -1;
	for (int i = LOG_DEBUG; i <= LOG_OFF; i++)
		if (strcasecmp(name, LEVEL_NAMES[i]) == 0)
			return i;
	if (strcasecmp(name, "warning") == 0)
		return LOG_WARN;
	return -1;
}

const char *log_level_name(int level)
{
	if (level < LOG_DEBUG || level > LOG_OFF)
		return "unknown";
	return LEVEL_NAMES[level];
}

void log_vwrite(int level, const char *module, const char *fmt, va_list ap)
{
	char line[LOG_LINE_MAX];
	struct timespec ts;
	struct tm tm;
	size_t n;
	int k;

	if (level < LOG_DEBUG || level >= LOG_OFF || level < log_get_level())
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	k = snprintf(line, sizeof(line), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ kforge[%ld] %s %s%s",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		     ts.tv_nsec / 1000000L, (long)getpid(), LEVEL_TAGS[level], module ? module : "",
		     module ? ": " : "");
	n = k < 0 ? 0 : (size_t)k;
	if (n < sizeof(line) - 1) {
		k = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
		if (k > 0)
			n += (size_t)k;
	}
	if (n >= sizeof(line) - 1) {
		/* Truncated: mark it, keep room for the newline. */
		n = sizeof(line) - 1;
		memcpy(line + n - 4, "...", 3);
		n -= 1;
	}
	line[n++] = '\n';
	pthread_mutex_lock(&log_lock);
	int rc = fs_write_all(STDERR_FILENO, line, n);
	pthread_mutex_unlock(&log_lock);
	(void)rc; /* a failed write is ignored: stderr is the only channel */
}

void log_write(int level, const char *module, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(level, module, fmt, ap);
	va_end(ap);
}
