/* profile_rules: from one kernel's ncu metrics to findings, each tied to the
 * knowledge-base guide that addresses it, and the one or two things most
 * worth trying. The thresholds follow Nsight Compute's own reading of the
 * same metrics (a unit above 60% of its speed of light is the bottleneck)
 * and kforge's guides (ncu-metrics, roofline,
 * coalescing, occupancy). Pure: no I/O. */
#include "sandbox/profile/profile.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define BUSY_PCT 60.0 /* a unit this busy is what limits the kernel */
/* DRAM this busy is near the floor of a memory-bound kernel: device copies
 * reach about 88% of the theoretical peak (H200: 4254 of 4800 GB/s,
 * kernels/MEASUREMENTS.md), so 70% is 80% of what any kernel gets. */
#define FLOOR_PCT 70.0

static int known(double v)
{
	return !isnan(v);
}

static double or0(double v)
{
	return known(v) ? v : 0;
}

static struct profile_finding *add(struct profile_findings *out, const char *id, const char *guide,
				   double weight)
{
	if (out->len == PROFILE_FINDINGS_MAX)
		return NULL;
	struct profile_finding *f = &out->f[out->len++];
	memset(f, 0, sizeof *f);
	snprintf(f->id, sizeof f->id, "%s", id);
	snprintf(f->guide, sizeof f->guide, "%s", guide);
	f->weight = weight < 0 ? 0 : weight > 1 ? 1 : weight;
	return f;
}

static void say(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(char *buf, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, PROFILE_TEXT_BYTES, fmt, ap);
	va_end(ap);
}

/* The two stall reasons with the most warp cycles per issued instruction
 * (top[1] -1 when there is one, top[0] -1 when none) and the sum of all
 * stalls; selected and not_selected are issuing or ready, not stalled. */
static void stall_top(const struct profile_metrics *m, int top[2], double *total)
{
	top[0] = top[1] = -1;
	*total = 0;
	for (size_t i = 0; i < m->stalls_len; i++) {
		const struct profile_stall *s = &m->stalls[i];
		if (!strcmp(s->name, "selected") || !strcmp(s->name, "not_selected") ||
		    !(s->per_inst > 0))
			continue;
		*total += s->per_inst;
		if (top[0] < 0 || s->per_inst > m->stalls[top[0]].per_inst) {
			top[1] = top[0];
			top[0] = (int)i;
		} else if (top[1] < 0 || s->per_inst > m->stalls[top[1]].per_inst) {
			top[1] = (int)i;
		}
	}
	if (*total <= 0)
		top[0] = top[1] = -1;
}

/* 1 when the top stall is a wait for global or local memory
 * (long_scoreboard: an L1TEX load's result not back yet). */
static int waits_on_memory(const struct profile_metrics *m)
{
	int top[2];
	double total;
	stall_top(m, top, &total);
	return top[0] >= 0 && !strcmp(m->stalls[top[0]].name, "long_scoreboard");
}

/* The cost model's bytes over the kernel's time as a share of DRAM's
 * speed of light: the counters' share scaled by the bytes the spec says
 * over the bytes DRAM moved (ncu's share is moved bytes over the elapsed
 * time at the peak rate). NaN when a figure is missing. */
static double dram_cost_pct(const struct profile_metrics *m, double cost_bytes)
{
	double moved = or0(m->dram_read_bytes) + or0(m->dram_write_bytes);
	if (!known(m->sol_dram_pct) || cost_bytes <= 0 || moved <= 0)
		return NAN;
	double pct = m->sol_dram_pct * cost_bytes / moved;
	return pct > 100 ? 100 : pct;
}

/* DRAM's share for the verdict: the counters', or the cost model's when
 * larger (part of the traffic stayed in L2: the kernel is as close to the
 * floor as its time says). */
static double dram_share(const struct profile_metrics *m, const struct profile_findings *out)
{
	double dram = or0(m->sol_dram_pct);
	return known(out->dram_cost_pct) && out->dram_cost_pct > dram ? out->dram_cost_pct : dram;
}

