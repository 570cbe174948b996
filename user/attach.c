// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* floodgated's interfaces: pinned XDP links, adoption, renames, and interfaces that come and go. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "floodgate.skel.h"
#include "attach.h"
#include "policy.h"

int fg_link_path(char *buf, size_t len, const char *dir, const char *ifname)
{
	int n = snprintf(buf, len, "%s/" FG_LINK_PREFIX "%s", dir, ifname);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static __u32 link_xdp_mode(int link_fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(link_fd, &info, &len))
		return 0;
	/* the link info carries no mode; ask the device */
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	if (bpf_xdp_query(info.xdp.ifindex, 0, &q))
		return 0;
	return q.attach_mode == XDP_ATTACHED_SKB ? 2 : q.attach_mode == XDP_ATTACHED_DRV ? 1 : 0;
}

int fg_link_ifindex(int link_fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(link_fd, &info, &len))
		return 0;
	return (int)info.xdp.ifindex;
}

/* The ifindex of the live XDP link pinned at path, if that device in this
 * network namespace runs the link's program (an ifindex alone may name
 * another device in another namespace); 0 otherwise. */
static int pinned_link_here(const char *path)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_obj_get(path), ifindex = 0;

	if (fd < 0)
		return 0;
	if (!bpf_obj_get_info_by_fd(fd, &info, &len) && info.type == BPF_LINK_TYPE_XDP &&
	    info.xdp.ifindex) {
		LIBBPF_OPTS(bpf_xdp_query_opts, q);

		if (!bpf_xdp_query((int)info.xdp.ifindex, 0, &q) &&
		    (q.drv_prog_id == info.prog_id || q.skb_prog_id == info.prog_id))
			ifindex = (int)info.xdp.ifindex;
	}
	close(fd);
	return ifindex;
}

/* The device on ifindex holds the filter: take its current name. */
static void follow_device(struct fg_iface *ifc, int ifindex)
{
	char now[IF_NAMESIZE];

	ifc->ifindex = ifindex;
	if (!if_indextoname((unsigned int)ifindex, now) || !strcmp(now, ifc->name))
		return;	/* same name, or moved out of our namespace: nothing to follow */
	memcpy(ifc->was, ifc->name, sizeof(ifc->was));
	memcpy(ifc->name, now, sizeof(ifc->name));
	ifc->change |= FG_IF_RENAMED;
}

/* The name of the live link_* pin in dir that holds ifindex, into name
 * (IF_NAMESIZE bytes); -ENOENT when there is none. */
static int find_link_by_ifindex(const char *dir, int ifindex, char *name)
{
	size_t plen = strlen(FG_LINK_PREFIX);
	char path[FG_LINK_PATH_LEN];
	struct dirent *de;
	DIR *d = opendir(dir);
	int err = -ENOENT;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		const char *ifn = de->d_name + plen;

		if (strncmp(de->d_name, FG_LINK_PREFIX, plen) || !*ifn || strlen(ifn) >= IF_NAMESIZE ||
		    fg_link_path(path, sizeof(path), dir, ifn) || pinned_link_here(path) != ifindex)
			continue;
		memcpy(name, ifn, strlen(ifn) + 1);
		err = 0;
		break;
	}
	closedir(d);
	return err;
}

int fg_iface_init(struct fg_iface *ifc, const char *dir, const char *conf)
{
	char path[FG_LINK_PATH_LEN];
	int ifindex;

	if (!*conf || strlen(conf) >= IF_NAMESIZE)
		return -EINVAL;
	memset(ifc, 0, sizeof(*ifc));
	memcpy(ifc->conf, conf, strlen(conf));
	memcpy(ifc->name, conf, strlen(conf));
	/* renamed while no daemon ran: the pinned link still holds the device */
	if (!fg_link_path(path, sizeof(path), dir, conf) && (ifindex = pinned_link_here(path))) {
		follow_device(ifc, ifindex);
		return 0;
	}
	ifc->ifindex = (int)if_nametoindex(conf);
	if (!ifc->ifindex)
		return -ENODEV;
	/* renamed, and the file now says the new name: our link is pinned under the old one */
	find_link_by_ifindex(dir, ifc->ifindex, ifc->pinned_as);
	return 0;
}

