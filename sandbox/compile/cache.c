/* cache: content-addressed artifact directories with atomic publish and an
 * LRU size cap. "Recently used" is the artifact directory's mtime, bumped on
 * every read, so the order survives restarts and is shared by processes on
 * one data dir. Removal renames a directory to a .trash name first, so a
 * reader sees a whole artifact or none. Also a small SHA-256 (FIPS 180-4),
 * so the key needs no crypto library. */
#include "sandbox/compile/cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"

#define DEFAULT_CAP (1ull << 30)

struct cache {
	char root[PATH_MAX - 128];
	unsigned long long cap;
	pthread_mutex_t lock;	  /* guards total and eviction */
	unsigned long long total; /* bytes, estimate */
	unsigned long seq;	  /* staging/trash name counter */
};

/* --- sha256 -------------------------------------------------------------- */

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha_block(struct cache_sha256 *s, const unsigned char *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h;
	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
	e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) +
			      K[i] + w[i];
		uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
	}
	s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
	s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

void cache_sha256_init(struct cache_sha256 *s)
{
	static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	memcpy(s->h, h0, sizeof h0);
	s->len_bytes = 0;
	s->buf_len = 0;
}

void cache_sha256_update(struct cache_sha256 *s, const void *data, size_t len)
{
	const unsigned char *p = data;
	s->len_bytes += len;
	while (len) {
		size_t n = 64 - s->buf_len;
		if (n > len)
			n = len;
		memcpy(s->buf + s->buf_len, p, n);
		s->buf_len += n, p += n, len -= n;
		if (s->buf_len == 64) {
			sha_block(s, s->buf);
			s->buf_len = 0;
		}
	}
}

void cache_sha256_final_hex(struct cache_sha256 *s, char hex[CACHE_ID_LEN + 1])
{
	uint64_t bits = s->len_bytes * 8;
	unsigned char pad = 0x80, zero = 0, lenb[8];
	cache_sha256_update(s, &pad, 1);
	while (s->buf_len != 56)
		cache_sha256_update(s, &zero, 1);
	for (int i = 0; i < 8; i++)
		lenb[i] = (unsigned char)(bits >> (56 - 8 * i));
	cache_sha256_update(s, lenb, 8);
	static const char d[] = "0123456789abcdef";
	for (int i = 0; i < 8; i++)
		for (int k = 0; k < 4; k++) {
			unsigned v = (s->h[i] >> (24 - 8 * k)) & 0xff;
			hex[i * 8 + k * 2] = d[v >> 4];
			hex[i * 8 + k * 2 + 1] = d[v & 15];
		}
	hex[CACHE_ID_LEN] = 0;
}

/* --- files --------------------------------------------------------------- */

static unsigned long long tree_bytes_at(int parent, const char *name, int depth)
{
	unsigned long long sum = 0;
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	struct dirent *e;
	struct stat st;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (S_ISREG(st.st_mode))
			sum += (unsigned long long)st.st_size;
		else if (S_ISDIR(st.st_mode) && depth < 4)
			sum += tree_bytes_at(fd, e->d_name, depth + 1);
	}
	closedir(d);
	return sum;
}

