/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Going to the background without losing the start's outcome: the parent
 * waits on a pipe until the child says it is attached (the parent exits 0)
 * or failed (exit 1, printing the child's reason), so a failed start
 * still reaches the shell that ran floodgated. The parent waits at most
 * FG_START_TIMEOUT_S: a start still going then is reported as not (yet)
 * started, exit 1, and goes on in the background.
 */
#ifndef FG_DAEMONIZE_H
#define FG_DAEMONIZE_H

#define FG_START_TIMEOUT_S 60

/* Fork; returns 0 in the child, with *notify_fd the pipe to the waiting
 * parent (which never returns). -errno if the fork fails. */
int fg_daemonize(int *notify_fd);

/* Tell the parent how the start went (0 ok, else failed: why, may be NULL,
 * is printed by the parent on its stderr, so that the reason reaches the
 * operator without a syslog) and close the pipe; nothing once told, or in
 * the foreground (*notify_fd < 0). */
#define FG_START_WHY_LEN 1024
void fg_daemonize_done(int *notify_fd, int failed, const char *why);

#endif /* FG_DAEMONIZE_H */
