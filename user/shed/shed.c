// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The adaptive shedder's controller, the pool arithmetic and the reference
 * of the program's dead-daemon decay. Pure: no I/O, no clock, no logging.
 * The equations and the bounds they give are in docs/shedding.md.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "shed/shed.h"
#include "lib/sysutil.h"

/* Amounts this close to 0 or T are 0 or T: a decay of T in n equal steps
 * lands on 0, not on a rounding residue that still reads as "shedding". */
#define SNAP 1e-9

static const char *const tier_names[FG_NTIERS] = {
	[FG_TIER_CRITICAL] = "critical",
	[FG_TIER_NORMAL] = "normal",
	[FG_TIER_BULK] = "bulk",
	[FG_TIER_BEST_EFFORT] = "best-effort",
};

static const char *const phase_names[] = {
	[FG_SHED_IDLE] = "idle",	 [FG_SHED_PENDING] = "pending",
	[FG_SHED_GROWING] = "growing",	 [FG_SHED_HOLDING] = "holding",
	[FG_SHED_DECAYING] = "decaying", [FG_SHED_NOSIGNAL] = "no-signal",
};

const char *fg_tier_name(int tier)
{
	return tier >= 0 && tier < FG_NTIERS ? tier_names[tier] : "?";
}

int fg_tier_parse(const char *name, int *tier)
{
	for (int t = 0; t < FG_NTIERS; t++) {
		if (!strcmp(name, tier_names[t])) {
			*tier = t;
			return 0;
		}
	}
	return -EINVAL;
}

const char *fg_shed_phase_name(int phase)
{
	if (phase < 0 || phase >= (int)(sizeof(phase_names) / sizeof(phase_names[0])))
		return "?";
	return phase_names[phase];
}

void fg_shed_cfg_default(struct fg_shed_cfg *cfg)
{
	*cfg = (struct fg_shed_cfg){
		.interval = 8,
		.delay = 28, /* three samples at 8 s pass, the fourth acts */
		.ramp = 120,
		.decay = 120,
		.good = 0.7,
		.bad = 0.8,
		.orphan = 32, /* 2^35 ns = 34.4 s after rounding up */
		.tiers = FG_TIERS_SHEDDABLE,
	};
}

/* true when lo <= x <= hi; false for NaN */
static int in_range(double x, double lo, double hi)
{
	return x >= lo && x <= hi;
}

#define WHY(...)                                  \
	({                                        \
		if (why)                          \
			fg_why(why, __VA_ARGS__); \
		-EINVAL;                          \
	})

int fg_shed_cfg_check(const struct fg_shed_cfg *c, char *why)
{
	if (!in_range(c->interval, 0.001, 3600))
		return WHY("interval must be between 1ms and 1h");
	if (!in_range(c->delay, 0, 86400))
		return WHY("delay must be between 0 and 24h");
	if (!in_range(c->ramp, c->interval, 86400))
		return WHY("ramp must be between the interval (%gs) and 24h", c->interval);
	if (!in_range(c->decay, c->interval, 86400))
		return WHY("decay must be between the interval (%gs) and 24h", c->interval);
	if (!(c->good > 0 && c->good < 1))
		return WHY("good must be above 0 and below 1");
	if (!(c->bad > c->good && c->bad < 1))
		return WHY("bad must be above good (%g) and below 1: the dead zone between them "
			   "keeps a noisy signal from flapping",
			   c->good);
	if (!in_range(c->orphan, 0.01, 1000))
		return WHY("orphan decay must be between 10ms and 1000s");
	if (!c->tiers || (c->tiers & ~FG_TIERS_SHEDDABLE))
		return WHY(
			"tiers must be one or more of normal, bulk, best-effort (critical is never shed)");
	return 0;
}

static void fill_out(const struct fg_shed *s, struct fg_shed_out *o);

int fg_shed_init(struct fg_shed *s, const struct fg_shed_cfg *cfg)
{
	int err = fg_shed_cfg_check(cfg, NULL);

	if (err)
		return err;
	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	for (int t = FG_NTIERS - 1; t > FG_TIER_CRITICAL; t--)
		if (cfg->tiers & FG_TIER_BIT(t))
			s->order[s->ntiers++] = (__u8)t;
	s->k_up = s->ntiers / (cfg->ramp * (1 - cfg->bad));
	s->k_down = s->ntiers / cfg->decay;
	s->dt_max = 2 * cfg->interval;
	s->phase = FG_SHED_IDLE;
	return 0;
}

static void snap(struct fg_shed *s)
{
	if (s->amount < SNAP)
		s->amount = 0;
	else if (s->amount > s->ntiers - SNAP)
		s->amount = s->ntiers;
}

int fg_shed_resume(struct fg_shed *s, double amount)
{
	struct fg_shed_out o;

	if (!in_range(amount, 0, s->ntiers))
		return -EINVAL;
	s->amount = amount;
	snap(s);
	s->pressure = 0;
	s->phase = s->amount > 0 ? FG_SHED_HOLDING : FG_SHED_IDLE;
	fill_out(s, &o);
	s->active = o.active;
	return 0;
}

/* f in [0, 1] -> a threshold against 31 random bits */
static __u32 quant(double f)
{
	if (f <= 0)
		return 0;
	if (f >= 1)
		return FG_SHED_ONE;
	return (__u32)llround(f * FG_SHED_ONE);
}

