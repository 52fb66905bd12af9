/* tools_kb: the knowledge-base group (TOOLS_KB): get_gpu_specs,
 * search_guides, read_guide; resources kforge://guides/{id} and
 * kforge://gpus/{id}; the write-kernel prompt. Handlers only shape JSON
 * around knowledge/kb.h (thread-safe) and sandbox/pool/gpu.h (the driver probe
 * for `local`). Every figure carries its source; derived figures say
 * "derived": true, with their formula in the full answer (detail: "full");
 * the brief default answer is built in tools_kb_fields.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/app.h"
#include "knowledge/kb.h"
#include "sandbox/pool/gpu.h"
#include "server/mcp/tools.h"
#include "server/tools/tools_exec.h"
#include "server/tools/tools_kb_int.h"

/* ---- helpers ---------------------------------------------------------------- */

int tools_kb_need(struct app *app, struct kb **kb, struct kf_err *err)
{
	if (!app || !app->kb)
		return kf_err_set(
			err, KF_EIO,
			"knowledge base not loaded (%s): build it with `make` or pass --kb FILE",
			app && app->cfg.kb_path ? app->cfg.kb_path : "no path");
	*kb = app->kb;
	return 0;
}

static json_t *num(double v)
{
	if (isfinite(v) && v == floor(v) && fabs(v) < 1e15)
		return json_integer((json_int_t)v);
	return json_real(v);
}

json_t *tools_kb_split(const char *s, char sep)
{
	json_t *a = json_array();
	const char *p = s ? s : "";
	while (*p) {
		const char *e = strchr(p, sep);
		size_t n = e ? (size_t)(e - p) : strlen(p);
		while (n > 0 && *p == ' ') {
			p++;
			n--;
		}
		while (n > 0 && p[n - 1] == ' ')
			n--;
		if (n > 0)
			json_array_append_new(a, json_stringn(p, n));
		if (!e)
			break;
		p = e + 1;
	}
	return a;
}

static const char *const FEATURE_FIELD[KB_FEAT_COUNT] = {
	"feat_cp_async_sm80",	    "feat_tma_sm90",	    "feat_wgmma_sm90a",
	"feat_clusters_dsmem_sm90", "feat_fp8_tensor_sm89", "feat_tcgen05_tmem_sm100a",
	"feat_bf16_sm80",	    "feat_fp4_tensor"};

static const char *STATUS[] = {"known", "unknown", "n/a"};

/* One figure: value (null when unknown or n/a), unit, label, source keys.
 * status appears only when the figure is not known; gap, when an unknown
 * figure has a line saying why (e.g. "no NVIDIA source: ..."). A figure with its own
 * source (figure_sources.csv) carries it as "source"; otherwise "source_in"
 * names the GPU's sources_product or sources_per_cc_limits text, which the
 * GPU object carries once, so answers stay small. */
static json_t *figure_json(const struct kb_gpu *g, const struct kb_figure *f)
{
	json_t *o = json_object();
	if (f->status == KB_FIG_KNOWN)
		json_object_set_new(o, "value",
				    f->is_number ? num(f->value) : json_string(f->text));
	else
		json_object_set_new(o, "value", json_null());
	if (f->unit[0])
		json_object_set_new(o, "unit", json_string(f->unit));
	json_object_set_new(o, "label", json_string(f->label));
	if (f->status != KB_FIG_KNOWN)
		json_object_set_new(o, "status", json_string(STATUS[f->status]));
	if (f->gap[0])
		json_object_set_new(o, "gap", json_string(f->gap));
	if (f->status == KB_FIG_KNOWN) {
		json_object_set_new(o, "source_keys", tools_kb_split(f->source_keys, ','));
		if (strcmp(f->source, g->sources_product) == 0)
			json_object_set_new(o, "source_in", json_string("sources_product"));
		else if (strcmp(f->source, g->sources_per_cc_limits) == 0)
			json_object_set_new(o, "source_in", json_string("sources_per_cc_limits"));
		else
			json_object_set_new(o, "source", json_string(f->source));
	}
	if (f->derivation[0])
		json_object_set_new(o, "derivation", json_string(f->derivation));
	return o;
}

