/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What a reload changed, for floodgated's log: rules added, removed, moved,
 * and each changed field (limits, grouping, action, mode, cost, on_full),
 * then match entries, verdicts, prefixes and admission; "no policy
 * changes" when there are none. Structs are compared field by field, never
 * with memcmp (their padding is not part of the policy).
 */
#ifndef FG_RELOAD_LOG_H
#define FG_RELOAD_LOG_H

#include "policy.h"

/* Log (pr_info) how n differs from o, the policy it replaced. */
void fg_reload_log(const struct fg_config *o, const struct fg_config *n);

#endif /* FG_RELOAD_LOG_H */