int cache_id_valid(const char *id)
{
	if (!id)
		return 0;
	size_t i = 0;
	for (; id[i]; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return 0;
	return i == CACHE_ID_LEN;
}

/* Whether the process named by a staging or trash dir ("<pid>-...") is
 * running: several kforge processes may share one cache (the jobs of a
 * Slurm node share its data dir), and one starting must not remove
 * another's compile in progress. */
static int owner_alive(const char *name)
{
	char *end;
	long pid = strtol(name, &end, 10);

	if (end == name || *end != '-' || pid <= 0)
		return 0;
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

int cache_open(const char *root, unsigned long long cap_bytes, struct cache **out,
	       struct kf_err *err)
{
	*out = NULL;
	struct cache *c = calloc(1, sizeof *c);
	if (!c)
		return kf_err_set(err, KF_ENOMEM, "cache: out of memory");
	if (snprintf(c->root, sizeof c->root, "%s", root) >= (int)sizeof c->root) {
		free(c);
		return kf_err_set(err, KF_EINVAL, "cache: directory path too long");
	}
	if (fs_mkdir_p(c->root, 0755, NULL, 0) != 0) {
		int rc = kf_err_set(err, KF_EIO, "cache: cannot create '%s': %s", root,
				    strerror(errno));
		free(c);
		return rc;
	}
	c->cap = cap_bytes ? cap_bytes : DEFAULT_CAP;
	pthread_mutex_init(&c->lock, NULL);
	DIR *d = opendir(c->root);
	struct dirent *e;
	int rfd = d ? dirfd(d) : -1;
	while (d && (e = readdir(d))) {
		if (cache_id_valid(e->d_name))
			c->total += tree_bytes_at(rfd, e->d_name, 0);
		else if ((!strncmp(e->d_name, ".trash-", 7) || !strncmp(e->d_name, ".stage-", 7)) &&
			 !owner_alive(e->d_name + 7))
			fs_rm_tree_at(rfd, e->d_name); /* left by a crash */
	}
	if (d)
		closedir(d);
	*out = c;
	return 0;
}

void cache_close(struct cache *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	free(c);
}

unsigned long long cache_total_bytes(struct cache *c)
{
	pthread_mutex_lock(&c->lock);
	unsigned long long t = c->total;
	pthread_mutex_unlock(&c->lock);
	return t;
}

static void touch_dir(struct cache *c, const char *id)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s/%s", c->root, id);
	utimensat(AT_FDCWD, p, NULL, 0);
}

static int check_name(const char *id, const char *name, struct kf_err *err)
{
	if (!cache_id_valid(id))
		return kf_err_set(
			err, KF_EINVAL,
			"artifact id '%.80s' is malformed: expected 64 lowercase hex digits",
			id ? id : "(null)");
	if (!name || !*name || strchr(name, '/') || name[0] == '.')
		return kf_err_set(err, KF_EINVAL, "artifact file name '%.64s' is not allowed",
				  name ? name : "(null)");
	return 0;
}

int cache_file_path(struct cache *c, const char *id, const char *name, char *buf, size_t cap,
		    struct kf_err *err)
{
	int rc = check_name(id, name, err);
	if (rc)
		return rc;
	if (snprintf(buf, cap, "%s/%s/%s", c->root, id, name) >= (int)cap)
		return kf_err_set(err, KF_EINVAL, "cache: path too long");
	struct stat st;
	if (lstat(buf, &st) != 0 || !S_ISREG(st.st_mode))
		return kf_err_set(err, KF_ENOTFOUND, "artifact %.16s... has no %s", id, name);
	touch_dir(c, id);
	return 0;
}

int cache_read(struct cache *c, const char *id, const char *name, size_t max_bytes, char **data,
	       size_t *len, struct kf_err *err)
{
	*data = NULL;
	*len = 0;
	char p[PATH_MAX];
	int rc = check_name(id, name, err);
	if (rc)
		return rc;
	snprintf(p, sizeof p, "%s/%s/%s", c->root, id, name);
	int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return kf_err_set(err, KF_ENOTFOUND, "artifact %.16s... has no %s", id, name);
	struct stat st;
	char *buf = NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		rc = kf_err_set(err, KF_EIO, "artifact %.16s.../%s: not a regular file", id, name);
		goto out;
	}
	if ((unsigned long long)st.st_size > max_bytes) {
		rc = kf_err_set(err, KF_ETOOBIG,
				"artifact %.16s.../%s is %lld bytes, over the %zu-byte cap", id,
				name, (long long)st.st_size, max_bytes);
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		rc = kf_err_set(err, KF_ENOMEM, "cache: out of memory");
		goto out;
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			break;
		}
		got += (size_t)n;
	}
	buf[got] = 0;
	*data = buf;
	*len = got;
	buf = NULL;
	touch_dir(c, id);
out:
	free(buf);
	close(fd);
	return rc;
}

