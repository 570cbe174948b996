/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Files a user can point at (the policy, shedding signal files, the state
 * files under /run/floodgate), opened so that no file type blocks the
 * caller: open(2) of a FIFO waits for a writer, a read of one waits for
 * data, a device may block or never end. Only a regular file is opened:
 * the path is stat'ed first (a device is never opened: that alone can
 * block or have side effects), opened with O_NONBLOCK (a FIFO swapped in
 * meanwhile opens at once) and checked again on the fd, which must be the
 * file stat'ed. A symlink loop fails in open(2) itself (ELOOP). Reads are
 * bounded. What O_NONBLOCK cannot help, a regular file on a hung file
 * system, is the caller's business (the policy reads in a thread of its own).
 *
 * Files written for others (state files) are created afresh beside the
 * target and renamed over it: the temporary name is unlinked and opened
 * with O_CREAT | O_EXCL | O_NOFOLLOW, so a FIFO or a symlink planted there
 * is never opened for writing.
 */
#ifndef FG_SAFEFILE_H
#define FG_SAFEFILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

/* "a FIFO (named pipe)", "a socket", "a directory", ...: what m is, for reasons. */
const char *fg_file_type(mode_t m);

/* path opened read-only if it is a regular file: an fd, or -errno with the
 * reason in why (may be NULL): -EINVAL for a FIFO, socket or device ("is a
 * FIFO (named pipe), not a regular file: refused (reading it could
 * block)"), -EISDIR, -ELOOP (a symlink loop), -ENOENT, -EACCES, ... */
int fg_open_regular(const char *path, char *why);

/* The whole of a small file into buf, NUL-terminated: its length, or
 * -EFBIG when it holds more than cap - 1 bytes, -EINVAL when it holds a
 * NUL (not text), or what fg_open_regular and read(2) return; the reason
 * in why. To EOF, not to st_size (/proc and /sys report 0 or a page). */
ssize_t fg_read_small(const char *path, char *buf, size_t cap, char *why);

/* fg_open_regular as a stdio stream ("re"), for line-by-line readers;
 * NULL with errno set and the reason in why. */
FILE *fg_fopen_regular(const char *path, char *why);

/* A fresh file at path for writing (mode 0644): path unlinked first, then
 * O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC. An fd or -errno. */
int fg_create_fresh(const char *path);

#endif /* FG_SAFEFILE_H */
