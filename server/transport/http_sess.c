/* http_sess: the MCP sessions of the Streamable HTTP transport: the
 * session table (buckets under srv.lock), the messages each call or GET
 * stream queues (struct hmsg) and their SSE framing, the send callback the
 * sessions (mcp.h) deliver every answer and notification through, and the
 * reader that streams SSE to libmicrohttpd. http_mcp.c drives it per
 * request. Locks: srv.lock before sess.lock; MHD is never called under a
 * session lock. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "server/transport/http_int.h"
#include "base/log.h"

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
void http_sse_push(struct hcall *c, const char *json, size_t len)
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
void http_sse_raw(struct hcall *c, const char *text, size_t len)
{
	struct hmsg *m = hmsg_new(text, len, NULL, 0, NULL, 0);
	if (m)
		sse_append(c, m);
}

/* Makes c an SSE stream: a stream number and, for sessions on revision
 * 2025-11-25 (whose clients expect it), the priming event of SEP-1699: an
 * id and empty data, with a retry hint. Under sess->lock. */
void http_sse_start(struct hsess *s, struct hcall *c)
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
	http_sse_raw(c, buf, (size_t)n);
}

void http_wake(struct hcall *c)
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

void http_sess_unref(struct hsess *s)
{
	if (atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	hmsg_free_all(s->bl_head);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

/* c has its answer (or needs none): it stops counting against the
 * in-flight cap now rather than when MHD completes its connection, which
 * can be after the client has read the answer and sent its next request.
 * Under c->sess->lock. */
void http_call_answered_locked(struct hcall *c)
{
	if (c->counted) {
		c->counted = 0;
		atomic_fetch_sub(&c->sess->srv->inflight, 1);
		http_inflight_give(c->sess->srv, c->sess->slot);
	}
}

/* Drops one reference of c; frees it at zero. Under c->sess->lock; the
 * caller unrefs the session after unlocking when this returns 1. */
int http_call_unref_locked(struct hcall *c)
{
	if (--c->refs > 0)
		return 0;
	http_call_answered_locked(c);
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
			http_sse_push(s->get, json, len);
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
				http_sse_start(s, c);
			}
			http_sse_push(c, json, len);
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
		s->last_used = transport_mono_s();
		http_call_answered_locked(c);
		freed = http_call_unref_locked(c);
	}
	pthread_mutex_unlock(&s->lock);
	if (resume)
		MHD_resume_connection(resume);
	free(copy);
	if (freed)
		http_sess_unref(s);
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

/* Takes s out of the table. Under srv->lock; returns 1 when it was in it
 * (the table's reference is then the caller's to drop with sess_end). */
static int unlink_locked(struct hsrv *srv, struct hsess *s)
{
	struct hsess **pp;

	if (!s->in_table)
		return 0;
	for (pp = &srv->buckets[bucket_of(s->id)]; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	}
	s->in_table = 0;
	srv->nsess--;
	return 1;
}

/* Under srv->lock: the session client should give up for a new one, taken
 * out of the table (its reference passes to the caller), when it holds
 * per_client sessions already: the one that never went past initialize,
 * else the least recently used, among those with no call running and no
 * GET stream; NULL when it holds fewer or none is idle. A flood of
 * initialize calls so replaces only its own unused sessions, and another
 * client keeps getting sessions. *held: sessions client holds. */
static struct hsess *evict_locked(struct hsrv *srv, const char *client, unsigned *held)
{
	struct hsess *best = NULL;
	int best_fresh = 0;
	time_t best_used = 0;

	*held = 0;
	for (size_t b = 0; b < HTTP_BUCKETS; b++) {
		for (struct hsess *s = srv->buckets[b]; s; s = s->next) {
			int idle, fresh;
			if (strcmp(s->client, client) != 0)
				continue;
			(*held)++;
			pthread_mutex_lock(&s->lock);
			/* requests 0: just created, its initialize not yet in. */
			idle = !s->get && s->calls == 0 && s->users == 0 && s->requests > 0;
			fresh = s->requests <= 2; /* initialize, notifications/initialized */
			if (idle && (!best || fresh > best_fresh ||
				     (fresh == best_fresh && s->last_used < best_used))) {
				best = s;
				best_fresh = fresh;
				best_used = s->last_used;
			}
			pthread_mutex_unlock(&s->lock);
		}
	}
	if (*held < srv->per_client || !best)
		return NULL;
	unlink_locked(srv, best);
	(*held)--;
	return best;
}

static void sess_discard(struct hsess *s)
{
	mcp_session_free(s->ms);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

static void sess_end(struct hsess *s);

/* Returns a new session in the table for client (borrowed: the token's
 * key, else the address) with one reference for the caller, or NULL with
 * *status set: 429 when client holds per_client sessions, all in use; 503
 * when the table is full; 500 on failure. */
struct hsess *http_sess_create(struct hsrv *srv, const char *client, unsigned slot,
			       unsigned *status)
{
	struct hsess *s = calloc(1, sizeof(*s)), *victim;
	unsigned b, held;

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
	snprintf(s->client, sizeof(s->client), "%s", client);
	s->slot = slot;
	atomic_init(&s->refs, 2); /* the table and the caller */
	s->last_used = s->last_ping = transport_mono_s();
	s->ms = mcp_session_new(srv->app, on_send, s);
	if (!s->ms) {
		sess_discard(s);
		return NULL;
	}
	pthread_mutex_lock(&srv->lock);
	victim = evict_locked(srv, client, &held);
	if (held >= srv->per_client || srv->nsess >= srv->max_sessions) {
		*status = held >= srv->per_client ? 429 : 503;
		pthread_mutex_unlock(&srv->lock);
		sess_discard(s);
		if (victim)
			sess_end(victim);
		return NULL;
	}
	b = bucket_of(s->id);
	s->next = srv->buckets[b];
	srv->buckets[b] = s;
	s->in_table = 1;
	srv->nsess++;
	pthread_mutex_unlock(&srv->lock);
	if (victim) {
		log_info("http",
			 "session %.8s... of %s ended: a new one came past the %u sessions per "
			 "client (--max-sessions-per-client)",
			 victim->id, client, srv->per_client);
		sess_end(victim);
	}
	return s;
}

/* Returns the live session with this id with a reference, or NULL. */
struct hsess *http_sess_find(struct hsrv *srv, const char *id)
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
 * caller must drop with http_sess_unref after unlocking. */
size_t http_orphans_drop(struct hsess *s, time_t cutoff)
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
		freed += (size_t)http_call_unref_locked(c);
	}
	return freed;
}

/* Everything after unlinking: every call cancelled (their final messages
 * still reach their connections), the GET stream finished, the table's
 * reference dropped. */
static void sess_end(struct hsess *s)
{
	struct mcp_session *ms;
	size_t freed;

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
		http_wake(s->get);
	freed = http_orphans_drop(s, (time_t)1 << 62);
	pthread_mutex_unlock(&s->lock);
	while (freed--)
		http_sess_unref(s);
	http_sess_unref(s); /* the table's reference */
}

/* Ends a session: out of the table, then sess_end. Safe to call more than
 * once and from any thread that holds no session lock. */
void http_sess_close(struct hsrv *srv, struct hsess *s)
{
	int was;

	pthread_mutex_lock(&srv->lock);
	was = unlink_locked(srv, s);
	pthread_mutex_unlock(&srv->lock);
	if (was)
		sess_end(s);
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

enum MHD_Result http_queue_sse(struct hcall *c, const char *sid)
{
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024,
								   sse_read, c, sse_free);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	transport_cors(r, c->conn);
	if (sid)
		MHD_add_response_header(r, "Mcp-Session-Id", sid);
	ret = MHD_queue_response(c->conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}
