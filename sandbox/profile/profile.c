/* profile: profile_kernel's run. The spec is checked at the asked size
 * (index, the replay's memory cap), the candidate compiled through
 * check_prepare, and kforge-harness's profile mode started by ncu in the
 * jail, on a GPU from the runner:
 *   ncu --profile-from-start off --clock-control none --cache-control all
 *       --csv --page raw --log-file ncu.csv --metrics ... kforge-harness ...
 * so only the launches between the harness's cuProfilerStart/Stop are
 * profiled, with the clocks as the benchmark sees them and the caches
 * flushed before every pass. A metric this ncu does not know is dropped
 * and the run repeated; counters that cannot be read are said in words.
 * The raw CSV is kept under <data_dir>/profiles/. */
#include "sandbox/profile/profile.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "kernels/op.h"
#include "sandbox/jail/jail.h"
#include "sandbox/pool/gpu.h"
#include "sandbox/pool/runner.h"

#define NCU_RETRIES   8	    /* runs, each dropping the metrics ncu did not know */
#define NCU_OUT_BYTES 65536 /* ncu's stdout and stderr kept */
#define METRICS_BYTES 8192

void profile_result_fini(struct profile_result *res)
{
	if (!res)
		return;
	compile_result_fini(&res->compile_failed.compile);
	memset(res, 0, sizeof *res);
}

/* --- finding ncu ----------------------------------------------------------- */

static int usable(const char *p, char *out, size_t cap)
{
	char real[PATH_MAX];
	if (!p || !*p || !realpath(p, real) || access(real, X_OK))
		return -1;
	snprintf(out, cap, "%s", real);
	return 0;
}

/* The newest <root>/<prefix><version>/ncu (version names sort). */
static int newest_ncu(const char *root, const char *prefix, char *out, size_t cap)
{
	DIR *d = opendir(root);
	if (!d)
		return -1;
	char best[256] = "";
	size_t np = strlen(prefix);
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && !strncmp(e->d_name, prefix, np) &&
		    strcmp(e->d_name, best) > 0)
			snprintf(best, sizeof best, "%s", e->d_name);
	closedir(d);
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/%s/ncu", root, best);
	return best[0] ? usable(p, out, cap) : -1;
}

/* 1 when ncu is a Nsight Compute installation's own binary: its target/
 * folder (the injection libraries) lies next to it. */
