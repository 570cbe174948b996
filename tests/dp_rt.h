/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The runtime lists in the data-path fixture (tests/dp.h): user/lists/rtlist.h on
 * the skeleton's fg_rt4/fg_rt6 and fg_ctl, and a few ways to read or fill
 * them behind its back, for the tests that need a state rtlist.h would not
 * make (an entry the count does not know of, a full family).
 */
#ifndef FG_TEST_DP_RT_H
#define FG_TEST_DP_RT_H

#include "dp.h"
#include "lists/rtlist.h"

/* rtlist.h on d's maps. */
int dp_rt_open(struct dp *d, struct fg_rt_maps *rt);
/* The fixture (dp_check_open) with the runtime lists opened on it: 0, or -1
 * with the failure reported and nothing left open. */
int dp_rt_check_open(struct dp *d, struct fg_rt_maps *rt, __u32 max_sources);
/* An entry for cidr on list, expiring at expires (0: never), as the CLI fills it. */
struct fg_rt_entry dp_rt_entry(const char *cidr, __u32 list, __u64 expires, const char *comment);
/* fg_rt_add with the fixture's clock; returns its result. */
int dp_rt_add(struct dp *d, struct fg_rt_maps *rt, const char *cidr, __u32 list, __u64 expires);
/* Entries in fg_rt4 (family 4) or fg_rt6, counted by walking the trie. */
__u32 dp_rt_count(struct dp *d, int family);
/* fg_ctl.rt_active */
__u32 dp_rt_active(struct dp *d);
/* Insert one entry straight into the trie, not counted in rt_active. */
int dp_rt_raw(struct dp *d, const struct fg_rt_entry *e);
/* n IPv4 /32 entries 100.64.0.0 + i, straight into fg_rt4, each counted
 * in rt_active (as fg_rt_add would), for filling a family fast. */
int dp_rt_fill4(struct dp *d, __u32 n, __u32 list);

#endif
