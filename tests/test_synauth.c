// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * SYN authentication in the XDP program (bpf/lib/synauth.bpf.h), through
 * BPF_PROG_TEST_RUN with the test clock: the SYN-ACK it answers with
 * (cookie, options, sizes, checksums), the ACK and RST that return the
 * cookie, bad cookies, the reply cap, shadow, the kill switch, no secret,
 * IPv4, IPv6, VLAN, both ways. FG_NEEDS_ROOT.
 */
#include <errno.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include "fgtest.h"
#include "dp.h"
#include "dpcheck.h"
#include "maps/ctl.h"

#define NS 1000000000ull

static struct dp D;

/* A TCP segment as the tests build it. */
struct seg {
	int v6, vlan;
	const char *src, *dst;
	__u16 sport, dport;
	__u32 seq, ack;
	__u8 flags;
	int mss, ws, sack, ts; /* options: mss 0 = none, ws -1 = none */
	__u32 tsval, tsecr;
	int payload;
};

static __u16 csum_fold(__u64 s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (__u16)s;
}

static __u64 csum_add(const __u8 *p, int n, __u64 s)
{
	for (int i = 0; i + 1 < n; i += 2)
		s += (__u32)p[i] << 8 | p[i + 1];
	if (n & 1)
		s += (__u32)p[n - 1] << 8;
	return s;
}

static int build(const struct seg *g, __u8 *b)
{
	int off = 12, l3, l4, ol = 0, tl, i;
	__u8 opt[40];

	memset(b, 0, 256);
	memcpy(b, "\x02\0\0\0\0\x02\x02\0\0\0\0\x01", 12);
	if (g->vlan) {
		b[12] = 0x81, b[13] = 0, b[14] = 0, b[15] = 7;
		off = 16;
	}
	b[off] = g->v6 ? 0x86 : 0x08;
	b[off + 1] = g->v6 ? 0xdd : 0x00;
	l3 = off + 2;
	if (g->mss) {
		opt[ol++] = 2, opt[ol++] = 4, opt[ol++] = g->mss >> 8, opt[ol++] = g->mss & 0xff;
	}
	if (g->sack)
		opt[ol++] = 4, opt[ol++] = 2;
	if (g->ts) {
		opt[ol++] = 8, opt[ol++] = 10;
		for (i = 0; i < 4; i++)
			opt[ol + i] = g->tsval >> (24 - 8 * i);
		for (i = 0; i < 4; i++)
			opt[ol + 4 + i] = g->tsecr >> (24 - 8 * i);
		ol += 8;
	}
	if (g->ws >= 0)
		opt[ol++] = 1, opt[ol++] = 3, opt[ol++] = 3, opt[ol++] = g->ws;
	while (ol % 4)
		opt[ol++] = 0;
	tl = 20 + ol;
	if (g->v6) {
		b[l3] = 0x60;
		b[l3 + 4] = (tl + g->payload) >> 8, b[l3 + 5] = (tl + g->payload) & 0xff;
		b[l3 + 6] = 6, b[l3 + 7] = 64;
		inet_pton(AF_INET6, g->src, b + l3 + 8);
		inet_pton(AF_INET6, g->dst, b + l3 + 24);
		l4 = l3 + 40;
	} else {
		b[l3] = 0x45;
		b[l3 + 2] = (20 + tl + g->payload) >> 8, b[l3 + 3] = (20 + tl + g->payload) & 0xff;
		b[l3 + 8] = 64, b[l3 + 9] = 6;
		inet_pton(AF_INET, g->src, b + l3 + 12);
		inet_pton(AF_INET, g->dst, b + l3 + 16);
		l4 = l3 + 20;
	}
	b[l4] = g->sport >> 8, b[l4 + 1] = g->sport & 0xff;
	b[l4 + 2] = g->dport >> 8, b[l4 + 3] = g->dport & 0xff;
	for (i = 0; i < 4; i++) {
		b[l4 + 4 + i] = g->seq >> (24 - 8 * i);
		b[l4 + 8 + i] = g->ack >> (24 - 8 * i);
	}
	b[l4 + 12] = (tl / 4) << 4;
	b[l4 + 13] = g->flags;
	b[l4 + 14] = 0xff, b[l4 + 15] = 0xff;
	memcpy(b + l4 + 20, opt, ol);
	return l4 + tl + g->payload;
}

