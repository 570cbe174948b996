// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Scoped runtime deny entries (docs/escalation.md): the real XDP program
 * through BPF_PROG_TEST_RUN on the test clock (tests/dp.h), entries written
 * by user/lists/rtlist.h as escalation writes them. A scoped entry denies
 * its prefix only for the rule it names, counted as rt_deny on that rule's
 * row; every other rule's traffic from the address passes; the
 * fg_ctl.rt_scoped gate; expiry in the program; shadow; IPv6; the list
 * API; the whole-address entry still denies every protocol. FG_NEEDS_ROOT.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include "fgtest.h"
#include "dp_rt.h"
#include "dpcheck.h"

#define NS     1000000000ull
#define UDP_ID 5 /* the rule that escalates: UDP/53 */
#define TCP_ID 7 /* another rule of the same address: TCP/443 */

static struct dp D;
static struct fg_rt_maps RT;

static struct pkt_spec udp(int family, const char *src)
{
	return (struct pkt_spec){
		.family = family, .src = src, .proto = 17, .sport = 40000, .dport = 53
	};
}

static struct pkt_spec tcp(int family, const char *src)
{
	return (struct pkt_spec){
		.family = family, .src = src, .proto = 6, .sport = 40000, .dport = 443
	};
}

static int setup(void)
{
	struct fg_rule pass = { .action = FG_ACT_PASS };
	struct fg_match mu = M_ANY, mt = M_ANY;

	if (dp_rt_check_open(&D, &RT, 1024))
		return -1;
	mu.proto = 17;
	mu.dport_lo = mu.dport_hi = 53;
	mt.proto = 6;
	mt.dport_lo = mt.dport_hi = 443;
	dp_rule_id(&D, &pass, &mu, 1u << FG_CLASS_UDP, UDP_ID);
	dp_rule_id(&D, &pass, &mt, 1u << FG_CLASS_TCP, TCP_ID);
	ASSERT_OK(dp_apply(&D), "apply");
	return 0;
}

static void teardown(void)
{
	fg_rt_close(&RT);
	dp_close(&D);
}

static __u32 rt_scoped(void)
{
	struct fg_ctl c;

	return fg_ctl_snapshot(&D.cm, &c) ? 0xffffffffu : c.rt_scoped;
}

/* A deny entry for cidr, scoped to rule id (or whole: id < 0), as escalation adds one. */
static int add(const char *cidr, int id, __u64 expires)
{
	struct fg_rt_entry e = dp_rt_entry(cidr, FG_LIST_DENY, expires, "escalated: test");
	char why[FG_WHY_LEN] = "";
	bool updated;
	int err;

	e.scoped = id >= 0;
	e.rule = id >= 0 ? (__u32)id : 0;
	err = fg_rt_add(&RT, &e, dp_now(&D), &updated, why);
	if (err)
		printf("  fg_rt_add %s: %s\n", cidr, why);
	return err;
}

