/* compile_sass: the SASS summary of an artifact. cuobjdump reads the cubin
 * (untrusted bytes) in the jail, from a private copy in a staging dir; the
 * listing and its summary are stored in the artifact, so the next request
 * reads them back. Where the toolkit has no cuobjdump the answer says so. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/compile/cache.h"
#include "sandbox/compile/compile_int.h"
#include "sandbox/jail/jail.h"
#include "sandbox/compile/sass.h"

#define CUBIN_CAP (64u << 20)
#define SASS_CAP  (16u << 20)

static json_t *unavailable(const char *why)
{
	json_t *o = json_object();
	json_object_set_new(o, "available", json_false());
	json_object_set_new(o, "reason", json_string(why));
	return o;
}

static json_t *from_summary(const struct sass_summary *s, const char *id)
{
	json_t *o = json_object();
	json_object_set_new(o, "available", json_true());
	char uri[128];
	snprintf(uri, sizeof uri, "kforge://artifacts/%s/sass", id);
	json_object_set_new(o, "listing", json_string(uri));
	json_t *ks = json_array();
	for (int i = 0; i < s->kernels_len; i++)
		json_array_append_new(ks, sass_kernel_json(&s->kernels[i]));
	json_object_set_new(o, "kernels", ks);
	if (s->kernels_total > s->kernels_len)
		json_object_set_new(o, "kernels_not_shown",
				    json_integer(s->kernels_total - s->kernels_len));
	return o;
}

json_t *compile_sass_json(struct compiler *cc, const char *id)
{
	struct cache *c = compile_cache(cc);
	char *data = NULL;
	size_t len = 0;
	if (cache_read(c, id, "sass.json", 1u << 20, &data, &len, NULL) == 0) {
		json_t *j = json_loadb(data, len, 0, NULL);
		free(data);
		if (j)
			return j;
	}
	if (!compile_cuobjdump(cc)[0])
		return unavailable("cuobjdump is not in this CUDA toolkit (install the "
				   "cuda-cuobjdump package); the SASS summary needs it");
	char stage[PATH_MAX], p[PATH_MAX + 32];
	json_t *out = NULL;
	char *cubin = NULL;
	size_t clen = 0;
	struct kf_err err = {0};
	if (cache_read(c, id, "kernel.cubin", CUBIN_CAP, &cubin, &clen, &err) != 0)
		return unavailable("the artifact has no cubin");
	if (cache_stage(c, stage, sizeof stage, &err) != 0) {
		free(cubin);
		return unavailable(err.msg);
	}
	snprintf(p, sizeof p, "%s/kernel.cubin", stage);
	FILE *f = fopen(p, "wb");
	int wrote = f && fwrite(cubin, 1, clen, f) == clen;
	if (f)
		fclose(f);
	free(cubin);
	if (!wrote) {
		cache_discard(c, stage);
		return unavailable("cannot stage the cubin");
	}
	const char *argv[] = {compile_cuobjdump(cc), "-sass", "kernel.cubin", NULL};
	struct jail_job job = {
		.argv = argv, .job_dir = stage, .wall_ms = 30000, .stdout_cap_bytes = SASS_CAP};
	struct jail_result r;
	int rc = jail_run(compile_jail(cc), &job, &r, &err);
	cache_discard(c, stage);
	if (rc != 0 || r.exit_code != 0 || r.out_truncated) {
		char why[300];
		snprintf(why, sizeof why, "cuobjdump failed: %.200s",
			 rc ? err.msg : (r.out_truncated ? "listing over 16 MiB" : r.errout));
		jail_result_fini(&r);
		return unavailable(why);
	}
	struct sass_summary *s = malloc(sizeof *s);
	if (!s) {
		jail_result_fini(&r);
		return NULL;
	}
	if (sass_parse(r.out, r.out_len, s, &err) != 0) {
		out = unavailable(err.msg);
	} else {
		out = from_summary(s, id);
		if (cache_write(c, id, "sass.txt", r.out, r.out_len, NULL) == 0) {
			char *txt = json_dumps(out, JSON_COMPACT);
			/* A failed write only means the next request recomputes. */
			if (txt)
				(void)!cache_write(c, id, "sass.json", txt, strlen(txt), NULL);
			free(txt);
		}
	}
	free(s);
	jail_result_fini(&r);
	return out;
}
