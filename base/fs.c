/* fs: whole writes, tree removal, the executable's path; see fs.h. Tree
 * removal works on directory fds (openat with O_NOFOLLOW), so a symlink
 * placed in a job directory is removed, not followed out of it. */
#include "base/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/kf_err.h"

int fs_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		/* 1 GiB at a time: Linux writes at most 0x7ffff000 bytes per call. */
		ssize_t n = write(fd, p, len > (1u << 30) ? (1u << 30) : len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return KF_EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fs_write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return KF_EIO;
	int rc = fs_write_all(fd, data, len);
	if (close(fd) != 0 && rc == 0)
		rc = KF_EIO;
	return rc;
}

int fs_read_file(const char *path, size_t cap, int flags, char **out, size_t *len)
{
	*out = NULL;
	if (len)
		*len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | (flags & FS_UNTRUSTED ? O_NOFOLLOW : 0));
	if (fd < 0)
		return KF_EIO;
	int rc = 0;
	size_t n = 0;
	char *buf = NULL;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		rc = KF_EIO;
		goto out;
	}
	if ((flags & FS_UNTRUSTED) && !S_ISREG(st.st_mode)) {
		errno = EINVAL;
		rc = KF_EIO;
		goto out;
	}
	if (S_ISREG(st.st_mode) && (unsigned long long)st.st_size > cap) {
		rc = KF_ETOOBIG;
		goto out;
	}
	/* A regular file: the size it had when opened; anything else (a pipe)
	 * up to one byte past cap, which shows it is over. */
	size_t limit = S_ISREG(st.st_mode) ? (size_t)st.st_size : cap + 1;
	buf = malloc(limit + 1);
	if (!buf) {
		rc = KF_ENOMEM;
		goto out;
	}
	while (n < limit) {
		ssize_t r = read(fd, buf + n, limit - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = KF_EIO;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > cap) {
		rc = KF_ETOOBIG;
		goto out;
	}
	buf[n] = 0;
	*out = buf;
	buf = NULL;
	if (len)
		*len = n;
out:
	free(buf);
	close(fd);
	return rc;
}

int fs_mkdir_p(const char *path, unsigned mode, char *failed, size_t failed_cap)
{
	char p[PATH_MAX];
	if (failed && failed_cap)
		failed[0] = 0;
	if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) {
		errno = ENAMETOOLONG;
		return KF_ETOOBIG;
	}
	if (!p[0]) {
		errno = ENOENT;
		return KF_EIO;
	}
	for (char *s = p + 1;; s++) {
		if (*s && *s != '/')
			continue;
		char c = *s;
		*s = 0;
		if (mkdir(p, (mode_t)mode) != 0 && errno != EEXIST) {
			if (failed && failed_cap)
				snprintf(failed, failed_cap, "%s", p);
			return KF_EIO;
		}
		if (!c)
			return 0;
		*s = c;
	}
}

void fs_rm_tree_at(int parent, const char *name)
{
	int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		unlinkat(parent, name, 0);
		return;
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(fd, e->d_name, 0) != 0 && (errno == EISDIR || errno == EPERM))
			fs_rm_tree_at(fd, e->d_name);
	}
	closedir(d);
	unlinkat(parent, name, AT_REMOVEDIR);
}

void fs_rm_tree(const char *path)
{
	fs_rm_tree_at(AT_FDCWD, path);
}

int fs_exe_path(char *buf, size_t cap)
{
	if (cap == 0)
		return KF_ETOOBIG;
	buf[0] = 0;
	ssize_t n = readlink("/proc/self/exe", buf, cap);
	if (n <= 0) {
		buf[0] = 0;
		return KF_EIO;
	}
	if ((size_t)n >= cap) { /* readlink cuts silently: a full buffer may be cut */
		buf[0] = 0;
		return KF_ETOOBIG;
	}
	buf[n] = 0;
	return 0;
}

int fs_exe_dir(char *buf, size_t cap)
{
	int rc = fs_exe_path(buf, cap);
	if (rc)
		return rc;
	char *slash = strrchr(buf, '/');
	if (!slash) {
		buf[0] = 0;
		return KF_EIO;
	}
	*slash = 0;
	return 0;
}
