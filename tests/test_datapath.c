// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The XDP program, driven through BPF_PROG_TEST_RUN with table-driven
 * frames and the test clock (fake_now), so bucket arithmetic is checked
 * exactly, whatever this machine's speed. FG_NEEDS_ROOT.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include "fgtest.h"
#include "dp.h"
#include "dpcheck.h"
#include "dp_rt.h"
#include "maps/fgmaps.h"
#include "fg_parse.h"

#define NS 1000000000ull
#define MS 1000000ull

static struct dp D;

static int setup(__u32 max_sources)
{
	return dp_check_open(&D, max_sources);
}

/* A grant of n tokens to rule 0's lease, running 400 ms from now, one node. */
static void lease_grant(__s64 n)
{
	dp_lease_renew(&D, 0, n, dp_now(&D) + 400 * MS, 1);
}

/* What a test's program holds besides its one rule for every packet. */
struct extras {
	double pool_burst; /* > 0: pool 0 (rule.pool = 1) at 1/s with this burst, no reserve */
	int lease;	   /* 1: rule 0's lease entry (dp_lease_init), no lease yet, */
	__u16 gen;	   /*    with this gen, on_loss and local share */
	__u8 on_loss;
	struct fg_limit local;
	__s64 grant; /* > 0: after the flip, lease_grant(grant) */
};

/* A fresh program with the one rule r for every packet and what x (may be
 * NULL) adds, applied. */
static int setup_with(const struct fg_rule *r, const struct extras *x)
{
	if (setup(1024))
		return -1;
	if (x && x->pool_burst > 0) {
		char name[64];

		snprintf(name, sizeof(name), "pool 1/s, burst %g", x->pool_burst);
		ASSERT_OK(dp_pool(&D, 0, 1, x->pool_burst, 0, 0), name);
	}
	dp_rule(&D, r, &M_ANY, C_ALL);
	if (x && x->lease)
		dp_lease_init(&D, 0, x->gen, x->on_loss, x->local);
	dp_apply(&D);
	if (x && x->grant > 0)
		lease_grant(x->grant);
	return 0;
}

/* setup_with, the rule alone. */
static int setup_one(const struct fg_rule *r)
{
	return setup_with(r, NULL);
}

static struct fg_rule limit_rule(double rate, double burst)
{
	struct fg_rule r = { .action = FG_ACT_LIMIT };

	r.src = dp_lim(rate, burst);
	return r;
}

/* setup_one with limit_rule(rate, burst). */
static int setup_limit(double rate, double burst)
{
	struct fg_rule r = limit_rule(rate, burst);

	return setup_one(&r);
}

/* A UDP entry on sport lo..hi and dport dlo..dhi. */
static struct fg_match udp_ports(__u16 slo, __u16 shi, __u16 dlo, __u16 dhi)
{
	struct fg_match m = M_ANY;

	m.proto = 17;
	m.flags = FG_M_L4;
	m.sport_lo = slo;
	m.sport_hi = shi;
	m.dport_lo = dlo;
	m.dport_hi = dhi;
	return m;
}

/* An entry on destination port `port` alone, any protocol. */
static struct fg_match to_port(__u16 port)
{
	struct fg_match m = M_ANY;

	m.dport_lo = m.dport_hi = port;
	return m;
}

/* Rule a for every packet to port pa, then rule b for every packet to port pb. */
static void rules_by_port(const struct fg_rule *a, __u16 pa, const struct fg_rule *b, __u16 pb)
{
	struct fg_match m = to_port(pa);

	dp_rule(&D, a, &m, C_ALL);
	m = to_port(pb);
	dp_rule(&D, b, &m, C_ALL);
}

static struct pkt_spec udp4(const char *src, uint16_t dport)
{
	return (struct pkt_spec){
		.family = 4, .src = src, .proto = 17, .sport = 40000, .dport = dport
	};
}

static struct pkt_spec udp6(const char *src, uint16_t dport)
{
	return (struct pkt_spec){
		.family = 6, .src = src, .proto = 17, .sport = 40000, .dport = dport
	};
}

/* ---- parsing ------------------------------------------------------------ */

struct parse_case {
	const char *name;
	struct pkt_spec s;
	int mangle;	  /* 0 none; see below */
	int want_out;	  /* enum fg_outcome */
	int want_verdict; /* XDP_PASS / XDP_DROP */
};

enum {
	MG_NONE,
	MG_IHL4,
	MG_TOTLEN_BIG,
	MG_TOTLEN_SMALL,
	MG_VER5,
	MG_V6_PLEN0,
	MG_V6_PLEN_BIG,
	MG_TCP_DOFF4,
	MG_TCP_SHORT
};

static int build_mangled(const struct parse_case *c, uint8_t *buf, size_t cap)
{
	int len = pkt_build(&c->s, buf, cap);
	int l3 = 14 + 4 * c->s.nvlan;

	switch (c->mangle) {
	case MG_IHL4:
		buf[l3] = 0x44;
		break;
	case MG_TOTLEN_BIG:
		buf[l3 + 2] = 0x05; /* 1280+ > frame */
		break;
	case MG_TOTLEN_SMALL:
		buf[l3 + 2] = 0;
		buf[l3 + 3] = 12;
		break;
	case MG_VER5:
		buf[l3] = 0x55;
		break;
	case MG_V6_PLEN0:
		buf[l3 + 4] = buf[l3 + 5] = 0;
		break;
	case MG_V6_PLEN_BIG:
		buf[l3 + 4] = 0x10;
		break;
	case MG_TCP_DOFF4:
		buf[l3 + 20 + 12] = 4 << 4;
		break;
	case MG_TCP_SHORT:
		/* IPv4 total length says 30: 10 bytes of TCP */
		buf[l3 + 2] = 0;
		buf[l3 + 3] = 30;
		len = l3 + 30;
		break;
	}
	return len;
}

static void test_parse_cases(void)
{
	const struct parse_case cases[] = {
		{ "ipv4 udp", udp4("192.0.2.1", 53), 0, FG_OUT_PASS, XDP_PASS },
		{ "ipv4 tcp syn",
		  { .family = 4, .src = "192.0.2.1", .proto = 6, .dport = 22 },
		  0,
		  FG_OUT_PASS,
		  XDP_PASS },
		{ "ipv4 icmp",
		  { .family = 4, .src = "192.0.2.1", .proto = 1, .icmp_type = 8 },
		  0,
		  FG_OUT_PASS,
		  XDP_PASS },
		{ "ipv4 gre",
		  { .family = 4, .src = "192.0.2.1", .proto = 47, .payload = 20 },
		  0,
		  FG_OUT_PASS,
		  XDP_PASS },
		{ "ipv4 options",
		  { .family = 4, .src = "192.0.2.1", .proto = 17, .ip_opt_len = 40 },
		  0,
		  FG_OUT_PASS,
		  XDP_PASS },
		{ "ipv6 udp", udp6("2001:db8::1", 53), 0, FG_OUT_PASS, XDP_PASS },
		{ "ipv6 icmpv6",
		  { .family = 6, .src = "2001:db8::1", .proto = 58, .icmp_type = 128 },
		  0,
		  FG_OUT_PASS,
		  XDP_PASS },
		{ "ipv6 8 ext headers",
		  { .family = 6, .src = "2001:db8::1", .proto = 17, .ext_hdrs = 8 },
		  0,
		  FG_OUT_PASS,
		  XDP_PASS },
		{ "ipv6 9 ext headers",
		  { .family = 6, .src = "2001:db8::1", .proto = 17, .ext_hdrs = 9 },
		  0,
		  FG_OUT_MALFORMED,
		  XDP_DROP },
		{ "ipv6 first fragment",
		  { .family = 6,
		    .src = "2001:db8::1",
		    .proto = 17,
		    .dport = 53,
		    .frag_mf = 1,
		    .ext_hdrs = 2 },
		  0,
		  FG_OUT_PASS,
		  XDP_PASS },
		{ "ipv6 non-first fragment",
		  { .family = 6,
		    .src = "2001:db8::1",
		    .proto = 17,
		    .frag_off = 1480,
		    .payload = 100 },
		  0,
		  FG_OUT_PASS,
		  XDP_PASS },
		{ "ipv4 non-first fragment",
		  { .family = 4, .src = "192.0.2.1", .proto = 17, .frag_off = 1480, .payload = 100 },
		  0,
		  FG_OUT_PASS,
		  XDP_PASS },
		{ "vlan ipv4",
		  { .family = 4, .src = "192.0.2.1", .proto = 17, .nvlan = 1 },
		  0,
		  FG_OUT_PASS,
		  XDP_PASS },
		{ "qinq ipv6",
		  { .family = 6, .src = "2001:db8::1", .proto = 17, .nvlan = 2 },
		  0,
		  FG_OUT_PASS,
		  XDP_PASS },
		{ "qinq 8100/8100",
		  { .family = 4,
		    .src = "192.0.2.1",
		    .proto = 17,
		    .nvlan = 2,
		    .vlan_tpid_outer = 0x8100 },
		  0,
		  FG_OUT_PASS,
		  XDP_PASS },
		{ "three vlan tags",
		  { .family = 4, .src = "192.0.2.1", .proto = 17, .nvlan = 3 },
		  0,
		  FG_OUT_MALFORMED,
		  XDP_DROP },
		{ "arp", { .ethertype = 0x0806 }, 0, FG_OUT_NONIP, XDP_PASS },
		{ "lldp on vlan", { .ethertype = 0x88cc, .nvlan = 1 }, 0, FG_OUT_NONIP, XDP_PASS },
		{ "ipv4 ihl 4", udp4("192.0.2.1", 53), MG_IHL4, FG_OUT_MALFORMED, XDP_DROP },
		{ "ipv4 total length past frame", udp4("192.0.2.1", 53), MG_TOTLEN_BIG,
		  FG_OUT_MALFORMED, XDP_DROP },
		{ "ipv4 total length < ihl", udp4("192.0.2.1", 53), MG_TOTLEN_SMALL,
		  FG_OUT_MALFORMED, XDP_DROP },
		{ "ipv4 version 5", udp4("192.0.2.1", 53), MG_VER5, FG_OUT_MALFORMED, XDP_DROP },
		{ "ipv6 payload length 0", udp6("2001:db8::1", 53), MG_V6_PLEN0, FG_OUT_MALFORMED,
		  XDP_DROP },
		{ "ipv6 payload length past frame", udp6("2001:db8::1", 53), MG_V6_PLEN_BIG,
		  FG_OUT_MALFORMED, XDP_DROP },
		{ "tcp data offset 4",
		  { .family = 4, .src = "192.0.2.1", .proto = 6 },
		  MG_TCP_DOFF4,
		  FG_OUT_MALFORMED,
		  XDP_DROP },
		{ "tcp header cut by ip length",
		  { .family = 4, .src = "192.0.2.1", .proto = 6 },
		  MG_TCP_SHORT,
		  FG_OUT_MALFORMED,
		  XDP_DROP },
	};

	if (setup_limit(1000, 1000))
		return;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct parse_case *c = &cases[i];
		uint8_t buf[4096];
		__u32 row = 0, o = 0, ret = 0;
		int len = build_mangled(c, buf, sizeof(buf));

		dp_outcome(&D, &row, &o);
		if (!ASSERT_OK(dp_run(&D, buf, len, &ret), c->name))
			continue;
		ASSERT_EQ(ret, c->want_verdict, c->name);
		if (ASSERT_OK(dp_outcome(&D, &row, &o), c->name))
			ASSERT_EQ(o, c->want_out, c->name);
	}
	dp_close(&D);
}

/* s built and read by the userspace parser into *p: an IP packet, the check
 * `name`; 1 when it held. */
static int parse_ip(const struct pkt_spec *s, struct fg_pkt *p, const char *name)
{
	uint8_t buf[4096];
	int len = pkt_build(s, buf, sizeof(buf));

	memset(p, 0, sizeof(*p));
	return ASSERT_EQ(fg_parse(buf, buf + len, len, p), FG_P_IP, name);
}

/* The parser compiled for userspace: fields, not just outcomes. */
static void test_parse_fields(void)
{
	struct fg_pkt p;
	struct pkt_spec s;

	s = (struct pkt_spec){ .family = 4,
			       .src = "198.51.100.7",
			       .proto = 6,
			       .sport = 1234,
			       .dport = 22,
			       .tcp_flags = 0x12,
			       .tcp_flags_set = 1,
			       .nvlan = 2,
			       .ip_opt_len = 8 };
	parse_ip(&s, &p, "qinq tcp parses");
	ASSERT_EQ(p.family, 4, "family");
	ASSERT_EQ(p.proto, 6, "proto");
	ASSERT_EQ(p.sport, 1234, "sport");
	ASSERT_EQ(p.dport, 22, "dport");
	ASSERT_EQ(p.tcp_flags, 0x12, "tcp flags");
	ASSERT_EQ(p.saddr[0], inet_addr("198.51.100.7"), "saddr");

	s = (struct pkt_spec){
		.family = 6, .src = "2001:db8:1:2::99", .proto = 58, .icmp_type = 135, .ext_hdrs = 3
	};
	parse_ip(&s, &p, "icmpv6 behind 3 ext headers");
	ASSERT_EQ(p.proto, 58, "proto after ext headers");
	ASSERT_EQ(p.icmp_type, 135, "icmp type");
	uint8_t a6[16];
	inet_pton(AF_INET6, "2001:db8:1:2::99", a6);
	ASSERT_EQ(memcmp(p.saddr, a6, 16), 0, "ipv6 saddr");

	s = (struct pkt_spec){
		.family = 4, .src = "198.51.100.7", .proto = 17, .frag_off = 8, .payload = 64
	};
	parse_ip(&s, &p, "non-first fragment parses");
	ASSERT_EQ(p.frag, 1, "frag flag");
	ASSERT_EQ(p.dport, 0, "no port read from a fragment");
	ASSERT_EQ(p.saddr[0], inet_addr("198.51.100.7"), "fragment saddr");
}

/* Truncation at every byte: userspace parser for every length from 0, the
 * real program from 14 (BPF_PROG_TEST_RUN needs an Ethernet header). */
static void test_truncation(void)
{
	const struct pkt_spec specs[] = {
		{ .family = 4,
		  .src = "203.0.113.9",
		  .proto = 17,
		  .dport = 53,
		  .ip_opt_len = 12,
		  .payload = 4 },
		{ .family = 6,
		  .src = "2001:db8::9",
		  .proto = 6,
		  .dport = 22,
		  .ext_hdrs = 3,
		  .frag_mf = 1 },
		{ .family = 4, .src = "203.0.113.9", .proto = 6, .dport = 80, .nvlan = 2 },
		{ .family = 4, .src = "203.0.113.9", .proto = 17, .frag_off = 64, .payload = 16 },
		{ .family = 6,
		  .src = "2001:db8::9",
		  .proto = 17,
		  .frag_off = 64,
		  .payload = 16,
		  .nvlan = 1 },
		{ .family = 6,
		  .src = "2001:db8::9",
		  .proto = 58,
		  .icmp_type = 128,
		  .nvlan = 2,
		  .ext_hdrs = 1 },
	};
	int runs = 0;

	if (setup_limit(1e6, 1e6))
		return;
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		uint8_t full[512], cut[512];
		int len = pkt_build(&specs[i], full, sizeof(full));
		char name[96];

		for (int n = 0; n < len; n++) {
			struct fg_pkt p;
			uint8_t *heap = malloc(n ? n : 1); /* ASan sees overreads */

			memcpy(heap, full, n);
			memset(&p, 0, sizeof(p));
			snprintf(name, sizeof(name), "spec %zu cut at %d: userspace parser", i, n);
			ASSERT_EQ(fg_parse(heap, heap + n, n, &p), FG_P_MALFORMED, name);
			free(heap);
			if (n < 14)
				continue;
			__u32 ret = 99, row = 0, o = 0;

			memcpy(cut, full, n);
			dp_outcome(&D, &row, &o);
			snprintf(name, sizeof(name), "spec %zu cut at %d", i, n);
			if (!ASSERT_OK(dp_run(&D, cut, n, &ret), name))
				continue;
			runs++;
			ASSERT_TRUE(ret == XDP_DROP, name); /* malformed: drop, never aborted */
			if (ASSERT_OK(dp_outcome(&D, &row, &o), name))
				ASSERT_EQ(o, FG_OUT_MALFORMED, name);
		}
		snprintf(name, sizeof(name), "spec %zu: no bucket from truncated frames", i);
		ASSERT_EQ(dp_count_src4(&D), 0, name);
	}
	/* whole frames are charged to exactly their own source */
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		ASSERT_EQ(dp_send(&D, &specs[i]), XDP_PASS, "whole frame passes");
	}
	struct fg_bucket b;
	ASSERT_OK(dp_bucket4(&D, "203.0.113.9", 0, 0, &b), "bucket of the real source");
	ASSERT_EQ(dp_count_src4(&D), 1, "one IPv4 source bucket");
	ASSERT_GE(runs, 300, "truncated frames run");
	dp_close(&D);
}

/* ---- policy semantics --------------------------------------------------- */

