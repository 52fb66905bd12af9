/* check_kb: the knowledge base (knowledge/kb_build.c, kb.c, kb_occ.c):
 * build from fixture GPU facts (tests/data/kb) and guides (tests/data/guides),
 * every CSV row round-tripping, aliases, derived figures and occupancy
 * against hand-worked examples, build failures, hostile search queries, and
 * retrieval over the real guides (build/knowledge.db, $KFORGE_KB). */
#include <check.h>
#include <pthread.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "knowledge/kb.h"
#include "knowledge/kb_build.h"
#include "knowledge/kb_int.h"
#include "tests/unit/fixture.h"

static char g_src[512]; /* repo root */
static char g_dir[512]; /* temp knowledge source dir (fixture guides) */
static char g_db[600];	/* the fixture database */
static struct kb *g_kb;

static void suite_setup(void)
{
	const char *src = getenv("KFORGE_SRC");
	snprintf(g_src, sizeof g_src, "%s", src && *src ? src : ".");
	snprintf(g_dir, sizeof g_dir, "/tmp/check_kb.%d", (int)getpid());
	fixture_kb_src(g_dir);
	snprintf(g_db, sizeof g_db, "%s/knowledge.db", g_dir);
	struct kf_err err = {0};
	if (kb_build(g_dir, g_db, &err) != 0) {
		fprintf(stderr, "check_kb: fixture build failed: %s\n", err.msg);
		abort();
	}
	if (kb_open(g_db, &g_kb, &err) != 0) {
		fprintf(stderr, "check_kb: open failed: %s\n", err.msg);
		abort();
	}
}

static void suite_teardown(void)
{
	kb_close(g_kb);
	g_kb = NULL;
	fixture_dir_remove(g_dir);
}

/* ---- GPU facts -------------------------------------------------------------- */

START_TEST(every_gpu_row_round_trips_against_the_csv)
{
	char path[700], *text = NULL;
	size_t len;
	struct kb_csv csv;
	struct kf_err err = {0};
	snprintf(path, sizeof path, "%s/tests/data/kb/gpu-facts/gpus.csv", g_src);
	ck_assert_int_eq(kb_read_file(path, 1 << 22, &text, &len, &err), 0);
	ck_assert_int_eq(kb_csv_parse(path, text, &csv, &err), 0);
	ck_assert_uint_eq(csv.rows_len, 22);
	ck_assert_uint_eq(kb_gpu_count(g_kb), csv.rows_len);
	/* the parser itself: a quoted comma and a quoted note */
	ck_assert_str_eq(csv.rows[18][0], "NVIDIA B200 (HGX B200, SXM6 180GB)");
	int checked = 0, unknown = 0, na = 0;
	for (size_t r = 0; r < csv.rows_len; r++) {
		const struct kb_gpu *g = kb_gpu_at(g_kb, r);
		ck_assert_str_eq(g->name, csv.rows[r][kb_csv_col(&csv, "name")]);
		ck_assert_str_eq(g->compute_capability,
				 csv.rows[r][kb_csv_col(&csv, "compute_capability")]);
		for (size_t c = 0; c < csv.cols_len; c++) {
			const struct kb_figure *f = kb_gpu_figure(g, csv.header[c]);
			if (!f)
				continue; /* identity and source columns */
			const char *cell = csv.rows[r][c];
			if (!*cell) {
				ck_assert_int_eq(f->status, KB_FIG_UNKNOWN);
				ck_assert_str_eq(f->source, "");
				unknown++;
			} else if (strcmp(cell, "n/a") == 0) {
				ck_assert_int_eq(f->status, KB_FIG_NA);
				na++;
			} else {
				ck_assert_int_eq(f->status, KB_FIG_KNOWN);
				ck_assert_str_eq(f->text, cell);
				char *end;
				double v = strtod(cell, &end);
				if (!*end && f->kind != KB_FIG_FEATURE) {
					ck_assert_int_eq(f->is_number, 1);
					ck_assert_double_eq(f->value, v);
				}
				ck_assert_msg(f->source_keys[0], "%s %s has no source keys", g->id,
					      f->field);
			}
			checked++;
		}
	}
	ck_assert_int_ge(checked, 22 * 30);
	ck_assert_int_eq(unknown, 51); /* the empty cells of gpus.csv */
	ck_assert_int_gt(na, 20);
	kb_csv_fini(&csv);
	free(text);
}
END_TEST

START_TEST(every_source_key_of_a_figure_is_in_the_sources_table)
{
	size_t figures = 0;
	for (size_t i = 0; i < kb_gpu_count(g_kb); i++) {
		const struct kb_gpu *g = kb_gpu_at(g_kb, i);
		for (size_t k = 0; k < g->figures_len; k++) {
			const struct kb_figure *f = &g->figures[k];
			if (f->status != KB_FIG_KNOWN)
				continue;
			char keys[256];
			snprintf(keys, sizeof keys, "%s", f->source_keys);
			char *save = NULL;
			int n = 0;
			for (char *key = strtok_r(keys, ",", &save); key;
			     key = strtok_r(NULL, ",", &save), n++)
				ck_assert_msg(kb_source_find(g_kb, key), "%s.%s cites unknown %s",
					      g->id, f->field, key);
			ck_assert_int_gt(n, 0);
			figures++;
		}
	}
	ck_assert_uint_gt(figures, 500);
	/* SOURCES.md keys, the expanded DQ-* keys and the conflicts are there */
	ck_assert_ptr_nonnull(kb_source_find(g_kb, "PG-LEG"));
	ck_assert_ptr_nonnull(kb_source_find(g_kb, "DQ-T4"));
	ck_assert_ptr_nonnull(kb_source_find(g_kb, "MEAS-H200"));
	ck_assert_ptr_null(kb_source_find(g_kb, "NOT-A-KEY"));
	ck_assert_uint_eq(kb_conflict_count(g_kb), 10);
	ck_assert_str_eq(kb_conflict_at(g_kb, 0)->id, "C1");
	const struct kb_gpu *g;
	ck_assert_int_eq(kb_gpu_find(g_kb, "rtx 5090", &g, NULL), 0);
	ck_assert_str_eq(g->conflicts, "C1,C2");
}
END_TEST

static const struct {
	const char *alias, *id;
	int ambiguous;
} ALIASES[] = {
	{"h100", "h100-sxm", 1},
	{"H100 SXM", "h100-sxm", 0},
	{"sm_90", "h100-sxm", 1},
	{"sm_90a", "h100-sxm", 1},
	{"hopper", "h100-sxm", 1},
	{"a100-80g-pcie", "a100-80g-pcie", 0},
	{"A100 80GB PCIe", "a100-80g-pcie", 0},
	{"a100", "a100-80g-sxm", 1},
	{"NVIDIA A100-SXM4-80GB", "a100-80g-sxm", 0},
	{"h200", "h200", 0},
	{"NVIDIA H200 SXM 141GB", "h200", 0},
	{"b200", "b200", 0},
	{"rtx 4090", "rtx-4090", 0},
	{"4090", "rtx-4090", 0},
	{"NVIDIA GeForce RTX 4090", "rtx-4090", 0},
	{"t4", "t4", 0},
	{"Tesla T4", "t4", 0},
	{"NVIDIA H100 80GB HBM3", "h100-sxm", 0},
	{"h100 pcie", "h100-pcie", 0},
	{"sm_100a", "b200", 1},
	{"blackwell", "b200", 1},
	{"sm_120", "rtx-5090", 0},
	{"5090", "rtx-5090", 0},
	{"ada", "l40s", 1},
	{"sm_86", "a10", 1},
	{"8.0", "a100-80g-sxm", 1},
	{"compute_90", "h100-sxm", 1},
	{"v100", "v100-sxm2", 0},
	{"L4", "l4", 0},
	{"b300", "b300", 0},
	{"sm_103a", "b300", 0},
	{"gb200", "gb200", 0},
	{"rtx-6000-ada", "rtx-6000-ada", 0},
	{"a10g", "a10g", 0},
	{"A10G", "a10g", 0},
	{"NVIDIA A10G", "a10g", 0},
	{"g5", "a10g", 0},
	{"a10", "a10", 0},
	{"gh200", "gh200", 0},
	{"h100-nvl", "h100-nvl", 0},
	{"NVIDIA H100 NVL", "h100-nvl", 0},
	{"h200-nvl", "h200-nvl", 0},
	{"h200 nvl", "h200-nvl", 0},
};

START_TEST(alias_resolves_to_the_canonical_gpu)
{
	const struct kb_gpu *m[KB_MAX_MATCHES];
	size_t n = 0;
	int amb = -1;
	struct kf_err err = {0};
	int rc = kb_gpu_resolve(g_kb, ALIASES[_i].alias, m, KB_MAX_MATCHES, &n, &amb, &err);
	ck_assert_msg(rc == 0, "%s: %s", ALIASES[_i].alias, err.msg);
	ck_assert_str_eq(m[0]->id, ALIASES[_i].id);
	ck_assert_int_eq(amb, ALIASES[_i].ambiguous);
	ck_assert_uint_eq(n > 1, (size_t)ALIASES[_i].ambiguous);
}
END_TEST

