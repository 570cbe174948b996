// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The daemon's fleet status file, written per tick and read by `floodgate status`; see fleet_status.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fleet/fleet_status.h"
#include "lib/safefile.h"

/* FNV-1a of the pin dir's absolute path: two dirs of one basename differ. */
int fg_fleet_status_path(const char *pin_dir, char *buf, size_t len)
{
	char rp[PATH_MAX];
	const char *p = realpath(pin_dir, rp) ? rp : pin_dir, *base;
	__u64 h = 0xcbf29ce484222325ull;
	size_t blen;
	int n;

	for (const char *s = p; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	base = strrchr(p, '/');
	base = base && base[1] ? base + 1 : p;
	blen = strnlen(base, 64);
	n = snprintf(buf, len, "%s/%.*s-%016llx.fleet", FG_RUN_DIR, (int)blen, base,
		     (unsigned long long)h);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int fg_fleet_status_write(const char *path, const struct fg_fleet_status *s)
{
	char tmp[PATH_MAX + 8];
	const char *p = (const char *)s;
	size_t left = sizeof(*s);
	int fd, err;

	if (mkdir(FG_RUN_DIR, 0755) && errno != EEXIST)
		return -errno;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	/* never a FIFO or a symlink planted at the temporary name */
	fd = fg_create_fresh(tmp);
	if (fd < 0)
		return fd;
	while (left) {
		ssize_t w = write(fd, p, left);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err = w < 0 ? -errno : -EIO;
			close(fd);
			unlink(tmp);
			return err;
		}
		p += w;
		left -= (size_t)w;
	}
	if (close(fd)) {
		err = -errno;
		unlink(tmp);
		return err;
	}
	if (rename(tmp, path)) {
		err = -errno;
		unlink(tmp);
		return err;
	}
	return 0;
}

int fg_fleet_status_read(const char *path, struct fg_fleet_status *s)
{
	size_t got = 0;
	int fd;

	/* a FIFO or a device at the path must not block `floodgate status` */
	fd = fg_open_regular(path, NULL);
	if (fd < 0)
		return fd;
	while (got < sizeof(*s)) {
		ssize_t r = read(fd, (char *)s + got, sizeof(*s) - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (got != sizeof(*s) || s->magic != FG_FLEET_STATUS_MAGIC ||
	    s->version != FG_FLEET_STATUS_VERSION || s->size != sizeof(*s) ||
	    s->nrules > FG_FLEET_MAX_RULES)
		return -EPROTO;
	s->node[sizeof(s->node) - 1] = 0;
	s->redis[sizeof(s->redis) - 1] = 0;
	for (__u32 i = 0; i < s->nrules; i++) {
		s->rule[i].name[sizeof(s->rule[i].name) - 1] = 0;
		s->rule[i].key[sizeof(s->rule[i].key) - 1] = 0;
		s->rule[i].st.reason[sizeof(s->rule[i].st.reason) - 1] = 0;
		s->rule[i].st.last_error[sizeof(s->rule[i].st.last_error) - 1] = 0;
		s->rule[i].st.health[sizeof(s->rule[i].st.health) - 1] = 0;
	}
	return 0;
}

int fg_fleet_status_remove(const char *path)
{
	if (unlink(path) && errno != ENOENT)
		return -errno;
	return 0;
}

static const char *const state_names[FG_FLEET_NSTATES] = {
	"init", "ok", "grace", "fallback", "recovering",
};

const char *fg_fleet_state_name(int state)
{
	return state >= 0 && state < FG_FLEET_NSTATES ? state_names[state] : "?";
}
