/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Finding floodgate without its pin dir: through the XDP program attached
 * to an interface (issue 8: after `rm -rf` of the pin dir every command,
 * bypass and detach included, said there was no floodgate while the filter
 * kept enforcing through the daemon's link).
 *
 * Discovery walks the interfaces of the caller's network namespace and asks
 * each for its XDP programs (bpf_xdp_query: native and generic). A program
 * named floodgate is a candidate; so is a floodgate component behind
 * libxdp's dispatcher, found through the tracing (freplace) links that
 * target the dispatcher, without libxdp and its blocking lock (this VM
 * cannot build a dispatcher, so that branch is written against libxdp
 * 1.3.1 but has not run here). A candidate's maps are its program's map ids, opened by id and
 * checked as fg_maps_open checks pinned ones; interfaces whose programs
 * share one fg_ctl map are one filter.
 *
 * Functions return 0 or a negative errno and log nothing; a reason for an
 * operator goes into why (FG_WHY_LEN bytes, may be NULL).
 */
#ifndef FG_DISCOVER_H
#define FG_DISCOVER_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include "floodgate.h"
#include "maps/fgmaps.h"

#define FG_PROG_NAME "floodgate" /* bpf/floodgate.bpf.c's program, as the kernel names it */
#define FG_FOUND_MAX (2 * FG_MAX_IFS)

struct fg_iface;

/* How the program is attached, so detach knows what to undo. */
enum fg_found_how {
	FG_FOUND_LINK = 1,  /* a bpf_link holds it (floodgated's way) */
	FG_FOUND_NETLINK,   /* attached by netlink (ip link, bpftool net attach) */
	FG_FOUND_COMPONENT, /* a component of libxdp's dispatcher */
};

/* One interface running a floodgate program. */
struct fg_found_if {
	int ifindex;
	char ifname[IF_NAMESIZE];
	enum fg_found_how how;
	__u32 xdp_mode;	     /* 1 native, 2 generic */
	__u32 prog_id;	     /* the floodgate program */
	__u32 link_id;	     /* FG_FOUND_LINK: the link holding it */
	__u32 dispatcher_id; /* FG_FOUND_COMPONENT: the dispatcher running it */
	__u32 ctl_id;	     /* its fg_ctl map: which filter it is */
};

struct fg_found {
	int n;
	struct fg_found_if at[FG_FOUND_MAX];
};

/* The id of any BPF object fd (map, program, link); 0 on error. */
__u32 fg_obj_id(int fd);

/* Each entry of the directory dir (".", ".." and dotfiles included) through fn(dir, de, arg)
 * until fn returns nonzero: that value, 0 after the last entry, or -errno when dir does not
 * open. fn may unlink the entry it is given. */
struct dirent;
typedef int fg_dirent_fn(const char *dir, const struct dirent *de, void *arg);
int fg_dir_each(const char *dir, fg_dirent_fn *fn, void *arg);

/* "program 12, bpf_link 3" (or netlink, or a dispatcher) into buf. */
const char *fg_found_how_str(const struct fg_found_if *at, char *buf, size_t len);

/* Every floodgate program on the interfaces of this network namespace;
 * -ENOENT (why) when there is none. */
int fg_discover(struct fg_found *f, char *why);

/*
 * Which of the filters in f the pin dir dir was: the one whose maps are
 * pinned nowhere else on /sys/fs/bpf (or only in dir itself, which is then
 * incomplete). Its interfaces are moved to the front of f and counted in
 * *n. -ENOENT (why: where each one is pinned) when every filter found is
 * pinned in another dir; -ENOTUNIQ when several have lost their pins.
 */
int fg_found_choose(struct fg_found *f, const char *dir, int *n, char *why);

/* As fg_found_choose, but the filter is the one running on ifname (the
 * operator's choice, e.g. when several lost their pins); -ENOENT (why)
 * when floodgate does not run there. */
int fg_found_choose_iface(struct fg_found *f, const char *ifname, int *n, char *why);

/*
 * The maps of the filter on at, checked as fg_maps_open checks pinned ones:
 * its program's map ids, and the maps the program does not use (fg_meta,
 * fg_names) by their BTF. Those two live only while a pin or a daemon holds
 * them; when they are gone, m gets empty ones (no daemon, no rule names)
 * and *gone (may be NULL) a bit 1 << FGM_x for each.
 */
int fg_found_maps(const struct fg_found_if *at, struct fg_maps *m, unsigned int *gone, char *why);

/* A pin dir on /sys/fs/bpf (searched 3 levels deep) that has the map ctl_id
 * pinned as fg_ctl, into dir; -ENOENT when none has it: the filter's pins
 * are gone. */
int fg_found_pinned_at(__u32 ctl_id, char *dir, size_t len);

/* Remove the program of at from its interface, and only that program: a
 * link with BPF_LINK_DETACH (whoever holds it), a netlink attach with
 * XDP_FLAGS_REPLACE against its id, a component through libxdp. */
int fg_found_detach(const struct fg_found_if *at, char *why);

/* Does ifindex run the filter whose fg_ctl is ctl_fd: an XDP link anywhere
 * (links are global, so this answers from any network namespace), or a
 * program attached by netlink to ifindex of this namespace, using that map? */
bool fg_found_attached(int ctl_fd, int ifindex);

/*
 * For a daemon about to start on a pin dir with nothing pinned: does one of
 * its interfaces already run floodgate, whose pins are gone? -EBUSY, with
 * why naming the interface, the old daemon's pid (from that filter's
 * fg_meta) and what to do; 0 when none does.
 */
int fg_found_orphan(const struct fg_iface *ifs, int n, const char *dir, char *why);

#endif /* FG_DISCOVER_H */
