// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The runtime allow/deny lists: the real XDP program through
 * BPF_PROG_TEST_RUN on the test clock (tests/dp.h), with the entries
 * written by user/lists/rtlist.h as the CLI writes them. Longest prefix over the
 * file's lists, expiry judged by the program alone, the rt_active gate,
 * the bound, shadow, IPv6, and the count kept exact by concurrent writers.
 * FG_NEEDS_ROOT.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "fgtest.h"
#include "dp_rt.h"
#include "dpcheck.h"

#define NS  1000000000ull
#define ANY (-1) /* a verdict or row a check leaves open */

static struct dp D;
static struct fg_rt_maps RT;

static int setup(void)
{
	return dp_rt_check_open(&D, &RT, 1024);
}

static void teardown(void)
{
	fg_rt_close(&RT);
	dp_close(&D);
}

static struct pkt_spec udp4(const char *src)
{
	return (struct pkt_spec){
		.family = 4, .src = src, .proto = 17, .sport = 40000, .dport = 53
	};
}

static struct pkt_spec udp6(const char *src)
{
	return (struct pkt_spec){
		.family = 6, .src = src, .proto = 17, .sport = 40000, .dport = 53
	};
}

/* A policy with the file's lists and a drop rule for UDP/53 from anyone else. */
static void file_policy(void)
{
	struct fg_rule drop = { .action = FG_ACT_DROP };
	struct fg_match m = M_ANY;

	m.proto = 17;
	dp_rule(&D, &drop, &m, 1u << FG_CLASS_UDP);
	ASSERT_OK(dp_pfx(&D, "10.0.0.0/8", FG_LIST_DENY, 0), "file: deny 10/8");
	ASSERT_OK(dp_pfx(&D, "10.1.0.0/16", FG_LIST_ALLOW, 0), "file: allow 10.1/16");
	ASSERT_OK(dp_pfx(&D, "2001:db8::/32", FG_LIST_DENY, 0), "file: deny 2001:db8::/32");
	ASSERT_OK(dp_apply(&D), "apply");
}

/* setup() with file_policy() applied: the fixture of the FILE_CASE tests. */
static int setup_file(void)
{
	if (setup())
		return -1;
	file_policy();
	return 0;
}