static int real_install(const char *ncu)
{
	char p[PATH_MAX];
	struct stat st;
	const char *slash = strrchr(ncu, '/');
	if (!slash)
		return 0;
	snprintf(p, sizeof p, "%.*s/target", (int)(slash - ncu), ncu);
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The CUDA toolkit's bin/ncu is a launcher script that runs the real one
 * from <toolkit>/nsight-compute-<version>/ or /opt/nvidia/nsight-compute/
 * <version>/. The jail binds only ncu's own folder, so the real one is what
 * must run there: out becomes it when one is found, else stays. */
static void settle(char *out, size_t cap)
{
	char root[PATH_MAX], real[PATH_MAX];
	if (real_install(out))
		return;
	snprintf(root, sizeof root, "%s", out);
	for (int up = 0; up < 2; up++) {
		char *slash = strrchr(root, '/');
		if (!slash)
			return;
		*slash = 0;
	}
	if ((*root && newest_ncu(root, "nsight-compute", real, sizeof real) == 0 &&
	     real_install(real)) ||
	    (newest_ncu("/opt/nvidia/nsight-compute", "", real, sizeof real) == 0 &&
	     real_install(real)))
		snprintf(out, cap, "%s", real);
}

int profile_ncu_find(char *out, size_t cap, struct kf_err *err)
{
	const char *env = getenv("KFORGE_NCU");
	if (env && *env) {
		if (usable(env, out, cap) == 0) {
			settle(out, cap);
			return 0;
		}
		return kf_err_set(err, KF_ENOTFOUND,
				  "ncu (Nsight Compute) not found: KFORGE_NCU names %.200s, which "
				  "is not an executable",
				  env);
	}
	const char *path = getenv("PATH");
	char dir[PATH_MAX];
	for (const char *p = path; p && *p;) {
		const char *c = strchr(p, ':');
		size_t n = c ? (size_t)(c - p) : strlen(p);
		if (n && n < sizeof dir - 8) {
			snprintf(dir, sizeof dir, "%.*s/ncu", (int)n, p);
			if (usable(dir, out, cap) == 0) {
				settle(out, cap);
				return 0;
			}
		}
		p = c ? c + 1 : p + n;
	}
	const char *home = getenv("CUDA_HOME");
	if (home && *home) {
		snprintf(dir, sizeof dir, "%.200s/bin/ncu", home);
		if (usable(dir, out, cap) == 0) {
			settle(out, cap);
			return 0;
		}
	}
	if (usable("/usr/local/cuda/bin/ncu", out, cap) == 0 ||
	    newest_ncu("/opt/nvidia/nsight-compute", "", out, cap) == 0) {
		settle(out, cap);
		return 0;
	}
	return kf_err_set(err, KF_ENOTFOUND,
			  "ncu (Nsight Compute) not found on PATH, in $CUDA_HOME/bin, "
			  "/usr/local/cuda/bin or /opt/nvidia/nsight-compute: install Nsight "
			  "Compute or set KFORGE_NCU to its ncu");
}

/* --- ncu's words ------------------------------------------------------------ */

/* 1 when one ==ERROR== line of text says what. */
static int error_line_says(const char *text, const char *what)
{
	for (const char *e = strstr(text, "==ERROR=="); e; e = strstr(e + 1, "==ERROR==")) {
		size_t n = strcspn(e, "\r\n");
		const char *w = memmem(e, n, what, strlen(what));
		if (w)
			return 1;
	}
	return 0;
}

enum profile_unavailable profile_ncu_error(const char *text)
{
	if (!text)
		return PROFILE_AVAILABLE;
	if (strstr(text, "ERR_NVGPUCTRPERM"))
		return PROFILE_COUNTERS_DENIED;
	if (strstr(text, "LibraryNotLoaded") || error_line_says(text, "Failed to load injection") ||
	    error_line_says(text, "cannot open shared object"))
		return PROFILE_LIBRARY_MISSING;
	return PROFILE_AVAILABLE;
}

/* The first name of the comma-separated list that an ==ERROR== line of
 * text names as a whole word, into out. */
static int error_names(const char *text, const char *list, char *out, size_t cap)
{
	for (const char *e = strstr(text, "==ERROR=="); e; e = strstr(e + 1, "==ERROR==")) {
		size_t ll = strcspn(e, "\r\n");
		for (const char *m = list; m && *m;) {
			size_t n = strcspn(m, ",");
			for (const char *h = e;
			     n && n < cap && (h = memmem(h, ll - (size_t)(h - e), m, n)); h++) {
				char after = h[n];
				int word = (h == e || !(isalnum((unsigned char)h[-1]) ||
							h[-1] == '_' || h[-1] == '.')) &&
					   !(isalnum((unsigned char)after) || after == '_' ||
					     after == '.');
				if (word) {
					memcpy(out, m, n);
					out[n] = 0;
					return 0;
				}
			}
			m += n;
			if (*m == ',')
				m++;
		}
	}
	return -1;
}

int profile_ncu_unknown_metric(const char *text, const char *list, char *out, size_t cap)
{
	static const char key[] = "Failed to find metric ";
	const char *p = text ? strstr(text, key) : NULL;
	if (p) {
		p += sizeof key - 1;
		while (*p == ' ' || *p == '\'' || *p == '"')
			p++;
		size_t n = strcspn(p, " '\"\r\n,");
		if (n && n < cap) {
			memcpy(out, p, n);
			out[n] = 0;
			return 0;
		}
	}
	return text && list ? error_names(text, list, out, cap) : -1;
}

/* The last line of ncu's output that says ==ERROR==, or its last line. */
static void ncu_last_words(const char *text, char *out, size_t cap)
{
	out[0] = 0;
	if (!text)
		return;
	const char *e = NULL;
	for (const char *p = strstr(text, "==ERROR=="); p; p = strstr(p + 1, "==ERROR=="))
		e = p;
	if (!e) {
		size_t n = strlen(text);
		while (n && (text[n - 1] == '\n' || text[n - 1] == '\r'))
			n--;
		e = text + n;
		while (e > text && e[-1] != '\n')
			e--;
	}
	size_t n = strcspn(e, "\r\n");
	snprintf(out, cap, "%.*s", (int)(n < 600 ? n : 600), e);
}

int profile_report_path(const char *data_dir, const char *id, char *out, size_t cap,
			struct kf_err *err)
{
	size_t n = id ? strlen(id) : 0;
	if (n != PROFILE_ID_BYTES - 1 || strspn(id, "0123456789abcdef") != n)
		return kf_err_set(err, KF_EINVAL,
				  "profile report id '%.40s': expected 16 lowercase hex digits",
				  id ? id : "");
	snprintf(out, cap, "%s/profiles/%s.csv", data_dir ? data_dir : "/tmp", id);
	return 0;
}

/* --- checking the request -------------------------------------------------- */

/* Parses spec, picks the size row and checks it fits the replay's cap;
 * fills the size, its cost and the variable names into res. */
static int plan_size(const json_t *spec, const struct profile_opts *o, struct profile_result *res,
		     struct kf_err *err)
{
	json_t *x = NULL;
	struct spec *s = NULL;
	struct spec_limits lim;
	check_limits(&lim);
	int rc = spec_expand_op(spec, op_find, &x, err);
	if (!rc)
		rc = spec_parse(x, &lim, op_find, &s, err);
	json_decref(x);
	if (rc)
		return rc;
	if (o->size_index < 0 || (size_t)o->size_index >= s->sizes_len) {
		rc = kf_err_set(err, KF_EINVAL, "size: index %d, the spec has %zu sizes (0 to %zu)",
				o->size_index, s->sizes_len, s->sizes_len - 1);
		goto out;
	}
	res->vars_len = s->vars_len;
	for (size_t k = 0; k < s->vars_len; k++) {
		snprintf(res->vars[k], sizeof res->vars[k], "%s", s->vars[k]);
		res->vals[k] = s->sizes[(size_t)o->size_index * s->vars_len + k];
	}
	char where[32];
	snprintf(where, sizeof where, "sizes[%d]", o->size_index);
	struct spec_bound b;
	if ((rc = spec_bind(s, res->vals, &lim, where, &b, err)))
		goto out;
	res->cost_bytes = b.cost_bytes;
	/* the warm-up: at least 3 launch lists and 20 ms, per program */
	res->timeout_ms = o->timeout_ms ? o->timeout_ms
					: check_work_timeout_ms(&b, 8u * (o->baseline ? 2u : 1u));
	uint64_t need = b.device_bytes * (o->baseline ? 2u : 1u);
	if (need > PROFILE_MAX_DEVICE_BYTES) {
		char st[160];
		check_sizes_text(s, res->vals, st, sizeof st);
		rc = kf_err_set(err, KF_ETOOBIG,
				"size %d (%s) needs %.2f GiB of device memory%s; profile_kernel "
				"takes at most %.1f GiB (the profiler's kernel replay saves and "
				"restores every buffer on each pass): profile a smaller size",
				o->size_index, st, (double)need / (1u << 30),
				o->baseline ? " with the baseline" : "",
				(double)PROFILE_MAX_DEVICE_BYTES / (1u << 30));
	}
out:
	spec_free(s);
	return rc;
}

/* --- the run ------------------------------------------------------------- */

struct pctx {
	struct check_env *env;
	const struct profile_opts *o;
	struct profile_result *res;
	char dir[PATH_MAX];
	int have_base;
	char metrics[METRICS_BYTES]; /* comma-separated, shrinks on retries */
	json_t *rep;		     /* the harness's report: final object or its last line */
	char *csv;		     /* ncu's log file (the CSV) */
	size_t csv_len;
	char *ncu_out; /* ncu's stdout + stderr */
	int jail_rc;
	int gpu;
};

/* The harness's report file: JSON lines; the final object wins, else the
 * last line (a watchdog's timeout line). */
static json_t *read_report(const char *dir)
{
	char p[PATH_MAX + 32], *text = NULL;
	size_t len;
	snprintf(p, sizeof p, "%s/report.jsonl", dir);
	if (fs_read_file(p, CHECK_REPORT_MAX_BYTES, FS_UNTRUSTED, &text, &len))
		return NULL;
	json_t *last = NULL;
	for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		json_t *o = json_loads(line, 0, NULL);
		if (!json_is_object(o)) {
			json_decref(o);
			continue;
		}
		int fin = json_is_true(json_object_get(o, "final"));
		if (!last || fin || !json_is_true(json_object_get(last, "final"))) {
			json_decref(last);
			last = o;
		} else {
			json_decref(o);
		}
	}
	free(text);
	return last;
}

