// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * user/daemon/shedd.c, the daemon's shedder loop, against real BPF maps (fg_shed
 * and fg_ctl made here, not pinned) and a file signal, on a simulated
 * clock: sampling on the interval, the thresholds and deadline it stores,
 * the program's decay after the last store, bypass and off holding it at
 * zero, adoption resuming from the pinned state (from zero while off),
 * reload, stop and the state file, the metrics' off and exempt pools. Needs root (BPF maps); skips otherwise.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "fgtest.h"
#include "daemon/metrics.h"
#include "lib/sysutil.h"
#include "daemon/shedd.h"

#define MS 1000000ull
#define T0 (1000ull * 1000 * MS) /* 1000 s: any monotonic start */

static char dir[64];
static char sigpath[128];

static int mk_map(__u32 vsize, __u32 flags)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = flags);

	return bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, vsize, 1, &o);
}

static int setup(struct fg_maps *m)
{
	struct fg_ctl ctl = { .magic = FG_ABI_MAGIC, .abi = FG_ABI_VERSION };
	__u32 k = 0;

	memset(m, 0, sizeof(*m));
	for (int i = 0; i < FGM_NMAPS; i++)
		m->fd[i] = -1;
	m->dirfd = -1;
	snprintf(m->dir, sizeof(m->dir), "/sys/fs/bpf/test-shedd-%d", getpid());
	m->fd[FGM_SHED] = mk_map(sizeof(struct fg_shed_ctl), BPF_F_MMAPABLE);
	m->fd[FGM_CTL] = mk_map(sizeof(struct fg_ctl), BPF_F_MMAPABLE);
	if (m->fd[FGM_SHED] < 0 || m->fd[FGM_CTL] < 0)
		return -errno;
	return bpf_map_update_elem(m->fd[FGM_CTL], &k, &ctl, 0) ? -errno : 0;
}

static void teardown(struct fg_maps *m)
{
	for (int i = 0; i < FGM_NMAPS; i++)
		if (m->fd[i] >= 0)
			close(m->fd[i]);
}

static void setsig(const char *v)
{
	FILE *f = fopen(sigpath, "w");

	if (f) {
		fputs(v, f);
		fclose(f);
	}
}

/* interval 200ms, delay 600ms, ramp 3s, decay 3s, orphan 1s, three tiers */
static void config(struct fg_config *cfg)
{
	char why[256];

	memset(cfg, 0, sizeof(*cfg));
	cfg->has_shedding = 1;
	fg_shed_cfg_default(&cfg->shed);
	cfg->shed.interval = 0.2;
	cfg->shed.delay = 0.6;
	cfg->shed.ramp = 3;
	cfg->shed.decay = 3;
	cfg->shed.orphan = 1;
	snprintf(why, sizeof(why), "file:%s", sigpath);
	fg_signal_parse(why, &cfg->shed_signal, NULL);
}

/* Maps, the test's config and signal value sig, and the controller started at now: 1, or 0
 * (the test skipped) without maps. */
static int start(struct fg_shedd *sd, struct fg_maps *m, struct fg_config *cfg, const char *sig,
		 __u64 now)
{
	if (setup(m)) {
		fg_test_skip("cannot create BPF maps (root?)");
		teardown(m);
		return 0;
	}
	config(cfg);
	setsig(sig);
	ASSERT_OK(fg_shedd_start(sd, m, cfg, dir, now), "start");
	return 1;
}

static struct fg_shed_ctl pinned(struct fg_maps *m)
{
	struct fg_shed_ctl v = {};

	fg_array_read(m, FGM_SHED, 0, &v);
	return v;
}

/* Samples every 200ms from *now for n samples; the last change in *chg. */
static void run(struct fg_shedd *sd, struct fg_maps *m, __u64 *now, int n,
		struct fg_shedd_change *last)
{
	struct fg_shedd_change chg;

	for (int i = 0; i < n; i++) {
		*now += 200 * MS;
		fg_shedd_sample(sd, m, *now, &chg);
		if (last && chg.sampled)
			*last = chg;
	}
}

