// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The daemon's check that its pins still exist, and re-pinning; see pinwatch.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "attach/attach.h"
#include "attach/discover.h"
#include "attach/pinwatch.h"
#include "lib/sysutil.h"

#define NAMES_LEN 400

/* What one check found, pin by pin. */
struct tally {
	int missing, foreign, failed, repinned, maps_repinned;
	int err; /* the first failure */
	char missing_s[NAMES_LEN], foreign_s[NAMES_LEN], failed_s[NAMES_LEN];
	char links_s[NAMES_LEN]; /* the links re-pinned */
};

static void add_name(char *list, const char *name)
{
	size_t len = strlen(list);

	snprintf(list + len, NAMES_LEN - len, "%s%s", len ? ", " : "", name);
}

int fg_pinwatch_init(struct fg_pinwatch *pw, const struct fg_maps *m)
{
	struct stat st;

	memset(pw, 0, sizeof(*pw));
	if (fstat(m->dirfd, &st))
		return -errno;
	pw->dev = st.st_dev;
	pw->ino = st.st_ino;
	for (int i = 0; i < FGM_NMAPS; i++) {
		pw->map_id[i] = fg_obj_id(m->fd[i]);
		if (!pw->map_id[i])
			return -EBADF;
	}
	return 0;
}

/*
 * mkdir -p dir, but only inside bpffs: the daemon re-creates its pin dir
 * after an rm -rf, it does not mount bpffs again behind an operator who
 * unmounted it, and never makes a directory on another file system.
 */
static int make_pin_dir(const char *dir, char *why)
{
	char tmp[256], *p;
	size_t n = strlen(dir);

	if (!n || n >= sizeof(tmp) || dir[0] != '/')
		return -EINVAL;
	memcpy(tmp, dir, n + 1);
	for (p = tmp + 1;; p++) {
		char c = *p;

		if (c != '/' && c)
			continue;
		*p = 0;
		if (access(tmp, F_OK)) {
			char *slash = strrchr(tmp, '/');
			struct statfs sfs;
			bool bpffs;

			*slash = 0;
			bpffs = !statfs(slash == tmp ? "/" : tmp, &sfs) &&
				sfs.f_type == BPF_FS_MAGIC;
			if (!bpffs) {
				fg_why(why, "%s is not a bpf filesystem (unmounted?)",
				       slash == tmp ? "/" : tmp);
				return -ENOTDIR;
			}
			*slash = '/';
			if (mkdir(tmp, 0700) && errno != EEXIST) {
				int err = -errno;

				fg_why(why, "mkdir %s: %s", tmp, strerror(-err));
				return err;
			}
		}
		if (!c)
			return 0;
		*p = c;
	}
}

enum pin_state {
	PIN_OK,
	PIN_MISSING,
	PIN_FOREIGN,
	PIN_ERROR
};

/* Is the object pinned at path the one with this id? */
static enum pin_state pin_state(const char *path, __u32 id, int *err)
{
	int fd = bpf_obj_get(path);
	__u32 got;

	if (fd < 0) {
		*err = -errno;
		return errno == ENOENT ? PIN_MISSING : PIN_ERROR;
	}
	got = fg_obj_id(fd);
	close(fd);
	return got == id ? PIN_OK : PIN_FOREIGN;
}

/* One pin: classify it (pass 0), or pin it again if it is missing (pass 1). */
static void one_pin(struct tally *t, int pass, const char *dir, const char *name, int fd, __u32 id,
		    bool is_map)
{
	char path[FG_LINK_PATH_LEN];
	enum pin_state s;
	int err = 0;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return;
	s = pin_state(path, id, &err);
	if (pass == 0) {
		if (s == PIN_MISSING) {
			t->missing++;
			add_name(t->missing_s, name);
		} else if (s == PIN_FOREIGN) {
			t->foreign++;
			add_name(t->foreign_s, name);
		} else if (s == PIN_ERROR) {
			t->failed++;
			add_name(t->failed_s, name);
			t->err = t->err ? t->err : err;
		}
		return;
	}
	if (s != PIN_MISSING)
		return;
	err = bpf_obj_pin(fd, path);
	if (err) {
		t->failed++;
		add_name(t->failed_s, name);
		t->err = t->err ? t->err : err;
		return;
	}
	t->repinned++;
	t->maps_repinned += is_map;
	if (!is_map)
		add_name(t->links_s, name);
}

