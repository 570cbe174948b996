// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The policy's fleet-wide limits (docs/fleet.md section 6): the top-level
 * fleet: section (Redis, node, lease timing) into cfg->fleet, and a rule's
 * fleet: limit into cfg->fleet_rules[]. Every error has its place; the
 * lease engine (fleet.c) then validates the result as the daemon will.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "policy/policy_int.h"
#include "lib/units.h"
#include "lib/sysutil.h"

_Static_assert((int)FG_LOSS_LOCAL == (int)FG_FLEET_LOSS_LOCAL &&
		       (int)FG_LOSS_OPEN == (int)FG_FLEET_LOSS_OPEN &&
		       (int)FG_LOSS_CLOSED == (int)FG_FLEET_LOSS_CLOSED,
	       "the engine's on_loss is the ABI's");

const char *const fg_on_loss_names[3] = { "local", "open", "closed" };

/* What the engine accepts (fg_fleet_add_rule). */
#define FLEET_MIN_RATE 1e-3
#define FLEET_MAX      1e15

static const char *const fleet_keys[] = {
	"redis", "user", "password", "db", "node", "prefix", "lease_interval", "deadline", "lease",
};
enum {
	FK_REDIS,
	FK_USER,
	FK_PASSWORD,
	FK_DB,
	FK_NODE,
	FK_PREFIX,
	FK_INTERVAL,
	FK_DEADLINE,
	FK_LEASE
};

static int valid_word(const char *s)
{
	return *s &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") ==
		       strlen(s);
}

