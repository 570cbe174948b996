// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fgen: a fast packet generator for floodgate's tests and benchmarks.
 *
 * Userspace builds one template frame (Ethernet, 802.1Q/802.1ad tags, IPv4
 * with options or IPv6 with destination-options headers, UDP / TCP / ICMP,
 * or a non-first fragment) and hands it to BPF_PROG_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES (Linux 5.18+, kernel commit b530e9e1063e). The
 * program `fgen` (bpf/fgen.bpf.c) writes the source address and the
 * checksums that cover it into each frame and returns XDP_TX, which
 * test_run turns into a redirect out of the device named in
 * xdp_md.ingress_ifindex. batch_size is 256, the kernel's maximum
 * (TEST_XDP_MAX_BATCH); it gave ~1.25x the default (64) here.
 *
 *   fgen -i DEV -d DST [-4|-6] [--udp|--syn|--tcp|--icmp] [-s SRC[/PLEN]]
 *        [--sources N] [--random] [--sport P] [--dport P] [--tcp-flags F]
 *        [-l FRAME_LEN] [-r PPS] [-n COUNT] [-t SECONDS] [--vlan ID]...
 *        [--ip-options N] [--ext-hdrs N] [--frag-offset N] [--cpu N]
 *        [--dst-mac MAC | --peer-ns NS --peer-dev DEV] [--json]
 *   fgen --sink -i DEV [--drop] [--track] [-t SECONDS] [--json]
 *
 * Sources: -s alone sends from one address; --sources N cycles through
 * SRC .. SRC+N-1; --sources N --random picks one of those at random per
 * frame; --random with -s PREFIX/PLEN (or no -s: any address) randomises
 * the host bits. For IPv6 the offset goes into the low 32 bits.
 *
 * Pacing (-r): time is cut into 1 ms slots; each slot runs as many frames
 * as are due, so the average rate is exact and bursts last at most 1 ms
 * (up to 100 ms worth are caught up at once after a stall).
 *
 * Speed: each BPF_PROG_RUN call adds and removes the program from the XDP
 * dispatcher, which waits for an RCU grace period (~20-25 ms here); fgen
 * avoids that by keeping the program attached to DEV in skb mode for the
 * run (keep_dispatcher() below; --no-attach turns it off; --native keeps
 * it in native mode instead, so that a veth DEV has NAPI and takes the
 * frames its peer answers by XDP_TX, counted in DEV's rx_queue_0_xdp_packets
 * and passed, or dropped with --drop-rx). -n and -t stop the run,
 * whichever comes first;
 * SIGINT/SIGTERM stop it between two BPF_PROG_RUN calls, so the count is
 * exact. "sent" counts frames the program returned XDP_TX for; frames the
 * device failed to transmit show up as "tx_dropped" (read from the
 * device's counters).
 *
 * Frame length (-l, default 64, or the headers if longer) is what the
 * receiver's XDP program sees, no FCS. Live-frames mode copies the frame
 * into one page, so the maximum is 3400 bytes on Linux 6.18 x86-64 (4 KB
 * minus XDP headroom, struct xdp_page_head, skb_shared_info, fgen's 4
 * metadata bytes and the FGEN_TRIM bytes the program trims off); jumbo
 * frames up to 9000 are refused by the kernel with EINVAL in this mode,
 * and -l above the device's MTU is refused by fgen.
 *
 * Receiving on veth: a veth accepts XDP_TX/redirected frames only when its
 * peer runs NAPI, that is when the peer has an XDP program attached or GRO
 * enabled. Verified on Linux 6.18: with neither, every frame is lost
 * silently (veth_xdp_xmit returns -ENXIO; no rx/tx/dropped counter of either
 * end moves, and fgen still reports them as sent); `ethtool -K PEER gro on`
 * inside the peer's namespace is enough (frames then go up the peer's
 * stack), and so is `fgen --sink -i PEER` (XDP_PASS, or --drop), which also
 * counts frames and, with --track, distinct source addresses. When the
 * peer's 256-frame XDP ring is full, frames are dropped and counted in the
 * sender's tx_dropped, which fgen reports.
 *
 * fgen opens no pinned object, so it runs fine under `ip netns exec` or
 * `nsenter --net=/run/netns/NS`; -i DEV must be in fgen's own namespace.
 * Exit status: 0 ok, 1 runtime failure, 2 bad arguments.
 */
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fgen.skel.h"
#include "lib/opts.h"

#define FGEN_MAX_FRAME 9018
#define FGEN_TRIM      8 /* bytes past the frame in data_in, trimmed off by the program */
#define FGEN_MAX_VLAN  4
#define FGEN_MAX_EXT   16
#define FGEN_BATCH     256 /* TEST_XDP_MAX_BATCH in net/bpf/test_run.c */
#define NSEC	       1000000000ull
#define SLOT_NS	       1000000ull /* pacing slot: 1 ms */

/* Must match enum fgen_src_mode in bpf/fgen.bpf.c. */
enum {
	SRC_FIXED,
	SRC_SEQ,
	SRC_RAND_N,
	SRC_RAND_PFX
};
enum {
	P_UDP,
	P_TCP,
	P_ICMP
};

struct opts {
	const char *ifname;
	int family; /* AF_INET, AF_INET6, 0: from -d */
	int proto;
	__u8 tcp_flags;
	bool have_src, have_dst, random, json, sink, sink_drop, sink_track, verbose;
	bool proto_set, tcp_flags_set;
	int src_family, dst_family;
	__u8 src[16], dst[16];
	int src_plen; /* -1: none given */
	__u32 nsrc;   /* 0: not given */
	__u16 sport, dport;
	__u32 frame_len; /* 0: default */
	__u64 rate, count, seconds;
	__u16 vlan[FGEN_MAX_VLAN];
	int nvlan;
	__u32 ip_opts, ext_hdrs, frag_off;
	int cpu; /* -1: no pinning */
	bool have_dmac;
	__u8 dmac[6];
	const char *peer_ns, *peer_dev;
	__u32 batch;
	bool no_attach; /* do not keep the program in the XDP dispatcher (see keep_dispatcher) */
	bool native;  /* keep it attached in native mode: DEV then receives XDP_TX answers (veth) */
	bool drop_rx; /* what DEV receives meanwhile: XDP_DROP, not XDP_PASS */
};

