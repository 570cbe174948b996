// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* A second instance of floodgate's XDP program over the same maps, swapped in on every interface (swap.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "floodgate.skel.h"
#include "attach/swap.h"
#include "attach/xdpattach.h"
#include "lib/sysutil.h"

/* How an interface runs the filter now, so how to swap it. */
enum swap_way {
	WAY_NONE,	/* not attached (the interface is gone): attached anew later */
	WAY_LINK,	/* a bpf_link (exclusive) */
	WAY_ALONE,	/* libxdp without a dispatcher: netlink */
	WAY_DISPATCHER, /* a component of libxdp's dispatcher */
};

/* What was done to one interface, to undo it. */
struct swap_step {
	enum swap_way way;
	int old_fd;	      /* WAY_LINK, WAY_ALONE: the program it ran */
	__u32 old_id;	      /* ... its id (WAY_DISPATCHER: the old component's) */
	__u32 old_dispatcher; /* WAY_DISPATCHER */
	bool done;
};

/* An interface deleted since the last tick (its link severed, its device
 * gone) is not swapped: fg_watch_ifaces attaches the new program when it
 * comes back. */
static enum swap_way way_of(const struct fg_iface *ifc)
{
	char name[IF_NAMESIZE];

	if (ifc->link)
		return fg_link_ifindex(bpf_link__fd(ifc->link)) ? WAY_LINK : WAY_NONE;
	if (!ifc->xdp_mode || ifc->how != FG_XDP_LIBXDP ||
	    !if_indextoname((unsigned int)ifc->ifindex, name))
		return WAY_NONE;
	return ifc->in_dispatcher ? WAY_DISPATCHER : WAY_ALONE;
}

static __u32 prog_id_of(int fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	return fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len) ? info.id : 0;
}

static __u32 link_prog(int link_fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(link_fd, &info, &len) ? 0 : info.prog_id;
}

/* The second instance: the same ELF, old's .rodata, every other map old's
 * own but the program's private scratch (made anew, as by every load). */
static int twin_open(struct floodgate_bpf *old, struct floodgate_bpf **out, char *why)
{
	struct floodgate_bpf *nskel = floodgate_bpf__open();
	struct bpf_map *m;
	int err;

	*out = NULL;
	if (!nskel) {
		err = errno ? -errno : -ENOMEM;
		fg_why(why, "cannot open a second instance of the XDP program: %s", strerror(-err));
		return err;
	}
	memcpy(nskel->rodata, old->rodata, sizeof(*nskel->rodata));
	bpf_object__for_each_map(m, nskel->obj) {
		const char *name = bpf_map__name(m);
		struct bpf_map *src;

		if (m == nskel->maps.rodata || fg_map_prog_private(name))
			continue;
		src = bpf_object__find_map_by_name(old->obj, name);
		if (!src || bpf_map__fd(src) < 0) {
			fg_why(why, "map %s of the running program is not open here", name);
			floodgate_bpf__destroy(nskel);
			return -ENOENT;
		}
		err = bpf_map__reuse_fd(m, bpf_map__fd(src));
		if (err) {
			fg_why(why, "reusing map %s for the second instance: %s", name,
			       strerror(-err));
			floodgate_bpf__destroy(nskel);
			return err;
		}
	}
	*out = nskel;
	return 0;
}

static __u32 mode_flags(const struct fg_iface *ifc)
{
	return ifc->xdp_mode == 2 ? XDP_FLAGS_SKB_MODE : XDP_FLAGS_DRV_MODE;
}

static struct fg_xdp_prog xdp_prog_of(struct floodgate_bpf *skel)
{
	struct fg_xdp_prog p = { .obj = skel->obj, .prog = skel->progs.floodgate };

	p.elf = floodgate_bpf__elf_bytes(&p.elf_sz);
	return p;
}

