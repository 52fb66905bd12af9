/* kforge-harness: runs a kernel spec's launch list on the GPU for the daemon.
 * Usage: kforge-harness --job DIR --report-fd N
 * DIR holds spec.json (the expanded spec), job.json (mode, sizes, seeds,
 * module paths) and the modules; candidate outputs are written there as raw
 * files. The structured report goes to fd N, never stdout (kernel printf
 * lands there, captured and capped by the jail). This file: job loading,
 * buffers with guard bands, launches, and the check mode. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness_int.h"

/* Poison patterns per dtype: A and B, both NaN for floats. Only an element
 * the kernel never wrote holds A after the first run and B after the
 * second. */
static const uint32_t POISON32[2] = {0x7fa5a5a5u, 0xffb4b4b4u};
static const uint16_t POISON16F[2] = {0x7e5au, 0xfe6bu};	/* f16 NaNs */
static const uint16_t POISON16B[2] = {0x7fa5u, 0xffb6u};	/* bf16 NaNs */
static const uint32_t POISON64[2] = {0x7ff87ff8u, 0xfff9fff9u}; /* f64 NaN halves */
static const uint8_t POISON8[2] = {0xa5u, 0x5au};		/* integers */
#define CANARY_BYTE(i) ((uint8_t)(0xcbu ^ (uint8_t)((i)*37u)))

double h_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

const char *h_cu_name(CUresult r)
{
	const char *n = NULL;
	if (cuGetErrorName(r, &n) != CUDA_SUCCESS || !n)
		return "CUDA_ERROR_UNKNOWN";
	return n;
}

int h_cuda_fail(struct harness *h, CUresult r, const char *what)
{
	const char *msg = NULL;
	cuGetErrorString(r, &msg);
	if (!json_object_get(h->report, "fault"))
		json_object_set_new(h->report, "fault",
				    json_pack("{s:s, s:i, s:s, s:s}", "error", h_cu_name(r), "code",
					      (int)r, "message", msg ? msg : "", "during", what));
	return KF_EFAULT;
}

