/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * SYN authentication (include/floodgate.h, "SYN authentication";
 * docs/syn-auth.md): the cookie, the verified tables, the reflector cap,
 * the SYN-ACK, the ACK pre-search and the approval the tc half reads.
 * Every step is a global function, verified once and on its own stack:
 * the main frame keeps only a struct fg_sameta (20 bytes).
 */
#ifndef FG_LIB_SYNAUTH_BPF_H
#define FG_LIB_SYNAUTH_BPF_H

/*
 * Load-time: 1 = SYN authentication is in the program. 0 (the default):
 * the verifier removes every syn_auth step as dead code, and the program
 * is what it was without it. Set by the loader when the policy can use
 * syn_auth. With it the verifier walks 372k instructions on 6.18 and 683k
 * on Debian 12's 6.1 (bpf/budget, the floodgate+sa lines), against 311k
 * and 642k without; its 1M limit is then 32% away on 6.1.
 */
const volatile __u32 fg_sa_on = 0;

/* The secret and the verified tables' sizes (struct fg_sakey): daemon only. */
FG_MAP(fg_sakey, BPF_MAP_TYPE_ARRAY, 1, 0, __u32, struct fg_sakey);

/* Verified sources, IPv4 (struct fg_vset4): written here on proof only;
 * 1 << fg_sakey.ver4_bits sets, sized by userspace from max_verified. */
FG_MAP(fg_ver4, BPF_MAP_TYPE_ARRAY, 1 << 10, BPF_F_MMAPABLE, __u32, struct fg_vset4);

/* Verified sources, IPv6 (struct fg_vset6): as fg_ver4. */
FG_MAP(fg_ver6, BPF_MAP_TYPE_ARRAY, 1 << 10, BPF_F_MMAPABLE, __u32, struct fg_vset6);

/* The reflector cap's buckets ([0] global, [1 + h] per destination prefix). */
FG_MAP(fg_sacap, BPF_MAP_TYPE_ARRAY, FG_SA_CAP_N, 0, __u32, struct fg_agg);

/* Handshakes charged, by 4-tuple (struct fg_sadup_key -> ns): filled here on a charge only. */
FG_MAP(fg_sadup, BPF_MAP_TYPE_LRU_HASH, FG_SA_DUP_N, 0, struct fg_sadup_key, __u64);

/* First-connect delay histograms, per CPU (struct fg_sadly); read by the daemon. */
FG_MAP(fg_sadly, BPF_MAP_TYPE_PERCPU_ARRAY, 1, 0, __u32, struct fg_sadly);

/* What a syn_auth step tells fg_decide. */
enum fg_sa_rc {
	FG_SA_GO_ON = 0, /* as without syn_auth: the rule search (ACK) or the charge (SYN) */
	FG_SA_ANSWERED,	 /* SYN: the frame is now a SYN-ACK, XDP_TX */
	FG_SA_CAPPED,	 /* SYN: the reply cap refused: drop */
	FG_SA_CHARGE,	 /* ACK: a valid cookie, first seen: charge the rule as its SYN */
	FG_SA_DUP,	 /* ACK: a valid cookie of a handshake charged already: pass, approved */
	FG_SA_BAD,	 /* ACK/RST: unverified source, no cookie, no socket: drop */
	FG_SA_PROOF,	 /* retransmit way: an RST returning its cookie: consumed */
};

#define FG_TCP_STATE_TIME_WAIT	  6
#define FG_TCP_STATE_NEW_SYN_RECV 12

/* The TCP segment as syn_auth reads it: offsets, not pointers (each step
 * re-derives its pointers from ctx). */
struct fg_sa_tcp {
	__u32 saddr[4], daddr[4]; /* network order; IPv4 in [0] */
	__u32 ports;		  /* sport | dport << 16, as loaded */
	__u32 seq, ack;		  /* host order */
	__u32 tsval, tsecr;	  /* host order, when ts */
	__u16 l3, l4;		  /* offsets of the IP and TCP headers */
	__u16 mss;		  /* the SYN's MSS option, 0 = none */
	__u8 family, ihl5;	  /* 4 or 6; IPv4 header without options */
	__u8 flags, doff;	  /* TCP flags; header length in bytes */
	__u8 ws, sack, ts, pad;	  /* ws 0xff = none */
};

/* The MSS of a cookie's index (FG_SA_MSS_V4 / _V6): a computation, not a
 * table (two static const tables in .rodata made the kernel refuse the
 * object's BTF: their DATASEC offsets came out equal). */
static __always_inline __u32 fg_sa_mss(__u32 family, __u32 idx)
{
	const __u64 v4 = 536ull | 1300ull << 16 | 1440ull << 32 | 1460ull << 48;
	const __u64 v6 = 1220ull | 1280ull << 16 | 1420ull << 32 | 1440ull << 48;

	return (__u32)(((family == 4 ? v4 : v6) >> ((idx & 3) * 16)) & 0xffff);
}

/* The clock of syn_auth: exact (the delays are measured in us), the test clock in tests. */
static __always_inline __u64 fg_sa_now(void)
{
	if (fg_clock == FG_CLOCK_TEST)
		return fake_now;
	return bpf_ktime_get_ns();
}

struct fg_sa_vw {
	__u64 key;   /* IPv4: the address; IPv6: the digest */
	__u32 idx;   /* its set */
	__s32 way;   /* -1: not found */
	__u32 until; /* FG_VT, of the way found */
	__u32 ok;    /* the set exists (a claim may take a way) */
};

/* Per-CPU scratch for the steps below (an XDP run is not preempted):
 * their state lives here rather than on a stack, whose frames the main
 * program's chain of calls adds up (512 bytes in all). Never pinned,
 * never read by userspace. */
struct fg_sascr {
	struct fg_sa_tcp t;
	struct fg_sa_vw w;
	struct fg_sadup_key dk;
	struct fg_sameta m;	     /* fg_sa_ack's approval, for fg_sa_approve */
	__u32 pending;		     /* fg_sa_ack said FG_SA_CHARGE: fg_sa_after approves a pass */
	__u32 cl, cl_until, cl_retx; /* a claim for fg_sa_commit: (t, w) verified until */
	__u64 cl_now;
	__u32 hw[5], iw[5];	/* fg_sa_write's TCP and IPv4 header words */
	__u32 wseq, wack, wtsv; /* the SYN-ACK fg_sa_syn decided: seq, ack, TSval */
	struct bpf_sock_tuple tu;
	__u32 oc;     /* fg_sa_parse's index into opt */
	__u8 opt[64]; /* fg_sa_parse's copy of the TCP options (40 used; 64: see there) */
};
FG_MAP(fg_sascr, BPF_MAP_TYPE_PERCPU_ARRAY, 1, 0, __u32, struct fg_sascr);

