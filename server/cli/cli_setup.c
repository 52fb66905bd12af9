/* cli_setup: the first-run commands. `kforge mcp-config` prints the exact
 * registration line or snippet for Claude Code, Codex or an .mcp.json, with
 * the absolute path of this binary; `kforge skill install` copies SKILL.md
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

static const char MCP_CONFIG_USAGE[] =
	"usage: kforge mcp-config claude|codex|json [--http URL] [--token-env VAR]\n"
	"\n"
	"Prints how to register kforge with an MCP client, using the absolute\n"
	"path of this kforge binary.\n"
	"\n"
	"  claude   the `claude mcp add` line (Claude Code)\n"
	"  codex    the [mcp_servers.kforge] block for ~/.codex/config.toml, with\n"
	"           startup and tool timeouts long enough for a benchmark\n"
	"  json     an .mcp.json file (project-scoped servers)\n"
	"\n"
	"  --http URL        register a running `kforge serve --http` at URL\n"
	"                    (e.g. http://127.0.0.1:7070/mcp) instead of stdio\n"
	"  --token-env VAR   the environment variable holding the bearer token\n"
	"                    the server was started with (--token-env there)\n"
	"\n"
	"Examples:\n"
	"  $(kforge mcp-config claude)\n"
	"  kforge mcp-config codex >> ~/.codex/config.toml\n"
	"  kforge mcp-config json --http http://gpu-box:7070/mcp --token-env KFORGE_TOKEN > .mcp.json\n";

/* Benchmarks queue behind other GPU jobs and repeat until their error target:
 * ten minutes covers a full check plus benchmark of a large kernel. */
#define CODEX_TOOL_TIMEOUT_S	600
#define CODEX_STARTUP_TIMEOUT_S 30

