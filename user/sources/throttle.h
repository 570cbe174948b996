/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The throttle log: "throttling A (rule R)" when a source starts dropping,
 * "no longer throttling A" once it has had no new drops for
 * FG_THROTTLE_QUIET_TICKS and is not limited, or its bucket is gone. At most
 * FG_THROTTLE_LINES_PER_TICK such lines a tick; the rest are counted and
 * summed up in one line the next tick.
 *
 * Fed by the program's throttle events (struct fg_tev, include/floodgate.h),
 * not by a walk of the source tables: the tracker holds only the sources it
 * was told about (a hash set of at most max; the rest are not tracked, said
 * once) and looks up those that have been quiet, at most a budget a tick,
 * through a callback. Its cost follows the throttled sources, not the table.
 * See docs/operators-guide.md, "The daemon's own cost".
 */
#ifndef FG_THROTTLE_H
#define FG_THROTTLE_H

#include <stdbool.h>
#include <stddef.h>
#include "floodgate.h"
#include "sources/sources.h"

#define FG_THROTTLE_LINES_PER_TICK 10
#define FG_THROTTLE_QUIET_TICKS	   3

struct fg_tracked {
	__u8 used;   /* the slot holds a source */
	__u8 family; /* 4 or 6 */
	__u16 rule, gen;
	__u8 esc; /* the escalation's decision for this stretch (escalate.h); 0 none */
	__u8 pad;
	__u8 addr[16];
	__u64 drops;	  /* sampled, as last seen */
	__u64 last_grow;  /* tick of the last new drops */
	__u64 last_check; /* tick of the last lookup */
	__u64 since;	  /* fg_throttle.now_ns when it was first seen: throttled since */
	__u64 last_ns;	  /* fg_throttle.now_ns of its last new drops: throttled until */
};

struct fg_throttle {
	struct fg_tracked *slot; /* open addressing, linear probing */
	size_t nslots, n, max;	 /* slots (a power of two); sources held; at most */
	size_t cursor;		 /* where the next re-check starts */
	__u64 tick;
	__u64 now_ns;	  /* the caller's clock (CLOCK_MONOTONIC ns), for since */
	int lines;	  /* logged this tick */
	__u64 suppressed; /* not logged this tick: over the line limit */
	__u64 untracked;  /* events for sources over max */
	bool full_warned;
};

/* Room for max sources; 0 or -ENOMEM. */
int fg_throttle_init(struct fg_throttle *t, size_t max);
void fg_throttle_free(struct fg_throttle *t);

/* A tick begins: the line budget, last tick's suppressed lines said. */
void fg_throttle_begin(struct fg_throttle *t);

/* A throttle event: a new source is tracked and logged, a tracked one's
 * drops are refreshed. names: the rule names (fg_names_read). */
void fg_throttle_event(struct fg_throttle *t, const struct fg_tev *e, const struct fg_name *names);

/*
 * A source's bucket now: s->family, addr, rule and gen are set; fill drops
 * (tag masked) and limited, return 0, or -ENOENT when it has no bucket any
 * more, or another -errno (the source stays as it was).
 */
typedef int (*fg_throttle_lookup_fn)(void *arg, struct fg_source *s);

/* Every tracked source through fn (which may change e->esc, nothing else). */
void fg_throttle_each(struct fg_throttle *t, void (*fn)(void *arg, struct fg_tracked *e),
		      void *arg);

/* Looks up at most budget tracked sources quiet for FG_THROTTLE_QUIET_TICKS
 * (not yet looked up this tick), from where the last call stopped; logs and
 * forgets those that stopped. Returns the number of lookups. */
size_t fg_throttle_recheck(struct fg_throttle *t, size_t budget, fg_throttle_lookup_fn lookup,
			   void *arg, const struct fg_name *names);

#endif /* FG_THROTTLE_H */
