/* fs: the file-system helpers every layer needs, one copy each: writing a
 * whole buffer, removing a directory tree without following links, and
 * where the running binary is (data files are found next to it). */
#ifndef KF_FS_H
#define KF_FS_H

#include <stddef.h>

/* Writes all len bytes of data to fd, retrying short writes and EINTR.
 * Returns 0, or KF_EIO when a write fails (fd stays open: the caller's).
 * data: borrowed. */
int fs_write_all(int fd, const void *data, size_t len) __attribute__((warn_unused_result));

/* Creates or truncates path (mode 0644, never through a symlink at path) and
 * writes len bytes of data to it. Returns 0, or KF_EIO when the open, a
 * write or the close fails. path, data: borrowed. */
int fs_write_file(const char *path, const void *data, size_t len)
	__attribute__((warn_unused_result));

enum {
	FS_UNTRUSTED = 1 /* fs_read_file: refuse a symlink at path and anything
			  * but a regular file (a job directory's outputs) */
};

/* Reads all of path into *out, a new NUL-terminated buffer (free with
 * free()), its length without the NUL in *len (may be NULL); a regular file
 * as far as the size it had when opened. Returns 0;
 * KF_ETOOBIG when path holds more than cap bytes; KF_ENOMEM; KF_EIO when it
 * cannot be opened or read (errno says why; EINVAL for a FS_UNTRUSTED path
 * that is not a regular file). *out is NULL on error. path: borrowed. */
int fs_read_file(const char *path, size_t cap, int flags, char **out, size_t *len)
	__attribute__((warn_unused_result));

/* mkdir -p: creates path and every missing folder above it with mode
 * (existing ones are kept as they are). Returns 0; KF_ETOOBIG when path is
 * PATH_MAX or longer; KF_EIO when a mkdir fails (errno says why), with the
 * folder that could not be made copied into failed (failed_cap bytes; NULL
 * allowed) so the caller's message can name it. path: borrowed. */
int fs_mkdir_p(const char *path, unsigned mode, char *failed, size_t failed_cap)
	__attribute__((warn_unused_result));

/* Removes name (relative to the directory fd parent, or AT_FDCWD) and, when
 * it is a directory, everything below it. Symlinks are removed, never
 * followed. Best effort: what cannot be removed stays. name: borrowed. */
void fs_rm_tree_at(int parent, const char *name);

/* fs_rm_tree_at(AT_FDCWD, path). path: borrowed. */
void fs_rm_tree(const char *path);

/* Writes the absolute path of the running executable (/proc/self/exe) into
 * buf. Returns 0, KF_EIO when it cannot be read, KF_ETOOBIG when it does not
 * fit in cap bytes; on failure buf is "" (cap > 0). */
int fs_exe_path(char *buf, size_t cap) __attribute__((warn_unused_result));

/* As fs_exe_path, but the directory holding the executable (no trailing
 * '/'): "build" for the daemon in a checkout. */
int fs_exe_dir(char *buf, size_t cap) __attribute__((warn_unused_result));

#endif