/* One ncu run over the harness in the jail. */
static int ncu_run(struct pctx *c, const char *harness, int gpu, const volatile int *stop,
		   struct kf_err *err)
{
	struct jail *j;
	int rc = check_get_jail(c->env, &j, err);
	if (rc)
		return rc;
	char ncu_dir[PATH_MAX];
	snprintf(ncu_dir, sizeof ncu_dir, "%s", c->res->ncu_path);
	char *slash = strrchr(ncu_dir, '/');
	if (slash)
		*slash = 0;
	const char *argv[] = {c->res->ncu_path,
			      "--profile-from-start",
			      "off",
			      "--clock-control",
			      "none",
			      "--cache-control",
			      "all",
			      "--csv",
			      "--page",
			      "raw",
			      "--log-file",
			      "ncu.csv",
			      "--metrics",
			      c->metrics,
			      harness,
			      "--job",
			      ".",
			      "--report-file",
			      "report.jsonl",
			      NULL};
	struct jail_bind binds[] = {{harness, NULL}, {ncu_dir, NULL}};
	unsigned to = c->res->timeout_ms;
	struct jail_job jj = {
		.argv = argv,
		.job_dir = c->dir,
		.ro_binds = binds,
		.ro_binds_len = 2,
		.want_gpu = 1,
		.wall_ms = to + PROFILE_RUN_MAX_MS,
		.fsize_bytes = 1ull << 30,
		.stdout_cap_bytes = NCU_OUT_BYTES,
		.stderr_cap_bytes = NCU_OUT_BYTES,
		.cancel = stop,
	};
	(void)gpu; /* the job names it: the harness selects the device */
	char p[PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/report.jsonl", c->dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/ncu.csv", c->dir);
	unlink(p);
	struct jail_result jr;
	c->jail_rc = jail_run(j, &jj, &jr, err);
	free(c->ncu_out);
	c->ncu_out = NULL;
	size_t lo = jr.out_len, le = jr.errout_len;
	c->ncu_out = malloc(lo + le + 2);
	if (c->ncu_out)
		snprintf(c->ncu_out, lo + le + 2, "%s\n%s", jr.out ? jr.out : "",
			 jr.errout ? jr.errout : "");
	jail_result_fini(&jr);
	json_decref(c->rep);
	c->rep = read_report(c->dir);
	free(c->csv);
	int frc = fs_read_file(p, PROFILE_CSV_MAX_BYTES, FS_UNTRUSTED, &c->csv, &c->csv_len);
	if (frc == KF_ETOOBIG)
		return kf_err_set(err, KF_ETOOBIG, "the ncu report exceeded %u bytes",
				  PROFILE_CSV_MAX_BYTES);
	if (c->jail_rc == KF_ECANCELED || c->jail_rc == KF_ESANDBOX || c->jail_rc == KF_EINVAL)
		return c->jail_rc;
	kf_err_clear(err);
	return 0;
}

