// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fg_src6, the set-associative IPv6 source table (include/floodgate.h,
 * struct fg_set6), driven through the real XDP program with
 * BPF_PROG_TEST_RUN and the test clock: the eviction invariant under a
 * spoofed spray, idle ways reused, sources of one set kept apart, rule and
 * generation separation, the on_full paths, prefix grouping, and the
 * owner's copy as userspace reads it (user/sources/sources.c). FG_NEEDS_ROOT.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "fgtest.h"
#include "dp.h"
#include "dpcheck.h"
#include "maps/fgmaps.h"
#include "lib/prefix.h"
#include "sources/sources.h"

#define NS	   1000000000ull
#define MS	   1000000ull
#define SADDR6_OFF (14 + 8) /* Ethernet, then the IPv6 source address */

static struct dp D;

static int setup(__u32 max_sources)
{
	return dp_check_open(&D, max_sources);
}

static struct fg_rule limit_rule(double rate, double burst, int plen6)
{
	struct fg_rule r = { .action = FG_ACT_LIMIT, .mask4 = 0xffffffff };

	r.src = dp_lim(rate, burst);
	fg_mask6(plen6, r.mask6);
	return r;
}

static struct pkt_spec udp6(const char *src, uint16_t dport)
{
	return (struct pkt_spec){
		.family = 6, .src = src, .proto = 17, .sport = 40000, .dport = dport
	};
}

static struct fg_ctl ctl_now(void)
{
	struct fg_ctl c = {};

	fg_ctl_snapshot(&D.cm, &c);
	return c;
}

/* Where the program keeps src (masked by plen6) under rule id/gen: its set
 * and key, as floodgate.h defines them. */
static __u64 key_of(const char *src, int plen6, __u16 id, __u16 gen, __u32 *set)
{
	struct fg_ctl c = ctl_now();
	struct fg_who6 w = { .rule = id, .gen = gen };
	__be32 m[4];

	inet_pton(AF_INET6, src, w.addr);
	fg_mask6(plen6, m);
	for (int i = 0; i < 4; i++)
		w.addr[i] &= m[i];
	*set = fg_set6_of(fg_who6_digest(&w, c.seed6), c.src6_bits);
	return fg_who6_digest(&w, c.seed6);
}

static int read_set(__u32 idx, struct fg_set6 *set)
{
	return bpf_map_lookup_elem(bpf_map__fd(D.skel->maps.fg_src6), &idx, set) ? -errno : 0;
}

/* The way src holds (0..FG_WAYS6-1) and its bucket, or -1. */
static int way_of(const char *src, int plen6, __u16 id, __u16 gen, struct fg_set6 *set)
{
	__u32 idx;
	__u64 key = key_of(src, plen6, id, gen, &idx);

	if (read_set(idx, set))
		return -1;
	for (int w = 0; w < FG_WAYS6; w++)
		if (set->way[w].key == key)
			return w;
	return -1;
}

static __u32 count_ways(void)
{
	__u32 nsets = bpf_map__max_entries(D.skel->maps.fg_src6), n = 0;
	struct fg_set6 set;

	for (__u32 i = 0; i < nsets; i++)
		if (!read_set(i, &set))
			for (int w = 0; w < FG_WAYS6; w++)
				n += set.way[w].key != 0;
	return n;
}

/* Packets of s that pass out of n. */
static int passes(const struct pkt_spec *s, int n)
{
	int ok = 0;

	for (int i = 0; i < n; i++)
		ok += dp_send(&D, s) == XDP_PASS;
	return ok;
}

/* A spoofed /64 per frame: the top 64 bits of the source from a PRNG. */
static void spoof64(uint8_t *buf, __u64 *state)
{
	__u64 x = (*state = *state * 6364136223846793005ull + 1442695040888963407ull);

	buf[SADDR6_OFF + 0] = 0x20;
	buf[SADDR6_OFF + 1] = 0x01;
	for (int i = 2; i < 8; i++)
		buf[SADDR6_OFF + i] = (uint8_t)(x >> (8 * i));
}

/*
 * The invariant: S is throttled, then 131,072 spoofed /64s (32x the table)
 * arrive within 1 s, half of S's refill time; S resumes at once. It must
 * get exactly what 1 s of refill gives (10), never a fresh burst (20), and
 * its way must be the one it had. With and without the admission limit:
 * the invariant does not depend on it.
 */