static void test_outcomes_and_lists(void)
{
	struct fg_rule r = limit_rule(10, 2);
	struct fg_rule drop = { .action = FG_ACT_DROP };
	struct fg_match m = udp_ports(0, 65535, 53, 53);
	struct pkt_spec s;
	__u32 row;
	int v;

	if (setup(1024))
		return;
	dp_rule(&D, &r, &m, 1u << FG_CLASS_UDP);
	dp_rule(&D, &drop, &M_ANY, 1u << FG_CLASS_TCP);
	ASSERT_OK(dp_pfx(&D, "10.0.0.0/8", FG_LIST_DENY, 0), "deny 10/8");
	ASSERT_OK(dp_pfx(&D, "10.1.0.0/16", FG_LIST_ALLOW, 0), "allow 10.1/16 inside");
	ASSERT_OK(dp_pfx(&D, "2001:db8:bad::/48", FG_LIST_DENY, 0), "deny v6");
	ASSERT_OK(dp_pfx(&D, "2001:db8:900d::/48", FG_LIST_ALLOW, 0), "allow v6");
	dp_apply(&D);

	s = udp4("192.0.2.1", 53);
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_PASS, "first within burst");
	ASSERT_EQ(row, 0, "counted in rule 0's row");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_PASS, "second within burst");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_DROP, "third over burst");
	ASSERT_EQ(v, XDP_DROP, "dropped");
	s = udp4("192.0.2.1", 54);
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_PASS,
		  "other port: unmatched, default pass");
	ASSERT_EQ(row, FG_ROW_GLOBAL, "unmatched in the global row");
	s = udp4("10.2.3.4", 53);
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_DENY, "denylisted");
	ASSERT_EQ(v, XDP_DROP, "deny drops");
	s = udp4("10.1.3.4", 53);
	for (int i = 0; i < 5; i++)
		ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_ALLOW,
			  "allowlisted never limited");
	s = (struct pkt_spec){ .family = 4, .src = "10.1.3.4", .proto = 6, .dport = 80 };
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_ALLOW, "allow beats a drop rule");
	s = (struct pkt_spec){ .family = 4, .src = "192.0.2.50", .proto = 6, .dport = 80 };
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_DROP, "drop rule");
	ASSERT_EQ(row, 1, "drop rule's row");
	s = udp6("2001:db8:bad::1", 53);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_DENY, "v6 deny");
	s = udp6("2001:db8:900d::1", 53);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_ALLOW, "v6 allow");
	s = (struct pkt_spec){ .ethertype = 0x0806 };
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_NONIP, "arp");
	ASSERT_EQ(v, XDP_PASS, "non-IP passes");

	/* bytes are counted with packets */
	struct fg_stats st;
	dp_read_stats(&D, 0, &st);
	ASSERT_EQ(st.bytes[FG_OUT_PASS], 2 * 42, "bytes of two 42-byte frames");

	/* malformed verdict and default verdict are the policy's */
	D.pol.malformed_verdict = FG_PASS;
	D.pol.default_verdict = FG_DROP;
	dp_apply(&D);
	s = (struct pkt_spec){ .family = 4, .src = "192.0.2.1", .proto = 17, .nvlan = 3 };
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_MALFORMED, "malformed");
	ASSERT_EQ(v, XDP_PASS, "malformed: pass");
	s = udp4("192.0.2.1", 54);
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_DROP, "unmatched, default drop");
	ASSERT_EQ(row, FG_ROW_GLOBAL, "default drop counted globally");
	dp_close(&D);
}

/* The /16 directory in front of the IPv4 trie answers exactly what a
 * longest-prefix match over the same prefixes answers. */
static void test_lists_dir_vs_reference(void)
{
	struct fg_rule pass = { .action = FG_ACT_PASS };
	struct {
		__u32 net;
		int plen, list;
	} pf[60];
	int n = 0, wrong = 0, seen[3] = { 0 };

	if (setup(1024))
		return;
	dp_rule(&D, &pass, &M_ANY, C_ALL);
	srand(3);
	while (n < 60) {
		int plen = 15 + rand() % 14; /* 15..28, both sides of /16 */
		__u32 net = (0x0a000000u | (rand() & 0x000fffff)) & (0xffffffffu << (32 - plen));
		char cidr[32];
		struct in_addr ia = { .s_addr = htonl(net) };

		pf[n] = (typeof(pf[0])){ net, plen, 1 + rand() % 2 };
		snprintf(cidr, sizeof(cidr), "%s/%d", inet_ntoa(ia), plen);
		if (!ASSERT_OK(dp_pfx(&D, cidr, pf[n].list, 0), cidr))
			break;
		n++;
	}
	dp_apply(&D);
	for (int i = 0; i < 1500; i++) {
		__u32 a = 0x0a000000u | (rand() & 0x000fffff);
		int best = -1, want, got;
		char src[32];
		struct in_addr ia = { .s_addr = htonl(a) };
		struct pkt_spec s;

		for (int j = 0; j < n; j++)
			if ((a & (0xffffffffu << (32 - pf[j].plen))) == pf[j].net &&
			    (best < 0 || pf[j].plen >= pf[best].plen)) /* a rewrite wins */
				best = j;
		want = best < 0			      ? FG_OUT_PASS :
		       pf[best].list == FG_LIST_ALLOW ? FG_OUT_ALLOW :
							FG_OUT_DENY;
		snprintf(src, sizeof(src), "%s", inet_ntoa(ia));
		s = udp4(src, 7);
		got = dp_outcome_of(&D, &s, NULL, NULL);
		wrong += got != want;
		seen[want == FG_OUT_PASS ? 0 : want == FG_OUT_ALLOW ? 1 : 2]++;
	}
	ASSERT_EQ(wrong, 0, "outcomes differing from a reference longest-prefix match");
	ASSERT_GE(seen[0], 50, "unlisted addresses exercised");
	ASSERT_GE(seen[1], 50, "allowlisted addresses exercised");
	ASSERT_GE(seen[2], 50, "denylisted addresses exercised");
	dp_close(&D);
}

static void test_first_match(void)
{
	struct fg_rule pass = { .action = FG_ACT_PASS }, drop = { .action = FG_ACT_DROP };
	struct fg_match syn = M_ANY, range = M_ANY, icmp = M_ANY, v6 = M_ANY;
	struct pkt_spec s;
	__u32 row;

	if (setup(1024))
		return;
	/* rule 0: TCP SYN without ACK to 20-25 -> drop; rule 1: all TCP -> pass */
	syn.proto = 6;
	syn.dport_lo = 20;
	syn.dport_hi = 25;
	syn.tcp_mask = FG_TCP_SYN | FG_TCP_ACK;
	syn.tcp_val = FG_TCP_SYN;
	syn.flags = FG_M_L4;
	dp_rule(&D, &drop, &syn, 1u << FG_CLASS_TCP);
	dp_rule(&D, &pass, &M_ANY, 1u << FG_CLASS_TCP);
	/* rule 2: icmp echo (type 8) drop; rule 3: sport range 1000-2000 on IPv6 only */
	icmp.proto = 1;
	icmp.icmp_type = 8;
	icmp.flags = FG_M_L4 | FG_M_ICMP_TYPE | FG_M_V4;
	dp_rule(&D, &drop, &icmp, 1u << FG_CLASS_ICMP);
	range.proto = 17;
	range.sport_lo = 1000;
	range.sport_hi = 2000;
	range.flags = FG_M_L4 | FG_M_V6;
	dp_rule(&D, &drop, &range, 1u << FG_CLASS_UDP);
	(void)v6;
	dp_apply(&D);

	s = (struct pkt_spec){ .family = 4, .src = "192.0.2.1", .proto = 6, .dport = 22 };
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_DROP, "syn to 22 hits rule 0");
	ASSERT_EQ(row, 0, "rule 0");
	s.tcp_flags = FG_TCP_SYN | FG_TCP_ACK;
	s.tcp_flags_set = 1;
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_PASS, "syn+ack falls to rule 1");
	ASSERT_EQ(row, 1, "rule 1");
	s = (struct pkt_spec){ .family = 4, .src = "192.0.2.1", .proto = 6, .dport = 26 };
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_PASS, "port 26 outside the range");
	ASSERT_EQ(row, 1, "rule 1 again");
	s = (struct pkt_spec){ .family = 4, .src = "192.0.2.1", .proto = 1, .icmp_type = 8 };
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_DROP, "echo request");
	s.icmp_type = 0;
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_PASS, "echo reply unmatched");
	ASSERT_EQ(row, FG_ROW_GLOBAL, "global row");
	s = (struct pkt_spec){ .family = 6, .src = "2001:db8::1", .proto = 58, .icmp_type = 8 };
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_PASS,
		  "icmpv6 type 8 is not an IPv4 echo rule");
	s = (struct pkt_spec){ .family = 6, .src = "2001:db8::1", .proto = 17, .sport = 1500 };
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_DROP, "v6 sport in range");
	s.family = 4;
	s.src = "192.0.2.1";
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_PASS,
		  "v4 not matched by a v6-only rule");

	/* swap the first two rules: order decides */
	struct fg_match t0 = D.pol.match[FG_CLASS_TCP][0];
	D.pol.match[FG_CLASS_TCP][0] = D.pol.match[FG_CLASS_TCP][1];
	D.pol.match[FG_CLASS_TCP][1] = t0;
	dp_apply(&D);
	s = (struct pkt_spec){ .family = 4, .src = "192.0.2.1", .proto = 6, .dport = 22 };
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_PASS,
		  "after the swap the pass rule wins");
	ASSERT_EQ(row, 1, "rule 1 first now");
	dp_close(&D);
}

/* The scan's start index (fg_pidx) never skips an earlier match: random
 * port rules against a first-match reference scan. */
static void test_rule_index_vs_reference(void)
{
	struct fg_rule pass = { .action = FG_ACT_PASS };
	struct fg_match ms[40];
	int wrong = 0, unmatched = 0;

	if (setup(1024))
		return;
	srand(21);
	for (int i = 0; i < 40; i++) {
		struct fg_match m = M_ANY;

		m.proto = 17;
		m.flags = FG_M_L4;
		m.dport_lo = rand() % 2000;
		m.dport_hi = m.dport_lo + rand() % (i < 30 ? 40 : 600);
		if (rand() % 3 == 0) {
			m.sport_lo = 1000 + rand() % 100;
			m.sport_hi = m.sport_lo + 50;
		}
		ms[i] = m;
		dp_rule(&D, &pass, &m, 1u << FG_CLASS_UDP);
	}
	dp_apply(&D);
	for (int k = 0; k < 1500; k++) {
		struct pkt_spec s = udp4("192.0.2.5", rand() % 2700);
		__u32 row, want = FG_ROW_GLOBAL;

		s.sport = 1000 + rand() % 200;
		for (int i = 0; i < 40; i++)
			if (s.dport >= ms[i].dport_lo && s.dport <= ms[i].dport_hi &&
			    s.sport >= ms[i].sport_lo && s.sport <= ms[i].sport_hi) {
				want = i;
				break;
			}
		unmatched += want == FG_ROW_GLOBAL;
		if (dp_outcome_of(&D, &s, &row, NULL) < 0 || row != want)
			wrong++;
	}
	ASSERT_EQ(wrong, 0, "rows differing from a first-match reference scan");
	ASSERT_GE(unmatched, 100, "unmatched packets exercised");
	dp_close(&D);
}

static void test_source_sets_and_prefixes(void)
{
	struct fg_rule r = limit_rule(1, 2);
	struct fg_match m = M_ANY;
	struct pkt_spec s;

	if (setup(1024))
		return;
	r.mask4 = htonl(0xffffff00);	      /* /24 */
	r.mask6[0] = r.mask6[1] = 0xffffffff; /* /64 */
	m.sets = 1u << 3;
	dp_rule(&D, &r, &m, C_ALL);
	ASSERT_OK(dp_pfx(&D, "198.51.100.0/24", FG_LIST_NONE, 1u << 3), "set 3 v4");
	ASSERT_OK(dp_pfx(&D, "2001:db8:5::/48", FG_LIST_NONE, 1u << 3), "set 3 v6");
	dp_apply(&D);

	s = udp4("198.51.100.1", 9);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, NULL), FG_OUT_PASS, "in set, 1st");
	s = udp4("198.51.100.200", 9);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, NULL), FG_OUT_PASS, "same /24, 2nd");
	s = udp4("198.51.100.99", 9);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, NULL), FG_OUT_DROP, "same /24 shares one bucket");
	s = udp4("198.51.101.1", 9);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(dp_outcome_of(&D, &s, NULL, NULL), FG_OUT_PASS,
			  "outside the set: rule does not apply");
	s = udp6("2001:db8:5:1::1", 9);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, NULL), FG_OUT_PASS, "v6 /64 1st");
	s = udp6("2001:db8:5:1:ffff::2", 9);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, NULL), FG_OUT_PASS, "v6 same /64 2nd");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, NULL), FG_OUT_DROP, "v6 same /64 shares a bucket");
	s = udp6("2001:db8:5:2::1", 9);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, NULL), FG_OUT_PASS, "another /64 has its own");
	dp_close(&D);
}

static void test_fragments(void)
{
	struct fg_rule dns = limit_rule(1, 1), frag = limit_rule(1, 3);
	struct fg_match m = udp_ports(0, 65535, 53, 53), f = M_ANY;
	struct pkt_spec s;
	__u32 row;

	if (setup(1024))
		return;
	dp_rule(&D, &dns, &m, 1u << FG_CLASS_UDP);
	f.flags = FG_M_FRAG;
	dp_rule(&D, &frag, &f, C_ALL);
	dp_apply(&D);

	s = (struct pkt_spec){
		.family = 4, .src = "192.0.2.7", .proto = 17, .frag_off = 1480, .payload = 64
	};
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_PASS,
			  "fragment within the fragment rule");
		ASSERT_EQ(row, 1, "charged to the fragment rule, not the port rule");
	}
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_DROP,
		  "fragments are limited, never unmetered");
	ASSERT_GE(dp_row_ev(&D, 1, FG_EV_FRAG), 4, "fragment events counted");
	s = (struct pkt_spec){
		.family = 6, .src = "2001:db8::7", .proto = 17, .frag_off = 8, .payload = 64
	};
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_PASS, "v6 fragment");
	ASSERT_EQ(row, 1, "v6 fragment to the fragment rule");
	/* a first fragment carries ports: it is a normal packet */
	s = (struct pkt_spec){
		.family = 4, .src = "192.0.2.7", .proto = 17, .dport = 53, .frag_mf = 1
	};
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_PASS, "first fragment");
	ASSERT_EQ(row, 0, "first fragment matches the port rule");
	dp_close(&D);
}

/* ---- buckets ------------------------------------------------------------ */

static int burst_of(const struct pkt_spec *s, int max)
{
	int n = 0;

	for (int i = 0; i < max; i++)
		if (dp_send(&D, s) == XDP_PASS)
			n++;
	return n;
}

/* burst_of at the clock moved to now */
static int burst_at(const struct pkt_spec *s, __u64 now, int max)
{
	dp_set_now(&D, now);
	return burst_of(s, max);
}

/*
 * fg_policy.hint4 is only a guess about memory: whatever it names (the
 * matched rule, another rule, a pass rule, a rule past nrules, a value past
 * FG_MAX_RULES), each rule spends its own bucket, to the token. Rule 0
 * (UDP to 53, burst 2) is the UDP class's first entry, so fg_policy_hints
 * names it; rule 1 (all UDP, burst 5) is what a frame to port 9 matches.
 */
static void test_hint_is_only_a_guess(void)
{
	static const struct {
		int keep; /* 0: fg_policy_hints' hint; 1: the value below */
		__u16 udp;
		const char *what;
	} h[] = {
		{ 0, 0, "the apply's hint (rule 0)" },
		{ 1, 0, "no hint" },
		{ 1, 1, "rule 0" },
		{ 1, 2, "rule 1" },
		{ 1, 3, "the pass rule" },
		{ 1, 40, "a rule past nrules" },
		{ 1, 0xffff, "past FG_MAX_RULES" },
	};
	struct fg_rule dns = limit_rule(1, 2), all = limit_rule(1, 5),
		       pass = { .action = FG_ACT_PASS };
	struct fg_match m53 = udp_ports(0, 65535, 53, 53), m = udp_ports(0, 65535, 0, 65535);
	char src[32], what[160];
	struct pkt_spec s;
	__u32 row;

	if (setup(1024))
		return;
	dp_rule(&D, &dns, &m53, 1u << FG_CLASS_UDP);
	dp_rule(&D, &all, &m, 1u << FG_CLASS_UDP);
	dp_rule(&D, &pass, &M_ANY, 1u << FG_CLASS_TCP);
	for (size_t i = 0; i < sizeof(h) / sizeof(h[0]); i++) {
		D.keep_hints = h[i].keep;
		D.pol.hint4[FG_CLASS_UDP] = h[i].udp;
		ASSERT_OK(dp_apply(&D), "apply");
		if (!h[i].keep)
			ASSERT_EQ(D.pol.hint4[FG_CLASS_UDP], 1, "fg_policy_hints names rule 0");
		snprintf(src, sizeof(src), "192.0.2.%zu", 20 + i);
		/* the other rule first: its frames must not spend rule 0's bucket */
		s = udp4(src, 9);
		snprintf(what, sizeof(what), "%s: port 9, rule 1's burst of 5", h[i].what);
		ASSERT_EQ(burst_of(&s, 20), 5, what);
		ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_DROP, what);
		ASSERT_EQ(row, 1, "port 9: rule 1's row");
		s = udp4(src, 53);
		snprintf(what, sizeof(what), "%s: port 53, rule 0's burst of 2", h[i].what);
		ASSERT_EQ(burst_of(&s, 20), 2, what);
		ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_DROP, what);
		ASSERT_EQ(row, 0, "port 53: rule 0's row");
	}
	D.keep_hints = false;
	dp_close(&D);
}

/*
 * fg_policy.whole: when a class's first entry tests nothing, the program
 * tests that entry without reading the index (fg_pidx) first; the entry
 * still decides, so a bit set by mistake costs only the index read after
 * it. As compiled, every UDP frame (any port, IPv6, a non-first fragment)
 * meets rule 0 (all UDP), with the bit and with the scan alike. With the
 * active slot's index emptied, the bit still finds rule 0 and the scan
 * finds nothing: so the program reads the bit, and reads no index then.
 */
static int empty_active_index(void)
{
	struct fg_pidx *x = calloc(1, sizeof(*x));
	struct fg_ctl c;
	int err;

	if (!x)
		return -ENOMEM;
	err = fg_ctl_snapshot(&D.cm, &c);
	if (!err && bpf_map_update_elem(bpf_map__fd(D.skel->maps.fg_pidx), &c.slot, x, 0))
		err = -errno;
	free(x);
	return err;
}

