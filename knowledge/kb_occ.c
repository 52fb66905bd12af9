/* kb_occ: the pure computations of the knowledge module: compilation
 * targets, the occupancy calculator, feature usability and the derived
 * figures of a GPU. No database, no state: safe from any thread. The
 * occupancy rules follow CUDA's cuda_occupancy.h (CUDA 13.0:
 * cudaOccMaxActiveBlocksPerMultiprocessor and its helpers). */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/kb_int.h"

int kb_arch_parse(const char *text, struct kb_arch *out, struct kf_err *err)
{
	char t[KB_NAME_MAX_BYTES];
	size_t n = 0;
	memset(out, 0, sizeof *out);
	if (!text || !*text)
		return kf_err_set(err, KF_EINVAL,
				  "arch: empty; expected sm_XY, sm_XYa, sm_XYf, compute_XY or X.Y");
	if (strlen(text) >= sizeof t)
		return kf_err_set(err, KF_EINVAL, "arch: longer than %d bytes",
				  KB_NAME_MAX_BYTES - 1);
	for (const char *p = text; *p; p++)
		if (*p != ' ')
			t[n++] = (char)tolower((unsigned char)*p);
	t[n] = '\0';
	const char *p = t;
	if (strncmp(p, "sm_", 3) == 0)
		p += 3;
	else if (strncmp(p, "sm", 2) == 0 && isdigit((unsigned char)p[2]))
		p += 2;
	else if (strncmp(p, "compute_", 8) == 0) {
		p += 8;
		out->ptx = 1;
	}
	int major = 0, minor = 0;
	char suffix = 0;
	if (isdigit((unsigned char)p[0]) && p[1] == '.' && isdigit((unsigned char)p[2]) &&
	    p[3] == '\0' && p == t) {
		major = p[0] - '0';
		minor = p[2] - '0';
	} else if (isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[1]) && p[2] == '.' &&
		   isdigit((unsigned char)p[3]) && p[4] == '\0' && p == t) {
		major = (p[0] - '0') * 10 + (p[1] - '0');
		minor = p[3] - '0';
	} else {
		size_t d = 0;
		while (isdigit((unsigned char)p[d]))
			d++;
		if (d < 2 || d > 3)
			goto bad;
		int v = 0;
		for (size_t i = 0; i < d; i++)
			v = v * 10 + (p[i] - '0');
		major = v / 10;
		minor = v % 10;
		if (p[d] == 'a' || p[d] == 'f') {
			suffix = p[d];
			d++;
		}
		if (p[d] != '\0')
			goto bad;
	}
	if (major < 1 || major > 15)
		goto bad;
	out->major = major;
	out->minor = minor;
	out->suffix = suffix;
	return 0;
bad:
	return kf_err_set(err, KF_EINVAL,
			  "arch '%s' is not a target: expected sm_XY, sm_XYa, sm_XYf, "
			  "compute_XY or X.Y (e.g. sm_90a, sm_86, 8.9)",
			  text);
}

void kb_arch_format(const struct kb_arch *a, char *buf, size_t cap)
{
	if (a->suffix)
		snprintf(buf, cap, "%s_%d%d%c", a->ptx ? "compute" : "sm", a->major, a->minor,
			 a->suffix);
	else
		snprintf(buf, cap, "%s_%d%d", a->ptx ? "compute" : "sm", a->major, a->minor);
}

int kb_arch_runs_on(const struct kb_arch *t, int major, int minor)
{
	if (t->ptx && !t->suffix) /* PTX JIT-compiles forward */
		return major * 10 + minor >= t->major * 10 + t->minor;
	if (t->suffix == 'a')
		return major == t->major && minor == t->minor;
	/* sm_XY cubins and sm_XYf family code: same major, minor >= */
	return major == t->major && minor >= t->minor;
}

/* ---- occupancy ------------------------------------------------------------ */