static void test_onset_order_and_deadline(void)
{
	struct fg_config cfg;
	struct fg_shedd sd;
	struct fg_shedd_change chg = {};
	struct fg_maps m;
	struct fg_shed_ctl v;
	double f[FG_NTIERS];
	__u64 now = T0;
	__u32 seen = 0;

	if (!start(&sd, &m, &cfg, "0.95", now))
		return;
	ASSERT_EQ(sd.on, 1, "on");
	/* not due before the interval */
	fg_shedd_sample(&sd, &m, now + 100 * MS, &chg);
	ASSERT_EQ(chg.sampled, 0, "no sample before the interval");
	/* three samples at 0.95 (600 ms of pressure): nothing; the fourth grows */
	run(&sd, &m, &now, 3, &chg);
	ASSERT_EQ(sd.c.amount == 0, 1, "nothing within the delay");
	ASSERT_EQ(pinned(&m).end, 0, "end 0 while nothing is shed");
	run(&sd, &m, &now, 1, &chg);
	/* k_up = 3 / (3 * 0.2) = 5; 5 * 0.15 * 0.2 = 0.15 */
	ASSERT_TRUE(fabs(sd.c.amount - 0.15) < 1e-9, "the fourth sample grows by 0.15");
	ASSERT_EQ(chg.entered, FG_TIER_BIT(FG_TIER_BEST_EFFORT), "best-effort entered");
	v = pinned(&m);
	ASSERT_EQ(v.thr[FG_TIER_BEST_EFFORT][FG_SHED_ANY], (__u32)llround(0.15 * FG_SHED_ONE),
		  "best-effort threshold stored");
	ASSERT_EQ(v.thr[FG_TIER_BULK][FG_SHED_ANY], 0, "bulk untouched");
	/* the deadline: now + 2 x 200ms + 2^30 ns (orphan 1 s) */
	ASSERT_EQ(v.hshift, 30, "hshift for orphan 1s");
	ASSERT_EQ(v.end, now + 400 * MS + (1ull << 30), "end");
	/* on to full: each tier full before the next, entered once each */
	for (int i = 0; i < 40; i++) {
		run(&sd, &m, &now, 1, &chg);
		seen |= chg.entered;
		ASSERT_EQ(chg.entered & seen & ~chg.entered, 0, "entered once");
		fg_shedd_fracs(sd.map, now, f);
		if (f[FG_TIER_BULK] > 0)
			ASSERT_TRUE(f[FG_TIER_BEST_EFFORT] == 1,
				    "bulk only after best-effort is full");
		if (f[FG_TIER_NORMAL] > 0)
			ASSERT_TRUE(f[FG_TIER_BULK] == 1, "normal only after bulk is full");
		ASSERT_TRUE(f[FG_TIER_CRITICAL] == 0, "critical never");
	}
	ASSERT_TRUE(sd.c.amount == 3, "full shed");
	ASSERT_EQ(seen, FG_TIER_BIT(FG_TIER_BULK) | FG_TIER_BIT(FG_TIER_NORMAL),
		  "bulk, normal entered");
	/* a dead daemon: the program holds for 400ms, then linear to 0 at end */
	v = pinned(&m);
	fg_shedd_fracs(&v, now + 399 * MS, f);
	ASSERT_TRUE(f[FG_TIER_NORMAL] == 1, "held within 2 intervals");
	fg_shedd_fracs(&v, now + 400 * MS + (1ull << 29), f);
	ASSERT_TRUE(fabs(f[FG_TIER_NORMAL] - 0.5) < 1e-3, "half way down the tail");
	fg_shedd_fracs(&v, v.end, f);
	ASSERT_TRUE(f[FG_TIER_BEST_EFFORT] == 0, "zero at end");
	{
		static struct fg_stats rows[FG_NROWS];
		static struct fg_name names[FG_MAX_IDS];
		static struct fg_policy pol;
		struct fg_ctl ctl = {};
		struct fg_metrics_snap snap = {
			.rows = rows, .names = names, .ctl = &ctl, .pol = &pol, .shed = &sd
		};
		char *page = NULL;
		size_t len = 0;

		/* the metrics read the coarse clock: store a deadline valid now */
		fg_shedd_sample(&sd, &m, now + 200 * MS, &chg);
		v = pinned(&m);
		v.end = fg_mono_coarse_ns() + (2ull << 30);
		bpf_map_update_elem(m.fd[FGM_SHED], &(__u32){ 0 }, &v, 0);
		ASSERT_OK(fg_metrics_render(&snap, &page, &len), "metrics render");
		ASSERT_TRUE(page && strstr(page, "\nfloodgate_shed_amount 3.000000\n"),
			    "metrics: amount");
		ASSERT_TRUE(page && strstr(page, "\nfloodgate_shed_signal 0.95\n"),
			    "metrics: signal");
		ASSERT_TRUE(page && strstr(page,
					   "\nfloodgate_shed_fraction{tier=\"normal\"} 1.000000\n"),
			    "metrics: fraction");
		ASSERT_TRUE(page && strstr(page, "\nfloodgate_shed_phase{phase=\"growing\"} 1\n"),
			    "metrics: phase");
		free(page);
	}
	/* stop: end 0 at once */
	fg_shedd_stop(&sd);
	v = pinned(&m);
	ASSERT_EQ(v.end, 0, "stop: end 0");
	ASSERT_EQ(v.thr[FG_TIER_BEST_EFFORT][FG_SHED_NEW], 0, "stop: thresholds 0");
	teardown(&m);
}

