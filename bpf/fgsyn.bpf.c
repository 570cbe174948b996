// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fgsyn: the tc ingress half of SYN authentication's handoff way
 * (docs/syn-auth.md). An ACK that the XDP program admitted with a valid
 * cookie carries its approval in XDP metadata (struct fg_sameta: the
 * ACK's ack number and the attributes its cookie encodes); this program
 * finds the listener and gives it the connection with the kfunc
 * bpf_sk_assign_tcp_reqsk (6.9+), which makes the kernel create the
 * connection as from one of its own SYN cookies. Anything without an
 * approval passes untouched: this program never decides what XDP did not
 * admit. Attached by floodgated next to the XDP program (tcx, or clsact).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "floodgate.h"
#include "fg_common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define TC_ACT_UNSPEC (-1) /* tcx: the next program; clsact: the next filter */
#define TC_ACT_OK     0
#define TC_ACT_SHOT   2
#define FG_TCP_LISTEN 10

extern int bpf_sk_assign_tcp_reqsk(struct __sk_buff *skb, struct sock *sk,
				   struct bpf_tcp_req_attrs *attrs, int attrs__sz) __ksym;

/* Counters per CPU (enum fg_syn_stat); read by the daemon. */
FG_MAP(fg_systat, BPF_MAP_TYPE_PERCPU_ARRAY, 1, 0, __u32, struct fg_systat);

static __always_inline int fg_syn_count(__u32 what, int verdict)
{
	struct fg_systat *st;
	__u32 k = 0;

	st = bpf_map_lookup_elem(&fg_systat, &k);
	if (st && what < FG_SYN_NSTAT)
		st->n[what]++;
	return verdict;
}

SEC("tc")
int fg_syn(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct fg_sameta *m = (void *)(long)skb->data_meta;
	struct bpf_tcp_req_attrs attrs = {};
	struct bpf_sock_tuple tu = {};
	struct bpf_sock *skc;
	struct tcp_sock *tp;
	__u8 *c = data, *tcp;
	__u32 sz, off = 14;
	__u16 proto;
	int ret;

	/* no approval: nothing to do (metadata is only ever written by XDP) */
	if ((void *)(m + 1) > data || m->magic != FG_SAMETA_MAGIC)
		return TC_ACT_UNSPEC;
	if ((void *)(c + 14) > end)
		return TC_ACT_UNSPEC;
	proto = (__u16)c[12] << 8 | c[13];
	/* a tag the driver left in the frame (else it is in skb->vlan_tci) */
	if (proto == 0x8100 || proto == 0x88A8) {
		if ((void *)(c + 18) > end)
			return TC_ACT_UNSPEC;
		proto = (__u16)c[16] << 8 | c[17];
		off = 18;
	}
	if (proto == 0x0800) {
		__u32 ihl;

		if ((void *)(c + off + 20) > end)
			return TC_ACT_UNSPEC;
		ihl = (c[off] & 0xf) * 4;
		if (ihl < 20 || ihl > 60)
			return TC_ACT_UNSPEC;
		__builtin_memcpy(&tu.ipv4.saddr, c + off + 12, 8);
		tcp = c + off + ihl;
		sz = sizeof(tu.ipv4);
		if ((void *)(tcp + 20) > end)
			return TC_ACT_UNSPEC;
		__builtin_memcpy(&tu.ipv4.sport, tcp, 4);
	} else if (proto == 0x86DD) {
		if ((void *)(c + off + 40) > end)
			return TC_ACT_UNSPEC;
		__builtin_memcpy(tu.ipv6.saddr, c + off + 8, 32);
		tcp = c + off + 40;
		sz = sizeof(tu.ipv6);
		if ((void *)(tcp + 20) > end)
			return TC_ACT_UNSPEC;
		__builtin_memcpy(&tu.ipv6.sport, tcp, 4);
	} else {
		return TC_ACT_UNSPEC;
	}
	/* the approval is this segment's: same ack number */
	if (__builtin_memcmp(tcp + 8, &m->ack, 4))
		return fg_syn_count(FG_SYN_NOMETA, TC_ACT_UNSPEC);

	skc = bpf_skc_lookup_tcp(skb, &tu, sz, BPF_F_CURRENT_NETNS, 0);
	if (!skc)
		return fg_syn_count(FG_SYN_NOLISTEN, TC_ACT_UNSPEC);
	if (skc->state != FG_TCP_LISTEN) {
		/* the connection exists already (a data segment after the
		 * handshake, which carries the same cookie) */
		bpf_sk_release(skc);
		return TC_ACT_UNSPEC;
	}
	tp = bpf_skc_to_tcp_sock(skc);
	if (!tp) {
		bpf_sk_release(skc);
		return fg_syn_count(FG_SYN_FAIL, TC_ACT_SHOT);
	}
	attrs.mss = m->mss;
	attrs.sack_ok = !!(m->flags & FG_SAMETA_SACK);
	if (m->flags & FG_SAMETA_WS) {
		attrs.wscale_ok = 1;
		attrs.snd_wscale = m->snd_wscale;
		attrs.rcv_wscale = FG_SA_WSCALE;
	}
	if (m->flags & FG_SAMETA_TS) {
		attrs.tstamp_ok = 1;
		attrs.rcv_tsval = m->tsval;
		attrs.rcv_tsecr = m->tsecr;
	}
	ret = bpf_sk_assign_tcp_reqsk(skb, (struct sock *)tp, &attrs, sizeof(attrs));
	bpf_sk_release(skc);
	if (ret < 0)
		return fg_syn_count(FG_SYN_FAIL, TC_ACT_SHOT);
	return fg_syn_count(FG_SYN_HANDOFF, TC_ACT_UNSPEC);
}
