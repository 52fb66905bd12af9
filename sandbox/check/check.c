/* check: check_kernel, daemon side; see check.h. The harness never sees
 * the reference: candidate outputs come back as files; the reference is
 * computed here (built-in ops, float64 CPU), in a separate harness process
 * (a CUDA reference), or in a sandboxed python3 (torch), and compared here.
 * This file: preparing (compiles) and the check itself (rows of sizes and
 * trials on a GPU, the verdict); the harness and its job directories are in
 * check_harness.c, the references in check_ref.c, the comparison and the
 * safeguards in check_compare.c (internals: check_int.h). */
#include "sandbox/check/check.h"
#include "sandbox/check/check_int.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"
#include "sandbox/compile/compile.h"
#include "sandbox/pool/gpu.h"
#include "sandbox/pool/runner.h"

uint64_t check_new_seed(void)
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		v = spec_mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
			       (uint64_t)getpid());
	}
	return v;
}

/* --- preparing ---------------------------------------------------------- */

void check_prep_fini(struct check_prep *p)
{
	if (!p)
		return;
	spec_free(p->s);
	memset(p, 0, sizeof *p);
}

static int compile_one(struct check_env *env, const char *source, const char *arch,
		       const volatile int *cancel, const char *what, char *cubin, size_t cap,
		       struct check_prep *p, struct check_compile_failure *cf, struct kf_err *err)
{
	struct compile_req req = {
		.source = source, .source_len = strlen(source), .arch = arch, .cancel = cancel};
	struct compile_result res;
	struct kf_err cerr = {0};
	int rc = compile_kernel(env->cc, &req, &res, &cerr);
	if (rc == KF_ECOMPILE || (rc == 0 && !res.ok)) {
		char sum[600] = "";
		if (res.report)
			compile_summary(&res, sum, sizeof sum);
		kf_err_set(err, KF_ECOMPILE, "%s did not compile: %s", what,
			   sum[0] ? sum : cerr.msg);
		cf->what = what;
		cf->compile = res; /* moved: the failure owns it */
		snprintf(cf->message, sizeof cf->message, "%s", cerr.msg);
		return KF_ECOMPILE;
	}
	if (rc) {
		compile_result_fini(&res);
		return kf_err_set(err, rc, "%s: %s", what, cerr.msg);
	}
	if (p && cubin == p->cand_cubin) {
		snprintf(p->cand_artifact, sizeof p->cand_artifact, "%s", res.artifact_id);
		p->cand_cache_hit = res.cache_hit;
		p->compile_ms = res.compile_ms;
		snprintf(p->arch, sizeof p->arch, "%s", res.arch);
	}
	rc = compile_artifact_path(env->cc, res.artifact_id, "cubin", cubin, cap, &cerr);
	compile_result_fini(&res);
	if (rc)
		return kf_err_set(err, rc, "%s: compiled, but the cubin is missing: %s", what,
				  cerr.msg);
	return 0;
}

/* "16G", "512M", "1073741824" -> bytes; 0 when malformed. */
static uint64_t parse_bytes(const char *v)
{
	char *end = NULL;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	if (errno || end == v)
		return 0;
	uint64_t mul = 1;
	if (*end == 'G' || *end == 'g')
		mul = 1ull << 30, end++;
	else if (*end == 'M' || *end == 'm')
		mul = 1ull << 20, end++;
	if (*end || n > UINT64_MAX / mul)
		return 0;
	return n * mul;
}

void check_limits(struct spec_limits *lim)
{
	spec_limits_default(lim);
	const char *v = getenv("KFORGE_MAX_DEVICE_BYTES");
	uint64_t b = v ? parse_bytes(v) : 0;
	if (b)
		lim->max_device_bytes = b;
	v = getenv("KFORGE_MAX_HOST_BYTES");
	b = v ? parse_bytes(v) : 0;
	if (b)
		lim->max_host_bytes = b;
	/* Never more than 80% of the smallest GPU's memory: the benchmark holds
	 * two buffer sets (candidate and baseline) plus the L2 flush buffer. */
	int n = gpu_count();
	for (int i = 0; i < n; i++) {
		const struct gpu_info *g = gpu_get(i);
		if (g && g->total_mem_bytes &&
		    g->total_mem_bytes / 10 * 8 / 2 < lim->max_device_bytes)
			lim->max_device_bytes = g->total_mem_bytes / 10 * 8 / 2;
	}
}

