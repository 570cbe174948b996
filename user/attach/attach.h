/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * floodgated's interfaces: one bpf_link per interface, pinned in the pin dir
 * as link_<ifname>, so the filter outlives the daemon; a restarted daemon
 * swaps its program into the pinned link (bpf_link__update_program) instead
 * of attaching again. Functions return 0 or a negative errno and log
 * nothing: what happened is left in struct fg_iface for the caller to log.
 *
 * An interface is followed by its ifindex, not its name: a link whose
 * ifindex the kernel still reports holds the same device, whatever it is
 * called now, so a rename changes fg_iface.name and nothing else. Only a
 * severed link (ifindex 0: the device was unregistered) loses it; then an
 * interface of the configured name is attached as soon as there is one.
 * The link's pin keeps the configured name (link_<conf>) across renames,
 * so a restarted daemon with the same file finds and adopts it, and
 * `floodgate detach` (which unpins every link_*) still removes it. A
 * restart whose file names the device by its new name finds the link by
 * ifindex among the link_* pins and re-pins it as link_<new name>.
 *
 * How (xdp_attach:, docs/libxdp.md): FG_XDP_EXCLUSIVE is the link above;
 * FG_XDP_LIBXDP goes through xdpattach.h, as a component of libxdp's
 * dispatcher, or alone by netlink where the kernel cannot build one. Then
 * libxdp's pins (or the netlink attach) keep the filter, fg_iface.link is
 * NULL, and a restart finds floodgate's program on the device and adopts
 * it (fg_xdp_adopt). A link pinned by an earlier exclusive run is adopted
 * as a link whatever xdp_attach says now: how changes only after a detach.
 */
#ifndef FG_ATTACH_H
#define FG_ATTACH_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include "floodgate.h"
#include "maps/fgmaps.h"

struct floodgate_bpf;
struct bpf_link;

/* What fg_watch_ifaces did to an interface this time (bits). */
enum fg_iface_change {
	FG_IF_LOST = 1,	   /* its link was severed (interface deleted): unpinned */
	FG_IF_BACK = 2,	   /* an interface of that name is there again: attached */
	FG_IF_FAILED = 4,  /* it is there again but attaching failed (why) */
	FG_IF_RENAMED = 8, /* the attached device has a new name (was -> name); still attached */
};

struct fg_iface {
	char conf[IF_NAMESIZE];	     /* the configured name; the link pin is link_<conf> */
	char name[IF_NAMESIZE];	     /* the device's name now (follows renames) */
	char was[IF_NAMESIZE];	     /* its name before the last FG_IF_RENAMED */
	char pinned_as[IF_NAMESIZE]; /* its live link is pinned as link_<pinned_as>, not
					 * link_<conf>: fg_attach_iface re-pins it (repinned) */
	bool repinned;		     /* the last attach moved link_<pinned_as> to link_<conf> */
	int ifindex;
	__u32 xdp_mode; /* 1 native, 2 generic, 0 detached (interface gone) */
	struct bpf_link *link;
	int failed_ifindex;   /* attaching to this ifindex failed: do not retry */
	bool adopted;	      /* the last attach swapped into a pinned link */
	bool kept;	      /* ... or found it running the program kept: left as it was */
	bool severed;	      /* the last attach found a severed pinned link and removed it */
	unsigned int change;  /* enum fg_iface_change bits of the last fg_watch_ifaces */
	char why[FG_WHY_LEN]; /* why the last attach failed */
	int how;	      /* enum fg_xdp_how as attached */
	bool how_kept;	      /* attached another way than asked (an earlier daemon's) */
	bool in_dispatcher;   /* FG_XDP_LIBXDP: a component of libxdp's dispatcher */
	__u32 prog_id;	      /* FG_XDP_LIBXDP: our program on the device */
	__u32 dispatcher_id;  /* its dispatcher, 0 when alone */
};

/* How to attach, resolved from the policy's xdp_attach (fg_attach_conf_init). */
struct fg_attach_conf {
	int xdp_mode;	       /* enum fg_xdp_mode */
	int how;	       /* enum fg_xdp_how: never auto */
	bool from_auto;	       /* xdp_attach: auto chose how */
	bool dispatcher;       /* the kernel can build libxdp's dispatcher (probed) */
	unsigned int run_prio; /* libxdp */
	__u32 chain;	       /* libxdp: 1 << XDP_x per chain-call action */
	char probe[160];       /* why it cannot, when !dispatcher */
	int kept_fd;	       /* the running program kept (fg_keep_running_prog), else -1 */
	__u32 kept_id;	       /* ... its id */
};

#define FG_LINK_PATH_LEN 320 /* a pin dir of up to 255 bytes, "/link_", a name */

