/* kb-build: `kb-build --src knowledge --out build/knowledge.db` makes the
 * knowledge base from the text sources (see kb_build.h). Exits 0 on
 * success; on failure prints "kb-build: <file>: <reason>" and exits 1
 * (2 for a bad command line). */
#include <stdio.h>
#include <string.h>

#include "knowledge/kb_build.h"

static int usage(void)
{
	fprintf(stderr, "usage: kb-build --src DIR --out FILE\n"
			"  DIR holds schema.sql, aliases.csv, gpu-facts/ and guides/\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *src = NULL, *out = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--src") == 0 && i + 1 < argc)
			src = argv[++i];
		else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
			out = argv[++i];
		else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage();
			return 0;
		} else {
			fprintf(stderr, "kb-build: unknown argument '%s'\n", argv[i]);
			return usage();
		}
	}
	if (!src || !out)
		return usage();
	struct kf_err err;
	kf_err_clear(&err);
	if (kb_build(src, out, &err) != 0) {
		fprintf(stderr, "kb-build: %s\n", err.msg);
		return 1;
	}
	return 0;
}