/* What came back. */
struct got {
	__u32 ret, len;
	__u8 out[256];
};

static int run(const struct seg *g, struct got *r)
{
	__u8 in[256];
	int n = build(g, in);
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = n, .data_out = r->out,
		    .data_size_out = sizeof(r->out), .repeat = 1);
	int err = bpf_prog_test_run_opts(D.prog, &o);

	r->ret = o.retval;
	r->len = o.data_size_out;
	return err;
}

static __u32 get32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

/* The SYN-ACK's TCP header offset; checks both checksums and that it
 * answers g (addresses, ports, flags, no more bytes than the SYN). */
static int check_synack(const struct seg *g, const struct got *r, int syn_len)
{
	int l3 = g->vlan ? 18 : 14, l4 = l3 + (g->v6 ? 40 : 20), tl, plen;
	const __u8 *t = r->out + l4;
	__u8 a[16];
	__u64 s;

	ASSERT_TRUE(r->len <= (unsigned)syn_len, "the SYN-ACK is no longer than the SYN");
	if (g->vlan)
		ASSERT_TRUE(r->out[12] == 0x81 && r->out[15] == 7, "the VLAN tag stays");
	ASSERT_TRUE(!memcmp(r->out, "\x02\0\0\0\0\x01\x02\0\0\0\0\x02", 12), "MACs swapped");
	ASSERT_EQ(t[13], 0x12, "flags SYN|ACK");
	ASSERT_EQ((t[0] << 8 | t[1]), g->dport, "source port = the SYN's destination");
	ASSERT_EQ((t[2] << 8 | t[3]), g->sport, "destination port = the SYN's source");
	tl = (t[12] >> 4) * 4;
	if (g->v6) {
		inet_pton(AF_INET6, g->src, a);
		ASSERT_TRUE(!memcmp(r->out + l3 + 24, a, 16),
			    "IPv6 destination = the SYN's source");
		plen = r->out[l3 + 4] << 8 | r->out[l3 + 5];
		ASSERT_EQ(plen, tl, "IPv6 payload length = the TCP header");
		s = csum_add(r->out + l3 + 8, 32, 0) + 6 + tl;
	} else {
		inet_pton(AF_INET, g->src, a);
		ASSERT_TRUE(!memcmp(r->out + l3 + 16, a, 4), "IPv4 destination = the SYN's source");
		ASSERT_EQ(csum_fold(csum_add(r->out + l3, 20, 0)), 0xffff, "IPv4 header checksum");
		plen = r->out[l3 + 2] << 8 | r->out[l3 + 3];
		ASSERT_EQ(plen, 20 + tl, "IPv4 total length");
		s = csum_add(r->out + l3 + 12, 8, 0) + 6 + tl;
	}
	ASSERT_EQ(csum_fold(csum_add(t, tl, s)), 0xffff, "TCP checksum");
	return l4;
}

static const __u64 K0 = 0x0123456789abcdefull, K1 = 0xfedcba9876543210ull;

/* Rule 0: TCP dport 80, SYN without ACK, limit 5/s burst 5, syn_auth;
 * rule 1: everything else passes. way: FG_SA_WAY_*. */
static int setup_sa(int way, int key)
{
	struct fg_sakey k = {};
	__u32 z = 0;
	__u64 slot;

	dp_sa_on = 1;
	if (dp_check_open(&D, 1024))
		return -1;
	dp_sa_rules(&D, way, 80, dp_lim(5, 5), dp_lim(1000, 1000));
	dp_set_now(&D, 1000 * NS);
	slot = FG_SA_SLOT(1000 * NS);
	k.seed[0] = 11, k.seed[1] = 22;
	k.ver4_bits = k.ver6_bits = 10;
	if (key) {
		__u64 e = FG_SA_EPOCH(slot);

		k.key[e & 1].k[0] = K0, k.key[e & 1].k[1] = K1, k.key[e & 1].epoch = e + 1;
	}
	if (!ASSERT_OK(bpf_map_update_elem(bpf_map__fd(D.skel->maps.fg_sakey), &z, &k, 0),
		       "fg_sakey"))
		return -1;
	return dp_apply(&D);
}

