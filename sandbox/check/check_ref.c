/* check_ref: the reference outputs a candidate is compared with, computed
 * outside the harness: the built-in ops' float64 CPU references, the CUDA
 * reference's output files, and torch expressions in the warm sandboxed
 * python (check_pyworker.h).
 * Inputs are regenerated from the same seed (spec_fill). */
#include "sandbox/check/check.h"
#include "sandbox/check/check_int.h"
#include "sandbox/check/check_pyworker.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/par.h"
#include "kernels/op.h"

/* --- references ---------------------------------------------------------- */

struct conv_job {
	enum kf_dtype dt;
	const void *raw;
	double *out;
};

static void conv_chunk(void *arg, uint64_t c, uint64_t lo, uint64_t hi)
{
	const struct conv_job *j = arg;
	(void)c;
	dtype_load_range(j->dt, j->raw, (size_t)lo, (size_t)hi, j->out + lo);
}

void check_to_double(enum kf_dtype dt, const void *raw, uint64_t n, double *out)
{
	struct conv_job j = {dt, raw, out};
	par_for(n, CHECK_PAR_CHUNK, conv_chunk, &j);
}

/* Regenerates input t exactly as the harness did; returns it as float64. */
static int regen_input(const struct spec *s, const struct spec_bound *b, size_t t,
		       const int64_t *vals, uint64_t seed, double **out, struct kf_err *err)
{
	const struct spec_tensor *T = &s->tensors[t];
	void *raw = mem_alloc_big(b->bytes[t]);
	double *d = mem_alloc_big(b->elems[t] * sizeof *d);
	if (!raw || !d) {
		free(raw);
		free(d);
		return kf_err_set(err, KF_ENOMEM, "out of memory regenerating inputs");
	}
	spec_fill(T, t, seed, spec_init_max(s, t, vals), raw, b->elems[t]);
	check_to_double(T->dtype, raw, b->elems[t], d);
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
		want[t] = mem_alloc_big(b.elems[t] * sizeof(double));
		if (!want[t]) {
			rc = kf_err_set(err, KF_ENOMEM, "out of memory for the reference");
			goto out;
		}
		memset(want[t], 0, b.elems[t] * sizeof(double));
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
	check_to_double(T->dtype, raw, b->elems[t], d);
	free(raw);
	*out = d;
	return 0;
}

static const char EMPTY_MAP[1];

int check_map_output(const struct spec_bound *b, size_t t, const char *name, const char *path,
		     const void **out, struct kf_err *err)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return kf_err_set(err, KF_EIO, "output %s missing: %s", name, strerror(errno));
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != b->bytes[t]) {
		rc = kf_err_set(err, KF_EIO, "output %s: file has the wrong size", name);
	} else if (!b->bytes[t]) {
		*out = EMPTY_MAP;
	} else {
		/* The harness has exited: nothing truncates the file under the
		 * mapping. MAP_POPULATE maps the page cache in one call. */
		void *m = mmap(NULL, b->bytes[t], PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
		if (m == MAP_FAILED)
			rc = kf_err_set(err, errno == ENOMEM ? KF_ENOMEM : KF_EIO,
					"output %s: cannot map it: %s", name, strerror(errno));
		else
			*out = m;
	}
	close(fd);
	return rc;
}

void check_unmap_output(const struct spec_bound *b, size_t t, const void *p)
{
	if (p && p != EMPTY_MAP)
		munmap((void *)p, b->bytes[t]);
}

/* --- torch references ----------------------------------------------------
 * The expression runs in a warm sandboxed python (check_pyworker.h): the
 * inputs regenerated from the seeds and torch_job.json go to the leased
 * worker's directory, its child writes every output as float64, and the
 * outputs move into the check's directory. */

#define TORCH_WALL_MS  180000u /* one reference job: every trial of one size */
#define TORCH_TAIL_MAX 200     /* bytes of the job's output quoted in an error */

/* torch_job.json without its trials: the expression, sizes, scalars and
 * outputs (name, shape, file pattern with the trial). New. */
static json_t *torch_job(const struct spec *s, const int64_t *vals, const struct spec_bound *b)
{
	json_t *job = json_object(), *outs = json_array(), *sizes = json_object(),
	       *scalars = json_object();
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
	json_object_set_new(job, "trials", json_array());
	return job;
}

/* Writes the inputs of ntrials seeds into wdir and lists them in job's
 * trials. */
static int torch_inputs(const struct spec *s, const char *wdir, const int64_t *vals,
			const struct spec_bound *b, const uint64_t *seeds, int ntrials, json_t *job,
			struct kf_err *err)
{
	json_t *trials = json_object_get(job, "trials");
	int rc = 0;
	for (int k = 0; k < ntrials && !rc; k++) {
		json_t *ins = json_array();
		json_array_append_new(trials, json_pack("{s:i, s:o}", "trial", k, "inputs", ins));
		for (size_t t = 0; t < s->tensors_len && !rc; t++) {
			const struct spec_tensor *T = &s->tensors[t];
			if (T->role == SPEC_ROLE_OUTPUT)
				continue;
			void *raw = malloc(b->bytes[t] ? b->bytes[t] : 1);
			if (!raw)
				return kf_err_set(err, KF_ENOMEM, "out of memory");
			spec_fill(T, t, seeds[k], spec_init_max(s, t, vals), raw, b->elems[t]);
			char file[128], path[PATH_MAX + 140];
			snprintf(file, sizeof file, "torch.in.t%d.%s.bin", k, T->name);
			snprintf(path, sizeof path, "%s/%s", wdir, file);
			FILE *f = fopen(path, "wb");
			if (!f || fwrite(raw, 1, b->bytes[t], f) != b->bytes[t])
				rc = kf_err_set(err, KF_EIO, "cannot write %s", path);
			if (f && fclose(f) && !rc)
				rc = kf_err_set(err, KF_EIO, "cannot write %s", path);
			free(raw);
			json_t *shape = json_array();
			for (size_t d = 0; d < T->rank; d++)
				json_array_append_new(shape, json_integer(b->dims[t][d]));
			json_array_append_new(ins, json_pack("{s:s, s:s, s:s, s:o}", "name",
							     T->name, "dtype", dtype_name(T->dtype),
							     "file", file, "shape", shape));
		}
	}
	return rc;
}

