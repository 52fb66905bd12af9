/* cli_setup: the first-run commands. `kforge mcp-config` prints the exact
 * registration line or snippet for Claude Code, Codex or an .mcp.json, with
 * the absolute path of this binary, or writes Codex's table into its
 * config.toml in place (cli_toml.c); `kforge skill install` copies SKILL.md
 * and skill/ where each client looks for skills, refusing to overwrite a copy
 * the user changed. Neither opens the app. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/cli/cli.h"
#include "server/cli/cli_toml.h"

#define MANIFEST	     ".kforge-skill-manifest"
#define MAX_SKILL_FILE_BYTES (4u << 20)
#define MAX_SKILL_FILES	     512

/* ---- mcp-config ---------------------------------------------------------- */

static int self_path(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0 || (size_t)n >= len - 1)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* Prints s as a TOML/JSON basic string body (both escape the same way for
 * the characters a path or URL can hold). */
static void put_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* Prints s as one shell word: as is when every character is safe, else in
 * single quotes (a ' inside becomes '\''). */
static void put_shell(FILE *f, const char *s)
{
	if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
			    "_@%+=:,./-") == strlen(s)) {
		fputs(s, f);
		return;
	}
	fputc('\'', f);
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	fputc('\'', f);
}

static const char MCP_CONFIG_USAGE[] =
	"usage: kforge mcp-config claude|codex|json [--http URL] [--token-env VAR]\n"
	"       kforge mcp-config codex --write [--http URL] [--token-env VAR]\n"
	"\n"
	"Prints how to register kforge with an MCP client, using the absolute\n"
	"path of this kforge binary (shell-quoted where it needs it).\n"
	"\n"
	"  claude   the `claude mcp add --scope user` line for Claude Code: kforge\n"
	"           is then there in every directory. Run the line, or eval it.\n"
	"  codex    the [mcp_servers.kforge] table of Codex's config.toml, with\n"
	"           startup and tool timeouts long enough for a benchmark\n"
	"  json     an .mcp.json file (project-scoped servers)\n"
	"\n"
	"  --write          codex: put the table into $CODEX_HOME/config.toml\n"
	"                   (default ~/.codex/config.toml) in place: kforge's table\n"
	"                   is replaced, every other byte kept, and a file that is\n"
	"                   not valid TOML is left alone with the line named\n"
	"  --http URL       register a running `kforge serve --http` at URL\n"
	"                   (e.g. http://127.0.0.1:7070/mcp) instead of stdio\n"
	"  --token-env VAR  the environment variable holding the bearer token the\n"
	"                   server was started with (--token-env there). The token\n"
	"                   itself is never written into a client's config: Claude\n"
	"                   Code and .mcp.json keep ${VAR} and expand it when they\n"
	"                   connect, Codex keeps bearer_token_env_var = \"VAR\" and\n"
	"                   reads VAR when it starts. Set VAR where the client runs.\n"
	"\n"
	"Examples:\n"
	"  eval \"$(kforge mcp-config claude)\"\n"
	"  kforge mcp-config codex --write\n"
	"  eval \"$(kforge mcp-config claude --http http://gpu-box:7070/mcp --token-env KFORGE_TOKEN)\"\n"
	"  kforge mcp-config json --http http://gpu-box:7070/mcp --token-env KFORGE_TOKEN > .mcp.json\n";

/* Benchmarks queue behind other GPU jobs and repeat until their error target:
 * ten minutes covers a full check plus benchmark of a large kernel. */
#define CODEX_TOOL_TIMEOUT_S	600
#define CODEX_STARTUP_TIMEOUT_S 30
#define CODEX_TABLE		"mcp_servers.kforge"

struct mcp_opts {
	const char *client, *url, *token_env;
	int write;
	char exe[PATH_MAX];
};