static struct seg syn4(const char *src, __u16 sport)
{
	return (struct seg){ .src = src,
			     .dst = "10.0.0.1",
			     .sport = sport,
			     .dport = 80,
			     .seq = 1000,
			     .flags = FG_TCP_SYN,
			     .mss = 1460,
			     .ws = 7,
			     .sack = 1,
			     .ts = 1,
			     .tsval = 777 };
}

/* The ACK that completes r's handshake for SYN g. */
static struct seg ack_for(const struct seg *g, const struct got *r, int l4)
{
	struct seg a = *g;
	const __u8 *t = r->out + l4;

	a.flags = FG_TCP_ACK;
	a.seq = g->seq + 1;
	a.ack = get32(t + 4) + 1;
	a.mss = 0, a.ws = -1, a.sack = 0;
	if (g->ts) {
		a.tsval = g->tsval + 1;
		a.tsecr = get32(t + 20 + 4 + 4); /* after MSS and SACK+TS kind/len */
	}
	return a;
}

static void test_handoff_v4(void)
{
	struct seg g = syn4("192.0.2.10", 40000), a, bad;
	struct got r;
	int l4, n;
	__u8 tmp[256];

	if (setup_sa(FG_SA_WAY_HANDOFF, 1))
		goto out;
	n = build(&g, tmp);
	ASSERT_OK(run(&g, &r), "run SYN");
	ASSERT_EQ(r.ret, XDP_TX, "a syn_auth SYN is answered (XDP_TX)");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SA_ANSWER), 1,
		  "counted syn_answered in the rule's row");
	ASSERT_EQ(dp_count_src4(&D), 0, "nothing charged: no bucket");
	l4 = check_synack(&g, &r, n);
	ASSERT_EQ(get32(r.out + l4 + 8), g.seq + 1, "ack = the client's ISN + 1");
	ASSERT_EQ(get32(r.out + l4 + 4) & 0xff,
		  3u << 6 | 1u << 4 | 7 | ((FG_SA_SLOT(1000 * NS) & 1) << 5),
		  "the cookie's low bits: MSS index 3 (1460), slot parity, SACK, wscale 7");
	/* the cookie is floodgate's SipHash, as include/floodgate.h computes it */
	{
		__u32 s[4] = {}, d[4] = {}, ports, isn;
		__u64 h;

		inet_pton(AF_INET, g.src, &s[0]);
		inet_pton(AF_INET, g.dst, &d[0]);
		ports = htons(g.sport) | (__u32)htons(g.dport) << 16;
		h = fg_sa_hash(K0, K1, s, d, ports, g.seq, FG_SA_SLOT(1000 * NS));
		isn = get32(r.out + l4 + 4);
		ASSERT_EQ(isn & 0xffffff00u, (__u32)(h >> 32) & 0xffffff00u, "cookie hash bits");
		ASSERT_EQ(get32(r.out + l4 + 28) & 0xff, FG_SA_TSBITS(h), "TSval's hash bits");
		ASSERT_EQ(get32(r.out + l4 + 32), g.tsval, "TSecr echoes the client's TSval");
	}

	a = ack_for(&g, &r, l4);
	ASSERT_OK(run(&a, &r), "run ACK");
	ASSERT_EQ(r.ret, XDP_PASS, "the ACK returning the cookie passes");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SA_VALID), 1, "cookie_valid");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SA_VERIFIED), 1, "verified");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_PASS), 1, "charged as the rule's SYN: a pass in row 0");
	ASSERT_EQ(dp_count_src4(&D), 1, "the proven source has its bucket now");

	/* the first data segment carries the same cookie: not charged again */
	ASSERT_OK(run(&a, &r), "run ACK again");
	ASSERT_EQ(r.ret, XDP_PASS, "the same handshake passes again");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SA_DUP), 1, "cookie_dup, not charged twice");
	ASSERT_EQ(r.len, (__u32)(build(&a, tmp) + sizeof(struct fg_sameta)),
		  "... and approved again: the metadata in front of it, for the tc half");

	/* an ACK flood: random cookies from unverified sources */
	bad = a;
	bad.src = "198.51.100.7";
	bad.ack ^= 0x5a5a5a00;
	ASSERT_OK(run(&bad, &r), "run bad ACK");
	ASSERT_EQ(r.ret, XDP_DROP, "a bad cookie from an unverified source is dropped");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SA_BADCOOKIE), 1, "cookie_invalid");
	/* a right cookie for another 4-tuple is a bad one */
	bad = a;
	bad.sport++;
	bad.src = "198.51.100.8";
	ASSERT_OK(run(&bad, &r), "run replayed ACK");
	ASSERT_EQ(r.ret, XDP_DROP, "a cookie is bound to its 4-tuple");

	/* a verified source's later segments: the rule search, as before */
	a.ack += 5000;
	ASSERT_OK(run(&a, &r), "run established ACK");
	ASSERT_EQ(r.ret, XDP_PASS, "a verified source's established traffic passes");

	/* a cookie two slots old is refused */
	g.sport = 40001;
	ASSERT_OK(run(&g, &r), "SYN 2");
	a = ack_for(&g, &r, l4);
	a.src = g.src;
	n = (int)dp_row_ev(&D, 0, FG_EV_SA_VALID);
	dp_set_now(&D, 1000 * NS + 3 * (1ull << FG_SA_SLOT_SHIFT));
	ASSERT_OK(run(&a, &r), "old ACK");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SA_VALID), (__u64)n,
		  "a cookie past its two slots is not valid");
