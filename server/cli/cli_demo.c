/* cli_demo: `kforge demo` drives a real MCP session over stdio against a
 * child `kforge serve`, through the whole workflow on a bundled RMSNorm
 * kernel (GPU facts, a guide, compile, check, benchmark, runs), printing
 * what each step returned. Without a GPU the GPU steps show the no_gpu
 * answer; only a protocol failure or a crash makes the demo fail. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "server/cli/cli.h"

#define DEMO_LINE_MAX	     (8u << 20)
#define DEMO_STEP_TIMEOUT_MS (10 * 60 * 1000)

/* The plain RMSNorm a user writes first: one block per row, a shared-memory
 * reduction, fp32 accumulation. Deliberately simple, so the benchmark
 * against kforge's built-in kernel has something to show. */
static const char DEMO_SOURCE[] =
	"#include <cuda_bf16.h>\n"
	"\n"
	"extern \"C\" __global__ void demo_rmsnorm(__nv_bfloat16 *y, const __nv_bfloat16 *x,\n"
	"                                          const __nv_bfloat16 *w, int T, int D, float eps)\n"
	"{\n"
	"    __shared__ float part[256];\n"
	"    const __nv_bfloat16 *xr = x + (size_t)blockIdx.x * D;\n"
	"    __nv_bfloat16 *yr = y + (size_t)blockIdx.x * D;\n"
	"    float ss = 0.f;\n"
	"    for (int i = threadIdx.x; i < D; i += blockDim.x) {\n"
	"        float v = __bfloat162float(xr[i]);\n"
	"        ss += v * v;\n"
	"    }\n"
	"    part[threadIdx.x] = ss;\n"
	"    __syncthreads();\n"
	"    for (int s = blockDim.x / 2; s > 0; s >>= 1) {\n"
	"        if (threadIdx.x < s)\n"
	"            part[threadIdx.x] += part[threadIdx.x + s];\n"
	"        __syncthreads();\n"
	"    }\n"
	"    float r = rsqrtf(part[0] / D + eps);\n"
	"    for (int i = threadIdx.x; i < D; i += blockDim.x)\n"
	"        yr[i] = __float2bfloat16(__bfloat162float(xr[i]) * r * __bfloat162float(w[i]));\n"
	"}\n";

struct child {
	pid_t pid;
	FILE *in;  /* our writes -> its stdin */
	int out;   /* its stdout */
	char *buf; /* pending bytes read from out */
	size_t len, cap;
	int next_id;
};

static int child_start(struct child *c, int argc, char **argv)
{
	int to[2], from[2];
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	if (pipe(to) != 0)
		return -1;
	if (pipe(from) != 0) {
		close(to[0]);
		close(to[1]);
		return -1;
	}
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		char *args[64];
		int k = 0;
		args[k++] = "kforge";
		args[k++] = "serve";
		/* Pass the common options on (--data-dir, --kb, --sandbox). */
		for (int i = 1; i < argc && k < 62; i++)
			args[k++] = argv[i];
		args[k] = NULL;
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[0]);
		close(to[1]);
		close(from[0]);
		close(from[1]);
		execv(exe, args);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->in = fdopen(to[1], "w");
	c->out = from[0];
	c->buf = NULL;
	c->len = c->cap = 0;
	c->next_id = 1;
	return c->in ? 0 : -1;
}

/* Reads the next line from the child within timeout_ms. Returns a new
 * string (free with free) or NULL on EOF, timeout or a line over the cap. */
static char *child_line(struct child *c, int timeout_ms)
{
	for (;;) {
		char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
		if (nl) {
			size_t n = (size_t)(nl - c->buf);
			char *line = malloc(n + 1);
			if (!line)
				return NULL;
			memcpy(line, c->buf, n);
			line[n] = '\0';
			memmove(c->buf, nl + 1, c->len - n - 1);
			c->len -= n + 1;
			return line;
		}
		if (c->len >= DEMO_LINE_MAX)
			return NULL;
		if (c->cap - c->len < 65536) {
			size_t cap = c->cap ? c->cap * 2 : 131072;
			char *nb = realloc(c->buf, cap);
			if (!nb)
				return NULL;
			c->buf = nb;
			c->cap = cap;
		}
		struct pollfd p = {.fd = c->out, .events = POLLIN};
		int r = poll(&p, 1, timeout_ms);
		if (r <= 0)
			return NULL;
		ssize_t got = read(c->out, c->buf + c->len, c->cap - c->len);
		if (got <= 0)
			return NULL;
		c->len += (size_t)got;
	}
}

