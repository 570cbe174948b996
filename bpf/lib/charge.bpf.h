/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Charging a packet: its source's bucket, the rule's aggregate, its fleet lease, its pool. */
#ifndef FG_LIB_CHARGE_BPF_H
#define FG_LIB_CHARGE_BPF_H

/*
 * on_loss, once a fleet rule's lease has run out (docs/fleet.md section 4):
 * 1 = admitted, 0 = drop. The rare path, so a global function: verified
 * once on its own, not once per path of the caller.
 */
__noinline int fg_fleet_loss(struct fg_lease *l, __u64 cost, __u64 now, struct fg_stats *st)
{
	if (!l)
		return 0;
	switch (l->on_loss) {
	case FG_LOSS_OPEN:
		break;
	case FG_LOSS_LOCAL:
		/* the daemon starts tat at the lease's expiry, empty: no burst */
		if (!l->local.inc ||
		    fg_gcra_spend(&l->tat, now, l->local.inc * cost, l->local.tau) != 1)
			return 0;
		break;
	default:
		return 0;
	}
	if (st)
		st->fleet_unleased += cost;
	return 1;
}

/*
 * A fleet rule's lease (struct fg_lease, docs/fleet.md section 5): spend
 * cost from its tokens while it runs. 2 = admitted from the lease's
 * tokens, 1 = admitted under on_loss, 0 = drop. Inline: the admit path is
 * one fetch-and-add, the drop path writes no shared line.
 */
static __always_inline int fg_fleet_spend(const struct fg_rule *r, __u64 cost, __u64 now,
					  struct fg_verd *v)
{
	__u32 id = r->id & (FG_MAX_IDS - 1);
	struct fg_lease *l = bpf_map_lookup_elem(&fg_lease, &id);
	__s64 c = (__s64)cost;

	if (v->st)
		v->st->fleet_offered += cost;
	if (!l)
		return 0;
	if (l->gen != r->gen) {
		/* not this rule's lease (the daemon has not written it): closed */
		v->ev |= 1u << FG_EV_FLEET_LOSS;
		return 0;
	}
	/* lease_expires first: the daemon stores it last, after the tokens */
	if ((now >> FG_TU_SHIFT) >= FG_READ_ONCE(l->lease_expires)) {
		v->ev |= 1u << FG_EV_FLEET_LOSS;
		return fg_fleet_loss(l, cost, now, v->st);
	}
	if (FG_READ_ONCE(l->tokens) >= c) {
		if (__sync_fetch_and_add(&l->tokens, -c) >= c)
			return 2;
		/* lost the race for the last tokens: put them back */
		__sync_fetch_and_add(&l->tokens, c);
	}
	v->ev |= 1u << FG_EV_FLEET_DROP;
	return 0;
}

/* What fg_charge decided; every return of it is one of these. */
enum fg_charged {
	FG_CHARGE_DROP = 0, /* over a quota: a drop */
	FG_CHARGE_OK = 1,   /* admitted */
	FG_CHARGE_SHED = 2, /* the pool refused: a shed */
};

/*
 * A rule's capacity pool (docs/shedding.md section 4): critical spends the
 * shared tat with the whole tolerance, the other tiers first the cap
 * (their (1 - reserve) share of the rate), then the tat with tau_low (only
 * while the pool holds more than the reserve), giving the cap's token back
 * if the pool refuses. 1 = admitted, 0 = shed. A refusal writes neither line.
 * Global: verified once, on its own.
 */
__noinline int fg_pool_spend(const struct fg_policy *pol, const struct fg_rule *r, __u64 len,
			     __u64 now, __u32 *ev)
{
	__u32 pi, id;
	const struct fg_pool *pl;
	struct fg_bucket *pb, *cb = NULL;
	__u64 cost = 1, cap_spent = 0;
	int crit, rc;

	if (!pol || !r || !ev)
		return 0;
	pi = r->pool - 1;
	crit = r->tier == FG_TIER_CRITICAL;
	if (pi >= FG_MAX_POOLS || pi >= pol->npools)
		return 1; /* no such pool: as without one */
	pl = &pol->pools[pi];
	if (!pl->inc)
		return 1;
	if (pl->cost == FG_COST_BYTES)
		cost = len < FG_MAX_COST ? len : FG_MAX_COST;
	id = pl->id & (FG_POOL_IDS - 1);
	if (!crit && pl->cap.inc) {
		cb = fg_agg_bucket(FG_CAP_IDX(id));
		if (!cb)
			return 0;
		rc = fg_gcra_spend(&cb->tat, now, pl->cap.inc * cost, pl->cap.tau);
		if (rc != 1) {
			*ev |= 1u << (rc < 0 ? FG_EV_CONTENDED : FG_EV_SHED_CAP);
			return 0;
		}
		cap_spent = pl->cap.inc * cost;
	}
	pb = fg_agg_bucket(FG_POOL_IDX(id));
	rc = pb ? fg_gcra_spend(&pb->tat, now, pl->inc * cost, crit ? pl->tau : pl->tau_low) : 0;
	if (rc == 1)
		return 1;
	*ev |= 1u << (rc < 0 ? FG_EV_CONTENDED : FG_EV_SHED_POOL);
	if (cb && cap_spent)
		__sync_fetch_and_add(&cb->tat, -cap_spent);
	return 0;
}

