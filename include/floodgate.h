/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * floodgate ABI: every struct shared by the XDP program (bpf/) and userspace
 * (user/, tools/, tests/). Only fixed-width types and explicit padding, so the
 * layout is the same for clang's BPF target and for the host compiler.
 *
 * Bump FG_ABI_VERSION whenever a layout below changes, and say what changed
 * in docs/abi.md: pinned maps carry it in fg_ctl and userspace refuses a pin
 * dir from another version, because libbpf's reuse check compares only
 * sizes, not layouts.
 */
#ifndef FLOODGATE_H
#define FLOODGATE_H

#ifdef __BPF__
/* vmlinux.h provides the __u* types and struct bpf_spin_lock on the BPF side */
#else
#include <linux/types.h>
#include <linux/bpf.h> /* struct bpf_spin_lock */
#endif

#define FG_ABI_MAGIC   0x46474154u /* "FGAT" */
#define FG_ABI_VERSION 10u	   /* what changed, version by version: docs/abi.md */
/*
 * Rules and rule ids. A policy file writes at most FG_MAX_FILE_RULES rules;
 * the compiler appends the implicit "fragments" rule, so a policy has at
 * most FG_MAX_RULES. A rule keeps its id (stats row, buckets, name) across
 * reloads while its name stays. There are at least twice as many ids, so a
 * reload can replace every rule at once: the old policy's ids stay in use
 * until the slot flip, and the new rules still find free ones. Everything
 * indexed by rule (stats rows, fg_names, fg_agg buckets, the override
 * bitmaps in fg_ctl) is indexed by id.
 */
#define FG_MAX_FILE_RULES 256 /* rules a policy file may write */
#define FG_MAX_RULES \
	(FG_MAX_FILE_RULES + 1)	 /* rules per policy (fg_policy.rules), fragments included */
#define FG_MAX_IDS    1024	 /* rule ids 0..1023 */
#define FG_ROW_GLOBAL FG_MAX_IDS /* stats row for pre-rule outcomes */
#define FG_NROWS      (FG_MAX_IDS + 1)
#define FG_OVR_WORDS  (FG_MAX_IDS / 64) /* u64 words of a bitmap by rule id */
_Static_assert((FG_MAX_IDS & (FG_MAX_IDS - 1)) == 0 && FG_MAX_IDS % 64 == 0,
	       "the program masks ids with FG_MAX_IDS - 1 and reads bitmaps by word");
_Static_assert(FG_MAX_IDS >= 2 * FG_MAX_RULES, "a reload that renames every rule finds free ids");
#define FG_MAX_MATCH   1024		   /* compiled match entries per protocol class */
#define FG_MATCH_WORDS (FG_MAX_MATCH / 64) /* u64 words of a bitmap by match entry */
_Static_assert(FG_MATCH_WORDS <= 16 && (FG_MAX_MATCH & (FG_MAX_MATCH - 1)) == 0,
	       "fg_pidx.sum has a bit per word; the program masks entries with FG_MAX_MATCH - 1");
#define FG_MAX_SETS   32 /* source prefix sets (bit per set) */
#define FG_NAME_LEN   48
#define FG_MAX_IFS    16
#define FG_MAX_VLAN   2 /* 802.1Q / 802.1ad tags parsed; a third is malformed */
#define FG_MAX_EXTHDR 8 /* IPv6 extension headers walked; more is malformed */
#define FG_MAX_CAS    8 /* compare-and-swap retries before giving up */

/*
 * Time. Buckets keep a theoretical arrival time (GCRA) in "time units" of
 * 2^-FG_TU_SHIFT ns, so that byte rates above 1 GB/s still get a
 * sub-nanosecond cost per byte without rounding a 64-byte frame's cost by
 * more than 0.25%. now_tu = ktime_ns << 6 wraps after 2^58 ns, 9.1 years of
 * uptime.
 */
#define FG_TU_SHIFT   6
#define FG_TU_PER_SEC (1000000000ull << FG_TU_SHIFT)
#define FG_MAX_COST   (1u << 20)   /* one frame never costs more than 1 MiB */
#define FG_MAX_TAU    (1ull << 62) /* burst * inc must stay below this */

/* Which clock the program reads (load-time, rodata). */
enum fg_clock {
	FG_CLOCK_COARSE = 0,  /* bpf_ktime_get_coarse_ns: ~3 ns, 1 tick (4 ms) granularity */
	FG_CLOCK_PRECISE = 1, /* bpf_ktime_get_ns: ~25 ns, exact */
	FG_CLOCK_TEST = 2,    /* tests only: fake_now in .bss */
};

/* Benchmark ablations (rodata fg_skip, tools/fgbench.c): each bit removes
 * one step of the program, so that its cost is the difference; never set
 * by floodgated. */
/* (no clock read: load with fg_clock = FG_CLOCK_TEST, one .bss load) */
#define FG_SKIP_LISTS 0x02 /* no allow/deny/set lookup */
#define FG_SKIP_SCAN  0x04 /* no rule scan: rodata fg_skip_rule is the match */
#define FG_SKIP_SRC   0x08 /* no per-source bucket: as if the rule had none */
#define FG_SKIP_STATS 0x10 /* no counters at the exit */

enum fg_mode {
	FG_MODE_ENFORCE = 0,
	FG_MODE_SHADOW = 1,
};

/* An operator's mode override (fg_ctl.mode_ovr, and per rule id). */
enum fg_ovr {
	FG_OVR_NONE = 0, /* the policy file decides */
	FG_OVR_ENFORCE = 1,
	FG_OVR_SHADOW = 2,
};

enum fg_verdict {
	FG_PASS = 0,
	FG_DROP = 1,
};

/* What a rule does with packets it matches. */
enum fg_action {
	FG_ACT_LIMIT = 0, /* token buckets decide */
	FG_ACT_PASS = 1,  /* always pass (an exemption) */
	FG_ACT_DROP = 2,  /* always drop */
};

enum fg_cost {
	FG_COST_PKTS = 0,
	FG_COST_BYTES = 1, /* whole frame, all fragments of a multi-buffer frame */
};

/* What happens when a source cannot get its own bucket (table full, or
 * new-key admission limited). */
enum fg_on_full {
	FG_FULL_OVERFLOW = 0, /* charge the rule's shared overflow bucket */
	FG_FULL_OPEN = 1,     /* pass without a per-source charge (aggregate still applies) */
	FG_FULL_CLOSED = 2,   /* drop */
};

/*
 * Exclusive outcomes: every packet is counted in exactly one. Every outcome
 * that refuses a packet in enforce has a shadow twin, counted instead when
 * shadow (global or the rule's) passes the packet (fg_out_shadow below;
 * docs/abi.md, ABI 8).
 */
enum fg_outcome {
	FG_OUT_PASS = 0,    /* admitted by a rule, or unmatched with default pass */
	FG_OUT_DROP,	    /* dropped by a rule, or unmatched with default drop */
	FG_OUT_SHADOW,	    /* would have been dropped (drop); passed because of shadow */
	FG_OUT_ALLOW,	    /* allowlisted source */
	FG_OUT_DENY,	    /* denylisted source: dropped */
	FG_OUT_BYPASS,	    /* kill switch on */
	FG_OUT_MALFORMED,   /* unparseable IP packet, dropped or passed per the policy */
	FG_OUT_NONIP,	    /* ARP, LLDP, ... always passed */
	FG_OUT_RT_ALLOW,    /* on a runtime allow list (floodgate allow add) */
	FG_OUT_RT_DENY,	    /* on a runtime deny list (floodgate deny add): dropped */
	FG_OUT_CAP,	    /* SYN refused: its source holds the rule's concurrency cap */
	FG_OUT_SHED,	    /* shed: the host is overloaded (tier shedding, or its pool refused) */
	FG_OUT_SHED_SHADOW, /* would have been shed (shed); passed (shadow) */
	FG_OUT_DENY_SHADOW, /* would have been dropped as deny; passed (shadow) */
	FG_OUT_RT_DENY_SHADOW,	 /* would have been dropped as rt_deny; passed (shadow) */
	FG_OUT_MALFORMED_SHADOW, /* malformed, the policy drops it; passed (shadow) */
	FG_OUT_CAP_SHADOW,	 /* would have been refused as cap; passed (shadow) */
	/* SYN authentication (struct fg_synauth; docs/syn-auth.md) */
	FG_OUT_SA_ANSWER,    /* SYN answered with a cookie SYN-ACK (XDP_TX); nothing charged */
	FG_OUT_SA_CAPPED,    /* SYN dropped: the reply cap refused its SYN-ACK */
	FG_OUT_SA_BADCOOKIE, /* ACK/RST of an unverified source, bad cookie, no socket: dropped */
	FG_OUT_SA_BADCOOKIE_SHADOW, /* would have been dropped as sa_badcookie; passed (shadow) */
	FG_OUT_SA_PROOF,	    /* retransmit way: an RST returning a valid cookie, consumed */
	FG_OUT_MAX,
};