int h_write_file(const char *path, const void *data, uint64_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return KF_EIO;
	const char *p = data;
	while (len) {
		ssize_t n = write(fd, p, len > (1u << 30) ? (1u << 30) : (size_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return KF_EIO;
		}
		p += n;
		len -= (uint64_t)n;
	}
	return close(fd) ? KF_EIO : 0;
}

int h_parse_seed(const json_t *v, uint64_t *out)
{
	if (!json_is_string(v))
		return KF_EINVAL;
	char *end = NULL;
	errno = 0;
	unsigned long long x = strtoull(json_string_value(v), &end, 16);
	if (errno || !end || *end)
		return KF_EINVAL;
	*out = x;
	return 0;
}

/* --- modules and launches ---------------------------------------------- */

int h_prog_load(struct harness *h, struct hprog *p, const char *path,
		const struct spec_launch *launch, size_t launch_len)
{
	memset(p, 0, sizeof *p);
	p->path = path;
	p->launch = launch;
	p->launch_len = launch_len;
	CUresult r = cuModuleLoad(&p->mod, path);
	if (r != CUDA_SUCCESS) {
		char what[300];
		snprintf(what, sizeof what, "loading module %s (built for another arch?)", path);
		return h_cuda_fail(h, r, what);
	}
	for (size_t i = 0; i < launch_len; i++) {
		r = cuModuleGetFunction(&p->fn[i], p->mod, launch[i].kernel);
		if (r != CUDA_SUCCESS) {
			char what[300];
			snprintf(what, sizeof what,
				 "finding kernel '%s' (declare it extern \"C\" __global__)",
				 launch[i].kernel);
			h_cuda_fail(h, r, what);
			json_object_set_new(json_object_get(h->report, "fault"), "kind",
					    json_string("kernel_not_found"));
			return KF_EINVAL;
		}
	}
	return 0;
}

void h_prog_unload(struct hprog *p)
{
	if (p->mod)
		cuModuleUnload(p->mod);
	p->mod = NULL;
}

int h_prog_launch(struct harness *h, struct hprog *p, struct hbuf *bufs)
{
	for (size_t i = 0; i < p->launch_len; i++) {
		const struct spec_launch *l = &p->launch[i];
		uint32_t g[3], b[3], sb;
		struct kf_err err = {0};
		if (spec_launch_dims(h->s, l, h->vals, "launch", g, b, &sb, &err)) {
			json_object_set_new(h->report, "error", json_string(err.msg));
			return KF_EINVAL;
		}
		union {
			CUdeviceptr ptr;
			float f32;
			double f64;
			int32_t i32;
			int64_t i64;
			uint16_t u16;
		} store[SPEC_MAX_ARGS];
		void *params[SPEC_MAX_ARGS];
		for (size_t a = 0; a < l->args_len; a++) {
			const struct spec_arg *arg = &l->args[a];
			memset(&store[a], 0, sizeof store[a]);
			if (arg->kind == SPEC_ARG_TENSOR) {
				store[a].ptr = bufs[arg->index].data;
			} else if (arg->kind == SPEC_ARG_SCALAR) {
				const struct spec_scalar *sc = &h->s->scalars[arg->index];
				switch (sc->dtype) {
				case KF_DT_F32: store[a].f32 = (float)sc->value; break;
				case KF_DT_F64: store[a].f64 = sc->value; break;
				case KF_DT_I32: store[a].i32 = (int32_t)sc->ivalue; break;
				case KF_DT_I64: store[a].i64 = sc->ivalue; break;
				case KF_DT_F16:
					store[a].u16 = dtype_f32_to_f16((float)sc->value);
					break;
				case KF_DT_BF16:
					store[a].u16 = dtype_f32_to_bf16((float)sc->value);
					break;
				default: break;
				}
			} else {
				int64_t v;
				struct expr_env env = spec_env(h->s, h->vals);
				if (expr_eval(arg->expr, &env, &v, &err)) {
					json_object_set_new(h->report, "error",
							    json_string(err.msg));
					return KF_EINVAL;
				}
				if (arg->dtype == KF_DT_I64)
					store[a].i64 = v;
				else if (v < INT32_MIN || v > INT32_MAX) {
					char m[300];
					snprintf(m, sizeof m,
						 "launch %s: argument %zu ('%s') is %" PRId64
						 ", which does not fit in i32: type it '%s:i64'",
						 l->kernel, a, expr_text(arg->expr), v,
						 expr_text(arg->expr));
					json_object_set_new(h->report, "error", json_string(m));
					return KF_EINVAL;
				} else
					store[a].i32 = (int32_t)v;
			}
			params[a] = &store[a];
		}
		if (sb > 48 * 1024) {
			CUresult r = cuFuncSetAttribute(
				p->fn[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)sb);
			if (r != CUDA_SUCCESS) {
				char what[200];
				snprintf(what, sizeof what,
					 "raising the shared memory limit of %s to %u bytes",
					 l->kernel, sb);
				return h_cuda_fail(h, r, what);
			}
		}
		CUresult r = cuLaunchKernel(p->fn[i], g[0], g[1], g[2], b[0], b[1], b[2], sb,
					    h->stream, l->args_len ? params : NULL, NULL);
		if (r != CUDA_SUCCESS) {
			char what[200];
			snprintf(what, sizeof what,
				 "launching %s (grid %u,%u,%u block %u,%u,%u shared %u)", l->kernel,
				 g[0], g[1], g[2], b[0], b[1], b[2], sb);
			return h_cuda_fail(h, r, what);
		}
	}
	return 0;
}

int h_sync(struct harness *h, const char *what)
{
	CUresult r = cuStreamSynchronize(h->stream);
	return r == CUDA_SUCCESS ? 0 : h_cuda_fail(h, r, what);
}

/* --- buffers ----------------------------------------------------------- */

int h_bufs_alloc(struct harness *h, struct hbuf *bufs)
{
	memset(bufs, 0, sizeof *bufs * h->s->tensors_len);
	for (size_t t = 0; t < h->s->tensors_len; t++) {
		uint64_t bytes = h->b.bytes[t];
		uint64_t padded = (bytes + 255) & ~255ull;
		bufs[t].bytes = bytes;
		bufs[t].tail = padded - bytes + SPEC_GUARD_BYTES;
		CUresult r = cuMemAlloc(&bufs[t].base, padded + 2 * SPEC_GUARD_BYTES);
		if (r != CUDA_SUCCESS)
			return h_cuda_fail(h, r, "allocating tensors");
		bufs[t].data = bufs[t].base + SPEC_GUARD_BYTES;
	}
	return 0;
}

void h_bufs_free(struct harness *h, struct hbuf *bufs)
{
	for (size_t t = 0; t < h->s->tensors_len; t++) {
		if (bufs[t].base)
			cuMemFree(bufs[t].base);
		free(bufs[t].host);
		bufs[t].base = 0;
		bufs[t].host = NULL;
	}
}

static int64_t init_max_of(struct harness *h, size_t t)
{
	const struct spec_tensor *T = &h->s->tensors[t];
	int64_t v = 0;
	if (T->init_max_expr) {
		struct expr_env env = spec_env(h->s, h->vals);
		if (expr_eval(T->init_max_expr, &env, &v, NULL))
			v = 1;
	}
	return v;
}

int h_bufs_fill_inputs(struct harness *h, struct hbuf *bufs, uint64_t seed)
{
	for (size_t t = 0; t < h->s->tensors_len; t++) {
		const struct spec_tensor *T = &h->s->tensors[t];
		if (T->role == SPEC_ROLE_OUTPUT)
			continue;
		free(bufs[t].host);
		bufs[t].host = malloc(bufs[t].bytes ? bufs[t].bytes : 1);
		if (!bufs[t].host) {
			json_object_set_new(h->report, "error",
					    json_string("out of host memory filling inputs"));
			return KF_ENOMEM;
		}
		spec_fill(T, t, seed, init_max_of(h, t), bufs[t].host, h->b.elems[t]);
		CUresult r = cuMemcpyHtoD(bufs[t].data, bufs[t].host, bufs[t].bytes);
		if (r != CUDA_SUCCESS)
			return h_cuda_fail(h, r, "uploading inputs");
	}
	return 0;
}

int h_bufs_restore_inout(struct harness *h, struct hbuf *bufs)
{
	for (size_t t = 0; t < h->s->tensors_len; t++)
		if (h->s->tensors[t].role == SPEC_ROLE_INOUT) {
			CUresult r = cuMemcpyHtoD(bufs[t].data, bufs[t].host, bufs[t].bytes);
			if (r != CUDA_SUCCESS)
				return h_cuda_fail(h, r, "restoring inout tensors");
		}
	return 0;
}

int h_bufs_poison(struct harness *h, struct hbuf *bufs, int pattern)
{
	for (size_t t = 0; t < h->s->tensors_len; t++) {
		const struct spec_tensor *T = &h->s->tensors[t];
		if (T->role != SPEC_ROLE_OUTPUT)
			continue;
		uint64_t n = h->b.elems[t];
		CUresult r;
		switch (T->dtype) {
		case KF_DT_F32: r = cuMemsetD32(bufs[t].data, POISON32[pattern], n); break;
		case KF_DT_F64: r = cuMemsetD32(bufs[t].data, POISON64[pattern], 2 * n); break;
		case KF_DT_F16: r = cuMemsetD16(bufs[t].data, POISON16F[pattern], n); break;
		case KF_DT_BF16: r = cuMemsetD16(bufs[t].data, POISON16B[pattern], n); break;
		default: r = cuMemsetD8(bufs[t].data, POISON8[pattern], bufs[t].bytes); break;
		}
		if (r != CUDA_SUCCESS)
			return h_cuda_fail(h, r, "poisoning outputs");
	}
	return 0;
}

int h_is_poison(enum kf_dtype dt, const void *p, uint64_t i, int pattern)
{
	switch (dt) {
	case KF_DT_F32: {
		uint32_t v;
		memcpy(&v, (const char *)p + 4 * i, 4);
		return v == POISON32[pattern];
	}
	case KF_DT_F64: {
		uint64_t v, w = ((uint64_t)POISON64[pattern] << 32) | POISON64[pattern];
		memcpy(&v, (const char *)p + 8 * i, 8);
		return v == w;
	}
	case KF_DT_F16:
	case KF_DT_BF16: {
		uint16_t v;
		memcpy(&v, (const char *)p + 2 * i, 2);
		return v == (dt == KF_DT_F16 ? POISON16F : POISON16B)[pattern];
	}
	default: {
		size_t sz = dtype_bytes(dt);
		const uint8_t *b = (const uint8_t *)p + sz * i;
		for (size_t k = 0; k < sz; k++)
			if (b[k] != POISON8[pattern])
				return 0;
		return 1;
	}
	}
}

static uint8_t *canary_host(uint64_t len)
{
	uint8_t *c = malloc(len ? len : 1);
	if (c)
		for (uint64_t i = 0; i < len; i++)
			c[i] = CANARY_BYTE(i);
	return c;
}

int h_bufs_canary(struct harness *h, struct hbuf *bufs)
{
	uint8_t *c = canary_host(SPEC_GUARD_BYTES + 256);
	if (!c)
		return KF_ENOMEM;
	int rc = 0;
	for (size_t t = 0; t < h->s->tensors_len && !rc; t++) {
		CUresult r = cuMemcpyHtoD(bufs[t].base, c, SPEC_GUARD_BYTES);
		if (r == CUDA_SUCCESS)
			r = cuMemcpyHtoD(bufs[t].data + bufs[t].bytes, c, bufs[t].tail);
		if (r != CUDA_SUCCESS)
			rc = h_cuda_fail(h, r, "writing guard canaries");
	}
	free(c);
	return rc;
}

int h_download(struct harness *h, struct hbuf *bufs, size_t t, void **out)
{
	*out = malloc(bufs[t].bytes ? bufs[t].bytes : 1);
	if (!*out)
		return KF_ENOMEM;
	CUresult r = cuMemcpyDtoH(*out, bufs[t].data, bufs[t].bytes);
	if (r != CUDA_SUCCESS) {
		free(*out);
		*out = NULL;
		return h_cuda_fail(h, r, "downloading outputs");
	}
	return 0;
}

int h_check_guards(struct harness *h, struct hbuf *bufs, json_t *viol)
{
	uint8_t *c = canary_host(SPEC_GUARD_BYTES + 256);
	uint8_t *g = malloc(SPEC_GUARD_BYTES + 256);
	int n = 0;
	if (!c || !g) {
		free(c);
		free(g);
		return KF_ENOMEM;
	}
	for (size_t t = 0; t < h->s->tensors_len; t++) {
		for (int side = 0; side < 2; side++) {
			uint64_t len = side ? bufs[t].tail : SPEC_GUARD_BYTES;
			CUdeviceptr at = side ? bufs[t].data + bufs[t].bytes : bufs[t].base;
			CUresult r = cuMemcpyDtoH(g, at, len);
			if (r != CUDA_SUCCESS) {
				free(c);
				free(g);
				return h_cuda_fail(h, r, "reading guard bands");
			}
			uint64_t bad = 0, first = 0, last = 0;
			for (uint64_t i = 0; i < len; i++)
				if (g[i] != c[i]) {
					if (!bad)
						first = i;
					last = i;
					bad++;
				}
			if (bad) {
				n++;
				/* Offsets relative to the tensor: negative before it,
				 * bytes past its end after it. */
				json_int_t f = side ? (json_int_t)first
						    : -(json_int_t)(SPEC_GUARD_BYTES - first);
				json_int_t l = side ? (json_int_t)last
						    : -(json_int_t)(SPEC_GUARD_BYTES - last);
				json_array_append_new(
					viol, json_pack("{s:s, s:s, s:I, s:I, s:I}", "tensor",
							h->s->tensors[t].name, "side",
							side ? "after" : "before", "bytes",
							(json_int_t)bad, "first_offset", f,
							"last_offset", l));
			}
		}
	}
	free(c);
	free(g);
	return n;
}

int h_check_inputs(struct harness *h, struct hbuf *bufs, json_t *viol)
{
	int n = 0;
	for (size_t t = 0; t < h->s->tensors_len; t++) {
		const struct spec_tensor *T = &h->s->tensors[t];
		if (T->role != SPEC_ROLE_INPUT)
			continue;
		void *now;
		int rc = h_download(h, bufs, t, &now);
		if (rc)
			return rc;
		size_t es = dtype_bytes(T->dtype);
		uint64_t bad = 0, first = 0;
		for (uint64_t i = 0; i < h->b.elems[t]; i++)
			if (memcmp((char *)now + i * es, (char *)bufs[t].host + i * es, es)) {
				if (!bad)
					first = i;
				bad++;
			}
		free(now);
		if (bad) {
			n++;
			json_array_append_new(viol, json_pack("{s:s, s:I, s:I}", "tensor", T->name,
							      "elements", (json_int_t)bad,
							      "first_index", (json_int_t)first));
		}
	}
	return n;
}

/* --- check mode -------------------------------------------------------- */

#define FIRST_MAX 8

static void add_first(json_t *arr, uint64_t i)
{
	if (json_array_size(arr) < FIRST_MAX)
		json_array_append_new(arr, json_integer((json_int_t)i));
}

/* One trial: fresh module, fresh buffers, inputs from seed; run 1 with
 * poison A; extra launches; run 2 with poison B; compare. */
static int check_trial(struct harness *h, const char *cubin, const struct spec_launch *launch,
		       size_t launch_len, uint64_t seed, int trial, int runs, int extra,
		       const char *prefix, json_t *tr)
{
	struct hprog p;
	struct hbuf bufs[SPEC_MAX_TENSORS];
	void *first_out[SPEC_MAX_TENSORS] = {0};
	int rc = h_prog_load(h, &p, cubin, launch, launch_len);
	if (rc)
		return rc;
	json_t *guards = json_array(), *inputs = json_array(), *outs = json_object();
	json_object_set_new(tr, "guard_violations", guards);
	json_object_set_new(tr, "inputs_modified", inputs);
	json_object_set_new(tr, "outputs", outs);
	int launches = 0;
	if ((rc = h_bufs_alloc(h, bufs)) || (rc = h_bufs_fill_inputs(h, bufs, seed)) ||
	    (rc = h_bufs_canary(h, bufs)) || (rc = h_bufs_poison(h, bufs, 0)))
		goto out;
	CUevent e0, e1;
	cuEventCreate(&e0, CU_EVENT_DEFAULT);
	cuEventCreate(&e1, CU_EVENT_DEFAULT);
	cuEventRecord(e0, h->stream);
	rc = h_prog_launch(h, &p, bufs);
	cuEventRecord(e1, h->stream);
	launches++;
	if (!rc)
		rc = h_sync(h, "running the kernel (first run)");
	if (rc) {
		cuEventDestroy(e0);
		cuEventDestroy(e1);
		goto out;
	}
	float ms = 0;
	cuEventElapsedTime(&ms, e0, e1);
	cuEventDestroy(e0);
	cuEventDestroy(e1);
	json_object_set_new(tr, "kernel_ms", json_real(ms));
	for (size_t t = 0; t < h->s->tensors_len; t++)
		if (h->s->tensors[t].role != SPEC_ROLE_INPUT &&
		    (rc = h_download(h, bufs, t, &first_out[t])))
			goto out;
	if ((rc = h_check_guards(h, bufs, guards)) < 0 ||
	    (rc = h_check_inputs(h, bufs, inputs)) < 0)
		goto out;
	rc = 0;
	void *second[SPEC_MAX_TENSORS] = {0};
	if (runs > 1) {
		/* More launches on the same input: state kept across launches
		 * (a __device__ counter, a cached result) shows up in run 2. */
		for (int k = 0; k < extra && !rc; k++) {
			if (!(rc = h_bufs_restore_inout(h, bufs)))
				rc = h_prog_launch(h, &p, bufs);
			launches++;
		}
		if (!rc)
			rc = h_sync(h, "running the kernel (repeated launches)");
		if (!rc && !(rc = h_bufs_restore_inout(h, bufs)) &&
		    !(rc = h_bufs_poison(h, bufs, 1)) && !(rc = h_prog_launch(h, &p, bufs)))
			rc = h_sync(h, "running the kernel (second run)");
		launches++;
		if (rc)
			goto out;
		for (size_t t = 0; t < h->s->tensors_len && !rc; t++)
			if (h->s->tensors[t].role != SPEC_ROLE_INPUT)
				rc = h_download(h, bufs, t, &second[t]);
		if (!rc && (rc = h_check_guards(h, bufs, guards)) >= 0 &&
		    (rc = h_check_inputs(h, bufs, inputs)) >= 0)
			rc = 0;
	}
	for (size_t t = 0; t < h->s->tensors_len && !rc; t++) {
		const struct spec_tensor *T = &h->s->tensors[t];
		if (T->role == SPEC_ROLE_INPUT)
			continue;
		size_t es = dtype_bytes(T->dtype);
		uint64_t unw = 0, unw2 = 0, changed = 0, late = 0;
		json_t *fu = json_array(), *fu2 = json_array(), *fc = json_array(),
		       *fl = json_array();
		for (uint64_t i = 0; i < h->b.elems[t]; i++) {
			int p1 = T->role == SPEC_ROLE_OUTPUT &&
				 h_is_poison(T->dtype, first_out[t], i, 0);
			if (!second[t]) {
				if (p1) {
					unw++;
					add_first(fu, i);
				}
				continue;
			}
			int p2 = T->role == SPEC_ROLE_OUTPUT &&
				 h_is_poison(T->dtype, second[t], i, 1);
			if (p1 && p2) {
				unw++;
				add_first(fu, i);
			} else if (p2) {
				unw2++;
				add_first(fu2, i);
			} else if (p1) {
				late++;
				add_first(fl, i);
			} else if (memcmp((char *)first_out[t] + i * es, (char *)second[t] + i * es,
					  es)) {
				changed++;
				add_first(fc, i);
			}
		}
		char file[300];
		snprintf(file, sizeof file, "%s.t%d.%s.bin", prefix, trial, T->name);
		if (h_write_file(file, first_out[t], h->b.bytes[t])) {
			json_object_set_new(
				h->report, "error",
				json_string("cannot write outputs to the job directory"));
			rc = KF_EIO;
		}
		json_object_set_new(outs, T->name,
				    json_pack("{s:s, s:I, s:o, s:I, s:o, s:I, s:o, s:I, s:o}",
					      "file", file, "unwritten", (json_int_t)unw,
					      "first_unwritten", fu, "unwritten_second_run",
					      (json_int_t)unw2, "first_unwritten_second_run", fu2,
					      "unwritten_first_run_only", (json_int_t)late,
					      "first_unwritten_first_run_only", fl,
					      "changed_between_runs", (json_int_t)changed,
					      "first_changed", fc));
	}
	for (size_t t = 0; t < SPEC_MAX_TENSORS; t++)
		free(second[t]);
out:
	json_object_set_new(tr, "launches", json_integer(launches));
	for (size_t t = 0; t < SPEC_MAX_TENSORS; t++)
		free(first_out[t]);
	if (!json_object_get(h->report, "fault")) {
		h_bufs_free(h, bufs);
		h_prog_unload(&p);
	}
	return rc;
}

/* Check mode. job.json: program (candidate | reference | baseline),
 * module, runs, extra_launches and rows: [{sizes: [...], seeds: [hex...],
 * out_prefix}]. Each row's report goes to the daemon as one JSON line as
 * soon as the row is done ({"row": i, "trials": [...]}, with "fault" or
 * "error" when it stopped there), so a later hang or crash loses nothing
 * already measured; the final line is the whole-run report. */
int h_mode_check(struct harness *h)
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
			if (h_parse_seed(json_array_get(seeds, k), &seed)) {
				json_object_set_new(h->report, "error",
						    json_string("job.json: bad seed"));
				rc = KF_EINVAL;
				break;
			}
			json_t *tr = json_object();
			json_array_append_new(trials, tr);
			json_object_set_new(tr, "seed", json_incref(json_array_get(seeds, k)));
			h_watchdog_arm((long)r);
			rc = check_trial(h, cubin, launch, launch_len, seed, (int)k,
					 runs < 1 ? 1 : runs, extra < 0 ? 0 : extra, prefix, tr);
			h_watchdog_disarm();
		}
		/* A fault or error belongs to the row it happened in. */
		if (rc) {
			if (json_object_get(h->report, "fault"))
				json_object_set(line, "fault", json_object_get(h->report, "fault"));
			if (json_object_get(h->report, "error"))
				json_object_set(line, "error", json_object_get(h->report, "error"));
		}
		h_send_line(h, line);
		json_decref(line);
		if (rc)
			return rc;
	}
	return 0;
}

