/* tools_kb_fields: get_gpu_specs' "fields" argument, a brief answer: one
 * GPU narrowed to the named figures, derived figures and sections with
 * exactly the sources they cite, or a comparison narrowed to those rows.
 * Works on the finished JSON answer of tools_kb.c; names are checked
 * against what the answer holds, so a wrong one lists the right ones. */
#include <stdio.h>
#include <string.h>

#include "server/tools/tools_kb_int.h"

static const char *const SECTIONS[] = {"features", "notes", "conflicts", "aliases", NULL};

/* Levenshtein distance of two short names (capped at 63 bytes each). */
static int name_distance(const char *a, const char *b)
{
	int d[64], la = (int)strnlen(a, 63), lb = (int)strnlen(b, 63);
	for (int j = 0; j <= lb; j++)
		d[j] = j;
	for (int i = 1; i <= la; i++) {
		int prev = d[0];
		d[0] = i;
		for (int j = 1; j <= lb; j++) {
			int cur = d[j];
			int best = prev + (a[i - 1] != b[j - 1]);
			if (d[j] + 1 < best)
				best = d[j] + 1;
			if (d[j - 1] + 1 < best)
				best = d[j - 1] + 1;
			d[j] = best;
			prev = cur;
		}
	}
	return d[lb];
}

/* The three names of arr closest to name ("a, b, c"); a name containing
 * the asked one counts as close ("bandwidth" -> memory_bandwidth_gbs). */
static void closest(const json_t *arr, const char *name, char *buf, size_t cap)
{
	const char *best[3] = {NULL, NULL, NULL};
	int score[3] = {1 << 30, 1 << 30, 1 << 30};
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v) {
		const char *n = json_string_value(v);
		int d = strstr(n, name) ? 0 : name_distance(name, n);
		for (int k = 0; k < 3; k++)
			if (d < score[k]) {
				for (int m = 2; m > k; m--) {
					score[m] = score[m - 1];
					best[m] = best[m - 1];
				}
				score[k] = d;
				best[k] = n;
				break;
			}
	}
	snprintf(buf, cap, "%s%s%s%s%s", best[0] ? best[0] : "none", best[1] ? ", " : "",
		 best[1] ? best[1] : "", best[2] ? ", " : "", best[2] ? best[2] : "");
}

/* A name that is none of the answer's: the message names the closest ones
 * (it is capped at 256 bytes, too short for ~50 names), and the answer is
 * replaced by the whole lists, so nothing is cut off. */
static int unknown_field(json_t *res, const char *name, const char *what, json_t *figs, json_t *der,
			 int sections, struct kf_err *err)
{
	json_t *all = json_array(), *sec = json_array();
	size_t i;
	json_t *v;
	json_array_extend(all, figs);
	json_array_extend(all, der);
	for (const char *const *s = SECTIONS; sections && *s; s++)
		json_array_append_new(sec, json_string(*s));
	json_array_foreach(sec, i, v)
		json_array_append(all, v);
	char near[200];
	closest(all, name, near, sizeof near);
	int rc = kf_err_set(err, KF_EINVAL,
			    "fields: '%.60s' is not %s; closest: %s (this answer's "
			    "valid_fields lists them all)",
			    name, what, near);
	json_object_clear(res);
	json_object_set_new(
		res, "valid_fields",
		json_pack("{s:O,s:O,s:o}", "figures", figs, "derived", der, "sections", sec));
	json_decref(all);
	return rc;
}

static json_t *key_array(const json_t *o)
{
	json_t *a = json_array();
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)o, k, v)
		json_array_append_new(a, json_string(k));
	return a;
}

/* Narrows one GPU object (tools_kb_gpu_json) to the figures, derived
 * figures and sections named in fields, keeping its identity and exactly
 * the sources those figures cite: a ~1 KB answer instead of ~15 KB. */
static int keep_fields(json_t *res, json_t *gpu, const json_t *fields, struct kf_err *err)
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
			char what[96];
			snprintf(what, sizeof what, "a figure, derived figure or section of %s",
				 json_string_value(json_object_get(gpu, "id")));
			json_t *fa = key_array(figs), *da = key_array(der);
			json_decref(kf);
			json_decref(kd);
			json_decref(ks);
			json_decref(keep);
			rc = unknown_field(res, name, what, fa, da, 1, err);
			json_decref(fa);
			json_decref(da);
			return rc;
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
			json_t *fa = json_array(), *da = json_array();
			json_array_foreach(rows, j, r)
				json_array_append_new(
					json_is_true(json_object_get(r, "derived")) ? da : fa,
					json_string(
						json_string_value(json_object_get(r, "field"))));
			json_decref(kept);
			int rc =
				unknown_field(res, name, "a row of the comparison", fa, da, 0, err);
			json_decref(fa);
			json_decref(da);
			return rc;
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
		return keep_fields(res, gpu, fields, err);
	size_t i;
	json_t *d;
	json_array_foreach(json_object_get(res, "local"), i, d) {
		json_t *g = json_object_get(d, "gpu");
		int rc = g ? keep_fields(res, g, fields, err) : 0;
		if (rc)
			return rc;
	}
	return 0;
}
