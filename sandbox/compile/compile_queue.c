/* compile_queue: per-client FIFOs served round robin. A waiter lives on
 * its caller's stack; the one who frees a slot (or arrives) grants it to
 * the next waiter in place (pump), so the order is decided under one lock
 * and never by which thread wakes first. Clients are kept only while they
 * run or wait: the list stays as short as the number of active clients. */
#include "sandbox/compile/compile_queue.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct qclient {
	char key[COMPILE_QUEUE_KEY_BYTES];
	int running, waiting;
	uint64_t served; /* tick of its last grant; 0 = never */
	struct qclient *next;
};

struct qwaiter {
	struct qclient *c;
	int granted;
	struct qwaiter *next;
};

struct compile_queue {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* a grant was made */
	struct compile_queue_limits lim;
	int running;
	uint64_t tick;
	struct qclient *clients;
	struct qwaiter *head; /* arrival order */
};

int compile_queue_new(const struct compile_queue_limits *lim, struct compile_queue **out,
		      struct kf_err *err)
{
	*out = NULL;
	if (lim->slots < 1)
		return kf_err_set(err, KF_EINVAL, "compile queue: slots %d, expected >= 1",
				  lim->slots);
	if (lim->client_slots < 1 || lim->client_slots > lim->slots)
		return kf_err_set(err, KF_EINVAL,
				  "compile queue: client_slots %d, expected 1..%d (the slots)",
				  lim->client_slots, lim->slots);
	if (lim->client_waiting < 1)
		return kf_err_set(err, KF_EINVAL, "compile queue: client_waiting %d, expected >= 1",
				  lim->client_waiting);
	struct compile_queue *q = calloc(1, sizeof *q);
	if (!q)
		return kf_err_set(err, KF_ENOMEM, "compile queue: out of memory");
	q->lim = *lim;
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	*out = q;
	return 0;
}

void compile_queue_free(struct compile_queue *q)
{
	if (!q)
		return;
	while (q->clients) {
		struct qclient *c = q->clients;
		q->clients = c->next;
		free(c);
	}
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->cv);
	free(q);
}

static void key_of(const char *client, char key[COMPILE_QUEUE_KEY_BYTES])
{
	snprintf(key, COMPILE_QUEUE_KEY_BYTES, "%s", client ? client : "");
}

static struct qclient *find(struct compile_queue *q, const char *key)
{
	for (struct qclient *c = q->clients; c; c = c->next)
		if (!strcmp(c->key, key))
			return c;
	return NULL;
}

/* Drops c once it neither runs nor waits. */
static void drop_idle(struct compile_queue *q, struct qclient *c)
{
	if (c->running || c->waiting)
		return;
	for (struct qclient **pp = &q->clients; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			free(c);
			return;
		}
}

static void unlink_waiter(struct compile_queue *q, struct qwaiter *w)
{
	for (struct qwaiter **pp = &q->head; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			return;
		}
}

/* Grants free slots: each to the first waiter of the client served least
 * recently among those under their own cap. */
static void pump(struct compile_queue *q)
{
	int granted = 0;
	while (q->running < q->lim.slots) {
		struct qwaiter *best = NULL;
		for (struct qwaiter *w = q->head; w; w = w->next)
			if ((!w->c->key[0] || w->c->running < q->lim.client_slots) &&
			    (!best || w->c->served < best->c->served))
				best = w;
		if (!best)
			break;
		unlink_waiter(q, best);
		best->granted = 1;
		best->c->waiting--;
		best->c->running++;
		best->c->served = ++q->tick;
		q->running++;
		granted = 1;
	}
	if (granted)
		pthread_cond_broadcast(&q->cv);
}

int compile_queue_take(struct compile_queue *q, const char *client, const volatile int *cancel,
		       struct kf_err *err)
{
	char key[COMPILE_QUEUE_KEY_BYTES];
	int rc = 0;
	key_of(client, key);
	pthread_mutex_lock(&q->mu);
	struct qclient *c = find(q, key);
	if (!c) {
		c = calloc(1, sizeof *c);
		if (!c) {
			pthread_mutex_unlock(&q->mu);
			return kf_err_set(err, KF_ENOMEM, "compile queue: out of memory");
		}
		memcpy(c->key, key, sizeof key);
		c->next = q->clients;
		q->clients = c;
	}
	if (c->key[0] && c->waiting >= q->lim.client_waiting) {
		rc = kf_err_set(err, KF_EBUSY,
				"busy, retry: this client already has %d compiles waiting (at most "
				"%d) and %d running; they run %d at a time",
				c->waiting, q->lim.client_waiting, c->running, q->lim.client_slots);
		drop_idle(q, c);
		pthread_mutex_unlock(&q->mu);
		return rc;
	}
	struct qwaiter w = {.c = c};
	struct qwaiter **tail = &q->head;
	while (*tail)
		tail = &(*tail)->next;
	*tail = &w;
	c->waiting++;
	pump(q);
	while (!w.granted) {
		if (cancel && *cancel) {
			unlink_waiter(q, &w);
			c->waiting--;
			drop_idle(q, c);
			rc = kf_err_set(err, KF_ECANCELED, "compile cancelled while queued");
			break;
		}
		/* The cancel flag is a plain variable: poll it. */
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += 50 * 1000000;
		if (t.tv_nsec >= 1000000000)
			t.tv_sec++, t.tv_nsec -= 1000000000;
		pthread_cond_timedwait(&q->cv, &q->mu, &t);
	}
	pthread_mutex_unlock(&q->mu);
	return rc;
}

void compile_queue_give(struct compile_queue *q, const char *client)
{
	char key[COMPILE_QUEUE_KEY_BYTES];
	key_of(client, key);
	pthread_mutex_lock(&q->mu);
	struct qclient *c = find(q, key);
	if (c && c->running > 0) {
		c->running--;
		q->running--;
		drop_idle(q, c);
		pump(q);
	}
	pthread_mutex_unlock(&q->mu);
}

void compile_queue_count(struct compile_queue *q, const char *client,
			 struct compile_queue_count *all, struct compile_queue_count *mine)
{
	char key[COMPILE_QUEUE_KEY_BYTES];
	key_of(client, key);
	pthread_mutex_lock(&q->mu);
	if (all) {
		all->running = q->running;
		all->waiting = 0;
		for (struct qwaiter *w = q->head; w; w = w->next)
			all->waiting++;
	}
	if (mine) {
		struct qclient *c = find(q, key);
		mine->running = c ? c->running : 0;
		mine->waiting = c ? c->waiting : 0;
	}
	pthread_mutex_unlock(&q->mu);
}
