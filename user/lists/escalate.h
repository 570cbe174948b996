/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Escalation (docs/floodgate.yaml.5, ESCALATION; docs/operators-guide.md):
 * a source that a rule with escalate: {after, for} has throttled for after
 * without a break (the throttle log's view, throttle.h: tracked since its
 * first throttle event, forgotten once quiet), from its first drops to its
 * last, and still drops (new drops within FG_THROTTLE_QUIET_TICKS) goes onto the runtime deny
 * list (rtlist.h) for for: its bucket's prefix (the rule's prefix_v4 /
 * prefix_v6), author FG_ESC_WHO, a comment naming the rule and how long it
 * was throttled. Such entries are ordinary runtime entries: they end by
 * themselves in the program, `floodgate deny del` removes one.
 *
 * Bounds. At most max_entries (escalation: {max_entries}) escalated entries
 * live at once, counted each tick from the runtime lists by their author,
 * so a restart keeps the count; beyond it, and when the runtime list of the
 * family is full, an escalation is refused and counted once per source and
 * stretch, never evicting an operator's entry (a prefix already listed, on
 * either list, is left as it is). Shadow (the rule's mode in force, global
 * shadow included) counts "would escalate" and adds nothing; the kill
 * switch stops escalation; a prefix that overlaps an allow entry (the
 * file's or a runtime one) is never escalated.
 *
 * fg_esc_step is the decision over the tracker, with the world behind
 * struct fg_esc_ops (tests fake it, with a fake clock in the view); the
 * fg_escd_* functions are the daemon's side on the pinned maps.
 */
#ifndef FG_ESCALATE_H
#define FG_ESCALATE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include "floodgate.h"
#include "lists/rtlist.h"
#include "sources/throttle.h"

struct fg_config;
struct fg_maps;

#define FG_ESC_WHO	       "floodgated (escalation)" /* fg_rt.who of escalated entries */
#define FG_ESC_LINES_PER_TICK  10   /* escalation log lines a tick; the rest summed */
#define FG_ESC_ADDS_PER_TICK   64   /* entries added a tick (each add reads its family) */
#define FG_ESC_CHECKS_PER_TICK 4096 /* sources looked up a tick; the rest wait a tick */

/* fg_tracked.esc: what was decided for the source in this stretch. */
enum fg_esc_state {
	FG_ESC_NONE = 0,
	FG_ESC_DONE = 1,    /* escalated, or its prefix was on a runtime list already */
	FG_ESC_SHADOW = 2,  /* counted as would escalate (escalates if the rule enforces again) */
	FG_ESC_REFUSED = 3, /* refused at the cap, counted; tried again when there is room */
	FG_ESC_ALLOWED = 4, /* overlaps an allow entry: never escalated */
};

/* A rule id's escalation as in force this tick. */
struct fg_esc_rule {
	__u8 on;     /* the rule escalates */
	__u8 shadow; /* its mode in force is shadow */
	__u16 gen;
	__u8 plen4, plen6; /* the rule's source grouping */
	__u64 after_ns, for_ns;
	char name[FG_NAME_LEN];
};

struct fg_esc_view {
	struct fg_esc_rule rule[FG_MAX_IDS]; /* by rule id */
	bool bypass;			     /* the kill switch is on */
	__u32 max;			     /* escalation: max_entries */
	size_t live; /* escalated entries live now; fg_esc_step adds its own */
	__u64 now;   /* CLOCK_MONOTONIC ns, the tracker's clock and the program's */
	__u64 wall;  /* CLOCK_REALTIME s, for fg_rt.created */
};

/* What an escalation touches; the daemon's are the maps, tests fake them. */
struct fg_esc_ops {
	/* does the prefix overlap an allow entry (the file's or a runtime one)? */
	bool (*allowed)(void *arg, const struct fg_rt_entry *e);
	/* is exactly this prefix on a runtime list already (either list, live)? */
	bool (*listed)(void *arg, const struct fg_rt_entry *e);
	/* add it (fg_rt_add): 0, -EEXIST when it was listed meanwhile (then updated),
	 * -ENOSPC when the list is full, or -errno; why */
	int (*add)(void *arg, const struct fg_rt_entry *e, char *why);
	void *arg;
};

struct fg_esc_counts {
	__u64 escalated; /* entries added */
	__u64 refused;	 /* refused at the cap (or a full runtime list), once a source */
	__u64 shadow;	 /* would have escalated, in shadow */
	__u64 failed;	 /* adds that failed otherwise (retried) */
	size_t live;	 /* escalated entries live, as of the last tick */
	__u32 max;	 /* the cap in force */
	__u32 rules;	 /* rules of the active policy that escalate */
};

struct fg_esc {
	struct fg_esc_counts n;
	int lines;	  /* logged this step */
	__u64 suppressed; /* not logged: over FG_ESC_LINES_PER_TICK */
	bool at_cap;	  /* the cap's line was logged; again once below it */
	bool list_full;	  /* the full list's line was logged; again after an add */
};

/* One pass over the tracked sources against v (v->live grows with each
 * entry added). Logs its decisions (at most FG_ESC_LINES_PER_TICK lines).
 * Returns the number of entries added. */
size_t fg_esc_step(struct fg_esc *x, struct fg_throttle *t, struct fg_esc_view *v,
		   const struct fg_esc_ops *ops);

/* Does the prefix a/alen overlap b/blen (one holds the other)? bytes: 4 or 16. */
bool fg_esc_overlap(const __u8 *a, int alen, const __u8 *b, int blen, int bytes);

/* A prefix, for sorted lookups. */
struct fg_esc_pfx {
	__u8 family, plen;
	__u8 addr[16];
};

/* Does e overlap a prefix of v (sorted by family, address, length; n)? A
 * lower-bound search for those inside e, one exact search per length for
 * those that cover it. */
bool fg_esc_pfx_overlap(const struct fg_esc_pfx *v, size_t n, const struct fg_esc_pfx *e);

/* Prefixes sorted by family, address, length (as fg_rt_list sorts them):
 * the comparison, for qsort, and the first index of v (sorted, n) not below k. */
int fg_esc_pfx_cmp(const struct fg_esc_pfx *x, const struct fg_esc_pfx *y);
int fg_esc_pfx_qcmp(const void *a, const void *b);
size_t fg_esc_pfx_lower_bound(const struct fg_esc_pfx *v, size_t n, const struct fg_esc_pfx *k);

#define FG_ESC_RUN_DIR "/run/floodgate"

/* The state file of pin dir pin_dir, for `floodgate status`: in state_dir
 * (NULL: $FLOODGATE_RUN_DIR, else /run/floodgate), "escalate-<pin dir>.state". */
void fg_escd_state_path(const char *pin_dir, char *buf, size_t len);

/* What the state file holds; 0 or -errno (-EPROTO: not one). */
struct fg_escd_state {
	__u32 pid;
	struct fg_esc_counts n;
};
int fg_escd_state_read(const char *path, struct fg_escd_state *st);

/* Is it an escalated entry (a deny entry whose author is FG_ESC_WHO)? */
bool fg_esc_is_escalated(const struct fg_rt *r);
/* Live escalated entries among list entries (escalated, not expired). */
size_t fg_esc_count_live(const struct fg_rt_entry *v, size_t n);

#endif /* FG_ESCALATE_H */