static void test_hold_adopt_lost_state(void)
{
	struct fg_config cfg;
	struct fg_shedd sd;
	struct fg_shedd_change chg = {};
	struct fg_shedd_state st;
	struct fg_maps m;
	struct fg_ctl ctl;
	struct fg_shed_ctl v;
	char path[PATH_MAX];
	__u64 now = T0;
	double s;
	__u32 k = 0;

	if (!start(&sd, &m, &cfg, "1", now))
		return;
	run(&sd, &m, &now, 10, &chg);
	ASSERT_TRUE(sd.c.amount > 1, "shedding");
	/* the state file, as status reads it */
	fg_shedd_state_path(dir, m.dir, path, sizeof(path));
	ASSERT_OK(fg_shedd_state_read(path, &st), "state file");
	ASSERT_EQ(st.pid, getpid(), "state: pid");
	ASSERT_TRUE(st.have_value && st.value == 1, "state: value");
	ASSERT_TRUE(!strcmp(st.phase, "growing"), "state: phase");
	ASSERT_TRUE(fabs(st.amount - sd.c.amount) < 1e-6, "state: amount");
	/* bypass: held at zero, zero stored */
	fg_array_read(&m, FGM_CTL, 0, &ctl);
	ctl.bypass = 1;
	bpf_map_update_elem(m.fd[FGM_CTL], &k, &ctl, 0);
	run(&sd, &m, &now, 1, &chg);
	ASSERT_EQ(chg.hold, FG_SHEDD_BYPASS, "bypass holds");
	ASSERT_TRUE(sd.c.amount == 0, "bypass: amount 0");
	ASSERT_EQ(chg.left, FG_TIER_BIT(FG_TIER_BEST_EFFORT) | FG_TIER_BIT(FG_TIER_BULK),
		  "bypass: tiers left");
	ASSERT_EQ(pinned(&m).end, 0, "bypass: end 0");
	/* bypass off: through the delay again (3 samples nothing) */
	ctl.bypass = 0;
	bpf_map_update_elem(m.fd[FGM_CTL], &k, &ctl, 0);
	run(&sd, &m, &now, 3, &chg);
	ASSERT_TRUE(sd.c.amount == 0, "after bypass: the delay again");
	run(&sd, &m, &now, 8, &chg);
	ASSERT_TRUE(sd.c.amount > 0, "after bypass: grows again");
	/* off (the CLI's switch in fg_shed_ctl) */
	v = pinned(&m);
	v.off = 1;
	bpf_map_update_elem(m.fd[FGM_SHED], &k, &v, 0);
	run(&sd, &m, &now, 1, &chg);
	ASSERT_EQ(chg.hold, FG_SHEDD_OFF, "off holds");
	ASSERT_EQ(pinned(&m).off, 1, "the daemon keeps the CLI's off");
	v = pinned(&m);
	v.off = 0;
	bpf_map_update_elem(m.fd[FGM_SHED], &k, &v, 0);
	run(&sd, &m, &now, 12, &chg);
	s = sd.c.amount;
	ASSERT_TRUE(s > 0.5, "shedding again");
	/* SIGKILL: the next daemon starts 100ms later and resumes from the pinned state */
	munmap(sd.map, sd.map_len);
	sd.map = NULL;
	fg_signal_close(&sd.sig);
	now += 100 * MS;
	ASSERT_OK(fg_shedd_start(&sd, &m, &cfg, dir, now), "adopt");
	ASSERT_TRUE(fabs(sd.c.amount - s) < 1e-6, "adopted within the hold: same amount");
	ASSERT_EQ(sd.c.active,
		  FG_TIER_BIT(FG_TIER_BEST_EFFORT) | (s > 1 ? FG_TIER_BIT(FG_TIER_BULK) : 0),
		  "adopted: active tiers");
	/* a lost signal decays: 3 tiers in 3 s, 0.2 a sample */
	unlink(sigpath);
	run(&sd, &m, &now, 1, &chg);
	ASSERT_EQ(chg.sig_err, -ENOENT, "lost signal reported once");
	ASSERT_TRUE(fabs(sd.c.amount - (s - 0.2)) < 1e-6, "lost: decays 0.2");
	run(&sd, &m, &now, 1, &chg);
	ASSERT_EQ(chg.sig_err, 0, "... only once");
	setsig("0.75");
	run(&sd, &m, &now, 1, &chg);
	ASSERT_EQ(chg.sig_back, 1, "signal back");
	/* a reload to another signal spec and tiers keeps the amount */
	s = sd.c.amount;
	cfg.shed.tiers = FG_TIER_BIT(FG_TIER_BEST_EFFORT);
	ASSERT_OK(fg_shedd_reload(&sd, &cfg, now), "reload");
	ASSERT_TRUE(sd.c.amount == (s < 1 ? s : 1), "reload: amount clamped to the new tiers");
	fg_shedd_stop(&sd);
	ASSERT_EQ(access(path, F_OK), -1, "stop removes the state file");
	teardown(&m);
}

