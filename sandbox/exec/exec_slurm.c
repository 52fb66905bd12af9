/* exec_slurm: the Slurm side of the executor: the batch script, sbatch,
 * squeue/sacct, scancel, sinfo, each run as a plain child process (no
 * shell) with its output capped, and the table of job states. */
#include "sandbox/exec/exec.h"
#include "sandbox/exec/exec_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int exec_on_path(const char *prog)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];

	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, prog);
		if (n && access(buf, X_OK) == 0)
			return 1;
		path += n + (path[n] == ':');
	}
	return 0;
}

/* Appends what fd has to b (len kept under cap - 1); returns 0 at EOF. */
static int drain(int fd, char *b, size_t cap, size_t *len)
{
	char tmp[4096];
	ssize_t n = read(fd, tmp, sizeof(tmp));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0)
		return 0;
	if (*len + 1 < cap) {
		size_t k = (size_t)n < cap - 1 - *len ? (size_t)n : cap - 1 - *len;
		memcpy(b + *len, tmp, k);
		*len += k;
		b[*len] = '\0';
	}
	return 1;
}

int exec_cmd(const char *const *argv, char *out, size_t out_cap, char *errout, size_t err_cap,
	     int *status, struct kf_err *err)
{
	int po[2], pe[2], st = 0;
	size_t lo = 0, le = 0;
	pid_t pid;

	out[0] = errout[0] = '\0';
	*status = -1;
	if (pipe2(po, O_CLOEXEC))
		return kf_err_set(err, KF_EIO, "pipe: %s", strerror(errno));
	if (pipe2(pe, O_CLOEXEC)) {
		close(po[0]);
		close(po[1]);
		return kf_err_set(err, KF_EIO, "pipe: %s", strerror(errno));
	}
	pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		dup2(po[1], 1);
		dup2(pe[1], 2);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	if (pid < 0) {
		close(po[0]);
		close(pe[0]);
		return kf_err_set(err, KF_EIO, "cannot start %s: %s", argv[0], strerror(errno));
	}
	struct pollfd fds[2] = {{.fd = po[0], .events = POLLIN}, {.fd = pe[0], .events = POLLIN}};
	int open_fds = 2;
	while (open_fds > 0) {
		if (poll(fds, 2, -1) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (!drain(fds[i].fd, i ? errout : out, i ? err_cap : out_cap,
				   i ? &le : &lo)) {
				close(fds[i].fd);
				fds[i].fd = -1;
				open_fds--;
			}
		}
	}
	for (int i = 0; i < 2; i++)
		if (fds[i].fd >= 0)
			close(fds[i].fd);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (*status == 127 && !out[0])
		return kf_err_set(err, KF_EIO, "cannot run %s: not found on PATH", argv[0]);
	return 0;
}

/* One line, trimmed, newlines turned into "; ": what an error carries. */
static void one_line(const char *in, char *out, size_t cap)
{
	size_t n = 0;

	for (const char *c = in; *c && n + 3 < cap; c++) {
		if (*c == '\n') {
			if (c[1] && n)
				n += (size_t)snprintf(out + n, cap - n, "; ");
			continue;
		}
		out[n++] = *c;
	}
	out[n] = '\0';
}

/* The #SBATCH lines every job of cfg has: name, partition, gres, account,
 * time limit, --exclusive for a node to itself, --no-requeue. */
static void sbatch_options(FILE *f, const struct exec_config *cfg, const char *name, int exclusive,
			   const char *gres)
{
	fprintf(f, "#!/bin/sh\n#SBATCH --job-name=%s\n#SBATCH --partition=%s\n", name,
		cfg->partition);
	fprintf(f, "#SBATCH --gres=%s\n", gres ? gres : cfg->gres ? cfg->gres : "gpu:1");
	if (cfg->account)
		fprintf(f, "#SBATCH --account=%s\n", cfg->account);
	if (cfg->time_limit)
		fprintf(f, "#SBATCH --time=%s\n", cfg->time_limit);
	if (exclusive)
		fprintf(f, "#SBATCH --exclusive\n");
	/* A node failure comes back to the daemon, which retries it once
	 * elsewhere; Slurm's own requeue would run it again unseen. */
	fprintf(f, "#SBATCH --no-requeue\n");
}