/* The A10G (AWS g5) is its own part: 80 SMs and 6 MB L2, not the A10's 72
 * SMs; each figure cites the document it came from. */
START_TEST(a10g_figures_are_the_a10g_not_the_a10)
{
	const struct kb_gpu *g = NULL, *a10 = NULL;
	struct kf_err err = {0};
	ck_assert_int_eq(kb_gpu_find(g_kb, "a10g", &g, &err), 0);
	ck_assert_int_eq(kb_gpu_find(g_kb, "a10", &a10, &err), 0);
	ck_assert_str_eq(g->id, "a10g");
	ck_assert_str_eq(g->compute_capability, "8.6");
	static const struct {
		const char *field;
		double value;
		const char *keys;
	} want[] = {
		{"sm_count", 80, "DQ-A10G"},
		{"l2_cache_mb", 6, "DQ-A10G"},
		{"memory_gb", 24, "A10G-SEC,DQ-A10G"},
		{"memory_bandwidth_gbs", 600, "A10G-SEC"},
		{"tdp_w", 300, "A10G-SEC"},
		{"max_threads_per_sm", 1536, NULL},
		{"smem_per_sm_kb", 100, NULL},
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		const struct kb_figure *f = kb_gpu_figure(g, want[i].field);
		ck_assert_int_eq(f->status, KB_FIG_KNOWN);
		ck_assert_double_eq(f->value, want[i].value);
		if (want[i].keys)
			ck_assert_str_eq(f->source_keys, want[i].keys);
	}
	ck_assert_double_eq(kb_gpu_figure(a10, "sm_count")->value, 72);
	/* no NVIDIA figure for its clocks and rates: unconfirmed, not the A10's */
	ck_assert_int_eq(kb_gpu_figure(g, "peak_fp32_tflops")->status, KB_FIG_UNKNOWN);
	ck_assert_int_eq(kb_gpu_figure(g, "fp16_bf16_tensor_dense_tflops")->status, KB_FIG_UNKNOWN);
	ck_assert_int_eq(kb_gpu_figure(g, "fp8_tensor_dense_tflops")->status, KB_FIG_NA);
	/* derived: 80 SMs x 1536 threads */
	struct kb_derived d[KB_MAX_DERIVED];
	size_t nd = kb_gpu_derived(g, d, KB_MAX_DERIVED);
	int seen = 0;
	for (size_t i = 0; i < nd; i++)
		if (strcmp(d[i].name, "max_resident_threads") == 0) {
			ck_assert(d[i].known);
			ck_assert_double_eq(d[i].value, 80 * 1536);
			seen = 1;
		}
	ck_assert(seen);
}
END_TEST

/* figure_sources.csv: a figure cites its own document and place, not the
 * whole row's list. */
START_TEST(a_figure_cites_its_own_source)
{
	const struct kb_gpu *g = NULL;
	ck_assert_int_eq(kb_gpu_find(g_kb, "t4", &g, NULL), 0);
	const struct kb_figure *f = kb_gpu_figure(g, "fp16_bf16_tensor_dense_tflops");
	ck_assert_str_eq(f->source_keys, "T4-DS");
	ck_assert_ptr_nonnull(strstr(f->source, "Mixed-Precision (FP16/FP32) 65 TFLOPS"));
	f = kb_gpu_figure(g, "sm_count");
	ck_assert_str_eq(f->source_keys, "DQ-T4");
	/* a figure without a line keeps its row's list */
	f = kb_gpu_figure(g, "max_threads_per_sm");
	ck_assert_str_eq(f->source, g->sources_per_cc_limits);
	/* every key a figure cites has a title a person can follow */
	const struct kb_source *s = kb_source_find(g_kb, "T4-DS");
	ck_assert_ptr_nonnull(strstr(s->title, "https://www.nvidia.com/"));
}
END_TEST

/* A line for an unconfirmed figure is its gap: the figure stays unknown, with
 * no source and no value, and says why; other unknown figures have none. */
START_TEST(an_unknown_figure_carries_its_gap_not_a_source)
{
	const struct kb_gpu *g = NULL;
	ck_assert_int_eq(kb_gpu_find(g_kb, "l40s", &g, NULL), 0);
	const struct kb_figure *f = kb_gpu_figure(g, "int8_tensor_dense_tops");
	ck_assert_int_eq(f->status, KB_FIG_UNKNOWN);
	ck_assert_int_eq(f->is_number, 0);
	ck_assert_str_eq(f->source, "");
	ck_assert_msg(strncmp(f->gap, "no NVIDIA source:", 17) == 0, "%s", f->gap);
	ck_assert_str_eq(kb_gpu_figure(g, "fp8_tensor_dense_tflops")->gap, "");
	ck_assert_int_eq(kb_gpu_find(g_kb, "a10g", &g, NULL), 0);
	f = kb_gpu_figure(g, "peak_fp32_tflops");
	ck_assert_int_eq(f->status, KB_FIG_UNKNOWN);
	ck_assert_str_eq(f->gap, "");
}
END_TEST

/* The shipped facts (build/knowledge.db): the L40S's dense INT8 has no
 * NVIDIA source, and the knowledge base says so rather than giving a number
 * (SOURCES.md, "Unconfirmed / left empty"). */
START_TEST(shipped_l40s_int8_says_there_is_no_nvidia_source)
{
	const char *path = getenv("KFORGE_KB");
	struct kb *kb = NULL;
	struct kf_err err = {0};
	if (!path || access(path, R_OK) != 0) {
		fprintf(stderr, "check_kb: shipped L40S INT8 skipped: no knowledge.db\n");
		return;
	}
	ck_assert_msg(kb_open(path, &kb, &err) == 0, "%s", err.msg);
	const struct kb_gpu *g = NULL;
	ck_assert_int_eq(kb_gpu_find(kb, "l40s", &g, NULL), 0);
	const struct kb_figure *f = kb_gpu_figure(g, "int8_tensor_dense_tops");
	ck_assert_int_eq(f->status, KB_FIG_UNKNOWN);
	ck_assert_msg(strncmp(f->gap, "no NVIDIA source:", 17) == 0, "%s", f->gap);
	kb_close(kb);
}
END_TEST

START_TEST(compare_resolves_two_to_four_names)
{
	const struct kb_gpu *g[KB_COMPARE_MAX];
	const char *names[] = {"a100", "h100", "h200", "b200", "t4"};
	struct kf_err err = {0};
	ck_assert_int_eq(kb_gpu_compare(g_kb, names, 3, g, &err), 0);
	ck_assert_str_eq(g[0]->id, "a100-80g-sxm");
	ck_assert_str_eq(g[2]->id, "h200");
	ck_assert_int_eq(kb_gpu_compare(g_kb, names, 5, g, &err), KF_EINVAL);
	ck_assert_int_eq(kb_gpu_compare(g_kb, names, 1, g, NULL), KF_EINVAL);
	const char *bad[] = {"h100", "zz9"};
	kf_err_clear(&err);
	ck_assert_int_eq(kb_gpu_compare(g_kb, bad, 2, g, &err), KF_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.msg, "zz9"));
}
END_TEST

START_TEST(ambiguous_alias_lists_every_match_canonical_first)
{
	const struct kb_gpu *m[KB_MAX_MATCHES];
	size_t n = 0;
	int amb = 0;
	ck_assert_int_eq(kb_gpu_resolve(g_kb, "hopper", m, KB_MAX_MATCHES, &n, &amb, NULL), 0);
	ck_assert_uint_eq(n, 6); /* canonical first, then table order */
	ck_assert_str_eq(m[0]->id, "h100-sxm");
	ck_assert_str_eq(m[1]->id, "h100-pcie");
	ck_assert_str_eq(m[2]->id, "h100-nvl");
	ck_assert_str_eq(m[3]->id, "h200");
	ck_assert_str_eq(m[4]->id, "h200-nvl");
	ck_assert_str_eq(m[5]->id, "gh200");
	ck_assert_int_eq(kb_gpu_resolve(g_kb, "blackwell", m, KB_MAX_MATCHES, &n, &amb, NULL), 0);
	ck_assert_uint_eq(n, 4); /* b200, gb200, b300, rtx-5090 */
	ck_assert_str_eq(m[0]->id, "b200");
}
END_TEST

START_TEST(unknown_gpu_names_the_closest_known_ones)
{
	const struct kb_gpu *g = NULL;
	struct kf_err err = {0};
	ck_assert_int_eq(kb_gpu_find(g_kb, "h1000", &g, &err), KF_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.msg, "h1000"));
	ck_assert_ptr_nonnull(strstr(err.msg, "h100-sxm"));
	kf_err_clear(&err);
	ck_assert_int_eq(kb_gpu_find(g_kb, "rtx 4080", &g, &err), KF_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.msg, "rtx-4090"));
	const char *ids[4];
	ck_assert_uint_eq(kb_gpu_suggest(g_kb, "a100 pcie 40gb", ids, 4), 4);
	ck_assert_ptr_nonnull(strstr(ids[0], "a100"));
	kf_err_clear(&err);
	ck_assert_int_eq(kb_gpu_find(g_kb, "", &g, &err), KF_EINVAL);
	char big[300];
	memset(big, 'h', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	ck_assert_int_eq(kb_gpu_find(g_kb, big, &g, NULL), KF_EINVAL);
	ck_assert_int_eq(kb_gpu_find(g_kb, "---", &g, NULL), KF_ENOTFOUND);
}
END_TEST