/* Sends a request and waits for its response, printing progress
 * notifications as they come. Returns the new response object or NULL. */
static json_t *request(struct child *c, const char *method, json_t *params)
{
	int id = c->next_id++;
	json_t *msg = json_pack("{s:s, s:i, s:s, s:o}", "jsonrpc", "2.0", "id", id, "method",
				method, "params", params);
	char *text = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (!text)
		return NULL;
	fprintf(c->in, "%s\n", text);
	fflush(c->in);
	free(text);
	for (;;) {
		char *line = child_line(c, DEMO_STEP_TIMEOUT_MS);
		if (!line)
			return NULL;
		json_t *m = json_loads(line, 0, NULL);
		free(line);
		if (!m)
			continue;
		json_t *mid = json_object_get(m, "id");
		if (json_is_integer(mid) && json_integer_value(mid) == id)
			return m;
		const char *meth = json_string_value(json_object_get(m, "method"));
		if (meth && strcmp(meth, "notifications/progress") == 0) {
			const char *pm = json_string_value(
				json_object_get(json_object_get(m, "params"), "message"));
			if (pm)
				printf("    ... %s\n", pm);
		}
		json_decref(m);
	}
}

/* Prints a short view of a tool result: the summary, then each other
 * top-level member on one line (scalars as they are, arrays as a count with
 * the first item's id or name, objects as their keys). */
static void print_short(const json_t *sc)
{
	const char *key;
	json_t *v;

	printf("   %s\n", json_string_value(json_object_get(sc, "summary")));
	json_object_foreach((json_t *)sc, key, v) {
		if (strcmp(key, "summary") == 0)
			continue;
		printf("     %-14s ", key);
		if (json_is_array(v)) {
			json_t *first = json_array_get(v, 0);
			const char *label = json_string_value(json_object_get(first, "id"));
			if (!label)
				label = json_string_value(json_object_get(first, "name"));
			printf("%zu item%s%s%s\n", json_array_size(v),
			       json_array_size(v) == 1 ? "" : "s", label ? ", first: " : "",
			       label ? label : "");
		} else if (json_is_object(v)) {
			const char *k;
			json_t *unused;
			int n = 0;
			printf("{");
			json_object_foreach(v, k, unused) {
				if (n++ == 6) {
					printf(", ...");
					break;
				}
				printf("%s%s", n > 1 ? ", " : "", k);
			}
			printf("}\n");
		} else {
			char *text = json_dumps(v, JSON_ENCODE_ANY);
			printf("%.100s\n", text ? text : "?");
			free(text);
		}
	}
}

/* Calls a tool and prints its summary and structured result. Returns the
 * structuredContent, or for an isError result the error object its text
 * block holds (new), or NULL when the protocol itself failed. */
static json_t *step(struct child *c, int n, const char *title, const char *tool, json_t *args)
{
	printf("\n== %d. %s  (tools/call %s)\n", n, title, tool);
	fflush(stdout);
	json_t *resp =
		request(c, "tools/call", json_pack("{s:s, s:o}", "name", tool, "arguments", args));
	if (!resp) {
		printf("   no answer from the server\n");
		return NULL;
	}
	json_t *err = json_object_get(resp, "error");
	if (err) {
		printf("   protocol error: %s\n",
		       json_string_value(json_object_get(err, "message")));
		json_decref(resp);
		return NULL;
	}
	json_t *result = json_object_get(resp, "result");
	json_t *sc = json_incref(json_object_get(result, "structuredContent"));
	if (!sc && json_is_true(json_object_get(result, "isError"))) {
		const char *t = json_string_value(json_object_get(
			json_array_get(json_object_get(result, "content"), 0), "text"));
		sc = t ? json_loads(t, 0, NULL) : NULL;
		if (!json_is_object(sc)) {
			json_decref(sc);
			sc = json_pack("{s:s}", "summary", t ? t : "(no text)");
		}
	}
	if (json_is_true(json_object_get(result, "isError")))
		printf("   (isError: the tool reports a failure; on a host without a GPU the GPU steps answer no_gpu)\n");
	if (sc)
		print_short(sc);
	json_decref(resp);
	return sc;
}

static json_t *demo_spec(void)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:[{s:i, s:i}, {s:i, s:i}], "
			 "s:[{s:s, s:[s], s:[i], s:[s,s,s,s,s,s]}]}",
			 "op", "rmsnorm", "dtype", "bf16", "source", DEMO_SOURCE, "arch", "sm_90",
			 "sizes", "T", 4096, "D", 4096, "T", 7, "D", 1000, "launch", "kernel",
			 "demo_rmsnorm", "grid", "T", "block", 256, "args", "y", "x", "w", "T", "D",
			 "eps");
}