int exec_slurm_write_script(const struct exec_config *cfg, const char *kforge, const char *dir,
			    const char *key, int exclusive, const char *gres, struct kf_err *err)
{
	char p[PATH_MAX], name[64];
	FILE *f;

	snprintf(p, sizeof(p), "%s/job.sh", dir);
	f = fopen(p, "w");
	if (!f)
		return kf_err_set(err, KF_EIO, "cannot write %s: %s", p, strerror(errno));
	snprintf(name, sizeof(name), "kforge-%s", key);
	sbatch_options(f, cfg, name, exclusive, gres);
	fprintf(f, "#SBATCH --output=%s/slurm-%%j.out\n", dir);
	fprintf(f, "#SBATCH --chdir=%s\nexec '%s' exec-job '%s'%s\n", dir, kforge, dir,
		cfg->sandbox_none ? " --sandbox=none" : "");
	if (fclose(f))
		return kf_err_set(err, KF_EIO, "cannot write %s", p);
	return 0;
}

int exec_slurm_write_array(const struct exec_config *cfg, const char *kforge, const char *script,
			   struct history_job *const *jobs, int n, int throttle, int exclusive,
			   const char *gres, struct kf_err *err)
{
	char name[64];
	FILE *f = fopen(script, "w");

	if (!f)
		return kf_err_set(err, KF_EIO, "cannot write %s: %s", script, strerror(errno));
	snprintf(name, sizeof(name), "kforge-array-%s", jobs[0]->key);
	sbatch_options(f, cfg, name, exclusive, gres);
	/* Each element writes its own log into its own directory; Slurm's
	 * one --output pattern cannot name n directories. */
	fprintf(f, "#SBATCH --array=0-%d%%%d\n#SBATCH --output=/dev/null\n", n - 1, throttle);
	fprintf(f, "case \"$SLURM_ARRAY_TASK_ID\" in\n");
	for (int i = 0; i < n; i++)
		fprintf(f, "%d) d='%s' ;;\n", i, jobs[i]->dir);
	fprintf(f, "*) echo \"kforge: no element $SLURM_ARRAY_TASK_ID\" >&2; exit 2 ;;\nesac\n");
	fprintf(f,
		"exec >\"$d/slurm-${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.out\" 2>&1\n"
		"cd \"$d\" && exec '%s' exec-job \"$d\"%s\n",
		kforge, cfg->sandbox_none ? " --sandbox=none" : "");
	if (fclose(f))
		return kf_err_set(err, KF_EIO, "cannot write %s", script);
	return 0;
}

int exec_slurm_submit(const char *script, const char *exclude, char *id, size_t id_cap, char *said,
		      size_t said_cap, struct kf_err *err)
{
	char excl[300], out[EXEC_CMD_OUT_BYTES], errout[EXEC_CMD_OUT_BYTES];
	const char *argv[5] = {"sbatch", "--parsable"};
	int n = 2, status, rc;

	said[0] = id[0] = '\0';
	if (exclude && *exclude) {
		snprintf(excl, sizeof(excl), "--exclude=%s", exclude);
		argv[n++] = excl;
	}
	argv[n++] = script;
	argv[n] = NULL;
	rc = exec_cmd(argv, out, sizeof(out), errout, sizeof(errout), &status, err);
	if (rc)
		return rc;
	if (status != 0) {
		one_line(errout[0] ? errout : out, said, said_cap);
		return kf_err_set(err, KF_EINVAL, "slurm refused the job: %s", said);
	}
	/* "1234" or "1234;cluster" */
	size_t k = strspn(out, "0123456789_");
	if (k == 0 || k >= id_cap) {
		one_line(out, said, said_cap);
		return kf_err_set(err, KF_EIO, "sbatch printed no job id: '%s'", said);
	}
	memcpy(id, out, k);
	id[k] = '\0';
	return 0;
}

int exec_slurm_parse_line(const char *line, char *state, size_t state_cap, char *reason,
			  size_t reason_cap, char *nodes, size_t nodes_cap)
{
	const char *a = strchr(line, '|'), *b = a ? strchr(a + 1, '|') : NULL;
	size_t nl;

	if (!a || !b)
		return KF_EINVAL;
	nl = strcspn(b + 1, "\n");
	snprintf(state, state_cap, "%.*s", (int)(a - line), line);
	snprintf(reason, reason_cap, "%.*s", (int)(b - a - 1), a + 1);
	snprintf(nodes, nodes_cap, "%.*s", (int)nl, b + 1);
	return 0;
}

