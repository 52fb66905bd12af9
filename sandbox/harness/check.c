/* check: the harness's check mode. For every row of sizes and every trial
 * seed: fresh inputs, poisoned outputs, the program's launch list run as
 * the job says (repeat runs expose state kept between launches and
 * non-determinism), guard bands and inputs checked, outputs written as raw
 * files for the daemon to compare. One report line per row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/mem.h"
#include "sandbox/harness/harness_int.h"

/* --- check mode -------------------------------------------------------- */

/* Counts output t's elements left unwritten or changed between the first
 * run (first) and the second (second, NULL with one run), writes the
 * first run's output as <prefix>.t<trial>.<name>.bin and adds its entry
 * to outs. */
static int compare_runs(struct harness *h, size_t t, const void *first, const void *second,
			const char *prefix, int trial, json_t *outs)
{
	const struct spec_tensor *T = &h->s->tensors[t];
	struct harness_scan sc;
	harness_scan_runs(T, h->b.elems[t], first, second, &sc);
	uint64_t unw = sc.unw, unw2 = sc.unw2, changed = sc.changed, late = sc.late;
	json_t *fu = sc.fu, *fu2 = sc.fu2, *fc = sc.fc, *fl = sc.fl;
	int rc = 0;
	char file[300];
	snprintf(file, sizeof file, "%s.t%d.%s.bin", prefix, trial, T->name);
	if (fs_write_file(file, first, h->b.bytes[t])) {
		json_object_set_new(h->report, "error",
				    json_string("cannot write outputs to the job directory"));
		rc = KF_EIO;
	}
	json_object_set_new(outs, T->name,
			    json_pack("{s:s, s:I, s:o, s:I, s:o, s:I, s:o, s:I, s:o}", "file", file,
				      "unwritten", (json_int_t)unw, "first_unwritten", fu,
				      "unwritten_second_run", (json_int_t)unw2,
				      "first_unwritten_second_run", fu2, "unwritten_first_run_only",
				      (json_int_t)late, "first_unwritten_first_run_only", fl,
				      "changed_between_runs", (json_int_t)changed, "first_changed",
				      fc));
	return rc;
}

/* The first run: launch timed with events, outputs downloaded into
 * first_out, guards and inputs checked. */
static int first_run(struct harness *h, struct harness_prog *p, struct harness_buf *bufs,
		     void *const *first_out, json_t *tr, json_t *guards, json_t *inputs)
{
	CUevent e0, e1;
	cuEventCreate(&e0, CU_EVENT_DEFAULT);
	cuEventCreate(&e1, CU_EVENT_DEFAULT);
	harness_phase(HARNESS_PH_KERNEL_RUNS);
	cuEventRecord(e0, h->stream);
	int rc = harness_prog_launch(h, p, bufs);
	cuEventRecord(e1, h->stream);
	if (!rc)
		rc = harness_sync(h, "running the kernel (first run)");
	if (rc) {
		cuEventDestroy(e0);
		cuEventDestroy(e1);
		return rc;
	}
	harness_phase(HARNESS_PH_DOWNLOAD);
	float ms = 0;
	cuEventElapsedTime(&ms, e0, e1);
	cuEventDestroy(e0);
	cuEventDestroy(e1);
	json_object_set_new(tr, "kernel_ms", json_real(ms));
	for (size_t t = 0; t < h->s->tensors_len; t++)
		if (h->s->tensors[t].role != SPEC_ROLE_INPUT &&
		    (rc = harness_download_into(h, bufs, t, first_out[t])))
			return rc;
	if ((rc = harness_check_guards(h, bufs, guards)) < 0 ||
	    (rc = harness_check_inputs(h, bufs, inputs)) < 0)
		return rc;
	return 0;
}

/* More launches on the same input, then a second run with the other
 * poison: state kept across launches (a __device__ counter, a cached
 * result) shows up in the second run, whose outputs go to second. */
