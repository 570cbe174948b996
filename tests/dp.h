/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Data-path test fixture: the real XDP program from its skeleton, loaded
 * with the test clock (fake_now), unpinned; policies built by hand so each
 * test controls every field; frames run through BPF_PROG_TEST_RUN. fg_ctl
 * is written the way floodgate writes it: whole once at open, then field by
 * field through user/maps/ctl.h (d->cm).
 */
#ifndef FG_TEST_DP_H
#define FG_TEST_DP_H

#include <stdbool.h>
#include <stdint.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include "floodgate.h"
#include "floodgate.skel.h"
#include "maps/ctl.h"
#include "maps/fgmaps.h"
#include "pkt.h"
#include "policy/policy.h"

struct dp {
	struct floodgate_bpf *skel;
	int prog;
	int ncpu;
	struct fg_ctl_map cm; /* fg_ctl, mapped */
	struct fg_policy pol; /* the policy being built */
	/* The counters, read through user/maps: only st.fd[FGM_STATS] is open
	 * (the skeleton's fd, not dup()ed). dp_outcome() reads every row in one
	 * BPF_MAP_LOOKUP_BATCH into rows[1] and compares it with rows[0], the
	 * read before: FG_NROWS rows of ncpu struct fg_stats each, as the
	 * kernel copies them (row_bytes a row). */
	struct fg_maps st;
	void *rows[2];
	size_t row_bytes;
	struct fg_pfx_entry pfx[128]; /* what dp_pfx wrote, for fg_dir4 */
	int npfx;
	struct fg_lease *lease; /* fg_lease, mapped: FG_MAX_IDS entries */
	size_t lease_len;
	struct fg_shed_ctl *shed; /* fg_shed, mapped: one entry */
	bool kept;		  /* dp_close keeps the program for the next dp_open (dp.c) */
	bool keep_hints;	  /* dp_apply writes pol.hint4 as set, not fg_policy_hints' */
};

extern int dp_sa_on; /* 1: dp_open loads with syn_auth in (fg_sa_on) */
int dp_open(struct dp *d, __u32 max_sources);
void dp_close(struct dp *d);
void dp_set_now(struct dp *d, __u64 ns);
__u64 dp_now(struct dp *d);

/* policy building */
void dp_pol_reset(struct dp *d);
struct fg_limit dp_lim(double rate, double burst);
/* Adds a rule; its match m goes into every class whose bit is set in
 * classes (1 << FG_CLASS_*). Returns the rule index (= id). */
int dp_rule(struct dp *d, const struct fg_rule *r, const struct fg_match *m, unsigned classes);
/* The same with a rule id of the caller's choice (0..FG_MAX_IDS-1);
 * returns the rule index. */
int dp_rule_id(struct dp *d, const struct fg_rule *r, const struct fg_match *m, unsigned classes,
	       __u16 id);
/* Adds one more match entry for rule idx. */
void dp_match(struct dp *d, int idx, const struct fg_match *m, unsigned classes);
int dp_apply(struct dp *d); /* write inactive slot, flip (fg_switch_slot) */
/* The new-key admission limit floodgated sets for the policy being built
 * and max_sources (fg_policy_set_admission, the daemon's own code). */
int dp_set_admission(struct dp *d, __u64 max_sources);
/* File mode and kill switch, through fg_switch_file_mode and fg_switch_bypass. */
int dp_set_ctl(struct dp *d, __u32 mode, __u32 bypass, __u64 until);
int dp_pfx(struct dp *d, const char *cidr, __u32 list, __u32 sets);

/* Fleet leases, written through the mapping as floodgated writes them
 * (docs/fleet.md section 8): before the policy flip, the rule's entry
 * (gen, on_loss, local, no lease); then each renewal adds the grant, writes
 * local, tat (the local share empty at the lease's expiry) and nodes, and
 * stores lease_expires last. */