/* Cost taken from a fleet rule's lease goes back (its pool refused). What
 * on_loss admitted is not: no lease tokens were spent for it. */
static __always_inline void fg_fleet_refund(const struct fg_rule *r, __u64 cost)
{
	__u32 id = r->id & (FG_MAX_IDS - 1);
	struct fg_lease *l = bpf_map_lookup_elem(&fg_lease, &id);

	if (l && l->gen == r->gen)
		__sync_fetch_and_add(&l->tokens, (__s64)cost);
}

/* Charge a packet to the rule's buckets, then its pool. */
static __always_inline enum fg_charged
fg_charge(const struct fg_ctl *ctl, const struct fg_policy *pol, const struct fg_rule *r,
	  const struct fg_pkt *p, __u64 len, struct fg_verd *v, int shadow, __u64 now_ns)
{
	__u64 now = now_ns << FG_TU_SHIFT, cost = 1, spent = 0;
	__u64 *tat = NULL, *drops = NULL;
	struct fg_bucket *a;
	__u32 ev = 0;
	int rc, leased = 0;

	if (r->cost == FG_COST_BYTES)
		cost = len < FG_MAX_COST ? len : FG_MAX_COST;

	if (r->src.inc && !(fg_skip & FG_SKIP_SRC)) {
		const struct fg_limit *lim = &r->src;

		tat = fg_src_bucket(ctl, pol, r, p, now, v, &drops);
		if (!tat) {
			if (r->on_full == FG_FULL_CLOSED) {
				v->ev |= 1u << FG_EV_FULL_CLOSED;
				return FG_CHARGE_DROP;
			}
			if (r->on_full == FG_FULL_OPEN) {
				v->ev |= 1u << FG_EV_FULL_OPEN;
			} else {
				v->ev |= 1u << FG_EV_OVERFLOW;
				a = fg_agg_bucket(FG_OVF_IDX(r->id & (FG_MAX_IDS - 1)));
				if (a)
					tat = &a->tat; /* its drops word is not counted: fg_agg */
				lim = &r->ovf;
			}
		}
		if (tat) {
			rc = fg_gcra_spend(tat, now, lim->inc * cost, lim->tau);
			if (rc != 1) {
				if (rc < 0)
					v->ev |= 1u << FG_EV_CONTENDED;
				if (drops) /* the source's own, which top ranks by */
					fg_sample_drop(drops, v, shadow, r, p, now);
				return FG_CHARGE_DROP;
			}
			spent = lim->inc * cost;
		}
	}

	a = NULL;
	if (r->agg.inc) {
		a = fg_agg_bucket(FG_AGG_IDX(r->id & (FG_MAX_IDS - 1)));
		if (!a)
			return FG_CHARGE_DROP;
		rc = fg_gcra_spend(&a->tat, now, r->agg.inc * cost, r->agg.tau);
		if (rc != 1) {
			v->ev |= 1u << (rc < 0 ? FG_EV_CONTENDED : FG_EV_AGG_DROP);
			/* the source did not get to send: give its tokens back */
			if (tat && spent)
				__sync_fetch_and_add(tat, -spent);
			return FG_CHARGE_DROP;
		}
	}

	if (r->fleet) {
		rc = fg_fleet_spend(r, cost, now, v);
		leased = rc == 2;
		if (!rc) {
			/* not sent: the local buckets get their tokens back */
			if (tat && spent)
				__sync_fetch_and_add(tat, -spent);
			if (a)
				__sync_fetch_and_add(&a->tat, -(r->agg.inc * cost));
			return FG_CHARGE_DROP;
		}
	}

	if (r->pool && !fg_pool_spend(pol, r, len, now, &ev)) {
		/* the host had no room: everything spent above goes back */
		if (tat && spent)
			__sync_fetch_and_add(tat, -spent);
		if (a)
			__sync_fetch_and_add(&a->tat, -(r->agg.inc * cost));
		if (leased)
			fg_fleet_refund(r, cost);
		v->ev |= ev;
		return FG_CHARGE_SHED;
	}
	return FG_CHARGE_OK;
}

#endif /* FG_LIB_CHARGE_BPF_H */
