/* dataset_export: the scan over the history's benchmarks, the
 * deduplication by normalized source (the fastest record of a source is
 * kept), and the files of an export directory: data/kernels.jsonl, the
 * dataset card README.md (Hugging Face format) and schema.json. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/version.h"
#include "sandbox/dataset/dataset.h"
#include "sandbox/dataset/dataset_int.h"

#define PATH_CAP 4096

/* The ids of every benchmark with status ok since f->since_ms, oldest
 * first, into *ids (new array of strings). */
static int bench_ids(struct history *h, const struct dataset_filter *f, json_t **ids,
		     struct kf_err *err)
{
	struct history_filter hf;
	struct history_page page;
	char cursor[HISTORY_ID_BYTES] = "";
	int rc = 0;

	*ids = json_array();
	history_filter_init(&hf);
	hf.kind = HISTORY_BENCH;
	hf.status = HISTORY_OK;
	hf.since_ms = f->since_ms;
	hf.limit = HISTORY_LIST_MAX;
	do {
		hf.cursor = cursor[0] ? cursor : NULL;
		rc = history_list(h, &hf, &page, err);
		if (rc)
			break;
		for (size_t i = 0; i < page.len; i++)
			json_array_append_new(*ids, json_string(page.runs[i].id));
		snprintf(cursor, sizeof(cursor), "%s", page.next_cursor);
		history_page_fini(&page);
		if (json_array_size(*ids) > DATASET_SCAN_MAX)
			rc = kf_err_set(err, KF_ETOOBIG,
					"dataset: over %d benchmarks to scan: narrow it with since",
					DATASET_SCAN_MAX);
	} while (!rc && cursor[0]);
	if (rc) {
		json_decref(*ids);
		*ids = NULL;
		return rc;
	}
	/* listed newest first; records go out oldest first */
	for (size_t i = 0, n = json_array_size(*ids); i < n / 2; i++) {
		json_t *a = json_incref(json_array_get(*ids, i));

		json_array_set(*ids, i, json_array_get(*ids, n - 1 - i));
		json_array_set_new(*ids, n - 1 - i, a);
	}
	return 0;
}

static double speedup_of(const json_t *rec)
{
	const json_t *sp = json_object_get(json_object_get(rec, "benchmark"), "speedup");

	/* -1 ranks a record without a baseline below any measured speedup
	 * (and, unlike -inf, is a JSON number) */
	return json_is_number(sp) ? json_number_value(sp) : -1;
}

/* Builds the record of benchmark id into *rec (NULL when it is not
 * exported), counting why in st. */
static int one_record(struct history *h, const struct dataset_filter *f, const char *id,
		      json_t **rec, struct dataset_stats *st, struct kf_err *err)
{
	struct history_run b;
	struct dataset_pair p;
	int rc;

	*rec = NULL;
	rc = history_get(h, id, &b, err);
	if (rc)
		return rc;
	st->scanned++;
	rc = dataset_kernel_pair(h, &b, &p, err);
	if (rc == 0)
		st->unverified++;
	if (rc <= 0) {
		history_run_fini(&b);
		return rc;
	}
	*rec = dataset_record(&b, &p, dataset_lineage(h, &b, f->trajectories), f->license);
	if (!dataset_filter_match(f, *rec, &b)) {
		json_decref(*rec);
		*rec = NULL;
		st->filtered++;
	}
	dataset_pair_fini(&p);
	history_run_fini(&b);
	return 0;
}

struct dataset_iter {
	struct history *h;
	struct dataset_filter f;
	char *strs[4]; /* owned copies of f's strings */
	json_t *order; /* bench ids of the kept records, oldest first */
	size_t next;   /* index into order */
	struct dataset_stats st;
};

