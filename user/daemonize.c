// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fork + notify pipe: the background start (see daemonize.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "daemonize.h"

/* The parent: wait for the child's word, exit with it. */
static void __attribute__((noreturn)) wait_for_child(int fd)
{
	char c = 1;

	if (read(fd, &c, 1) != 1)
		c = 1;	/* the child died before it could say */
	if (c)
		fprintf(stderr, "floodgated: start failed; the reason is in the system log "
			"(or run with --foreground)\n");
	exit(c ? 1 : 0);
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
		wait_for_child(p[0]);
	}
	close(p[0]);
	*notify_fd = p[1];
	setsid();
	if (chdir("/"))
		return -errno;
	return 0;
}

void fg_daemonize_done(int *notify_fd, int failed)
{
	char status = failed ? 1 : 0;

	if (*notify_fd < 0)
		return;
	if (write(*notify_fd, &status, 1) != 1) {
		/* the parent is gone (killed): nobody to tell */
	}
	close(*notify_fd);
	*notify_fd = -1;
}
