/* http_conn: the TCP connections of the HTTP transport (MHD's
 * socket_context, struct hconn): each one's peer address and the deadline
 * by which a request's header and body must have arrived, and the memory
 * request bodies hold across all connections. MHD's own timeout is an
 * idle timer that a client sending one byte a minute resets forever; the
 * deadline is absolute. The sweep runs on the housekeeping thread and
 * shuts a late connection's socket down, so MHD closes it on its own
 * thread (the fd stays open until MHD's close notification, which takes
 * the registry lock first). */
#include <arpa/inet.h>
#include <stdio.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "server/transport/http_int.h"
#include "base/log.h"

static void addr_text(const struct sockaddr *sa, char *out, size_t cap)
{
	snprintf(out, cap, "unknown");
	if (!sa)
		return;
	if (sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out,
			  (socklen_t)cap);
	else if (sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr,
			  out, (socklen_t)cap);
}

void http_conn_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
		      enum MHD_ConnectionNotificationCode toe)
{
	struct hsrv *srv = cls;
	struct hconn *hc = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fi =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *ai =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

		hc = calloc(1, sizeof(*hc));
		if (!hc)
			return; /* untracked: MHD's idle timeout still ends it */
		hc->fd = fi ? fi->connect_fd : -1;
		addr_text(ai ? ai->client_addr : NULL, hc->client, sizeof(hc->client));
		hc->reading = 1;
		hc->deadline = transport_mono_s() + (time_t)srv->request_s;
		pthread_mutex_lock(&srv->conn_lock);
		hc->next = srv->conns;
		if (srv->conns)
			srv->conns->prev = hc;
		srv->conns = hc;
		pthread_mutex_unlock(&srv->conn_lock);
		*socket_context = hc;
		return;
	}
	if (!hc)
		return;
	pthread_mutex_lock(&srv->conn_lock);
	if (hc->prev)
		hc->prev->next = hc->next;
	else
		srv->conns = hc->next;
	if (hc->next)
		hc->next->prev = hc->prev;
	pthread_mutex_unlock(&srv->conn_lock);
	free(hc);
	*socket_context = NULL;
}

struct hconn *http_conn_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *i =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return i ? i->socket_context : NULL;
}

const char *http_conn_client(struct MHD_Connection *conn)
{
	struct hconn *hc = http_conn_of(conn);
	return hc ? hc->client : "unknown";
}

void http_conn_reading(struct hsrv *srv, struct hconn *hc, int reading)
{
	if (!hc)
		return;
	pthread_mutex_lock(&srv->conn_lock);
	if (reading) {
		hc->served++;
		hc->deadline = transport_mono_s() + (time_t)srv->request_s;
	}
	hc->reading = reading;
	pthread_mutex_unlock(&srv->conn_lock);
}

int http_conn_late(struct hsrv *srv, struct hconn *hc)
{
	int late;

	if (!hc)
		return 0;
	pthread_mutex_lock(&srv->conn_lock);
	late = hc->reading && transport_mono_s() >= hc->deadline;
	pthread_mutex_unlock(&srv->conn_lock);
	return late;
}

void http_conn_sweep(struct hsrv *srv)
{
	time_t now = transport_mono_s();
	unsigned fresh = 0, idle = 0;

	pthread_mutex_lock(&srv->conn_lock);
	for (struct hconn *hc = srv->conns; hc; hc = hc->next) {
		if (!hc->reading || hc->cut || now < hc->deadline || hc->fd < 0)
			continue;
		/* MHD sees end of file and closes it; the fd stays valid
		 * until the close notification, which waits for this lock. */
		shutdown(hc->fd, SHUT_RDWR);
		hc->cut = 1;
		if (hc->served)
			idle++;
		else
			fresh++;
	}
	pthread_mutex_unlock(&srv->conn_lock);
	/* A kept-alive connection with no next request is routine; one that
	 * never delivered a whole request is a slow or stalled client. */
	if (fresh)
		log_info("http",
			 "closed %u connection(s) whose request did not arrive within %u s "
			 "(--request-timeout)",
			 fresh, srv->request_s);
	if (idle)
		log_debug("http", "closed %u kept-alive connection(s) idle for %u s", idle,
			  srv->request_s);
}

int http_upload_reserve(struct hsrv *srv, struct hreq *rq, size_t bytes)
{
	size_t cur = atomic_load(&srv->uploads);

	do {
		if (bytes > srv->upload_max || cur > srv->upload_max - bytes)
			return -1;
	} while (!atomic_compare_exchange_weak(&srv->uploads, &cur, cur + bytes));
	rq->reserved += bytes;
	return 0;
}

void http_upload_release(struct hsrv *srv, struct hreq *rq)
{
	if (rq->reserved)
		atomic_fetch_sub(&srv->uploads, rq->reserved);
	rq->reserved = 0;
	free(rq->body);
	rq->body = NULL;
	rq->len = rq->cap = 0;
}
