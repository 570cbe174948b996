// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Policy compiler, load shedding (docs/shedding.md): the top-level pools:
 * list and shedding: section, and a rule's tier: and pool:. Pools compile
 * through fg_limit_compile and fg_pool_limits, the shedding section is
 * checked by fg_shed_cfg_check and its signal parsed by fg_signal_parse, so
 * the errors are theirs, placed here.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy_int.h"
#include "lib/units.h"
#include "lib/sysutil.h"

static const char *const pool_keys[] = { "name", "rate", "burst", "reserve", "shedding" };
enum {
	PK_NAME,
	PK_RATE,
	PK_BURST,
	PK_RESERVE,
	PK_SHEDDING
};

static const char *const shed_keys[] = {
	"signal", "interval", "delay", "ramp", "decay", "good", "bad", "orphan", "mode",
};
enum {
	SK_SIGNAL,
	SK_INTERVAL,
	SK_DELAY,
	SK_RAMP,
	SK_DECAY,
	SK_GOOD,
	SK_BAD,
	SK_ORPHAN,
	SK_MODE
};

static int valid_pool_name(const char *s)
{
	size_t l = strlen(s);

	return l && l < FG_NAME_LEN &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == l;
}

/* "20%" or "20" or "12.5%": a percentage in [0, 100), digits[.digits] only. */
static int parse_pct(const char *s, double *out)
{
	size_t i = strspn(s, "0123456789"), l = strlen(s);
	char buf[32];

	if (!i || l >= sizeof(buf))
		return -EINVAL;
	if (s[i] == '.') {
		size_t j = strspn(s + i + 1, "0123456789");

		if (!j)
			return -EINVAL;
		i += 1 + j;
	}
	if (s[i] == '%')
		i++;
	if (i != l)
		return -EINVAL;
	memcpy(buf, s, l + 1);
	*out = strtod(buf, NULL);
	return 0;
}

/* One pool into cfg->pools[idx] and pol.pools[idx]. */
static int parse_pool(struct pol_ctx *c, yaml_node_t *n, int idx)
{
	struct fg_config *cfg = c->cfg;
	struct fg_pool_src *ps = &cfg->pools[idx];
	struct fg_pool *pl = &cfg->pol.pools[idx];
	struct pol_keys ks = KEYS("pool", pool_keys);
	yaml_node_t *const *val = ks.val;
	long double rate, burst;
	struct fg_limit lim;
	const char *s;
	char why[FG_WHY_LEN];
	int bytes, on = 1, err;

	err = pol_read_map(c, n, "pool", "{name: syn, rate: 10000/s, burst: 1000, reserve: 20%}",
			   &ks);
	if (err)
		return err;
	err = pol_need_scalar(c, n, val[PK_NAME], "name", "pool without a name", &s);
	if (err)
		return err;
	if (!valid_pool_name(s))
		return FAIL(c, val[PK_NAME],
			    "bad pool name \"%.64s\" (1..%d characters of A-Z a-z 0-9 _ . -)", s,
			    FG_NAME_LEN - 1);
	for (int i = 0; i < idx; i++)
		if (!strcmp(cfg->pools[i].name, s))
			return FAIL(c, val[PK_NAME],
				    "duplicate pool name \"%s\" (first at line %d)", s,
				    cfg->pools[i].line);
	if (!val[PK_RATE])
		return FAIL(c, n, "pool %s: missing rate (e.g. rate: 10000/s)", s);
	if (!val[PK_BURST])
		return FAIL(c, n, "pool %s: missing burst (e.g. burst: 1000)", s);
	memcpy(ps->name, s, strlen(s) + 1);
	memcpy(cfg->pol.pool_names[idx], s, strlen(s) + 1);
	ps->line = (int)n->start_mark.line + 1;
	err = pol_parse_rate_burst(c, val[PK_RATE], val[PK_BURST], &rate, &burst, &bytes);
	if (!err)
		err = pol_compile_limit(c, val[PK_RATE], val[PK_BURST], rate, burst, bytes, &lim);
	if (err)
		return err;
	ps->reserve = 0;
	if (val[PK_RESERVE]) {
		err = pol_scalar(c, val[PK_RESERVE], "reserve", &s);
		if (err)
			return err;
		if (parse_pct(s, &ps->reserve))
			return FAIL(c, val[PK_RESERVE],
				    "pool %s: bad reserve \"%.64s\" (a percentage like 20%%)",
				    ps->name, s);
	}
	if (fg_pool_limits(&lim, ps->reserve, pl, why))
		return FAIL(c, val[PK_RESERVE] ? val[PK_RESERVE] : n, "pool %s: %s", ps->name, why);
	if (val[PK_SHEDDING] && (err = pol_parse_bool(c, val[PK_SHEDDING], "shedding", &on)))
		return err;
	ps->lim = (struct fg_limit_src){ .set = 1, .rate = (double)rate, .burst = (double)burst };
	ps->bytes = bytes;
	ps->noshed = !on;
	pl->id = (__u16)idx; /* until the apply keeps the id by name (apply.c) */
	pl->cost = bytes ? FG_COST_BYTES : FG_COST_PKTS;
	pl->flags = on ? 0 : FG_POOL_NOSHED;
	return 0;
}

static int pool_item(struct pol_ctx *c, yaml_node_t *e, int idx, void *arg)
{
	(void)arg;
	return parse_pool(c, e, idx);
}

int pol_parse_pools(struct pol_ctx *c, yaml_node_t *n)
{
	int count, err = pol_each_item(c, n, "pools", FG_MAX_POOLS, "", pool_item, NULL, &count);

	if (!err)
		c->cfg->pol.npools = (__u32)count;
	return err;
}

