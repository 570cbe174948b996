// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * SYN authentication's module (daemon.h; docs/syn-auth.md): the verified
 * tables sized before the load (as pinned when adopting), the secret in
 * fg_sakey from getrandom at the first start, kept across restarts and
 * rotated every key epoch (user/synauth/sakey.c), the handoff way's tc
 * program on every interface before a policy that needs it is flipped in
 * (tcx link pinned as tclink_<ifname>, else clsact; adopted on restart,
 * removed on detach), the verified gauge and the metrics lines. A reload
 * that brings syn_auth into a daemon whose program has no steps swaps in a
 * second instance with them (attach/swap.h) before its flip; one that takes
 * syn_auth out keeps them (idle without a syn_auth rule, docs/syn-auth.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "attach/swap.h"
#include "daemon/daemon.h"
#include "lib/kfeat.h"
#include "lib/log.h"
#include "policy/policy.h"
#include "policy/policy_kernel.h"
#include "synauth/synauth.h"
#include "floodgate.skel.h"
#include "fgsyn.skel.h"
#include "lib/sysutil.h"

#define GAUGE_EVERY_NS (5ull * 1000000000ull) /* the verified tables' pass */
#define RETRY_EVERY_NS (5ull * 1000000000ull) /* an interface without its tc program */
/* tests only: the steps' swap fails on this interface, after those before it */
#define FG_SWAP_FAIL_ENV "FLOODGATE_TEST_SWAP_FAIL"

/* What the swaps that load syn_auth's steps at a reload came to (metrics). */
enum sa_swap_result {
	SWAP_DONE,
	SWAP_LOAD_FAILED,
	SWAP_REPLACE_FAILED,
	SWAP_ROLLBACK_FAILED,
	SWAP_N
};
static const char *const sa_swap_names[SWAP_N] = { "done", "load_failed", "replace_failed",
						   "rollback_failed" };

static struct {
	__u32 bits4, bits6;   /* the verified tables' sizes, as loaded */
	struct fgsyn_bpf *tc; /* the handoff way's program, NULL when not loaded */
	char tc_why[256];     /* why it is not */
	struct fg_tc_iface ifs[FG_MAX_IFS];
	int n_ifs;
	int tc_want;		  /* FLOODGATE_TC_ATTACH: enum fg_tc_how, FG_TC_NONE for auto */
	bool tc_on;		  /* the policy in force is handoff: keep it attached */
	bool steps;		  /* the XDP program was loaded with syn_auth's steps (fg_sa_on) */
	bool key_ok, key_warned;  /* the current epoch has a key; said so */
	__u64 gauge_at, retry_at; /* CLOCK_MONOTONIC ns */
	__u64 ver4, ver6;	  /* the gauge */
	__u64 systat[FG_SYN_NSTAT]; /* the tc program's counters */
	struct fg_sadly dly;	    /* first-connect delays */
	__u64 swaps[SWAP_N];	    /* enum sa_swap_result; rollback_failed: per interface */
} sa;

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

/* The set-count exponent of a table pinned at dir/name, 0 when none is. */
static __u32 pinned_bits(const char *dir, const char *name)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), bits = 0;
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	if (!bpf_obj_get_info_by_fd(fd, &info, &len))
		while (bits < 31 && (1u << bits) < info.max_entries)
			bits++;
	close(fd);
	return bits;
}

