/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * SYN authentication's userspace (docs/syn-auth.md), under the daemon's
 * module (daemon/mod_synauth.c) and the CLI (cli/cli_synauth.c):
 *   sakey.c     the secret in fg_sakey: getrandom, kept across restarts,
 *               rotated every key epoch; never a fixed fallback
 *   verified.c  the verified tables fg_ver4/fg_ver6: count, list, delete
 *   tcattach.c  the tc program (fgsyn, handoff way) on each interface:
 *               tcx link pinned as tclink_<ifname>, else clsact
 * Functions return 0 or a negative errno and log nothing.
 */
#ifndef FG_SYNAUTH_H
#define FG_SYNAUTH_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "floodgate.h"

/* --- sakey.c ---------------------------------------------------------------- */

/* What fg_sakey_tend did. */
struct fg_sakey_rec {
	bool seeded;   /* the seeds were empty: filled */
	int filled;    /* key entries written (0..2) */
	__u64 epoch;   /* the current key epoch */
	bool have_cur; /* after the call: the current epoch has a key */
	bool bits_set; /* ver4_bits / ver6_bits were written */
};

/* The verified tables' set-count exponent for max_verified sources
 * (FG_VWAYS a set), within FG_VER_MIN_BITS..FG_VER_MAX_BITS. */
__u32 fg_ver_bits(__u32 max_verified);

/*
 * fg_sakey (fd) at CLOCK_MONOTONIC now_ns: seeds filled once when empty,
 * the current epoch's key and, once the previous one's cookies are dead,
 * the next one's (include/floodgate.h, fg_sakey); ver4_bits / ver6_bits set
 * to the tables' sizes. Each key from getrandom; a failure leaves the entry
 * empty (the program then answers nothing and counts syn_auth_nokey).
 */
int fg_sakey_tend(int fd, __u64 now_ns, __u32 ver4_bits, __u32 ver6_bits, struct fg_sakey_rec *rec);

/* --- verified.c --------------------------------------------------------------- */

/* The verified tables, mmapped (read-only unless opened for writing). */
struct fg_ver {
	struct fg_vset4 *v4;
	struct fg_vset6 *v6;
	size_t len4, len6; /* mapped bytes */
	__u32 sets4, sets6;
	__u64 seed[2]; /* fg_sakey.seed, for IPv6 digests */
};

/* From the maps' fds (fg_ver4, fg_ver6, fg_sakey); write: for fg_ver_del. */
int fg_ver_open(struct fg_ver *v, int fd4, int fd6, int keyfd, bool write);
void fg_ver_close(struct fg_ver *v);

struct fg_ver_entry {
	int family;	     /* 4 or 6 */
	__be32 addr[4];	     /* IPv4 in addr[0] */
	__u64 left_ns;	     /* verified for this much longer */
	__u64 since_ago_ns;  /* verified this long ago (0: unknown) */
	__u64 synack_ago_ns; /* floodgate's last SYN-ACK to it, this long ago (0: none) */
};

/* Live (verified) entries at CLOCK_MONOTONIC now_ns through fn; a nonzero
 * return of fn stops the walk and is returned. */
typedef int fg_ver_fn(const struct fg_ver_entry *e, void *arg);
int fg_ver_each(const struct fg_ver *v, __u64 now_ns, fg_ver_fn *fn, void *arg);

/* How many are verified now, per family. */
void fg_ver_count(const struct fg_ver *v, __u64 now_ns, __u64 *n4, __u64 *n6);

/* Remove family's addr (IPv4 in addr[0]) from the table: how many ways held it. */
int fg_ver_del(struct fg_ver *v, int family, const __be32 addr[4]);

/* --- tcattach.c ---------------------------------------------------------------- */

enum fg_tc_how {
	FG_TC_NONE = 0,
	FG_TC_TCX,    /* a tcx link (6.6+), pinned as tclink_<ifname> */
	FG_TC_CLSACT, /* clsact qdisc + a filter (FG_TC_HANDLE, FG_TC_PRIO) */
};
extern const char *const fg_tc_how_names[3];

#define FG_TC_HANDLE 0xf9a7 /* the clsact filter's handle ... */
#define FG_TC_PRIO   0xf9a7 /* ... and priority */

struct fg_tc_iface {
	char name[IF_NAMESIZE];
	int ifindex;
	int want;      /* enum fg_tc_how: FG_TC_NONE tcx else clsact; else only that one */
	int how;       /* enum fg_tc_how */
	int link_fd;   /* FG_TC_TCX: the link; -1 otherwise */
	bool adopted;  /* swapped into a link pinned by an earlier daemon */
	char why[256]; /* why attaching failed */
};

/* dir/tclink_<ifname> */
int fg_tc_pin_path(char *buf, size_t len, const char *dir, const char *ifname);

/* The way FLOODGATE_TC_ATTACH asks for (s: its value, NULL when unset):
 * auto (FG_TC_NONE), tcx or clsact; -EINVAL (why) when it names none. */
#define FG_TC_ATTACH_ENV "FLOODGATE_TC_ATTACH"
int fg_tc_want(const char *s, char *why);

/* prog_fd (fgsyn's program) on ifc (name and want set; its ifindex looked
 * up): adopt a live pinned tcx link on the same device (swapping the
 * program in), else attach tcx and pin it, else clsact (replacing our
 * filter where one was left: adopted); want narrows it to one. What the
 * other way left of ours on the device is removed. */
int fg_tc_attach(int prog_fd, const char *dir, struct fg_tc_iface *ifc);
/* Take it off: the tcx link detached and unpinned, or the clsact filter removed. */
int fg_tc_detach(const char *dir, struct fg_tc_iface *ifc);
/* Forget it, leaving it attached (a daemon that stops without detaching). */
void fg_tc_release(struct fg_tc_iface *ifc);
/* Still attached where it was (the device may have gone)? */
bool fg_tc_alive(const struct fg_tc_iface *ifc);

/* fgsyn's counters (enum fg_syn_stat), summed over CPUs, from the fd of its fg_systat. */
int fg_systat_read(int fd, __u64 out[FG_SYN_NSTAT]);
/* The fd of fg_systat behind a tc link pinned in dir, for the CLI; -ENOENT: none. */
int fg_systat_find(const char *dir);

extern const char *const fg_syn_stat_names[FG_SYN_NSTAT];

/* fg_sadly summed over CPUs (fd of fg_sadly). */
int fg_sadly_read(int fd, struct fg_sadly *out);

#endif /* FG_SYNAUTH_H */
