// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Finding floodgate's maps through the program attached to an interface; see discover.h. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "attach/attach.h"
#include "attach/discover.h"
#include "lib/sysutil.h"
#include "attach/xdpattach.h"

#define MAX_MAP_IDS 64 /* floodgate's program uses 15 */
#define PIN_ROOT    "/sys/fs/bpf"
#define PIN_DEPTH   3 /* /sys/fs/bpf/a/b/c/fg_ctl at most */

__u32 fg_obj_id(int fd)
{
	/* map, program and link info all start with type, then id */
	union {
		struct bpf_map_info m;
		struct bpf_prog_info p;
		struct bpf_link_info l;
	} info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.m.id;
}

/* The ids of the maps prog_fd uses, at most *n; *n is set to how many. */
static int prog_map_ids(int prog_fd, __u32 *ids, __u32 *n)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	memset(ids, 0, *n * sizeof(*ids)); /* the kernel fills them; valgrind cannot tell */
	info.nr_map_ids = *n;
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -errno;
	if (info.nr_map_ids < *n)
		*n = info.nr_map_ids;
	return 0;
}

/* The id of prog_fd's map named fg_ctl, 0 if it has none. */
static __u32 ctl_id_of(int prog_fd)
{
	__u32 ids[MAX_MAP_IDS], n = MAX_MAP_IDS;

	if (prog_map_ids(prog_fd, ids, &n))
		return 0;
	for (__u32 i = 0; i < n; i++) {
		struct bpf_map_info mi = {};
		__u32 len = sizeof(mi);
		int fd = bpf_map_get_fd_by_id(ids[i]);
		bool ctl;

		if (fd < 0)
			continue;
		ctl = !bpf_obj_get_info_by_fd(fd, &mi, &len) && !strcmp(mi.name, "fg_ctl");
		close(fd);
		if (ctl)
			return ids[i];
	}
	return 0;
}

static bool prog_uses_map(__u32 prog_id, __u32 map_id)
{
	__u32 ids[MAX_MAP_IDS], n = MAX_MAP_IDS;
	int fd = bpf_prog_get_fd_by_id(prog_id);
	bool uses = false;

	if (fd < 0)
		return false;
	if (!prog_map_ids(fd, ids, &n))
		for (__u32 i = 0; i < n && !uses; i++)
			uses = ids[i] == map_id;
	close(fd);
	return uses;
}

static void add_found(struct fg_found *f, int ifindex, const char *ifname, enum fg_found_how how,
		      __u32 mode, __u32 prog_id, __u32 dispatcher_id)
{
	struct fg_found_if *at;
	int fd;

	if (f->n >= FG_FOUND_MAX)
		return;
	fd = bpf_prog_get_fd_by_id(prog_id);
	if (fd < 0)
		return; /* detached meanwhile */
	at = &f->at[f->n++];
	memset(at, 0, sizeof(*at));
	at->ifindex = ifindex;
	snprintf(at->ifname, sizeof(at->ifname), "%s", ifname);
	at->how = how;
	at->xdp_mode = mode;
	at->prog_id = prog_id;
	at->dispatcher_id = dispatcher_id;
	at->ctl_id = ctl_id_of(fd);
	close(fd);
}

/* Is prog_id a program named floodgate? */
static bool prog_is_ours(__u32 prog_id)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(prog_id);
	bool ours;

	if (fd < 0)
		return false;
	ours = !bpf_obj_get_info_by_fd(fd, &info, &len) && !strcmp(info.name, FG_PROG_NAME);
	close(fd);
	return ours;
}

/*
 * A libxdp dispatcher: its floodgate components (see discover.h), read from
 * the kernel without libxdp. Each component is an freplace program held by
 * a tracing link whose target is the dispatcher; libxdp 1.3.1's own query
 * takes a blocking flock (xdp_lock_acquire), and the kill switch must never
 * wait behind another libxdp user (issue 8, item 1).
 */
static void add_components(struct fg_found *f, int ifindex, const char *ifname, __u32 mode,
			   __u32 dispatcher_id)
{
	struct bpf_link_info li;
	__u32 id = 0;
	int fd;

	while ((fd = fg_link_next(&id, &li)) >= 0) {
		close(fd);
		if (li.type == BPF_LINK_TYPE_TRACING && li.tracing.target_obj_id == dispatcher_id &&
		    prog_is_ours(li.prog_id))
			add_found(f, ifindex, ifname, FG_FOUND_COMPONENT, mode, li.prog_id,
				  dispatcher_id);
	}
}