static void spray_run(int with_admission)
{
	const __u32 table = 4096, spray = 131072;
	struct fg_rule r = limit_rule(10, 20, 64); /* T_refill = 2 s */
	struct pkt_spec s = udp6("2001:db8:77::1", 7), sp = udp6("2001:db8:1::1", 7);
	struct fg_set6 set;
	uint8_t buf[512];
	__u64 t, st = 11, tat0;
	int len, got, w0, w1;

	if (setup(table))
		return;
	dp_rule(&D, &r, &M_ANY, C_ALL);
	if (with_admission && !ASSERT_OK(dp_set_admission(&D, table), "admission limit"))
		goto out;
	dp_apply(&D);
	t = dp_now(&D);
	ASSERT_EQ(passes(&s, 40), 20, "S first gets its burst of 20");
	w0 = way_of("2001:db8:77::1", 64, 0, 0, &set);
	if (!ASSERT_GE(w0, 0, "S holds a way"))
		goto out;
	tat0 = set.way[w0].tat;
	len = pkt_build(&sp, buf, sizeof(buf));
	for (__u32 i = 0; i < spray; i++) {
		__u32 ret;

		spoof64(buf, &st);
		dp_set_now(&D, t + NS * (__u64)i / spray);
		dp_run(&D, buf, len, &ret);
	}
	w1 = way_of("2001:db8:77::1", 64, 0, 0, &set);
	ASSERT_EQ(w1, w0, "S keeps its way through the spray");
	ASSERT_EQ(set.way[w0].tat, tat0, "and its bucket is untouched");
	dp_set_now(&D, t + NS);
	got = passes(&s, 40);
	printf("  %s admission limit: S got %d after %u spoofed /64s in 1 s; %llu set full, %llu admission refused, %u ways used\n",
	       with_admission ? "with" : "without", got, spray,
	       (unsigned long long)dp_row_ev(&D, 0, FG_EV_INSERT_FAIL),
	       (unsigned long long)dp_row_ev(&D, 0, FG_EV_INSERT_LIMITED), count_ways());
	ASSERT_EQ(got, 10, "S gets 1 s of refill, no fresh burst");
	ASSERT_LE(count_ways(), bpf_map__max_entries(D.skel->maps.fg_src6) * FG_WAYS6, "ways");
	if (with_admission)
		ASSERT_GE(dp_row_ev(&D, 0, FG_EV_INSERT_LIMITED), spray / 2,
			  "the spray was mostly refused by the admission limit");
	else
		ASSERT_GE(dp_row_ev(&D, 0, FG_EV_INSERT_FAIL), spray / 2,
			  "without it, the spray found its sets full");
out:
	dp_close(&D);
}

static void test_spray_keeps_throttled_bucket(void)
{
	spray_run(1);
	spray_run(0);
}

/* Idle buckets are reused without a sweeper: 4,000 /64s each leave a bucket
 * that is not full in a 1,024-way table, so later ones find their set full
 * (counted, charged to overflow); once the buckets are full again a new
 * wave of sources takes their ways. */
