/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Escalation in floodgated (the module is mod_escalate.c): once a tick the
 * runtime lists are read, the engine (lists/escalate.h) is stepped over the
 * sources watch's tracker of throttled sources, and a small state file is
 * written for `floodgate status` (lists/escalate.h reads it).
 */
#ifndef FG_ESCD_H
#define FG_ESCD_H

#include <limits.h>
#include <stdbool.h>
#include "floodgate.h"
#include "lists/escalate.h"
#include "maps/fgmaps.h"

struct fg_config;

struct fg_escd {
	struct fg_esc x;
	struct fg_esc_pfx *allow; /* the file's allow prefixes, sorted */
	size_t nallow;
	const void *allow_of; /* ... of this fg_config.pfx, n_pfx */
	size_t allow_n;
	__u64 allow_ver;	   /* ... and fg_config.pol.version */
	char state_path[PATH_MAX]; /* "" when it cannot be written */
	bool warned;		   /* a failed tick was logged */
};

void fg_escd_init(struct fg_escd *d, const char *pin_dir);
/*
 * One tick: the runtime lists read once (their expired entries removed:
 * *swept is then true, the caller need not sweep them again), the live
 * escalated entries counted, fg_esc_step over the tracker with the rules of
 * pol (the active policy) that cfg gives escalate: (by name), the state
 * file written. Nothing is read when no rule escalates. 0 or -errno.
 */
int fg_escd_tick(struct fg_escd *d, struct fg_maps *m, struct fg_throttle *t,
		 const struct fg_config *cfg, const struct fg_policy *pol,
		 const struct fg_name *names, const struct fg_ctl *ctl, bool *swept);
/* The state file removed. */
void fg_escd_stop(struct fg_escd *d);

#endif /* FG_ESCD_H */