/* The program prog_id attached to ifindex in mode: floodgate, a
 * dispatcher that may run floodgate, or something else. */
static void consider(struct fg_found *f, int ifindex, const char *ifname, __u32 prog_id, __u32 mode)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(prog_id);

	if (fd < 0)
		return;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		info.name[0] = 0;
	close(fd);
	if (!strcmp(info.name, FG_PROG_NAME))
		add_found(f, ifindex, ifname, FG_FOUND_NETLINK, mode, prog_id, 0);
	else if (!strcmp(info.name, "xdp_dispatcher"))
		add_components(f, ifindex, ifname, mode, prog_id);
}

/* Which of the programs found directly on a device a bpf_link holds. Links
 * are global; matching the program id and the ifindex of a device of this
 * namespace that runs it keeps other namespaces' links out. */
static void find_links(struct fg_found *f)
{
	struct bpf_link_info li;
	__u32 id = 0;
	int fd;

	while ((fd = fg_link_next(&id, &li)) >= 0) {
		if (li.type == BPF_LINK_TYPE_XDP)
			for (int i = 0; i < f->n; i++) {
				struct fg_found_if *at = &f->at[i];

				if (at->how == FG_FOUND_NETLINK && at->prog_id == li.prog_id &&
				    at->ifindex == (int)li.xdp.ifindex) {
					at->how = FG_FOUND_LINK;
					at->link_id = id;
				}
			}
		close(fd);
	}
}

int fg_discover(struct fg_found *f, char *why)
{
	struct if_nameindex *all = if_nameindex(), *p;
	int err;

	memset(f, 0, sizeof(*f));
	if (!all) {
		err = -errno;
		fg_why(why, "cannot list the interfaces: %s", strerror(-err));
		return err;
	}
	for (p = all; p->if_index && f->n < FG_FOUND_MAX; p++) {
		LIBBPF_OPTS(bpf_xdp_query_opts, q);
		int ifindex = (int)p->if_index;

		if (bpf_xdp_query(ifindex, 0, &q))
			continue;
		if (q.drv_prog_id)
			consider(f, ifindex, p->if_name, q.drv_prog_id, 1);
		if (q.skb_prog_id)
			consider(f, ifindex, p->if_name, q.skb_prog_id, 2);
	}
	if_freenameindex(all);
	find_links(f);
	if (!f->n) {
		fg_why(why, "no XDP program named " FG_PROG_NAME
			    " on any interface of this network namespace");
		return -ENOENT;
	}
	return 0;
}

/* Append to a list; a cut list is fine for a message. */
static void appendf(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

/* Two spellings of one directory ("/sys/fs/bpf/x/" and "/sys/fs/bpf/x")? */
static bool same_dir(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];

	if (realpath(a, ra) && realpath(b, rb))
		return !strcmp(ra, rb);
	return !strcmp(a, b);
}

/* The interfaces of the filter whose fg_ctl is ctl_id to the front of f; how many. */
static int move_to_front(struct fg_found *f, __u32 ctl_id)
{
	int front = 0;

	for (int i = 0; i < f->n; i++) {
		if (f->at[i].ctl_id != ctl_id)
			continue;
		if (i != front) {
			struct fg_found_if t = f->at[front];

			f->at[front] = f->at[i];
			f->at[i] = t;
		}
		front++;
	}
	return front;
}

int fg_found_choose_iface(struct fg_found *f, const char *ifname, int *n, char *why)
{
	char seen[FG_WHY_LEN / 2] = "";

	for (int i = 0; i < f->n; i++) {
		if (!strcmp(f->at[i].ifname, ifname)) {
			*n = move_to_front(f, f->at[i].ctl_id);
			return 0;
		}
		appendf(seen, sizeof(seen), "%s%s", seen[0] ? ", " : "", f->at[i].ifname);
	}
	fg_why(why, "no floodgate program on %s (floodgate runs on: %s)", ifname,
	       seen[0] ? seen : "none");
	return -ENOENT;
}