static void test_idle_ways_reused(void)
{
	struct fg_rule r = limit_rule(1, 2, 64);
	__u32 cap, fail1, ins1;
	char src[64];
	int v;

	if (setup(1024))
		return;
	r.ovf = dp_lim(1000000, 1000000);
	dp_rule(&D, &r, &M_ANY, C_ALL);
	dp_apply(&D);
	cap = bpf_map__max_entries(D.skel->maps.fg_src6) * FG_WAYS6;
	ASSERT_EQ(cap, 1024, "1024 ways for max_sources 1024");
	for (int i = 0; i < 4000; i++) {
		struct pkt_spec s;

		snprintf(src, sizeof(src), "2001:db8:%x:%x::1", i >> 8, i & 0xff);
		s = udp6(src, 7);
		dp_send(&D, &s);
	}
	ins1 = (__u32)dp_row_ev(&D, 0, FG_EV_INSERT);
	fail1 = (__u32)dp_row_ev(&D, 0, FG_EV_INSERT_FAIL);
	printf("  first wave: %u inserted, %u found their set full, %u ways used\n", ins1, fail1,
	       count_ways());
	ASSERT_LE(ins1, cap, "no more buckets than ways");
	ASSERT_GE(ins1, cap * 9 / 10, "the table fills");
	ASSERT_EQ(ins1 + fail1, 4000, "every source either got a way or was counted");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_OVERFLOW), fail1, "those went to the overflow bucket");
	/* 3 s later every bucket is full (burst 2 at 1/s): the ways are free;
	 * a set takes up to FG_WAYS6 of the second wave (then they are not
	 * full), so exactly sum over sets of min(arrivals, FG_WAYS6) get one */
	__u32 nsets = bpf_map__max_entries(D.skel->maps.fg_src6),
	      *per = calloc(nsets, sizeof(*per));
	__u32 expect = 0, idx;

	if (!ASSERT_TRUE(per != NULL, "calloc"))
		goto out;
	dp_set_now(&D, dp_now(&D) + 3 * NS);
	for (int i = 0; i < 1000; i++) {
		struct pkt_spec s;

		snprintf(src, sizeof(src), "2001:db8:ff%02x:%x::1", i >> 8, i & 0xff);
		key_of(src, 64, 0, 0, &idx);
		expect += per[idx % nsets]++ < FG_WAYS6;
		s = udp6(src, 7);
		v = dp_send(&D, &s);
		if (v != XDP_PASS)
			ASSERT_EQ(v, XDP_PASS, "a new source of the second wave passes");
	}
	free(per);
	printf("  second wave: %llu inserted of 1000 (%u by the sets' arrivals), %u ways used\n",
	       (unsigned long long)dp_row_ev(&D, 0, FG_EV_INSERT) - ins1, expect, count_ways());
	ASSERT_GE(expect, 800, "the second wave fits mostly");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_INSERT) - ins1, expect,
		  "idle ways were taken over, every one a set had");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_INSERT_FAIL),
		  fail1 + 1000 - (dp_row_ev(&D, 0, FG_EV_INSERT) - ins1),
		  "the rest are counted as set full");
	ASSERT_LE(count_ways(), cap, "still no more than the ways");
out:
	dp_close(&D);
}

/*
 * Sources of one set: find FG_WAYS6 + 1 /64s whose digests pick the same
 * set (possible only knowing the seed), throttle them one after another:
 * each gets its own burst and its own way, never another's bucket; the
 * one too many finds the set full and is charged per on_full.
 */
static void test_same_set_kept_apart(void)
{
	struct fg_rule r = limit_rule(1, 3, 64);
	char srcs[FG_WAYS6 + 1][64];
	__u64 keys[FG_WAYS6 + 1];
	__u32 want = 0, idx;
	struct fg_set6 set;
	int n = 0;

	if (setup(1024))
		return;
	r.ovf = dp_lim(1, 1);
	r.on_full = FG_FULL_CLOSED;
	dp_rule(&D, &r, &M_ANY, C_ALL);
	dp_apply(&D);
	for (__u32 i = 0; n < FG_WAYS6 + 1 && i < 1000000; i++) {
		char a[64];
		__u64 k;

		snprintf(a, sizeof(a), "2001:db8:%x:%x::5", i >> 16, i & 0xffff);
		k = key_of(a, 64, 0, 0, &idx);
		if (n == 0)
			want = idx;
		if (idx != want)
			continue;
		memcpy(srcs[n], a, sizeof(a));
		keys[n++] = k;
	}
	if (!ASSERT_EQ(n, FG_WAYS6 + 1, "found 9 /64s of one set"))
		goto out;
	for (int i = 0; i < FG_WAYS6; i++) {
		struct pkt_spec s = udp6(srcs[i], 7);

		ASSERT_EQ(passes(&s, 5), 3, "its own burst of 3, not a neighbour's");
		for (int j = 0; j < i; j++)
			ASSERT_NEQ(keys[i], keys[j], "distinct digests");
	}
	ASSERT_OK(read_set(want, &set), "read the set");
	for (int i = 0; i < FG_WAYS6; i++) {
		int w = way_of(srcs[i], 64, 0, 0, &set);
		struct in6_addr a;

		ASSERT_GE(w, 0, "each holds a way");
		if (w < 0)
			continue;
		inet_pton(AF_INET6, srcs[i], &a);
		ASSERT_EQ(memcmp(set.who[w].addr, &a, 8), 0, "the way's copy is its own /64");
		ASSERT_TRUE(set.way[w].tat > dp_now(&D) << FG_TU_SHIFT,
			    "and its bucket is throttled");
	}
	struct pkt_spec s9 = udp6(srcs[FG_WAYS6], 7);

	ASSERT_EQ(passes(&s9, 3), 0, "the ninth finds its set full: on_full closed drops");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_INSERT_FAIL), 3, "counted as set full");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_FULL_CLOSED), 3, "and as fail-closed");
	ASSERT_EQ(way_of(srcs[FG_WAYS6], 64, 0, 0, &set), -1, "it holds no way");
	/* 3 s later the buckets are full: the oldest way goes to the ninth */
	dp_set_now(&D, dp_now(&D) + 4 * NS);
	ASSERT_EQ(passes(&s9, 5), 3, "then it gets a way of its own and a burst");
	ASSERT_GE(way_of(srcs[FG_WAYS6], 64, 0, 0, &set), 0, "in the same set");
