/* http_int: what the HTTP transport's files share (transport_http.c: the
 * daemon, checks and dispatch; http_conn.c: connections, their deadlines
 * and the upload memory; http_sess.c: the session table, the send
 * callback and SSE buffers; http_mcp.c: the /mcp requests and their calls;
 * http_rest.c: REST jobs under /v1). Included by no one else.
 * Locks: srv.lock (session table) before sess.lock (everything in one
 * session: its calls, its GET stream, its backlog); srv.conn_lock alone. */
#ifndef KF_HTTP_INT_H
#define KF_HTTP_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

#include <microhttpd.h>

#include "server/mcp/mcp.h"
#include "server/transport/http_guard.h"
#include "server/transport/rest.h"
#include "server/transport/transport.h"

#define HTTP_SID_BYTES		16		     /* random bytes in a session id */
#define HTTP_SID_LEN		(HTTP_SID_BYTES * 2) /* hex characters */
#define HTTP_BUCKETS		4096		     /* session hash buckets */
#define HTTP_DEFAULT_BODY	(8u << 20)	     /* bytes */
#define HTTP_DEFAULT_IDLE_S	1800
#define HTTP_DEFAULT_SESSIONS	1024
#define HTTP_DEFAULT_INFLIGHT	1024
#define HTTP_DEFAULT_PER_CLIENT 64	    /* MCP sessions per client address */
#define HTTP_DEFAULT_PER_IP	256	    /* connections from one address */
#define HTTP_DEFAULT_REQUEST_S	30	    /* a request's header and body arrive within */
#define HTTP_DEFAULT_UPLOADS	(64u << 20) /* bytes of request bodies held at once */
#define HTTP_CONN_IDLE_S	120	    /* MHD's idle timeout (keep-alive, slow readers) */
#define HTTP_LIMIT_LOG_S	10	    /* one "connection limit" warning per */
#define HTTP_CLIENT_LEN		48	    /* a peer address as text */
#define HTTP_REST_MAX		64	    /* REST tool calls at once */
#define HTTP_BACKLOG_MAX	256	    /* unrouted messages kept per session */
#define HTTP_KEEPALIVE_S	15	    /* SSE comment on idle GET streams */
#define HTTP_SSE_RETRY_MS	1000
#define HTTP_REPLAY_MAX		64  /* written events kept per stream */
#define HTTP_ORPHAN_S		120 /* a lost stream waits this long */
#define HTTP_TOKEN_MAX		512 /* bytes of a secret, with its NUL */

/* Bearer tokens and the per-client counters. */
#define HTTP_TOKEN_MIN	     16	  /* bytes of a secret at least */
#define HTTP_TOKEN_NAME_MAX  32	  /* characters of a token's name */
#define HTTP_TOKENS_MAX	     256  /* tokens in all (--token-env + --token-file) */
#define HTTP_ADDR_SLOTS	     1024 /* per-address counters (a hash of the address) */
#define HTTP_CLIENT_INFLIGHT 256  /* MCP + REST requests in flight per client */

/* --- types --------------------------------------------------------------------- */

/* A bearer token: the name is the client's identity in caps and logs. */
struct http_token {
	char name[HTTP_TOKEN_NAME_MAX + 1];
	char secret[HTTP_TOKEN_MAX];
	size_t secret_len;
};

struct hmsg {
	struct hmsg *next;
	unsigned long long seq; /* the event's number in its stream; 0: none */
	size_t len;		/* bytes in data */
	char data[];
};

enum call_mode { MODE_UNDECIDED = 0, MODE_JSON, MODE_SSE };

/* One POST request waiting for its answer, or the session's GET stream.
 * Refcounted: the connection holds one reference until MHD completes the
 * request, the session one until the final message (or, for the GET
 * stream, until the stream is detached). A POST whose SSE stream loses its
 * connection before the final message is kept on the session's orphan
 * list (the connection's reference moves there) so a GET with
 * Last-Event-ID can resume it. */