/* The metrics page of a daemon held by shed off, with one exempt pool of two. */
static void metrics_off_and_exempt(const struct fg_shedd *sd)
{
	static struct fg_policy pol;
	struct fg_stats rows[FG_NROWS] = {};
	struct fg_name names[FG_MAX_IDS] = {};
	struct fg_ctl ctl = {};
	struct fg_metrics_snap snap = {
		.rows = rows, .names = names, .ctl = &ctl, .pol = &pol, .shed = sd
	};
	char *page = NULL;
	size_t plen = 0;

	pol.npools = 2;
	snprintf(pol.pool_names[0], FG_NAME_LEN, "syn");
	snprintf(pol.pool_names[1], FG_NAME_LEN, "batch");
	pol.pools[1].flags = FG_POOL_NOSHED;
	ASSERT_OK(fg_metrics_render(&snap, &page, &plen), "metrics render");
	ASSERT_TRUE(page && strstr(page, "\nfloodgate_shed_off 1\n"), "metrics: off");
	ASSERT_TRUE(page && strstr(page, "\nfloodgate_shed_held 1\n"), "metrics: held");
	ASSERT_TRUE(page && strstr(page, "\nfloodgate_shed_pool_exempt{pool=\"syn\"} 0\n") &&
			    strstr(page, "\nfloodgate_shed_pool_exempt{pool=\"batch\"} 1\n"),
		    "metrics: exempt pools");
	free(page);
}