/* The longest runtime prefix decides, over the file's lists, both ways. */
static void test_longest_prefix_over_file(void)
{
	/* with the runtime entries below: a frame from each source, and what
	 * the program makes of it (ANY: not checked) */
	static const struct frame_want {
		const char *src;
		int out, verdict, row;
		const char *name;
	} frames[] = {
		{ "10.2.0.1", FG_OUT_RT_ALLOW, XDP_PASS, FG_ROW_GLOBAL,
		  "runtime allow over the file's deny" },
		{ "10.1.5.9", FG_OUT_RT_DENY, XDP_DROP, FG_ROW_GLOBAL,
		  "runtime deny over the file's allow" },
		{ "10.1.6.9", FG_OUT_ALLOW, ANY, ANY, "outside the runtime /24: the file's allow" },
		{ "10.3.0.1", FG_OUT_DENY, ANY, ANY, "outside the runtime /16: the file's deny" },
		{ "192.0.2.1", FG_OUT_RT_DENY, XDP_DROP, ANY, "192.0.2.1: the /24 deny" },
		{ "192.0.2.200", FG_OUT_RT_ALLOW, XDP_PASS, ANY,
		  "192.0.2.200: the longer /25 allow, although the drop rule matches it" },
		{ "198.51.100.1", FG_OUT_DROP, ANY, 0,
		  "no list at all: the drop rule, in its row" },
	};
	struct pkt_spec s;
	__u32 row;
	int v;

	s = udp4("10.2.0.1");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_DENY,
		  "no runtime entries: the file denies 10.2/16");
	ASSERT_OK(dp_rt_add(&D, &RT, "10.2.0.0/16", FG_LIST_ALLOW, 0), "runtime allow 10.2/16");
	ASSERT_OK(dp_rt_add(&D, &RT, "10.1.5.0/24", FG_LIST_DENY, 0), "runtime deny 10.1.5/24");
	ASSERT_OK(dp_rt_add(&D, &RT, "192.0.2.0/24", FG_LIST_DENY, 0), "runtime deny 192.0.2/24");
	ASSERT_OK(dp_rt_add(&D, &RT, "192.0.2.128/25", FG_LIST_ALLOW, 0),
		  "runtime allow inside it");
	ASSERT_EQ(dp_rt_active(&D), 4, "rt_active counts the 4 entries");

	for (size_t i = 0; i < sizeof(frames) / sizeof(frames[0]); i++) {
		const struct frame_want *f = &frames[i];
		char name[128];

		s = udp4(f->src);
		ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), f->out, f->name);
		if (f->verdict != ANY) {
			snprintf(name, sizeof(name), "%s: verdict", f->name);
			ASSERT_EQ(v, f->verdict, name);
		}
		if (f->row != ANY) {
			snprintf(name, sizeof(name), "%s: row", f->name);
			ASSERT_EQ(row, f->row, name);
		}
	}
	ASSERT_EQ(dp_row_pkts(&D, FG_ROW_GLOBAL, FG_OUT_RT_DENY), 2, "rt_deny counted twice");
	ASSERT_EQ(dp_row_pkts(&D, FG_ROW_GLOBAL, FG_OUT_RT_ALLOW), 2, "rt_allow counted twice");

	/* the kill switch still comes first */
	ASSERT_OK(fg_switch_bypass(&D.cm, true, 0), "bypass on");
	s = udp4("10.1.5.9");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_BYPASS, "bypass before the runtime deny");
	ASSERT_EQ(v, XDP_PASS, "bypass passes");
	ASSERT_OK(fg_switch_bypass(&D.cm, false, 0), "bypass off");
}

/*
 * Expiry is the program's alone: no userspace runs between the packets.
 * An expired entry is ignored and counted; the program looks past it for a
 * shorter entry, and when there is none the file decides.
 */
static void test_expiry_in_the_program(void)
{
	struct pkt_spec s = udp4("10.1.3.3");
	__u64 t, ev;
	unsigned int removed = 9;
	int v;

	t = dp_now(&D);
	ASSERT_OK(dp_rt_add(&D, &RT, "10.1.0.0/16", FG_LIST_DENY, t + 2 * NS),
		  "deny 10.1/16 for 2 s");
	ASSERT_OK(dp_rt_add(&D, &RT, "10.1.3.0/24", FG_LIST_ALLOW, t + NS),
		  "allow 10.1.3/24 for 1 s");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_RT_ALLOW, "t: the /24 allow");
	dp_set_now(&D, t + NS - 1);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_RT_ALLOW,
		  "1 ns before its end: still allowed");
	ev = dp_row_ev(&D, FG_ROW_GLOBAL, FG_EV_RT_EXPIRED);
	ASSERT_EQ(ev, 0, "nothing expired yet");

	dp_set_now(&D, t + NS);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_RT_DENY,
		  "t + 1 s: past the expired /24, the /16 deny");
	ASSERT_EQ(v, XDP_DROP, "dropped");
	ASSERT_EQ(dp_row_ev(&D, FG_ROW_GLOBAL, FG_EV_RT_EXPIRED), 1, "the expired /24 counted");

	dp_set_now(&D, t + 2 * NS);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_ALLOW,
		  "t + 2 s: both over, the file's allow");
	ASSERT_EQ(v, XDP_PASS, "passed");
	ASSERT_EQ(dp_row_ev(&D, FG_ROW_GLOBAL, FG_EV_RT_EXPIRED), 2, "counted again");
	s = udp4("10.1.9.9");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_ALLOW,
		  "the /16 alone, over: the file's allow");
	ASSERT_EQ(dp_row_ev(&D, FG_ROW_GLOBAL, FG_EV_RT_EXPIRED), 3, "counted");
	ASSERT_EQ(dp_rt_count(&D, 4), 2,
		  "both entries are still in the map: the program expired them");

	ASSERT_OK(fg_rt_gc(&RT, dp_now(&D), &removed), "sweep");
	ASSERT_EQ(removed, 2, "the sweep removed both");
	ASSERT_EQ(dp_rt_count(&D, 4), 0, "fg_rt4 empty");
	ASSERT_EQ(dp_rt_active(&D), 0, "rt_active back to 0");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_ALLOW, "the file's allow");
	ASSERT_EQ(dp_row_ev(&D, FG_ROW_GLOBAL, FG_EV_RT_EXPIRED), 3, "no lookup, no expired event");

	/* an entry that ends in the program, then goes on to a rule */
	ASSERT_OK(dp_rt_add(&D, &RT, "198.51.100.0/24", FG_LIST_ALLOW, dp_now(&D) + NS),
		  "allow for 1 s");
	s = udp4("198.51.100.7");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_RT_ALLOW, "allowed");
	dp_set_now(&D, dp_now(&D) + NS);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_DROP, "over: the drop rule judges it");
}

