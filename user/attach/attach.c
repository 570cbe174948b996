// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* floodgated's interfaces: pinned XDP links, adoption, renames, and interfaces that come and go. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "floodgate.skel.h"
#include "attach/attach.h"
#include "attach/discover.h"
#include "policy/policy.h"
#include "attach/xdpattach.h"
#include "lib/sysutil.h"

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

/* An fd of the program behind a link, or -errno. */
int fg_link_prog_fd(int link_fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	int fd;

	if (bpf_obj_get_info_by_fd(link_fd, &info, &len))
		return -errno;
	fd = bpf_prog_get_fd_by_id(info.prog_id);
	return fd < 0 ? -errno : fd;
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
		return; /* same name, or moved out of our namespace: nothing to follow */
	memcpy(ifc->was, ifc->name, sizeof(ifc->was));
	memcpy(ifc->name, now, sizeof(ifc->name));
	ifc->change |= FG_IF_RENAMED;
}

/* fn(path, ifname, arg) of a link_<ifname> pin (ifname may be empty); nonzero stops the walk. */
typedef int link_pin_fn(const char *path, const char *ifn, void *arg);

struct link_walk {
	link_pin_fn *fn;
	void *arg;
};

static int link_entry(const char *dir, const struct dirent *de, void *arg)
{
	const struct link_walk *w = arg;
	size_t plen = strlen(FG_LINK_PREFIX);
	char path[FG_LINK_PATH_LEN];

	if (strncmp(de->d_name, FG_LINK_PREFIX, plen) ||
	    fg_link_path(path, sizeof(path), dir, de->d_name + plen))
		return 0;
	return w->fn(path, de->d_name + plen, w->arg);
}

/* Each link_* pin of dir through fn: as fg_dir_each. */
static int each_link_pin(const char *dir, link_pin_fn *fn, void *arg)
{
	struct link_walk w = { .fn = fn, .arg = arg };

	return fg_dir_each(dir, link_entry, &w);
}

struct link_by_ifindex {
	int ifindex;
	char *name;
};

static int link_is_ifindex(const char *path, const char *ifn, void *arg)
{
	const struct link_by_ifindex *q = arg;

	if (!*ifn || strlen(ifn) >= IF_NAMESIZE || pinned_link_here(path) != q->ifindex)
		return 0;
	memcpy(q->name, ifn, strlen(ifn) + 1);
	return 1;
}

/* The name of the live link_* pin in dir that holds ifindex, into name
 * (IF_NAMESIZE bytes); -ENOENT when there is none. */
