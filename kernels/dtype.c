/* dtype: element types and exact conversions; see dtype.h. */
#include "kernels/dtype.h"

#include <math.h>
#include <string.h>

static const struct {
	const char *name;
	size_t bytes;
	int is_float;
} DTYPES[KF_DT_COUNT] = {
	[KF_DT_F32] = {"f32", 4, 1}, [KF_DT_F16] = {"f16", 2, 1}, [KF_DT_BF16] = {"bf16", 2, 1},
	[KF_DT_F64] = {"f64", 8, 1}, [KF_DT_I8] = {"i8", 1, 0},	  [KF_DT_U8] = {"u8", 1, 0},
	[KF_DT_I32] = {"i32", 4, 0}, [KF_DT_I64] = {"i64", 8, 0},
};

int dtype_parse(const char *s)
{
	if (!s)
		return -1;
	for (int i = 0; i < KF_DT_COUNT; i++)
		if (strcmp(s, DTYPES[i].name) == 0)
			return i;
	return -1;
}

const char *dtype_name(enum kf_dtype dt)
{
	return (unsigned)dt < KF_DT_COUNT ? DTYPES[dt].name : "?";
}

size_t dtype_bytes(enum kf_dtype dt)
{
	return (unsigned)dt < KF_DT_COUNT ? DTYPES[dt].bytes : 0;
}

int dtype_is_float(enum kf_dtype dt)
{
	return (unsigned)dt < KF_DT_COUNT && DTYPES[dt].is_float;
}

uint16_t dtype_f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000u;
	uint32_t mant = x & 0x7fffffu;
	int exp = (int)((x >> 23) & 0xff);

	if (exp == 0xff) /* Inf or NaN (keep NaN quiet and nonzero) */
		return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
	int e = exp - 127 + 15;
	if (e >= 0x1f)
		return (uint16_t)(sign | 0x7c00u);
	if (e <= 0) {
		if (e < -10)
			return (uint16_t)sign;
		mant |= 0x800000u;
		int shift = 14 - e;
		uint32_t half = mant >> shift;
		uint32_t rem = mant & ((1u << shift) - 1);
		uint32_t mid = 1u << (shift - 1);
		if (rem > mid || (rem == mid && (half & 1)))
			half++;
		return (uint16_t)(sign | half);
	}
	uint32_t h = ((uint32_t)e << 10) | (mant >> 13);
	uint32_t rem = mant & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
		h++; /* may carry into the exponent, which is still right */
	return (uint16_t)(sign | h);
}

float dtype_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t mant = h & 0x3ffu;
	uint32_t x;

	if (exp == 0x1f) {
		x = sign | 0x7f800000u | (mant << 13);
	} else if (exp == 0) {
		if (mant == 0) {
			x = sign;
		} else {
			float f = ldexpf((float)mant, -24);
			memcpy(&x, &f, 4);
			x |= sign;
		}
	} else {
		x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
	}
	float f;
	memcpy(&f, &x, 4);
	return f;
}

uint16_t dtype_f32_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40u);
	x += 0x7fffu + ((x >> 16) & 1u);
	return (uint16_t)(x >> 16);
}

float dtype_bf16_to_f32(uint16_t b)
{
	uint32_t x = (uint32_t)b << 16;
	float f;
	memcpy(&f, &x, 4);
	return f;
}

static double saturate(double v, double lo, double hi)
{
	if (isnan(v))
		return 0;
	v = nearbyint(v);
	return v < lo ? lo : v > hi ? hi : v;
}

double dtype_load(enum kf_dtype dt, const void *p, size_t i)
{
	switch (dt) {
	case KF_DT_F32: return ((const float *)p)[i];
	case KF_DT_F16: return dtype_f16_to_f32(((const uint16_t *)p)[i]);
	case KF_DT_BF16: return dtype_bf16_to_f32(((const uint16_t *)p)[i]);
	case KF_DT_F64: return ((const double *)p)[i];
	case KF_DT_I8: return ((const int8_t *)p)[i];
	case KF_DT_U8: return ((const uint8_t *)p)[i];
	case KF_DT_I32: return ((const int32_t *)p)[i];
	case KF_DT_I64: return (double)((const int64_t *)p)[i];
	default: return NAN;
	}
}

void dtype_load_range(enum kf_dtype dt, const void *p, size_t lo, size_t hi, double *out)
{
	size_t n = hi > lo ? hi - lo : 0;
	switch (dt) {
	case KF_DT_BF16: {
		const uint16_t *b = (const uint16_t *)p + lo;
		for (size_t i = 0; i < n; i++)
			out[i] = dtype_bf16_to_f32(b[i]);
		break;
	}
	case KF_DT_F32: {
		const float *f = (const float *)p + lo;
		for (size_t i = 0; i < n; i++)
			out[i] = f[i];
		break;
	}
	case KF_DT_F16: {
		const uint16_t *h = (const uint16_t *)p + lo;
		for (size_t i = 0; i < n; i++)
			out[i] = dtype_f16_to_f32(h[i]);
		break;
	}
	default:
		for (size_t i = 0; i < n; i++)
			out[i] = dtype_load(dt, p, lo + i);
		break;
	}
}

void dtype_store(enum kf_dtype dt, void *p, size_t i, double v)
{
	switch (dt) {
	case KF_DT_F32: ((float *)p)[i] = (float)v; break;
	/* Via float: double->float->half can double-round, but only for values
	 * exactly between two halves after the first rounding; harmless for
	 * generated test data, and the references compare in double. */
	case KF_DT_F16: ((uint16_t *)p)[i] = dtype_f32_to_f16((float)v); break;
	case KF_DT_BF16: ((uint16_t *)p)[i] = dtype_f32_to_bf16((float)v); break;
	case KF_DT_F64: ((double *)p)[i] = v; break;
	case KF_DT_I8: ((int8_t *)p)[i] = (int8_t)saturate(v, -128, 127); break;
	case KF_DT_U8: ((uint8_t *)p)[i] = (uint8_t)saturate(v, 0, 255); break;
	case KF_DT_I32:
		((int32_t *)p)[i] = (int32_t)saturate(v, -2147483648.0, 2147483647.0);
		break;
	case KF_DT_I64:
		((int64_t *)p)[i] =
			(int64_t)saturate(v, -9.2233720368547758e18, 9.2233720368547748e18);
		break;
	default: break;
	}
}
