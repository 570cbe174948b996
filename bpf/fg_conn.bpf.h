/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Concurrency caps, BPF side: the two maps a capped SYN reads and the two
 * operations on them, for the XDP program (include this after vmlinux.h
 * and bpf_helpers.h) and for bpf/fgconn.bpf.c, which fills them.
 *
 *   fg_conn_at_cap(k, hsid, cap, now)        read only: 1 if a new SYN of
 *                                            this source must be refused
 *   fg_conn_admit(k, hsid, cap, now, ttl)    the same decision, and under
 *                                            the cap one CAS claims a
 *                                            pending slot for the handshake
 *   fg_conn_find + fg_conn_admit_at          the same in two steps, so that
 *                                            a source over its count is
 *                                            refused before any clock read
 *
 * k: the rule's key (fg_conn_key_make), hsid: fg_conn_hsid(saddr, sport),
 * now: CLOCK_MONOTONIC ns (either ktime helper), ttl: how long an admitted
 * handshake holds its place unless it completes or its SYN is retransmitted.
 * Whoever includes this gets its own fgc_count / fgc_pend definitions; the
 * daemon makes them the counting program's maps (bpf_map__reuse_fd, or the
 * pins), see docs/concurrency.md.
 */
#ifndef FG_CONN_BPF_H
#define FG_CONN_BPF_H

#include "fg_conn.h"
#include "fg_common.bpf.h"

#define FG_CONN_CAS 8 /* compare-and-swap attempts per claim */
/* The maps' size before userspace sets it (or shares them: the XDP
 * program's own copies are placeholders, see bpf/floodgate.bpf.c). */
#ifndef FG_CONN_MAP_ENTRIES
#define FG_CONN_MAP_ENTRIES 65536
#endif
#define FG_CONN_EEXIST 17

/* Established counts and their handshakes' pending slots, per key. Created
 * only by bpf/fgconn.bpf.c when a handshake completes (or a reconcile finds
 * a socket), never by a SYN, so spoofed sources cannot fill it; entries at
 * zero are deleted by the reconcile. Sized by userspace. */
FG_MAP(fgc_count, BPF_MAP_TYPE_HASH, FG_CONN_MAP_ENTRIES, 0, struct fg_conn_key,
       struct fg_conn_val);

/* Pending slots of keys that have no fgc_count entry yet (a source's first
 * handshakes), created by XDP. LRU: what a spoofed flood evicts is a
 * pending place, given back early; never an established count. */
FG_MAP(fgc_pend, BPF_MAP_TYPE_LRU_HASH, FG_CONN_MAP_ENTRIES, 0, struct fg_conn_key,
       struct fg_conn_val);

/* The key of a source under a rule: its address masked as the rule groups
 * sources. family 4: saddr[0] only. */
static __always_inline void fg_conn_key_make(struct fg_conn_key *k, int family,
					     const __be32 saddr[4], __be32 mask4,
					     const __be32 mask6[4], __u16 rule, __u16 gen)
{
	__builtin_memset(k, 0, sizeof(*k));
	fg_mask_src(k->addr, family, saddr, mask4, mask6);
	k->rule = rule;
	k->gen = gen;
	k->family = family;
}

/*
 * One pass over a slot array at now_tu: a live slot of handshake hsid
 * gives FG_CONN_SCAN_RETX | its index; else the live slots' number << 8
 * | the lowest slot not live (0xff: none). A global function (and the
 * claim loop below another), so the verifier checks each loop once and
 * not once per retry or per path of the XDP program.
 */
#define FG_CONN_SCAN_RETX 0x10000
__noinline int fg_conn_scan(const struct fg_conn_val *s, __u32 hsid, __u32 now_tu)
{
	int i, live = 0, fr = 0xff;

	if (!s)
		return 0xff;
	for (i = 0; i < FG_CONN_SLOTS; i++) {
		__u64 w = *(volatile const __u64 *)&s->slot[i];

		if (fg_conn_slot_live(w, now_tu)) {
			if ((__u32)w == hsid)
				return FG_CONN_SCAN_RETX | i;
			live++;
		} else if (fr == 0xff) {
			fr = i;
		}
	}
	return (live << 8) | fr;
}

/*
 * The decision on one slot array and, unless exp_tu == now_tu (read only),
 * the CAS. est: the key's established count; tw: exp_tu << 32 | now_tu
 * (five arguments is the most a BPF function takes).
 *
 * Exact across CPUs: every claimer takes the lowest free slot of what it
 * read, so two CPUs that read the same slots compete for the same word
 * and the loser reads again; they can only pick different slots if one
 * saw a slot free that the other saw taken, and a slot only frees by
 * expiring or completing (then est has grown first), which takes a place
 * away as it gives one. The CAS expects the word the claimer re-read and
 * found not live, so a slot taken meanwhile is never overwritten. A
 * retransmitted SYN (same hsid, still live) is not counted again; it
 * renews its slot's expiry if the CAS allows.
 */
