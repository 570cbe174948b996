// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fgbench: floodgate's micro benchmark and the XDP baselines for the live
 * benchmark (tools/bench.sh drives both).
 *
 *   fgbench micro --policy FILE [--cpu N] [--passes P] [--repeat R]
 *       BPF_PROG_TEST_RUN on one CPU, wall-clock ns per packet, one JSON
 *       line per figure and pass on stdout, passes interleaved (pass 1 runs
 *       every scenario, then pass 2, ...).
 *   fgbench rules [--cpu N] [--passes P] [--repeat R]
 *       the cost of the first-match rule search against the number of rules
 *       (1, 16, 64, 256, capped at the policy limit), the matching rule
 *       the last one: "worst" rules differ by source port (a per-dport
 *       index cannot help), "typical" ones by destination port. Every rule
 *       drops, so the figure is the program with that policy; match_ns
 *       is its excess over the 1-rule policy of the same kind and pass.
 *   fgbench xdp -i DEV --prog bare_drop|floor|simple [--rate N --burst N]
 *       attach a baseline to DEV (a bpf_link, gone when fgbench exits),
 *       print "ready", wait for SIGTERM/SIGINT, print {"count":N}.
 *   fgbench sweep [--curve sources|rules|prefixes|shed|all] [--quick] ...
 *       the cost curves, each point next to the floor (section "sweep").
 *   fgbench fill --pin-dir DIR -i DEV --family 4|6 [--sources N] [--tracked T] [--start S]
 *       one frame from each of N new sources through floodgated's program,
 *       then more until T are tracked, for the daemon's CPU curve and the
 *       memory per tracked source (fill).
 *   fgbench dispatch -i DEV
 *       floodgate alone and inside libxdp's dispatcher, or the reason this
 *       kernel cannot build one (section "dispatch").
 *   fgbench micro6 [--sources N] [--max-sources M] [--cpu N] [--passes P] [--repeat R]
 *       the IPv6 source table: ns per packet at 1 and N tracked /64s and
 *       the map memory per tracked source (section "micro6").
 *   fgbench synauth [--cpu N] [--passes P] [--repeat R]
 *       a verified client's ACK on a syn_auth rule against the same ACK on
 *       the same rule without syn_auth (section "synauth").
 *
 * Why a slope: with repeat > 1, BPF_PROG_TEST_RUN re-points the XDP
 * dispatcher around the run (bpf_prog_change_xdp, which waits for an RCU
 * grace period), a fixed cost of tens of ms per call that dwarfs and
 * blurs the per-packet cost; the kernel's own `duration` is also too
 * coarse below ~20 ns. So each figure is the slope of wall time between
 * calls with repeat R and 4R (the faster of two calls each): ns per extra
 * packet. The intercept (the fixed cost) is reported too.
 *
 * Distinct sources: the `vary` program (bpf/bench_floor.bpf.c) writes a
 * pseudo-random source out of N into the frame, then tail-calls floodgate,
 * whose source table was prefilled with those N buckets (throttled: tat an
 * hour ahead). The harness's own cost is measured as vary -> floor and
 * reported, so the net figure is raw - (vary_floor - floor).
 *
 * Fleet: a rule with a fleet limit next to one with a local aggregate,
 * same per-source limit, in one instance: admitted (the lease's one
 * fetch-and-add against the aggregate's compare-and-swap) and spent (the
 * read-only drop paths), and their ratios per pass. The lease is written
 * as floodgated writes it (an mmap of fg_lease); no Redis is involved.
 */
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "floodgate.h"
#include "floodgate.skel.h"
#include "bench_floor.skel.h"
#include "fgtest_xdp.skel.h"
#include "attach/attach.h"
#include "conn/conn.h"
#include "maps/ctl.h"
#include "maps/fgmaps.h"
#include "lib/opts.h"
#include "policy/policy.h"
#include "maps/apply.h"
#include "sources/sources.h"
#include "maps/mapimg.h"
#include "attach/xdpattach.h"
#include "lib/sysutil.h"
#include "lib/kfeat.h"
#include "policy/policy_kernel.h"
#include "fg_hash.h"

#define NSEC		1000000000ull
#define FG_SKIP_NOCLOCK (1u << 31) /* fgbench's own: fg_clock = FG_CLOCK_TEST, not a rodata bit */

static volatile sig_atomic_t stop;

/* Both commands' options. */
struct bench_opts {
	const char *policy, *only;	       /* micro */
	__u64 cpu, passes, repeat, maxsrc;     /* micro */
	const char *ifname, *prog;	       /* xdp; ifname also fill, dispatch */
	const char *curve;		       /* sweep */
	bool quick;			       /* sweep */
	__u64 point;			       /* sweep: 0, or the one sources point */
	__u64 table;			       /* sweep: 0, or the sources curve's table */
	const char *pin_dir;		       /* fill */
	__u64 family, sources, start, tracked; /* fill; sources also micro6 */
	__u64 max_sources;		       /* micro6 */
	__u64 rate, burst;		       /* xdp: simple's limit */
};

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_WARN)
		return vfprintf(stderr, fmt, ap);
	return 0;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * NSEC + ts.tv_nsec;
}

/* The IPv4 header checksum of the 20-byte header at ip, stored in it
 * (its checksum field must be zero before). */
static void ip4_csum_set(__u8 *ip)
{
	__u32 sum = 0;

	for (int i = 0; i < 20; i += 2)
		sum += (ip[i] << 8) | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	ip[10] = sum >> 8;
	ip[11] = sum;
}

static void put_be16(__u8 *p, __u16 v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put_be32(__u8 *p, __u32 v)
{
	put_be16(p, v >> 16);
	put_be16(p + 2, v);
}

/* A 64-byte frame's start, the rest zero: broadcast from 02:00:00:00:00:01,
 * ethertype proto. */
static void build_eth(__u8 *f, __u16 proto)
{
	memset(f, 0, 64);
	memset(f, 0xff, 6);
	f[6] = 0x02;
	f[11] = 0x01;
	put_be16(f + 12, proto);
}

/* A 64-byte Ethernet/IPv4/UDP frame (no FCS) from src to 10.200.0.2:dport. */
static void build_frame(__u8 *f, __u32 src, __u16 dport)
{
	__u8 *ip = f + 14, *udp = ip + 20;

	build_eth(f, 0x0800);
	ip[0] = 0x45;
	put_be16(ip + 2, 64 - 14);
	ip[8] = 64;
	ip[9] = 17;
	put_be32(ip + 12, src);
	put_be32(ip + 16, 0x0ac80002); /* 10.200.0.2 */
	ip4_csum_set(ip);
	put_be16(udp, 40000);
	put_be16(udp + 2, dport);
	put_be16(udp + 4, 30); /* UDP checksum 0: none */
}

/* The same frame as a TCP SYN (20-byte header, 10 bytes of payload). */
static void build_syn(__u8 *f, __u32 src, __u16 dport)
{
	__u8 *ip = f + 14, *tcp = ip + 20;

	build_frame(f, src, dport);
	ip[9] = 6;
	ip[10] = ip[11] = 0;
	ip4_csum_set(ip);
	memset(tcp + 4, 0, 16);
	tcp[12] = 5 << 4; /* data offset: 20 bytes */
	tcp[13] = FG_TCP_SYN;
	tcp[14] = 0xff;
	tcp[15] = 0xff; /* window */
}

/* ---- floodgate instances ------------------------------------------------- */

struct fgi {
	struct floodgate_bpf *skel;
	struct fg_maps maps;
	struct fg_config cfg;
	char dir[64];
	int prog;
};

/* skip: FG_SKIP_* ablations (rodata), rule: fg_skip_rule for FG_SKIP_SCAN;
 * trie4: IPv4 lists from the LPM trie, as before ABI 6 (rodata fg_trie4);
 * skip FG_SKIP_NOCLOCK: the test clock, fake_now = 1 (no helper call). */
/* 1: fgi_open_ex loads with syn_auth's steps (rodata fg_sa_on), as
 * floodgated does for a policy with a syn_auth rule (fgbench synauth). */
static __u32 fgi_sa_on;

static int fgi_open_ex(struct fgi *g, const char *yaml, const char *path, __u32 skip, __u32 rule,
		       __u32 trie4)
{
	struct fg_err e = {};
	char why[FG_WHY_LEN] = "", msg[1024];
	int err;

	memset(g, 0, sizeof(*g));
	g->maps.dirfd = -1;
	for (int i = 0; i < FGM_NMAPS; i++)
		g->maps.fd[i] = -1;
	err = path ? fg_config_load(path, &g->cfg, &e) :
		     fg_config_parse(yaml, strlen(yaml), "<fgbench>", &g->cfg, &e);
	if (err) {
		fg_err_format(&e, msg, sizeof(msg));
		fprintf(stderr, "fgbench: policy: %s\n", msg);
		return err;
	}
	g->skel = floodgate_bpf__open();
	if (!g->skel)
		return -errno;
	g->skel->rodata->fg_skip = skip & ~FG_SKIP_NOCLOCK;
	g->skel->rodata->fg_skip_rule = rule;
	g->skel->rodata->fg_trie4 = trie4;
	g->skel->rodata->fg_sa_on = fgi_sa_on;
	/* the way this kernel gives, as floodgated takes it at apply */
	if (fgi_sa_on)
		fg_policy_kernel_fill(&g->cfg, fg_kfeat_get());
	if (skip == FG_SKIP_NOCLOCK)
		g->skel->rodata->fg_clock = FG_CLOCK_TEST;
	/* fg_clock stays FG_CLOCK_COARSE, as floodgated loads it */
	bpf_map__set_max_entries(g->skel->maps.fg_src4, fg_src4_sets(g->cfg.max_sources));
	bpf_map__set_max_entries(g->skel->maps.fg_src6, fg_src6_sets(g->cfg.max_sources));
	err = floodgate_bpf__load(g->skel);
	if (err) {
		fprintf(stderr, "fgbench: loading floodgate: %s\n", strerror(-err));
		return err;
	}
	if (skip == FG_SKIP_NOCLOCK)
		g->skel->bss->fake_now = 1;
	g->prog = bpf_program__fd(g->skel->progs.floodgate);
	/* fg_maps wants a directory to lock; nothing is pinned in it */
	snprintf(g->dir, sizeof(g->dir), "/tmp/fgbench.XXXXXX");
	err = fg_maps_scratch(&g->maps, g->skel, g->dir);
	if (!err)
		err = fg_policy_apply(&g->maps, &g->cfg, NULL, why);
	if (err)
		fprintf(stderr, "fgbench: applying the policy: %s\n",
			why[0] ? why : strerror(-err));
	return err;
}

static int fgi_open(struct fgi *g, const char *yaml, const char *path)
{
	return fgi_open_ex(g, yaml, path, 0, 0, 0);
}

static void fgi_close(struct fgi *g)
{
	fg_maps_close(&g->maps);
	floodgate_bpf__destroy(g->skel);
	fg_config_free(&g->cfg);
	if (g->dir[0])
		rmdir(g->dir);
	memset(g, 0, sizeof(*g));
}

/* Prefill fg_src4 with n throttled buckets for rule index ri, sources
 * base .. base+n-1, placed where the program will look for them (the
 * table's own hash and seed, first free way of the set; a source whose set
 * is full is left out). Returns the entries the table holds afterwards. */
static long fgi_prefill(struct fgi *g, __u32 ri, __u32 base, __u32 n)
{
	const struct fg_rule *r = &g->cfg.pol.rules[ri];
	int fd = g->maps.fd[FGM_SRC4];
	__u64 tat = (now_ns() + 3600 * NSEC) << FG_TU_SHIFT;
	struct bpf_map_info info = {};
	__u32 ilen = sizeof(info);
	long pg = sysconf(_SC_PAGESIZE);
	struct fg_set4 *sets;
	struct fg_ctl ctl;
	size_t len, n4 = 0, n6 = 0;
	int err;

	if (bpf_obj_get_info_by_fd(fd, &info, &ilen) || fg_ctl_read(&g->maps, &ctl))
		return -errno;
	len = ((size_t)info.max_entries * sizeof(*sets) + pg - 1) / pg * pg;
	sets = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (sets == MAP_FAILED)
		return -errno;
	for (__u32 i = 0; i < n; i++) {
		union {
			struct fg_wkey4 s;
			__u64 u;
		} k = { .s = {
				.addr = htonl(base + i) & r->mask4,
				.rule = FG_WKEY4_USED | r->id,
				.gen = r->gen,
			} };
		struct fg_set4 *set = &sets[fg_hash4(k.u, ctl.seed4, ctl.src4_bits)];
		__u64 *keys = (__u64 *)set->key;
		__u32 pref = fg_way4_pref(k.u, ctl.seed4);
		int seen = 0;

		/* as the program claims: the key's own way if empty, else the first empty */
		for (int w = 0; w < FG_WAYS4; w++)
			seen |= keys[w] == k.u;
		if (!seen && !keys[pref]) {
			set->tat[pref] = tat;
			set->drops[pref] = 0;
			keys[pref] = k.u;
			continue;
		}
		for (int w = 0; w < FG_WAYS4; w++) {
			__u64 *kw = (__u64 *)&set->key[w];

			if (*kw == k.u)
				break;
			if (!*kw) {
				set->tat[w] = tat;
				set->drops[w] = 0;
				*kw = k.u;
				break;
			}
		}
	}
	munmap(sets, len);
	err = fg_sources_count(&g->maps, &n4, &n6);
	return err ? err : (long)n4;
}

/* Over every row of m: the count of event ev, or (ev < 0) the frames with
 * outcome out, in *sum. 0 or -errno. */
static int stats_sum(struct fg_maps *m, int ev, int out, __u64 *sum)
{
	static struct fg_stats rows[FG_NROWS];
	int err = fg_stats_read(m, rows);

	*sum = 0;
	for (int r = 0; !err && r < FG_NROWS; r++)
		*sum += ev >= 0 ? rows[r].ev[ev] : rows[r].pkts[out];
	return err;
}

/* stats_sum of an instance, 0 if unreadable. */
static __u64 fgi_sum(struct fgi *g, int ev, int out)
{
	__u64 s;

	return stats_sum(&g->maps, ev, out, &s) ? 0 : s;
}

static __u64 fgi_ev(struct fgi *g, int ev)
{
	return fgi_sum(g, ev, 0);
}

/* Frames that did not find a bucket of their own already there: a new one,
 * the overflow bucket or none (on_full: closed). */
static __u64 fgi_missed(struct fgi *g)
{
	return fgi_ev(g, FG_EV_INSERT) + fgi_ev(g, FG_EV_OVERFLOW) + fgi_ev(g, FG_EV_FULL_CLOSED);
}

/* Where the last frames went: the (row, outcome) with the most packets. */
static void fgi_top_outcome(struct fgi *g, int *row, int *out)
{
	struct fg_stats rows[FG_NROWS];
	__u64 best = 0;

	*row = *out = -1;
	if (fg_stats_read(&g->maps, rows))
		return;
	for (int r = 0; r < FG_NROWS; r++)
		for (int o = 0; o < FG_OUT_MAX; o++)
			if (rows[r].pkts[o] > best) {
				best = rows[r].pkts[o];
				*row = r;
				*out = o;
			}
}

/* ---- measuring ----------------------------------------------------------- */

static int run_once(int prog, const __u8 *frame, __u32 repeat, double *ns, __u32 *retval,
		    __u32 *kns)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = 64, .repeat = repeat);
	__u64 t0 = now_ns();
	int err = bpf_prog_test_run_opts(prog, &o);

	*ns = (double)(now_ns() - t0);
	*retval = o.retval;
	if (kns)
		*kns = o.duration;
	return err;
}