/* Parses mcp-config's arguments into o. Returns 0 or the usage exit code. */
static int mcp_parse(int argc, char **argv, struct mcp_opts *o)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--http") == 0 && i + 1 < argc)
			o->url = argv[++i];
		else if (strcmp(argv[i], "--token-env") == 0 && i + 1 < argc)
			o->token_env = argv[++i];
		else if (strcmp(argv[i], "--write") == 0)
			o->write = 1;
		else if (argv[i][0] == '-')
			return cli_usage_error("mcp-config", "unknown option '%s'", argv[i]);
		else if (!o->client)
			o->client = argv[i];
		else
			return cli_usage_error("mcp-config", "unexpected argument '%s'", argv[i]);
	}
	if (!o->client)
		return cli_usage_error("mcp-config", "name a client: claude, codex or json");
	if (strcmp(o->client, "claude") && strcmp(o->client, "codex") && strcmp(o->client, "json"))
		return cli_usage_error("mcp-config",
				       "unknown client '%s': expected claude, codex or json",
				       o->client);
	if (o->write && strcmp(o->client, "codex") != 0)
		return cli_usage_error("mcp-config", "--write is for codex; for claude, run the "
						     "printed line");
	if (o->token_env && !o->url)
		return cli_usage_error("mcp-config", "--token-env needs --http URL");
	/* The name is printed inside quotes and ${...}: letters, digits, _ only. */
	if (o->token_env &&
	    (!*o->token_env || (o->token_env[0] >= '0' && o->token_env[0] <= '9') ||
	     strspn(o->token_env,
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
		     strlen(o->token_env)))
		return cli_usage_error(
			"mcp-config",
			"--token-env '%s': expected a variable name like KFORGE_TOKEN",
			o->token_env);
	if (o->url && strncmp(o->url, "http://", 7) != 0 && strncmp(o->url, "https://", 8) != 0)
		return cli_usage_error("mcp-config",
				       "--http '%s': expected an http:// or https:// URL", o->url);
	return 0;
}

static void print_claude(FILE *f, const struct mcp_opts *o)
{
	fputs("claude mcp add --scope user ", f);
	if (!o->url) {
		fputs("kforge -- ", f);
		put_shell(f, o->exe);
		fputs(" serve\n", f);
		return;
	}
	fputs("--transport http kforge ", f);
	put_shell(f, o->url);
	/* Single quotes: the shell leaves ${VAR} alone, Claude Code expands it
	 * each time it connects. */
	if (o->token_env)
		fprintf(f, " --header 'Authorization: Bearer ${%s}'", o->token_env);
	fputc('\n', f);
}

static void print_codex(FILE *f, const struct mcp_opts *o)
{
	fprintf(f, "[%s]\n", CODEX_TABLE);
	if (!o->url) {
		fputs("command = ", f);
		put_quoted(f, o->exe);
		fputs("\nargs = [\"serve\"]\n", f);
	} else {
		fputs("url = ", f);
		put_quoted(f, o->url);
		fputc('\n', f);
		if (o->token_env) {
			fputs("bearer_token_env_var = ", f);
			put_quoted(f, o->token_env);
			fputc('\n', f);
		}
	}
	fprintf(f, "startup_timeout_sec = %d\ntool_timeout_sec = %d\n", CODEX_STARTUP_TIMEOUT_S,
		CODEX_TOOL_TIMEOUT_S);
}

static void print_mcp_json(FILE *f, const struct mcp_opts *o)
{
	fputs("{\n  \"mcpServers\": {\n    \"kforge\": {\n", f);
	if (!o->url) {
		fputs("      \"command\": ", f);
		put_quoted(f, o->exe);
		fputs(",\n      \"args\": [\"serve\"]\n", f);
	} else {
		fputs("      \"type\": \"http\",\n      \"url\": ", f);
		put_quoted(f, o->url);
		if (o->token_env)
			fprintf(f, ",\n      \"headers\": {\"Authorization\": \"Bearer ${%s}\"}",
				o->token_env);
		fputc('\n', f);
	}
	fputs("    }\n  }\n}\n", f);
}

static int mkdirs(const char *path);
static int read_file(const char *path, unsigned char **out, size_t *len);

/* Codex's config file: $CODEX_HOME/config.toml, else ~/.codex/config.toml,
 * through a symlink to its target. Returns 0 or -1 (message printed). */