static const char DEMO_USAGE[] =
	"usage: kforge demo [--data-dir DIR] [--kb FILE] [--sandbox=bwrap|none]\n"
	"\n"
	"Starts `kforge serve` as a child and drives a real MCP session over\n"
	"stdio through the whole workflow on a bundled RMSNorm kernel: GPU facts,\n"
	"a guide search and read, compile, check against the built-in reference,\n"
	"benchmark against kforge's own kernel, and the run history. Prints what\n"
	"each step returned. Without a GPU the check and benchmark steps show\n"
	"the no_gpu answer. Exits 0 when every step got an answer.\n";

static int run_demo(int argc, char **argv)
{
	struct child c;
	int rc = CLI_EXIT_FAIL, n = 0;
	json_t *r;

	signal(SIGPIPE, SIG_IGN);
	if (child_start(&c, argc, argv) != 0) {
		fprintf(stderr, "kforge demo: cannot start `kforge serve`: %s\n", strerror(errno));
		return CLI_EXIT_ENV;
	}
	printf("kforge demo: an MCP session over stdio with `kforge serve`\n");
	r = request(&c, "initialize",
		    json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", "2025-11-25",
			      "capabilities", "clientInfo", "name", "kforge-demo", "version", "1"));
	if (!r || !json_object_get(r, "result")) {
		fprintf(stderr, "kforge demo: initialize failed\n");
		json_decref(r);
		goto out;
	}
	json_t *info = json_object_get(json_object_get(r, "result"), "serverInfo");
	printf("\n== 0. initialize: %s %s, protocol %s\n",
	       json_string_value(json_object_get(info, "name")),
	       json_string_value(json_object_get(info, "version")),
	       json_string_value(json_object_get(json_object_get(r, "result"), "protocolVersion")));
	json_decref(r);
	fprintf(c.in, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
	fflush(c.in);

	/* Each step must get an answer; a failing tool result is fine. */
	if (!(r = step(&c, ++n, "the GPU on this host", "get_gpu_specs",
		       json_pack("{s:s}", "gpu", "local"))))
		goto out;
	json_decref(r);
	if (!(r = step(&c, ++n, "facts for the H200", "get_gpu_specs",
		       json_pack("{s:s}", "gpu", "h200"))))
		goto out;
	json_decref(r);
	if (!(r = step(&c, ++n, "search the guides", "search_guides",
		       json_pack("{s:s, s:i}", "query", "rmsnorm vectorized loads", "limit", 3))))
		goto out;
	const char *gid = json_string_value(
		json_object_get(json_array_get(json_object_get(r, "hits"), 0), "id"));
	json_t *read_args = json_pack("{s:s}", "id", gid ? gid : "rmsnorm-layernorm");
	json_decref(r);
	if (!(r = step(&c, ++n, "read the top guide", "read_guide", read_args)))
		goto out;
	json_decref(r);
	if (!(r = step(&c, ++n, "compile the plain kernel", "compile_kernel",
		       json_pack("{s:s, s:s}", "source", DEMO_SOURCE, "arch", "sm_90"))))
		goto out;
	json_decref(r);
	if (!(r = step(&c, ++n, "check it against the built-in rmsnorm", "check_kernel",
		       json_pack("{s:o}", "spec", demo_spec()))))
		goto out;
	json_decref(r);
	if (!(r = step(&c, ++n, "benchmark it against kforge's kernel", "benchmark_kernel",
		       json_pack("{s:o}", "spec", demo_spec()))))
		goto out;
	json_decref(r);
	if (!(r = step(&c, ++n, "the run history", "list_runs", json_pack("{s:i}", "limit", 5))))
		goto out;
	json_decref(r);
	printf("\nkforge demo: every step answered. Register kforge in your agent with\n"
	       "  kforge mcp-config claude   (or codex, json)\n");
	rc = CLI_EXIT_OK;
out:
	fclose(c.in);
	close(c.out);
	free(c.buf);
	int status;
	if (waitpid(c.pid, &status, 0) == c.pid && WIFSIGNALED(status)) {
		fprintf(stderr, "kforge demo: the server died with signal %d\n", WTERMSIG(status));
		rc = CLI_EXIT_FAIL;
	}
	return rc;
}

const struct cli_cmd CLI_DEMO[] = {
	{"demo", "walk through the whole workflow on a bundled kernel over a real MCP session",
	 DEMO_USAGE, run_demo, NULL, NULL},
	{NULL, NULL, NULL, NULL, NULL, NULL},
};