static void test_whole_class_skips_the_index(void)
{
	struct fg_rule all = limit_rule(1, 2), dns = limit_rule(1, 5);
	struct fg_match m = udp_ports(0, 65535, 0, 65535), m53 = udp_ports(0, 65535, 53, 53);
	char a[4][48], what[96];
	__u32 row;

	m.flags = 0; /* all UDP, fragments too: nothing tested */
	if (setup(1024))
		return;
	dp_rule(&D, &all, &m, 1u << FG_CLASS_UDP);
	dp_rule(&D, &dns, &m53, 1u << FG_CLASS_UDP);
	for (int keep = 0; keep < 2; keep++) {
		const char *how = keep ? "the scan" : "whole";

		D.keep_hints = keep;
		D.pol.whole = 0; /* keep: stays clear, the index decides */
		ASSERT_OK(dp_apply(&D), "apply");
		ASSERT_EQ(D.pol.whole, keep ? 0 : 1u << FG_CLASS_UDP, "whole as applied");
		/* fresh sources each pass: a full bucket for each */
		for (int i = 0; i < 3; i++)
			snprintf(a[i], sizeof(a[i]), "192.0.2.%d", 40 + 4 * keep + i);
		snprintf(a[3], sizeof(a[3]), "2001:db8:%d::1", 40 + keep); /* a /64 each */
		struct pkt_spec s[] = {
			udp4(a[0], 9),
			udp4(a[1], 53),
			udp6(a[3], 53),
			{ .family = 4, .src = a[2], .proto = 17, .frag_off = 1480, .payload = 100 },
		};

		for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
			snprintf(what, sizeof(what), "%s, frame %zu: rule 0's burst", how, i);
			ASSERT_EQ(burst_of(&s[i], 20), 2, what);
			snprintf(what, sizeof(what), "%s, frame %zu: then dropped in rule 0's row",
				 how, i);
			ASSERT_EQ(dp_outcome_of(&D, &s[i], &row, NULL), FG_OUT_DROP, what);
			ASSERT_EQ(row, 0, what);
		}
	}
	/* the active slot's index emptied: only the bit still finds rule 0 */
	for (int keep = 0; keep < 2; keep++) {
		struct pkt_spec p9 = udp4(keep ? "192.0.2.51" : "192.0.2.50", 9);

		D.keep_hints = keep;
		D.pol.whole = 0;
		ASSERT_OK(dp_apply(&D), "apply");
		ASSERT_OK(empty_active_index(), "empty the index");
		ASSERT_EQ(dp_outcome_of(&D, &p9, &row, NULL), FG_OUT_PASS, "port 9: passed");
		ASSERT_EQ(row, keep ? FG_ROW_GLOBAL : 0,
			  keep ? "no bit, no index: unmatched, the global row" :
				 "the bit: rule 0, the index not read");
	}
	D.keep_hints = false;
	dp_close(&D);

	/* a whole class whose first rule passes: no set to start, passed */
	if (setup(1024))
		return;
	{
		struct fg_rule pass = { .action = FG_ACT_PASS };
		struct pkt_spec p9 = udp4("192.0.2.60", 9);

		dp_rule(&D, &pass, &m, 1u << FG_CLASS_UDP);
		dp_rule(&D, &all, &m, 1u << FG_CLASS_UDP);
		ASSERT_OK(dp_apply(&D), "apply");
		ASSERT_EQ(D.pol.whole, 1u << FG_CLASS_UDP, "a pass rule first: whole too");
		ASSERT_EQ(D.pol.hint4[FG_CLASS_UDP], 0, "and no hint4");
		ASSERT_EQ(burst_of(&p9, 20), 20, "every frame passed by rule 0");
		ASSERT_EQ(dp_outcome_of(&D, &p9, &row, NULL), FG_OUT_PASS, "still passed");
		ASSERT_EQ(row, 0, "rule 0's row");
	}
	dp_close(&D);
}

static void test_burst_and_refill(void)
{
	struct pkt_spec s = udp4("192.0.2.10", 7);
	__u64 t;

	if (setup_limit(10, 20))
		return;
	t = dp_now(&D);
	ASSERT_EQ(burst_of(&s, 100), 20, "burst exactly 20 at one instant");
	ASSERT_EQ(burst_at(&s, t + 100 * MS, 100), 1, "one token after 100 ms at 10/s");
	ASSERT_EQ(burst_at(&s, t + 350 * MS, 100), 2, "2.5 tokens after 250 ms more: 2");
	ASSERT_EQ(burst_at(&s, t + 400 * MS, 100), 1, "the half token carried over");
	ASSERT_EQ(burst_at(&s, t + 3600 * NS, 100), 20, "an hour idle refills to burst, no more");
	/* time going backwards (a CPU's clock up to a tick behind another's)
	 * counts as zero elapsed */
	ASSERT_EQ(burst_at(&s, t + 3600 * NS - 4 * MS, 100), 0,
		  "clock 4 ms behind the bucket: nothing more");
	ASSERT_EQ(burst_at(&s, t + 3600 * NS + 100 * MS, 100), 1,
		  "then refill resumes from the last tat");
	/* a very long idle period cannot overflow */
	ASSERT_EQ(burst_at(&s, 1ull << 56, 100), 20, "after 2^56 ns: burst again");
	dp_close(&D);
}

/* A reload that raises the rate: the same bucket (rule id and gen kept),
 * no fresh burst, the new rate at once. */
static void test_reload_rate_change(void)
{
	struct pkt_spec s = udp4("192.0.2.12", 7);

	if (setup_limit(10, 20))
		return;
	ASSERT_EQ(burst_of(&s, 100), 20, "burst at 10/s");
	D.pol.rules[0].src = dp_lim(100, 20);
	D.pol.rules[0].ovf = D.pol.rules[0].src;
	ASSERT_OK(dp_apply(&D), "reload at 100/s");
	ASSERT_EQ(burst_of(&s, 100), 0, "kept bucket: no fresh burst");
	ASSERT_EQ(burst_at(&s, dp_now(&D) + 100 * MS, 100), 10,
		  "100 ms at the new 100/s: 10 (1 at the old rate)");
	ASSERT_EQ(dp_count_src4(&D), 1, "one bucket throughout");
	dp_close(&D);
}

static void test_bytes_cost(void)
{
	struct fg_rule r = limit_rule(1000, 3000);
	struct pkt_spec s = udp4("192.0.2.11", 7);
	__u64 t;

	r.cost = FG_COST_BYTES;
	if (setup_one(&r))
		return;
	t = dp_now(&D);
	s.payload = 1000 - 42; /* 1000-byte frames */
	ASSERT_EQ(burst_of(&s, 10), 3, "3000 bytes of burst: three 1000-byte frames");
	ASSERT_EQ(burst_at(&s, t + 500 * MS, 10), 0, "500 bytes refilled: not enough for 1000");
	s.payload = 500 - 42;
	ASSERT_EQ(burst_of(&s, 10), 1, "but enough for one 500-byte frame");
	dp_set_now(&D, t + 10 * NS);
	s.payload = 9000 - 42; /* a jumbo, multi-buffer frame */
	ASSERT_EQ(burst_of(&s, 10), 0, "a 9000-byte frame never fits a 3000-byte burst");
	struct fg_stats st;
	dp_read_stats(&D, 0, &st);
	ASSERT_EQ(st.bytes[FG_OUT_DROP] >= 9000 * 10, 1, "jumbo bytes counted in full");
	dp_close(&D);
}

static void test_aggregate_and_refund(void)
{
	struct fg_rule r = limit_rule(1, 5);
	char src[32];
	int admitted = 0;

	r.agg = dp_lim(1, 10);
	if (setup_one(&r))
		return;
	for (int i = 0; i < 4; i++) {
		struct pkt_spec s;

		snprintf(src, sizeof(src), "192.0.2.%d", 20 + i);
		s = udp4(src, 7);
		admitted += burst_of(&s, 5);
	}
	ASSERT_EQ(admitted, 10, "aggregate burst caps 4 sources x 5");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_AGG_DROP), 10, "aggregate drops counted");
	/* sources 2 and 3 were refused by the aggregate: their own tokens
	 * were given back, so once the aggregate refills they have 5 */
	dp_set_now(&D, dp_now(&D) + 10 * NS);
	struct pkt_spec s = udp4("192.0.2.23", 7);
	ASSERT_EQ(burst_of(&s, 20), 5, "refunded source still has its whole burst");
	dp_close(&D);
}

static void test_shadow_equals_enforce(void)
{
	int dec[2][600];
	int v, out;

	/* 0 enforce; shadow: 1 global (file), 2 rule (file), 3 global
	 * override, 4 rule override */
	for (int mode = 0; mode < 5; mode++) {
		struct fg_rule r = limit_rule(50, 10);

		if (setup(1024))
			return;
		r.agg = dp_lim(200, 30);
		if (mode == 2)
			r.mode = FG_MODE_SHADOW; /* per-rule shadow */
		dp_rule(&D, &r, &M_ANY, C_ALL);
		dp_apply(&D);
		if (mode == 1)
			dp_set_ctl(&D, FG_MODE_SHADOW, 0, 0);
		if (mode == 3)
			ASSERT_OK(fg_switch_mode_ovr(&D.cm, FG_OVR_SHADOW),
				  "global override shadow");
		if (mode == 4)
			ASSERT_OK(fg_switch_rule_ovr(&D.cm, 0, FG_OVR_SHADOW),
				  "rule override shadow");
		srand(7);
		for (int i = 0; i < 600; i++) {
			char src[32];
			struct pkt_spec s;

			snprintf(src, sizeof(src), "192.0.2.%d", rand() % 8);
			s = udp4(src, 7);
			dp_set_now(&D, dp_now(&D) + (rand() % 4) * MS);
			out = dp_outcome_of(&D, &s, NULL, &v);
			if (mode == 0) {
				dec[0][i] = out;
			} else {
				if (v != XDP_PASS) {
					ASSERT_EQ(v, XDP_PASS, "shadow never drops");
					break;
				}
				dec[1][i] = out == FG_OUT_SHADOW ? FG_OUT_DROP : out;
			}
		}
		if (mode) {
			static const char *const what[5] = { "", "global shadow", "rule shadow",
							     "global shadow override",
							     "rule shadow override" };
			char name[96];

			snprintf(name, sizeof(name), "%s decides as enforce", what[mode]);
			ASSERT_EQ(memcmp(dec[0], dec[1], sizeof(dec[0])), 0, name);
		}
		if (mode == 0) {
			int drops = 0;

			for (int i = 0; i < 600; i++)
				drops += dec[0][i] == FG_OUT_DROP;
			ASSERT_GE(drops, 100, "the sequence does exercise drops");
		}
		dp_close(&D);
	}
}

static void test_bypass(void)
{
	struct pkt_spec s = udp4("192.0.2.30", 7);
	struct fg_bucket before, after;
	__u64 t;
	__u32 row;

	if (setup_limit(1, 2))
		return;
	t = dp_now(&D);
	ASSERT_EQ(burst_of(&s, 5), 2, "burst before bypass");
	ASSERT_OK(dp_bucket4(&D, "192.0.2.30", 0, 0, &before), "bucket exists");
	ASSERT_OK(dp_set_ctl(&D, FG_MODE_ENFORCE, 1, 0), "bypass on");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_BYPASS, "bypassed");
	ASSERT_EQ(row, FG_ROW_GLOBAL, "bypass counted globally");
	ASSERT_EQ(burst_of(&s, 100), 100, "everything passes in bypass");
	s.nvlan = 3;
	ASSERT_EQ(burst_of(&s, 10), 10, "even malformed frames pass in bypass");
	s.nvlan = 0;
	ASSERT_OK(dp_bucket4(&D, "192.0.2.30", 0, 0, &after), "bucket still there");
	ASSERT_EQ(after.tat, before.tat, "bypass leaves the bucket untouched");
	ASSERT_EQ(dp_count_src4(&D), 1, "no bucket created in bypass");

	/* timed bypass: ends by itself at its expiry, no daemon involved */
	ASSERT_OK(dp_set_ctl(&D, FG_MODE_ENFORCE, 1, t + 5 * NS), "bypass for 5 s");
	dp_set_now(&D, t + 4 * NS);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, NULL), FG_OUT_BYPASS, "still bypassed at 4 s");
	dp_set_now(&D, t + 5 * NS);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, NULL), FG_OUT_PASS, "enforcing again at 5 s");
	ASSERT_EQ(burst_of(&s, 10), 1, "bucket as it was: 2 tokens after 5 s at 1/s minus one");
	ASSERT_GE(dp_row_ev(&D, 0, FG_EV_BYPASS_EXPIRED), 1,
		  "expired bypass counted (in the row that judged the packet)");
	dp_close(&D);
}

/* The kill switch as the CLI sets it (ctl.h): a live one passes everything
 * untouched and counts it globally; an expired one (its time is now or
 * past) is ignored and counted as such where the packet was judged. */
static void test_bypass_live_and_expired(void)
{
	struct fg_rule drop = { .action = FG_ACT_DROP };
	struct pkt_spec s = udp4("192.0.2.31", 7);
	__u64 t, expired;
	__u32 row;
	int v;

	if (setup_one(&drop))
		return;
	t = dp_now(&D);
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_DROP, "no bypass: the drop rule drops");

	ASSERT_OK(fg_switch_bypass(&D.cm, true, t + NS), "bypass until t + 1 s");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_BYPASS, "live bypass");
	ASSERT_EQ(v, XDP_PASS, "live bypass passes");
	ASSERT_EQ(row, FG_ROW_GLOBAL, "live bypass counted globally");

	expired = dp_row_ev(&D, 0, FG_EV_BYPASS_EXPIRED);
	ASSERT_OK(fg_switch_bypass(&D.cm, true, t - 1), "bypass that ended 1 ns ago");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_DROP, "expired bypass: judged as usual");
	ASSERT_EQ(v, XDP_DROP, "expired bypass drops");
	ASSERT_EQ(row, 0, "in the rule's row");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_BYPASS_EXPIRED), expired + 1, "expired bypass counted");

	ASSERT_OK(fg_switch_bypass(&D.cm, true, t), "bypass that ends now");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_DROP, "a bypass ending now has ended");
	ASSERT_OK(fg_switch_bypass(&D.cm, true, t + 1), "bypass that ends in 1 ns");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_BYPASS, "re-armed over an expired one");
	ASSERT_OK(fg_switch_bypass(&D.cm, true, 0), "bypass until switched off");
	dp_set_now(&D, t + 3600 * NS);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_BYPASS,
		  "no expiry: still on an hour later");

	expired = dp_row_ev(&D, 0, FG_EV_BYPASS_EXPIRED);
	ASSERT_OK(fg_switch_bypass(&D.cm, false, 0), "bypass off");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_DROP, "off: judged as usual");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_BYPASS_EXPIRED), expired, "off is not an expired bypass");
	dp_close(&D);
}

/*
 * Which mode judges a rule's packets: global override x the file's global
 * mode x rule override x the rule's file mode, each set the way floodgate
 * sets it (ctl.h for fg_ctl, the policy for the rule's mode). A drop rule
 * shows the mode in the counters: shadow counts would-drop and passes,
 * enforce drops. A denylisted source shows the global mode alone. Rule ids
 * 5 and 100: one in each word of the override bitmaps.
 */
static void test_mode_overrides(void)
{
	/* columns: (rule override, rule mode) = (none, E) (none, S) (enforce, E)
	 * (enforce, S) (shadow, E) (shadow, S); deny: the global mode */
	static const struct {
		__u32 govr, file;
		const char *rules, deny;
	} rows[] = {
		{ FG_OVR_NONE, FG_MODE_ENFORCE, "ESEESS", 'E' },
		{ FG_OVR_NONE, FG_MODE_SHADOW, "SSSSSS", 'S' },
		{ FG_OVR_ENFORCE, FG_MODE_ENFORCE, "ESEESS", 'E' },
		{ FG_OVR_ENFORCE, FG_MODE_SHADOW, "ESEESS", 'E' },
		{ FG_OVR_SHADOW, FG_MODE_ENFORCE, "SSSSSS", 'S' },
		{ FG_OVR_SHADOW, FG_MODE_SHADOW, "SSSSSS", 'S' },
	};
	static const __u32 rovr[6] = { FG_OVR_NONE,    FG_OVR_NONE,   FG_OVR_ENFORCE,
				       FG_OVR_ENFORCE, FG_OVR_SHADOW, FG_OVR_SHADOW };
	static const __u32 rmode[6] = { FG_MODE_ENFORCE, FG_MODE_SHADOW,  FG_MODE_ENFORCE,
					FG_MODE_SHADOW,	 FG_MODE_ENFORCE, FG_MODE_SHADOW };
	static const char *const ovr_name[3] = { "none", "enforce", "shadow" };
	static const __u16 ids[2] = { 5, 100 };
	struct fg_rule drop = { .action = FG_ACT_DROP };
	struct pkt_spec s = udp4("192.0.2.40", 7), deny = udp4("10.66.0.1", 7);
	int cases = 0;

	if (setup(1024))
		return;
	for (int n = 0; n < 2; n++) {
		__u16 id = ids[n];

		dp_pol_reset(&D);
		dp_rule_id(&D, &drop, &M_ANY, C_ALL, id);
		if (!ASSERT_OK(dp_pfx(&D, "10.66.0.0/16", FG_LIST_DENY, 0), "deny 10.66/16"))
			break;
		for (int c = 0; c < 6; c++) {
			D.pol.rules[0].mode = rmode[c];
			ASSERT_OK(dp_apply(&D), "policy with the rule's mode");
			ASSERT_OK(fg_switch_rule_ovr(&D.cm, id, rovr[c]), "rule override");
			for (size_t g = 0; g < sizeof(rows) / sizeof(rows[0]); g++) {
				char name[160];
				int want = rows[g].rules[c] == 'S' ? FG_MODE_SHADOW :
								     FG_MODE_ENFORCE;
				__u32 row = 0, m = 99;
				int v, out;

				ASSERT_OK(fg_switch_file_mode(&D.cm, rows[g].file), "file mode");
				ASSERT_OK(fg_switch_mode_ovr(&D.cm, rows[g].govr),
					  "global override");
				snprintf(
					name, sizeof(name),
					"rule id %u: global override %s, file %s, rule override %s, rule %s",
					id, ovr_name[rows[g].govr],
					rows[g].file ? "shadow" : "enforce", ovr_name[rovr[c]],
					rmode[c] ? "shadow" : "enforce");
				out = dp_outcome_of(&D, &s, &row, &v);
				ASSERT_EQ(out, want == FG_MODE_SHADOW ? FG_OUT_SHADOW : FG_OUT_DROP,
					  name);
				ASSERT_EQ(v, want == FG_MODE_SHADOW ? XDP_PASS : XDP_DROP, name);
				ASSERT_EQ(row, id, name);
				ASSERT_OK(fg_ctl_rule_mode(&D.cm, id, rmode[c], &m), name);
				ASSERT_EQ(m, want, "ctl.h says what the program does");
				cases++;
				if (c)
					continue;
				want = rows[g].deny == 'S' ? FG_MODE_SHADOW : FG_MODE_ENFORCE;
				/* in shadow, its twin deny_shadow (ABI 8; deny before) */
				ASSERT_EQ(dp_outcome_of(&D, &deny, &row, &v),
					  want == FG_MODE_SHADOW ? FG_OUT_DENY_SHADOW : FG_OUT_DENY,
					  name);
				ASSERT_EQ(v, want == FG_MODE_SHADOW ? XDP_PASS : XDP_DROP,
					  "denylisted: the global mode alone");
				ASSERT_OK(fg_ctl_global_mode(&D.cm, &m), "global mode");
				ASSERT_EQ(m, want, "ctl.h's global mode is the program's");
			}
		}
		/* cleared overrides: the file decides again (the stale shadow
		 * bit left by "none" is not read) */
		D.pol.rules[0].mode = FG_MODE_ENFORCE;
		ASSERT_OK(dp_apply(&D), "rule back to enforce in the file");
		ASSERT_OK(fg_switch_file_mode(&D.cm, FG_MODE_ENFORCE), "file enforce");
		ASSERT_OK(fg_switch_mode_ovr(&D.cm, FG_OVR_NONE), "global override cleared");
		ASSERT_OK(fg_switch_rule_ovr(&D.cm, id, FG_OVR_SHADOW), "rule override shadow");
		ASSERT_EQ(dp_outcome_of(&D, &s, NULL, NULL), FG_OUT_SHADOW, "rule override shadow");
		ASSERT_OK(fg_switch_rule_ovr(&D.cm, id, FG_OVR_NONE), "rule override cleared");
		ASSERT_EQ(dp_outcome_of(&D, &s, NULL, NULL), FG_OUT_DROP,
			  "cleared: the file's enforce");
		/* apply forgets the override of an id it hands to a new rule */
		ASSERT_OK(fg_switch_rule_ovr(&D.cm, id, FG_OVR_SHADOW),
			  "rule override shadow again");
		__u64 mask[FG_OVR_WORDS] = {};

		mask[id / 64] = 1ull << (id % 64);
		ASSERT_OK(fg_switch_clear_rule_ovr_ids(&D.cm, mask), "clear the id's override");
		ASSERT_EQ(dp_outcome_of(&D, &s, NULL, NULL), FG_OUT_DROP,
			  "forgotten: the file's enforce");
	}
	ASSERT_EQ(cases, 72, "every combination, both ids");
	dp_close(&D);
}