/* The walk past expired entries is bounded: FG_RT_DEPTH lookups. With
 * FG_RT_DEPTH - 1 nested expired entries the live one under them decides;
 * with FG_RT_DEPTH the file does. */
static void test_expired_walk_bounded(void)
{
	struct pkt_spec s = udp4("10.1.1.1");
	char cidr[32];
	__u64 t;
	int v;

	t = dp_now(&D);
	ASSERT_OK(dp_rt_add(&D, &RT, "10.1.0.0/16", FG_LIST_DENY, 0), "live deny /16");
	for (int plen = 32; plen > 32 - (FG_RT_DEPTH - 1); plen--) {
		snprintf(cidr, sizeof(cidr), "10.1.1.%d/%d", plen == 32 ? 1 : 0, plen);
		ASSERT_OK(dp_rt_add(&D, &RT, cidr, FG_LIST_ALLOW, t + NS), cidr);
	}
	dp_set_now(&D, t + NS);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_RT_DENY,
		  "FG_RT_DEPTH - 1 expired: the live /16 decides");
	snprintf(cidr, sizeof(cidr), "10.1.1.0/%d", 32 - (FG_RT_DEPTH - 1));
	dp_set_now(&D, t);
	ASSERT_OK(dp_rt_add(&D, &RT, cidr, FG_LIST_ALLOW, t + NS), "one more nested entry");
	dp_set_now(&D, t + NS);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_ALLOW,
		  "FG_RT_DEPTH expired: the walk stops, the file decides");
}

/* rt_active 0: the program does not look (an entry it is not told of is
 * not seen); the count, once right, makes it look. */
static void test_rt_active_gates_lookup(void)
{
	struct fg_rt_entry e = dp_rt_entry("10.1.7.0/24", FG_LIST_DENY, 0, "uncounted");
	struct pkt_spec s = udp4("10.1.7.7");
	int v;

	ASSERT_OK(dp_rt_raw(&D, &e), "entry straight into fg_rt4, rt_active left 0");
	ASSERT_EQ(dp_rt_active(&D), 0, "rt_active 0");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_ALLOW,
		  "rt_active 0: not looked up, the file's allow");
	ASSERT_EQ(dp_row_pkts(&D, FG_ROW_GLOBAL, FG_OUT_RT_DENY), 0, "no rt_deny");
	ASSERT_OK(fg_switch_rt_active(&D.cm, 1), "count it");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_RT_DENY,
		  "rt_active 1: looked up, denied");
	ASSERT_EQ(v, XDP_DROP, "dropped");
	ASSERT_EQ(fg_switch_rt_active(&D.cm, 2), -EINVAL, "only +1 and -1");
}

