/* tools_kb_fields: get_gpu_specs' "fields" argument, a brief answer: one
 * GPU narrowed to the named figures, derived figures and sections with
 * exactly the sources they cite, or a comparison narrowed to those rows.
 * Works on the finished JSON answer of tools_kb.c; names are checked
 * against what the answer holds, so a wrong one lists the right ones. */
#include <stdio.h>
#include <string.h>

#include "server/tools/tools_kb_int.h"

static const char *const SECTIONS[] = {"features", "notes", "conflicts", "aliases", NULL};

/* Appends the names of object o's keys to buf ("a, b, c"). */
static void key_list(const json_t *o, char *buf, size_t cap)
{
	const char *k;
	const json_t *v;
	size_t at = strlen(buf);
	json_object_foreach((json_t *)o, k, v) {
		if (at + strlen(k) + 3 >= cap)
			break;
		at += (size_t)snprintf(buf + at, cap - at, "%s%s", at ? ", " : "", k);
	}
}

static int unknown_field(const json_t *gpu, const char *name, struct kf_err *err)
{
	char figs[2048] = "", der[1024] = "";
	key_list(json_object_get(gpu, "figures"), figs, sizeof figs);
	key_list(json_object_get(gpu, "derived"), der, sizeof der);
	return kf_err_set(err, KF_EINVAL,
			  "fields: '%s' is not a figure of %s; figures: %s; derived: %s; "
			  "sections: features, notes, conflicts, aliases",
			  name, json_string_value(json_object_get(gpu, "id")), figs, der);
}

/* Narrows one GPU object (tools_kb_gpu_json) to the figures, derived
 * figures and sections named in fields, keeping its identity and exactly
 * the sources those figures cite: a ~1 KB answer instead of ~15 KB. */
static int keep_fields(json_t *gpu, const json_t *fields, struct kf_err *err)
{
	json_t *figs = json_object_get(gpu, "figures"), *der = json_object_get(gpu, "derived");
	json_t *srcs = json_object_get(gpu, "sources");
	json_t *kf = json_object(), *kd = json_object(), *ks = json_object(), *keep = json_object();
	int rc = 0, in_product = 0, in_cc = 0;
	size_t i;
	json_t *f;
	json_array_foreach(fields, i, f) {
		const char *name = json_string_value(f);
		json_t *v;
		int section = 0;
		for (const char *const *s = SECTIONS; *s; s++)
			section |= strcmp(*s, name) == 0;
		if ((v = json_object_get(figs, name))) {
			json_object_set(kf, name, v);
			size_t j;
			json_t *key;
			json_array_foreach(json_object_get(v, "source_keys"), j, key) {
				json_t *t = json_object_get(srcs, json_string_value(key));
				if (t)
					json_object_set(ks, json_string_value(key), t);
			}
			const char *in = json_string_value(json_object_get(v, "source_in"));
			in_product |= in && strcmp(in, "sources_product") == 0;
			in_cc |= in && strcmp(in, "sources_per_cc_limits") == 0;
		} else if ((v = json_object_get(der, name))) {
			json_object_set(kd, name, v);
		} else if (section) {
			json_object_set(keep, name, json_object_get(gpu, name));
		} else {
			rc = unknown_field(gpu, name, err);
			break;
		}
	}
	if (rc == 0) {
		static const char *const DROP[] = {
			"figures",     "derived",   "sources", "features",
			"notes",       "conflicts", "aliases", "derived_in_source",
			"form_factor", "sm_target", NULL};
		for (const char *const *d = DROP; *d; d++)
			json_object_del(gpu, *d);
		if (!in_product)
			json_object_del(gpu, "sources_product");
		if (!in_cc)
			json_object_del(gpu, "sources_per_cc_limits");
		json_object_set(gpu, "figures", kf);
		if (json_object_size(kd))
			json_object_set(gpu, "derived", kd);
		json_object_set(gpu, "sources", ks);
		json_object_update(gpu, keep);
	}
	json_decref(kf);
	json_decref(kd);
	json_decref(ks);
	json_decref(keep);
	return rc;
}

/* compare: only the rows of the named fields; every name must be a row. */
static int keep_rows(json_t *res, const json_t *fields, struct kf_err *err)
{
	json_t *rows = json_object_get(res, "rows"), *kept = json_array();
	size_t i, j;
	json_t *f, *r;
	json_array_foreach(fields, i, f) {
		const char *name = json_string_value(f);
		int found = 0;
		json_array_foreach(rows, j, r)
			if (strcmp(json_string_value(json_object_get(r, "field")), name) == 0) {
				json_array_append(kept, r);
				found = 1;
			}
		if (!found) {
			json_decref(kept);
			return kf_err_set(err, KF_EINVAL,
					  "fields: '%s' is not a row of the comparison (a figure "
					  "or derived figure name, e.g. memory_bandwidth_gbs, "
					  "smem_per_sm_kb, ridge_point_fp16_bf16_tensor)",
					  name);
		}
	}
	json_object_set_new(res, "rows", kept);
	return 0;
}

int tools_kb_fields(json_t *res, const json_t *fields, int compare, struct kf_err *err)
{
	if (compare)
		return keep_rows(res, fields, err);
	json_t *gpu = json_object_get(res, "gpu");
	if (gpu)
		return keep_fields(gpu, fields, err);
	size_t i;
	json_t *d;
	json_array_foreach(json_object_get(res, "local"), i, d) {
		json_t *g = json_object_get(d, "gpu");
		int rc = g ? keep_fields(g, fields, err) : 0;
		if (rc)
			return rc;
	}
	return 0;
}
