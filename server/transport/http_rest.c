/* http_rest: the REST API under /v1 on the HTTP transport: plans the
 * route (rest.c), answers plain routes at once, and runs tool calls on a
 * thread of their own with the connection suspended, so a compile or a
 * benchmark holds no HTTP thread. At most HTTP_REST_MAX run at once. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/transport/http_int.h"

/* --- REST ------------------------------------------------------------------------ */

static const char *query_value(void *arg, const char *name)
{
	return MHD_lookup_connection_value(arg, MHD_GET_ARGUMENT_KIND, name);
}

void http_rest_release(struct rest_job *j)
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

/* listen: the caller's buffer of sizeof(srv->listen) bytes, which
 * info->listen points to (srv->listen is written once the port is known,
 * under srv->lock). */
static void rest_fill_info(struct hsrv *srv, struct rest_info *info, char *listen)
{
	pthread_mutex_lock(&srv->lock);
	info->sessions = srv->nsess;
	memcpy(listen, srv->listen, sizeof(srv->listen));
	pthread_mutex_unlock(&srv->lock);
	info->inflight = atomic_load(&srv->inflight);
	info->uptime_s = (double)(transport_mono_s() - srv->started);
	info->listen = listen;
	info->auth = srv->ntokens > 0;
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
	char listen[sizeof(((struct hsrv *)0)->listen)];
	json_t *body = NULL;
	int status;

	rest_fill_info(j->srv, &info, listen);
	status = rest_run(j->srv->app, &j->plan, &info, &body);
	/* The slot is free before the client can see the answer, or its next
	 * call could find all HTTP_REST_MAX still taken. */
	atomic_fetch_sub(&j->srv->rest_slots, 1);
	http_inflight_give(j->srv, j->who_slot);
	job_finish(j, status, body);
	atomic_fetch_sub(&j->srv->rest_running, 1);
	http_rest_release(j);
	return NULL;
}

static enum MHD_Result rest_answer(struct rest_job *j)
{
	/* Written out: with no memory there is no JSON to build it with. */
	static const char NO_MEMORY[] = "{\"summary\":\"out of memory\",\"error\":{\"code\":"
					"\"no_memory\",\"message\":\"out of memory\"}}";

	if (!j->text)
		return transport_reply(j->conn, 500, "application/json", NO_MEMORY,
				       sizeof NO_MEMORY - 1, NULL);
	return transport_reply(j->conn, (unsigned)j->status, "application/json", j->text,
			       j->text_len, "Allow", j->allow, "Retry-After",
			       j->status == 503 ? "5" : NULL, NULL);
}

enum MHD_Result http_rest_start(struct hsrv *srv, struct MHD_Connection *conn, const char *url,
				const char *method, struct hreq *rq)
{
	struct rest_req req = {method, url, query_value, conn, rq->body, rq->len};
	struct rest_job *j;
	json_t *body = NULL;
	const char *allow = NULL;
	int st;
	pthread_t t;
	pthread_attr_t a;

	if (rq->too_big)
		return transport_rest_error(conn, 413, "too_big", NULL, NULL,
					    "request body too large: the cap is %zu bytes",
					    srv->max_body);
	j = calloc(1, sizeof(*j));
	if (!j)
		return MHD_NO;
	pthread_mutex_init(&j->lock, NULL);
	j->srv = srv;
	j->conn = conn;
	j->refs = 1;
	memcpy(j->who, rq->who, sizeof(j->who));
	j->who_slot = rq->who_slot;
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
		char listen[sizeof(((struct hsrv *)0)->listen)];
		rest_fill_info(srv, &info, listen);
		st = rest_run(srv->app, &j->plan, &info, &body);
		job_finish(j, st, body);
		rq->kind = RQ_ANSWERED;
		return rest_answer(j);
	}
	if (http_inflight_take(srv, j->who_slot)) {
		rq->kind = RQ_ANSWERED;
		return http_inflight_refuse(srv, conn, j->who, 0);
	}
	if (atomic_fetch_add(&srv->rest_slots, 1) >= HTTP_REST_MAX) {
		atomic_fetch_sub(&srv->rest_slots, 1);
		http_inflight_give(srv, j->who_slot);
		rq->kind = RQ_ANSWERED;
		return transport_rest_error(conn, 503, "busy", "Retry-After", "5",
					    "busy: %d REST calls running; retry later",
					    HTTP_REST_MAX);
	}
	/* With tokens a REST call's compiles and GPU jobs count under its
	 * token, as its MCP sessions' do. */
	j->plan.client = srv->ntokens ? j->who : NULL;
	atomic_fetch_add(&srv->rest_running, 1);
	j->refs = 2;
	pthread_mutex_lock(&j->lock);
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, rest_worker, j) != 0) {
		pthread_attr_destroy(&a);
		j->refs = 1;
		pthread_mutex_unlock(&j->lock);
		atomic_fetch_sub(&srv->rest_running, 1);
		atomic_fetch_sub(&srv->rest_slots, 1);
		http_inflight_give(srv, j->who_slot);
		rq->kind = RQ_ANSWERED;
		return transport_rest_error(conn, 503, "busy", "Retry-After", "5",
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

enum MHD_Result http_rest_resumed(struct hreq *rq)
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