/* One store that clang keeps (the counterpart of FG_READ_ONCE). */
#define FG_SA_STORE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))

static __always_inline __u32 fg_sa_get32(const __u8 *c)
{
	return (__u32)c[0] << 24 | (__u32)c[1] << 16 | (__u32)c[2] << 8 | c[3];
}

/*
 * Parse the frame for syn_auth: Ethernet, up to FG_MAX_VLAN tags, IPv4 or
 * IPv6 (TCP right after the fixed header), TCP and its options. 0, or -1
 * when it is not such a segment (then syn_auth leaves it alone, counted).
 */
__noinline int fg_sa_parse(struct xdp_md *ctx, struct fg_sa_tcp *t, __u32 opts)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u8 *c = data;
	__u32 off = 14, ihl, i;
	__u16 proto;

	if (!fg_sa_on) /* 6.1 verifies every global function: dead code here */
		return -1;

	if (!t)
		return -1;
	if ((void *)(c + 14) > end)
		return -1;
	proto = (__u16)c[12] << 8 | c[13];
#pragma unroll
	for (i = 0; i < FG_MAX_VLAN; i++) {
		if (proto != FG_ETH_P_8021Q && proto != FG_ETH_P_8021AD)
			break;
		if ((void *)(c + off + 4) > end)
			return -1;
		proto = (__u16)c[off + 2] << 8 | c[off + 3];
		off += 4;
	}
	t->l3 = off;
	if (proto == FG_ETH_P_IP) {
		if ((void *)(c + off + 20) > end)
			return -1;
		if (c[off + 9] != FG_IPPROTO_TCP || (c[off + 6] & 0x3f) || c[off + 7])
			return -1; /* a fragment */
		ihl = (c[off] & 0xf) * 4;
		if (ihl < 20)
			return -1;
		t->family = 4;
		t->ihl5 = ihl == 20;
		__builtin_memset(t->saddr, 0, sizeof(t->saddr) + sizeof(t->daddr));
		__builtin_memcpy(&t->saddr[0], c + off + 12, 4);
		__builtin_memcpy(&t->daddr[0], c + off + 16, 4);
		off += ihl;
	} else if (proto == FG_ETH_P_IPV6) {
		if ((void *)(c + off + 40) > end)
			return -1;
		if (c[off + 6] != FG_IPPROTO_TCP)
			return -1; /* extension headers: not answered */
		t->family = 6;
		t->ihl5 = 1;
		__builtin_memcpy(t->saddr, c + off + 8, 16);
		__builtin_memcpy(t->daddr, c + off + 24, 16);
		off += 40;
	} else {
		return -1;
	}
	if (off > 128 || (void *)(c + off + 20) > end)
		return -1;
	t->l4 = off;
	c += off;
	__builtin_memcpy(&t->ports, c, 4);
	t->seq = fg_sa_get32(c + 4);
	t->ack = fg_sa_get32(c + 8);
	t->doff = (c[12] >> 4) * 4;
	t->flags = c[13];
	t->mss = 0;
	t->ws = 0xff;
	t->sack = t->ts = 0;
	t->tsval = t->tsecr = 0;
	if (t->doff < 20 || (void *)(c + t->doff) > end)
		return -1;
	if (!opts)
		return 0; /* the fast path needs the addresses only */
	/* options: at most 40 bytes, copied out, then a kind (and length)
	 * at a time by index. The index lives in the scratch map, read and
	 * written once a step: the verifier then knows nothing of it at
	 * the loop's head, and the paths of one step meet there as one
	 * state (kept in a register, every kind and length of every step
	 * made it walk 262k instructions on 6.18, past 6.1's limit) */
	{
		__u32 n = t->doff - 20, o, kk = 0;
		struct fg_sascr *x = bpf_map_lookup_elem(&fg_sascr, &kk);
		__u8 *buf;

		if (n > 40 || !x)
			return -1;
		buf = x->opt;
		/* the size as 6.1's verifier can bound it at the call whatever
		 * clang does with the tests above: 1..64 (n itself when n is
		 * 1..40), into a 64-byte buffer */
		if (n && bpf_xdp_load_bytes(ctx, t->l4 + 20, buf, ((n - 1) & 63) + 1))
			return -1;
		FG_SA_STORE(x->oc, 0);
		for (i = 0; i < 40; i++) {
			__u8 kind, len;

			o = FG_READ_ONCE(x->oc);
			if (o >= n || o >= 40)
				break;
			kind = buf[o];
			if (kind == 0)
				break;
			if (kind == 1) {
				FG_SA_STORE(x->oc, o + 1);
				continue;
			}
			if (o + 1 >= n || o + 1 >= 40)
				break;
			len = buf[o + 1];
			if (len < 2 || o + len > n)
				break;
			if (kind == 2 && len == 4 && o + 3 < 40)
				t->mss = (__u16)buf[o + 2] << 8 | buf[o + 3];
			else if (kind == 3 && len == 3 && o + 2 < 40)
				t->ws = buf[o + 2] > 14 ? 14 : buf[o + 2];
			else if (kind == 4 && len == 2)
				t->sack = 1;
			else if (kind == 8 && len == 10 && o + 9 < 40) {
				t->ts = 1;
				t->tsval = (__u32)buf[o + 2] << 24 | (__u32)buf[o + 3] << 16 |
					   (__u32)buf[o + 4] << 8 | buf[o + 5];
				t->tsecr = (__u32)buf[o + 6] << 24 | (__u32)buf[o + 7] << 16 |
					   (__u32)buf[o + 8] << 8 | buf[o + 9];
			}
			FG_SA_STORE(x->oc, o + len);
		}
	}
	return 0;
}

/* The entry that serves the key epoch of slot (struct fg_sakey); it
 * holds that epoch's key only if fg_sa_keyok. (Not a pointer-or-NULL:
 * clang merged that test into a form the verifier could not follow.) */
static __always_inline const struct fg_sakey_ent *fg_sa_key(const struct fg_sakey *k, __u64 slot)
{
	return &k->key[FG_SA_EPOCH(slot) & 1];
}

static __always_inline int fg_sa_keyok(const struct fg_sakey_ent *ent, __u64 slot)
{
	return FG_READ_ONCE(ent->epoch) == FG_SA_EPOCH(slot) + 1;
}

static __always_inline __u64 fg_sa_hash_of(const struct fg_sakey_ent *ent,
					   const struct fg_sa_tcp *t, __u32 isn, __u64 slot)
{
	return fg_sa_hash(ent->k[0], ent->k[1], t->saddr, t->daddr, t->ports, isn, slot);
}

