/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Per-source buckets: the set and way of a source in fg_src4 or fg_src6,
 * claims under the eviction invariant and the admission limit
 * (include/floodgate.h).
 */
#ifndef FG_LIB_BUCKETS_BPF_H
#define FG_LIB_BUCKETS_BPF_H

/* The admission limit on new source keys: the eviction invariant, floodgate.h. */
static __always_inline int fg_admit_new(const struct fg_policy *pol, __u64 now, __u32 *ev)
{
	struct fg_bucket *b;

	if (!pol->ins.inc)
		return 1;
	b = fg_agg_bucket(FG_INS_IDX);
	if (b && fg_gcra_spend(&b->tat, now, pol->ins.inc, pol->ins.tau) == 1)
		return 1;
	*ev |= 1u << FG_EV_INSERT_LIMITED;
	return 0;
}

/*
 * A source's way in a set of FG_WAYS4 (== FG_WAYS6) ways whose way i has
 * its key word at key[i * stride] and its tat at tat[i * stride]: its own,
 * else (through the admission limit) an empty way or the oldest full one
 * (the eviction invariant, floodgate.h). Returns the way, or -1 (counted)
 * when there is none to take; a claim is counted as FG_EV_INSERT.
 */
_Static_assert(FG_WAYS4 == FG_WAYS6, "fg_way_in serves both tables");
static __always_inline int fg_way_in(const struct fg_policy *pol, __u64 *key, __u64 *tat,
				     const int stride, __u64 *drops, __u64 want, __u64 now,
				     __u32 *ev, int pref)
{
	__u64 oldest = now, victim_key = 0;
	int i, victim = -1;

	FG_UNROLL
	for (i = 0; i < FG_WAYS4; i++)
		if (key[i * stride] == want)
			return i;
	if (pref >= 0 && pref < FG_WAYS4 && !key[pref * stride]) {
		victim = pref; /* its own way, empty: a lookup's first read */
		goto claim;
	}
	/* a loop, not unrolled: unrolled, clang 14 kept the first loop's keys
	 * for this one and spilled them, and this frame plus the caller's
	 * were 512 B, the verifier's limit (now 64 B here) */
#pragma nounroll
	for (i = 0; i < FG_WAYS4; i++) {
		__u64 k = key[i * stride], t = tat[i * stride];

		if (k == want)
			return i; /* another CPU claimed it for this source since */
		/* the first empty way, but every way read for want: a CPU that
		 * claimed the source's own way (above) since the first loop may
		 * have put it past an empty one, which a break would claim too */
		if (victim >= 0 && !victim_key)
			continue;
		if (!k) {
			victim = i;
			victim_key = 0;
			continue;
		}
		if (t <= oldest) { /* full, and the oldest so far */
			oldest = t;
			victim = i;
			victim_key = k;
		}
	}
	if (victim < 0 || victim >= FG_WAYS4) {
		*ev |= 1u << FG_EV_INSERT_FAIL;
		return -1;
	}
claim:
	if (victim < 0 || victim >= FG_WAYS4)
		return -1;
	/* bounded where it is used: clang may spill it as 32 bits, which the
	 * verifier fills without the bounds just checked */
	FG_OPAQUE(victim);
	victim &= FG_WAYS4 - 1;
	if (!fg_admit_new(pol, now, ev))
		return -1;
	if (__sync_val_compare_and_swap(&key[victim * stride], victim_key, want) == victim_key) {
		*ev |= 1u << FG_EV_INSERT;
		drops[victim] = 0;
		return victim;
	}
	if (key[victim * stride] == want)
		return victim;		/* another CPU claimed it for this source */
	*ev |= 1u << FG_EV_INSERT_FAIL; /* lost a race for the way */
	return -1;
}

/* A global function: the verifier checks it once, on its own, instead of
 * once per path of the caller. It gets no pointer to the caller's fg_verd
 * (which holds a pointer: after a global call the verifier no longer
 * trusts stack memory the callee could have written). */
__noinline int fg_src4_way(const struct fg_policy *pol, struct fg_set4 *set, __u64 key, __u64 now,
			   __u32 *ev)
{
	__u32 got = 0;
	__u32 z = 0;
	const struct fg_ctl *ctl = bpf_map_lookup_elem(&fg_ctl, &z);
	int w = pol && set && ctl ?
			fg_way_in(pol, (__u64 *)set->key, set->tat, 1, set->drops, key, now, &got,
				  (int)fg_way4_pref(key, FG_READ_ONCE(ctl->seed4))) :
			-1;

	if (ev)
		*ev |= got;
	return w;
}

/* The way of set that holds key, or -1: inline, the hit needs no call (a
 * global function's call and its SRSO-safe return cost ~8 ns here). A miss
 * goes on to fg_src4_way, which looks again and claims a way. */