static int run_mcp_config(int argc, char **argv)
{
	const char *client = NULL, *url = NULL, *token_env = NULL;
	char exe[PATH_MAX];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--http") == 0 && i + 1 < argc)
			url = argv[++i];
		else if (strcmp(argv[i], "--token-env") == 0 && i + 1 < argc)
			token_env = argv[++i];
		else if (argv[i][0] == '-')
			return cli_usage_error("mcp-config", "unknown option '%s'", argv[i]);
		else if (!client)
			client = argv[i];
		else
			return cli_usage_error("mcp-config", "unexpected argument '%s'", argv[i]);
	}
	if (!client)
		return cli_usage_error("mcp-config", "name a client: claude, codex or json");
	if (token_env && !url)
		return cli_usage_error("mcp-config", "--token-env needs --http URL");
	if (url && strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0)
		return cli_usage_error("mcp-config",
				       "--http '%s': expected an http:// or https:// URL", url);
	if (self_path(exe, sizeof(exe)) != 0) {
		fprintf(stderr, "kforge mcp-config: cannot resolve this binary's path: %s\n",
			strerror(errno));
		return CLI_EXIT_ENV;
	}

	if (strcmp(client, "claude") == 0) {
		if (!url) {
			printf("claude mcp add kforge -- %s serve\n", exe);
		} else {
			printf("claude mcp add --transport http kforge %s", url);
			if (token_env)
				printf(" --header \"Authorization: Bearer $%s\"", token_env);
			printf("\n");
		}
	} else if (strcmp(client, "codex") == 0) {
		printf("[mcp_servers.kforge]\n");
		if (!url) {
			printf("command = ");
			put_quoted(stdout, exe);
			printf("\nargs = [\"serve\"]\n");
		} else {
			printf("url = ");
			put_quoted(stdout, url);
			printf("\n");
			if (token_env) {
				printf("bearer_token_env_var = ");
				put_quoted(stdout, token_env);
				printf("\n");
			}
		}
		printf("startup_timeout_sec = %d\ntool_timeout_sec = %d\n", CODEX_STARTUP_TIMEOUT_S,
		       CODEX_TOOL_TIMEOUT_S);
	} else if (strcmp(client, "json") == 0) {
		printf("{\n  \"mcpServers\": {\n    \"kforge\": {\n");
		if (!url) {
			printf("      \"command\": ");
			put_quoted(stdout, exe);
			printf(",\n      \"args\": [\"serve\"]\n");
		} else {
			printf("      \"type\": \"http\",\n      \"url\": ");
			put_quoted(stdout, url);
			if (token_env)
				printf(",\n      \"headers\": {\"Authorization\": \"Bearer ${%s}\"}",
				       token_env);
			printf("\n");
		}
		printf("    }\n  }\n}\n");
	} else {
		return cli_usage_error("mcp-config",
				       "unknown client '%s': expected claude, codex or json",
				       client);
	}
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
	if (dest_arg && global)
		return cli_usage_error("skill", "--dest and --global exclude each other");
	if (dest_arg) {
		snprintf(dest, sizeof(dest), "%s", dest_arg);
	} else if (global) {
		const char *home = getenv("HOME");
		if (!home || !*home) {
			fprintf(stderr, "kforge skill: --global needs $HOME\n");
			return CLI_EXIT_ENV;
		}
		snprintf(dest, sizeof(dest), "%s/.%s/skills/kforge", home, client);
	} else {
		snprintf(dest, sizeof(dest), ".%s/skills/kforge", client);
	}
	if (find_skill_source(src, sizeof(src)) != 0) {
		fprintf(stderr, "kforge skill: cannot find SKILL.md to install "
				"(set KFORGE_SKILL_DIR to the folder holding SKILL.md)\n");
		return CLI_EXIT_ENV;
	}

	walk.files = calloc(MAX_SKILL_FILES, sizeof(*walk.files));
	old = calloc(MAX_SKILL_FILES, sizeof(*old));
	if (!walk.files || !old)
		goto out;
	walk.len = 0;
	walk.overflow = 0;
	/* SKILL.md, then everything under skill/. */
	snprintf(walk.files[walk.len++].rel, sizeof(walk.files[0].rel), "SKILL.md");
	snprintf(walk.root, sizeof(walk.root), "%s", src);
	walk.root_len = strlen(src);
	char skill_dir[PATH_MAX + 8];
	snprintf(skill_dir, sizeof(skill_dir), "%s/skill", src);
	if (nftw(skill_dir, collect, 16, FTW_PHYS) != 0 && !walk.overflow) {
		fprintf(stderr, "kforge skill: cannot read %s: %s\n", skill_dir, strerror(errno));
		goto out;
	}
	if (walk.overflow) {
		fprintf(stderr, "kforge skill: more than %d files under %s\n", MAX_SKILL_FILES,
			skill_dir);
		goto out;
	}

	/* Refuse to clobber edits: every file already in dest must be one we
	 * installed (listed in the manifest) and unchanged since. */
	int n_old = read_manifest(dest, old, MAX_SKILL_FILES);
	if (n_old < 0 && !force) {
		fprintf(stderr, "kforge skill: %s/%s is unreadable; use --force to overwrite\n",
			dest, MANIFEST);
		goto out;
	}
	for (size_t i = 0; i < walk.len && !force; i++) {
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
			goto out;
		}
	}

	char mpath[PATH_MAX + 64];
	snprintf(mpath, sizeof(mpath), "%s/%s", dest, MANIFEST);
	if (mkdirs(dest) != 0) {
		fprintf(stderr, "kforge skill: cannot create %s: %s\n", dest, strerror(errno));
		goto out;
	}
	FILE *mf = fopen(mpath, "w");
	if (!mf) {
		fprintf(stderr, "kforge skill: cannot write %s: %s\n", mpath, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < walk.len; i++) {
		char from[PATH_MAX * 2], to[PATH_MAX * 2];
		unsigned char *buf;
		size_t len;
		snprintf(from, sizeof(from), "%s/%s", src, walk.files[i].rel);
		snprintf(to, sizeof(to), "%s/%s", dest, walk.files[i].rel);
		if (read_file(from, &buf, &len) != 0) {
			fprintf(stderr, "kforge skill: cannot read %s: %s\n", from,
				strerror(errno));
			fclose(mf);
			goto out;
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
			fclose(mf);
			goto out;
		}
		fprintf(mf, "%016llx %s\n", (unsigned long long)fnv1a(buf, len), walk.files[i].rel);
		free(buf);
	}
	if (fclose(mf) != 0) {
		fprintf(stderr, "kforge skill: cannot write %s: %s\n", mpath, strerror(errno));
		goto out;
	}
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
	 MCP_CONFIG_USAGE, run_mcp_config},
	{"skill", "install the kforge agent skill for Claude Code, Codex or any agent", SKILL_USAGE,
	 run_skill},
	{NULL, NULL, NULL, NULL},
};