static int find_link_by_ifindex(const char *dir, int ifindex, char *name)
{
	struct link_by_ifindex q = { .ifindex = ifindex, .name = name };
	int ret = each_link_pin(dir, link_is_ifindex, &q);

	return ret < 0 ? ret : ret ? 0 : -ENOENT;
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
		return 0; /* gone meanwhile, or another device's: attach as usual */
	if (!err && rename(old, path))
		err = -errno;
	if (err) {
		snprintf(ifc->why, sizeof(ifc->why),
			 "cannot re-pin our link " FG_LINK_PREFIX "%s as %s: %s", ifc->pinned_as,
			 path, strerror(-err));
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

/* The program to attach: the running one kept (fg_keep_running_prog),
 * else the skeleton's. */
static int prog_fd(struct floodgate_bpf *skel, const struct fg_attach_conf *ac)
{
	return ac->kept_fd >= 0 ? ac->kept_fd : bpf_program__fd(skel->progs.floodgate);
}

static __u32 link_prog_id(int link_fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(link_fd, &info, &len) ? 0 : info.prog_id;
}

/* A link pinned at path by an earlier daemon: swap our program in (or,
 * when it runs the program kept, leave it). 1 when there is none to adopt
 * (none pinned, or severed: then it is removed). */
static int adopt_link(struct floodgate_bpf *skel, const struct fg_attach_conf *ac, const char *path,
		      struct fg_iface *ifc)
{
	int err = 0;

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
	if (ac->kept_fd >= 0 && link_prog_id(bpf_link__fd(ifc->link)) == ac->kept_id)
		ifc->kept = true; /* it runs this very build already: nothing to swap */
	else
		err = bpf_link_update(bpf_link__fd(ifc->link), prog_fd(skel, ac), NULL);
	if (err) {
		err = -errno;
		snprintf(ifc->why, sizeof(ifc->why),
			 "cannot swap the program into pinned link %s: %s", path, strerror(-err));
		return err;
	}
	ifc->xdp_mode = link_xdp_mode(bpf_link__fd(ifc->link));
	ifc->adopted = true;
	return 0;
}

/* A new link, native or generic as xdp_mode allows (native first); its fd. */
static int create_link(struct floodgate_bpf *skel, const struct fg_attach_conf *ac,
		       struct fg_iface *ifc)
{
	static const __u32 try_flags[] = { XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE };
	int pfd = prog_fd(skel, ac), xdp_mode = ac->xdp_mode;
	int err = -EINVAL, fd;

	for (int i = 0; i < 2; i++) {
		if ((xdp_mode == FG_XDP_NATIVE && i == 1) || (xdp_mode == FG_XDP_SKB && i == 0))
			continue;
		LIBBPF_OPTS(bpf_link_create_opts, lo, .flags = try_flags[i]);
		fd = bpf_link_create(pfd, ifc->ifindex, BPF_XDP, &lo);
		if (fd >= 0) {
			ifc->xdp_mode = i + 1;
			return fd;
		}
		err = -errno;
	}
	snprintf(
		ifc->why, sizeof(ifc->why), "cannot attach XDP (%s): %s%s",
		xdp_mode == FG_XDP_NATIVE ? "native" :
		xdp_mode == FG_XDP_SKB	  ? "generic" :
					    "native or generic",
		strerror(-err),
		err == -EBUSY || err == -EEXIST ?
			" (another XDP program is attached; xdp_attach: exclusive does not share devices)" :
			"");
	return err;
}

int fg_attach_conf_init(struct fg_attach_conf *ac, int xdp_mode, int xdp_attach, unsigned int prio,
			__u32 chain)
{
	memset(ac, 0, sizeof(*ac));
	ac->kept_fd = -1;
	if (xdp_attach < FG_ATTACH_AUTO || xdp_attach > FG_ATTACH_EXCLUSIVE ||
	    prio > FG_XDP_PRIO_MAX)
		return -EINVAL;
	ac->xdp_mode = xdp_mode;
	ac->run_prio = prio;
	ac->chain = chain;
	ac->from_auto = xdp_attach == FG_ATTACH_AUTO;
	if (xdp_attach != FG_ATTACH_EXCLUSIVE) {
		char probe[FG_WHY_LEN] = "";

		ac->dispatcher = !fg_xdp_probe_dispatcher(probe);
		if (probe[0])
			snprintf(ac->probe, sizeof(ac->probe), "%s", probe);
	}
	ac->how = xdp_attach == FG_ATTACH_LIBXDP || (ac->from_auto && ac->dispatcher) ?
			  FG_XDP_LIBXDP :
			  FG_XDP_EXCLUSIVE;
	return 0;
}

/* The loaded skeleton as xdpattach.h wants it. */
static struct fg_xdp_prog skel_prog(struct floodgate_bpf *skel)
{
	struct fg_xdp_prog p = { .obj = skel->obj, .prog = skel->progs.floodgate };

	p.elf = floodgate_bpf__elf_bytes(&p.elf_sz);
	return p;
}

/* Through libxdp: adopt floodgate's program on the device, or join. */
static int attach_libxdp(struct floodgate_bpf *skel, const struct fg_attach_conf *ac,
			 struct fg_iface *ifc)
{
	struct fg_xdp_prog p = skel_prog(skel);
	struct fg_xdp_opts o = {
		.mode = ac->xdp_mode,
		.how = FG_XDP_LIBXDP,
		.run_prio = ac->run_prio,
		.chain_actions = ac->chain,
	};
	struct fg_xdp_list cur;
	struct fg_xdp_att a;
	int err;

	if (ac->kept_fd >= 0) {
		/* never chosen with libxdp (fg_keep_running_prog): libxdp wants the object */
		snprintf(ifc->why, sizeof(ifc->why),
			 "the running program was kept at start, and libxdp attaches only a "
			 "loaded object: restart floodgated to attach here");
		return -EOPNOTSUPP;
	}
	/* found before adopting: did an earlier daemon leave it there? */
	ifc->adopted = !fg_xdp_list(ifc->ifindex, FG_PROG_NAME, &cur, NULL) &&
		       fg_xdp_list_ours(&cur);
	err = fg_xdp_adopt(&p, ifc->ifindex, &o, &a, ifc->why);
	if (err) {
		ifc->adopted = false;
		return err;
	}
	fg_xdp_att_close(&a); /* a link found here is held by its pin (or by nobody) */
	ifc->how = FG_XDP_LIBXDP;
	ifc->xdp_mode = a.mode == FG_XDP_SKB ? 2 : 1;
	ifc->in_dispatcher = a.dispatcher;
	ifc->prog_id = a.prog_id;
	ifc->dispatcher_id = a.dispatcher_id;
	return 0;
}

/* Exclusive, but floodgate runs there without a link (libxdp's): adopt it
 * that way when auto chose, else refuse with what to do. 1: not there. */
static int exclusive_meets_libxdp(struct floodgate_bpf *skel, const struct fg_attach_conf *ac,
				  struct fg_iface *ifc)
{
	struct fg_xdp_list cur;

	if (fg_xdp_list(ifc->ifindex, FG_PROG_NAME, &cur, NULL) || !cur.n || cur.via_link)
		return 1; /* free, or a link: create_link says what it meets */
	if (!fg_xdp_list_ours(&cur)) {
		snprintf(
			ifc->why, sizeof(ifc->why),
			"the device already runs XDP program %s (id %u, "
			"%s%s), not floodgate's; xdp_attach: exclusive never shares or replaces it: "
			"remove it, or use xdp_attach: libxdp on a kernel that can build libxdp's "
			"dispatcher%s%s",
			cur.e[0].name, cur.e[0].id, fg_xdp_mode_str(cur.mode),
			cur.dispatcher_id ? ", in libxdp's dispatcher" : "",
			ac->probe[0] ? " (this one cannot: " : "", ac->probe[0] ? ac->probe : "");
		if (ac->probe[0])
			strncat(ifc->why, ")", sizeof(ifc->why) - strlen(ifc->why) - 1);
		return -EBUSY;
	}
	if (ac->from_auto) {
		ifc->how_kept = true;
		return attach_libxdp(skel, ac, ifc);
	}
	snprintf(ifc->why, sizeof(ifc->why),
		 "floodgate runs here through libxdp (%s, left by an "
		 "earlier daemon) and xdp_attach is exclusive: set xdp_attach: libxdp (or auto) to "
		 "adopt it, or 'floodgate detach' first",
		 cur.dispatcher_id ? "in its dispatcher" : "alone, attached by netlink");
	return -EBUSY;
}

/*
 * A link made with bpf_link_create rather than bpf_program__attach_xdp
 * because libbpf 1.1's attach_xdp takes no XDP_FLAGS_* and the mode is the
 * point.
 */
int fg_attach_iface(struct floodgate_bpf *skel, const char *dir, const struct fg_attach_conf *ac,
		    struct fg_iface *ifc)
{
	char path[FG_LINK_PATH_LEN];
	int err, fd;

	ifc->adopted = ifc->severed = ifc->repinned = ifc->how_kept = ifc->kept = false;
	ifc->in_dispatcher = false;
	ifc->prog_id = ifc->dispatcher_id = 0;
	ifc->how = FG_XDP_EXCLUSIVE;
	ifc->why[0] = 0;
	err = fg_link_path(path, sizeof(path), dir, ifc->conf);
	if (err) {
		snprintf(ifc->why, sizeof(ifc->why), "link path in %s: %s", dir, strerror(-err));
		return err;
	}
	err = repin_link(dir, path, ifc);
	if (err)
		return err;
	err = adopt_link(skel, ac, path, ifc);
	if (err <= 0) {
		ifc->how_kept = !err && ac->how != FG_XDP_EXCLUSIVE;
		return err;
	}
	if (ac->how == FG_XDP_LIBXDP)
		return attach_libxdp(skel, ac, ifc);
	err = exclusive_meets_libxdp(skel, ac, ifc);
	if (err <= 0)
		return err;
	fd = create_link(skel, ac, ifc);
	if (fd < 0)
		return fd;
	if (bpf_obj_pin(fd, path)) {
		err = -errno;
		snprintf(ifc->why, sizeof(ifc->why), "cannot pin link at %s: %s", path,
			 strerror(-err));
		close(fd);
		return err;
	}
	close(fd); /* the pin holds it; reopen as a libbpf link */
	return open_link(path, ifc);
}

/* ---- keeping the running program ---------------------------------------- */

#define KEEP_MAX_MAPS 64

static int keep_fail(char *why, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int keep_fail(char *why, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, FG_WHY_LEN, fmt, ap);
	va_end(ap);
	return err;
}

static __u32 fd_map_id(int fd)
{
	struct bpf_map_info mi = {};
	__u32 mlen = sizeof(mi);

	return fd >= 0 && !bpf_obj_get_info_by_fd(fd, &mi, &mlen) ? mi.id : 0;
}

/* The id of the map skel will load m with: its pin, else the fd reused
 * into it; 0 when it would make a map of its own. */
static __u32 planned_map_id(const struct bpf_map *m)
{
	const char *pin = bpf_map__pin_path(m);
	__u32 id = 0;
	int fd;

	if (pin) {
		fd = bpf_obj_get(pin);
		id = fd_map_id(fd);
		if (fd >= 0)
			close(fd);
		return id;
	}
	return fd_map_id(bpf_map__fd(m));
}

static bool map_suffix(const char *name, const char *suffix)
{
	const char *dot = strrchr(name, '.');

	return dot && !strcmp(dot, suffix);
}

bool fg_map_per_load(const char *name)
{
	return map_suffix(name, ".rodata") || map_suffix(name, ".bss") ||
	       map_suffix(name, ".data") || fg_map_prog_private(name);
}

/* The running program's .rodata (map fd) against skel's, before load. */
static bool rodata_same(int mfd, struct floodgate_bpf *skel, __u32 value_size)
{
	size_t sz = 0;
	const void *ours = bpf_map__initial_value(skel->maps.rodata, &sz);
	static char theirs[4096];
	__u32 key = 0;

	if (!ours || sz != value_size || sz > sizeof(theirs))
		return false;
	return !bpf_map_lookup_elem(mfd, &key, theirs) && !memcmp(ours, theirs, sz);
}

/* Every map of program pfd is one skel plans to use, or its own .bss/.data,
 * or a .rodata equal to skel's. */
static int keep_maps_match(int pfd, struct floodgate_bpf *skel, char *why)
{
	__u32 ids[KEEP_MAX_MAPS], planned[KEEP_MAX_MAPS], np = 0;
	struct bpf_prog_info pi = {};
	__u32 plen = sizeof(pi);
	struct bpf_map *m;
	bool rodata_seen = false;

	pi.nr_map_ids = KEEP_MAX_MAPS;
	pi.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(pfd, &pi, &plen))
		return keep_fail(why, -errno, "program info: %s", strerror(errno));
	if (pi.type != BPF_PROG_TYPE_XDP || strcmp(pi.name, FG_PROG_NAME))
		return keep_fail(why, -ESTALE, "the link runs program %u (%s), not floodgate's",
				 pi.id, pi.name);
	if (pi.nr_map_ids > KEEP_MAX_MAPS)
		return keep_fail(why, -E2BIG, "program %u uses %u maps", pi.id, pi.nr_map_ids);
	bpf_object__for_each_map(m, skel->obj) {
		const char *name = bpf_map__name(m);

		if (fg_map_per_load(name))
			continue;
		planned[np] = planned_map_id(m);
		if (!planned[np])
			return keep_fail(why, -ESTALE,
					 "map %s would be made anew (not pinned, not shared)",
					 name);
		if (++np == KEEP_MAX_MAPS)
			return keep_fail(why, -E2BIG, "too many maps");
	}
	for (__u32 i = 0; i < pi.nr_map_ids; i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi), j;
		bool ok;
		int mfd;

		for (j = 0; j < np && planned[j] != ids[i]; j++)
			;
		if (j < np)
			continue;
		mfd = bpf_map_get_fd_by_id(ids[i]);
		if (mfd < 0)
			return keep_fail(why, -errno, "map %u: %s", ids[i], strerror(errno));
		if (bpf_obj_get_info_by_fd(mfd, &mi, &mlen)) {
			close(mfd);
			return keep_fail(why, -errno, "map %u: %s", ids[i], strerror(errno));
		}
		ok = map_suffix(mi.name, ".bss") || map_suffix(mi.name, ".data") ||
		     fg_map_prog_private(mi.name);
		if (map_suffix(mi.name, ".rodata")) {
			ok = rodata_seen = rodata_same(mfd, skel, mi.value_size);
			if (!ok)
				fg_why(why, "program %u is another build (its .rodata differs)",
				       pi.id);
		} else if (!ok) {
			fg_why(why, "program %u runs on map %u (%s), not this pin dir's", pi.id,
			       ids[i], mi.name);
		}
		close(mfd);
		if (!ok)
			return -ESTALE;
	}
	if (!rodata_seen)
		return keep_fail(why, -ESTALE, "program %u has no .rodata to compare", pi.id);
	return 0;
}