/* node: and prefix: are parts of Redis keys and values. */
static int parse_word(struct pol_ctx *c, yaml_node_t *n, const char *what, char *out, size_t len)
{
	const char *s;
	int err = pol_scalar(c, n, what, &s);

	if (err)
		return err;
	if (!valid_word(s) || strlen(s) >= len)
		return FAIL(c, n, "fleet: %s \"%.64s\": 1..%zu characters of A-Z a-z 0-9 _ . -",
			    what, s, len - 1);
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

/* A duration in whole milliseconds, lo..hi. */
static int parse_ms(struct pol_ctx *c, yaml_node_t *n, const char *what, __u32 lo, __u32 hi,
		    __u32 *out)
{
	const char *s;
	__u64 ns;
	int err = pol_parse_duration(c, n, "fleet: ", what, "e.g. 200ms or 1s", 0, &s, &ns);

	if (err)
		return err;
	if (ns % 1000000)
		return FAIL(c, n, "fleet: %s: %s is not a whole number of milliseconds", what, s);
	if (ns / 1000000 < lo || ns / 1000000 > hi)
		return FAIL(c, n, "fleet: %s: %s is out of range (%u ms .. %u ms)", what, s, lo,
			    hi);
	*out = (__u32)(ns / 1000000);
	return 0;
}

/* redis:, user:, password: and db: into fc->redis (each key overrides the URL's). */
static int parse_redis(struct pol_ctx *c, yaml_node_t *const *val, struct fg_fleet_conf *fc)
{
	char why[FG_WHY_LEN];
	const char *s;
	__u64 db;
	int err;

	err = pol_scalar(c, val[FK_REDIS], "redis", &s);
	if (err)
		return err;
	if (fg_redis_url_parse(s, &fc->redis, why))
		return FAIL(c, val[FK_REDIS], "fleet: redis: %s", why);
	if (val[FK_USER]) {
		err = pol_scalar(c, val[FK_USER], "user", &s);
		if (err)
			return err;
		if (strlen(s) >= sizeof(fc->redis.user) || !fg_redis_valid_user(s))
			return FAIL(c, val[FK_USER],
				    "fleet: user (a Redis ACL user) must be 1..%zu printable "
				    "characters without blanks",
				    sizeof(fc->redis.user) - 1);
		memcpy(fc->redis.user, s, strlen(s) + 1);
	}
	if (val[FK_PASSWORD]) {
		err = pol_scalar(c, val[FK_PASSWORD], "password", &s);
		if (err)
			return err;
		if (!*s || strlen(s) >= sizeof(fc->redis.password))
			return FAIL(c, val[FK_PASSWORD],
				    "fleet: password must be 1..%zu characters",
				    sizeof(fc->redis.password) - 1);
		memcpy(fc->redis.password, s, strlen(s) + 1);
	}
	if (val[FK_DB]) {
		err = pol_parse_uint(c, val[FK_DB], "db", 0, FG_REDIS_MAX_DB, &db);
		if (err)
			return err;
		fc->redis.db = (int)db;
	}
	return 0;
}

/* The timing: interval, deadline < interval, interval + deadline + margin < lease. */
static int parse_timing(struct pol_ctx *c, yaml_node_t *n, yaml_node_t *const *val,
			struct fg_fleet_conf *fc)
{
	__u32 margin = (__u32)(FG_FLEET_LEASE_MARGIN_NS / 1000000);
	int err;

	fc->interval_ms = FG_FLEET_INTERVAL_MS;
	fc->degraded_min_ms = FG_FLEET_DEGRADED_MIN_MS;
	fc->deadline_ms = FG_FLEET_DEADLINE_MS;
	if (val[FK_INTERVAL] &&
	    (err = parse_ms(c, val[FK_INTERVAL], "lease_interval", FG_FLEET_MIN_INTERVAL_MS,
			    FG_FLEET_MAX_INTERVAL_MS, &fc->interval_ms)))
		return err;
	if (val[FK_DEADLINE] && (err = parse_ms(c, val[FK_DEADLINE], "deadline", 1,
						FG_FLEET_MAX_INTERVAL_MS, &fc->deadline_ms)))
		return err;
	fc->lease_ms = 2 * fc->interval_ms;
	if (val[FK_LEASE] && (err = parse_ms(c, val[FK_LEASE], "lease", 1,
					     10 * FG_FLEET_MAX_INTERVAL_MS, &fc->lease_ms)))
		return err;
	if (fc->deadline_ms >= fc->interval_ms)
		return FAIL(c, val[FK_DEADLINE] ? val[FK_DEADLINE] : n,
			    "fleet: deadline %u ms must be shorter than lease_interval (%u ms)",
			    fc->deadline_ms, fc->interval_ms);
	if (fc->lease_ms <= fc->interval_ms + fc->deadline_ms + margin)
		return FAIL(
			c, val[FK_LEASE] ? val[FK_LEASE] : n,
			"fleet: lease %u ms must exceed lease_interval + deadline + %u ms (%u ms), "
			"or a lease runs out before its renewal",
			fc->lease_ms, margin, fc->interval_ms + fc->deadline_ms + margin);
	if (fc->lease_ms > 10 * fc->interval_ms)
		return FAIL(
			c, val[FK_LEASE] ? val[FK_LEASE] : n,
			"fleet: lease %u ms is more than 10 lease intervals (%u ms): the outstanding bound grows with it",
			fc->lease_ms, 10 * fc->interval_ms);
	return 0;
}

int pol_parse_fleet(struct pol_ctx *c, yaml_node_t *n)
{
	struct pol_keys ks = KEYS("fleet", fleet_keys);
	struct fg_fleet_conf *fc = &c->cfg->fleet;
	yaml_node_t *const *val = ks.val;
	int err;

	err = pol_read_map(c, n, "fleet", "{redis: redis://10.0.0.5:6379, node: web-17}", &ks);
	if (err)
		return err;
	if (!val[FK_REDIS])
		return FAIL(
			c, n,
			"fleet: missing redis (e.g. redis: redis://10.0.0.5:6379 or unix:/run/redis/redis.sock)");
	if ((err = parse_redis(c, val, fc)))
		return err;
	if (val[FK_NODE]) {
		err = parse_word(c, val[FK_NODE], "node", fc->node, sizeof(fc->node));
		if (err)
			return err;
	} else {
		char host[256] = "";

		if (gethostname(host, sizeof(host) - 1))
			return FAIL(c, n, "fleet: no node: and gethostname failed: %s",
				    strerror(errno));
		if (!valid_word(host) || strlen(host) >= sizeof(fc->node))
			return FAIL(c, n,
				    "fleet: the host name \"%.64s\" is no valid node name "
				    "(1..%zu characters of A-Z a-z 0-9 _ . -): set node:",
				    host, sizeof(fc->node) - 1);
		memcpy(fc->node, host, strlen(host) + 1);
	}
	strcpy(fc->prefix, "floodgate");
	if (val[FK_PREFIX] &&
	    (err = parse_word(c, val[FK_PREFIX], "prefix", fc->prefix, sizeof(fc->prefix))))
		return err;
	if ((err = parse_timing(c, n, val, fc)))
		return err;
	c->cfg->has_fleet = 1;
	c->fleet_sec = n;
	return 0;
}

/* ---- a rule's fleet: limit --------------------------------------------------- */

static const char *const fleet_rule_keys[] = {
	"rate", "burst", "on_loss", "local_rate", "local_burst",
};
enum {
	FR_RATE,
	FR_BURST,
	FR_ON_LOSS,
	FR_LOCAL_RATE,
	FR_LOCAL_BURST
};

/* local_rate: (a rate) or local_burst: (a burst) into *v: in the fleet limit's unit (bytes),
 * at most the fleet's own figure max (above: which one, and why it matters). */
static int parse_local_one(struct pol_ctx *c, yaml_node_t *n, const char *what, int unit,
			   double max, const char *above, long double *v)
{
	int rate = !strcmp(what, "local_rate"), bytes, err;
	const char *s;

	if ((err = pol_scalar(c, n, what, &s)))
		return err;
	if (rate ? fg_parse_rate(s, v, &bytes) : fg_parse_burst(s, v, &bytes))
		return FAIL(c, n, "fleet: bad %s \"%.64s\" (expected %s)", what, s,
			    rate ? "N/s, N/m, N/h or bytes like 10MB/s" :
				   "packets like 200 or bytes like 20MB");
	if (bytes != unit)
		return FAIL(c, n, "fleet: %s is in %s but rate is in %s", what,
			    pol_unit_name(bytes), pol_unit_name(unit));
	if (*v > (long double)max)
		return FAIL(c, n, "fleet: %s is above the fleet's %s", what, above);
	return 0;
}

/* local_rate: and local_burst:, in the fleet limit's unit. */
static int parse_local(struct pol_ctx *c, yaml_node_t *const *val, struct pol_fleet_lim *out)
{
	struct fg_fleet_rule_conf *rc = &out->rc;
	long double lr, lb;
	char why[FG_WHY_LEN];
	int err;

	if (!val[FR_LOCAL_RATE]) {
		if (val[FR_LOCAL_BURST])
			return FAIL(c, val[FR_LOCAL_BURST], "fleet: local_burst needs local_rate");
		return 0; /* rate / nodes, compiled by the daemon */
	}
	if (rc->on_loss != FG_LOSS_LOCAL)
		return FAIL(c, val[FR_LOCAL_RATE],
			    "fleet: local_rate is only used with on_loss: local");
	if ((err = parse_local_one(c, val[FR_LOCAL_RATE], "local_rate", out->bytes, rc->rate,
				   "rate: one node alone would admit more than the whole fleet",
				   &lr)))
		return err;
	rc->local_rate = (double)lr;
	if (!val[FR_LOCAL_BURST]) {
		/* the fleet's burst scaled like the rate, rounded */
		if (fg_limit_share(rc->local_rate, rc->local_rate * rc->burst / rc->rate,
				   out->bytes, &out->local, why))
			return FAIL(c, val[FR_LOCAL_RATE], "fleet: local_rate: %s", why);
		return 0;
	}
	if ((err = parse_local_one(c, val[FR_LOCAL_BURST], "local_burst", out->bytes, rc->burst,
				   "burst", &lb)))
		return err;
	rc->local_burst = (double)lb;
	return pol_compile_limit(c, val[FR_LOCAL_RATE], val[FR_LOCAL_BURST], lr, lb, out->bytes,
				 &out->local);
}

int pol_parse_fleet_rule(struct pol_ctx *c, yaml_node_t *n, struct pol_fleet_lim *out)
{
	struct pol_keys ks = KEYS("fleet", fleet_rule_keys);
	yaml_node_t *const *val = ks.val;
	struct fg_limit whole;
	long double rate, burst;
	int on_loss = FG_LOSS_LOCAL, err;

	memset(out, 0, sizeof(*out));
	err = pol_read_map(c, n, "fleet", "{rate: 5000/s, burst: 10000, on_loss: local}", &ks);
	if (err)
		return err;
	if (!val[FR_RATE])
		return FAIL(c, n, "fleet: missing rate (e.g. rate: 5000/s)");
	if (!val[FR_BURST])
		return FAIL(c, n, "fleet: missing burst (e.g. burst: 10000)");
	err = pol_parse_rate_burst(c, val[FR_RATE], val[FR_BURST], &rate, &burst, &out->bytes);
	/* the fleet bucket lives in Redis, but its limit is written and
	 * checked like every other */
	if (!err)
		err = pol_compile_limit(c, val[FR_RATE], val[FR_BURST], rate, burst, out->bytes,
					&whole);
	if (err)
		return err;
	if (rate < FLEET_MIN_RATE || rate > FLEET_MAX)
		return FAIL(c, val[FR_RATE], "fleet: rate must be 0.001/s .. 1e15/s");
	if (burst > FLEET_MAX)
		return FAIL(c, val[FR_BURST], "fleet: burst must be at most 1e15");
	if (val[FR_ON_LOSS] &&
	    (err = ENUM(c, val[FR_ON_LOSS], "on_loss", fg_on_loss_names, &on_loss)))
		return err;
	out->rc.rate = (double)rate;
	out->rc.burst = (double)burst;
	out->rc.cost = out->bytes ? FG_COST_BYTES : FG_COST_PKTS;
	out->rc.on_loss = (__u8)on_loss;
	if ((err = parse_local(c, val, out)))
		return err;
	out->set = 1;
	out->node = n;
	return 0;
}

/* ---- the fleet's word on the section and its rules -------------------------- */

int pol_fleet_check(struct pol_ctx *c)
{
	const struct fg_config *cfg = c->cfg;
	struct fg_fleet_conf fc;
	char why[FG_WHY_LEN];
	int err = 0, n = 0;

	if (!cfg->has_fleet)
		return 0;
	if (fg_fleet_conf_resolve(&cfg->fleet, &fc, why))
		return FAIL(c, c->fleet_sec, "fleet: %s", why);
	explicit_bzero(&fc, sizeof(fc));
	for (__u32 i = 0; i < cfg->pol.nrules && i < FG_MAX_RULES && !err; i++) {
		const struct fg_fleet_rule_conf *rc = &cfg->fleet_rules[i];

		if (!cfg->pol.rules[i].fleet)
			continue;
		if (++n > FG_FLEET_MAX_RULES)
			snprintf(why, sizeof(why), "more than %d fleet rules", FG_FLEET_MAX_RULES);
		else if (fg_fleet_rule_check(rc, why))
			;
		else
			continue;
		err = FAIL(c, c->fleet_rule[i] ? c->fleet_rule[i] : c->fleet_sec, "fleet: %s", why);
	}
	return err;
}
