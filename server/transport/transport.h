/* transport: the entry points of the two ways kforge speaks MCP. Each runs
 * until its input ends (stdio) or the daemon is told to stop (http), creating
 * mcp sessions (mcp.h) over one app. transport_stdio.c is core's;
 * transport_http.c (libmicrohttpd, Streamable HTTP at /mcp, REST under /v1)
 * is http's. */
#ifndef KF_TRANSPORT_H
#define KF_TRANSPORT_H

#include <stddef.h>

#include "base/kf_err.h"

struct app;

/* A GET route answered piece by piece (an export too large to hold), given
 * by the composition root: the transport knows the path and the calls, not
 * what they produce. The token and Host/Origin checks apply as to /v1. */
struct http_stream {
	const char *path; /* exact URL path, "/v1/dataset.jsonl" */
	const char *mime; /* its Content-Type */
	/* Starts one response: query(qarg, name) gives a decoded query
	 * parameter or NULL (valid during the call). Returns 0 with *state, or
	 * an HTTP status (400, 500) with msg (cap bytes) naming the problem.
	 * Runs on an HTTP thread, as does read: work that takes long there
	 * (the dataset's first pass over the history) holds that thread. */
	int (*open)(struct app *app, const char *(*query)(void *qarg, const char *name), void *qarg,
		    void **state, char *msg, size_t cap);
	/* Writes up to max bytes into buf: returns the count, 0 at the end,
	 * -1 on an error (the response is cut short). */
	long (*read)(void *state, char *buf, size_t max);
	void (*close)(void *state); /* frees state */
};

/* Options of `kforge serve --http`. Strings borrowed for the run. */
struct http_options {
	const char *addr;		    /* bind address, default "127.0.0.1" */
	int port;			    /* TCP port, 1..65535 (0: pick a free one) */
	const char *token_env;		    /* name of the env var holding the bearer token,
				 * NULL for none (refused beyond loopback) */
	const char *token_file;		    /* file of "NAME SECRET" lines, one token per
				 * client, or NULL */
	unsigned max_inflight_per_client;   /* MCP and REST requests waiting for an answer
				 * per client (429 past it), 0 = 256 or
				 * $KFORGE_HTTP_INFLIGHT_PER_CLIENT */
	size_t max_body_bytes;		    /* request body cap (413 past it), default
				 * app->cfg.max_message_bytes */
	unsigned session_idle_s;	    /* idle sessions expire after this, default 1800 */
	const char *const *allowed_origins; /* extra allowed Origin values, NULL
					     * terminated; NULL = loopback only */
	unsigned threads;		    /* HTTP worker threads, 0 = number of CPUs */
	const char *port_file;		    /* if set, the bound port is written here once
				 * listening (tests use port 0) */
	unsigned max_sessions;		    /* open MCP sessions at most (503 past it),
				 * 0 = 1024 or $KFORGE_HTTP_MAX_SESSIONS */
	unsigned max_inflight;		    /* MCP requests waiting for an answer at most
				 * (503 past it), 0 = 1024 or
				 * $KFORGE_HTTP_MAX_INFLIGHT */
	const char *const *allowed_hosts;   /* extra Host names served on loopback, NULL
					     * terminated; NULL = loopback names only */
	unsigned max_sessions_per_client;   /* MCP sessions per client (token, else
					     * address), 0 = 64 or
					     * $KFORGE_HTTP_SESSIONS_PER_CLIENT */
	unsigned max_conns_per_ip;	    /* connections per client address, 0 = 256
					     * or $KFORGE_HTTP_CONNS_PER_IP */
	unsigned request_timeout_s;	    /* a request's header and body arrive within
					     * this, 0 = 30 */
	size_t max_upload_total;	    /* bytes of request bodies held at once
					     * (503 past it), 0 = 64 MiB */
	const struct http_stream *streams;  /* streamed GET routes (borrowed), or NULL */
	size_t streams_len;
};

/* Serves one MCP session on in_fd/out_fd: newline-delimited compact JSON,
 * one message per line, nothing else on out_fd. A line over
 * app->cfg.max_message_bytes gets a -32600 error and is skipped. At EOF
 * cancels every in-flight request, waits for them, and returns 0; returns
 * KF_EIO with err set when out_fd can no longer be written. */
int transport_stdio_run(struct app *app, int in_fd, int out_fd, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Serves Streamable HTTP until SIGINT/SIGTERM; returns 0 after a clean
 * shutdown, or a KF_E* code with err set (KF_EIO: cannot bind; KF_EPERM:
 * non-loopback bind without a token; KF_EINVAL: bad option). Defined in
 * transport_http.c. */
int transport_http_run(struct app *app, const struct http_options *opt, struct kf_err *err)
	__attribute__((warn_unused_result));

#endif
