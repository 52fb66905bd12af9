/* http_mcp: MCP Streamable HTTP at /mcp: the session table, the calls
 * (struct hcall) that carry each POSTed message's answer back, the SSE
 * streams and the send callback the sessions (mcp.h) deliver through.
 * Each POSTed message goes to its session with an hcall as the call
 * pointer. The answer's form is decided by the first message sent for that
 * call: the final response first -> one JSON body; a notification (progress,
 * log) or a server request (sampling, elicitation) first -> an SSE stream
 * that carries them and ends with the response. Until then the connection
 * is suspended, so a tool call on a worker thread holds no HTTP thread. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "http_int.h"
#include "log.h"

static struct hmsg *hmsg_new(const char *a, size_t alen, const char *b, size_t blen, const char *c,
			     size_t clen)
{
	struct hmsg *m = malloc(sizeof(*m) + alen + blen + clen);
	if (!m)
		return NULL;
	m->next = NULL;
	m->seq = 0;
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

/* Appends m to c's events. Under sess->lock. */
static void sse_append(struct hcall *c, struct hmsg *m)
{
	if (c->tail)
		c->tail->next = m;
	else
		c->head = m;
	c->tail = m;
	if (!c->cur) {
		c->cur = m;
		c->off = 0;
	}
}

/* Appends an SSE "message" event carrying json to c, with the id
 * "STREAM-SEQ". Under sess->lock. */
static void sse_push(struct hcall *c, const char *json, size_t len)
{
	char head[80];
	unsigned long long seq = ++c->seq;
	int hl =
		snprintf(head, sizeof(head), "event: message\nid: %u-%llu\ndata: ", c->stream, seq);
	struct hmsg *m = hmsg_new(head, (size_t)hl, json, len, "\n\n", 2);

	if (!m)
		return; /* out of memory: the event is lost, the stream goes on */
	m->seq = seq;
	sse_append(c, m);
}

/* Appends raw SSE text (a comment). Under sess->lock. */
static void sse_raw(struct hcall *c, const char *text, size_t len)
{
	struct hmsg *m = hmsg_new(text, len, NULL, 0, NULL, 0);
	if (m)
		sse_append(c, m);
}

/* Makes c an SSE stream: a stream number and, for sessions on revision
 * 2025-11-25 (whose clients expect it), the priming event of SEP-1699: an
 * id and empty data, with a retry hint. Under sess->lock. */