static int codex_config_path(char *path, size_t cap, char *dir, size_t dcap)
{
	const char *ch = getenv("CODEX_HOME"), *home = getenv("HOME");
	char real[PATH_MAX];
	if (ch && *ch)
		snprintf(dir, dcap, "%s", ch);
	else if (home && *home)
		snprintf(dir, dcap, "%s/.codex", home);
	else {
		fprintf(stderr, "kforge mcp-config: neither $CODEX_HOME nor $HOME is set\n");
		return -1;
	}
	if (snprintf(path, cap, "%s/config.toml", dir) >= (int)cap) {
		fprintf(stderr, "kforge mcp-config: %s: path too long\n", dir);
		return -1;
	}
	if (realpath(path, real) && strlen(real) < cap)
		snprintf(path, cap, "%s", real);
	return 0;
}

/* Writes len bytes of text to path through a temporary file beside it and a
 * rename, with mode. Returns 0 or -1 with errno set. */
static int write_atomically(const char *path, const char *text, size_t len, mode_t mode)
{
	char tmp[PATH_MAX + 32];
	if (snprintf(tmp, sizeof tmp, "%s.kforge-%d", path, (int)getpid()) >= (int)sizeof tmp) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd < 0)
		return -1;
	size_t off = 0;
	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);
		if (n <= 0) {
			int e = errno;
			close(fd);
			unlink(tmp);
			errno = e;
			return -1;
		}
		off += (size_t)n;
	}
	if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	return 0;
}

/* kforge mcp-config codex --write. */
static int write_codex(const struct mcp_opts *o)
{
	char path[PATH_MAX], dir[PATH_MAX], *block = NULL, *out = NULL;
	unsigned char *doc = NULL;
	size_t blen = 0, len = 0, out_len = 0;
	struct stat st;
	struct kf_err err = {0};
	int replaced = 0, rc = CLI_EXIT_ENV;

	if (codex_config_path(path, sizeof path, dir, sizeof dir) != 0)
		return CLI_EXIT_ENV;
	FILE *mf = open_memstream(&block, &blen);
	if (!mf)
		return CLI_EXIT_FAIL;
	print_codex(mf, o);
	fclose(mf);
	mode_t mode = stat(path, &st) == 0 ? st.st_mode & 0777 : 0600;
	if (read_file(path, &doc, &len) != 0 && errno != ENOENT) {
		fprintf(stderr, "kforge mcp-config: cannot read %s: %s\n", path, strerror(errno));
		goto out;
	}
	if (cli_toml_set_table(doc ? (const char *)doc : "", len, CODEX_TABLE, block, &out,
			       &out_len, &replaced, &err)) {
		fprintf(stderr,
			"kforge mcp-config: %s %s; the file is unchanged. Fix it (or move "
			"it away) and run again.\n",
			path, err.msg);
		rc = CLI_EXIT_FAIL;
		goto out;
	}
	if (doc && out_len == len && memcmp(out, doc, len) == 0) {
		printf("%s already has this [%s] table; nothing changed\n", path, CODEX_TABLE);
		rc = CLI_EXIT_OK;
		goto out;
	}
	if (mkdirs(dir) != 0 || write_atomically(path, out, out_len, mode) != 0) {
		fprintf(stderr, "kforge mcp-config: cannot write %s: %s\n", path, strerror(errno));
		goto out;
	}
	if (replaced > 1)
		printf("replaced the %d [%s] tables in %s with one\n", replaced, CODEX_TABLE, path);
	else
		printf("%s [%s] in %s\n", replaced ? "replaced" : "added", CODEX_TABLE, path);
	rc = CLI_EXIT_OK;
out:
	free(block);
	free(doc);
	free(out);
	return rc;
}

static int run_mcp_config(int argc, char **argv)
{
	struct mcp_opts o = {0};
	int rc = mcp_parse(argc, argv, &o);
	if (rc)
		return rc;
	if (self_path(o.exe, sizeof(o.exe)) != 0) {
		fprintf(stderr, "kforge mcp-config: cannot resolve this binary's path: %s\n",
			strerror(errno));
		return CLI_EXIT_ENV;
	}
	if (o.write)
		return write_codex(&o);
	if (strcmp(o.client, "claude") == 0)
		print_claude(stdout, &o);
	else if (strcmp(o.client, "codex") == 0)
		print_codex(stdout, &o);
	else
		print_mcp_json(stdout, &o);
	return CLI_EXIT_OK;
}

