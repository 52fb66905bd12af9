/* buffers: the harness's device buffers, one per tensor with guard bands on
 * both sides, inputs filled from the seed (spec_fill), outputs poisoned
 * with NaN patterns before each run, and the checks after it (guard bands
 * intact, inputs unmodified, elements never written). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/harness/harness_int.h"

/* Poison patterns per dtype: A and B, both NaN for floats. Only an element
 * the kernel never wrote holds A after the first run and B after the
 * second. */
static const uint32_t POISON32[2] = {0x7fa5a5a5u, 0xffb4b4b4u};
static const uint16_t POISON16F[2] = {0x7e5au, 0xfe6bu};	/* f16 NaNs */
static const uint16_t POISON16B[2] = {0x7fa5u, 0xffb6u};	/* bf16 NaNs */
static const uint32_t POISON64[2] = {0x7ff87ff8u, 0xfff9fff9u}; /* f64 NaN halves */
static const uint8_t POISON8[2] = {0xa5u, 0x5au};		/* integers */
#define CANARY_BYTE(i) ((uint8_t)(0xcbu ^ (uint8_t)((i)*37u)))

/* --- buffers ----------------------------------------------------------- */

int harness_bufs_alloc(struct harness *h, struct harness_buf *bufs)
{
	memset(bufs, 0, sizeof *bufs * h->s->tensors_len);
	for (size_t t = 0; t < h->s->tensors_len; t++) {
		uint64_t bytes = h->b.bytes[t];
		uint64_t padded = (bytes + 255) & ~255ull;
		bufs[t].bytes = bytes;
		bufs[t].tail = padded - bytes + SPEC_GUARD_BYTES;
		CUresult r = cuMemAlloc(&bufs[t].base, padded + 2 * SPEC_GUARD_BYTES);
		if (r != CUDA_SUCCESS)
			return harness_cuda_fail(h, r, "allocating tensors");
		bufs[t].data = bufs[t].base + SPEC_GUARD_BYTES;
	}
	return 0;
}

void harness_bufs_free(struct harness *h, struct harness_buf *bufs)
{
	for (size_t t = 0; t < h->s->tensors_len; t++) {
		if (bufs[t].base)
			cuMemFree(bufs[t].base);
		free(bufs[t].host);
		bufs[t].base = 0;
		bufs[t].host = NULL;
	}
}

int harness_bufs_fill_inputs(struct harness *h, struct harness_buf *bufs, uint64_t seed)
{
	for (size_t t = 0; t < h->s->tensors_len; t++) {
		const struct spec_tensor *T = &h->s->tensors[t];
		if (T->role == SPEC_ROLE_OUTPUT)
			continue;
		free(bufs[t].host);
		bufs[t].host = malloc(bufs[t].bytes ? bufs[t].bytes : 1);
		if (!bufs[t].host)
			return harness_host_oom(h, "filling the inputs", bufs[t].bytes);
		spec_fill(T, t, seed, spec_init_max(h->s, t, h->vals), bufs[t].host, h->b.elems[t]);
		CUresult r = cuMemcpyHtoD(bufs[t].data, bufs[t].host, bufs[t].bytes);
		if (r != CUDA_SUCCESS)
			return harness_cuda_fail(h, r, "uploading inputs");
	}
	return 0;
}

int harness_bufs_restore_inout(struct harness *h, struct harness_buf *bufs)
{
	for (size_t t = 0; t < h->s->tensors_len; t++)
		if (h->s->tensors[t].role == SPEC_ROLE_INOUT) {
			CUresult r = cuMemcpyHtoD(bufs[t].data, bufs[t].host, bufs[t].bytes);
			if (r != CUDA_SUCCESS)
				return harness_cuda_fail(h, r, "restoring inout tensors");
		}
	return 0;
}

int harness_bufs_poison(struct harness *h, struct harness_buf *bufs, int pattern)
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
			return harness_cuda_fail(h, r, "poisoning outputs");
	}
	return 0;
}

uint64_t harness_poison_bits(enum kf_dtype dt, int pattern)
{
	size_t sz = dtype_bytes(dt);
	uint8_t b[8];
	for (size_t k = 0; k < sz && k < 8; k++)
		b[k] = POISON8[pattern];
	switch (dt) {
	case KF_DT_F32: memcpy(b, &POISON32[pattern], 4); break;
	case KF_DT_F64:
		memcpy(b, &POISON64[pattern], 4);
		memcpy(b + 4, &POISON64[pattern], 4);
		break;
	case KF_DT_F16: memcpy(b, &POISON16F[pattern], 2); break;
	case KF_DT_BF16: memcpy(b, &POISON16B[pattern], 2); break;
	default: break;
	}
	uint64_t v = 0;
	memcpy(&v, b, sz < 8 ? sz : 8);
	return v;
}

static uint8_t *canary_host(uint64_t len)
{
	uint8_t *c = malloc(len ? len : 1);
	if (c)
		for (uint64_t i = 0; i < len; i++)
			c[i] = CANARY_BYTE(i);
	return c;
}

