/* torchop_verify: runs verify.py (embedded) in the jail on a GPU from the
 * runner, against a built op. Inputs are regenerated from a fresh seed with
 * spec_fill, as the check does, at the spec's first size and an odd size
 * kforge picks; the op's outputs come back as files and are compared here,
 * outside the op's process, with the spec's reference (check_ref's
 * float64 CPU op or sandboxed torch expression) and tolerance. */
#include "sandbox/torchop/torchop_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/embed.h"
#include "sandbox/compile/compile.h"
#include "sandbox/pool/runner.h"

EMBED_FILE(kf_torchop_verify, "sandbox/torchop/verify.py");

const char *torchop_verify_py(size_t *len)
{
	*len = (size_t)(kf_torchop_verify_end - kf_torchop_verify_start);
	return kf_torchop_verify_start;
}

#define VERIFY_ROWS	  2	      /* the spec's first size and an odd one */
#define VERIFY_WALL_MS	  180000u     /* default limit of the job */
#define VERIFY_REPORT_MAX (64u << 10) /* bytes of the script's answer */

struct vrow {
	int64_t vals[SPEC_MAX_VARS];
	struct spec_bound b;
	uint64_t seed;
	char dir[PATH_MAX]; /* <job>/r<k> */
};

struct vjob {
	struct check_env *env;
	const struct spec *s;
	struct vrow *rows;
	size_t nrows;
	const char *ref_cubin; /* CUDA reference: its module, else NULL */
	unsigned ref_ms;       /* per reference harness run */
	char ref_err[300];     /* why a reference run failed, or "" */
	const struct torchop_built *built;
	const struct torchop_torch *t;
	const char *dir;
	unsigned wall_ms;
	int gpu;
	json_t *report; /* the script's answer */
	char tail[600]; /* the end of its output when it gave none */
};

static json_t *tensor_entry(const struct spec *s, const struct spec_bound *b, size_t t,
			    const char *file)
{
	json_t *shape = json_array();
	for (size_t d = 0; d < s->tensors[t].rank; d++)
		json_array_append_new(shape, json_integer(b->dims[t][d]));
	return json_pack("{s:s, s:s, s:o, s:s}", "name", s->tensors[t].name, "dtype",
			 dtype_name(s->tensors[t].dtype), "shape", shape, "file", file);
}

/* Writes row k's inputs (from its seed) and lists them in the job. */
static int write_row(const struct spec *s, struct vrow *r, size_t k, json_t *rows,
		     struct kf_err *err)
{
	json_t *ins = json_array(), *outs = json_array(), *sizes = json_object();
	json_array_append_new(
		rows, json_pack("{s:o, s:o, s:o}", "sizes", sizes, "inputs", ins, "outputs", outs));
	for (size_t v = 0; v < s->vars_len; v++)
		json_object_set_new(sizes, s->vars[v], json_integer(r->vals[v]));
	for (size_t t = 0; t < s->tensors_len; t++) {
		const struct spec_tensor *T = &s->tensors[t];
		char file[128];
		if (T->role != SPEC_ROLE_INPUT) {
			snprintf(file, sizeof file, "r%zu/out.%s.bin", k, T->name);
			json_array_append_new(outs, tensor_entry(s, &r->b, t, file));
		}
		if (T->role == SPEC_ROLE_OUTPUT)
			continue;
		void *raw = malloc(r->b.bytes[t] ? r->b.bytes[t] : 1);
		if (!raw)
			return kf_err_set(err, KF_ENOMEM, "out of memory for input %s", T->name);
		spec_fill(T, t, r->seed, spec_init_max(s, t, r->vals), raw, r->b.elems[t]);
		snprintf(file, sizeof file, "in.%s.bin", T->name);
		int rc = torchop_write_file(r->dir, file, raw, r->b.bytes[t], err);
		free(raw);
		if (rc)
			return rc;
		snprintf(file, sizeof file, "r%zu/in.%s.bin", k, T->name);
		json_array_append_new(ins, tensor_entry(s, &r->b, t, file));
	}
	return 0;
}