/* FG_RT_MAX per family: one more is refused with the reason, nothing changes;
 * expired entries do not count; the map itself is the hard stop. */
static void test_bound(void)
{
	char why[FG_WHY_LEN] = "";
	struct fg_rt_entry e;
	bool updated;
	__u64 t;

	t = dp_now(&D);
	ASSERT_OK(dp_rt_fill4(&D, FG_RT_MAX - 1, FG_LIST_DENY), "fill FG_RT_MAX - 1 IPv4 entries");
	ASSERT_OK(dp_rt_add(&D, &RT, "203.0.113.0/24", FG_LIST_DENY, t + NS),
		  "entry FG_RT_MAX (expires)");
	ASSERT_EQ(dp_rt_count(&D, 4), FG_RT_MAX, "full");
	e = dp_rt_entry("198.51.100.0/24", FG_LIST_DENY, 0, "one too many");
	ASSERT_EQ(fg_rt_add(&RT, &e, t, &updated, why), -ENOSPC, "FG_RT_MAX + 1 refused");
	ASSERT_STR_CONTAINS(why, "4096", "the reason names the bound");
	ASSERT_STR_CONTAINS(why, "delete some first", "and what to do");
	printf("  refused: %s\n", why);
	ASSERT_EQ(dp_rt_count(&D, 4), FG_RT_MAX, "nothing added");
	ASSERT_EQ(dp_rt_active(&D), FG_RT_MAX, "rt_active unchanged");
	ASSERT_OK(dp_rt_add(&D, &RT, "2001:db8:1::/48", FG_LIST_DENY, 0), "IPv6 has its own bound");
	ASSERT_EQ(dp_rt_active(&D), FG_RT_MAX + 1, "rt_active counts both families");

	/* updating an entry needs no room */
	e = dp_rt_entry("100.64.0.5/32", FG_LIST_DENY, t + 60 * NS, "updated");
	ASSERT_OK(fg_rt_add(&RT, &e, t, &updated, why), "update an entry of a full family");
	ASSERT_TRUE(updated, "it was an update");
	ASSERT_EQ(dp_rt_active(&D), FG_RT_MAX + 1, "an update does not count");

	/* once one has expired, add removes it and there is room again */
	dp_set_now(&D, t + NS);
	e = dp_rt_entry("198.51.100.0/24", FG_LIST_DENY, 0, "fits now");
	ASSERT_OK(fg_rt_add(&RT, &e, dp_now(&D), &updated, why), "room after the expired one");
	ASSERT_EQ(dp_rt_count(&D, 4), FG_RT_MAX, "the expired one removed, the new one in");
	ASSERT_EQ(dp_rt_active(&D), FG_RT_MAX + 1, "rt_active exact");

	/* the map refuses on its own what a racing writer would push past the count */
	e = dp_rt_entry("192.0.2.0/24", FG_LIST_DENY, 0, NULL);
	ASSERT_EQ(dp_rt_raw(&D, &e), -ENOSPC, "fg_rt4 max_entries is the hard stop");
}

/* Global shadow: a runtime deny is counted as its shadow twin,
 * rt_deny_shadow, and passed (ABI 8; it was rt_deny before). */
