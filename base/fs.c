/* fs: whole writes, tree removal, the executable's path; see fs.h. Tree
 * removal works on directory fds (openat with O_NOFOLLOW), so a symlink
 * placed in a job directory is removed, not followed out of it. */
#include "base/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
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