/* ---- skill install ------------------------------------------------------- */

/* FNV-1a 64: detects a file the user edited since we installed it; not a
 * security boundary (the user owns both copies). */
static uint64_t fnv1a(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* Reads a whole file of at most MAX_SKILL_FILE_BYTES. Returns 0 and a new
 * buffer in *out (free with free), -1 with errno set. */
static int read_file(const char *path, unsigned char **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f)
		return -1;
	for (;;) {
		if (n == cap) {
			if (cap >= MAX_SKILL_FILE_BYTES) {
				errno = EFBIG;
				goto fail;
			}
			cap = cap ? cap * 2 : 8192;
			unsigned char *nb = realloc(buf, cap);
			if (!nb)
				goto fail;
			buf = nb;
		}
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f))
		goto fail;
	fclose(f);
	*out = buf;
	*len = n;
	return 0;
fail:
	free(buf);
	fclose(f);
	return -1;
}

struct skill_file {
	char rel[PATH_MAX / 4]; /* path relative to the skill root */
	uint64_t hash;
};

/* The list of files under the source skill, filled by nftw. */
static struct {
	char root[PATH_MAX];
	size_t root_len;
	struct skill_file *files;
	size_t len;
	int overflow;
} walk;

static int collect(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type != FTW_F)
		return 0;
	if (walk.len == MAX_SKILL_FILES) {
		walk.overflow = 1;
		return 1;
	}
	const char *rel = path + walk.root_len;
	while (*rel == '/')
		rel++;
	snprintf(walk.files[walk.len].rel, sizeof(walk.files[0].rel), "%s", rel);
	walk.len++;
	return 0;
}

/* 0 when an snprintf that returned n fit in len bytes, else -1. */
static int fits(int n, size_t len)
{
	return n >= 0 && (size_t)n < len ? 0 : -1;
}

/* Finds the skill to install: $KFORGE_SKILL_DIR, the source tree above
 * build/, or share/kforge/skill beside an installed bin/. */
static int find_skill_source(char *out, size_t len)
{
	const char *env = getenv("KFORGE_SKILL_DIR");
	char exe[PATH_MAX], probe[PATH_MAX + 64];
	struct stat st;

	if (env && *env)
		return fits(snprintf(out, len, "%s", env), len);
	if (self_path(exe, sizeof(exe)) != 0)
		return -1;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	snprintf(probe, sizeof(probe), "%s/../SKILL.md", exe);
	if (stat(probe, &st) == 0)
		return fits(snprintf(out, len, "%s/..", exe), len);
	snprintf(probe, sizeof(probe), "%s/../share/kforge/skill/SKILL.md", exe);
	if (stat(probe, &st) == 0)
		return fits(snprintf(out, len, "%s/../share/kforge/skill", exe), len);
	return -1;
}

static int mkdirs(const char *path)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

/* Lists the files the manifest in dest records, with their hashes at install
 * time. Returns the count, 0 when there is no manifest, -1 on a bad one. */
static int read_manifest(const char *dest, struct skill_file *files, size_t max)
{
	char path[PATH_MAX + 64], line[PATH_MAX];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "%s/%s", dest, MANIFEST);
	f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 0 : -1;
	while (fgets(line, sizeof(line), f)) {
		char *sp = strchr(line, ' ');
		if (!sp || (size_t)n == max) {
			fclose(f);
			return -1;
		}
		*sp = '\0';
		line[strcspn(sp + 1, "\n") + (size_t)(sp + 1 - line)] = '\0';
		files[n].hash = strtoull(line, NULL, 16);
		snprintf(files[n].rel, sizeof(files[n].rel), "%s", sp + 1);
		n++;
	}
	fclose(f);
	return n;
}

