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
#include <unistd.h>

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
		       struct check_prep *p, json_t **out, struct kf_err *err)
{
	struct compile_req req = {
		.source = source, .source_len = strlen(source), .arch = arch, .cancel = cancel};
	struct compile_result res;
	struct kf_err cerr = {0};
	int rc = compile_kernel(env->cc, &req, &res, &cerr);
	if (rc == KF_ECOMPILE || (rc == 0 && !res.ok)) {
		const char *sum = json_string_value(json_object_get(res.json, "summary"));
		char msg[400];
		snprintf(msg, sizeof msg, "%s did not compile: %s", what, sum ? sum : cerr.msg);
		*out = json_pack("{s:s, s:b, s:s, s:O}", "summary", msg, "passed", 0,
				 "failed_stage", "compile", "compile",
				 res.json ? res.json : json_null());
		kf_err_set(err, KF_ECOMPILE, "%s", msg);
		compile_result_fini(&res);
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
		  const volatile int *cancel, struct check_prep *p, json_t **out,
		  struct kf_err *err)
{
	memset(p, 0, sizeof *p);
	*out = NULL;
	json_t *x = NULL;
	int rc = spec_expand_op(spec, op_find, &x, err);
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
			      sizeof p->cand_cubin, p, out, err)))
		return rc;
	if (s->ref.kind == SPEC_REF_CUDA &&
	    (rc = compile_one(env, s->ref.source, s->arch, cancel, "the reference source",
			      p->ref_cubin, sizeof p->ref_cubin, NULL, out, err)))
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
						   sizeof p->base_module, NULL, out, err)))
				return rc;
		}
	}
	return 0;
}

/* --- the check ----------------------------------------------------------- */

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
};

/* One check on one GPU: what the runner thread needs to run every row of
 * sizes and trials and leave their reports in rows. */