/* The global mode as the CLI sets it: an override through ctl.h. */
static void set_mode_ovr(struct fg_maps *m, __u32 ovr)
{
	struct fg_ctl_map cm;

	if (!fg_ctl_map_open(&cm, m->fd[FGM_CTL])) {
		fg_switch_mode_ovr(&cm, ovr);
		fg_ctl_map_close(&cm);
	}
}

/*
 * ns per packet: the slope between repeat R and 4R, each run twice and the
 * faster run kept (the fixed cost is an RCU grace period, whose length only
 * ever adds noise upwards); the intercept is the fixed cost, in ms. *kns:
 * the kernel's own mean over the 4R runs (the smaller), whole ns: it leaves
 * the grace period and the time this task was scheduled out aside, so on a
 * busy machine it is the steadier figure above ~20 ns.
 */
static int measure(int prog, const __u8 *frame, __u32 R, double *slope, double *fixed_ms,
		   __u32 *retval, __u32 *kns)
{
	double best[2] = { INFINITY, INFINITY }, y;
	__u32 k;
	int err;

	*kns = UINT32_MAX;
	for (int i = 0; i < 4; i++) {
		err = run_once(prog, frame, (i & 1) ? 4 * R : R, &y, retval, &k);
		if (err)
			return err;
		if (y < best[i & 1])
			best[i & 1] = y;
		if ((i & 1) && k < *kns)
			*kns = k;
	}
	*slope = (best[1] - best[0]) / (3.0 * R);
	*fixed_ms = (best[0] - *slope * R) / 1e6;
	return 0;
}

/* ---- micro --------------------------------------------------------------- */

#define SRC_ONE		     0x0a010203u /* 10.1.2.3 */
#define SRC_BASE	     0x0a000000u /* 10.0.0.0: N-source scenarios */
#define SRC_FILL4	     0x0b000000u /* 11.0.0.0: fill's IPv4 sources */
#define FG_MAX_SOURCES_BENCH (1u << 24)	 /* max_sources' upper limit (user/policy/policy.c) */

/* Throttled (dport 9) and allowed (dport 7) rules, one table. */
static const char *pol_one = "max_sources: 65536\n"
			     "rules:\n"
			     "  - name: throttled\n"
			     "    match: {proto: udp, dport: 9}\n"
			     "    per_source: {rate: 1/s, burst: 1}\n"
			     "  - name: allowed\n"
			     "    match: {proto: udp, dport: 7}\n"
			     "    per_source: {rate: 1000000000/s, burst: 1000000000}\n"
			     "  - name: syn-throttled\n"
			     "    match: {proto: tcp, dport: 22}\n"
			     "    per_source: {rate: 1/s, burst: 1}\n"
			     "  - name: syn-capped\n"
			     "    match: {proto: tcp, dport: 80}\n"
			     "    per_source: {concurrency: 10}\n";
#define RULE_CAPPED 3 /* pol_one's syn-capped */

/* Entries in the XDP program's fgc_pend. */
static int fgi_pending(struct fgi *g)
{
	struct fg_conn_key k, next;
	void *prev = NULL;
	int fd = bpf_map__fd(g->skel->maps.fgc_pend), n = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		n++;
	}
	return n;
}

/* The source of the one-source scenarios at syn-capped's cap: an fgc_count
 * entry as the counter would hold for 10 connections (XDP's own copy of
 * the map: nothing counts here). */
static int fgi_at_cap(struct fgi *g, __u32 src)
{
	struct fg_conn_val v = { .est = FG_CONN_EST_ZERO };
	__be32 a[4] = { htonl(src) };
	struct fg_conn_cap cap;
	struct fg_conn_key k;

	if (fg_conn_cap_of_rule(&g->cfg.pol, RULE_CAPPED, &cap, NULL))
		return -EINVAL;
	fg_conn_key_of(&k, 4, a, &cap);
	v.est = fg_conn_est_set(v.est, 0, (__s32)cap.cap);
	return bpf_map_update_elem(bpf_map__fd(g->skel->maps.fgc_count), &k, &v, 0) ? -errno : 0;
}

/* Fleet against aggregate, each admitting (dport 11, 12) and spent (13, 14).
 * The Redis URL is only validated: nothing connects. Rule "hint" (dport
 * 10, never sent) is the UDP class's first entry, so fg_policy.hint4 names
 * it and all four measured rules start their set read after the scan: as
 * the first entry, "agg" would have its read started by the hint and
 * "fleet" not, and the ratio would measure the hint (+5% seen), not the
 * lease. */
#define HUGE_LIMIT "{rate: 1000000000/s, burst: 1000000000}"
static const char *pol_fleet = "max_sources: 65536\n"
			       "fleet: {redis: \"unix:/nonexistent/fgbench.sock\", node: fgbench}\n"
			       "rules:\n"
			       "  - name: hint\n"
			       "    match: {proto: udp, dport: 10}\n"
			       "    per_source: " HUGE_LIMIT "\n"
			       "  - name: agg\n"
			       "    match: {proto: udp, dport: 11}\n"
			       "    per_source: " HUGE_LIMIT "\n"
			       "    aggregate: " HUGE_LIMIT "\n"
			       "  - name: fleet\n"
			       "    match: {proto: udp, dport: 12}\n"
			       "    per_source: " HUGE_LIMIT "\n"
			       "    fleet: " HUGE_LIMIT "\n"
			       "  - name: agg-spent\n"
			       "    match: {proto: udp, dport: 13}\n"
			       "    per_source: " HUGE_LIMIT "\n"
			       "    aggregate: {rate: 1/s, burst: 1}\n"
			       "  - name: fleet-spent\n"
			       "    match: {proto: udp, dport: 14}\n"
			       "    per_source: " HUGE_LIMIT "\n"
			       "    fleet: {rate: 1/s, burst: 1}\n";
#define FLEET_TOKENS (1ll << 62)

/* A lease for each fleet rule, as floodgated writes one: rule "fleet" gets
 * tokens that never run out, "fleet-spent" none; both valid for an hour. */
static int fgi_leases(struct fgi *g)
{
	size_t len = FG_MAX_IDS * sizeof(struct fg_lease);
	struct fg_lease *l;

	l = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, g->maps.fd[FGM_LEASE], 0);
	if (l == MAP_FAILED)
		return -errno;
	for (__u32 i = 0; i < g->cfg.pol.nrules; i++) {
		const struct fg_rule *r = &g->cfg.pol.rules[i];
		struct fg_lease *e = &l[r->id & (FG_MAX_IDS - 1)];

		if (!r->fleet)
			continue;
		e->gen = r->gen;
		e->on_loss = FG_LOSS_CLOSED;
		__atomic_store_n(&e->tokens,
				 strcmp(g->cfg.rules[i].name, "fleet") ? 0 : FLEET_TOKENS,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&e->lease_expires, now_ns() + 3600 * NSEC, __ATOMIC_RELEASE);
	}
	munmap(l, len);
	return 0;
}

/* The row of the rule named name, or -1. */
static int fgi_row(const struct fgi *g, const char *name)
{
	for (__u32 i = 0; i < g->cfg.pol.nrules; i++)
		if (!strcmp(g->cfg.rules[i].name, name))
			return g->cfg.pol.rules[i].id;
	return -1;
}

enum {
	S_BARE,
	S_FLOOR,
	S_VFLOOR,
	S_ALLOW,
	S_THROT,
	S_SHADOW,
	S_REAL,
	S_V1,
	S_1K,
	S_100K,
	S_1M,
	S_AGG,
	S_FLEET,
	S_AGG_SPENT,
	S_FLEET_SPENT,
	S_SYN_RATE,
	S_SYN_CAP,
	/* ablations (rodata fg_skip) and the IPv4 list walk, deep and by the trie */
	S_REAL_NOCLOCK,
	S_REAL_NOLISTS,
	S_REAL_NOSCAN,
	S_REAL_NOSTATS,
	S_REAL_NOSRC,
	S_REAL_DEEP,
	S_REAL_DEEP_TRIE,
	S_1M_NOSTATS,
	S_1M_NOSRC,
	S_N
};

/* Printed as ratios after each pass: the fleet's cost over the aggregate's,
 * by the kernel's figure (see measure). */
static const struct {
	const char *name;
	int num, den;
} ratios[] = {
	{ "fleet_vs_aggregate", S_FLEET, S_AGG },
	{ "fleet_spent_vs_aggregate_spent", S_FLEET_SPENT, S_AGG_SPENT },
};

struct scen {
	const char *name;
	const char *what;
	int prog;
	struct fgi *g; /* floodgate instance, if any */
	__u32 nsrc;    /* vary: sources (0: no vary) */
	int jmp;       /* vary: tail-call target */
	__u16 dport;
	int shadow;
	__u32 expect; /* XDP verdict */
	int syn;      /* a TCP SYN, not UDP */
	__u32 src;    /* the one source, if not SRC_ONE */
};

/* Honesty checks for the fleet figures: the lease paid for exactly what
 * the fleet rule admitted, and each spent rule dropped by its own check. */
static void fleet_checks(struct fgi *g)
{
	size_t len = FG_MAX_IDS * sizeof(struct fg_lease);
	int rf = fgi_row(g, "fleet"), rfs = fgi_row(g, "fleet-spent"),
	    ras = fgi_row(g, "agg-spent");
	struct fg_stats rows[FG_NROWS];
	struct fg_lease *l;

	if (rf < 0 || rfs < 0 || ras < 0 || fg_stats_read(&g->maps, rows))
		return;
	l = mmap(NULL, len, PROT_READ, MAP_SHARED, g->maps.fd[FGM_LEASE], 0);
	if (l == MAP_FAILED)
		return;
	printf("{\"kind\":\"check\",\"what\":\"fleet lease spent = fleet rule admitted\","
	       "\"spent\":%lld,\"admitted\":%llu}\n",
	       (long long)(FLEET_TOKENS - l[rf].tokens),
	       (unsigned long long)rows[rf].pkts[FG_OUT_PASS]);
	printf("{\"kind\":\"check\",\"what\":\"spent rules: fleet_drop, agg_drop = dropped\","
	       "\"fleet_drop\":%llu,\"fleet_dropped\":%llu,\"agg_drop\":%llu,\"agg_dropped\":%llu}\n",
	       (unsigned long long)rows[rfs].ev[FG_EV_FLEET_DROP],
	       (unsigned long long)rows[rfs].pkts[FG_OUT_DROP],
	       (unsigned long long)rows[ras].ev[FG_EV_AGG_DROP],
	       (unsigned long long)rows[ras].pkts[FG_OUT_DROP]);
	munmap(l, len);
}

/* A source of the realistic policy's lists whose lookup takes all three
 * DIR-16-8-8 levels and finds no list and no set: the sibling of a /25../31
 * prefix inside its /24, not covered by anything. 0 if there is none. */
static __u32 deep_source(const struct fg_config *cfg)
{
	static struct fg_dir4_img img;
	__u32 src = 0;

	if (fg_dir4_build(cfg->pfx, cfg->n_pfx, &img))
		return 0;
	for (size_t i = 0; i < cfg->n_pfx && !src; i++) {
		const struct fg_pfx_entry *e = &cfg->pfx[i];
		__u32 a, l1, l2;
		struct fg_pfx v;

		if (e->family != 4 || e->plen <= 24 || e->plen >= 32)
			continue;
		a = ((__u32)e->addr[0] << 24 | (__u32)e->addr[1] << 16 | (__u32)e->addr[2] << 8 |
		     e->addr[3]) ^
		    (1u << (32 - e->plen));
		l1 = img.dir.e[a >> 16];
		l2 = (l1 & FG_DIR4_BLK) ? img.blk[l1 & ~FG_DIR4_BLK].e[(a >> 8) & 0xff] : 0;
		v = fg_dir4_img_lookup(&img, a);
		if ((l2 & FG_DIR4_BLK) && v.list == FG_LIST_NONE && !v.sets)
			src = a;
	}
	fg_dir4_img_free(&img);
	return src;
}

/* The rule index the realistic frame (SRC_ONE, UDP to 9) ends in: the top
 * row after its warm-up. */
static int real_rule(struct fgi *g)
{
	int row, out;

	fgi_top_outcome(g, &row, &out);
	for (__u32 i = 0; i < g->cfg.pol.nrules; i++)
		if (row >= 0 && g->cfg.pol.rules[i].id == row)
			return (int)i;
	return -1;
}

/* A table (a power of two, as fg_src4's sets are) of at least 4n ways: at
 * that load a set of FG_WAYS4 ways overflows for about 1 source in 10,000
 * (Poisson), so the points measure lookups, not the overflow path (checked
 * after each point). */
