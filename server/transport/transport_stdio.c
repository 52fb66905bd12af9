/* transport_stdio: one MCP session over a pair of file descriptors, one
 * compact JSON message per line. Only JSON-RPC messages are written to
 * out_fd (logs go to stderr). A line over the message cap is dropped while
 * it streams in (never buffered whole) and answered with an error; the
 * session then continues. At EOF in-flight calls are cancelled and waited
 * for before returning. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/app.h"
#include "server/mcp/jsonrpc.h"
#include "base/fs.h"
#include "base/log.h"
#include "server/mcp/mcp.h"
#include "server/transport/transport.h"

#define READ_CHUNK_BYTES 65536

struct out {
	int fd;
	volatile int broken; /* set once a write failed */
};

/* The session serializes calls, so writes never interleave. */
static void send_line(void *arg, void *call, int final, const char *json, size_t len)
{
	struct out *o = arg;

	(void)call;
	(void) final;
	if (o->broken)
		return;
	if (memchr(json, '\n', len)) {
		/* Compact JSON never holds a raw newline; refuse to break framing. */
		log_error("stdio", "refusing to write a message containing a newline");
		return;
	}
	if (fs_write_all(o->fd, json, len) || fs_write_all(o->fd, "\n", 1)) {
		log_error("stdio", "cannot write to stdout: %s", strerror(errno));
		o->broken = 1;
	}
}

static void handle_line(struct mcp_session *s, char *line, size_t len)
{
	if (len > 0 && line[len - 1] == '\r')
		len--;
	/* Blank lines between messages are tolerated. */
	for (size_t i = 0; i < len; i++)
		if (line[i] != ' ' && line[i] != '\t') {
			mcp_session_handle(s, line, len, NULL);
			return;
		}
}

static void reply_oversize(struct out *o, size_t cap)
{
	char msg[160];
	size_t len;
	char *text;

	snprintf(
		msg, sizeof(msg),
		"Invalid Request: message over the %zu-byte limit (--max-message-bytes); it was dropped",
		cap);
	text = jsonrpc_error(NULL, JSONRPC_INVALID_REQUEST, msg, NULL, &len);
	if (text)
		send_line(o, NULL, 1, text, len);
	free(text);
	log_warn("stdio", "dropped a message over %zu bytes", cap);
}

int transport_stdio_run(struct app *app, int in_fd, int out_fd, struct kf_err *err)
{
	size_t cap = app->cfg.max_message_bytes ? app->cfg.max_message_bytes
						: JSONRPC_MAX_MESSAGE_BYTES_DEFAULT;
	struct out o = {.fd = out_fd};
	struct mcp_session *s;
	size_t used = 0, alloc = READ_CHUNK_BYTES;
	int skipping = 0, rc = 0;
	char *buf;

	buf = malloc(alloc);
	s = mcp_session_new(app, send_line, &o);
	if (!buf || !s) {
		free(buf);
		mcp_session_free(s);
		return kf_err_set(err, KF_ENOMEM, "stdio: out of memory");
	}
	log_info("stdio", "serving MCP on stdin/stdout");
	for (;;) {
		ssize_t n;
		size_t start = 0;

		if (alloc - used < READ_CHUNK_BYTES) {
			size_t na = alloc * 2;
			char *nb = realloc(buf, na);
			if (!nb) {
				rc = kf_err_set(err, KF_ENOMEM, "stdio: out of memory");
				break;
			}
			buf = nb;
			alloc = na;
		}
		n = read(in_fd, buf + used, alloc - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = kf_err_set(err, KF_EIO, "stdio: read failed: %s", strerror(errno));
			break;
		}
		if (n == 0) {
			/* EOF: a last line without a newline still counts. */
			if (!skipping && used > 0)
				handle_line(s, buf, used);
			break;
		}
		for (size_t i = used; i < used + (size_t)n; i++) {
			if (buf[i] != '\n')
				continue;
			if (skipping) {
				skipping = 0;
				reply_oversize(&o, cap);
			} else if (i - start > cap) {
				reply_oversize(&o, cap);
			} else {
				handle_line(s, buf + start, i - start);
			}
			start = i + 1;
		}
		used += (size_t)n;
		memmove(buf, buf + start, used - start);
		used -= start;
		if (used > cap) {
			/* Too long already: drop what we have and skip to the newline. */
			skipping = 1;
			used = 0;
		}
		if (alloc > 4 * READ_CHUNK_BYTES && used < READ_CHUNK_BYTES) {
			char *nb = realloc(buf, READ_CHUNK_BYTES * 2);
			if (nb) {
				buf = nb;
				alloc = READ_CHUNK_BYTES * 2;
			}
		}
		if (o.broken) {
			rc = kf_err_set(err, KF_EIO, "stdio: stdout is closed");
			break;
		}
	}
	if (skipping)
		reply_oversize(&o, cap);
	mcp_session_free(s);
	mcp_tasks_shutdown(); /* their calls use the app, which closes next */
	free(buf);
	log_info("stdio", "input closed; exiting");
	if (!rc && o.broken)
		rc = kf_err_set(err, KF_EIO, "stdio: stdout is closed");
	return rc;
}
