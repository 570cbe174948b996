/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A compiled policy against what this kernel allows (lib/kfeat.h): for
 * each feature the policy uses, whether it runs here, the way it takes and
 * why not. floodgated refuses a policy with an unavailable feature at start
 * and at reload (the running one stays); `floodgate check` shows the list
 * beforehand; `floodgate status` the features of the policy in force.
 */
#ifndef FG_POLICY_KERNEL_H
#define FG_POLICY_KERNEL_H

#include <stddef.h>
#include "lib/kfeat.h"
#include "policy/policy.h"

enum fg_need_state {
	FG_NEED_OK = 0,	     /* runs here as designed */
	FG_NEED_DEGRADED,    /* runs here, another way (how says which, why what is missing) */
	FG_NEED_UNAVAILABLE, /* no way on this kernel: the policy is refused */
};

struct fg_need {
	const char *feature; /* "filter", "concurrency caps", "xdp_attach: libxdp", ... */
	enum fg_need_state state;
	char how[96];  /* the way it takes, when it runs */
	char why[384]; /* what the kernel lacks, when not OK */
};

#define FG_NEEDS_MAX 8

/* The features cfg uses, into out[FG_NEEDS_MAX]; returns how many. */
int fg_policy_kernel_needs(const struct fg_config *cfg, const struct fg_kfeat *kf,
			   struct fg_need *out);

/* 0, or -EOPNOTSUPP with "FEATURE: why; ..." in why for every unavailable one. */
int fg_policy_kernel_check(const struct fg_config *cfg, const struct fg_kfeat *kf, char *why);

/* The way SYN authentication takes on this kernel for want (enum fg_syn_way;
 * FG_SYN_WAY_AUTO: the best): FG_SYN_WAY_HANDOFF or FG_SYN_WAY_RETRANSMIT,
 * or FG_SYN_WAY_AUTO (none) with why naming the kernel feature it lacks.
 * handoff: a tc program (sched_cls), bpf_skc_lookup_tcp and the kfunc
 * bpf_sk_assign_tcp_reqsk (6.9); retransmit: bpf_skc_lookup_tcp in XDP. */
enum fg_syn_way fg_synauth_way(const struct fg_kfeat *kf, int want, char *why);
/* The same for cfg's syn_auth way and xdp_mode: generic XDP (xdp_mode: skb)
 * has no handoff (the listener resets the connections it hands off): auto
 * takes retransmit there, saying so in why, and handoff is none. */
enum fg_syn_way fg_synauth_way_cfg(const struct fg_config *cfg, const struct fg_kfeat *kf,
				   char *why);

/* What the compiler cannot know of cfg and this kernel gives: syn_auth's way
 * (pol.sa.way; the compiler leaves auto as retransmit). After a successful
 * fg_policy_kernel_check, before the apply. */
void fg_policy_kernel_fill(struct fg_config *cfg, const struct fg_kfeat *kf);

extern const char *const fg_need_state_names[3];

#endif /* FG_POLICY_KERNEL_H */
