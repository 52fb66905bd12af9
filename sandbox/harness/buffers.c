/* buffers: the harness's device buffers, one per tensor with guard bands on
 * both sides, inputs filled from the seed (spec_fill), outputs poisoned
 * with NaN patterns before each run, and the checks after it (guard bands
 * intact, inputs unmodified, elements never written). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/par.h"
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
		/* The host copy lives as long as the buffers: a row's trials
		 * refill it (every element) instead of faulting in new pages. */
		if (!bufs[t].host && !(bufs[t].host = mem_alloc_big(bufs[t].bytes)))
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

int harness_download_into(struct harness *h, struct harness_buf *bufs, size_t t, void *dst)
{
	CUresult r = cuMemcpyDtoH(dst, bufs[t].data, bufs[t].bytes);
	return r == CUDA_SUCCESS ? 0 : harness_cuda_fail(h, r, "downloading outputs");
}

int harness_download(struct harness *h, struct harness_buf *bufs, size_t t, void **out)
{
	*out = mem_alloc_big(bufs[t].bytes);
	if (!*out)
		return harness_host_oom(h, "downloading the outputs", bufs[t].bytes);
	int rc = harness_download_into(h, bufs, t, *out);
	if (rc) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

void *harness_scratch(struct harness *h, uint64_t bytes)
{
	if (bytes > h->scratch_cap || !h->scratch) {
		free(h->scratch);
		h->scratch_cap = 0;
		if (!(h->scratch = mem_alloc_big(bytes)))
			return NULL;
		h->scratch_cap = bytes;
	}
	return h->scratch;
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
		void *now = harness_scratch(h, bufs[t].bytes);
		if (!now)
			return harness_host_oom(h, "checking the inputs", bufs[t].bytes);
		int rc = harness_download_into(h, bufs, t, now);
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

/* One chunk's findings: counts and first indices (HARNESS_FIRST_MAX of
 * each), merged in chunk order so the result is that of one pass. */
struct scan_part {
	uint64_t n[4]; /* unwritten, unwritten second run only, first run only, changed */
	uint64_t first[4][HARNESS_FIRST_MAX];
};

enum { SCAN_UNW, SCAN_UNW2, SCAN_LATE, SCAN_CHANGED };

struct scan_job {
	const void *first, *second;
	uint64_t pa, pb;
	int out;
	size_t width;
	struct scan_part *parts;
};

static void scan_add(struct scan_part *p, int kind, uint64_t i)
{
	if (p->n[kind] < HARNESS_FIRST_MAX)
		p->first[kind][p->n[kind]] = i;
	p->n[kind]++;
}

/* Classifies element i, whose bits differ between the runs or hold a
 * poison, when the fast test found something to count. */
static void scan_elem(struct scan_part *p, uint64_t i, int p1, int p2, int two, int differ)
{
	if (!two) {
		if (p1)
			scan_add(p, SCAN_UNW, i);
	} else if (p1 && p2) {
		scan_add(p, SCAN_UNW, i);
	} else if (p2) {
		scan_add(p, SCAN_UNW2, i);
	} else if (p1) {
		scan_add(p, SCAN_LATE, i);
	} else if (differ) {
		scan_add(p, SCAN_CHANGED, i);
	}
}

/* The scan over [lo, hi) of one width: every element is read as an
 * integer of its size, so poison tests and equality are on the bits (as
 * memcmp), and the common element (written, the same in both runs) costs
 * two compares. With two runs an element holding the same bits in both
 * was written by both (the poisons differ): an 8-bit output may hold its
 * poison byte as a value. */
#define SCAN_RUNS(type)                                                     \
	do {                                                                \
		const type *x = j->first, *y = j->second;                   \
		for (uint64_t i = lo; i < hi; i++) {                        \
			uint64_t a = x[i], b = y ? y[i] : 0;                \
			int same = y && a == b;                             \
			int p1 = j->out && a == j->pa && !same;             \
			int p2 = j->out && y && b == j->pb && !same;        \
			if (p1 || p2 || (y && a != b))                      \
				scan_elem(p, i, p1, p2, y != NULL, a != b); \
		}                                                           \
	} while (0)

static void scan_chunk(void *arg, uint64_t c, uint64_t lo, uint64_t hi)
{
	const struct scan_job *j = arg;
	struct scan_part *p = &j->parts[c];
	switch (j->width) {
	case 1: SCAN_RUNS(uint8_t); break;
	case 2: SCAN_RUNS(uint16_t); break;
	case 4: SCAN_RUNS(uint32_t); break;
	default: SCAN_RUNS(uint64_t); break;
	}
}

/* Elements per scan chunk: large enough that starting the threads is
 * small beside the work. */
#define SCAN_CHUNK (1ull << 18)

void harness_scan_runs(const struct spec_tensor *T, uint64_t n, const void *first,
		       const void *second, struct harness_scan *sc)
{
	*sc = (struct harness_scan){
		.fu = json_array(), .fu2 = json_array(), .fc = json_array(), .fl = json_array()};
	struct scan_part one;
	uint64_t chunk = SCAN_CHUNK, nparts = par_chunks(n, chunk);
	struct scan_part *parts = nparts > 1 ? calloc(nparts, sizeof *parts) : NULL;
	if (!parts) { /* one chunk: small, or no memory for the chunks */
		memset(&one, 0, sizeof one);
		parts = &one;
		chunk = n ? n : 1;
		nparts = n ? 1 : 0;
	}
	struct scan_job j = {.first = first,
			     .second = second,
			     .pa = harness_poison_bits(T->dtype, 0),
			     .pb = harness_poison_bits(T->dtype, 1),
			     .out = T->role == SPEC_ROLE_OUTPUT,
			     .width = dtype_bytes(T->dtype),
			     .parts = parts};
	par_for(n, chunk, scan_chunk, &j);
	uint64_t *count[4] = {&sc->unw, &sc->unw2, &sc->late, &sc->changed};
	json_t *arr[4] = {sc->fu, sc->fu2, sc->fl, sc->fc};
	for (uint64_t c = 0; c < nparts; c++)
		for (int k = 0; k < 4; k++) {
			*count[k] += parts[c].n[k];
			for (uint64_t q = 0; q < parts[c].n[k] && q < HARNESS_FIRST_MAX &&
					     json_array_size(arr[k]) < HARNESS_FIRST_MAX;
			     q++)
				json_array_append_new(
					arr[k], json_integer((json_int_t)parts[c].first[k][q]));
		}
	if (parts != &one)
		free(parts);
}
