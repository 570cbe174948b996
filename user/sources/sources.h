/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The source tables, read: every per-source bucket of fg_src4 and fg_src6,
 * each scanned in place through a read-only mmap (no syscall per set), for
 * `floodgate top`, `status` and the daemon's throttle log. Nothing is
 * written. For why a bucket may vanish between two walks, see the eviction
 * invariant in include/floodgate.h.
 */
#ifndef FG_SOURCES_H
#define FG_SOURCES_H

#include <stdbool.h>
#include <stddef.h>
#include "floodgate.h"

struct fg_maps;

/* One source bucket. */
struct fg_source {
	__u8 family;  /* 4 or 6 */
	__u8 limited; /* next packet of cost 1 would be dropped */
	__u16 rule;
	__u16 gen;
	__u8 addr[16];
	__u64 drops; /* sampled: multiples of FG_DROP_SAMPLE */
	__u64 tat;
};

struct fg_src_scan {
	size_t matched;	   /* buckets with drops >= min_drops */
	size_t all4, all6; /* entries walked in fg_src4 / fg_src6 */
	size_t claiming6;  /* of all6: ways being claimed (copy not yet written), not shown */
};

/*
 * All buckets (both families) with drops >= min_drops, at most max of them
 * (the rest are only counted in scan); *out is malloc'd. limited is
 * computed against pol (the active policy, not NULL) at now_ns, a
 * CLOCK_MONOTONIC_COARSE time. A bucket that changes during the walk is
 * read as it was when the walk passed it.
 */
int fg_sources_read(struct fg_maps *m, const struct fg_policy *pol, __u64 now_ns, __u64 min_drops,
		    size_t max, struct fg_source **out, size_t *n, struct fg_src_scan *scan);

/* Would the next packet of cost 1 to this bucket be refused (pol: the
 * active policy; now_tu in time units)? The data path's own test. */
bool fg_source_limited(const struct fg_policy *pol, __u16 rule, __u16 gen, __u64 tat, __u64 now_tu);

/* A source table (id: FGM_SRC4 or FGM_SRC6, mmapable) mapped read-only,
 * to be scanned in place: *sets, its *nsets sets of set_size bytes
 * (-EPROTO for another size); munmap(*sets, *len) when done. */
int fg_src_table_map(struct fg_maps *m, int id, size_t set_size, const void **sets, __u32 *nsets,
		     size_t *len);

/* Entries in fg_src4 / fg_src6: a full walk (tools and tests; the daemon
 * walks incrementally, user/sources/srcwalk.h). */
int fg_sources_count(struct fg_maps *m, size_t *n4, size_t *n6);

#endif /* FG_SOURCES_H */
