// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * floodgate: per-source token buckets in XDP.
 *
 * Order of decisions for every frame (each leaves through fg_exit, which
 * counts it in exactly one outcome of one stats row):
 *   1. fg_ctl: kill switch (bypass, with its own expiry) -> pass, untouched
 *   2. parse -> non-IP (pass) or malformed (policy's verdict)
 *   2b. runtime allow/deny lists (floodgate allow|deny add), only while
 *      fg_ctl.rt_active says there are entries (struct fg_rt)
 *   3. allow/deny list, which also yields source sets: IPv4 one to three
 *      array reads (struct fg_dir4), IPv6 one LPM lookup
 *   4. first matching rule of the active policy slot, within the packet's
 *      protocol class
 *   5. the rule's action: pass, drop, or, for a limit rule:
 *      a. a tier other than critical: the adaptive shedder's share of its
 *         packets is shed at random, before any bucket (fg_shed_tier)
 *      b. its buckets (per source, then aggregate, then the fleet lease of
 *         a fleet rule); a source without a bucket of its own goes to the
 *         rule's overflow bucket, or fails open or closed
 *      c. its capacity pool, whose refusal is a shed and gives the tokens
 *         of b back (fg_pool_spend)
 *      (docs/shedding.md section 5)
 * Shadow (global or per rule, from the file or an operator override; the
 * rule is in include/floodgate.h, struct fg_ctl) makes every decision and
 * counts it, then passes what would have been dropped.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "floodgate.h"
#include "fg_parse.h"
#include "fg_gcra.h"
#include "fg_common.bpf.h"
/* Concurrency caps: fgc_count and fgc_pend are placeholders here, small
 * unless shared: floodgated makes them bpf/fgconn.bpf.c's maps
 * (bpf_map__reuse_fd before load; docs/concurrency.md). */
#define FG_CONN_MAP_ENTRIES 4096
#include "fg_conn.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* One load, not merged with or moved across another FG_READ_ONCE: fields
 * of fg_ctl change under the program (user/maps/ctl.h). */
#define FG_READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))

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

struct fg_verd {
	struct fg_stats *st; /* row's counters, once known */
	__u32 row;
	__u32 out;     /* enum fg_outcome */
	__u32 ev;      /* bit per enum fg_event */
	__u32 verdict; /* XDP_PASS / XDP_DROP */
};

/*
 * The modes in force (the rule is in include/floodgate.h, struct fg_ctl).
 * Both return a mode, compared with FG_MODE_SHADOW where it is used rather
 * than reduced to a 0/1 bit: the verifier then carries "not shadow" as an
 * unknown value and prunes the shadow paths against it (clang 14: 279k
 * instructions processed, 356k with a 0/1 bit, 416k with a branch here).
 *
 * Global: an operator override (1 or 2; the word is 0 unless one is set)
 * replaces the file's mode. Branch-free: one path for the verifier.
 */
static __always_inline __u32 fg_global_mode(const struct fg_ctl *ctl)
{
	__u32 ovr = FG_READ_ONCE(ctl->mode_ovr);
	__u32 mode = FG_READ_ONCE(ctl->mode);

	/* ovr 0: mode (the mask (0 - 1) >> 31 is 1); 1: enforce; 2: shadow */
	return (ovr >> 1) | (mode & ((ovr - 1) >> 31));
}

/* A rule: the operator's override where its bit is set (the bitmaps, past
 * the first cache line, are read only while rule_ovr_n says some bit may
 * be; the shadow bit only then; set before shadow, the CLI stores them in
 * the other order), else the rule's mode from the file. */
static __always_inline __u32 fg_rule_mode(const struct fg_ctl *ctl, const struct fg_rule *r,
					  __u32 id)
{
	__u32 w = (id >> 6) & (FG_OVR_WORDS - 1), b = id & 63;

	if (FG_READ_ONCE(ctl->rule_ovr_n) && (FG_READ_ONCE(ctl->rule_ovr_set[w]) >> b) & 1)
		return (FG_READ_ONCE(ctl->rule_ovr_shadow[w]) >> b) & 1;
	return r->mode;
}

/*
 * The coarse clock, called once per tick per CPU: the helper is a call
 * (~17 ns here, docs/concurrency.md; SRSO makes every return dear) while
 * bpf_jiffies64 is one load (the verifier inlines it on x86-64) and the
 * coarse clock only moves when jiffies does, both at the tick. A CPU
 * reuses its cached time while jiffies reads as when it was cached, so
 * every value is one the helper returned this tick. A read in the window
 * where jiffies has moved and the timekeeper not yet (same ns as cached)
 * leaves the cache as it is, so the next packet asks again. The hit is
 * inline in fg_now_ns (a call and its return cost ~8 ns here); the refresh
 * is a global function, verified once (all of it inline took clang 14's
 * count from 326k to 564k; this way 459k, clang-19's 404k).
 */
__noinline __u64 fg_coarse_refresh(void)
{
	struct fg_clk *c;
	__u32 k = 0;
	__u64 j, ns;

	c = bpf_map_lookup_elem(&fg_clk, &k);
	j = bpf_jiffies64();
	ns = bpf_ktime_get_coarse_ns();
	if (c && ns != c->ns) {
		c->jiffies = j;
		c->ns = ns;
	}
	return ns;
}

static __always_inline __u64 fg_now_ns(void)
{
	struct fg_clk *c;
	__u32 k = 0;

	if (fg_clock == FG_CLOCK_TEST)
		return fake_now;
	if (fg_clock == FG_CLOCK_PRECISE)
		return bpf_ktime_get_ns();
	c = bpf_map_lookup_elem(&fg_clk, &k);
	if (c && c->jiffies == bpf_jiffies64())
		return c->ns;
	return fg_coarse_refresh();
}

/* A refusal counted as out and dropped; in shadow counted as out_shadow
 * and passed. */
static __always_inline void fg_refuse(struct fg_verd *v, int shadow, __u32 out, __u32 out_shadow)
{
	if (shadow) {
		v->out = out_shadow;
		v->verdict = XDP_PASS;
	} else {
		v->out = out;
		v->verdict = XDP_DROP;
	}
}

/* A drop: in shadow it is counted as would-drop and passed. */
static __always_inline void fg_drop(struct fg_verd *v, int shadow)
{
	fg_refuse(v, shadow, FG_OUT_DROP, FG_OUT_SHADOW);
}

static __always_inline struct fg_bucket *fg_agg_bucket(__u32 idx)
{
	struct fg_agg *a = bpf_map_lookup_elem(&fg_agg, &idx);

	return a ? &a->b : NULL;
}

/*
 * A throttle event for the bucket whose drops word is at drops (floodgate.h,
 * "Throttle events"): through the rate cap, claim this epoch's tag, write
 * the record. Returns the event bits to count. A global function: verified
 * once, not on every path of fg_charge.
 */
__noinline __u32 fg_tev_emit(__u64 *drops, const struct fg_rule *r, const struct fg_pkt *p,
			     __u64 now)
{
	__u64 tag = FG_TEV_TAG(now), old;
	struct fg_bucket *cap;
	struct fg_tev *e;

	if (!drops || !r || !p)
		return 0;
	cap = fg_agg_bucket(FG_TEV_IDX);
	if (!cap || fg_gcra_spend(&cap->tat, now, FG_TU_PER_SEC / FG_TEV_RATE,
				  FG_TEV_BURST * (FG_TU_PER_SEC / FG_TEV_RATE)) != 1)
		return 1u << FG_EV_TEV_CAPPED;
	old = *(volatile __u64 *)drops;
	if ((old & FG_TEV_TAG_MASK) == tag ||
	    __sync_val_compare_and_swap(drops, old, FG_DROPS(old) | tag) != old)
		return 0; /* another CPU reports it (or a racing drop: the next sample) */
	e = bpf_ringbuf_reserve(&fg_tev, sizeof(*e), 0);
	if (!e)
		return 1u << FG_EV_TEV_LOST;
	__builtin_memset(e, 0, sizeof(*e));
	fg_mask_src((__be32 *)e->addr, p->family, p->saddr, r->mask4, r->mask6);
	e->rule = r->id;
	e->gen = r->gen;
	e->family = p->family;
	e->drops = FG_DROPS(old);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* Bucket drop counts are sampled 1 in FG_DROP_SAMPLE per CPU (see
 * floodgate.h, FG_DROP_SAMPLED): the drop path writes the shared bucket
 * line rarely. A sample whose bucket has not been reported this epoch
 * reports it. */
static __always_inline void fg_sample_drop(__u64 *drops, struct fg_verd *v, int shadow,
					   const struct fg_rule *r, const struct fg_pkt *p,
					   __u64 now)
{
	__u64 n, old;

	if (!v->st)
		return;
	n = shadow ? v->st->pkts[FG_OUT_SHADOW] : v->st->pkts[FG_OUT_DROP];
	if (FG_DROP_SAMPLED(n, now)) {
		old = __sync_fetch_and_add(drops, FG_DROP_SAMPLE);
		if ((old & FG_TEV_TAG_MASK) != FG_TEV_TAG(now))
			v->ev |= fg_tev_emit(drops, r, p, now);
	}
}

/* The admission limit on new source keys: the eviction invariant, floodgate.h. */
static __always_inline int fg_admit_new(const struct fg_policy *pol, __u64 now, __u32 *ev)
{
	struct fg_bucket *b;

	if (!pol->ins.inc)
		return 1;
	b = fg_agg_bucket(FG_INS_IDX);
	if (b && fg_gcra_spend(&b->tat, now, pol->ins.inc, pol->ins.tau) == 1)
		return 1;
	*ev |= 1u << FG_EV_INSERT_LIMITED;
	return 0;
}

/*
 * A source's way in a set of FG_WAYS4 (== FG_WAYS6) ways whose way i has
 * its key word at key[i * stride] and its tat at tat[i * stride]: its own,
 * else (through the admission limit) an empty way or the oldest full one
 * (the eviction invariant, floodgate.h). Returns the way, or -1 (counted)
 * when there is none to take; a claim is counted as FG_EV_INSERT.
 */
_Static_assert(FG_WAYS4 == FG_WAYS6, "fg_way_in serves both tables");
static __always_inline int fg_way_in(const struct fg_policy *pol, __u64 *key, __u64 *tat,
				     const int stride, __u64 *drops, __u64 want, __u64 now,
				     __u32 *ev, int pref)
{
	__u64 oldest = now, victim_key = 0;
	int i, victim = -1;

	FG_UNROLL
	for (i = 0; i < FG_WAYS4; i++)
		if (key[i * stride] == want)
			return i;
	if (pref >= 0 && pref < FG_WAYS4 && !key[pref * stride]) {
		victim = pref; /* its own way, empty: a lookup's first read */
		goto claim;
	}
	FG_UNROLL
	for (i = 0; i < FG_WAYS4; i++) {
		__u64 k = key[i * stride], t = tat[i * stride];

		if (!k) {
			victim = i;
			victim_key = 0;
			break;
		}
		if (t <= oldest) { /* full, and the oldest so far */
			oldest = t;
			victim = i;
			victim_key = k;
		}
	}
	if (victim < 0 || victim >= FG_WAYS4) {
		*ev |= 1u << FG_EV_INSERT_FAIL;
		return -1;
	}
claim:
	if (victim < 0 || victim >= FG_WAYS4)
		return -1;
	if (!fg_admit_new(pol, now, ev))
		return -1;
	if (__sync_val_compare_and_swap(&key[victim * stride], victim_key, want) == victim_key) {
		*ev |= 1u << FG_EV_INSERT;
		drops[victim] = 0;
		return victim;
	}
	if (key[victim * stride] == want)
		return victim;		/* another CPU claimed it for this source */
	*ev |= 1u << FG_EV_INSERT_FAIL; /* lost a race for the way */
	return -1;
}

/* A global function: the verifier checks it once, on its own, instead of
 * once per path of the caller. It gets no pointer to the caller's fg_verd
 * (which holds a pointer: after a global call the verifier no longer
 * trusts stack memory the callee could have written). */
__noinline int fg_src4_way(const struct fg_policy *pol, struct fg_set4 *set, __u64 key, __u64 now,
			   __u32 *ev)
{
	__u32 got = 0;
	__u32 z = 0;
	const struct fg_ctl *ctl = bpf_map_lookup_elem(&fg_ctl, &z);
	int w = pol && set && ctl ? fg_way_in(pol, (__u64 *)set->key, set->tat, 1, set->drops, key,
					      now, &got, (int)fg_way4_pref(key, ctl->seed4)) :
				    -1;

	if (ev)
		*ev |= got;
	return w;
}

/* The way of set that holds key, or -1: inline, the hit needs no call (a
 * global function's call and its SRSO-safe return cost ~8 ns here). A miss
 * goes on to fg_src4_way, which looks again and claims a way. */
static __always_inline int fg_src4_own(const struct fg_set4 *set, __u64 key)
{
	const __u64 *k = (const __u64 *)set->key;
	int i;

	FG_UNROLL
	for (i = 0; i < FG_WAYS4; i++)
		if (k[i] == key)
			return i;
	return -1;
}

/* fg_src4_own for fg_src6: the way whose digest is key, or -1. */
static __always_inline int fg_src6_own(const struct fg_set6 *set, __u64 key)
{
	int i;

	FG_UNROLL
	for (i = 0; i < FG_WAYS6; i++)
		if (set->way[i].key == key)
			return i;
	return -1;
}

/* What a claim of a way in fg_src6 needs (one argument: a global
 * function takes at most five). */
struct fg_claim6 {
	struct fg_who6 who;
	__u64 key; /* fg_digest6 of who */
	__u64 now; /* time units */
};

/* Global, as fg_src4_way; the key is a digest, so the caller of a claim
 * (FG_EV_INSERT in *ev) then writes its copy of the source (who: after the
 * CAS, readers check it, floodgate.h). The write is the caller's so that
 * this frame need not keep set and c live: 160 bytes of stack, against the
 * 512 the caller's frame and this one share. */
__noinline int fg_src6_way(const struct fg_policy *pol, struct fg_set6 *set,
			   const struct fg_claim6 *c, __u32 *ev)
{
	__u32 got = 0;
	int w = pol && set && c ? fg_way_in(pol, &set->way[0].key, &set->way[0].tat,
					    sizeof(set->way[0]) / sizeof(__u64), set->drops, c->key,
					    c->now, &got, (int)fg_way6_pref(c->key)) :
				  -1;

	if (ev)
		*ev |= got;
	return w;
}

/* Start the load of p's cache line now, so that its miss overlaps what
 * follows (the empty asm keeps the value live: clang cannot drop the load
 * or sink it to the first use). */
static __always_inline void fg_touch(const __u64 *p)
{
	__u64 x = *(const volatile __u64 *)p;

	asm volatile("" : : "r"(x));
}

/* The set of fg_src4 that holds p's bucket under r, its key in *key;
 * NULL when fg_ctl's size is out of range. */
static __always_inline struct fg_set4 *fg_src4_set(const struct fg_ctl *ctl,
						   const struct fg_rule *r, const struct fg_pkt *p,
						   __u64 *key, __u32 *pref)
{
	union {
		struct fg_wkey4 s;
		__u64 u;
	} k = { .s = {
			.addr = p->saddr[0] & r->mask4,
			.rule = FG_WKEY4_USED | (r->id & (FG_MAX_IDS - 1)),
			.gen = r->gen,
		} };
	__u32 bits = ctl->src4_bits, idx;

	__u64 x = fg_mix4(k.u, ctl->seed4);

	*key = k.u;
	*pref = (__u32)x & (FG_WAYS4 - 1); /* fg_way4_pref */
	if (bits < FG_SRC4_MIN_BITS || bits > FG_SRC4_MAX_BITS)
		return NULL;
	idx = (__u32)(x >> (64 - bits)); /* fg_hash4 */
	return bpf_map_lookup_elem(&fg_src4, &idx);
}

/* A per-source limit's IPv4 set: its two lines' misses (keys, tats) start
 * as soon as the rule is known, and overlap the rule's mode, the counters'
 * lookup and the clock read on the way to fg_src_bucket. */
static __always_inline void fg_src4_prefetch(const struct fg_ctl *ctl, const struct fg_rule *r,
					     const struct fg_pkt *p)
{
	struct fg_set4 *set;
	__u32 pref;
	__u64 key;

	if (p->family != 4 || !r->src.inc || (fg_skip & FG_SKIP_SRC))
		return;
	set = fg_src4_set(ctl, r, p, &key, &pref);
	if (!set)
		return;
	fg_touch((const __u64 *)set->key);
	fg_touch(set->tat);
}

/* The source's own bucket (its tat and drops words), or NULL when it has
 * none: from the set-associative fg_src4 or fg_src6 (floodgate.h). */
static __always_inline __u64 *fg_src_bucket(const struct fg_ctl *ctl, const struct fg_policy *pol,
					    const struct fg_rule *r, const struct fg_pkt *p,
					    __u64 now, struct fg_verd *v, __u64 **drops)
{
	if (p->family == 4) {
		__u32 ev = 0;
		__u64 key;
		__u32 pref;
		struct fg_set4 *set = fg_src4_set(ctl, r, p, &key, &pref);
		int w;

		if (!set)
			return NULL;
		/* its own way first: no compare the miss must answer before the
		 * tat's address is known, and one that is right when predicted */
		w = (int)(pref & (FG_WAYS4 - 1));
		if (((const __u64 *)set->key)[w] != key)
			w = fg_src4_own(set, key);
		if (w < 0) {
			w = fg_src4_way(pol, set, key, now, &ev);
			v->ev |= ev;
		}
		if (w < 0 || w >= FG_WAYS4)
			return NULL;
		*drops = &set->drops[w];
		return &set->tat[w];
	} else {
		struct fg_claim6 c = { .who = { .rule = r->id, .gen = r->gen }, .now = now };
		__u32 bits = FG_READ_ONCE(ctl->src6_bits), ev = 0;
		struct fg_set6 *set;
		__u32 idx;
		int w;

		if (bits < FG_SRC6_MIN_BITS || bits > FG_SRC6_MAX_BITS)
			return NULL;
		fg_mask_src(c.who.addr, 6, p->saddr, r->mask4, r->mask6);
		c.key = fg_digest6(c.who.addr, c.who.rule, c.who.gen, FG_READ_ONCE(ctl->seed6[0]),
				   FG_READ_ONCE(ctl->seed6[1]));
		idx = fg_set6_of(c.key, bits);
		set = bpf_map_lookup_elem(&fg_src6, &idx);
		if (!set)
			return NULL;
		w = (int)fg_way6_pref(c.key); /* its own way first, as IPv4's */
		if (set->way[w & (FG_WAYS6 - 1)].key != c.key)
			w = fg_src6_own(set, c.key);
		if (w < 0) {
			w = fg_src6_way(pol, set, &c, &ev);
			v->ev |= ev;
		}
		if (w < 0 || w >= FG_WAYS6)
			return NULL;
		if (ev & (1u << FG_EV_INSERT)) /* claimed: who, after the CAS */
			set->who[w] = c.who;
		*drops = &set->drops[w];
		return &set->way[w].tat;
	}
}

/*
 * on_loss, once a fleet rule's lease has run out (docs/fleet.md section 4):
 * 1 = admitted, 0 = drop. The rare path, so a global function: verified
 * once on its own, not once per path of the caller.
 */
__noinline int fg_fleet_loss(struct fg_lease *l, __u64 cost, __u64 now, struct fg_stats *st)
{
	if (!l)
		return 0;
	switch (l->on_loss) {
	case FG_LOSS_OPEN:
		break;
	case FG_LOSS_LOCAL:
		/* the daemon starts tat at the lease's expiry, empty: no burst */
		if (!l->local.inc ||
		    fg_gcra_spend(&l->tat, now, l->local.inc * cost, l->local.tau) != 1)
			return 0;
		break;
	default:
		return 0;
	}
	if (st)
		st->fleet_unleased += cost;
	return 1;
}

/*
 * A fleet rule's lease (struct fg_lease, docs/fleet.md section 5): spend
 * cost from its tokens while it runs. 2 = admitted from the lease's
 * tokens, 1 = admitted under on_loss, 0 = drop. Inline: the admit path is
 * one fetch-and-add, the drop path writes no shared line.
 */
static __always_inline int fg_fleet_spend(const struct fg_rule *r, __u64 cost, __u64 now,
					  struct fg_verd *v)
{
	__u32 id = r->id & (FG_MAX_IDS - 1);
	struct fg_lease *l = bpf_map_lookup_elem(&fg_lease, &id);
	__s64 c = (__s64)cost;

	if (v->st)
		v->st->fleet_offered += cost;
	if (!l)
		return 0;
	if (l->gen != r->gen) {
		/* not this rule's lease (the daemon has not written it): closed */
		v->ev |= 1u << FG_EV_FLEET_LOSS;
		return 0;
	}
	/* lease_expires first: the daemon stores it last, after the tokens */
	if ((now >> FG_TU_SHIFT) >= FG_READ_ONCE(l->lease_expires)) {
		v->ev |= 1u << FG_EV_FLEET_LOSS;
		return fg_fleet_loss(l, cost, now, v->st);
	}
	if (FG_READ_ONCE(l->tokens) >= c) {
		if (__sync_fetch_and_add(&l->tokens, -c) >= c)
			return 2;
		/* lost the race for the last tokens: put them back */
		__sync_fetch_and_add(&l->tokens, c);
	}
	v->ev |= 1u << FG_EV_FLEET_DROP;
	return 0;
}

/* fg_charge's results */
enum {
	FG_CHARGE_DROP = 0, /* over a quota: a drop */
	FG_CHARGE_OK = 1,   /* admitted */
	FG_CHARGE_SHED = 2, /* the pool refused: a shed */
};

/* A shed (the host is short of capacity, not the source over its quota):
 * in shadow counted as would-shed and passed. */
static __always_inline void fg_shed_verdict(struct fg_verd *v, int shadow)
{
	fg_refuse(v, shadow, FG_OUT_SHED, FG_OUT_SHED_SHADOW);
}

/*
 * The adaptive shedder (docs/shedding.md section 5, step 1), for a rule
 * with a tier: shed the share fg_shed_ctl gives its tier and the packet's
 * kind, preferring new TCP connections; touches no bucket. Returns
 * FG_SHED_REAL when the packet is to be shed for real, FG_SHED_MARK when
 * it would be (shadow), else 0 (FG_SHED_REAL has the FG_SHED_MARK bit, so
 * the caller marks the event without a branch). now: the packet's clock,
 * ns. A global function, like the others:
 * verified once, not once per path of the caller. In shadow (the rule's, the
 * global or fg_shed_ctl.shadow) it only leads to FG_EV_SHED_TIER and the
 * packet goes on through its buckets: fg_decide counts it as shed_shadow
 * if they admit it, so shadow shedding opens no hole in the quotas.
 */
enum {
	FG_SHED_MARK = 1,
	FG_SHED_REAL = 3
};
__noinline int fg_shed_tier(const struct fg_policy *pol, const struct fg_rule *r,
			    const struct fg_pkt *p, int shadow, __u64 now)
{
	__u32 k = 0, kind = FG_SHED_ANY, pi, thr;
	struct fg_shed_ctl *sh = bpf_map_lookup_elem(&fg_shed, &k);

	if (!pol || !r || !p)
		return 0;
	pi = r->pool - 1;
	if (!sh || FG_READ_ONCE(sh->off))
		return 0;
	if (pi < FG_MAX_POOLS && pi < pol->npools && (pol->pools[pi].flags & FG_POOL_NOSHED))
		return 0;
	if (p->proto == FG_IPPROTO_TCP)
		kind = (p->tcp_flags & (FG_TCP_SYN | FG_TCP_ACK)) == FG_TCP_SYN ? FG_SHED_NEW :
										  FG_SHED_EST;
	thr = FG_READ_ONCE(sh->thr[r->tier & (FG_NTIERS - 1)][kind]);
	if (!thr)
		return 0; /* nothing shed: the usual case, no clock, no random */
	thr = fg_shed_decayed(thr, FG_READ_ONCE(sh->end), FG_READ_ONCE(sh->hshift), now);
	if ((bpf_get_prandom_u32() >> 1) >= thr)
		return 0;
	return !shadow && !FG_READ_ONCE(sh->shadow) ? FG_SHED_REAL : FG_SHED_MARK;
}

/*
 * A rule's capacity pool (docs/shedding.md section 4): critical spends the
 * shared tat with the whole tolerance, the other tiers first the cap
 * (their (1 - reserve) share of the rate), then the tat with tau_low (only
 * while the pool holds more than the reserve), giving the cap's token back
 * if the pool refuses. 1 = admitted, 0 = shed. A refusal writes neither line.
 * Global: verified once, on its own.
 */
__noinline int fg_pool_spend(const struct fg_policy *pol, const struct fg_rule *r, __u64 len,
			     __u64 now, __u32 *ev)
{
	__u32 pi, id;
	const struct fg_pool *pl;
	struct fg_bucket *pb, *cb = NULL;
	__u64 cost = 1, cap_spent = 0;
	int crit, rc;

	if (!pol || !r || !ev)
		return 0;
	pi = r->pool - 1;
	crit = r->tier == FG_TIER_CRITICAL;
	if (pi >= FG_MAX_POOLS || pi >= pol->npools)
		return 1; /* no such pool: as without one */
	pl = &pol->pools[pi];
	if (!pl->inc)
		return 1;
	if (pl->cost == FG_COST_BYTES)
		cost = len < FG_MAX_COST ? len : FG_MAX_COST;
	id = pl->id & (FG_POOL_IDS - 1);
	if (!crit && pl->cap.inc) {
		cb = fg_agg_bucket(FG_CAP_IDX(id));
		if (!cb)
			return 0;
		rc = fg_gcra_spend(&cb->tat, now, pl->cap.inc * cost, pl->cap.tau);
		if (rc != 1) {
			*ev |= 1u << (rc < 0 ? FG_EV_CONTENDED : FG_EV_SHED_CAP);
			return 0;
		}
		cap_spent = pl->cap.inc * cost;
	}
	pb = fg_agg_bucket(FG_POOL_IDX(id));
	rc = pb ? fg_gcra_spend(&pb->tat, now, pl->inc * cost, crit ? pl->tau : pl->tau_low) : 0;
	if (rc == 1)
		return 1;
	*ev |= 1u << (rc < 0 ? FG_EV_CONTENDED : FG_EV_SHED_POOL);
	if (cb && cap_spent)
		__sync_fetch_and_add(&cb->tat, -cap_spent);
	return 0;
}

/* Cost taken from a fleet rule's lease goes back (its pool refused). What
 * on_loss admitted is not: no lease tokens were spent for it. */
static __always_inline void fg_fleet_refund(const struct fg_rule *r, __u64 cost)
{
	__u32 id = r->id & (FG_MAX_IDS - 1);
	struct fg_lease *l = bpf_map_lookup_elem(&fg_lease, &id);

	if (l && l->gen == r->gen)
		__sync_fetch_and_add(&l->tokens, (__s64)cost);
}

/* Charge a packet to the rule's buckets, then its pool: FG_CHARGE_*. */
static __always_inline int fg_charge(const struct fg_ctl *ctl, const struct fg_policy *pol,
				     const struct fg_rule *r, const struct fg_pkt *p, __u64 len,
				     struct fg_verd *v, int shadow, __u64 now_ns)
{
	__u64 now = now_ns << FG_TU_SHIFT, cost = 1, spent = 0;
	__u64 *tat = NULL, *drops = NULL;
	struct fg_bucket *a;
	__u32 ev = 0;
	int rc, leased = 0;

	if (r->cost == FG_COST_BYTES)
		cost = len < FG_MAX_COST ? len : FG_MAX_COST;

	if (r->src.inc && !(fg_skip & FG_SKIP_SRC)) {
		const struct fg_limit *lim = &r->src;

		tat = fg_src_bucket(ctl, pol, r, p, now, v, &drops);
		if (!tat) {
			if (r->on_full == FG_FULL_CLOSED) {
				v->ev |= 1u << FG_EV_FULL_CLOSED;
				return 0;
			}
			if (r->on_full == FG_FULL_OPEN) {
				v->ev |= 1u << FG_EV_FULL_OPEN;
			} else {
				v->ev |= 1u << FG_EV_OVERFLOW;
				a = fg_agg_bucket(FG_OVF_IDX(r->id & (FG_MAX_IDS - 1)));
				if (a)
					tat = &a->tat; /* its drops word is not counted: fg_agg */
				lim = &r->ovf;
			}
		}
		if (tat) {
			rc = fg_gcra_spend(tat, now, lim->inc * cost, lim->tau);
			if (rc != 1) {
				if (rc < 0)
					v->ev |= 1u << FG_EV_CONTENDED;
				if (drops) /* the source's own, which top ranks by */
					fg_sample_drop(drops, v, shadow, r, p, now);
				return 0;
			}
			spent = lim->inc * cost;
		}
	}

	a = NULL;
	if (r->agg.inc) {
		a = fg_agg_bucket(FG_AGG_IDX(r->id & (FG_MAX_IDS - 1)));
		if (!a)
			return FG_CHARGE_DROP;
		rc = fg_gcra_spend(&a->tat, now, r->agg.inc * cost, r->agg.tau);
		if (rc != 1) {
			v->ev |= 1u << (rc < 0 ? FG_EV_CONTENDED : FG_EV_AGG_DROP);
			/* the source did not get to send: give its tokens back */
			if (tat && spent)
				__sync_fetch_and_add(tat, -spent);
			return 0;
		}
	}

	if (r->fleet) {
		rc = fg_fleet_spend(r, cost, now, v);
		leased = rc == 2;
		if (!rc) {
			/* not sent: the local buckets get their tokens back */
			if (tat && spent)
				__sync_fetch_and_add(tat, -spent);
			if (a)
				__sync_fetch_and_add(&a->tat, -(r->agg.inc * cost));
			return FG_CHARGE_DROP;
		}
	}

	if (r->pool && !fg_pool_spend(pol, r, len, now, &ev)) {
		/* the host had no room: everything spent above goes back */
		if (tat && spent)
			__sync_fetch_and_add(tat, -spent);
		if (a)
			__sync_fetch_and_add(&a->tat, -(r->agg.inc * cost));
		if (leased)
			fg_fleet_refund(r, cost);
		v->ev |= ev;
		return FG_CHARGE_SHED;
	}
	return FG_CHARGE_OK;
}

/*
 * The concurrency cap of a rule (docs/concurrency.md), for a TCP SYN
 * without ACK that everything else admitted, so that a SYN the rate limit
 * drops never takes a place: under the cap it claims a pending place (a
 * retransmit keeps its own); at the cap it is refused, and that path
 * writes nothing. Shadow makes the same call and passes what it would
 * refuse. Non-SYN packets are never checked.
 */
_Static_assert(FG_EV_MAX <= 32, "fg_verd.ev has a bit per event");
static __always_inline void fg_cap(const struct fg_rule *r, const struct fg_pkt *p,
				   struct fg_verd *v, int shadow, __u64 now)
{
	struct fg_conn_key k;
	struct fg_conn_val *cv;
	__s64 est;
	int rc;

	if (p->proto != FG_IPPROTO_TCP || (p->tcp_flags & (FG_TCP_SYN | FG_TCP_ACK)) != FG_TCP_SYN)
		return;
	fg_conn_key_make(&k, p->family, p->saddr, r->mask4, r->mask6, r->id, r->gen);
	cv = fg_conn_find(&k, &est);
	/* over its established count: refused before the clock is read */
	rc = est >= (__s64)r->conn_cap ?
		     FG_CONN_AT_CAP :
		     fg_conn_admit_at(&k, cv, est, fg_conn_hsid(p->saddr, p->sport), r->conn_cap,
				      now, (__u64)r->conn_ttl_ms * 1000000);
	if (rc == FG_CONN_ADMIT || rc == FG_CONN_RETX)
		return;
	if (rc == FG_CONN_AT_CAP) {
		if (shadow) {
			v->out = FG_OUT_SHADOW;
			v->ev |= 1u << FG_EV_CAP_SHADOW;
		} else {
			v->out = FG_OUT_CAP;
			v->verdict = XDP_DROP;
		}
		return;
	}
	if (rc == FG_CONN_NOMEM) {
		v->ev |= 1u << FG_EV_CAP_NOMEM;
		if (r->on_full == FG_FULL_CLOSED)
			fg_drop(v, shadow);
		return;
	}
	v->ev |= 1u << (rc == FG_CONN_NOSLOT ? FG_EV_CAP_NOSLOT : FG_EV_CAP_CONTENDED);
	fg_drop(v, shadow);
}

/*
 * Ordered to fail fast: most entries a packet is tested against differ in
 * the destination port. A packet without ports (ICMP, other protocols,
 * non-first fragments) carries port 0, and entries with no port condition
 * span 0..65535, so the port tests need no flag first; likewise the TCP
 * flag test (mask 0 outside TCP). The rarer conditions sit behind flags.
 */
static __always_inline int fg_match(const struct fg_match *m, const struct fg_pkt *p, __u32 sets)
{
	__u8 f;

	if (p->dport < m->dport_lo || p->dport > m->dport_hi)
		return 0;
	if (p->sport < m->sport_lo || p->sport > m->sport_hi)
		return 0;
	if ((p->tcp_flags & m->tcp_mask) != m->tcp_val)
		return 0;
	if (m->proto && m->proto != p->proto)
		return 0;
	f = m->flags;
	if (f) {
		if ((f & FG_M_V4) && p->family != 4)
			return 0;
		if ((f & FG_M_V6) && p->family != 6)
			return 0;
		if (p->frag) {
			if (f & FG_M_L4)
				return 0;
		} else if (f & FG_M_FRAG) {
			return 0;
		}
		if ((f & FG_M_ICMP_TYPE) && p->icmp_type != m->icmp_type)
			return 0;
	}
	if (m->sets && !(m->sets & sets))
		return 0;
	return 1;
}

static __always_inline __u32 fg_class(__u8 proto)
{
	switch (proto) {
	case FG_IPPROTO_TCP:
		return FG_CLASS_TCP;
	case FG_IPPROTO_UDP:
		return FG_CLASS_UDP;
	case FG_IPPROTO_ICMP:
	case FG_IPPROTO_ICMPV6:
		return FG_CLASS_ICMP;
	default:
		return FG_CLASS_OTHER;
	}
}

/* The index of the lowest set bit of x != 0 (x & -x times a de Bruijn
 * sequence: its top 6 bits are distinct for each power of two). */
static const __u8 fg_ctz_tab[64] = {
	0,  1,	2,  53, 3,  7,	54, 27, 4,  38, 41, 8,	34, 55, 48, 28, 62, 5,	39, 46, 44, 42,
	22, 9,	24, 35, 59, 56, 49, 18, 29, 11, 63, 52, 6,  26, 37, 40, 33, 47, 61, 45, 43, 21,
	23, 58, 17, 10, 51, 25, 36, 32, 60, 20, 57, 16, 50, 31, 19, 15, 30, 14, 13, 12,
};
#define FG_DEBRUIJN64 0x022fdd63cc95386dull

static __always_inline __u32 fg_ctz(__u64 x)
{
	return fg_ctz_tab[((x & -x) * FG_DEBRUIJN64) >> 58];
}

/* Entry i of class cls: its rule index if it matches, else -1. A global
 * function, verified once: fg_find_rule's candidate loop calls it. */
__noinline int fg_match_at(const struct fg_policy *pol, __u32 cls, __u32 i, const struct fg_pkt *p,
			   __u32 sets)
{
	const struct fg_match *m;

	if (!pol || !p)
		return -1;
	m = &pol->match[cls & (FG_NCLASS - 1)][i & (FG_MAX_MATCH - 1)];
	return fg_match(m, p, sets) ? m->rule : -1;
}

/*
 * fg_find_rule's first step, inline (most packets stop here, and a global
 * function's call and return cost ~8 ns a packet here): the first candidate
 * of the packet's class, when the class has at most 64 entries. Its rule
 * index, or -1: then fg_find_rule decides (from the start: it finds the
 * same first candidate and goes on).
 */
static __always_inline int fg_find_first(const struct fg_policy *pol, const struct fg_pkt *p,
					 __u32 sets, __u32 slot)
{
	const struct fg_pidx *x;
	const struct fg_match *m;
	__u32 cls, n, bd, bs, i;
	__u64 c;

	if (fg_skip & FG_SKIP_SCAN)
		return -1;
	cls = fg_class(p->proto);
	n = pol->nmatch[cls];
	if (cls >= FG_NPCLASS || !n || n > 64)
		return -1;
	x = bpf_map_lookup_elem(&fg_pidx, &slot);
	if (!x)
		return -1;
	bd = x->cls[cls & 1][0][p->dport];
	bs = x->cls[cls & 1][1][p->sport];
	if (bd >= FG_PBM_N || bs >= FG_PBM_N)
		return -1;
	c = x->bm[bd].w[0] & x->bm[bs].w[0];
	if (!c)
		return -1;
	i = fg_ctz(c);
	if (i >= n)
		return -1;
	m = &pol->match[cls & (FG_NCLASS - 1)][i & (FG_MAX_MATCH - 1)];
	return fg_match(m, p, sets) ? (int)m->rule : -1;
}

/*
 * First match within the packet's protocol class, by bitmap intersection
 * (struct fg_pidx): the entries that hold both the packet's ports (or its
 * ICMP type, or its protocol), lowest first, each tested in full; an entry
 * that excludes them costs nothing. A global function: the verifier checks it once, on its own,
 * instead of once per parse path of the caller. Returns the rule index, or
 * FG_MAX_RULES when nothing matched.
 */
__noinline int fg_find_rule(const struct fg_policy *pol, const struct fg_pkt *p, __u32 sets,
			    __u32 slot)
{
	const struct fg_pidx *x;
	__u32 cls, n, bd, bs, top, i, j, k, b;
	__u64 c;

	if (!pol || !p)
		return FG_MAX_RULES;
	if (fg_skip & FG_SKIP_SCAN)
		return fg_skip_rule;
	x = bpf_map_lookup_elem(&fg_pidx, &slot);
	if (!x)
		return FG_MAX_RULES;
	cls = fg_class(p->proto);
	n = pol->nmatch[cls];
	if (n > FG_MAX_MATCH)
		n = FG_MAX_MATCH;
	if (cls < FG_NPCLASS) {
		bd = x->cls[cls & 1][0][p->dport];
		bs = x->cls[cls & 1][1][p->sport];
	} else {
		/* ICMP (class 2) by type, the others (3) by protocol */
		__u32 v = cls == FG_CLASS_ICMP ? p->icmp_type : p->proto;

		bd = bs = x->k8[cls & 1][v & 255];
	}
	if (bd >= FG_PBM_N || bs >= FG_PBM_N)
		return FG_MAX_RULES;
	/* the words with a candidate, below the class's entry count (one
	 * word: no summary to read) */
	if (n <= 64) {
		if (!n)
			return FG_MAX_RULES;
		j = 0;
		top = 0;
	} else {
		top = x->sum[bd] & x->sum[bs] & ((1u << ((n + 63) / 64)) - 1);
		if (!top)
			return FG_MAX_RULES;
		j = fg_ctz(top) & (FG_MATCH_WORDS - 1);
		top &= top - 1;
	}
	c = x->bm[bd].w[j] & x->bm[bs].w[j];
	if (c) {
		/* the first candidate inline: most packets stop here */
		const struct fg_match *m;

		i = j * 64 + fg_ctz(c);
		c &= c - 1;
		if (i >= n)
			return FG_MAX_RULES;
		m = &pol->match[cls & (FG_NCLASS - 1)][i & (FG_MAX_MATCH - 1)];
		if (fg_match(m, p, sets))
			return m->rule;
	}
	for (k = 0; k < FG_MATCH_WORDS; k++) {
		for (b = 0; b < 64 && c; b++) {
			int r;

			i = j * 64 + fg_ctz(c);
			c &= c - 1;
			if (i >= n)
				return FG_MAX_RULES;
			r = fg_match_at(pol, cls, i, p, sets);
			if (r >= 0)
				return r;
		}
		if (!top)
			break;
		j = fg_ctz(top) & (FG_MATCH_WORDS - 1);
		top &= top - 1;
		c = x->bm[bd].w[j] & x->bm[bs].w[j];
	}
	return FG_MAX_RULES;
}

/*
 * The runtime lists (struct fg_rt): the list of the longest entry covering
 * the source whose time is not over, or FG_LIST_NONE. Past an expired
 * entry (counted) the next lookup asks for prefixes shorter than it, at
 * most FG_RT_DEPTH lookups in all; key starts with its prefixlen.
 */
static __always_inline __u32 fg_rt_walk(void *map, void *key, __u64 now, __u32 *ev)
{
	__u32 *plen = key;
	const struct fg_rt *e;
	int i;

	for (i = 0; i < FG_RT_DEPTH; i++) {
		e = bpf_map_lookup_elem(map, key);
		if (!e)
			break;
		if (!e->expires || now < e->expires)
			return e->list;
		*ev |= 1u << FG_EV_RT_EXPIRED;
		if (!e->plen || e->plen > *plen)
			break;
		*plen = e->plen - 1;
	}
	return FG_LIST_NONE;
}

/* A global function: the verifier checks the walk once, on its own. */
__noinline __u32 fg_rt_lookup(const struct fg_pkt *p, __u64 now, __u32 *ev)
{
	__u32 e = 0, list;

	if (!p || !ev)
		return FG_LIST_NONE;
	if (p->family == 4) {
		struct fg_rt_key4 k = { .prefixlen = 32, .addr = p->saddr[0] };

		list = fg_rt_walk(&fg_rt4, &k, now, &e);
	} else {
		struct fg_rt_key6 k = { .prefixlen = 128 };

		__builtin_memcpy(k.addr, p->saddr, 16);
		list = fg_rt_walk(&fg_rt6, &k, now, &e);
	}
	*ev |= e;
	return list;
}

/* Runtime lists first (they are the incident-time decision); a deny in
 * shadow is counted and passed, like the file's. 1 when they decided. */
static __always_inline int fg_rt_decide(const struct fg_pkt *p, int shadow, struct fg_verd *v,
					__u64 now)
{
	__u32 ev = 0, list = fg_rt_lookup(p, now, &ev);

	v->ev |= ev;
	if (list == FG_LIST_ALLOW) {
		v->out = FG_OUT_RT_ALLOW;
		return 1;
	}
	if (list == FG_LIST_DENY) {
		v->out = FG_OUT_RT_DENY;
		if (!shadow)
			v->verdict = XDP_DROP;
		return 1;
	}
	return 0;
}

/*
 * The IPv4 lists of slot for saddr (DIR-16-8-8, struct fg_dir4): one read
 * of the /16 entry, one more per block level below it, one LPM lookup in
 * fg_pfx4 where the entry says FG_DIR4_TRIE (past the block budget,
 * floodgate.h); NULL when the slot has no table or nothing matches.
 */
static __always_inline struct fg_pfx *fg_dir4_lookup(__u32 slot, __be32 saddr)
{
	__u32 a = __builtin_bswap32(saddr), e, b;
	struct fg_dir4 *dir = bpf_map_lookup_elem(&fg_dir4, &slot);
	struct fg_blk4 *blk;
	void *inner;

	if (!dir)
		return NULL;
	e = dir->e[a >> 16];
	if (e & FG_DIR4_BLK) {
		inner = bpf_map_lookup_elem(&fg_blk4, &slot);
		if (!inner)
			return NULL;
		b = e & ~FG_DIR4_BLK;
		blk = bpf_map_lookup_elem(inner, &b);
		if (!blk)
			return NULL;
		e = blk->e[(a >> 8) & 0xff];
		if (e & FG_DIR4_BLK) {
			b = e & ~FG_DIR4_BLK;
			blk = bpf_map_lookup_elem(inner, &b);
			if (!blk)
				return NULL;
			e = blk->e[a & 0xff];
		}
	}
	if (e & FG_DIR4_TRIE) {
		struct fg_lpm4 key = { .prefixlen = 64, .slot = slot, .addr = saddr };

		return bpf_map_lookup_elem(&fg_pfx4, &key);
	}
	return &dir->leaf[e & (FG_DIR4_LEAVES - 1)];
}

static __always_inline void fg_decide(struct xdp_md *ctx, __u64 len, struct fg_verd *v)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	const struct fg_policy *pol;
	const struct fg_rule *r;
	struct fg_pfx *lst;
	struct fg_pkt p = {};
	struct fg_ctl *ctl;
	__u32 k = 0, ri, sets = 0;
	__u64 now = 0; /* ns: read for the runtime lists or a limit rule, once */
	int shadow, rc;

	ctl = bpf_map_lookup_elem(&fg_ctl, &k);
	if (!ctl)
		return;
	/* bypass before bypass_until: the CLI stores them in the other order */
	if (FG_READ_ONCE(ctl->bypass)) {
		__u64 until = FG_READ_ONCE(ctl->bypass_until);

		/* its own read: sharing it with the later steps cost the verifier
		 * 2x, for the one rare path (switched on, time over) that reads twice */
		if (!until || fg_now_ns() < until) {
			v->out = FG_OUT_BYPASS;
			return;
		}
		v->ev |= 1u << FG_EV_BYPASS_EXPIRED;
	}
	shadow = fg_global_mode(ctl) == FG_MODE_SHADOW;
	k = FG_READ_ONCE(ctl->slot) & 1;
	pol = bpf_map_lookup_elem(&fg_policy, &k);
	if (!pol)
		return;

	rc = fg_parse(data, data_end, len, &p);
	if (rc == FG_P_NONIP) {
		v->out = FG_OUT_NONIP;
		return;
	}
	if (rc != FG_P_IP) {
		v->out = FG_OUT_MALFORMED;
		if (pol->malformed_verdict == FG_DROP && !shadow)
			v->verdict = XDP_DROP;
		return;
	}
	if (p.frag)
		v->ev |= 1u << FG_EV_FRAG;
	/* a word of the line already read: no entries, no lookup */
	if (FG_READ_ONCE(ctl->rt_active)) {
		now = fg_now_ns();
		if (fg_rt_decide(&p, shadow, v, now))
			return;
	}

	if (fg_skip & FG_SKIP_LISTS) {
		lst = NULL;
	} else if (p.family == 4 && (pol->lists & 1) && fg_trie4) {
		struct fg_lpm4 key = { .prefixlen = 64, .slot = k, .addr = p.saddr[0] };

		lst = bpf_map_lookup_elem(&fg_pfx4, &key);
	} else if (p.family == 4 && (pol->lists & 1)) {
		lst = fg_dir4_lookup(k, p.saddr[0]);
	} else if (p.family == 6 && (pol->lists & 2)) {
		struct fg_lpm6 key = { .prefixlen = 160, .slot = k };

		__builtin_memcpy(key.addr, p.saddr, 16);
		lst = bpf_map_lookup_elem(&fg_pfx6, &key);
	} else {
		lst = NULL;
	}
	if (lst) {
		if (lst->list == FG_LIST_ALLOW) {
			v->out = FG_OUT_ALLOW;
			return;
		}
		if (lst->list == FG_LIST_DENY) {
			v->out = FG_OUT_DENY;
			if (!shadow)
				v->verdict = XDP_DROP;
			return;
		}
		sets = lst->sets;
	}

	rc = fg_find_first(pol, &p, sets, k);
	ri = rc >= 0 ? (__u32)rc : fg_find_rule(pol, &p, sets, k);
	if (ri >= FG_MAX_RULES) {
		/* unmatched: the policy's default verdict, global row */
		if (pol->default_verdict == FG_DROP)
			fg_drop(v, shadow);
		return;
	}

	r = &pol->rules[ri];
	fg_src4_prefetch(ctl, r, &p);
	v->row = r->id & (FG_MAX_IDS - 1);
	k = v->row;
	v->st = bpf_map_lookup_elem(&fg_stats, &k);
	shadow |= fg_rule_mode(ctl, r, k) == FG_MODE_SHADOW; /* global shadow wins */

	switch (r->action) {
	case FG_ACT_PASS:
		return;
	case FG_ACT_DROP:
		fg_drop(v, shadow);
		return;
	default:
		/*
		 * The packet's one clock read, passed to shedding, the buckets and
		 * the cap (the runtime lists' read is reused). Here rather than
		 * lazily in each step: a "read if not yet" test per step made the
		 * verifier walk 735k instructions, against 195k this way.
		 */
		if (!now)
			now = fg_now_ns();
		if (r->tier) {
			rc = fg_shed_tier(pol, r, &p, shadow, now);
			/* branch-free: one path on for the verifier, marked or not */
			v->ev |= ((__u32)rc & FG_SHED_MARK) << FG_EV_SHED_TIER;
			if (rc & 2) {
				fg_shed_verdict(v, 0);
				return;
			}
		}
		rc = fg_charge(ctl, pol, r, &p, len, v, shadow, now);
		if (rc == FG_CHARGE_SHED)
			fg_shed_verdict(v, shadow);
		else if (rc != FG_CHARGE_OK)
			fg_drop(v, shadow);
		else {
			if (r->conn_cap)
				fg_cap(r, &p, v, shadow, now);
			if (v->out == FG_OUT_PASS && (v->ev & (1u << FG_EV_SHED_TIER)))
				v->out = FG_OUT_SHED_SHADOW; /* would have been shed (shadow) */
		}
	}
}

/* The one exit: count the outcome (and events) in the row, return. */
static __always_inline int fg_exit(struct fg_verd *v, __u64 len)
{
	struct fg_stats *st = v->st;
	__u32 out = v->out;

	if (fg_skip & FG_SKIP_STATS)
		return v->verdict;
	if (!st) {
		__u32 k = v->row;

		st = bpf_map_lookup_elem(&fg_stats, &k);
		if (!st)
			return v->verdict;
	}
	if (out >= FG_OUT_MAX)
		out = FG_OUT_PASS;
	st->pkts[out]++;
	st->bytes[out] += len;
	if (v->ev) {
		__u32 e;

#pragma unroll
		for (e = 0; e < FG_EV_MAX; e++)
			if (v->ev & (1u << e))
				st->ev[e]++;
	}
	return v->verdict;
}

SEC("xdp.frags")
int floodgate(struct xdp_md *ctx)
{
	struct fg_verd v = {
		.row = FG_ROW_GLOBAL,
		.out = FG_OUT_PASS,
		.verdict = XDP_PASS,
	};
	__u64 len = bpf_xdp_get_buff_len(ctx);

	fg_decide(ctx, len, &v);
	return fg_exit(&v, len);
}