int fg_found_choose(struct fg_found *f, const char *dir, int *n, char *why)
{
	char at[PATH_MAX], pinned[FG_WHY_LEN / 2] = "", orphans_s[FG_WHY_LEN / 4] = "";
	int orphans = 0;
	__u32 pick = 0;

	for (int i = 0; i < f->n; i++) {
		const struct fg_found_if *x = &f->at[i];
		bool seen = false;

		for (int j = 0; j < i && !seen; j++)
			seen = f->at[j].ctl_id == x->ctl_id;
		if (seen)
			continue;
		if (!fg_found_pinned_at(x->ctl_id, at, sizeof(at)) && !same_dir(at, dir)) {
			appendf(pinned, sizeof(pinned), "%sfloodgate on %s is pinned in %s",
				pinned[0] ? "; " : "", x->ifname, at);
			continue;
		}
		orphans++;
		pick = pick ? pick : x->ctl_id;
		appendf(orphans_s, sizeof(orphans_s), "%s%s", orphans_s[0] ? ", " : "", x->ifname);
	}
	if (!orphans) {
		fg_why(why, "%s: say which with --pin-dir", pinned);
		return -ENOENT;
	}
	if (orphans > 1) {
		fg_why(why,
		       "%d floodgate filters without their pins run here (on %s): cannot tell "
		       "which one %s was; choose with --interface IF",
		       orphans, orphans_s, dir);
		return -ENOTUNIQ;
	}
	*n = move_to_front(f, pick);
	return 0;
}

/*
 * The maps the program does not use (fg_meta, fg_names: userspace's) are
 * not among its map ids. Every map of one load shares that load's BTF
 * object, and an adopting daemon reuses all of them, so they are the maps
 * of that name whose btf_id is fg_ctl's.
 */
static int cold_map(enum fg_map_id k, __u32 btf_id)
{
	__u32 id = 0;

	while (btf_id && !bpf_map_get_next_id(id, &id)) {
		struct bpf_map_info mi = {};
		__u32 len = sizeof(mi);
		int fd = bpf_map_get_fd_by_id(id);

		if (fd < 0)
			continue;
		if (!bpf_obj_get_info_by_fd(fd, &mi, &len) && mi.btf_id == btf_id &&
		    !strcmp(mi.name, fg_map_name(k)))
			return fd;
		close(fd);
	}
	return -ENOENT;
}

/*
 * A cold map that nobody holds any more (pins and daemon gone, so the
 * kernel freed it): an empty one of the same shape for this process, typed
 * with the filter's BTF where it can be, so BPF_F_LOCK works on fg_meta.
 */
static int empty_map(enum fg_map_id k, const struct bpf_map_info *ctl)
{
	struct btf *btf = btf__load_from_kernel_by_id(ctl->btf_id);
	int btf_fd = btf ? bpf_btf_get_fd_by_id(ctl->btf_id) : -1, fd;
	__s32 vid = btf ? btf__find_by_name_kind(btf, k == FGM_META ? "fg_meta" : "fg_name",
						 BTF_KIND_STRUCT) :
			  -1;
	__u32 type, ksz, vsz, max;
	LIBBPF_OPTS(bpf_map_create_opts, typed, .btf_fd = btf_fd,
		    .btf_key_type_id = ctl->btf_key_type_id, .btf_value_type_id = vid);

	fg_map_shape(k, &type, &ksz, &vsz, &max);
	fd = btf_fd >= 0 && vid > 0 ? bpf_map_create(type, fg_map_name(k), ksz, vsz, max, &typed) :
				      -1;
	if (fd < 0)
		fd = bpf_map_create(type, fg_map_name(k), ksz, vsz, max, NULL);
	if (btf_fd >= 0)
		close(btf_fd);
	btf__free(btf);
	return fd;
}

/* fg_meta and fg_names, found or (gone) empty ones; their bits in *gone. */
static void cold_maps(int fd[FGM_NMAPS], unsigned int *gone)
{
	static const enum fg_map_id cold[] = { FGM_META, FGM_NAMES };
	struct bpf_map_info ctl = {};
	__u32 len = sizeof(ctl);

	if (fd[FGM_CTL] < 0 || bpf_obj_get_info_by_fd(fd[FGM_CTL], &ctl, &len))
		return;
	for (size_t i = 0; i < sizeof(cold) / sizeof(cold[0]); i++) {
		enum fg_map_id k = cold[i];

		if (fd[k] >= 0)
			continue;
		fd[k] = cold_map(k, ctl.btf_id);
		if (fd[k] >= 0)
			continue;
		fd[k] = empty_map(k, &ctl);
		if (fd[k] >= 0 && gone)
			*gone |= 1u << k;
	}
}