/* The CUDA reference's outputs for every row, from kforge-harness in its
 * own process, as check_kernel computes them (ref.t0.<name>.bin). */
static void cuda_reference(struct vjob *v, int gpu, const volatile int *stop)
{
	for (size_t k = 0; k < v->nrows && !v->ref_err[0]; k++) {
		struct vrow *r = &v->rows[k];
		struct kf_err e = {0};
		char p[PATH_MAX + 16], hex[20];
		json_t *sizes = json_array(), *rep = NULL;
		for (size_t q = 0; q < v->s->vars_len; q++)
			json_array_append_new(sizes, json_integer(r->vals[q]));
		snprintf(hex, sizeof hex, "%016" PRIx64, r->seed);
		snprintf(p, sizeof p, "%s/spec.json", r->dir);
		json_t *job = json_pack(
			"{s:s, s:i, s:s, s:s, s:i, s:i, s:i, s:[{s:o, s:[s], s:s}]}", "mode",
			"check", "device", gpu, "program", "reference", "module", "ref.cubin",
			"runs", 1, "extra_launches", 0, "row_timeout_ms", (int)v->ref_ms, "rows",
			"sizes", sizes, "seeds", hex, "out_prefix", "ref");
		int rc = json_dump_file(v->s->json, p, JSON_COMPACT)
				 ? kf_err_set(&e, KF_EIO, "cannot write %s", p)
				 : check_copy_file(v->ref_cubin, r->dir, "ref.cubin", &e);
		if (!rc)
			rc = check_harness_exec(v->env, r->dir, job, v->ref_ms + 15000u, stop, &rep,
						NULL, &e);
		const json_t *row = json_array_get(json_object_get(rep, "rows"), 0);
		if (!rc && (!row || json_object_get(row, "fault") || json_object_get(row, "error")))
			snprintf(v->ref_err, sizeof v->ref_err, "the CUDA reference failed: %s",
				 row && json_string_value(json_object_get(row, "error"))
					 ? json_string_value(json_object_get(row, "error"))
					 : "it faulted");
		else if (rc)
			snprintf(v->ref_err, sizeof v->ref_err,
				 "the CUDA reference did not run: %s", e.msg);
		json_decref(job);
		json_decref(rep);
	}
}

static int vjob_run(void *arg, int gpu, const volatile int *stop, struct kf_err *err)
{
	struct vjob *v = arg;
	v->gpu = gpu;
	struct jail *j = compile_jail(v->env->cc);
	struct jail_bind binds[16];
	size_t nb = torchop_torch_binds(v->t, binds, 15);
	binds[nb++] = (struct jail_bind){.src = v->built->dir, .dst = "/op"};
	char pp[sizeof v->t->pythonpath + 16], dev[32];
	snprintf(pp, sizeof pp, "PYTHONPATH=%s", v->t->pythonpath);
	snprintf(dev, sizeof dev, "KFORGE_GPU=%d", gpu);
	const char *envp[] = {pp,
			      dev,
			      "OMP_NUM_THREADS=4",
			      "PYTHONDONTWRITEBYTECODE=1",
			      "TORCHINDUCTOR_CACHE_DIR=/tmp/inductor",
			      "TRITON_CACHE_DIR=/tmp/triton",
			      NULL};
	const char *argv[] = {v->t->python, "verify.py", "job.json", NULL};
	struct jail_job jj = {.argv = argv,
			      .job_dir = v->dir,
			      .env = envp,
			      .ro_binds = binds,
			      .ro_binds_len = nb,
			      .want_gpu = 1,
			      .wall_ms = v->wall_ms,
			      .cancel = stop,
			      .stdout_cap_bytes = VERIFY_REPORT_MAX,
			      .stderr_cap_bytes = VERIFY_REPORT_MAX};
	struct jail_result res;
	int rc = jail_run(j, &jj, &res, err);
	const char *last = res.out ? res.out : "";
	for (const char *p = last; *p; p++)
		if (p[0] == '\n' && p[1])
			last = p + 1;
	v->report = rc ? NULL : json_loads(last, 0, NULL);
	if (!rc && !v->report) {
		const char *o = res.errout_len ? res.errout : res.out ? res.out : "";
		size_t l = strlen(o);
		snprintf(v->tail, sizeof v->tail, "%s", l > 500 ? o + l - 500 : o);
		rc = kf_err_set(err, KF_EFAULT,
				"the verification script ended without an answer (%s %d): %s",
				res.exited ? "exit status" : "signal",
				res.exited ? res.exit_code : res.term_signal, v->tail);
	}
	jail_result_fini(&res);
	if (!rc && v->ref_cubin)
		cuda_reference(v, gpu, stop);
	return rc;
}