out:
	dp_close(&D);
}

static void test_cap_shadow_bypass_nokey(void)
{
	struct seg g = syn4("192.0.2.20", 41000);
	struct got r;
	int i, tx = 0, capped = 0;

	if (setup_sa(FG_SA_WAY_HANDOFF, 1))
		goto out;
	D.pol.sa.reply = dp_lim(1, 3);
	D.pol.sa.reply_pfx = dp_lim(1000, 1000);
	dp_apply(&D);
	for (i = 0; i < 10; i++) {
		g.sport = 41000 + i;
		g.src = i & 1 ? "192.0.2.21" : "203.0.113.9";
		ASSERT_OK(run(&g, &r), "SYN");
		tx += r.ret == XDP_TX;
		capped += r.ret == XDP_DROP;
	}
	ASSERT_EQ(tx, 3, "the global reply cap: its burst of 3 answered");
	ASSERT_EQ(capped, 7, "the rest dropped");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SA_CAPPED), 7, "counted reply_capped");

	/* per destination prefix */
	D.pol.sa.reply = dp_lim(1000, 1000);
	D.pol.sa.reply_pfx = dp_lim(1, 2);
	dp_apply(&D);
	dp_set_now(&D, 2000 * NS);
	tx = 0;
	for (i = 0; i < 5; i++) {
		char a[32];

		snprintf(a, sizeof(a), "192.0.2.%d", 100 + i);
		g.src = a;
		ASSERT_OK(run(&g, &r), "SYN /24");
		tx += r.ret == XDP_TX;
	}
	ASSERT_EQ(tx, 2, "one /24: 2 answered (its prefix's burst)");
	g.src = "198.51.100.1";
	ASSERT_OK(run(&g, &r), "SYN other /24");
	ASSERT_EQ(r.ret, XDP_TX, "another /24 has its own bucket");

	/* shadow: counted, not answered, charged as before */
	dp_set_ctl(&D, FG_MODE_SHADOW, 0, 0);
	g.src = "192.0.2.30";
	ASSERT_OK(run(&g, &r), "SYN shadow");
	ASSERT_EQ(r.ret, XDP_PASS, "shadow answers nothing");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SA_SHADOW), 1, "syn_auth_shadow");
	/* and a bad cookie is passed, counted as its twin */
	g.flags = FG_TCP_ACK;
	g.ack = 12345;
	g.src = "192.0.2.31";
	ASSERT_OK(run(&g, &r), "bad ACK shadow");
	ASSERT_EQ(r.ret, XDP_PASS, "shadow passes a bad cookie");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SA_BADCOOKIE_SHADOW), 1, "cookie_invalid_shadow");

	/* the kill switch passes everything */
	dp_set_ctl(&D, FG_MODE_ENFORCE, 1, 0);
	ASSERT_OK(run(&g, &r), "bad ACK bypass");
	ASSERT_EQ(r.ret, XDP_PASS, "bypass: the ACK passes");
	g.flags = FG_TCP_SYN;
	ASSERT_OK(run(&g, &r), "SYN bypass");
	ASSERT_EQ(r.ret, XDP_PASS, "bypass: the SYN passes unanswered");
	dp_set_ctl(&D, FG_MODE_ENFORCE, 0, 0);
	dp_close(&D);

	/* no secret: not answered, charged as before, counted */
	if (setup_sa(FG_SA_WAY_HANDOFF, 0))
		goto out;
	ASSERT_OK(run(&g, &r), "SYN no key");
	ASSERT_EQ(r.ret, XDP_PASS, "no secret: the SYN is not answered");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SA_NOKEY), 1, "syn_auth_nokey");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_PASS), 1, "charged as without syn_auth");