/* FG_MAX_RULES copies of r: rule i on UDP port 1000 + i, with id base + i. */
static void rules_per_port(const struct fg_rule *r, int base)
{
	for (int i = 0; i < FG_MAX_RULES; i++) {
		struct fg_match m = udp_ports(0, 65535, 1000 + i, 1000 + i);

		dp_rule_id(&D, r, &m, 1u << FG_CLASS_UDP, (__u16)(base + i));
	}
}

/* Four frames from 192.0.2.60 to each port of rules_per_port. */
static void four_to_each_port(void)
{
	for (int i = 0; i < FG_MAX_RULES; i++) {
		struct pkt_spec s = udp4("192.0.2.60", 1000 + i);

		for (int k = 0; k < 4; k++)
			dp_send(&D, &s);
	}
}

/*
 * A reload that replaces every rule at once (item 9): policy A has 64
 * rules with ids 0..63; policy B, 64 new rules with ids 64..127, what
 * apply gives them while A's ids stay in use until the flip. B counts in
 * rows and buckets of its own: aggregate buckets A exhausted do not limit
 * it, its sources without a bucket go to overflow buckets of its own ids,
 * and A's rows do not move.
 */
static void test_ids_64_to_127(void)
{
	struct fg_rule r = { .action = FG_ACT_LIMIT };
	struct fg_stats st;
	struct fg_bucket b;
	char name[96];

	if (setup(1024))
		return;
	r.agg = dp_lim(1, 3);
	rules_per_port(&r, 0);
	ASSERT_OK(dp_apply(&D), "policy A: ids 0..FG_MAX_RULES-1");
	four_to_each_port();
	for (int i = 0; i < FG_MAX_RULES; i++) {
		snprintf(name, sizeof(name), "A: row %d", i);
		ASSERT_OK(dp_read_stats(&D, i, &st), name);
		ASSERT_EQ(st.pkts[FG_OUT_PASS], 3, name);
		ASSERT_EQ(st.pkts[FG_OUT_DROP], 1, name);
	}

	dp_pol_reset(&D);
	r = limit_rule(1, 2);
	r.agg = dp_lim(1, 3);
	r.ovf = dp_lim(1, 2);
	r.gen = 1;
	rules_per_port(&r, FG_MAX_RULES);
	D.pol.ins.inc = 1; /* no new source gets a bucket: all go to overflow */
	D.pol.ins.tau = 0;
	ASSERT_OK(dp_apply(&D), "policy B: ids FG_MAX_RULES..2 * FG_MAX_RULES - 1, every rule new");
	four_to_each_port();
	for (int i = 0; i < FG_MAX_RULES; i++) {
		int id = FG_MAX_RULES + i;

		snprintf(name, sizeof(name), "B: row %d", id);
		ASSERT_OK(dp_read_stats(&D, id, &st), name);
		ASSERT_EQ(st.pkts[FG_OUT_PASS], 2, name); /* overflow burst 2, fresh aggregate */
		ASSERT_EQ(st.pkts[FG_OUT_DROP], 2, name);
		ASSERT_EQ(st.ev[FG_EV_OVERFLOW], 4, name);
		snprintf(name, sizeof(name), "B: id %d's aggregate and overflow buckets", id);
		ASSERT_OK(dp_agg(&D, FG_AGG_IDX(id), &b), name);
		ASSERT_NEQ(b.tat, 0, name);
		ASSERT_OK(dp_agg(&D, FG_OVF_IDX(id), &b), name);
		ASSERT_NEQ(b.tat, 0, name);
		snprintf(name, sizeof(name), "A: row %d unchanged, overflow bucket unused", i);
		ASSERT_OK(dp_read_stats(&D, i, &st), name);
		ASSERT_EQ(st.pkts[FG_OUT_PASS] + st.pkts[FG_OUT_DROP], 4, name);
		ASSERT_OK(dp_agg(&D, FG_OVF_IDX(i), &b), name);
		ASSERT_EQ(b.tat, 0, name);
	}
	ASSERT_EQ(dp_row_pkts(&D, FG_ROW_GLOBAL, FG_OUT_PASS), 0, "nothing fell to the global row");

	/* a per-source bucket keyed by id 127 */
	dp_pol_reset(&D);
	r = limit_rule(1, 2);
	r.gen = 1;
	dp_rule_id(&D, &r, &M_ANY, C_ALL, FG_MAX_IDS - 1);
	ASSERT_OK(dp_apply(&D), "policy C: one rule, the last id");
	struct pkt_spec s = udp4("192.0.2.61", 7);
	__u64 before = dp_row_pkts(&D, FG_MAX_IDS - 1, FG_OUT_PASS);

	ASSERT_EQ(burst_of(&s, 5), 2, "the last id: its own burst");
	ASSERT_OK(dp_bucket4(&D, "192.0.2.61", FG_MAX_IDS - 1, 1, &b),
		  "source bucket of the last id");
	ASSERT_EQ(dp_bucket4(&D, "192.0.2.61", (FG_MAX_IDS - 1) & (FG_MAX_RULES - 1), 1, &b),
		  -ENOENT, "not of the id FG_MAX_RULES below");
	ASSERT_EQ(dp_row_pkts(&D, FG_MAX_IDS - 1, FG_OUT_PASS) - before, 2,
		  "the last id's row counts it");
	dp_close(&D);
}

/* Item 2: the prefix tries are sized in the map definitions, for both
 * slots of the largest policy, whatever the loader does, and spend memory
 * per entry. */
static void test_prefix_tries_sized(void)
{
	struct bpf_map *tries[2];

	if (setup(1024))
		return;
	tries[0] = D.skel->maps.fg_pfx4;
	tries[1] = D.skel->maps.fg_pfx6;
	for (int f = 0; f < 2; f++) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);

		if (!ASSERT_OK(bpf_obj_get_info_by_fd(bpf_map__fd(tries[f]), &info, &len),
			       "map info"))
			continue;
		ASSERT_EQ(info.max_entries, FG_PFX_ENTRIES,
			  f ? "fg_pfx6 entries" : "fg_pfx4 entries");
		ASSERT_EQ(info.max_entries, 2 * FG_MAX_PREFIXES,
			  "room for both slots of the largest policy");
		ASSERT_TRUE(info.map_flags & BPF_F_NO_PREALLOC, "memory per entry");
	}
	dp_close(&D);
}

/* The same, filled: FG_MAX_PREFIXES IPv4 prefixes in each slot fit, one
 * more does not, and both slots answer. About 6 s and 270 MB of kernel
 * memory: game day only. */
static void test_prefix_tries_full(void)
{
	int fd, err = 0;
	__u32 n = 0;

	if (!getenv("FG_GAMEDAY")) {
		fg_test_skip(
			"fills fg_pfx4 with 2^21 prefixes (~6 s, ~270 MB): FG_GAMEDAY=1 runs it");
		return;
	}
	if (setup(1024))
		return;
	fd = bpf_map__fd(D.skel->maps.fg_pfx4);
	for (__u32 slot = 0; slot < 2 && !err; slot++)
		for (__u32 i = 0; i < FG_MAX_PREFIXES && !err; i++) {
			struct fg_lpm4 k = { .prefixlen = 64,
					     .slot = slot,
					     .addr = htonl(0x0a000000u + i) };
			struct fg_pfx v = { .list = FG_LIST_DENY };

			err = bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST) ? -errno : 0;
			n += !err;
		}
	ASSERT_OK(err, "2 x FG_MAX_PREFIXES prefixes");
	ASSERT_EQ(n, FG_PFX_ENTRIES, "all of them");
	struct fg_lpm4 k = { .prefixlen = 64, .slot = 1, .addr = htonl(0x0b000000u) };
	struct fg_pfx v = { .list = FG_LIST_DENY };

	ASSERT_EQ(bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST) ? -errno : 0, -ENOSPC,
		  "one more is refused");
	k.slot = 0;
	k.addr = htonl(0x0a000000u + FG_MAX_PREFIXES - 1);
	ASSERT_OK(bpf_map_lookup_elem(fd, &k, &v) ? -errno : 0, "slot 0's last prefix");
	k.slot = 1;
	k.addr = htonl(0x0a000000u);
	ASSERT_OK(bpf_map_lookup_elem(fd, &k, &v) ? -errno : 0, "slot 1's first prefix");
	dp_close(&D);
}

/* IPv6: fg_src6 behind the admission limit. An admission bucket that
 * never admits leaves every new source without a bucket of its own. */
static void test_table_full_v6(void)
{
	struct pkt_spec s;
	int v;

	for (int mode = 0; mode < 3; mode++) {
		struct fg_rule r = limit_rule(1, 2);

		if (setup(1024))
			return;
		r.on_full = mode; /* overflow, open, closed */
		r.ovf = dp_lim(1, 3);
		dp_rule(&D, &r, &M_ANY, C_ALL);
		D.pol.ins.inc = 1;
		D.pol.ins.tau = 0;
		dp_apply(&D);
		int passed = 0;

		for (int i = 0; i < 10; i++) {
			char src[64];

			snprintf(src, sizeof(src), "2001:db8:%x::1", 100 + i);
			s = udp6(src, 7);
			if (dp_outcome_of(&D, &s, NULL, &v) == FG_OUT_PASS)
				passed++;
		}
		ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_INSERT_LIMITED), 10, "insert refusals counted");
		ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_INSERT), 0, "no source got a bucket");
		dp_check_on_full(&D, "v6, all refused", mode, passed, 10, 0, 10, 3);
		dp_close(&D);
	}
}

/* IPv4: the set-associative table. 4,000 sources each leave a bucket that
 * is not full into a 1,024-way table: later ones find their set full and
 * are charged per on_full; once the buckets have refilled, their ways are
 * reused (idle buckets expire without any sweeper). */
static void test_table_full_v4(void)
{
	uint8_t buf[512];
	struct pkt_spec sp = udp4("198.18.0.1", 7);
	int len = pkt_build(&sp, buf, sizeof(buf));

	for (int mode = 0; mode < 3; mode++) {
		struct fg_rule r = limit_rule(1, 2);
		__u64 passed = 0, fails, inserts;

		if (setup(1024))
			return;
		r.on_full = mode;
		r.ovf = dp_lim(1, 3);
		dp_rule(&D, &r, &M_ANY, C_ALL);
		dp_apply(&D);
		for (__u32 i = 0; i < 4000; i++) {
			__u32 ret, a = htonl(0xc6120000u + i);

			memcpy(buf + 14 + 12, &a, 4);
			dp_run(&D, buf, len, &ret);
			passed += ret == XDP_PASS;
		}
		fails = dp_row_ev(&D, 0, FG_EV_INSERT_FAIL);
		inserts = dp_row_ev(&D, 0, FG_EV_INSERT);
		ASSERT_EQ(inserts, dp_count_src4(&D), "every insert holds a way");
		ASSERT_LE(inserts, 1024, "never more buckets than ways");
		ASSERT_GE(inserts, 700, "the table filled up (sets fill unevenly)");
		ASSERT_EQ(inserts + fails, 4000, "each source either got a way or was counted");
		dp_check_on_full(&D, "v4, set full", mode, passed, 4000, inserts, fails, 3);
		/* 10 s later every bucket is full again: new sources take ways
		 * (200 over 128 sets: none gets more than its 8 ways) */
		dp_set_now(&D, dp_now(&D) + 10 * NS);
		for (__u32 i = 0; i < 200; i++) {
			__u32 ret, a = htonl(0xc6130000u + i);

			memcpy(buf + 14 + 12, &a, 4);
			dp_run(&D, buf, len, &ret);
		}
		ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_INSERT_FAIL), fails, "refilled buckets make room");
		ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_INSERT), inserts + 200,
			  "200 new sources got ways");
		dp_close(&D);
	}
}

/* ---- counters add up ---------------------------------------------------- */

static void test_counters_add_up(void)
{
	__u64 sent[FG_NROWS] = { 0 };
	struct fg_rule a = limit_rule(1, 2), b = limit_rule(1, 2), p = { .action = FG_ACT_PASS };
	struct fg_match ma = udp_ports(0, 65535, 53, 53), mb = M_ANY;

	if (setup(1024))
		return;
	dp_rule(&D, &a, &ma, 1u << FG_CLASS_UDP);
	mb.proto = 6;
	dp_rule(&D, &b, &mb, 1u << FG_CLASS_TCP);
	dp_rule(&D, &p, &M_ANY, 1u << FG_CLASS_ICMP);
	dp_pfx(&D, "10.9.0.0/16", FG_LIST_DENY, 0);
	dp_apply(&D);
	srand(11);
	for (int i = 0; i < 2000; i++) {
		char src[32];
		struct pkt_spec s;
		int k = rand() % 6;
		__u32 row = FG_ROW_GLOBAL;

		snprintf(src, sizeof(src), "%s.%d", k == 5 ? "10.9.0" : "192.0.2", rand() % 50);
		switch (k) {
		case 0:
			s = udp4(src, 53);
			row = 0;
			break;
		case 1:
			s = (struct pkt_spec){ .family = 4, .src = src, .proto = 6, .dport = 80 };
			row = 1;
			break;
		case 2:
			s = (struct pkt_spec){ .family = 4, .src = src, .proto = 1, .icmp_type = 8 };
			row = 2;
			break;
		case 3:
			s = udp4(src, 54);
			break;
		case 4:
			s = (struct pkt_spec){ .family = 4, .src = src, .proto = 17, .nvlan = 3 };
			break;
		default:
			s = udp4(src, 53);
			break; /* denied */
		}
		dp_set_now(&D, dp_now(&D) + (rand() % 3) * MS);
		if (dp_send(&D, &s) < 0)
			break;
		sent[row]++;
	}
	for (__u32 row = 0; row < FG_NROWS; row++) {
		struct fg_stats st;
		__u64 sum = 0;
		char name[64];

		dp_read_stats(&D, row, &st);
		for (int o = 0; o < FG_OUT_MAX; o++)
			sum += st.pkts[o];
		snprintf(name, sizeof(name), "row %u: seen == sum of outcomes", row);
		ASSERT_EQ(sum, sent[row], name);
	}
	ASSERT_GE(dp_row_pkts(&D, 0, FG_OUT_DROP), 1, "rule 0 dropped some");
	ASSERT_GE(dp_row_pkts(&D, 1, FG_OUT_DROP), 1, "rule 1 dropped some");
	dp_close(&D);
}

/* ---- two CPUs on one key ------------------------------------------------ */

struct hammer {
	int cpu;
	uint8_t pkt[512];
	int len;
	__u32 repeat;
	volatile int *stop;
	__u64 steps;
	int err;
};

static pthread_barrier_t step_bar;

static void *lockstep_fn(void *arg)
{
	struct hammer *h = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(h->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		h->err = -errno;
	/* repeat = 1 per call: with repeat > 1 the kernel re-points the XDP
	 * dispatcher around the run, an RCU grace period (~60 ms) per call */
	for (__u64 k = 0; k < h->steps; k++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = h->pkt, .data_size_in = h->len,
			    .repeat = 1);

		pthread_barrier_wait(&step_bar);
		for (__u32 i = 0; i < h->repeat && !h->err; i++)
			if (bpf_prog_test_run_opts(D.prog, &o))
				h->err = -errno;
		pthread_barrier_wait(&step_bar);
	}
	return NULL;
}

static void *hammer_fn(void *arg)
{
	struct hammer *h = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(h->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		h->err = -errno;
		return NULL;
	}
	do {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = h->pkt, .data_size_in = h->len,
			    .repeat = h->repeat);
		h->err = bpf_prog_test_run_opts(D.prog, &o);
		if (h->err)
			break;
	} while (h->stop && !*h->stop);
	return NULL;
}

