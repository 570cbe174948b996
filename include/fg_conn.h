/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Concurrency caps, ABI: the maps of bpf/fgconn.bpf.c (the counting
 * program) that the XDP program reads and the daemon writes. Fixed-width
 * types and explicit padding only. docs/concurrency.md has the design; the
 * one-line reasons here point there.
 *
 * Bump FG_CONN_ABI_VERSION whenever a layout below changes: fgc_ctl carries
 * it, and userspace refuses pinned maps of another version (libbpf's reuse
 * check compares sizes, not layouts).
 */
#ifndef FG_CONN_H
#define FG_CONN_H

#ifdef __BPF__
/* vmlinux.h provides the __u* types on the BPF side */
#else
#include <linux/types.h>
#endif

#define FG_CONN_ABI_MAGIC   0x46474343u /* "FGCC" */
#define FG_CONN_ABI_VERSION 2u

#define FG_CONN_MAX_CAPS       64 /* capped rules in one cap table (of the FG_MAX_RULES a policy has) */
#define FG_CONN_RANGES	       8    /* destination-port ranges per capped rule */
#define FG_CONN_PER_SOCK       4    /* capped rules one socket is counted under, at most */
#define FG_CONN_SLOTS	       15   /* pending handshakes tracked per key */
#define FG_CONN_TSHIFT	       20   /* slot clock unit: 2^20 ns (1.05 ms) */
#define FG_CONN_TTL_DEFAULT_MS 5000 /* a pending handshake's place, unless refreshed */

#define FG_CONN_F_V4 0x01 /* fg_conn_cap.families */
#define FG_CONN_F_V6 0x02

/*
 * Which TCP states hold a place (bit per enum of include/net/tcp_states.h):
 * every state of a full socket from the end of the handshake until it is
 * closed, ESTABLISHED, FIN_WAIT1, FIN_WAIT2, CLOSE_WAIT, LAST_ACK and
 * CLOSING. Not SYN_SENT/SYN_RECV (before the handshake completes: those are
 * the pending slots' job), not TIME_WAIT (a timewait mini-socket, nobody
 * holds it), not CLOSE, LISTEN or NEW_SYN_RECV. docs/concurrency.md: why.
 */
#define FG_TCP_ESTABLISHED  1
#define FG_TCP_SYN_SENT	    2
#define FG_TCP_SYN_RECV	    3
#define FG_TCP_FIN_WAIT1    4
#define FG_TCP_FIN_WAIT2    5
#define FG_TCP_TIME_WAIT    6
#define FG_TCP_CLOSE	    7
#define FG_TCP_CLOSE_WAIT   8
#define FG_TCP_LAST_ACK	    9
#define FG_TCP_LISTEN	    10
#define FG_TCP_CLOSING	    11
#define FG_TCP_NEW_SYN_RECV 12
#define FG_CONN_COUNTED_STATES                                                              \
	((1u << FG_TCP_ESTABLISHED) | (1u << FG_TCP_FIN_WAIT1) | (1u << FG_TCP_FIN_WAIT2) | \
	 (1u << FG_TCP_CLOSE_WAIT) | (1u << FG_TCP_LAST_ACK) | (1u << FG_TCP_CLOSING))

static inline __attribute__((always_inline)) int fg_conn_counted(int state)
{
	return state > 0 && state < 32 && ((FG_CONN_COUNTED_STATES >> state) & 1);
}

/*
 * Key of fgc_count and fgc_pend: the source masked by the rule's prefix,
 * the rule id and its generation (as fg_rule), the family. IPv4 sources use
 * addr[0] only, the rest is zero; an IPv4-mapped IPv6 socket counts as
 * family 4, as its packets reach XDP as IPv4.
 */
struct fg_conn_key {
	__be32 addr[4];
	__u16 rule;
	__u16 gen;
	__u8 family; /* 4 or 6 */
	__u8 pad[3];
};

