/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Checks on the data-path fixture (tests/dp.h) that several data-path tests
 * make the same way: opening it, and what a rule's on_full passes and counts.
 */
#ifndef FG_TEST_DPCHECK_H
#define FG_TEST_DPCHECK_H

#include "dp.h"

/* dp_open(d, max_sources); on failure one failed check saying why, and -1. */
int dp_check_open(struct dp *d, __u32 max_sources);

/* After `sent` new sources of which `refused` found no bucket (the other
 * `own` got one), row 0 passed what on_full mode says (FG_FULL_*: overflow
 * own + ovf_burst, open all `sent`, closed only `own`) and counted its event
 * once per refused source. Check names start with what. */
void dp_check_on_full(struct dp *d, const char *what, int mode, __u64 passed, __u64 sent, __u64 own,
		      __u64 refused, __u64 ovf_burst);

#endif