/* Removes metric name from the comma-separated list; 0 when it was there. */
static int drop_metric(char *list, const char *name)
{
	size_t n = strlen(name);
	for (char *p = list; (p = strstr(p, name)); p += n) {
		int start = p == list || p[-1] == ',';
		int endok = p[n] == ',' || p[n] == 0;
		if (!start || !endok)
			continue;
		char *from = p[n] == ',' ? p + n + 1 : p + n;
		if (!*from && p > list)
			p--; /* the last: drop its comma */
		memmove(p, from, strlen(from) + 1);
		return 0;
	}
	return -1;
}

static int profile_job(void *arg, int gpu, const volatile int *stop, struct kf_err *err)
{
	struct pctx *c = arg;
	c->gpu = gpu;
	char harness[PATH_MAX];
	if (check_find_file("KFORGE_HARNESS", "kforge-harness", "../lib/kforge/kforge-harness",
			    harness, sizeof harness))
		return kf_err_set(err, KF_ENOTFOUND,
				  "kforge-harness not found next to kforge (set KFORGE_HARNESS)");
	char seed[20];
	snprintf(seed, sizeof seed, "%016" PRIx64, check_new_seed());
	json_t *sizes = json_array();
	for (size_t k = 0; k < c->res->vars_len; k++)
		json_array_append_new(sizes, json_integer(c->res->vals[k]));
	unsigned to = c->res->timeout_ms;
	json_t *job = json_pack("{s:s, s:i, s:s, s:o, s:s, s:f, s:i}", "mode", "profile", "device",
				gpu, "module", "cand.cubin", "sizes", sizes, "seed", seed,
				"warmup_ms", 20.0, "row_timeout_ms", (int)to);
	if (c->have_base)
		json_object_set_new(job, "baseline_module", json_string("base.mod"));
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/job.json", c->dir);
	int rc = json_dump_file(job, p, JSON_COMPACT)
			 ? kf_err_set(err, KF_EIO, "cannot write %s", p)
			 : 0;
	json_decref(job);
	for (int attempt = 0; !rc && attempt < NCU_RETRIES; attempt++) {
		if (c->o->progress)
			c->o->progress(c->o->progress_arg, attempt, 0,
				       "running the kernel under Nsight Compute");
		if ((rc = ncu_run(c, harness, gpu, stop, err)))
			break;
		/* ncu says so on its output or, with --log-file, in the log */
		char unknown[160];
		if ((profile_ncu_unknown_metric(c->ncu_out, c->metrics, unknown, sizeof unknown) &&
		     profile_ncu_unknown_metric(c->csv, c->metrics, unknown, sizeof unknown)) ||
		    drop_metric(c->metrics, unknown))
			break;
		size_t dl = strlen(c->res->dropped);
		snprintf(c->res->dropped + dl, sizeof c->res->dropped - dl, "%s%s", dl ? "," : "",
			 unknown);
	}
	return rc;
}