struct hcall {
	struct hsess *sess;
	struct MHD_Connection *conn;
	int refs;      /* under sess->lock */
	int get;       /* 1: the session's GET stream */
	int init;      /* 1: the initialize request of a new session */
	int modern;    /* 1: a stateless (2026-07-28) request in a session of
			* its own, ended once the answer is out */
	int final;     /* the final message arrived */
	int suspended; /* the connection is suspended waiting for us */
	int gone;      /* the connection was completed or closed */
	enum call_mode mode;
	char *json; /* MODE_JSON: the final message (owned) */
	size_t json_len;
	struct hmsg *head, *tail; /* MODE_SSE: events, the written ones kept
				   * (at most HTTP_REPLAY_MAX) for a resume */
	struct hmsg *cur;	  /* the next event to write, NULL: none */
	size_t off;		  /* bytes of cur already written */
	size_t kept;		  /* written events still in the list */
	unsigned stream;	  /* MODE_SSE: the stream's number in the session */
	unsigned long long seq;	  /* the last event number used */
	int counted;		  /* holds one of srv->inflight */
	int primed;		  /* MODE_SSE: the priming event was queued */
	int detached;		  /* on the orphan list, waiting for a resume */
	time_t detached_at;	  /* monotonic seconds */
	struct hcall *onext;	  /* the session's orphan list */
};

struct hsess {
	char id[HTTP_SID_LEN + 1];
	char client[HTTP_CLIENT_LEN]; /* who created it: "token:<name>", else the address */
	unsigned slot;		      /* its client's srv->client_inflight counter */
	unsigned long requests;	      /* messages handled; 1: only initialize */
	struct hsrv *srv;
	struct mcp_session *ms;
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* users reaching 0 */
	atomic_int refs;		/* table + each hcall + each handler using it */
	int in_table;			/* under srv->lock */
	int ended;			/* under lock: DELETEd, expired or shut down */
	int users;			/* handlers inside mcp_session_handle */
	unsigned calls;			/* requests waiting for their final message */
	time_t last_used;		/* monotonic seconds */
	time_t last_ping;		/* monotonic seconds of the last keepalive */
	struct hcall *get;		/* the open GET stream, or NULL */
	struct hmsg *bl_head, *bl_tail; /* messages for no request, no stream */
	size_t bl_len;
	unsigned next_stream;  /* SSE stream numbers (event ids are stream-seq) */
	struct hcall *orphans; /* POST streams that lost their connection */
	struct hsess *next;    /* hash chain */
};

/* One TCP connection: MHD's socket_context. */
struct hconn {
	struct hconn *prev, *next; /* srv->conns, under srv->conn_lock */
	int fd;
	int reading;		      /* a request's header or body is still arriving */
	int cut;		      /* shut down for missing its deadline */
	unsigned served;	      /* requests it completed */
	time_t deadline;	      /* monotonic seconds: reading ends by then */
	char client[HTTP_CLIENT_LEN]; /* the peer's address */
};

struct hsrv {
	struct app *app;
	const struct http_stream *streams; /* streamed GET routes, borrowed */
	size_t streams_len;
	struct MHD_Daemon *d;
	size_t max_body;   /* bytes of one request body */
	size_t upload_max; /* bytes of request bodies held at once */
	unsigned idle_s, max_sessions, max_inflight;
	unsigned per_client;	      /* MCP sessions per client (token, else address) */
	unsigned per_client_inflight; /* requests in flight per client */
	unsigned per_ip;	      /* connections per address */
	unsigned conn_limit;	      /* connections in all */
	unsigned request_s;	      /* seconds for a request's header and body */
	struct http_token tokens[HTTP_TOKENS_MAX];
	size_t ntokens;	    /* 0: no auth */
	char bind_host[64]; /* the bound address as a Host value */
	struct http_guard guard;
	char listen[128]; /* "http://127.0.0.1:7070" */
	time_t started;
	pthread_mutex_t lock; /* table, nsess */
	struct hsess *buckets[HTTP_BUCKETS];
	size_t nsess;
	atomic_uint inflight;	  /* MCP requests waiting for their answer */
	atomic_uint rest_slots;	  /* REST tool calls not yet answered */
	atomic_uint rest_running; /* REST worker threads alive */
	atomic_size_t uploads;	  /* bytes reserved by request bodies */
	/* Requests in flight per client: one counter per token, then the
	 * per-address ones (HTTP_ADDR_SLOTS, by a hash of the address). */
	atomic_uint client_inflight[HTTP_TOKENS_MAX + HTTP_ADDR_SLOTS];
	pthread_mutex_t conn_lock; /* conns */
	struct hconn *conns;
	atomic_int stopping;
};