/* Into ifc's dispatcher in place of its component (fg_xdp_adopt: join, then the other leaves). */
static int dispatcher_swap(struct floodgate_bpf *skel, struct fg_iface *ifc,
			   const struct fg_attach_conf *ac, char *why)
{
	struct fg_xdp_prog p = xdp_prog_of(skel);
	struct fg_xdp_opts o = {
		.mode = ifc->xdp_mode == 2 ? FG_XDP_SKB : FG_XDP_NATIVE,
		.how = FG_XDP_LIBXDP,
		.run_prio = ac->run_prio,
		.chain_actions = ac->chain,
	};
	struct fg_xdp_att a;
	int err = fg_xdp_adopt(&p, ifc->ifindex, &o, &a, why);

	if (err)
		return err;
	fg_xdp_att_close(&a);
	ifc->prog_id = a.prog_id;
	ifc->dispatcher_id = a.dispatcher_id;
	return 0;
}

/* One interface from the program it runs to new_fd (skel's); st records the way back. */
static int swap_one(struct fg_iface *ifc, struct floodgate_bpf *nskel, int new_fd,
		    const struct fg_attach_conf *ac, struct swap_step *st, char *why)
{
	int err;

	switch (st->way) {
	case WAY_LINK: {
		int lfd = bpf_link__fd(ifc->link);

		st->old_id = link_prog(lfd);
		st->old_fd = st->old_id ? bpf_prog_get_fd_by_id(st->old_id) : -ENOENT;
		if (st->old_fd < 0) {
			err = st->old_id ? -errno : -ENOENT;
			fg_why(why, "%s: the program its link runs: %s", ifc->name, strerror(-err));
			return err;
		}
		LIBBPF_OPTS(bpf_link_update_opts, uo, .flags = BPF_F_REPLACE,
			    .old_prog_fd = st->old_fd);
		err = bpf_link_update(lfd, new_fd, &uo) ? -errno : 0;
		if (err)
			fg_why(why, "%s: bpf_link_update of its link (program %u): %s", ifc->name,
			       st->old_id, strerror(-err));
		return err;
	}
	case WAY_ALONE: {
		st->old_id = ifc->prog_id;
		st->old_fd = bpf_prog_get_fd_by_id(st->old_id);
		if (st->old_fd < 0) {
			err = -errno;
			fg_why(why, "%s: program %u: %s", ifc->name, st->old_id, strerror(-err));
			return err;
		}
		LIBBPF_OPTS(bpf_xdp_attach_opts, ao, .old_prog_fd = st->old_fd);
		err = bpf_xdp_attach(ifc->ifindex, new_fd, mode_flags(ifc) | XDP_FLAGS_REPLACE,
				     &ao);
		if (err)
			fg_why(why, "%s: replacing program %u by netlink (XDP_FLAGS_REPLACE): %s",
			       ifc->name, st->old_id, strerror(-err));
		else
			ifc->prog_id = prog_id_of(new_fd);
		return err;
	}
	case WAY_DISPATCHER:
		st->old_id = ifc->prog_id;
		st->old_dispatcher = ifc->dispatcher_id;
		return dispatcher_swap(nskel, ifc, ac, why);
	case WAY_NONE:
		break;
	}
	return 0;
}

/* Back from new_fd to what it ran; 0 or -errno (why). */
static int undo_one(struct fg_iface *ifc, struct floodgate_bpf *old, int new_fd,
		    const struct fg_attach_conf *ac, struct swap_step *st, char *why)
{
	int err = 0;

	switch (st->way) {
	case WAY_LINK: {
		LIBBPF_OPTS(bpf_link_update_opts, uo, .flags = BPF_F_REPLACE,
			    .old_prog_fd = new_fd);
		err = bpf_link_update(bpf_link__fd(ifc->link), st->old_fd, &uo) ? -errno : 0;
		break;
	}
	case WAY_ALONE: {
		LIBBPF_OPTS(bpf_xdp_attach_opts, ao, .old_prog_fd = new_fd);
		err = bpf_xdp_attach(ifc->ifindex, st->old_fd, mode_flags(ifc) | XDP_FLAGS_REPLACE,
				     &ao);
		if (!err)
			ifc->prog_id = st->old_id;
		break;
	}
	case WAY_DISPATCHER:
		err = dispatcher_swap(old, ifc, ac, why);
		break;
	case WAY_NONE:
		break;
	}
	if (err && st->way != WAY_DISPATCHER)
		fg_why(why, "%s: %s", ifc->name, strerror(-err));
	return err;
}