/*
 * Value of fgc_count (and of fgc_pend, where est stays 0): what XDP reads
 * for a SYN, one lookup, two cache lines.
 *
 * est: established connections, in two 32-bit halves, one per parity of
 * the reconcile epoch a socket was last counted in (fg_conn_ctl.epoch);
 * the split lets a reconcile find phantoms exactly while connections open
 * and close (docs/concurrency.md, "Reconcile"). Each half is stored plus
 * FG_CONN_EST_BIAS, so that one 64-bit atomic add changes one half, or
 * moves a connection from one half to the other, without a carry between
 * them; the reader loads one word and gets a consistent count,
 * fg_conn_est_total().
 *
 * slot[]: pending handshakes admitted by XDP, one 64-bit word each:
 *	bits 63..32  expiry, in 2^FG_CONN_TSHIFT ns units of CLOCK_MONOTONIC
 *	             (wraps every 52 days; compared as a signed difference)
 *	bits 31..0   handshake id, fg_conn_hsid(): source port, address tag
 * 0 is empty; a slot is live while its expiry is ahead of now. XDP claims
 * one with a single compare-and-swap; the counting program clears it when
 * that handshake completes.
 */
struct fg_conn_val {
	__u64 est;
	__u64 slot[FG_CONN_SLOTS];
};

#define FG_CONN_EST_BIAS 0x80000000u
#define FG_CONN_EST_ZERO (((__u64)FG_CONN_EST_BIAS << 32) | FG_CONN_EST_BIAS)

/* What to add to est for one connection in half h (negate to remove). */
static inline __attribute__((always_inline)) __u64 fg_conn_est_one(__u32 h)
{
	return 1ull << (32 * (h & 1));
}

static inline __attribute__((always_inline)) __s64 fg_conn_est_half(__u64 est, __u32 h)
{
	return (__s64)(__u32)(est >> (32 * (h & 1))) - FG_CONN_EST_BIAS;
}

static inline __attribute__((always_inline)) __s64 fg_conn_est_total(__u64 est)
{
	return fg_conn_est_half(est, 0) + fg_conn_est_half(est, 1);
}

/* est with half h set to n (userspace, tests and the sweep). */
static inline __attribute__((always_inline)) __u64 fg_conn_est_set(__u64 est, __u32 h, __s32 n)
{
	__u32 s = 32 * (h & 1);

	return (est & ~(0xffffffffull << s)) | ((__u64)(__u32)(n + FG_CONN_EST_BIAS) << s);
}

/* A handshake's id: the client's port and a 16-bit fold of its whole
 * address, so two clients behind one prefix key rarely share an id. */
static inline __attribute__((always_inline)) __u32 fg_conn_hsid(const __be32 saddr[4], __u16 sport)
{
	__u32 x = saddr[0] ^ saddr[1] ^ saddr[2] ^ saddr[3];

	return ((__u32)sport << 16) | ((x ^ (x >> 16)) & 0xffff);
}

static inline __attribute__((always_inline)) __u32 fg_conn_tu(__u64 ns)
{
	return (__u32)(ns >> FG_CONN_TSHIFT);
}

static inline __attribute__((always_inline)) int fg_conn_slot_live(__u64 w, __u32 now_tu)
{
	return w && (__s32)((__u32)(w >> 32) - now_tu) > 0;
}

/* What fg_conn_admit (bpf/fg_conn.bpf.h) decided for a SYN. */
enum fg_conn_verdict {
	FG_CONN_ADMIT = 0, /* under the cap: a pending slot was claimed */
	FG_CONN_RETX,	   /* a retransmit of a pending handshake: pass, nothing claimed */
	FG_CONN_AT_CAP,	   /* established + pending >= cap: refuse; nothing written */
	FG_CONN_NOSLOT,	   /* under the cap but FG_CONN_SLOTS handshakes in flight */
	FG_CONN_CONTENDED, /* FG_MAX_CAS-style retries all lost races */
	FG_CONN_NOMEM,	   /* no fgc_pend entry could be created for a new key */
};

/* One capped rule, as the daemon compiles it into the cap table. */
struct fg_conn_range {
	__u16 lo, hi; /* host order, inclusive */
};