/*
 * The verified tables. fg_sa_ver finds t's source: returns its way (0..7)
 * and sets *vs to its set, or -1 (with *vs set when the set exists, for a
 * claim). live: only a way whose proof still holds.
 */

__noinline int fg_sa_ver(const struct fg_sakey *k, const struct fg_sa_tcp *t, struct fg_sa_vw *w)
{
	__u32 idx, i, bits;

	if (!fg_sa_on) /* 6.1 verifies every global function: dead code here */
		return -1;

	if (!k || !t || !w)
		return -1;
	w->way = -1;
	w->ok = 0;
	if (t->family == 4) {
		struct fg_vset4 *s;

		bits = FG_READ_ONCE(k->ver4_bits);
		if (bits < FG_VER_MIN_BITS || bits > FG_VER_MAX_BITS)
			return -1;
		w->key = t->saddr[0];
		idx = fg_hash4(w->key, k->seed[0], bits);
		s = bpf_map_lookup_elem(&fg_ver4, &idx);
		if (!s)
			return -1;
		w->idx = idx;
		w->ok = 1;
#pragma unroll
		for (i = 0; i < FG_VWAYS; i++) {
			__u64 x = FG_READ_ONCE(s->key[i]);

			if ((__u32)x == (__u32)w->key && x) {
				w->way = i;
				w->until = x >> 32;
				return i;
			}
		}
		return -1;
	} else {
		struct fg_vset6 *s;

		bits = FG_READ_ONCE(k->ver6_bits);
		if (bits < FG_VER_MIN_BITS || bits > FG_VER_MAX_BITS)
			return -1;
		w->key = fg_digest6(t->saddr, 0, 0, k->seed[0], k->seed[1]);
		idx = fg_set6_of(w->key, bits);
		s = bpf_map_lookup_elem(&fg_ver6, &idx);
		if (!s)
			return -1;
		w->idx = idx;
		w->ok = 1;
#pragma unroll
		for (i = 0; i < FG_VWAYS; i++) {
			if (FG_READ_ONCE(s->key[i]) == w->key) {
				w->way = i;
				w->until = FG_READ_ONCE(s->until[i]);
				return i;
			}
		}
		return -1;
	}
}

/* A source that holds a live proof at now (FG_VT). */
static __always_inline int fg_sa_live(const struct fg_sa_vw *w, __u32 vt)
{
	return w->way >= 0 && w->until > vt;
}

/*
 * Mark t's source verified until until (FG_VT), found or not by w (from
 * fg_sa_ver). A way is taken only if it is the source's, empty, expired,
 * or, with none of those, the one whose proof ends first: written on
 * proof only, so only proven sources compete. retx: its first connection
 * is still to pass (the retransmit way's delay). 0, or -1 (counted by the
 * caller as syn_auth_fail: contention).
 */
__noinline int fg_sa_claim(const struct fg_sa_tcp *t, struct fg_sa_vw *w, __u32 until, __u64 now,
			   __u32 retx)
{
	__u32 vt = FG_VT(now), ms = FG_VMS(now);
	__u32 i, best = 0, bu = 0xffffffff, since = (ms & ~1u) | (retx & 1);

	if (!fg_sa_on) /* 6.1 verifies every global function: dead code here */
		return -1;

	if (!t || !w || !w->ok)
		return -1;
	if (t->family == 4) {
		__u32 idx = w->idx; /* a key on the stack: 6.1 takes no other */
		struct fg_vset4 *s = bpf_map_lookup_elem(&fg_ver4, &idx);
		__u64 nk = (__u32)w->key | (__u64)until << 32, old;

		if (!s)
			return -1;
		if (w->way >= 0) {
			best = w->way & (FG_VWAYS - 1);
		} else {
#pragma unroll
			for (i = 0; i < FG_VWAYS; i++) {
				__u64 x = FG_READ_ONCE(s->key[i]);
				__u32 u = x >> 32;

				if (!x || u <= vt) {
					best = i;
					break;
				}
				if (u < bu) {
					bu = u;
					best = i;
				}
			}
		}
		old = FG_READ_ONCE(s->key[best]);
		if (__sync_val_compare_and_swap(&s->key[best], old, nk) != old)
			return -1;
		s->since[best] = since;
		/* a handshake answered before this proof may still be coming:
		 * its ACK must be checked, not waved through */
		s->synack[best] = ms | 1;
		return 0;
	} else {
		__u32 idx = w->idx;
		struct fg_vset6 *s = bpf_map_lookup_elem(&fg_ver6, &idx);
		__u64 old;

		if (!s)
			return -1;
		if (w->way >= 0) {
			best = w->way & (FG_VWAYS - 1);
			s->until[best] = until;
			s->since[best] = since;
			s->synack[best] = ms | 1;
			return 0;
		}
#pragma unroll
		for (i = 0; i < FG_VWAYS; i++) {
			__u64 x = FG_READ_ONCE(s->key[i]);
			__u32 u = FG_READ_ONCE(s->until[i]);

			if (!x || u <= vt) {
				best = i;
				break;
			}
			if (u < bu) {
				bu = u;
				best = i;
			}
		}
		old = FG_READ_ONCE(s->key[best]);
		if (__sync_val_compare_and_swap(&s->key[best], old, w->key) != old)
			return -1;
		s->until[best] = until;
		s->since[best] = since;
		s->synack[best] = ms | 1;
		__builtin_memcpy(s->who[best], t->saddr, 16);
		return 0;
	}
}

static __always_inline void fg_sa_toclaim(struct fg_sascr *x, __u32 until, __u64 now, __u32 retx)
{
	x->cl = 1;
	x->cl_until = until;
	x->cl_now = now;
	x->cl_retx = retx;
}

/* The synack (which 0) or since (1) word of a found way, or NULL. */
static __always_inline __u32 *fg_sa_word(const struct fg_sa_vw *w, __u32 fam, __u32 which)
{
	__u32 i = w->way & (FG_VWAYS - 1), idx = w->idx;

	if (fam == 4) {
		struct fg_vset4 *s = bpf_map_lookup_elem(&fg_ver4, &idx);

		if (!s)
			return NULL;
		return which ? &s->since[i] : &s->synack[i];
	} else {
		struct fg_vset6 *s = bpf_map_lookup_elem(&fg_ver6, &idx);

		if (!s)
			return NULL;
		return which ? &s->since[i] : &s->synack[i];
	}
}

