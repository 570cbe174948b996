// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The Prometheus page (user/daemon/metrics.c, fg_metrics_render) from a snapshot
 * built here: each per-rule fleet metric says what the snapshot holds for
 * each rule, every family has one HELP and one TYPE before its samples, and
 * no sample is written twice. Needs no root and touches no map.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fgtest.h"
#include "fleet/fleet_redis.h"
#include "fleet/fleet_status.h"
#include "daemon/metrics.h"

#define NRULES 3

static struct fg_stats rows[FG_NROWS];
static struct fg_name names[FG_MAX_IDS];
static struct fg_policy pol;
static struct fg_ctl ctl;
static struct fg_fleet_status fs;

/* Three fleet rules, every field different; the third's id is past the stats rows. */
static void fill_fleet(__u64 now)
{
	fs.nrules = NRULES;
	for (int r = 0; r < NRULES; r++) {
		struct fg_fleet_rule_status *rs = &fs.rule[r];
		__u64 *c[] = { &rs->st.granted, &rs->st.returned,      &rs->st.discarded,
			       &rs->st.debt,	&rs->st.grace_entries, &rs->st.fallbacks,
			       &rs->st.rounds,	&rs->st.failed,	       &rs->st.timeouts };

		snprintf(rs->name, sizeof(rs->name), "rule%d", r);
		rs->id = r == NRULES - 1 ? FG_MAX_IDS : (__u32)(2 * r + 1);
		rs->st.state = (__u8)(r + 1) % FG_FLEET_NSTATES;
		rs->st.nodes = 3 + (__u32)r;
		rs->st.share_ppm = 250000 + (__u32)r;
		rs->st.fallback_ns = 1500000000ull * (__u64)(r + 1);
		rs->lease.tokens = r == 1 ? -1234 : 5678 + r;
		/* rule 0: 10 s left; the others ran out */
		rs->lease.lease_expires = r ? now - 1 : now + 10000000000ull;
		for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++)
			*c[k] = 1000ull * (__u64)(r + 1) + k;
		if (rs->id < FG_MAX_IDS)
			rows[rs->id].ev[FG_EV_FLEET_LOSS] = 777ull + (__u64)r;
	}
}

static char *render(const struct fg_fleet_status *fleet)
{
	struct fg_metrics_snap s = {
		.rows = rows, .names = names, .ctl = &ctl, .pol = &pol, .fleet = fleet
	};
	char *page = NULL;
	size_t len = 0;

	if (!ASSERT_EQ(fg_metrics_render(&s, &page, &len), 0, "fg_metrics_render"))
		return NULL;
	ASSERT_EQ(strlen(page), len, "page length");
	return page;
}

/* The value of the sample `name{labels}` in page, as text into val; 0 when found once. */
static int sample(const char *page, const char *series, char *val, size_t len)
{
	char key[256];
	const char *p, *e;
	int n = snprintf(key, sizeof(key), "\n%s ", series);

	p = strstr(page, key);
	if (!p || strstr(p + n, key))
		return -1;
	p += n;
	e = strchr(p, '\n');
	if (!e || (size_t)(e - p) >= len)
		return -1;
	memcpy(val, p, (size_t)(e - p));
	val[e - p] = 0;
	return 0;
}

static void expect(const char *page, const char *metric, int rule, const char *want)
{
	char series[128], got[64] = "";

	snprintf(series, sizeof(series), "floodgate_fleet_%s{rule=\"rule%d\"}", metric, rule);
	if (!ASSERT_EQ(sample(page, series, got, sizeof(got)), 0, series))
		return;
	if (strcmp(got, want))
		fg_test_fail(__FILE__, __LINE__, "%s: got %s, expected %s", series, got, want);
}

static void expect_u64(const char *page, const char *metric, int rule, unsigned long long v)
{
	char want[32];

	snprintf(want, sizeof(want), "%llu", v);
	expect(page, metric, rule, want);
}