out:
	dp_close(&D);
}

static void test_v6_and_vlan(void)
{
	struct seg g = syn4("192.0.2.40", 42000), a;
	struct got r;
	__u8 tmp[256];
	int l4, n;

	if (setup_sa(FG_SA_WAY_HANDOFF, 1))
		goto out;
	g.vlan = 1;
	n = build(&g, tmp);
	ASSERT_OK(run(&g, &r), "VLAN SYN");
	ASSERT_EQ(r.ret, XDP_TX, "a VLAN-tagged SYN is answered");
	l4 = check_synack(&g, &r, n);
	a = ack_for(&g, &r, l4);
	ASSERT_OK(run(&a, &r), "VLAN ACK");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SA_VALID), 1, "its ACK's cookie is valid");

	g = syn4("2001:db8::10", 42001);
	g.dst = "2001:db8::1";
	g.v6 = 1;
	g.mss = 1440;
	g.ts = 0; /* SACK and window scale only */
	n = build(&g, tmp);
	ASSERT_OK(run(&g, &r), "IPv6 SYN");
	ASSERT_EQ(r.ret, XDP_TX, "an IPv6 SYN is answered");
	l4 = check_synack(&g, &r, n);
	a = ack_for(&g, &r, l4);
	ASSERT_OK(run(&a, &r), "IPv6 ACK");
	ASSERT_EQ(r.ret, XDP_PASS, "its ACK passes");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SA_VALID), 2, "and its cookie is valid");
	a.ack ^= 0x100;
	a.sport++;
	a.src = "2001:db8::99";
	ASSERT_OK(run(&a, &r), "IPv6 bad ACK");
	ASSERT_EQ(r.ret, XDP_DROP, "an IPv6 bad cookie is dropped");
out:
	dp_close(&D);
}

static void test_retransmit_way(void)
{
	struct seg g = syn4("192.0.2.50", 43000), rst;
	struct got r;
	__u8 tmp[256];
	int l4, n;
	__u32 ack;

	if (setup_sa(FG_SA_WAY_RETRANSMIT, 1))
		goto out;
	n = build(&g, tmp);
	ASSERT_OK(run(&g, &r), "SYN");
	ASSERT_EQ(r.ret, XDP_TX, "answered");
	l4 = check_synack(&g, &r, n);
	ack = get32(r.out + l4 + 8);
	ASSERT_TRUE(ack != g.seq + 1, "the ack number is wrong on purpose");
	rst = g;
	rst.flags = FG_TCP_RST;
	rst.seq = ack;
	rst.ack = 0;
	rst.mss = 0, rst.ws = -1, rst.sack = 0, rst.ts = 0;
	rst.seq ^= 4;
	ASSERT_OK(run(&rst, &r), "bad RST");
	ASSERT_EQ(r.ret, XDP_DROP, "an RST without the cookie, unverified, no socket: dropped");
	rst.seq = ack;
	ASSERT_OK(run(&rst, &r), "RST");
	ASSERT_EQ(r.ret, XDP_DROP, "the RST proving the address is consumed");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SA_PROOF), 1, "rst_proof");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SA_VERIFIED), 1, "verified");
	dp_set_now(&D, 1000 * NS + 3000000);
	ASSERT_OK(run(&g, &r), "retransmitted SYN");
	ASSERT_EQ(r.ret, XDP_PASS, "the retransmitted SYN of a verified source passes");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_PASS), 1, "charged");
	{
		struct fg_sadly *d = calloc(D.ncpu, sizeof(*d));
		__u64 total = 0;
		__u32 z = 0;

		if (d && !bpf_map_lookup_elem(bpf_map__fd(D.skel->maps.fg_sadly), &z, d))
			for (int c = 0; c < D.ncpu; c++)
				for (int b = 0; b < FG_SA_HIST; b++)
					total += d[c].retransmit[b];
		ASSERT_EQ(total, 1, "one first-connect delay sample (retransmit)");
		free(d);
	}
