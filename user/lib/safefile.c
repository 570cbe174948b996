// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Opening user-named files so that no file type blocks; see safefile.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "lib/safefile.h"
#include "lib/sysutil.h"

const char *fg_file_type(mode_t m)
{
	return S_ISREG(m)  ? "a regular file" :
	       S_ISDIR(m)  ? "a directory" :
	       S_ISFIFO(m) ? "a FIFO (named pipe)" :
	       S_ISCHR(m)  ? "a character device" :
	       S_ISBLK(m)  ? "a block device" :
	       S_ISSOCK(m) ? "a socket" :
	       S_ISLNK(m)  ? "a symbolic link" :
			     "not a file";
}

static int not_regular(mode_t m, char *why)
{
	if (S_ISDIR(m)) {
		fg_why(why, "is a directory");
		return -EISDIR;
	}
	fg_why(why, "is %s, not a regular file: refused (reading it could block)", fg_file_type(m));
	return -EINVAL;
}

static int sys_err(int err, const char *what, char *why)
{
	if (err == -ELOOP)
		fg_why(why, "%s: too many levels of symbolic links (a symlink loop?)", what);
	else
		fg_why(why, "%s: %s", what, strerror(-err));
	return err;
}

int fg_open_regular(const char *path, char *why)
{
	struct stat st, fst;
	int fd, err;

	/* a device is never opened: open(2) alone can block or rewind a tape */
	if (stat(path, &st))
		return sys_err(-errno, "cannot open", why);
	if (!S_ISREG(st.st_mode))
		return not_regular(st.st_mode, why);
	/* O_NONBLOCK: a FIFO swapped in since the stat opens at once */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return sys_err(-errno, "cannot open", why);
	if (fstat(fd, &fst)) {
		err = sys_err(-errno, "cannot stat", why);
		close(fd);
		return err;
	}
	if (!S_ISREG(fst.st_mode) || fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
		err = S_ISREG(fst.st_mode) ? -EAGAIN : not_regular(fst.st_mode, why);
		if (err == -EAGAIN)
			fg_why(why, "was replaced while being opened");
		close(fd);
		return err;
	}
	return fd;
}

ssize_t fg_read_small(const char *path, char *buf, size_t cap, char *why)
{
	size_t n = 0;
	ssize_t r = 0;
	int fd;

	if (!cap)
		return -EINVAL;
	fd = fg_open_regular(path, why);
	if (fd < 0)
		return fd;
	while (n < cap) {
		r = fg_read_retry(fd, buf + n, cap - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (r == -EAGAIN) {
		fg_why(why, "reading would block: not an ordinary file");
		return r;
	}
	if (r < 0)
		return sys_err((int)r, "cannot read", why);
	if (n == cap) {
		fg_why(why, "holds more than %zu bytes", cap - 1);
		return -EFBIG;
	}
	buf[n] = 0;
	if (memchr(buf, 0, n)) {
		fg_why(why, "holds a NUL byte: not text");
		return -EINVAL;
	}
	return (ssize_t)n;
}

FILE *fg_fopen_regular(const char *path, char *why)
{
	int fd = fg_open_regular(path, why);
	FILE *f;

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	f = fdopen(fd, "re");
	if (!f) {
		int err = errno;

		close(fd);
		fg_why(why, "cannot open: %s", strerror(err));
		errno = err;
	}
	return f;
}

int fg_create_fresh(const char *path)
{
	int fd;

	if (unlink(path) && errno != ENOENT)
		return -errno;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	return fd < 0 ? -errno : fd;
}