/* floodgate shed off (fg_shed_switch_off) with a daemon, then with none and a
 * new daemon adopting while off; the metrics page's off and exempt pools */
static void test_switch_off_adopt(void)
{
	struct fg_shedd_change chg = {};
	struct fg_config cfg;
	struct fg_shedd sd;
	struct fg_maps m;
	struct fg_shed_ctl *v = NULL;
	size_t len = 0;
	__u64 now = T0;
	bool was = true;

	if (setup(&m)) {
		fg_test_skip("cannot create BPF maps (root?)");
		teardown(&m);
		return;
	}
	config(&cfg);
	setsig("1");
	ASSERT_OK(fg_shedd_start(&sd, &m, &cfg, dir, now), "start");
	run(&sd, &m, &now, 10, &chg);
	ASSERT_TRUE(sd.c.amount > 1, "shedding");
	ASSERT_OK(fg_shed_map_open(m.fd[FGM_SHED], &v, &len), "the CLI maps fg_shed");
	ASSERT_EQ(fg_shed_switch_off(v, true, &was), 0, "shed off");
	ASSERT_EQ(was, false, "it was on");
	run(&sd, &m, &now, 1, &chg);
	ASSERT_TRUE(chg.hold == FG_SHEDD_OFF && chg.hold_was == FG_SHEDD_RUN, "held, once");
	ASSERT_TRUE(sd.c.amount == 0 && pinned(&m).end == 0, "amount 0, nothing stored");
	run(&sd, &m, &now, 5, &chg);
	ASSERT_TRUE(chg.hold == FG_SHEDD_OFF && chg.hold_was == FG_SHEDD_OFF,
		    "still held, no new change");
	ASSERT_EQ(pinned(&m).off, 1, "the daemon never clears off");
	metrics_off_and_exempt(&sd);
	/* on again, back to shedding; then the daemon dies and the CLI switches off */
	ASSERT_EQ(fg_shed_switch_off(v, false, &was), 0, "shed on");
	ASSERT_EQ(was, true, "it was off");
	run(&sd, &m, &now, 12, &chg);
	ASSERT_TRUE(sd.c.amount > 0.5 && pinned(&m).end > now, "shedding again, thresholds stored");
	fg_shed_map_close(&sd.map, sd.map_len); /* SIGKILL: the thresholds stay pinned */
	fg_signal_close(&sd.sig);
	ASSERT_EQ(fg_shed_switch_off(v, true, &was), 0, "shed off with no daemon");
	now += 100 * MS;
	ASSERT_OK(fg_shedd_start(&sd, &m, &cfg, dir, now), "adopt while off");
	ASSERT_TRUE(sd.c.amount == 0, "adopted while off: from zero, not the pinned amount");
	run(&sd, &m, &now, 1, &chg);
	ASSERT_EQ(chg.hold, FG_SHEDD_OFF, "adopted: the first sample holds (and logs it)");
	ASSERT_EQ(pinned(&m).off, 1, "adopted: off kept");
	fg_shedd_stop(&sd);
	ASSERT_EQ(pinned(&m).off, 1, "a clean stop keeps off");
	fg_shed_map_close(&v, len);
	ASSERT_TRUE(v == NULL, "unmapped");
	teardown(&m);
}

int main(int argc, char **argv)
{
	fg_test_init(argc, argv);
	snprintf(dir, sizeof(dir), "/tmp/test_shedd.%d", getpid());
	snprintf(sigpath, sizeof(sigpath), "%s/signal", dir);
	if (mkdir(dir, 0700)) {
		perror(dir);
		return 1;
	}
	FG_RUN(test_onset_order_and_deadline);
	FG_RUN(test_hold_adopt_lost_state);
	FG_RUN(test_switch_off_adopt);
	unlink(sigpath);
	rmdir(dir);
	return fg_test_summary();
}