/* The outcome a refusal out is counted as when shadow passes the packet;
 * an outcome that refuses nothing is its own. A constant folds to one. */
static inline __attribute__((always_inline)) __u32 fg_out_shadow(__u32 out)
{
	switch (out) {
	case FG_OUT_DROP:
		return FG_OUT_SHADOW;
	case FG_OUT_SHED:
		return FG_OUT_SHED_SHADOW;
	case FG_OUT_DENY:
		return FG_OUT_DENY_SHADOW;
	case FG_OUT_RT_DENY:
		return FG_OUT_RT_DENY_SHADOW;
	case FG_OUT_MALFORMED:
		return FG_OUT_MALFORMED_SHADOW;
	case FG_OUT_CAP:
		return FG_OUT_CAP_SHADOW;
	case FG_OUT_SA_BADCOOKIE:
		return FG_OUT_SA_BADCOOKIE_SHADOW;
	default:
		return out;
	}
}

/* Events: counted in addition to the outcome. */
enum fg_event {
	FG_EV_INSERT = 0,     /* new source bucket created */
	FG_EV_OVERFLOW,	      /* charged to the rule's overflow bucket */
	FG_EV_INSERT_LIMITED, /* new key refused by the admission limiter */
	FG_EV_INSERT_FAIL,    /* map update failed (table full, ENOMEM) */
	FG_EV_FULL_OPEN,      /* passed without per-source charge (on_full: open) */
	FG_EV_FULL_CLOSED,    /* dropped because no bucket (on_full: closed) */
	FG_EV_CONTENDED,      /* CAS retries exhausted: dropped */
	FG_EV_AGG_DROP,	      /* dropped by the aggregate bucket */
	FG_EV_FRAG,	      /* non-first fragment */
	FG_EV_BYPASS_EXPIRED, /* bypass set but its time was over */
	FG_EV_RT_EXPIRED,     /* a runtime list entry matched but its time was over: ignored */
	FG_EV_FLEET_DROP,     /* fleet lease exhausted: dropped (or would-drop in shadow) */
	FG_EV_FLEET_LOSS,     /* decided under on_loss (lease expired, or stale: gen mismatch) */
	/* concurrency caps (a capped rule's SYN, after every other check passed) */
	FG_EV_CAP_SHADOW,    /* at the cap, passed because of shadow (the outcome cap_shadow) */
	FG_EV_CAP_NOSLOT,    /* under the cap, but FG_CONN_SLOTS handshakes pending: dropped */
	FG_EV_CAP_CONTENDED, /* pending-slot CAS retries exhausted: dropped */
	FG_EV_CAP_NOMEM,     /* no pending entry for a new source: per on_full (closed drops) */
	FG_EV_SHED_TIER,     /* shed (or would-shed) by the adaptive shedder */
	FG_EV_SHED_CAP,	     /* non-critical over its (1 - reserve) share of a pool */
	FG_EV_SHED_POOL,     /* the pool (or its part above the reserve) was empty */
	FG_EV_TEV_CAPPED,    /* a throttle event refused by the ring's rate cap (FG_TEV_RATE) */
	FG_EV_TEV_LOST,	     /* a throttle event lost: the ring fg_tev was full */
	/* SYN authentication (struct fg_synauth; docs/syn-auth.md) */
	FG_EV_SA_SHADOW, /* a SYN shadow would have answered: passed unanswered, charged as before */
	FG_EV_SA_VALID,	 /* an ACK (RST, retransmit way) returned a valid cookie */
	FG_EV_SA_VERIFIED, /* a source was marked verified (new, or renewed) */
	FG_EV_SA_NOKEY,	   /* no secret for this time (fg_sakey): SYN passed unanswered, charged */
	FG_EV_SA_SOCKET,   /* a socket holds the 4-tuple: an unverified source's ACK with a bad
			  * cookie, or (handoff) a SYN on a TIME_WAIT: passed to the kernel */
	FG_EV_SA_DUP, /* valid cookie of a handshake charged already (fg_sadup): not charged again */
	FG_EV_SA_FAIL, /* a step could not run (no metadata room, no way to claim, ...): see docs */
	FG_EV_MAX,
};

/*
 * fg_ctl[0]: runtime switches, read first by every packet.
 *
 * Writers. The map is BPF_F_MMAPABLE. fg_ctl_init writes the whole value of
 * a fresh pin dir before any program is attached; after that nobody
 * rewrites it whole: every writer maps it and stores only its own fields
 * with atomic stores (user/maps/ctl.h), so concurrent writers never lose each
 * other's fields and none waits for a lock. Policy apply (daemon) stores
 * slot and mode; the operator (CLI) stores bypass_until then bypass, and the
 * overrides. rt_active is only ever changed by atomic add and subtract
 * (struct fg_rt).
 *
 * Modes. The policy file sets the global mode (mode) and each rule's mode
 * (fg_rule.mode); the daemon applies them at start, on adoption and on
 * every reload. An operator override sits on top of the file and persists
 * across reloads and restarts, until the operator clears it. Global shadow
 * wins over every rule:
 *   global_shadow = mode_ovr ? mode_ovr == FG_OVR_SHADOW : mode == FG_MODE_SHADOW
 *   rule_shadow   = global_shadow || (bit id of rule_ovr_set ?
 *                   bit id of rule_ovr_shadow : rule->mode == FG_MODE_SHADOW)
 *
 * Layout. An mmapable array's values start on a page, so bytes 0..63 are
 * one cache line: everything the program reads for every packet is there.
 * The override bitmaps (a bit per rule id) are not: the program reads
 * rule_ovr_set only while rule_ovr_n is not 0, and rule_ovr_shadow only for
 * a rule whose rule_ovr_set bit is 1. rule_ovr_n may count too many, never
 * too few: a writer adds 1 before it sets a bit (and takes it back if the
 * bit was set already) and subtracts 1 only for a bit it cleared.
 */
struct fg_ctl {
	__u32 magic;	/*  0 FG_ABI_MAGIC */
	__u32 abi;	/*  4 FG_ABI_VERSION */
	__u32 slot;	/*  8 active fg_policy slot, 0 or 1 (apply) */
	__u32 mode;	/* 12 enum fg_mode: the policy file's global mode (apply) */
	__u32 bypass;	/* 16 kill switch: 1 = pass everything, touch nothing (CLI) */
	__u32 mode_ovr; /* 20 enum fg_ovr: the operator's global mode (CLI) */
	__u64 bypass_until; /* 24 CLOCK_MONOTONIC ns, 0 = until switched off; read only while bypass is 1 */
	__u64 seed4;	 /* 32 fg_src4 hash seed, random per pin dir (init) */
	__u32 src4_bits; /* 40 fg_src4 has 1 << src4_bits sets (init) */
	__u32 rt_active; /* 44 runtime list entries present, both families; 0 = no lookup (CLI, daemon; atomic add/sub) */
	__u32 rule_ovr_n; /* 48 bits set in rule_ovr_set, or more; 0 = no bitmap read (CLI, apply; atomic add/sub) */
	__u32 src6_bits; /* 52 fg_src6 has 1 << src6_bits sets (init) */
	__u32 rt_scoped; /* 56 scoped runtime deny entries present (fg_rts4, fg_rts6); 0 = no lookup (atomic add/sub) */
	__u32 pad1;			  /* 60 */
	__u64 rule_ovr_set[FG_OVR_WORDS]; /* 64 bit per rule id: the operator set its mode (CLI) */
	__u64 rule_ovr_shadow
		[FG_OVR_WORDS]; /* 192 ... to shadow (1) or enforce (0); meaningful where set */
	__u64 ovr_since; /* 320 CLOCK_REALTIME s of the last override change, 0 = never (CLI) */
	__u64 seed6[2]; /* 328 fg_src6 digest key (SipHash), random per pin dir (init); IPv6 only */
};
_Static_assert(__builtin_offsetof(struct fg_ctl, rule_ovr_set) == 64 &&
		       __builtin_offsetof(struct fg_ctl, rule_ovr_shadow) ==
			       64 + 8 * FG_OVR_WORDS &&
		       __builtin_offsetof(struct fg_ctl, seed6) == 328 &&
		       sizeof(struct fg_ctl) == 344,
	       "fg_ctl: the per-packet fields fill the first cache line, the bitmaps follow");

/* A GCRA limit. inc = time units per cost unit (FG_TU_PER_SEC / rate);
 * tau = burst * inc. inc == 0 means no limit. */
struct fg_limit {
	__u64 inc;
	__u64 tau;
};

