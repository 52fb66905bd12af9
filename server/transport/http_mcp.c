/* http_mcp: the requests of MCP Streamable HTTP at /mcp: POST (one
 * message, its session found or created in http_sess.c), GET (the
 * session's stream, resumable with Last-Event-ID), DELETE, the calls
 * (struct hcall) that carry each POSTed message's answer back, and the
 * housekeeping of idle sessions. The answer's form is decided by the first
 * message sent for that call: the final response first -> one JSON body; a
 * notification (progress, log) or a server request (sampling, elicitation)
 * first -> an SSE stream that carries them and ends with the response.
 * Until then the connection is suspended, so a tool call on a worker
 * thread holds no HTTP thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/transport/http_int.h"
#include "base/log.h"

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
		return http_queue_sse(c, sid);
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
	transport_cors(r, c->conn);
	/* 2026-07-28 gives errors their HTTP status (404 for an unknown
	 * method, 400 for a malformed request); the handshake revisions
	 * answer every JSON-RPC message with 200. */
	ret = MHD_queue_response(c->conn, c->modern ? http_modern_status(json, len) : MHD_HTTP_OK,
				 r);
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

static enum MHD_Result sess_refused(struct hsrv *srv, struct MHD_Connection *conn,
				    const char *client, unsigned st);

/* A POST without Mcp-Session-Id: only initialize may come so. Returns a
 * new session with a reference in *s, or queues the refusal (*s NULL). */
static enum MHD_Result post_new_session(struct hsrv *srv, struct MHD_Connection *conn,
					struct hreq *rq, struct hsess **s)
{
	json_error_t je;
	json_t *j = json_loadb(rq->body, rq->len, 0, &je);
	const char *method = json_string_value(json_object_get(j, "method"));
	const char *client = rq->who;
	int is_arr = json_is_array(j),
	    ok = method && !strcmp(method, "initialize") && json_object_get(j, "id");
	unsigned st;

	*s = NULL;
	json_decref(j);
	if (!j)
		return transport_rpc_error(conn, 400, -32700, NULL, NULL,
					   "Parse error: %s (line %d, column %d)", je.text, je.line,
					   je.column);
	if (is_arr)
		return transport_rpc_error(conn, 400, -32600, NULL, NULL,
					   "Invalid Request: batches (JSON arrays) are not "
					   "supported; send one message per POST");
	if (!ok)
		return transport_rpc_error(
			conn, 400, -32000, NULL, NULL,
			"Bad Request: Mcp-Session-Id header is required (only an "
			"initialize request may come without one)");
	if (atomic_load(&srv->stopping))
		return transport_rpc_error(conn, 503, -32000, "Retry-After", "5",
					   "Server shutting down");
	*s = http_sess_create(srv, client, rq->who_slot, &st);
	if (!*s)
		return sess_refused(srv, conn, client, st);
	/* With tokens the token is the client of its compiles and GPU jobs
	 * too, whichever of its sessions they come from. */
	if (srv->ntokens)
		mcp_session_set_client((*s)->ms, client);
	return MHD_YES;
}

/* Queues the refusal for http_sess_create's status st. */
static enum MHD_Result sess_refused(struct hsrv *srv, struct MHD_Connection *conn,
				    const char *client, unsigned st)
{
	char who[HTTP_CLIENT_LEN + 32];

	http_auth_describe(client, who, sizeof(who));
	if (st == 429) {
		log_info("http", "429 for %s: %u sessions, all in use", who, srv->per_client);
		return transport_rpc_error(
			conn, 429, -32000, "Retry-After", "5",
			"Too many sessions: %s holds %u, each with a call running or a "
			"GET stream open, the cap per client (the operator raises it with "
			"--max-sessions-per-client); DELETE the ones it no longer needs",
			who, srv->per_client);
	}
	return transport_rpc_error(conn, st, -32000, "Retry-After", st == 503 ? "5" : NULL,
				   st == 503
					   ? "Server busy: too many sessions (max %u); retry later"
					   : "Internal error: could not create a session (max %u)",
				   srv->max_sessions);
}

/* After mcp_session_handle: queues the answer that is already there, or
 * suspends the connection until on_send has it. */
static enum MHD_Result post_answer(struct hsrv *srv, struct MHD_Connection *conn, struct hreq *rq,
				   struct hcall *c, enum mcp_in in)
{
	struct hsess *s = c->sess;
	enum MHD_Result ret;
	enum answer a;
	char *json = NULL;
	size_t jl = 0;
	int init = c->init;

