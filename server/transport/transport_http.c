/* transport_http: kforge over HTTP on libmicrohttpd (epoll, a thread pool
 * of one thread per CPU): MCP Streamable HTTP at /mcp (http_mcp.c), REST
 * under /v1 (http_rest.c, rest.c) and the web page at /. This file starts
 * and stops the daemon, checks every request before its body is read
 * (Host/Origin against DNS rebinding in http_guard.c, the bearer token, the
 * protocol version, Accept, Content-Type, the body caps), collects bodies
 * within the upload memory cap (http_conn.c) and dispatches. */
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
#include "server/mcp/jsonrpc.h"
#include "server/transport/http_int.h"
#include "base/log.h"
#include "server/transport/transport.h"
#include "base/version.h"
#include "server/transport/web.h"

/* --- small helpers -------------------------------------------------------------- */

time_t transport_mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

const char *transport_header(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

void transport_cors(struct MHD_Response *r, struct MHD_Connection *c)
{
	const char *origin = transport_header(c, "Origin");

	if (!origin)
		return;
	MHD_add_response_header(r, "Access-Control-Allow-Origin", origin);
	MHD_add_response_header(r, "Access-Control-Expose-Headers", "Mcp-Session-Id");
	MHD_add_response_header(r, "Vary", "Origin");
}

/* Queues a response with body (copied) and content type; extra headers as
 * name, value pairs ending with NULL. */
enum MHD_Result transport_reply(struct MHD_Connection *c, unsigned status, const char *type,
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
		transport_cors(r, c);
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

/* Sends text (taken; NULL when it could not be built: "{}") as the JSON
 * of a status reply, with one extra header when extra_name is not NULL. */
static enum MHD_Result reply_json_text(struct MHD_Connection *c, unsigned status, char *text,
				       const char *extra_name, const char *extra_value)
{
	enum MHD_Result ret =
		transport_reply(c, status, "application/json", text ? text : "{}",
				text ? strlen(text) : 2, extra_name, extra_value, NULL);
	free(text);
	return ret;
}

/* A JSON-RPC error body (id null) for transport-level failures on /mcp. */
enum MHD_Result transport_rpc_error(struct MHD_Connection *c, unsigned status, int code,
				    const char *extra_name, const char *extra_value,
				    const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	size_t len;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return reply_json_text(c, status, jsonrpc_error(NULL, code, msg, NULL, &len), extra_name,
			       extra_value);
}

/* A REST-style error body {"summary", "error": {code, message}}. */
enum MHD_Result transport_rest_error(struct MHD_Connection *c, unsigned status, const char *code,
				     const char *extra_name, const char *extra_value,
				     const char *fmt, ...)
{
	char msg[400];
	va_list ap;
	json_t *body;
	char *text;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	body = mcp_error_answer(code, msg);
	text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	return reply_json_text(c, status, text, extra_name, extra_value);
}

/* --- checks -------------------------------------------------------------------- */

/* 1 when the Accept header allows type ("application/json"); wildcards
 * count. */
int transport_accepts(const char *accept, const char *type)
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

/* 503 for a body that does not fit in the upload memory cap. */
static enum MHD_Result uploads_busy(struct hsrv *srv, struct MHD_Connection *conn, int is_mcp)
{
	size_t held = atomic_load(&srv->uploads);

	log_info("http", "503 to %s: request bodies hold %zu of %zu bytes (--max-upload-total)",
		 http_conn_client(conn), held, srv->upload_max);
	if (is_mcp)
		return transport_rpc_error(conn, 503, -32000, "Retry-After", "1",
					   "Server busy: request bodies being received hold %zu of "
					   "%zu bytes (--max-upload-total); retry later",
					   held, srv->upload_max);
	return transport_rest_error(conn, 503, "busy", "Retry-After", "1",
				    "busy: request bodies being received hold %zu of %zu bytes "
				    "(--max-upload-total); retry later",
				    held, srv->upload_max);
}

/* The body's declared size against the per-request cap (413) and the
 * upload memory cap (503, reserved here so the body is never read). */
static enum MHD_Result check_length(struct hsrv *srv, struct MHD_Connection *conn, int is_mcp,
				    struct hreq *rq)
{
	const char *v = transport_header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
	unsigned long long n;
	char *end;

	if (!v)
		return MHD_YES;
	n = strtoull(v, &end, 10);
	if (*end != '\0' || n == 0)
		return MHD_YES; /* MHD refuses a malformed length itself */
	rq->kind = RQ_ANSWERED;
	if (n > srv->max_body) {
		if (is_mcp)
			return transport_rpc_error(conn, 413, -32600, NULL, NULL,
						   "Request body too large: %llu bytes, the cap is "
						   "%zu bytes (--max-message-bytes)",
						   n, srv->max_body);
		return transport_rest_error(
			conn, 413, "too_big", NULL, NULL,
			"request body too large: %llu bytes, the cap is %zu bytes", n,
			srv->max_body);
	}
	if (http_upload_reserve(srv, rq, (size_t)n))
		return uploads_busy(srv, conn, is_mcp);
	rq->kind = RQ_NEW;
	return MHD_YES;
}

/* The checks that need no body, answered before reading it. Returns
 * MHD_YES with rq->kind RQ_NEW to go on, or what queuing the refusal
 * returned (rq->kind RQ_ANSWERED). */
static enum MHD_Result check_request(struct hsrv *srv, struct MHD_Connection *conn, const char *url,
				     const char *method, struct hreq *rq)
{
	int is_mcp = !strcmp(url, "/mcp"), is_post = !strcmp(method, "POST");
	int is_rest = !strncmp(url, "/v1/", 4);
	const char *ctype = transport_header(conn, MHD_HTTP_HEADER_CONTENT_TYPE);
	const char *v;
	struct kf_err err = {0};

	rq->kind = RQ_ANSWERED;
	if (http_guard_check(&srv->guard, transport_header(conn, MHD_HTTP_HEADER_HOST),
			     transport_header(conn, "Origin"), &err)) {
		log_info("http", "403 %s %.100s from %s: %s", method, url, http_conn_client(conn),
			 err.msg);
		return transport_rest_error(conn, 403, "refused", NULL, NULL, "%s", err.msg);
	}
	if (!http_auth_identify(srv, conn, rq) && strcmp(url, "/") != 0 &&
	    strcmp(url, "/v1/health") != 0 && strcmp(method, "OPTIONS") != 0)
		return transport_rest_error(
			conn, 401, "unauthorized", MHD_HTTP_HEADER_WWW_AUTHENTICATE,
			"Bearer realm=\"kforge\"",
			"Unauthorized: send 'Authorization: Bearer <token>' with a token of the "
			"server's --token-env variable or --token-file");
	/* 2026-07-28 has no session stream and no session to delete. */
	if (is_mcp && !is_post && strcmp(method, "OPTIONS") != 0 &&
	    mcp_is_modern_version(transport_header(conn, "MCP-Protocol-Version")))
		return transport_rpc_error(conn, 405, -32000, "Allow", "POST",
					   "Method Not Allowed: protocol %s has no GET stream or "
					   "sessions; POST each request",
					   MCP_MODERN_VERSIONS[0]);
	/* A POST's version is checked with its body (http_mcp.c): a
	 * stateless revision's error carries the request id. */
	if (is_mcp && !is_post && (v = transport_header(conn, "MCP-Protocol-Version")) &&
	    !version_ok(v))
		return transport_rpc_error(conn, 400, -32000, NULL, NULL,
					   "Bad Request: unsupported MCP-Protocol-Version '%.40s' "
					   "(supported: %s, %s, %s)",
					   v, MCP_VERSIONS[0], MCP_VERSIONS[1], MCP_VERSIONS[2]);
	if (is_mcp && is_post &&
	    (!transport_accepts(v = transport_header(conn, MHD_HTTP_HEADER_ACCEPT),
				"application/json") ||
	     !transport_accepts(v, "text/event-stream")))
		return transport_rpc_error(conn, 406, -32000, NULL, NULL,
					   "Not Acceptable: Accept must include both "
					   "application/json and text/event-stream");
	/* A browser sends text/plain and form types cross-origin without a
	 * preflight; application/json always needs one. */
	if (is_post && is_mcp && !http_guard_json_type(ctype))
		return transport_rpc_error(
			conn, 415, -32000, NULL, NULL,
			"Unsupported Media Type: Content-Type must be application/json");
	if (is_post && is_rest && !http_guard_json_type(ctype))
		return transport_rest_error(conn, 415, "unsupported_media_type", NULL, NULL,
					    "POST %.100s needs Content-Type: application/json, "
					    "not '%.60s'",
					    url, ctype ? ctype : "(none)");
	rq->kind = RQ_NEW;
	return check_length(srv, conn, is_mcp, rq);
}

/* --- dispatch --------------------------------------------------------------------- */

/* Body bytes: collected up to the per-request cap and within the upload
 * memory cap; past either the body is dropped and only counted, and the
 * request is answered 413 or 503 once it has arrived. */
static enum MHD_Result take_body(struct hsrv *srv, struct hreq *rq, const char *data, size_t n)
{
	size_t need = rq->len + n, cap;
	char *nb;

	if (rq->too_big || rq->too_busy)
		return MHD_YES;
	if (need > srv->max_body) {
		rq->too_big = 1;
		http_upload_release(srv, rq);
		return MHD_YES;
	}
	if (need > rq->cap) {
		cap = rq->cap ? rq->cap * 2 : (rq->reserved ? rq->reserved : 1024);
		while (cap < need)
			cap *= 2;
		if (cap > srv->max_body)
			cap = srv->max_body;
		if (cap > rq->reserved && http_upload_reserve(srv, rq, cap - rq->reserved)) {
			rq->too_busy = 1;
			http_upload_release(srv, rq);
			return MHD_YES;
		}
		nb = realloc(rq->body, cap);
		if (!nb)
			return MHD_NO;
		rq->body = nb;
		rq->cap = cap;
	}
	memcpy(rq->body + rq->len, data, n);
	rq->len = need;
	return MHD_YES;
}

static enum MHD_Result serve_page(struct MHD_Connection *conn, const char *method)
{
	size_t len;
	const char *page = web_index_html(&len);
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return transport_rest_error(conn, 405, "method_not_allowed", "Allow", "GET",
					    "%s /: the page takes GET only", method);
	r = MHD_create_response_from_buffer(len, (void *)page, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/html; charset=utf-8");
	transport_cors(r, conn);
	MHD_add_response_header(r, "Content-Security-Policy",
				"default-src 'self'; style-src 'self' 'unsafe-inline'; "
				"script-src 'self' 'unsafe-inline'");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* The request with its whole body: routed to /mcp, /v1 or the page. */
static enum MHD_Result route(struct hsrv *srv, struct MHD_Connection *conn, const char *url,
			     const char *method, struct hreq *rq)
{
	int is_mcp = !strcmp(url, "/mcp");
	enum MHD_Result ret;

	rq->kind = RQ_ANSWERED;
	if (rq->too_busy)
		return uploads_busy(srv, conn, is_mcp);
	if (!strcmp(method, "OPTIONS"))
		return transport_reply(conn, 204, NULL, "", 0, "Access-Control-Allow-Methods",
				       "GET, POST, DELETE, OPTIONS", "Access-Control-Allow-Headers",
				       "Content-Type, Accept, Authorization, Mcp-Session-Id, "
				       "MCP-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name",
				       "Access-Control-Expose-Headers", "Mcp-Session-Id", NULL);
	if (is_mcp) {
		if (!strcmp(method, "POST")) {
			rq->kind = RQ_MCP_POST;
			return http_mcp_post(srv, conn, rq);
		}
		if (!strcmp(method, "GET")) {
			rq->kind = RQ_MCP_GET;
			return http_mcp_get(srv, conn, rq);
		}
		if (!strcmp(method, "DELETE"))
			return http_mcp_delete(srv, conn, rq);
		return transport_rpc_error(conn, 405, -32000, "Allow", "GET, POST, DELETE",
					   "Method Not Allowed: /mcp takes POST, GET and DELETE");
	}
	if (http_stream_serve(srv, conn, url, method, rq, &ret))
		return ret;
	if (!strncmp(url, "/v1/", 4) || !strcmp(url, "/v1")) {
		rq->kind = RQ_REST;
		return http_rest_start(srv, conn, url, method, rq);
	}
	if (!strcmp(url, "/") || !strcmp(url, "/index.html"))
		return serve_page(conn, method);
	return transport_rest_error(conn, 404, "not_found", NULL, NULL,
				    "no such path '%s': MCP is at /mcp, the REST API under /v1 "
				    "(GET /v1/openapi.json), the page at /",
				    url);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_len, void **con_cls)
{
	struct hsrv *srv = cls;
	struct hreq *rq = *con_cls;
	enum MHD_Result ret;

	(void)version;
	if (!rq) {
		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*con_cls = rq;
		rq->hc = http_conn_of(conn);
		return check_request(srv, conn, url, method, rq);
	}
	if (*upload_len) {
		if (http_conn_late(srv, rq->hc))
			return MHD_NO; /* past its deadline: close now */
		ret = take_body(srv, rq, upload, *upload_len);
		*upload_len = 0;
		return ret;
	}
	switch (rq->kind) {
	case RQ_MCP_POST: return http_mcp_resumed(rq);
	case RQ_REST: return http_rest_resumed(rq);
	case RQ_ANSWERED:
	case RQ_MCP_GET: return MHD_YES;
	case RQ_NEW: break;
	}
	http_conn_reading(srv, rq->hc, 0);
	ret = route(srv, conn, url, method, rq);
	http_upload_release(srv, rq); /* the handlers copied what they keep */
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct hsrv *srv = cls;
	struct hreq *rq = *con_cls;

	(void)conn;
	if (!rq)
		return;
	if (rq->call)
		http_mcp_completed(rq->call, toe == MHD_REQUEST_TERMINATED_COMPLETED_OK);
	if (rq->job)
		http_rest_release(rq->job);
	http_conn_reading(srv, rq->hc, 1); /* the next request's deadline */
	http_upload_release(srv, rq);
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

/* MHD's messages end with a newline (the log adds its own). Those about a
 * client that went away or misbehaved are routine on a server: debug. A
 * refused connection is worth a warning, but a flood of them is one
 * warning per HTTP_LIMIT_LOG_S. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	static const char *const CLIENT[] = {
		"remote side",	     "disconnect",	   "reset by peer",    "Failed to send",
		"Failed to receive", "timed out",	   "incomplete",       "too large",
		"too big",	     "connection closure", "socket is closed", NULL};
	static atomic_llong last_limit_log;
	struct hsrv *srv = cls;
	char msg[512];
	size_t n;
	int level = LOG_WARN;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r' || msg[n - 1] == ' '))
		msg[--n] = '\0';
	if (!n)
		return;
	for (int i = 0; CLIENT[i]; i++)
		if (strcasestr(msg, CLIENT[i]))
			level = LOG_DEBUG;
	if (strcasestr(msg, "connection limit")) {
		long long now = (long long)transport_mono_s(), prev = atomic_load(&last_limit_log);
		if (now - prev < HTTP_LIMIT_LOG_S ||
		    !atomic_compare_exchange_strong(&last_limit_log, &prev, now))
			return;
		log_warn("http",
			 "%s (limits: %u connections per client address, --max-conns-per-ip; "
			 "%u in all; said once per %d s)",
			 msg, srv->per_ip, srv->conn_limit, HTTP_LIMIT_LOG_S);
		return;
	}
	log_write(level, "http", "%s", msg);
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

static int is_wildcard_addr(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)ss)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr);
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

/* --- the daemon ------------------------------------------------------------------ */

static unsigned pick(unsigned opt, const char *env, unsigned def)
{
	return opt ? opt : env_unsigned(env, def);
}

/* The limits, the token and the Host/Origin policy from opt. */
static int srv_configure(struct hsrv *srv, const struct http_options *opt,
			 const struct sockaddr_storage *ss, struct kf_err *err)
{
	srv->max_body = opt->max_body_bytes ? opt->max_body_bytes : HTTP_DEFAULT_BODY;
	srv->upload_max = opt->max_upload_total ? opt->max_upload_total : HTTP_DEFAULT_UPLOADS;
	if (srv->upload_max < srv->max_body)
		srv->upload_max = srv->max_body; /* one full-size body always fits */
	srv->idle_s = opt->session_idle_s ? opt->session_idle_s : HTTP_DEFAULT_IDLE_S;
	srv->max_sessions =
		pick(opt->max_sessions, "KFORGE_HTTP_MAX_SESSIONS", HTTP_DEFAULT_SESSIONS);
	srv->max_inflight =
		pick(opt->max_inflight, "KFORGE_HTTP_MAX_INFLIGHT", HTTP_DEFAULT_INFLIGHT);
	srv->per_client = pick(opt->max_sessions_per_client, "KFORGE_HTTP_SESSIONS_PER_CLIENT",
			       HTTP_DEFAULT_PER_CLIENT);
	srv->per_ip = pick(opt->max_conns_per_ip, "KFORGE_HTTP_CONNS_PER_IP", HTTP_DEFAULT_PER_IP);
	srv->request_s = opt->request_timeout_s ? opt->request_timeout_s : HTTP_DEFAULT_REQUEST_S;
	srv->started = transport_mono_s();
	srv->per_client_inflight = pick(opt->max_inflight_per_client,
					"KFORGE_HTTP_INFLIGHT_PER_CLIENT", HTTP_CLIENT_INFLIGHT);
	int rc = http_auth_load(srv, opt->token_env, opt->token_file, err);
	if (rc)
		return rc;
	if (!is_loopback_addr(ss) && !srv->ntokens)
		return kf_err_set(err, KF_EPERM,
				  "refusing to serve on %s without a token: binding beyond "
				  "loopback needs --token-env VAR or --token-file FILE "
				  "(Authorization: Bearer <token>)",
				  opt->addr);
	if (ss->ss_family == AF_INET6)
		snprintf(srv->bind_host, sizeof(srv->bind_host), "[%s]", opt->addr);
	else
		snprintf(srv->bind_host, sizeof(srv->bind_host), "%s",
			 opt->addr ? opt->addr : "127.0.0.1");
	/* Beyond loopback clients use whatever name the host has (gpu-box:7070)
	 * and the token guards every request; the Host check is for loopback,
	 * where DNS rebinding is the threat. */
	srv->guard.any_host = !is_loopback_addr(ss);
	srv->guard.bind_host = is_wildcard_addr(ss) ? NULL : srv->bind_host;
	srv->guard.hosts = opt->allowed_hosts;
	srv->guard.origins = opt->allowed_origins;
	return 0;
}

static unsigned thread_count(const struct http_options *opt)
{
	unsigned threads = opt->threads ? opt->threads : env_unsigned("KFORGE_HTTP_THREADS", 0);

	if (!threads) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		threads = n > 0 ? (unsigned)n : 1;
	}
	return threads > 64 ? 64 : threads;
}

/* Starts libmicrohttpd on ss; writes the listen text and the port file. */
static int srv_start(struct hsrv *srv, const struct http_options *opt,
		     const struct sockaddr_storage *ss, struct kf_err *err)
{
	struct rlimit rl;
	const union MHD_DaemonInfo *di;
	int port;

	srv->conn_limit = 4096;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < srv->conn_limit + 128)
		srv->conn_limit = rl.rlim_cur > 256 ? (unsigned)rl.rlim_cur - 128 : 128;
	srv->d = MHD_start_daemon(
		MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
			MHD_USE_TURBO | (ss->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
		(uint16_t)opt->port, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER,
		mhd_log, srv, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)ss,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_NOTIFY_CONNECTION,
		http_conn_notify, srv, MHD_OPTION_THREAD_POOL_SIZE, thread_count(opt),
		MHD_OPTION_CONNECTION_LIMIT, srv->conn_limit, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		srv->per_ip, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_CONN_IDLE_S,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16 * 1024, MHD_OPTION_END);
	if (!srv->d)
		return kf_err_set(err, KF_EIO, "cannot listen on %s port %d: %s", srv->bind_host,
				  opt->port,
				  errno ? strerror(errno) : "libmicrohttpd refused to start");
	di = MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_BIND_PORT);
	port = di ? di->port : opt->port;
	pthread_mutex_lock(&srv->lock); /* /v1/health may already read it */
	snprintf(srv->listen, sizeof(srv->listen), "http://%s:%d", srv->bind_host, port);
	pthread_mutex_unlock(&srv->lock);
	if (opt->port_file)
		return write_port_file(opt->port_file, port, err);
	return 0;
}

/* Until SIGINT/SIGTERM: housekeeping once a second. */
static void srv_loop(struct hsrv *srv)
{
	log_info("http",
		 "listening on %s/mcp (REST %s/v1, page %s/)%s; limits: %u connections per "
		 "address, %u s per request, %zu bytes of uploads, %u sessions (%u per client)",
		 srv->listen, srv->listen, srv->listen,
		 srv->ntokens ? "; bearer token required" : "", srv->per_ip, srv->request_s,
		 srv->upload_max, srv->max_sessions, srv->per_client);
	if (srv->ntokens)
		log_info("http",
			 "%zu tokens; each token is one client: %u sessions, %u requests in "
			 "flight",
			 srv->ntokens, srv->per_client, srv->per_client_inflight);
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
		http_conn_sweep(srv);
	}
}

/* Ends every session first: their calls get final answers and their GET
 * streams finish, so no connection is left suspended. REST tool calls
 * cannot be cancelled from here; their threads use the app and the
 * connection, so they are waited for before MHD stops. */
static void srv_stop(struct hsrv *srv)
{
	atomic_store(&srv->stopping, 1);
	http_mcp_close_all(srv);
	mcp_tasks_shutdown(); /* their calls use the app, which closes next */
	for (int i = 1; atomic_load(&srv->rest_running); i++) {
		if (i % 100 == 0)
			log_info("http", "waiting for %u REST tool calls to finish",
				 atomic_load(&srv->rest_running));
		usleep(50 * 1000);
	}
	MHD_stop_daemon(srv->d);
}

int transport_http_run(struct app *app, const struct http_options *opt, struct kf_err *err)
{
	struct hsrv *srv;
	struct sockaddr_storage ss;
	struct sigaction sa, old_int, old_term;
	int rc;

	if (opt->port < 0 || opt->port > 65535)
		return kf_err_set(err, KF_EINVAL, "--http: port %d is not 0-65535", opt->port);
	rc = parse_addr(opt->addr, opt->port, &ss, err);
	if (rc)
		return rc;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	srv->app = app;
	srv->streams = opt->streams;
	srv->streams_len = opt->streams_len;
	pthread_mutex_init(&srv->lock, NULL);
	pthread_mutex_init(&srv->conn_lock, NULL);
	rc = srv_configure(srv, opt, &ss, err);
	if (rc)
		goto out;
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
	rc = srv_start(srv, opt, &ss, err);
	if (!rc)
		srv_loop(srv);
	if (srv->d)
		srv_stop(srv);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	close(stop_pipe[0]);
	close(stop_pipe[1]);
	stop_pipe[0] = stop_pipe[1] = -1;
out:
	explicit_bzero(srv->tokens, sizeof(srv->tokens));
	pthread_mutex_destroy(&srv->conn_lock);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
	return rc;
}