static __u32 table_for(__u64 n)
{
	__u64 tab = 2048;

	while (tab < 4 * n)
		tab <<= 1;
	return tab > FG_MAX_SOURCES_BENCH ? FG_MAX_SOURCES_BENCH : (__u32)tab;
}

/* One throttled UDP rule over a table for n sources (*tab, or when it is 0
 * table_for(n), stored in *tab: as the sweep's sources curve, so the n
 * sources fit; the few a full set
 * leaves out are dropped too, on_full: closed, and counted). Its rate is 1/h:
 * the prefill's tat, an hour ahead, is then within tau, not clamped to
 * now + tau as stale (fg_gcra.h), and no source refills during a run (at
 * 1/s a million sources got a million frames a second through). Prefilled with n
 * sources from SRC_BASE (*have: the entries the table holds); skip as
 * fgi_open_ex. 0 or -errno. */
static int fgi_open_filled(struct fgi *g, __u32 n, __u32 skip, __u32 *tab, long *have)
{
	char y[512];
	int err;

	if (!*tab)
		*tab = table_for(n);
	snprintf(y, sizeof(y),
		 "max_sources: %u\n"
		 "rules:\n"
		 "  - name: throttled\n"
		 "    match: {proto: udp}\n"
		 "    per_source: {rate: 1/h, burst: 1}\n"
		 "    on_full: closed\n",
		 *tab);
	err = fgi_open_ex(g, y, NULL, skip, 0, 0);
	if (err)
		return err;
	*have = fgi_prefill(g, 0, SRC_BASE, n);
	if (*have < 0) {
		fprintf(stderr, "fgbench: prefilling %u sources: %s\n", n, strerror((int)-*have));
		return (int)*have;
	}
	return 0;
}

/* Run this thread on one CPU only; says why not and returns 1 if it cannot. */
static int pin_to_cpu(unsigned long long cpu)
{
	cpu_set_t cs;

	CPU_ZERO(&cs);
	CPU_SET(cpu, &cs);
	if (sched_setaffinity(0, sizeof(cs), &cs)) {
		fprintf(stderr, "fgbench: pinning to CPU %llu: %s\n", cpu, strerror(errno));
		return 1;
	}
	return 0;
}

/* The kernel's accounting of a map (fdinfo memlock), 0 if unreadable. */
static unsigned long long map_memlock(int fd)
{
	unsigned long long memlock = 0;
	char path[64], line[256];
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	fp = fopen(path, "r");
	while (fp && fgets(line, sizeof(line), fp))
		sscanf(line, "memlock: %llu", &memlock);
	if (fp)
		fclose(fp);
	return memlock;
}

static int micro(void *cfg)
{
	const struct bench_opts *b = cfg;
	const char *policy = b->policy, *only = b->only;
	unsigned long cpu = b->cpu, passes = b->passes, repeat = b->repeat, maxsrc = b->maxsrc;
	struct bench_floor_bpf *bf = NULL;
	static struct fgi one, real, many[3], fleet, abl[5], deep[2], many_abl[2];
	/* 0: the clock ablation, by the test clock (fake_now, a .bss load) */
	static const __u32 abl_skip[5] = { FG_SKIP_NOCLOCK, FG_SKIP_LISTS, FG_SKIP_SCAN,
					   FG_SKIP_STATS, FG_SKIP_SRC };
	double last[S_N];
	const __u32 nsrc[3] = { 1000, 100000, 1000000 };
	__u32 deep_src = 0;
	struct scen sc[S_N];
	__u8 frame[64];
	int err = 0;

	if (!policy) {
		fprintf(stderr, "fgbench: micro: --policy FILE is required\n");
		return FG_EXIT_USAGE;
	}
	if (pin_to_cpu(cpu))
		return 1;

	bf = bench_floor_bpf__open_and_load();
	if (!bf) {
		fprintf(stderr, "fgbench: loading bench_floor: %s\n", strerror(errno));
		return 1;
	}
	if ((err = fgi_open(&one, pol_one, NULL)) || (err = fgi_open(&real, NULL, policy)) ||
	    (err = fgi_open(&fleet, pol_fleet, NULL)))
		goto out;
	{
		double ns;
		__u32 rv, dsrc = deep_source(&real.cfg);
		int ri;

		build_frame(frame, SRC_ONE, 9);
		run_once(real.prog, frame, 64, &ns, &rv, NULL);
		ri = real_rule(&real);
		if (ri < 0 || !dsrc) {
			fprintf(stderr,
				"fgbench: the realistic policy: no rule for its frame, or no "
				"prefix past /24 for the deep list case\n");
			err = -EINVAL;
			goto out;
		}
		for (int i = 0; i < 5 && !err; i++)
			err = fgi_open_ex(&abl[i], NULL, policy, abl_skip[i], (__u32)ri, 0);
		for (int i = 0; i < 2 && !err; i++)
			err = fgi_open_ex(&deep[i], NULL, policy, 0, 0, i);
		if (err)
			goto out;
		deep_src = dsrc;
	}
	if ((err = fgi_leases(&fleet))) {
		fprintf(stderr, "fgbench: writing the leases: %s\n", strerror(-err));
		goto out;
	}
	if ((err = fgi_at_cap(&one, SRC_ONE))) {
		fprintf(stderr, "fgbench: a source at its concurrency cap: %s\n", strerror(-err));
		goto out;
	}
	/* --only a single-source figure (profiling): no prefilled tables */
	int nmany = only && strncmp(only, "fg_src", 6) && strcmp(only, "fg_vary_1") &&
				    strcmp(only, "vary_floor") ?
			    0 :
			    3;

	for (int i = 0; i < nmany; i++) {
		__u32 n = i == 2 ? (__u32)maxsrc : nsrc[i], tab = 0;
		long have;

		if ((err = fgi_open_filled(&many[i], n, 0, &tab, &have)))
			goto out;
		printf("{\"kind\":\"prefill\",\"sources\":%u,\"table\":%u,\"entries\":%ld}\n", n,
		       tab, have);
	}

	for (int i = 0; i < 2 && nmany; i++) {
		__u32 tab = 0;
		long have;

		if ((err = fgi_open_filled(&many_abl[i], (__u32)maxsrc,
					   i ? FG_SKIP_SRC : FG_SKIP_STATS, &tab, &have)))
			goto out;
	}

	int bare = bpf_program__fd(bf->progs.bare_drop);
	int flr = bpf_program__fd(bf->progs.floor);
	int vry = bpf_program__fd(bf->progs.vary);

	sc[S_BARE] =
		(struct scen){ "bare_drop", "return XDP_DROP", bare, NULL, 0, -1, 9, 0, XDP_DROP };
	sc[S_FLOOR] =
		(struct scen){ "floor", "parse + per-CPU count + drop", flr, NULL, 0, -1, 9, 0,
			       XDP_DROP };
	sc[S_VFLOOR] = (struct scen){ "vary_floor",
				      "harness: random source + tail call, then floor",
				      vry,
				      NULL,
				      (__u32)maxsrc,
				      flr,
				      9,
				      0,
				      XDP_DROP };
	sc[S_ALLOW] = (struct scen){
		"fg_allowed", "floodgate, one source under its limit", one.prog, &one, 0, -1, 7, 0,
		XDP_PASS
	};
	sc[S_THROT] = (struct scen){
		"fg_throttled", "floodgate, one source over its limit", one.prog, &one, 0, -1, 9, 0,
		XDP_DROP
	};
	sc[S_SHADOW] =
		(struct scen){ "fg_shadow", "floodgate, throttled source, global shadow mode",
			       one.prog,    &one,
			       0,	    -1,
			       9,	    1,
			       XDP_PASS };
	sc[S_REAL] = (struct scen){ "fg_realistic",
				    "floodgate, throttled source, 16 rules + 10k allow + 10k deny",
				    real.prog,
				    &real,
				    0,
				    -1,
				    9,
				    0,
				    XDP_DROP };
	sc[S_V1] = (struct scen){ "fg_vary_1", "harness -> floodgate, 1 source (throttled)",
				  vry,	       &many[0],
				  1,	       many[0].prog,
				  9,	       0,
				  XDP_DROP };
	sc[S_1K] = (struct scen){
		"fg_src_1k", "harness -> floodgate, random of 1,000 throttled sources",
		vry,	     &many[0],
		nsrc[0],     many[0].prog,
		9,	     0,
		XDP_DROP
	};
	sc[S_100K] = (struct scen){ "fg_src_100k",
				    "harness -> floodgate, random of 100,000 throttled sources",
				    vry,
				    &many[1],
				    nsrc[1],
				    many[1].prog,
				    9,
				    0,
				    XDP_DROP };
	sc[S_1M] = (struct scen){ "fg_src_1m",
				  "harness -> floodgate, random of 1,000,000 throttled sources",
				  vry,
				  &many[2],
				  (__u32)maxsrc,
				  many[2].prog,
				  9,
				  0,
				  XDP_DROP };
	sc[S_AGG] = (struct scen){ "fg_aggregate",
				   "floodgate, one source admitted by per_source + local aggregate",
				   fleet.prog,
				   &fleet,
				   0,
				   -1,
				   11,
				   0,
				   XDP_PASS };
	sc[S_FLEET] = (struct scen){
		"fg_fleet", "floodgate, one source admitted by per_source + fleet lease",
		fleet.prog, &fleet,
		0,	    -1,
		12,	    0,
		XDP_PASS
	};
	sc[S_AGG_SPENT] = (struct scen){ "fg_aggregate_spent",
					 "floodgate, one source, local aggregate empty: dropped",
					 fleet.prog,
					 &fleet,
					 0,
					 -1,
					 13,
					 0,
					 XDP_DROP };
	sc[S_FLEET_SPENT] = (struct scen){ "fg_fleet_spent",
					   "floodgate, one source, fleet lease spent: dropped",
					   fleet.prog,
					   &fleet,
					   0,
					   -1,
					   14,
					   0,
					   XDP_DROP };
	sc[S_SYN_RATE] = (struct scen){ "fg_syn_throttled",
					"floodgate, a TCP SYN over its per-source rate",
					one.prog,
					&one,
					0,
					-1,
					22,
					0,
					XDP_DROP,
					1 };
	sc[S_SYN_CAP] = (struct scen){ "fg_syn_capped",
				       "floodgate, a TCP SYN from a source at its concurrency cap",
				       one.prog,
				       &one,
				       0,
				       -1,
				       80,
				       0,
				       XDP_DROP,
				       1 };
	sc[S_REAL_NOCLOCK] = (struct scen){ "fg_realistic_noclock",
					    "fg_realistic without its clock read (ablation)",
					    abl[0].prog,
					    &abl[0],
					    0,
					    -1,
					    9,
					    0,
					    XDP_DROP };
	sc[S_REAL_NOLISTS] = (struct scen){ "fg_realistic_nolists",
					    "fg_realistic without the list lookup (ablation)",
					    abl[1].prog,
					    &abl[1],
					    0,
					    -1,
					    9,
					    0,
					    XDP_DROP };
	sc[S_REAL_NOSCAN] =
		(struct scen){ "fg_realistic_noscan",
			       "fg_realistic without the rule scan: its rule given (ablation)",
			       abl[2].prog,
			       &abl[2],
			       0,
			       -1,
			       9,
			       0,
			       XDP_DROP };
	sc[S_REAL_NOSTATS] =
		(struct scen){ "fg_realistic_nostats",
			       "fg_realistic without the counters at the exit (ablation)",
			       abl[3].prog,
			       &abl[3],
			       0,
			       -1,
			       9,
			       0,
			       XDP_DROP };
	sc[S_REAL_NOSRC] =
		(struct scen){ "fg_realistic_nosrc",
			       "fg_realistic without its per-source bucket: passed (ablation)",
			       abl[4].prog,
			       &abl[4],
			       0,
			       -1,
			       9,
			       0,
			       XDP_PASS };
	sc[S_REAL_DEEP] = (struct scen){
		"fg_realistic_deep",
		"fg_realistic, a source whose list lookup reads all three DIR-16-8-8 levels",
		deep[0].prog,
		&deep[0],
		0,
		-1,
		9,
		0,
		XDP_DROP,
		0,
		deep_src
	};
	sc[S_REAL_DEEP_TRIE] = (struct scen){
		"fg_realistic_deep_trie",
		"fg_realistic_deep with the IPv4 lists from the LPM trie (the old walk)",
		deep[1].prog,
		&deep[1],
		0,
		-1,
		9,
		0,
		XDP_DROP,
		0,
		deep_src
	};
	sc[S_1M_NOSTATS] = (struct scen){ "fg_src_1m_nostats",
					  "fg_src_1m without the counters at the exit (ablation)",
					  vry,
					  &many_abl[0],
					  (__u32)maxsrc,
					  many_abl[0].prog,
					  9,
					  0,
					  XDP_DROP };
	sc[S_1M_NOSRC] =
		(struct scen){ "fg_src_1m_nosrc",
			       "fg_src_1m without the per-source bucket: passed (ablation)",
			       vry,
			       &many_abl[1],
			       (__u32)maxsrc,
			       many_abl[1].prog,
			       9,
			       0,
			       XDP_PASS };

	/* warm up the single-source buckets (burst spent) */
	for (int s = 0; s < S_N; s++) {
		double ns;
		__u32 rv;

		(sc[s].syn ? build_syn : build_frame)(frame,
						      sc[s].nsrc ? SRC_BASE :
						      sc[s].src	 ? sc[s].src :
								   SRC_ONE,
						      sc[s].dport);
		if (sc[s].g && !sc[s].nsrc)
			run_once(sc[s].prog, frame, 64, &ns, &rv, NULL);
	}
	__u64 ins0[3], pass0[3];

	for (int i = 0; i < nmany; i++)
		ins0[i] = fgi_missed(&many[i]), pass0[i] = fgi_sum(&many[i], -1, FG_OUT_PASS);

	for (unsigned long pass = 1; pass <= passes; pass++) {
		for (int s = 0; s < S_N; s++)
			last[s] = NAN;
		for (int s = 0; s < S_N; s++) {
			double slope, fixed;
			__u32 rv = 0, key = 0, kns;

			if (only && strcmp(only, sc[s].name))
				continue;
			if (sc[s].nsrc && !nmany)
				continue;

			(sc[s].syn ? build_syn : build_frame)(frame,
							      sc[s].nsrc ? SRC_BASE :
							      sc[s].src	 ? sc[s].src :
									   SRC_ONE,
							      sc[s].dport);
			if (sc[s].nsrc) {
				bf->data->vary_n = sc[s].nsrc;
				bf->data->vary_base = SRC_BASE;
				err = bpf_map_update_elem(bpf_map__fd(bf->maps.vary_jmp), &key,
							  &sc[s].jmp, 0);
				if (err) {
					err = -errno;
					fprintf(stderr, "fgbench: tail-call target for %s: %s\n",
						sc[s].name, strerror(-err));
					goto out;
				}
			}
			if (only && pass == 1) {
				/* for a profile by line (fgprof map --prog-id) */
				struct bpf_prog_info pi = {};
				__u32 pl = sizeof(pi);

				if (!bpf_obj_get_info_by_fd(sc[s].prog, &pi, &pl))
					fprintf(stderr, "fgbench: %s runs program id %u\n", only,
						pi.id);
			}
			if (sc[s].shadow)
				set_mode_ovr(&sc[s].g->maps, FG_OVR_SHADOW);
			err = measure(sc[s].prog, frame, (__u32)repeat, &slope, &fixed, &rv, &kns);
			if (sc[s].shadow)
				set_mode_ovr(&sc[s].g->maps, FG_OVR_NONE);
			if (err) {
				fprintf(stderr, "fgbench: test_run %s: %s\n", sc[s].name,
					strerror(-err));
				goto out;
			}
			printf("{\"kind\":\"micro\",\"name\":\"%s\",\"what\":\"%s\",\"pass\":%lu,"
			       "\"ns\":%.3f,\"kernel_ns\":%u,\"fixed_ms\":%.2f,\"retval\":%u,"
			       "\"expect\":%u}\n",
			       sc[s].name, sc[s].what, pass, slope, kns, fixed, rv, sc[s].expect);
			fflush(stdout);
			last[s] = kns;
		}
		for (size_t i = 0; i < sizeof(ratios) / sizeof(ratios[0]); i++)
			if (!isnan(last[ratios[i].num]) && !isnan(last[ratios[i].den]))
				printf("{\"kind\":\"ratio\",\"name\":\"%s\",\"num\":\"%s\",\"den\":\"%s\","
				       "\"by\":\"kernel_ns\",\"pass\":%lu,\"ratio\":%.4f}\n",
				       ratios[i].name, sc[ratios[i].num].name,
				       sc[ratios[i].den].name, pass,
				       last[ratios[i].num] / last[ratios[i].den]);
	}
	/* honesty checks: the realistic frame really took a limit rule's drop,
	 * and the N-source runs hit prefilled buckets (no inserts/overflow) */
	{
		int row, out;

		const char *rname = "_global";

		fgi_top_outcome(&real, &row, &out);
		for (__u32 i = 0; i < real.cfg.pol.nrules; i++)
			if (row >= 0 && real.cfg.pol.rules[i].id == row)
				rname = real.cfg.rules[i].name;
		printf("{\"kind\":\"check\",\"what\":\"realistic frame outcome\",\"row\":%d,"
		       "\"rule\":\"%s\",\"outcome\":\"%s\"}\n",
		       row, rname, out >= 0 ? fg_outcome_names[out] : "?");
		fleet_checks(&fleet);
		printf("{\"kind\":\"check\",\"what\":\"pending-handshake entries after the capped "
		       "SYNs (0: judged on the source's count entry)\",\"count\":%d}\n",
		       fgi_pending(&one));
		for (int i = 0; i < nmany; i++)
			printf("{\"kind\":\"check\",\"what\":\"frames without a prefilled bucket "
			       "during the %s-source runs\",\"count\":%llu,\"passed\":%llu}\n",
			       i == 2 ? "1M" :
			       i      ? "100k" :
					"1k",
			       (unsigned long long)(fgi_missed(&many[i]) - ins0[i]),
			       (unsigned long long)(fgi_sum(&many[i], -1, FG_OUT_PASS) - pass0[i]));
	}
out:
	fgi_close(&one);
	fgi_close(&real);
	fgi_close(&fleet);
	for (int i = 0; i < 3; i++)
		fgi_close(&many[i]);
	for (int i = 0; i < 5; i++)
		fgi_close(&abl[i]);
	for (int i = 0; i < 2; i++) {
		fgi_close(&deep[i]);
		fgi_close(&many_abl[i]);
	}
	bench_floor_bpf__destroy(bf);
	return err ? 1 : 0;
}

