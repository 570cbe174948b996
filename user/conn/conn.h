/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Concurrency caps, userspace: load, attach and pin bpf/fgconn.bpf.c,
 * write its cap table, seed and reconcile its counts, read them back, by
 * either of two ways (lib/kfeat.h, enum fg_conn_way): tp_btf + iterators,
 * or sock_ops on the cgroup v2 root + sock_diag dumps (conn_sock.c).
 * docs/concurrency.md has the design.
 *
 * Lifecycle (the daemon):
 *   fg_conn_open(&c, &opts, why)    load fresh, or adopt the pins in
 *                                   opts.pin_dir (ABI and netns checked)
 *   fg_conn_set_caps(&c, caps, n)   from the policy (and on every reload)
 *   fg_conn_attach(&c)              tracepoint + iterators, or sock_ops
 *   fg_conn_pin(&c, dir)            maps and the tracepoint link
 *   fg_conn_reconcile(&c, &rec)     at once (this is the seed), after
 *                                   every fg_conn_set_caps, then
 *                                   periodically; one caller at a time
 *   fg_conn_close(&c)               pins, if any, keep counting going
 *
 * Readers (the CLI, with no daemon) open the pins without loading
 * anything: fg_conn_open_pins, then fg_conn_lookup / _dump / _stats_read /
 * _caps_read.
 *
 * Functions return 0 or a negative errno and log nothing; those that can
 * fail for a reason an operator must read fill `why` (FG_CONN_WHY_LEN,
 * may be NULL).
 */
#ifndef FG_USER_CONN_H
#define FG_USER_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include "fg_conn.h"
#include "floodgate.h"
#include "lib/kfeat.h"
#include "lib/sysutil.h"

#define FG_CONN_WHY_LEN	     FG_WHY_LEN
#define FG_CONN_LINK_PIN     "fgc_link"	 /* not link_*: those are XDP interfaces */
#define FG_CONN_RLINK_PIN    "fgc_rlink" /* sock_ops way: cgroup/sock_release's link */
#define FG_CONN_KEYS_DEFAULT 65536

/* What a policy may ask for (user/policy/policy.c checks it). */
#define FG_CONN_CAP_MAX		     (1u << 20) /* connections per source key */
#define FG_CONN_TTL_MIN_MS	     10		/* handshake_timeout */
#define FG_CONN_TTL_MAX_MS	     300000
#define FG_CONN_RECONCILE_DEFAULT_MS 10000 /* concurrency: {reconcile:} */
#define FG_CONN_RECONCILE_MIN_MS     1000
#define FG_CONN_RECONCILE_MAX_MS     3600000
#define FG_CONN_KEYS_MIN	     1024 /* concurrency: {max_keys:} */
#define FG_CONN_KEYS_MAX	     (1u << 24)

struct fgconn_bpf;
struct bpf_link;

/* The maps that are pinned (under their names), fg_conn.fd[] order. */
enum fg_conn_map {
	FGC_M_CTL = 0,
	FGC_M_CAPS,
	FGC_M_MARK,
	FGC_M_COUNT,
	FGC_M_PEND,
	FGC_M_STATS,
	FGC_NMAPS,
};
extern const char *const fg_conn_map_names[FGC_NMAPS];

struct fg_conn {
	struct fgconn_bpf *skel; /* NULL when opened from pins (readers) */
	int fd[FGC_NMAPS];	 /* the skeleton's, or our own from the pins */
	struct bpf_link *state;	 /* the counting program's link: tracepoint, or cgroup (sock_ops) */
	struct bpf_link *walk;	 /* tp_btf way: iter/tcp */
	struct bpf_link *sweep;	 /* tp_btf way: iter/bpf_map_elem over fgc_count */
	struct bpf_link *release; /* sock_ops way: cgroup/sock_release */
	struct fg_conn_ctl *ctl;  /* fgc_ctl[0], mmapped */
	int ncpus;
	bool adopted;		  /* maps came from a pin dir */
	bool progs;		  /* the way's programs are loaded (not only the maps) */
	bool test_entry;	  /* fgc_test is loaded too (opts.test_entry) */
	enum fg_conn_way way;	  /* how this kernel lets it count (lib/kfeat.h) */
	char way_why[FG_WHY_LEN]; /* FG_CONN_WAY_NONE: what the kernel lacks; else, after a
				   * failed fg_conn_attach, what failed */
	__u64 test_now;		  /* nonzero: the reconcile judges pending slots
					 * at this time (an XDP program on a fake clock) */
};