int check_prepare(struct check_env *env, const json_t *spec, int want_baseline,
		  const volatile int *cancel, struct check_prep *p,
		  struct check_compile_failure *cf, struct kf_err *err)
{
	memset(p, 0, sizeof *p);
	memset(cf, 0, sizeof *cf);
	json_t *x = NULL;
	unsigned long long harness_mem;
	int rc = check_harness_mem_bytes(&harness_mem, err); /* a bad setting fails first */
	if (rc)
		return rc;
	rc = spec_expand_op(spec, op_find, &x, err);
	if (rc)
		return rc;
	struct spec_limits lim;
	check_limits(&lim);
	rc = spec_parse(x, &lim, op_find, &p->s, err);
	json_decref(x);
	if (rc)
		return rc;
	if (gpu_count() <= 0)
		return kf_err_set(err, KF_ENOGPU, "no usable GPU: %s", gpu_no_gpu_reason());
	if (!env->cc)
		return kf_err_set(err, KF_ESANDBOX, "the compiler is not available");
	struct spec *s = p->s;
	if ((rc = compile_one(env, s->source, s->arch, cancel, "the candidate", p->cand_cubin,
			      sizeof p->cand_cubin, p, cf, err)))
		return rc;
	if (s->ref.kind == SPEC_REF_CUDA &&
	    (rc = compile_one(env, s->ref.source, s->arch, cancel, "the reference source",
			      p->ref_cubin, sizeof p->ref_cubin, NULL, cf, err)))
		return rc;
	if (want_baseline) {
		if (s->baseline.kind == SPEC_BASE_FATBIN) {
			if (check_find_file("KFORGE_FATBIN", "kernels/kernels.fatbin",
					    "../share/kforge/kernels.fatbin", p->base_module,
					    sizeof p->base_module))
				return kf_err_set(err, KF_ENOTFOUND,
						  "baseline: kernels.fatbin not found (set "
						  "KFORGE_FATBIN or build kforge with nvcc)");
		} else if (s->baseline.kind == SPEC_BASE_CUDA) {
			if (s->ref.kind == SPEC_REF_CUDA &&
			    strcmp(s->ref.source, s->baseline.source) == 0)
				snprintf(p->base_module, sizeof p->base_module, "%s", p->ref_cubin);
			else if ((rc = compile_one(env, s->baseline.source, s->arch, cancel,
						   "the baseline source", p->base_module,
						   sizeof p->base_module, NULL, cf, err)))
				return rc;
		}
	}
	return 0;
}

/* --- the check ----------------------------------------------------------- */

unsigned check_work_timeout_ms(const struct spec_bound *b, unsigned launches)
{
	double floor_ms = b->cost_bytes > 0 ? b->cost_bytes / (CHECK_WATCHDOG_GBS * 1e6) : 0;
	if (b->cost_flops > 0 && b->cost_flops / (CHECK_WATCHDOG_TFLOPS * 1e9) > floor_ms)
		floor_ms = b->cost_flops / (CHECK_WATCHDOG_TFLOPS * 1e9);
	double ms = CHECK_WATCHDOG_MULT * floor_ms * (launches ? launches : 1) +
		    (double)b->device_bytes / CHECK_WATCHDOG_HOST_BPMS;
	if (!(ms >= CHECK_MIN_TIMEOUT_MS))
		return CHECK_MIN_TIMEOUT_MS;
	return ms >= CHECK_MAX_TIMEOUT_MS ? CHECK_MAX_TIMEOUT_MS : (unsigned)ms;
}

void check_sizes_text(const struct spec *s, const int64_t *vals, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = 0;
	for (size_t k = 0; k < s->vars_len && n < cap; k++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%s=%" PRId64, k ? ", " : "", s->vars[k],
				      vals[k]);
}

void check_not_run_reason(const struct spec *s, const int64_t *vals, int odd, int is_ref, char *buf,
			  size_t cap)
{
	char st[160];
	check_sizes_text(s, vals, st, sizeof st);
	if (is_ref)
		snprintf(buf, cap, "not run: the CUDA reference did not finish at %s", st);
	else
		snprintf(buf, cap,
			 "not run: the kernel did not finish at %s%s, which decides the verdict",
			 odd ? "odd size " : "", st);
}

struct row {
	int64_t vals[SPEC_MAX_VARS];
	int odd;
	int ntrials;
	uint64_t seeds[CHECK_MAX_TRIALS];
	struct spec_bound b;
	char dir[PATH_MAX];
	json_t *cand; /* candidate harness report */
	int cand_rc;
	char cand_err[256];
	json_t *ref; /* reference harness report (CUDA) */
	int ref_rc;
	char ref_err[256];
	char *printf_out;
	int not_run; /* 1: skipped after a hang; cand_err says why */
	/* built-in op references computed while the harness ran (ahead_run) */
	double *ahead[CHECK_MAX_TRIALS][SPEC_MAX_TENSORS];
};

/* --- references ahead of the kernel ------------------------------------ */

