/* fuzz_spec: libFuzzer target for the kernel spec parser (sandbox/spec/):
 * the op shorthand, every field, the caps. The input is spec JSON text. A
 * refusal must carry KF_EINVAL or KF_ETOOBIG and a message; an accepted
 * spec is then used the way check and bench use it: every size row bound,
 * every launch's dimensions and "when" evaluated, the odd size derived and
 * bound, and small tensors filled from a seed (ASan sees every write). */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/op.h"
#include "sandbox/spec/spec.h"

/* Tensors up to this many elements are filled (a larger fill only costs time). */
#define FILL_MAX_ELEMS 4096

static void use_launches(const struct spec *s, const struct spec_launch *l, size_t n,
			 const int64_t *vals)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t grid[3], block[3], shared;
		struct kf_err err = {0};
		int runs = 0;
		if (spec_launch_dims(s, &l[i], vals, "launch", grid, block, &shared, &err) == 0) {
			for (int d = 0; d < 3; d++)
				assert(grid[d] >= 1 && block[d] >= 1 && block[d] <= 1024);
		} else {
			assert(err.code == KF_EINVAL && err.msg[0]);
		}
		kf_err_clear(&err);
		if (spec_launch_runs(s, &l[i], vals, &runs, &err))
			assert(err.code == KF_EINVAL && err.msg[0]);
	}
}

static void use_row(const struct spec *s, const struct spec_limits *lim, const int64_t *vals)
{
	struct spec_bound b;
	struct kf_err err = {0};
	int rc = spec_bind(s, vals, lim, "sizes[0]", &b, &err);
	if (rc) {
		assert((rc == KF_EINVAL || rc == KF_ETOOBIG) && err.msg[0]);
		return;
	}
	assert(b.device_bytes <= lim->max_device_bytes);
	use_launches(s, s->launch, s->launch_len, vals);
	use_launches(s, s->ref.launch, s->ref.launch_len, vals);
	use_launches(s, s->baseline.launch, s->baseline.launch_len, vals);
	for (size_t t = 0; t < s->tensors_len; t++) {
		assert(b.elems[t] <= lim->max_tensor_elems);
		if (b.elems[t] == 0 || b.elems[t] > FILL_MAX_ELEMS)
			continue;
		assert(b.bytes[t] == b.elems[t] * dtype_bytes(s->tensors[t].dtype));
		void *buf = malloc(b.bytes[t]);
		if (!buf)
			continue;
		int64_t init_max = s->tensors[t].init_max;
		struct expr_env env = spec_env(s, vals);
		if (s->tensors[t].init_max_expr &&
		    expr_eval(s->tensors[t].init_max_expr, &env, &init_max, NULL))
			init_max = 0;
		spec_fill(&s->tensors[t], t, 42, init_max, buf, b.elems[t]);
		free(buf);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spec_limits lim;
	struct spec *s = NULL;
	struct kf_err err = {0};

	spec_limits_default(&lim);
	lim.max_device_bytes = 1u << 30; /* smaller caps reach the cap paths sooner */
	int rc = spec_parse_text((const char *)data, size, &lim, op_find, &s, &err);
	if (rc) {
		assert(rc == KF_EINVAL || rc == KF_ETOOBIG);
		assert(err.code == rc && err.msg[0] && s == NULL);
		return 0;
	}
	assert(s->vars_len <= SPEC_MAX_VARS && s->tensors_len <= SPEC_MAX_TENSORS);
	assert(s->launch_len >= 1 && s->launch_len <= SPEC_MAX_LAUNCHES);
	for (size_t r = 0; r < s->sizes_len; r++)
		use_row(s, &lim, &s->sizes[r * s->vars_len]);
	int64_t odd[SPEC_MAX_VARS];
	kf_err_clear(&err);
	rc = spec_odd_size(s, &lim, (uint64_t)size, odd, &err);
	if (rc == 0)
		use_row(s, &lim, odd);
	else
		assert(rc == KF_ENOTFOUND && err.msg[0]);
	spec_free(s);
	return 0;
}
