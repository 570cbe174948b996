// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fgfill: fills a running floodgate's source tables with distinct sources,
 * through BPF_PROG_TEST_RUN of the program attached from the pin dir (its
 * own maps, so the buckets are made exactly as live traffic makes them,
 * whatever the table's layout). For measuring the daemon's cost at a
 * million sources (tests/e2e_daemoncost.sh).
 *
 *   fgfill [-p DIR] (-4 | -6) -n COUNT [-s FIRST] [-r REPEAT] [-d DST]
 *       COUNT sources FIRST, FIRST+1, ... (IPv4: the address; IPv6: the
 *       32 bits before the interface identifier, so that they are distinct
 *       under any grouping of /64 or longer), each sent REPEAT (default 1)
 *       ICMP echo requests to DST. Prints one JSON object:
 *       {"sent":N,"pass":P,"drop":D,"seconds":S}.
 *
 * Exit status: 0, 1 on an error, 2 on a usage error.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>

#include "floodgate.h"
#include "attach/attach.h"
#include "maps/fgmaps.h"
#include "lib/opts.h"
#include "pkt.h"

struct fill_opts {
	const char *dir;
	int family;
	__u64 count, repeat;
	const char *first, *dst;
};

/* The program behind the first link_* pinned in dir. */
static int prog_of_pin_dir(const char *dir)
{
	char path[512];
	struct dirent *de;
	int lfd = -1, pfd, err = -ENOENT;
	DIR *d = opendir(dir);

	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, FG_LINK_PREFIX, strlen(FG_LINK_PREFIX)))
			break;
	if (de && snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < (int)sizeof(path))
		lfd = bpf_obj_get(path);
	if (de && lfd < 0)
		err = -errno;
	closedir(d);
	if (lfd < 0)
		return err;
	pfd = fg_link_prog_fd(lfd);
	close(lfd);
	return pfd;
}

/* An echo request (16 bytes of payload) from src to dst into f (cap bytes);
 * its length, or -1. */
static int frame(__u8 *f, size_t cap, int family, const __u8 *src, const char *dst)
{
	char a[INET6_ADDRSTRLEN];
	struct pkt_spec s = {
		.family = family,
		.src = a,
		.dst = dst,
		.payload = 16,
		.proto = family == 4 ? IPPROTO_ICMP : IPPROTO_ICMPV6,
		.icmp_type = family == 4 ? 8 : 128,
	};

	if (!inet_ntop(family == 4 ? AF_INET : AF_INET6, src, a, sizeof(a)))
		return -1;
	return pkt_build(&s, f, cap);
}

static void next_source(int family, const __u8 *first, __u64 i, __u8 *out)
{
	__u32 v;

	memcpy(out, first, family == 4 ? 4 : 16);
	memcpy(&v, out + (family == 4 ? 0 : 4), 4);
	v = htonl(ntohl(v) + (__u32)i);
	memcpy(out + (family == 4 ? 0 : 4), &v, 4);
}

static int fill(const struct fill_opts *o, int pfd)
{
	__u8 first[16], dst[16], src[16], f[PKT_MIN_CAP + 16];
	__u64 pass = 0, drop = 0;
	struct timespec t0, t1;

	if (inet_pton(o->family == 4 ? AF_INET : AF_INET6, o->first, first) != 1 ||
	    inet_pton(o->family == 4 ? AF_INET : AF_INET6, o->dst, dst) != 1)
		return -EINVAL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (__u64 i = 0; i < o->count; i++) {
		int n;

		next_source(o->family, first, i, src);
		n = frame(f, sizeof(f), o->family, src, o->dst);
		if (n < 0)
			return -EINVAL;
		for (__u64 r = 0; r < o->repeat; r++) {
			/* repeat 1 a call: no dispatcher swap per call (bpf_prog_test_run_xdp) */
			LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = f, .data_size_in = (__u32)n,
				    .repeat = 1);
			int err = bpf_prog_test_run_opts(pfd, &t);

			if (err)
				return err;
			pass += t.retval == XDP_PASS;
			drop += t.retval == XDP_DROP;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("{\"sent\":%llu,\"pass\":%llu,\"drop\":%llu,\"seconds\":%.3f}\n",
	       (unsigned long long)(o->count * o->repeat), (unsigned long long)pass,
	       (unsigned long long)drop,
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}

#define O struct fill_opts
static const struct fg_opt fill_opts[] = {
	FG_OPT_STR("pin-dir", 'p', O, dir, "DIR",
		   "pin dir (default $" FG_PIN_DIR_ENV ", else " FG_PIN_DIR_DEFAULT ")"),
	FG_OPT_CHOICE(NULL, '4', O, family, 4, "-4 and -6 exclude each other", "IPv4 sources"),
	FG_OPT_CHOICE(NULL, '6', O, family, 6, "-4 and -6 exclude each other", "IPv6 sources"),
	FG_OPT_U64("count", 'n', O, count, "COUNT", 1, 1u << 24, "a count", "distinct sources"),
	FG_OPT_STR("first", 's', O, first, "FIRST",
		   "the first source (default 10.128.0.0, 2001:db8::1)"),
	FG_OPT_U64("repeat", 'r', O, repeat, "REPEAT", 1, 100000, "a count",
		   "echo requests per source (default 1)"),
	FG_OPT_STR("dst", 'd', O, dst, "DST", "destination (default 10.0.0.1, 2001:db8:ffff::1)"),
	FG_OPT_HELP_END("this help"),
};
#undef O

FG_DEFINE_PROG(fill_prog, "fgfill", "[-p DIR] (-4 | -6) -n COUNT [-s FIRST] [-r REPEAT] [-d DST]",
	       fill_opts,
	       .help = "Send COUNT new sources one echo request each (or REPEAT) through the "
		       "program attached from the pin dir.");

int main(int argc, char **argv)
{
	struct fill_opts o = { .repeat = 1 };
	struct fg_parsed p;
	int rc, pfd, err;

	rc = fg_prog_args(&fill_prog, argc, argv, &o, &p);
	if (rc >= 0)
		return rc;
	if (!o.family || !o.count) {
		fprintf(stderr, "fgfill: -4 or -6, and -n COUNT, are required ('fgfill --help')\n");
		return FG_EXIT_USAGE;
	}
	if (!o.first)
		o.first = o.family == 4 ? "10.128.0.0" : "2001:db8::1";
	if (!o.dst)
		o.dst = o.family == 4 ? "10.0.0.1" : "2001:db8:ffff::1";
	o.dir = fg_pin_dir_choose(o.dir);
	pfd = prog_of_pin_dir(o.dir);
	if (pfd < 0) {
		fprintf(stderr, "fgfill: no attached program in %s: %s\n", o.dir, strerror(-pfd));
		return 1;
	}
	err = fill(&o, pfd);
	close(pfd);
	if (err == -EINVAL) {
		fprintf(stderr, "fgfill: -s %s / -d %s: not IPv%d addresses\n", o.first, o.dst,
			o.family);
		return FG_EXIT_USAGE;
	}
	if (err) {
		fprintf(stderr, "fgfill: BPF_PROG_TEST_RUN: %s\n", strerror(-err));
		return 1;
	}
	return 0;
}
