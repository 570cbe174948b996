/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Tier shedding: the adaptive shedder's share of a tiered rule's packets (docs/shedding.md). */
#ifndef FG_LIB_SHED_BPF_H
#define FG_LIB_SHED_BPF_H

/*
 * The adaptive shedder (docs/shedding.md section 5, step 1), for a rule
 * with a tier: shed the share fg_shed_ctl gives its tier and the packet's
 * kind, preferring new TCP connections; touches no bucket. Returns
 * FG_SHED_REAL when the packet is to be shed for real, FG_SHED_MARK when
 * it would be (shadow), else 0 (FG_SHED_REAL has the FG_SHED_MARK bit, so
 * the caller marks the event without a branch). now: the packet's clock,
 * ns. A global function, like the others:
 * verified once, not once per path of the caller. In shadow (the rule's, the
 * global or fg_shed_ctl.shadow) it only leads to FG_EV_SHED_TIER and the
 * packet goes on through its buckets: fg_decide counts it as shed_shadow
 * if they admit it, so shadow shedding opens no hole in the quotas.
 */
enum {
	FG_SHED_MARK = 1,
	FG_SHED_REAL = 3
};
__noinline int fg_shed_tier(const struct fg_policy *pol, const struct fg_rule *r,
			    const struct fg_pkt *p, int shadow, __u64 now)
{
	__u32 k = 0, kind = FG_SHED_ANY, pi, thr;
	struct fg_shed_ctl *sh = bpf_map_lookup_elem(&fg_shed, &k);

	if (!pol || !r || !p)
		return 0;
	pi = r->pool - 1;
	if (!sh || FG_READ_ONCE(sh->off))
		return 0;
	if (pi < FG_MAX_POOLS && pi < pol->npools && (pol->pools[pi].flags & FG_POOL_NOSHED))
		return 0;
	if (p->proto == FG_IPPROTO_TCP)
		kind = (p->tcp_flags & (FG_TCP_SYN | FG_TCP_ACK)) == FG_TCP_SYN ? FG_SHED_NEW :
										  FG_SHED_EST;
	thr = FG_READ_ONCE(sh->thr[r->tier & (FG_NTIERS - 1)][kind]);
	if (!thr)
		return 0; /* nothing shed: the usual case, no clock, no random */
	thr = fg_shed_decayed(thr, FG_READ_ONCE(sh->end), FG_READ_ONCE(sh->hshift), now);
	if ((bpf_get_prandom_u32() >> 1) >= thr)
		return 0;
	return !shadow && !FG_READ_ONCE(sh->shadow) ? FG_SHED_REAL : FG_SHED_MARK;
}

#endif /* FG_LIB_SHED_BPF_H */
