/* http_stream: GET routes answered piece by piece (transport.h struct
 * http_stream): libmicrohttpd pulls the body from the route's read call as
 * the client takes it, so a large export never sits in memory whole and a
 * slow client holds back only its own response. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/transport/http_int.h"

#define STREAM_BLOCK_BYTES (64u * 1024u) /* libmicrohttpd's buffer per read */

struct stream_resp {
	const struct http_stream *route;
	void *state;
	struct hsrv *srv;
	unsigned slot; /* the client's in-flight counter, held while it streams */
};

static const char *query_value(void *arg, const char *name)
{
	return MHD_lookup_connection_value(arg, MHD_GET_ARGUMENT_KIND, name);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream_resp *s = cls;
	long n = s->route->read(s->state, buf, max);

	(void)pos;
	if (n < 0)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : (ssize_t)n;
}

static void stream_free(void *cls)
{
	struct stream_resp *s = cls;

	s->route->close(s->state);
	http_inflight_give(s->srv, s->slot);
	free(s);
}

int http_stream_serve(struct hsrv *srv, struct MHD_Connection *conn, const char *url,
		      const char *method, const struct hreq *rq, enum MHD_Result *ret)
{
	const struct http_stream *route = NULL;
	struct MHD_Response *r;
	struct stream_resp *s;
	char msg[400] = "";
	int st;

	for (size_t i = 0; i < srv->streams_len && !route; i++)
		if (!strcmp(url, srv->streams[i].path))
			route = &srv->streams[i];
	if (!route)
		return 0;
	if (strcmp(method, "GET") != 0) {
		*ret = transport_rest_error(conn, 405, "method_not_allowed", "Allow", "GET",
					    "%s takes GET", url);
		return 1;
	}
	/* A stream is a request in flight of its client until it ends. */
	if (http_inflight_take(srv, rq->who_slot)) {
		*ret = http_inflight_refuse(srv, conn, rq->who, 0);
		return 1;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		http_inflight_give(srv, rq->who_slot);
		*ret = transport_rest_error(conn, 500, "no_memory", NULL, NULL, "out of memory");
		return 1;
	}
	s->route = route;
	s->srv = srv;
	s->slot = rq->who_slot;
	st = route->open(srv->app, query_value, conn, &s->state, msg, sizeof(msg));
	if (st) {
		http_inflight_give(srv, s->slot);
		free(s);
		*ret = transport_rest_error(conn, (unsigned)st, st == 400 ? "invalid" : "internal",
					    NULL, NULL, "%s", msg[0] ? msg : "cannot start");
		return 1;
	}
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK_BYTES, stream_read, s,
					      stream_free);
	if (!r) {
		stream_free(s);
		*ret = MHD_NO;
		return 1;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, route->mime);
	transport_cors(r, conn);
	*ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return 1;
}