/* --- main -------------------------------------------------------------- */

static json_t *load_json(const char *path, json_t *report)
{
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);
	if (!j) {
		char m[300];
		snprintf(m, sizeof m, "%s: %s (line %d)", path, je.text, je.line);
		json_object_set_new(report, "error", json_string(m));
	}
	return j;
}

static pthread_mutex_t send_mu = PTHREAD_MUTEX_INITIALIZER;

static void write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		p += n;
		len -= (size_t)n;
	}
}

void h_send_line(struct harness *h, const json_t *obj)
{
	char *text = json_dumps(obj, JSON_COMPACT);
	if (!text)
		return;
	size_t len = strlen(text);
	text[len++] = '\n'; /* json_dumps leaves room: replace the NUL */
	pthread_mutex_lock(&send_mu);
	write_all(h->report_fd, text, len);
	pthread_mutex_unlock(&send_mu);
	free(text);
}

/* The watchdog: a trial that runs past row_timeout_ms (a hung kernel)
 * reports {"row": i, "timeout": true} and ends the process, which is the
 * only way to stop a running kernel; the daemon starts a new process for
 * the remaining rows. */
static struct {
	atomic_llong deadline_ms; /* 0 = disarmed */
	atomic_long row;
	int fd;
	long long limit_ms;
} wd;