static json_t *derived_json(const struct kb_derived *d)
{
	json_t *o = json_object();
	json_object_set_new(o, "value", d->known ? num(d->value) : json_null());
	json_object_set_new(o, "unit", json_string(d->unit));
	json_object_set_new(o, "label", json_string(d->label));
	json_object_set_new(o, "derived", json_true());
	json_object_set_new(o, "formula", json_string(d->formula));
	json_object_set_new(o, "inputs", json_string(d->inputs));
	return o;
}

static json_t *features_json(const struct kb_gpu *g, const struct kb_arch *t)
{
	json_t *o = json_object();
	char tgt[32];
	kb_arch_format(t, tgt, sizeof tgt);
	int runs = kb_arch_runs_on(t, g->cc_major, g->cc_minor);
	for (int i = 0; i < KB_FEAT_COUNT; i++) {
		struct kb_feature_use u;
		kb_feature_usable(t, i, &u);
		const struct kb_figure *f = kb_gpu_figure(g, FEATURE_FIELD[i]);
		json_t *fo = json_object();
		json_object_set_new(fo, "usable", json_boolean(u.usable && runs));
		json_object_set_new(fo, "target", json_string(tgt));
		json_object_set_new(fo, "derived", json_true());
		json_object_set_new(fo, "rule", json_string(u.why));
		if (f)
			json_object_set_new(fo, "table_flag", json_string(f->text));
		json_object_set_new(o, u.name, fo);
	}
	return o;
}

static json_t *occupancy_json(const struct kb_cc_limits *L, const struct kb_occupancy *o, int bt,
			      int regs, int smem)
{
	return json_pack(
		"{s:i,s:i,s:i,s:i,s:i,s:f,s:s,s:{s:i,s:i,s:i,s:i},s:i,s:i,s:b,s:s,s:b,s:s,s:s}",
		"block_threads", bt, "regs_per_thread", regs, "smem_per_block_bytes", smem,
		"blocks_per_sm", o->blocks_per_sm, "active_warps_per_sm", o->active_warps_per_sm,
		"occupancy", o->occupancy, "limiting", o->limiting_name, "limits", "warps",
		o->limit_warps, "blocks", o->limit_blocks, "registers", o->limit_regs,
		"shared_memory", o->limit_smem, "regs_per_warp_alloc", o->regs_per_warp_alloc,
		"smem_per_block_alloc_bytes", o->smem_per_block_alloc_bytes, "needs_smem_optin",
		o->needs_optin, "reason", o->reason, "derived", 1, "formula",
		"min over: warps floor(max_warps/warps_per_block); blocks max_blocks_per_sm; "
		"registers floor(floor(regs_per_sm/4 / roundup(regs*32,256))*4 / "
		"warps_per_block); shared memory floor(smem_per_sm / roundup(smem+reserved, unit))",
		"source",
		L->cc_major >= 8
			? "CUDA cuda_occupancy.h (reg unit 256/warp, 4 sub-partitions, smem unit 128 B); "
			  "1 KB reserved smem per block on 8.0+ (PG-LEG sect.20.7, MEAS-H200); per-CC "
			  "limits from per_cc.csv"
			: "CUDA cuda_occupancy.h (reg unit 256/warp, 4 sub-partitions, smem unit 256 B on "
			  "7.x, no reserved smem); per-CC limits from per_cc.csv");
}