int fg_keep_running_prog(struct floodgate_bpf *skel, const char *dir, const struct fg_iface *ifs,
			 int n, int *fd, __u32 *id, char *why)
{
	char path[FG_LINK_PATH_LEN];
	__u32 pid = 0;
	int err, pfd;

	*fd = -1;
	*id = 0;
	if (n <= 0)
		return keep_fail(why, -ENOENT, "no interfaces");
	for (int i = 0; i < n; i++) {
		__u32 p;
		int lfd;

		err = fg_link_path(path, sizeof(path), dir, ifs[i].conf);
		if (err)
			return keep_fail(why, err, "link path: %s", strerror(-err));
		lfd = bpf_obj_get(path);
		if (lfd < 0)
			return keep_fail(why, -ENOENT, "%s has no pinned link", ifs[i].conf);
		p = fg_link_ifindex(lfd) == ifs[i].ifindex ? link_prog_id(lfd) : 0;
		close(lfd);
		if (!p)
			return keep_fail(why, -ENOENT, "%s: the pinned link is severed",
					 ifs[i].conf);
		if (pid && p != pid)
			return keep_fail(why, -ESTALE,
					 "the interfaces run different programs (%u, %u)", pid, p);
		pid = p;
	}
	pfd = bpf_prog_get_fd_by_id(pid);
	if (pfd < 0)
		return keep_fail(why, -errno, "program %u: %s", pid, strerror(errno));
	err = keep_maps_match(pfd, skel, why);
	if (err) {
		close(pfd);
		return err;
	}
	*fd = pfd;
	*id = pid;
	return 0;
}