void dp_lease_init(struct dp *d, __u32 id, __u16 gen, __u8 on_loss, struct fg_limit local);
void dp_lease_renew(struct dp *d, __u32 id, __s64 grant, __u64 expires_ns, __u32 nodes);

/* The adaptive shedder's output, stored through the mapping as floodgated
 * stores it: one threshold for a tier and kind; the deadline (the
 * thresholds hold until end - 2^hshift, then fall to 0 at end). */
void dp_shed_thr(struct dp *d, int tier, int kind, __u32 thr);
void dp_shed_deadline(struct dp *d, __u64 end_ns, __u32 hshift);
/* A pool at index i (rule.pool = i + 1) of the policy being built:
 * fg_pool_limits from rate, burst and reserve, bucket id i. */
int dp_pool(struct dp *d, int i, double rate, double burst, double reserve_pct, __u8 flags);

/* running */
int dp_run(struct dp *d, const uint8_t *pkt, int len, __u32 *retval);
int dp_send(struct dp *d, const struct pkt_spec *s); /* returns XDP verdict or -errno */
int dp_read_stats(struct dp *d, __u32 row, struct fg_stats *out);
/* Which (row, outcome) changed since the last call; -1 if none or several. */
int dp_outcome(struct dp *d, __u32 *row, __u32 *out);
/* Sends s; the one outcome it was counted under (its row in *row, its
 * verdict in *verdict; either may be NULL), or -1. */
int dp_outcome_of(struct dp *d, const struct pkt_spec *s, __u32 *row, int *verdict);
__u64 dp_row_pkts(struct dp *d, __u32 row, __u32 out);
__u64 dp_row_ev(struct dp *d, __u32 row, __u32 ev);
int dp_bucket4(struct dp *d, const char *addr, __u16 rule, __u16 gen, struct fg_bucket *b);
/* Where addr's bucket under rule/gen lives in fg_src4: its key, set, own
 * way (fg_way4_pref) and the way that holds it (-1: none); the set in *set. */
struct dp_where {
	__u64 key;
	__u32 set, pref;
	int way;
};
int dp_where4(struct dp *d, const char *addr, __u16 rule, __u16 gen, struct dp_where *at,
	      struct fg_set4 *set);
/* The claim rule of fg_way_in on a set with no full bucket, as a model:
 * the key's own way pref if empty, else the first empty one; marks it in
 * used[0..ways-1] and returns it, or -1 when every way is used. */
int dp_model_claim(__u8 *used, __u32 ways, __u32 pref);
/* Claims seen against that model: in the key's own way, in another, none
 * (set full), and not where the model puts them. */
struct dp_claims {
	int own, other, none, wrong;
};
/* One new key: the model's way for it (used, ways, pref) against got. */
void dp_claim_seen(struct dp_claims *c, __u8 *used, __u32 ways, __u32 pref, int got);
/* Prints c for what; 0 when every claim was where the model put it, both
 * kinds (own way, another) were seen and inserts (FG_EV_INSERT) counts
 * one per claim; else -EPROTO, saying which. */
int dp_claims_check(const struct dp_claims *c, const char *what, __u64 inserts);
/* fg_agg[idx] (FG_AGG_IDX, FG_OVF_IDX, FG_INS_IDX). */
int dp_agg(struct dp *d, __u32 idx, struct fg_bucket *b);
__u32 dp_count_src4(struct dp *d);

#define M_ANY ((struct fg_match){ .sport_hi = 65535, .dport_hi = 65535 })
#define C_ALL ((1u << FG_NCLASS) - 1)

/* SYN authentication's fixture: rule 0 limits TCP to dport, SYN without
 * ACK, per source /32 (/128) at src, with syn_auth; rule 1 passes the rest;
 * the policy's syn_auth settings for way (FG_SA_WAY_*): verified for 600 s,
 * the global reply cap, reply_pfx left zero (the tests of it set it). */
void dp_sa_rules(struct dp *d, int way, __u16 dport, struct fg_limit src, struct fg_limit reply);

#endif
