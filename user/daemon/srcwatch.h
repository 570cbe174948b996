/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * floodgated's watch over the source tables, at a cost that does not grow
 * with them (docs/operators-guide.md, "The daemon's own cost"): each tick it
 * drains the program's throttle events (the ring fg_tev) into the throttle
 * log (throttle.h), re-checks at most FG_SRCWATCH_RECHECK of the throttled
 * sources with one lookup each, and walks one slice of the tables
 * (srcwalk.h) to count them; each time a pass over one ends it stores the
 * counts in fg_meta for `floodgate status` and the metrics, as of the
 * older of the two last passes.
 */
#ifndef FG_SRCWATCH_H
#define FG_SRCWATCH_H

#include <stddef.h>
#include "floodgate.h"
#include "sources/srcwalk.h"
#include "sources/throttle.h"

struct fg_maps;
struct ring_buffer;

#define FG_SRCWATCH_RECHECK 4096 /* lookups of quiet throttled sources a tick */
#define FG_SRCWATCH_SETS4   8192 /* fg_src4 sets a tick: 64k ways, their key lines */
#define FG_SRCWATCH_SETS6   4096 /* fg_src6 sets a tick: 32k ways, their key words */

struct fg_srcwatch {
	struct fg_throttle tr;
	struct fg_srcwalk walk;
	struct ring_buffer *rb;
	struct fg_maps *m;
	const struct fg_name *names; /* this tick's, for the ring's callback */
	bool discard;		     /* the ring's backlog at start: not logged */
	__u64 events;		     /* throttle events read from the ring */
	__u64 count4, count6;	     /* the last complete passes */
	__u64 at4, at6;		     /* CLOCK_REALTIME s they ended */
	__u64 count_at;		     /* the older of the two */
};

/* Tracks at most track_max throttled sources. Drops the ring's backlog
 * (events from before this daemon, as the first scan of a table walk would
 * only record) and counts the tables once in full. 0 or -errno. */
int fg_srcwatch_start(struct fg_srcwatch *sw, struct fg_maps *m, size_t track_max);

/* One tick against the active policy and the rule names; 0 or the first
 * -errno (the rest of the tick still runs). */
int fg_srcwatch_tick(struct fg_srcwatch *sw, const struct fg_policy *pol,
		     const struct fg_name *names);

void fg_srcwatch_stop(struct fg_srcwatch *sw);

#endif /* FG_SRCWATCH_H */
