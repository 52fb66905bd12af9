/* http_guard: Host, Origin and Content-Type checks (see http_guard.h).
 * Names are compared whole: a prefix test ("127.") would let a rebinding
 * name such as 127.attacker.example through. */
#include "server/transport/http_guard.h"

#include <string.h>
#include <strings.h>

/* The loopback spellings a browser or client uses for this machine. */
static const char *const LOOPBACK_NAMES[] = {"localhost", "127.0.0.1", "[::1]", NULL};

static int same(const char *a, size_t an, const char *b)
{
	return b && strlen(b) == an && strncasecmp(a, b, an) == 0;
}

/* 1 for ":PORT" with PORT 1-65535 in decimal. */
static int port_ok(const char *p, size_t n)
{
	unsigned long v = 0;

	if (n < 2 || n > 6 || p[0] != ':')
		return 0;
	for (size_t i = 1; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return 0;
		v = v * 10 + (unsigned long)(p[i] - '0');
	}
	return v >= 1 && v <= 65535;
}

/* The name in a Host value or an origin's authority of n bytes: its length
 * with *name set, or 0 when malformed (empty name, bad port, an unclosed
 * bracket). bare_v6: a value with two colons and no brackets is a bare IPv6
 * address without a port (Host only; URLs bracket IPv6). */
static size_t name_of(const char *v, size_t n, int bare_v6, const char **name)
{
	const char *colon;
	size_t len;

	*name = v;
	if (n && v[0] == '[') {
		const char *e = memchr(v, ']', n);
		if (!e)
			return 0;
		len = (size_t)(e - v) + 1;
	} else {
		colon = memchr(v, ':', n);
		if (colon && bare_v6 && memchr(colon + 1, ':', n - (size_t)(colon + 1 - v)))
			return n;
		len = colon ? (size_t)(colon - v) : n;
	}
	if (len == 0 || (len < n && !port_ok(v + len, n - len)))
		return 0;
	return len;
}

/* 1 when name (len bytes; whole: the full value it came from) is loopback,
 * the bound address or an operator's --allow-host name. */
static int name_allowed(const struct http_guard *g, const char *name, size_t len, const char *whole,
			size_t wlen)
{
	for (int i = 0; LOOPBACK_NAMES[i]; i++)
		if (same(name, len, LOOPBACK_NAMES[i]))
			return 1;
	if (same(name, len, "::1") || same(name, len, g->bind_host))
		return 1;
	for (const char *const *h = g->hosts; h && *h; h++)
		if (same(name, len, *h) || same(whole, wlen, *h))
			return 1;
	return 0;
}

/* v as printable ASCII (others and quotes as '?'), cut to fit out. */
static const char *printable(char *out, size_t cap, const char *v)
{
	size_t i;

	for (i = 0; v[i] && i + 1 < cap; i++)
		out[i] = (v[i] >= 0x20 && v[i] < 0x7f && v[i] != '\'') ? v[i] : '?';
	out[i] = '\0';
	return out;
}

static int host_ok(const struct http_guard *g, const char *host)
{
	size_t n, len;
	const char *name;

	if (g->any_host)
		return 1;
	if (!host)
		return 0;
	n = strnlen(host, HTTP_GUARD_VALUE_MAX + 1);
	if (n > HTTP_GUARD_VALUE_MAX)
		return 0;
	len = name_of(host, n, 1, &name);
	return len && name_allowed(g, name, len, host, n);
}

static int origin_ok(const struct http_guard *g, const char *origin)
{
	size_t n, an, len;
	const char *auth, *name;

	if (!origin)
		return 1; /* not a browser: nothing to rebind */
	n = strnlen(origin, HTTP_GUARD_VALUE_MAX + 1);
	if (n > HTTP_GUARD_VALUE_MAX)
		return 0;
	for (const char *const *o = g->origins; o && *o; o++)
		if (same(origin, n, *o))
			return 1;
	if (n > 7 && !strncasecmp(origin, "http://", 7))
		auth = origin + 7;
	else if (n > 8 && !strncasecmp(origin, "https://", 8))
		auth = origin + 8;
	else
		return 0; /* "null" (sandboxed or file: pages) and other schemes */
	an = n - (size_t)(auth - origin);
	if (strpbrk(auth, "/?#@\\"))
		return 0; /* an Origin is scheme://host[:port], nothing more */
	len = name_of(auth, an, 0, &name);
	return len && name_allowed(g, name, len, auth, an);
}

int http_guard_check(const struct http_guard *g, const char *host, const char *origin,
		     struct kf_err *err)
{
	char shown[81];

	if (!host_ok(g, host)) {
		if (!host)
			return kf_err_set(err, KF_EPERM,
					  "Forbidden: the request has no Host header; send Host: "
					  "localhost:PORT");
		return kf_err_set(err, KF_EPERM,
				  "Forbidden: Host '%s' is not allowed (DNS rebinding protection): "
				  "use localhost, 127.0.0.1 or [::1], or start kforge with "
				  "--allow-host NAME",
				  printable(shown, sizeof(shown), host));
	}
	if (!origin_ok(g, origin))
		return kf_err_set(
			err, KF_EPERM,
			"Forbidden: Origin '%s' is not allowed (DNS rebinding protection): "
			"pages on localhost, 127.0.0.1, [::1] or an --allow-host name may "
			"call, or start kforge with --allow-origin ORIGIN",
			printable(shown, sizeof(shown), origin));
	return 0;
}

int http_guard_json_type(const char *ctype)
{
	size_t i = 0;

	if (!ctype)
		return 0;
	while (ctype[i] == ' ' || ctype[i] == '\t')
		i++;
	if (strncasecmp(ctype + i, "application/json", 16) != 0)
		return 0;
	i += 16;
	while (ctype[i] == ' ' || ctype[i] == '\t')
		i++;
	return ctype[i] == '\0' || ctype[i] == ';';
}