/* ---- sweep: cost curves against sources, rules and prefixes ----------------
 *
 * Each point is its own floodgate instance, measured P times back to back
 * with the floor (the same frame through bench_floor's floor program), so a
 * point's ratio compares two figures taken seconds apart on one CPU. One
 * JSON line per point and pass:
 *   {"kind":"curve","curve":C,"x":N,"pass":p,"ns":..,"floor_ns":..,"ratio":..}
 * "ns" is floodgate's ns per packet (slope, see measure); for the sources
 * curve, net of the vary harness (raw - (vary_floor - floor)), with raw and
 * harness given too. The limits come from include/floodgate.h (FG_MAX_RULES,
 * FG_MAX_PREFIXES), so the curves follow the data path as it grows.
 */

/* s as the body of a JSON string. */
static void json_str_body(const char *s)
{
	for (; *s; s++)
		printf(*s == '"' || *s == '\\'	? "\\%c" :
		       (unsigned char)*s < 0x20 ? " " :
						  "%c",
		       *s);
}

/* A YAML document built in memory (1M prefixes: ~25 MB). */
struct ybuf {
	char *s;
	size_t len;
	FILE *f;
};

static int ybuf_open(struct ybuf *y)
{
	memset(y, 0, sizeof(*y));
	y->f = open_memstream(&y->s, &y->len);
	return y->f ? 0 : -errno;
}

static int ybuf_close(struct ybuf *y)
{
	int err = ferror(y->f) ? -EIO : 0;

	if (fclose(y->f))
		err = -errno;
	y->f = NULL;
	return err;
}

static void ybuf_free(struct ybuf *y)
{
	if (y->f)
		fclose(y->f);
	free(y->s);
	memset(y, 0, sizeof(*y));
}

struct curve_ctx {
	const struct bench_opts *b;
	struct bench_floor_bpf *bf;
	__u32 repeat;
};

/* Point the vary harness at target (a program fd) for n sources. */
static int vary_to(struct bench_floor_bpf *bf, int target, __u32 n)
{
	__u32 key = 0;

	bf->data->vary_n = n;
	bf->data->vary_base = SRC_BASE;
	return bpf_map_update_elem(bpf_map__fd(bf->maps.vary_jmp), &key, &target, 0) ? -errno : 0;
}

/* One measurement of prog on frame; the verdict must be expect (-1: any). */
static int measure_as(int prog, const __u8 *frame, __u32 R, long expect, const char *what,
		      double *ns, __u32 *kns)
{
	double fixed;
	__u32 rv;
	int err = measure(prog, frame, R, ns, &fixed, &rv, kns);

	if (err) {
		fprintf(stderr, "fgbench: test_run %s: %s\n", what, strerror(-err));
		return err;
	}
	if (expect >= 0 && rv != (__u32)expect) {
		fprintf(stderr, "fgbench: %s: verdict %u, expected %ld\n", what, rv, expect);
		return -EPROTO;
	}
	return 0;
}

/* ns, floor_ns: the slopes; kns, floor_kns: the kernel's means (see
 * measure), which leave out the time this task was scheduled out. */
static void curve_print(const char *curve, __u64 x, unsigned long pass, double ns, double kns,
			double floor_ns, double floor_kns, const char *extra)
{
	printf("{\"kind\":\"curve\",\"curve\":\"%s\",\"x\":%llu,\"pass\":%lu,\"ns\":%.3f,"
	       "\"kernel_ns\":%.1f,\"floor_ns\":%.3f,\"floor_kernel_ns\":%.1f,\"ratio\":%.4f,"
	       "\"kernel_ratio\":%.4f%s}\n",
	       curve, (unsigned long long)x, pass, ns, kns, floor_ns, floor_kns,
	       floor_ns > 0 ? ns / floor_ns : 0.0, floor_kns > 0 ? kns / floor_kns : 0.0,
	       extra ? extra : "");
	fflush(stdout);
}

/* floodgate on frame, then the floor on the same frame, P passes. */
static int curve_pair(struct curve_ctx *c, const char *curve, __u64 x, int prog, const __u8 *frame,
		      long expect, const char *extra)
{
	int flr = bpf_program__fd(c->bf->progs.floor);
	double ns, fns;
	__u32 kns, fk;
	int err;

	for (unsigned long pass = 1; pass <= c->b->passes; pass++) {
		if ((err = measure_as(prog, frame, c->repeat, expect, curve, &ns, &kns)) ||
		    (err = measure_as(flr, frame, c->repeat, XDP_DROP, "floor", &fns, &fk)))
			return err;
		curve_print(curve, x, pass, ns, kns, fns, fk, extra);
	}
	return 0;
}

/*
 * This machine's latency of one random read in bytes of memory, with no BPF
 * in the way: a pointer chase (each read's address is the previous read's
 * value) through every cache line of a buffer that size in one random cycle
 * (Sattolo's shuffle), ns per read, or a negative errno. The least any
 * table of that size costs per lookup here, before any work.
 */
static double chase_ns(size_t bytes)
{
	size_t lines = bytes / 64, steps = 1u << 21;
	__u64 *buf = NULL, x = 0x2545f4914f6cdd1dull, t0;
	__u32 *perm;
	size_t at = 0;

	if (lines < 2)
		return -EINVAL;
	perm = malloc(lines * sizeof(*perm));
	if (!perm || posix_memalign((void **)&buf, 4096, lines * 64)) {
		free(perm);
		return -ENOMEM;
	}
	for (size_t i = 0; i < lines; i++)
		perm[i] = (__u32)i;
	for (size_t i = lines - 1; i > 0; i--) { /* Sattolo: one cycle through all */
		size_t j;
		__u32 tmp;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = x % i;
		tmp = perm[i];
		perm[i] = perm[j];
		perm[j] = tmp;
	}
	for (size_t i = 0; i < lines; i++)
		buf[(size_t)perm[i] * 8] = (size_t)perm[(i + 1) % lines] * 8;
	free(perm);
	for (size_t i = 0; i < steps / 8; i++) /* warm: the first reads fault nothing */
		at = buf[at];
	t0 = now_ns();
	for (size_t i = 0; i < steps; i++)
		at = *(volatile __u64 *)&buf[at];
	t0 = now_ns() - t0;
	free(buf);
	return at == (size_t)-1 ? -EIO : (double)t0 / steps;
}

/*
 * Sources: n throttled sources prefilled, a random one per packet. Next to
 * it, memfloor through the same harness (net of it, as ns is) over
 * floodgate's own fg_src4, its sets' pages (mem_ns): the floor plus the
 * random read of a set that this table costs here. ns - mem_ns is
 * floodgate's own cost above that read ("above_mem_ns"). Also, memfloor
 * over a table of as many sets of its own, allocated when fgbench started
 * (mem_own_ns), and chase_ns, the latency of one random read in as much
 * userspace memory (a pointer chase, no BPF).
 *
 * Why the floor reads floodgate's table: on this VM two tables of the same
 * size, read by the same memfloor, differed by 40-70 ns a random read
 * (results/README-bench.md, "memfloor"); the pages a table got, not the
 * code reading it, set that difference. On the same pages, floor and
 * floodgate differ by code alone.
 */
static int curve_sources_point(struct curve_ctx *c, __u32 n)
{
	int flr = bpf_program__fd(c->bf->progs.floor), vry = bpf_program__fd(c->bf->progs.vary);
	int mfl = bpf_program__fd(c->bf->progs.memfloor), mft;
	struct bench_floor_bpf *mf = NULL;
	static struct fgi g;
	char extra[400];
	__u8 frame[64];
	__u32 tab = (__u32)c->b->table, bits = 0;
	long have;
	int err;

	if ((err = fgi_open_filled(&g, n, 0, &tab, &have)))
		goto out;
	while ((1u << bits) < tab / FG_WAYS4)
		bits++;
	c->bf->bss->mem_bits = bits;
	/* memfloor again, its table fg_src4 itself (the map shared, not copied:
	 * memfloor only reads it, at its own seed's sets) */
	mf = bench_floor_bpf__open();
	if (!mf || bpf_map__reuse_fd(mf->maps.mem_sets, bpf_map__fd(g.skel->maps.fg_src4)) ||
	    bench_floor_bpf__load(mf)) {
		err = -errno;
		fprintf(stderr, "fgbench: memfloor over fg_src4 at %u sources: %s\n", n,
			strerror(-err));
		goto out;
	}
	mf->bss->mem_bits = bits;
	mft = bpf_program__fd(mf->progs.memfloor);
	double chase = chase_ns((size_t)(tab / FG_WAYS4) * sizeof(struct fg_set4));

	if (chase < 0) {
		err = (int)chase;
		fprintf(stderr, "fgbench: the memory latency at %u sources: %s\n", n,
			strerror(-err));
		goto out;
	}
	printf("{\"kind\":\"prefill\",\"curve\":\"sources\",\"sources\":%u,\"table\":%u,"
	       "\"entries\":%ld}\n",
	       n, tab, have);
	__u64 ins0 = fgi_missed(&g);

	build_frame(frame, SRC_BASE, 9);
	/* every frame dropped: by its throttled bucket or, a source its full
	 * set left out of the prefill, by on_full: closed (counted below) */
	for (unsigned long pass = 1; pass <= c->b->passes; pass++) {
		double raw, vfl, fns, mraw, oraw;
		__u32 kraw, kv, kf, km, ko;

		if ((err = vary_to(c->bf, g.prog, n)) ||
		    (err = measure_as(vry, frame, c->repeat, XDP_DROP, "sources", &raw, &kraw)) ||
		    (err = vary_to(c->bf, mft, n)) ||
		    (err = measure_as(vry, frame, c->repeat, XDP_DROP, "memfloor", &mraw, &km)) ||
		    (err = vary_to(c->bf, mfl, n)) ||
		    (err = measure_as(vry, frame, c->repeat, XDP_DROP, "memfloor_own", &oraw,
				      &ko)) ||
		    (err = vary_to(c->bf, flr, n)) ||
		    (err = measure_as(vry, frame, c->repeat, XDP_DROP, "vary_floor", &vfl, &kv)) ||
		    (err = measure_as(flr, frame, c->repeat, XDP_DROP, "floor", &fns, &kf)))
			goto out;
		snprintf(extra, sizeof(extra),
			 ",\"raw_ns\":%.3f,\"harness_ns\":%.3f,"
			 "\"harness_kernel_ns\":%.1f,\"table\":%u,\"mem_ns\":%.3f,"
			 "\"mem_kernel_ns\":%.1f,\"above_mem_ns\":%.3f,\"chase_ns\":%.1f,"
			 "\"mem_own_ns\":%.3f,\"mem_own_kernel_ns\":%.1f",
			 raw, vfl - fns, (double)kv - kf, tab, mraw - (vfl - fns),
			 (double)km - ((double)kv - kf), raw - mraw, chase, oraw - (vfl - fns),
			 (double)ko - ((double)kv - kf));
		/* a fixed table (--table) is curve "tables": its points are not the
		 * sources curve's, which sizes the table to each point */
		curve_print(c->b->table ? "tables" : "sources", n, pass, raw - (vfl - fns),
			    (double)kraw - ((double)kv - kf), fns, kf, extra);
	}
	/* honesty: every packet hit a prefilled bucket (the table held them all) */
	printf("{\"kind\":\"check\",\"what\":\"frames without a prefilled bucket during the "
	       "%u-source curve point\",\"count\":%llu}\n",
	       n, (unsigned long long)(fgi_missed(&g) - ins0));
out:
	bench_floor_bpf__destroy(mf);
	fgi_close(&g);
	return err;
}