/* A built-in op's float64 reference depends on the sizes and seeds alone,
 * so a thread computes them while the harness runs (its process start,
 * uploads and downloads leave cores idle), holding at most
 * CHECK_AHEAD_MAX_BYTES of reference outputs; the judge computes any
 * trial it skipped or that failed here (with its message) itself. */
#define CHECK_AHEAD_MAX_BYTES (1ull << 30)
#define CHECK_AHEAD_NICE      10

struct ahead {
	const struct spec *s;
	struct row *rows;
	size_t nrows;
	int stop; /* atomic: the check ended early, stop after this trial */
	int started;
	pthread_t th;
};

static void *ahead_run(void *arg)
{
	struct ahead *a = arg;
	uint64_t held = 0;
	/* Below the harness: its inputs, scans and watchdog-timed work come
	 * first on a busy host. Linux nice values are per thread, and the
	 * threads this one starts (spec_fill, par_for) inherit it. */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), CHECK_AHEAD_NICE))
		log_debug("check", "references ahead run at normal priority: %s", strerror(errno));
	for (size_t ri = 0; ri < a->nrows; ri++) {
		struct row *r = &a->rows[ri];
		uint64_t need = 0;
		for (size_t t = 0; t < a->s->tensors_len; t++)
			if (a->s->tensors[t].role != SPEC_ROLE_INPUT)
				need += r->b.elems[t] * sizeof(double);
		for (int k = 0; k < r->ntrials; k++) {
			if (__atomic_load_n(&a->stop, __ATOMIC_RELAXED))
				return NULL;
			struct kf_err e = {0};
			if (held + need <= CHECK_AHEAD_MAX_BYTES &&
			    check_reference_cpu(a->s, r->vals, r->seeds[k], r->ahead[k], &e) == 0)
				held += need;
		}
	}
	return NULL;
}

/* Starts ahead_run for the rows of a check whose reference is a built-in
 * op; without a thread the judge computes every reference itself. */
static void ahead_start(struct ahead *a, const struct spec *s, struct row *rows, size_t nrows)
{
	*a = (struct ahead){.s = s, .rows = rows, .nrows = nrows};
	if (s->ref.kind == SPEC_REF_OP)
		a->started = pthread_create(&a->th, NULL, ahead_run, a) == 0;
}

/* Waits for ahead_run (stopping it first when stop is set). */
static void ahead_join(struct ahead *a, int stop)
{
	if (!a->started)
		return;
	if (stop)
		__atomic_store_n(&a->stop, 1, __ATOMIC_RELAXED);
	pthread_join(a->th, NULL);
	a->started = 0;
}

/* One check on one GPU: what the runner thread needs to run every row of
 * sizes and trials and leave their reports in rows. */
struct check_job {
	struct check_env *env;
	struct check_prep *p;
	struct row *rows;
	size_t nrows;
	size_t ref_rows; /* rows the CUDA reference runs for: those before a hang */
	unsigned timeout_ms;
	const struct check_opts *o;
	int gpu;
	char *printf_out;	     /* first non-empty kernel stdout */
	json_t *device;		     /* the harness's device object */
	struct check_phases *phases; /* the result's (borrowed) */
	double queued_ms;	     /* check_now_ms when the job was queued */
};

/* One row of a check-mode job: its sizes, seeds and output prefix. */
static json_t *job_row(const struct spec *s, const struct row *r, size_t idx, const char *tag)
{
	json_t *sizes = json_array(), *seeds = json_array();
	for (size_t k = 0; k < s->vars_len; k++)
		json_array_append_new(sizes, json_integer(r->vals[k]));
	for (int t = 0; t < r->ntrials; t++) {
		char hex[20];
		snprintf(hex, sizeof hex, "%016" PRIx64, r->seeds[t]);
		json_array_append_new(seeds, json_string(hex));
	}
	char prefix[32];
	snprintf(prefix, sizeof prefix, "r%zu.%s", idx, tag);
	return json_pack("{s:o, s:o, s:s}", "sizes", sizes, "seeds", seeds, "out_prefix", prefix);
}

/* Takes the report lines of a process that started at row next (of n):
 * each row's line, or its timeout (*hung = that row). Returns 1 when the
 * last line ended the process early (a timeout, fault or error). */
static int take_lines(struct check_job *c, const json_t *lines, size_t next, size_t n, int is_ref,
		      size_t *hung)
{
	int stopped = 0;
	for (size_t i = 0; i < json_array_size(lines) && next + i < n; i++) {
		json_t *l = json_array_get(lines, i);
		struct row *r = &c->rows[next + i];
		if (json_is_true(json_object_get(l, "timeout"))) {
			int *prc = is_ref ? &r->ref_rc : &r->cand_rc;
			char *pe = is_ref ? r->ref_err : r->cand_err;
			*prc = KF_ETIMEOUT;
			snprintf(pe, sizeof r->cand_err,
				 "the %s did not finish within %u ms: the harness was killed",
				 is_ref ? "CUDA reference" : "kernel", c->timeout_ms);
			*hung = next + i;
			stopped = 1;
		} else {
			json_t **slot = is_ref ? &r->ref : &r->cand;
			json_decref(*slot);
			*slot = json_incref(l);
			stopped = json_object_get(l, "fault") || json_object_get(l, "error");
		}
	}
	return stopped;
}

