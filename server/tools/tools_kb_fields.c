/* tools_kb_fields: get_gpu_specs' short answers. The default, brief: one
 * GPU's most used figures (or a comparison's rows of them), each with a
 * source id, under 2 KB (4 KB for a comparison of four), built from the kb
 * rows. And the "fields" argument: one GPU narrowed to the named figures,
 * derived figures and sections with exactly the sources they cite, or a
 * comparison narrowed to those rows; it works on the finished full answer
 * of tools_kb.c and checks names against what it holds, so a wrong one
 * lists the right ones. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "server/tools/tools_kb_int.h"

/* ---- brief ------------------------------------------------------------------ */

/* The figures kernel work uses most: size of the machine, the roofline
 * peaks, and the per-SM limits occupancy and tiling are planned against. */
static const char *const BRIEF_FIGURES[] = {"sm_count",
					    "memory_gb",
					    "memory_bandwidth_gbs",
					    "l2_cache_mb",
					    "peak_fp32_tflops",
					    "tf32_tensor_dense_tflops",
					    "fp16_bf16_tensor_dense_tflops",
					    "fp8_tensor_dense_tflops",
					    "max_threads_per_sm",
					    "max_threads_per_block",
					    "max_resident_blocks_per_sm",
					    "regs_32bit_per_sm",
					    "max_regs_per_thread",
					    "smem_per_sm_kb",
					    "max_smem_per_block_optin_kb",
					    NULL};
static const char *const BRIEF_DERIVED[] = {"ridge_point_fp32", "ridge_point_fp16_bf16_tensor",
					    "full_wave_blocks_256", NULL};

/* A number as short JSON: an integer when whole, else 4 significant digits
 * (derived ratios carry no more accuracy than their inputs). */
static json_t *short_num(double v)
{
	if (!isfinite(v))
		return json_null();
	if (v == floor(v) && fabs(v) < 1e15)
		return json_integer((json_int_t)v);
	double scale = pow(10, 3 - (int)floor(log10(fabs(v))));
	return json_real(round(v * scale) / scale);
}

/* The source group of a known figure of g: "product" or "per_cc" when its
 * source is the GPU's product or per-CC source text, else NULL. */
static const char *source_group(const struct kb_gpu *g, const struct kb_figure *f)
{
	if (strcmp(f->source, g->sources_product) == 0)
		return "product";
	if (strcmp(f->source, g->sources_per_cc_limits) == 0)
		return "per_cc";
	return NULL;
}

/* {value, source} for f of g, the group's source keys added to groups
 * (borrowed) on first use; a figure whose keys differ from its group's
 * carries its own source_keys. Unknown and n/a figures say so in status. */
static json_t *brief_figure(const struct kb_gpu *g, const struct kb_figure *f, json_t *groups)
{
	static const char *const STATUS[] = {"known", "unknown", "n/a"};
	json_t *o = json_object();
	if (f->status != KB_FIG_KNOWN) {
		json_object_set_new(o, "value", json_null());
		json_object_set_new(o, "status", json_string(STATUS[f->status]));
		return o;
	}
	json_object_set_new(o, "value",
			    !f->is_number		  ? json_string(f->text)
			    : f->value == floor(f->value) ? json_integer((json_int_t)f->value)
							  : json_real(f->value));
	const char *grp = source_group(g, f);
	json_t *keys = tools_kb_split(f->source_keys, ',');
	json_t *have = grp ? json_object_get(groups, grp) : NULL;
	if (grp && (!have || json_equal(have, keys))) {
		json_object_set_new(o, "source", json_string(grp));
		if (!have)
			json_object_set(groups, grp, keys);
		json_decref(keys);
	} else {
		json_object_set_new(o, "source_keys", keys);
	}
	return o;
}

