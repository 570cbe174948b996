// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fgbench6: the IPv6 source table's micro benchmark. One floodgate instance
 * (max_sources, one throttled UDP rule grouping by /64), its fg_src6 filled
 * with N throttled /64s by the program itself (bench_floor's vary6 in
 * sequential mode: one BPF_PROG_TEST_RUN of N repeats sends each source
 * once), then ns per packet for a random source of 1 and of N, through the
 * vary6 harness, net of the harness (vary6 -> floor minus floor), as the
 * slope between repeat R and 4R (tools/fgbench.c says why), and by the
 * kernel's own mean (kernel_ns, net the same way). Also the map
 * memory per tracked source, from the kernel's own accounting (fdinfo
 * memlock), and the time of one walk over the source tables
 * (fg_sources_count, as `status` reads them). One JSON line per figure and
 * pass on stdout.
 *
 * Filling the table through the program, not by writing the map, makes the
 * figures independent of fg_src6's layout: the same tool measures another
 * build of the program.
 */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "floodgate.h"
#include "floodgate.skel.h"
#include "bench_floor.skel.h"
#include "apply.h"
#include "fgmaps.h"
#include "opts.h"
#include "policy.h"
#include "sources.h"

#define NSEC 1000000000ull
#define FRAME_LEN 72	/* Ethernet, IPv6, UDP, 10 bytes of payload */

struct b6_opts {
	__u64 cpu, passes, repeat, sources, max_sources;
};

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * NSEC + ts.tv_nsec;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

/* 2001:db8:0:0::1 -> 2001:db8::2, UDP 40000 -> 9; vary6 writes bits 32..63. */
static void build_frame6(__u8 *f)
{
	__u8 *ip = f + 14, *udp = ip + 40;

	memset(f, 0, FRAME_LEN);
	memset(f, 0xff, 6);
	f[6] = 0x02; f[11] = 0x01;
	f[12] = 0x86; f[13] = 0xdd;
	ip[0] = 0x60;
	ip[5] = FRAME_LEN - 14 - 40;	/* payload length */
	ip[6] = 17;
	ip[7] = 64;
	ip[8] = 0x20; ip[9] = 0x01; ip[10] = 0x0d; ip[11] = 0xb8; ip[23] = 1;
	ip[24] = 0x20; ip[25] = 0x01; ip[26] = 0x0d; ip[27] = 0xb8; ip[39] = 2;
	udp[0] = 40000 >> 8; udp[1] = 40000 & 0xff;
	udp[3] = 9;
	udp[5] = FRAME_LEN - 14 - 40;
}

static int run_once(int prog, const __u8 *frame, __u32 repeat, double *ns, __u32 *retval,
		    __u32 *kns)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = FRAME_LEN,
		    .repeat = repeat);
	__u64 t0 = now_ns();
	int err = bpf_prog_test_run_opts(prog, &o);

	*ns = (double)(now_ns() - t0);
	*retval = o.retval;
	if (kns)
		*kns = o.duration;
	return err;
}

/* ns per packet: slope between repeat R and 4R, the faster of two each;
 * *kns: the kernel's own mean over the 4R runs (the smaller), steadier on
 * a busy machine (tools/fgbench.c). */
static int measure(int prog, const __u8 *frame, __u32 R, double *slope, __u32 *retval,
		   __u32 *kns)
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
	return 0;
}

struct b6 {
	struct floodgate_bpf *skel;
	struct bench_floor_bpf *bf;
	struct fg_maps maps;
	struct fg_config cfg;
	char dir[32];
};

