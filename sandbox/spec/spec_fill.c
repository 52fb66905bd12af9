/* spec_fill: input values, reproducible from (seed, tensor index, element
 * index) alone so the harness and the daemon's reference generate the same
 * data independently; and the default tolerance per dtype. */
#include "sandbox/spec/spec.h"

#include <math.h>
#include <pthread.h>
#include <unistd.h>

/* --- inputs ------------------------------------------------------------ */

uint64_t spec_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static double u01(uint64_t key, uint64_t ctr)
{
	/* 53 random bits -> [0, 1). */
	return (double)(spec_mix64(key ^ spec_mix64(ctr)) >> 11) * 0x1p-53;
}

struct fill_job {
	const struct spec_tensor *t;
	uint64_t key;
	int64_t init_max;
	void *buf;
	uint64_t lo, hi; /* lo is even, so Box-Muller pairs never straddle jobs */
};

static void fill_range(const struct fill_job *f)
{
	const struct spec_tensor *t = f->t;
	uint64_t key = f->key;
	int64_t init_max = f->init_max;
	void *buf = f->buf;
	int is_float = dtype_is_float(t->dtype);
	int is_unsigned = t->dtype == KF_DT_U8;
	for (uint64_t i = f->lo; i < f->hi; i++) {
		double v;
		switch (t->init) {
		case SPEC_INIT_NORMAL:
			if (is_float) {
				/* Box-Muller on the counters of pair i/2: its cosine
				 * for even i, its sine for odd i (one pair of
				 * transcendentals per two elements). */
				uint64_t j = i & ~1ull;
				double a = u01(key, j), b = u01(key, j + 1);
				double r = sqrt(-2.0 * log(1.0 - a)), th = 6.283185307179586 * b;
				v = r * cos(th);
				if (i + 1 < f->hi && !(i & 1)) {
					dtype_store(t->dtype, buf, (size_t)i, v);
					i++;
					v = r * sin(th);
				} else if (i & 1) {
					v = r * sin(th);
				}
			} else {
				v = floor(u01(key, i) * 17.0) - (is_unsigned ? 0 : 8);
			}
			break;
		case SPEC_INIT_UNIFORM:
			v = is_float ? 2.0 * u01(key, i) - 1.0
				     : floor(u01(key, i) * 128.0) - (is_unsigned ? 0 : 64);
			break;
		case SPEC_INIT_UNIFORM01:
			v = is_float ? u01(key, i) : floor(u01(key, i) * 2.0);
			break;
		case SPEC_INIT_POSITIVE:
			v = is_float ? 0.5 + u01(key, i) : 1.0 + floor(u01(key, i) * 8.0);
			break;
		case SPEC_INIT_ONES: v = 1.0; break;
		case SPEC_INIT_ARANGE: v = (double)(i % 128); break;
		case SPEC_INIT_INDEX:
		default: v = floor(u01(key, i) * (double)(init_max > 0 ? init_max : 1)); break;
		}
		dtype_store(t->dtype, buf, (size_t)i, v);
	}
}

static void *fill_thread(void *arg)
{
	fill_range(arg);
	return NULL;
}

#define FILL_THREADS_MAX 16
/* Elements per thread at least: a thread's start (tens of microseconds)
 * stays small beside filling them (about 1 ms). */
#define FILL_PER_THREAD_MIN (1u << 15)

int64_t spec_init_max(const struct spec *s, size_t t, const int64_t *vals)
{
	int64_t v = 0;
	if (s->tensors[t].init_max_expr) {
		struct expr_env env = spec_env(s, vals);
		if (expr_eval(s->tensors[t].init_max_expr, &env, &v, NULL))
			v = 1;
	}
	return v;
}

void spec_fill(const struct spec_tensor *t, size_t tensor_index, uint64_t seed, int64_t init_max,
	       void *buf, uint64_t elems)
{
	uint64_t key = spec_mix64(seed ^ spec_mix64(0x74656e736f72ull + tensor_index));
	struct fill_job jobs[FILL_THREADS_MAX];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t most = elems / FILL_PER_THREAD_MIN;
	int n = cpus > FILL_THREADS_MAX ? FILL_THREADS_MAX : cpus > 1 ? (int)cpus : 1;
	if ((uint64_t)n > most)
		n = most > 1 ? (int)most : 1;
	uint64_t chunk = ((elems + (uint64_t)n - 1) / (uint64_t)n + 1) & ~1ull;
	pthread_t th[FILL_THREADS_MAX];
	int started[FILL_THREADS_MAX] = {0};
	for (int k = 0; k < n; k++) {
		uint64_t lo = (uint64_t)k * chunk, hi = lo + chunk;
		jobs[k] = (struct fill_job){
			t, key, init_max, buf, lo < elems ? lo : elems, hi < elems ? hi : elems};
		if (k > 0)
			started[k] = pthread_create(&th[k], NULL, fill_thread, &jobs[k]) == 0;
	}
	fill_range(&jobs[0]);
	for (int k = 1; k < n; k++) {
		if (started[k])
			pthread_join(th[k], NULL);
		else
			fill_range(&jobs[k]);
	}
}

void spec_default_tolerance(enum kf_dtype dt, double *atol, double *rtol)
{
	switch (dt) {
	case KF_DT_F32:
		*atol = 1e-4;
		*rtol = 1e-4;
		break;
	case KF_DT_F16:
		*atol = 1e-2;
		*rtol = 1e-2;
		break;
	case KF_DT_BF16:
		*atol = 2e-2;
		*rtol = 2e-2;
		break;
	case KF_DT_F64:
		*atol = 1e-10;
		*rtol = 1e-10;
		break;
	default:
		*atol = 0;
		*rtol = 0;
		break;
	}
}