/* One first-connect delay in us, into the histogram of way (0 handoff, 1 retransmit). */
static __always_inline void fg_sa_delay(__u32 way, __u64 us)
{
	struct fg_sadly *d;
	__u32 k = 0, b;

	d = bpf_map_lookup_elem(&fg_sadly, &k);
	if (!d)
		return;
	for (b = 0; b < FG_SA_HIST - 1; b++)
		if (!(us >> (b + 1)))
			break;
	if (way) {
		d->retransmit[b & (FG_SA_HIST - 1)]++;
		d->sum_us[1] += us;
	} else {
		d->handoff[b & (FG_SA_HIST - 1)]++;
		d->sum_us[0] += us;
	}
}

/* The reflector cap for a SYN-ACK to t's source: 1 admitted. */
__noinline int fg_sa_cap(const struct fg_synauth *sa, const struct fg_sakey *k,
			 const struct fg_sa_tcp *t, __u64 now)
{
	__u64 tu = now << FG_TU_SHIFT, key;
	struct fg_agg *b;
	__u32 idx = 0;

	if (!fg_sa_on) /* 6.1 verifies every global function: dead code here */
		return 0;

	if (!sa || !k || !t)
		return 0;
	b = bpf_map_lookup_elem(&fg_sacap, &idx);
	if (!b || fg_gcra_spend(&b->b.tat, tu, sa->reply.inc, sa->reply.tau) != 1)
		return 0;
	if (!sa->reply_pfx.inc)
		return 1;
	if (t->family == 4)
		key = t->saddr[0] & sa->pfx_mask4;
	else
		key = ((__u64)(t->saddr[0] & sa->pfx_mask6[0]) |
		       (__u64)(t->saddr[1] & sa->pfx_mask6[1]) << 32) ^
		      fg_mix4((__u64)(t->saddr[2] & sa->pfx_mask6[2]) |
				      (__u64)(t->saddr[3] & sa->pfx_mask6[3]) << 32,
			      k->seed[0]);
	idx = 1 + (__u32)(fg_mix4(key, k->seed[1]) % FG_SA_PFX_BUCKETS);
	b = bpf_map_lookup_elem(&fg_sacap, &idx);
	return b && fg_gcra_spend(&b->b.tat, tu, sa->reply_pfx.inc, sa->reply_pfx.tau) == 1;
}

/* One's complement sum of n 32-bit words as loaded, folded to 16 bits. */
static __always_inline __u32 fg_sa_fold(__u64 s)
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u32)s;
}

/*
 * Rewrite the SYN fg_sa_syn answered (scratch t), in place, into
 * floodgate's SYN-ACK and cut the frame to it: the options the SYN
 * offered (MSS, SACK, timestamps, window scale) and no others, in no more
 * bytes than the SYN's, no payload; seq, ack and TSval as fg_sa_syn put
 * them in the scratch. 0, or -1 (frame unchanged).
 */
/* The n-th option word (o[n] by branches: an index into a stack array
 * came out of clang as an OR on the frame pointer, which the verifier
 * refuses). */
#define FG_SA_PUSH(x)             \
	do {                      \
		__u32 _x = (x);   \
		if (nw == 0)      \
			o0 = _x;  \
		else if (nw == 1) \
			o1 = _x;  \
		else if (nw == 2) \
			o2 = _x;  \
		else if (nw == 3) \
			o3 = _x;  \
		else              \
			o4 = _x;  \
		nw++;             \
	} while (0)

#define FG_SA_PUT(i, x)                                             \
	do {                                                        \
		if (nw > (i)) {                                     \
			__u32 _v = (x);                             \
			if ((void *)(tcp + 24 + (i)*4) > end)       \
				return -1;                          \
			__builtin_memcpy(tcp + 20 + (i)*4, &_v, 4); \
		}                                                   \
	} while (0)

