/* transport_http: kforge over HTTP on libmicrohttpd (epoll, a thread pool
 * of one thread per CPU): MCP Streamable HTTP at /mcp (http_mcp.c), REST
 * under /v1 (http_rest.c, rest.c) and the web page at /. This file starts
 * and stops the daemon, checks every request before its body is read
 * (Host/Origin against DNS rebinding, the bearer token, the protocol
 * version, Accept, the body cap), collects bodies and dispatches. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/app.h"
#include "server/transport/http_int.h"
#include "base/log.h"
#include "server/transport/transport.h"
#include "base/version.h"
#include "server/transport/web.h"

/* --- small helpers -------------------------------------------------------------- */

time_t http_mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

const char *http_header(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

void http_cors(struct MHD_Response *r, struct MHD_Connection *c)
{
	const char *origin = http_header(c, "Origin");

	if (!origin)
		return;
	MHD_add_response_header(r, "Access-Control-Allow-Origin", origin);
	MHD_add_response_header(r, "Access-Control-Expose-Headers", "Mcp-Session-Id");
	MHD_add_response_header(r, "Vary", "Origin");
}

/* Queues a response with body (copied) and content type; extra headers as
 * name, value pairs ending with NULL. */
enum MHD_Result http_reply(struct MHD_Connection *c, unsigned status, const char *type,
			   const char *body, size_t len, ...)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;
	va_list ap;
	const char *n;

	if (!r)
		return MHD_NO;
	if (type)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (status != MHD_HTTP_FORBIDDEN) /* a refused Origin gets no CORS */
		http_cors(r, c);
	va_start(ap, len);
	while ((n = va_arg(ap, const char *)) != NULL) {
		const char *v = va_arg(ap, const char *);
		if (v)
			MHD_add_response_header(r, n, v);
	}
	va_end(ap);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* A JSON-RPC error body (id null) for transport-level failures on /mcp. */
enum MHD_Result http_rpc_error(struct MHD_Connection *c, unsigned status, int code,
			       const char *extra_name, const char *extra_value, const char *fmt,
			       ...)
{
	char msg[400];
	va_list ap;
	json_t *j;
	char *text;
	enum MHD_Result ret;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	j = json_pack("{s:s,s:n,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", "error", "code", code,
		      "message", msg);
	text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	ret = http_reply(c, status, "application/json", text ? text : "{}", text ? strlen(text) : 2,
			 extra_name, extra_value, NULL);
	free(text);
	return ret;
}

/* A REST-style error body {"summary", "error": {code, message}}. */
enum MHD_Result http_rest_error(struct MHD_Connection *c, unsigned status, const char *code,
				const char *extra_name, const char *extra_value, const char *fmt,
				...)
{
	char msg[400];
	va_list ap;
	json_t *j;
	char *text;
	enum MHD_Result ret;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	j = json_pack("{s:s,s:{s:s,s:s}}", "summary", msg, "error", "code", code, "message", msg);
	text = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	ret = http_reply(c, status, "application/json", text ? text : "{}", text ? strlen(text) : 2,
			 extra_name, extra_value, NULL);
	free(text);
	return ret;
}

/* --- checks -------------------------------------------------------------------- */

static int is_loopback_name(const char *h, size_t n)
{
	return (n == 9 && !strncasecmp(h, "localhost", 9)) || (n >= 4 && !strncmp(h, "127.", 4)) ||
	       (n == 5 && !strncmp(h, "[::1]", 5)) || (n == 3 && !strncmp(h, "::1", 3));
}

/* The host part of a Host header or an origin's authority (no port). */
static size_t host_part(const char *h, const char **start)
{
	const char *e;

	*start = h;
	if (h[0] == '[') {
		e = strchr(h, ']');
		return e ? (size_t)(e - h + 1) : strlen(h);
	}
	e = strchr(h, ':');
	return e ? (size_t)(e - h) : strlen(h);
}

static int host_allowed(const struct hsrv *srv, const char *host)
{
	const char *h;
	size_t n;

	if (srv->any_host)
		return 1;
	if (!host || !*host)
		return 0;
	n = host_part(host, &h);
	if (is_loopback_name(h, n))
		return 1;
	return srv->bind_host[0] && strlen(srv->bind_host) == n &&
	       !strncasecmp(srv->bind_host, h, n);
}

/* 1 for the text of a wildcard address ("0.0.0.0", "[::]"). */
static int is_wildcard_name(const char *h)
{
	return !strcmp(h, "0.0.0.0") || !strcmp(h, "[::]");
}

static int origin_allowed(const struct hsrv *srv, const char *origin)
{
	const char *auth, *h;
	size_t n;

	if (!origin)
		return 1; /* not a browser: nothing to rebind */
	for (const char *const *o = srv->origins; o && *o; o++)
		if (!strcasecmp(*o, origin))
			return 1;
	if (!strncasecmp(origin, "http://", 7))
		auth = origin + 7;
	else if (!strncasecmp(origin, "https://", 8))
		auth = origin + 8;
	else
		return 0;
	n = host_part(auth, &h);
	if (is_loopback_name(h, n))
		return 1;
	return srv->bind_host[0] && !is_wildcard_name(srv->bind_host) &&
	       strlen(srv->bind_host) == n && !strncasecmp(srv->bind_host, h, n);
}

/* Constant-time in the token's length: every byte of the token is compared
 * whatever the candidate holds. */
static int token_ok(const struct hsrv *srv, const char *authz)
{
	const char *t;
	size_t tl;
	unsigned char d;

	if (!authz || strncasecmp(authz, "Bearer ", 7) != 0)
		return 0;
	t = authz + 7;
	while (*t == ' ')
		t++;
	tl = strlen(t);
	d = (unsigned char)(tl != srv->token_len);
	for (size_t i = 0; i < srv->token_len; i++)
		d |= (unsigned char)(srv->token[i] ^ (i < tl ? t[i] : 0));
	return d == 0;
}

/* 1 when the Accept header allows type ("application/json"); wildcards
 * count. */
int http_accepts(const char *accept, const char *type)
{
	const char *slash = strchr(type, '/');
	size_t major = (size_t)(slash - type);
	const char *p = accept;

	if (!accept)
		return 0;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t len;
		const char *semi;
		while (*p == ' ')
			p++;
		len = e ? (size_t)(e - p) : strlen(p);
		semi = memchr(p, ';', len);
		if (semi)
			len = (size_t)(semi - p);
		while (len && p[len - 1] == ' ')
			len--;
		if ((len == strlen(type) && !strncasecmp(p, type, len)) ||
		    (len == 3 && !strncmp(p, "*/*", 3)) ||
		    (len == major + 2 && !strncasecmp(p, type, major + 1) && p[major + 1] == '*'))
			return 1;
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

static int version_ok(const char *v)
{
	for (int i = 0; MCP_VERSIONS[i]; i++)
		if (!strcmp(MCP_VERSIONS[i], v))
			return 1;
	return 0;
}

/* --- dispatch --------------------------------------------------------------------- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_len, void **con_cls)
{
	struct hsrv *srv = cls;
	struct hreq *rq = *con_cls;
	int is_mcp = !strcmp(url, "/mcp");
	int is_post = !strcmp(method, "POST");

	(void)version;
	if (!rq) {
		const char *origin = http_header(conn, "Origin");
		const char *v;

		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*con_cls = rq;
		/* Checks that need no body, answered before reading it. */
		if (!host_allowed(srv, http_header(conn, MHD_HTTP_HEADER_HOST)) ||
		    !origin_allowed(srv, origin)) {
			rq->kind = RQ_ANSWERED;
			log_info("http", "403 %s %s: Host '%s' / Origin '%s' not allowed", method,
				 url, http_header(conn, MHD_HTTP_HEADER_HOST) ?: "", origin ?: "");
			return http_rest_error(
				conn, 403, "refused", NULL, NULL,
				"Forbidden: Host or Origin is not allowed (DNS rebinding "
				"protection); use localhost or start kforge with --allow-origin");
		}
		if (srv->token_len && !(strcmp(url, "/") == 0 || strcmp(url, "/v1/health") == 0) &&
		    strcmp(method, "OPTIONS") != 0 &&
		    !token_ok(srv, http_header(conn, MHD_HTTP_HEADER_AUTHORIZATION))) {
			rq->kind = RQ_ANSWERED;
			return http_rest_error(
				conn, 401, "unauthorized", MHD_HTTP_HEADER_WWW_AUTHENTICATE,
				"Bearer realm=\"kforge\"",
				"Unauthorized: send 'Authorization: Bearer <token>' with the token "
				"in the server's --token-env variable");
		}
		if (is_mcp && (v = http_header(conn, "MCP-Protocol-Version")) && !version_ok(v)) {
			rq->kind = RQ_ANSWERED;
			return http_rpc_error(conn, 400, -32000, NULL, NULL,
					      "Bad Request: unsupported MCP-Protocol-Version "
					      "'%.40s' (supported: %s, %s, %s)",
					      v, MCP_VERSIONS[0], MCP_VERSIONS[1], MCP_VERSIONS[2]);
		}
		if (is_mcp && is_post) {
			const char *acc = http_header(conn, MHD_HTTP_HEADER_ACCEPT);
			if (!http_accepts(acc, "application/json") ||
			    !http_accepts(acc, "text/event-stream")) {
				rq->kind = RQ_ANSWERED;
				return http_rpc_error(conn, 406, -32000, NULL, NULL,
						      "Not Acceptable: Accept must include both "
						      "application/json and text/event-stream");
			}
		}
		if ((v = http_header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH))) {
			char *end;
			unsigned long long n = strtoull(v, &end, 10);
			if (*end == '\0' && n > srv->max_body) {
				rq->kind = RQ_ANSWERED;
				if (is_mcp)
					return http_rpc_error(
						conn, 413, -32600, NULL, NULL,
						"Request body too large: %llu bytes, the cap is "
						"%zu bytes (--max-message-bytes)",
						n, srv->max_body);
				return http_rest_error(
					conn, 413, "too_big", NULL, NULL,
					"request body too large: %llu bytes, the cap is %zu bytes",
					n, srv->max_body);
			}
		}
		return MHD_YES;
	}
	if (*upload_len) {
		/* Body bytes: collect up to the cap, then only count. */
		if (!rq->too_big) {
			if (rq->len + *upload_len > srv->max_body) {
				rq->too_big = 1;
				free(rq->body);
				rq->body = NULL;
				rq->len = rq->cap = 0;
			} else {
				if (rq->len + *upload_len > rq->cap) {
					size_t cap = rq->cap ? rq->cap : 1024;
					char *nb;
					while (cap < rq->len + *upload_len)
						cap *= 2;
					if (cap > srv->max_body)
						cap = srv->max_body;
					nb = realloc(rq->body, cap);
					if (!nb)
						return MHD_NO;
					rq->body = nb;
					rq->cap = cap;
				}
				memcpy(rq->body + rq->len, upload, *upload_len);
				rq->len += *upload_len;
			}
		}
		*upload_len = 0;
		return MHD_YES;
	}
	switch (rq->kind) {
	case RQ_MCP_POST: return http_mcp_resumed(rq);
	case RQ_REST: return http_rest_resumed(rq);
	case RQ_ANSWERED:
	case RQ_MCP_GET: return MHD_YES;
	case RQ_NEW: break;
	}
	if (!strcmp(method, "OPTIONS")) {
		rq->kind = RQ_ANSWERED;
		return http_reply(conn, 204, NULL, "", 0, "Access-Control-Allow-Methods",
				  "GET, POST, DELETE, OPTIONS", "Access-Control-Allow-Headers",
				  "Content-Type, Accept, Authorization, Mcp-Session-Id, "
				  "MCP-Protocol-Version, Last-Event-ID",
				  "Access-Control-Expose-Headers", "Mcp-Session-Id", NULL);
	}
	if (is_mcp) {
		if (is_post) {
			rq->kind = RQ_MCP_POST;
			return http_mcp_post(srv, conn, rq);
		}
		rq->kind = RQ_ANSWERED;
		if (!strcmp(method, "GET")) {
			rq->kind = RQ_MCP_GET;
			return http_mcp_get(srv, conn, rq);
		}
		if (!strcmp(method, "DELETE"))
			return http_mcp_delete(srv, conn);
		return http_rpc_error(conn, 405, -32000, "Allow", "GET, POST, DELETE",
				      "Method Not Allowed: /mcp takes POST, GET and DELETE");
	}
	if (!strncmp(url, "/v1/", 4) || !strcmp(url, "/v1")) {
		rq->kind = RQ_REST;
		return http_rest_start(srv, conn, url, method, rq);
	}
	rq->kind = RQ_ANSWERED;
	if (!strcmp(url, "/") || !strcmp(url, "/index.html")) {
		size_t len;
		const char *page = web_index_html(&len);
		if (strcmp(method, "GET") && strcmp(method, "HEAD"))
			return http_rest_error(conn, 405, "method_not_allowed", "Allow", "GET",
					       "%s /: the page takes GET only", method);
		struct MHD_Response *r =
			MHD_create_response_from_buffer(len, (void *)page, MHD_RESPMEM_PERSISTENT);
		enum MHD_Result ret;
		if (!r)
			return MHD_NO;
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
					"text/html; charset=utf-8");
		http_cors(r, conn);
		MHD_add_response_header(r, "Content-Security-Policy",
					"default-src 'self'; style-src 'self' 'unsafe-inline'; "
					"script-src 'self' 'unsafe-inline'");
		ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
		MHD_destroy_response(r);
		return ret;
	}
	return http_rest_error(conn, 404, "not_found", NULL, NULL,
			       "no such path '%s': MCP is at /mcp, the REST API under /v1 (GET "
			       "/v1/openapi.json), the page at /",
			       url);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct hreq *rq = *con_cls;

	(void)cls;
	(void)conn;
	if (!rq)
		return;
	if (rq->call)
		http_mcp_completed(rq->call, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
	if (rq->job)
		http_rest_release(rq->job);
	free(rq->body);
	free(rq);
	*con_cls = NULL;
}

