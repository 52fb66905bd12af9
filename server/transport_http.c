/* transport_http: MCP Streamable HTTP (revision 2025-11-25; 2025-06-18 and
 * 2025-03-26 accepted) at /mcp, REST under /v1 (rest.c) and the web page at
 * /, on libmicrohttpd with epoll and a thread pool.
 *
 * Each POSTed message goes to its session (mcp.h) with a struct hcall as the
 * call pointer. The answer's form is decided by the first message sent for
 * that call: a final response first -> one JSON body; a notification
 * (progress, log) or a server request (sampling, elicitation) first -> an SSE
 * stream that carries them and ends with the response. Until then the
 * connection is suspended, so a tool call on a worker thread holds no HTTP
 * thread. Locks: srv.lock (session table) before sess.lock (everything in
 * one session: its calls, its GET stream, its backlog). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "app.h"
#include "log.h"
#include "mcp.h"
#include "rest.h"
#include "transport.h"
#include "version.h"
#include "web.h"

#define HTTP_SID_BYTES 16                  /* random bytes in a session id */
#define HTTP_SID_LEN (HTTP_SID_BYTES * 2)  /* hex characters */
#define HTTP_BUCKETS 4096                  /* session hash buckets */
#define HTTP_DEFAULT_BODY (8u << 20)       /* bytes */
#define HTTP_DEFAULT_IDLE_S 1800
#define HTTP_DEFAULT_SESSIONS 1024
#define HTTP_DEFAULT_INFLIGHT 1024
#define HTTP_REST_MAX 64                   /* REST tool calls at once */
#define HTTP_BACKLOG_MAX 256               /* unrouted messages kept per session */
#define HTTP_KEEPALIVE_S 15                /* SSE comment on idle GET streams */
#define HTTP_SSE_RETRY_MS 1000
#define HTTP_TOKEN_MAX 512

/* --- types --------------------------------------------------------------------- */

struct hmsg {
	struct hmsg *next;
	size_t len; /* bytes in data */
	char data[];
};

enum call_mode { MODE_UNDECIDED = 0, MODE_JSON, MODE_SSE };

/* One POST request waiting for its answer, or the session's GET stream.
 * Refcounted: the connection holds one reference until MHD completes the
 * request, the session one until the final message (or, for the GET
 * stream, until the stream is detached). */
struct hcall {
	struct hsess *sess;
	struct MHD_Connection *conn;
	int refs;      /* under sess->lock */
	int get;       /* 1: the session's GET stream */
	int init;      /* 1: the initialize request of a new session */
	int final;     /* the final message arrived */
	int suspended; /* the connection is suspended waiting for us */
	int gone;      /* the connection was completed or closed */
	enum call_mode mode;
	char *json;    /* MODE_JSON: the final message (owned) */
	size_t json_len;
	struct hmsg *head, *tail; /* MODE_SSE: events not yet written */
	size_t off;               /* bytes of head already written */
	int counted;   /* holds one of srv->inflight */
	int primed;    /* MODE_SSE: the priming event was queued */
};

struct hsess {
	char id[HTTP_SID_LEN + 1];
	struct hsrv *srv;
	struct mcp_session *ms;
	pthread_mutex_t lock;
	pthread_cond_t cond;  /* users reaching 0 */
	atomic_int refs;      /* table + each hcall + each handler using it */
	int in_table;         /* under srv->lock */
	int ended;            /* under lock: DELETEd, expired or shut down */
	int users;            /* handlers inside mcp_session_handle */
	unsigned calls;       /* requests waiting for their final message */
	time_t last_used;     /* monotonic seconds */
	time_t last_ping;     /* monotonic seconds of the last keepalive */
	struct hcall *get;    /* the open GET stream, or NULL */
	struct hmsg *bl_head, *bl_tail; /* messages for no request, no stream */
	size_t bl_len;
	unsigned long long next_event; /* SSE event ids */
	struct hsess *next;   /* hash chain */
};

struct hsrv {
	struct app *app;
	struct MHD_Daemon *d;
	size_t max_body;
	unsigned idle_s, max_sessions, max_inflight;
	char token[HTTP_TOKEN_MAX];
	size_t token_len;       /* 0: no auth */
	int any_host;           /* bound to a wildcard address: Host not checked */
	char bind_host[64];     /* the bound address as a Host value */
	const char *const *origins;
	char listen[128];       /* "http://127.0.0.1:7070" */
	time_t started;
	pthread_mutex_t lock;   /* table, nsess */
	struct hsess *buckets[HTTP_BUCKETS];
	size_t nsess;
	atomic_uint inflight;   /* MCP requests waiting for their answer */
	atomic_uint rest_running;
	atomic_int stopping;
};

enum req_kind { RQ_NEW = 0, RQ_MCP_POST, RQ_MCP_GET, RQ_REST, RQ_ANSWERED };

struct rest_job;

/* Per-request state: MHD's con_cls. */
struct hreq {
	enum req_kind kind;
	char *body;
	size_t len, cap;
	int too_big;
	struct hcall *call;
	struct rest_job *job;
};

struct rest_job {
	struct hsrv *srv;
	struct MHD_Connection *conn;
	pthread_mutex_t lock;
	int refs;       /* connection + worker thread */
	int done, suspended;
	struct rest_plan plan;
	int status;
	char *text;     /* the answer (owned) */
	size_t text_len;
	const char *allow;
};

/* --- small helpers -------------------------------------------------------------- */

