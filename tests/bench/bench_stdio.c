/* bench_stdio: protocol overhead of kforge over stdio. Starts
 * `KFORGE serve --conformance-fixtures`, initializes, then for each
 * workload (tools/list; a trivial tool call) measures the round-trip
 * latency of requests sent one at a time (p50, p99) and the throughput with
 * WINDOW requests in flight. Every answer must carry a result.
 * usage: bench_stdio KFORGE_BIN DATA_DIR [REQUESTS] [WINDOW]
 * prints one line per workload: "stdio NAME RPS P50_US P99_US ERRORS". */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"

#define LINE_MAX_BYTES (1u << 20)

struct conn {
	int in, out; /* write to in (the child's stdin), read from out */
	char *buf;   /* read buffer */
	size_t len, off;
};

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Returns the next line (NUL-terminated, borrowed until the next call) or
 * NULL at EOF. */
static char *read_line(struct conn *c)
{
	for (;;) {
		char *nl = memchr(c->buf + c->off, '\n', c->len - c->off);
		ssize_t r;
		if (nl) {
			char *line = c->buf + c->off;
			*nl = '\0';
			c->off = (size_t)(nl - c->buf) + 1;
			return line;
		}
		if (c->off) {
			memmove(c->buf, c->buf + c->off, c->len - c->off);
			c->len -= c->off;
			c->off = 0;
		}
		if (c->len == LINE_MAX_BYTES)
			return NULL;
		r = read(c->out, c->buf + c->len, LINE_MAX_BYTES - c->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return NULL;
		c->len += (size_t)r;
	}
}

static int send_msg(struct conn *c, const char *fmt, long id)
{
	char msg[1024];
	int n = snprintf(msg, sizeof(msg), fmt, id);
	msg[n++] = '\n';
	return fs_write_all(c->in, msg, (size_t)n);
}

static void run(struct conn *c, const char *name, const char *fmt, long n, long window)
{
	long lat_n = n / 10 < 20000 ? n / 10 : 20000, errors = 0, sent = 0, got = 0;
	double *lat = malloc(sizeof(double) * (size_t)(lat_n ? lat_n : 1));
	double t0, t;

	for (long i = 0; i < lat_n; i++) {
		char *line;
		t = now_us();
		if (send_msg(c, fmt, i + 1) || !(line = read_line(c)))
			break;
		lat[i] = now_us() - t;
		errors += strstr(line, "\"result\"") == NULL;
	}
	qsort(lat, (size_t)lat_n, sizeof(double), cmp_d);
	t0 = now_us();
	while (got < n) {
		while (sent < n && sent - got < window)
			if (send_msg(c, fmt, 1000000 + sent++))
				goto out;
		char *line = read_line(c);
		if (!line)
			goto out;
		errors += strstr(line, "\"result\"") == NULL;
		got++;
	}
out:
	t = now_us() - t0;
	printf("stdio %s %.0f %.1f %.1f %ld\n", name, got / (t / 1e6), lat_n ? lat[lat_n / 2] : 0.0,
	       lat_n ? lat[(size_t)(lat_n * 0.99)] : 0.0, errors + (n - got));
	fflush(stdout);
	free(lat);
}

int main(int argc, char **argv)
{
	int to_child[2], from_child[2];
	struct conn c = {0};
	long n = argc > 3 ? strtol(argv[3], NULL, 10) : 100000;
	long window = argc > 4 ? strtol(argv[4], NULL, 10) : 32;
	pid_t pid;
	char *line;
	int status;

	if (argc < 3 || n < 10 || window < 1) {
		fprintf(stderr,
			"usage: bench_stdio KFORGE_BIN DATA_DIR [REQUESTS>=10] [WINDOW>=1]\n");
		return 2;
	}
	if (pipe(to_child) || pipe(from_child))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		dup2(to_child[0], 0);
		dup2(from_child[1], 1);
		close(to_child[1]);
		close(from_child[0]);
		execl(argv[1], argv[1], "serve", "--conformance-fixtures", "--data-dir", argv[2],
		      "--log-level", "warn", (char *)NULL);
		_exit(127);
	}
	close(to_child[0]);
	close(from_child[1]);
	signal(SIGPIPE, SIG_IGN);
	c.in = to_child[1];
	c.out = from_child[0];
	c.buf = malloc(LINE_MAX_BYTES);
	if (!c.buf)
		return 1;
	if (send_msg(&c,
		     "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"initialize\",\"params\":"
		     "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
		     "\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}}",
		     0) ||
	    !(line = read_line(&c)) || !strstr(line, "\"result\"")) {
		fprintf(stderr, "bench_stdio: initialize failed\n");
		return 1;
	}
	send_msg(&c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", 0);
	run(&c, "tools/list", "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/list\"}", n,
	    window);
	run(&c, "tools/call(test_simple_text)",
	    "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"test_simple_text\",\"arguments\":{}}}",
	    n, window);
	close(c.in);
	waitpid(pid, &status, 0);
	free(c.buf);
	return 0;
}