static void test_shadow(void)
{
	struct pkt_spec s = udp4("10.1.5.9");
	__u32 row;
	int v;

	ASSERT_OK(dp_rt_add(&D, &RT, "10.1.5.0/24", FG_LIST_DENY, 0), "runtime deny");
	ASSERT_OK(fg_switch_file_mode(&D.cm, FG_MODE_SHADOW), "file mode shadow");
	ASSERT_EQ(dp_outcome_of(&D, &s, &row, &v), FG_OUT_RT_DENY_SHADOW,
		  "counted as rt_deny_shadow in shadow");
	ASSERT_EQ(v, XDP_PASS, "and passed");
	ASSERT_EQ(row, FG_ROW_GLOBAL, "global row");
	ASSERT_OK(fg_switch_file_mode(&D.cm, FG_MODE_ENFORCE), "file mode enforce");
	ASSERT_OK(fg_switch_mode_ovr(&D.cm, FG_OVR_SHADOW), "operator's shadow override");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_RT_DENY_SHADOW,
		  "rt_deny_shadow under the override");
	ASSERT_EQ(v, XDP_PASS, "passed");
	ASSERT_OK(fg_switch_mode_ovr(&D.cm, FG_OVR_NONE), "override off");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_RT_DENY, "enforce");
	ASSERT_EQ(v, XDP_DROP, "dropped");
	ASSERT_EQ(dp_row_pkts(&D, FG_ROW_GLOBAL, FG_OUT_RT_DENY_SHADOW), 2,
		  "the two shadow passes counted as rt_deny_shadow");
	ASSERT_EQ(dp_row_pkts(&D, FG_ROW_GLOBAL, FG_OUT_RT_DENY), 1, "the enforced one as rt_deny");
}

static void test_ipv6(void)
{
	struct pkt_spec s;
	__u64 t;
	int v;

	t = dp_now(&D);
	s = udp6("2001:db8:bad:1::9");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_DENY, "the file denies 2001:db8::/32");
	ASSERT_OK(dp_rt_add(&D, &RT, "2001:db8:bad::/48", FG_LIST_ALLOW, 0), "allow /48");
	ASSERT_OK(dp_rt_add(&D, &RT, "2001:db8:bad:1::/64", FG_LIST_DENY, t + NS),
		  "deny /64 for 1 s");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_RT_DENY, "the /64 deny");
	ASSERT_EQ(v, XDP_DROP, "dropped");
	s = udp6("2001:db8:bad:2::9");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_RT_ALLOW,
		  "the /48 allow over the file's deny");
	ASSERT_EQ(v, XDP_PASS, "passed");
	s = udp6("2001:db8:bad:1::9");
	dp_set_now(&D, t + NS);
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_RT_ALLOW, "the /64 over: the /48 allow");
	ASSERT_EQ(dp_row_ev(&D, FG_ROW_GLOBAL, FG_EV_RT_EXPIRED), 1, "expired /64 counted");
	s = udp4("10.1.5.9");
	ASSERT_EQ(dp_outcome_of(&D, &s, NULL, &v), FG_OUT_ALLOW,
		  "IPv4 is not in fg_rt6: the file's allow");
}