static void every_pin(struct tally *t, int pass, struct fg_maps *m, const struct fg_pinwatch *pw,
		      const struct fg_iface *ifs, int n)
{
	char lname[FG_LINK_PATH_LEN];

	for (int i = 0; i < FGM_NMAPS; i++)
		one_pin(t, pass, m->dir, fg_map_name(i), m->fd[i], pw->map_id[i], true);
	for (int i = 0; i < n; i++) {
		int fd = ifs[i].link ? bpf_link__fd(ifs[i].link) : -1;

		/* a severed link is fg_watch_ifaces' to drop, not to pin again */
		if (fd < 0 || !fg_link_ifindex(fd))
			continue;
		snprintf(lname, sizeof(lname), FG_LINK_PREFIX "%s", ifs[i].conf);
		one_pin(t, pass, m->dir, lname, fd, fg_obj_id(fd), false);
	}
}

/* The daemon's lock follows the pin dir the CLI sees. */
static void move_dirfd(struct fg_pinwatch *pw, struct fg_maps *m)
{
	struct stat st;
	int fd = open(m->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (m->dirfd >= 0)
		close(m->dirfd);
	m->dirfd = fd;
	pw->dev = st.st_dev;
	pw->ino = st.st_ino;
}

/* A failure: say it now if it is new, else once a minute. */
static int failing(struct fg_pinwatch *pw, __u64 now_ns)
{
	bool say = !pw->failing || now_ns - pw->said_ns >= FG_PINWATCH_REPEAT_NS;

	if (!pw->failing)
		pw->failing_since_ns = now_ns;
	pw->failing = true;
	if (say)
		pw->said_ns = now_ns;
	return say;
}

/* "all 12 maps and link_eth0", or the names when only some went */
static const char *repinned_what(const struct tally *t, char *buf, size_t len)
{
	if (t->maps_repinned == FGM_NMAPS)
		snprintf(buf, len, "all %d maps%s%s", FGM_NMAPS, t->links_s[0] ? " and " : "",
			 t->links_s);
	else
		snprintf(buf, len, "%s", t->missing_s);
	return buf;
}

int fg_pinwatch_check(struct fg_pinwatch *pw, struct fg_maps *m, const struct fg_iface *ifs, int n,
		      __u64 now_ns)
{
	char why[FG_WHY_LEN] = "", what[NAMES_LEN + 32];
	struct tally t = {};
	bool gone, moved;
	struct stat st;
	int err;

	gone = stat(m->dir, &st) != 0;
	if (gone) {
		err = make_pin_dir(m->dir, why);
		if (err || stat(m->dir, &st)) {
			snprintf(
				pw->msg, sizeof(pw->msg),
				"the pin dir %s was removed and cannot be made again: %s; the filter "
				"keeps enforcing through the daemon's fds, and the CLI finds it through "
				"its interfaces; trying every second, saying so every minute",
				m->dir, why[0] ? why : strerror(errno));
			return failing(pw, now_ns);
		}
	}
	moved = st.st_dev != pw->dev || st.st_ino != pw->ino;
	every_pin(&t, 0, m, pw, ifs, n);
	if (t.foreign) {
		snprintf(pw->msg, sizeof(pw->msg),
			 "%s now holds objects that are not this daemon's (%s): another floodgated "
			 "or an operator put them there; not touching them, nothing re-pinned; the "
			 "filter keeps enforcing through the daemon's fds",
			 m->dir, t.foreign_s);
		return failing(pw, now_ns);
	}
	if (t.missing)
		every_pin(&t, 1, m, pw, ifs, n);
	if (moved)
		move_dirfd(pw, m);
	if (t.failed) {
		snprintf(pw->msg, sizeof(pw->msg),
			 "pins missing from %s (%s) and re-pinning failed: %s; the filter keeps "
			 "enforcing through the daemon's fds; trying every second, saying so every "
			 "minute",
			 m->dir, t.failed_s, strerror(-t.err));
		return failing(pw, now_ns);
	}
	if (t.repinned) {
		repinned_what(&t, what, sizeof(what));
		if (gone)
			snprintf(
				pw->msg, sizeof(pw->msg),
				"the pin dir %s was removed under the running daemon: made it again "
				"and re-pinned %s from the daemon's own fds (the same maps: buckets "
				"and counters intact)",
				m->dir, what);
		else
			snprintf(
				pw->msg, sizeof(pw->msg),
				"pins removed from %s under the running daemon: %s; re-pinned them "
				"from the daemon's own fds (the same objects: buckets and counters "
				"intact)",
				m->dir, what);
		if (pw->failing)
			snprintf(pw->msg + strlen(pw->msg), sizeof(pw->msg) - strlen(pw->msg),
				 " after %.0f s", (now_ns - pw->failing_since_ns) / 1e9);
		pw->failing = false;
		return 1;
	}
	if (pw->failing) {
		snprintf(pw->msg, sizeof(pw->msg), "the pins in %s are complete again", m->dir);
		pw->failing = false;
		return 1;
	}
	return 0;
}
