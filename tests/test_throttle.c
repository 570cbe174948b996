// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * floodgated's throttle log (user/sources/throttle.c) on synthetic throttle events
 * and a fake bucket table: when a source starts and stops being throttled,
 * an evicted bucket, the line limit per tick, the bound on tracked sources,
 * that a source is found again whatever the order of its events, and that
 * the re-checks look up only quiet tracked sources, within their budget.
 * The log lines are read back from stderr. No root needed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include "fgtest.h"
#include "trfix.h"
#include "lib/log.h"
#include "sources/throttle.h"
#include "sources/sources.h"

static struct fg_name names[FG_MAX_IDS];

/* The fake table: bucket state by host number (the address's low 16 bits). */
#define NFAKE 65536
static struct {
	bool gone, limited;
	__u64 drops;
} fake[NFAKE];
static size_t nlookups;
static bool wrong_lookup; /* a lookup of something never reported */
static bool reported[NFAKE];

static __u32 host_of(const __u8 *a)
{
	return (__u32)a[2] << 8 | a[3];
}

static int fake_lookup(void *arg, struct fg_source *s)
{
	__u32 h = host_of(s->addr);

	(void)arg;
	nlookups++;
	if (!reported[h] || s->rule != 1)
		wrong_lookup = true;
	if (fake[h].gone)
		return -ENOENT;
	s->drops = fake[h].drops;
	s->limited = fake[h].limited;
	return 0;
}

static struct fg_tev ev4(__u32 host, __u64 drops)
{
	struct fg_tev e = { .family = 4, .rule = 1, .gen = 1, .drops = drops };

	e.addr[0] = 10;
	e.addr[1] = 0;
	e.addr[2] = (__u8)(host >> 8);
	e.addr[3] = (__u8)host;
	reported[host & (NFAKE - 1)] = true;
	fake[host & (NFAKE - 1)].drops = drops;
	return e;
}

/* One tick: begin, the events, the re-checks (budget b); the lines logged. */
static const char *tick(struct fg_throttle *t, const struct fg_tev *e, size_t n, size_t b)
{
	tf_begin();
	fg_throttle_begin(t);
	for (size_t i = 0; i < n; i++)
		fg_throttle_event(t, &e[i], names);
	fg_throttle_recheck(t, b, fake_lookup, NULL, names);
	return tf_end();
}

static void fake_reset(void)
{
	memset(fake, 0, sizeof(fake));
	memset(reported, 0, sizeof(reported));
	nlookups = 0;
	wrong_lookup = false;
}

static void test_start_and_stop(void)
{
	struct fg_throttle t;
	struct fg_tev a;
	const char *out;

	fake_reset();
	if (!ASSERT_OK(fg_throttle_init(&t, 16), "init"))
		return;
	a = ev4(1, 16);
	fake[1].limited = true;
	out = tick(&t, &a, 1, 100);
	ASSERT_STR_CONTAINS(out, "throttling 10.0.0.1 (rule ssh)", "an event: throttling");
	a = ev4(1, 32);
	out = tick(&t, &a, 1, 100);
	ASSERT_EQ(tf_count(out, "throttling"), 0, "a second event: nothing new");
	for (int i = 0; i < FG_THROTTLE_QUIET_TICKS + 2; i++) {
		out = tick(&t, NULL, 0, 100);
		ASSERT_EQ(tf_count(out, "no longer"), 0, "no new drops, still limited: quiet");
	}
	ASSERT_TRUE(nlookups > 0 && !wrong_lookup, "looked up once quiet, only what was reported");
	fake[1].limited = false;
	out = tick(&t, NULL, 0, 100);
	ASSERT_STR_CONTAINS(out, "no longer throttling 10.0.0.1 (rule ssh), ~32 drops sampled",
			    "quiet and not limited: stopped");
	ASSERT_EQ(t.n, 0, "forgotten");
	nlookups = 0;
	out = tick(&t, NULL, 0, 100);
	ASSERT_EQ(tf_count(out, "throttling"), 0, "said once");
	ASSERT_EQ(nlookups, 0, "nothing tracked: no lookups");
	a = ev4(1, 48);
	out = tick(&t, &a, 1, 100);
	ASSERT_STR_CONTAINS(out, "throttling 10.0.0.1 (rule ssh)", "throttled again: said again");
	fg_throttle_free(&t);
}