static const struct kb_derived *derived(const char *gpu, const char *name)
{
	static struct kb_derived d[KB_MAX_DERIVED];
	const struct kb_gpu *g = NULL;
	ck_assert_int_eq(kb_gpu_find(g_kb, gpu, &g, NULL), 0);
	size_t n = kb_gpu_derived(g, d, KB_MAX_DERIVED);
	for (size_t i = 0; i < n; i++)
		if (strcmp(d[i].name, name) == 0)
			return &d[i];
	ck_abort_msg("no derived figure %s", name);
	return NULL;
}

START_TEST(derived_figures_match_hand_worked_examples)
{
	/* H100 SXM fp32 ridge: 67 TFLOPS / 3350 GB/s = 67e12 / 3.35e12 = 20.0 FLOP/B */
	const struct kb_derived *d = derived("h100-sxm", "ridge_point_fp32");
	ck_assert_int_eq(d->known, 1);
	ck_assert_double_eq_tol(d->value, 20.0, 1e-9);
	ck_assert_ptr_nonnull(strstr(d->formula, "memory_bandwidth_gbs"));
	/* H100 SXM bf16 tensor: 989.4e12 / 3350e9 = 295.343... */
	ck_assert_double_eq_tol(derived("h100-sxm", "ridge_point_fp16_bf16_tensor")->value,
				295.3432836, 1e-6);
	/* A100 80GB SXM fp16 tensor: 312e12 / 2039e9 = 153.0161844 */
	ck_assert_double_eq_tol(derived("a100-80g-sxm", "ridge_point_fp16_bf16_tensor")->value,
				153.0161844, 1e-6);
	/* T4 fp32: 8.1e12 / 320e9 = 25.3125 */
	ck_assert_double_eq_tol(derived("t4", "ridge_point_fp32")->value, 25.3125, 1e-9);
	/* A100 has no FP8 (n/a): not known, never 0 pretending to be a figure */
	ck_assert_int_eq(derived("a100-80g-sxm", "ridge_point_fp8_tensor")->known, 0);
	/* H100: 2048 threads / 32 = 64 warps; 132 SMs x 64 = 8448 */
	ck_assert_double_eq(derived("h100-sxm", "max_warps_per_sm")->value, 64);
	ck_assert_double_eq(derived("h100-sxm", "max_resident_warps")->value, 8448);
	/* RTX 4090: 1536 / 32 = 48 warps; full wave at 256 threads:
	 * 128 SMs x min(floor(1536/256) = 6, 24) = 768 blocks */
	ck_assert_double_eq(derived("rtx-4090", "max_warps_per_sm")->value, 48);
	ck_assert_double_eq(derived("rtx-4090", "full_wave_blocks_256")->value, 768);
	/* H100: 132 x min(8, 32) = 1056 */
	ck_assert_double_eq(derived("h100-sxm", "full_wave_blocks_256")->value, 1056);
	/* H100 fp32 from clocks: 132 x 128 x 2 x 1980 MHz = 66.908 TFLOPS */
	ck_assert_double_eq_tol(derived("h100-sxm", "fp32_from_clock_tflops")->value, 66.908160,
				1e-6);
	/* B300: SM count unknown, so the whole-GPU warp count is unknown */
	ck_assert_int_eq(derived("b300", "max_resident_warps")->known, 0);
	/* H200 smem per SM: 228 KB x 1024 = 233472 B (MEAS-H200 reports 233472) */
	ck_assert_double_eq(derived("h200", "smem_per_sm_bytes")->value, 233472);
}
END_TEST

/* ---- occupancy ---------------------------------------------------------------- */

static struct kb_cc_limits limits(const char *arch)
{
	struct kb_cc_limits L;
	struct kf_err err = {0};
	ck_assert_msg(kb_cc_limits_for_arch(g_kb, arch, &L, &err) == 0, "%s: %s", arch, err.msg);
	return L;
}

static struct kb_occupancy occ(const char *arch, int bt, int regs, int smem)
{
	struct kb_cc_limits L = limits(arch);
	struct kb_occupancy o;
	struct kf_err err = {0};
	ck_assert_msg(kb_occupancy(&L, bt, regs, smem, &o, &err) == 0, "%s", err.msg);
	return o;
}

START_TEST(occupancy_matches_worked_examples)
{
	struct kb_occupancy o;
	/* H100 (9.0), 256 threads, 32 regs, no smem: warps 64/8 = 8 blocks;
	 * regs 32*32 = 1024 per warp, 16384/1024 = 16 warps per sub-partition,
	 * x4 = 64 warps, /8 = 8 blocks; smem (0 + 1024 reserved) -> 233472/1024
	 * = 228; blocks 32. Min 8 (warps), occupancy 64/64 = 1. */
	o = occ("sm_90a", 256, 32, 0);
	ck_assert_int_eq(o.blocks_per_sm, 8);
	ck_assert_str_eq(o.limiting_name, "warps");
	ck_assert_double_eq(o.occupancy, 1.0);
	ck_assert_int_eq(o.limit_regs, 8);
	ck_assert_int_eq(o.limit_smem, 228);
	/* H100, 256 threads, 128 regs, 48 KB: regs 128*32 = 4096 per warp,
	 * 16384/4096 = 4 per sub-partition, 16 warps, /8 = 2 blocks; smem
	 * 49152 + 1024 = 50176 -> 233472/50176 = 4. Min 2 (registers), 16/64. */
	o = occ("sm_90", 256, 128, 49152);
	ck_assert_int_eq(o.blocks_per_sm, 2);
	ck_assert_str_eq(o.limiting_name, "registers");
	ck_assert_double_eq(o.occupancy, 0.25);
	ck_assert_int_eq(o.regs_per_warp_alloc, 4096);
	ck_assert_int_eq(o.smem_per_block_alloc_bytes, 50176);
	ck_assert_int_eq(o.needs_optin, 0);
	/* H100, 128 threads, regs unknown, 100 KB: 102400 + 1024 = 103424
	 * (808 x 128 B) -> 233472/103424 = 2; warps 64/4 = 16. Min 2 (smem). */
	o = occ("sm_90", 128, 0, 102400);
	ck_assert_int_eq(o.blocks_per_sm, 2);
	ck_assert_str_eq(o.limiting_name, "shared_memory");
	ck_assert_int_eq(o.needs_optin, 1);
	/* RTX 4090 (8.9), 1024 threads, 64 regs: warps 48/32 = 1; regs 2048 per
	 * warp, 8 per sub-partition, 32 warps, /32 = 1 (block check 2048 x 32 =
	 * 65536 <= 65536). Tie 1 = 1: reported as warps; occupancy 32/48. */
	o = occ("sm_89", 1024, 64, 0);
	ck_assert_int_eq(o.blocks_per_sm, 1);
	ck_assert_int_eq(o.limit_regs, 1);
	ck_assert_str_eq(o.limiting_name, "warps");
	ck_assert_double_eq_tol(o.occupancy, 32.0 / 48.0, 1e-12);
	/* T4 (7.5), 256 threads, 40 regs, 20000 B: smem unit 256 B, no reserve:
	 * roundup(20000, 256) = 20224 -> 65536/20224 = 3; warps 32/8 = 4; regs
	 * 1280 per warp, 16384/1280 = 12 -> 48/8 = 6. Min 3 (smem), 24/32. */
	o = occ("sm_75", 256, 40, 20000);
	ck_assert_int_eq(o.smem_per_block_alloc_bytes, 20224);
	ck_assert_int_eq(o.blocks_per_sm, 3);
	ck_assert_str_eq(o.limiting_name, "shared_memory");
	ck_assert_double_eq(o.occupancy, 0.75);
	/* A100 (8.0), 1024 threads x 255 regs: 255*32 = 8160 -> 8192 per warp,
	 * x 32 warps = 262144 > 65536 per block: cannot launch. */
	o = occ("sm_80", 1024, 255, 0);
	ck_assert_int_eq(o.blocks_per_sm, 0);
	ck_assert_str_eq(o.limiting_name, "block_too_big");
	ck_assert_ptr_nonnull(strstr(o.reason, "registers"));
	/* sm_86: 100 KB + 1 KB reserved = 103424 > 99 KB opt-in + 1 KB = 102400 */
	o = occ("sm_86", 128, 32, 102400);
	ck_assert_int_eq(o.blocks_per_sm, 0);
	ck_assert_ptr_nonnull(strstr(o.reason, "shared memory"));
	/* ... while exactly the opt-in maximum fits one block */
	o = occ("sm_86", 128, 32, 99 * 1024);
	ck_assert_int_eq(o.blocks_per_sm, 1);
}
END_TEST