struct frame {
	__u8 buf[FGEN_MAX_FRAME];
	__u32 len;
	__u32 saddr_off, ipcsum_off, l4csum_off, l4_is_udp;
	__u32 ip_sum0, l4_sum0;
};

static bool verbose;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || (level == LIBBPF_INFO && !verbose))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int bad_arg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_arg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fgen: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (fgen --help for usage)\n");
	return 2;
}

static int parse_addr(const char *arg, int *family, __u8 *addr, int *plen, bool allow_plen)
{
	char buf[INET6_ADDRSTRLEN + 8];
	char *slash;
	__u64 v;

	if (strlen(arg) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, arg);
	slash = strchr(buf, '/');
	if (slash) {
		if (!allow_plen)
			return -EINVAL;
		*slash++ = '\0';
	}
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, buf, addr) == 1)
		*family = AF_INET;
	else if (inet_pton(AF_INET6, buf, addr) == 1)
		*family = AF_INET6;
	else
		return -EINVAL;
	*plen = -1;
	if (slash) {
		if (fg_opt_parse_u64(slash, 0, *family == AF_INET ? 32 : 128, &v))
			return -EINVAL;
		*plen = (int)v;
	}
	return 0;
}

static int parse_mac(const char *s, __u8 *mac)
{
	unsigned int b[6];
	char tail;
	int i;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &tail) != 6)
		return -EINVAL;
	for (i = 0; i < 6; i++)
		mac[i] = (__u8)b[i];
	return 0;
}

static int parse_tcp_flags(const char *s, __u8 *flags)
{
	static const char letters[] = "FSRPAUEC";
	const char *p;

	if (!*s)
		return -EINVAL;
	*flags = 0;
	for (; *s; s++) {
		p = strchr(letters, *s);
		if (!p || !*s)
			return -EINVAL;
		*flags |= 1u << (p - letters);
	}
	return 0;
}

/* ifindex, MAC and MTU of a device in the current namespace. */
static int dev_info(const char *ifname, int *ifindex, __u8 *mac, __u32 *mtu)
{
	struct ifreq ifr = {};
	int fd, err = 0;

	if (strlen(ifname) >= IFNAMSIZ)
		return -ENAMETOOLONG;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	strcpy(ifr.ifr_name, ifname);
	if (ioctl(fd, SIOCGIFINDEX, &ifr) < 0) {
		err = -errno;
		goto cleanup;
	}
	if (ifindex)
		*ifindex = ifr.ifr_ifindex;
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		err = -errno;
		goto cleanup;
	}
	memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	if (mtu) {
		if (ioctl(fd, SIOCGIFMTU, &ifr) < 0) {
			err = -errno;
			goto cleanup;
		}
		*mtu = (__u32)ifr.ifr_mtu;
	}
cleanup:
	close(fd);
	return err;
}

/* MAC of DEV in namespace NS (a name under /run/netns, or a path). */
static int peer_mac(const char *ns, const char *dev, __u8 *mac)
{
	char path[PATH_MAX];
	int self = -1, nsfd = -1, err = 0;

	if (strchr(ns, '/'))
		snprintf(path, sizeof(path), "%s", ns);
	else
		snprintf(path, sizeof(path), "/run/netns/%s", ns);
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return -errno;
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0) {
		err = -errno;
		goto cleanup;
	}
	if (setns(nsfd, CLONE_NEWNET) < 0) {
		err = -errno;
		goto cleanup;
	}
	err = dev_info(dev, NULL, mac, NULL);
	if (setns(self, CLONE_NEWNET) < 0) {
		/* cannot go home: sending from the wrong namespace is worse */
		perror("fgen: setns back");
		exit(1);
	}
cleanup:
	if (nsfd >= 0)
		close(nsfd);
	close(self);
	return err;
}

/* The first address of the family on DEV (IPv6: global before link-local). */
static int dev_addr(const char *ifname, int family, __u8 *addr)
{
	struct ifaddrs *ifa, *i;
	int err = -EADDRNOTAVAIL, rank = 0, r;

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || strcmp(i->ifa_name, ifname) || i->ifa_addr->sa_family != family)
			continue;
		if (family == AF_INET) {
			memcpy(addr, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
			err = 0;
			break;
		}
		struct in6_addr *a6 = &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;

		r = IN6_IS_ADDR_LINKLOCAL(a6) ? 1 : 2;
		if (r > rank) {
			memcpy(addr, a6, 16);
			rank = r;
			err = 0;
		}
	}
	freeifaddrs(ifa);
	return err;
}

/* tx_packets / tx_dropped of DEV, from the netlink stats getifaddrs reads. */
static int dev_tx_stats(const char *ifname, __u64 *tx, __u64 *dropped)
{
	struct ifaddrs *ifa, *i;
	int err = -ENODEV;

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || strcmp(i->ifa_name, ifname) ||
		    i->ifa_addr->sa_family != AF_PACKET || !i->ifa_data)
			continue;
		struct rtnl_link_stats *st = i->ifa_data;

		*tx = st->tx_packets;
		*dropped = st->tx_dropped;
		err = 0;
		break;
	}
	freeifaddrs(ifa);
	return err;
}

/* Ones' complement sum of 16-bit words as they sit in memory, in host
 * order, unfolded. bpf/fgen.bpf.c adds the source address the same way. */
static __u32 sum16(const void *p, size_t len)
{
	const __u8 *b = p;
	__u32 sum = 0;
	__u16 w;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		memcpy(&w, b + i, 2);
		sum += w;
	}
	if (len & 1) {
		__u8 last[2] = { b[len - 1], 0 };

		memcpy(&w, last, 2);
		sum += w;
	}
	return sum;
}