/* One rule's action and limits. Rules are identified by name across
 * reloads; id indexes the stats row and, with gen, the bucket keys, so that
 * a rule that survives a reload keeps its buckets and a reused id does not
 * inherit a deleted rule's buckets. */
struct fg_rule {
	struct fg_limit src; /* per source (key = masked saddr) */
	struct fg_limit agg; /* all sources together */
	struct fg_limit ovf; /* shared bucket for sources without their own */
	__be32 mask4;	     /* source grouping mask, IPv4 */
	__be32 mask6[4];     /* source grouping mask, IPv6 */
	__u16 id;	     /* 0..FG_MAX_IDS-1 */
	__u16 gen;	     /* bumped when an id is given to a new rule */
	__u8 action;	     /* enum fg_action */
	__u8 mode;	     /* enum fg_mode */
	__u8 cost;	     /* enum fg_cost */
	__u8 on_full;	     /* enum fg_on_full */
	__u8 fleet;	     /* 1: after the local buckets, spend from fg_lease[id] */
	__u8 tier;	     /* enum fg_tier; 0 (critical) = never shed, as without shedding */
	__u8 pool;	     /* 1 + index into fg_policy.pools; FG_POOL_NONE (0) = none */
	__u8 pad;
	/* concurrency cap (docs/concurrency.md): a TCP SYN is refused while its
	 * source holds conn_cap connections and pending handshakes */
	__u32 conn_cap;	   /* 0 = no cap */
	__u32 conn_ttl_ms; /* how long an admitted handshake holds its place */
};
_Static_assert(sizeof(struct fg_rule) == 88,
	       "fg_rule: fleet, tier and pool fill the tail padding, the concurrency cap adds 8");

/*
 * Load shedding (docs/shedding.md). A rule has a tier; 0 is the default,
 * so a rule without one is never shed. The adaptive shedder sheds from the
 * highest number down: best-effort first, critical never.
 */
enum fg_tier {
	FG_TIER_CRITICAL = 0,
	FG_TIER_NORMAL = 1,
	FG_TIER_BULK = 2,
	FG_TIER_BEST_EFFORT = 3,
	FG_NTIERS = 4,
};

/* Per tier, three thresholds, so that a tier sheds new TCP work before
 * admitted work (docs/shedding.md section 1). */
enum fg_shed_kind {
	FG_SHED_ANY = 0, /* not TCP */
	FG_SHED_NEW = 1, /* TCP SYN without ACK: a new connection */
	FG_SHED_EST = 2, /* any other TCP packet */
	FG_SHED_NKIND = 3,
};
/* The program sheds iff (bpf_get_prandom_u32() >> 1) < thr: 31 random bits
 * against thr in [0, FG_SHED_ONE], exact at both ends. */
#define FG_SHED_ONE (1u << 31)

/*
 * A capacity pool (docs/shedding.md section 4): one shared GCRA tat,
 * fg_agg[FG_POOL_IDX(id)], spent by all its rules after their own buckets;
 * critical with tau, the other tiers with tau_low (only while the pool
 * holds more than its reserve) and, before that, through the cap,
 * fg_agg[FG_CAP_IDX(id)], which bounds their rate to (1 - reserve) of the
 * pool's. A refusal is a shed, not a drop.
 */
#define FG_MAX_POOLS   16		  /* pools per policy (fg_policy.pools) */
#define FG_POOL_IDS    (2 * FG_MAX_POOLS) /* bucket ids, as for rules: room for a reload */
#define FG_POOL_NONE   0    /* fg_rule.pool: the rule draws from no pool, as an all-zero rule */
#define FG_POOL_NOSHED 0x01 /* fg_pool.flags: the adaptive shedder leaves its rules alone */
struct fg_pool {
	__u64 inc;     /*  0 time units per cost unit: 1 / rate */
	__u64 tau;     /*  8 critical: burst * inc, the whole pool */
	__u64 tau_low; /* 16 other tiers: tau * (1 - reserve) */
	struct fg_limit
		cap; /* 24 other tiers together: (1 - reserve) of rate and burst; inc 0 = none */
	__u16 id;    /* 40 bucket id, 0..FG_POOL_IDS-1, kept by name across reloads (apply) */
	__u8 cost;   /* 42 enum fg_cost: the pool's unit, whatever its rules' */
	__u8 flags;  /* 43 FG_POOL_* */
	__u32 pad;   /* 44 */
};
_Static_assert(sizeof(struct fg_pool) == 48, "fg_pool layout");

/*
 * fg_shed[0]: the adaptive shedder's output, read by packets of rules with
 * a tier other than critical. BPF_F_MMAPABLE: floodgated stores thr, end,
 * hshift and shadow field by field every sample; the CLI stores off. No
 * writer rewrites the whole value, and a packet that reads a mix of an old
 * and a new sample judges by a valid state.
 *
 * Dead-daemon decay (fg_shed_decayed below): the thresholds hold as written
 * until end - 2^hshift, then fall linearly to 0 at end. A live daemon
 * rewrites end (now + 2 * interval + 2^hshift) before the hold runs out;
 * a dead one leaves a host shedding for at most that long. end 0: nothing
 * is shed.
 */
struct fg_shed_ctl {
	__u32 thr[FG_NTIERS][FG_SHED_NKIND]; /*  0 [FG_TIER_CRITICAL] stays 0 (daemon) */
	__u64 end;    /* 48 CLOCK_MONOTONIC ns; thresholds are 0 from here on (daemon) */
	__u32 hshift; /* 56 ... and fall linearly over the 2^hshift ns before end (daemon) */
	__u32 shadow; /* 60 1: count what would be shed, shed nothing (daemon, policy) */
	__u32 off;    /* 64 1: no adaptive shedding at all; pools still apply (CLI) */
	__u32 pad;    /* 68 */
};
_Static_assert(sizeof(struct fg_shed_ctl) == 72, "fg_shed_ctl layout");

#define FG_SHED_GRAIN	   10 /* ns >> 10: ~1 us steps, keeps thr * rem below 2^61 */
#define FG_SHED_HSHIFT_MIN (FG_SHED_GRAIN + 1)
#define FG_SHED_HSHIFT_MAX 40 /* 2^40 ns: 18 min */

/* A threshold as the program applies it at now_ns: a subtraction, two
 * compares, a multiply, two shifts. A corrupt hshift fails open. */
static inline __attribute__((always_inline)) __u32 fg_shed_decayed(__u32 thr, __u64 end,
								   __u32 hshift, __u64 now_ns)
{
	__u64 rem;

	if (hshift < FG_SHED_HSHIFT_MIN || hshift > FG_SHED_HSHIFT_MAX || now_ns >= end)
		return 0;
	rem = end - now_ns;
	if (rem >= 1ull << hshift)
		return thr;
	/* thr <= 2^31, rem >> GRAIN < 2^(40 - 10): the product stays below 2^61 */
	return (__u32)(((__u64)thr * (rem >> FG_SHED_GRAIN)) >> (hshift - FG_SHED_GRAIN));
}

/* Protocol classes: match entries are compiled per class so that a TCP
 * packet never scans UDP rules. */
enum fg_class {
	FG_CLASS_TCP = 0,
	FG_CLASS_UDP,
	FG_CLASS_ICMP,	/* ICMP and ICMPv6 */
	FG_CLASS_OTHER, /* any other IP protocol, incl. ESP, no-next-header */
	FG_NCLASS,
};

/* fg_match.flags */
#define FG_M_L4	       0x01 /* needs the L4 header: never matches non-first fragments */
#define FG_M_ICMP_TYPE 0x02 /* icmp_type must be equal */
#define FG_M_V4	       0x04 /* IPv4 only */
#define FG_M_V6	       0x08 /* IPv6 only */
#define FG_M_FRAG      0x10 /* matches non-first fragments only */

/* TCP flag bits as in the header's 13th byte */
#define FG_TCP_FIN 0x01
#define FG_TCP_SYN 0x02
#define FG_TCP_RST 0x04
#define FG_TCP_PSH 0x08
#define FG_TCP_ACK 0x10
#define FG_TCP_URG 0x20
#define FG_TCP_ECE 0x40
#define FG_TCP_CWR 0x80

/* One compiled match entry; a rule with a port list compiles to several. */
struct fg_match {
	__u16 sport_lo, sport_hi; /* host order, inclusive; 0..65535 = any */
	__u16 dport_lo, dport_hi;
	__u32 sets;    /* source sets, any of; 0 = any source */
	__u8 proto;    /* IP protocol; 0 = any within the class */
	__u8 tcp_mask; /* (flags & tcp_mask) == tcp_val */
	__u8 tcp_val;
	__u8 icmp_type;
	__u8 flags; /* FG_M_* */
	__u8 pad;
	__u16 rule; /* index into fg_policy.rules (not an id) */
};
_Static_assert(sizeof(struct fg_match) == 20, "fg_match layout");