/* Rules: n rules, the frame's rule last. The others are a typical mix that
 * a UDP frame to port 9 must look past: UDP on other ports and port ranges,
 * UDP by source port, and TCP (another class, never scanned for UDP). */
static int rules_yaml(struct ybuf *y, __u32 n)
{
	int err = ybuf_open(y);

	if (err)
		return err;
	fprintf(y->f, "max_sources: 65536\nrules:\n");
	for (__u32 i = 0; i + 1 < n; i++) {
		switch (i % 4) {
		case 0:
			fprintf(y->f,
				"  - {name: udp%u, match: {proto: udp, dport: %u}, "
				"per_source: {rate: 100/s, burst: 200}}\n",
				i, 1000 + i);
			break;
		case 1:
			fprintf(y->f,
				"  - {name: range%u, match: {proto: udp, dport: %u-%u}, "
				"per_source: {rate: 100/s, burst: 200}}\n",
				i, 20000 + 10 * i, 20009 + 10 * i);
			break;
		case 2:
			fprintf(y->f,
				"  - {name: sport%u, match: {proto: udp, sport: %u}, "
				"per_source: {rate: 100/s, burst: 200}}\n",
				i, 3000 + i);
			break;
		default:
			fprintf(y->f,
				"  - {name: tcp%u, match: {proto: tcp, dport: %u}, "
				"per_source: {rate: 100/s, burst: 200}}\n",
				i, 1000 + i);
		}
	}
	fprintf(y->f, "  - {name: throttled, match: {proto: udp, dport: 9}, "
		      "per_source: {rate: 1/s, burst: 1}}\n");
	return ybuf_close(y);
}

/* The most rules of rules_yaml's mix the policy compiler accepts (at most
 * FG_MAX_RULES), and the compiler's reason for one more. */
static __u32 rules_max(char *why)
{
	why[0] = 0;
	for (__u32 n = FG_MAX_RULES; n >= 1; n--) {
		struct fg_config cfg = {};
		struct fg_err e = {};
		struct ybuf y;
		int err = rules_yaml(&y, n);

		if (!err)
			err = fg_config_parse(y.s, y.len, "<fgbench>", &cfg, &e);
		if (!err) {
			fg_config_free(&cfg);
			ybuf_free(&y);
			return n;
		}
		if (!why[0])
			fg_err_format(&e, why, FG_WHY_LEN);
		ybuf_free(&y);
	}
	return 0;
}

static int curve_rules_point(struct curve_ctx *c, __u32 n)
{
	static struct fgi g;
	struct ybuf y;
	__u8 frame[64];
	double ns;
	__u32 rv;
	int err;

	if ((err = rules_yaml(&y, n)) || (err = fgi_open(&g, y.s, NULL)))
		goto out;
	build_frame(frame, SRC_ONE, 9);
	run_once(g.prog, frame, 64, &ns, &rv, NULL); /* spend the burst */
	err = curve_pair(c, "rules", n, g.prog, frame, XDP_DROP, NULL);
	if (!err) {
		int row, o;

		fgi_top_outcome(&g, &row, &o);
		printf("{\"kind\":\"check\",\"what\":\"rules curve: the frame's rule dropped it\","
		       "\"rules\":%u,\"row\":%d,\"want_row\":%d,\"outcome\":\"%s\"}\n",
		       n, row, fgi_row(&g, "throttled"), o >= 0 ? fg_outcome_names[o] : "?");
	}
out:
	fgi_close(&g);
	ybuf_free(&y);
	return err;
}

/* Prefixes: n allow + deny prefixes, half each, /16../32 spread over the
 * IPv4 space (not 10/8 or 127/8), and eight /24s inside 10.1.0.0/16 that
 * do not cover the frame's source 10.1.2.3: its /16 holds longer prefixes,
 * so the list lookup takes its slowest path at every point (today: the /16
 * directory says "ask the trie"). The source matches no list and its rule
 * drops it. */
static int curve_prefixes_point(struct curve_ctx *c, __u32 n)
{
	static struct fgi g;
	struct ybuf y;
	__u8 frame[64];
	__u64 s = 42;
	int err;

	if ((err = ybuf_open(&y)))
		return err;
	fprintf(y.f, "max_sources: 65536\n");
	/* flow sequences, canonical prefixes, "," between them: a million
	 * prefixes then fit the compiler's 16 MiB file limit */
	for (int l = 0; l < 2 && n; l++) {
		__u32 want = l ? n - n / 2 : n / 2, i = 0;

		fprintf(y.f, "%s: [", l ? "deny" : "allow");
		for (; i < want && i < 4; i++) /* 4 per list in 10.1/16, beside 10.1.2.0/24 */
			fprintf(y.f, "%s10.1.%u.0/24", i ? "," : "", 100 + 4 * l + i);
		while (i < want) {
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			__u32 r = (__u32)(s >> 32), a = 1 + r % 223, plen = 16 + (r >> 8) % 17;

			if (a == 10 || a == 127)
				continue;
			s = s * 6364136223846793005ull + 1442695040888963407ull;
			__u32 v = (a << 24 | (__u32)(s >> 40)) &
				  (plen == 32 ? ~0u : ~(~0u >> plen));
			fprintf(y.f, "%s%u.%u.%u.%u/%u", i ? "," : "", v >> 24, (v >> 16) & 0xff,
				(v >> 8) & 0xff, v & 0xff, plen);
			i++;
		}
		fprintf(y.f, "]\n");
	}
	fprintf(y.f, "rules:\n  - {name: throttled, match: {proto: udp, dport: 9}, "
		     "per_source: {rate: 1/s, burst: 1}}\n");
	if ((err = ybuf_close(&y)) || (err = fgi_open(&g, y.s, NULL)))
		goto out;
	double ns;
	__u32 rv;

	build_frame(frame, SRC_ONE, 9);
	run_once(g.prog, frame, 64, &ns, &rv, NULL);
	err = curve_pair(c, "prefixes", n, g.prog, frame, XDP_DROP, NULL);
out:
	fgi_close(&g);
	ybuf_free(&y);
	return err;
}

/* Shedding (issue 11): one source admitted by a plain rule, by the same
 * rule drawing from a pool, and by a bulk-tier rule while the shedder sheds
 * 0% and 50% of its tier; each next to the floor. The shed fractions are
 * written into fg_shed as floodgated writes them (an hour ahead). */
static const char *pol_shed =
	"max_sources: 65536\n"
	"pools:\n"
	"  - {name: big, rate: 1000000000/s, burst: 1000000000, reserve: 20%}\n"
	"rules:\n"
	"  - {name: plain, match: {proto: udp, dport: 21}, per_source: " HUGE_LIMIT "}\n"
	"  - {name: pooled, match: {proto: udp, dport: 22}, per_source: " HUGE_LIMIT
	", pool: big}\n"
	"  - {name: tier, match: {proto: udp, dport: 23}, per_source: " HUGE_LIMIT
	", tier: bulk}\n";

static int shed_set(struct fgi *g, __u32 thr)
{
	struct fg_shed_ctl *sh;

	sh = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ | PROT_WRITE, MAP_SHARED,
		  g->maps.fd[FGM_SHED], 0);
	if (sh == MAP_FAILED)
		return -errno;
	for (int t = 0; t < FG_NTIERS; t++)
		for (int k = 0; k < FG_SHED_NKIND; k++)
			sh->thr[t][k] = t == FG_TIER_CRITICAL ? 0 : thr;
	sh->hshift = FG_SHED_HSHIFT_MIN;
	sh->end = now_ns() + 3600 * NSEC;
	munmap(sh, sysconf(_SC_PAGESIZE));
	return 0;
}

static int curve_shed(struct curve_ctx *c)
{
	static const struct {
		const char *name;
		__u16 dport;
		__u32 thr;
		long expect;
	} pt[] = {
		{ "plain", 21, 0, XDP_PASS },
		{ "pooled", 22, 0, XDP_PASS },
		{ "tier_shed_0", 23, 0, XDP_PASS },
		{ "tier_shed_50", 23, FG_SHED_ONE / 2, -1 },
	};
	static struct fgi g;
	struct fg_stats rows[FG_NROWS];
	char extra[64];
	__u8 frame[64];
	int err, row;

	if ((err = fgi_open(&g, pol_shed, NULL)))
		goto out;
	for (size_t i = 0; i < sizeof(pt) / sizeof(pt[0]); i++) {
		struct fg_stats before[FG_NROWS];

		if ((err = shed_set(&g, pt[i].thr)) || (err = fg_stats_read(&g.maps, before)))
			goto out;
		build_frame(frame, SRC_ONE, pt[i].dport);
		snprintf(extra, sizeof(extra), ",\"name\":\"%s\"", pt[i].name);
		if ((err = curve_pair(c, "shed", i, g.prog, frame, pt[i].expect, extra)))
			goto out;
		/* honesty: the shed share really is what was asked */
		row = fgi_row(&g, pt[i].dport == 21 ? "plain" :
				  pt[i].dport == 22 ? "pooled" :
						      "tier");
		if ((err = fg_stats_read(&g.maps, rows)) || row < 0)
			goto out;
		__u64 sh = rows[row].pkts[FG_OUT_SHED] - before[row].pkts[FG_OUT_SHED];
		__u64 pa = rows[row].pkts[FG_OUT_PASS] - before[row].pkts[FG_OUT_PASS];
		printf("{\"kind\":\"check\",\"what\":\"shed share of %s\",\"asked\":%.3f,"
		       "\"shed\":%llu,\"passed\":%llu,\"share\":%.4f}\n",
		       pt[i].name, (double)pt[i].thr / FG_SHED_ONE, (unsigned long long)sh,
		       (unsigned long long)pa, sh + pa ? (double)sh / (sh + pa) : 0.0);
	}
out:
	fgi_close(&g);
	return err;
}

static int sweep(void *cfg)
{
	const struct bench_opts *b = cfg;
	static const __u32 src_pts[] = { 1, 1000, 10000, 100000, 1000000, 4000000 };
	static const __u32 rule_pts[] = { 1, 4, 16, 64, 256, 1024 };
	static const __u32 pfx_pts[] = { 0, 1000, 10000, 100000, 1000000 };
	struct curve_ctx c = { .b = b, .repeat = (__u32)b->repeat };
	const char *want = b->curve ? b->curve : "all";
	__u32 maxsrc = b->quick ? 100000 : UINT32_MAX, maxpfx = b->quick ? 10000 : UINT32_MAX;
	static __u32 one_pt[1];
	const __u32 *spts = src_pts;
	size_t nspts = sizeof(src_pts) / sizeof(src_pts[0]);

	if (b->point) {
		one_pt[0] = (__u32)b->point;
		spts = one_pt;
		nspts = 1;
	}
	bool all = !strcmp(want, "all");
	int err = 0;

	if (!all && strcmp(want, "sources") && strcmp(want, "rules") && strcmp(want, "prefixes") &&
	    strcmp(want, "shed")) {
		fprintf(stderr,
			"fgbench: sweep: --curve sources|rules|prefixes|shed|all, not \"%s\"\n",
			want);
		return FG_EXIT_USAGE;
	}
	if (pin_to_cpu(b->cpu))
		return 1;
	/* memfloor's table: as many sets as the largest sources point's */
	__u32 msets = 1;

	for (size_t i = 0; (all || !strcmp(want, "sources")) && i < nspts; i++)
		if (spts[i] <= maxsrc && table_for(spts[i]) / FG_WAYS4 > msets)
			msets = table_for(spts[i]) / FG_WAYS4;
	if (b->table && b->table / FG_WAYS4 > msets)
		msets = (__u32)(b->table / FG_WAYS4);
	c.bf = bench_floor_bpf__open();
	if (!c.bf || bpf_map__set_max_entries(c.bf->maps.mem_sets, msets) ||
	    bench_floor_bpf__load(c.bf)) {
		fprintf(stderr, "fgbench: loading bench_floor: %s\n", strerror(errno));
		bench_floor_bpf__destroy(c.bf);
		return 1;
	}
	char why[FG_WHY_LEN];
	__u32 rmax = rules_max(why);

	printf("{\"kind\":\"limits\",\"max_rules\":%u,\"rules_accepted\":%u,\"max_prefixes\":%u,"
	       "\"max_sources\":%u,\"one_more_rule\":\"",
	       FG_MAX_RULES, rmax, FG_MAX_PREFIXES, FG_MAX_SOURCES_BENCH);
	json_str_body(why);
	printf("\"}\n");
	for (size_t i = 0; !err && (all || !strcmp(want, "sources")) && i < nspts; i++)
		if (spts[i] <= maxsrc)
			err = curve_sources_point(&c, spts[i]);
	/* rules: the points below the most the compiler takes, then that */
	for (size_t i = 0;
	     !err && (all || !strcmp(want, "rules")) && i < sizeof(rule_pts) / sizeof(rule_pts[0]);
	     i++)
		if (rule_pts[i] < rmax)
			err = curve_rules_point(&c, rule_pts[i]);
	if (!err && rmax && (all || !strcmp(want, "rules")))
		err = curve_rules_point(&c, rmax);
	for (size_t i = 0;
	     !err && (all || !strcmp(want, "prefixes")) && i < sizeof(pfx_pts) / sizeof(pfx_pts[0]);
	     i++)
		if (pfx_pts[i] <= maxpfx)
			err = curve_prefixes_point(
				&c, pfx_pts[i] < FG_MAX_PREFIXES ? pfx_pts[i] : FG_MAX_PREFIXES);
	if (!err && (all || !strcmp(want, "shed")))
		err = curve_shed(&c);
	bench_floor_bpf__destroy(c.bf);
	return err ? 1 : 0;
}

