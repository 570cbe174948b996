/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * From a compiled config to the maps: the policy double buffer. fg_policy,
 * fg_pfx4/6, fg_dir4 and fg_pidx each hold two slots; fg_ctl.slot says
 * which one packets read. A change is written whole into the other slot,
 * then fg_ctl.slot is flipped and membarrier(MEMBARRIER_CMD_GLOBAL) waits
 * for an RCU grace period (XDP programs run inside an RCU read-side
 * section), so no packet is judged by parts of two policies and the old
 * slot may be written again. The caller holds the pin dir's lock.
 */
#ifndef FG_APPLY_H
#define FG_APPLY_H

#include <linux/types.h>

struct fg_maps;
struct fg_config;

/*
 * Apply a compiled policy: rule ids by name (a surviving rule keeps its id,
 * generation, buckets and counters), the inactive slot written, the flip,
 * then the ids of removed rules freed and fg_meta stamped. Everything that
 * can be checked is checked before anything is written; a failure before
 * the flip leaves the active policy as it was. A failure after it (why says
 * "the new policy is active, but ...") leaves the new policy active with
 * that clean-up undone; the next apply does it again. cfg->pol is updated
 * in place (ids, gens, lists, admission, version).
 */
int fg_policy_apply(struct fg_maps *m, struct fg_config *cfg, char *why);

/* The same, calling hook->before_flip once the new slot is written and the
 * rule ids assigned (cfg->pol.rules[i].id, .gen), just before the flip:
 * state the new policy's rules need from their first packet (fleet leases)
 * goes in there. Its error (why set) aborts the apply before the flip. */
struct fg_apply_hook {
	int (*before_flip)(void *ctx, struct fg_maps *m, const struct fg_config *cfg, char *why);
	void *ctx;
};
int fg_policy_apply_hook(struct fg_maps *m, struct fg_config *cfg, const struct fg_apply_hook *hook,
			 char *why);

/* Per-rule mode: copy the active slot with rule `name`'s mode changed into
 * the inactive slot and flip, as above. -ENOENT if no such rule. */
int fg_rule_set_mode(struct fg_maps *m, const char *name, __u32 mode, char *why);

#endif /* FG_APPLY_H */
