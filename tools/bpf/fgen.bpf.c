// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fgen: packet generator programs, driven by tools/fgen.c.
 *
 * fgen       runs under BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES on a
 *            template frame built by userspace and returns XDP_TX, which
 *            test_run turns into a redirect out of ctx->ingress_ifindex
 *            (net/bpf/test_run.c xdp_test_run_batch). Per frame it writes the
 *            source address and every checksum that covers it.
 * fgen_sink  a receiver for tests and benchmarks: counts frames, optionally
 *            counts distinct source addresses, and passes or drops them.
 *
 * Live-frames mode copies data_in into a page only when the page pool
 * creates the page (xdp_test_run_init_page); recycled pages keep what the
 * previous run, or the receiver, wrote. So the program never reads the
 * frame back: it rewrites the headers (head[] below), writes the whole
 * source address and recomputes the checksums from sums of the rest of the
 * header that userspace precomputed (the *_sum0 constants), so every frame
 * is exact whatever the page held before.
 *
 * tools/fgen.c also keeps `fgen` attached (skb mode) to the egress device
 * during a run, only so that BPF_PROG_RUN skips the dispatcher's RCU wait;
 * generated frames carry FGEN_META_MAGIC in 4 bytes of XDP metadata and
 * everything else the device receives gets XDP_PASS untouched (or XDP_DROP
 * with --drop-rx).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define ETH_P_IP	0x0800
#define ETH_P_IPV6	0x86DD
#define ETH_P_8021Q	0x8100
#define ETH_P_8021AD	0x88A8
#define FGEN_META_MAGIC 0x4e454746 /* "FGEN", the 4 metadata bytes of generated frames */

enum fgen_src_mode {
	FGEN_SRC_FIXED = 0,    /* always base */
	FGEN_SRC_SEQ = 1,      /* base + counter % nsrc */
	FGEN_SRC_RAND_N = 2,   /* base + random % nsrc */
	FGEN_SRC_RAND_PFX = 3, /* base with the host bits (hostmask) random */
};

/* Generator settings, written by tools/fgen.c before load. */
const volatile __u32 src_mode = FGEN_SRC_FIXED;
const volatile __u32 nsrc = 1;
const volatile __u32 is_v6 = 0;
const volatile __u32 saddr_off = 26; /* offset of the source address in the frame */
const volatile __u32 ipcsum_off = 0; /* IPv4 header checksum offset, 0: none */
const volatile __u32 l4csum_off = 0; /* UDP/TCP/ICMPv6 checksum offset, 0: none */
const volatile __u32 l4_is_udp = 0;  /* a computed 0 is sent as 0xffff */
const volatile __u32 ip_sum0 = 0;    /* 16-bit word sum of the IPv4 header, saddr and csum zero */
const volatile __u32 l4_sum0 = 0;    /* same for pseudo-header + L4 header + payload */
/* Source base address and random host bits, in network byte order. IPv4
 * uses word 0; for IPv6 the counter or random offset goes into word 3. */
const volatile __u32 base[4] = {};
const volatile __u32 hostmask[4] = {};

/* The frame's first head_words 8-byte words as built (up to 128 bytes),
 * rewritten into every frame before the source address and checksums.
 * A recycled page holds whatever its last receiver left in it: a receiver
 * that passes a VLAN-tagged frame up the stack untags it in place (the MAC
 * header moves by 4 bytes), and one that answers by XDP_TX on veth (a SYN
 * cookie responder) turns the frame into its answer in place, and that
 * page comes back to the generator's pool. Without this copy 99% of a SYN
 * flood against floodgate's syn_auth were its own SYN-ACKs sent again. */
const volatile __u32 head_words = 0;
const volatile __u64 head[16] = {};

/*
 * The frame's length; userspace hands the kernel frame_len + 8 bytes and
 * the program trims the 8 off, so that its frame bounds always differ from
 * the page's first ones. Only then does test_run rewrite the page's
 * xdp_frame from the program's bounds after each run (ctx_was_changed in
 * net/bpf/test_run.c); else a recycled page keeps the length its last
 * receiver gave it (a SYN cookie answer is shorter than the SYN), and the
 * rewritten headers would go out in a frame too short for them.
 */
const volatile __u32 frame_len = 0;

/* What the device fgen keeps the program attached to receives: XDP_PASS,
 * or XDP_DROP (--drop-rx). */
const volatile __u32 rx_verdict = XDP_PASS;

/* Frames generated so far; the sequential source counter. Written by fgen. */
__u64 seq = 0;

/* Receiver settings, written by tools/fgen.c --sink before load. */
const volatile __u32 sink_verdict = XDP_PASS;
const volatile __u32 sink_track = 0;
/* Distinct sources fgen_sink has seen (when sink_track). Written by fgen_sink. */
__u64 sink_distinct = 0;

