/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Counters and reports: throttle events, sampled drop counts, and fg_exit, the one exit. */
#ifndef FG_LIB_COUNTERS_BPF_H
#define FG_LIB_COUNTERS_BPF_H

/*
 * A throttle event for the bucket whose drops word is at drops (floodgate.h,
 * "Throttle events"): through the rate cap, claim this epoch's tag, write
 * the record. Returns the event bits to count. A global function: verified
 * once, not on every path of fg_charge.
 */
__noinline __u32 fg_tev_emit(__u64 *drops, const struct fg_rule *r, const struct fg_pkt *p,
			     __u64 now)
{
	__u64 tag = FG_TEV_TAG(now), old;
	struct fg_bucket *cap;
	struct fg_tev *e;

	if (!drops || !r || !p)
		return 0;
	cap = fg_agg_bucket(FG_TEV_IDX);
	if (!cap || fg_gcra_spend(&cap->tat, now, FG_TU_PER_SEC / FG_TEV_RATE,
				  FG_TEV_BURST * (FG_TU_PER_SEC / FG_TEV_RATE)) != 1)
		return 1u << FG_EV_TEV_CAPPED;
	old = *(volatile __u64 *)drops;
	if ((old & FG_TEV_TAG_MASK) == tag ||
	    __sync_val_compare_and_swap(drops, old, FG_DROPS(old) | tag) != old)
		return 0; /* another CPU reports it (or a racing drop: the next sample) */
	e = bpf_ringbuf_reserve(&fg_tev, sizeof(*e), 0);
	if (!e)
		return 1u << FG_EV_TEV_LOST;
	__builtin_memset(e, 0, sizeof(*e));
	fg_mask_src((__be32 *)e->addr, p->family, p->saddr, r->mask4, r->mask6);
	e->rule = r->id;
	e->gen = r->gen;
	e->family = p->family;
	e->drops = FG_DROPS(old);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* Bucket drop counts are sampled 1 in FG_DROP_SAMPLE per CPU (see
 * floodgate.h, FG_DROP_SAMPLED): the drop path writes the shared bucket
 * line rarely. A sample whose bucket has not been reported this epoch
 * reports it. */
static __always_inline void fg_sample_drop(__u64 *drops, struct fg_verd *v, int shadow,
					   const struct fg_rule *r, const struct fg_pkt *p,
					   __u64 now)
{
	__u64 n, old;

	if (!v->st)
		return;
	n = shadow ? v->st->pkts[FG_OUT_SHADOW] : v->st->pkts[FG_OUT_DROP];
	if (FG_DROP_SAMPLED(n, now)) {
		old = __sync_fetch_and_add(drops, FG_DROP_SAMPLE);
		if ((old & FG_TEV_TAG_MASK) != FG_TEV_TAG(now))
			v->ev |= fg_tev_emit(drops, r, p, now);
	}
}

/* The one exit: count the outcome (and events) in the row, return. */
static __always_inline int fg_exit(struct fg_verd *v, __u64 len)
{
	struct fg_stats *st = v->st;
	__u32 out = v->out;

	if (fg_skip & FG_SKIP_STATS)
		return v->verdict;
	if (!st) {
		__u32 k = v->row;

		st = bpf_map_lookup_elem(&fg_stats, &k);
		if (!st)
			return v->verdict;
	}
	if (out >= FG_OUT_MAX)
		out = FG_OUT_PASS;
	st->pkts[out]++;
	st->bytes[out] += len;
	if (v->ev) {
		__u32 e;

#pragma unroll
		for (e = 0; e < FG_EV_MAX; e++)
			if (v->ev & (1u << e))
				st->ev[e]++;
	}
	return v->verdict;
}

#endif /* FG_LIB_COUNTERS_BPF_H */