/* Size the tables; load the tc program where the kernel gives the handoff way. */
static int sa_open(struct fgd *d)
{
	__u32 want = fg_ver_bits(d->cfg->syn.max_verified);
	char why[FG_WHY_LEN];
	enum fg_syn_way way;
	int err;

	sa.bits4 = pinned_bits(d->dir, "fg_ver4");
	sa.bits6 = pinned_bits(d->dir, "fg_ver6");
	if ((sa.bits4 && sa.bits4 != want) || (sa.bits6 && sa.bits6 != want))
		pr_warn("syn_auth: the pinned verified tables hold %u sets, max_verified asks for "
			"%u: they keep their size until 'floodgate detach'",
			1u << sa.bits4, 1u << want);
	if (!sa.bits4)
		sa.bits4 = want;
	if (!sa.bits6)
		sa.bits6 = want;
	/* syn_auth's steps are a load-time switch (the verifier's work +18% on 6.18,
	 * +6% on 6.1, bpf/budget): in only when the policy at start authenticates */
	sa.steps = d->cfg->syn.nrules > 0;
	d->skel->rodata->fg_sa_on = sa.steps;
	if (sa.steps)
		pr_info("syn_auth: loading the XDP program with its syn_auth steps");
	if ((err = bpf_map__set_max_entries(d->skel->maps.fg_ver4, 1u << sa.bits4)) ||
	    (err = bpf_map__set_max_entries(d->skel->maps.fg_ver6, 1u << sa.bits6))) {
		pr_err("syn_auth: sizing the verified tables: %s", strerror(-err));
		return err;
	}
	way = fg_synauth_way(fg_kfeat_get(), FG_SYN_WAY_HANDOFF, why);
	fg_whyn(sa.tc_why, sizeof(sa.tc_why), "%s", why);
	if (way != FG_SYN_WAY_HANDOFF)
		return 0;
	sa.tc_want = fg_tc_want(getenv(FG_TC_ATTACH_ENV), why);
	if (sa.tc_want < 0) {
		/* as a tc program that would not load: handoff is refused at apply */
		fg_whyn(sa.tc_why, sizeof(sa.tc_why), "%s", why);
		pr_warn("syn_auth: %s; a policy with way handoff is refused", sa.tc_why);
		return 0;
	}
	if (sa.tc_want)
		pr_info("syn_auth: the tc program through %s only (%s)",
			fg_tc_how_names[sa.tc_want], FG_TC_ATTACH_ENV);
	sa.tc = fgsyn_bpf__open_and_load();
	if (!sa.tc) {
		/* an optional program never stops the filter: handoff is refused at apply */
		snprintf(sa.tc_why, sizeof(sa.tc_why), "the tc program would not load: %s",
			 strerror(errno));
		pr_warn("syn_auth: %s; a policy with way handoff is refused", sa.tc_why);
	}
	return 0;
}

static void tend_key(struct fgd *d, __u64 now)
{
	struct fg_sakey_rec rec;
	int err = fg_sakey_tend(d->maps.fd[FGM_SAKEY], now, sa.bits4, sa.bits6, &rec);

	if (rec.seeded)
		pr_info("syn_auth: new seeds for the verified tables");
	if (rec.filled)
		pr_info("syn_auth: %d new cookie key%s (epoch %llu)", rec.filled,
			rec.filled == 1 ? "" : "s", (unsigned long long)rec.epoch);
	sa.key_ok = rec.have_cur;
	if (err && !sa.key_warned)
		pr_warn("syn_auth: the secret: %s; without a key nothing is answered "
			"(counted as syn_auth_nokey) and SYNs are charged as without syn_auth",
			strerror(-err));
	sa.key_warned = err != 0;
}

static int sa_init(struct fgd *d)
{
	tend_key(d, mono_ns());
	if (sa.key_ok)
		pr_info("syn_auth: secret ready; verified tables of %u and %u sets", 1u << sa.bits4,
			1u << sa.bits6);
	return 0;
}

static void tc_detach_all(struct fgd *d)
{
	for (int i = 0; i < sa.n_ifs; i++) {
		int err = sa.ifs[i].how ? fg_tc_detach(d->dir, &sa.ifs[i]) : 0;

		if (err)
			pr_warn("syn_auth: %s: removing the tc program: %s", sa.ifs[i].name,
				strerror(-err));
	}
	sa.n_ifs = 0;
	sa.tc_on = false;
}