static void test_growth_keeps_it(void)
{
	struct fg_throttle t;
	struct fg_tev a;
	const char *out = "";

	fake_reset();
	if (!ASSERT_OK(fg_throttle_init(&t, 16), "init"))
		return;
	a = ev4(7, 16);
	tick(&t, &a, 1, 100);
	/* no more events (the ring's cap refused them), but the bucket's drops grow */
	for (int i = 0; i < 4 * FG_THROTTLE_QUIET_TICKS; i++) {
		fake[7].drops += 16;
		out = tick(&t, NULL, 0, 100);
		if (tf_count(out, "no longer"))
			break;
	}
	ASSERT_EQ(tf_count(out, "no longer"), 0,
		  "growing drops seen by the lookups: still throttled");
	ASSERT_EQ(t.n, 1, "tracked");
	fg_throttle_free(&t);
}

static void test_bucket_gone(void)
{
	struct fg_throttle t;
	struct fg_tev b[2];
	const char *out = "";

	fake_reset();
	if (!ASSERT_OK(fg_throttle_init(&t, 16), "init"))
		return;
	b[0] = ev4(2, 16);
	b[1] = ev4(3, 16);
	fake[2].limited = fake[3].limited = true;
	out = tick(&t, b, 2, 100);
	ASSERT_EQ(tf_count(out, "throttling 10.0.0."), 2, "two new sources with drops");
	fake[2].gone = true;
	for (int i = 0; i < FG_THROTTLE_QUIET_TICKS && !tf_count(out, "expired"); i++)
		out = tick(&t, NULL, 0, 100);
	ASSERT_STR_CONTAINS(out, "no longer throttling 10.0.0.2 (rule ssh): bucket expired",
			    "a throttled source whose bucket is gone");
	ASSERT_EQ(tf_count(out, "10.0.0.3"), 0, "the other one stays");
	names[1].gen = 2; /* id 1 now belongs to another rule */
	fake[3].gone = true;
	out = tick(&t, NULL, 0, 100);
	names[1].gen = 1;
	ASSERT_STR_CONTAINS(out, "10.0.0.3 (rule (removed rule)): bucket expired",
			    "a rule that is gone is named as such");
	fg_throttle_free(&t);
}

static void test_line_limit(void)
{
	struct fg_tev s[FG_THROTTLE_LINES_PER_TICK + 5];
	struct fg_throttle t;
	char want[96];
	const char *out;

	fake_reset();
	if (!ASSERT_OK(fg_throttle_init(&t, 64), "init"))
		return;
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		s[i] = ev4((__u32)i + 100, 16);
	out = tick(&t, s, sizeof(s) / sizeof(s[0]), 0);
	ASSERT_EQ(tf_count(out, "throttling 10."), FG_THROTTLE_LINES_PER_TICK, "lines per tick");
	out = tick(&t, s, sizeof(s) / sizeof(s[0]), 0);
	snprintf(want, sizeof(want), "suppressed %d messages in the last second", 5);
	ASSERT_STR_CONTAINS(out, want, "the rest, counted");
	ASSERT_EQ(tf_count(out, "throttling 10."), 0,
		  "the suppressed ones are tracked all the same");
	fg_throttle_free(&t);
}

static void test_bound(void)
{
	struct fg_tev s[6];
	struct fg_throttle t;
	const char *out;

	fake_reset();
	if (!ASSERT_OK(fg_throttle_init(&t, 4), "init"))
		return;
	for (int i = 0; i < 6; i++)
		s[i] = ev4((__u32)i + 200, 16);
	out = tick(&t, s, 6, 0);
	ASSERT_STR_CONTAINS(out, "more than 4 sources with drops; tracking the first 4",
			    "over the bound: said");
	ASSERT_EQ(t.n, 4, "tracked");
	ASSERT_EQ(t.untracked, 2, "the rest counted");
	out = tick(&t, s, 6, 0);
	ASSERT_EQ(tf_count(out, "more than"), 0, "said once");
	fg_throttle_free(&t);
}

/* Sources are found again in any order of events (IPv4 and IPv6 with the
 * same bytes are two); the re-checks stay within their budget, look up
 * only quiet tracked sources, and reach every one of them in turn. */