/* A duration in seconds, > 0 and at most a day. */
static int parse_secs(struct pol_ctx *c, yaml_node_t *n, const char *what, double *out)
{
	__u64 ns;
	int err = pol_parse_duration_in(c, n, "shedding: ", what, "e.g. 8s, 500ms or 2m",
					POL_DUR_NONZERO, 0, 86400ull * 1000000000ull,
					"longer than a day", &ns);

	if (!err)
		*out = (double)ns / 1e9;
	return err;
}

/* A utilization in [0, 1], as 0.8 or 80%. */
static int parse_util(struct pol_ctx *c, yaml_node_t *n, const char *what, double *out)
{
	const char *s;
	double v;
	int err = pol_scalar(c, n, what, &s);

	if (err)
		return err;
	if (parse_pct(s, &v))
		return FAIL(c, n, "shedding: %s: bad utilization \"%.64s\" (e.g. 0.8 or 80%%)",
			    what, s);
	if (strchr(s, '%'))
		v /= 100;
	if (!(v >= 0 && v <= 1))
		return FAIL(c, n, "shedding: %s: %s is outside 0..1 (0%%..100%%)", what, s);
	*out = v;
	return 0;
}

int pol_parse_shedding(struct pol_ctx *c, yaml_node_t *n)
{
	static const struct {
		int key;
		const char *name;
		size_t off;
		int util;
	} nums[] = {
		{ SK_INTERVAL, "interval", offsetof(struct fg_shed_cfg, interval), 0 },
		{ SK_DELAY, "delay", offsetof(struct fg_shed_cfg, delay), 0 },
		{ SK_RAMP, "ramp", offsetof(struct fg_shed_cfg, ramp), 0 },
		{ SK_DECAY, "decay", offsetof(struct fg_shed_cfg, decay), 0 },
		{ SK_ORPHAN, "orphan", offsetof(struct fg_shed_cfg, orphan), 0 },
		{ SK_GOOD, "good", offsetof(struct fg_shed_cfg, good), 1 },
		{ SK_BAD, "bad", offsetof(struct fg_shed_cfg, bad), 1 },
	};
	struct fg_config *cfg = c->cfg;
	struct pol_keys ks = KEYS("shedding", shed_keys);
	yaml_node_t *const *val = ks.val;
	const char *s;
	char why[FG_WHY_LEN];
	int err;

	err = pol_read_map(c, n, "shedding", "{signal: cpu, interval: 8s, delay: 28s, ramp: 120s}",
			   &ks);
	if (err)
		return err;
	err = pol_need_scalar(
		c, n, val[SK_SIGNAL], "signal",
		"shedding: missing signal (cpu, psi, psi:PATH, accept_queue:PORT or file:PATH)",
		&s);
	if (err)
		return err;
	if (fg_signal_parse(s, &cfg->shed_signal, why))
		return FAIL(c, val[SK_SIGNAL], "shedding: signal: %s", why);
	fg_shed_cfg_default(&cfg->shed);
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		yaml_node_t *v = val[nums[i].key];
		double *dst = (double *)((char *)&cfg->shed + nums[i].off);

		if (v && (err = nums[i].util ? parse_util(c, v, nums[i].name, dst) :
					       parse_secs(c, v, nums[i].name, dst)))
			return err;
	}
	cfg->shed_mode = FG_MODE_ENFORCE;
	if (val[SK_MODE] && (err = ENUM(c, val[SK_MODE], "mode", fg_mode_names, &cfg->shed_mode)))
		return err;
	cfg->has_shedding = 1;
	c->shed_sec = n;
	return 0;
}

int pol_parse_rule_shed(struct pol_ctx *c, yaml_node_t *tier_n, yaml_node_t *pool_n, int *tier,
			int *pool)
{
	const struct fg_config *cfg = c->cfg;
	const char *s;
	int err;

	*tier = FG_TIER_CRITICAL;
	*pool = FG_POOL_NONE;
	if (tier_n) {
		err = pol_scalar(c, tier_n, "tier", &s);
		if (err)
			return err;
		if (fg_tier_parse(s, tier))
			return FAIL(c, tier_n,
				    "bad tier \"%.64s\" (critical, normal, bulk or best-effort)",
				    s);
	}
	if (pool_n) {
		err = pol_scalar(c, pool_n, "pool", &s);
		if (err)
			return err;
		for (__u32 i = 0; i < cfg->pol.npools; i++)
			if (!strcmp(cfg->pools[i].name, s)) {
				*pool = (int)i + 1;
				return 0;
			}
		if (!cfg->pol.npools)
			return FAIL(c, pool_n, "no pool \"%.64s\": the policy has no pools: list",
				    s);
		return FAIL(c, pool_n, "no pool \"%.64s\" in pools:", s);
	}
	return 0;
}

int pol_shed_check(struct pol_ctx *c)
{
	struct fg_config *cfg = c->cfg;
	__u32 used = 0;
	char why[FG_WHY_LEN];

	for (__u32 r = 0; r < cfg->pol.nrules && r < FG_MAX_RULES; r++)
		if (cfg->pol.rules[r].tier != FG_TIER_CRITICAL)
			used |= FG_TIER_BIT(cfg->pol.rules[r].tier);
	if (!cfg->has_shedding)
		return 0;
	if (!used)
		return FAIL(c, c->shed_sec,
			    "shedding: no rule has a tier it could shed "
			    "(tier: normal, bulk or best-effort on a rule)");
	cfg->shed.tiers = used;
	if (fg_shed_cfg_check(&cfg->shed, why))
		return FAIL(c, c->shed_sec, "shedding: %s", why);
	return 0;
}
