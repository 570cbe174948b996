// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Every file the daemon or the CLI reads where a user can point it
 * (issue 22, item 1), against every kind of file that can sit at that
 * path: a FIFO, a socket, a character device, /dev/zero, a directory, a
 * symlink loop, a symlink to a FIFO, nothing. Each reader runs in a child
 * with a 2 s watchdog, so a reader that blocks (open(2) of a FIFO waits for
 * a writer) fails its check instead of hanging the test; each must refuse
 * at once (< 500 ms, generous for a loaded machine) with an error, and
 * those that give a reason must name the kind of file. The readers: the
 * shared helper (user/lib/safefile.h), the shedding signal (file: and
 * psi:), the shedder's, escalation's and the fleet's state files, the
 * policy. The writers of state files must never open a FIFO or follow a
 * symlink planted at their temporary name. No root needed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include "fgtest.h"
#include "fleet/fleet_status.h"
#include "lib/safefile.h"
#include "lib/sysutil.h"
#include "lists/escalate.h"
#include "policy/policy.h"
#include "shed/fgsignal.h"
#include "shed/shedstate.h"

#define WATCHDOG_MS 2000
#define AT_ONCE_MS  500

static char dir[] = "/tmp/fg-test-safefile.XXXXXX";
static int sock_fd = -1;

/* --- the kinds of file ------------------------------------------------------ */

struct kind {
	const char *name;
	const char *what; /* a part of the reason, "" when any error will do */
	char path[128];
};