__noinline int fg_conn_claim(struct fg_conn_val *s, __s64 est, __u32 hsid, __u32 cap, __u64 tw)
{
	__u32 now_tu = (__u32)tw, exp_tu = (__u32)(tw >> 32);
	__u64 nw = ((__u64)exp_tu << 32) | hsid, w;
	int claim = exp_tu != now_tu, t, r, i;

	if (!s)
		return FG_CONN_NOMEM;
	for (t = 0; t < FG_CONN_CAS; t++) {
		r = fg_conn_scan(s, hsid, now_tu);
		i = r & 0xff;
		if (r & FG_CONN_SCAN_RETX) {
			if (claim && i < FG_CONN_SLOTS) {
				w = s->slot[i];
				if ((__u32)w == hsid)
					__sync_val_compare_and_swap(&s->slot[i], w, nw);
			}
			return FG_CONN_RETX;
		}
		if (est + ((r >> 8) & 0xff) >= (__s64)cap)
			return FG_CONN_AT_CAP;
		if (i >= FG_CONN_SLOTS)
			return FG_CONN_NOSLOT;
		if (!claim)
			return FG_CONN_ADMIT;
		w = *(volatile __u64 *)&s->slot[i];
		if (!fg_conn_slot_live(w, now_tu) &&
		    __sync_val_compare_and_swap(&s->slot[i], w, nw) == w)
			return FG_CONN_ADMIT;
	}
	return FG_CONN_CONTENDED;
}

/* The key's record: its fgc_count entry, else its fgc_pend entry, else
 * NULL; *est gets the established count. One lookup for a source that
 * holds connections. */
static __always_inline struct fg_conn_val *fg_conn_find(const struct fg_conn_key *k, __s64 *est)
{
	struct fg_conn_val *v = bpf_map_lookup_elem(&fgc_count, k);

	if (v) {
		*est = fg_conn_est_total(v->est);
		return v;
	}
	*est = 0;
	return bpf_map_lookup_elem(&fgc_pend, k);
}

/* Read only: is a new handshake of this source over its cap? A retransmit
 * of a handshake already pending is not (it holds its place already). */
static __always_inline int fg_conn_at_cap(const struct fg_conn_key *k, __u32 hsid, __u32 cap,
					  __u64 now_ns)
{
	__u32 now_tu = fg_conn_tu(now_ns);
	__s64 est;
	struct fg_conn_val *v = fg_conn_find(k, &est);

	if (est >= (__s64)cap)
		return 1;
	if (!v)
		return cap == 0;
	return fg_conn_claim(v, est, hsid, cap, ((__u64)now_tu << 32) | now_tu) == FG_CONN_AT_CAP;
}

/* The SYN-admission write on a record fg_conn_find returned (v, est):
 * decide and claim. FG_CONN_AT_CAP writes nothing; a key without any
 * record gets an fgc_pend entry holding this handshake (created with
 * BPF_NOEXIST: a racing CPU's entry is used). A caller that finds
 * est >= cap itself refuses without reading the clock (bpf/floodgate.bpf.c). */
static __always_inline int fg_conn_admit_at(const struct fg_conn_key *k, struct fg_conn_val *v,
					    __s64 est, __u32 hsid, __u32 cap, __u64 now_ns,
					    __u64 ttl_ns)
{
	__u32 now_tu = fg_conn_tu(now_ns), exp_tu = fg_conn_tu(now_ns + ttl_ns);
	long err;

	if (est >= (__s64)cap)
		return FG_CONN_AT_CAP;
	if (exp_tu == now_tu)
		exp_tu++;
	if (!v) {
		struct fg_conn_val fresh = {};

		if (cap == 0)
			return FG_CONN_AT_CAP;
		fresh.slot[0] = ((__u64)exp_tu << 32) | hsid;
		err = bpf_map_update_elem(&fgc_pend, k, &fresh, BPF_NOEXIST);
		if (!err)
			return FG_CONN_ADMIT;
		if (err != -FG_CONN_EEXIST)
			return FG_CONN_NOMEM;
		v = bpf_map_lookup_elem(&fgc_pend, k);
		if (!v)
			return FG_CONN_NOMEM;
	}
	return fg_conn_claim(v, est, hsid, cap, ((__u64)exp_tu << 32) | now_tu);
}

/* The same, looking the key up. */
static __always_inline int fg_conn_admit(const struct fg_conn_key *k, __u32 hsid, __u32 cap,
					 __u64 now_ns, __u64 ttl_ns)
{
	__s64 est;
	struct fg_conn_val *v = fg_conn_find(k, &est);

	return fg_conn_admit_at(k, v, est, hsid, cap, now_ns, ttl_ns);
}

#endif /* FG_CONN_BPF_H */
