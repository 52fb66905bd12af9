/* web: embeds server/transport/web/index.html (base/embed.h), so the
 * daemon serves the page without reading files at run time. */
#include "server/transport/web.h"

#include "base/embed.h"

EMBED_FILE(kf_web_index, "server/transport/web/index.html");

const char *web_index_html(size_t *len)
{
	*len = (size_t)(kf_web_index_end - kf_web_index_start);
	return kf_web_index_start;
}