static __always_inline int fg_src4_own(const struct fg_set4 *set, __u64 key)
{
	const __u64 *k = (const __u64 *)set->key;
	int i;

	FG_UNROLL
	for (i = 0; i < FG_WAYS4; i++)
		if (k[i] == key)
			return i;
	return -1;
}

/* fg_src4_own for fg_src6: the way whose digest is key, or -1. */
static __always_inline int fg_src6_own(const struct fg_set6 *set, __u64 key)
{
	int i;

	FG_UNROLL
	for (i = 0; i < FG_WAYS6; i++)
		if (set->way[i].key == key)
			return i;
	return -1;
}

/* Who claims a way in fg_src6 (one argument: a global function takes
 * at most five; the time is one of its own, which kept fg_charge_at's
 * frame 8 B smaller). */
struct fg_claim6 {
	struct fg_who6 who;
	__u64 key; /* fg_digest6 of who */
};

/* Global, as fg_src4_way; the key is a digest, so the caller of a claim
 * (FG_EV_INSERT in *ev) then writes its copy of the source (who: after the
 * CAS, readers check it, floodgate.h). The write is the caller's so that
 * this frame need not keep set and c live: it shares the verifier's 512 B
 * with the caller's (the frames: tools/fgverify prints them). */
__noinline int fg_src6_way(const struct fg_policy *pol, struct fg_set6 *set,
			   const struct fg_claim6 *c, __u64 now, __u32 *ev)
{
	__u32 got = 0;
	int w = pol && set && c ? fg_way_in(pol, &set->way[0].key, &set->way[0].tat,
					    sizeof(set->way[0]) / sizeof(__u64), set->drops, c->key,
					    now, &got, (int)fg_way6_pref(c->key)) :
				  -1;

	if (ev)
		*ev |= got;
	return w;
}

/* Start the load of p's cache line now, so that its miss overlaps what
 * follows (the empty asm keeps the value live: clang cannot drop the load
 * or sink it to the first use). */
static __always_inline void fg_touch(const __u64 *p)
{
	__u64 x = *(const volatile __u64 *)p;

	asm volatile("" : : "r"(x));
}

/* p's bucket key under r (struct fg_wkey4 as one word). */
static __always_inline __u64 fg_src4_key(const struct fg_rule *r, const struct fg_pkt *p)
{
	union {
		struct fg_wkey4 s;
		__u64 u;
	} k = { .s = {
			.addr = p->saddr[0] & r->mask4,
			.rule = FG_WKEY4_USED | (r->id & (FG_MAX_IDS - 1)),
			.gen = r->gen,
		} };

	return k.u;
}

/* The set of fg_src4 that holds p's bucket under r, its key in *key, its
 * own way in *pref; NULL when fg_ctl's size is out of range. */
static __always_inline struct fg_set4 *fg_src4_set(const struct fg_ctl *ctl,
						   const struct fg_rule *r, const struct fg_pkt *p,
						   __u64 *key, __u32 *pref)
{
	__u32 bits = FG_READ_ONCE(ctl->src4_bits), idx;
	__u64 seed = FG_READ_ONCE(ctl->seed4);

	*key = fg_src4_key(r, p);
	*pref = fg_way4_pref(*key, seed);
	if (bits < FG_SRC4_MIN_BITS || bits > FG_SRC4_MAX_BITS)
		return NULL;
	idx = fg_hash4(*key, seed, bits);
	return bpf_map_lookup_elem(&fg_src4, &idx);
}

#define FG_HINT_RI  0x1ff /* fg_pkt.hint: 1 + rule index */
#define FG_HINT_WAY 9	  /* fg_pkt.hint: the own way's shift */
_Static_assert(FG_MAX_RULES < FG_HINT_RI && FG_WAYS4 == 8, "fg_pkt.hint: rule and way");

/*
 * Start the read of p's IPv4 set under rule r (index ri): its two lines'
 * misses overlap what comes before the spend. The set is kept in p (hint,
 * hint_set) as scalars, for fg_charge_fast: no pointer across the scan, no
 * second hash, and no stack of its own (the set's index is its lookups'
 * key in place). Nothing when r has no per-source bucket or fg_ctl's size
 * is out of range: then p names no set.
 */
static __always_inline void fg_src4_start(const struct fg_ctl *ctl, const struct fg_rule *r,
					  __u32 ri, struct fg_pkt *p)
{
	__u32 bits = FG_READ_ONCE(ctl->src4_bits);
	struct fg_set4 *set;
	__u64 key, seed;

	if (p->family != 4 || !r->src.inc || (fg_skip & FG_SKIP_SRC) || ri >= FG_MAX_RULES ||
	    bits < FG_SRC4_MIN_BITS || bits > FG_SRC4_MAX_BITS)
		return;
	seed = FG_READ_ONCE(ctl->seed4);
	key = fg_src4_key(r, p);
	p->hint = (__u16)((ri + 1) | fg_way4_pref(key, seed) << FG_HINT_WAY);
	p->hint_set = fg_hash4(key, seed, bits);
	set = bpf_map_lookup_elem(&fg_src4, &p->hint_set);
	if (!set)
		return;
	fg_touch((const __u64 *)set->key);
	fg_touch(set->tat);
}