static struct kind kinds[] = {
	{ "fifo", "FIFO" },
	{ "socket", "socket" },
	{ "chardev", "character device" }, /* /dev/null */
	{ "devzero", "character device" }, /* endless */
	{ "dir", "directory" },
	{ "loop", "symbolic links" },
	{ "fifo-link", "FIFO" }, /* a symlink to the FIFO: what counts is what it is */
	{ "missing", "No such file" },
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static int make_kinds(void)
{
	char p[160];
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	for (size_t i = 0; i < NKINDS; i++)
		snprintf(kinds[i].path, sizeof(kinds[i].path), "%s/%s", dir, kinds[i].name);
	if (mkfifo(kinds[0].path, 0600))
		return -errno;
	sock_fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (strlen(kinds[1].path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, kinds[1].path, strlen(kinds[1].path) + 1);
	if (sock_fd < 0 || bind(sock_fd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    listen(sock_fd, 1))
		return -errno;
	snprintf(kinds[2].path, sizeof(kinds[2].path), "/dev/null");
	snprintf(kinds[3].path, sizeof(kinds[3].path), "/dev/zero");
	if (mkdir(kinds[4].path, 0700))
		return -errno;
	snprintf(p, sizeof(p), "%s/loop2", dir);
	if (symlink(p, kinds[5].path) || symlink(kinds[5].path, p))
		return -errno;
	if (symlink(kinds[0].path, kinds[6].path))
		return -errno;
	return 0;
}

static void remove_kinds(void)
{
	char p[160];

	if (sock_fd >= 0)
		close(sock_fd);
	unlink(kinds[0].path);
	unlink(kinds[1].path);
	rmdir(kinds[4].path);
	unlink(kinds[5].path);
	snprintf(p, sizeof(p), "%s/loop2", dir);
	unlink(p);
	unlink(kinds[6].path);
}

/* --- a reader under a watchdog ---------------------------------------------- */

typedef int (*reader_fn)(const char *path, char *why);

struct outcome {
	int ret;	      /* the reader's return; -ETIMEDOUT when the watchdog fired */
	double ms;	      /* how long it took */
	char why[FG_WHY_LEN]; /* its reason, if it gives one */
};

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* fn(path) in a child; its result through a pipe, or -ETIMEDOUT after the watchdog. */
static struct outcome run_reader(reader_fn fn, const char *path)
{
	struct outcome o = { .ret = -ETIMEDOUT };
	struct timespec t0;
	int pfd[2];
	pid_t pid;

	if (pipe(pfd)) {
		o.ret = -errno;
		return o;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid == 0) {
		struct outcome c = {};

		close(pfd[0]);
		c.ret = fn(path, c.why);
		if (write(pfd[1], &c, sizeof(c)) != sizeof(c))
			_exit(2);
		_exit(0);
	}
	close(pfd[1]);
	if (pid > 0) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		struct outcome c;

		if (poll(&p, 1, WATCHDOG_MS) == 1 && read(pfd[0], &c, sizeof(c)) == sizeof(c))
			o = c;
		else
			kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	o.ms = ms_since(&t0);
	close(pfd[0]);
	return o;
}

/* --- the readers ------------------------------------------------------------ */

static int rd_small(const char *path, char *why)
{
	char buf[64];
	ssize_t n = fg_read_small(path, buf, sizeof(buf), why);

	return n < 0 ? (int)n : 0;
}

static int rd_fopen(const char *path, char *why)
{
	FILE *f = fg_fopen_regular(path, why);

	if (!f)
		return -errno;
	fclose(f);
	return 0;
}

static int rd_signal(const char *spec_kind, const char *path, char *why)
{
	char spec[200];
	struct fg_signal s;
	double v;
	int err;

	snprintf(spec, sizeof(spec), "%s:%s", spec_kind, path);
	err = fg_signal_parse(spec, &s, why);
	if (!err)
		err = fg_signal_open(&s);
	if (!err)
		err = fg_signal_read(&s, &v);
	if (err && s.why[0])
		fg_why(why, "%s", s.why);
	fg_signal_close(&s);
	return err;
}

static int rd_sig_file(const char *path, char *why)
{
	return rd_signal("file", path, why);
}

static int rd_sig_psi(const char *path, char *why)
{
	return rd_signal("psi", path, why);
}

static int rd_shed_state(const char *path, char *why)
{
	struct fg_shedd_state st;

	(void)why;
	return fg_shedd_state_read(path, &st);
}

static int rd_esc_state(const char *path, char *why)
{
	struct fg_escd_state st;

	(void)why;
	return fg_escd_state_read(path, &st);
}

static int rd_fleet_status(const char *path, char *why)
{
	static struct fg_fleet_status st;

	(void)why;
	return fg_fleet_status_read(path, &st);
}

static int rd_policy(const char *path, char *why)
{
	struct fg_config cfg;
	struct fg_err err = {};
	int ret = fg_config_load(path, &cfg, &err);

	fg_why(why, "%s", err.msg);
	if (!ret)
		fg_config_free(&cfg);
	return ret;
}

static const struct {
	const char *name;
	reader_fn fn;
	bool reason; /* gives a reason naming the kind */
} readers[] = {
	{ "fg_read_small", rd_small, true },
	{ "fg_fopen_regular", rd_fopen, true },
	{ "signal file:", rd_sig_file, true },
	{ "signal psi:", rd_sig_psi, true },
	{ "shedder state file", rd_shed_state, false },
	{ "escalation state file", rd_esc_state, false },
	{ "fleet status file", rd_fleet_status, false },
	{ "policy", rd_policy, true },
};

/* Every reader on every kind: an error, at once, the kind named. */
static void test_every_reader_every_kind(void)
{
	char name[256];

	for (size_t r = 0; r < sizeof(readers) / sizeof(readers[0]); r++)
		for (size_t k = 0; k < NKINDS; k++) {
			struct outcome o = run_reader(readers[r].fn, kinds[k].path);

			snprintf(name, sizeof(name), "%s on %s (%s)", readers[r].name,
				 kinds[k].name, kinds[k].path);
			if (!ASSERT_NEQ(o.ret, -ETIMEDOUT, name))
				printf("  %s: still blocked after %d ms\n", name, WATCHDOG_MS);
			ASSERT_TRUE(o.ret < 0, name);
			if (!ASSERT_TRUE(o.ms < AT_ONCE_MS, name))
				printf("  %s: took %.1f ms\n", name, o.ms);
			if (readers[r].reason && o.ret != -ETIMEDOUT)
				ASSERT_STR_CONTAINS(o.why, kinds[k].what, name);
		}
}

/* A regular file still reads, through a symlink too; bounds hold. */
static void test_regular_reads(void)
{
	char path[160], link[160], buf[8], pbuf[64], why[FG_WHY_LEN];
	int fd;

	snprintf(path, sizeof(path), "%s/regular", dir);
	snprintf(link, sizeof(link), "%s/regular-link", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (!ASSERT_TRUE(fd >= 0, "create a regular file"))
		return;
	ASSERT_EQ(write(fd, "0.5\n", 4), 4, "write it");
	close(fd);
	ASSERT_EQ(fg_read_small(path, buf, sizeof(buf), why), 4, "read whole");
	ASSERT_STR_CONTAINS(buf, "0.5", "its text");
	ASSERT_OK(symlink(path, link) ? -errno : 0, "a symlink to it");
	ASSERT_EQ(fg_read_small(link, buf, sizeof(buf), why), 4, "read through a symlink");
	ASSERT_EQ(fg_read_small(path, buf, 4, why), -EFBIG, "4 bytes into 3 + NUL");
	ASSERT_STR_CONTAINS(why, "more than 3 bytes", "the bound named");
	/* /proc files are regular files that report size 0 */
	ASSERT_TRUE(fg_read_small("/proc/self/comm", pbuf, sizeof(pbuf), why) > 0,
		    "a /proc file reads");
	unlink(link);
	unlink(path);
}

/* Writers of state files: a FIFO or a symlink planted at the temporary
 * name is replaced, never opened or followed. */
static void fill(FILE *f, const void *arg)
{
	fputs(arg, f);
}

static int wr_replace(const char *path, char *why)
{
	(void)why;
	return fg_file_replace(path, fill, "pid 1\n");
}

static int wr_fleet_status(const char *path, char *why)
{
	static struct fg_fleet_status st = { .magic = FG_FLEET_STATUS_MAGIC };

	(void)why;
	return fg_fleet_status_write(path, &st);
}

static void test_writers(void)
{
	static const struct {
		const char *name;
		reader_fn fn;
	} w[] = { { "fg_file_replace", wr_replace }, { "fg_fleet_status_write", wr_fleet_status } };
	char path[160], tmp[168], victim[160], name[200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/state", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		struct outcome o;

		unlink(tmp);
		ASSERT_OK(mkfifo(tmp, 0600) ? -errno : 0, "a FIFO at the temporary name");
		o = run_reader(w[i].fn, path);
		snprintf(name, sizeof(name), "%s with a FIFO at %s", w[i].name, tmp);
		ASSERT_EQ(o.ret, 0, name);
		ASSERT_TRUE(o.ms < AT_ONCE_MS, name);
		ASSERT_TRUE(!stat(path, &st) && S_ISREG(st.st_mode) && st.st_size > 0, name);
		ASSERT_TRUE(lstat(tmp, &st) && errno == ENOENT, "no temporary file left");
		unlink(path);
		ASSERT_OK(symlink(victim, tmp) ? -errno : 0, "a symlink at the temporary name");
		o = run_reader(w[i].fn, path);
		snprintf(name, sizeof(name), "%s with a symlink at %s", w[i].name, tmp);
		ASSERT_EQ(o.ret, 0, name);
		ASSERT_TRUE(stat(victim, &st) && errno == ENOENT,
			    "the symlink's target not created");
		ASSERT_TRUE(!lstat(path, &st) && S_ISREG(st.st_mode), "the state file is a file");
		unlink(tmp);
		unlink(path);
	}
}

static void test_cleanup(void)
{
	remove_kinds();
	ASSERT_OK(rmdir(dir), "the temporary directory is empty at the end");
}

int main(int argc, char **argv)
{
	int err;

	fg_test_init(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(dir))
		return FG_FAIL_ALL("setup", "mkdtemp: %s", strerror(errno));
	err = make_kinds();
	if (err) {
		remove_kinds();
		rmdir(dir);
		return FG_FAIL_ALL("setup", "making the kinds of file: %s", strerror(-err));
	}
	FG_RUN(test_every_reader_every_kind);
	FG_RUN(test_regular_reads);
	FG_RUN(test_writers);
	FG_RUN(test_cleanup);
	return fg_test_summary();
}
