// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Benchmark baselines and harness programs, driven by tools/fgbench.c.
 *
 * bare_drop  return XDP_DROP: the cost of running any XDP program at all.
 * floor      the same Ethernet/VLAN/IPv4/IPv6 parse as floodgate (fg_parse.h,
 *            with the frame length as floodgate reads it, fg_frame_len),
 *            one per-CPU counter increment, XDP_DROP: the least a
 *            per-source filter can do ("parse + count + drop floor").
 * vary       micro-benchmark harness: writes a pseudo-random source address,
 *            one of vary_n starting at vary_base, into the IPv4 frame, then
 *            tail-calls vary_jmp[0] (floodgate, or floor for its own
 *            overhead). BPF_PROG_TEST_RUN without live frames runs every
 *            repetition on the same buffer, so with repeat R one call sees R
 *            frames from R random sources: lookups miss the caches as they
 *            would under a many-source flood, instead of hitting one hot
 *            bucket R times.
 *
 * memfloor   floor plus the one memory access a per-source table of a given
 *            size cannot avoid: the IPv4 source's set in mem_sets, an array
 *            of struct fg_set4 laid out and indexed as fg_src4 is
 *            (fg_hash4 of the key word, 1 << mem_bits sets), its key line
 *            and its tat line read as floodgate reads them. vary ->
 *            memfloor against vary -> floodgate with a table of as many
 *            sets splits floodgate's cost at N random sources into the
 *            machine's (the random read of a table that size) and its own.
 *
 * floor, memfloor and vary are xdp.frags like floodgate: a tail call needs the same
 * frags flag on both sides, and attaching the floor where floodgate
 * attaches must accept the same frames.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "floodgate.h"
#include "fg_parse.h"
#include "fg_common.bpf.h"
#include "fg_gcra.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Frames the floor program has seen, per CPU. Read by fgbench. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} floor_cnt SEC(".maps");

/* memfloor's table: sized (set_max_entries before load) by fgbench sweep
 * to the largest sources point's sets; the first 1 << mem_bits are used. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fg_set4);
} mem_sets SEC(".maps");

__u32 mem_bits; /* 0: no table, memfloor is the floor */
__u64 mem_seed = 0x9e3779b97f4a7c15ull;
__u64 mem_hits; /* keeps the comparisons' results live */

/* simple's tats, one per IPv4 source (host order not needed: the word as
 * read); sized by fgbench xdp (set_max_entries before load, 1 << 20). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} simple_tat SEC(".maps");

__u64 simple_inc = 1; /* time units (fg_gcra.h) a packet: 1e9 / rate << FG_TU_SHIFT; fgbench */
__u64 simple_tau;     /* burst * simple_inc */

/* vary's tail-call target, slot 0; set by fgbench. */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} vary_jmp SEC(".maps");

/* vary's settings (host order) and LCG state; written by fgbench. */
__u32 vary_base = 0x0a000000; /* 10.0.0.0 */
__u32 vary_n = 1;
__u64 vary_state = 1;

SEC("xdp")
int bare_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}

/* The program is called "floor" as the benchmark names it; clang knows
 * floor() as a libm builtin, which means nothing in BPF. */
#pragma clang diagnostic ignored "-Wincompatible-library-redeclaration"
SEC("xdp.frags")
int floor(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 len = fg_frame_len(ctx);
	struct fg_pkt p = {};
	__u32 k = 0;
	__u64 *c;

	/* the verdict is ignored on purpose: parse, count, drop everything */
	fg_parse(data, data_end, len, &p);
	c = bpf_map_lookup_elem(&floor_cnt, &k);
	if (c)
		(*c)++;
	return XDP_DROP;
}

/* The floor, plus the random read of the source's set in mem_sets (see the
 * top of the file): both lines' loads issued before either is used, as
 * fg_src4_start issues them, then the keys compared as a way search
 * compares them. */