json_t *tools_kb_gpu_brief(const struct kb_gpu *g, const struct kb_arch *target)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s}", "id", g->id, "name", g->name, "architecture",
			      g->architecture, "compute_capability", g->compute_capability,
			      "best_target", g->best_target);
	json_t *figs = json_object(), *groups = json_object(), *usable = json_array();
	json_object_set_new(o, "uri", json_sprintf(GPU_URI "%s", g->id));
	for (const char *const *n = BRIEF_FIGURES; *n; n++) {
		const struct kb_figure *f = kb_gpu_figure(g, *n);
		if (f)
			json_object_set_new(figs, *n, brief_figure(g, f, groups));
	}
	struct kb_derived d[KB_MAX_DERIVED];
	size_t nd = kb_gpu_derived(g, d, KB_MAX_DERIVED);
	for (const char *const *n = BRIEF_DERIVED; *n; n++)
		for (size_t i = 0; i < nd; i++)
			if (strcmp(d[i].name, *n) == 0)
				json_object_set_new(
					figs, *n,
					json_pack("{s:o,s:s,s:b}", "value",
						  d[i].known ? short_num(d[i].value) : json_null(),
						  "unit", d[i].unit, "derived", 1));
	json_object_set_new(o, "figures", figs);
	json_object_set_new(o, "sources", groups);
	struct kb_arch best;
	if (!target && kb_arch_parse(g->best_target, &best, NULL) == 0)
		target = &best;
	if (target) {
		char t[32];
		kb_arch_format(target, t, sizeof t);
		int runs = kb_arch_runs_on(target, g->cc_major, g->cc_minor);
		for (int i = 0; i < KB_FEAT_COUNT; i++) {
			struct kb_feature_use u;
			kb_feature_usable(target, i, &u);
			if (u.usable && runs)
				json_array_append_new(usable, json_string(u.name));
		}
		json_object_set_new(o, "features_target", json_string(t));
	}
	json_object_set_new(o, "usable_features", usable);
	return o;
}

/* One brief comparison row: the values of field (a figure when derived is
 * NULL, else a derived figure) on each GPU and where they come from:
 * "source" names the group of each GPU's "sources", or lists per GPU its
 * group or the figure's own source keys (null: unknown or n/a) when they
 * differ. */
static json_t *brief_row(const struct kb_gpu *const *g, size_t n, const char *field,
			 struct kb_derived (*derived)[KB_MAX_DERIVED], const size_t *nd,
			 json_t *const *groups)
{
	json_t *vals = json_array(), *srcs = json_array(),
	       *row = json_pack("{s:s}", "field", field);
	const char *unit = "", *grp = NULL; /* grp: static, from source_group */
	int same = 1, any = 0;
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_null(), *b = NULL;
		const char *s = NULL;
		for (size_t k = 0; derived && k < nd[i]; k++)
			if (strcmp(derived[i][k].name, field) == 0) {
				unit = derived[i][k].unit;
				if (derived[i][k].known)
					v = short_num(derived[i][k].value);
			}
		const struct kb_figure *f = derived ? NULL : kb_gpu_figure(g[i], field);
		json_t *own = NULL; /* a figure with its own source: its keys */
		if (f && (b = brief_figure(g[i], f, groups[i]))) {
			/* "n/a" (no such format) reads apart from null (unconfirmed) */
			v = f->status == KB_FIG_NA ? json_string("n/a")
						   : json_incref(json_object_get(b, "value"));
			s = json_object_get(b, "source") ? source_group(g[i], f) : NULL;
			own = json_object_get(b, "source_keys");
		}
		if (f && f->status == KB_FIG_KNOWN) {
			same &= s && (!grp || strcmp(grp, s) == 0);
			grp = grp ? grp : s;
			any = 1;
		}
		json_array_append_new(srcs, s	  ? json_string(s)
					    : own ? json_incref(own)
						  : json_null());
		json_decref(b);
		json_array_append_new(vals, v);
	}
	json_object_set_new(row, "values", vals);
	if (derived) {
		json_object_set_new(row, "unit", json_string(unit));
		json_object_set_new(row, "derived", json_true());
	} else if (grp && same) {
		json_object_set_new(row, "source", json_string(grp));
	} else if (any) {
		json_object_set(row, "source", srcs);
	}
	json_decref(srcs);
	return row;
}

json_t *tools_kb_compare_brief(const struct kb_gpu *const *g, size_t n)
{
	json_t *gpus = json_array(), *rows = json_array(), *groups[KB_COMPARE_MAX];
	struct kb_derived d[KB_COMPARE_MAX][KB_MAX_DERIVED];
	size_t nd[KB_COMPARE_MAX];
	for (size_t i = 0; i < n; i++) {
		groups[i] = json_object();
		nd[i] = kb_gpu_derived(g[i], d[i], KB_MAX_DERIVED);
	}
	for (const char *const *f = BRIEF_FIGURES; *f; f++)
		json_array_append_new(rows, brief_row(g, n, *f, NULL, nd, groups));
	for (const char *const *f = BRIEF_DERIVED; *f; f++)
		json_array_append_new(rows, brief_row(g, n, *f, d, nd, groups));
	for (size_t i = 0; i < n; i++)
		json_array_append_new(gpus, json_pack("{s:s,s:s,s:s,s:o}", "id", g[i]->id, "name",
						      g[i]->name, "best_target", g[i]->best_target,
						      "sources", groups[i]));
	return json_pack("{s:o,s:o}", "gpus", gpus, "rows", rows);
}

/* ---- fields ----------------------------------------------------------------- */

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