int harness_bufs_canary(struct harness *h, struct harness_buf *bufs)
{
	uint8_t *c = canary_host(SPEC_GUARD_BYTES + 256);
	if (!c)
		return harness_host_oom(h, "the guard canaries", SPEC_GUARD_BYTES + 256);
	int rc = 0;
	for (size_t t = 0; t < h->s->tensors_len && !rc; t++) {
		CUresult r = cuMemcpyHtoD(bufs[t].base, c, SPEC_GUARD_BYTES);
		if (r == CUDA_SUCCESS)
			r = cuMemcpyHtoD(bufs[t].data + bufs[t].bytes, c, bufs[t].tail);
		if (r != CUDA_SUCCESS)
			rc = harness_cuda_fail(h, r, "writing guard canaries");
	}
	free(c);
	return rc;
}

int harness_download(struct harness *h, struct harness_buf *bufs, size_t t, void **out)
{
	*out = malloc(bufs[t].bytes ? bufs[t].bytes : 1);
	if (!*out)
		return harness_host_oom(h, "downloading the outputs", bufs[t].bytes);
	CUresult r = cuMemcpyDtoH(*out, bufs[t].data, bufs[t].bytes);
	if (r != CUDA_SUCCESS) {
		free(*out);
		*out = NULL;
		return harness_cuda_fail(h, r, "downloading outputs");
	}
	return 0;
}

int harness_check_guards(struct harness *h, struct harness_buf *bufs, json_t *viol)
{
	uint8_t *c = canary_host(SPEC_GUARD_BYTES + 256);
	uint8_t *g = malloc(SPEC_GUARD_BYTES + 256);
	int n = 0;
	if (!c || !g) {
		free(c);
		free(g);
		return harness_host_oom(h, "checking the guard bands",
					2 * (SPEC_GUARD_BYTES + 256));
	}
	for (size_t t = 0; t < h->s->tensors_len; t++) {
		for (int side = 0; side < 2; side++) {
			uint64_t len = side ? bufs[t].tail : SPEC_GUARD_BYTES;
			CUdeviceptr at = side ? bufs[t].data + bufs[t].bytes : bufs[t].base;
			CUresult r = cuMemcpyDtoH(g, at, len);
			if (r != CUDA_SUCCESS) {
				free(c);
				free(g);
				return harness_cuda_fail(h, r, "reading guard bands");
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

int harness_check_inputs(struct harness *h, struct harness_buf *bufs, json_t *viol)
{
	int n = 0;
	for (size_t t = 0; t < h->s->tensors_len; t++) {
		const struct spec_tensor *T = &h->s->tensors[t];
		if (T->role != SPEC_ROLE_INPUT)
			continue;
		void *now;
		int rc = harness_download(h, bufs, t, &now);
		if (rc)
			return rc;
		size_t es = dtype_bytes(T->dtype);
		uint64_t bad = 0, first = 0;
		/* One bulk compare; element by element only to count a change. */
		int same = memcmp(now, bufs[t].host, bufs[t].bytes) == 0;
		for (uint64_t i = 0; !same && i < h->b.elems[t]; i++)
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

/* --- comparing the two runs ------------------------------------------- */

static void add_first(json_t *arr, uint64_t i)
{
	if (json_array_size(arr) < HARNESS_FIRST_MAX)
		json_array_append_new(arr, json_integer((json_int_t)i));
}

/* Classifies element i, whose bits are a (first run) and b (second run),
 * when the fast test found something to count. */
static void scan_elem(struct harness_scan *sc, uint64_t i, int p1, int p2, int two, int differ)
{
	if (!two) {
		if (p1) {
			sc->unw++;
			add_first(sc->fu, i);
		}
	} else if (p1 && p2) {
		sc->unw++;
		add_first(sc->fu, i);
	} else if (p2) {
		sc->unw2++;
		add_first(sc->fu2, i);
	} else if (p1) {
		sc->late++;
		add_first(sc->fl, i);
	} else if (differ) {
		sc->changed++;
		add_first(sc->fc, i);
	}
}

/* The scan over n elements of one width: every element is read as an
 * integer of its size, so poison tests and equality are on the bits (as
 * memcmp), and the common element (written, the same in both runs) costs
 * two compares. With two runs an element holding the same bits in both
 * was written by both (the poisons differ): an 8-bit output may hold its
 * poison byte as a value. */
#define SCAN_RUNS(type)                                                      \
	do {                                                                 \
		const type *x = first, *y = second;                          \
		for (uint64_t i = 0; i < n; i++) {                           \
			uint64_t a = x[i], b = y ? y[i] : 0;                 \
			int same = y && a == b;                              \
			int p1 = out && a == pa && !same;                    \
			int p2 = out && y && b == pb && !same;               \
			if (p1 || p2 || (y && a != b))                       \
				scan_elem(sc, i, p1, p2, y != NULL, a != b); \
		}                                                            \
	} while (0)

void harness_scan_runs(const struct spec_tensor *T, uint64_t n, const void *first,
		       const void *second, struct harness_scan *sc)
{
	*sc = (struct harness_scan){
		.fu = json_array(), .fu2 = json_array(), .fc = json_array(), .fl = json_array()};
	int out = T->role == SPEC_ROLE_OUTPUT;
	uint64_t pa = harness_poison_bits(T->dtype, 0), pb = harness_poison_bits(T->dtype, 1);
	switch (dtype_bytes(T->dtype)) {
	case 1: SCAN_RUNS(uint8_t); break;
	case 2: SCAN_RUNS(uint16_t); break;
	case 4: SCAN_RUNS(uint32_t); break;
	default: SCAN_RUNS(uint64_t); break;
	}
}