START_TEST(occupancy_rejects_out_of_range_arguments)
{
	struct kb_cc_limits L = limits("sm_90a");
	struct kb_occupancy o;
	struct kf_err err = {0};
	ck_assert_int_eq(kb_occupancy(&L, 0, 32, 0, &o, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "block_threads"));
	ck_assert_int_eq(kb_occupancy(&L, 1025, 32, 0, &o, NULL), KF_EINVAL);
	kf_err_clear(&err);
	ck_assert_int_eq(kb_occupancy(&L, 256, 256, 0, &o, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "regs_per_thread"));
	ck_assert_int_eq(kb_occupancy(&L, 256, 32, -1, &o, NULL), KF_EINVAL);
	ck_assert_int_eq(kb_occupancy(NULL, 256, 32, 0, &o, NULL), KF_EINVAL);
}
END_TEST

START_TEST(limits_come_from_the_table_for_an_arch_string)
{
	struct kb_cc_limits L = limits("sm_90a");
	ck_assert_int_eq(L.smem_per_sm_bytes, 233472);
	ck_assert_int_eq(L.smem_per_block_optin_bytes, 232448);
	ck_assert_int_eq(L.smem_reserved_per_block_bytes, 1024);
	ck_assert_int_eq(L.smem_alloc_unit_bytes, 128);
	ck_assert_int_eq(L.max_blocks_per_sm, 32);
	L = limits("sm_120");
	ck_assert_int_eq(L.max_blocks_per_sm, 24); /* conflict C1 resolved to 24 */
	L = limits("sm_75");
	ck_assert_int_eq(L.smem_alloc_unit_bytes, 256);
	ck_assert_int_eq(L.smem_reserved_per_block_bytes, 0);
	L = limits("10.3"); /* B300 row, missing per-block regs from CC 10.0 */
	ck_assert_int_eq(L.max_regs_per_block, 65536);
	struct kf_err err = {0};
	ck_assert_int_eq(kb_cc_limits_for_arch(g_kb, "sm_87", &L, &err), KF_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.msg, "8.7"));
	ck_assert_int_eq(kb_cc_limits_for_arch(g_kb, "banana", &L, NULL), KF_EINVAL);
}
END_TEST

/* ---- features and targets ------------------------------------------------------ */

/* clang-format off */
static const struct {
	const char *arch;
	int feature, usable;
} FEATURES[] = {
	{"sm_90a", KB_FEAT_WGMMA, 1},    {"sm_90", KB_FEAT_WGMMA, 0},
	{"sm_100a", KB_FEAT_WGMMA, 0},   {"sm_100a", KB_FEAT_TCGEN05, 1},
	{"sm_100f", KB_FEAT_TCGEN05, 1}, {"sm_100", KB_FEAT_TCGEN05, 0},
	{"sm_120a", KB_FEAT_TCGEN05, 0}, {"sm_120a", KB_FEAT_FP4, 1},
	{"sm_80", KB_FEAT_CP_ASYNC, 1},  {"sm_75", KB_FEAT_CP_ASYNC, 0},
	{"sm_80", KB_FEAT_TMA, 0},       {"sm_90", KB_FEAT_TMA, 1},
	{"sm_89", KB_FEAT_FP8, 1},       {"sm_86", KB_FEAT_FP8, 0},
	{"sm_90", KB_FEAT_CLUSTERS, 1},  {"sm_89", KB_FEAT_CLUSTERS, 0},
	{"sm_120", KB_FEAT_CLUSTERS, 1}, {"sm_75", KB_FEAT_BF16, 0},
};
/* clang-format on */

START_TEST(feature_usability_follows_the_target)
{
	struct kb_arch a;
	struct kb_feature_use u;
	ck_assert_int_eq(kb_arch_parse(FEATURES[_i].arch, &a, NULL), 0);
	kb_feature_usable(&a, FEATURES[_i].feature, &u);
	ck_assert_msg(u.usable == FEATURES[_i].usable, "%s %s: %s", FEATURES[_i].arch, u.name,
		      u.why);
	ck_assert_ptr_nonnull(strstr(u.why, FEATURES[_i].arch));
}
END_TEST

START_TEST(arch_targets_parse_and_run_where_cuda_allows)
{
	struct kb_arch a;
	char buf[32];
	ck_assert_int_eq(kb_arch_parse("sm_90a", &a, NULL), 0);
	ck_assert_int_eq(a.major, 9);
	ck_assert_int_eq(a.suffix, 'a');
	kb_arch_format(&a, buf, sizeof buf);
	ck_assert_str_eq(buf, "sm_90a");
	ck_assert_int_eq(kb_arch_runs_on(&a, 9, 0), 1);
	ck_assert_int_eq(kb_arch_runs_on(&a, 10, 0), 0);
	ck_assert_int_eq(kb_arch_parse("sm_80", &a, NULL), 0);
	ck_assert_int_eq(kb_arch_runs_on(&a, 8, 6), 1);
	ck_assert_int_eq(kb_arch_runs_on(&a, 9, 0), 0);
	ck_assert_int_eq(kb_arch_parse("compute_80", &a, NULL), 0);
	ck_assert_int_eq(kb_arch_runs_on(&a, 9, 0), 1);
	ck_assert_int_eq(kb_arch_parse("12.0", &a, NULL), 0);
	ck_assert_int_eq(a.major * 10 + a.minor, 120);
	ck_assert_int_eq(kb_arch_parse("sm_100f", &a, NULL), 0);
	ck_assert_int_eq(kb_arch_runs_on(&a, 10, 3), 1);
	struct kf_err err = {0};
	ck_assert_int_eq(kb_arch_parse("sm_9", &a, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "sm_9"));
	ck_assert_int_eq(kb_arch_parse("", &a, NULL), KF_EINVAL);
	ck_assert_int_eq(kb_arch_parse("sm_90x", &a, NULL), KF_EINVAL);
}
END_TEST

START_TEST(peaks_carry_values_and_sources_for_the_roofline)
{
	struct kb_peaks p;
	struct kf_err err = {0};
	ck_assert_int_eq(kb_gpu_peaks(g_kb, "h200", &p, &err), 0);
	ck_assert_str_eq(p.gpu->id, "h200");
	ck_assert_int_eq(p.mem_bw_gbs.known, 1);
	ck_assert_double_eq(p.mem_bw_gbs.value, 4800);
	ck_assert_double_eq(p.bf16_tflops.value, 989.4);
	ck_assert_double_eq(p.fp16_tflops.value, 989.4);
	ck_assert_double_eq(p.fp8_tflops.value, 1978.9);
	ck_assert_double_eq(p.fp32_tflops.value, 67);
	ck_assert_ptr_nonnull(strstr(p.mem_bw_gbs.source, "H200-DS"));
	ck_assert_int_eq(kb_gpu_peaks(g_kb, "t4", &p, NULL), 0);
	ck_assert_int_eq(p.fp8_tflops.known, 0);
	ck_assert_int_eq(kb_gpu_peaks(g_kb, "nope", &p, NULL), KF_ENOTFOUND);
}
END_TEST

START_TEST(driver_devices_match_table_rows)
{
	const struct kb_gpu *g = NULL;
	ck_assert_int_eq(
		kb_gpu_match_device(g_kb, "NVIDIA H100 80GB HBM3", 9, 0, 132, 85e9, &g, NULL), 0);
	ck_assert_str_eq(g->id, "h100-sxm");
	ck_assert_int_eq(
		kb_gpu_match_device(g_kb, "NVIDIA H200", 9, 0, 132, 150754820096ull, &g, NULL), 0);
	ck_assert_str_eq(g->id, "h200");
	/* the driver's name is a row's name (was the closest H100 before the row) */
	ck_assert_int_eq(kb_gpu_match_device(g_kb, "NVIDIA H100 NVL", 9, 0, 132, 94e9, &g, NULL),
			 0);
	ck_assert_str_eq(g->id, "h100-nvl");
	ck_assert_int_eq(kb_gpu_match_device(g_kb, "NVIDIA A10G", 8, 6, 80, 22587e6, &g, NULL), 0);
	ck_assert_str_eq(g->id, "a10g");
	/* not an alias: same CC, same SMs, closest memory (85 GB: 80 not 141) */
	ck_assert_int_eq(kb_gpu_match_device(g_kb, "NVIDIA H100 XYZ", 9, 0, 132, 85e9, &g, NULL),
			 0);
	ck_assert_str_eq(g->id, "h100-sxm");
	ck_assert_int_eq(kb_gpu_match_device(g_kb, "NVIDIA H100 PCIe", 9, 0, 114, 85e9, &g, NULL),
			 0);
	ck_assert_str_eq(g->id, "h100-pcie");
	struct kf_err err = {0};
	ck_assert_int_eq(kb_gpu_match_device(g_kb, "Jetson Orin", 8, 7, 16, 32e9, &g, &err),
			 KF_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.msg, "8.7"));
}
END_TEST