struct fg_conn_opts {
	__u32 max_keys;	     /* fgc_count entries; 0: FG_CONN_KEYS_DEFAULT */
	__u32 max_pending;   /* fgc_pend entries; 0: as max_keys */
	const char *pin_dir; /* adopt its fgc_* pins if present; NULL: none */
	bool test_entry;     /* also load the fgc_test XDP entry (tests) */
	/* the way: FG_CONN_WAY_NONE (0) = as FG_CONN_WAY_ENV says, by default
	 * the best this kernel allows; else that way, if the kernel allows it */
	enum fg_conn_way way;
	/* the maps only, the way picked but not its programs: fg_conn_load_way
	 * loads them when a policy has a cap (floodgated: a cap-less policy
	 * costs no verification, issue 25) */
	bool maps_only;
};

/* What one reconcile did (events of its own walk and sweeps). */
struct fg_conn_rec {
	__u64 seeded;	   /* sockets counted that nobody had counted */
	__u64 rekeyed;	   /* sockets moved to new keys */
	__u64 fixed_keys;  /* keys whose count was wrong */
	__u64 fixed_conns; /* connections corrected, in all */
	__u64 deleted;	   /* entries at zero removed */
	__u32 epoch;	   /* the epoch it left current */
};

/* One fgc_count entry, for `top` and the metrics. */
struct fg_conn_entry {
	struct fg_conn_key key;
	__s64 est;     /* established, both halves */
	__u32 pending; /* live pending slots */
	__u32 pad;
};

/* Load or adopt the counting maps, and the counting programs of the way
 * asked for (o->way, else FG_CONN_WAY_ENV, else the best this kernel
 * allows): c->way. Where the kernel allows none (or not the one forced),
 * the maps are still made (the XDP program shares them) and c->way is
 * FG_CONN_WAY_NONE, with why in c->way_why: attach, pin and reconcile then
 * do nothing, and a policy with caps is refused (policy/policy_kernel.h).
 * -EINVAL (why filled) for an FG_CONN_WAY_ENV that names no way (the
 * daemon then runs without caps, daemon/mod_conn.c). */
int fg_conn_open(struct fg_conn *c, const struct fg_conn_opts *o, char *why);
/* The way's programs over the maps c holds (after an open with
 * maps_only, or fg_conn_unload_way); nothing when they are loaded or the
 * way is FG_CONN_WAY_NONE. A failure (why filled) leaves c as it was. */
int fg_conn_load_way(struct fg_conn *c, char *why);
/* Stop counting and unload the way's programs: detach, remove dir's link
 * pins (dir may be NULL), fgc_ctl's way to none. The maps and their
 * counts stay (the seed after the next fg_conn_load_way corrects them). */
int fg_conn_unload_way(struct fg_conn *c, const char *dir, char *why);
/* Read-only, for readers: the pinned maps of dir, checked (types, sizes,
 * ABI); -ENOENT if nothing is pinned there. */
int fg_conn_open_pins(struct fg_conn *c, const char *dir, char *why);
/* Attach the way's programs (on failure c->way_why says what failed) and
 * record the way in fgc_ctl for readers. */
int fg_conn_attach(struct fg_conn *c);
/* Attached and able to reconcile (a way, its programs attached). */
bool fg_conn_ready(const struct fg_conn *c);
int fg_conn_pin(struct fg_conn *c, const char *dir);
/* Remove the fgc_* pins of dir (unpinning the link stops the counting
 * unless a process still holds it). Missing pins are not an error. */
int fg_conn_unpin(const char *dir);
void fg_conn_close(struct fg_conn *c);

