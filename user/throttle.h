/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The throttle log: once a tick floodgated hands over every source bucket
 * with drops; the tracker logs "throttling A (rule R)" when a source starts
 * dropping, and "no longer throttling A" once it has had no new drops for
 * FG_THROTTLE_QUIET_TICKS and is not limited, or its bucket is gone. At most
 * FG_THROTTLE_LINES_PER_TICK such lines a tick; the rest are counted and
 * summed up in one line the next tick.
 *
 * State: the previous scan's sources, sorted by key, looked up with
 * bsearch; at most max of them (the rest are not tracked, said once).
 */
#ifndef FG_THROTTLE_H
#define FG_THROTTLE_H

#include <stdbool.h>
#include <stddef.h>
#include "floodgate.h"
#include "sources.h"
#include "fgmaps.h"

#define FG_THROTTLE_LINES_PER_TICK	10
#define FG_THROTTLE_QUIET_TICKS		3

struct fg_tracked {
	__u8 family;		/* 4 or 6 */
	__u8 throttled;		/* "throttling" logged, "no longer" not yet */
	__u16 rule, gen;
	__u8 addr[16];
	__u64 drops;		/* sampled, as last seen */
	__u64 last_grow;	/* tick of the last new drops */
};

struct fg_throttle {
	struct fg_tracked *cur, *next;	/* cur: sorted by key; next: being built */
	size_t n, max;			/* entries in cur; capacity of each */
	__u64 tick;
	int lines;			/* logged this tick */
	__u64 suppressed;		/* not logged this tick: over the line limit */
	bool full_warned;
	bool primed;			/* the first scan only records */
};

/* Room for max sources; 0 or -ENOMEM. */
int fg_throttle_init(struct fg_throttle *t, size_t max);
void fg_throttle_free(struct fg_throttle *t);

/* One tick: src[0..n) are the buckets with drops (fg_sources_read), names
 * the rule names (fg_names_read). Logs what started and stopped. */
void fg_throttle_scan(struct fg_throttle *t, const struct fg_source *src, size_t n,
		      const struct fg_name *names);

#endif /* FG_THROTTLE_H */
