/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Attaching floodgate's XDP program to an interface, two ways:
 *
 *   FG_XDP_LIBXDP     as one component of libxdp's multi-program dispatcher,
 *                     beside other programs (xdp-filter, a load balancer),
 *                     with a run priority and chain-call actions. It joins a
 *                     dispatcher that is there and never replaces a program
 *                     that is not floodgate's. Where the kernel cannot run a
 *                     dispatcher (no freplace), libxdp attaches the program
 *                     alone by netlink, and only to a free device.
 *   FG_XDP_EXCLUSIVE  a bpf_link owned by floodgate, optionally pinned; it
 *                     refuses a device that has any XDP program.
 *
 * The program is given loaded (the skeleton's, type XDP): exclusive mode
 * attaches it as it is; libxdp mode opens a copy from the same ELF bytes
 * that shares every map of the loaded object (bpf_map__reuse_fd), because a
 * dispatcher component must be loaded as BPF_PROG_TYPE_EXT against that
 * dispatcher. Buckets and counters are therefore the same whichever way is
 * used. docs/libxdp.md has what was measured on which kernel, and why.
 *
 * All functions return 0 or -errno and never log: on failure they write a
 * one-line reason into why (which may be NULL).
 */
#ifndef FG_XDPATTACH_H
#define FG_XDPATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "policy/policy.h" /* enum fg_xdp_mode */

struct bpf_object;
struct bpf_program;

enum fg_xdp_how {
	FG_XDP_LIBXDP = 0, /* default: works beside other programs */
	FG_XDP_EXCLUSIVE = 1,
};

#define FG_XDP_PRIO_FIRST 1	    /* floodgate's default: drops before anything expensive */
#define FG_XDP_PRIO_NONE  (~0u)	    /* not in a dispatcher: no priority */
#define FG_XDP_CHAIN_PASS (1u << 2) /* 1 << XDP_PASS: libxdp's default chain action */
#define FG_XDP_MAX_LIST	  16	    /* a dispatcher holds at most 10 */

/* The program to attach: loaded (type XDP), in the object loaded from elf
 * (a skeleton's obj, progs.<name> and <name>__elf_bytes()). */
struct fg_xdp_prog {
	struct bpf_object *obj;
	struct bpf_program *prog;
	const void *elf;
	size_t elf_sz;
};

struct fg_xdp_opts {
	enum fg_xdp_mode
		mode; /* AUTO: the mode of a dispatcher already there, else native, else generic */
	enum fg_xdp_how how;
	unsigned int run_prio; /* libxdp: lower runs first (libxdp's default is 50) */
	__u32 chain_actions; /* libxdp: bit 1 << XDP_x for each verdict that runs the next program; 0 = XDP_PASS only */
	const char *
		link_pin; /* exclusive: pin the link here, NULL = unpinned (detaches when closed) */
};

/* One attachment, filled by fg_xdp_attach and fg_xdp_adopt. fg_xdp_att_close
 * closes link_fd: an unpinned exclusive link then detaches; everything else
 * stays attached (libxdp's pins or the netlink attach hold it). */
struct fg_xdp_att {
	int ifindex;
	enum fg_xdp_how how;
	enum fg_xdp_mode mode; /* NATIVE or SKB, as attached */
	bool dispatcher;       /* a component of libxdp's dispatcher (else alone on the device) */
	bool kept;	     /* adopt: the running program was already this one; nothing changed */
	__u32 prog_id;	     /* our program (the component, in a dispatcher) */
	__u32 dispatcher_id; /* 0 when not in a dispatcher */
	__u64 overlap_ns; /* adopt in a dispatcher: how long old and new both ran (see docs/libxdp.md) */
	int link_fd;	  /* exclusive: the bpf_link, -1 otherwise */
};

/* What fg_xdp_list finds on an interface. */
struct fg_xdp_entry {
	__u32 id;
	char name[16];
	unsigned int run_prio; /* FG_XDP_PRIO_NONE when not in a dispatcher */
	__u32 chain_actions;   /* bit per XDP verdict that continues; 0 when not in a dispatcher */
	bool ours;	       /* its name is the name of our program */
};

struct fg_xdp_list {
	enum fg_xdp_mode mode; /* NATIVE or SKB; meaningless when n == 0 */
	__u32 dispatcher_id;   /* 0: the single program is attached directly */
	bool frags;    /* dispatcher loaded frags-aware (every component is); false when alone */
	bool via_link; /* the device's program is held by a bpf_link */
	int n;	       /* entries in run order */
	struct fg_xdp_entry e[FG_XDP_MAX_LIST];
};

/* A map only the XDP program reads and writes, made anew by every load and
 * never pinned (syn_auth's per-CPU scratch, fg_sascr): a running copy keeps
 * its own, so it does not tell one copy from another. */
bool fg_map_prog_private(const char *map_name);

/* 0 when this kernel lets libxdp build a dispatcher, else -EOPNOTSUPP with
 * the reason (e.g. the kernel refuses freplace programs). Loads and frees
 * two small programs from libxdp's xdp-dispatcher.o. */
int fg_xdp_probe_dispatcher(char *why);

int fg_xdp_attach(const struct fg_xdp_prog *p, int ifindex, const struct fg_xdp_opts *o,
		  struct fg_xdp_att *out, char *why);

/* Remove floodgate's program (every program named like ours_name) from
 * the interface and leave the others running: from a dispatcher (libxdp
 * rebuilds it without ours), a netlink attach, or a bpf_link (found by
 * program id, detached with BPF_LINK_DETACH; link_pin, if set, is unlinked).
 * -ENOENT when ours is not there. */
int fg_xdp_detach_ours(int ifindex, const char *ours_name, const char *link_pin, char *why);

/* The programs on an interface, in run order, with which one is ours. */
int fg_xdp_list(int ifindex, const char *ours_name, struct fg_xdp_list *l, char *why);

/* The first entry of l that is ours, NULL when none is. */
const struct fg_xdp_entry *fg_xdp_list_ours(const struct fg_xdp_list *l);

/* A restarted daemon takes over its program on an interface:
 *   nothing there          attach as fg_xdp_attach does;
 *   ours, same code and    keep it (out->kept): nothing changes, no window;
 *   same rodata
 *   ours, different        replace it: a bpf_link or a lone netlink attach
 *                          atomically (no window, no overlap); a dispatcher
 *                          component by adding the new one, then removing
 *                          the old one (libxdp 1.3.1 has no single-component
 *                          replace): no window without floodgate, but both
 *                          run for out->overlap_ns;
 *   someone else's only    as fg_xdp_attach (join, or refuse).
 * The maps are the caller's pinned ones, so buckets and counters carry on. */
int fg_xdp_adopt(const struct fg_xdp_prog *p, int ifindex, const struct fg_xdp_opts *o,
		 struct fg_xdp_att *out, char *why);

void fg_xdp_att_close(struct fg_xdp_att *a);

/* libxdp's pin dir: $LIBXDP_BPFFS/xdp, else /sys/fs/bpf/xdp. */
const char *fg_xdp_pin_base(char *buf, size_t len);

/*
 * libxdp pins each dispatcher as base/dispatch-IFINDEX-ID and leaves the
 * dir behind when the device is deleted, holding the components (and
 * floodgate's maps) alive. Remove that one dir when program ID no longer
 * runs on ifindex here; never any other (the id in its name is global, so
 * it is unambiguous across network namespaces, unlike the
 * libxdp_clean_references sweep, docs/libxdp.md). Under libxdp's own lock
 * (flock on base), without waiting. 0 removed; -ENOENT no such dir; -EBUSY
 * it still runs; -EAGAIN the lock is held: try later.
 */
int fg_xdp_remove_dead_dispatcher(const char *base, int ifindex, __u32 dispatcher_id, char *why);

const char *fg_xdp_mode_str(enum fg_xdp_mode m);

/* The next bpf link after *id (0: the first) whose info could be read: its
 * fd (the caller closes it), *id and *li set; -ENOENT after the last. */
struct bpf_link_info;
int fg_link_next(__u32 *id, struct bpf_link_info *li);

#endif /* FG_XDPATTACH_H */
