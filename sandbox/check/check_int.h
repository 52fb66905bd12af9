/* check_int: internals shared by check.c (preparing, the check),
 * check_harness.c (files, jail, harness runs), check_ref.c (references) and
 * check_compare.c (comparison, safeguards). Included by no one else. */
#ifndef KF_CHECK_INT_H
#define KF_CHECK_INT_H

#include <stddef.h>

#include "sandbox/check/check.h"

/* The tolerance output tensor t of s is judged with: the spec's, or the
 * default for its dtype. */
void check_tolerance_of(const struct spec *s, size_t t, double *atol, double *rtol);

/* Elements per chunk of the parallel loops over a tensor (par_for). */
#define CHECK_PAR_CHUNK (1u << 16)

/* Converts n elements of raw (stored as dt) to doubles in out, on the
 * cores (par_for); the values of dtype_load. raw, out: borrowed. */
void check_to_double(enum kf_dtype dt, const void *raw, uint64_t n, double *out);

#endif