static void test_two_cpus_one_key(void)
{
	struct hammer h[2];
	pthread_t th[2];
	struct pkt_spec s = udp4("192.0.2.40", 7);
	struct fg_stats st;
	const __u64 burst = 100000, per_cpu = 400000;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fg_test_skip("needs 2 online CPUs, this machine has 1");
		return;
	}
	/* frozen time: exactly the burst is admitted, however the CPUs race */
	if (setup_limit(1000, burst))
		return;
	for (int i = 0; i < 2; i++) {
		memset(&h[i], 0, sizeof(h[i]));
		h[i].cpu = i;
		h[i].len = pkt_build(&s, h[i].pkt, sizeof(h[i].pkt));
		h[i].repeat = per_cpu;
		pthread_create(&th[i], NULL, hammer_fn, &h[i]);
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		ASSERT_OK(h[i].err, "test run on a pinned CPU");
	}
	dp_read_stats(&D, 0, &st);
	ASSERT_EQ(st.pkts[FG_OUT_PASS], burst, "two CPUs admit exactly the burst");
	ASSERT_EQ(st.pkts[FG_OUT_DROP], 2 * per_cpu - burst, "the rest dropped");
	/* a CAS that loses FG_MAX_CAS races in a row drops its packet (and
	 * counts it); exactness above holds regardless, and it stays rare */
	ASSERT_LE(st.ev[FG_EV_CONTENDED], per_cpu / 10000, "CAS give-ups are rare");
	printf("  frozen clock: %llu admitted of %llu, burst %llu, %llu CAS give-ups\n",
	       (unsigned long long)st.pkts[FG_OUT_PASS], (unsigned long long)(2 * per_cpu),
	       (unsigned long long)burst, (unsigned long long)st.ev[FG_EV_CONTENDED]);
	dp_close(&D);

	/* moving time: admitted == burst + rate * elapsed, within one packet.
	 * Lockstep: the clock advances 1 ms, then both CPUs flood the key at
	 * once (3x what the step refills), then the next step. */
	const double rate = 100000;
	const __u64 b2 = 1000, steps = 300;

	if (setup_limit(rate, b2))
		return;
	__u64 t0 = dp_now(&D);
	pthread_barrier_init(&step_bar, NULL, 3);
	for (int i = 0; i < 2; i++) {
		h[i].repeat = 300;
		h[i].steps = steps + 1;
		pthread_create(&th[i], NULL, lockstep_fn, &h[i]);
	}
	for (__u64 k = 0; k <= steps; k++) {
		dp_set_now(&D, t0 + k * MS);
		pthread_barrier_wait(&step_bar); /* go */
		pthread_barrier_wait(&step_bar); /* both done */
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		ASSERT_OK(h[i].err, "lockstep run");
	}
	pthread_barrier_destroy(&step_bar);
	dp_read_stats(&D, 0, &st);
	double expect = b2 + rate * (double)(steps * MS) / 1e9;
	printf("  moving clock: %llu admitted, expected %.0f (burst %llu + %.0f/s x %.3f s), %llu dropped\n",
	       (unsigned long long)st.pkts[FG_OUT_PASS], expect, (unsigned long long)b2, rate,
	       (double)(steps * MS) / 1e9, (unsigned long long)st.pkts[FG_OUT_DROP]);
	ASSERT_LE(llabs((long long)st.pkts[FG_OUT_PASS] - (long long)expect), 1,
		  "two CPUs, moving clock: within one packet");
	ASSERT_GE(st.pkts[FG_OUT_DROP], 4 * st.pkts[FG_OUT_PASS], "the flood was 5x the rate");
	dp_close(&D);
}

/* ---- the eviction invariant --------------------------------------------- */

/* The spray tests' program: a 4,096-source table, one rule of 10/s with
 * burst 20 (T_refill = 2 s) for every packet and, with_admission, the
 * admission limit for that table; applied. */
static int setup_spray(int with_admission)
{
	const __u32 table = 4096;
	struct fg_rule r = limit_rule(10, 20);

	if (setup(table))
		return -1;
	dp_rule(&D, &r, &M_ANY, C_ALL);
	if (with_admission && !ASSERT_OK(dp_set_admission(&D, table), "admission limit")) {
		dp_close(&D);
		return -1;
	}
	dp_apply(&D);
	return 0;
}

/* Throttle S, spray `spray` spoofed sources over `over_ns`, resume S at
 * once: how many does S get? Both families: the set-associative tables
 * (which evict only full buckets), with or without the admission limit;
 * *refused counts the spray's sources that got no way (set full or
 * admission). */
static int eviction_run(int family, int with_admission, int spray, __u64 over_ns, __u64 *refused)
{
	struct pkt_spec s = family == 4 ? udp4("192.0.2.77", 7) : udp6("2001:db8:77::1", 7);
	struct pkt_spec sp = family == 4 ? udp4("198.18.0.1", 7) : udp6("2001:db8:1::1", 7);
	uint8_t buf[512];
	__u64 t;
	int got;

	if (setup_spray(with_admission))
		return -1;
	t = dp_now(&D);
	if (burst_of(&s, 40) != 20)
		fg_test_fail(__FILE__, __LINE__, "S should first get its burst of 20");
	/* spray: random spoofed sources (198.18.0.0/15, 2001:db8::/32) */
	int len = pkt_build(&sp, buf, sizeof(buf));
	int off = family == 4 ? 14 + 12 : 14 + 8 + 4;
	srand(5);
	for (int i = 0; i < spray; i++) {
		__u32 ret, a = htonl((family == 4 ? 0xc6120000u : 0) | (rand() & 0x1ffff));

		memcpy(buf + off, &a, 4);
		dp_set_now(&D, t + over_ns * (__u64)i / spray);
		dp_run(&D, buf, len, &ret);
	}
	dp_set_now(&D, t + over_ns);
	got = burst_of(&s, 40);
	*refused = dp_row_ev(&D, 0, FG_EV_INSERT_FAIL) + dp_row_ev(&D, 0, FG_EV_INSERT_LIMITED);
	dp_close(&D);
	return got;
}

/* A client sending every 150 ms (within its 10/s) keeps its IPv4 way
 * through a spoofed spray of 53,000 new sources per second: the admission
 * limit bounds the churn and each set evicts its oldest full bucket first.
 * Without the limit the spray pushes the client into the (exhausted)
 * overflow bucket: the control shows the test can see that. */
static int client_under_spray(int with_admission, __u64 *limited)
{
	struct pkt_spec c = udp4("192.0.2.88", 7), sp = udp4("198.18.0.1", 7);
	uint8_t cbuf[512], buf[512];
	int clen, len, ok = 0;
	__u64 t;

	if (setup_spray(with_admission))
		return -1;
	clen = pkt_build(&c, cbuf, sizeof(cbuf));
	len = pkt_build(&sp, buf, sizeof(buf));
	t = dp_now(&D);
	srand(9);
	for (int k = 0; k < 100; k++) {
		__u32 ret;

		dp_set_now(&D, t + (__u64)k * 150 * MS);
		dp_run(&D, cbuf, clen, &ret);
		ok += ret == XDP_PASS;
		for (int i = 0; i < 8000; i++) {
			__u32 a = htonl(0xc6120000u | (rand() & 0x1ffff));

			memcpy(buf + 14 + 12, &a, 4);
			dp_set_now(&D, t + (__u64)k * 150 * MS + (__u64)i * 18750);
			dp_run(&D, buf, len, &ret);
		}
	}
	*limited = dp_row_ev(&D, 0, FG_EV_INSERT_LIMITED);
	dp_close(&D);
	return ok;
}

static void test_client_keeps_way_under_spray(void)
{
	__u64 limited;
	int ok;

	ok = client_under_spray(1, &limited);
	printf("  with admission limit: client passed %d of 100, %llu spoofed keys refused\n", ok,
	       (unsigned long long)limited);
	ASSERT_EQ(ok, 100, "the client keeps its way and all its packets pass");
	ASSERT_GE(limited, 700000, "the spray was mostly refused keys");
	ok = client_under_spray(0, &limited);
	printf("  control, no admission limit: client passed %d of 100\n", ok);
	ASSERT_LE(ok, 90, "control: unbounded churn evicts the client");
}

static void test_eviction_invariant(void)
{
	/* a spray of 10x the table within 1 s (half of S's refill time) */
	static const struct {
		int family, admission;
		const char *name, *table, *refused_what, *fill_check;
		__u64 min_refused;
	} c[] = {
		{ 4, 0, "IPv4", "IPv4 set-associative", "sources found their set full",
		  "the spray did fill the table", 5000 },
		/* the set-associative fg_src6 with the admission limit */
		{ 6, 1, "IPv6", "IPv6 set-associative + admission limit", "new keys refused",
		  "the spray was refused keys", 30000 },
		/* without the admission limit: as IPv4, the invariant holds by
		 * construction (an LRU hash here handed S a fresh burst of 20) */
		{ 6, 0, "IPv6, no admission limit", "IPv6 set-associative, no admission limit",
		  "sources found their set full", "the spray did fill the table", 5000 },
	};
	__u64 refused = 0;
	char name[160];
	int got;

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		got = eviction_run(c[i].family, c[i].admission, 40960, 1 * NS, &refused);
		printf("  %s: S got %d after the spray (1 s of refill at 10/s = 10), %llu %s\n",
		       c[i].table, got, (unsigned long long)refused, c[i].refused_what);
		snprintf(name, sizeof(name), "%s: no fresh burst for the throttled source",
			 c[i].name);
		ASSERT_LE(got, 10, name);
		snprintf(name, sizeof(name), "%s: and its refill is intact", c[i].name);
		ASSERT_GE(got, 9, name);
		snprintf(name, sizeof(name), "%s: %s", c[i].name, c[i].fill_check);
		ASSERT_GE(refused, c[i].min_refused, name);
	}

	/* a long spray (5 s > 2 s refill): S is full by then anyway, so it
	 * gets the burst it would have had, never more */
	got = eviction_run(4, 0, 40960, 5 * NS, &refused);
	ASSERT_EQ(got, 20, "IPv4, after a refill period: exactly the burst");
	got = eviction_run(6, 1, 40960, 5 * NS, &refused);
	ASSERT_EQ(got, 20, "IPv6, after a refill period: exactly the burst");
}

/* ---- fleet leases (docs/fleet.md section 5) ------------------------------ */

static struct fg_rule fleet_rule(void)
{
	return (struct fg_rule){ .action = FG_ACT_LIMIT, .fleet = 1 };
}

static const struct fg_limit no_local;

/* Sends n frames from 8 sources; how many passed. */
static int spread_of(const struct pkt_spec *tmpl, int n)
{
	int passed = 0;

	for (int i = 0; i < n; i++) {
		struct pkt_spec s = *tmpl;
		char src[32];

		snprintf(src, sizeof(src), "198.51.100.%d", 1 + i % 8);
		s.src = src;
		passed += dp_send(&D, &s) == XDP_PASS;
	}
	return passed;
}

/* A lease of N tokens admits exactly N, then drops, counted; a rule
 * without fleet: never looks at the lease. */
static void test_fleet_lease_exact(void)
{
	struct fg_rule r = fleet_rule(), plain = limit_rule(1000, 1000);
	struct pkt_spec s = udp4("198.51.100.1", 7), s9 = udp4("198.51.100.1", 9);
	struct fg_stats st;
	__u64 t;

	if (setup(1024))
		return;
	rules_by_port(&r, 7, &plain, 9);
	dp_lease_init(&D, 0, 0, FG_LOSS_CLOSED, no_local);
	ASSERT_OK(dp_apply(&D), "apply");
	t = dp_now(&D);
	ASSERT_EQ(spread_of(&s, 3), 0, "entry written, no lease yet: on_loss closed");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_FLEET_LOSS), 3, "decided under on_loss");
	dp_lease_renew(&D, 0, 50, t + 400 * MS, 3);
	ASSERT_EQ(spread_of(&s, 80), 50, "a lease of 50 admits exactly 50 of 80");
	dp_read_stats(&D, 0, &st);
	ASSERT_EQ(st.pkts[FG_OUT_PASS], 50, "passed");
	ASSERT_EQ(st.pkts[FG_OUT_DROP], 33, "dropped (30 + 3 before the lease)");
	ASSERT_EQ(st.ev[FG_EV_FLEET_DROP], 30, "FG_EV_FLEET_DROP per drop after the lease");
	ASSERT_EQ(st.ev[FG_EV_FLEET_LOSS], 3, "no on_loss decision while the lease runs");
	ASSERT_EQ(st.fleet_offered, 83, "fleet_offered counts every frame at the fleet check");
	ASSERT_EQ(st.fleet_unleased, 0, "nothing admitted outside the lease");
	ASSERT_EQ(D.lease[0].tokens, 0, "the lease is spent to 0, not below");
	dp_lease_renew(&D, 0, 20, t + 600 * MS, 3);
	ASSERT_EQ(spread_of(&s, 30), 20, "a grant of 20 more admits 20");
	ASSERT_EQ(spread_of(&s9, 30), 30, "the rule without fleet: its own limit only");
	dp_read_stats(&D, 1, &st);
	ASSERT_EQ(st.fleet_offered + st.ev[FG_EV_FLEET_DROP] + st.ev[FG_EV_FLEET_LOSS], 0,
		  "a rule without fleet counts nothing fleet");
	ASSERT_EQ(D.lease[1].tokens + (__s64)D.lease[1].lease_expires, 0,
		  "and its lease entry is untouched");
	dp_close(&D);

	/* bytes: the lease is in the rule's unit */
	r.cost = FG_COST_BYTES;
	if (setup_with(&r,
		       &(struct extras){ .lease = 1, .on_loss = FG_LOSS_CLOSED, .grant = 3500 }))
		return;
	s.payload = 1000 - 42; /* 1000-byte frames */
	ASSERT_EQ(spread_of(&s, 10), 3, "a lease of 3500 bytes: three 1000-byte frames");
	ASSERT_EQ(D.lease[0].tokens, 500, "500 bytes left");
	s.payload = 500 - 42;
	ASSERT_EQ(spread_of(&s, 10), 1, "and one 500-byte frame");
	dp_read_stats(&D, 0, &st);
	ASSERT_EQ(st.fleet_offered, 10 * 1000 + 10 * 500, "fleet_offered in bytes");
	dp_close(&D);
}

/* A fleet drop gives the per-source and aggregate tokens back. */
static void test_fleet_refund(void)
{
	struct fg_rule r = limit_rule(1, 5);
	struct pkt_spec s = udp4("198.51.100.20", 7);
	struct fg_bucket src, agg;
	__u64 now_tu;

	r.agg = dp_lim(1, 100);
	r.fleet = 1;
	if (setup_with(&r, &(struct extras){ .lease = 1, .on_loss = FG_LOSS_CLOSED, .grant = 3 }))
		return;
	now_tu = dp_now(&D) << FG_TU_SHIFT;
	ASSERT_EQ(burst_of(&s, 5), 3, "3 tokens of lease: 3 of 5");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_FLEET_DROP), 2, "2 fleet drops");
	ASSERT_OK(dp_bucket4(&D, "198.51.100.20", 0, 0, &src), "source bucket");
	ASSERT_OK(dp_agg(&D, FG_AGG_IDX(0), &agg), "aggregate bucket");
	ASSERT_EQ(src.tat, now_tu + 3 * r.src.inc, "per-source bucket charged for 3 only");
	ASSERT_EQ(agg.tat, now_tu + 3 * r.agg.inc, "aggregate charged for 3 only");
	lease_grant(10);
	ASSERT_EQ(burst_of(&s, 5), 2, "the source still has the 2 refunded tokens");
	ASSERT_EQ(D.lease[0].tokens, 8, "per-source drops do not spend the lease");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_FLEET_DROP), 2, "per-source drops are no fleet drops");
	dp_close(&D);
}

/* Once the lease has run out the program applies on_loss by itself. */
static void test_fleet_on_loss(void)
{
	static const char *const names[3] = { "local", "open", "closed" };

	for (int mode = FG_LOSS_LOCAL; mode <= FG_LOSS_CLOSED; mode++) {
		struct fg_rule r = fleet_rule();
		struct fg_limit local = dp_lim(10, 5);
		struct pkt_spec s = udp4("198.51.100.30", 7);
		int want_local = 0, sent_loss = 0, got;
		struct fg_stats st;
		char name[128];
		__u64 t;

		if (setup_with(&r, &(struct extras){
					   .lease = 1, .on_loss = (__u8)mode, .local = local }))
			return;
		t = dp_now(&D);
		dp_lease_renew(&D, 0, 100, t + 400 * MS, 4);
		dp_set_now(&D, t + 399 * MS);
		snprintf(name, sizeof(name), "%s: the lease runs until its expiry", names[mode]);
		ASSERT_EQ(spread_of(&s, 10), 10, name);
		dp_set_now(&D, t + 400 * MS);
		got = spread_of(&s, 20);
		sent_loss += 20;
		snprintf(name, sizeof(name), "%s: at the expiry, 90 tokens left", names[mode]);
		ASSERT_EQ(D.lease[0].tokens, 90, name);
		if (mode == FG_LOSS_OPEN) {
			ASSERT_EQ(got, 20, "open: everything passes");
		} else if (mode == FG_LOSS_CLOSED) {
			ASSERT_EQ(got, 0, "closed: everything is dropped");
		} else {
			/* the local share starts empty at the expiry: no burst */
			ASSERT_EQ(got, 0, "local: nothing at the switch");
			dp_set_now(&D, t + 900 * MS);
			ASSERT_EQ(spread_of(&s, 20), 5, "local: 0.5 s at 10/s = 5");
			dp_set_now(&D, t + 1000 * MS);
			ASSERT_EQ(spread_of(&s, 20), 1, "local: 0.1 s more = 1");
			dp_set_now(&D, t + 100 * NS);
			ASSERT_EQ(spread_of(&s, 20), 5,
				  "local: long idle, the local burst (5), no more");
			sent_loss += 60;
			want_local = 11;
		}
		dp_read_stats(&D, 0, &st);
		snprintf(name, sizeof(name), "%s: every frame after the expiry is FG_EV_FLEET_LOSS",
			 names[mode]);
		ASSERT_EQ(st.ev[FG_EV_FLEET_LOSS], sent_loss, name);
		snprintf(name, sizeof(name), "%s: fleet_unleased = what passed under on_loss",
			 names[mode]);
		ASSERT_EQ(st.fleet_unleased, mode == FG_LOSS_OPEN ? 20 : want_local, name);
		ASSERT_EQ(st.ev[FG_EV_FLEET_DROP], 0, "no lease drops");
		ASSERT_EQ(D.lease[0].tokens, 90, "an expired lease is not spent");
		/* a renewal: the lease applies again, no on_loss */
		dp_lease_renew(&D, 0, 0, dp_now(&D) + 400 * MS, 4);
		ASSERT_EQ(spread_of(&s, 5), 5, "renewed: back on the lease");
		ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_FLEET_LOSS), sent_loss, "no on_loss once renewed");
		dp_close(&D);
	}
}

/* An entry whose gen is not the rule's is stale: closed, whatever it says. */
static void test_fleet_gen_mismatch(void)
{
	struct fg_rule r = fleet_rule();
	struct pkt_spec s = udp4("198.51.100.40", 7);

	r.gen = 2;
	/* the lease entry of the previous rule of this id */
	if (setup_with(&r, &(struct extras){
				   .lease = 1, .gen = 1, .on_loss = FG_LOSS_OPEN, .grant = 100 }))
		return;
	ASSERT_EQ(spread_of(&s, 10), 0, "another generation's lease: dropped");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_FLEET_LOSS), 10, "counted as FG_EV_FLEET_LOSS");
	ASSERT_EQ(D.lease[0].tokens, 100, "and not spent");
	dp_set_now(&D, dp_now(&D) + 1 * NS);
	ASSERT_EQ(spread_of(&s, 10), 0, "expired too: still closed, not its on_loss open");
	dp_lease_init(&D, 0, 2, FG_LOSS_OPEN, no_local);
	lease_grant(4);
	ASSERT_EQ(spread_of(&s, 10), 4, "this generation's lease: spent");
	dp_close(&D);
}

