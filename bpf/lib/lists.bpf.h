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
static __always_inline __u32 fg_rt_walk(void *map, void *key, __u32 base, __u64 now, __u32 *ev)
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
		/* base: the key's bits before the address (a scoped key's rule id) */
		if (!e->plen || e->plen + base > *plen)
			break;
		*plen = base + e->plen - 1;
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

		list = fg_rt_walk(&fg_rt4, &k, 0, now, &e);
	} else {
		struct fg_rt_key6 k = { .prefixlen = 128 };

		__builtin_memcpy(k.addr, p->saddr, 16);
		list = fg_rt_walk(&fg_rt6, &k, 0, now, &e);
	}
	*ev |= e;
	return list;
}

/* Scoped runtime deny entries, keyed by (rule id, prefix) (struct
 * fg_rts_key4): written as fg_rt4 is, read after a rule matched. */
FG_MAP(fg_rts4, BPF_MAP_TYPE_LPM_TRIE, FG_RT_MAX, BPF_F_NO_PREALLOC, struct fg_rts_key4,
       struct fg_rt);

/* Same for IPv6. */
FG_MAP(fg_rts6, BPF_MAP_TYPE_LPM_TRIE, FG_RT_MAX, BPF_F_NO_PREALLOC, struct fg_rts_key6,
       struct fg_rt);

/* The list of the scoped entry for rule id covering the source (FG_LIST_DENY),
 * or FG_LIST_NONE; its own global function, checked once. It reads the
 * clock itself: read in the caller, its value took a slot of fg_decide's
 * frame, which shares the verifier's 512 B with fg_charge_at's. */
__noinline __u32 fg_rt_scoped(const struct fg_pkt *p, __u32 id, __u32 *ev)
{
	__u32 e = 0, list;
	__u64 now;

	if (!p || !ev)
		return FG_LIST_NONE;
	now = fg_now_ns();
	if (p->family == 4) {
		struct fg_rts_key4 k = { .prefixlen = FG_RTS_ID_BITS + 32,
					 .id = id,
					 .addr = p->saddr[0] };

		list = fg_rt_walk(&fg_rts4, &k, FG_RTS_ID_BITS, now, &e);
	} else {
		struct fg_rts_key6 k = { .prefixlen = FG_RTS_ID_BITS + 128, .id = id };

		__builtin_memcpy(k.addr, p->saddr, 16);
		list = fg_rt_walk(&fg_rts6, &k, FG_RTS_ID_BITS, now, &e);
	}
	*ev |= e;
	return list;
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

/* The policy's lists (and source sets) for p in slot, or NULL: IPv4 by
 * DIR-16-8-8 (or the trie alone, a benchmark's rodata), IPv6 by LPM; no
 * lookup for a family the policy lists nothing of. */
static __always_inline struct fg_pfx *fg_list_lookup(const struct fg_policy *pol, __u32 slot,
						     const struct fg_pkt *p)
{
	if (fg_skip & FG_SKIP_LISTS) {
		return NULL;
	} else if (p->family == 4 && (pol->lists & 1) && fg_trie4) {
		struct fg_lpm4 key = { .prefixlen = 64, .slot = slot, .addr = p->saddr[0] };

		return bpf_map_lookup_elem(&fg_pfx4, &key);
	} else if (p->family == 4 && (pol->lists & 1)) {
		return fg_dir4_lookup(slot, p->saddr[0]);
	} else if (p->family == 6 && (pol->lists & 2)) {
		struct fg_lpm6 key = { .prefixlen = 160, .slot = slot };

		__builtin_memcpy(key.addr, p->saddr, 16);
		return bpf_map_lookup_elem(&fg_pfx6, &key);
	}
	return NULL;
}

#endif /* FG_LIB_LISTS_BPF_H */
