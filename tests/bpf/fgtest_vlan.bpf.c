// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * VLAN tags for tests/e2e_synauth_modes.sh on a kernel without 802.1Q
 * devices: tc programs that tag and untag the IPv4 frames of the test's
 * VLAN subnet (FGT_VLAN_NET/24), so real sockets exchange tagged frames
 * over a veth. With the veth's tx-vlan offload off the tag is written into
 * the frame, which is what the XDP program on the receiving end parses.
 *
 * fgt_vlan_push  (egress) IPv4 from or to the subnet, untagged: tag id
 *                FGT_VLAN_ID
 * fgt_vlan_pop   (ingress) a frame of tag FGT_VLAN_ID (by then in the skb,
 *                not the frame): untagged, so the stack takes it without a
 *                VLAN device; continues to the next filter (TC_ACT_UNSPEC)
 * fgt_vlan_seen  (XDP, on the client's veth) counts in fgt_vlan_cnt[0] the
 *                SYN-ACKs arriving with tag FGT_VLAN_ID in the frame (what
 *                floodgate answers a tagged SYN with) and passes everything
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define FGT_VLAN_ID   7
#define FGT_VLAN_NET  0x0a4e0700 /* 10.78.7.0/24 */
#define ETH_P_IP      0x0800
#define ETH_P_8021Q   0x8100
#define TC_ACT_UNSPEC (-1)
#define TC_ACT_OK     0

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} fgt_vlan_cnt SEC(".maps");

SEC("tc")
int fgt_vlan_push(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);

	if ((void *)(ip + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || skb->vlan_present)
		return TC_ACT_OK;
	if ((bpf_ntohl(ip->saddr) & 0xffffff00) != FGT_VLAN_NET &&
	    (bpf_ntohl(ip->daddr) & 0xffffff00) != FGT_VLAN_NET)
		return TC_ACT_OK;
	bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), FGT_VLAN_ID);
	return TC_ACT_OK;
}

/* a section of its own, for tc(8)'s "sec" */
SEC("classifier")
int fgt_vlan_pop(struct __sk_buff *skb)
{
	if (skb->vlan_present && (skb->vlan_tci & 0xfff) == FGT_VLAN_ID)
		bpf_skb_vlan_pop(skb);
	return TC_ACT_UNSPEC;
}

SEC("xdp")
int fgt_vlan_seen(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u8 *c = data;
	__u32 k = 0;
	__u64 *n;

	/* 802.1Q tag, IPv4 without options, TCP flags SYN|ACK */
	if ((void *)(c + 18 + 20 + 14) > end || c[12] != 0x81 || c[13] != 0 ||
	    ((c[14] << 8 | c[15]) & 0xfff) != FGT_VLAN_ID || c[16] != 0x08 || c[17] != 0 ||
	    c[18] != 0x45 || c[18 + 9] != 6 || (c[18 + 20 + 13] & 0x12) != 0x12)
		return XDP_PASS;
	n = bpf_map_lookup_elem(&fgt_vlan_cnt, &k);
	if (n)
		__sync_fetch_and_add(n, 1);
	return XDP_PASS;
}