static void test_fleet_rules(void)
{
	static const char *const counters[] = { "granted_total",   "returned_total",
						"discarded_total", "debt_total",
						"grace_total",	   "fallbacks_total",
						"rounds_total",	   "failed_total",
						"timeouts_total" };
	char *page, want[64], series[128], got[64];
	double left;

	fill_fleet(fg_redis_now_ns());
	page = render(&fs);
	if (!page)
		return;
	for (int r = 0; r < NRULES; r++) {
		const struct fg_fleet_rule_status *rs = &fs.rule[r];

		snprintf(want, sizeof(want), "%lld", (long long)rs->lease.tokens);
		expect(page, "tokens", r, want);
		expect_u64(page, "nodes", r, rs->st.nodes);
		snprintf(want, sizeof(want), "%.6f", rs->st.share_ppm / 1e6);
		expect(page, "share", r, want);
		snprintf(want, sizeof(want), "%.3f", rs->st.fallback_ns / 1e9);
		expect(page, "fallback_seconds_total", r, want);
		expect_u64(page, "loss_packets_total", r,
			   rs->id < FG_MAX_IDS ? rows[rs->id].ev[FG_EV_FLEET_LOSS] : 0);
		for (size_t k = 0; k < sizeof(counters) / sizeof(counters[0]); k++)
			expect_u64(page, counters[k], r, 1000ull * (__u64)(r + 1) + k);
		for (int st = 0; st < FG_FLEET_NSTATES; st++) {
			snprintf(series, sizeof(series),
				 "floodgate_fleet_state{rule=\"rule%d\",state=\"%s\"}", r,
				 fg_fleet_state_name(st));
			if (ASSERT_EQ(sample(page, series, got, sizeof(got)), 0, series))
				ASSERT_EQ(atoi(got), st == rs->st.state, series);
		}
		if (r)
			expect(page, "lease_seconds", r, "0.000");
	}
	snprintf(series, sizeof(series), "floodgate_fleet_lease_seconds{rule=\"rule0\"}");
	if (ASSERT_EQ(sample(page, series, got, sizeof(got)), 0, series)) {
		left = strtod(got, NULL);
		ASSERT_TRUE(left > 9.0 && left <= 10.0, "rule0: about 10 s of lease left");
	}
	free(page);
}

/* Every sample belongs to the family of the last "# TYPE", which comes right
 * after its "# HELP"; no line (family or sample) is written twice. */
static void test_families(void)
{
	char *page, *line, *save = NULL, family[128] = "", last_help[128] = "";
	char *seen[1024];
	int nseen = 0, dup = 0, orphan = 0, types = 0, helped = 0, samples = 0;

	fill_fleet(fg_redis_now_ns());
	page = render(&fs);
	if (!page)
		return;
	for (line = strtok_r(page, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[128];

		if (sscanf(line, "# HELP %127s", name) == 1) {
			snprintf(last_help, sizeof(last_help), "%s", name);
		} else if (sscanf(line, "# TYPE %127s", name) == 1) {
			types++;
			helped += !strcmp(name, last_help);
			snprintf(family, sizeof(family), "%s", name);
		} else {
			samples++;
			snprintf(name, sizeof(name), "%.*s", (int)strcspn(line, "{ "), line);
			orphan += strcmp(name, family) != 0;
		}
		for (int i = 0; i < nseen; i++)
			dup += !strcmp(seen[i], line);
		if (nseen < (int)(sizeof(seen) / sizeof(seen[0])))
			seen[nseen++] = line;
	}
	ASSERT_TRUE(nseen < (int)(sizeof(seen) / sizeof(seen[0])), "the page fits the check");
	ASSERT_EQ(dup, 0, "lines written twice");
	ASSERT_EQ(orphan, 0, "samples outside their family");
	ASSERT_EQ(helped, types, "families with HELP then TYPE");
	/* 12 families before the fleet's, 16 per-rule fleet ones, 3 of the connection */
	ASSERT_EQ(types, 12 + 16 + 3, "families");
	ASSERT_GE(samples, 16 * NRULES, "samples");
	free(page);
}

static void test_no_fleet(void)
{
	char *page = render(NULL);

	if (!page)
		return;
	ASSERT_TRUE(!strstr(page, "floodgate_fleet_"), "no fleet metrics without a fleet");
	ASSERT_TRUE(strstr(page, "\nfloodgate_bypass 0\n") != NULL, "the rest is there");
	free(page);
}

int main(int argc, char **argv)
{
	fg_test_init(argc, argv);
	FG_RUN(test_fleet_rules);
	FG_RUN(test_families);
	FG_RUN(test_no_fleet);
	return fg_test_summary();
}