static void sse_start(struct hsess *s, struct hcall *c)
{
	const char *v = s->ms ? mcp_session_version(s->ms) : NULL;
	char buf[96];
	int n;

	c->mode = MODE_SSE;
	c->stream = ++s->next_stream;
	if (!v || strcmp(v, "2025-11-25") < 0)
		return;
	n = snprintf(buf, sizeof(buf), "id: %u-0\nretry: %d\ndata: \n\n", c->stream,
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
			sse_push(s->get, json, len);
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
		if (c->mode == MODE_UNDECIDED && final) {
			/* The answer comes first: one JSON body. */
			c->mode = MODE_JSON;
			c->json = copy;
			c->json_len = len;
			copy = NULL;
		} else {
			/* Anything before the answer: an SSE stream. */
			if (!c->primed) {
				c->primed = 1;
				sse_start(s, c);
			}
			sse_push(c, json, len);
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
		s->last_used = http_mono_s();
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
	s->last_used = s->last_ping = http_mono_s();
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

/* Drops the orphaned streams detached at or before cutoff (monotonic
 * seconds). Under s->lock; returns how many session references the
 * caller must drop with sess_unref after unlocking. */
static size_t orphans_drop(struct hsess *s, time_t cutoff)
{
	struct hcall **pp = &s->orphans, *c;
	size_t freed = 0;

	while ((c = *pp) != NULL) {
		if (c->detached_at > cutoff) {
			pp = &c->onext;
			continue;
		}
		*pp = c->onext;
		c->detached = 0;
		c->gone = 1;
		freed += (size_t)call_unref_locked(c);
	}
	return freed;
}

/* Ends a session: out of the table, every call cancelled (their final
 * messages still reach their connections), the GET stream finished. Safe
 * to call more than once and from any thread that holds no session lock. */
static void sess_close(struct hsrv *srv, struct hsess *s)
{
	struct mcp_session *ms;
	struct hsess **pp;
	size_t freed;

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
	freed = orphans_drop(s, (time_t)1 << 62);
	pthread_mutex_unlock(&s->lock);
	while (freed--)
		sess_unref(s);
	sess_unref(s); /* the table's reference */
}

/* --- SSE content ---------------------------------------------------------------- */

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct hcall *c = cls;
	struct hsess *s = c->sess;
	size_t n = 0, keep = c->get ? 0 : HTTP_REPLAY_MAX;

	(void)pos;
	pthread_mutex_lock(&s->lock);
	while (c->cur && n < max) {
		size_t take = c->cur->len - c->off;
		if (take > max - n)
			take = max - n;
		memcpy(buf + n, c->cur->data + c->off, take);
		n += take;
		c->off += take;
		if (c->off == c->cur->len) {
			c->cur = c->cur->next;
			c->off = 0;
			c->kept++;
		}
	}
	/* Written events stay for a resume, the oldest dropped past the cap. */
	while (c->kept > keep && c->head != c->cur) {
		struct hmsg *m = c->head;
		c->head = m->next;
		if (!c->head)
			c->tail = NULL;
		free(m);
		c->kept--;
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
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024,
								   sse_read, c, sse_free);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	http_cors(r, c->conn);
	if (sid)
		MHD_add_response_header(r, "Mcp-Session-Id", sid);
	ret = MHD_queue_response(c->conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* --- /mcp ------------------------------------------------------------------------ */

enum answer { ANS_WAIT = 0, ANS_SSE, ANS_JSON };

/* Under s->lock: whether the answer's form is known yet; for ANS_JSON the
 * final message is taken into *json (owned by the caller, NULL when its
 * copy failed). The response itself is queued by answer_queue after
 * unlocking, so no MHD lock is ever taken under a session lock (sse_read
 * takes the session lock under MHD's response lock). */
static enum answer answer_take(struct hcall *c, char **json, size_t *len)
{
	if (c->mode == MODE_SSE)
		return ANS_SSE;
	if (c->mode == MODE_JSON && c->final) {
		*json = c->json;
		*len = c->json_len;
		c->json = NULL;
		return ANS_JSON;
	}
	return ANS_WAIT;
}

/* Queues the answer decided by answer_take (json taken). Without the
 * session lock: c stays valid while its connection holds it. */
static enum MHD_Result answer_queue(struct hcall *c, enum answer a, char *json, size_t len)
{
	const char *sid = c->init ? c->sess->id : NULL;
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (a == ANS_SSE)
		return queue_sse(c, sid);
	if (!json)
		return MHD_NO;
	r = MHD_create_response_from_buffer(len, json, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(json);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (sid)
		MHD_add_response_header(r, "Mcp-Session-Id", sid);
	http_cors(r, c->conn);
	ret = MHD_queue_response(c->conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* 1 when body is a JSON-RPC request (method and id), the only kind the
 * in-flight cap refuses: notifications and responses start no work, and a
 * response may be what a waiting call needs to finish. Parses, so it is
 * called only once the cap is reached. */
static int is_request(const char *body, size_t len)
{
	json_t *j = json_loadb(body, len, 0, NULL);
	int r = !j || (json_object_get(j, "method") && json_object_get(j, "id"));
	json_decref(j);
	return r;
}

/* 1 when the JSON text of an initialize answer is a result (not an error). */
static int init_succeeded(const char *json, size_t len)
{
	json_t *j = json ? json_loadb(json, len, 0, NULL) : NULL;
	int ok = j && json_object_get(j, "result") != NULL;
	json_decref(j);
	return ok;
}

enum MHD_Result http_mcp_post(struct hsrv *srv, struct MHD_Connection *conn, struct hreq *rq)
{
	const char *sid = http_header(conn, "Mcp-Session-Id");
	const char *ctype = http_header(conn, MHD_HTTP_HEADER_CONTENT_TYPE);
	struct hsess *s = NULL;
	struct hcall *c;
	enum mcp_in in;
	enum MHD_Result ret = MHD_NO;
	enum answer a;
	char *json = NULL;
	size_t jl = 0;
	int init = 0;

	if (rq->too_big)
		return http_rpc_error(
			conn, 413, -32600, NULL, NULL,
			"Request body too large: the cap is %zu bytes (--max-message-bytes)",
			srv->max_body);
	if (!ctype || strncasecmp(ctype, "application/json", 16) != 0)
		return http_rpc_error(
			conn, 415, -32000, NULL, NULL,
			"Unsupported Media Type: Content-Type must be application/json");
	if (rq->len == 0)
		return http_rpc_error(conn, 400, -32700, NULL, NULL, "Parse error: empty body");
	if (!sid) {
		/* Only initialize may come without a session. */
		json_error_t je;
		json_t *j = json_loadb(rq->body, rq->len, 0, &je);
		const char *method = json_string_value(json_object_get(j, "method"));
		int is_arr = json_is_array(j),
		    ok = method && !strcmp(method, "initialize") && json_object_get(j, "id");
		json_decref(j);
		if (!j)
			return http_rpc_error(conn, 400, -32700, NULL, NULL,
					      "Parse error: %s (line %d, column %d)", je.text,
					      je.line, je.column);
		if (is_arr)
			return http_rpc_error(conn, 400, -32600, NULL, NULL,
					      "Invalid Request: batches (JSON arrays) are not "
					      "supported; send one message per POST");
		if (!ok)
			return http_rpc_error(conn, 400, -32000, NULL, NULL,
					      "Bad Request: Mcp-Session-Id header is required "
					      "(only an initialize request may come without one)");
		if (atomic_load(&srv->stopping))
			return http_rpc_error(conn, 503, -32000, "Retry-After", "5",
					      "Server shutting down");
		unsigned st;
		s = sess_create(srv, &st);
		if (!s)
			return http_rpc_error(
				conn, st, -32000, "Retry-After", st == 503 ? "5" : NULL,
				st == 503 ? "Server busy: too many sessions (max %u); retry later"
					  : "Internal error: could not create a session (max %u)",
				srv->max_sessions);
		init = 1;
	} else {
		s = sess_find(srv, sid);
		if (!s)
			return http_rpc_error(conn, 404, -32001, NULL, NULL,
					      "Session not found: '%.40s' is unknown or has ended; "
					      "initialize a new session",
					      sid);
	}
	if (atomic_load(&srv->inflight) >= srv->max_inflight && is_request(rq->body, rq->len)) {
		ret = http_rpc_error(conn, 503, -32000, "Retry-After", "1",
				     "Server busy: %u requests in flight; retry later",
				     srv->max_inflight);
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
		return http_rpc_error(conn, 404, -32001, NULL, NULL,
				      "Session not found: it has ended; initialize a new session");
	}
	s->users++;
	s->calls++;
	s->last_used = http_mono_s();
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
		return http_reply(conn, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL);
	}
	if (in == MCP_IN_ERROR && c->final && c->mode == MODE_JSON && c->json) {
		/* Malformed message: the error is the whole answer, with 400. */
		char *j = c->json;
		size_t jl = c->json_len;
		c->json = NULL;
		pthread_mutex_unlock(&s->lock);
		ret = http_reply(conn, MHD_HTTP_BAD_REQUEST, "application/json", j, jl, NULL);
		free(j);
		rq->kind = RQ_ANSWERED;
		if (init)
			sess_close(srv, s);
		return ret;
	}
	a = answer_take(c, &json, &jl);
	if (a == ANS_WAIT) {
		/* Not answered yet: park the connection until on_send wakes it. */
		c->suspended = 1;
		MHD_suspend_connection(conn);
		pthread_mutex_unlock(&s->lock);
		return MHD_YES;
	}
	pthread_mutex_unlock(&s->lock);
	rq->kind = RQ_ANSWERED;
	if (init && a == ANS_JSON && !init_succeeded(json, jl)) {
		/* A refused initialize leaves no session behind. */
		c->init = 0;
		ret = answer_queue(c, a, json, jl);
		sess_close(srv, s);
		return ret;
	}
	return answer_queue(c, a, json, jl);
}

/* The orphaned POST stream that Last-Event-ID "STREAM-SEQ" names, taken
 * off the orphan list with its cursor on the first event after SEQ, or
 * NULL. Under s->lock. */
static struct hcall *resume_find(struct hsess *s, const char *last)
{
	unsigned stream;
	unsigned long long seq;
	char tail;
	struct hcall **pp, *c;

	if (sscanf(last, "%u-%llu%c", &stream, &seq, &tail) != 2)
		return NULL;
	for (pp = &s->orphans; (c = *pp) != NULL; pp = &c->onext)
		if (c->stream == stream)
			break;
	if (!c)
		return NULL;
	*pp = c->onext;
	c->onext = NULL;
	c->detached = 0;
	c->off = 0;
	c->kept = 0;
	for (c->cur = c->head; c->cur && c->cur->seq <= seq; c->cur = c->cur->next)
		c->kept++;
	if (c->head && c->head->seq > seq + 1)
		log_warn("http",
			 "session %.8s...: stream %u resumed after %llu, but events from %llu on "
			 "were dropped",
			 s->id, stream, seq, seq + 1);
	return c;
}

/* Resumed after on_send: the answer (or its first message) is there. */
enum MHD_Result http_mcp_resumed(struct hreq *rq)
{
	struct hcall *c = rq->call;
	struct hsess *s = c->sess;
	enum MHD_Result ret = MHD_YES;

	char *json = NULL;
	size_t jl = 0;
	enum answer a;

	pthread_mutex_lock(&s->lock);
	a = answer_take(c, &json, &jl);
	if (a == ANS_WAIT) {
		c->suspended = 1;
		MHD_suspend_connection(c->conn);
	}
	pthread_mutex_unlock(&s->lock);
	if (a != ANS_WAIT) {
		rq->kind = RQ_ANSWERED;
		ret = answer_queue(c, a, json, jl);
	}
	return ret;
}

enum MHD_Result http_mcp_get(struct hsrv *srv, struct MHD_Connection *conn, struct hreq *rq)
{
	const char *sid = http_header(conn, "Mcp-Session-Id");
	const char *last;
	struct hsess *s;
	struct hcall *c;

	if (!http_accepts(http_header(conn, MHD_HTTP_HEADER_ACCEPT), "text/event-stream"))
		return http_rpc_error(conn, 406, -32000, NULL, NULL,
				      "Not Acceptable: GET /mcp opens an SSE stream; Accept must "
				      "include text/event-stream");
	if (!sid)
		return http_rpc_error(conn, 400, -32000, NULL, NULL,
				      "Bad Request: Mcp-Session-Id header is required");
	s = sess_find(srv, sid);
	if (!s)
		return http_rpc_error(conn, 404, -32001, NULL, NULL,
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
		return http_rpc_error(conn, 404, -32001, NULL, NULL,
				      "Session not found: it has ended");
	}
	if ((last = http_header(conn, "Last-Event-ID")) != NULL) {
		struct hcall *o = resume_find(s, last);
		if (o) {
			/* The orphan's reference becomes this connection's; the
			 * session reference from sess_find is not needed. */
			o->conn = conn;
			rq->call = o;
			rq->kind = RQ_ANSWERED;
			pthread_mutex_unlock(&s->lock);
			free(c);
			sess_unref(s);
			log_debug("http", "session %.8s...: stream %u resumed after %s", s->id,
				  o->stream, last);
			return queue_sse(o, NULL);
		}
	}
	if (s->get) {
		pthread_mutex_unlock(&s->lock);
		free(c);
		sess_unref(s);
		return http_rpc_error(conn, 409, -32000, NULL, NULL,
				      "Conflict: this session already has a GET stream open");
	}
	c->sess = s;
	c->conn = conn;
	c->refs = 2; /* the connection and s->get */
	c->get = 1;
	sse_start(s, c);
	while (s->bl_head) {
		struct hmsg *m = s->bl_head;
		s->bl_head = m->next;
		sse_push(c, m->data, m->len);
		free(m);
	}
	s->bl_tail = NULL;
	s->bl_len = 0;
	s->get = c;
	s->last_ping = s->last_used = http_mono_s();
	rq->call = c;
	rq->kind = RQ_ANSWERED;
	pthread_mutex_unlock(&s->lock);
	return queue_sse(c, NULL);
}

enum MHD_Result http_mcp_delete(struct hsrv *srv, struct MHD_Connection *conn)
{
	const char *sid = http_header(conn, "Mcp-Session-Id");
	struct hsess *s;

	if (!sid)
		return http_rpc_error(conn, 400, -32000, NULL, NULL,
				      "Bad Request: Mcp-Session-Id header is required");
	s = sess_find(srv, sid);
	if (!s)
		return http_rpc_error(conn, 404, -32001, NULL, NULL,
				      "Session not found: '%.40s' is unknown or has ended", sid);
	sess_close(srv, s);
	sess_unref(s);
	return http_reply(conn, MHD_HTTP_OK, NULL, "", 0, NULL);
}

void http_mcp_completed(struct hcall *c, int ok)
{
	struct hsess *s = c->sess;
	int freed = 0, freed2 = 0;
	pthread_mutex_lock(&s->lock);
	c->suspended = 0;
	if (!c->get && c->mode == MODE_SSE && !s->ended && (!c->final || !ok)) {
		/* The stream broke before the answer, or while writing it (a
		 * connection closed while suspended shows only when written to):
		 * keep the call, the connection's reference moving to the orphan
		 * list, for a GET with Last-Event-ID. */
		c->conn = NULL;
		c->detached = 1;
		c->detached_at = http_mono_s();
		c->onext = s->orphans;
		s->orphans = c;
		pthread_mutex_unlock(&s->lock);
		return;
	}
	c->gone = 1;
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

/* --- housekeeping --------------------------------------------------------------- */

/* Expires idle sessions and pings idle GET streams (a dead peer shows up
 * as a failed write). Runs on the thread of transport_http_run. */
void http_housekeep(struct hsrv *srv)
{
	struct hsess *expired[64];
	size_t n = 0;
	time_t now = http_mono_s();

	pthread_mutex_lock(&srv->lock);
	for (size_t b = 0; b < HTTP_BUCKETS; b++) {
		for (struct hsess *s = srv->buckets[b]; s; s = s->next) {
			size_t freed;
			pthread_mutex_lock(&s->lock);
			freed = orphans_drop(s, now - HTTP_ORPHAN_S);
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
			while (freed--)
				sess_unref(s); /* never the last: the table holds one */
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

void http_mcp_close_all(struct hsrv *srv)
{
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
}