/* ---- fill: tracked sources for the daemon CPU curve --------------------------
 *
 * fgbench fill --pin-dir DIR -i DEV --family 4|6 [--sources N] [--tracked T] [--start S]
 * sends one UDP frame from each of N new sources (S .. S+N-1) through the
 * program floodgated attached to DEV (found by its pinned link), by
 * BPF_PROG_TEST_RUN with repeat 1 (no dispatcher swap, so ~1 us a frame),
 * then (--tracked) more new ones until the family's table holds T; prints
 * the tracked sources of both tables, their map memory, the index after the
 * last source sent (next) and the new-key events the frames caused: a
 * source refused by the admission limit or finding no way is not tracked.
 */

/* A 64-byte Ethernet/IPv6/UDP frame from 2001:db8:II:II::1 (i in the top
 * 64 bits, as a /64 bucket keys it) to 2001:db8::2, port 9. */
static void build_frame6(__u8 *f, __u32 i)
{
	__u8 *ip = f + 14, *udp = ip + 40;

	build_eth(f, 0x86dd);
	ip[0] = 0x60;
	ip[5] = 10; /* payload: 64 - 14 - 40 */
	ip[6] = 17;
	ip[7] = 64;
	put_be32(ip + 8, 0x20010db8);
	put_be32(ip + 12, i);
	ip[23] = 1;
	put_be32(ip + 24, 0x20010db8);
	ip[39] = 2;
	put_be16(udp, 40000);
	put_be16(udp + 2, 9);
	put_be16(udp + 4, 10);
}

/* The program behind DIR/link_DEV. */
static int pinned_prog(const char *dir, const char *ifname)
{
	char path[512];
	int lfd, fd;

	snprintf(path, sizeof(path), "%s/%s%s", dir, FG_LINK_PREFIX, ifname);
	lfd = bpf_obj_get(path);
	if (lfd < 0)
		return -errno;
	fd = fg_link_prog_fd(lfd);
	close(lfd);
	return fd;
}

/* One frame from each of the sources from .. from + n - 1 of family fam. */
static int fill_send(int prog, __u64 fam, __u64 from, __u64 n)
{
	__u8 frame[64];

	for (__u64 i = from; i < from + n; i++) {
		double ns;
		__u32 rv;
		int err;

		if (fam == 4)
			build_frame(frame, SRC_FILL4 + (__u32)i, 9);
		else
			build_frame6(frame, (__u32)i);
		if ((err = run_once(prog, frame, 1, &ns, &rv, NULL)))
			return err;
	}
	return 0;
}

/* The new-key events of every row: inserted, refused by admission, no way. */
static int fill_events(struct fg_maps *m, __u64 ev[3])
{
	static const int which[3] = { FG_EV_INSERT, FG_EV_INSERT_LIMITED, FG_EV_INSERT_FAIL };
	int err = 0;

	for (int i = 0; i < 3 && !err; i++)
		err = stats_sum(m, which[i], 0, &ev[i]);
	return err;
}

#define FILL_ROUNDS 8 /* --tracked: rounds of new sources at the most */

/* --sources N new sources, then (--tracked T) as many more as the family's
 * table is short of T, until it holds T or FILL_ROUNDS rounds were sent:
 * a source can take the way of an older, full one, so N new sources need
 * not add N tracked. The table's own count decides, not the number sent. */
static int fill(void *cfg)
{
	const struct bench_opts *b = cfg;
	struct fg_maps m = { .dirfd = -1 };
	char why[FG_WHY_LEN] = "";
	size_t n4 = 0, n6 = 0, have;
	__u64 t0, send_ns = 0, next = b->start, want = b->sources, ev0[3], ev1[3];
	int prog, err, round = 0;

	if (!b->pin_dir || !b->ifname || (b->family != 4 && b->family != 6) ||
	    (!b->sources && !b->tracked)) {
		fprintf(stderr, "fgbench: fill: needs --pin-dir DIR, -i DEV, --family 4|6 and "
				"--sources N or --tracked T\n");
		return FG_EXIT_USAGE;
	}
	prog = pinned_prog(b->pin_dir, b->ifname);
	if (prog < 0) {
		fprintf(stderr, "fgbench: fill: the program on %s (%s/%s%s): %s\n", b->ifname,
			b->pin_dir, FG_LINK_PREFIX, b->ifname, strerror(-prog));
		return 1;
	}
	err = fg_maps_open(&m, b->pin_dir, why);
	if (!err)
		err = fill_events(&m, ev0);
	if (!err)
		err = fg_sources_count(&m, &n4, &n6);
	have = b->family == 4 ? n4 : n6;
	if (!err && !want)
		want = b->tracked > have ? b->tracked - have : 0;
	while (!err && want) {
		t0 = now_ns();
		if ((err = fill_send(prog, b->family, next, want))) {
			fprintf(stderr, "fgbench: fill: test_run: %s\n", strerror(-err));
			break;
		}
		send_ns += now_ns() - t0;
		next += want;
		round++;
		if ((err = fg_sources_count(&m, &n4, &n6)))
			break;
		have = b->family == 4 ? n4 : n6;
		want = have < b->tracked && round < FILL_ROUNDS ? b->tracked - have : 0;
		if (next + want > UINT32_MAX)
			want = next < UINT32_MAX ? UINT32_MAX - next : 0;
	}
	close(prog);
	if (!err)
		err = fill_events(&m, ev1);
	if (err) {
		fprintf(stderr, "fgbench: fill: the sources of %s: %s\n", b->pin_dir,
			why[0] ? why : strerror(-err));
		fg_maps_close(&m);
		return 1;
	}
	printf("{\"kind\":\"fill\",\"family\":%llu,\"sent\":%llu,\"next\":%llu,\"rounds\":%d,"
	       "\"ms\":%.1f,\"tracked4\":%zu,\"tracked6\":%zu,\"memlock4\":%llu,\"memlock6\":%llu,"
	       "\"inserted\":%llu,\"insert_limited\":%llu,\"insert_fail\":%llu}\n",
	       (unsigned long long)b->family, (unsigned long long)(next - b->start),
	       (unsigned long long)next, round, send_ns / 1e6, n4, n6, map_memlock(m.fd[FGM_SRC4]),
	       map_memlock(m.fd[FGM_SRC6]), (unsigned long long)(ev1[0] - ev0[0]),
	       (unsigned long long)(ev1[1] - ev0[1]), (unsigned long long)(ev1[2] - ev0[2]));
	fg_maps_close(&m);
	return 0;
}

/* ---- micro6: the IPv6 source table ------------------------------------------
 *
 * fgbench micro6 [--sources N] [--max-sources M] [options]: one instance
 * (max_sources M, one throttled UDP rule grouping by /64), its fg_src6
 * filled with N throttled /64s by the program itself (vary6 in sequential
 * mode: one BPF_PROG_TEST_RUN of N repeats sends each source once), then ns
 * per packet for a random source of 1 and of N through vary6, net of the
 * harness (vary6 -> floor minus floor), as the slope of measure() and by the
 * kernel's own mean (kernel_ns, net the same way). Also the map memory per
 * tracked source (fdinfo memlock) and the time of one walk over the source
 * tables (fg_sources_count, as `status` reads them). Filling through the
 * program, not by writing the map, keeps the figures independent of
 * fg_src6's layout: the same command measures another build of the program.
 */

#define MICRO6_SOURCES	   1000000
#define MICRO6_MAX_SOURCES (1u << 21)

/* Point vary6 at target (a program fd) for n sources, in turn (seq) or at random. */
static int vary6_to(struct bench_floor_bpf *bf, int target, __u32 n, __u32 seq)
{
	__u32 key = 0;

	bf->data->vary6_n = n;
	bf->bss->vary6_seq = seq;
	bf->bss->vary6_next = 0;
	return bpf_map_update_elem(bpf_map__fd(bf->maps.vary_jmp), &key, &target, 0) ? -errno : 0;
}

/* Every source once, in turn (its one token spent: throttled); then the
 * mem6 line: the table's memory per tracked source, the fill and one walk. */
static int micro6_fill(struct fgi *g, struct bench_floor_bpf *bf, const __u8 *frame, __u64 sources,
		       __u64 max_sources)
{
	int vary6 = bpf_program__fd(bf->progs.vary6);
	size_t n4 = 0, n6 = 0;
	__u64 t0;
	double ns, walk_ms;
	unsigned long long ml;
	__u32 rv;
	int err;

	err = vary6_to(bf, g->prog, (__u32)sources, 1);
	if (!err)
		err = run_once(vary6, frame, (__u32)sources, &ns, &rv, NULL);
	/* what `status` and the daemon's walk pay: one count of both tables */
	t0 = now_ns();
	if (!err)
		err = fg_sources_count(&g->maps, &n4, &n6);
	if (err)
		return err;
	walk_ms = (double)(now_ns() - t0) / 1e6;
	ml = map_memlock(g->maps.fd[FGM_SRC6]);
	printf("{\"kind\":\"mem6\",\"max_sources\":%llu,\"sources\":%llu,\"tracked\":%zu,"
	       "\"memlock\":%llu,\"bytes_per_tracked\":%.2f,\"fill_ns\":%.1f,\"walk_ms\":%.1f}\n",
	       (unsigned long long)max_sources, (unsigned long long)sources, n6, ml,
	       n6 ? (double)ml / n6 : 0.0, ns / sources, walk_ms);
	return 0;
}

/* One pass: the harness's own cost, then fg6_src_1 and fg6_src_n net of it. */
static int micro6_pass(struct fgi *g, struct bench_floor_bpf *bf, const __u8 *frame, __u64 pass,
		       __u64 sources, __u32 R)
{
	static const struct {
		const char *name;
		int one;
	} fig[] = {
		{ "fg6_src_1", 1 },
		{ "fg6_src_n", 0 },
	};
	int vary6 = bpf_program__fd(bf->progs.vary6), flr = bpf_program__fd(bf->progs.floor);
	double harness = 0, floor_ns = 0, raw, fixed;
	__u32 kh, kf, kr, rv;
	int err;

	/* the harness's own cost: vary6 -> floor, less floor alone */
	err = vary6_to(bf, flr, (__u32)sources, 0);
	if (!err)
		err = measure(vary6, frame, R, &harness, &fixed, &rv, &kh);
	if (!err)
		err = measure(flr, frame, R, &floor_ns, &fixed, &rv, &kf);
	if (err)
		return err;
	harness -= floor_ns;
	for (size_t f = 0; f < sizeof(fig) / sizeof(fig[0]); f++) {
		err = vary6_to(bf, g->prog, fig[f].one ? 1 : (__u32)sources, 0);
		if (!err)
			err = measure(vary6, frame, R, &raw, &fixed, &rv, &kr);
		if (err)
			return err;
		printf("{\"kind\":\"micro6\",\"name\":\"%s\",\"pass\":%llu,\"sources\":%llu,"
		       "\"ns_raw\":%.2f,\"ns\":%.2f,\"floor_ns\":%.2f,\"kernel_ns\":%d,"
		       "\"kernel_floor_ns\":%u,\"retval\":%u}\n",
		       fig[f].name, (unsigned long long)pass,
		       fig[f].one ? 1ull : (unsigned long long)sources, raw, raw - harness,
		       floor_ns, (int)kr - ((int)kh - (int)kf), kf, rv);
		fflush(stdout);
	}
	return 0;
}

static int micro6(void *cfg)
{
	const struct bench_opts *b = cfg;
	__u64 sources = b->sources ? b->sources : MICRO6_SOURCES;
	__u64 max_sources = b->max_sources ? b->max_sources : MICRO6_MAX_SOURCES;
	struct bench_floor_bpf *bf = NULL;
	struct fgi g;
	char yaml[512];
	__u8 frame[64];
	int err;

	if (pin_to_cpu(b->cpu))
		return 1;
	/* admission wide open: the fill is a burst of N new sources */
	snprintf(yaml, sizeof(yaml),
		 "max_sources: %llu\n"
		 "admission: {rate: 1000000000/s, burst: 100000000}\n"
		 "rules:\n"
		 "  - name: throttled\n"
		 "    match: {proto: udp}\n"
		 "    per_source: {rate: 1/h, burst: 1, prefix_v6: 64}\n",
		 (unsigned long long)max_sources);
	err = fgi_open(&g, yaml, NULL);
	if (err)
		goto out;
	bf = bench_floor_bpf__open_and_load();
	if (!bf) {
		err = -errno;
		fprintf(stderr, "fgbench: loading bench_floor: %s\n", strerror(-err));
		goto out;
	}
	build_frame6(frame, 0); /* vary6 writes the source's bits 32..63 */
	err = micro6_fill(&g, bf, frame, sources, max_sources);
	for (__u64 pass = 1; !err && pass <= b->passes; pass++)
		err = micro6_pass(&g, bf, frame, pass, sources, (__u32)b->repeat);
	if (err)
		fprintf(stderr, "fgbench: micro6: %s\n", strerror(-err));
out:
	fgi_close(&g);
	bench_floor_bpf__destroy(bf);
	return err ? 1 : 0;
}