__noinline int fg_sa_write(struct xdp_md *ctx)
{
	struct fg_sascr *x;
	__u32 seq, ack, tsval, kk = 0;

	if (!fg_sa_on) /* 6.1 verifies every global function: dead code here */
		return -1;

	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u32 o0 = 0, o1 = 0, o2 = 0, o3 = 0, o4 = 0, nw = 0, i, tl, mss;
	const struct fg_sa_tcp *t;
	__u32 *hdr, l3, l4;
	__u8 *c = data, *tcp;
	__u64 sum = 0;
	__u16 mac[3];
	int delta;

	x = bpf_map_lookup_elem(&fg_sascr, &kk);
	if (!x)
		return -1;
	seq = x->wseq;
	ack = x->wack;
	tsval = x->wtsv;
	t = &x->t;
	hdr = x->hw;
	l3 = t->l3;
	l4 = t->l4;
	if (!t->ihl5 || l3 > 22 || l4 > 128)
		return -1;
	/* bounds 6.1 keeps: its verifier gives a packet pointer no range
	 * when its variable part may reach 64k, and clang reloads the
	 * offsets from the scratch after the test above */
	FG_OPAQUE(l3);
	FG_OPAQUE(l4);
	l3 &= 0x1f;
	l4 &= 0xff;
	if (t->mss) {
		mss = t->family == 4 ? 1460 : 1440;
		if (t->mss < mss)
			mss = t->mss;
		FG_SA_PUSH(bpf_htonl(2u << 24 | 4u << 16 | mss));
	}
	if (t->ts) {
		FG_SA_PUSH(bpf_htonl(t->sack ? (4u << 24 | 2u << 16 | 8u << 8 | 10u) :
					       (1u << 24 | 1u << 16 | 8u << 8 | 10u)));
		FG_SA_PUSH(bpf_htonl(tsval));
		FG_SA_PUSH(bpf_htonl(t->tsval));
	} else if (t->sack) {
		FG_SA_PUSH(bpf_htonl(1u << 24 | 1u << 16 | 4u << 8 | 2u));
	}
	if (t->ws != 0xff)
		FG_SA_PUSH(bpf_htonl(1u << 24 | 3u << 16 | 3u << 8 | FG_SA_WSCALE));
	tl = 20 + nw * 4;
	if (nw > 5 || tl > t->doff) /* never more than the SYN: cannot happen, see above */
		return -1;
	if ((void *)(c + l4 + 20) > end || (void *)(c + l3 + 20) > end)
		return -1;
	if (t->family == 6 && (void *)(c + l3 + 40) > end)
		return -1;

	/* TCP: the header words, then the options */
	tcp = c + l4;
	hdr[0] = t->ports >> 16 | t->ports << 16; /* the ports swapped */
	hdr[1] = bpf_htonl(seq);
	hdr[2] = bpf_htonl(ack);
	hdr[3] = bpf_htonl((tl / 4) << 28 | (FG_TCP_SYN | FG_TCP_ACK) << 16 | 64240);
	hdr[4] = 0; /* checksum and urgent pointer */
	if (t->family == 4) {
		sum = (__u64)t->saddr[0] + t->daddr[0];
	} else {
#pragma unroll
		for (i = 0; i < 4; i++)
			sum += (__u64)t->saddr[i] + t->daddr[i];
	}
	sum += bpf_htons(FG_IPPROTO_TCP) + bpf_htons(tl);
	sum += (__u64)hdr[0] + hdr[1] + hdr[2] + hdr[3];
	sum += (__u64)o0 + o1 + o2 + o3 + o4; /* the unused ones are 0 */
	hdr[4] = ~fg_sa_fold(sum) & 0xffff;   /* check in the first half, as stored */
	/* every bound first, so that nothing is written unless all is */
	if ((void *)(tcp + 20 + nw * 4) > end)
		return -1;
	FG_SA_PUT(0, o0);
	FG_SA_PUT(1, o1);
	FG_SA_PUT(2, o2);
	FG_SA_PUT(3, o3);
	FG_SA_PUT(4, o4);
	__builtin_memcpy(tcp, hdr, 20);

	/* IP */
	if (t->family == 4) {
		__u8 *ip = c + l3;
		__u32 *iw = x->iw;

		iw[0] = bpf_htonl(0x45u << 24 | (20 + tl));
		iw[1] = bpf_htonl(0x4000); /* id 0, DF */
		iw[2] = bpf_htonl(64u << 24 | FG_IPPROTO_TCP << 16);
		iw[3] = t->daddr[0];
		iw[4] = t->saddr[0];
		sum = (__u64)iw[0] + iw[1] + iw[2] + iw[3] + iw[4];
		iw[2] |= (~fg_sa_fold(sum) & 0xffff) << 16; /* check: bytes 10-11 */
		__builtin_memcpy(ip, iw, 20);
	} else {
		__u8 *ip = c + l3;
		__u32 v = bpf_htonl(0x60000000);

		if ((void *)(ip + 40) > end)
			return -1;
		__builtin_memcpy(ip, &v, 4);
		ip[4] = tl >> 8;
		ip[5] = tl & 0xff;
		ip[7] = 64;
		__builtin_memcpy(ip + 8, t->daddr, 16);
		__builtin_memcpy(ip + 24, t->saddr, 16);
	}

	/* Ethernet: back where it came from */
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	c = data;
	if ((void *)(c + 14) > end)
		return 0; /* not reached: the frame has its headers */
	__builtin_memcpy(mac, c, 6);
	__builtin_memcpy(c, c + 6, 6);
	__builtin_memcpy(c + 6, mac, 6);

	/* cut the rest (padding, TFO data); if that fails the IP length
	 * still ends the segment where it should */
	delta = (int)(l4 + tl) - (int)bpf_xdp_get_buff_len(ctx);
	if (delta < 0)
		bpf_xdp_adjust_tail(ctx, delta);
	return 0;
}

/* Is there a socket for t's 4-tuple? 0 none, 1 a full one (proof of the
 * address: the kernel's own handshake completed), 2 a request or
 * time-wait socket (no proof: its SYN may be forged). */
static __always_inline int fg_sa_socket(struct xdp_md *ctx, const struct fg_sa_tcp *t,
					struct bpf_sock_tuple *tu)
{
	struct bpf_sock *sk;
	__u32 sz, st;

	if (t->family == 4) {
		tu->ipv4.saddr = t->saddr[0];
		tu->ipv4.daddr = t->daddr[0];
		__builtin_memcpy(&tu->ipv4.sport, &t->ports, 4);
		sz = sizeof(tu->ipv4);
	} else {
		__builtin_memcpy(tu->ipv6.saddr, t->saddr, 16);
		__builtin_memcpy(tu->ipv6.daddr, t->daddr, 16);
		__builtin_memcpy(&tu->ipv6.sport, &t->ports, 4);
		sz = sizeof(tu->ipv6);
	}
	sk = bpf_skc_lookup_tcp(ctx, tu, sz, BPF_F_CURRENT_NETNS, 0);
	if (!sk)
		return 0;
	st = sk->state;
	bpf_sk_release(sk);
	if (st == 10) /* TCP_LISTEN: the listener, not a connection */
		return 0;
	return st == FG_TCP_STATE_NEW_SYN_RECV || st == FG_TCP_STATE_TIME_WAIT ? 2 : 1;
}

/*
 * A SYN of a syn_auth rule (not ACK), before anything is charged: answer
 * it with a cookie SYN-ACK (FG_SA_ANSWERED), refuse it at the reply cap
 * (FG_SA_CAPPED), or leave it to be charged as without syn_auth
 * (FG_SA_GO_ON): shadow (syn_auth_shadow), no secret (syn_auth_nokey),
 * a segment syn_auth cannot answer (syn_auth_fail), in the handoff way
 * a 4-tuple with a socket of its own (ack_socket), or, in the retransmit
 * way, a verified source.
 */