struct fg_conn_cap {
	__be32 mask4;	 /* source grouping, as fg_rule.mask4 */
	__be32 mask6[4]; /* as fg_rule.mask6 */
	__u16 rule;	 /* fg_rule.id */
	__u16 gen;	 /* fg_rule.gen */
	__u8 families;	 /* FG_CONN_F_V4 | FG_CONN_F_V6 */
	__u8 nranges;	 /* 1..FG_CONN_RANGES */
	__u16 pad;
	__u32 cap; /* for readers (CLI, top); XDP takes its own from fg_rule */
	struct fg_conn_range dport[FG_CONN_RANGES];
};

/* fgc_caps[slot]: the cap table; fg_conn_ctl.slot names the active one.
 * Userspace writes the inactive slot, then flips. */
struct fg_conn_caps {
	__u32 n; /* entries used in cap[] */
	__u32 pad;
	__u64 version; /* increases with every write */
	struct fg_conn_cap cap[FG_CONN_MAX_CAPS];
};

/* fgc_ctl[0] (mmapable: userspace stores slot and epoch atomically). */
struct fg_conn_ctl {
	__u32 magic;	  /* FG_CONN_ABI_MAGIC */
	__u32 abi;	  /* FG_CONN_ABI_VERSION */
	__u32 slot;	  /* active fgc_caps slot, 0 or 1 */
	__u32 epoch;	  /* reconcile epoch; est's half epoch & 1 takes new counts */
	__u32 netns;	  /* inode of the network namespace counted (the tp_btf way's filter) */
	__u32 way;	  /* enum fg_conn_way (user/lib/kfeat.h) of the last attach, for readers */
	__u64 reconciles; /* completed reconciles */
	__u64 netns_cookie; /* SO_NETNS_COOKIE of that namespace (the sock_ops way's filter) */
};

/*
 * fgc_mark (socket storage): what a socket is counted under. One word says
 * which of three key sets is counted, how many keys and in which epoch:
 *	bits 63..32  epoch when last counted
 *	bit   5      tracked: counted by the sock_ops program, which sees its
 *	             close; else (seeded by a walk) the sock_ops way uncounts
 *	             it when the application releases it
 *	bits  4..3   the key set counted (0..2)
 *	bits  2..0   keys in it; 0 = not counted
 * Set 0 is written only by the counting program when the socket enters the
 * counted states (with the socket locked); sets 1 and 2 only by the
 * reconcile walk, which takes the one not counted. Whoever counts a socket
 * writes its set and counts the keys first, then swaps the word with a
 * compare-and-swap; the loser takes its counts back. A close swaps the
 * word to "not counted" (keeping the set bits) and uncounts what the word
 * said. So the sock_ops way's walk, which cannot lock the socket, never
 * races a transition into a wrong count (docs/concurrency.md).
 */
#define FG_CONN_MARK_SETS 3
struct fg_conn_mark {
	__u64 word;
	struct fg_conn_key key[FG_CONN_MARK_SETS][FG_CONN_PER_SOCK];
};

#define FG_CONN_W_SETMASK 0x18ull
#define FG_CONN_W_TRACKED 0x20ull
static inline __attribute__((always_inline)) __u32 fg_conn_w_n(__u64 w)
{
	return (__u32)w & 7;
}

static inline __attribute__((always_inline)) __u32 fg_conn_w_set(__u64 w)
{
	return ((__u32)w >> 3) & 3;
}

static inline __attribute__((always_inline)) __u32 fg_conn_w_epoch(__u64 w)
{
	return (__u32)(w >> 32);
}

static inline __attribute__((always_inline)) __u64 fg_conn_w_make(__u32 epoch, __u32 set, __u32 n)
{
	return ((__u64)epoch << 32) | ((set & 3) << 3) | (n & 7);
}