static void *watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		usleep(20000);
		long long d = atomic_load(&wd.deadline_ms);
		if (d && (long long)h_now_ms() > d) {
			char line[128];
			int n = snprintf(line, sizeof line,
					 "{\"row\":%ld,\"timeout\":true,\"timeout_ms\":%lld}\n",
					 atomic_load(&wd.row), wd.limit_ms);
			pthread_mutex_lock(&send_mu);
			write_all(wd.fd, line, (size_t)n);
			_exit(0);
		}
	}
	return NULL;
}

void h_watchdog_arm(long row)
{
	if (wd.limit_ms <= 0)
		return;
	atomic_store(&wd.row, row);
	atomic_store(&wd.deadline_ms, (long long)h_now_ms() + wd.limit_ms);
}

void h_watchdog_disarm(void)
{
	atomic_store(&wd.deadline_ms, 0);
}

static void watchdog_start(struct harness *h)
{
	wd.fd = h->report_fd;
	wd.limit_ms = (long long)json_integer_value(json_object_get(h->job, "row_timeout_ms"));
	if (wd.limit_ms <= 0)
		return;
	pthread_t t;
	if (pthread_create(&t, NULL, watchdog, NULL) == 0)
		pthread_detach(t);
	else
		wd.limit_ms = 0;
}

