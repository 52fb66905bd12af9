/* fuzz_http: libFuzzer target for the HTTP request-header checks that run
 * before any body is read (server/transport/http_guard.c): Host and Origin
 * against DNS rebinding, and the JSON Content-Type. The input is one flag
 * byte (bit 0: no Host header, bit 1: no Origin, bits 2-3: the operator's
 * policy) then "HOST\nORIGIN\nCONTENT-TYPE". Oracles, written apart from the
 * code under test: an accepted Host or Origin names exactly one of the
 * allowed hosts (never a prefix such as 127.attacker.example), with at most
 * a decimal port; a refusal is KF_EPERM with a printable message; an
 * accepted Content-Type is application/json, alone or with parameters. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/transport/http_guard.h"

static const char *const HOSTS[] = {"kforge.internal", NULL};
static const char *const ORIGINS[] = {"https://app.example", NULL};

/* The operator policies: loopback only; a bound address with an
 * --allow-host name and an --allow-origin value; any Host. */
static const struct http_guard GUARDS[] = {
	{0, "127.0.0.1", NULL, NULL},
	{0, "10.0.0.5", HOSTS, ORIGINS},
	{1, NULL, NULL, NULL},
	{0, "[fd00::1]", NULL, NULL},
};

/* 1 when s (n bytes) is name, then nothing or ":" and 1-5 digits. */
static int is_name_port(const char *s, size_t n, const char *name)
{
	size_t k = strlen(name);
	if (n < k || strncasecmp(s, name, k) != 0)
		return 0;
	if (n == k)
		return 1;
	if (s[k] != ':' || n - k < 2 || n - k > 6)
		return 0;
	for (size_t i = k + 1; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

/* An authority (n bytes) the policy g allows. */
static int authority_allowed(const struct http_guard *g, const char *s, size_t n, int host_hdr)
{
	static const char *const LOOP[] = {"localhost", "127.0.0.1", "[::1]", NULL};
	for (int i = 0; LOOP[i]; i++)
		if (is_name_port(s, n, LOOP[i]))
			return 1;
	if (host_hdr && n == 3 && !memcmp(s, "::1", 3))
		return 1;
	if (g->bind_host && is_name_port(s, n, g->bind_host))
		return 1;
	for (const char *const *h = g->hosts; h && *h; h++)
		if (is_name_port(s, n, *h))
			return 1;
	return 0;
}

static void check_message(const struct kf_err *err)
{
	assert(err->code == KF_EPERM && err->msg[0]);
	for (const char *p = err->msg; *p; p++)
		assert(*p >= 0x20 && *p < 0x7f);
}

static void check_guard(const struct http_guard *g, const char *host, const char *origin)
{
	struct kf_err err = {0};
	if (http_guard_check(g, host, origin, &err)) {
		check_message(&err);
		return;
	}
	if (!g->any_host) {
		assert(host != NULL);
		assert(authority_allowed(g, host, strlen(host), 1));
	}
	if (!origin)
		return;
	for (const char *const *o = g->origins; o && *o; o++)
		if (!strcasecmp(origin, *o))
			return;
	size_t skip = !strncasecmp(origin, "http://", 7)    ? 7
		      : !strncasecmp(origin, "https://", 8) ? 8
							    : 0;
	assert(skip != 0);
	assert(authority_allowed(g, origin + skip, strlen(origin + skip), 0));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned flags = data[0];
	char *text = strndup((const char *)data + 1, size - 1);
	if (!text)
		return 0;
	char *host = text, *origin = NULL, *ctype = NULL;
	char *nl = strchr(host, '\n');
	if (nl) {
		*nl = '\0';
		origin = nl + 1;
		if ((nl = strchr(origin, '\n')) != NULL) {
			*nl = '\0';
			ctype = nl + 1;
		}
	}
	if (flags & 1)
		host = NULL;
	if (flags & 2)
		origin = NULL;
	check_guard(&GUARDS[(flags >> 2) & 3], host, origin);

	int json = http_guard_json_type(ctype);
	assert(json == 0 || json == 1);
	if (ctype && !strcasecmp(ctype, "application/json"))
		assert(json == 1);
	if (json) {
		const char *p = ctype + strspn(ctype, " \t");
		assert(!strncasecmp(p, "application/json", 16));
		p += 16;
		p += strspn(p, " \t");
		assert(*p == '\0' || *p == ';');
	}
	free(text);
	return 0;
}
