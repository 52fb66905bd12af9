/* bench_kb: in-process timings of the knowledge base (knowledge/kb.h):
 * GPU lookups, derived figures, occupancy and guide searches, each call
 * timed alone; prints median and p90 and writes them as Markdown.
 * usage: bench_kb KNOWLEDGE_DB [OUT.md] [ITERATIONS]; $BENCH_COMMIT names the
 * commit measured. `make bench-kb` writes build/bench/bench-kb.md; the
 * curated docs/bench-kb.md is copied from it by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "knowledge/kb.h"

#define MAX_ITERS 100000

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct result {
	const char *name;
	double median_us, p90_us;
};

enum op {
	GPU_ALIAS,
	GPU_NAME,
	GPU_UNKNOWN,
	DERIVED,
	LIMITS_OCC,
	PEAKS,
	SEARCH_SHORT,
	SEARCH_QUESTION,
	SEARCH_FILTERED,
	SEARCH_HOSTILE,
	GUIDE_READ,
	OP_COUNT
};

static const char *const NAMES[OP_COUNT] = {
	"gpu lookup by alias (\"h100\")",
	"gpu lookup by driver name (\"NVIDIA GeForce RTX 4090\")",
	"unknown gpu with suggestions (\"h1000\")",
	"derived figures of one GPU",
	"limits for \"sm_90a\" + occupancy",
	"roofline peaks (\"h200\")",
	"search \"bank conflicts\"",
	"search a 12-word question",
	"search with arch + tag filters",
	"search hostile FTS5 syntax",
	"read one guide (whole)",
};

static int run(struct kb *kb, enum op op)
{
	const struct kb_gpu *g = NULL;
	struct kb_hit *h = NULL;
	size_t n = 0;
	int rc = 0;
	switch (op) {
	case GPU_ALIAS: return kb_gpu_find(kb, "h100", &g, NULL);
	case GPU_NAME: return kb_gpu_find(kb, "NVIDIA GeForce RTX 4090", &g, NULL);
	case GPU_UNKNOWN: return kb_gpu_find(kb, "h1000", &g, NULL) == KF_ENOTFOUND ? 0 : -1;
	case DERIVED: {
		struct kb_derived d[KB_MAX_DERIVED];
		rc = kb_gpu_find(kb, "b200", &g, NULL);
		return rc ? rc : kb_gpu_derived(g, d, KB_MAX_DERIVED) > 0 ? 0 : -1;
	}
	case LIMITS_OCC: {
		struct kb_cc_limits L;
		struct kb_occupancy o;
		rc = kb_cc_limits_for_arch(kb, "sm_90a", &L, NULL);
		return rc ? rc : kb_occupancy(&L, 256, 64, 32768, &o, NULL);
	}
	case PEAKS: {
		struct kb_peaks p;
		return kb_gpu_peaks(kb, "h200", &p, NULL);
	}
	case SEARCH_SHORT:
	case SEARCH_QUESTION:
	case SEARCH_FILTERED:
	case SEARCH_HOSTILE: {
		struct kb_search q = {.limit = 10};
		q.query = op == SEARCH_SHORT ? "bank conflicts"
			  : op == SEARCH_QUESTION
				  ? "why are my shared memory loads slow when threads read a column"
			  : op == SEARCH_FILTERED ? "tensor cores"
						  : "NEAR(\"a\" *) title: -x (((";
		if (op == SEARCH_FILTERED) {
			q.arch = "sm_90";
			q.tag = "gemm";
		}
		rc = kb_search_guides(kb, &q, &h, &n, NULL);
		free(h);
		return rc;
	}
	case GUIDE_READ: {
		struct kb_guide_entry *e = NULL;
		struct kb_guide *gd = NULL;
		static char id[64];
		if (!id[0]) {
			if (kb_guide_list(kb, NULL, &e, &n, NULL) || n == 0) {
				free(e);
				return 1; /* no guides: skipped */
			}
			snprintf(id, sizeof id, "%s", e[0].id);
			free(e);
		}
		rc = kb_guide_read(kb, id, &gd, NULL);
		kb_guide_free(gd);
		return rc;
	}
	default: return -1;
	}
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_kb KNOWLEDGE_DB [OUT.md] [ITERATIONS]\n");
		return 2;
	}
	int iters = argc > 3 ? (int)strtol(argv[3], NULL, 10) : 2000;
	if (iters < 10 || iters > MAX_ITERS)
		iters = 2000;
	struct kb *kb = NULL;
	struct kf_err err = {0};
	if (kb_open(argv[1], &kb, &err) != 0) {
		fprintf(stderr, "bench_kb: %s\n", err.msg);
		return 1;
	}
	double *t = malloc(sizeof *t * (size_t)iters);
	struct result res[OP_COUNT];
	int nres = 0;
	if (!t)
		return 1;
	for (int op = 0; op < OP_COUNT; op++) {
		int rc = run(kb, (enum op)op);
		if (rc > 0)
			continue; /* skipped */
		if (rc < 0) {
			fprintf(stderr, "bench_kb: %s failed (%d)\n", NAMES[op], rc);
			return 1;
		}
		for (int i = 0; i < 50; i++) /* warm-up */
			(void)run(kb, (enum op)op);
		for (int i = 0; i < iters; i++) {
			double t0 = now_us();
			(void)run(kb, (enum op)op);
			t[i] = now_us() - t0;
		}
		qsort(t, (size_t)iters, sizeof *t, cmp_d);
		res[nres].name = NAMES[op];
		res[nres].median_us = t[iters / 2];
		res[nres].p90_us = t[iters * 9 / 10];
		nres++;
	}
	free(t);
	struct kb_guide_entry *e = NULL;
	size_t nguides = 0;
	if (kb_guide_list(kb, NULL, &e, &nguides, NULL) != 0)
		nguides = 0;
	free(e);
	size_t ngpus = kb_gpu_count(kb);
	kb_close(kb);

	struct utsname u;
	char host[256] = "unknown";
	if (uname(&u) == 0)
		snprintf(host, sizeof host, "%s %s %s", u.sysname, u.release, u.machine);
	char date[32];
	time_t now = time(NULL);
	strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));

	printf("%-56s %12s %12s\n", "operation", "median (us)", "p90 (us)");
	int over = 0;
	for (int i = 0; i < nres; i++) {
		printf("%-56s %12.2f %12.2f\n", res[i].name, res[i].median_us, res[i].p90_us);
		over |= res[i].median_us >= 1000;
	}
	printf("%s: %d iterations each, %zu GPUs, %zu guides; target: every median under 1 ms: %s\n",
	       date, iters, ngpus, nguides, over ? "MISSED" : "met");
	if (argc > 2) {
		FILE *f = fopen(argv[2], "w");
		if (!f) {
			fprintf(stderr, "bench_kb: cannot write %s\n", argv[2]);
			return 1;
		}
		fprintf(f,
			"# Knowledge base benchmark (in-process)\n\n"
			"Written by `make bench-kb` (tests/bench/bench_kb.c); docs/bench-kb.md "
			"is copied from it by hand.\n\n"
			"- when: %s\n- commit: %s\n"
			"- machine: %s, %ld CPUs online (shared with other jobs)\n"
			"- knowledge base: %zu GPUs, %zu guides\n"
			"- method: each call timed alone with CLOCK_MONOTONIC, %d iterations "
			"after 50 warm-up calls, one thread\n"
			"- target (issue 3): lookups and searches under 1 ms median: **%s**\n\n"
			"| operation | median (us) | p90 (us) |\n|---|---:|---:|\n",
			date, getenv("BENCH_COMMIT") ? getenv("BENCH_COMMIT") : "unknown", host,
			sysconf(_SC_NPROCESSORS_ONLN), ngpus, nguides, iters,
			over ? "missed" : "met");
		for (int i = 0; i < nres; i++)
			fprintf(f, "| %s | %.2f | %.2f |\n", res[i].name, res[i].median_us,
				res[i].p90_us);
		fclose(f);
	}
	return over ? 1 : 0;
}