static time_t mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static const char *header(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* Queues a response with body (copied) and content type; extra headers as
 * name, value pairs ending with NULL. */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
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
static enum MHD_Result rpc_error(struct MHD_Connection *c, unsigned status, int code,
				 const char *extra_name, const char *extra_value,
				 const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static enum MHD_Result rpc_error(struct MHD_Connection *c, unsigned status, int code,
				 const char *extra_name, const char *extra_value,
				 const char *fmt, ...)
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
	ret = reply(c, status, "application/json", text ? text : "{}", text ? strlen(text) : 2,
		    extra_name, extra_value, NULL);
	free(text);
	return ret;
}

/* A REST-style error body {"summary", "error": {code, message}}. */
static enum MHD_Result rest_error(struct MHD_Connection *c, unsigned status, const char *code,
				  const char *extra_name, const char *extra_value,
				  const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static enum MHD_Result rest_error(struct MHD_Connection *c, unsigned status, const char *code,
				  const char *extra_name, const char *extra_value,
				  const char *fmt, ...)
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
	ret = reply(c, status, "application/json", text ? text : "{}", text ? strlen(text) : 2,
		    extra_name, extra_value, NULL);
	free(text);
	return ret;
}

static struct hmsg *hmsg_new(const char *a, size_t alen, const char *b, size_t blen,
			     const char *c, size_t clen)
{
	struct hmsg *m = malloc(sizeof(*m) + alen + blen + clen);
	if (!m)
		return NULL;
	m->next = NULL;
	memcpy(m->data, a, alen);
	if (blen)
		memcpy(m->data + alen, b, blen);
	if (clen)
		memcpy(m->data + alen + blen, c, clen);
	m->len = alen + blen + clen;
	return m;
}

static void hmsg_free_all(struct hmsg *m)
{
	while (m) {
		struct hmsg *n = m->next;
		free(m);
		m = n;
	}
}

/* Appends an SSE "message" event carrying json to c. Under sess->lock. */
static void sse_push(struct hsess *s, struct hcall *c, const char *json, size_t len)
{
	char head[64];
	int hl = snprintf(head, sizeof(head), "event: message\nid: %llu\ndata: ",
			  ++s->next_event);
	struct hmsg *m = hmsg_new(head, (size_t)hl, json, len, "\n\n", 2);

	if (!m)
		return; /* out of memory: the event is lost, the stream goes on */
	if (c->tail)
		c->tail->next = m;
	else
		c->head = m;
	c->tail = m;
}

/* Appends raw SSE text (a priming event or a comment). Under sess->lock. */
static void sse_raw(struct hcall *c, const char *text, size_t len)
{
	struct hmsg *m = hmsg_new(text, len, NULL, 0, NULL, 0);
	if (!m)
		return;
	if (c->tail)
		c->tail->next = m;
	else
		c->head = m;
	c->tail = m;
}

/* The priming event of SEP-1699 (an id and empty data, with a retry hint),
 * for sessions on revision 2025-11-25, whose clients expect it. */
static void sse_prime(struct hsess *s, struct hcall *c)
{
	const char *v = s->ms ? mcp_session_version(s->ms) : NULL;
	char buf[96];
	int n;

	if (!v || strcmp(v, "2025-11-25") < 0)
		return;
	n = snprintf(buf, sizeof(buf), "id: %llu\nretry: %d\ndata: \n\n", ++s->next_event,
		     HTTP_SSE_RETRY_MS);
	sse_raw(c, buf, (size_t)n);
}

static void wake(struct hcall *c)
{
	if (c->suspended) {
		c->suspended = 0;
		MHD_resume_connection(c->conn);
	}
}

/* --- sessions ------------------------------------------------------------------ */

static unsigned bucket_of(const char *id)
{
	unsigned h = 2166136261u;
	for (int i = 0; i < HTTP_SID_LEN && id[i]; i++)
		h = (h ^ (unsigned char)id[i]) * 16777619u;
	return h % HTTP_BUCKETS;
}

static void sess_unref(struct hsess *s)
{
	if (atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	hmsg_free_all(s->bl_head);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

/* Drops one reference of c; frees it at zero. Under c->sess->lock; the
 * caller unrefs the session after unlocking when this returns 1. */
static int call_unref_locked(struct hcall *c)
{
	if (--c->refs > 0)
		return 0;
	if (c->counted)
		atomic_fetch_sub(&c->sess->srv->inflight, 1);
	free(c->json);
	hmsg_free_all(c->head);
	free(c);
	return 1;
}

/* The session's send callback: routes a message to its request's
 * connection, or to the GET stream for messages tied to no request. */
static void on_send(void *arg, void *callp, int final, const char *json, size_t len)
{
	struct hsess *s = arg;
	struct hcall *c = callp;
	struct MHD_Connection *resume = NULL;
	char *copy = NULL;
	int freed = 0;

	/* Work that needs no lock is done outside it: the copy of a final
	 * answer, and the resume (a syscall) after unlocking, so handlers of
	 * other requests on this session do not wait behind it. */
	if (c && final) {
		copy = malloc(len + 1);
		if (copy) {
			memcpy(copy, json, len);
			copy[len] = '\0';
		}
	}
	pthread_mutex_lock(&s->lock);
	if (!c) {
		if (s->get && !s->get->gone) {
			sse_push(s, s->get, json, len);
			if (s->get->suspended) {
				s->get->suspended = 0;
				resume = s->get->conn;
			}
		} else {
			/* Kept for the next GET stream, oldest dropped past the cap. */
			struct hmsg *m = hmsg_new(json, len, NULL, 0, NULL, 0);
			if (m) {
				if (s->bl_tail)
					s->bl_tail->next = m;
				else
					s->bl_head = m;
				s->bl_tail = m;
				if (++s->bl_len > HTTP_BACKLOG_MAX) {
					struct hmsg *o = s->bl_head;
					s->bl_head = o->next;
					free(o);
					s->bl_len--;
				}
			}
		}
		pthread_mutex_unlock(&s->lock);
		if (resume)
			MHD_resume_connection(resume);
		return;
	}
	if (!c->gone) {
		if (c->mode == MODE_UNDECIDED)
			c->mode = final ? MODE_JSON : MODE_SSE;
		if (c->mode == MODE_JSON) {
			if (final) {
				c->json = copy;
				c->json_len = len;
				copy = NULL;
			}
		} else {
			if (!c->primed) {
				c->primed = 1;
				sse_prime(s, c);
			}
			sse_push(s, c, json, len);
		}
		if (c->suspended) {
			/* A suspended connection is never closed by MHD, so conn
			 * stays valid until we resume it. */
			c->suspended = 0;
			resume = c->conn;
		}
	}
	if (final) {
		c->final = 1;
		s->calls--;
		s->last_used = mono_s();
		freed = call_unref_locked(c);
	}
	pthread_mutex_unlock(&s->lock);
	if (resume)
		MHD_resume_connection(resume);
	free(copy);
	if (freed)
		sess_unref(s);
}

static int random_id(char *out)
{
	unsigned char b[HTTP_SID_BYTES];
	static const char hex[] = "0123456789abcdef";
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(b); i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[HTTP_SID_LEN] = '\0';
	return 0;
}

/* Returns a new session in the table with one reference for the caller,
 * NULL with *status set (503 full, 500 failure). */
static struct hsess *sess_create(struct hsrv *srv, unsigned *status)
{
	struct hsess *s = calloc(1, sizeof(*s));
	unsigned b;

	*status = 500;
	if (!s)
		return NULL;
	if (random_id(s->id)) {
		log_error("http", "getrandom failed: %s", strerror(errno));
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->srv = srv;
	atomic_init(&s->refs, 2); /* the table and the caller */
	s->last_used = s->last_ping = mono_s();
	s->ms = mcp_session_new(srv->app, on_send, s);
	if (!s->ms) {
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->cond);
		free(s);
		return NULL;
	}
	pthread_mutex_lock(&srv->lock);
	if (srv->nsess >= srv->max_sessions) {
		pthread_mutex_unlock(&srv->lock);
		mcp_session_free(s->ms);
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->cond);
		free(s);
		*status = 503;
		return NULL;
	}
	b = bucket_of(s->id);
	s->next = srv->buckets[b];
	srv->buckets[b] = s;
	s->in_table = 1;
	srv->nsess++;
	pthread_mutex_unlock(&srv->lock);
	return s;
}

/* Returns the live session with this id with a reference, or NULL. */
static struct hsess *sess_find(struct hsrv *srv, const char *id)
{
	struct hsess *s;

	if (strlen(id) != HTTP_SID_LEN)
		return NULL;
	pthread_mutex_lock(&srv->lock);
	for (s = srv->buckets[bucket_of(id)]; s; s = s->next)
		if (!memcmp(s->id, id, HTTP_SID_LEN))
			break;
	if (s)
		atomic_fetch_add(&s->refs, 1);
	pthread_mutex_unlock(&srv->lock);
	return s;
}

/* Ends a session: out of the table, every call cancelled (their final
 * messages still reach their connections), the GET stream finished. Safe
 * to call more than once and from any thread that holds no session lock. */
static void sess_close(struct hsrv *srv, struct hsess *s)
{
	struct mcp_session *ms;
	struct hsess **pp;

	pthread_mutex_lock(&srv->lock);
	if (!s->in_table) {
		pthread_mutex_unlock(&srv->lock);
		return;
	}
	for (pp = &srv->buckets[bucket_of(s->id)]; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	s->in_table = 0;
	srv->nsess--;
	pthread_mutex_unlock(&srv->lock);

	pthread_mutex_lock(&s->lock);
	s->ended = 1;
	while (s->users > 0)
		pthread_cond_wait(&s->cond, &s->lock);
	ms = s->ms;
	s->ms = NULL;
	pthread_mutex_unlock(&s->lock);
	mcp_session_free(ms); /* waits for workers; their sends take s->lock */
	pthread_mutex_lock(&s->lock);
	if (s->get)
		wake(s->get);
	pthread_mutex_unlock(&s->lock);
	sess_unref(s); /* the table's reference */
}

/* --- SSE content ---------------------------------------------------------------- */

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct hcall *c = cls;
	struct hsess *s = c->sess;
	size_t n = 0;

	(void)pos;
	pthread_mutex_lock(&s->lock);
	while (c->head && n < max) {
		size_t take = c->head->len - c->off;
		if (take > max - n)
			take = max - n;
		memcpy(buf + n, c->head->data + c->off, take);
		n += take;
		c->off += take;
		if (c->off == c->head->len) {
			struct hmsg *m = c->head;
			c->head = m->next;
			if (!c->head)
				c->tail = NULL;
			c->off = 0;
			free(m);
		}
	}
	if (n == 0) {
		if ((!c->get && c->final) || (c->get && (s->ended || s->get != c))) {
			pthread_mutex_unlock(&s->lock);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		/* Nothing to write yet: park the connection until on_send. */
		c->suspended = 1;
		MHD_suspend_connection(c->conn);
	}
	pthread_mutex_unlock(&s->lock);
	return (ssize_t)n;
}

static void sse_free(void *cls)
{
	(void)cls; /* the hcall is released by the request's completion */
}

static enum MHD_Result queue_sse(struct hcall *c, const char *sid)
{
	struct MHD_Response *r =
		MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, sse_read, c, sse_free);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	if (sid)
		MHD_add_response_header(r, "Mcp-Session-Id", sid);
	ret = MHD_queue_response(c->conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* --- checks -------------------------------------------------------------------- */

static int is_loopback_name(const char *h, size_t n)
{
	return (n == 9 && !strncasecmp(h, "localhost", 9)) ||
	       (n >= 4 && !strncmp(h, "127.", 4)) || (n == 5 && !strncmp(h, "[::1]", 5)) ||
	       (n == 3 && !strncmp(h, "::1", 3));
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
	return srv->bind_host[0] && !srv->any_host && strlen(srv->bind_host) == n &&
	       !strncasecmp(srv->bind_host, h, n);
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
static int accepts(const char *accept, const char *type)
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

/* --- /mcp ------------------------------------------------------------------------ */

/* Queues the answer for a POST whose first message (or final one) arrived.
 * Called with s->lock held; returns 1 when queued, 0 when still waiting. */
static int answer_ready(struct hcall *c, enum MHD_Result *ret)
{
	struct hsess *s = c->sess;
	const char *sid = c->init ? s->id : NULL;

	if (c->mode == MODE_SSE) {
		*ret = queue_sse(c, sid);
		return 1;
	}
	if (c->mode == MODE_JSON && c->final) {
		struct MHD_Response *r;
		if (!c->json) {
			*ret = MHD_NO;
			return 1;
		}
		r = MHD_create_response_from_buffer(c->json_len, c->json, MHD_RESPMEM_MUST_FREE);
		if (!r) {
			*ret = MHD_NO;
			return 1;
		}
		c->json = NULL;
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
		if (sid)
			MHD_add_response_header(r, "Mcp-Session-Id", sid);
		*ret = MHD_queue_response(c->conn, MHD_HTTP_OK, r);
		MHD_destroy_response(r);
		return 1;
	}
	return 0;
}

/* 1 when the JSON text of an initialize answer is a result (not an error). */
static int init_succeeded(const char *json, size_t len)
{
	json_t *j = json ? json_loadb(json, len, 0, NULL) : NULL;
	int ok = j && json_object_get(j, "result") != NULL;
	json_decref(j);
	return ok;
}

static enum MHD_Result mcp_post(struct hsrv *srv, struct MHD_Connection *conn, struct hreq *rq)
{
	const char *sid = header(conn, "Mcp-Session-Id");
	const char *ctype = header(conn, MHD_HTTP_HEADER_CONTENT_TYPE);
	struct hsess *s = NULL;
	struct hcall *c;
	enum mcp_in in;
	enum MHD_Result ret = MHD_NO;
	int init = 0;

	if (rq->too_big)
		return rpc_error(conn, 413, -32600, NULL, NULL,
				 "Request body too large: the cap is %zu bytes (--max-message-bytes)",
				 srv->max_body);
	if (!ctype || strncasecmp(ctype, "application/json", 16) != 0)
		return rpc_error(conn, 415, -32000, NULL, NULL,
				 "Unsupported Media Type: Content-Type must be application/json");
	if (rq->len == 0)
		return rpc_error(conn, 400, -32700, NULL, NULL, "Parse error: empty body");
	if (!sid) {
		/* Only initialize may come without a session. */
		json_error_t je;
		json_t *j = json_loadb(rq->body, rq->len, 0, &je);
		const char *method = json_string_value(json_object_get(j, "method"));
		int is_arr = json_is_array(j), ok = method && !strcmp(method, "initialize") &&
						     json_object_get(j, "id");
		json_decref(j);
		if (!j)
			return rpc_error(conn, 400, -32700, NULL, NULL,
					 "Parse error: %s (line %d, column %d)", je.text, je.line,
					 je.column);
		if (is_arr)
			return rpc_error(conn, 400, -32600, NULL, NULL,
					 "Invalid Request: batches (JSON arrays) are not supported; send one message per POST");
		if (!ok)
			return rpc_error(conn, 400, -32000, NULL, NULL,
					 "Bad Request: Mcp-Session-Id header is required (only an initialize request may come without one)");
		if (atomic_load(&srv->stopping))
			return rpc_error(conn, 503, -32000, "Retry-After", "5", "Server shutting down");
		unsigned st;
		s = sess_create(srv, &st);
		if (!s)
			return rpc_error(conn, st, -32000, "Retry-After", st == 503 ? "5" : NULL,
					 st == 503 ? "Server busy: too many sessions (max %u); retry later"
						   : "Internal error: could not create a session (max %u)",
					 srv->max_sessions);
		init = 1;
	} else {
		s = sess_find(srv, sid);
		if (!s)
			return rpc_error(conn, 404, -32001, NULL, NULL,
					 "Session not found: '%.40s' is unknown or has ended; initialize a new session",
					 sid);
	}
	if (atomic_load(&srv->inflight) >= srv->max_inflight) {
		ret = rpc_error(conn, 503, -32000, "Retry-After", "1",
				"Server busy: %u requests in flight; retry later", srv->max_inflight);
		if (init)
			sess_close(srv, s);
		sess_unref(s);
		return ret;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		if (init)
			sess_close(srv, s);
		sess_unref(s);
		return MHD_NO;
	}
	/* One lock for entering the session and counting the call. */
	pthread_mutex_lock(&s->lock);
	if (s->ended || !s->ms) {
		pthread_mutex_unlock(&s->lock);
		free(c);
		sess_unref(s);
		return rpc_error(conn, 404, -32001, NULL, NULL,
				 "Session not found: it has ended; initialize a new session");
	}
	s->users++;
	s->calls++;
	s->last_used = mono_s();
	pthread_mutex_unlock(&s->lock);
	c->sess = s; /* takes our session reference */
	c->conn = conn;
	c->refs = 2;
	c->init = init;
	c->counted = 1;
	atomic_fetch_add(&srv->inflight, 1);
	rq->call = c;

	in = mcp_session_handle(s->ms, rq->body, rq->len, c);

	pthread_mutex_lock(&s->lock);
	if (--s->users == 0 && s->ended)
		pthread_cond_broadcast(&s->cond);
	if (in == MCP_IN_NOTIFICATION || in == MCP_IN_RESPONSE) {
		int freed;
		s->calls--;
		freed = call_unref_locked(c); /* the session will send nothing */
		pthread_mutex_unlock(&s->lock);
		(void)freed; /* the connection's reference keeps c */
		rq->kind = RQ_ANSWERED;
		return reply(conn, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL);
	}
	if (in == MCP_IN_ERROR && c->final && c->mode == MODE_JSON && c->json) {
		/* Malformed message: the error is the whole answer, with 400. */
		char *j = c->json;
		size_t jl = c->json_len;
		c->json = NULL;
		pthread_mutex_unlock(&s->lock);
		ret = reply(conn, MHD_HTTP_BAD_REQUEST, "application/json", j, jl, NULL);
		free(j);
		rq->kind = RQ_ANSWERED;
		if (init)
			sess_close(srv, s);
		return ret;
	}
	if (init && c->final && c->mode == MODE_JSON && !init_succeeded(c->json, c->json_len)) {
		/* A refused initialize leaves no session behind. */
		c->init = 0;
		answer_ready(c, &ret);
		pthread_mutex_unlock(&s->lock);
		rq->kind = RQ_ANSWERED;
		sess_close(srv, s);
		return ret;
	}
	if (answer_ready(c, &ret)) {
		pthread_mutex_unlock(&s->lock);
		rq->kind = RQ_ANSWERED;
		return ret;
	}
	/* Not answered yet: park the connection until on_send wakes it. */
	c->suspended = 1;
	MHD_suspend_connection(conn);
	pthread_mutex_unlock(&s->lock);
	return MHD_YES;
}

/* Resumed after on_send: the answer (or its first message) is there. */
static enum MHD_Result mcp_post_resumed(struct hreq *rq)
{
	struct hcall *c = rq->call;
	struct hsess *s = c->sess;
	enum MHD_Result ret = MHD_YES;

	pthread_mutex_lock(&s->lock);
	if (answer_ready(c, &ret))
		rq->kind = RQ_ANSWERED;
	else {
		c->suspended = 1;
		MHD_suspend_connection(c->conn);
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static enum MHD_Result mcp_get(struct hsrv *srv, struct MHD_Connection *conn, struct hreq *rq)
{
	const char *sid = header(conn, "Mcp-Session-Id");
	struct hsess *s;
	struct hcall *c;
	enum MHD_Result ret;

	if (!accepts(header(conn, MHD_HTTP_HEADER_ACCEPT), "text/event-stream"))
		return rpc_error(conn, 406, -32000, NULL, NULL,
				 "Not Acceptable: GET /mcp opens an SSE stream; Accept must include text/event-stream");
	if (!sid)
		return rpc_error(conn, 400, -32000, NULL, NULL,
				 "Bad Request: Mcp-Session-Id header is required");
	s = sess_find(srv, sid);
	if (!s)
		return rpc_error(conn, 404, -32001, NULL, NULL,
				 "Session not found: '%.40s' is unknown or has ended", sid);
	c = calloc(1, sizeof(*c));
	if (!c) {
		sess_unref(s);
		return MHD_NO;
	}
	pthread_mutex_lock(&s->lock);
	if (s->ended) {
		pthread_mutex_unlock(&s->lock);
		free(c);
		sess_unref(s);
		return rpc_error(conn, 404, -32001, NULL, NULL, "Session not found: it has ended");
	}
	if (s->get) {
		pthread_mutex_unlock(&s->lock);
		free(c);
		sess_unref(s);
		return rpc_error(conn, 409, -32000, NULL, NULL,
				 "Conflict: this session already has a GET stream open");
	}
	c->sess = s;
	c->conn = conn;
	c->refs = 2; /* the connection and s->get */
	c->get = 1;
	c->mode = MODE_SSE;
	sse_prime(s, c);
	while (s->bl_head) {
		struct hmsg *m = s->bl_head;
		s->bl_head = m->next;
		sse_push(s, c, m->data, m->len);
		free(m);
	}
	s->bl_tail = NULL;
	s->bl_len = 0;
	s->get = c;
	s->last_ping = s->last_used = mono_s();
	rq->call = c;
	rq->kind = RQ_ANSWERED;
	ret = queue_sse(c, NULL);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static enum MHD_Result mcp_delete(struct hsrv *srv, struct MHD_Connection *conn)
{
	const char *sid = header(conn, "Mcp-Session-Id");
	struct hsess *s;

	if (!sid)
		return rpc_error(conn, 400, -32000, NULL, NULL,
				 "Bad Request: Mcp-Session-Id header is required");
	s = sess_find(srv, sid);
	if (!s)
		return rpc_error(conn, 404, -32001, NULL, NULL,
				 "Session not found: '%.40s' is unknown or has ended", sid);
	sess_close(srv, s);
	sess_unref(s);
	return reply(conn, MHD_HTTP_OK, NULL, "", 0, NULL);
}

/* --- REST ------------------------------------------------------------------------ */

static const char *query_value(void *arg, const char *name)
{
	return MHD_lookup_connection_value(arg, MHD_GET_ARGUMENT_KIND, name);
}

static void job_unref(struct rest_job *j)
{
	int last;
	pthread_mutex_lock(&j->lock);
	last = --j->refs == 0;
	pthread_mutex_unlock(&j->lock);
	if (!last)
		return;
	rest_plan_fini(&j->plan);
	free(j->text);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

static void rest_fill_info(struct hsrv *srv, struct rest_info *info)
{
	pthread_mutex_lock(&srv->lock);
	info->sessions = srv->nsess;
	pthread_mutex_unlock(&srv->lock);
	info->inflight = atomic_load(&srv->inflight);
	info->uptime_s = (double)(mono_s() - srv->started);
	info->listen = srv->listen;
	info->auth = srv->token_len > 0;
}

static void job_finish(struct rest_job *j, int status, json_t *body)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;

	json_decref(body);
	pthread_mutex_lock(&j->lock);
	j->status = text ? status : 500;
	j->text = text;
	j->text_len = text ? strlen(text) : 0;
	j->done = 1;
	if (j->suspended) {
		j->suspended = 0;
		MHD_resume_connection(j->conn);
	}
	pthread_mutex_unlock(&j->lock);
}

static void *rest_worker(void *arg)
{
	struct rest_job *j = arg;
	struct rest_info info;
	json_t *body = NULL;
	int status;

	rest_fill_info(j->srv, &info);
	status = rest_run(j->srv->app, &j->plan, &info, &body);
	job_finish(j, status, body);
	atomic_fetch_sub(&j->srv->rest_running, 1);
	job_unref(j);
	return NULL;
}

static enum MHD_Result rest_answer(struct rest_job *j)
{
	if (!j->text)
		return reply(j->conn, 500, "application/json",
			     "{\"summary\":\"out of memory\",\"error\":{\"code\":\"no_memory\",\"message\":\"out of memory\"}}",
			     strlen("{\"summary\":\"out of memory\",\"error\":{\"code\":\"no_memory\",\"message\":\"out of memory\"}}"),
			     NULL);
	return reply(j->conn, (unsigned)j->status, "application/json", j->text, j->text_len,
		     "Allow", j->allow, "Retry-After", j->status == 503 ? "5" : NULL, NULL);
}

static enum MHD_Result rest_start(struct hsrv *srv, struct MHD_Connection *conn,
				  const char *url, const char *method, struct hreq *rq)
{
	struct rest_req req = {method, url, query_value, conn, rq->body, rq->len};
	struct rest_job *j;
	json_t *body = NULL;
	const char *allow = NULL;
	int st;
	pthread_t t;
	pthread_attr_t a;

	if (rq->too_big)
		return rest_error(conn, 413, "too_big", NULL, NULL,
				  "request body too large: the cap is %zu bytes", srv->max_body);
	j = calloc(1, sizeof(*j));
	if (!j)
		return MHD_NO;
	pthread_mutex_init(&j->lock, NULL);
	j->srv = srv;
	j->conn = conn;
	j->refs = 1;
	rq->job = j;
	st = rest_plan(&req, &j->plan, &body, &allow);
	if (st) {
		j->allow = allow;
		job_finish(j, st, body);
		rq->kind = RQ_ANSWERED;
		return rest_answer(j);
	}
	if (j->plan.kind != REST_TOOL) {
		struct rest_info info;
		rest_fill_info(srv, &info);
		st = rest_run(srv->app, &j->plan, &info, &body);
		job_finish(j, st, body);
		rq->kind = RQ_ANSWERED;
		return rest_answer(j);
	}
	if (atomic_fetch_add(&srv->rest_running, 1) >= HTTP_REST_MAX) {
		atomic_fetch_sub(&srv->rest_running, 1);
		rq->kind = RQ_ANSWERED;
		return rest_error(conn, 503, "busy", "Retry-After", "5",
				  "busy: %d REST calls running; retry later", HTTP_REST_MAX);
	}
	j->refs = 2;
	pthread_mutex_lock(&j->lock);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, rest_worker, j) != 0) {
		pthread_attr_destroy(&a);
		j->refs = 1;
		pthread_mutex_unlock(&j->lock);
		atomic_fetch_sub(&srv->rest_running, 1);
		rq->kind = RQ_ANSWERED;
		return rest_error(conn, 503, "busy", "Retry-After", "5",
				  "busy: could not start a worker; retry later");
	}
	pthread_attr_destroy(&a);
	if (!j->done) {
		j->suspended = 1;
		MHD_suspend_connection(conn);
	}
	pthread_mutex_unlock(&j->lock);
	return MHD_YES;
}

static enum MHD_Result rest_resumed(struct hreq *rq)
{
	struct rest_job *j = rq->job;
	int done;

	pthread_mutex_lock(&j->lock);
	done = j->done;
	if (!done) {
		j->suspended = 1;
		MHD_suspend_connection(j->conn);
	}
	pthread_mutex_unlock(&j->lock);
	if (!done)
		return MHD_YES;
	rq->kind = RQ_ANSWERED;
	return rest_answer(j);
}

/* --- dispatch --------------------------------------------------------------------- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload, size_t *upload_len, void **con_cls)
{
	struct hsrv *srv = cls;
	struct hreq *rq = *con_cls;
	int is_mcp = !strcmp(url, "/mcp");
	int is_post = !strcmp(method, "POST");

	(void)version;
	if (!rq) {
		const char *origin = header(conn, "Origin");
		const char *v;

		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*con_cls = rq;
		/* Checks that need no body, answered before reading it. */
		if (!host_allowed(srv, header(conn, MHD_HTTP_HEADER_HOST)) ||
		    !origin_allowed(srv, origin)) {
			rq->kind = RQ_ANSWERED;
			log_info("http", "403 %s %s: Host '%s' / Origin '%s' not allowed", method,
				 url, header(conn, MHD_HTTP_HEADER_HOST) ?: "", origin ?: "");
			return rest_error(conn, 403, "refused", NULL, NULL,
					  "Forbidden: Host or Origin is not allowed (DNS rebinding protection); use localhost or start kforge with --allow-origin");
		}
		if (srv->token_len && !(strcmp(url, "/") == 0 || strcmp(url, "/v1/health") == 0) &&
		    strcmp(method, "OPTIONS") != 0 &&
		    !token_ok(srv, header(conn, MHD_HTTP_HEADER_AUTHORIZATION))) {
			rq->kind = RQ_ANSWERED;
			return rest_error(conn, 401, "unauthorized", MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					  "Bearer realm=\"kforge\"",
					  "Unauthorized: send 'Authorization: Bearer <token>' with the token in the server's --token-env variable");
		}
		if (is_mcp && (v = header(conn, "MCP-Protocol-Version")) && !version_ok(v)) {
			rq->kind = RQ_ANSWERED;
			return rpc_error(conn, 400, -32000, NULL, NULL,
					 "Bad Request: unsupported MCP-Protocol-Version '%.40s' (supported: %s, %s, %s)",
					 v, MCP_VERSIONS[0], MCP_VERSIONS[1], MCP_VERSIONS[2]);
		}
		if (is_mcp && is_post) {
			const char *acc = header(conn, MHD_HTTP_HEADER_ACCEPT);
			if (!accepts(acc, "application/json") || !accepts(acc, "text/event-stream")) {
				rq->kind = RQ_ANSWERED;
				return rpc_error(conn, 406, -32000, NULL, NULL,
						 "Not Acceptable: Accept must include both application/json and text/event-stream");
			}
		}
		if ((v = header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH))) {
			char *end;
			unsigned long long n = strtoull(v, &end, 10);
			if (*end == '\0' && n > srv->max_body) {
				rq->kind = RQ_ANSWERED;
				if (is_mcp)
					return rpc_error(conn, 413, -32600, NULL, NULL,
							 "Request body too large: %llu bytes, the cap is %zu bytes (--max-message-bytes)",
							 n, srv->max_body);
				return rest_error(conn, 413, "too_big", NULL, NULL,
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
	case RQ_MCP_POST:
		return mcp_post_resumed(rq);
	case RQ_REST:
		return rest_resumed(rq);
	case RQ_ANSWERED:
	case RQ_MCP_GET:
		return MHD_YES;
	case RQ_NEW:
		break;
	}
	if (!strcmp(method, "OPTIONS")) {
		rq->kind = RQ_ANSWERED;
		return reply(conn, 204, NULL, "", 0, "Access-Control-Allow-Origin",
			     header(conn, "Origin"), "Access-Control-Allow-Methods",
			     "GET, POST, DELETE, OPTIONS", "Access-Control-Allow-Headers",
			     "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID",
			     "Access-Control-Expose-Headers", "Mcp-Session-Id", NULL);
	}
	if (is_mcp) {
		if (is_post) {
			rq->kind = RQ_MCP_POST;
			return mcp_post(srv, conn, rq);
		}
		rq->kind = RQ_ANSWERED;
		if (!strcmp(method, "GET")) {
			rq->kind = RQ_MCP_GET;
			return mcp_get(srv, conn, rq);
		}
		if (!strcmp(method, "DELETE"))
			return mcp_delete(srv, conn);
		return rpc_error(conn, 405, -32000, "Allow", "GET, POST, DELETE",
				 "Method Not Allowed: /mcp takes POST, GET and DELETE");
	}
	if (!strncmp(url, "/v1/", 4) || !strcmp(url, "/v1")) {
		rq->kind = RQ_REST;
		return rest_start(srv, conn, url, method, rq);
	}
	rq->kind = RQ_ANSWERED;
	if (!strcmp(url, "/") || !strcmp(url, "/index.html")) {
		size_t len;
		const char *page = web_index_html(&len);
		if (strcmp(method, "GET") && strcmp(method, "HEAD"))
			return rest_error(conn, 405, "method_not_allowed", "Allow", "GET",
					  "%s /: the page takes GET only", method);
		struct MHD_Response *r =
			MHD_create_response_from_buffer(len, (void *)page, MHD_RESPMEM_PERSISTENT);
		enum MHD_Result ret;
		if (!r)
			return MHD_NO;
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/html; charset=utf-8");
		MHD_add_response_header(r, "Content-Security-Policy",
					"default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'");
		ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
		MHD_destroy_response(r);
		return ret;
	}
	return rest_error(conn, 404, "not_found", NULL, NULL,
			  "no such path '%s': MCP is at /mcp, the REST API under /v1 (GET /v1/openapi.json), the page at /",
			  url);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct hreq *rq = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (!rq)
		return;
	if (rq->call) {
		struct hcall *c = rq->call;
		struct hsess *s = c->sess;
		int freed = 0, freed2 = 0;
		pthread_mutex_lock(&s->lock);
		c->gone = 1;
		c->suspended = 0;
		if (c->get && s->get == c) {
			s->get = NULL;
			freed2 = call_unref_locked(c);
		}
		if (!freed2)
			freed = call_unref_locked(c);
		pthread_mutex_unlock(&s->lock);
		if (freed || freed2)
			sess_unref(s);
	}
	if (rq->job)
		job_unref(rq->job);
	free(rq->body);
	free(rq);
	*con_cls = NULL;
}

/* --- housekeeping, start, stop --------------------------------------------------- */

/* Expires idle sessions and pings idle GET streams (a dead peer shows up
 * as a failed write). Runs on the thread of transport_http_run. */
static void housekeep(struct hsrv *srv)
{
	struct hsess *expired[64];
	size_t n = 0;
	time_t now = mono_s();

	pthread_mutex_lock(&srv->lock);
	for (size_t b = 0; b < HTTP_BUCKETS; b++) {
		for (struct hsess *s = srv->buckets[b]; s; s = s->next) {
			pthread_mutex_lock(&s->lock);
			if (s->get && now - s->last_ping >= HTTP_KEEPALIVE_S) {
				s->last_ping = now;
				sse_raw(s->get, ": keepalive\n\n", 13);
				wake(s->get);
			}
			if (!s->get && s->calls == 0 && now - s->last_used >= (time_t)srv->idle_s &&
			    n < sizeof(expired) / sizeof(expired[0])) {
				atomic_fetch_add(&s->refs, 1);
				expired[n++] = s;
			}
			pthread_mutex_unlock(&s->lock);
		}
	}
	pthread_mutex_unlock(&srv->lock);
	for (size_t i = 0; i < n; i++) {
		log_info("http", "session %.8s... expired after %u s idle", expired[i]->id,
			 srv->idle_s);
		sess_close(srv, expired[i]);
		sess_unref(expired[i]);
	}
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

static int is_wildcard_addr(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)ss)->sin_addr.s_addr == INADDR_ANY;
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
			  "--http: '%s' is not an IP address (use 127.0.0.1, ::1, 0.0.0.0 or a local address)",
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
	srv->max_sessions = opt->max_sessions ? opt->max_sessions
					      : env_unsigned("KFORGE_HTTP_MAX_SESSIONS",
							     HTTP_DEFAULT_SESSIONS);
	srv->max_inflight = opt->max_inflight ? opt->max_inflight
					      : env_unsigned("KFORGE_HTTP_MAX_INFLIGHT",
							     HTTP_DEFAULT_INFLIGHT);
	srv->origins = opt->allowed_origins;
	srv->started = mono_s();
	pthread_mutex_init(&srv->lock, NULL);

	if (opt->token_env) {
		const char *t = getenv(opt->token_env);
		if (!t || !*t) {
			rc = kf_err_set(err, KF_EINVAL,
					"--token-env %s: the variable is not set or empty; export %s=<a long random token>",
					opt->token_env, opt->token_env);
			goto out;
		}
		if (strlen(t) >= sizeof(srv->token)) {
			rc = kf_err_set(err, KF_EINVAL, "--token-env %s: the token is longer than %zu bytes",
					opt->token_env, sizeof(srv->token) - 1);
			goto out;
		}
		srv->token_len = strlen(t);
		memcpy(srv->token, t, srv->token_len);
	}
	if (!is_loopback_addr(&ss) && !srv->token_len) {
		rc = kf_err_set(err, KF_EPERM,
				"refusing to serve on %s without a token: binding beyond loopback needs --token-env VAR (Authorization: Bearer <token>)",
				opt->addr);
		goto out;
	}
	srv->any_host = is_wildcard_addr(&ss);
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
			MHD_USE_TURBO |
			(ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
		(uint16_t)opt->port, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER,
		mhd_log, srv, MHD_OPTION_SOCK_ADDR,
		(struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
		MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT, conn_limit,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)16 * 1024, MHD_OPTION_END);
	if (!srv->d) {
		rc = kf_err_set(err, KF_EIO, "cannot listen on %s port %d: %s", hostbuf, opt->port,
				errno ? strerror(errno) : "libmicrohttpd refused to start");
		goto out_sig;
	}
	di = MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_BIND_PORT);
	port = di ? di->port : opt->port;
	snprintf(srv->listen, sizeof(srv->listen), "http://%s:%d", hostbuf, port);
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
		housekeep(srv);
	}

out_stop:
	atomic_store(&srv->stopping, 1);
	/* End every session first: their calls get final answers and their
	 * GET streams finish, so no connection is left suspended. */
	for (;;) {
		struct hsess *s = NULL;
		pthread_mutex_lock(&srv->lock);
		for (size_t b = 0; b < HTTP_BUCKETS && !s; b++)
			s = srv->buckets[b];
		if (s)
			atomic_fetch_add(&s->refs, 1);
		pthread_mutex_unlock(&srv->lock);
		if (!s)
			break;
		sess_close(srv, s);
		sess_unref(s);
	}
	for (int i = 0; i < 100 && atomic_load(&srv->rest_running); i++)
		usleep(50 * 1000);
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