__noinline int fg_sa_syn(struct xdp_md *ctx, const struct fg_synauth *sa, __u32 shadow, __u32 *ev,
			 __u32 pf)
{
	struct fg_sascr *x;
	struct fg_sa_tcp *t;
	struct fg_sa_vw *w;
	const struct fg_sakey_ent *ent;
	const struct fg_sakey *k;
	__u32 kk = 0, isn, ack, idx, tsv, retx;
	__u64 now, slot, h;

	if (!fg_sa_on) /* 6.1 verifies every global function: dead code here */
		return FG_SA_GO_ON;

	if (!sa || !ev)
		return FG_SA_GO_ON;
	/* pf: the packet's protocol << 8 | its TCP flags (fg_pkt) */
	if ((pf & (0xff00 | FG_TCP_SYN | FG_TCP_ACK)) != (FG_IPPROTO_TCP << 8 | FG_TCP_SYN))
		return FG_SA_GO_ON; /* not a SYN: charged as before */
	x = bpf_map_lookup_elem(&fg_sascr, &kk);
	if (!x)
		return FG_SA_GO_ON;
	t = &x->t;
	w = &x->w;
	if (shadow) {
		*ev |= 1u << FG_EV_SA_SHADOW;
		return FG_SA_GO_ON;
	}
	k = bpf_map_lookup_elem(&fg_sakey, &kk);
	now = fg_sa_now();
	slot = FG_SA_SLOT(now);
	if (!k || !fg_sa_keyok(fg_sa_key(k, slot), slot)) {
		*ev |= 1u << FG_EV_SA_NOKEY;
		return FG_SA_GO_ON;
	}
	if (fg_sa_parse(ctx, t, 1) || !t->ihl5) {
		*ev |= 1u << FG_EV_SA_FAIL;
		return FG_SA_GO_ON;
	}
	ent = fg_sa_key(k, slot);
	retx = sa->way == FG_SA_WAY_RETRANSMIT;
	/* handoff: a 4-tuple the kernel still holds a socket for (the
	 * TIME_WAIT of an earlier connection on a reused client port, the
	 * kernel's own request, a connection) is the kernel's. Only the
	 * kernel can end a TIME_WAIT for a new SYN (tcp_timewait_state_process,
	 * TCP_TW_SYN); answered here, the SYN's ACK would meet the TIME_WAIT
	 * socket in the tc half, pass untouched and the connection be lost
	 * until the TIME_WAIT ends. Charged as without syn_auth. Only a
	 * verified source can hold one (every connection here was proven
	 * first): the random sources of a flood skip the socket lookup,
	 * which cost the responder about 3x per SYN (bench part synauth). */
	fg_sa_ver(k, t, w);
	if (!retx && fg_sa_live(w, FG_VT(now)) && fg_sa_socket(ctx, t, &x->tu)) {
		*ev |= 1u << FG_EV_SA_SOCKET;
		return FG_SA_GO_ON;
	}
	if (retx && fg_sa_live(w, FG_VT(now))) {
		__u32 *since = fg_sa_word(w, t->family, 1), s0;

		/* the first connection since the proof: its delay */
		if (since) {
			s0 = *since;
			if (s0 & 1) {
				*since = s0 & ~1u;
				fg_sa_delay(1, (__u64)(FG_VMS(now) - s0) * 1049);
			}
		}
		return FG_SA_GO_ON;
	}
	if (!fg_sa_cap(sa, k, t, now))
		return FG_SA_CAPPED;
	for (idx = 3; idx > 0; idx--)
		if (t->mss >= fg_sa_mss(t->family, idx))
			break;
	tsv = (__u32)(now >> 10) << 8;
	if (retx) {
		h = fg_sa_hash_of(ent, t, 0, slot | FG_SA_RETX_SLOT);
		ack = fg_sa_retx(h, (__u32)slot);
		isn = ack;
	} else {
		h = fg_sa_hash_of(ent, t, t->seq, slot);
		isn = fg_sa_isn(h, idx, (__u32)slot, t->sack, t->ws == 0xff ? 15 : t->ws);
		ack = t->seq + 1;
		tsv |= FG_SA_TSBITS(h);
	}
	/* fg_decide calls fg_sa_write with these: a frame of its own, not one
	 * more under this one */
	x->wseq = isn;
	x->wack = ack;
	x->wtsv = tsv;
	/* handoff: a verified source's ACKs are cookie-checked for a while */
	if (!retx && fg_sa_live(w, FG_VT(now))) {
		__u32 *sa_w = fg_sa_word(w, t->family, 0);

		if (sa_w)
			*sa_w = FG_VMS(now) | 1;
	}
	return FG_SA_ANSWERED;
}

static __always_inline void fg_sa_dupkey(struct fg_sadup_key *d, const struct fg_sa_tcp *t)
{
	__builtin_memcpy(d->saddr, t->saddr, 16);
	__builtin_memcpy(d->daddr, t->daddr, 16);
	__builtin_memcpy(&d->sport, &t->ports, 4);
	d->family = t->family;
}

/* Is d (fg_sa_dupkey's) t's 4-tuple? Word by word: clang makes a call of
 * a 36-byte memcmp, which BPF has not. */
static __always_inline int fg_sa_same(const struct fg_sadup_key *d, const struct fg_sa_tcp *t)
{
	__u32 i, diff = d->family ^ t->family;
	__u32 ports;

	__builtin_memcpy(&ports, &d->sport, 4);
	diff |= ports ^ t->ports;
#pragma unroll
	for (i = 0; i < 4; i++)
		diff |= (d->saddr[i] ^ t->saddr[i]) | (d->daddr[i] ^ t->daddr[i]);
	return !diff;
}

/*
 * A TCP segment with ACK or RST and without SYN that one of the syn_auth
 * rules' matches holds (the pre-search): does it prove its source, and
 * what then (enum fg_sa_rc)? On FG_SA_CHARGE and FG_SA_DUP, *m is the
 * approval for the tc half.
 */