/* link_<pinned_as> to link_<conf> (path), so adopt_link finds it; a pin
 * is a name on bpffs, the link and its device are untouched. */
static int repin_link(const char *dir, const char *path, struct fg_iface *ifc)
{
	char old[FG_LINK_PATH_LEN];
	int err;

	if (!ifc->pinned_as[0])
		return 0;
	err = fg_link_path(old, sizeof(old), dir, ifc->pinned_as);
	if (!err && pinned_link_here(old) != ifc->ifindex)
		return 0;	/* gone meanwhile, or another device's: attach as usual */
	if (!err && rename(old, path))
		err = -errno;
	if (err) {
		snprintf(ifc->why, sizeof(ifc->why), "cannot re-pin our link " FG_LINK_PREFIX
			 "%s as %s: %s", ifc->pinned_as, path, strerror(-err));
		return err;
	}
	ifc->repinned = true;
	return 0;
}

/* The link pinned at path, as ifc->link. */
static int open_link(const char *path, struct fg_iface *ifc)
{
	int err;

	ifc->link = bpf_link__open(path);
	if (ifc->link)
		return 0;
	err = -errno;
	snprintf(ifc->why, sizeof(ifc->why), "cannot open the link pinned at %s: %s", path,
		 strerror(-err));
	return err;
}

/* A link pinned at path by an earlier daemon: swap our program in. 1 when
 * there is none to adopt (none pinned, or severed: then it is removed). */
static int adopt_link(struct floodgate_bpf *skel, const char *path, struct fg_iface *ifc)
{
	int err;

	if (access(path, F_OK))
		return 1;
	err = open_link(path, ifc);
	if (err)
		return err;
	if (fg_link_ifindex(bpf_link__fd(ifc->link)) != ifc->ifindex) {
		/* the interface was deleted (and maybe created again) since the
		 * link was pinned: the kernel severed it */
		bpf_link__destroy(ifc->link);
		ifc->link = NULL;
		unlink(path);
		ifc->severed = true;
		return 1;
	}
	err = bpf_link__update_program(ifc->link, skel->progs.floodgate);
	if (err) {
		snprintf(ifc->why, sizeof(ifc->why), "cannot swap the program into pinned link %s: %s",
			 path, strerror(-err));
		return err;
	}
	ifc->xdp_mode = link_xdp_mode(bpf_link__fd(ifc->link));
	ifc->adopted = true;
	return 0;
}

/* A new link, native or generic as xdp_mode allows (native first); its fd. */
static int create_link(struct floodgate_bpf *skel, int xdp_mode, struct fg_iface *ifc)
{
	static const __u32 try_flags[] = { XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE };
	int prog_fd = bpf_program__fd(skel->progs.floodgate);
	int err = -EINVAL, fd;

	for (int i = 0; i < 2; i++) {
		if ((xdp_mode == FG_XDP_NATIVE && i == 1) || (xdp_mode == FG_XDP_SKB && i == 0))
			continue;
		LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = try_flags[i]);
		fd = bpf_link_create(prog_fd, ifc->ifindex, BPF_XDP, &lo);
		if (fd >= 0) {
			ifc->xdp_mode = i + 1;
			return fd;
		}
		err = -errno;
	}
	snprintf(ifc->why, sizeof(ifc->why), "cannot attach XDP (%s): %s%s",
		 xdp_mode == FG_XDP_NATIVE ? "native" : xdp_mode == FG_XDP_SKB ? "generic" :
		 "native or generic", strerror(-err), err == -EBUSY || err == -EEXIST ?
		 " (another XDP program is attached; floodgate does not share devices)" : "");
	return err;
}

/*
 * A link made with bpf_link_create rather than bpf_program__attach_xdp
 * because libbpf 1.1's attach_xdp takes no XDP_FLAGS_* and the mode is the
 * point.
 */