enum req_kind { RQ_NEW = 0, RQ_MCP_POST, RQ_MCP_GET, RQ_REST, RQ_ANSWERED };

struct rest_job;

/* Per-request state: MHD's con_cls. */
struct hreq {
	enum req_kind kind;
	char *body;
	size_t len, cap;
	size_t reserved;	   /* bytes of srv->uploads held for this body */
	int too_big;		   /* past max_body: the body is dropped, 413 */
	int too_busy;		   /* past upload_max: the body is dropped, 503 */
	struct hconn *hc;	   /* the connection's record, or NULL */
	char who[HTTP_CLIENT_LEN]; /* the client: "token:<name>", else the address */
	unsigned who_slot;	   /* its srv->client_inflight counter */
	struct hcall *call;
	struct rest_job *job;
};

struct rest_job {
	struct hsrv *srv;
	struct MHD_Connection *conn;
	pthread_mutex_t lock;
	int refs; /* connection + worker thread */
	int done, suspended;
	struct rest_plan plan;
	int status;
	char *text; /* the answer (owned) */
	size_t text_len;
	const char *allow;
	char who[HTTP_CLIENT_LEN]; /* the client, as hreq's */
	unsigned who_slot;	   /* held in srv->client_inflight while it runs */
};

/* --- transport_http.c ------------------------------------------------------- */

/* Monotonic seconds. */
time_t transport_mono_s(void);

/* The request header name's value, or NULL. Borrowed from MHD. */
const char *transport_header(struct MHD_Connection *c, const char *name);

/* Adds the CORS headers for the request's Origin, when it sent one (only
 * allowed origins get this far). */
void transport_cors(struct MHD_Response *r, struct MHD_Connection *c);

/* Queues a response with body (copied) and content type (NULL: none);
 * extra headers follow as name, value pairs ending with NULL (a NULL value
 * skips its header). Returns MHD's result. */
enum MHD_Result transport_reply(struct MHD_Connection *c, unsigned status, const char *type,
				const char *body, size_t len, ...);

/* Queues a JSON-RPC error body (id null) for a transport-level failure on
 * /mcp, with one optional extra header. */