/* The rows after row hung (of n) are not run (check_not_run_reason), and
 * the reference runs only for the rows before it. */
static void not_run_after(struct check_job *c, size_t hung, size_t n, int is_ref)
{
	const struct row *h = &c->rows[hung];
	for (size_t i = hung + 1; i < n; i++) {
		struct row *r = &c->rows[i];
		if (is_ref) {
			r->ref_rc = KF_EFAULT;
			check_not_run_reason(c->p->s, h->vals, h->odd, 1, r->ref_err,
					     sizeof r->ref_err);
		} else {
			r->not_run = 1;
			check_not_run_reason(c->p->s, h->vals, h->odd, 0, r->cand_err,
					     sizeof r->cand_err);
		}
	}
	if (!is_ref)
		c->ref_rows = hung;
}

/* Runs program over its rows (every row for the candidate; for the
 * reference, those before a hang of the candidate) in as few harness
 * processes as possible: one process takes all remaining rows; a row that
 * faults or errs ends its process and the next process starts at the row
 * after it; a row that hangs ends the program's rows (not_run_after).
 * Results go to rows[i].cand (or .ref for the reference). */
static int run_rows(struct check_job *c, int gpu, const volatile int *stop, int is_ref,
		    struct kf_err *err)
{
	const struct spec *s = c->p->s;
	size_t next = 0, n = is_ref ? c->ref_rows : c->nrows;
	while (next < n) {
		if (stop && *stop)
			return kf_err_set(err, KF_ECANCELED, "cancelled");
		json_t *rows = json_array();
		for (size_t i = next; i < n; i++)
			json_array_append_new(rows,
					      job_row(s, &c->rows[i], i, is_ref ? "ref" : "cand"));
		size_t todo = n - next;
		json_t *job = json_pack("{s:s, s:i, s:s, s:s, s:i, s:i, s:i, s:o}", "mode", "check",
					"device", gpu, "program",
					is_ref ? "reference" : "candidate", "module",
					is_ref ? "ref.cubin" : "cand.cubin", "runs", is_ref ? 1 : 2,
					"extra_launches", is_ref ? 0 : CHECK_EXTRA_LAUNCHES,
					"row_timeout_ms", (int)c->timeout_ms, "rows", rows);
		struct kf_err e = {0};
		json_t *rep = NULL;
		char *out = NULL;
		unsigned wall = c->timeout_ms * (unsigned)(todo > 60 ? 60 : todo) + 15000u;
		double t0 = check_now_ms();
		int rc = check_harness_exec(c->env, c->rows[0].dir, job, wall, stop, &rep,
					    is_ref ? NULL : &out, &e);
		if (is_ref) { /* the CUDA reference's whole process */
			c->phases->reference_ms += check_now_ms() - t0;
			check_phases_count_run(c->phases, rep);
		} else
			check_phases_add_run(c->phases, rep, check_now_ms() - t0);
		json_decref(job);
		if (out && !c->printf_out && out[0])
			c->printf_out = out;
		else
			free(out);
		if (rep && !c->device && json_object_get(rep, "device"))
			c->device = json_incref(json_object_get(rep, "device"));
		if (rc == KF_ECANCELED || rc == KF_ESANDBOX || rc == KF_ENOTFOUND) {
			json_decref(rep);
			return kf_err_set(err, rc, "%s", e.msg);
		}
		const json_t *lines = json_object_get(rep, "rows");
		size_t k = json_array_size(lines), hung = SIZE_MAX;
		int stopped = take_lines(c, lines, next, n, is_ref, &hung);
		int done = hung != SIZE_MAX || (k >= todo && (rc == 0 || stopped));
		if (done) {
			/* every row has its line, or a hang ended the rows */
		} else if (stopped) {
			next += k;
		} else {
			/* No line for row next+k: the process died or hung there, or
			 * stopped before it (a job error in the final report). */
			struct row *r = &c->rows[next + k];
			const char *fe = json_string_value(json_object_get(rep, "error"));
			int *prc = is_ref ? &r->ref_rc : &r->cand_rc;
			char *pe = is_ref ? r->ref_err : r->cand_err;
			*prc = rc ? rc : KF_EFAULT;
			snprintf(pe, sizeof r->cand_err, "%s",
				 rc   ? e.msg
				 : fe ? fe
				      : "the harness stopped");
			if (rc == KF_ETIMEOUT)
				hung = next + k;
			next += k + 1;
		}
		json_decref(rep);
		if (hung != SIZE_MAX)
			not_run_after(c, hung, n, is_ref);
		if (done || hung != SIZE_MAX)
			break;
	}
	return 0;
}

