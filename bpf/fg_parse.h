/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Packet parser. Compiled twice: into the XDP program (clang -target bpf)
 * and, for the libFuzzer target and unit tests, into userspace. So it uses
 * only byte loads through a cursor bounds-checked against data_end
 * ("if (cur + n > end)"), no kernel struct bitfields, no helpers.
 *
 * What it promises: for any input, truncated at any byte, it returns one of
 * FG_P_IP (and then every field of *p is valid and the source address was
 * read from inside the frame), FG_P_NONIP or FG_P_MALFORMED; it reads no
 * byte outside [data, end).
 */
#ifndef FG_PARSE_H
#define FG_PARSE_H

#include "floodgate.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* The BPF build unrolls the header walks; gcc builds of the fuzzer and
 * tests need not. */
#ifdef __clang__
#define FG_UNROLL _Pragma("unroll")
#else
#define FG_UNROLL
#endif

#define FG_P_IP	       0
#define FG_P_NONIP     1
#define FG_P_MALFORMED 2
#define FG_P_EXT6      3 /* fg_parse_fixed only: IPv6 extension headers follow */

#define FG_ETH_P_IP	0x0800
#define FG_ETH_P_IPV6	0x86DD
#define FG_ETH_P_8021Q	0x8100
#define FG_ETH_P_8021AD 0x88A8

#define FG_IPPROTO_HOPOPTS  0
#define FG_IPPROTO_ICMP	    1
#define FG_IPPROTO_TCP	    6
#define FG_IPPROTO_UDP	    17
#define FG_IPPROTO_ROUTING  43
#define FG_IPPROTO_FRAGMENT 44
#define FG_IPPROTO_AH	    51
#define FG_IPPROTO_ICMPV6   58
#define FG_IPPROTO_DSTOPTS  60

/* The largest offset a cursor may reach; keeps every variable offset
 * bounded for the verifier (a frame's linear part is at most a page). */
#define FG_MAX_HDR_OFF 4096

struct fg_pkt {
	__u32 saddr[4];	    /* network order; IPv4 in saddr[0] */
	__u16 sport, dport; /* host order, 0 when there is no L4 header */
	__u8 family;	    /* 4 or 6 */
	__u8 proto;	    /* L4 protocol (after IPv6 extension headers) */
	__u8 tcp_flags;
	__u8 icmp_type;
	__u8 frag; /* non-first fragment: no L4 header */
	__u8 pad;
	/* not the parse's (it leaves them 0): the IPv4 set whose read
	 * floodgate's fg_src4_start began (bpf/lib/buckets.bpf.h); here, not
	 * in a local of its own, as its lookups' key in place: fg_decide's
	 * frame is the one 6.1's 512 B a call chain has least room for */
	__u16 hint;	/* bits 0-8: 1 + its rule's index, 0: none; 9-11: the key's own way */
	__u32 hint_set; /* its set's index, the key of its fg_src4 lookups */
};

static __always_inline __u16 fg_get16(const __u8 *p)
{
	return (__u16)((p[0] << 8) | p[1]);
}

/* L4 header at cur, l4len bytes of IP payload from cur on (per IP header). */
static __always_inline int fg_parse_l4(const __u8 *cur, const __u8 *end, __u32 l4len,
				       struct fg_pkt *p)
{
	switch (p->proto) {
	case FG_IPPROTO_TCP: {
		__u32 doff;

		if (cur + 20 > end || l4len < 20)
			return FG_P_MALFORMED;
		doff = (__u32)(cur[12] >> 4) * 4;
		if (doff < 20 || doff > l4len)
			return FG_P_MALFORMED;
		p->sport = fg_get16(cur);
		p->dport = fg_get16(cur + 2);
		p->tcp_flags = cur[13];
		return FG_P_IP;
	}
	case FG_IPPROTO_UDP:
		if (cur + 8 > end || l4len < 8)
			return FG_P_MALFORMED;
		p->sport = fg_get16(cur);
		p->dport = fg_get16(cur + 2);
		return FG_P_IP;
	case FG_IPPROTO_ICMP:
	case FG_IPPROTO_ICMPV6:
		if (cur + 4 > end || l4len < 4)
			return FG_P_MALFORMED;
		p->icmp_type = cur[0];
		return FG_P_IP;
	default:
		return FG_P_IP;
	}
}