/* ---- dispatch: floodgate inside libxdp's dispatcher (issue 13) ----------------
 *
 * fgbench dispatch -i DEV: floodgate's cost alone (the exclusive attach runs
 * the program itself) and as the first of two components of libxdp's
 * dispatcher on DEV, a pass program behind it, one throttled source. Where
 * the kernel cannot build a dispatcher the reason is printed instead of the
 * second figure.
 */
/* ---- synauth: a verified client's ACK against a rule without syn_auth -----
 *
 * The goal (issue 21): a verified client's packets cost within 10% of the
 * same packets on a rule that does not authenticate. Three instances, one
 * frame (a 64-byte TCP ACK from SRC_ONE to port 80, no cookie):
 *   sa_verified_ack   syn_auth's steps in, the rule with syn_auth: cookie,
 *                     the source verified (its entry written as a proof
 *                     writes it, no SYN-ACK sent lately: the fast path)
 *   sa_load_plain_ack syn_auth's steps in, the rule without syn_auth
 *   plain_ack         the default load (steps out), the rule without it:
 *                     what a policy without syn_auth runs
 *   sa_unverified_ack the first instance, another source (not verified):
 *                     no cookie, no socket, dropped as cookie_invalid
 * Every rule admits everything (a limit of 1e9/s), so each verified ACK
 * is charged and passes. The ratio is the goal's figure, so it is taken
 * the way a shared, noisy VM allows: each pass runs SA_ROUNDS rounds, a
 * round one short run (repeat/4) of each of the three passing instances,
 * in an order that rotates round by round, and the pass's ratio is the
 * median of the rounds' ratios (the kernel's means of one round are
 * milliseconds apart, so a neighbour's burst of load shifts both). Each
 * pass prints the four instances' slopes (measure) and, as kernel_ns, the
 * median of their rounds, and {"kind":"sa_ratio",...}: sa_verified_ack
 * over plain_ack and over sa_load_plain_ack, the median of the rounds
 * (kernel) and the slopes' ratio (slope).
 */
#define SA_ROUNDS 31
static const char *pol_sa_fmt = "max_sources: 65536\n"
				"rules:\n"
				"  - name: web\n"
				"    match: {proto: tcp, dport: 80}\n"
				"%s"
				"    per_source: {rate: 1000000000/s, burst: 1000000000}\n";

/* fg_sakey with seeds and table sizes, and src verified for an hour in
 * fg_ver4 (its set by the seed, as fg_sa_claim places it; no SYN-ACK). */