static int gpu_job(void *arg, int gpu, const volatile int *stop, struct kf_err *err)
{
	struct check_job *c = arg;
	c->gpu = gpu;
	c->phases->queue_wait_ms += check_now_ms() - c->queued_ms;
	if (c->o->progress)
		c->o->progress(c->o->progress_arg, 1, 0, "running the candidate");
	int rc = run_rows(c, gpu, stop, 0, err);
	if (!rc && c->p->s->ref.kind == SPEC_REF_CUDA) {
		if (c->o->progress)
			c->o->progress(c->o->progress_arg, 2, 0, "running the CUDA reference");
		rc = run_rows(c, gpu, stop, 1, err);
	}
	return rc;
}

static void progress_bridge(void *arg, const struct runner_progress *p)
{
	const struct check_opts *o = arg;
	if (o->progress)
		o->progress(o->progress_arg, p->progress, 0, p->message);
}

void check_device_read(const json_t *dev, struct check_device *d)
{
	memset(d, 0, sizeof *d);
	if (!json_is_object(dev))
		return;
	d->present = 1;
	d->index = (int)json_integer_value(json_object_get(dev, "index"));
	snprintf(d->name, sizeof d->name, "%s",
		 json_string_value(json_object_get(dev, "name"))
			 ? json_string_value(json_object_get(dev, "name"))
			 : "");
	d->cc_major = (int)json_integer_value(json_object_get(dev, "cc_major"));
	d->cc_minor = (int)json_integer_value(json_object_get(dev, "cc_minor"));
	d->l2_bytes = (long long)json_integer_value(json_object_get(dev, "l2_bytes"));
}

void check_result_fini(struct check_result *res)
{
	if (!res)
		return;
	compile_result_fini(&res->compile_failed.compile);
	for (size_t i = 0; res->sizes && i < res->sizes_len; i++)
		for (int k = 0; k < res->sizes[i].ntrials; k++)
			check_run_fini(&res->sizes[i].trials[k].run);
	free(res->sizes);
	free(res->kernel_stdout);
	memset(res, 0, sizeof *res);
	res->fail_size = -1;
}

/* The rows of a replay: one size, one trial, the seed given. */
static int plan_replay(const struct spec *s, const json_t *replay, struct row *rows, size_t *nrows,
		       struct kf_err *err)
{
	const json_t *sz = json_object_get(replay, "size");
	char *end = NULL;
	const char *hex = json_string_value(json_object_get(replay, "seed"));
	if (!json_is_object(sz) || !hex)
		return kf_err_set(err, KF_EINVAL,
				  "replay: needs {\"size\": {var: value}, \"seed\": \"hex\"} "
				  "as reported by a check");
	errno = 0;
	uint64_t seed = strtoull(hex, &end, 16);
	if (errno || !end || *end || !*hex)
		return kf_err_set(err, KF_EINVAL, "replay.seed: '%s' is not a hex seed", hex);
	for (size_t k = 0; k < s->vars_len; k++) {
		const json_t *v = json_object_get(sz, s->vars[k]);
		if (!json_is_integer(v))
			return kf_err_set(err, KF_EINVAL, "replay.size: missing '%s'", s->vars[k]);
		rows[0].vals[k] = json_integer_value(v);
	}
	rows[0].ntrials = 1;
	rows[0].seeds[0] = seed;
	*nrows = 1;
	return 0;
}

/* The rows of a check: every size of the spec, then an odd one (or why
 * not, in odd_note), each with trials fresh seeds. */
static void plan_sizes(const struct spec *s, const struct check_opts *o,
		       const struct spec_limits *lim, int trials, struct row *rows, size_t *nrows,
		       char *odd_note, size_t note_cap)
{
	for (size_t r = 0; r < s->sizes_len; r++) {
		memcpy(rows[r].vals, &s->sizes[r * s->vars_len], s->vars_len * sizeof(int64_t));
		rows[r].ntrials = trials;
	}
	size_t n = s->sizes_len;
	struct kf_err oe = {0};
	if (o->no_odd_size)
		snprintf(odd_note, note_cap, "not tested: odd_size was false");
	else if (spec_odd_size(s, lim, check_new_seed(), rows[n].vals, &oe) == 0) {
		rows[n].odd = 1;
		rows[n].ntrials = trials;
		n++;
	} else
		snprintf(odd_note, note_cap, "not tested: %s", oe.msg);
	for (size_t r = 0; r < n; r++)
		for (int t = 0; t < trials; t++)
			rows[r].seeds[t] = check_new_seed();
	*nrows = n;
}