static double clamp01(double x)
{
	return x < 0 ? 0 : x > 1 ? 1 : x;
}

static void fill_out(const struct fg_shed *s, struct fg_shed_out *o)
{
	memset(o, 0, sizeof(*o));
	o->amount = s->amount;
	o->phase = s->phase;
	for (int r = 0; r < s->ntiers; r++) {
		int t = s->order[r];
		double f = clamp01(s->amount - r); /* rank r starts when r below are full */

		o->thr[t][FG_SHED_ANY] = quant(f);
		o->thr[t][FG_SHED_NEW] = quant(2 * f);
		o->thr[t][FG_SHED_EST] = quant(2 * f - 1);
		o->frac[t] = (double)o->thr[t][FG_SHED_ANY] / FG_SHED_ONE;
		if (o->thr[t][FG_SHED_NEW]) /* the first of the three to rise */
			o->active |= FG_TIER_BIT(t);
	}
}

void fg_shed_output(const struct fg_shed *s, struct fg_shed_out *o)
{
	fill_out(s, o);
}

/*
 * dS/dt = k_up (u - bad)  above bad, once the pressure has lasted `delay`
 *       = 0               in the dead zone [good, bad]
 *       = -k_down         below good (or no signal); the pressure count resets
 */
static void advance(struct fg_shed *s, double u, double dt, int lost, struct fg_shed_out *out)
{
	const struct fg_shed_cfg *c = &s->cfg;
	double before = s->amount;
	__u32 was_active = s->active;

	if (dt > s->dt_max)
		dt = s->dt_max;
	if (lost || u < c->good) {
		s->pressure = 0;
		s->amount -= s->k_down * dt;
		snap(s);
		s->phase = lost		 ? FG_SHED_NOSIGNAL :
			   s->amount > 0 ? FG_SHED_DECAYING :
					   FG_SHED_IDLE;
	} else if (u > c->bad) {
		/* capped: only "more than delay" matters, and by at most dt_max */
		s->pressure = fmin(s->pressure + dt, c->delay + s->dt_max);
		if (s->pressure > c->delay) {
			/* only the part of this step past the delay counts */
			double grow = fmin(dt, s->pressure - c->delay);

			s->amount += s->k_up * (u - c->bad) * grow;
			snap(s);
			s->phase = FG_SHED_GROWING;
		} else {
			s->phase = FG_SHED_PENDING;
		}
	} else {
		/* dead zone: the pressure count pauses, the amount holds */
		s->phase = s->amount > 0   ? FG_SHED_HOLDING :
			   s->pressure > 0 ? FG_SHED_PENDING :
					     FG_SHED_IDLE;
	}
	fill_out(s, out);
	out->delta = s->amount - before;
	out->entered = out->active & ~was_active;
	out->left = was_active & ~out->active;
	s->active = out->active;
}

int fg_shed_step(struct fg_shed *s, double u, double dt, struct fg_shed_out *out)
{
	if (!in_range(u, 0, 1) || !(dt > 0 && dt < INFINITY))
		return -EINVAL;
	advance(s, u, dt, 0, out);
	return 0;
}

int fg_shed_lost(struct fg_shed *s, double dt, struct fg_shed_out *out)
{
	if (!(dt > 0 && dt < INFINITY))
		return -EINVAL;
	advance(s, 0, dt, 1, out);
	return 0;
}

void fg_shed_deadline(const struct fg_shed *s, __u64 now_ns, __u64 *end, __u32 *hshift)
{
	__u64 hold = (__u64)llround(s->dt_max * 1e9);
	__u32 h = FG_SHED_HSHIFT_MIN;

	while (h < FG_SHED_HSHIFT_MAX && (double)(1ull << h) < s->cfg.orphan * 1e9)
		h++;
	*hshift = h;
	*end = now_ns + hold + (1ull << h);
}

int fg_pool_limits(const struct fg_limit *pool, double reserve_pct, struct fg_pool *out, char *why)
{
	long double keep, tau_low, cap_inc, cap_tau;

	if (!pool->inc || !pool->tau)
		return WHY("a pool needs a rate and a burst");
	if (!(reserve_pct >= 0 && reserve_pct < 100))
		return WHY("reserve must be at least 0%% and below 100%%");
	keep = 1 - (long double)reserve_pct / 100;
	tau_low = floorl((long double)pool->tau * keep);
	if (tau_low < pool->inc)
		return WHY("a reserve of %g%% leaves the other tiers less than one unit of the "
			   "pool's burst: raise the burst or lower the reserve",
			   reserve_pct);
	cap_inc = 0;
	cap_tau = 0;
	if (reserve_pct > 0) {
		cap_inc = roundl((long double)pool->inc / keep);
		cap_tau = floorl(tau_low / pool->inc * cap_inc);
		if (cap_inc >= (long double)FG_MAX_TAU || cap_tau >= (long double)FG_MAX_TAU)
			return WHY("the pool's rate is too low for a %g%% reserve", reserve_pct);
	}
	/* no reserve: no cap (inc 0), the pool alone */
	out->inc = pool->inc;
	out->tau = pool->tau;
	out->tau_low = (__u64)tau_low;
	out->cap.inc = (__u64)cap_inc;
	out->cap.tau = (__u64)cap_tau;
	return 0;
}