/*
 * fg_pidx[slot]: the first-match index, by bitmap intersection. For the
 * classes with ports (TCP, UDP), cls[c][0][dport] and cls[c][1][sport] name
 * a bitmap of bm each: bit i is set iff entry i of the class holds that
 * port in its range. The program ANDs the two and tests the set bits from
 * the lowest up (entries are in rule order): only entries that hold both
 * ports are tested, whatever the number of rules before them. An ICMP
 * packet takes the bitmap k8[0][its type] (an entry without icmp_type holds
 * every type), a packet of another protocol k8[1][its protocol] (an entry
 * without one holds all). sum[b] has bit j set iff word j of bm[b] is not
 * 0, so empty words are skipped too. all[class]: every entry of a class.
 *
 * Bitmaps: n ranges cut 0..65535 into at most 2n + 1 intervals of equal
 * candidates, 0..255 into at most 256; FG_PBM_N is enough for every
 * dimension at FG_MAX_MATCH entries plus one all[] bitmap per class.
 */
#define FG_NPCLASS 2			  /* FG_CLASS_TCP, FG_CLASS_UDP */
#define FG_PCLS	   (2 * FG_MAX_MATCH + 1) /* bitmaps per class and port dimension */
#define FG_PBM_N   (2 * FG_NPCLASS * FG_PCLS + FG_NCLASS + 2 * 256)
struct fg_pbm {
	__u64 w[FG_MATCH_WORDS]; /* bit i of word j: entry 64 * j + i */
};
struct fg_pidx {
	__u16 cls[FG_NPCLASS][2][65536]; /* [class][0 dport, 1 sport][port]: index into bm */
	__u16 all[FG_NCLASS];		 /* the bitmap of every entry of a class */
	__u16 k8[2][256];    /* [0] ICMP type, [1] IP protocol (FG_CLASS_OTHER) -> index into bm */
	__u16 sum[FG_PBM_N]; /* bit j: bm[b].w[j] != 0 */
	struct fg_pbm bm[FG_PBM_N];
};
_Static_assert(__builtin_offsetof(struct fg_pidx, bm) % 8 == 0, "fg_pidx: bitmaps are u64-aligned");

/* ===================== SYN authentication (docs/syn-auth.md) =====================
 *
 * A TCP rule with syn_auth (its bit in fg_synauth.rules) has its SYNs
 * answered by the program with a SYN-ACK carrying floodgate's cookie
 * (SipHash-2-4 under the daemon's secret, fg_sakey); a source proves its
 * address by returning the cookie, and only then is anything charged.
 * Two ways (fg_synauth.way), chosen by the daemon from what the kernel has:
 *   handoff    (6.9+: kfunc bpf_sk_assign_tcp_reqsk, tc): every SYN of the
 *              rule is answered, ack = client ISN + 1, ISN = the cookie;
 *              the ACK returning it is charged as the rule's SYN, marks
 *              the source verified and passes with XDP metadata
 *              (struct fg_sameta) that bpf/fgsyn.bpf.c (tc ingress) turns
 *              into a connection of the listener.
 *   retransmit (older kernels): a SYN of an unverified source is answered
 *              with a SYN-ACK whose ack number is the cookie (wrong on
 *              purpose); the client's RST returns it (seq = that ack),
 *              marks the source verified and is consumed; the client's
 *              retransmitted SYN, from a verified source, is charged and
 *              passes as without syn_auth.
 * Writers: the daemon writes fg_synauth (in the policy slot, at apply) and
 * fg_sakey; the program writes every other syn_auth map.
 */
#define FG_SA_MAX_MATCH	 16 /* match entries of syn_auth rules the ACK pre-search tests */
#define FG_SA_RULE_WORDS ((FG_MAX_RULES + 63) / 64)

enum fg_sa_way {
	FG_SA_WAY_OFF = 0,	  /* no syn_auth in this policy: nothing below is read */
	FG_SA_WAY_HANDOFF = 1,	  /* cookie ISN, tc hands the ACK to the listener */
	FG_SA_WAY_RETRANSMIT = 2, /* wrong-ACK SYN-ACK, RST proves, retransmitted SYN passes */
};

/*
 * fg_policy.sa: the policy's syn_auth settings, written by the daemon's
 * apply with the rest of the slot. The program reads it only when way is
 * not FG_SA_WAY_OFF. match[] lists the compiled entries (indices into
 * fg_policy.match[FG_CLASS_TCP]) of every syn_auth rule, in rule order:
 * a TCP packet with ACK or RST and without SYN is tested against them,
 * with their TCP-flag test left out, before the rule search (the ACK
 * pre-search); the compiler refuses more than FG_SA_MAX_MATCH.
 */
struct fg_synauth {
	__u64 verified_ns;	      /*   0 verified_for, ns (a proof holds this long) */
	struct fg_limit reply;	      /*   8 all SYN-ACKs together (reply_rate); cost 1 a SYN-ACK */
	struct fg_limit reply_pfx;    /* 24 SYN-ACKs to one destination prefix; inc 0 = no limit */
	__be32 pfx_mask4;	      /*  40 destination prefix of the per-prefix cap, IPv4 (/24) */
	__be32 pfx_mask6[4];	      /*  44 ... IPv6 (/48) */
	__u8 way;		      /*  60 enum fg_sa_way */
	__u8 nmatch;		      /*  61 entries in match[] */
	__u16 pad;		      /*  62 */
	__u16 match[FG_SA_MAX_MATCH]; /*  64 index into fg_policy.match[FG_CLASS_TCP] */
	__u64 rules[FG_SA_RULE_WORDS]; /*  96 bit per rule index (not id): the rule has syn_auth */
};
_Static_assert(sizeof(struct fg_synauth) == 136, "fg_synauth layout");

/*
 * Time. A cookie is valid in the slot it was made in and the next one
 * (2^33 ns = 8.6 s each: 8.6 to 17.2 s). The secret changes every key
 * epoch of 2^FG_SA_EPOCH_SLOTS slots (73 min); the cookie's slot picks its
 * epoch's key, so rotation never invalidates a cookie in flight.
 */
#define FG_SA_SLOT_SHIFT  33
#define FG_SA_EPOCH_SLOTS 9
#define FG_SA_SLOT(ns)	  ((ns) >> FG_SA_SLOT_SHIFT)
#define FG_SA_EPOCH(slot) ((slot) >> FG_SA_EPOCH_SLOTS)

/*
 * fg_sakey[0]: the secret, written by the daemon only (getrandom at first
 * start; kept in the pinned map across restarts, so cookies in flight stay
 * valid). key[e & 1] serves key epoch e iff key[e & 1].epoch == e + 1
 * (0: empty). The daemon keeps the current epoch's and the next one's
 * entry filled: it writes an entry's k[] first, then its epoch, and
 * overwrites the entry of epoch e - 1 (with e + 1) only from the third
 * slot of epoch e on, when no cookie of e - 1 can be valid. A packet that
 * finds no key for its epoch is not answered (FG_EV_SA_NOKEY: the SYN is
 * charged as without syn_auth): never a guessable cookie.
 * seed[] (random, daemon, once) keys the verified tables' IPv6 digest and
 * the per-prefix cap's bucket hash; ver4_bits / ver6_bits give the
 * verified tables' sizes (1 << bits sets, from max_verified).
 */
struct fg_sakey_ent {
	__u64 k[2];  /* SipHash key */
	__u64 epoch; /* key epoch + 1; 0 = empty */
	__u64 pad;
};
struct fg_sakey {
	struct fg_sakey_ent key[2]; /*  0 */
	__u64 seed[2];		    /* 64 */
	__u32 ver4_bits;	    /* 80 fg_ver4 has 1 << ver4_bits sets */
	__u32 ver6_bits;	    /* 84 fg_ver6 has 1 << ver6_bits sets */
};
_Static_assert(sizeof(struct fg_sakey) == 88, "fg_sakey layout");

/*
 * The cookie. Handoff way, in the SYN-ACK's ISN (the client returns it + 1
 * in ack_seq):
 *   bits 31..8 hash, 7..6 MSS index (fg_sa_msstab), 5 slot parity,
 *   4 SACK permitted, 3..0 the client's window scale (15: none)
 * the hash being SipHash-2-4 under the slot's epoch key of (saddr, daddr,
 * sport, dport, client ISN, slot); with timestamps, the SYN-ACK's TSval
 * is (ns >> 10 of its sending, 24 bits) << 8 | 8 more hash bits, which
 * the ACK's TSecr echoes (32 bits checked, and the first-connect delay).
 * ECN is not negotiated (the SYN-ACK carries no ECE).
 * Retransmit way, in the SYN-ACK's ack number (the client's RST carries it
 * as its seq): bits 31..1 hash of (saddr, daddr, sport, dport, slot), no
 * ISN (the RST does not carry it), bit 0 slot parity.
 */