/* Compares row r's outputs with the reference; appends what it found to
 * msg. Returns 1 when every output is within the tolerance. */
static int compare_row(struct check_env *env, const struct spec *s, struct vrow *r, char *msg,
		       size_t cap, const volatile int *cancel)
{
	double *want[SPEC_MAX_TENSORS] = {0};
	struct kf_err e = {0};
	size_t n = strlen(msg);
	int rc = 0, pass = 1;
	if (s->ref.kind == SPEC_REF_NONE) {
		snprintf(msg + n, cap - n, "%sthe spec has no reference to compare with",
			 n ? "; " : "");
		return 0;
	}
	if (s->ref.kind == SPEC_REF_TORCH)
		rc = check_torch_reference(env, s, r->dir, r->vals, &r->b, &r->seed, 1, cancel,
					   NULL, &e);
	if (!rc)
		rc = check_reference_want(s, r->dir, "ref", r->vals, &r->b, 0, r->seed, want, &e);
	if (rc) {
		snprintf(msg + n, cap - n, "%sthe reference could not be computed: %s",
			 n ? "; " : "", e.msg);
		return 0;
	}
	for (size_t t = 0; t < s->tensors_len; t++) {
		if (s->tensors[t].role == SPEC_ROLE_INPUT || !want[t])
			continue;
		char path[PATH_MAX + 64];
		double *got = NULL, atol, rtol;
		snprintf(path, sizeof path, "%s/out.%s.bin", r->dir, s->tensors[t].name);
		n = strlen(msg);
		if (check_load_output(s, &r->b, t, path, &got, &e)) {
			snprintf(msg + n, cap - n, "%s%s", n ? "; " : "", e.msg);
			pass = 0;
			continue;
		}
		if (s->tol_given) {
			atol = s->atol;
			rtol = s->rtol;
		} else
			spec_default_tolerance(s->tensors[t].dtype, &atol, &rtol);
		struct check_cmp c;
		check_compare(got, want[t], r->b.elems[t], atol, rtol, &c);
		free(got);
		int ok = c.mismatches == 0 && c.nonfinite == 0;
		pass &= ok;
		char at[96] = "";
		for (size_t k = 0, m = 0; k < s->vars_len && m < sizeof at; k++)
			m += (size_t)snprintf(at + m, sizeof at - m, "%s%s=%" PRId64, k ? "," : "",
					      s->vars[k], r->vals[k]);
		snprintf(msg + n, cap - n,
			 "%s%s at %s: %s, max abs err %.3g, rel L2 %.3g (atol %g, rtol %g)%s",
			 n ? "; " : "", s->tensors[t].name, at, ok ? "matches" : "MISMATCH",
			 c.max_abs, c.rel_l2, atol, rtol,
			 ok	       ? ""
			 : c.nonfinite ? ", NaN/Inf where the reference is finite"
				       : ", elements outside the tolerance");
	}
	for (size_t t = 0; t < SPEC_MAX_TENSORS; t++)
		free(want[t]);
	return pass;
}

static void progress_bridge(void *arg, const struct runner_progress *p)
{
	const struct torchop_opts *o = arg;
	if (o->progress)
		o->progress(o->progress_arg, p->progress, 0, p->message);
}