static void test_any_order_and_budget(void)
{
	enum {
		N = 5000,
		B = 700
	};
	struct fg_tev *s = calloc(N, sizeof(*s));
	struct fg_throttle t;
	size_t ticks, before;
	const char *out;

	fake_reset();
	if (!ASSERT_TRUE(s != NULL, "alloc") || !ASSERT_OK(fg_throttle_init(&t, N), "init")) {
		free(s);
		return;
	}
	for (int i = 0; i < N; i++) {
		s[i] = ev4((__u32)(i * 7919) % 65536, 16);
		fake[host_of(s[i].addr)].limited = true;
		if (i % 3 == 0)
			s[i].family = 6; /* the same address bytes, another family */
	}
	out = tick(&t, s, N, B);
	ASSERT_EQ(t.n, N, "all tracked");
	ASSERT_EQ(nlookups, 0, "fresh events: no lookups");
	for (int i = 0; i < N / 2; i++) { /* reverse them */
		struct fg_tev x = s[i];

		s[i] = s[N - 1 - i];
		s[N - 1 - i] = x;
	}
	out = tick(&t, s, N, B);
	ASSERT_EQ(tf_count(out, "throttling"), 0, "reversed events: every source found again");
	ASSERT_EQ(t.n, N, "still N");
	for (int i = 0; i < FG_THROTTLE_QUIET_TICKS - 2; i++) /* the events were 2 ticks ago */
		tick(&t, NULL, 0, B);
	ASSERT_EQ(nlookups, 0, "not quiet long enough: no lookups");
	for (ticks = 0; ticks < 2 * N / B; ticks++) {
		before = nlookups;
		tick(&t, NULL, 0, B);
		if (!ASSERT_TRUE(nlookups - before <= B, "within the budget"))
			break;
		if (nlookups >= N)
			break;
	}
	ASSERT_TRUE(!wrong_lookup, "only reported sources looked up");
	ASSERT_EQ(ticks + 1, (N + B - 1) / B, "every source re-checked, B a tick");
	fake[host_of(s[N / 2].addr)].limited = false;
	fake[host_of(s[N / 2].addr)].drops = 16;
	for (size_t i = 0; i <= (N + B - 1) / B; i++) {
		out = tick(&t, NULL, 0, B);
		if (tf_count(out, "no longer"))
			break;
	}
	/* both families of that host share its fake bucket */
	ASSERT_TRUE(tf_count(out, "no longer throttling ") >= 1, "the one that stopped is said");
	free(s);
	fg_throttle_free(&t);
}

/* Forgetting many sources keeps every other one findable (the hash set's
 * deletion shifts entries back along their probe paths), and a forgotten
 * one is new again. */
static void test_forget_many(void)
{
	enum {
		N = 3000
	};
	struct fg_tev *s = calloc(N, sizeof(*s));
	struct fg_throttle t;
	const char *out = "";

	fake_reset();
	if (!ASSERT_TRUE(s != NULL, "alloc") || !ASSERT_OK(fg_throttle_init(&t, N), "init")) {
		free(s);
		return;
	}
	for (int i = 0; i < N; i++) {
		s[i] = ev4((__u32)(i * 40503u) % 65536, 16);
		fake[host_of(s[i].addr)].limited = i % 2; /* the even ones stop */
	}
	tick(&t, s, N, 0);
	for (int i = 0; i < FG_THROTTLE_QUIET_TICKS + 1 && t.n > N / 2; i++)
		tick(&t, NULL, 0, N);
	ASSERT_EQ(t.n, N / 2, "the stopped half forgotten");
	for (int i = 0; i < N; i++)
		fake[host_of(s[i].addr)].drops = 16;
	out = tick(&t, s + 1, 1, 0);
	ASSERT_EQ(tf_count(out, "throttling"), 0, "a kept one is found");
	for (int i = 1; i < N; i += 2)
		fg_throttle_event(&t, &s[i], names);
	ASSERT_EQ(t.n, N / 2, "every kept one found again: none added");
	out = tick(&t, s, 1, 0);
	ASSERT_STR_CONTAINS(out, "throttling 10.0.", "a forgotten one is new again");
	ASSERT_EQ(t.n, N / 2 + 1, "and tracked");
	free(s);
	fg_throttle_free(&t);
}

int main(int argc, char **argv)
{
	tf_init(argc, argv, "test_throttle", names, "ssh");
	FG_RUN_EACH(test_start_and_stop, test_growth_keeps_it, test_bucket_gone, test_line_limit,
		    test_bound, test_any_order_and_budget, test_forget_many);
	return fg_test_summary();
}