/* The case in the program: a UDP rule's entry leaves TCP alone. */
static void test_scoped_denies_its_rule_only(void)
{
	struct pkt_spec s;
	__u32 row;
	int v;

	ASSERT_OK(add("192.0.2.10/32", UDP_ID, 0), "scoped deny of 192.0.2.10 for the UDP rule");
	ASSERT_EQ(rt_scoped(), 1, "rt_scoped counts it");
	ASSERT_EQ(dp_rt_active(&D), 0, "rt_active does not: no whole-address entry");

	s = udp(4, "192.0.2.10");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_RT_DENY, "its UDP/53: rt_deny");
	ASSERT_EQ(v, XDP_DROP, "dropped");
	ASSERT_EQ(row, UDP_ID, "on the UDP rule's row");
	s = tcp(4, "192.0.2.10");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_PASS, "its TCP/443: passes");
	ASSERT_EQ(v, XDP_PASS, "passed");
	ASSERT_EQ(row, TCP_ID, "on the TCP rule's row");
	s = udp(4, "192.0.2.11");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_PASS, "another source's UDP/53 passes");
	ASSERT_EQ(dp_row_pkts(&D, UDP_ID, FG_OUT_RT_DENY), 1, "rt_deny 1 on the UDP row");
	ASSERT_EQ(dp_row_pkts(&D, TCP_ID, FG_OUT_RT_DENY), 0, "none on the TCP row");
	ASSERT_EQ(dp_row_pkts(&D, FG_ROW_GLOBAL, FG_OUT_RT_DENY), 0, "none on the global row");

	/* the rule's own shadow (an operator's override): rt_deny_shadow, passed */
	ASSERT_OK(fg_switch_rule_ovr(&D.cm, UDP_ID, FG_OVR_SHADOW), "UDP rule in shadow");
	s = udp(4, "192.0.2.10");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_RT_DENY_SHADOW, "shadow: rt_deny_shadow");
	ASSERT_EQ(v, XDP_PASS, "passed in shadow");
	ASSERT_EQ(row, UDP_ID, "on the UDP rule's row");
	ASSERT_OK(fg_switch_rule_ovr(&D.cm, UDP_ID, FG_OVR_NONE), "override off");

	/* scope: address, a whole-address entry: every protocol, before the rules */
	ASSERT_OK(add("192.0.2.10/32", -1, 0), "whole-address deny of the same prefix");
	ASSERT_EQ(dp_rt_active(&D), 1, "rt_active 1");
	s = tcp(4, "192.0.2.10");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_RT_DENY, "now its TCP is denied too");
	ASSERT_EQ(row, FG_ROW_GLOBAL, "on the global row, before any rule");
}

/* No lookup while rt_scoped is 0; a shorter scoped entry covers, another rule's does not. */
static void test_gate_and_prefixes(void)
{
	struct fg_rt_entry e = dp_rt_entry("198.51.100.0/24", FG_LIST_DENY, 0, "raw");
	struct fg_rts_key4 k = { .prefixlen = FG_RTS_ID_BITS + 24, .id = UDP_ID };
	struct pkt_spec s = udp(4, "198.51.100.7");
	int fd = bpf_map__fd(D.skel->maps.fg_rts4), v;
	__u32 row;

	e.val.plen = 24;
	inet_pton(AF_INET, "198.51.100.0", &k.addr);
	ASSERT_OK(bpf_map_update_elem(fd, &k, &e.val, BPF_NOEXIST), "raw scoped entry, uncounted");
	ASSERT_EQ(rt_scoped(), 0, "rt_scoped 0");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_PASS,
		  "rt_scoped 0: the program does not look");
	ASSERT_OK(fg_switch_rt_scoped(&D.cm, 1), "count it");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_RT_DENY, "counted: the /24 denies");
	ASSERT_EQ(row, UDP_ID, "UDP row");

	ASSERT_OK(add("203.0.113.0/24", TCP_ID, 0), "a /24 scoped to the TCP rule");
	s = udp(4, "203.0.113.9");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_PASS,
		  "the TCP rule's entry does not touch UDP");
	s = tcp(4, "203.0.113.9");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_RT_DENY, "it denies TCP");
	ASSERT_EQ(row, TCP_ID, "TCP row");
	s = tcp(4, "203.0.114.9");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_PASS, "outside the /24: passes");
}

/* Expiry is the program's: past an expired /32 the /24 of the same rule decides. */
static void test_expiry(void)
{
	struct pkt_spec s = udp(4, "192.0.2.77");
	unsigned int removed = 0;
	__u64 t = dp_now(&D);
	__u32 row;
	int v;

	ASSERT_OK(add("192.0.2.0/24", UDP_ID, t + 2 * NS), "scoped /24 for 2 s");
	ASSERT_OK(add("192.0.2.77/32", UDP_ID, t + NS), "scoped /32 for 1 s");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_RT_DENY, "t: denied");
	dp_set_now(&D, t + NS);
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_RT_DENY,
		  "t + 1 s: the /32 over, the /24 denies");
	ASSERT_EQ(dp_row_ev(&D, UDP_ID, FG_EV_RT_EXPIRED), 1, "the expired /32 counted on the row");
	dp_set_now(&D, t + 2 * NS);
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_PASS, "t + 2 s: both over, passes");
	ASSERT_OK(fg_rt_gc(&RT, dp_now(&D), &removed), "sweep");
	ASSERT_EQ(removed, 2, "the sweep removed both scoped entries");
	ASSERT_EQ(rt_scoped(), 0, "rt_scoped back to 0");
}