out:
	dp_close(&D);
}

/*
 * A verified client's established ACKs, judged from the main program's
 * parse (fg_sa_fast, before the pre-search): once no SYN-ACK to it is
 * recent they pass, VLAN-tagged or not, IPv4 and IPv6, no cookie judged;
 * the same ACK from an unverified source, or from the verified ones after
 * verified_for, is dropped as cookie_invalid.
 */
/* IPv4 SYN g answered, and the ACK returning its cookie passed: that ACK. */
static struct seg verify4(const struct seg *g)
{
	struct seg a;
	struct got r;

	ASSERT_OK(run(g, &r), "SYN");
	ASSERT_EQ(r.ret, XDP_TX, "the SYN is answered");
	a = ack_for(g, &r, 14 + 20);
	ASSERT_OK(run(&a, &r), "ACK");
	ASSERT_EQ(r.ret, XDP_PASS, "the ACK returning the cookie passes");
	return a;
}

static void test_verified_fast_path(void)
{
	struct seg g = syn4("192.0.2.70", 45000), g6 = syn4("2001:db8::70", 45001), a, a6, o;
	struct got r;
	__u64 bad0;

	if (setup_sa(FG_SA_WAY_HANDOFF, 1))
		goto out;
	a = verify4(&g);
	g6.dst = "2001:db8::1";
	g6.v6 = 1;
	g6.mss = 1440;
	g6.ts = 0;
	ASSERT_OK(run(&g6, &r), "IPv6 SYN");
	ASSERT_EQ(r.ret, XDP_TX, "the IPv6 SYN is answered");
	a6 = ack_for(&g6, &r, 14 + 40);
	ASSERT_OK(run(&a6, &r), "IPv6 ACK");
	ASSERT_EQ(r.ret, XDP_PASS, "the IPv6 ACK returning the cookie passes");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SA_VERIFIED), 2, "both sources verified");

	dp_set_now(&D, 1000 * NS + 20 * NS); /* past two slots: no SYN-ACK is recent */
	a.seq += 1000, a.ack += 100000;
	a6.seq += 1000, a6.ack += 100000;
	bad0 = dp_row_pkts(&D, 0, FG_OUT_SA_BADCOOKIE);
	ASSERT_OK(run(&a, &r), "established ACK");
	ASSERT_EQ(r.ret, XDP_PASS, "a verified client's established ACK passes");
	a.vlan = 1;
	ASSERT_OK(run(&a, &r), "tagged ACK");
	ASSERT_EQ(r.ret, XDP_PASS, "... VLAN-tagged too (the main parse's tags)");
	a.vlan = 0;
	ASSERT_OK(run(&a6, &r), "IPv6 established ACK");
	ASSERT_EQ(r.ret, XDP_PASS, "... and over IPv6");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SA_BADCOOKIE), bad0, "none judged a bad cookie");
	o = a;
	o.src = "192.0.2.71";
	ASSERT_OK(run(&o, &r), "unverified ACK");
	ASSERT_EQ(r.ret, XDP_DROP, "the same ACK from an unverified source is dropped");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SA_BADCOOKIE), bad0 + 1, "... as cookie_invalid");

	dp_set_now(&D, 1000 * NS + 601 * NS); /* past verified_for (600 s) */
	ASSERT_OK(run(&a, &r), "expired ACK");
	ASSERT_EQ(r.ret, XDP_DROP, "after verified_for the verified client's ACK is dropped");
	ASSERT_OK(run(&a6, &r), "expired IPv6 ACK");
	ASSERT_EQ(r.ret, XDP_DROP, "... over IPv6 too");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SA_BADCOOKIE), bad0 + 3, "... both as cookie_invalid");
