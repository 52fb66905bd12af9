/* check_base: the shared helpers of base/ that every layer uses: whole
 * writes and reads (fs_write_all, fs_write_file, fs_read_file), tree
 * removal that never follows a link out of the tree (fs_rm_tree), the
 * executable's path (fs_exe_path, fs_exe_dir), str_replace_all, the
 * parallel for over fixed chunks (par_for) and large host buffers
 * (mem_alloc_big). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/kf_err.h"
#include "base/mem.h"
#include "base/par.h"
#include "base/str.h"

static char tmp[PATH_MAX];

static void setup(void)
{
	snprintf(tmp, sizeof tmp, "%s/kf-base-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void teardown(void)
{
	fs_rm_tree(tmp);
}

static int exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

START_TEST(replace_all_replaces_every_occurrence_left_to_right)
{
	char *s = str_replace_all("$d x $d", "$d", "float");
	ck_assert_str_eq(s, "float x float");
	free(s);
	s = str_replace_all("aaaa", "aa", "a"); /* no overlaps: two matches */
	ck_assert_str_eq(s, "aa");
	free(s);
	s = str_replace_all("/job/a.cu:/job/b.cu", "/job/", "");
	ck_assert_str_eq(s, "a.cu:b.cu");
	free(s);
	s = str_replace_all("none here", "xyz", "q");
	ck_assert_str_eq(s, "none here");
	free(s);
	s = str_replace_all("keep", "", "q"); /* an empty pattern matches nothing */
	ck_assert_str_eq(s, "keep");
	free(s);
}
END_TEST