static int copy_filter(struct dataset_iter *it, const struct dataset_filter *f)
{
	const char *src[4] = {f->op, f->arch, f->gpu, f->license};
	const char **dst[4] = {&it->f.op, &it->f.arch, &it->f.gpu, &it->f.license};

	it->f = *f;
	for (int i = 0; i < 4; i++) {
		if (!src[i])
			continue;
		it->strs[i] = strdup(src[i]);
		if (!it->strs[i])
			return KF_ENOMEM;
		*dst[i] = it->strs[i];
	}
	return 0;
}

/* The first pass: every benchmark's record is built and judged, and the
 * id of the fastest per normalized source kept in it->order. Records are
 * not held, so an export's memory does not grow with its size. */
static int first_pass(struct dataset_iter *it, struct kf_err *err)
{
	json_t *ids = NULL, *best = json_object(), *v;
	size_t i;
	int rc = bench_ids(it->h, &it->f, &ids, err);

	json_array_foreach(ids, i, v) {
		json_t *rec, *old;
		const char *key;

		if (rc ||
		    (rc = one_record(it->h, &it->f, json_string_value(v), &rec, &it->st, err)) ||
		    !rec)
			continue;
		key = json_string_value(json_object_get(rec, "source_sha256_normalized"));
		old = json_object_get(best, key);
		if (old)
			it->st.duplicates++;
		if (!old) {
			json_array_append_new(it->order, json_string(key));
			json_object_set_new(
				best, key,
				json_pack("{s:O, s:f}", "id", v, "speedup", speedup_of(rec)));
		} else if (speedup_of(rec) > json_real_value(json_object_get(old, "speedup"))) {
			json_object_set(old, "id", v);
			json_object_set_new(old, "speedup", json_real(speedup_of(rec)));
		}
		json_decref(rec);
	}
	json_array_foreach(it->order, i, v)
		json_array_set(it->order, i,
			       json_object_get(json_object_get(best, json_string_value(v)), "id"));
	json_decref(ids);
	json_decref(best);
	return rc;
}

int dataset_iter_new(struct history *h, const struct dataset_filter *f, struct dataset_iter **out,
		     struct kf_err *err)
{
	struct dataset_iter *it;
	int rc;

	*out = NULL;
	if (f->min_speedup < 0 || !isfinite(f->min_speedup))
		return kf_err_set(err, KF_EINVAL, "min_speedup: %g is not a speedup (want >= 0)",
				  f->min_speedup);
	it = calloc(1, sizeof(*it));
	if (!it)
		return kf_err_set(err, KF_ENOMEM, "dataset: out of memory");
	it->h = h;
	it->order = json_array();
	rc = copy_filter(it, f);
	if (rc)
		kf_err_set(err, rc, "dataset: out of memory");
	else
		rc = first_pass(it, err);
	if (rc) {
		dataset_iter_free(it);
		return rc;
	}
	*out = it;
	return 0;
}

int dataset_iter_next(struct dataset_iter *it, json_t **rec, struct kf_err *err)
{
	int rc = 0;

	*rec = NULL;
	while (!*rec && it->next < json_array_size(it->order)) {
		const char *id = json_string_value(json_array_get(it->order, it->next++));
		struct dataset_stats scratch = {0};

		rc = one_record(it->h, &it->f, id, rec, &scratch, err);
		if (rc)
			return rc;
		if (*rec)
			it->st.exported++;
	}
	return 0;
}

const struct dataset_stats *dataset_iter_stats(const struct dataset_iter *it)
{
	return &it->st;
}

void dataset_iter_free(struct dataset_iter *it)
{
	if (!it)
		return;
	for (int i = 0; i < 4; i++)
		free(it->strs[i]);
	json_decref(it->order);
	free(it);
}

int dataset_export(struct history *h, const struct dataset_filter *f, dataset_emit_fn emit,
		   void *arg, struct dataset_stats *stats, struct kf_err *err)
{
	struct dataset_iter *it = NULL;
	json_t *rec = NULL;
	int rc = dataset_iter_new(h, f, &it, err);

	while (!rc && !(rc = dataset_iter_next(it, &rec, err)) && rec) {
		rc = emit(arg, rec, err);
		json_decref(rec);
	}
	if (stats)
		*stats = it ? it->st : (struct dataset_stats){0};
	dataset_iter_free(it);
	return rc;
}