static int second_run(struct harness *h, struct harness_prog *p, struct harness_buf *bufs,
		      int extra, int *launches, void *const *second, json_t *guards, json_t *inputs)
{
	int rc = 0;
	for (int k = 0; k < extra && !rc; k++) {
		harness_phase(HARNESS_PH_UPLOAD);
		if (!(rc = harness_bufs_restore_inout(h, bufs))) {
			harness_phase(HARNESS_PH_KERNEL_RUNS);
			rc = harness_prog_launch(h, p, bufs);
		}
		(*launches)++;
	}
	harness_phase(HARNESS_PH_KERNEL_RUNS);
	if (!rc)
		rc = harness_sync(h, "running the kernel (repeated launches)");
	harness_phase(HARNESS_PH_UPLOAD);
	if (!rc && !(rc = harness_bufs_restore_inout(h, bufs)) &&
	    !(rc = harness_bufs_poison(h, bufs, 1))) {
		harness_phase(HARNESS_PH_KERNEL_RUNS);
		if (!(rc = harness_prog_launch(h, p, bufs)))
			rc = harness_sync(h, "running the kernel (second run)");
	}
	(*launches)++;
	harness_phase(HARNESS_PH_DOWNLOAD);
	if (rc)
		return rc;
	for (size_t t = 0; t < h->s->tensors_len && !rc; t++)
		if (h->s->tensors[t].role != SPEC_ROLE_INPUT)
			rc = harness_download_into(h, bufs, t, second[t]);
	if (!rc && (rc = harness_check_guards(h, bufs, guards)) >= 0 &&
	    (rc = harness_check_inputs(h, bufs, inputs)) >= 0)
		rc = 0;
	return rc;
}

/* A row's buffers: the device tensors and the host copies of each
 * output's two runs, allocated at its first trial and reused by the
 * others (every trial rewrites all of them: inputs from its seed, guard
 * canaries, poisoned outputs), so only the first trial faults in pages. */
struct row_bufs {
	struct harness_buf bufs[SPEC_MAX_TENSORS];
	void *first[SPEC_MAX_TENSORS], *second[SPEC_MAX_TENSORS];
	int ready;
};

static int row_bufs_alloc(struct harness *h, struct row_bufs *rb)
{
	int rc = harness_bufs_alloc(h, rb->bufs);
	for (size_t t = 0; t < h->s->tensors_len && !rc; t++) {
		if (h->s->tensors[t].role == SPEC_ROLE_INPUT)
			continue;
		uint64_t bytes = rb->bufs[t].bytes;
		if (!(rb->first[t] = mem_alloc_big(bytes)) ||
		    !(rb->second[t] = mem_alloc_big(bytes)))
			rc = harness_host_oom(h, "downloading the outputs", 2 * bytes);
	}
	rb->ready = 1;
	return rc;
}

/* Frees rb's host copies, and its device buffers unless the context
 * faulted (then exiting releases them). */
static void row_bufs_free(struct harness *h, struct row_bufs *rb)
{
	for (size_t t = 0; t < SPEC_MAX_TENSORS; t++) {
		free(rb->first[t]);
		free(rb->second[t]);
		rb->first[t] = rb->second[t] = NULL;
	}
	if (rb->ready && !json_object_get(h->report, "fault"))
		harness_bufs_free(h, rb->bufs);
	rb->ready = 0;
}

/* One trial: a fresh module, the row's buffers (rb) with inputs from
 * seed; the first run with poison A; extra launches; the second run with
 * poison B; compare. */
static int check_trial(struct harness *h, const char *cubin, const struct spec_launch *launch,
		       size_t launch_len, struct row_bufs *rb, uint64_t seed, int trial, int runs,
		       int extra, const char *prefix, json_t *tr)
{
	struct harness_prog p;
	struct harness_buf *bufs = rb->bufs;
	harness_phase(HARNESS_PH_MODULE_LOAD);
	int rc = harness_prog_load(h, &p, cubin, launch, launch_len);
	harness_phase(HARNESS_PH_UPLOAD);
	if (rc) {
		harness_phase(HARNESS_PH_NONE);
		return rc;
	}
	json_t *guards = json_array(), *inputs = json_array(), *outs = json_object();
	json_object_set_new(tr, "guard_violations", guards);
	json_object_set_new(tr, "inputs_modified", inputs);
	json_object_set_new(tr, "outputs", outs);
	int launches = 0;
	if ((!rb->ready && (rc = row_bufs_alloc(h, rb))) ||
	    (rc = harness_bufs_fill_inputs(h, bufs, seed)) || (rc = harness_bufs_canary(h, bufs)) ||
	    (rc = harness_bufs_poison(h, bufs, 0)))
		goto out;
	launches++;
	if ((rc = first_run(h, &p, bufs, rb->first, tr, guards, inputs)))
		goto out;
	if (runs > 1 &&
	    (rc = second_run(h, &p, bufs, extra, &launches, rb->second, guards, inputs)))
		goto out;
	for (size_t t = 0; t < h->s->tensors_len && !rc; t++)
		if (h->s->tensors[t].role != SPEC_ROLE_INPUT)
			rc = compare_runs(h, t, rb->first[t], runs > 1 ? rb->second[t] : NULL,
					  prefix, trial, outs);
out:
	harness_phase(HARNESS_PH_NONE);
	json_object_set_new(tr, "launches", json_integer(launches));
	if (!json_object_get(h->report, "fault"))
		harness_prog_unload(&p);
	return rc;
}