static __u16 fold(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

static void put16(__u8 *p, __u16 v)
{
	v = htons(v);
	memcpy(p, &v, 2);
}

static void put32(__u8 *p, __u32 v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

/*
 * Build the template into f. The source address is o->src; the program
 * rewrites it per frame, using f's offsets and the *_sum0 sums (the sums of
 * everything its checksum covers except the source address).
 */
static int build_frame(const struct opts *o, const __u8 *smac, const __u8 *dmac, __u32 mtu,
		       struct frame *f)
{
	bool v6 = o->family == AF_INET6;
	__u32 alen = v6 ? 16 : 4, l3, l4, hdr_end, len, l4len, iphl, i;
	__u8 l4proto, *b = f->buf;
	__u8 pseudo[40];
	__u32 psum;

	memset(f, 0, sizeof(*f));
	memcpy(b, dmac, 6);
	memcpy(b + 6, smac, 6);
	l3 = 12;
	for (i = 0; i < (__u32)o->nvlan; i++) {
		bool outer = o->nvlan > 1 && i + 1 < (__u32)o->nvlan;

		put16(b + l3, outer ? 0x88a8 : 0x8100);
		put16(b + l3 + 2, o->vlan[i]);
		l3 += 4;
	}
	put16(b + l3, v6 ? 0x86dd : 0x0800);
	l3 += 2;

	if (o->proto == P_UDP)
		l4proto = IPPROTO_UDP;
	else if (o->proto == P_TCP)
		l4proto = IPPROTO_TCP;
	else
		l4proto = v6 ? IPPROTO_ICMPV6 : IPPROTO_ICMP;

	iphl = v6 ? 40 + 8 * o->ext_hdrs + (o->frag_off ? 8 : 0) : 20 + o->ip_opts;
	l4 = l3 + iphl;
	hdr_end = l4;
	if (!o->frag_off)
		hdr_end += o->proto == P_UDP ? 8 : o->proto == P_TCP ? 20 : 8;

	len = o->frame_len ? o->frame_len : (hdr_end > 64 ? hdr_end : 64);
	if (len < hdr_end) {
		fprintf(stderr, "fgen: -l %u is shorter than the headers (%u bytes)\n", len,
			hdr_end);
		return -EINVAL;
	}
	if (len > FGEN_MAX_FRAME || len - l3 > mtu) {
		fprintf(stderr,
			"fgen: a %u-byte frame exceeds %s's MTU %u (+%u bytes of L2 header)\n", len,
			o->ifname, mtu, l3);
		return -EMSGSIZE;
	}
	f->len = len;
	l4len = len - l4;

	if (!v6) {
		b[l3] = 0x40 | (iphl / 4);
		put16(b + l3 + 2, (__u16)(len - l3));
		put16(b + l3 + 4, 0x4647);
		put16(b + l3 + 6, (__u16)(o->frag_off / 8)); /* MF clear: the last fragment */
		b[l3 + 8] = 64;
		b[l3 + 9] = l4proto;
		memcpy(b + l3 + 16, o->dst, 4);
		memset(b + l3 + 20, 1, o->ip_opts); /* NOP options */
		f->saddr_off = l3 + 12;
		f->ipcsum_off = l3 + 10;
		f->ip_sum0 = sum16(b + l3, iphl); /* saddr still zero */
		memcpy(b + l3 + 12, o->src, 4);
		{
			__u16 c = fold(sum16(b + l3, iphl));

			memcpy(b + l3 + 10, &c, 2);
		}
	} else {
		__u8 nh = o->ext_hdrs ? 60 : o->frag_off ? 44 : l4proto;
		__u32 p = l3 + 40;

		b[l3] = 0x60;
		put16(b + l3 + 4, (__u16)(len - l3 - 40));
		b[l3 + 6] = nh;
		b[l3 + 7] = 64;
		memcpy(b + l3 + 8, o->src, 16);
		memcpy(b + l3 + 24, o->dst, 16);
		for (i = 0; i < o->ext_hdrs; i++, p += 8) {
			b[p] = i + 1 < o->ext_hdrs ? 60 : o->frag_off ? 44 : l4proto;
			b[p + 1] = 0; /* 8 bytes */
			b[p + 2] = 1; /* PadN */
			b[p + 3] = 4;
		}
		if (o->frag_off) {
			b[p] = l4proto;
			put16(b + p + 2, (__u16)(o->frag_off)); /* offset << 3, M clear */
			put32(b + p + 4, 0x46474154);
		}
		f->saddr_off = l3 + 8;
	}

	if (o->frag_off) /* a non-first fragment carries no L4 header */
		return 0;

	/* pseudo-header without the source address */
	memset(pseudo, 0, sizeof(pseudo));
	if (!v6) {
		memcpy(pseudo + 4, o->dst, 4);
		pseudo[9] = l4proto;
		put16(pseudo + 10, (__u16)l4len);
		psum = sum16(pseudo, 12);
	} else {
		memcpy(pseudo + 16, o->dst, 16);
		put32(pseudo + 32, l4len);
		pseudo[39] = l4proto;
		psum = sum16(pseudo, 40);
	}

	switch (o->proto) {
	case P_UDP:
		put16(b + l4, o->sport);
		put16(b + l4 + 2, o->dport);
		put16(b + l4 + 4, (__u16)l4len);
		f->l4csum_off = l4 + 6;
		f->l4_is_udp = 1;
		break;
	case P_TCP:
		put16(b + l4, o->sport);
		put16(b + l4 + 2, o->dport);
		put32(b + l4 + 4, 1);
		if (o->tcp_flags & 0x10)
			put32(b + l4 + 8, 1);
		b[l4 + 12] = 5 << 4;
		b[l4 + 13] = o->tcp_flags;
		put16(b + l4 + 14, 65535);
		f->l4csum_off = l4 + 16;
		break;
	case P_ICMP:
		b[l4] = v6 ? 128 : 8;
		put16(b + l4 + 4, 0x4647);
		put16(b + l4 + 6, 1);
		if (v6)
			f->l4csum_off = l4 + 2;
		break;
	}
	if (f->l4csum_off) {
		__u16 c;

		f->l4_sum0 = psum + sum16(b + l4, l4len);
		c = fold(f->l4_sum0 + sum16(o->src, alen));
		if (f->l4_is_udp && !c)
			c = 0xffff;
		memcpy(b + f->l4csum_off, &c, 2);
	} else {
		/* ICMPv4: no pseudo-header, the source never enters the checksum */
		__u16 c = fold(sum16(b + l4, l4len));

		memcpy(b + l4 + 2, &c, 2);
	}
	return 0;
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * NSEC + (__u64)ts.tv_nsec;
}

static void sleep_until(__u64 t)
{
	struct timespec ts = { .tv_sec = (time_t)(t / NSEC), .tv_nsec = (long)(t % NSEC) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* SIGINT/SIGTERM stay blocked; the loops poll for them between runs so a
 * BPF_PROG_RUN is never cut short (it would return -EINTR without saying
 * how many frames it sent). */
static bool stop_pending(void)
{
	sigset_t set;

	if (sigpending(&set))
		return false;
	return sigismember(&set, SIGINT) || sigismember(&set, SIGTERM) || sigismember(&set, SIGHUP);
}

static int block_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	return sigprocmask(SIG_BLOCK, &set, NULL) ? -errno : 0;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void set_source_config(const struct opts *o, struct fgen_bpf *skel)
{
	bool v6 = o->family == AF_INET6;
	int alen = v6 ? 16 : 4, bits, i;
	__u8 hm[16] = {};

	skel->rodata->is_v6 = v6;
	memcpy((void *)skel->rodata->base, o->src, alen);
	if (o->random && !o->nsrc) {
		skel->rodata->src_mode = SRC_RAND_PFX;
		bits = o->src_plen < 0 ? 0 : o->src_plen;
		for (i = 0; i < alen * 8; i++)
			if (i >= bits)
				hm[i / 8] |= (__u8)(0x80 >> (i % 8));
		memcpy((void *)skel->rodata->hostmask, hm, alen);
	} else if (o->nsrc > 1) {
		skel->rodata->src_mode = o->random ? SRC_RAND_N : SRC_SEQ;
		skel->rodata->nsrc = o->nsrc;
	} else {
		skel->rodata->src_mode = SRC_FIXED;
	}
}

/* The generator's settings for template f: its source addresses and checksum offsets. */
static void gen_config(const struct opts *o, const struct frame *f, struct fgen_bpf *skel)
{
	set_source_config(o, skel);
	skel->rodata->saddr_off = f->saddr_off;
	skel->rodata->ipcsum_off = f->ipcsum_off;
	skel->rodata->l4csum_off = f->l4csum_off;
	skel->rodata->l4_is_udp = f->l4_is_udp;
	skel->rodata->ip_sum0 = f->ip_sum0;
	skel->rodata->l4_sum0 = f->l4_sum0;
	skel->rodata->rx_verdict = o->drop_rx ? XDP_DROP : XDP_PASS;
	skel->rodata->frame_len = f->len;
	/* see head[] in bpf/fgen.bpf.c: every frame's headers as built */
	skel->rodata->head_words =
		(f->len < sizeof(skel->rodata->head) ? f->len : sizeof(skel->rodata->head)) / 8;
	memcpy((void *)skel->rodata->head, f->buf, skel->rodata->head_words * 8);
	bpf_program__set_autoload(skel->progs.fgen_sink, false);
}

/* fgen's BPF object opened, set up to generate f (or, f NULL, as the sink) and
 * loaded into *out. 0 or -errno, said on stderr. */
static int skel_load(const struct opts *o, const struct frame *f, struct fgen_bpf **out)
{
	struct fgen_bpf *skel = fgen_bpf__open();
	int err;

	if (!skel) {
		err = -errno;
		fprintf(stderr, "fgen: opening the BPF skeleton: %s\n", strerror(-err));
		return err;
	}
	if (f) {
		gen_config(o, f, skel);
	} else {
		skel->rodata->sink_verdict = o->sink_drop ? XDP_DROP : XDP_PASS;
		skel->rodata->sink_track = o->sink_track;
	}
	err = fgen_bpf__load(skel);
	if (err) {
		fprintf(stderr, "fgen: loading the BPF program%s: %s\n", f ? "" : "s",
			strerror(-err));
		fgen_bpf__destroy(skel);
		return err;
	}
	*out = skel;
	return 0;
}

static int run_sink(const struct opts *o, int ifindex)
{
	struct fgen_bpf *skel = NULL;
	struct bpf_link *link = NULL;
	__u64 total = 0, *vals = NULL, t0, elapsed;
	__u32 zero = 0;
	int err, ncpu, i;
	struct timespec ts, *tsp = NULL;
	sigset_t set;

	err = skel_load(o, NULL, &skel);
	if (err)
		goto cleanup;
	link = bpf_program__attach_xdp(skel->progs.fgen_sink, ifindex);
	if (!link) {
		err = -errno;
		fprintf(stderr, "fgen: attaching XDP to %s: %s\n", o->ifname, strerror(-err));
		goto cleanup;
	}
	t0 = now_ns();
	/* the ready line tells scripts the program is attached */
	fprintf(o->json ? stderr : stdout, "fgen: sink ready on %s (%s)\n", o->ifname,
		o->sink_drop ? "drop" : "pass");
	fflush(o->json ? stderr : stdout);

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (o->seconds) {
		ts.tv_sec = (time_t)o->seconds;
		ts.tv_nsec = 0;
		tsp = &ts;
	}
	while (sigtimedwait(&set, NULL, tsp) < 0 && errno == EINTR)
		;
	elapsed = now_ns() - t0;
	bpf_link__destroy(link);
	link = NULL;

	ncpu = libbpf_num_possible_cpus();
	if (ncpu < 0) {
		err = ncpu;
		goto cleanup;
	}
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = bpf_map_lookup_elem(bpf_map__fd(skel->maps.sink_cnt), &zero, vals);
	if (err) {
		err = -errno;
		fprintf(stderr, "fgen: reading the sink counter: %s\n", strerror(-err));
		goto cleanup;
	}
	for (i = 0; i < ncpu; i++)
		total += vals[i];
	if (o->json) {
		printf("{\"ifname\":");
		json_str(o->ifname);
		printf(",\"received\":%llu,\"distinct_sources\":%llu,\"elapsed_s\":%.6f}\n",
		       (unsigned long long)total, (unsigned long long)skel->bss->sink_distinct,
		       (double)elapsed / NSEC);
	} else {
		printf("fgen: sink received %llu packets", (unsigned long long)total);
		if (o->sink_track)
			printf(", %llu distinct sources",
			       (unsigned long long)skel->bss->sink_distinct);
		printf(" in %.3f s\n", (double)elapsed / NSEC);
	}
cleanup:
	free(vals);
	bpf_link__destroy(link);
	fgen_bpf__destroy(skel);
	return err;
}

/*
 * Each BPF_PROG_RUN puts the program into the XDP dispatcher and takes it
 * out again (bpf_prog_change_xdp() in bpf_prog_test_run_xdp), and each
 * change waits for an RCU grace period: ~20-25 ms per call here, whatever
 * the repeat count (seen in /proc/PID/stack: synchronize_rcu_normal under
 * bpf_dispatcher_change_prog). While the program is attached to a device
 * the dispatcher holds a reference and test_run's changes are no-ops
 * (kernel/bpf/dispatcher.c). So attach it, in generic (skb) mode, to the
 * egress device itself for the run, through a bpf_link that goes away with
 * fgen (native mode with --native). Real packets received there carry no
 * FGEN_META_MAGIC and get XDP_PASS (XDP_DROP with --drop-rx). Returns the
 * link fd or a negative errno.
 */
static int keep_dispatcher(int prog_fd, int ifindex, bool native)
{
	LIBBPF_OPTS(bpf_link_create_opts, lo,
		    .flags = native ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE);
	int fd;

	fd = bpf_link_create(prog_fd, ifindex, BPF_XDP, &lo);
	return fd < 0 ? -errno : fd;
}

static __u64 frames_due(__u64 t0, __u64 t, __u64 rate)
{
	/* one frame at t0, then rate per second */
	return (__u64)((unsigned __int128)(t - t0) * rate / NSEC) + 1;
}

static int run_gen(const struct opts *o, int ifindex, const struct frame *f)
{
	struct fgen_bpf *skel = NULL;
	/* FGEN_TRIM spare bytes past the frame: see frame_len in bpf/fgen.bpf.c */
	struct xdp_md md = { .data = 4,
			     .data_end = 4 + f->len + FGEN_TRIM,
			     .ingress_ifindex = (__u32)ifindex };
	__u64 sent = 0, t0, t, elapsed, deadline = 0, chunk = 1u << 16, n, due;
	__u64 tx0 = 0, drop0 = 0, tx1 = 0, drop1 = 0;
	__u8 *data_in = NULL;
	bool have_stats;
	int err, prog_fd, link_fd = -1;
	__u32 magic = 0x4e454746; /* FGEN_META_MAGIC in bpf/fgen.bpf.c */

	data_in = calloc(1, 4 + f->len + FGEN_TRIM);
	if (!data_in) {
		err = -ENOMEM;
		goto cleanup;
	}
	memcpy(data_in, &magic, 4);
	memcpy(data_in + 4, f->buf, f->len);

	err = skel_load(o, f, &skel);
	if (err)
		goto cleanup;
	prog_fd = bpf_program__fd(skel->progs.fgen);
	if (!o->no_attach) {
		link_fd = keep_dispatcher(prog_fd, ifindex, o->native);
		if (link_fd < 0)
			fprintf(stderr,
				"fgen: note: cannot attach to %s in %s mode (%s); every "
				"BPF_PROG_RUN call will wait for an RCU grace period\n",
				o->ifname, o->native ? "native" : "skb", strerror(-link_fd));
	}

	if (o->cpu >= 0) {
		cpu_set_t cs;

		CPU_ZERO(&cs);
		CPU_SET(o->cpu, &cs);
		if (sched_setaffinity(0, sizeof(cs), &cs)) {
			err = -errno;
			fprintf(stderr, "fgen: pinning to CPU %d: %s\n", o->cpu, strerror(-err));
			goto cleanup;
		}
	}

	have_stats = dev_tx_stats(o->ifname, &tx0, &drop0) == 0;
	t0 = now_ns();
	if (o->seconds)
		deadline = t0 + o->seconds * NSEC;
	for (;;) {
		LIBBPF_OPTS(bpf_test_run_opts, ro, .data_in = data_in,
			    .data_size_in = 4 + f->len + FGEN_TRIM, .ctx_in = &md,
			    .ctx_size_in = sizeof(md), .flags = BPF_F_TEST_XDP_LIVE_FRAMES,
			    .batch_size = o->batch);
		__u64 r0, dt;

		if (stop_pending())
			break;
		t = now_ns();
		if (deadline && t >= deadline)
			break;
		if (o->count && sent >= o->count)
			break;
		if (o->rate) {
			/* what is due by now; after a stall catch up 100 ms at most at once */
			due = frames_due(t0, t, o->rate);
			n = due > sent ? due - sent : 0;
			if (n > o->rate / 10 + 1)
				n = o->rate / 10 + 1;
		} else {
			n = chunk;
			if (deadline && sent) {
				/* do not overshoot -t by more than a little */
				__u64 left = (__u64)((unsigned __int128)(deadline - t) * sent /
						     (t - t0 + 1));

				if (n > left)
					n = left > 256 ? left : 256;
			}
		}
		if (o->count && n > o->count - sent)
			n = o->count - sent;
		if (n) {
			ro.repeat = n > UINT32_MAX ? UINT32_MAX : (__u32)n;
			r0 = now_ns();
			err = bpf_prog_test_run_opts(prog_fd, &ro);
			if (err) {
				fprintf(stderr, "fgen: BPF_PROG_RUN on %s: %s%s\n", o->ifname,
					strerror(-err),
					err == -EINVAL && f->len > 3000 ?
						" (live-frames mode fits at most 3400 bytes per frame on Linux 6.18 x86-64)" :
						"");
				goto cleanup;
			}
			/* live mode reports no retval; the program counts the
			 * frames it returned XDP_TX for in .bss */
			sent = skel->bss->seq;
			if (sent == 0) {
				err = -EPROTO;
				fprintf(stderr, "fgen: the generator rejected the frame\n");
				goto cleanup;
			}
			dt = now_ns() - r0;
			/* unpaced: grow the calls to 20-80 ms each */
			if (dt < 20000000ull && chunk < (1ull << 28))
				chunk *= 2;
			else if (dt > 80000000ull && chunk > 256)
				chunk /= 2;
		}
		if (o->rate) {
			__u64 wake, next_pkt;

			t = now_ns();
			if (frames_due(t0, t, o->rate) > sent)
				continue; /* behind: catch up at once */
			/* the next 1 ms slot, or the next frame if that is later */
			wake = t0 + ((t - t0) / SLOT_NS + 1) * SLOT_NS;
			next_pkt = t0 + (__u64)((unsigned __int128)sent * NSEC / o->rate);
			if (next_pkt > wake)
				wake = next_pkt;
			if (deadline && wake > deadline)
				wake = deadline;
			sleep_until(wake);
		}
	}
	elapsed = now_ns() - t0;
	if (have_stats && dev_tx_stats(o->ifname, &tx1, &drop1))
		have_stats = false;

	double secs = (double)elapsed / NSEC;
	double pps = secs > 0 ? (double)sent / secs : 0;

	if (o->json) {
		printf("{\"ifname\":");
		json_str(o->ifname);
		printf(",\"packets\":%llu,\"elapsed_s\":%.6f,\"pps\":%.0f,\"bps\":%.0f,\"frame_len\":%u",
		       (unsigned long long)sent, secs, pps, pps * f->len * 8, f->len);
		if (have_stats)
			printf(",\"tx_dropped\":%llu", (unsigned long long)(drop1 - drop0));
		printf("}\n");
	} else {
		printf("fgen: sent %llu packets in %.3f s: %.0f pps, %.1f Mbit/s (%u-byte frames)\n",
		       (unsigned long long)sent, secs, pps, pps * f->len * 8 / 1e6, f->len);
		if (have_stats && drop1 != drop0)
			printf("fgen: %s counted %llu tx_dropped meanwhile (peer's XDP ring full?)\n",
			       o->ifname, (unsigned long long)(drop1 - drop0));
	}
	err = 0;
cleanup:
	if (link_fd >= 0)
		close(link_fd);
	fgen_bpf__destroy(skel);
	free(data_in);
	return err;
}

/* --- options (declared through user/lib/opts.h) ------------------------------------ */

/* The options whose value a parser reads into struct opts, each with a flag
 * that says it was given; opt_parsed's ival is the index here. */
enum {
	PO_SRC,
	PO_DST,
	PO_TCP_FLAGS,
	PO_DMAC
};
static const struct {
	const char *noun, *want; /* "bad <noun> 'VALUE': want <want>" */
	size_t given;		 /* offsetof the flag */
} parsed_opts[] = {
	[PO_SRC] = { "source", "an address or ADDR/PLEN", offsetof(struct opts, have_src) },
	[PO_DST] = { "destination", "an IPv4 or IPv6 address", offsetof(struct opts, have_dst) },
	[PO_TCP_FLAGS] = { "TCP flags", "letters of FSRPAUEC",
			   offsetof(struct opts, tcp_flags_set) },
	[PO_DMAC] = { "MAC", "xx:xx:xx:xx:xx:xx", offsetof(struct opts, have_dmac) },
};

static int opt_parsed(const struct fg_opt *opt, const char *val, void *cfg, char *why)
{
	struct opts *o = cfg;
	int err, plen;

	switch (opt->ival) {
	case PO_SRC:
		err = parse_addr(val, &o->src_family, o->src, &o->src_plen, true);
		break;
	case PO_DST:
		err = parse_addr(val, &o->dst_family, o->dst, &plen, false);
		break;
	case PO_TCP_FLAGS:
		err = parse_tcp_flags(val, &o->tcp_flags);
		break;
	default:
		err = parse_mac(val, o->dmac);
		break;
	}
	if (err)
		return fg_opt_fail(why, "bad %s '%s': want %s", parsed_opts[opt->ival].noun, val,
				   parsed_opts[opt->ival].want);
	*(bool *)((char *)o + parsed_opts[opt->ival].given) = true;
	return 0;
}

static int opt_proto(const struct fg_opt *opt, const char *val, void *cfg, char *why)
{
	struct opts *o = cfg;

	(void)val;
	if (o->proto_set)
		return fg_opt_fail(why, "give one of --udp, --syn, --tcp, --icmp");
	o->proto_set = true;
	o->proto = opt->ival;
	return 0;
}

static int opt_vlan(const struct fg_opt *opt, const char *val, void *cfg, char *why)
{
	struct opts *o = cfg;
	__u64 v;

	(void)opt;
	if (o->nvlan >= FGEN_MAX_VLAN)
		return fg_opt_fail(why, "at most %d --vlan tags", FGEN_MAX_VLAN);
	if (fg_opt_parse_u64(val, 0, 4095, &v))
		return fg_opt_fail(why, "bad VLAN id '%s': want 0..4095", val);
	o->vlan[o->nvlan++] = (__u16)v;
	return 0;
}

/* --ip-options (ival 4: 0..40) and --frag-offset (ival 8: 8..65528): multiples of ival */
static int opt_multiple(const struct fg_opt *opt, const char *val, void *cfg, char *why)
{
	struct opts *o = cfg;
	bool ipopt = opt->ival == 4;
	__u64 lo = ipopt ? 0 : 8, hi = ipopt ? 40 : 65528, v;

	if (fg_opt_parse_u64(val, lo, hi, &v) || v % (__u64)opt->ival)
		return fg_opt_fail(why, "bad value '%s': want %llu..%llu, a multiple of %d", val,
				   (unsigned long long)lo, (unsigned long long)hi, opt->ival);
	*(ipopt ? &o->ip_opts : &o->frag_off) = (__u32)v;
	return 0;
}

static int opt_cpu(const struct fg_opt *opt, const char *val, void *cfg, char *why)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	struct opts *o = cfg;
	__u64 v;

	(void)opt;
	if (fg_opt_parse_u64(val, 0, ncpu > 0 ? (__u64)ncpu - 1 : 0, &v))
		return fg_opt_fail(why, "bad CPU '%s': want 0..%ld", val, ncpu - 1);
	o->cpu = (int)v;
	return 0;
}

#define O struct opts
static const struct fg_opt fgen_opts[] = {
	FG_OPT_STR("interface", 'i', O, ifname, "DEV",
		   "device to send from (in fgen's network namespace)"),
	FG_OPT_CHOICE(NULL, '4', O, family, AF_INET, "-4 and -6 exclude each other",
		      "IPv4 (default: the family of -d)"),
	FG_OPT_CHOICE(NULL, '6', O, family, AF_INET6, "-4 and -6 exclude each other", "IPv6"),
	FG_OPT_FUNC("udp", 0, opt_proto, P_UDP, NULL, "UDP (the default)"),
	FG_OPT_FUNC("syn", 0, opt_proto, P_TCP, NULL, "TCP SYN"),
	FG_OPT_FUNC("tcp", 0, opt_proto, P_TCP, NULL, "TCP (flags: --tcp-flags, default S)"),
	FG_OPT_FUNC("icmp", 0, opt_proto, P_ICMP, NULL, "ICMP or ICMPv6 echo request"),
	FG_OPT_FUNC("tcp-flags", 0, opt_parsed, PO_TCP_FLAGS, "F",
		    "TCP flags as letters of FSRPAUEC, e.g. S or SA"),
	FG_OPT_FUNC("src", 's', opt_parsed, PO_SRC, "A[/PLEN]",
		    "source address or prefix (default: DEV's address)"),
	FG_OPT_FUNC("dst", 'd', opt_parsed, PO_DST, "A", "destination address"),
	FG_OPT_U32("sources", 0, O, nsrc, "N", 1, UINT32_MAX, "a number of sources",
		   "N sources SRC..SRC+N-1, in turn (or at random with --random)"),
	FG_OPT_BOOL("random", 0, O, random,
		    "random sources: one of N, or random host bits of -s's prefix"),
	FG_OPT_U16("sport", 0, O, sport, "P", 0, 65535, "a port",
		   "UDP/TCP source port (default 40000)"),
	FG_OPT_U16("dport", 0, O, dport, "P", 0, 65535, "a port",
		   "UDP/TCP destination port (default 9)"),
	FG_OPT_U32("len", 'l', O, frame_len, "BYTES", 14, FGEN_MAX_FRAME, "a frame length",
		   "frame length without FCS (default 64 or the headers)"),
	FG_OPT_U64("rate", 'r', O, rate, "PPS", 1, 1000000000ull, "a rate in frames/s",
		   "pace to PPS frames per second (default: as fast as possible)"),
	FG_OPT_U64("count", 'n', O, count, "N", 1, UINT64_MAX, "a frame count",
		   "stop after N frames"),
	FG_OPT_U64("time", 't', O, seconds, "SECONDS", 1, 1000000, "a number of seconds",
		   "stop after SECONDS (generator or sink)"),
	FG_OPT_FUNC("vlan", 0, opt_vlan, 0, "ID",
		    "add an 802.1Q tag; twice for QinQ (outer 802.1ad), at most 4"),
	FG_OPT_FUNC("ip-options", 0, opt_multiple, 4, "N",
		    "N bytes (multiple of 4, <= 40) of IPv4 NOP options"),
	FG_OPT_U32("ext-hdrs", 0, O, ext_hdrs, "N", 0, FGEN_MAX_EXT, "a header count",
		   "N IPv6 destination-options headers (<= 16)"),
	FG_OPT_FUNC("frag-offset", 0, opt_multiple, 8, "N",
		    "send non-first fragments at byte offset N (multiple of 8)"),
	FG_OPT_FUNC("dst-mac", 0, opt_parsed, PO_DMAC, "MAC",
		    "destination MAC (default: broadcast)"),
	FG_OPT_STR("peer-ns", 0, O, peer_ns, "NS",
		   "with --peer-dev: take the destination MAC from DEV in namespace NS"),
	FG_OPT_STR("peer-dev", 0, O, peer_dev, "DEV", "see --peer-ns"),
	FG_OPT_FUNC("cpu", 0, opt_cpu, 0, "N", "run the generator on CPU N"),
	FG_OPT_U32("batch", 0, O, batch, "N", 1, FGEN_BATCH, "a batch size",
		   "live-frames batch size, 1..256 (default 256)"),
	FG_OPT_BOOL("no-attach", 0, O, no_attach,
		    "do not keep the generator attached to DEV (each run then waits ~20 ms)"),
	FG_OPT_BOOL(
		"native", 0, O, native,
		"keep it attached in native mode: a veth DEV then takes its peer's XDP_TX answers"),
	FG_OPT_BOOL("drop-rx", 0, O, drop_rx,
		    "drop (XDP_DROP) what DEV receives while fgen runs, instead of passing it"),
	FG_OPT_BOOL("sink", 0, O, sink,
		    "attach a counting XDP receiver to DEV until -t or a signal"),
	FG_OPT_BOOL("drop", 0, O, sink_drop, "(sink) drop frames instead of passing them"),
	FG_OPT_BOOL("track", 0, O, sink_track,
		    "(sink) count distinct source addresses (up to 131072)"),
	FG_OPT_BOOL("json", 0, O, json, "print the result as one JSON object"),
	FG_OPT_BOOL("verbose", 'v', O, verbose, "show libbpf's messages"),
	FG_OPT_HELP_END("this help"),
};
#undef O

FG_DEFINE_PROG(fgen_prog, "fgen", "-i DEV -d DST [options]", fgen_opts,
	       .help = "Generate frames out of DEV; or, as a receiver:\n"
		       "  fgen --sink -i DEV [--drop] [--track] [-t SECONDS] [--json]");

/* What the table cannot check: options that go together or exclude each other. */
static int check_opts(struct opts *o)
{
	if (!o->ifname)
		return bad_arg("-i DEV is required");
	if (o->sink) {
		if (o->have_dst || o->have_src || o->rate || o->count || o->native || o->drop_rx)
			return bad_arg("--sink takes only -i, -t, --drop, --track, --json");
		return 0;
	}
	if (o->sink_drop || o->sink_track)
		return bad_arg("--drop and --track go with --sink");
	if (o->no_attach && (o->native || o->drop_rx))
		return bad_arg(
			"--native and --drop-rx need the attached program: not with --no-attach");
	if (!o->have_dst)
		return bad_arg("-d DST is required");
	if (!o->family)
		o->family = o->dst_family;
	if (o->dst_family != o->family)
		return bad_arg("-d is not an %s address", o->family == AF_INET ? "IPv4" : "IPv6");
	if (o->have_src && o->src_family != o->family)
		return bad_arg("-s and -d are of different address families");
	if (o->tcp_flags_set && o->proto != P_TCP) {
		if (o->proto_set)
			return bad_arg("--tcp-flags goes with --tcp or --syn");
		o->proto = P_TCP;
	}
	if (o->family == AF_INET && o->ext_hdrs)
		return bad_arg("--ext-hdrs is for IPv6");
	if (o->family == AF_INET6 && o->ip_opts)
		return bad_arg("--ip-options is for IPv4");
	if ((o->peer_ns != NULL) != (o->peer_dev != NULL))
		return bad_arg("--peer-ns and --peer-dev go together");
	if (o->peer_ns && o->have_dmac)
		return bad_arg("give --dst-mac or --peer-ns/--peer-dev, not both");
	if (o->random && !o->nsrc && o->have_src && o->src_plen < 0)
		return bad_arg("--random needs --sources N or a prefix -s ADDR/PLEN");
	if (o->nsrc > 1 && o->src_plen >= 0 && o->family == AF_INET && o->src_plen > 0 &&
	    (__u64)o->nsrc > (1ull << (32 - o->src_plen)))
		return bad_arg("--sources %u does not fit in a /%d", o->nsrc, o->src_plen);
	if (o->random && !o->nsrc && !o->have_src)
		o->src_plen = 0; /* any source at all */
	if (o->random && !o->nsrc)
		o->have_src = true;
	return 0;
}

/* -1: go on; else the exit status (0 after --help, 2 on bad arguments). */
static int parse_args(int argc, char **argv, struct opts *o)
{
	struct fg_parsed p;
	int rc;

	memset(o, 0, sizeof(*o));
	o->src_plen = -1;
	o->sport = 40000;
	o->dport = 9;
	o->cpu = -1;
	o->batch = FGEN_BATCH;
	o->tcp_flags = 0x02;
	rc = fg_prog_args(&fgen_prog, argc, argv, o, &p);
	if (rc >= 0)
		return rc;
	return check_opts(o) ? FG_EXIT_USAGE : -1;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct frame *f = NULL;
	__u8 smac[6], dmac[6];
	__u32 mtu;
	int err, ifindex;

	err = parse_args(argc, argv, &o);
	if (err >= 0)
		return err;
	verbose = o.verbose;
	libbpf_set_print(libbpf_print);

	err = dev_info(o.ifname, &ifindex, smac, &mtu);
	if (err) {
		fprintf(stderr, "fgen: device %s: %s (fgen must run in DEV's network namespace)\n",
			o.ifname, strerror(-err));
		return 1;
	}
	err = block_signals();
	if (err) {
		fprintf(stderr, "fgen: blocking signals: %s\n", strerror(-err));
		return 1;
	}
	if (o.sink)
		return run_sink(&o, ifindex) ? 1 : 0;

	if (!o.have_src) {
		err = dev_addr(o.ifname, o.family, o.src);
		if (err) {
			fprintf(stderr, "fgen: %s has no %s address; give -s\n", o.ifname,
				o.family == AF_INET ? "IPv4" : "IPv6");
			return 2;
		}
	}
	if (o.have_dmac) {
		memcpy(dmac, o.dmac, 6);
	} else if (o.peer_ns) {
		err = peer_mac(o.peer_ns, o.peer_dev, dmac);
		if (err) {
			fprintf(stderr, "fgen: MAC of %s in namespace %s: %s\n", o.peer_dev,
				o.peer_ns, strerror(-err));
			return 1;
		}
	} else {
		memset(dmac, 0xff, 6);
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		fprintf(stderr, "fgen: out of memory\n");
		return 1;
	}
	err = build_frame(&o, smac, dmac, mtu, f);
	if (err) {
		free(f);
		return 2;
	}
	err = run_gen(&o, ifindex, f);
	free(f);
	return err ? 1 : 0;
}