/* Where the kernel stands against its speed of light. */
static void classify(const struct profile_metrics *m, struct profile_findings *out)
{
	double comp = or0(m->sol_compute_pct), mem = or0(m->sol_memory_pct),
	       dram = dram_share(m, out);
	if (mem < dram)
		mem = dram;
	if (mem >= BUSY_PCT && mem >= comp) {
		snprintf(out->bound, sizeof out->bound, "memory");
		if (dram > or0(m->sol_dram_pct) && dram >= FLOOR_PCT)
			say(out->verdict,
			    "memory-bound and near the DRAM floor: the spec's bytes in its time are "
			    "%.0f%% of DRAM's speed of light (the counters say %.0f%%: part of the "
			    "traffic stayed in L2; compute %.0f%%)",
			    dram, or0(m->sol_dram_pct), comp);
		else if (dram >= FLOOR_PCT)
			say(out->verdict,
			    "memory-bound and near the DRAM floor: DRAM at %.0f%% of its speed of "
			    "light (compute %.0f%%)",
			    dram, comp);
		else
			say(out->verdict,
			    "memory-bound: the busiest memory unit at %.0f%% of its speed of light, "
			    "DRAM at %.0f%% (compute %.0f%%)",
			    mem, dram, comp);
	} else if (comp >= BUSY_PCT) {
		snprintf(out->bound, sizeof out->bound, "compute");
		say(out->verdict,
		    "compute-bound: SM throughput at %.0f%% of its speed of light "
		    "(memory %.0f%%)",
		    comp, mem);
	} else if (mem >= comp || waits_on_memory(m)) {
		/* No unit is busy and the warps wait on their global loads (or
		 * the memory side leads): the memory latency, not the bandwidth
		 * or the issue rate, sets its time. */
		snprintf(out->bound, sizeof out->bound, "memory_latency");
		say(out->verdict,
		    "memory-bound at a fraction of DRAM speed of light: DRAM at %.0f%%, the "
		    "busiest memory unit at %.0f%% (compute %.0f%%): too few bytes in flight to "
		    "cover the memory latency",
		    dram, mem, comp);
	} else {
		snprintf(out->bound, sizeof out->bound, "latency");
		say(out->verdict,
		    "latency-bound: no unit is busy (compute %.0f%%, memory %.0f%%, DRAM %.0f%% of "
		    "speed of light): warps wait rather than work",
		    comp, mem, dram);
	}
}

/* 1 when memory sets the kernel's time: bandwidth or latency. */
static int memory_side(const struct profile_findings *out)
{
	return !strcmp(out->bound, "memory") || !strcmp(out->bound, "memory_latency");
}

/* DRAM speed of light and the bytes moved against the cost model. */
static void rule_dram(const struct profile_metrics *m, double cost_bytes,
		      struct profile_findings *out)
{
	double dram = known(m->sol_dram_pct) ? dram_share(m, out) : NAN;
	struct profile_finding *f;
	if (known(dram) && dram >= FLOOR_PCT && (f = add(out, "dram_near_floor", "roofline", 0)))
		say(f->text,
		    "%s %.0f%% of DRAM's speed of light: close to the floor for the bytes it "
		    "moves; only moving fewer bytes (fusing with a neighbour, a narrower dtype) "
		    "makes it much faster",
		    dram > m->sol_dram_pct ? "the spec's bytes in its time are" : "DRAM at", dram);
	else if (known(dram) && !strcmp(out->bound, "memory_latency") &&
		 (f = add(out, "dram_underused", "latency-hiding",
			  (FLOOR_PCT - dram) / FLOOR_PCT))) {
		say(f->text,
		    "DRAM at %.0f%% of its speed of light in a kernel whose work is moving bytes: "
		    "too few bytes are in flight to cover the memory latency",
		    dram);
		say(f->try_,
		    "keep more bytes in flight: 16-byte vector loads, several independent loads "
		    "per thread issued before their first use, enough resident warps "
		    "(kforge://guides/latency-hiding, kforge://guides/vector-access)");
	}
	double moved = or0(m->dram_read_bytes) + or0(m->dram_write_bytes);
	if (cost_bytes <= 0 || !known(m->dram_read_bytes) || moved <= 0)
		return;
	double ratio = moved / cost_bytes;
	if (ratio > 1.25 && (f = add(out, "dram_excess", "smem-tiling", (ratio - 1) / 2))) {
		say(f->text,
		    "DRAM moved %.2f MB, %.2fx the %.2f MB of the spec's cost model: data is "
		    "fetched more than once (re-reads that miss L2) or partly used sectors",
		    moved / 1e6, ratio, cost_bytes / 1e6);
		say(f->try_, "read each byte from DRAM once: keep reused data in registers or "
			     "shared memory (kforge://guides/smem-tiling)");
	} else if (ratio < 0.8 && (f = add(out, "dram_below_cost", "roofline", 0))) {
		say(f->text,
		    "DRAM moved %.2f MB, %.2fx the %.2f MB of the spec's cost model: the cost "
		    "overstates the bytes, or part of the data came from L2",
		    moved / 1e6, ratio, cost_bytes / 1e6);
	}
}