out:
	dp_close(&D);
}

/* Rule ids and generations: one source under two rules has two buckets; a
 * rule id handed to a new rule (gen + 1) does not inherit the old bucket. */
static void test_rule_and_gen_apart(void)
{
	struct fg_rule a = limit_rule(1, 2, 64), b = limit_rule(1, 4, 64);
	struct fg_match ma = M_ANY, mb = M_ANY;
	struct pkt_spec sa = udp6("2001:db8:9::1", 100), sb = udp6("2001:db8:9::1", 200);
	struct fg_set6 set;

	if (setup(1024))
		return;
	ma.dport_lo = ma.dport_hi = 100;
	mb.dport_lo = mb.dport_hi = 200;
	dp_rule_id(&D, &a, &ma, C_ALL, 5);
	dp_rule_id(&D, &b, &mb, C_ALL, 6);
	dp_apply(&D);
	ASSERT_EQ(passes(&sa, 6), 2, "rule 5: its burst of 2");
	ASSERT_EQ(passes(&sb, 6), 4, "rule 6: its own burst of 4, not rule 5's leftovers");
	ASSERT_GE(way_of("2001:db8:9::1", 64, 5, 0, &set), 0, "a way under rule 5");
	ASSERT_GE(way_of("2001:db8:9::1", 64, 6, 0, &set), 0, "and one under rule 6");
	/* id 5 goes to a new rule: gen 1 */
	dp_pol_reset(&D);
	a.gen = 1;
	dp_rule_id(&D, &a, &ma, C_ALL, 5);
	dp_apply(&D);
	ASSERT_EQ(passes(&sa, 6), 2, "a new generation starts from a full bucket");
	ASSERT_GE(way_of("2001:db8:9::1", 64, 5, 1, &set), 0, "under its own key");
	ASSERT_EQ(dp_row_ev(&D, 5, FG_EV_INSERT), 2, "two buckets for id 5, one per gen");
	dp_close(&D);
}

/* on_full when the admission limit refuses: overflow, open, closed, each
 * counted (test_same_set_kept_apart covers a full set). */
static void test_on_full_paths(void)
{
	for (int mode = 0; mode < 3; mode++) {
		struct fg_rule r = limit_rule(1, 2, 64);
		int passed = 0;

		if (setup(1024))
			return;
		r.on_full = mode;
		r.ovf = dp_lim(1, 3);
		dp_rule(&D, &r, &M_ANY, C_ALL);
		D.pol.ins = dp_lim(1, 2); /* two new sources, then one a second */
		dp_apply(&D);
		for (int i = 0; i < 10; i++) {
			char src[64];
			struct pkt_spec s;

			snprintf(src, sizeof(src), "2001:db8:%x::1", 0x100 + i);
			s = udp6(src, 7);
			passed += dp_send(&D, &s) == XDP_PASS;
		}
		ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_INSERT), 2, "two admitted");
		ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_INSERT_LIMITED), 8, "eight refused");
		ASSERT_EQ(count_ways(), 2, "two ways used");
		dp_check_on_full(&D, "admission refused", mode, passed, 10, 2, 8, 3);
		dp_close(&D);
	}
}

/* Grouping by the rule's prefix_v6: /64 (the default) shares one bucket
 * within a /64; /48 within a /48; /128 per address. The way's copy holds
 * the masked prefix. */