#define FG_SA_MSS_V4                  \
	{                             \
		536, 1300, 1440, 1460 \
	}
#define FG_SA_MSS_V6                   \
	{                              \
		1220, 1280, 1420, 1440 \
	}
#define FG_SA_WSCALE 7 /* the window scale floodgate's SYN-ACK offers (the listener's side) */

/*
 * fg_ver4: verified IPv4 sources, 1 << fg_sakey.ver4_bits sets of
 * FG_VWAYS ways, set = fg_hash4(addr, fg_sakey.seed[0]). Written by the
 * program only on proof (a valid cookie, or a full socket), so a spoofed
 * flood creates no entry and pushes none out. A claim takes an empty or
 * expired way, else the one whose proof ends first. key[w]:
 *   low 32 bits the address (as loaded from the packet), high 32 bits
 *   "verified until" in 2^30 ns units (FG_VT); 0 = empty
 * synack[w]: the last SYN-ACK floodgate sent it, 2^20 ns units (FG_VMS),
 * 0 none: within two slots of it, the source's ACKs are cookie-checked.
 * since[w]: when it was (last) verified, FG_VMS units; bit 0 clear once
 * its first connection after verification passed (retransmit way's delay).
 */
#define FG_VWAYS	8
#define FG_VER_MIN_BITS 7 /* 1024 sources */
#define FG_VER_MAX_BITS 20
#define FG_VT(ns)	((__u32)((ns) >> 30))
#define FG_VMS(ns)	((__u32)((ns) >> 20))
struct fg_vset4 {
	__u64 key[FG_VWAYS];	/*  0 */
	__u32 synack[FG_VWAYS]; /* 64 */
	__u32 since[FG_VWAYS];	/* 96 */
};
_Static_assert(sizeof(struct fg_vset4) == 128, "fg_vset4: two cache lines");

/* fg_ver6: the same for IPv6, key[w] = fg_digest6(addr, 0, 0, fg_sakey.seed)
 * (bit 0 set), set = its top bits; who[w] the address, for `verified list`
 * (written after the claim, as fg_set6's who). */
struct fg_vset6 {
	__u64 key[FG_VWAYS];	 /*   0 */
	__u32 until[FG_VWAYS];	 /*  64 FG_VT units */
	__u32 synack[FG_VWAYS];	 /*  96 */
	__u32 since[FG_VWAYS];	 /* 128 */
	__u32 pad[FG_VWAYS];	 /* 160 */
	__be32 who[FG_VWAYS][4]; /* 192 */
};
_Static_assert(sizeof(struct fg_vset6) == 320, "fg_vset6 layout");

/* fg_sacap: the reflector cap, struct fg_agg entries (a line each):
 * [0] every SYN-ACK (fg_synauth.reply), [1 + h] those to destination
 * prefix bucket h = fg_mix4(prefix, seed[1]) % FG_SA_PFX_BUCKETS
 * (fg_synauth.reply_pfx; colliding prefixes share, which only makes the
 * cap stricter). */
#define FG_SA_PFX_BUCKETS 4096
#define FG_SA_CAP_N	  (1 + FG_SA_PFX_BUCKETS)

/* fg_sadup: handshakes charged, by 4-tuple (LRU hash, FG_SA_DUP_N), so the
 * first data segment, which carries the same cookie, is not charged again;
 * filled only on a charge. Value: when, ns. */
#define FG_SA_DUP_N 65536
struct fg_sadup_key {
	__be32 saddr[4]; /* IPv4 in [0] */
	__be32 daddr[4];
	__be16 sport, dport;
	__u32 family;
};

/* fg_sadly[0], per CPU: first-connect delay histograms, bucket i counts
 * delays in [2^i, 2^(i+1)) us (bucket 0 also below 1 us). handoff: from
 * the SYN-ACK to the ACK (TSecr, so only clients with timestamps);
 * retransmit: from the proof (RST) to the first passed SYN. */
#define FG_SA_HIST 32
struct fg_sadly {
	__u64 handoff[FG_SA_HIST];
	__u64 retransmit[FG_SA_HIST];
	__u64 sum_us[2]; /* [0] handoff, [1] retransmit */
};

/* XDP metadata (bpf_xdp_adjust_meta) of an ACK that XDP admitted with a
 * valid cookie, for the tc program: it hands off only such an ACK. */
#define FG_SAMETA_MAGIC 0x46475341u /* "FGSA" */
#define FG_SAMETA_SACK	0x01
#define FG_SAMETA_WS	0x02
#define FG_SAMETA_TS	0x04
struct fg_sameta {
	__u32 magic;	 /*  0 FG_SAMETA_MAGIC */
	__u32 ack;	 /*  4 the ACK's ack_seq, as in the packet */
	__u32 tsval;	 /*  8 the ACK's TSval (host order) */
	__u32 tsecr;	 /* 12 its TSecr */
	__u16 mss;	 /* 16 the client's MSS, from the cookie */
	__u8 snd_wscale; /* 18 the client's window scale */
	__u8 flags;	 /* 19 FG_SAMETA_* */
};
_Static_assert(sizeof(struct fg_sameta) == 20, "fg_sameta: a multiple of 4");

/* fgsyn (tc) counters, per CPU, fg_systat[0] */
enum fg_syn_stat {
	FG_SYN_HANDOFF = 0, /* bpf_sk_assign_tcp_reqsk succeeded */
	FG_SYN_NOLISTEN,    /* approved ACK, no socket at all for it: passed (one that
			     * finds a connection or TIME_WAIT passes uncounted) */
	FG_SYN_FAIL,	    /* the kfunc refused: dropped */
	FG_SYN_NOMETA,	    /* an approval in front whose ack number is not the
			     * segment's: passed untouched (a segment with no
			     * approval at all passes uncounted) */
	FG_SYN_NSTAT,
};
struct fg_systat {
	__u64 n[FG_SYN_NSTAT];
};
/* =================== end of SYN authentication =================== */

/* fg_policy[slot]: a whole compiled policy. Userspace writes the inactive
 * slot, flips fg_ctl.slot, then waits for an RCU grace period
 * (membarrier(MEMBARRIER_CMD_GLOBAL) calls synchronize_rcu()) before that
 * slot may be written again: no packet is judged by two policies. */
struct fg_policy {
	__u64 version;	     /* increases with every apply */
	struct fg_limit ins; /* admission of new source keys (all rules) */
	__u32 nrules;
	__u8 default_verdict;	/* enum fg_verdict, unmatched packets */
	__u8 malformed_verdict; /* enum fg_verdict */
	__u8 lists;		/* bit 0: fg_pfx4 has entries, bit 1: fg_pfx6 */
	/* whole: bit c (FG_CLASS_TCP, FG_CLASS_UDP) set iff match[c][0] holds
	 * every frame of class c (any ports, flags, family, fragment, source):
	 * the program tests that entry first without reading fg_pidx. The
	 * entry still decides (a frame it refuses goes to the full scan), so
	 * a wrong bit costs time, never a decision. fg_policy_hints. */
	__u8 whole;
	__u16 nmatch[FG_NCLASS];
	struct fg_rule rules[FG_MAX_RULES];
	struct fg_match match[FG_NCLASS][FG_MAX_MATCH];
	struct fg_pool pools[FG_MAX_POOLS]; /* fg_rule.pool indexes these */
	__u32 npools;
	/* hint4[c]: 1 + the index of the rule whose IPv4 per-source set the
	 * program starts to read right after the parse, for a frame of port
	 * class c (FG_CLASS_TCP, FG_CLASS_UDP): the rule of the class's first
	 * match entry that can take IPv4 and is a limit with a per-source
	 * bucket; 0: none. Only a guess, and only about memory: the matched
	 * rule decides, a right guess saves the set's second hash and hides
	 * more of its miss, a wrong one costs a hash and one line read. */
	__u16 hint4[FG_NPCLASS];
	char pool_names[FG_MAX_POOLS]
		       [FG_NAME_LEN]; /* pools[i]'s name, NUL-terminated: ids by name (userspace only) */
	struct fg_synauth sa;	      /* SYN authentication (daemon, apply); way 0 = none */
};

/* Allow/deny lists and source sets share one LPM trie per family. The key
 * starts with the policy slot so both policies live in one trie; userspace
 * flattens nested prefixes so the longest match carries everything that
 * applies (allow if any covering prefix allows, sets = union). */
enum fg_list {
	FG_LIST_NONE = 0,
	FG_LIST_ALLOW = 1,
	FG_LIST_DENY = 2,
};

