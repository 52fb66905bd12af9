/* dtype: the element types kernel specs and op templates use, their sizes
 * and names, and exact conversions between their storage and double.
 * Plain C, no CUDA: shared by the daemon, the harness and the references. */
#ifndef KF_DTYPE_H
#define KF_DTYPE_H

#include <stddef.h>
#include <stdint.h>

enum kf_dtype {
	KF_DT_F32 = 0,
	KF_DT_F16,
	KF_DT_BF16,
	KF_DT_F64,
	KF_DT_I8,
	KF_DT_U8,
	KF_DT_I32,
	KF_DT_I64,
	KF_DT_COUNT
};

/* Returns the dtype named s ("f32", "bf16", ...) or -1 when unknown. */
int dtype_parse(const char *s);

/* Returns the static name of dt ("f32"...), "?" when out of range. */
const char *dtype_name(enum kf_dtype dt);

/* Bytes per element of dt. */
size_t dtype_bytes(enum kf_dtype dt);

/* 1 for f32/f16/bf16/f64, 0 for the integer types. */
int dtype_is_float(enum kf_dtype dt);

/* Reads element i of the buffer p (stored as dt) as a double; exact. */
double dtype_load(enum kf_dtype dt, const void *p, size_t i);

/* Reads elements [lo, hi) of p (stored as dt) into out[0 .. hi-lo) as
 * doubles; the same values as dtype_load, in one loop per dtype. p, out:
 * borrowed. */
void dtype_load_range(enum kf_dtype dt, const void *p, size_t lo, size_t hi, double *out);

/* Stores v into element i of p as dt, rounding to nearest even for floats
 * and saturating for integers (NaN stores as 0 for integers). */
void dtype_store(enum kf_dtype dt, void *p, size_t i, double v);

/* IEEE half and bfloat16 conversions (round to nearest even). */
uint16_t dtype_f32_to_f16(float f);
float dtype_f16_to_f32(uint16_t h);
uint16_t dtype_f32_to_bf16(float f);
float dtype_bf16_to_f32(uint16_t b);

#endif