struct check_job {
	struct check_env *env;
	struct check_prep *p;
	struct row *rows;
	size_t nrows;
	unsigned timeout_ms;
	const struct check_opts *o;
	int gpu;
	char *printf_out; /* first non-empty kernel stdout */
	json_t *device;	  /* the harness's device object */
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

/* Runs program over every row in as few harness processes as possible: one
 * process takes all remaining rows; a row that faults, errs or hangs ends
 * its process and the next process starts at the row after it. Results go
 * to rows[i].cand (or .ref for the reference). */
static int run_rows(struct check_job *c, int gpu, const volatile int *stop, int is_ref,
		    struct kf_err *err)
{
	const struct spec *s = c->p->s;
	size_t next = 0;
	while (next < c->nrows) {
		if (stop && *stop)
			return kf_err_set(err, KF_ECANCELED, "cancelled");
		json_t *rows = json_array();
		for (size_t i = next; i < c->nrows; i++)
			json_array_append_new(rows,
					      job_row(s, &c->rows[i], i, is_ref ? "ref" : "cand"));
		size_t todo = c->nrows - next;
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
		int rc = check_harness_exec(c->env, c->rows[0].dir, job, wall, stop, &rep,
					    is_ref ? NULL : &out, &e);
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
		size_t k = json_array_size(lines);
		int stopped = 0; /* the last line ended its process early */
		for (size_t i = 0; i < k && next + i < c->nrows; i++) {
			json_t *l = json_array_get(lines, i);
			struct row *r = &c->rows[next + i];
			if (json_is_true(json_object_get(l, "timeout"))) {
				int *prc = is_ref ? &r->ref_rc : &r->cand_rc;
				char *pe = is_ref ? r->ref_err : r->cand_err;
				*prc = KF_ETIMEOUT;
				snprintf(pe, sizeof r->cand_err,
					 "the kernel did not finish within %u ms: the harness was "
					 "killed",
					 c->timeout_ms);
				stopped = 1;
			} else {
				json_t **slot = is_ref ? &r->ref : &r->cand;
				json_decref(*slot);
				*slot = json_incref(l);
				stopped =
					json_object_get(l, "fault") || json_object_get(l, "error");
			}
		}
		if (k >= todo && (rc == 0 || stopped)) {
			json_decref(rep);
			break;
		}
		if (stopped) {
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
			next += k + 1;
		}
		json_decref(rep);
	}
	return 0;
}

static int gpu_job(void *arg, int gpu, const volatile int *stop, struct kf_err *err)
{
	struct check_job *c = arg;
	c->gpu = gpu;
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

static void sizes_text(const struct spec *s, const int64_t *vals, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = 0;
	for (size_t k = 0; k < s->vars_len && n < cap; k++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%s=%" PRId64, k ? ", " : "", s->vars[k],
				      vals[k]);
}

static json_t *sizes_obj(const struct spec *s, const int64_t *vals)
{
	json_t *o = json_object();
	for (size_t k = 0; k < s->vars_len; k++)
		json_object_set_new(o, s->vars[k], json_integer(vals[k]));
	return o;
}

int check_kernel(struct check_env *env, const json_t *spec, const struct check_opts *o,
		 json_t **out, int *gpu, struct kf_err *err)
{
	*out = NULL;
	*gpu = -1;
	struct check_prep p;
	json_t *diag = NULL;
	int rc = check_prepare(env, spec, 0, o->cancel, &p, &diag, err);
	struct row *rows = NULL;
	size_t nrows = 0;
	json_t *result = NULL;
	char jobdir[PATH_MAX] = "";
	char odd_note[300] = "";
	struct check_job gc = {0};
	if (rc) {
		*out = diag;
		goto out;
	}
	struct spec *s = p.s;
	struct spec_limits lim;
	check_limits(&lim);
	if (s->ref.kind == SPEC_REF_NONE) {
		rc = kf_err_set(err, KF_EINVAL,
				"reference: required for a check ({\"op\": ...}, {\"source\": "
				"..., \"launch\": [...]} or {\"torch\": ...})");
		goto out;
	}
	int trials = o->trials > 0 ? o->trials : CHECK_DEFAULT_TRIALS;
	if (trials > CHECK_MAX_TRIALS) {
		rc = kf_err_set(err, KF_EINVAL, "trials: at most %d", CHECK_MAX_TRIALS);
		goto out;
	}
	rows = calloc(s->sizes_len + 1, sizeof *rows);
	if (!rows) {
		rc = kf_err_set(err, KF_ENOMEM, "out of memory");
		goto out;
	}
	if (o->replay) {
		const json_t *sz = json_object_get(o->replay, "size");
		uint64_t seed;
		char *end = NULL;
		const char *hex = json_string_value(json_object_get(o->replay, "seed"));
		if (!json_is_object(sz) || !hex) {
			rc = kf_err_set(err, KF_EINVAL,
					"replay: needs {\"size\": {var: value}, \"seed\": \"hex\"} "
					"as reported by a check");
			goto out;
		}
		errno = 0;
		seed = strtoull(hex, &end, 16);
		if (errno || !end || *end || !*hex) {
			rc = kf_err_set(err, KF_EINVAL, "replay.seed: '%s' is not a hex seed", hex);
			goto out;
		}
		for (size_t k = 0; k < s->vars_len; k++) {
			const json_t *v = json_object_get(sz, s->vars[k]);
			if (!json_is_integer(v)) {
				rc = kf_err_set(err, KF_EINVAL, "replay.size: missing '%s'",
						s->vars[k]);
				goto out;
			}
			rows[0].vals[k] = json_integer_value(v);
		}
		rows[0].ntrials = 1;
		rows[0].seeds[0] = seed;
		nrows = 1;
	} else {
		for (size_t r = 0; r < s->sizes_len; r++) {
			memcpy(rows[r].vals, &s->sizes[r * s->vars_len],
			       s->vars_len * sizeof(int64_t));
			rows[r].ntrials = trials;
		}
		nrows = s->sizes_len;
		struct kf_err oe = {0};
		if (o->no_odd_size)
			snprintf(odd_note, sizeof odd_note, "not tested: odd_size was false");
		else if (spec_odd_size(s, &lim, check_new_seed(), rows[nrows].vals, &oe) == 0) {
			rows[nrows].odd = 1;
			rows[nrows].ntrials = trials;
			nrows++;
		} else
			snprintf(odd_note, sizeof odd_note, "not tested: %s", oe.msg);
		for (size_t r = 0; r < nrows; r++)
			for (int t = 0; t < trials; t++)
				rows[r].seeds[t] = check_new_seed();
	}
	for (size_t r = 0; r < nrows; r++) {
		char where[32];
		snprintf(where, sizeof where, o->replay ? "replay.size" : "sizes[%zu]", r);
		if ((rc = spec_bind(s, rows[r].vals, &lim, where, &rows[r].b, err)))
			goto out;
	}
	/* One job directory for every size (files are prefixed by row). */
	if ((rc = check_jobdir_new(env, s, jobdir, sizeof jobdir, err)) ||
	    (rc = check_copy_file(p.cand_cubin, jobdir, "cand.cubin", err)) ||
	    (s->ref.kind == SPEC_REF_CUDA &&
	     (rc = check_copy_file(p.ref_cubin, jobdir, "ref.cubin", err))))
		goto out;
	for (size_t r = 0; r < nrows; r++)
		snprintf(rows[r].dir, sizeof rows[r].dir, "%s", jobdir);
	gc = (struct check_job){.env = env,
				.p = &p,
				.rows = rows,
				.nrows = nrows,
				.timeout_ms =
					o->timeout_ms ? o->timeout_ms : CHECK_DEFAULT_TIMEOUT_MS,
				.o = o,
				.gpu = -1};
	char label[RUNNER_LABEL_BYTES];
	snprintf(label, sizeof label, "check %s", s->launch[0].kernel);
	struct runner_opts ro = {.timeout_ms = -1, .label = label};
	rc = runner_run(env->runner, RUNNER_GPU, gpu_job, &gc, progress_bridge, (void *)o,
			o->cancel, &ro, err);
	*gpu = gc.gpu;
	if (rc)
		goto out;

	/* Judge every size and trial. */
	result = json_object();
	json_object_set_new(result, "summary", json_string(""));
	json_t *sizes_j = json_array(), *fired = json_object(), *flags = json_object();
	int all_pass = 1, listed_pass = 1, odd_fail = 0;
	double max_rel = 0;
	char first_fail[600] = "";
	json_t *replay = NULL;
	for (size_t ri = 0; ri < nrows; ri++) {
		struct row *r = &rows[ri];
		json_t *rj = json_object(), *trs = json_array();
		json_object_set_new(rj, "sizes", sizes_obj(s, r->vals));
		json_object_set_new(rj, "odd_size", json_boolean(r->odd));
		json_object_set_new(rj, "trials", trs);
		json_array_append_new(sizes_j, rj);
		int row_pass = 1;
		const json_t *ctrials = r->cand ? json_object_get(r->cand, "trials") : NULL;
		/* A CUDA reference that failed makes the comparison impossible. */
		int ref_bad = s->ref.kind == SPEC_REF_CUDA &&
			      (r->ref_rc || !r->ref || json_object_get(r->ref, "fault") ||
			       json_object_get(r->ref, "error"));
		struct kf_err torch_err = {0};
		int torch_rc = 0;
		if (s->ref.kind == SPEC_REF_TORCH)
			torch_rc = check_torch_reference(env, s, r->dir, r->vals, &r->b, r->seeds,
							 r->ntrials, o->cancel, &torch_err);
		if (torch_rc == KF_ENOTFOUND || torch_rc == KF_ECANCELED) {
			rc = kf_err_set(err, torch_rc, "%s", torch_err.msg);
			goto out;
		}
		for (int k = 0; k < r->ntrials; k++) {
			char hex[20];
			snprintf(hex, sizeof hex, "%016" PRIx64, r->seeds[k]);
			json_t *tj = json_pack("{s:i, s:s}", "trial", k, "seed", hex);
			json_array_append_new(trs, tj);
			const json_t *tr = json_array_get(ctrials, (size_t)k);
			int pass = 1;
			json_t *sg = NULL;
			if (r->cand_rc == KF_ETIMEOUT || r->cand_rc) {
				sg = json_array();
				json_object_set_new(tj, "safeguards", sg);
				check_fire(sg, fired,
					   r->cand_rc == KF_ETIMEOUT ? "timeout" : "crash", "%s",
					   r->cand_err);
				pass = 0;
			} else if (!tr || ((json_object_get(r->cand, "fault") ||
					    json_object_get(r->cand, "error")) &&
					   k + 1 >= (int)json_array_size(ctrials))) {
				/* The harness stops at a fault or error: it belongs to the
				 * last trial it started; later trials did not run. */
				sg = json_array();
				json_object_set_new(tj, "safeguards", sg);
				const json_t *f = json_object_get(r->cand, "fault");
				const char *e =
					json_string_value(json_object_get(r->cand, "error"));
				int at_fault = tr != NULL;
				tr = NULL;
				if (f && at_fault)
					check_fire(
						sg, fired,
						json_object_get(f, "kind") ? "kernel_not_found"
									   : "fault",
						"%s during %s: %s",
						json_string_value(json_object_get(f, "error")),
						json_string_value(json_object_get(f, "during")),
						json_string_value(json_object_get(f, "message")));
				else if (e && at_fault)
					check_fire(sg, fired, "harness_error", "%s", e);
				else
					check_fire(sg, fired, "not_run",
						   "not run: an earlier trial failed");
				pass = 0;
			} else {
				double *want[SPEC_MAX_TENSORS] = {0};
				struct kf_err we = {0};
				int have_want = 0;
				if (s->ref.kind == SPEC_REF_CUDA && ref_bad)
					kf_err_set(&we, KF_EFAULT, "%s",
						   r->ref_rc ? r->ref_err
						   : json_string_value(
							     json_object_get(r->ref, "error"))
							   ? json_string_value(json_object_get(
								     r->ref, "error"))
							   : "the CUDA reference faulted");
				else if (s->ref.kind == SPEC_REF_TORCH && torch_rc)
					kf_err_set(&we, torch_rc, "%s", torch_err.msg);
				else {
					char pre[32];
					snprintf(pre, sizeof pre, "r%zu.ref", ri);
					have_want = check_reference_want(s, r->dir, pre, r->vals,
									 &r->b, k, r->seeds[k],
									 want, &we) == 0;
				}
				pass = check_judge_run(s, r->dir, &r->b, tr,
						       have_want ? want : NULL, tj, fired, flags,
						       &max_rel);
				if (!have_want) {
					json_t *l = json_object_get(tj, "safeguards");
					check_fire(l, fired, "reference_failed",
						   "the reference could not be computed: %s",
						   we.msg);
					json_object_set_new(tj, "passed", json_false());
					pass = 0;
				}
				for (size_t t = 0; t < SPEC_MAX_TENSORS; t++)
					free(want[t]);
				sg = json_object_get(tj, "safeguards");
			}
			if (!json_object_get(tj, "passed"))
				json_object_set_new(tj, "passed", json_boolean(pass));
			if (tr && json_object_get(tr, "kernel_ms"))
				json_object_set(tj, "kernel_ms", json_object_get(tr, "kernel_ms"));
			if (!pass) {
				row_pass = 0;
				if (!first_fail[0]) {
					char st[160];
					sizes_text(s, r->vals, st, sizeof st);
					const char *m = "";
					size_t q;
					json_t *sv;
					json_array_foreach(sg, q, sv) {
						const char *nm = json_string_value(
							json_object_get(sv, "name"));
						if (strcmp(nm, "precision_hint") != 0) {
							m = json_string_value(
								json_object_get(sv, "message"));
							break;
						}
					}
					snprintf(first_fail, sizeof first_fail, "%s%s trial %d: %s",
						 r->odd ? "odd size " : "", st, k, m);
					replay = json_pack("{s:o, s:s}", "size",
							   sizes_obj(s, r->vals), "seed", hex);
				}
			}
		}
		json_object_set_new(rj, "passed", json_boolean(row_pass));
		if (!row_pass) {
			all_pass = 0;
			if (r->odd)
				odd_fail = 1;
			else
				listed_pass = 0;
		}
	}
	json_object_set_new(result, "passed", json_boolean(all_pass));
	json_object_set_new(result, "sizes", sizes_j);
	if (odd_note[0] && !o->replay)
		json_object_set_new(result, "odd_size", json_string(odd_note));
	json_t *fl = json_array();
	const char *key;
	json_t *val;
	json_object_foreach(fired, key, val)
		json_array_append_new(fl, json_string(key));
	json_object_set_new(result, "safeguards_fired", fl);
	json_decref(fired);
	json_object_set_new(result, "flags", flags);
	json_t *tol = json_object();
	for (size_t t = 0; t < s->tensors_len; t++) {
		if (s->tensors[t].role == SPEC_ROLE_INPUT)
			continue;
		double a, rr;
		check_tolerance_of(s, t, &a, &rr);
		json_object_set_new(tol, s->tensors[t].name,
				    json_pack("{s:f, s:f, s:s}", "atol", a, "rtol", rr, "source",
					      s->tol_given ? "spec" : "default for the dtype"));
	}
	json_object_set_new(result, "tolerance", tol);
	json_object_set_new(result, "reference",
			    json_string(s->ref.kind == SPEC_REF_OP ? "built-in op (float64 CPU)"
					: s->ref.kind == SPEC_REF_CUDA
						? "CUDA source (separate process)"
						: "torch expression"));
	json_object_set_new(result, "compile",
			    json_pack("{s:s, s:b, s:i, s:s}", "artifact_id", p.cand_artifact,
				      "cache_hit", p.cand_cache_hit, "compile_ms", p.compile_ms,
				      "arch", p.arch));
	if (gc.device)
		json_object_set(result, "device", gc.device);
	if (gc.printf_out)
		json_object_set_new(result, "kernel_stdout", json_string(gc.printf_out));
	char summary[900];
	int ntr = 0;
	for (size_t ri = 0; ri < nrows; ri++)
		ntr += rows[ri].ntrials;
	if (all_pass) {
		char odd[160] = "";
		for (size_t ri = 0; ri < nrows; ri++)
			if (rows[ri].odd) {
				char st[140];
				sizes_text(s, rows[ri].vals, st, sizeof st);
				snprintf(odd, sizeof odd, " incl. odd size %s", st);
			}
		snprintf(summary, sizeof summary,
			 "passed: %zu sizes%s, %d runs in all; max rel err %.2e%s%s", nrows, odd,
			 ntr, max_rel,
			 json_object_get(flags, "weak_reference") ? "; WARNING: " : "",
			 json_object_get(flags, "weak_reference")
				 ? json_string_value(json_object_get(flags, "weak_reference"))
				 : "");
	} else if (listed_pass && odd_fail) {
		snprintf(summary, sizeof summary,
			 "FAILED only at the size kforge chose (%s): the kernel handles only the "
			 "sizes in the spec",
			 first_fail);
	} else {
		snprintf(summary, sizeof summary, "FAILED at %s", first_fail);
	}
	json_object_set_new(result, "summary", json_string(summary));
	if (replay)
		json_object_set_new(result, "replay", replay);
	if (!all_pass)
		rc = kf_err_set(err, KF_EFAULT, "%s", summary);
	*out = result;
	result = NULL;
out:
	json_decref(result);
	for (size_t r = 0; rows && r < nrows + 0; r++) {
		json_decref(rows[r].cand);
		json_decref(rows[r].ref);
		free(rows[r].printf_out);
	}
	check_jobdir_remove(jobdir);
	free(gc.printf_out);
	json_decref(gc.device);
	free(rows);
	check_prep_fini(&p);
	return rc;
}
