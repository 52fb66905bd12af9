/* profile_csv: the metrics profile_kernel asks ncu for, and the reader of
 * ncu's raw page as CSV (`ncu --csv --page raw`): a header row of column
 * names (ID, Process ID, ..., Kernel Name, ..., then one column per metric),
 * a row of units, one row per profiled launch. Pure: no I/O. */
#include "sandbox/profile/profile.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STALL_PREFIX "smsp__average_warps_issue_stalled_"
#define STALL_SUFFIX "_per_issue_active.ratio"

/* One scalar metric and where it goes. */
static const struct {
	const char *name;
	size_t off;
} SCALARS[] = {
#define M(n, f)                                        \
	{                                              \
		n, offsetof(struct profile_metrics, f) \
	}
	M("gpu__time_duration.sum", duration_ns),
	M("sm__throughput.avg.pct_of_peak_sustained_elapsed", sol_compute_pct),
	M("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", sol_memory_pct),
	M("dram__throughput.avg.pct_of_peak_sustained_elapsed", sol_dram_pct),
	M("lts__throughput.avg.pct_of_peak_sustained_elapsed", sol_l2_pct),
	M("l1tex__throughput.avg.pct_of_peak_sustained_active", sol_l1_pct),
	M("sm__warps_active.avg.pct_of_peak_sustained_active", occ_achieved_pct),
	M("sm__maximum_warps_per_active_cycle_pct", occ_theoretical_pct),
	M("launch__occupancy_limit_blocks", limit_blocks),
	M("launch__occupancy_limit_registers", limit_registers),
	M("launch__occupancy_limit_shared_mem", limit_shared),
	M("launch__occupancy_limit_warps", limit_warps),
	M("launch__registers_per_thread", regs_per_thread),
	M("launch__block_size", block_size),
	M("launch__grid_size", grid_size),
	M("launch__shared_mem_per_block_static", shared_static_bytes),
	M("launch__shared_mem_per_block_dynamic", shared_dynamic_bytes),
	M("launch__waves_per_multiprocessor", waves_per_sm),
	M("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum", local_ld_sectors),
	M("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum", local_st_sectors),
	M("l1tex__t_sector_hit_rate.pct", l1_hit_pct),
	M("lts__t_sector_hit_rate.pct", l2_hit_pct),
	M("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", shared_ld_conflicts),
	M("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", shared_st_conflicts),
	M("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", shared_ld_wavefronts),
	M("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", shared_st_wavefronts),
	M("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", gld_sectors),
	M("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", gld_requests),
	M("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", gst_sectors),
	M("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", gst_requests),
	M("smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct", gld_bytes_used_pct),
	M("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active", hmma_pct),
	M("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active", gmma_pct),
	M("smsp__issue_active.avg.pct_of_peak_sustained_active", issue_active_pct),
	M("dram__bytes_read.sum", dram_read_bytes),
	M("dram__bytes_write.sum", dram_write_bytes),
#undef M
};
#define NSCALARS (sizeof SCALARS / sizeof SCALARS[0])

/* The Warp State Statistics reasons of sm_70 and later. */
static const char *const STALLS[] = {
	"barrier",
	"branch_resolving",
	"dispatch_stall",
	"drain",
	"imc_miss",
	"lg_throttle",
	"long_scoreboard",
	"math_pipe_throttle",
	"membar",
	"mio_throttle",
	"misc",
	"no_instruction",
	"not_selected",
	"selected",
	"short_scoreboard",
	"sleeping",
	"tex_throttle",
	"wait",
};
#define NSTALLS (sizeof STALLS / sizeof STALLS[0])

static const char *metric_names[NSCALARS + NSTALLS + 1];
static char stall_names[NSTALLS][96];

const char *const *profile_metric_names(void)
{
	/* Filled on every call with the same values: no lock needed, and no
	 * reader ever sees a half-written entry it would use differently. */
	for (size_t i = 0; i < NSCALARS; i++)
		metric_names[i] = SCALARS[i].name;
	for (size_t i = 0; i < NSTALLS; i++) {
		snprintf(stall_names[i], sizeof stall_names[i], STALL_PREFIX "%s" STALL_SUFFIX,
			 STALLS[i]);
		metric_names[NSCALARS + i] = stall_names[i];
	}
	metric_names[NSCALARS + NSTALLS] = NULL;
	return metric_names;
}

