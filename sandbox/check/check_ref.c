/* check_ref: the reference outputs a candidate is compared with, computed
 * outside the harness: the built-in ops' float64 CPU references, the CUDA
 * reference's output files, and torch expressions in a sandboxed python3.
 * Inputs are regenerated from the same seed (spec_fill). */
#include "sandbox/check/check.h"
#include "sandbox/check/check_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/par.h"
#include "kernels/op.h"
#include "sandbox/jail/jail.h"

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
	void *raw = malloc(b->bytes[t] ? b->bytes[t] : 1);
	double *d = malloc((b->elems[t] ? b->elems[t] : 1) * sizeof *d);
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
	check_to_double(T->dtype, raw, b->elems[t], d);
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

int check_torch_reference(struct check_env *env, const struct spec *s, const char *dir,
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
			spec_fill(T, t, seeds[k], spec_init_max(s, t, vals), raw, b->elems[t]);
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
	if ((rc = check_get_jail(env, &j, err)))
		return rc;
	const char *argv[] = {torch_exe, "torch_ref.py", NULL};
	char pp[sizeof torch_pythonpath + 16];
	snprintf(pp, sizeof pp, "PYTHONPATH=%s", torch_pythonpath);
	const char *envp[] = {pp, "OMP_NUM_THREADS=8", NULL};
	struct jail_bind binds[TORCH_MAX_PATHS + 1];
	binds[0].src = torch_exe;
	binds[0].dst = NULL;
	for (size_t k = 0; k < torch_paths_len; k++) {
		binds[k + 1].src = torch_paths[k];
		binds[k + 1].dst = NULL;
	}
	struct jail_job jj = {.argv = argv,
			      .job_dir = dir,
			      .env = envp,
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