/*
 * Prefix capacity. A policy has at most FG_MAX_PREFIXES prefixes as written
 * (allow + deny + sets; the compiler refuses more, and flattening never adds
 * any). fg_pfx4 and fg_pfx6 each hold both slots, so FG_PFX_ENTRIES entries
 * each let any policy the compiler accepts, of any family mix, sit next to
 * any active one. The size is in the map definitions, so a fresh start and
 * an adoption of pinned maps always agree. BPF_F_NO_PREALLOC: memory is
 * spent per entry, not per max_entries. Linux 6.18 (kernel/bpf/lpm_trie.c)
 * allocates every node, leaf or intermediate, from one bpf_mem_alloc cache
 * of 24 + 8 + 8 = 40 bytes (IPv4; IPv6 24 + 20 + 8 = 52) plus its 8-byte
 * list header, which kmalloc rounds to 64; n entries need at most n - 1
 * intermediate nodes: at most 128 bytes a prefix, 128 MB per million
 * (measured on 6.18: 127.9 bytes a prefix for 200,000 random /24../32).
 */
#define FG_MAX_PREFIXES (1u << 20)
#define FG_PFX_ENTRIES	(2 * FG_MAX_PREFIXES)

struct fg_lpm4 {
	__u32 prefixlen; /* 32 (slot) + prefix length */
	__u32 slot;
	__be32 addr;
};

struct fg_lpm6 {
	__u32 prefixlen; /* 32 (slot) + prefix length */
	__u32 slot;
	__u8 addr[16];
};

struct fg_pfx {
	__u32 list; /* enum fg_list */
	__u32 sets; /* source sets containing this prefix */
};

/*
 * Runtime lists: incident-time allow/deny entries (floodgate allow|deny add),
 * in fg_rt4 and fg_rt6, LPM tries keyed by prefix alone. They are not part
 * of a policy: no slot, untouched by reloads, adopted with the other pins.
 * The longest matching entry decides before the file's lists, allow or deny;
 * one whose time is over is ignored (FG_EV_RT_EXPIRED) and the program looks
 * on for a shorter one (hence plen), at most FG_RT_DEPTH times.
 *
 * Writers (CLI; the daemon's tick removes expired entries) take no lock:
 * each change is one map update or delete. fg_ctl.rt_active counts the
 * entries of both tries, and the program looks them up only when it is not
 * 0. It may count too many, never too few: a writer adds 1 before an insert
 * (and subtracts it again if the insert fails or replaced an entry) and
 * subtracts 1 only after a delete succeeded.
 *
 * FG_RT_MAX entries per family: the CLI refuses more with a clear error,
 * and the map's max_entries is the hard stop (ENOSPC) for writers that
 * race past the CLI's count. Memory, no preallocation: at most 2 * FG_RT_MAX
 * nodes (as for fg_pfx4) of 24 + key + 128 + 8 bytes, kmalloc-192: 1.5 MB
 * per family when full.
 */
#define FG_RT_MAX   4096 /* entries per family (fg_rt4, fg_rt6) */
#define FG_RT_DEPTH 8	 /* nested expired entries the program looks past */

struct fg_rt_key4 {
	__u32 prefixlen; /* 0..32 */
	__be32 addr;
};

struct fg_rt_key6 {
	__u32 prefixlen; /* 0..128 */
	__u8 addr[16];
};

/* The program reads the first 16 bytes; the rest is for floodgate deny list. */
struct fg_rt {
	__u32 list;	  /*  0 FG_LIST_ALLOW or FG_LIST_DENY */
	__u32 plen;	  /*  4 = the key's prefix length (every writer sets it): the program
				 *    looks on past an expired entry from it, userspace tells an
				 *    exact match from a covering one by it */
	__u64 expires;	  /*  8 CLOCK_MONOTONIC ns (the program's clock), 0 = until deleted */
	__u64 created;	  /* 16 CLOCK_REALTIME s */
	char who[40];	  /* 24 who added it (uid, user, sudo user), NUL-terminated */
	char comment[64]; /* 64 the operator's comment, NUL-terminated */
};
_Static_assert(sizeof(struct fg_rt) == 128, "fg_rt layout");

/* ===================== Scoped runtime deny entries (ABI 9) =====================
 *
 * A runtime deny entry of fg_rt4/fg_rt6 denies the whole address, before
 * any rule. A scoped one denies the address only for one rule: it lives in
 * fg_rts4/fg_rts6, LPM tries keyed by (rule id, prefix), and the program
 * looks it up after the rule matched, only while fg_ctl.rt_scoped is not 0,
 * counting a hit as rt_deny (rt_deny_shadow in shadow) on the rule's row.
 * Escalation from a rule whose evidence can be forged (a spoofed UDP or
 * ICMP flood can carry anyone's address) adds scoped entries unless the
 * rule's escalate: {scope: address} asks for the whole address
 * (docs/escalation.md). The key's prefixlen counts the rule id's 32 bits:
 * 32 + the address's prefix length; the value is a struct fg_rt whose plen
 * is the address's prefix length. rt_scoped is kept as rt_active is (may
 * count too many, never too few), FG_RT_MAX entries per family.
 */
#define FG_RTS_ID_BITS 32 /* the rule id's part of a scoped key's prefixlen */

struct fg_rts_key4 {
	__u32 prefixlen; /* 32 + 0..32 */
	__u32 id;	 /* the rule's id (fg_rule.id), all 32 bits always matched */
	__be32 addr;
};

struct fg_rts_key6 {
	__u32 prefixlen; /* 32 + 0..128 */
	__u32 id;
	__u8 addr[16];
};

/*
 * fg_dir4[slot] and fg_blk4[slot]: IPv4 lists and sets as a DIR-16-8-8
 * table, so that a lookup is one to three array reads whatever the number
 * of prefixes (the LPM trie is about 20 dependent node visits at 20,000).
 * fg_dir4.e is indexed by the top 16 bits of the source; an entry is a leaf
 * (an index into fg_dir4.leaf, the distinct (list, sets) values; leaf 0 is
 * "none") or FG_DIR4_BLK | b: block b of the slot's fg_blk4 inner map, 256
 * entries indexed by the next 8 bits, which are leaves or (for a /24 that
 * holds prefixes longer than /24) blocks again, indexed by the last 8 bits.
 * Every entry holds what the longest covering prefix carries (flattened by
 * userspace: allow if any covering prefix allows, sets = union).
 *
 * Memory: 288 KB for fg_dir4's slot; a block is 1 KB and there is one per
 * /16 holding a prefix longer than /16 and one per /24 holding a prefix
 * longer than /24. fg_blk4's inner map of a slot is created by userspace
 * at apply, exactly as large as the policy needs (memory proportional to
 * the blocks used, none without long prefixes), and swapped in before the
 * slot flip (a reload holds both slots' blocks until the next one). Random
 * /16../32 prefixes (as tools/bench.sh draws them): 10,000 need 13,336
 * blocks (13 MB), 20,000 25 MB, 100,000 91 MB; the LPM trie fg_pfx4, which
 * apply still writes (userspace reads it, the program falls back to it), is
 * up to 128 bytes a prefix ("Prefix capacity" above). A policy
 * needing more than FG_BLK4_MAX blocks (128 MB a slot) is not refused:
 *
 * The block budget. Past FG_BLK4_MAX blocks, the ranges that get none are
 * marked FG_DIR4_TRIE in the entry above them (a /24's entry in its /16's
 * block, or a /16's entry), and the program does one LPM lookup in the
 * slot's fg_pfx4, which apply writes with the same prefixes, for sources
 * there only: the answer is the one the table would hold. Level-2 blocks
 * go first (one resolves a /16, a level-3 block only a /24), then level-3
 * blocks to the /24s holding the most prefixes longer than /24, ties by
 * address: with no traffic to go by, every /24 covers as many addresses,
 * and a /24 with more listed sources is the likelier to send (a threat
 * feed lists senders), so the fallback takes the sparsest ranges. A
 * million random /32s want 65,536 + 970,438 blocks (1 GB) and keep all
 * 65,536 level-2 and 65,536 level-3 blocks: 904,902 of 970,438 /24s (5.4%
 * of the address space) ask the trie (tests/test_dir4.c). A prefix
 * whose (list, sets) value finds no leaf (more than FG_DIR4_LEAVES) is
 * painted FG_DIR4_TRIE the same way. Apply logs the counts ("N of M /24
 * ranges answered by the trie: the block budget is B"), so does check.
 */