out:
	dp_close(&D);
}

/*
 * A proven ACK that a runtime deny scoped to its rule drops after its
 * charge leaves its approval mark behind (fg_sa_ack's pending); the next
 * frame charged and passed must not take that approval: no dedupe entry
 * for its 4-tuple, no metadata, no syn_auth_fail.
 */
static void test_stale_approval(void)
{
	struct seg g = syn4("192.0.2.90", 46000), o = syn4("192.0.2.91", 46001), a;
	struct fg_rts_key4 k = { .prefixlen = FG_RTS_ID_BITS + 32, .id = 0 };
	struct fg_rt val = { .list = FG_LIST_DENY, .plen = 32 };
	struct fg_sadup_key dk = { .family = 4 };
	struct got r;
	__u8 tmp[256];
	__u64 t;

	if (setup_sa(FG_SA_WAY_HANDOFF, 1))
		goto out;
	ASSERT_OK(run(&g, &r), "SYN");
	ASSERT_EQ(r.ret, XDP_TX, "answered");
	a = ack_for(&g, &r, 14 + 20);
	inet_pton(AF_INET, g.src, &k.addr);
	ASSERT_OK(bpf_map_update_elem(bpf_map__fd(D.skel->maps.fg_rts4), &k, &val, BPF_NOEXIST),
		  "a runtime deny of 192.0.2.90 scoped to the syn_auth rule");
	ASSERT_OK(fg_switch_rt_scoped(&D.cm, 1), "rt_scoped 1");
	ASSERT_OK(run(&a, &r), "ACK");
	ASSERT_EQ(r.ret, XDP_DROP, "its proven ACK is dropped");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SA_VALID), 1, "... after its cookie was found valid");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_RT_DENY), 1, "... by the scoped deny");
	/* the rule in shadow: another source's SYN is charged and passes */
	ASSERT_OK(fg_switch_rule_ovr(&D.cm, 0, FG_OVR_SHADOW), "the rule in shadow");
	ASSERT_OK(run(&o, &r), "another source's SYN");
	ASSERT_EQ(r.ret, XDP_PASS, "charged in shadow, it passes");
	ASSERT_EQ(r.len, (__u32)build(&o, tmp), "... with no approval in front of it");
	inet_pton(AF_INET, o.src, &dk.saddr[0]);
	inet_pton(AF_INET, o.dst, &dk.daddr[0]);
	dk.sport = htons(o.sport);
	dk.dport = htons(o.dport);
	ASSERT_TRUE(bpf_map_lookup_elem(bpf_map__fd(D.skel->maps.fg_sadup), &dk, &t) != 0,
		    "it took no approval: no dedupe entry for its 4-tuple");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SA_FAIL), 0, "and no syn_auth_fail");
out:
	dp_close(&D);
}

/*
 * The verified client's fast path hands its clock read to the charge
 * (fg_sa_fast's *now): a rule that matches the established ACKs too (its
 * TCP flags not tested) charges them per source by the packet's time.
 * A burst of 5 at 5/s: five pass, the sixth is throttled; 200 ms later
 * exactly one more. A wrong time handed over (stale, halved) admits none
 * or more than the one.
 */
static void test_verified_charge_clock(void)
{
	struct seg g = syn4("192.0.2.80", 46000), a;
	struct got r;
	struct fg_match *m;
	int passed = 0;

	if (setup_sa(FG_SA_WAY_HANDOFF, 1))
		goto out;
	m = &D.pol.match[FG_CLASS_TCP][0]; /* dp_sa_rules' syn_auth rule: any flags */
	m->tcp_mask = 0, m->tcp_val = 0;
	if (!ASSERT_OK(dp_apply(&D), "the rule for every segment"))
		goto out;
	a = verify4(&g);
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_SA_VERIFIED), 1, "the source verified");

	dp_set_now(&D, 1000 * NS + 20 * NS); /* no SYN-ACK recent; the bucket full */
	a.seq += 1000, a.ack += 100000;
	for (int i = 0; i < 6; i++) {
		ASSERT_OK(run(&a, &r), "established ACK");
		passed += r.ret == XDP_PASS;
	}
	ASSERT_EQ(passed, 5, "the verified client's ACKs are charged: the burst of 5 passes");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_SA_BADCOOKIE), 0, "none judged a bad cookie");
	dp_set_now(&D, 1000 * NS + 20 * NS + 200 * 1000000ull);
	passed = 0;
	for (int i = 0; i < 3; i++) {
		ASSERT_OK(run(&a, &r), "ACK 200 ms later");
		passed += r.ret == XDP_PASS;
	}
	ASSERT_EQ(passed, 1, "200 ms later one token: by the time the fast path read");