/*
 * The interface configured as conf: the device a live pinned link
 * dir/link_<conf> holds (FG_IF_RENAMED in change when it is called
 * something else now), else the interface named conf (-ENODEV: none);
 * then, when our live link on it is pinned under another name (the file
 * now names the device by its new name), that name in pinned_as.
 */
int fg_iface_init(struct fg_iface *ifc, const char *dir, const char *conf);

/* dir/link_<ifname>; -ENAMETOOLONG if it does not fit. */
int fg_link_path(char *buf, size_t len, const char *dir, const char *ifname);

/* The ifindex an XDP link is attached to; 0 once the kernel severed it
 * (device unregistered) or on error. */
int fg_link_ifindex(int link_fd);
/* An fd of the program behind a link, or -errno. */
int fg_link_prog_fd(int link_fd);

/* ac from the policy's xdp_mode, xdp_attach (enum fg_xdp_attach),
 * priority and chain: probes the dispatcher once unless exclusive. */
int fg_attach_conf_init(struct fg_attach_conf *ac, int xdp_mode, int xdp_attach, unsigned int prio,
			__u32 chain);

/* Attach skel's program to ifc (ifindex set) as ac says: exclusive, adopt
 * a pinned link or create one (native first when xdp_mode is FG_XDP_AUTO)
 * and pin it; libxdp, adopt floodgate's program on the device or join
 * (or create) its dispatcher. A device with another program that floodgate
 * cannot share fails with a reason naming it. */
int fg_attach_iface(struct floodgate_bpf *skel, const char *dir, const struct fg_attach_conf *ac,
		    struct fg_iface *ifc);

/*
 * An adopting start that need not verify its program again (issue 25):
 * every interface of ifs has a live pinned link in dir, all run one
 * program, and that program is this build over the maps skel (opened,
 * sized, pin paths set, shared maps reused; not loaded) will load with:
 * its .rodata equals skel's byte for byte (fg_build, the object's hash,
 * included), and every other map of it is one of skel's, by id, as
 * pinned or reused, but its own .bss and .data. Then *fd is an fd of it,
 * *id its id, and 0; else why says what differs and -ESTALE, -ENOENT or
 * -errno. The caller then does not autoload skel's program, and passes
 * *fd as fg_attach_conf.kept_fd.
 */
int fg_keep_running_prog(struct floodgate_bpf *skel, const char *dir, const struct fg_iface *ifs,
			 int n, int *fd, __u32 *id, char *why);

/* A map of skel's that every load makes anew, so fg_keep_running_prog
 * does not ask for it by id: .rodata (compared byte for byte instead),
 * .bss, .data and the program's private scratch. Any other map, a
 * constant pool clang emits (.rodata.cst16) included, must be pinned or
 * shared, or a running program cannot be kept. */
bool fg_map_per_load(const char *map_name);

/* Notice interfaces renamed, gone (their link severed, or their device
 * and our program with it) and back, and attach again; sets each one's
 * change. Returns how many changed. */
int fg_watch_ifaces(struct fg_iface *ifs, int n, struct floodgate_bpf *skel, const char *dir,
		    const struct fg_attach_conf *ac);

/* Take floodgate off its interfaces now: a link by BPF_LINK_DETACH (the
 * kernel frees an unpinned link later, from a work queue), a libxdp attach
 * through libxdp; done(ifc, err, why) for each tried. */
void fg_detach_ifaces(const struct fg_iface *ifs, int n,
		      void (*done)(const struct fg_iface *ifc, int err, const char *why));

/* BPF_LINK_DETACH every XDP link pinned as link_* in dir whose program is
 * floodgate's, before the pins go; how many, or -errno (why). */
int fg_detach_pinned_links(const char *dir, char *why);

/* The CLI, no daemon: detach every floodgate program of the filter whose
 * fg_ctl is ctl_fd that no link holds (libxdp's: alone by netlink, or a
 * dispatcher component) from this network namespace's interfaces. How
 * many were detached, or -errno (why) for the first that failed. */
int fg_detach_unlinked(int ctl_fd, char *why);

/* "component 1 of 2 of libxdp dispatcher 40", "exclusive bpf_link", ...:
 * how ifc is attached, for a log line. */
const char *fg_iface_how_str(const struct fg_iface *ifc, char *buf, size_t len);

/* Unpin links in dir for interfaces not configured in ifs (which detaches
 * them); calls gone(ifname, err) for each, err 0 when unpinned. */
void fg_drop_stale_links(const char *dir, const struct fg_iface *ifs, int n,
			 void (*gone)(const char *ifname, int err));

#endif /* FG_ATTACH_H */