/* Forget a severed link: the filter is gone from the interface with it;
 * and the pins libxdp left of a dispatcher that went with its device
 * (kept when libxdp's lock is held: nothing runs from them). */
static void drop_severed(struct fg_iface *ifc, const char *dir)
{
	char path[FG_LINK_PATH_LEN];

	if (ifc->in_dispatcher && ifc->dispatcher_id) {
		char base[FG_LINK_PATH_LEN];

		fg_xdp_remove_dead_dispatcher(fg_xdp_pin_base(base, sizeof(base)), ifc->ifindex,
					      ifc->dispatcher_id, NULL);
		ifc->in_dispatcher = false;
		ifc->dispatcher_id = 0;
	}

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
/* Does our libxdp-attached program still run on ifc's device? Read from
 * the kernel without libxdp's lock: the device's program is ours (alone),
 * or a dispatcher with a tracing link from our component to it. */
static bool libxdp_still_there(struct fg_iface *ifc)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct bpf_link_info li;
	__u32 id = 0, dev;
	bool found = false;
	int fd;

	if (bpf_xdp_query(ifc->ifindex, 0, &q))
		return false;
	dev = ifc->xdp_mode == 2 ? q.skb_prog_id : q.drv_prog_id;
	if (!dev || dev == ifc->prog_id)
		return dev != 0;
	if (!ifc->in_dispatcher)
		return false;
	while (!found && (fd = fg_link_next(&id, &li)) >= 0) {
		close(fd);
		found = li.type == BPF_LINK_TYPE_TRACING && li.prog_id == ifc->prog_id &&
			li.tracing.target_obj_id == dev;
	}
	if (found)
		ifc->dispatcher_id = dev; /* libxdp rebuilds it on every change */
	return found;
}