/* Sets up the rows: the spec's first size and the odd size, fresh seeds. */
static int make_rows(const struct spec *s, const char *dir, struct vrow *rows, size_t *nrows,
		     json_t *jrows, struct kf_err *err)
{
	struct spec_limits lim;
	check_limits(&lim);
	memcpy(rows[0].vals, s->sizes, s->vars_len * sizeof(int64_t));
	*nrows = 1;
	struct kf_err oe = {0};
	if (spec_odd_size(s, &lim, check_new_seed(), rows[1].vals, &oe) == 0)
		*nrows = 2;
	for (size_t k = 0; k < *nrows; k++) {
		struct vrow *r = &rows[k];
		char where[32];
		snprintf(where, sizeof where, k ? "the odd size" : "sizes[0]");
		int rc = spec_bind(s, r->vals, &lim, where, &r->b, err);
		if (rc)
			return rc;
		r->seed = check_new_seed();
		snprintf(r->dir, sizeof r->dir, "%s/r%zu", dir, k);
		if (mkdir(r->dir, 0700))
			return kf_err_set(err, KF_EIO, "cannot create %s: %s", r->dir,
					  strerror(errno));
		if ((rc = write_row(s, r, k, jrows, err)))
			return rc;
	}
	return 0;
}

int torchop_verify(struct check_env *env, const struct spec *s, const struct torchop_gen *g,
		   const struct torchop_built *b, const struct torchop_torch *t,
		   const char *ref_cubin, const struct torchop_opts *o, json_t **report, int *gpu,
		   struct kf_err *err)
{
	*report = NULL;
	*gpu = -1;
	char dir[PATH_MAX] = "";
	struct vrow rows[VERIFY_ROWS];
	size_t nrows = 0, len;
	const char *py = torchop_verify_py(&len);
	json_t *jrows = json_array();
	memset(rows, 0, sizeof rows);
	int rc = check_jobdir_new(env, s, dir, sizeof dir, err);
	if (!rc)
		rc = torchop_write_file(dir, "verify.py", py, len, err);
	if (!rc)
		rc = make_rows(s, dir, rows, &nrows, jrows, err);
	json_t *job = json_pack("{s:s, s:s, s:O, s:O}", "package_dir", "/op", "package", b->pkg,
				"call", g->call, "rows", jrows);
	struct vjob v = {.env = env,
			 .s = s,
			 .rows = rows,
			 .nrows = nrows,
			 .ref_cubin = ref_cubin,
			 .ref_ms = 60000,
			 .built = b,
			 .t = t,
			 .dir = dir,
			 .wall_ms = o->timeout_ms ? o->timeout_ms : VERIFY_WALL_MS,
			 .gpu = -1};
	if (rc)
		goto out;
	char label[RUNNER_LABEL_BYTES];
	snprintf(label, sizeof label, "torch op %s", g->name);
	struct runner_opts ro = {.timeout_ms = -1, .label = label};
	/* The script takes its device from KFORGE_GPU, set by the job. */
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/job.json", dir);
	if (json_dump_file(job, p, JSON_COMPACT)) {
		rc = kf_err_set(err, KF_EIO, "cannot write %s", p);
		goto out;
	}
	rc = runner_run(env->runner, RUNNER_GPU, vjob_run, &v, progress_bridge, (void *)o,
			o->cancel, &ro, err);
	*gpu = v.gpu;
	if (rc)
		goto out;
	json_t *checks = json_object_get(v.report, "checks");
	const json_t *ran = json_object_get(checks, "run");
	char msg[2048] = "";
	int pass = 1;
	if (!json_is_true(json_object_get(ran, "passed"))) {
		snprintf(msg, sizeof msg, "not compared: the op did not run");
		pass = 0;
	} else if (v.ref_err[0]) {
		snprintf(msg, sizeof msg, "%s", v.ref_err);
		pass = 0;
	} else
		for (size_t k = 0; k < nrows; k++)
			pass &= compare_row(env, s, &rows[k], msg, sizeof msg, o->cancel);
	if (checks)
		json_object_set_new(checks, "reference",
				    json_pack("{s:b, s:s}", "passed", pass, "message", msg));
	*report = v.report;
	v.report = NULL;
out:
	json_decref(v.report);
	json_decref(job);
	json_decref(jrows);
	check_jobdir_remove(dir);
	return rc;
}
