/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* The source's lists: the runtime allow/deny entries, then the policy's (DIR-16-8-8, LPM). */
#ifndef FG_LIB_LISTS_BPF_H
#define FG_LIB_LISTS_BPF_H

/*
 * The runtime lists (struct fg_rt): the list of the longest entry covering
 * the source whose time is not over, or FG_LIST_NONE. Past an expired
 * entry (counted) the next lookup asks for prefixes shorter than it, at
 * most FG_RT_DEPTH lookups in all; key starts with its prefixlen.
 */
static __always_inline __u32 fg_rt_walk(void *map, void *key, __u64 now, __u32 *ev)
{
	__u32 *plen = key;
	const struct fg_rt *e;
	int i;

	for (i = 0; i < FG_RT_DEPTH; i++) {
		e = bpf_map_lookup_elem(map, key);
		if (!e)
			break;
		if (!e->expires || now < e->expires)
			return e->list;
		*ev |= 1u << FG_EV_RT_EXPIRED;
		if (!e->plen || e->plen > *plen)
			break;
		*plen = e->plen - 1;
	}
	return FG_LIST_NONE;
}

/* A global function: the verifier checks the walk once, on its own. */
__noinline __u32 fg_rt_lookup(const struct fg_pkt *p, __u64 now, __u32 *ev)
{
	__u32 e = 0, list;

	if (!p || !ev)
		return FG_LIST_NONE;
	if (p->family == 4) {
		struct fg_rt_key4 k = { .prefixlen = 32, .addr = p->saddr[0] };

		list = fg_rt_walk(&fg_rt4, &k, now, &e);
	} else {
		struct fg_rt_key6 k = { .prefixlen = 128 };

		__builtin_memcpy(k.addr, p->saddr, 16);
		list = fg_rt_walk(&fg_rt6, &k, now, &e);
	}
	*ev |= e;
	return list;
}

/* Runtime lists first (they are the incident-time decision); a deny in
 * shadow is counted and passed, like the file's. 1 when they decided. */
static __always_inline int fg_rt_decide(const struct fg_pkt *p, int shadow, struct fg_verd *v,
					__u64 now)
{
	__u32 ev = 0, list = fg_rt_lookup(p, now, &ev);

	v->ev |= ev;
	if (list == FG_LIST_ALLOW) {
		v->out = FG_OUT_RT_ALLOW;
		return 1;
	}
	if (list == FG_LIST_DENY) {
		v->out = FG_OUT_RT_DENY;
		if (!shadow)
			v->verdict = XDP_DROP;
		return 1;
	}
	return 0;
}

/*
 * The IPv4 lists of slot for saddr (DIR-16-8-8, struct fg_dir4): one read
 * of the /16 entry, one more per block level below it, one LPM lookup in
 * fg_pfx4 where the entry says FG_DIR4_TRIE (past the block budget,
 * floodgate.h); NULL when the slot has no table or nothing matches.
 */
static __always_inline struct fg_pfx *fg_dir4_lookup(__u32 slot, __be32 saddr)
{
	__u32 a = __builtin_bswap32(saddr), e, b;
	struct fg_dir4 *dir = bpf_map_lookup_elem(&fg_dir4, &slot);
	struct fg_blk4 *blk;
	void *inner;

	if (!dir)
		return NULL;
	e = dir->e[a >> 16];
	if (e & FG_DIR4_BLK) {
		inner = bpf_map_lookup_elem(&fg_blk4, &slot);
		if (!inner)
			return NULL;
		b = e & ~FG_DIR4_BLK;
		blk = bpf_map_lookup_elem(inner, &b);
		if (!blk)
			return NULL;
		e = blk->e[(a >> 8) & 0xff];
		if (e & FG_DIR4_BLK) {
			b = e & ~FG_DIR4_BLK;
			blk = bpf_map_lookup_elem(inner, &b);
			if (!blk)
				return NULL;
			e = blk->e[a & 0xff];
		}
	}
	if (e & FG_DIR4_TRIE) {
		struct fg_lpm4 key = { .prefixlen = 64, .slot = slot, .addr = saddr };

		return bpf_map_lookup_elem(&fg_pfx4, &key);
	}
	return &dir->leaf[e & (FG_DIR4_LEAVES - 1)];
}

#endif /* FG_LIB_LISTS_BPF_H */
