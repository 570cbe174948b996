/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What a reload (or an adoption) changed, for floodgated's log: the new
 * file against what was in force just before, the active policy slot and
 * fg_ctl as fg_policy_apply found them (opts.was) (apply.h), not against the file
 * as the daemon read it last. Rules added, removed, moved, and each changed
 * field (limits, grouping, action, mode, cost, on_full), then the global
 * mode, match entries, verdicts, prefixes and admission; "no policy
 * changes" when there are none. Where an operator's override keeps a mode
 * other than the file's, it says so. Structs are compared field by field,
 * never with memcmp (their padding is not part of the policy).
 */
#ifndef FG_RELOAD_LOG_H
#define FG_RELOAD_LOG_H

#include "maps/apply.h"
#include "policy/policy.h"

/* Log (pr_info, each line prefixed "what: ") how n, just applied, differs
 * from was. Sorts was->pfx. */
void fg_reload_log(const char *what, struct fg_inforce *was, const struct fg_config *n);

#endif /* FG_RELOAD_LOG_H */