/* Right after the parse, the set of the rule that fg_policy.hint4 names
 * for the frame's class: its misses overlap the lists and the rule scan
 * too, and if the scan finds another rule, that one's set is started then.
 * A whole class (fg_policy.whole) names its first entry's rule, the one
 * hint4 names then (a limit) or none (fg_src4_start sees no per-source
 * bucket): the line fg_find_first reads anyway, not hint4's far page. */
static __always_inline void fg_hint4_start(const struct fg_ctl *ctl, const struct fg_policy *pol,
					   struct fg_pkt *p)
{
	__u32 cls, ri;

	if (p->family != 4)
		return;
	cls = fg_class(p->proto);
	if (cls >= FG_NPCLASS)
		return;
	if (pol->whole & (1u << cls))
		ri = pol->match[cls & (FG_NCLASS - 1)][0].rule;
	else
		ri = (__u32)pol->hint4[cls] - 1;
	if (ri < FG_MAX_RULES)
		fg_src4_start(ctl, &pol->rules[ri], ri, p);
}

/* Whether the set p names (fg_src4_start) is rule ri's. */
static __always_inline int fg_hinted(const struct fg_pkt *p, __u32 ri)
{
	return (p->hint & FG_HINT_RI) == ri + 1;
}

/* The set p names, for rule r (index ri, fg_hinted): no hash. */
static __always_inline struct fg_set4 *fg_hint4_set(const struct fg_rule *r, const struct fg_pkt *p,
						    __u64 *key, __u32 *pref)
{
	*key = fg_src4_key(r, p);
	*pref = (p->hint >> FG_HINT_WAY) & (FG_WAYS4 - 1);
	return bpf_map_lookup_elem(&fg_src4, &p->hint_set);
}

/* The source's own bucket (its tat and drops words), or NULL when it has
 * none: from the set-associative fg_src4 or fg_src6 (floodgate.h). */
static __always_inline __u64 *fg_src_bucket(const struct fg_ctl *ctl, const struct fg_policy *pol,
					    const struct fg_rule *r, const struct fg_pkt *p,
					    __u64 now, struct fg_verd *v, __u64 **drops)
{
	if (p->family == 4) {
		__u32 ev = 0;
		__u64 key;
		__u32 pref;
		struct fg_set4 *set = fg_src4_set(ctl, r, p, &key, &pref);
		int w;

		if (!set)
			return NULL;
		/* its own way first: no compare the miss must answer before the
		 * tat's address is known, and one that is right when predicted */
		w = (int)(pref & (FG_WAYS4 - 1));
		if (((const __u64 *)set->key)[w] != key)
			w = fg_src4_own(set, key);
		if (w < 0) {
			w = fg_src4_way(pol, set, key, now, &ev);
			v->ev |= ev;
		}
		if (w < 0 || w >= FG_WAYS4)
			return NULL;
		*drops = &set->drops[w];
		return &set->tat[w];
	} else {
		struct fg_claim6 c = { .who = { .rule = r->id, .gen = r->gen } };
		__u32 bits = FG_READ_ONCE(ctl->src6_bits), ev = 0;
		struct fg_set6 *set;
		__u32 idx;
		int w;

		if (bits < FG_SRC6_MIN_BITS || bits > FG_SRC6_MAX_BITS)
			return NULL;
		fg_mask_src(c.who.addr, 6, p->saddr, r->mask4, r->mask6);
		c.key = fg_digest6(c.who.addr, c.who.rule, c.who.gen, FG_READ_ONCE(ctl->seed6[0]),
				   FG_READ_ONCE(ctl->seed6[1]));
		idx = fg_set6_of(c.key, bits);
		set = bpf_map_lookup_elem(&fg_src6, &idx);
		if (!set)
			return NULL;
		w = (int)fg_way6_pref(c.key); /* its own way first, as IPv4's */
		if (set->way[w & (FG_WAYS6 - 1)].key != c.key)
			w = fg_src6_own(set, c.key);
		if (w < 0) {
			w = fg_src6_way(pol, set, &c, now, &ev);
			v->ev |= ev;
		}
		if (w < 0 || w >= FG_WAYS6)
			return NULL;
		if (ev & (1u << FG_EV_INSERT)) /* claimed: who, after the CAS */
			set->who[w] = c.who;
		*drops = &set->drops[w];
		return &set->way[w].tat;
	}
}

#endif /* FG_LIB_BUCKETS_BPF_H */