static int b6_open(struct b6 *g, __u64 max_sources)
{
	char yaml[512], why[FG_WHY_LEN] = "";
	struct fg_err e = {};
	int err;

	memset(g, 0, sizeof(*g));
	g->maps.dirfd = -1;
	for (int i = 0; i < FGM_NMAPS; i++)
		g->maps.fd[i] = -1;
	/* admission wide open: the fill is a burst of N new sources */
	snprintf(yaml, sizeof(yaml),
		 "max_sources: %llu\n"
		 "admission: {rate: 1000000000/s, burst: 100000000}\n"
		 "rules:\n"
		 "  - name: throttled\n"
		 "    match: {proto: udp}\n"
		 "    per_source: {rate: 1/h, burst: 1, prefix_v6: 64}\n",
		 (unsigned long long)max_sources);
	err = fg_config_parse(yaml, strlen(yaml), "<fgbench6>", &g->cfg, &e);
	if (err)
		return err;
	g->skel = floodgate_bpf__open();
	g->bf = bench_floor_bpf__open_and_load();
	if (!g->skel || !g->bf)
		return -errno;
	bpf_map__set_max_entries(g->skel->maps.fg_src4, fg_src4_sets(max_sources));
	bpf_map__set_max_entries(g->skel->maps.fg_src6, fg_src6_sets(max_sources));
	err = floodgate_bpf__load(g->skel);
	if (err)
		return err;
	snprintf(g->dir, sizeof(g->dir), "/tmp/fgbench6.XXXXXX");
	if (!mkdtemp(g->dir))
		return -errno;
	err = fg_maps_from_skel(&g->maps, g->skel, g->dir);
	if (!err)
		err = fg_maps_lock(&g->maps, 1000);
	if (!err)
		err = fg_ctl_init(&g->maps, FG_MODE_ENFORCE);
	if (!err)
		err = fg_policy_apply(&g->maps, &g->cfg, why);
	if (err && why[0])
		fprintf(stderr, "fgbench6: %s\n", why);
	return err;
}

static void b6_close(struct b6 *g)
{
	fg_maps_close(&g->maps);
	floodgate_bpf__destroy(g->skel);
	bench_floor_bpf__destroy(g->bf);
	fg_config_free(&g->cfg);
	if (g->dir[0])
		rmdir(g->dir);
}

/* vary6's target and settings. */
static int b6_target(struct b6 *g, int prog, __u32 n, __u32 seq)
{
	__u32 key = 0;

	g->bf->data->vary6_n = n;
	g->bf->bss->vary6_seq = seq;
	g->bf->bss->vary6_next = 0;
	return bpf_map_update_elem(bpf_map__fd(g->bf->maps.vary_jmp), &key, &prog, 0) ? -errno : 0;
}

static unsigned long long memlock_of(int fd)
{
	unsigned long long v = 0;
	char path[64], line[256];
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	fp = fopen(path, "r");
	while (fp && fgets(line, sizeof(line), fp))
		sscanf(line, "memlock: %llu", &v);
	if (fp)
		fclose(fp);
	return v;
}