/* Shadow passes what the lease would drop, and counts it. */
static void test_fleet_shadow(void)
{
	for (int mode = 0; mode < 2; mode++) {
		struct fg_rule r = fleet_rule();
		struct pkt_spec s = udp4("198.51.100.50", 7);
		struct fg_stats st;

		if (setup_with(&r, &(struct extras){ .lease = 1, .on_loss = FG_LOSS_CLOSED }))
			return;
		if (mode == 0)
			dp_set_ctl(&D, FG_MODE_SHADOW, 0, 0);
		else
			ASSERT_OK(fg_switch_rule_ovr(&D.cm, 0, FG_OVR_SHADOW),
				  "rule override shadow");
		lease_grant(2);
		ASSERT_EQ(spread_of(&s, 5), 5,
			  mode ? "rule shadow: all pass" : "global shadow: all pass");
		dp_read_stats(&D, 0, &st);
		ASSERT_EQ(st.pkts[FG_OUT_PASS], 2, "2 admitted by the lease");
		ASSERT_EQ(st.pkts[FG_OUT_SHADOW], 3, "3 would-drops");
		ASSERT_EQ(st.ev[FG_EV_FLEET_DROP], 3, "counted as fleet drops");
		ASSERT_EQ(D.lease[0].tokens, 0, "shadow spends the lease as enforce would");
		dp_set_now(&D, dp_now(&D) + 1 * NS);
		ASSERT_EQ(spread_of(&s, 4), 4, "closed after expiry: passes in shadow");
		ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SHADOW), 7, "as would-drops");
		dp_close(&D);
	}
}

/* The kill switch comes first: no lease spent, no demand counted. */
static void test_fleet_bypass(void)
{
	struct fg_rule r = fleet_rule();
	struct pkt_spec s = udp4("198.51.100.60", 7);
	struct fg_stats st;

	if (setup_with(&r, &(struct extras){ .lease = 1, .on_loss = FG_LOSS_CLOSED, .grant = 5 }))
		return;
	ASSERT_OK(dp_set_ctl(&D, FG_MODE_ENFORCE, 1, 0), "bypass on");
	ASSERT_EQ(spread_of(&s, 20), 20, "bypass: everything passes");
	ASSERT_EQ(D.lease[0].tokens, 5, "the lease untouched");
	dp_read_stats(&D, 0, &st);
	ASSERT_EQ(st.fleet_offered + st.fleet_unleased, 0, "no demand counted");
	ASSERT_EQ(dp_row_pkts(&D, FG_ROW_GLOBAL, FG_OUT_BYPASS), 20, "counted as bypass");
	ASSERT_OK(dp_set_ctl(&D, FG_MODE_ENFORCE, 0, 0), "bypass off");
	ASSERT_EQ(spread_of(&s, 20), 5, "then the lease as it was");
	dp_close(&D);
}

/* Take back up to n tokens with compare-and-swap, as the daemon does. */
static __s64 lease_take_back(struct fg_lease *l, __s64 n)
{
	__s64 cur = __atomic_load_n(&l->tokens, __ATOMIC_ACQUIRE), take;

	do {
		take = cur < n ? cur : n;
		if (take <= 0)
			return 0;
	} while (!__atomic_compare_exchange_n(&l->tokens, &cur, cur - take, false, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	return take;
}

/* Two CPUs spending one lease never admit more than it holds; with the
 * daemon granting and taking back meanwhile, admitted = granted - taken
 * back - left, exactly. */
static void test_fleet_two_cpus(void)
{
	const __u64 lease = 100000, per_cpu = 400000;
	struct pkt_spec s = udp4("198.51.100.70", 7);
	struct fg_rule r = fleet_rule();
	struct hammer h[2];
	pthread_t th[2];
	struct fg_stats st;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fg_test_skip("needs 2 online CPUs, this machine has 1");
		return;
	}
	for (int pass = 0; pass < 2; pass++) {
		__s64 granted = (__s64)lease, taken = 0, left;
		volatile int stop = 0;
		int rounds = 0;

		if (setup_with(&r, &(struct extras){ .lease = 1,
						     .on_loss = FG_LOSS_CLOSED,
						     .grant = (__s64)lease }))
			return;
		for (int i = 0; i < 2; i++) {
			memset(&h[i], 0, sizeof(h[i]));
			h[i].cpu = i;
			h[i].len = pkt_build(&s, h[i].pkt, sizeof(h[i].pkt));
			h[i].repeat = pass ? 20000 : per_cpu;
			h[i].stop = pass ? &stop : NULL;
			pthread_create(&th[i], NULL, hammer_fn, &h[i]);
		}
		/* pass 1: a daemon's rounds while both CPUs spend, then they
		 * drain the lease and flood past it (bounded waits: 10 s each) */
		for (; pass && rounds < 400; rounds++) {
			lease_grant(1000);
			granted += 1000;
			if (rounds % 4 == 3)
				taken += lease_take_back(&D.lease[0], 700);
			usleep(2000);
		}
		for (int w = 0;
		     pass && w < 10000 && __atomic_load_n(&D.lease[0].tokens, __ATOMIC_ACQUIRE);
		     w++)
			usleep(1000);
		for (int w = 0; pass && w < 10000 && !dp_row_ev(&D, 0, FG_EV_FLEET_DROP); w++)
			usleep(1000);
		stop = 1;
		for (int i = 0; i < 2; i++) {
			pthread_join(th[i], NULL);
			ASSERT_OK(h[i].err, "test run on a pinned CPU");
		}
		dp_read_stats(&D, 0, &st);
		left = D.lease[0].tokens;
		if (pass == 0) {
			ASSERT_EQ(st.pkts[FG_OUT_PASS], lease, "two CPUs admit exactly the lease");
			ASSERT_EQ(st.pkts[FG_OUT_DROP], 2 * per_cpu - lease, "the rest dropped");
			ASSERT_EQ(st.ev[FG_EV_FLEET_DROP], 2 * per_cpu - lease, "as fleet drops");
			ASSERT_EQ(left, 0, "the lease spent to 0");
			printf("  one lease, two CPUs: %llu admitted of %llu, lease %llu\n",
			       (unsigned long long)st.pkts[FG_OUT_PASS],
			       (unsigned long long)(2 * per_cpu), (unsigned long long)lease);
		} else {
			ASSERT_EQ(left, 0, "the CPUs drained the lease, to 0 and not below");
			ASSERT_EQ((__s64)st.pkts[FG_OUT_PASS], granted - taken - left,
				  "admitted = granted - taken back - left");
			ASSERT_EQ(st.fleet_offered, st.pkts[FG_OUT_PASS] + st.pkts[FG_OUT_DROP],
				  "every frame offered");
			ASSERT_GE(st.pkts[FG_OUT_DROP], 1, "the flood exceeded the grants");
			printf("  with %d daemon rounds: granted %lld, taken back %lld, left %lld, admitted %llu, dropped %llu\n",
			       rounds, (long long)granted, (long long)taken, (long long)left,
			       (unsigned long long)st.pkts[FG_OUT_PASS],
			       (unsigned long long)st.pkts[FG_OUT_DROP]);
		}
		dp_close(&D);
	}
}

/* ---- load shedding (docs/shedding.md section 5) ------------------------- */

/* A limit rule with no limits of its own, in a tier and (1-based) pool. */
static struct fg_rule shed_rule(int tier, int pool)
{
	return (struct fg_rule){ .action = FG_ACT_LIMIT, .tier = (__u8)tier, .pool = (__u8)pool };
}

/* Thresholds that hold: end 100 s ahead, a 2^20 ns tail. */
static void shed_hold(void)
{
	dp_shed_deadline(&D, dp_now(&D) + 100 * NS, 20);
}

static void shed_all_kinds(int tier, __u32 thr)
{
	for (int k = 0; k < FG_SHED_NKIND; k++)
		dp_shed_thr(&D, tier, k, thr);
}

/* n frames of s: how many were counted under outcome out in row. */
static __u64 count_out(const struct pkt_spec *s, int n, __u32 row, __u32 out)
{
	__u64 before = dp_row_pkts(&D, row, out);

	for (int i = 0; i < n; i++)
		dp_send(&D, s);
	return dp_row_pkts(&D, row, out) - before;
}

/*
 * The issue's reserve criterion: a pool of 10,000 packets/s (burst 1,000,
 * reserve 20%) shared by a critical and a normal rule. The normal side
 * floods at 30,000/s, the critical side sends 1,000/s, for 3 s of test
 * clock: the normal side gets at most 80% of what the pool can deliver
 * (burst + rate * T), and about that much; critical loses nothing.
 */
static void test_shed_pool_reserve(void)
{
	struct fg_rule crit = shed_rule(FG_TIER_CRITICAL, 1), low = shed_rule(FG_TIER_NORMAL, 1);
	struct fg_match mc = to_port(2), ml = to_port(1);
	struct pkt_spec sc = udp4("192.0.2.1", 2), sl = udp4("192.0.2.2", 1);
	const __u64 T = 3 * NS, lo_gap = NS / 30000, cr_gap = NS / 1000;
	__u64 t0, tl, tc, low_ok = 0, crit_ok = 0, crit_n = 0, low_n = 0;
	double deliverable = 1000 + 10000.0 * 3;

	if (setup(1024))
		return;
	t0 = tl = tc = dp_now(&D);
	ASSERT_OK(dp_pool(&D, 0, 10000, 1000, 20, 0), "pool 10,000/s, burst 1,000, 20% reserve");
	dp_rule(&D, &crit, &mc, 1u << FG_CLASS_UDP);
	dp_rule(&D, &low, &ml, 1u << FG_CLASS_UDP);
	dp_apply(&D);
	while (tl < t0 + T || tc < t0 + T) {
		int is_crit = tc <= tl;

		dp_set_now(&D, is_crit ? tc : tl);
		if (is_crit) {
			crit_n++;
			crit_ok += dp_send(&D, &sc) == XDP_PASS;
			tc += cr_gap;
		} else {
			low_n++;
			low_ok += dp_send(&D, &sl) == XDP_PASS;
			tl += lo_gap;
		}
	}
	printf("  normal: %llu of %llu = %.1f%% of the pool's %.0f; critical %llu of %llu\n",
	       (unsigned long long)low_ok, (unsigned long long)low_n, 100.0 * low_ok / deliverable,
	       deliverable, (unsigned long long)crit_ok, (unsigned long long)crit_n);
	ASSERT_EQ(crit_ok, crit_n, "critical at 1,000/s loses nothing during the flood");
	ASSERT_LE(low_ok, (__u64)(0.8 * deliverable) + 1, "normal gets at most 80% of the pool");
	ASSERT_GE(low_ok, (__u64)(0.8 * 10000 * 3), "... and its 80% of the rate");
	ASSERT_EQ(dp_row_pkts(&D, 1, FG_OUT_SHED), low_n - low_ok, "refusals counted as shed");
	ASSERT_EQ(dp_row_pkts(&D, 1, FG_OUT_DROP), 0, "none as drop");
	ASSERT_EQ(dp_row_ev(&D, 1, FG_EV_SHED_CAP) + dp_row_ev(&D, 1, FG_EV_SHED_POOL),
		  low_n - low_ok, "each refusal names the cap or the pool");
	ASSERT_GE(dp_row_ev(&D, 1, FG_EV_SHED_CAP), 1, "the cap refused some");
	dp_close(&D);
}

/* A pool's refusal gives the source's and the aggregate's tokens back, and
 * a rule over its own quota never reaches (or spends) the pool. */
static void test_shed_pool_refund(void)
{
	struct fg_rule r = limit_rule(1, 100);
	struct pkt_spec s = udp4("198.51.100.30", 7);
	struct fg_bucket src, agg, pool;
	__u64 now_tu;

	r.agg = dp_lim(1, 100);
	r.pool = 1;
	if (setup_with(&r, &(struct extras){ .pool_burst = 5 }))
		return;
	now_tu = dp_now(&D) << FG_TU_SHIFT;
	ASSERT_EQ(burst_of(&s, 8), 5, "the pool's burst: 5 of 8");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SHED), 3, "3 shed");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SHED_POOL), 3, "by the pool");
	ASSERT_OK(dp_bucket4(&D, "198.51.100.30", 0, 0, &src), "source bucket");
	ASSERT_OK(dp_agg(&D, FG_AGG_IDX(0), &agg), "aggregate bucket");
	ASSERT_OK(dp_agg(&D, FG_POOL_IDX(0), &pool), "pool bucket");
	ASSERT_EQ(src.tat, now_tu + 5 * r.src.inc, "per-source charged for the 5 admitted only");
	ASSERT_EQ(agg.tat, now_tu + 5 * r.agg.inc, "aggregate charged for the 5 only");
	ASSERT_EQ(pool.tat, now_tu + 5 * D.pol.pools[0].inc, "pool spent 5");
	dp_close(&D);

	/* over the quota first: a drop, and the pool untouched */
	r = limit_rule(1, 2);
	r.pool = 1;
	if (setup_with(&r, &(struct extras){ .pool_burst = 100 })) /* room */
		return;
	now_tu = dp_now(&D) << FG_TU_SHIFT;
	ASSERT_EQ(burst_of(&s, 6), 2, "per-source burst 2 of 6");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_DROP), 4, "4 dropped (quota)");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SHED), 0, "none shed");
	ASSERT_OK(dp_agg(&D, FG_POOL_IDX(0), &pool), "pool bucket");
	ASSERT_EQ(pool.tat, now_tu + 2 * D.pol.pools[0].inc, "the pool spent only the 2 admitted");
	dp_close(&D);

	/* a fleet rule: the lease's tokens go back too */
	r = (struct fg_rule){ .action = FG_ACT_LIMIT, .fleet = 1, .pool = 1 };
	if (setup_with(&r, &(struct extras){ .pool_burst = 3,
					     .lease = 1,
					     .on_loss = FG_LOSS_CLOSED,
					     .grant = 10 }))
		return;
	ASSERT_EQ(burst_of(&s, 5), 3, "the pool's 3 of 5");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SHED), 2, "2 shed");
	ASSERT_EQ(D.lease[0].tokens, 7, "the lease spent only for the 3 admitted");
	dp_close(&D);

	/* ... but what on_loss admitted took no tokens, and gets none back */
	if (setup_with(&r,
		       &(struct extras){ .pool_burst = 3, .lease = 1, .on_loss = FG_LOSS_OPEN }))
		return;
	ASSERT_EQ(burst_of(&s, 5), 3, "on_loss open, the pool's 3 of 5");
	ASSERT_EQ(D.lease[0].tokens, 0, "no tokens given to an expired lease");
	dp_close(&D);
}

/* Tier shedding by fraction: 0 none, 1/2 about half, 1 all; critical never,
 * whatever its thresholds say; counted as shed, no bucket touched. */
static void test_shed_tier_fraction(void)
{
	struct fg_rule be = limit_rule(1e6, 1e6), crit = shed_rule(FG_TIER_CRITICAL, 0);
	struct pkt_spec s = udp4("198.51.100.40", 1), sc = udp4("198.51.100.41", 2);
	struct fg_bucket b;
	__u64 n;

	if (setup(1024))
		return;
	be.tier = FG_TIER_BEST_EFFORT;
	rules_by_port(&be, 1, &crit, 2);
	dp_apply(&D);
	shed_hold();
	ASSERT_EQ(count_out(&s, 500, 0, FG_OUT_SHED), 0, "threshold 0: nothing shed");
	shed_all_kinds(FG_TIER_BEST_EFFORT, FG_SHED_ONE / 2);
	n = count_out(&s, 4000, 0, FG_OUT_SHED);
	printf("  threshold 50%%: %llu of 4000 shed\n", (unsigned long long)n);
	ASSERT_GE(n, 1800, "threshold 50%: about half shed (>= 1800 of 4000)");
	ASSERT_LE(n, 2200, "threshold 50%: about half shed (<= 2200 of 4000)");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SHED_TIER), n, "each shed counted as shed_tier");
	shed_all_kinds(FG_TIER_BEST_EFFORT, FG_SHED_ONE);
	ASSERT_EQ(count_out(&s, 500, 0, FG_OUT_SHED), 500, "threshold 100%: all shed");
	ASSERT_EQ(dp_send(&D, &s), XDP_DROP, "a shed frame is dropped");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_DROP), 0, "shed, not drop");
	ASSERT_OK(dp_bucket4(&D, "198.51.100.40", 0, 0, &b), "the source's bucket");
	ASSERT_EQ(b.tat, (dp_now(&D) << FG_TU_SHIFT) + (500 + 4000 - n) * be.src.inc,
		  "only the frames not shed spent tokens");
	shed_all_kinds(FG_TIER_CRITICAL, FG_SHED_ONE);
	ASSERT_EQ(count_out(&sc, 500, 1, FG_OUT_PASS), 500,
		  "critical never shed, whatever fg_shed says");
	dp_close(&D);
}

/* Within a tier shed by 1/2, SYNs go first: all SYNs, no packet of an
 * established connection. */
static void test_shed_syn_first(void)
{
	struct fg_rule r = shed_rule(FG_TIER_BULK, 0);
	struct pkt_spec syn = { .family = 4,
				.src = "198.51.100.50",
				.proto = 6,
				.sport = 40000,
				.dport = 80,
				.tcp_flags = FG_TCP_SYN,
				.tcp_flags_set = 1 };
	struct pkt_spec ack = syn, synack = syn;

	ack.tcp_flags = FG_TCP_ACK;
	synack.tcp_flags = FG_TCP_SYN | FG_TCP_ACK;
	if (setup_one(&r))
		return;
	shed_hold();
	/* f = 1/2: NEW min(1, 2f) = 1, EST max(0, 2f - 1) = 0, ANY f */
	dp_shed_thr(&D, FG_TIER_BULK, FG_SHED_NEW, FG_SHED_ONE);
	dp_shed_thr(&D, FG_TIER_BULK, FG_SHED_EST, 0);
	dp_shed_thr(&D, FG_TIER_BULK, FG_SHED_ANY, FG_SHED_ONE / 2);
	ASSERT_EQ(count_out(&syn, 300, 0, FG_OUT_SHED), 300, "every SYN shed");
	ASSERT_EQ(count_out(&ack, 300, 0, FG_OUT_PASS), 300, "no ACK of an established one");
	ASSERT_EQ(count_out(&synack, 300, 0, FG_OUT_PASS), 300, "a SYN-ACK is not new work");
	dp_close(&D);
}

/* The daemon stops writing: the thresholds hold until end - 2^hshift, then
 * fall linearly to zero at end, by themselves. */
