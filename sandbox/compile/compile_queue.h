/* compile_queue: who compiles next. Compiles wait in one FIFO per client
 * (an MCP session, or whatever key the caller names) and free compiler
 * slots go round robin between clients, the one served least recently
 * first; a client runs at most client_slots compiles at once and keeps at
 * most client_waiting waiting. So one client's compile bombs wait behind
 * its own work, not everyone's. The anonymous client (no key: the CLI,
 * callers that name no client) takes its round-robin turns like any other
 * but has no cap of its own. Thread-safe. */
#ifndef KF_COMPILE_QUEUE_H
#define KF_COMPILE_QUEUE_H

#include "base/kf_err.h"

#define COMPILE_QUEUE_KEY_BYTES 64 /* client keys are cut to 63 bytes */

struct compile_queue;

struct compile_queue_limits {
	int slots;	    /* compiler processes at once, all clients (>= 1) */
	int client_slots;   /* at once per client (1..slots) */
	int client_waiting; /* waiting per client before KF_EBUSY (>= 1) */
};

/* Returns 0 and *out (free with compile_queue_free), KF_EINVAL for limits
 * outside the ranges above (err names the field), or KF_ENOMEM. */
int compile_queue_new(const struct compile_queue_limits *lim, struct compile_queue **out,
		      struct kf_err *err) __attribute__((warn_unused_result));

/* Frees q. NULL is a no-op. No slot may be held and no one waiting. */
void compile_queue_free(struct compile_queue *q);

/* Waits until client (borrowed; NULL or "" = the shared anonymous client)
 * may start a compile and takes a slot for it. Returns 0 (give the slot
 * back with compile_queue_give), KF_EBUSY at once when the client already
 * has client_waiting compiles waiting, or KF_ECANCELED when *cancel became
 * nonzero while waiting (cancel may be NULL). */
int compile_queue_take(struct compile_queue *q, const char *client, const volatile int *cancel,
		       struct kf_err *err) __attribute__((warn_unused_result));

/* Gives back a slot compile_queue_take gave client. */
void compile_queue_give(struct compile_queue *q, const char *client);

/* Compiles running and waiting, in all and for client (NULL: all only). */
struct compile_queue_count {
	int running;
	int waiting;
};
void compile_queue_count(struct compile_queue *q, const char *client,
			 struct compile_queue_count *all, struct compile_queue_count *mine);

#endif
