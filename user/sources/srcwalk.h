/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The daemon's reads of the source tables, at a cost that does not grow
 * with them (docs/operators-guide.md, "The daemon's own cost"):
 *   - point lookups of the sources the program reported (the throttle
 *     log's re-checks, throttle.h), the key words of one set of fg_src4
 *     or fg_src6 each;
 *   - an incremental walk that counts the entries, a fixed slice a tick,
 *     for `floodgate status` (through fg_meta) and the metrics.
 * Both tables are mapped read-only once; nothing is written.
 */
#ifndef FG_SRCWALK_H
#define FG_SRCWALK_H

#include <stdbool.h>
#include <stddef.h>
#include "floodgate.h"
#include "sources/sources.h"

struct fg_maps;

struct fg_srcwalk {
	struct fg_maps *m;
	const struct fg_set4 *sets; /* fg_src4, mapped read-only */
	__u32 nsets;
	size_t len;
	__u64 seed4; /* fg_ctl's, for the set of a key */
	__u32 bits4;
	__u32 cur4;		     /* next set of this pass */
	__u64 acc4, acc6;	     /* counted so far in this pass */
	const struct fg_set6 *sets6; /* fg_src6, mapped read-only */
	__u32 nsets6;
	size_t len6;
	__u64 seed6[2]; /* fg_ctl's, for the digest of a key */
	__u32 bits6;
	__u32 cur6;
	__u64 count4, count6;	     /* the last complete passes */
	__u64 reads;		     /* entries read, walk and lookups (metrics) */
	__u64 lookups;		     /* point lookups */
	const struct fg_policy *pol; /* for fg_srcwalk_lookup's limited */
	__u64 now_tu;
};

/* Maps both tables and reads their seeds. */
int fg_srcwalk_open(struct fg_srcwalk *w, struct fg_maps *m);
void fg_srcwalk_close(struct fg_srcwalk *w);

/*
 * One slice: the next sets4 sets of fg_src4 and sets6 of fg_src6 (the
 * two walks run at their own pace). Returns the
 * passes that ended in it, FG_SRCWALK_PASS4 | FG_SRCWALK_PASS6 (count4,
 * count6 are then those passes' totals), 0 if none, or -errno.
 */
#define FG_SRCWALK_PASS4 1
#define FG_SRCWALK_PASS6 2
int fg_srcwalk_step(struct fg_srcwalk *w, __u32 sets4, __u32 sets6);

/* A fg_throttle_lookup_fn (arg: the walker, pol and now_tu set). */
int fg_srcwalk_lookup(void *arg, struct fg_source *s);

#endif /* FG_SRCWALK_H */