static void test_shed_decay(void)
{
	struct fg_rule r = shed_rule(FG_TIER_NORMAL, 0);
	struct pkt_spec s = udp4("198.51.100.60", 9);
	const __u32 h = 30; /* tail 2^30 ns, 1.07 s */
	__u64 t0, end, n;

	if (setup_one(&r))
		return;
	t0 = dp_now(&D);
	end = t0 + 2 * NS + (1ull << h); /* hold 2 s (2 * interval of 1 s) */
	shed_all_kinds(FG_TIER_NORMAL, FG_SHED_ONE);
	dp_shed_deadline(&D, end, h);
	ASSERT_EQ(count_out(&s, 200, 0, FG_OUT_SHED), 200, "written: all shed");
	dp_set_now(&D, end - (1ull << h));
	ASSERT_EQ(count_out(&s, 200, 0, FG_OUT_SHED), 200, "all through the hold");
	dp_set_now(&D, end - (1ull << h) / 2);
	n = count_out(&s, 2000, 0, FG_OUT_SHED);
	ASSERT_GE(n, 850, "half way down the tail: about half (>= 850 of 2000)");
	ASSERT_LE(n, 1150, "half way down the tail: about half (<= 1150 of 2000)");
	dp_set_now(&D, end - (1ull << h) / 16);
	n = count_out(&s, 2000, 0, FG_OUT_SHED);
	ASSERT_LE(n, 250, "near the end: about 1/16 (<= 250 of 2000)");
	dp_set_now(&D, end);
	ASSERT_EQ(count_out(&s, 500, 0, FG_OUT_SHED), 0, "zero at end");
	dp_set_now(&D, end + 3600 * NS);
	ASSERT_EQ(count_out(&s, 500, 0, FG_OUT_PASS), 500, "and after: all pass");
	dp_shed_deadline(&D, 0, h);
	dp_set_now(&D, t0);
	ASSERT_EQ(count_out(&s, 200, 0, FG_OUT_PASS), 200, "end 0 (a clean exit): nothing shed");
	dp_shed_deadline(&D, end, 99);
	ASSERT_EQ(count_out(&s, 200, 0, FG_OUT_PASS), 200, "a corrupt hshift fails open");
	dp_close(&D);
}

/* Shadow: fg_shed_ctl.shadow, or the rule's or global mode: counted as
 * shed_shadow and passed, and the quotas still apply (a would-shed over
 * its quota is a drop). The operator's off switch and a pool's
 * shedding: off stop tier shedding. */
static void test_shed_shadow_and_off(void)
{
	struct fg_rule r = limit_rule(1, 5), np = shed_rule(FG_TIER_BEST_EFFORT, 1);
	struct pkt_spec s = udp4("198.51.100.70", 1), s2 = udp4("198.51.100.71", 2);

	if (setup(1024))
		return;
	r.tier = FG_TIER_BEST_EFFORT;
	ASSERT_OK(dp_pool(&D, 0, 1e6, 1e6, 0, FG_POOL_NOSHED), "a pool with shedding: off");
	rules_by_port(&r, 1, &np, 2);
	dp_apply(&D);
	shed_hold();
	shed_all_kinds(FG_TIER_BEST_EFFORT, FG_SHED_ONE);
	D.shed->shadow = 1;
	ASSERT_EQ(burst_of(&s, 8), 5, "shedder in shadow: the quota's 5 of 8 pass");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SHED_SHADOW), 5, "5 would-shed within the quota");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_DROP), 3, "3 over the quota: dropped");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SHED), 0, "none shed");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SHED_TIER), 8, "8 would-sheds counted");
	D.shed->shadow = 0;
	ASSERT_OK(dp_set_ctl(&D, FG_MODE_SHADOW, 0, 0), "global shadow");
	ASSERT_EQ(dp_send(&D, &s), XDP_PASS, "global shadow: passed");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SHADOW), 1,
		  "over quota as well: shadow (a would-drop)");
	ASSERT_OK(dp_set_ctl(&D, FG_MODE_ENFORCE, 0, 0), "enforce");
	ASSERT_EQ(count_out(&s, 10, 0, FG_OUT_SHED), 10, "enforced: shed");
	D.shed->off = 1;
	ASSERT_EQ(count_out(&s, 10, 0, FG_OUT_DROP), 10, "off: no shedding, the quota decides");
	D.shed->off = 0;
	ASSERT_EQ(count_out(&s2, 50, 1, FG_OUT_PASS), 50,
		  "a pool with shedding: off is never tier-shed");
	dp_close(&D);
}

/* A pool refusal in shadow is a would-shed, distinct from a would-drop. */
static void test_shed_pool_shadow(void)
{
	struct fg_rule r = shed_rule(FG_TIER_CRITICAL, 1);
	struct pkt_spec s = udp4("198.51.100.80", 1);

	r.mode = FG_MODE_SHADOW;
	if (setup_with(&r, &(struct extras){ .pool_burst = 3 }))
		return;
	ASSERT_EQ(burst_of(&s, 7), 7, "shadow rule: all pass");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_PASS), 3, "3 within the pool");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SHED_SHADOW), 4, "4 would-shed");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SHADOW), 0, "no would-drop");
	dp_close(&D);
}

/* Bypass first: nothing shed, no pool spent. */
static void test_shed_bypass(void)
{
	struct fg_rule r = shed_rule(FG_TIER_BEST_EFFORT, 1);
	struct pkt_spec s = udp4("198.51.100.90", 1);
	struct fg_bucket pool;

	if (setup_with(&r, &(struct extras){ .pool_burst = 3 }))
		return;
	shed_hold();
	shed_all_kinds(FG_TIER_BEST_EFFORT, FG_SHED_ONE);
	ASSERT_OK(dp_set_ctl(&D, FG_MODE_ENFORCE, 1, 0), "bypass on");
	ASSERT_EQ(count_out(&s, 20, FG_ROW_GLOBAL, FG_OUT_BYPASS), 20, "bypass: all passed");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SHED_TIER), 0, "no shed counted");
	ASSERT_OK(dp_agg(&D, FG_POOL_IDX(0), &pool), "pool bucket");
	ASSERT_EQ(pool.tat, 0, "the pool untouched");
	ASSERT_OK(dp_set_ctl(&D, FG_MODE_ENFORCE, 0, 0), "bypass off");
	ASSERT_EQ(count_out(&s, 20, 0, FG_OUT_SHED), 20, "bypass off: shed again");
	dp_close(&D);
}

/* ---- throttle events (include/floodgate.h, "Throttle events") ------------- */

struct tev_seen {
	int n;
	struct fg_tev last;
};

static int tev_cb(void *ctx, void *data, size_t len)
{
	struct tev_seen *t = ctx;

	if (len >= sizeof(struct fg_tev)) {
		t->n++;
		memcpy(&t->last, data, sizeof(t->last));
	}
	return 0;
}

/* Distinct IPv4 sources 10.9.x.y, i = 0.., each sent 17 packets at one
 * instant with burst 1: one pass, 16 drops, so exactly one sampled drop
 * each (at one instant FG_DROP_SAMPLED takes one of every 16 drops). */
static void spray(int from, int n)
{
	char a[32];

	for (int i = from; i < from + n; i++) {
		struct pkt_spec s;

		snprintf(a, sizeof(a), "10.9.%d.%d", i / 250, i % 250 + 1);
		s = udp4(a, 7);
		for (int k = 0; k < 17; k++)
			dp_send(&D, &s);
	}
}

/* A dropping source is reported once an epoch, with its key and drops; the
 * tag sits in the drops word's low bits; all reports pass one GCRA cap of
 * FG_TEV_BURST at an instant, the rest counted and reported later. */
static void test_throttle_events(void)
{
	enum {
		SPRAY = FG_TEV_BURST + 904
	};
	struct fg_rule r = limit_rule(1, 1);
	struct pkt_spec s = udp4("192.0.2.77", 7);
	struct tev_seen seen = {};
	struct ring_buffer *rb = NULL;
	struct fg_bucket b;
	__be32 want;
	__u64 t, e;

	if (setup(65536)) /* room: every spray source gets a way */
		return;
	dp_rule(&D, &r, &M_ANY, C_ALL);
	dp_apply(&D);
	rb = ring_buffer__new(bpf_map__fd(D.skel->maps.fg_tev), tev_cb, &seen, NULL);
	if (!ASSERT_TRUE(rb != NULL, "ring buffer"))
		goto out;
	t = dp_now(&D);
	for (int i = 0; i < 200; i++)
		dp_send(&D, &s);
	ring_buffer__consume(rb);
	ASSERT_EQ(seen.n, 1, "199 drops in one epoch: one event");
	inet_pton(AF_INET, "192.0.2.77", &want);
	ASSERT_TRUE(seen.last.family == 4 && !memcmp(seen.last.addr, &want, 4), "the source");
	ASSERT_EQ(seen.last.rule, 0, "its rule id");
	ASSERT_EQ(seen.last.drops, FG_DROP_SAMPLE, "drops after the first sample");
	if (ASSERT_OK(dp_bucket4(&D, "192.0.2.77", 0, r.gen, &b), "bucket")) {
		ASSERT_EQ(b.drops & FG_TEV_TAG_MASK, FG_TEV_TAG(t << FG_TU_SHIFT),
			  "this epoch's tag");
		__u64 want_n = 0, got_n = FG_DROPS(b.drops) / FG_DROP_SAMPLE;

		for (__u64 n = 0; n < 199; n++)
			want_n += FG_DROP_SAMPLED(n, t << FG_TU_SHIFT);
		ASSERT_EQ(got_n, want_n, "samples of drops 0..198: FG_DROP_SAMPLED's");
		ASSERT_TRUE(got_n == 12 || got_n == 13, "one in each 16 drops at one instant");
	}
	dp_set_now(&D, t + (1ull << 30) + 10 * MS);
	for (int i = 0; i < 200; i++)
		dp_send(&D, &s);
	ring_buffer__consume(rb);
	ASSERT_EQ(seen.n, 2, "the next epoch: reported again");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_TEV_CAPPED), 0, "nothing capped so far");

	/* the cap: a full bucket (10 s later) lets FG_TEV_BURST through at one
	 * instant; e, e + 1 s: one epoch (2^30 ns), so no source is due again */
	e = (((t + 10 * NS) >> 30) + 1) << 30;
	dp_set_now(&D, e + MS);
	seen.n = 0;
	spray(0, SPRAY);
	ring_buffer__consume(rb);
	ASSERT_EQ(seen.n, FG_TEV_BURST, "a spray at one instant: the burst, no more");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_TEV_CAPPED), SPRAY - FG_TEV_BURST, "the rest counted");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_TEV_LOST), 0, "none lost: the ring holds the burst");
	/* a second later the cap has room for FG_TEV_RATE more: the refused ones come through */
	dp_set_now(&D, e + MS + NS);
	seen.n = 0;
	spray(0, SPRAY);
	ring_buffer__consume(rb);
	ASSERT_EQ(seen.n, SPRAY - FG_TEV_BURST, "refused sources reported at their next sample");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_TEV_CAPPED), SPRAY - FG_TEV_BURST, "none capped then");
out:
	ring_buffer__free(rb);
	dp_close(&D);
}

/* ---- FG_MAX_RULES rules: the bitmap index ------------------------------------ */

/* The policy of test_rules_max: rule i (id base + i) has three UDP entries,
 * sport 2000 + i; dport 3000 + i; dport 5000..5000 + i (rules k.. all hold
 * 5000 + k: the first wins), and one ICMP entry on type i % 256. */
static int rules_max_policy(__u16 base)
{
	dp_pol_reset(&D);
	for (int i = 0; i < FG_MAX_RULES; i++) {
		struct fg_rule r = { .action = FG_ACT_PASS, .gen = base ? 1 : 0 };
		struct fg_match m = udp_ports(2000 + i, 2000 + i, 0, 65535), ic = M_ANY;
		int idx = dp_rule_id(&D, &r, &m, 1u << FG_CLASS_UDP, (__u16)(base + i));

		m = udp_ports(0, 65535, 3000 + i, 3000 + i);
		dp_match(&D, idx, &m, 1u << FG_CLASS_UDP);
		m = udp_ports(0, 65535, 5000, 5000 + i);
		dp_match(&D, idx, &m, 1u << FG_CLASS_UDP);
		ic.proto = 1;
		ic.flags = FG_M_L4 | FG_M_ICMP_TYPE | FG_M_V4;
		ic.icmp_type = (__u8)(i % 256);
		dp_match(&D, idx, &ic, 1u << FG_CLASS_ICMP);
	}
	return dp_apply(&D);
}

/* Rows that differ from want over the rules' entries of one kind. */
static int rules_max_wrong(int kind, __u32 base)
{
	int wrong = 0;

	for (int i = 0; i < FG_MAX_RULES; i++) {
		struct pkt_spec s = udp4("192.0.2.7", 9);
		__u32 row, want = base + (__u32)i;

		if (kind == 0)
			s.sport = (uint16_t)(2000 + i);
		else if (kind == 1)
			s.dport = (uint16_t)(3000 + i);
		else if (kind == 2)
			s.dport = (uint16_t)(5000 + i);
		else
			s = (struct pkt_spec){ .family = 4,
					       .src = "192.0.2.7",
					       .proto = 1,
					       .icmp_type = (uint8_t)(i % 256) };
		if (kind == 3 && i >= 256)
			want = base + (__u32)(i % 256); /* the first rule of that type */
		if (dp_outcome_of(&D, &s, &row, NULL) != FG_OUT_PASS || row != want)
			wrong++;
	}
	return wrong;
}

/*
 * A policy of FG_MAX_RULES rules and 3 * FG_MAX_RULES UDP entries: every
 * rule is reached by each of its entries, the first of several matching
 * rules wins (overlapping ranges; a sport entry against a dport entry of
 * an earlier rule), the last rule is matched, nothing else is. Then a
 * reload that replaces every rule: ids FG_MAX_RULES..2 * FG_MAX_RULES - 1,
 * counted in rows of their own.
 */
static void test_rules_max(void)
{
	static const char *const kinds[] = { "by sport", "by dport", "overlapping dport ranges",
					     "icmp type" };
	/* the last rule's packets: its three UDP kinds, and its ICMP type unless
	 * an earlier rule holds it too (types repeat from rule 256 on) */
	const int last = 3 + (FG_MAX_RULES <= 256);
	struct pkt_spec s;
	struct fg_stats st;
	__u32 row;
	char name[96];

	if (setup(1024))
		return;
	if (!ASSERT_OK(rules_max_policy(0), "FG_MAX_RULES rules, ids 0.."))
		goto out;
	ASSERT_EQ(D.pol.nmatch[FG_CLASS_UDP], 3 * FG_MAX_RULES, "three UDP entries a rule");
	for (int k = 0; k < 4; k++) {
		snprintf(name, sizeof(name), "ids 0..%d, %s: rows differing from the rule",
			 FG_MAX_RULES - 1, kinds[k]);
		ASSERT_EQ(rules_max_wrong(k, 0), 0, name);
	}
	/* sport of rule j, dport of rule i < j: rule i's entry comes first */
	s = udp4("192.0.2.7", 3000 + 10);
	s.sport = 2000 + FG_MAX_RULES - 1;
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_PASS, "two rules hold the packet");
	ASSERT_EQ(row, 10, "the first of them wins");
	s.dport = 3000 + FG_MAX_RULES - 1;
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_PASS, "the last rule twice");
	ASSERT_EQ(row, FG_MAX_RULES - 1, "the last rule");
	s = udp4("192.0.2.7", 9);
	s.sport = 2000 + FG_MAX_RULES;
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_PASS, "no rule holds it: default pass");
	ASSERT_EQ(row, FG_ROW_GLOBAL, "the global row");
	s.dport = 5000 + FG_MAX_RULES;
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_PASS, "past every range");
	ASSERT_EQ(row, FG_ROW_GLOBAL, "still the global row");
	s = (struct pkt_spec){
		.family = 4, .src = "192.0.2.7", .proto = 6, .sport = 2000, .dport = 3000
	};
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, NULL), FG_OUT_PASS, "tcp: no rule of that class");
	ASSERT_EQ(row, FG_ROW_GLOBAL, "tcp: the global row");

	/* every rule replaced: the upper half of the ids */
	if (!ASSERT_OK(rules_max_policy(FG_MAX_RULES), "reload: ids FG_MAX_RULES.."))
		goto out;
	for (int k = 0; k < 4; k++) {
		snprintf(name, sizeof(name), "ids %d..%d, %s: rows differing from the rule",
			 FG_MAX_RULES, 2 * FG_MAX_RULES - 1, kinds[k]);
		ASSERT_EQ(rules_max_wrong(k, FG_MAX_RULES), 0, name);
	}
	ASSERT_OK(dp_read_stats(&D, 2 * FG_MAX_RULES - 1, &st), "row of the last id");
	ASSERT_EQ(st.pkts[FG_OUT_PASS], last, "the last id: its packets");
	ASSERT_OK(dp_read_stats(&D, FG_MAX_RULES - 1, &st), "row of the first policy's last id");
	ASSERT_EQ(st.pkts[FG_OUT_PASS], last + 1,
		  "the first policy's last id: its packets and the two-rule one, no more");
out:
	dp_close(&D);
}

/* Random port ranges and TCP flags over FG_MAX_RULES rules against a
 * first-match reference scan: the bitmaps never skip an earlier match nor
 * report a later one. */
static void test_rules_max_vs_reference(void)
{
	static struct fg_match ms[FG_MAX_MATCH];
	struct fg_rule pass = { .action = FG_ACT_PASS };
	int n = 0, wrong = 0, unmatched = 0;

	if (setup(1024))
		return;
	srand(14);
	for (int i = 0; i < FG_MAX_RULES; i++) {
		int idx = -1, ne = 1 + rand() % 3;

		for (int e = 0; e < ne; e++) {
			struct fg_match m = M_ANY;

			m.proto = 6;
			m.flags = FG_M_L4;
			m.dport_lo = (__u16)(rand() % 4000);
			m.dport_hi = (__u16)(m.dport_lo + rand() % (rand() % 8 ? 30 : 2000));
			if (rand() % 2) {
				m.sport_lo = (__u16)(1000 + rand() % 300);
				m.sport_hi = (__u16)(m.sport_lo + rand() % 40);
			}
			if (rand() % 4 == 0) {
				m.tcp_mask = FG_TCP_SYN | FG_TCP_ACK;
				m.tcp_val = FG_TCP_SYN;
			}
			if (idx < 0)
				idx = dp_rule(&D, &pass, &m, 1u << FG_CLASS_TCP);
			else
				dp_match(&D, idx, &m, 1u << FG_CLASS_TCP);
			m.rule = (__u16)idx;
			ms[n++] = m;
		}
	}
	if (!ASSERT_OK(dp_apply(&D), "random policy"))
		goto out;
	for (int k = 0; k < 3000; k++) {
		struct pkt_spec s = { .family = 4,
				      .src = "192.0.2.5",
				      .proto = 6,
				      .sport = (uint16_t)(1000 + rand() % 400),
				      .dport = (uint16_t)(rand() % 6500),
				      .tcp_flags = rand() % 2 ? FG_TCP_SYN : FG_TCP_ACK,
				      .tcp_flags_set = 1 };
		__u32 row, want = FG_ROW_GLOBAL;

		for (int i = 0; i < n; i++)
			if (s.dport >= ms[i].dport_lo && s.dport <= ms[i].dport_hi &&
			    s.sport >= ms[i].sport_lo && s.sport <= ms[i].sport_hi &&
			    (s.tcp_flags & ms[i].tcp_mask) == ms[i].tcp_val) {
				want = ms[i].rule;
				break;
			}
		unmatched += want == FG_ROW_GLOBAL;
		if (dp_outcome_of(&D, &s, &row, NULL) < 0 || row != want)
			wrong++;
	}
	ASSERT_GE(n, FG_MAX_RULES, "entries");
	ASSERT_EQ(wrong, 0, "rows differing from a first-match reference scan");
	ASSERT_GE(unmatched, 100, "unmatched packets exercised");
out:
	dp_close(&D);
}