/* The whole record of one GPU. target: feature target (NULL = best). */
json_t *tools_kb_gpu_json(const struct kb *kb, const struct kb_gpu *g, const struct kb_arch *target)
{
	json_t *o = json_object(), *figs = json_object(), *der = json_object(),
	       *srcs = json_object(), *conf = json_array();
	json_object_set_new(o, "id", json_string(g->id));
	json_object_set_new(o, "name", json_string(g->name));
	json_object_set_new(o, "uri", json_sprintf(GPU_URI "%s", g->id));
	json_object_set_new(o, "form_factor", json_string(g->form_factor));
	json_object_set_new(o, "architecture", json_string(g->architecture));
	json_object_set_new(o, "compute_capability", json_string(g->compute_capability));
	json_object_set_new(o, "sm_target", json_string(g->sm_target));
	json_object_set_new(o, "best_target", json_string(g->best_target));
	for (size_t i = 0; i < g->figures_len; i++) {
		const struct kb_figure *f = &g->figures[i];
		json_object_set_new(figs, f->field, figure_json(g, f));
		/* the keys this GPU cites, once each */
		char keys[256];
		snprintf(keys, sizeof keys, "%s", f->source_keys);
		char *save = NULL;
		for (char *k = strtok_r(keys, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
			const struct kb_source *s = kb_source_find(kb, k);
			if (s && !json_object_get(srcs, k))
				json_object_set_new(srcs, k, json_string(s->title));
		}
	}
	json_object_set_new(o, "figures", figs);
	struct kb_derived d[KB_MAX_DERIVED];
	size_t nd = kb_gpu_derived(g, d, KB_MAX_DERIVED);
	for (size_t i = 0; i < nd; i++)
		json_object_set_new(der, d[i].name, derived_json(&d[i]));
	json_object_set_new(o, "derived", der);
	struct kb_arch best;
	if (!target && kb_arch_parse(g->best_target, &best, NULL) == 0)
		target = &best;
	if (target)
		json_object_set_new(o, "features", features_json(g, target));
	json_object_set_new(o, "notes", json_string(g->notes));
	json_object_set_new(o, "derived_in_source", json_string(g->derived_fields));
	json_object_set_new(o, "sources_product", json_string(g->sources_product));
	json_object_set_new(o, "sources_per_cc_limits", json_string(g->sources_per_cc_limits));
	char cl[64];
	snprintf(cl, sizeof cl, "%s", g->conflicts);
	char *save = NULL;
	for (char *c = strtok_r(cl, ",", &save); c; c = strtok_r(NULL, ",", &save))
		for (size_t i = 0; i < kb_conflict_count(kb); i++)
			if (strcmp(kb_conflict_at(kb, i)->id, c) == 0)
				json_array_append_new(conf, json_pack("{s:s,s:s}", "id", c, "text",
								      kb_conflict_at(kb, i)->text));
	json_object_set_new(o, "conflicts", conf);
	json_object_set_new(o, "sources", srcs);
	json_object_set_new(o, "aliases", tools_kb_split(g->aliases, ','));
	return o;
}

static double fig_value(const struct kb_gpu *g, const char *field, int *known)
{
	const struct kb_figure *f = kb_gpu_figure(g, field);
	*known = f && f->status == KB_FIG_KNOWN && f->is_number;
	return *known ? f->value : 0;
}

static void gpu_line(const struct kb_gpu *g, char *buf, size_t cap)
{
	int k1, k2, k3, k4;
	double sms = fig_value(g, "sm_count", &k1), mem = fig_value(g, "memory_gb", &k2),
	       bw = fig_value(g, "memory_bandwidth_gbs", &k3),
	       bf = fig_value(g, "fp16_bf16_tensor_dense_tflops", &k4);
	char s1[24] = "? SMs", s2[24] = "?", s3[24] = "?", s4[48] = "unconfirmed";
	if (k1)
		snprintf(s1, sizeof s1, "%g SMs", sms);
	if (k2)
		snprintf(s2, sizeof s2, "%g", mem);
	if (k3)
		snprintf(s3, sizeof s3, "%g", bw);
	if (k4)
		snprintf(s4, sizeof s4, "%g TFLOPS dense", bf);
	/* The figure is FP16 on parts without BF16 (T4, V100): say which. */
	const struct kb_figure *bf16 = kb_gpu_figure(g, "feat_bf16_sm80");
	int has_bf16 = bf16 && strcmp(bf16->text, "yes") == 0;
	snprintf(buf, cap, "%s (%s): %s, CC %s, %s, %s GB at %s GB/s, %s tensor %s", g->name, g->id,
		 g->architecture, g->compute_capability, s1, s2, s3, has_bf16 ? "BF16" : "FP16",
		 s4);
}

/* An unknown GPU: isError with the closest names. */
static int gpu_not_found(const struct kb *kb, const char *name, json_t **out, int rc,
			 struct kf_err *err)
{
	const char *ids[4];
	size_t n = kb_gpu_suggest(kb, name, ids, 4);
	json_t *sug = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(sug, json_string(ids[i]));
	*out = json_pack("{s:s,s:o}", "summary", err->msg, "suggestions", sug);
	return rc;
}

/* ---- get_gpu_specs ---------------------------------------------------------- */

static int specs_one(struct kb *kb, const char *name, const json_t *args, int brief, json_t **out,
		     struct kf_err *err)
{
	const struct kb_gpu *m[KB_MAX_MATCHES];
	size_t n = 0;
	int amb = 0, rc;
	if ((rc = kb_gpu_resolve(kb, name, m, KB_MAX_MATCHES, &n, &amb, err)))
		return rc == KF_ENOTFOUND ? gpu_not_found(kb, name, out, rc, err) : rc;
	const struct kb_gpu *g = m[0];
	struct kb_arch target, *tp = NULL;
	const char *arch = json_string_value(json_object_get(args, "arch"));
	if (arch) {
		if ((rc = kb_arch_parse(arch, &target, err)))
			return rc;
		tp = &target;
	}
	char line[320];
	gpu_line(g, line, sizeof line);
	json_t *res = json_object();
	if (amb) {
		char sum[400];
		snprintf(sum, sizeof sum, "%s [\"%s\" names %zu GPUs; showing the canonical pick]",
			 line, name, n);
		json_object_set_new(res, "summary", json_string(sum));
	} else {
		json_object_set_new(res, "summary", json_string(line));
	}
	json_object_set_new(res, "gpu",
			    brief ? tools_kb_gpu_brief(g, tp) : tools_kb_gpu_json(kb, g, tp));
	if (tp) {
		char t[32];
		kb_arch_format(tp, t, sizeof t);
		json_object_set_new(res, "target_runs_on_gpu",
				    json_boolean(kb_arch_runs_on(tp, g->cc_major, g->cc_minor)));
	}
	if (amb) {
		json_t *ids = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(ids, json_string(m[i]->id));
		json_t *a = json_pack("{s:s,s:o}", "query", name, "matches", ids);
		if (!brief)
			json_object_set_new(
				a, "rule",
				json_string("an alias naming several GPUs resolves to "
					    "its canonical pick (the flagship datacenter "
					    "part); ask for one of matches by id for another"));
		json_object_set_new(res, "ambiguous", a);
	}
	json_t *occ = json_object_get(args, "occupancy");
	if (occ) {
		struct kb_cc_limits L;
		struct kb_occupancy o;
		char t[32];
		struct kb_arch a;
		if (!tp && kb_arch_parse(g->best_target, &a, NULL) == 0)
			tp = &a;
		kb_arch_format(tp, t, sizeof t);
		int bt = (int)json_integer_value(json_object_get(occ, "block_threads"));
		int regs = (int)json_integer_value(json_object_get(occ, "regs_per_thread"));
		int smem = (int)json_integer_value(json_object_get(occ, "smem_per_block_bytes"));
		if ((rc = kb_cc_limits_for_arch(kb, t, &L, err)) ||
		    (rc = kb_occupancy(&L, bt, regs, smem, &o, err))) {
			json_decref(res);
			return rc;
		}
		json_object_set_new(res, "occupancy", occupancy_json(&L, &o, bt, regs, smem));
	}
	*out = res;
	return 0;
}

static int specs_list(struct kb *kb, json_t **out)
{
	json_t *arr = json_array();
	static const char *const cols[] = {"sm_count",
					   "memory_gb",
					   "memory_bandwidth_gbs",
					   "peak_fp32_tflops",
					   "fp16_bf16_tensor_dense_tflops",
					   "fp8_tensor_dense_tflops"};
	for (size_t i = 0; i < kb_gpu_count(kb); i++) {
		const struct kb_gpu *g = kb_gpu_at(kb, i);
		json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s}", "id", g->id, "name", g->name,
				      "architecture", g->architecture, "compute_capability",
				      g->compute_capability, "best_target", g->best_target);
		for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
			int k;
			double v = fig_value(g, cols[c], &k);
			const struct kb_figure *f = kb_gpu_figure(g, cols[c]);
			json_object_set_new(o, cols[c],
					    k				  ? num(v)
					    : f && f->status == KB_FIG_NA ? json_string("n/a")
									  : json_null());
		}
		json_array_append_new(arr, o);
	}
	char sum[96];
	snprintf(sum, sizeof sum,
		 "%zu GPUs; ask for one by id or alias for every figure with its source",
		 kb_gpu_count(kb));
	*out = json_pack(
		"{s:s,s:o,s:s}", "summary", sum, "gpus", arr, "note",
		"null = not confirmed from a source, \"n/a\" = does not exist on that GPU; figures per GPU carry their sources");
	return 0;
}