static void close_steps(struct swap_step *st, int n)
{
	for (int i = 0; i < n; i++)
		if (st[i].old_fd >= 0)
			close(st[i].old_fd);
}

/* Every interface swapped, or those done put back (res counts them). */
static int swap_all(struct floodgate_bpf *old, struct floodgate_bpf *nskel, struct fg_iface *ifs,
		    int n, struct fg_attach_conf *ac, const struct fg_swap_opts *opts,
		    struct swap_step *st, struct fg_swap_res *res, char *why)
{
	int new_fd = bpf_program__fd(nskel->progs.floodgate), err = 0, i;

	for (i = 0; i < n; i++) {
		if (st[i].way == WAY_NONE) {
			res->skipped++;
			continue;
		}
		if (opts->fail_at && !strcmp(opts->fail_at, ifs[i].name)) {
			fg_why(why, "%s: the replace refused by the test hook (fail_at)",
			       ifs[i].name);
			err = -ECANCELED;
		} else {
			err = swap_one(&ifs[i], nskel, new_fd, ac, &st[i], why);
		}
		if (err)
			break;
		st[i].done = true;
		res->swapped++;
	}
	if (!err)
		return 0;
	snprintf(res->failed_if, sizeof(res->failed_if), "%s", ifs[i].name);
	while (i-- > 0) {
		char uwhy[FG_WHY_LEN] = "";

		if (!st[i].done)
			continue;
		if (undo_one(&ifs[i], old, new_fd, ac, &st[i], uwhy)) {
			res->rollback_failed++;
			/* the first failure is why; a failed undo is added to it */
			size_t len = strlen(why);

			snprintf(why + len, FG_WHY_LEN - len, "; rolling back %s failed: %s",
				 ifs[i].name, uwhy);
		} else {
			res->rolled_back++;
		}
	}
	res->swapped = 0;
	return err;
}

int fg_swap_program(struct floodgate_bpf **skel, struct fg_iface *ifs, int n,
		    struct fg_attach_conf *ac, const struct fg_swap_opts *opts,
		    struct fg_swap_res *res, char *why)
{
	struct swap_step st[FG_MAX_IFS];
	struct floodgate_bpf *nskel;
	bool need_prog;
	int err;

	memset(res, 0, sizeof(*res));
	if (!skel || !*skel || !opts || !opts->edit || n < 0 || n > FG_MAX_IFS) {
		fg_why(why, "fg_swap_program: bad arguments");
		return -EINVAL;
	}
	/* a dispatcher's libxdp loads its own copy (as EXT): the program
	 * itself is loaded only for a link, netlink, or a later exclusive attach */
	need_prog = !(ac->how == FG_XDP_LIBXDP && ac->dispatcher);
	for (int i = 0; i < n; i++) {
		memset(&st[i], 0, sizeof(st[i]));
		st[i].old_fd = -1;
		st[i].way = way_of(&ifs[i]);
		need_prog |= st[i].way == WAY_LINK || st[i].way == WAY_ALONE;
	}
	err = twin_open(*skel, &nskel, why);
	if (err) {
		res->load_failed = true;
		return err;
	}
	bpf_program__set_autoload(nskel->progs.floodgate, need_prog);
	err = opts->edit(nskel, opts->arg, why);
	if (!err && (err = floodgate_bpf__load(nskel)))
		fg_why(why, "cannot load the second instance of the XDP program: %s",
		       strerror(-err));
	if (err) {
		res->load_failed = true;
		floodgate_bpf__destroy(nskel);
		return err;
	}
	res->new_id = prog_id_of(bpf_program__fd(nskel->progs.floodgate));
	err = swap_all(*skel, nskel, ifs, n, ac, opts, st, res, why);
	close_steps(st, n);
	if (err) {
		/* an interface whose rollback failed keeps the new program loaded */
		floodgate_bpf__destroy(nskel);
		return err;
	}
	if (ac->kept_fd >= 0)
		close(ac->kept_fd);
	ac->kept_fd = -1;
	ac->kept_id = 0;
	floodgate_bpf__destroy(*skel);
	*skel = nskel;
	return 0;
}