	pthread_mutex_lock(&s->lock);
	if (--s->users == 0 && s->ended)
		pthread_cond_broadcast(&s->cond);
	if (in == MCP_IN_NOTIFICATION || in == MCP_IN_RESPONSE) {
		s->calls--;
		http_call_answered_locked(c);
		(void)http_call_unref_locked(c); /* the connection's reference keeps c */
		pthread_mutex_unlock(&s->lock);
		rq->kind = RQ_ANSWERED;
		return transport_reply(conn, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL);
	}
	if (in == MCP_IN_ERROR && c->final && c->mode == MODE_JSON && c->json) {
		/* Malformed message: the error is the whole answer, with 400. */
		json = c->json;
		c->json = NULL;
		pthread_mutex_unlock(&s->lock);
		ret = transport_reply(conn, MHD_HTTP_BAD_REQUEST, "application/json", json,
				      c->json_len, NULL);
		free(json);
		rq->kind = RQ_ANSWERED;
		if (init)
			http_sess_close(srv, s);
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
		http_sess_close(srv, s);
		return ret;
	}
	return answer_queue(c, a, json, jl);
}

static enum MHD_Result post_enter(struct hsrv *srv, struct MHD_Connection *conn, struct hreq *rq,
				  struct hsess *s, int init, int modern);

/* The live session with this id when it is the requester's: with tokens a
 * session answers only the token that created it (another token's id is
 * as unknown as a wrong one). A reference, or NULL. */
static struct hsess *sess_find_own(struct hsrv *srv, const char *sid, const struct hreq *rq)
{
	struct hsess *s = http_sess_find(srv, sid);

	if (s && srv->ntokens && strcmp(s->client, rq->who) != 0) {
		http_sess_unref(s);
		return NULL;
	}
	return s;
}

/* The session a GET or DELETE names in Mcp-Session-Id (sess_find_own): a
 * reference, or NULL with *answer set to the 400 (no header) or 404 (no
 * such live session of this client) reply. */
static struct hsess *named_session(struct hsrv *srv, struct MHD_Connection *conn,
				   const struct hreq *rq, enum MHD_Result *answer)
{
	const char *sid = transport_header(conn, "Mcp-Session-Id");
	struct hsess *s;

	if (!sid) {
		*answer = transport_rpc_error(conn, 400, -32000, NULL, NULL,
					      "Bad Request: Mcp-Session-Id header is required");
		return NULL;
	}
	s = sess_find_own(srv, sid, rq);
	if (!s)
		*answer = transport_rpc_error(conn, 404, -32001, NULL, NULL,
					      "Session not found: '%.40s' is unknown or has ended",
					      sid);
	return s;
}

/* A stateless POST (msg taken): headers checked against the body, then
 * the request is handled in a session of its own that ends with it. */
static enum MHD_Result post_modern(struct hsrv *srv, struct MHD_Connection *conn, struct hreq *rq,
				   json_t *msg, const char *pv)
{
	const char *client = rq->who;
	int is_arr = json_is_array(msg), notif = !json_object_get(msg, "id");
	enum MHD_Result ret;
	struct hsess *s;
	char *answer = NULL;
	size_t len = 0;
	unsigned st;

	if (is_arr) {
		json_decref(msg);
		return transport_rpc_error(conn, 400, -32600, NULL, NULL,
					   "Invalid Request: batches (JSON arrays) are not "
					   "supported; send one message per POST");
	}
	if (http_modern_check(msg, pv, transport_header(conn, "Mcp-Method"),
			      transport_header(conn, "Mcp-Name"), &answer, &len)) {
		json_decref(msg);
		if (!answer)
			return MHD_NO;
		ret = transport_reply(conn, 400, "application/json", answer, len, NULL);
		free(answer);
		return ret;
	}
	json_decref(msg);
	if (notif) /* cancellation over HTTP is the stream closing: nothing to do */
		return transport_reply(conn, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL);
	if (atomic_load(&srv->stopping))
		return transport_rpc_error(conn, 503, -32000, "Retry-After", "5",
					   "Server shutting down");
	s = http_sess_create(srv, client, rq->who_slot, &st);
	if (!s)
		return sess_refused(srv, conn, client, st);
	mcp_session_set_modern(s->ms);
	mcp_session_set_client(s->ms, client);
	return post_enter(srv, conn, rq, s, 0, 1);
}

enum MHD_Result http_mcp_post(struct hsrv *srv, struct MHD_Connection *conn, struct hreq *rq)
{
	const char *sid = transport_header(conn, "Mcp-Session-Id");
	const char *pv = transport_header(conn, "MCP-Protocol-Version");
	struct hsess *s = NULL;
	enum MHD_Result ret;
	int init = !sid;