enum MHD_Result transport_rpc_error(struct MHD_Connection *c, unsigned status, int code,
				    const char *extra_name, const char *extra_value,
				    const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* Queues a REST error body {"summary", "error": {code, message}}. */
enum MHD_Result transport_rest_error(struct MHD_Connection *c, unsigned status, const char *code,
				     const char *extra_name, const char *extra_value,
				     const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* 1 when the Accept header value allows type; wildcards count. */
int transport_accepts(const char *accept, const char *type);

/* --- http_auth.c ------------------------------------------------------------- */

/* Loads the bearer tokens: the one in $token_env (named after the
 * variable) and every "NAME SECRET" line of token_file (blank lines and #
 * comments skipped; the file may not be accessible to group or others).
 * Either may be NULL. Returns 0, or KF_EINVAL naming the source, the line
 * and what is wrong (never the secret); KF_ENOMEM. */
int http_auth_load(struct hsrv *srv, const char *token_env, const char *token_file,
		   struct kf_err *err);

/* Sets rq->who and rq->who_slot: the token the request's Authorization
 * header carries when the server has tokens, else the peer address.
 * Returns 1, or 0 when the server has tokens and the header names none
 * of them (rq->who is then the address). */
int http_auth_identify(struct hsrv *srv, struct MHD_Connection *conn, struct hreq *rq);

/* who as people read it: "token 'alice'", "client address 10.0.0.7". */
void http_auth_describe(const char *who, char *buf, size_t cap);

/* Counts one request in flight for the client of slot: 0, or -1 (nothing
 * counted) when it already has per_client_inflight. */
int http_inflight_take(struct hsrv *srv, unsigned slot);
void http_inflight_give(struct hsrv *srv, unsigned slot);

/* Queues the 429 for who (hreq's) at its cap of requests in flight: a
 * JSON-RPC error on /mcp (is_mcp), else a REST error; both name the client
 * and --max-inflight-per-client, with Retry-After. */
enum MHD_Result http_inflight_refuse(struct hsrv *srv, struct MHD_Connection *conn, const char *who,
				     int is_mcp);

/* --- http_conn.c ------------------------------------------------------------- */

/* MHD's connection notification (cls: the hsrv): registers a new
 * connection with its address and first deadline, unregisters a closed
 * one. */
void http_conn_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		      enum MHD_ConnectionNotificationCode toe);

/* The connection's record, or NULL (not registered: out of memory).
 * Borrowed, valid while MHD holds the connection. */
struct hconn *http_conn_of(struct MHD_Connection *conn);

/* The connection's peer address as text ("127.0.0.1", "::1", "unknown").
 * Borrowed, valid while MHD holds the connection. */
const char *http_conn_client(struct MHD_Connection *conn);

/* reading 1: a request was completed (answered, early refusals
 * included) and the next one may start arriving, its deadline now +
 * request_s; 0: the request has arrived whole (no deadline while it is
 * answered). hc may be NULL. */
void http_conn_reading(struct hsrv *srv, struct hconn *hc, int reading);

/* 1 when hc is still reading past its deadline. */
int http_conn_late(struct hsrv *srv, struct hconn *hc);

/* Shuts down every connection reading past its deadline. Housekeeping
 * thread. */
void http_conn_sweep(struct hsrv *srv);

/* Reserves bytes of the upload memory cap for rq's body. Returns 0, or -1
 * (nothing reserved) when the cap would be passed. */
int http_upload_reserve(struct hsrv *srv, struct hreq *rq, size_t bytes);

/* Frees rq's body and returns its reservation. */
void http_upload_release(struct hsrv *srv, struct hreq *rq);

/* --- http_mcp.c -------------------------------------------------------------- */

/* POST /mcp with its whole body in rq: hands the message to its session (a
 * new one for initialize) and queues the answer, or suspends the connection
 * until the session sends it. */
enum MHD_Result http_mcp_post(struct hsrv *srv, struct MHD_Connection *conn, struct hreq *rq);

/* http_modern.c. 1 when v (borrowed) is a handshake revision. */
int http_modern_known_legacy(const char *v);
/* 1 when a POST with MCP-Protocol-Version pv and
 * Mcp-Session-Id sid (both borrowed, may be NULL) and body msg (borrowed)
 * takes the stateless path. */
int http_modern_wanted(const char *pv, const char *sid, const json_t *msg);
/* Checks a stateless POST's headers (pv, hmethod, hname: borrowed, may be
 * NULL) against its body msg. Returns 0 to go on, or 1 with *answer a new
 * JSON-RPC error (free with free(); NULL on allocation failure) of *len
 * bytes to send with HTTP 400. */
int http_modern_check(const json_t *msg, const char *pv, const char *hmethod, const char *hname,
		      char **answer, size_t *len);
/* The HTTP status of a stateless answer (json: len bytes, borrowed): 200
 * for a result, 404 for Method not found, 400 for malformed requests and
 * the 2026-07-28 errors, 500 for the rest. */
unsigned http_modern_status(const char *json, size_t len);

/* The handler called again after on_send resumed the connection. */
enum MHD_Result http_mcp_resumed(struct hreq *rq);

/* GET /mcp: opens the session's stream for messages tied to no request. */
enum MHD_Result http_mcp_get(struct hsrv *srv, struct MHD_Connection *conn, struct hreq *rq);

/* DELETE /mcp: ends the session. */
enum MHD_Result http_mcp_delete(struct hsrv *srv, struct MHD_Connection *conn, struct hreq *rq);

/* The request holding c is complete: ok 1 when MHD wrote the whole
 * response, 0 when the connection failed. Drops the connection's reference,
 * or keeps a broken SSE stream for resumption. */
void http_mcp_completed(struct hcall *c, int ok);

/* Expires idle sessions and pings idle GET streams. */
void http_housekeep(struct hsrv *srv);

/* Ends every session (for shutdown): their calls are answered and their
 * GET streams finish, so no connection stays suspended. */
void http_mcp_close_all(struct hsrv *srv);

/* --- http_sess.c ------------------------------------------------------------- */

/* Returns a new session in the table for client (borrowed: hreq's who;
 * slot its in-flight counter) with one reference for the caller. A client at its cap (per_client)
 * gives up its unused or least recently used idle session for it. NULL
 * with *status set: 429 when client holds per_client sessions, all in use;
 * 503 when the table is full; 500 on failure. */
struct hsess *http_sess_create(struct hsrv *srv, const char *client, unsigned slot,
			       unsigned *status);

/* Returns the live session with this id with a reference, or NULL. */
struct hsess *http_sess_find(struct hsrv *srv, const char *id);

/* Drops one reference of s (atomic); frees it at zero. */
void http_sess_unref(struct hsess *s);

/* Ends a session: out of the table, every call cancelled (their final
 * messages still reach their connections), the GET stream finished. Safe
 * to call more than once and from any thread that holds no session lock. */
void http_sess_close(struct hsrv *srv, struct hsess *s);

/* c has its answer, or needs none: it stops counting against the
 * in-flight cap. Under c->sess->lock. */
void http_call_answered_locked(struct hcall *c);

/* Drops one reference of c; frees it at zero. Under c->sess->lock; the
 * caller unrefs the session after unlocking when this returns 1. */
int http_call_unref_locked(struct hcall *c);

/* Drops the orphaned streams detached at or before cutoff (monotonic
 * seconds). Under s->lock; returns how many session references the
 * caller must drop with http_sess_unref after unlocking. */
size_t http_orphans_drop(struct hsess *s, time_t cutoff);

/* SSE on a call, all under sess->lock: make c a stream (its number and,
 * on 2025-11-25 sessions, the priming event), append a "message" event
 * carrying json, append raw text (a comment); http_wake resumes the
 * connection parked on c. */
void http_sse_start(struct hsess *s, struct hcall *c);
void http_sse_push(struct hcall *c, const char *json, size_t len);
void http_sse_raw(struct hcall *c, const char *text, size_t len);
void http_wake(struct hcall *c);

/* Queues c's SSE stream as the response, with the session id header. */
enum MHD_Result http_queue_sse(struct hcall *c, const char *sid);

/* --- http_rest.c ------------------------------------------------------------- */

/* A request under /v1 with its whole body in rq: plans the route and
 * answers at once, or runs the tool on a thread with the connection
 * suspended. */
/* http_stream.c: when method and url name one of srv's streamed routes,
 * answers it (a response read piece by piece from the route's calls; it
 * counts as one of rq's client's requests in flight until it ends) and
 * returns 1 with *ret what queuing returned; 0 when the route is not one. */
int http_stream_serve(struct hsrv *srv, struct MHD_Connection *conn, const char *url,
		      const char *method, const struct hreq *rq, enum MHD_Result *ret);

enum MHD_Result http_rest_start(struct hsrv *srv, struct MHD_Connection *conn, const char *url,
				const char *method, struct hreq *rq);

/* The handler called again once the tool finished. */
enum MHD_Result http_rest_resumed(struct hreq *rq);

/* Drops the connection's reference on a REST job. */
void http_rest_release(struct rest_job *j);

#endif