/* ---- build ----------------------------------------------------------------------- */

static char b_dir[512], b_db[600];

static void build_setup(void)
{
	const char *src = getenv("KFORGE_SRC");
	snprintf(g_src, sizeof g_src, "%s", src && *src ? src : ".");
	snprintf(b_dir, sizeof b_dir, "/tmp/check_kb_build.%d", (int)getpid());
	fixture_kb_src(b_dir);
	snprintf(b_db, sizeof b_db, "%s/out.db", b_dir);
}

static void build_teardown(void)
{
	fixture_dir_remove(b_dir);
}

static void write_file(const char *rel, const char *text)
{
	char path[800];
	snprintf(path, sizeof path, "%s/%s", b_dir, rel);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* Builds b_dir, expecting failure with code and every needle in the message. */
static void expect_fail(int code, const char *n1, const char *n2)
{
	struct kf_err err = {0};
	ck_assert_int_eq(kb_build(b_dir, b_db, &err), code);
	ck_assert_msg(strstr(err.msg, n1), "'%s' not in: %s", n1, err.msg);
	if (n2)
		ck_assert_msg(strstr(err.msg, n2), "'%s' not in: %s", n2, err.msg);
	ck_assert_int_ne(access(b_db, F_OK), 0); /* nothing half-built left */
}

START_TEST(build_fails_naming_a_guide_without_front_matter)
{
	write_file("guides/zz-plain.md", "# Just a heading\n\nNo front matter here.\n");
	expect_fail(KF_EINVAL, "guides/zz-plain.md", "front matter");
}
END_TEST

START_TEST(build_fails_naming_a_guide_missing_a_required_key)
{
	write_file("guides/zz-notitle.md",
		   "---\nid: zz-notitle\ntags: [x]\narchs: [all]\nsources: [s]\n---\nbody\n");
	expect_fail(KF_EINVAL, "guides/zz-notitle.md", "'title'");
}
END_TEST

/* Every guide says which GPUs and CUDA version its advice was checked on. */
START_TEST(build_fails_on_a_guide_that_does_not_say_what_it_was_checked_on)
{
	write_file("guides/zz-unchecked.md",
		   "---\nid: zz-unchecked\ntitle: t\ntags: [x]\narchs: [all]\nsources: [s]\n---\n"
		   "body\n");
	expect_fail(KF_EINVAL, "guides/zz-unchecked.md", "'checked'");
	write_file("guides/zz-unchecked.md",
		   "---\nid: zz-unchecked\ntitle: t\ntags: [x]\narchs: [all]\nchecked: an H200\n"
		   "sources: [s]\n---\nbody\n");
	expect_fail(KF_EINVAL, "guides/zz-unchecked.md", "names no CUDA version");
}
END_TEST

START_TEST(build_fails_naming_a_broken_cross_reference)
{
	write_file(
		"guides/zz-link.md",
		"---\nid: zz-link\ntitle: t\ntags: [x]\narchs: [all]\nchecked: CUDA 13.0\nsources: [s]\n---\n"
		"line one\nsee kforge://guides/no-such-guide.\n");
	expect_fail(KF_EINVAL, "guides/zz-link.md:10", "no-such-guide");
}
END_TEST

START_TEST(build_fails_on_a_related_id_that_is_no_guide)
{
	write_file("guides/zz-rel.md",
		   "---\nid: zz-rel\ntitle: t\ntags: [x]\narchs: [all]\nchecked: CUDA 13.0\n"
		   "sources: [s]\nrelated: [fx-bank, ghost]\n---\nbody\n");
	expect_fail(KF_EINVAL, "guides/zz-rel.md", "'ghost'");
}
END_TEST

START_TEST(build_fails_on_a_link_to_an_unknown_gpu)
{
	write_file("guides/zz-gpu.md",
		   "---\nid: zz-gpu\ntitle: t\ntags: [x]\narchs: [all]\nchecked: CUDA 13.0\n"
		   "sources: [s]\n---\nkforge://gpus/h999\n");
	expect_fail(KF_EINVAL, "guides/zz-gpu.md", "h999");
}
END_TEST

START_TEST(build_fails_on_duplicate_ids_and_bad_archs)
{
	write_file("guides/zz-dup.md",
		   "---\nid: fx-bank\ntitle: t\ntags: [x]\narchs: [all]\nchecked: CUDA 13.0\n"
		   "sources: [s]\n---\nbody\n");
	expect_fail(KF_EINVAL, "fx-bank", "zz-dup.md");
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm '%s/guides/zz-dup.md'", b_dir);
	ck_assert_int_eq(system(cmd), 0);
	write_file("guides/zz-arch.md",
		   "---\nid: zz-arch\ntitle: t\ntags: [x]\narchs: [quantum]\nchecked: CUDA 13.0\n"
		   "sources: [s]\n---\nbody\n");
	expect_fail(KF_EINVAL, "guides/zz-arch.md", "quantum");
}
END_TEST

/* Rewrites gpus.csv through sed. */
static void sed_gpus(const char *expr)
{
	char cmd[900];
	snprintf(cmd, sizeof cmd, "sed -i '%s' '%s/gpu-facts/gpus.csv'", expr, b_dir);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(build_fails_naming_a_gpu_figure_without_a_source)
{
	/* L4 (line 9): drop both source columns (the last two cells) */
	sed_gpus("9s/,\"\\?L4-DS[^\\n]*$/,,/");
	expect_fail(KF_EINVAL, "gpus.csv:9", "no source");
}
END_TEST

START_TEST(build_fails_on_a_source_that_names_no_key)
{
	/* T4 (line 2): sources_product names no key of SOURCES.md */
	sed_gpus("2s/\"T4-DS; DQ-T4 ([^\"]*\"/\"some blog post\"/");
	expect_fail(KF_EINVAL, "gpus.csv:2", "names no key");
}
END_TEST

START_TEST(build_fails_on_a_bad_figure_source_line)
{
	static const struct {
		const char *line, *n1, *n2;
	} cases[] = {
		{"t4,fp8_tensor_dense_tflops,T4-DS table\n", ":2", "is n/a"},
		{"t4,warp_size,T4-DS table\n", ":2", "no figure t4.warp_size"},
		{"zz9,sm_count,T4-DS table\n", ":2", "no figure zz9.sm_count"},
		{"t4,sm_count,a forum post\n", ":2", "names no key"},
		{"l40s,int8_tensor_dense_tops,no source found\n", ":2", "names no key"},
		{"t4,sm_count,DQ-T4 a\nt4,sm_count,T4-DS b\n", ":3", "already has a source"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[256];
		snprintf(text, sizeof text, "gpu,field,source\n%s", cases[i].line);
		write_file("gpu-facts/figure_sources.csv", text);
		expect_fail(KF_EINVAL, "figure_sources.csv", cases[i].n2);
		struct kf_err err = {0};
		ck_assert_int_ne(kb_build(b_dir, b_db, &err), 0);
		ck_assert_msg(strstr(err.msg, cases[i].n1), "'%s' not in: %s", cases[i].n1,
			      err.msg);
	}
}
END_TEST

START_TEST(build_fails_on_a_gpu_without_an_alias_line)
{
	char cmd[900];
	snprintf(cmd, sizeof cmd, "sed -i '/^t4,/d' '%s/aliases.csv'", b_dir);
	ck_assert_int_eq(system(cmd), 0);
	expect_fail(KF_EINVAL, "NVIDIA T4", "aliases.csv");
}
END_TEST

START_TEST(build_is_reproducible_byte_for_byte)
{
	char db2[700], cmd[1600];
	struct kf_err err = {0};
	ck_assert_int_eq(kb_build(b_dir, b_db, &err), 0);
	snprintf(db2, sizeof db2, "%s/again.db", b_dir);
	ck_assert_int_eq(kb_build(b_dir, db2, &err), 0);
	snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", b_db, db2);
	ck_assert_msg(system(cmd) == 0, "two builds of the same sources differ");
}
END_TEST

START_TEST(build_without_guides_folder_still_works)
{
	char cmd[700];
	snprintf(cmd, sizeof cmd, "rm -rf '%s/guides'", b_dir);
	ck_assert_int_eq(system(cmd), 0);
	struct kf_err err = {0};
	ck_assert_int_eq(kb_build(b_dir, b_db, &err), 0);
	struct kb *kb = NULL;
	ck_assert_int_eq(kb_open(b_db, &kb, &err), 0);
	ck_assert_uint_eq(kb_gpu_count(kb), 22);
	kb_close(kb);
}
END_TEST

START_TEST(open_rejects_a_missing_or_foreign_file)
{
	struct kb *kb = NULL;
	struct kf_err err = {0};
	ck_assert_int_eq(kb_open("/nonexistent/knowledge.db", &kb, &err), KF_EIO);
	ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/knowledge.db"));
	write_file("foreign.db", "not a database at all");
	char p[700];
	snprintf(p, sizeof p, "%s/foreign.db", b_dir);
	kf_err_clear(&err);
	ck_assert_int_eq(kb_open(p, &kb, &err), KF_EDB);
	ck_assert_ptr_nonnull(strstr(err.msg, "make"));
	ck_assert_ptr_null(kb);
	/* a missing source tree is an I/O error naming the file */
	kf_err_clear(&err);
	ck_assert_int_eq(kb_build("/nonexistent-src", b_db, &err), KF_EIO);
	ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent-src/schema.sql"));
}
END_TEST

/* ---- search --------------------------------------------------------------------- */

static size_t search(struct kb *kb, const char *q, const char *arch, const char *tag,
		     struct kb_hit **hits)
{
	struct kb_search s = {.query = q, .arch = arch, .tag = tag, .limit = 10};
	size_t n = 0;
	struct kf_err err = {0};
	ck_assert_msg(kb_search_guides(kb, &s, hits, &n, &err) == 0, "'%s': %s", q, err.msg);
	return n;
}

START_TEST(search_ranks_title_match_first_with_a_highlighted_snippet)
{
	struct kb_hit *h = NULL;
	size_t n = search(g_kb, "bank conflicts column", NULL, NULL, &h);
	ck_assert_uint_ge(n, 1);
	ck_assert_str_eq(h[0].id, "fx-bank");
	ck_assert_ptr_nonnull(strstr(h[0].snippet, "**"));
	free(h);
	/* porter stemming: "coalesced" and "coalescing" meet */
	n = search(g_kb, "coalescing", NULL, NULL, &h);
	ck_assert_uint_ge(n, 1);
	ck_assert_str_eq(h[0].id, "fx-coalesce");
	free(h);
}
END_TEST

START_TEST(search_filters_by_tag_and_arch)
{
	struct kb_hit *h = NULL;
	size_t n = search(g_kb, "fixture", NULL, "memory", &h);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(h[0].id, "fx-coalesce");
	free(h);
	/* sm_90: fx-wgmma (sm_90a), fx-bank (all), fx-coalesce (sm_70+); not B200 */
	n = search(g_kb, "fixture", "sm_90", NULL, &h);
	ck_assert_uint_eq(n, 3);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_ne(h[i].id, "fx-blackwell");
	free(h);
	n = search(g_kb, "fixture", "b200", NULL, &h);
	ck_assert_uint_eq(n, 3); /* fx-blackwell, fx-bank, fx-coalesce */
	free(h);
	n = search(g_kb, "fixture", "sm_75", NULL, &h);
	ck_assert_uint_eq(n, 2); /* all + sm_70+ */
	free(h);
	/* plain sm_80 covers 8.6 (same major, later minor) but not 9.0 */
	n = search(g_kb, "asynchronous", "sm_86", NULL, &h);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(h[0].id, "fx-ampere");
	free(h);
	n = search(g_kb, "asynchronous", "sm_90", NULL, &h);
	ck_assert_uint_eq(n, 0);
	free(h);
	struct kb_search s = {.query = "x", .arch = "not-an-arch"};
	struct kf_err err = {0};
	size_t len;
	ck_assert_int_eq(kb_search_guides(g_kb, &s, &h, &len, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "not-an-arch"));
	s.arch = NULL;
	s.limit = 51;
	ck_assert_int_eq(kb_search_guides(g_kb, &s, &h, &len, NULL), KF_EINVAL);
}
END_TEST

static const char *const HOSTILE[] = {
	"\"",
	"\"\"\"",
	"NEAR(bank conflicts)",
	"bank NEAR/2 conflicts",
	"*",
	"bank*",
	"-bank",
	"title:bank",
	"{title body}: bank",
	"body:x OR",
	"(((",
	")",
	"bank AND",
	"OR",
	"NOT",
	"AND OR NOT NEAR",
	"'; DROP TABLE guides; --",
	"\"); DELETE FROM guides_fts; --",
	"^bank",
	"bank + conflict",
	"\x01\x02\x7f",
	"B\xc3\xa4nk \xf0\x9f\x99\x82",
	"\xff\xfe invalid utf8",
	"guides_fts MATCH 'x'",
	"a:b:c:d \"unbalanced",
	"rank bm25() snippet(",
};

START_TEST(hostile_query_is_plain_text_never_an_error)
{
	struct kb_hit *h = NULL;
	struct kb_search s = {.query = HOSTILE[_i], .limit = 10};
	size_t n = 0;
	struct kf_err err = {0};
	ck_assert_msg(kb_search_guides(g_kb, &s, &h, &n, &err) == 0, "'%s': %s", HOSTILE[_i],
		      err.msg);
	free(h);
	/* the tables are intact afterwards */
	ck_assert_uint_ge(search(g_kb, "bank conflicts", NULL, NULL, &h), 1);
	free(h);
	struct kb_guide *g = NULL;
	ck_assert_int_eq(kb_guide_read(g_kb, "fx-bank", &g, NULL), 0);
	kb_guide_free(g);
}
END_TEST

START_TEST(empty_or_overlong_query_is_rejected_clearly)
{
	struct kb_hit *h = NULL;
	size_t n;
	struct kf_err err = {0};
	struct kb_search s = {.query = ""};
	ck_assert_int_eq(kb_search_guides(g_kb, &s, &h, &n, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "empty"));
	s.query = " \t\n ";
	ck_assert_int_eq(kb_search_guides(g_kb, &s, &h, &n, NULL), KF_EINVAL);
	char big[600];
	memset(big, 'a', 513);
	big[513] = '\0';
	s.query = big;
	kf_err_clear(&err);
	ck_assert_int_eq(kb_search_guides(g_kb, &s, &h, &n, &err), KF_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "512"));
	big[512] = '\0'; /* exactly the cap is fine */
	ck_assert_int_eq(kb_search_guides(g_kb, &s, &h, &n, NULL), 0);
	free(h);
	s.query = NULL;
	ck_assert_int_eq(kb_search_guides(g_kb, &s, &h, &n, NULL), KF_EINVAL);
}
END_TEST

START_TEST(guide_read_returns_the_whole_guide_and_unknown_ids_fail)
{
	struct kb_guide *g = NULL;
	struct kf_err err = {0};
	ck_assert_int_eq(kb_guide_read(g_kb, "fx-coalesce", &g, &err), 0);
	ck_assert_str_eq(g->title, "Fixture: coalesced global loads");
	ck_assert_str_eq(g->tags, "memory,fixture");
	ck_assert_str_eq(g->archs, "sm_70+");
	ck_assert_ptr_nonnull(strstr(g->body, "32-byte sectors"));
	ck_assert_str_eq(g->sources, "fixture source for tests");
	ck_assert_str_eq(g->checked, "fixture: no GPU run; CUDA 13.0 documentation");
	kb_guide_free(g);
	ck_assert_int_eq(kb_guide_read(g_kb, "fx-bank", &g, NULL), 0);
	ck_assert_str_eq(g->links, "fx-coalesce");
	kb_guide_free(g);
	ck_assert_int_eq(kb_guide_read(g_kb, "fx-bnak", &g, &err), KF_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(err.msg, "fx-bank"));
	ck_assert_int_eq(kb_guide_read(g_kb, "", &g, NULL), KF_EINVAL);
	struct kb_guide_entry *e = NULL;
	size_t n = 0;
	ck_assert_int_eq(kb_guide_list(g_kb, "fx-b", &e, &n, NULL), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(e[0].id, "fx-bank");
	free(e);
	char longp[100];
	memset(longp, 'p', sizeof longp - 1);
	longp[sizeof longp - 1] = '\0';
	ck_assert_int_eq(kb_guide_list(g_kb, longp, &e, &n, NULL), KF_EINVAL);
}
END_TEST

/* ---- retrieval over the real guides ------------------------------------------------- */

static const struct {
	const char *question, *want;
} QUESTIONS[] = {
	{"why are my shared memory loads slow when threads read a column", "bank-conflicts"},
	{"how do I use wgmma on H100", "wgmma"},
	{"my kernel only reaches 30% of memory bandwidth with strided loads", "coalescing"},
	{"load 16 bytes per thread with float4 and alignment", "vector-access"},
	{"sum a row with warp shuffle __shfl_xor_sync", "warp-reductions"},
	{"how many blocks per SM can run with 128 registers per thread", "occupancy"},
	{"ptxas reports spill stores, what does -Xptxas -v mean", "registers-spills"},
	{"how many blocks should the grid have, waves and tail effect", "grid-sizing"},
	{"double buffering global to shared copies with cp.async on A100", "cp-async"},
	{"TMA tensor map and mbarrier expect_tx on Hopper", "tma-mbarrier"},
	{"thread block clusters and distributed shared memory", "clusters-dsmem"},
	{"tensor cores with mma.sync and ldmatrix", "mma-sync-wmma"},
	{"fp8 e4m3 scaling on Ada and Hopper", "fp8"},
	{"tcgen05 and tensor memory on B200 versus RTX 5090", "blackwell-tcgen05"},
	{"keep a weight tensor resident in L2 with an access policy window", "l2-persistence"},
	{"launch overhead of many small kernels, capture a CUDA graph", "cuda-graphs"},
	{"bf16 accumulation error and __CUDA_NO_HALF_OPERATORS__", "numerics-precision"},
	{"softmax in one pass with a running max", "online-softmax"},
	{"compute mean and variance in one pass numerically stable", "welford"},
	{"fast RMSNorm kernel in bf16 with a fused residual add", "rmsnorm-layernorm"},
	{"SwiGLU silu and mul, GELU tanh versus erf", "gated-activations"},
	{"rotary position embedding interleaved or half split", "rope"},
	{"flash attention tiling of Q K V blocks", "attention-tiling"},
	{"GEMM block tile and warp tile sizes, split-K", "gemm-tiling"},
	{"is my kernel memory bound or compute bound, ridge point", "roofline"},
	{"time a kernel with cuda events, warm-up and L2 flush", "measuring"},
	{"ways a kernel can cheat the correctness check", "eval-cheats"},
	{"AdaLN modulation scale shift gate in diffusion transformers", "adaln"},
	{"transpose a matrix through a shared memory tile", "smem-tiling"},
	{"fuse bias, activation and residual into one element-wise kernel", "elementwise-fusion"},
	{"how many bytes in flight to hide memory latency, Little's law", "latency-hiding"},
	{"what does the T4 lack compared with newer GPUs", "arch-turing-t4"},
	{"fp8 mma.sync and bandwidth on the L40S and RTX 4090", "arch-ada"},
	{"what differs between the A100 and the sm_86 GA10x cards", "arch-ampere-a100"},
	{"B200 limits, 126 MB L2 and FP4", "arch-blackwell-b200"},
	{"measured bandwidth ceilings on an H200", "arch-hopper"},
	{"tensor core paths on the RTX 5090 consumer Blackwell", "arch-rtx5090"},
	{"my results change between runs because of atomicAdd", "atomics-determinism"},
	{"replace the attention processor in a diffusers pipeline", "diffusers-integration"},
	{"load a kernel from the Hugging Face hub with get_kernel", "kernel-hub"},
	{"how do I write the launch list and tolerance of a kforge spec", "kforge-spec"},
	{"which Nsight Compute metrics should I read first", "ncu-metrics"},
	{"difference between -arch and -gencode for sm_90a", "nvcc-flags"},
	{"bind a CUDA kernel to PyTorch with load_inline", "pytorch-extensions"},
	{"check in the SASS that the kernel uses HMMA instructions", "reading-sass"},
	{"find a race condition with compute-sanitizer racecheck", "sanitizer-cuda-gdb"},
	{"torch.compile graph breaks on my custom op, register_fake", "torch-library-ops"},
	{"swap the RMSNorm module in a transformers model", "transformers-integration"},
	{"matrix-vector product for batch 1 decode is slow", "gemv-decode"},
	{"dequantize int4 weights with group scales inside the matmul", "weight-only-quant"},
};

START_TEST(retrieval_puts_the_right_guide_in_the_top_three)
{
	const char *path = getenv("KFORGE_KB");
	struct kb *kb = NULL;
	struct kf_err err = {0};
	if (!path || access(path, R_OK) != 0) {
		fprintf(stderr,
			"check_kb: retrieval skipped: no built knowledge.db ($KFORGE_KB)\n");
		return;
	}
	ck_assert_msg(kb_open(path, &kb, &err) == 0, "%s", err.msg);
	int failed = 0;
	for (size_t q = 0; q < sizeof QUESTIONS / sizeof QUESTIONS[0]; q++) {
		struct kb_hit *h = NULL;
		struct kb_search s = {.query = QUESTIONS[q].question, .limit = 3};
		size_t n = 0;
		ck_assert_int_eq(kb_search_guides(kb, &s, &h, &n, &err), 0);
		int found = 0;
		for (size_t i = 0; i < n; i++)
			found |= strcmp(h[i].id, QUESTIONS[q].want) == 0;
		if (!found) {
			fprintf(stderr, "retrieval: '%s' wants %s, got %s %s %s\n",
				QUESTIONS[q].question, QUESTIONS[q].want, n > 0 ? h[0].id : "-",
				n > 1 ? h[1].id : "-", n > 2 ? h[2].id : "-");
			failed++;
		}
		free(h);
	}
	kb_close(kb);
	ck_assert_int_ge(sizeof QUESTIONS / sizeof QUESTIONS[0], 25);
	ck_assert_msg(failed == 0, "%d questions missed their guide (see above)", failed);
}
END_TEST

/* The guides' own INDEX.md lists realistic questions per guide ("## <id>",
 * then "- <question>" lines); each must rank its guide in the top 3. */
START_TEST(index_questions_rank_their_guide_in_the_top_three)
{
	const char *path = getenv("KFORGE_KB");
	char ipath[700], *text = NULL;
	size_t len = 0;
	struct kb *kb = NULL;
	struct kf_err err = {0};
	snprintf(ipath, sizeof ipath, "%s/knowledge/guides/INDEX.md", g_src);
	if (!path || access(path, R_OK) != 0 || access(ipath, R_OK) != 0) {
		fprintf(stderr,
			"check_kb: INDEX.md retrieval skipped: no knowledge.db or INDEX.md\n");
		return;
	}
	ck_assert_int_eq(kb_read_file(ipath, 1 << 20, &text, &len, &err), 0);
	ck_assert_msg(kb_open(path, &kb, &err) == 0, "%s", err.msg);
	char id[64] = "";
	int asked = 0, failed = 0;
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (strncmp(line, "## ", 3) == 0) {
			snprintf(id, sizeof id, "%s", line + 3);
			continue;
		}
		if (strncmp(line, "- ", 2) != 0 || !id[0])
			continue;
		struct kb_hit *h = NULL;
		struct kb_search q = {.query = line + 2, .limit = 3};
		size_t n = 0;
		ck_assert_int_eq(kb_search_guides(kb, &q, &h, &n, &err), 0);
		int found = 0;
		for (size_t i = 0; i < n; i++)
			found |= strcmp(h[i].id, id) == 0;
		if (!found) {
			fprintf(stderr, "INDEX.md: '%s' wants %s, got %s %s %s\n", line + 2, id,
				n > 0 ? h[0].id : "-", n > 1 ? h[1].id : "-",
				n > 2 ? h[2].id : "-");
			failed++;
		}
		asked++;
		free(h);
	}
	kb_close(kb);
	free(text);
	ck_assert_int_ge(asked, 25);
	ck_assert_msg(failed == 0, "%d of %d INDEX.md questions missed their guide", failed, asked);
}
END_TEST

/* Asks every "- <question> | <best-id>, <other acceptable ids>" line of
 * tests/data/<file> and counts the questions with an acceptable guide in the
 * top 3 (misses are printed); 0 when the knowledge base is not built. */
static int blind_file_score(const char *file, int *asked, int *found_n)
{
	const char *path = getenv("KFORGE_KB");
	char qpath[700], *text = NULL;
	size_t len = 0;
	struct kb *kb = NULL;
	struct kf_err err = {0};
	*asked = *found_n = 0;
	snprintf(qpath, sizeof qpath, "%s/tests/data/%s", g_src, file);
	if (!path || access(path, R_OK) != 0) {
		fprintf(stderr, "check_kb: blind retrieval (%s) skipped: no knowledge.db\n", file);
		return 0;
	}
	ck_assert_int_eq(kb_read_file(qpath, 1 << 20, &text, &len, &err), 0);
	ck_assert_msg(kb_open(path, &kb, &err) == 0, "%s", err.msg);
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *bar = strrchr(line, '|');
		if (strncmp(line, "- ", 2) != 0 || !bar)
			continue;
		*bar = '\0';
		char ok[512];
		size_t on = 0;
		ok[on++] = ',';
		for (const char *p = bar + 1; *p && on < sizeof ok - 2; p++)
			if (*p != ' ')
				ok[on++] = *p;
		ok[on++] = ',';
		ok[on] = '\0';
		struct kb_hit *h = NULL;
		struct kb_search q = {.query = line + 2, .limit = 3};
		size_t n = 0;
		ck_assert_int_eq(kb_search_guides(kb, &q, &h, &n, &err), 0);
		int found = 0;
		for (size_t i = 0; i < n; i++) {
			char id[80];
			snprintf(id, sizeof id, ",%s,", h[i].id);
			found |= strstr(ok, id) != NULL;
		}
		if (!found)
			fprintf(stderr, "blind (%s): '%s' wants one of %s, got %s %s %s\n", file,
				line + 2, ok, n > 0 ? h[0].id : "-", n > 1 ? h[1].id : "-",
				n > 2 ? h[2].id : "-");
		*found_n += found;
		(*asked)++;
		free(h);
	}
	kb_close(kb);
	free(text);
	return 1;
}

/* tests/data/search-blind-questions.md: 30 questions written from the
 * guide titles alone by someone who had not read the guides. At least 28
 * must put an acceptable guide in the top 3 (the INDEX.md questions were
 * written with the guides open; these measure search on an agent's own
 * words). */
START_TEST(blind_questions_rank_an_acceptable_guide_in_the_top_three)
{
	int asked, found;
	if (!blind_file_score("search-blind-questions.md", &asked, &found))
		return;
	ck_assert_int_eq(asked, 30);
	ck_assert_msg(found >= 28, "%d of %d blind questions found an acceptable guide", found,
		      asked);
}
END_TEST

/* tests/data/search-blind-questions-new-topics.md: questions in a user's
 * words for the topics added after the first set (decode attention, FA3,
 * Triton and Inductor's code, GroupNorm and channels_last convolutions,
 * nsys, occupancy, wgmma, tcgen05, FP8, MoE, streams, graphs, the Hub).
 * Every one must reach an acceptable guide: a miss is fixed in the guide's
 * title or wording, INDEX.md or the synonym groups, not tolerated. */
START_TEST(new_topic_blind_questions_rank_an_acceptable_guide_in_the_top_three)
{
	int asked, found;
	if (!blind_file_score("search-blind-questions-new-topics.md", &asked, &found))
		return;
	ck_assert_int_ge(asked, 28);
	ck_assert_msg(found == asked,
		      "%d of %d new-topic blind questions found an acceptable guide", found, asked);
}
END_TEST

/* Words an agent types for a topic the guides name otherwise reach that
 * guide through the synonym groups. */
static const struct {
	const char *query, *want;
} SYNONYM_CASES[] = {
	{"how do I time a CUDA kernel accurately", "measuring"},
	{"why is my reduction slow on H100", "warp-reductions"},
	{"how to profile my kernel", "ncu-metrics"},
	{"how many blocks should I launch for my elementwise kernel", "grid-sizing"},
	{"kernel for MoE experts routing", "moe-grouped-gemm"},
};

START_TEST(agent_words_reach_the_guide_through_synonyms)
{
	const char *path = getenv("KFORGE_KB");
	struct kb *kb = NULL;
	struct kf_err err = {0};
	if (!path || access(path, R_OK) != 0) {
		fprintf(stderr, "check_kb: synonym retrieval skipped: no knowledge.db\n");
		return;
	}
	ck_assert_msg(kb_open(path, &kb, &err) == 0, "%s", err.msg);
	struct kb_hit *h = NULL;
	struct kb_search q = {.query = SYNONYM_CASES[_i].query, .limit = 3};
	size_t n = 0;
	ck_assert_int_eq(kb_search_guides(kb, &q, &h, &n, &err), 0);
	int found = 0;
	for (size_t i = 0; i < n; i++)
		found |= strcmp(h[i].id, SYNONYM_CASES[_i].want) == 0;
	ck_assert_msg(found, "'%s': %s not in the top 3 (%s %s %s)", q.query,
		      SYNONYM_CASES[_i].want, n > 0 ? h[0].id : "-", n > 1 ? h[1].id : "-",
		      n > 2 ? h[2].id : "-");
	free(h);
	kb_close(kb);
}
END_TEST

/* ---- threads ------------------------------------------------------------------ */

static void *search_worker(void *arg)
{
	long bad = 0;
	(void)arg;
	for (int i = 0; i < 150; i++) {
		struct kb_search s = {.query = i % 2 ? "bank conflicts" : "coalescing", .limit = 3};
		struct kb_hit *h = NULL;
		size_t n = 0;
		if (kb_search_guides(g_kb, &s, &h, &n, NULL) != 0 || n == 0 ||
		    strcmp(h[0].id, i % 2 ? "fx-bank" : "fx-coalesce") != 0)
			bad++;
		free(h);
		const struct kb_gpu *g = NULL;
		if (kb_gpu_find(g_kb, "hopper", &g, NULL) != 0 || strcmp(g->id, "h100-sxm") != 0)
			bad++;
		struct kb_guide *gd = NULL;
		if (kb_guide_read(g_kb, "fx-wgmma", &gd, NULL) != 0)
			bad++;
		kb_guide_free(gd);
	}
	return (void *)bad;
}

START_TEST(concurrent_queries_from_many_threads_agree)
{
	pthread_t t[12]; /* more threads than pooled connections */
	for (int i = 0; i < 12; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, search_worker, NULL), 0);
	long bad = 0;
	for (int i = 0; i < 12; i++) {
		void *r = NULL;
		pthread_join(t[i], &r);
		bad += (long)r;
	}
	ck_assert_int_eq(bad, 0);
}
END_TEST

