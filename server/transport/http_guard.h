/* http_guard: the checks on a request's headers that need nothing but the
 * operator's policy: Host and Origin against DNS rebinding (exact names and
 * addresses, never prefixes) and the Content-Type of a JSON body. Pure
 * functions: no I/O, no allocation, no globals, any bytes in, so the fuzz
 * target tests/fuzz/fuzz_http.c can call them directly. */
#ifndef KF_HTTP_GUARD_H
#define KF_HTTP_GUARD_H

#include <stddef.h>

#include "base/kf_err.h"

#define HTTP_GUARD_VALUE_MAX 512 /* bytes of a Host or Origin value looked at */

/* Who may call. Strings borrowed for the guard's life. */
struct http_guard {
	int any_host;		    /* bound to a wildcard address: every Host is served
				     * (the token guards); Origin is still checked */
	const char *bind_host;	    /* the bound address as a Host name ("10.0.0.5",
				     * "[fd00::1]", "127.0.0.2"), or NULL for a wildcard */
	const char *const *hosts;   /* names given with --allow-host, NULL-terminated,
				     * or NULL */
	const char *const *origins; /* values given with --allow-origin, compared
				     * whole, NULL-terminated, or NULL */
};

/* Whether a request with Host header value host and Origin header value
 * origin (each NULL when the request has none) may be served. A Host is
 * served when its name (the part before an optional :PORT) is exactly
 * localhost, 127.0.0.1, [::1] (or a bare ::1 without a port), the bound
 * address, or a --allow-host name (names compare without case). An Origin
 * is served when absent, when equal to a --allow-origin value, or when it
 * is http:// or https:// followed by such a host and an optional port and
 * nothing else. g borrowed. Returns 0, or KF_EPERM with err naming the
 * refused header, its value (printable ASCII, cut at 80 bytes) and what
 * would pass. */
int http_guard_check(const struct http_guard *g, const char *host, const char *origin,
		     struct kf_err *err) __attribute__((warn_unused_result));

/* 1 when the Content-Type header value ctype is application/json (any
 * case), alone or followed by parameters ("application/json;
 * charset=utf-8"); 0 for anything else, NULL included. */
int http_guard_json_type(const char *ctype);

#endif
