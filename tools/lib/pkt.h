/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Frame builder for the tests and the tools that drive the program through
 * BPF_PROG_TEST_RUN: Ethernet (+VLAN tags), IPv4/IPv6 (+options, extension
 * headers, fragments), TCP/UDP/ICMP/ICMPv6. */
#ifndef FG_PKT_H
#define FG_PKT_H

#include <stddef.h>
#include <stdint.h>

struct pkt_spec {
	int family;	 /* 4 or 6 */
	const char *src; /* textual address */
	const char *dst;
	uint8_t proto; /* 6, 17, 1, 58, or other */
	uint16_t sport, dport;
	uint8_t tcp_flags; /* default SYN for TCP when 0 and !tcp_flags_set */
	int tcp_flags_set;
	uint8_t icmp_type;
	int nvlan;		  /* 0..3 tags */
	uint16_t vlan_tpid_outer; /* default 0x88a8 when 2 tags, else 0x8100 */
	int ip_opt_len;		  /* IPv4 options, multiple of 4, <= 40 */
	int ext_hdrs;		  /* IPv6 destination-options headers before L4 */
	int frag_off;	    /* fragment offset in bytes (multiple of 8); non-zero = non-first */
	int frag_mf;	    /* more-fragments flag (first fragment) */
	int payload;	    /* L4 payload bytes */
	uint16_t ethertype; /* override (e.g. 0x0806 ARP): raw frame, no IP */
};

/* Builds into buf (cap bytes, at least PKT_MIN_CAP + payload); returns the
 * frame's length or -1. */
#define PKT_MIN_CAP (14 + 12 + 60 + 40 + 8 * 8 + 60)
int pkt_build(const struct pkt_spec *s, uint8_t *buf, size_t cap);

#endif /* FG_PKT_H */