/* Global access quality: bytes used per sector, sectors per request. */
static void rule_global(const struct profile_metrics *m, struct profile_findings *out)
{
	struct profile_finding *f;
	double used = m->gld_bytes_used_pct;
	double spr = or0(m->gld_requests) > 0 ? m->gld_sectors / m->gld_requests : NAN;
	if (known(used) && used < 60 &&
	    (f = add(out, "uncoalesced", "coalescing", (100 - used) / 100))) {
		say(f->text,
		    "global loads use %.0f%% of the bytes of each 32-byte sector they fetch "
		    "(%.1f sectors per request): strided or scattered access",
		    used, or0(spr));
		say(f->try_, "coalesce: consecutive threads read consecutive addresses; "
			     "transpose through shared memory for column access "
			     "(kforge://guides/coalescing)");
		return;
	}
	int membound = memory_side(out);
	if (known(spr) && spr < 8 && membound && dram_share(m, out) < FLOOR_PCT &&
	    (f = add(out, "narrow_loads", "vector-access",
		     0.6 * (FLOOR_PCT - dram_share(m, out)) / FLOOR_PCT + 0.05))) {
		say(f->text,
		    "%.1f sectors per global load request: each thread loads %s per "
		    "instruction, so a warp asks for %.0f bytes at a time",
		    spr, spr <= 2.5 ? "2 bytes or fewer" : "4 bytes", spr * 32);
		say(f->try_,
		    "load 16 bytes per thread per instruction (float4, int4 or 8 bf16 at once; "
		    "16 sectors per request), with an aligned fallback for the tail "
		    "(kforge://guides/vector-access)");
	}
}

/* Shared memory bank conflicts. */
static void rule_shared(const struct profile_metrics *m, struct profile_findings *out)
{
	double conf = or0(m->shared_ld_conflicts) + or0(m->shared_st_conflicts);
	double wf = or0(m->shared_ld_wavefronts) + or0(m->shared_st_wavefronts);
	if (conf <= 0 || wf <= 0)
		return;
	double share = conf / wf;
	struct profile_finding *f;
	if (share > 0.1 && (f = add(out, "bank_conflicts", "bank-conflicts",
				    share * (or0(m->sol_l1_pct) / 100 + 0.2)))) {
		say(f->text,
		    "shared memory: %.0f bank conflicts in %.0f wavefronts (%.0f%% of shared "
		    "accesses replayed)",
		    conf, wf, 100 * share);
		say(f->try_, "remove the conflicts: pad the row stride by one element or swizzle "
			     "the index (kforge://guides/bank-conflicts)");
	}
}

