/* cli_eval_tasks: the eval task set (the .json files of kernels/eval: data): finding
 * it, loading every file, and checking each task's fields so a malformed
 * file is named with its task and field. An op task takes its description
 * and math from the op template (kernels/op.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "kernels/op.h"
#include "server/cli/cli_eval.h"

#define TASK_FILE_MAX_BYTES (4u << 20)
#define TASK_ID_MAX	    64

/* Where the tasks are: --tasks DIR, $KFORGE_EVAL_TASKS, the source tree
 * beside build/kforge, or share/kforge/eval beside an installed bin/. */
int cli_eval_tasks_dir(const char *given, char *out, size_t cap)
{
	char exe[1024], probe[1200];
	const char *env = getenv("KFORGE_EVAL_TASKS");

	if (given || env)
		return snprintf(out, cap, "%s", given ? given : env) < (int)cap ? 0 : -1;
	if (fs_exe_dir(exe, sizeof(exe)) != 0)
		return -1;
	snprintf(probe, sizeof(probe), "%s/../kernels/eval", exe);
	if (access(probe, R_OK) == 0)
		return snprintf(out, cap, "%s", probe) < (int)cap ? 0 : -1;
	snprintf(probe, sizeof(probe), "%s/../share/kforge/eval", exe);
	return snprintf(out, cap, "%s", probe) < (int)cap ? 0 : -1;
}

static int bad(struct kf_err *err, const char *file, const json_t *task, size_t i,
	       const char *field, const char *why)
{
	const char *id = json_string_value(json_object_get(task, "id"));

	return kf_err_set(err, KF_EINVAL, "%s: task %s%s%s (#%zu): field '%s': %s", file,
			  id ? "'" : "", id ? id : "without an id", id ? "'" : "", i, field, why);
}

static int id_ok(const char *id)
{
	size_t n = id ? strlen(id) : 0;

	if (n == 0 || n > TASK_ID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9') ||
		      id[i] == '_'))
			return 0;
	return 1;
}

/* Checks task i of file and fills in an op task's description and math.
 * seen: the ids so far (object). */
static int task_check(const char *file, json_t *task, size_t i, json_t *seen, struct kf_err *err)
{
	const json_t *ref = json_object_get(task, "reference");
	const json_t *spec = json_object_get(task, "spec");
	const json_t *base = json_object_get(task, "baseline");
	const char *id = json_string_value(json_object_get(task, "id"));
	const char *kind = json_string_value(json_object_get(base, "kind"));
	const struct op_template *op;

	if (!json_is_object(task))
		return bad(err, file, NULL, i, "tasks[]", "is not an object");
	if (!id_ok(id))
		return bad(err, file, task, i, "id",
			   "want lowercase letters, digits and _ (at most 64)");
	if (json_object_get(seen, id))
		return bad(err, file, task, i, "id", "is used twice in the task set");
	json_object_set_new(seen, id, json_true());
	if (!json_is_object(spec))
		return bad(err, file, task, i, "spec",
			   "missing or not an object (the spec skeleton)");
	if (!json_is_object(ref) ||
	    (!!json_object_get(ref, "op") + !!json_object_get(ref, "torch") +
		     !!json_object_get(ref, "source") !=
	     1))
		return bad(err, file, task, i, "reference",
			   "want exactly one of {\"op\"}, {\"torch\"} or {\"source\", \"launch\"}");
	if (!kind || (strcmp(kind, "op") && strcmp(kind, "none") && strcmp(kind, "source")))
		return bad(err, file, task, i, "baseline.kind", "want op, source or none");
	if (json_is_string(json_object_get(task, "op"))) {
		op = op_find(json_string_value(json_object_get(task, "op")));
		if (!op)
			return bad(err, file, task, i, "op", "names no built-in op (kforge ops)");
		json_object_set_new(task, "description", json_string(op->description));
		json_object_set_new(task, "math", json_string(op->summary));
	}
	if (!json_is_string(json_object_get(task, "description")))
		return bad(err, file, task, i, "description",
			   "missing: what the kernel computes, in words");
	if (!json_is_string(json_object_get(task, "math")))
		return bad(err, file, task, i, "math", "missing: the formula, one line");
	json_object_set_new(task, "file", json_string(file));
	return 0;
}

/* Loads one file's tasks into all. */
static int load_file(const char *dir, const char *name, json_t *all, json_t *seen,
		     struct kf_err *err)
{
	char path[2048];
	json_error_t je;
	json_t *doc, *tasks, *t;
	size_t i;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	doc = json_load_file(path, 0, &je);
	if (!doc)
		return kf_err_set(err, KF_EINVAL, "%s: line %d: %s", path, je.line, je.text);
	tasks = json_object_get(doc, "tasks");
	if (!json_is_array(tasks))
		rc = kf_err_set(err, KF_EINVAL, "%s: field 'tasks': want an array of tasks", path);
	json_array_foreach(tasks, i, t) {
		if (rc || (rc = task_check(path, t, i, seen, err)))
			break;
		json_array_append(all, t);
	}
	json_decref(doc);
	return rc;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int cli_eval_load(const char *dir, json_t **tasks, struct kf_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char *names[256];
	size_t n = 0;
	json_t *seen = json_object();
	int rc = 0;

	*tasks = json_array();
	if (!d)
		rc = kf_err_set(err, KF_ENOTFOUND,
				"no eval tasks at %s: give --tasks DIR or set KFORGE_EVAL_TASKS",
				dir);
	while (d && (e = readdir(d)) && n < sizeof(names) / sizeof(names[0])) {
		size_t len = strlen(e->d_name);
		if (len > 5 && !strcmp(e->d_name + len - 5, ".json"))
			names[n++] = strdup(e->d_name);
	}
	if (d)
		closedir(d);
	qsort(names, n, sizeof(names[0]), by_name);
	for (size_t i = 0; i < n; i++) {
		if (!rc && names[i])
			rc = load_file(dir, names[i], *tasks, seen, err);
		free(names[i]);
	}
	if (!rc && json_array_size(*tasks) == 0)
		rc = kf_err_set(err, KF_ENOTFOUND, "no tasks in %s/*.json", dir);
	json_decref(seen);
	if (rc) {
		json_decref(*tasks);
		*tasks = NULL;
	}
	return rc;
}

const json_t *cli_eval_find(const json_t *tasks, const char *id)
{
	size_t i;
	json_t *t;

	json_array_foreach(tasks, i, t)
		if (!strcmp(json_string_value(json_object_get(t, "id")), id))
			return t;
	return NULL;
}