/* The tc program on every interface the daemon filters; 0 or the first failure (why). */
static int tc_attach_all(struct fgd *d, char *why)
{
	int prog = bpf_program__fd(sa.tc->progs.fg_syn), err = 0;

	for (int i = 0; i < d->n_ifnames; i++) {
		struct fg_tc_iface *t = &sa.ifs[i];

		if (i < sa.n_ifs && !strcmp(t->name, d->ifnames[i]) && fg_tc_alive(t))
			continue;
		if (i < sa.n_ifs && t->how)
			fg_tc_detach(d->dir, t);
		memset(t, 0, sizeof(*t));
		t->link_fd = -1;
		snprintf(t->name, sizeof(t->name), "%s", d->ifnames[i]);
		t->want = sa.tc_want;
		err = fg_tc_attach(prog, d->dir, t);
		if (err == -ENODEV) {
			err = 0; /* attached when the interface comes (tick) */
			continue;
		}
		if (err) {
			snprintf(why, FG_WHY_LEN,
				 "syn_auth: %s: cannot attach the tc program: %.200s", t->name,
				 t->why[0] ? t->why : strerror(-err));
			break;
		}
		pr_info("syn_auth: %s: tc program %s (%s)", t->name,
			t->adopted ? "adopted" : "attached", fg_tc_how_names[t->how]);
	}
	for (int i = d->n_ifnames; i < sa.n_ifs; i++)
		if (sa.ifs[i].how)
			fg_tc_detach(d->dir, &sa.ifs[i]);
	sa.n_ifs = d->n_ifnames;
	return err;
}

static int steps_on(struct floodgate_bpf *nskel, void *arg, char *why)
{
	(void)arg;
	(void)why;
	nskel->rodata->fg_sa_on = 1;
	return 0;
}

/* The running program has no steps: a second instance with them, swapped
 * in on every interface while the first keeps enforcing; on any failure
 * the first stays everywhere (swap.h) and the reload is refused. */
static int load_steps(struct fgd *d, char *why)
{
	const char *fail_at = getenv(FG_SWAP_FAIL_ENV);
	struct fg_swap_opts o = { .edit = steps_on,
				  .fail_at = fail_at && *fail_at ? fail_at : NULL };
	char swhy[FG_WHY_LEN] = "";
	struct fg_swap_res r;
	__u64 t0 = mono_ns();
	int err;

	pr_info("syn_auth: the policy brings syn_auth: loading the XDP program with its steps "
		"beside the running one");
	err = d->swap_prog(d, &o, &r, swhy);
	if (err) {
		sa.swaps[r.load_failed ? SWAP_LOAD_FAILED : SWAP_REPLACE_FAILED]++;
		sa.swaps[SWAP_ROLLBACK_FAILED] += (__u64)r.rollback_failed;
		if (r.load_failed)
			fg_why(why,
			       "syn_auth: the XDP program with syn_auth's steps would not load "
			       "(%.300s): the running program stays",
			       swhy);
		else
			fg_why(why,
			       "syn_auth: swapping in the XDP program with syn_auth's steps "
			       "failed (%.300s): %s",
			       swhy,
			       r.rollback_failed ? "some interfaces kept the new program (its "
						   "steps idle under the running policy)" :
						   "the running program stays on every interface");
		if (r.rolled_back)
			pr_warn("syn_auth: %d interface(s) swapped back to the running program",
				r.rolled_back);
		return err;
	}
	sa.swaps[SWAP_DONE]++;
	sa.steps = true;
	pr_info("syn_auth: program %u with syn_auth's steps runs on %d interface(s)%s, swapped in "
		"%.0f ms",
		r.new_id, r.swapped, r.skipped ? " (the others when they come back)" : "",
		(double)(mono_ns() - t0) / 1e6);
	return 0;
}

/* A handoff policy needs the tc program in place before its flip: else the
 * first proven ACKs reach the kernel unhanded and get an RST. */
static int sa_before_flip(struct fgd *d, const struct fg_config *ncfg, char *why)
{
	int err;

	if (ncfg->pol.sa.way != FG_SA_WAY_OFF && !sa.steps && (err = load_steps(d, why)))
		return err;
	if (ncfg->pol.sa.way != FG_SA_WAY_HANDOFF)
		return 0;
	if (!sa.tc) {
		snprintf(why, FG_WHY_LEN, "syn_auth: way handoff needs the tc program: %.300s",
			 sa.tc_why);
		return -EOPNOTSUPP;
	}
	err = tc_attach_all(d, why);
	if (!err)
		sa.tc_on = true;
	return err;
}