/* Occupancy: what the launch allows and what it reaches. */
static void rule_occupancy(const struct profile_metrics *m, struct profile_findings *out)
{
	double th = m->occ_theoretical_pct, ach = m->occ_achieved_pct;
	if (!known(th) || !known(ach))
		return;
	int latency = strcmp(out->bound, "memory") && strcmp(out->bound, "compute");
	struct profile_finding *f;
	if (th < 50) {
		static const char *const NAMES[] = {"registers", "shared memory", "warps per SM",
						    "blocks per SM"};
		double lim[] = {m->limit_registers, m->limit_shared, m->limit_warps,
				m->limit_blocks};
		int w = -1;
		for (int i = 0; i < 4; i++)
			if (known(lim[i]) && (w < 0 || lim[i] < lim[w]))
				w = i;
		if ((f = add(out, "occupancy_limited", w == 0 ? "registers-spills" : "occupancy",
			     (latency ? 0.6 : 0.3) * (50 - th) / 50))) {
			say(f->text,
			    "theoretical occupancy %.0f%%, limited by %s (%.0f blocks per SM; "
			    "%.0f registers per thread, %.0f threads per block)",
			    th, w >= 0 ? NAMES[w] : "the launch", w >= 0 ? lim[w] : 0,
			    or0(m->regs_per_thread), or0(m->block_size));
			say(f->try_, "raise occupancy: %s (kforge://guides/occupancy)",
			    w == 0   ? "cap registers with __launch_bounds__ or split the work"
			    : w == 1 ? "use less shared memory per block or smaller tiles"
				     : "use larger blocks or fewer per SM");
		}
	}
	if (ach < 0.7 * th && (f = add(out, "occupancy_not_reached", "grid-sizing",
				       (latency ? 0.5 : 0.2) * (1 - ach / th)))) {
		say(f->text,
		    "achieved occupancy %.0f%% of a theoretical %.0f%%: %.0f blocks make %.2f "
		    "waves; too few blocks, or blocks that end at different times",
		    ach, th, or0(m->grid_size), or0(m->waves_per_sm));
		say(f->try_,
		    "give every SM enough resident warps: more, smaller blocks or a "
		    "grid-stride loop sized to the SM count (kforge://guides/grid-sizing)");
	}
}

/* Local memory: spills or dynamically indexed arrays. */
static void rule_spills(const struct profile_metrics *m, struct profile_findings *out)
{
	double ld = or0(m->local_ld_sectors), st = or0(m->local_st_sectors);
	struct profile_finding *f;
	if (ld + st > 0 && (f = add(out, "local_memory", "registers-spills", 0.4))) {
		say(f->text,
		    "local memory traffic: %.0f sectors loaded and %.0f stored (register spills "
		    "or an array indexed at run time), %.0f registers per thread",
		    ld, st, or0(m->regs_per_thread));
		say(f->try_, "keep it in registers: index arrays with compile-time constants "
			     "(unrolled loops) or loosen __launch_bounds__ "
			     "(kforge://guides/registers-spills)");
	}
}

/* The guide and the advice for a stall reason. */
static void stall_advice(const char *r, const char **guide, const char **what)
{
	static const struct {
		const char *r, *g, *w;
	} T[] = {
		{"long_scoreboard", "latency-hiding",
		 "warps wait for global or local memory: more independent loads in flight per "
		 "thread, vector loads"},
		{"barrier", "warp-reductions",
		 "warps wait at __syncthreads: reduce within a warp with shuffles and keep one "
		 "barrier per step"},
		{"short_scoreboard", "bank-conflicts",
		 "warps wait for shared memory or special functions: remove bank conflicts, fewer "
		 "shared round trips"},
		{"mio_throttle", "bank-conflicts",
		 "the shared-memory instruction queue is full: fewer, wider shared accesses"},
		{"lg_throttle", "vector-access",
		 "the global load queue is full of small accesses: 16-byte loads"},
		{"math_pipe_throttle", "roofline",
		 "a math pipe is saturated: fewer or cheaper instructions, or the tensor cores"},
		{"wait", "latency-hiding",
		 "fixed-latency dependencies: more independent work per thread (unroll)"},
		{"membar", "atomics-determinism", "memory fences: fewer fences or atomics"},
		{"branch_resolving", "reading-sass", "branches: fewer divergent branches"},
		{"no_instruction", "reading-sass",
		 "instruction cache misses: smaller unrolled code"},
		{"tex_throttle", "latency-hiding", "the texture/L1 pipe is saturated"},
		{"dispatch_stall", "reading-sass", "the dispatcher stalled"},
		{"drain", "latency-hiding", "warps wait for their stores to drain at exit"},
		{"imc_miss", "latency-hiding", "constant cache misses"},
		{"sleeping", "latency-hiding", "warps sleep (nanosleep, yield)"},
		{"misc", "ncu-metrics", "miscellaneous stalls"},
	};
	*guide = "ncu-metrics";
	*what = "";
	for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
		if (!strcmp(r, T[i].r)) {
			*guide = T[i].g;
			*what = T[i].w;
		}
}