/* The last TORCH_TAIL_MAX bytes of the job's stdout and stderr
 * (wdir/torch.log, never through a link) into buf, without the final
 * newline. */
static void torch_log_tail(const char *wdir, char *buf, size_t cap)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/torch.log", wdir);
	buf[0] = 0;
	int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode)) {
		size_t want = cap - 1 < TORCH_TAIL_MAX ? cap - 1 : TORCH_TAIL_MAX;
		off_t at = st.st_size > (off_t)want ? st.st_size - (off_t)want : 0;
		ssize_t n = pread(fd, buf, want, at);
		buf[n > 0 ? n : 0] = 0;
		size_t l = strlen(buf);
		while (l && (buf[l - 1] == '\n' || buf[l - 1] == '\r'))
			buf[--l] = 0;
	}
	close(fd);
}

/* How the job's child ended -> the reference's error (0 when it
 * succeeded). */
static int torch_outcome(const char *wdir, const struct check_pyworker_status *st, unsigned wall_ms,
			 struct kf_err *err)
{
	if (st->exited && st->code == 0)
		return 0;
	char tail[TORCH_TAIL_MAX + 1];
	torch_log_tail(wdir, tail, sizeof tail);
	if (st->timed_out)
		return kf_err_set(err, KF_ETIMEOUT,
				  "reference.torch did not finish within %u ms: its python "
				  "process was killed%s%s",
				  wall_ms, tail[0] ? "; its output ends: " : "", tail);
	if (!st->exited)
		return kf_err_set(err, KF_EINVAL,
				  "reference.torch failed: its python process died of signal %d "
				  "(%s)%s%s",
				  st->signal, strsignal(st->signal), tail[0] ? ": " : "", tail);
	return kf_err_set(err, KF_EINVAL, "reference.torch failed: %s",
			  tail[0] ? tail : "exit status without output");
}

/* Moves the outputs of ntrials from wdir into dir (the worker's directory
 * is emptied for the next job). A link moves as a link, which the reader
 * (O_NOFOLLOW) refuses. */
static void torch_take_outputs(const struct spec *s, const char *wdir, const char *dir, int ntrials)
{
	for (int k = 0; k < ntrials; k++)
		for (size_t t = 0; t < s->tensors_len; t++) {
			if (s->tensors[t].role == SPEC_ROLE_INPUT)
				continue;
			char name[128], from[PATH_MAX + 140], to[PATH_MAX + 140];
			snprintf(name, sizeof name, "torch.t%d.%s.bin", k, s->tensors[t].name);
			snprintf(from, sizeof from, "%s/%s", wdir, name);
			snprintf(to, sizeof to, "%s/%s", dir, name);
			if (!rename(from, to))
				continue;
			unlink(to); /* no stale output of an earlier run */
			/* Another file system: copied, a regular file only (every
			 * process of the job has ended: nothing swaps it now). */
			struct stat st;
			struct kf_err e = {0};
			if (errno == EXDEV && !lstat(from, &st) && S_ISREG(st.st_mode) &&
			    check_copy_file(from, dir, name, &e))
				unlink(to);
		}
}

int check_torch_reference(struct check_env *env, const struct spec *s, const char *dir,
			  const int64_t *vals, const struct spec_bound *b, const uint64_t *seeds,
			  int ntrials, const volatile int *cancel, struct check_phases *ph,
			  struct kf_err *err)
{
	struct check_pyworker *w;
	int started = 0;
	double start_ms = 0;
	int rc = check_pyworker_lease(env, cancel, &w, &started, &start_ms, err);
	if (ph)
		ph->torch_start_ms += start_ms;
	if (rc)
		return rc;
	if (ph) {
		ph->torch_runs++;
		ph->torch_warm += !started;
	}
	const char *wdir = check_pyworker_dir(w);
	json_t *job = torch_job(s, vals, b);
	rc = torch_inputs(s, wdir, vals, b, seeds, ntrials, job, err);
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/torch_job.json", wdir);
	if (!rc && json_dump_file(job, p, 0))
		rc = kf_err_set(err, KF_EIO, "cannot write %s", p);
	json_decref(job);
	struct check_pyworker_status st;
	if (!rc)
		rc = check_pyworker_run(w, TORCH_WALL_MS, cancel, &st, err);
	if (!rc)
		rc = torch_outcome(wdir, &st, TORCH_WALL_MS, err);
	if (!rc)
		torch_take_outputs(s, wdir, dir, ntrials);
	check_pyworker_release(env, w);
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
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		uint64_t need = b->elems[t] * 8;
		if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
		    (uint64_t)st.st_size != need) {
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