SEC("xdp.frags")
int memfloor(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 len = fg_frame_len(ctx);
	__u32 bits = mem_bits, k = 0, idx, i;
	struct fg_pkt p = {};
	struct fg_set4 *set;
	__u64 key, hit = 0;
	__u64 *c;

	fg_parse(data, data_end, len, &p);
	key = (__u64)p.saddr[0] | (__u64)FG_WKEY4_USED << 32;
	if (p.family == 4 && bits >= FG_SRC4_MIN_BITS && bits <= FG_SRC4_MAX_BITS) {
		idx = fg_hash4(key, mem_seed, bits);
		set = bpf_map_lookup_elem(&mem_sets, &idx);
		if (set) {
			__u64 t = *(volatile __u64 *)&set->tat[0];

			for (i = 0; i < FG_WAYS4; i++)
				hit += *(volatile __u64 *)&set->key[i] == key;
			hit += t > key;
		}
	}
	mem_hits += hit;
	c = bpf_map_lookup_elem(&floor_cnt, &k);
	if (c)
		(*c)++;
	return XDP_DROP;
}

/* The tail of vary and vary6: a, big-endian, into the 4 bytes at sa, then
 * on to vary_jmp[0]; XDP_ABORTED if the frame is too short or the slot empty. */
static __always_inline int src_write_jump(struct xdp_md *ctx, __u8 *sa, void *data_end, __u32 a)
{
	if ((void *)(sa + 4) > data_end)
		return XDP_ABORTED;
	sa[0] = a >> 24;
	sa[1] = a >> 16;
	sa[2] = a >> 8;
	sa[3] = a;
	bpf_tail_call(ctx, &vary_jmp, 0);
	return XDP_ABORTED;
}

SEC("xdp.frags")
int vary(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *sa = data + 26; /* Ethernet (14) + IPv4 saddr offset (12) */
	__u64 s = vary_state * 6364136223846793005ull + 1442695040888963407ull;
	__u32 a, n = vary_n;

	vary_state = s;
	a = vary_base + (n > 1 ? (__u32)(s >> 32) % n : 0);
	return src_write_jump(ctx, sa, data_end, a);
}

/*
 * vary6: vary for IPv6 frames (fgbench micro6, tools/fgbench.c). Writes source /64 number
 * i of vary6_n, i pseudo-random (vary6_seq 0) or the next in turn
 * (vary6_seq 1: one pass of N repeats visits every source once), into bits
 * 32..63 of the frame's IPv6 source address, then tail-calls vary_jmp[0].
 */
__u32 vary6_n = 1;
__u32 vary6_seq = 0;
__u64 vary6_state = 1;
__u32 vary6_next = 0;

SEC("xdp.frags")
int vary6(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *sa = data + 14 + 8 + 4; /* Ethernet, IPv6 saddr, its second 32-bit word */
	__u64 s = vary6_state * 6364136223846793005ull + 1442695040888963407ull;
	__u32 a, n = vary6_n;

	vary6_state = s;
	if (vary6_seq)
		a = vary6_next++ % (n ? n : 1);
	else
		a = n > 1 ? (__u32)(s >> 32) % n : 0;
	return src_write_jump(ctx, sa, data_end, a);
}

/*
 * simple: the simplest per-source limiter, issue 25's yardstick at 1,000
 * sources: floor's parse, then one GCRA tat per IPv4 source in a kernel
 * hash (its first frame inserts it), spent by fg_gcra_spend
 * (compare-and-swap), with the helper's clock. Nothing else: no rules, no
 * lists, no counters, no bound on what a spoofed flood inserts (the hash
 * fills, and a source it has no room for passes). Admitted frames go to the
 * stack, as floodgate's do.
 */
SEC("xdp.frags")
int simple(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 len = fg_frame_len(ctx), now, nt, *tat;
	struct fg_pkt p = {};
	__u32 key;

	if (fg_parse(data, data_end, len, &p) != FG_P_IP || p.family != 4)
		return XDP_PASS;
	key = p.saddr[0];
	now = bpf_ktime_get_ns() << FG_TU_SHIFT;
	tat = bpf_map_lookup_elem(&simple_tat, &key);
	if (!tat) {
		nt = now + simple_inc;
		bpf_map_update_elem(&simple_tat, &key, &nt, BPF_NOEXIST);
		return XDP_PASS;
	}
	return fg_gcra_spend(tat, now, simple_inc, simple_tau) == 1 ? XDP_PASS : XDP_DROP;
}
