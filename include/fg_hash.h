/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The hash functions of the ABI: where a source's bucket lives in fg_src4
 * and fg_src6 (the layouts and the placement rule: include/floodgate.h).
 * The XDP program and its readers (top, the throttle log, the tests' model)
 * must compute them bit for bit alike, so they are defined here once.
 * The SYN cookie (fg_sa_hash and its fields, docs/syn-auth.md) is here for
 * the same reason: the program makes it, the tests check it.
 * Included by floodgate.h after the layouts it needs.
 */
#ifndef FG_HASH_H
#define FG_HASH_H

#ifndef FLOODGATE_H
#error "include floodgate.h, which includes this after the layouts it needs"
#endif

/* murmur3's 64-bit finaliser over key ^ seed. */
static inline __attribute__((always_inline)) __u64 fg_mix4(__u64 key, __u64 seed)
{
	__u64 x = key ^ seed;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/* The set of a key: fg_mix4's top bits. */
static inline __attribute__((always_inline)) __u32 fg_hash4(__u64 key, __u64 seed, __u32 bits)
{
	return (__u32)(fg_mix4(key, seed) >> (64 - bits));
}

/* A key's own way in its set, the one a claim takes when it is empty:
 * fg_mix4's low bits (below the set's, which are the top ones). */
static inline __attribute__((always_inline)) __u32 fg_way4_pref(__u64 key, __u64 seed)
{
	return (__u32)fg_mix4(key, seed) & (FG_WAYS4 - 1);
}

static inline __attribute__((always_inline)) __u64 fg_rotl64(__u64 x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define FG_SIPROUND(v0, v1, v2, v3)     \
	do {                            \
		v0 += v1;               \
		v1 = fg_rotl64(v1, 13); \
		v1 ^= v0;               \
		v0 = fg_rotl64(v0, 32); \
		v2 += v3;               \
		v3 = fg_rotl64(v3, 16); \
		v3 ^= v2;               \
		v0 += v3;               \
		v3 = fg_rotl64(v3, 21); \
		v3 ^= v0;               \
		v2 += v1;               \
		v1 = fg_rotl64(v1, 17); \
		v1 ^= v2;               \
		v2 = fg_rotl64(v2, 32); \
	} while (0)

/*
 * fg_src6's key: SipHash-1-3 under (k0, k1) of the 20-byte message (addr,
 * rule, gen), the words as this host loads them (the program and its
 * readers run on one host), with the used bit set.
 */
static inline __attribute__((always_inline)) __u64 fg_digest6(const __be32 a[4], __u16 rule,
							      __u16 gen, __u64 k0, __u64 k1)
{
	__u64 v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
	__u64 v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
	__u64 m0 = (__u64)a[0] | (__u64)a[1] << 32, m1 = (__u64)a[2] | (__u64)a[3] << 32;
	__u64 m2 = (__u64)rule | (__u64)gen << 16 | 20ull << 56; /* last block: length on top */

	v3 ^= m0;
	FG_SIPROUND(v0, v1, v2, v3);
	v0 ^= m0;
	v3 ^= m1;
	FG_SIPROUND(v0, v1, v2, v3);
	v0 ^= m1;
	v3 ^= m2;
	FG_SIPROUND(v0, v1, v2, v3);
	v0 ^= m2;
	v2 ^= 0xff;
	FG_SIPROUND(v0, v1, v2, v3);
	FG_SIPROUND(v0, v1, v2, v3);
	FG_SIPROUND(v0, v1, v2, v3);
	return (v0 ^ v1 ^ v2 ^ v3) | 1;
}

/* The key a way's copy of its owner stands for (readers: see above). */
static inline __attribute__((always_inline)) __u64 fg_who6_digest(const struct fg_who6 *w,
								  const __u64 seed6[2])
{
	return fg_digest6(w->addr, w->rule, w->gen, seed6[0], seed6[1]);
}

/* The set of a key: its top bits (the digest is already uniform). */
static inline __attribute__((always_inline)) __u32 fg_set6_of(__u64 key, __u32 bits)
{
	return (__u32)(key >> (64 - bits));
}

/* A key's own way in its set (fg_way4_pref for fg_src6): the bits above
 * its lowest, which is always set (the used bit, fg_digest6). */
static inline __attribute__((always_inline)) __u32 fg_way6_pref(__u64 key)
{
	return (__u32)(key >> 1) & (FG_WAYS6 - 1);
}

/* ============ SYN authentication, part 2: the cookie's hash (docs/syn-auth.md) ============ */

/*
 * SipHash-2-4 under (k0, k1) of the 48-byte message (saddr, daddr, the
 * ports as in the packet, isn, slot): the words as this host loads them
 * (the program and the tests that check it run on one host). IPv4
 * addresses are in [0], the other words 0. The retransmit way's cookie
 * has isn 0 and slot | 1 << 63, so the two ways' cookies never stand for
 * each other. 2-4 rather than fg_digest6's 1-3: this output is shown to
 * whoever sends a SYN, and a forger who could predict it would be
 * verified.
 */
static inline __attribute__((always_inline)) __u64 fg_sa_hash(__u64 k0, __u64 k1, const __u32 s[4],
							      const __u32 d[4], __u32 ports,
							      __u32 isn, __u64 slot)
{
	__u64 v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
	__u64 v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
	__u64 m[7];
	int i;

	m[0] = (__u64)s[0] | (__u64)s[1] << 32;
	m[1] = (__u64)s[2] | (__u64)s[3] << 32;
	m[2] = (__u64)d[0] | (__u64)d[1] << 32;
	m[3] = (__u64)d[2] | (__u64)d[3] << 32;
	m[4] = (__u64)ports | (__u64)isn << 32;
	m[5] = slot;
	m[6] = 48ull << 56; /* the last block: the length on top */
#ifdef __clang__
#pragma unroll
#endif
	for (i = 0; i < 7; i++) {
		v3 ^= m[i];
		FG_SIPROUND(v0, v1, v2, v3);
		FG_SIPROUND(v0, v1, v2, v3);
		v0 ^= m[i];
	}
	v2 ^= 0xff;
	FG_SIPROUND(v0, v1, v2, v3);
	FG_SIPROUND(v0, v1, v2, v3);
	FG_SIPROUND(v0, v1, v2, v3);
	FG_SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

#define FG_SA_RETX_SLOT (1ull << 63) /* the retransmit way's domain bit in the slot word */

/* Handoff way: the ISN for a SYN (hash h of its slot; mss_idx 0..3, ws
 * 0..14 or 15 = none) and the 8 bits its TSval carries. */
static inline __attribute__((always_inline)) __u32 fg_sa_isn(__u64 h, __u32 mss_idx, __u32 slot1,
							     __u32 sack, __u32 ws)
{
	return ((__u32)(h >> 32) & 0xffffff00u) | (mss_idx & 3) << 6 | (slot1 & 1) << 5 |
	       (sack & 1) << 4 | (ws & 0xf);
}
#define FG_SA_TSBITS(h) ((__u32)(h)&0xffu)

/* Retransmit way: the ack number of the deliberately wrong SYN-ACK. */
static inline __attribute__((always_inline)) __u32 fg_sa_retx(__u64 h, __u32 slot1)
{
	return ((__u32)(h >> 32) & ~1u) | (slot1 & 1);
}

/* The slot a cookie of parity bit was made in, judged at slot now: now or
 * the one before. */
static inline __attribute__((always_inline)) __u64 fg_sa_slot_of(__u64 now_slot, __u32 bit)
{
	return now_slot - ((now_slot ^ bit) & 1);
}
/* ========================= end of SYN authentication, part 2 ========================= */

#endif /* FG_HASH_H */
