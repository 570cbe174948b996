// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* New-key admission arithmetic; see admission.h. */
#include <math.h>

#include "policy/admission.h"
#include "policy/policy.h"

/* Longest refill from empty (burst / rate) of any per-source bucket, in s. */
static long double longest_refill(const struct fg_policy *pol)
{
	long double t_refill = 0;

	for (__u32 i = 0; i < pol->nrules && i < FG_MAX_RULES; i++) {
		long double t;

		if (!pol->rules[i].src.inc)
			continue;
		t = (long double)pol->rules[i].src.tau / FG_TU_PER_SEC;
		if (t > t_refill)
			t_refill = t;
	}
	return t_refill > 0 ? t_refill : 1;
}

double fg_policy_set_admission(struct fg_config *cfg)
{
	struct fg_policy *pol = &cfg->pol;
	long double t_refill, r_ins, inc, burst, tau;

	if (cfg->admission.set) {
		r_ins = cfg->admission.rate;
		burst = cfg->admission.burst;
	} else {
		/* the whole table turns over at most once per 2 * T_refill (floodgate.h) */
		t_refill = longest_refill(pol);
		r_ins = (long double)cfg->max_sources / (2 * t_refill);
		burst = r_ins / 10 > 64 ? floorl(r_ins / 10) : 64;
	}
	if (r_ins < 1e-9L)
		r_ins = 1e-9L;
	inc = roundl((long double)FG_TU_PER_SEC / r_ins);
	if (inc < 1)
		inc = 1;
	if (inc >= (long double)FG_MAX_TAU)
		inc = (long double)(FG_MAX_TAU - 1);
	tau = inc * burst;
	if (tau >= (long double)FG_MAX_TAU)
		tau = (long double)(FG_MAX_TAU - 1);
	pol->ins.inc = (__u64)inc;
	pol->ins.tau = (__u64)tau;
	return (double)r_ins;
}