/* Checks the options, allocates the rows and plans them, binding every
 * size. */
static int plan_rows(const struct spec *s, const struct check_opts *o, struct row **rows,
		     size_t *nrows, char *odd_note, size_t note_cap, struct kf_err *err)
{
	struct spec_limits lim;
	check_limits(&lim);
	if (s->ref.kind == SPEC_REF_NONE)
		return kf_err_set(err, KF_EINVAL,
				  "reference: required for a check ({\"op\": ...}, {\"source\": "
				  "..., \"launch\": [...]} or {\"torch\": ...})");
	int trials = o->trials > 0 ? o->trials : CHECK_DEFAULT_TRIALS;
	if (trials > CHECK_MAX_TRIALS)
		return kf_err_set(err, KF_EINVAL, "trials: at most %d", CHECK_MAX_TRIALS);
	*rows = calloc(s->sizes_len + 1, sizeof **rows);
	if (!*rows)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	int rc = 0;
	if (o->replay)
		rc = plan_replay(s, o->replay, *rows, nrows, err);
	else
		plan_sizes(s, o, &lim, trials, *rows, nrows, odd_note, note_cap);
	for (size_t r = 0; !rc && r < *nrows; r++) {
		char where[32];
		snprintf(where, sizeof where, o->replay ? "replay.size" : "sizes[%zu]", r);
		rc = spec_bind(s, (*rows)[r].vals, &lim, where, &(*rows)[r].b, err);
	}
	return rc;
}

/* Copies the modules into one job directory for every size (files are
 * prefixed by row) and runs the rows on a GPU from the runner. */
static int run_check_job(struct check_env *env, const struct check_opts *o, struct check_job *gc,
			 char *jobdir, size_t cap, int *gpu, struct kf_err *err)
{
	const struct spec *s = gc->p->s;
	int rc;
	if ((rc = check_jobdir_new(env, s, jobdir, cap, err)) ||
	    (rc = check_copy_file(gc->p->cand_cubin, jobdir, "cand.cubin", err)) ||
	    (s->ref.kind == SPEC_REF_CUDA &&
	     (rc = check_copy_file(gc->p->ref_cubin, jobdir, "ref.cubin", err))))
		return rc;
	for (size_t r = 0; r < gc->nrows; r++)
		snprintf(gc->rows[r].dir, sizeof gc->rows[r].dir, "%s", jobdir);
	char label[RUNNER_LABEL_BYTES];
	snprintf(label, sizeof label, "check %s", s->launch[0].kernel);
	struct runner_opts ro = {.timeout_ms = -1, .label = label};
	gc->queued_ms = check_now_ms();
	rc = runner_run(env->runner, RUNNER_GPU, gpu_job, gc, progress_bridge, (void *)o, o->cancel,
			&ro, err);
	*gpu = gc->gpu;
	return rc;
}

/* A trial the harness did not finish: it timed out or crashed (the row's
 * error), or it faulted or erred (the harness stops there: the fault
 * belongs to the last trial it started; later trials did not run). */
static void judge_unfinished(const struct row *r, const json_t *tr, struct check_run *run,
			     struct check_fired *fired)
{
	if (r->not_run) {
		check_fire(run, fired, "not_run", "%s", r->cand_err);
		return;
	}
	if (r->cand_rc) {
		check_fire(run, fired, r->cand_rc == KF_ETIMEOUT ? "timeout" : "crash", "%s",
			   r->cand_err);
		return;
	}
	const json_t *f = json_object_get(r->cand, "fault");
	const char *e = json_string_value(json_object_get(r->cand, "error"));
	if (f && tr)
		check_fire(run, fired, json_object_get(f, "kind") ? "kernel_not_found" : "fault",
			   "%s during %s: %s", json_string_value(json_object_get(f, "error")),
			   json_string_value(json_object_get(f, "during")),
			   json_string_value(json_object_get(f, "message")));
	else if (e && tr)
		check_fire(run, fired, "harness_error", "%s", e);
	else
		check_fire(run, fired, "not_run", "not run: an earlier trial failed");
}

/* The reference outputs of trial k of row ri into want, or why not in we.
 * Returns 1 when want holds them. */