#define FG_DIR4_BITS   16
#define FG_DIR4_BLK    (1u << 31) /* entry: a block index, not a leaf */
#define FG_DIR4_TRIE   (1u << 30) /* entry: ask the slot's fg_pfx4 */
#define FG_DIR4_LEAVES 4096	  /* distinct (list, sets) values per slot */
#define FG_BLK4_MAX    (1u << 17) /* blocks per slot: 128 MB */
_Static_assert((FG_DIR4_LEAVES & (FG_DIR4_LEAVES - 1)) == 0, "the program masks leaf indices");
_Static_assert(FG_BLK4_MAX <= FG_DIR4_TRIE && FG_DIR4_LEAVES <= FG_DIR4_TRIE, "entry kinds apart");
struct fg_dir4 {
	__u32 e[1 << FG_DIR4_BITS];
	struct fg_pfx leaf[FG_DIR4_LEAVES];
};
struct fg_blk4 {
	__u32 e[256];
};

/*
 * IPv4 source buckets: a set-associative table in an array map (fg_src4),
 * 1 << fg_ctl.src4_bits sets of FG_WAYS4 ways. A source's set is
 * fg_hash4(key ^ fg_ctl.seed4); a lookup reads one cache line of keys.
 * Each key has its own way in the set (fg_way4_pref, other bits of the same
 * hash): a claim takes it when it is empty, and a lookup reads it first, so
 * that a hit at a random set needs no compare of the other keys before its
 * tat's address is known (at a million sources, where the set's lines are
 * a miss, that compare was a mispredicted branch after the miss). A source
 * whose own way was taken lives in another and is found by the full search.
 *
 * The eviction invariant, by construction: a way is taken over only if it
 * is empty or its bucket is full (tat <= now). A full bucket holds exactly
 * what a new one would, so evicting it gives nothing away, however many
 * spoofed sources churn through the set; a throttled source's bucket, not
 * being full, is never taken. Among full ways the oldest goes first, and
 * every claim passes the admission limit (fg_policy.ins), so a spoofed
 * spray cannot churn a set fast enough to push out a client that keeps
 * sending. A source that finds no way it may take is charged per its
 * rule's on_full (overflow bucket by default), counted as
 * FG_EV_INSERT_FAIL (set full) or FG_EV_INSERT_LIMITED (admission). Idle
 * buckets expire the same way: once full, reusable.
 * The key is claimed with one compare-and-swap; the way's tat is left as
 * it is (<= now: a full bucket), so there is no window with a wrong state.
 * The one race: the old owner spends a token between the claimer's "full"
 * check and its CAS. The new owner then starts one token short, and the old
 * owner, finding its way gone, starts again from a full bucket: it gains
 * at most that one packet.
 *
 * Memory: 24 bytes per way (key, tat, drops), against ~88 for a kernel hash
 * element. IPv6 sources live in fg_src6, the same design with a digest for
 * a key (struct fg_set6).
 *
 * The admission limit: new source keys enter through one GCRA bucket
 * (fg_policy.ins) whose rate userspace sets to
 *	R_ins = max_sources / (2 * T_refill),
 * T_refill being the longest time any rule's per-source bucket needs to
 * refill from empty (burst / rate). At most R_ins keys enter per second,
 * so a table of max_sources ways turns over at most once per 2 * T_refill,
 * the oldest full way of a set first: a source that keeps sending is
 * rarely the one taken, and a way that is taken is full, which gives
 * nothing away. Both tables are set-associative, so there is no LRU slack
 * (per-CPU free lists) to subtract. Sources refused are charged per on_full.
 */
#define FG_WAYS4	 8
#define FG_SRC4_MIN_BITS 7 /* 128 sets, 1024 ways */
#define FG_SRC4_MAX_BITS 24
/* A way's key: one 64-bit word, claimed with one compare-and-swap. An
 * all-zero key is an empty way; a claimed one has FG_WKEY4_USED in rule. */
#define FG_WKEY4_USED 0x8000u
struct fg_wkey4 {
	__be32 addr; /* masked source */
	__u16 rule;  /* FG_WKEY4_USED | rule id */
	__u16 gen;   /* rule generation */
};
_Static_assert(sizeof(struct fg_wkey4) == 8 && FG_MAX_IDS <= FG_WKEY4_USED,
	       "fg_wkey4: one CAS word, the rule id below the used bit");

struct fg_set4 {
	struct fg_wkey4 key[FG_WAYS4]; /* one cache line, read by every lookup */
	__u64 tat[FG_WAYS4];	       /* GCRA state of each way */
	__u64 drops[FG_WAYS4];	       /* sampled, see FG_DROP_SAMPLE */
};

/*
 * IPv6 source buckets: fg_src6, 1 << fg_ctl.src6_bits sets of FG_WAYS6
 * ways, claimed, evicted and admitted exactly as fg_src4's (the eviction
 * invariant above holds word for word, by the same construction). A way's
 * key is one 64-bit word: fg_digest6 of (masked source, rule id, gen) under
 * the per-pin-dir seed fg_ctl.seed6, with bit 0 set as the 'used' bit (an
 * all-zero word is an empty way); its top src6_bits bits pick the set. Two
 * sources share a bucket only if their 63-bit digests are equal: for any
 * pair chosen without the seed that is 2^-63, as unlikely as guessing it.
 * The digest is keyed SipHash-1-3, not a plain mix, because seed-independent
 * collisions are known for murmur-style hashes.
 *
 * who[w] is the source itself, for `floodgate top` and the throttle log;
 * the program never reads it. The claimer writes it after its CAS, so a
 * reader may see, for a moment, the new key next to the previous owner's
 * copy, zeros (a way never used) or a mix of two claimers' writes. Readers
 * recompute the digest of the copy (fg_who6_digest) and treat a mismatch as
 * "being claimed": the way is counted, its address is not shown.
 *
 * Memory: a set is 384 bytes, 6 cache lines (2 of keys and tats, drops, 3
 * of who), 48 bytes per way, against 104 for an LRU hash element. A lookup
 * reads the first two.
 */
#define FG_WAYS6	 8
#define FG_SRC6_MIN_BITS 7 /* 128 sets, 1024 ways */
#define FG_SRC6_MAX_BITS 24

struct fg_who6 {
	__be32 addr[4]; /* masked source */
	__u16 rule;	/* rule id */
	__u16 gen;	/* rule generation */
	__u32 pad;
};

/* A way's key beside its tat: a lookup's two lines are independent loads
 * (one miss's latency, not two in a row), and a hit finds its tat there. */
struct fg_way6 {
	__u64 key; /* fg_digest6, 0 = empty */
	__u64 tat; /* GCRA state */
};

struct fg_set6 {
	struct fg_way6 way[FG_WAYS6]; /*   0 two cache lines, read by every lookup */
	__u64 drops[FG_WAYS6];	      /* 128 sampled, see FG_DROP_SAMPLE */
	struct fg_who6 who[FG_WAYS6]; /* 192 the owner, written after the claim */
};
_Static_assert(sizeof(struct fg_set6) == 384 && sizeof(struct fg_set6) / FG_WAYS6 <= 64,
	       "fg_set6: six cache lines, at most 64 bytes per tracked source");

/*
 * A token bucket in GCRA form: one theoretical arrival time. Admit a cost c
 * at time now iff max(tat, now) + c*inc - now <= tau, and then store that
 * sum as the new tat with compare-and-swap. A drop writes nothing, except
 * that 1 drop in FG_DROP_SAMPLE (per CPU, FG_DROP_SAMPLED) adds FG_DROP_SAMPLE to drops, so
 * the drop path stays read-only for the shared line while `top` can still
 * rank sources; exact totals are in the per-rule counters. The word's low
 * 4 bits are the throttle-event tag (FG_TEV_TAG_MASK, below): FG_DROPS().
 */
#define FG_DROP_SAMPLE 16
/*
 * Is a CPU's n-th drop of a row sampled at now_tu? One in each run of
 * FG_DROP_SAMPLE drops, at a place that moves with the clock (a hash of
 * now / 2^22 ns, a ~4 ms tick). A fixed place (n % 16 == 0) aliased with
 * sources sent in turn: of 32 in rotation 2 (test_datapath
 * test_drop_sample_rotation), or 18 with real frames (e2e_sampling), were
 * ever sampled; the others were never reported, tracked or escalated.
 */
#define FG_DROP_PHASE(now_tu)                                                        \
	((__u32)((((now_tu) >> (22 + FG_TU_SHIFT)) * 0x9E3779B97F4A7C15ull) >> 32) & \
	 (FG_DROP_SAMPLE - 1))
#define FG_DROP_SAMPLED(n, now_tu) ((((n) + FG_DROP_PHASE(now_tu)) & (FG_DROP_SAMPLE - 1)) == 0)

struct fg_bucket {
	__u64 tat;   /* time units */
	__u64 drops; /* sampled, see above */
};

/* Aggregate, overflow, admission and pool buckets live in one array, a
 * cache line each so rules do not share lines; two per pool id. Only
 * their tat is used: nothing reads their drops word, so the drop path
 * does not write it (no atomic add on the most shared line); the exact
 * drop totals are the per-rule counters. */