int exec_slurm_query(const char *id, char *state, size_t state_cap, char *reason, size_t reason_cap,
		     char *nodes, size_t nodes_cap)
{
	char out[EXEC_CMD_OUT_BYTES], errout[EXEC_CMD_OUT_BYTES];
	const char *sq[] = {"squeue", "-h", "-t", "all", "-j", id, "-o", "%T|%r|%N", NULL};
	const char *sa[] = {"sacct", "-n", "-X", "-P", "-j", id, "-o", "State,ExitCode,NodeList",
			    NULL};
	struct kf_err e = {0};
	int status, down = 1;

	if (exec_cmd(sq, out, sizeof(out), errout, sizeof(errout), &status, &e) == 0) {
		if (status == 0 && exec_slurm_parse_line(out, state, state_cap, reason, reason_cap,
							 nodes, nodes_cap) == 0)
			return 0;
		down = status != 0 && !strstr(errout, "Invalid job id");
	}
	/* squeue forgets a job MinJobAge seconds after it ends; the
	 * accounting database (where there is one) keeps it. */
	if (exec_cmd(sa, out, sizeof(out), errout, sizeof(errout), &status, &e) == 0 &&
	    status == 0 &&
	    exec_slurm_parse_line(out, state, state_cap, reason, reason_cap, nodes, nodes_cap) == 0)
		return 0;
	/* squeue could not reach the controller (restarting, unreachable):
	 * the job may be fine; the caller asks again later. */
	return down ? KF_EIO : KF_ENOTFOUND;
}

int exec_slurm_list_array(const char *array_id, char *out, size_t cap)
{
	char errout[EXEC_CMD_OUT_BYTES];
	const char *argv[] = {"squeue", "-h",	  "-r", "-t",	       "all",
			      "-j",	array_id, "-o", "%i|%T|%r|%N", NULL};
	struct kf_err e = {0};
	int status;

	if (exec_cmd(argv, out, cap, errout, sizeof(errout), &status, &e) || status) {
		out[0] = '\0';
		return KF_EIO;
	}
	return 0;
}

int exec_slurm_find(const char *key, char *id, size_t id_cap)
{
	char name[64], out[EXEC_CMD_OUT_BYTES], errout[EXEC_CMD_OUT_BYTES];
	const char *argv[] = {"squeue", "-h", "-t", "all", "-n", name, "-o", "%i", NULL};
	struct kf_err e = {0};
	int status;
	size_t k;

	snprintf(name, sizeof(name), "kforge-%s", key);
	if (exec_cmd(argv, out, sizeof(out), errout, sizeof(errout), &status, &e) || status)
		return KF_ENOTFOUND;
	k = strspn(out, "0123456789_");
	if (k == 0 || k >= id_cap)
		return KF_ENOTFOUND;
	snprintf(id, id_cap, "%.*s", (int)k, out);
	return 0;
}

void exec_slurm_cancel(const char *id)
{
	char out[256], errout[256];
	const char *argv[] = {"scancel", id, NULL};
	struct kf_err e = {0};
	int status;

	(void)exec_cmd(argv, out, sizeof(out), errout, sizeof(errout), &status, &e);
}

int exec_slurm_partitions(char *out, size_t cap, struct kf_err *err)
{
	char buf[EXEC_CMD_OUT_BYTES], errout[EXEC_CMD_OUT_BYTES], said[EXEC_SAID_BYTES];
	const char *argv[] = {"sinfo", "-h", "-o", "%R", NULL};
	int status, rc;
	size_t n = 0;

	rc = exec_cmd(argv, buf, sizeof(buf), errout, sizeof(errout), &status, err);
	if (rc)
		return rc;
	if (status) {
		one_line(errout, said, sizeof(said));
		return kf_err_set(err, KF_EIO, "sinfo failed (is slurmctld reachable?): %s", said);
	}
	out[0] = '\0';
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
		if (n + 2 < cap && !strstr(out, line))
			n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? "," : "", line);
	return 0;
}