/* A policy without handoff in force: the tc program has nothing to do. */
static void sa_after_flip(struct fgd *d, const struct fg_config *ncfg)
{
	if (ncfg->pol.sa.way != FG_SA_WAY_HANDOFF && sa.n_ifs) {
		tc_detach_all(d);
		pr_info("syn_auth: the policy does not hand off: tc program removed");
	}
}

/* syn_auth taken out: the steps stay loaded, idle without a syn_auth rule
 * (swapping back would cost a load to save each packet a test of the way). */
static void sa_reloaded(struct fgd *d, const struct fg_config *old, const struct fg_config *ncfg)
{
	(void)d;
	if (sa.steps && old->pol.sa.way != FG_SA_WAY_OFF && ncfg->pol.sa.way == FG_SA_WAY_OFF)
		pr_info("syn_auth: no rule authenticates now; the XDP program keeps its steps, idle, "
			"until a restart");
}

static int sa_start(struct fgd *d)
{
	if (d->cfg->syn.nrules)
		pr_info("syn_auth: %d rule%s authenticate%s, way %s", d->cfg->syn.nrules,
			d->cfg->syn.nrules == 1 ? "" : "s", d->cfg->syn.nrules == 1 ? "s" : "",
			d->cfg->pol.sa.way == FG_SA_WAY_HANDOFF ? "handoff" : "retransmit");
	return 0;
}

static void sa_tick(struct fgd *d, struct fg_tick *t)
{
	__u64 now = mono_ns();
	struct fg_ver v;
	char why[FG_WHY_LEN] = "";

	(void)t;
	tend_key(d, now);
	if (sa.tc_on && sa.tc && now >= sa.retry_at) {
		sa.retry_at = now + RETRY_EVERY_NS;
		if (tc_attach_all(d, why))
			pr_warn("%s", why);
	}
	if (sa.tc)
		fg_systat_read(bpf_map__fd(sa.tc->maps.fg_systat), sa.systat);
	fg_sadly_read(d->maps.fd[FGM_SADLY], &sa.dly);
	if (now < sa.gauge_at)
		return;
	sa.gauge_at = now + GAUGE_EVERY_NS;
	if (!fg_ver_open(&v, d->maps.fd[FGM_VER4], d->maps.fd[FGM_VER6], d->maps.fd[FGM_SAKEY],
			 false)) {
		fg_ver_count(&v, now, &sa.ver4, &sa.ver6);
		fg_ver_close(&v);
	}
}

/* A histogram of log2 us buckets as Prometheus' cumulative one, in seconds. */
static void delay_lines(FILE *f, const char *way, const __u64 *h, __u64 sum_us)
{
	__u64 cum = 0;

	for (int i = 0; i < FG_SA_HIST; i++) {
		cum += h[i];
		if (i >= 4 && i <= 24) /* 32 us .. 33 s */
			fprintf(f,
				"floodgate_syn_auth_first_connect_seconds_bucket{way=\"%s\","
				"le=\"%.6g\"} %llu\n",
				way, (double)(2ull << i) / 1e6, (unsigned long long)cum);
	}
	fprintf(f, "floodgate_syn_auth_first_connect_seconds_bucket{way=\"%s\",le=\"+Inf\"} %llu\n",
		way, (unsigned long long)cum);
	fprintf(f, "floodgate_syn_auth_first_connect_seconds_sum{way=\"%s\"} %.6f\n", way,
		(double)sum_us / 1e6);
	fprintf(f, "floodgate_syn_auth_first_connect_seconds_count{way=\"%s\"} %llu\n", way,
		(unsigned long long)cum);
}

