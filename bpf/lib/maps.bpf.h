/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The XDP program's maps and load-time settings, each with what it holds
 * and who writes it; the maps it shares with bpf/fgconn.bpf.c are in
 * bpf/fg_conn.bpf.h.
 */
#ifndef FG_LIB_MAPS_BPF_H
#define FG_LIB_MAPS_BPF_H

/* Load-time: which clock (enum fg_clock). Coarse by default, see README. */
const volatile __u32 fg_clock = FG_CLOCK_COARSE;
/* Tests only (fg_clock == FG_CLOCK_TEST): the time, in ns. */
__u64 fake_now = 0;
/* Load-time, benchmarks only (tools/fgbench.c ablations): FG_SKIP_* bits
 * remove one step each; 0 in floodgated, and the verifier prunes the
 * skipped branches as dead code either way. */
const volatile __u32 fg_skip = 0;
/* With FG_SKIP_SCAN: the rule index fg_find_rule returns without a scan. */
const volatile __u32 fg_skip_rule = 0;
/* Benchmarks only: 1 = IPv4 lists from the LPM trie fg_pfx4 alone (the
 * DIR-16-8-8 walk, which falls back to it past the block budget, replaced),
 * to time both in one run.
 * The reference also keeps fg_pfx4 among the program's maps, by which
 * user/attach/discover.c finds a pin dir's maps from an attached program. */
const volatile __u32 fg_trie4 = 0;

/* Runtime switches; mmapped and stored field by field by floodgated and
 * the CLI (user/maps/ctl.h). */
FG_MAP(fg_ctl, BPF_MAP_TYPE_ARRAY, 1, BPF_F_MMAPABLE, __u32, struct fg_ctl);

/* Two policy slots; fg_ctl.slot names the active one. Written by userspace. */
FG_MAP(fg_policy, BPF_MAP_TYPE_ARRAY, 2, 0, __u32, struct fg_policy);

/* Where the rule scan starts, per slot, class and destination port. */
FG_MAP(fg_pidx, BPF_MAP_TYPE_ARRAY, 2, 0, __u32, struct fg_pidx);

/* Allow/deny lists and source sets, IPv4, keyed by (slot, prefix); sized
 * for both slots of the largest policy (FG_PFX_ENTRIES). */
FG_MAP(fg_pfx4, BPF_MAP_TYPE_LPM_TRIE, FG_PFX_ENTRIES, BPF_F_NO_PREALLOC, struct fg_lpm4,
       struct fg_pfx);

/* IPv4 lists, first level of DIR-16-8-8 by slot (struct fg_dir4). Written by userspace. */
FG_MAP(fg_dir4, BPF_MAP_TYPE_ARRAY, 2, 0, __u32, struct fg_dir4);

/* Its 256-entry blocks: per slot, an inner array that userspace creates at
 * apply as large as the policy needs (BPF_F_INNER_MAP: any size). */
struct fg_blk4_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	/* sizes, not BTF types: the maps userspace creates for it have none */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct fg_blk4));
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct fg_blk4_inner);
} fg_blk4 SEC(".maps");

/* Same for IPv6. */
FG_MAP(fg_pfx6, BPF_MAP_TYPE_LPM_TRIE, FG_PFX_ENTRIES, BPF_F_NO_PREALLOC, struct fg_lpm6,
       struct fg_pfx);

/* Runtime allow/deny entries, IPv4, keyed by prefix alone (struct fg_rt):
 * added and deleted by the CLI, expired ones removed by the CLI and the
 * daemon; whether an entry's time is over is judged here. */
FG_MAP(fg_rt4, BPF_MAP_TYPE_LPM_TRIE, FG_RT_MAX, BPF_F_NO_PREALLOC, struct fg_rt_key4,
       struct fg_rt);

/* Same for IPv6. */
FG_MAP(fg_rt6, BPF_MAP_TYPE_LPM_TRIE, FG_RT_MAX, BPF_F_NO_PREALLOC, struct fg_rt_key6,
       struct fg_rt);

/* Per-source buckets, IPv4: set-associative, see struct fg_set4. Filled
 * by this program; 1 << fg_ctl.src4_bits sets, sized by userspace from
 * max_sources. Mmapable, so that sets start on a page (hence cache line)
 * boundary and userspace can scan it without a syscall per set. */
FG_MAP(fg_src4, BPF_MAP_TYPE_ARRAY, 1 << 13, BPF_F_MMAPABLE, __u32, struct fg_set4);

/* Per-source buckets, IPv6 (prefix-grouped): set-associative by digest,
 * see struct fg_set6. Filled by this program; 1 << fg_ctl.src6_bits sets,
 * sized by userspace from max_sources; mmapable as fg_src4. */
FG_MAP(fg_src6, BPF_MAP_TYPE_ARRAY, 1 << 13, BPF_F_MMAPABLE, __u32, struct fg_set6);

/* Aggregate, overflow and admission buckets, a cache line each. */
FG_MAP(fg_agg, BPF_MAP_TYPE_ARRAY, FG_NAGG, 0, __u32, struct fg_agg);

/* Fleet leases by rule id (struct fg_lease): floodgated writes them through
 * an mmap; this program spends their tokens. */
FG_MAP(fg_lease, BPF_MAP_TYPE_ARRAY, FG_MAX_IDS, BPF_F_MMAPABLE, __u32, struct fg_lease);

/* The adaptive shedder's thresholds and deadline (struct fg_shed_ctl):
 * floodgated stores them through an mmap every sample, the CLI its off
 * switch; read here by packets of tiered rules only. */
FG_MAP(fg_shed, BPF_MAP_TYPE_ARRAY, 1, BPF_F_MMAPABLE, __u32, struct fg_shed_ctl);

/* Counters per CPU, per rule id (+ global row). Read by userspace. */
FG_MAP(fg_stats, BPF_MAP_TYPE_PERCPU_ARRAY, FG_NROWS, 0, __u32, struct fg_stats);

/* Rule id -> name; written by userspace, never read here. */
FG_MAP(fg_names, BPF_MAP_TYPE_ARRAY, FG_MAX_IDS, 0, __u32, struct fg_name);

/* Daemon metadata for `floodgate status`; never read here. */
FG_MAP(fg_meta, BPF_MAP_TYPE_ARRAY, 1, 0, __u32, struct fg_meta);

/* fg_now_ns's cache of the coarse clock, per CPU (struct fg_clk, floodgate.h); pinned. */
FG_MAP(fg_clk, BPF_MAP_TYPE_PERCPU_ARRAY, 1, 0, __u32, struct fg_clk);

/* Throttle events (struct fg_tev, floodgate.h): written here, rate-capped
 * by fg_agg[FG_TEV_IDX]; read by floodgated's tick. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, FG_TEV_RING);
} fg_tev SEC(".maps");

static __always_inline struct fg_bucket *fg_agg_bucket(__u32 idx)
{
	struct fg_agg *a = bpf_map_lookup_elem(&fg_agg, &idx);

	return a ? &a->b : NULL;
}

#endif /* FG_LIB_MAPS_BPF_H */