static void test_prefix_grouping(void)
{
	static const struct {
		int plen;
		const char *a, *same, *other, *copy;
	} c[] = {
		{ 64, "2001:db8:5:1::1", "2001:db8:5:1:ffff::2", "2001:db8:5:2::1",
		  "2001:db8:5:1::" },
		{ 48, "2001:db8:6:1::1", "2001:db8:6:ffff::9", "2001:db8:7::1", "2001:db8:6::" },
		{ 128, "2001:db8:8::1", "2001:db8:8::1", "2001:db8:8::2", "2001:db8:8::1" },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct fg_rule r = limit_rule(1, 2, c[i].plen);
		struct pkt_spec s1 = udp6(c[i].a, 7), s2 = udp6(c[i].same, 7),
				s3 = udp6(c[i].other, 7);
		struct in6_addr want;
		struct fg_set6 set;
		int w;

		if (setup(1024))
			return;
		dp_rule(&D, &r, &M_ANY, C_ALL);
		dp_apply(&D);
		ASSERT_EQ(passes(&s1, 1) + passes(&s2, 3), 2, "one bucket for the prefix");
		ASSERT_EQ(passes(&s3, 3), 2, "another prefix has its own");
		w = way_of(c[i].a, c[i].plen, 0, 0, &set);
		inet_pton(AF_INET6, c[i].copy, &want);
		if (ASSERT_GE(w, 0, "found under its masked prefix")) {
			ASSERT_EQ(memcmp(set.who[w].addr, &want, 16), 0,
				  "the copy is the masked prefix");
			ASSERT_EQ(set.who[w].rule, 0, "rule id");
			ASSERT_EQ(set.who[w].gen, 0, "gen");
		}
		ASSERT_EQ(count_ways(), 2, "two ways");
		dp_close(&D);
	}
}

/*
 * Userspace reads fg_src6 through its mmap (user/sources/sources.c): every way is
 * counted, each shown with its owner's prefix, rule and drops; a way whose
 * copy does not match its key (a claim in progress) is counted and not
 * shown. Bad seed in fg_ctl: every way is "being claimed", none invented.
 */
static void test_sources_read_v6(void)
{
	char dir[] = "/tmp/test_src6.XXXXXX";
	struct fg_rule r = limit_rule(1, 1, 64);
	struct fg_source *out = NULL;
	struct fg_src_scan scan;
	struct fg_maps m;
	size_t n = 0, n4, n6;
	int found = 0;

	if (setup(1024))
		return;
	dp_rule(&D, &r, &M_ANY, C_ALL);
	dp_apply(&D);
	for (int i = 0; i < 50; i++) {
		char src[64];
		struct pkt_spec s;

		snprintf(src, sizeof(src), "2001:db8:ab:%x::1", i);
		s = udp6(src, 7);
		passes(&s, i == 7 ? 40 : 1); /* 2001:db8:ab:7::/64 is throttled */
	}
	if (!ASSERT_TRUE(mkdtemp(dir) != NULL, "temp dir") ||
	    !ASSERT_OK(fg_maps_from_skel(&m, D.skel, dir), "maps")) {
		dp_close(&D);
		return;
	}
	ASSERT_OK(fg_sources_count(&m, &n4, &n6), "count");
	ASSERT_EQ(n6, 50, "50 IPv6 buckets");
	ASSERT_EQ(n4, 0, "no IPv4");
	ASSERT_OK(fg_sources_read(&m, &D.pol, dp_now(&D), FG_DROP_SAMPLE, 100, &out, &n, &scan),
		  "read");
	ASSERT_EQ(scan.all6, 50, "all walked");
	ASSERT_EQ(scan.claiming6, 0, "none being claimed");
	for (size_t i = 0; i < n; i++) {
		struct in6_addr want;

		inet_pton(AF_INET6, "2001:db8:ab:7::", &want);
		if (out[i].family == 6 && !memcmp(out[i].addr, &want, 16)) {
			found++;
			ASSERT_EQ(out[i].limited, 1, "the throttled /64 is limited");
			ASSERT_GE(out[i].drops, FG_DROP_SAMPLE, "with sampled drops");
			ASSERT_EQ(out[i].rule, 0, "rule");
		}
	}
	ASSERT_EQ(found, 1, "the throttled /64 shown once, by its prefix");
	free(out);
	out = NULL;
	/* a claim in progress: a key whose copy is another's */
	{
		struct fg_set6 set;
		__u32 idx;
		int w;

		key_of("2001:db8:ab:3::1", 64, 0, 0, &idx);
		w = way_of("2001:db8:ab:3::1", 64, 0, 0, &set);
		if (ASSERT_GE(w, 0, "its way")) {
			set.who[w].addr[3] ^= 1;
			ASSERT_OK(bpf_map_update_elem(bpf_map__fd(D.skel->maps.fg_src6), &idx, &set,
						      0) ?
					  -errno :
					  0,
				  "write a stale copy");
		}
	}
	ASSERT_OK(fg_sources_read(&m, &D.pol, dp_now(&D), 0, 100, &out, &n, &scan), "read again");
	ASSERT_EQ(scan.all6, 50, "still counted");
	ASSERT_EQ(scan.claiming6, 1, "one being claimed");
	ASSERT_EQ(n, 49, "and not shown");
	free(out);
	fg_maps_close(&m);
	rmdir(dir);
	dp_close(&D);
}