/* Validate caps[0..n) and make them the cap table: the inactive slot is
 * written, then made active, then an RCU grace period passes, so no
 * program still reads the old slot when the next call writes it. Counted
 * sockets keep their keys until fg_conn_reconcile rekeys them. -EINVAL
 * (why filled) changes nothing. */
int fg_conn_set_caps(struct fg_conn *c, const struct fg_conn_cap *caps, __u32 n, char *why);

/* Seed / reconcile: sweep, bump the epoch, walk every TCP socket of this
 * process's network namespace (the TCP iterator, or a sock_diag dump),
 * sweep again, delete entries at zero. */
int fg_conn_reconcile(struct fg_conn *c, struct fg_conn_rec *rec);

/* A key's record: est and live pending slots at now_ns (CLOCK_MONOTONIC),
 * from fgc_count or else fgc_pend; -ENOENT if neither has it. */
int fg_conn_lookup(struct fg_conn *c, const struct fg_conn_key *k, __u64 now_ns, __s64 *est,
		   __u32 *pending);

/* Every fgc_count entry; *out is malloc'd (NULL when none). */
int fg_conn_dump(struct fg_conn *c, __u64 now_ns, struct fg_conn_entry **out, size_t *n);

/* The active cap table. */
int fg_conn_caps_read(struct fg_conn *c, struct fg_conn_caps *out);

/* Events summed over CPUs. */
int fg_conn_stats_read(struct fg_conn *c, struct fg_conn_stats *out);

/* Times the kernel skipped the counting program because it was already
 * running on that CPU (bpf_prog_info.recursion_misses; the tracepoint's,
 * a sock_ops program is never skipped): transitions the reconcile has to
 * repair. */
int fg_conn_misses(struct fg_conn *c, __u64 *misses);

/* Count a live pending slot? (userspace side of fg_conn_slot_live) */
__u32 fg_conn_pending(const struct fg_conn_val *v, __u64 now_ns);

/* Build a key as the XDP side does (fg_conn_key_make of fg_conn.bpf.h). */
void fg_conn_key_of(struct fg_conn_key *k, int family, const __be32 saddr[4],
		    const struct fg_conn_cap *cap);

/*
 * The cap table entry of rule idx of a compiled policy: its id, gen, masks
 * and cap as in fg_rule, the distinct destination-port ranges of its TCP
 * match entries and their families. Pure: touches no map (the policy
 * compiler checks a rule with it, the daemon builds the table with it).
 * -EINVAL (why filled) when the rule has no cap or no TCP entry, -E2BIG
 * when its ports need more than FG_CONN_RANGES ranges.
 */
int fg_conn_cap_of_rule(const struct fg_policy *pol, __u32 idx, struct fg_conn_cap *out, char *why);
/* Every capped rule of pol, in rule order, into caps[FG_CONN_MAX_CAPS]. */
int fg_conn_caps_of_policy(const struct fg_policy *pol, struct fg_conn_cap *caps, __u32 *n,
			   char *why);

/* What readers show per capped rule (top, status, metrics). */
struct fg_conn_rule_sum {
	__u16 rule, gen; /* as in the cap table */
	__u32 cap;
	__u32 sources; /* keys with connections or pending handshakes */
	__u32 at_cap;  /* ... of them at the cap: established + pending >= cap */
	__u64 conns;   /* established connections counted, in all */
	__u64 pending; /* live pending handshakes, in all */
};

/* The cap of k's rule in the active table caps, 0 if it has none (a rule
 * removed or renamed since: its key is left to the reconcile). */
__u32 fg_conn_cap_of_key(const struct fg_conn_caps *caps, const struct fg_conn_key *k);
/* Is an entry at its cap? */
bool fg_conn_entry_at_cap(const struct fg_conn_caps *caps, const struct fg_conn_entry *e);
/* sum[i] for caps->cap[i], from a dump. */
void fg_conn_summarise(const struct fg_conn_caps *caps, const struct fg_conn_entry *e, size_t n,
		       struct fg_conn_rule_sum sum[FG_CONN_MAX_CAPS]);

/* Names for the events, for labels and JSON. */
extern const char *const fg_conn_event_names[FGC_EV_MAX];

#endif /* FG_USER_CONN_H */
