/* tools_progress: see tools_progress.h. */
#include "server/tools/tools_progress.h"

void tools_progress_forward(void *arg, double progress, double total, const char *message)
{
	struct tools_progress *p = arg;
	pthread_mutex_lock(&p->mu);
	if (progress <= p->last)
		progress = p->last + 0.01;
	p->last = progress;
	mcp_call_progress(p->ctx, progress, total > progress ? total : 0, message);
	pthread_mutex_unlock(&p->mu);
}