static int sa_verify(struct fgi *g, __u32 src)
{
	struct fg_sakey k = {};
	struct fg_vset4 set;
	__u32 z = 0, idx, bits = 0, addr = htonl(src);
	int fd4 = bpf_map__fd(g->skel->maps.fg_ver4);

	while ((1u << bits) < bpf_map__max_entries(g->skel->maps.fg_ver4))
		bits++;
	k.seed[0] = 0x5eed0001, k.seed[1] = 0x5eed0002;
	k.ver4_bits = k.ver6_bits = bits;
	if (bpf_map_update_elem(bpf_map__fd(g->skel->maps.fg_sakey), &z, &k, 0))
		return -errno;
	idx = fg_hash4(addr, k.seed[0], bits);
	memset(&set, 0, sizeof(set));
	set.key[0] = addr | (__u64)FG_VT(now_ns() + 3600 * NSEC) << 32;
	set.since[0] = 0;
	set.synack[0] = 0; /* no SYN-ACK sent lately: the fast path */
	return bpf_map_update_elem(fd4, &idx, &set, 0) ? -errno : 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median, least and greatest of n doubles (n <= SA_ROUNDS), v kept. */
static double median_d(const double *v, int n)
{
	double c[SA_ROUNDS];

	memcpy(c, v, sizeof(*v) * (size_t)n);
	qsort(c, (size_t)n, sizeof(*c), cmp_d);
	return n & 1 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
}

static double min_d(const double *v, int n)
{
	double m = v[0];

	for (int i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

static double max_d(const double *v, int n)
{
	double m = v[0];

	for (int i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

static int synauth(void *cfg)
{
	const struct bench_opts *b = cfg;
	static struct fgi sa, sa_plain, plain;
	enum {
		V,
		SP,
		P,
		U,
		N
	};
	static const char *const name[N] = { "sa_verified_ack", "sa_load_plain_ack", "plain_ack",
					     "sa_unverified_ack" };
	static const char *const what[N] = {
		"TCP ACK of a verified source, syn_auth rule (steps in)",
		"the same ACK, rule without syn_auth (steps in)",
		"the same ACK, rule without syn_auth (default load)",
		"TCP ACK of an unverified source, no cookie: cookie_invalid",
	};
	const __u32 expect[N] = { XDP_PASS, XDP_PASS, XDP_PASS, XDP_DROP };
	char y_sa[512], y_plain[512];
	__u8 f[N][64];
	int err = 0;

	if (pin_to_cpu(b->cpu))
		return 1;
	snprintf(y_sa, sizeof(y_sa), pol_sa_fmt, "    syn_auth: cookie\n");
	snprintf(y_plain, sizeof(y_plain), pol_sa_fmt, "");
	fgi_sa_on = 1;
	err = fgi_open(&sa, y_sa, NULL);
	if (!err)
		err = fgi_open(&sa_plain, y_plain, NULL);
	fgi_sa_on = 0;
	if (!err)
		err = fgi_open(&plain, y_plain, NULL);
	if (!err && !sa.cfg.pol.sa.way) {
		fprintf(stderr, "fgbench: synauth: this kernel gives syn_auth no way\n");
		err = -EOPNOTSUPP;
	}
	if (!err && (err = sa_verify(&sa, SRC_ONE)))
		fprintf(stderr, "fgbench: synauth: the verified entry: %s\n", strerror(-err));
	if (err)
		goto out;
	for (int i = 0; i < N; i++) {
		build_syn(f[i], i == U ? SRC_ONE + 1 : SRC_ONE, 80);
		f[i][14 + 20 + 13] = FG_TCP_ACK;
	}
	printf("{\"kind\":\"sa_way\",\"way\":\"%s\"}\n",
	       sa.cfg.pol.sa.way == FG_SA_WAY_HANDOFF ? "handoff" : "retransmit");
	for (unsigned long pass = 1; pass <= b->passes; pass++) {
		struct fgi *g[N] = { &sa, &sa_plain, &plain, &sa };
		double slope[N], fixed[N], rk[P + 1][SA_ROUNDS], rr[2][SA_ROUNDS], kmed[N];
		__u32 rv, kns[N];

		for (int i = 0; i < N; i++) {
			err = measure(g[i]->prog, f[i], (__u32)b->repeat, &slope[i], &fixed[i], &rv,
				      &kns[i]);
			if (!err && rv != expect[i]) {
				fprintf(stderr, "fgbench: synauth: %s: verdict %u, expected %u\n",
					name[i], rv, expect[i]);
				err = -EPROTO;
			}
			if (err) {
				fprintf(stderr, "fgbench: test_run %s: %s\n", name[i],
					strerror(-err));
				goto out;
			}
			kmed[i] = kns[i];
		}
		/* the rounds: V, SP, P interleaved, the order rotating */
		for (int r = 0; r < SA_ROUNDS; r++) {
			for (int j = 0; j <= P; j++) {
				int i = (r + j) % (P + 1);
				double y;
				__u32 k;

				err = run_once(g[i]->prog, f[i],
					       (__u32)(b->repeat / 4 ? b->repeat / 4 : 1), &y, &rv,
					       &k);
				if (!err && rv != expect[i])
					err = -EPROTO;
				if (err) {
					fprintf(stderr, "fgbench: synauth round %s: %s\n", name[i],
						strerror(-err));
					goto out;
				}
				rk[i][r] = k ? k : 1;
			}
			rr[0][r] = rk[V][r] / rk[SP][r];
			rr[1][r] = rk[V][r] / rk[P][r];
		}
		for (int i = 0; i <= P; i++)
			kmed[i] = median_d(rk[i], SA_ROUNDS);
		for (int i = 0; i < N; i++)
			printf("{\"kind\":\"micro\",\"name\":\"%s\",\"what\":\"%s\",\"pass\":%lu,"
			       "\"ns\":%.3f,\"kernel_ns\":%.1f,\"fixed_ms\":%.2f,\"retval\":%u,"
			       "\"expect\":%u}\n",
			       name[i], what[i], pass, slope[i], kmed[i], fixed[i], expect[i],
			       expect[i]);
		for (int d = SP; d <= P; d++)
			printf("{\"kind\":\"sa_ratio\",\"num\":\"%s\",\"den\":\"%s\",\"pass\":%lu,"
			       "\"kernel\":%.4f,\"slope\":%.4f,\"rounds\":%d,\"round_min\":%.4f,"
			       "\"round_max\":%.4f}\n",
			       name[V], name[d], pass, median_d(rr[d - SP], SA_ROUNDS),
			       slope[V] / slope[d], SA_ROUNDS, min_d(rr[d - SP], SA_ROUNDS),
			       max_d(rr[d - SP], SA_ROUNDS));
		fflush(stdout);
	}
	/* honesty: the verified ACKs took the fast path (no cookie judged) */
	printf("{\"kind\":\"check\",\"what\":\"synauth: the verified ACKs passed, none judged "
	       "as a cookie\",\"pass\":%llu,\"cookie_invalid\":%llu,\"cookie_valid\":%llu}\n",
	       (unsigned long long)fgi_sum(&sa, -1, FG_OUT_PASS),
	       (unsigned long long)fgi_sum(&sa, -1, FG_OUT_SA_BADCOOKIE),
	       (unsigned long long)fgi_ev(&sa, FG_EV_SA_VALID));
out:
	fgi_sa_on = 0;
	fgi_close(&sa);
	fgi_close(&sa_plain);
	fgi_close(&plain);
	return err ? 1 : 0;
}

static struct fg_xdp_prog xprog(struct bpf_object *obj, struct bpf_program *p, const void *elf,
				size_t sz)
{
	return (struct fg_xdp_prog){ .obj = obj, .prog = p, .elf = elf, .elf_sz = sz };
}

static int dispatch(void *cfg)
{
	const struct bench_opts *b = cfg;
	struct fg_xdp_opts o = { .mode = FG_XDP_AUTO,
				 .how = FG_XDP_LIBXDP,
				 .run_prio = FG_XDP_PRIO_FIRST };
	struct fgtest_xdp_bpf *t = NULL;
	struct fg_xdp_att a = { .link_fd = -1 }, a2 = { .link_fd = -1 };
	struct fg_xdp_list l = {};
	static struct fgi g;
	char why[512] = "";
	double alone, disp = NAN;
	__u32 ka, kd = 0;
	__u8 frame[64];
	int ifindex, err, fd = -1, attached = 0;
	size_t sz;

	if (!b->ifname) {
		fprintf(stderr, "fgbench: dispatch: needs -i DEV\n");
		return FG_EXIT_USAGE;
	}
	ifindex = (int)if_nametoindex(b->ifname);
	if (!ifindex) {
		fprintf(stderr, "fgbench: %s: %s\n", b->ifname, strerror(errno));
		return 1;
	}
	if ((err = fgi_open(&g, pol_one, NULL)))
		goto out;
	build_frame(frame, SRC_ONE, 9);
	run_once(g.prog, frame, 64, &alone, &ka, NULL);
	if ((err = measure_as(g.prog, frame, (__u32)b->repeat, XDP_DROP, "exclusive", &alone, &ka)))
		goto out;
	err = fg_xdp_probe_dispatcher(why);
	if (!err) {
		const void *elf = floodgate_bpf__elf_bytes(&sz);
		struct fg_xdp_prog fp = xprog(g.skel->obj, g.skel->progs.floodgate, elf, sz);

		t = fgtest_xdp_bpf__open_and_load();
		err = t ? 0 : -errno;
		if (!err)
			err = fg_xdp_attach(&fp, ifindex, &o, &a, why);
		attached = !err;
		if (!err) {
			const void *telf = fgtest_xdp_bpf__elf_bytes(&sz);
			struct fg_xdp_prog tp = xprog(t->obj, t->progs.fgt_pass, telf, sz);

			o.run_prio = 60;
			err = fg_xdp_attach(&tp, ifindex, &o, &a2, why);
		}
		if (!err)
			err = fg_xdp_list(ifindex, "floodgate", &l, why);
		if (!err && !l.dispatcher_id) {
			err = -EOPNOTSUPP;
			snprintf(why, sizeof(why),
				 "libxdp attached floodgate without a dispatcher");
		}
		if (!err) {
			fd = bpf_prog_get_fd_by_id(l.dispatcher_id);
			err = fd < 0 ? -errno : 0;
		}
		if (!err)
			err = measure_as(fd, frame, (__u32)b->repeat, XDP_DROP, "dispatcher", &disp,
					 &kd);
	}
	printf("{\"kind\":\"dispatch\",\"built\":%s,\"exclusive_ns\":%.3f,\"exclusive_kernel_ns\":%u",
	       err ? "false" : "true", alone, ka);
	if (err) {
		printf(",\"why\":\"");
		json_str_body(why[0] ? why : strerror(-err));
		printf("\"}\n");
	} else {
		printf(",\"dispatcher_ns\":%.3f,\"dispatcher_kernel_ns\":%u,\"added_ns\":%.3f}\n",
		       disp, kd, disp - alone);
	}
	err = 0; /* a dispatcher this kernel cannot build is a result, not a failure */
out:
	if (fd >= 0)
		close(fd);
	if (attached) {
		fg_xdp_detach_ours(ifindex, "fgt_pass", NULL, why);
		fg_xdp_detach_ours(ifindex, "floodgate", NULL, why);
	}
	fg_xdp_att_close(&a2);
	fg_xdp_att_close(&a);
	fgtest_xdp_bpf__destroy(t);
	fgi_close(&g);
	return err ? 1 : 0;
}

/* ---- rules: the match cost against the number of rules -------------------- */

/* n drop rules over UDP, rule i on port 1000 + i (sport or dport). */
static char *rules_policy(__u32 n, int by_sport)
{
	size_t len = 64 + (size_t)n * 96, off = 0;
	char *t = malloc(len);

	if (!t)
		return NULL;
	off += (size_t)snprintf(t + off, len - off, "max_sources: 4096\nrules:\n");
	for (__u32 i = 0; i < n; i++)
		off += (size_t)snprintf(
			t + off, len - off,
			"  - name: r%u\n    action: drop\n    match: {proto: udp, %s: %u}\n", i,
			by_sport ? "sport" : "dport", 1000 + i);
	return t;
}

static int rules(void *cfg)
{
	static const __u32 sizes[] = { 1, 16, 64, 256 };
	static const char *const kinds[] = { "typical", "worst" };
	const struct bench_opts *b = cfg;
	enum {
		NS = sizeof(sizes) / sizeof(sizes[0])
	};
	static struct fgi g[2][NS];
	__u32 n[NS], port;
	__u8 frame[64];
	int err = 0;

	if (pin_to_cpu(b->cpu))
		return 1;
	for (int s = 0; s < NS; s++) {
		/* one rule is kept for fragments */
		n[s] = sizes[s] < FG_MAX_RULES - 1 ? sizes[s] : FG_MAX_RULES - 1;
		for (int k = 0; k < 2; k++) {
			char *y = rules_policy(n[s], k);

			err = y ? fgi_open(&g[k][s], y, NULL) : -ENOMEM;
			free(y);
			if (err)
				goto out;
		}
	}
	printf("{\"kind\":\"rules_limit\",\"max_rules\":%d,\"max_match\":%d}\n", FG_MAX_RULES,
	       FG_MAX_MATCH);
	for (unsigned long pass = 1; pass <= b->passes; pass++) {
		for (int k = 0; k < 2; k++) {
			double base = NAN;

			for (int s = 0; s < NS; s++) {
				double slope, fixed;
				__u32 rv = 0, kns;

				/* the last rule's port; the other one is 40000 / 9 */
				port = 1000 + n[s] - 1;
				build_frame(frame, SRC_ONE, k ? 9 : (__u16)port);
				if (k) {
					frame[34] = (__u8)(port >> 8);
					frame[35] = (__u8)port;
				}
				err = measure(g[k][s].prog, frame, (__u32)b->repeat, &slope, &fixed,
					      &rv, &kns);
				if (err) {
					fprintf(stderr, "fgbench: test_run rules %s %u: %s\n",
						kinds[k], n[s], strerror(-err));
					goto out;
				}
				if (!s)
					base = slope;
				printf("{\"kind\":\"rules\",\"name\":\"fg_rules_%s_%u\",\"case\":\"%s\","
				       "\"rules\":%u,\"pass\":%lu,\"ns\":%.3f,\"match_ns\":%.3f,"
				       "\"kernel_ns\":%u,\"retval\":%u,\"expect\":%u}\n",
				       kinds[k], sizes[s], kinds[k], n[s], pass, slope,
				       slope - base, kns, rv, XDP_DROP);
				fflush(stdout);
			}
		}
	}
	/* honesty check: the frame took the last rule (its row counted the drops) */
	for (int k = 0; k < 2; k++) {
		for (int s = 0; s < NS; s++) {
			int row, out;
			const char *rname = "_global";

			fgi_top_outcome(&g[k][s], &row, &out);
			for (__u32 i = 0; i < g[k][s].cfg.pol.nrules; i++)
				if (row >= 0 && g[k][s].cfg.pol.rules[i].id == row)
					rname = g[k][s].cfg.rules[i].name;
			printf("{\"kind\":\"check\",\"what\":\"rules %s %u: the rule that took the "
			       "frames\",\"rule\":\"%s\",\"want\":\"r%u\",\"outcome\":\"%s\"}\n",
			       kinds[k], n[s], rname, n[s] - 1,
			       out >= 0 ? fg_outcome_names[out] : "?");
		}
	}
out:
	for (int k = 0; k < 2; k++)
		for (int s = 0; s < NS; s++)
			fgi_close(&g[k][s]);
	return err ? 1 : 0;
}

/* ---- xdp: attach a baseline until a signal -------------------------------- */

static int xdp(void *cfg)
{
	const struct bench_opts *b = cfg;
	const char *ifname = b->ifname, *pname = b->prog;
	struct bench_floor_bpf *bf = NULL;
	struct bpf_program *prog;
	struct bpf_link *link = NULL;
	struct fg_limit lim = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned ifindex;
	int err = 1;

	if (!ifname || !pname ||
	    (strcmp(pname, "bare_drop") && strcmp(pname, "floor") && strcmp(pname, "simple"))) {
		fprintf(stderr, "fgbench: xdp: needs -i DEV and --prog bare_drop|floor|simple\n");
		return FG_EXIT_USAGE;
	}
	if (!strcmp(pname, "simple")) {
		char why[256] = "";

		/* the policy compiler's arithmetic: the same limit as floodgate's rule */
		if (!b->rate || !b->burst) {
			fprintf(stderr, "fgbench: xdp: --prog simple needs --rate and --burst\n");
			return FG_EXIT_USAGE;
		}
		if (fg_limit_compile(b->rate, b->burst, 0, &lim, why, NULL)) {
			fprintf(stderr, "fgbench: xdp: --rate %llu --burst %llu: %s\n",
				(unsigned long long)b->rate, (unsigned long long)b->burst, why);
			return FG_EXIT_USAGE;
		}
	}
	ifindex = if_nametoindex(ifname);
	if (!ifindex) {
		fprintf(stderr, "fgbench: %s: %s\n", ifname, strerror(errno));
		return 1;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	bf = bench_floor_bpf__open();
	if (!bf)
		return 1;
	bpf_program__set_autoload(bf->progs.vary, false);
	if (!strcmp(pname, "simple") && bpf_map__set_max_entries(bf->maps.simple_tat, 1u << 20))
		goto out;
	if (bench_floor_bpf__load(bf)) {
		fprintf(stderr, "fgbench: loading bench_floor failed\n");
		goto out;
	}
	if (!strcmp(pname, "simple")) {
		bf->data->simple_inc = lim.inc;
		bf->bss->simple_tau = lim.tau;
		prog = bf->progs.simple;
	} else {
		prog = strcmp(pname, "floor") ? bf->progs.bare_drop : bf->progs.floor;
	}
	link = bpf_program__attach_xdp(prog, (int)ifindex);
	if (!link) {
		fprintf(stderr, "fgbench: attaching %s to %s: %s\n", pname, ifname,
			strerror(errno));
		goto out;
	}
	printf("ready\n");
	fflush(stdout);
	while (!stop)
		pause();

	int ncpu = libbpf_num_possible_cpus();
	__u64 *v = calloc(ncpu > 0 ? ncpu : 1, sizeof(*v)), sum = 0;
	__u32 k = 0;

	if (v && !bpf_map_lookup_elem(bpf_map__fd(bf->maps.floor_cnt), &k, v))
		for (int i = 0; i < ncpu; i++)
			sum += v[i];
	free(v);
	printf("{\"prog\":\"%s\",\"count\":%llu}\n", pname, (unsigned long long)sum);
	err = 0;
out:
	bpf_link__destroy(link);
	bench_floor_bpf__destroy(bf);
	return err;
}

/* ---- options ---------------------------------------------------------------- */

#define B struct bench_opts
/* The options of every command that times BPF_PROG_TEST_RUN: its CPU, its
 * passes (at most pmax, described by phelp) and the short call's repeat. */
#define RUN_OPTS(pmax, phelp, rmax)                                                              \
	FG_OPT_U64("cpu", 'c', B, cpu, "N", 0, CPU_SETSIZE - 1, "a CPU",                         \
		   "run on CPU N (default 0)"),                                                  \
		FG_OPT_U64("passes", 'P', B, passes, "P", 1, pmax, "a number of passes", phelp), \
		FG_OPT_U64("repeat", 'r', B, repeat, "R", 1024, rmax, "a repeat count",          \
			   "packets per run of the short call (default 1048576)")
static const struct fg_opt micro_opts[] = {
	FG_OPT_STR("policy", 'p', B, policy, "FILE", "the realistic policy (required)"),
	RUN_OPTS(1000000, "interleaved passes (default 3)", 1u << 30),
	FG_OPT_U64("sources", 's', B, maxsrc, "N", 1000000, UINT32_MAX, "a number of sources",
		   "sources of the largest table (default 1000000)"),
	FG_OPT_STR("only", 'o', B, only, "NAME",
		   "only the figure NAME (profiling: its program's id to stderr)"),
	FG_OPT_END,
};
static const struct fg_opt rules_opts[] = {
	RUN_OPTS(1000000, "interleaved passes (default 3)", 1u << 30),
	FG_OPT_END,
};
static const struct fg_opt xdp_opts[] = {
	FG_OPT_STR("interface", 'i', B, ifname, "DEV", "the device (required)"),
	FG_OPT_STR("prog", 'p', B, prog, "bare_drop|floor|simple", "the baseline (required)"),
	FG_OPT_U64("rate", 'R', B, rate, "N", 1, 1000000000, "packets per second",
		   "simple: each source's rate, packets/s"),
	FG_OPT_U64("burst", 'b', B, burst, "N", 1, 1000000000, "a number of packets",
		   "simple: each source's burst, packets"),
	FG_OPT_END,
};
static const struct fg_opt sweep_opts[] = {
	FG_OPT_STR("curve", 'C', B, curve, "NAME",
		   "sources, rules, prefixes, shed or all (default)"),
	RUN_OPTS(1000000, "passes per point, each floodgate then the floor (default 3)", 1u << 30),
	FG_OPT_BOOL("quick", 'q', B, quick, "sources up to 100,000, prefixes up to 10,000"),
	FG_OPT_U64("point", 'n', B, point, "N", 1, 4000000, "a number of sources",
		   "the sources curve: its point N alone (profiling)"),
	FG_OPT_U64("table", 't', B, table, "N", 2048, FG_MAX_SOURCES_BENCH, "a table size",
		   "the sources curve's table, every point (default: 4 ways a source)"),
	FG_OPT_END,
};
static const struct fg_opt fill_opts[] = {
	FG_OPT_STR("pin-dir", 'd', B, pin_dir, "DIR", "floodgated's pin dir (required)"),
	FG_OPT_STR("interface", 'i', B, ifname, "DEV",
		   "the device floodgated is attached to (required)"),
	FG_OPT_U64("family", 'f', B, family, "4|6", 4, 6, "4 or 6",
		   "the address family (required)"),
	FG_OPT_U64("sources", 's', B, sources, "N", 1, 1u << 24, "a number of sources",
		   "new sources to send one frame each (this or --tracked)"),
	FG_OPT_U64("tracked", 't', B, tracked, "T", 1, 1u << 24, "a number of sources",
		   "then new sources until the family's table holds T (at most 8 rounds)"),
	FG_OPT_U64("start", 'S', B, start, "S", 0, UINT32_MAX - (1u << 24), "a source index",
		   "index of the first source (default 0)"),
	FG_OPT_END,
};
static const struct fg_opt micro6_opts[] = {
	RUN_OPTS(1000, "passes (default 3)", 1u << 28),
	FG_OPT_U64("sources", 's', B, sources, "N", 1, 1u << 26, "a number of sources",
		   "distinct /64s sent into the table (default 1000000)"),
	FG_OPT_U64("max-sources", 'm', B, max_sources, "N", 1024, 1ull << 27, "a table size",
		   "the policy's max_sources (default 2097152)"),
	FG_OPT_END,
};
static const struct fg_opt dispatch_opts[] = {
	FG_OPT_STR("interface", 'i', B, ifname, "DEV", "a device with no XDP program (required)"),
	FG_OPT_U64("repeat", 'r', B, repeat, "R", 1024, 1u << 30, "a repeat count",
		   "packets per run of the short call (default 1048576)"),
	FG_OPT_END,
};
#undef RUN_OPTS
#undef B
static const struct fg_opt bench_opts[] = {
	FG_OPT_HELP("help for the command"),
	FG_OPT_END,
};

static const struct fg_cmd bench_cmds[] = {
	{ "micro", "--policy FILE [options]",
	  "BPF_PROG_TEST_RUN ns per packet, one JSON line per figure and pass", 0, 0, micro_opts,
	  micro },
	{ "rules", "[options]",
	  "ns per packet against the number of rules (1, 16, 64, 256), worst and typical", 0, 0,
	  rules_opts, rules },
	{ "xdp", "-i DEV --prog bare_drop|floor|simple",
	  "attach a baseline until SIGTERM, then print its count", 0, 0, xdp_opts, xdp },
	{ "sweep", "[--curve NAME] [options]",
	  "cost curves against sources, rules and prefixes, and the shedding figures, each point "
	  "next to the floor",
	  0, 0, sweep_opts, sweep },
	{ "fill", "--pin-dir DIR -i DEV --family 4|6 --sources N",
	  "one frame from each of N new sources through floodgated's program", 0, 0, fill_opts,
	  fill },
	{ "micro6", "[--sources N] [--max-sources M] [options]",
	  "IPv6 source table: ns per packet at 1 and N tracked /64s, map bytes per tracked source",
	  0, 0, micro6_opts, micro6 },
	{ "dispatch", "-i DEV", "floodgate alone and inside libxdp's dispatcher (or why not)", 0, 0,
	  dispatch_opts, dispatch },
	{ "synauth", "[options]",
	  "a verified client's ACK on a syn_auth rule against the same rule without syn_auth", 0, 0,
	  rules_opts, synauth },
	{ NULL },
};

FG_DEFINE_PROG(
	bench_prog, "fgbench", "COMMAND [OPTIONS]", bench_opts, .cmds = bench_cmds,
	.help = "floodgate's micro benchmark, cost curves, daemon fill and dispatcher figure, and the XDP baselines of tools/bench.sh.");

int main(int argc, char **argv)
{
	struct bench_opts b = { .passes = 3, .repeat = 1u << 20, .maxsrc = 1000000 };
	struct fg_parsed p;
	int rc;

	libbpf_set_print(libbpf_quiet);
	rc = fg_prog_args(&bench_prog, argc, argv, &b, &p);
	if (rc >= 0)
		return rc;
	return p.cmd->fn(&b);
}