	if (rq->too_big)
		return transport_rpc_error(
			conn, 413, -32600, NULL, NULL,
			"Request body too large: the cap is %zu bytes (--max-message-bytes)",
			srv->max_body);
	if (rq->len == 0)
		return transport_rpc_error(conn, 400, -32700, NULL, NULL,
					   "Parse error: empty body");
	if (init || (pv && !http_modern_known_legacy(pv))) {
		json_t *j = json_loadb(rq->body, rq->len, 0, NULL);
		if (j && http_modern_wanted(pv, sid, j))
			return post_modern(srv, conn, rq, j, pv);
		json_decref(j);
	}
	if (init) {
		ret = post_new_session(srv, conn, rq, &s);
		if (!s)
			return ret;
	} else if (!(s = sess_find_own(srv, sid, rq))) {
		return transport_rpc_error(conn, 404, -32001, NULL, NULL,
					   "Session not found: '%.40s' is unknown or has ended; "
					   "initialize a new session",
					   sid);
	}
	return post_enter(srv, conn, rq, s, init, 0);
}

/* Counts the call in session s (our reference taken) and hands the body
 * to it. init: s was created for this initialize; modern: s was created
 * for this one stateless request. Either is ended on the way out when the
 * request cannot go in. */
static enum MHD_Result post_enter(struct hsrv *srv, struct MHD_Connection *conn, struct hreq *rq,
				  struct hsess *s, int init, int modern)
{
	enum MHD_Result ret = MHD_NO;
	struct hcall *c = NULL;

	int req = is_request(rq->body, rq->len);

	if (atomic_load(&srv->inflight) >= srv->max_inflight && req)
		ret = transport_rpc_error(conn, 503, -32000, "Retry-After", "1",
					  "Server busy: %u requests in flight; retry later",
					  srv->max_inflight);
	else if (req && http_inflight_take(srv, s->slot))
		ret = http_inflight_refuse(srv, conn, s->client, 1);
	else {
		if (!req) /* notifications and responses are never refused */
			atomic_fetch_add(&srv->client_inflight[s->slot], 1);
		if (!(c = calloc(1, sizeof(*c))))
			http_inflight_give(srv, s->slot);
	}
	if (!c) {
		if (init || modern)
			http_sess_close(srv, s);
		http_sess_unref(s);
		return ret;
	}
	/* One lock for entering the session and counting the call. */
	pthread_mutex_lock(&s->lock);
	if (s->ended || !s->ms) {
		pthread_mutex_unlock(&s->lock);
		free(c);
		http_inflight_give(srv, s->slot);
		http_sess_unref(s);
		return transport_rpc_error(conn, 404, -32001, NULL, NULL,
					   "Session not found: it has ended; initialize a new "
					   "session");
	}
	s->users++;
	s->calls++;
	s->requests++;
	s->last_used = transport_mono_s();
	pthread_mutex_unlock(&s->lock);
	c->sess = s; /* takes our session reference */
	c->conn = conn;
	c->refs = 2;
	c->init = init;
	c->modern = modern;
	c->counted = 1;
	atomic_fetch_add(&srv->inflight, 1);
	rq->call = c;
	return post_answer(srv, conn, rq, c, mcp_session_handle(s->ms, rq->body, rq->len, c));
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
	enum MHD_Result answer;
	const char *last;
	struct hsess *s;
	struct hcall *c;

	if (!transport_accepts(transport_header(conn, MHD_HTTP_HEADER_ACCEPT), "text/event-stream"))
		return transport_rpc_error(
			conn, 406, -32000, NULL, NULL,
			"Not Acceptable: GET /mcp opens an SSE stream; Accept must "
			"include text/event-stream");
	s = named_session(srv, conn, rq, &answer);
	if (!s)
		return answer;
	c = calloc(1, sizeof(*c));
	if (!c) {
		http_sess_unref(s);
		return MHD_NO;
	}
	pthread_mutex_lock(&s->lock);
	if (s->ended) {
		pthread_mutex_unlock(&s->lock);
		free(c);
		http_sess_unref(s);
		return transport_rpc_error(conn, 404, -32001, NULL, NULL,
					   "Session not found: it has ended");
	}
	if ((last = transport_header(conn, "Last-Event-ID")) != NULL) {
		struct hcall *o = resume_find(s, last);
		if (o) {
			/* The orphan's reference becomes this connection's; the
			 * session reference from http_sess_find is not needed. */
			o->conn = conn;
			rq->call = o;
			rq->kind = RQ_ANSWERED;
			pthread_mutex_unlock(&s->lock);
			free(c);
			http_sess_unref(s);
			log_debug("http", "session %.8s...: stream %u resumed after %s", s->id,
				  o->stream, last);
			return http_queue_sse(o, NULL);
		}
	}
	if (s->get) {
		pthread_mutex_unlock(&s->lock);
		free(c);
		http_sess_unref(s);
		return transport_rpc_error(conn, 409, -32000, NULL, NULL,
					   "Conflict: this session already has a GET stream open");
	}
	c->sess = s;
	c->conn = conn;
	c->refs = 2; /* the connection and s->get */
	c->get = 1;
	http_sse_start(s, c);
	while (s->bl_head) {
		struct hmsg *m = s->bl_head;
		s->bl_head = m->next;
		http_sse_push(c, m->data, m->len);
		free(m);
	}
	s->bl_tail = NULL;
	s->bl_len = 0;
	s->get = c;
	s->last_ping = s->last_used = transport_mono_s();
	rq->call = c;
	rq->kind = RQ_ANSWERED;
	pthread_mutex_unlock(&s->lock);
	return http_queue_sse(c, NULL);
}

