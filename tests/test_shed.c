// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The adaptive shedder's controller (user/shed/shed.c) on a simulated clock, the
 * dead-daemon decay the program will compute, and reserved capacity pools
 * simulated with the program's own bucket arithmetic (bpf/fg_gcra.h).
 * Expected figures are worked out by hand from the configuration, not from
 * the code under test. No root needed.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include "fgtest.h"
#include "fg_gcra.h"
#include "shed/shed.h"
#include "lib/sysutil.h"

#define ASSERT_DLE(got, lim, name)                                                                 \
	({                                                                                         \
		double ___g = (got), ___l = (lim);                                                 \
		int ___ok = ___g <= ___l;                                                          \
		if (!___ok)                                                                        \
			fg_test_fail(__FILE__, __LINE__, "%s: got %.12g, expected <= %.12g", name, \
				     ___g, ___l);                                                  \
		___ok;                                                                             \
	})

/* the controller rounds S to 0 or T within 1e-9 (docs/shedding.md, B1) */
#define EPS    1e-9
#define BE     FG_TIER_BEST_EFFORT
#define BULK   FG_TIER_BULK
#define NORMAL FG_TIER_NORMAL
#define CRIT   FG_TIER_CRITICAL

static struct fg_shed_cfg defaults(void)
{
	struct fg_shed_cfg c;

	fg_shed_cfg_default(&c);
	return c;
}

/* interval 1 s, delay 3 s, ramp 12 s, decay 12 s: the defaults / 8, as a
 * test of the daemon would shorten them */
static struct fg_shed_cfg fast(void)
{
	struct fg_shed_cfg c = defaults();

	c.interval = 1;
	c.delay = 3;
	c.ramp = 12;
	c.decay = 12;
	return c;
}

static struct fg_shed mk(struct fg_shed_cfg c)
{
	struct fg_shed s;

	if (fg_shed_init(&s, &c))
		fg_test_fail(__FILE__, __LINE__, "fg_shed_init refused a valid cfg");
	return s;
}

static __u64 rng_state = 0x9e3779b97f4a7c15ull;

static double rnd01(void) /* xorshift64*, deterministic */
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (double)((rng_state * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

/* --- configuration ------------------------------------------------------ */

static void test_cfg_validation(void)
{
	static const struct {
		const char *what, *why;
		int field;
		double v;
	} bad[] = {
		{ "good == bad: no dead zone", "bad must be above good", 4, 0.7 },
		{ "bad below good", "bad must be above good", 4, 0.6 },
		{ "bad = 1: could never grow", "below 1", 4, 1.0 },
		{ "good = 0: could never decay", "good must be above 0", 3, 0.0 },
		{ "good NaN", "good must be", 3, NAN },
		{ "interval 0", "interval", 0, 0.0 },
		{ "interval NaN", "interval", 0, NAN },
		{ "delay negative", "delay", 1, -1.0 },
		{ "delay above a day", "delay", 1, 86401.0 },
		{ "ramp below the interval", "ramp", 2, 4.0 },
		{ "ramp infinite", "ramp", 2, INFINITY },
		{ "decay 0", "decay", 5, 0.0 },
		{ "orphan 0", "orphan", 6, 0.0 },
		{ "orphan above 1000 s", "orphan", 6, 2000.0 },
	};
	struct fg_shed_cfg c = defaults();
	struct fg_shed s, before;
	char why[FG_WHY_LEN];

	ASSERT_OK(fg_shed_cfg_check(&c, why), "defaults are valid");
	ASSERT_OK(fg_shed_cfg_check((struct fg_shed_cfg[]){ fast() }, NULL), "fast cfg is valid");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		double *f[] = {
			&c.interval, &c.delay, &c.ramp, &c.good, &c.bad, &c.decay, &c.orphan
		};

		c = defaults();
		*f[bad[i].field] = bad[i].v;
		why[0] = 0;
		ASSERT_EQ(fg_shed_cfg_check(&c, why), -EINVAL, bad[i].what);
		ASSERT_STR_CONTAINS(why, bad[i].why, bad[i].what);
		memset(&s, 0xab, sizeof(s));
		before = s;
		ASSERT_EQ(fg_shed_init(&s, &c), -EINVAL, bad[i].what);
		ASSERT_TRUE(!memcmp(&s, &before, sizeof(s)),
			    "a refused init leaves the state as it was");
	}
	c = defaults();
	c.tiers = 0;
	ASSERT_EQ(fg_shed_cfg_check(&c, why), -EINVAL, "no tiers");
	ASSERT_STR_CONTAINS(why, "critical is never shed", "no tiers: the reason");
	c.tiers = FG_TIER_BIT(CRIT) | FG_TIER_BIT(BE);
	ASSERT_EQ(fg_shed_cfg_check(&c, why), -EINVAL, "critical in the shed tiers");
	c.tiers = 1u << 7;
	ASSERT_EQ(fg_shed_cfg_check(&c, why), -EINVAL, "an unknown tier bit");
}

static void test_step_input(void)
{
	static const struct {
		double u, dt;
		const char *what;
	} bad[] = {
		{ -0.01, 8, "u below 0" },  { 1.01, 8, "u above 1" },
		{ NAN, 8, "u NaN" },	    { 0.9, 0, "dt 0" },
		{ 0.9, -1, "dt negative" }, { 0.9, INFINITY, "dt infinite" },
		{ 0.9, NAN, "dt NaN" },
	};
	struct fg_shed s = mk(defaults()), before;
	struct fg_shed_out o;

	ASSERT_OK(fg_shed_resume(&s, 1.5), "resume 1.5");
	before = s;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ASSERT_EQ(fg_shed_step(&s, bad[i].u, bad[i].dt, &o), -EINVAL, bad[i].what);
		ASSERT_TRUE(!memcmp(&s, &before, sizeof(s)), "a refused sample changes nothing");
	}
	ASSERT_EQ(fg_shed_lost(&s, 0, &o), -EINVAL, "lost with dt 0");
	ASSERT_EQ(fg_shed_resume(&s, 3.0001), -EINVAL, "resume above T");
	ASSERT_EQ(fg_shed_resume(&s, -0.5), -EINVAL, "resume below 0");
	ASSERT_EQ(fg_shed_resume(&s, NAN), -EINVAL, "resume NaN");
	ASSERT_TRUE(!memcmp(&s, &before, sizeof(s)), "refused resumes change nothing");
	ASSERT_OK(fg_shed_step(&s, 0, 8, &o), "u = 0 is a sample");
	ASSERT_OK(fg_shed_step(&s, 1, 8, &o), "u = 1 is a sample");
	ASSERT_EQ(fg_tier_parse("bulk", (int[]){ 0 }), 0, "tier name bulk");
	ASSERT_EQ(fg_tier_parse("Bulk", (int[]){ 0 }), -EINVAL, "tier names are exact");
}

