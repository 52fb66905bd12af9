/* cli_eval: shared between cli_eval.c (`kforge eval`) and cli_eval_tasks.c
 * (the task set). Included by no one else. */
#ifndef KF_CLI_EVAL_H
#define KF_CLI_EVAL_H

#include <jansson.h>
#include <stddef.h>

#include "base/kf_err.h"

/* Writes the task directory (given, else $KFORGE_EVAL_TASKS, else the
 * source tree's kernels/eval beside build/, else share/kforge/eval) into
 * out. Returns 0 or -1 (does not fit). */
int cli_eval_tasks_dir(const char *given, char *out, size_t cap);

/* Loads every .json file of DIR (in name order) into *tasks (new array), each task
 * checked: id, spec, reference, baseline.kind, description and math (an op
 * task gets them from the op template), plus "file". Returns 0, KF_EINVAL
 * naming the file, the task and the field, or KF_ENOTFOUND (no tasks). */
int cli_eval_load(const char *dir, json_t **tasks, struct kf_err *err)
	__attribute__((warn_unused_result));

/* The task with id in tasks, borrowed, or NULL. */
const json_t *cli_eval_find(const json_t *tasks, const char *id);

#endif
