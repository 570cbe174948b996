// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Clock, pid, address and reason helpers; see sysutil.h. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/types.h>

#include "lib/sysutil.h"

void fg_whyn(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

/* Not CLOCK_MONOTONIC: that would run up to a tick (4 ms) ahead of the
 * program's coarse clock, and a bucket at 1000/s would look as if it had
 * a token to spare. */
__u64 fg_mono_coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

__u64 fg_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void fg_addr_str(int family, const __u8 *addr, char *buf, size_t len)
{
	if (!inet_ntop(family == 6 ? AF_INET6 : AF_INET, addr, buf, len))
		snprintf(buf, len, "?");
}

/* The first line of /proc/<pid>/<what> into buf ("" if unreadable). */
static void proc_line(__u32 pid, const char *what, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%u/%s", pid, what);
	f = fopen(path, "re");
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	fclose(f);
}

enum fg_daemon_state fg_daemon_state(__u32 pid)
{
	char comm[32], st[256], *rp;

	if (!pid || (kill((pid_t)pid, 0) && errno == ESRCH))
		return FG_DAEMON_NONE;
	/* a recycled pid of another program is not our daemon */
	proc_line(pid, "comm", comm, sizeof(comm));
	if (strncmp(comm, "floodgated", 10))
		return FG_DAEMON_NONE;
	/* "pid (comm) S ...": comm may hold ')' itself, so the last one */
	proc_line(pid, "stat", st, sizeof(st));
	rp = strrchr(st, ')');
	if (!rp || rp[1] != ' ')
		return FG_DAEMON_NONE; /* gone between the two reads */
	switch (rp[2]) {
	case 'Z': /* killed, not yet reaped */
	case 'X':
		return FG_DAEMON_NONE;
	case 'T': /* SIGSTOP */
	case 't': /* stopped by a tracer */
		return FG_DAEMON_STOPPED;
	default:
		return FG_DAEMON_RUNNING;
	}
}

bool fg_daemon_alive(__u32 pid)
{
	return fg_daemon_state(pid) != FG_DAEMON_NONE;
}

const char *fg_daemon_state_name(enum fg_daemon_state st)
{
	return st == FG_DAEMON_RUNNING ? "running" : st == FG_DAEMON_STOPPED ? "stopped" : "none";
}

ssize_t fg_read_retry(int fd, void *buf, size_t len)
{
	ssize_t r;

	do
		r = read(fd, buf, len);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : r;
}

void fg_state_path(const char *dir, const char *kind, const char *pin_dir, char *buf, size_t len)
{
	char esc[PATH_MAX];
	size_t o = 0;

	for (const char *p = pin_dir; *p && o + 1 < sizeof(esc); p++)
		if (*p != '/' || o)
			esc[o++] = *p == '/' ? '_' : *p;
	esc[o] = 0;
	snprintf(buf, len, "%s/%s-%s.state", dir, kind, esc);
}

int fg_file_replace(const char *path, void (*fill)(FILE *f, const void *arg), const void *arg)
{
	char tmp[PATH_MAX + 8];
	FILE *f;
	int err = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fill(f, arg);
	if (fflush(f) || ferror(f))
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}
