/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Fleet-wide limits: the lease engine. Every lease interval a node asks
 * Redis, in one pipelined round trip, for a slice of each fleet rule's
 * bucket in proportion to its demand (one Lua script per rule, run
 * atomically on Redis's clock), and tells the caller what to write into
 * the maps the XDP program spends from. Per rule it keeps the state machine
 * ok -> grace (an error, the lease still runs) -> fallback (lease expired:
 * on_loss) -> recovering -> ok, with counters, and queues one event per
 * change for the caller to log. It never logs and never touches a map.
 * docs/fleet.md has the protocol, the algorithm and the bound.
 *
 * One fg_fleet belongs to one thread: a round blocks for at most the
 * deadline. The daemon runs it on the worker below (fg_fleet_worker_*),
 * whose accessors never wait on Redis.
 */
#ifndef FG_FLEET_H
#define FG_FLEET_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "floodgate.h"
#include "fleet/fleet_conf.h"
#include "fleet/fleet_status.h"
#include "fleet/fleet_redis.h"

/* What the caller read for one rule just before a round. */
struct fg_fleet_in {
	__u64 offered;	/* cost offered to the fleet limit since the last round */
	__s64 held;	/* the program's token balance now (may be negative) */
	__u64 taken;	/* tokens actually taken back after the last round */
	__u64 unleased; /* cost admitted under on_loss (open, local) since the last round */
};

/* What to write, in this order: take back (at most what is there, with
 * compare-and-swap), add grant, then lease_expires and the local limit. */
struct fg_fleet_out {
	__u64 take_back;     /* tokens to remove first; report what was removed as .taken */
	__u64 grant;	     /* tokens to add */
	__u64 lease_expires; /* CLOCK_MONOTONIC ns; unchanged unless renewed */
	double local_rate;   /* on_loss local: the limit to write (cost/s, cost) */
	double local_burst;
	__u32 nodes;  /* last known node count */
	__u8 state;   /* enum fg_fleet_state after the round */
	__u8 renewed; /* Redis answered for this rule */
	__u8 pad[2];
};

enum fg_fleet_ev_kind {
	FG_FLEET_EV_GRACE = 0, /* Redis failed; the lease still runs */
	FG_FLEET_EV_RESUMED,   /* Redis answered again before the lease ran out */
	FG_FLEET_EV_FALLBACK,  /* the lease ran out: on_loss applies */
	FG_FLEET_EV_RECOVERED, /* left fallback */
	FG_FLEET_EV_DEGRADED,  /* values Redis held were implausible: repaired */
	FG_FLEET_EV_HEALED,    /* none for FG_FLEET_HOLD_IVALS intervals */
};

/*
 * What the lease script repaired of what Redis held (the reply's last two
 * numbers: this call's, and the fleet's within the hold), and what the
 * engine refused of the reply itself. docs/fleet.md section 4 has the checks.
 */
enum {
	FG_FLEET_REP_TOK_BAD = 1,  /* tok not a number or negative: emptied */
	FG_FLEET_REP_TOK_HIGH = 2, /* tok above the burst: clamped */
	FG_FLEET_REP_TS = 4,	   /* ts not a time (<= 0, beyond now + lease): now */
	FG_FLEET_REP_SUM = 8,	   /* sum unlike the demand entries: recomputed */
	FG_FLEET_REP_DEMAND = 16,  /* a demand entry not a demand, or no node's: removed */
	FG_FLEET_REP_EXPIRY = 32,  /* a node expiry beyond what a node writes: removed */
	FG_FLEET_REP_TYPE = 64,	   /* a key of another type: reset */
	FG_FLEET_REP_MARK = 128,   /* the script's own marks (vt, rt, rb) implausible: reset */
	FG_FLEET_REP_REPLY = 256, /* the reply out of range (engine): the impossible parts unused */
	FG_FLEET_REP_ALL = 511,
};
#define FG_FLEET_HOLD_IVALS 10	   /* degraded for this many intervals after a repair */
#define FG_FLEET_MAX_NODES  100000 /* a node count above this is not believed */
#define FG_FLEET_DEMAND_MAX 1e15   /* cost/s a node may report (the highest rate) */

/* The repairs in bits as one line ("tok emptied (not a number or negative), ..."). */
void fg_fleet_repair_str(__u32 bits, char *buf, size_t len);

struct fg_fleet_event {
	int rule;      /* index from fg_fleet_add_rule */
	int kind;      /* enum fg_fleet_ev_kind */
	__u64 at_ns;   /* CLOCK_MONOTONIC */
	__u64 span_ns; /* RESUMED: time in grace; RECOVERED: time in fallback */
	char name[FG_NAME_LEN];
	char reason[FG_FLEET_REASON_LEN];
};

struct fg_fleet;

/* Validate c and make an engine (no connection yet: the first round
 * connects). NULL with errno set and the reason in why. */
struct fg_fleet *fg_fleet_new(const struct fg_fleet_conf *c, char *why);
void fg_fleet_free(struct fg_fleet *f);

/* Add a fleet rule; its index (0, 1, ...) or -EINVAL (reason in why), -ENOSPC. */
int fg_fleet_add_rule(struct fg_fleet *f, const struct fg_fleet_rule_conf *rc, char *why);
int fg_fleet_nrules(const struct fg_fleet *f);

/* One round for every rule: in[] and out[] have fg_fleet_nrules entries.
 * Returns 0 when Redis answered for every rule, else the first -errno;
 * out[] is filled either way (the state machine has moved). Blocks for at
 * most the deadline (plus host name resolution on a reconnect). */
int fg_fleet_round(struct fg_fleet *f, const struct fg_fleet_in *in, struct fg_fleet_out *out);

/* Leave the fleet: hand back in[i].taken tokens (the caller has taken back
 * everything the program held) and withdraw this node's demand at once.
 * One round trip; 0 or -errno (then the tokens simply expire). */
int fg_fleet_release(struct fg_fleet *f, const struct fg_fleet_in *in);

/* Why the last round or release failed, as the operator should read it
 * ("AUTH as user fg refused: WRONGPASS ..."); "" when it answered. */
const char *fg_fleet_last_error(const struct fg_fleet *f);

/* Pop the oldest queued event: 1, or 0 when there is none. */
int fg_fleet_next_event(struct fg_fleet *f, struct fg_fleet_event *ev);

int fg_fleet_stats(const struct fg_fleet *f, int rule, struct fg_fleet_stats *st);
void fg_fleet_conn_stats(const struct fg_fleet *f, struct fg_fleet_conn_stats *st);

/* The rule's Redis keys (the bucket's, KEYS[1]); all share one hash tag. */
int fg_fleet_key(const struct fg_fleet *f, int rule, char *buf, size_t len);
const struct fg_fleet_conf *fg_fleet_conf(const struct fg_fleet *f);

const char *fg_fleet_ev_name(int kind);
const char *fg_fleet_loss_name(int on_loss);

/* The Lua script, for docs and `floodgate check`. */
extern const char fg_fleet_lua[];

/*
 * The worker: a thread that runs a round every interval on its own engine,
 * calling ops->collect before and ops->apply after each round (on the
 * worker thread; they read and write the maps). The main loop polls events
 * and stats: those copy a snapshot under a mutex the worker never holds
 * across network I/O, so they never wait on Redis.
 */
struct fg_fleet_ops {
	/* fill in[0..n): counters since the last call, the balance, and in
	 * .taken what the last apply took back; non-zero skips this round
	 * (the program's lease then runs out on its own) */
	int (*collect)(void *ctx, struct fg_fleet_in *in, int n);
	/* write out[0..n) into the maps, in the order struct fg_fleet_out says */
	void (*apply)(void *ctx, const struct fg_fleet_out *out, int n);
	/* on stop with release: take back everything into in[i].taken */
	int (*take_all)(void *ctx, struct fg_fleet_in *in, int n);
};

struct fg_fleet_worker;

/* Takes ownership of f. NULL with errno. */
struct fg_fleet_worker *fg_fleet_worker_start(struct fg_fleet *f, const struct fg_fleet_ops *ops,
					      void *ctx);
/* Copy up to max queued events out; the number copied. */
int fg_fleet_worker_events(struct fg_fleet_worker *w, struct fg_fleet_event *ev, int max);
int fg_fleet_worker_stats(struct fg_fleet_worker *w, int rule, struct fg_fleet_stats *st);
void fg_fleet_worker_conn_stats(struct fg_fleet_worker *w, struct fg_fleet_conn_stats *st);
/* Stop and join (waits at most one round). release: hand the leases back
 * (detaching); otherwise they run out in the program (restart, adopt).
 * Frees the engine; returns the release's result, its reason in why (may
 * be NULL). */
int fg_fleet_worker_stop(struct fg_fleet_worker *w, bool release, char *why);

#endif /* FG_FLEET_H */
