/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The adaptive load shedder's controller (issue 11): pure arithmetic, no
 * I/O, driven by utilization samples in [0, 1] and a time step. It sets the
 * rate at which shedding changes, not the shed amount; the amount S in
 * [0, T] runs over the T tiers in use, lowest first. Also the arithmetic of
 * reserved capacity pools and of the program's dead-daemon decay, which the
 * policy compiler and the XDP program will share. Equations, defaults and
 * the proven bounds: docs/shedding.md.
 */
#ifndef FG_SHED_H
#define FG_SHED_H

#include <stddef.h>
#include "floodgate.h"

/* enum fg_tier, enum fg_shed_kind, FG_SHED_ONE and fg_shed_decayed, which
 * the XDP program shares, are in include/floodgate.h. */
#define FG_TIER_BIT(t) (1u << (t))
#define FG_TIERS_SHEDDABLE \
	(FG_TIER_BIT(FG_TIER_NORMAL) | FG_TIER_BIT(FG_TIER_BULK) | FG_TIER_BIT(FG_TIER_BEST_EFFORT))

struct fg_shed_cfg {
	double interval; /* s, nominal time between samples */
	double delay;	 /* s of pressure (above bad) before shedding grows */
	double ramp;	 /* s from none to full shed at utilization 1 */
	double decay;	 /* s from full shed to none while below good */
	double good;	 /* below: shedding decays */
	double bad;	 /* above: shedding grows with (u - bad) */
	double orphan;	 /* s a dead daemon's shedding takes to decay in XDP, after the hold */
	__u32 tiers;	 /* FG_TIER_BIT mask of the tiers in use; critical excluded */
};

/* The defaults: interval 8 s, delay 28 s, ramp 120 s, decay 120 s, good 0.7,
 * bad 0.8, orphan 32 s, all three sheddable tiers. */
void fg_shed_cfg_default(struct fg_shed_cfg *cfg);

/* 0, or -EINVAL with a one-line reason in why (may be NULL). */
int fg_shed_cfg_check(const struct fg_shed_cfg *cfg, char *why);

enum fg_shed_phase {
	FG_SHED_IDLE = 0, /* nothing shed, no pressure */
	FG_SHED_PENDING,  /* pressure, still within the delay: nothing changes */
	FG_SHED_GROWING,  /* above bad after the delay */
	FG_SHED_HOLDING,  /* in the dead zone with something shed */
	FG_SHED_DECAYING, /* below good */
	FG_SHED_NOSIGNAL, /* the signal could not be read: decaying (fail-open) */
};

struct fg_shed {
	struct fg_shed_cfg cfg;
	double k_up;	       /* tiers/s per unit of (u - bad): T / (ramp * (1 - bad)) */
	double k_down;	       /* tiers/s while below good: T / decay */
	double dt_max;	       /* a step longer than this counts as this: 2 * interval */
	int ntiers;	       /* T */
	__u8 order[FG_NTIERS]; /* rank -> tier, lowest first (best-effort, bulk, normal) */
	double amount;	       /* S in [0, T] */
	double pressure;       /* s of pressure counted toward the delay */
	enum fg_shed_phase phase;
	__u32 active; /* FG_TIER_BIT of tiers with a nonzero threshold */
};

struct fg_shed_out {
	double amount;		/* S after the step */
	double delta;		/* S after - S before */
	double frac[FG_NTIERS]; /* shed fraction per tier, as applied (thr / FG_SHED_ONE) */
	__u32 thr[FG_NTIERS][FG_SHED_NKIND]; /* [FG_TIER_CRITICAL] is always 0 */
	__u32 active;			     /* tiers with a nonzero threshold */
	__u32 entered;			     /* tiers that started being shed in this step */
	__u32 left;			     /* tiers that stopped being shed in this step */
	enum fg_shed_phase phase;
};

/* 0 or -EINVAL (cfg invalid; *s untouched). Starts idle. */
int fg_shed_init(struct fg_shed *s, const struct fg_shed_cfg *cfg);

/* Start from a shed amount, e.g. what a pinned state decayed to while no
 * daemon ran; the pressure count starts again. 0 or -EINVAL (not in
 * [0, T]; nothing changed). */
int fg_shed_resume(struct fg_shed *s, double amount);

/* One sample u in [0, 1], dt s after the previous one. 0 or -EINVAL (u not
 * in [0, 1], dt not > 0: nothing changed). */
int fg_shed_step(struct fg_shed *s, double u, double dt, struct fg_shed_out *out);

/* A sample that could not be taken: counts as good (decay, pressure count
 * reset), so a broken signal cannot keep a host shedding. */
int fg_shed_lost(struct fg_shed *s, double dt, struct fg_shed_out *out);

/* The current output, with no events. */
void fg_shed_output(const struct fg_shed *s, struct fg_shed_out *out);

const char *fg_tier_name(int tier);		/* "critical", ..., "?" */
int fg_tier_parse(const char *name, int *tier); /* 0 or -EINVAL */
const char *fg_shed_phase_name(int phase);

/*
 * Dead-daemon decay, the program's arithmetic (docs/shedding.md). With
 * every sample the daemon writes the thresholds and a deadline `end` (ns,
 * CLOCK_MONOTONIC): they hold as written until end - 2^hshift, then fall
 * linearly to 0 at end. A live daemon rewrites them every interval, before
 * the hold runs out; a dead one leaves a host shedding for at most
 * hold + 2^hshift ns.
 */
/* The hold is 2 * interval; hshift is the least with 2^hshift ns >= orphan. */
void fg_shed_deadline(const struct fg_shed *s, __u64 now_ns, __u64 *end, __u32 *hshift);

/*
 * Reserved capacity pools. All tiers share one GCRA tat per pool. Critical
 * has the pool's whole tolerance tau; the other tiers tau_low =
 * tau * (1 - reserve), which is exactly "may spend only while the pool
 * holds more than the reserve" (strict priority for critical over the last
 * reserve * burst). A reduced tolerance bounds only the burst, not the rate,
 * so the non-critical tiers together also pass a cap bucket of rate
 * (1 - reserve) * rate and burst (1 - reserve) * burst. In the units of
 * struct fg_pool (include/floodgate.h).
 */
/* From the pool's compiled limit (rate and burst validated as any limit)
 * and its reserve in percent, [0, 100): out's inc, tau, tau_low and cap
 * (inc 0 = no cap, when there is no reserve); its id, cost and flags are
 * left alone. 0 or -EINVAL with a reason in why, and out untouched. */
int fg_pool_limits(const struct fg_limit *pool, double reserve_pct, struct fg_pool *out, char *why);

#endif /* FG_SHED_H */