static int round_up(int x, int unit)
{
	return unit > 0 ? (x + unit - 1) / unit * unit : x;
}

int kb_occupancy(const struct kb_cc_limits *lim, int block_threads, int regs_per_thread,
		 int smem_per_block_bytes, struct kb_occupancy *out, struct kf_err *err)
{
	memset(out, 0, sizeof *out);
	if (!lim || lim->warp_size <= 0 || lim->max_threads_per_sm <= 0)
		return kf_err_set(err, KF_EINVAL, "occupancy: no limits given");
	if (block_threads < 1 || block_threads > lim->max_threads_per_block)
		return kf_err_set(err, KF_EINVAL,
				  "block_threads %d out of range: 1..%d on CC %d.%d", block_threads,
				  lim->max_threads_per_block, lim->cc_major, lim->cc_minor);
	if (regs_per_thread < 0 || regs_per_thread > lim->max_regs_per_thread)
		return kf_err_set(err, KF_EINVAL,
				  "regs_per_thread %d out of range: 0..%d (0 = unknown)",
				  regs_per_thread, lim->max_regs_per_thread);
	if (smem_per_block_bytes < 0 || smem_per_block_bytes > (64 << 20))
		return kf_err_set(err, KF_EINVAL, "smem_per_block_bytes %d out of range: 0..%d",
				  smem_per_block_bytes, 64 << 20);

	int wpb = (block_threads + lim->warp_size - 1) / lim->warp_size;
	int max_warps = lim->max_threads_per_sm / lim->warp_size;
	out->warps_per_block = wpb;

	/* warps: cudaOccMaxBlocksPerSMWarpsLimit */
	out->limit_warps = max_warps / wpb;
	/* blocks: cudaOccMaxBlocksPerMultiprocessor */
	out->limit_blocks = lim->max_blocks_per_sm;

	/* registers: cudaOccMaxBlocksPerSMRegsLimit. Registers go to warps in
	 * units of reg_alloc_unit, per sub-partition; the launch check assumes
	 * warps rounded up to the number of sub-partitions. */
	int sub = lim->reg_sub_partitions > 0 ? lim->reg_sub_partitions : 4;
	int per_warp = round_up(regs_per_thread * lim->warp_size, lim->reg_alloc_unit);
	out->regs_per_warp_alloc = per_warp;
	int regs_block = per_warp * wpb;
	int regs_assumed = per_warp * round_up(wpb, sub);
	if (regs_per_thread == 0) {
		out->limit_regs = lim->max_blocks_per_sm; /* unknown: no limit */
	} else if (regs_assumed > lim->max_regs_per_block || regs_block > lim->max_regs_per_block) {
		out->limit_regs = 0;
		snprintf(out->reason, sizeof out->reason,
			 "block needs %d registers (%d warps x %d) but a block may "
			 "have %d",
			 regs_assumed, round_up(wpb, sub), per_warp, lim->max_regs_per_block);
	} else {
		int warps_sub = (lim->regs_per_sm / sub) / per_warp;
		out->limit_regs = warps_sub * sub / wpb;
	}

	/* shared memory: cudaOccMaxBlocksPerSMSmemLimit with the default
	 * carveout preference (the maximum) and the opt-in per-block limit. */
	int alloc = round_up(smem_per_block_bytes + lim->smem_reserved_per_block_bytes,
			     lim->smem_alloc_unit_bytes);
	out->smem_per_block_alloc_bytes = alloc;
	out->needs_optin = smem_per_block_bytes > lim->smem_static_max_bytes;
	int block_limit = lim->smem_per_block_optin_bytes + lim->smem_reserved_per_block_bytes;
	if (alloc > block_limit) {
		out->limit_smem = 0;
		snprintf(out->reason, sizeof out->reason,
			 "block needs %d B of shared memory (with %d B reserved) but "
			 "at most %d B fit one block (opt-in max %d B)",
			 alloc, lim->smem_reserved_per_block_bytes, block_limit,
			 lim->smem_per_block_optin_bytes);
	} else {
		out->limit_smem =
			alloc > 0 ? lim->smem_per_sm_bytes / alloc : lim->max_blocks_per_sm;
	}

	/* the smallest limit wins; ties go to warps, blocks, registers, smem */
	int lims[4] = {out->limit_warps, out->limit_blocks, out->limit_regs, out->limit_smem};
	static const char *const names[4] = {"warps", "blocks", "registers", "shared_memory"};
	int best = 0;
	for (int i = 1; i < 4; i++)
		if (lims[i] < lims[best])
			best = i;
	out->blocks_per_sm = lims[best];
	out->limiting = best;
	out->limiting_name = names[best];
	if (out->blocks_per_sm == 0) {
		out->limiting = KB_OCC_LIMIT_BLOCK_TOO_BIG;
		out->limiting_name = "block_too_big";
	}
	out->active_warps_per_sm = out->blocks_per_sm * wpb;
	out->occupancy = (double)out->active_warps_per_sm / max_warps;
	if (!out->reason[0])
		snprintf(out->reason, sizeof out->reason,
			 "%d blocks of %d warps per SM (%d of %d warps), limited by %s",
			 out->blocks_per_sm, wpb, out->active_warps_per_sm, max_warps,
			 out->limiting_name);
	return 0;
}

