// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Frames for tests and tools: Ethernet, VLAN, IPv4/IPv6 and L4 headers built byte by byte. */
#include <string.h>
#include <arpa/inet.h>
#include "pkt.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static uint16_t csum(const uint8_t *p, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* Ethernet header and VLAN tags at p; returns where the EtherType goes. */
static uint8_t *put_eth(const struct pkt_spec *s, uint8_t *p)
{
	memcpy(p, "\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01", 12);
	p += 12;
	for (int i = 0; i < s->nvlan; i++) {
		uint16_t tpid = 0x8100;

		if (i == 0 && s->nvlan >= 2)
			tpid = s->vlan_tpid_outer ? s->vlan_tpid_outer : 0x88a8;
		put16(p, tpid);
		put16(p + 2, 100 + i);
		p += 4;
	}
	return p;
}

/* The L4 header's length plus the payload (a non-first fragment: payload only). */
static size_t l4_len(const struct pkt_spec *s)
{
	size_t n;

	switch (s->proto) {
	case 6:
		n = 20;
		break;
	case 17:
	case 1:
	case 58:
		n = 8;
		break;
	default:
		n = 0;
	}
	if (s->frag_off)
		n = 0;
	return n + s->payload;
}

/* IPv4 header (+NOP options) at ip; *iplen gets the packet's length. Returns the L4 header. */
static uint8_t *put_ip4(const struct pkt_spec *s, uint8_t *ip, size_t l4len, size_t *iplen)
{
	size_t ihl = 20 + s->ip_opt_len;

	*iplen = ihl + l4len;
	ip[0] = 0x40 | (ihl / 4);
	put16(ip + 2, *iplen);
	put16(ip + 4, 0x1234);
	put16(ip + 6, (s->frag_mf ? 0x2000 : 0) | ((s->frag_off / 8) & 0x1fff));
	ip[8] = 64;
	ip[9] = s->proto;
	inet_pton(AF_INET, s->src, ip + 12);
	inet_pton(AF_INET, s->dst ? s->dst : "10.0.0.1", ip + 16);
	memset(ip + 20, 1, s->ip_opt_len); /* NOPs */
	put16(ip + 10, csum(ip, ihl));
	return ip + ihl;
}

/* IPv6 header, destination options x ext_hdrs, then a fragment header if
 * any; *iplen as put_ip4. Returns the L4 header. */
static uint8_t *put_ip6(const struct pkt_spec *s, uint8_t *ip, size_t l4len, size_t *iplen)
{
	size_t ext = (size_t)s->ext_hdrs * 8 + ((s->frag_off || s->frag_mf) ? 8 : 0);
	uint8_t *nhp = ip + 6, *l4 = ip + 40;

	*iplen = 40 + ext + l4len;
	ip[0] = 0x60;
	put16(ip + 4, *iplen - 40);
	ip[7] = 64;
	inet_pton(AF_INET6, s->src, ip + 8);
	inet_pton(AF_INET6, s->dst ? s->dst : "fd00::1", ip + 24);
	for (int i = 0; i < s->ext_hdrs; i++) {
		*nhp = 60;
		nhp = l4;
		l4[1] = 0; /* 8 bytes */
		l4[2] = 1; /* PadN */
		l4[3] = 4;
		l4 += 8;
	}
	if (s->frag_off || s->frag_mf) {
		*nhp = 44;
		nhp = l4;
		put16(l4 + 2, (uint16_t)((s->frag_off & 0xfff8) | (s->frag_mf ? 1 : 0)));
		l4[4] = 0xde;
		l4 += 8;
	}
	*nhp = s->proto;
	return l4;
}

static void put_l4(const struct pkt_spec *s, uint8_t *l4, size_t l4len)
{
	switch (s->proto) {
	case 6:
		put16(l4, s->sport);
		put16(l4 + 2, s->dport);
		l4[12] = 5 << 4;
		l4[13] = s->tcp_flags_set ? s->tcp_flags : 0x02;
		break;
	case 17:
		put16(l4, s->sport);
		put16(l4 + 2, s->dport);
		put16(l4 + 4, l4len);
		break;
	case 1:
	case 58:
		l4[0] = s->icmp_type;
		break;
	}
}

int pkt_build(const struct pkt_spec *s, uint8_t *buf, size_t cap)
{
	size_t l4len = l4_len(s), iplen;
	uint8_t *p, *l4;

	if (cap < PKT_MIN_CAP + (size_t)s->payload)
		return -1;
	memset(buf, 0, cap);
	p = put_eth(s, buf);
	if (s->ethertype) {
		put16(p, s->ethertype);
		p += 2;
		memset(p, 0xab, 46);
		return (int)(p + 46 - buf);
	}
	put16(p, s->family == 6 ? 0x86dd : 0x0800);
	p += 2;
	if (s->family == 4)
		l4 = put_ip4(s, p, l4len, &iplen);
	else
		l4 = put_ip6(s, p, l4len, &iplen);
	if (!s->frag_off)
		put_l4(s, l4, l4len);
	return (int)(p + iplen - buf);
}