/* Other protocols by number (fg_pidx.k8[1]): FG_MAX_RULES - 1 rules on
 * protocols 100.., then one for any protocol of the class: each packet
 * takes its protocol's rule, a protocol without one the last. */
static void test_rules_max_protocols(void)
{
	struct fg_rule pass = { .action = FG_ACT_PASS };
	int wrong = 0;
	__u32 row;

	if (setup(1024))
		return;
	for (int i = 0; i < FG_MAX_RULES - 1; i++) {
		struct fg_match m = M_ANY;

		m.proto = (__u8)(i < 100 ? 100 + i :
					   200 + i % 50); /* 200..249 twice: the first wins */
		dp_rule(&D, &pass, &m, 1u << FG_CLASS_OTHER);
	}
	dp_rule(&D, &pass, &M_ANY, 1u << FG_CLASS_OTHER);
	if (!ASSERT_OK(dp_apply(&D), "protocol rules"))
		goto out;
	for (int pr = 0; pr < 256; pr++) {
		struct pkt_spec s = { .family = 4, .src = "192.0.2.9", .proto = (uint8_t)pr };
		__u32 want = FG_MAX_RULES - 1;

		if (pr == 1 || pr == 6 || pr == 17 || pr == 58)
			continue; /* classes of their own */
		if (pr >= 100 && pr < 200)
			want = (__u32)(pr - 100);
		else if (pr >= 200 && pr < 250)
			want = 100 + (__u32)(pr - 200);
		if (dp_outcome_of(&D, &s, &row, NULL) != FG_OUT_PASS || row != want)
			wrong++;
	}
	ASSERT_EQ(wrong, 0, "protocols whose row differs from the first rule for them");
out:
	dp_close(&D);
}

/* ---- drop sampling against sources sent in turn --------------------------------- */

enum {
	ROT_SRCS = 32,
	ROT_ROUNDS = 256
}; /* 256 rounds, 1 ms apart: ~61 clock ticks */

/*
 * ROT_SRCS sources sent in turn, one packet each per round, 1 ms a round,
 * all over their rate after the first round: every one of them gets
 * sampled drops (so a throttle event, the daemon's tracking, escalation
 * and `top`), and the samples stay one in FG_DROP_SAMPLE drops, give or
 * take one a clock tick. A fixed place in each 16 drops sampled 2 of the
 * 32, every time. On one CPU: the sampling counts drops per CPU.
 */
static void test_drop_sample_rotation(void)
{
	struct fg_rule r = limit_rule(1, 1); /* 1/s, burst 1: 0.26 tokens in the run */
	cpu_set_t was, one;
	struct fg_stats st;
	__u64 t0, samples = 0, ticks;
	int sampled = 0, pinned, cpu = sched_getcpu();
	char a[ROT_SRCS][32];

	if (cpu < 0)
		cpu = 0;
	pinned = !sched_getaffinity(0, sizeof(was), &was);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (!ASSERT_OK(pinned ? sched_setaffinity(0, sizeof(one), &one) : -1, "pinned to one CPU"))
		return;
	if (setup_one(&r))
		goto unpin;
	t0 = dp_now(&D);
	for (int i = 0; i < ROT_SRCS; i++)
		snprintf(a[i], sizeof(a[i]), "10.8.0.%d", i + 1);
	for (int k = 0; k < ROT_ROUNDS; k++) {
		dp_set_now(&D, t0 + (__u64)k * MS);
		for (int i = 0; i < ROT_SRCS; i++) {
			struct pkt_spec s = udp4(a[i], 7);

			dp_send(&D, &s);
		}
	}
	for (int i = 0; i < ROT_SRCS; i++) {
		struct fg_bucket b;

		if (!ASSERT_OK(dp_bucket4(&D, a[i], 0, r.gen, &b), "the source's bucket"))
			goto out;
		sampled += FG_DROPS(b.drops) > 0;
		samples += FG_DROPS(b.drops) / FG_DROP_SAMPLE;
	}
	printf("  %d sources in turn, %d rounds: %d with sampled drops, %llu samples\n", ROT_SRCS,
	       ROT_ROUNDS, sampled, (unsigned long long)samples);
	ASSERT_EQ(sampled, ROT_SRCS, "sources in turn with sampled drops");
	if (ASSERT_OK(dp_read_stats(&D, 0, &st), "the rule's counters")) {
		__u64 drops = st.pkts[FG_OUT_DROP], want = drops / FG_DROP_SAMPLE;

		ASSERT_EQ(drops, (__u64)ROT_SRCS * (ROT_ROUNDS - 1),
			  "every packet after the first round dropped");
		/* the place moves at most once a tick: one sample more or fewer each time */
		ticks = ((t0 + ROT_ROUNDS * MS) >> 22) - (t0 >> 22) + 1;
		ASSERT_TRUE(samples + ticks >= want && samples <= want + ticks,
			    "one sample in FG_DROP_SAMPLE drops, give or take one a tick");
	}
out:
	dp_close(&D);
unpin:
	sched_setaffinity(0, sizeof(was), &was);
}

/*
 * A new IPv4 source takes its own way (fg_way4_pref) when that way is
 * empty, else the first empty one: 600 sources into 1,024 ways (128 sets),
 * each found where a model of that rule puts it (dp_model_claim); then
 * every one, in its own way or not, is found again with no second claim.
 */
#define OWN_SRCS 600
static void test_own_way_v4(void)
{
	static __u8 used[128][FG_WAYS4];
	struct fg_rule r = limit_rule(1, 2);
	struct dp_claims c = {};
	__u64 ins;

	memset(used, 0, sizeof(used));
	if (setup_one(&r))
		return;
	for (int i = 0; i < OWN_SRCS; i++) {
		char a[32];
		struct pkt_spec s;
		struct dp_where at;
		struct fg_set4 set;

		snprintf(a, sizeof(a), "10.9.%d.%d", i / 200, i % 200 + 1);
		s = udp4(a, 7);
		dp_send(&D, &s);
		if (!ASSERT_OK(dp_where4(&D, a, 0, r.gen, &at, &set), "the source's set") ||
		    !ASSERT_LE(at.set, 127, "a set of the 1,024-way table"))
			goto out;
		dp_claim_seen(&c, used[at.set], FG_WAYS4, at.pref, at.way);
	}
	ins = dp_row_ev(&D, 0, FG_EV_INSERT);
	ASSERT_OK(dp_claims_check(&c, "600 sources", ins),
		  "each claim where the model puts it, own ways and others, one insert each");
	for (int i = 0; i < OWN_SRCS; i++) {
		char a[32];
		struct pkt_spec s;

		snprintf(a, sizeof(a), "10.9.%d.%d", i / 200, i % 200 + 1);
		s = udp4(a, 7);
		dp_send(&D, &s);
	}
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_INSERT), ins, "found again, in any way: no second claim");
out:
	dp_close(&D);
}

/* ---- shadow twins (include/floodgate.h fg_out_shadow; docs/abi.md, ABI 8) ---- */

/*
 * Every outcome that refuses a packet in enforce has a shadow twin, counted
 * instead when shadow passes the packet. For each refusal, the same kind of
 * frame under five settings: enforce; global shadow from the file, then
 * from the operator's override; the rule's shadow from the file, then from
 * the operator's rule override. Global shadow gives the twin, passed, in
 * the same row. The rule's shadow gives the twin for what the rule decides
 * (drop, shed, cap) and leaves what is decided before any rule (deny,
 * rt_deny, malformed) enforced. Every check is of the one outcome the
 * frame was counted under (dp_outcome_of), its verdict and its row.
 */
enum twin_kind {
	TW_DROP,
	TW_SHED,
	TW_DENY,
	TW_RT_DENY,
	TW_MALFORMED,
	TW_CAP,
	TW_N
};

static const struct {
	const char *what;
	__u32 out, twin;
	bool by_rule; /* decided by rule 0: its own shadow applies */
} twins[TW_N] = {
	[TW_DROP] = { "a rule's drop (over its rate)", FG_OUT_DROP, FG_OUT_SHADOW, true },
	[TW_SHED] = { "a shed (the rule's pool empty)", FG_OUT_SHED, FG_OUT_SHED_SHADOW, true },
	[TW_DENY] = { "the deny list", FG_OUT_DENY, FG_OUT_DENY_SHADOW, false },
	[TW_RT_DENY] = { "a runtime deny entry", FG_OUT_RT_DENY, FG_OUT_RT_DENY_SHADOW, false },
	[TW_MALFORMED] = { "a malformed frame, policy drop", FG_OUT_MALFORMED,
			   FG_OUT_MALFORMED_SHADOW, false },
	[TW_CAP] = { "a SYN at its concurrency cap", FG_OUT_CAP, FG_OUT_CAP_SHADOW, true },
};

/* The program for kind k, rule 0 (id 0) matching every frame, and the
 * frames spent so that every next one of twin_frame(k, i) is refused. */
static int twin_setup(enum twin_kind k)
{
	struct fg_rule r = limit_rule(1, 1);
	struct fg_rt_maps rt;
	struct pkt_spec s;

	if (setup(1024))
		return -1;
	switch (k) {
	case TW_SHED:
		r = shed_rule(FG_TIER_CRITICAL, 1);
		if (!ASSERT_OK(dp_pool(&D, 0, 1, 1, 0, 0), "pool 1/s, burst 1"))
			return -1;
		break;
	case TW_DENY:
	case TW_RT_DENY:
	case TW_MALFORMED:
		r = (struct fg_rule){ .action = FG_ACT_PASS };
		break;
	case TW_CAP:
		r = (struct fg_rule){ .action = FG_ACT_LIMIT,
				      .conn_cap = 1,
				      .conn_ttl_ms = 60000,
				      .mask4 = 0xffffffff };
		break;
	default:
		break;
	}
	dp_rule(&D, &r, &M_ANY, C_ALL);
	D.pol.malformed_verdict = FG_DROP;
	if (k == TW_DENY && !ASSERT_OK(dp_pfx(&D, "198.51.100.0/24", FG_LIST_DENY, 0), "deny /24"))
		return -1;
	if (!ASSERT_OK(dp_apply(&D), "policy"))
		return -1;
	if (k == TW_RT_DENY &&
	    (!ASSERT_OK(dp_rt_open(&D, &rt), "runtime lists") ||
	     !ASSERT_OK(dp_rt_add(&D, &rt, "198.51.100.0/24", FG_LIST_DENY, 0), "runtime deny")))
		return -1;
	/* the one frame admitted: the rate's burst, the pool's, the cap's place */
	s = (struct pkt_spec){ .family = 4,
			       .src = "198.51.100.9",
			       .proto = 6,
			       .sport = 999,
			       .dport = 80,
			       .tcp_flags = FG_TCP_SYN,
			       .tcp_flags_set = 1 };
	if ((k == TW_DROP || k == TW_SHED || k == TW_CAP) &&
	    !ASSERT_EQ(dp_outcome_of(&D, &s, NULL, NULL), FG_OUT_PASS, "the first frame admitted"))
		return -1;
	return 0;
}

/* The i-th frame for kind k: a SYN from 198.51.100.9 (a new source port
 * each: a new handshake for the cap), three VLAN tags when malformed. */
static struct pkt_spec twin_frame(enum twin_kind k, int i)
{
	struct pkt_spec s = { .family = 4,
			      .src = "198.51.100.9",
			      .proto = 6,
			      .sport = (uint16_t)(1000 + i),
			      .dport = 80,
			      .tcp_flags = FG_TCP_SYN,
			      .tcp_flags_set = 1 };

	if (k == TW_MALFORMED)
		s.nvlan = 3;
	return s;
}

static void test_shadow_twins(void)
{
	static const char *const how[5] = { "enforce", "global shadow (file)",
					    "global shadow (operator)", "rule shadow (file)",
					    "rule shadow (operator)" };

	for (int k = 0; k < TW_N; k++) {
		__u64 n_out[2] = { 0 }, n_twin[2] = { 0 };
		__u32 row_ok = twins[k].by_rule ? 0 : FG_ROW_GLOBAL;

		if (twin_setup(k)) {
			dp_close(&D);
			continue;
		}
		for (int m = 0; m < 5; m++) {
			bool shadow = m == 1 || m == 2 || (m >= 3 && twins[k].by_rule);
			struct pkt_spec s = twin_frame(k, m);
			char name[160];
			__u32 row = 99;
			int v = -1;

			ASSERT_OK(fg_switch_file_mode(&D.cm,
						      m == 1 ? FG_MODE_SHADOW : FG_MODE_ENFORCE),
				  "file mode");
			ASSERT_OK(fg_switch_mode_ovr(&D.cm, m == 2 ? FG_OVR_SHADOW : FG_OVR_NONE),
				  "global override");
			D.pol.rules[0].mode = m == 3 ? FG_MODE_SHADOW : FG_MODE_ENFORCE;
			ASSERT_OK(dp_apply(&D), "the rule's mode in the file");
			ASSERT_OK(fg_switch_rule_ovr(&D.cm, 0,
						     m == 4 ? FG_OVR_SHADOW : FG_OVR_NONE),
				  "rule override");
			snprintf(name, sizeof(name), "%s, %s: counted as %s", twins[k].what, how[m],
				 fg_outcome_names[shadow ? twins[k].twin : twins[k].out]);
			ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v),
				  shadow ? twins[k].twin : twins[k].out, name);
			ASSERT_EQ(v, shadow ? XDP_PASS : XDP_DROP, name);
			ASSERT_EQ(row, row_ok, name);
			n_twin[0] += shadow;
			n_out[0] += !shadow;
		}
		n_twin[1] = dp_row_pkts(&D, row_ok, twins[k].twin);
		n_out[1] = dp_row_pkts(&D, row_ok, twins[k].out);
		ASSERT_EQ(n_twin[1], n_twin[0], twins[k].what);
		ASSERT_EQ(n_out[1], n_out[0], twins[k].what);
		if (k == TW_CAP)
			ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_CAP_SHADOW), n_twin[0],
				  "cap: the event cap_shadow counts the same packets");
		dp_close(&D);
	}
}

/* A malformed frame the policy passes is malformed in shadow too: there
 * is nothing for shadow to pass. */
static void test_shadow_malformed_passed(void)
{
	struct fg_rule r = { .action = FG_ACT_PASS };
	struct pkt_spec s = twin_frame(TW_MALFORMED, 0);
	int v = -1;

	if (setup_one(&r))
		return;
	D.pol.malformed_verdict = FG_PASS;
	ASSERT_OK(dp_apply(&D), "policy: malformed passes");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_MALFORMED, "enforce: malformed");
	ASSERT_EQ(v, XDP_PASS, "enforce: passed");
	ASSERT_OK(fg_switch_mode_ovr(&D.cm, FG_OVR_SHADOW), "global shadow");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_MALFORMED, "shadow: still malformed");
	ASSERT_EQ(v, XDP_PASS, "shadow: passed");
	ASSERT_EQ(dp_row_pkts(&D, FG_ROW_GLOBAL, FG_OUT_MALFORMED_SHADOW), 0,
		  "no malformed_shadow");
	dp_close(&D);
}

static const struct fg_test_case cases[] = {
	FG_CASE(test_parse_cases),
	FG_CASE(test_parse_fields),
	FG_CASE(test_truncation),
	FG_CASE(test_outcomes_and_lists),
	FG_CASE(test_lists_dir_vs_reference),
	FG_CASE(test_first_match),
	FG_CASE(test_rule_index_vs_reference),
	FG_CASE(test_source_sets_and_prefixes),
	FG_CASE(test_fragments),
	FG_CASE(test_hint_is_only_a_guess),
	FG_CASE(test_whole_class_skips_the_index),
	FG_CASE(test_burst_and_refill),
	FG_CASE(test_reload_rate_change),
	FG_CASE(test_bytes_cost),
	FG_CASE(test_aggregate_and_refund),
	FG_CASE(test_shadow_equals_enforce),
	FG_CASE(test_bypass),
	FG_CASE(test_bypass_live_and_expired),
	FG_CASE(test_mode_overrides),
	FG_CASE(test_ids_64_to_127),
	FG_CASE(test_prefix_tries_sized),
	FG_CASE(test_prefix_tries_full),
	FG_CASE(test_table_full_v6),
	FG_CASE(test_table_full_v4),
	FG_CASE(test_counters_add_up),
	FG_CASE(test_two_cpus_one_key),
	FG_CASE(test_eviction_invariant),
	FG_CASE(test_client_keeps_way_under_spray),
	FG_CASE(test_fleet_lease_exact),
	FG_CASE(test_fleet_refund),
	FG_CASE(test_fleet_on_loss),
	FG_CASE(test_fleet_gen_mismatch),
	FG_CASE(test_fleet_shadow),
	FG_CASE(test_fleet_bypass),
	FG_CASE(test_fleet_two_cpus),
	FG_CASE(test_shed_pool_reserve),
	FG_CASE(test_shed_pool_refund),
	FG_CASE(test_shed_tier_fraction),
	FG_CASE(test_shed_syn_first),
	FG_CASE(test_shed_decay),
	FG_CASE(test_shed_shadow_and_off),
	FG_CASE(test_shed_pool_shadow),
	FG_CASE(test_shed_bypass),
	FG_CASE(test_throttle_events),
	FG_CASE(test_rules_max),
	FG_CASE(test_rules_max_vs_reference),
	FG_CASE(test_rules_max_protocols),
	FG_CASE(test_drop_sample_rotation),
	FG_CASE(test_own_way_v4),
	FG_CASE(test_shadow_twins),
	FG_CASE(test_shadow_malformed_passed),
};

FG_MAIN_BPF("test_datapath", "needs root for BPF_PROG_TEST_RUN", cases)
