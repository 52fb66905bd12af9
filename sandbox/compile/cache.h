/* cache: the content-addressed artifact store of the compiler. Each artifact
 * is a directory <root>/<id> (id = hex sha256 of what produced it) holding
 * the cubin, PTX, log and result.json. An artifact is built in a staging
 * directory under <root> and published with one atomic rename, so readers
 * never see half an artifact and concurrent compiles of the same input are
 * safe (the second rename loses and is discarded). Least recently used
 * artifacts are removed once the total passes a size cap. Thread-safe. */
#ifndef KF_CACHE_H
#define KF_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "base/kf_err.h"

#define CACHE_ID_LEN 64 /* hex sha256 */

struct cache;

/* Incremental SHA-256 (FIPS 180-4). */
struct cache_sha256 {
	uint32_t h[8];
	uint64_t len_bytes;
	unsigned char buf[64];
	size_t buf_len;
};
void cache_sha256_init(struct cache_sha256 *s);
void cache_sha256_update(struct cache_sha256 *s, const void *data, size_t len);
/* Writes 64 hex digits and a NUL into hex. */
void cache_sha256_final_hex(struct cache_sha256 *s, char hex[CACHE_ID_LEN + 1]);

/* Opens (creating) the store at root (copied). Scans it once for its size.
 * cap_bytes 0 = 1 GiB. Returns 0 and *out (free with cache_close), KF_EIO
 * naming the directory, or KF_ENOMEM. */
int cache_open(const char *root, unsigned long long cap_bytes, struct cache **out,
	       struct kf_err *err) __attribute__((warn_unused_result));
void cache_close(struct cache *c);

/* 1 when id is 64 lowercase hex digits. */
int cache_id_valid(const char *id);

/* Path of file name in artifact id (buf, cap bytes). Returns 0 when the file
 * exists (and marks the artifact used), KF_ENOTFOUND, or KF_EINVAL for a
 * malformed id or a name with '/'. */
int cache_file_path(struct cache *c, const char *id, const char *name, char *buf, size_t cap,
		    struct kf_err *err) __attribute__((warn_unused_result));

/* Reads file name of artifact id: *data new (free()), NUL-terminated, *len
 * bytes. KF_ENOTFOUND, KF_ETOOBIG past max_bytes, KF_EIO. Marks it used. */
int cache_read(struct cache *c, const char *id, const char *name, size_t max_bytes, char **data,
	       size_t *len, struct kf_err *err) __attribute__((warn_unused_result));

/* Writes a file into a published artifact atomically (temp + rename), e.g. a
 * SASS summary computed later. KF_ENOTFOUND, KF_EIO. */
int cache_write(struct cache *c, const char *id, const char *name, const void *data, size_t len,
		struct kf_err *err) __attribute__((warn_unused_result));

/* Makes a new empty staging directory under the root; its path goes to buf
 * (cap bytes). The caller fills it, then publishes or discards it. */
int cache_stage(struct cache *c, char *buf, size_t cap, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Publishes staging dir as artifact id (atomic rename). If id already exists
 * (a concurrent compile of the same input won), the staging dir is removed
 * and 0 returned: the existing artifact is equivalent. Then evicts least
 * recently used artifacts while the total is over the cap. */
int cache_publish(struct cache *c, const char *staging, const char *id, struct kf_err *err)
	__attribute__((warn_unused_result));

/* Removes a staging directory and everything in it. */
void cache_discard(struct cache *c, const char *staging);

/* Bytes currently stored (estimate kept in memory). */
unsigned long long cache_total_bytes(struct cache *c);

#endif