static int setup_device(struct harness *h)
{
	int ordinal = (int)json_integer_value(json_object_get(h->job, "device"));
	CUresult r = cuInit(0);
	if (r != CUDA_SUCCESS)
		return h_cuda_fail(h, r, "cuInit (is the GPU visible in the sandbox?)");
	if ((r = cuDeviceGet(&h->dev, ordinal)) != CUDA_SUCCESS)
		return h_cuda_fail(h, r, "selecting the device");
	cuDeviceGetName(h->dev_name, sizeof h->dev_name, h->dev);
	cuDeviceGetAttribute(&h->l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, h->dev);
	/* The primary context: cuBLAS (calibrate) shares it. */
	if ((r = cuDevicePrimaryCtxRetain(&h->ctx, h->dev)) != CUDA_SUCCESS ||
	    (r = cuCtxSetCurrent(h->ctx)) != CUDA_SUCCESS)
		return h_cuda_fail(h, r, "creating the context");
	if ((r = cuStreamCreate(&h->stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
		return h_cuda_fail(h, r, "creating the stream");
	int major = 0, minor = 0;
	cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, h->dev);
	cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, h->dev);
	json_object_set_new(h->report, "device",
			    json_pack("{s:i, s:s, s:i, s:i, s:i}", "index", ordinal, "name",
				      h->dev_name, "cc_major", major, "cc_minor", minor, "l2_bytes",
				      h->l2_bytes));
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	int fd = -1;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--job") == 0)
			dir = argv[i + 1];
		else if (strcmp(argv[i], "--report-fd") == 0)
			fd = (int)strtol(argv[i + 1], NULL, 10);
	}
	if (!dir || fd < 0) {
		fprintf(stderr, "usage: kforge-harness --job DIR --report-fd N\n");
		return 2;
	}
	/* Kernel printf and anything else on stdout stays away from the report. */
	struct harness h = {.report_fd = fd};
	h.report = json_object();
	int rc = 0;
	if (chdir(dir)) {
		json_object_set_new(h.report, "error",
				    json_string("cannot enter the job directory"));
		rc = KF_EIO;
		goto out;
	}
	h.job = load_json("job.json", h.report);
	if (!h.job) {
		rc = KF_EINVAL;
		goto out;
	}
	const char *mode = json_string_value(json_object_get(h.job, "mode"));
	json_object_set_new(h.report, "mode", json_string(mode ? mode : "?"));
	if (!mode) {
		json_object_set_new(h.report, "error", json_string("job.json: mode missing"));
		rc = KF_EINVAL;
		goto out;
	}
	if (strcmp(mode, "calibrate") != 0) {
		json_t *sj = load_json("spec.json", h.report);
		if (!sj) {
			rc = KF_EINVAL;
			goto out;
		}
		struct kf_err err = {0};
		struct spec_limits lim;
		spec_limits_default(&lim);
		lim.max_device_bytes = UINT64_MAX; /* the daemon applied its cap */
		lim.max_host_bytes = UINT64_MAX;
		rc = spec_parse(sj, &lim, NULL, &h.s, &err);
		json_decref(sj);
		if (rc) {
			json_object_set_new(h.report, "error", json_string(err.msg));
			goto out;
		}
		const json_t *sz = json_object_get(h.job, "sizes");
		if (!sz && strcmp(mode, "check") == 0)
			goto run; /* check mode binds each row */
		if (!json_is_array(sz) || json_array_size(sz) != h.s->vars_len) {
			json_object_set_new(
				h.report, "error",
				json_string("job.json: sizes must list every size variable"));
			rc = KF_EINVAL;
			goto out;
		}
		for (size_t k = 0; k < h.s->vars_len; k++)
			h.vals[k] = json_integer_value(json_array_get(sz, k));
		if ((rc = spec_bind(h.s, h.vals, &lim, "job", &h.b, &err))) {
			json_object_set_new(h.report, "error", json_string(err.msg));
			goto out;
		}
	}
run:
	if ((rc = setup_device(&h)))
		goto out;
	double t0 = h_now_ms();
	if (strcmp(mode, "check") == 0) {
		watchdog_start(&h);
		rc = h_mode_check(&h);
	} else if (strcmp(mode, "bench") == 0)
		rc = h_mode_bench(&h);
	else if (strcmp(mode, "calibrate") == 0)
		rc = h_mode_calibrate(&h);
	else {
		json_object_set_new(h.report, "error", json_string("job.json: unknown mode"));
		rc = KF_EINVAL;
	}
	json_object_set_new(h.report, "harness_ms", json_real(h_now_ms() - t0));
out:
	json_object_set_new(h.report, "ok", json_boolean(rc == 0));
	fflush(stdout);
	json_object_set_new(h.report, "final", json_true());
	h_send_line(&h, h.report);
	spec_free(h.s);
	json_decref(h.job);
	json_decref(h.report);
	/* After a fault the context is unusable; exiting releases everything. */
	return rc == 0 || rc == KF_EFAULT || rc == KF_EINVAL ? 0 : 1;
}
