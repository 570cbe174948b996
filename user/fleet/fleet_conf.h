/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Fleet-wide limits as configured (the policy's fleet: section and a
 * rule's fleet: limit), with what the policy compiler and `floodgate
 * check` need of them: defaults, validation, the Redis keys. No engine
 * and no Redis client here: those are fleet.h and fleet_redis.h, which
 * only the daemon links.
 */
#ifndef FG_FLEET_CONF_H
#define FG_FLEET_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "floodgate.h"
#include "fleet/redis_url.h"

#define FG_FLEET_INTERVAL_MS	 200 /* default lease interval */
#define FG_FLEET_DEADLINE_MS	 30  /* default deadline of one round trip */
#define FG_FLEET_MIN_INTERVAL_MS 20
#define FG_FLEET_MAX_INTERVAL_MS 10000
#define FG_FLEET_MAX_RULES	 FG_MAX_RULES
#define FG_FLEET_NODE_LEN	 64
#define FG_FLEET_PREFIX_LEN	 32
#define FG_FLEET_KEY_LEN	 (FG_FLEET_PREFIX_LEN + FG_NAME_LEN + 32)
#define FG_FLEET_REASON_LEN	 160
/* bpf_ktime_get_coarse_ns lags CLOCK_MONOTONIC by up to a tick (4 ms at
 * HZ=250): leases are written this much shorter than Redis granted. */
#define FG_FLEET_LEASE_MARGIN_NS 5000000ull

/* What a rule does when its lease has run out (values proposed for the ABI
 * as enum fg_on_loss, docs/fleet.md). */
enum fg_fleet_loss {
	FG_FLEET_LOSS_LOCAL = 0,  /* a static local share: local_rate, or rate / nodes */
	FG_FLEET_LOSS_OPEN = 1,	  /* only the local limits apply */
	FG_FLEET_LOSS_CLOSED = 2, /* drop what the rule's fleet limit would judge */
};

enum fg_fleet_state {
	FG_FLEET_INIT = 0,   /* no answer from Redis yet */
	FG_FLEET_OK,	     /* leasing */
	FG_FLEET_GRACE,	     /* Redis failed; the program spends the lease it holds */
	FG_FLEET_FALLBACK,   /* the lease ran out: on_loss applies (in the program) */
	FG_FLEET_RECOVERING, /* first answer after a fallback: no burst, debt paid */
	FG_FLEET_NSTATES,
};

#define FG_FLEET_DEGRADED_MIN_MS 3000 /* floodgated's degraded_min_ms */

struct fg_fleet_conf {
	struct fg_redis_url redis;
	char node[FG_FLEET_NODE_LEN];	  /* unique in the fleet; "" = host name */
	char prefix[FG_FLEET_PREFIX_LEN]; /* key prefix; "" = "floodgate" */
	__u32 interval_ms;		  /* 0 = FG_FLEET_INTERVAL_MS */
	__u32 deadline_ms;		  /* 0 = FG_FLEET_DEADLINE_MS; < interval */
	__u32 lease_ms;			  /* 0 = 2 * interval; > interval + deadline */
	/* degraded stays in status at least this long (the daemon writes its
	 * status once a second: a shorter flag can be missed); 0 = the
	 * FG_FLEET_HOLD_IVALS intervals alone */
	__u32 degraded_min_ms;
};

struct fg_fleet_rule_conf {
	char name[FG_NAME_LEN];
	double rate;	    /* cost units per second, fleet-wide */
	double burst;	    /* cost units */
	__u8 cost;	    /* enum fg_cost */
	__u8 on_loss;	    /* enum fg_fleet_loss */
	double local_rate;  /* on_loss local: 0 = rate / last known node count */
	double local_burst; /* 0 = local rate * burst / rate */
	/* adopting pinned state after a restart: the lease the program holds */
	__u32 nodes_hint;      /* node count known from before, 0 = none */
	__u64 adopted_expires; /* its CLOCK_MONOTONIC expiry, 0 = none */
	__u64 adopted_tokens;  /* its balance: kept (not taken back) while the lease runs */
};

/* c with its defaults filled in (interval, deadline, lease, prefix, node =
 * the host name), validated, into *out. 0, or -errno with the reason in why. */
int fg_fleet_conf_resolve(const struct fg_fleet_conf *c, struct fg_fleet_conf *out, char *why);

/* A rule's fleet limit validated (name, rate, burst, on_loss, unit, local
 * share). 0, or -EINVAL with the reason in why. */
int fg_fleet_rule_check(const struct fg_fleet_rule_conf *rc, char *why);

/* The rule's three Redis keys under a resolved c: bucket, demand, nodes
 * ("<prefix>:{<name>.<hash of its definition>}:b|d|n"), FG_FLEET_KEY_LEN each. */
void fg_fleet_rule_keys(const struct fg_fleet_conf *c, const struct fg_fleet_rule_conf *rc,
			char key[3][FG_FLEET_KEY_LEN]);

#endif /* FG_FLEET_CONF_H */