__noinline int fg_sa_ack(struct xdp_md *ctx, const struct fg_synauth *sa, __u32 *ev)
{
	struct fg_sascr *x;
	struct fg_sa_tcp *t;
	struct fg_sa_vw *w;
	struct fg_sadup_key *dk;
	const struct fg_sakey_ent *ent;
	const struct fg_sakey *k;
	__u32 kk = 0, c, vt, ms, until, live, sock;
	__u64 now, slot, h;

	if (!fg_sa_on) /* 6.1 verifies every global function: dead code here */
		return FG_SA_GO_ON;

	struct fg_sameta *m;

	if (!sa || !ev)
		return FG_SA_GO_ON;
	x = bpf_map_lookup_elem(&fg_sascr, &kk);
	if (!x)
		return FG_SA_GO_ON;
	t = &x->t;
	w = &x->w;
	dk = &x->dk;
	m = &x->m;
	x->pending = 0;
	x->cl = 0;
	k = bpf_map_lookup_elem(&fg_sakey, &kk);
	if (!k || fg_sa_parse(ctx, t, 0))
		return FG_SA_GO_ON;
	now = fg_sa_now();
	vt = FG_VT(now);
	ms = FG_VMS(now);
	until = FG_VT(now + sa->verified_ns);
	fg_sa_ver(k, t, w);
	live = fg_sa_live(w, vt);

	if (sa->way == FG_SA_WAY_RETRANSMIT && (t->flags & FG_TCP_RST)) {
		/* the client's answer to the wrong ACK: seq = that ack */
		slot = fg_sa_slot_of(FG_SA_SLOT(now), t->seq & 1);
		ent = fg_sa_key(k, slot);
		if (fg_sa_keyok(ent, slot)) {
			h = fg_sa_hash_of(ent, t, 0, slot | FG_SA_RETX_SLOT);
			if (fg_sa_retx(h, (__u32)slot) == t->seq) {
				*ev |= 1u << FG_EV_SA_VALID;
				fg_sa_toclaim(x, until, now, 1);
				return FG_SA_PROOF;
			}
		}
	} else if (sa->way == FG_SA_WAY_HANDOFF && (t->flags & FG_TCP_ACK) &&
		   !(t->flags & FG_TCP_RST)) {
		/* the fast path: a verified source floodgate sent no SYN-ACK
		 * lately cannot be returning a cookie */
		__u32 *sw = live ? fg_sa_word(w, t->family, 0) : NULL;

		if (sw && (!*sw || (__s32)(ms - *sw) > (__s32)(2u << (FG_SA_SLOT_SHIFT - 20))))
			return FG_SA_GO_ON;
		if (fg_sa_parse(ctx, t, 1)) /* now the options: TSecr */
			return FG_SA_GO_ON;
		c = t->ack - 1;
		slot = fg_sa_slot_of(FG_SA_SLOT(now), (c >> 5) & 1);
		ent = fg_sa_key(k, slot);
		if (fg_sa_keyok(ent, slot)) {
			h = fg_sa_hash_of(ent, t, t->seq - 1, slot);
			if (((c ^ (__u32)(h >> 32)) & 0xffffff00u) == 0 &&
			    (!t->ts || (t->tsecr & 0xff) == FG_SA_TSBITS(h))) {
				*ev |= 1u << FG_EV_SA_VALID;
				fg_sa_toclaim(x, until, now, 0);
				m->magic = FG_SAMETA_MAGIC;
				m->ack = bpf_htonl(t->ack);
				m->tsval = t->tsval;
				m->tsecr = t->tsecr;
				m->mss = fg_sa_mss(t->family, c >> 6);
				m->snd_wscale = c & 0xf;
				m->flags = (c & 0x10 ? FG_SAMETA_SACK : 0) |
					   ((c & 0xf) != 0xf ? FG_SAMETA_WS : 0) |
					   (t->ts ? FG_SAMETA_TS : 0);
				if (m->snd_wscale == 0xf)
					m->snd_wscale = 0;
				fg_sa_dupkey(dk, t);
				if (bpf_map_lookup_elem(&fg_sadup, dk)) {
					*ev |= 1u << FG_EV_SA_DUP;
					return FG_SA_DUP;
				}
				if (t->ts)
					fg_sa_delay(0, (((__u32)(now >> 10) - (t->tsecr >> 8)) &
							0xffffff));
				x->pending = 1;
				return FG_SA_CHARGE;
			}
		}
	}
	if (live)
		return FG_SA_GO_ON;
	sock = fg_sa_socket(ctx, t, &x->tu);
	if (!sock)
		return FG_SA_BAD;
	*ev |= 1u << FG_EV_SA_SOCKET;
	if (sock == 1)
		fg_sa_toclaim(x, until, now, 0);
	return FG_SA_GO_ON;
}

/*
 * The claim fg_sa_ack asked for (fg_sa_toclaim), made by fg_decide right
 * after it: a call of its own rather than one more frame under
 * fg_sa_ack's (the main program's chain of frames is 512 bytes in all).
 * Returns the events to count.
 */
__noinline __u32 fg_sa_commit(void)
{
	struct fg_sascr *x;
	__u32 kk = 0;

	if (!fg_sa_on) /* 6.1 verifies every global function: dead code here */
		return 0;

	x = bpf_map_lookup_elem(&fg_sascr, &kk);
	if (!x || !x->cl)
		return 0;
	x->cl = 0;
	if (fg_sa_claim(&x->t, &x->w, x->cl_until, x->cl_now, x->cl_retx))
		return 1u << FG_EV_SA_FAIL;
	return 1u << FG_EV_SA_VERIFIED;
}

/*
 * A charged (or duplicate) handshake passes: remember it (charged only),
 * and put the approval in front of the frame for the tc half. 0 (also:
 * charged, but the frame is not the ACK fg_sa_ack approved, which then
 * gets nothing), or -1 (no room for metadata here: counted as
 * syn_auth_fail by the caller).
 */
__noinline int fg_sa_approve(struct xdp_md *ctx, __u32 charged)
{
	struct fg_sameta *dst;
	struct fg_sascr *x;
	__u32 kk = 0;
	__u64 now;
	void *data;

	if (!fg_sa_on) /* 6.1 verifies every global function: dead code here */
		return -1;

	x = bpf_map_lookup_elem(&fg_sascr, &kk);
	if (!x)
		return -1;
	if (charged) {
		/* the approval is this frame's: fg_sa_ack's 4-tuple (x->dk) and
		 * ack number. A mark that outlived its ACK (dropped between,
		 * by a runtime deny scoped to the rule) approves nothing else */
		if (fg_sa_parse(ctx, &x->t, 0) || !fg_sa_same(&x->dk, &x->t) ||
		    bpf_htonl(x->t.ack) != x->m.ack)
			return 0;
		now = fg_sa_now();
		bpf_map_update_elem(&fg_sadup, &x->dk, &now, BPF_ANY);
	}
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*dst)))
		return -1;
	data = (void *)(long)ctx->data;
	dst = (void *)(long)ctx->data_meta;
	if ((void *)(dst + 1) > data)
		return -1;
	__builtin_memcpy(dst, &x->m, sizeof(*dst));
	return 0;
}

/* After the charge of a limit rule's packet (pass: it is passed): a
 * proven handshake that fg_sa_ack left to the charge is approved if the
 * charge admitted it; the mark is cleared either way, so no later packet
 * inherits it. The mark lives in the scratch map, not in a register that
 * the verifier would carry through every path of the charge. 1 when the
 * approval failed (syn_auth_fail). */
__noinline int fg_sa_after(struct xdp_md *ctx, __u32 pass)
{
	struct fg_sascr *x;
	__u32 kk = 0;

	if (!fg_sa_on) /* 6.1 verifies every global function: dead code here */
		return 0;

	x = bpf_map_lookup_elem(&fg_sascr, &kk);
	if (!x || !x->pending)
		return 0;
	x->pending = 0;
	if (!pass)
		return 0;
	return fg_sa_approve(ctx, 1) ? 1 : 0;
}

/* Is an approval pending (fg_sa_ack said FG_SA_CHARGE)? Inline, so that
 * the packets without one (nearly all) skip fg_sa_after's call: with
 * SRSO's safe RET a call and its return cost ~10 ns here. The word is a
 * map value's, unknown to the verifier: its test splits no state. Asked
 * only for a segment charged as a SYN (a proven ACK is, fg_sa_as_syn): a
 * verified client's ACK skips the scratch read, about a quarter of what
 * its fast path cost over a plain rule (perf, bench part saack). A mark
 * left by a packet that never reached the charge then waits for the next
 * fg_sa_ack (which clears it) or SYN, and approves only its own ACK. */
static __always_inline int fg_sa_pending(void)
{
	__u32 kk = 0;
	struct fg_sascr *x = bpf_map_lookup_elem(&fg_sascr, &kk);

	return x && FG_READ_ONCE(x->pending);
}