/* Two CPUs claiming the same new sources in lockstep: one CAS decides
 * each way, so every source ends with exactly one way and one insert, and
 * the way's copy is its own. */
#define CLAIM_N 2000
static pthread_barrier_t claim_bar;

struct claimer {
	int cpu, err;
};

/* Source 2001:db8:I::1, I in bits 32..47. */
static void claim_frame(__u8 *buf, __u32 i)
{
	buf[SADDR6_OFF + 4] = (__u8)(i >> 8);
	buf[SADDR6_OFF + 5] = (__u8)i;
}

static void *claim_fn(void *arg)
{
	struct claimer *c = arg;
	struct pkt_spec s = udp6("2001:db8::1", 7);
	__u8 buf[512];
	int len = pkt_build(&s, buf, sizeof(buf));
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(c->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		c->err = -errno;
	for (__u32 i = 0; i < CLAIM_N; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = buf, .data_size_in = len, .repeat = 1);

		claim_frame(buf, i);
		pthread_barrier_wait(&claim_bar);
		if (!c->err && bpf_prog_test_run_opts(D.prog, &o))
			c->err = -errno;
		pthread_barrier_wait(&claim_bar);
	}
	return NULL;
}

static void test_two_cpus_claim(void)
{
	struct fg_rule r = limit_rule(1, 2, 64);
	struct claimer c[2] = { { .cpu = 0 }, { .cpu = 1 } };
	pthread_t th[2];
	int once = 0, valid = 0;

	if (libbpf_num_possible_cpus() < 2) {
		fg_test_skip("needs 2 CPUs");
		return;
	}
	if (setup(16384))
		return;
	dp_rule(&D, &r, &M_ANY, C_ALL);
	dp_apply(&D);
	pthread_barrier_init(&claim_bar, NULL, 2);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, claim_fn, &c[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&claim_bar);
	ASSERT_OK(c[0].err, "CPU 0 ran");
	ASSERT_OK(c[1].err, "CPU 1 ran");
	for (__u32 i = 0; i < CLAIM_N; i++) {
		char a[64];
		struct fg_set6 set;
		__u32 idx;
		__u64 key;
		int n = 0;

		snprintf(a, sizeof(a), "2001:db8:%x::", i); /* claim_frame writes bits 32..47 */
		key = key_of(a, 64, 0, 0, &idx);
		if (read_set(idx, &set))
			continue;
		for (int w = 0; w < FG_WAYS6; w++) {
			if (set.way[w].key != key)
				continue;
			n++;
			valid += fg_who6_digest(&set.who[w], ctl_now().seed6) == key;
		}
		once += n == 1;
	}
	printf("  %d of %d sources hold exactly one way; %llu inserts\n", once, CLAIM_N,
	       (unsigned long long)dp_row_ev(&D, 0, FG_EV_INSERT));
	ASSERT_EQ(once, CLAIM_N, "every source holds exactly one way");
	ASSERT_EQ(valid, CLAIM_N, "and its way's copy is its own");
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_INSERT), CLAIM_N, "one insert per source");
	ASSERT_EQ(dp_row_pkts(&D, 0, FG_OUT_PASS), 2 * CLAIM_N,
		  "both packets of each in one burst of 2");
	ASSERT_EQ(count_ways(), CLAIM_N, "no other way used");
	dp_close(&D);
}

