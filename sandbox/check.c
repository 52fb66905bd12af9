/* check: check_kernel, daemon side; see check.h. The harness never sees
 * the reference: candidate outputs come back as files; the reference is
 * computed here (built-in ops, float64 CPU), in a separate harness process
 * (a CUDA reference), or in a sandboxed python3 (torch), and compared here. */
#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../kernels/op.h"
#include "../server/app.h"
#include "compile.h"
#include "gpu.h"
#include "jail.h"
#include "runner.h"

/* --- helpers: paths, jail ---------------------------------------------- */

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

static int exe_dir(char *buf, size_t cap)
{
	char p[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", p, sizeof p - 1);
	if (n <= 0)
		return -1;
	p[n] = 0;
	char *slash = strrchr(p, '/');
	if (!slash)
		return -1;
	*slash = 0;
	snprintf(buf, cap, "%s", p);
	return 0;
}

/* The first existing of: $env, <exe dir>/rel1, <exe dir>/rel2. */
static int find_file(const char *env, const char *rel1, const char *rel2, char *out, size_t cap)
{
	const char *e = getenv(env);
	if (e && *e && access(e, R_OK) == 0) {
		snprintf(out, cap, "%s", e);
		return 0;
	}
	char d[PATH_MAX];
	if (exe_dir(d, sizeof d))
		return -1;
	const char *rels[] = {rel1, rel2};
	for (int i = 0; i < 2; i++) {
		if (!rels[i])
			continue;
		char p[PATH_MAX + 64];
		snprintf(p, sizeof p, "%s/%s", d, rels[i]);
		char real[PATH_MAX];
		if (realpath(p, real) && access(real, R_OK) == 0) {
			snprintf(out, cap, "%s", real);
			return 0;
		}
	}
	return -1;
}

static pthread_mutex_t jail_mu = PTHREAD_MUTEX_INITIALIZER;
static struct jail *jails[2];

static int get_jail(struct app *app, struct jail **out, struct kf_err *err)
{
	int mode = app && app->cfg.sandbox == APP_SANDBOX_NONE ? JAIL_NONE : JAIL_BWRAP;
	pthread_mutex_lock(&jail_mu);
	int rc = 0;
	if (!jails[mode]) {
		struct jail_config cfg = {.mode = (enum jail_mode)mode};
		rc = jail_open(&cfg, &jails[mode], err);
	}
	*out = jails[mode];
	pthread_mutex_unlock(&jail_mu);
	if (!rc)
		rc = jail_usable(*out, err);
	return rc;
}

/* --- comparison -------------------------------------------------------- */

void check_compare(const double *got, const double *want, uint64_t n, double atol, double rtol,
		   struct check_cmp *o)
{
	memset(o, 0, sizeof *o);
	o->n = n;
	double num = 0, den = 0, worst_excess = -1, sum = 0;
	uint64_t finite_n = 0;
	int zeros = 1;
	for (uint64_t i = 0; i < n; i++) {
		double g = got[i], w = want[i];
		int bad;
		if (!isfinite(w)) {
			/* The reference itself is NaN/Inf: only the same matches. */
			bad = isnan(w) ? !isnan(g) : g != w;
			zeros = 0;
		} else if (!isfinite(g)) {
			bad = 1;
			o->nonfinite++;
		} else {
			double d = fabs(g - w), bound = atol + rtol * fabs(w);
			bad = d > bound;
			if (d > o->max_abs)
				o->max_abs = d;
			if (w != 0 && d / fabs(w) > o->max_rel)
				o->max_rel = d / fabs(w);
			num += d * d;
			den += w * w;
			if (fabs(w) > o->want_absmax)
				o->want_absmax = fabs(w);
			if (fabs(w) > bound)
				zeros = 0;
			sum += w;
			finite_n++;
			if (d - bound > worst_excess) {
				worst_excess = d - bound;
				o->worst = i;
			}
		}
		if (bad) {
			if (o->first_len < CHECK_FIRST_MAX) {
				o->first[o->first_len] = i;
				o->first_got[o->first_len] = g;
				o->first_want[o->first_len] = w;
				o->first_len++;
			}
			o->mismatches++;
		}
	}
	o->rel_l2 = den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
	o->zeros_would_pass = n > 0 && zeros;
	/* Would writing the mean everywhere pass? */
	int constant = finite_n > 0;
	double mean = finite_n ? sum / (double)finite_n : 0;
	for (uint64_t i = 0; i < n && constant; i++)
		if (isfinite(want[i]) && fabs(mean - want[i]) > atol + rtol * fabs(want[i]))
			constant = 0;
	o->constant_would_pass = n > 1 && constant;
}

void check_format_index(const int64_t *dims, size_t rank, uint64_t i, char *buf, size_t cap)
{
	if (rank == 0) {
		snprintf(buf, cap, "[]");
		return;
	}
	uint64_t idx[SPEC_MAX_RANK];
	for (size_t d = rank; d-- > 0;) {
		uint64_t dim = dims[d] > 0 ? (uint64_t)dims[d] : 1;
		idx[d] = i % dim;
		i /= dim;
	}
	size_t n = (size_t)snprintf(buf, cap, "[");
	for (size_t d = 0; d < rank && n < cap; d++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%" PRIu64, d ? ", " : "", idx[d]);
	if (n < cap)
		snprintf(buf + n, cap - n, "]");
}

/* --- preparing ---------------------------------------------------------- */

void check_prep_fini(struct check_prep *p)
{
	if (!p)
		return;
	spec_free(p->s);
	memset(p, 0, sizeof *p);
}

static int compile_one(struct app *app, const char *source, const char *arch,
		       const volatile int *cancel, const char *what, char *cubin, size_t cap,
		       struct check_prep *p, json_t **out, struct kf_err *err)
{
	struct compile_req req = {
		.source = source, .source_len = strlen(source), .arch = arch, .cancel = cancel};
	struct compile_result res;
	struct kf_err cerr = {0};
	int rc = compile_kernel(app->cc, &req, &res, &cerr);
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
	rc = compile_artifact_path(app->cc, res.artifact_id, "cubin", cubin, cap, &cerr);
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

int check_prepare(struct app *app, const json_t *spec, int want_baseline,
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
	if (!app->cc)
		return kf_err_set(err, KF_ESANDBOX, "the compiler is not available");
	struct spec *s = p->s;
	if ((rc = compile_one(app, s->source, s->arch, cancel, "the candidate", p->cand_cubin,
			      sizeof p->cand_cubin, p, out, err)))
		return rc;
	if (s->ref.kind == SPEC_REF_CUDA &&
	    (rc = compile_one(app, s->ref.source, s->arch, cancel, "the reference source",
			      p->ref_cubin, sizeof p->ref_cubin, NULL, out, err)))
		return rc;
	if (want_baseline) {
		if (s->baseline.kind == SPEC_BASE_FATBIN) {
			if (find_file("KFORGE_FATBIN", "kernels/kernels.fatbin",
				      "../share/kforge/kernels.fatbin", p->base_module,
				      sizeof p->base_module))
				return kf_err_set(err, KF_ENOTFOUND,
						  "baseline: kernels.fatbin not found (set "
						  "KFORGE_FATBIN or build kforge with nvcc)");
		} else if (s->baseline.kind == SPEC_BASE_CUDA) {
			if (s->ref.kind == SPEC_REF_CUDA &&
			    strcmp(s->ref.source, s->baseline.source) == 0)
				snprintf(p->base_module, sizeof p->base_module, "%s", p->ref_cubin);
			else if ((rc = compile_one(app, s->baseline.source, s->arch, cancel,
						   "the baseline source", p->base_module,
						   sizeof p->base_module, NULL, out, err)))
				return rc;
		}
	}
	return 0;
}

/* --- job directories ---------------------------------------------------- */

static void rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		struct stat st;
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			rm_tree(p);
		else
			unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

void check_jobdir_remove(const char *dir)
{
	if (dir && *dir && !getenv("KFORGE_KEEP_JOBS"))
		rm_tree(dir);
}

int check_jobdir_new(struct app *app, const struct spec *s, char *dir, size_t cap,
		     struct kf_err *err)
{
	const char *base = app && app->cfg.data_dir ? app->cfg.data_dir : "/tmp";
	char jobs[PATH_MAX];
	snprintf(jobs, sizeof jobs, "%s/jobs", base);
	if (mkdir(jobs, 0700) && errno != EEXIST)
		return kf_err_set(err, KF_EIO, "cannot create %s: %s", jobs, strerror(errno));
	snprintf(dir, cap, "%s/gpu-XXXXXX", jobs);
	if (!mkdtemp(dir))
		return kf_err_set(err, KF_EIO, "cannot create a job directory in %s: %s", jobs,
				  strerror(errno));
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/spec.json", dir);
	if (s && json_dump_file(s->json, p, JSON_COMPACT)) {
		check_jobdir_remove(dir);
		return kf_err_set(err, KF_EIO, "cannot write %s", p);
	}
	return 0;
}

int check_copy_file(const char *src, const char *dir, const char *name, struct kf_err *err)
{
	char dst[PATH_MAX + 64];
	snprintf(dst, sizeof dst, "%s/%s", dir, name);
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return kf_err_set(err, KF_EIO, "cannot read %s: %s", src, strerror(errno));
	int o = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (o < 0) {
		close(in);
		return kf_err_set(err, KF_EIO, "cannot write %s: %s", dst, strerror(errno));
	}
	char buf[1 << 16];
	ssize_t n;
	int rc = 0;
	while ((n = read(in, buf, sizeof buf)) > 0)
		if (write(o, buf, (size_t)n) != n) {
			rc = kf_err_set(err, KF_EIO, "cannot write %s", dst);
			break;
		}
	if (n < 0)
		rc = kf_err_set(err, KF_EIO, "cannot read %s", src);
	close(in);
	if (close(o) && !rc)
		rc = kf_err_set(err, KF_EIO, "cannot write %s", dst);
	return rc;
}

/* --- running the harness ------------------------------------------------ */

struct reader {
	int fd;
	char *buf;
	size_t len, cap;
	int too_big;
};

static void *read_all(void *arg)
{
	struct reader *r = arg;
	char tmp[65536];
	for (;;) {
		ssize_t n = read(r->fd, tmp, sizeof tmp);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (r->len + (size_t)n > CHECK_REPORT_MAX_BYTES) {
			r->too_big = 1; /* keep draining so the harness never blocks */
			continue;
		}
		if (r->len + (size_t)n + 1 > r->cap) {
			size_t nc = (r->cap ? r->cap * 2 : 1 << 16);
			while (nc < r->len + (size_t)n + 1)
				nc *= 2;
			char *nb = realloc(r->buf, nc);
			if (!nb) {
				r->too_big = 1;
				continue;
			}
			r->buf = nb;
			r->cap = nc;
		}
		memcpy(r->buf + r->len, tmp, (size_t)n);
		r->len += (size_t)n;
		r->buf[r->len] = 0;
	}
	return NULL;
}

int check_harness_exec(struct app *app, const char *dir, const json_t *job, unsigned timeout_ms,
		       const volatile int *stop, json_t **report, char **stdout_text,
		       struct kf_err *err)
{
	*report = NULL;
	if (stdout_text)
		*stdout_text = NULL;
	char harness[PATH_MAX];
	if (find_file("KFORGE_HARNESS", "kforge-harness", "../lib/kforge/kforge-harness", harness,
		      sizeof harness))
		return kf_err_set(err, KF_ENOTFOUND,
				  "kforge-harness not found next to kforge (set KFORGE_HARNESS)");
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/job.json", dir);
	if (json_dump_file(job, p, JSON_COMPACT))
		return kf_err_set(err, KF_EIO, "cannot write %s", p);
	struct jail *j;
	int rc = get_jail(app, &j, err);
	if (rc)
		return rc;
	int fds[2];
	if (pipe2(fds, O_CLOEXEC))
		return kf_err_set(err, KF_EIO, "pipe: %s", strerror(errno));
	struct reader rd = {.fd = fds[0]};
	pthread_t th;
	if (pthread_create(&th, NULL, read_all, &rd)) {
		close(fds[0]);
		close(fds[1]);
		return kf_err_set(err, KF_ENOMEM, "cannot start the report reader");
	}
	const char *argv[] = {harness, "--job", ".", "--report-fd", "3", NULL};
	struct jail_bind binds[] = {{harness, NULL}};
	struct jail_job jj = {
		.argv = argv,
		.job_dir = dir,
		.ro_binds = binds,
		.ro_binds_len = 1,
		.want_gpu = 1,
		.pass_fds = &fds[1],
		.pass_fds_len = 1,
		.wall_ms = timeout_ms ? timeout_ms : CHECK_DEFAULT_TIMEOUT_MS,
		.fsize_bytes = 64ull << 30,
		.stdout_cap_bytes = 16384,
		.stderr_cap_bytes = 16384,
		.cancel = stop,
	};
	struct jail_result res;
	struct kf_err jerr = {0};
	rc = jail_run(j, &jj, &res, &jerr);
	if (rc && rc != KF_ETIMEOUT)
		kf_err_set(err, rc, "%s", jerr.msg);
	close(fds[1]);
	pthread_join(th, NULL);
	close(fds[0]);
	if (stdout_text && res.out && res.out_len)
		*stdout_text = strdup(res.out);
	if (rc == KF_ETIMEOUT) {
		kf_err_set(err, KF_ETIMEOUT,
			   "the kernel did not finish within %u ms: the harness was killed",
			   jj.wall_ms);
	}
	/* The report is JSON lines: one per finished row (check mode), then the
	 * final object. What arrived is kept even when the harness died. */
	json_t *rep = json_object(), *rows = json_array(), *final = NULL;
	json_object_set_new(rep, "rows", rows);
	for (char *line = rd.buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		json_t *o = json_loads(line, 0, NULL);
		if (!json_is_object(o)) {
			json_decref(o);
			continue;
		}
		if (json_is_true(json_object_get(o, "final"))) {
			json_decref(final);
			final = o;
		} else
			json_array_append_new(rows, o);
	}
	if (final) {
		json_object_update_missing(final, rep);
		json_decref(rep);
		rep = final;
	}
	if (rc == 0 && !final) {
		char tail[160] = "";
		if (res.errout_len) {
			const char *t = res.errout;
			if (res.errout_len > 150)
				t += res.errout_len - 150;
			snprintf(tail, sizeof tail, "%s", t);
			for (char *c = tail; *c; c++)
				if (*c == '\n')
					*c = ' ';
		}
		if (rd.too_big)
			rc = kf_err_set(err, KF_ETOOBIG, "the harness report exceeded %u bytes",
					CHECK_REPORT_MAX_BYTES);
		else if (res.term_signal)
			rc = kf_err_set(err, KF_EFAULT,
					"the harness died of signal %d without a report%s%s",
					res.term_signal, tail[0] ? ": " : "", tail);
		else
			rc = kf_err_set(err, KF_EFAULT,
					"the harness exited with status %d without a report%s%s",
					res.exit_code, tail[0] ? ": " : "", tail);
	}
	*report = rep;
	jail_result_fini(&res);
	free(rd.buf);
	return rc;
}

/* --- references ---------------------------------------------------------- */

static int64_t tensor_init_max(const struct spec *s, size_t t, const int64_t *vals)
{
	int64_t v = 0;
	if (s->tensors[t].init_max_expr) {
		struct expr_env env = spec_env(s, vals);
		if (expr_eval(s->tensors[t].init_max_expr, &env, &v, NULL))
			v = 1;
	}
	return v;
}

/* Regenerates input t exactly as the harness did; returns it as float64. */
static int regen_input(const struct spec *s, const struct spec_bound *b, size_t t,
		       const int64_t *vals, uint64_t seed, double **out, struct kf_err *err)
{
	const struct spec_tensor *T = &s->tensors[t];
	void *raw = malloc(b->bytes[t] ? b->bytes[t] : 1);
	double *d = malloc((b->elems[t] ? b->elems[t] : 1) * sizeof *d);
	if (!raw || !d) {
		free(raw);
		free(d);
		return kf_err_set(err, KF_ENOMEM, "out of memory regenerating inputs");
	}
	spec_fill(T, t, seed, tensor_init_max(s, t, vals), raw, b->elems[t]);
	for (uint64_t i = 0; i < b->elems[t]; i++)
		d[i] = dtype_load(T->dtype, raw, (size_t)i);
	free(raw);
	*out = d;
	return 0;
}

int check_reference_cpu(const struct spec *s, const int64_t *vals, uint64_t seed, double **want,
			struct kf_err *err)
{
	const struct op_template *op = op_find(s->ref.op);
	if (!op)
		return kf_err_set(err, KF_EINVAL, "reference.op: '%s' is not a built-in op",
				  s->ref.op);
	struct spec_bound b;
	int rc = spec_bind(s, vals, NULL, "reference", &b, err);
	if (rc)
		return rc;
	int64_t sizes[SPEC_MAX_VARS];
	double *ins[SPEC_MAX_TENSORS] = {0}, *outs[SPEC_MAX_TENSORS] = {0};
	size_t k = 0;
	for (const char *const *n = op->size_names; *n; n++)
		sizes[k++] = vals[spec_var_index(s, *n)];
	for (size_t t = 0; t < s->tensors_len; t++)
		want[t] = NULL;
	k = 0;
	for (const char *const *n = op->inputs; *n; n++, k++) {
		int t = spec_tensor_index(s, *n);
		if ((rc = regen_input(s, &b, (size_t)t, vals, seed, &ins[k], err)))
			goto out;
	}
	k = 0;
	for (const char *const *n = op->outputs; *n; n++, k++) {
		int t = spec_tensor_index(s, *n);
		want[t] = calloc(b.elems[t] ? b.elems[t] : 1, sizeof(double));
		if (!want[t]) {
			rc = kf_err_set(err, KF_ENOMEM, "out of memory for the reference");
			goto out;
		}
		outs[k] = want[t];
	}
	struct op_ref_call call = {.op = op,
				   .sizes = sizes,
				   .scalars = s->ref.params,
				   .in = (const double *const *)ins,
				   .out = outs};
	rc = op->ref(&call, err);
out:
	for (size_t i = 0; i < SPEC_MAX_TENSORS; i++)
		free(ins[i]);
	if (rc)
		for (size_t t = 0; t < s->tensors_len; t++) {
			free(want[t]);
			want[t] = NULL;
		}
	return rc;
}

int check_load_output(const struct spec *s, const struct spec_bound *b, size_t t, const char *path,
		      double **out, struct kf_err *err)
{
	*out = NULL;
	const struct spec_tensor *T = &s->tensors[t];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return kf_err_set(err, KF_EIO, "output %s missing: %s", T->name, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) || (uint64_t)st.st_size != b->bytes[t]) {
		close(fd);
		return kf_err_set(err, KF_EIO, "output %s: file has the wrong size", T->name);
	}
	char *raw = malloc(b->bytes[t] ? b->bytes[t] : 1);
	double *d = malloc((b->elems[t] ? b->elems[t] : 1) * sizeof *d);
	if (!raw || !d) {
		close(fd);
		free(raw);
		free(d);
		return kf_err_set(err, KF_ENOMEM, "out of memory reading outputs");
	}
	uint64_t got = 0;
	while (got < b->bytes[t]) {
		ssize_t n = read(fd, raw + got, b->bytes[t] - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (uint64_t)n;
	}
	close(fd);
	if (got != b->bytes[t]) {
		free(raw);
		free(d);
		return kf_err_set(err, KF_EIO, "output %s: short read", T->name);
	}
	for (uint64_t i = 0; i < b->elems[t]; i++)
		d[i] = dtype_load(T->dtype, raw, (size_t)i);
	free(raw);
	*out = d;
	return 0;
}

/* PyTorch references: a python3 script in the jail, no GPU, reads the
 * regenerated inputs and writes every output as float64. */
static const char TORCH_PY[] =
	"import json, sys\n"
	"try:\n"
	"    import torch\n"
	"except Exception as e:\n"
	"    print(json.dumps({'error': 'torch not available: %s' % e})); sys.exit(3)\n"
	"job = json.load(open('torch_job.json'))\n"
	"DT = {'f32': torch.float32, 'f16': torch.float16, 'bf16': torch.bfloat16,\n"
	"      'f64': torch.float64, 'i8': torch.int8, 'u8': torch.uint8,\n"
	"      'i32': torch.int32, 'i64': torch.int64}\n"
	"import math\n"
	"for tr in job['trials']:\n"
	"    ns = {'torch': torch, 'F': torch.nn.functional, 'math': math}\n"
	"    ns.update(job['sizes']); ns.update(job['scalars'])\n"
	"    for t in tr['inputs']:\n"
	"        raw = bytearray(open(t['file'], 'rb').read())\n"
	"        ns[t['name']] = torch.frombuffer(raw, "
	"dtype=DT[t['dtype']]).reshape(t['shape']).clone()\n"
	"    outs = job['outputs']\n"
	"    try:\n"
	"        res = eval(job['expr'], ns)\n"
	"    except SyntaxError:\n"
	"        exec(job['expr'], ns); res = {o['name']: ns[o['name']] for o in outs}\n"
	"    if not isinstance(res, (tuple, list, dict)): res = {outs[0]['name']: res}\n"
	"    elif isinstance(res, (tuple, list)): res = {o['name']: r for o, r in zip(outs, res)}\n"
	"    for o in outs:\n"
	"        r = torch.as_tensor(res[o['name']]).detach().to('cpu', "
	"torch.float64).reshape(-1)\n"
	"        n = 1\n"
	"        for d in o['shape']: n *= d\n"
	"        if r.numel() != n:\n"
	"            print(json.dumps({'error': 'torch reference: %s has %d elements, the spec "
	"says %d' % (o['name'], r.numel(), n)})); sys.exit(4)\n"
	"        open(o['file'] % tr['trial'], 'wb').write(r.numpy().tobytes())\n"
	"print(json.dumps({'ok': True}))\n";

static pthread_once_t torch_once = PTHREAD_ONCE_INIT;
#define TORCH_MAX_PATHS 12
static char torch_exe[PATH_MAX];
static char torch_paths[TORCH_MAX_PATHS][PATH_MAX];
static size_t torch_paths_len;
static char torch_pythonpath[4096];
static char torch_why[256];

/* Where python3 and torch live, found once by a trusted probe that only
 * imports torch: the interpreter's real path and every directory of its
 * sys.path (standard library, site-packages), bound read-only into the
 * jail. */
static void torch_probe(void)
{
	FILE *f = popen("python3 -c 'import os, sys, torch, numpy; "
			"print(os.path.realpath(sys.executable)); "
			"[print(p) for p in sys.path if p and os.path.isdir(p)]' 2>&1",
			"r");
	if (!f) {
		snprintf(torch_why, sizeof torch_why, "python3 could not be started");
		return;
	}
	char line[PATH_MAX];
	int n = 0, bad = 0;
	size_t pp = 0;
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		if (line[0] != '/') {
			bad = 1;
			continue;
		}
		if (n++ == 0) {
			snprintf(torch_exe, sizeof torch_exe, "%s", line);
			continue;
		}
		if (torch_paths_len < TORCH_MAX_PATHS) {
			snprintf(torch_paths[torch_paths_len++], PATH_MAX, "%s", line);
			pp += (size_t)snprintf(torch_pythonpath + pp, sizeof torch_pythonpath - pp,
					       "%s%s", pp ? ":" : "", line);
			if (pp >= sizeof torch_pythonpath)
				pp = sizeof torch_pythonpath - 1;
		}
	}
	int st = pclose(f);
	if (st != 0 || bad || !torch_exe[0]) {
		torch_exe[0] = 0;
		snprintf(torch_why, sizeof torch_why,
			 "python3 -c 'import torch, numpy' failed on this host");
	}
}

int check_torch_reference(struct app *app, const struct spec *s, const char *dir,
			  const int64_t *vals, const struct spec_bound *b, const uint64_t *seeds,
			  int ntrials, const volatile int *cancel, struct kf_err *err)
{
	pthread_once(&torch_once, torch_probe);
	if (!torch_exe[0])
		return kf_err_set(err, KF_ENOTFOUND,
				  "torch not available: %s; use a built-in op or a CUDA "
				  "source as the reference",
				  torch_why);
	json_t *job = json_object(), *trials = json_array(), *outs = json_array(),
	       *sizes = json_object(), *scalars = json_object();
	json_object_set_new(job, "expr", json_string(s->ref.torch));
	for (size_t k = 0; k < s->vars_len; k++)
		json_object_set_new(sizes, s->vars[k], json_integer(vals[k]));
	for (size_t k = 0; k < s->scalars_len; k++)
		json_object_set_new(scalars, s->scalars[k].name,
				    dtype_is_float(s->scalars[k].dtype)
					    ? json_real(s->scalars[k].value)
					    : json_integer(s->scalars[k].ivalue));
	json_object_set_new(job, "sizes", sizes);
	json_object_set_new(job, "scalars", scalars);
	int rc = 0;
	for (size_t t = 0; t < s->tensors_len; t++) {
		if (s->tensors[t].role == SPEC_ROLE_INPUT)
			continue;
		json_t *shape = json_array();
		for (size_t d = 0; d < s->tensors[t].rank; d++)
			json_array_append_new(shape, json_integer(b->dims[t][d]));
		char file[128];
		snprintf(file, sizeof file, "torch.t%%d.%s.bin", s->tensors[t].name);
		json_array_append_new(outs, json_pack("{s:s, s:o, s:s}", "name", s->tensors[t].name,
						      "shape", shape, "file", file));
	}
	json_object_set_new(job, "outputs", outs);
	json_object_set_new(job, "trials", trials);
	for (int k = 0; k < ntrials && !rc; k++) {
		json_t *ins = json_array();
		json_array_append_new(trials, json_pack("{s:i, s:o}", "trial", k, "inputs", ins));
		for (size_t t = 0; t < s->tensors_len && !rc; t++) {
			const struct spec_tensor *T = &s->tensors[t];
			if (T->role == SPEC_ROLE_OUTPUT)
				continue;
			void *raw = malloc(b->bytes[t] ? b->bytes[t] : 1);
			if (!raw) {
				rc = kf_err_set(err, KF_ENOMEM, "out of memory");
				break;
			}
			spec_fill(T, t, seeds[k], tensor_init_max(s, t, vals), raw, b->elems[t]);
			char file[128], path[PATH_MAX + 140];
			snprintf(file, sizeof file, "torch.in.t%d.%s.bin", k, T->name);
			snprintf(path, sizeof path, "%s/%s", dir, file);
			FILE *f = fopen(path, "wb");
			if (!f || fwrite(raw, 1, b->bytes[t], f) != b->bytes[t])
				rc = kf_err_set(err, KF_EIO, "cannot write %s", path);
			if (f)
				fclose(f);
			free(raw);
			json_t *shape = json_array();
			for (size_t d = 0; d < T->rank; d++)
				json_array_append_new(shape, json_integer(b->dims[t][d]));
			json_array_append_new(ins, json_pack("{s:s, s:s, s:s, s:o}", "name",
							     T->name, "dtype", dtype_name(T->dtype),
							     "file", file, "shape", shape));
		}
	}
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/torch_job.json", dir);
	if (!rc && json_dump_file(job, p, 0))
		rc = kf_err_set(err, KF_EIO, "cannot write %s", p);
	json_decref(job);
	snprintf(p, sizeof p, "%s/torch_ref.py", dir);
	FILE *f = rc ? NULL : fopen(p, "w");
	if (!rc && (!f || fputs(TORCH_PY, f) < 0))
		rc = kf_err_set(err, KF_EIO, "cannot write %s", p);
	if (f)
		fclose(f);
	if (rc)
		return rc;
	struct jail *j;
	if ((rc = get_jail(app, &j, err)))
		return rc;
	const char *argv[] = {torch_exe, "torch_ref.py", NULL};
	char pp[sizeof torch_pythonpath + 16];
	snprintf(pp, sizeof pp, "PYTHONPATH=%s", torch_pythonpath);
	const char *env[] = {pp, "OMP_NUM_THREADS=8", NULL};
	struct jail_bind binds[TORCH_MAX_PATHS + 1];
	binds[0].src = torch_exe;
	binds[0].dst = NULL;
	for (size_t k = 0; k < torch_paths_len; k++) {
		binds[k + 1].src = torch_paths[k];
		binds[k + 1].dst = NULL;
	}
	struct jail_job jj = {.argv = argv,
			      .job_dir = dir,
			      .env = env,
			      .ro_binds = binds,
			      .ro_binds_len = torch_paths_len + 1,
			      .wall_ms = 180000,
			      .cancel = cancel,
			      .stdout_cap_bytes = 8192,
			      .stderr_cap_bytes = 8192};
	struct jail_result res;
	rc = jail_run(j, &jj, &res, err);
	if (!rc && !(res.exited && res.exit_code == 0)) {
		const char *o = res.out_len ? res.out : res.errout ? res.errout : "";
		size_t l = strlen(o);
		rc = kf_err_set(err, res.exit_code == 3 ? KF_ENOTFOUND : KF_EINVAL,
				"reference.torch failed: %s", l > 200 ? o + l - 200 : o);
	}
	jail_result_fini(&res);
	return rc;
}

int check_reference_want(const struct spec *s, const char *dir, const char *prefix,
			 const int64_t *vals, const struct spec_bound *b, int trial, uint64_t seed,
			 double **want, struct kf_err *err)
{
	for (size_t t = 0; t < s->tensors_len; t++)
		want[t] = NULL;
	if (s->ref.kind == SPEC_REF_OP)
		return check_reference_cpu(s, vals, seed, want, err);
	int rc = 0;
	for (size_t t = 0; t < s->tensors_len && !rc; t++) {
		if (s->tensors[t].role == SPEC_ROLE_INPUT)
			continue;
		char path[PATH_MAX + 64];
		if (s->ref.kind == SPEC_REF_CUDA) {
			snprintf(path, sizeof path, "%s/%s.t%d.%s.bin", dir, prefix, trial,
				 s->tensors[t].name);
			rc = check_load_output(s, b, t, path, &want[t], err);
			continue;
		}
		/* torch: float64 files */
		snprintf(path, sizeof path, "%s/torch.t%d.%s.bin", dir, trial, s->tensors[t].name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		struct stat st;
		uint64_t need = b->elems[t] * 8;
		if (fd < 0 || fstat(fd, &st) || (uint64_t)st.st_size != need) {
			rc = kf_err_set(err, KF_EIO,
					"torch reference output %s missing or of the wrong size",
					s->tensors[t].name);
		} else if (!(want[t] = malloc(need ? need : 8))) {
			rc = kf_err_set(err, KF_ENOMEM, "out of memory");
		} else {
			uint64_t got = 0;
			while (got < need) {
				ssize_t n = read(fd, (char *)want[t] + got, need - got);
				if (n <= 0)
					break;
				got += (uint64_t)n;
			}
			if (got != need)
				rc = kf_err_set(err, KF_EIO,
						"torch reference output %s: short read",
						s->tensors[t].name);
		}
		if (fd >= 0)
			close(fd);
	}
	if (rc)
		for (size_t t = 0; t < s->tensors_len; t++) {
			free(want[t]);
			want[t] = NULL;
		}
	return rc;
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

struct gpu_ctx {
	struct app *app;
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
static int run_rows(struct gpu_ctx *c, int gpu, const volatile int *stop, int is_ref,
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
		int rc = check_harness_exec(c->app, c->rows[0].dir, job, wall, stop, &rep,
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
	struct gpu_ctx *c = arg;
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

/* Adds a fired safeguard {name, message} to a trial and to the global set. */
void check_fire(json_t *list, json_t *fired, const char *name, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_array_append_new(list, json_pack("{s:s, s:s}", "name", name, "message", msg));
	if (fired && !json_object_get(fired, name))
		json_object_set_new(fired, name, json_string(msg));
}

static void fire(json_t *list, json_t *fired, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void fire(json_t *list, json_t *fired, const char *name, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	json_array_append_new(list, json_pack("{s:s, s:s}", "name", name, "message", msg));
	if (fired && !json_object_get(fired, name))
		json_object_set_new(fired, name, json_string(msg));
}

static void idx_text(const struct spec *s, const struct spec_bound *b, size_t t,
		     const json_t *first, char *buf, size_t cap)
{
	buf[0] = 0;
	if (json_array_size(first))
		check_format_index(b->dims[t], s->tensors[t].rank,
				   (uint64_t)json_integer_value(json_array_get(first, 0)), buf,
				   cap);
}

static void tolerance_of(const struct spec *s, size_t t, double *atol, double *rtol)
{
	if (s->tol_given) {
		*atol = s->atol;
		*rtol = s->rtol;
	} else
		spec_default_tolerance(s->tensors[t].dtype, atol, rtol);
}

/* Judges one trial from the harness report and the reference. Returns 1
 * when it passed. */
int check_judge_run(const struct spec *s, const char *dir, const struct spec_bound *b,
		    const json_t *tr, double **want, json_t *out_tr, json_t *fired, json_t *flags,
		    double *max_rel_seen)
{
	struct {
		const char *dir;
		struct spec_bound b;
	} rr = {dir, *b}, *r = &rr;
	json_t *sg = json_array();
	json_object_set_new(out_tr, "safeguards", sg);
	json_t *outs_j = json_object();
	json_object_set_new(out_tr, "outputs", outs_j);
	const json_t *v;
	size_t i;
	json_array_foreach(json_object_get(tr, "guard_violations"), i, v) {
		const char *side = json_string_value(json_object_get(v, "side"));
		json_int_t fo = json_integer_value(json_object_get(v, "first_offset"));
		json_int_t lo = json_integer_value(json_object_get(v, "last_offset"));
		if (side && strcmp(side, "before") == 0)
			fire(sg, fired, "out_of_bounds",
			     "%s: wrote before the start of the tensor (%" JSON_INTEGER_FORMAT
			     " guard bytes changed, offsets %" JSON_INTEGER_FORMAT
			     " to %" JSON_INTEGER_FORMAT "): check index arithmetic and bounds",
			     json_string_value(json_object_get(v, "tensor")),
			     json_integer_value(json_object_get(v, "bytes")), fo, lo);
		else
			fire(sg, fired, "out_of_bounds",
			     "%s: wrote past the end of the tensor (%" JSON_INTEGER_FORMAT
			     " guard bytes changed, from byte %" JSON_INTEGER_FORMAT
			     " to byte %" JSON_INTEGER_FORMAT " after its end): guard the tail "
			     "with if (i < n)",
			     json_string_value(json_object_get(v, "tensor")),
			     json_integer_value(json_object_get(v, "bytes")), fo, lo);
	}
	json_array_foreach(json_object_get(tr, "inputs_modified"), i, v) {
		const char *name = json_string_value(json_object_get(v, "tensor"));
		int t = spec_tensor_index(s, name);
		char at[96] = "";
		if (t >= 0)
			check_format_index(
				r->b.dims[t], s->tensors[t].rank,
				(uint64_t)json_integer_value(json_object_get(v, "first_index")), at,
				sizeof at);
		fire(sg, fired, "input_modified",
		     "%s: %" JSON_INTEGER_FORMAT " elements of an input changed (first at %s): "
		     "inputs are read-only (declare it inout if the kernel updates it in place)",
		     name, json_integer_value(json_object_get(v, "elements")), at);
	}
	const json_t *houts = json_object_get(tr, "outputs");
	for (size_t t = 0; t < s->tensors_len; t++) {
		const struct spec_tensor *T = &s->tensors[t];
		if (T->role == SPEC_ROLE_INPUT)
			continue;
		const json_t *ho = json_object_get(houts, T->name);
		if (!ho)
			continue;
		char at[96];
		json_int_t unw = json_integer_value(json_object_get(ho, "unwritten"));
		json_int_t unw2 = json_integer_value(json_object_get(ho, "unwritten_second_run"));
		json_int_t late =
			json_integer_value(json_object_get(ho, "unwritten_first_run_only"));
		json_int_t chg = json_integer_value(json_object_get(ho, "changed_between_runs"));
		if (unw) {
			idx_text(s, &r->b, t, json_object_get(ho, "first_unwritten"), at,
				 sizeof at);
			fire(sg, fired, "coverage",
			     "%s: %" JSON_INTEGER_FORMAT " of %" PRIu64 " elements never written "
			     "(first at %s): the kernel must write every output element (outputs "
			     "are poisoned before each run, so stale memory cannot pass)",
			     T->name, unw, r->b.elems[t], at);
		}
		if (unw2) {
			idx_text(s, &r->b, t, json_object_get(ho, "first_unwritten_second_run"), at,
				 sizeof at);
			fire(sg, fired, "state_across_launches",
			     "%s: %" JSON_INTEGER_FORMAT
			     " elements written on the first launch but "
			     "not on launch %d with the same input (first at %s): the kernel keeps "
			     "state between launches (a __device__ variable or cached result?)",
			     T->name, unw2, CHECK_EXTRA_LAUNCHES + 2, at);
		}
		if (late) {
			idx_text(s, &r->b, t, json_object_get(ho, "first_unwritten_first_run_only"),
				 at, sizeof at);
			fire(sg, fired, "state_across_launches",
			     "%s: %" JSON_INTEGER_FORMAT
			     " elements not written on the first launch "
			     "but written later (first at %s): the kernel depends on earlier "
			     "launches",
			     T->name, late, at);
		}
		if (chg) {
			idx_text(s, &r->b, t, json_object_get(ho, "first_changed"), at, sizeof at);
			fire(sg, fired, "nondeterministic",
			     "%s: %" JSON_INTEGER_FORMAT
			     " elements differ between the first launch "
			     "and launch %d on the same input (first at %s): a race, an "
			     "uninitialised read, or state kept between launches",
			     T->name, chg, CHECK_EXTRA_LAUNCHES + 2, at);
		}
		if (!want || !want[t])
			continue;
		/* Compare the first run against the reference. */
		char path[PATH_MAX + 300];
		snprintf(path, sizeof path, "%s/%s", r->dir,
			 json_string_value(json_object_get(ho, "file")));
		double *got = NULL;
		struct kf_err e = {0};
		if (check_load_output(s, &r->b, t, path, &got, &e)) {
			fire(sg, fired, "harness_error", "%s", e.msg);
			continue;
		}
		double atol, rtol;
		tolerance_of(s, t, &atol, &rtol);
		struct check_cmp c;
		check_compare(got, want[t], r->b.elems[t], atol, rtol, &c);
		free(got);
		if (c.max_rel > *max_rel_seen)
			*max_rel_seen = c.max_rel;
		json_t *fm = json_array();
		for (size_t q = 0; q < c.first_len; q++) {
			check_format_index(r->b.dims[t], T->rank, c.first[q], at, sizeof at);
			json_array_append_new(
				fm, json_pack("{s:s, s:f, s:f}", "at", at, "got",
					      isfinite(c.first_got[q]) ? c.first_got[q] : 0.0,
					      "want", c.first_want[q]));
			if (!isfinite(c.first_got[q]))
				json_object_set_new(json_array_get(fm, q), "got",
						    json_string(isnan(c.first_got[q]) ? "NaN"
								: c.first_got[q] > 0  ? "Inf"
										      : "-Inf"));
		}
		json_object_set_new(outs_j, T->name,
				    json_pack("{s:f, s:f, s:f, s:I, s:I, s:I, s:o}", "max_abs_err",
					      c.max_abs, "max_rel_err", c.max_rel, "rel_l2_err",
					      isfinite(c.rel_l2) ? c.rel_l2 : 1e308, "mismatches",
					      (json_int_t)c.mismatches, "nonfinite",
					      (json_int_t)c.nonfinite, "elements", (json_int_t)c.n,
					      "first_mismatches", fm));
		if (c.nonfinite) {
			check_format_index(r->b.dims[t], T->rank, c.first[0], at, sizeof at);
			fire(sg, fired, "nonfinite",
			     "%s: %" PRIu64 " NaN/Inf values where the reference is finite "
			     "(first mismatch at %s)",
			     T->name, c.nonfinite, at);
		}
		if (c.mismatches > c.nonfinite || (c.mismatches && !c.nonfinite)) {
			char wat[96];
			check_format_index(r->b.dims[t], T->rank, c.first[0], at, sizeof at);
			check_format_index(r->b.dims[t], T->rank, c.worst, wat, sizeof wat);
			fire(sg, fired, "mismatch",
			     "%s: %" PRIu64 " of %" PRIu64 " elements outside |got - want| <= "
			     "%g + %g*|want| (first at %s: got %.6g, want %.6g; max abs err %.3g "
			     "at "
			     "%s, max rel err %.3g, rel L2 %.3g)",
			     T->name, c.mismatches, c.n, atol, rtol, at, c.first_got[0],
			     c.first_want[0], c.max_abs, wat, c.max_rel, c.rel_l2);
			/* Rounding every element to fp16 gives a relative L2 error of
			 * ~1e-4..1e-3 (bf16 ~1e-3..1e-2): a precision problem, not a
			 * logic error. */
			if (T->dtype == KF_DT_F32 && c.rel_l2 > 5e-5 && c.rel_l2 < 2e-2 &&
			    c.mismatches * 50 > c.n)
				fire(sg, NULL, "precision_hint",
				     "%s: relative L2 error %.1e spread over many elements looks "
				     "like half-precision (fp16/bf16) arithmetic; this output is "
				     "checked in fp32",
				     T->name, c.rel_l2);
		}
		if (!json_object_get(flags, "weak_reference") &&
		    (c.zeros_would_pass || c.constant_would_pass)) {
			char m[400];
			if (c.zeros_would_pass)
				snprintf(m, sizeof m,
					 "reference output %s is tiny against the tolerance (max "
					 "|want| %.3g vs atol %g): a kernel writing zeros would "
					 "pass; "
					 "scale the inputs or lower atol",
					 T->name, c.want_absmax, atol);
			else
				snprintf(m, sizeof m,
					 "reference output %s is nearly constant against the "
					 "tolerance: a kernel writing one value would pass; use "
					 "inputs that vary the output or tighten the tolerance",
					 T->name);
			json_object_set_new(flags, "weak_reference", json_string(m));
		}
	}
	size_t nsg = 0;
	json_array_foreach(sg, i, v)
		if (strcmp(json_string_value(json_object_get(v, "name")), "precision_hint") != 0)
			nsg++;
	json_object_set_new(out_tr, "passed", json_boolean(nsg == 0));
	return nsg == 0;
}

int check_kernel(struct app *app, const json_t *spec, const struct check_opts *o, json_t **out,
		 int *gpu, struct kf_err *err)
{
	*out = NULL;
	*gpu = -1;
	struct check_prep p;
	json_t *diag = NULL;
	int rc = check_prepare(app, spec, 0, o->cancel, &p, &diag, err);
	struct row *rows = NULL;
	size_t nrows = 0;
	json_t *result = NULL;
	char jobdir[PATH_MAX] = "";
	char odd_note[300] = "";
	struct gpu_ctx gc = {0};
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
	if ((rc = check_jobdir_new(app, s, jobdir, sizeof jobdir, err)) ||
	    (rc = check_copy_file(p.cand_cubin, jobdir, "cand.cubin", err)) ||
	    (s->ref.kind == SPEC_REF_CUDA &&
	     (rc = check_copy_file(p.ref_cubin, jobdir, "ref.cubin", err))))
		goto out;
	for (size_t r = 0; r < nrows; r++)
		snprintf(rows[r].dir, sizeof rows[r].dir, "%s", jobdir);
	gc = (struct gpu_ctx){.app = app,
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
	rc = runner_run(app->runner, RUNNER_GPU, gpu_job, &gc, progress_bridge, (void *)o,
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
			torch_rc = check_torch_reference(app, s, r->dir, r->vals, &r->b, r->seeds,
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
				fire(sg, fired, r->cand_rc == KF_ETIMEOUT ? "timeout" : "crash",
				     "%s", r->cand_err);
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
					fire(sg, fired,
					     json_object_get(f, "kind") ? "kernel_not_found"
									: "fault",
					     "%s during %s: %s",
					     json_string_value(json_object_get(f, "error")),
					     json_string_value(json_object_get(f, "during")),
					     json_string_value(json_object_get(f, "message")));
				else if (e && at_fault)
					fire(sg, fired, "harness_error", "%s", e);
				else
					fire(sg, fired, "not_run",
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
					fire(l, fired, "reference_failed",
					     "the reference could not be computed: %s", we.msg);
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
		tolerance_of(s, t, &a, &rr);
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
