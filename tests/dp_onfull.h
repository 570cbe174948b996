/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The checks of a rule's on_full in the data-path fixture (tests/dp.h), for
 * the IPv4 and IPv6 table-full tests: after `sent` new sources of which
 * `refused` found no bucket (the other `own` got one), row 0 passed what
 * the mode says and counted its event once per refused source.
 */
#ifndef FG_TEST_DP_ONFULL_H
#define FG_TEST_DP_ONFULL_H

#include "dp.h"

/* mode FG_FULL_*: overflow passes own + ovf_burst, open passes all `sent`,
 * closed passes only `own`. Check names start with what. */
void dp_check_on_full(struct dp *d, const char *what, int mode, __u64 passed, __u64 sent,
		      __u64 own, __u64 refused, __u64 ovf_burst);

#endif