/* ---- files --------------------------------------------------------------- */

static int dir_entries(const char *dir, size_t *n, int *is_dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat stt;

	*n = 0;
	*is_dir = 0;
	if (!d) {
		if (errno == ENOTDIR || (stat(dir, &stt) == 0 && !S_ISDIR(stt.st_mode)))
			return 1; /* exists, not a directory */
		return errno == ENOENT ? 0 : -1;
	}
	*is_dir = 1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			(*n)++;
	closedir(d);
	return 0;
}

static int mkdir_p(const char *path, struct kf_err *err)
{
	char failed[PATH_CAP];
	int rc = fs_mkdir_p(path, 0755, failed, sizeof(failed));

	if (rc)
		return kf_err_set(err, rc, "cannot create %s: %s", failed[0] ? failed : path,
				  strerror(errno));
	return 0;
}

/* The directory may be written: missing, empty, or force. */
static int dir_ready(const char *dir, int force, struct kf_err *err)
{
	size_t n;
	int is_dir, r;

	if (!dir || !*dir || strlen(dir) > PATH_CAP - 64)
		return kf_err_set(err, KF_EINVAL, "out: give a directory path (at most %d bytes)",
				  PATH_CAP - 64);
	r = dir_entries(dir, &n, &is_dir);
	if (r == 1)
		return kf_err_set(err, KF_EINVAL, "out: %s exists and is not a directory", dir);
	if (r < 0)
		return kf_err_set(err, KF_EIO, "out: cannot read %s: %s", dir, strerror(errno));
	if (is_dir && n > 0 && !force)
		return kf_err_set(err, KF_EINVAL,
				  "out: %s exists and is not empty (%zu entries): choose a new "
				  "directory, or pass --force to replace the export's files in it",
				  dir, n);
	return mkdir_p(dir, err);
}

static int emit_line(void *arg, const json_t *rec, struct kf_err *err)
{
	FILE *f = arg;

	if (json_dumpf(rec, f, JSON_COMPACT) || fputc('\n', f) == EOF)
		return kf_err_set(err, KF_EIO, "dataset: cannot write a record: %s",
				  strerror(errno));
	return 0;
}

static int write_text(const char *path, const char *text, struct kf_err *err)
{
	FILE *f = fopen(path, "w");
	int bad;

	if (!f)
		return kf_err_set(err, KF_EIO, "cannot write %s: %s", path, strerror(errno));
	bad = fputs(text, f) == EOF;
	bad |= fclose(f) != 0;
	return bad ? kf_err_set(err, KF_EIO, "cannot write %s: %s", path, strerror(errno)) : 0;
}