#define FG_AGG_IDX(id) (id)
#define FG_OVF_IDX(id) (FG_MAX_IDS + (id))
#define FG_INS_IDX     (2 * FG_MAX_IDS)
#define FG_POOL_IDX(p) (FG_INS_IDX + 1 + 2 * (p)) /* the pool's shared tat */
#define FG_CAP_IDX(p)  (FG_INS_IDX + 2 + 2 * (p)) /* its cap for the non-critical tiers */
#define FG_TEV_IDX     (2 * FG_MAX_IDS + 1 + 2 * FG_POOL_IDS) /* the throttle events' rate cap */
#define FG_NAGG	       (FG_TEV_IDX + 1)
struct fg_agg {
	struct fg_bucket b;
	__u64 pad[6];
};

/* Per-CPU counters, one row per rule id plus FG_ROW_GLOBAL. The fleet
 * costs (packets or bytes, the rule's unit) are read by the daemon, which
 * leases by their difference between two reads; never reset. */
struct fg_stats {
	__u64 pkts[FG_OUT_MAX];
	__u64 bytes[FG_OUT_MAX];
	__u64 ev[FG_EV_MAX];
	__u64 fleet_offered;  /* cost that reached the fleet check (the node's demand) */
	__u64 fleet_unleased; /* cost admitted under on_loss open or local (the debt) */
};

/*
 * Fleet-wide limits (docs/fleet.md): a fleet rule spends from a lease that
 * floodgated refills from Redis every lease interval. Once the lease has
 * run out (now >= lease_expires) the program applies on_loss by itself,
 * daemon or not.
 */
enum fg_on_loss {
	FG_LOSS_LOCAL = 0,  /* spend the static local share, fg_lease.local */
	FG_LOSS_OPEN = 1,   /* the fleet limit does not apply; local limits do */
	FG_LOSS_CLOSED = 2, /* drop what reaches the fleet check */
};

/*
 * fg_lease[rule id]: a fleet rule's lease; one cache line per id. The map
 * is BPF_F_MMAPABLE: floodgated adds grants and takes tokens back with
 * atomics on the shared page; the program spends with one fetch-and-add.
 * The daemon writes gen, on_loss, local (and lease_expires 0) before the
 * policy slot that sets fg_rule.fleet is flipped in; each renewal writes
 * tokens, local, tat and nodes, then lease_expires last (release store).
 * An entry whose gen is not the rule's is stale: treated as closed.
 */
struct fg_lease {
	__s64 tokens; /*  0 cost units; program: add -cost; daemon: add grants, CAS take-backs */
	__u64 lease_expires; /*  8 CLOCK_MONOTONIC ns; tokens are spendable only before it; 0 = none */
	__u64 tat; /* 16 GCRA state of the local share; daemon: (lease_expires << FG_TU_SHIFT) + local.tau */
	struct fg_limit local; /* 24 on_loss local: this node's static share (inc 0: drop) */
	__u16 gen;	       /* 40 == fg_rule.gen, else stale */
	__u8 on_loss;	       /* 42 enum fg_on_loss */
	__u8 pad;	       /* 43 */
	__u32 nodes;	       /* 44 last known node count (status, adoption) */
	__u64 pad2[2];	       /* 48 */
};
_Static_assert(sizeof(struct fg_lease) == 64 && __builtin_offsetof(struct fg_lease, gen) == 40,
	       "fg_lease: one cache line");

/* fg_names[id]: which rule holds an id, so the CLI can name counters
 * without the daemon. */
struct fg_name {
	char name[FG_NAME_LEN];
	__u16 gen;
	__u16 in_use;
	__u32 pad;
};

/* fg_meta[0]: what floodgated attached and how its last reload went, for
 * `floodgate status` and `floodgate reload`. Written by the daemon; cold:
 * the program never reads it. Read and write it with BPF_F_LOCK, so a
 * reader sees the reload fields of one update, never half of two. */
struct fg_meta_if {
	__u32 ifindex;
	__u32 xdp_mode; /* 1 native (drv), 2 generic (skb) */
	char name[16];
};

struct fg_meta {
	__u32 magic;			   /*   0 */
	__u32 abi;			   /*   4 */
	__u32 pid;			   /*   8 daemon pid, 0 when none */
	__u32 n_ifs;			   /*  12 */
	__u64 started;			   /*  16 CLOCK_REALTIME s when the daemon started */
	__u64 max_sources;		   /*  24 */
	struct fg_meta_if ifs[FG_MAX_IFS]; /*  32, 24 bytes each */
	char config[256];		   /* 416 */
	__u32 reload_seq; /* 672 +1 each time the daemon has finished handling a reload request, success or not */
	__u32 reload_err;	   /* 676 that request's result: 0, or a positive errno */
	__u64 reload_done;	   /* 680 CLOCK_REALTIME s when it finished */
	__u32 file_mode;	   /* 688 enum fg_mode: the file's global mode as last applied */
	struct bpf_spin_lock lock; /* 692 for BPF_F_LOCK lookups and updates */
	char reload_msg[256];	   /* 696 the daemon's reason, or "policy version N active" */
	/* the daemon's incremental walk of the source tables (status reads these, not the tables) */
	__u64 src_count4;   /* 952 used ways of fg_src4 at the last complete pass */
	__u64 src_count6;   /* 960 entries of fg_src6 at the last complete pass */
	__u64 src_count_at; /* 968 CLOCK_REALTIME s when those passes ended, 0 = never */
};
_Static_assert(__builtin_offsetof(struct fg_meta, reload_msg) == 696 &&
		       sizeof(struct fg_meta) == 976,
	       "fg_meta layout");

/*
 * Throttle events (docs/operators-guide.md, "The daemon's own cost"). The
 * daemon does not read the source tables every second; the program tells it
 * which sources drop. On a source's sampled drop (FG_DROP_SAMPLE) the
 * program compares the tag in the low bits of the bucket's drops word with
 * the current epoch's (FG_TEV_TAG: 8 | epoch & 7, an epoch being 2^30 ns);
 * if they differ it claims the tag with one compare-and-swap and writes one
 * struct fg_tev into the ring fg_tev. So a dropping source is reported at
 * most once an epoch, a fresh bucket (drops 0, tag 0) on its first sampled
 * drop, and a source that drops again after a pause within one epoch of
 * that. All events together pass one GCRA bucket, fg_agg[FG_TEV_IDX], of
 * FG_TEV_RATE events a second and FG_TEV_BURST: a spoofed spray adds at
 * most that many records a second, whatever its rate (refusals are counted
 * as FG_EV_TEV_CAPPED, a full ring as FG_EV_TEV_LOST); a refused source is
 * reported on a later sampled drop. The daemon looks up only the sources
 * it was told about, to log when they stop.
 */
#define FG_TEV_TAG_MASK	   ((__u64)(FG_DROP_SAMPLE - 1)) /* drops: the low bits, sampled drops above */
#define FG_TEV_EPOCH_SHIFT (30 + FG_TU_SHIFT)		 /* an epoch: 2^30 ns, in time units */
#define FG_TEV_TAG(now_tu) (8u | (((now_tu) >> FG_TEV_EPOCH_SHIFT) & 7u))
/* The program's cache of the coarse clock, per CPU (bpf/floodgate.bpf.c
 * fg_now_ns): pinned like every map, so a restarted daemon that keeps the
 * running program keeps it on the same maps. */
struct fg_clk {
	__u64 jiffies; /* bpf_jiffies64 when ns was read */
	__u64 ns;      /* bpf_ktime_get_coarse_ns then */
};

#define FG_TEV_RATE  4096 /* events a second, all sources */
#define FG_TEV_BURST 4096
#define FG_TEV_RING  (512 * 1024) /* bytes: two seconds of events at the cap, 40 bytes each */
#define FG_DROPS(w)  ((w) & ~FG_TEV_TAG_MASK) /* a drops word without its tag */
_Static_assert(FG_DROP_SAMPLE == 16,
	       "the event tag takes the 4 low bits that sampling leaves at zero");

struct fg_tev {
	__u8 addr[16]; /*  0 the masked source (the bucket's key); IPv4 in addr[0..3] */
	__u16 rule;    /* 16 rule id */
	__u16 gen;     /* 18 its generation */
	__u8 family;   /* 20 4 or 6 */
	__u8 pad[3];   /* 21 */
	__u64 drops;   /* 24 the bucket's sampled drops after this one (tag masked) */
};
_Static_assert(sizeof(struct fg_tev) == 32, "fg_tev layout");

/* The hashes that place sources in fg_src4 and fg_src6 (both sides compute them). */
#include "fg_hash.h"

#endif /* FLOODGATE_H */