static int trial_want(const struct spec *s, struct row *r, size_t ri, int k, int torch_rc,
		      const char *torch_msg, double **want, struct kf_err *we)
{
	int ahead = 0;
	for (size_t t = 0; t < s->tensors_len; t++)
		ahead |= r->ahead[k][t] != NULL;
	if (ahead) { /* computed while the harness ran: moved to want */
		for (size_t t = 0; t < s->tensors_len; t++) {
			want[t] = r->ahead[k][t];
			r->ahead[k][t] = NULL;
		}
		return 1;
	}
	int ref_bad = s->ref.kind == SPEC_REF_CUDA &&
		      (r->ref_rc || !r->ref || json_object_get(r->ref, "fault") ||
		       json_object_get(r->ref, "error"));
	if (ref_bad) {
		const char *re = json_string_value(json_object_get(r->ref, "error"));
		kf_err_set(we, KF_EFAULT, "%s",
			   r->ref_rc ? r->ref_err
			   : re	     ? re
				     : "the CUDA reference faulted");
		return 0;
	}
	if (s->ref.kind == SPEC_REF_TORCH && torch_rc) {
		kf_err_set(we, torch_rc, "%s", torch_msg);
		return 0;
	}
	char pre[32];
	snprintf(pre, sizeof pre, "r%zu.ref", ri);
	return check_reference_want(s, r->dir, pre, r->vals, &r->b, k, r->seeds[k], want, we) == 0;
}

/* Judges every trial of row ri into out; the first failure is recorded in
 * res. Returns 0, or KF_ENOTFOUND / KF_ECANCELED when the torch reference
 * could not run at all. */
static int judge_row(struct check_env *env, const struct spec *s, const struct check_opts *o,
		     struct row *r, size_t ri, struct check_result *res, struct kf_err *err)
{
	struct check_size *out = &res->sizes[ri];
	memcpy(out->vals, r->vals, sizeof out->vals);
	out->odd = r->odd;
	out->ntrials = r->ntrials;
	out->passed = 1;
	const json_t *ctrials = r->cand ? json_object_get(r->cand, "trials") : NULL;
	struct kf_err torch_err = {0};
	int torch_rc = 0;
	double t0 = check_now_ms();
	/* No candidate outputs (a hang, a crash, not run): nothing to compare. */
	if (s->ref.kind == SPEC_REF_TORCH && r->cand && !r->cand_rc)
		torch_rc = check_torch_reference(env, s, r->dir, r->vals, &r->b, r->seeds,
						 r->ntrials, o->cancel, &res->phases, &torch_err);
	res->phases.reference_ms += check_now_ms() - t0;
	if (torch_rc == KF_ENOTFOUND || torch_rc == KF_ECANCELED)
		return kf_err_set(err, torch_rc, "%s", torch_err.msg);
	for (int k = 0; k < r->ntrials; k++) {
		struct check_trial *tj = &out->trials[k];
		tj->trial = k;
		tj->seed = r->seeds[k];
		const json_t *tr = json_array_get(ctrials, (size_t)k);
		if (r->cand_rc || !tr ||
		    ((json_object_get(r->cand, "fault") || json_object_get(r->cand, "error")) &&
		     k + 1 >= (int)json_array_size(ctrials))) {
			judge_unfinished(r, tr, &tj->run, &res->fired);
			if (!r->cand_rc)
				tr = NULL;
		} else {
			double *want[SPEC_MAX_TENSORS] = {0};
			struct kf_err we = {0};
			t0 = check_now_ms();
			int have_want = trial_want(s, r, ri, k, torch_rc, torch_err.msg, want, &we);
			double t1 = check_now_ms();
			res->phases.reference_ms += t1 - t0;
			check_judge_run(s, r->dir, &r->b, tr, have_want ? want : NULL, &tj->run,
					&res->fired, &res->flags, &res->max_rel);
			res->phases.compare_ms += check_now_ms() - t1;
			if (!have_want) {
				check_fire(&tj->run, &res->fired, "reference_failed",
					   "the reference could not be computed: %s", we.msg);
				tj->run.passed = 0;
			}
			for (size_t t = 0; t < SPEC_MAX_TENSORS; t++)
				free(want[t]);
		}
		if (tj->run.nomem)
			return kf_err_set(err, KF_ENOMEM, "out of memory");
		const json_t *ms = tr ? json_object_get(tr, "kernel_ms") : NULL;
		if (ms) {
			tj->has_kernel_ms = 1;
			tj->kernel_ms = json_number_value(ms);
		}
		if (!tj->run.passed) {
			out->passed = 0;
			if (res->fail_size < 0) {
				res->fail_size = (int)ri;
				res->fail_trial = k;
			}
		}
	}
	return 0;
}

/* What the verdict reports besides the sizes: tolerances, the reference,
 * the compile, the device and the kernel's printf output. */