/* --- onset: the delay, then growth in proportion to u - bad ------------ */

static void test_delay_then_growth(void)
{
	/* k_up = T / (ramp (1 - bad)) = 3 / (120 * 0.2) = 0.125 tiers/s per unit */
	static const struct {
		const char *what;
		double delay, u, dt;
		double expect[6]; /* S after samples 1..6 */
	} cases[] = {
		/* 8, 16, 24 <= 28: nothing; 32: 4 s past the delay, 0.125*0.15*4 */
		{ "defaults at 0.95", 28, 0.95, 8, { 0, 0, 0, 0.075, 0.225, 0.375 } },
		{ "defaults at 1.0", 28, 1.0, 8, { 0, 0, 0, 0.1, 0.3, 0.5 } },
		{ "defaults at 0.85", 28, 0.85, 8, { 0, 0, 0, 0.025, 0.075, 0.125 } },
		{ "delay 0", 0, 0.95, 8, { 0.15, 0.3, 0.45, 0.6, 0.75, 0.9 } },
		{ "delay one interval", 8, 0.95, 8, { 0, 0.15, 0.3, 0.45, 0.6, 0.75 } },
		{ "delay 30", 30, 0.95, 8, { 0, 0, 0, 0.0375, 0.1875, 0.3375 } },
		{ "u just above bad", 28, 0.8000001, 8, { 0, 0, 0, 5e-8, 1.5e-7, 2.5e-7 } },
		{ "u = bad is the dead zone", 28, 0.8, 8, { 0, 0, 0, 0, 0, 0 } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fg_shed_cfg c = defaults();
		struct fg_shed s;
		struct fg_shed_out o;

		c.delay = cases[i].delay;
		s = mk(c);
		for (int k = 0; k < 6; k++) {
			char name[96];

			snprintf(name, sizeof(name), "%s: S after sample %d", cases[i].what, k + 1);
			ASSERT_OK(fg_shed_step(&s, cases[i].u, cases[i].dt, &o), name);
			ASSERT_NEAR(o.amount, cases[i].expect[k], 1e-12, name);
			if (cases[i].expect[k] == 0 && cases[i].u > 0.8)
				ASSERT_EQ(o.phase, FG_SHED_PENDING, name);
			if (cases[i].expect[k] == 0)
				ASSERT_EQ(o.active, 0, name);
		}
	}
}

/* --- escalation through the tiers, lowest first ------------------------- */

static void check_tiers(const struct fg_shed_out *o, const char *what)
{
	for (int k = 0; k < FG_SHED_NKIND; k++)
		ASSERT_EQ(o->thr[CRIT][k], 0, "critical is never shed");
	/* a tier starts only when the one below is fully shed */
	if (o->thr[BE][FG_SHED_ANY] < FG_SHED_ONE)
		ASSERT_EQ(o->thr[BULK][FG_SHED_NEW], 0, what);
	if (o->thr[BULK][FG_SHED_ANY] < FG_SHED_ONE)
		ASSERT_EQ(o->thr[NORMAL][FG_SHED_NEW], 0, what);
	for (int t = NORMAL; t <= BE; t++) {
		ASSERT_GE(o->thr[t][FG_SHED_NEW], o->thr[t][FG_SHED_ANY],
			  "SYNs go before the rest");
		ASSERT_GE(o->thr[t][FG_SHED_ANY], o->thr[t][FG_SHED_EST],
			  "established TCP goes last");
		ASSERT_LE(o->thr[t][FG_SHED_NEW], FG_SHED_ONE, "threshold in range");
	}
}

static void test_tiers_fill_in_order(void)
{
	struct fg_shed s = mk(defaults());
	struct fg_shed_out o;
	int order[8], n = 0, samples = 0;
	double prev = 0;

	while (samples < 100) {
		ASSERT_OK(fg_shed_step(&s, 0.95, 8, &o), "sample");
		samples++;
		check_tiers(&o, "held at 0.95: lower tier full before the next starts");
		ASSERT_TRUE(o.amount >= prev, "held at 0.95 the amount never falls");
		ASSERT_EQ(o.left, 0, "nothing left while growing");
		prev = o.amount;
		for (int t = BE; t >= NORMAL; t--) {
			if (!(o.entered & FG_TIER_BIT(t)))
				continue;
			if (n < 8)
				order[n++] = t;
			if (t == BULK)
				ASSERT_EQ(o.thr[BE][FG_SHED_ANY], FG_SHED_ONE,
					  "bulk enters with best-effort full");
			if (t == NORMAL)
				ASSERT_EQ(o.thr[BULK][FG_SHED_ANY], FG_SHED_ONE,
					  "normal enters with bulk full");
		}
		if (o.amount == 3)
			break;
	}
	ASSERT_EQ(n, 3, "three tiers entered, each once");
	ASSERT_EQ(order[0], BE, "best-effort first");
	ASSERT_EQ(order[1], BULK, "then bulk");
	ASSERT_EQ(order[2], NORMAL, "then normal");
	/* full at 28 + 120 * 0.2 / 0.15 = 188 s: the sample at 192 s */
	ASSERT_EQ(samples, 24, "full shed at the first sample after 188 s");
	for (int t = NORMAL; t <= BE; t++)
		for (int k = 0; k < FG_SHED_NKIND; k++)
			ASSERT_EQ(o.thr[t][k], FG_SHED_ONE,
				  "full shed: every kind of every tier but critical");
	ASSERT_NEAR(o.frac[BE] + o.frac[BULK] + o.frac[NORMAL], 3, 0, "fractions at full");
	ASSERT_EQ(o.frac[CRIT], 0, "critical fraction");
}

/* Time from the onset of pressure to full shed: delay + ramp (1 - bad) / (u - bad). */
static void test_ramp_time(void)
{
	static const struct {
		const char *what;
		int fastcfg;
		double u, dt, t_full; /* first sample time with S == T */
	} cases[] = {
		{ "defaults at 1: 28 + 120 = 148 s, the sample at 152", 0, 1.0, 8, 152 },
		{ "defaults at 0.9: 28 + 240 = 268 s, the sample at 272", 0, 0.9, 8, 272 },
		{ "fast at 1: 3 + 12 = 15 s", 1, 1.0, 0.25, 15 },
		{ "fast at 1, 1 s samples", 1, 1.0, 1, 15 },
		{ "fast at 0.95: 3 + 16 = 19 s", 1, 0.95, 0.5, 19 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fg_shed s = mk(cases[i].fastcfg ? fast() : defaults());
		struct fg_shed_out o;
		double t = 0;

		do {
			fg_shed_step(&s, cases[i].u, cases[i].dt, &o);
			t += cases[i].dt;
		} while (o.amount < 3 && t < 10000);
		ASSERT_NEAR(t, cases[i].t_full, 1e-9, cases[i].what);
	}
}

/* --- decay: zero within decay * S / T ----------------------------------- */

static void test_decay_bounded(void)
{
	static const struct {
		const char *what;
		double from, u;
		int zero_at; /* ceil(from * decay / (T * interval)) samples */
	} cases[] = {
		{ "from full at 0.5: 120 s, 15 samples", 3, 0.5, 15 },
		{ "from full just below good: same time", 3, 0.6999, 15 },
		{ "from full at 0: same time", 3, 0, 15 },
		{ "from 1.3: ceil(6.5) = 7 samples", 1.3, 0.5, 7 },
		{ "from 0.2: one sample", 0.2, 0.5, 1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fg_shed s = mk(defaults());
		struct fg_shed_out o;
		int k = 0, left[4], nl = 0;

		ASSERT_OK(fg_shed_resume(&s, cases[i].from), "resume");
		while (k < 100) {
			double before = s.amount;

			fg_shed_step(&s, cases[i].u, 8, &o);
			k++;
			check_tiers(&o, "decaying: the order holds on the way down");
			ASSERT_DLE(o.amount, before, "decay never grows");
			ASSERT_NEAR(o.delta, -fmin(before, 0.2), 1e-12,
				    "decays 3 * 8 / 120 per sample");
			for (int t = NORMAL; t <= BE; t++)
				if ((o.left & FG_TIER_BIT(t)) && nl < 4)
					left[nl++] = t;
			if (o.amount == 0)
				break;
		}
		ASSERT_EQ(k, cases[i].zero_at, cases[i].what);
		ASSERT_EQ(o.active, 0, "nothing active at zero");
		ASSERT_EQ(o.phase, FG_SHED_IDLE, "idle at zero");
		if (cases[i].from == 3) {
			ASSERT_EQ(nl, 3, "each tier left once");
			ASSERT_EQ(left[0], NORMAL, "normal is released first");
			ASSERT_EQ(left[2], BE, "best-effort last");
		}
	}

	/* a lost signal decays the same way and resets the pressure count */
	struct fg_shed s = mk(defaults());
	struct fg_shed_out o;
	int k;

	for (k = 0; k < 3; k++)
		fg_shed_step(&s, 0.95, 8, &o);
	ASSERT_NEAR(s.pressure, 24, 0, "three samples of pressure");
	ASSERT_OK(fg_shed_lost(&s, 8, &o), "lost sample");
	ASSERT_EQ(o.phase, FG_SHED_NOSIGNAL, "phase no-signal");
	ASSERT_NEAR(s.pressure, 0, 0, "the pressure count starts again");
	fg_shed_resume(&s, 3);
	for (k = 1; k <= 15; k++)
		fg_shed_lost(&s, 8, &o);
	ASSERT_NEAR(o.amount, 0, 0, "a lost signal takes the host to zero in 120 s too");
}

/* --- anti-flapping ------------------------------------------------------ */

/*
 * The proven bound: |dS| <= k_up (u - bad) dt above bad, 0 in the dead zone,
 * k_down dt below good, dt <= 2 interval. For 0.82 at 8 s:
 * 3 * 0.02 * 8 / (120 * 0.2) = 0.02; for 0.78: 0.
 */
static void test_noise_alternation(void)
{
	static const struct {
		const char *what;
		double lo, hi, from;
		double up_bound, down_bound; /* per sample, by hand */
		int first_growth;	     /* 1-based sample of the first increase, 0 = never */
	} cases[] = {
		/* pressure only on the 0.82 samples (2, 4, 6, 8): 32 > 28 at sample 8 */
		{ "0.78/0.82 from idle", 0.78, 0.82, 0, 0.02, 0, 8 },
		{ "0.78/0.82 while shedding", 0.78, 0.82, 1.5, 0.02, 0, 8 },
		{ "0.68/0.72 around good", 0.68, 0.72, 1.5, 0, 0.2, 0 },
		/* across the whole dead zone: each good sample resets the count */
		{ "0.5/0.95 from idle", 0.5, 0.95, 0, 0, 0.2, 0 },
		{ "0.65/0.95 while shedding", 0.65, 0.95, 1.5, 0, 0.2, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fg_shed s = mk(defaults());
		struct fg_shed_out o;
		int first = 0, reversals = 0, last_sign = 0;

		fg_shed_resume(&s, cases[i].from);
		for (int k = 1; k <= 400; k++) {
			double u = k % 2 ? cases[i].lo : cases[i].hi;
			int sign;

			fg_shed_step(&s, u, 8, &o);
			if (u >= 0.7 && u <= 0.8)
				ASSERT_NEAR(o.delta, 0, 0, "a dead-zone sample changes nothing");
			ASSERT_DLE(o.delta, cases[i].up_bound + EPS, cases[i].what);
			ASSERT_DLE(-o.delta, cases[i].down_bound + EPS, cases[i].what);
			sign = o.delta > 0 ? 1 : o.delta < 0 ? -1 : 0;
			if (sign && last_sign && sign != last_sign)
				reversals++;
			if (sign)
				last_sign = sign;
			if (o.delta > 0 && !first)
				first = k;
		}
		ASSERT_EQ(reversals, 0, "the shed amount does not oscillate");
		ASSERT_EQ(first, cases[i].first_growth, cases[i].what);
	}
}

/* The bound under a random signal and jittered time steps. */
static void test_bound_random(void)
{
	struct fg_shed_cfg c = defaults();
	struct fg_shed s = mk(c);
	struct fg_shed_out o;
	double kmax = 3.0 / fmin(c.ramp, c.decay); /* T / min(ramp, decay), tiers/s */

	for (int k = 0; k < 20000; k++) {
		double u = rnd01(), dt = 0.01 + rnd01() * 3 * c.interval;
		double dte = fmin(dt, 2 * c.interval), lim;

		fg_shed_step(&s, u, dt, &o);
		if (u > c.bad)
			lim = 3.0 * (u - c.bad) / (c.ramp * (1 - c.bad)) * dte;
		else if (u < c.good)
			lim = 3.0 / c.decay * dte;
		else
			lim = 0;
		if (!ASSERT_DLE(fabs(o.delta), lim + EPS,
				"per-sample change within k(u) * min(dt, 2 interval)"))
			break;
		if (!ASSERT_DLE(fabs(o.delta), kmax * 2 * c.interval + EPS,
				"and within 2 T interval / min(ramp, decay)"))
			break;
		check_tiers(&o, "random signal: tier order");
	}
	/* one step 10 minutes late at u = 1 counts as 16 s: 0.125 * 0.2 * 16 */
	fg_shed_resume(&s, 0);
	s.pressure = c.delay + 16;
	fg_shed_step(&s, 1, 600, &o);
	ASSERT_NEAR(o.delta, 0.4, 1e-12, "a late sample counts as two intervals");
}

/* --- tiers in use, SYN split, resume ------------------------------------ */

static void test_tier_mask(void)
{
	struct fg_shed_cfg c = fast();
	struct fg_shed s;
	struct fg_shed_out o;
	double t = 0;

	c.tiers = FG_TIER_BIT(BE) | FG_TIER_BIT(NORMAL);
	s = mk(c);
	ASSERT_EQ(s.ntiers, 2, "two tiers in use");
	do {
		fg_shed_step(&s, 1, 0.25, &o);
		t += 0.25;
		ASSERT_EQ(o.thr[BULK][FG_SHED_NEW], 0, "a tier not in use is never shed");
		if (o.thr[BE][FG_SHED_ANY] < FG_SHED_ONE)
			ASSERT_EQ(o.thr[NORMAL][FG_SHED_NEW], 0, "normal waits for best-effort");
	} while (o.amount < 2 && t < 100);
	ASSERT_NEAR(t, 15, 1e-9, "the ramp spans the tiers in use: 3 + 12 s");
}

static void test_syn_split(void)
{
	static const struct {
		double amount;
		__u32 be[3], bulk[3]; /* ANY, NEW, EST */
	} cases[] = {
		{ 0.25, { FG_SHED_ONE / 4, FG_SHED_ONE / 2, 0 }, { 0, 0, 0 } },
		{ 0.5, { FG_SHED_ONE / 2, FG_SHED_ONE, 0 }, { 0, 0, 0 } },
		{ 0.75, { FG_SHED_ONE / 4 * 3, FG_SHED_ONE, FG_SHED_ONE / 2 }, { 0, 0, 0 } },
		{ 1.0, { FG_SHED_ONE, FG_SHED_ONE, FG_SHED_ONE }, { 0, 0, 0 } },
		{ 1.125,
		  { FG_SHED_ONE, FG_SHED_ONE, FG_SHED_ONE },
		  { FG_SHED_ONE / 8, FG_SHED_ONE / 4, 0 } },
	};
	struct fg_shed s = mk(defaults());
	struct fg_shed_out o;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char name[64];

		fg_shed_resume(&s, cases[i].amount);
		fg_shed_output(&s, &o);
		for (int k = 0; k < 3; k++) {
			snprintf(name, sizeof(name), "S = %g, best-effort kind %d", cases[i].amount,
				 k);
			ASSERT_EQ(o.thr[BE][k], cases[i].be[k], name);
			snprintf(name, sizeof(name), "S = %g, bulk kind %d", cases[i].amount, k);
			ASSERT_EQ(o.thr[BULK][k], cases[i].bulk[k], name);
			ASSERT_EQ(o.thr[NORMAL][k], 0, "normal untouched");
		}
	}
}

static void test_resume_events(void)
{
	struct fg_shed s = mk(defaults());
	struct fg_shed_out o;

	ASSERT_OK(fg_shed_resume(&s, 1.5), "resume 1.5");
	ASSERT_EQ(s.active, FG_TIER_BIT(BE) | FG_TIER_BIT(BULK), "resumed: two tiers active");
	ASSERT_EQ(s.phase, FG_SHED_HOLDING, "resumed: holding");
	fg_shed_step(&s, 0.75, 8, &o);
	ASSERT_EQ(o.entered | o.left, 0, "no events for tiers already active");
	ASSERT_NEAR(o.amount, 1.5, 0, "dead zone holds");
	for (int k = 0; k < 3; k++)
		fg_shed_step(&s, 0.95, 8, &o);
	ASSERT_NEAR(o.amount, 1.5, 0, "after a resume the delay applies again");
	ASSERT_EQ(o.phase, FG_SHED_PENDING, "pending");
}

/* --- dead-daemon decay, as the program computes it ---------------------- */

static void test_dead_daemon_decay(void)
{
	struct fg_shed s = mk(defaults());
	__u64 now = 5000000000ull, end, hor;
	__u32 h, prev = ~0u;

	fg_shed_deadline(&s, now, &end, &h);
	/* 2^34 ns = 17.2 s < 32 s <= 2^35 ns = 34.4 s */
	ASSERT_EQ(h, 35, "horizon: 2^35 ns");
	hor = 1ull << h;
	ASSERT_EQ(end, now + 16000000000ull + hor, "end = now + 2 intervals + horizon");
	ASSERT_EQ(fg_shed_decayed(FG_SHED_ONE, end, h, now), FG_SHED_ONE,
		  "as written at the write");
	ASSERT_EQ(fg_shed_decayed(FG_SHED_ONE, end, h, end - hor), FG_SHED_ONE,
		  "as written for the hold");
	ASSERT_EQ(fg_shed_decayed(FG_SHED_ONE, end, h, end), 0, "zero at the end");
	ASSERT_EQ(fg_shed_decayed(FG_SHED_ONE, end, h, end + 1), 0, "zero after");
	ASSERT_EQ(fg_shed_decayed(FG_SHED_ONE, end, h, ~0ull), 0, "zero much later");
	ASSERT_NEAR(fg_shed_decayed(FG_SHED_ONE, end, h, end - hor / 2), FG_SHED_ONE / 2, 1,
		    "half way: half");
	ASSERT_EQ(fg_shed_decayed(12345, end, 0, now), 0, "a corrupt horizon fails open");
	ASSERT_EQ(fg_shed_decayed(12345, end, 41, now), 0, "a horizon above 2^40 fails open");
	for (__u64 t = end - hor - 1000000; t <= end + 1000000; t += 7777777) {
		__u32 e = fg_shed_decayed(FG_SHED_ONE, end, h, t);
		double lin = t >= end ? 0 : fmin(1.0, (double)(end - t) / hor) * FG_SHED_ONE;

		if (!ASSERT_LE(e, prev, "never rises with time"))
			break;
		/* the 2^10 ns grain: one step is FG_SHED_ONE * 2^10 / 2^35 = 64 */
		if (!ASSERT_NEAR(e, lin, 65, "linear to zero"))
			break;
		prev = e;
	}
	/* fast configuration: hold 2 s, orphan 1 s -> 2^30 ns */
	struct fg_shed_cfg c = fast();

	c.orphan = 1;
	s = mk(c);
	fg_shed_deadline(&s, 0, &end, &h);
	ASSERT_EQ(h, 30, "1 s rounds up to 2^30 ns");
	ASSERT_EQ(end, 2000000000ull + (1ull << 30),
		  "dead daemon: zero 3.07 s after the last write");
}

/* --- reserved capacity pools -------------------------------------------- */

#define NS     1000000000ull
#define TU(ns) ((__u64)(ns) << FG_TU_SHIFT)

static void test_pool_limits(void)
{
	struct fg_limit pool = { .inc = FG_TU_PER_SEC / 10000,
				 .tau = FG_TU_PER_SEC / 10000 * 1000 };
	struct fg_pool l, before;
	char why[FG_WHY_LEN];

	ASSERT_OK(fg_pool_limits(&pool, 20, &l, why), "10k/s, burst 1000, 20%");
	ASSERT_EQ(l.inc, 6400000, "inc: 1/10000 s in 1/64 ns");
	ASSERT_EQ(l.tau, 6400000000ull, "tau: 1000 * inc");
	ASSERT_EQ(l.tau_low, 5120000000ull, "tau_low: 800 * inc");
	ASSERT_EQ(l.cap.inc, 8000000, "cap: 8000/s");
	ASSERT_EQ(l.cap.tau, 6400000000ull, "cap burst: 800 at 8000/s");
	ASSERT_OK(fg_pool_limits(&pool, 0, &l, why), "no reserve");
	ASSERT_EQ(l.tau_low, l.tau, "no reserve: one tolerance");
	ASSERT_EQ(l.cap.inc, 0, "no reserve: no cap");

	static const struct {
		double pct;
		__u64 burst;
		const char *what, *why;
	} bad[] = {
		{ 100, 1000, "reserve 100%", "below 100%" },
		{ -1, 1000, "reserve negative", "at least 0%" },
		{ NAN, 1000, "reserve NaN", "reserve" },
		{ 20, 1, "burst 1 with 20%: 0.8 of a packet left", "less than one unit" },
		{ 0, 0, "no burst", "needs a rate and a burst" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fg_limit p = { .inc = pool.inc, .tau = pool.inc * bad[i].burst };

		memset(&l, 0x5a, sizeof(l));
		before = l;
		ASSERT_EQ(fg_pool_limits(&p, bad[i].pct, &l, why), -EINVAL, bad[i].what);
		ASSERT_STR_CONTAINS(why, bad[i].why, bad[i].what);
		ASSERT_TRUE(!memcmp(&l, &before, sizeof(l)), "a refused pool writes nothing");
	}
}

/*
 * The proposed program logic for a rule in a pool, on fg_gcra.h: critical
 * spends the shared tat with the whole tolerance; the other tiers pass the
 * cap first (so a flood's refusals there write nothing), then the shared
 * tat with tau_low, and give the cap's token back if the pool refuses.
 */
struct pool_sim {
	struct fg_pool l;
	int low, cap; /* mechanisms on: reduced tolerance, rate cap */
	__u64 tat, cap_tat;
};

static int pool_admit(struct pool_sim *p, int critical, __u64 now)
{
	if (critical)
		return fg_gcra_spend(&p->tat, now, p->l.inc, p->l.tau) == 1;
	if (p->cap && fg_gcra_spend(&p->cap_tat, now, p->l.cap.inc, p->l.cap.tau) != 1)
		return 0;
	if (fg_gcra_spend(&p->tat, now, p->l.inc, p->low ? p->l.tau_low : p->l.tau) != 1) {
		if (p->cap)
			__sync_fetch_and_add(&p->cap_tat, -p->l.cap.inc);
		return 0;
	}
	return 1;
}

struct stream {
	double rate; /* per second; 0 = silent */
	int poisson;
	double next; /* ns */
	long offered, admitted;
};

static void stream_advance(struct stream *s)
{
	if (s->poisson)
		s->next += -log(1 - rnd01()) / s->rate * 1e9;
	else
		s->next += 1e9 / s->rate;
}

/* 10 s of two streams merged in time order, starting with full buckets. */
static void pool_run(struct pool_sim *p, struct stream *crit, struct stream *low, double secs)
{
	double t0 = 1e9, t1 = t0 + secs * 1e9;

	crit->next = low->next = t0;
	crit->offered = crit->admitted = low->offered = low->admitted = 0;
	while (1) {
		double tc = crit->rate ? crit->next : INFINITY,
		       tl = low->rate ? low->next : INFINITY;
		struct stream *s = tc <= tl ? crit : low;

		if (s->next >= t1 || (s == crit ? tc : tl) == INFINITY)
			break;
		s->offered++;
		s->admitted += pool_admit(p, s == crit, TU((__u64)s->next));
		stream_advance(s);
	}
}

static void test_pool_reserve(void)
{
	struct fg_limit pool = { .inc = FG_TU_PER_SEC / 10000,
				 .tau = FG_TU_PER_SEC / 10000 * 1000 };
	static const struct {
		const char *what;
		int low, cap, poisson;
		double crit_rate, low_rate;
		int crit_loses;		 /* 0: exactly nothing, 1: something */
		double low_min, low_max; /* admitted non-critical over 10 s */
	} cases[] = {
		/* the figure: cap 8000/s * 10 s + burst 800 = 80,800 */
		{ "reserve + cap, 30k/s flood, critical 1k/s", 1, 1, 0, 1000, 30000, 0, 79900,
		  80801 },
		{ "the same, Poisson arrivals", 1, 1, 1, 1000, 30000, 0, 79900, 80801 },
		{ "reserve + cap, critical idle", 1, 1, 0, 0, 30000, 0, 79900, 80801 },
		/* what critical leaves: 100,000 + 1000 - critical's ~49,500 */
		{ "reserve + cap, critical at 5k/s (Poisson)", 1, 1, 1, 5000, 30000, 0, 50000,
		  52000 },
		/* controls: what each mechanism alone does */
		{ "reduced tolerance alone: 90% (the rate is not bounded)", 1, 0, 0, 1000, 30000, 0,
		  90000, 91000 },
		{ "reduced tolerance alone, critical idle: the whole pool", 1, 0, 0, 0, 30000, 0,
		  100000, 101000 },
		{ "cap alone, critical at 5k/s: critical loses", 0, 1, 1, 5000, 30000, 1, 0,
		  80801 },
	};
	char why[FG_WHY_LEN];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pool_sim p = { .low = cases[i].low, .cap = cases[i].cap };
		struct stream crit = { .rate = cases[i].crit_rate, .poisson = cases[i].poisson };
		struct stream low = { .rate = cases[i].low_rate, .poisson = cases[i].poisson };
		char name[160];

		ASSERT_OK(fg_pool_limits(&pool, 20, &p.l, why), why);
		pool_run(&p, &crit, &low, 10);
		snprintf(name, sizeof(name), "%s: critical lost %ld of %ld", cases[i].what,
			 crit.offered - crit.admitted, crit.offered);
		if (cases[i].crit_loses)
			ASSERT_GE(crit.offered - crit.admitted, 1000, name);
		else
			ASSERT_EQ(crit.admitted, crit.offered, name);
		snprintf(name, sizeof(name), "%s: non-critical admitted (of %ld)", cases[i].what,
			 low.offered);
		ASSERT_GE(low.admitted, (long)cases[i].low_min, name);
		ASSERT_LE(low.admitted, (long)cases[i].low_max, name);
		/* the pool itself: rate * 10 s + burst, whoever spends it */
		ASSERT_LE(low.admitted + crit.admitted, 101001, "the pool is never exceeded");
		/* over 10 s the pool can deliver rate * 10 s + burst = 101,000 */
		printf("  %-56s non-critical %6ld = %5.1f%% of the pool's 101,000, critical %ld/%ld\n",
		       cases[i].what, low.admitted, low.admitted / 1010.0, crit.admitted,
		       crit.offered);
	}
}

/* Critical may spend the reserve itself: the worst case is a pool held at
 * the reserve by a flood (tolerance alone, no cap), and a critical burst. */
static void test_pool_critical_burst(void)
{
	struct fg_limit pool = { .inc = FG_TU_PER_SEC / 10000,
				 .tau = FG_TU_PER_SEC / 10000 * 1000 };
	struct pool_sim p = { .low = 1, .cap = 0 };
	__u64 t = NS;
	int got = 0;

	fg_pool_limits(&pool, 20, &p.l, NULL);
	/* a second of flood at 30k/s drains the pool down to the reserve */
	for (int i = 0; i < 30000; i++, t += NS / 30000)
		pool_admit(&p, 0, TU(t));
	for (int i = 0; i < 3; i++) /* what refilled since the last arrival */
		got += pool_admit(&p, 0, TU(t));
	ASSERT_LE(got, 1, "the flood is held at the reserve");
	got = 0;
	for (int i = 0; i < 199; i++)
		got += pool_admit(&p, 1, TU(t));
	ASSERT_EQ(got, 199, "a critical burst of reserve - 1 at one instant passes whole");
	for (int i = 0; i < 100; i++)
		got += pool_admit(&p, 1, TU(t));
	ASSERT_EQ(got, 200, "and the reserve, 200, is all critical's");
}

int main(int argc, char **argv)
{
	fg_test_init(argc, argv);
	FG_RUN_EACH(test_cfg_validation, test_step_input, test_delay_then_growth,
		    test_tiers_fill_in_order, test_ramp_time, test_decay_bounded,
		    test_noise_alternation, test_bound_random, test_tier_mask, test_syn_split,
		    test_resume_events, test_dead_daemon_decay, test_pool_limits, test_pool_reserve,
		    test_pool_critical_burst);
	return fg_test_summary();
}