static int specs_compare(struct kb *kb, const json_t *names, int brief, json_t **out,
			 struct kf_err *err)
{
	const struct kb_gpu *g[KB_COMPARE_MAX];
	const char *nm[KB_COMPARE_MAX];
	size_t n = json_array_size(names);
	int rc;
	for (size_t i = 0; i < n && i < KB_COMPARE_MAX; i++)
		nm[i] = json_string_value(json_array_get(names, i));
	if ((rc = kb_gpu_compare(kb, nm, n, g, err))) {
		if (rc != KF_ENOTFOUND)
			return rc;
		for (size_t i = 0; i < n; i++) /* the name that failed */
			if (kb_gpu_find(kb, nm[i] ? nm[i] : "", &g[0], NULL) != 0)
				return gpu_not_found(kb, nm[i] ? nm[i] : "", out, rc, err);
		return rc;
	}
	char sum[320] = "compare:";
	size_t at = strlen(sum);
	for (size_t i = 0; i < n; i++) {
		at += (size_t)snprintf(sum + at, sizeof sum - at > 0 ? sizeof sum - at : 0, "%s %s",
				       i ? "," : "", g[i]->id);
		if (at >= sizeof sum)
			at = sizeof sum - 1;
	}
	if (brief) {
		*out = tools_kb_compare_brief(g, n);
		json_object_set_new(*out, "summary", json_string(sum));
		return 0;
	}
	json_t *hdr = json_array(), *rows = json_array();
	for (size_t i = 0; i < n; i++) {
		json_array_append_new(
			hdr, json_pack("{s:s,s:s,s:s,s:s,s:s}", "id", g[i]->id, "name", g[i]->name,
				       "uri", "", "sources_product", g[i]->sources_product,
				       "sources_per_cc_limits", g[i]->sources_per_cc_limits));
		json_object_set_new(json_array_get(hdr, i), "uri",
				    json_sprintf(GPU_URI "%s", g[i]->id));
	}
	for (size_t f = 0; f < g[0]->figures_len; f++) {
		const struct kb_figure *f0 = &g[0]->figures[f];
		json_t *vals = json_array(), *keys = json_array();
		for (size_t i = 0; i < n; i++) {
			const struct kb_figure *fi = kb_gpu_figure(g[i], f0->field);
			json_t *fj = fi ? figure_json(g[i], fi) : json_object();
			/* "n/a" (no such format) must read apart from null (unconfirmed),
			 * as in the list view */
			if (fi && fi->status == KB_FIG_NA)
				json_array_append_new(vals, json_string("n/a"));
			else
				json_array_append(vals, json_object_get(fj, "value")
								? json_object_get(fj, "value")
								: json_null());
			json_t *k = json_object_get(fj, "source_keys");
			json_array_append_new(keys, k ? json_incref(k) : json_array());
			json_decref(fj);
		}
		json_array_append_new(rows,
				      json_pack("{s:s,s:s,s:s,s:b,s:o,s:o}", "field", f0->field,
						"label", f0->label, "unit", f0->unit, "derived", 0,
						"values", vals, "source_keys", keys));
	}
	struct kb_derived d[KB_COMPARE_MAX][KB_MAX_DERIVED];
	size_t nd = 0;
	for (size_t i = 0; i < n; i++)
		nd = kb_gpu_derived(g[i], d[i], KB_MAX_DERIVED);
	for (size_t k = 0; k < nd; k++) {
		json_t *vals = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(vals,
					      d[i][k].known ? num(d[i][k].value) : json_null());
		json_array_append_new(rows, json_pack("{s:s,s:s,s:s,s:b,s:o,s:s}", "field",
						      d[0][k].name, "label", d[0][k].label, "unit",
						      d[0][k].unit, "derived", 1, "values", vals,
						      "formula", d[0][k].formula));
	}
	*out = json_pack("{s:s,s:o,s:o}", "summary", sum, "gpus", hdr, "rows", rows);
	return 0;
}