static void sa_metrics(struct fgd *d, const struct fg_tick *t, FILE *f)
{
	__u8 way = t->pol.sa.way;

	(void)d;
	fprintf(f,
		"# HELP floodgate_syn_auth_way The way SYN authentication takes (docs/syn-auth.md); "
		"1 for the one in force.\n# TYPE floodgate_syn_auth_way gauge\n");
	fprintf(f, "floodgate_syn_auth_way{way=\"off\"} %d\n", way == FG_SA_WAY_OFF);
	fprintf(f, "floodgate_syn_auth_way{way=\"handoff\"} %d\n", way == FG_SA_WAY_HANDOFF);
	fprintf(f, "floodgate_syn_auth_way{way=\"retransmit\"} %d\n", way == FG_SA_WAY_RETRANSMIT);
	fprintf(f,
		"# HELP floodgate_syn_auth_key 1 while the cookie secret has a key for now.\n"
		"# TYPE floodgate_syn_auth_key gauge\nfloodgate_syn_auth_key %d\n",
		sa.key_ok);
	fprintf(f, "# HELP floodgate_syn_auth_verified Sources whose address is verified now.\n"
		   "# TYPE floodgate_syn_auth_verified gauge\n");
	fprintf(f, "floodgate_syn_auth_verified{family=\"ipv4\"} %llu\n",
		(unsigned long long)sa.ver4);
	fprintf(f, "floodgate_syn_auth_verified{family=\"ipv6\"} %llu\n",
		(unsigned long long)sa.ver6);
	fprintf(f,
		"# HELP floodgate_syn_auth_verified_capacity The verified tables' size.\n"
		"# TYPE floodgate_syn_auth_verified_capacity gauge\n"
		"floodgate_syn_auth_verified_capacity{family=\"ipv4\"} %u\n"
		"floodgate_syn_auth_verified_capacity{family=\"ipv6\"} %u\n",
		FG_VWAYS << sa.bits4, FG_VWAYS << sa.bits6);
	fprintf(f, "# HELP floodgate_syn_auth_tc_total The handoff way's tc program, by result.\n"
		   "# TYPE floodgate_syn_auth_tc_total counter\n");
	for (int i = 0; i < FG_SYN_NSTAT; i++)
		fprintf(f, "floodgate_syn_auth_tc_total{result=\"%s\"} %llu\n",
			fg_syn_stat_names[i], (unsigned long long)sa.systat[i]);
	fprintf(f, "# HELP floodgate_syn_auth_swaps_total Reloads that swapped in the XDP program "
		   "with syn_auth's steps, by result (rollback_failed: interfaces).\n"
		   "# TYPE floodgate_syn_auth_swaps_total counter\n");
	for (int i = 0; i < SWAP_N; i++)
		fprintf(f, "floodgate_syn_auth_swaps_total{result=\"%s\"} %llu\n", sa_swap_names[i],
			(unsigned long long)sa.swaps[i]);
	fprintf(f, "# HELP floodgate_syn_auth_first_connect_seconds A new client's first-connect "
		   "delay added by SYN authentication.\n"
		   "# TYPE floodgate_syn_auth_first_connect_seconds histogram\n");
	delay_lines(f, "handoff", sa.dly.handoff, sa.dly.sum_us[0]);
	delay_lines(f, "retransmit", sa.dly.retransmit, sa.dly.sum_us[1]);
}

static void sa_close(struct fgd *d, bool detach)
{
	if (detach)
		tc_detach_all(d);
	else
		for (int i = 0; i < sa.n_ifs; i++)
			fg_tc_release(&sa.ifs[i]); /* the pins keep them attached */
	sa.n_ifs = 0;
	fgsyn_bpf__destroy(sa.tc);
	sa.tc = NULL;
}

const struct fg_module fg_mod_synauth = {
	.name = "syn_auth",
	.open = sa_open,
	.init = sa_init,
	.before_flip = sa_before_flip,
	.start = sa_start,
	.after_flip = sa_after_flip,
	.reloaded = sa_reloaded,
	.tick = sa_tick,
	.metrics = sa_metrics,
	.close = sa_close,
};
