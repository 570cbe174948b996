/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The admission limit for new source keys (fg_policy.ins), from a compiled
 * config. Why it exists: see the eviction invariant in include/floodgate.h.
 */
#ifndef FG_ADMISSION_H
#define FG_ADMISSION_H

struct fg_config;

/*
 * Sets cfg->pol.ins to the policy's explicit `admission:` limit or, without
 * one, to R_ins = max_sources / (2 * T_refill) new keys per second, T_refill
 * being the longest time any rule's per-source bucket takes to refill from
 * empty. Returns the rate it chose, in keys per second.
 */
double fg_policy_set_admission(struct fg_config *cfg);

#endif /* FG_ADMISSION_H */
