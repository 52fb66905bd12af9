/* web: the page for people, served by the HTTP transport at `/`. One
 * self-contained HTML file (server/transport/web/index.html, no external assets)
 * embedded into the binary at build time; it talks to the REST API. */
#ifndef KF_WEB_H
#define KF_WEB_H

#include <stddef.h>

/* The page's bytes (borrowed, static, not NUL-terminated) and length. */
const char *web_index_html(size_t *len);

#endif