int fg_attach_iface(struct floodgate_bpf *skel, const char *dir, int xdp_mode,
		    struct fg_iface *ifc)
{
	char path[FG_LINK_PATH_LEN];
	int err, fd;

	ifc->adopted = ifc->severed = ifc->repinned = false;
	ifc->why[0] = 0;
	err = fg_link_path(path, sizeof(path), dir, ifc->conf);
	if (err) {
		snprintf(ifc->why, sizeof(ifc->why), "link path in %s: %s", dir, strerror(-err));
		return err;
	}
	err = repin_link(dir, path, ifc);
	if (err)
		return err;
	err = adopt_link(skel, path, ifc);
	if (err <= 0)
		return err;
	fd = create_link(skel, xdp_mode, ifc);
	if (fd < 0)
		return fd;
	if (bpf_obj_pin(fd, path)) {
		err = -errno;
		snprintf(ifc->why, sizeof(ifc->why), "cannot pin link at %s: %s", path,
			 strerror(-err));
		close(fd);
		return err;
	}
	close(fd);	/* the pin holds it; reopen as a libbpf link */
	return open_link(path, ifc);
}

/* Forget a severed link: the filter is gone from the interface with it. */
static void drop_severed(struct fg_iface *ifc, const char *dir)
{
	char path[FG_LINK_PATH_LEN];

	bpf_link__destroy(ifc->link);
	ifc->link = NULL;
	ifc->xdp_mode = 0;
	ifc->failed_ifindex = 0;
	if (!fg_link_path(path, sizeof(path), dir, ifc->conf))
		unlink(path);
}

/*
 * Every tick: a link the kernel still reports an ifindex for holds its
 * device, renamed or not (issue 8: a rename was taken for a deletion and
 * the filter detached from a live device). When an interface is deleted
 * the kernel severs its link (ifindex 0); then attach again as soon as an
 * interface of the configured name exists, keeping buckets and counters
 * (they live in the maps, not the link).
 */
int fg_watch_ifaces(struct fg_iface *ifs, int n, struct floodgate_bpf *skel, const char *dir,
		    int xdp_mode)
{
	int changed = 0;

	for (int i = 0; i < n; i++) {
		struct fg_iface *ifc = &ifs[i];
		int now;

		ifc->change = 0;
		if (ifc->link) {
			int held = fg_link_ifindex(bpf_link__fd(ifc->link));

			if (held) {
				follow_device(ifc, held);
				changed += ifc->change != 0;
				continue;
			}
			drop_severed(ifc, dir);
			ifc->change |= FG_IF_LOST;
		}
		now = (int)if_nametoindex(ifc->conf);
		if (now && now != ifc->failed_ifindex) {
			/* not gone, and not an ifindex a retry would fail (and log) on again */
			ifc->ifindex = now;
			memcpy(ifc->name, ifc->conf, sizeof(ifc->name));
			if (fg_attach_iface(skel, dir, xdp_mode, ifc) == 0) {
				ifc->change |= FG_IF_BACK;
			} else {
				ifc->failed_ifindex = now;
				ifc->change |= FG_IF_FAILED;
			}
		}
		changed += ifc->change != 0;
	}
	return changed;
}

void fg_drop_stale_links(const char *dir, const struct fg_iface *ifs, int n,
			 void (*gone)(const char *ifname, int err))
{
	size_t plen = strlen(FG_LINK_PREFIX);
	char path[FG_LINK_PATH_LEN];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		const char *ifn = de->d_name + plen;
		bool ours = false;

		if (strncmp(de->d_name, FG_LINK_PREFIX, plen))
			continue;
		for (int i = 0; i < n; i++)
			ours |= !strcmp(ifs[i].conf, ifn);
		if (ours || fg_link_path(path, sizeof(path), dir, ifn))
			continue;
		gone(ifn, unlink(path) ? -errno : 0);
	}
	closedir(d);
}