static Suite *kb_suite(void)
{
	Suite *s = suite_create("kb");
	TCase *t = tcase_create("gpus");
	tcase_add_unchecked_fixture(t, suite_setup, suite_teardown);
	tcase_add_test(t, every_gpu_row_round_trips_against_the_csv);
	tcase_add_test(t, every_source_key_of_a_figure_is_in_the_sources_table);
	tcase_add_test(t, a10g_figures_are_the_a10g_not_the_a10);
	tcase_add_test(t, a_figure_cites_its_own_source);
	tcase_add_test(t, an_unknown_figure_carries_its_gap_not_a_source);
	tcase_add_test(t, shipped_l40s_int8_says_there_is_no_nvidia_source);
	tcase_add_loop_test(t, alias_resolves_to_the_canonical_gpu, 0,
			    sizeof ALIASES / sizeof ALIASES[0]);
	tcase_add_test(t, ambiguous_alias_lists_every_match_canonical_first);
	tcase_add_test(t, compare_resolves_two_to_four_names);
	tcase_add_test(t, unknown_gpu_names_the_closest_known_ones);
	tcase_add_test(t, derived_figures_match_hand_worked_examples);
	tcase_add_test(t, peaks_carry_values_and_sources_for_the_roofline);
	tcase_add_test(t, driver_devices_match_table_rows);
	suite_add_tcase(s, t);

	t = tcase_create("occupancy");
	tcase_add_unchecked_fixture(t, suite_setup, suite_teardown);
	tcase_add_test(t, occupancy_matches_worked_examples);
	tcase_add_test(t, occupancy_rejects_out_of_range_arguments);
	tcase_add_test(t, limits_come_from_the_table_for_an_arch_string);
	tcase_add_loop_test(t, feature_usability_follows_the_target, 0,
			    sizeof FEATURES / sizeof FEATURES[0]);
	tcase_add_test(t, arch_targets_parse_and_run_where_cuda_allows);
	suite_add_tcase(s, t);

	t = tcase_create("build");
	tcase_add_checked_fixture(t, build_setup, build_teardown);
	tcase_set_timeout(t, 30);
	tcase_add_test(t, build_fails_naming_a_guide_without_front_matter);
	tcase_add_test(t, build_fails_naming_a_guide_missing_a_required_key);
	tcase_add_test(t, build_fails_on_a_guide_that_does_not_say_what_it_was_checked_on);
	tcase_add_test(t, build_fails_naming_a_broken_cross_reference);
	tcase_add_test(t, build_fails_on_a_related_id_that_is_no_guide);
	tcase_add_test(t, build_fails_on_a_link_to_an_unknown_gpu);
	tcase_add_test(t, build_fails_on_duplicate_ids_and_bad_archs);
	tcase_add_test(t, build_fails_naming_a_gpu_figure_without_a_source);
	tcase_add_test(t, build_fails_on_a_source_that_names_no_key);
	tcase_add_test(t, build_fails_on_a_gpu_without_an_alias_line);
	tcase_add_test(t, build_fails_on_a_bad_figure_source_line);
	tcase_add_test(t, build_is_reproducible_byte_for_byte);
	tcase_add_test(t, build_without_guides_folder_still_works);
	tcase_add_test(t, open_rejects_a_missing_or_foreign_file);
	suite_add_tcase(s, t);

	t = tcase_create("search");
	tcase_add_unchecked_fixture(t, suite_setup, suite_teardown);
	tcase_add_test(t, search_ranks_title_match_first_with_a_highlighted_snippet);
	tcase_add_test(t, search_filters_by_tag_and_arch);
	tcase_add_loop_test(t, hostile_query_is_plain_text_never_an_error, 0,
			    sizeof HOSTILE / sizeof HOSTILE[0]);
	tcase_add_test(t, empty_or_overlong_query_is_rejected_clearly);
	tcase_add_test(t, guide_read_returns_the_whole_guide_and_unknown_ids_fail);
	tcase_add_test(t, retrieval_puts_the_right_guide_in_the_top_three);
	tcase_add_test(t, index_questions_rank_their_guide_in_the_top_three);
	tcase_add_test(t, blind_questions_rank_an_acceptable_guide_in_the_top_three);
	tcase_add_test(t, new_topic_blind_questions_rank_an_acceptable_guide_in_the_top_three);
	tcase_add_loop_test(t, agent_words_reach_the_guide_through_synonyms, 0,
			    sizeof SYNONYM_CASES / sizeof SYNONYM_CASES[0]);
	tcase_add_test(t, concurrent_queries_from_many_threads_agree);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(kb_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