static void describe_check(const struct check_prep *p, struct check_job *gc,
			   struct check_result *res)
{
	const struct spec *s = p->s;
	res->vars_len = s->vars_len;
	for (size_t k = 0; k < s->vars_len; k++)
		snprintf(res->vars[k], sizeof res->vars[k], "%s", s->vars[k]);
	for (size_t t = 0; t < s->tensors_len; t++) {
		if (s->tensors[t].role == SPEC_ROLE_INPUT)
			continue;
		struct check_tolerance *tol = &res->tolerance[res->tolerance_len++];
		snprintf(tol->name, sizeof tol->name, "%s", s->tensors[t].name);
		check_tolerance_of(s, t, &tol->atol, &tol->rtol);
		tol->from_spec = s->tol_given;
	}
	res->reference = s->ref.kind;
	snprintf(res->compile.artifact_id, sizeof res->compile.artifact_id, "%s", p->cand_artifact);
	res->compile.cache_hit = p->cand_cache_hit;
	res->compile.compile_ms = p->compile_ms;
	snprintf(res->compile.arch, sizeof res->compile.arch, "%s", p->arch);
	res->kernel_stdout = gc->printf_out;
	gc->printf_out = NULL;
}

/* The watchdog of a check: the caller's, or the largest row's work (a
 * trial runs the launch list twice plus the extra launches between). */
static unsigned check_timeout(const struct check_opts *o, const struct row *rows, size_t n)
{
	if (o->timeout_ms)
		return o->timeout_ms;
	unsigned to = CHECK_MIN_TIMEOUT_MS;
	for (size_t i = 0; i < n; i++) {
		unsigned t = check_work_timeout_ms(&rows[i].b, 2 + CHECK_EXTRA_LAUNCHES);
		if (t > to)
			to = t;
	}
	return to;
}

int check_kernel(struct check_env *env, const json_t *spec, const struct check_opts *o,
		 struct check_result *res, int *gpu, struct kf_err *err)
{
	memset(res, 0, sizeof *res);
	res->fail_size = -1;
	*gpu = -1;
	struct check_prep p;
	struct row *rows = NULL;
	size_t nrows = 0;
	char jobdir[PATH_MAX] = "";
	struct check_job gc = {0};
	struct ahead ah = {0};
	double t0 = check_now_ms();
	int rc = check_prepare(env, spec, 0, o->cancel, &p, &res->compile_failed, err);
	res->phases.compile_ms = check_now_ms() - t0;
	if (rc) {
		if (rc == KF_ECOMPILE)
			res->answer = CHECK_ANSWER_COMPILE;
		goto out;
	}
	if ((rc = plan_rows(p.s, o, &rows, &nrows, res->odd_note, sizeof res->odd_note, err)))
		goto out;
	gc = (struct check_job){.env = env,
				.p = &p,
				.rows = rows,
				.nrows = nrows,
				.ref_rows = nrows,
				.timeout_ms = check_timeout(o, rows, nrows),
				.o = o,
				.gpu = -1,
				.phases = &res->phases};
	ahead_start(&ah, p.s, rows, nrows);
	if ((rc = run_check_job(env, o, &gc, jobdir, sizeof jobdir, gpu, err)))
		goto out;
	/* The part of the references the run did not hide; after a hang or a
	 * crash the judge computes the few it needs itself. */
	int cut = 0;
	for (size_t r = 0; r < nrows; r++)
		cut |= rows[r].cand_rc || rows[r].not_run || !rows[r].cand;
	t0 = check_now_ms();
	ahead_join(&ah, cut);
	res->phases.reference_ms += check_now_ms() - t0;
	res->sizes = calloc(nrows, sizeof *res->sizes);
	if (!res->sizes) {
		rc = kf_err_set(err, KF_ENOMEM, "out of memory");
		goto out;
	}
	res->sizes_len = nrows;
	res->passed = 1;
	for (size_t ri = 0; ri < nrows; ri++) {
		if ((rc = judge_row(env, p.s, o, &rows[ri], ri, res, err)))
			goto out;
		if (!res->sizes[ri].passed)
			res->passed = 0;
	}
	describe_check(&p, &gc, res);
	check_device_read(gc.device, &res->device);
	res->answer = CHECK_ANSWER_VERDICT;
	if (!res->passed)
		rc = KF_EFAULT;
out:
	ahead_join(&ah, 1);
	for (size_t r = 0; rows && r < nrows; r++) {
		json_decref(rows[r].cand);
		json_decref(rows[r].ref);
		free(rows[r].printf_out);
		for (int k = 0; k < CHECK_MAX_TRIALS; k++)
			for (size_t t = 0; t < SPEC_MAX_TENSORS; t++)
				free(rows[r].ahead[k][t]);
	}
	check_jobdir_remove(jobdir);
	free(gc.printf_out);
	json_decref(gc.device);
	free(rows);
	check_prep_fini(&p);
	return rc;
}