/* What the harness said about the kernel: a hang or a fault is the
 * kernel's verdict, as in a check. Returns KF_EFAULT then, else 0. */
static int kernel_verdict(struct pctx *c, struct kf_err *err)
{
	struct profile_result *res = c->res;
	unsigned to = c->res->timeout_ms;
	const json_t *f = json_object_get(c->rep, "fault");
	const char *herr = json_string_value(json_object_get(c->rep, "error"));
	if (json_is_true(json_object_get(c->rep, "timeout"))) {
		res->hung = 1;
		snprintf(res->fault, sizeof res->fault,
			 "the kernel did not finish within %u ms in the warm-up before profiling: "
			 "the harness was killed",
			 to);
	} else if (c->jail_rc == KF_ETIMEOUT) {
		res->hung = 1;
		snprintf(res->fault, sizeof res->fault,
			 "the profiler run did not finish within %u ms: ncu and the kernel were "
			 "killed",
			 to + PROFILE_RUN_MAX_MS);
	} else if (f) {
		snprintf(res->fault, sizeof res->fault, "the kernel faulted: %s during %s: %s",
			 json_string_value(json_object_get(f, "error")),
			 json_string_value(json_object_get(f, "during")),
			 json_string_value(json_object_get(f, "message")));
	} else if (herr) { /* the spec at this size, not the kernel: no verdict */
		return kf_err_set(err, KF_EINVAL, "%s", herr);
	} else {
		return 0;
	}
	return kf_err_set(err, KF_EFAULT, "%s", res->fault);
}