/* Check mode. job.json: program (candidate | reference | baseline),
 * module, runs, extra_launches and rows: [{sizes: [...], seeds: [hex...],
 * out_prefix}]. Each row's report goes to the daemon as one JSON line as
 * soon as the row is done ({"row": i, "trials": [...]}, with "fault" or
 * "error" when it stopped there), so a later hang or crash loses nothing
 * already measured; the final line is the whole-run report. */
int harness_mode_check(struct harness *h)
{
	const json_t *rows = json_object_get(h->job, "rows");
	const char *which = json_string_value(json_object_get(h->job, "program"));
	const char *cubin = json_string_value(json_object_get(h->job, "module"));
	int runs = (int)json_integer_value(json_object_get(h->job, "runs"));
	int extra = (int)json_integer_value(json_object_get(h->job, "extra_launches"));
	if (!json_is_array(rows) || !cubin || !which) {
		json_object_set_new(h->report, "error",
				    json_string("job.json: rows, module and program are required"));
		return KF_EINVAL;
	}
	const struct spec_launch *launch = h->s->launch;
	size_t launch_len = h->s->launch_len;
	if (strcmp(which, "reference") == 0) {
		launch = h->s->ref.launch;
		launch_len = h->s->ref.launch_len;
	} else if (strcmp(which, "baseline") == 0) {
		launch = h->s->baseline.launch;
		launch_len = h->s->baseline.launch_len;
	}
	if (!launch_len) {
		json_object_set_new(
			h->report, "error",
			json_string("job.json: the spec has no launch list for this program"));
		return KF_EINVAL;
	}
	for (size_t r = 0; r < json_array_size(rows); r++) {
		const json_t *row = json_array_get(rows, r);
		const json_t *sz = json_object_get(row, "sizes");
		const json_t *seeds = json_object_get(row, "seeds");
		const char *prefix = json_string_value(json_object_get(row, "out_prefix"));
		json_t *line = json_pack("{s:I, s:[]}", "row", (json_int_t)r, "trials");
		json_t *trials = json_object_get(line, "trials");
		struct row_bufs rb = {0};
		int rc = 0;
		struct kf_err err = {0};
		if (!json_is_array(sz) || json_array_size(sz) != h->s->vars_len ||
		    !json_is_array(seeds) || !prefix) {
			json_object_set_new(h->report, "error",
					    json_string("job.json: each row needs sizes (every "
							"variable), seeds and out_prefix"));
			rc = KF_EINVAL;
		} else {
			for (size_t k = 0; k < h->s->vars_len; k++)
				h->vals[k] = json_integer_value(json_array_get(sz, k));
			struct spec_limits lim;
			spec_limits_default(&lim);
			lim.max_device_bytes = UINT64_MAX; /* the daemon applied its cap */
			lim.max_host_bytes = UINT64_MAX;
			if ((rc = spec_bind(h->s, h->vals, &lim, "job", &h->b, &err)))
				json_object_set_new(h->report, "error", json_string(err.msg));
		}
		for (size_t k = 0; !rc && k < json_array_size(seeds); k++) {
			uint64_t seed;
			if (harness_parse_seed(json_array_get(seeds, k), &seed)) {
				json_object_set_new(h->report, "error",
						    json_string("job.json: bad seed"));
				rc = KF_EINVAL;
				break;
			}
			json_t *tr = json_object();
			json_array_append_new(trials, tr);
			json_object_set_new(tr, "seed", json_incref(json_array_get(seeds, k)));
			harness_watchdog_arm((long)r);
			rc = check_trial(h, cubin, launch, launch_len, &rb, seed, (int)k,
					 runs < 1 ? 1 : runs, extra < 0 ? 0 : extra, prefix, tr);
			harness_watchdog_disarm();
		}
		row_bufs_free(h, &rb);
		json_object_set_new(line, "phases", harness_phases_json());
		/* A fault or error belongs to the row it happened in. */
		if (rc) {
			if (json_object_get(h->report, "fault"))
				json_object_set(line, "fault", json_object_get(h->report, "fault"));
			if (json_object_get(h->report, "error"))
				json_object_set(line, "error", json_object_get(h->report, "error"));
		}
		harness_send_line(h, line);
		json_decref(line);
		if (rc)
			return rc;
	}
	return 0;
}