void profile_metrics_init(struct profile_metrics *m)
{
	memset(m, 0, sizeof *m);
	for (size_t i = 0; i < NSCALARS; i++)
		*(double *)((char *)m + SCALARS[i].off) = NAN;
}

/* --- CSV ------------------------------------------------------------------ */

#define CSV_COLS_MAX  512
#define CSV_FIELD_MAX 512

/* One parsed row: fields point into buf. */
struct csv_row {
	size_t n;
	char *f[CSV_COLS_MAX];
	char buf[CSV_COLS_MAX * 48];
	size_t used;
	int too_wide; /* more columns or text than fit */
};

/* Reads one CSV record from *p (up to end) into row: fields separated by
 * commas, optionally quoted ("" is a quote inside quotes), ended by a
 * newline outside quotes. Returns 0 at the end of the text, 1 otherwise. */
static int csv_next(const char **p, const char *end, struct csv_row *row)
{
	const char *s = *p;
	if (s >= end)
		return 0;
	row->n = 0;
	row->used = 0;
	row->too_wide = 0;
	for (;;) {
		char field[CSV_FIELD_MAX];
		size_t fl = 0;
		int quoted = 0;
		if (s < end && *s == '"') {
			quoted = 1;
			s++;
		}
		while (s < end) {
			char c = *s;
			if (quoted) {
				if (c == '"' && s + 1 < end && s[1] == '"') {
					s += 2;
					if (fl + 1 < sizeof field)
						field[fl++] = '"';
					continue;
				}
				if (c == '"') {
					quoted = 0;
					s++;
					continue;
				}
			} else if (c == ',' || c == '\n' || c == '\r') {
				break;
			}
			if (fl + 1 < sizeof field)
				field[fl++] = c;
			s++;
		}
		field[fl] = 0;
		if (row->n < CSV_COLS_MAX && row->used + fl + 1 <= sizeof row->buf) {
			row->f[row->n++] = memcpy(row->buf + row->used, field, fl + 1);
			row->used += fl + 1;
		} else {
			row->too_wide = 1;
		}
		if (s < end && *s == ',') {
			s++;
			continue;
		}
		break;
	}
	if (s < end && *s == '\r')
		s++;
	if (s < end && *s == '\n')
		s++;
	*p = s;
	return 1;
}

/* Scale of a unit to the base unit the struct holds (bytes, ns). */
static double unit_scale(const char *u)
{
	static const struct {
		const char *u;
		double k;
	} T[] = {
		{"byte", 1},
		{"Kbyte", 1e3},
		{"Mbyte", 1e6},
		{"Gbyte", 1e9},
		{"Tbyte", 1e12},
		{"KB", 1e3},
		{"MB", 1e6},
		{"GB", 1e9},
		{"Kibyte", 1024.0},
		{"Mibyte", 1048576.0},
		{"Gibyte", 1073741824.0},
		{"nsecond", 1},
		{"ns", 1},
		{"usecond", 1e3},
		{"us", 1e3},
		{"msecond", 1e6},
		{"ms", 1e6},
		{"second", 1e9},
		{"s", 1e9},
		{"Ksector", 1e3},
		{"Msector", 1e6},
		{"Kinst", 1e3},
		{"Minst", 1e6},
		{"Krequest", 1e3},
		{"Mrequest", 1e6},
	};
	/* "Kbyte/block", "register/thread": the prefix is on the numerator */
	size_t n = u ? strcspn(u, "/") : 0;
	for (size_t i = 0; n && i < sizeof T / sizeof T[0]; i++)
		if (strlen(T[i].u) == n && strncmp(u, T[i].u, n) == 0)
			return T[i].k;
	return 1;
}

/* A value as ncu prints it ("1,234.5", "n/a", "") -> number or NaN. */
static double csv_number(const char *v)
{
	char tmp[CSV_FIELD_MAX];
	size_t n = 0;
	for (const char *c = v; *c && n + 1 < sizeof tmp; c++)
		if (*c != ',' && *c != ' ')
			tmp[n++] = *c;
	tmp[n] = 0;
	if (!n)
		return NAN;
	char *end = NULL;
	double d = strtod(tmp, &end);
	return end && !*end && isfinite(d) ? d : NAN;
}