/* A proven ACK is charged as the SYN it stands for. A global function,
 * so that the flags it writes are unknown to the verifier rather than a
 * constant that would split every state of the charge in two. */
__noinline int fg_sa_as_syn(struct fg_pkt *p)
{
	if (!fg_sa_on) /* 6.1 verifies every global function: dead code here */
		return 0;
	if (!p)
		return 0;
	p->tcp_flags = FG_TCP_SYN;
	return 0;
}

/* No SYN-ACK went to a source whose synack word is sw within two slots of
 * now: its ACKs cannot be returning a cookie (the test of fg_sa_ack's). */
static __always_inline int fg_sa_quiet(__u32 sw, __u64 now)
{
	return !sw || (__s32)(FG_VMS(now) - sw) > (__s32)(2u << (FG_SA_SLOT_SHIFT - 20));
}

/* fg_sa_fast's verdict on the way that holds the source: its proof still
 * holds (until, FG_VT units, past vt) and, in handoff, no SYN-ACK went to it
 * lately (its synack word, read only then). */
static __always_inline int fg_sa_holds(__u32 until, __u32 vt, __u32 way, const __u32 *synack,
				       __u64 now)
{
	if (until <= vt)
		return 0;
	if (way == FG_SA_WAY_RETRANSMIT)
		return 1;
	return fg_sa_quiet(FG_READ_ONCE(*synack), now);
}

/*
 * The verified client's fast path, first in the pre-search: a TCP segment
 * with ACK and without SYN and RST from a source whose proof holds cannot
 * be returning a cookie when floodgate sent it no SYN-ACK lately (handoff;
 * the same test as fg_sa_ack's) or in any case (retransmit: its ACKs
 * carry none). 1: such a segment, which goes to the rule search as without
 * syn_auth. Read from the main program's parse (p), the coarse clock (the
 * main program's cached read) and the verified set in place: no second
 * parse, no scratch, no precise clock. The clock it reads goes to *now,
 * fg_decide's one read, which the charge of a limit rule then reuses:
 * without that, a verified ACK read the clock twice (~10 ns of the 25
 * it cost over a rule without syn_auth, bench part saack). (A call of
 * its own from fg_decide, with or without the main program's clock,
 * changed fg_decide's code enough to raise the default load's count by
 * 0.3-1.5%; the pointer alone raises it 1.1%.)
 */
static __always_inline int fg_sa_fast(const struct fg_pkt *p, __u32 way, __u64 *now)
{
	const struct fg_sakey *k;
	__u32 kk = 0, idx, bits, i, vt;
	__u64 t, dg;

	if (p->proto != FG_IPPROTO_TCP || p->frag ||
	    (p->tcp_flags & (FG_TCP_SYN | FG_TCP_ACK | FG_TCP_RST)) != FG_TCP_ACK)
		return 0;
	k = bpf_map_lookup_elem(&fg_sakey, &kk);
	if (!k)
		return 0;
	t = fg_now_ns();
	*now = t;
	vt = FG_VT(t);
	/* Each way tests its own words and leaves from there, with no "found"
	 * flag or way index carried to one synack read. A key word's address
	 * half alone is compared: an empty way (0) that matches the address
	 * 0.0.0.0 holds until 0, never live, so it is never taken for a proof. */
	if (p->family == 4) {
		struct fg_vset4 *s;

		bits = FG_READ_ONCE(k->ver4_bits);
		if (bits - FG_VER_MIN_BITS > FG_VER_MAX_BITS - FG_VER_MIN_BITS)
			return 0;
		idx = fg_hash4(p->saddr[0], k->seed[0], bits);
		s = bpf_map_lookup_elem(&fg_ver4, &idx);
		if (!s)
			return 0;
#pragma unroll
		for (i = 0; i < FG_VWAYS; i++) {
			__u64 x = FG_READ_ONCE(s->key[i]);

			if ((__u32)x != p->saddr[0])
				continue;
			return fg_sa_holds((__u32)(x >> 32), vt, way, &s->synack[i], t);
		}
		return 0;
	} else {
		struct fg_vset6 *s;

		bits = FG_READ_ONCE(k->ver6_bits);
		if (bits - FG_VER_MIN_BITS > FG_VER_MAX_BITS - FG_VER_MIN_BITS)
			return 0;
		dg = fg_digest6(p->saddr, 0, 0, k->seed[0], k->seed[1]);
		idx = fg_set6_of(dg, bits);
		s = bpf_map_lookup_elem(&fg_ver6, &idx);
		if (!s)
			return 0;
#pragma unroll
		for (i = 0; i < FG_VWAYS; i++) {
			if (FG_READ_ONCE(s->key[i]) != dg)
				continue;
			return fg_sa_holds(FG_READ_ONCE(s->until[i]), vt, way, &s->synack[i], t);
		}
		return 0;
	}
}

/* Is rule index ri a syn_auth rule? */
static __always_inline int fg_sa_rule(const struct fg_synauth *sa, __u32 ri)
{
	__u32 wd = ri >> 6;

	return wd < FG_SA_RULE_WORDS && (sa->rules[wd] >> (ri & 63)) & 1;
}

/*
 * The ACK pre-search: the first syn_auth rule whose match holds p with
 * its TCP-flag test left out (a copy of p carries the entry's own flag
 * value), or FG_MAX_RULES (also for a verified client's ACK, fg_sa_fast).
 */
__noinline int fg_sa_presearch(const struct fg_policy *pol, const struct fg_pkt *p, __u32 sets)
{
	const struct fg_match *m;
	struct fg_pkt q;
	__u32 i, n;

	if (!fg_sa_on) /* 6.1 verifies every global function: dead code here */
		return FG_MAX_RULES;

	if (!pol || !p)
		return FG_MAX_RULES;
	if (p->proto != FG_IPPROTO_TCP || p->frag || (p->tcp_flags & FG_TCP_SYN) ||
	    !(p->tcp_flags & (FG_TCP_ACK | FG_TCP_RST)))
		return FG_MAX_RULES;
	n = pol->sa.nmatch;
	q = *p;
	for (i = 0; i < FG_SA_MAX_MATCH; i++) {
		if (i >= n)
			break;
		m = &pol->match[FG_CLASS_TCP][pol->sa.match[i] & (FG_MAX_MATCH - 1)];
		q.tcp_flags = m->tcp_val;
		if (fg_match(m, &q, sets) && fg_sa_rule(&pol->sa, m->rule))
			return m->rule;
	}
	return FG_MAX_RULES;
}

#endif /* FG_LIB_SYNAUTH_BPF_H */