START_TEST(write_file_writes_truncates_and_refuses_a_symlink)
{
	char p[PATH_MAX + 16], q[PATH_MAX + 16], buf[64] = {0};
	snprintf(p, sizeof p, "%s/f", tmp);
	ck_assert_int_eq(fs_write_file(p, "longer text", 11), 0);
	ck_assert_int_eq(fs_write_file(p, "short", 5), 0);
	FILE *f = fopen(p, "rb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fread(buf, 1, sizeof buf - 1, f), 5);
	fclose(f);
	ck_assert_str_eq(buf, "short");
	/* A link at the path is never written through. */
	snprintf(q, sizeof q, "%s/link", tmp);
	ck_assert_int_eq(symlink(p, q), 0);
	ck_assert_int_eq(fs_write_file(q, "evil", 4), KF_EIO);
	f = fopen(p, "rb");
	memset(buf, 0, sizeof buf);
	ck_assert_uint_eq(fread(buf, 1, sizeof buf - 1, f), 5);
	fclose(f);
	ck_assert_str_eq(buf, "short");
	snprintf(q, sizeof q, "%s/no/such/dir", tmp);
	ck_assert_int_eq(fs_write_file(q, "x", 1), KF_EIO);
}
END_TEST

START_TEST(read_file_reads_whole_files_under_the_cap_only)
{
	char p[PATH_MAX + 16], q[PATH_MAX + 16], *buf = (char *)1;
	size_t len = 99;
	snprintf(p, sizeof p, "%s/f", tmp);
	ck_assert_int_eq(fs_write_file(p, "hello", 5), 0);
	ck_assert_int_eq(fs_read_file(p, 5, 0, &buf, &len), 0);
	ck_assert_str_eq(buf, "hello");
	ck_assert_uint_eq(len, 5);
	free(buf);
	ck_assert_int_eq(fs_read_file(p, 4, 0, &buf, &len), KF_ETOOBIG);
	ck_assert_ptr_null(buf);
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(fs_write_file(p, "", 0), 0);
	ck_assert_int_eq(fs_read_file(p, 0, FS_UNTRUSTED, &buf, NULL), 0);
	ck_assert_str_eq(buf, "");
	free(buf);
	snprintf(q, sizeof q, "%s/missing", tmp);
	ck_assert_int_eq(fs_read_file(q, 10, 0, &buf, NULL), KF_EIO);
	ck_assert_int_eq(errno, ENOENT);
	/* Untrusted: a link is followed only when the caller allows it. */
	snprintf(q, sizeof q, "%s/link", tmp);
	ck_assert_int_eq(symlink(p, q), 0);
	ck_assert_int_eq(fs_read_file(q, 10, 0, &buf, NULL), 0);
	free(buf);
	ck_assert_int_eq(fs_read_file(q, 10, FS_UNTRUSTED, &buf, NULL), KF_EIO);
	ck_assert_int_eq(fs_read_file(tmp, 10, FS_UNTRUSTED, &buf, NULL), KF_EIO);
	ck_assert_int_eq(errno, EINVAL);
	/* A pipe has no size: one byte past the cap shows it is over. */
	int fd[2];
	ck_assert_int_eq(pipe(fd), 0);
	ck_assert_int_eq(fs_write_all(fd[1], "abcdef", 6), 0);
	close(fd[1]);
	snprintf(q, sizeof q, "/proc/self/fd/%d", fd[0]);
	ck_assert_int_eq(fs_read_file(q, 5, 0, &buf, NULL), KF_ETOOBIG);
	close(fd[0]);
}
END_TEST

START_TEST(mkdir_p_makes_every_missing_folder_and_names_the_one_it_cannot)
{
	char p[PATH_MAX + 64], failed[PATH_MAX] = "junk";
	struct stat st;
	snprintf(p, sizeof p, "%s/a/b/c", tmp);
	ck_assert_int_eq(fs_mkdir_p(p, 0700, failed, sizeof failed), 0);
	ck_assert_str_eq(failed, "");
	ck_assert(stat(p, &st) == 0 && S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 0777, 0700);
	ck_assert_int_eq(fs_mkdir_p(p, 0700, NULL, 0), 0); /* exists: fine */
	snprintf(p, sizeof p, "%s/a/b/c/", tmp);	   /* a trailing slash */
	ck_assert_int_eq(fs_mkdir_p(p, 0700, NULL, 0), 0);
	/* A file in the way: the first folder that could not be made is named. */
	char f[PATH_MAX + 16], want[PATH_MAX + 32];
	snprintf(f, sizeof f, "%s/file", tmp);
	ck_assert_int_eq(fs_write_file(f, "x", 1), 0);
	snprintf(p, sizeof p, "%s/file/sub/deeper", tmp);
	ck_assert_int_eq(fs_mkdir_p(p, 0755, failed, sizeof failed), KF_EIO);
	snprintf(want, sizeof want, "%s/sub", f);
	ck_assert_str_eq(failed, want);
	ck_assert_int_eq(errno, ENOTDIR);
	ck_assert_int_eq(fs_mkdir_p("", 0755, failed, sizeof failed), KF_EIO);
	static char longp[PATH_MAX + 8];
	memset(longp, 'a', sizeof longp - 1);
	ck_assert_int_eq(fs_mkdir_p(longp, 0755, NULL, 0), KF_ETOOBIG);
}
END_TEST

START_TEST(write_all_writes_everything_and_fails_on_a_closed_pipe)
{
	int fd[2];
	ck_assert_int_eq(pipe(fd), 0);
	static char big[48 << 10]; /* under the pipe's 64 KiB: no reader needed */
	memset(big, 'k', sizeof big);
	ck_assert_int_eq(fs_write_all(fd[1], big, sizeof big), 0);
	size_t got = 0;
	char r[4096];
	close(fd[1]);
	for (ssize_t n; (n = read(fd[0], r, sizeof r)) > 0;)
		got += (size_t)n;
	ck_assert_uint_eq(got, sizeof big);
	close(fd[0]);

	ck_assert_int_eq(pipe(fd), 0);
	close(fd[0]);
	signal(SIGPIPE, SIG_IGN);
	ck_assert_int_eq(fs_write_all(fd[1], "x", 1), KF_EIO);
	close(fd[1]);
}
END_TEST

START_TEST(rm_tree_removes_nested_dirs_but_not_what_a_link_points_at)
{
	char d[PATH_MAX + 64], p[PATH_MAX + 128], outside[PATH_MAX + 32];
	snprintf(outside, sizeof outside, "%s/outside", tmp);
	ck_assert_int_eq(mkdir(outside, 0755), 0);
	snprintf(p, sizeof p, "%s/keep.txt", outside);
	ck_assert_int_eq(fs_write_file(p, "keep", 4), 0);

	snprintf(d, sizeof d, "%s/job", tmp);
	ck_assert_int_eq(mkdir(d, 0755), 0);
	snprintf(p, sizeof p, "%s/a", d);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/a/b", d);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof p, "%s/a/b/f.bin", d);
	ck_assert_int_eq(fs_write_file(p, "x", 1), 0);
	snprintf(p, sizeof p, "%s/escape", d);
	ck_assert_int_eq(symlink(outside, p), 0);

	fs_rm_tree(d);
	ck_assert(!exists(d));
	snprintf(p, sizeof p, "%s/keep.txt", outside);
	ck_assert(exists(p));
	/* A missing path is not an error. */
	fs_rm_tree(d);
	/* A link given as the tree itself is removed, its target kept. */
	snprintf(p, sizeof p, "%s/top-link", tmp);
	ck_assert_int_eq(symlink(outside, p), 0);
	fs_rm_tree(p);
	ck_assert(!exists(p));
	ck_assert(exists(outside));
}
END_TEST

START_TEST(exe_path_and_dir_name_this_test_binary)
{
	char path[PATH_MAX], dir[PATH_MAX], real[PATH_MAX];
	ck_assert_int_eq(fs_exe_path(path, sizeof path), 0);
	ck_assert_ptr_nonnull(realpath("/proc/self/exe", real));
	ck_assert_str_eq(path, real);
	ck_assert_int_eq(fs_exe_dir(dir, sizeof dir), 0);
	size_t n = strlen(dir);
	ck_assert(n > 0 && !strncmp(path, dir, n) && path[n] == '/');
	ck_assert_ptr_null(strchr(path + n + 1, '/'));
	/* Too small a buffer is refused, never cut. */
	char small[8] = "junk";
	ck_assert_int_eq(fs_exe_path(small, sizeof small), KF_ETOOBIG);
	ck_assert_str_eq(small, "");
	ck_assert_int_eq(fs_exe_dir(small, sizeof small), KF_ETOOBIG);
}
END_TEST

struct par_seen {
	int hits[1000];
	int bad_bounds;
};

static void par_mark(void *arg, uint64_t c, uint64_t lo, uint64_t hi)
{
	struct par_seen *p = arg;
	if (lo != c * 7 || hi > 1000 || hi <= lo || (hi - lo != 7 && hi != 1000))
		p->bad_bounds++;
	for (uint64_t i = lo; i < hi && i < 1000; i++)
		p->hits[i]++;
}

static void par_never(void *arg, uint64_t c, uint64_t lo, uint64_t hi)
{
	(void)c;
	(void)lo;
	(void)hi;
	(*(int *)arg)++;
}

START_TEST(par_for_runs_every_fixed_chunk_exactly_once)
{
	struct par_seen *p = calloc(1, sizeof *p);
	ck_assert_ptr_nonnull(p);
	par_for(1000, 7, par_mark, p);
	ck_assert_int_eq(p->bad_bounds, 0);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(p->hits[i], 1);
	free(p);
	ck_assert_uint_eq(par_chunks(1000, 7), 143);
	ck_assert_uint_eq(par_chunks(14, 7), 2);
	ck_assert_uint_eq(par_chunks(5, 0), 5); /* chunk 0 is taken as 1 */
	ck_assert_uint_eq(par_chunks(0, 5), 0);
	int calls = 0;
	par_for(0, 5, par_never, &calls);
	ck_assert_int_eq(calls, 0);
}
END_TEST

START_TEST(alloc_big_aligns_large_buffers_to_huge_pages_and_refuses_overflow)
{
	char *small = mem_alloc_big(0), *big = mem_alloc_big(MEM_BIG_BYTES + 3);
	ck_assert_ptr_nonnull(small);
	ck_assert_ptr_nonnull(big);
	ck_assert_uint_eq((uintptr_t)big % (2u << 20), 0);
	memset(big, 0x5a, MEM_BIG_BYTES + 3); /* all of it is usable */
	ck_assert_int_eq(big[MEM_BIG_BYTES + 2], 0x5a);
	free(small);
	free(big);
	ck_assert_ptr_null(mem_alloc_big(SIZE_MAX));
	ck_assert_ptr_null(mem_alloc_big(SIZE_MAX - (1u << 20)));
}
END_TEST

static Suite *base_suite(void)
{
	Suite *s = suite_create("base");
	TCase *t = tcase_create("str");
	tcase_add_test(t, replace_all_replaces_every_occurrence_left_to_right);
	suite_add_tcase(s, t);
	TCase *f = tcase_create("fs");
	tcase_add_checked_fixture(f, setup, teardown);
	tcase_add_test(f, write_file_writes_truncates_and_refuses_a_symlink);
	tcase_add_test(f, read_file_reads_whole_files_under_the_cap_only);
	tcase_add_test(f, mkdir_p_makes_every_missing_folder_and_names_the_one_it_cannot);
	tcase_add_test(f, write_all_writes_everything_and_fails_on_a_closed_pipe);
	tcase_add_test(f, rm_tree_removes_nested_dirs_but_not_what_a_link_points_at);
	tcase_add_test(f, exe_path_and_dir_name_this_test_binary);
	tcase_add_test(f, par_for_runs_every_fixed_chunk_exactly_once);
	tcase_add_test(f, alloc_big_aligns_large_buffers_to_huge_pages_and_refuses_overflow);
	suite_add_tcase(s, f);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(base_suite());
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? 1 : 0;
}
