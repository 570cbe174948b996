/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The first rule of the active policy that matches a packet (struct fg_pidx). */
#ifndef FG_LIB_MATCH_BPF_H
#define FG_LIB_MATCH_BPF_H

/*
 * Ordered to fail fast: most entries a packet is tested against differ in
 * the destination port. A packet without ports (ICMP, other protocols,
 * non-first fragments) carries port 0, and entries with no port condition
 * span 0..65535, so the port tests need no flag first; likewise the TCP
 * flag test (mask 0 outside TCP). The rarer conditions sit behind flags.
 */
static __always_inline int fg_match(const struct fg_match *m, const struct fg_pkt *p, __u32 sets)
{
	__u8 f;

	if (p->dport < m->dport_lo || p->dport > m->dport_hi)
		return 0;
	if (p->sport < m->sport_lo || p->sport > m->sport_hi)
		return 0;
	if ((p->tcp_flags & m->tcp_mask) != m->tcp_val)
		return 0;
	if (m->proto && m->proto != p->proto)
		return 0;
	f = m->flags;
	if (f) {
		if ((f & FG_M_V4) && p->family != 4)
			return 0;
		if ((f & FG_M_V6) && p->family != 6)
			return 0;
		if (p->frag) {
			if (f & FG_M_L4)
				return 0;
		} else if (f & FG_M_FRAG) {
			return 0;
		}
		if ((f & FG_M_ICMP_TYPE) && p->icmp_type != m->icmp_type)
			return 0;
	}
	if (m->sets && !(m->sets & sets))
		return 0;
	return 1;
}

static __always_inline __u32 fg_class(__u8 proto)
{
	switch (proto) {
	case FG_IPPROTO_TCP:
		return FG_CLASS_TCP;
	case FG_IPPROTO_UDP:
		return FG_CLASS_UDP;
	case FG_IPPROTO_ICMP:
	case FG_IPPROTO_ICMPV6:
		return FG_CLASS_ICMP;
	default:
		return FG_CLASS_OTHER;
	}
}

/* The index of the lowest set bit of x != 0 (x & -x times a de Bruijn
 * sequence: its top 6 bits are distinct for each power of two). */
static const __u8 fg_ctz_tab[64] = {
	0,  1,	2,  53, 3,  7,	54, 27, 4,  38, 41, 8,	34, 55, 48, 28, 62, 5,	39, 46, 44, 42,
	22, 9,	24, 35, 59, 56, 49, 18, 29, 11, 63, 52, 6,  26, 37, 40, 33, 47, 61, 45, 43, 21,
	23, 58, 17, 10, 51, 25, 36, 32, 60, 20, 57, 16, 50, 31, 19, 15, 30, 14, 13, 12,
};
#define FG_DEBRUIJN64 0x022fdd63cc95386dull

static __always_inline __u32 fg_ctz(__u64 x)
{
	return fg_ctz_tab[((x & -x) * FG_DEBRUIJN64) >> 58];
}

/*
 * fg_find_rule's scan past its first candidate: one step per bpf_loop
 * round, either the next candidate of word j (tested in full) or the next
 * word with candidates. A callback is verified once, where a bounded loop
 * is walked round by round: the loop of two levels this replaces (16 words
 * of 64 candidates, a global call per candidate) cost 6.18 ~55k
 * instructions processed, every one of its 1,024 rounds walked.
 */
struct fg_scan {
	const struct fg_policy *pol;
	const struct fg_pkt *p;
	const struct fg_pbm *md, *ms; /* the packet's two bitmaps */
	__u64 c;		      /* candidates of word j not yet tested */
	__u32 top;		      /* words after j with candidates */
	__u32 j, n, cls, sets;
	int rule; /* the first match's rule index, or -1 */
};

static long fg_scan_step(__u64 round, void *ctx)
{
	struct fg_scan *s = ctx;
	const struct fg_match *m;
	__u32 i, j;

	if (!s->c) {
		if (!s->top)
			return 1;
		j = fg_ctz(s->top) & (FG_MATCH_WORDS - 1);
		s->top &= s->top - 1;
		s->j = j;
		s->c = s->md->w[j] & s->ms->w[j];
		return 0;
	}
	/* j masked again: 6.1 fills a 32-bit spill unbounded */
	i = (s->j & (FG_MATCH_WORDS - 1)) * 64 + fg_ctz(s->c);
	s->c &= s->c - 1;
	if (i >= s->n)
		return 1;
	m = &s->pol->match[s->cls & (FG_NCLASS - 1)][i & (FG_MAX_MATCH - 1)];
	if (!fg_match(m, s->p, s->sets))
		return 0;
	s->rule = m->rule;
	return 1;
}

/*
 * fg_find_rule's first step, inline (most packets stop here, and a global
 * function's call and return cost ~8 ns a packet here): the first candidate
 * of the packet's class, when the class has at most 64 entries; the first
 * entry itself, without the index, when it holds the whole class
 * (fg_policy.whole: the index's two port words and two bitmap lines, on
 * pages of their own, cost a 1-source flood ~6 ns a frame live). Its rule
 * index, or -1: then fg_find_rule decides (from the start: it finds the
 * same first candidate and goes on).
 */