/* Frames fgen_sink has seen, one counter per CPU. Written by fgen_sink. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sink_cnt SEC(".maps");

struct fgen_addr {
	__u8 a[16];
};

/* Source addresses fgen_sink has seen (when sink_track). Written by fgen_sink. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 17);
	__type(key, struct fgen_addr);
	__type(value, __u8);
} sink_srcs SEC(".maps");

static __always_inline __u32 csum_add32(__u32 sum, __u32 w)
{
	/* w as it sits in memory; the 16-bit halves in host order, the same
	 * way userspace summed the rest of the header */
	return sum + (w & 0xffff) + (w >> 16);
}

static __always_inline __u16 csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

static __always_inline __u32 pick_offset(__u64 *ctr)
{
	__u32 n = nsrc ? nsrc : 1;

	if (src_mode == FGEN_SRC_SEQ)
		return (__u32)(__sync_fetch_and_add(ctr, 1) % n);
	if (src_mode == FGEN_SRC_RAND_N)
		return bpf_get_prandom_u32() % n;
	return 0;
}

SEC("xdp")
int fgen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	void *meta = (void *)(long)ctx->data_meta;
	__u32 w[4], sum, off, i, have;
	__u16 c;

	/* Only frames from tools/fgen.c carry the magic in their metadata;
	 * anything else is a real packet on the device fgen keeps this
	 * program attached to (see keep_dispatcher() there): leave it alone. */
	if (meta + 4 > data || *(__u32 *)meta != FGEN_META_MAGIC)
		return rx_verdict;
	have = ctx->data_end - ctx->data;
	if (have != frame_len) {
		if (bpf_xdp_adjust_tail(ctx, (int)frame_len - (int)have))
			return XDP_DROP;
		data = (void *)(long)ctx->data;
		data_end = (void *)(long)ctx->data_end;
	}
	if (data + saddr_off + 16 > data_end)
		return XDP_DROP;
	if (ipcsum_off && data + ipcsum_off + 2 > data_end)
		return XDP_DROP;
	if (l4csum_off && data + l4csum_off + 2 > data_end)
		return XDP_DROP;

#pragma unroll
	for (i = 0; i < 16; i++) {
		if (i >= head_words)
			break;
		if (data + (i + 1) * 8 > data_end)
			return XDP_DROP;
		((__u64 *)data)[i] = head[i];
	}
	if (src_mode != FGEN_SRC_SEQ)
		seq++; /* only this CPU runs the generator: no atomic needed */
	off = pick_offset(&seq);

	for (i = 0; i < 4; i++) {
		w[i] = base[i];
		if (src_mode == FGEN_SRC_RAND_PFX)
			w[i] = (w[i] & ~hostmask[i]) | (bpf_get_prandom_u32() & hostmask[i]);
	}
	if (is_v6)
		w[3] = bpf_htonl(bpf_ntohl(w[3]) + off);
	else
		w[0] = bpf_htonl(bpf_ntohl(w[0]) + off);

	if (is_v6) {
		__builtin_memcpy(data + saddr_off, w, 16);
		sum = l4_sum0;
		for (i = 0; i < 4; i++)
			sum = csum_add32(sum, w[i]);
	} else {
		__builtin_memcpy(data + saddr_off, w, 4);
		if (ipcsum_off) {
			c = csum_fold(csum_add32(ip_sum0, w[0]));
			__builtin_memcpy(data + ipcsum_off, &c, 2);
		}
		sum = csum_add32(l4_sum0, w[0]);
	}
	if (l4csum_off) {
		c = csum_fold(sum);
		if (l4_is_udp && c == 0)
			c = 0xffff;
		__builtin_memcpy(data + l4csum_off, &c, 2);
	}
	return XDP_TX;
}

SEC("xdp")
int fgen_sink(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct fgen_addr key = {};
	__u32 zero = 0, nh_off;
	__u8 one = 1;
	__u16 proto;
	__u64 *cnt;
	int i;

	cnt = bpf_map_lookup_elem(&sink_cnt, &zero);
	if (cnt)
		*cnt += 1;
	if (!sink_track)
		goto out;

	if ((void *)(eth + 1) > data_end)
		goto out;
	proto = eth->h_proto;
	nh_off = sizeof(*eth);
	for (i = 0; i < 2; i++) {
		struct vlan_hdr *vh = data + nh_off;

		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		if ((void *)(vh + 1) > data_end)
			goto out;
		proto = vh->h_vlan_encapsulated_proto;
		nh_off += sizeof(*vh);
	}
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = data + nh_off;

		if ((void *)(iph + 1) > data_end)
			goto out;
		__builtin_memcpy(key.a, &iph->saddr, 4);
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6h = data + nh_off;

		if ((void *)(ip6h + 1) > data_end)
			goto out;
		__builtin_memcpy(key.a, &ip6h->saddr, 16);
	} else {
		goto out;
	}
	if (bpf_map_update_elem(&sink_srcs, &key, &one, BPF_NOEXIST) == 0)
		__sync_fetch_and_add(&sink_distinct, 1);
out:
	return sink_verdict;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