enum MHD_Result http_mcp_delete(struct hsrv *srv, struct MHD_Connection *conn, struct hreq *rq)
{
	enum MHD_Result answer;
	struct hsess *s = named_session(srv, conn, rq, &answer);

	if (!s)
		return answer;
	http_sess_close(srv, s);
	http_sess_unref(s);
	return transport_reply(conn, MHD_HTTP_OK, NULL, "", 0, NULL);
}

void http_mcp_completed(struct hcall *c, int ok)
{
	struct hsess *s = c->sess;
	int freed = 0, freed2 = 0, modern = c->modern;

	if (modern)
		atomic_fetch_add(&s->refs, 1); /* kept for closing it below */
	pthread_mutex_lock(&s->lock);
	c->suspended = 0;
	/* A stateless stream is not resumable: closing it cancels the request. */
	if (!modern && !c->get && c->mode == MODE_SSE && !s->ended && (!c->final || !ok)) {
		/* The stream broke before the answer, or while writing it (a
		 * connection closed while suspended shows only when written to):
		 * keep the call, the connection's reference moving to the orphan
		 * list, for a GET with Last-Event-ID. */
		c->conn = NULL;
		c->detached = 1;
		c->detached_at = transport_mono_s();
		c->onext = s->orphans;
		s->orphans = c;
		pthread_mutex_unlock(&s->lock);
		return;
	}
	c->gone = 1;
	if (c->get && s->get == c) {
		s->get = NULL;
		freed2 = http_call_unref_locked(c);
	}
	if (!freed2)
		freed = http_call_unref_locked(c);
	pthread_mutex_unlock(&s->lock);
	if (freed || freed2)
		http_sess_unref(s);
	if (modern) {
		http_sess_close(s->srv, s);
		http_sess_unref(s);
	}
}

/* --- housekeeping --------------------------------------------------------------- */

/* Expires idle sessions and pings idle GET streams (a dead peer shows up
 * as a failed write). Runs on the thread of transport_http_run. */
void http_housekeep(struct hsrv *srv)
{
	struct hsess *expired[64];
	size_t n = 0;
	time_t now = transport_mono_s();

	pthread_mutex_lock(&srv->lock);
	for (size_t b = 0; b < HTTP_BUCKETS; b++) {
		for (struct hsess *s = srv->buckets[b]; s; s = s->next) {
			size_t freed;
			pthread_mutex_lock(&s->lock);
			freed = http_orphans_drop(s, now - HTTP_ORPHAN_S);
			if (s->get && now - s->last_ping >= HTTP_KEEPALIVE_S) {
				s->last_ping = now;
				http_sse_raw(s->get, ": keepalive\n\n", 13);
				http_wake(s->get);
			}
			if (!s->get && s->calls == 0 && now - s->last_used >= (time_t)srv->idle_s &&
			    n < sizeof(expired) / sizeof(expired[0])) {
				atomic_fetch_add(&s->refs, 1);
				expired[n++] = s;
			}
			pthread_mutex_unlock(&s->lock);
			while (freed--)
				http_sess_unref(s); /* never the last: the table holds one */
		}
	}
	pthread_mutex_unlock(&srv->lock);
	for (size_t i = 0; i < n; i++) {
		log_info("http", "session %.8s... expired after %u s idle", expired[i]->id,
			 srv->idle_s);
		http_sess_close(srv, expired[i]);
		http_sess_unref(expired[i]);
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
		http_sess_close(srv, s);
		http_sess_unref(s);
	}
}