/* cur points at the IPv4 header; avail = bytes of the whole frame from cur
 * (linear part and fragments: the IP total length may exceed the linear
 * part of a multi-buffer frame). */
static __always_inline int fg_parse_ip4(const __u8 *cur, const __u8 *end, __u32 avail,
					struct fg_pkt *p)
{
	__u32 ihl, tot, off;

	if (cur + 20 > end)
		return FG_P_MALFORMED;
	if ((cur[0] >> 4) != 4)
		return FG_P_MALFORMED;
	ihl = (__u32)(cur[0] & 0xf) * 4;
	tot = fg_get16(cur + 2);
	/* ihl < 5 is malformed, as in the kernel's ip_rcv_core */
	if (ihl < 20 || tot < ihl || tot > avail)
		return FG_P_MALFORMED;
	p->family = 4;
	p->proto = cur[9];
	/* copied as stored: network order in memory */
	__builtin_memcpy(&p->saddr[0], cur + 12, 4);
	off = fg_get16(cur + 6) & 0x1fff;
	if (off) {
		/* a non-first fragment has no L4 header: charge it to its
		 * source, never match a port or flag on it */
		p->frag = 1;
		return FG_P_IP;
	}
	if (cur + ihl > end)
		return FG_P_MALFORMED;
	return fg_parse_l4(cur + ihl, end, tot - ihl, p);
}

/* Where an IPv6 packet's extension headers start: the walk's state, for
 * fg_parse_ext6 (scalars only: BPF passes it to a global function). */
struct fg_ext6 {
	__u32 off;  /* from the frame's start to the first extension header */
	__u32 plen; /* payload bytes from there on (per the IPv6 header) */
	__u32 nh;   /* the first extension header's type */
};

static __always_inline int fg_is_ext6(__u8 nh)
{
	return nh == FG_IPPROTO_HOPOPTS || nh == FG_IPPROTO_ROUTING || nh == FG_IPPROTO_DSTOPTS ||
	       nh == FG_IPPROTO_AH || nh == FG_IPPROTO_FRAGMENT;
}

/* cur points at the IPv6 header, off bytes into the frame. Without
 * extension headers it parses the L4 header; with them it fills *x and
 * returns FG_P_EXT6. */
static __always_inline int fg_parse_ip6(const __u8 *cur, const __u8 *end, __u32 avail, __u32 off,
					struct fg_pkt *p, struct fg_ext6 *x)
{
	__u32 plen;
	__u8 nh;

	if (cur + 40 > end)
		return FG_P_MALFORMED;
	if ((cur[0] >> 4) != 6)
		return FG_P_MALFORMED;
	plen = fg_get16(cur + 4);
	/* payload length 0 would be a jumbogram: not supported, malformed */
	if (plen == 0 || plen + 40 > avail)
		return FG_P_MALFORMED;
	p->family = 6;
	__builtin_memcpy(p->saddr, cur + 8, 16);
	nh = cur[6];
	if (fg_is_ext6(nh)) {
		x->off = off + 40;
		x->plen = plen;
		x->nh = nh;
		return FG_P_EXT6;
	}
	p->proto = nh;
	return fg_parse_l4(cur + 40, end, plen, p);
}

/*
 * The IPv6 extension headers that fg_parse_fixed left in *x, data..end the
 * frame's linear part: on to the L4 header. Every path through the walk is
 * a state of its own for the verifier (about 15k instructions processed on
 * 6.18), so BPF verifies it once, in a global function of its own
 * (bpf/lib/parse.bpf.h), instead of once per VLAN depth and caller path.
 */
static __always_inline int fg_parse_ext6(const __u8 *data, const __u8 *end, const struct fg_ext6 *x,
					 struct fg_pkt *p)
{
	const __u8 *cur;
	__u32 plen = x->plen, hlen;
	__u8 nh = (__u8)x->nh;
	int i;