/* ---- features ------------------------------------------------------------- */

static const char *const FEAT_NAMES[KB_FEAT_COUNT] = {"cp.async", "tma",     "wgmma", "clusters",
						      "fp8",	  "tcgen05", "bf16",  "fp4"};

const char *kb_feature_name(int feature)
{
	return feature >= 0 && feature < KB_FEAT_COUNT ? FEAT_NAMES[feature] : NULL;
}

void kb_feature_usable(const struct kb_arch *t, int feature, struct kb_feature_use *out)
{
	int cc = t->major * 10 + t->minor;
	char tgt[32];
	kb_arch_format(t, tgt, sizeof tgt);
	memset(out, 0, sizeof *out);
	out->name = kb_feature_name(feature);
	switch (feature) {
	case KB_FEAT_CP_ASYNC:
		out->usable = cc >= 80;
		snprintf(out->why, sizeof out->why,
			 "cp.async needs sm_80 or newer (PTX ISA; PG-LEG Table 26); target %s",
			 tgt);
		break;
	case KB_FEAT_TMA:
		out->usable = cc >= 90;
		snprintf(out->why, sizeof out->why,
			 "TMA (cp.async.bulk.tensor) needs sm_90 or newer (PG-LEG "
			 "sect.20.8; TG-HOPPER); target %s",
			 tgt);
		break;
	case KB_FEAT_WGMMA:
		out->usable = t->major == 9 && t->minor == 0 && t->suffix == 'a';
		snprintf(out->why, sizeof out->why,
			 "wgmma needs exactly sm_90a (LLVM-D155851; PG-LEG sect.20.1.1); "
			 "not on sm_90 without 'a', not on Blackwell (TRITON-6680); "
			 "target %s",
			 tgt);
		break;
	case KB_FEAT_CLUSTERS:
		out->usable = cc >= 90;
		snprintf(out->why, sizeof out->why,
			 "thread block clusters / distributed shared memory need "
			 "sm_90 or newer (TG-HOPPER sect.1.4.1.3); target %s",
			 tgt);
		break;
	case KB_FEAT_FP8:
		out->usable = cc >= 89;
		snprintf(out->why, sizeof out->why,
			 "FP8 (e4m3/e5m2) tensor-core MMA needs sm_89 or newer (PG-LEG "
			 "sect.20.7; on sm_90 the wgmma FP8 path also needs sm_90a); "
			 "target %s",
			 tgt);
		break;
	case KB_FEAT_TCGEN05:
		out->usable = (t->suffix == 'a' || t->suffix == 'f') &&
			      (t->major == 10 || t->major == 11);
		snprintf(out->why, sizeof out->why,
			 "tcgen05/TMEM needs an arch-specific or family target of "
			 "CC 10.x/11.x (sm_100a/f, sm_103a/f, sm_110a/f), never sm_120 "
			 "(NV-FORUM-TCGEN05); target %s",
			 tgt);
		break;
	case KB_FEAT_BF16:
		out->usable = cc >= 80;
		snprintf(out->why, sizeof out->why,
			 "BF16 tensor-core MMA needs sm_80 or newer (A100-BLOG; PG-LEG "
			 "Table 26); target %s",
			 tgt);
		break;
	case KB_FEAT_FP4:
		out->usable = (t->suffix == 'a' || t->suffix == 'f') &&
			      (t->major == 10 || t->major == 11 || t->major == 12);
		snprintf(out->why, sizeof out->why,
			 "FP4 tensor MMA needs sm_100a/f or newer datacenter targets, or "
			 "sm_120a/f (block-scaled mma.sync) (SOURCES.md feature flags); "
			 "target %s",
			 tgt);
		break;
	default:
		out->name = "unknown";
		snprintf(out->why, sizeof out->why, "unknown feature %d", feature);
	}
}