/* The top stall reasons with their share of all stalls. */
static void rule_stalls(const struct profile_metrics *m, struct profile_findings *out)
{
	double total;
	int top[2];
	stall_top(m, top, &total);
	if (top[0] < 0)
		return;
	const struct profile_stall *a = &m->stalls[top[0]];
	const char *guide, *what;
	stall_advice(a->name, &guide, &what);
	double share = a->per_inst / total;
	int stalled = strcmp(out->bound, "compute") != 0;
	struct profile_finding *f = add(out, "stalls", guide, stalled ? 0.7 * share : 0.2 * share);
	if (!f)
		return;
	if (top[1] >= 0)
		say(f->text,
		    "warp stalls: %s %.0f%%, %s %.0f%% of stalled warp cycles per issued "
		    "instruction (%.1f cycles stalled per instruction in all)",
		    a->name, 100 * share, m->stalls[top[1]].name,
		    100 * m->stalls[top[1]].per_inst / total, total);
	else
		say(f->text, "warp stalls: %s %.0f%% of stalled warp cycles", a->name, 100 * share);
	if (*what)
		say(f->try_, "%s (kforge://guides/%s)", what, guide);
}

/* Tensor pipes: which path the kernel uses. */
static void rule_tensor(const struct profile_metrics *m, struct profile_findings *out)
{
	double h = or0(m->hmma_pct), g = or0(m->gmma_pct);
	struct profile_finding *f;
	if ((h > 0 || g > 0) && (f = add(out, "tensor_pipe", g > h ? "wgmma" : "mma-sync-wmma", 0)))
		say(f->text,
		    "tensor pipe busy %.0f%% on the Hopper wgmma (GMMA) path and %.0f%% on the "
		    "HMMA path (mma.sync, WMMA)",
		    g, h);
}

void profile_rules(const struct profile_metrics *m, double cost_bytes, struct profile_findings *out)
{
	memset(out, 0, sizeof *out);
	out->dram_cost_pct = dram_cost_pct(m, cost_bytes);
	classify(m, out);
	rule_dram(m, cost_bytes, out);
	rule_global(m, out);
	rule_shared(m, out);
	rule_occupancy(m, out);
	rule_spills(m, out);
	rule_stalls(m, out);
	rule_tensor(m, out);
	/* Most costly first (insertion sort: at most PROFILE_FINDINGS_MAX). */
	for (size_t i = 1; i < out->len; i++)
		for (size_t j = i; j > 0 && out->f[j].weight > out->f[j - 1].weight; j--) {
			struct profile_finding t = out->f[j];
			out->f[j] = out->f[j - 1];
			out->f[j - 1] = t;
		}
	/* The things to try: the costliest findings with advice, one per guide
	 * (two findings pointing at one guide are one change). */
	for (size_t i = 0; i < out->len && out->try_len < PROFILE_TRY_MAX; i++) {
		int dup = 0;
		for (size_t k = 0; k < out->try_len; k++)
			dup |= !strcmp(out->f[out->try_idx[k]].guide, out->f[i].guide);
		if (out->f[i].try_[0] && out->f[i].weight >= 0.05 && !dup)
			out->try_idx[out->try_len++] = (int)i;
	}
}
