/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The daemon's pins, checked every tick (issue 8: after `rm -rf` of the pin
 * dir, or of one map, the filter kept enforcing through the daemon's fds
 * while every CLI command said there was no floodgate).
 *
 * For each map and each live link the daemon holds, the object pinned at
 * its path must be the one behind the daemon's fd (same id). A pin that is
 * missing is pinned again from that fd (bpf_obj_pin), after re-creating the
 * pin dir if it went; the same maps, so buckets and counters are intact.
 * A path that holds some other object is left alone and reported: another
 * floodgated, or an operator, owns it now. A severed link is not re-pinned
 * (fg_watch_ifaces drops it). When the pin dir is a new directory, the
 * daemon's fg_maps.dirfd is moved to it, so the lock is the CLI's again.
 *
 * Functions return as documented and log nothing; the caller logs pw->msg.
 */
#ifndef FG_PINWATCH_H
#define FG_PINWATCH_H

#include <stdbool.h>
#include <sys/types.h>
#include "maps/fgmaps.h"

struct fg_iface;

#define FG_PINWATCH_REPEAT_NS (60ull * 1000000000ull) /* a failure is said again after a minute */

struct fg_pinwatch {
	dev_t dev; /* the pin dir the daemon's fg_maps.dirfd is on */
	ino_t ino;
	__u32 map_id[FGM_NMAPS]; /* the daemon's maps */
	bool failing;		 /* the last check could not put everything back */
	__u64 said_ns;		 /* CLOCK_MONOTONIC when the failure was last reported */
	__u64 failing_since_ns;
	char msg[2 * FG_WHY_LEN]; /* what to log, when fg_pinwatch_check returns 1 */
};

/* Remember m's maps and pin dir (after the start has pinned everything). */
int fg_pinwatch_init(struct fg_pinwatch *pw, const struct fg_maps *m);

/*
 * Check every pin of m (maps) and ifs (links), re-pin the missing ones.
 * Returns 1 when pw->msg says something to log now: what was removed and
 * what was done, once; a failure to put everything back, at once and then
 * every FG_PINWATCH_REPEAT_NS while it lasts; the recovery. 0: nothing new.
 */
int fg_pinwatch_check(struct fg_pinwatch *pw, struct fg_maps *m, const struct fg_iface *ifs, int n,
		      __u64 now_ns);

#endif /* FG_PINWATCH_H */