int cache_write(struct cache *c, const char *id, const char *name, const void *data, size_t len,
		struct kf_err *err)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 64], dst[PATH_MAX + 64];
	int rc = check_name(id, name, err);
	if (rc)
		return rc;
	snprintf(dir, sizeof dir, "%s/%s", c->root, id);
	struct stat st;
	if (stat(dir, &st) != 0)
		return kf_err_set(err, KF_ENOTFOUND, "artifact %.16s... not found", id);
	pthread_mutex_lock(&c->lock);
	unsigned long seq = ++c->seq;
	pthread_mutex_unlock(&c->lock);
	snprintf(tmp, sizeof tmp, "%s/.%s.%ld.%lu", dir, name, (long)getpid(), seq);
	snprintf(dst, sizeof dst, "%s/%s", dir, name);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return kf_err_set(err, KF_EIO, "cache: cannot write %s: %s", name, strerror(errno));
	int wrc = fs_write_all(fd, data, len);
	if (close(fd) != 0 && wrc == 0)
		wrc = KF_EIO;
	if (wrc != 0 || rename(tmp, dst) != 0) {
		unlink(tmp);
		return kf_err_set(err, KF_EIO, "cache: cannot write %s", name);
	}
	pthread_mutex_lock(&c->lock);
	c->total += len;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int cache_stage(struct cache *c, char *buf, size_t cap, struct kf_err *err)
{
	pthread_mutex_lock(&c->lock);
	unsigned long seq = ++c->seq;
	pthread_mutex_unlock(&c->lock);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (snprintf(buf, cap, "%s/.stage-%ld-%lu-%ld", c->root, (long)getpid(), seq,
		     (long)ts.tv_nsec) >= (int)cap)
		return kf_err_set(err, KF_EINVAL, "cache: staging path too long");
	if (mkdir(buf, 0755) != 0)
		return kf_err_set(err, KF_EIO, "cache: cannot create a staging dir: %s",
				  strerror(errno));
	return 0;
}

void cache_discard(struct cache *c, const char *staging)
{
	(void)c;
	fs_rm_tree(staging);
}

struct entry {
	char id[CACHE_ID_LEN + 1];
	time_t mtime;
	long mtime_ns;
	unsigned long long bytes;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->mtime != y->mtime)
		return x->mtime < y->mtime ? -1 : 1;
	return x->mtime_ns < y->mtime_ns ? -1 : x->mtime_ns > y->mtime_ns;
}

/* Called with c->lock held. Removes least recently used artifacts (never
 * keep) until the total is under 90% of the cap; recounts from disk. */
static void evict(struct cache *c, const char *keep)
{
	DIR *d = opendir(c->root);
	if (!d)
		return;
	int rfd = dirfd(d);
	struct entry *v = NULL;
	size_t n = 0, alloc = 0;
	unsigned long long total = 0;
	struct dirent *e;
	struct stat st;
	while ((e = readdir(d))) {
		if (!cache_id_valid(e->d_name) || fstatat(rfd, e->d_name, &st, 0) != 0)
			continue;
		if (n == alloc) {
			size_t na = alloc ? alloc * 2 : 64;
			struct entry *nv = realloc(v, na * sizeof *v);
			if (!nv)
				break;
			v = nv;
			alloc = na;
		}
		memcpy(v[n].id, e->d_name, CACHE_ID_LEN + 1);
		v[n].mtime = st.st_mtim.tv_sec;
		v[n].mtime_ns = st.st_mtim.tv_nsec;
		v[n].bytes = tree_bytes_at(rfd, e->d_name, 0);
		total += v[n].bytes;
		n++;
	}
	qsort(v, n, sizeof *v, cmp_entry);
	unsigned long long target = c->cap / 10 * 9;
	for (size_t i = 0; i < n && total > target; i++) {
		if (keep && !strcmp(v[i].id, keep))
			continue;
		char trash[96];
		snprintf(trash, sizeof trash, ".trash-%ld-%lu", (long)getpid(), ++c->seq);
		if (renameat(rfd, v[i].id, rfd, trash) == 0) {
			fs_rm_tree_at(rfd, trash);
			total -= v[i].bytes;
		}
	}
	c->total = total;
	free(v);
	closedir(d);
}

int cache_publish(struct cache *c, const char *staging, const char *id, struct kf_err *err)
{
	if (!cache_id_valid(id)) {
		cache_discard(c, staging);
		return kf_err_set(err, KF_EINVAL, "cache: bad artifact id");
	}
	char dst[PATH_MAX];
	snprintf(dst, sizeof dst, "%s/%s", c->root, id);
	unsigned long long bytes = tree_bytes_at(AT_FDCWD, staging, 0);
	if (rename(staging, dst) != 0) {
		int e = errno;
		cache_discard(c, staging);
		if (e == ENOTEMPTY || e == EEXIST) {
			touch_dir(c, id);
			return 0;
		}
		return kf_err_set(err, KF_EIO, "cache: cannot publish artifact: %s", strerror(e));
	}
	touch_dir(c, id);
	pthread_mutex_lock(&c->lock);
	c->total += bytes;
	if (c->total > c->cap)
		evict(c, id);
	pthread_mutex_unlock(&c->lock);
	return 0;
}
