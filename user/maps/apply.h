/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * From a compiled config to the maps: the policy double buffer. fg_policy,
 * fg_pfx4/6, fg_dir4 and fg_pidx each hold two slots; fg_ctl.slot says
 * which one packets read. A change is written whole into the other slot,
 * then the slot is switched (fg_switch_slot, user/maps/ctl.h) and
 * membarrier(MEMBARRIER_CMD_GLOBAL) waits for an RCU grace period (XDP
 * programs run inside an RCU read-side section), so no packet is judged by
 * parts of two policies and the old slot may be written again. The caller
 * holds the pin dir's lock; nothing here rewrites fg_ctl whole, so the
 * operator's switches (bypass, mode overrides) never wait for an apply.
 *
 * The mode rule. The file's global mode and rule modes are applied by every
 * apply (start, adoption, reload). The operator's overrides in fg_ctl sit on
 * top and are left alone, except that an id given to a new rule or freed
 * loses its override bits: a new rule never inherits an old one's override.
 */
#ifndef FG_APPLY_H
#define FG_APPLY_H

#include <stddef.h>
#include <linux/types.h>
#include "floodgate.h"

struct fg_maps;
struct fg_config;
struct fg_pfx_entry;

/* What was in force just before an apply: the active slot and fg_ctl, for
 * the reload log (reload_log.h) to compare the new file with. */
struct fg_inforce {
	struct fg_policy pol;		  /* the active slot's policy */
	struct fg_name names[FG_MAX_IDS]; /* fg_names */
	struct fg_ctl ctl;		  /* file mode, overrides */
	struct fg_pfx_entry *pfx;	  /* the active slot's trie entries, malloc'd */
	size_t n_pfx;
	/* set by a successful apply: the new IPv4 lists' blocks and what the
	 * trie answers (mapimg.h), and that in one line (fg_dir4_describe), ""
	 * when the trie answers nothing; the caller logs it */
	__u32 dir4_blocks, dir4_trie16, dir4_trie24, dir4_trie_pfx;
	char dir4_note[256];
};

void fg_inforce_free(struct fg_inforce *was);

/* Called once the new slot is written and the rule ids assigned
 * (cfg->pol.rules[i].id, .gen), just before the flip: state the new
 * policy's rules need from their first packet (fleet leases) goes in
 * there. Its error (why set) aborts the apply before the flip. */
typedef int (*fg_before_flip_fn)(void *ctx, struct fg_maps *m, const struct fg_config *cfg,
				 char *why);

/* fg_policy_apply's options, LIBBPF_OPTS style: FG_APPLY_OPTS(o, .was = &w). */
struct fg_apply_opts {
	size_t sz;		       /* sizeof(struct fg_apply_opts) */
	fg_before_flip_fn before_flip; /* may be NULL */
	void *ctx;		       /* its first argument */
	struct fg_inforce *was;	       /* receives what was in force before; may be NULL */
};
#define FG_APPLY_OPTS(name, ...) \
	struct fg_apply_opts name = { .sz = sizeof(struct fg_apply_opts), __VA_ARGS__ }

/*
 * Apply a compiled policy: rule ids by name (a surviving rule keeps its id,
 * generation, buckets and counters; a new name gets one of FG_MAX_IDS ids
 * free now, so every rule can be replaced in one apply), pool ids by name
 * the same way (cfg->pol.pool_names; a new pool's buckets start full), the inactive slot
 * written, opts->before_flip called, the slot and the file's global mode switched, then the
 * ids of removed rules freed and fg_meta stamped. Everything that can be checked
 * is checked before anything is written; a failure before the switch leaves
 * the active policy as it was. A failure after it (why says "the new
 * policy is active, but ...") leaves the new policy active with that
 * clean-up undone; the next apply does it again. cfg->pol is updated in
 * place (ids, gens, lists, admission, version). opts may be NULL; opts->was
 * (free it with fg_inforce_free) receives what was in force before.
 */
int fg_policy_apply(struct fg_maps *m, struct fg_config *cfg, const struct fg_apply_opts *opts,
		    char *why);

#endif /* FG_APPLY_H */