	if (x->off > FG_MAX_HDR_OFF)
		return FG_P_MALFORMED;
	cur = data + x->off;
	/* FG_MAX_EXTHDR headers may precede the L4 header; one more is
	 * malformed: never passed unmetered, never walked without bound */
	FG_UNROLL
	for (i = 0; i <= FG_MAX_EXTHDR; i++) {
		if (i == FG_MAX_EXTHDR && fg_is_ext6(nh))
			return FG_P_MALFORMED;
		switch (nh) {
		case FG_IPPROTO_HOPOPTS:
		case FG_IPPROTO_ROUTING:
		case FG_IPPROTO_DSTOPTS:
			if (cur + 2 > end)
				return FG_P_MALFORMED;
			hlen = ((__u32)cur[1] + 1) * 8;
			break;
		case FG_IPPROTO_AH:
			if (cur + 2 > end)
				return FG_P_MALFORMED;
			hlen = ((__u32)cur[1] + 2) * 4;
			break;
		case FG_IPPROTO_FRAGMENT:
			if (cur + 8 > end)
				return FG_P_MALFORMED;
			if (fg_get16(cur + 2) & 0xfff8) {
				p->proto = cur[0];
				p->frag = 1;
				return FG_P_IP;
			}
			hlen = 8;
			break;
		default:
			p->proto = nh;
			goto l4;
		}
		if (hlen > plen)
			return FG_P_MALFORMED;
		plen -= hlen;
		nh = cur[0];
		cur += hlen;
	}
	return FG_P_MALFORMED; /* not reached */
l4:
	return fg_parse_l4(cur, end, plen, p);
}

/*
 * data..end is the linear part of the frame; frame_len is its whole length
 * (bpf_xdp_get_buff_len). The fixed headers: Ethernet, VLAN tags, IPv4 or
 * IPv6 and, without IPv6 extension headers, L4. Fills *p, returns FG_P_*,
 * or FG_P_EXT6 with *x for fg_parse_ext6 to go on from.
 */
static __always_inline int fg_parse_fixed(const void *data, const void *end, __u32 frame_len,
					  struct fg_pkt *p, struct fg_ext6 *x)
{
	const __u8 *cur = (const __u8 *)data;
	const __u8 *e = (const __u8 *)end;
	__u16 proto;
	__u32 off = 14;
	int i;

	if (cur + 14 > e)
		return FG_P_MALFORMED; /* not even an Ethernet header */
	proto = fg_get16(cur + 12);
	cur += 14;
	FG_UNROLL
	for (i = 0; i < FG_MAX_VLAN; i++) {
		if (proto != FG_ETH_P_8021Q && proto != FG_ETH_P_8021AD)
			break;
		if (cur + 4 > e)
			return FG_P_MALFORMED;
		proto = fg_get16(cur + 2);
		cur += 4;
		off += 4;
	}
	if (proto == FG_ETH_P_8021Q || proto == FG_ETH_P_8021AD)
		return FG_P_MALFORMED; /* a third tag */
	if (frame_len < off)
		return FG_P_MALFORMED;
	if (proto == FG_ETH_P_IP)
		return fg_parse_ip4(cur, e, frame_len - off, p);
	if (proto == FG_ETH_P_IPV6)
		return fg_parse_ip6(cur, e, frame_len - off, off, p, x);
	return FG_P_NONIP;
}

/* The whole parse, inline (userspace, the benchmark's floor): fills *p,
 * returns FG_P_IP, FG_P_NONIP or FG_P_MALFORMED. */
static __always_inline int fg_parse(const void *data, const void *end, __u32 frame_len,
				    struct fg_pkt *p)
{
	struct fg_ext6 x = {};
	int rc = fg_parse_fixed(data, end, frame_len, p, &x);

	if (rc == FG_P_EXT6)
		rc = fg_parse_ext6((const __u8 *)data, (const __u8 *)end, &x, p);
	return rc;
}

#endif /* FG_PARSE_H */