/* add, update, del and list as the CLI uses them; bad input changes nothing. */
static void test_api(void)
{
	char why[FG_WHY_LEN] = "";
	struct fg_rt_entry e, *v = NULL;
	size_t n = 0, n4 = 9, n6 = 9;
	bool updated, expired;
	__u64 t;

	t = dp_now(&D);
	ASSERT_OK(dp_rt_add(&D, &RT, "192.0.2.0/24", FG_LIST_DENY, t + 5 * NS), "deny for 5 s");
	e = dp_rt_entry("192.0.2.0/24", FG_LIST_DENY, t + 10 * NS, "longer");
	ASSERT_OK(fg_rt_add(&RT, &e, t, &updated, why), "add again");
	ASSERT_TRUE(updated, "an update");
	ASSERT_EQ(dp_rt_active(&D), 1, "still one");
	e = dp_rt_entry("192.0.2.0/24", FG_LIST_ALLOW, 0, NULL);
	ASSERT_EQ(fg_rt_add(&RT, &e, t, &updated, why), -EEXIST, "the other list: refused");
	ASSERT_STR_CONTAINS(why, "floodgate deny del 192.0.2.0/24", "says what to do");
	ASSERT_EQ(fg_rt_del(&RT, &e, t, &expired, why), -ENOENT, "del on the other list: refused");
	ASSERT_STR_CONTAINS(why, "on the runtime deny list, not on the allow list", "says why");
	ASSERT_EQ(dp_rt_active(&D), 1, "still one");

	/* bad input */
	e = dp_rt_entry("192.0.2.0/24", FG_LIST_DENY, 0, NULL);
	e.addr[3] = 1;
	ASSERT_EQ(fg_rt_add(&RT, &e, t, &updated, why), -EINVAL, "host bits set");
	ASSERT_STR_CONTAINS(why, "host bits", "reason");
	e = dp_rt_entry("192.0.2.0/24", FG_LIST_DENY, 0, NULL);
	e.plen = 33;
	ASSERT_EQ(fg_rt_add(&RT, &e, t, &updated, why), -EINVAL, "/33");
	e = dp_rt_entry("198.51.100.0/24", FG_LIST_DENY, t, NULL);
	ASSERT_EQ(fg_rt_add(&RT, &e, t, &updated, why), -EINVAL, "expiry now");
	ASSERT_STR_CONTAINS(why, "not in the future", "reason");
	e = dp_rt_entry("198.51.100.0/24", FG_LIST_DENY, 0, "two\nlines");
	ASSERT_EQ(fg_rt_add(&RT, &e, t, &updated, why), -EINVAL, "a newline in the comment");
	e = dp_rt_entry("198.51.100.0/24", 7, 0, NULL);
	ASSERT_EQ(fg_rt_add(&RT, &e, t, &updated, why), -EINVAL, "list 7");
	ASSERT_EQ(dp_rt_count(&D, 4), 1, "nothing added by bad input");
	ASSERT_EQ(dp_rt_active(&D), 1, "rt_active unchanged");

	ASSERT_OK(dp_rt_add(&D, &RT, "2001:db8::/48", FG_LIST_ALLOW, 0), "allow v6");
	ASSERT_OK(dp_rt_add(&D, &RT, "10.0.0.0/8", FG_LIST_DENY, t + NS), "deny 10/8 for 1 s");
	dp_set_now(&D, t + 2 * NS);
	ASSERT_OK(fg_rt_list(&RT, FG_LIST_DENY, dp_now(&D), &v, &n, &n4, &n6), "list deny");
	if (ASSERT_EQ(n, 2, "two deny entries listed")) {
		char p[80];

		fg_rt_prefix_str(&v[0], p, sizeof(p));
		ASSERT_EQ(strcmp(p, "10.0.0.0/8"), 0, "sorted: 10/8 first");
		ASSERT_TRUE(v[0].expired, "10/8 listed as expired");
		ASSERT_EQ(v[1].expired, 0, "192.0.2/24 live");
		ASSERT_EQ(strcmp(v[1].val.comment, "longer"), 0, "with its comment");
		ASSERT_EQ(strcmp(v[1].val.who, "uid 0 (test)"), 0, "and who");
		ASSERT_EQ(v[1].val.expires, t + 10 * NS, "and the updated expiry");
	}
	free(v);
	ASSERT_EQ(n4, 1, "one live IPv4 entry");
	ASSERT_EQ(n6, 1, "one live IPv6 entry");
	ASSERT_EQ(dp_rt_count(&D, 4), 1, "the expired one was removed by list");
	ASSERT_EQ(dp_rt_active(&D), 2, "rt_active exact");

	e = dp_rt_entry("192.0.2.0/24", FG_LIST_DENY, 0, NULL);
	ASSERT_OK(fg_rt_del(&RT, &e, dp_now(&D), &expired, why), "del");
	ASSERT_EQ(expired, 0, "it was live");
	ASSERT_EQ(fg_rt_del(&RT, &e, dp_now(&D), &expired, why), -ENOENT, "del again: none");
	ASSERT_STR_CONTAINS(why, "not on the runtime deny list", "reason");
	e = dp_rt_entry("2001:db8::/48", FG_LIST_ALLOW, 0, NULL);
	ASSERT_OK(fg_rt_del(&RT, &e, dp_now(&D), &expired, why), "del v6");
	ASSERT_EQ(dp_rt_active(&D), 0, "rt_active 0");
	ASSERT_OK(fg_rt_list(&RT, FG_LIST_NONE, dp_now(&D), &v, &n, NULL, NULL), "list all");
	ASSERT_EQ(n, 0, "empty");
	ASSERT_TRUE(v == NULL, "nothing allocated");
}