static int specs_local(struct kb *kb, int brief, json_t **out, struct kf_err *err)
{
	const struct gpu_host *h = NULL;
	struct kf_err perr;
	kf_err_clear(&perr);
	if (gpu_probe(&h, &perr) != 0) {
		kf_err_set(err, KF_ENOGPU, "no GPU on this host: %s", perr.msg);
		*out = json_pack("{s:s,s:[],s:s}", "summary", err->msg, "local", "reason",
				 perr.msg);
		return KF_ENOGPU;
	}
	json_t *arr = json_array();
	char sum[320] = "";
	for (int i = 0; i < h->count; i++) {
		const struct gpu_info *d = &h->gpus[i];
		json_t *dev = json_pack(
			"{s:i,s:s,s:s,s:i,s:I,s:I,s:I,s:I,s:I,s:s}", "index", d->index, "name",
			d->name, "compute_capability", "", "sm_count", d->sm_count,
			"total_mem_bytes", (json_int_t)d->total_mem_bytes, "max_sm_clock_khz",
			(json_int_t)d->clock_khz, "max_mem_clock_khz", (json_int_t)d->mem_clock_khz,
			"mem_bus_width_bits", (json_int_t)d->mem_bus_width_bits, "l2_bytes",
			(json_int_t)d->l2_bytes, "source",
			"this host's CUDA driver (cuDeviceGetAttribute), read now");
		json_object_set_new(dev, "compute_capability",
				    json_sprintf("%d.%d", d->cc_major, d->cc_minor));
		json_t *o = json_pack("{s:o}", "device", dev);
		const struct kb_gpu *g = NULL;
		struct kf_err merr;
		kf_err_clear(&merr);
		if (kb_gpu_match_device(kb, d->name, d->cc_major, d->cc_minor, d->sm_count,
					(unsigned long long)d->total_mem_bytes, &g, &merr) == 0) {
			const struct kb_gpu *m[1];
			size_t nm = 0;
			int exact = kb_gpu_resolve(kb, d->name, m, 1, &nm, NULL, NULL) == 0;
			json_object_set_new(
				o, "match",
				json_pack("{s:s,s:b,s:s}", "id", g->id, "by_name", exact, "rule",
					  exact ? "the driver's name is an alias of this row"
						: "closest row with the same compute capability, "
						  "then SM count, then memory size"));
			json_object_set_new(o, "gpu",
					    brief ? tools_kb_gpu_brief(g, NULL)
						  : tools_kb_gpu_json(kb, g, NULL));
			int k;
			double sms = fig_value(g, "sm_count", &k);
			if (k && (int)sms != d->sm_count)
				json_object_set_new(o, "differs",
						    json_sprintf("device has %d SMs, the table %g",
								 d->sm_count, sms));
		} else {
			json_object_set_new(o, "match", json_null());
			json_object_set_new(o, "no_match", json_string(merr.msg));
		}
		size_t at = strlen(sum);
		snprintf(sum + at, sizeof sum - at, "%sGPU %d: %s (CC %d.%d, %d SMs)%s%s",
			 i ? "; " : "", d->index, d->name, d->cc_major, d->cc_minor, d->sm_count,
			 g ? " = " : " (no table row)", g ? g->id : "");
		json_array_append_new(arr, o);
	}
	*out = json_pack("{s:s,s:o,s:s}", "summary", sum, "local", arr, "driver",
			 h->driver_version_str);
	return 0;
}