/* Which struct field a column fills: a scalar, a stall (its name), or
 * nothing. */
static void column_target(const char *name, long *scalar, const char **stall)
{
	*scalar = -1;
	*stall = NULL;
	for (size_t i = 0; i < NSCALARS; i++)
		if (strcmp(name, SCALARS[i].name) == 0) {
			*scalar = (long)i;
			return;
		}
	size_t lp = strlen(STALL_PREFIX), ls = strlen(STALL_SUFFIX), ln = strlen(name);
	if (ln > lp + ls && strncmp(name, STALL_PREFIX, lp) == 0 &&
	    strcmp(name + ln - ls, STALL_SUFFIX) == 0)
		*stall = name + lp;
}

static void fill_kernel(const struct csv_row *hdr, const struct csv_row *units,
			const struct csv_row *row, long name_col, struct profile_metrics *m)
{
	profile_metrics_init(m);
	snprintf(m->kernel, sizeof m->kernel, "%s", name_col >= 0 ? row->f[name_col] : "");
	for (size_t c = 0; c < hdr->n && c < row->n; c++) {
		long sc;
		const char *st;
		column_target(hdr->f[c], &sc, &st);
		if (sc < 0 && !st)
			continue;
		double v = csv_number(row->f[c]);
		if (!isnan(v) && units && c < units->n)
			v *= unit_scale(units->f[c]);
		if (sc >= 0) {
			*(double *)((char *)m + SCALARS[sc].off) = v;
		} else if (!isnan(v) && m->stalls_len < PROFILE_STALLS_MAX) {
			struct profile_stall *s = &m->stalls[m->stalls_len++];
			size_t nl = strlen(st) - strlen(STALL_SUFFIX);
			if (nl >= sizeof s->name)
				nl = sizeof s->name - 1;
			memcpy(s->name, st, nl);
			s->name[nl] = 0;
			s->per_inst = v;
		}
	}
}

struct csv_state {
	struct csv_row hdr, units, row;
};

int profile_csv_parse(const char *text, size_t len, struct profile_report *rep, struct kf_err *err)
{
	memset(rep, 0, sizeof *rep);
	if (len > PROFILE_CSV_MAX_BYTES)
		return kf_err_set(err, KF_ETOOBIG, "the ncu report has %zu bytes, over the %u cap",
				  len, PROFILE_CSV_MAX_BYTES);
	struct csv_state *st = calloc(1, sizeof *st);
	if (!st)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	const char *p = text, *end = text + len;
	int have_hdr = 0, have_units = 0, rc = 0;
	long name_col = -1;
	while (!have_hdr && csv_next(&p, end, &st->hdr))
		if (st->hdr.n > 1 && !st->hdr.too_wide && strcmp(st->hdr.f[0], "ID") == 0)
			have_hdr = 1;
	if (!have_hdr) {
		rc = kf_err_set(err, KF_EINVAL,
				"the ncu output has no CSV header row (\"ID\", ..., metric names)");
		goto out;
	}
	for (size_t c = 0; c < st->hdr.n; c++)
		if (strcmp(st->hdr.f[c], "Kernel Name") == 0)
			name_col = (long)c;
	while (csv_next(&p, end, &st->row)) {
		if (st->row.n != st->hdr.n || st->row.too_wide)
			continue; /* ==PROF== lines, blank lines, the program's output */
		if (!have_units && !rep->kernels_len && st->row.f[0][0] == 0) {
			st->units = st->row;
			/* the fields point into row's buffer: repoint them */
			for (size_t c = 0; c < st->units.n; c++)
				st->units.f[c] = st->units.buf + (st->row.f[c] - st->row.buf);
			have_units = 1;
			continue;
		}
		if (rep->kernels_len == PROFILE_KERNELS_MAX) {
			rc = kf_err_set(err, KF_ETOOBIG,
					"the ncu report has more than %d kernel launches",
					PROFILE_KERNELS_MAX);
			goto out;
		}
		fill_kernel(&st->hdr, have_units ? &st->units : NULL, &st->row, name_col,
			    &rep->kernels[rep->kernels_len++]);
	}
	if (!rep->kernels_len)
		rc = kf_err_set(err, KF_EINVAL,
				"the ncu report has a header but no profiled launch: no kernel ran "
				"in the profiled range");
out:
	free(st);
	return rc;
}
