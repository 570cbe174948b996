/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * floodgated's features as modules. floodgated.c is the lifecycle (load,
 * apply, attach, serve, reload, stop) and knows no feature; at each step
 * it walks fg_modules[] (modules.c) in order and calls the module's hook
 * for it, if any. A new feature is one mod_*.c file and one line in
 * modules.c. Steps, in the order they happen:
 *
 *   open         before the XDP program is loaded: maps it must share
 *                (bpf_map__reuse_fd on d->skel)
 *   init         the program is loaded and d->maps open, before the first
 *                apply
 *   before_flip  inside every apply, the new slot written and the rule ids
 *                assigned, just before the flip (ncfg: the config applied);
 *                an error aborts the apply, the running policy stays
 *   start        the first apply is done, under the pin dir's lock, before
 *                the interfaces are attached
 *   after_flip   a reload's apply succeeded, still under the lock
 *   reloaded     a reload is in force (outside the lock); old: what was
 *   tick         once a second, with the counters read once for everyone
 *                (struct fg_tick); in list order, so a module may use what
 *                one before it published in d or t
 *   poll         as often as the module asks: it returns the CLOCK_MONOTONIC
 *                (coarse) ns it wants to be called next, 0 for never
 *   snap         fill its part of the metrics snapshot (metrics.h)
 *   metrics      append its own Prometheus lines
 *   close        stopping; detach: the filter is being removed (hand back
 *                what other hosts should get), else it keeps running
 *
 * open, init and start failing stop the start (the module logged why);
 * before_flip fails the apply (why set); the rest log and go on. Modules
 * are the top level of their feature: they log, through lib/log.h.
 */
#ifndef FG_DAEMON_H
#define FG_DAEMON_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>
#include "floodgate.h"
#include "maps/fgmaps.h"

struct floodgate_bpf;
struct fg_config;
struct fg_swap_opts;
struct fg_swap_res;
struct fg_metrics_snap;
struct fg_throttle;

/* What the lifecycle shares with the modules. */
struct fgd {
	const char *config;	    /* the policy file, absolute */
	const char *dir;	    /* the pin dir */
	struct floodgate_bpf *skel; /* loaded after open */
	struct fg_maps maps;	    /* open from init on */
	struct fg_config *cfg;	    /* the file's config in force (after a reload: the new one) */
	bool adopting;		    /* the pin dir held a filter before this start */
	bool not_applied;	    /* adopting, the file was refused: the pinned policy runs */
	__u32 dir4[4];		    /* the IPv4 lists as last applied (metrics.h) */
	/* published by a module for those after it in the list */
	struct fg_throttle *tracker; /* sources watch: throttled sources, for escalation */
	const char *metrics_listen;  /* --metrics, overriding the file's */
	/* the interfaces filtered, from start on: the file's, $FLOODGATE_INTERFACES or
	 * --interface (a reload does not change them) */
	char ifnames[FG_MAX_IFS][16];
	int n_ifnames;
	/* the XDP program swapped for a second instance of it, edited before
	 * its load, on every interface (attach/swap.h); skel is then the new one */
	int (*swap_prog)(struct fgd *d, const struct fg_swap_opts *o, struct fg_swap_res *res,
			 char *why);
};

/* The counters as read once per tick (on the heap: about 160 KB). */
struct fg_tick {
	struct fg_ctl ctl;
	struct fg_policy pol;		  /* the active slot's */
	struct fg_name names[FG_MAX_IDS]; /* fg_names */
	struct fg_stats rows[FG_NROWS];	  /* summed over CPUs */
	__u64 now_ns;			  /* CLOCK_MONOTONIC_COARSE */
	bool rt_swept;			  /* escalation removed expired runtime entries */
};

struct fg_module {
	const char *name;
	int (*open)(struct fgd *d);
	int (*init)(struct fgd *d);
	int (*before_flip)(struct fgd *d, const struct fg_config *ncfg, char *why);
	int (*start)(struct fgd *d);
	void (*after_flip)(struct fgd *d, const struct fg_config *ncfg);
	void (*reloaded)(struct fgd *d, const struct fg_config *old, const struct fg_config *ncfg);
	void (*tick)(struct fgd *d, struct fg_tick *t);
	__u64 (*poll)(struct fgd *d, __u64 now_ns);
	void (*snap)(struct fgd *d, struct fg_metrics_snap *s);
	void (*metrics)(struct fgd *d, const struct fg_tick *t, FILE *f);
	void (*close)(struct fgd *d, bool detach);
};

/* Every module, NULL-terminated, in the order their hooks run (modules.c). */
extern const struct fg_module *const fg_modules[];

#define fgd_for_each_module(m) for (const struct fg_module *const *m = fg_modules; *m; m++)

extern const struct fg_module fg_mod_conn, fg_mod_fleet, fg_mod_shed, fg_mod_sources,
	fg_mod_escalate, fg_mod_rtlist, fg_mod_synauth, fg_mod_metrics;

#endif /* FG_DAEMON_H */