/* What a brief answer leaves out, and how to ask for it. */
static const char BRIEF_MORE[] =
	"brief: units are in the names; source names a key list in sources. detail: \"full\" "
	"for every figure, formulas, feature rules, notes, source titles; fields: [names] for "
	"some";

static int specs_handler(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	struct kb *kb = NULL;
	int rc = tools_kb_need(mcp_call_app(ctx), &kb, err);
	if (rc)
		return rc;
	const char *gpu = json_string_value(json_object_get(args, "gpu"));
	const json_t *cmp = json_object_get(args, "compare");
	int list = json_is_true(json_object_get(args, "list"));
	int given = (gpu != NULL) + (cmp != NULL) + list;
	if (given != 1)
		return kf_err_set(err, KF_EINVAL,
				  "give exactly one of: gpu (a name, alias or \"local\"), "
				  "compare (2-4 names) or list: true");
	const json_t *fields = json_object_get(args, "fields");
	const char *detail = json_string_value(json_object_get(args, "detail"));
	int brief = !fields && !(detail && strcmp(detail, "full") == 0);
	if (list)
		return fields ? kf_err_set(err, KF_EINVAL,
					   "fields narrows one GPU or a comparison; list: true "
					   "already answers a few columns per GPU")
			      : specs_list(kb, out);
	if (cmp)
		rc = specs_compare(kb, cmp, brief, out, err);
	else if (strcmp(gpu, "local") == 0 && exec_is_remote(mcp_call_app(ctx)->exec))
		return tools_exec_gpu_local(ctx, args, out, err); /* the partition's nodes' */
	else if (strcmp(gpu, "local") == 0)
		rc = specs_local(kb, brief, out, err);
	else
		rc = specs_one(kb, gpu, args, brief, out, err);
	/* a bad name leaves in *out only the names there are (valid_fields) */
	if (rc == 0 && fields)
		rc = tools_kb_fields(*out, fields, cmp != NULL, err);
	if (rc == 0 && brief)
		json_object_set_new(*out, "more", json_string(BRIEF_MORE));
	return rc;
}