static const char SKILL_USAGE[] =
	"usage: kforge skill install [--claude | --codex | --agents | --dest DIR]\n"
	"                            [--global] [--force]\n"
	"\n"
	"Installs the kforge agent skill (SKILL.md with skill/) where a client\n"
	"looks for skills:\n"
	"  --claude   .claude/skills/kforge   (--global: ~/.claude/skills/kforge)\n"
	"  --codex    .codex/skills/kforge    (--global: ~/.codex/skills/kforge)\n"
	"  --agents   .agents/skills/kforge   (--global: ~/.agents/skills/kforge)\n"
	"             (the default)\n"
	"  --dest DIR exactly DIR\n"
	"Project paths are relative to the current directory.\n"
	"\n"
	"A reinstall replaces the files it installed before. If you changed one\n"
	"of them, or the folder holds a skill kforge did not install, it stops\n"
	"and names the file; --force overwrites.\n";

/* The folder to install into: DIR, ~/.CLIENT/skills/kforge (global) or
 * .CLIENT/skills/kforge. Returns 0 or an exit code (message printed). */
static int skill_dest(const char *client, const char *dest_arg, int global, char *dest, size_t cap)
{
	if (dest_arg && global)
		return cli_usage_error("skill", "--dest and --global exclude each other");
	if (dest_arg) {
		snprintf(dest, cap, "%s", dest_arg);
	} else if (global) {
		const char *home = getenv("HOME");
		if (!home || !*home) {
			fprintf(stderr, "kforge skill: --global needs $HOME\n");
			return CLI_EXIT_ENV;
		}
		snprintf(dest, cap, "%s/.%s/skills/kforge", home, client);
	} else {
		snprintf(dest, cap, ".%s/skills/kforge", client);
	}
	return 0;
}

/* Lists SKILL.md, then everything under src/skill, into walk.files (which
 * holds MAX_SKILL_FILES). Returns 0 or -1 (message printed). */
static int skill_collect(const char *src)
{
	char skill_dir[PATH_MAX + 8];
	walk.len = 0;
	walk.overflow = 0;
	snprintf(walk.files[walk.len++].rel, sizeof(walk.files[0].rel), "SKILL.md");
	snprintf(walk.root, sizeof(walk.root), "%s", src);
	walk.root_len = strlen(src);
	snprintf(skill_dir, sizeof(skill_dir), "%s/skill", src);
	if (nftw(skill_dir, collect, 16, FTW_PHYS) != 0 && !walk.overflow) {
		fprintf(stderr, "kforge skill: cannot read %s: %s\n", skill_dir, strerror(errno));
		return -1;
	}
	if (walk.overflow) {
		fprintf(stderr, "kforge skill: more than %d files under %s\n", MAX_SKILL_FILES,
			skill_dir);
		return -1;
	}
	return 0;
}

/* Refuses to clobber edits: every file already in dest must be one kforge
 * installed (listed in the manifest, read into old) and unchanged since.
 * Returns 0 or -1 (message printed). */
static int skill_check_edits(const char *dest, struct skill_file *old)
{
	int n_old = read_manifest(dest, old, MAX_SKILL_FILES);
	if (n_old < 0) {
		fprintf(stderr, "kforge skill: %s/%s is unreadable; use --force to overwrite\n",
			dest, MANIFEST);
		return -1;
	}
	for (size_t i = 0; i < walk.len; i++) {
		char path[PATH_MAX * 2];
		unsigned char *buf;
		size_t len;
		snprintf(path, sizeof(path), "%s/%s", dest, walk.files[i].rel);
		if (read_file(path, &buf, &len) != 0)
			continue; /* not there yet */
		uint64_t h = fnv1a(buf, len);
		free(buf);
		int known = 0;
		for (int j = 0; j < n_old; j++)
			if (strcmp(old[j].rel, walk.files[i].rel) == 0 && old[j].hash == h)
				known = 1;
		if (!known) {
			fprintf(stderr,
				"kforge skill: %s was changed since kforge installed it "
				"(or kforge did not install it); keeping it. Use --force to overwrite.\n",
				path);
			return -1;
		}
	}
	return 0;
}

/* Copies one listed file from src to dest and records it in the manifest
 * mf. Returns 0 or -1 (message printed). */