/* ---- derived figures ------------------------------------------------------ */

static int fig(const struct kb_gpu *g, const char *field, double *v)
{
	const struct kb_figure *f = kb_gpu_figure(g, field);
	if (!f || f->status != KB_FIG_KNOWN || !f->is_number)
		return 0;
	*v = f->value;
	return 1;
}

static void put(struct kb_derived *out, size_t cap, size_t *n, const char *name, const char *label,
		const char *unit, int known, double value, const char *formula, const char *inputs)
{
	if (*n >= cap)
		return;
	struct kb_derived *d = &out[(*n)++];
	memset(d, 0, sizeof *d);
	snprintf(d->name, sizeof d->name, "%s", name);
	snprintf(d->label, sizeof d->label, "%s", label);
	snprintf(d->unit, sizeof d->unit, "%s", unit);
	d->known = known;
	d->value = known ? value : 0;
	snprintf(d->formula, sizeof d->formula, "%s", formula);
	snprintf(d->inputs, sizeof d->inputs, "%s", known ? inputs : "an input is unknown or n/a");
}

size_t kb_gpu_derived(const struct kb_gpu *g, struct kb_derived *out, size_t cap)
{
	static const struct {
		const char *prec, *field, *unit;
	} ridge[] = {
		{"fp32", "peak_fp32_tflops", "FLOP/byte"},
		{"fp64", "peak_fp64_tflops", "FLOP/byte"},
		{"tf32_tensor", "tf32_tensor_dense_tflops", "FLOP/byte"},
		{"fp16_bf16_tensor", "fp16_bf16_tensor_dense_tflops", "FLOP/byte"},
		{"fp8_tensor", "fp8_tensor_dense_tflops", "FLOP/byte"},
		{"int8_tensor", "int8_tensor_dense_tops", "OP/byte"},
		{"fp4_tensor", "fp4_tensor_dense_tflops", "FLOP/byte"},
	};
	size_t n = 0;
	double bw = 0, v = 0, sms = 0, tps = 0, bps = 0, lanes = 0, clk = 0, kb = 0;
	int have_bw = fig(g, "memory_bandwidth_gbs", &bw) && bw > 0;
	char name[48], label[64], formula[192], inputs[192];

	for (size_t i = 0; i < sizeof ridge / sizeof ridge[0]; i++) {
		int ok = have_bw && fig(g, ridge[i].field, &v);
		snprintf(name, sizeof name, "ridge_point_%s", ridge[i].prec);
		snprintf(label, sizeof label, "ridge point %s", ridge[i].prec);
		snprintf(formula, sizeof formula, "%s * 1e12 / (memory_bandwidth_gbs * 1e9)",
			 ridge[i].field);
		snprintf(inputs, sizeof inputs, "%g T / %g GB/s", v, bw);
		put(out, cap, &n, name, label, ridge[i].unit, ok, ok ? v * 1e12 / (bw * 1e9) : 0,
		    formula, inputs);
	}
	int have_sms = fig(g, "sm_count", &sms);
	int have_tps = fig(g, "max_threads_per_sm", &tps);
	snprintf(inputs, sizeof inputs, "%g threads / 32", tps);
	put(out, cap, &n, "max_warps_per_sm", "max resident warps per SM", "warps", have_tps,
	    tps / 32, "max_threads_per_sm / 32", inputs);
	snprintf(inputs, sizeof inputs, "%g SMs x %g threads / 32", sms, tps);
	put(out, cap, &n, "max_resident_warps", "max resident warps (whole GPU)", "warps",
	    have_sms && have_tps, sms * tps / 32, "sm_count * max_threads_per_sm / 32", inputs);
	snprintf(inputs, sizeof inputs, "%g SMs x %g threads", sms, tps);
	put(out, cap, &n, "max_resident_threads", "max resident threads (whole GPU)", "threads",
	    have_sms && have_tps, sms * tps, "sm_count * max_threads_per_sm", inputs);
	int have_bps = fig(g, "max_resident_blocks_per_sm", &bps);
	double per_sm = have_tps && have_bps ? (tps / 256 < bps ? tps / 256 : bps) : 0;
	per_sm = (double)(long)per_sm;
	snprintf(inputs, sizeof inputs, "%g SMs x min(%g / 256, %g)", sms, tps, bps);
	put(out, cap, &n, "full_wave_blocks_256", "blocks in one full wave at 256 threads",
	    "blocks", have_sms && have_tps && have_bps, sms * per_sm,
	    "sm_count * min(floor(max_threads_per_sm / 256), max_resident_blocks_per_sm)"
	    " (no register or shared-memory limit)",
	    inputs);
	int ok = have_sms && fig(g, "fp32_lanes_per_sm", &lanes) && fig(g, "boost_clock_mhz", &clk);
	snprintf(inputs, sizeof inputs, "%g SMs x %g lanes x 2 x %g MHz", sms, lanes, clk);
	put(out, cap, &n, "fp32_from_clock_tflops", "FP32 peak from SMs x lanes x clock", "TFLOPS",
	    ok, sms * lanes * 2 * clk / 1e6,
	    "sm_count * fp32_lanes_per_sm * 2 (FMA) * boost_clock_mhz / 1e6", inputs);
	ok = fig(g, "smem_per_sm_kb", &kb);
	snprintf(inputs, sizeof inputs, "%g KB x 1024", kb);
	put(out, cap, &n, "smem_per_sm_bytes", "shared memory per SM", "bytes", ok, kb * 1024,
	    "smem_per_sm_kb * 1024 (KB = KiB, SOURCES.md)", inputs);
	ok = fig(g, "max_smem_per_block_optin_kb", &kb);
	snprintf(inputs, sizeof inputs, "%g KB x 1024", kb);
	put(out, cap, &n, "max_smem_per_block_optin_bytes", "max shared memory per block (opt-in)",
	    "bytes", ok, kb * 1024, "max_smem_per_block_optin_kb * 1024", inputs);
	double l2 = 0;
	ok = have_sms && fig(g, "l2_cache_mb", &l2) && sms > 0;
	snprintf(inputs, sizeof inputs, "%g MB x 1000 / %g SMs", l2, sms);
	put(out, cap, &n, "l2_per_sm_kb", "L2 per SM", "KB (decimal)", ok, ok ? l2 * 1000 / sms : 0,
	    "l2_cache_mb * 1000 / sm_count", inputs);
	return n;
}
