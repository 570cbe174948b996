// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The Prometheus page (user/daemon/metrics.c, fg_metrics_render) from a snapshot
 * built here: each per-rule fleet metric says what the snapshot holds for
 * each rule, every family has one HELP and one TYPE before its samples, and
 * no sample is written twice. Needs no root and touches no map.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "fgtest.h"
#include "lib/version.h"
#include "fleet/fleet_redis.h"
#include "fleet/fleet_status.h"
#include "daemon/metrics.h"
#include "lib/sysutil.h"

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
	/* 13 families before the fleet's, 18 per-rule fleet ones, 3 of the connection, 6 of
	 * the process */
	ASSERT_EQ(types, 13 + 18 + 3 + 6, "families");
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

/* The value of series in page as a number; NAN when it is not there once. */
static double value(const char *page, const char *series)
{
	char got[64];

	return sample(page, series, got, sizeof(got)) ? NAN : strtod(got, NULL);
}

/* The mode as a label, the build, the process metrics (issue 23). */
static void test_ops_metrics(void)
{
	char *page, series[256];
	double start, now = (double)time(NULL);

	ctl.mode = FG_MODE_SHADOW;
	page = render(NULL);
	ctl.mode = FG_MODE_ENFORCE;
	if (!page)
		return;
	ASSERT_EQ(value(page, "floodgate_mode{mode=\"shadow\"}"), 1, "mode shadow: 1");
	ASSERT_EQ(value(page, "floodgate_mode{mode=\"enforce\"}"), 0, "mode enforce: 0");
	snprintf(series, sizeof(series),
		 "floodgate_build_info{version=\"%s\",libbpf=\"%s\",libxdp=\"%s\",abi=\"%u\"}",
		 fg_version(), fg_libbpf_version(), fg_libxdp_version(), FG_ABI_VERSION);
	ASSERT_EQ(value(page, series), 1, "floodgate_build_info with this build's versions");
	ASSERT_TRUE(strstr(page, "\nfloodgate_sources_counted_timestamp_seconds ") != NULL,
		    "the count's time is a _timestamp_seconds");
	ASSERT_TRUE(!strstr(page, "floodgate_sources_counted_seconds"), "no old name");
	ASSERT_GE(value(page, "process_cpu_seconds_total"), 0, "process_cpu_seconds_total");
	ASSERT_GE(value(page, "process_resident_memory_bytes"), 1 << 20,
		  "process_resident_memory_bytes: at least 1 MB");
	ASSERT_GE(value(page, "process_open_fds"), 3, "process_open_fds: stdin, stdout, stderr");
	start = value(page, "process_start_time_seconds");
	ASSERT_TRUE(start <= now + 1 && start >= now - 3600,
		    "process_start_time_seconds: this test started within the hour");
	free(page);
}

/* promtool, Prometheus' own linter, passes the page (fleet included). */
static void test_promtool(void)
{
	char path[] = "/tmp/fgmetrics.XXXXXX", cmd[512], out[4096] = "";
	char *page;
	FILE *f, *p;
	int fd, rc;
	size_t n;

	if (system("command -v promtool >/dev/null 2>&1")) {
		fg_test_skip(
			"promtool is not installed (Debian package prometheus; tools/deps.sh)");
		return;
	}
	fill_fleet(fg_redis_now_ns());
	page = render(&fs);
	fd = mkstemp(path);
	if (!page || !ASSERT_GE(fd, 0, "mkstemp")) {
		free(page);
		return;
	}
	f = fdopen(fd, "w");
	fputs(page, f);
	fclose(f);
	free(page);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s 2>&1", path);
	p = popen(cmd, "r");
	n = p ? fread(out, 1, sizeof(out) - 1, p) : 0;
	out[n] = 0;
	rc = p ? pclose(p) : -1;
	unlink(path);
	if (rc || out[0])
		fg_test_fail(__FILE__, __LINE__, "promtool check metrics: exit %d: %s", rc, out);
	ASSERT_EQ(rc, 0, "promtool check metrics: clean");
}

/* GET / is a page that links /metrics; /metrics is the page published. */
static void test_landing(void)
{
	struct fg_metrics_opts o = { .listen = "127.0.0.1:0" };
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char why[FG_WHY_LEN] = "", buf[4096], listen[32];
	struct fg_metrics *mx = NULL;
	const char *paths[] = { "/", "/metrics" };
	int port = 0;

	/* a free port: bind one, close it, serve there */
	for (int tries = 0; tries < 20 && !mx; tries++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		socklen_t sl = sizeof(sa);

		sa.sin_port = 0;
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
		    getsockname(fd, (struct sockaddr *)&sa, &sl)) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		port = ntohs(sa.sin_port);
		close(fd);
		snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
		o.listen = listen;
		mx = fg_metrics_start(&o, why);
	}
	if (!ASSERT_TRUE(mx != NULL, why[0] ? why : "fg_metrics_start"))
		return;
	fg_metrics_publish(mx, strdup("floodgate_bypass 0\n"), strlen("floodgate_bypass 0\n"));
	for (size_t i = 0; i < 2; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		ssize_t n, got = 0;

		sa.sin_port = htons((unsigned short)port);
		if (!ASSERT_OK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), "connect"))
			break;
		snprintf(buf, sizeof(buf), "GET %s HTTP/1.0\r\n\r\n", paths[i]);
		if (write(fd, buf, strlen(buf)) < 0)
			break;
		while ((n = read(fd, buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
			got += n;
		buf[got] = 0;
		close(fd);
		ASSERT_STR_CONTAINS(buf, " 200 ", paths[i]);
		ASSERT_STR_CONTAINS(buf, i ? "floodgate_bypass 0" : "<a href=\"/metrics\">",
				    i ? "/metrics: the page" : "/: a link to /metrics");
	}
	fg_metrics_stop(mx);
}

int main(int argc, char **argv)
{
	fg_test_init(argc, argv);
	FG_RUN(test_fleet_rules);
	FG_RUN(test_families);
	FG_RUN(test_no_fleet);
	FG_RUN(test_ops_metrics);
	FG_RUN(test_promtool);
	FG_RUN(test_landing);
	return fg_test_summary();
}