static int skill_copy_one(const char *src, const char *dest, const struct skill_file *sf, FILE *mf)
{
	char from[PATH_MAX * 2], to[PATH_MAX * 2];
	unsigned char *buf;
	size_t len;
	snprintf(from, sizeof(from), "%s/%s", src, sf->rel);
	snprintf(to, sizeof(to), "%s/%s", dest, sf->rel);
	if (read_file(from, &buf, &len) != 0) {
		fprintf(stderr, "kforge skill: cannot read %s: %s\n", from, strerror(errno));
		return -1;
	}
	char *slash = strrchr(to, '/');
	*slash = '\0';
	int ok = mkdirs(to) == 0;
	*slash = '/';
	FILE *f = ok ? fopen(to, "wb") : NULL;
	ok = f && fwrite(buf, 1, len, f) == len;
	if (f && fclose(f) != 0)
		ok = 0;
	if (!ok) {
		fprintf(stderr, "kforge skill: cannot write %s: %s\n", to, strerror(errno));
		free(buf);
		return -1;
	}
	fprintf(mf, "%016llx %s\n", (unsigned long long)fnv1a(buf, len), sf->rel);
	free(buf);
	return 0;
}

/* Copies every listed file and writes the manifest. Returns 0 or -1. */
static int skill_copy(const char *src, const char *dest)
{
	char mpath[PATH_MAX + 64];
	snprintf(mpath, sizeof(mpath), "%s/%s", dest, MANIFEST);
	if (mkdirs(dest) != 0) {
		fprintf(stderr, "kforge skill: cannot create %s: %s\n", dest, strerror(errno));
		return -1;
	}
	FILE *mf = fopen(mpath, "w");
	if (!mf) {
		fprintf(stderr, "kforge skill: cannot write %s: %s\n", mpath, strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < walk.len; i++)
		if (skill_copy_one(src, dest, &walk.files[i], mf) != 0) {
			fclose(mf);
			return -1;
		}
	if (fclose(mf) != 0) {
		fprintf(stderr, "kforge skill: cannot write %s: %s\n", mpath, strerror(errno));
		return -1;
	}
	return 0;
}

static int run_skill(int argc, char **argv)
{
	const char *client = "agents", *dest_arg = NULL;
	int global = 0, force = 0, rc = CLI_EXIT_FAIL;
	char src[PATH_MAX], dest[PATH_MAX];
	struct skill_file *old = NULL;

	if (argc < 2 || strcmp(argv[1], "install") != 0)
		return cli_usage_error("skill", "expected 'install'");
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--claude") == 0)
			client = "claude";
		else if (strcmp(argv[i], "--codex") == 0)
			client = "codex";
		else if (strcmp(argv[i], "--agents") == 0)
			client = "agents";
		else if (strcmp(argv[i], "--dest") == 0 && i + 1 < argc)
			dest_arg = argv[++i];
		else if (strcmp(argv[i], "--global") == 0)
			global = 1;
		else if (strcmp(argv[i], "--force") == 0)
			force = 1;
		else
			return cli_usage_error("skill", "unknown option '%s'", argv[i]);
	}
	if ((rc = skill_dest(client, dest_arg, global, dest, sizeof dest)))
		return rc;
	rc = CLI_EXIT_FAIL;
	if (find_skill_source(src, sizeof(src)) != 0) {
		fprintf(stderr, "kforge skill: cannot find SKILL.md to install "
				"(set KFORGE_SKILL_DIR to the folder holding SKILL.md)\n");
		return CLI_EXIT_ENV;
	}
	walk.files = calloc(MAX_SKILL_FILES, sizeof(*walk.files));
	old = calloc(MAX_SKILL_FILES, sizeof(*old));
	if (!walk.files || !old || skill_collect(src) != 0)
		goto out;
	if (!force && skill_check_edits(dest, old) != 0)
		goto out;
	if (skill_copy(src, dest) != 0)
		goto out;
	printf("installed the kforge skill (%zu files) in %s\n", walk.len, dest);
	rc = CLI_EXIT_OK;
out:
	free(old);
	free(walk.files);
	walk.files = NULL;
	return rc;
}

const struct cli_cmd CLI_SETUP[] = {
	{"mcp-config", "print the line that registers kforge in Claude Code, Codex or .mcp.json",
	 MCP_CONFIG_USAGE, run_mcp_config, NULL, NULL},
	{"skill", "install the kforge agent skill for Claude Code, Codex or any agent", SKILL_USAGE,
	 run_skill, NULL, NULL},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