out:
	dp_close(&D);
}

/* ns a run of g costs, the mean of n single runs (BPF_PROG_TEST_RUN's
 * own timing; single, because a repeated run does not restore the frame
 * that the answer rewrote); the last verdict in *ret. */
static double cost_ns(const struct seg *g, int n, __u32 *ret)
{
	__u8 in[256], out[256];
	int len = build(g, in);
	__u64 sum = 0;

	for (int i = 0; i < n; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = in, .data_size_in = len,
			    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

		if (bpf_prog_test_run_opts(D.prog, &o))
			return -1;
		*ret = o.retval;
		sum += o.duration;
	}
	return (double)sum / n;
}

/*
 * Figures, not limits (this machine is shared): the program's cost for a
 * spoofed SYN that syn_auth answers, for the same SYN under a rule
 * without syn_auth (charged: a new bucket per source would be the real
 * cost; here one source), and for a verified client's established ACK
 * (the fast path) against the same ACK with no syn_auth rule at all.
 */
static void test_cost_figures(void)
{
	struct seg g = syn4("192.0.2.60", 44000), a;
	struct got r;
	__u32 ret;
	double syn_sa, syn_plain, ack_sa, ack_plain;
	int l4;

	if (setup_sa(FG_SA_WAY_HANDOFF, 1))
		goto out;
	D.pol.sa.reply = dp_lim(1e9, 1e9);
	dp_apply(&D);
	syn_sa = cost_ns(&g, 20000, &ret);
	ASSERT_EQ(ret, XDP_TX, "answered over the whole run");
	ASSERT_OK(run(&g, &r), "SYN");
	l4 = 14 + 20;
	a = ack_for(&g, &r, l4);
	ASSERT_OK(run(&a, &r), "ACK");
	ASSERT_EQ(r.ret, XDP_PASS, "verified");
	a.ack += 100000;
	dp_set_now(&D, 1000 * NS + 20 * NS); /* past two slots: the fast path */
	ack_sa = cost_ns(&a, 20000, &ret);
	ASSERT_EQ(ret, XDP_PASS, "the verified client's ACK passes over the whole run");
	D.pol.sa.way = FG_SA_WAY_OFF;
	D.pol.rules[0].src = dp_lim(1e9, 1e9);
	dp_apply(&D);
	syn_plain = cost_ns(&g, 20000, &ret);
	ASSERT_EQ(ret, XDP_PASS, "without syn_auth the SYN is charged and passes");
	ack_plain = cost_ns(&a, 20000, &ret);
	ASSERT_EQ(ret, XDP_PASS, "and the ACK passes");
	printf("  per packet, BPF_PROG_TEST_RUN: syn_auth SYN answered %.0f ns; the same SYN "
	       "charged without syn_auth %.0f ns; verified ACK %.0f ns, without syn_auth %.0f ns\n",
	       syn_sa, syn_plain, ack_sa, ack_plain);
out:
	dp_close(&D);
}

static const struct fg_test_case cases[] = {
	FG_CASE(test_handoff_v4),
	FG_CASE(test_cap_shadow_bypass_nokey),
	FG_CASE(test_v6_and_vlan),
	FG_CASE(test_retransmit_way),
	FG_CASE(test_verified_fast_path),
	FG_CASE(test_stale_approval),
	FG_CASE(test_verified_charge_clock),
	FG_CASE(test_cost_figures),
};

FG_MAIN_BPF("test_synauth", "needs root for BPF_PROG_TEST_RUN", cases)