static int stop_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;
	if (stop_pipe[1] >= 0 && write(stop_pipe[1], &b, 1) < 0) {
		/* nothing to do in a signal handler */
	}
	errno = saved;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	log_vwrite(LOG_WARN, "http", fmt, ap);
}

static int is_loopback_addr(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;
		return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;
		return IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
	}
	return 0;
}

static int parse_addr(const char *addr, int port, struct sockaddr_storage *ss, struct kf_err *err)
{
	memset(ss, 0, sizeof(*ss));
	if (!addr || !*addr || !strcmp(addr, "localhost"))
		addr = "127.0.0.1";
	if (strchr(addr, ':')) {
		struct sockaddr_in6 *a = (void *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, addr, &a->sin6_addr) == 1)
			return 0;
	} else {
		struct sockaddr_in *a = (void *)ss;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, addr, &a->sin_addr) == 1)
			return 0;
	}
	return kf_err_set(err, KF_EINVAL,
			  "--http: '%s' is not an IP address (use 127.0.0.1, ::1, 0.0.0.0 or a "
			  "local address)",
			  addr);
}

static int write_port_file(const char *path, int port, struct kf_err *err)
{
	char tmp[4096];
	FILE *f;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return kf_err_set(err, KF_EINVAL, "--port-file: path too long");
	f = fopen(tmp, "w");
	if (!f)
		return kf_err_set(err, KF_EIO, "--port-file '%s': %s", tmp, strerror(errno));
	fprintf(f, "%d\n", port);
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		return kf_err_set(err, KF_EIO, "--port-file '%s': %s", path, strerror(errno));
	return 0;
}

