// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * floodgated's throttle log (user/throttle.c) on synthetic scans: when a
 * source starts and stops being throttled, an evicted bucket, the line
 * limit per tick, the bound on tracked sources, and that last tick's state
 * is found again for every source whatever the order of the scan. The log
 * lines are read back from stderr. No root needed.
 */
#include <stdlib.h>
#include <unistd.h>
#include "fgtest.h"
#include "log.h"
#include "throttle.h"
#include "sources.h"

static struct fg_name names[FG_MAX_IDS];
static char logbuf[1 << 16];
static int saved_fd = -1;
static FILE *cap;

static void capture_begin(void)
{
	fflush(stderr);
	cap = tmpfile();
	saved_fd = dup(2);
	if (cap)
		dup2(fileno(cap), 2);
}

/* The lines logged since capture_begin, in logbuf. */
static const char *capture_end(void)
{
	size_t n = 0;

	fflush(stderr);
	dup2(saved_fd, 2);
	close(saved_fd);
	logbuf[0] = 0;
	if (cap) {
		rewind(cap);
		n = fread(logbuf, 1, sizeof(logbuf) - 1, cap);
		fclose(cap);
	}
	logbuf[n] = 0;
	return logbuf;
}

static int count_of(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static struct fg_source src4(__u32 host, __u64 drops, bool limited)
{
	struct fg_source s = { .family = 4, .rule = 1, .gen = 1, .drops = drops,
			       .limited = limited };

	s.addr[0] = 10;
	s.addr[1] = (__u8)(host >> 16);
	s.addr[2] = (__u8)(host >> 8);
	s.addr[3] = (__u8)host;
	return s;
}

static const char *scan(struct fg_throttle *t, const struct fg_source *s, size_t n)
{
	capture_begin();
	fg_throttle_scan(t, s, n, names);
	return capture_end();
}

static void test_start_and_stop(void)
{
	struct fg_throttle t;
	struct fg_source a;
	const char *out;

	if (!ASSERT_OK(fg_throttle_init(&t, 16), "init"))
		return;
	a = src4(1, 16, true);
	out = scan(&t, &a, 1);
	ASSERT_EQ(count_of(out, "throttling"), 0, "the first scan only records");
	a.drops = 32;
	out = scan(&t, &a, 1);
	ASSERT_STR_CONTAINS(out, "throttling 10.0.0.1 (rule ssh)", "new drops: throttling");
	out = scan(&t, &a, 1);
	ASSERT_EQ(count_of(out, "throttling"), 0, "no new drops, still limited: quiet");
	a.limited = false;
	for (int i = 0; i < FG_THROTTLE_QUIET_TICKS - 2; i++) {
		out = scan(&t, &a, 1);
		ASSERT_EQ(count_of(out, "no longer"), 0, "not yet quiet long enough");
	}
	out = scan(&t, &a, 1);
	ASSERT_STR_CONTAINS(out, "no longer throttling 10.0.0.1 (rule ssh), ~32 drops sampled",
			    "quiet and not limited: stopped");
	out = scan(&t, &a, 1);
	ASSERT_EQ(count_of(out, "throttling"), 0, "said once");
	fg_throttle_free(&t);
}

static void test_bucket_gone(void)
{
	struct fg_throttle t;
	struct fg_source b[2] = { src4(2, 16, true), src4(3, 16, true) };
	const char *out;

	if (!ASSERT_OK(fg_throttle_init(&t, 16), "init"))
		return;
	scan(&t, NULL, 0);
	out = scan(&t, b, 2);
	ASSERT_EQ(count_of(out, "throttling 10.0.0."), 2, "two new sources with drops");
	out = scan(&t, &b[1], 1);
	ASSERT_STR_CONTAINS(out, "no longer throttling 10.0.0.2 (rule ssh): bucket expired",
			    "a throttled source whose bucket is gone");
	ASSERT_EQ(count_of(out, "10.0.0.3"), 0, "the other one stays");
	b[1].drops = 48;
	out = scan(&t, &b[1], 1);
	ASSERT_EQ(count_of(out, "throttling"), 0, "no new line for an already throttled source");
	names[1].gen = 2;	/* id 1 now belongs to another rule */
	out = scan(&t, NULL, 0);
	names[1].gen = 1;
	ASSERT_STR_CONTAINS(out, "10.0.0.3 (rule (removed rule)): bucket expired",
			    "a rule that is gone is named as such");
	fg_throttle_free(&t);
}

static void test_line_limit(void)
{
	struct fg_source s[FG_THROTTLE_LINES_PER_TICK + 5];
	struct fg_throttle t;
	char want[96];
	const char *out;

	if (!ASSERT_OK(fg_throttle_init(&t, 64), "init"))
		return;
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		s[i] = src4((__u32)i + 100, 16, true);
	scan(&t, NULL, 0);
	out = scan(&t, s, sizeof(s) / sizeof(s[0]));
	ASSERT_EQ(count_of(out, "throttling 10."), FG_THROTTLE_LINES_PER_TICK, "lines per tick");
	out = scan(&t, s, sizeof(s) / sizeof(s[0]));
	snprintf(want, sizeof(want), "suppressed %d messages in the last second", 5);
	ASSERT_STR_CONTAINS(out, want, "the rest, counted");
	ASSERT_EQ(count_of(out, "throttling 10."), 0, "the suppressed ones are tracked all the same");
	fg_throttle_free(&t);
}

static void test_bound(void)
{
	struct fg_source s[6];
	struct fg_throttle t;
	const char *out;

	if (!ASSERT_OK(fg_throttle_init(&t, 4), "init"))
		return;
	for (int i = 0; i < 6; i++)
		s[i] = src4((__u32)i + 200, 16, true);
	out = scan(&t, s, 6);
	ASSERT_STR_CONTAINS(out, "more than 4 sources with drops; tracking the first 4",
			    "over the bound: said");
	ASSERT_EQ(t.n, 4, "tracked");
	out = scan(&t, s, 6);
	ASSERT_EQ(count_of(out, "more than"), 0, "said once");
	fg_throttle_free(&t);
}

/* Last tick's state is found for every source, in any order: a source
 * whose drops did not grow is not "new", so a scan in another order than
 * the last one logs nothing. */
static void test_join_any_order(void)
{
	enum { N = 5000 };
	struct fg_source *s = calloc(N, sizeof(*s));
	struct fg_throttle t;
	const char *out;

	if (!ASSERT_TRUE(s != NULL, "alloc") || !ASSERT_OK(fg_throttle_init(&t, N), "init")) {
		free(s);
		return;
	}
	for (int i = 0; i < N; i++) {
		s[i] = src4((__u32)(i * 7919) % 65536, 16, true);
		if (i % 3 == 0) {	/* some IPv6 sources with the same address bytes */
			s[i].family = 6;
			s[i].gen = 3;
		}
	}
	scan(&t, s, N);
	for (int i = 0; i < N / 2; i++) {	/* reverse it */
		struct fg_source x = s[i];

		s[i] = s[N - 1 - i];
		s[N - 1 - i] = x;
	}
	out = scan(&t, s, N);
	ASSERT_EQ(count_of(out, "throttling"), 0, "reversed scan: every source found again");
	ASSERT_EQ(t.n, N, "all tracked");
	s[N / 2].drops += 16;
	out = scan(&t, s, N);
	ASSERT_EQ(count_of(out, "throttling "), 1, "one source with new drops");
	s[N / 2] = s[0];	/* the throttled one's bucket goes away */
	out = scan(&t, s + 1, N - 1);
	ASSERT_EQ(count_of(out, "bucket expired"), 1, "one bucket gone");
	free(s);
	fg_throttle_free(&t);
}

int main(int argc, char **argv)
{
	fg_test_init(argc, argv);
	fg_log_init("test_throttle", FG_LOG_INFO, false);
	snprintf(names[1].name, sizeof(names[1].name), "ssh");
	names[1].in_use = 1;
	names[1].gen = 1;
	FG_RUN(test_start_and_stop);
	FG_RUN(test_bucket_gone);
	FG_RUN(test_line_limit);
	FG_RUN(test_bound);
	FG_RUN(test_join_any_order);
	return fg_test_summary();
}