/* ---- guides ------------------------------------------------------------------- */

static int search_handler(struct tool_ctx *ctx, const json_t *args, json_t **out,
			  struct kf_err *err)
{
	struct kb *kb = NULL;
	int rc = tools_kb_need(mcp_call_app(ctx), &kb, err);
	if (rc)
		return rc;
	struct kb_search q = {
		.query = json_string_value(json_object_get(args, "query")),
		.arch = json_string_value(json_object_get(args, "arch")),
		.tag = json_string_value(json_object_get(args, "tag")),
		.limit = (int)json_integer_value(json_object_get(args, "limit")),
	};
	struct kb_hit *hits = NULL;
	size_t n = 0;
	if ((rc = kb_search_guides(kb, &q, &hits, &n, err)))
		return rc;
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr,
				      json_pack("{s:s,s:s,s:o,s:s,s:f}", "id", hits[i].id, "title",
						hits[i].title, "uri",
						json_sprintf(GUIDE_URI "%s", hits[i].id), "snippet",
						hits[i].snippet, "score", hits[i].score));
	char sum[320];
	if (n)
		snprintf(sum, sizeof sum, "%zu guide%s; best: %s (%s)", n, n == 1 ? "" : "s",
			 hits[0].id, hits[0].title);
	else
		snprintf(sum, sizeof sum, "no guide matches; try other words or drop the filters");
	free(hits);
	json_t *filters = json_object();
	if (q.arch)
		json_object_set_new(filters, "arch", json_string(q.arch));
	if (q.tag)
		json_object_set_new(filters, "tag", json_string(q.tag));
	*out = json_pack("{s:s,s:s,s:o,s:o}", "summary", sum, "query", q.query, "filters", filters,
			 "hits", arr);
	return 0;
}

static json_t *guide_json(const struct kb_guide *g)
{
	return json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:s,s:s}", "id", g->id, "title",
			 g->title, "uri", json_sprintf(GUIDE_URI "%s", g->id), "tags",
			 tools_kb_split(g->tags, ','), "archs", tools_kb_split(g->archs, ','),
			 "sources", tools_kb_split(g->sources, '\n'), "links",
			 tools_kb_split(g->links, ','), "related", tools_kb_split(g->related, ','),
			 "checked", g->checked, "markdown", g->body);
}

static int read_handler(struct tool_ctx *ctx, const json_t *args, json_t **out, struct kf_err *err)
{
	struct kb *kb = NULL;
	int rc = tools_kb_need(mcp_call_app(ctx), &kb, err);
	if (rc)
		return rc;
	struct kb_guide *g = NULL;
	if ((rc = kb_guide_read(kb, json_string_value(json_object_get(args, "id")), &g, err)))
		return rc;
	json_t *o = guide_json(g);
	json_object_set_new(o, "summary", json_string(g->title));
	kb_guide_free(g);
	*out = o;
	return 0;
}

/* ---- tables ------------------------------------------------------------------ */

