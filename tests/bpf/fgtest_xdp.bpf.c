// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Small XDP programs for tests/test_xdpattach.c, standing in for floodgate
 * where only attaching is under test.
 *
 * fgtest   xdp.frags like floodgate: counts the test's marker frames
 *          (ethertype FGT_ETH_P, IEEE "local experimental") in fgt_cnt[gen],
 *          then returns fgt_verdict. Two copies with different gen show
 *          which one saw a frame while the test replaces one by the other.
 * fgt_pass returns XDP_PASS: the baseline of the dispatcher cost figure.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define FGT_ETH_P 0x88b5
#define FGT_GENS  4

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Marker frames seen, per CPU, per copy (fgt_gen). Read by test_xdpattach. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FGT_GENS);
	__type(key, __u32);
	__type(value, __u64);
} fgt_cnt SEC(".maps");

const volatile __u32 fgt_gen = 0;
const volatile __u32 fgt_verdict = XDP_PASS;

SEC("xdp.frags")
int fgtest(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	__u32 gen = fgt_gen;
	__u64 *c;

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(FGT_ETH_P))
		return fgt_verdict;
	c = bpf_map_lookup_elem(&fgt_cnt, &gen);
	if (c)
		(*c)++;
	return fgt_verdict;
}

SEC("xdp")
int fgt_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}