static int bench(const struct b6_opts *o)
{
	int fg, vary6, flr, err;
	__u8 frame[FRAME_LEN];
	size_t n4 = 0, n6 = 0;
	struct b6 g;
	cpu_set_t cs;
	double ns;
	__u32 rv;

	CPU_ZERO(&cs);
	CPU_SET(o->cpu, &cs);
	if (sched_setaffinity(0, sizeof(cs), &cs))
		return -errno;
	err = b6_open(&g, o->max_sources);
	if (err)
		goto out;
	fg = bpf_program__fd(g.skel->progs.floodgate);
	vary6 = bpf_program__fd(g.bf->progs.vary6);
	flr = bpf_program__fd(g.bf->progs.floor);
	build_frame6(frame);
	/* fill: every source once, in turn (its one token spent: throttled) */
	err = b6_target(&g, fg, (__u32)o->sources, 1);
	if (!err)
		err = run_once(vary6, frame, (__u32)o->sources, &ns, &rv, NULL);
	/* what `status` and the daemon's walk pay: one count of both tables */
	__u64 t0 = now_ns();

	if (!err)
		err = fg_sources_count(&g.maps, &n4, &n6);
	if (err)
		goto out;
	double walk_ms = (double)(now_ns() - t0) / 1e6;
	unsigned long long ml = memlock_of(g.maps.fd[FGM_SRC6]);

	printf("{\"kind\":\"mem6\",\"max_sources\":%llu,\"sources\":%llu,\"tracked\":%zu,"
	       "\"memlock\":%llu,\"bytes_per_tracked\":%.2f,\"fill_ns\":%.1f,\"walk_ms\":%.1f}\n",
	       (unsigned long long)o->max_sources, (unsigned long long)o->sources, n6, ml,
	       n6 ? (double)ml / n6 : 0.0, ns / o->sources, walk_ms);
	for (__u64 pass = 1; pass <= o->passes; pass++) {
		static const struct { const char *name; int one; } fig[] = {
			{ "fg6_src_1", 1 }, { "fg6_src_n", 0 },
		};
		double harness = 0, floor_ns = 0, raw;
		__u32 kh, kf, kr;

		/* the harness's own cost: vary6 -> floor, less floor alone */
		err = b6_target(&g, flr, (__u32)o->sources, 0);
		if (!err)
			err = measure(vary6, frame, (__u32)o->repeat, &harness, &rv, &kh);
		if (!err)
			err = measure(flr, frame, (__u32)o->repeat, &floor_ns, &rv, &kf);
		if (err)
			goto out;
		harness -= floor_ns;
		for (size_t f = 0; f < sizeof(fig) / sizeof(fig[0]); f++) {
			err = b6_target(&g, fg, fig[f].one ? 1 : (__u32)o->sources, 0);
			if (!err)
				err = measure(vary6, frame, (__u32)o->repeat, &raw, &rv, &kr);
			if (err)
				goto out;
			printf("{\"kind\":\"micro6\",\"name\":\"%s\",\"pass\":%llu,\"sources\":%llu,"
			       "\"ns_raw\":%.2f,\"ns\":%.2f,\"floor_ns\":%.2f,\"kernel_ns\":%d,"
			       "\"kernel_floor_ns\":%u,\"retval\":%u}\n",
			       fig[f].name, (unsigned long long)pass,
			       fig[f].one ? 1ull : (unsigned long long)o->sources, raw, raw - harness,
			       floor_ns, (int)kr - ((int)kh - (int)kf), kf, rv);
			fflush(stdout);
		}
	}
out:
	b6_close(&g);
	return err;
}

#define B struct b6_opts
static const struct fg_opt b6_opts_tab[] = {
	FG_OPT_U64("cpu", 'c', B, cpu, "N", 0, CPU_SETSIZE - 1, "a CPU", "run on CPU N (default 0)"),
	FG_OPT_U64("passes", 'P', B, passes, "P", 1, 1000, "a number of passes", "passes (default 3)"),
	FG_OPT_U64("repeat", 'r', B, repeat, "R", 1024, 1u << 28, "a repeat count",
		   "packets per run of the short call (default 1048576)"),
	FG_OPT_U64("sources", 's', B, sources, "N", 1, 1u << 26, "a number of sources",
		   "distinct /64s sent into the table (default 1000000)"),
	FG_OPT_U64("max-sources", 'm', B, max_sources, "N", 1024, 1ull << 27, "a table size",
		   "the policy's max_sources (default 2097152)"),
	FG_OPT_HELP("this help"),
	FG_OPT_END,
};
#undef B

static const struct fg_prog b6_prog = {
	.name = "fgbench6",
	.usage = "[OPTIONS]",
	.help = "IPv6 source table micro benchmark: ns per packet at 1 and N tracked /64s, and "
		"map bytes per tracked source; JSON lines.",
	.opts = b6_opts_tab,
};

int main(int argc, char **argv)
{
	struct b6_opts o = { .passes = 3, .repeat = 1u << 20, .sources = 1000000,
			     .max_sources = 1u << 21 };
	struct fg_parsed p;
	int rc, err;

	libbpf_set_print(libbpf_quiet);
	rc = fg_prog_args(&b6_prog, argc, argv, &o, &p);
	if (rc >= 0)
		return rc;
	err = bench(&o);
	if (err)
		fprintf(stderr, "fgbench6: %s\n", strerror(-err));
	return err ? 1 : 0;
}