/* The dataset card: Hugging Face's YAML header, then what the data is. */
static char *card_text(const struct dataset_filter *f, const struct dataset_stats *st)
{
	char *out = NULL, when[32];
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);
	time_t now = time(NULL);
	struct tm tm;

	if (!m)
		return NULL;
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	fprintf(m,
		"---\nlicense: %s\ntask_categories:\n- text-generation\nlanguage:\n- en\n"
		"tags:\n- cuda\n- gpu-kernels\n- code\n- kforge\npretty_name: Verified CUDA "
		"kernels (kforge)\nsize_categories:\n- %s\nconfigs:\n- config_name: default\n"
		"  data_files:\n  - split: train\n    path: data/kernels.jsonl\n---\n\n",
		f->license, st->exported < 1000 ? "n<1K" : "1K<n<10K");
	fprintf(m,
		"# Verified CUDA kernels\n\n"
		"%zu CUDA kernels, each paired with a description of what it computes (words "
		"and math), its kernel spec (tensors, sizes, launch), the check that proved it "
		"right and the benchmark that timed it. Exported by kforge %s on %s.\n\n"
		"## How a kernel got in\n\n"
		"Only kernels whose benchmark passed (every size's outputs verified after "
		"timing, no time under the roofline floor) and whose check of the same source "
		"and spec passed every safeguard: fresh secret inputs per trial, an odd size "
		"the spec did not list, poisoned outputs, guard bands, inputs unchanged, two "
		"launches compared, NaN/Inf, against a float64, CUDA or PyTorch reference in a "
		"separate process. A kernel that failed any of them is not here, whatever its "
		"speedup. Sources are deduplicated by the sha256 of the normalized source "
		"(comments and whitespace dropped); the fastest record of a source is kept.\n\n"
		"## Counts\n\nbenchmarks scanned: %zu; exported: %zu; left out as unverified: "
		"%zu; by the filter: %zu; duplicates: %zu.\n\n"
		"## Fields\n\nOne JSON object per line, described by `schema.json`: `id`, "
		"`task` (name, op, description, math), `notes` (the author's reasoning), "
		"`source`, `spec`, `arch`, `gpu`, `versions` (kforge, CUDA, driver), "
		"`compile` (registers, shared memory, spills, occupancy per kernel), `check` "
		"(sizes, trials, tolerances, safeguards passed, errors), `benchmark` (median "
		"and 95%% interval, baseline, speedup and interval, GB/s, TFLOP/s, %% of the "
		"roofline floor per size), `lineage` (the runs it improved on), `license`.\n\n"
		"Timings are from the GPU named in each record; they do not transfer to other "
		"GPUs. Load with `datasets.load_dataset(\"json\", data_files="
		"\"data/kernels.jsonl\")` or `pandas.read_json(path, lines=True)`.\n",
		st->exported, KFORGE_VERSION, when, st->scanned, st->exported, st->unverified,
		st->filtered, st->duplicates);
	if (fclose(m) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* Writes the JSONL (temporary name, then rename) into data/. */
static int write_jsonl(struct history *h, const struct dataset_filter *f, const char *dir,
		       struct dataset_stats *st, struct kf_err *err)
{
	char path[PATH_CAP], tmp[PATH_CAP + 8];
	FILE *out;
	int rc;

	snprintf(path, sizeof(path), "%s/data", dir);
	rc = mkdir_p(path, err);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/data/kernels.jsonl", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	out = fopen(tmp, "w");
	if (!out)
		return kf_err_set(err, KF_EIO, "cannot write %s: %s", tmp, strerror(errno));
	rc = dataset_export(h, f, emit_line, out, st, err);
	if (fclose(out) != 0 && !rc)
		rc = kf_err_set(err, KF_EIO, "cannot write %s: %s", tmp, strerror(errno));
	if (!rc && rename(tmp, path) != 0)
		rc = kf_err_set(err, KF_EIO, "cannot rename %s to %s: %s", tmp, path,
				strerror(errno));
	if (rc)
		unlink(tmp);
	return rc;
}

int dataset_write_dir(struct history *h, const struct dataset_filter *f, const char *dir, int force,
		      struct dataset_stats *stats, struct kf_err *err)
{
	struct dataset_stats st = {0};
	char path[PATH_CAP], *card = NULL;
	int rc = dir_ready(dir, force, err);

	if (rc)
		goto out;
	rc = write_jsonl(h, f, dir, &st, err);
	if (rc)
		goto out;
	snprintf(path, sizeof(path), "%s/schema.json", dir);
	rc = write_text(path, dataset_schema_text(), err);
	if (rc)
		goto out;
	card = card_text(f, &st);
	if (!card) {
		rc = kf_err_set(err, KF_ENOMEM, "dataset: out of memory");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/README.md", dir);
	rc = write_text(path, card, err);
out:
	free(card);
	if (stats)
		*stats = st;
	return rc;
}
