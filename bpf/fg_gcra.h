/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Token bucket as GCRA (the generic cell rate algorithm, as redis-cell
 * does it): one 64-bit theoretical arrival time (tat) per bucket, in time
 * units of 2^-FG_TU_SHIFT ns. A bucket of rate r and burst B has
 * inc = 1/r per cost unit and tau = B * inc. A request of cost c at time now
 * is admitted iff
 *
 *	max(tat, now) + c * inc - now <= tau
 *
 * and then tat becomes that sum. Nothing else is stored: refill is lazy
 * (no timers), an idle bucket is simply one whose tat lies in the past, and
 * a long idle period cannot overflow anything (max() clamps it to now).
 * Time that seems to go backwards between CPUs (a reader behind the writer
 * of tat) only makes max(tat, now) - now larger, i.e. counts as zero
 * elapsed: it can never admit more.
 *
 * After a reload that lowers a rate, a bucket keeps its time debt, which
 * is worth fewer tokens at the new rate: a source in debt may get up to
 * burst * (1 - new_rate / old_rate) tokens once. Raising a rate or lowering
 * a burst is exact (see fg_gcra_stale).
 *
 * Compiled into the XDP program and into userspace tests, which drive it
 * with synthetic time.
 */
#ifndef FG_GCRA_H
#define FG_GCRA_H

#include "floodgate.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/*
 * Stale debt. tat - now can exceed tau only after a policy change raised
 * the rate or lowered the burst (tau shrank under a bucket that was in
 * debt under the old tau). Such a bucket is clamped to empty under the new
 * limit (tat = now + tau), once, so "a changed rate applies at once"
 * without handing out a fresh burst. The slack of two coarse clock ticks
 * keeps a reader whose clock lags the writer's (timekeeper update between
 * CPUs) from clamping, i.e. from gaining tokens.
 */
#define FG_STALE_SLACK (8000000ull << FG_TU_SHIFT) /* 8 ms */

static __always_inline int fg_gcra_stale(__u64 tat, __u64 now, __u64 tau)
{
	return tat > now && tat - now > tau + FG_STALE_SLACK;
}

/* Pure decision: returns 1 and sets *next if admitted, 0 if not. */
static __always_inline int fg_gcra_step(__u64 tat, __u64 now, __u64 inc, __u64 tau, __u64 *next)
{
	__u64 t0 = tat > now ? tat : now;
	__u64 nt = t0 + inc;

	if (nt - now > tau)
		return 0;
	*next = nt;
	return 1;
}

/*
 * Spend atomically. Returns 1 (admitted, tat advanced), 0 (over the limit:
 * nothing written, so the drop path leaves the shared line read-only) or
 * -1 (FG_MAX_CAS compare-and-swap attempts all lost races: not admitted).
 * Two CPUs never both spend the last token: only the CAS that finds tat
 * unchanged since its read stores, the loser re-reads and re-decides.
 */
static __always_inline int fg_gcra_spend(__u64 *tatp, __u64 now, __u64 inc, __u64 tau)
{
	int i;

	for (i = 0; i < FG_MAX_CAS; i++) {
		__u64 old = *(volatile __u64 *)tatp;
		__u64 nt;

		if (fg_gcra_stale(old, now, tau)) {
			__sync_val_compare_and_swap(tatp, old, now + tau);
			continue;
		}
		if (!fg_gcra_step(old, now, inc, tau, &nt))
			return 0;
		if (__sync_val_compare_and_swap(tatp, old, nt) == old)
			return 1;
	}
	return -1;
}

#endif /* FG_GCRA_H */
