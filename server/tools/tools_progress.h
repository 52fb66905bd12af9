/* tools_progress: a domain job's progress callback forwarded to the MCP
 * client. Jobs report from several threads and may repeat or step back a
 * value; the client must see strictly increasing progress. */
#ifndef KF_TOOLS_PROGRESS_H
#define KF_TOOLS_PROGRESS_H

#include <pthread.h>

#include "server/mcp/tools.h"

struct tools_progress {
	struct tool_ctx *ctx; /* borrowed: the call being reported */
	pthread_mutex_t mu;
	double last; /* the last value sent */
};

#define TOOLS_PROGRESS_INIT(c)                              \
	{                                                   \
		.ctx = (c), .mu = PTHREAD_MUTEX_INITIALIZER \
	}

/* The domain's progress callback: arg is a struct tools_progress. Sends
 * progress (raised just past the last value sent when it does not
 * increase) and message; a total not above progress is sent as unknown. */
void tools_progress_forward(void *arg, double progress, double total, const char *message);

#endif