static unsigned env_unsigned(const char *name, unsigned def)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return def;
	n = strtoul(v, &end, 10);
	return (*end || n == 0 || n > 1000000) ? def : (unsigned)n;
}

int transport_http_run(struct app *app, const struct http_options *opt, struct kf_err *err)
{
	struct hsrv *srv;
	struct sockaddr_storage ss;
	struct sigaction sa, old_int, old_term;
	unsigned threads = opt->threads;
	unsigned conn_limit = 4096;
	struct rlimit rl;
	const union MHD_DaemonInfo *di;
	int port, rc = 0;
	char hostbuf[64];

	if (opt->port < 0 || opt->port > 65535)
		return kf_err_set(err, KF_EINVAL, "--http: port %d is not 0-65535", opt->port);
	rc = parse_addr(opt->addr, opt->port, &ss, err);
	if (rc)
		return rc;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	srv->app = app;
	srv->max_body = opt->max_body_bytes ? opt->max_body_bytes : HTTP_DEFAULT_BODY;
	srv->idle_s = opt->session_idle_s ? opt->session_idle_s : HTTP_DEFAULT_IDLE_S;
	srv->max_sessions =
		opt->max_sessions ? opt->max_sessions
				  : env_unsigned("KFORGE_HTTP_MAX_SESSIONS", HTTP_DEFAULT_SESSIONS);
	srv->max_inflight =
		opt->max_inflight ? opt->max_inflight
				  : env_unsigned("KFORGE_HTTP_MAX_INFLIGHT", HTTP_DEFAULT_INFLIGHT);
	srv->origins = opt->allowed_origins;
	srv->started = http_mono_s();
	pthread_mutex_init(&srv->lock, NULL);

	if (opt->token_env) {
		const char *t = getenv(opt->token_env);
		if (!t || !*t) {
			rc = kf_err_set(err, KF_EINVAL,
					"--token-env %s: the variable is not set or empty; export "
					"%s=<a long random token>",
					opt->token_env, opt->token_env);
			goto out;
		}
		if (strlen(t) >= sizeof(srv->token)) {
			rc = kf_err_set(err, KF_EINVAL,
					"--token-env %s: the token is longer than %zu bytes",
					opt->token_env, sizeof(srv->token) - 1);
			goto out;
		}
		srv->token_len = strlen(t);
		memcpy(srv->token, t, srv->token_len);
	}
	if (!is_loopback_addr(&ss) && !srv->token_len) {
		rc = kf_err_set(err, KF_EPERM,
				"refusing to serve on %s without a token: binding beyond loopback "
				"needs --token-env VAR (Authorization: Bearer <token>)",
				opt->addr);
		goto out;
	}
	/* Beyond loopback clients use whatever name the host has (gpu-box:7070),
	 * and the token guards every request; the Host check is for loopback,
	 * where DNS rebinding is the threat. */
	srv->any_host = !is_loopback_addr(&ss);
	if (ss.ss_family == AF_INET6)
		snprintf(hostbuf, sizeof(hostbuf), "[%s]", opt->addr);
	else
		snprintf(hostbuf, sizeof(hostbuf), "%s", opt->addr ? opt->addr : "127.0.0.1");
	if (!is_loopback_addr(&ss))
		snprintf(srv->bind_host, sizeof(srv->bind_host), "%s", hostbuf);

	if (!threads)
		threads = env_unsigned("KFORGE_HTTP_THREADS", 0);
	if (!threads) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		threads = n > 0 ? (unsigned)n : 1;
	}
	if (threads > 64)
		threads = 64;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < conn_limit + 128)
		conn_limit = rl.rlim_cur > 256 ? (unsigned)rl.rlim_cur - 128 : 128;

	if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		rc = kf_err_set(err, KF_EIO, "pipe: %s", strerror(errno));
		goto out;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	signal(SIGPIPE, SIG_IGN);

	srv->d = MHD_start_daemon(
		MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
			MHD_USE_TURBO | (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
		(uint16_t)opt->port, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER,
		mhd_log, srv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_THREAD_POOL_SIZE,
		threads, MHD_OPTION_CONNECTION_LIMIT, conn_limit, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)120, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16 * 1024,
		MHD_OPTION_END);
	if (!srv->d) {
		rc = kf_err_set(err, KF_EIO, "cannot listen on %s port %d: %s", hostbuf, opt->port,
				errno ? strerror(errno) : "libmicrohttpd refused to start");
		goto out_sig;
	}
	di = MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_BIND_PORT);
	port = di ? di->port : opt->port;
	pthread_mutex_lock(&srv->lock); /* /v1/health may already read it */
	snprintf(srv->listen, sizeof(srv->listen), "http://%s:%d", hostbuf, port);
	pthread_mutex_unlock(&srv->lock);
	if (opt->port_file) {
		rc = write_port_file(opt->port_file, port, err);
		if (rc)
			goto out_stop;
	}
	log_info("http", "listening on %s/mcp (REST %s/v1, page %s/)%s", srv->listen, srv->listen,
		 srv->listen, srv->token_len ? "; bearer token required" : "");

	for (;;) {
		struct pollfd p = {.fd = stop_pipe[0], .events = POLLIN};
		int r = poll(&p, 1, 1000);
		if (r > 0) {
			unsigned char b;
			if (read(stop_pipe[0], &b, 1) == 1) {
				log_info("http", "signal %d: shutting down", b);
				break;
			}
		}
		http_housekeep(srv);
	}

out_stop:
	atomic_store(&srv->stopping, 1);
	/* End every session first: their calls get final answers and their
	 * GET streams finish, so no connection is left suspended. */
	http_mcp_close_all(srv);
	/* REST tool calls cannot be cancelled from here; their threads use the
	 * app and the connection, so wait for them before stopping. */
	for (int i = 1; atomic_load(&srv->rest_running); i++) {
		if (i % 100 == 0)
			log_info("http", "waiting for %u REST tool calls to finish",
				 atomic_load(&srv->rest_running));
		usleep(50 * 1000);
	}
	MHD_stop_daemon(srv->d);
out_sig:
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	close(stop_pipe[0]);
	close(stop_pipe[1]);
	stop_pipe[0] = stop_pipe[1] = -1;
out:
	pthread_mutex_destroy(&srv->lock);
	free(srv);
	return rc;
}
