/* http_auth: who an HTTP request is from. With bearer tokens (one from
 * --token-env, any number from --token-file with a name each) a request is
 * its token's: "token:<name>", the key every per-client cap counts under
 * (sessions, requests in flight, the compile queue and GPU jobs), so many
 * agents behind one proxy or login node each get their own share and one
 * cannot starve the others (requests in flight include dataset streams).
 * Without tokens the key is the peer address.
 * Only names reach logs and answers, never a secret. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/transport/http_int.h"
#include "base/log.h"

#define TOKEN_FILE_MAX (1u << 20) /* bytes of a --token-file */

static int name_ok(const char *s, size_t n)
{
	if (n == 0 || n > HTTP_TOKEN_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-')
			return 0;
	return 1;
}

/* Appends one token; where names the source for messages. */
static int add_token(struct hsrv *srv, const char *name, size_t nlen, const char *secret,
		     size_t slen, const char *where, struct kf_err *err)
{
	struct http_token *t;

	if (!name_ok(name, nlen))
		return kf_err_set(err, KF_EINVAL,
				  "%s: token name '%.*s' must be 1 to %d of A-Z a-z 0-9 . _ -",
				  where, (int)(nlen > 40 ? 40 : nlen), name, HTTP_TOKEN_NAME_MAX);
	if (slen < HTTP_TOKEN_MIN || slen >= HTTP_TOKEN_MAX)
		return kf_err_set(err, KF_EINVAL,
				  "%s: the secret of token '%.*s' has %zu bytes; use %d to %d "
				  "(openssl rand -hex 32 makes 64)",
				  where, (int)nlen, name, slen, HTTP_TOKEN_MIN, HTTP_TOKEN_MAX - 1);
	if (srv->ntokens >= HTTP_TOKENS_MAX)
		return kf_err_set(err, KF_EINVAL, "%s: more than %d tokens", where,
				  HTTP_TOKENS_MAX);
	for (size_t i = 0; i < srv->ntokens; i++) {
		t = &srv->tokens[i];
		if (strlen(t->name) == nlen && !memcmp(t->name, name, nlen))
			return kf_err_set(err, KF_EINVAL, "%s: token name '%s' is used twice",
					  where, t->name);
		if (t->secret_len == slen && !memcmp(t->secret, secret, slen))
			return kf_err_set(err, KF_EINVAL,
					  "%s: tokens '%s' and '%.*s' have the same secret; "
					  "each needs its own",
					  where, t->name, (int)nlen, name);
	}
	t = &srv->tokens[srv->ntokens++];
	memcpy(t->name, name, nlen);
	t->name[nlen] = '\0';
	memcpy(t->secret, secret, slen);
	t->secret_len = slen;
	return 0;
}

/* The file's text (new, free with free()), refused when others may read
 * or write it or when it is not a regular file of at most TOKEN_FILE_MAX. */
static int read_token_file(const char *path, char **text, struct kf_err *err)
{
	struct stat st;
	ssize_t n;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*text = NULL;
	if (fd < 0)
		return kf_err_set(err, KF_EINVAL, "--token-file %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > TOKEN_FILE_MAX) {
		close(fd);
		return kf_err_set(err, KF_EINVAL,
				  "--token-file %s: not a regular file of at most %u bytes", path,
				  TOKEN_FILE_MAX);
	}
	if (st.st_mode & 077) {
		close(fd);
		return kf_err_set(err, KF_EINVAL,
				  "--token-file %s: group or others may access it (mode %04o); "
				  "chmod 600 %s",
				  path, (unsigned)(st.st_mode & 07777), path);
	}
	*text = malloc((size_t)st.st_size + 1);
	if (!*text) {
		close(fd);
		return kf_err_set(err, KF_ENOMEM, "--token-file: out of memory");
	}
	while (got < (size_t)st.st_size &&
	       ((n = read(fd, *text + got, (size_t)st.st_size - got)) > 0 || errno == EINTR))
		if (n > 0)
			got += (size_t)n;
	close(fd);
	(*text)[got] = '\0';
	return 0;
}

/* One line of a token file: "NAME SECRET", blank, or a # comment. */
static int token_line(struct hsrv *srv, char *line, const char *path, unsigned ln,
		      struct kf_err *err)
{
	char where[PATH_MAX + 32];
	char *name, *secret, *rest;
	size_t nlen, slen;

	while (*line == ' ' || *line == '\t')
		line++;
	if (!*line || *line == '#')
		return 0;
	snprintf(where, sizeof(where), "--token-file %s line %u", path, ln);
	name = line;
	nlen = strcspn(name, " \t");
	secret = name + nlen;
	secret += strspn(secret, " \t");
	slen = strcspn(secret, " \t");
	rest = secret + slen;
	rest += strspn(rest, " \t");
	if (!slen || *rest)
		return kf_err_set(err, KF_EINVAL, "%s: expected 'NAME SECRET' (two fields), got %s",
				  where, slen ? "more" : "one");
	return add_token(srv, name, nlen, secret, slen, where, err);
}

int http_auth_load(struct hsrv *srv, const char *token_env, const char *token_file,
		   struct kf_err *err)
{
	char *text = NULL, *line, *nl;
	size_t tlen;
	unsigned ln = 0;
	int rc = 0;

	srv->ntokens = 0;
	if (token_env) {
		const char *t = getenv(token_env);
		if (!t || !*t)
			return kf_err_set(err, KF_EINVAL,
					  "--token-env %s: the variable is not set or empty; "
					  "export %s=<a long random token>",
					  token_env, token_env);
		rc = add_token(srv, token_env, strnlen(token_env, HTTP_TOKEN_NAME_MAX + 1), t,
			       strlen(t), "--token-env", err);
		if (rc)
			return rc;
	}
	if (!token_file)
		return 0;
	rc = read_token_file(token_file, &text, err);
	tlen = text ? strlen(text) : 0; /* before the lines are cut at their ends */
	for (line = text; !rc && line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (nl && nl > line && nl[-1] == '\r')
			nl[-1] = '\0';
		rc = token_line(srv, line, token_file, ++ln, err);
	}
	if (!rc && text && srv->ntokens == (token_env ? 1u : 0u))
		rc = kf_err_set(err, KF_EINVAL,
				"--token-file %s: no tokens (one 'NAME SECRET' line each)",
				token_file);
	if (text) {
		explicit_bzero(text, tlen);
		free(text);
	}
	return rc;
}

/* The token whose secret the Authorization value carries, or NULL. Every
 * secret is compared in full whatever the candidate holds, so the time
 * says nothing about how much of a secret matched. */
static const struct http_token *token_of(const struct hsrv *srv, const char *authz)
{
	const struct http_token *hit = NULL;
	const char *t;
	size_t tl;

	if (!authz || strncasecmp(authz, "Bearer ", 7) != 0)
		return NULL;
	t = authz + 7;
	while (*t == ' ')
		t++;
	tl = strlen(t);
	for (size_t k = 0; k < srv->ntokens; k++) {
		const struct http_token *tok = &srv->tokens[k];
		unsigned char d = (unsigned char)(tl != tok->secret_len);
		for (size_t i = 0; i < tok->secret_len; i++)
			d |= (unsigned char)(tok->secret[i] ^ (i < tl ? t[i] : 0));
		if (d == 0)
			hit = tok;
	}
	return hit;
}

/* FNV-1a of the address into one of the per-address counters. */
static unsigned addr_slot(const char *addr)
{
	unsigned h = 2166136261u;
	for (const unsigned char *p = (const unsigned char *)addr; *p; p++)
		h = (h ^ *p) * 16777619u;
	return HTTP_TOKENS_MAX + h % HTTP_ADDR_SLOTS;
}

int http_auth_identify(struct hsrv *srv, struct MHD_Connection *conn, struct hreq *rq)
{
	const struct http_token *tok;
	const char *addr = http_conn_client(conn);

	snprintf(rq->who, sizeof(rq->who), "%s", addr);
	rq->who_slot = addr_slot(addr);
	if (!srv->ntokens)
		return 1;
	tok = token_of(srv, transport_header(conn, MHD_HTTP_HEADER_AUTHORIZATION));
	if (!tok)
		return 0;
	snprintf(rq->who, sizeof(rq->who), "token:%s", tok->name);
	rq->who_slot = (unsigned)(tok - srv->tokens);
	return 1;
}

void http_auth_describe(const char *who, char *buf, size_t cap)
{
	if (!strncmp(who, "token:", 6))
		snprintf(buf, cap, "token '%s'", who + 6);
	else
		snprintf(buf, cap, "client address %s", who);
}

int http_inflight_take(struct hsrv *srv, unsigned slot)
{
	if (atomic_fetch_add(&srv->client_inflight[slot], 1) >= srv->per_client_inflight) {
		atomic_fetch_sub(&srv->client_inflight[slot], 1);
		return -1;
	}
	return 0;
}

void http_inflight_give(struct hsrv *srv, unsigned slot)
{
	atomic_fetch_sub(&srv->client_inflight[slot], 1);
}

enum MHD_Result http_inflight_refuse(struct hsrv *srv, struct MHD_Connection *conn, const char *who,
				     int is_mcp)
{
	char name[HTTP_CLIENT_LEN + 32];

	http_auth_describe(who, name, sizeof(name));
	log_info("http", "429 for %s: %u requests in flight", name, srv->per_client_inflight);
	if (is_mcp)
		return transport_rpc_error(
			conn, 429, -32000, "Retry-After", "1",
			"Too many requests in flight: %s has %u waiting for "
			"their answers, the cap per client (the operator raises "
			"it with --max-inflight-per-client); retry when some are "
			"answered",
			name, srv->per_client_inflight);
	return transport_rest_error(conn, 429, "too_many_requests", "Retry-After", "1",
				    "too many requests in flight: %s has %u waiting for their "
				    "answers, the cap per client (the operator raises it with "
				    "--max-inflight-per-client); retry when some are answered",
				    name, srv->per_client_inflight);
}