static __always_inline int fg_find_first(const struct fg_policy *pol, const struct fg_pkt *p,
					 __u32 sets, __u32 slot)
{
	const struct fg_pidx *x;
	const struct fg_match *m;
	__u32 cls, n, bd, bs, i;
	__u64 c;

	if (fg_skip & FG_SKIP_SCAN)
		return -1;
	cls = fg_class(p->proto);
	n = pol->nmatch[cls];
	if (cls >= FG_NPCLASS || !n || n > 64)
		return -1;
	if (pol->whole & (1u << cls)) {
		/* the class's first entry tests nothing: no index to read */
		i = 0;
	} else {
		x = bpf_map_lookup_elem(&fg_pidx, &slot);
		if (!x)
			return -1;
		bd = x->cls[cls & 1][0][p->dport];
		bs = x->cls[cls & 1][1][p->sport];
		if (bd >= FG_PBM_N || bs >= FG_PBM_N)
			return -1;
		c = x->bm[bd].w[0] & x->bm[bs].w[0];
		if (!c)
			return -1;
		i = fg_ctz(c);
		if (i >= n)
			return -1;
	}
	m = &pol->match[cls & (FG_NCLASS - 1)][i & (FG_MAX_MATCH - 1)];
	return fg_match(m, p, sets) ? (int)m->rule : -1;
}

/*
 * First match within the packet's protocol class, by bitmap intersection
 * (struct fg_pidx): the entries that hold both the packet's ports (or its
 * ICMP type, or its protocol), lowest first, each tested in full; an entry
 * that excludes them costs nothing. A global function: the verifier checks it once, on its own,
 * instead of once per parse path of the caller. Returns the rule index, or
 * FG_MAX_RULES when nothing matched.
 */
__noinline int fg_find_rule(const struct fg_policy *pol, const struct fg_pkt *p, __u32 sets,
			    __u32 slot)
{
	const struct fg_pbm *md, *ms;
	const struct fg_pidx *x;
	__u32 cls, n, bd, bs, top, i, j;
	__u64 c;

	if (!pol || !p)
		return FG_MAX_RULES;
	if (fg_skip & FG_SKIP_SCAN)
		return fg_skip_rule;
	x = bpf_map_lookup_elem(&fg_pidx, &slot);
	if (!x)
		return FG_MAX_RULES;
	cls = fg_class(p->proto);
	n = pol->nmatch[cls];
	if (n > FG_MAX_MATCH)
		n = FG_MAX_MATCH;
	if (cls < FG_NPCLASS) {
		bd = x->cls[cls & 1][0][p->dport];
		bs = x->cls[cls & 1][1][p->sport];
	} else {
		/* ICMP (class 2) by type, the others (3) by protocol */
		__u32 v = cls == FG_CLASS_ICMP ? p->icmp_type : p->proto;

		bd = bs = x->k8[cls & 1][v & 255];
	}
	if (bd >= FG_PBM_N || bs >= FG_PBM_N)
		return FG_MAX_RULES;
	/* The two bitmaps by pointer, which the loop below keeps on the stack:
	 * 6.1's verifier fills a spilled index bounded by its u16 load only
	 * (a scalar spilled gets an id, tied to its checked copy, from 6.8 on)
	 * and refuses bm[bd]. Opaque, or clang rebuilds them from bd. */
	md = &x->bm[bd];
	ms = &x->bm[bs];
	FG_OPAQUE(md);
	FG_OPAQUE(ms);
	/* the words with a candidate, below the class's entry count (one
	 * word: no summary to read) */
	if (n <= 64) {
		if (!n)
			return FG_MAX_RULES;
		j = 0;
		top = 0;
	} else {
		top = x->sum[bd] & x->sum[bs] & ((1u << ((n + 63) / 64)) - 1);
		if (!top)
			return FG_MAX_RULES;
		j = fg_ctz(top) & (FG_MATCH_WORDS - 1);
		top &= top - 1;
	}
	c = md->w[j] & ms->w[j];
	if (c) {
		/* the first candidate inline: most packets stop here */
		const struct fg_match *m;

		i = j * 64 + fg_ctz(c);
		c &= c - 1;
		if (i >= n)
			return FG_MAX_RULES;
		/* the mask stays: 6.1 bounds only the low half of i here */
		FG_OPAQUE(i);
		m = &pol->match[cls & (FG_NCLASS - 1)][i & (FG_MAX_MATCH - 1)];
		if (fg_match(m, p, sets))
			return m->rule;
	}
	{
		struct fg_scan sc = { .pol = pol,
				      .p = p,
				      .md = md,
				      .ms = ms,
				      .c = c,
				      .top = top,
				      .j = j,
				      .n = n,
				      .cls = cls,
				      .sets = sets,
				      .rule = -1 };

		/* a round per candidate and per word: enough for every one */
		bpf_loop(FG_MAX_MATCH + FG_MATCH_WORDS, fg_scan_step, &sc, 0);
		if (sc.rule >= 0)
			return sc.rule;
	}
	return FG_MAX_RULES;
}

#endif /* FG_LIB_MATCH_BPF_H */