/* Writers on two CPUs adding, updating, deleting and sweeping the same
 * prefixes, some expiring: afterwards rt_active equals the entries. */
struct writer {
	int cpu, seed, errors;
	__u64 now;
};

static void *writer_run(void *arg)
{
	struct writer *w = arg;
	struct fg_rt_maps rt;
	cpu_set_t set;
	unsigned int seed = (unsigned int)w->seed;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	if (dp_rt_open(&D, &rt)) {
		w->errors++;
		return NULL;
	}
	for (int i = 0; i < 3000; i++) {
		char cidr[32], why[FG_WHY_LEN];
		struct fg_rt_entry e;
		bool b;
		int r = rand_r(&seed) % 16, op = rand_r(&seed) % 4, err = 0;

		snprintf(cidr, sizeof(cidr), "198.18.%d.0/24", r);
		/* prefixes 0..7 expire at once (w->now), the others never */
		e = dp_rt_entry(cidr, FG_LIST_DENY, r < 8 ? w->now + 1 : 0, "race");
		switch (op) {
		case 0:
		case 1:
			err = fg_rt_add(&rt, &e, w->now, &b, why);
			break;
		case 2:
			err = fg_rt_del(&rt, &e, w->now, &b, why);
			err = err == -ENOENT ? 0 : err;
			break;
		default:
			err = fg_rt_gc(&rt, w->now + 1, NULL);
			break;
		}
		if (err && err != -EAGAIN)
			w->errors++;
	}
	fg_rt_close(&rt);
	return NULL;
}

static void test_count_exact_under_concurrency(void)
{
	struct writer w[2] = { { .cpu = 0, .seed = 1 }, { .cpu = 1, .seed = 2 } };
	pthread_t th[2];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	if (ncpu < 2) {
		fg_test_skip("needs 2 CPUs, this machine has %ld", ncpu);
		return;
	}
	if (setup())
		return;
	w[0].now = w[1].now = dp_now(&D);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, writer_run, &w[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	ASSERT_EQ(w[0].errors + w[1].errors, 0, "no writer failed");
	printf("  after 6000 operations: %u entries, rt_active %u\n", dp_rt_count(&D, 4),
	       dp_rt_active(&D));
	ASSERT_EQ(dp_rt_active(&D), dp_rt_count(&D, 4), "rt_active equals the entries");
	ASSERT_OK(fg_rt_gc(&RT, dp_now(&D) + 1, NULL), "sweep the expired ones");
	ASSERT_EQ(dp_rt_active(&D), dp_rt_count(&D, 4), "still equal after the sweep");
	ASSERT_LE(dp_rt_count(&D, 4), 8, "only the 8 that never expire may be left");
	teardown();
}

/* The tests that start from setup_file() and end with teardown(). */
#define FILE_CASE(fn) FG_CASE_FIXTURE(fn, setup_file, teardown)

static const struct fg_test_case cases[] = {
	FILE_CASE(test_longest_prefix_over_file),
	FILE_CASE(test_expiry_in_the_program),
	FILE_CASE(test_expired_walk_bounded),
	FILE_CASE(test_rt_active_gates_lookup),
	FILE_CASE(test_bound),
	FILE_CASE(test_shadow),
	FILE_CASE(test_ipv6),
	FILE_CASE(test_api),
	FG_CASE(test_count_exact_under_concurrency),
};

FG_MAIN_BPF("test_rtlist", "needs root for BPF_PROG_TEST_RUN", cases)
