/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The runtime lists: incident-time allow/deny entries in fg_rt4 and fg_rt6
 * (struct fg_rt in include/floodgate.h says what the program does with
 * them). Add, delete, list, and remove the expired ones, straight on the
 * pinned maps, with or without a daemon, and without the pin dir's lock:
 * every change is one map update or delete, and fg_ctl.rt_active is kept
 * with atomic add and subtract through user/maps/ctl.h.
 *
 * Expired entries are removed wherever they are met: by the daemon's tick
 * (fg_rt_gc_maps), by fg_rt_list, and by fg_rt_add's scan of the family.
 * A removal re-reads the entry just before deleting it and keeps it if it
 * changed. The kernel has no compare-and-delete, so one race is left: an
 * operator who re-adds a prefix in the microseconds between that re-read
 * and the delete of its expired entry loses the new entry (`list` shows
 * it is gone). fg_rt_add checks its own write afterwards and retries once.
 *
 * Every function returns 0 or a negative errno and logs nothing; bad input
 * is -EINVAL with the reason in why (FG_WHY_LEN bytes, or NULL) and changes
 * nothing.
 */
#ifndef FG_RTLIST_H
#define FG_RTLIST_H

#include <stdbool.h>
#include <stddef.h>
#include "floodgate.h"
#include "maps/ctl.h"
#include "maps/fgmaps.h" /* struct fg_maps, FG_WHY_LEN */

struct fg_rt_maps {
	int fd[4];	      /* fg_rt4, fg_rt6, fg_rts4, fg_rts6 (-1: none); borrowed */
	struct fg_ctl_map cm; /* fg_ctl, mapped, for rt_active */
};

/* One entry as userspace handles it. */
struct fg_rt_entry {
	__u8 family;	  /* 4 or 6 */
	__u8 plen;	  /* 0..32 or 0..128 */
	__u8 addr[16];	  /* network order, host bits clear; IPv4 in addr[0..3] */
	bool expired;	  /* fg_rt_list: its time was over (it has been removed) */
	bool scoped;	  /* denies the address for rule id rule only (fg_rts4/6), not whole */
	__u32 rule;	  /* with scoped: the rule's id (fg_rule.id) */
	struct fg_rt val; /* val.plen is set from plen by fg_rt_add */
};

/* Map the fg_ctl of ctl_fd and use fd4, fd6 (fg_rt4, fg_rt6; types and
 * sizes checked). -EPROTO for maps of another layout, -ENODATA when fg_ctl
 * is not stamped yet (a daemon is starting: its init would overwrite the
 * count). */
int fg_rt_open(struct fg_rt_maps *rt, int ctl_fd, int fd4, int fd6);
/* Use the scoped maps too (fg_rts4, fg_rts6; checked): without them a
 * scoped entry is -EBADF and lists show the whole-address entries only. */
int fg_rt_open_scoped(struct fg_rt_maps *rt, int fds4, int fds6);
/* fg_rt_open and fg_rt_open_scoped with the maps of an open pin dir. */
int fg_rt_open_maps(struct fg_rt_maps *rt, struct fg_maps *m);
void fg_rt_close(struct fg_rt_maps *rt);

/* Is the entry's time over at now (ns of the program's clock)? As the
 * program judges it. */
bool fg_rt_is_expired(const struct fg_rt *v, __u64 now);

/*
 * Add e, or update the entry of the same prefix and scope on the same
 * list (e->scoped: a deny entry for one rule, in fg_rts4/6) (its
 * expiry, who and comment; *updated is then true). The caller fills
 * e->val's list, expires (0, or after now), created, who and comment.
 * -EINVAL: bad entry; -EEXIST: the prefix is on the other list; -ENOSPC:
 * FG_RT_MAX entries of that family already (counted after removing the
 * expired ones). why says which.
 */
int fg_rt_add(struct fg_rt_maps *rt, const struct fg_rt_entry *e, __u64 now, bool *updated,
	      char *why);

/*
 * Delete the entry of exactly e's prefix and scope on list e->val.list. -ENOENT when
 * there is none (why says if the prefix is on the other list instead).
 * *was_expired (may be NULL) says whether its time was already over.
 */
int fg_rt_del(struct fg_rt_maps *rt, const struct fg_rt_entry *e, __u64 now, bool *was_expired,
	      char *why);

/*
 * Every entry of list (FG_LIST_ALLOW, FG_LIST_DENY, or FG_LIST_NONE for
 * both), sorted by family, address, length, scope (whole first); *out is malloc'd (NULL when
 * there are none). Expired entries met (of either list) are removed, and
 * those of list are returned with expired set. n4, n6 (may be NULL): the
 * live whole-address entries per family, both lists (what FG_RT_MAX bounds;
 * the scoped maps have the same bound of their own).
 */
int fg_rt_list(struct fg_rt_maps *rt, __u32 list, __u64 now, struct fg_rt_entry **out, size_t *n,
	       size_t *n4, size_t *n6);

/* Remove the expired entries of both families; *removed (may be NULL)
 * counts them. */
int fg_rt_gc(struct fg_rt_maps *rt, __u64 now, unsigned int *removed);

/* For the daemon's tick: fg_rt_gc on the maps of m, only when rt_active
 * or rt_scoped says there are entries. */
int fg_rt_gc_maps(struct fg_maps *m, __u64 now, unsigned int *removed);

/* "10.0.0.0/8", "2001:db8::/32" */
void fg_rt_prefix_str(const struct fg_rt_entry *e, char *buf, size_t len);

#endif /* FG_RTLIST_H */