/* The device still holds the filter: its ifindex, else 0. */
static int held_ifindex(struct fg_iface *ifc)
{
	char now[IF_NAMESIZE];

	if (ifc->link)
		return fg_link_ifindex(bpf_link__fd(ifc->link));
	if (!ifc->xdp_mode || !if_indextoname((unsigned int)ifc->ifindex, now))
		return 0;
	return libxdp_still_there(ifc) ? ifc->ifindex : 0;
}

int fg_watch_ifaces(struct fg_iface *ifs, int n, struct floodgate_bpf *skel, const char *dir,
		    const struct fg_attach_conf *ac)
{
	int changed = 0;

	for (int i = 0; i < n; i++) {
		struct fg_iface *ifc = &ifs[i];
		int now;

		ifc->change = 0;
		if (ifc->link || ifc->xdp_mode) {
			int held = held_ifindex(ifc);

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
			if (fg_attach_iface(skel, dir, ac, ifc) == 0) {
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

struct stale_links {
	const struct fg_iface *ifs;
	int n;
	void (*gone)(const char *ifname, int err);
};

static int drop_if_stale(const char *path, const char *ifn, void *arg)
{
	const struct stale_links *st = arg;

	for (int i = 0; i < st->n; i++)
		if (!strcmp(st->ifs[i].conf, ifn))
			return 0;
	st->gone(ifn, unlink(path) ? -errno : 0);
	return 0;
}

void fg_drop_stale_links(const char *dir, const struct fg_iface *ifs, int n,
			 void (*gone)(const char *ifname, int err))
{
	struct stale_links st = { .ifs = ifs, .n = n, .gone = gone };

	each_link_pin(dir, drop_if_stale, &st);
}

void fg_detach_ifaces(const struct fg_iface *ifs, int n,
		      void (*done)(const struct fg_iface *ifc, int err, const char *why))
{
	char why[FG_WHY_LEN];

	for (int i = 0; i < n; i++) {
		const struct fg_iface *ifc = &ifs[i];
		int err;

		why[0] = 0;
		if (ifc->link) {
			err = bpf_link_detach(bpf_link__fd(ifc->link)) ? -errno : 0;
			if (err)
				snprintf(why, sizeof(why), "BPF_LINK_DETACH: %s", strerror(-err));
		} else if (ifc->xdp_mode && ifc->how == FG_XDP_LIBXDP) {
			err = fg_xdp_detach_ours(ifc->ifindex, FG_PROG_NAME, NULL, why);
		} else {
			continue;
		}
		done(ifc, err, why);
	}
}

/* Is the XDP link fd holding a program named floodgate? */
static bool link_is_ours(int fd)
{
	struct bpf_link_info li = {};
	struct bpf_prog_info pi = {};
	__u32 len = sizeof(li), plen = sizeof(pi);
	bool ours = false;
	int pfd;

	if (bpf_obj_get_info_by_fd(fd, &li, &len) || li.type != BPF_LINK_TYPE_XDP)
		return false;
	pfd = bpf_prog_get_fd_by_id(li.prog_id);
	if (pfd < 0)
		return false;
	ours = !bpf_obj_get_info_by_fd(pfd, &pi, &plen) && !strcmp(pi.name, FG_PROG_NAME);
	close(pfd);
	return ours;
}

struct pinned_detach {
	int n, err;
	char *why;
};

/* Detach the pinned link at path if it is floodgate's and still attached; stop at a failure. */
static int detach_pinned(const char *path, const char *ifn, void *arg)
{
	struct pinned_detach *pd = arg;
	int fd;

	if (!*ifn)
		return 0;
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0; /* not a BPF object: fg_pin_dir_remove says so */
	if (link_is_ours(fd) && fg_link_ifindex(fd)) {
		pd->err = bpf_link_detach(fd) ? -errno : 0;
		if (pd->err)
			fg_why(pd->why, "%s: BPF_LINK_DETACH: %s", path, strerror(-pd->err));
		pd->n += !pd->err;
	}
	close(fd);
	return pd->err != 0;
}

int fg_detach_pinned_links(const char *dir, char *why)
{
	struct pinned_detach pd = { .why = why };
	int ret = each_link_pin(dir, detach_pinned, &pd);

	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	return pd.err ? pd.err : pd.n;
}

int fg_detach_unlinked(int ctl_fd, char *why)
{
	__u32 ctl = fg_obj_id(ctl_fd);
	struct fg_found *f = calloc(1, sizeof(*f));
	int n = 0, err = 0;

	if (!f)
		return -ENOMEM;
	if (ctl && !fg_discover(f, NULL)) {
		for (int i = 0; i < f->n && !err; i++) {
			if (f->at[i].ctl_id != ctl || f->at[i].how == FG_FOUND_LINK)
				continue;
			err = fg_found_detach(&f->at[i], why);
			n += !err;
		}
	}
	free(f);
	return err ? err : n;
}

const char *fg_iface_how_str(const struct fg_iface *ifc, char *buf, size_t len)
{
	if (ifc->how != FG_XDP_LIBXDP)
		snprintf(buf, len, "exclusive bpf_link");
	else if (ifc->in_dispatcher)
		snprintf(buf, len, "component (id %u) of libxdp dispatcher %u", ifc->prog_id,
			 ifc->dispatcher_id);
	else
		snprintf(buf, len, "libxdp without a dispatcher: alone, by netlink, id %u",
			 ifc->prog_id);
	return buf;
}