int exec_slurm_gres_types(const char *sinfo_out, char (*types)[EXEC_GPU_TYPE_BYTES], int cap)
{
	int n = 0;
	const char *p = sinfo_out;

	while (p && *p && n < cap) {
		/* one entry: up to a ',' or newline outside parentheses */
		size_t len = 0;
		int depth = 0;
		while (p[len] && p[len] != '\n' && (depth || p[len] != ',')) {
			depth += p[len] == '(' ? 1 : p[len] == ')' && depth ? -1 : 0;
			len++;
		}
		size_t core = strcspn(p, "(,\n");
		if (core > len)
			core = len;
		const char *c1 = memchr(p, ':', core);
		const char *c2 = c1 ? memchr(c1 + 1, ':', core - (size_t)(c1 + 1 - p)) : NULL;
		/* "gpu:TYPE:COUNT": typed; "gpu:COUNT" or another gres: not */
		if (c1 && c2 && c1 - p == 3 && !strncmp(p, "gpu", 3) && c2 > c1 + 1 &&
		    (size_t)(c2 - c1 - 1) < EXEC_GPU_TYPE_BYTES) {
			char t[EXEC_GPU_TYPE_BYTES];
			int ok = 1, seen = 0;
			snprintf(t, sizeof(t), "%.*s", (int)(c2 - c1 - 1), c1 + 1);
			for (const char *c = t; *c; c++)
				ok &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
				      (*c >= '0' && *c <= '9') || *c == '_' || *c == '-' ||
				      *c == '.';
			for (int i = 0; i < n; i++)
				seen |= strcmp(types[i], t) == 0;
			if (ok && !seen)
				snprintf(types[n++], EXEC_GPU_TYPE_BYTES, "%s", t);
		}
		p += len;
		if (*p)
			p++;
	}
	return n;
}

int exec_slurm_gres(const char *partition, char *out, size_t cap, struct kf_err *err)
{
	char errout[EXEC_CMD_OUT_BYTES], said[EXEC_SAID_BYTES];
	const char *argv[] = {"sinfo", "-h", "-p", partition, "-o", "%G", NULL};
	int status, rc = exec_cmd(argv, out, cap, errout, sizeof(errout), &status, err);

	if (rc)
		return rc;
	if (status) {
		one_line(errout, said, sizeof(said));
		return kf_err_set(err, KF_EIO, "sinfo -p %s -o %%G failed: %s", partition, said);
	}
	return 0;
}

/* --- states ---------------------------------------------------------- */

/* Pending reasons that no amount of waiting resolves: the request exceeds
 * what the partition, account or nodes allow. */
static const char *const HOPELESS[] = {"PartitionTimeLimit",
				       "PartitionNodeLimit",
				       "PartitionConfig",
				       "BadConstraints",
				       "InvalidAccount",
				       "InvalidQOS",
				       "QOSMaxWallDurationPerJobLimit",
				       "AssocMaxWallDurationPerJobLimit",
				       "PartitionDown",
				       "DependencyNeverSatisfied"};

enum exec_verdict exec_slurm_verdict(const char *state, const char *reason)
{
	static const char *const RETRY[] = {"NODE_FAIL", "PREEMPTED", "BOOT_FAIL"};
	static const char *const FAILED[] = {"FAILED",	"TIMEOUT",	"OUT_OF_MEMORY", "DEADLINE",
					     "REVOKED", "SPECIAL_EXIT", "OUT_OF_ME+"};
	size_t n = strcspn(state, " +");

	if (n == 9 && strncmp(state, "COMPLETED", 9) == 0)
		return EXEC_DONE;
	if (strncmp(state, "CANCELLED", 9) == 0)
		return EXEC_CANCELLED;
	for (size_t i = 0; i < sizeof(RETRY) / sizeof(RETRY[0]); i++)
		if (strlen(RETRY[i]) == n && strncmp(state, RETRY[i], n) == 0)
			return EXEC_RETRY;
	for (size_t i = 0; i < sizeof(FAILED) / sizeof(FAILED[0]); i++)
		if (strncmp(state, FAILED[i], strlen(FAILED[i])) == 0)
			return EXEC_FAILED;
	if (strncmp(state, "PENDING", 7) == 0 && reason)
		for (size_t i = 0; i < sizeof(HOPELESS) / sizeof(HOPELESS[0]); i++)
			if (strncmp(reason, HOPELESS[i], strlen(HOPELESS[i])) == 0)
				return EXEC_FAILED;
	return EXEC_WAIT;
}