/* The digest: deterministic, covers every input word, and the seed. */
static void test_digest(void)
{
	const __u64 s[2] = { 1, 2 }, t[2] = { 1, 3 };
	struct fg_who6 w = { .addr = { htonl(0x20010db8), 0, 0, 0 }, .rule = 1, .gen = 2 };
	__u64 k = fg_who6_digest(&w, s);
	struct fg_who6 x;

	ASSERT_EQ(k & 1, 1, "the used bit is set");
	ASSERT_EQ(fg_who6_digest(&w, s), k, "deterministic");
	ASSERT_NEQ(fg_who6_digest(&w, t), k, "another seed, another digest");
	for (int i = 0; i < 4; i++) {
		x = w;
		x.addr[i] ^= htonl(1);
		ASSERT_NEQ(fg_who6_digest(&x, s), k, "each address word counts");
	}
	x = w;
	x.rule = 2;
	ASSERT_NEQ(fg_who6_digest(&x, s), k, "the rule id counts");
	x = w;
	x.gen = 3;
	ASSERT_NEQ(fg_who6_digest(&x, s), k, "the generation counts");
	x = w;
	x.pad = 7;
	ASSERT_EQ(fg_who6_digest(&x, s), k, "the padding does not");

	/* SipHash-1-3 itself: key bytes 00..0f, message bytes 00..13 (addr,
	 * then rule and gen little-endian), from an independent byte-wise
	 * implementation checked against the SipHash paper's 2-4 vectors;
	 * this host is little-endian, as the BPF target here */
	const __u64 kk[2] = { 0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull };
	__u8 bytes[16];

	for (int i = 0; i < 16; i++)
		bytes[i] = (__u8)i;
	memcpy(x.addr, bytes, 16);
	x.rule = 0x1110;
	x.gen = 0x1312;
	ASSERT_EQ(fg_who6_digest(&x, kk), 0xc0dc2f46a6cce041ull, "SipHash-1-3 known answer (| 1)");
}

/*
 * fg_src6 claims as fg_src4 does (test_datapath test_own_way_v4): a new
 * /64 takes its own way (fg_way6_pref of its digest) when empty, else the
 * first empty one, each where dp_model_claim puts it; then every one is
 * found again with no second claim.
 */
static void test_own_way_v6(void)
{
	struct fg_rule r = limit_rule(1, 2, 64);
	static __u8 used[1024][FG_WAYS6];
	struct dp_claims c = {};
	struct fg_set6 set;
	__u32 nsets;
	__u64 ins;

	memset(used, 0, sizeof(used));
	if (setup(1024))
		return;
	dp_rule(&D, &r, &M_ANY, C_ALL);
	dp_apply(&D);
	nsets = bpf_map__max_entries(D.skel->maps.fg_src6);
	if (!ASSERT_LE(nsets, 1024, "the model covers every set"))
		goto out;
	for (__u32 i = 0; i < 600; i++) {
		char a[64];
		struct pkt_spec s;
		__u32 idx;
		__u64 key;

		snprintf(a, sizeof(a), "2001:db8:9:%x::1", i);
		s = udp6(a, 7);
		dp_send(&D, &s);
		key = key_of(a, 64, 0, 0, &idx);
		if (!ASSERT_LE(idx + 1, nsets, "a set of the table"))
			goto out;
		dp_claim_seen(&c, used[idx], FG_WAYS6, fg_way6_pref(key),
			      way_of(a, 64, 0, 0, &set));
	}
	ins = dp_row_ev(&D, 0, FG_EV_INSERT);
	ASSERT_OK(dp_claims_check(&c, "600 /64s", ins),
		  "each claim where the model puts it, own ways and others, one insert each");
	for (__u32 i = 0; i < 600; i++) {
		char a[64];
		struct pkt_spec s;

		snprintf(a, sizeof(a), "2001:db8:9:%x::1", i);
		s = udp6(a, 7);
		dp_send(&D, &s);
	}
	ASSERT_EQ(dp_row_ev(&D, 0, FG_EV_INSERT), ins, "found again, in any way: no second claim");
out:
	dp_close(&D);
}

int main(int argc, char **argv)
{
	fg_test_init(argc, argv);
	FG_RUN(test_digest);
	if (geteuid() != 0)
		return fg_test_skip_all("test_src6", "needs root for BPF_PROG_TEST_RUN");
	libbpf_set_print(NULL);
	FG_RUN(test_spray_keeps_throttled_bucket);
	FG_RUN(test_idle_ways_reused);
	FG_RUN(test_same_set_kept_apart);
	FG_RUN(test_rule_and_gen_apart);
	FG_RUN(test_on_full_paths);
	FG_RUN(test_prefix_grouping);
	FG_RUN(test_sources_read_v6);
	FG_RUN(test_two_cpus_claim);
	FG_RUN(test_own_way_v6);
	return fg_test_summary();
}