int fg_found_maps(const struct fg_found_if *at, struct fg_maps *m, unsigned int *gone, char *why)
{
	__u32 ids[MAX_MAP_IDS], n = MAX_MAP_IDS;
	int fd[FGM_NMAPS], pfd, err;
	char where[64];

	if (gone)
		*gone = 0;
	for (int i = 0; i < FGM_NMAPS; i++)
		fd[i] = -1;
	snprintf(where, sizeof(where), "the XDP program on %s", at->ifname);
	pfd = bpf_prog_get_fd_by_id(at->prog_id);
	if (pfd < 0) {
		err = -errno;
		fg_why(why, "program %u on %s: %s", at->prog_id, at->ifname, strerror(-err));
		return err;
	}
	err = prog_map_ids(pfd, ids, &n);
	close(pfd);
	if (err) {
		fg_why(why, "the maps of program %u on %s: %s", at->prog_id, at->ifname,
		       strerror(-err));
		return err;
	}
	for (__u32 i = 0; i < n; i++) {
		struct bpf_map_info mi = {};
		__u32 len = sizeof(mi);
		int mfd = bpf_map_get_fd_by_id(ids[i]), k;

		if (mfd < 0)
			continue;
		k = bpf_obj_get_info_by_fd(mfd, &mi, &len) ? -1 : fg_map_id_of(mi.name);
		if (k >= 0 && fd[k] < 0)
			fd[k] = mfd;
		else
			close(mfd); /* .rodata, .bss, or not floodgate's */
	}
	cold_maps(fd, gone);
	return fg_maps_open_fds(m, fd, where, why);
}

int fg_dir_each(const char *dir, fg_dirent_fn *fn, void *arg)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int ret = 0;

	if (!d)
		return -errno;
	while (!ret && (de = readdir(d)))
		ret = fn(dir, de, arg);
	closedir(d);
	return ret;
}

/* What find_pinned looks for below a dir. */
struct pinned_find {
	int depth; /* levels of subdirectories still to enter */
	__u32 ctl_id;
	char *out;
	size_t len;
};

static int find_pinned(const char *dir, int depth, __u32 ctl_id, char *out, size_t len);

/* One entry of a dir under PIN_ROOT: 1 when it is (or its subtree holds) the fg_ctl sought. */
static int pinned_entry(const char *dir, const struct dirent *de, void *arg)
{
	const struct pinned_find *f = arg;
	char p[PATH_MAX];
	int fd, found;

	if (de->d_name[0] == '.' ||
	    snprintf(p, sizeof(p), "%s/%s", dir, de->d_name) >= (int)sizeof(p))
		return 0;
	if (de->d_type == DT_DIR)
		return f->depth > 0 && !find_pinned(p, f->depth - 1, f->ctl_id, f->out, f->len);
	if (strcmp(de->d_name, "fg_ctl"))
		return 0;
	fd = bpf_obj_get(p);
	found = fd >= 0 && fg_obj_id(fd) == f->ctl_id;
	if (found)
		snprintf(f->out, f->len, "%s", dir);
	if (fd >= 0)
		close(fd);
	return found;
}

static int find_pinned(const char *dir, int depth, __u32 ctl_id, char *out, size_t len)
{
	struct pinned_find f = { .depth = depth, .ctl_id = ctl_id, .out = out, .len = len };

	return fg_dir_each(dir, pinned_entry, &f) > 0 ? 0 : -ENOENT;
}

int fg_found_pinned_at(__u32 ctl_id, char *dir, size_t len)
{
	return ctl_id ? find_pinned(PIN_ROOT, PIN_DEPTH, ctl_id, dir, len) : -ENOENT;
}

static int detach_link(const struct fg_found_if *at, char *why)
{
	struct bpf_link_info li = {};
	__u32 len = sizeof(li);
	int fd = bpf_link_get_fd_by_id(at->link_id), err;

	if (fd < 0) {
		err = -errno;
		fg_why(why, "%s: bpf_link %u: %s", at->ifname, at->link_id, strerror(-err));
		return err;
	}
	if (bpf_obj_get_info_by_fd(fd, &li, &len) || li.prog_id != at->prog_id) {
		close(fd);
		fg_why(why, "%s: bpf_link %u no longer holds program %u", at->ifname, at->link_id,
		       at->prog_id);
		return -ESTALE;
	}
	/* BPF_LINK_DETACH: off the device now, whoever still holds the link */
	err = bpf_link_detach(fd);
	close(fd);
	if (err)
		fg_why(why, "%s: detaching bpf_link %u: %s", at->ifname, at->link_id,
		       strerror(-err));
	return err;
}