/* Why no metrics came back, when none did. */
static int no_metrics(struct pctx *c, const char *parse_msg, struct kf_err *err)
{
	struct profile_result *res = c->res;
	char words[640];
	/* with --log-file ncu's own errors may be in its log */
	int in_log = c->csv && strstr(c->csv, "==ERROR==") &&
		     !(c->ncu_out && strstr(c->ncu_out, "==ERROR=="));
	ncu_last_words(in_log ? c->csv : c->ncu_out, words, sizeof words);
	enum profile_unavailable u = profile_ncu_error(c->ncu_out);
	if (u == PROFILE_AVAILABLE)
		u = profile_ncu_error(c->csv);
	res->unavailable = u ? u : PROFILE_FAILED;
	switch (res->unavailable) {
	case PROFILE_COUNTERS_DENIED:
		snprintf(res->why, sizeof res->why,
			 "the GPU's performance counters are restricted to administrators on "
			 "this host (ERR_NVGPUCTRPERM): set the driver option "
			 "NVreg_RestrictProfilingToAdminUsers=0 (the jail drops every "
			 "capability, so an administrator's daemon is refused there too); ncu "
			 "said: %s",
			 words);
		return kf_err_set(err, KF_EPERM, "%s", res->why);
	case PROFILE_LIBRARY_MISSING:
		snprintf(res->why, sizeof res->why,
			 "ncu could not load its injection library into the kernel's process "
			 "(LibraryNotLoaded): the Nsight Compute install is incomplete or not "
			 "visible in the sandbox; ncu said: %s",
			 words);
		return kf_err_set(err, KF_ENOTFOUND, "%s", res->why);
	default:
		snprintf(res->why, sizeof res->why, "ncu reported no metrics (%s); ncu said: %s",
			 parse_msg, words[0] ? words : "nothing");
		return kf_err_set(err, KF_EFAULT, "%s", res->why);
	}
}

/* Keeps the raw CSV as <data_dir>/profiles/<id>.csv. */
static void keep_report(struct pctx *c)
{
	const char *base = c->env->data_dir ? c->env->data_dir : "/tmp";
	char d[PATH_MAX], p[PATH_MAX + 64];
	snprintf(d, sizeof d, "%s/profiles", base);
	if (mkdir(d, 0700) && errno != EEXIST)
		return;
	char id[PROFILE_ID_BYTES];
	snprintf(id, sizeof id, "%016" PRIx64, check_new_seed());
	if (profile_report_path(base, id, p, sizeof p, NULL))
		return;
	FILE *f = fopen(p, "wb");
	if (!f)
		return;
	int ok = fwrite(c->csv, 1, c->csv_len, f) == c->csv_len;
	if (fclose(f) == 0 && ok)
		snprintf(c->res->report_id, sizeof c->res->report_id, "%s", id);
	else
		unlink(p);
}

/* Metrics, program names and findings from the CSV. */
static int read_metrics(struct pctx *c, struct kf_err *err)
{
	struct profile_result *res = c->res;
	const char *text = c->csv;
	size_t len = c->csv_len;
	struct kf_err perr = {0};
	int rc = text ? profile_csv_parse(text, len, &res->report, &perr) : KF_EINVAL;
	if (rc && c->ncu_out) { /* an ncu that ignored --log-file printed it */
		kf_err_clear(&perr);
		rc = profile_csv_parse(c->ncu_out, strlen(c->ncu_out), &res->report, &perr);
		if (!rc) {
			free(c->csv);
			c->csv = strdup(c->ncu_out);
			c->csv_len = c->csv ? strlen(c->csv) : 0;
		}
	}
	if (rc)
		return no_metrics(c, text ? perr.msg : "no ncu.csv written", err);
	/* Launches in order: the candidate's, then the baseline's. */
	const json_t *pr = json_object_get(c->rep, "profiled");
	size_t k = 0;
	for (size_t i = 0; i < json_array_size(pr); i++) {
		const json_t *e = json_array_get(pr, i);
		json_int_t n = json_integer_value(json_object_get(e, "launches"));
		for (json_int_t j = 0; j < n && k < res->report.kernels_len; j++, k++)
			snprintf(res->report.kernels[k].program,
				 sizeof res->report.kernels[k].program, "%s",
				 json_string_value(json_object_get(e, "program")));
	}
	for (; k < res->report.kernels_len; k++)
		snprintf(res->report.kernels[k].program, sizeof res->report.kernels[k].program,
			 "candidate");
	for (size_t i = 0; i < res->report.kernels_len; i++)
		profile_rules(&res->report.kernels[i], res->cost_bytes, &res->findings[i]);
	keep_report(c);
	return 0;
}