static void test_ipv6(void)
{
	struct pkt_spec s;
	__u32 row;
	int v;

	ASSERT_OK(add("2001:db8:1::/48", UDP_ID, 0), "scoped deny of 2001:db8:1::/48, UDP rule");
	s = udp(6, "2001:db8:1::5");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_RT_DENY, "its UDP/53 denied");
	ASSERT_EQ(row, UDP_ID, "UDP row");
	s = tcp(6, "2001:db8:1::5");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_PASS, "its TCP passes");
	s = udp(6, "2001:db8:2::5");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_PASS, "another /48 passes");
}

/* What floodgate deny list and del see. */
static void test_api(void)
{
	struct fg_rt_entry *l = NULL, e;
	char why[FG_WHY_LEN] = "";
	size_t n = 0, n4 = 9, n6 = 9;
	bool updated, expired;

	ASSERT_OK(add("192.0.2.10/32", UDP_ID, 0), "scoped for the UDP rule");
	ASSERT_OK(add("192.0.2.10/32", TCP_ID, 0), "the same prefix scoped for the TCP rule");
	ASSERT_OK(add("192.0.2.10/32", -1, 0), "and whole");
	ASSERT_EQ(rt_scoped(), 2, "rt_scoped 2");
	ASSERT_OK(fg_rt_list(&RT, FG_LIST_DENY, dp_now(&D), &l, &n, &n4, &n6), "list");
	ASSERT_EQ(n, 3, "three entries");
	if (n == 3) {
		ASSERT_TRUE(!l[0].scoped, "whole first");
		ASSERT_TRUE(l[1].scoped && l[1].rule == UDP_ID, "then the UDP rule's");
		ASSERT_TRUE(l[2].scoped && l[2].rule == TCP_ID, "then the TCP rule's");
		ASSERT_EQ(l[1].plen, 32, "its prefix length is the address's");
	}
	ASSERT_EQ(n4, 1, "n4 counts the whole-address entries (what FG_RT_MAX bounds there)");
	free(l);

	ASSERT_OK(add("192.0.2.10/32", UDP_ID, dp_now(&D) + 5 * NS), "again: updated");
	ASSERT_EQ(rt_scoped(), 2, "an update counts nothing");

	e = dp_rt_entry("192.0.2.0/24", FG_LIST_ALLOW, 0, "x");
	e.scoped = true;
	e.rule = UDP_ID;
	ASSERT_EQ(fg_rt_add(&RT, &e, dp_now(&D), &updated, why), -EINVAL,
		  "a scoped allow entry is refused");
	e = dp_rt_entry("192.0.2.0/24", FG_LIST_DENY, 0, "x");
	e.scoped = true;
	e.rule = FG_MAX_IDS;
	ASSERT_EQ(fg_rt_add(&RT, &e, dp_now(&D), &updated, why), -EINVAL,
		  "a rule id out of range is refused");

	e = dp_rt_entry("192.0.2.10/32", FG_LIST_DENY, 0, "x");
	e.scoped = true;
	e.rule = UDP_ID;
	ASSERT_OK(fg_rt_del(&RT, &e, dp_now(&D), &expired, why), "delete the UDP rule's");
	ASSERT_EQ(rt_scoped(), 1, "rt_scoped 1");
	ASSERT_EQ(fg_rt_del(&RT, &e, dp_now(&D), &expired, why), -ENOENT, "gone");
	ASSERT_EQ(dp_rt_active(&D), 1, "the whole-address entry is untouched");
}

#define CASE(fn) FG_CASE_FIXTURE(fn, setup, teardown)

static const struct fg_test_case cases[] = {
	CASE(test_scoped_denies_its_rule_only),
	CASE(test_gate_and_prefixes),
	CASE(test_expiry),
	CASE(test_ipv6),
	CASE(test_api),
};

FG_MAIN_BPF("test_rtscope", "needs root for BPF_PROG_TEST_RUN", cases)
