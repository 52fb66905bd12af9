/* check_int: internals shared by check.c (preparing, the check),
 * check_harness.c (files, jail, harness runs), check_ref.c (references) and
 * check_compare.c (comparison, safeguards). Included by no one else. */
#ifndef KF_CHECK_INT_H
#define KF_CHECK_INT_H

#include <stddef.h>

#include "sandbox/check/check.h"

struct jail;

/* The first readable of: $env (as given), <exe dir>/rel1, <exe dir>/rel2
 * (resolved with realpath; either may be NULL), into out (cap bytes).
 * Returns 0, or -1 when none is. */
int check_find_file(const char *env, const char *rel1, const char *rel2, char *out, size_t cap);

/* The process-wide jail for env's sandbox mode (opened on first use, owned
 * by env until check_env_fini; thread-safe) in *out (borrowed). Returns 0 or the codes of
 * jail_open / jail_usable. */
int check_get_jail(struct check_env *env, struct jail **out, struct kf_err *err);

/* The tolerance output tensor t of s is judged with: the spec's, or the
 * default for its dtype. */
void check_tolerance_of(const struct spec *s, size_t t, double *atol, double *rtol);

#endif