/* fgc_stats (per CPU): events of the counting side. */
enum fg_conn_event {
	FGC_EV_OPEN = 0,   /* a socket entered a counted state and was counted */
	FGC_EV_CLOSE,	   /* a counted socket left the counted states */
	FGC_EV_CONVERT,	   /* ... and its handshake's pending slot was found and freed */
	FGC_EV_SEED,	   /* reconcile walk counted a socket nobody had counted */
	FGC_EV_REKEY,	   /* reconcile walk moved a socket to new keys (cap table changed) */
	FGC_EV_FIX,	   /* reconcile sweep found a key's count wrong and fixed it */
	FGC_EV_FIX_CONNS,  /* ... by this many connections in all */
	FGC_EV_STALE,	   /* a mark whose counts a sweep had already removed */
	FGC_EV_NOKEY,	   /* a decrement found no count entry */
	FGC_EV_MAP_FULL,   /* fgc_count full: a socket went uncounted */
	FGC_EV_NO_STORAGE, /* no socket storage: a socket went uncounted */
	FGC_EV_MULTI,	   /* more than FG_CONN_PER_SOCK capped rules matched */
	FGC_EV_CONTENDED, /* a mark's compare-and-swap lost FG_CONN_CAS times: left to the reconcile */
	FGC_EV_GONE,	  /* sock_ops walk: a dumped socket had closed before it was looked up */
	FGC_EV_RELEASE, /* sock_ops: a seeded socket uncounted when its application released it */
	FGC_EV_MAX,
};

struct fg_conn_stats {
	__u64 ev[FGC_EV_MAX];
};

/*
 * Test entry of bpf/fgconn.bpf.c (SEC("xdp") fgc_test, BPF_PROG_TEST_RUN
 * only): the frame carries a request, the program runs fg_conn_admit or
 * fg_conn_at_cap on it and writes the answer into the verdict field.
 * FGC_TEST_BURST (repeat > 1, from several CPUs at once): run n admits
 * handshake n for key group n / sport (in key.addr[3]) and counts the
 * verdicts in the program's test_won[cpu & 1][group] and test_verdicts[].
 */
enum {
	FGC_TEST_ADMIT = 0,
	FGC_TEST_READ = 1,
	FGC_TEST_BURST = 2,
	FGC_TEST_NOP = 3
};

struct fg_conn_test {
	struct fg_conn_key key;
	__be32 saddr[4]; /* the whole source address */
	__u64 now_ns;
	__u64 ttl_ns;
	__u32 cap;
	__u16 sport;
	__u8 op; /* FGC_TEST_* */
	__u8 pad;
	__s32 verdict; /* out: enum fg_conn_verdict, or at_cap 0/1 */
	__u32 pad2;
};

/*
 * The sock_ops way's reconcile programs (bpf/fgconn.bpf.c, SEC("tc"), run
 * by userspace with BPF_PROG_TEST_RUN, so that their writes are atomic
 * with the XDP side's and the counting program's): a frame is an Ethernet
 * header's worth of padding (the test run wants one), a struct
 * fg_conn_batch, then n entries; each entry's out fields are written back.
 */
#define FG_CONN_BATCH 64

struct fg_conn_batch {
	__u8 l2[14];  /* ignored */
	__u16 n;      /* entries that follow, at most FG_CONN_BATCH */
	__u64 now_ns; /* fgc_fix: judge pending slots at this time; 0 = the real clock */
};

/* fgc_swalk: one socket from a sock_diag dump (addresses and ports as the
 * dump gives them, network order; an IPv4-mapped IPv6 socket as IPv4). */
struct fg_conn_walk_sock {
	__be32 laddr[4];
	__be32 raddr[4];
	__be16 lport;
	__be16 rport;
	__u8 family;  /* 4 or 6 */
	__u8 verdict; /* out: enum fg_conn_walk_verdict */
	__u16 pad;
};

enum fg_conn_walk_verdict {
	FGC_WALK_KEPT = 0,  /* counted already, in this epoch, under the right keys */
	FGC_WALK_SEEDED,    /* counted now: nobody had */
	FGC_WALK_MOVED,	    /* moved to this epoch (and to new keys if they changed) */
	FGC_WALK_UNCOUNTED, /* no longer in a counted state: uncounted */
	FGC_WALK_NOCAP,	    /* no capped rule covers it */
	FGC_WALK_GONE,	    /* closed since the dump */
	FGC_WALK_FAILED,    /* no storage, or the compare-and-swap kept losing */
};

/* fgc_fix: one fgc_count key to sweep. */
struct fg_conn_fix {
	struct fg_conn_key key;
	__s32 fixed; /* out: what the half that must be empty held (a correction) */
	__u8 zero;   /* out: the entry is at zero with no live slot (userspace deletes it) */
	__u8 found;  /* out: the entry exists */
	__u16 pad;
};

#endif /* FG_CONN_H */
