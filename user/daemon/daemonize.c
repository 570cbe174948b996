// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fork + notify pipe: the background start (see daemonize.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "daemon/daemonize.h"

/* The parent: wait for the child's word, at most FG_START_TIMEOUT_S, and
 * exit with it. */
static void __attribute__((noreturn)) wait_for_child(int fd, pid_t child)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	time_t deadline = time(NULL) + FG_START_TIMEOUT_S;
	char c = 1;
	int r;

	do {
		time_t left = deadline - time(NULL);

		r = poll(&pfd, 1, left > 0 ? (int)left * 1000 : 0);
	} while (r < 0 && errno == EINTR);
	if (r == 0) {
		fprintf(stderr,
			"floodgated: pid %d has not finished starting within %d s; it goes "
			"on in the background: see the system log (or run with --foreground)\n",
			(int)child, FG_START_TIMEOUT_S);
		exit(1);
	}
	if (r < 0 || read(fd, &c, 1) != 1) {
		c = 1; /* the child died before it could say */
		fprintf(stderr,
			"floodgated: start failed: pid %d exited before it said why; see "
			"the system log (or run with --foreground)\n",
			(int)child);
	} else if (c) {
		/* the child's last warning follows its status byte */
		char why[FG_START_WHY_LEN];
		ssize_t n = read(fd, why, sizeof(why) - 1);

		why[n > 0 ? n : 0] = 0;
		if (n > 0)
			fprintf(stderr, "floodgated: start failed: %s\n", why);
		else
			fprintf(stderr, "floodgated: start failed; the reason is in the system log "
					"(or run with --foreground)\n");
	}
	exit(c ? 1 : 0);
}

/* The child logs to syslog: let go of the terminal or pipe it was started
 * with, or a `$(floodgated ...)` would wait for the daemon's exit. */
static int detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR), err = 0;

	if (fd < 0)
		return -errno;
	for (int i = 0; i < 3; i++)
		if (dup2(fd, i) < 0 && !err)
			err = -errno;
	if (fd > 2)
		close(fd);
	return err;
}

int fg_daemonize(int *notify_fd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(p[0]);
		close(p[1]);
		return err;
	}
	if (pid > 0) {
		close(p[1]);
		wait_for_child(p[0], pid);
	}
	close(p[0]);
	*notify_fd = p[1];
	setsid();
	if (chdir("/"))
		return -errno;
	return detach_stdio();
}

void fg_daemonize_done(int *notify_fd, int failed, const char *why)
{
	char msg[FG_START_WHY_LEN];
	size_t n = 0;

	if (*notify_fd < 0)
		return;
	msg[n++] = failed ? 1 : 0;
	if (failed && why && *why) {
		size_t w = strnlen(why, sizeof(msg) - 2);

		memcpy(msg + 1, why, w);
		n += w;
	}
	if (write(*notify_fd, msg, n) != (ssize_t)n) {
		/* the parent is gone (killed): nobody to tell */
	}
	close(*notify_fd);
	*notify_fd = -1;
}