static int run_profiler(struct check_env *env, const struct profile_opts *o, struct check_prep *p,
			struct profile_result *res, int *gpu, struct kf_err *err)
{
	struct pctx *c = calloc(1, sizeof *c);
	if (!c)
		return kf_err_set(err, KF_ENOMEM, "out of memory");
	c->env = env;
	c->o = o;
	c->res = res;
	c->gpu = -1;
	c->have_base = o->baseline && p->base_module[0];
	size_t n = 0;
	for (const char *const *m = profile_metric_names(); *m; m++)
		n += (size_t)snprintf(c->metrics + n, sizeof c->metrics - n, "%s%s", n ? "," : "",
				      *m);
	int rc;
	if ((rc = check_jobdir_new(env, p->s, c->dir, sizeof c->dir, err)) ||
	    (rc = check_copy_file(p->cand_cubin, c->dir, "cand.cubin", err)) ||
	    (c->have_base && (rc = check_copy_file(p->base_module, c->dir, "base.mod", err))))
		goto out;
	char label[RUNNER_LABEL_BYTES];
	snprintf(label, sizeof label, "profile %s", p->s->launch[0].kernel);
	struct runner_opts ro = {.timeout_ms = -1, .label = label};
	double t0 = check_now_ms();
	rc = runner_run(env->runner, RUNNER_GPU, profile_job, c, NULL, NULL, o->cancel, &ro, err);
	res->wall_ms = check_now_ms() - t0;
	*gpu = c->gpu;
	if (rc)
		goto out;
	check_device_read(json_object_get(c->rep, "device"), &res->device);
	const json_t *be = json_object_get(c->rep, "baseline_error");
	if (be)
		snprintf(res->baseline_error, sizeof res->baseline_error, "%s: %s",
			 json_is_string(be) ? json_string_value(be)
					    : json_string_value(json_object_get(be, "error")),
			 json_string_value(json_object_get(be, "during")));
	if ((rc = kernel_verdict(c, err)))
		goto out;
	/* No report: the harness never ran its launches (it did not start
	 * under ncu, or ncu ended it); whatever the log holds is not theirs. */
	if (!c->rep) {
		rc = no_metrics(c, "kforge-harness wrote no report under ncu", err);
		goto out;
	}
	if ((rc = read_metrics(c, err)))
		goto out;
	res->answer = CHECK_ANSWER_VERDICT;
out:
	json_decref(c->rep);
	free(c->csv);
	free(c->ncu_out);
	check_jobdir_remove(c->dir);
	free(c);
	return rc;
}

int profile_kernel(struct check_env *env, const json_t *spec, const struct profile_opts *o,
		   struct profile_result *res, int *gpu, struct kf_err *err)
{
	memset(res, 0, sizeof *res);
	res->size_index = o->size_index;
	*gpu = -1;
	struct check_prep p;
	memset(&p, 0, sizeof p);
	int rc = plan_size(spec, o, res, err);
	if (rc)
		return rc;
	if (gpu_count() <= 0) {
		res->unavailable = PROFILE_NO_GPU;
		snprintf(res->why, sizeof res->why, "no usable GPU: %s", gpu_no_gpu_reason());
		return kf_err_set(err, KF_ENOGPU, "%s", res->why);
	}
	if ((rc = profile_ncu_find(res->ncu_path, sizeof res->ncu_path, err))) {
		res->unavailable = PROFILE_NO_NCU;
		snprintf(res->why, sizeof res->why, "%s", err->msg);
		return rc;
	}
	rc = check_prepare(env, spec, o->baseline, o->cancel, &p, &res->compile_failed, err);
	if (rc == KF_ECOMPILE)
		res->answer = CHECK_ANSWER_COMPILE;
	if (!rc)
		rc = run_profiler(env, o, &p, res, gpu, err);
	check_prep_fini(&p);
	return rc;
}