#define NAME_SCHEMA "{\"type\":\"string\",\"maxLength\":127"

static const char SPECS_IN[] =
	"{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
	"\"gpu\":" NAME_SCHEMA "},"
	"\"compare\":{\"type\":\"array\",\"minItems\":2,\"maxItems\":4,\"items\":" NAME_SCHEMA "}},"
	"\"list\":{\"type\":\"boolean\"},"
	"\"detail\":{\"type\":\"string\",\"enum\":[\"brief\",\"full\"],\"default\":\"brief\"},"
	"\"fields\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":64,\"items\":" NAME_SCHEMA
	"},\"description\":\"e.g. [memory_bandwidth_gbs, features]\"},"
	"\"arch\":" NAME_SCHEMA ",\"description\":\"for feature usability, e.g. sm_90a\"},"
	"\"occupancy\":{\"type\":\"object\",\"additionalProperties\":false,"
	"\"required\":[\"block_threads\"],\"properties\":{"
	"\"block_threads\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1024},"
	"\"regs_per_thread\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":255},"
	"\"smem_per_block_bytes\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1048576}},"
	"\"description\":\"blocks per SM for such a block\"}}}";

static const char SPECS_OUT[] = "{\"type\":\"object\",\"required\":[\"summary\"],\"properties\":{"
				"\"summary\":{\"type\":\"string\"}}}";

static const char SEARCH_IN[] =
	"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"query\"],"
	"\"properties\":{"
	"\"query\":{\"type\":\"string\",\"maxLength\":512,"
	"\"description\":\"e.g. 'bank conflicts reading a column'\"},"
	"\"arch\":" NAME_SCHEMA ",\"description\":\"filter, e.g. sm_90 or h100\"},"
	"\"tag\":" NAME_SCHEMA "},"
	"\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":50,\"default\":10}}}";

static const char SEARCH_OUT[] =
	"{\"type\":\"object\",\"required\":[\"summary\",\"hits\"],\"properties\":{"
	"\"summary\":{\"type\":\"string\"},\"hits\":{\"type\":\"array\"}}}";

static const char READ_IN[] =
	"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"id\"],"
	"\"properties\":{\"id\":{\"type\":\"string\",\"maxLength\":63,"
	"\"description\":\"e.g. bank-conflicts\"}}}";

static const char READ_OUT[] =
	"{\"type\":\"object\",\"required\":[\"summary\",\"id\",\"title\",\"markdown\",\"sources\","
	"\"checked\"],"
	"\"properties\":{\"summary\":{\"type\":\"string\"},\"id\":{\"type\":\"string\"},"
	"\"title\":{\"type\":\"string\"},\"sources\":{\"type\":\"array\"},"
	"\"markdown\":{\"type\":\"string\"},\"checked\":{\"type\":\"string\"}}}";

static const struct tool_def KB_TOOLS[] = {
	{"get_gpu_specs", "GPU specs",
	 "Sourced NVIDIA GPU facts: gpu (h100, 'rtx 4090', sm_90, 'local'), compare or "
	 "list; detail 'full' (~15 KB): every figure, formula. null = unconfirmed.",
	 SPECS_IN, SPECS_OUT, TOOL_READ_ONLY | TOOL_IDEMPOTENT, specs_handler},
	{"search_guides", "Search guides",
	 "Ranked search of kforge's CUDA optimization guides: ids, titles and snippets for "
	 "read_guide.",
	 SEARCH_IN, SEARCH_OUT, TOOL_READ_ONLY | TOOL_IDEMPOTENT, search_handler},
	{"read_guide", "Read a guide",
	 "One guide as Markdown with its sources, related guides and what it was checked on.",
	 READ_IN, READ_OUT, TOOL_READ_ONLY | TOOL_IDEMPOTENT, read_handler},
};

const struct tool_group TOOLS_KB = {
	KB_TOOLS,	    sizeof KB_TOOLS / sizeof KB_TOOLS[0],
	TOOLS_KB_RESOURCES, sizeof TOOLS_KB_RESOURCES / sizeof TOOLS_KB_RESOURCES[0],
	TOOLS_KB_PROMPTS,   sizeof TOOLS_KB_PROMPTS / sizeof TOOLS_KB_PROMPTS[0],
};