static int detach_netlink(const struct fg_found_if *at, char *why)
{
	int fd = bpf_prog_get_fd_by_id(at->prog_id), err;

	if (fd < 0) {
		err = -errno;
		fg_why(why, "%s: program %u: %s", at->ifname, at->prog_id, strerror(-err));
		return err;
	}
	/* REPLACE with the expected program: removes it only if it is still there */
	LIBBPF_OPTS(bpf_xdp_attach_opts, ao, .old_prog_fd = fd);
	err = bpf_xdp_detach(at->ifindex,
			     XDP_FLAGS_REPLACE |
				     (at->xdp_mode == 2 ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE),
			     &ao);
	close(fd);
	if (err)
		fg_why(why, "%s: detaching program %u: %s", at->ifname, at->prog_id,
		       strerror(-err));
	return err;
}

int fg_found_detach(const struct fg_found_if *at, char *why)
{
	switch (at->how) {
	case FG_FOUND_LINK:
		return detach_link(at, why);
	case FG_FOUND_NETLINK:
		return detach_netlink(at, why);
	case FG_FOUND_COMPONENT:
		return fg_xdp_detach_ours(at->ifindex, FG_PROG_NAME, NULL, why);
	}
	return -EINVAL;
}

bool fg_found_attached(int ctl_fd, int ifindex)
{
	__u32 ctl = fg_obj_id(ctl_fd), id = 0;
	struct bpf_link_info li;
	int fd;

	if (!ctl || ifindex <= 0)
		return false;
	while ((fd = fg_link_next(&id, &li)) >= 0) {
		close(fd);
		if (li.type == BPF_LINK_TYPE_XDP && (int)li.xdp.ifindex == ifindex &&
		    prog_uses_map(li.prog_id, ctl))
			return true;
	}
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	if (bpf_xdp_query(ifindex, 0, &q))
		return false;
	return (q.drv_prog_id && prog_uses_map(q.drv_prog_id, ctl)) ||
	       (q.skb_prog_id && prog_uses_map(q.skb_prog_id, ctl));
}

const char *fg_found_how_str(const struct fg_found_if *at, char *buf, size_t len)
{
	if (at->how == FG_FOUND_LINK)
		snprintf(buf, len, "program %u, bpf_link %u", at->prog_id, at->link_id);
	else if (at->how == FG_FOUND_COMPONENT)
		snprintf(buf, len, "program %u in libxdp dispatcher %u", at->prog_id,
			 at->dispatcher_id);
	else
		snprintf(buf, len, "program %u, attached by netlink", at->prog_id);
	return buf;
}

static int orphan_why(const struct fg_found_if *at, const char *dir, char *why)
{
	char how[64], other[PATH_MAX];
	struct fg_meta meta = {};
	struct fg_maps m;

	fg_found_how_str(at, how, sizeof(how));
	if (!fg_found_maps(at, &m, NULL, NULL)) {
		fg_meta_read(&m, &meta);
		fg_maps_close(&m);
	}
	if (!fg_found_pinned_at(at->ctl_id, other, sizeof(other))) {
		fg_why(why,
		       "%s already runs floodgate (%s) pinned in %s, not %s (daemon pid %u): "
		       "use --pin-dir %s, or stop that one first",
		       at->ifname, how, other, dir, meta.pid, other);
	} else if (fg_daemon_alive(meta.pid)) {
		fg_why(why,
		       "%s already runs floodgate (%s) whose pins are gone (nothing under " PIN_ROOT
		       " holds its maps); its daemon, floodgated pid %u, still runs and "
		       "pins them again within a second unless it is stopped or cannot write "
		       "bpffs: wait, or stop it (kill %u), or remove the filter with "
		       "'floodgate --pin-dir %s detach --force'; then start again",
		       at->ifname, how, meta.pid, meta.pid, dir);
	} else {
		fg_why(why,
		       "%s already runs floodgate (%s) whose pins are gone and whose daemon "
		       "(pid %u) is not running: remove it with 'floodgate --pin-dir %s detach', "
		       "then start again",
		       at->ifname, how, meta.pid, dir);
	}
	return -EBUSY;
}

int fg_found_orphan(const struct fg_iface *ifs, int n, const char *dir, char *why)
{
	struct fg_found f;

	if (fg_discover(&f, NULL))
		return 0; /* nothing attached (or the list failed: attach will tell) */
	for (int i = 0; i < f.n; i++)
		for (int j = 0; j < n; j++)
			if (f.at[i].ifindex == ifs[j].ifindex)
				return orphan_why(&f.at[i], dir, why);
	return 0;
}
